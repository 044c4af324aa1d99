from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.arguments import Signature, bind, keyword_argument, parameter
from xlalint.analysis.guards import possible_values
from xlalint.analysis.host_reads import ReadRuns, enclosing_statement, read_root
from xlalint.analysis.zero_dim import ZeroDimIndexes
from xlalint.context import Kind
from xlalint.rule import Rule
from xlalint.walk import bound_names

if TYPE_CHECKING:
    from xlalint.context import FileContext

# torch factories whose positional arguments are all sizes (or a tuple of sizes).
_SIZED_FACTORIES = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "empty", "rand", "randn")
)
# torch factories and functions taking one size, by its position.
_SIZE_ARGUMENT = {"torch.full": 0, "torch.reshape": 1}
# `torch.arange(start, end, step)`: every bound is read as a Python number.
_RANGES = frozenset({"torch.arange"})
# `torch.linspace(start, end, steps)`: so are both ends (and the count) of the grid.
_LINSPACE = "torch.linspace"
_LINSPACE_KEYWORDS = frozenset({"start", "end", "steps"})
# Factories whose fill value is a Scalar, read as a Python number: `torch.full(size,
# fill_value)`, `torch.full_like(input, fill_value)`, `x.new_full(size, fill_value)`.
_FILLED = frozenset({"torch.full", "torch.full_like"})
# Tensor methods whose positional arguments are all sizes (or a tuple of sizes).
_SIZED_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"}
)
_SIZE_KEYWORDS = frozenset({"size", "shape", "start", "end", "step"})
# Factories that read each element of a list or tuple of data as a Python number.
_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
# The legacy typed constructors (`torch.Tensor((a, b, c))`, `torch.LongTensor([...])`) do
# too when handed a literal sequence; handed a name, they are overloaded (sizes, a tensor
# to alias, a storage, data), and only the literal shows which.
_LEGACY_CONSTRUCTORS = frozenset(
    f"torch.{kind}Tensor"
    for kind in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char",
                 "Byte", "Bool")
)  # fmt: skip
_DISTRIBUTIONS = "torch.distributions."
# Scalar parameters of torch operations (keyword-only in their signatures): a tensor
# handed there is converted to a Python number, as `.item()` would (`torch.add(atol, m,
# alpha=self.rtol)` with a 0-dim buffer of the device reads it every call).
_SCALAR_KEYWORDS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("add", "sub", "subtract", "add_", "sub_", "rsub"), frozenset({"alpha"})),
    **dict.fromkeys(
        ("addmm", "addbmm", "baddbmm", "addmv", "addr", "addmm_", "baddbmm_", "addmv_", "addr_"),
        frozenset({"alpha", "beta"}),
    ),
    **dict.fromkeys(("addcmul", "addcdiv", "addcmul_", "addcdiv_"), frozenset({"value"})),
}
_SPLIT_SIGNATURE = Signature(
    ("ary", "indices_or_sections", "axis"), frozenset({"ary", "indices_or_sections", "axis"})
)
# numpy's splits take their split points (`indices_or_sections`, second) as Python ints:
# a device tensor there is read element by element. (A device tensor as an array raises
# instead: `np.asarray(t)` cannot convert an XLA tensor; `np.mean(t)` calls `t.mean`.)
_NUMPY_SPLITS = frozenset(
    f"numpy.{name}" for name in ("split", "array_split", "hsplit", "vsplit", "dsplit")
)
# `torch.normal(mean, std, size)`: with a size, both moments are Python floats.
_NORMAL = "torch.normal"
_NORMAL_SIGNATURE = Signature(
    ("mean", "std", "size"),
    frozenset(
        {
            "mean",
            "std",
            "size",
            "generator",
            "out",
            "dtype",
            "layout",
            "device",
            "pin_memory",
            "requires_grad",
        }
    ),
)
# `F.one_hot(tensor, num_classes=-1)`: with no class count (-1, the default) it reads
# `tensor.max()` on the host to size its output.
_ONE_HOT = "torch.nn.functional.one_hot"
_ONE_HOT_SIGNATURE = Signature(("tensor", "num_classes"), frozenset({"tensor", "num_classes"}))
_DISTRIBUTION_HINT = (
    "Pass `validate_args=False` (or call "
    "`torch.distributions.Distribution.set_default_validate_args(False)` once)"
)
# Distributions that build others inside with validation at its default, whatever their
# own `validate_args` says: `Multinomial.__init__` builds a `Categorical` and a `Binomial`
# (measured, torch_xla 2.9: `Multinomial(logits=f, validate_args=False)` 3 scalar reads per
# construction, none after `set_default_validate_args(False)`).
_VALIDATED_INSIDE = frozenset({"torch.distributions.Multinomial"})
_INSIDE_HINT = (
    "Call `torch.distributions.Distribution.set_default_validate_args(False)` once: "
    "`validate_args=False` does not reach the distributions it builds inside"
)


class HiddenHostRead(Rule):
    """
    ## What it does
    Flags a tensor used where Python needs a plain number, in code that runs every step:
    an index into a list, tuple, dict, string or host array (`labels[pred]`), a slice
    bound on anything (`x[:n]`), a size (`torch.zeros(n)`, `x.view(n, -1)`,
    `x.reshape(...)`, `x.expand(...)`, `x.repeat(...)`, `torch.ones/empty/full/rand/randn`;
    a namespace's function of such a name handed the tensor first, `d2l.reshape(x, shape)`,
    takes its sizes after it),
    a bound of `torch.arange(...)` or of `torch.linspace(...)` (both ends and the count: a
    grid from `x.min()` to `x.max()`; as for a fill value, only a tensor the file knows is
    on the device, not a parameter taken for one by where it is), the fill value of
    `torch.full(size, fill_value)`, `torch.full_like(x, fill_value)` or
    `x.new_full(size, fill_value)` given a device tensor (a diffusion sampler's
    `torch.full((b, 1, 1, 1), alphas[index], device=device)` with `alphas` a schedule
    kept on the device: the fill is a Scalar, read as a Python number on every call; not a
    parameter of the function, most often a number, nor a name in the branch a failed
    tensor test takes, `else` of `if is_tensor(weight):`; nor an attribute a plain
    sampler class binds through a `register_buffer` of its own that moves nothing,
    `setattr(self, name, attr)`, which keeps a host schedule on the host; nor an element
    of a value taken for tensors by its name alone, `sigmas[index]`), an argument
    of `range(...)`, the
    split points of numpy's
    splits (`np.split(forces, indices_or_sections=batch.ptr[1:])`, `np.array_split`), an
    element of the data of
    `torch.tensor([...])` or of a legacy typed constructor's literal sequence
    (`torch.Tensor((doc_id, log_likelihood))`, `torch.LongTensor([...])`; given sizes or a
    name, these are left alone)
    (`torch.tensor([R], device=device)` reads `R`; so does a list
    the function appends device tensors to, `volumes.append(torch.dot(a, b))` then
    `torch.tensor(volumes)`: measured on the XLA CPU device, 4 volumes over 3 steps cost
    12 `aten::_local_scalar_dense`, where `torch.stack(volumes)` stays on the device; and
    a list comprehension whose element is a device tensor, `torch.as_tensor([torch.mean(
    res) for res in scores], device=device)`), or
    a Scalar parameter of a torch operation given a tensor the file knows is on the
    device (`torch.add(self.atol, m, alpha=self.rtol)` with `rtol` a registered buffer,
    `x.add_(y, alpha=...)`, `beta=` of `addmm`, `value=` of `addcmul`; not a parameter of
    the function, taken for a tensor only by where it is, nor a value of unknown kind:
    measured on the XLA CPU device (torch_xla 2.9, 5 calls): a 0-dim device tensor as
    `alpha=` of `torch.add`, `torch.sub` and `add_`, `value=` of `addcmul` or `beta=` of
    `addmm` cost one `aten::_local_scalar_dense` and one device-to-host transfer per call,
    a host tensor none), or
    a parameter of a `torch.distributions` distribution built with argument validation on
    (the default where Python runs without `-O`, or asked for with `validate_args=True`;
    not with `validate_args=False` or a setting the file does not show, but for
    `Multinomial`, whose `Categorical` and `Binomial` inside are validated at the default
    whatever its own `validate_args` says):
    `Categorical(probs)` checks `probs` on the host when it is built and again in each
    `log_prob`, `Uniform(low=torch.tensor(lo, device=d), high=..., validate_args=True)`
    each bound when it is built; the mean or standard deviation of `torch.normal(mean,
    std, size)` given a device tensor (with a size, the only overload takes two Python
    floats; without one, tensors there are elementwise on the device); or the input of
    `F.one_hot` given no class count (`F.one_hot(t)`, `num_classes=-1`, or a name that is
    -1 on some path: a ridge regression's `if num_classes is None: num_classes = -1`),
    which sizes its output by `t.max() + 1`, read on the host (`one_hot` takes tensors
    only, so an input of unknown kind in per-step code is the step's; a given count, a
    literal or `logits.shape[-1]`, reads nothing). Indexing a tensor
    with a tensor (`x[idx]`) is advanced indexing on the device and is not flagged, unless the
    index is a 0-dim integer tensor of the device, which PyTorch reads as a Python int
    (`x[i]` with `i = torch.argmax(scores)`, `scores.argmin()`, `(i % n).long()`, by
    every plain assignment of a local name); `argmax` along a dim or a 1-element index
    (`i.reshape(1)`) stays on the device. A torch tensor made on the host (`self.tree =
    torch.zeros(n)` in `__init__`, a factory given no device, `torch.from_numpy(a)`,
    `x.cpu()`, a slice of such a tensor: `target = tokens[:, a:b]`, then `target[mask] =
    0`) is indexed the same way: `self.tree[ids]` is a gather, not a Python index
    (a 0-dim integer index of the device, or an element of a device tensor looped over,
    `[perms[m] for m in min_idx]`, is still read). Nor is a dict's lookup flagged,
    also of a dict an attribute holds (`self.id_dict = dict(...)` in `__init__`, or
    `self.id_dict: Dict[Tensor, int] = {}`, then `self.id_dict[k]` in the step): a dict
    hashes a tensor key by identity. Nor is an index that is a per-step function's
    parameter the function compares with a string (`self.losses[stage]` in `step(self,
    batch, stage)` testing `stage == "train"`): a stage's name, not a tensor. Nor is
    indexing a value of unknown kind flagged; but an item of a loop over a value of
    unknown kind is a tensor where the function uses it as one (hands it to a torch
    operation that takes only tensors, or as the index of `index_select`, `gather`,
    `index_add_` or `scatter_`): after `for i, idx in enumerate(batch["cont_idx"])` and
    `outputs[i].index_select(0, idx - 1)`, `x[: idx[0]]` reads a 0-dim device tensor, and so
    does `x[: batch["cont_idx"][j][0]]` later in the function (that entry holds tensors;
    the mapping's other entries stay unknown). An optional value set to `None` on one path (`else:
    mask = None`) keeps what its other assignment says (`mask = build_mask(...)`), since
    it is only indexed where it is not `None`. Nor are
    `range(int(t))` and `range(t.item())`, whose explicit read XLA101 reports. Nor is an
    element of a list indexed by several tensors at once (`states_list[i][batch_idx,
    labels]`): no list takes a tuple index, so the element is a tensor (or an array), and
    the index a gather on the device. For
    `range(t)` this rule reports the hidden read of `t`; the loop's trip count, which
    depends on the data even when read once, is XLA209's (data-dependent-trip-count).
    Slice bounds read from one tensor in a run (`rows[offsets[i] : offsets[i + 1]]`, then
    `cols[offsets[i] : offsets[i + 1]]` on the next line; `a[:, -keep:]` then `b[:,
    -keep:]`) are one cause with one fix, reading the bound once into a Python int: only
    the run's first bound is reported, as XLA101 reports runs of reads of one value. So are
    the bounds one statement slices with, of whatever tensors (`torch.cat((h[i, start[i] :
    end[i]], h[i, end[i] : end[i] + n[i]]))` over a statement's lines): one statement, one
    fix (a gather with fixed-size indices, or the bounds read once), reported at the
    first. The
    tensors one call reads as numbers (`range(offsets[i - 1], offsets[i])`, `torch.zeros(n,
    m)`) are one cause too, reported once, at the first, as XLA101 reports reads handed to
    one call.

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Python indexes,
    slices and sizes are host integers, so a 0-d tensor used as one is converted with
    `__index__`, which reads its value: the pending graph is compiled and executed right
    there and the value is copied back, with no `.item()` in sight. A size or slice bound
    that changes from step to step also gives each step a new shape, and a new compile.

    ## Example
    ```python
    for x, lengths in loader:
        n = lengths.max()
        tokens = x[:, :n]
        pad = torch.zeros(n)
        names = [class_names[c] for c in model(tokens).argmax(-1)]
    ```

    ## Use instead
    Keep shapes static and select on the device; read values once, outside the step:
    ```python
    for x, lengths in loader:
        mask = torch.arange(x.shape[1], device=x.device) < lengths[:, None]
        tokens = x * mask
        preds.append(model(tokens).argmax(-1))
    names = [class_names[c] for c in torch.cat(preds).tolist()]
    ```

    ## Off by default
    On code its rule was never tuned on (the held-out projects of rounds 11-17 of
    `benchmarks/quality/`, first scores), 44 findings held 6 true costs; 37 of the
    others no label covered, and judged blind among look-alike decoys (round 17's pool) such
    findings still kept on the tune split held 3 true costs in 12 (`Categorical(probs)`
    validating its input): lists of per-step scalars, dict lookups and fixed slice offsets
    taken for tensors read on the host.
    A rule wrong more often than right on unseen code stays out of the default set;
    turn it on with `extend-select = ["XLA107"]` (or `--extend-select XLA107`).

    ## Fix safety
    No fix: a static-shape rewrite (padding and masks) needs judgement, so this rule
    reports with a hint only. For a distribution the hint is `validate_args=False`, which
    stops the checks (and the errors they raise on invalid parameters).

    ## Runtime evidence
    Measured by hand on the XLA CPU device (torch_xla 2.9): `Categorical(probs)` with a
    device `probs` costs one device-to-host transfer when built and one per `log_prob`,
    none with `validate_args=False`. `Categorical(logits=x / t)` built from a fresh device
    tensor in each of 5 steps (a sampling decoder's temperature branch) cost 10 executions
    and 5 device-to-host transfers, against 5 and none with `validate_args=False`: the
    `logits` are checked on the host too. Two slices by one 0-d tensor in a row
    (`a[:, -keep:]`, then `b[:, -keep:]`) over 5 steps cost 14 executions and 10 transfers,
    against 11 and 5 for one: each use reads the value again, and `k = int(keep)` once
    removes the second read (reported once, at the first). In an
    actor-critic loop `torch.tensor([R],
    device=device)` with `R` a device tensor cost one transfer per call. Indexing by a
    0-dim integer tensor, measured by hand: `x[i]` and `x[:, (i % 8).long()]` with `i =
    torch.argmax(j)` cost 16 executions and 10 device-to-host transfers over 5 steps,
    against 5 executions and no transfer with `x[i.reshape(1)]`. Not yet a
    harness case. A CPU tensor indexed by an index tensor of the device raises (the
    indices must be on the CPU or the indexed tensor's device), and a dict looked up by a
    device tensor raises `KeyError`: neither transfers anything, while `[perms[m] for m
    in idx]` (`perms` on the CPU, `idx` a 1-d device tensor of 3) costs 3 transfers
    (measured by hand). `np.split(a, indices_or_sections=ptr[1:])` with `ptr[1:]` a device
    tensor of 3 split points cost 35 executions and 30 device-to-host transfers over 5
    steps, against 5 and none with the points on the host (measured by hand; the same for
    `np.array_split`). A device tensor handed to numpy as an array is no read:
    `np.asarray(t)` raises (an XLA tensor does not convert to numpy) and `np.mean(t)` calls
    `t.mean`.
    Measured by hand in round 25 (XLA CPU device): `torch.full((2, 1, 1, 1),
    alphas[index], device=xla)` with `alphas` on the device, over 5 passes, 5
    `aten::_local_scalar_dense` and 5 device-to-host transfers (a host `alphas`: none);
    `torch.linspace(b[0], b[1], n)` with device bounds, 2 per call; slices of one
    statement bounded by a batch's marker positions (batch 4), 16 transfers per forward.
    Measured by hand in round 24 (5 calls, XLA CPU device): `F.one_hot(t)` and
    `F.one_hot(t, num_classes=-1)` of a device tensor of 4 labels, 5
    `aten::_local_scalar_dense` and 5 device-to-host transfers; `F.one_hot(t,
    num_classes=4)`, none.
    Measured by hand in round 22 (5 calls, XLA CPU device): `range(n + 1)` with `n =
    (ids == k).sum()`, a 0-dim device sum, 5 `aten::_local_scalar_dense` and 5 transfers;
    `torch.zeros(g)` with `g` a 0-dim device tensor, 5 and 5. Such a count is a device
    tensor also where it is summed from a row of a list a comprehension built of device
    tensors (`input_ids = [ids[mask] for ids, mask in zip(input_ids, attention_mask)]`,
    then `for i, cur_input_ids in enumerate(input_ids)`): iterating that list yields
    what its element is.
    For the other uses, not measured yet: the harness will run 5 steps of
    `x[:n]` and `torch.zeros(n)` with `n` a 0-d device tensor against a static-shape,
    masked version, and compare executions, compiles and `TransferFromDeviceTime`
    samples: each read is expected to cost one extra execution and one device-to-host
    transfer per step, like `.item()` (10 executions and 5 transfers for 5 steps in the
    measured `.item()` case).
    """

    code = "XLA107"
    name = "hidden-host-read"
    default_enabled = False
    message = "A tensor used as {use} is read on the host every step, forcing a graph execution"
    hint = "Keep shapes static (pad and mask) and index on the device; read values after the loop"
    hot_only = True
    needs_torch = True
    # Subscripts need `[`; the sized calls and `range` need their names.
    triggers = (
        "[",
        "tensor",
        "distributions",
        "range",
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "view",
        "reshape",
        "expand",
        "repeat",
        "new_",
        "one_hot",
        "linspace",
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._runs = ReadRuns()
        # Per function: lists it appends device tensors to (`volumes.append(torch.dot(a,
        # b))`), which `torch.tensor(volumes)` reads element by element.
        self._device_lists: list[set[str]] = [set()]
        # The first tensor slice bound of each statement, by (id(block), position).
        self._statement_bounds: dict[tuple[int, int], cst.CSTNode] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._device_lists.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._device_lists.pop()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        container = None  # computed only when an index is a tensor
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None and self.ctx.is_tensor(bound):
                        # `x[offsets[i] : offsets[i + 1]]`, and the same bounds again on
                        # the next line: elements of one value read in a run, one cause.
                        repeat_of = self._runs.previous(
                            read_root(bound), self.ctx.ancestors(), bound
                        )
                        # `torch.cat((h[i, start[i] : end[i]], h[i, end[i] : end[i] +
                        # n[i]]))`: the bounds one statement slices with, of whatever
                        # tensors, are one cause with one fix (read them once, or gather
                        # with fixed-size indices): reported at the first.
                        where = enclosing_statement(self.ctx.ancestors())
                        if where is not None:
                            key = (id(where[0]), where[1])
                            first = self._statement_bounds.setdefault(key, bound)
                            if repeat_of is None and first is not bound:
                                repeat_of = first
                        self.report(
                            bound, self.message.format(use="a slice bound"), repeat_of=repeat_of
                        )
            elif self.ctx.is_tensor(index.value):
                if container is None:
                    container = self.ctx.kind(node.value)
                # A tensor indexing a tensor is advanced indexing, on the device, unless
                # it is a 0-dim integer tensor, which indexes as a Python int; a dict
                # hashes a tensor key by identity, reading nothing. A torch tensor made
                # on the host is indexed as one on the device.
                host_tensor = container is Kind.HOST and self.ctx.kinds.is_host_tensor(node.value)
                if (
                    container is Kind.HOST
                    and not host_tensor
                    and not self.ctx.kinds.is_dict(node.value)
                    and not _element_indexed_by_tuple(node)
                ):
                    self.report(index.value, self.message.format(use="a Python index"))
                elif (container is Kind.TENSOR or host_tensor) and self._zero_dim_integer(
                    index.value
                ):
                    self.report(index.value, self.message.format(use="a 0-dim integer index"))
                elif host_tensor and self._tensor_element(index.value):
                    # `[perms[m] for m in min_idx]`: a host tensor takes a device index
                    # only as a number (an index tensor of the device raises).
                    self.report(index.value, self.message.format(use="a 0-dim integer index"))

    def _zero_dim_integer(self, index: cst.BaseExpression) -> bool:
        indexes = ZeroDimIndexes(self.ctx.kinds, self.ctx.imports, self.ctx.function_node)
        return indexes.is_integer(index)

    def _tensor_element(self, index: cst.BaseExpression) -> bool:
        """`m` of `for m in idx` (a loop or a comprehension): an element of a tensor."""
        if type(index) is not cst.Name:
            return False
        for ancestor in self.ctx.ancestors():
            loops: list[cst.CompFor | cst.For] = []
            if isinstance(ancestor, cst.For):
                loops = [ancestor]
            elif isinstance(ancestor, cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp):
                comp: cst.CompFor | None = ancestor.for_in
                while comp is not None:
                    loops.append(comp)
                    comp = comp.inner_for_in
            for loop in loops:
                target = loop.target
                if type(target) is cst.Name and target.value == index.value:
                    return self.ctx.is_tensor(loop.iter)
            if isinstance(ancestor, cst.FunctionDef | cst.Lambda):
                return False
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value == "append"
            and type(func.value) is cst.Name
            and len(node.args) == 1
            and self.ctx.is_tensor(node.args[0].value)
        ):
            self._device_lists[-1].add(func.value.value)
        qualified = self.ctx.qualified(func)
        self._check_scalar_keywords(node, qualified)
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        keywords = [
            arg.value
            for arg in node.args
            if arg.keyword is not None and arg.keyword.value in _SIZE_KEYWORDS
        ]
        if qualified is not None:
            if qualified in _NUMPY_SPLITS:
                self._check_split_points(node, qualified)
            elif qualified in _DATA_FACTORIES and positional:
                self._check_data(positional[0])
            elif qualified in _LEGACY_CONSTRUCTORS and len(positional) == 1:
                if type(positional[0]) in (cst.List, cst.Tuple):
                    self._check_data(positional[0])
            elif qualified.startswith(_DISTRIBUTIONS):
                self._check_distribution(node, qualified, positional)
            elif qualified == _NORMAL:
                self._check_normal_scalars(node)
            elif qualified == _ONE_HOT:
                self._check_one_hot(node)
            elif qualified in _SIZED_FACTORIES:
                self._check_sizes([*positional, *keywords])
            elif qualified in _RANGES:
                self._check_sizes([*positional, *keywords], "a `torch.arange()` bound")
            elif qualified == _LINSPACE:
                self._check_linspace(node, positional)
            elif qualified in _SIZE_ARGUMENT:
                position = _SIZE_ARGUMENT[qualified]
                sized = self._check_sizes([*positional[position : position + 1], *keywords])
                if not sized and qualified in _FILLED:  # one call, one cause
                    self._check_fill(node, positional, qualified.rsplit(".", 1)[-1])
            elif qualified in _FILLED:
                self._check_fill(node, positional, qualified.rsplit(".", 1)[-1])
            return
        if type(func) is cst.Name:
            if func.value == "range":
                # `range(offsets[i - 1], offsets[i])`: one call's bounds, one cause.
                first = next((arg for arg in positional if self.ctx.is_tensor(arg)), None)
                if first is not None:
                    self.report(first, self.message.format(use="a `range()` argument"))
        elif (
            isinstance(func, cst.Attribute)
            and func.attr.value in _SIZED_METHODS
            and self.ctx.kind(func.value) is not Kind.MODULE
            and not (isinstance(func.value, cst.Name) and func.value.value == "self")
        ):
            # `self.expand(x)` calls the module's own layer, not `Tensor.expand`.
            if (
                positional
                and self.ctx.is_tensor(positional[0])
                and not self.ctx.is_tensor(func.value)
            ):
                # `d2l.reshape(x, (-1, n))`: a namespace's function handed the tensor
                # first, as `torch.reshape(x, shape)`; the sizes follow it.
                positional = positional[1:]
            self._check_sizes([*positional, *keywords])
        elif isinstance(func, cst.Attribute) and func.attr.value == "new_full":
            sized = self._check_sizes([*positional[:1], *keywords])
            if not sized and self.ctx.is_tensor(func.value):
                self._check_fill(node, positional, "new_full")

    def _check_linspace(self, node: cst.Call, positional: list[cst.BaseExpression]) -> None:
        """`torch.linspace(x.min(), x.max(), n)`: both ends and the count are Python
        numbers, so a 0-dim tensor of the device there is read on every call. As for a
        fill value, only a value the file knows is a device tensor: a parameter handed in
        (`torch.linspace(0.0, span, n)`) is taken for a number."""
        keywords = [
            a.value for a in node.args if a.keyword and a.keyword.value in _LINSPACE_KEYWORDS
        ]
        for value in (*positional[:3], *keywords):
            if (
                not self._handed_in(value)
                and not self.ctx.type_tested_host(value)
                and self.ctx.kind(value) is Kind.TENSOR
                and self.ctx.is_tensor(value)
            ):
                self.report(value, self.message.format(use="a `torch.linspace()` bound"))
                return  # one call, one cause

    def _element_of_a_named_schedule(self, value: cst.BaseExpression) -> bool:
        """`sigmas[index]` where `sigmas` is taken for tensors by its name alone (a
        schedule: `sigmas`, `timesteps`): the name says what it holds, not where it
        lives, and a sampler's schedule is as often a host array or tensor."""
        return type(value) is cst.Subscript and self.ctx.kind(value.value) is Kind.ITERABLE

    def _check_fill(self, node: cst.Call, positional: list[cst.BaseExpression], name: str) -> None:
        """`torch.full((b, 1, 1, 1), alphas[index], device=d)` with `alphas` a schedule on
        the device: the fill value is a Scalar, so a 0-dim tensor there is read as a
        Python number on every call, as `.item()` would. Only a value the file knows is a
        device tensor, not a parameter taken for one by where it is (most fill values are
        numbers), nor a name a failed tensor test shows is none (the `else` of `if
        is_tensor(weight):`), nor an element of a schedule known only by its name."""
        fill = positional[1] if len(positional) > 1 else None
        if fill is None:
            argument = keyword_argument(node, "fill_value")
            fill = None if argument is None else argument.value
        if (
            fill is not None
            and not self._handed_in(fill)
            and not self._element_of_a_named_schedule(fill)
            and not self.ctx.type_tested_host(fill)
            and self.ctx.kind(fill) is Kind.TENSOR
            and self.ctx.is_tensor(fill)
        ):
            self.report(fill, self.message.format(use=f"the fill value of `{name}()`"))

    def _check_scalar_keywords(self, node: cst.Call, qualified: str | None) -> None:
        """`torch.add(self.atol, m, alpha=self.rtol)`, `x.add_(y, alpha=lr)`,
        `torch.addcmul(a, b, c, value=w)`: a Scalar parameter of a torch operation given a
        tensor of the device, which the call reads as a Python number. Only a value the
        file knows is a device tensor (a buffer or result on the device), not one of
        unknown kind: most such arguments are Python numbers."""
        func = node.func
        if type(func) is cst.Attribute:
            name = func.attr.value
        elif type(func) is cst.Name and qualified is not None:
            name = func.value  # `from torch import add`
        else:
            return
        keywords = _SCALAR_KEYWORDS.get(name)
        if keywords is None:
            return
        if not any(a.keyword is not None and a.keyword.value in keywords for a in node.args):
            return
        if qualified is not None:
            if qualified != f"torch.{name}":
                return  # `torch.nn.functional.*`, another library: other signatures
        elif type(func) is not cst.Attribute or not self.ctx.is_tensor(func.value):
            return  # a tensor method: `x.add_(y, alpha=...)`
        for arg in node.args:
            if (
                arg.keyword is not None
                and arg.keyword.value in keywords
                and not self._handed_in(arg.value)
                and self.ctx.kind(arg.value) is Kind.TENSOR
                and self.ctx.is_tensor(arg.value)
            ):
                use = f"the Scalar `{arg.keyword.value}=` of `{name}()`"
                self.report(arg.value, self.message.format(use=use))
                return  # one call, one cause

    def _check_normal_scalars(self, node: cst.Call) -> None:
        """`torch.normal(mean, std, size)`: given a size, only the overload of two Python
        floats exists, so a tensor of the device as `mean` or `std` is read as a number
        (`torch.normal(torch.tensor(0.0, device=d), torch.tensor(1.0, device=d), (n,))`).
        Without a size, tensors there are the elementwise overloads, on the device."""
        bound = bind(node, _NORMAL_SIGNATURE)
        if bound is None or "size" not in bound:
            return
        for name in ("mean", "std"):
            value = bound.get(name)
            if (
                value is not None
                and not self._handed_in(value)
                and self.ctx.kind(value) is Kind.TENSOR
                and self.ctx.is_tensor(value)
            ):
                use = f"the Python float `{name}` of `torch.normal(mean, std, size)`"
                self.report(value, self.message.format(use=use))
                return  # one call, one cause

    def _check_one_hot(self, node: cst.Call) -> None:
        """`F.one_hot(labels)`, or `num_classes=n` where `n` may be -1 (its default, or a
        value the function gives it on some path: `if num_classes is None: num_classes =
        -1`): the class count is `labels.max() + 1`, read on the host to size the output.
        A given count (`num_classes=10`, a parameter with another default) reads nothing."""
        bound = bind(node, _ONE_HOT_SIGNATURE)
        if bound is None:
            return
        labels = bound.get("tensor")
        # `one_hot` takes a tensor only: one of unknown kind (a parameter) is a tensor, and
        # in code that runs every step, the step's, as for XLA204's ops.
        if labels is None or self.ctx.kind(labels) in (Kind.HOST, Kind.MODULE):
            return
        count = bound.get("num_classes")
        if count is None or self._may_be_minus_one(count):
            use = "`one_hot()`'s class count (its largest value, with no `num_classes`)"
            self.report(labels, self.message.format(use=use))

    def _may_be_minus_one(self, value: cst.BaseExpression) -> bool:
        if _minus_one(value):
            return True
        function = self.ctx.function_node
        return (
            type(value) is cst.Name
            and function is not None
            and any(_minus_one(v) for v in possible_values(function, value.value))
        )

    def _handed_in(self, value: cst.BaseExpression) -> bool:
        """A parameter of the function, never rebound in it (`alpha=lr` in `step(params,
        grads, lr)`): taken for a tensor only by where it is, most often a Python number
        (a learning rate, a weight)."""
        function = self.ctx.function_node
        return (
            type(value) is cst.Name
            and function is not None
            and parameter(function, value.value) is not None
            and value.value not in bound_names(function)
        )

    def _check_split_points(self, node: cst.Call, qualified: str) -> None:
        """`np.split(forces, indices_or_sections=batch.ptr[1:])`: numpy reads each split
        point of a device tensor on the host."""
        points = (bind(node, _SPLIT_SIGNATURE) or {}).get("indices_or_sections")
        if points is not None and self.ctx.is_tensor(points):
            use = f"the split points of `np.{qualified.rsplit('.', 1)[-1]}()`"
            self.report(points, self.message.format(use=use))

    def _check_data(self, data: cst.BaseExpression) -> None:
        """`torch.tensor([R, x])`: each tensor element is read as a Python number; so is
        each element of a list the function appends device tensors to."""
        if type(data) is cst.Name and data.value in self._device_lists[-1]:
            use = "an element of `torch.tensor()` data (a list of device tensors)"
            self.report(data, self.message.format(use=use))
            return
        if type(data) is cst.ListComp and self.ctx.is_tensor(data.elt):
            # `torch.as_tensor([torch.mean(r) for r in scores], device=d)`: every element
            # the comprehension makes is a device tensor, read as a Python number.
            use = "an element of `torch.tensor()` data (a list of device tensors)"
            self.report(data.elt, self.message.format(use=use))
            return
        if isinstance(data, cst.List | cst.Tuple):
            for element in data.elements:
                if isinstance(element, cst.Element):
                    if isinstance(element.value, cst.List | cst.Tuple):
                        self._check_data(element.value)
                    elif self.ctx.is_tensor(element.value):
                        use = "an element of `torch.tensor()` data"
                        self.report(element.value, self.message.format(use=use))

    def _check_distribution(
        self, node: cst.Call, qualified: str, positional: list[cst.BaseExpression]
    ) -> None:
        """`Categorical(probs)`: a distribution class (not a module function) built from
        device tensors with its arguments validated."""
        if not qualified.rsplit(".", 1)[-1][:1].isupper():
            return
        validate = keyword_argument(node, "validate_args")
        inside = _canonical_distribution(qualified) in _VALIDATED_INSIDE
        if validate is not None and not _is_true(validate.value) and not inside:
            return  # `validate_args=False`, or a setting whose value the file does not show
        values = [
            *positional,
            *(a.value for a in node.args if a.keyword is not None and a is not validate),
        ]
        if any(self.ctx.is_tensor(value) for value in values):
            use = "the parameter of a validated distribution"
            hint = _INSIDE_HINT if inside and validate is not None else _DISTRIBUTION_HINT
            self.report(node, self.message.format(use=use), hint=hint)

    def _check_sizes(self, sizes: list[cst.BaseExpression], use: str = "a size") -> bool:
        """Report the first size that is a tensor: the sizes of one call (`torch.zeros(n,
        m)`) are read for one call, one cause. Whether one was reported."""
        for size in sizes:
            if isinstance(size, cst.Tuple | cst.List):
                elements = [e.value for e in size.elements if isinstance(e, cst.Element)]
                if self._check_sizes(elements, use):
                    return True
            elif self.ctx.is_tensor(size):
                self.report(size, self.message.format(use=use))
                return True
        return False


def _canonical_distribution(qualified: str) -> str:
    """`torch.distributions.multinomial.Multinomial` as `torch.distributions.Multinomial`."""
    parts = qualified.split(".")
    if len(parts) == 4 and parts[:2] == ["torch", "distributions"]:
        return f"torch.distributions.{parts[3]}"
    return qualified


def _is_true(value: cst.BaseExpression) -> bool:
    """The literal `True`: `validate_args=True` turns the checks on whatever the default."""
    return type(value) is cst.Name and value.value == "True"


def _element_indexed_by_tuple(node: cst.Subscript) -> bool:
    """`candidates_list[i][batch_indices, labels]`: an element taken from a container,
    indexed by several tensors at once. No list takes a tuple index, so the element is an
    array or a tensor (advanced indexing on the device), whatever the list it came from."""
    return isinstance(node.value, cst.Subscript) and len(node.slice) > 1


def _minus_one(value: cst.BaseExpression) -> bool:
    """The literal `-1`."""
    return (
        type(value) is cst.UnaryOperation
        and isinstance(value.operator, cst.Minus)
        and type(value.expression) is cst.Integer
        and value.expression.evaluated_value == 1
    )
