"""A function's parameters, read once for every analysis that asks."""

from __future__ import annotations

import libcst as cst

from xlalint.analysis.arguments import parameter, parameters


def _function(source: str) -> cst.FunctionDef:
    node = cst.parse_module(source).body[0]
    assert isinstance(node, cst.FunctionDef)
    return node


def test_parameters_in_declaration_order() -> None:
    function = _function("def f(a, /, b, *args, c, **kw): pass\n")
    assert [p.name.value for p in parameters(function)] == ["a", "b", "c"]
    starred = [p.name.value for p in parameters(function, star=True)]
    assert starred == ["a", "b", "args", "c", "kw"]


def test_a_bare_star_names_no_parameter() -> None:
    function = _function("def f(a, *, b): pass\n")
    assert [p.name.value for p in parameters(function, star=True)] == ["a", "b"]


def test_parameter_by_name() -> None:
    function = _function("def f(a, b=1, *args, c=2): pass\n")
    found = parameter(function, "b")
    assert found is not None and isinstance(found.default, cst.Integer)
    assert parameter(function, "args") is None
    assert parameter(function, "args", star=True) is function.params.star_arg
    assert parameter(function, "missing") is None
