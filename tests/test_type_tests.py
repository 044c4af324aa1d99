"""What a type test or a range check says of a name (`analysis/type_tests.py`)."""

from __future__ import annotations

import libcst as cst
import pytest

from xlalint.analysis.imports import ImportTable
from xlalint.analysis.type_tests import host_names, range_checked


def _names(test: str, holds: bool) -> list[str]:
    module = cst.parse_module("import numbers\nimport numpy as np\nimport torch\n")
    imports = ImportTable()
    imports.add_top_level(module)
    return host_names(cst.parse_expression(test), holds, imports)


@pytest.mark.parametrize(
    ("test", "holds", "names"),
    [
        ("isinstance(step, int)", True, ["step"]),
        ("isinstance(step, int)", False, []),
        ("isinstance(step, (int, float))", True, ["step"]),
        ("isinstance(step, int | numbers.Integral)", True, ["step"]),
        ("isinstance(x, np.ndarray)", True, ["x"]),
        ("type(step) is int", True, ["step"]),
        ("type(step) == int", True, ["step"]),
        ("type(step) in (int, float)", True, ["step"]),
        ("type(step) is not int", False, ["step"]),
        ("type(step) is not int", True, []),
        ("not isinstance(step, int)", False, ["step"]),
        ("isinstance(a, int) and isinstance(b, float)", True, ["a", "b"]),
        ("isinstance(a, int) or isinstance(b, float)", True, []),
        ("isinstance(a, int) or isinstance(b, float)", False, []),
        ("not (not isinstance(a, int) or b)", True, ["a"]),
        ("not (isinstance(a, int) or b)", True, []),
        ("all(isinstance(s, str) for s in keys)", True, ["keys"]),
        ("all(isinstance(s, str) for s in keys)", False, []),
        # Predicates true only of host values: a scipy sparse matrix, a scalar.
        ("sparse.issparse(X)", True, ["X"]),
        ("scipy.sparse.issparse(X)", False, []),
        ("np.isscalar(x)", True, ["x"]),
        ("issparse(X.data)", True, []),
        ("is_sparse(X)", True, []),
        # Containers may hold tensors; a failed tensor test says nothing either.
        ("isinstance(losses, tuple)", True, []),
        ("isinstance(losses, (list, tuple))", True, []),
        ("isinstance(v, torch.Tensor)", False, []),
        ("isinstance(v, (int, torch.Tensor))", True, []),
        ("isinstance(self.step, int)", True, []),
    ],
)
def test_host_names(test: str, holds: bool, names: list[str]) -> None:
    assert _names(test, holds) == names


@pytest.mark.parametrize(
    ("test", "names"),
    [
        ("1 <= unet <= self.num_unets", ["unet"]),
        ("0 < i < n", ["i"]),
        ("not (0 <= i < n)", ["i"]),
        ("exists(n) and 1 <= n <= k", ["n"]),
        ("i >= len(self.stages)", ["i"]),
        ("len(xs) > i", ["i"]),
        ("0.0 <= p <= 1.0", []),
        ("a <= i <= b", []),
        ("i == len(xs)", []),
        ("loss > 0", []),
    ],
)
def test_range_checked(test: str, names: list[str]) -> None:
    assert range_checked(cst.parse_expression(test)) == names
