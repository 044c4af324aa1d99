from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import Signature, bind
from xlalint.analysis.clipping import clipping_test, unconditional_factors
from xlalint.analysis.imports import ImportTable
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule

# Functions with an `error_if_nonfinite` flag, by the position of that flag.
_NONFINITE_CHECKS = {
    f"torch.nn.utils.{module}{function}": position
    for module in ("", "clip_grad.")
    for function, position in (
        ("clip_grad_norm_", 3),
        ("clip_grad_norm", 3),
        ("get_total_norm", 2),
    )
}


# Lightning Fabric's `clip_gradients(module, optimizer, clip_val=None, max_norm=None,
# norm_type=2.0, error_if_nonfinite=True)`: with `max_norm` it hands its own default, True,
# on to `torch.nn.utils.clip_grad_norm_` (the XLA strategies do not override it).
_FABRIC_RECEIVER = re.compile(r"fabric", re.I)
_FABRIC_CLIP_PARAMETERS = (
    "module", "optimizer", "clip_val", "max_norm", "norm_type", "error_if_nonfinite"
)  # fmt: skip
_FABRIC_CLIP = Signature(_FABRIC_CLIP_PARAMETERS, frozenset(_FABRIC_CLIP_PARAMETERS))


class ClipGradNormSync(Rule):
    """
    ## What it does
    Flags gradient-norm clipping that reads the norm on the host every step:
    `torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)` (under any import
    style), Lightning Fabric's `fabric.clip_gradients(model, optimizer, max_norm=...)`
    (a receiver named for Fabric: `fabric`, `self.fabric`), whose own `error_if_nonfinite`
    defaults to True and reaches `clip_grad_norm_` (not with `error_if_nonfinite=False`, not
    by value with `clip_val=`, not a LightningModule's `self.clip_gradients(...)`, which has
    no such flag), and hand-written clipping that tests the coefficient with a Python `if`:
    `if clip_coef < 1:` followed by scaling the gradients. Plain `clip_grad_norm_(params,
    max_norm)` is not flagged: in torch 2.9 it scales by a clamped coefficient on the
    device and never syncs.

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Checking the norm
    for `inf`/`nan`, or branching on the clip coefficient in Python, needs the norm's value
    on the host: the pending graph (the whole forward and backward pass) is compiled and
    executed right there, before the optimizer step, and the value is copied back. That is
    one extra execution and one device-to-host transfer every step.

    ## Example
    ```python
    total_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for p in params:
            p.grad.detach().mul_(clip_coef)
    ```

    ## Use instead
    Keep the test on the device and always scale, as PyTorch/XLA's own `clip_grad_norm_`
    does: where the coefficient is not below 1, the gradients are multiplied by 1.0, which
    changes nothing:
    ```python
    total_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
    clip_coef = max_norm / (total_norm + 1e-6)
    for p in params:
        p.grad.detach().mul_(torch.where(clip_coef < 1, clip_coef, 1.0))
    ```
    Or call `torch.nn.utils.clip_grad_norm_(params, max_norm)` without
    `error_if_nonfinite=True`, and check for non-finite norms every N steps or in
    `xm.add_step_closure(...)`.

    ## Fix safety
    Safe, for hand-written clipping only: `if COND:` is removed, its body dedented, and
    each scale factor `F` in it becomes `torch.where(COND, F, 1.0)`, the form of the
    PyTorch/XLA troubleshooting guide (which multiplies by `torch.where(clip_coef < 1,
    clip_coef, torch.tensor(1., device=device))`). Where `COND` held, the gradients get
    `F` as before; elsewhere they are multiplied (or divided) by 1.0, which leaves every
    value, `inf` and `nan` included, as it was. The Python scalar `1.0` keeps `F`'s dtype
    and device (a float32 `torch.tensor(1.)` would promote a bfloat16 coefficient), and
    `torch.clamp(clip_coef, max=1.0)` is not used because it turns a `nan` coefficient
    into `nan` gradients where the `if` skipped them. Every comparison form is covered
    (`clip_coef < 1`, `total_norm > max_norm`, ...), because `COND` is kept verbatim.

    The fix is offered only where the result is exactly equivalent: the `if` has no
    `else`; its body only scales gradients in place (`g.mul_(F)`, `g.div_(F)`, `g *= F`,
    `g /= F`, `torch._foreach_mul_(grads, F)`, `torch._foreach_div_(grads, F)`), in `for`
    loops and under `if p.grad is not None:` guards; `COND` and each `F` have no side
    effects (names, attributes, numbers, arithmetic), `F` is a tensor, and `COND` reads
    no gradient and no loop variable of the body. The body now runs on every step: a loop
    that would fail (a `None` gradient without a guard) fails on every step instead of only
    on steps that clip, and a loop over a one-shot iterator consumes it every step.
    `error_if_nonfinite=True` is reported without a fix: dropping it would stop the error
    on `inf`/`nan`.

    Random numbers drawn on the device are the same values after the fix: an execution
    forced by a host read does not move torch_xla's device generator (only a barrier does),
    so removing the read leaves every draw as it was (measured by the `device_randomness`
    runtime case: identical outputs).

    ## Runtime evidence
    5 steps on the XLA CPU device (case `hand_written_clipping`): hand-written clipping with `if
    clip_coef < 1:` costs {hand_written_clipping.before.executions} executions and
    {hand_written_clipping.before.cpu_fallbacks} `aten::_local_scalar_dense` calls; the
    `torch.where` version costs {hand_written_clipping.after.executions} executions and
    {hand_written_clipping.after.cpu_fallbacks} such calls, and the results are
    {hand_written_clipping.outputs}. Measured by hand while writing this rule, not by a runtime
    case: `clip_grad_norm_` with default arguments adds no transfer; with
    `error_if_nonfinite=True` it reads the norm on the host every step.
    """

    code = "XLA105"
    name = "clip-grad-norm-sync"
    message = "{what} reads the gradient norm on the host every step, forcing a graph execution"
    hint = "Clamp the coefficient with torch.where and always scale; check non-finite norms rarely"
    fabric_hint = (
        "Pass `error_if_nonfinite=False` and check for non-finite norms rarely (the returned "
        "norm, every N steps)"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    hot_only = True
    # Hand-written clipping scales `.grad`s; the API calls name `clip_grad_norm` or
    # `get_total_norm` in the call or its import.
    triggers = ("grad", "get_total_norm")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualified(node.func)
        position = _NONFINITE_CHECKS.get(qualified or "")
        if position is None:
            if (flag := _fabric_norm_check(node)) is not None:
                what = (
                    "`fabric.clip_gradients(max_norm=...)` (`error_if_nonfinite=True` by default)"
                    if flag == "default"
                    else "`fabric.clip_gradients(error_if_nonfinite=True)`"
                )
                self.report(node, self.message.format(what=what), hint=self.fabric_hint)
            return
        function = (qualified or "").rsplit(".", 1)[-1]
        for index, arg in enumerate(node.args):
            named = arg.keyword is not None and arg.keyword.value == "error_if_nonfinite"
            positional = arg.keyword is None and not arg.star and index == position
            if (named or positional) and _is_true(arg.value):
                self.report(
                    node, self.message.format(what=f"`{function}(error_if_nonfinite=True)`")
                )
                return

    def visit_If(self, node: cst.If) -> None:
        test = clipping_test(node, self.ctx.kinds)
        if test is not None:
            self.report(
                test,
                self.message.format(what="Clipping with a Python `if`"),
                fix=self._unconditional_fix(node, test),
            )

    def _unconditional_fix(self, node: cst.If, test: cst.Comparison) -> NodeFix | None:
        """`if COND: g.mul_(F)` -> `g.mul_(torch.where(COND, F, 1.0))`, the `if` removed and
        its body dedented (see `unconditional_factors` for when that is exact)."""
        if not isinstance(self.ctx.parent, cst.IndentedBlock | cst.Module):
            return None  # an `elif`
        factors = unconditional_factors(node, self.ctx.kinds)
        if factors is None:
            return None
        assert isinstance(node.body, cst.IndentedBlock)
        module = self.ctx.module
        top_level = ImportTable()  # not imports local to some function seen so far
        top_level.add_top_level(module)
        where, imports = top_level.spell("torch.where", "import torch", self.ctx.names_in_use)
        condition = module.code_for_node(test)
        selected = {
            id(factor): cst.parse_expression(
                f"{where}({condition}, {module.code_for_node(factor)}, 1.0)"
            )
            for factor in factors
        }
        body = node.body.visit(_Replace(selected))
        assert isinstance(body, cst.IndentedBlock)
        code = "".join(module.code_for_node(statement) for statement in body.body)
        lines = code.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n").split("\n")
        comment = node.body.header.comment
        if comment is not None:  # `if clip_coef < 1:  # clip` keeps its comment, above
            lines.insert(0, comment.value)
        indent = "".join(
            block.indent if block.indent is not None else module.default_indent
            for block in self.ctx.ancestors()
            if isinstance(block, cst.IndentedBlock)
        )
        text = "\n".join(
            [lines[0], *(f"{indent}{line}" if line.strip() else "" for line in lines[1:])]
        )
        return self.fix(
            "Scale unconditionally by `torch.where(...)`", (node, text), imports=imports
        )


class _Replace(cst.CSTTransformer):
    """Replaces nodes by identity."""

    def __init__(self, replacements: dict[int, cst.BaseExpression]) -> None:
        self._replacements = replacements

    def on_leave(
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        return self._replacements.get(id(original_node), updated_node)


def _fabric_norm_check(call: cst.Call) -> str | None:
    """`fabric.clip_gradients(model, opt, max_norm=1.0)` (or `self.fabric....`): a Lightning
    Fabric clipping by norm, whose `error_if_nonfinite` is True unless passed as False. By
    value (`clip_val=`) it checks nothing; a LightningModule's own `self.clip_gradients(opt,
    ...)` takes no such flag and is not this method. "default" or "explicit" where the
    flag is True, else None."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "clip_gradients"):
        return None
    receiver = get_full_name_for_node(func.value) or ""
    if not _FABRIC_RECEIVER.search(receiver.rsplit(".", 1)[-1]):
        return None
    bound = bind(call, _FABRIC_CLIP)
    if bound is None or "max_norm" not in bound or _is_none(bound["max_norm"]):
        return None
    flag = bound.get("error_if_nonfinite")
    if flag is None:
        return "default"
    return "explicit" if _is_true(flag) else None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
