"""xlalint leans on libcst internals (positions.py's codegen state, walk.py's reading of
libcst's source), so pyproject.toml bounds libcst to the releases scripts/test runs: the
lowest in a second virtualenv, the highest in the first. This file runs in both."""

from __future__ import annotations

import importlib.metadata
import re
import sys

from conftest import ROOT
from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def libcst_requirement() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [spec] = [d for d in project["dependencies"] if d.startswith("libcst")]
    return Requirement(spec)


def test_libcst_has_a_lower_and_an_upper_bound() -> None:
    operators = {s.operator for s in libcst_requirement().specifier}
    assert operators == {">=", "<"}


def test_the_running_libcst_is_in_the_supported_range() -> None:
    installed = Version(importlib.metadata.version("libcst"))
    assert libcst_requirement().specifier.contains(installed)


def test_scripts_test_installs_the_lowest_supported_libcst() -> None:
    """scripts/test reads the lower bound from pyproject.toml with this pattern."""
    script = (ROOT / "scripts" / "test-libcst-lowest").read_text()
    assert (
        "libcst==$lowest" in script
        and "test-libcst-lowest" in (ROOT / "scripts" / "test").read_text()
    )
    lower = next(s.version for s in libcst_requirement().specifier if s.operator == ">=")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.findall(r'^ *"libcst>=([0-9.]*),', pyproject, re.MULTILINE) == [lower]
