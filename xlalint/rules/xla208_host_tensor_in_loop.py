from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis import tensor_methods
from xlalint.analysis.arguments import keyword_argument, parameter, with_keyword
from xlalint.analysis.devices import (
    XLA_DEVICE_CALLS,
    device_string_type,
    is_device_name,
    positional_argument,
)
from xlalint.analysis.guards import local_values, module_values
from xlalint.analysis.lazy_init import fills_persistent_state
from xlalint.analysis.tensors import Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import bound_names, descendants, self_attribute, target_names

if TYPE_CHECKING:
    from xlalint.context import FileContext

# Factories that XLA builds on the device from their arguments alone. Not here:
# `torch.tensor`/`as_tensor`/`from_numpy` copy host data whatever their device (measured:
# 5 transfers in 5 steps either way), and the random factories, whose `device=` form draws
# from another generator (other numbers) and still transfers a seed every step. The window
# functions compute their values from the length alone (measured: `torch.hann_window(64)
# .to(x)` 10 host-to-device transfers in 10 steps, with `device=` 3 in all, the first
# step's scalars).
_FACTORIES = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "empty", "full", "arange", "linspace",
                                 "logspace", "eye", "hann_window", "hamming_window",
                                 "blackman_window", "bartlett_window", "kaiser_window")
)  # fmt: skip
# Arguments that become constants of the graph when the tensor is built on the device:
# bounds that change every pass would compile a new graph every pass (measured: 5 compiles
# for `torch.arange(i, i + 16, device=dev)` in 5 steps; 1 when built on the host and moved).
_RANGES = frozenset({"torch.arange", "torch.linspace", "torch.logspace"})
# Constructors of a tensor from data. Given only number literals (`torch.LongTensor([0])`,
# `torch.tensor([1.0, 0.0])`) the data is a constant a device factory can build
# (`torch.full`, `torch.zeros`), and a moved copy costs a transfer every step (measured: 5 in
# 5 steps for `torch.LongTensor([0]).to(x.device)`, none for `torch.zeros(1,
# dtype=torch.long, device=dev)`; `torch.tensor([0], device=dev)` still 5: it copies).
_DATA_CONSTRUCTORS = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor",
     "torch.DoubleTensor", "torch.HalfTensor", "torch.BFloat16Tensor", "torch.LongTensor",
     "torch.IntTensor", "torch.ShortTensor", "torch.ByteTensor", "torch.CharTensor",
     "torch.BoolTensor"}
)  # fmt: skip
# Methods between the factory and the move that act the same on either device.
_DEVICE_AGNOSTIC = frozenset(
    {
        "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte",
        "unsqueeze", "squeeze", "view", "reshape", "expand", "repeat", "flatten", "t",
        "transpose", "permute", "contiguous", "flip", "fill_", "zero_",
        # Shaped like another tensor, which lends only its size (`labels.view(1,
        # -1).expand_as(scores)`, a class index per score).
        "expand_as", "view_as", "reshape_as",
    }
)  # fmt: skip
# Elementwise math of one tensor, as `torch.exp(x)` or `x.exp()`: computed where `x` lives
# (`torch.exp(-math.log(p) * torch.arange(half) / half).to(device)`, a timestep embedding's
# frequencies, is built on the host and copied every call).
_ELEMENTWISE = tensor_methods.UNARY_MATH
# `.to()` keywords that only matter for a copy: a tensor built on the device needs none.
_COPY_ONLY_KEYWORDS = frozenset({"non_blocking", "copy"})
# Factory keywords whose meaning changes (or fails) when the tensor is made on the device.
_HOST_ONLY_KEYWORDS = frozenset({"out", "pin_memory", "requires_grad", "layout"})
_MOVES = frozenset({"to", "cuda", "type_as"})
# Selections from a tensor by an index, which must be on the CPU or on the tensor's own
# device: the result is where the tensor is.
_SELECTIONS = frozenset({"index_select", "gather", "take", "take_along_dim", "masked_select"})
# Tensor methods whose result is no tensor (a number, a list, an array).
_NOT_TENSORS = frozenset({"item", "tolist", "numpy", "size", "dim", "numel", "nelement"})
# Builtins that give a host number from host numbers (`max(k_size / q_size, 1.0)`).
_NUMBER_BUILTINS = frozenset({"max", "min", "abs", "round", "int", "float"})
# Attributes of a tensor that are views of it, on its device (`z.real` of a complex `z`).
_TENSOR_VIEWS = frozenset({"real", "imag", "data", "T", "mT", "H", "mH"})
# Calls that build a tensor when the module is imported, on the host (or where a file was
# saved, which is not the XLA device chosen after import).
_IMPORT_BUILDERS = frozenset({"torch.load", "torch.from_numpy", "torch.tensor", "torch.as_tensor"})
_BUFFER_HINT = (
    "Register it as a buffer (`self.register_buffer(..., persistent=False)`) so that it "
    "moves to the device with the module, once"
)
# Helpers named for moving their argument to the device: Composer's
# `device.tensor_to_device(t)`, `to_device(t)`, `move_to_device(t, dev)`.
_MOVE_HELPER = re.compile(r"(^|_)(to|onto)_device$|^_*(move|send|put)_\w*(device|gpu|xla)$", re.I)


class HostTensorInLoop(Rule):
    """
    ## What it does
    Flags tensors built on the host and copied to the device in code that runs every step:
    `torch.zeros/ones/empty/full/arange/linspace/logspace/eye(...)` and the window functions
    (`torch.hann_window/hamming_window/blackman_window/bartlett_window/ kaiser_window(n)`,
    an STFT's window) without `device=` (or with `device="cpu"`), followed by a move to a
    device, either chained (`torch.arange(n).to(device)`) or on a name bound to one (`pos =
    torch.arange(n)`, then `pos.to(device)` in the loop, also through methods that act alike
    on either device, `.view()`, `.reshape()`, `.expand_as(scores)`, to which another tensor
    lends only its size, through casts, `.to(value.dtype)` or `.to(dtype=torch.float16)`,
    which name no device, and through the chain's host arithmetic and elementwise math
    below, also of the name, `torch.log(vdtype_max).to(value.device)`; not where host data
    is written into it in between, `n[:k] = dropout[:k]` or `n += offsets`, which `device=`
    would not build; device values written into its rows, `idx[1] = gt_labels.squeeze(-1)`,
    are copied to the host on the way, and built with `device=` the write stays there). A
    move is `.cuda()` or a `.to()` whose target is clearly a device: a device string other
    than `"cpu"`, `torch.device(...)`, `torch_xla.device()`, or a name such as `device`,
    `x.device`, `self.device`, `dev`; or `.to(t)` and `.type_as(t)` with `t` a tensor, which
    give the host tensor `t`'s device and dtype (beam search's `torch.zeros(bsz,
    n).to(src_tokens)`, `torch.arange(n).type_as(tokens)`). A name given to `.to()` whose
    `.device` the function reads is a tensor (`.to()` takes a tensor, a device or a dtype,
    and only a tensor has a `.device`), also where it comes from (a nested dict) says
    nothing; so is a view of it (`.to(z.real)`, `.data`, `.T`: demucs' `ispectro` moves its
    window like `z.real`). The chain may do host arithmetic by a number on the way, on
    either side (`(torch.arange(bsz) * beam).unsqueeze(1).type_as(tokens).to(dev)`,
    `-math.log(p) * torch.arange(half) / half`), and elementwise torch math of the tensor
    (`torch.exp(...)`, `.sin()`, `torch.pow(t, 2)`: a timestep embedding's frequencies,
    `torch.exp(-math.log( max_period) * torch.arange(half) / half).to(device)`, computed on
    the host and copied on every call), and is reported once, at its outer move. A module's
    attribute that every assignment in its class binds to such a factory (`self.P =
    torch.zeros(1, max_len, d)` in `__init__`, filled in place) and that a per-step method
    moves (`X + self.P[:, :T].to(X.device)` in `forward`) is reported too: a plain attribute
    is not a buffer, so `model.to(device)` leaves it on the host, and `register_buffer(...,
    persistent=False)` moves it once; also through a cast or reshape of the factory's
    tensor (`self.idx_tensor = torch.arange(66).float()`, moved by `.type_as(predict)`
    every forward). An attribute registered as a buffer or assigned anything else is not.
    So is an attribute bound to a plain dict of such tensors (`{k:
    torch.ones(n) for k in groups}`, or a local `group_reg = {}` whose every entry the
    method writes from a host factory, `group_reg[g] = torch.ones(n) * base_reg`), whose
    entries the class writes back only from host factories or from arithmetic of an entry
    itself (`reg = self.group_reg[g]; reg = reg + d * imp.to( reg.device)`): a dict is no
    module state, and its entries are copied on every move. Such an attribute's entry or
    slice bound to a local (`gamma = self.group_reg[g]`), and a selection from a host tensor
    (`torch.index_select(gamma, 0, idx)`, `.gather`, `.take`: the index must be on the
    tensor's device, so the result is on the host), are host tensors too, reported where
    they are moved, without a fix. A factory's result handed to a helper named for moving it
    to the device (`device.tensor_to_device(torch.zeros(1))`, `to_device(t, dev)`,
    `move_to_device(t)`) is moved the same way, and reported without a fix. So is a
    factory's result used directly as an index of a device tensor
    (`logprobs[torch.arange(n), next_tokens]`, a decoder picking each row's chosen token):
    the indexing copies the index to the tensor's device, as `.to()` would; also through a
    name bound to one (mmyolo's task-aligned assigner: `idx = torch.zeros([2, b, n],
    dtype=torch.long)`, its rows filled from a range and the device labels, then
    `pred_scores[idx[0], idx[1]]` every training step), or through names bound to arithmetic
    of such names with one another and with host numbers (segment-anything's `get_rel_pos`:
    `q_coords = torch.arange(q)[:, None] * max(k / q, 1.0)`, the same for `k_coords`, then
    `rel_pos[(q_coords - k_coords).long()]`; `max`, `min`, `abs`, `round`, `int` and `float`
    of host numbers are host numbers), reported once, at the (first) factory. An index of a
    numpy array or of a host tensor (`torch.zeros(4, 4)[torch.arange(4), 0]`), or of a value
    whose kind is not known, is not flagged.

    A constant built from number literals (`torch.LongTensor([0]).to(self.device)`,
    `torch.tensor([[1.0, -0.5]]).to(x.device)`, any depth of lists), from a list repeating
    one value that stays the same from pass to pass (`torch.IntTensor([max_len] *
    batch_size)`, a `torch.full`), or by a typed constructor from two or more sizes
    (`torch.LongTensor(batch_size, max_len + 1).fill_(0)`, a `torch.zeros`) is moved the
    same way: a device factory (`torch.full`, `torch.zeros`) builds it without a copy, while
    `torch.tensor(data, device=...)` still copies its data from the host, so it is reported
    with that hint and no fix, where the move is a `.to()`, `.cuda()` or `.type_as()` (not
    when handed to a move helper, whose device is the helper's own). So is data counted by
    a range whose bounds stay the same from pass to pass (`torch.FloatTensor([[range(1,
    self.harmonic_num + 2)]]).to(f0.device)`, a sine generator's harmonics every forward;
    `torch.tensor(list(range(k)))`): `torch.arange` builds it on the device (measured:
    `torch.FloatTensor([[range(1, 9)]]).to(xla)` over 5 steps, 5 host-to-device transfers;
    `torch.arange(1, 9, dtype=torch.float, device=xla)`, none). So is a list the run's
    settings hold (`torch.tensor(self.config.quantiles).to(x.device)`, `torch.as_tensor(
    args.loss_weights).to(loss)`: a plural attribute of an object named for settings,
    `config`, `cfg`, `args`, `hparams`, `opt`, `options`), the same data every step, also
    through host math of it (`quant_prob = 0.5 - (0.5 - torch.tensor(...)).abs()`, then
    `quant_prob /= quant_prob.sum()`: an update by a number literal or by a reduction of
    itself keeps a host tensor what it was), reported with the hint to build it once (a
    buffer): `device=` would still copy it (measured: `torch.tensor([0.1, 0.5,
    0.9]).to(xla)` in each of 5 steps, 5 host-to-device transfers, with `device=` 5 too);
    not a singular one (`args.temperature`, `config.eps`), a number whose 0-dim tensor is
    a cached device scalar. And a join of host tensors (`torch.cat((torch.zeros(n, b, c),
    torch.ones(n, b, 1)), dim=-1).to(x.device)`, also `torch.stack`, `torch.concat`,
    `hstack`, `vstack`), every part of which a host factory builds, is one, reported
    without a fix (measured: 5 steps, 5 host-to-device transfers; each part built with
    `device=`, none).

    A tensor the module builds at import (a module-level name bound once, at the module's
    level, to `torch.load(...)` without a `map_location` naming a device, `torch.from_numpy
    (...)`, `torch.tensor(...)`, or a host factory), moved in code that runs every step
    (enformer's `TF_GAMMAS.to(device)` in every attention layer's forward) is reported
    too: import runs before any XLA device is chosen, so the tensor is not on it, and each
    move copies it again (measured: a module-level (3071, 32) table `.to(xla)` in each of
    5 steps, 5 host-to-device transfers; moved once before the steps, none in them); a
    buffer moves once. Not where a
    function around the move binds the name itself (a parameter, a local), nor where the
    module binds it twice or a function rebinds it through `global` (a cached device
    copy).

    A tensor a helper of the module hands back, built on the host, is moved the same way
    (fish-speech's `mask = self.make_window_limited_mask(T)`, then `mask.to(x.device)`
    every forward, the helper building `torch.tril(torch.ones(T, T))` and an `arange`
    compared with another; `sinusoid_frequencies(n).to(t.device)`): a function of the
    module's top level, or a method of the class through `self`, defined once and not
    decorated, whose every `return` hands back a tensor its body builds from host
    factories and numbers alone (through its names in the order it binds them, torch
    functions, methods, arithmetic and comparisons of such tensors), reported at the
    caller's move without a fix (the helper should build it with `device=`). Not a helper
    that is handed the device or a tensor it computes from (`torch.ones(n) * weights`),
    nor one that may return something else (`None`), nor a generator, nor an imported one.

    A host tensor moved by `.cuda()` (`torch.zeros(n).cuda()`, `self.bank[idx].cuda()`) is
    XLA301's finding on that move while XLA301 is enabled: one cause, one edit of the move.

    Not flagged: a move under an interval known to be long (`if step % 2000 == 0:`, or
    past `if step % self.demo_every != 0: return` with such an interval: a copy once every
    so many steps is amortised, as a host read is there); a move in the block that fills
    persistent state the first time it is
    empty (an optimizer's `if len(state) == 0:` with `state = self.state[p]`, `if
    self.cache is None:`), which runs once, not every step; a move in a branch that
    clears its own flag (`if need_init_rnn: self.init_rnn(); need_init_rnn = False`, or
    `if not self.initted: ...; self.initted = True`, a local flag bound nowhere else but
    its initial value), directly or in a function called only from there, which runs on
    the first pass only; `torch.tensor(...)`,
    `torch.as_tensor(...)` and `torch.from_numpy(...)` of a name or a comprehension, whose
    values come from the host anyway (a changing Python number passed this way is
    the recommended way to feed it without recompiling; a 0-dim constant such as
    `torch.tensor(-math.inf).to(lprobs)` is moved as a scalar and cached, see below),
    but for a one-element list of a range loop's counter (`torch.tensor([t]).to(device)`
    per reverse step of pypots' CSDI sampler) in a function that runs every step itself:
    the counter's values repeat from call to call, and `torch.full((1,), t, device=...)`
    sends each once (a second reader measured 101 transfers against 49 in two batches of
    50 steps), where the host list is copied on every pass (not in a training loop's own
    function, whose step counter never repeats);
    0-dim factories (`torch.zeros(())`, `torch.full([], v)`); random factories, whose
    device form draws other numbers; `.to(t)`/`.type_as(t)` with `t` a host tensor; and
    `arange`/`linspace`/`logspace` bounds or a `full` value that change every pass, which
    the device form would bake into the graph (one compile per value), but for the
    argument that sets a range's length alone (`end` of `torch.arange(0, l)`, `steps` of
    `linspace`): a changing length changes the tensor's shape, and the graph compiles for
    each shape wherever the range is built, so the device form adds no compile (measured:
    `torch.arange(0, l)` with `l` in 3, 4, 5, 3, 4 over 5 steps, 3 compiles either way,
    and 5 host-to-device transfers on the host against none with `device=`; a duration
    aligner's `torch.arange(0, l).to(ref_text.device)` per utterance is reported). Nor is a move in
    a function that caches its results by its arguments (`@functools.lru_cache`,
    `@functools.cache`, `cached_property`, a project's wrapper named for one such as
    `@lru_cache_unless_export`): a rotary table built for a sequence length is built and
    moved once per length, however often `forward` asks for it (`hotness.memoised`).

    ## Why is this bad?
    A tensor made on the host is copied to the device on every step: one host-to-device
    transfer per step for a value the device can produce itself. Built with `device=`,
    it becomes part of the compiled graph and costs no transfer at all.

    ## Example
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1]).to(x.device)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).to(x.device)
        return self.block(x + self.pos_emb(positions), mask.tril())
    ```

    ## Use instead
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device)
        return self.block(x + self.pos_emb(positions), mask.tril())
    ```

    ## Fix safety
    Safe. For a chain `factory(...)[.method()...].to(device)` (or `.to(device=device)`,
    with `non_blocking=`/`copy=` dropped: there is no copy left) the fix passes
    `device=<that device>` to the factory, keeping its other arguments, and removes the
    move. The values, dtype and device are the same. No fix where the move also changes the
    dtype or memory format, where the factory takes `out=`, `pin_memory=`,
    `requires_grad=` or `layout=`, for `.cuda()` (XLA301 rewrites it first), for a
    multi-line expression, for the two-statement form, for a chain through elementwise math
    or a power (the device's `exp` or `pow` may round otherwise than the host's), or for
    `.to(t)`/`.type_as(t)`
    (the hint says `device=t.device, dtype=t.dtype`: a range built in another dtype may
    hold other values, `torch.arange(0, 1, 0.25)` then `.type_as(long_tensor)`).

    ## Runtime evidence
    5 steps on the XLA CPU device (case `positions_each_step`): a host-built tensor moved each
    step costs {positions_each_step.before.host_to_device} host-to-device transfers; built with
    `device=` it costs {positions_each_step.after.host_to_device}, and the results are
    {positions_each_step.outputs}. Measured by hand while writing this rule, not by a runtime
    case: `torch.zeros(16).to(dev)` transfers every step and `torch.zeros(16, device=dev)`
    never; `torch.full((16,), 0.5)` every step against once; `torch.hann_window(64).to(x)`
    10 transfers in 10 steps, with `device=` 3 in all (the first step's scalars); and the
    cases left out:
    `torch.tensor(data)` transfers with or without `device=`, `torch.randint(...)` transfers on
    the host and with `device=`, and `torch.arange(i, i + 16, device=dev)` with a changing `i`
    compiles every step where the host version compiles once. Measured for `.to(t)` (5 steps,
    fresh process each): `x + torch.zeros(8, 16).to(x)` 5 host-to-device transfers, with
    `device=x.device, dtype=x.dtype` or `x.new_zeros(8, 16)` none; `torch.arange(8)
    .type_as(ids)` of an XLA `ids` lands on the XLA device, 5 transfers;
    `torch.empty(0).to(ids)` 5. Scalars are cached: `x + torch.tensor(2.5).to(x)` costs 2
    transfers in 5 steps, the same as `x + 2.5` (a changing value, or a 1-element
    `torch.tensor([2.5])`, costs one per step), and `torch.zeros(()).to(x)` adds none.

    Measured by hand for bounds that change with a loop's pass (5 passes, the loop run 3
    times): with a barrier in each pass, `torch.arange(i, i + 16, device=dev)` costs 5
    compiles and the host form 2 compiles and 15 host-to-device transfers; in a loop unrolled
    into one graph (no barrier or read inside), the device form costs 1 compile and no
    transfer, the host form 1 compile and 15 transfers. The rule stays silent on changing
    bounds in either loop: whether a pass executes on its own is known only once the whole
    pass is read, and the silence costs transfers, never a compile.

    Measured again by hand for this rule's disputed cases (5 steps of `y + x`, XLA CPU
    device, `torch_xla.debug.metrics` TransferToDeviceTime count): `torch.tensor(-math.inf)
    .to(x)` 1 transfer, `torch.tensor(0).to(x)` 0 (0-dim constants: cached device scalars,
    not flagged), `torch.zeros(4).to(x)` 5, `torch.LongTensor([0]).to(x.device)` 5,
    `torch.tensor([0], device=dev)` 5, `torch.zeros(1, dtype=torch.long, device=dev)` 0;
    `torch.randn(4).to(x)` 5 and `torch.randn(4, device=dev)` 5 too (the device form sends
    its seed every step, so a random factory is not flagged: no transfer is saved).

    Measured by hand for indexes (5 steps): `x[torch.arange(x.shape[0]), idx]` of an XLA
    `x` costs 6 host-to-device transfers, `x[torch.arange(x.shape[0], device=dev), idx]`
    none, one compile either way.
    """

    code = "XLA208"
    name = "host-tensor-in-loop"
    message = (
        "`{factory}` builds a tensor on the host and copies it to the device every step; "
        "build it there with `device=`"
    )
    literal_message = (
        "`{factory}` builds a constant tensor on the host and copies it to the device every "
        "step; build it there with a device factory"
    )
    module_message = (
        "`{name}` (from `{factory}`) is a tensor the module builds at import, on the host: "
        "moving it here copies it to the device every step"
    )
    module_hint = (
        "Move it once: register it as a buffer of the module that uses it "
        "(`self.register_buffer(..., persistent=False)`), or keep a device copy"
    )
    moved_message = (
        "`{name}` (from `{factory}`) lives on the host and is copied to the device every "
        "step; build it there with `device=`"
    )
    helper_message = (
        "`{name}` (from `{helper}`, which builds it on the host) is copied to the device every "
        "step; build it there: hand the helper the device for its factories' `device=`"
    )
    index_message = (
        "`{factory}` builds an index on the host: indexing {tensor} with it copies it to the "
        "device every step; build it there with `device=`"
    )
    index_name_message = (
        "`{name}` (from `{factory}`) lives on the host: indexing {tensor} with it copies it "
        "to the device every step; build it there with `device=`"
    )
    filled_message = (
        "`{name}` (from `{factory}`) is built on the host and filled with device values "
        "(a copy to the host), then indexes {tensor} (a copy back) every step; build it "
        "there with `device=`"
    )
    counter_message = (
        "`{factory}` of the loop counter `{name}` builds a tensor on the host and copies it "
        "to the device every pass; the counter's values repeat from call to call, and a "
        "device factory sends each one once"
    )
    counter_hint = (
        "Build it on the device: `torch.full((1,), {name}, device=...)` (torch_xla keeps "
        "each scalar it has sent); `torch.tensor([{name}], device=...)` still copies the list"
    )
    settings_hint = (
        "The settings do not change: build the tensor once (a buffer, "
        "`self.register_buffer(..., torch.tensor(...), persistent=False)`, or a device "
        "tensor made before the loop); `torch.tensor(..., device=...)` still copies it "
        "every step"
    )
    joined_message = (
        "`{join}` joins tensors built on the host (`{factory}`) and the result is copied to "
        "the device every step; build each there with `device=`"
    )
    attribute_message = (
        "`{name}` (from `{factory}`) is a plain attribute, not a buffer: it stays on the host "
        "and is copied to the device every step"
    )
    hint = "Pass `device=` to the factory instead of moving its result"
    literal_hint = (
        "Build the constant with a device factory (`torch.full((n,), value, dtype=..., "
        "device=...)`, `torch.zeros`/`ones`); `torch.tensor(data, device=...)` still copies "
        "the data from the host"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    hot_only = True
    amortised = True  # a copy once every many steps (`if step % 2000 == 0:`) is no cost
    uses = ("loop_values",)
    # A flagged file names one of the factories (an alias still imports it by name), or a
    # constructor of data (`torch.tensor(...)`, `torch.FloatTensor(...)`).
    triggers = (
        "tensor(",
        "Tensor(",
        "load(",
        "from_numpy",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "_window",
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.values = ctx.loop_values  # fed by the context during the walk
        # Per function: names bound to a host tensor from a factory, and which factory.
        self._host_names: list[dict[str, str]] = [{}]
        # Per function: the factory call each such name is bound to, and the names whose
        # rows receive device values (`idx[1] = gt_labels.squeeze(-1)`).
        self._host_factories: list[dict[str, cst.Call]] = [{}]
        self._device_filled: list[set[str]] = [set()]
        # Factories already reported at the outer move of their chain
        # (`torch.arange(n).type_as(t).to(dev)` is one copy, one finding).
        self._reported: set[int] = set()
        self._functions: list[cst.FunctionDef] = []
        self._classes: list[cst.ClassDef] = []
        # Per class (by id): host attributes (see `_host_attributes`).
        self._attributes: dict[int, dict[str, str]] = {}
        # Per function: names bound to a host tensor a helper of this module builds and
        # hands back (`mask = self.make_mask(n)`); by the helper's id, whether it does.
        self._helper_names: list[set[str]] = [set()]
        self._host_helpers: dict[int, bool] = {}

    # -- walk ---------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._host_names.append({})
        self._host_factories.append({})
        self._device_filled.append(set())
        self._helper_names.append(set())
        self._functions.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._host_names.pop()
        self._host_factories.pop()
        self._device_filled.pop()
        self._helper_names.pop()
        self._functions.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        targets = [t.target for t in node.targets]
        factory = self._host_factory(node.value) or self._derived_factory(node.value)
        names = self._host_names[-1]
        factories = self._host_factories[-1]
        source = None if factory is not None else self._host_source(node.value)
        helper = None if factory is not None or source is not None else self._helper(node.value)
        for target in targets:
            if isinstance(target, cst.Name):
                self._device_filled[-1].discard(target.value)
                factories.pop(target.value, None)
                self._helper_names[-1].discard(target.value)
                if helper is not None:
                    names[target.value] = helper
                    self._helper_names[-1].add(target.value)
                elif factory is not None:
                    names[target.value] = self._factory_name(factory)
                    factories[target.value] = factory
                elif source is not None:
                    names[target.value] = source
                else:
                    names.pop(target.value, None)
            elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                name = target.value.value
                if name in names and self.ctx.kind(node.value) is Kind.TENSOR:
                    # `idx[1] = gt_labels.squeeze(-1)`: device values written in, copied to
                    # the host; built with `device=`, the write stays on the device.
                    self._device_filled[-1].add(name)
                elif factory is None:
                    # `n[:k] = dropout[:k]`: host data written in; `device=` would not
                    # build it. (Rows from another factory, `idx[0] = torch.arange(n)`,
                    # are built there as well.)
                    names.pop(name, None)
                    factories.pop(name, None)

    def _of_itself(self, value: cst.BaseExpression, name: str) -> bool:
        """A number literal, or the host tensor `name` itself reduced or reshaped
        (`w.sum()`): an update of `name` by it keeps it on the host, built from the same
        data (`device=` would build it there). Not another name (`n += offsets`: host data
        written in, which `device=` would not build)."""
        if type(value) is cst.UnaryOperation:
            value = value.expression
        if type(value) in (cst.Integer, cst.Float):
            return True
        head = self._chain_head(value)
        if type(head) is cst.Call and type(head.func) is cst.Attribute:
            method = head.func.attr.value
            if method in tensor_methods.REDUCTIONS and not head.args:
                head = head.func.value
        return type(head) is cst.Name and head.value == name

    def _host_source(self, value: cst.BaseExpression) -> str | None:
        """The factory behind a host tensor that no factory call heads: an item or slice of
        a host attribute (`gamma = self.group_reg[group]`, a dict of host factories'
        tensors), or a selection from a host tensor (`torch.index_select(gamma, 0, idx)`,
        `gamma.gather(0, idx)`: the index must be on the CPU or on `gamma`'s device, so the
        result is on the host). No fix: the factory is elsewhere."""
        attribute = self._host_attribute(value)
        if attribute is not None:
            return attribute[1]
        head = self._chain_head(value)
        if type(head) is cst.Name:
            return self._host_names[-1].get(head.value)
        if type(head) is not cst.Call:
            return None
        func = head.func
        if type(func) is not cst.Attribute or func.attr.value not in _SELECTIONS:
            return None
        if self.ctx.qualified(func) == f"torch.{func.attr.value}":
            first = positional_argument(head, 0)
            selected = first.value if first is not None else None
        else:
            selected = func.value
        if selected is None or self._host_factory(selected) is not None:
            return None  # a factory's selection: its own chain, with a fix
        return self._host_source(selected)

    def _derived_factory(self, value: cst.BaseExpression) -> cst.Call | None:
        """`relative_coords = (q_coords - k_coords) + (k - 1) * scale` with `q_coords` and
        `k_coords` bound to host factories (segment-anything's `get_rel_pos`): arithmetic
        of host tensors, with one another or with host numbers, is a host tensor too, built
        from the first of those factories (where `device=` goes, as for the others)."""
        head = self._chain_head(value)
        if type(head) is cst.Name:
            return self._host_factories[-1].get(head.value)
        if type(head) is not cst.BinaryOperation or isinstance(head.operator, cst.MatrixMultiply):
            return None
        found: list[cst.Call] = []
        for side in (head.left, head.right):
            factory = self._host_factory(side) or self._derived_factory(side)
            if factory is not None:
                found.append(factory)
            elif not self._host_number(side):
                return None
        return found[0] if found else None

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            if node.target.value in self._host_names[-1] and self._of_itself(
                node.value, node.target.value
            ):
                return  # `w /= w.sum()`, `w *= 2`: still the host tensor, from its factory
            self._host_names[-1].pop(node.target.value, None)
            self._host_factories[-1].pop(node.target.value, None)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self._helper_move(node):
            return
        if not (isinstance(func, cst.Attribute) and func.attr.value in _MOVES):
            return
        move = func.attr.value
        receiver = func.value
        like = self._like_tensor(node) if move in ("to", "type_as") else None
        if move == "type_as" and like is None:
            return
        if move == "to" and like is None and not self._moves_to_device(node):
            return
        factory = self._host_factory(receiver)
        if fills_persistent_state(self.ctx.ancestors()):
            return  # `if len(state) == 0: state["v"] = torch.zeros(n).to(p)`: once
        if factory is None and (joined := self._joined_factories(receiver)) is not None:
            # `torch.cat((torch.zeros(n, b, c), torch.ones(n, b, 1)), dim=-1).to(device)`:
            # the join of host tensors is one; no fix (each factory needs its `device=`).
            if fills_persistent_state(self.ctx.ancestors()) or id(joined[1]) in self._reported:
                return
            self._reported.add(id(joined[1]))
            message = self.joined_message.format(
                join=joined[0], factory=self._factory_name(joined[1])
            )
            hint = self._like_hint(like) or "Pass `device=` to each factory the join takes"
            self.report(node, message, hint=hint)
            return
        if factory is None:
            if move != "type_as" and self._counter_tensor(node, receiver):
                return
            # `m.to(device)`, also through the chain's math: `torch.log(m).to(device)`.
            named = self._chain_head(receiver)
            if isinstance(named, cst.Name) and named.value in self._helper_names[-1]:
                helper = self._host_names[-1][named.value]
                message = self.helper_message.format(name=named.value, helper=helper)
                self.report(node, message, hint=self._like_hint(like))
            elif (helper := self._helper(receiver)) is not None:
                # `self.make_mask(n).to(device)`: the helper's host tensor, moved at once.
                message = self.helper_message.format(name=helper, helper=helper)
                self.report(node, message, hint=self._like_hint(like))
            elif isinstance(named, cst.Name) and named.value in self._host_names[-1]:
                factory_name = self._host_names[-1][named.value]
                message = self.moved_message.format(name=named.value, factory=factory_name)
                made = self._host_factories[-1].get(named.value)
                settings = made is not None and self._settings_data(made)
                hint = self.settings_hint if settings else self._like_hint(like)
                self.report(node, message, hint=hint)
            elif (attribute := self._host_attribute(receiver)) is not None:
                name, factory_name = attribute
                message = self.attribute_message.format(name=name, factory=factory_name)
                self.report(node, message, hint=_BUFFER_HINT)
            elif (module_tensor := self._module_tensor(self._chain_head(receiver))) is not None:
                name, factory_name = module_tensor
                message = self.module_message.format(name=name, factory=factory_name)
                self.report(node, message, hint=self.module_hint)
            return
        if id(factory) in self._reported:
            return  # reported at the outer move of the same chain
        self._reported.add(id(factory))
        if self.ctx.under_cuda_guard and move == "cuda":
            return
        literal = self._literal_data(factory)
        fix = (
            self._device_fix(node, receiver, factory)
            if move == "to" and like is None and not literal and not self._chain(receiver)[1]
            else None
        )
        template = self.literal_message if literal else self.message
        message = template.format(factory=self._factory_name(factory))
        hint = self.literal_hint if literal else self._like_hint(like)
        if self._settings_data(factory):
            hint = self.settings_hint
        self.report(node, message, fix=fix, hint=hint)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`logprobs[torch.arange(n), tokens]`: a host-built index of a device tensor is
        copied to the device by the indexing itself, as `.to(device)` would."""
        if self.ctx.kind(node.value) is not Kind.TENSOR:
            return
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                continue
            factory = self._host_factory(index.value)
            if factory is None:
                self._index_through_name(node, index.value)
                continue
            if id(factory) in self._reported:
                continue
            if fills_persistent_state(self.ctx.ancestors()):
                return
            self._report_index(node, factory, self.index_message)

    def _counter_tensor(self, move: cst.Call, receiver: cst.BaseExpression) -> bool:
        """`torch.tensor([t]).to(device)` with `t` the counter of a loop over a range
        (`for t in range(n - 1, -1, -1)`, a sampler's reverse steps) in a function that
        runs every step itself: the values repeat from call to call, so a device factory
        (`torch.full((1,), t, device=...)`) sends each once, where the host list is copied
        on every pass (measured by a second reader on pypots' CSDI sampling: 101 transfers
        against 49 in two batches of 50 steps). Reported, judged as the function's code
        (not the loop's, whose counter alone would make every pass a new value), True
        where reported."""
        head = self._chain_head(receiver)
        if type(head) is not cst.Call or self.ctx.qualified(head.func) not in _DATA_CONSTRUCTORS:
            return False
        positional = [a for a in head.args if a.keyword is None]
        if len(positional) != 1 or len(head.args) != len(positional) + sum(
            1 for a in head.args if _keyword_in(a, ("dtype",))
        ):
            return False
        data = positional[0].value
        if type(data) not in (cst.List, cst.Tuple) or len(data.elements) != 1:  # type: ignore[attr-defined]
            return False
        element = data.elements[0]  # type: ignore[attr-defined]
        if type(element.value) is not cst.Name or isinstance(element, cst.StarredElement):
            return False
        name = element.value.value
        if not self._range_counter(name) or id(head) in self._reported:
            return False
        if fills_persistent_state(self.ctx.ancestors()):
            return False
        self._reported.add(id(head))
        site = self.ctx.site()
        site = dataclasses.replace(site, in_loop=False, scopes=site.scopes[:1])
        message = self.counter_message.format(factory=self._factory_name(head), name=name)
        self.report(move, message, hint=self.counter_hint.format(name=name), site=site)
        return True

    def _range_counter(self, name: str) -> bool:
        """`name` is the target of an enclosing loop of this function over `range(...)`
        (or `reversed(range(...))`), not rebound in its body."""
        for ancestor in self.ctx.ancestors():
            if type(ancestor) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                return False
            if type(ancestor) is not cst.For or type(ancestor.target) is not cst.Name:
                continue
            if ancestor.target.value != name:
                continue
            iterated = ancestor.iter
            if (
                type(iterated) is cst.Call
                and get_full_name_for_node(iterated.func) == "reversed"
                and iterated.args
            ):
                iterated = iterated.args[0].value
            if type(iterated) is not cst.Call or get_full_name_for_node(iterated.func) != "range":
                return False
            return not any(name in _bound_names(n) for n in descendants(ancestor.body))
        return False

    def _index_through_name(self, node: cst.Subscript, index: cst.BaseExpression) -> None:
        """`pred_scores[idx[0], idx[1]]` with `idx = torch.zeros([2, b, n], dtype=long)`:
        a name bound to a host factory (its rows perhaps filled with device values) indexes
        a device tensor, which copies it to the device. Reported once, at the factory,
        where `device=` goes."""
        head = self._chain_head(index)
        if type(head) is not cst.Name:
            return
        factory = self._host_factories[-1].get(head.value)
        if factory is None or id(factory) in self._reported:
            return
        if fills_persistent_state(self.ctx.ancestors()):
            return
        template = (
            self.filled_message
            if head.value in self._device_filled[-1]
            else self.index_name_message
        )
        self._report_index(node, factory, template, name=head.value)

    def _report_index(
        self, node: cst.Subscript, factory: cst.Call, template: str, name: str = ""
    ) -> None:
        """Report, once at `factory`, the host tensor that indexing `node.value` copies to
        the device."""
        self._reported.add(id(factory))
        indexed = self.ctx.module.code_for_node(node.value)
        tensor = (
            "the indexed tensor"
            if "\n" in indexed or len(indexed) > 40
            else f"the device tensor `{indexed}`"
        )
        message = template.format(name=name, factory=self._factory_name(factory), tensor=tensor)
        self.report(factory, message, hint=self._like_hint(node.value))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()

    def _host_attributes(self, node: cst.ClassDef) -> dict[str, str]:
        """`self.x` attributes that every assignment in the class's methods binds to a host
        factory (`self.P = torch.zeros(1, max_len, d)` in `__init__`), by name, with the
        factory: plain attributes, not buffers, so `model.to(device)` leaves them on the
        host and each move in `forward` copies them again. An attribute registered as a
        buffer, or bound any other way too, is not one."""
        found: dict[str, str] = {}
        other: set[str] = set()
        dicts: set[str] = set()
        # `self.group_reg[g] = reg`: an entry of the attribute replaced, by method.
        items: list[tuple[cst.FunctionDef, str, cst.BaseExpression]] = []
        for statement in node.body.body:
            if not isinstance(statement, cst.FunctionDef):
                continue
            for child in descendants(statement.body):
                if type(child) is cst.Assign:
                    targets = [t.target for t in child.targets]
                    value = child.value
                elif type(child) in (cst.AnnAssign, cst.AugAssign):
                    targets, value = [child.target], None
                elif type(child) is cst.Call:
                    # `self.register_buffer("P", ...)`, `setattr(self, "P", ...)`
                    other.update(_string_arguments(child))
                    continue
                else:
                    continue
                for target in targets:
                    name = self_attribute(target)
                    if name is None:
                        held = (
                            self_attribute(target.value) if type(target) is cst.Subscript else None
                        )
                        if held is not None and value is not None:
                            items.append((statement, held, value))
                        continue
                    # `self.idx_tensor = torch.arange(66).float()`: a cast or reshape of
                    # the factory's tensor is where the factory built it.
                    made = _agnostic_head(value) if value is not None else None
                    qualified = (
                        self.ctx.qualified(made.func) if isinstance(made, cst.Call) else None
                    )
                    if isinstance(made, cst.Call) and _builds_on_host(made, qualified):
                        found.setdefault(name, f"{qualified}(...)")
                    elif value is not None and (filled := self._host_dict(statement, value)):
                        found.setdefault(name, filled)
                        dicts.add(name)
                    else:
                        other.add(name)
        for method, name, value in items:
            # A dict's entries are its values: each one written must stay on the host (an
            # in-place fill of a tensor attribute's rows is its own business, as before).
            if name in dicts and not self._keeps_entry(method, name, value):
                other.add(name)
        return {name: factory for name, factory in found.items() if name not in other}

    def _host_dict(self, method: cst.FunctionDef, value: cst.BaseExpression) -> str | None:
        """`{k: torch.ones(n) for k in groups}`, or a local dict every entry of which the
        method writes from a host factory (`group_reg = {}`, then `group_reg[g] =
        torch.ones(n) * base_reg` in a loop): a dict of host tensors, by its factory. A
        plain dict is no module state: `model.to(device)` never moves its values."""
        if type(value) is cst.DictComp:
            factory = self._host_factory(value.value)
            return None if factory is None else self._factory_name(factory)
        if type(value) is not cst.Name:
            return None
        bound = local_values(method, value.value)
        if not bound or not all(_empty_dict(v) for v in bound):
            return None
        factories = []
        for child in descendants(method.body):
            if type(child) is cst.AugAssign and _item_of(child.target, value.value):
                return None
            if type(child) is not cst.Assign:
                continue
            for target in child.targets:
                if _item_of(target.target, value.value):
                    factory = self._host_factory(child.value)
                    if factory is None:
                        return None
                    factories.append(factory)
        return self._factory_name(factories[0]) if factories else None

    def _keeps_entry(self, method: cst.FunctionDef, name: str, value: cst.BaseExpression) -> bool:
        """`self.group_reg[g] = reg`: an entry written back from a host factory, or from a
        local computed by arithmetic from the attribute's own entry (`reg =
        self.group_reg[g]`, then `reg = reg + delta * imp.to(reg.device)`): arithmetic of
        a tensor of more than one element stays on its device (another device's operand
        raises), so the entry stays on the host."""
        if self._host_factory(value) is not None:
            return True
        if type(value) is not cst.Name:
            return False
        bound = local_values(method, value.value)
        return bool(bound) and all(
            (type(v) is cst.Subscript and self_attribute(v.value) == name)
            or (
                type(v) is cst.BinaryOperation
                and any(
                    type(side) is cst.Name and side.value == value.value
                    for side in (v.left, v.right)
                )
            )
            for v in bound
        )

    def _module_tensor(self, receiver: cst.BaseExpression) -> tuple[str, str] | None:
        """A module-level name, free in the functions around the move, that the module binds
        once, at its level, to a tensor it builds at import (`TF_GAMMAS = torch.load(path)`,
        `TABLE = torch.tensor(data)`, a host factory): import runs before any XLA device is
        chosen, so the tensor is not on it, and each move copies it again. The name and
        its builder; None otherwise (also for `torch.load(..., map_location=<a device>)`)."""
        if type(receiver) is not cst.Name or not self._functions:
            return None
        name = receiver.value
        for function in self._functions:
            if name in bound_names(function) or parameter(function, name) is not None:
                return None
        values = module_values(self.ctx.module, name)
        if len(values) != 1:
            return None
        head = self._chain_head(values[0])
        if type(head) is not cst.Call:
            return None
        qualified = self.ctx.qualified(head.func)
        if qualified in _IMPORT_BUILDERS:
            location = keyword_argument(head, "map_location")
            if location is not None and device_string_type(location.value) != "cpu":
                return None  # loaded onto a device it names
            device = keyword_argument(head, "device")
            if device is not None and device_string_type(device.value) != "cpu":
                return None
            return name, f"{qualified}(...)"
        if _builds_on_host(head, qualified) or qualified in _DATA_CONSTRUCTORS:
            return name, f"{qualified}(...)"
        return None

    def _host_attribute(self, receiver: cst.BaseExpression) -> tuple[str, str] | None:
        """`self.P[:, :T]` moved in a method: (`self.P`, its factory) for a host attribute."""
        if not self._classes or not self._functions:
            return None
        name = self_attribute(self._chain_head(receiver))
        if name is None:
            return None
        owner = self._classes[-1]
        attributes = self._attributes.get(id(owner))
        if attributes is None:  # worked out for classes that move a `self.x` only
            attributes = self._attributes[id(owner)] = self._host_attributes(owner)
        return (f"self.{name}", attributes[name]) if name in attributes else None

    def _like_tensor(self, call: cst.Call) -> cst.BaseExpression | None:
        """`x.to(t)`, `x.type_as(t)`: the tensor whose device (and dtype) `x` takes. In code
        that runs every step such a tensor is a device tensor (measured: `.type_as(t)` of an
        XLA tensor moves the host tensor to the XLA device, like `.to(t)`)."""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        keyword = keyword_argument(call, "other") or keyword_argument(call, "tensor")
        arg = keyword.value if keyword is not None else positional[0].value if positional else None
        if arg is None or device_string_type(arg) is not None or is_device_name(arg):
            return None
        if self.ctx.is_tensor(arg):
            return arg
        base = arg
        if type(base) is cst.Attribute and base.attr.value in _TENSOR_VIEWS:
            base = base.value  # `z.real` of a tensor `z`: a view of it, on its device
        return arg if isinstance(base, cst.Name) and base.value in self._device_bearers() else None

    def _device_bearers(self) -> frozenset[str]:
        """Names whose `.device` the current function reads (`src_tokens.device`). `.to()`
        takes a tensor, a device or a dtype, and only a tensor has a `.device`: a name
        given to `.to()` that also has one is a tensor, whatever its kind is known as."""
        if not self._functions:
            return frozenset()
        return self.ctx.data_parameters.bearers(self._functions[-1])

    def _like_hint(self, like: cst.BaseExpression | None) -> str | None:
        if like is None:
            return None
        name = self.ctx.module.code_for_node(like)
        if "\n" in name or len(name) > 40:
            name = "t"
        return f"Build it on that tensor's device: `device={name}.device, dtype={name}.dtype`"

    def _helper_move(self, call: cst.Call) -> bool:
        """`device.tensor_to_device(torch.zeros(1))`: a factory's result handed to a helper
        named for moving it to the device. Reported without a fix (the helper picks the
        device); True where the call is such a helper."""
        name = get_full_name_for_node(call.func) or ""
        if not _MOVE_HELPER.search(name.rsplit(".", 1)[-1]):
            return False
        first = positional_argument(call, 0)
        factory = self._host_factory(first.value) if first is not None else None
        # Literal data only where the move is seen (`.to()`): a helper's device is its own,
        # and on evidence this weak the default is silence.
        if factory is not None and not self._literal_data(factory):
            message = self.message.format(factory=self._factory_name(factory))
            self.report(call, message, hint=f"{self.hint}, or build it where `{name}` puts it")
        return True

    # -- helpers of the module that build on the host ----------------------------------------
    def _helper(self, value: cst.BaseExpression) -> str | None:
        """`mask = self.make_window_limited_mask(n)`, `pos = build_positions(n)`: a call of a
        function this module defines (a method of the enclosing class, through `self`)
        whose every `return` hands back a tensor its body builds on the host, from host
        factories and numbers alone (`torch.tril(torch.ones(n, n))`, an `arange` compared
        with another, `.bool()[None, None]`): the call's spelling, else None. Its caller's
        move copies that tensor every call; `device=` in the helper would build it there."""
        head = self._chain_head(value)
        if type(head) is not cst.Call:
            return None
        function = self._own_function(head.func)
        if function is None:
            return None
        known = self._host_helpers.get(id(function))
        if known is None:
            known = self._host_helpers[id(function)] = self._returns_host_tensor(function)
        if not known:
            return None
        return f"{get_full_name_for_node(head.func)}(...)"

    def _own_function(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        """The one definition `func` names: `f` a function of the module's top level,
        `self.m` a method of the class being walked (defined once, not a property)."""
        if type(func) is cst.Name:
            if self.ctx.qualified(func) is not None:
                return None  # an import
            body: Sequence[cst.CSTNode] = self.ctx.module.body
            name = func.value
        elif self_attribute(func) is not None and self._classes:
            body = self._classes[-1].body.body
            name = self_attribute(func)  # type: ignore[assignment]
        else:
            return None
        found = [
            s
            for s in body
            if (type(s) in (cst.FunctionDef, cst.ClassDef) and s.name.value == name)  # type: ignore[attr-defined]
            or (type(s) is cst.SimpleStatementLine and name in _assigned_names(s))
        ]
        if len(found) != 1 or type(found[0]) is not cst.FunctionDef:
            return None
        function = found[0]
        if function.decorators or function.asynchronous:
            return None
        return function

    def _returns_host_tensor(self, function: cst.FunctionDef) -> bool:
        """Whether every `return` of `function` hands back a tensor its body builds on the
        host: from a host factory, through methods, torch functions, arithmetic and
        comparisons of such tensors and of numbers (the parameters annotated `int`, `float`
        or `bool`, local names bound to numbers, `x.shape[i]`). Names are followed in the
        order the body binds them; a generator, or a `return` of anything else (a
        parameter, a device tensor, a value moved or built with `device=`), says no."""
        host: set[str] = set()
        numbers: set[str] = set()
        for param in function.params.params:
            annotation = param.annotation.annotation if param.annotation else None
            if type(annotation) is cst.Name and annotation.value in ("int", "float", "bool"):
                numbers.add(param.name.value)
        returned: list[cst.BaseExpression] = []
        for statement in _statements(function.body):
            if type(statement) is cst.Return:
                if statement.value is None:
                    return False
                returned.append(statement.value)
            elif type(statement) is cst.Assign:
                built = self._host_built(statement.value, host, numbers)
                number = not built and self._helper_number(statement.value, numbers)
                for target in (t.target for t in statement.targets):
                    if type(target) is not cst.Name:
                        continue
                    name = target.value
                    host.discard(name)
                    numbers.discard(name)
                    if built:
                        host.add(name)
                    elif number:
                        numbers.add(name)
            elif type(statement) is cst.AugAssign and type(statement.target) is cst.Name:
                name = statement.target.value
                if not (
                    name in host
                    and (
                        self._host_built(statement.value, host, numbers)
                        or self._helper_number(statement.value, numbers)
                    )
                ):
                    host.discard(name)
                    numbers.discard(name)
            elif type(statement) in (cst.Expr, cst.Yield) and any(
                type(n) in (cst.Yield, cst.Await) for n in descendants(statement)
            ):
                return False
        return bool(returned) and all(self._host_built(v, host, numbers) for v in returned)

    def _host_built(self, expr: cst.BaseExpression, host: set[str], numbers: set[str]) -> bool:
        """A tensor built on the host from host factories and numbers, in a helper's body
        (`host`: its names bound so)."""
        kind = type(expr)
        if kind is cst.Name:
            return expr.value in host  # type: ignore[attr-defined]
        if kind is cst.Subscript:
            return self._host_built(expr.value, host, numbers)  # type: ignore[attr-defined]
        if kind is cst.UnaryOperation:
            return self._host_built(expr.expression, host, numbers)  # type: ignore[attr-defined]
        if kind is cst.BinaryOperation:
            operands = [expr.left, expr.right]  # type: ignore[attr-defined]
        elif kind is cst.Comparison:
            comparisons = expr.comparisons  # type: ignore[attr-defined]
            operands = [expr.left, *(c.comparator for c in comparisons)]  # type: ignore[attr-defined]
        elif kind is cst.Call:
            if self._host_factory(expr) is not None:
                return True
            func = expr.func  # type: ignore[attr-defined]
            if any(a.star or _keyword_in(a, ("device", "out")) for a in expr.args):  # type: ignore[attr-defined]
                return False
            values = [a.value for a in expr.args]  # type: ignore[attr-defined]
            qualified = self.ctx.qualified(func) or ""
            if qualified.startswith("torch.") and qualified.count(".") == 1:
                operands = values  # `torch.tril(mask)`, `torch.where(m, a, b)`
            elif type(func) is cst.Attribute:
                method = func.attr.value
                if method in _MOVES and not (method == "to" and self._casts_only(expr)):  # type: ignore[arg-type]
                    return False
                if method in _NOT_TENSORS:
                    return False
                if not self._host_built(func.value, host, numbers):
                    return False
                operands = values
                return all(
                    self._host_built(v, host, numbers) or self._helper_number(v, numbers)
                    for v in operands
                )
            else:
                return False
        else:
            return False
        built = [self._host_built(v, host, numbers) for v in operands]
        return any(built) and all(
            b or self._helper_number(v, numbers) for b, v in zip(built, operands, strict=True)
        )

    def _helper_number(self, expr: cst.BaseExpression, numbers: set[str]) -> bool:
        """A Python number in a helper's body: a literal, a name bound to one (a parameter
        annotated as one), an attribute not known as a tensor (`self.window_size`), a
        size (`x.shape[1]`, `x.size(1)`, `len(x)`), `math`/builtin calls and arithmetic
        of numbers."""
        kind = type(expr)
        if kind in (cst.Integer, cst.Float):
            return True
        if kind is cst.Name:
            return expr.value in numbers or expr.value in ("True", "False")  # type: ignore[attr-defined]
        if kind is cst.Attribute:
            return type(expr.value) is cst.Name and self._host_number(expr)  # type: ignore[attr-defined]
        if kind is cst.Subscript:
            value = expr.value  # type: ignore[attr-defined]
            return type(value) is cst.Attribute and value.attr.value == "shape"
        if kind is cst.UnaryOperation:
            return self._helper_number(expr.expression, numbers)  # type: ignore[attr-defined]
        if kind is cst.BinaryOperation:
            return self._helper_number(expr.left, numbers) and self._helper_number(  # type: ignore[attr-defined]
                expr.right,  # type: ignore[attr-defined]
                numbers,
            )
        if kind is cst.BooleanOperation:
            return self._helper_number(expr.left, numbers) and self._helper_number(  # type: ignore[attr-defined]
                expr.right,  # type: ignore[attr-defined]
                numbers,
            )
        if kind is cst.Call:
            func = expr.func  # type: ignore[attr-defined]
            if type(func) is cst.Attribute and func.attr.value == "size":
                return True
            if type(func) is cst.Name and func.value == "len":
                return True
            qualified = self.ctx.qualified(func) or ""
            builtin = type(func) is cst.Name and func.value in _NUMBER_BUILTINS
            arguments = expr.args  # type: ignore[attr-defined]
            return (qualified.startswith("math.") or builtin) and all(
                self._helper_number(a.value, numbers) for a in arguments if not a.star
            )
        return False

    # -- helpers ------------------------------------------------------------------------------
    def _factory_name(self, factory: cst.Call) -> str:
        qualified = self.ctx.qualified(factory.func) or ""
        return f"{qualified}(...)"

    def _settings_data(self, factory: cst.Call) -> bool:
        """`torch.tensor(self.config.quantiles)`: a constructor of a list the settings hold."""
        first = positional_argument(factory, 0)
        return self._literal_data(factory) and first is not None and _settings_list(first.value)

    def _joined_factories(self, expr: cst.BaseExpression) -> tuple[str, cst.Call] | None:
        """`torch.cat((torch.zeros(n, b, c), torch.ones(n, b, 1)), dim=-1)` (also
        `torch.stack`, `torch.concat`, ...) of tensors every one of which a host factory
        builds: the join is on the host too. The join's name and the first factory."""
        head = self._chain_head(expr)
        if type(head) is not cst.Call:
            return None
        qualified = self.ctx.qualified(head.func)
        if qualified not in _JOINS:
            return None
        first = positional_argument(head, 0)
        parts = first.value if first is not None else None
        if type(parts) not in (cst.List, cst.Tuple) or not parts.elements:  # type: ignore[union-attr]
            return None
        factories = []
        for element in parts.elements:  # type: ignore[union-attr]
            if isinstance(element, cst.StarredElement):
                return None
            factory = self._host_factory(element.value) or self._derived_factory(element.value)
            if factory is None:
                return None
            factories.append(factory)
        return qualified, factories[0]

    def _literal_data(self, factory: cst.Call) -> bool:
        return self.ctx.qualified(factory.func) in _DATA_CONSTRUCTORS

    def _host_factory(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The factory call at the head of a chain of device-agnostic methods, if it builds
        on the host and the device form would cost no more."""
        expr = self._chain_head(expr)
        if type(expr) is not cst.Call:
            return None
        qualified = self.ctx.qualified(expr.func)
        if not _builds_on_host(expr, qualified):
            return None
        if self._bakes_changing_value(expr, qualified):
            return None
        return expr

    def _chain_head(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """What a chain of slices and device-agnostic methods starts from."""
        return self._chain(expr)[0]

    def _chain(self, expr: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
        """What a chain of slices, device-agnostic methods, arithmetic by a host number
        (on either side: `-math.log(p) * torch.arange(n) / half`) and elementwise torch
        math (`torch.exp(...)`, `.exp()`) starts from, and whether it passes such math
        (whose device form may round differently: no fix then)."""
        math = False
        while True:
            if type(expr) is cst.Call and (inner := self._elementwise_operand(expr)) is not None:
                expr, math = inner, True
                continue
            if type(expr) is cst.Subscript:
                expr = expr.value
            elif (
                type(expr) is cst.Call
                and isinstance(expr.func, cst.Attribute)
                and (
                    expr.func.attr.value in _DEVICE_AGNOSTIC
                    or (expr.func.attr.value == "type_as" and self._like_tensor(expr) is not None)
                )
            ):
                # A `.type_as(t)` inside the chain is where the copy happens; the chain is
                # reported once, at its outer move.
                expr = expr.func.value
            elif type(expr) is cst.Call and self._casts_only(expr):
                # `.to(value.dtype)`, `.to(dtype=torch.float16)`: a cast, where it is.
                expr = expr.func.value  # type: ignore[attr-defined]
            elif type(expr) is cst.BinaryOperation and (
                self._host_number(expr.right) or self._host_number(expr.left)
            ):
                # `torch.arange(n) * k`: host arithmetic by a number; `-math.log(p) *
                # torch.arange(n)`, the same reversed. A power rounds as `torch.pow` does.
                math = math or isinstance(expr.operator, cst.Power)
                expr = expr.left if self._host_number(expr.right) else expr.right
            elif type(expr) is cst.UnaryOperation and isinstance(expr.operator, cst.Minus):
                expr = expr.expression
            else:
                return expr, math

    def _casts_only(self, call: cst.Call) -> bool:
        """`.to(x.dtype)`, `.to(torch.float16)`, `.to(dtype=d)`: a `.to()` that names a
        dtype and no device (nor a tensor, whose device it would take)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to" and call.args):
            return False
        kinds = self.ctx.kinds
        return not (
            kinds.copies_to_device(call)
            or kinds.moves_to_cpu(call)
            or any(a.star or _keyword_in(a, ("device", "other", "tensor")) for a in call.args)
        )

    def _elementwise_operand(self, call: cst.Call) -> cst.BaseExpression | None:
        """`torch.exp(x)`, `x.exp()`, `torch.pow(x, 2)`: elementwise math of one tensor (and
        host numbers), computed where `x` lives; the tensor it is of."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _ELEMENTWISE:
            if self.ctx.qualified(func) == f"torch.{func.attr.value}":
                positional = [a for a in call.args if a.keyword is None and not a.star]
                if positional and all(self._host_number(a.value) for a in positional[1:]):
                    return positional[0].value
                return None
            if all(self._host_number(a.value) for a in call.args if not a.star):
                return func.value  # the method form, `x.exp()`
        return None

    def _host_number(self, expr: cst.BaseExpression) -> bool:
        """A number or a name not known as a tensor (`beam_size`, `self.scale`), its
        negation, a `math` function of such numbers (`-math.log(max_period)`) or their
        arithmetic: arithmetic by it keeps a host tensor on the host (by a device tensor, a
        host tensor of more than one element would fail: tensors on different devices)."""
        if isinstance(expr, cst.Integer | cst.Float):
            return True
        if isinstance(expr, cst.Name | cst.Attribute):
            return self.ctx.kind(expr) is not Kind.TENSOR
        if isinstance(expr, cst.UnaryOperation):
            return isinstance(expr.operator, cst.Minus | cst.Plus) and self._host_number(
                expr.expression
            )
        if isinstance(expr, cst.BinaryOperation):
            return self._host_number(expr.left) and self._host_number(expr.right)
        if isinstance(expr, cst.Call):
            qualified = self.ctx.qualified(expr.func) or ""
            # `max(k_size / q_size, 1.0)`: a builtin of host numbers is one.
            builtin = type(expr.func) is cst.Name and expr.func.value in _NUMBER_BUILTINS
            return (qualified.startswith("math.") or builtin) and all(
                self._host_number(a.value) for a in expr.args if not a.star
            )
        return False

    def _bakes_changing_value(self, factory: cst.Call, qualified: str) -> bool:
        """Arguments the device form bakes into the graph, changing from pass to pass."""
        positional = [a.value for a in factory.args if a.keyword is None]
        if qualified in _RANGES:
            keywords = ("start", "end", "step", "steps", "base")
            values = [*positional, *(a.value for a in factory.args if _keyword_in(a, keywords))]
            values = [v for v in values if v is not _length_argument(factory, qualified)]
        elif qualified == "torch.full":
            values = [
                *positional[1:2],
                *(a.value for a in factory.args if _keyword_in(a, ("fill_value",))),
            ]
        elif positional and (repeated := _repeated_value(positional[0])) is not None:
            values = [repeated]  # `[v] * n`, built on the device as `torch.full((n,), v)`
        elif positional and (bounds := _range_data(positional[0])) is not None:
            # `[range(1, n)]`, built on the device as `torch.arange(1, n)`
            values = [v for i, v in enumerate(bounds) if i != (0 if len(bounds) == 1 else 1)]
        else:
            return False
        return any(self.values.varies(value) for value in values)

    def _moves_to_device(self, call: cst.Call) -> bool:
        """`.to(device)`, `.to(device=d)`, `.to("xla")`: a first argument that is a device."""
        device = self._device_argument(call)
        return device is not None and self._is_device(device)

    @staticmethod
    def _device_argument(call: cst.Call) -> cst.BaseExpression | None:
        keyword = keyword_argument(call, "device")
        if keyword is not None:
            return keyword.value
        positional = [a for a in call.args if a.keyword is None]
        return positional[0].value if positional and not positional[0].star else None

    def _is_device(self, value: cst.BaseExpression) -> bool:
        kind = device_string_type(value)
        if kind is not None:
            return kind != "cpu"
        if isinstance(value, cst.Call):
            qualified = self.ctx.qualified(value.func)
            if qualified in XLA_DEVICE_CALLS:
                return True
            if qualified == "torch.device":
                first = value.args[0].value if value.args else None
                return first is None or device_string_type(first) != "cpu"
            return False
        if (
            type(value) is cst.Attribute
            and value.attr.value == "device"
            and self.ctx.kind(value.value) is Kind.HOST
        ):
            return False  # `.to(logits.device)` after `logits = logits.cpu()`: the CPU
        return is_device_name(value)

    def _device_fix(
        self, move: cst.Call, receiver: cst.BaseExpression, factory: cst.Call
    ) -> NodeFix | None:
        device = self._device_argument(move)
        assert device is not None
        others = [a for a in move.args if a.value is not device]
        if any(
            a.star or a.keyword is None or a.keyword.value not in _COPY_ONLY_KEYWORDS
            for a in others
        ):
            return None  # a dtype, a memory format, or arguments we cannot see
        if any(a.star or _keyword_in(a, tuple(_HOST_ONLY_KEYWORDS)) for a in factory.args):
            return None
        built = with_keyword(factory, "device", device)
        replaced = receiver.deep_replace(factory, built)
        assert isinstance(replaced, cst.BaseExpression)
        # The edit spans the call without its own parentheses, which stay in place. The
        # receiver's own are dropped only where it binds as tightly as the call did: `x /
        # (torch.arange(n) * k).to(d)` keeps them (`x / torch.arange(...) * k` divides less).
        if isinstance(replaced, cst.Call | cst.Attribute | cst.Subscript | cst.Name):
            replaced = replaced.with_changes(lpar=(), rpar=())
        code = self.ctx.module.code_for_node(replaced)
        if "\n" in code or "\r" in code:
            return None
        return self.fix(
            "Build the tensor on the device: pass `device=` to the factory", (move, code)
        )


def _statements(block: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """The small statements of a block and of the blocks nested in it (not of nested
    definitions), in the order of the source."""
    if not isinstance(block, cst.IndentedBlock):
        yield from block.body  # type: ignore[union-attr]  # `if x: return y` on one line
        return
    for statement in block.body:
        if type(statement) is cst.SimpleStatementLine:
            yield from statement.body
        elif type(statement) not in (cst.FunctionDef, cst.ClassDef):
            yield from _compound_statements(statement)


def _assigned_names(line: cst.SimpleStatementLine) -> set[str]:
    """The names a line's assignments bind (`make_mask = build_mask`)."""
    names: set[str] = set()
    for small in line.body:
        if type(small) is cst.Assign:
            for target in small.targets:
                names |= target_names(target.target)
        elif type(small) in (cst.AnnAssign, cst.AugAssign):
            names |= target_names(small.target)  # type: ignore[attr-defined]
    return names


def _compound_statements(statement: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The small statements of an `if`/`for`/`while`/`with`/`try` and its other branches."""
    for field in ("body", "handlers", "orelse", "finalbody"):
        part = getattr(statement, field, None)
        for inner in part if isinstance(part, tuple | list) else (part,):
            if isinstance(inner, cst.BaseSuite):
                yield from _statements(inner)
            elif type(inner) is cst.If:
                yield from _compound_statements(inner)  # an `elif`
            elif inner is not None and isinstance(getattr(inner, "body", None), cst.BaseSuite):
                yield from _statements(inner.body)  # `else:`, `except:`, `finally:`


def _empty_dict(value: cst.BaseExpression) -> bool:
    """`{}` or `dict()`."""
    if type(value) is cst.Dict:
        return not value.elements
    return (
        type(value) is cst.Call
        and type(value.func) is cst.Name
        and value.func.value == "dict"
        and not value.args
    )


def _item_of(target: cst.BaseExpression, name: str) -> bool:
    """`name[...]` as an assignment's target."""
    return (
        type(target) is cst.Subscript
        and type(target.value) is cst.Name
        and target.value.value == name
    )


def _bound_names(node: cst.CSTNode) -> set[str]:
    """The names an assignment statement binds (`t = ...`, `t += 1`); none for others."""
    if type(node) is cst.Assign:
        return set().union(*(target_names(t.target) for t in node.targets))  # type: ignore[attr-defined]
    if type(node) in (cst.AugAssign, cst.AnnAssign):
        return target_names(node.target)  # type: ignore[attr-defined]
    return set()


def _string_arguments(call: cst.Call) -> Iterator[str]:
    for arg in call.args:
        if isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            if isinstance(value, str):
                yield value


# Joins of tensors: where every part is on the host, so is the result.
_JOINS = frozenset(
    f"torch.{name}" for name in ("cat", "concat", "concatenate", "stack", "hstack", "vstack")
)


def _settings_list(value: cst.BaseExpression) -> bool:
    """`self.config.quantiles`, `args.weights`, `cfg.model.anchor_scales`: a list the run's
    settings hold (an attribute, named in the plural, of an object named for them). It is
    the same on every step, so a tensor of it built per step copies the same data to the
    device every time, where one built once (a buffer) would not. A singular name
    (`args.temperature`) is a number, whose 0-dim tensor torch_xla keeps as a cached
    device scalar (measured: `torch.tensor(-math.inf).to(x)`, 1 transfer in 5 steps)."""
    if type(value) is not cst.Attribute or not _plural(value.attr.value):
        return False
    root = value.value
    while type(root) is cst.Attribute:
        if root.attr.value.lower() in _SETTINGS_OBJECTS:
            return True
        root = root.value
    return type(root) is cst.Name and root.value.lower() in _SETTINGS_OBJECTS


# Names of the objects that hold a run's settings, and plural attribute names (`weights`,
# `quantiles`, `betas`; not `bias`, `eps`, `loss`, `radius`, `axis`).
_SETTINGS_OBJECTS = frozenset(
    {"config", "cfg", "conf", "args", "hparams", "hps", "opt", "opts", "options", "settings"}
)
_PLURAL = re.compile(r"[^siu]s$")
_SINGULAR_IN_S = frozenset({"bias", "eps", "alias", "gas"})


def _plural(name: str) -> bool:
    last = name.lower().rsplit("_", 1)[-1]
    return bool(_PLURAL.search(last)) and last not in _SINGULAR_IN_S


def _agnostic_head(value: cst.BaseExpression) -> cst.BaseExpression:
    """What a chain of device-agnostic methods (`.float()`, `.view(1, -1)`) starts from."""
    while (
        type(value) is cst.Call
        and type(value.func) is cst.Attribute
        and value.func.attr.value in _DEVICE_AGNOSTIC
    ):
        value = value.func.value
    return value


def _builds_on_host(factory: cst.Call, qualified: str | None) -> bool:
    """A factory of `_FACTORIES` building a tensor of at least one dimension on the host, or
    a constructor given a non-empty list of number literals (`torch.LongTensor([0])`), a
    list repeating one value (`torch.IntTensor([max_len] * batch_size)`: `torch.full`), or
    sizes (`torch.LongTensor(batch_size, max_len + 1)`: `torch.empty`)."""
    if qualified in _DATA_CONSTRUCTORS:
        first = positional_argument(factory, 0)
        if first is None:
            return False
        if not (
            _number_literals(first.value)
            or _repeated_value(first.value) is not None
            or _range_data(first.value) is not None
            or _legacy_sizes(factory, qualified)
            or _settings_list(first.value)
        ):
            return False
    elif qualified not in _FACTORIES or _zero_dimensional(factory):
        return False
    device = keyword_argument(factory, "device")
    return device is None or device_string_type(device.value) == "cpu"


def _repeated_value(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """`[v] * n` or `n * [v]`, with `v` a number or a name: the value a list repeats (the
    data of `torch.full((n,), v)`)."""
    if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, cst.Multiply):
        return None
    for side in (value.left, value.right):
        if isinstance(side, cst.List | cst.Tuple) and len(side.elements) == 1:
            element = side.elements[0]
            item = element.value
            if not isinstance(element, cst.StarredElement) and isinstance(
                item, cst.Integer | cst.Float | cst.Name | cst.Attribute
            ):
                return item
    return None


def _length_argument(factory: cst.Call, qualified: str) -> cst.BaseExpression | None:
    """The argument of a range factory that sets its length alone: `end` of `arange(end)`
    and `arange(start, end[, step])`, `steps` of `linspace`/`logspace`. Changing from pass
    to pass, it changes the tensor's shape, and the graph that uses it compiles for each
    shape wherever the tensor is built: the device form adds no compile (measured: `torch.
    arange(0, l)` with `l` in 3, 4, 5, 3, 4 over 5 steps, 3 compiles either way, and 5
    host-to-device transfers built on the host against none with `device=`)."""
    positional = [a.value for a in factory.args if a.keyword is None and not a.star]
    name = "end" if qualified == "torch.arange" else "steps"
    keyword = keyword_argument(factory, name)
    if keyword is not None:
        return keyword.value
    if qualified == "torch.arange":
        return positional[0] if len(positional) == 1 else (positional[1] if positional else None)
    return positional[2] if len(positional) > 2 else None


def _range_data(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """`range(1, n + 2)`, `list(range(n))`, `[[range(1, k)]]` (a range in one-element
    lists, at any depth): data counted from bounds, which `torch.arange(...)` builds on the
    device from the bounds alone. The bounds, for the caller to judge whether they change
    from pass to pass; None for any other data."""
    while isinstance(value, cst.List | cst.Tuple) and len(value.elements) == 1:
        element = value.elements[0]
        if isinstance(element, cst.StarredElement):
            return None
        value = element.value
    if (
        type(value) is cst.Call
        and type(value.func) is cst.Name
        and value.func.value in ("list", "tuple")
        and len(value.args) == 1
    ):
        value = value.args[0].value
    if not (
        type(value) is cst.Call
        and type(value.func) is cst.Name
        and value.func.value == "range"
        and 1 <= len(value.args) <= 3
        and all(a.keyword is None and not a.star for a in value.args)
    ):
        return None
    return [a.value for a in value.args]


def _legacy_sizes(factory: cst.Call, qualified: str) -> bool:
    """`torch.LongTensor(batch_size, max_len + 1)`: a typed constructor (not `torch.tensor`
    or `as_tensor`) given two or more positional arguments, none a sequence: sizes, an
    uninitialised tensor on the host, as `torch.empty` builds one (one argument may be
    data, `torch.LongTensor(ids)`, and is not taken)."""
    if qualified in ("torch.tensor", "torch.as_tensor"):
        return False
    positional = [a for a in factory.args if a.keyword is None]
    return len(positional) >= 2 and not any(
        a.star or isinstance(a.value, cst.List | cst.Tuple | cst.ListComp | cst.SimpleString)
        for a in positional
    )


def _number_literals(value: cst.BaseExpression) -> bool:
    """`[0]`, `[[1.0, -2.0]]`: a non-empty list (or tuple) of number literals, at any depth.
    A bare number is a 0-dim tensor, which torch_xla caches as a device scalar; a name or
    a comprehension is data from the host."""
    if not isinstance(value, cst.List | cst.Tuple) or not value.elements:
        return False
    for element in value.elements:
        item = element.value
        if isinstance(item, cst.UnaryOperation) and isinstance(item.operator, cst.Minus):
            item = item.expression
        if isinstance(element, cst.StarredElement):
            return False
        if not (isinstance(item, cst.Integer | cst.Float) or _number_literals(item)):
            return False
    return True


def _zero_dimensional(factory: cst.Call) -> bool:
    """`torch.zeros(())`, `torch.full([], v)`: a 0-dim tensor, which torch_xla moves as a
    scalar (measured: `torch.zeros(()).to(t)` adds no transfer, and a constant 0-dim tensor
    is copied once and then found in torch_xla's cache of device scalars)."""
    size = keyword_argument(factory, "size")
    first = size if size is not None else positional_argument(factory, 0)
    value = None if first is None else first.value
    return isinstance(value, cst.Tuple | cst.List) and not value.elements


def _keyword_in(arg: cst.Arg, names: tuple[str, ...]) -> bool:
    return arg.keyword is not None and arg.keyword.value in names
