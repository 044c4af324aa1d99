from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.loaders import MP_DEVICE_LOADER
from xlalint.analysis.loop_facts import is_optimizer
from xlalint.analysis.statements import always_exits
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix
from xlalint.rules._loop_rules import BarrierLoopRule

if TYPE_CHECKING:
    from xlalint.context import FileContext

# Engines that call a step function once per batch, in a loop of the library's own.
ENGINES = frozenset({"ignite.engine.Engine", "ignite.engine.engine.Engine"})


@dataclass(frozen=True)
class _StepFunction:
    """A function of this file that an engine runs as its step (`Engine(step)`)."""

    node: cst.FunctionDef
    body_indent: str  # the absolute indentation of its body's statements


class TrainingLoopWithoutBarrier(BarrierLoopRule):
    """
    ## What it does
    Flags a training loop (a loop whose body steps an optimizer, or calls `backward()` and
    updates tensors from their `.grad` by hand, itself or through a function of the same
    module such as `train_step(batch)`; or that hands the state it carries to a function,
    of this module or of another module of the project, that runs `backward()` and returns
    that state updated from the gradient, and rebinds it: `adv_x =
    fast_gradient_method(model_fn, adv_x, eps_iter, ...)` in a PGD loop, the helper
    ending `return x + eps * x.grad.sign()`; not where it rebinds the loop's own item, new
    each pass, nor where the helper hands back the gradient itself, a saliency map) that
    reaches no graph barrier on each pass: no
    `torch_xla.sync()`, `xm.mark_step()` or `xm.optimizer_step(..., barrier=True)` in the
    body, in a nested loop or in a function it calls, and no batches from a loader that syncs
    (`pl.MpDeviceLoader`, `ParallelLoader.per_device_loader`, an `accelerator.prepare()`d
    loader or one from Lightning Fabric's `fabric.setup_dataloaders()`, traced through this
    module's helpers that return it, iterator wrappers such as `CycleIterator(loader)`, and
    attributes set in another method: `dl = accelerator.prepare(dl); self.stream =
    cycle(dl)` in `__init__`; a loader handed in is taken for a prepared one in a file that
    imports torch_xla's parallel loaders or what of accelerate wraps loaders (the package,
    `Accelerator`, `accelerate.data_loader`'s `prepare_data_loader`), but not where it
    imports only accelerate's helpers: its hardware probes, `from accelerate.utils import
    is_xpu_available`, `send_to_device`, `get_logger`, `init_empty_weights`).
    Batches pulled with `next()` in a loop nested in the pass count (`for _ in
    range(accumulate): data = next(self.stream)`: every step pulls at least one), and so do
    those pulled in a function of this module the pass calls (`while self.steps < n:
    self.train_step()`, the method pulling `next(self.dl_iter)`), judged where that
    function pulls them, or, where it pulls from a parameter, on what the call hands it
    (`self.next_data_to_forward_kwargs(dl_iter)` with `dl_iter = cycle(self.dataloader)`
    in the caller). A barrier behind `if XLA_AVAILABLE:` counts.

    The loop header is reported once, and a nest of loops once. With nested loops, the
    innermost loop that steps the optimizer on each pass is reported, because that is
    where the barrier belongs: one graph per optimizer step, the same every step. A barrier
    on the outer loop alone (`for _ in range(n_critic_updates): for batch in
    buffer.get(batch_size): ... optimizer.step()`) would still hold every minibatch's step
    of a pass in one graph. A batch loop that steps an optimizer itself and runs a sweep
    of steps over a repetition count pulling no data of its own (`for real in loader: for
    _ in range(n_critic): <critic step>`, then the generator's step: a GAN iteration) is
    one training iteration per pass, and the nest is reported once, at the batch loop. Not
    reported: an epoch loop around a batch loop (also where
    the epoch loop steps the optimizer once more after it, the leftover step of gradient
    accumulation, and where the batch loop runs in a method that the epoch loop reaches
    through a dispatcher it hands the method to: `self._with_events(self._do_epoch,
    "epoch")` with `_with_events` calling its `f()`, as callback-driven learners do; a
    batch loop that steps nothing, such as an evaluation helper called every few steps,
    does not make an epoch loop), and `backward()`-only micro-batch loops inside a loop
    that steps the optimizer (they are part of its step). XLA402 places a sampling nest's
    one finding by the same cost: at the loop whose pass is one step.

    The optimizer step may sit in a function or method of the same module that the loop
    calls, several calls deep, in a loop of that function over the
    optimizers (`for opt in optimizers.values(): scaler.step(opt)`, `for k, v in
    self.optimizers.items(): v.step()`; such a loop inside the batch loop is part of its
    step, not a batch loop of its own), or in a method the
    module does not define but names for it (`self.optimizer_step()` of a training
    template whose mixin implements it), or in methods the module leaves abstract (`raise
    NotImplementedError`) and calls on a pass that zeroes the optimizer's gradients and
    runs no `backward()` itself (a template whose subclasses write the update). A method
    the loop's class leaves abstract runs what its subclasses in the module write
    (`Epoch.run` calling `self.batch_update(x, y)`, which `TrainEpoch` implements with
    `backward()` and `optimizer.step()`); so does a method of an instance of a class the
    file imports from its project (`amp = MixedPrecisionManager(...)`, then
    `amp.step(model, optimizer)`: the class is known, so is its `step`). So does a
    method named for training (`forward_backward`, `train_actor_critic`, `fit_batch`: a
    word `train`, `training`, `backward`, `learn`, `fit` or `optimize` in its name, or the
    generic step of a template, `run_step`, `do_step`, `perform_step`) that the
    module leaves to its subclasses (its body only `pass`, `...` or `raise
    NotImplementedError`) and that the pass hands its data: the loop's item, an element
    fetched with a count (`self.train_actor_critic(self.dataset[i])`), or a value made from
    them. A count alone (`for epoch in range(n): self.train_epoch(epoch)`) or settings the
    pass computes (`self.train(batch_size=b, gradient_steps=n)` after a rollout) are no
    batch: such a call may run a whole phase of training, with loops of its own. A call of a
    parameter (`step_fn(batch)`) runs the
    functions this module's callers hand for it (`step_fn=self.train_step`). A call
    through an attribute of `self` that no method of the module names runs the functions
    of the module that the class (a base or a subclass of it here) assigns it, as they are
    or wrapped by `torch.compile`, `torch.jit.script`/`trace` or `functools.partial`
    (Keras' torch trainer: `self.train_function = torch.compile(one_step_on_data)`, a
    function nested in the method that assigns it, then `self.train_function(data)` on
    every batch; a method, `self.step_fn = torch.compile(self.train_step)`, also through a
    local every binding of which is one of the class's methods: `step = self.step_amp if
    amp else self.step_plain`, then `self.step_fn = step`);
    `torch_xla.compile` syncs around what it wraps, so a step kept so is not followed.
    Keras 3's `optimizer.apply(grads, variables)` and
    `optimizer.apply_gradients(...)` are optimizer steps, and so is the `step()` of an
    entry of a state dict under a key naming an optimizer (torchbearer's
    `state[torchbearer.OPTIMIZER].step(closure)`, `objects["optimizer"].step()`), whatever
    the dict is called. An object
    whose gradients the code zeroes and then steps (`trainer.zero_grad()` ...
    `trainer.step()`) is an optimizer, whatever its name.

    A step defined in another module is known by its call: the loop hands its batch (its
    item, or a value it assigned in this pass) to a method named for one training step of
    the object it is called on, `update` or `step` (or `_update`, `_step`) of an object named
    a trainer or learner (`loss = trainer.update(batch)`) or for optimization
    (`self.optimizer.update(minibatch, n)`: torch's optimizers have no `update`, so this one
    is a training object's; `self.optimization_stepper._step(self, batch)`), or
    `train_step`, `train_batch`, `train_on_batch`, `fit_batch` of any object. Where the
    module defines methods of that name, they decide;
    where it defines none, the call counts only if the module writes no training step of its
    own (no `backward()` or optimizer step anywhere): there, such a call is something else.
    `metric.update(preds, y)`, `ema.update(model)`, `counts.update(tokens)`,
    `env.step(action)` and Lightning's `training_step` (which returns the loss and steps
    nothing) are no steps. In a module that imports torch_xla or names a TPU/XLA flag or
    helper (`if cfg.tpu: itr = utils.tpu_data_loader(itr)`; XLA or TPU as a word or a part
    of a name, not inside another word: `step_output` names nothing), the other module may
    hold the
    barrier as well as the step (or the loader syncs): such loops are left alone.

    Other modules of the same project are read too (with CPython's `ast`, never imported
    or run: those the file imports, relatively or under its package root on disk, and
    theirs). A call that no function of the file answers runs a training step there when
    the function it reaches steps an optimizer on each call, in its own body or in a loop
    of it over the optimizers, directly or through functions and methods of its module:
    `self.optimizer_update(optimizer, loss)` inherited from a base class in another file
    (elegantrl's `AgentPPO(AgentBase)`; the bases are followed in order, two levels
    deep), `sgd_step(opt, loss)` after `from .steps import sgd_step`, or a method of a
    class the file imports, by a name that is not generic
    (`self.optimizers.optimizer_scaler_step_some(scaler, groups)` with `from
    nerfstudio.engine.optimizers import Optimizers`). The receiver's class is known,
    whatever the method's name (`update` too), where the file says what it holds: a plain
    name every binding constructs (`amp = MixedPrecisionManager(...)`), a parameter of the
    calling function annotated with classes of the project (`agent: DQN`, `Optional[DQN]`,
    `DQN | TD3`, or the file's alias of them, agilerl's `SupportedOffPolicy = DQN |
    RainbowDQN | DDPG | TD3`: the method of any of them) and not rebound there, or an
    attribute of `self` every assignment of the calling class sets to an instance of one
    (`self.learner = DQN(...)`) or to such a parameter (`self.agent = agent`); a class a
    package's `__init__.py` re-exports (`from agilerl.algorithms import DQN`) counts, and
    a stub of the file's own (a `Protocol`'s `def learn(self, batch): ...`) does not stand
    for it. In the other module, an attribute the class binds to one of its methods
    (`self._update_impl = self.update`) runs that method. A wrapper that retries what it
    is handed calls it on the pass (`retry_call(model.train, tries=3)`, `retry`'s, as
    lightweight-gan's and stylegan2's CLIs run each step; `call_with_retry(f)`), as a
    direct call would. A method that loops over batches
    itself is an epoch, not a step (its own loop is the training loop), and a module
    that imports torch_xla or names XLA or TPUs tells nothing (its step may hold its
    barrier). A step that is chosen at run time is still not seen:
    `self.policy.update(sample_size=n, buffer=buffer)` handing no batch of the loop's
    own, an optimizer step in a callback's `post_batch()` after a pass whose only
    visible work is `backward()` (the shape of gradient accumulation and of gradient
    reads as well).

    Not training loops: loops over optimizers or losses (`for opt in optimizers:
    opt.step()`, `for name in self._optimizers:`, `for k in self.optimizers.keys():`, the
    entries of a dict a name for one optimizer holds, `for o_ in optimizer.values():
    scaler.step(o_)` (an optimizer has no `values()`), and
    loops over keys of any name that fetch each optimizer by the key, `for name in
    step_names: self._optimizers[name].step()`, or bind it first, `optimizer =
    self.optimizers[group]` before `scaler.step(optimizer)`; `optimizers["main"].step()` or
    `optimizers[i % 2].step()` in a batch loop is still that loop's step),
    sweeps over a literal list of settings, loops in `forward` or a `*_step` function,
    unless such a function runs as many steps as its caller asks (`def step(self,
    num_steps): for _ in range(num_steps): ... optimizer.step()`: each pass is a step; a
    `train_step`'s `for _ in range(self.n_critic)` sweep is part of its one step), or
    unless a loop in a module's `forward` takes a gradient step on every pass: an
    optimizer step (`cost.backward(); optimizer.step()`, an attack optimising its
    perturbation) or `torch.autograd.grad` of the pass's loss feeding what the loop hands
    to the next pass (`adv = adv.detach() + alpha * grad.sign()`, iterative attacks:
    `.detach()` cuts autograd's history, not the pending XLA graph), also where the loop
    sits in a function the forward defines and calls (`def get_adv_examples(x):`); a
    second-order inner loop (`create_graph=True`, a meta-learner adapting inside the outer
    step's graph), a gradient that feeds nothing carried (a force field's `-dE/dx`), and
    the attack of a module that another model of the file keeps as a part and calls in
    its own forward (`self.attacker = Attacker(model)`, `adv = self.attacker(inp,
    target)` in `AttackerModel.forward`: the inner maximisation of that model's training
    step, whose barrier is the batch loop's; measured, robustness's PGD: 6 compiles
    without a barrier per pass, 5 with one and more executions) stay part of one step.
    A loop in a function nested in `forward` or a `*_step` function runs there: it is one
    step's graph as the forward's own loops are. On the XLA CPU device (a PGD loop over a
    two-layer MLP, measured by hand):
    without a barrier each run of 4 or of 8 steps is one graph holding every step,
    compiled anew for each count (1 compile, 1 execution); with `torch_xla.sync()` per
    step, 2 compiles on the first run of 4 and none for the 8 steps after. Loops
    with `xm.optimizer_step(opt)` are left to XLA406. Nor are loops an XLA host never
    runs: under a CUDA guard, a test for another accelerator or another framework (a
    library written for several backends: `elif backend_name == "paddle":
    self._train_paddle_lbfgs()`), or a failed XLA test, and in a function or private
    method this file calls only from such branches. Reported in files that use torch, with
    or without torch_xla imports yet: a CUDA script being ported is linted before it imports
    torch_xla. A file that zeroes an optimizer's gradients (`self.optimizer.zero_grad()`)
    uses PyTorch's optimizer API: a training template or mixin counts even where it does not
    import torch itself, and so does a file that imports from its project's torch modules
    (a dotted path with a part named for torch: `from
    mlagents.trainers.ppo.optimizer_torch import TorchPPOOptimizer`, in a project that keeps
    `import torch` to one module of its own), or binds torch by a call that imports it by
    name (`torch = try_import("torch")`, `importlib.import_module("torch")`: an optional
    dependency; XLA402 too).

    A training step that a library loop runs is reported at its `def`: a function of the
    file handed to ignite's `Engine(step)`, which calls it once per batch, that trains and
    reaches no barrier (not where the file iterates a loader that syncs: the engine may be
    given it).

    ## Why is this bad?
    XLA records operations lazily and compiles and runs the pending graph at a barrier.
    Without one, every iteration appends its forward, backward and update to the same
    graph: it grows step after step, nothing runs until something reads a value, and then
    one huge graph is compiled (and recompiled when the trip count changes), memory holding
    every intermediate of every step.

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch_xla

    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    ```
    or iterate `pl.MpDeviceLoader(loader, torch_xla.device())`, which syncs on every batch.

    ## Fix safety
    Safe. The fix appends `torch_xla.sync()` as the last statement of the loop body, at the
    body's indentation (`xm.mark_step()` if the file already calls it; `sync()` after `from
    torch_xla import sync`), and adds `import torch_xla` if needed. Where the file imports
    torch_xla only under `if`/`try:` and sets a flag there (`XLA_AVAILABLE = True`), the barrier
    is appended as `if XLA_AVAILABLE: xm.mark_step()` so the file still runs without torch_xla;
    with no such flag there is no fix. In a file that does not import torch_xla yet and whose
    device choice knows no XLA (XLA305), the barrier waits for that choice's fix, which adds the
    guard, and is then written behind it. A barrier only decides where graphs are cut: results
    are the same, except for device random numbers (below). No fix for a one-line body (`for b
    in loader: step(b)`), a loop with `else:`, or a body whose last statement leaves the pass
    (`return`, `break`, `continue`, `raise`): there, where the barrier belongs is a judgement
    call. In an engine's step function the barrier goes after the last statement, or before
    a final `return` (what the step returns is then read from computed values).

    Where the loop iterates a plain `DataLoader` (traced as for XLA403) and moves each batch
    to a device itself (`x.to(device)`, `x.cuda()`), the fix instead wraps the loader in the
    loop header, `for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):`, as a person
    porting the loop would: every batch is then a barrier, and batches arrive on the XLA
    device where the loop moved them anyway (the move becomes a no-op). In a file whose
    model a device ladder without XLA places (XLA305), the wrap is unsafe and goes together
    with the ladder's fix (both or neither): wrapped alone, batches would reach the XLA
    device while the model stays on the CPU.

    Random numbers drawn on the device in the loop (dropout, `torch.randn(...,
    device=...)`) are the exception: a barrier changes which numbers torch_xla's device
    generator gives every later draw, so the results are a different sample of the same
    distribution, not the same values (measured by the `device_randomness` runtime case:
    values differ, a two-sample Kolmogorov-Smirnov test finds the same distribution).
    Without device randomness, results are the same values up to float rounding (a graph cut
    in two may round differently; bit-identical or not depends on the host CPU).

    ## Runtime evidence
    5 training steps of a small MLP on the XLA CPU device (case `training_loop`): without a
    barrier one graph of {training_loop.before.max_graph_size} nodes is compiled after the 5
    steps, and compile time grows with the number of steps (XLA_FACTS.md). With
    `torch_xla.sync()` each step the largest graph is {training_loop.after.max_graph_size}
    nodes, compiled once and reused; the results are {training_loop.outputs}. With dropout and
    `torch.randn` on the device (case `device_randomness`) the results are
    {device_randomness.outputs}.
    """

    code = "XLA401"
    name = "training-loop-without-barrier"
    message = (
        "Training loop without a graph barrier: each iteration grows one XLA graph; "
        "call `torch_xla.sync()` once per step"
    )
    step_message = (
        "`{name}` is the training step that ignite's `Engine` runs on every batch, and it "
        "reaches no graph barrier: each iteration grows one XLA graph; call "
        "`torch_xla.sync()` at the end of the step"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    # `step` covers `optimizer.step()` and `train_step`; `update` and `_batch` name training
    # steps defined in another module (`trainer.update(batch)`, `net.fit_batch(b)`);
    # `grad` a gradient step another module hands back (`fast_gradient_method(...)`).
    triggers = ("backward", "step", "update", "train_batch", "fit_batch", "grad")

    # Besides loops: a step function that an `Engine` runs, found where the engine is
    # built, and a step defined apart from that call (it calls `backward()`).
    screen = (*BarrierLoopRule.screen, "Engine", "backward")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._functions: dict[str, _StepFunction] = {}  # the latest definition of a name
        self._engine_steps: list[_StepFunction] = []
        self._syncing_loader = False
        self._zeroes_optimizer = False  # `optimizer.zero_grad()`: PyTorch's optimizer API

    def torch_code(self) -> bool:
        """The file uses torch, or zeroes an optimizer's gradients: a training template
        written against PyTorch's optimizer API need not import torch itself."""
        return super().torch_code() or self._zeroes_optimizer

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        indents = [
            a.indent if a.indent is not None else self.ctx.module.default_indent
            for a in self.ctx.ancestors()
            if isinstance(a, cst.IndentedBlock)
        ]
        body = node.body
        if isinstance(body, cst.IndentedBlock):
            indents.insert(
                0, body.indent if body.indent is not None else self.ctx.module.default_indent
            )
        self._functions[node.name.value] = _StepFunction(node, "".join(reversed(indents)))

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        func = node.func
        if (
            not self._zeroes_optimizer
            and type(func) is cst.Attribute
            and func.attr.value == "zero_grad"
        ):
            self._zeroes_optimizer = is_optimizer(func.value)
        qualified = self.ctx.qualified(node.func)
        if qualified == MP_DEVICE_LOADER or (
            type(node.func) is cst.Attribute and node.func.attr.value == "per_device_loader"
        ):
            self._syncing_loader = True
        if qualified not in ENGINES or not node.args:
            return
        first = node.args[0]
        if first.keyword is None and not first.star and isinstance(first.value, cst.Name):
            function = self._functions.get(first.value.value)
            if function is not None:
                self._engine_steps.append(function)

    def leave_Module(self, node: cst.Module) -> None:
        if not self.torch_code():
            return
        self._report_engine_steps()
        epochs = self.ctx.epochs
        for loop in self.xla_step_loops():
            node = loop.site.node
            if epochs.holds_batch_loop(node) and not epochs.is_batch_loop(node):
                continue  # an epoch loop stepping once more after its batch loop
            if loop.trains and not (
                loop.has_barrier or loop.syncing_loader or loop.optimizer_steps
            ):
                start, end = self.header(loop.site)
                self.report(start, end_node=end, fix=self.barrier_fix(loop.site))

    def _report_engine_steps(self) -> None:
        """A step function that an ignite `Engine` runs: the loop is the library's, the
        step and its barrier are the file's. Not where the file iterates a loader that
        syncs (the engine may be running it)."""
        if self._syncing_loader:
            return
        loops = self.ctx.loops
        seen: set[int] = set()
        for step in self._engine_steps:
            function = step.node
            if id(function) in seen:
                continue
            seen.add(id(function))
            facts = loops.facts(function)
            if not facts.trains or facts.optimizer_steps or loops.reaches_barrier(function):
                continue
            message = self.step_message.format(name=function.name.value)
            self.report(function.name, message, fix=self._step_barrier_fix(step))

    def _step_barrier_fix(self, step: _StepFunction) -> NodeFix | None:
        """The barrier after the step's last statement, or before a final `return` (what
        it returns is then read from computed values: `loss.item()` executes nothing)."""
        body = step.node.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        last = body.body[-1]
        if always_exits(last):
            is_return = isinstance(last, cst.SimpleStatementLine) and isinstance(
                last.body[-1], cst.Return
            )
            if not is_return or len(body.body) < 2 or always_exits(body.body[-2]):
                return None
            last = body.body[-2]
        return self.append_barrier(last, step.body_indent, body, "the step function")
