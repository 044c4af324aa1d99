"""Code that fills persistent state the first time it finds it empty.

An optimizer's `step` runs every step, but its `if len(state) == 0:` block (with `state =
self.state[p]`) runs once per parameter, on the first step: what it builds there is built
once, not every step. The same holds for `if self.cache is None:` and
`if "exp_avg" not in state:`. A local that the function itself starts empty
(`attn = None` before a loop) is filled once per call, and that call may run every step:
it is not persistent state; nor is an attribute the function sets again beside the
block (`self.step_losses = None` at the top of each pass, or a beam's `self.scores =
selection.scores` after it): the block may find it empty on any call. A host read in
such a block (`if self.initial_task_loss is None: self.initial_task_loss = [l.item() for
l in losses]`) is read on the first step only: the context counts the block as amortised.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from xlalint.analysis.guards import local_values
from xlalint.walk import descendants

# Spells a node's code (`self.cache`, `state["step"]`) to compare a tested value with
# the targets that write it: one empty module for every comparison, not one per call.
_CODEGEN = cst.Module(body=[])


def fills_persistent_state(path: Iterable[cst.CSTNode]) -> bool:
    """Whether the code on `path` (ancestors, innermost first) is the body of an `if`
    that tests persistent state for emptiness and fills it."""
    nodes = list(path)
    function = next((n for n in nodes if isinstance(n, cst.FunctionDef)), None)
    previous: cst.CSTNode | None = None
    for node in nodes:
        if isinstance(node, cst.If) and previous is node.body and fills_when_empty(node, function):
            return True
        previous = node
    return False


def fills_when_empty(node: cst.If, function: cst.FunctionDef | None) -> bool:
    """`if self.initial_task_loss is None: self.initial_task_loss = [...]` in `function`:
    the branch tests persistent state for emptiness and fills it, so it is taken once (per
    parameter, for an optimizer's `state[p]`), not on every call."""
    state = _tested_for_emptiness(node.test)
    return (
        state is not None
        and _persistent(state, function)
        and _fills(node.body, state)
        and not _emptied_beside(node, state, function)
    )


def _emptied_beside(
    node: cst.If, state: cst.BaseExpression, function: cst.FunctionDef | None
) -> bool:
    """`self.step_losses = None` (or any other value) in the same function outside the
    branch: the state is set again, on every call or pass of a loop around both, and the
    branch may find it empty and fill it each time."""
    if function is None or isinstance(state, cst.Name):
        return False  # a local alias (`state = self.state[p]`) is bound, not emptied
    inside = {id(n) for n in descendants(node.body)}
    wanted = _CODEGEN.code_for_node(state)
    for child in descendants(function.body):
        if id(child) in inside or not isinstance(child, cst.Assign | cst.AnnAssign):
            continue
        targets = (
            [t.target for t in child.targets] if isinstance(child, cst.Assign) else [child.target]
        )
        if any(_CODEGEN.code_for_node(t) == wanted for t in targets):
            return True
    return False


def _tested_for_emptiness(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of `len(x) == 0`, `not x`, `x is None`, `"k" not in x`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    [comparison] = test.comparisons
    operator, right = comparison.operator, comparison.comparator
    left = test.left
    if isinstance(operator, cst.NotIn) and isinstance(left, cst.SimpleString):
        return right
    if isinstance(operator, cst.Is) and isinstance(right, cst.Name) and right.value == "None":
        return left
    if (
        isinstance(operator, cst.Equal)
        and isinstance(right, cst.Integer)
        and right.value == "0"
        and isinstance(left, cst.Call)
        and isinstance(left.func, cst.Name)
        and left.func.value == "len"
        and len(left.args) == 1
    ):
        return left.args[0].value
    return None


def _persistent(state: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """`self.cache`, `self.state[p]`, or a local bound only to one of those
    (`state = self.state[p]`): it outlives the call."""
    if isinstance(state, cst.Attribute | cst.Subscript):
        return _rooted_in_self(state)
    if isinstance(state, cst.Name) and function is not None:
        values = local_values(function, state.value)
        return bool(values) and all(
            isinstance(v, cst.Attribute | cst.Subscript) and _rooted_in_self(v) for v in values
        )
    return False


def _rooted_in_self(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute | cst.Subscript):
        node = node.value
    return isinstance(node, cst.Name) and node.value == "self"


def _fills(body: cst.BaseSuite, state: cst.BaseExpression) -> bool:
    """The block assigns the state or one of its entries (`state["step"] = 0`)."""
    wanted = _CODEGEN.code_for_node(state)
    for node in descendants(body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                written = target.target
                if isinstance(written, cst.Subscript):
                    written = written.value
                if _CODEGEN.code_for_node(written) == wanted:
                    return True
    return False
