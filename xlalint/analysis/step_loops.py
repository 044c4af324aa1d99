"""Which loops do a training or model step on every pass, judged once per file: the
verdicts the barrier rules (XLA401, XLA402, XLA406) and the per-pass rules share. An epoch
loop around a batch loop, a sweep over settings, a micro-batch loop of gradient
accumulation and a loop bounded by a syncing loader are no step loops of their own.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import ast_nodes, lint_memo
from xlalint.analysis.arguments import parameter, parameters, positional_names
from xlalint.analysis.epochs import loader_named
from xlalint.analysis.guards import local_values
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.loaders import LoaderTracing, Wrapping
from xlalint.analysis.loop_facts import (
    _NOISE,
    Loop,
    LoopSite,
    _Assign,
    _ModelCall,
    iterates_optimizers,
    unwrap_iteration,
)
from xlalint.analysis.module_steps import grad_step_of
from xlalint.walk import (
    NOT_OWN,
    bound_names,
    descendants,
    last_name,
    names_under,
    target_names,
)


@dataclass(frozen=True)
class StepLoop:
    """A loop that does a training or model step on every pass."""

    site: LoopSite
    trains: bool  # backward / optimizer step (else: a sampling or generation step)
    has_barrier: bool
    optimizer_steps: tuple[cst.Call, ...]  # `xm.optimizer_step` without barrier, per pass
    syncing_loader: bool  # iterates (or pulls `next()` from) a loader that syncs
    # An evaluation loop over a loader that keeps every batch's model results on the
    # device (`correct += ...`, `outs.append(model(x))`), pending whatever else it reads.
    evaluates: bool = False


class LoopAnalysis(LoaderTracing):
    """Loop facts, loaders, and which loops are step loops."""

    def __init__(self, module: cst.Module, imports: ImportTable) -> None:
        super().__init__(module, imports)
        self._step_loops: list[StepLoop] | None = None

    def step_loops(self) -> list[StepLoop]:
        """Every loop that does a training or model step itself on each pass, judged once.

        An epoch loop around a batch loop does no step itself: the batch loop is the step
        loop. Not step loops either: sweeps over a literal list of settings; loops inside
        `forward`, a `*_step` function or a module's `__call__` (part of one step's
        graph), unless they decode (`decodes`) or sample with fresh noise on every pass
        (`draws_noise`: a diffusion sampler written as a module's `forward`), or run with
        autograd off the network their class was handed on the state they carry
        (`_samples_handed_network`: a deterministic sampler wrapping its model); loops that
        only call `backward()`
        inside a step loop (micro-batches of gradient accumulation, gradient guidance of a
        sampler: the enclosing step is theirs, and a barrier anywhere in it counts); loops
        nested in a loop whose loader syncs on every batch (bounded by it).
        """
        if self._step_loops is not None:
            return self._step_loops
        result: list[StepLoop] = []
        for site in self._sites.values():
            node = site.node
            if _iterates_a_literal(node):
                continue
            optimizes = site.per_step and self._optimizes_per_pass(site)
            samples_in_helper = self._carries_sampling_steps(site)
            if site.per_step and not (
                self._asked_steps(site)
                or self.decodes(node)
                or self.draws_noise(node)
                or self._samples_handed_network(site)
                or samples_in_helper
                or optimizes
            ):
                continue
            # A training step updates the weights: an optimizer step, or `backward()` with a
            # hand-written update from the gradients. `for optim in optimizers:
            # init_state(optim)` steps each optimizer once; `for _ in range(n):
            # f.backward()` profiles a backward pass.
            trains = (
                optimizes
                or (
                    self.trains(node)
                    and (self.steps_optimizer(node) or self.updates_from_grads(node))
                    and not iterates_optimizers(node, self.facts(node))
                )
                or self._carries_gradient_steps(site)
            )
            # A loop that holds a training loop (an RL update: a rollout, then epochs of
            # optimizer steps) is an epoch of its own, not a sampling step: its nested
            # loops are the step loops, whatever state it hands from pass to pass.
            infers = (
                (self.infers(node) and not self._solves_through_a_callable(site))
                or self._sweeps_state(node)
                or self._counts_tokens(site)
                or samples_in_helper
            ) and not self._holds_training(node)
            evaluates = not (trains or infers) and self._accumulates_batches(site)
            if not (trains or infers or evaluates):
                continue
            if any(self._parent_syncs(parent) for parent in site.parents):
                continue
            if site.parents and self._sub_step(node, trains, infers, site.parents):
                continue
            result.append(
                StepLoop(
                    site=site,
                    trains=trains and not self.steps_scheduler(site.node),
                    has_barrier=self.reaches_barrier(site.node),
                    optimizer_steps=self.optimizer_steps(site.node),
                    syncing_loader=self.syncs_per_pass(site),
                    evaluates=evaluates,
                )
            )
        self._step_loops = result
        return result

    def _carries_gradient_steps(self, site: LoopSite) -> bool:
        """Each pass hands the state it carries to a function that runs backward and hands
        back that state updated from the gradient, and rebinds it (`adv_x =
        fast_gradient_method(model_fn, adv_x, eps_iter, ...)`, a PGD loop; the function
        of this module or of another module of the project): an iterative gradient
        method whose step sits in the helper, one forward, backward and update a pass.
        Not in a nested loop of the pass (its own step loop), nor where the name rebound
        is the loop's item, new each pass (`for x in batches: x = fgsm(model, x, eps)`)."""
        for call, functions in self._carried_state_calls(site):
            if functions:
                if any(_hands_back_gradient_step(fn) for fn in functions):
                    return True
            elif self.other_modules is not None and self.other_modules.grad_step(
                call, site.class_def, site.function
            ):
                return True
        return False

    def _carries_sampling_steps(self, site: LoopSite) -> bool:
        """Each pass rebinds the state it carries to what a function of this module hands
        back from it (`x = self.step(x, fn=fn, sigma=sigmas[i], ...)`), where that function
        calls a network it is handed on the state and adds fresh device noise to what it
        returns (`d = (x - fn(x, sigma=sigma)) / sigma`, ..., `return x + torch.randn_like(x)
        * sigma_up`: `_hands_back_noisy_step`): a stochastic sampler whose step sits in a
        helper, one denoising step a pass, in a sampler's `forward` too. Not the loop's own
        item rebound (new each pass), nor a deterministic step (an ODE solver's `y =
        self.rk4_step(func, y, t, dt)` in a forward trained end to end is one graph)."""
        return any(
            any(_hands_back_noisy_step(fn) for fn in functions)
            for _, functions in self._carried_state_calls(site)
        )

    def _carried_state_calls(
        self, site: LoopSite
    ) -> Iterator[tuple[cst.Call, list[cst.FunctionDef]]]:
        """The calls of a pass that take the state the loop carries and rebind it to what
        they hand back (`x = step(x, ...)`), with the functions of this module each may
        run. Not the loop's own item, new each pass (`for x in batches: x = fgsm(model,
        x)`)."""
        node = site.node
        items = target_names(node.target) if isinstance(node, cst.For) else set()
        for call, target in _rebinding_calls(node.body):
            if target in items or target not in {
                n for arg in call.args for n in names_under(arg.value)
            }:
                continue
            yield call, self._resolve_in(node, call, site.class_def)

    def _samples_handed_network(self, site: LoopSite) -> bool:
        """A sampling run written as a module's `forward`: with gradients off (`@torch.
        no_grad()`, `@torch.inference_mode()`, or the loop under `with torch.no_grad():`),
        the loop calls a network its class was handed at construction (`self.net = net`
        in `__init__`, not a layer the class builds), in its body or a loop nested in it,
        on state the pass hands to the next (`v_pred = self.net(x_noisy, sigmas[i])`, then
        `x_noisy = alphas[i + 1] * x_pred + ...`). Such a forward trains nothing, so its
        loop is no part of one training step, and each pass runs the whole handed network
        on what the last pass made: a step of its own, as a sampler's. A recurrent unroll
        over the module's own cell (`h = self.cell(x[t], h)`), or a forward that keeps
        gradients (an unrolled refinement trained end to end), stays one step's graph."""
        node, function, class_def = site.node, site.function, site.class_def
        if function is None or class_def is None or not self._gradients_off(function, node):
            return False
        handed = _handed_attributes(class_def)
        return bool(handed) and self._feeds_handed(node, handed)

    def _feeds_handed(self, node: Loop, handed: frozenset[str]) -> bool:
        """A pass calls `self.<one of handed>` on state it hands to the next, in its own
        body or in a nested sweep that continues that state (`_continues`: the resample
        sweep of an inpainting step)."""
        carried = self.carried(node)
        for event in self.facts(node).events:
            call = getattr(event, "call", None)
            if (
                call is not None
                and isinstance(call.func, cst.Attribute)
                and isinstance(call.func.value, cst.Name)
                and call.func.value.value == "self"
                and call.func.attr.value in handed
                and event.inputs & carried  # type: ignore[union-attr]
            ):
                return True
        return any(
            self._continues(node, child) and self._feeds_handed(child, handed)
            for child in self.facts(node).child_loops
        )

    def _gradients_off(self, function: cst.FunctionDef, node: Loop) -> bool:
        """The loop runs with autograd off: its function is decorated `@torch.no_grad()`
        (or `@torch.inference_mode()`), or the loop sits in a `with` block of one."""
        if any(self._disables_grad(d.decorator) for d in function.decorators):
            return True
        return any(
            isinstance(block, cst.With)
            and any(self._disables_grad(item.item) for item in block.items)
            and any(inner is node for inner in descendants(block.body))
            for block in descendants(function.body)
        )

    def _disables_grad(self, expression: cst.BaseExpression) -> bool:
        target = expression.func if isinstance(expression, cst.Call) else expression
        return self.imports.resolve(target) in _GRADIENTS_OFF

    def _asked_steps(self, site: LoopSite) -> bool:
        """A loop in a per-step function that steps an optimizer on every pass, as many
        times as the caller asks: `def step(self, num_steps): for _ in range(num_steps):
        ... self.stepper.step(self, batch)`. The function runs a number of training steps,
        not one. A sweep over a count the function does not take (`for _ in
        range(self.n_critic)` in a `train_step`) stays part of the one step."""
        node, function = site.node, site.function
        if function is None or not _repeats(node) or not isinstance(node, cst.For):
            return False
        count = _range_bound(node)
        return (
            count is not None
            and parameter(function, count) is not None
            and count not in bound_names(function)
            and self.steps_optimizer(node)
            and not iterates_optimizers(node, self.facts(node))
        )

    def _optimizes_per_pass(self, site: LoopSite) -> bool:
        """A loop in a module's `forward` (or `__call__`) that takes a gradient step on
        every pass: an optimizer step (`cost.backward(); optimizer.step()`, an attack
        optimising its perturbation), or `torch.autograd.grad` of the pass's loss feeding
        what the loop hands to the next pass (`grad = torch.autograd.grad(cost, adv)[0]`,
        `adv = adv.detach() + alpha * grad.sign()`: `.detach()` cuts autograd's history,
        not the pending XLA graph). Each pass is a step of its own, not part of one
        forward's graph. Not a second-order inner loop (`create_graph=True`, as
        meta-learning adapts weights inside the outer step's graph), nor a `*_step`
        function's sweep (`for _ in range(self.n_critic)`: part of its one step). The loop
        may sit in a function nested in the forward (`def get_adv_examples(x):`), which
        runs there. Not in the forward of a part of another model of the module, which
        keeps an instance and calls it in its own forward (`self.attacker = Attacker(model)`,
        `adv = self.attacker(inp, target)` in `AttackerModel.forward`): the attack is the
        inner maximisation of that model's step, its barrier the batch loop's."""
        function = site.outer
        if function is None or function.name.value not in ("forward", "__call__"):
            return False
        if site.class_def is not None and self._part_of_a_forward(site.class_def):
            return False
        node = site.node
        facts = self.facts(node)
        if self.steps_optimizer(node) and not iterates_optimizers(node, facts):
            return True
        gradients: set[str] = set()
        updates: list[cst.Assign] = []
        for child in descendants(node.body):
            if type(child) is not cst.Assign:
                continue
            assign: cst.Assign = child  # type: ignore[assignment]
            grads = [
                call
                for call in descendants(assign.value)
                if type(call) is cst.Call  # type: ignore[comparison-overlap]
                and self.imports.resolve(call.func) == "torch.autograd.grad"  # type: ignore[attr-defined]
            ]
            if any(_second_order(call) for call in grads):  # type: ignore[arg-type]
                return False
            if grads:
                for target in assign.targets:
                    gradients |= target_names(target.target)
            else:
                updates.append(assign)
        carried = self.carried(node)
        return bool(gradients) and any(
            names_under(assign.value) & gradients
            and any(target_names(t.target) & carried for t in assign.targets)
            for assign in updates
        )

    def _solves_through_a_callable(self, site: LoopSite) -> bool:
        """Every model run of the pass is a call of a parameter annotated as a callable
        that returns a tensor (`matrix_vector_dot_fn: Callable[[Tensor], Tensor]`), and
        the state it hands on is not chosen from its results (`decodes`): an iterative
        solve (conjugate gradient over a Hessian-vector product), whose operator need be
        no network, not a search that picks elites by the callable's scores (`values.
        topk(n)` of `obj_fun(population)`, a planner's CEM)."""
        function = site.function
        if function is None:
            return False
        _, functions = self._handed_networks(function, site.class_def)
        callables = {name for name in functions if parameter(function, name) is not None}
        if not callables:
            return False
        runs = [e for e in self.facts(site.node).events if isinstance(e, _ModelCall)]
        return (
            bool(runs)
            and all(
                type(e.call.func) is cst.Name and e.call.func.value in callables  # type: ignore[attr-defined]
                for e in runs
            )
            and not self.decodes(site.node)
        )

    def _part_of_a_forward(self, class_def: cst.ClassDef) -> bool:
        """Another class of the module keeps an instance of `class_def` in an attribute
        (`self.attacker = Attacker(model, dataset)`) and calls it in its `forward` or
        `__call__` (`self.attacker(inp, target)`): `class_def`'s forward runs inside that
        forward, a part of its one step."""
        name = class_def.name.value
        for other in self.module.body:
            if type(other) is not cst.ClassDef or other is class_def:
                continue
            held: set[str] = set()
            callers: list[cst.FunctionDef] = []
            for method in other.body.body:  # type: ignore[attr-defined]
                if type(method) is not cst.FunctionDef:
                    continue
                if method.name.value in ("forward", "__call__"):  # type: ignore[attr-defined]
                    callers.append(method)  # type: ignore[arg-type]
                for node in descendants(method):
                    if (
                        type(node) is cst.Assign
                        and type(node.value) is cst.Call  # type: ignore[attr-defined]
                        and last_name(node.value.func) == name  # type: ignore[attr-defined]
                    ):
                        for target in node.targets:  # type: ignore[attr-defined]
                            t = target.target
                            if (
                                type(t) is cst.Attribute
                                and type(t.value) is cst.Name
                                and t.value.value == "self"
                            ):
                                held.add(t.attr.value)
            if held and any(
                type(node) is cst.Call
                and type(node.func) is cst.Attribute  # type: ignore[attr-defined]
                and type(node.func.value) is cst.Name  # type: ignore[attr-defined]
                and node.func.value.value == "self"  # type: ignore[attr-defined]
                and node.func.attr.value in held  # type: ignore[attr-defined]
                for caller in callers
                for node in descendants(caller)
            ):
                return True
        return False

    def _counts_tokens(self, site: LoopSite) -> bool:
        """A loop over as many passes as tokens to generate (`for i in
        range(max_new_tokens)`, `range(maxlen)`, `range(start, max_length)`) that runs the
        model on each pass, in its body or in a loop nested in it (`for state in
        decoder_states: logits = model(state.ids)`, one call per micro-batch), feeds it
        what the previous pass handed over, still pending on the device (its inputs, or
        the states the nested loop walks: `states = new_states`): a decoding loop,
        whatever objects carry the tokens (`State(ids=state.ids + [new])`). Its bound says
        each pass is one position of the output; without a barrier every position joins
        one graph. A host read of another value (an early stop's `if done.all().item():`)
        is no barrier; tokens brought back to the host (`ids = out.tolist()`) or copied
        whole (`ids.cpu()`, which leaves them as device data) carry nothing pending.
        Passes whose model runs on nothing carried (`logits[:, i] = head(x[:, i])`) are
        independent positions of one computation."""
        node = site.node
        if not isinstance(node, cst.For):
            return False
        iterated = unwrap_iteration(node.iter)
        if not (
            isinstance(iterated, cst.Call)
            and isinstance(iterated.func, cst.Name)
            and iterated.func.value == "range"
            and 1 <= len(iterated.args) <= 2
        ):
            return False
        bound = get_full_name_for_node(iterated.args[-1].value)
        if bound is None or _TOKEN_COUNT.match(bound.rsplit(".", 1)[-1]) is None:
            return False
        if not self._runs_model_per_pass(node):
            return False
        # What the model runs on comes from the previous pass, still pending: its inputs,
        # or the states a nested loop walks to run it (`for state in states:` with
        # `states` rebuilt).
        fed = set(self.model_state(node))
        for loop in self.facts(node).child_loops:
            if isinstance(loop, cst.For) and self._runs_model_per_pass(loop):
                fed |= names_under(loop.iter)
        return bool(self.pending(node) & fed)

    def _runs_model_per_pass(self, node: Loop) -> bool:
        facts = self.facts(node)
        return facts.model_calls > 0 or any(
            self._runs_model_per_pass(loop) for loop in facts.child_loops
        )

    def _accumulates_batches(self, site: LoopSite) -> bool:
        """A loop over a data loader that runs the model on each batch and keeps the
        results on the device, reading nothing on the host per pass: the forward of every
        batch joins one pending graph, executed when the total is read after the loop.
        So does a calibration pass, which drops the model's output (`model(images)` alone
        on its line: `dropped_runs`): the forward is run for the state it leaves in the
        model (statistics the hooks of a `with calibration_mode(model):` collect, norm
        layers' running means), carried from batch to batch on the device; not the
        function's call of itself (a recursion over a model's children, no network run).
        Chunks of one batch or rollout (`for mb in batch.split(n)`) are parts of a step."""
        node = site.node
        if not isinstance(node, cst.For):
            return False
        if not self.facts(node).model_calls:
            return self._accumulates_items(site)
        chunks = (
            not site.parents
            and _chunks(node, site.function)
            and not self.threads_cache(node)
            and not self._called_in_training(site.function)
        )
        if not (chunks or self._over_a_loader(site)):
            return False
        own_name = site.function.name.value if site.function is not None else None
        if not chunks and any(
            not (type(run.func) is cst.Name and run.func.value == own_name)
            for run in self.facts(node).dropped_runs
        ):
            # `with calibration_mode(model): for x, _ in loader: model(x.to(device))`: a
            # pass that drops the model's output runs it for the state the forward leaves
            # behind (observers' statistics, running means, a hook's sums or saved
            # activations), which every batch carries to the next on the device.
            return True
        appended = self.facts(node).appended
        return any(
            name not in appended or self._joined_in(site, name)
            for name in self.accumulated(node)
            if not self._numpy_buffer(site.function, name)
        )

    def _numpy_buffer(self, function: cst.FunctionDef | None, name: str) -> bool:
        """`y_pred = np.zeros_like(y).astype(float)` before the loop, then `y_pred[te_idx]
        = model_pred` in each pass: every binding of the name in the function makes a
        numpy array, and a write into one copies what it is given to the host (numpy
        reads the tensor's values): nothing stays pending on the device."""
        if function is None or "." in name:
            return False
        found = False
        for node in descendants(function.body):
            if type(node) is cst.AugAssign:
                if name in target_names(node.target):  # type: ignore[attr-defined]
                    return False
                continue
            if type(node) is not cst.Assign or not any(
                type(t.target) is cst.Name and t.target.value == name  # type: ignore[attr-defined]
                for t in node.targets  # type: ignore[attr-defined]
            ):
                if type(node) is cst.Assign and any(
                    name in target_names(t.target) and type(t.target) is not cst.Subscript
                    for t in node.targets  # type: ignore[attr-defined]
                ):
                    return False  # unpacked, or bound beside other names
                continue
            value = node.value  # type: ignore[attr-defined]
            # `np.zeros(n).astype(float)`, `np.empty(shape).reshape(-1, k)`: methods of the
            # array a numpy function made.
            while (
                type(value) is cst.Call
                and type(value.func) is cst.Attribute  # type: ignore[attr-defined]
                and type(value.func.value) is cst.Call  # type: ignore[attr-defined]
            ):
                value = value.func.value  # type: ignore[attr-defined]
            if type(value) is not cst.Call or not (
                self.imports.resolve(value.func) or ""  # type: ignore[attr-defined]
            ).startswith("numpy."):
                return False
            found = True
        return found

    def _accumulates_items(self, site: LoopSite) -> bool:
        """A loop over a data loader whose pass runs the model on each item of its batch
        in a nested loop (`for img, label in zip(batch.image, batch.gt_label): maps.append(
        model.get_maps(img))`) and keeps the results on the device for the next batch:
        the nested loop is part of one batch's pass, and every batch joins one graph."""
        node = site.node
        if not isinstance(node, cst.For) or not self._over_a_loader(site):
            return False
        items = target_names(node.target)
        for loop in self.facts(node).child_loops:
            if not isinstance(loop, cst.For) or not (names_under(loop.iter) & items):
                continue
            facts = self.facts(loop)
            if not facts.model_calls:
                continue
            if any(
                name not in facts.appended or self._joined_in(site, name)
                for name in self.accumulated(loop)
            ):
                return True
        return False

    def _joined_in(self, site: LoopSite, name: str) -> bool:
        """`_joined` in the loop's function, or in a function of this module it hands the
        list to (`self._get_quantiles_of_maps(maps)` running `torch.cat(maps)`), or of
        another module of the project (`gather_listed_dicts(results)` running
        `torch.cat([d[k] for d in dict_list])`, `module_steps.ModuleSteps.joins`)."""
        scope = site.function or self.module
        if _joined(scope, name):
            return True
        for call in descendants(scope):
            if type(call) is not cst.Call:
                continue
            positions = [
                i
                for i, arg in enumerate(call.args)  # type: ignore[attr-defined]
                if arg.keyword is None
                and not arg.star
                and type(arg.value) is cst.Name
                and arg.value.value == name
            ]
            if not positions:
                continue
            functions = self.resolve(call, site.class_def)  # type: ignore[arg-type]
            for function in functions:
                params = positional_names(function)
                if id(function) in self._method_classes and params[:1] in (["self"], ["cls"]):
                    params = params[1:]  # bound by the call's receiver
                if any(i < len(params) and _joined(function, params[i]) for i in positions):
                    return True
            if (
                not functions
                and self.other_modules is not None
                and any(self.other_modules.joins(call, i) for i in positions)  # type: ignore[arg-type]
            ):
                return True
        return False

    def _called_in_training(self, function: cst.FunctionDef | None) -> bool:
        """A function of this module that training code here calls: a function that runs
        backward or steps an optimizer, or holds a loop that does. Its chunks are then
        micro-batches of a training step, not an evaluation of their own."""
        if function is None:
            return False
        method = self._class_of(function) is not None
        for call_site in call_sites(self.module).named(function.name.value, method):
            caller = call_site.function
            if caller is None:
                continue
            if self.trains(caller) or any(
                loop.function is caller and self.trains(loop.node) for loop in self._sites.values()
            ):
                return True
        return False

    def _over_a_loader(self, site: LoopSite) -> bool:
        """The loop iterates a `DataLoader`, a value named like one, or data of any name
        whose items the pass moves to a device (`for theta, x in pairs: theta, x =
        theta.to(device), x.to(device)`): batches from the host, as a loader's are; not
        in a loop (the crops or views of one batch), nor a walk over a network's own
        parts (`model.named_modules()`: moving a layer is no batch) or over a sampler's
        schedule (`scheduler.timesteps`: a timestep is no batch), nor in a function
        training code of the module calls (parts of a training step)."""
        loader = self.iterated_loader(site)
        if loader is None:
            return False
        kind = self.wrapping(site, loader)
        return kind == Wrapping.DATALOADER or (
            kind == Wrapping.UNKNOWN
            and (
                loader_named(loader)
                or self._wraps_named(site, loader)
                or (
                    not site.parents
                    and not _walks_module_parts(loader)
                    and not _walks_a_schedule(loader)
                    and self.moves_batches(site)
                    and not self._called_in_training(site.function)
                )
            )
        )

    def _wraps_named(self, site: LoopSite, loader: cst.BaseExpression) -> bool:
        """A name the loop's function binds only to a progress bar or iterator around a
        value named like a loader: `tk0 = tqdm.tqdm(data_loader, desc=...)`, then `for i,
        x in enumerate(tk0):`."""
        if site.function is None or type(loader) is not cst.Name:
            return False
        values = [
            value
            for _, _, value in self._sources_of(site.function, site.class_def, loader.value)  # type: ignore[attr-defined]
        ]
        return bool(values) and all(
            (inner := unwrap_iteration(value)) is not value and loader_named(inner)
            for value in values
        )

    def _sub_step(self, node: Loop, trains: bool, infers: bool, parents: Sequence[Loop]) -> bool:
        """Part of the step of an enclosing loop: only `backward()` (accumulation, gradient
        guidance) inside a loop that trains or samples, or sampling passes that update the
        state the enclosing sampling loop carries (corrector sweeps, per-frame scheduler
        updates). A full sampling loop run on each pass of an outer loop (a chunk, a
        prompt) carries state of its own and is a step loop itself."""
        if trains and not infers and not self.steps_optimizer(node):
            return any(self.trains(parent) or self.infers(parent) for parent in parents)
        if trains and _repeats(node) and not self.facts(node).next_of:
            # `for real in loader: for _ in range(n_critic): <critic step>` then the
            # generator's step: the batch loop's pass is one training iteration, and a
            # sweep of steps over a repetition count, pulling no data, is part of it.
            parent = parents[0]  # the loop around it
            site = self._sites.get(id(parent))
            loader = self.iterated_loader(site) if site is not None else None
            if loader is not None and self.steps_optimizer(parent):
                kind = self.wrapping(site, loader)  # type: ignore[arg-type]
                if kind == Wrapping.DATALOADER or loader_named(loader):
                    return True
        if infers:
            state = self.model_state(node)
            return any(
                not self._holds_training(parent)
                and (
                    (self.infers(parent) and state & self.carried(parent))
                    or self._continues(parent, node)
                )
                for parent in parents
            )
        return False

    def _sweeps_state(self, node: Loop) -> bool:
        """A sampling loop whose model calls sit in a nested sweep: `for sigma in sigmas:
        for r in range(resample_times): images = step(unet(images, sigma))`. Each pass of
        `node` is one sampling step of the state it hands on; the sweep is part of it."""
        return any(self._continues(node, child) for child in self.facts(node).child_loops)

    def _continues(self, parent: Loop, child: Loop) -> bool:
        """`child`, a loop in `parent`'s body over a repetition count (`range(n)`, not
        data), feeds the model state that `parent` hands from pass to pass: `parent` does
        not assign it before the sweep. A prompt or chunk loop that starts each pass from
        new state (`x = torch.randn(...)` before the sweep) runs whole sampling loops."""
        if child not in self.facts(parent).child_loops or not _repeats(child):
            return False
        state = self.model_state(child)
        if not state:
            return False
        fresh = state & self.assigned_before(parent, child)
        return bool(state - fresh) or any(self._window_of_carried(parent, name) for name in fresh)

    def _window_of_carried(self, parent: Loop, window: str) -> bool:
        """`window = buffer[start : start + w]` before the sweep, and the sweep's results
        written back into `buffer` in place (`buffer[s:e, k] = window[0, r:, k]`), which the
        next pass slices again: the window is fresh, but the buffer it views is state
        `parent` hands from pass to pass (bark's fine-codebook windows, an inpainting
        sampler's overlapping tiles). A buffer the pass rebinds whole starts anew."""
        events, _ = self._state_events(parent)
        assigns = [e for e in events if isinstance(e, _Assign)]
        read_first = self.facts(parent).read_first
        for event in assigns:
            if window not in event.targets or event.from_model:
                continue
            for buffer in event.sources - {window}:
                writes = [e for e in assigns if buffer in e.targets]
                if (
                    buffer in read_first
                    and writes
                    and all(buffer in e.sources and not e.host for e in writes)
                    and any(window in e.sources for e in writes)
                ):
                    return True
        return False

    def _holds_training(self, node: Loop) -> bool:
        """A loop nested in `node`, at any depth, steps an optimizer on each pass."""

        def compute() -> bool:
            return any(
                self.steps_optimizer(loop) or self._holds_training(loop)
                for loop in self.facts(node).child_loops
            )

        return self._memoized("holds_training", node, False, compute)

    def _parent_syncs(self, parent: Loop) -> bool:
        site = self._sites.get(id(parent))
        return site is not None and self.syncs_per_pass(site)


_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})
# `nn.Module` methods that walk a network's own submodules, parameters or buffers.
_MODULE_PART_WALKS = frozenset(
    {
        "modules", "named_modules", "children", "named_children",
        "parameters", "named_parameters", "buffers", "named_buffers",
    }
)  # fmt: skip


def _walks_module_parts(iterated: cst.BaseExpression) -> bool:
    """`model.named_modules()`, `net.parameters()`, `model.state_dict().items()`: the
    loop walks a network's own layers, weights or buffers, as many passes as the network
    has parts. Moving such an item to a device (`m.to(model_device)` after packing a
    quantized layer) moves a layer, not a batch from the host: the walk is no data loader
    written by hand, however its passes use the model."""
    walks = _MODULE_PART_WALKS
    node = iterated
    if _method_call(node) in ("items", "values", "keys"):
        node, walks = node.func.value, frozenset({"state_dict"})  # type: ignore[attr-defined]
    return _method_call(node) in walks


# A diffusion sampler's schedule: `scheduler.timesteps`, `self.sigmas`, `timesteps[:n]`.
_SCHEDULE = re.compile(r"(^|_)(timesteps|sigmas)$", re.I)


def _walks_a_schedule(iterated: cst.BaseExpression) -> bool:
    """`for progress_id, timestep in enumerate(pipe.scheduler.timesteps)`: the loop walks
    a sampler's schedule of timesteps or noise levels. Moving its element to a device
    (`timestep.unsqueeze(0).to(device=pipe.device)`) moves a number the model is
    conditioned on, not a batch from the host: a loop over a schedule samples (judged
    by the state it carries) or sums a loss over timesteps, and is no data loader."""
    node = iterated
    while type(node) is cst.Subscript:
        node = node.value  # type: ignore[attr-defined]
    name = (get_full_name_for_node(node) or "").rsplit(".", 1)[-1]
    return _SCHEDULE.search(name) is not None


def _method_call(node: cst.BaseExpression) -> str | None:
    """The method `node` calls (`items` of `sd.items()`), or None."""
    if type(node) is cst.Call and type(node.func) is cst.Attribute:  # type: ignore[attr-defined]
        return node.func.attr.value  # type: ignore[attr-defined]
    return None


# A count of output positions: `max_new_tokens`, `maxlen`, `max_length`, `max_gen_len`,
# `max_decode_len`; not `max_steps` (a training or rollout bound), `num_layers`, `n`.
_TOKEN_COUNT = re.compile(
    r"^_*(max_?(new_|gen_|generation_|decode_|decoding_|output_|target_)?"
    r"(tokens|len|length|seq_len)|max_new_len|num_new_tokens|gen_len)$",
    re.I,
)


def _joined(scope: cst.Module | cst.FunctionDef, name: str) -> bool:
    """`torch.cat(outs)`: the list's tensors are joined into one in `scope`, which
    computes every batch's results in one graph (read one by one, each would execute
    only its own batch's)."""
    for node in descendants(scope):
        if type(node) is cst.Call and node.args:  # type: ignore[comparison-overlap]
            call: cst.Call = node  # type: ignore[assignment]
            first = call.args[0].value
            if (
                (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1] in _JOINS
                and isinstance(first, cst.Name | cst.Attribute)
                and get_full_name_for_node(first) == name
            ):
                return True
    return False


def _second_order(call: cst.Call) -> bool:
    """`torch.autograd.grad(loss, params, create_graph=True)`: the gradient joins the graph
    of a step that differentiates again."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "create_graph":
            value = arg.value
            return not (type(value) is cst.Name and value.value == "False")
    return False


_GRADIENTS_OFF = frozenset({"torch.no_grad", "torch.inference_mode"})


def _handed_attributes(class_def: cst.ClassDef) -> frozenset[str]:
    """The attributes a class's `__init__` binds, in its own body, to one of its
    parameters as given (`self.net = net`): objects handed in at construction."""
    init = next(
        (
            s
            for s in class_def.body.body
            if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"
        ),
        None,
    )
    if init is None:
        return frozenset()
    params = {p.name.value for p in parameters(init)} - {"self"}
    found: set[str] = set()
    for statement in init.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and isinstance(small.value, cst.Name)
                and small.value.value in params
            ):
                for target in small.targets:
                    t = target.target
                    if (
                        isinstance(t, cst.Attribute)
                        and isinstance(t.value, cst.Name)
                        and t.value.value == "self"
                    ):
                        found.add(t.attr.value)
    return frozenset(found)


def _repeats(node: Loop) -> bool:
    """`for r in range(n)`, `for r in reversed(range(n))`: a count of repetitions, not
    data (a loop over batches is a step loop of its own)."""
    if not isinstance(node, cst.For):
        return False
    iterated = unwrap_iteration(node.iter)
    while isinstance(iterated, cst.Call) and get_full_name_for_node(iterated.func) == "reversed":
        if not iterated.args:
            return False
        iterated = iterated.args[0].value
    return (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value == "range"
    )


def _chunks(node: cst.For, function: cst.FunctionDef | None) -> bool:
    """`for s in range(0, len(x), bs): model(x[s : s + bs])`: the loop walks an input in
    strides of a step and slices it at the loop's value, one chunk per pass, as a loader
    walks a dataset in batches. The strides may be bound to a name first (`batch_range =
    range(0, n, batch_size)`, then `for batch_start in batch_range:`), and the chunk
    taken by the indices of the loop's value (`torch.arange(batch_start, batch_end)`).
    A loop over a count of batches walks the input the same way where both ends of its
    slice are offsets the pass computes as a multiple of its index (`for k in
    range(n_batches): x[k * bs : (k + 1) * bs]`, also through names the pass binds to
    them first, `start = k * bs`, `end = min(start + bs, n)`); an index merely used in a
    slice (`x[:, i]`, `h[i : i + 2]`) picks rows, not a batch."""
    iterated = unwrap_iteration(node.iter)
    if type(iterated) is cst.Name and function is not None:
        values = local_values(function, iterated.value)  # type: ignore[attr-defined]
        iterated = values[0] if len(values) == 1 else iterated
    if not (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value == "range"
        and 1 <= len(iterated.args) <= 3
        and isinstance(node.target, cst.Name)
    ):
        return False
    start = node.target.value
    if len(iterated.args) < 3:
        return _batches_by_count(node, start)
    for part in descendants(node.body):
        if type(part) is cst.Slice:  # type: ignore[comparison-overlap]
            bounds = (part.lower, part.upper)  # type: ignore[attr-defined]
        elif type(part) is cst.Call and last_name(part.func) == "arange":  # type: ignore[comparison-overlap,attr-defined]
            bounds = tuple(arg.value for arg in part.args[:2])  # type: ignore[attr-defined]
        else:
            continue
        if any(bound is not None and start in names_under(bound) for bound in bounds):
            return True
    return False


def _batches_by_count(node: cst.For, index: str) -> bool:
    """`for k in range(n_batches): x[k * bs : (k + 1) * bs]`: both ends of a slice (or of
    `torch.arange`) are multiples of the pass's index, one batch a pass."""
    offsets: set[str] = set()

    def is_offset(expr: cst.BaseExpression) -> bool:
        if type(expr) is cst.Name:
            return expr.value in offsets
        for part in (expr, *descendants(expr)):
            if type(part) is cst.Name and part.value in offsets:
                return True
            if (
                type(part) is cst.BinaryOperation
                and type(part.operator) is cst.Multiply
                and (index in names_under(part.left) or index in names_under(part.right))
            ):
                return True
        return False

    parts = list(descendants(node.body))
    for part in parts:
        if (
            type(part) is cst.Assign
            and len(part.targets) == 1
            and type(part.targets[0].target) is cst.Name
            and is_offset(part.value)
        ):
            offsets.add(part.targets[0].target.value)
    for part in parts:
        if type(part) is cst.Slice:
            bounds = (part.lower, part.upper)
        elif type(part) is cst.Call and last_name(part.func) == "arange" and len(part.args) >= 2:
            bounds = (part.args[0].value, part.args[1].value)
        else:
            continue
        if all(bound is not None and is_offset(bound) for bound in bounds):
            return True
    return False


def _range_bound(node: cst.For) -> str | None:
    """`n` in `for _ in range(n)`: the one name a repetition count runs to."""
    iterated = unwrap_iteration(node.iter)
    if not isinstance(iterated, cst.Call) or len(iterated.args) != 1:
        return None
    bound = iterated.args[0].value
    return bound.value if isinstance(bound, cst.Name) else None


def _iterates_a_literal(node: Loop) -> bool:
    """`for mode in ["local", "remote"]:`, `for lr in (0.1, 0.01):`: a sweep over a few
    settings, each of which runs its own steps."""
    return isinstance(node, cst.For) and isinstance(
        unwrap_iteration(node.iter), cst.List | cst.Tuple | cst.Set
    )


def _rebinding_calls(block: cst.BaseSuite) -> list[tuple[cst.Call, str]]:
    """`x = f(...)` statements a pass runs itself (not in its nested loops or
    definitions): each call with the one name it rebinds."""
    return [
        (node.value, node.targets[0].target.value)
        for node in descendants(block, _NOT_THE_PASS_OWN)
        if type(node) is cst.Assign
        and len(node.targets) == 1
        and type(node.targets[0].target) is cst.Name
        and type(node.value) is cst.Call
    ]


# What a pass does not run itself: nested definitions and the passes of its nested loops.
_NOT_THE_PASS_OWN = NOT_OWN | {cst.For, cst.While}


@lint_memo.memo(64)
def _hands_back_gradient_step(function: cst.FunctionDef) -> bool:
    """A function of this module that runs backward and returns a value it updated from
    the gradient (`module_steps.grad_step_of`, read from its source)."""
    try:
        tree = ast.parse(cst.Module(body=[]).code_for_node(function))
    except SyntaxError:
        return False
    node = tree.body[0] if tree.body else None
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and grad_step_of(node)


@lint_memo.memo(64)
def _hands_back_noisy_step(function: cst.FunctionDef) -> bool:
    """A function that calls a callable it is handed (one of its parameters: the denoiser
    `fn`) and hands back, on its every `return` of a value, something computed from fresh
    device noise it draws (`x_next = x + torch.randn_like(x) * sigma_up`; `epsilon =
    torch.randn_like(x)` before `x_hat = x + s * epsilon` and `x_next = x_hat + ...`):
    one step of a stochastic sampler."""
    try:
        tree = ast.parse(cst.Module(body=[]).code_for_node(function))
    except SyntaxError:
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    params = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    params.discard("self")
    own = list(_own_nodes(node))
    if not any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in params
        for n in own
    ):
        return False
    assigns = sorted(
        (n for n in own if isinstance(n, ast.Assign | ast.AugAssign)), key=lambda n: n.lineno
    )
    noisy: set[str] = set()
    for _ in range(2):
        for assign in assigns:
            value_names = {n.id for n in ast_nodes.walk(assign.value) if isinstance(n, ast.Name)}
            draws = any(
                isinstance(n, ast.Call) and _callee_name(n.func) in _NOISE
                for n in ast_nodes.walk(assign.value)
            )
            targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
            names = {n.id for t in targets for n in ast_nodes.walk(t) if isinstance(n, ast.Name)}
            if draws or value_names & noisy:
                noisy |= names
    returns = [n for n in own if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all(
        any(isinstance(n, ast.Name) and n.id in noisy for n in ast_nodes.walk(r.value))
        or any(
            isinstance(n, ast.Call) and _callee_name(n.func) in _NOISE
            for n in ast_nodes.walk(r.value)
        )
        for r in returns
        if r.value is not None
    )


def _callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `function`'s body, not those of the definitions nested in it (their
    bodies run elsewhere)."""
    stack = list(ast_nodes.child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast_nodes.child_nodes(node))
