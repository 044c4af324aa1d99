"""Unit tests of xlalint.analysis.usage: which imports a file uses, and which a fix made
unused."""

from __future__ import annotations

import libcst as cst
import pytest

from xlalint.analysis.usage import (
    made_unused,
    mentioned_names,
    module_import_bindings,
    unused_bindings,
)

XM = "import torch_xla.core.xla_model as xm\n"


def bindings(text: str) -> list[tuple[int, int, int, str, str]]:
    return [
        (b.statement, b.small, b.alias, b.name, b.target)
        for b in module_import_bindings(cst.parse_module(text))
    ]


def test_bindings_of_every_import_form() -> None:
    text = (
        "import torch_xla.core.xla_model as xm\n"
        "import torch_xla.runtime\n"
        "import os, sys as system\n"
        "from torch_xla.core.xla_model import mark_step, optimizer_step as step\n"
        "from . import sibling\n"
        "from ..pkg import thing\n"
        "import a; from b import c\n"
    )
    assert bindings(text) == [
        (0, 0, 0, "xm", "torch_xla.core.xla_model"),
        (1, 0, 0, "torch_xla", "torch_xla"),  # `import a.b` binds `a`
        (2, 0, 0, "os", "os"),
        (2, 0, 1, "system", "sys"),
        (3, 0, 0, "mark_step", "torch_xla.core.xla_model.mark_step"),
        (3, 0, 1, "step", "torch_xla.core.xla_model.optimizer_step"),
        (4, 0, 0, "sibling", "..sibling"),
        (5, 0, 0, "thing", "..pkg.thing"),
        (6, 0, 0, "a", "a"),
        (6, 1, 0, "c", "b.c"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "from __future__ import annotations\n",
        "from os.path import *\n",
        "try:\n    import torch_xla\nexcept ImportError:\n    torch_xla = None\n",
        "if TYPE_CHECKING:\n    import torch_xla\n",
        "def f():\n    import torch_xla\n",
        "class A:\n    import torch_xla\n",
    ],
)
def test_imports_that_are_never_candidates(text: str) -> None:
    assert bindings(text) == []


def mentions(text: str) -> set[str]:
    return mentioned_names(cst.parse_module(text))


def test_mentions_are_names_outside_imports() -> None:
    text = (
        "import torch_xla.core.xla_model as xm\n"
        "from a import b\n"
        "xm.mark_step()\n"
        "obj.attr_only\n"
        "f(keyword_only=value)\n"
    )
    assert mentions(text) == {"xm", "obj", "f", "value"}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("y = xm\n", "xm"),
        ("xm = None\n", "xm"),  # a rebinding: kept, to be safe
        ("del xm\n", "xm"),
        ("def f():\n    global xm\n", "xm"),
        ("def f(xm):\n    pass\n", "xm"),
        ("def f(x: 'xm.Tensor'):\n    pass\n", "xm"),
        ("x: 'Optional[xm.T]' = None\n", "xm"),
        ("__all__ = ['xm', 'other']\n", "xm"),
        ("__all__ += ('xm',)\n", "xm"),
        ("class A(xm.Base):\n    pass\n", "xm"),
        ("@xm.decorate\ndef f():\n    pass\n", "xm"),
        ("f'{xm}'\n", "xm"),
    ],
)
def test_what_counts_as_a_mention(text: str, name: str) -> None:
    assert name in mentions(text)


@pytest.mark.parametrize(
    "text",
    [
        "a.xm\n",
        "f(xm=1)\n",
        "s = 'xm'\n",  # a string that is no annotation nor `__all__`
        "# xm\n",
        "import xm\n",
    ],
)
def test_what_is_not_a_mention(text: str) -> None:
    assert "xm" not in mentions(text)


def unused(before: str, after: str, filename: str = "t.py") -> list[tuple[str, str]]:
    found = made_unused(cst.parse_module(before), cst.parse_module(after), filename)
    return [(b.name, b.target) for b in found]


def test_an_import_used_before_and_not_after_was_made_unused() -> None:
    before = f"{XM}import torch_xla\nxm.mark_step()\n"
    after = f"{XM}import torch_xla\ntorch_xla.sync()\n"
    assert unused(before, after) == [("xm", "torch_xla.core.xla_model")]


def test_an_import_unused_before_is_never_reported() -> None:
    before = f"{XM}import os\nimport torch_xla\nx = 1\n"
    after = f"{XM}import os\nimport torch_xla\nx = 2\n"
    assert unused(before, after) == []


def test_an_import_still_used_after_is_not_reported() -> None:
    before = f"{XM}xm.mark_step()\nxm.optimizer_step(opt)\n"
    after = f"{XM}torch_xla.sync()\nxm.optimizer_step(opt)\n"
    assert unused(before, after) == []


def test_an_import_the_fix_added_is_not_reported() -> None:
    # `import torch_xla` is new in `after`, and `torch_xla` was mentioned before (as the
    # head of another import only): it is not one the fix made unused.
    before = "x = t.cuda()\n"
    after = "import torch_xla\nx = t.cuda()\n"
    assert unused(before, after) == []


def test_a_name_bound_to_something_else_after_is_not_matched() -> None:
    before = "import numpy as xm\nxm.zeros(3)\n"
    after = f"{XM}y = 1\n"
    assert unused(before, after) == []


@pytest.mark.parametrize("filename", ["pkg/__init__.py", "__init__.py", "pkg\\__init__.py"])
def test_nothing_is_removed_from_an_init_module(filename: str) -> None:
    before = f"{XM}xm.mark_step()\n"
    after = f"{XM}torch_xla.sync()\n"
    assert unused(before, after, filename) == []
    assert unused(before, after, "pkg/init.py") == [("xm", "torch_xla.core.xla_model")]


def test_unused_bindings() -> None:
    text = f"{XM}import os, sys\nfrom a import b\nos.getcwd()\n"
    assert unused_bindings(cst.parse_module(text)) == {
        ("xm", "torch_xla.core.xla_model"),
        ("sys", "sys"),
        ("b", "a.b"),
    }
