"""Hand-written gradient-norm clipping that tests the coefficient with a Python `if`.

    total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for p in params:
            p.grad.detach().mul_(clip_coef)

The `if` reads a tensor on the host every step. XLA105 (clip-grad-norm-sync) owns this
pattern, with its own advice (the `torch.where` form from the PyTorch/XLA docs); XLA103
(tensor-control-flow), which reports any `if` on a tensor, leaves it alone. Both ask this one
recognizer so that exactly one of them reports each such `if`. XLA105's fix asks
`unconditional_factors` whether the `if` can become unconditional scaling by
`torch.where(COND, F, 1.0)` with exactly the same effect.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from xlalint.analysis.tensors import TensorKinds

_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
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
        and isinstance(test.comparisons[0].operator, _ORDERING)
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


# -- the unconditional form (XLA105's fix) -------------------------------------------------------


def unconditional_factors(node: cst.If, kinds: TensorKinds) -> list[cst.BaseExpression] | None:
    """The scale factors of a clipping `if` that can run unconditionally, else None.

    `if COND: BODY` scales gradients in place by factors F. Run unconditionally with each F
    replaced by `torch.where(COND, F, 1.0)`, it does exactly the same: where COND holds, F
    is used as before; elsewhere the gradients are multiplied (or divided) by 1.0, which
    leaves every value as it was, `inf` and `nan` included. That holds only when:
    - the `if` has no `else`, and its body does nothing but in-place scaling of gradients
      (`g.mul_(F)`, `g.div_(F)`, `g *= F`, `g /= F`, `torch._foreach_mul_(grads, F)`,
      `torch._foreach_div_(grads, F)`), in `for` loops over names, attributes,
      `.parameters()` or comprehensions of them, and under `if x is (not) None` guards;
    - COND and every F are free of side effects (names, attributes, numbers, arithmetic,
      comparisons, subscripts), F is a tensor, and COND reads no gradient (`.grad`) and no
      loop variable of the body, so it means the same at every F as before the body.
    """
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
        return None
    test = clipping_test(node, kinds)
    if test is None or not _pure(test):
        return None
    read = _collect(test)
    if any(a.attr.value == "grad" for a in read.attributes):
        return None
    factors: list[cst.BaseExpression] = []
    targets: set[str] = set()
    if not _only_scaling(node.body.body, kinds, frozenset(), factors, targets):
        return None
    if not factors or targets & {n.value for n in read.names}:
        return None
    if not all(_pure(f) and kinds.is_tensor(f) for f in factors):
        return None
    return factors


def _only_scaling(
    statements: Sequence[cst.BaseStatement],
    kinds: TensorKinds,
    aliases: frozenset[str],
    factors: list[cst.BaseExpression],
    targets: set[str],
) -> bool:
    """Whether `statements` only scale gradients in place; collects the factors, and the
    names the loops bind."""
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                factor = _scaling_factor(small, kinds, aliases)
                if factor is None:
                    return False
                factors.append(factor)
        elif isinstance(statement, cst.For):
            if (
                statement.orelse is not None
                or statement.asynchronous is not None
                or not isinstance(statement.target, cst.Name)
                or not _pure(statement.iter)
                or not isinstance(statement.body, cst.IndentedBlock)
            ):
                return False
            targets.add(statement.target.value)
            inner = aliases
            if _mentions_gradient(statement.iter, aliases):
                inner = aliases | {statement.target.value}
            if not _only_scaling(statement.body.body, kinds, inner, factors, targets):
                return False
        elif isinstance(statement, cst.If):
            if (
                statement.orelse is not None
                or not _is_none_test(statement.test)
                or not isinstance(statement.body, cst.IndentedBlock)
                or not _only_scaling(statement.body.body, kinds, aliases, factors, targets)
            ):
                return False
        else:
            return False
    return True


def _scaling_factor(
    small: cst.BaseSmallStatement, kinds: TensorKinds, aliases: frozenset[str]
) -> cst.BaseExpression | None:
    """F in `g.mul_(F)`, `g.div_(F)`, `g *= F`, `g /= F`, `torch._foreach_mul_(gs, F)`."""
    if isinstance(small, cst.AugAssign):
        if (
            isinstance(small.operator, cst.MultiplyAssign | cst.DivideAssign)
            and _pure(small.target)
            and _mentions_gradient(small.target, aliases)
        ):
            return small.value
        return None
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return None
    call = small.value
    if any(arg.keyword is not None or arg.star for arg in call.args):
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SCALE_METHODS:
        if len(call.args) == 1 and _pure(func.value) and _mentions_gradient(func.value, aliases):
            return call.args[0].value
        return None
    if kinds.imports.resolve(func) in _FOREACH_SCALES and len(call.args) == 2:
        gradients = call.args[0].value
        if _pure(gradients) and _mentions_gradient(gradients, aliases):
            return call.args[1].value
    return None


def _is_none_test(test: cst.BaseExpression) -> bool:
    """`x is None`, `x is not None`: a Python test that reads no tensor."""
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Is | cst.IsNot)
        and isinstance(none := test.comparisons[0].comparator, cst.Name)
        and none.value == "None"
        and _pure(test.left)
    )


# Method calls without arguments that have no side effects, in receivers and loop iterables.
_PURE_METHODS = frozenset({"detach", "parameters"})


def _pure(node: cst.CSTNode) -> bool:
    """An expression whose evaluation has no side effects and cannot fail in a way the
    original would not: names, attributes, numbers, arithmetic, comparisons, subscripts,
    lists and comprehensions of those, and `.detach()`/`.parameters()`."""
    if isinstance(node, cst.Name | cst.Integer | cst.Float):
        return True
    if isinstance(node, cst.Attribute):
        return _pure(node.value)
    if isinstance(node, cst.BinaryOperation):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, cst.UnaryOperation):
        return _pure(node.expression)
    if isinstance(node, cst.Comparison):
        return _pure(node.left) and all(_pure(c.comparator) for c in node.comparisons)
    if isinstance(node, cst.Subscript):
        return _pure(node.value) and all(
            isinstance(e.slice, cst.Index) and _pure(e.slice.value) for e in node.slice
        )
    if isinstance(node, cst.Call):
        return (
            not node.args
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _PURE_METHODS
            and _pure(node.func.value)
        )
    if isinstance(node, cst.List | cst.Tuple):
        return all(isinstance(e, cst.Element) and _pure(e.value) for e in node.elements)
    if isinstance(node, cst.ListComp | cst.GeneratorExp):
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            if comp.asynchronous is not None or not (
                isinstance(comp.target, cst.Name) and _pure(comp.iter)
            ):
                return False
            if not all(_is_none_test(condition.test) for condition in comp.ifs):
                return False
            comp = comp.inner_for_in
        return _pure(node.elt)
    return False
