"""Code that an earlier, always-taken exit skips.

`assert not exists(eos_token)` at a function's top, then in its loop `if not
exists(eos_token): continue`: the `continue` runs on every pass, so what follows it in the
loop body never runs, and a host read there costs nothing. The test of the exit is settled
by a fact known where it stands (an `assert`, an enclosing `if`: `guards.path_conditions`)
when it is the same expression, built only from names the function never rebinds and from
calls of plain functions on them (`x is None`, `not exists(x)`, `flag and not y`). Anything
else (an attribute, a subscript, a method call, a name assigned in the function) may change
between the fact and the exit, and leaves the code reachable.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import libcst as cst

from xlalint.analysis.guards import ends_in, negated, path_conditions
from xlalint.walk import bound_names, descendants

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
    function = next((n for n in path if isinstance(n, _SCOPES)), None)
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
