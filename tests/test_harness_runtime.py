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
                "outputs": case["outputs"] and {k: case["outputs"][k] for k in ("exact", "close")},
            }
            for case in record["cases"]
        }

    assert counts(verified) == counts(committed)
