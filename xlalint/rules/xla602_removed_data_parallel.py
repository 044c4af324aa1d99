from __future__ import annotations

import libcst as cst

from xlalint.analysis.api_moves import call_of, reads_import
from xlalint.analysis.legacy_api import DATA_PARALLEL
from xlalint.rule import Rule


class RemovedDataParallel(Rule):
    """
    ## What it does
    Flags uses of `torch_xla.distributed.data_parallel.DataParallel` (also through the
    pre-1.0 `torch_xla_py.data_parallel`), resolved through the file's imports:
    `import torch_xla.distributed.data_parallel as dp` then `dp.DataParallel(...)`, or
    `from torch_xla.distributed.data_parallel import DataParallel`. A project's own
    `DataParallel` and `torch.nn.DataParallel` are other rules' business.

    Reported at every `target-version`: each release from 2.1 to 2.9 still ships the class
    (see docs/target-version.md). Before 2.5, which added `torch_xla.launch`, the hint
    names `xmp.spawn` instead.

    ## Why is this bad?
    `DataParallel` replicates the model in one process with a Python thread per device,
    a design from the XRT runtime that PyTorch/XLA dropped after 2.1. It is not in the 2.x
    API reference and nothing else in torch_xla uses it. The maintained ways to use several
    devices are one process per device (`torch_xla.launch` or `xmp.spawn`, with
    `MpDeviceLoader` and `xm.optimizer_step`) and SPMD sharding. Its per-epoch
    `loop_fn(model, loader, device, context)` callback also hides the training loop from
    the barrier and loader rules.

    ## Example
    ```python
    import torch_xla.distributed.data_parallel as dp

    model_parallel = dp.DataParallel(Net, device_ids=devices)


    def loop_fn(model, loader, device, context):
        for x, y in loader:
            ...


    for epoch in range(epochs):
        model_parallel(loop_fn, train_loader)
    ```

    ## Use instead
    ```python
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl


    def _mp_fn(index):
        device = torch_xla.device()
        model = Net().to(device)
        loader = pl.MpDeviceLoader(train_loader, device)
        for epoch in range(epochs):
            for x, y in loader:
                ...
                xm.optimizer_step(optimizer)


    torch_xla.launch(_mp_fn)
    ```

    ## Fix safety
    No fix: moving from a per-epoch callback to one process per device restructures the
    program (where the model is built, how the loader is sharded, what runs once).

    ## Runtime evidence
    Checked on torch_xla 2.9.0: despite the rule's name, the module is still in the wheel
    and `import torch_xla.distributed.data_parallel` succeeds; what is gone is the
    `torch_xla_py.data_parallel` spelling of old guides (XLA601). Not measured by the
    harness yet; it will run a two-device CPU job with `DataParallel` and with
    `torch_xla.launch` + `MpDeviceLoader` and compare executions and results per step.
    """

    code = "XLA602"
    name = "removed-data-parallel"
    message = (
        "`{name}` is torch_xla's legacy thread-per-device replication: use one process per device"
    )
    triggers = ("data_parallel",)
    screen = ("data_parallel",)
    hint = "`torch_xla.launch(fn)` with `pl.MpDeviceLoader(loader, torch_xla.device())`"

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def _check(self, node: cst.Name | cst.Attribute) -> None:
        if self.ctx.qualified(node) != DATA_PARALLEL or not reads_import(self.ctx, node):
            return
        call = call_of(self.ctx, node)
        message = self.message.format(name="torch_xla.distributed.data_parallel.DataParallel")
        self.report(node, message, end_node=call or node)
