from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.devices import (
    AUTOCAST_CALLS,
    GRAD_SCALER_CALLS,
    converts_to_cuda_tensor_type,
    cuda_api_kind,
    in_own_method,
    keyword_argument,
    positional_argument,
    runs_without_xla,
)
from xlalint.analysis.flag_facts import class_setting_left_off
from xlalint.analysis.guards import implied, local_values, mentions_cuda
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.reachability import exported_functions, exported_names
from xlalint.rule import Rule
from xlalint.walk import code_children, descendants, self_attribute, top_level_definitions

if TYPE_CHECKING:
    from xlalint.context import FileContext

_AUTOCAST_HINT = 'use `torch.autocast("xla", dtype=torch.bfloat16)`'
_SCALER_HINT = (
    "with bfloat16 no loss scaling is needed: drop the scaler; keep a scaler-free step with "
    "`torch_xla.amp.syncfree` optimizers"
)
_DEFAULT_HINT = "remove it, or use the torch_xla equivalent"
_RUNTIME_HINTS = {
    "synchronize": (
        "`xm.wait_device_ops()` waits for the XLA device; `torch_xla.sync()` ends a step"
    ),
    "set_device": "each XLA process owns its device: use `torch_xla.device()`",
    "current_device": "use `torch_xla.device()`",
    "device": "use `torch_xla.device()`",
    "get_device_name": "`xm.xla_device_hw(torch_xla.device())` names the XLA hardware",
    "get_device_properties": "`xm.xla_device_hw(torch_xla.device())` names the XLA hardware",
    "get_device_capability": "`xm.xla_device_hw(torch_xla.device())` names the XLA hardware",
    "Event": "time with `time.perf_counter()` around `xm.wait_device_ops()`",
    "Stream": "XLA schedules its own work: drop the stream",
    "current_stream": "XLA schedules its own work: drop the stream",
    "default_stream": "XLA schedules its own work: drop the stream",
}
_TENSOR_TYPE_HINT = (
    "move with `.to(torch_xla.device())` and set the dtype with `.to(dtype)` / "
    "`torch.set_default_dtype`"
)
_MEMORY_HINT = "`xm.get_memory_info(torch_xla.device())` reports XLA device memory"

# `torch.cuda` functions measured to do nothing on an XLA host (torch 2.9, no CUDA driver):
# they return None, 0 or False without touching the CUDA runtime. Not reported.
_NO_OPS = frozenset(
    {
        "manual_seed",
        "manual_seed_all",
        "seed",
        "seed_all",
        "set_rng_state",
        "set_rng_state_all",
        "custom_fwd",  # `torch.cuda.amp.custom_fwd`: a decorator that runs the function as is
        "custom_bwd",
        "empty_cache",
        "device_count",
        "get_rng_state_all",  # [] without CUDA devices
        "get_gencode_flags",  # ''
        "get_allocator_backend",  # 'native'
        "list_gpu_processes",  # a message string without pynvml
        "is_available",
        "is_initialized",
        # `with torch.cuda.stream(s)` does nothing where `s` is None; one handed a stream
        # on every path is judged above (`_holds_a_stream`).
        "stream",
    }
)
# Modules whose every function was measured or documented to do nothing without CUDA
# (`torch.cuda.nvtx.range_push` returns -2).
_NO_OP_MODULES = ("torch.cuda.nvtx.",)
# Queries that answer without CUDA (memory statistics 0): reported only where the value
# steers the program (a comparison or condition), not where it is only logged.
_MEMORY_READS = {
    "memory_allocated": "0",
    "max_memory_allocated": "0",
    "memory_reserved": "0",
    "max_memory_reserved": "0",
    "memory_cached": "0",
    "max_memory_cached": "0",
    "memory_stats": "an empty dict",
    "is_bf16_supported": "False",
    "get_arch_list": "an empty list",
}
# Queries whose value is empty without CUDA, so that looking an entry up raises (measured:
# `torch.cuda.memory_stats()["num_alloc_retries"]` raises KeyError on an XLA host).
_EMPTY_WITHOUT_CUDA = frozenset({"memory_stats", "get_arch_list"})
# Calls that capture a CUDA graph: a class making one is CUDA-only by construction.
_GRAPH_CAPTURE = frozenset(
    {"torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables"}
)
# Ancestors through which a value decides something (up to the enclosing statement).
_DECIDING = (cst.Comparison, cst.BooleanOperation, cst.If, cst.While, cst.Assert, cst.IfExp)
_STATEMENT = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


def _runtime_hint(function: str) -> str:
    if function in _RUNTIME_HINTS:
        return _RUNTIME_HINTS[function]
    if "memory" in function or function == "mem_get_info":
        return _MEMORY_HINT
    return _DEFAULT_HINT


def _to_bfloat16(call: cst.Call, ctx: FileContext) -> bool:
    """`dtype=torch.bfloat16`: CUDA autocast checks that the CUDA device supports it."""
    dtype = keyword_argument(call, "dtype")
    return dtype is not None and ctx.qualified(dtype.value) == "torch.bfloat16"


def _disabled(
    call: cst.Call,
    qualified: str,
    imports: ImportTable,
    function: cst.FunctionDef | None,
    false_on_xla_host: Callable[[cst.BaseExpression], bool],
    owner: cst.ClassDef | None = None,
    module: cst.Module | None = None,
) -> bool:
    """`enabled=False`: a CUDA autocast or scaler that does nothing anywhere (also through
    a class attribute set once to False in the class body and never again:
    `flag_facts.class_setting_left_off`); or enabled
    only where a CUDA test holds (`autocast(enabled and device == "cuda")`), which an XLA
    host never passes, also through a local flag of the enclosing function
    (`scaler_enabled = precision == "fp16" and "cuda" in device`)."""
    enabled = keyword_argument(call, "enabled")
    if enabled is None and qualified == "torch.cuda.amp.autocast":
        enabled = positional_argument(call, 0)  # `autocast(enabled=True, dtype=...)`
    if enabled is None:
        return False
    value = enabled.value
    if isinstance(value, cst.Name) and value.value == "False":
        return True
    values = (lambda name: local_values(function, name)) if function is not None else None
    if implied(value, True, lambda t: mentions_cuda(t, imports), values) is True:
        return True
    # A setting of the class left off as shipped: `enable_autocast = False` in the class
    # body, which no code of the module assigns again.
    if module is not None and class_setting_left_off(value, owner, module):
        return True
    # A flag set far from here (another method, `__init__`, the module) that is False on
    # an XLA host: `enabled=self.enable_scaler` after `self.enable_scaler =
    # torch.cuda.is_available() and config["enable_scaler"]`.
    return false_on_xla_host(value)


def _same_object(call: cst.Call, kind: str, imports: ImportTable) -> bool:
    """Whether `call` builds the same kind of object (a scaler, an autocast), for CUDA or
    for a device the program chooses: `torch.amp.GradScaler(device=device_type)` and
    `torch.cuda.amp.GradScaler()` are one scaler spelled for two torch versions."""
    if cuda_api_kind(call, imports) == kind:
        return True
    family = GRAD_SCALER_CALLS if kind == "scaler" else AUTOCAST_CALLS
    return imports.resolve(call.func) in family


def _alternative_spelling(call: cst.Call, kind: str, ctx: FileContext) -> bool:
    """The `else` of a conditional expression whose other branch builds the same kind of
    object: `GradScaler("cuda") if TORCH_2_4 else torch.cuda.amp.GradScaler()` is one
    scaler, spelled for two torch versions, and one finding, judged on its first spelling
    (a first spelling on the program's own device type is no finding, and neither is the
    fallback for old torch)."""
    parent = ctx.parent
    if isinstance(parent, cst.IfExp):
        return (
            parent.orelse is call
            and isinstance(parent.body, cst.Call)
            and _same_object(parent.body, kind, ctx.imports)
        )
    # The statement form: `if torch_older: scaler = torch.cuda.amp.GradScaler()` /
    # `else: scaler = torch.GradScaler(device)`, the same target in both branches.
    ancestors = list(ctx.ancestors())
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
        return False
    target = ctx.module.code_for_node(parent.targets[0].target)
    at = next((i for i, a in enumerate(ancestors) if isinstance(a, cst.Else)), None)
    if at is None or at + 1 >= len(ancestors) or not isinstance(ancestors[at + 1], cst.If):
        return False
    if any(isinstance(a, cst.BaseCompoundStatement) for a in ancestors[:at]):
        return False  # nested deeper than the branch's own statements
    for node in descendants(ancestors[at + 1].body):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and ctx.module.code_for_node(node.targets[0].target) == target
            and isinstance(node.value, cst.Call)
            and _same_object(node.value, kind, ctx.imports)
        ):
            return True
    return False


class CudaApi(Rule):
    """
    ## What it does
    Flags CUDA-only APIs that fail or cost on an XLA host: `torch.cuda` runtime calls that
    raise without CUDA (`synchronize`, `set_device`, `current_device`, `get_device_name`,
    `get_device_properties`, `get_device_capability`, `mem_get_info`,
    `reset_peak_memory_stats`, `memory_summary`, `Stream`, `current_stream`, `Event`, ...),
    CUDA autocast (`torch.cuda.amp.autocast()`, `torch.autocast("cuda", ...)`), the CUDA
    `GradScaler` (`torch.cuda.amp.GradScaler`, `torch.amp.GradScaler("cuda")`,
    `torch.GradScaler()`), also through a name bound to the API itself and called later
    (`autocast = torch.cuda.amp.autocast if args.precision == "amp" else suppress`, then
    `with autocast():`, reported at the reference where a call of the name builds it
    enabled; not a name a module-level `if` imports per accelerator, `if
    is_npu_available(): from torch.npu.amp import GradScaler` ... `else: from
    torch.cuda.amp import GradScaler`), conversions to legacy CUDA tensor types
    (`x.type(torch.cuda.FloatTensor)`, `torch.set_default_tensor_type("torch.cuda.FloatTensor")`),
    memory statistics (`memory_allocated()`, ...) or `is_bf16_supported()` where their
    value decides something (a comparison or condition), an entry looked up in a query's
    value that is empty without CUDA (`torch.cuda.memory_stats()["num_alloc_retries"]`,
    also through a local name bound to it, raises KeyError; `get_arch_list()[0]`
    IndexError; `.get(key, 0)` is left alone), and `with torch.cuda.stream(s)` where `s`
    is a CUDA stream on every path (`self.stream = torch.cuda.Stream()` in `__init__`, none
    of its bindings under a CUDA guard: entering the context asks the CUDA runtime for the
    current stream, an edit of its own beside the `Stream()`; not where `s` is None off
    CUDA, `torch.cuda.Stream() if cuda else None`). Names are resolved through the
    file's imports, so `from torch.cuda.amp import GradScaler` and `import torch.cuda as tc`
    are understood and a local `GradScaler` class is not.

    Left alone, because they do nothing and cost nothing on an XLA host (measured below):
    cuDNN/TF32 flag writes (`torch.backends.cudnn.benchmark = True`,
    `torch.backends.cuda.matmul.allow_tf32 = True`), `torch.cuda.manual_seed*`/`seed*`,
    `empty_cache`, `device_count`, the Python helpers of `torch.cuda.amp` other than its
    scaler and autocast (`custom_fwd`, `grad_scaler._refresh_per_optimizer_state`: the
    old spelling of `torch.amp`'s), memory statistics that are only logged, and CUDA
    autocast or scalers built with `enabled=False` (also as a decorator) or enabled only
    where a CUDA test holds (`autocast(enabled and device == "cuda")`, or through a local
    flag: `scaler_enabled = precision == "fp16" and "cuda" in device`, then
    `GradScaler(device, enabled=scaler_enabled)`), or by a class attribute set once, in
    the class body, to a falsy constant that no code of the module assigns again
    (`enable_autocast = False`, then `autocast(enabled=self.enable_autocast)`: a setting
    left off as shipped; one that `__init__`, a method, a subclass's body or `setattr`
    writes is judged as the code sets it). Also left alone:
    the probes `torch.cuda.is_available()`/`is_initialized()`, anything under a CUDA guard
    (including the right side of `torch.cuda.is_available() and ...`, a count of GPUs that
    needs one, `if ngpu == 1:`, `device_count() > 0` or `config.total_visible_gpus > 0`,
    but not `ngpu < 2` nor a count of something else, `n_gpu_layers > 0`; the passes of a
    loop over such a count, `for i in range(torch.cuda.device_count()):` or `[... for i in
    range(args.n_gpu)]`, which run none where it is 0, but not code after the loop nor its
    `else:`; a test that the process group is NCCL, `self.backend == dist.Backend.NCCL`,
    which only a CUDA host creates; and a local
    flag assigned from one: `use_ids = dist.get_backend() == "nccl"`, then `if use_ids:`,
    also where other assignments only turn it off: `non_blocking, last =
    torch.cuda.is_available(), -1` ... `non_blocking = False`), under or enabled by a flag
    set far from the call that is False on an XLA host: an attribute every assignment of
    which, in any method of the class, its bases or subclasses here, gives a value false
    without CUDA (`self.enable_scaler = torch.cuda.is_available() and cfg.scaler` in
    `__init__`, then `GradScaler(enabled=self.enable_scaler)` in `fit`), an attribute that
    `__init__` ends by forcing off wherever CUDA is not in use (`if not use_cuda:
    self.args.fp16 = False`, then `if self.args.fp16: scaler = GradScaler()` in `train`;
    also in the `else` of a CUDA test, and inside the flag's own test: `if self.use_amp:
    if torch.cuda.is_available(): ... else: self.use_amp = False`, which an XLA host leaves
    with the flag off either way; the instance a singleton's `__new__` builds, `self =
    super().__new__(cls)`, counts as `self`: `self.profiler = None` in the `else` of
    `if torch.cuda.is_available():` there, then `if self.profile and self.profiler:
    profiler.start()`),
    such a module-level flag (`USE_AMP = torch.cuda.is_available() and ...`), or a
    parameter that every call in the file passes such a value (`_forward(model, batch,
    use_amp=amp and torch.cuda.is_available())`), or, for a function other modules may
    call, whose default is tied to CUDA (`half=torch.cuda.is_available()`). Also left
    alone: code under `if event is not None:` (or `if event:`, or after `if event is None:
    return`) where the value is None on any XLA host: a call of a function of the module
    every `return` of which that an XLA host can reach returns None (`if
    torch.device(device).type != "cuda" or not torch.cuda.is_available(): return None`,
    then `return torch.cuda.Event()`), directly, through a local name bound only to such
    values or an attribute of the class every assignment of which is one. One
    assignment of an unknown value anywhere (a configuration entry, a parameter, `True`,
    the holding object replaced after the forcing, a `global` rebinding) and the flag may
    be on: the call is reported. Also left alone: code in a
    function this file calls only under CUDA guards (`get_gpu_info(i)`) or such flags
    (`if self.args.fp16: self._setup_amp()`), in the methods of a class this file builds
    only there and names nowhere else (`if device_type == "cuda": return
    CudaBatchTimingTracker()`: no instance exists on an XLA host), after
    `if not torch.cuda.is_available(): return`, where a test for XLA failed
    (`if is_xla: xm.mark_step() else: torch.cuda.synchronize()`), in a class's own
    `cuda()` method, or in a class that captures a CUDA graph (`torch.cuda.CUDAGraph()`,
    `with torch.cuda.graph(g):`, `make_graphed_callables`): a CUDA-graph wrapper is a
    CUDA backend by construction, built only where CUDA was chosen (`Wrapper(f) if
    compiled else f`, the flag tied to a CUDA device), so its streams and graphs are not
    reported one by one (a class that only makes a `torch.cuda.Stream()`, such as a data
    prefetcher, still is, and so is one that captures a graph only under a flag, `if
    use_graphs:`: a trainer with an option, built on every host). Nor is code in a
    module-level function this file calls only from such a class (or from other such
    functions) and does not export: the side stream or capture lock of a graph's capture
    (`side_stream(device)` with its `torch.cuda.current_device()`). One scaler or autocast
    spelled for two torch versions (`GradScaler("cuda") if TORCH_2_4 else
    torch.cuda.amp.GradScaler()`, or an `if`/`else` that assigns the same name in both
    branches) is one finding, on the first spelling. A scaler built for the type of the
    device the program holds (`self._device_type = torch.device(self.device).type`, then
    `torch.amp.GradScaler(device=self._device_type)`) is the XLA scaler on an XLA host and
    is left alone (also where another method of the class sets it), and so is its
    fallback spelling for old torch in the other branch; a
    device from elsewhere (`GradScaler(device=device)`) is still judged as CUDA's, and so
    is a type chosen by CUDA's availability (`"cuda" if torch.cuda.is_available() else
    "cpu"`): the CPU scaler an XLA host then gets, enabled, reads its found-inf flag to
    the host every step too (measured, brevitas).

    ## Why is this bad?
    Without a CUDA driver most `torch.cuda` calls raise `RuntimeError: Found no NVIDIA
    driver on your system`, so the script stops on a TPU host. Two fail quietly, in cost:
    `torch.cuda.amp.autocast()` leaves the XLA matmuls in float32, so the model trains at
    full precision where mixed precision was meant; and the CUDA `GradScaler` stays enabled
    when torch_xla is installed (its docs say it disables itself without CUDA), and its
    `step` reads the found-inf flag to the host every step: a device-to-host transfer and an
    extra graph execution per step. `torch.autocast("cuda", dtype=torch.bfloat16)` raises.
    Memory statistics return 0, so code that decides on them (a batch size, a cache
    policy) takes the wrong branch; `is_bf16_supported()` returns False.

    ## Example
    ```python
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
    reporting, mixed precision). Each finding carries a hint.

    ## Runtime evidence
    Measured with `benchmarks/xla_semantics.py --group cuda` (torch 2.9.0, torch_xla 2.9.0,
    `PJRT_DEVICE=CPU`, no CUDA driver, one fresh process per case):

    - raise `RuntimeError: Found no NVIDIA driver on your system`: `synchronize()`,
      `set_device(0)`, `current_device()`, `get_device_name(0)`, `get_device_capability()`,
      `get_device_properties(0)`, `mem_get_info()`, `current_stream()`, `get_rng_state()`,
      `Event().record()`, `with torch.cuda.device(0)`, `x.type(torch.cuda.FloatTensor)`,
      `ipc_collect()`, `init()`, `initial_seed()`, `set_per_process_memory_fraction(0.5)`;
    - `torch.cuda.Stream()`, `CUDAGraph()` and `is_current_stream_capturing()` raise
      `AcceleratorError: CUDA error`; `reset_peak_memory_stats()` and
      `reset_max_memory_allocated()` raise `RuntimeError`, `memory_summary()` `KeyError`;
    - `torch.autocast("cuda", dtype=torch.bfloat16)` raises `RuntimeError: Current CUDA
      Device does not support bfloat16`;
    - `torch.cuda.amp.autocast()` around an XLA matmul runs and leaves the result float32
      (`torch.autocast("xla", dtype=torch.bfloat16)`: bfloat16);
    - `torch.cuda.amp.GradScaler()`, `torch.amp.GradScaler("cuda")` and
      `torch.GradScaler()` report `is_enabled()` True; 5 training steps with one cost 5
      device-to-host transfers, 5 `aten::_local_scalar_dense` and 10 executions, against
      0, 0 and 5 without a scaler;
    - `memory_allocated()`, `max_memory_allocated()`, `memory_reserved()` return 0;
      `is_bf16_supported()` returns False, `get_arch_list()` an empty list;
    - `set_default_tensor_type("torch.cuda.FloatTensor")` runs (deprecated), and the next
      tensor made raises;
    - do nothing (not reported): `device_count()` (0), `get_rng_state_all()` (an empty
      list), `get_gencode_flags()`, `get_allocator_backend()`, `list_gpu_processes()` (a
      string), `manual_seed(0)`, `set_rng_state()`,
      `manual_seed_all(0)`, `seed()`, `empty_cache()`, cuDNN/TF32 flag writes,
      `autocast(enabled=False)`, `@autocast("cuda", enabled=False)`,
      `with torch.cuda.stream(None)`, `torch.cuda.nvtx.range_push(...)` (returns -2),
      functions decorated with `torch.cuda.amp.custom_fwd` (deprecated; run as written), and
      `torch.cuda.Event()` until it is recorded.
    """

    code = "XLA303"
    name = "cuda-api"
    message = "`{name}` raises on an XLA host: it needs the CUDA runtime"
    triggers = ("cuda", "GradScaler")
    screen = ("~cuda", "~GradScaler", "'cuda")
    # `torch.cuda.synchronize()` in a loop: that it raises says more than that it blocks.
    supersedes = ("XLA106",)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._graph_classes: dict[int, bool] | None = None
        self._graph_helpers: frozenset[str] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if converts_to_cuda_tensor_type(node, self.ctx.imports):
            if not self._cuda_only():
                message = "CUDA tensor types need the CUDA runtime: the conversion raises on XLA"
                self.report(node, message, hint=_TENSOR_TYPE_HINT)
            return
        kind = cuda_api_kind(node, self.ctx.imports)
        if kind is None or kind == "backend":
            return
        qualified = self.ctx.qualified(node.func) or ""
        function = qualified.rsplit(".", 1)[-1]
        if function in _MEMORY_READS and kind == "runtime":
            if function in _EMPTY_WITHOUT_CUDA and self._indexed(node):
                if not self._cuda_only():
                    value = _MEMORY_READS[function]
                    error = "KeyError" if function == "memory_stats" else "IndexError"
                    message = (
                        f"`{qualified}` returns {value} on an XLA host: looking an entry up "
                        f"in it raises {error}"
                    )
                    self.report(node, message, hint=_MEMORY_HINT)
                return
            # Its own `if` asks about CUDA by calling it, which guards nothing.
            if self._decides() and not self._cuda_only(own_test=node):
                value = _MEMORY_READS[function]
                message = (
                    f"`{qualified}` returns {value} on an XLA host, and this code decides on it"
                )
                self.report(node, message, hint=_MEMORY_HINT)
            return
        if self._cuda_only():
            return
        if kind in ("autocast", "scaler") and _alternative_spelling(node, kind, self.ctx):
            return
        if kind == "autocast":
            if self._disabled(node, qualified):
                return
            if _to_bfloat16(node, self.ctx):
                message = f"`{qualified}` for CUDA with bfloat16 raises on an XLA host"
            else:
                message = f"`{qualified}` for CUDA leaves XLA math in float32"
            self.report(node, message, hint=_AUTOCAST_HINT)
        elif kind == "scaler":
            if self._on_device_type(node) or self._disabled(node, qualified):
                return
            message = (
                f"`{qualified}` for CUDA stays enabled with torch_xla and reads the found-inf "
                "flag to the host every step"
            )
            self.report(node, message, hint=_SCALER_HINT)
        elif function == "stream" and self._holds_a_stream(node):
            message = (
                f"`{qualified}` of a CUDA stream raises on an XLA host: entering it asks the "
                "CUDA runtime for the current stream"
            )
            self.report(node, message, hint=_runtime_hint("Stream"))
        elif function in _NO_OPS or qualified.startswith(_NO_OP_MODULES):
            return
        elif function == "Event":
            message = f"`{qualified}` raises on an XLA host when recorded: it needs CUDA"
            self.report(node, message, hint=_runtime_hint(function))
        else:
            self.report(node, self.message.format(name=qualified), hint=_runtime_hint(function))

    def visit_Assign(self, node: cst.Assign) -> None:
        """`autocast = torch.cuda.amp.autocast if args.precision == "amp" else suppress`,
        then `with autocast():` (open_clip's training loop): a name bound to the CUDA
        autocast or scaler itself, not to a call of it, is that API wherever the name is
        called. Reported at the reference, where some call of the name in its scope (the
        function, or the module for a module-level name) would build the CUDA object
        enabled (`_disabled` judged with the call's own arguments)."""
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name:
            return
        name = node.targets[0].target.value
        references = list(_references(node.value, (node,)))
        if not references:
            return
        calls: list[cst.Call] | None = None
        for reference, path in references:
            if self.ctx.qualified(reference) is None:
                continue
            if type(reference) is cst.Name and _imported_by_a_test(self.ctx.module, reference):
                # `if is_npu_available(): from torch.npu.amp import GradScaler` ... `else:
                # from torch.cuda.amp import GradScaler`: the name is the scaler of the
                # accelerator the module found, which the import chain decides.
                continue
            if calls is None:
                scope = self._function() or self.ctx.module
                calls = [
                    c
                    for c in descendants(scope)
                    if type(c) is cst.Call and type(c.func) is cst.Name and c.func.value == name
                ]
            kind = None
            for call in calls:
                spelled = call.with_changes(func=reference)
                found = cuda_api_kind(spelled, self.ctx.imports)
                if found not in ("autocast", "scaler"):
                    continue
                qualified = self.ctx.qualified(reference) or ""
                if not self._disabled(spelled, qualified):
                    kind = found
                    break
            if kind is None:
                continue
            if self._cuda_only() or runs_without_xla(
                (*path, *self.ctx.ancestors()), self.ctx.imports
            ):
                continue
            qualified = self.ctx.qualified(reference) or ""
            if kind == "autocast":
                message = (
                    f"`{name}` is `{qualified}`: each `{name}()` is CUDA autocast, which "
                    "leaves XLA math in float32"
                )
                self.report(reference, message, hint=_AUTOCAST_HINT)
            else:
                message = (
                    f"`{name}` is `{qualified}`: the CUDA scaler it builds stays enabled with "
                    "torch_xla and reads the found-inf flag to the host every step"
                )
                self.report(reference, message, hint=_SCALER_HINT)

    def _indexed(self, call: cst.Call) -> bool:
        """Whether an entry of the call's value is looked up: `torch.cuda.memory_stats()
        ["num_alloc_retries"]`, or through a local name bound to it alone (`stats =
        torch.cuda.memory_stats()`, then `stats["allocated_bytes.all.peak"]`). Not
        `.get(key, 0)`, which answers without the entry."""
        parent = self.ctx.parent
        if type(parent) is cst.Subscript and parent.value is call:
            return True
        function = self._function()
        if not (
            type(parent) is cst.Assign
            and parent.value is call
            and len(parent.targets) == 1
            and type(parent.targets[0].target) is cst.Name
            and function is not None
        ):
            return False
        name = parent.targets[0].target.value
        values = local_values(function, name)
        if len(values) != 1:
            return False  # bound to something else too: the entry may be there
        return any(
            type(node) is cst.Subscript
            and type(node.value) is cst.Name
            and node.value.value == name
            for node in descendants(function)
        )

    def _holds_a_stream(self, call: cst.Call) -> bool:
        """Whether `torch.cuda.stream(s)` is handed a CUDA stream wherever it runs: built
        in place (`torch.cuda.stream(torch.cuda.Stream())`), or a name (in its function)
        or `self` attribute (in its class) every binding of which builds one
        (`self.stream = torch.cuda.Stream()` in `__init__`), none under a CUDA guard.
        `torch.cuda.stream(None)` does nothing, and a stream that is None off CUDA
        (`self._stream = torch.cuda.Stream() if cuda else None`) leaves the context a
        no-op there."""
        argument = positional_argument(call, 0) or keyword_argument(call, "stream")
        if argument is None:
            return False
        value = argument.value
        if type(value) is cst.Call:
            return self._builds_stream(value)
        if type(value) is cst.Name:
            scope: cst.CSTNode | None = self._function()
        elif self_attribute(value) is not None:
            scope = self._owner()
        else:
            return False
        if scope is None:
            return False
        bindings = _bindings(scope, self.ctx.module.code_for_node(value))
        if not bindings:
            return False
        for bound, path in bindings:
            if bound is None or not self._builds_stream(bound):
                return False
            if runs_without_xla(path, self.ctx.imports):
                return False  # built only where CUDA is: None or unset elsewhere
        return True

    def _builds_stream(self, value: cst.BaseExpression) -> bool:
        return type(value) is cst.Call and (self.ctx.qualified(value.func) or "") in _STREAMS

    def _in_cuda_graph_class(self) -> bool:
        """In a method of a class that captures a CUDA graph (`torch.cuda.CUDAGraph()`,
        `with torch.cuda.graph(g):`, `make_graphed_callables`): such a class is a CUDA
        backend by construction, built only where CUDA was chosen; the cost, if any, is
        at that choice, not at each stream or graph call inside it."""
        class_def = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
        return class_def is not None and self._captures(class_def)

    def _captures(self, class_def: cst.ClassDef) -> bool:
        """`_captures_by_construction`, once per class of the file (a class's methods and
        the module-level helpers both ask)."""
        if self._graph_classes is None:
            self._graph_classes = {}
        key = id(class_def)
        if key not in self._graph_classes:
            self._graph_classes[key] = self._captures_by_construction(class_def)
        return self._graph_classes[key]

    def _in_cuda_graph_helper(self) -> bool:
        """In a module-level function that this file calls only from the methods of classes
        that capture a CUDA graph, or from other such functions (`side_stream(device)`,
        `capture_lock(device)`, called from `_capture`), and does not export in `__all__`:
        it runs where such a class runs, only where CUDA was chosen."""
        function = self._function()
        outermost = next(
            (a for a in reversed(list(self.ctx.ancestors())) if isinstance(a, cst.FunctionDef)),
            None,
        )
        if (
            function is None
            or outermost is None
            or not any(statement is outermost for statement in self.ctx.module.body)
        ):
            return False
        if self._graph_helpers is None:
            self._graph_helpers = self._helpers_of_graph_classes()
        return outermost.name.value in self._graph_helpers

    def _helpers_of_graph_classes(self) -> frozenset[str]:
        """The module-level functions every use of whose name (at least one) sits in a
        class that captures a CUDA graph or in another such function."""
        module = self.ctx.module
        functions = top_level_definitions(module)
        exported = exported_functions(module, exported_names(module))
        # name -> where it is used: a class name (graph class or not) or a function's name,
        # None for module-level code.
        users: dict[str, list[tuple[str, str | None]]] = {}
        for statement in module.body:
            if isinstance(statement, cst.ClassDef):
                user: tuple[str, str | None] = (
                    ("graph", None) if self._captures(statement) else ("other", None)
                )
            elif isinstance(statement, cst.FunctionDef):
                user = ("function", statement.name.value)
            else:
                user = ("other", None)
            for node in descendants(statement):
                if type(node) is cst.Name and node.value in functions:
                    if isinstance(statement, cst.FunctionDef) and node is statement.name:
                        continue
                    users.setdefault(node.value, []).append(user)
        helpers: set[str] = set()
        changed = True
        while changed:  # functions used only by graph classes and by functions found so far
            changed = False
            for name, uses in users.items():
                if name in helpers or id(functions[name]) in exported:
                    continue
                if all(
                    kind == "graph" or (kind == "function" and caller in helpers)
                    for kind, caller in uses
                ):
                    helpers.add(name)
                    changed = True
        return frozenset(helpers)

    def _captures_by_construction(self, class_def: cst.ClassDef) -> bool:
        """Whether the class captures a CUDA graph other than under a flag (`if
        use_graphs:`, `if self.cfg.cuda_graphs:`): a trainer that captures one as an
        option runs its other CUDA calls on every host; a wrapper capturing after its
        warm-up steps (`if self._step == self._warmup_steps - 1:`) is a graph by design."""
        stack: list[tuple[cst.CSTNode, bool]] = [(class_def.body, False)]
        while stack:
            node, optional = stack.pop()
            if (
                isinstance(node, cst.Call)
                and not optional
                and (self.ctx.qualified(node.func) or "") in _GRAPH_CAPTURE
            ):
                return True
            if isinstance(node, cst.If) and _is_flag(node.test):
                optional = True
            stack.extend((child, optional) for child in code_children(node))
        return False

    def _on_device_type(self, call: cst.Call) -> bool:
        """`torch.amp.GradScaler(device=self._device_type)` where this function sets
        `self._device_type = torch.device(self.device).type` (or `model.device.type`
        directly): the scaler is built for the device the program runs on, `"xla"` on an
        XLA host, not for CUDA. A device name from elsewhere (`device=device`, a call's
        result) may be CUDA's and is still judged as CUDA's."""
        device = positional_argument(call, 0) or keyword_argument(call, "device")
        if device is None:
            return False
        value = device.value
        function = self._function()
        if type(value) is cst.Name and function is not None:
            values = local_values(function, value.value)
        elif type(value) is cst.Attribute and function is not None:
            target = self.ctx.module.code_for_node(value)
            values = _attribute_values(function, target)
            owner = self._owner()
            if not values and owner is not None and target.startswith("self."):
                values = _attribute_values(owner, target)  # set in another method
        else:
            values = []
        if not values:
            values = [value]
        return all(_is_device_type(v) for v in values)

    def _disabled(self, node: cst.Call, qualified: str) -> bool:
        """`_disabled` for a call here: its function, class and the module's flags."""
        return _disabled(
            node,
            qualified,
            self.ctx.imports,
            self._function(),
            self.ctx.false_on_xla_host,
            self._owner(),
            self.ctx.module,
        )

    def _function(self) -> cst.FunctionDef | None:
        return next((a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)

    def _owner(self) -> cst.ClassDef | None:
        """The class whose method holds the call (None outside classes)."""
        return next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)

    def _decides(self) -> bool:
        """Whether the call's value feeds a comparison or condition in its statement."""
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, _DECIDING):
                return True
            if isinstance(ancestor, _STATEMENT):
                return False
        return False

    def _cuda_only(self, *, own_test: cst.Call | None = None) -> bool:
        """Under a CUDA guard, in other code a TPU host never runs, or in a class's own
        `cuda()` method, which its caller asked for. `own_test` (the call): the test of an
        `if` that holds the call does not count as a guard of it, and the left side of its
        own `and` does (`torch.cuda.is_available() and torch.cuda.is_bf16_supported()`)."""
        if in_own_method(self.ctx.function, "cuda"):
            return True
        if self._in_cuda_graph_class() or self._in_cuda_graph_helper():
            return True
        if own_test is not None:
            return runs_without_xla((own_test, *self.ctx.ancestors()), self.ctx.imports)
        return self.ctx.runs_without_xla


# Calls that hand back a CUDA stream (`torch.cuda.Stream()` itself raises without CUDA).
_STREAMS = frozenset(
    {
        "torch.cuda.Stream",
        "torch.cuda.ExternalStream",
        "torch.cuda.current_stream",
        "torch.cuda.default_stream",
        "torch.cuda.streams.Stream",
        "torch.cuda.streams.ExternalStream",
    }
)


def _bindings(
    scope: cst.CSTNode, target: str
) -> list[tuple[cst.BaseExpression | None, tuple[cst.CSTNode, ...]]]:
    """Each binding of the name or attribute spelled `target` in `scope` (a function or a
    class): the value bound (None where it is not a plain assignment of one value: a
    tuple's element, a loop variable, an augmented assignment) and the path from the
    binding up to `scope` (innermost first), for its guards."""
    module = cst.Module(body=[])
    found: list[tuple[cst.BaseExpression | None, tuple[cst.CSTNode, ...]]] = []
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(scope, ())]
    while stack:
        node, path = stack.pop()
        here = (node, *path)
        kind = type(node)
        if kind is cst.Assign:
            for t in node.targets:  # type: ignore[attr-defined]
                spelled = module.code_for_node(t.target)
                if spelled == target:
                    value = node.value if len(node.targets) == 1 else None  # type: ignore[attr-defined]
                    found.append((value, here))
                elif target in spelled and isinstance(t.target, cst.Tuple | cst.List):
                    found.append((None, here))
        elif kind is cst.AnnAssign or kind is cst.AugAssign:
            if module.code_for_node(node.target) == target:  # type: ignore[attr-defined]
                found.append((node.value if kind is cst.AnnAssign else None, here))  # type: ignore[attr-defined]
        elif kind is cst.For or kind is cst.WithItem:
            bound = node.target if kind is cst.For else getattr(node.asname, "name", None)  # type: ignore[attr-defined]
            if bound is not None and target in module.code_for_node(bound):
                found.append((None, here))
        stack.extend((child, here) for child in code_children(node))
    return found


def _references(
    value: cst.BaseExpression, path: tuple[cst.CSTNode, ...]
) -> Iterator[tuple[cst.BaseExpression, tuple[cst.CSTNode, ...]]]:
    """The names and attributes an assigned value hands on uncalled (`torch.cuda.amp.
    autocast`), itself or as a branch of a conditional expression, each with its path up
    to the assignment (innermost first)."""
    if type(value) in (cst.Name, cst.Attribute):
        yield value, (value, *path)
    elif type(value) is cst.IfExp:
        inner = (value, *path)
        yield from _references(value.body, inner)  # type: ignore[attr-defined]
        yield from _references(value.orelse, inner)  # type: ignore[attr-defined]


def _imported_by_a_test(module: cst.Module, name: cst.Name) -> bool:
    """Whether a module-level `if` binds `name` by an import (an import chosen per
    accelerator: `if is_npu_available(): from torch.npu.amp import GradScaler`)."""
    for statement in module.body:
        if type(statement) is not cst.If:
            continue
        for node in descendants(statement):
            if type(node) is cst.ImportAlias:
                bound = node.asname.name if node.asname is not None else node.name
                if type(bound) is cst.Name and bound.value == name.value:
                    return True
    return False


def _is_flag(test: cst.BaseExpression) -> bool:
    """`use_graphs`, `not self.cfg.cuda_graphs`, `a and b` of such: a switch set from
    outside, not a comparison of the object's own state."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_flag(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _is_flag(test.left) or _is_flag(test.right)
    return isinstance(test, cst.Name | cst.Attribute)


def _is_device_type(value: cst.BaseExpression) -> bool:
    """`torch.device(x).type`, `model.device.type`: the type of a device the program
    holds."""
    return type(value) is cst.Attribute and value.attr.value == "type"


def _attribute_values(
    function: cst.FunctionDef | cst.ClassDef, target: str
) -> list[cst.BaseExpression]:
    """The values plain assignments in `function` (or every method of a class) give the
    attribute spelled `target` (`self._device_type = ...`)."""
    values: list[cst.BaseExpression] = []
    module = cst.Module(body=[])
    for node in descendants(function.body):
        if (
            type(node) is cst.Assign
            and len(node.targets) == 1
            and module.code_for_node(node.targets[0].target) == target
        ):
            values.append(node.value)
    return values
