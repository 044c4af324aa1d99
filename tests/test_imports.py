"""Import resolution and spelling: how a file names torch_xla, and how fixes name it back."""

from __future__ import annotations

import libcst as cst
import pytest

from xlalint.analysis.imports import ImportTable

XM = "import torch_xla.core.xla_model as xm"


def table(source: str) -> ImportTable:
    imports = ImportTable()
    imports.add_top_level(cst.parse_module(source))
    return imports


@pytest.mark.parametrize(
    ("source", "expression", "qualified"),
    [
        (XM, "xm.mark_step", "torch_xla.core.xla_model.mark_step"),
        ("from torch_xla import sync as s", "s", "torch_xla.sync"),
        ("import torch.nn.functional", "torch.nn.functional.relu", "torch.nn.functional.relu"),
        ("try:\n    import torch_xla\nexcept ImportError:\n    pass", "torch_xla.sync",
         "torch_xla.sync"),
        ("import torch", "xm.mark_step", None),
        ("from . import xm", "xm.mark_step", None),
    ],
)  # fmt: skip
def test_resolve(source: str, expression: str, qualified: str | None) -> None:
    assert table(source).resolve(cst.parse_expression(expression)) == qualified


@pytest.mark.parametrize(
    ("source", "qualified", "module_import", "spelled"),
    [
        (XM, "torch_xla.core.xla_model.optimizer_step", XM, ("xm.optimizer_step", ())),
        ("import torch_xla.core.xla_model as xla_model", "torch_xla.core.xla_model.save", XM,
         ("xla_model.save", ())),
        ("import torch", "torch_xla.core.xla_model.save", XM, ("xm.save", (XM,))),
        ("import torch_xla", "torch_xla.sync", "import torch_xla", ("torch_xla.sync", ())),
        ("from torch_xla import sync", "torch_xla.sync", "import torch_xla", ("sync", ())),
        ("", "torch_xla.sync", "import torch_xla", ("torch_xla.sync", ("import torch_xla",))),
        ("", "torch_xla.distributed.parallel_loader.MpDeviceLoader",
         "import torch_xla.distributed.parallel_loader as pl",
         ("pl.MpDeviceLoader", ("import torch_xla.distributed.parallel_loader as pl",))),
    ],
)  # fmt: skip
def test_spell_reuses_the_files_own_binding(
    source: str, qualified: str, module_import: str, spelled: tuple[str, tuple[str, ...]]
) -> None:
    assert table(source).spell(qualified, module_import) == spelled


def test_spell_rejects_an_import_that_binds_something_else() -> None:
    with pytest.raises(ValueError, match="binds neither"):
        table("").spell("torch_xla.sync", "import numpy as np")
