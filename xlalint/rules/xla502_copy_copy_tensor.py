from __future__ import annotations

import libcst as cst

from xlalint.rule import Rule

COPY_COPY = "copy.copy"


class CopyCopyTensor(Rule):
    """
    ## What it does
    Flags `copy.copy(t)` (also `from copy import copy`) where `t` is a tensor.

    ## Why is this bad?
    On the CPU and on CUDA, `copy.copy` of a tensor is shallow: the copy shares the
    original's storage. An XLA tensor has no storage to share, so `copy.copy` goes through
    pickling: it copies the tensor to the host (a sync and a device-to-host transfer) and
    builds a new device tensor from it (a host-to-device transfer). The result is a deep
    copy that no longer sees in-place updates of the original, which code written for
    shallow copies does not expect.

    ## Example
    ```python
    ema_weights = copy.copy(model.head.weight)
    ```

    ## Use instead
    Say which copy is meant:
    ```python
    alias = weights.view_as(weights)  # shares the data, as copy.copy does elsewhere
    snapshot = weights.clone()  # an independent copy, made on the device
    ```

    ## Fix safety
    No fix: whether the code wants an alias or an independent copy is a judgement, so this
    rule reports with a hint only.

    ## Runtime evidence
    Not measured by the harness yet. Measured by hand while writing this rule on the XLA CPU
    device: `copy.copy(t)` of an XLA tensor costs 1 device-to-host and 1 host-to-device
    transfer, and a later `t.add_(1)` does not show in the copy; on the CPU the copy sees
    it; `t.view_as(t)` sees it on XLA too.
    """

    code = "XLA502"
    name = "copy-copy-tensor"
    message = (
        "`copy.copy` of an XLA tensor round-trips through the host and makes a deep copy, "
        "not a view"
    )
    hint = "Use t.view_as(t) for a view that shares the data, or t.clone() for a copy"
    # `copy.copy` resolves only through an import of the `copy` module.
    triggers = ("import copy", "from copy import", ", copy", ",copy")
    screen = ("copy",)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualified(node.func) != COPY_COPY:
            return
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if len(positional) == 1 and len(node.args) == 1 and self.ctx.is_tensor(positional[0].value):
            self.report(node)
