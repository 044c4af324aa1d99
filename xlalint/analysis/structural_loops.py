"""Loops over a module's own structure: a fixed number of passes per call, one graph.

`for layer in self.layers: x = torch.cat((x, layer(x)), -1)` joins onto `x` on every
pass, but the loop runs once per layer, the same number of passes on every call, and
nothing in it cuts the graph: the whole call traces into one graph with the same shapes
each step, which compiles once. Growth across steps (XLA210) needs passes that are steps:
a token loop whose passes end in a host read, a barrier or a `break`, a loop over a
loader, a trip count the caller chooses. This module tells the structural loops apart:
the iterable is the module's container (`self.layers`, `enumerate`/`zip`/`reversed` of it,
a slice of it with literal bounds, `self.layers[1:]`,
`range(len(self.blocks))`, `range(self.num_layers)`, a literal tuple) and no pass reads
the device on the host, syncs or breaks out. Computed on demand, cached per loop.

A counted loop of torch's own functions is one graph per call too: `for _ in range(k):
grid = torch.cat([grid[:, [0]] - h, grid], dim=1)` pads a value `k` times, and every call
in a pass is a torch function (no model, no helper of the module, no method that may be
one). No pass is a step of its own: the loop traces into the graph of the code that calls
it, with the same shapes for the same count. A token loop calls a model in each pass.
"""

from __future__ import annotations

import libcst as cst

from xlalint.analysis.barrier_calls import Barrier, barrier_kind
from xlalint.analysis.epochs import loader_named
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.tensors import HOST_CASTS, TO_HOST_METHODS
from xlalint.walk import descendants

# Wrappers whose passes are those of their argument(s) (`zip`: the shortest of them).
_SAME_PASSES = frozenset({"enumerate", "reversed", "zip", "list", "tuple"})
# A module container's views, as many as its entries.
_CONTAINER_VIEWS = frozenset({"items", "values", "keys", "children", "named_children"})


def _held_by_self(node: cst.BaseExpression) -> bool:
    """`self.layers`, `self.model.blocks`: a container the module holds. Not a loader it
    holds (`self.val_loader`, `self.dataset`): its passes are batches, that is steps."""
    if loader_named(node):
        return False
    while isinstance(node, cst.Attribute):
        node = node.value
        if isinstance(node, cst.Name):
            return node.value == "self"
    return False


def structural_iterable(node: cst.BaseExpression) -> bool:
    """Whether iterating `node` runs a number of passes fixed by the module, not the data."""
    if isinstance(node, cst.Tuple | cst.List):
        return not any(isinstance(e, cst.StarredElement) for e in node.elements)
    if _held_by_self(node):
        return True
    if isinstance(node, cst.Subscript):
        # `self.layers[1:]`, `self.blocks[:-1]`: the container less a fixed few entries.
        return _literal_slice(node) and structural_iterable(node.value)
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    args = [a.value for a in node.args if a.keyword is None and not a.star]
    if isinstance(func, cst.Attribute) and func.attr.value in _CONTAINER_VIEWS:
        return _held_by_self(func.value)
    if not isinstance(func, cst.Name) or not args:
        return False
    if func.value == "zip":
        return any(structural_iterable(a) for a in args)
    if func.value in _SAME_PASSES:
        return structural_iterable(args[0])
    if func.value == "range" and len(args) == 1:
        bound = args[0]
        if _held_by_self(bound):  # `range(self.num_layers)`
            return True
        return (
            isinstance(bound, cst.Call)
            and isinstance(bound.func, cst.Name)
            and bound.func.value == "len"
            and len(bound.args) == 1
            and structural_iterable(bound.args[0].value)
        )
    return False


def _literal_slice(node: cst.Subscript) -> bool:
    """`x[1:]`, `x[:-1]`, `x[::2]`: one slice whose bounds are integer literals (or left
    out), as many entries as `x` less (or a fraction of) a fixed number."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
        return False
    part = node.slice[0].slice
    for bound in (part.lower, part.upper, part.step):
        if isinstance(bound, cst.UnaryOperation) and isinstance(bound.operator, cst.Minus):
            bound = bound.expression
        if bound is not None and not isinstance(bound, cst.Integer):
            return False
    return True


def _cuts_passes(body: cst.CSTNode, imports: ImportTable) -> bool:
    """Whether a pass ends in a barrier, reads the device on the host or may break out:
    then each pass is a step of its own (or the trip count depends on the data)."""
    for node in descendants(body):
        if isinstance(node, cst.Break):
            return True
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in TO_HOST_METHODS:
            return True
        if isinstance(func, cst.Name) and func.value in HOST_CASTS and node.args:
            return True
        if barrier_kind(node, imports) != Barrier.NONE:
            return True
    return False


def _counted(node: cst.BaseExpression) -> bool:
    """`range(k)`, `range(self.k)`, `range(1, n + 1)`: a Python count, no call in it (a
    `range(int(t))` reads the device, a `range(len(batch))` counts data)."""
    if not (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "range"
        and 1 <= len(node.args) <= 3
    ):
        return False
    return not any(type(n) is cst.Call for a in node.args for n in descendants(a.value))


def _only_torch_functions(body: cst.CSTNode, imports: ImportTable) -> bool:
    """Every call in `body` is a function of torch (`torch.cat`, `F.pad`), by the imports."""
    return all(
        (imports.resolve(n.func) or "").startswith("torch.")
        for n in descendants(body)
        if type(n) is cst.Call
    )


class StructuralLoops:
    """Which loops of one file run over the module's structure; answers cached per loop."""

    def __init__(self, imports: ImportTable) -> None:
        self._imports = imports
        self._cache: dict[int, bool] = {}

    def fixed_passes(self, loop: cst.For | cst.While) -> bool:
        """`for layer in self.layers:` (or `enumerate`/`zip`/`range(len(...))` of it) whose
        passes neither sync, read the device on the host nor break: one graph per call.
        So is `for _ in range(k):` whose passes call only torch's functions."""
        key = id(loop)
        if key not in self._cache:
            self._cache[key] = (
                isinstance(loop, cst.For)
                and loop.asynchronous is None
                and (
                    structural_iterable(loop.iter)
                    or (_counted(loop.iter) and _only_torch_functions(loop.body, self._imports))
                )
                and not _cuts_passes(loop.body, self._imports)
            )
        return self._cache[key]
