"""Test-only rules with fixes, for the fixer, edit, writer and `fix` CLI tests.

They are not registered (they live outside `xlalint.rules`): tests pass them explicitly to
`fix_text` / `fix_paths(rules=...)`, or register them for a CLI run with `registered()`.
Each one exercises a different part of the fix engine: a required import, unsafe fixes,
inserted statements, replacements that would not parse, overlapping edits, chains of fixes
and cycles, and fixes that leave an import unused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import libcst as cst

from xlalint import registry
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule


def _method_call(node: cst.Call, name: str) -> bool:
    func = node.func
    return isinstance(func, cst.Attribute) and func.attr.value == name and not node.args


def _named_call(node: cst.Call, name: str) -> bool:
    return isinstance(node.func, cst.Name) and node.func.value == name


class CudaToXla(Rule):
    """
    ## What it does
    Flags `.cuda()` calls.

    ## Why is this bad?
    `.cuda()` hard-codes a CUDA device, which does not exist on a TPU host.

    ## Example
    ```python
    x = x.cuda()
    ```

    ## Use instead
    ```python
    x = x.to(torch_xla.device())
    ```

    ## Fix safety
    Safe: the tensor is moved to the current XLA device.
    """

    code = "XLA901"
    name = "test-cuda-to-xla"
    message = "`.cuda()` hard-codes a CUDA device"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = (".cuda(",)

    def visit_Call(self, node: cst.Call) -> None:
        if not _method_call(node, "cuda"):
            return
        assert isinstance(node.func, cst.Attribute)
        moved = node.with_changes(
            func=node.func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(cst.parse_expression("torch_xla.device()"))],
        )
        self.report(
            node,
            fix=self.fix(
                "Use `.to(torch_xla.device())`", (node, moved), imports=["import torch_xla"]
            ),
        )


class UnsafeNonzero(Rule):
    """
    ## What it does
    Flags `.nonzero()`.

    ## Why is this bad?
    Its output shape depends on the data, so every new shape recompiles the graph.

    ## Example
    ```python
    idx = mask.nonzero()
    ```

    ## Use instead
    ```python
    idx = mask.nonzero_static(size=mask.numel())
    ```

    ## Fix safety
    Unsafe: the result is padded, which callers may not expect.
    """

    code = "XLA902"
    name = "test-unsafe-nonzero"
    message = "`.nonzero()` has a data-dependent shape"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not _method_call(node, "nonzero"):
            return
        assert isinstance(node.func, cst.Attribute)
        receiver = self.ctx.module.code_for_node(node.func.value)
        fixed = f"{receiver}.nonzero_static(size={receiver}.numel())"
        self.report(node, fix=self.fix("Use `nonzero_static`", (node, fixed)))


class MarkStepAfterStep(Rule):
    """
    ## What it does
    Flags `optimizer.step()` statements that no `xm.mark_step()` (or `sync()`) follows.

    ## Why is this bad?
    Without a barrier the traced graph grows across steps.

    ## Example
    ```python
    optimizer.step()
    ```

    ## Use instead
    ```python
    optimizer.step()
    xm.mark_step()
    ```

    ## Fix safety
    Safe: a barrier only cuts the graph.
    """

    code = "XLA903"
    name = "test-mark-step-after-step"
    message = "no `xm.mark_step()` after `optimizer.step()`"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = ("optimizer.step(",)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "optimizer"
            and func.attr.value == "step"
        ):
            return
        ancestors = list(self.ctx.ancestors())
        if len(ancestors) < 3 or not isinstance(ancestors[0], cst.Expr):
            return
        line, block = ancestors[1], ancestors[2]
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return
        body = block.body if isinstance(block, cst.IndentedBlock | cst.Module) else ()
        index = next(i for i, statement in enumerate(body) if statement is line)
        following = body[index + 1] if index + 1 < len(body) else None
        if following is not None and any(
            barrier in self.ctx.module.code_for_node(following)
            for barrier in ("mark_step", "sync()")
        ):
            return
        indent = "".join(
            a.indent if a.indent is not None else self.ctx.module.default_indent
            for a in ancestors
            if isinstance(a, cst.IndentedBlock)
        )
        code = self.ctx.module.code_for_node(node)
        fix = self.fix(
            "Insert `xm.mark_step()`",
            (node, f"{code}\n{indent}xm.mark_step()"),
            imports=["import torch_xla.core.xla_model as xm"],
        )
        self.report(node, fix=fix)


class BrokenFix(Rule):
    """
    ## What it does
    Flags `.broken()` calls.

    ## Why is this bad?
    Test rule whose fix never parses.

    ## Example
    ```python
    x.broken()
    ```

    ## Use instead
    ```python
    x.fixed()
    ```

    ## Fix safety
    Safe, but the replacement is not valid Python, so the parse guard must drop it.
    """

    code = "XLA904"
    name = "test-broken-fix"
    message = "`.broken()` called"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = (".broken(",)
    imports: tuple[str, ...] = ()

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "broken"):
            code = self.ctx.module.code_for_node(node)
            self.report(
                node, fix=self.fix("Break it", (node, code[:-1] + "((("), imports=self.imports)
            )


class BrokenFixWithImport(BrokenFix):
    """
    ## What it does
    Flags `.broken_import()` calls.

    ## Why is this bad?
    Test rule whose fix never parses and needs an import.

    ## Example
    ```python
    x.broken_import()
    ```

    ## Use instead
    ```python
    x.fixed()
    ```

    ## Fix safety
    Safe, but the replacement is not valid Python, so the parse guard must drop it.
    """

    code = "XLA905"
    name = "test-broken-fix-with-import"
    message = "`.broken_import()` called"
    triggers = (".broken_import(",)
    imports = ("import torch_xla",)

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "broken_import"):
            code = self.ctx.module.code_for_node(node)
            self.report(node, fix=self.fix("Break it", (node, code + ")"), imports=self.imports))


class WrapCall(Rule):
    """
    ## What it does
    Flags calls to `legacy_move(...)`.

    ## Why is this bad?
    Test rule whose edit spans the whole call, arguments included, so it overlaps the
    edits of rules that rewrite inside the arguments.

    ## Example
    ```python
    legacy_move(x)
    ```

    ## Use instead
    ```python
    xla_move(x)
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA906"
    name = "test-wrap-call"
    message = "`legacy_move` is deprecated"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = ("legacy_move(",)

    def visit_Call(self, node: cst.Call) -> None:
        if _named_call(node, "legacy_move"):
            args = self.ctx.module.code_for_node(node).partition("(")[2]
            self.report(node, fix=self.fix("Use `xla_move`", (node, f"xla_move({args}")))


class CudaToString(Rule):
    """
    ## What it does
    Flags `.cuda()` calls, like XLA901, with a different fix.

    ## Why is this bad?
    Test rule whose edit is exactly XLA901's span: the two fixes overlap.

    ## Example
    ```python
    x.cuda()
    ```

    ## Use instead
    ```python
    x.to("xla")
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA907"
    name = "test-cuda-to-string"
    message = "`.cuda()` call"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = (".cuda(",)

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "cuda"):
            assert isinstance(node.func, cst.Attribute)
            receiver = self.ctx.module.code_for_node(node.func.value)
            self.report(node, fix=self.fix("Use `.to('xla')`", (node, f'{receiver}.to("xla")')))


class Enabler(Rule):
    """
    ## What it does
    Flags `old_device(x)`.

    ## Why is this bad?
    Test rule whose fix produces `x.cuda()`, which XLA901 then flags: fixing must run
    another round to reach a fixed point.

    ## Example
    ```python
    old_device(x)
    ```

    ## Use instead
    ```python
    x.cuda()
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA908"
    name = "test-enabler"
    message = "`old_device` is deprecated"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = ("old_device(",)

    def visit_Call(self, node: cst.Call) -> None:
        if _named_call(node, "old_device") and len(node.args) == 1:
            arg = self.ctx.module.code_for_node(node.args[0].value)
            self.report(node, fix=self.fix("Use `.cuda()`", (node, f"{arg}.cuda()")))


class Ping(Rule):
    """
    ## What it does
    Flags `ping()`.

    ## Why is this bad?
    Test rule: with XLA910 its fix forms a cycle (`ping()` -> `pong()` -> `ping()`).

    ## Example
    ```python
    ping()
    ```

    ## Use instead
    ```python
    pong()
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA909"
    name = "test-ping"
    message = "`ping()`"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    source, target = "ping", "pong"

    def visit_Call(self, node: cst.Call) -> None:
        if _named_call(node, self.source):
            self.report(node, fix=self.fix("Swap", (node, f"{self.target}()")))


class Pong(Ping):
    """
    ## What it does
    Flags `pong()`.

    ## Why is this bad?
    Test rule: with XLA909 its fix forms a cycle.

    ## Example
    ```python
    pong()
    ```

    ## Use instead
    ```python
    ping()
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA910"
    name = "test-pong"
    source, target = "pong", "ping"


class Grow(Rule):
    """
    ## What it does
    Flags `grow()`.

    ## Why is this bad?
    Test rule whose fix adds another finding every time: fixing must stop after a
    bounded number of rounds.

    ## Example
    ```python
    grow()
    ```

    ## Use instead
    ```python
    [grow()]
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA911"
    name = "test-grow"
    message = "`grow()`"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        if _named_call(node, "grow"):
            self.report(node, fix=self.fix("Grow", (node, "[grow()]")))


class NoFix(Rule):
    """
    ## What it does
    Flags `sync_now()`.

    ## Why is this bad?
    Test rule without a fix.

    ## Example
    ```python
    sync_now()
    ```

    ## Use instead
    Nothing.

    ## Fix safety
    There is no fix.
    """

    code = "XLA912"
    name = "test-no-fix"
    message = "`sync_now()` forces a sync"

    def visit_Call(self, node: cst.Call) -> None:
        if _named_call(node, "sync_now"):
            self.report(node)


class NonLatin(Rule):
    """
    ## What it does
    Flags `arrow()`.

    ## Why is this bad?
    Test rule whose fix inserts a character that latin-1 cannot encode.

    ## Example
    ```python
    arrow()
    ```

    ## Use instead
    ```python
    "\u2192"
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA913"
    name = "test-non-latin"
    message = "`arrow()`"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        if _named_call(node, "arrow"):
            self.report(node, fix=self.fix("Arrow", (node, '"\u2192"')))


class MarkStepToSync(Rule):
    """
    ## What it does
    Flags `xm.mark_step()` (by what the name resolves to, under any import style).

    ## Why is this bad?
    Test rule standing in for XLA604: its fix can leave the `xm` import unused, which the
    fixer must then remove.

    ## Example
    ```python
    xm.mark_step()
    ```

    ## Use instead
    ```python
    torch_xla.sync()
    ```

    ## Fix safety
    Safe.
    """

    code = "XLA914"
    name = "test-mark-step-to-sync"
    message = "`xm.mark_step()` is deprecated"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = ("mark_step",)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualified(node.func) != "torch_xla.core.xla_model.mark_step" or node.args:
            return
        spelled, imports = self.ctx.imports.spell("torch_xla.sync", "import torch_xla")
        self.report(
            node, fix=self.fix("Use `torch_xla.sync()`", (node, f"{spelled}()"), imports=imports)
        )


TEST_RULES: tuple[type[Rule], ...] = (
    CudaToXla,
    UnsafeNonzero,
    MarkStepAfterStep,
    BrokenFix,
    BrokenFixWithImport,
    WrapCall,
    CudaToString,
    Enabler,
    Ping,
    Pong,
    Grow,
    NoFix,
    NonLatin,
    MarkStepToSync,
)


@contextlib.contextmanager
def registered(*rules: type[Rule]) -> Iterator[None]:
    """Make `rules` selectable by code (for CLI runs), for the duration of the block: in the
    rule classes and in the index that selection reads."""
    original, original_catalogue = registry.all_rules, registry.catalogue
    extended = {**original(), **{rule.code: rule for rule in rules}}
    entries = {**original_catalogue(), **{rule.code: registry.RuleInfo.of(rule) for rule in rules}}
    registry.all_rules = lambda: dict(sorted(extended.items()))  # type: ignore[assignment]
    registry.catalogue = lambda: dict(sorted(entries.items()))  # type: ignore[assignment]
    try:
        yield
    finally:
        registry.all_rules, registry.catalogue = original, original_catalogue
