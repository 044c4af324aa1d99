"""Loaders over indices: a `DataLoader` whose dataset hands out positions yields host
tensors.

A plain `DataLoader` collates what its dataset's items are; when those are indices (a
`range`, `torch.arange(n)` or `np.arange(n)` built on the host, or a dataset class whose
`__getitem__` hands back the index it is given, `return idx`), each batch is a CPU integer
tensor of positions (cebra's batched transform: `for batch_idx, index_batch in
enumerate(index_dataloader)`, then `if index_batch[-1] + 1 != len(inputs):`). Such a batch
is a host tensor until the loop moves it (`idx = idx.to(device)` binds a device tensor
again); tests of it read no device. A `collate_fn` may build anything, so a loader with
one is not judged; nor is a dataset of any other kind (its items may be device tensors).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from xlalint import lint_memo
from xlalint.analysis.arguments import parameters, positional_params
from xlalint.analysis.guards import local_values, module_values
from xlalint.analysis.imports import ImportTable
from xlalint.walk import descendants

# What a loader's dataset may be built by, handing out positions.
_INDEX_RANGES = frozenset({"torch.arange", "numpy.arange"})


def loads_indices(
    iterable: cst.BaseExpression,
    function: cst.FunctionDef | None,
    module: cst.Module | None,
    imports: ImportTable,
    is_host: Callable[[cst.BaseExpression], bool],
) -> bool:
    """`iterable` (a loop's, as written or through the one name it is bound to) is a plain
    `DataLoader` over indices, without a `collate_fn`; `is_host`: the value is built on the
    host (`torch.arange(n)` without a device)."""
    loader = _bound_value(iterable, function, module)
    if type(loader) is not cst.Call:
        return False
    qualified = imports.resolve(loader.func) or ""
    if not (qualified.startswith("torch.utils.data") and qualified.endswith("DataLoader")):
        return False
    dataset: cst.BaseExpression | None = None
    for position, arg in enumerate(loader.args):
        if arg.star:
            return False
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword == "collate_fn":
            return False
        if (keyword is None and position == 0) or keyword == "dataset":
            dataset = arg.value
    if dataset is None:
        return False
    dataset = _bound_value(dataset, function, module)
    return dataset is not None and _indices(dataset, function, module, imports, is_host)


def _bound_value(
    node: cst.BaseExpression, function: cst.FunctionDef | None, module: cst.Module | None
) -> cst.BaseExpression | None:
    """`node`, or the one value the name `node` is bound to in its function (or module)."""
    if type(node) is not cst.Name:
        return node
    values: list[cst.BaseExpression] = []
    if function is not None:
        values = local_values(function, node.value)
    if not values and module is not None:
        values = module_values(module, node.value)
    return values[0] if len(values) == 1 else None


def _indices(
    dataset: cst.BaseExpression,
    function: cst.FunctionDef | None,
    module: cst.Module | None,
    imports: ImportTable,
    is_host: Callable[[cst.BaseExpression], bool],
) -> bool:
    if type(dataset) is not cst.Call:
        return False
    func = dataset.func
    if type(func) is cst.Name and func.value == "list" and len(dataset.args) == 1:
        return _indices(dataset.args[0].value, function, module, imports, is_host)
    if type(func) is cst.Name and func.value == "range" and imports.resolve(func) is None:
        return _unbound(func.value, function, module)
    if imports.resolve(func) in _INDEX_RANGES:
        return is_host(dataset)  # `torch.arange(n)` without a device
    if type(func) is cst.Name and module is not None:
        cls = _classes(module).get(func.value)
        return cls is not None and _hands_out_its_index(cls)
    return False


def _unbound(name: str, function: cst.FunctionDef | None, module: cst.Module | None) -> bool:
    """The builtin `name`: no local or module binding shadows it."""
    if function is not None and local_values(function, name):
        return False
    return module is None or not module_values(module, name)


@lint_memo.memo(8)
def _classes(module: cst.Module) -> dict[str, cst.ClassDef]:
    """The module's classes by name, also those defined in functions (a dataset class a
    transform defines for its loader); a name defined twice is left out."""
    found: dict[str, cst.ClassDef | None] = {}
    for node in descendants(module):
        if type(node) is cst.ClassDef:
            name = node.name.value  # type: ignore[attr-defined]
            found[name] = None if name in found else node  # type: ignore[assignment]
    return {name: cls for name, cls in found.items() if cls is not None}


def _hands_out_its_index(cls: cst.ClassDef) -> bool:
    """`def __getitem__(self, idx): return idx`: every `return` hands back the index
    parameter, unchanged or shifted by numbers (`idx + self.offset` is not: an attribute
    may hold anything)."""
    for statement in cls.body.body:
        if type(statement) is cst.FunctionDef and statement.name.value == "__getitem__":
            params = positional_params(statement)
            if len(params) != 2 or len(parameters(statement)) != 2:
                return False
            index = params[1].name.value
            returns = [node for node in descendants(statement.body) if type(node) is cst.Return]
            return bool(returns) and all(
                r.value is not None and _of_index(r.value, index)  # type: ignore[attr-defined]
                for r in returns
            )
    return False


def _of_index(value: cst.BaseExpression, index: str) -> bool:
    if type(value) is cst.Name:
        return value.value == index  # type: ignore[attr-defined]
    if type(value) is cst.BinaryOperation:
        return _of_index(value.left, index) and type(value.right) is cst.Integer  # type: ignore[attr-defined]
    return False
