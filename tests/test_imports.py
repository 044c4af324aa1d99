"""Import resolution and spelling: how a file names torch_xla, and how fixes name it back."""

from __future__ import annotations

import libcst as cst
import pytest

from xlalint.analysis.imports import ImportTable, NamesInUse, names_in_use

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
        # A package handing on PyTorch, and a star import from a library built on it.
        ("from mlagents.torch_utils import torch", "torch.isinf", "torch.isinf"),
        ("from ..imports import torch", "torch.isnan", "torch.isnan"),
        ("from fastai.basics import *", "torch.isinf", "torch.isinf"),
        ("from fastai.basics import *\nimport numpy as torch", "torch.isinf", "numpy.isinf"),
        ("from .backends import torch as backend", "backend.zeros", None),
        ("from keras.backend import jax", "jax.numpy", "keras.backend.jax.numpy"),
        # Module-level aliases of torch's functions, and the module reached through itself.
        ("import torch\nzeros = torch.zeros", "zeros", "torch.zeros"),
        ("import sys, torch\nd2l = sys.modules[__name__]\nzeros = torch.zeros", "d2l.zeros",
         "torch.zeros"),
        ("import torch\nzeros = torch.zeros\nzeros = None", "zeros", None),
        ("import numpy as np\nzeros = np.zeros", "zeros", None),
        ("import sys\nother = sys.modules['numpy']\nimport torch", "other.zeros", None),
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


def names(source: str) -> NamesInUse:
    return names_in_use(cst.parse_module(source))


PL = "import torch_xla.distributed.parallel_loader as pl"
LOADER = "torch_xla.distributed.parallel_loader.MpDeviceLoader"


@pytest.mark.parametrize(
    ("source", "spelled"),
    [
        # Lightning's `pl`: the import gets a free alias instead of shadowing it.
        ("import lightning.pytorch as pl\n",
         ("xla_pl.MpDeviceLoader", ("import torch_xla.distributed.parallel_loader as xla_pl",))),
        # A variable, a parameter or a function named `pl` anywhere counts as well.
        ("def f(pl):\n    return pl\n",
         ("xla_pl.MpDeviceLoader", ("import torch_xla.distributed.parallel_loader as xla_pl",))),
        ("pl = 3\nxla_pl = 4\n",
         ("xla_pl2.MpDeviceLoader",
          ("import torch_xla.distributed.parallel_loader as xla_pl2",))),
        # The same import inside a function: binding it at module level changes nothing.
        (f"def f():\n    {PL}\n    return pl\n", ("pl.MpDeviceLoader", (PL,))),
        ("x = 1\n", ("pl.MpDeviceLoader", (PL,))),
        # Module paths in imports bind nothing: `pl` stays free here.
        ("import pl.x as y\nfrom pl import z\nfrom a import pl as w\n",
         ("pl.MpDeviceLoader", (PL,))),
    ],
)  # fmt: skip
def test_spell_never_binds_a_name_the_file_uses(
    source: str, spelled: tuple[str, tuple[str, ...]]
) -> None:
    assert table(source).spell(LOADER, PL, names(source)) == spelled


def test_import_paths_are_not_names_in_use() -> None:
    source = "import torch.nn as nn\nimport torch_xla.core.xla_model as xm\n"
    assert table(source).spell("torch.where", "import torch", names(source)) == (
        "torch.where",
        ("import torch",),
    )


def test_a_free_alias_for_imports_without_one() -> None:
    source = "torch = None\n"
    assert table(source).spell("torch.where", "import torch", names(source)) == (
        "xla_torch.where",
        ("import torch as xla_torch",),
    )
    source = "def sync():\n    pass\n"
    assert table(source).spell("torch_xla.sync", "from torch_xla import sync", names(source)) == (
        "xla_sync",
        ("from torch_xla import sync as xla_sync",),
    )
