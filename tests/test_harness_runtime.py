"""The runtime harness for real, on the XLA CPU device (torch 2.9.0 + torch-xla 2.9.0).

These run in CI: the README's test command installs the runtime extra. Each child process
costs a few seconds (importing torch_xla and compiling), so the cases are small.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

from xlalint.harness import evidence

pytestmark = pytest.mark.runtime

SCRIPT = """\
import torch
import torch_xla

device = torch_xla.device()
weights = torch.randn(4, 4).to(device)
total = 0.0
for step in range(3):
    x = torch.randn(4, 4).to(device)
    y = (x @ weights).sum()
    total += y.item()
    torch_xla.sync()
print(f"total {total:.3f}")
"""


@pytest.fixture(scope="module")
def verified() -> dict:
    """One `xlalint verify` run over every runtime case (two child processes per case)."""
    run = run_cli("verify", "--device", "cpu", "--json", "-")
    assert run.exit_code == 0, run.stdout + run.stderr
    return json.loads(run.stdout[run.stdout.index("{") :])


def case_of(record: dict, code: str) -> dict:
    return next(c for c in record["cases"] if c["code"] == code)


def test_verify_proves_the_item_fix_removes_host_transfers(verified: dict) -> None:
    case = case_of(verified, "XLA101")
    assert case["passed"]
    assert case["before"]["device_to_host"] == 5
    assert case["after"]["device_to_host"] == 0
    assert case["before"]["executions"] > case["after"]["executions"]
    assert case["fallbacks_before"] == {"aten::_local_scalar_dense": 5}
    assert case["outputs"]["close"]


def test_verify_passes_a_fix_that_turns_a_crash_or_a_warning_into_a_clean_run(
    verified: dict,
) -> None:
    removed = case_of(verified, "XLA605")  # xm.xrt_world_size is gone in torch_xla 2.9
    assert removed["passed"] and removed["after"] is not None
    assert removed["before_error"].startswith("AttributeError")
    deprecated = case_of(verified, "XLA604")  # xm.mark_step warns at every call
    assert deprecated["passed"] and deprecated["outputs"]["exact"]
    assert deprecated["before"]["warnings"] > 0 == deprecated["after"]["warnings"]
    assert deprecated["before"]["executions"] == deprecated["after"]["executions"]


def test_verify_reports_what_an_unsafe_fix_changes_and_proves_costless_fixes(
    verified: dict,
) -> None:
    drop_last = case_of(verified, "XLA205")
    assert drop_last["passed"] and not drop_last["outputs"]["close"]
    assert any("unsafe fix" in note for note in drop_last["notes"])
    assert drop_last["after"]["uncached_compiles"] < drop_last["before"]["uncached_compiles"]
    single_device = case_of(verified, "XLA404")  # nothing to reduce on one device
    assert single_device["passed"] and single_device["costs"] == []
    assert single_device["outputs"]["exact"]
    assert single_device["before"] == single_device["after"]


def test_profile_ties_a_host_read_to_its_line(project: Path) -> None:
    (project / "train.py").write_text(SCRIPT)
    run = run_cli("profile", "--device", "cpu", "--json", "-", "--", "python", "train.py")
    assert run.exit_code == 0, run.stderr
    assert "total " in run.stderr  # the script's own output, kept apart from the JSON
    result = json.loads(run.stdout)
    assert result["totals"]["device_to_host"] == 3
    lines = {(c["file"], c["line"]): c for c in result["lines"]}
    assert lines["train.py", 10]["host_reads"] == 3
    assert lines["train.py", 11]["host_reads"] == 0  # the barrier executes, reads nothing
    (finding,) = [f for f in result["findings"] if f["code"] == "XLA101"]
    assert finding["line"] == 10 and finding["confirmed"]
    assert result["unexplained"] == []


EXPLAINED = """\
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(8, 4).to(device)


def first_rows(n):
    return data[:n]


for step in range(4):
    optimizer.zero_grad()
    loss = model(data).pow(2).mean()
    loss.backward()
    optimizer.step()

for n in range(1, len(data) // 2 + 1):  # four passes, counted from the data
    part = first_rows(n)
    total = torch.sum(part)
    torch_xla.sync()
    print(total, total.item())
"""


def test_profile_explains_growth_recompiles_and_transfers_by_line(project: Path) -> None:
    (project / "train.py").write_text(EXPLAINED)
    run = run_cli("profile", "--device", "cpu", "--json", "-", "--", "python", "train.py")
    assert run.exit_code == 0, run.stderr
    result = json.loads(run.stdout)
    findings = {(f["code"], f["line"]): f for f in result["findings"]}
    # The loop without a barrier: its graph grew at every iteration, which confirms XLA401.
    no_barrier = findings["XLA401", 15]
    assert no_barrier["confirmed"]
    sizes = no_barrier["graph_sizes"][1:]
    assert len(sizes) == 4 and sizes == sorted(set(sizes))
    # Recompiles belong to the helper's slice, with the two shapes, not to the barrier.
    lines = {c["line"]: c for c in result["lines"]}
    assert [r["change"] for r in lines[12]["recompiles"]] == [
        "f32[2,4] -> f32[3,4]", "f32[2,4] -> f32[4,4]"]  # fmt: skip
    assert {r["trigger"] for r in lines[12]["recompiles"]} == {"train.py:24"}
    assert sum(c["compiles"] for c in result["lines"]) == result["totals"]["uncached_compiles"]
    # XLA207 reports the loop int where it slices, in the helper: the recompiles confirm
    # that finding, so no cost is left unexplained.
    sliced = findings["XLA207", 12]
    assert sliced["confirmed"] and sliced["runtime"]["recompiles"] == lines[12]["recompiles"]
    assert result["unexplained"] == []
    # Every transfer on its line: `print(total)` and `.item()`, twice per step.
    assert lines[25]["host_reads"] == 8 == result["totals"]["device_to_host"]
    assert sum(c["host_reads"] for c in result["lines"]) == result["totals"]["device_to_host"]
    # Two findings on one line: the cost is shown once, the other finding points to it.
    assert findings["XLA101", 25]["shared_with"] == ["XLA104"]
    assert findings["XLA104", 25]["shared_with"] == ["XLA101"]
    assert "the same line's cost, counted under XLA101" in run.stderr


def test_fix_verify_refuses_fixes_that_break_the_script(project: Path) -> None:
    """drop_last=True (XLA205, unsafe) leaves a 3-sample dataset with no batch at all."""
    script = project / "train.py"
    script.write_text(
        textwrap.dedent("""\
        import torch
        import torch_xla
        from torch.utils.data import DataLoader, TensorDataset

        device = torch_xla.device()
        train_loader = DataLoader(TensorDataset(torch.randn(3, 4)), batch_size=4, shuffle=True)
        seen = 0
        for (x,) in train_loader:
            x = x.to(device)
            seen += len(x)
            torch_xla.sync()
        print(f"{3 / seen:.1f} per sample")
    """)
    )
    original = script.read_bytes()
    args = ("fix", "--verify", "--unsafe-fixes", "--apply", "--select", "XLA205", "--device",
            "cpu", "--", "python", "train.py")  # fmt: skip
    run = run_cli(*args)
    assert run.exit_code == 1
    assert "FAIL: the fixed script fails (exit code 1): ZeroDivisionError" in run.stdout
    assert "Not applied: the run showed the fixes break the script." in run.stderr
    assert script.read_bytes() == original


def test_profile_reports_a_failing_script_clearly(project: Path) -> None:
    (project / "broken.py").write_text(
        textwrap.dedent("""\
        import torch_xla
        raise ValueError("bad learning rate")
    """)
    )
    run = run_cli("profile", "--device", "cpu", "--", "python", "broken.py")
    assert run.exit_code == 1
    assert "error: the script failed (exit code 1): ValueError: bad learning rate" in run.stderr


def test_committed_evidence_matches_a_fresh_run(verified: dict) -> None:
    """The rules' docs show xlalint/evidence.json: every count in it must be measured again.

    After changing a case or a fix: `xlalint verify --json xlalint/evidence.json`, then
    `python -m xlalint.docgen`.
    """
    committed = evidence.load()

    def counts(record: dict) -> dict:
        keys = ("before", "after", "before_error", "after_error", "fallbacks_before",
                "fallbacks_after", "passed")  # fmt: skip
        return {
            (case["code"], case["case"]): {
                **{key: case[key] for key in keys},
                # Closeness, not bit-exactness: XLA's CPU code follows the host's vector
                # instructions, so whether a graph cut in two rounds like the whole one
                # (a 1e-10 difference) varies by machine; the counts do not.
                "outputs": case["outputs"] and {"close": case["outputs"]["close"]},
            }
            for case in record["cases"]
        }

    assert counts(verified) == counts(committed)
