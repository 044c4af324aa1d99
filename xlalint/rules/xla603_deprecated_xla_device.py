from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.api_moves import call_of, in_compat_guard, reads_import, spell_beside
from xlalint.analysis.legacy_api import XLA_DEVICE
from xlalint.analysis.xla_api import deprecated_at
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule

_DEVKIND_HINT = (
    "torch_xla 2.9 ignores `devkind` (PJRT_DEVICE picks the device type): use `torch_xla.device()`"
)
_REFERENCE_HINT = "call `torch_xla.device()` (its one argument is `index`, not `n`/`devkind`)"


class DeprecatedXlaDevice(Rule):
    """
    ## What it does
    Flags `xm.xla_device` (`torch_xla.core.xla_model.xla_device`), called or passed as a
    function, resolved through the file's imports (`import torch_xla.core.xla_model as xm`,
    `from torch_xla.core.xla_model import xla_device as dev`). Local objects with an
    `xla_device` attribute and version-compatibility branches
    (`if hasattr(torch_xla, "device")`) are left alone.

    Reported where `target-version` is 2.8 or later (the default is 2.9): 2.8 wrapped
    `xla_device` in `@deprecated`, and before 2.3 `torch_xla.device` did not exist. The
    dates are read from each release's wheel (docs/target-version.md).

    ## Why is this bad?
    torch_xla 2.8 deprecated `xm.xla_device()` for `torch_xla.device()`. In 2.9 it emits a
    `DeprecationWarning` on every call and only forwards `n` to `torch_xla.device`; its
    `devkind` argument is ignored. The next releases remove it.

    ## Example
    ```python
    import torch_xla.core.xla_model as xm

    device = xm.xla_device()
    model = Net().to(device)
    ```

    ## Use instead
    ```python
    import torch_xla

    device = torch_xla.device()
    model = Net().to(device)
    ```

    ## Fix safety
    Safe. In torch_xla 2.9, `xla_device(n=None, devkind=None)` is `torch_xla.device(n)`,
    so the callee is rewritten and an ordinal argument is kept (`xm.xla_device(1)` ->
    `torch_xla.device(1)`; the keyword `n=` becomes `index=`). `import torch_xla` is added
    where the file imports `xm` (with the file's imports, or beside a conditional or
    function-local import), as for XLA604. Calls passing `devkind` (which earlier releases
    used to select a device type), `*args`/`**kwargs`, and uses that do not call the
    function (`get_device = xm.xla_device`) are reported without a fix.

    ## Runtime evidence
    Checked on torch_xla 2.9.0 (`PJRT_DEVICE=CPU`, `python -W always`):
    `xm.xla_device()` returns `xla:0`, the same device as `torch_xla.device()`, and prints
    `DeprecationWarning: Use torch_xla.device instead`; the 2.9 source is
    `del devkind; return torch_xla.device(n)` under that `@deprecated`. The runtime case
    counts the warning before the fix and none after, with identical outputs.
    """

    code = "XLA603"
    name = "deprecated-xla-device"
    message = (
        "`{name}` is deprecated: torch_xla {release} warns on every call; use `torch_xla.device()`"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("xla_device",)
    screen = ("xla_device",)
    hint = "`torch_xla.device()` returns the same device; `torch_xla.device(n)` the n-th one"

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def _check(self, node: cst.Name | cst.Attribute) -> None:
        if self.ctx.qualified(node) != XLA_DEVICE.old or not reads_import(self.ctx, node):
            return
        if not deprecated_at(XLA_DEVICE.old, self.ctx.target):
            return  # the target's own API: nothing warns there
        if in_compat_guard(self.ctx, node, ("xla_device", "device")):
            return
        call = call_of(self.ctx, node)
        spelled = get_full_name_for_node(node) or "xla_device"
        name = f"{spelled}()" if call else spelled
        message = self.message.format(name=name, release=self.ctx.target)
        if call is None:
            self.report(node, message, hint=_REFERENCE_HINT)
            return
        hint = _DEVKIND_HINT if _passes_devkind(call) else None
        self.report(node, message, end_node=call, fix=self._fix(node, call), hint=hint)

    def _fix(self, node: cst.Name | cst.Attribute, call: cst.Call) -> NodeFix | None:
        args = call.args
        if any(a.star for a in args) or _passes_devkind(call):
            return None
        if any(a.keyword is not None and a.keyword.value != "n" for a in args):
            return None
        assert XLA_DEVICE.new is not None
        spelling = spell_beside(self.ctx, node, XLA_DEVICE.new, XLA_DEVICE.module_import)
        if spelling is None:
            return None
        edits: list[tuple[cst.CSTNode, cst.CSTNode | str]] = [(node, spelling.text)]
        edits += [(a.keyword, "index") for a in args if a.keyword is not None]
        return spelling.fix(self, f"Use `{spelling.text}()`", *edits)


def _passes_devkind(call: cst.Call) -> bool:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    return len(positional) > 1 or "devkind" in keywords
