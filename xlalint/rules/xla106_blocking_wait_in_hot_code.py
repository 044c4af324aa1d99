from __future__ import annotations

import libcst as cst

from xlalint.context import FileContext, Site
from xlalint.rule import Rule

_ALWAYS_BLOCKING = {
    "torch_xla.core.xla_model.wait_device_ops": "xm.wait_device_ops()",
    "torch.cuda.synchronize": "torch.cuda.synchronize()",
}
# Barriers that block only with `wait=True`, by the position of `wait`.
_WAITABLE_BARRIERS = {
    "torch_xla.sync": "torch_xla.sync(wait=True)",
    "torch_xla.torch_xla.sync": "torch_xla.sync(wait=True)",
    "torch_xla.core.xla_model.mark_step": "xm.mark_step(wait=True)",
}


class BlockingWaitInHotCode(Rule):
    """
    ## What it does
    Flags calls that block the host until the device has finished all pending work, in
    code that runs every step: `xm.wait_device_ops()`, `torch_xla.sync(wait=True)`,
    `xm.mark_step(wait=True)` and `torch.cuda.synchronize()`. Names are resolved through
    the file's imports, so `from torch_xla.core.xla_model import wait_device_ops as w` is
    found and a local function called `wait_device_ops` is not. The plain barriers
    `torch_xla.sync()` and `xm.mark_step()` do not block and are not flagged. While XLA303
    is enabled, `torch.cuda.synchronize()` is reported there instead (on an XLA host it
    raises), once.

    ## Why is this bad?
    XLA overlaps work: after a barrier the host returns at once and traces the next step
    (and the input pipeline loads the next batch) while the device executes this one.
    Waiting for the device every step removes that overlap, so the device idles while the
    host traces and the host idles while the device runs. `torch.cuda.synchronize()` is
    CUDA-only and meaningless on an XLA device.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync(wait=True)
    ```

    ## Use instead
    Use the non-blocking barrier in the loop and wait once, where the host really needs the
    device to be done (timing a whole run, before saving, at exit):
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    xm.wait_device_ops()
    ```

    ## Fix safety
    No fix: a wait may be deliberate (benchmarks timing each step), and where to move it
    needs judgement, so this rule reports with a hint only.

    ## Runtime evidence
    Not measured yet. The harness will time N steps with `torch_xla.sync(wait=True)`
    against `torch_xla.sync()` plus one `xm.wait_device_ops()` after the loop, on the same
    model and data: the executions and compiles are expected to be equal, and the wall time
    per step is expected to be higher with the wait because host tracing no longer overlaps
    device execution.
    """

    code = "XLA106"
    name = "blocking-wait-in-hot-code"
    message = "`{call}` blocks the host until the device is idle, {when}"
    hint = "Use torch_xla.sync() in the loop; wait once with xm.wait_device_ops() after it"
    hot_only = True
    # Every name above contains one of these, in the call or in its import.
    triggers = ("wait_device_ops", "sync", "mark_step")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._waits: list[tuple[cst.Call, str, Site]] = []

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualified(node.func)
        if qualified is None:
            return
        if qualified in _ALWAYS_BLOCKING:
            if qualified.startswith("torch.cuda.") and self.ctx.under_cuda_guard:
                return  # never runs on an XLA host
            self._waits.append((node, _ALWAYS_BLOCKING[qualified], self.ctx.site()))
        elif qualified in _WAITABLE_BARRIERS and _waits(node):
            self._waits.append((node, _WAITABLE_BARRIERS[qualified], self.ctx.site()))

    def leave_Module(self, node: cst.Module) -> None:
        # The message says how often the call runs ("every step" only in a batch loop or a
        # per-step function), which is known once the whole file has been read.
        for call, spelled, site in self._waits:
            when = self.ctx.frequency(site)
            self.report(call, self.message.format(call=spelled, when=when), site=site)


def _waits(call: cst.Call) -> bool:
    """`wait=True`, passed by keyword or as the first positional argument."""
    for index, arg in enumerate(call.args):
        named = arg.keyword is not None and arg.keyword.value == "wait"
        if (named or (arg.keyword is None and not arg.star and index == 0)) and (
            isinstance(arg.value, cst.Name) and arg.value.value == "True"
        ):
            return True
    return False
