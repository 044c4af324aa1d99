"""Code that an earlier, always-taken exit skips, and branches an earlier default settles.

`assert not exists(eos_token)` at a function's top, then in its loop `if not
exists(eos_token): continue`: the `continue` runs on every pass, so what follows it in the
loop body never runs, and a host read there costs nothing. The test of the exit is settled
by a fact known where it stands (an `assert`, an enclosing `if`: `guards.path_conditions`)
when it is the same expression, built only from names the function never rebinds and from
calls of plain functions on them (`x is None`, `not exists(x)`, `flag and not y`). Anything
else (an attribute, a subscript, a method call, a name assigned in the function) may change
between the fact and the exit, and leaves the code reachable.

A default filled in before a test settles it too: after `if dim_size is None: dim_size =
int(index.max()) + 1`, `dim_size` is never None, so in `if dim_size is not None: ...` /
`else: size = int(index.max()) + 1` the `else` (and any `elif`) never runs, nor does the
body of a later `if dim_size is None:`. The fill must be the name's only binding in the
function (a parameter filled once), and its value one that is never None (arithmetic, a
literal, a comparison, `int()`/`len()` and other builtins that return a value).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import libcst as cst

from xlalint.analysis.guards import ends_in, negated, path_conditions
from xlalint.walk import binding_counts, bound_names, descendants

_EXITS = (cst.Continue, cst.Break, cst.Return, cst.Raise)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# The nodes a settled test may be built of (with its names and whitespace).
_PLAIN = (
    cst.Name, cst.Call, cst.Arg, cst.UnaryOperation, cst.Not, cst.BooleanOperation, cst.And,
    cst.Or, cst.Comparison, cst.ComparisonTarget, cst.Is, cst.IsNot, cst.Equal, cst.NotEqual,
    cst.Integer, cst.SimpleString,
)  # fmt: skip


def exits_before(
    path: Sequence[cst.CSTNode], exits: tuple[type[cst.CSTNode], ...]
) -> Iterator[tuple[cst.If, int, cst.FunctionDef]]:
    """The `if <test>: ... <exit>` statements with no `else` that come before the code on
    `path` (a node and its ancestors, innermost first) in the blocks of its function,
    innermost block first: each with the position in `path` of the block's child on the
    way to the node, and the function."""
    function = next((n for n in path if type(n) in _SCOPES), None)
    if not isinstance(function, cst.FunctionDef):
        return
    for index, (child, parent) in enumerate(itertools.pairwise(path)):
        if parent is function:
            return
        if type(parent) is not cst.IndentedBlock:
            continue
        for statement in parent.body:  # type: ignore[attr-defined]
            if statement is child:
                break
            if (
                type(statement) is cst.If
                and statement.orelse is None
                and ends_in(statement.body, exits)
            ):
                yield statement, index, function


def past_settled_exit(path: Sequence[cst.CSTNode]) -> bool:
    """Whether the code on `path` (a node and its ancestors, innermost first) follows, in a
    block of its function, an `if <test>: ... continue` (`break`, `return`, `raise`) with no
    `else` whose test is known to hold where the `if` stands: the exit always runs first."""
    return any(
        _holds(statement.test, (statement, *path[index + 1 :]), function)
        for statement, index, function in exits_before(path, _EXITS)
    )


def _holds(
    test: cst.BaseExpression, path: Sequence[cst.CSTNode], function: cst.FunctionDef
) -> bool:
    """Whether a condition known on `path` settles `test` as true."""
    for known, holds in path_conditions(path):
        if _same_truth(known, holds, test) and _stable(test, function):
            return True
    return False


def _same_truth(known: cst.BaseExpression, holds: bool, test: cst.BaseExpression) -> bool:
    """Whether `known` (true if `holds`, else false) says `test` is true."""
    if holds:
        return known.deep_equals(test)
    flipped = negated(test)
    if flipped is not None and flipped.deep_equals(known):
        return True  # known false: `x`; test: `not x`
    flipped = negated(known)
    return flipped is not None and flipped.deep_equals(test)


def _stable(test: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """Whether `test` is built of plain parts over names `function` never rebinds."""
    names: set[str] = set()
    for node in descendants(test):
        kind = type(node)
        if kind is cst.Call:
            if type(node.func) is not cst.Name:  # type: ignore[attr-defined]
                return False  # `q.empty()`: a method may answer differently each time
        elif kind is cst.Name:
            names.add(node.value)  # type: ignore[attr-defined]
        elif not isinstance(node, _PLAIN):
            return False
    return not names & bound_names(function)


# Calls of builtins that always return a value (never None).
_VALUE_CALLS = frozenset(
    {"int", "float", "bool", "len", "str", "max", "min", "sum", "abs", "round"}
)
_VALUES = (
    cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float, cst.SimpleString,
    cst.FormattedString, cst.ConcatenatedString, cst.List, cst.Tuple, cst.Dict, cst.Set,
    cst.ListComp, cst.DictComp, cst.SetComp, cst.Comparison,
)  # fmt: skip


def in_settled_branch(path: Sequence[cst.CSTNode]) -> bool:
    """Whether the code on `path` (a node and its ancestors, innermost first) sits in a
    branch of an `if x is None` / `if x is not None` test that an earlier fill of `x`
    in a block of its function (`if x is None: x = <a value>`, no `else`) settles the
    other way: the branch never runs."""
    function = next((n for n in path if type(n) in _SCOPES), None)
    if not isinstance(function, cst.FunctionDef):
        return False
    for index, (child, parent) in enumerate(itertools.pairwise(path)):
        if parent is function:
            return False
        if type(parent) is not cst.If or child is parent.test:
            continue
        tested = _none_test(parent.test)
        if tested is None:
            continue
        name, holds_when_none = tested
        taken = child is parent.body  # else the `else`, or an `elif` chained to it
        # Filled, the name is not None: `x is None` fails, `x is not None` holds.
        if taken == holds_when_none and _filled_before(name, path[index + 1 :], function):
            return True
    return False


def _none_test(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """`("x", True)` for `x is None`, `("x", False)` for `x is not None`; else None."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    if type(test.left) is not cst.Name or not (
        type(target.comparator) is cst.Name and target.comparator.value == "None"
    ):
        return None
    if type(target.operator) is cst.Is:
        return test.left.value, True
    if type(target.operator) is cst.IsNot:
        return test.left.value, False
    return None


def _filled_before(name: str, path: Sequence[cst.CSTNode], function: cst.FunctionDef) -> bool:
    """An `if <name> is None: <name> = <a value>` (no `else`) precedes the node on `path`
    (from the `if` being judged outward) in a block of `function`, and it is the only
    statement of the function that binds `name`."""
    for child, parent in itertools.pairwise(path):
        if type(parent) is cst.IndentedBlock:
            for statement in parent.body:
                if statement is child:
                    break
                if _fills(statement, name):
                    return binding_counts(function).get(name) == 1
        if parent is function:
            return False
    return False


def _fills(statement: cst.CSTNode, name: str) -> bool:
    """`if <name> is None: <name> = <a value that is never None>` with no `else`."""
    if type(statement) is not cst.If or statement.orelse is not None:
        return False
    if _none_test(statement.test) != (name, True):
        return False
    body = statement.body
    lines = body.body if type(body) is cst.IndentedBlock else (body,)
    for line in lines:
        if type(line) is not cst.SimpleStatementLine:
            continue
        for small in line.body:
            if (
                type(small) is cst.Assign
                and len(small.targets) == 1
                and type(small.targets[0].target) is cst.Name
                and small.targets[0].target.value == name
            ):
                return _never_none(small.value)
    return False


def _never_none(value: cst.BaseExpression) -> bool:
    if isinstance(value, _VALUES):
        return True
    return (
        type(value) is cst.Call
        and type(value.func) is cst.Name
        and value.func.value in _VALUE_CALLS
    )
