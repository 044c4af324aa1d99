"""Which code runs once per epoch, not once per step.

A function that runs its own loop over batches (`train_one_epoch(model, loader, opt)`) is
an epoch function: only the body of that loop runs per step, while the code before and
after it runs once per call. The same holds for an epoch loop around a batch loop: its body
outside the batch loop runs once per epoch. Accumulating on the device inside the batch
loop and reading the total once after it is what the torch_xla docs recommend, so a read
there must not be reported as a per-step cost. Any other loop in an epoch function (a
sampling loop after training, a sweep over stages) still runs its body on every pass,
except, inside an epoch loop, a loop of fixed passes (over a collection the trainer holds,
`step_passes.StepPasses.fixed_in_an_epoch`) that trains, samples and pulls nothing: its
few passes run once per epoch.

A function also runs its batch loop when it calls one that does: of the module, a method
of its class, or a function defined in its own body (`def _extract(data_loader): ...`).

A loop is a batch loop when it iterates a data loader (`for x, y in loader`, through
`enumerate`/`tqdm`/`iter`, or over its positions, taking `self.dataset[i]` on each pass,
whoever defines the update it hands the batch to), pulls batches with `next()` from one,
runs the model on items it takes from a queue a producer fills (`queue = Queue(maxsize=2)`,
then `item = queue.get()` and the network on it, as sliding-window inference runs its
tiles: the code after the loop runs once per image, not per tile), or runs a whole training
step (an optimizer step, itself or in a function it calls) on every pass. A loop whose body
only yields (`for item in train_data: yield item`) hands each item to its consumer, where
the step runs: it is no batch loop, whatever it iterates. A loop over
layers, chunks or micro-batches that only calls a model or `backward()` is not: it is part
of a step. A function whose own body (outside its loops) runs backward and steps an
optimizer is itself one step (ignite's `_iteration(engine, batch)` of a GAN trainer, with
a loop of discriminator updates before the generator's): none of its code is per epoch.
So is each pass of a loop whose own body runs backward and steps an optimizer (an RL
script's `for global_step in ...` with a critic update every pass and a loop of delayed
policy updates inside): its code runs every step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst

from xlalint.analysis.arguments import parameters
from xlalint.analysis.guards import local_values
from xlalint.analysis.handed_functions import positional_parameters
from xlalint.analysis.intervals import sparse_test
from xlalint.analysis.loop_facts import BodyFacts, iterates_optimizers, unwrap_iteration
from xlalint.walk import EXPRESSIONS, code_children, descendants, last_name, target_names

# What a data loader is called: `loader`, `train_dataloader`, `dl`, `val_ds`, `dataset`,
# `train_data`. Not `batches`/`chunks`: those are often the micro-batches of one step.
_LOADER_NAME = re.compile(r"loader|(^|_)dl$|(^|_)ds$|(^|_)data(set)?$|^dataset", re.I)
# A queue's class: `queue.Queue`, `SimpleQueue`, `multiprocessing`'s `JoinableQueue`.
_QUEUE_CLASS = re.compile(r"Queue$")
_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_LOOPS = frozenset({cst.For, cst.While})
# The hand-written walks below skip whitespace and punctuation (`code_children`) and test
# exact types: `isinstance` on libcst's abstract classes runs ABCMeta's check in Python.


def loader_named(expr: cst.BaseExpression) -> bool:
    """`loader`, `self.train_loader`, `loaders["train"]`, `trainer.get_train_dataloader()`."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        else:
            break
    if isinstance(expr, cst.Name):
        name = expr.value
    elif isinstance(expr, cst.Attribute):
        name = expr.attr.value
    else:
        return False
    return _LOADER_NAME.search(name) is not None


def takes_a_loader(function: cst.CSTNode) -> bool:
    """`def fit(self, data_loader: DataLoader)`: a parameter named or annotated as a data
    loader; one call of the function runs a whole pass over the data."""
    if type(function) is not cst.FunctionDef:
        return False
    for param in function.params.params:
        annotation = param.annotation.annotation if param.annotation is not None else None
        if loader_named(param.name) or (annotation is not None and loader_named(annotation)):
            return True
    return False


def walks_a_loader(loop: cst.CSTNode, function: cst.FunctionDef | None) -> bool:
    """`for batch in self.valid_dataloader`, over a loader's positions (`_indexes_loader`),
    or over a name that `function` only ever binds to loaders (`batches = tqdm(val_loader)`):
    each pass takes a new batch, whatever calls the function or guards the loop."""
    if type(loop) is not cst.For:
        return False
    iterable = unwrap_iteration(loop.iter)  # type: ignore[attr-defined]
    if loader_named(iterable) or _indexes_loader(loop):  # type: ignore[arg-type]
        return True
    if type(iterable) is not cst.Name or function is None:
        return False
    values = local_values(function, iterable.value)
    return bool(values) and all(loader_named(unwrap_iteration(v)) for v in values)


def _indexes_loader(loop: cst.For) -> bool:
    """`for i in range(len(self.dataset)): step(self.dataset[i])`: a loop over the
    positions of a loader-named collection that takes its item at the loop's index on each
    pass walks that loader as `for batch in self.dataset` would."""
    iterable = loop.iter
    if not (
        isinstance(iterable, cst.Call)
        and isinstance(iterable.func, cst.Name)
        and iterable.func.value == "range"
        and len(iterable.args) == 1
        and isinstance(iterable.args[0].value, cst.Call)
    ):
        return False
    sized = iterable.args[0].value
    if not (
        isinstance(sized.func, cst.Name)
        and sized.func.value == "len"
        and len(sized.args) == 1
        and loader_named(sized.args[0].value)
        and isinstance(loop.target, cst.Name)
    ):
        return False
    collection, index = sized.args[0].value, loop.target.value
    return any(
        type(node) is cst.Subscript
        and node.value.deep_equals(collection)  # type: ignore[attr-defined]
        and len(node.slice) == 1  # type: ignore[attr-defined]
        and isinstance(node.slice[0].slice, cst.Index)  # type: ignore[attr-defined]
        and isinstance(node.slice[0].slice.value, cst.Name)  # type: ignore[attr-defined]
        and node.slice[0].slice.value.value == index  # type: ignore[attr-defined]
        for node in descendants(loop.body)
    )


# What a hyperparameter search or a cross-validation loops over: each pass trains a model.
_RUNS_NAME = re.compile(r"trial|fold", re.I)


def _over_runs(loop: cst.For) -> bool:
    """`for i in range(number_of_trials)`, `for fold in folds`, `for trial in study`: each
    pass is a whole training run (its objective trains), so the code in it runs once per
    run."""
    names = [*target_names(loop.target)]
    iterable = unwrap_iteration(loop.iter)
    for node in (iterable, *descendants(iterable)):
        if isinstance(node, cst.Name):
            names.append(node.value)
        elif isinstance(node, cst.Attribute):
            names.append(node.attr.value)
    return any(_RUNS_NAME.search(name) for name in names)


# What a step's loop over its optimizers (or their schedulers) iterates.
_OPTIMIZERS_NAME = re.compile(r"optim|scheduler", re.I)


def _hands_on(loop: cst.For) -> bool:
    """`for state, action in train_data: yield state, action`: a loop whose body only
    yields hands each item on to its consumer, where the step runs (a generator feeding a
    dataset); it is no batch loop, whatever it iterates."""
    body = loop.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return bool(statements) and all(
        isinstance(statement, cst.SimpleStatementLine | cst.SimpleStatementSuite)
        and all(
            isinstance(small, cst.Expr) and isinstance(small.value, cst.Yield)
            for small in statement.body
        )
        for statement in statements
    )


def _over_optimizers(loop: cst.For) -> bool:
    """`for opt in self.optimizers`, `for opt in valid_optimizers.values()`: a loop that
    steps each optimizer of one training step, not a loop of steps."""
    iterable = unwrap_iteration(loop.iter)
    while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute):
        if iterable.func.attr.value not in ("values", "items"):
            return False
        iterable = iterable.func.value
    name = last_name(iterable)
    return name is not None and _OPTIMIZERS_NAME.search(name) is not None


def _nested_loops(loop: cst.For | cst.While) -> list[cst.For | cst.While]:
    """The loops in `loop`'s body, at any depth, outside nested definitions, but loops over
    the optimizers (`for opt in optimizers: scaler.step(opt)` steps each once: part of
    this pass's step, not a batch loop inside it)."""
    found: list[cst.For | cst.While] = []
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _SCOPES or kind in EXPRESSIONS:
            continue
        if kind in _LOOPS and not iterates_optimizers(node):  # type: ignore[arg-type]
            found.append(node)  # type: ignore[arg-type]
        stack.extend(code_children(node))
    return found


# Statements and parts of definitions no class statement can sit in.
_NO_CLASSES = frozenset({cst.SimpleStatementLine, cst.Parameters, cst.Decorator})


def _methods_by_class(module: cst.Module | None) -> dict[int, dict[str, cst.FunctionDef]]:
    """Each method of the module's classes (nested ones too), by id, with its class's
    methods by name: one walk of the statements, skipping expressions."""
    siblings: dict[int, dict[str, cst.FunctionDef]] = {}
    stack: list[cst.CSTNode] = [module] if module is not None else []
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in EXPRESSIONS or kind in _NO_CLASSES:
            continue
        if kind is cst.ClassDef and type(node.body) is cst.IndentedBlock:  # type: ignore[attr-defined]
            methods = {
                s.name.value: s
                for s in node.body.body  # type: ignore[attr-defined]
                if type(s) is cst.FunctionDef
            }
            for method in methods.values():
                siblings[id(method)] = methods
        stack.extend(code_children(node))
    return siblings


class Epochs:
    """Answers, after the walk, whether a place in a function runs per epoch."""

    def __init__(
        self,
        facts: Callable[[cst.For | cst.While], BodyFacts],
        module: cst.Module | None = None,
        steps_optimizer: Callable[[cst.For | cst.While], bool] | None = None,
        function_of: Callable[[cst.For | cst.While], cst.FunctionDef | None] | None = None,
        fixed_passes: Callable[[cst.For | cst.While], bool] | None = None,
        accumulates: Callable[[cst.CSTNode], bool] | None = None,
        sparse: Callable[[cst.CSTNode], bool] | None = None,
    ) -> None:
        self._facts = facts  # `LoopAnalysis.facts`: what one pass of a loop does
        # `StepPasses.fixed_in_an_epoch`: the loop's passes are fixed (a collection the
        # trainer holds) and none trains, samples or pulls a batch.
        self._fixed_passes = fixed_passes or (lambda loop: False)
        # `LoopAnalysis.accumulates_then_steps`: the body steps the optimizer after loops
        # of micro-batches that run backward (gradient accumulation), one step a call.
        self._accumulates = accumulates or (lambda scope: False)
        # The context's branches taken once every many passes or once (`if time %
        # update_timesteps == 0:`, `intervals.py`): a loop that runs a training phase only
        # there is no epoch loop.
        self._sparse = sparse or (lambda node: False)
        # `LoopAnalysis.steps_optimizer`: a pass steps an optimizer, here or in a function
        # it calls (`self._fit_batch(x, y)`).
        self._steps_optimizer = steps_optimizer
        # The innermost function around a loop, as the walk recorded it (`LoopSite`).
        self._function_of = function_of or (lambda loop: None)
        self._batch: dict[int, bool] = {}
        self._holds_batch: dict[int, bool] = {}  # `holds_batch_loop`
        self._holds_step: dict[int, bool] = {}  # `_holds_stepping_loop`
        self._holds_training: dict[int, bool] = {}  # `runs_training`
        self._holds_loader_training: dict[int, bool] = {}  # `runs_training(over_a_loader)`
        self._calls_params: dict[int, frozenset[str]] = {}  # `_called_parameters`
        self._locals: dict[int, dict[str, cst.FunctionDef]] = {}  # `_local_functions`
        # The module's top-level functions: an epoch loop may run its batch loop in one
        # (`for epoch in ...: train(epoch)`, the classic examples' shape).
        self._functions = {
            s.name.value: s
            for s in (module.body if module else ())
            if isinstance(s, cst.FunctionDef)
        }
        # Each method of the module's classes, by id, with its class's methods by name: a
        # method may run its batch loop in another (`self._train_epoch(loader)`).
        self._module = module
        self._siblings: dict[int, dict[str, cst.FunctionDef]] | None = None

    def is_batch_loop(self, loop: cst.For | cst.While) -> bool:
        """One pass of `loop` is one step: it iterates a loader, takes `next()` of one, or
        steps an optimizer (itself or in a function it calls) without holding a loop that
        steps one on every pass: an epoch loop may step once more after its batch loop
        (the leftover step of gradient accumulation). A loop over the optimizers is part
        of the step around it, not a batch loop."""
        cached = self._batch.get(id(loop))
        if cached is None:
            if iterates_optimizers(loop, self._facts(loop)):
                cached = False  # one step of each optimizer: part of the enclosing step
            elif isinstance(loop, cst.For) and _hands_on(loop):
                cached = False  # `for item in train_data: yield item`: the consumer steps
            elif isinstance(loop, cst.For) and self._iterates_loader(loop):
                cached = True
            elif isinstance(loop, cst.For) and _over_optimizers(loop):
                cached = False  # `for opt in optimizers.values(): scaler.step(opt)`: one step
            else:
                facts = self._facts(loop)
                cached = (
                    any(loader_named(unwrap_iteration(arg)) for arg in facts.next_of)
                    or (facts.model_calls > 0 and self._pulls_from_queue(loop, facts))
                ) or (
                    self._steps(loop)
                    and not any(self._steps(n) for n in _nested_loops(loop))
                    and not self._holds_stepping_loop(loop)
                )
            self._batch[id(loop)] = cached
        return cached

    def _pulls_from_queue(self, loop: cst.For | cst.While, facts: BodyFacts) -> bool:
        """The pass takes its item from a queue its function made (`queue = Queue(...)`,
        `mp.Queue()`, `ctx.JoinableQueue()`; then `item = queue.get()`): a producer
        (a thread, a process) feeds it the data, one item per pass."""
        function = self._function_of(loop)
        if function is None:
            return False
        for receiver in facts.pulled_from:
            if type(receiver) is not cst.Name:
                continue
            values = local_values(function, receiver.value)
            if values and all(
                type(v) is cst.Call and _QUEUE_CLASS.search(last_name(v.func) or "")  # type: ignore[attr-defined]
                for v in values
            ):
                return True
        return False

    def _iterates_loader(self, loop: cst.For) -> bool:
        """`for x in loader`, or over a name that its function only ever binds to loaders
        (`batches = tqdm(val_loader) if primary else val_loader`, in two statements) where
        no loop inside steps an optimizer (a loader of corpus splits, each trained on in
        windows, yields epochs' worth of steps)."""
        iterable = unwrap_iteration(loop.iter)
        if loader_named(iterable) or _indexes_loader(loop):
            return True
        if not isinstance(iterable, cst.Name):
            return False
        function = self._function_of(loop)
        if function is None:
            return False
        values = local_values(function, iterable.value)
        return (
            bool(values)
            and all(loader_named(unwrap_iteration(v)) for v in values)
            and not any(self._steps(n) for n in _nested_loops(loop))
        )

    def _steps(self, loop: cst.For | cst.While) -> bool:
        """A pass of `loop` steps an optimizer, itself or in a function it calls."""
        if self._facts(loop).steps_optimizer:
            return True
        return self._steps_optimizer is not None and self._steps_optimizer(loop)

    def holds_batch_loop(self, scope: cst.CSTNode) -> bool:
        """A batch loop runs somewhere in `scope`'s body (not in a nested definition), or
        in a top-level function of the module that it calls (`train(epoch)`), or in a
        function that a call hands to this module's function for it to run
        (`self._with_events(self._do_epoch, "epoch")` where `_with_events` calls its `f`),
        or `scope` is a loop over trials or folds (a whole training run per pass)."""
        if isinstance(scope, cst.For) and _over_runs(scope):
            return True
        return self._holds(scope, self._holds_batch, self.is_batch_loop)

    def runs_training(self, function: cst.CSTNode, over_a_loader: bool = False) -> bool:
        """The function's body holds a batch loop that steps an optimizer on every pass
        (itself or through a function it calls), and the function is no training step of
        its own (`_one_step`): it is a training run, whatever its name says. A trainer
        module's `forward` (`trainer()` runs `while step < num_train_steps:` with a
        backward and an optimizer step per pass) reads `self.step.item()` once before its
        loop; its loops are not parts of one step, as a model's `forward` loops are.
        With `over_a_loader`, the batch loop must walk a loader (`for batch in dl:`,
        `next()` of one): a pass over many batches, which no step of a caller's loop
        holds, not an attack's `for _ in range(steps)` optimizing the inputs it is
        handed."""
        if type(function) is not cst.FunctionDef or self._one_step(function):
            return False
        if over_a_loader:
            return self._holds(function, self._holds_loader_training, self._trains_over_loader)
        return self._holds(function, self._holds_training, self._trains_per_pass)

    def _trains_over_loader(self, loop: cst.For | cst.While) -> bool:
        """A loop over a loader whose passes step an optimizer."""
        if not self._trains_per_pass(loop):
            return False
        if isinstance(loop, cst.For) and self._iterates_loader(loop):
            return True
        return any(loader_named(unwrap_iteration(arg)) for arg in self._facts(loop).next_of)

    def _trains_per_pass(self, loop: cst.For | cst.While) -> bool:
        """A batch loop whose passes step an optimizer (not a loop over the optimizers
        of one step)."""
        return self._steps(loop) and self.is_batch_loop(loop)

    def _holds_stepping_loop(self, scope: cst.CSTNode) -> bool:
        """A loop that steps an optimizer on each pass runs in `scope`'s body or in a
        function it calls or hands to be run, as `holds_batch_loop` follows them: a loop
        whose steps happen in there is an epoch loop, not a batch loop."""
        return self._holds(scope, self._holds_step, self._steps)

    def _holds(
        self,
        scope: cst.CSTNode,
        memo: dict[int, bool],
        inner: Callable[[cst.For | cst.While], bool],
    ) -> bool:
        """A loop for which `inner` holds runs in `scope`'s body (not in a nested
        definition, nor `scope` itself) or in this module's functions it calls."""
        cached = memo.get(id(scope))
        if cached is None:
            memo[id(scope)] = False  # a function that calls itself
            cached = False
            body = scope.body if isinstance(scope, cst.FunctionDef | cst.For | cst.While) else scope
            methods = self._callables_beside(scope)
            stack: list[cst.CSTNode] = [body]
            in_loop = type(scope) in _LOOPS
            while stack:
                node = stack.pop()
                kind = type(node)
                if kind in _SCOPES:
                    continue
                if in_loop and kind is cst.If and self._sparse_branch(node, scope):  # type: ignore[arg-type]
                    stack.extend(self._outside_the_branch(node))  # type: ignore[arg-type]
                    continue
                if kind in _LOOPS and inner(node):  # type: ignore[arg-type]
                    cached = True
                    break
                if kind in EXPRESSIONS:
                    # Loops are statements; comprehensions are not batch loops.
                    if self._calls_holder(node, methods, memo, inner):  # type: ignore[arg-type]
                        cached = True
                        break
                    continue
                stack.extend(code_children(node))
            memo[id(scope)] = cached
        return cached

    def _sparse_branch(self, node: cst.If, loop: cst.For | cst.While) -> bool:
        """A branch of `loop`'s body taken once every many passes: one the walk judged so
        (the context's sparse branches: intervals, first passes, counters reset), or an
        interval test by its shape (`intervals.sparse_test`: `time % update_timesteps ==
        0`, a local flag holding one), which holds before the walk reaches the branch."""
        if self._sparse(node):
            return True
        if self._module is None:
            return False
        function = self._function_of(loop)
        return sparse_test(node.test, function, self._class_holding(function), self._module)

    @staticmethod
    def _outside_the_branch(node: cst.If) -> list[cst.CSTNode]:
        """What of a branch taken once every many passes runs on the other passes: its
        test and its `else`. A loop whose passes run a training phase only there (PPO's
        `if time % update_timesteps == 0: self.learn(memories)` after each rollout step)
        is no epoch loop: each of its passes is a step of its own (a rollout step that
        samples), and the phase's batch loop steps in its own passes."""
        return [node.test] + ([node.orelse] if node.orelse is not None else [])

    def _callables_beside(self, scope: cst.CSTNode) -> dict[str, cst.FunctionDef]:
        """What a call in `scope` may run of this file: the methods beside it in its
        class (`_methods_beside`) and the functions defined in its function (keyed
        `"\0name"`, apart from methods of the same name)."""
        methods = self._methods_beside(scope)
        local = self._local_functions(scope)
        if local:
            methods = {**methods, **{f"\0{name}": f for name, f in local.items()}}
        return methods

    def calls_a_holder(
        self,
        loop: cst.For | cst.While,
        memo: dict[int, bool],
        inner: Callable[[cst.For | cst.While], bool],
    ) -> bool:
        """A call in `loop`'s body (not in a nested loop or definition) runs a function
        of this module, or a method of the loop's class, that holds a loop for which
        `inner` holds (`memo`: the caller's, one per `inner`)."""
        methods = self._callables_beside(loop)
        stack: list[cst.CSTNode] = [loop.body]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in _SCOPES or kind in _LOOPS:
                continue
            if kind is cst.If and self._sparse_branch(node, loop):  # type: ignore[arg-type]
                stack.extend(self._outside_the_branch(node))  # type: ignore[arg-type]
                continue
            if kind in EXPRESSIONS:
                if self._calls_holder(node, methods, memo, inner):  # type: ignore[arg-type]
                    return True
                continue
            stack.extend(code_children(node))
        return False

    def _calls_holder(
        self,
        expression: cst.BaseExpression,
        methods: dict[str, cst.FunctionDef],
        memo: dict[int, bool],
        inner: Callable[[cst.For | cst.While], bool],
    ) -> bool:
        """`train(args, model, epoch)` or `self._run_epoch(loader)`: a call of a top-level
        function, or of a method of the caller's class (`methods`), that holds such a loop
        (not inside a lambda, which may never run), or that runs a function handed to it
        which does. A helper that runs its own loop over a loader is an epoch function,
        and so is one that calls it: what it does after the call runs once per pass over
        the data."""
        if not self._functions and not methods:
            return False
        stack: list[cst.CSTNode] = [expression]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Lambda:
                continue
            if kind is cst.Call:
                call: cst.Call = node  # type: ignore[assignment]
                function = self._callee(call.func, methods)
                if function is not None and (
                    self._holds(function, memo, inner)
                    or self._runs_handed(call, function, methods, memo, inner)
                ):
                    return True
            stack.extend(code_children(node))
        return False

    def _runs_handed(
        self,
        call: cst.Call,
        function: cst.FunctionDef,
        methods: dict[str, cst.FunctionDef],
        memo: dict[int, bool],
        inner: Callable[[cst.For | cst.While], bool],
    ) -> bool:
        """`self._with_events(self._do_epoch, "epoch")` where `_with_events(self, f, ...)`
        calls `f()`: the call runs the function it is handed, which holds such a loop."""
        method = isinstance(call.func, cst.Attribute)
        for position, arg in enumerate(call.args):
            if arg.star:
                return False  # which argument lands where is unknown
            handed = (
                self._callee(arg.value, methods) if not isinstance(arg.value, cst.Call) else None
            )
            if handed is None or not self._holds(handed, memo, inner):
                continue
            if arg.keyword is not None:
                parameter: str | None = arg.keyword.value
            else:
                positional = positional_parameters(function, method)
                parameter = positional[position] if position < len(positional) else None
            if parameter is not None and parameter in self._called_parameters(function):
                return True
        return False

    def _called_parameters(self, function: cst.FunctionDef) -> frozenset[str]:
        """The parameters `function` calls (`f()`, `step_fn(batch)`), outside nested
        definitions; one walk of its body, cached."""
        cached = self._calls_params.get(id(function))
        if cached is None:
            names = {p.name.value for p in parameters(function)}
            called: set[str] = set()
            stack: list[cst.CSTNode] = [function.body]
            while stack:
                node = stack.pop()
                kind = type(node)
                if kind in _SCOPES or kind is cst.Lambda:
                    continue
                if kind is cst.Call:
                    func = node.func  # type: ignore[attr-defined]
                    if type(func) is cst.Name and func.value in names:
                        called.add(func.value)
                stack.extend(code_children(node))
            cached = self._calls_params[id(function)] = frozenset(called)
        return cached

    def _callee(
        self, func: cst.BaseExpression, methods: dict[str, cst.FunctionDef]
    ) -> cst.FunctionDef | None:
        """The module's function `f` of `f(...)`, or the method of `self.f(...)`."""
        if isinstance(func, cst.Name):
            return methods.get(f"\0{func.value}") or self._functions.get(func.value)
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return methods.get(func.attr.value)
        return None

    def _local_functions(self, scope: cst.CSTNode) -> dict[str, cst.FunctionDef]:
        """The functions defined in the body of the function that holds `scope` (itself,
        or a loop in it), by name: `def _feature_extraction(data_loader): for data in
        data_loader: ...` inside `_evaluate`, which then runs its batch loops by calling
        it. One walk of its statements per function, cached."""
        function = scope if isinstance(scope, cst.FunctionDef) else None
        if function is None and isinstance(scope, cst.For | cst.While):
            function = self._function_of(scope)
        if function is None:
            return {}
        cached = self._locals.get(id(function))
        if cached is None:
            cached = {}
            stack: list[cst.CSTNode] = [function.body]
            while stack:
                node = stack.pop()
                kind = type(node)
                if kind is cst.FunctionDef:
                    cached[node.name.value] = node  # type: ignore[attr-defined]
                    continue
                if kind in _SCOPES or kind in EXPRESSIONS or kind in _NO_CLASSES:
                    continue
                stack.extend(code_children(node))
            self._locals[id(function)] = cached
        return cached

    def _methods_beside(self, scope: cst.CSTNode) -> dict[str, cst.FunctionDef]:
        """The methods of the class whose method holds `scope` (a method or a loop in
        one), by name; empty outside classes."""
        function = scope if isinstance(scope, cst.FunctionDef) else None
        if function is None and isinstance(scope, cst.For | cst.While):
            function = self._function_of(scope)
        if function is None:
            return {}
        if self._siblings is None:
            self._siblings = _methods_by_class(self._module)
        return self._siblings.get(id(function), {})

    def per_epoch(self, scopes: Sequence[cst.CSTNode]) -> bool:
        """Whether code inside `scopes` (its function, then the loops around it in that
        function, outermost first) runs once per epoch: the function or the loops around
        it run a batch loop, and every loop around it is an epoch loop (it holds a batch
        loop without being one), or, inside an epoch loop, a loop of fixed passes that
        trains, samples and pulls nothing (`for task_id, weight in
        enumerate(self.loss_weight)`, logging each task's weight after the epoch): a few
        passes once per epoch. Code in any other loop (a sampling loop after training, a
        loop counting steps) keeps running on every pass of that loop."""
        loops = [s for s in scopes if isinstance(s, cst.For | cst.While)]
        in_epoch_loop = False
        for loop in loops:
            if self.is_batch_loop(loop):
                return False
            if in_epoch_loop and self._evaluates_by_batches(loop):
                return False  # a test pass after the training loop: a step a pass
            if self.holds_batch_loop(loop):
                if not self._holds_batch_loop_every_pass(loop):
                    # `for t in range(max_timesteps): <rollout>; if t % update_every == 0:
                    # self.learn(memories)`: the batch loop runs once every many passes;
                    # each pass is a step of its own, not an epoch.
                    return False
                in_epoch_loop = True
            elif not (in_epoch_loop and self._fixed_passes(loop)):
                return False
        if any(self._one_step(scope) for scope in scopes):
            return False
        return any(self.holds_batch_loop(scope) for scope in scopes)

    def _holds_batch_loop_every_pass(self, loop: cst.For | cst.While) -> bool:
        """`holds_batch_loop(loop)`, by a batch loop (or a call of a function holding one)
        outside every branch of its body that runs once every many passes (`if time %
        update_timesteps == 0:`, `intervals.sparse_test`). A loop over trials or folds
        holds one on every pass."""
        if isinstance(loop, cst.For) and _over_runs(loop):
            return True
        methods = self._callables_beside(loop)
        stack: list[cst.CSTNode] = [loop.body]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in _SCOPES:
                continue
            if kind in _LOOPS and self.is_batch_loop(node):  # type: ignore[arg-type]
                return True
            if kind is cst.If and self._sparse_branch(node, loop):  # type: ignore[arg-type]
                stack.extend(self._outside_the_branch(node))  # type: ignore[arg-type]
                continue
            if kind in EXPRESSIONS:
                if self._calls_holder(node, methods, self._holds_batch, self.is_batch_loop):  # type: ignore[arg-type]
                    return True
                continue
            stack.extend(code_children(node))
        return False

    def _class_holding(self, function: cst.FunctionDef | None) -> cst.ClassDef | None:
        if function is None or self._module is None:
            return None
        for statement in self._module.body:
            if type(statement) is cst.ClassDef and any(
                item is function
                for item in statement.body.body  # type: ignore[union-attr]
            ):
                return statement
        return None

    def _evaluates_by_batches(self, loop: cst.For | cst.While) -> bool:
        """Inside an epoch loop, a loop by offsets one batch size apart whose pass runs
        the model (`for ibatch in range(0, n, batch_size):`, cellpose's test pass every
        10 epochs): each pass evaluates one batch. It is judged here, inside the epoch
        loop only, not as a batch loop (which would make a chunked inference helper,
        `fixed_batch_process`, an epoch function whose callers' code runs per epoch)."""
        return _strides_by_batches(loop) and self._facts(loop).model_calls > 0

    def _one_step(self, scope: cst.CSTNode) -> bool:
        """Its own body (outside its loops) runs backward and steps an optimizer: the
        function, or each pass of the loop, is one training step, and a loop in it that
        steps too (a GAN's discriminator updates, a delayed policy's `for _ in
        range(policy_frequency)` updates) is part of that step, not a loop over batches.
        An epoch loop's leftover step after its batch loop (gradient accumulation) steps
        the optimizer without running backward, after a batch loop that steps it too.
        So is a body that steps the optimizer after loops of micro-batches that run
        backward and step none (`for i in range(accumulate_every): ... loss.backward()`,
        each pass taking `next(self.loader)`, then `opt.step()`): its code after those
        loops runs once a step, not once an epoch."""
        if type(scope) not in (cst.FunctionDef, cst.For, cst.While):
            return False
        facts = self._facts(scope)  # type: ignore[arg-type]
        return (facts.backward and facts.steps_optimizer) or self._accumulates(scope)


# A batch size, by its words: `batch_size`, `bs`, `bsize`, `eval_batch_size`, `self.bs`.
_BATCH_SIZE = re.compile(r"(^|_)(batch_?size|bsize|bs)$", re.IGNORECASE)


def _strides_by_batches(loop: cst.For | cst.While) -> bool:
    """`for k in range(0, n, batch_size):`: offsets one batch apart, one batch a pass."""
    if type(loop) is not cst.For:
        return False
    iterable = loop.iter  # type: ignore[union-attr]
    if not (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Name
        and iterable.func.value == "range"
        and len(iterable.args) == 3
    ):
        return False
    step = iterable.args[2].value
    return type(step) in (cst.Name, cst.Attribute) and bool(
        _BATCH_SIZE.search(last_name(step) or "")
    )
