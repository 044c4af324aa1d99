"""The ast screen: libcst parses only the functions that can hold a finding.

libcst's parse is most of a cold run (benchmarks/RESULTS.md), and CPython's `ast` parse of
the same file, which the engine makes anyway as its guard against deep nesting, costs a
twentieth of it. Each rule may declare on its class a `screen`: what a function must contain
for the rule to find anything in it. A unit (a top-level function, or a method of a
top-level class) passes if it matches the screen of any rule that runs on the file.

Findings can rest on other functions (who calls a function decides whether it is hot; what
a helper returns decides whether a value is a tensor; which attributes `__init__` binds
decides the kinds of `self.x`). So the units kept for libcst are the passing units and
everything connected to them by a name one defines and the other uses, with the
module-level code (imports, constants, class headers and class-level statements: never
blanked) and what it uses. The other units' bodies are blanked line for line, a stub on the
first body line at its indentation, so every position and every fix offset in the kept code
is the same as in the full file; findings are kept only where a passing unit (or the
module-level code, if it passes) is.

A rule without a screen passes every unit. `XLALINT_NO_SCREEN=1` parses every file whole
(`tests/test_screen.py` proves the findings the same both ways on every fixture;
`benchmarks/screen_check.py` on real packages).
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import os
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xlalint import ast_nodes
from xlalint.analysis.hotness import (
    ACTION_METHOD,
    CALLBACK_STEP_HOOK,
    GLOBAL_MODULE_HOOK_REGISTRATIONS,
    MODULE_HOOK_REGISTRATIONS,
    OPTIMISATION_STEP,
    PER_STEP_FUNCTIONS,
    PER_STEP_HOOKS,
    names_a_transformation,
    takes_backward_gradients,
)
from xlalint.analysis.tensor_uses import TENSOR_METHODS
from xlalint.analysis.tensors import ARRAY_DTYPE, REGISTERED_TENSORS, TENSOR_ANNOTATIONS

if TYPE_CHECKING:
    from xlalint.rule import Rule

ENV_NO_SCREEN = "XLALINT_NO_SCREEN"

Unit = ast.FunctionDef | ast.AsyncFunctionDef
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Builtin classes: a class derived from one only is no module.
_BUILTIN_NAMES = frozenset(dir(builtins))
# Statements whose effect reaches past their function: a unit holding one is always kept.
_REACHING = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)
# A text's rows, each with its line break: what a blanked span counts (and `context.py`,
# mapping blanked rows back to the full text).
LINE = re.compile(r"[^\n]*\n|[^\n]+")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The fields that hold statements (or handlers and match cases, which hold statements).
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")
# The kinds `Features._take` reads (besides `Name`, which `Features.add` reads itself).
_TAKEN = frozenset(
    {ast.Attribute, ast.Constant, ast.arg, ast.keyword, ast.Call, *_DEFINITIONS, *_REACHING}
)


def enabled() -> bool:
    return os.environ.get(ENV_NO_SCREEN, "") in ("", "0")


def _node_kinds() -> frozenset[type[ast.AST]]:
    """Every `ast` node class: a field value of one of these is a child node."""
    found: set[type[ast.AST]] = set()
    pending: list[type[ast.AST]] = [ast.AST]
    while pending:
        kind = pending.pop()
        found.add(kind)
        pending.extend(kind.__subclasses__())
    return frozenset(found)


_NODE_KINDS = _node_kinds()


@dataclass
class Features:
    """What a screen can ask of a stretch of code, and the names that tie it to others."""

    identifiers: set[str] = field(default_factory=set)  # every name, attribute, keyword
    nodes: set[str] = field(default_factory=set)  # `<For>`, `<Subscript>`...
    strings: list[str] = field(default_factory=list)  # string constants
    defines: set[str] = field(default_factory=set)  # def and class names, stored attributes
    functions: set[str] = field(default_factory=set)  # def names, nested ones too
    loop_identifiers: set[str] = field(default_factory=set)  # used in a loop
    lambda_default: bool = False  # a parameter defaults to a lambda (walked as a function)
    # A def handed a backward hook's arguments (`module, g_inp, g_out`): every backward.
    backward_hook: bool = False
    # A parameter annotated as a tensor (`preds: Tensor`): `HotCode.is_hot(per_call=True)`.
    tensor_parameter: bool = False
    reaching: bool = False
    # `identifiers` and `strings` joined by `\0` (no screen token holds one), so that a
    # substring test over all of them is one test in C; redone when they have grown.
    _joined: tuple[int, int, str, str] = field(default=(-1, -1, "", ""), repr=False, compare=False)

    def add(self, node: ast.AST) -> None:
        """Take in `node` and everything under it (one pass, no recursion). Every node of
        a file passes here: exact-type tests, and `_take` only for the kinds it reads."""
        stack: list[tuple[ast.AST, bool]] = [(node, False)]
        nodes, identifiers = self.nodes, self.identifiers
        while stack:
            child, in_loop = stack.pop()
            kind = type(child)
            nodes.add(kind.__name__)
            if kind is ast.Name:
                name: str | None = child.id  # type: ignore[attr-defined]
            elif kind in _TAKEN:
                name = self._take(child, kind)
                if kind is ast.Constant:  # no child nodes
                    continue
            else:
                name = None
            if name is not None:
                identifiers.add(name)
                if in_loop:
                    self.loop_identifiers.add(name)
            looping = kind in _LOOPS
            for field_name in child._fields:
                value = getattr(child, field_name, None)
                # A loop's body (and a `while` loop's test) runs on every pass.
                inner = in_loop or (
                    looping
                    and (field_name == "body" or (kind is ast.While and field_name == "test"))
                )
                if type(value) in _NODE_KINDS:
                    stack.append((value, inner))
                elif type(value) is list:
                    stack.extend([(item, inner) for item in value if type(item) in _NODE_KINDS])

    def _take(self, child: ast.AST, kind: type[ast.AST]) -> str | None:
        """Record what `child` says besides its identifier, and return that (or None)."""
        if kind is ast.Name:
            return child.id  # type: ignore[attr-defined,no-any-return]
        if kind is ast.Attribute:
            if not isinstance(child.ctx, ast.Load):  # type: ignore[attr-defined]
                self.defines.add(child.attr)  # type: ignore[attr-defined]
            return child.attr  # type: ignore[attr-defined,no-any-return]
        if kind is ast.Constant:
            if isinstance(child.value, str):  # type: ignore[attr-defined]
                self.strings.append(child.value)  # type: ignore[attr-defined]
            return None
        if kind is ast.arg:
            annotation = child.annotation  # type: ignore[attr-defined]
            if annotation is not None and not self.tensor_parameter:
                self.tensor_parameter = any(
                    (type(n) is ast.Name and n.id in TENSOR_ANNOTATIONS)  # type: ignore[attr-defined]
                    or (type(n) is ast.Attribute and n.attr in TENSOR_ANNOTATIONS)  # type: ignore[attr-defined]
                    # a shape-typed tensor, `Bool['b n']` (`tensors.array_dtype`)
                    or (
                        type(n) is ast.Subscript
                        and type(n.value) is ast.Name  # type: ignore[attr-defined]
                        and ARRAY_DTYPE.match(n.value.id) is not None  # type: ignore[attr-defined]
                    )
                    for n in ast_nodes.walk(annotation)
                )
            return child.arg  # type: ignore[attr-defined,no-any-return]
        if kind is ast.keyword:
            return child.arg  # type: ignore[attr-defined,no-any-return]
        if kind is ast.Call:
            # `self.register_buffer("inited", ...)` binds `self.inited` as a store would.
            func, args = child.func, child.args  # type: ignore[attr-defined]
            if (
                type(func) is ast.Attribute
                and func.attr in REGISTERED_TENSORS
                and args
                and type(args[0]) is ast.Constant
                and isinstance(args[0].value, str)
            ):
                self.defines.add(args[0].value)
            return None
        if kind in _DEFINITIONS:
            self.defines.add(child.name)  # type: ignore[attr-defined]
            if kind is not ast.ClassDef:
                self.functions.add(child.name)  # type: ignore[attr-defined]
                arguments = child.args  # type: ignore[attr-defined]
                defaults = (*arguments.defaults, *arguments.kw_defaults)
                self.lambda_default |= any(isinstance(d, ast.Lambda) for d in defaults)
                self.backward_hook |= takes_backward_gradients(
                    [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
                )
            return child.name  # type: ignore[attr-defined,no-any-return]
        if kind in _REACHING:
            self.reaching = True
            for alias in getattr(child, "names", ()):
                name = alias if isinstance(alias, str) else alias.asname or alias.name
                self.identifiers.update(name.split("."))
                self.defines.add(name)
        return None

    def matches(self, screen: Iterable[str]) -> bool:
        """`screen` holds identifiers (`item`), substrings of identifiers (`~cuda`), node
        types (`<For>`) and substrings of string constants (`'cuda`); one match is enough.
        An identifier bound by an import stands for what it imports too (`xm` for
        `torch_xla.core.xla_model`)."""
        for token in screen:
            head = token[:1]
            if head == "<":
                if token[1:-1] in self.nodes:
                    return True
            elif head == "'":
                if token[1:] in self._joined_texts()[1]:
                    return True
            elif head == "~":
                if token[1:] in self._joined_texts()[0]:
                    return True
            elif token in self.identifiers:
                return True
        return False

    def _joined_texts(self) -> tuple[str, str]:
        """`identifiers` and `strings`, each joined by a NUL: a token without one is a
        substring of the join only where it is a substring of one of them. Both only grow,
        so their sizes tell whether the join is current."""
        sizes = (len(self.identifiers), len(self.strings))
        if self._joined[:2] != sizes:
            self._joined = (*sizes, "\0".join(self.identifiers), "\0".join(self.strings))
        return self._joined[2], self._joined[3]

    def resolve_aliases(self, aliases: dict[str, set[str]]) -> None:
        for name in self.identifiers & aliases.keys():
            self.identifiers |= aliases[name]


@dataclass
class _Unit:
    node: Unit
    features: Features
    first: int  # first row (its first decorator)
    last: int
    module_call: bool  # `__call__` of a class that may be an `nn.Module`
    # A method of a class another of whose methods mentions `backward` (an agent acting
    # beside its training step: `FileContext._acts_beside_training`).
    beside_training: bool = False
    owner: str | None = None  # the class of a method

    @property
    def qualified(self) -> str:
        """`f`, `Class.m`: as `module_callers.hot_elsewhere` names it."""
        name = self.node.name
        return f"{self.owner}.{name}" if self.owner else name


@dataclass(frozen=True)
class Screened:
    """The text libcst parses, and the rows whose findings count."""

    text: str
    kept_rows: frozenset[int] | None  # None: every row outside `dropped` counts
    dropped: tuple[tuple[int, int], ...]  # row spans whose findings do not count
    blanked: tuple[tuple[int, int], ...] = ()  # the bodies' row spans left as `pass`

    @property
    def holds_nothing(self) -> bool:
        """No row counts: no finding of the file could be kept, so the engine skips
        libcst's parse and the walk."""
        return self.kept_rows is not None and not self.kept_rows

    def counts(self, row: int) -> bool:
        if self.kept_rows is not None:
            return row in self.kept_rows
        return not any(first <= row <= last for first, last in self.dropped)


def screen_text(
    tree: ast.Module,
    text: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    elsewhere: Callable[[frozenset[str]], frozenset[str]] | None = None,
) -> Screened | None:
    """The text with the bodies of the units no rule can use blanked, or None when every
    unit is kept (then libcst parses the text as it is); `NOTHING` where no unit passes
    and the module-level code cannot pass either (no finding could count: see
    `_holds_nothing`).

    A unit passes a rule that matches its screen (a rule without one: any unit) and, for a
    rule that reports only in hot code, only if the unit may run every step (`_maybe_hot`).
    A rule with neither a screen nor `hot_only` passes every unit: nothing is blanked.
    `elsewhere`: the file's functions that other modules of the project call every step
    (`module_callers.hot_elsewhere`), asked only when a unit's hotness decides."""
    if not rules or any(rule.screen is None and not rule.hot_only for rule in rules):
        return None
    if "\r" in text.replace("\r\n", ""):  # lone carriage returns: rows would not line up
        return None
    units, glue = _split(tree)
    aliases = _aliases(tree)
    for features in (glue, *(unit.features for unit in units)):
        features.resolve_aliases(aliases)

    def passes(features: Features, may_be_hot: bool) -> bool:
        return any(
            (rule.screen is None or features.matches(rule.screen))
            and (may_be_hot or not rule.hot_only)
            for rule in rules
        )

    if not units:
        return NOTHING if _holds_nothing(glue, passes) else None
    passing = {i for i, unit in enumerate(units) if passes(unit.features, False)}
    # Hotness decides only the units no rule passes by its screen alone and a `hot_only`
    # rule would pass: the other units' hotness is not computed (a third of the screen's
    # time went to `_computing_on_parameters`' walks of units that passed anyway).
    hot_rules = [rule for rule in rules if rule.hot_only]
    undecided = {
        i
        for i, unit in enumerate(units)
        if i not in passing
        and any(r.screen is None or unit.features.matches(r.screen) for r in hot_rules)
    }
    if undecided:
        hot = _maybe_hot(units, glue, hot_functions)
        if undecided - hot:
            records = _record_classes(tree)
            hot |= _computing_on_parameters(units, aliases, records, undecided - hot)
        if undecided - hot and elsewhere is not None:
            # Only now other modules' callers (`module_callers.py`), asked about the units
            # still undecided and those that use their names (their callers, by name).
            called = elsewhere(_users(units, {units[i].node.name for i in undecided - hot}))
            if called:
                hot |= _maybe_hot(units, glue, hot_functions, called)
        passing |= undecided & hot
    if not passing and _holds_nothing(glue, passes):
        return NOTHING
    glue_passes = passes(glue, _LOOP_NODES & glue.nodes != set())
    kept = _connected(units, glue, passing, text)
    lines = LINE.findall(text)
    blanked = tuple(
        span
        for index, unit in enumerate(units)
        if index not in kept and (span := _blank(unit.node, lines)) is not None
    )
    if not blanked:
        return None
    others = tuple((u.first, u.last) for i, u in enumerate(units) if i not in passing)
    if glue_passes:
        return Screened("".join(lines), None, others, blanked)
    rows = frozenset(row for i in passing for row in range(units[i].first, units[i].last + 1))
    return Screened("".join(lines), rows, (), blanked)


# The plan of a file where no finding could count: libcst need not see it.
NOTHING = Screened("", frozenset(), ())


def _holds_nothing(glue: Features, passes: Callable[[Features, bool], bool]) -> bool:
    """With no unit passing, whether the module-level code cannot hold a finding either.
    Stricter than the test that decides whether its findings count (a loop makes it
    possibly hot): a function or class it defines itself (under `if`, `try`, in a class
    nested in a class) may be per step by name, and a lambda may be called from a loop,
    so those make it possibly hot too."""
    may_be_hot = bool(_LOOP_NODES & glue.nodes) or bool(glue.functions) or "Lambda" in glue.nodes
    return not passes(glue, may_be_hot)


def _users(units: list[_Unit], names: set[str]) -> frozenset[str]:
    """The units named `names` and those that use one of the names, transitively, as
    `module_callers` names them (`"f"`, `"Class.m"`)."""
    found = set(names)
    changed = True
    while changed:
        changed = False
        for unit in units:
            name = unit.node.name
            if name not in found and unit.features.identifiers & found:
                found.add(name)
                changed = True
    return frozenset(unit.qualified for unit in units if unit.node.name in found)


_LOOP_NODES = frozenset({"For", "AsyncFor", "While"})
_HOOKS = frozenset().union(*PER_STEP_HOOKS.values())


def _maybe_hot(
    units: list[_Unit],
    glue: Features,
    hot_functions: Sequence[str],
    called: frozenset[str] = frozenset(),
) -> set[int]:
    """The units where `HotCode.is_hot` may say yes: with a loop, a function declared per
    step (`forward`, `*_step`, a framework hook, configured `hot-functions`, `__call__` of
    a class that may be an `nn.Module`, a policy's action method, a name for one
    optimisation step: `optimize`, `optimize_parameters`), one that runs backward
    or is a method beside one that does, one with a lambda default, one with a parameter
    annotated as a tensor (hot per call for some rules), or one whose name is used in a
    loop or in another such unit (the call graph is by name, so any use of the name
    counts), or one another module of the project calls every step (`called`: `"f"`,
    `"Class.m"`)."""

    def declared(unit: _Unit) -> bool:
        features = unit.features
        if unit.module_call or features.lambda_default or "backward" in features.identifiers:
            return True
        if features.backward_hook:
            return True  # handed a backward hook's arguments: runs in every backward
        if unit.beside_training or unit.node.name == "__call__":
            return True  # may act once per environment step (beside a training step)
        if unit.owner is not None and ACTION_METHOD.fullmatch(unit.node.name):
            return True  # a policy's action method: once per environment step
        if features.tensor_parameter:
            return True  # computes on tensors it is handed: hot per call for some rules
        if features.identifiers & (MODULE_HOOK_REGISTRATIONS | GLOBAL_MODULE_HOOK_REGISTRATIONS):
            return True  # a function registered as a module hook runs on every forward
        if names_a_transformation(features.identifiers):
            return True  # a gradient transformation's update runs in every optimizer step
        return any(
            PER_STEP_FUNCTIONS.match(name)
            or OPTIMISATION_STEP.match(name)  # (one that steps an optimizer: the context's)
            or name in _HOOKS
            or CALLBACK_STEP_HOOK.match(name)
            or any(fnmatch.fnmatchcase(name, pattern) for pattern in hot_functions)
            for name in features.functions
        )

    hot_names = set(glue.loop_identifiers)
    for unit in units:
        hot_names |= unit.features.loop_identifiers
    hot = {i for i, unit in enumerate(units) if declared(unit) or unit.qualified in called}
    changed = True
    while changed:
        changed = False
        for index, unit in enumerate(units):
            if index in hot or not unit.features.functions & hot_names:
                continue
            hot.add(index)
            changed = True
        for index in hot:
            before = len(hot_names)
            hot_names |= units[index].features.identifiers
            changed = changed or len(hot_names) != before
    return hot | {i for i, unit in enumerate(units) if _LOOP_NODES & unit.features.nodes}


def _record_classes(tree: ast.Module) -> set[str]:
    """Classes of the module (and classes in them) that declare a field annotated with a
    tensor's name: the record classes `DataParameters` reads parameters' annotations for
    (more than it takes: any annotation mentioning a tensor)."""
    found: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if type(node) is not ast.ClassDef:
            continue
        stack.extend(node.body)  # type: ignore[attr-defined]
        for statement in node.body:  # type: ignore[attr-defined]
            if type(statement) is ast.AnnAssign and any(
                (type(n) is ast.Name and n.id in TENSOR_ANNOTATIONS)  # type: ignore[attr-defined]
                or (type(n) is ast.Attribute and n.attr in TENSOR_ANNOTATIONS)  # type: ignore[attr-defined]
                for n in ast_nodes.walk(statement.annotation)  # type: ignore[attr-defined]
            ):
                found.add(node.name)  # type: ignore[attr-defined]
                break
    return found


def _computing_on_parameters(
    units: list[_Unit],
    aliases: dict[str, set[str]],
    records: set[str],
    wanted: Collection[int] | None = None,
) -> set[int]:
    """The units that may compute on tensors they are handed (`DataParameters`, hot per call
    for some rules): a parameter annotated with a record class of tensors, or checked to be
    a torch class (`isinstance(x, torch.Tensor)`), or a parameter,
    a field of one or a local bound to such a field that is the receiver of a method only
    tensors have, an operand of an argument of a torch call (any call under a name bound
    to torch: more than the operations that take only tensors), or an operand handed to a
    top-level function of the module that is such a unit itself.

    With `wanted`, only those units and the top-level functions (which others hand
    operands to) are examined: the answer is exact for them, and may leave out others."""
    torch_roots = {"torch"} | {name for name, parts in aliases.items() if "torch" in parts}
    direct: set[int] = set()
    handing: dict[int, set[str]] = {}
    for index, unit in enumerate(units):
        if wanted is not None and index not in wanted and unit.node.col_offset != 0:
            continue
        arguments = unit.node.args
        every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        params = {a.arg for a in every} - {"self", "cls"}
        if not params:
            continue
        if records and any(
            a.annotation is not None
            and any(
                (type(n) is ast.Name and n.id in records)  # type: ignore[attr-defined]
                or (type(n) is ast.Constant and n.value in records)  # type: ignore[attr-defined]
                for n in ast_nodes.walk(a.annotation)
            )
            for a in every
        ):
            direct.add(index)
            continue
        names: set[str] = set()
        nodes = list(ast_nodes.walk(unit.node))
        for node in nodes:  # locals bound to a parameter's field (`priors = inst.priors`)
            if type(node) is ast.Assign and len(node.targets) == 1:  # type: ignore[attr-defined]
                target = node.targets[0]  # type: ignore[attr-defined]
                if type(target) is ast.Name and _operands(node.value) & params:  # type: ignore[attr-defined]
                    params.add(target.id)
        for node in nodes:
            if type(node) is not ast.Call:
                continue
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr in TENSOR_METHODS:
                receiver = func.value
                while type(receiver) is ast.Subscript or type(receiver) is ast.Attribute:
                    receiver = receiver.value  # type: ignore[attr-defined]
                if type(receiver) is ast.Name and receiver.id in params:  # type: ignore[attr-defined]
                    direct.add(index)
                    break
            handed = any(
                params & _operands(arg)
                for arg in (*node.args, *(k.value for k in node.keywords))  # type: ignore[attr-defined]
            )
            if not handed:
                continue
            if (
                type(func) is ast.Name
                and func.id == "isinstance"
                and _names_torch(node, torch_roots)
            ):
                direct.add(index)  # `assert isinstance(x, torch.Tensor)`: an annotation
                break
            if type(func) is ast.Name:
                names.add(func.id)
                continue
            root = func
            while type(root) is ast.Attribute:
                root = root.value  # type: ignore[attr-defined]
            if type(root) is ast.Name and root.id in torch_roots:  # type: ignore[attr-defined]
                direct.add(index)
                break
        if names:
            handing[index] = names
    top_level = {
        unit.node.name: index for index, unit in enumerate(units) if unit.node.col_offset == 0
    }
    changed = True
    while changed:
        changed = False
        for index, names in handing.items():
            if index not in direct and any(top_level.get(n) in direct for n in names):
                direct.add(index)
                changed = True
    return direct


def _names_torch(call: ast.AST, torch_roots: set[str]) -> bool:
    """Whether a call's arguments name something under torch (`torch.Tensor`, or a
    `Tensor` imported from it)."""
    for arg in call.args:  # type: ignore[attr-defined]
        for node in ast_nodes.walk(arg):
            if type(node) is ast.Name and node.id == "Tensor":  # type: ignore[attr-defined]
                return True
            if type(node) is ast.Attribute:
                root = node
                while type(root) is ast.Attribute:
                    root = root.value  # type: ignore[attr-defined]
                if type(root) is ast.Name and root.id in torch_roots:  # type: ignore[attr-defined]
                    return True
    return False


def _operands(node: ast.AST) -> set[str]:
    """The names an argument computes on directly (`x`, `x[i]`, `-x`, `x * 2`, `x == 0`),
    or on a field of (`x.a > 0`). Iterative: a long chain of `+` nests deep."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is ast.Name:
            names.add(current.id)  # type: ignore[attr-defined]
        elif kind is ast.Subscript or kind is ast.Attribute:
            stack.append(current.value)  # type: ignore[attr-defined]
        elif kind is ast.UnaryOp:
            stack.append(current.operand)  # type: ignore[attr-defined]
        elif kind is ast.BinOp:
            stack.extend((current.left, current.right))  # type: ignore[attr-defined]
        elif kind is ast.Compare:
            stack.append(current.left)  # type: ignore[attr-defined]
            stack.extend(current.comparators)  # type: ignore[attr-defined]
    return names


def _aliases(tree: ast.Module) -> dict[str, set[str]]:
    """What each name bound by an import stands for: `xm` -> {torch_xla, core, xla_model}."""
    aliases: dict[str, set[str]] = {}
    # Imports are statements: walk the statement lists only, not every expression node
    # (`ast.walk` over the whole tree cost as much as the rest of the screen's split).
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for name in _STATEMENT_LISTS:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(value)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases.setdefault(alias.asname, set()).update(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".")
            for alias in node.names:
                bound = aliases.setdefault(alias.asname or alias.name, set())
                bound.update((alias.name, *module))
    return aliases


def _split(tree: ast.Module) -> tuple[list[_Unit], Features]:
    """The units (top-level functions and methods of top-level classes) and the features of
    everything else (the module-level code, class headers and class-level statements)."""
    units: list[_Unit] = []
    glue = Features()

    def unit(node: Unit, module_class: bool = False, owner: str | None = None) -> None:
        features = Features()
        features.add(node)
        last = node.end_lineno or node.lineno
        units.append(
            _Unit(
                node,
                features,
                _first_row(node),
                last,
                module_class and node.name == "__call__",
                owner=owner,
            )
        )

    for statement in tree.body:
        if isinstance(statement, _DEFS):
            unit(statement)
        elif isinstance(statement, ast.ClassDef):
            glue.identifiers.add(statement.name)
            glue.defines.add(statement.name)
            for part in (*statement.decorator_list, *statement.bases, *statement.keywords):
                glue.add(part)
            module_class = any(_may_be_module(base) for base in statement.bases) or any(
                isinstance(member, _DEFS) and member.name == "forward" for member in statement.body
            )
            first_member = len(units)
            for member in statement.body:
                if isinstance(member, _DEFS):
                    unit(member, module_class, statement.name)
                else:
                    glue.add(member)
            members = units[first_member:]
            if any("backward" in member.features.identifiers for member in members):
                for member in members:
                    member.beside_training = True
            if any("register_buffer" in member.features.identifiers for member in members):
                # Whether a trainer module keeps a buffer on the host (`tensors.
                # host_buffers`) rests on every method that runs backward or moves the
                # module itself: kept whole.
                for member in members:
                    if "backward" in member.features.identifiers or _moves_self(member.node):
                        member.features.reaching = True
        else:
            glue.add(statement)
    return units, glue


# How a module moves itself (and its buffers) to a device: `self.to(device)`.
_SELF_MOVES = frozenset({"to", "cuda", "xpu", "to_empty"})


def _moves_self(node: Unit) -> bool:
    """`self.to(...)`, `self.cuda()` in `node`."""
    return any(
        type(n) is ast.Call
        and type(n.func) is ast.Attribute  # type: ignore[attr-defined]
        and n.func.attr in _SELF_MOVES  # type: ignore[attr-defined]
        and type(n.func.value) is ast.Name  # type: ignore[attr-defined]
        and n.func.value.id == "self"  # type: ignore[attr-defined]
        for n in ast_nodes.walk(node)
    )


def _may_be_module(base: ast.expr) -> bool:
    """A base that may make a module class (`module_classes.is_module_class`): any but a
    builtin class (`object`, `dict`); the screen does not follow imports (`nn.Linear`,
    `from torch.nn import Linear`) nor the file's own module classes."""
    return not (isinstance(base, ast.Name) and base.id in _BUILTIN_NAMES)


def links(units: list[_Unit]) -> tuple[dict[str, list[int]], dict[int, set[int]]]:
    """The name links `_connected` follows: the units defining each name, and for each unit
    the other units that use a function it defines (the call graph is by name; a unit with a
    lambda default counts as called by any name it mentions), and a method's class: where
    the file builds instances decides whether the method runs on XLA at all
    (`reachability.OffXla`: a class built only under a CUDA guard)."""
    defined_by: dict[str, list[int]] = {}
    called_as: dict[str, list[int]] = {}  # function names (for a lambda default: any name)
    for index, unit in enumerate(units):
        features = unit.features
        for name in features.defines:
            defined_by.setdefault(name, []).append(index)
        for name in features.identifiers if features.lambda_default else features.functions:
            called_as.setdefault(name, []).append(index)
        if unit.owner is not None:
            called_as.setdefault(unit.owner, []).append(index)
    users: dict[int, set[int]] = {}  # unit -> units that use a function it defines
    for index, unit in enumerate(units):
        for name in unit.features.identifiers:
            for callee in called_as.get(name, ()):
                if callee != index:
                    users.setdefault(callee, set()).add(index)
    return defined_by, users


def _connected(units: list[_Unit], glue: Features, passing: set[int], text: str) -> set[int]:
    """The units libcst must see for the passing units' findings to be the whole file's.

    A finding rests on its function's callers, and theirs (who calls a function decides
    whether it is hot; where a loop's loader comes from is traced through the callers'
    arguments), and on what the function and its callers use, and what that uses in turn
    (what callees return, whether they reach a barrier, which attributes a method binds, how
    a caller's helper builds the loader it passes). So: the passing units and their callers
    transitively, and everything those and the module-level code use, transitively; not the
    callers of what is only used. Units that import, declare `global`/`nonlocal` or hold a
    `noqa` comment are kept as they are."""
    defined_by, users = links(units)

    def used(index: int) -> list[int]:
        return [i for n in units[index].features.identifiers for i in defined_by.get(n, ())]

    callers = closure(passing, lambda index: users.get(index, ()))
    from_glue = {i for name in glue.identifiers for i in defined_by.get(name, ())}
    kept = closure(callers | from_glue, used)
    lines = text.splitlines()
    for index, unit in enumerate(units):
        if unit.features.reaching or any(
            "noqa" in line for line in lines[unit.first - 1 : unit.last]
        ):
            kept.add(index)
    return kept


def closure(start: Iterable[int], step: Callable[[int], Iterable[int]]) -> set[int]:
    """`start` and every unit `step` reaches from it, transitively."""
    found = set(start)
    todo = list(found)
    while todo:
        for other in step(todo.pop()):
            if other not in found:
                found.add(other)
                todo.append(other)
    return found


def _blank(node: Unit, lines: list[str]) -> tuple[int, int] | None:
    """Blank `node`'s body in `lines`, leaving `pass` on its first row, and return the
    body's rows; None (and nothing changed) where the body shares a row with the header.
    A decorated definition starts at its first decorator (`ast` places it at `def`)."""
    body = node.body
    first, last = _first_row(body[0]), node.end_lineno
    if last is None or first <= node.lineno or last > len(lines):
        return None
    prefix = lines[first - 1].encode("utf-8")[: body[0].col_offset]
    if prefix.strip(b" \t") or not prefix:
        return None
    for row in range(first, last + 1):
        line = lines[row - 1]
        ending = line[len(line.rstrip("\r\n")) :]
        lines[row - 1] = (prefix.decode() + "pass" if row == first else "") + ending
    return first, last


def _first_row(statement: ast.stmt) -> int:
    """The first row of `statement`: its first decorator's, for a decorated definition."""
    decorators = getattr(statement, "decorator_list", ())
    return min([statement.lineno, *(d.lineno for d in decorators)])
