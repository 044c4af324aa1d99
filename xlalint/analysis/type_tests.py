"""What a type test says of a name where it is known to hold (or to fail).

`if type(step) is int: return self.betas[:step + 1]` slices by a Python int, whatever
`step` is elsewhere (`step: Union[int, Tensor]`). The walk asks this module, at every place
a condition is known (an `if` or `elif` body, an `else`, the code after `if not
isinstance(x, int): return`/`continue`/`raise`, after `assert isinstance(x, int)`, the right
side of an `and`), which names the condition shows to be host values, and binds them so for
that stretch of code: every rule asking "is this a tensor here?" gets the same answer.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import ImportTable
from xlalint.walk import children, node_types, target_names

# Types whose values live on the host, by the last part of their name (`numbers.Integral`,
# `np.ndarray`, `np.integer`). Not containers: a tuple or list may hold tensors (`if
# isinstance(losses, tuple): ... per_loss.item() for per_loss in losses`).
_HOST_TYPES = frozenset(
    {
        "int", "float", "bool", "str", "bytes", "complex", "Number", "Integral", "Real",
        "Rational", "ndarray", "integer", "floating", "number", "generic", "bool_", "int64",
        "int32", "float32", "float64",
    }
)  # fmt: skip


# Predicates that hold only for host values (`scipy.sparse.issparse(X)`, a scipy sparse
# matrix; `np.isscalar(x)`, a Python or numpy scalar), by the last part of their name.
_HOST_PREDICATES = frozenset({"issparse", "isspmatrix", "isscalar"})


def class_name(node: cst.BaseExpression, imports: ImportTable) -> str:
    """`Tensor` for `torch.Tensor` (or an alias of it): the last name a type test spells."""
    spelled = imports.resolve(node) or get_full_name_for_node(node) or ""
    return spelled.rsplit(".", 1)[-1]


def _options(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`(int, float)` -> both; `int | float` -> both; `int` -> itself."""
    if isinstance(node, cst.Tuple | cst.List | cst.Set):
        return [e.value for e in node.elements]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return [*_options(node.left), *_options(node.right)]
    return [node]


def _host_classes(classes: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether every class a type test names is a host scalar or array type."""
    names = {class_name(option, imports) for option in _options(classes)}
    return bool(names) and names <= _HOST_TYPES


def _tested(test: cst.BaseExpression, imports: ImportTable) -> tuple[str, bool] | None:
    """For a plain test of a name against host types, `(name, positive)`: `isinstance(x,
    int)`, `type(x) is int`, `type(x) == int`, `type(x) in (int, float)`, `issparse(x)`
    are positive, `type(x) is not int` is negative."""
    if type(test) is cst.Call:
        args = [a.value for a in test.args if a.keyword is None and not a.star]
        if (
            get_full_name_for_node(test.func) == "isinstance"
            and len(args) == 2
            and isinstance(args[0], cst.Name)
            and _host_classes(args[1], imports)
        ):
            return args[0].value, True
        spelled = get_full_name_for_node(test.func) or ""
        if (
            spelled.rsplit(".", 1)[-1] in _HOST_PREDICATES
            and len(args) == 1
            and isinstance(args[0], cst.Name)
        ):
            return args[0].value, True
        return None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    left = test.left
    if not (
        isinstance(left, cst.Call)
        and get_full_name_for_node(left.func) == "type"
        and len(left.args) == 1
        and isinstance(left.args[0].value, cst.Name)
    ):
        return None
    target = test.comparisons[0]
    positive = isinstance(target.operator, cst.Is | cst.Equal | cst.In)
    if not positive and not isinstance(target.operator, cst.IsNot | cst.NotEqual | cst.NotIn):
        return None
    if not _host_classes(target.comparator, imports):
        return None
    return left.args[0].value.value, positive


def _all_elements(test: cst.BaseExpression, imports: ImportTable) -> str | None:
    """`all(isinstance(s, str) for s in keys)`: `keys`, a collection of host values."""
    if not (
        isinstance(test, cst.Call)
        and get_full_name_for_node(test.func) == "all"
        and len(test.args) == 1
        and isinstance(test.args[0].value, cst.GeneratorExp | cst.ListComp)
    ):
        return None
    comprehension = test.args[0].value
    clause = comprehension.for_in
    if clause.inner_for_in is not None or clause.ifs:
        return None
    if not (isinstance(clause.target, cst.Name) and isinstance(clause.iter, cst.Name)):
        return None
    if _tested(comprehension.elt, imports) == (clause.target.value, True):
        return clause.iter.value
    return None


def host_names(test: cst.BaseExpression, holds: bool, imports: ImportTable) -> list[str]:
    """Names that `test` being `holds` shows to be host values: a passed test against host
    types (`isinstance(step, int)`, `type(step) is int`, a failed `type(step) is not
    int`), or `all(isinstance(s, str) for s in keys)`; through `not`, both sides of a true
    `and` and of a false `or`, and of a true `or` the names every side shows
    (`isinstance(p, int) or isinstance(p, float)`: whichever held). A failed tensor test
    (the `else` of `isinstance(v, torch.Tensor)`) says nothing: what is not a tensor may
    hold tensors (a list of losses)."""
    return _through_connectives(test, holds, lambda atom, h: _host_atom(atom, h, imports))


def _host_atom(test: cst.BaseExpression, holds: bool, imports: ImportTable) -> list[str]:
    if holds and (collection := _all_elements(test, imports)) is not None:
        return [collection]
    tested = _tested(test, imports)
    if tested is None or tested[1] != holds:
        return []
    return [tested[0]]


def _through_connectives(
    test: cst.BaseExpression,
    holds: bool,
    atom: Callable[[cst.BaseExpression, bool], list[str]],
) -> list[str]:
    """The names `test` being `holds` shows by `atom` (what one test that is no `not`,
    `and` or `or` shows), through `not`, both sides of a true `and` and of a false `or`,
    and of a true `or` or a false `and` the names every side shows (whichever decided)."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _through_connectives(test.expression, not holds, atom)
    if type(test) is cst.BooleanOperation:
        left = _through_connectives(test.left, holds, atom)
        right = _through_connectives(test.right, holds, atom)
        if isinstance(test.operator, cst.And) != holds:
            return [name for name in left if name in right]  # whichever side decided
        return left + right
    return atom(test, holds)


# The classes a failed type test shows a value is not (`torch.Tensor`, a subclass torch
# spells: `nn.Parameter`), by the last part of their name, and torch's own predicate.
_TENSOR_TYPES = frozenset({"Tensor", "Parameter"})
_TENSOR_PREDICATES = frozenset({"torch.is_tensor"})


def _tested_tensor(test: cst.BaseExpression, imports: ImportTable) -> str | None:
    """The name a tensor test asks about: `isinstance(x, torch.Tensor)` (a tuple naming
    `Tensor` among others too), `torch.is_tensor(x)`."""
    if type(test) is not cst.Call:
        return None
    args = [a.value for a in test.args if a.keyword is None and not a.star]
    if not args or not isinstance(args[0], cst.Name):
        return None
    spelled = get_full_name_for_node(test.func)
    if spelled == "isinstance" and len(args) == 2:
        names = {class_name(option, imports) for option in _options(args[1])}
        return args[0].value if names & _TENSOR_TYPES else None
    if len(args) == 1 and imports.resolve(test.func) in _TENSOR_PREDICATES:
        return args[0].value
    return None


def non_tensor_names(test: cst.BaseExpression, holds: bool, imports: ImportTable) -> list[str]:
    """Names that `test` being `holds` shows to be no tensor: a failed tensor test (`not
    isinstance(t, torch.Tensor) and float(t) == 1.0`, the `else` of `x.item() if
    isinstance(x, Tensor) else float(x)`, after `if torch.is_tensor(v): return v`);
    through `not`, both sides of a true `and` and of a false `or`, the names every side of
    a true `or` shows. Not a kind: what is no
    tensor may hold tensors (a list of losses), but a cast or `.item()` of the name itself
    there reads a Python or numpy value, never a device tensor."""
    return _through_connectives(test, holds, lambda atom, h: _non_tensor_atom(atom, h, imports))


def _non_tensor_atom(test: cst.BaseExpression, holds: bool, imports: ImportTable) -> list[str]:
    name = None if holds else _tested_tensor(test, imports)
    return [] if name is None else [name]


_ORDERINGS = node_types(cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def range_checked(test: cst.BaseExpression) -> list[str]:
    """Names a condition checks as counts or indexes, whatever its outcome: the middle of a
    chained range check from an int literal (`assert 1 <= unet_number <= self.num_unets`,
    `0 < i < n`) or a name ordered against a `len()` (`if i >= len(self.stages):`), in any
    part of a `not`, `and` or `or`. Evidence that a parameter is a Python int, where only
    its function's name (a per-step function) said it is a tensor; Python's chained
    comparison would call `bool()` on a tensor's first comparison, which an index check
    written for tensors avoids."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return range_checked(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return range_checked(test.left) + range_checked(test.right)
    if not isinstance(test, cst.Comparison):
        return []
    if not all(type(c.operator) in _ORDERINGS for c in test.comparisons):
        return []
    if len(test.comparisons) == 2:
        middle = test.comparisons[0].comparator
        if isinstance(test.left, cst.Integer) and isinstance(middle, cst.Name):
            return [middle.value]
        return []
    if len(test.comparisons) == 1:
        sides = (test.left, test.comparisons[0].comparator)
        for side, other in (sides, sides[::-1]):
            if (
                isinstance(side, cst.Name)
                and isinstance(other, cst.Call)
                and get_full_name_for_node(other.func) == "len"
            ):
                return [side.value]
    return []


def normalised_to_class(statement: cst.If, imports: ImportTable) -> tuple[str, cst.Call] | None:
    """An `if` that makes a name an instance of one class on every path: `if
    isinstance(x, C): ... else: x = C(...)`, or `if not isinstance(x, C): x = C(...)`
    (the branch that fails the test ends by building the class from it; the other leaves
    `x`, which the test proved a `C`, as it is). `(name, the construction)`, whose kind
    is then the name's, whatever the name held before the test (`audio: Union[str,
    Tensor, AudioLoader]`, an `AudioLoader` after it); None for anything else (an
    `elif`, a test of several classes)."""
    test = statement.test
    positive = True
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, positive = test.expression, False
    if not (
        type(test) is cst.Call
        and get_full_name_for_node(test.func) == "isinstance"
        and len(test.args) == 2
        and all(a.keyword is None and not a.star for a in test.args)
        and type(test.args[0].value) is cst.Name
        and type(test.args[1].value) in (cst.Name, cst.Attribute)
    ):
        return None
    name = test.args[0].value.value  # type: ignore[attr-defined]
    tested = imports.resolve(test.args[1].value) or get_full_name_for_node(test.args[1].value)
    orelse = statement.orelse
    if positive:
        if type(orelse) is not cst.Else or _binds(statement.body, name):
            return None
        building = orelse.body
    else:
        if orelse is not None:
            return None
        building = statement.body
    built = _last_binding(building, name)
    if built is None or type(built) is not cst.Call or tested is None:
        return None
    constructor = imports.resolve(built.func) or get_full_name_for_node(built.func)
    return (name, built) if constructor == tested else None


def _last_binding(block: cst.BaseSuite, name: str) -> cst.BaseExpression | None:
    """The value of `name = value`, the last statement of `block` that binds `name`, where
    that statement stands in the block itself (not in a branch of it)."""
    if type(block) is not cst.IndentedBlock:
        return None
    for statement in reversed(block.body):
        if not _binds(statement, name):
            continue
        if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
            return None
        line = statement.body[0]
        if (
            type(line) is cst.Assign
            and len(line.targets) == 1
            and type(line.targets[0].target) is cst.Name
            and line.targets[0].target.value == name
        ):
            return line.value
        return None
    return None


_BINDING_NODES = node_types(cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For)


def _binds(node: cst.CSTNode, name: str) -> bool:
    """Whether `node` (a statement or block) assigns `name` anywhere in it."""
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) in _BINDING_NODES and name in target_names(current.target):  # type: ignore[attr-defined]
            return True
        stack.extend(children(current))
    return False
