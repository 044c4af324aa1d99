"""`foreign_arrays`: which functions another array library's transform decorates, and the
screen that spares the walk in modules that import no such library."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import pytest

from xlalint import lint_memo
from xlalint.analysis import foreign_arrays
from xlalint.analysis.foreign_arrays import OTHER_ARRAY_LIBRARIES, _transformed
from xlalint.analysis.imports import ImportTable

JAX = """\
import functools
import jax
from jax import jit

@jax.jit
def step(x):
    return x

@functools.partial(jax.jit, static_argnums=0)
def other(n, x):
    return x

@jit
def third(x):
    return x

def plain(x):
    return x
"""

TORCH = """\
import functools
import torch
from torch import jit

@torch.jit.script
def step(x):
    return x

@functools.partial(torch.compile, mode="max-autotune")
def other(x):
    return x

@jit
def third(x):
    return x
"""


def _table(source: str) -> tuple[cst.Module, ImportTable]:
    module = cst.parse_module(source)
    table = ImportTable()
    table.add_top_level(module)
    return module, table


@pytest.mark.parametrize(
    "source",
    [
        JAX,
        TORCH,
        "import tensorflow as tf\n",
        "from mlx import core as mx\n",
        "import jaxlib.xla_client\n",
        "import jaxtyping\nimport tensorflow_datasets as tfds\n",
        "import numpy as np\nfrom torch import nn\n",
        "",
    ],
)
def test_binds_any_answers_as_binds_for_each_library(source: str) -> None:
    _, table = _table(source)
    assert table.binds_any(OTHER_ARRAY_LIBRARIES) == any(
        table.binds(library) for library in OTHER_ARRAY_LIBRARIES
    )


def test_transformed_functions_of_a_jax_module() -> None:
    module, table = _table(JAX)
    with lint_memo.lint_scope():
        assert _transformed(module, table) == {"step", "other", "third"}


def test_a_module_without_another_array_library_is_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[cst.CSTNode] = []

    def counting(node: cst.CSTNode, *args: object, **kwargs: object) -> Iterator[cst.CSTNode]:
        walked.append(node)
        return iter(())

    module, table = _table(TORCH)
    monkeypatch.setattr(foreign_arrays, "descendants", counting)
    with lint_memo.lint_scope():
        assert _transformed(module, table) == frozenset()
    assert walked == []


def test_the_unwalked_answer_is_the_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the screen (the walk over every function) the same empty answer."""
    module, table = _table(TORCH)
    monkeypatch.setattr(ImportTable, "binds_any", lambda self, packages: True)
    with lint_memo.lint_scope():
        assert _transformed(module, table) == frozenset()


def test_the_answer_is_kept_for_the_lint_as_first_asked() -> None:
    """Asked before the import of jax was read (the walk reads imports as it meets them),
    the answer is kept for the rest of the lint, as the walk's was."""
    module, table = _table(JAX)
    early = ImportTable()
    with lint_memo.lint_scope():
        assert _transformed(module, early) == frozenset()
        for statement in module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Import | cst.ImportFrom):
                        early.add(small)
        assert early.binds_any(OTHER_ARRAY_LIBRARIES)
        assert _transformed(module, early) == frozenset()
    with lint_memo.lint_scope():
        assert _transformed(module, table) == {"step", "other", "third"}
