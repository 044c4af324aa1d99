"""Bases of the graph-barrier rules (family 4): they judge loops once the file is walked.

Whether a loop reaches a barrier can depend on a function defined after it, so these rules
decide in `leave_Module`, asking `ctx.loops` (analysis/step_loops.py), which the context
fills with every loop and function during the walk. Not a rule module: it defines no rule
code.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.barrier_calls import MARK_STEP
from xlalint.analysis.devices import xla_device_source
from xlalint.analysis.loaders import MP_DEVICE_LOADER
from xlalint.analysis.loop_facts import LoopSite
from xlalint.analysis.statements import always_exits, last_line_end
from xlalint.analysis.xla_api import BARRIER
from xlalint.rule import NodeFix, Rule
from xlalint.walk import names_under

if TYPE_CHECKING:
    from xlalint.analysis.step_loops import StepLoop
    from xlalint.context import FileContext


# A module of the project written against torch, named for it: `optimizer_torch`,
# `torch_utils`, `policy.torch` (a dotted path with such a part, not the last: the name
# imported may be anything).
_TORCH_MODULE = re.compile(r"(^|\.)(\w+_)?torch(_\w+)?\.")


def _imports_torch_by_call(module: cst.Module) -> bool:
    """A module-level name bound to torch by a call that imports it by name, as libraries
    with optional dependencies write it: `torch = try_import("torch")`,
    `torch = importlib.import_module("torch")`, `torch, _ = optional_import("torch")`,
    `nn = optional_import("torch.nn")[0]`."""
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:  # type: ignore[attr-defined]
            if type(small) is not cst.Assign:
                continue
            value = small.value  # type: ignore[attr-defined]
            if type(value) is cst.Subscript:
                value = value.value  # type: ignore[attr-defined]
            if type(value) is not cst.Call or not value.args:  # type: ignore[attr-defined]
                continue
            first = value.args[0]  # type: ignore[attr-defined]
            if first.keyword is not None or type(first.value) is not cst.SimpleString:
                continue
            name = first.value.evaluated_value
            if isinstance(name, str) and name.split(".", 1)[0] == "torch":
                return True
    return False


class LoopRule(Rule):
    """A rule that judges the file's loops after the walk, asking `ctx.loops`."""

    screen = ("<For>", "<AsyncFor>", "<While>")  # findings sit on loops
    uses = ("loops",)

    def torch_code(self) -> bool:
        """The file uses torch (a CUDA script on its way to XLA counts), itself or through
        its project's torch modules: `from mlagents.trainers.ppo.optimizer_torch import
        TorchPPOOptimizer` in a trainer that hands each minibatch to that optimizer's
        `update` (a project that bans direct torch imports outside one module)."""
        imports = self.ctx.imports
        return (
            imports.binds("torch")
            or imports.binds("torch_xla")
            or any(_TORCH_MODULE.search(target) for target in imports.bindings.values())
            or _imports_torch_by_call(self.ctx.module)
        )

    def xla_step_loops(self) -> list[StepLoop]:
        """The step loops an XLA host may run: not those under a CUDA guard, a test for
        another accelerator or framework (`elif backend_name == "paddle":`) or a failed XLA
        test, nor those in a function this file calls only from such branches. No XLA
        graph grows there, whatever they train or sample."""
        return [
            loop
            for loop in self.ctx.loops.step_loops()
            if not self.ctx.never_runs_on_xla(loop.site.node)
        ]

    @staticmethod
    def header(site: LoopSite) -> tuple[cst.CSTNode, cst.CSTNode]:
        """Where a loop is reported: from `for`/`while` to the end of its iterable/test."""
        node = site.node
        return node, node.iter if isinstance(node, cst.For) else node.test

    def loader_fix(self, site: LoopSite) -> NodeFix | None:
        """Iterate `pl.MpDeviceLoader(loader, torch_xla.device())` where the loop iterates a
        plain DataLoader: batches are uploaded in the background and the loader syncs once
        per batch. Nothing where torch_xla is imported only if installed."""
        loader = self.ctx.loops.plain_dataloader(site)
        if loader is None:
            return None
        module = self.ctx.module
        wrapper, imports = self.ctx.imports.spell(
            MP_DEVICE_LOADER,
            "import torch_xla.distributed.parallel_loader as pl",
            self.ctx.names_in_use,
        )
        device, device_imports = xla_device_source(self.ctx)
        source = module.code_for_node(loader)
        wrapped = f"{wrapper}({source}, {device})"
        guards = self.ctx.import_guards
        if not guards.optional("torch_xla"):
            return self.fix(
                f"Iterate `{wrapped}`",
                (loader, wrapped),
                imports=(*device_imports, *imports),
                moves_to_xla=True,
            )
        # torch_xla is optional here: wrap only where the guard found it, and import the
        # wrapper inside that guard, so that the loop still runs where it is not installed.
        guard = guards.try_binding("torch_xla")
        flag = guard.flag if guard is not None else None
        if guard is None or flag is None or "torch_xla" not in self.ctx.imports.bindings:
            return None
        edits: list[tuple[cst.CSTNode, cst.CSTNode | str]] = []
        added = (*imports, *device_imports)  # the device's: `xm` before torch_xla 2.3
        if added:
            for spelled, needs in ((wrapper, imports), (device, device_imports)):
                if needs and spelled.split(".", 1)[0] in names_under(module):
                    return None  # the name means something else here
            line, indent = guard.line, guard.indent
            end = line.trailing_whitespace
            lines = "".join(f"{indent}{statement}\n" for statement in sorted(added))
            edits.append((end, f"{module.code_for_node(end)}{lines}"))
        wrapped = f"{wrapped} if {flag} else {source}"
        return self.fix(f"Iterate `{wrapped}`", *edits, (loader, wrapped), moves_to_xla=True)

    def moved_batches_fix(self, site: LoopSite) -> NodeFix | None:
        """`loader_fix` where the loop moves each batch to a device itself: batches then
        arrive where the loop moved them anyway, and each one is a barrier. What a person
        porting a loop without a barrier writes (XLA401, XLA402, XLA406)."""
        return self.loader_fix(site) if self.ctx.loops.moves_batches(site) else None


class BarrierLoopRule(LoopRule):
    """A loop rule whose fix appends a barrier to the loop body."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._uses_mark_step = False

    def visit_Call(self, node: cst.Call) -> None:
        if not self._uses_mark_step and type(node.func) in (cst.Attribute, cst.Name):
            self._uses_mark_step = self.ctx.qualified(node.func) == MARK_STEP

    def barrier_fix(self, site: LoopSite) -> NodeFix | None:
        """Where the loop iterates a plain DataLoader and moves each batch to a device
        itself, wrap the loader in `MpDeviceLoader`, whose every batch is a barrier: what a
        person porting the loop writes, and batches arrive where the loop moved them anyway
        (see `loader_fix`). Otherwise append the barrier as the last statement of
        the loop body, at the body's
        indentation: `torch_xla.sync()` in the file's spelling, or `xm.mark_step()` where the
        file already calls it. No fix where it could change what the code does or would
        never run: a one-line body, a loop with `else:`, a body that ends by leaving the
        pass (`return`/`break`/`continue`/`raise`)."""
        if (wrap := self.moved_batches_fix(site)) is not None:
            return wrap
        loop = site.node
        body = loop.body
        if not isinstance(body, cst.IndentedBlock) or not body.body or loop.orelse is not None:
            return None
        last = body.body[-1]
        if always_exits(last):
            return None
        return self.append_barrier(last, site.body_indent, body, "the loop body")

    def append_barrier(
        self, after: cst.BaseStatement, indent: str, body: cst.IndentedBlock, where: str
    ) -> NodeFix | None:
        """A fix that writes the barrier on a line of its own after the statement `after`,
        at `indent`: `torch_xla.sync()` in the file's spelling, `xm.mark_step()` where the
        file already calls it, behind the file's flag (`if XLA_AVAILABLE:`) where it
        imports torch_xla only if installed."""
        end = last_line_end(after)
        if end is None:
            return None
        if self._uses_mark_step:
            spelling, imports = self.ctx.imports.spell(
                MARK_STEP, "import torch_xla.core.xla_model as xm", self.ctx.names_in_use
            )
        else:
            spelling, imports = self.ctx.spell_api(BARRIER)
        module = self.ctx.module
        barrier = f"{indent}{spelling}()"
        guards = self.ctx.import_guards
        if imports and guards.optional("torch_xla"):
            return None  # the import would have to be guarded like the file's own
        if not imports:
            guard = guards.binding(spelling.split(".", 1)[0])
            flag = guard.flag if guard is not None else None
            if guard is not None and flag is None:
                return None  # torch_xla is optional here, and how to test for it is unclear
            if flag is not None:
                # `if XLA_AVAILABLE: xm.mark_step()`, as the file guards its import.
                unit = body.indent if body.indent is not None else module.default_indent
                barrier = f"{indent}if {flag}:\n{indent}{unit}{spelling}()"
        description = f"Append `{spelling}()` to {where}"
        if not module.has_trailing_newline and end is last_line_end(module.body[-1]):
            # The file ends on this line, without a newline: insert before the line's end.
            tail: cst.CSTNode = end.comment or end.whitespace
            new = f"{module.code_for_node(tail)}\n{barrier}"
            return self.fix(description, (tail, new), imports=imports)
        new = f"{module.code_for_node(end)}{barrier}\n"
        return self.fix(description, (end, new), imports=imports)
