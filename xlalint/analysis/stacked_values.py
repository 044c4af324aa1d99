"""Names a function puts into the tensors it concatenates or stacks.

`torch.cat(xs)` and `torch.stack(xs)` take only tensors, so what a function puts into `xs`
(`xs = [t]`, `xs.append(t.reshape(shape))`) is a tensor, even where nothing else in the
file says so: an adaptive solver's time `t = t_span[:1]`, sliced from a parameter of unknown
kind and collected into `eval_times` for `torch.cat(eval_times)`. XLA103 takes its
comparisons in the function's tests (`while t < T:`) for device reads.

A name counts through methods that keep a tensor a tensor (`t.reshape(...)`,
`t.detach()`); not through subscripts (`xs[0]` of a list), arithmetic or calls of other
functions (`f(t)` may return anything). Lists filled in a nested function do not count
(the nested function's names are its own). Computed once per function, on demand.
"""

from __future__ import annotations

import libcst as cst

from xlalint.analysis.imports import ImportTable
from xlalint.walk import code_children

# torch functions whose first argument is a sequence of tensors.
_JOINS = frozenset(
    {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack",
     "torch.vstack", "torch.dstack", "torch.column_stack", "torch.row_stack"}
)  # fmt: skip
# Tensor methods whose result is a tensor of the receiver's kind.
_KEEPING = frozenset(
    {"reshape", "view", "clone", "detach", "unsqueeze", "squeeze", "contiguous", "flatten",
     "expand", "to", "float", "double", "half", "long", "int", "bool"}
)  # fmt: skip
_FILLS = frozenset({"append", "insert"})


def stacked_names(function: cst.FunctionDef, imports: ImportTable) -> frozenset[str]:
    """The names `function` puts into a list it hands to a torch join (`torch.cat`,
    `torch.stack`, ...), directly or through tensor-keeping methods and subscripts."""
    joined: set[str] = set()
    filled: dict[str, set[str]] = {}  # list name -> names put into it
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            continue
        stack.extend(code_children(node))
        if type(node) is cst.Assign:
            for target in node.targets:
                for name, value in _pairs(target.target, node.value):
                    if isinstance(value, cst.List | cst.Tuple):
                        names = filled.setdefault(name, set())
                        for element in value.elements:
                            names |= _tensor_base(element.value)
        elif type(node) is cst.Call:
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _FILLS
                and isinstance(func.value, cst.Name)
                and node.args
            ):
                put = node.args[-1].value
                filled.setdefault(func.value.value, set()).update(_tensor_base(put))
            elif imports.resolve(func) in _JOINS and node.args:
                first = node.args[0].value
                if isinstance(first, cst.Name) and node.args[0].keyword is None:
                    joined.add(first.value)
    found: set[str] = set()
    for name in joined:
        found |= filled.get(name, set())
    return frozenset(found)


def _pairs(
    target: cst.BaseExpression, value: cst.BaseExpression
) -> list[tuple[str, cst.BaseExpression]]:
    """`xs = [t]` and `ts, xs = [t], [x]`: each name with the value it is bound to."""
    if isinstance(target, cst.Name):
        return [(target.value, value)]
    if (
        isinstance(target, cst.Tuple | cst.List)
        and isinstance(value, cst.Tuple | cst.List)
        and len(target.elements) == len(value.elements)
        and not any(isinstance(e, cst.StarredElement) for e in target.elements)
    ):
        return [
            (t.value.value, v.value)
            for t, v in zip(target.elements, value.elements, strict=True)
            if isinstance(t.value, cst.Name)
        ]
    return []


def _tensor_base(value: cst.BaseExpression) -> set[str]:
    """`t` in `t`, `t.reshape(s)`, `t.detach().clone()`: the name whose kind the value
    has. Not through subscripts: `xs[0]` of a list of tensors is a tensor, `xs` is not."""
    while True:
        if isinstance(value, cst.Name):
            return {value.value}
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in _KEEPING
        ):
            value = value.func.value
        else:
            return set()
