from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.api_moves import call_of, in_compat_guard, reads_import, spell_beside
from xlalint.analysis.legacy_api import MARK_STEP
from xlalint.analysis.xla_api import deprecated_at
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule


class DeprecatedMarkStep(Rule):
    """
    ## What it does
    Flags `xm.mark_step` (`torch_xla.core.xla_model.mark_step`), called or passed as a
    function, however the file imports it: `import torch_xla.core.xla_model as xm`,
    `from torch_xla.core import xla_model`, `from torch_xla.core.xla_model import mark_step
    as barrier`. A local object with a `mark_step` method is not torch_xla's and is left
    alone, as is code that picks the API by torch_xla version
    (`if hasattr(torch_xla, "sync"): ... else: xm.mark_step()`).

    Reported where `target-version` is 2.8 or later (the default is 2.9): 2.8 wrapped
    `mark_step` in `@deprecated`; `torch_xla.sync` appeared in 2.4 (without arguments;
    `wait=` came in 2.5 and `reset_scope=` in 2.8). Before 2.4 the barrier fixes of the
    loop rules write `xm.mark_step()` themselves (docs/target-version.md).

    ## Why is this bad?
    torch_xla 2.8 deprecated `xm.mark_step()` in favour of `torch_xla.sync()`. In 2.9 it is
    a wrapper that calls `torch_xla.sync` and emits a `DeprecationWarning` on every call,
    which in a training or sampling loop means once per step. The next releases remove it.

    ## Example
    ```python
    import torch_xla.core.xla_model as xm

    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()
    ```

    ## Use instead
    ```python
    import torch_xla

    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    ```

    ## Fix safety
    Safe. In torch_xla 2.9, `mark_step(wait=False, reset_scope=True)` is exactly
    `torch_xla.sync(wait, reset_scope)`: the same parameters, names and defaults, so only
    the callee is rewritten and the arguments stay as written. The new name is written the
    way the file already imports torch_xla (`torch_xla.sync`, or `sync` after
    `from torch_xla import sync`). When the file lacks it, `import torch_xla` is added:
    with the file's imports when `xm` is imported unconditionally at module level, otherwise
    on the line before the statement that imports `xm` (inside the same
    `if is_torch_xla_available():`, `try:` or function), so code that runs without
    torch_xla keeps running. The now-unused `xm` import is left for unused-import cleanup.

    ## Runtime evidence
    Checked on torch_xla 2.9.0 (`PJRT_DEVICE=CPU`, `python -W always`): `xm.mark_step()`
    prints `DeprecationWarning: Use torch_xla.sync instead` at each call, and the 2.9
    source defines it as `torch_xla.sync(wait, reset_scope)` under
    `@deprecated("Use torch_xla.sync instead")`. The runtime case counts one warning per
    step on the original and none after the fix, with identical outputs, compiles and
    executions.
    """

    code = "XLA604"
    name = "deprecated-mark-step"
    message = (
        "`{name}` is deprecated: torch_xla {release} warns on every call; use `torch_xla.sync()`"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("mark_step",)
    screen = ("mark_step",)
    hint = "`torch_xla.sync()` takes the same `wait=` and `reset_scope=` arguments"

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def _check(self, node: cst.Name | cst.Attribute) -> None:
        if self.ctx.qualified(node) != MARK_STEP.old or not reads_import(self.ctx, node):
            return
        if not deprecated_at(MARK_STEP.old, self.ctx.target):
            return  # the target's own API: nothing warns there
        if in_compat_guard(self.ctx, node, ("mark_step", "sync")):
            return
        assert MARK_STEP.new is not None
        spelling = spell_beside(self.ctx, node, MARK_STEP.new, MARK_STEP.module_import)
        fix = None
        if spelling is not None:
            fix = spelling.fix(self, f"Use `{spelling.text}`", (node, spelling.text))
        call = call_of(self.ctx, node)
        spelled = get_full_name_for_node(node) or "mark_step"
        name = f"{spelled}()" if call else spelled
        message = self.message.format(name=name, release=self.ctx.target)
        self.report(node, message, end_node=call or node, fix=fix)
