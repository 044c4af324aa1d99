"""Which loops run a step on each pass, and which run a fixed number of passes per call.

A loop's pass is a step when the loop iterates data (a loader, batches, an environment's
steps), counts steps (`range(num_steps)`, `range(max_len)`, `for t in timesteps`, a
`while` loop), or trains or samples in its passes (backward, an optimizer step, a model fed
what the previous pass made, `next()` of a loader, a barrier, `env.step`), unless it
counts independent runs: a loop over `range(...)` (or positions numpy draws on the
host: a decoding check's `np.random.choice(np.arange(n), size=k)` sessions) whose
passes do none of that themselves, pick no item by their index, nor go on from what
the last one made, but call a function of the module that runs a step loop of its own
(`for trunk_idx in range(num_trunk_samples): fold(...)`, a sampler of 200 denoising
steps) runs a whole run per pass, as a loop over trials does, and so does such a loop
over a constant table or a literal list (a warm-up generating once per prompt of
`WARMUP_PROMPTS[:n]`). A loop over the
module's own structure (`for i in range(len(self.layers) - 1)`, `width =
self.width_in[l]; for i in range(width)`), over a fixed collection of host values (a
literal list of names, a module-level table), over the rows of one tensor or over the rows
of what a parameter holds, counted by that same object (`for i in range(kg.n_facts)`
reading `kg.head_idx[i]`: a setup helper building lookup tables from a graph), or over the
networks of an ensemble a parameter named for them hands in (`for m in extra_models`: one
pass per member, each on the same input), over the list a collective fills with one entry
per process of the group (`dist.all_gather(tensor_list, tensor)`, `dist.gather`'s gather
list: unpickling each rank's bytes), or over `zip(...)` of any of those (it stops at its
shortest argument; not one zipped with a loader, which pulls a batch a pass) runs the same
passes on every call of its function and trains nothing in them: its body runs every step
only where its function does (`hotness.HotCode.is_hot`). That holds in functions outside
classes, in the methods of a model class, whose per-step entry the file shows
(`forward`, and what it reaches), in a class whose framework names the hooks it calls
every step (`hotness.per_step_hooks`: a torchmetrics `Metric` gets `update` with every
batch, and `compute` once after the batch loop), and in a method that runs at
construction (`__init__`, or one every call of which in the module is `self.m(...)` in
such a method: a sampler's `collect(kg)` building its tables). In a class with such hooks,
a method that is none of them runs when the framework calls it, so a loop there runs its
passes per call whatever it walks (`for i, class_idx in enumerate(metrics["classes"])` in
`compute`), unless it walks a loader, counts steps or runs a model in its passes. A class
that is none of these (a loss, a replay buffer, a beam search) is called from another
module's loop, by methods the file cannot tell apart: a loop in one of them keeps its
passes per step. The rows of what a parameter holds may be counted by a local bound to
that count (`n = len(graph.src)`, then `range(n)`), or walked as parallel columns of it
(`zip(graph.src, graph.dst)`). Whatever a loop counts, in a method that runs at
construction (a `while` over a graph's generations in a flow's `_dag_diameter`, which
`__init__` calls) it runs its passes once per object built, unless it walks a loader or
trains, samples, pulls a batch, syncs or steps in them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

import libcst as cst

from xlalint.analysis.arguments import parameter
from xlalint.analysis.epochs import Epochs, loader_named
from xlalint.analysis.guards import local_values
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.hotness import (
    INITIALISER,
    PASS_WRAPPERS,
    PER_STEP_FUNCTIONS,
    RUN_ONCE_FUNCTIONS,
)
from xlalint.analysis.loop_facts import unwrap_iteration
from xlalint.analysis.step_loops import LoopAnalysis
from xlalint.analysis.structural_loops import structural_iterable
from xlalint.analysis.tensors import MODULE_WALKS, names_model
from xlalint.walk import descendants, self_attribute, target_names

Loop = cst.For | cst.While

# A count named for steps, not for structure: `range(num_steps)`, `range(self.max_len)`,
# `range(n_iter)`, `range(self.timesteps)`, `range(episodes)`.
_STEP_COUNT = re.compile(
    r"step|iter|epoch|time|token|len$|length|sample|episode|round|update|frame", re.I
)
# Calls that keep a count the same for a call: `len(self.layers)`, `int(self.n)`.
_COUNT_CALLS = frozenset({"len", "int", "min", "max"})
# `for mode in MODES`, a module-level table: a name written in capitals.
_CONSTANT = re.compile(r"^_*[A-Z][A-Z0-9_]*$")


class StepPasses:
    """Answers, after the walk, whether one pass of a loop is a step; cached per loop.

    `collections`: ids of the loops the walk saw iterate a collection
    (`hotness.walks_a_collection`, `hotness.draws_a_figure`); `rows`: of those it saw
    iterate one tensor's rows; `class_hooks`: the per-step hooks of the module's classes,
    by name (`hotness.per_step_hooks`, with those of their bases in the module)."""

    def __init__(
        self,
        loops: LoopAnalysis,
        epochs: Epochs,
        collections: Collection[int],
        rows: Collection[int],
        class_hooks: Mapping[str, frozenset[str]] | None = None,
        module: cst.Module | None = None,
        resolve: Callable[[cst.CSTNode], str | None] | None = None,
    ) -> None:
        self._module = module
        # The file's imports (`FileContext.qualified`): `np.arange` -> `numpy.arange`.
        self._resolve = resolve
        self._loops = loops
        self._epochs = epochs
        self._collections = collections
        self._rows = rows
        self._class_hooks = class_hooks or {}
        self._cache: dict[int, bool] = {}
        self._runs_memo: dict[int, bool] = {}  # functions holding a loop of steps

    def is_step_loop(self, loop: cst.CSTNode) -> bool:
        """One pass of `loop` is a step: it is not a loop of fixed passes (`fixed_passes`),
        or it trains, samples or pulls data in them (`steps_in_passes`)."""
        key = id(loop)
        known = self._cache.get(key)
        if known is None:
            assert isinstance(loop, cst.For | cst.While)
            self._cache[key] = True  # a loop reached again through its own callees
            known = (
                (not self.fixed_passes(loop) or self.steps_in_passes(loop))
                and not self.runs_whole_runs(loop)
                and not self.runs_at_construction(loop)
            )
            self._cache[key] = known
        return known

    def runs_whole_runs(self, loop: Loop) -> bool:
        """`for trunk_idx in range(num_trunk_samples): cand = run_folding_on_context(...)`:
        a loop over a count (`range(...)` of no loader's length, or positions numpy draws
        on the host, `np.arange(n)`, `np.random.choice(np.arange(n), size=k)`, also
        through a local name only bound to them: a decoding check's few sampled sessions)
        by an index that picks
        no item of anything (no `x[i]`) and names no step, whose passes are independent
        (none goes on from what the last one made: `cands.append(run(...))`), run no
        model (one handed a host array, `decoder.fit(z.cpu().numpy(), y)`, is an
        estimator on the host), backward, optimizer or scheduler step, `next()`, barrier
        or loop of their own, and call a function of the module that runs a step loop of its own (a
        sampler's denoising steps): each pass is a whole run, as a pass over trials is,
        so the code of that function outside its step loop runs once per run, not every
        step. So is a loop over a constant table of host values (`for prompt in
        WARMUP_PROMPTS[:n]: self.generate(prompt)`, a literal list of prompts): a warm-up
        generating once per entry. A loop over data (`for batch in loader:
        generate(batch)`), over the items of a batch (`labels[i]`), or going on from its
        last pass (`running = search_step(decoder, running)`) keeps its passes."""
        if type(loop) is not cst.For or type(loop.target) is not cst.Name:
            return False
        index = loop.target.value
        iterable = unwrap_iteration(loop.iter)
        site = self._loops.site(loop)
        if _STEP_COUNT.search(index) or not (
            self._counted(iterable, site.function if site is not None else None)
            or _constant_table(iterable)
        ):
            return False
        facts = self._loops.facts(loop)
        if (facts.read_first & facts.assigned) - facts.appended:
            return False  # `running = search_step(running)`: each pass goes on from the last
        for node in descendants(loop.body):
            if type(node) in (cst.For, cst.While):
                return False
            if type(node) is cst.Call and _does_a_step(node):
                return False
            if type(node) is cst.Subscript and any(
                type(inner) is cst.Name and inner.value == index
                for element in node.slice
                for inner in descendants(element)
            ):
                return False  # `labels[i]`: the passes walk the items of a value
        return self._epochs.calls_a_holder(loop, self._runs_memo, self.is_step_loop)

    def _counted(self, iterable: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
        """`range(n)`, or positions drawn on the host by numpy (`np.arange(n)`,
        `np.random.choice(np.arange(n), size=k, replace=False)`), directly or through a
        local name only ever bound to them (`sessions`, picked at random when there are
        more than a few): a count of independent items, not a loader, nor named for steps
        (`timesteps = np.linspace(...)`)."""
        if type(iterable) is cst.Name and function is not None:
            if _names_steps(iterable):
                return False
            values = local_values(function, iterable.value)
            return bool(values) and all(self._counted(v, None) for v in values)
        if type(iterable) is not cst.Call or _counts_a_loader(iterable):
            return False
        func = iterable.func
        if type(func) is cst.Name and func.value == "range":
            return True
        qualified = self._resolve(func) if self._resolve is not None else None
        return (
            qualified is not None and qualified.startswith("numpy.") and not _names_steps(iterable)
        )

    def runs_at_construction(self, loop: Loop) -> bool:
        """The loop is in a function that runs once per object (`_runs_once`: a method
        that runs when its object is built, `__init__` or one only such methods call as
        `self.m(...)`, `self.passes = self._dag_diameter(adjacency)`; an initialiser the
        file never calls, a mixture's `initialize(x, strategy)`; a function of the module
        only such code calls, its k-means) and trains, samples, pulls a batch, syncs or
        steps nothing in its passes, nor walks a loader: whatever it counts (a `while`
        over a graph's generations, `range(iterations)` of a clustering), it runs them
        once per object, not every step."""
        site = self._loops.site(loop)
        if site is None or not self._runs_once(site.function, site.class_def):
            return False
        if isinstance(loop, cst.For) and loader_named(unwrap_iteration(loop.iter)):
            return False
        return not self.steps_in_passes(loop)

    def fixed_in_an_epoch(self, loop: Loop) -> bool:
        """Inside an epoch loop of its function (`epochs.per_epoch` asks): the loop's
        passes are fixed, wherever its class is, and none is a step. The function shows
        who runs the loop (the epoch loop around it), so a class that is no model (a
        trainer) keeps no passes per step there."""
        return self.fixed_passes(loop, in_an_epoch=True) and not self.steps_in_passes(loop)

    def fixed_passes(self, loop: Loop, in_an_epoch: bool = False) -> bool:
        """The loop's passes are fixed for each call of its function: a dict's entries or
        a model's parameters (`collections`, wherever the loop is), or, in a function
        outside classes or a method of a model class or of a class with per-step hooks
        (a metric's `compute`, beside its per-step `update`), the module's own structure
        (`self.layers`, `range(len(self.acts_scale) - 1)`, `range(width)` with `width =
        self.width_in[l]`), a literal or constant collection, one tensor's rows. In a
        class that is neither (a loss, a replay buffer, a beam search) the file does not
        show which method a step calls: they run from another module's loop, a model's
        from its `forward` and a metric's from its `update` (what the file shows), so
        there the loop keeps its passes."""
        if id(loop) in self._collections:
            return True
        if not isinstance(loop, cst.For):
            return False
        if any(_STEP_COUNT.search(name) for name in target_names(loop.target)):
            return False  # `for global_step in range(...)`: its passes are counted steps
        site = self._loops.site(loop)
        if (
            not in_an_epoch
            and site is not None
            and site.class_def is not None
            and not self._loops.in_model_class(site)
            and not self._class_hooks.get(site.class_def.name.value)
            and not self._runs_at_construction(site.function, site.class_def)
        ):
            return False
        function = site.function if site is not None else None
        if (
            site is not None
            and site.class_def is not None
            and function is not None
            and not self._loops.in_model_class(site)
            and self._off_hook(site.class_def, function)
        ):
            # A framework class's other methods run when the framework calls them (a
            # metric's `compute`, once per evaluation): whatever a loop there walks
            # (`for i, class_idx in enumerate(metrics["classes"])`), other than a
            # loader or counted steps, it walks it once per call of the method, unless
            # its passes run a model (an evaluation over batches by another name).
            iterable = unwrap_iteration(loop.iter)
            return (
                not loader_named(iterable)
                and not _names_steps(iterable)
                and not self._loops.facts(loop).model_calls
            )
        return (
            id(loop) in self._rows
            or _fixed_iterable(loop.iter, function, 0)
            or _rows_of_a_parameter(loop, function)
        )

    def _off_hook(self, class_def: cst.ClassDef, function: cst.FunctionDef) -> bool:
        """`function`, a method of `class_def`, is none of the per-step hooks its class
        has (the class has some: its framework names them)."""
        hooks = self._class_hooks.get(class_def.name.value)
        return bool(hooks) and function.name.value not in hooks

    def _runs_at_construction(
        self, method: cst.FunctionDef | None, class_def: cst.ClassDef, depth: int = 0
    ) -> bool:
        """`method` runs when its object is built: it runs once by name (`__init__`), or
        the module calls it, and only as `self.<name>(...)` from methods of its class that
        run at construction (`self.possible = self.collect(kg)` in `__init__`). The file
        then shows who runs it, as it does for a model's `forward`."""
        if method is None or depth > 2:
            return False
        name = method.name.value
        if name in RUN_ONCE_FUNCTIONS:
            return True
        if self._module is None:
            return False
        calls = call_sites(self._module).named(name, method=True)
        return bool(calls) and all(
            self_attribute(site.call.func) is not None
            and site.method_of is class_def
            and site.function is not method
            and self._runs_at_construction(site.function, class_def, depth + 1)
            for site in calls
        )

    def _runs_once(
        self, function: cst.FunctionDef | None, class_def: cst.ClassDef | None, depth: int = 0
    ) -> bool:
        """`function` runs once per object: by name (`__init__`, `setup`; not `main`,
        a whole program's run), as an initialiser no call of the file reaches (`initialize`,
        `reset_parameters`: `hotness.INITIALISER`), or because every call of it in the
        module is in such a function (a method's as `self.m(...)` from its own class, or
        through an attribute holding its object, `self._quantizer.add_tuning_scale()`,
        where no other class of the module defines that name). A method that hands back
        the model it is handed (`def prepare(self, model): ...; return model`, a
        quantizer's `prepare` or `convert`: `transforms_a_model`) prepares the model
        once, before its steps, and runs once too."""
        if function is None or depth > 2 or self._module is None:
            return False
        name = function.name.value
        if name == "main":
            return False
        if name in RUN_ONCE_FUNCTIONS:
            return True
        if transforms_a_model(function):
            return True
        sites = call_sites(self._module)
        if class_def is not None:
            calls = sites.named(name, method=True)
            if not calls:
                return INITIALISER.fullmatch(name) is not None
            return all(
                (
                    (self_attribute(site.call.func) is not None and site.method_of is class_def)
                    or (
                        type(site.call.func) is cst.Attribute
                        and type(site.call.func.value) is cst.Attribute
                        and self._only_class_defining(name, class_def)
                    )
                )
                and site.function is not function
                and self._runs_once(site.function, site.method_of, depth + 1)
                for site in calls
            )
        calls = sites.named(name, method=False)
        return bool(calls) and all(
            site.function is not function
            and self._runs_once(site.function, site.method_of, depth + 1)
            for site in calls
        )

    def _only_class_defining(self, name: str, class_def: cst.ClassDef) -> bool:
        """`class_def` is the one class of the module defining a method `name`."""
        assert self._module is not None
        return all(
            node is class_def
            or not any(
                type(item) is cst.FunctionDef and item.name.value == name for item in node.body.body
            )
            for node in self._module.body
            if type(node) is cst.ClassDef
        )

    def steps_in_passes(self, loop: Loop) -> bool:
        """A pass trains (backward, an optimizer step), samples (a model fed the state the
        previous pass made), pulls a batch (`next(it)`), runs a barrier or a scheduler's
        or an environment's `step`, or is a batch loop (`epochs.is_batch_loop`)."""
        loops = self._loops
        facts = loops.facts(loop)
        if facts.next_of or facts.barriers or facts.scheduler_step or facts.optimizer_steps:
            return True
        if loops.trains(loop) or loops.infers(loop) or self._epochs.is_batch_loop(loop):
            return True
        return any(
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "step"
            for node in descendants(loop.body)
        )


# Methods whose call is a step of its own: backward, an optimizer's, a scheduler's or an
# environment's step, a barrier.
_STEP_CALLS = frozenset({"backward", "step", "mark_step", "sync", "optimizer_step"})


def _does_a_step(call: cst.Call) -> bool:
    """`loss.backward()`, `opt.step()`, `next(it)`, `model(x)`, `self.net.generate(x)`:
    a call that is a step, pulls a batch, or runs a network (named as one). Not a model
    handed a host array as its input (`decoder.fit(x.cpu().numpy(), y)`: an estimator
    fitted on the host, no network on the device)."""
    func = call.func
    if type(func) is cst.Name:
        return func.value == "next" or (names_model(func.value) and not _handed_arrays(call))
    if type(func) is cst.Attribute:
        if func.attr.value in _STEP_CALLS:
            return True
        if names_model(func.attr.value):
            return not _handed_arrays(call)
        receiver = func.value
        name = receiver.attr.value if type(receiver) is cst.Attribute else None
        if type(receiver) is cst.Name:
            name = receiver.value
        return name is not None and names_model(name) and not _handed_arrays(call)
    return False


def _counts_a_loader(count: cst.Call) -> bool:
    """`range(len(loader))`, `np.arange(len(self.train_dl))`, `range(loader)`: positions
    of a loader's batches. Not a count a loader's dataset holds
    (`np.arange(train_loader.dataset.num_sessions)`: sessions, not batches)."""
    return any(
        type(node) is cst.Call
        and (node is count or (type(node.func) is cst.Name and node.func.value == "len"))
        and any(loader_named(arg.value) for arg in node.args)
        for node in descendants(count)
    )


def _handed_arrays(call: cst.Call) -> bool:
    """The input `call` is handed first is a host copy made into an array or a list
    (`x.cpu().numpy()`, `t.tolist()`): what takes it computes on the host."""
    if not call.args:
        return False
    first = call.args[0]
    return (
        first.keyword is None
        and not first.star
        and type(first.value) is cst.Call
        and type(first.value.func) is cst.Attribute
        and first.value.func.attr.value in ("numpy", "tolist")
    )


def _constant_table(node: cst.BaseExpression) -> bool:
    """`WARMUP_PROMPTS`, `WARMUP_PROMPTS[:n]`, `["a cat", "a dog"]`: a module-level table
    (a name in capitals), some of its first or last entries, or a literal list or tuple of
    constants: host values the code fixes, each pass one of them, as many passes as the
    table has (a warm-up generating once per prompt), not data that comes in."""
    if type(node) is cst.Subscript and all(
        type(element.slice) is cst.Slice for element in node.slice
    ):
        node = node.value
    if type(node) is cst.Name:
        return _CONSTANT.match(node.value) is not None
    if type(node) in (cst.List, cst.Tuple):
        return bool(node.elements) and all(
            type(element.value) in (cst.SimpleString, cst.Integer, cst.Float)
            for element in node.elements
        )
    return False


def _fixed_iterable(node: cst.BaseExpression, function: cst.FunctionDef | None, depth: int) -> bool:
    """Iterating `node` runs passes the module or the host fixes: a container the module
    holds (`structural_loops.structural_iterable`, unless named for steps:
    `self.timesteps`), a constant table (`CANDIDATES`), a local name only ever bound to
    such values or to literal collections, `enumerate`/`zip`/`sorted` of those, a `range`
    of fixed counts (`_fixed_count`), not of literals alone (`range(1000)` repeats a
    step). Not a loader, nor anything a parameter hands in."""
    if depth > 3:
        return False
    node = unwrap_iteration(node)
    if loader_named(node):
        return False
    if structural_iterable(node) or _parts_of_a_handed_model(node, function):
        return not _names_steps(node)
    if isinstance(node, cst.Name):
        if _CONSTANT.match(node.value):
            return True
        if function is not None and _per_process_list(node.value, function):
            return True
        values = local_values(function, node.value) if function is not None else []
        return bool(values) and all(_fixed_collection(v, function, depth + 1) for v in values)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if not args:
            return False
        if node.func.value == "zip":
            # `zip` stops at its shortest argument: one fixed argument fixes its passes,
            # unless another pulls a batch on each of them (`zip(loader, range(n))`).
            return not any(loader_named(unwrap_iteration(a)) for a in args) and any(
                _fixed_iterable(a, function, depth + 1) for a in args
            )
        if node.func.value in PASS_WRAPPERS:
            return all(_fixed_iterable(a, function, depth + 1) for a in args)
        if node.func.value == "range":  # not a bare literal count: `range(1000)` repeats
            return all(_fixed_count(a, function, depth + 1) for a in args) and not all(
                isinstance(a, cst.Integer) for a in args
            )
    return False


def _parts_of_a_handed_model(node: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """`model.layers`, `net.blocks`, `model.children()`: the parts of a network a
    parameter hands in (named as one: `model`, `net`, `encoder`), as many passes as the
    network has parts on every call, as `self.layers` is in the model's own methods (a
    pruning pass over `model.layers` after training); so are the networks of an ensemble
    a parameter named for them in the plural hands in (`extra_models: List[Whisper]`,
    `nets`, `encoders`): one pass per network on every call, each run on the same input,
    as `for mi, other_model in enumerate(extra_models)` weighing every model's attention.
    Not a loader or data it holds (`_fixed_iterable`, its one caller, turns a loader away
    first)."""
    if function is None:
        return False
    if type(node) is cst.Name:
        return (
            node.value.lower().endswith("s")
            and names_model(node.value)
            and parameter(function, node.value) is not None
        )
    if (
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value in MODULE_WALKS
        and not node.args
    ):
        node = node.func.value
    elif type(node) is not cst.Attribute:
        return False
    root = _attribute_root(node)
    return root is not None and names_model(root) and parameter(function, root) is not None


def _rows_of_a_parameter(loop: cst.For, function: cst.FunctionDef | None) -> bool:
    """`for i in range(kg.n_facts)` (or `range(len(kg.heads))`) whose passes read
    `kg.heads[i]`: the positions of the rows of what a parameter holds, counted by that
    same object, as many passes as the value handed in has rows, on every call of the
    function. Not a count named for steps (`range(cfg.max_len)`), nor a loader's, nor
    the items of the parameter itself (`dataset[i]`, a sample: `epochs.py` judges
    those)."""
    if function is None:
        return False
    if _parallel_columns(loop.iter, function):
        return True
    if type(loop.target) is not cst.Name:
        return False
    iterable = loop.iter
    if not (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Name
        and iterable.func.value == "range"
        and len(iterable.args) == 1
        and iterable.args[0].keyword is None
        and not iterable.args[0].star
    ):
        return False
    count = iterable.args[0].value
    if type(count) is cst.Name:  # `n = len(graph.src)`, then `range(n)`
        values = local_values(function, count.value)
        if len(values) != 1:
            return False
        count = values[0]
    if (
        type(count) is cst.Call
        and type(count.func) is cst.Name
        and count.func.value == "len"
        and len(count.args) == 1
    ):
        count = count.args[0].value
    if type(count) is not cst.Attribute or _names_steps(count) or loader_named(count):
        return False
    holder = _attribute_root(count)
    if holder is None or holder == "self" or parameter(function, holder) is None:
        return False
    index = loop.target.value
    return any(
        type(node) is cst.Subscript
        and type(node.value) is cst.Attribute
        and _attribute_root(node.value) == holder
        and len(node.slice) == 1
        and type(node.slice[0].slice) is cst.Index
        and type(node.slice[0].slice.value) is cst.Name
        and node.slice[0].slice.value.value == index
        for node in descendants(loop.body)
    )


def _parallel_columns(iterable: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """`zip(graph.src, graph.dst)` (also under `enumerate`): two or more columns of what
    one parameter holds, walked row by row together, as many passes as it has rows. Not
    the parameter itself, nor a column named for steps or a loader."""
    if (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Name
        and iterable.func.value == "enumerate"
        and iterable.args
        and iterable.args[0].keyword is None
        and not iterable.args[0].star
    ):
        iterable = iterable.args[0].value
    if not (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Name
        and iterable.func.value == "zip"
        and len(iterable.args) >= 2
    ):
        return False
    holders = set()
    for arg in iterable.args:
        column = arg.value
        if arg.keyword is not None or arg.star or type(column) is not cst.Attribute:
            return False
        if _names_steps(column) or loader_named(column):
            return False
        holders.add(_attribute_root(column))
    if len(holders) != 1:
        return False
    holder = holders.pop()
    return holder is not None and holder != "self" and parameter(function, holder) is not None


def _attribute_root(node: cst.BaseExpression) -> str | None:
    """`kg` of `kg.n_facts` or `kg.graph.heads`."""
    while type(node) is cst.Attribute:
        node = node.value
    return node.value if type(node) is cst.Name else None


def _fixed_collection(
    node: cst.BaseExpression, function: cst.FunctionDef | None, depth: int
) -> bool:
    """A value bound to a name a loop iterates: a literal collection, a constant table."""
    if isinstance(node, cst.List | cst.Tuple | cst.Set | cst.Dict):
        starred = (cst.StarredElement, cst.StarredDictElement)
        return not any(isinstance(e, starred) for e in node.elements)
    return _fixed_iterable(node, function, depth)


# Collectives that fill a list with one entry per process of the group, and the position
# and keyword of that list: `dist.all_gather(tensor_list, tensor)`, `dist.gather(tensor,
# gather_list, dst=0)`, `dist.all_gather_object(objects, obj)`.
_GATHER_LISTS = {
    "all_gather": (0, "tensor_list"),
    "all_gather_object": (0, "object_list"),
    "gather": (1, "gather_list"),
    "gather_object": (1, "object_gather_list"),
}


def _per_process_list(name: str, function: cst.FunctionDef) -> bool:
    """`tensor_list` handed to `dist.all_gather(tensor_list, tensor, group=group)` (or as
    `dist.gather`'s gather list) in `function`: a collective fills it with one entry per
    process of the group, so a loop over it (`for size, tensor in zip(size_list,
    tensor_list)`, unpickling each rank's bytes) runs as many passes as there are
    processes, on every call, not one per step of data."""
    for node in descendants(function.body):
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
            continue
        slot = _GATHER_LISTS.get(node.func.attr.value)
        if slot is None:
            continue
        position, keyword = slot
        positional = [a for a in node.args if a.keyword is None and not a.star]
        handed = [
            a.value for a in node.args if a.keyword is not None and a.keyword.value == keyword
        ]
        if position < len(positional):
            handed.append(positional[position].value)
        if any(type(value) is cst.Name and value.value == name for value in handed):
            return True
    return False


def _fixed_count(node: cst.BaseExpression, function: cst.FunctionDef | None, depth: int) -> bool:
    """A count the module fixes: a literal, `self.n` (not one named for steps), `len` of a
    fixed collection, arithmetic of those, a local name only ever bound to one."""
    if depth > 4:
        return False
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _fixed_count(node.expression, function, depth + 1)
    if isinstance(node, cst.BinaryOperation):
        return _fixed_count(node.left, function, depth + 1) and _fixed_count(
            node.right, function, depth + 1
        )
    if _names_steps(node):
        return False
    if isinstance(node, cst.Attribute | cst.Subscript):
        return _self_held(node)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if node.func.value == "len" and len(args) == 1:
            return _fixed_iterable(args[0], function, depth + 1) or _self_held(args[0])
        if node.func.value in _COUNT_CALLS and args:
            return all(_fixed_count(a, function, depth + 1) for a in args)
        return False
    if isinstance(node, cst.Name) and function is not None:
        values = local_values(function, node.value)
        if not values:
            return _index_of_fixed_counts(node.value, function, depth)
        return all(_fixed_count(v, function, depth + 1) for v in values)
    return False


def _index_of_fixed_counts(name: str, function: cst.FunctionDef, depth: int) -> bool:
    """`j in range(i)` inside `for i in range(self.num_nodes)`: `name` is bound only as
    the index of loops of the function over a `range` of fixed counts, so it is below a
    fixed count too, and a `range` of it (the nodes before node `i` of a cell) runs as
    many passes per call as the cell has, a triangle of fixed passes."""
    loops = [
        node
        for node in descendants(function.body)
        if type(node) is cst.For and type(node.target) is cst.Name and node.target.value == name
    ]
    return bool(loops) and all(
        type(loop.iter) is cst.Call
        and type(loop.iter.func) is cst.Name
        and loop.iter.func.value == "range"
        and bool(loop.iter.args)
        and all(
            arg.keyword is None and not arg.star and _fixed_count(arg.value, function, depth + 1)
            for arg in loop.iter.args
        )
        for loop in loops
    )


def transforms_a_model(function: cst.FunctionDef) -> bool:
    """`def prepare(self, model, *args): ...; return model` (also through a local bound
    to it, `float_model = model`): every `return` hands back the network the function is
    handed (a parameter named as one), so the function prepares, converts or wraps a
    model, once per model, not once per step. Not a per-step name (`forward`)."""
    if PER_STEP_FUNCTIONS.match(function.name.value):
        return False
    handed = {
        param.name.value
        for param in (*function.params.posonly_params, *function.params.params)
        if names_model(param.name.value)
    }
    if not handed:
        return False
    returns: list[cst.Return] = []
    for node in descendants(function.body):
        if type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            continue
        if type(node) is cst.Return:
            returns.append(node)
        elif (
            type(node) is cst.Assign
            and type(node.value) is cst.Name
            and node.value.value in handed
            and len(node.targets) == 1
            and type(node.targets[0].target) is cst.Name
        ):
            handed.add(node.targets[0].target.value)
    return bool(returns) and all(
        type(r.value) is cst.Name and r.value.value in handed for r in returns
    )


def _self_held(node: cst.BaseExpression) -> bool:
    """`self.width_in[l]`, `self.model.layers`: a value the module holds (not a loader)."""
    if loader_named(node):
        return False
    while isinstance(node, cst.Attribute | cst.Subscript):
        node = node.value
    return isinstance(node, cst.Name) and node.value == "self"


def _names_steps(node: cst.BaseExpression) -> bool:
    """The value's own name says it counts steps (`self.num_steps`, `max_len`)."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Call):
        return any(_names_steps(a.value) for a in node.args)
    name = node.attr.value if isinstance(node, cst.Attribute) else None
    if isinstance(node, cst.Name):
        name = node.value
    return name is not None and _STEP_COUNT.search(name) is not None
