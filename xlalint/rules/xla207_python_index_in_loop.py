from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.hotness import Site
from xlalint.analysis.loop_values import COLLECTION_NAME, Loop, LoopValues
from xlalint.context import Kind
from xlalint.rule import Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext

# Timestep schedules (`self.scheduler.timesteps`, set up with `device=`) are device tensors
# that the tensor-kind analysis calls iterables (iterating one yields tensors). Not
# `sigmas`: schedulers often keep those on the CPU, where indexing compiles nothing.
_SCHEDULE_NAME = re.compile(r"timesteps$", re.IGNORECASE)


@dataclass(frozen=True)
class _Candidate:
    node: cst.Subscript
    loops: tuple[Loop, ...]
    index: str
    site: Site


class PythonIndexInLoop(Rule):
    """
    ## What it does
    Flags a tensor indexed or sliced with a Python int that changes on every pass of a
    loop that runs the device on every pass: `x[i]`, `x[:, i]`, `x[i : i + bs]`,
    `x[i + 1] = v`, where `i` is the index of `for i in range(...)` or
    `for i, _ in enumerate(...)`, an int computed from it (`j = i + 1`), or a counter the
    pass steps (`seq_len += 1`, different on every pass, before its increment too). Tensors
    made by factories under `with self.device:` live on that device. A loop runs the
    device on every pass when it reaches a barrier (`torch_xla.sync()`, `xm.mark_step()`),
    iterates a loader that syncs, or is the loop that trains or samples (it needs a
    barrier; XLA401 and XLA402 ask for it). A loop nested in such a loop without a barrier
    of its own is a micro-step, unrolled into each pass of the outer one. A host read in the
    pass (`.item()`, XLA101's) does not count: it executes only the value it reads, and an
    index that does not feed it stays in the one graph of the step.

    Not flagged: lists, tuples, dicts, `nn.ModuleList`s (`self.layers[i]`) and numpy arrays;
    results of `x.split()`/`x.chunk()`/`x.unbind()` and names that say they hold several
    tensors (`all_hidden_states`, `*_list`, `*_tuple`) or are annotated as a `list`/`tuple`;
    `scheduler.sigmas` (schedulers keep them on the CPU); constant indexes (`x[:, 0]`);
    tensor indexes (`x[idx]`, advanced indexing on the device); and loops traced into a
    single graph (a loop inside `forward` without a barrier unrolls the same way every step
    and compiles once).

    ## Why is this bad?
    XLA records a Python int index as a constant of the traced graph. When every pass of
    the loop ends in its own execution, a different index is a different graph, and each
    one is compiled before it runs: one compile per value of `i`, instead of one in all.

    ## Example
    ```python
    noise_levels = torch.linspace(1.0, 0.0, steps, device=device)
    for i in range(steps):
        x = model(x, noise_levels[i])
        torch_xla.sync()
    ```

    ## Use instead
    Pass the index as data, so that every pass runs the same graph:
    ```python
    noise_levels = torch.linspace(1.0, 0.0, steps, device=device)
    for i in range(steps):
        index = torch.tensor([i]).to(device)
        x = model(x, noise_levels.index_select(0, index))
        torch_xla.sync()
    ```
    A counter kept on the device (`index += 1`) works as well. Writes follow the same rule:
    `x.index_copy_(0, index, v)` instead of `x[i] = v`.

    ## Fix safety
    No fix: the index tensor has to be made and kept somewhere, and `index_select` keeps
    the indexed dimension (`x[i]` drops it), so this rule reports with a hint only.

    ## Runtime evidence
    5 steps on the XLA CPU device (XLA_FACTS.md): `X[i]` with `i` a changing Python int
    costs 5 uncached compiles; `index_select` with an index tensor on the device costs 1
    uncached and 4 cached compiles, with identical results. Measured by hand while writing
    this rule: the same `X[i]` loop without a barrier inside, traced into each step's graph,
    compiles once in 5 steps, which is why such loops are not flagged; with a `.item()` of
    `X[i] * 2` in each pass, 5 compiles; with a `.item()` of an unrelated value, `X[i]` is
    compiled once, at the end.
    """

    code = "XLA207"
    name = "python-index-in-loop"
    message = (
        "`{index}` is a Python int that changes every pass: indexing a tensor with it "
        "compiles a new graph for each value"
    )
    hint = (
        "Index with a device tensor: `x.index_select(dim, idx)` with "
        "`idx = torch.tensor([i]).to(device)`, or keep the index on the device"
    )
    hot_only = True
    needs_torch = True
    # The pass's index comes from `range`/`trange`/`enumerate`, a counter (`step += 1`), or
    # a host list of ints (`zip(ts[:-1], ts[1:])`, `t.tolist()`).
    triggers = ("range", "enumerate", "+=", "-=", "zip", "tolist")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.values = LoopValues(ctx.kinds)
        self._candidates: list[_Candidate] = []

    # -- walk ---------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.ctx.loops.register_function(node)
        self.values.push_function(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.values.pop_function()

    def visit_For(self, node: cst.For) -> None:
        self.ctx.loops.register_loop(node, self.ctx)
        self.values.enter_loop(node)

    def leave_For(self, node: cst.For) -> None:
        self.values.leave_loop(node)

    def visit_While(self, node: cst.While) -> None:
        self.ctx.loops.register_loop(node, self.ctx)
        self.values.enter_loop(node)

    def leave_While(self, node: cst.While) -> None:
        self.values.leave_loop(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        self.values.bind([t.target for t in node.targets], node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.values.bind([node.target], node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.values.bind_augmented(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.values.in_loop:
            return
        loops: frozenset[Loop] = frozenset()
        index: cst.BaseExpression | None = None
        for element in node.slice:
            part = element.slice
            bounds = (
                [part.lower, part.upper, part.step] if isinstance(part, cst.Slice) else [part.value]
            )
            for bound in bounds:
                if bound is None:
                    continue
                found = self.values.int_loops(bound)
                if found:
                    loops |= found
                    index = index or bound
        if index is None or not self._indexes_a_tensor(node):
            return
        self._candidates.append(
            _Candidate(
                node,
                tuple(loops),
                self.ctx.module.code_for_node(index),
                self.ctx.site(),
            )
        )

    def leave_Module(self, node: cst.Module) -> None:
        for candidate in self._candidates:
            if any(
                self.values.executes_every_pass(loop, self.ctx.loops) for loop in candidate.loops
            ):
                self.report(
                    candidate.node, self.message.format(index=candidate.index), site=candidate.site
                )

    # -- helpers ------------------------------------------------------------------------------
    def _indexes_a_tensor(self, node: cst.Subscript) -> bool:
        """The indexed value is a tensor, and not a tuple or list of them."""
        base = node.value
        kind = self.ctx.kind(base)
        name = _last_name(base)
        if kind is Kind.ITERABLE:
            return name is not None and _SCHEDULE_NAME.search(name) is not None
        if kind is not Kind.TENSOR or (name is not None and COLLECTION_NAME.search(name)):
            return False
        if isinstance(base, cst.Name):
            return not self.values.is_sequence(base.value)
        if isinstance(base, cst.Call):
            return not self.values.makes_sequence(base)  # `x.view(b, -1)[i]`, not `x.chunk(4)[i]`
        if isinstance(base, cst.Attribute):
            # `self.pe[i]` was assigned a tensor in this class; `out.hidden_states[i]` is an
            # attribute of a model output, which may be a tuple: only an index a tuple
            # cannot take (`out.logits[:, i]`) says it is a tensor.
            owner = base.value
            return (isinstance(owner, cst.Name) and owner.value == "self") or _array_only(node)
        return _array_only(node)


def _last_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _array_only(node: cst.Subscript) -> bool:
    """An index only arrays take: several dimensions (`x[:, i]`), `...` or `None`."""
    if len(node.slice) > 1:
        return True
    part = node.slice[0].slice
    return isinstance(part, cst.Index) and (
        isinstance(part.value, cst.Ellipsis)
        or (isinstance(part.value, cst.Name) and part.value.value == "None")
    )
