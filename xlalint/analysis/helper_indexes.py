"""Tensors that a same-module helper indexes with one of its parameters.

A loop that hands its Python int to a helper (`data, targets = get_batch(source, i)`, the
helper slicing `source[i : i + seq_len]`) costs what indexing in the loop costs: the helper
runs inside the pass, and the int is a constant of the pass's graph, so every value compiles
a graph of its own (word_lm_cuda in benchmarks/PORTS.md: 6 compiles in 4 steps). Whether it
does depends on both ends: the helper's subscript must take its bound from the parameter as
a Python int, and the caller must pass a loop-varying int (not a constant, not a tensor)
and, where the indexed value is a parameter too, a tensor (not a list).

`HelperIndexes` records the helper's side during the engine's single walk: for each
function, the subscripts whose bounds are int expressions of its parameters (or of locals
computed from them: `j = i + 1`). The caller's side is XLA207's; `bind_arguments` maps a
call's arguments to the helper's parameters (`arguments.bind`) once the whole file has been
walked (a helper may be defined after the loop that calls it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from xlalint.analysis.arguments import bind, passed_names, signature_of
from xlalint.analysis.hotness import FunctionKey
from xlalint.analysis.value_names import value_names
from xlalint.walk import target_names

# Methods of tensors that Python sequences and numpy arrays do not have (numpy's `view`
# takes a dtype, not a shape; its `size` is an attribute).
TENSOR_ONLY_METHODS = frozenset(
    {
        "view", "to", "cuda", "contiguous", "detach", "narrow", "unsqueeze", "squeeze",
        "size", "permute", "masked_fill", "index_select", "long", "float", "half", "bfloat16",
        "gather", "scatter", "masked_select",
    }
)  # fmt: skip


# Tensor methods whose result is a tensor and that Python sequences and numpy arrays lack
# (numpy has `squeeze`, `view`, `copy`; not these).
TENSOR_RESULT_METHODS = frozenset(
    {"index_select", "narrow", "unsqueeze", "permute", "contiguous", "masked_fill", "detach",
     "clone"}
)  # fmt: skip


# Methods that, called on a tensor, return a tensor (`.to(device)`, a cast); on another
# object they may return anything, so they only carry what their receiver is.
_KEEPS_TENSOR = frozenset({"to", "cuda", "float", "long", "half", "bfloat16", "double", "int"})


@dataclass(frozen=True)
class HelperIndex:
    """A subscript of a helper whose bound is a Python int computed from its parameters."""

    subscript: cst.Subscript
    bound: cst.BaseExpression  # the first bound that reads a parameter
    params: frozenset[str]  # the parameters the bounds are computed from
    # The parameter being indexed, where whether it is a tensor is up to the caller; None
    # where the helper itself knows the indexed value is a tensor (`self.pe[:, i]`).
    base: str | None
    statement: cst.CSTNode | None = None  # the innermost statement holding the subscript


@dataclass
class Helper:
    """A function of this module, and the tensor subscripts it takes with its parameters."""

    node: cst.FunctionDef
    is_method: bool  # a method: its first parameter is `self`, not an argument of `self.f()`
    indexes: list[HelperIndex] = field(default_factory=list)
    # Parameters the helper uses as tensors (`source[a:b].view(-1)`, `x.unsqueeze(0)`): where
    # the caller's argument is of unknown kind (a module global made by another helper).
    tensor_params: set[str] = field(default_factory=set)


@dataclass
class _Scope:
    helper: Helper
    params: frozenset[str]
    # Locals computed as ints from parameters: name -> the parameters it reads.
    derived: dict[str, frozenset[str]] = field(default_factory=dict)
    # Locals holding what a tensor-only method returned (`rows = x.index_select(0, idx)`).
    tensors: set[str] = field(default_factory=set)


class HelperIndexes:
    """Functions of the module, by key, and the subscripts they take with their parameters."""

    def __init__(self) -> None:
        self.helpers: dict[FunctionKey, Helper] = {}
        self._scopes: list[_Scope] = []

    def push_function(self, node: cst.FunctionDef, key: FunctionKey | None) -> None:
        is_method = key is not None and key.class_name is not None
        helper = Helper(node, is_method)
        if key is not None:
            self.helpers.setdefault(key, helper)  # the first definition of a name wins
        names = passed_names(node, is_method)
        self._scopes.append(_Scope(helper, frozenset(names)))

    def pop_function(self) -> None:
        if self._scopes:
            self._scopes.pop()

    def bind(
        self, targets: list[cst.BaseExpression], value: cst.BaseExpression, is_int: bool
    ) -> None:
        """`targets = value`: a name holding an int computed from parameters carries them."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        read = self.params_in(value) if is_int else frozenset()
        tensor = self.holds_tensor(value)
        for target in targets:
            for name in target_names(target):
                if read and isinstance(target, cst.Name):
                    scope.derived[name] = read
                else:
                    scope.derived.pop(name, None)
                if tensor and isinstance(target, cst.Name):
                    scope.tensors.add(name)
                else:
                    scope.tensors.discard(name)

    def mark_tensor(self, target: cst.BaseExpression) -> None:
        """`input_ids: Tensor = batch["input_ids"]`: a local annotated as a tensor."""
        if self._scopes and isinstance(target, cst.Name):
            self._scopes[-1].tensors.add(target.value)

    def holds_tensor(self, value: cst.BaseExpression) -> bool:
        """`value` is a tensor by what made it, whatever its inputs are: a method only
        tensors have (`x.index_select(0, idx)`, `x.narrow(...)`, possibly sliced, moved or
        cast: `x.clone().detach().to(device)`), or a local bound to one. Sequences and
        numpy arrays have none of these methods."""
        while True:
            if type(value) is cst.Subscript:
                value = value.value
            elif (
                type(value) is cst.Call
                and type(value.func) is cst.Attribute
                and value.func.attr.value in _KEEPS_TENSOR
            ):
                value = value.func.value  # `x.detach().to(device)`: still a tensor
            else:
                break
        if type(value) is cst.Name:
            return bool(self._scopes) and value.value in self._scopes[-1].tensors
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in TENSOR_RESULT_METHODS
        )

    def params_in(self, expr: cst.BaseExpression) -> frozenset[str]:
        """The parameters of the function being walked that `expr` reads, directly or
        through locals computed from them."""
        if not self._scopes:
            return frozenset()
        scope = self._scopes[-1]
        found: set[str] = set()
        for name in value_names(expr):
            if name in scope.derived:
                found |= scope.derived[name]
            elif name in scope.params:
                found.add(name)
        return frozenset(found)

    def base_param(self, base: cst.BaseExpression) -> str | None:
        """The parameter that `base` is, if it is one (and not rebound)."""
        if not self._scopes or not isinstance(base, cst.Name):
            return None
        scope = self._scopes[-1]
        name = base.value
        return name if name in scope.params and name not in scope.derived else None

    def note(self, index: HelperIndex) -> None:
        if self._scopes:
            self._scopes[-1].helper.indexes.append(index)

    def note_method_call(self, call: cst.Call) -> None:
        """`p.view(...)`, `p[a:b].view(...)`: a method only tensors have, on a parameter."""
        func = call.func
        if not self._scopes or not isinstance(func, cst.Attribute):
            return
        if func.attr.value not in TENSOR_ONLY_METHODS:
            return
        receiver = func.value
        while isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        name = self.base_param(receiver)
        if name is not None:
            self._scopes[-1].helper.tensor_params.add(name)

    @property
    def in_function(self) -> bool:
        return bool(self._scopes)


def bind_arguments(helper: Helper, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """The call's argument for each parameter of the helper it passes (see
    `arguments.bind`)."""
    return bind(call, signature_of(helper.node, helper.is_method))
