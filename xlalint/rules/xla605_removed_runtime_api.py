from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.api_moves import call_of, in_compat_guard, reads_import, spell_beside
from xlalint.analysis.legacy_api import REMOVED, Replacement, modernize
from xlalint.analysis.xla_api import removed_at
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule

# Argument values a fix may drop: evaluating them has no effect.
_INERT = (cst.Integer, cst.Float, cst.SimpleString, cst.Name, cst.Attribute)


class RemovedRuntimeApi(Rule):
    """
    ## What it does
    Flags uses of torch_xla functions that no longer exist in torch_xla 2.9:
    `xm.xrt_world_size()` and `xm.get_ordinal()` (removed in 2.7), `xm.parse_xla_device()`
    (removed in 2.7) and `xr.using_pjrt()` (removed in 2.5), resolved through the file's
    imports, and `from torch_xla.core.xla_model import get_ordinal`-style imports of them.
    Version-compatibility code (`if hasattr(xm, "xrt_world_size")`, a `try:` that catches
    AttributeError or ImportError) is left alone.

    `xm.get_local_ordinal()` is not flagged: torch_xla 2.9 still has it, undeprecated (it
    returns `xr.local_ordinal()`).

    Each name is reported where `target-version` (default 2.9) no longer has it:
    `xrt_world_size`, `get_ordinal` and `parse_xla_device` from 2.7 (2.5 and 2.6 keep
    them as deprecated wrappers), `using_pjrt` from 2.5. The dates are read from each
    release's wheel (docs/target-version.md).

    ## Why is this bad?
    The call raises `AttributeError: module 'torch_xla.core.xla_model' has no attribute
    'xrt_world_size'` on torch_xla 2.9, and importing the name raises ImportError, so a
    script written for older releases stops at its first use, typically in the sampler or
    logging setup of a multi-process run.

    ## Example
    ```python
    import torch_xla.core.xla_model as xm

    sampler = DistributedSampler(ds, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal())
    ```

    ## Use instead
    ```python
    import torch_xla.runtime as xr

    sampler = DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal())
    ```

    ## Fix safety
    Safe, for calls of `xrt_world_size` and `get_ordinal`: they become `xr.world_size()`
    and `xr.global_ordinal()`, the functions they returned before their removal, written
    the way the file already imports `torch_xla.runtime` (else `import torch_xla.runtime as
    xr` is added where the file imports `xm`). Their `defval` argument is dropped: the PJRT
    runtime ignored it since 2.1. Calls whose arguments are not plain values, uses that do
    not call the function, `parse_xla_device` and `using_pjrt` (no public successor; the
    hint says what to write) and the `from ... import get_ordinal` line are reported
    without a fix; the fixer removes such an import once the fixes leave it unused.

    ## Runtime evidence
    Checked on torch_xla 2.9.0: `hasattr(xm, "xrt_world_size")`,
    `hasattr(xm, "get_ordinal")` and `hasattr(xm, "parse_xla_device")` are False,
    `xm.get_local_ordinal()` works; `xr.world_size()`, `xr.global_ordinal()` and
    `xr.local_ordinal()` return 1, 0, 0 in a single process on `PJRT_DEVICE=CPU`. The
    runtime case `fixtures/XLA605/runtime_world_size.py` fails with the AttributeError as
    written and trains as fixed.
    """

    code = "XLA605"
    name = "removed-runtime-api"
    message = "`{name}` does not exist in torch_xla {release}: {error}"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("xrt_world_size", "get_ordinal", "parse_xla_device", "using_pjrt")
    screen = triggers

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = modernize(get_full_name_for_node(node.module) or "")
        for alias in node.names:
            entry = REMOVED.get(f"{module}.{get_full_name_for_node(alias.name)}")
            if entry is None or not self._removed(entry) or self._compat(node, entry):
                continue
            leaf = entry.old.rsplit(".", 1)[-1]
            message = self.message.format(
                name=f"from {module} import {leaf}", error="ImportError", release=self.ctx.target
            )
            self.report(alias, message, hint=_hint(entry))

    def _check(self, node: cst.Name | cst.Attribute) -> None:
        qualified = self.ctx.qualified(node)
        entry = REMOVED.get(qualified) if qualified else None
        if entry is None or not self._removed(entry) or not reads_import(self.ctx, node):
            return
        if self._compat(node, entry):
            return
        call = call_of(self.ctx, node)
        spelled = get_full_name_for_node(node) or entry.old
        message = self.message.format(
            name=f"{spelled}()" if call else spelled,
            error="AttributeError",
            release=self.ctx.target,
        )
        fix = self._fix(node, call, entry) if call is not None else None
        self.report(node, message, end_node=call or node, fix=fix, hint=_hint(entry))

    def _removed(self, entry: Replacement) -> bool:
        """Gone at the target release: before it, the name still works."""
        return removed_at(entry.old, self.ctx.target)

    def _compat(self, node: cst.CSTNode, entry: Replacement) -> bool:
        names = {entry.old.rsplit(".", 1)[-1]}
        if entry.new:
            names.add(entry.new.rsplit(".", 1)[-1])
        return in_compat_guard(self.ctx, node, names)

    def _fix(
        self, node: cst.Name | cst.Attribute, call: cst.Call, entry: Replacement
    ) -> NodeFix | None:
        if entry.new is None or not all(_inert(a.value) for a in call.args):
            return None
        spelling = spell_beside(self.ctx, node, entry.new, entry.module_import)
        if spelling is None:
            return None
        return spelling.fix(self, f"Use `{spelling.text}()`", (call, f"{spelling.text}()"))


def _inert(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, _INERT)


def _hint(entry: Replacement) -> str:
    if entry.new is None:
        return entry.hint
    # Every removed name with a successor moved to torch_xla.runtime.
    return f"use `xr.{entry.new.rsplit('.', 1)[-1]}()` after `{entry.module_import}`"
