"""The two smallest scripts of benchmarks/PORTS.md, ported for real on the XLA CPU device.

The same code path as `python benchmarks/ports.py`: the script is copied, fixed with
`fix --apply` (and with `--unsafe-fixes`), and run under `xlalint profile`'s runner for N and
2N steps. After the fix the model must run on the XLA device and compile nothing more once
warmed up; the safe fixes alone must not break the script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import ports

pytestmark = pytest.mark.runtime

CI_PORTS = [port for port in ports.PORTS if port.ci]

# A guard against a hung script, not a speed check: a loaded CI machine running the suite
# on both cores has taken the DCGAN port past ports.TIMEOUT (300 s) while it passes in
# ~140 s alone.
HANG_GUARD = 900.0


def test_the_smallest_two_run_in_ci() -> None:
    assert [port.name for port in CI_PORTS] == ["mnist_cuda", "dcgan_cuda"]


@pytest.mark.parametrize("port", CI_PORTS, ids=lambda port: port.name)
def test_unsafe_fixes_port_the_script_to_xla_with_flat_compiles(
    port: ports.Port, tmp_path: Path
) -> None:
    version = ports.measure(port, "--unsafe-fixes", tmp_path, without_xla=False, timeout=HANG_GUARD)
    assert version.applied, "no fix was applied"
    assert version.runs_ok, [run.error for run in version.runs]
    assert all(run.on_xla for run in version.runs), [run.totals for run in version.runs]
    assert version.warm_compiles() == 0
    executions = version.per_step("executions")
    assert executions is not None and executions >= 1


@pytest.mark.parametrize("port", CI_PORTS, ids=lambda port: port.name)
def test_safe_fixes_do_not_break_the_script(port: ports.Port, tmp_path: Path) -> None:
    version = ports.measure(port, "fix --apply", tmp_path, without_xla=False, timeout=HANG_GUARD)
    assert version.runs_ok, [run.error for run in version.runs]


def test_write_with_only_replaces_the_rows_it_ran_and_keeps_the_others(tmp_path: Path) -> None:
    header = "| script | version |\n|---|---|\n"
    page = tmp_path / "PORTS.md"
    page.write_text(
        f"intro\n{ports.TABLE_START}\n{header}"
        "| mnist_cuda | as written | old |\n| word_lm_cuda | as written | old |\n"
        f"{ports.TABLE_END}\noutro\n",
        encoding="utf-8",
    )
    ports.write_table(header + "| word_lm_cuda | as written | new |\n", page, {"word_lm_cuda"})
    text = page.read_text(encoding="utf-8")
    assert "| mnist_cuda | as written | old |\n| word_lm_cuda | as written | new |\n" in text
    assert "| word_lm_cuda | as written | old |" not in text
    assert text.startswith("intro\n") and text.endswith(f"{ports.TABLE_END}\noutro\n")
