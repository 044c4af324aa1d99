from __future__ import annotations

import libcst as cst

from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rules._loop_rules import LoopRule


class PlainDataloader(LoopRule):
    """
    ## What it does
    Flags, in XLA code (a file that imports torch_xla), a training, sampling or evaluation
    loop (its body trains or calls a model) that iterates a `torch.utils.data.DataLoader`
    made in the file directly, through `enumerate`/`tqdm` or not, instead of a
    `pl.MpDeviceLoader`. A loader is traced through its name's assignments and, for a
    parameter of a function (`def train_epoch(model, loader, opt)`), to what this file's
    calls of that function pass (`train_epoch(model, DataLoader(...), opt)`). Loaders
    traced to `MpDeviceLoader`, `per_device_loader` or `accelerator.prepare()` are not
    reported, nor loops that only prepare data.

    ## Why is this bad?
    A plain DataLoader yields CPU tensors: each batch is copied to the device on the
    training thread, in the step's critical path, and the loop needs a barrier of its own.
    `MpDeviceLoader` uploads the next batches in background threads while the device runs
    the current step, and marks the step boundary (`torch_xla.sync()`) on every batch.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        ...
    ```

    ## Use instead
    ```python
    import torch_xla
    import torch_xla.distributed.parallel_loader as pl

    loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)
    for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):
        x, y = x.to(device), y.to(device)  # already there: a no-op
        loss = loss_fn(model(x), y)
        ...
    ```

    ## Fix safety
    Safe. The fix wraps the iterated loader in `pl.MpDeviceLoader(loader,
    torch_xla.device())` in the loop header only (other uses of `loader`, such as
    `len(loader)` or `loader.sampler.set_epoch(epoch)`, are untouched) and adds the imports.
    Batches then arrive on the XLA device, where the loop moved them anyway; non-tensor
    items pass through unchanged. Where the file imports torch_xla only if it is installed,
    in a `try:` that sets a flag (`XLA_AVAILABLE = True`, as XLA305's fix writes it), the
    wrap is `pl.MpDeviceLoader(loader, torch_xla.device()) if XLA_AVAILABLE else loader` and
    its import goes inside that `try:`, so the loop keeps working without torch_xla; with
    another kind of guard there is no fix. In a file with a device ladder without XLA
    (XLA305), the fix is unsafe: the ladder decides where the model goes, and moving this
    value alone could put it on another device than the model (`RuntimeError: Expected XLA
    tensor`). It then goes together with the ladder's fix: `--unsafe-fixes` applies both or
    neither. Where the file does not import torch_xla at all, the wrap waits (no fix, a
    hint) until the ladder's fix has added its guard, and is then made in the guard's terms.

    Random numbers drawn on the device in the loop (dropout, `torch.randn(...,
    device=...)`) are the exception: a barrier changes which numbers torch_xla's device
    generator gives every later draw, so the results are a different sample of the same
    distribution, not the same values (measured by the `device_randomness` runtime case:
    values differ, a two-sample Kolmogorov-Smirnov test finds the same distribution).
    Without device randomness, results are the same values up to float rounding (a graph cut
    in two may round differently; bit-identical or not depends on the host CPU).

    ## Runtime evidence
    The runtime case `fixtures/XLA403/runtime_plain_loader.py` runs a training loop without
    an explicit barrier over a plain DataLoader and over the `MpDeviceLoader` the fix wraps
    it in: the wrapped loop executes one graph per batch, the plain one a single graph
    grown over every batch.
    """

    code = "XLA403"
    name = "plain-dataloader"
    message = (
        "DataLoader iterated directly in XLA code: wrap it in `pl.MpDeviceLoader` to upload "
        "batches in the background and sync once per batch"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("DataLoader",)
    screen = (*LoopRule.screen, "DataLoader")

    def leave_Module(self, node: cst.Module) -> None:
        loops = self.ctx.loops
        if not self.ctx.imports.binds("torch_xla"):
            return
        for site in loops.sites():
            if site.per_step or not loops.runs_model(site.node):
                continue
            loader = loops.plain_dataloader(site)
            if loader is not None:
                self.report(loader, fix=self.loader_fix(site))
