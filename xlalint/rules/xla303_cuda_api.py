from __future__ import annotations

import libcst as cst

from xlalint.analysis.devices import (
    CUDA_BACKEND_PREFIXES,
    CUDA_PROBES,
    converts_to_cuda_tensor_type,
    cuda_api_kind,
    in_own_method,
)
from xlalint.rule import Rule

_AUTOCAST_HINT = 'use `torch.autocast("xla", dtype=torch.bfloat16)`'
_SCALER_HINT = (
    "with bfloat16 no loss scaling is needed: drop the scaler; keep a scaler-free step with "
    "`torch_xla.amp.syncfree` optimizers"
)
_BACKEND_HINT = "cuDNN/CUDA backend settings do nothing on XLA: remove them"
_DEFAULT_HINT = "remove it, or use the torch_xla equivalent"
_RUNTIME_HINTS = {
    "synchronize": (
        "`xm.wait_device_ops()` waits for the XLA device; `torch_xla.sync()` ends a step"
    ),
    "manual_seed": "`xm.set_rng_state(seed)` seeds the XLA device's generator",
    "manual_seed_all": "`xm.set_rng_state(seed)` seeds the XLA device's generator",
    "seed": "`xm.set_rng_state(seed)` seeds the XLA device's generator",
    "set_device": "each XLA process owns its device: use `torch_xla.device()`",
    "current_device": "use `torch_xla.device()`",
    "device": "use `torch_xla.device()`",
    "device_count": "use `xr.world_size()` (torch_xla.runtime) for the number of processes",
    "get_device_name": "`xm.xla_device_hw(torch_xla.device())` names the XLA hardware",
    "get_device_properties": "`xm.xla_device_hw(torch_xla.device())` names the XLA hardware",
}
_TENSOR_TYPE_HINT = (
    "move with `.to(torch_xla.device())` and set the dtype with `.to(dtype)` / "
    "`torch.set_default_dtype`"
)
_MEMORY_HINT = "`xm.get_memory_info(torch_xla.device())` reports XLA device memory"


def _runtime_hint(function: str) -> str:
    if function in _RUNTIME_HINTS:
        return _RUNTIME_HINTS[function]
    if "memory" in function or function in {"empty_cache", "mem_get_info"}:
        return _MEMORY_HINT
    return _DEFAULT_HINT


class CudaApi(Rule):
    """
    ## What it does
    Flags CUDA-only APIs: calls of `torch.cuda.*` runtime functions (`synchronize`,
    `empty_cache`, `memory_allocated`, `set_device`, `current_device`, `device_count`,
    `manual_seed`, `get_device_name`, `Event`, ...), reads and writes of
    `torch.backends.cudnn.*` and `torch.backends.cuda.*` settings, CUDA autocast
    (`torch.cuda.amp.autocast`, `torch.autocast("cuda")`), `GradScaler`
    (`torch.cuda.amp.GradScaler`, `torch.amp.GradScaler("cuda")`, `torch.GradScaler`), and
    conversions to legacy CUDA tensor types (`x.type(torch.cuda.FloatTensor)`,
    `torch.set_default_tensor_type("torch.cuda.FloatTensor")`). Names are resolved through
    the file's imports, so `from torch.cuda.amp import GradScaler` and
    `import torch.cuda as tc` are understood and a local `GradScaler` class is not.

    Left alone: the probes `torch.cuda.is_available()` and `torch.cuda.is_initialized()`,
    which guards and device ladders use, and anything under a CUDA guard (including the
    right side of `torch.cuda.is_available() and ...`), after
    `if not torch.cuda.is_available(): return`, where a test for XLA failed
    (`if is_xla: xm.mark_step() else: torch.cuda.synchronize()`), or in a class's own
    `cuda()` method.

    ## Why is this bad?
    These calls act on the CUDA runtime only. On a TPU host some raise (`synchronize`,
    `set_device`, `get_device_name`), some silently do nothing (`empty_cache`,
    `manual_seed`, cuDNN flags), and CUDA autocast and the CUDA GradScaler disable
    themselves with a warning, so a model meant to train in mixed precision quietly runs in
    float32. None of them acts on the XLA device.

    ## Example
    ```python
    torch.backends.cudnn.benchmark = True
    scaler = torch.cuda.amp.GradScaler()
    for x, y in loader:
        with torch.cuda.amp.autocast():
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    ```

    ## Fix safety
    No fix: the XLA replacement depends on what the call was for (timing, memory
    reporting, seeding, mixed precision). Each finding carries a hint.

    ## Runtime evidence
    Not measured by the harness yet. The harness will run each call on a host without CUDA
    (`PJRT_DEVICE=CPU`) and record whether it raises, warns or does nothing, and, for
    autocast, the dtype the XLA computation actually runs in.
    """

    code = "XLA303"
    name = "cuda-api"
    message = "`{name}` is a CUDA-only API: it fails or does nothing on an XLA device"
    triggers = ("cuda", "GradScaler")

    def visit_Call(self, node: cst.Call) -> None:
        if converts_to_cuda_tensor_type(node, self.ctx.imports):
            if not self._cuda_only():
                message = "CUDA tensor types exist only on CUDA: the conversion fails on XLA"
                self.report(node, message, hint=_TENSOR_TYPE_HINT)
            return
        kind = cuda_api_kind(node, self.ctx.imports)
        if kind is None or kind == "backend" or self._cuda_only():
            return  # backend settings are reported where they are read (visit_Attribute)
        qualified = self.ctx.qualified(node.func) or ""
        if kind == "autocast":
            message = f"`{qualified}` with CUDA autocasts nothing on an XLA device"
            self.report(node, message, hint=_AUTOCAST_HINT)
        elif kind == "scaler":
            message = f"`{qualified}` scales losses for CUDA float16 training"
            self.report(node, message, hint=_SCALER_HINT)
        else:
            hint = _runtime_hint(qualified.rsplit(".", 1)[-1])
            self.report(node, self.message.format(name=qualified), hint=hint)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        parent = self.ctx.parent
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # report the whole chain once, at its outermost attribute
        qualified = self.ctx.qualified(node)
        if qualified is None or not qualified.startswith(CUDA_BACKEND_PREFIXES):
            return
        if qualified in CUDA_PROBES or self._cuda_only():
            return
        self.report(node, self.message.format(name=qualified), hint=_BACKEND_HINT)

    def _cuda_only(self) -> bool:
        """Under a CUDA guard, in other code a TPU host never runs, or in a class's own
        `cuda()` method, which its caller asked for."""
        return in_own_method(self.ctx.function, "cuda") or self.ctx.runs_without_xla
