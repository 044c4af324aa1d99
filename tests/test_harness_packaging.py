"""`xlalint verify` from an installed wheel finds the runtime cases it ships."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_for_the_wheel() -> None:
    """pyproject lists packages by hand (the cases need a mapped one): none may be missed."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])  # fmt: skip
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in ROOT.glob("xlalint/**/__init__.py")
    }
    assert found <= listed
    assert listed - found == {"xlalint.runtime_cases"}


@pytest.mark.runtime
def test_an_installed_wheel_finds_its_runtime_cases(tmp_path: Path) -> None:
    """Build the wheel, install it into a folder of its own, discover the cases from outside."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    wheels, target = tmp_path / "wheels", tmp_path / "installed"
    for command in (
        ["wheel", "--no-deps", "-q", str(ROOT), "-w", str(wheels)],
        ["install", "--no-deps", "-q", "--target", str(target), "WHEEL"],
    ):
        if "WHEEL" in command:
            (wheel,) = wheels.glob("xlalint-*.whl")
            command[-1] = str(wheel)
        done = subprocess.run([sys.executable, "-m", "pip", *command], env=env,
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    probe = (
        "import xlalint.harness.cases as c; cases = c.discover(); "
        "print(c.__file__); print(c.FIXTURES); print(len(cases)); "
        "print(' '.join(sorted({case.code for case in cases})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=outside, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**env, "PYTHONPATH": str(target)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    module, folder, count, codes = done.stdout.splitlines()
    assert Path(module).is_relative_to(target)  # the wheel's copy, not the checkout's
    assert Path(folder) == target / "xlalint" / "runtime_cases"
    shipped = sorted(ROOT.glob("fixtures/XLA*/runtime_*.py"))
    assert int(count) == len(shipped)
    assert codes.split() == sorted({path.parent.name for path in shipped})
