"""What rules may ask about the code around a node.

The engine walks each file once and keeps this context current: the chain of ancestors,
enclosing function and class, loop nesting, CUDA guards, step closures, import aliases and
the kinds of values. Rules ask by name (`ctx.is_tensor(expr)`, `ctx.qualified(expr)`,
`ctx.under_cuda_guard`) so that the reasoning lives here, once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis import devices, named_lambdas, reachability
from xlalint.analysis.arguments import parameters, positional_names
from xlalint.analysis.config_fields import field_default
from xlalint.analysis.cuda_flags import cuda_flag_places
from xlalint.analysis.devices import DeviceChoices, device_helpers
from xlalint.analysis.epochs import Epochs, takes_a_loader, walks_a_loader
from xlalint.analysis.error_paths import compatibility_probe, handles_a_failure
from xlalint.analysis.flag_facts import FlagFacts
from xlalint.analysis.guards import (
    asks_placement,
    ends_in,
    implied,
    mentions_cuda,
    negated,
    on_by_default,
    path_conditions,
)
from xlalint.analysis.hotness import (
    ACTION_METHOD,
    AUTOGRAD_FUNCTION_HOOKS,
    GLOBAL_MODULE_HOOK_REGISTRATIONS,
    MODULE_HOOK_REGISTRATIONS,
    OPTIMISATION_STEP,
    SAVE_CALLS,
    FunctionKey,
    HotCode,
    Site,
    applied_function,
    autograd_function_hooks,
    batch_state,
    draws_a_figure,
    imported_base_names,
    instance_call,
    makes_a_figure,
    per_step_hooks,
    rows_walked,
    takes_backward_gradients,
    transformation_update,
    unbinds_a_tensor,
    walks_a_collection,
)
from xlalint.analysis.import_guards import ImportGuards
from xlalint.analysis.imports import ImportTable, NamesInUse, names_in_use
from xlalint.analysis.intervals import (
    clears_its_flag,
    counts_its_calls,
    may_be_sparse,
    passes_its_value_once,
    past_interval_exit,
    resets_its_counter,
    runs_on_its_first_pass,
    sparse_test,
    switches_once,
)
from xlalint.analysis.lazy_init import fills_when_empty
from xlalint.analysis.loop_values import LoopValues
from xlalint.analysis.masks import REGISTER_BUFFER, BooleanMasks
from xlalint.analysis.members import (
    called_back,
    called_classes,
    calls_own_instance,
    instance_method_call,
    is_property,
    member_method_call,
    own_module_function,
    table_functions,
)
from xlalint.analysis.module_callers import declared_defaults, hot_elsewhere
from xlalint.analysis.module_classes import base_names, is_module_class
from xlalint.analysis.module_reads import Found, ModuleReads
from xlalint.analysis.module_steps import ModuleSteps
from xlalint.analysis.project_modules import is_on_disk
from xlalint.analysis.returns import NumberReturns
from xlalint.analysis.settled_exits import in_settled_branch, past_settled_exit
from xlalint.analysis.statements import always_exits, passes_left
from xlalint.analysis.step_loops import LoopAnalysis
from xlalint.analysis.step_passes import StepPasses
from xlalint.analysis.tensor_uses import DataParameters, may_hand_arrays
from xlalint.analysis.tensors import (
    BranchState,
    Kind,
    Narrowed,
    TensorKinds,
    overridden_methods,
    tensor_returns,
)
from xlalint.analysis.type_tests import (
    host_names,
    non_tensor_names,
    normalised_to_class,
    range_checked,
)
from xlalint.analysis.warning_branches import in_warning_branch
from xlalint.analysis.xla_api import LATEST, Release, api_at
from xlalint.cst_parse import parse_module
from xlalint.screen import LINE
from xlalint.walk import (
    COMPREHENSIONS,
    TRIVIA,
    binding_counts,
    descendants,
    last_name,
    self_attribute,
    target_names,
    top_level_functions,
)

__all__ = ["FileContext", "Kind", "Site"]

ADD_STEP_CLOSURE = "torch_xla.core.xla_model.add_step_closure"
# Analyses whose bookkeeping runs during the walk, kept only where a rule declares it uses
# them (`Rule.uses`): "loops" (`ctx.loops`, and hot code, which asks what loops do),
# "masks" (`ctx.masks`) and "loop_values" (`ctx.loop_values`).
ANALYSES = frozenset({"loops", "masks", "loop_values"})


@dataclass
class _Frame:
    key: FunctionKey | None
    module_call: bool
    node: cst.FunctionDef | None = None
    loops: list[cst.CSTNode] = field(default_factory=list)  # loops around, outermost first
    hook: bool = False
    # Of `loops`, those over a model's parts or a dict's entries (`walks_a_collection`).
    collections: set[int] = field(default_factory=set)


_LOOPS = frozenset({cst.For, cst.While})
_ENTERED = frozenset(
    {cst.FunctionDef, cst.ClassDef, cst.If, cst.IfExp, cst.For, cst.CompFor, cst.Import,
     cst.ImportFrom, cst.Call, cst.With, cst.Lambda, cst.ListComp, cst.SetComp,
     cst.GeneratorExp, cst.DictComp, cst.Return}
)  # fmt: skip
_BLOCKS = frozenset({cst.IndentedBlock, cst.Module})
# Nodes whose children run where a test is known (`analysis/type_tests.py`).
_NARROWING_PARENTS = frozenset({cst.If, cst.IfExp, cst.BooleanOperation})
_LEFT = frozenset(
    {cst.FunctionDef, cst.ClassDef, cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.AugAssign}
)
# What `LoopValues` follows ("loop_values"): functions, loops and their bodies, calls (host
# reads) on the way in; those and assignments on the way out.
_VALUE_NODES = frozenset(
    {cst.FunctionDef, cst.For, cst.While, cst.IndentedBlock, cst.SimpleStatementSuite, cst.Call}
)
_VALUES_LEFT = frozenset(
    {cst.FunctionDef, cst.For, cst.While, cst.IndentedBlock, cst.SimpleStatementSuite,
     cst.Assign, cst.AnnAssign, cst.AugAssign}
)  # fmt: skip


def _steps_branches(node: cst.If, ends: list[BranchState], kinds: TensorKinds) -> list[BranchState]:
    """The ends of the branches of `node` an XLA step can take: not the body of `if
    torch.onnx.is_in_onnx_export():` or `if torch.jit.is_tracing():` (an export or a trace
    binds `idx = torch.tensor(q.size(3))` where a step binds the Python int), nor the
    `else` of their negation. `ends` holds the body's end first, where it goes on."""
    probe = kinds.tests_tracing(node.test)
    if probe is None or len(ends) != 2 or type(node.orelse) is cst.If:
        return ends
    return ends[1:] if probe else ends[:1]


def _leaves(branch: cst.CSTNode) -> bool:
    """Whether a branch of an `if` (its body, `else` or `elif`) never goes on past it: it
    returns, raises, continues or breaks on every path (`statements.always_exits`: also
    through a last `if`/`else` whose every branch does)."""
    return always_exits(branch.body if type(branch) is cst.Else else branch)  # type: ignore[attr-defined]


def _plain_methods(node: cst.ClassDef) -> frozenset[str]:
    """The methods a class body defines, less properties (`@property def model(self)`
    hands back an attribute, which may well be a model)."""
    return frozenset(
        statement.name.value
        for statement in node.body.body
        if isinstance(statement, cst.FunctionDef) and not is_property(statement)
    )


def _properties(node: cst.ClassDef) -> frozenset[str]:
    """The properties a class body defines (`@property def temperature(self)`): reading
    `self.temperature` runs its body, as a call would."""
    return frozenset(
        statement.name.value
        for statement in node.body.body
        if isinstance(statement, cst.FunctionDef) and is_property(statement)
    )


def _opens_a_pass(loop: cst.CSTNode, child: cst.CSTNode) -> bool:
    """`child` runs on every pass of `loop`: its body, or a `while` loop's test."""
    assert isinstance(loop, cst.For | cst.While)
    return child is loop.body or (isinstance(loop, cst.While) and child is loop.test)


def _scope(path: tuple[cst.CSTNode, ...]) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
    """The innermost function on `path` (a node and its ancestors, innermost first) and,
    for a method, its class (two levels up, past the class's indented block). A closure
    in a method (`def _extract(loader):` inside `test`) that takes no `self` of its own
    reads the method's `self`: its class is the owner too."""
    at = next((i for i, n in enumerate(path) if type(n) is cst.FunctionDef), None)
    if at is None:
        return None, None
    function = path[at]
    for index in range(at, len(path)):
        node = path[index]
        if type(node) is not cst.FunctionDef:
            continue
        above = path[index + 2] if index + 2 < len(path) else None
        if type(above) is cst.ClassDef:
            return function, above  # type: ignore[return-value]
        if _takes_self(node):  # type: ignore[arg-type]
            break
    return function, None  # type: ignore[return-value]


def _takes_self(function: cst.FunctionDef) -> bool:
    return "self" in positional_names(function)


def _converts(body: cst.BaseSuite, name: str) -> bool:
    """The branch rebinds `name` or returns (`v = v.item()`, `return v.tolist()`): it turns
    the value into something else, as converters of any value do."""
    return any(isinstance(node, cst.Return) for node in descendants(body)) or _rebinds(body, name)


def _rebinds(body: cst.BaseSuite, name: str) -> bool:
    """The branch assigns `name` anew (`v = v.to("cpu")`)."""
    return any(
        isinstance(node, cst.AssignTarget) and name in target_names(node.target)
        for node in descendants(body)
    )


# A name called (`f(`, `self.f(`, also a `def f(`), and a name defined (`def f(`). The
# first finds what `(\w+)\s*\(` finds, tried only at the start of a word and without
# giving back what `\w+` took: that spelling tried every suffix of every word (8 ms for
# a 1,107-line pipeline, 2.6 ms so).
_CALLED = re.compile(r"(?<!\w)(\w++)\s*+\(")
_DEFINED = re.compile(r"\bdef\s+(\w+)\s*\(")


class FileContext:
    def __init__(
        self,
        module: cst.Module,
        path: str,
        hot_functions: Iterable[str] = (),
        target: Release = LATEST,
        *,
        full_text: str | None = None,
        text: str | None = None,
        blanked: Sequence[tuple[int, int]] = (),
        uses: Collection[str] = ANALYSES,
    ) -> None:
        """`full_text`: the file as it is, where `module` was parsed from a screened text
        with some function bodies blanked (`screen.py`; `blanked`: their rows, when known).
        `uses`: the analyses the rules
        that run declared (`rule.analyses_used`); the others cost nothing."""
        assert ANALYSES.issuperset(uses), f"unknown analyses: {set(uses) - ANALYSES}"
        self._uses = frozenset(uses)
        self._registers_loops = "loops" in self._uses
        self.module = module
        self.path = path
        self._elsewhere_reads: dict[int, tuple[cst.BaseExpression, Found] | None] = {}
        self._options: dict[str, list[int | None]] = {}  # `_option_defaults`
        self.target = target  # the torch_xla release fixes write for (`target-version`)
        self._full_text = full_text
        # The file's text as linted (None: the layer over other modules stays out).
        self._text = full_text if full_text is not None else text
        self._blanked = tuple(blanked)
        self.imports = ImportTable()
        self.imports.add_top_level(module)
        self.kinds = TensorKinds(self.imports, NumberReturns(module), module)
        if self._text is not None:
            self.kinds.may_hand_arrays = may_hand_arrays(self._text)
        self._computed_elsewhere: dict[int, bool] = {}
        if self._text is not None and is_on_disk(self.path):
            self.kinds.elsewhere = self._result_elsewhere
            self.kinds.property_elsewhere = self._property_elsewhere
        self.epochs = Epochs(
            lambda loop: self.loops.facts(loop),
            module,
            lambda loop: self.loops.steps_optimizer(loop),
            self._function_of_loop,
            lambda loop: self._step_passes.fixed_in_an_epoch(loop),
            lambda scope: self.loops.accumulates_then_steps(scope),
            lambda node: id(node) in self._sparse_ifs,
        )
        # Whether a function computes on tensors it is handed (hot per call for some rules).
        self.data_parameters = DataParameters(module, self.imports, self.kinds.records)
        self.hot = HotCode(
            hot_functions,
            self.epochs.per_epoch,
            self._trains_in_body,
            self.data_parameters.computes_on_data,
            self._has_own_loop,
            self._acts_beside_training,
            lambda loop: self._step_passes.is_step_loop(loop),
            # Other modules' per-step callers, where the file is on disk (`module_callers`).
            None if self._text is None else partial(hot_elsewhere, path),
            self.epochs.runs_training,
            lambda loop: self.loops.steps_optimizer(loop),
        )
        self._stack: list[cst.CSTNode] = []
        # Loops the walk saw iterate a collection, or one tensor's rows (`StepPasses`).
        self._collection_loops: set[int] = set()
        self._row_loops: set[int] = set()
        # Asked after the walk (`HotCode`): ids of the functions that run a loop of their
        # own, and whether a function acts beside its class's training step.
        self._looping: set[int] | None = None
        self._acting: dict[int, bool] = {}
        # id(node): its parent (None: the module), for every node walked: positions then
        # write only the statements on the way to the nodes findings name.
        self.parent_of: dict[int, cst.CSTNode | None] = {}
        self._masks = (
            BooleanMasks(self.imports, self.kinds, self._stack) if "masks" in uses else None
        )
        if self._masks is not None and self._text is not None:
            self._masks.may_register = REGISTER_BUFFER in self._text
        self._values = LoopValues(self.kinds) if "loop_values" in uses else None
        self._frames: list[_Frame] = [_Frame(key=None, module_call=False)]
        self._classes: list[tuple[str, bool, frozenset[str]]] = []
        # The properties of each class being walked (`_properties`), innermost last.
        self._class_properties: list[frozenset[str]] = [frozenset()]
        # Per-step hooks of the classes defined so far, inherited by their subclasses here.
        self._class_hooks: dict[str, frozenset[str]] = {}
        self._guarded: list[cst.CSTNode] = []
        # `if step % 100 == 0:` tests (by id) and the bodies under them being walked.
        self._sparse_ifs: set[int] = set()
        self._sparse_bodies: list[cst.CSTNode] = []
        self._closure_calls: list[cst.Call] = []
        # `with torch.device(...)` / `with self.device:` blocks: factories there make tensors
        # on that device.
        self._device_withs: list[cst.With] = []
        self._default_lambdas: list[cst.Lambda] = []  # lambdas given as parameter defaults
        # Lambdas a function binds to a name and calls (`named_lambdas.py`): the lambda,
        # whether it runs in a frame of its own, and its parameters' narrowed kinds.
        self._named_lambdas: list[tuple[cst.Lambda, bool, list[tuple[str, Narrowed]]]] = []
        # `if isinstance(v, torch.Tensor):` bodies: the names tested, the kind each has in
        # the body, and the kind to restore after it.
        self._narrowed: list[tuple[cst.CSTNode, list[tuple[str, Kind, Kind | None]]]] = []
        # `if not isinstance(t, Tensor): t = torch.tensor(t)` on known tensors (`kept_tensors`).
        self._kept_tensors: list[tuple[cst.CSTNode, list[str]]] = []
        # Names a type test or a range check showed to be host values
        # (`analysis/type_tests.py`), innermost last: the node whose end ends the narrowing,
        # each name and what `TensorKinds.restore` needs there.
        self._host_narrowed: list[tuple[cst.CSTNode, list[tuple[str, Narrowed]]]] = []
        # Names a failed tensor test showed to be no tensor (`type_tests.non_tensor_names`),
        # innermost last: the node whose end ends it, each name and how many times it had
        # been bound there (a rebinding ends it too).
        self._not_tensors: list[tuple[cst.CSTNode, list[tuple[str, int]]]] = []
        # `if` statements being walked: the kinds before each, and at the end of each of its
        # branches walked so far that goes on after the `if`.
        self._branches: list[tuple[cst.If, BranchState, list[BranchState]]] = []
        # `try` statements (without `else`) being walked, as `_branches`: the kinds before
        # each, and at the end of its body and of each handler walked so far that goes on.
        self._tries: list[tuple[cst.Try, BranchState, list[BranchState]]] = []

    def _acts_beside_training(self, function: cst.CSTNode) -> bool:
        """A method without a loop of its own that runs a model, in a class another of whose
        methods runs backward in its own body: the class is an agent or a learner, and
        the method acts on each new observation (`batch_act(obs)`, `get_action(state)`),
        once per environment step. So does the `__call__` of a class that runs a model
        (a policy object called on each state), and a method named as a policy's action
        method (`hotness.ACTION_METHOD`: `draw_action(state)`, `get_actions(obs)`), whatever
        its class trains and whether or not it runs a model here (it may reach one through
        its own helpers or another module's approximator): the environment loop that calls
        it every step is another module's (mushroom's `Core`, garage's samplers). Its
        copies still need evidence of a device tensor. Asked after the walk."""
        known = self._acting.get(id(function))
        if known is None:
            known = self._acting[id(function)] = self._acts(function)
        return known

    def _acts(self, function: cst.CSTNode) -> bool:
        if not isinstance(function, cst.FunctionDef) or self._has_own_loop(function):
            return False
        block = self.parent_of.get(id(function))
        owner = self.parent_of.get(id(block)) if block is not None else None
        if not isinstance(owner, cst.ClassDef):
            return False
        if ACTION_METHOD.fullmatch(function.name.value):
            return True  # a policy's action method: once per environment step
        if self.loops.facts(function).model_calls == 0:
            return False
        if function.name.value == "__call__":
            return True  # a policy object called on each observation (`agent(state)`)
        return any(
            isinstance(method, cst.FunctionDef)
            and method is not function
            and self._trains_in_body(method)
            for method in owner.body.body
        )

    def _has_own_loop(self, function: cst.CSTNode) -> bool:
        """The function runs a loop in its own body (not in a nested function), or is
        handed a whole data loader (`fit(self, data_loader)`, whose helper loops over it
        for the features of every batch): one call of it is a pass over the data. Asked
        after the walk, when every loop is registered."""
        if self._looping is None:
            self._looping = {id(site.function) for site in self.loops.sites() if site.function}
        return id(function) in self._looping or takes_a_loader(function)

    @cached_property
    def _step_passes(self) -> StepPasses:
        """Which loops run a step on each pass (hot code asks, after the walk)."""
        return StepPasses(
            self.loops,
            self.epochs,
            self._collection_loops,
            self._row_loops,
            self._class_hooks,
            module=self.module,
            resolve=self.qualified,
        )

    def _function_of_loop(self, loop: cst.For | cst.While) -> cst.FunctionDef | None:
        site = self.loops.site(loop)
        return site.function if site is not None else None

    # -- questions rules ask --------------------------------------------------------------
    def qualified(self, node: cst.CSTNode) -> str | None:
        """`xm.mark_step` -> `torch_xla.core.xla_model.mark_step`, by the file's imports."""
        return self.imports.resolve(node)

    def spell_api(self, api: str) -> tuple[str, tuple[str, ...]]:
        """How this file writes the flattened torch_xla `api` (`xla_api.DEVICE`,
        `BARRIER`, `LAUNCH`) at the target release, and the import a fix must add:
        `torch_xla.sync` at 2.9, `xm.mark_step` at 2.3."""
        qualified, module_import = api_at(api, self.target)
        return self.imports.spell(qualified, module_import, self.names_in_use)

    @cached_property
    def names_in_use(self) -> NamesInUse:
        """Every name the file uses: an import a fix adds must not rebind one of them (in
        the whole file, blanked bodies included)."""
        if self._full_text is not None:
            return _names_in_full_text(self.module, self._full_text, self._blanked)
        return names_in_use(self.module)

    @cached_property
    def _module_classes(self) -> dict[str, cst.ClassDef]:
        """The module's top-level classes, by name."""
        return {n.name.value: n for n in self.module.body if isinstance(n, cst.ClassDef)}

    @cached_property
    def _functions(self) -> frozenset[str]:
        """The module's top-level functions, by name."""
        return top_level_functions(self.module)

    @cached_property
    def import_guards(self) -> ImportGuards:
        """The module's imports made only where a package is installed (`try:`/`if`)."""
        return ImportGuards(self.module)

    @cached_property
    def loops(self) -> LoopAnalysis:
        """What loops do: train, sample, reach a barrier (shared by the family 4 rules and
        hot code). Every loop and function is registered during the walk, whichever rules
        run, as long as one of them declared it uses "loops"."""
        self._require("loops")
        analysis = LoopAnalysis(self.module, self.imports)
        if self._text is not None:
            analysis.other_modules = ModuleSteps(self.path, self._text, self.module)
        return analysis

    @property
    def loop_values(self) -> LoopValues:
        """Which names change from one pass of a loop to the next, and which loops read a
        tensor on the host (XLA207-209), followed once during the walk for all of them."""
        self._require("loop_values")
        assert self._values is not None
        return self._values

    @property
    def masks(self) -> BooleanMasks:
        """Which values are boolean masks (XLA201-203)."""
        self._require("masks")
        assert self._masks is not None
        return self._masks

    def _require(self, analysis: str) -> None:
        if analysis not in self._uses:
            raise RuntimeError(
                f'ctx.{analysis} asked by a rule that does not declare uses = ("{analysis}",)'
            )

    @cached_property
    def device_choices(self) -> DeviceChoices:
        """Which `if`s and ternaries choose a device (shared by the device rules)."""
        return DeviceChoices(self.imports, device_helpers(self.module, self.imports))

    def kind(self, node: cst.BaseExpression) -> Kind:
        return self.kinds.of(node)

    @cached_property
    def _module_reads(self) -> ModuleReads | None:
        if self._text is None or not is_on_disk(self.path):
            return None
        return ModuleReads(self.path, self._text)

    def read_elsewhere(self, call: cst.Call) -> tuple[cst.BaseExpression, Found] | None:
        """The first device tensor `call` hands to a function of another project module
        that reads that parameter on the host (`module_reads.py`), with the read; asked
        by XLA101 and XLA102 (each reports the reads of its code), answered once."""
        key = id(call)
        if key in self._elsewhere_reads:
            return self._elsewhere_reads[key]
        self._elsewhere_reads[key] = found = self._read_elsewhere(call)
        return found

    def _read_elsewhere(self, call: cst.Call) -> tuple[cst.BaseExpression, Found] | None:
        reads = self._module_reads
        if reads is None or type(call.func) not in (cst.Name, cst.Attribute):
            return None
        spelled = get_full_name_for_node(call.func)
        if spelled is None:
            return None
        own: str | None = None
        inherited: tuple[str, ...] = ()
        instance: str | None = None
        if spelled.partition(".")[0] not in reads.bindings:
            own, inherited = self._own_callee(spelled)
            if own is None and not inherited:
                instance = self._named_instance(call.func)
                if instance is None:
                    return None
        passed = frozenset(
            arg.keyword.value if arg.keyword else position
            for position, arg in enumerate(call.args)
            if not (type(arg.value) is cst.Name and arg.value.value == "None")
        )
        for position, arg in enumerate(call.args):
            if arg.star:
                return None
            if not self._handed_a_device_value(arg.value):
                continue
            at = arg.keyword.value if arg.keyword else position
            if instance is not None:
                method = spelled.rpartition(".")[2]
                found = reads.read_named_instance(instance, method, at, passed)
            elif inherited:
                found = reads.read_inherited(inherited, spelled.partition(".")[2], at, passed)
            elif own is None:
                found = reads.read(spelled, at, passed)
            else:
                found = reads.read_own(own, at, passed)
            if found is not None:
                return arg.value, found
        return None

    def _named_instance(self, func: cst.BaseExpression) -> str | None:
        """`logger` for `logger.log(...)` where `logger` is a parameter of the function
        being walked that it neither annotates nor rebinds: an object its callers hand it,
        of a class the file names only by the parameter's name (sac's `update_critic(self,
        obs, ..., logger, step)` calling `logger.log("train_critic/loss", critic_loss,
        step)`, the project's `Logger`)."""
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
            return None
        node = self._frames[-1].node if self._frames else None
        if node is None:
            return None
        name = func.value.value
        if self.kinds.of(func.value) is Kind.TENSOR:
            return None  # `out.copy_(t)`: a tensor's own method
        param = next((p for p in parameters(node) if p.name.value == name), None)
        if param is None or param.annotation is not None or name in ("self", "cls"):
            return None
        if binding_counts(node).get(name):
            return None
        return name

    def calls_name(self, name: str) -> bool:
        """Whether the file's text calls `name` other than in its `def` (`name(`,
        `self.name(`): a cheap bound on whether a call of this module may run a function of
        that name, asked before judging what its calls hand it (True without the text)."""
        counts = self._name_counts
        return counts is None or counts[0].get(name, 0) > counts[1].get(name, 0)

    def defines_name(self, name: str) -> bool:
        """Whether the file's text defines a function or method `name` (`def name(`): a
        call of any other name (`len(x)`, `range(n)`) runs no helper of this module (True
        without the text)."""
        counts = self._name_counts
        return counts is None or name in counts[1]

    @cached_property
    def _name_counts(self) -> tuple[Counter[str], Counter[str]] | None:
        """How often the text spells each name followed by `(`, and each name after `def`:
        one scan of the text for `calls_name` and `defines_name`."""
        if self._text is None:
            return None
        return Counter(_CALLED.findall(self._text)), Counter(_DEFINED.findall(self._text))

    def _result_elsewhere(self, call: cst.Call) -> bool:
        """Whether `call` runs a function of another project module whose result is
        computed on the device from a parameter the call hands a device tensor
        (`module_reads.result_from`: `if misc.is_nan(error_estimate):`, `error_ratio =
        hairer_norm(error_scaled)`); answered once per call, where the walk meets it."""
        key = id(call)
        known = self._computed_elsewhere.get(key)
        if known is None:
            self._computed_elsewhere[key] = False  # (an argument's kind may ask again)
            known = self._computed_elsewhere[key] = self._computes_elsewhere(call)
        return known

    def _property_elsewhere(self, node: cst.Attribute) -> bool:
        """Whether `node` (`sequence_parallel.real_position_ids`, an imported name and one
        attribute) reads a property another project module declares to return a tensor,
        of an object it builds at its top level (`module_reads.tensor_property`)."""
        if type(node.value) is not cst.Name:
            return False
        reads = self._module_reads
        if reads is None or node.value.value not in reads.bindings:  # type: ignore[attr-defined]
            return False
        return reads.tensor_property(f"{node.value.value}.{node.attr.value}")  # type: ignore[attr-defined]

    def _computes_elsewhere(self, call: cst.Call) -> bool:
        if type(call.func) not in (cst.Name, cst.Attribute):
            return False
        spelled = get_full_name_for_node(call.func)
        reads = self._module_reads
        if spelled is None or reads is None or spelled.partition(".")[0] not in reads.bindings:
            return False
        tensors: list[int | str] = []
        for position, arg in enumerate(call.args):
            if arg.star:
                break  # (positions past `*args` bind nothing known)
            if self.kinds.of(arg.value) is Kind.TENSOR:
                tensors.append(arg.keyword.value if arg.keyword else position)
        if not tensors:
            return False  # (most calls: the other module is not read)
        summary = reads.result_from(spelled)
        return summary is not None and any(
            summary.parameter_at(at) in summary.returns for at in tensors
        )

    def _handed_a_device_value(self, value: cst.BaseExpression) -> bool:
        """A device tensor, or a value of unknown kind computed from one (`scores =
        self.model.compute_score(q, p)`, then `scores[i, i].float()`): what the rules' own
        copies of such values count as device reads (`kinds.computed_from_tensors`)."""
        kind = self.kinds.of(value)
        if kind is Kind.TENSOR:
            return True
        if kind is not Kind.UNKNOWN or not self.kinds.computed_from_tensors(value):
            return False
        # `tensor2np(tensor2tensorlab(x))`: what a helper that copies its input to the host
        # hands back is a host value, and the copy is the inner call's.
        return not (type(value) is cst.Call and self.read_elsewhere(value) is not None)

    def _own_callee(self, spelled: str) -> tuple[str | None, tuple[str, ...]]:
        """`f` for a top-level function of this file, `Class.m` for `self.m` in a method of
        `Class` (or of the class of the file it inherits `m` from): the file's own
        functions, which may hand a value on to another module. Where neither the class
        nor its bases in this file define `m`, the bases it names from other modules, in
        order (`class BaseEmbedder(AbsEmbedder)`: `m` is `AbsEmbedder`'s)."""
        if "." not in spelled:
            return (spelled if spelled in self._functions else None), ()
        owner, _, method = spelled.partition(".")
        function = self.function
        if owner != "self" or "." in method or function is None or function.class_name is None:
            return None, ()
        classes = self._module_classes
        pending = [function.class_name]
        foreign: list[str] = []
        seen: set[str] = set()
        while pending:
            name = pending.pop(0)
            class_def = classes.get(name)
            if name in seen or class_def is None:
                continue
            seen.add(name)
            if any(
                isinstance(s, cst.FunctionDef) and s.name.value == method
                for s in class_def.body.body
            ):
                return f"{name}.{method}", ()
            for base in class_def.bases:
                base_name = None if base.keyword else get_full_name_for_node(base.value)
                if base_name is None:
                    continue
                if base_name in classes:
                    pending.append(base_name)
                else:
                    foreign.append(base_name)
        if function.class_name not in classes:
            return f"{function.class_name}.{method}", ()  # (a nested class: as before)
        return None, tuple(foreign)

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kinds.of(node) is Kind.TENSOR

    @property
    def parent(self) -> cst.CSTNode | None:
        """The parent of the node being visited."""
        return self._stack[-2] if len(self._stack) >= 2 else None

    def ancestors(self) -> Iterator[cst.CSTNode]:
        """Ancestors of the node being visited, innermost first."""
        return reversed(self._stack[:-1])

    @property
    def in_loop(self) -> bool:
        return bool(self._frames[-1].loops)

    @property
    def enclosing_loops(self) -> tuple[cst.CSTNode, ...]:
        """Loops whose pass runs the node being visited, in its function, outermost first."""
        return tuple(self._frames[-1].loops)

    def _option_defaults(
        self, option: str, settings: cst.BaseExpression | None = None
    ) -> list[int | None]:
        """The defaults this file and the project's files importing it declare for the
        command-line option read as `args.<option>` (`module_callers.declared_defaults`);
        none where the layer over other modules stays out. With `settings`, the class a
        settings object is annotated with (`TrainingParams`): the default that class
        declares for the field `option`, in the project module the file's imports name
        (`config_fields.field_default`; none where the class is not found)."""
        if settings is not None:
            qualified = self.imports.resolve(settings)
            if qualified is None or self._text is None:
                return []
            key = f"{qualified}:{option}"
            found = self._options.get(key)
            if found is None:
                default = field_default(self.path, qualified, option)
                found = [] if default is None else [default]
                self._options[key] = found
            return found
        found = self._options.get(option)
        if found is None:
            text = self._text
            found = [] if text is None else declared_defaults(self.path, text, option)
            self._options[option] = found
        return found

    def _class_def(self) -> cst.ClassDef | None:
        """The innermost class the walk is in."""
        return next((n for n in reversed(self._stack) if isinstance(n, cst.ClassDef)), None)

    def _flag_loops(self) -> Sequence[cst.CSTNode]:
        """The loops whose passes a local flag cleared in the `if` being visited counts
        (`intervals.clears_its_flag`): none in a function that runs once per step by itself
        (`training_step`), whose flag is armed again on every call."""
        frame = self._frames[-1]
        if not frame.loops:
            return ()
        site = Site(
            frame.key,
            in_loop=True,
            in_step_closure=False,
            module_call=frame.module_call,
            hook=frame.hook,
        )
        return () if self.hot.per_step_by_itself(site) else frame.loops

    def frequency(self, site: Site) -> str:
        """How often the code at `site` runs, in words for a message, from the code: "every
        step" in a batch loop or a per-step function, "on every pass of its loop" in another
        loop, else "each time `f()` runs". Asked after the walk (batch loops are told by
        `LoopAnalysis`, which knows every function only then)."""
        loops = [s for s in site.scopes if isinstance(s, cst.For | cst.While)]
        if loops:
            if any(self.epochs.is_batch_loop(loop) for loop in loops):
                return "every step"
            return "on every pass of its loop"
        if site.function is None or self.hot.per_step_by_itself(site):
            return "every step"
        return f"each time `{site.function.name}()` runs"

    @property
    def function(self) -> FunctionKey | None:
        return self._frames[-1].key

    def type_tested_host(self, node: cst.BaseExpression) -> bool:
        """Whether `node` is a name a type test made a Python value here (`float(v)` under
        `if isinstance(v, float):`), a parameter a range check showed to be a count, or a
        name a failed tensor test showed to be no tensor (`not isinstance(t, torch.Tensor)
        and float(t) == 1.0`): a helper reading it there reads no tensor it is handed."""
        if type(node) is not cst.Name:
            return False
        name = node.value  # type: ignore[attr-defined]
        if any(
            name == tested and self.kinds.times_bound(name) == bound
            for _, names in self._not_tensors
            for tested, bound in names
        ):
            return True  # `not isinstance(t, torch.Tensor) and float(t) == 1.0`
        return (
            any(name == narrowed for _, names in self._host_narrowed for narrowed, _ in names)
            and self.kinds.lookup(name) is Kind.HOST
        )

    @property
    def function_node(self) -> cst.FunctionDef | None:
        """The function whose body is being walked (None at module level)."""
        node = self._frames[-1].node
        return node if isinstance(node, cst.FunctionDef) else None

    @property
    def class_name(self) -> str | None:
        """The innermost class whose code is being walked (a method's, or a function's
        nested in one), None outside classes."""
        return self._classes[-1][0] if self._classes else None

    @property
    def under_cuda_guard(self) -> bool:
        return bool(self._guarded)

    def _walks_batches_inside(self, body: cst.CSTNode) -> bool:
        """A loop over a loader stands between `body` (an ancestor) and the node visited,
        and the node is in the loop's body."""
        stack = self._stack
        at = len(stack) - 1
        while at >= 0 and stack[at] is not body:
            at -= 1
        function = self.function_node
        return any(
            type(loop) is cst.For
            and i + 1 < len(stack)
            and stack[i + 1] is loop.body  # type: ignore[attr-defined]
            and walks_a_loader(loop, function)
            for i, loop in enumerate(stack[at + 1 :], at + 1)
        )

    @property
    def under_sparse_interval(self) -> bool:
        """In the body of `if step % interval == 0:` with an interval known to be long
        (`analysis/intervals.py`), past `if step % interval != 0: return` with such an
        interval, or past `if batch_idx > 0: return` in a function handed its batch number:
        it runs once every many passes, not every step. Not inside a loop over a loader
        that the interval's body runs (`for valid_batch in self.valid_dataloader:` under
        `if divisible_by(self.steps, self.valid_every):`): each batch of that loop is a
        step of its own."""
        if self._sparse_bodies:
            return not self._walks_batches_inside(self._sparse_bodies[-1])
        path = tuple(reversed(self._stack))
        return past_interval_exit(path, self.module) or self._past_a_pass_over_a_loader()

    def _past_a_pass_over_a_loader(self) -> bool:
        """In a branch of a loop's pass, after a loop over a whole loader that trains
        nothing (`for val_data in self.val_dataloader:` under `if is_valid_step:`, then
        `val_loss.detach().item()` once the batches are summed): the branch runs a pass
        over that loader, and what follows it runs once per such pass (a validation's
        total), not on each step, however the branch's test is spelled."""
        stack = self._stack
        function = self.function_node
        found = False
        for at in range(len(stack) - 2, 0, -1):
            holder, child = stack[at], stack[at + 1]
            kind = type(holder)
            if kind in _LOOPS or kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                return False
            if found:
                if kind is cst.If and child is holder.body:  # type: ignore[attr-defined]
                    return True
                continue
            if kind is not cst.IndentedBlock:
                continue
            for statement in holder.body:  # type: ignore[attr-defined]
                if statement is child:
                    break
                if _passes_over_a_loader(statement, function):
                    found = True
                    break
            if found and type(stack[at - 1]) is cst.If and stack[at - 1].body is holder:  # type: ignore[attr-defined]
                return True
        return False

    @property
    def in_warning_branch(self) -> bool:
        """In the body of an `if` that only warns about a checked value (`if kl.max() >
        100: log.warning(...)`, `analysis/warning_branches.py`): it runs when the value
        has gone wrong, not every step."""
        return in_warning_branch(reversed(self._stack), self.imports)

    @property
    def in_warned_repair(self) -> bool:
        """In the body of an `if` that warns about a checked value and repairs it
        (`if torch.any(grad.isnan()): logger.warning(...); grad[grad.isnan()] = 0.0`):
        it runs when the value has gone wrong, not every step."""
        return in_warning_branch(reversed(self._stack), self.imports, repairs=True)

    @property
    def runs_without_xla(self) -> bool:
        """Whether the node being visited runs only where XLA is not in use: under a CUDA
        guard, after `if not torch.cuda.is_available(): return`, or where a test for XLA
        failed (`if is_xla: ... else: <here>`). Device and dtype rules leave it alone."""
        return self._runs_without_xla(host_tests=True)

    @property
    def moves_without_xla(self) -> bool:
        """`runs_without_xla` for a move to CUDA (XLA301): a test that a value is on the
        CPU (`param.cuda() if param.device.type == "cpu" else param`) guards nothing
        there, since an XLA host holds host tensors too and takes that branch for them."""
        return self._runs_without_xla(host_tests=False)

    def _runs_without_xla(self, *, host_tests: bool) -> bool:
        return (
            self._in_cuda_guarded_branch()
            # The node itself too: the body of a ternary (`f() if use_cuda else None`).
            or devices.runs_without_xla(reversed(self._stack), self.imports, host_tests=host_tests)
            or self._in_cuda_only_function()
            or self.in_gpu_implementation
            or self._under_predicate_false_on_xla()
        )

    def _in_cuda_guarded_branch(self) -> bool:
        """Under an `if` (or ternary) whose test mentions CUDA, except in a branch whose
        test says there that a value is not on CUDA (`if not p.is_cuda: p.data =
        p.data.cuda()`, the `else` of `if t.is_cuda:`, `if x.device.type != "cuda":`, `if
        'cuda' not in str(orig_device):`): an
        XLA tensor is never `is_cuda`, so that branch is exactly what runs on an XLA host.
        (A failed probe, the `else` of `if torch.cuda.is_bf16_supported():`, says nothing
        of where values are.) Nor is a flag parameter on by
        default (`def build(name, cuda=True)`, then `if cuda: model.cuda()`): with the
        defaults an XLA host takes either branch of it (`guards.on_by_default`)."""
        stack = self._stack
        for guard in self._guarded:
            at = next((i for i, n in enumerate(stack) if n is guard), len(stack) - 1)
            test = guard.test  # type: ignore[attr-defined]
            function = next((n for n in reversed(stack[:at]) if type(n) is cst.FunctionDef), None)
            if all(
                on_by_default(operand, function) or not mentions_cuda(operand, self.imports)
                for operand in _operands(test)
            ):
                continue  # `if cuda and not verbose:` with `cuda=True`
            child = stack[at + 1] if at + 1 < len(stack) else None
            if child is None or child is test:
                return True
            holds = child is guard.body  # type: ignore[attr-defined]
            if implied(test, holds, asks_placement) is not False:
                return True
        return False

    @property
    def past_settled_exit(self) -> bool:
        """Whether the node being visited follows an exit that always runs first (`assert
        x is None` at the top, then `if x is None: continue` in the loop): it never runs."""
        return past_settled_exit(tuple(reversed(self._stack)))

    @property
    def in_settled_branch(self) -> bool:
        """Whether the node being visited sits in a branch an earlier default settles
        against (`if dim_size is None: dim_size = ...`, then the `else` of `if dim_size is
        not None:`): it never runs."""
        return in_settled_branch(tuple(reversed(self._stack)))

    @cached_property
    def _xla_predicates(self) -> reachability.XlaPredicates:
        return reachability.XlaPredicates(self.module, self.imports)

    def _under_predicate_false_on_xla(self) -> bool:
        """Under `if self._use_closures():` whose predicate returns False on XLA (also
        inside a lambda made there: it exists only where the branch ran), or under a flag
        the module keeps False on XLA (`if self.args.fp16:` after `__init__`'s `if not
        use_cuda: self.args.fp16 = False`)."""
        path = [node for node in reversed(self._stack) if type(node) is not cst.Lambda]
        return any(
            reachability.false_on_xla(
                test, holds, self._xla_predicates, self.false_on_xla_host, self.none_on_xla_host
            )
            for test, holds in path_conditions(path)
        )

    @cached_property
    def _flag_facts(self) -> FlagFacts:
        return FlagFacts(self.module, self.imports, self._xla_predicates)

    def _flag_guarded(self, path: tuple[cst.CSTNode, ...]) -> bool:
        """Whether the code at `path` (a node and its ancestors, innermost first) sits
        under a flag this module keeps False on XLA (`if self.args.fp16:`)."""
        facts, function, owner = self._flag_facts, *_scope(path)

        def flag_false(node: cst.BaseExpression) -> bool:
            return facts.false_on_xla(node, function, owner)

        def none(node: cst.BaseExpression) -> bool:
            return facts.none_on_xla(node, function, owner)

        return any(
            reachability.false_on_xla(test, holds, self._xla_predicates, flag_false, none)
            for test, holds in path_conditions(path)
        )

    def false_on_xla_host(self, node: cst.BaseExpression) -> bool:
        """Whether `node`, read where the walk is, is false on any XLA host: a value true
        only with CUDA, or a flag of this class or module that is (`flag_facts`)."""
        return self._flag_facts.false_on_xla(node, *_scope(tuple(reversed(self._stack))))

    def none_on_xla_host(self, node: cst.BaseExpression) -> bool:
        """Whether `node`, read where the walk is, is None on any XLA host: the result of
        a function of the module that returns None unless CUDA is in use, directly or
        through a local name or an attribute of the class (`flag_facts.none_on_xla`)."""
        return self._flag_facts.none_on_xla(node, *_scope(tuple(reversed(self._stack))))

    @property
    def in_gpu_implementation(self) -> bool:
        """Inside a GPU implementation of a device abstraction (`class DeviceGPU(Device)`)."""
        return any(
            isinstance(node, cst.ClassDef) and devices.is_gpu_implementation(node)
            for node in self._stack
        )

    @cached_property
    def _off_xla(self) -> reachability.OffXla:
        return reachability.OffXla(self.module, self.imports, self._flag_guarded)

    def never_runs_on_xla(self, node: cst.CSTNode) -> bool:
        """Whether `node`, met during the walk, runs only where XLA is not in use, asked
        once the walk is over (the loops family 4 judges then): under a CUDA guard, a test
        for another accelerator or framework (`elif backend_name == "paddle":`) or a failed
        XLA test, or in a function this file calls only from such branches."""
        path: list[cst.CSTNode] = []
        current: cst.CSTNode | None = node
        while current is not None:
            path.append(current)
            current = self.parent_of.get(id(current))
        if devices.runs_without_xla(path, self.imports):
            return True
        outermost = next((n for n in reversed(path) if type(n) is cst.FunctionDef), None)
        return outermost is not None and self._off_xla.never_on_xla(outermost)  # type: ignore[arg-type]

    @property
    def in_cuda_only_function(self) -> bool:
        """`_in_cuda_only_function`, for rules that judge guards their own way (XLA306)."""
        return self._in_cuda_only_function()

    def _in_cuda_only_function(self) -> bool:
        """Inside a module-level function, or a method, that this file calls only
        under CUDA guards or failed XLA tests (`if not self.tpu:`), or hands only to a
        process spawner there (`mp.spawn(self.worker, ...)`), and does not export in
        `__all__` (other modules may call its API anywhere); a public method only through
        `self`."""
        outermost = next((node for node in self._stack if isinstance(node, cst.FunctionDef)), None)
        return outermost is not None and self._off_xla.never_on_xla(outermost)

    @property
    def in_raise(self) -> bool:
        """The node being visited builds an error: part of a `raise` statement, of an
        `assert`'s message, or of a block that ends in `raise` and leaves no other way
        (no `return`, `break` or `continue` in it; not a `try` body, whose error may be
        caught): `first = mask.nonzero()[0].item()` in `if mask.any():` before `raise
        RuntimeError(f"... {first}")` names what went wrong. So does the body of an `if`
        that ends by raising where a setting asks for it and giving up otherwise (`if
        raise_on_error: raise FloatingPointError(msg)` / `else: return`), with no other
        exit before: `msg = f"Loss is {loss.item()}"` under `if not
        math.isfinite(...)`. All run only on the error path."""
        stack = self._stack
        for depth, node in enumerate(stack):
            if type(node) is cst.Raise:
                return True
            if type(node) is cst.Assert and depth + 1 < len(stack) and stack[depth + 1] is node.msg:
                return True
            if (
                type(node) is cst.IndentedBlock
                and depth > 0
                and type(stack[depth - 1]) not in (cst.Try, cst.TryStar)
                and ends_in(node, (cst.Raise,))  # type: ignore[arg-type]
                and _no_other_exit(node)  # type: ignore[arg-type]
            ):
                return True
            if (
                type(node) is cst.IndentedBlock
                and depth > 0
                and type(stack[depth - 1]) is cst.If
                and stack[depth - 1].body is node  # type: ignore[attr-defined]
                and _raises_or_gives_up(node) == (True, True)  # type: ignore[arg-type]
            ):
                return True
        return False

    @property
    def in_failure_handler(self) -> bool:
        """The node being visited is in the body of a handler that recovers from a failed
        computation (`except RuntimeError:` around a solve, with a fallback on the CPU,
        `analysis/error_paths.py`): it runs when that computation fails, not every step;
        or the `except TypeError:` fallback of a `try` that only calls torch on tensors,
        for a torch release without that signature (`error_paths.compatibility_probe`)."""
        stack = self._stack
        return any(
            type(node) is cst.ExceptHandler
            and depth + 1 < len(stack)
            and stack[depth + 1] is node.body
            and (
                handles_a_failure(node)
                or (
                    depth > 0
                    and type(stack[depth - 1]) is cst.Try
                    and compatibility_probe(node, stack[depth - 1], self.qualified, self.is_tensor)
                )
            )
            for depth, node in enumerate(stack)
        )

    @property
    def in_step_closure(self) -> bool:
        return bool(self._closure_calls)

    def _calls_itself(self, func: cst.BaseExpression) -> bool:
        """The call runs the function it is made in: a module function calling its own
        name (`walk(child)` in `def walk(node)`), a method calling itself on `self`
        (`self.encode(batch)` in `encode`)."""
        function = self.function
        if function is None:
            return False
        if type(func) is cst.Name:
            return function.class_name is None and func.value == function.name
        return (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and function.class_name is not None
            and func.attr.value == function.name
        )

    def site(self) -> Site:
        frame = self._frames[-1]
        loops = frame.loops
        if loops:
            # A block that ends in `break` (`return`) runs once per run of the loop it
            # leaves: the site is where the loop (the function) runs, not in its passes.
            inside, left = passes_left(reversed(self._stack), len(loops))
            if left:
                end = len(loops) - inside
                loops = loops[: end - left] + loops[end:]
        scopes = (frame.node, *loops) if frame.node is not None else tuple(loops)
        return Site(
            frame.key,
            any(id(loop) not in frame.collections for loop in loops),
            self.in_step_closure,
            frame.module_call,
            scopes,
            hook=frame.hook,
            sparse=self.under_sparse_interval,
        )

    # -- bookkeeping, called by the engine around every node ------------------------------
    # The engine calls these two for every node of the file: they dispatch on the node's
    # exact type (libcst's node classes are final) because `isinstance` on libcst's ABCs
    # costs a quarter of a lint, and most nodes need no bookkeeping at all.
    def enter(self, node: cst.CSTNode) -> None:
        parent = self._stack[-1] if self._stack else None
        self._stack.append(node)
        self.parent_of[id(node)] = parent
        kind = type(node)
        if kind is cst.Try or kind is cst.ExceptHandler or kind is cst.Finally:
            self._enter_try_part(node, kind, parent)
        if parent is not None and type(parent) in _LOOPS and _opens_a_pass(parent, node):
            self._frames[-1].loops.append(parent)
        if (
            self._sparse_ifs
            and type(parent) is cst.If
            and id(parent) in self._sparse_ifs
            and node is parent.body  # type: ignore[union-attr]
        ):
            self._sparse_bodies.append(node)
        if parent is not None and type(parent) in _NARROWING_PARENTS:
            self._narrow_entered(parent, node)
        if (kind is cst.If or kind is cst.SimpleStatementLine) and type(parent) in _BLOCKS:
            self._range_checks(node, kind, parent)  # type: ignore[arg-type]
            if (
                kind is cst.SimpleStatementLine
                and self._frames[-1].node is not None
                and self.kinds.holds_host_tensors()
            ):
                self._host_indexes(node, parent)  # type: ignore[arg-type]
        if self._narrowed and node is self._narrowed[-1][0]:
            for name, kind_in_body, _ in self._narrowed[-1][1]:
                self.kinds.bind(cst.Name(name), kind_in_body)
        if kind in _LOOPS and self._registers_loops:
            # Every loop and function is known to `LoopAnalysis`, whichever rules run: what
            # a loop does (and so hot code) must not depend on the rule set.
            frame = self._frames[-1]
            per_step_frame = frame.module_call or frame.hook
            self.loops.register_loop(node, self.ancestors(), per_step_frame)  # type: ignore[arg-type]
        if kind is cst.Attribute and self._class_properties[-1]:
            self._read_property(node)  # type: ignore[arg-type]
        if kind is cst.Subscript and self._masks is not None:
            self._masks.note_index(node)  # type: ignore[arg-type]
        if kind not in _ENTERED:
            if self._values is not None and kind in _VALUE_NODES:
                self._enter_values(node, kind, parent)
            return
        if kind is cst.FunctionDef:
            if self._registers_loops:
                owner = self._stack[-3] if len(self._stack) >= 3 else None  # past the block
                method_of = owner if type(owner) is cst.ClassDef else None
                self.loops.register_function(node, method_of)  # type: ignore[arg-type]
            self._enter_function(node)  # type: ignore[arg-type]
        elif kind is cst.ClassDef:
            assert isinstance(node, cst.ClassDef)
            bases = base_names(node)
            methods = (
                statement.name.value
                for statement in node.body.body
                if isinstance(statement, cst.FunctionDef)
            )
            resolved = [self.imports.resolve(b.value) for b in node.bases]
            imported = imported_base_names(resolved)
            hooks = per_step_hooks([node.name.value, *bases, *imported], methods).union(
                autograd_function_hooks(resolved)
                if node.name.value not in self._exported_applies
                else frozenset(),
                *(self._class_hooks.get(base, frozenset()) for base in bases),
            )
            self._class_hooks[node.name.value] = hooks
            is_module = is_module_class(node, self.imports, self.kinds.module_classes)
            self._classes.append((node.name.value, is_module, hooks))
            self._class_properties.append(_properties(node))
            self.kinds.push_class(
                node.name.value,
                module=is_module,
                methods=_plain_methods(node),
                tensor_methods=tensor_returns(node.body.body),
                tensors_methods=tensor_returns(node.body.body, Kind.ITERABLE),
                bases=bases,
                overridden=partial(overridden_methods, node),
                # (only a file that registers buffers has any a trainer keeps on the host)
                node=node if "register_buffer" in self._text else None,
            )
        elif kind is cst.If or kind is cst.IfExp:
            assert isinstance(node, cst.If | cst.IfExp)
            if mentions_cuda(node.test, self.imports):
                self._guarded.append(node)
            if kind is cst.If and may_be_sparse(node.test):
                if sparse_test(
                    node.test,
                    self._frames[-1].node,
                    self._class_def(),
                    self.module,
                    options=self._option_defaults,
                ):
                    self._sparse_ifs.add(id(node))
            elif kind is cst.If and type(node.test) is cst.Comparison:
                function = self._frames[-1].node
                if resets_its_counter(node, function, self._class_def(), self.module):  # type: ignore[arg-type]
                    self._sparse_ifs.add(id(node))
            if kind is cst.If:
                # Loops whose passes a flag cleared here counts: read once per `if`.
                flag_loops = self._flag_loops()
                frame = self._frames[-1]
                if (
                    clears_its_flag(node, frame.node, flag_loops)  # type: ignore[arg-type]
                    # `if self.cache is None: self.cache = ...`: filled once, then full.
                    or fills_when_empty(node, frame.node)  # type: ignore[arg-type]
                    # `if group["step"] == 0:` beside `group["step"] += 1` on every call.
                    or (not frame.loops and counts_its_calls(node, frame.node))  # type: ignore[arg-type]
                    # `next_lr = v.item()`, then `group["phase"] = "sgd"`, behind its exit.
                    or switches_once(node, tuple(reversed(self._stack)))  # type: ignore[arg-type]
                    # `if i == 0 and ...:` in the function's outermost `for i in range(n)`.
                    or runs_on_its_first_pass(node, flag_loops)  # type: ignore[arg-type]
                ) or (
                    frame.loops
                    and passes_its_value_once(
                        node,  # type: ignore[arg-type]
                        frame.node,  # type: ignore[arg-type]
                        frame.loops,
                        per_call=not flag_loops,
                    )
                ):
                    self._sparse_ifs.add(id(node))
            if kind is cst.If:
                self._branches.append((node, self.kinds.branch_state(), []))  # type: ignore[arg-type]
            if kind is cst.If and not node.orelse and (kept := self.kinds.kept_tensors(node.test)):
                self._kept_tensors.append((node, kept))
            if kind is cst.If and (names := self.kinds.narrowed_to_tensor(node.test)):
                assert isinstance(node, cst.If)
                self._narrowed.append((node.body, self._narrowing(node, names)))

        elif kind is cst.For or kind is cst.CompFor:
            assert isinstance(node, cst.For | cst.CompFor)
            if kind is cst.For and (
                walks_a_collection(node.iter, self.kinds.is_dict) or draws_a_figure(node)
            ):
                self._frames[-1].collections.add(id(node))
                self._collection_loops.add(id(node))
            elif kind is cst.For and (
                self.kinds.of(rows_walked(node.iter)) is Kind.TENSOR or unbinds_a_tensor(node.iter)
            ):
                self._row_loops.add(id(node))  # one tensor's rows
            self.kinds.bind_loop_target(node.target, node.iter)
            if kind is cst.For:
                self.kinds.keep_unmoved_rows_on_host(node, self._frames[-1].node)  # type: ignore[arg-type]
                self.kinds.keep_host_until_moved(node, [node.target], self._frames[-1].node)  # type: ignore[arg-type]
            if self._masks is not None:
                self._masks.bind_loop_target(node.target, node.iter)
        elif kind in COMPREHENSIONS:
            # Python runs a comprehension's `for` clauses before its element, but the walk
            # meets the element first: bind the targets now, so that `h` in `[float(h.score)
            # for h in hyps]` and `v` in `{k: v.cpu() for k, v in outputs.items()}` have
            # the kinds of their iterables' elements where they are read.
            clause = node.for_in  # type: ignore[union-attr]
            while isinstance(clause, cst.CompFor):
                self.kinds.bind_loop_target(clause.target, clause.iter)
                clause = clause.inner_for_in
        elif kind is cst.Import or kind is cst.ImportFrom:
            self.imports.add(node)  # type: ignore[arg-type]
        elif kind is cst.Call:
            self._enter_call(node)  # type: ignore[arg-type]
        elif kind is cst.Lambda:
            if type(parent) is cst.Param and parent.default is node:  # type: ignore[union-attr]
                # `output_transform=lambda x, y, y_pred, loss: loss.item()`: the default runs
                # wherever the parameter is called, as a function of that name.
                name = parent.name.value  # type: ignore[union-attr]
                self._frames.append(_Frame(key=FunctionKey(None, name), module_call=False))
                self._default_lambdas.append(node)
            else:
                self._enter_named_lambda(node, parent)  # type: ignore[arg-type]
        elif kind is cst.Return:
            # What a method of an nn.Module class returns: `agent.get_action(obs)` elsewhere.
            self.kinds.note_return(node.value)  # type: ignore[attr-defined]
        elif kind is cst.With:
            assert isinstance(node, cst.With)
            if any(devices.sets_default_device(item.item, self.imports) for item in node.items):
                self._device_withs.append(node)
                self.kinds.device_contexts += 1
            for item in node.items:
                if item.asname is not None:
                    self.kinds.note_wrapper(item.asname.name, item.item)
                    self.kinds.note_opened(item.asname.name, item.item)
        if self._values is not None and kind in _VALUE_NODES:
            self._enter_values(node, kind, parent)

    def _enter_values(self, node: cst.CSTNode, kind: type, parent: cst.CSTNode | None) -> None:
        """Feed `LoopValues` once the rest of the context has entered `node` (a loop's
        target is bound as a kind by then)."""
        values = self._values
        assert values is not None
        if kind is cst.Call:
            values.note_call(node)  # type: ignore[arg-type]
        elif kind is cst.FunctionDef:
            values.push_function(node)  # type: ignore[arg-type]
        elif kind is cst.For or kind is cst.While:
            values.enter_loop(node)  # type: ignore[arg-type]
        else:  # a block: a `for` body starts its pass
            values.enter_block(node, parent)  # type: ignore[arg-type]

    def _leave_values(self, node: cst.CSTNode, kind: type, parent: cst.CSTNode | None) -> None:
        """Feed `LoopValues` after the rules left `node` and before the context binds the
        kinds of an assignment's targets (`LoopValues` reads the kinds from before it)."""
        values = self._values
        assert values is not None
        if kind is cst.Assign:
            values.bind([t.target for t in node.targets], node.value)  # type: ignore[attr-defined]
        elif kind is cst.AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                values.bind([node.target], node.value)  # type: ignore[attr-defined]
        elif kind is cst.AugAssign:
            values.bind_augmented(node)  # type: ignore[arg-type]
        elif kind is cst.FunctionDef:
            values.pop_function()
        elif kind is cst.For or kind is cst.While:
            values.leave_loop(node)  # type: ignore[arg-type]
        elif kind is cst.IndentedBlock or kind is cst.SimpleStatementSuite:
            values.leave_block(node, parent)  # type: ignore[arg-type]

    def leave(self, node: cst.CSTNode) -> None:
        self._stack.pop()
        parent = self._stack[-1] if self._stack else None
        kind = type(node)
        if kind is cst.Try and self._tries and self._tries[-1][0] is node:
            self._merge_try()
        if parent is not None and type(parent) in _LOOPS and _opens_a_pass(parent, node):
            self._frames[-1].loops.pop()
        if self._values is not None and kind in _VALUES_LEFT:
            self._leave_values(node, kind, parent)
        if kind in _LEFT:
            self._leave_binding(node, kind)
        if self._guarded and self._guarded[-1] is node:
            self._guarded.pop()
        if self._sparse_bodies and self._sparse_bodies[-1] is node:
            self._sparse_bodies.pop()
        if self._closure_calls and self._closure_calls[-1] is node:
            self._closure_calls.pop()
        if self._default_lambdas and self._default_lambdas[-1] is node:
            self._default_lambdas.pop()
            self._frames.pop()
        if self._named_lambdas and self._named_lambdas[-1][0] is node:
            _, framed, narrowed = self._named_lambdas.pop()
            for name, before in narrowed:
                self.kinds.restore(name, before)
            if framed:
                self._frames.pop()
        if self._device_withs and self._device_withs[-1] is node:
            self._device_withs.pop()
            self.kinds.device_contexts -= 1
        if self._narrowed and self._narrowed[-1][0] is node:
            # A name the body binds anew keeps that binding for the merge after the `if`
            # (`if isinstance(v, Tensor): v = v.to("cpu")`: on the host either way); the
            # others get back the kind they had before the test.
            for name, _, previous in self._narrowed.pop()[1]:
                if not _rebinds(node, name):  # type: ignore[arg-type]
                    self.kinds.bind(cst.Name(name), previous or Kind.UNKNOWN)
        if self._branches and self._branches[-1][0] is node:
            _, before, ends = self._branches.pop()
            last = node.orelse or node.body  # type: ignore[attr-defined]
            if not _leaves(last):
                ends.append(self.kinds.branch_state())
            if node.orelse is None:  # type: ignore[attr-defined]
                ends.append(before)  # the test failed: nothing in the body ran
            self.kinds.merge_branches(before, _steps_branches(node, ends, self.kinds))  # type: ignore[arg-type]
        if self._kept_tensors and self._kept_tensors[-1][0] is node:
            for name in self._kept_tensors.pop()[1]:
                self.kinds.bind(cst.Name(name), Kind.TENSOR)
        if kind is cst.If and (normalised := normalised_to_class(node, self.imports)) is not None:
            # `if isinstance(audio, AudioLoader): ... else: audio = AudioLoader(audio)`:
            # on every path the name holds an instance of that class from here on.
            name, built = normalised
            self.kinds.bind(cst.Name(name), self.kinds.of(built))
        while self._host_narrowed and self._host_narrowed[-1][0] is node:
            for name, narrowed in reversed(self._host_narrowed.pop()[1]):
                self.kinds.restore(name, narrowed)
        while self._not_tensors and self._not_tensors[-1][0] is node:
            self._not_tensors.pop()
        if parent is not None and (kind is cst.If or kind is cst.SimpleStatementLine):
            self._narrow_after(node, kind, parent)

    def _narrow_to_host(self, until: cst.CSTNode, test: cst.BaseExpression, holds: bool) -> None:
        """Take the names `test` being `holds` shows to be host values for host values until
        the walk leaves `until`."""
        names = host_names(test, holds, self.imports)
        if names:
            self._host_narrowed.append(
                (until, [(name, self.kinds.narrow(name, Kind.HOST)) for name in names])
            )
        others = non_tensor_names(test, holds, self.imports)
        if others:
            self._not_tensors.append(
                (until, [(name, self.kinds.times_bound(name)) for name in others])
            )

    def _range_checks(self, node: cst.CSTNode, kind: type, block: cst.CSTNode) -> None:
        """An `if` or `assert` that checks a parameter presumed a tensor as a count or an
        index (`assert 1 <= unet_number <= self.num_unets`): from there to the end of the
        block, the parameter is a Python number (the check included)."""
        tests = (
            [node.test]  # type: ignore[attr-defined]
            if kind is cst.If
            else [s.test for s in node.body if type(s) is cst.Assert]  # type: ignore[attr-defined]
        )
        names = [
            name for test in tests for name in range_checked(test) if self.kinds.presumed(name)
        ]
        if names:
            self._host_narrowed.append(
                (block, [(name, self.kinds.narrow(name, Kind.HOST)) for name in names])
            )

    def _host_indexes(self, node: cst.SimpleStatementLine, block: cst.CSTNode) -> None:
        """A statement that indexes a tensor made on the host with a name of unknown kind
        (`self.bern_probs[relations]`, `bern_probs` built by `tensor(...)` and never
        moved): PyTorch takes indices on the CPU or on the indexed tensor's device only,
        so where the statement runs the name holds a host value, from there to the end
        of the block (the statement included). Not a known device tensor: a 0-dim one
        (`x[scores.argmax()]`) is read as a Python int, which XLA107 reports."""
        names: list[str] = []
        for sub in descendants(node):
            if (
                type(sub) is cst.Subscript
                and len(sub.slice) == 1
                and type(sub.slice[0].slice) is cst.Index
                and type(index := sub.slice[0].slice.value) is cst.Name
                and index.value not in names
                and self.kinds.lookup(index.value) is Kind.UNKNOWN
                and self.kinds.is_host_tensor(sub.value)
            ):
                names.append(index.value)
        if names:
            self._host_narrowed.append(
                (block, [(name, self.kinds.narrow(name, Kind.HOST)) for name in names])
            )

    def _enter_try_part(self, node: cst.CSTNode, kind: type, parent: cst.CSTNode | None) -> None:
        """The paths through a `try` (without `else`) join after it, as an `if`'s branches
        do: its body and each handler that goes on. A handler starts from the kinds before
        the `try` and may bind a fallback (`except KeyError: change = 0.0` beside `change =
        100 * d.norm() / norm_x` in the body): the name is a tensor on the normal path, not
        the fallback's host value alone. The `finally` (or the end of the statement) runs
        after the join."""
        if kind is cst.Try:
            if node.orelse is None and node.handlers:  # type: ignore[attr-defined]
                self._tries.append((node, self.kinds.branch_state(), []))  # type: ignore[arg-type]
            return
        if not self._tries or self._tries[-1][0] is not parent:
            return
        if kind is cst.Finally:
            self._merge_try()
            return
        _, before, ends = self._tries[-1]
        handlers = parent.handlers  # type: ignore[union-attr]
        index = next(i for i, handler in enumerate(handlers) if handler is node)
        previous = parent.body if index == 0 else handlers[index - 1].body  # type: ignore[union-attr]
        if not always_exits(previous):
            ends.append(self.kinds.branch_state())
        self.kinds.start_branch(before)

    def _merge_try(self) -> None:
        node, before, ends = self._tries.pop()
        if not always_exits(node.handlers[-1].body):
            ends.append(self.kinds.branch_state())
        self.kinds.merge_branches(before, ends)

    def _narrow_entered(self, parent: cst.CSTNode, node: cst.CSTNode) -> None:
        """A branch where a test is known: the body (or `else`/`elif`) of an `if` or a
        ternary, the right side of an `and`/`or`."""
        if type(parent) is cst.BooleanOperation:
            if node is parent.right:  # type: ignore[attr-defined]
                left = parent.left  # type: ignore[attr-defined]
                self._narrow_to_host(node, left, type(parent.operator) is cst.And)  # type: ignore[attr-defined]
        elif node is parent.body:  # type: ignore[attr-defined]
            self._narrow_to_host(node, parent.test, True)  # type: ignore[attr-defined]
        elif node is parent.orelse:  # type: ignore[attr-defined]
            if self._branches and self._branches[-1][0] is parent:
                _, before, ends = self._branches[-1]
                if not _leaves(parent.body):  # type: ignore[attr-defined]
                    ends.append(self.kinds.branch_state())
                self.kinds.start_branch(before)
            self._narrow_to_host(node, parent.test, False)  # type: ignore[attr-defined]

    def _narrow_after(self, node: cst.CSTNode, kind: type, block: cst.CSTNode) -> None:
        """The rest of `block` after an `if` whose body leaves (`if not isinstance(step,
        int): return`, `continue`, `raise`) or after an `assert` (`assert
        isinstance(step, int)`): its test failed, or held."""
        if type(block) not in _BLOCKS:
            return
        if kind is cst.If:
            if node.orelse is None and _leaves(node.body):  # type: ignore[attr-defined]
                self._narrow_to_host(block, node.test, False)  # type: ignore[attr-defined]
            return
        for small in node.body:  # type: ignore[attr-defined]
            if type(small) is cst.Assert:
                self._narrow_to_host(block, small.test, True)

    def _leave_binding(self, node: cst.CSTNode, kind: type[cst.CSTNode]) -> None:
        if kind is cst.FunctionDef:
            self._frames.pop()
            self.kinds.pop_function(node.name.value)  # type: ignore[attr-defined]
            if self._masks is not None:
                self._masks.pop_function()
        elif kind is cst.ClassDef:
            self._classes.pop()
            self._class_properties.pop()
            self.kinds.pop_class()
        elif kind is cst.Assign:
            assert isinstance(node, cst.Assign)
            self._alias_functions([t.target for t in node.targets], table_functions(
                node.value, self.module))  # fmt: skip
            if self._masks is not None:
                self._masks.bind_assignment([t.target for t in node.targets], node.value)
            self.kinds.bind_assignment(self._bound_on_xla([t.target for t in node.targets]),
                node.value)  # fmt: skip
            self.kinds.keep_host_until_moved(
                node,
                [t.target for t in node.targets],
                self._frames[-1].node,  # type: ignore[arg-type]
            )
        elif kind is cst.AnnAssign:
            assert isinstance(node, cst.AnnAssign)
            self.kinds.declare_attribute(node.target, node.annotation)
            if node.value is not None:
                if self._masks is not None:
                    self._masks.bind_assignment([node.target], node.value)
                # `self.master_to_working_map: Dict[Tensor, Parameter] = {}` binds as the
                # plain assignment does: a dict built here is a dict.
                self.kinds.bind_assignment([node.target], node.value)
        elif kind is cst.NamedExpr:
            assert isinstance(node, cst.NamedExpr)
            if self._masks is not None:
                self._masks.bind_assignment([node.target], node.value)
            # `if (mask := batch.get("mask")) is not None:` binds as `mask = ...` does.
            self.kinds.bind_assignment([node.target], node.value)
        elif kind is cst.AugAssign:
            assert isinstance(node, cst.AugAssign)
            self.kinds.bind(node.target, self.kinds.accumulated(node.target, node.value))

    def _bound_on_xla(self, targets: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
        """The targets whose binding here counts on an XLA host. An attribute of `self`
        keeps its kind in every method after this one, so a move made only off XLA
        (`if self.gpu_beam_blocking: self.partial_hyps = self.partial_hyps.cuda()`, a flag
        false without CUDA) leaves it what it was before: a host tensor from a factory
        given no device stays one there. Not a move under the function's own device choice
        (`use_cuda = next(self.model.parameters()).is_cuda`, then `if use_cuda: self.ranks =
        self.ranks.cuda()`: a flag whose true side places values on CUDA,
        `cuda_flags.cuda_flag_places`, which XLA305 reports): that branch is the program's
        device path, which a port gives XLA, so the move counts there as a local name's
        does."""
        if not any(self_attribute(t) is not None for t in targets) or not self.runs_without_xla:
            return targets
        if self._under_device_choice():
            return targets
        return [t for t in targets if self_attribute(t) is None]

    def _under_device_choice(self) -> bool:
        """The node being visited is in the body of `if flag:`, `flag` a local CUDA flag
        that is its function's device choice (`cuda_flags.cuda_flag_places`)."""
        function = self._frames[-1].node
        if type(function) is not cst.FunctionDef:
            return False
        node: cst.CSTNode = self._stack[-1]
        for ancestor in self.ancestors():
            if ancestor is function:
                return False
            if (
                type(ancestor) is cst.If
                and ancestor.body is node  # type: ignore[attr-defined]
                and type(ancestor.test) is cst.Name  # type: ignore[attr-defined]
                and cuda_flag_places(function, ancestor.test.value, self.imports)  # type: ignore[attr-defined]
            ):
                return True
            node = ancestor
        return False

    def _narrowing(self, branch: cst.If, names: list[str]) -> list[tuple[str, Kind, Kind | None]]:
        """What `if isinstance(v, torch.Tensor):` says of each name in its body. Code that
        converts whatever it is given (a parameter tested, or a branch that rebinds the
        name or returns: `if isinstance(v, Tensor): v = v.item()` in a logging helper) is
        left alone (a host value): whether a tensor ever arrives is a matter of its callers.
        A value of unknown kind that this code took from its own data and then computes
        with (`mask = features.get("mask")`) is a tensor in the branch; one known to be a
        host value here (`val_loss = "n/a"`, a tensor only on later passes) stays one."""
        function = self._frames[-1].node
        taken = {p.name.value for p in parameters(function)} if function is not None else set()
        narrowed = []
        for name in names:
            known = self.kinds.lookup(name)
            computes = (
                name not in taken
                and known in (None, Kind.UNKNOWN)
                and not _converts(branch.body, name)
            )
            narrowed.append((name, Kind.TENSOR if computes else Kind.HOST, known))
        return narrowed

    def in_training_function(self) -> bool:
        """The innermost function runs autograd's backward in its own body: training code,
        whatever this file imports (a trainer subclass that gets torch through its base
        class's module)."""
        function = self._frames[-1].node if self._frames else None
        return function is not None and self._trains_in_body(function)

    def _trains_in_body(self, function: cst.CSTNode) -> bool:
        """A function whose own body (not a loop in it) runs backward: one training step,
        whoever calls it (ignite's `update(engine, batch)`). So is one that runs backward
        in a loop of its own that steps no optimizer and then steps the optimizer in its
        own body (`for i in range(accumulate_every): ... loss.backward()`, then
        `opt.step()`): micro-batches accumulating the gradients of its one step. An
        optimizer step alone can be a one-off (priming an optimizer's state before loading
        a checkpoint), but a function named for one optimisation step (`optimize(opt)`,
        `optimize_parameters()`) that steps an optimizer in its own body or through a
        function of the module it calls (`self._optimize_normal(opt)` ending in
        `opt.step()`), not in a loop of its own, is that step: the training loop that
        calls it (often another module's, or a user's) calls it once a batch."""
        if not isinstance(function, cst.FunctionDef):
            return False
        return (
            self.loops.facts(function).backward
            or self.loops.accumulates_then_steps(function)
            or (
                OPTIMISATION_STEP.match(function.name.value) is not None
                and self.loops.steps_optimizer(function)
            )
        )

    @cached_property
    def _exported_applies(self) -> frozenset[str]:
        """Classes whose `apply` the module binds to a name of its own at its top level
        (`_norm = _Norm.apply`): a custom autograd function handed to other modules as a
        plain function, whose backward runs where their calls of it are differentiated,
        which this file cannot see (pymde's `_norm`, for distances after a fit)."""
        found: set[str] = set()
        for statement in self.module.body:
            if type(statement) is not cst.SimpleStatementLine:
                continue
            for small in statement.body:
                value = small.value if type(small) is cst.Assign else None
                if (
                    type(value) is cst.Attribute
                    and value.attr.value == "apply"
                    and type(value.value) is cst.Name
                ):
                    found.add(value.value.value)
        return frozenset(found)

    def _enter_function(self, node: cst.FunctionDef) -> None:
        class_name, is_module, hooks = (
            self._classes[-1] if self._classes else (None, False, frozenset())
        )
        # A def directly in a class body is a method; a def nested in a function is not.
        direct_method = class_name is not None and isinstance(
            self._stack[-3] if len(self._stack) >= 3 else None, cst.ClassDef
        )
        key = FunctionKey(class_name if direct_method else None, node.name.value)
        module_call = direct_method and is_module and node.name.value == "__call__"
        hook = direct_method and node.name.value in hooks
        if takes_backward_gradients(positional_names(node)):
            # `sqrt_hessian(self, module, g_inp, g_out)`: handed a backward hook's
            # arguments, it runs in every backward, as a registered hook does.
            self.hot.add_module_hook(node.name.value)
        self._frames.append(_Frame(key=key, module_call=module_call, node=node, hook=hook))
        for param in (*node.params.params, *node.params.kwonly_params):
            if isinstance(param.default, cst.Name) and param.default.value in self._functions:
                self._alias_functions([param.name], [param.default.value])
        self.kinds.push_function(
            node,
            in_class=direct_method,
            module_call=module_call,
            module_method=direct_method and is_module,
            method_of=class_name if direct_method else None,
            batch_state=batch_state(node.name.value, hooks) if direct_method else frozenset(),
            autograd_backward=direct_method
            and node.name.value == "backward"
            and hooks >= AUTOGRAD_FUNCTION_HOOKS,
        )
        if self._masks is not None:
            self._masks.push_function(node)

    def _alias_functions(
        self, targets: Sequence[cst.BaseExpression], functions: Collection[str]
    ) -> None:
        """`fn = FILTERS[name]` (or a parameter `fn=top_k`): calling `fn` calls these
        functions of the module. Hot code is found by name, so `fn` is walked as a
        function that calls them: they are hot where `fn` is called from hot code."""
        if not functions or len(targets) != 1 or not isinstance(targets[0], cst.Name):
            return
        alias = Site(FunctionKey(None, targets[0].value), in_loop=False, in_step_closure=False)
        for function in sorted(functions):
            self.hot.add_call(alias, function)

    def _read_property(self, node: cst.Attribute) -> None:
        """`self.temperature` with `temperature` a property of the class: the read runs
        the property's body, so hot code reaches it as it would a call."""
        if (
            type(node.value) is cst.Name
            and node.value.value == "self"
            and node.attr.value in self._class_properties[-1]
        ):
            self.hot.add_call(self.site(), node.attr.value)

    def _enter_named_lambda(self, node: cst.Lambda, parent: cst.CSTNode | None) -> None:
        """`detach_to_cpu_ = lambda t: t.detach().cpu()` in a function that calls it: its
        parameters hold what the calls hand them (device tensors: `t` is one), and where it
        is made outside the function's loops it runs where it is called, as a function of
        that name (a frame of its own; `map(detach_to_cpu_, ...)` calls it)."""
        frame = self._frames[-1]
        name = named_lambdas.bound_name(node, parent)
        if name is None or frame.node is None:
            return
        called, kinds = named_lambdas.handed_kinds(frame.node, name, node, self.kinds.of)
        if not called:
            return
        narrowed = [(param, self.kinds.narrow(param, kind)) for param, kind in kinds.items()]
        framed = not frame.loops
        if framed:
            self._frames.append(_Frame(key=FunctionKey(None, name), module_call=False))
        self._named_lambdas.append((node, framed, narrowed))

    def _enter_call(self, node: cst.Call) -> None:
        func = node.func
        self.kinds.note_append(node)
        self.kinds.note_merge(node)
        self.kinds.note_buffer(node)
        self.kinds.note_backward(node)
        resolved = self.imports.resolve(func)
        if resolved == ADD_STEP_CLOSURE:
            self._closure_calls.append(node)
            if node.args and isinstance(node.args[0].value, cst.Name):
                self.hot.add_step_closure_callback(node.args[0].value.value)
            return
        if (
            (
                (type(func) is cst.Attribute and func.attr.value in MODULE_HOOK_REGISTRATIONS)
                or (
                    type(func) in (cst.Name, cst.Attribute)
                    and last_name(func) in GLOBAL_MODULE_HOOK_REGISTRATIONS
                )
            )
            and node.args
            and (hook := _hook_name(node.args[0].value)) is not None
        ):
            # `layer.key.register_forward_hook(save_to_cache)`, or a method of the class
            # (`target_layer.register_forward_hook(self.save_activation)`, also wrapped:
            # `p.register_hook(partial(self._backward_hook, idx))`): runs on every
            # forward; `register_module_forward_pre_hook(self.calibrate_input)`, on every
            # module's; `queue_callback(self._final_callback)`, after every backward.
            self.hot.add_module_hook(hook)
        if (update := transformation_update(node)) is not None:
            # `GradientTransformation(init_fn, update_fn)`: the optimizer's step runs the
            # update on every step.
            self.hot.add_module_hook(update)
        if resolved in SAVE_CALLS and self.function is not None:
            self.hot.add_saving_function(self.function.name)
        if self.function is not None and makes_a_figure(node, resolved):
            self.hot.add_plotting_function(self.function.name)
        if (applied := applied_function(node)) is not None:
            # `multi_apply(self._get_targets_single, anchors, flags)`, `map(kernel, xs)`:
            # the applier calls the function it is handed on each item, here and now.
            self.hot.add_call(self.site(), applied)
        for handed in called_back(node, self.module):
            # `default(current_decay, self.get_current_decay)` with `default` calling `d()`:
            # the callee runs the function it is handed, here and now.
            self.hot.add_call(self.site(), handed)
        if self._calls_itself(func):
            # `def encode(self, sentences): for batch in sentences: self.encode(batch)`: a
            # recursion runs inside a call of the function, as often as its own callers
            # call it; its loop over the input's parts makes no caller per step.
            pass
        elif (
            type(func) is cst.Name
            and func.value == "self"
            and calls_own_instance(self.module, self.class_name)
        ):
            # `self("alphas_cumprod", t, shape)` in a schedule's method: the object calls
            # itself, so the `__call__` its class defines runs as often as the method does.
            self.hot.add_call(self.site(), "__call__")
        elif type(func) is cst.Name and resolved is None:
            self.hot.add_call(self.site(), func.value)
        elif own := own_module_function(func, self.module):
            # `d2l.grad_clipping(net, 1)` with `d2l = sys.modules[__name__]`: this module's.
            self.hot.add_call(self.site(), own)
        elif functions := table_functions(func, self.module):
            # `FILTERS[name](logits)`: any function of the module's dispatch table.
            for function in functions:
                self.hot.add_call(self.site(), function)
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            self.hot.add_call(self.site(), func.attr.value)
            if self.class_name is not None:
                # `self.early_stopper()`, the attribute holding an instance of a class of
                # the module: a call of that class's instance (its `forward`).
                for klass in called_classes(self.module, self.class_name, func.attr.value):
                    self.hot.add_call(self.site(), instance_call(klass))
        elif member_method_call(func, self.module, self.class_name):
            # `self.decoder.update(...)`, the attribute holding an instance of a class of
            # the module (`analysis/members.py`): that class's method, by its name.
            self.hot.add_call(self.site(), func.attr.value)
        elif resolved is None and instance_method_call(func, self.module):
            # `q_network.get_action(obs)`, the name holding an instance of a class of the
            # module (`q_network = QNetwork(...).to(device)`): that method, by its name.
            self.hot.add_call(self.site(), func.attr.value)
        elif (
            isinstance(func, cst.Attribute)
            and resolved is None
            and self.kinds.record_method(func.attr.value)
        ):
            # `h.asdict()` on the hypotheses of a search loop: a method of a record class
            # of the module (`analysis/records.py`), by its name as for `self.f()`.
            self.hot.add_call(self.site(), func.attr.value)


@lint_memo.memo(8192)
def _passes_over_a_loader(statement: cst.CSTNode, function: cst.FunctionDef | None) -> bool:
    """`statement` is or holds a loop over a whole loader that trains nothing
    (`FileContext._past_a_pass_over_a_loader`, where `function` holds `statement`): asked
    for the statements before each call site of a block, so each is walked once a lint,
    not once per site after it (108,711 nodes yielded for 438 sites in a 1,107-line
    pipeline)."""
    return any(
        walks_a_loader(node, function) and not _trains_in(node)  # type: ignore[arg-type]
        for node in (statement, *descendants(statement))
        if type(node) is cst.For
    )


def _trains_in(loop: cst.For) -> bool:
    """A pass of `loop` runs backward or steps an optimizer (`loss.backward()`,
    `opt.step()`): a training phase, whose batches are steps, not a validation pass."""
    return any(
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value in ("backward", "step")  # type: ignore[union-attr]
        for node in descendants(loop.body)
    )


def _names_in_full_text(
    module: cst.Module, text: str, blanked: Sequence[tuple[int, int]]
) -> NamesInUse:
    """`names_in_use` of `text`, whose screened tree is `module`: the tree's, with those
    of the blanked bodies (rows `blanked`), each parsed alone under `if 1:` (which reads
    and binds no name). Every node of the file is in one of them, and each node's part
    does not depend on the others. The whole text is parsed where the rows are not known
    or a body does not parse alone (a blanked stub is `pass`: no name)."""
    if not blanked:
        return names_in_use(parse_module(text))
    lines = LINE.findall(text)
    parts = [names_in_use(module)]
    for first, last in blanked:
        body = "".join(lines[first - 1 : last])
        try:
            parts.append(names_in_use(parse_module("if 1:\n" + body)))
        except (cst.ParserSyntaxError, RecursionError):
            return names_in_use(parse_module(text))
    imported: dict[str, frozenset[str]] = {}
    for part in parts:
        for name, targets in part.imported.items():
            imported[name] = imported.get(name, frozenset()) | targets
    return NamesInUse(
        set().union(*(p.names for p in parts)), imported, set().union(*(p.bound for p in parts))
    )


_OTHER_EXITS = (cst.Return, cst.Break, cst.Continue, cst.Yield)
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def _raises_or_gives_up(block: cst.BaseSuite) -> tuple[bool, bool]:
    """Whether every way through `block` leaves by its last statement, a `raise` or a
    `return` of nothing (or an `if`/`else` whose every branch does, in turn), with no
    other exit before it; and whether some way raises."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return False, False
    *head, last = block.body
    if any(
        isinstance(node, _OTHER_EXITS)
        for statement in head
        for node in descendants(statement, TRIVIA | _NESTED_SCOPES)
    ):
        return False, False
    if type(last) is cst.If:
        raises = False
        branch: cst.If | cst.Else | None = last
        while type(branch) is cst.If:
            leaves, raised = _raises_or_gives_up(branch.body)
            if not leaves:
                return False, False
            raises = raises or raised
            branch = branch.orelse
        if branch is None:  # no `else`: the block may fall through
            return False, False
        leaves, raised = _raises_or_gives_up(branch.body)
        return leaves, raises or raised
    if ends_in(block, (cst.Raise,)):
        return True, True
    if ends_in(block, (cst.Return,)):
        # Giving up hands back nothing: a value returned may be the normal path's.
        line = block.body[-1]
        returned = line.body[-1].value if type(line) is cst.SimpleStatementLine else None  # type: ignore[attr-defined]
        nothing = returned is None or (type(returned) is cst.Name and returned.value == "None")
        return nothing, False
    return False, False


def _no_other_exit(block: cst.IndentedBlock) -> bool:
    """No `return`, `break`, `continue` or `yield` in `block` (nested functions aside):
    its statements all lead to its last one."""
    return not any(
        isinstance(node, _OTHER_EXITS) for node in descendants(block, TRIVIA | _NESTED_SCOPES)
    )


def _operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands `and`, `or` and `not` join in a condition (`cuda and not verbose`:
    `cuda`, `verbose`)."""
    inner = negated(test)
    if inner is not None:
        return _operands(inner)
    if type(test) is cst.BooleanOperation:
        return [*_operands(test.left), *_operands(test.right)]
    return [test]


def _hook_name(value: cst.BaseExpression) -> str | None:
    """The function a hook registration hands over: `save_to_cache`, `self.save_activation`,
    also bound to leading arguments: `functools.partial(self._backward_hook, idx)`."""
    if (
        type(value) is cst.Call
        and last_name(value.func) == "partial"  # type: ignore[attr-defined]
        and value.args  # type: ignore[attr-defined]
        and value.args[0].keyword is None  # type: ignore[attr-defined]
        and not value.args[0].star  # type: ignore[attr-defined]
    ):
        value = value.args[0].value  # type: ignore[attr-defined]
    if type(value) is cst.Name:
        return value.value  # type: ignore[attr-defined]
    return self_attribute(value)
