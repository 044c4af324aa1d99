from __future__ import annotations

import libcst as cst

from xlalint.analysis.arguments import bind, star_arguments
from xlalint.analysis.helper_calls import HelperCall
from xlalint.analysis.helper_reads import (
    STAR,
    HostRead,
    Reader,
    converts_handed,
)
from xlalint.analysis.host_reads import (
    ReadRuns,
    arithmetic_whole,
    consuming_call,
    read_root,
    returned_whole,
)
from xlalint.analysis.hotness import FunctionKey
from xlalint.analysis.tensors import binding_key, copied_to_host
from xlalint.context import FileContext, Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.positions import Positions, positions_of
from xlalint.rule import PendingReport
from xlalint.rules._helper_calls import HelperReadRule, spelled_argument


class ItemInHotCode(HelperReadRule):
    """
    ## What it does
    Flags `.item()`, `float(t)` and `int(t)` on tensors in code that runs every step: the
    bodies of step loops (over data, counted in steps, or training or sampling in their
    passes; a loop over the model's layers or a table of names runs where its function
    does, and so does a loop over the rows of what a parameter holds, counted by it:
    `for i in range(kg.n_facts)` reading `kg.head_idx[i].item()` in a helper that builds
    lookup tables once, when a sampler is built), `forward`, `*_step` methods and the
    functions they call (and the properties they read: `self.temperature` runs its body,
    as a call would), and the functions that
    another module of the project calls every step (a model's `forward` calling
    `th_accuracy` of `metrics/compute_acc.py`), unless the function only returns what it
    is handed, converted (`to_numpy(t)`): that read is its callers' choice. Reads of one value
    in a row (in one statement or in statements that follow each other: `int(t[0].item()),
    int(t[1].item())`, `total += loss.item()` then `print(loss.item())`, `n =
    int(count.item())` then `if n != count.item():`, the same reduction `lengths.sum()`
    twice; an `if` test and the first statement of a branch it chooses, or its `elif`
    tests: `if right_rf.item():` then `x = x[..., :-right_rf.item()]`) are one cause with
    one fix, reading the value once into a name, reported once,
    at the first. The later reads are not free (measured by hand on the XLA CPU device: `a
    = int(t.item())` then `abs(a - t.item())` over 5 steps cost 15 executions and 10
    device-to-host transfers, against 10 and 5 for the first read alone), but the fix of
    the first covers them; a `# noqa` on a read of the run hands the finding on to the
    next read, as a `# noqa` on one line leaves the other lines reported. Different
    reductions of one value (`t.min().item()`, `t.max().item()`) and different fields of
    one batch (`batch["raw"]`, `batch["padded"]`) are values of their own. Of reads of one value
    in the two branches of a conditional expression (`loss.item() if total is None else
    total + loss.item()`, and of what its own methods or rows compute from it: `v.item() if
    v.numel() == 1 else v.max().item()`) one runs per pass, reported once, at the first.
    Reads handed to one call (`self.update_k(real.item(), fake.item())`, scaled on the
    host on their way in: `dict(loss=loss.item() / n, recon=recon.item() / n)`, or
    formatted into one of its arguments: `log("%f %f" % (a.item(), b.item()))`) are one
    cause too, reported once, at the first: the call needs its inputs on the host, and
    handing it the device values (or moving it) is one fix. So are the reads that are
    operands of one arithmetic expression or comparison (`float(numerator) /
    float(denominator)`, `score[label].item() >= score.max().item()`): one host number or
    truth value, computed on the device and read
    once (`(numerator / denominator).item()`), and the reads one `return` hands back
    together as the entries of a literal, nested or not (`return loss, pred_acc.item(),
    stop_acc.item()`, `return {"loss": loss.item(), "q": q.mean().item()}`): returning
    the device values is one fix. `t.cpu().item()`
    is one read of `t`, reported here rather than as XLA102.

    Other spellings of the same read: a format spec on a tensor (`f"{loss:0.3f}"`,
    `f"{acc:.2%}"`) formats `loss.item()` (`Tensor.__format__`; a field without a spec
    prints the tensor, XLA104's), and Python's integer functions take a tensor's value
    through `__index__` (`randrange(0, min_seq_len - 1)` of a device tensor,
    `random.randint`, `operator.index`), as `int(t)` does. A dict a helper of the module
    fills from a literal (`accum_log(logs, {"gen_loss": gen_loss / n})`, the helper
    writing each entry of its second parameter into its first) holds, under each key, a
    value of that entry's kind: `f"{logs['gen_loss']:0.3f}"` formats a device tensor.

    A function of the module picked as a fallback (`times_fn = default(times_fn,
    default_time_fn)` with `def default(v, d): return v if exists(v) else d`, `fn or
    default_fn`, `f if flag else g`) runs where the name bound to it is called: its reads
    are per step where that call is. A function or method of the module handed to a
    function of the module that calls it in its own body (`default(current_decay,
    self.get_current_decay)` with `default` calling `d()`) runs where that call is; one
    that only stores it (`registry.append(fn)`) runs nothing.

    A moving average of a model's weights (a class named for one: `EMA`, `KarrasEMA`,
    `ModelEma`, `ExponentialMovingAverage`) moves its copy once per optimizer step, called
    by a loop of the user's or another package's: its `update` is per step, and
    `self.step.item()` of the step buffer there reads the device every step. So is a
    function registered as an optimizer's step hook (`optimizer.register_step_post_hook(
    hook)`, `register_optimizer_step_pre_hook(fn)`), and one handed a backward hook's
    arguments (`module, grad_input, grad_output`; backpack's `sqrt_hessian(self, module,
    g_inp, g_out)` and the check `_check_loss_has_not_been_modified(cls, module, g_out)`
    it calls): a module's output gradient exists only during a backward, so it runs in
    every backward, wherever the hook that hands it on is registered. So does the
    `backward` of a custom autograd function (`class Round(torch.autograd.Function)`), in
    every backward through a graph its `apply` built; the gradients it is handed
    (`grad_output`) are device tensors.

    A value bound in a `try` body (`change = 100 *
    d.norm() / norm_x`) stays a device tensor after the statement where a handler binds a
    host fallback (`except KeyError: change = 0.0`): the normal path reads the tensor.

    A read in a loop or comprehension over the rows of a device tensor (`[target(o).cpu()
    .item() for target, o in zip(targets, outputs)]` of a model's outputs, or
    `input_tensor[i].cpu()` for `i in range(batch_size)`) in a function that runs a model
    itself pays one sync per row on every call with new data, where one copy of the whole
    would do: it is judged as a per-call cost, hot in a function that computes on tensors
    it is handed (`input_tensor: torch.Tensor`) as well as in per-step code. A summary
    that runs no model (`finalize(sum_logprobs, tokens)` after decoding) is not.

    A tensor the function builds on the device from Python values the host holds (`lengths =
    torch.tensor([a.shape[-1] for a in audios], device=model.device)`: numbers, a list of
    them, a comprehension of them), bound once, then read back through its own methods and
    rows (`lengths.max().item()`, `int(lengths.max())`), is a device round trip for what the
    host had. In a function that runs a model on what it is handed (`model.encode(padded)`,
    `self.net(x)`, in its own body, not in a loop there) it is paid on every call, whoever
    calls it: a server's `batch_encode` per request. Not in a function that runs backward,
    takes a data loader (its code outside the pass runs once per pass), runs once by its
    name (`__init__`), or runs no model (a collate helper, judged by its callers); nor where
    the data holds a tensor (`torch.cat([offsets, torch.tensor([n], device=d)])`) or the
    name is bound again.

    A device tensor handed, in code that runs every step, to a function of the same module
    that converts that very parameter (`float(p)`, `int(p)`, `p.item()`, or each element of
    its `*args`) costs the same read: the call is reported, naming the helper and the line
    of its read (`metric.add(loss * n, n)` where `Accumulator.add` keeps
    `[a + float(b) for a, b in zip(self.data, args)]`), and the read is not (README
    "Labelling": the call is where the caller can stop handing a device tensor). So is a
    value the helper computes from the parameter on the device, where the helper's code
    knows it reads a tensor: by its own methods and rows (`self._sum +=
    values.sum().item()` with `values: torch.Tensor`), and by arithmetic, comparisons and
    `torch` functions of such values (`pred = logits < 0`, then `float(th.sum(pred))`).
    Arithmetic of parameters converted (`math.sqrt(sigma_next**2 * (sigma**2 -
    sigma_next**2) / sigma**2)`, `float(total / count)`, or a local bound to such
    arithmetic: `sigma_hat = sigma + gamma * sigma`, then `math.sqrt(sigma_hat**2 -
    sigma**2)`) reads the parameters whatever the helper's code knows of them (a `sigma:
    float` annotation included): beside numbers, names and attributes, a device tensor
    handed to one of them keeps the result on the device. A call or a row of a value of
    unknown kind in the expression (`float(cfg.get("lr") * scale)`) may be anything, and
    a string makes it formatting: not such arithmetic.
    One finding per call: two per-step calls are two findings, and a call handing several
    such parameters is one, standing for the conversions of each argument it hands over.
    A check of the input (a read in the test of an `assert`, `if`, `while` or conditional
    expression: `assert targets.max().item() < n`)
    is the helper's own, reported at the read once, whichever call hands the value; a read
    in a function per step by its own name (`forward`) or by what it is (a hook a
    framework calls every step) stays where it is too, and so do a
    read in a loop statement of the helper (`for i in range(batch): int(lens[i].item())`:
    its work per row), a read whose value sizes a tensor the helper builds or bounds its
    own loop (`max_len = seq_len.max().item()`, then `torch.arange(max_len, ...)`;
    `x.new_zeros((int(n.item()) + 1, d))`; also a shape it hands a shaping method,
    `x.view(b, max_len)`, or any call by a size keyword, `torch.nested.to_padded_tensor(
    ids, padding=0, output_size=(b, max_len))`; the sizes it splits a tensor into,
    `x[mask].split(lens.tolist())`; a position it slices or indexes at, `stm =
    idx.min().item()`, then `codes[stm:] = 83`: its own computation, not a conversion
    handed back) and a read no per-step call of the module feeds. Helpers are found
    by name: `f(...)`, `self.f(...)`, and `obj.f(...)` where `obj` holds an instance of a
    class of the module (`metric = Accumulator(3)`). Not flagged: such helpers called with
    Python numbers
    (shapes, counts) or once per epoch, helpers that rebind the parameter before reading it
    or read it only where a type test made it a Python value (`if isinstance(alpha,
    float): ... float(alpha)`: a tensor takes the other branch) or where a tensor test of
    it failed (`not isinstance(t, torch.Tensor) and float(t) == 1.0`; the `else` of `x if
    torch.is_tensor(x) else float(x)`: no tensor gets there), and checks of the input
    reported inside the helper. What the call hands over is a tensor when
    it comes out of a module: an `nn` class, or a class of the file derived from one
    (`class MaskedSoftmaxCELoss(nn.CrossEntropyLoss)`, then `l = loss(y_hat, y, lens)`;
    `metric.add(l.sum(), n)` is flagged); an instance of a class derived from anything else
    (a host library's base, a plain class of the file) may return a Python number.

    The same holds for a function of another module of the project that the file imports
    (`from ..dataclass_utils import asdict_as_float`, `utils.score(out)`, a static method
    `ModelUtils.to_float(t)`, a method the class inherits from a class of another module, or
    a method of a parameter nobody annotated that is named as the one class of that name the
    imported modules define or re-export: `logger.log("train/loss", loss, step)` with the
    project's `Logger`, `value.item()` in its `log`) and that reads the parameter a device
    tensor (or a value a call of unknown kind computed from one) is handed to, itself or
    through values it computes from it (`maxs = alignments.max(dim=1)[0]`, then
    `maxs.mean().item()`), or in a function of its module it hands the value on to: the call
    is reported, naming the function and the file and line of its read. Not when the read
    checks the value (`assert torch.max(targets).item() < classes`, an `if` or `while`
    test): a check is the function's own, reported once in its file, which another module's
    per-step call makes hot. Nor when the read is only of Python values (`x if isinstance(x,
    numbers.Number) else x.item()` reads a tensor, the other branch does not), made only
    where the call leaves a parameter out (`if dim_size is None:`), in a loop of that
    function (its own module judges the loop), or in a function per step by its own name
    (`forward`: its file reports it). Its own file then does not report the read a second
    time where the function reads nothing but its parameters.

    Python's `math` functions read a device tensor as a float (`math.exp(-loss)`), and
    a helper of the module that puts its parameter into `torch.tensor([...])`'s data
    (`torch.tensor([x], device=xs.device)` in a beam search's `append_token`) reads it as
    `float(x)` would: the call handing it a device tensor is reported (XLA107 reports
    device elements of such data where it sees them).

    `.item()` exists on tensors and numpy values only: on a value of unknown kind it is
    reported in torch code, a file that imports torch or a function that runs backward
    in its own body (a trainer subclass whose module imports only its framework, reading
    `loss_t.item()` in `forward_backward`); elsewhere it is not. A row of a parameter
    named as a Python number is such a value (`mel_input_length[bib].item()` in
    `forward`: a number has no rows). A field of an object numpy
    makes is a numpy value (`np.finfo(np.float32).eps.item()`): not flagged. Nor are the
    arrays of another array library (MLX, jax, TensorFlow, CuPy, `foreign_arrays.py`), never
    torch tensors on the device: what its functions return as the imports in force bind
    them (`nn.value_and_grad` after `import mlx.nn as nn`), what a callable it built
    returns (`loss_and_grad(...)`, `self.grad_fn(...)` with `self.grad_fn =
    jax.value_and_grad(loss_fn)`, a function decorated `@jax.jit`), what a model handed its
    arrays returns
    (`self.module(mlx_batch)`), and their fields (`loss_output.kl_local_sum.item()` in an
    `MlxTrainingPlan` beside the file's torch plans).

    Values known to live on the host are not flagged, whatever the code around them
    computes on the device: a batch whose next binding is its own move onto the device
    (`batch = next(data_iter)`, then `num_tokens = batch["input_ids"].ne(pad).sum().item()`,
    then `batch = {k: v.to(self.device) for k, v in batch.items()}`; `for x, y in loader:`
    with `y = y.to(device)` after the read): the code moves it itself, so before the move it
    is the loader's host batch (not a move in a loop of its own, a retry, nor one to the
    CPU); the rows a loop unpacks beside a row it moves itself (`for i,
    (seq, im) in enumerate(iter(dataset))` with `model.generate(im.to(device))`: the
    dataset hands host tensors, so `seq` is one, as a loader's rows are), or one it hands as
    it is to a function of the module that moves the parameter it binds (`sample(model,
    prime=prime, positions=positions)` with `prime = prime.to(device)` inside: `position.
    item()` of a row of `positions` reads the host); a record a helper
    converts to numpy in place before handing it back (`data.to_numpy()`, then `return
    data`: `mask_data["iou_preds"][idx].item()` reads a numpy scalar), and what a helper
    hands back that is the record it was given (`return mask_data` on every path); what a
    `torch.nn` module built in the function and never moved (`loss_fn =
    torch.nn.CrossEntropyLoss(reduction="none")`) computes from host tensors only; and a
    value a type test and its `else` make an instance of one class on every path (`if
    isinstance(audio, AudioLoader): ... else: audio = AudioLoader(audio)`: the loader, not
    the tensor its annotation allowed, and the offsets it hands back are numbers).

    A module's buffers are device tensors (`self.register_buffer("bank_ptr", ...)`, also
    with `tensor=`): `int(self.bank_ptr)` in the helper `forward` calls to update a memory
    bank reads the pointer on every step. A buffer registered as `None` is not one.

    A name that runs autograd's backward (`loss_tensor.backward()`, keyword arguments at
    most) is a tensor on the training device until it is bound again, wherever it came
    from (`loss_tensor, metrics = self._compute_loss_and_metrics(x, y)`), so `float(
    loss_tensor)` after it is flagged; so is the loss a scaled copy of it runs backward
    for (`adjusted = loss_tensor * step.size`, then `adjusted.backward()`), not the
    factor. The loss holds the tensor from where it is bound, so a read before its
    backward counts too: `actor_loss = policy_loss + kl_loss`, `loss = actor_loss +
    critic_loss`, then `float(actor_loss)`, then `loss.backward()` reads the device every
    minibatch; a binding after the backward (`loss = self.history[-1]`) and a value beside
    the loss (`loss, entropy = self.model.losses(mb)`: `float(entropy)`) are not known to.
    `layer.backward(dout)` with a positional gradient (a hand-written network's
    layers) says nothing. A module's `training_step` that returns a name (`return loss`,
    `return {"loss": loss}`) hands its framework (Lightning) the loss to run backward on:
    that return counts as the backward. So does handing the name to a function of the
    module, or a method of the class through `self`, that runs backward on the parameter
    it binds and never rebinds (`self._backward_and_step(optimizer, loss)` with
    `loss.backward()` inside): `trn_loss.append(float(loss.data))` before it reads the
    device every batch; a value handed beside the loss, or to a parameter the helper
    rebinds before its backward, is not known to.

    A function or method annotated to return tensors only (`-> Tuple[torch.Tensor,
    torch.Tensor]`) hands back a tensor in each position (`y, t = self._compute_y_and_t(
    batch)`); one with other types beside a tensor (`-> Tuple[Tensor, np.ndarray]`) says
    nothing of them. A union of such annotations (`-> Tensor | tuple[Tensor, Tensor]`, an
    ODE step returning `x_next, abs(x_next - x_star)` when asked for its error) returns no
    Python number, whatever its arithmetic with literal coefficients looks like; `abs(t)`
    and `round(t)` of a device tensor are tensors (`Tensor.__abs__`).

    An attribute declared to hold a tensor (`self._prompt_lens: Tensor | None`, every
    alternative a tensor or None) is one wherever it is not None, whatever opaque value
    fills it (`layout.seq_lens_pt`): `int(self._prompt_lens[i])` per finished sequence is
    flagged. An assignment known to give a host value (`lengths.cpu()`) still decides, and
    an annotation that allows other types (`np.ndarray | torch.Tensor`) declares nothing.
    Setting an attribute known to hold a tensor or a module to None (`else:
    self.temperature_holder = None`) is the empty case, used only where it is not None: it
    keeps what the other assignment says.

    A module's parameter (`self.lamb = nn.Parameter(torch.tensor(lamb))`, `nn.Buffer`)
    moves to the device with its module, whatever host value its data was built from:
    `self.lamb.item()` in `forward` reads the device every step.

    Reads of tensors on the host are not flagged: tensors built without a device
    (`torch.zeros(n)`, `torch.randn(1, n)`, `torch.normal(0.0, std, size=(1,))`: a
    `size` makes `torch.normal` a factory), `torch.from_numpy(...)` and `.cpu()` copies,
    tensors safetensors reads from a file given no device (`safe_open(path,
    framework="pt")`'s `get_tensor(key)`, `load_file(path)`'s values),
    arithmetic of those with each other and with Python numbers (`min(n, cap)` of numbers
    is one), values moved to where such a tensor lives (`total += n.to(total.device)`,
    `n.to(total)`, `torch.ones(n, device=total.device)`: the counter stays on the host), a
    torch reduction of a host tensor whose other
    arguments are not known device tensors (`torch.kthvalue(rand_vals, n - k).values`), a
    torch operation beside a host copy made there (`torch.logical_or(dones,
    ~valids.cpu())`),
    and the positions of a helper's returned tuple (a module function, or a method called
    on `self`) where every definition returns such a value on every path (`obs, r, done,
    info = self.env_step(env, action)` with `env_step` returning `torch.from_numpy(
    rewards)` or `rewards.cpu()` second). Nor is a parameter read before the statement of
    its function that first rebinds it to its move onto the device (`batch =
    move_to_device(batch, self.device)`, `x = x.to(device)`): it was handed over on the
    host, so `(~batch["instance_mask"]).sum().item()` above that line reads host memory;
    what is read after it, or of a parameter first rebound to something else, is judged
    as before.
    A helper's parameter that every call of the module hands a property building its
    tensor on the host (`self._apply_threshold(scores, self.normalized_threshold)`, the
    property returning `torch.tensor(1.0) - self.sensitivity`) is a host value there too,
    and so is one handed a host copy that a branch before the call joined a tensor to
    (`emission = torch.cat([emission, col], dim=1)`): torch joins tensors on one device;
    or a row of a host copy (`values[t]` of `values = top.values.cpu()`), a tensor a
    factory makes without a device (to a private helper, `_update`), or a name each
    branch of an `if`/`else` before the call binds to one of these.
    What a function or method of the module builds on the host on every `return` that
    hands back a value (`return tensor(tmp).float()`, or a name last bound to such a
    tensor: `n = tensor(counts)` before `return heads, n`; a bare `return` is an early
    exit) is a host tensor where it is bound, and what it builds with numpy a host array
    (`self.bern_probs = self.evaluate_probabilities()`). In a subclass's methods an
    attribute has the kind that every binding in its bases' methods that it does not
    replace gives it: a table the base's `__init__` builds on the host and only the base's
    own `corrupt_batch` moves stays on the host in a subclass that replaces
    `corrupt_batch`. A name that indexes a host tensor (`self.bern_probs[relations]`) is a
    host value from that statement on: PyTorch takes indices on the CPU or on the indexed
    tensor's device only. A buffer a trainer module registers with a factory given no
    device (`self.register_buffer("step", torch.tensor(0))`, or the legacy constructor's
    `torch.Tensor([0])`, in a module whose methods run
    backward, hand their networks to the device and never move the trainer itself) and
    only updates in place (`add_`, `+=`, `copy_`) stays on the host: `self.step.item()`
    in its `log()` reads host memory; a trainer that calls `self.to(device)`, or binds
    the attribute again (`self.step = torch.tensor(n, device=...)` in `load`), keeps it
    a device tensor. A function of another module handed only host values, at least one
    a host tensor (`rank(atom_pos[idx : idx + 1], mask=inputs["atom_mask"])` after
    `atom_pos = atom_pos.cpu()`), or handed the CPU device (`move_data_to_device(inputs,
    torch.device("cpu"))`), computes on the host: `ranking.aggregate_score.item()` of
    what it returns reads host memory (not a class, nor a call handed a device).

    A function that writes a checkpoint (`torch.save`) runs when one is due, however
    often the training step that calls it runs: its reads are what saving needs. So does a
    function that writes the checkpoint through such a function of the module and whose
    every read goes into that call (`int(self.steps.sum().item())` for the file name, read
    once per checkpoint, not per step), whatever it is called. One that also reads for
    another purpose (`save_and_log(loss, path)` printing `loss.item()` before
    `self.save(path)`) stays per step where its callers are.

    Likewise a function that makes a figure (`fig, ax = plt.subplots()`, `plt.figure()`,
    `ax.get_figure()`) runs when a figure is wanted, typically under a log interval:
    calling it from a step does not make it per step, and its reads (`loss.item()` for the
    title, `y.detach().cpu()` to plot) are what drawing needs. This holds for every rule
    that reports per-step costs (`.cpu()` copies, formatting).

    A function whose every call in the file sits under a long interval (`if time %
    update_timesteps == 0: self.learn(memories)`) runs seldom, but a loop of it whose
    passes step an optimizer is a training loop all the same: each pass is a training
    step, and `self.print(f"policy_loss: {loss.item():.3f}")` there reads the device on
    every minibatch of the phase. Its code outside that loop, and its loops that step no
    optimizer (an evaluation called as seldom), run once per phase.
    The loop that calls the phase under that interval is no epoch loop for it: each of
    its passes (a rollout step) runs on its own. A lambda bound to a name and called
    (`as_number = lambda t: t.item()`, then `history.append(as_number(loss))` in the
    loop) reads what its calls hand it, where they are.

    A read in a branch that clears its own flag (`if first: print(loss.item()); first =
    False`, `if not self.initted: ...; self.initted = True`) runs on the first pass only,
    and so do the functions called only from there; a flag the branch does not clear
    (`if verbose:`) keeps it per step, and so does a local flag armed again on every step
    (`first = True` inside the batch loop, or at the top of `training_step`).

    A function that runs its own loop over batches is an epoch function: only that loop's
    body runs per step, and a read after it (of a total accumulated on the device) runs
    once per epoch. So is one that calls such a function: of the module, a method of its
    class, or one it defines in its own body (`_evaluate` running `_extract(loader)`
    twice, then copying the distance matrix once). A loop is a batch loop when it
    iterates a loader (or a name its function binds only to loaders, `batches =
    tqdm(val_loader)`, or the positions of one, `for i in range(len(self.dataset))` taking
    `self.dataset[i]`, whichever class defines the update it hands each batch to), or
    steps an optimizer on every pass, itself or in a method it calls
    (`self._fit_batch(x, y)`); an epoch loop
    around it stays one even where it steps once more after it (the leftover step of
    gradient accumulation), and a loop of fixed passes in an epoch loop that trains,
    samples and pulls nothing there (`for task_id, weight in enumerate(self.loss_weight)`
    logging each weight after `self.train_one_epoch(loader)`) runs once per epoch too,
    whatever class it is in; one pulling batches (`next(val_iter)`) or counting steps
    does not. A function whose own body runs backward and steps an optimizer
    is one step whatever loops it holds (a GAN iteration's loop of discriminator updates):
    `g_loss.item()` after that loop runs every step. So is one whose own body steps an
    optimizer after loops of micro-batches that run backward (directly, through a function
    of the module or a `partial` of one) and step none: gradient accumulation, one step a
    call (`float(total_disc_loss)` after `for i in range(self.gradient_accumulate_every):`
    runs every step, though each micro-batch takes `next(self.loader)`); an epoch loop
    whose batch loop steps too is not one. So is a function named for one optimisation
    step (`optimize(opt)`, `optimize_parameters()`, `optimize_model()`) that steps an
    optimizer in its own body or through a function of the module it calls, not in a loop
    of its own: guided diffusion's `MixedPrecisionTrainer.optimize` reads every
    parameter's norm with `.item()` each step, whichever loop calls it; an optimizer step
    in a function named otherwise (priming its state), or in `optimize`'s own loop (a
    whole fit), makes no step of the function. So is each pass of a loop whose own
    body runs backward and steps an optimizer (an RL script's critic update, with a loop
    of delayed policy updates inside): its code runs every step. A method without a loop of its own
    that runs a model, in a class another of whose methods runs backward in its own body
    (an agent's `batch_act(obs)` or `act(state)` beside its `update`), and the `__call__`
    of a class that runs a model without a loop of its own (a policy object called on
    each state), act on every environment step, whichever module runs the environment.
    A name ending in `_per_step` (`fit_one_batch_per_step`) says what a loop of many steps
    does, and is not a per-step function. Nor is a function per step by its name that is
    handed no data (a trainer module's `forward(self)`, which `trainer()` runs) and whose
    body holds a batch loop that steps an optimizer on every pass: it is a training run,
    and `step = self.step.item()` before that loop runs once per call (an attack's
    `forward(images, labels)`, optimizing the batch it is handed, stays per step); one
    handed data is a run too where that training walks a loader, in its body or in a
    method it calls (a pipeline's `forward(data)` that generates and filters examples,
    then `self.finetune(kept)` over a `DataLoader`: its filter's counts read once per call).
    A method that runs the model beside the class's training step is not per step where
    every call of it is under a long interval or after a batch loop (`forward(self)`'s one
    final `self.save_image(epoch, i)`). A
    torchmetrics metric is one whatever name it was imported as (`MeanAveragePrecision as
    TorchmetricsMAP`), and a loop in one of its methods other than `update` (`compute`,
    once per evaluation) runs its passes once per call, whatever it walks.

    Search and sampling code keeps 0-dim scores in records: a field a class of the module
    declares as a tensor (`class Hypothesis(NamedTuple): score: Union[float,
    torch.Tensor]`, a dataclass field, a `Dict[str, Tensor]` of per-scorer scores) is a
    tensor where the object is known to be such a record (`self` in its methods, a
    parameter annotated with the class or a list of it, a loop or comprehension over one,
    `Hypothesis(...)`, `hyp._replace(...)`). `float(self.score)` in a method that a
    decoding loop calls on its hypotheses (`[h.asdict() for h in ended]`) is flagged;
    fields annotated as Python numbers, and unannotated attributes, are not. Zipping the
    pair `topk` returns (`for logprob, token in zip(*logprobs[i].topk(k))`), or the rows
    of a device tensor, yields 0-dim device tensors: `token.item()` there reads the
    device for every candidate; the same loop over a host copy (`logprobs.cpu()`) does not.

    A per-step function's (`*_step`, `forward`) plain parameters are taken for tensors,
    except those named for a Python flag, size or kind (`use_cache`, `seq_len`, `dim`, a
    solver's `order`): `float(order + 1)` in an adaptive solver's `init_step` reads
    nothing, while `float(error_ratio)` beside it reads the device.

    A warning about a checked value runs when the value has gone wrong, as a `raise`'s
    message (or a block that ends in `raise`, or the body of an `if` that ends by raising
    where a setting asks for it and returning nothing otherwise: `if raise_on_error: raise
    FloatingPointError(msg)` / `else: return`) is built only on the error path: reads in
    the body of an `if` that only warns (`warnings.warn(...)`, `log.warning(...)`) and
    whose test checks a value (`if
    kl.max().item() > 100: log.warning(f"KL very high: {kl.max().item():.4f}")`) are not
    flagged, while the test's own read is. A warning under a bare setting (`if verbose:`),
    or beside other work in the same body, still runs every step. This holds for every
    host-sync rule (XLA101-107).

    A read in a branch that a default filled in before it settles against never runs
    (this holds for every rule): after `if dim_size is None: dim_size =
    int(index.max()) + 1`, the `else` of `if dim_size is not None:` is dead, while the
    fill's own read stays reported.

    A read in a branch of the training loop after a loop over a whole loader that trains
    nothing (`for val_data in self.val_dataloader:` under `if is_valid_step:`, then
    `val_loss.detach().item()`) runs once per pass over that loader, however the branch's
    test is spelled: it is not flagged; reads before that loop or in its passes are. A
    module of the file whose instance its owner keeps in an attribute (`self.early_stopper
    = EarlyStopper(...)`) and calls only under a long interval (`if not (self.steps %
    self.check_early_stop_every): self.early_stopper()`) or once runs its `forward` that
    often: its reads are not per step.

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Reading a tensor's
    value on the host forces the pending graph to compile and execute right there, then
    copies the result back: one extra execution and one device-to-host transfer per step,
    and the step's graph is cut in two.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    ```

    ## Use instead
    Keep the running value on the device and read it once, after the loop:
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()
    print(total_loss.item())
    ```

    ## Fix safety
    Unsafe. For `total += x.item()` the fix accumulates `x.detach()` instead; `total` then
    becomes a tensor, which changes its type for any code that uses it as a Python number.
    Other uses are reported without a fix.

    ## Runtime evidence
    5 steps of a small model on the XLA CPU device (case `accumulate_loss`): `loss.item()` each
    step costs {accumulate_loss.before.executions} executions,
    {accumulate_loss.before.device_to_host} device-to-host transfers and
    {accumulate_loss.before.cpu_fallbacks} `aten::_local_scalar_dense` calls; accumulating
    `loss.detach()` costs {accumulate_loss.after.executions} executions and
    {accumulate_loss.after.device_to_host} transfers, and the results are
    {accumulate_loss.outputs}.
    """

    code = "XLA101"
    name = "item-in-hot-code"
    message = "`{call}` reads a tensor on the host every step, forcing a graph execution"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    hot_only = True
    per_row_reads = True
    needs_torch = True
    # "import": a call of another project module's function that reads what it is handed.
    triggers = (".item(", "float(", "int(", "import")
    # `x[i].max().item()` in a loop over `i`: the loop-int subscript the read reads is the
    # read's own graph, one per value of `i` because the read executes it in each pass;
    # reading once outside the loop (or on the device) fixes both: one cause.
    supersedes_inside = ("XLA207",)

    helper_message = (
        "`{argument}` is handed to `{helper}()`, which reads it on the host with `{read}` "
        "(line {line}) every step, forcing a graph execution"
    )
    helper_hint = (
        "Hand the helper numbers it can keep on the device (`loss.detach()` summed into a "
        "device tensor), and read the total once, after the loop"
    )

    elsewhere_message = (
        "`{argument}` is handed to `{helper}()`, which reads it on the host with `{read}` "
        "({file}:{line}) every step, forcing a graph execution"
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._runs = ReadRuns()
        # Keys of the values read in each branch of a conditional expression, by its id.
        self._branch_reads: dict[int, dict[str, set[str]]] = {}
        self._handed: set[int] = set()  # calls a reported read was handed to, by id
        # Conversions of a helper's parameters, by (helper, slot): their findings wait for
        # the calls (`_withholds`).
        self._withheld: dict[tuple[FunctionKey, str], list[PendingReport]] = {}

    # -- walk: reads ---------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            flagged = self._reads_device_tensor(func.value) and not self.ctx.type_tested_host(
                func.value
            )
            withheld = self._withholds(node, func.value, flagged)
            if not self.ctx.type_tested_host(func.value):
                self._reads.note_read(node, flagged and withheld is None, flagged)
            if flagged:
                skip, repeat_of = self._one_cause(func.value, node)
                if not skip:
                    self.report(
                        node,
                        self.message.format(call=".item()"),
                        fix=self._detach_fix(node),
                        repeat_of=repeat_of,
                    )
                    self._withhold(node, withheld)
        elif (
            type(func) is cst.Name
            and func.value in ("float", "int")
            and len(node.args) == 1
            and node.args[0].keyword is None
        ):
            flagged = self.ctx.is_tensor(node.args[0].value) and not self.ctx.type_tested_host(
                node.args[0].value
            )
            withheld = self._withholds(node, node.args[0].value, flagged)
            if not self.ctx.type_tested_host(node.args[0].value):
                self._reads.note_read(node, flagged and withheld is None, flagged)
            if flagged:
                skip, repeat_of = self._one_cause(node.args[0].value, node)
                if not skip:
                    message = self.message.format(call=f"{func.value}(tensor)")
                    self.report(node, message, repeat_of=repeat_of)
                    self._withhold(node, withheld)
        else:
            self.note_call(node)
            self.report_read_elsewhere(node, hint=self.helper_hint)
            self._visit_conversion(node)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        """`f"{loss:0.3f}"`: a format spec on a tensor runs `Tensor.__format__`, which
        formats `self.item()`: a read of the value as `float(loss)` is. (Without a spec the
        field prints the tensor: XLA104's.)"""
        spec = node.format_spec
        if not spec or node.conversion is not None:
            return
        value = node.expression
        # `f"{v.item() if is_tensor(v) else v:.3f}"`: a tensor only if every branch is one
        # (the read in a branch is reported as itself).
        branches: list[cst.BaseExpression] = [value]
        while any(type(b) is cst.IfExp for b in branches):
            branches = [
                part
                for b in branches
                for part in ((b.body, b.orelse) if type(b) is cst.IfExp else (b,))  # type: ignore[attr-defined]
            ]
        if not all(self.ctx.is_tensor(b) for b in branches) or self.ctx.type_tested_host(value):
            return
        spelled = "".join(
            part.value if type(part) is cst.FormattedStringText else "{...}"  # type: ignore[attr-defined]
            for part in spec
        )
        skip, repeat_of = self._one_cause(value, node)  # type: ignore[arg-type]
        if not skip:
            message = self.message.format(call=f"{{tensor:{spelled}}}")
            self.report(node, message, repeat_of=repeat_of)

    def _visit_conversion(self, node: cst.Call) -> None:
        """`math.exp(t)` of a device tensor; `torch.tensor([x])` of a helper's parameter
        (the helper reads what it is handed; XLA107 reports device elements where it sees
        them)."""
        qualified = self.ctx.qualified(node.func)
        if qualified is None or not node.args:
            return
        if qualified in INT_TAKING_FUNCTIONS:
            # `randrange(0, min_seq_len - 1)`: Python's integer functions take a tensor's
            # value through `__index__`, a read of it as `int(t)` is.
            value = next(
                (a.value for a in node.args if not a.star and self.ctx.is_tensor(a.value)),
                None,
            )
            if value is not None and not self.ctx.type_tested_host(value):
                skip, repeat_of = self._one_cause(value, node)
                if not skip:
                    message = self.message.format(call=f"{qualified}(tensor)")
                    self.report(node, message, repeat_of=repeat_of)
            return
        if node.args[0].keyword is not None:
            return
        value = node.args[0].value
        if qualified.startswith("math.") and qualified[5:] in MATH_CONVERSIONS:
            flagged = self.ctx.is_tensor(value)
            withheld = self._withholds(node, value, flagged)
            if not self.ctx.type_tested_host(value):
                spelled = f"{qualified}()"
                reported_here = flagged and withheld is None
                self._reads.note_value_read(node, value, spelled, reported_here, flagged)
            if flagged:
                skip, repeat_of = self._one_cause(value, node)
                if not skip:
                    message = self.message.format(call=f"{qualified}(tensor)")
                    self.report(node, message, repeat_of=repeat_of)
                    self._withhold(node, withheld)
        elif qualified in LIST_TENSOR_FACTORIES and type(value) in (cst.List, cst.Tuple):
            for element in value.elements:  # type: ignore[attr-defined]
                if type(element) is cst.Element:
                    flagged = self.ctx.is_tensor(element.value)
                    spelled = f"{qualified}([...])"
                    self._reads.note_value_read(node, element.value, spelled, flagged)

    def _withholds(
        self, read: cst.Call, value: cst.BaseExpression, flagged: bool
    ) -> tuple[FunctionKey, str] | None:
        """The helper and slot (`analysis/helper_reads.py`) of a flagged conversion of a
        parameter, whose finding waits for the calls: reported at each per-step call that
        hands it a device tensor, and at the read only where no such call does. Not a
        check of the input, a read in a loop statement of the helper, nor a read in a
        function per step by its own name."""
        function = self.ctx.function
        if not flagged or function is None:
            return None
        if not converts_handed(
            function, read, self.ctx.ancestors(), self.ctx.enclosing_loops, self.ctx.site().hook
        ):
            return None
        slot = self._reads.slot(value)
        return None if slot is None else (function, slot)

    def _withhold(self, read: cst.Call, withheld: tuple[FunctionKey, str] | None) -> None:
        """Take the finding just reported at `read` off the list until the calls are known."""
        if withheld is not None and self.reports and self.reports[-1].node is read:
            self._withheld.setdefault(withheld, []).append(self.reports.pop())

    def leave_Module(self, node: cst.Module) -> None:
        positions: Positions | None = None
        covered: set[tuple[FunctionKey, str]] = set()  # slots reported at a per-step call
        for call in self.calls.calls:
            reader = self._reads.readers.get(call.helper)
            found = self._read_argument(call, reader) if reader is not None else None
            if found is None:
                continue
            argument, read, slots = found
            if self.ctx.hot.is_hot(call.site):  # the call is the cause of each read it feeds
                covered.update((call.helper, slot) for slot in slots)
            positions = positions or positions_of(self.ctx.module)
            message = self.helper_message.format(
                argument=spelled_argument(self.ctx.module.code_for_node(argument)),
                helper=call.helper.name,
                read=read.spelled,
                line=positions[read.call].start.line,
            )
            self.report(call.node, message, hint=self.helper_hint, site=call.site)
        for slot, reports in self._withheld.items():
            if slot not in covered:  # no per-step call hands it a device tensor
                self.reports.extend(reports)

    def _read_argument(
        self, call: HelperCall, reader: Reader
    ) -> tuple[cst.BaseExpression, HostRead, list[str]] | None:
        """The first device-tensor argument of the call that the helper reads on the host
        (and does not report where it reads it), with every slot the call feeds so (one
        call, one cause: its finding stands for each of them)."""
        signature = self.calls.signature(call.helper)
        bound = bind(call.node, signature) if signature is not None else None
        if signature is None or bound is None:
            return None
        found: list[tuple[cst.BaseExpression, HostRead, str]] = []
        for param, read in reader.reads.items():
            value = bound.get(param)
            if value is not None and id(value) in call.tensors and not read.flagged:
                found.append((value, read, param))
        star = reader.star_read
        if star is not None and not star.flagged:
            for value in star_arguments(call.node, signature):
                if id(value) in call.tensors:
                    found.append((value, star, STAR))
                    break
        if not found:
            return None
        # The call is the cause of every conversion of what it hands over, whatever the
        # other arguments are known to be (`compute_train_stats(logits, batch["labels"])`).
        slots = [slot for _, _, slot in found]
        slots += [param for param in reader.reads if param in bound and param not in slots]
        return found[0][0], found[0][1], slots

    def _one_cause(
        self, value: cst.BaseExpression, read: cst.Call
    ) -> tuple[bool, cst.CSTNode | None]:
        """(skip, repeat_of). Skipped: a read in the other branch of the same conditional
        expression as a read of its value (of `x.item() if first else total + x.item()`
        one read runs per pass), or handed to the call a reported read was handed to.
        `repeat_of`: the read of the same value just before it (`int(t[0].item()),
        int(t[1].item())`), whose finding this one repeats."""
        if self._other_branch_reads(value, read):
            return True, None
        handed_to = (
            consuming_call(read, self.ctx.ancestors())
            or arithmetic_whole(read, self.ctx.ancestors())
            or returned_whole(read, self.ctx.ancestors())
        )
        # Fields of one record read together (`float(self.score)`, then each value of
        # `self.scores`): one conversion of the record, one cause.
        root = self.ctx.kinds.record_root(value) or read_root(value)
        repeat_of = self._runs.previous(root, self.ctx.ancestors(), read)
        if handed_to is not None and id(handed_to) in self._handed:
            # `update_k(real.item(), fake.item())`: one call's inputs; `float(a) /
            # float(b)`, `a.item() >= b.max().item()`: one host value's operands; `return
            # loss, a.item(), b.item()`: host numbers handed back together. The read still
            # joins its value's run: `if a.item() == b.item():` then `elif a.item() !=
            # b.item():` reads both values again, one cause with the `if` test.
            return True, None
        if handed_to is not None and repeat_of is None:
            # A repeat claims no call: its value's run is reported already, the call's
            # other inputs are not.
            self._handed.add(id(handed_to))
        return False, repeat_of

    def _other_branch_reads(self, value: cst.BaseExpression, read: cst.Call) -> bool:
        """Whether the other branch of the conditional expression `read` is in reads the
        same tensor: itself, a row of it or what its own methods compute from it
        (`v.item() if v.numel() == 1 else v.max().item()`): one of them runs per
        evaluation, and one edit of the expression fixes both."""
        key = binding_key(self._tensor_read(value))
        if key is None:
            return False
        child: cst.CSTNode = read
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.IfExp):
                branch = "body" if child is ancestor.body else "orelse"
                if child is ancestor.test:
                    return False
                seen = self._branch_reads.setdefault(id(ancestor), {})
                other = "orelse" if branch == "body" else "body"
                if key in seen.get(other, set()):
                    return True
                seen.setdefault(branch, set()).add(key)
                return False
            if isinstance(ancestor, cst.SimpleStatementLine | cst.BaseCompoundStatement):
                return False
            child = ancestor
        return False

    def _tensor_read(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """The tensor a read of `value` reads: `v` of `v.max()`, `v[0].float()`, `-v`
        (not `torch` of `torch.max(v)` nor `self` of `self.loss()`: functions, no tensor's
        methods)."""
        while True:
            if (
                type(value) is cst.Call
                and type(value.func) is cst.Attribute
                and self.ctx.qualified(value.func) is None
                and not (type(value.func.value) is cst.Name and value.func.value.value == "self")
            ):
                value = value.func.value
            elif type(value) is cst.Subscript:
                value = value.value
            elif type(value) is cst.UnaryOperation:
                value = value.expression
            else:
                return value

    def _reads_device_tensor(self, receiver: cst.BaseExpression) -> bool:
        # `t.cpu().item()` reads `t`: the copy and the read are one sync, reported here.
        receiver = copied_to_host(receiver) or receiver
        kind = self.ctx.kind(receiver)
        if kind is Kind.TENSOR:
            return True
        # `.item()` exists on tensors and numpy values only; in torch code (a file that
        # imports torch, or a function that runs backward in its own body), assume a
        # tensor unless the value is known to live on the host.
        return kind is Kind.UNKNOWN and (
            self.ctx.imports.binds("torch") or self.ctx.in_training_function()
        )

    def _detach_fix(self, node: cst.Call):
        parent = self.ctx.parent
        if not (
            isinstance(parent, cst.AugAssign)
            and isinstance(parent.operator, cst.AddAssign)
            and parent.value is node
        ):
            return None
        assert isinstance(node.func, cst.Attribute)
        receiver = node.func.value
        if (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Attribute)
            and receiver.func.attr.value == "detach"
            and not receiver.args
        ):
            detached = receiver  # `x.detach().item()` -> `x.detach()`
        else:
            detached = node.with_changes(func=node.func.with_changes(attr=cst.Name("detach")))
        # The replaced text is the call without its parentheses, which stay around it.
        detached = detached.with_changes(lpar=(), rpar=())
        return self.fix("Accumulate `.detach()` instead of `.item()`", (node, detached))


# `math` functions that read a tensor argument as a Python float.
MATH_CONVERSIONS = frozenset(
    {"exp", "log", "log2", "log10", "log1p", "sqrt", "floor", "ceil", "fabs", "isnan",
     "isinf", "isfinite", "pow", "cos", "sin", "tan", "tanh", "atan", "trunc", "expm1"}
)  # fmt: skip
# Python functions that take integers, and so a tensor's value through `__index__`.
INT_TAKING_FUNCTIONS = frozenset({"random.randrange", "random.randint", "operator.index"})
# torch functions that build a tensor from Python values, reading each element.
LIST_TENSOR_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
