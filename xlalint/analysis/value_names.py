"""The names whose value flows into an expression.

Following a value (a loop's int into the bound of a slice, a parameter of a helper into
what the helper computes) means asking which names an expression reads. Attribute names,
keywords and lambda bodies are not read where the expression runs, and shape reads
(`x.shape`, `x.size(0)`, `len(x)`) are the same on every pass unless the shapes change (and
then the step compiles again whatever else happens): none of them carry the value. One
collector serves XLA207's loop values and the helpers they reach.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from xlalint.analysis.tensors import HOST_ATTRIBUTES, HOST_METHODS
from xlalint.walk import children

# Calls that read only a shape.
SHAPE_CALLS = frozenset({"len"})


def value_names(expr: cst.CSTNode) -> Iterator[str]:
    """Names whose value flows into `expr`: not attribute names, keywords, lambda bodies or
    shape reads (`x.shape`, `x.size(0)`, `len(x)`)."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name:
            yield node.value
        elif type(node) is cst.Attribute:
            if node.attr.value not in HOST_ATTRIBUTES:
                stack.append(node.value)
        elif type(node) is cst.Call:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in HOST_METHODS:
                continue
            if isinstance(func, cst.Name) and func.value in SHAPE_CALLS:
                continue
            stack.append(func)
            stack.extend(arg.value for arg in node.args)
        elif type(node) is cst.Arg:
            stack.append(node.value)
        elif type(node) is not cst.Lambda:
            stack.extend(children(node))
