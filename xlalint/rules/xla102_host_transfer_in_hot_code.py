from __future__ import annotations

import libcst as cst

from xlalint.context import Kind
from xlalint.rule import Rule

# Methods that copy a tensor to the host, with whether an unknown receiver in a torch file is
# presumed a tensor. `.tolist()` is not: numpy arrays have it too, and are common.
_TRANSFERS = {"cpu": True, "numpy": True, "tolist": False, "to": True}


class HostTransferInHotCode(Rule):
    """
    ## What it does
    Flags `.cpu()`, `.numpy()`, `.tolist()` and `.to("cpu")` (also `.to(device="cpu")` and
    `.to(torch.device("cpu"))`) on device tensors in code that runs every step: loop bodies,
    `forward`, `*_step` methods and the functions they call. A chain such as
    `x.detach().cpu().numpy()` is reported once, at the first copy to the host. A
    namespace's functions of these names count by what they are handed: `d2l.numpy(x)`
    copies `x` (reported unless `x` is already on the host, `d2l.numpy(x.cpu())` being one
    copy), and `d2l.cpu()` handed to `to(value, ...)` names a device. Fields a record
    class of the module declares as tensors (`yseq: torch.Tensor` in a beam hypothesis)
    count as device tensors, as for XLA101: `self.yseq.tolist()` in a method the decoding
    loop calls on every hypothesis is flagged.

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Copying a tensor to
    the host needs its value, so the pending graph is compiled and executed right there and
    the result is transferred back: one extra execution and one device-to-host transfer per
    step, and the step's graph is cut in two. Unlike `.item()`, these copies show up in no
    `aten::` counter, only in the `TransferFromDeviceTime` metric, so they are easy to miss.

    ## Example
    ```python
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        all_preds.extend(logits.argmax(-1).cpu().tolist())
    ```

    ## Use instead
    Keep results on the device while the loop runs and copy them once, after it:
    ```python
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        all_preds.append(logits.argmax(-1).detach())
    preds = torch.cat(all_preds).cpu().tolist()
    ```
    If the host really needs the value every step (logging), read it in
    `xm.add_step_closure(...)`, which runs after the step's graph has executed.

    ## Fix safety
    No fix: where the value goes next decides the right rewrite, so this rule reports with a
    hint only.

    ## Runtime evidence
    5 steps of a small model on the XLA CPU device: a `.tolist()` mid-step costs 10
    executions and 5 device-to-host transfers; keeping the value as a tensor costs 5
    executions and no transfer, with identical results.
    """

    code = "XLA102"
    name = "host-transfer-in-hot-code"
    message = "`{call}` copies a device tensor to the host every step, forcing a graph execution"
    hint = "Keep the value on the device and copy it once after the loop, or in xm.add_step_closure"
    hot_only = True
    needs_torch = True
    triggers = ("cpu", "numpy", "tolist")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _TRANSFERS:
            return
        method = func.attr.value
        parent = self.ctx.parent
        if isinstance(parent, cst.Attribute) and parent.attr.value == "item":
            return  # `t.cpu().item()` is one read of `t`: XLA101 reports it
        if method == "to":
            if not self.ctx.kinds.moves_to_cpu(node):
                return
            spelled = f".to({self._arguments(node)})"  # as written: `.to(torch.device("cpu"))`
        else:
            spelled = f".{method}()"
        receiver = func.value
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        if method != "to" and positional:
            # `d2l.numpy(x)`: a namespace's function (the tensor methods take no positional
            # argument), which copies what it is handed.
            receiver = positional[0]
        elif method == "cpu" and self._names_a_device():
            return  # `to(x, d2l.cpu())`: the device to move to, not a copy
        kind = self.ctx.kind(receiver)
        # The receiver of `.numpy()` in `x.cpu().numpy()` is HOST: the chain reports once.
        if kind is Kind.TENSOR or (
            kind is Kind.UNKNOWN and _TRANSFERS[method] and self.ctx.imports.binds("torch")
        ):
            # From the method name: in a chain split over lines, that is the line to blame.
            self.report(func.attr, self.message.format(call=spelled), end_node=node)

    def _names_a_device(self) -> bool:
        """The call is a later argument of a `to(...)` call: `d2l.to(value, d2l.cpu())`."""
        ancestors = self.ctx.ancestors()
        arg = next(ancestors, None)
        call = next(ancestors, None)
        if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call):
            return False
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        return name == "to" and (arg.keyword is not None or call.args[0] is not arg)

    def _arguments(self, node: cst.Call) -> str:
        code = self.ctx.module.code_for_node
        return ", ".join(
            f"{arg.keyword.value}={code(arg.value)}" if arg.keyword else code(arg.value)
            for arg in node.args
        )
