from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.legacy_api import LEGACY_MODULES, LEGACY_PACKAGE, modern_module
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext

_KNOWN = ", ".join(sorted(m.split(".", 1)[1] for m in LEGACY_MODULES))
_UNKNOWN_HINT = f"torch_xla 2.9 has successors for these `torch_xla_py` modules only: {_KNOWN}"


@dataclass
class _BareImport:
    """`import torch_xla_py.xla_model` (binds `torch_xla_py`): its uses move with it."""

    alias: cst.ImportAlias
    old: str
    new: str


class LegacyTorchXlaPy(Rule):
    """
    ## What it does
    Flags imports from `torch_xla_py`, the package's name before torch_xla 1.0:
    `import torch_xla_py.xla_model as xm`, `from torch_xla_py import data_parallel as dp`,
    `from torch_xla_py.utils import ...`.

    ## Why is this bad?
    The package was renamed in 2019 and its modules moved to `torch_xla.core`,
    `torch_xla.distributed`, `torch_xla.utils` and `torch_xla.debug`. No `torch_xla_py`
    package exists any more, so the import fails with `ModuleNotFoundError` before any of
    the script runs. Old tutorials and Kaggle notebooks still carry these imports.

    ## Example
    ```python
    import torch_xla_py.xla_model as xm
    import torch_xla_py.parallel_loader as pl
    from torch_xla_py import utils as xu
    ```

    ## Use instead
    ```python
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl
    from torch_xla.utils import utils as xu
    ```

    ## Fix safety
    Safe for the modules that have a successor in torch_xla 2.9 (`xla_model`,
    `xla_env_vars`, `data_parallel`, `parallel_loader`, `xla_multiprocessing`, `utils`,
    `keyd_queue`, `metrics_saver`, `graph_saver`, `model_comparator`): only the module path
    is rewritten, so every name the import binds stays the same. For
    `import torch_xla_py.xla_model` without `as`, the file's uses
    (`torch_xla_py.xla_model.xla_device()`) are rewritten with it. Imports of modules with
    no successor (`xla_dist`, the XRT launcher), `from torch_xla_py import *`, and
    `from torch_xla_py import ...` of modules that now live in different packages are
    reported without a fix. Functions that have since been removed from those modules
    (`xm.xrt_world_size`) are XLA605's to fix.

    ## Runtime evidence
    Checked on torch_xla 2.9.0: `import torch_xla_py` raises
    `ModuleNotFoundError: No module named 'torch_xla_py'`, and each successor module
    listed above is in the 2.9 wheel. The runtime case
    `fixtures/XLA601/runtime_torch_xla_py_import.py` fails at that import as written and
    trains as fixed.
    """

    code = "XLA601"
    name = "legacy-torch-xla-py"
    message = (
        "`torch_xla_py` is torch_xla's pre-1.0 package name: importing `{name}` fails on "
        "torch_xla 2.9"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = (LEGACY_PACKAGE,)
    screen = (LEGACY_PACKAGE,)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._bare: list[_BareImport] = []
        self._uses: list[tuple[cst.Attribute, str]] = []

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = get_full_name_for_node(alias.name) or ""
            if not _legacy(dotted):
                continue
            new = modern_module(dotted)
            message = self.message.format(name=dotted)
            if new is None:
                self.report(alias, message, hint=_UNKNOWN_HINT)
            elif alias.asname is not None:
                fix = self.fix(f"Import `{new}`", (alias.name, new))
                self.report(alias, message, fix=fix)
            else:
                self._bare.append(_BareImport(alias, dotted, new))  # reported at the end

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = get_full_name_for_node(node.module) or ""
        if not _legacy(module):
            return
        message = self.message.format(name=module)
        new = self._from_module(module, node.names)
        if new is None:
            self.report(node, message, hint=_UNKNOWN_HINT)
        else:
            self.report(node, message, fix=self.fix(f"Import from `{new}`", (node.module, new)))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # Uses of a bare `import torch_xla_py.<module>`: `torch_xla_py.<module>.f()`.
        if not (isinstance(node.value, cst.Name) and node.value.value == LEGACY_PACKAGE):
            return
        if not any(isinstance(a, cst.Import | cst.ImportFrom) for a in self.ctx.ancestors()):
            self._uses.append((node, f"{LEGACY_PACKAGE}.{node.attr.value}"))

    def leave_Module(self, original_node: cst.Module) -> None:
        for bare in self._bare:
            uses = [(use, bare.new) for use, dotted in self._uses if dotted == bare.old]
            fix = self.fix(f"Import `{bare.new}`", (bare.alias.name, bare.new), *uses)
            self.report(bare.alias, self.message.format(name=bare.old), fix=fix)

    @staticmethod
    def _from_module(module: str, names: cst.ImportStar | Sequence[cst.ImportAlias]) -> str | None:
        """The module to import from instead, if one serves every imported name."""
        if module != LEGACY_PACKAGE:
            return modern_module(module)
        if isinstance(names, cst.ImportStar):
            return None
        # `from torch_xla_py import xla_model, utils`: the modules' new parent package, if
        # they share one (each module keeps its own name).
        parents = set()
        for alias in names:
            leaf = get_full_name_for_node(alias.name) or ""
            new = modern_module(f"{LEGACY_PACKAGE}.{leaf}")
            if new is None or not new.endswith(f".{leaf}"):
                return None
            parents.add(new.rpartition(".")[0])
        return parents.pop() if len(parents) == 1 else None


def _legacy(dotted: str) -> bool:
    return dotted == LEGACY_PACKAGE or dotted.startswith(LEGACY_PACKAGE + ".")
