from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.hotness import Site
from xlalint.analysis.loop_values import Loop, TensorReads
from xlalint.rule import Rule
from xlalint.walk import children

if TYPE_CHECKING:
    from xlalint.context import FileContext

# What a `for` may iterate around its `range(...)`.
_WRAPPERS = frozenset({"enumerate", "reversed", "tqdm", "list", "iter", "zip"})


@dataclass(frozen=True)
class _Candidate:
    loop: Loop | None  # None: a comprehension, always traced into the surrounding graph
    node: cst.CSTNode
    site: Site


class DataDependentTripCount(Rule):
    """
    ## What it does
    Flags loops whose number of passes comes from a tensor's value, in code that runs every
    step: `for _ in range(int(t))`, `range(t.item())`, `range(t)`, `range(n)` after
    `n = int(lengths.max())` or `lens = lengths.tolist()`, comprehensions over such ranges,
    and `while i < n:` with `n` read from a tensor earlier, when the loop body computes on
    tensors. Loops that run the device on every pass (they reach a barrier, iterate a
    loader that syncs, read a tensor on the host, train or sample) are not flagged: each
    pass is its own graph there, and the count only says how many run. Nor are loops that
    do Python arithmetic only (`while scale * 2 < limit:` after `scale = alpha.item()`).
    Nor is `range(n)` of a per-step function's parameter that the function also hands a
    tensor's shape as a dimension (`torch.zeros(B, n_sampling_times, K, L)`, `x.view(b, n,
    -1)`, `x.repeat(1, n, 1)`): a count handed along with the batch, a Python int. Nor is a
    count capped by a small literal (`num_gen_perms = min(3, max_perms)`, a cap of at most
    8): it takes a fixed handful of values, each graph compiled once, whatever the data.

    The read itself is reported by the host-sync rules, not here: XLA101 owns `.item()`,
    `int(t)` and `float(t)`, XLA107 a tensor passed to `range()` (its hidden `__index__`
    read), and XLA103 a `while` test on a tensor (a read on every pass). This rule owns the
    trip count, which costs a compile per distinct count even when the value is read once,
    outside the step.

    ## Why is this bad?
    XLA traces Python loops by running them: a loop inside the step unrolls into the graph,
    pass by pass. When the count is data, every distinct count is a different graph, and
    each one compiles before it runs; reading the count also waits for the device.

    ## Example
    ```python
    def forward(self, x, lengths):
        steps = int(lengths.max())
        for _ in range(steps):
            x = self.cell(x)
        return x
    ```

    ## Use instead
    Run a fixed number of passes and mask the ones that are not needed, so that every step
    traces the same graph:
    ```python
    def forward(self, x, lengths):
        for step in range(self.max_steps):
            active = (step < lengths).unsqueeze(-1)
            x = torch.where(active, self.cell(x), x)
        return x
    ```
    Or keep the loop on the device: `fori_loop`/`while_loop` from
    `torch_xla.experimental.fori_loop` compile the body once, with the count as data.

    ## Fix safety
    No fix: the static bound and the mask depend on the model, so this rule reports with a
    hint only.

    ## Runtime evidence
    Not measured by the harness yet. Measured by hand while writing this rule on the XLA CPU
    device: 5 steps whose inner loop ran 2, 3, 4, 2, 3 times compiled 3 graphs (one per
    distinct count) where a fixed count compiles 1. The harness will run a step with
    `range(int(t))` for varying `t` against the fixed-count, masked version and compare
    uncached compiles, expecting one per distinct count.
    """

    code = "XLA209"
    uses = ("loops", "loop_values")
    name = "data-dependent-trip-count"
    message = (
        "The number of passes of this loop is read from a tensor: each distinct count "
        "unrolls into a new graph, compiled anew"
    )
    hint = "Loop a fixed number of times and mask the extra passes with torch.where"
    hot_only = True
    needs_torch = True
    triggers = ("range", "while")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.reads = TensorReads(ctx.kinds, ctx.imports)
        self.values = ctx.loop_values  # which loops read the host every pass
        self._candidates: list[_Candidate] = []
        self._candidate_loops: set[Loop] = set()
        # Candidate loops whose body computes on tensors: only those unroll into a graph
        # (`while scale * 2 < limit: scale *= 2` after `scale = alpha.item()` builds none).
        self._tensor_work: set[Loop] = set()

    # -- walk ---------------------------------------------------------------------------------
    # The context feeds `self.values` (functions, loops, their bodies, calls) around these.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.reads.push_function()

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.reads.pop_function()

    def visit_For(self, node: cst.For) -> None:
        if (call := self._data_dependent_range(node.iter)) is not None:
            self._candidates.append(_Candidate(node, call, self.ctx.site()))
            self._candidate_loops.add(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._note_tensor_work(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._note_tensor_work(node)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if (call := self._data_dependent_range(node.iter)) is not None:
            self._candidates.append(_Candidate(None, call, self.ctx.site()))

    def visit_While(self, node: cst.While) -> None:
        test = node.test
        # A tensor read in the test itself happens on every pass (XLA101/XLA103 report it),
        # and that execution separates the passes: the count then makes no new graph.
        if self._reads_named_value(test) and not self._reads_directly(test):
            self._candidates.append(_Candidate(node, test, self.ctx.site()))
            self._candidate_loops.add(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        self.reads.bind([t.target for t in node.targets], node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.reads.bind([node.target], node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.reads.bind_augmented(node)

    def leave_Module(self, node: cst.Module) -> None:
        for candidate in self._candidates:
            if candidate.loop is not None and candidate.loop not in self._tensor_work:
                continue
            if candidate.loop is not None and self.values.executes_every_pass(
                candidate.loop, self.ctx.loops
            ):
                continue
            self.report(candidate.node, self.message, site=candidate.site)

    # -- helpers ------------------------------------------------------------------------------
    def _note_tensor_work(self, node: cst.BaseExpression) -> None:
        """A tensor computed, or handed to a call (`x = self.cell(x)`), in a candidate's pass."""
        walked = [loop for loop in self.values.passes_walked() if loop in self._candidate_loops]
        if not walked:
            return
        if self.ctx.is_tensor(node) or (
            isinstance(node, cst.Call) and any(self.ctx.is_tensor(a.value) for a in node.args)
        ):
            self._tensor_work.update(walked)

    def _data_dependent_range(self, iterable: cst.BaseExpression) -> cst.Call | None:
        """The `range(...)` call a loop iterates, if a bound of it is read from a tensor."""
        if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
            return None
        name = iterable.func.value
        if self.ctx.kinds.lookup(name) is not None or self.ctx.qualified(iterable.func):
            return None  # a local or imported function of that name
        if name == "range":
            positional = [a.value for a in iterable.args if a.keyword is None and not a.star]
            return iterable if any(self.reads.reads(arg) for arg in positional) else None
        if name in _WRAPPERS:
            for arg in iterable.args:
                if (found := self._data_dependent_range(arg.value)) is not None:
                    return found
        return None

    def _reads_named_value(self, test: cst.BaseExpression) -> bool:
        return any(
            isinstance(n, cst.Name) and self.reads.is_read_name(n.value) for n in _walk(test)
        )

    def _reads_directly(self, test: cst.BaseExpression) -> bool:
        return any(
            isinstance(n, cst.BaseExpression) and self.reads.direct_read(n) for n in _walk(test)
        )


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes of a small expression (a `while` test), lambdas left out."""
    found: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        if not isinstance(current, cst.Lambda):
            stack.extend(children(current))
    return found
