from __future__ import annotations

import libcst as cst

from xlalint.analysis.arguments import keyword_argument
from xlalint.analysis.loop_facts import LoopSite
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix
from xlalint.rules._loop_rules import LoopRule


class OptimizerStepWithoutBarrier(LoopRule):
    """
    ## What it does
    Flags `xm.optimizer_step(optimizer)` when it is the only barrier candidate of a
    training loop: `barrier` is left at its default (`False`) or set to `False`, nothing
    else in the loop (or the functions of the same module it calls) syncs, and the loop
    does not take its batches from `MpDeviceLoader`/`per_device_loader`/an
    `accelerator.prepare()`d loader, whose iteration syncs.

    Loops an XLA host never runs are left alone: under a CUDA guard, a test for another
    accelerator or another framework (a library written for several backends: `if
    backend_name == "jax":`), or a failed XLA test, and in a function or private method
    this file calls only from such branches.

    ## Why is this bad?
    `xm.optimizer_step` reduces gradients and steps the optimizer, but syncs only with
    `barrier=True`: its default assumes the loader marks the step. Without a syncing loader
    the loop has no barrier at all, and each iteration grows the same XLA graph, exactly
    like a loop with no `torch_xla.sync()`.

    ## Example
    ```python
    for x, y in loader:  # a plain DataLoader
        loss_fn(model(x), y).backward()
        xm.optimizer_step(optimizer)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss_fn(model(x), y).backward()
        xm.optimizer_step(optimizer, barrier=True)
    ```

    ## Fix safety
    Safe. The fix adds `barrier=True`, which syncs after the step: graphs are cut per step,
    results are the same except for device random numbers (below). An explicit `barrier=False`
    (or a positional `False`) is reported without a fix, as are calls with `**kwargs`. Where the
    loop iterates a plain `DataLoader` and moves each batch to the device itself, the fix wraps
    the loader in `pl.MpDeviceLoader(loader, torch_xla.device())` instead, as XLA401's does: its
    batches are the barriers, so no second barrier per step is added. With a device ladder
    without XLA in the file (XLA305), that wrap goes together with the ladder's fix, unsafe.

    Random numbers drawn on the device in the loop (dropout, `torch.randn(...,
    device=...)`) are the exception: a barrier changes which numbers torch_xla's device
    generator gives every later draw, so the results are a different sample of the same
    distribution, not the same values (measured by the `device_randomness` runtime case:
    values differ, a two-sample Kolmogorov-Smirnov test finds the same distribution).
    Without device randomness, results are the same values up to float rounding (a graph cut
    in two may round differently; bit-identical or not depends on the host CPU).

    ## Runtime evidence
    5 steps on the XLA CPU device (case `optimizer_step_no_barrier`): `xm.optimizer_step(opt)`
    with the default `barrier=False` behaves like no barrier at all: one graph of
    {optimizer_step_no_barrier.before.max_graph_size} nodes, compiled once at the end; with
    `barrier=True` the largest graph is {optimizer_step_no_barrier.after.max_graph_size} nodes.
    Outputs are {optimizer_step_no_barrier.outputs}; with random numbers drawn on the device
    (case `device_randomness`) they are {device_randomness.outputs}.
    """

    code = "XLA406"
    name = "optimizer-step-without-barrier"
    message = (
        "`xm.optimizer_step()` does not sync unless `barrier=True`, and nothing else in this "
        "loop does: each iteration grows one XLA graph"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("optimizer_step",)
    screen = (*LoopRule.screen, "optimizer_step")

    def leave_Module(self, node: cst.Module) -> None:
        seen: set[int] = set()
        for loop in self.xla_step_loops():
            if loop.has_barrier or loop.syncing_loader:
                continue
            for call in loop.optimizer_steps:
                if id(call) not in seen:
                    seen.add(id(call))
                    self.report(call, fix=self._fix(loop.site, call))

    def _fix(self, site: LoopSite, call: cst.Call) -> NodeFix | None:
        return self.moved_batches_fix(site) or self._with_barrier(call)

    def _with_barrier(self, call: cst.Call) -> NodeFix | None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if (
            not call.args
            or keyword_argument(call, "barrier") is not None
            or len(positional) > 1
            or any(a.star for a in call.args)
        ):
            return None
        last = call.args[-1].value
        code = self.ctx.module.code_for_node(last)
        return self.fix("Add `barrier=True`", (last, f"{code}, barrier=True"))
