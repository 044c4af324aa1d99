"""The parse without libcst's node checks gives libcst's own tree, and leaves the checks on."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from conftest import ROOT

from xlalint import cst_parse

SOURCES = sorted([*ROOT.glob("fixtures/*/*.py"), *ROOT.glob("examples/*.py")])


def test_the_installed_libcst_lets_a_parse_skip_its_checks() -> None:
    # If a libcst release changes `__post_init__`, the parse falls back to libcst's own
    # (correct, slower): this test says the speed-up went.
    assert cst_parse.skips_validation()


@pytest.mark.parametrize("path", SOURCES[::7], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tree_is_libcsts_own(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    ours = cst_parse.parse_module(text)
    assert ours.deep_equals(cst.parse_module(text))
    assert ours.code == text


def test_syntax_errors_are_libcsts() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_module("def f(:\n")


def test_nodes_built_after_a_parse_are_checked_again() -> None:
    cst_parse.parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_module("(")
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("still checked after a failed parse")
