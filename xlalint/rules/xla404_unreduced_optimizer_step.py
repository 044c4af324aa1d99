from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.barrier_calls import OPTIMIZER_STEP
from xlalint.analysis.loop_facts import is_optimizer
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext

LAUNCHERS = frozenset(
    {
        "torch_xla.launch",
        "torch_xla.torch_xla.launch",
        "torch_xla.distributed.xla_multiprocessing.spawn",
    }
)
# Wrappers and optimizers that reduce gradients themselves, and the explicit reduction.
_REDUCES_ITSELF = re.compile(
    r"(DistributedDataParallel|FullyShardedDataParallel|ZeroRedundancyOptimizer)$"
    r"|^torch_xla\.distributed\.(fsdp|spmd)\.|^torch_xla\.core\.xla_model\.reduce_gradients$"
)
_ALL_REDUCE = "torch_xla.core.xla_model.all_reduce"


class UnreducedOptimizerStep(Rule):
    """
    ## What it does
    Flags `optimizer.step()` in multi-device XLA code: a file that starts one process per
    device with `torch_xla.launch(...)` or `xmp.spawn(...)`. Not reported when the file
    reduces gradients another way: DDP or FSDP wrappers, SPMD sharding,
    `ZeroRedundancyOptimizer`, `xm.reduce_gradients(optimizer)` or an `xm.all_reduce` of the
    gradients, or accelerate (its prepared optimizer reduces them).

    ## Why is this bad?
    Each process trains its own replica on its own shard of the data. `optimizer.step()`
    applies the local gradients only, so the replicas silently drift apart: the run trains
    N different models, each on 1/N of the data. `xm.optimizer_step(optimizer)` all-reduces
    the gradients across devices first, then steps.

    ## Example
    ```python
    def _mp_fn(index):
        for x, y in loader:
            loss_fn(model(x), y).backward()
            optimizer.step()


    torch_xla.launch(_mp_fn)
    ```

    ## Use instead
    ```python
    import torch_xla.core.xla_model as xm


    def _mp_fn(index):
        for x, y in loader:
            loss_fn(model(x), y).backward()
            xm.optimizer_step(optimizer)


    torch_xla.launch(_mp_fn)
    ```

    ## Fix safety
    Safe. `optimizer.step()` becomes `xm.optimizer_step(optimizer)` (in the file's spelling
    of torch_xla's xla_model, with the import added if needed), which averages gradients
    across the replicas before the same step; with one device it is the same step. Calls
    with arguments (`optimizer.step(closure)`) are reported without a fix.

    ## Runtime evidence
    The harness runs on one device, where the two steps are the same: the runtime case
    `fixtures/XLA404/runtime_replica_step.py` declares no cost and proves that the fixed
    step runs with identical results and costs. The replicas' divergence (parameters that
    differ across processes with `optimizer.step()`) needs several devices.
    """

    code = "XLA404"
    name = "unreduced-optimizer-step"
    message = (
        "`optimizer.step()` in multi-device XLA code applies only this replica's gradients: "
        "use `xm.optimizer_step(optimizer)` to all-reduce them first"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("launch", "spawn")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._steps: list[cst.Call] = []
        self._launches = False
        self._reduces = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "step":
            if is_optimizer(func.value) and not self.ctx.under_cuda_guard:
                self._steps.append(node)
            return
        qualified = self.ctx.qualified(func) if isinstance(func, cst.Name | cst.Attribute) else None
        if qualified is None:
            return
        if qualified in LAUNCHERS:
            self._launches = True
        elif self._reduces_gradients(qualified, node):
            self._reduces = True

    def _reduces_gradients(self, qualified: str, call: cst.Call) -> bool:
        if _REDUCES_ITSELF.search(qualified) or qualified.startswith("accelerate."):
            return True
        return qualified == _ALL_REDUCE and "grad" in self.ctx.module.code_for_node(call)

    def leave_Module(self, node: cst.Module) -> None:
        if not self._launches or self._reduces or self.ctx.imports.binds("accelerate"):
            return
        for call in self._steps:
            self.report(call, fix=self._optimizer_step(call))

    def _optimizer_step(self, call: cst.Call) -> NodeFix | None:
        if call.args:
            return None
        assert isinstance(call.func, cst.Attribute)
        spelling, imports = self.ctx.imports.spell(
            OPTIMIZER_STEP, "import torch_xla.core.xla_model as xm", self.ctx.names_in_use
        )
        optimizer = self.ctx.module.code_for_node(call.func.value)
        return self.fix(
            f"Use `{spelling}({optimizer})`",
            (call, f"{spelling}({optimizer})"),
            imports=imports,
        )
