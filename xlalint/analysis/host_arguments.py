"""Parameters that every call of this module hands a host copy.

A helper's annotation says what kind of value it takes (`cost_matrix: Tensor`), not where
the value lives. When every call of the helper in this module (of a method: through
`self`, or through any receiver where no other class of the module defines a method by
that name, `sum_tree.update_ids(ids.cpu(), prob.cpu())`) hands it a copy already on the
host (`cost_matrix = cost_matrix.cpu()` then `self._sanitize_cost_matrix(cost_matrix)`,
`min_diff(pos.detach().cpu().numpy(), ..., pbc.tolist())`, a row of a host copy, a
tensor a factory builds without a device (to a private helper, `_update`, which only
this module calls), a name each branch of an `if`/`else` binds to
one of these, or what a function of the module returns as a host copy on every path:
`loss = self.fit_batch(batch)` where `fit_batch` ends `return loss.detach().cpu()`; or a
Python value: a literal, `True`, or the caller's own parameter whose default is one and
which it never rebinds, `forward_only=forward_only` from `forward_only=False`), its
reads of that parameter (`if mask.all():`, `for periodic in pbc: if periodic:`) read host
values: the transfer was paid, and is reported, at the copy. A helper this module never
calls, or calls once with anything else, keeps what its annotation or use says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import is_staticmethod, parameters, positional_names
from xlalint.analysis.guards import unpacked_value
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.members import is_property
from xlalint.analysis.returns import _walk_body
from xlalint.walk import binding_counts, code_children, descendants, target_names

# Methods that hand back the values they are called on, on the same side of the bus.
SAME_PLACE = frozenset({"detach", "clone", "contiguous", "float", "double", "long", "int"})
# Host copies that stay torch tensors, and those that leave torch (numpy, Python values).
_TO_HOST_TENSOR = frozenset({"cpu"})
_TO_HOST_VALUE = frozenset({"numpy", "tolist", "item"})


def host_copy(expr: cst.BaseExpression) -> bool | None:
    """True for a host copy that is a torch tensor (`x.cpu()`, `x.to("cpu")`, then
    `.detach()` and the like), False for one that left torch (`x.cpu().numpy()`,
    `x.tolist()`), None for anything else."""
    while (
        type(expr) is cst.Call
        and type(expr.func) is cst.Attribute
        and expr.func.attr.value in SAME_PLACE
    ):
        expr = expr.func.value
    if type(expr) is not cst.Call or type(expr.func) is not cst.Attribute:
        return None
    method = expr.func.attr.value
    if method in _TO_HOST_VALUE and not expr.args:
        return False
    if method in _TO_HOST_TENSOR and not expr.args:
        return True
    if method == "to" and len(expr.args) == 1:
        value = expr.args[0].value
        if isinstance(value, cst.SimpleString) and value.evaluated_value == "cpu":
            return True
    return None


def host_parameters(
    module: cst.Module, function: cst.FunctionDef, in_class: bool, class_name: str | None = None
) -> dict[str, bool]:
    """The parameters of `function` (a method when `in_class`, of the class `class_name`)
    that every call of it in `module` (at least one) hands a host copy, each with whether
    the copy is a torch tensor (`host_copy`). Calls are `f(...)` for a function,
    `self.f(...)` / `cls.f(...)` for a method, the class's own `Cls(...)` for its
    `__init__` (parlai's `FairseqBleuMetric(guess.cpu().int(), ...)`); a call that hands
    anything else, or unpacks arguments, settles nothing."""
    params = function.params
    if params.star_arg is not None and isinstance(params.star_arg, cst.Param):
        return {}
    positional = positional_names(function)
    if in_class and not is_staticmethod(function):
        positional = positional[1:]
    if not positional:
        return {}
    # A private helper (`_update`) is called from this module only: a tensor it is handed
    # that a factory built without a device is on the host. A public one's callers may be
    # anywhere, and hand it what they like.
    private = function.name.value.startswith("_") and not function.name.value.startswith("__")
    constructor = in_class and class_name is not None and function.name.value == "__init__"
    if constructor:
        sites = call_sites(module).named(class_name, method=False)  # type: ignore[arg-type]
        in_class = False  # called by the class's name, as a function is
    else:
        sites = call_sites(module).named(function.name.value, method=in_class)
    if not sites:
        return {}
    found: dict[str, bool] | None = None
    # A method by a name no other class of the module defines is reached through its
    # instances too (`sum_tree.update_ids(ids.cpu(), prob)` on an element of a list of them).
    through_instances = in_class and _methods_named(module).get(function.name.value) == 1
    for site in sites:
        call = site.call
        if (
            in_class
            and not through_instances
            and not (
                type(call.func) is cst.Attribute
                and type(call.func.value) is cst.Name
                and call.func.value.value in ("self", "cls")
            )
        ):
            return {}
        if any(arg.star for arg in call.args) or site.function is None:
            return {}
        handed: dict[str, bool] = {}
        for index, arg in enumerate(call.args):
            if arg.keyword is not None:
                name = arg.keyword.value
            elif index < len(positional):
                name = positional[index]
            else:
                return {}
            copy = _handed_copy(module, arg.value, call, site.function, private)
            if copy is not None:
                handed[name] = copy
        if found is None:
            found = handed
        else:
            found = {n: t and handed[n] for n, t in found.items() if n in handed}
        if not found:
            return {}
    return found or {}


def _handed_copy(
    module: cst.Module,
    value: cst.BaseExpression,
    call: cst.Call,
    caller: cst.FunctionDef,
    factories: bool = False,
) -> bool | None:
    """`copy_of` what `call` hands: the argument itself, or for a plain name the value
    its last assignment before the call (in the blocks around it) gives it, or the one
    each branch of an `if`/`else` there gives it (`mask = started.cpu()` on one side,
    `mask = torch.ones(n, dtype=torch.bool)` on the other); a row or slice of such a name
    (`values[i]` of `values = top.values.cpu()`) is on the host where the name is."""
    if (
        type(value) is cst.Subscript
        and type(value.value) is cst.Name
        and not any(
            type(e.slice) is cst.Index and type(e.slice.value) is cst.SimpleString
            for e in value.slice
        )
    ):
        value = value.value  # `vals[i]`: a view of `vals`, on its side of the bus
    if _is_literal(value):
        return False  # `forward_only=True`: a Python value, never a tensor
    if type(value) is not cst.Name:
        return copy_of(module, value, factories)
    if _literal_parameter(caller, value.value):
        return False  # `forward_only=forward_only`, the caller's own `forward_only=False`
    if value.value not in _copy_names(module, caller):
        return None
    name = value.value
    for statement, assigned in _bindings_before(caller, call, name):
        if assigned is _OTHER:
            if _joins_only(statement, name):
                continue  # `if wild: emission = torch.cat([emission, col], dim=1)`
            return _branch_copies(module, statement, name, factories)
        if _joined_to(assigned, name):
            continue
        return copy_of(module, assigned, factories)
    return None


def _is_literal(node: cst.BaseExpression) -> bool:
    """A Python literal: `True`, `0.5`, `-1`, `"mean"` (not `None`, which says nothing of
    what a caller hands when it hands something)."""
    if type(node) in (cst.Integer, cst.Float, cst.SimpleString):
        return True
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        return type(node.expression) in (cst.Integer, cst.Float)
    return type(node) is cst.Name and node.value in ("True", "False")


def _literal_parameter(function: cst.FunctionDef, name: str) -> bool:
    """`name` is a parameter of `function` with a literal default and no annotation, or
    one naming a Python scalar (`forward_only=False`, `reduction: str = "mean"`), that its
    body never rebinds: a Python value wherever the function hands it on (its own callers
    pass what the default is: a flag, a number, a name)."""
    for param in parameters(function):
        if param.name.value != name:
            continue
        if param.default is None or not _is_literal(param.default):
            return False
        if param.annotation is not None and not (
            type(param.annotation.annotation) is cst.Name
            and param.annotation.annotation.value in _SCALAR_ANNOTATIONS
        ):
            return False
        return name not in binding_counts(function)
    return False


_SCALAR_ANNOTATIONS = frozenset({"bool", "int", "float", "str"})


# torch functions that join tensors, which must all be on one device.
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack",
                    "torch.hstack", "torch.vstack", "torch.dstack"})  # fmt: skip


def _joined_to(value: cst.BaseExpression, name: str) -> bool:
    """`torch.cat([name, other], dim=1)`: tensors joined to `name`'s own value, which
    torch joins only on one device: the result is where `name` was."""
    if type(value) is not cst.Call or (get_full_name_for_node(value.func) or "") not in _JOINS:
        return False
    first = value.args[0].value if value.args and not value.args[0].star else None
    return type(first) in (cst.List, cst.Tuple) and any(
        type(e) is cst.Element and type(e.value) is cst.Name and e.value.value == name
        for e in first.elements  # type: ignore[union-attr]
    )


def _joins_only(statement: cst.CSTNode, name: str) -> bool:
    """An `if` (or `with`) whose every binding of `name` joins tensors to its own value
    (`_joined_to`): where it runs or not, `name` stays where it was before it."""
    if type(statement) not in (cst.If, cst.With):
        return False
    found = False
    for node in _walk(statement):
        if type(node) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            target = node.target  # type: ignore[attr-defined]
            if name in target_names(target):
                return False
        elif type(node) is cst.Assign:
            targets = [t.target for t in node.targets]  # type: ignore[attr-defined]
            if not any(name in target_names(t) for t in targets):
                continue
            if len(targets) != 1 or type(targets[0]) is not cst.Name:
                return False
            if not _joined_to(node.value, name):  # type: ignore[attr-defined]
                return False
            found = True
    return found


def value_before(
    function: cst.FunctionDef, node: cst.CSTNode, name: str
) -> cst.BaseExpression | None:
    """The value the last assignment of `name` before `node` (in the blocks around it)
    gives it: `n = tensor(counts)` before `return heads, n`; None where that binding is
    in a branch or a loop, binds the name some other way, or there is none."""
    for _statement, assigned in _bindings_before(function, node, name):
        return None if assigned is _OTHER else assigned
    return None


def _bindings_before(
    function: cst.FunctionDef, node: cst.CSTNode, name: str
) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression]]:
    """The statements before `node` in the blocks around it that bind `name`, nearest
    first, each with what `_assignment` reads of it (`_OTHER` for a binding it cannot
    read): the one walk back `value_before` and `_handed_copy` share."""
    path = _path_to(function.body, node)  # type: ignore[arg-type]
    if path is None:
        return
    for block, index in reversed(path):
        for statement in reversed(block[:index]):
            assigned = _assignment(statement, name)
            if assigned is not None:
                yield statement, assigned


# Methods a record of fields calls on itself to turn every field into a numpy array
# (segment-anything's `MaskData.to_numpy()`): names that say numpy, which a model lacks.
IN_PLACE_TO_NUMPY = frozenset({"to_numpy", "numpy"})


def converted_in_place_before(function: cst.FunctionDef, node: cst.CSTNode, name: str) -> bool:
    """Whether the statements before `node` (in the blocks around it) end the life of
    `name`'s value with a statement that only calls `name.to_numpy()` (or `.numpy()`) and
    drops the result, after the last binding of `name`: a call made for its effect, so
    `name` is a record that converts its fields to numpy arrays in place (a tensor's
    `.numpy()` hands back a new array and leaves the tensor as it was, so nobody writes it
    alone), and what `name` holds from there on lives on the host."""
    path = _path_to(function.body, node)  # type: ignore[arg-type]
    if path is None:
        return False
    for block, index in reversed(path):
        for statement in reversed(block[:index]):
            if _converts_in_place(statement, name):
                return True
            if _assignment(statement, name) is not None:
                return False
    return False


def _converts_in_place(statement: cst.CSTNode, name: str) -> bool:
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return False
    line = statement.body[0]
    if type(line) is not cst.Expr:
        return False
    call = line.value
    return (
        type(call) is cst.Call
        and not call.args
        and type(call.func) is cst.Attribute
        and call.func.attr.value in IN_PLACE_TO_NUMPY
        and type(call.func.value) is cst.Name
        and call.func.value.value == name
    )


def moved_in_place(function: cst.FunctionDef, name: str) -> bool:
    """Whether `function` holds a statement that only moves `name` to a device and drops
    the result (`prev_op.to(best_device)`, `layer.cuda()`): a tensor's `.to()` hands back
    a new tensor and leaves the tensor where it was, so nobody writes it alone; a module's
    moves its parameters in place. `name` is a module, and its `.cpu()` (also a statement
    alone, after its work) moves it back, copying no value the step computed."""
    return any(
        _moves_alone(statement, name)
        for statement in descendants(function.body)
        if type(statement) is cst.SimpleStatementLine
    )


def _moves_alone(statement: cst.SimpleStatementLine, name: str) -> bool:
    if len(statement.body) != 1 or type(statement.body[0]) is not cst.Expr:
        return False
    call = statement.body[0].value
    if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
        return False
    method = call.func.attr.value
    receiver = call.func.value
    if method not in ("to", "cuda") or type(receiver) is not cst.Name or receiver.value != name:
        return False
    return method == "cuda" or _moves_to_device(call, name)


def _branch_copies(
    module: cst.Module, statement: cst.CSTNode, name: str, factories: bool
) -> bool | None:
    """An `if` with an `else` (or an `elif` chain ending in one) each of whose branches
    ends its own statements' bindings of `name` with `name = <a host copy>` (`copy_of`):
    the copy's kind, joined over the branches; None for anything else."""
    if type(statement) is not cst.If:
        return None
    found = True
    branch: cst.If | cst.Else | None = statement
    while branch is not None:
        body = branch.body
        if type(body) is not cst.IndentedBlock:
            return None
        assigned = None
        for inner in reversed(body.body):
            assigned = _assignment(inner, name)
            if assigned is not None:
                break
        if assigned is None or assigned is _OTHER:
            return None
        copy = copy_of(module, assigned, factories)
        if copy is None:
            return None
        found = found and copy
        if type(branch) is cst.Else:
            break
        orelse = branch.orelse
        if orelse is None:
            return None  # no `else`: the binding before the `if` may stand
        branch = orelse
    return found


def copy_of(module: cst.Module, expr: cst.BaseExpression, factories: bool = False) -> bool | None:
    """`host_copy` of `expr`, with `factories` a new tensor built on the host (`torch.ones(n,
    dtype=torch.bool)`, a factory given no device: `_built_on_host`), or of what every
    return of the module's functions it calls hands back (`self.fit_batch(batch)`, each
    `fit_batch` of the module ending `return loss.detach().cpu()`): the copy was made,
    and is reported, in the callee."""
    copy = host_copy(expr)
    if copy is not None:
        return copy
    if factories and _built_on_host(expr):
        return True
    if (
        type(expr) is cst.Attribute
        and type(expr.value) is cst.Name
        and expr.value.value == "self"
        and expr.attr.value in _host_properties(module)
    ):
        return True  # `self.normalized_threshold`, a property returning `torch.tensor(1.0) - s`
    if type(expr) is not cst.Call:
        return None
    func = expr.func
    if type(func) is cst.Name:
        return _returned_copies(module).get((func.value, False))
    if (
        type(func) is cst.Attribute
        and type(func.value) is cst.Name
        and func.value.value in ("self", "cls")
    ):
        return _returned_copies(module).get((func.attr.value, True))
    return None


# Torch factories that build a new tensor, on the host unless given a device.
_HOST_FACTORY = re.compile(r"^torch\.(tensor|as_tensor|zeros|ones|full|arange|linspace)$")


def _built_on_host(expr: cst.BaseExpression) -> bool:
    """`torch.tensor(1.0)` (a factory given no device), or arithmetic of one with a number
    or a plain name (`torch.tensor(1.0) - self.sensitivity`): a new host tensor."""
    if type(expr) is cst.Call:
        spelled = get_full_name_for_node(expr.func) or ""
        return _HOST_FACTORY.match(spelled) is not None and not any(
            arg.keyword is not None and arg.keyword.value == "device" for arg in expr.args
        )
    if type(expr) is cst.BinaryOperation:
        sides = (expr.left, expr.right)
        return any(_built_on_host(side) for side in sides) and all(
            _built_on_host(side) or type(side) in (cst.Integer, cst.Float, cst.Name, cst.Attribute)
            for side in sides
        )
    return False


@lint_memo.memo(16)
def _host_properties(module: cst.Module) -> frozenset[str]:
    """Properties of the module's classes that every definition by that name builds on
    the host on every `return` (`return torch.tensor(1.0) - self.image_sensitivity`)."""
    found: dict[str, bool] = {}
    for statement in module.body:
        if type(statement) is not cst.ClassDef:
            continue
        for member in statement.body.body:
            if type(member) is not cst.FunctionDef:
                continue
            values = (
                [n.value for n in _walk_body(member, expressions=False) if type(n) is cst.Return]
                if is_property(member)  # (other methods' returns are not asked about)
                else []
            )
            built = bool(values) and all(v is not None and _built_on_host(v) for v in values)
            found[member.name.value] = found.get(member.name.value, True) and built
    return frozenset(name for name, built in found.items() if built)


@lint_memo.memo(16)
def _methods_named(module: cst.Module) -> dict[str, int]:
    """How many classes of the module define a method by each name."""
    counts: dict[str, int] = {}
    for statement in module.body:
        if type(statement) is cst.ClassDef:
            names = {m.name.value for m in statement.body.body if type(m) is cst.FunctionDef}
            for name in names:
                counts[name] = counts.get(name, 0) + 1
    return counts


@lint_memo.memo(16)
def _returned_copies(module: cst.Module) -> dict[tuple[str, bool], bool]:
    """Per function name of the module (and whether it is a method), `host_copy` of what
    every definition by that name returns on every `return`, where all agree that it is
    a host copy. One definition that returns anything else, or nothing, settles nothing:
    the name is left out."""
    found: dict[tuple[str, bool], bool | None] = {}
    for statement in module.body:
        if type(statement) is cst.FunctionDef:
            _note_returns(found, (statement.name.value, False), statement)
        elif type(statement) is cst.ClassDef:
            for member in statement.body.body:
                if type(member) is cst.FunctionDef:
                    _note_returns(found, (member.name.value, True), member)
    return {key: copy for key, copy in found.items() if copy is not None}


def _note_returns(
    found: dict[tuple[str, bool], bool | None], key: tuple[str, bool], function: cst.FunctionDef
) -> None:
    values = [n.value for n in _walk_body(function, expressions=False) if type(n) is cst.Return]
    copies = [host_copy(v) if v is not None else None for v in values]
    copy = None if not copies or None in copies else all(copies)
    if key in found:
        before = found[key]
        copy = None if before is None or copy is None else before and copy
    found[key] = copy


# Keyed by function node: a small bound, as for `guards._assigned_values`, so that a
# worker or the language server does not keep many files' trees alive.
@lint_memo.memo(64)
def _copy_names(module: cst.Module, function: cst.FunctionDef) -> frozenset[str]:
    """The names some plain assignment in `function` binds to a host copy: the only names
    worth following back from a call (one walk per caller)."""
    names: set[str] = set()
    for node in _walk(function.body):
        if (
            type(node) is cst.Assign
            and len(node.targets) == 1
            and type(node.targets[0].target) is cst.Name
            and copy_of(module, node.value, factories=True) is not None
        ):
            names.add(node.targets[0].target.value)
    return frozenset(names)


_OTHER = cst.Name("_")  # a binding this module cannot read (in a branch, a loop, `+=`)


def _assignment(statement: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value `statement` assigns `name` (`name = value`), `_OTHER` where it binds the
    name some other way or inside a compound statement, None where it does not bind it."""
    if type(statement) is cst.SimpleStatementLine:
        result: cst.BaseExpression | None = None
        for small in statement.body:
            if type(small) is cst.Assign:
                targets = [t.target for t in small.targets]
                if any(type(t) is cst.Name and t.value == name for t in targets):
                    result = small.value if len(targets) == 1 else _OTHER
                elif any(name in target_names(t) for t in targets):
                    result = _OTHER
            elif type(small) in (cst.AugAssign, cst.AnnAssign) and name in target_names(
                small.target  # type: ignore[attr-defined]
            ):
                result = _OTHER
        return result
    for node in _walk(statement):
        if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            targets = (
                [t.target for t in node.targets]  # type: ignore[attr-defined]
                if type(node) is cst.Assign
                else [node.target]  # type: ignore[attr-defined]
            )
            if any(name in target_names(t) for t in targets):
                return _OTHER
    return None


def _walk(node: cst.CSTNode):
    """`node` and the code under it, not into nested functions, classes or lambdas (their
    own scopes); in no set order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if type(current) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            stack.extend(code_children(current))


def _path_to(
    block: cst.BaseSuite, call: cst.Call
) -> list[tuple[tuple[cst.BaseStatement, ...], int]] | None:
    """The statement lists around `call`, outermost first, each with the position of the
    statement that holds it."""
    body = tuple(block.body) if isinstance(block, cst.IndentedBlock) else ()
    for index, statement in enumerate(body):
        if not any(node is call for node in _walk(statement)):
            continue
        for inner in _blocks(statement):
            deeper = _path_to(inner, call)
            if deeper is not None:
                return [(body, index), *deeper]
        return [(body, index)]
    return None


def _blocks(statement: cst.CSTNode) -> list[cst.BaseSuite]:
    """The indented blocks directly inside a compound statement (`if`/`elif`/`else`,
    loops, `with`, `try` and its handlers)."""
    found: list[cst.BaseSuite] = []
    stack = list(code_children(statement))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.IndentedBlock):
            found.append(node)
        elif type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and not isinstance(
            node, cst.BaseExpression
        ):
            stack.extend(code_children(node))
    return found


# A call that hands back its first argument moved to the device (`move_to_device(batch,
# self.device)`, `utils.batch_to_device(b, d)`), by its name.
_TO_DEVICE_CALL = re.compile(r"(^|_)to_device$")


def moved_later(function: cst.FunctionDef, names: Iterable[str]) -> frozenset[str]:
    """The parameters among `names` that `function` itself first rebinds to their move
    onto the device (`batch = move_to_device(batch, self.device)`, `x = x.to(device)`,
    `x = x.cuda()`), in its own body (not in a nested function or class): the first
    statement that binds the name is the move. The caller hands them over on the host:
    until that statement they, and what is read from them (`(~batch["mask"]).sum()
    .item()` before the move), are host values. A parameter rebound to something else
    first (`targets = zeros.scatter_(...)`, then `targets = targets.cuda()`) is left out,
    and so is one the function calls or walks as a module (`model = model.to(device)`,
    then `model.eval()` and `outputs = model(**inputs)`): no tensor is callable or has
    `.eval()`, so what it moves is a module, handed over as one, not host data."""
    wanted = set(names) - _called_or_walked(function)
    if not wanted:
        return frozenset()
    found: set[str] = set()
    seen: set[str] = set()
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        node_type = type(node)
        if node_type in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        targets = _assigned_targets(node)
        for target in targets:
            for name in target_names(target) & wanted - seen:
                seen.add(name)
                if (
                    node_type is cst.Assign
                    and len(targets) == 1
                    and _moves_to_device(_bound_to(target, node.value, name), name)  # type: ignore[attr-defined]
                ):
                    found.add(name)
        # Children in source order; the value of an assignment before its targets' use
        # after it is the same statement, so the order within one node does not matter.
        stack.extend(reversed(code_children(node)))
    return frozenset(found)


def moved_next(function: cst.FunctionDef, binding: cst.CSTNode, name: str) -> bool:
    """Whether the binding of `name` the function makes next after `binding` (an
    assignment or a `for`, in source order, in its own body) rebinds it to its move onto
    the device (`batch = next(data_iter)`, then `batch = {k: v.to(self.device) for k, v in
    batch.items()}`; `for x in loader:` then `x = x.to(device)`): what `binding` gives it
    is on the host until then (a loader's batch: the code moves it itself), and so is what
    is read from it before the move (`batch["input_ids"].ne(pad).sum().item()`, counted
    on the CPU). Not a name the function calls or walks as a module (a model moved), nor
    a move in a loop that `binding` is outside of (`for _ in range(retries): offsets =
    offsets.to(device)`: after it the name may still hold the host value, or the moved
    one)."""
    if name in _called_or_walked(function):
        return False
    later = _next_bindings(function).get((id(binding), name))
    if not (
        later is not None
        and type(later) is cst.Assign
        and len(later.targets) == 1
        and type(later.targets[0].target) is cst.Name
        and _moves_to_device(later.value, name)
    ):
        return False
    # A `for` binding its target runs inside its own loop.
    around = _loops_around(function, binding) | (
        {id(binding)} if type(binding) is cst.For else set()
    )
    return _loops_around(function, later) <= around


def _loops_around(function: cst.FunctionDef, node: cst.CSTNode) -> set[int]:
    """The ids of the loops of `function`'s own body around `node`."""
    path: list[cst.CSTNode] = []

    def find(current: cst.CSTNode) -> bool:
        if current is node:
            return True
        if type(current) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        path.append(current)
        if any(find(child) for child in code_children(current)):
            return True
        path.pop()
        return False

    find(function.body)
    return {id(n) for n in path if type(n) in (cst.For, cst.While)}


@lint_memo.memo(16)
def _next_bindings(function: cst.FunctionDef) -> dict[tuple[int, str], cst.CSTNode]:
    """For each binding node of the function's own body and each name it binds, the node
    that binds that name next, in source order."""
    last: dict[str, cst.CSTNode] = {}
    found: dict[tuple[int, str], cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        node_type = type(node)
        if node_type in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        for target in _assigned_targets(node):
            for bound in target_names(target):
                before = last.get(bound)
                if before is not None:
                    found[(id(before), bound)] = node
                last[bound] = node
        stack.extend(reversed(code_children(node)))
    return found


# Methods a module has and a tensor lacks (`tensor_members.MODULE_MEMBERS` less the
# tensor's): calling one on a name shows it holds a module.
_MODULE_ONLY = frozenset(
    {"eval", "train", "parameters", "named_parameters", "buffers", "named_buffers",
     "modules", "named_modules", "children", "named_children", "state_dict",
     "load_state_dict", "zero_grad"}
)  # fmt: skip


def _called_or_walked(function: cst.FunctionDef) -> frozenset[str]:
    """The names `function` calls (`model(batch)`) or calls a module-only method on
    (`model.eval()`), in its own body: callables and modules, never tensors."""
    found: set[str] = set()
    for node in descendants(function.body):
        if type(node) is not cst.Call:
            continue
        func = node.func
        if type(func) is cst.Name:
            found.add(func.value)
        elif (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.attr.value in _MODULE_ONLY
        ):
            found.add(func.value.value)
    return frozenset(found)


def moved_here(function: cst.FunctionDef, node: cst.CSTNode, value: cst.BaseExpression) -> bool:
    """Whether `value`, read at `node`, is what `function` itself just moved onto the
    device: a move written there (`lens.to(self.device).tolist()`), or a name whose last
    binding before `node` is one (`seqlens = seqlens.to(self.device_name)`, `ids =
    batch["ids"].cuda()`), through methods that keep the value (`.detach()`). Whatever
    the value was before (a loader's host batch, a helper's parameter), after the move
    it is on the device, and a copy of it back to the host is a round trip."""
    while (
        type(value) is cst.Call
        and type(value.func) is cst.Attribute
        and value.func.attr.value in _SAME_VALUE
        and not value.args
    ):
        value = value.func.value
    if type(value) is cst.Name:
        bound = value_before(function, node, value.value)
        if bound is None:
            return False
        value = bound
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value in ("to", "cuda"):
        return _moves_to_device(value, "")  # `batch["ids"].cuda()`: any receiver
    first = value.args[0].value if value.args else None
    return type(first) is cst.Name and _moves_to_device(value, first.value)


# Methods that hand back the value they are called on, on its device.
_SAME_VALUE = frozenset({"detach", "clone", "contiguous", "float", "long", "int", "double"})


def _bound_to(
    target: cst.BaseExpression, value: cst.BaseExpression, name: str
) -> cst.BaseExpression | None:
    """What `target = value` binds `name` to: the value of `name = value`, or the element
    at its position where both sides are tuples of one length (`input_ids, mask =
    input_ids.to(self.device), mask.to(self.device)`: colbert's moves in one statement)."""
    if type(target) is cst.Name:
        return value if target.value == name else None
    return unpacked_value([target], value, name)


def _moves_to_device(value: cst.BaseExpression | None, name: str) -> bool:
    """`name.to(device)` (not to the host, nor a dtype by keyword), `name.cuda()`,
    `<...>to_device(name, ...)`, or each entry of a dict moved (`{k: v.to(device) for k, v
    in name.items()}`)."""
    if type(value) is cst.DictComp and name:
        return _moves_entries(value, name)
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and (
        (type(func.value) is cst.Name and func.value.value == name) or not name
    ):
        method = func.attr.value
        if method == "cuda":
            return True
        if method != "to" or not value.args:
            return False
        first = value.args[0]
        if first.keyword is not None and first.keyword.value != "device":
            return False
        target = first.value
        if type(target) is cst.SimpleString:
            return target.evaluated_value not in ("cpu",) and "cpu" not in str(
                target.evaluated_value
            )
        spelled = get_full_name_for_node(target) or ""
        return "device" in spelled.rsplit(".", 1)[-1].lower()
    spelled = get_full_name_for_node(func) or ""
    return (
        _TO_DEVICE_CALL.search(spelled.rsplit(".", 1)[-1]) is not None
        and bool(value.args)
        and value.args[0].keyword is None
        and type(value.args[0].value) is cst.Name
        and value.args[0].value.value == name
        and not any(_names_cpu(arg.value) for arg in value.args[1:])
    )


def _names_cpu(value: cst.BaseExpression) -> bool:
    """`"cpu"`, `torch.device("cpu")`: the host, where a `to_device` helper moves nothing
    onto an accelerator (`move_data_to_device(inputs, torch.device("cpu"))`)."""
    if type(value) is cst.Call and value.args:
        value = value.args[0].value
    return type(value) is cst.SimpleString and "cpu" in str(value.evaluated_value)


def _moves_entries(value: cst.DictComp, name: str) -> bool:
    """`{k: v.to(device) for k, v in name.items()}`: every value of the dict `name`
    moved onto the device, under its own key."""
    clause = value.for_in
    iterable = clause.iter
    if (
        clause.inner_for_in is not None
        or clause.ifs
        or type(iterable) is not cst.Call
        or type(iterable.func) is not cst.Attribute
        or iterable.func.attr.value != "items"
        or type(iterable.func.value) is not cst.Name
        or iterable.func.value.value != name
        or type(clause.target) is not cst.Tuple
        or len(clause.target.elements) != 2
    ):
        return False
    entry = clause.target.elements[1].value
    return type(entry) is cst.Name and _moves_to_device(value.value, entry.value)


def _assigned_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The targets a node binds names through: an assignment's (each of `a = b = ...`), an
    augmented, annotated or walrus assignment's, a `for` loop's, and an `as` clause's."""
    node_type = type(node)
    if node_type is cst.Assign:
        return [t.target for t in node.targets]  # type: ignore[attr-defined]
    if node_type in (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For):
        return [node.target]  # type: ignore[attr-defined]
    if node_type is cst.AsName:
        return [node.name]  # type: ignore[attr-defined]
    return []
