from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.cuda_flags import (
    class_cuda_flag,
    code_mentions_xla,
    cuda_flag_places,
    flag_placements,
    flag_properties,
    inherited_flag,
    probe_placement,
    probes_availability,
    stays_on_the_cpu,
)
from xlalint.analysis.devices import (
    ACCELERATOR,
    AUTOCAST_CALLS,
    GPU_TYPES,
    GRAD_SCALER_CALLS,
    TORCH_DEVICE,
    DeviceChoice,
    DeviceChoices,
    chain,
    creates_xla_device,
    cuda_api_kind,
    defers_to_function,
    device_arguments,
    device_string_type,
    device_types,
    has_silent_branch,
    helper_device_types,
    is_device_name,
    mentions_xla,
    only_examined,
    passes_through,
    probe_with_cuda_fallback,
    probes_gpu,
    xla_ruled_out,
    xla_string_source,
)
from xlalint.analysis.guards import counts_gpus, follows_asserted_backend, mentions_cuda
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.statements import last_line_end
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import (
    EXPRESSIONS,
    TRIVIA,
    children,
    descendants,
    names_under,
    top_level_functions,
)

if TYPE_CHECKING:
    from xlalint.context import FileContext

# The keyword of a load (`torch.load`, `torch.jit.load`) that says where its tensors land.
_MAP_LOCATION = "map_location"

# The flag a fix sets where it makes the file import torch_xla only if it is installed.
XLA_FLAG = "XLA_AVAILABLE"
# Where a function's own `if` statements are not: expressions, nested functions and classes.
_NESTED_SCOPES = TRIVIA | EXPRESSIONS | frozenset({cst.FunctionDef, cst.ClassDef})


class DeviceLadderWithoutXla(Rule):
    """
    ## What it does
    Flags device selection that knows CUDA, MPS or the CPU but not XLA:
    `device = "cuda" if torch.cuda.is_available() else "cpu"`,
    `torch.device("cuda" if use_cuda else "cpu")`, and `if`/`elif`/`else` chains (or a
    helper function's sequence of `if ...: return device`) that set or return a CUDA or MPS
    device, or torch's current accelerator, as the current pytorch/examples do
    (`torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")`,
    with `use_accel = not args.no_accel and torch.accelerator.is_available()`), and
    ternaries that keep a few listed device types and turn every other one into CUDA
    (`t if t in {"npu", "xpu"} else "cuda"`: an XLA request becomes CUDA). A branch may
    return a call of a function of the same module whose body is one `return` of a device
    (`def gpu(i=0): return torch.device(f"cuda:{i}")`, then `if num_gpus() > i: return
    gpu(i)` / `return cpu()`): it chooses what that function returns. A flag assigned
    only from a CUDA availability probe (`use_cuda = torch.cuda.is_available() and not
    args.cpu`), or from a test of where a value lives (`use_cuda =
    next(self.model.parameters()).is_cuda`: false with the model on the XLA device),
    whose true side places values on CUDA (`if use_cuda: model.cuda()`,
    `move_to_cuda(sample) if use_cuda else sample`, a call asked to by a keyword named for
    CUDA: `DataLoader(kg, use_cuda="batch")`) is the function's device choice too,
    reported at the probe, unless the function has a ladder of its own (reported there)
    or mentions XLA; a flag that places nothing (`pin_memory=use_cuda`, seeding) is not.
    A probe of the device type that never names XLA with a CUDA fallback
    (`torch._utils._get_available_device_type() or "cuda"`, measured by hand on the XLA
    CPU device: the probe returns None there, so the choice is CUDA) is reported here,
    not as a CUDA string (XLA302). So is an attribute a method assigns from a CUDA
    availability probe (`self.use_gpu = torch.cuda.is_available() and use_gpu` in
    `__init__`) where `if self.use_gpu:` (without `else`) is the class's only placement
    (`imgs = imgs.cuda()`): reported at the probe; the `.cuda()` calls under it, here or
    in subclasses that only read the flag, are not reported again (XLA301).
    A CUDA flag of the instance, whatever sets it (`self.use_cuda, self.num_gpus =
    self.setup_training_environment()`, a helper of another module), is the class's device
    choice where `if self.use_cuda:` (without `else`, or with an `else` that places
    nothing: `else: loader = DataLoader(kg)`) places values on CUDA
    (`self.model.cuda()`) and the class moves nothing to a device chosen elsewhere
    (`.to(self.device)`) and mentions XLA nowhere in its code (its docstring does not
    count): reported once, at the first such `if`, unless the file has a ladder that tests
    something else (a script's `device = torch.device("cuda" if use_cuda else "cpu")`
    that hands `use_cuda` to the class): that ladder is the program's choice, or unless
    the flag is a base class's of another project module (neither the class nor a base
    class of this module binds it, and the class derives from one the module imports from
    outside torch: ding's `class DQNPolicy(Policy)` reading the `self._cuda` that
    `base_policy.py` sets beside its device): that base chooses the device, in its own
    file, and the placements here follow it. Other
    ladders on that flag (an autocast helper's `device = "cuda"` under `if
    self.use_cuda:`) follow that choice and are not reported: one finding per cause. A
    property of the class (or of a base class of the module) that hands back the flag
    (`@property def use_cuda(self): return self._use_cuda`) is that flag: `if
    self.use_cuda: data = data.cuda()` in `set_weights` repeats the constructor's `if
    self._use_cuda:` placement, and is not reported again. Nor
    is a chain whose only non-CPU device comes from a function of the module that is no
    one-line helper (`if defaults.use_cuda == False: device = "cpu"` / `elif device is
    None: device = default_device()`): that function decides, and its own ladder is the
    finding. A ternary that fills in a default for a device left out (`torch.device("cuda"
    if torch.cuda.is_available() else "cpu") if device is None else device`, realesrgan's)
    keeps the device handed in and chooses nothing: the ladder inside it is the choice,
    and an `if` whose branches each hold such a default (`if gpu_id:`) is no ladder of its
    own. It reports once per ladder, at its `if` or ternary; a ladder inside one
    branch of a longer `if` chain is reported on its own, unless an earlier branch of that
    chain holds a ladder setting the same name (`if platform.system() == "Darwin":` with
    `device = "mps"` / `else: device = "cpu"`, then `else: device = "cuda" if
    torch.cuda.is_available() else "cpu"`): the branches choose one device between them,
    reported once, at the first ladder. So is an `if` that overrides, for the same name,
    what a ternary before it in the same block chose (`self.device =
    torch.device("cuda" if torch.cuda.is_available() else "cpu")`, then `if
    torch.backends.mps.is_available(): self.device = torch.device("mps")`): one choice,
    reported at the ternary (or not at all where the ternary asks for XLA first). A
    function that returns the
    device through several ladders (`if torch.cuda.is_available(): return "cuda"`, then
    `if os.environ.get("ENABLE_MPS"): if torch.backends.mps.is_available(): return "mps"`,
    then `return "cpu"`) makes one choice, what it returns: reported once, at its first
    ladder. `torch.device(torch.cuda.current_device())` is a CUDA device, so is an integer
    alone, a literal or a rank or GPU number (`torch.device(rank)`, `torch.device(0)`,
    `torch.device(args.local_rank)`: `cuda:<rank>`, with torch_xla imported too;
    `torch.device("cpu") if args.cpu else torch.device(rank)` is a ladder), and CUDA devices
    spelled the older ways count as CUDA (`"cuda:{}".format(gpu)`,
    `"cuda:%d" % gpu`, `"cuda:" + str(gpu)`: `torch.device("cuda:{}".format(gpu)) if gpu
    >= 0 else torch.device("cpu")` is a ladder, and so is garage's
    `torch.device(("cuda:" + str(_GPU_ID)) if _USE_GPU else "cpu")`). A list of every
    GPU's device made by a device helper (`[gpu(i) for i in range(num_gpus())]` with
    `def gpu(i): return torch.device(f"cuda:{i}")` and `num_gpus()` returning
    `torch.cuda.device_count()`, also over `range(min(n, num_gpus()))`) chooses the devices to use:
    on an XLA host it is empty, and its users fall back to the CPU. A list that spells the CUDA
    string itself (`[torch.device(f"cuda:{d}") for d in ...]`) is XLA302's finding, one per cause;
    lists of names or memory figures per GPU choose nothing. A chain whose branches pick lists
    of devices, every element a device (`if torch.cuda.is_available(): return
    [f"cuda:{i}" for i in range(torch.cuda.device_count())]` / `else: return ["cpu"]`:
    FlagEmbedding's `get_target_devices`), is a ladder as one picking a single device is,
    where its tests ask what the host has; lists built where the caller leaves a parameter
    out (monai's `if devices is None: devices = [torch.device(f"cuda:{d:d}") ...]`) ask
    nothing of the host, and spell their CUDA string (XLA302's).
    An integer GPU id chosen by a CUDA probe, -1 for the CPU by the common convention
    (`if cuda.device_count() > 0: cuda_device = 0` / `else: cuda_device = -1`, in a name
    for a device or a GPU), is a ladder too; counts (`n_gpu = 1` / `n_gpu = 0`) and other
    settings are not. A chain
    whose branches move values to devices rather than naming one is a ladder where two
    branches move to two known types, one of them a GPU (`if is_xpu_available():
    model.to("xpu:0")` / `elif torch.cuda.is_available(): model.to("cuda")`; `if
    self.device == "cuda": x = x.cuda()` / `elif self.device == "cpu": x = x.cpu()`); a move
    to a device chosen elsewhere (`.to(local_rank)`) chooses nothing, nor does one guarded
    move of a value handed in (`def to_cuda(x): if torch.cuda.is_available(): x =
    x.cuda()`, an embedding function's `token_ids`): its caller put it where it is. One
    guarded move (without `else`, or with one that places nothing) of values the code made
    or fetched itself is a choice between CUDA and the CPU, where they start:
    `t5, tokenizer = get_model_and_tokenizer(name)`, then `if torch.cuda.is_available():
    t5 = t5.cuda()` (phenaki's and muse-maskgit's `t5_encode_text`), `MODEL =
    torch.hub.load(...)` in a getter, `self.encoder = T5EncoderModel.from_pretrained(...)`
    in `__init__`: on an XLA host the model runs on the CPU. Reported at the `if`, unless
    the value is also moved to another device in the function (`model.to(device)`), the
    function (the module, for module-level code) has a ladder of its own or mentions XLA,
    or a CUDA test above it decides.

    Left alone: a ladder where any condition or branch mentions XLA or TPUs (`torch_xla`,
    `xm.xla_device()`, `xr.`, `"xla"`, `use_tpu`); for a helper function that returns the
    device, anywhere in that function. A method that returns the device, in a class that
    creates the XLA device in another method (`xm.xla_device()`, `torch_xla.device()`): the
    class decides when that fallback runs. A ladder reached only where a test for XLA
    failed: in the `else` of one (`if device == "xla": ... else: <ladder>`), or after one
    that returns or raises (`if isinstance(strategy, XLAStrategy): return XLAPrecision()`).
    Also left alone: a choice between CUDA devices only (`"cuda:0" if rank == 0 else
    "cuda:1"`, or a helper's `if device_index is None: return "cuda"` then `return
    f"cuda:{device_index}"`, whose tests ask about no device or backend: every branch and
    the return after them one GPU backend's) and guards that set no device; a choice
    whose tests only ask whether the process group is NCCL (`torch.device("cuda") if
    self.backend == dist.Backend.NCCL else
    self._default_device`): it gives the collectives what NCCL needs, which only a CUDA
    host creates; likewise a choice by the backend after the code has kept it to named
    backends none of which is XLA's (`assert backend in ["gloo", "nccl"]`, or `if backend
    not in (...): raise`, then detectron2's `torch.device("cpu" if backend == "gloo" else
    "cuda")`: an XLA run's process group never gets there; without that assertion, the
    `else` is an XLA run's and picks CUDA); an `if` without `else` that, under a GPU
    test, sets only devices of unknown type (`if self.cuda and pipelined: self.last_device
    = torch.device(cfg.devices[-1])`): it configures the GPU path, and where the test
    fails the device chosen before stands; a ternary or an `if` without `else` that
    remaps the value its test examines and passes every other one through
    (`"cpu" if device == "mps" else device`,
    `if device_map == "cuda": device_map = f"cuda:{rank}"`), and an `if` whose tests list
    values of what they examine (also narrowed by an `and`: `if self.device.type == "mps"
    and do_3D:`) and whose `else` sets the same name to that value itself (`if device ==
    "cuda": device_vad = f"cuda:{device_index}"` / `else: device_vad = device`): an XLA
    device is kept as given. So are `if` chains without `else` (or with one that only
    raises again) whose every branch is taken only for a value already found on another
    accelerator, its device's type compared with that accelerator's (`if
    expected_device.type == "cuda" and torch.cuda.is_available(): current =
    torch.device("cuda", torch.cuda.current_device())`, `if torch.device(inp_device).type
    == "cuda" and "out of memory" in str(exc): canonical_device = torch.device("cpu")`):
    they test where a value is, and an XLA host, whose values are on XLA, runs no branch;
    not where the name they set is given a known device elsewhere in the function
    (`device = "cpu"`, then `if model.device.type == "cuda": device = "cuda"`), nor where a
    branch returns.
    So is the device the caller handed in, where a branch selects none and the name the
    chain sets holds a parameter before it (`self.device = device`, then `if self.is_ddp:
    self.device = torch.device("cuda", rank)` / `else: print(...)`): the chain is no
    ladder without XLA, and the CUDA device its DDP branch forces whatever was handed in
    is XLA302's finding. The same for an `if` without `else` on a run setting (no
    hardware probe) whose CUDA device sets a name nothing else in the function (for a
    `self.` attribute, the class) sets (rl-games' `if self.multi_gpu: self.device_name =
    "cuda:" + str(self.local_rank)`): it chooses no alternative.
    A test after the last branch that sets a device chooses nothing:
    `if gen == "cpu": rand_device = "cpu"` / `elif gen == "cuda": raise ...` follows the
    generator's device. A device set on each pass of a loop under a GPU test (`if
    torch.cuda.is_available(): for i in range(torch.cuda.device_count()): device =
    torch.device(f"cuda:{i}")`, to log each GPU's memory statistics) names every GPU in
    turn and chooses none. An `if` that returns a device only for some values of what it
    tests and the value itself after it (`if device.index is None: return
    torch.device("cuda", torch.cuda.current_device())` / `return device`) passes XLA
    devices through. A ternary that fills part of a longer f-string
    (`f"{'cuda' if is_cuda else 'cpu'}_time_total"`) builds a name, not a device.
    A ternary that only says where a load puts the tensors it reads, the `map_location`
    of `torch.load` or `torch.jit.load` (`map_location="cpu" if not
    torch.cuda.is_available() else None`), directly or through a name used for nothing
    else, chooses no compute device: the weights are copied into a model placed
    elsewhere, and the CPU is the right place to load them on an XLA host (a ladder
    whose device also places the model is still reported).
    A ternary given to a CUDA scaler or autocast (`GradScaler("xpu" if ... else "cuda")`)
    is part of that call, which XLA303 reports, and so is any autocast's or scaler's
    device type (`torch.autocast(device_type="cuda" if not
    torch.backends.mps.is_available() else "mps")`): it picks whose mixed precision the
    region uses and places no value; a ternary assigned to a name that its
    function only prints or compares (`print(f"Device: {device}")` in a benchmark report)
    or hands to a query about it alone (`get_backend(device)`) places nothing; handed to
    a getter beside other values (`get_problem(rank, world_size, batch_size, device,
    model_name)`) it places what that builds.

    ## Why is this bad?
    On an XLA host every GPU probe is false, so the ladder quietly picks the CPU (or, for a
    branch that only knows `cuda:N`, a device that is not there). `torch.accelerator` does
    not know XLA either: measured with torch 2.9 and torch_xla 2.9 imported
    (`PJRT_DEVICE=CPU`, no GPU), `torch.accelerator.is_available()` is False,
    `device_count()` is 0 and `current_accelerator()` is `device(type='cuda')` (torch's
    CUDA build), so a `use_accel` ladder picks the CPU. The script runs, slowly
    and without an error, on the host CPU instead of the TPU.

    ## Example
    ```python
    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    ```

    ## Use instead
    Ask for XLA first:
    ```python
    try:
        import torch_xla

        XLA_AVAILABLE = True
    except ImportError:
        XLA_AVAILABLE = False

    if XLA_AVAILABLE:
        device = torch.device("xla")
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    ```

    ## Fix safety
    Unsafe. The fix puts an XLA choice before the ladder, in its style: a ternary gets
    `"xla" if XLA_AVAILABLE else ...` (a string where the ladder chooses strings, else
    `torch.device("xla")`); an `if`/`elif` chain gets a first branch that repeats the first
    GPU branch (`device = torch.device("xla")`, `model = model.to(device)`), with its
    `.cuda(...)` moves made to the device it stores (`model = model.cuda(args.gpu)` becomes
    `model = model.to(device)`) and without its GPU-only settings (`cudnn.benchmark`,
    `torch.cuda.set_device`), or else only sets or returns the device. Detection: where the
    file does not import torch_xla, the fix adds `try: import torch_xla; XLA_AVAILABLE =
    True` / `except ImportError: XLA_AVAILABLE = False` after its imports, so the script
    still runs, on its CUDA or CPU path, where torch_xla is not installed; where the file
    has such a guard already, its flag is used; where it imports torch_xla otherwise,
    `importlib.util.find_spec("torch_xla")`. `PJRT_DEVICE` is not consulted: measured with
    torch_xla 2.9 on a host without a TPU, `torch_xla.device()` is `xla:0` with
    `PJRT_DEVICE=CPU` and also without it (torch_xla warns "Defaulting to PJRT_DEVICE=CPU");
    where a TPU is attached, torch_xla picks it (its documented default; not measured here).
    The fix is unsafe because a host with both a GPU and torch_xla installed now runs on
    XLA, and the XLA branch wins over flags such as `--no-cuda` or `--gpu`. No fix for a
    ternary inside an f-string (`f"{'cuda' if c else 'cpu'}:{rank}"`: XLA takes no index),
    nor for a ladder that returns device helpers' results (`return gpu(i)`: the helper,
    not the ladder, spells the device), nor where the ladder's value is not used as a
    device (`accelerator = "cuda"`, a function `backend()` returning `"cuda"`): only
    values given to `torch.device(...)`, a `device=` argument or `.to(...)`, stored in a
    device-like name, or returned by a function named for devices (`get_device`) get the
    XLA branch. Fixes that move values to the XLA device
    in a file with such a ladder go together with this one (see XLA403), or, where the file
    does not import torch_xla yet, wait for its guard.

    ## Runtime evidence
    Not measured by the harness yet. With `PJRT_DEVICE=CPU` and no GPU, the ladder picks
    `cpu` and the XLA metrics stay at zero executions (`ExecuteComputation`): nothing runs on
    the XLA device. The harness will record the chosen device and the execution count.
    """

    code = "XLA305"
    name = "device-ladder-without-xla"
    message = "Device selection knows {types} but not XLA: {outcome}"
    hint = "add a `torch_xla.device()` branch first"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    decides_device = True
    triggers = ("cuda", "mps", "accelerator")
    # `~gpu`: a ladder over same-module helpers (`if num_gpus() > i: return gpu(i)`).
    screen = ("~cuda", "'cuda", "~mps", "'mps", "~accelerator", "'accelerator", "~gpu")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._placements: dict[tuple[int, str], list[cst.If]] = {}
        self._functions: frozenset[str] | None = None
        self._returning: dict[int, cst.If | None] = {}  # by id(function)
        # The flags the file's ladders test (None for a test that is no instance flag).
        self._other_ladders: set[str | None] | None = None
        self._properties: dict[int, dict[str, str]] = {}  # by id(class)

    def _flag(self, test: cst.BaseExpression) -> str | None:
        """The CUDA flag of the instance `test` reads (`class_cuda_flag`), a property of the
        class that hands one back (`self.use_cuda` returning `self._use_cuda`) read as that
        flag: one flag, one device choice."""
        flag = class_cuda_flag(test)
        return None if flag is None else self._flag_properties().get(flag, flag)

    def _flag_properties(self) -> dict[str, str]:
        """`cuda_flags.flag_properties` of the class being walked (none outside classes)."""
        class_def = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
        if class_def is None:
            return {}
        known = self._properties.get(id(class_def))
        if known is None:
            known = self._properties[id(class_def)] = flag_properties(self.ctx.module, class_def)
        return known

    def _module_functions(self) -> frozenset[str]:
        if self._functions is None:
            self._functions = top_level_functions(self.ctx.module)
        return self._functions

    def visit_IfExp(self, node: cst.IfExp) -> None:
        parent = self.ctx.parent
        if isinstance(parent, cst.IfExp) and node is not parent.test:
            outer = self.ctx.device_choices.of(parent)
            if outer is None or outer.is_ladder:
                return  # a nested ternary is part of its parent's ladder
            # (`("cuda" if ... else "cpu") if device is None else device`: the default
            # filled in for a device left out is the choice, not the remap around it.)
        if isinstance(parent, cst.FormattedStringExpression) and _builds_a_name(
            next(a for a in self.ctx.ancestors() if isinstance(a, cst.FormattedString))
        ):
            return  # `f"{'cuda' if is_cuda else 'cpu'}_time_total"`: a key, not a device
        if self._argument_of_cuda_api():
            return  # `GradScaler("xpu" if ... else "cuda")`: XLA303 reports the call
        if self._maps_a_load():
            return  # `torch.load(f, map_location="cpu" if ... else None)`: where weights land
        choice = self.ctx.device_choices.of(node)
        if choice is None or not choice.is_ladder:
            return
        if follows_asserted_backend(node.test, (node, *self.ctx.ancestors())):
            return  # `"cpu" if backend == "gloo" else "cuda"` after `assert backend in [...]`
        # After the ladder test: it reads the whole function, and most ternaries are none.
        if self._only_examined():
            return  # `device = ...ladder...` only printed or compared: nothing placed
        if self.ctx.device_choices.in_ladder(self.ctx.ancestors(), ternaries=True):
            return  # reported (or excused) with the enclosing ladder
        if "xla" in choice.types or mentions_xla(node, self.ctx.imports):
            return
        if self._xla_ruled_out(node) or self._reads_a_placing_flag(node.test):
            return
        if self._later_branch_of_one_choice(node):
            return  # another branch of the enclosing `if` chose this name first
        self.report(node, self._message(choice), fix=self._ternary_fix(node))

    def _only_examined(self) -> bool:
        """The ternary's statement assigns one name (`device = torch.device("cuda" if ...
        else "cpu")`) that the function then only prints or compares (a benchmark report's
        `print(f"Device: {device}")`): a device named, not chosen for anything."""
        function: cst.FunctionDef | None = None
        assign: cst.Assign | None = None
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.Assign) and assign is None:
                assign = ancestor
            if isinstance(ancestor, cst.Lambda | cst.ClassDef):
                return False
            if isinstance(ancestor, cst.FunctionDef):
                function = ancestor
                break
        if function is None or assign is None or len(assign.targets) != 1:
            return False
        target = assign.targets[0].target
        return isinstance(target, cst.Name) and only_examined(
            function, target.value, self.ctx.imports
        )

    def _maps_a_load(self) -> bool:
        """The ternary is where a load puts the tensors it reads: the `map_location` of
        `torch.load`, `torch.jit.load` or `load_state_dict_from_url`, directly or through a
        name its statement binds that the function uses only as a `map_location`. The
        weights are then copied into a model that is placed elsewhere; on an XLA host the
        CPU is the right place to load them to, once, and no computation runs there."""
        ancestors = self.ctx.ancestors()
        parent = next(ancestors, None)
        if isinstance(parent, cst.Arg):
            return parent.keyword is not None and parent.keyword.value == _MAP_LOCATION
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return False
        target = parent.targets[0].target
        function = next((a for a in ancestors if isinstance(a, cst.FunctionDef)), None)
        if function is None or not isinstance(target, cst.Name):
            return False
        mentions, maps = _load_mappings(function)
        uses = maps[target.value]
        # Bound once, used only to map loads.
        return uses > 0 and mentions[target.value] == uses + 1

    def _argument_of_cuda_api(self) -> bool:
        """The ternary being visited is an argument of a CUDA API call (a scaler or an
        autocast for a device): that call is the finding (XLA303), one per cause. So is
        the device type of any autocast or scaler (`torch.autocast(device_type="cuda" if
        not torch.backends.mps.is_available() else "mps", ...)`): it says which
        device's mixed precision the region uses, and places nothing; the autocast is
        judged as such (XLA303)."""
        ancestors = self.ctx.ancestors()
        parent, call = next(ancestors, None), next(ancestors, None)
        if not (isinstance(parent, cst.Arg) and isinstance(call, cst.Call)):
            return False
        imports = self.ctx.imports
        if cuda_api_kind(call, imports) is not None:
            return True
        qualified = imports.resolve(call.func) or ""
        if qualified in AUTOCAST_CALLS:
            keyword = "device_type"
        elif qualified in GRAD_SCALER_CALLS:
            keyword = "device"
        else:
            return False
        if parent.keyword is not None:
            return parent.keyword.value == keyword
        return not parent.star and next(iter(call.args), None) is parent

    def visit_Assign(self, node: cst.Assign) -> None:
        """`use_cuda = torch.cuda.is_available() and not args.cpu`, then `if use_cuda:
        model.cuda()`: a flag that chooses between CUDA and the CPU (see `cuda_flags`)."""
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if type(target) is cst.Attribute:
            self._probed_attribute(node, target)
            return
        if not isinstance(target, cst.Name):
            return
        if not probes_availability(node.value, self.ctx.imports):
            return
        ancestors = list(self.ctx.ancestors())
        function = next((a for a in ancestors if isinstance(a, cst.FunctionDef)), None)
        if function is None or self.ctx.under_cuda_guard:
            return
        imports = self.ctx.imports
        if mentions_xla(function, imports) or self._xla_ruled_out(node):
            return
        choices = self.ctx.device_choices
        if any(
            isinstance(n, cst.If | cst.IfExp) and choices.is_ladder(n)
            for n in descendants(function.body)
        ):
            return  # the function's ladder is the finding
        if not cuda_flag_places(function, node.targets[0].target.value, imports):
            return
        message = self.message.format(
            types="CUDA/the CPU", outcome="on an XLA host it leaves everything on the CPU"
        )
        self.report(node.value, message)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """`device_type = _get_available_device_type() or "cuda"`: a probe that never names
        XLA, with CUDA where it finds nothing: an XLA host gets CUDA."""
        if not probe_with_cuda_fallback(node, self.ctx.imports):
            return
        if self.ctx.runs_without_xla or self._xla_ruled_out(node):
            return
        message = self.message.format(
            types="CUDA and the devices torch probes",
            outcome="on an XLA host the probe finds nothing and the fallback picks CUDA",
        )
        self.report(node, message)

    def _probed_attribute(self, node: cst.Assign, target: cst.Attribute) -> None:
        """`self.use_gpu = torch.cuda.is_available() and use_gpu` in a method, then `if
        self.use_gpu: imgs = imgs.cuda()` as the class's only placement: the attribute is
        the class's device choice, reported at the assignment. A flag `_flag_placement`
        recognises by its name (`self.use_cuda`) is reported there, once."""
        if not (isinstance(target.value, cst.Name) and target.value.value == "self"):
            return
        flag = self._flag_properties().get(target.attr.value, target.attr.value)
        if class_cuda_flag(target) is not None:
            return
        if not probes_availability(node.value, self.ctx.imports):
            return
        if self.ctx.under_cuda_guard or self._xla_ruled_out(node):
            return
        class_def, placements = self._class_placements(flag)
        if class_def is None or not placements or self._ladder_elsewhere(flag):
            return
        message = self.message.format(
            types="CUDA/the CPU", outcome="on an XLA host it leaves everything on the CPU"
        )
        self.report(node.value, message)

    def _class_placements(self, flag: str) -> tuple[cst.ClassDef | None, list[cst.If]]:
        """The enclosing class and its `if self.<flag>:` placements on CUDA (see
        `cuda_flags.flag_placements`), none where the class mentions XLA; once per class
        and flag."""
        class_def = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
        if class_def is None:
            return None, []
        key = (id(class_def), flag)
        if key not in self._placements:
            imports = self.ctx.imports
            self._placements[key] = (
                []
                if code_mentions_xla(class_def, imports)
                else flag_placements(class_def, flag, imports, self._flag_properties())
            )
        return class_def, self._placements[key]

    def _ladder_elsewhere(self, flag: str) -> bool:
        """The file has a device ladder that does not test this flag (`device = "cuda" if
        args.cuda else "cpu"` in the script that builds the class): that is the program's
        choice, reported there, and the flag most likely follows it."""
        if self._other_ladders is None:
            choices = self.ctx.device_choices
            self._other_ladders = {
                class_cuda_flag(n.test)
                for n in descendants(self.ctx.module)
                if isinstance(n, cst.If | cst.IfExp)
                and (choice := choices.of(n)) is not None
                and choice.is_ladder
            }
        # A ladder on a property that hands back the flag (`self.use_cuda`) tests it too.
        same = {name for name, read in self._flag_properties().items() if read == flag}
        return bool(self._other_ladders - {flag} - same)

    def _reads_a_placing_flag(self, test: cst.BaseExpression) -> bool:
        """The ladder's test is a CUDA flag of the instance that the class's placement
        (`if self.use_cuda: self.model.cuda()`) is reported for: one finding per cause, at
        the placement; a ladder that only reads the flag (an autocast helper's `device =
        "cuda"`) follows it."""
        flag = self._flag(test)
        return flag is not None and bool(self._class_placements(flag)[1])

    def _flag_placement(self, node: cst.If) -> None:
        """`if self.use_cuda: self.model.cuda()`: a CUDA flag of the instance, set
        wherever (a method of another module), decides where the class puts its values,
        and nothing else places them. Reported at the class's first such `if`."""
        flag = self._flag(node.test)
        if flag is None or not stays_on_the_cpu(node.orelse):
            return
        class_def, placements = self._class_placements(flag)
        if not placements or placements[0] is not node or self._ladder_elsewhere(flag):
            return
        imports = self.ctx.imports
        if class_def is not None and inherited_flag(self.ctx.module, class_def, flag):
            return  # the base of another module that sets the flag chooses the device
        if any(
            isinstance(a, cst.If | cst.IfExp) and mentions_cuda(a.test, imports)
            for a in self.ctx.ancestors()
        ) or self._xla_ruled_out(node):
            return
        message = self.message.format(
            types="CUDA/the CPU", outcome="on an XLA host it leaves everything on the CPU"
        )
        self.report(node, message, end_node=node.test)

    def _probe_placement(self, node: cst.If) -> None:
        """`if torch.cuda.is_available(): t5 = t5.cuda()` of a model the function loaded
        itself (see `cuda_flags.probe_placement`): CUDA or the CPU, reported at the `if`,
        unless the function (the module, at its level) has a ladder of its own or mentions
        XLA, or a CUDA test above already decides."""
        imports = self.ctx.imports
        ancestors = list(self.ctx.ancestors())
        if any(
            isinstance(a, cst.If | cst.IfExp) and mentions_cuda(a.test, imports) for a in ancestors
        ):
            return
        function = self.ctx.function_node
        key = self.ctx.function
        class_name = key.class_name if key is not None else None
        if not probe_placement(node, function, class_name, self.ctx.module, imports):
            return
        scope: cst.CSTNode = function if function is not None else self.ctx.module
        if mentions_xla(scope, imports) or self._xla_ruled_out(node):
            return
        choices = self.ctx.device_choices
        if any(
            isinstance(n, cst.If | cst.IfExp) and choices.is_ladder(n) for n in descendants(scope)
        ):
            return  # the function's ladder is the finding
        message = self.message.format(
            types="CUDA/the CPU", outcome="on an XLA host it leaves everything on the CPU"
        )
        self.report(node, message, end_node=node.test)

    def visit_If(self, node: cst.If) -> None:
        parent = self.ctx.parent
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an `elif`: part of the chain that starts above
        choice = self.ctx.device_choices.of(node)
        if (choice is None or not choice.is_ladder) and self._gpu_id_ladder(node):
            message = self.message.format(
                types="CUDA/the CPU", outcome="on an XLA host it picks the CPU"
            )
            self.report(node, message, end_node=node.test)
            return
        if choice is None or not choice.is_ladder:
            self._flag_placement(node)
            self._probe_placement(node)
            return
        if self._reads_a_placing_flag(node.test):
            return
        choices = self.ctx.device_choices
        if choices.keeps_handed_device(node, self.ctx.ancestors()):
            return  # a branch keeps the caller's device; a forced CUDA is XLA302's
        if defers_to_function(node, self.ctx.imports, self._module_functions(), choices.helpers):
            return  # `elif device is None: device = default_device()`: its ladder chooses
        if self.ctx.device_choices.in_ladder(self.ctx.ancestors()):
            return  # nested in a ladder's branch: reported with it
        if self._later_branch_of_one_choice(node):
            return  # another branch of the enclosing `if` chose this name first
        # Sibling `if` statements that choose devices form one ladder
        # (`if cuda: return ...` / `if mps: return ...` / `return cpu`).
        # A chain with its own `else` is a whole choice: it stands alone.
        siblings = parent.body if isinstance(parent, cst.IndentedBlock | cst.Module) else (node,)
        if _has_else(node):
            siblings = (node,)
        group = [
            c
            for s in siblings
            if isinstance(s, cst.If)
            and (s is node or not _has_else(s))
            and (c := self.ctx.device_choices.of(s))
        ]
        first_ladder = next(c for c in group if c.is_ladder)
        if first_ladder.node is not node:
            return
        ancestors = list(self.ctx.ancestors())
        if all(choices.follows_placement(c.node, ancestors) for c in group):
            return  # every branch is for a value found on another accelerator: no choice
        if all(
            follows_asserted_backend(test, (c.node, *ancestors))
            for c in group
            for test in chain(c.node)[0]
        ):
            return  # the device follows a process group backend asserted before
        if _refines_a_ternary_before(node, siblings, self.ctx.device_choices):
            return  # `device = "cuda" if ... else "cpu"`, then `if mps: device = "mps"`
        following = next((b for a, b in itertools.pairwise(siblings) if a is node), None)
        if len(group) == 1 and passes_through(node, following, self.ctx.imports):
            return
        scope: list[cst.CSTNode] = [c.node for c in group]
        imports = self.ctx.imports
        if any(c.returns for c in group):
            ancestors = list(self.ctx.ancestors())
            at = next((i for i, a in enumerate(ancestors) if isinstance(a, cst.FunctionDef)), None)
            if at is not None:
                scope = [ancestors[at]]
                # A method returning the device, in a class that creates the XLA device
                # in another method (`PartialState.default_device`): the class decides when.
                owner = ancestors[at + 2] if at + 2 < len(ancestors) else None
                if isinstance(owner, cst.ClassDef) and creates_xla_device(owner, imports):
                    return
                if self._first_returning_ladder(ancestors[at]) is not node:
                    return  # the function's device is one choice, reported at its first rung
        if any("xla" in c.types for c in group) or any(mentions_xla(n, imports) for n in scope):
            return
        if any(c.returns for c in group) and self._one_backend(group, siblings):
            return  # `if index is None: return "cuda"`, then `return f"cuda:{index}"`
        if self._xla_ruled_out(node):
            return
        types = frozenset().union(*(c.types for c in group))
        if any(c.returns for c in group):
            types |= self._returned_after(siblings, group[-1].node)
        self.report(
            node, self._message(choice, types), end_node=node.test, fix=self._chain_fix(node)
        )

    def _gpu_id_ladder(self, node: cst.If) -> bool:
        """`if cuda.device_count() > 0: cuda_device = 0` / `else: cuda_device = -1`: an
        integer GPU id, -1 for the CPU by the common convention, chosen by a CUDA probe."""
        if not isinstance(node.orelse, cst.Else) or not mentions_cuda(node.test, self.ctx.imports):
            return False
        gpu, cpu = _int_assignment(node.body), _int_assignment(node.orelse.body)
        if gpu is None or cpu is None or gpu[0] != cpu[0] or not (gpu[1] >= 0 > cpu[1]):
            return False
        if not (is_device_name(cst.Name(gpu[0])) or _GPU_ID_NAME.search(gpu[0])):
            return False
        return not self._knows_xla(node)

    def visit_ListComp(self, node: cst.ListComp) -> None:
        """`[gpu(i) for i in range(num_gpus())]`, `[torch.device(f"cuda:{i}") for i in
        range(torch.cuda.device_count())]`: the devices to use are every GPU, and none on
        an XLA host, where the caller falls back to the CPU."""
        for_in = node.for_in
        if for_in.inner_for_in is not None or for_in.ifs or not self._over_gpus(for_in.iter):
            return
        helpers = self.ctx.device_choices.helpers
        types = helper_device_types(node.elt, helpers)
        if not types or "cuda" not in types or "xla" in types:
            return  # a CUDA string spelled in the list itself is XLA302's: one cause
        if self.ctx.runs_without_xla or self._knows_xla(node):
            return
        message = self.message.format(
            types="CUDA", outcome="on an XLA host the list is empty and the CPU is used"
        )
        self.report(node, message)

    def _over_gpus(self, iterated: cst.BaseExpression) -> bool:
        """`range(torch.cuda.device_count())`, `range(num_gpus())` with `def num_gpus():
        return torch.cuda.device_count()`, `range(min(n, num_gpus()))`: one pass per GPU."""
        if not (
            isinstance(iterated, cst.Call)
            and isinstance(iterated.func, cst.Name)
            and iterated.func.value == "range"
            and len(iterated.args) == 1
        ):
            return False
        bound = iterated.args[0].value
        if (
            isinstance(bound, cst.Call)
            and isinstance(bound.func, cst.Name)
            and bound.func.value == "min"
        ):
            return any(self._counts_gpus(arg.value) for arg in bound.args)
        return self._counts_gpus(bound)

    def _counts_gpus(self, node: cst.BaseExpression) -> bool:
        """A count of CUDA devices, or a call of a function of this module whose body
        returns one."""
        imports = self.ctx.imports
        if counts_gpus(node, imports):
            return True
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
            return False
        name = node.func.value
        return any(
            isinstance(statement, cst.FunctionDef)
            and statement.name.value == name
            and any(
                isinstance(n, cst.Return) and n.value is not None and counts_gpus(n.value, imports)
                for n in descendants(statement.body, _NESTED_SCOPES)
            )
            for statement in self.ctx.module.body
        )

    def _first_returning_ladder(self, function: cst.FunctionDef) -> cst.If | None:
        """The first `if` ladder of `function` (not of a function nested in it) that returns
        a device: `if torch.cuda.is_available(): return "cuda"`, then `if
        os.environ.get(...): if torch.backends.mps.is_available(): return "mps"`, then
        `return "cpu"` is one choice, what the function returns."""
        key = id(function)
        if key not in self._returning:
            choices = self.ctx.device_choices
            self._returning[key] = next(
                (
                    n
                    for n in descendants(function.body, _NESTED_SCOPES)
                    if isinstance(n, cst.If)
                    and (choice := choices.of(n)) is not None
                    and choice.is_ladder
                    and choice.returns
                ),
                None,
            )
        return self._returning[key]

    def _later_branch_of_one_choice(self, node: cst.If | cst.IfExp) -> bool:
        """`node` is a ladder in a branch of an enclosing `if` (in its function) whose
        earlier branch holds a ladder that sets the same name: `if platform.system() ==
        "Darwin":` with `device = "mps"` / `else: device = "cpu"`, then `else: device =
        "cuda" if torch.cuda.is_available() else "cpu"`, and `return torch.device(device)`.
        The branches choose one device between them: one finding, at the first ladder."""
        names = _ladder_targets(node, list(self.ctx.ancestors()))
        if not names:
            return False
        outer: cst.If | None = None
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef | cst.Module):
                break
            if isinstance(ancestor, cst.If):
                outer = ancestor
        if outer is None:
            return False
        choices = self.ctx.device_choices
        for candidate in descendants(outer, _OWN_CODE):
            ladder: cst.If | cst.IfExp | None = None
            if isinstance(candidate, cst.If):
                ladder = candidate
            elif isinstance(candidate, cst.Assign):
                ladder = _assigned_ternary(candidate.value)
            if ladder is None:
                continue
            if ladder is node:
                return False
            if choices.is_ladder(ladder) and names & _ladder_targets(ladder, [candidate]):
                return True
        return False

    def _one_backend(self, group: Sequence[DeviceChoice], siblings: Sequence[cst.CSTNode]) -> bool:
        """`if device_index is None: return "cuda"`, then `return f"cuda:{device_index}"`:
        every branch of a helper's `if`s and the return after them select devices of one
        GPU backend, under tests that ask about no device or backend (an index's `None`
        test): a choice between that backend's devices, not a ladder, as `"cuda:0" if rank
        == 0 else "cuda:1"` is none (the CUDA strings are XLA302's)."""
        after = self._returned_after(siblings, group[-1].node)
        types = frozenset().union(*(c.types for c in group)) | after
        if not after or len(types) != 1 or not types <= GPU_TYPES:
            return False
        imports = self.ctx.imports
        return not any(
            probes_gpu(test, imports) or mentions_cuda(test, imports) or self._flag(test)
            for c in group
            for test in chain(c.node)[0]
        )

    def _returned_after(self, siblings: Sequence[cst.CSTNode], last: cst.CSTNode) -> frozenset[str]:
        """The device a helper returns after its ladder's `if`s (`return cpu()`): the
        fallback an XLA host gets."""
        imports, helpers = self.ctx.imports, self.ctx.device_choices.helpers
        for statement in list(itertools.dropwhile(lambda s: s is not last, siblings))[1:]:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Return) and small.value is not None:
                    value = small.value
                    types = device_types(value, imports) or helper_device_types(value, helpers)
                    return types or frozenset()
        return frozenset()

    def _xla_ruled_out(self, node: cst.CSTNode) -> bool:
        return xla_ruled_out([node, *self.ctx.ancestors()], self.ctx.imports)

    def _knows_xla(self, node: cst.CSTNode) -> bool:
        """XLA is ruled out where `node` stands, or the function holding it (the node
        itself, outside one) mentions XLA: the code has made its choice."""
        if self._xla_ruled_out(node):
            return True
        function = next((a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)
        return mentions_xla(function if function is not None else node, self.ctx.imports)

    def _message(self, choice: DeviceChoice, types: frozenset[str] | None = None) -> str:
        selected = (types or choice.types) - {"?"}
        order = ["cuda", "mps", "xpu", ACCELERATOR, "cpu"]
        known = sorted(selected, key=lambda t: (order.index(t) if t in order else len(order), t))
        names = {
            "cuda": "CUDA",
            "mps": "MPS",
            "xpu": "XPU",
            ACCELERATOR: "torch.accelerator",
            "cpu": "the CPU",
        }
        labels = [names.get(t, t) for t in known]
        if choice.probes_gpu and not selected & GPU_TYPES:
            labels.insert(0, "a GPU")
        if "cpu" in selected:
            outcome = "on an XLA host it picks the CPU"
        elif isinstance(choice.node, cst.If) and has_silent_branch(choice.node, self.ctx.imports):
            outcome = "on an XLA host it never picks the XLA device"
        elif selected and selected <= GPU_TYPES:
            # `if args.distributed: device = f"cuda:{rank}"`: no CPU to fall back to.
            gpus = "/".join(names[t] for t in known)
            outcome = f"on an XLA host it picks {gpus}, which is not there"
        else:
            outcome = "on an XLA host it never picks the XLA device"
        return self.message.format(types="/".join(labels), outcome=outcome)

    # -- the fix ---------------------------------------------------------------------------
    def _ternary_fix(self, node: cst.IfExp) -> NodeFix | None:
        """`"cuda" if c else "cpu"` -> `"xla" if XLA_AVAILABLE else "cuda" if c else "cpu"`:
        the XLA choice wins where torch_xla is installed; elsewhere the ladder is as before."""
        if any(isinstance(a, cst.FormattedString) for a in self.ctx.ancestors()):
            return None  # `f"{'cuda' if c else 'cpu'}:{rank}"`: an index XLA does not take
        if not self._takes_a_device(node):
            return None  # `accelerator = "cuda" if ... else "cpu"`: a name, not a device
        availability = self._availability()
        if availability is None:
            return None
        test, edits, imports = availability
        value, value_imports = self._xla_value(_first_device_leaf(node, self.ctx.imports))
        # Text before the first branch: `X if t else A if c else B` parses as
        # `X if t else (A if c else B)`, and the ladder's own text stays as it is.
        body = self.ctx.module.code_for_node(node.body)
        if "\n" in body:
            return None  # its lines would lose their indentation
        new = f"{value} if {test} else {body}"
        return self.fix(_DESCRIPTION, *edits, (node.body, new), imports=(*imports, *value_imports))

    def _chain_fix(self, node: cst.If) -> NodeFix | None:
        """A first branch `if XLA_AVAILABLE: device = "xla"` before the chain's `if`, which
        becomes its `elif`. The branch sets what the chain's branches set (or returns)."""
        availability = self._availability()
        branch = _template_branch(node, self.ctx.imports)
        if branch is None or availability is None:
            return None
        if not all(self._stores_a_device(selected) for _, selected in branch if selected):
            return None  # `self._accelerator_flag = "cuda"`: a name, not a device
        test, edits, imports = availability
        module = self.ctx.module
        indent = "".join(
            reversed(
                [
                    a.indent if a.indent is not None else module.default_indent
                    for a in self.ctx.ancestors()
                    if isinstance(a, cst.IndentedBlock)
                ]
            )
        )
        body = node.body
        unit = (
            body.indent
            if isinstance(body, cst.IndentedBlock) and body.indent is not None
            else module.default_indent
        )
        value_imports: tuple[str, ...] = ()
        lines = []
        for statement, selected in branch:
            if selected is None:
                lines.append(module.code_for_node(statement).strip())
                if "\n" in lines[-1]:
                    return None  # its lines would lose their indentation
                continue
            value, value_imports = self._xla_value(
                _first_device_leaf(selected.value, self.ctx.imports)
            )
            lines.append(_with_value(module, selected, value))
        statements = "".join(f"{indent}{unit}{line}\n" for line in lines)
        # `if` + ` XLA_AVAILABLE:` / the branch / `elif` + the chain's own test, untouched.
        space = module.code_for_node(node.whitespace_before_test)
        new = f" {test}:\n{statements}{indent}elif{space}"
        return self.fix(
            _DESCRIPTION,
            *edits,
            (node.whitespace_before_test, new),
            imports=(*imports, *value_imports),
        )

    def _takes_a_device(self, node: cst.IfExp) -> bool:
        """Whether a ternary's value goes where torch takes a device: `torch.device(...)`,
        a `device=` argument, `.to(...)`, a device-like name (`device = ...`,
        `def f(device=...)`) or the return value of a function named for devices."""
        ancestors = list(self.ctx.ancestors())
        parent = ancestors[0] if ancestors else None
        if isinstance(parent, cst.Arg) and len(ancestors) > 1:
            call = ancestors[1]
            return isinstance(call, cst.Call) and (
                self.ctx.qualified(call.func) == TORCH_DEVICE
                or any(arg is parent for arg in device_arguments(call, self.ctx.imports))
            )
        if isinstance(parent, cst.Assign):
            return all(is_device_name(t.target) for t in parent.targets)
        if isinstance(parent, cst.AnnAssign):
            return is_device_name(parent.target)
        if isinstance(parent, cst.Param):
            return is_device_name(parent.name)
        if isinstance(parent, cst.Return):
            return self._returns_a_device() or _device_objects(node, self.ctx.imports)
        return False

    def _stores_a_device(self, statement: Selection) -> bool:
        """Whether an `if` branch's selection sets a device (not an accelerator or backend
        name that happens to read "cuda"): a `torch.device(...)` value, a device-like
        target, or the return value of a function named for devices."""
        value = statement.value
        if isinstance(value, cst.Call) and device_types(value, self.ctx.imports):
            return True
        if isinstance(statement, cst.Return):
            return self._returns_a_device()
        if isinstance(statement, cst.AnnAssign):
            return is_device_name(statement.target)
        return all(is_device_name(t.target) for t in statement.targets)

    def _returns_a_device(self) -> bool:
        function = self.ctx.function
        return function is not None and is_device_name(cst.Name(function.name))

    def _xla_value(self, leaf: cst.CSTNode | None) -> tuple[str, tuple[str, ...]]:
        """The XLA device in the ladder's own style: the string `"xla"` where it chooses
        strings, else `torch.device("xla")` (torch_xla registers the type on import)."""
        if isinstance(leaf, cst.SimpleString | cst.FormattedString):
            return xla_string_source(leaf), ()
        spelling, imports = self.ctx.imports.spell("torch.device", "import torch")
        return f'{spelling}("xla")', imports

    def _availability(
        self,
    ) -> tuple[str, list[tuple[cst.CSTNode, cst.CSTNode | str]], tuple[str, ...]] | None:
        """How the ladder asks whether torch_xla is there: the flag of the file's own
        guarded import; `importlib.util.find_spec("torch_xla")` where the file imports it
        otherwise; else a guarded import that sets `XLA_AVAILABLE`, added after the file's
        last top-level import, so that the script still runs where torch_xla is absent."""
        module = self.ctx.module
        guard = self.ctx.import_guards.binding("torch_xla")
        guarded, flag = guard is not None, guard.flag if guard is not None else None
        if flag is not None:
            return flag, [], ()
        if guarded or self.ctx.imports.bindings.get("torch_xla") == "torch_xla":
            util, imports = self.ctx.imports.spell("importlib.util", "import importlib.util")
            return f'{util}.find_spec("torch_xla")', [], imports
        if XLA_FLAG in names_under(module):
            return None  # the name means something else here
        last = next(
            (
                statement
                for statement in reversed(module.body)
                if isinstance(statement, cst.SimpleStatementLine)
                and any(isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body)
            ),
            None,
        )
        end = last_line_end(last) if last is not None else None
        if end is None:
            return None
        unit = module.default_indent
        guard = (
            f"\ntry:\n{unit}import torch_xla\n\n{unit}{XLA_FLAG} = True\n"
            f"except ImportError:\n{unit}{XLA_FLAG} = False\n"
        )
        return XLA_FLAG, [(end, module.code_for_node(end) + guard)], ()


_DESCRIPTION = "Give the device ladder an XLA choice first, used where torch_xla is installed"


# Integer device ids named for a GPU: `cuda_device`, `gpu`, `gpu_id`, `device_id`.
_GPU_ID_NAME = re.compile(r"(^|_)(cuda|gpu)(_|$)|^device_id$", re.IGNORECASE)


def _int_assignment(block: cst.BaseSuite) -> tuple[str, int] | None:
    """`cuda_device = 0` or `cuda_device = -1`, the block's only statement: the name and
    the integer."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else ()
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    [small] = statements[0].body if len(statements[0].body) == 1 else (None,)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target, value = small.targets[0].target, small.value
    sign = 1
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        sign, value = -1, value.expression
    if not isinstance(target, cst.Name) or not isinstance(value, cst.Integer):
        return None
    return target.value, sign * int(value.evaluated_value)


# Where a function's own statements and expressions are: not nested functions and classes.
_OWN_CODE = TRIVIA | frozenset({cst.FunctionDef, cst.ClassDef})


def _ladder_targets(node: cst.If | cst.IfExp, ancestors: list[cst.CSTNode]) -> frozenset[str]:
    """The names a ladder sets: those its chain's branches assign (`device = "mps"`), or,
    for a ternary, the name its statement assigns (`device = "cuda" if ... else "cpu"`,
    also through `torch.device(...)`), found among its `ancestors` (innermost first)."""
    if isinstance(node, cst.If):
        _, blocks = chain(node)
        return frozenset(
            target.value
            for block in blocks
            for statement in getattr(block, "body", ())
            if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body
            if isinstance(small, cst.Assign)
            for target in (t.target for t in small.targets)
            if isinstance(target, cst.Name)
        )
    for ancestor in ancestors:
        if isinstance(ancestor, cst.Assign):
            return frozenset(
                t.target.value for t in ancestor.targets if isinstance(t.target, cst.Name)
            )
        if not isinstance(ancestor, cst.Arg | cst.Call):
            return frozenset()
    return frozenset()


def _set_names(node: cst.CSTNode) -> frozenset[str]:
    """The names and attributes (`device`, `self.device`) the assignments of a statement,
    or of an `if` chain's branches, set."""
    statements: list[cst.CSTNode] = [node]
    if isinstance(node, cst.If):
        statements = [s for block in chain(node)[1] for s in getattr(block, "body", ())]
    return frozenset(
        name
        for statement in statements
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
        if isinstance(small, cst.Assign)
        for target in small.targets
        if isinstance(target.target, cst.Name | cst.Attribute)
        and (name := get_full_name_for_node(target.target))
    )


def _refines_a_ternary_before(
    node: cst.If, siblings: Sequence[cst.CSTNode], choices: DeviceChoices
) -> bool:
    """`self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, then
    `if torch.backends.mps.is_available(): self.device = torch.device("mps")`: the `if`
    overrides what a ternary before it in the same block chose, for the same name. The
    two choose one device between them (what an XLA host gets is the ternary's choice):
    one finding, at the ternary, or none where the ternary asks for XLA."""
    names = _set_names(node)
    if not names:
        return False
    for statement in siblings:
        if statement is node:
            return False
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign):
                continue
            ternary = _assigned_ternary(small.value)
            # Any device choice: one that asks for XLA first (`"xla" if XLA_AVAILABLE
            # else "cpu"`) is not overridden on an XLA host either.
            if ternary is not None and choices.of(ternary) and names & _set_names(statement):
                return True
    return False


def _assigned_ternary(value: cst.BaseExpression) -> cst.IfExp | None:
    """The ternary an assignment stores: `"cuda" if ... else "cpu"`, or the first argument
    of a call around it (`torch.device("cuda" if ... else "cpu")`)."""
    if isinstance(value, cst.Call) and value.args:
        value = value.args[0].value
    return value if isinstance(value, cst.IfExp) else None


def _has_else(node: cst.If) -> bool:
    """Whether an `if`/`elif` chain ends in an `else`."""
    while isinstance(node.orelse, cst.If):
        node = node.orelse
    return isinstance(node.orelse, cst.Else)


def _device_objects(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether every branch of a ternary is a device object (`torch.device("cpu")`,
    `torch.accelerator.current_accelerator()`): its value is a device wherever it goes,
    not a name that reads "cuda"."""
    if isinstance(node, cst.IfExp):
        return _device_objects(node.body, imports) and _device_objects(node.orelse, imports)
    return isinstance(node, cst.Call) and bool(device_types(node, imports))


def _first_device_leaf(node: cst.CSTNode, imports: ImportTable) -> cst.CSTNode | None:
    """The first string or call in a device expression that names a device type."""
    if isinstance(node, cst.IfExp):
        return _first_device_leaf(node.body, imports) or _first_device_leaf(node.orelse, imports)
    if isinstance(node, cst.SimpleString | cst.FormattedString) and device_string_type(node):
        return node
    if isinstance(node, cst.Call) and device_types(node, imports):
        return node
    return None


Selection = cst.Assign | cst.AnnAssign | cst.Return


def _template_branch(
    node: cst.If, imports: ImportTable
) -> list[tuple[cst.CSTNode, Selection | None]] | None:
    """What the XLA branch does, copied from the chain: the statements of the first branch
    that selects a GPU device and stores it in a name (`device = torch.device("cuda")`,
    `model = model.to(device)`), so the model moves where the device goes, without the
    branch's GPU-only settings (`torch.cuda.set_device(...)`, `cudnn.benchmark = True`),
    and with its `.cuda(...)` moves made with that name (`model = model.cuda(args.gpu)` ->
    `model = model.to(device)`); the selection comes first. Else only the first statement
    that selects a device. Pairs of (statement, its device selection)."""
    _, blocks = chain(node)
    for block in blocks:
        if isinstance(block, cst.IndentedBlock) and (pairs := _portable(block, imports)):
            return pairs
    for block in blocks:
        for small in _selecting_statements(block, imports):
            return [(small, small)]
    return None


def _portable(
    block: cst.IndentedBlock, imports: ImportTable
) -> list[tuple[cst.CSTNode, Selection | None]] | None:
    """`_template_branch` for one branch, or None where it does not fit."""
    selection: Selection | None = None
    others: list[cst.BaseSmallStatement] = []
    cuda_moves: list[cst.BaseSmallStatement] = []
    for line in block.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        small = line.body[0]
        value = getattr(small, "value", None)
        types = device_types(value, imports) if isinstance(value, cst.BaseExpression) else None
        if isinstance(small, Selection) and types:
            if not types & GPU_TYPES or selection is not None:
                return None
            selection = small
        elif not _gpu_specific(small, imports):
            others.append(small)
        elif _moves(small):
            if not _gpu_specific(small.visit(_ToDevice(cst.Name("device"))), imports):
                cuda_moves.append(small)  # `model = model.cuda(args.gpu)`
                others.append(small)
            else:
                return None
        # `torch.cuda.set_device(args.gpu)`, `cudnn.benchmark = True`: left out
    if selection is None:
        return None
    if cuda_moves:
        targets = [] if isinstance(selection, cst.Return) else _targets(selection)
        if len(targets) != 1 or not isinstance(targets[0], cst.Name | cst.Attribute):
            return None
        device = targets[0]
        others = [s.visit(_ToDevice(device)) if s in cuda_moves else s for s in others]
    return [(selection, selection), *((s, None) for s in others)]


def _targets(statement: cst.Assign | cst.AnnAssign) -> list[cst.BaseExpression]:
    if isinstance(statement, cst.AnnAssign):
        return [statement.target]
    return [t.target for t in statement.targets]


class _ToDevice(cst.CSTTransformer):
    """`.cuda(args.gpu, non_blocking=True)` -> `.to(device, non_blocking=True)`."""

    def __init__(self, device: cst.BaseExpression) -> None:
        super().__init__()
        self.device = device

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return updated
        keywords = [a for a in updated.args if a.keyword is not None]
        kept = [a for a in keywords if a.keyword and a.keyword.value != "device"]
        args = [cst.Arg(self.device), *kept]
        return updated.with_changes(func=func.with_changes(attr=cst.Name("to")), args=args)


def _with_value(module: cst.Module, statement: Selection, value: str) -> str:
    """`statement` (`device = ...`, `self.dev: str = ...`, `return ...`) giving `value`."""
    if isinstance(statement, cst.Return):
        return f"return {value}"
    if isinstance(statement, cst.AnnAssign):
        target = module.code_for_node(statement.target)
        annotation = module.code_for_node(statement.annotation.annotation)
        return f"{target}: {annotation} = {value}"
    targets = [module.code_for_node(t.target) for t in statement.targets]
    return " = ".join([*targets, value])


def _gpu_specific(node: cst.CSTNode, imports: ImportTable) -> bool:
    """Code for a GPU only: `torch.cuda.set_device(...)`, `.cuda(...)`, `"cuda:0"`,
    `cudnn.benchmark = True`, `torch.backends.mps`."""
    if probes_gpu(node, imports):
        return True
    for leaf in descendants(node):
        if isinstance(leaf, cst.Name) and leaf.value in ("cuda", "mps"):
            return True
        if device_string_type(leaf) in GPU_TYPES:
            return True
        if isinstance(leaf, cst.Name | cst.Attribute):
            qualified = imports.resolve(leaf) or ""
            if qualified.startswith(_GPU_MODULES):
                return True
    return False


def _moves(node: cst.CSTNode) -> bool:
    """Whether code moves a value to a device: `.cuda(...)`, `.to(...)`."""
    return any(
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ("cuda", "to")
        for call in descendants(node)
    )


_GPU_MODULES = ("torch.cuda", "torch.backends.cud", "torch.backends.mps", "torch.accelerator")


def _selecting_statements(block: cst.CSTNode, imports: ImportTable) -> list[Selection]:
    found = []
    for child in children(block):
        if isinstance(child, cst.If | cst.FunctionDef | cst.ClassDef):
            continue
        if isinstance(child, Selection):
            if child.value is not None and device_types(child.value, imports):
                found.append(child)
        else:
            found.extend(_selecting_statements(child, imports))
    return found


def _builds_a_name(fstring: cst.FormattedString) -> bool:
    """An f-string with text other than a `:index` suffix (`f"{kind}_time_total"`,
    `f"device={kind}"`) builds a name or a message, not a device string."""
    return any(
        isinstance(part, cst.FormattedStringText) and not part.value.startswith(":")
        for part in fstring.parts
    )


# Asked for each device ternary a function assigns: one walk of the function per lint
# answers them all. Nodes hash by identity.
@lint_memo.memo(64)
def _load_mappings(function: cst.FunctionDef) -> tuple[Counter[str], Counter[str]]:
    """How often each name appears anywhere in `function`'s body (a keyword's name too),
    and how often each is handed as a `map_location=` (`XLA305._maps_a_load`)."""
    mentions: Counter[str] = Counter()
    maps: Counter[str] = Counter()
    for node in descendants(function.body):
        if type(node) is cst.Name:
            mentions[node.value] += 1  # type: ignore[attr-defined]
        elif (
            type(node) is cst.Arg
            and node.keyword is not None  # type: ignore[attr-defined]
            and node.keyword.value == _MAP_LOCATION  # type: ignore[attr-defined]
            and type(node.value) is cst.Name  # type: ignore[attr-defined]
        ):
            maps[node.value.value] += 1  # type: ignore[attr-defined]
    return mentions, maps
