"""The project holds itself to what it asks of users: lint-clean, and its quickstart true."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> str:
    candidate = Path(sys.executable).with_name("ruff")
    found = str(candidate) if candidate.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is a dev dependency: install with `pip install -e .[dev]`")
    return found


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_is_clean(command: list[str]) -> None:
    result = subprocess.run(
        [_ruff(), *command], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test" in readme and "scripts/demo" in readme
    assert "scripts/test" in ci
    for script in ("scripts/test", "scripts/demo", "scripts/bootstrap", ".ci/run"):
        assert os.access(ROOT / script, os.X_OK), f"{script} is not executable"


def test_demo_lints_the_bundled_examples() -> None:
    """The quickstart's first command shows findings on the bundled examples."""
    result = subprocess.run(
        [sys.executable, "-m", "xlalint", "check", "examples", "--output-format", "concise"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "examples/train_cuda.py" in result.stdout
    assert "examples/sample_diffusion.py" in result.stdout
