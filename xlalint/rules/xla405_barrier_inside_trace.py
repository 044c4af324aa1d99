from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.barrier_calls import SYNCING_CONTEXTS, Barrier, barrier_kind
from xlalint.rule import Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext

TRACES = frozenset({"torch_xla.debug.profiler.Trace", "torch_xla.debug.profiler.StepTrace"})
TRACE_ME = "torch_xla.debug.profiler.trace_me"


class BarrierInsideTrace(Rule):
    """
    ## What it does
    Flags `torch_xla.sync()`, `xm.mark_step()` and `xm.optimizer_step(..., barrier=True)`
    inside a profiler scope: the body of `with xp.Trace(...)` / `with xp.StepTrace(...)`, or
    a function decorated with `@xp.trace_me(...)`; also calls, from such a scope, of a
    function of the same module that syncs.

    ## Why is this bad?
    `xp.Trace` pushes a scope that names the IR nodes traced inside it. A barrier resets
    that scope stack, and torch_xla refuses to do so while a trace scope is open: the step
    fails with `RuntimeError: Expecting scope to be empty but it is <name>`. End the trace
    before the barrier: the barrier belongs after the `with` block (`xp.StepTrace` syncs
    on exit by itself).

    ## Example
    ```python
    for x, y in loader:
        with xp.Trace("train_step"):
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            torch_xla.sync()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        with xp.Trace("train_step"):
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        torch_xla.sync()
    ```

    ## Fix safety
    There is no fix: moving the barrier out of the block changes what the trace measures,
    and code after it in the block may rely on the step having run. Move it by hand.

    ## Runtime evidence
    Not measured by the harness yet. On torch_xla 2.9.0 with `PJRT_DEVICE=CPU`, both
    `torch_xla.sync()` and `xm.mark_step()` inside `with xp.Trace("t"):` raise
    `RuntimeError: Expecting scope to be empty but it is t.1` (torch_xla's own test suite
    checks the same error). The harness will run the snippet and record the exception.
    """

    code = "XLA405"
    uses = ("loops",)
    name = "barrier-inside-trace"
    message = (
        "Graph barrier inside an `xp.Trace` scope: torch_xla raises "
        "'Expecting scope to be empty'; sync after the trace block"
    )
    hint = "Move the barrier after the `with xp.Trace(...)` block."
    triggers = ("Trace", "trace_me")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # For each enclosing `with` or function: whether it opens a trace scope. A function
        # body runs where it is called, not inside the `with` around its definition.
        self._scopes: list[tuple[cst.CSTNode, bool]] = []
        self._calls_in_trace: list[cst.Call] = []

    def visit_With(self, node: cst.With) -> None:
        calls = [item.item for item in node.items if isinstance(item.item, cst.Call)]
        if self._in_trace():
            for call in calls:
                if self.ctx.qualified(call.func) in SYNCING_CONTEXTS:
                    self.report(call)  # `with torch_xla.step():` syncs when it ends
        traced = any(self.ctx.qualified(call.func) in TRACES for call in calls)
        self._scopes.append((node, traced or self._in_trace()))

    def leave_With(self, node: cst.With) -> None:
        self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        traced = any(
            isinstance(d.decorator, cst.Call) and self.ctx.qualified(d.decorator.func) == TRACE_ME
            for d in node.decorators
        )
        self._scopes.append((node, traced))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def _in_trace(self) -> bool:
        return bool(self._scopes) and self._scopes[-1][1]

    def visit_Call(self, node: cst.Call) -> None:
        if not self._in_trace():
            return
        if barrier_kind(node, self.ctx.imports) == Barrier.SYNC:
            self.report(node)
        else:
            self._calls_in_trace.append(node)

    def leave_Module(self, node: cst.Module) -> None:
        loops = self.ctx.loops
        for call in self._calls_in_trace:
            if any(loops.reaches_barrier(fn) for fn in loops.resolve(call)):
                name = self.ctx.module.code_for_node(call.func)
                self.report(
                    call,
                    f"`{name}()` syncs the graph inside an `xp.Trace` scope: torch_xla raises "
                    "'Expecting scope to be empty'; call it after the trace block",
                )
