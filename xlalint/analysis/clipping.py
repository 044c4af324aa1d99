"""Hand-written gradient-norm clipping that tests the coefficient with a Python `if`.

    total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for p in params:
            p.grad.detach().mul_(clip_coef)

The `if` reads a tensor on the host every step. XLA105 (clip-grad-norm-sync) owns this
pattern, with its own advice (the `torch.where` form from the PyTorch/XLA docs); XLA103
(tensor-control-flow), which reports any `if` on a tensor, leaves it alone. Both ask this one
recognizer so that exactly one of them reports each such `if`.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from xlalint.analysis.tensors import TensorKinds

_ORDERING = m.LessThan() | m.LessThanEqual() | m.GreaterThan() | m.GreaterThanEqual()
_SCALE_METHODS = frozenset({"mul_", "div_"})
_FOREACH_SCALES = frozenset({"torch._foreach_mul_", "torch._foreach_div_"})


def clipping_test(node: cst.If, kinds: TensorKinds) -> cst.Comparison | None:
    """The test of `node` if the `if` is hand-written norm clipping, else None.

    That is: the test orders a tensor against something (`clip_coef < 1`,
    `total_norm > max_norm`), and the body scales gradients in place by a factor that uses a
    variable of that tensor side (`p.grad.mul_(clip_coef)`, `g *= max_norm / total_norm`,
    `torch._foreach_mul_(grads, clip_coef)`).
    """
    test = node.test
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and m.matches(test.comparisons[0].operator, _ORDERING)
    ):
        return None
    sides = (test.left, test.comparisons[0].comparator)
    variables = set()
    for side in sides:
        if kinds.is_tensor(side):
            variables |= _variables(side, kinds)
    if not variables:
        return None
    for factor in _gradient_scale_factors(node.body, kinds):
        if variables & _variables(factor, kinds):
            return test
    return None


class _Collector(cst.CSTVisitor):
    """One pass over a subtree: the names it reads and the statements that may scale.

    (`libcst.matchers.findall` would do, but walks the tree once per pattern and costs
    several times more; this runs for every `if` on a tensor in hot code.)
    """

    def __init__(self) -> None:
        self.names: list[cst.Name] = []
        self.attributes: list[cst.Attribute] = []
        self.calls: list[cst.Call] = []
        self.augmented: list[cst.AugAssign] = []
        self.assigns: list[cst.Assign] = []
        self.loops: list[cst.For] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.attributes.append(node)
        node.value.visit(self)
        return False  # `node.attr` is a field name, not a variable read

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.augmented.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns.append(node)

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(node)


def _collect(node: cst.CSTNode) -> _Collector:
    collector = _Collector()
    node.visit(collector)
    return collector


def _variables(node: cst.CSTNode, kinds: TensorKinds) -> set[str]:
    """Names read in `node`, leaving out attribute names and imported modules (`torch`)."""
    return {name.value for name in _collect(node).names if kinds.imports.resolve(name) is None}


def _mentions_gradient(node: cst.CSTNode, aliases: frozenset[str] = frozenset()) -> bool:
    """`p.grad`, `grads`, `g_grad`, or a loop variable over them: the target is a gradient."""
    found = _collect(node)
    return any(a.attr.value == "grad" for a in found.attributes) or any(
        "grad" in name.value or name.value in aliases for name in found.names
    )


def _gradient_scale_factors(body: cst.BaseSuite, kinds: TensorKinds) -> list[cst.BaseExpression]:
    """Factors by which `body` scales gradients in place."""
    found = _collect(body)
    # `for g in grads: g.mul_(clip_coef)`: `g` is a gradient too.
    aliases = frozenset(
        name.value
        for loop in found.loops
        if _mentions_gradient(loop.iter)
        for name in _collect(loop.target).names
    )
    factors: list[cst.BaseExpression] = []
    for call in found.calls:
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _SCALE_METHODS
            and call.args
            and _mentions_gradient(func.value, aliases)
        ):
            factors.append(call.args[0].value)
        elif (
            kinds.imports.resolve(func) in _FOREACH_SCALES
            and len(call.args) >= 2
            and _mentions_gradient(call.args[0].value)
        ):
            factors.append(call.args[1].value)
    for augmented in found.augmented:
        if isinstance(augmented.operator, cst.MultiplyAssign | cst.DivideAssign) and (
            _mentions_gradient(augmented.target, aliases)
        ):
            factors.append(augmented.value)
    for assign in found.assigns:
        if isinstance(assign.value, cst.BinaryOperation) and any(
            _mentions_gradient(target.target, aliases) for target in assign.targets
        ):
            factors.append(assign.value)
    return factors
