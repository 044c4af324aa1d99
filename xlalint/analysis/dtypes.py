"""Is a dtype reference a choice, or a check?

`x.to(torch.float16)`, `dtype = torch.float16` and `autocast(dtype=torch.float16)` choose
float16; `x.dtype == torch.float16`, `dtype in (torch.float16, torch.bfloat16)` and a
`{"fp16": torch.float16, ...}` lookup table only name it, and `packed.view(torch.float16)`
reads existing bits as float16. Precision rules report choices.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.guards import path_conditions
from xlalint.analysis.imports import ImportTable

if TYPE_CHECKING:
    from xlalint.analysis.hotness import FunctionKey

FLOAT16 = frozenset({"torch.float16", "torch.half"})

# Calls that ask about a dtype rather than use it.
_QUERY_CALLS = frozenset(
    {
        "torch.finfo", "torch.iinfo", "isinstance", "issubclass", "print", "str", "repr",
        "hash", "id", "type",
    }
)  # fmt: skip


# Methods and functions whose dtype says how to read existing bytes, not what precision to
# compute in: `packed.view(torch.float16)` decodes float16 data; bfloat16 would corrupt it.
_REINTERPRETING = frozenset({"view", "frombuffer", "from_file", "untyped_storage"})


def _reinterprets(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else get_full_name_for_node(func)
    return name in _REINTERPRETING


def is_dtype_choice(
    node: cst.BaseExpression, ancestors: Iterable[cst.CSTNode], imports: ImportTable
) -> bool:
    """Whether a dtype reference is chosen: passed as an argument, assigned, used as a
    parameter default, returned, or stored under a `"...dtype"` key. Ternary branches and
    `or`/`and` operands take the position of the whole expression.

    `ancestors` are `node`'s ancestors, innermost first."""
    chain = iter(ancestors)
    child: cst.CSTNode = node
    parent = next(chain, None)
    while isinstance(parent, cst.IfExp | cst.BooleanOperation):
        if isinstance(parent, cst.IfExp) and child is parent.test:
            return False
        child, parent = parent, next(chain, None)
    if isinstance(parent, cst.Arg):
        if parent.value is not child:
            return False
        call = next(chain, None)
        if not isinstance(call, cst.Call):
            return False
        if _reinterprets(call):
            return False
        callee = imports.resolve(call.func) or get_full_name_for_node(call.func)
        return callee not in _QUERY_CALLS
    if isinstance(parent, cst.Assign | cst.AnnAssign | cst.Return):
        return parent.value is child
    if isinstance(parent, cst.Param):
        return parent.default is child
    if isinstance(parent, cst.DictElement) and parent.value is child:
        key = parent.key
        return (
            isinstance(key, cst.SimpleString)
            and isinstance(key.evaluated_value, str)
            and "dtype" in key.evaluated_value
        )
    return False


def keeps_float16(path: Iterable[cst.CSTNode], imports: ImportTable) -> bool:
    """Whether the code on `path` (a node and its ancestors, innermost first) runs only
    where a value already is float16: under `if attn_weights.dtype == torch.float16:`, where
    `.to(torch.float16)` restores the dtype after a float32 softmax. Float16 was chosen
    where that value was made, and on a TPU in bfloat16 the branch is not taken."""
    return any(holds and _tests_float16(test, imports) for test, holds in path_conditions(path))


def _tests_float16(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """`x.dtype == torch.float16`, `dtype is torch.half`, or one of them in an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_float16(test.left, imports) or _tests_float16(test.right, imports)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal | cst.Is):
        return False
    sides = (test.left, comparison.comparator)
    return any(imports.resolve(side) in FLOAT16 for side in sides) and any(
        "dtype" in (get_full_name_for_node(side) or "").rsplit(".", 1)[-1] for side in sides
    )


# `is_torch_fp16_available_on_device`, `supports_half`, `can_use_float16`.
_FLOAT16_PROBE = re.compile(r"^(is|has|supports?|can)_\w*(fp16|float16|half)", re.IGNORECASE)


def in_float16_probe(function: FunctionKey | None) -> bool:
    """Whether code runs in a function that asks whether float16 works
    (`is_torch_fp16_available_on_device`): it tries float16 to answer, and its caller
    decides what to use."""
    return function is not None and _FLOAT16_PROBE.match(function.name) is not None
