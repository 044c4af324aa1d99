from __future__ import annotations

import libcst as cst

from xlalint.analysis.clipping import clipping_test
from xlalint.rule import Rule

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


class ClipGradNormSync(Rule):
    """
    ## What it does
    Flags gradient-norm clipping that reads the norm on the host every step:
    `torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)` (under any import
    style), and hand-written clipping that tests the coefficient with a Python `if`:
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
    Clamp the coefficient on the device and always scale, as PyTorch/XLA's own version
    does (multiplying by 1.0 is a no-op):
    ```python
    total_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef = torch.where(clip_coef < 1, clip_coef, torch.ones_like(clip_coef))
    for p in params:
        p.grad.detach().mul_(clip_coef)
    ```
    Or call `torch.nn.utils.clip_grad_norm_(params, max_norm)` without
    `error_if_nonfinite=True`, and check for non-finite norms every N steps or in
    `xm.add_step_closure(...)`.

    ## Fix safety
    No fix yet. A safe fix is planned for the hand-written form: replace the `if` with the
    `torch.where` clamp above and scale unconditionally, which gives identical gradients.
    Dropping `error_if_nonfinite=True` would change behaviour (no error on `inf`/`nan`), so
    that form will stay report-only.

    ## Runtime evidence
    5 steps on the XLA CPU device: hand-written clipping with `if clip_coef < 1:` costs
    10 executions and 5 `aten::_local_scalar_dense` calls; the `torch.where` version costs
    5 executions and none, with identical results. `clip_grad_norm_` with default
    arguments costs 5 executions and no transfer; with `error_if_nonfinite=True` it costs
    10 executions and 5 `aten::_local_scalar_dense` calls.
    """

    code = "XLA105"
    name = "clip-grad-norm-sync"
    message = "{what} reads the gradient norm on the host every step, forcing a graph execution"
    hint = "Clamp the coefficient with torch.where and always scale; check non-finite norms rarely"
    hot_only = True
    # Hand-written clipping scales `.grad`s; the API calls name `clip_grad_norm` or
    # `get_total_norm` in the call or its import.
    triggers = ("grad", "get_total_norm")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualified(node.func)
        position = _NONFINITE_CHECKS.get(qualified or "")
        if position is None:
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
            self.report(test, self.message.format(what="Clipping with a Python `if`"))


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
