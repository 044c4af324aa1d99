"""Which names a function uses as tensors, and whether it computes on tensors handed to it.

A value another module built (`seq, mask = pattern.build_sequence(codes)`) or a parameter
nobody annotated (`def robust_statistics(x, mask, dim=-1)`) is of unknown kind where it is
used. How the function uses it tells: handed to a torch operation that takes only tensors
(`torch.where(x[..., i] == -1, a, b)`, `torch.nan_to_num(x - mask)`; not a constructor or
`torch.save`, which take any object), or the receiver of a method only tensors have
(`m[None, ...].expand(b, -1, -1)`, `x.masked_fill(m, 0)`), it is a tensor.

`DataParameters.computes_on_data` says whether a function computes on tensors it is
handed: a parameter annotated as a tensor or as a record of tensors (a class of this
module declaring tensor fields: a beam search's `running_hyps: BatchHypothesis`), or
asserted to be a tensor in the body (`assert isinstance(bboxes, torch.Tensor)`), a
parameter it uses as one (or a field of one: `torch.nonzero(assign_result.gt_inds > 0)`),
or a parameter it
hands to a function of this module that does (`std_statistics(x, mask)` calling
`masked_mean(x=x, mask=mask)`). A parameter the body rebinds counts where the body uses it
as a tensor before it rebinds it (`mask = ~torch.isnan(y_true)`, then `y_true =
y_true[mask]`): that use is of the value handed in. Library code of that kind runs once
per call with new data
(`HotCode.is_hot(per_call=True)`). Answers are computed on demand, once per function.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import parameters
from xlalint.analysis.helper_indexes import TENSOR_RESULT_METHODS
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.masks import takes_tensors
from xlalint.analysis.records import Record, annotated_record
from xlalint.analysis.tensors import has_tensor_parameter
from xlalint.analysis.type_tests import class_name
from xlalint.walk import (
    binding_counts,
    bound_names,
    code_children,
    descendants,
    target_names,
    top_level_definitions,
)

# Methods that tensors have and numpy arrays and sequences lack.
TENSOR_METHODS = TENSOR_RESULT_METHODS | {
    "expand", "masked_fill_", "index_copy_", "scatter_", "new_zeros", "new_ones", "new_full",
    "new_empty", "new_tensor",
}  # fmt: skip


# Tensor methods that take an index tensor, by the position of their `index` argument:
# `x.index_select(0, idx - 1)`, `x.gather(1, idx)`, `x.index_add_(0, idx, src)`.
INDEX_METHODS = {
    name: 1
    for name in (
        "index_select", "gather", "index_add", "index_add_", "index_copy", "index_copy_",
        "index_fill", "index_fill_", "scatter_", "scatter_add", "scatter_add_",
        "scatter_reduce", "scatter_reduce_",
    )
}  # fmt: skip


def _index_argument(call: cst.Call, position: int) -> cst.BaseExpression | None:
    """The `index` argument of an index-taking tensor method: by keyword, else the
    positional argument at `position` (the one after `dim`)."""
    positional = []
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == "index":
                return arg.value
        else:
            positional.append(arg.value)
    return positional[position] if len(positional) > position else None


def tensor_uses(function: cst.FunctionDef, imports: ImportTable) -> frozenset[str]:
    """Names `function` uses as tensors: handed (or an element or comparison of them) to a
    torch operation that takes only tensors, or as the index of a tensor method that
    takes an index tensor (`index_select(0, cont_idx - 1)`, `gather(1, idx)`), or the
    receivers, through subscripts, of a method only tensors have."""
    return frozenset(_uses_in(function.body, imports))


def tensor_receivers(function: cst.FunctionDef) -> frozenset[str]:
    """Names `function` calls a method only tensors have on, directly or through one
    tensor-style subscript (`bboxes.new_empty(n, 4)`, `x[:, 0].masked_fill(m, 0)`): the
    narrowest of `tensor_uses`' evidence, which no int handed to a torch operation as a
    count (`torch.topk(x, k)`) gives, nor an element of a list (`cache[i][:, -1]
    .unsqueeze(2)`, `outs[i].unsqueeze(0)`: the list holds tensors, it is none)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef | cst.Lambda):
            continue  # its own receivers, perhaps its own parameters
        stack.extend(code_children(node))
        if type(node) is cst.Call and type(node.func) is cst.Attribute:
            if node.func.attr.value not in TENSOR_METHODS:
                continue
            receiver = node.func.value
            if type(receiver) is cst.Subscript and _tensor_style(receiver):
                receiver = receiver.value
            if type(receiver) is cst.Name:
                found.add(receiver.value)
    return frozenset(found)


def _tensor_style(subscript: cst.Subscript) -> bool:
    """`x[:, 0]`, `x[1:]`, `x[..., None]`: several dimensions or a slice, which a list does
    not take; a single index (`x[i]`) may pick a list's element."""
    if len(subscript.slice) > 1:
        return True
    index = subscript.slice[0].slice
    return type(index) is cst.Slice


def _uses_in(body: cst.CSTNode, imports: ImportTable) -> set[str]:
    """`tensor_uses` of a body. A nested function or lambda counts too, but not for its
    own parameters (`def _mask(rows): torch.where(rows ...)` says nothing of the outer
    `rows`)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef | cst.Lambda):
            own = {p.name.value for p in parameters(node, star=True)}
            found |= _uses_in(node.body, imports) - own
            continue
        stack.extend(code_children(node))
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in INDEX_METHODS:
            index = _index_argument(node, INDEX_METHODS[func.attr.value])
            if index is not None and imports.resolve(func) is None:
                found |= operands(index)
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_METHODS:
            receiver = func.value
            while isinstance(receiver, cst.Subscript):
                receiver = receiver.value
            if isinstance(receiver, cst.Name):
                found.add(receiver.value)
            continue
        qualified = imports.resolve(func) or ""
        if not takes_tensors(qualified):
            continue
        for arg in node.args:
            found |= operands(arg.value)
    return found


def device_bearers(function: cst.FunctionDef) -> frozenset[str]:
    """Names whose `.device` the function reads (`src_tokens.device`): tensors, whatever
    their kind is known as (of the values a function indexes or moves, only a tensor has a
    `.device`)."""
    return frozenset(
        node.value.value
        for node in descendants(function.body)
        if type(node) is cst.Attribute
        and node.attr.value == "device"
        and type(node.value) is cst.Name
    )


def operands(value: cst.BaseExpression) -> set[str]:
    """`x` in `x`, `x[..., i]`, `x[...] == -1`, `-x`, `x * 2`: the names an expression
    computes on directly."""
    if isinstance(value, cst.Name):
        return {value.value}
    if isinstance(value, cst.Subscript):
        return operands(value.value)
    return _through_operators(value, operands)


class DataParameters:
    """Per file: whether each function computes on tensors it is handed."""

    def __init__(
        self, module: cst.Module, imports: ImportTable, records: dict[str, Record]
    ) -> None:
        self.module = module
        self.imports = imports
        self.records = records
        self._known: dict[int, bool] = {}
        self._uses: dict[int, frozenset[str]] = {}
        self._bearers: dict[int, frozenset[str]] = {}

    def uses(self, function: cst.FunctionDef) -> frozenset[str]:
        """`tensor_uses` of `function`, computed once per file for every asker."""
        found = self._uses.get(id(function))
        if found is None:
            found = self._uses[id(function)] = tensor_uses(function, self.imports)
        return found

    def bearers(self, function: cst.FunctionDef) -> frozenset[str]:
        """`device_bearers` of `function`, computed once per file for every asker."""
        found = self._bearers.get(id(function))
        if found is None:
            found = self._bearers[id(function)] = device_bearers(function)
        return found

    def computes_on_data(self, function: cst.CSTNode) -> bool:
        """A parameter annotated as a tensor or a record of tensors, or one (not rebound)
        the function uses as a tensor or hands to a top-level function of this module that
        computes on data (`self` and `cls` are not data)."""
        if not isinstance(function, cst.FunctionDef):
            return False
        known = self._known.get(id(function))
        if known is None:
            self._known[id(function)] = False  # (a recursive call asks again: no)
            known = self._known[id(function)] = self._compute(function)
        return known

    def _compute(self, function: cst.FunctionDef) -> bool:
        if has_tensor_parameter(function) or _asserts_tensor_parameter(function, self.imports):
            return True
        if self.records and any(self._holds_record(p) for p in parameters(function)):
            return True
        # Parameters the body rebinds may hold anything it made (`x = torch.as_tensor(x)`),
        # though not before it rebinds them: a use as a tensor in a leading statement that
        # keeps them as handed is a use of the value handed in (`mask =
        # ~torch.isnan(y_true)`, then `y_true = y_true[mask]`; `_used_before_rebound`).
        params = {p.name.value for p in parameters(function)} - {"self", "cls"}
        rebound = params & bound_names(function)
        if rebound and _used_before_rebound(function, rebound, self.imports):
            return True
        params -= rebound
        if not params:
            return False
        uses = self.uses(function)
        if params & uses:
            return True
        if _fields_used(function, params, uses, self.imports):
            return True
        functions = top_level_definitions(self.module)
        for node in _calls_by_name(function.body):
            callee = functions.get(node.func.value)  # type: ignore[attr-defined]
            if callee is None or callee is function or self.imports.resolve(node.func):
                continue
            if any(params & operands(arg.value) for arg in node.args) and self.computes_on_data(
                callee
            ):
                return True
        return False

    def _holds_record(self, param: cst.Param) -> bool:
        """`running_hyps: BatchHypothesis`: one record whose class declares tensor fields."""
        if param.annotation is None:
            return False
        found = annotated_record(param.annotation.annotation, self.records)
        return found is not None and not found[1] and bool(self.records[found[0]].tensors)


def _used_before_rebound(
    function: cst.FunctionDef, rebound: set[str], imports: ImportTable
) -> bool:
    """One of the `rebound` parameters used as a tensor (`tensor_uses`) in the body's
    leading simple statements before the one that first binds it (`mask =
    ~torch.isnan(y_true)` before `y_true = y_true[mask]`), in a function without a loop of
    its own. Not in the rebinding statement itself, which may be the conversion the
    rebinding is for (`x = torch.as_tensor(x)`, `g = g.unsqueeze(1)` shaping what any
    caller hands), nor in a function that loops: a parameter its loop rebinds is the
    loop's state (a sampler's `x = x + d * dt`), and the code before the loop runs once per
    run of it, not once per batch. The walk stops at the first compound statement (a
    branch may bind it on one path only)."""
    if not isinstance(function.body, cst.IndentedBlock):
        return False
    if any(isinstance(node, cst.For | cst.While) for node in descendants(function.body)):
        return False
    live = set(rebound)
    for statement in function.body.body:
        if not isinstance(statement, cst.SimpleStatementLine) or not live:
            return False
        for small in statement.body:
            bound = _bound_by_statement(small)
            if (live - bound) & _uses_in(small, imports):
                return True
            live -= bound
    return False


def _bound_by_statement(small: cst.BaseSmallStatement) -> set[str]:
    """The names a simple statement binds (`a = ...`, `a, b = ...`, `a += ...`)."""
    if isinstance(small, cst.Assign):
        return {n for t in small.targets for n in target_names(t.target)}
    if isinstance(small, cst.AnnAssign | cst.AugAssign):
        return set(target_names(small.target))
    return set()


def _asserts_tensor_parameter(function: cst.FunctionDef, imports: ImportTable) -> bool:
    """`assert isinstance(bboxes, torch.Tensor)` in the body's own statements, of a
    parameter: the annotation spelled as a check, whatever the body rebinds it to later."""
    params = {p.name.value for p in parameters(function)} - {"self", "cls"}
    if not params or not isinstance(function.body, cst.IndentedBlock):
        return False
    for statement in function.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            test = small.test if isinstance(small, cst.Assert) else None
            if (
                isinstance(test, cst.Call)
                and get_full_name_for_node(test.func) == "isinstance"
                and len(test.args) == 2
                and isinstance(test.args[0].value, cst.Name)
                and test.args[0].value.value in params
                and class_name(test.args[1].value, imports) == "Tensor"
            ):
                return True
    return False


def _fields_used(
    function: cst.FunctionDef, params: set[str], uses: frozenset[str], imports: ImportTable
) -> bool:
    """A field of a parameter used as a tensor: handed to a torch operation that takes only
    tensors (`torch.nonzero(assign_result.gt_inds > 0)`), given a tensor-only method
    (`results.boxes.new_zeros(n)`), or bound once to a local that is (`priors =
    pred_instances.priors`, then `priors.new_full(...)`)."""
    counts = binding_counts(function)
    for node in descendants(function.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Name)
                and target.value in uses
                and counts.get(target.value) == 1
                and _field_root(node.value) in params
            ):
                return True
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_METHODS:
            if _field_root(func.value) in params:
                return True
            continue
        if takes_tensors(imports.resolve(func) or "") and any(
            params & _field_operands(arg.value) for arg in node.args
        ):
            return True
    return False


def _field_root(value: cst.BaseExpression) -> str | None:
    """`p` for `p.a`, `p.a.b`, `p.a[i]`: the name a field is read from (None for `p`)."""
    if isinstance(value, cst.Subscript):
        value = value.value
    if not isinstance(value, cst.Attribute):
        return None
    while isinstance(value, cst.Attribute | cst.Subscript):
        value = value.value
    return value.value if isinstance(value, cst.Name) else None


def _field_operands(value: cst.BaseExpression) -> set[str]:
    """The names whose fields an expression computes on directly (`p` in `p.a > 0`)."""
    if isinstance(value, cst.Attribute | cst.Subscript):
        root = _field_root(value)
        return {root} if root is not None else set()
    return _through_operators(value, _field_operands)


def _through_operators(
    value: cst.BaseExpression, names: Callable[[cst.BaseExpression], set[str]]
) -> set[str]:
    """What `names` finds in the operands of a unary, binary or comparison operator
    (`-x`, `x * 2`, `a < b`), and nothing in any other expression."""
    if isinstance(value, cst.UnaryOperation):
        return names(value.expression)
    if isinstance(value, cst.BinaryOperation):
        return names(value.left) | names(value.right)
    if isinstance(value, cst.Comparison):
        found = names(value.left)
        for target in value.comparisons:
            found |= names(target.comparator)
        return found
    return set()


def _calls_by_name(body: cst.CSTNode) -> list[cst.Call]:
    """Calls of a plain name in `body` (`f(x)`), not in nested functions."""
    found: list[cst.Call] = []
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef | cst.Lambda):
            continue
        stack.extend(code_children(node))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            found.append(node)
    return found


# Torch functions that take only a numpy array: `torch.from_numpy(a)` raises on a tensor.
_FROM_ARRAY = frozenset({"torch.from_numpy"})
# The word each of them ends with: a call resolves to one only through a name or an import
# that spells it (the import table resolves spellings, it computes none).
_FROM_ARRAY_WORD = "from_numpy"


def may_hand_arrays(text: str) -> bool:
    """Whether a function of the file whose text is `text` may hand a value to a torch
    function that takes only a numpy array: where the text never spells its name,
    `arrays_handed_on` finds nothing in any function, and need not walk them."""
    return _FROM_ARRAY_WORD in text


def arrays_handed_on(function: cst.FunctionDef, imports: ImportTable) -> frozenset[int]:
    """The assigned values (by id) whose binding `function` hands next to a torch function
    that takes only a numpy array (`mask = norm_img(mask)`, then `mask[mask < 0.5] = 0`,
    then `mask = torch.from_numpy(mask)`): what the assignment bound is a numpy array, not
    the tensor an opaque call might pass through. Names are followed in source order; a
    rebinding ends the binding (and a later `from_numpy` is of the new one), other uses
    do not, nor does a rebinding to a view or method of the value itself (`x = x[None]`,
    `x = x.astype("float32")`), which an array hands back as an array."""
    found: set[int] = set()
    pending: dict[str, list[int]] = {}  # a name -> the values its last bindings assigned
    seen: set[int] = set()  # calls already met inside an assignment's value

    def met(call: cst.Call) -> None:
        seen.add(id(call))
        if (
            len(call.args) == 1
            and call.args[0].keyword is None
            and not call.args[0].star
            and type(call.args[0].value) is cst.Name
            and imports.resolve(call.func) in _FROM_ARRAY
        ):
            found.update(pending.pop(call.args[0].value.value, ()))  # type: ignore[attr-defined]

    for node in descendants(function.body):
        node_type = type(node)
        if node_type is cst.Call and id(node) not in seen:
            met(node)  # type: ignore[arg-type]
        elif node_type is cst.Assign:
            value = node.value  # type: ignore[attr-defined]
            # The value is read before the targets are bound: its calls first.
            for inner in descendants(value):
                if type(inner) is cst.Call:
                    met(inner)  # type: ignore[arg-type]
            for target in node.targets:  # type: ignore[attr-defined]
                bound = target.target
                if type(bound) is cst.Name and _root_name(value) == bound.value:
                    pending.setdefault(bound.value, []).append(id(value))
                    continue  # `x = x[None]`: the same value, another view of it
                for name in target_names(bound):
                    pending.pop(name, None)
                if type(bound) is cst.Name:
                    pending[bound.value] = [id(value)]
        elif node_type in (cst.AnnAssign, cst.For, cst.CompFor, cst.AsName):
            bound = getattr(node, "target", None) or getattr(node, "name", None)
            if bound is not None:
                for name in target_names(bound):
                    pending.pop(name, None)
    return frozenset(found)


def _root_name(node: cst.BaseExpression) -> str | None:
    """`x` of `x[None]`, `x.astype("f")`, `x.reshape(1, -1)[0]`: the name a chain of
    subscripts and method calls starts from."""
    while True:
        if type(node) is cst.Subscript:
            node = node.value  # type: ignore[attr-defined]
        elif type(node) is cst.Call and type(node.func) is cst.Attribute:  # type: ignore[attr-defined]
            node = node.func.value  # type: ignore[attr-defined]
        elif type(node) is cst.Attribute:
            node = node.value  # type: ignore[attr-defined]
        else:
            return node.value if type(node) is cst.Name else None  # type: ignore[attr-defined]
