from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.api_moves import call_of, reads_import, spell_beside
from xlalint.analysis.legacy_api import private_metrics
from xlalint.analysis.xla_api import exists
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule

_SHORT_REPORT_HINT = (
    "`met.short_metrics_report(counter_names, metric_names)` "
    "(`import torch_xla.debug.metrics as met`); it fills in default names for empty lists"
)


class PrivateMetricsApi(Rule):
    """
    ## What it does
    Flags calls and uses of the private metrics functions of torch_xla's C extension,
    `torch_xla._XLAC`: `_xla_metrics_report`, `_xla_counter_names`, `_xla_counter_value`,
    `_xla_metric_names`, `_xla_metric_data`, `_clear_xla_counters`, `_clear_xla_metrics`,
    `_get_executed_fallback_ops` and `_short_xla_metrics_report`, resolved through the
    file's imports (`import torch_xla`, `from torch_xla import _XLAC`).
    `_get_executed_fallback_ops` is reported where `target-version` is 2.4 or later: 2.4
    added its public form, `executed_fallback_ops` (docs/target-version.md).

    ## Why is this bad?
    `_XLAC` is the binding layer under torch_xla's Python API: its underscore names carry
    no compatibility promise and change between releases without notice.
    `torch_xla.debug.metrics` is the documented API over exactly these functions, and what
    the PyTorch/XLA troubleshooting guide uses.

    ## Example
    ```python
    import torch_xla

    print(torch_xla._XLAC._xla_metrics_report())
    compiles = torch_xla._XLAC._xla_counter_value("UncachedCompile")
    ```

    ## Use instead
    ```python
    import torch_xla.debug.metrics as met

    print(met.metrics_report())
    compiles = met.counter_value("UncachedCompile")
    ```

    ## Fix safety
    Safe. In torch_xla 2.9 each public function in `torch_xla.debug.metrics` returns its
    private counterpart's result for the same arguments (`metrics_report()` is
    `return torch_xla._XLAC._xla_metrics_report()`), so only the name is rewritten and the
    arguments stay. It is written the way the file already imports
    `torch_xla.debug.metrics`, else `import torch_xla.debug.metrics as met` is added where
    the file imports torch_xla (the fix is withheld if the file uses `met` for something
    else). `_short_xla_metrics_report` is reported without a fix: its public wrapper swaps
    empty name lists for defaults.

    ## Runtime evidence
    Checked on torch_xla 2.9.0: `torch_xla/debug/metrics.py` defines each public function
    as a one-line call of the private one, and `met.metrics_report()` equals
    `torch_xla._XLAC._xla_metrics_report()` in the same process. The runtime case declares
    no cost (a rename lowers nothing) and proves that the fixed program reads the same
    counter values after the same steps.
    """

    code = "XLA607"
    name = "private-metrics-api"
    message = "`{name}` is a private torch_xla binding: use `torch_xla.debug.metrics.{public}`"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("_XLAC",)
    screen = ("_XLAC",)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def _check(self, node: cst.Name | cst.Attribute) -> None:
        qualified = self.ctx.qualified(node)
        entry = private_metrics(qualified) if qualified else None
        if entry is None or not reads_import(self.ctx, node):
            return
        call = call_of(self.ctx, node)
        spelled = get_full_name_for_node(node) or entry.old
        name = f"{spelled}()" if call else spelled
        if entry.new is None:
            message = self.message.format(name=name, public="short_metrics_report")
            self.report(node, message, end_node=call or node, hint=_SHORT_REPORT_HINT)
            return
        if not exists(entry.new, self.ctx.target):
            return  # no public form at the target release (`executed_fallback_ops`: 2.4)
        public = entry.new.rsplit(".", 1)[-1]
        message = self.message.format(name=name, public=public)
        spelling = spell_beside(self.ctx, node, entry.new, entry.module_import)
        fix = None
        if spelling is not None:
            fix = spelling.fix(self, f"Use `{spelling.text}`", (node, spelling.text))
        self.report(node, message, end_node=call or node, fix=fix)
