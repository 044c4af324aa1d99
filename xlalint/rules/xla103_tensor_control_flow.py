from __future__ import annotations

import re
from collections.abc import Iterable

import libcst as cst

from xlalint import lint_memo
from xlalint.analysis.clipping import clipping_test
from xlalint.analysis.guards import ends_in
from xlalint.analysis.host_reads import ReadRuns
from xlalint.analysis.hotness import FunctionKey
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.masks import Evidence
from xlalint.analysis.stacked_values import stacked_names
from xlalint.analysis.tensors import TENSOR_ANNOTATIONS, has_tensor_parameter
from xlalint.context import FileContext, Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, PendingReport
from xlalint.rules._helper_calls import HelperReadRule
from xlalint.walk import (
    NOT_OWN,
    binding_counts,
    descendants,
    last_name,
    node_types,
    self_attribute,
    target_names,
)

_MIN_MAX = frozenset({"min", "max"})
# Builtins that take the truth of each item they iterate.
_ANY_ALL = frozenset({"any", "all"})
_HEAP_PUSHES = frozenset({"heapq.heappush", "heapq.heappushpop", "heapq.heapreplace"})
_HEAP_SELECTIONS = frozenset({"heapq.nlargest", "heapq.nsmallest"})
# Nodes whose `test` Python takes the truth value of, by how the message names them.
_TESTED: dict[type[cst.CSTNode], str] = {
    cst.If: "`if`",
    cst.While: "`while`",
    cst.Assert: "`assert`",
    cst.IfExp: "A conditional expression",
    cst.CompIf: "A comprehension `if`",
}
_TESTED_TYPES = tuple(_TESTED)
# A comparison's complement, by its operator: the same truth value negated.
_COMPLEMENTS: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    cst.LessThan: cst.GreaterThanEqual,
    cst.LessThanEqual: cst.GreaterThan,
    cst.NotEqual: cst.Equal,
    cst.IsNot: cst.Is,
    cst.NotIn: cst.In,
}
_LOOP_TYPES = (cst.For, cst.While)
# Integrators of differential equations, which call the dynamics they are handed (a
# function, an SDE object) on each of their own steps: torchdiffeq's `odeint` and
# `odeint_adjoint`, torchsde's `sdeint`.
_INTEGRATOR = re.compile(r"^_*(ode|sde)int\w*$")
# Definitions are kept, their bodies skipped (`NOT_OWN` drops the definitions too).
_NOT_OWN_BODIES = NOT_OWN - {cst.FunctionDef}
# Calls that solve or integrate with a function the caller defines and hands them
# (scipy's `solve_ivp(lambda t, x: ...)`, a solver object's `solve`/`integrate`): not
# `torch.linalg.solve(A, b)`, one linear solve handed no function.
_SOLVER = re.compile(r"^_*((ode|sde)int\w*|solve\w*|integrate\w*)$")
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
# Names of the values `Tensor.__contains__` is asked about: ids and indices.
_ID_NAME = re.compile(r"^(?:\w+_)?(?:id|idx|index|token)$", re.IGNORECASE)
# Operations that combine two arrays element for element, a mask with a tensor included.
_COMBINING = (*_ARITHMETIC, cst.BitAnd, cst.BitOr, cst.BitXor)
# Reductions of a mask to one truth value.
_MASK_REDUCTIONS = frozenset({"any", "all"})
# Parents under which a node's truth may be taken (`bool(x)` is checked from the call).
_TRUTH_PARENTS = frozenset({*_TESTED_TYPES, cst.BooleanOperation, cst.UnaryOperation})
# Comparisons of tensors that give a bool tensor, which torch.where takes as its condition.
_TENSOR_COMPARISONS = node_types(
    cst.LessThan,
    cst.LessThanEqual,
    cst.GreaterThan,
    cst.GreaterThanEqual,
    cst.Equal,
    cst.NotEqual,
)


class TensorControlFlow(HelperReadRule):
    """
    ## What it does
    Flags Python control flow that needs a tensor's value, in code that runs every step (also a
    function that another module of the project calls every step, such as a losses' shared input
    check called at the start of their `forward`, and a function registered as a tensor's gradient
    hook, `loss.register_hook(raise_if_nan)`, which runs on every backward): the test of an `if`,
    `while`, `assert`, conditional expression or comprehension `if`; the operands of `and`, `or` and
    `not`; `bool(t)`; the builtins `min()`/`max()` on tensors; `any()`/`all()` of tensors, which
    take the truth of each (`any(torch.isnan(l) for l in (gen_loss, disc_loss))`, `all([a > 0, b >
    0])`); and a device tensor's membership test in a list or tuple (`seq[-1] not in self.som_ids`,
    with the ids a display, a list comprehension or `.tolist()` of a tensor), which compares it with
    each element and takes the truth of each comparison (not in a set or a dict, looked up by hash,
    nor in a container the file shows nothing of, such as an optimizer's `p in self.state`); and
    a value's membership test in a device tensor (`eos_token_id in ids`, `ignore_index not in
    labels`: `Tensor.__contains__` is `(ids == v).any()`, read on the host as a Python bool
    wherever it goes, an `or` chain of them bound to a name included), where the value is
    one a tensor can hold: a number, a tensor, a name that says an id or index; not a key
    (`"labels" in batch`, `self.mask_key in info`, `src in emb`), which looks up a mapping
    the code only presumes a tensor (a `forward`'s dict parameter, a dict of embeddings). Tests
    on shapes, dtypes, devices, `is None`, `isinstance`, `len()` and Python numbers are not flagged,
    nor an equality test with None (`module.weight != None`, or with a local bound only to
    None: a tensor hands the comparison back to Python, which compares identities), nor
    one with a string literal (`mode == "train"`, whatever `mode` was unpacked from: a
    tensor refuses the string, and Python compares identities), nor the position of a loader
    among a combined loader's unpacked beside a batch (`batch, _, dataloader_idx =
    batch_packed`: a Python int), nor a name a star spreads a Python value over in a tuple
    assignment (`grad, lr, beta1, beta2 = p.grad, group["lr"], *group["betas"]`: each name
    takes its own value's kind, not the tuple's),
    nor on any other metadata `torch.Tensor` keeps (`is_nested`, `is_sparse`, `layout`,
    `requires_grad`, `is_inference()`, `is_complex()`: layout, storage and autograd flags known on
    the host), nor on a field torch's Tensor lacks of a value the code declares a tensor
    (`input.qtype != self.qtype` with `input: torch.Tensor`: a tensor subclass's Python attribute),
    nor a per-step function's parameter that every call of the module hands a Python literal or the
    caller's own parameter with a literal default (`forward_only=forward_only` from
    `forward_only=False`, then `assert forward_only`), nor a per-step function's parameter that the
    function compares with a string (`step(self, batch, stage)` testing `stage == "train"`, or
    `"train" in stage`): a stage's name, not a tensor (a key test of a parameter the function also
    looks the key up in, `"labels" in inputs` with `inputs["labels"]`, is a batch dict's, whose
    entries stay the step's tensors); nor one whose name says it counts steps or iterations
    (`forward(self, iters, y)` testing `(iters + 1) % self.skip_update == 0`, `n_iters`,
    `global_step`): the trainer's Python counter; nor one named as a mode switch, as
    `training` is (`forward(self, img, inference)` testing `if not inference:`, `train`,
    `test_mode`, `mode`): the caller's Python flag. A slice of a schedule
    (`self.ddim_timesteps[:subset_end]`) is a shorter schedule, not one of its elements: its
    length (`timesteps.shape[0]`) and the step positions counted from it are Python ints.
    Hand-written gradient clipping (`if clip_coef < 1:`) is left to XLA105. An `and`/`or`
    chain of tensor tests (`if torch.isinf(loss) or torch.isnan(loss):`) is one condition, whose fix
    folds the tests into one device expression: it is reported once, at its first tensor operand. A
    device tensor run through `if not isinstance(v, torch.Tensor): v = torch.tensor(v)` (a guard for
    old APIs that returned floats) is still the device tensor after it: the branch cannot run for
    it. The same guard on a value of unknown kind (a helper's parameter) builds a host tensor, and
    is left alone.

    Per-step code includes the batch and step events of callback classes (a class whose
    name ends `Callback`, with methods named `on_batch_end`, `on_train_step_end`,
    `on_step_begin` and the like, as Keras, Hugging Face, poutyne and most trainer
    libraries name them, or without `on_` as Composer does: `batch_end`,
    `eval_batch_end`): a NaN check there (`if torch.isnan(loss).any(): raise ...`) reads
    the loss every batch. Epoch and run events (`on_epoch_end`, `on_train_end`,
    `fit_end`), and such names on a class that is no callback, are not per step. Nor is a
    torchmetrics metric's `compute`, which runs once after the batch loop that calls its
    `update`: a loop there over the metric's own buckets (`for i in range(self.n_buckets):
    if self.bucket_totals[i] == 0: continue`) reads the state once per evaluation. Nor is a
    check of its input (an `assert`, an `if` that raises) in a function that runs a loop of its
    own or a whole solve (torchdiffeq's `odeint(dynamics_func, y_init, time_grid)`, torchsde's
    `sdeint`, a function it defines handed to `solve_ivp`): it runs once per run, before the
    solver's steps, not per step (`assert time_grid[0] == 1.0` in flow_matching's
    `compute_likelihood`). The
    `log_prob` of a subclass of a `torch.distributions` distribution is the likelihood
    loss of every step that fits one: its support check (`valid = reduce(
    torch.logical_or, checks)`, a fold with a torch operation, is a tensor; then `if not
    valid.all(): raise ...`, on by default) reads a device bool every step.

    A module's buffers and registered parameters are device tensors wherever the class
    reads them: `self.register_buffer("inited", torch.Tensor([False]))` (or with `tensor=`,
    rebuilt as `torch.zeros(1).type_as(self.inited)`) makes `if self.inited:` in a method
    that `forward` calls a read on every step (a codebook's k-means guard); a buffer
    registered as `None` is not one. A torchmetrics state with a tensor default
    (`self.add_state("count", default=torch.tensor(0))`) is one too, moved with the
    metric; a list state (`default=[]`) is a Python list. `torch.is_nonzero(t)` is
    `bool(t)` spelled as a torch call: `self.sum.div(self.count) if
    torch.is_nonzero(self.count) else 0` in a metric's `update` reads the state every
    step. `torch.allclose(a, b)` (or `a.allclose(b)`) of device tensors is
    `bool(torch.isclose(a, b).all())`: a Python bool read on the host, so `out["iptm"] if
    not torch.allclose(out["iptm"], zeros) else out["ptm"]` in `predict_step` reads the
    device every batch (`torch.where` keeps the choice on the device). So are the batch's
    tensors a framework hands a hook:
    in a fastai callback's batch events (`after_pred`, `after_batch`...), `self.pred`,
    `self.loss`, `self.y`, `self.xb`, `self.yb` (or `self.learn.pred`) are the learner's
    tensors for the current batch, unless the callback binds that attribute itself; and
    a parameter declared `dict[str, torch.Tensor]` holds a tensor under each key (`if
    (x["lengths"] < x["lengths"].max()).any():` in a step), and so does a dict the
    function builds and hands whole to a network as its keyword arguments (`input_kwargs =
    {k: v[i:j] for k, v in model_inputs.items()}`, then `model(**input_kwargs)`: `if
    input_kwargs["attention_mask"][j, 0] == 0:`), unless an entry is known to be on the
    host (`{"ids": ids.cpu()}`); one handed to any other call says nothing. Flags torch
    reports about itself (`torch._C._get_cudnn_enabled()`) are Python bools.

    A name tested in an `if` and again in its `elif` (`if ... and converged:`, then `elif
    not converged:`; compared: `if choice == 0:`, then `elif choice == 1:`), or in
    conditional expressions each in the `else` of the one before (`"#" if i == -1 else
    (DNA[i - 4] if i >= 4 else RNA[i])`), is one value read for one decision: reported
    once, at the first test. So is the same test, or its complement, in the next statement
    (`if probs[i] >= c and ...:`, then `if ... or probs[i] < c:`; `if converged:` twice):
    the value read again in a run, one cause (another comparison of the tensor, `choice ==
    0` then `choice > 1`, is a read of its own; so is a test after a `while` whose test
    reads the value every pass, and one after a statement that rebinds what it reads).

    Input checks read the data on every call with new data: an `assert` on tensors, or
    an `if` whose body raises, in a function that computes on tensors handed to it (a
    parameter annotated as a tensor) and runs no loop of its own, is reported whoever
    calls it (a metric's `_check_inputs(preds: Tensor, target: Tensor)` whose `update`
    is in another module; a loss's `assert (lengths > 1).all()`). Not such checks: one
    only `__init__` (or `setup`) calls here, one after the function's own loop (once per
    decode), one whose only callers here are handed only settings (numbers, flags,
    strings, a device) and build what they hand it (a noise schedule's
    `get_schedule(device, num_timesteps)` making `times` with `torch.linspace`, then
    checking it: once per schedule made), and tests that choose what to compute, which
    stay with their callers. Right of
    `isinstance(batch, DALIOutputs) and ...`, `batch` is that class's object: a property
    read of it (`batch.has_processed_signal`) is not taken for a tensor. A model a framework
    moves with `to_device(self.dist_model)` is still the model (its config's `eval_steps` is
    a number), and a parameter annotated with a class that is no model or loss
    (`stopping_criterion: StoppingCriterion`) is not taken for a loss by its name: what
    calling it returns is unknown (a Python bool there), while `criterion: nn.Module` or an
    unannotated `loss_fn` still gives a tensor. A value typed as a tensor or a mapping
    (`outputs: list[Tensor | dict[str, Tensor]]`) whose `keys()` the code takes is the
    mapping: no tensor has `keys()`, `index()` or `count()`, and what they give (`if
    outputs[0].keys() - known:`) is a host value.

    Search code keeps its candidates' tensors in records: a class of the module that
    declares a field as a tensor (`class Hypothesis(NamedTuple): score: torch.Tensor`, a
    dataclass, a union that admits a tensor) has that field taken for a tensor wherever
    the object is known to be one (`self` in its methods, parameters annotated with the
    class or a list of it, loops over those, lists a function fills with `Hypothesis(...)`).
    So `if hyp.yseq[-1] == eos:` is flagged, and so are `sorted(hyps, key=lambda h:
    h.score)`, `hyps.sort(key=...)` and `max(hyps, key=...)` on such a field: every
    comparison of two keys takes the truth of a tensor `<`. The same holds for lists a
    function fills with tensors by `append` (`candidates.append((score + top[k], seq))`,
    then `candidates.sort(key=lambda c: c[0])`, `sorted(scores)`, `max(candidates)`, a
    loop `for score, seq in beams` over them; dicts appended as literals, `{"score": s,
    "yseq": seq}`, with `key=lambda h: h["score"]` or `h["score"]` in a loop over them),
    and for `heapq.heappush(heap, (score,
    seq))`/`heapq.nlargest(k, xs, key=...)` on tensor scores. Fields annotated as Python
    numbers or lists, unannotated attributes, lists of values already read to the host
    (`.tolist()`, `.item()`), and keys computed on the host (`key=lambda h: len(h.yseq)`)
    are not flagged.

    What a helper of the module computes from its parameters by arithmetic, comparisons,
    `min`/`max`/`abs` and tensor maths (`def get_ancestral_step(sigma_from, sigma_to):
    ...; return sigma_down, sigma_up`) is a tensor where the call hands one of those
    parameters a tensor (`sigma_down, sigma_up = get_ancestral_step(sigmas[i], sigmas[i +
    1])` with a device schedule), at that position of the returned tuple: `if sigma_down
    == 0:` reads the device every sampling step. The same helper given Python numbers, and
    results that are shapes, other calls' results or numbers in every `return`, are not
    tensors. Its whole result, computed so (torch's functions of them included:
    `all_rows_have_eos_id(t, eos_id)` returning `torch.any(t == eos_id, dim=-1).all()`),
    is a tensor where it is tested unbound too: `if all_rows_have_eos_id(ids, eos):
    break` reads the device every token. So is the result of a function of another project
    module that every `return` of which computes on the device from what it is handed
    (`assert not misc.is_nan(error_estimate)` with `is_nan(t)` returning
    `torch.any(torch.isnan(t))`; `error_ratio = hairer_norm(error_scaled)`, then `if
    error_ratio <= 1:`), handed a device tensor; not one that hands back a number
    (`.item()`), a host copy in some `return`, or a generator's values.
    So is a property declared to return a tensor (`@property def real_position_ids(self) ->
    torch.Tensor`) of an object another project module builds once at its top level from
    a class it defines (`sequence_parallel = SequenceParallel()`), imported by name (also
    through a package's re-export): `position_ids = sequence_parallel.real_position_ids`,
    then `if position_ids is not None and position_ids.min() == -1:`, reads the device
    every step; a property declared a Python number or not annotated, or a name that module
    binds more than once, is not.

    An attribute that holds an instance of a module class of the file (built there, or
    a parameter annotated with the class: `environment: BaseEnvironment`, then
    `self.environment = environment`) runs that class's `forward` when called: where it
    is annotated to return tensors (`-> tuple[Float[''], Float['...'], Bool['']]`), the
    values unpacked from the call are device tensors, and `if done:` on every
    environment step reads one.

    A helper's tests of what it is handed are judged by its calls: a test of a parameter
    of unknown kind, or of a value computed from one on the device (`d2_square = d1**2 -
    g1 * g2`, `d_norm = d.abs().max()`, `abs(gtd_new) <= -c2 * gtd`), reads the device
    where a per-step call hands that parameter a device tensor, directly or through the
    parameters of helpers in between (an optimizer's `step` handing `gtd =
    flat_grad.dot(d)` to `_strong_wolfe`, which hands it on to `_cubic_interpolate`). A
    parameter the helper casts to a tensor first (`den = cast_tensor(den)`, `x =
    torch.as_tensor(x)`, a function of any module named `as_tensor`, `to_tensor` or
    `cast_tensor`, given no device) is still what it is handed: a cast hands a tensor back
    as it is, so `assert (den >= 0).all()` in `safe_div` reads the device divisor a
    rollout step hands it. It is reported at the test, once for all callers. A helper
    handed only host values (a Python number read once, `torch.from_numpy(...)`), or a
    device tensor only by a call
    that runs once (after the batch loop, in `__init__`), and a comparison with a string
    or `None`, are not.

    A function's own code can show a value of unknown kind to be a tensor: a parameter it
    never rebinds and calls a method only tensors have on (`boxes.new_empty(n, 4)`,
    `labels.masked_fill(m, 0)`, `err.unsqueeze(0)`) is handed a tensor, so `if (wh <=
    0).any():` with `wh` computed from `boxes`, or `if present.sum() == 0:` with `present =
    labels != ignore`, reads the device where the helper runs every step (an int handed to
    a torch operation as a count, `torch.topk(x, top_k)`, is not such a use). What it collects
    into a list it hands to `torch.cat`/`torch.stack` (`eval_times = [t]`,
    `eval_times.append(t.reshape(t.shape))`, directly or through tensor-keeping methods) is
    one, so an adaptive solver's `while t < T:` and `if t + dt > T:` on times sliced from a
    parameter (`t, T = t_span[:1], t_span[-1]`) read the device on every pass, whoever calls
    the solver. So is `m.any()` of a mask made by tensor operations (`m = ~(err <=
    tol).bool()`), also kept in a dict under a literal key (`self.params["selector"] =
    peaks > 0.0`, then `if self.params["selector"].any():`), and of a mask of values of
    unknown kind, bound once, that the function combines with a device tensor by arithmetic
    or a bitwise operation (`penalty_mask = cvalue >= 0`, then `if penalty_mask.any():` and
    `torch.mean(~penalty_mask * cbarrier)` with `cbarrier = torch.clamp(...)`): PyTorch
    refuses to combine a host array or tensor with a device tensor, and a Python bool has
    no `.any()`. A mask combined only with host values or values of unknown kind, or bound
    again, may be numpy's. So is an element of a device
    schedule walked as a list of its pairs
    (`for sigma, sigma_next in list(zip(sigmas[:-1], sigmas[1:])):`, or a name bound to
    that list), then `if sigma_next != 0:` every sampling step. Values known to be on the
    host (a grid built by `torch.linspace` without a
    device, numpy arrays, another array library's arrays: `if jnp.isnan(loss):` after
    `loss, grads = self.step_fn(params, x)` with `self.step_fn = jax.jit(...)`, `if
    out.max() > 10:` of a model handed `mx.array(batch)`; a batch of a plain `DataLoader`
    over indices, a `range`, a host `torch.arange(n)` or a dataset whose `__getitem__`
    hands back its index, never moved: `if index_batch[-1] + 1 != len(inputs):`), lists
    joined by numpy, counters
    that never reach a torch join, and a comprehension's own variable that shadows a joined
    name are not. A list the function
    fills with `append` is a host object whose elements need not be: `torch.stack(losses)`
    of values a helper computed (`losses.append(0.5 * utils.masked_mean(...))`) is a
    tensor, so `if torch.isnan(torch.mean(torch.stack(losses))).any(): raise` in an update
    reads the device; stacked only when every append hands a host value (`float(...)`,
    `torch.tensor(reward)` without a device) is the result on the host. Nor is a test of
    a helper's parameter that every call of the helper in the module hands a host copy
    (`cost = cost.cpu()` then `cost = sanitize(cost)`, `wrap(frac, pbc.tolist())`, or
    `loss = self.fit_batch(batch)` then `self.update_average(loss, avg)` where every
    `fit_batch` of the module ends `return loss.detach().cpu()`; a row of a host copy,
    `keep[i]` of `keep = flags.cpu()`; a tensor a factory makes without a device, handed to
    a private helper (`_update`); a name
    each branch of an `if`/`else` before the call binds to one of these, `mask =
    started.cpu()` or `mask = torch.ones(n, dtype=torch.bool)`), whatever its annotation
    says: the copy is XLA102's finding, and the helper's tests read host values. Nor is a
    test in a branch that runs only where a predicate of the
    module holds that returns nothing but a CUDA test of what it is handed (`if
    self._fast_path_supported(outputs):` with `return bool(outputs["logits"].is_cuda)`):
    no tensor of an XLA host is a CUDA tensor. Nor is a test in a branch that runs only
    where a device was found to be the CPU (`if coords.device.type == "cpu":`, or a local
    flag built from that test and only refined after: `use_direct = use_direct and ...`):
    its tensors are host tensors. A tensor's metadata method named without a
    call (`value.size`, `value.dim`: a bound method, not `value.size()`) is a Python
    object, not a tensor. A math method only tensors have (`.log()`, `.exp()`, `.sqrt()`,
    `.sigmoid()` without arguments; `.clamp(...)`, `.softmax(dim)`), called on a value of
    unknown kind, makes a tensor: numbers, numpy arrays and pandas objects lack those
    methods, so `noise_std = sigma_1 * (1 - r).clamp(min=0).sqrt()` with `sigma_1 =
    sde.sigma_t(t1)`, then `if noise_std > 0:` in a solver's `step`, reads the device every
    step; the same methods on a value known to be on the host (`torch.tensor(edges).log()`)
    give a host value, and a `log` given arguments (`run.log({"loss": v})`) is a logger's.
    So do a selection only tensors make, given a count (`values.topk(k)`, `topk(k, dim=-1)`:
    `best_values, elite_idx = values.topk(self.elite_num)` of what an objective handed in
    returns, then `if best_values[0] > best_value:` on every planner iteration), and the
    tests `.isnan()`, `.isinf()`, `.isfinite()` without arguments (numpy spells them
    `np.isnan(a)`); a search index's `topk(query, k)` and a checker's `isnan(x)` are some
    other object's. A function handed in by a parameter whose default is a function of the
    module declared to return a tensor (`decode_n_tokens(..., decode_one_token=
    decode_one_token_ar)` with `def decode_one_token_ar(...) -> torch.Tensor`) returns one:
    the token it samples, tested for the end token every pass (`if cur_token[0, 0, -1] ==
    eos_id: break`), is read on the host each time; a default declared to return anything
    else, or none, says nothing.

    A loop over one tensor's rows, however spelled (`for p in x.unbind(dim=0)`, `for i in
    reversed(indices[:-1])`), runs its passes where its function runs, as `for row in x`
    does: a per-channel helper is not made per step by it. A function documented to run
    once, its result cached ("Make sure to cache the result"), and the private helpers
    only such functions call, are preprocessing: their loops (a `while True:` scanning
    time stamps) are no step loops, and their tests are not per call. A module-level
    function pytest collects (`def test():`, `test_equivariance`) that this file never
    calls runs once per test run: one `loss.backward()` in it checks that gradients flow,
    and does not make its checks (`assert error.abs().max() < 1e-10`) per step (a
    `test_step` method, a framework's per-batch hook, still is). An object that calls
    itself (`self("alphas_cumprod", t, shape)` in a schedule's `q_sample`) runs the
    `__call__` its class defines or inherits as often as that method runs: a test of the
    device timestep there (`if (t != t_floor).any():`) is read on every lookup of a
    per-step caller (an nn.Module's `self(x)`, with no `__call__` of its own, runs its
    `forward`, and makes no other class's `__call__` per step).

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Python can only
    branch on a concrete `True` or `False`, so taking a tensor's truth value forces the
    pending graph to compile and execute right there, and copies the result to the host:
    one extra execution and one device-to-host transfer per step. When the branch changes
    which operations are traced, each outcome is a different graph and compiles separately.

    ## Example
    ```python
    def forward(self, x):
        h = self.body(x)
        scale = 0.5 if h.abs().max() > 10 else 1.0
        if h.isnan().any():
            h = torch.zeros_like(h)
        return h * scale
    ```

    ## Use instead
    Compute both outcomes on the device and select with `torch.where`:
    ```python
    def forward(self, x):
        h = self.body(x)
        scale = torch.where(h.abs().max() > 10, 0.5, 1.0)
        h = torch.where(h.isnan().any(), torch.zeros_like(h), h)
        return h * scale
    ```
    Checks that only guard against bugs (`assert`) can move out of the step, or be read
    once in `xm.add_step_closure(...)`.

    ## Fix safety
    Unsafe, and only for a conditional expression `a if cond else b` whose `cond` is a
    tensor comparison (`<`, `<=`, `>`, `>=`, `==`, `!=`, not against `None` or a string)
    and whose branches are tensors or numbers: it becomes `torch.where(cond, a, b)`. Both
    branches are then evaluated (a branch that fails or has side effects changes
    behaviour), and the result is a tensor even where it was a Python number. Other forms
    are reported without a fix.

    ## Runtime evidence
    5 steps on the XLA CPU device (case `ternary_on_tensor`): `if x.sum() > 0:` each step costs
    {ternary_on_tensor.before.uncached_compiles} uncached and
    {ternary_on_tensor.before.cached_compiles} cached compiles,
    {ternary_on_tensor.before.executions} executions and
    {ternary_on_tensor.before.device_to_host} device-to-host transfers; the `torch.where`
    version costs {ternary_on_tensor.after.uncached_compiles} uncached and
    {ternary_on_tensor.after.cached_compiles} cached compiles and
    {ternary_on_tensor.after.executions} executions, and the results are
    {ternary_on_tensor.outputs}.
    Sorting 8 records by a 0-dim device score (`sorted(hyps, key=lambda h: h.score)`,
    measured by hand with `PJRT_DEVICE=CPU`, torch_xla 2.9.0) cost 16 graph executions
    and 15 device-to-host transfers, one per comparison; `torch.stack` of the scores and
    `topk` on the device cost none until the step's barrier.
    """

    code = "XLA103"
    name = "tensor-control-flow"
    message = "{construct} reads a tensor's value on the host, forcing a graph execution"
    hint = "Select on the device with torch.where(cond, a, b), or test once after the loop"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    hot_only = True
    needs_torch = True
    uses = ("masks",)
    triggers = (
        "if", "while", "assert", "and", "or", "not", "bool", "min", "max", "sort", "heap",
        "allclose",
    )  # fmt: skip

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._chains: set[int] = set()  # ids of `and`/`or` chains reported already
        self._joined: dict[int, frozenset[str]] = {}  # id(function) -> stacked_names
        self._looping: dict[int, bool] = {}  # id(function) -> `_runs_a_loop`
        self._solving: dict[int, bool] = {}  # id(function) -> `_runs_a_solve`
        # (id of the first `if` of an if/elif chain, name) for names its tests read.
        self._chain_names: set[tuple[int, str]] = set()
        # One truth value tested in a run of statements (`if probs[i] >= c and ...:`, then
        # `if ... or probs[i] < c:`): one read, one cause (`host_reads.ReadRuns`).
        self._runs = ReadRuns()
        self._statements: dict[int, cst.CSTNode] = {}  # id(test) -> the statement holding it
        # Tests of a helper's parameters (or values computed from them) of unknown kind,
        # with the helper, those parameters and the `and`/`or` chain they sit in: reported
        # once the walk is over where some call hands one of them a device tensor.
        self._pending: list[tuple[PendingReport, FunctionKey, frozenset[str], int | None]] = []

    # Every expression kind that can hold a tensor is checked for being truth-tested. The
    # check looks at the node's parents, so the `while` test is seen where it runs: in the
    # loop, every iteration.
    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._check(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check(node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        self._check(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._check(node)
        if self._tests_membership_on_host(node):
            self.report(node, self.message.format(construct="`in`"))
        elif self._tests_membership_in_a_tensor(node):
            chain = self._boolean_chain()
            if chain is not None:
                if id(chain) in self._chains:
                    return  # `a in ids or b in ids`: one condition, reported once
                self._chains.add(id(chain))
            self.report(node, self.message.format(construct="`in`"))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.note_call(node)
        self._note_forwarded(node)
        self._check(node)
        func = node.func
        if (
            type(func) is cst.Name
            and func.value == "bool"
            and len(node.args) == 1
            and node.args[0].keyword is None
            and not node.args[0].star
            and self.ctx.qualified(func) is None
        ):
            arg = node.args[0].value
            # `bool(a and b)`, `bool(not a)`: the operands are reported from below.
            looked_through = isinstance(arg, cst.BooleanOperation) or (
                isinstance(arg, cst.UnaryOperation) and isinstance(arg.operator, cst.Not)
            )
            if not looked_through and self.ctx.is_tensor(arg):
                self.report(arg, self.message.format(construct="`bool()`"))
        elif (
            len(node.args) == 1
            and node.args[0].keyword is None
            and not node.args[0].star
            and self.ctx.qualified(func) == "torch.is_nonzero"
            and self.ctx.is_tensor(node.args[0].value)
        ):
            # `torch.is_nonzero(t)` is `bool(t)` spelled as a torch call: the truth of a
            # one-element tensor, read on the host (its result is a Python bool).
            self.report(node.args[0].value, self.message.format(construct="`torch.is_nonzero()`"))
        elif (construct := self._compares_on_host(node)) is not None:
            self.report(node, self.message.format(construct=construct))
        if (
            type(func) is cst.Name
            and func.value in _MIN_MAX
            and self.ctx.qualified(func) is None
            and any(self.ctx.is_tensor(arg.value) for arg in node.args if arg.keyword is None)
        ):
            # `max(a, b)` compares with `>`, `max(t)` iterates a tensor: both read values.
            self.report(node, self.message.format(construct=f"`{func.value}()`"))
        elif (construct := self._sorts_on_tensor_keys(node)) is not None:
            self.report(node, self.message.format(construct=construct))
        elif self._truth_of_each_tensor(node):
            self.report(node, self.message.format(construct=f"`{func.value}()`"))  # type: ignore[attr-defined]

    def _truth_of_each_tensor(self, node: cst.Call) -> bool:
        """`any(torch.isnan(l) for l in (g_loss, d_loss))`, `all([a > 0, b > 0])`,
        `any(t)`: the builtin takes the truth of each item it iterates, so items that are
        tensors (a comprehension's element, a literal's elements, the rows of a tensor)
        are each read on the host. `any(p.requires_grad for p in ...)` reads Python
        values."""
        func = node.func
        if (
            type(func) is not cst.Name
            or func.value not in _ANY_ALL  # type: ignore[attr-defined]
            or len(node.args) != 1
            or node.args[0].keyword is not None
            or node.args[0].star
            or self.ctx.qualified(func) is not None
        ):
            return False
        items = node.args[0].value
        if type(items) in (cst.GeneratorExp, cst.ListComp, cst.SetComp):
            return self.ctx.is_tensor(items.elt)  # type: ignore[attr-defined]
        if type(items) in (cst.List, cst.Tuple, cst.Set):
            return any(
                type(e) is cst.Element and self.ctx.is_tensor(e.value)
                for e in items.elements  # type: ignore[attr-defined]
            )
        return self.ctx.is_tensor(items)

    def _tests_membership_on_host(self, node: cst.Comparison) -> bool:
        """`token not in self.som_ids` with `token = seq[-1]` a device tensor and the
        ids a sequence (a list or tuple display, a list comprehension, or a name the file
        binds only to such values or to `.tolist()` of a tensor): `list.__contains__`
        takes the truth of `token == id` for each element until one holds, a read per
        element. Not a set or dict (a lookup by hash, no comparison of values), nor a container
        the file shows nothing of (`p in self.state`, parameters keyed by identity)."""
        if len(node.comparisons) != 1:
            return False
        operator = type(node.comparisons[0].operator)
        if operator is not cst.In and operator is not cst.NotIn:
            return False
        if not self.ctx.is_tensor(node.left):
            return False
        return _a_sequence(node.comparisons[0].comparator, self.ctx.module)

    def _tests_membership_in_a_tensor(self, node: cst.Comparison) -> bool:
        """`eos_token_id in ids`, `ignore_index not in labels` with `ids` a device tensor:
        `Tensor.__contains__` is `(ids == v).any()` read on the host as a Python bool,
        whatever then takes it. `Tensor.__contains__` takes only a number or a tensor, so
        the value must be one: a number literal, a tensor, or a name that says an id or an
        index (`eos_token_id`, `ignore_index`, `token`). A key (`"labels" in batch`,
        `self.mask_key in info`, `src_node_type in node_embeddings`) looks up a mapping
        the code only presumes a tensor (a `forward`'s parameter, a dict of embeddings).
        Nor a comparison the truth test of which is reported already (`_check`)."""
        if len(node.comparisons) != 1:
            return False
        if type(node.comparisons[0].operator) not in (cst.In, cst.NotIn):
            return False
        left, container = node.left, node.comparisons[0].comparator
        if not (_names_an_id(left) or self.ctx.is_tensor(left)):
            return False
        return self.ctx.is_tensor(container) and not self.ctx.is_tensor(node)

    def _compares_on_host(self, node: cst.Call) -> str | None:
        """`torch.allclose(a, b)`, `a.allclose(b)` of device tensors: the truth of
        `isclose(a, b).all()`, read on the host (its result is a Python bool), wherever the
        bool then goes (a ternary picking a score, an `if`)."""
        func = node.func
        if self.ctx.qualified(func) == "torch.allclose":
            operands = [a.value for a in node.args[:2] if a.keyword is None and not a.star]
            spelled = "`torch.allclose()`"
        elif (
            type(func) is cst.Attribute
            and func.attr.value == "allclose"
            and self.ctx.qualified(func) is None
            and node.args
        ):
            operands = [func.value]
            spelled = "`.allclose()`"
        else:
            return None
        return spelled if any(self.ctx.is_tensor(o) for o in operands) else None

    def _sorts_on_tensor_keys(self, node: cst.Call) -> str | None:
        """`sorted(hyps, key=lambda h: h.score)`, `hyps.sort(key=...)`, `max(hyps,
        key=...)` where the key is a tensor field of the records sorted: every comparison
        of two keys takes the truth of a tensor `<`."""
        func = node.func
        key = next((a.value for a in node.args if a.keyword and a.keyword.value == "key"), None)
        heap = self.ctx.qualified(func)
        if heap in _HEAP_PUSHES and len(node.args) == 2 and not node.args[1].keyword:
            # `heapq.heappush(heap, (score, seq))` compares the new item with others.
            item = node.args[1].value
            if isinstance(item, cst.Tuple) and item.elements:
                item = item.elements[0].value
            pushed = self.ctx.is_tensor(item)
            return f"`{heap.rsplit('.', 1)[-1]}()` of tensors" if pushed else None
        if heap in _HEAP_SELECTIONS and len(node.args) >= 2 and not node.args[1].keyword:
            iterable, name = node.args[1].value, f"`{heap.rsplit('.', 1)[-1]}()`"
        elif type(func) is cst.Name and func.value in (*_MIN_MAX, "sorted"):
            if self.ctx.qualified(func) is not None or not node.args or node.args[0].keyword:
                return None
            if key is None and func.value in _MIN_MAX and len(node.args) > 1:
                return None  # `max(a, b)`: its operands are checked above
            iterable, name = node.args[0].value, f"`{func.value}()`"
        elif type(func) is cst.Attribute and func.attr.value == "sort":
            iterable, name = func.value, "`sort()`"
        else:
            return None
        kinds = self.ctx.kinds
        if key is None:
            # `sorted(scores)` of a list filled with tensors, or of `(score, seq)` tuples:
            # the comparison starts with the tensors.
            compared = kinds.compared_kind(iterable)
            return f"{name} on tensors" if compared is Kind.TENSOR else None
        return f"{name} on tensor keys" if kinds.key_kind(iterable, key) is Kind.TENSOR else None

    # -- helpers --------------------------------------------------------------------------
    def _check(self, node: cst.BaseExpression) -> None:
        if type(self.ctx.parent) not in _TRUTH_PARENTS:
            return  # the common case, decided without walking the ancestors
        if not self.ctx.is_tensor(node) and not self._tensor_by_use(node):
            self._defer(node)
            return
        if self._tested_as_other_class(node):
            return
        construct = self._truth_context(node)
        if construct is None:
            return
        chain = self._boolean_chain()
        if chain is not None:
            if id(chain) in self._chains:
                return  # `if isinf(x) or isnan(x):` is one test, reported once
            self._chains.add(id(chain))
        tested = self._tested_name(node)
        if tested is not None and (head := self._if_chain_head(node)) is not None:
            key = (id(head), tested)
            if key in self._chain_names:
                # `if ... converged:` then `elif not converged:`; `a if i == -1 else (b if
                # i >= n else c)`: one value, one cause
                return
            self._chain_names.add(key)
        parent = self.ctx.parent
        fix = None
        if isinstance(parent, cst.IfExp) and parent.test is node:
            fix = self._where_fix(parent)
        repeat_of = self._repeat_of(node, construct)
        self.report(
            node,
            self.message.format(construct=construct),
            fix=fix,
            per_call=self._validates(),
            repeat_of=repeat_of,
        )

    def _repeat_of(self, node: cst.BaseExpression, construct: str) -> cst.CSTNode | None:
        """The test `node` repeats (`_tested_root`) in the statement before it, or None.
        A `while` test is read on every pass, a cost of its own: it neither starts nor
        joins a run (`while norm(r) > tol:` then `if norm(r) > tol:` after the loop). Nor
        is a test a repeat where the statement holding the earlier one binds a name the
        test reads after it (`if n > valid.sum(): valid = ...`, then `if n >
        valid.sum():`): another value."""
        if construct == _TESTED[cst.While]:
            return None
        statement = _statement_of(self.ctx.ancestors())
        previous = self._runs.previous(self._tested_root(node), self.ctx.ancestors(), node)
        if statement is not None:
            self._statements[id(node)] = statement
        earlier = self._statements.get(id(previous)) if previous is not None else None
        if earlier is None:
            return None
        read = {n.value for n in (node, *descendants(node)) if type(n) is cst.Name}
        if read & _bound_in(earlier):
            return None
        return previous

    def _tested_root(self, node: cst.BaseExpression) -> str | None:
        """The truth value a test reads, as written, the same for its complement: `probs[i]
        >= c` and `probs[i] < c` (also `not t` and `t`) are one device bool, read once
        and decided twice. Another comparison of the same tensor (`choice == 0`, then
        `choice > 1`) is a graph of its own: another key."""
        while type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
            node = node.expression
        code = self.ctx.module.code_for_node
        if type(node) is cst.Comparison and len(node.comparisons) == 1:
            operator = type(node.comparisons[0].operator)
            canonical = _COMPLEMENTS.get(operator, operator)
            return f"{code(node.left)} {canonical.__name__} {code(node.comparisons[0].comparator)}"
        return code(node).strip("() ")

    def _note_forwarded(self, node: cst.Call) -> None:
        """A call that may run a helper of this module, with the arguments computed from
        the caller's own parameters: where the caller is handed a device tensor, so is the
        helper (`_strong_wolfe` handing `gtd` on to `_cubic_interpolate`)."""
        if type(node.func) is cst.Name and self.ctx.qualified(node.func):
            return  # an imported function, not one of this module
        helper = self.calls.callee(node, self.ctx.function)
        if helper is None or not self.ctx.defines_name(helper.name):
            return  # runs no helper of this module
        handed = {
            id(arg.value): sources
            for arg in node.args
            if not arg.star and (sources := self._reads.device_sources(arg.value))
        }
        if handed:
            self.calls.note_forwarded(node, self.ctx.function, handed, self.ctx.site())

    def _defer(self, node: cst.BaseExpression) -> None:
        """A test of unknown kind computed from the helper's parameters on the device
        (`if d2_square >= 0:` in `_cubic_interpolate`, `if loss != loss:` in
        `check_inf_nan(loss)`): judged by the calls once the walk is over
        (`leave_Module`), as the check of its input the helper makes every time a per-step
        caller hands it a device tensor. Host values here (a type test, an annotation)
        are no such test."""
        function = self.ctx.function
        if function is None or self.ctx.kind(node) is not Kind.UNKNOWN:
            return
        if not self.ctx.calls_name(function.name):
            return  # no call of this module can hand it anything
        params = self._reads.device_sources(node)
        if not params or self._tested_as_other_class(node):
            return
        construct = self._truth_context(node)
        if construct is None:
            return
        chain = self._boolean_chain()
        count = len(self.reports)
        self.report(node, self.message.format(construct=construct), per_call=self._validates())
        if len(self.reports) > count:  # not skipped where it stands (a raise, a settled exit)
            pending = self.reports.pop()
            self._pending.append((pending, function, params, None if chain is None else id(chain)))

    def leave_Module(self, node: cst.Module) -> None:
        hot = self.ctx.hot.is_hot_here
        for pending, function, params, chain in self._pending:
            # Only a per-step call's device tensor is read every step (not one handed over
            # once after the batch loop, while the step hands host numbers): the calls are
            # judged by this file's reasoning (a call another module makes hot is left).
            if not any(self.calls.handed_tensor(function, param) for param in params):
                continue
            if not any(self.calls.handed_tensor(function, param, hot) for param in params):
                continue
            if chain is not None:
                if chain in self._chains:
                    continue  # the chain's tensor test is reported already
                self._chains.add(chain)
            self.reports.append(pending)

    def _tested_name(self, node: cst.BaseExpression) -> str | None:
        """The name whose value a test reads: `converged` itself, or the tensor operand of
        a comparison (`i` of `i == -1`, `i >= dna_min_restype_num`)."""
        if type(node) is cst.Name:
            return node.value
        if type(node) is cst.Comparison:
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            names = {o.value for o in operands if type(o) is cst.Name and self.ctx.is_tensor(o)}
            if len(names) == 1:
                return names.pop()
        return None

    def _if_chain_head(self, node: cst.BaseExpression) -> cst.If | cst.IfExp | None:
        """The first `if` of the `if`/`elif` chain whose test holds `node`, the node being
        checked, or the outermost conditional expression of a chain of them, each in the
        `else` of the one before (`a if i == -1 else (b if i >= n else c)`)."""
        child: cst.CSTNode = node
        head: cst.If | cst.IfExp | None = None
        for ancestor in self.ctx.ancestors():
            if head is None:
                if isinstance(ancestor, cst.If | cst.IfExp):
                    if child is not ancestor.test:
                        return None
                    head = ancestor
                elif isinstance(ancestor, cst.BaseStatement | cst.BaseSmallStatement):
                    return None
            elif type(ancestor) is type(head) and ancestor.orelse is child:  # type: ignore[attr-defined]
                head = ancestor  # type: ignore[assignment]
            else:
                return head
            child = ancestor
        return head

    def _validates(self) -> bool:
        """The test being checked guards the input: an `assert`, or an `if` whose body
        raises. Such a check reads the data on every call with new data, so it is judged
        per call (a metric's input check whose `update` is in another module)."""
        function = self.ctx.function_node
        if function is None or not has_tensor_parameter(function):
            return False  # only data handed in as declared tensors is checked per call
        if self._runs_a_loop(function):
            return False  # a check after a decoding loop runs once per call of it
        if self._runs_a_solve(function):
            return False  # a check before `odeint(dynamics, ...)`: once per solve
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.Assert):
                return True
            if isinstance(ancestor, cst.If):
                return ancestor.orelse is None and ends_in(ancestor.body, (cst.Raise,))
            if isinstance(ancestor, cst.BaseStatement | cst.BaseSmallStatement):
                return False
        return False

    def _runs_a_solve(self, function: cst.FunctionDef) -> bool:
        """The function runs an integrator (`odeint(dynamics_func, y_init, time_grid)`,
        `sdeint(sde, y0, ts)`), or hands a function it defines (a nested `def`, a lambda)
        to a solver (`solve_ivp(lambda t, x: ...)`, `integrate`): the solver's loop calls
        the dynamics on every solver step, so the function is a whole solve, and a check
        of its input (`assert time_grid[0] == 1.0`) runs once per solve, as one beside a
        loop of its own does."""
        known = self._solving.get(id(function))
        if known is None:
            nested = {
                node.name.value
                for node in descendants(function.body, _NOT_OWN_BODIES)
                if type(node) is cst.FunctionDef
            }
            known = False
            for node in descendants(function.body, NOT_OWN):
                if type(node) is not cst.Call:
                    continue
                name = last_name(node.func) or ""
                if _INTEGRATOR.search(name) or (
                    _SOLVER.search(name)
                    and any(
                        type(arg.value) is cst.Lambda
                        or (type(arg.value) is cst.Name and arg.value.value in nested)
                        for arg in node.args
                    )
                ):
                    known = True
                    break
            self._solving[id(function)] = known
        return known

    def _runs_a_loop(self, function: cst.FunctionDef) -> bool:
        """The function has a loop of its own (not in a nested function or class)."""
        known = self._looping.get(id(function))
        if known is None:
            known = self._looping[id(function)] = any(
                type(node) in _LOOP_TYPES for node in descendants(function.body, NOT_OWN)
            )
        return known

    def _tested_as_other_class(self, node: cst.BaseExpression) -> bool:
        """`isinstance(batch, DALIOutputs) and batch.has_processed_signal`: right of a type
        test against a class that is no tensor, the name is an instance of that class, and
        what is read of it (a Python property) is not known to be a tensor."""
        root: cst.BaseExpression = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if not isinstance(ancestor, cst.BooleanOperation):
                if isinstance(ancestor, cst.UnaryOperation):
                    child = ancestor
                    continue
                return False
            if (
                isinstance(ancestor.operator, cst.And)
                and child is ancestor.right
                and _tests_class(ancestor.left, root.value)
            ):
                return True
            child = ancestor
        return False

    def _tensor_by_use(self, node: cst.BaseExpression) -> bool:
        """A test of unknown kind that the function's own code shows to be on tensors: a
        comparison with a value it joins with `torch.cat`/`torch.stack` (`while t < T:`
        with `eval_times = [t]` handed to `torch.cat`), or `m.any()`/`m.all()` of a mask
        made by tensor operations (`m = ~(err <= tol).bool()`)."""
        if isinstance(node, cst.Comparison):
            return all(type(c.operator) in _TENSOR_COMPARISONS for c in node.comparisons) and any(
                self._stacked(operand)
                for operand in (node.left, *(c.comparator for c in node.comparisons))
            )
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _MASK_REDUCTIONS
            and not node.args
        ):
            receiver = node.func.value
            if self.ctx.kind(receiver) is not Kind.UNKNOWN:
                return False
            evidence = self.ctx.masks.evidence(receiver)
            return evidence is Evidence.VALUE or (
                evidence is Evidence.LIKELY and self._combined_with_a_device_tensor(receiver)
            )
        return False

    def _combined_with_a_device_tensor(self, mask: cst.BaseExpression) -> bool:
        """`penalty_mask` (or `~penalty_mask`), bound once in its function, which the
        function combines by arithmetic or a bitwise operation with a name holding a device
        tensor where the test stands (`~penalty_mask * cbarrier`, `cbarrier =
        torch.clamp(...)`): PyTorch refuses to combine a host array or tensor with a device
        tensor (0-dim ones aside), and a Python bool has no `.any()`, so the mask is on
        the device."""
        while type(mask) is cst.UnaryOperation and type(mask.operator) is cst.BitInvert:
            mask = mask.expression
        function = self.ctx.function_node
        if type(mask) is not cst.Name or function is None:
            return False
        if binding_counts(function).get(mask.value, 0) != 1:
            return False  # a parameter, or bound again: which value is combined is unclear
        for current in descendants(function.body, NOT_OWN):
            if type(current) is not cst.BinaryOperation or not isinstance(
                current.operator, _COMBINING
            ):
                continue
            sides = (_inverted_name(current.left), _inverted_name(current.right))
            for this, other in (sides, sides[::-1]):
                if (
                    this == mask.value
                    and other is not None
                    and other != mask.value
                    and self.ctx.kinds.lookup(other) is Kind.TENSOR
                ):
                    return True
        return False

    def _stacked(self, operand: cst.BaseExpression) -> bool:
        """`t`, `t + dt`: a name of unknown kind the function joins into a tensor, or
        arithmetic on one."""
        if isinstance(operand, cst.BinaryOperation) and isinstance(operand.operator, _ARITHMETIC):
            return self._stacked(operand.left) or self._stacked(operand.right)
        if not isinstance(operand, cst.Name) or self.ctx.kind(operand) is not Kind.UNKNOWN:
            return False
        function: cst.FunctionDef | None = None
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.CompFor) and operand.value in target_names(ancestor.target):
                return False  # a comprehension's own name, not the function's
            if isinstance(ancestor, cst.FunctionDef):
                function = ancestor
                break
        if function is None:
            return False
        names = self._joined.get(id(function))
        if names is None:
            names = stacked_names(function, self.ctx.imports)
            self._joined[id(function)] = names
        return operand.value in names

    def _boolean_chain(self) -> cst.BooleanOperation | None:
        """The outermost `and`/`or` the node being checked sits in, through nested ones
        (`a or b or c`) and `not`s (`not isfinite(x) or not isfinite(g)`): one condition,
        whose fix combines its tensor tests into one device expression, read once."""
        chain = None
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.BooleanOperation):
                chain = ancestor
            elif not (
                isinstance(ancestor, cst.UnaryOperation) and isinstance(ancestor.operator, cst.Not)
            ):
                break
        return chain

    def _truth_context(self, node: cst.BaseExpression) -> str | None:
        """The construct that takes `node`'s truth value, if any.

        `a and b` and `not a` are looked through: in `if mask is not None and mask.any():`
        the `if` takes the truth of `mask.any()`. The left operand of `and`/`or` is always
        tested; the right one only when the whole operation is (`x = a or b` tests `a`).
        """
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return None  # its operand is the value read
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.BooleanOperation):
                if child is ancestor.left:
                    return "`and`" if isinstance(ancestor.operator, cst.And) else "`or`"
                child = ancestor
                continue
            if isinstance(ancestor, cst.UnaryOperation) and isinstance(ancestor.operator, cst.Not):
                return "`not`"
            if isinstance(ancestor, cst.Arg) and ancestor.keyword is None and not ancestor.star:
                child = ancestor
                continue
            if isinstance(ancestor, cst.Call):
                func = ancestor.func
                if (
                    isinstance(child, cst.Arg)
                    and len(ancestor.args) == 1
                    and isinstance(func, cst.Name)
                    and func.value == "bool"
                    and self.ctx.qualified(func) is None
                ):
                    return "`bool()`"
                return None
            if not isinstance(ancestor, _TESTED_TYPES) or child is not ancestor.test:
                return None
            if isinstance(ancestor, cst.If) and clipping_test(ancestor, self.ctx.kinds):
                return None  # hand-written gradient clipping: XLA105's
            return _TESTED[type(ancestor)]
        return None

    def _where_fix(self, node: cst.IfExp) -> NodeFix | None:
        """`a if t > 0 else b` -> `torch.where(t > 0, a, b)`, for tensor or number branches."""
        test = node.test
        if not (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            # `<`, `==`, ...: a bool tensor. Not `is`/`in`, nor `t == None`/`t == "a"`,
            # which give a Python bool that torch.where refuses.
            and type(test.comparisons[0].operator) in _TENSOR_COMPARISONS
            and not any(
                _is_none_or_string(side) for side in (test.left, test.comparisons[0].comparator)
            )
            and all(self._selectable(branch) for branch in (node.body, node.orelse))
        ):
            return None
        # Only module-level imports: one local to another function would not be in scope.
        top_level = ImportTable()
        top_level.add_top_level(self.ctx.module)
        spelled, imports = top_level.spell("torch.where", "import torch", self.ctx.names_in_use)
        where = cst.Call(
            func=cst.parse_expression(spelled),
            args=[cst.Arg(test), cst.Arg(node.body), cst.Arg(node.orelse)],
        )
        return self.fix("Select with `torch.where`", (node, where), imports=imports)

    def _selectable(self, branch: cst.BaseExpression) -> bool:
        """A branch `torch.where` can take: a tensor or a number literal."""
        if isinstance(branch, cst.UnaryOperation) and isinstance(branch.operator, cst.Minus):
            branch = branch.expression
        return isinstance(branch, cst.Integer | cst.Float) or self.ctx.is_tensor(branch)


def _names_an_id(node: cst.BaseExpression) -> bool:
    """`3`, `-100`, `eos_token_id`, `self.config.pad_token_id`, `ignore_index`, `token`: a
    number literal, or a name (the last of an attribute chain) that says an id or index."""
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:  # type: ignore[attr-defined]
        node = node.expression  # type: ignore[attr-defined]
    if type(node) in (cst.Integer, cst.Float):
        return True
    if type(node) is cst.Attribute:
        node = node.attr  # type: ignore[attr-defined]
    return type(node) is cst.Name and _ID_NAME.match(node.value) is not None  # type: ignore[attr-defined]


def _inverted_name(node: cst.BaseExpression) -> str | None:
    """`m` of `m` or `~m`: the name an operand spells, under bitwise inversions."""
    while type(node) is cst.UnaryOperation and type(node.operator) is cst.BitInvert:  # type: ignore[attr-defined]
        node = node.expression  # type: ignore[attr-defined]
    return node.value if type(node) is cst.Name else None  # type: ignore[attr-defined]


def _is_none_or_string(node: cst.BaseExpression) -> bool:
    return (isinstance(node, cst.Name) and node.value == "None") or isinstance(
        node, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString
    )


def _tests_class(test: cst.BaseExpression, name: str) -> bool:
    """`isinstance(name, C)` (or an `and` chain holding one) with `C` a class that is no
    tensor (`DALIOutputs`, not `torch.Tensor`)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_class(test.left, name) or _tests_class(test.right, name)
    if not (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value == "isinstance"
        and len(test.args) == 2
    ):
        return False
    subject, classes = test.args[0].value, test.args[1].value
    if not isinstance(subject, cst.Name) or subject.value != name:
        return False
    options = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    return all(
        isinstance(option, cst.Name | cst.Attribute)
        and (option.attr if isinstance(option, cst.Attribute) else option).value
        not in TENSOR_ANNOTATIONS
        for option in options
    )


def _a_sequence(node: cst.BaseExpression, module: cst.Module) -> bool:
    """A list or tuple, not a set or a mapping: a display or list comprehension, or a name
    (or `self` attribute) every assignment of which in the module binds such a value or
    `.tolist()` of a tensor (also as one target of an unpacking: `self.som_ids,
    self.eom_ids = ids.tolist()`)."""
    if isinstance(node, cst.List | cst.Tuple | cst.ListComp):
        return True
    spelled = _spelled(node)
    if spelled is None:
        return False
    values = _bound_values(module).get(spelled)
    return bool(values) and all(values)


def _spelled(node: cst.BaseExpression) -> str | None:
    """`x` for a name, `self.x` for an attribute of the instance; None for anything else."""
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    attribute = self_attribute(node)
    return None if attribute is None else f"self.{attribute}"


@lint_memo.memo(16)
def _bound_values(module: cst.Module) -> dict[str, list[bool]]:
    """For each name and `self` attribute the module assigns: whether each assignment
    binds a sequence (a display, a list comprehension, `.tolist()`)."""
    found: dict[str, list[bool]] = {}
    for current in descendants(module):
        if type(current) is not cst.Assign:
            continue
        value = current.value  # type: ignore[attr-defined]
        tolist = (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "tolist"
        )
        for target in current.targets:  # type: ignore[attr-defined]
            target = target.target
            if isinstance(target, cst.Tuple | cst.List):
                for element in target.elements:
                    name = _spelled(element.value)
                    if name is not None:
                        found.setdefault(name, []).append(tolist)
                continue
            name = _spelled(target)
            if name is not None:
                found.setdefault(name, []).append(
                    tolist or isinstance(value, cst.List | cst.Tuple | cst.ListComp)
                )
    return found


def _statement_of(ancestors: Iterable[cst.CSTNode]) -> cst.CSTNode | None:
    """The statement of its block that holds the node whose ancestors (innermost first)
    these are."""
    child: cst.CSTNode | None = None
    for ancestor in ancestors:
        if type(ancestor) in (cst.IndentedBlock, cst.Module):
            return child
        child = ancestor
    return None


def _bound_in(statement: cst.CSTNode) -> set[str]:
    """The names a statement binds anywhere in it (its branches and loops included)."""
    names: set[str] = set()
    for node in descendants(statement):
        if type(node) in _BINDERS:
            names |= target_names(node.target)  # type: ignore[attr-defined]
    return names


_BINDERS = node_types(cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For)
