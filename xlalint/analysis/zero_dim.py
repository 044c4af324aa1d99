"""Is this index a 0-dim integer tensor?

`x[i]` with `i = torch.argmax(scores)` looks like advanced indexing, which stays on the
device, but PyTorch indexes with a 0-dim integer tensor as with a Python int: it reads the
value with `.item()` (a `select`), so on XLA each such index runs the pending graph and
copies the value back. Measured by hand on the XLA CPU device (torch_xla 2.9): `x[i]` and
`x[:, (i % 8).long()]` with `i = torch.argmax(j)` cost 16 executions and 10 device-to-host
transfers over 5 steps, against 5 executions and none with a 1-element 1-dim index
(`i.reshape(1)`). The shapes known here are few and certain: `argmax`/`argmin` without a
dim, `.long()`/`.int()` of a 0-dim value, integer arithmetic of one with numbers, and a
local name every plain assignment of which is one of these.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from xlalint.analysis.guards import local_values
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.masks import ZERO_DIM_REDUCTIONS
from xlalint.analysis.tensors import Kind, TensorKinds

_INDEX_REDUCTIONS = frozenset({"argmax", "argmin"})
_TO_INTEGER = frozenset({"long", "int"})
_INTEGER_OPERATORS = (cst.Modulo, cst.FloorDivide, cst.Add, cst.Subtract, cst.Multiply)
_DEPTH = 4
_Test = Callable[[cst.BaseExpression, int], bool]


class ZeroDimIndexes:
    """Answers `is_integer(node)` for the function being walked."""

    def __init__(
        self, kinds: TensorKinds, imports: ImportTable, function: cst.FunctionDef | None
    ) -> None:
        self._kinds = kinds
        self._imports = imports
        self._function = function

    def is_integer(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A 0-dim integer tensor: what indexing reads as a Python int."""
        if depth > _DEPTH:
            return False
        if isinstance(node, cst.Name):
            return self._name(node.value, depth, self.is_integer)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _INTEGER_OPERATORS):
            return self._with_number(node, depth, self.is_integer)
        if not isinstance(node, cst.Call):
            return False
        if self._reduction(node, _INDEX_REDUCTIONS):
            return True
        func = node.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value in _TO_INTEGER
            and not node.args
            and self.is_zero_dim(func.value, depth + 1)
        )

    def is_zero_dim(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A 0-dim tensor of any dtype: an integer one, a reduction of a whole tensor
        (`t.sum()`, `torch.max(t)`), or arithmetic of one with numbers."""
        if depth > _DEPTH:
            return False
        if self.is_integer(node, depth):
            return True
        if isinstance(node, cst.Name):
            return self._name(node.value, depth, self.is_zero_dim)
        if isinstance(node, cst.BinaryOperation):
            return self._with_number(node, depth, self.is_zero_dim)
        return isinstance(node, cst.Call) and self._reduction(node, ZERO_DIM_REDUCTIONS)

    def _reduction(self, call: cst.Call, names: frozenset[str]) -> bool:
        """`t.argmax()` or `torch.argmax(t)` on a tensor, over every element (no `dim`)."""
        func = call.func
        qualified = self._imports.resolve(func)
        if qualified is not None:
            name = qualified.rsplit(".", 1)[-1]
            if not (qualified.startswith("torch.") and name in names):
                return False
            args = call.args
            return (
                len(args) == 1
                and args[0].keyword is None
                and self._kinds.of(args[0].value) is Kind.TENSOR
            )
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value in names
            and not call.args
            and self._kinds.of(func.value) is Kind.TENSOR
        )

    def _with_number(self, node: cst.BinaryOperation, depth: int, test: _Test) -> bool:
        """`i % n`, `i + 1`: a 0-dim value with a Python number keeps its rank."""
        left, right = node.left, node.right
        if test(left, depth + 1):
            return self._kinds.of(right) is Kind.HOST
        return test(right, depth + 1) and self._kinds.of(left) is Kind.HOST

    def _name(self, name: str, depth: int, test: _Test) -> bool:
        """A local name whose every plain assignment in the function is such a value."""
        if self._function is None:
            return False
        values = local_values(self._function, name)
        return bool(values) and all(test(value, depth + 1) for value in values)
