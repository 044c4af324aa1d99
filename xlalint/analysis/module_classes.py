"""Which classes of a file are `torch.nn` modules.

Calling an instance of a module class runs its `forward` (tensors in, tensors out), its
`__call__` is called per step, and `self(x)` in its methods runs the model. Hot code, kinds
and loop facts all ask the same question of a class, so it is answered here once.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import ImportTable

# `torch.nn.Module`, `torch.nn.Linear`, `torch.nn.modules.Conv2d`: torch's module classes;
# also the wrappers that are modules around a model (`torch.nn.parallel.
# DistributedDataParallel`, `torch.distributed.fsdp.FullyShardedDataParallel`): calling
# one runs the wrapped model's `forward`.
NN_MODULE_CLASS = re.compile(
    r"^torch\.(nn\.(modules\.|parallel\.(\w+\.)?)?[A-Z]\w*"
    r"|distributed\.fsdp\.(\w+\.)?FullyShardedDataParallel)$"
)
# Bases named as modules or models by the libraries that derive them from `nn.Module`
# (`LightningModule`, `PreTrainedModel`, diffusers' `ModelMixin`).
_MODULE_BASE_NAME = re.compile(r"(Module|Model|ModelMixin)$")


def base_names(node: cst.ClassDef) -> list[str]:
    """The last names of a class's bases: `nn.Module` -> `Module`."""
    return [(get_full_name_for_node(base.value) or "").rsplit(".", 1)[-1] for base in node.bases]


def is_module_class(node: cst.ClassDef, imports: ImportTable, local: Collection[str] = ()) -> bool:
    """A class whose instances are modules: a subclass of any `torch.nn` module class
    (`class Head(nn.Linear)`), of a class named as a module or model (unless it is a
    record of declared fields, `_record_class`), or of a module class of this file
    (`local`, defined above it); or a class that defines `forward`."""
    for base, name in zip(node.bases, base_names(node), strict=True):
        value = base.value
        qualified = imports.resolve(value)
        if qualified is not None and NN_MODULE_CLASS.match(qualified):
            return True
        if isinstance(value, cst.Name) and value.value in local:
            return True
        if _MODULE_BASE_NAME.search(name) and not _record_class(node):
            return True
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return any(isinstance(s, cst.FunctionDef) and s.name.value == "forward" for s in body)


def _record_class(node: cst.ClassDef) -> bool:
    """A class that declares its fields in its body (`lr: float = 1e-3`) and defines no
    `__init__` or `forward`: a record of values (pydantic's `BaseModel`, SQLModel), however
    its base is named. A module makes its parts in `__init__` (`PreTrainedModel`'s
    subclasses take a config there)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    fields = False
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in (
            "__init__",
            "forward",
        ):
            return False
        if isinstance(statement, cst.SimpleStatementLine):
            fields = fields or any(isinstance(s, cst.AnnAssign) for s in statement.body)
    return fields
