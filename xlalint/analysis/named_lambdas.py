"""Lambdas a function binds to a name and then calls: what their parameters are handed.

`detach_to_cpu_ = lambda t: rearrange(t.detach().cpu(), "1 ... -> ...")`, then
`memories.append(Memory(*map(detach_to_cpu_, (sequence, mask, reward))))`: the lambda is a
helper of its function, written inline. Its parameter holds what its calls hand it (the
calls `detach_to_cpu_(x)` and the `map(detach_to_cpu_, ...)` over a literal tuple or list
of the function, after the binding), and it runs where those calls are, as a function of
that name would (the context gives it a frame of its own, and `map` hands it on as a
call: `hotness.py` then judges it by its callers).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from xlalint.analysis.guards import local_values
from xlalint.analysis.tensors import Kind
from xlalint.walk import descendants


def bound_name(node: cst.Lambda, parent: cst.CSTNode | None) -> str | None:
    """The name `node` is the whole value of (`f = lambda t: ...`), else None."""
    if (
        type(parent) is cst.Assign
        and parent.value is node  # type: ignore[union-attr]
        and len(parent.targets) == 1  # type: ignore[union-attr]
        and type(parent.targets[0].target) is cst.Name  # type: ignore[union-attr]
    ):
        return parent.targets[0].target.value  # type: ignore[union-attr]
    return None


def _handed(call: cst.Call, name: str) -> list[list[cst.BaseExpression]] | None:
    """What a call hands the lambda named `name`, per positional parameter (several values
    for a parameter a `map` feeds from a literal); None for another call, or one whose
    arguments cannot be matched to the parameters (`*args`, keywords)."""
    func = call.func
    if type(func) is not cst.Name:
        return None
    args = call.args
    if any(arg.star or arg.keyword is not None for arg in args):
        return None
    if func.value == name:
        return [[arg.value] for arg in args]
    if (
        func.value == "map"
        and len(args) >= 2
        and type(args[0].value) is cst.Name
        and args[0].value.value == name  # type: ignore[attr-defined]
    ):
        handed: list[list[cst.BaseExpression]] = []
        for arg in args[1:]:
            literal = arg.value
            if type(literal) not in (cst.Tuple, cst.List):
                return None
            elements = literal.elements  # type: ignore[attr-defined]
            if any(type(element) is not cst.Element for element in elements):
                return None  # `*rest`: not known element by element
            handed.append([element.value for element in elements])
        return handed
    return None


def handed_kinds(
    function: cst.FunctionDef,
    name: str,
    node: cst.Lambda,
    kind_of: Callable[[cst.BaseExpression], Kind],
) -> tuple[bool, dict[str, Kind]]:
    """Whether the function calls the lambda (by its name, or through `map`), and the
    lambda's positional parameters that its function's calls of `name` hand device
    tensors (at least one call a tensor, none a host value; `kind_of` judges where the
    lambda is made, so the values are those bound before it), as TENSOR, and those they
    hand host values only, as HOST. A parameter with a default, or one no call reaches
    or calls hand values of unknown kind, keeps its own kind (none)."""
    params = [p for p in node.params.params if p.default is None]
    if node.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT):
        return False, {}
    called = False
    kinds: dict[str, list[Kind]] = {p.name.value: [] for p in params}
    for inner in descendants(function.body):
        if (
            type(inner) is cst.Lambda
            and inner is not node
            and any(p.name.value == name for p in inner.params.params)  # type: ignore[attr-defined]
        ):
            return False, {}  # another lambda's parameter of that name: not ours to follow
        if type(inner) is not cst.Call:
            continue
        handed = _handed(inner, name)  # type: ignore[arg-type]
        if handed is None:
            continue
        if len(handed) > len(params):
            return False, {}  # a call that does not fit: not this lambda, or a mistake
        called = True
        for param, values in zip(params, handed, strict=False):
            for value in values:
                kinds[param.name.value].extend(_kinds_of(value, function, kind_of))
    verdicts: dict[str, Kind] = {}
    for param, found in kinds.items():
        if Kind.TENSOR in found and Kind.HOST not in found:
            verdicts[param] = Kind.TENSOR
        elif found and all(kind is Kind.HOST for kind in found):
            verdicts[param] = Kind.HOST  # `as_number(torch.tensor(lr))`: host values only
    return called, verdicts


def _kinds_of(
    value: cst.BaseExpression,
    function: cst.FunctionDef,
    kind_of: Callable[[cst.BaseExpression], Kind],
) -> list[Kind]:
    """The kind of a value a call hands the lambda; for a name of no known kind where the
    lambda is made (bound after it: `to_host = lambda t: t.cpu()` before the loop that
    computes `logits = model(x)` and calls `to_host(logits)`), the kinds of the values
    the function assigns it."""
    kind = kind_of(value)
    if kind is not Kind.UNKNOWN or type(value) is not cst.Name:
        return [kind]
    assigned = local_values(function, value.value)  # type: ignore[attr-defined]
    return [kind_of(v) for v in assigned] or [kind]
