"""Training steps that another module of the project defines: the cross-module facts.

xlalint lints one file at a time, but a loop's step is often another file's:
elegantrl's `class AgentPPO(AgentBase)` calls `self.optimizer_update(optimizer, loss)` in
its update loop, and `AgentBase.optimizer_update` (in `AgentBase.py`) runs backward and
`optimizer.step()`. `ModuleSteps` answers, for a call the linted file cannot resolve,
whether the function it reaches in a project module (`project_modules.consulted`) steps
an optimizer on each call: in its own body, not in a loop of it (a method that loops over
batches is an epoch, and the loop there is the step loop), directly or through functions
and methods of its own module, a few calls deep. And whether a function there joins the
elements of a list it is handed into one tensor (`gather_listed_dicts(results)` running
`torch.cat([d[k] for d in dict_list])`: `joins`), for an evaluation loop that hands it
every batch's device results.

Resolution, bounded: `self.m()` / `super().m()` through the bases of the calling class
(a base of the file itself is followed to its bases; a base of another module to its
module's classes and imports: two levels of classes beyond the caller's), `f()` bound by
`from .x import f`, `mod.f()` bound by `from . import mod`. A module that imports
torch_xla or names XLA or TPUs (`names_xla`) contributes nothing: the step there may hold
its own barrier, or the project's XLA path another one. The modules are read with
CPython's `ast`; each list computed and each module read is noted
(`project_modules.note`) for the file's cache entry.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import ast_nodes, lint_memo
from xlalint.analysis import project_modules
from xlalint.analysis.devices import names_xla
from xlalint.analysis.loop_facts import (
    generic_method,
    names_optimizer,
    names_optimizers,
    self_call,
    steps_an_optimizer,
)
from xlalint.walk import bound_names, descendants, last_name, self_attribute

_CALLED_CLASS = re.compile(r"\b([A-Z]\w*)\s*\(")
_CALL_DEPTH = 3  # calls followed inside the other module
_CLASS_LEVELS = 3  # the caller's class, its bases, their bases
Function = ast.FunctionDef | ast.AsyncFunctionDef
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp,
          ast.GeneratorExp)  # fmt: skip


@dataclass(frozen=True)
class _Function:
    """What one call of a function of another module does (not in its loops): step an
    optimizer itself, and the calls it makes that may lead to a step (`self.m()`,
    `f()`). A summary, not the tree: a process keeps these for every module it read."""

    name: str
    steps: bool
    self_calls: tuple[str, ...]
    name_calls: tuple[str, ...]
    # Positions of the parameters whose elements the function joins into one tensor
    # (`torch.cat([d[k] for d in dict_list])`, `torch.stack(outs)`): `_joined_params`.
    joins: tuple[int, ...] = ()
    # Backward, then a value updated from a gradient handed back (`grad_step_of`).
    grad_step: bool = False


class _Functions(Mapping[str, _Function]):
    """A module's functions (or a class's methods) by name, the first definition of each,
    each summarised (`_function`) when first asked: a lint asks about the few its calls
    name (round 26: a one-file check of a diffusers pipeline summarised every function of
    six modules, ~3% of its instructions, for a handful). The nodes are held until the
    next lint starts, or the module is no longer among the last summarised (`_holding`);
    then every summary is made, as before, and the nodes are dropped: a run of many files
    makes the same summaries as when each module was summarised whole, and keeps no tree
    from one lint to the next; a one-file check makes only those it asks."""

    def __init__(self, nodes: dict[str, Function], backward: bool, joins: bool) -> None:
        self._nodes = nodes
        self._made: dict[str, _Function] = {}
        self._backward = backward
        self._joins = joins

    def __getitem__(self, key: str) -> _Function:
        made = self._made.get(key)
        if made is None:
            node = self._nodes.get(key)
            if node is None:
                raise KeyError(key)
            made = self._made[key] = _function(node, self._backward, self._joins)
        return made

    def __contains__(self, key: object) -> bool:
        return key in self._nodes or key in self._made

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._nodes) if self._nodes else list(self._made))

    def __len__(self) -> int:
        return len(self._nodes) if self._nodes else len(self._made)

    def complete(self) -> None:
        """Make every summary and drop the nodes."""
        for key in self._nodes:
            self[key]
        self._made = {key: self._made[key] for key in self._nodes} if self._nodes else self._made
        self._nodes = {}


@dataclass(frozen=True)
class _Class:
    name: str
    bases: tuple[str, ...]  # as spelled: `AgentBase`, `base.AgentBase`
    methods: Mapping[str, _Function]
    # `self._update_impl = self.update` in a method: the attribute holds bound methods of
    # the instance, so `self._update_impl(...)` runs one of them.
    bound: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class _Module:
    """One project module: its top-level functions and classes, and what its imports
    bind (name -> (dots, dotted target))."""

    path: str
    functions: Mapping[str, _Function]
    classes: dict[str, _Class]
    bindings: dict[str, tuple[int, str]]
    knows_xla: bool


def _summary(path: str, tree: ast.Module, text: str) -> _Module:
    # Text screens (round 25): in an ASCII text every name is spelled as the tree reads it
    # (elsewhere NFKC may read a fullwidth letter as its ASCII one), so a text that never spells
    # `backward` runs it in no function, and one that spells no join (`_JOIN_WORD`) joins
    # nothing: those walks are skipped, with the answers they would give.
    ascii = text.isascii()
    backward = not ascii or "backward" in text
    joins = not ascii or _JOIN_WORD.search(text) is not None
    functions: dict[str, Function] = {}
    classes: dict[str, _Class] = {}
    every = [_Functions(functions, backward, joins)]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.setdefault(node.name, node)
        elif isinstance(node, ast.ClassDef) and node.name not in classes:
            methods: dict[str, Function] = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    methods.setdefault(item.name, item)
            bases = tuple(b for b in map(project_modules.dotted_name, node.bases) if b is not None)
            every.append(_Functions(methods, backward, joins))
            classes[node.name] = _Class(node.name, bases, every[-1], _bound(node))
    # XLA or TPUs named anywhere in the text, comments included: the cautious reading.
    knows_xla = names_xla(text)
    _holding(every, len(text))
    return _Module(path, every[0], classes, project_modules.bindings(text), knows_xla)


# The modules whose function nodes are held while their summaries are made as asked, with
# the length of their texts: at most `_HELD_TEXT` characters (a tree is ~22 times its
# text); the oldest are completed (every summary made, the nodes dropped), so a whole-tree
# run makes no more summaries than when each module was summarised whole
# (`module_reads._holding` holds the same way).
_HELD_TEXT = 512 * 1024
_held: deque[tuple[list[_Functions], int]] = deque()
_held_text = 0


def _holding(functions: list[_Functions], size: int) -> None:
    global _held_text
    _held.append((functions, size))
    _held_text += size
    while _held_text > _HELD_TEXT and _held:
        _let_go()


def _let_go() -> None:
    """Complete the oldest module held."""
    global _held_text
    oldest, oldest_size = _held.popleft()
    _held_text -= oldest_size
    for mapping in oldest:
        mapping.complete()


def _let_all_go() -> None:
    while _held:
        _let_go()


lint_memo.on_start(_let_all_go)  # no node of one lint's modules outlives the next's start


def _ast_self_attribute(node: ast.expr) -> str | None:
    """`self.x` -> `x`."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def _bound(class_def: ast.ClassDef) -> dict[str, tuple[str, ...]]:
    """Attributes the class's methods assign a bound method of the instance (`self.
    _update_impl = self.update`), with those methods' names."""
    bound: dict[str, list[str]] = {}
    # Statements only (the blocks of compound ones), not every expression: a summary is
    # made for each module a question reaches.
    stack: list[ast.AST] = [
        statement
        for item in class_def.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        for statement in item.body
    ]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            if (method := _ast_self_attribute(node.value)) is not None:
                for target in node.targets:
                    if (attribute := _ast_self_attribute(target)) is not None:
                        bound.setdefault(attribute, []).append(method)
            continue
        if isinstance(node, _NESTED):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                stack.extend(block)
    return {attribute: tuple(dict.fromkeys(methods)) for attribute, methods in bound.items()}


def _function(node: Function, backward: bool = True, joins: bool = True) -> _Function:
    """`node`'s summary; `backward` False: its module's text never spells `backward`,
    `joins` False: nor a join (`_summary`'s screens), so neither is looked for."""
    steps = False
    self_calls: list[str] = []
    name_calls: list[str] = []
    for call in _pass_calls(node):
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "step":
            steps = steps or steps_its_optimizer(call)
        elif (method := _self_call(call)) is not None:
            self_calls.append(method)
        elif isinstance(func, ast.Name):
            name_calls.append(func.id)
    return _Function(
        node.name,
        steps,
        tuple(dict.fromkeys(self_calls)),
        tuple(dict.fromkeys(name_calls)),
        _joined_params(node) if joins else (),
        grad_step_of(node) if backward else False,
    )


def _own_nodes(function: Function) -> Iterator[ast.AST]:
    """The nodes one call of `function` runs once: not in its loops, comprehensions, or
    the functions, lambdas and classes it defines."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED + _LOOPS):
            continue
        yield node
        stack.extend(ast_nodes.child_nodes(node))


def grad_step_of(function: Function) -> bool:
    """One call runs `backward()` and returns a value it updated from a gradient:
    `loss.backward()`, `adv_x = x + eps * x.grad.sign()` (or through a local,
    `perturbation = optimize_linear(x.grad, eps)`, then `adv_x = x + perturbation`),
    `return adv_x`: a gradient step (an attack's, a hand-written optimizer's) handed
    back to the caller. The update adds (or subtracts) a value computed from the gradient
    to one that is not; a gradient read only to measure it (`return total_norm` of
    `p.grad.norm()`) updates nothing."""
    nodes = list(_own_nodes(function))
    if not any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in nodes
    ):
        return False
    graded: set[str] = set()  # locals computed from a gradient
    updated: set[str] = set()  # locals updated from one

    def reads(expr: ast.AST, names: set[str], grad: bool) -> bool:
        return any(
            (grad and isinstance(n, ast.Attribute) and n.attr == "grad")
            or (isinstance(n, ast.Name) and n.id in names)
            for n in ast_nodes.walk(expr)
        )

    def is_update(expr: ast.AST) -> bool:
        return any(
            isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Add | ast.Sub)
            and reads(n.left, graded, True) != reads(n.right, graded, True)
            for n in ast_nodes.walk(expr)
        )

    assigns = [n for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign) and n.value]
    for _ in range(2):
        for node in assigns:
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast_nodes.walk(t) if isinstance(n, ast.Name)}
            if value is not None and (is_update(value) or reads(value, updated, False)):
                updated |= names
            elif value is not None and reads(value, graded, True):
                graded |= names
    return any(
        isinstance(n, ast.Return)
        and n.value is not None
        and (is_update(n.value) or reads(n.value, updated, False))
        for n in nodes
    )


_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})
_JOIN_WORD = re.compile(r"\b(?:" + "|".join(sorted(_JOINS)) + r")\b")


def _joined_params(node: Function) -> tuple[int, ...]:
    """The positions of the parameters whose elements the function joins into one tensor
    anywhere in its body: `torch.cat(outs)`, `torch.cat([d[k] for d in dict_list], 0)`
    (a comprehension over the parameter). Handed a list of every batch's device results,
    such a helper computes them all in one graph."""
    names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if names[:1] in (["self"], ["cls"]):
        names = names[1:]
    if not names:
        return ()
    joined: set[str] = set()
    for call in ast_nodes.walk(node):
        if not (isinstance(call, ast.Call) and call.args and _last(call.func) in _JOINS):
            continue
        first = call.args[0]
        if isinstance(first, ast.Name):
            joined.add(first.id)
        elif isinstance(first, ast.ListComp | ast.GeneratorExp):
            joined.update(g.iter.id for g in first.generators if isinstance(g.iter, ast.Name))
    return tuple(i for i, name in enumerate(names) if name in joined)


def steps_its_optimizer(call: ast.Call) -> bool:
    """`optimizer.step()`, `self.d_optim.step()`: a `step` of a receiver named for an
    optimizer."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "step":
        return False
    receiver = project_modules.dotted_name(func.value)
    return receiver is not None and steps_an_optimizer(receiver.rsplit(".", 1)[-1])


def _module(path: str) -> _Module | None:
    stat = project_modules.stat_key(path)
    project_modules.note((path,))  # by its stat: a list notes its last hop by existence
    return None if stat is None else _module_at(path, stat)


@lru_cache(maxsize=2048)
def _module_at(path: str, stat: tuple[int, int]) -> _Module | None:
    """A module's summary, made once per path and size/mtime in a process (its tree is
    dropped after)."""
    text = project_modules.text_at(path, stat)
    tree = None if text is None else project_modules.parse(path, text)
    return None if tree is None or text is None else _summary(path, tree, text)


def _pass_calls(function: Function) -> Iterator[ast.Call]:
    """The calls one call of `function` makes once: not in its loops or comprehensions
    (but in a loop over the optimizers: one step of each), nor in functions, lambdas and
    classes it defines."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.For | ast.AsyncFor) and _over_optimizers(node):
            stack.extend((node.iter, *node.body))
            continue
        if isinstance(node, _NESTED + _LOOPS):
            if isinstance(node, ast.For | ast.AsyncFor):
                stack.append(node.iter)  # evaluated once
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast_nodes.child_nodes(node))


def _last(node: ast.expr) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _over_optimizers(loop: ast.For | ast.AsyncFor) -> bool:
    """`for opt in optimizers:`, `for k, v in self.optimizers.items():`, or a loop over
    keys that fetches each optimizer (`optimizer = self.optimizers[group]`): the loop
    `loop_facts.iterates_optimizers` counts as part of one step."""
    targets = {n.id for n in ast_nodes.walk(loop.target) if isinstance(n, ast.Name)}
    if any(names_optimizer(name) for name in targets):
        return True
    iterable = loop.iter
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr in ("keys", "values", "items")
        and not iterable.args
    ):
        iterable = iterable.func.value
    if names_optimizers(_last(iterable)):
        return True
    return any(
        isinstance(node, ast.Subscript)
        and names_optimizers(_last(node.value))
        and isinstance(node.slice, ast.Name)
        and node.slice.id in targets
        for statement in loop.body
        for node in ast_nodes.walk(statement)
    )


def _self_call(call: ast.Call) -> str | None:
    """`self.m(...)`, `cls.m(...)`, `super().m(...)` -> `m`."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
        return func.attr
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "super"
    ):
        return func.attr
    return None


class ModuleSteps:
    """The cross-module facts one linted file may consult (`project_modules.consulted`);
    nothing is read until a question needs it."""

    def __init__(self, filename: str, text: str, module: cst.Module) -> None:
        self.filename = filename
        self._text = text
        self._module = module
        self._allowed: frozenset[str] | None = None
        self._imported: frozenset[str] | None = None
        self._bindings: dict[str, tuple[int, str]] | None = None
        self._memo: dict[tuple[str, str, str], bool] = {}
        self._classes: list[tuple[_Module, _Class]] | None = None
        self._instances: dict[str, str] | None = None  # name -> the class every binding calls
        self._alias_table: dict[str, cst.BaseExpression] | None = None
        # id(class) -> its `self.<attribute> = value` assignments (`_attribute_values`).
        self._assigned: dict[int, dict[str, list[tuple[cst.BaseExpression, cst.FunctionDef]]]] = {}

    # -- the linted file --------------------------------------------------------------------
    @property
    def allowed(self) -> frozenset[str]:
        """Every module the file may consult (noted for the cache entry when asked)."""
        if self._allowed is None:
            # The list itself is an input of the result (`note_consulted` says how).
            paths = project_modules.note_consulted(self.filename, self._text)
            self._allowed = frozenset(paths)
        return self._allowed

    @property
    def imported(self) -> frozenset[str]:
        """The modules the file imports itself: most questions end there, without reading
        the modules those import."""
        if self._imported is None:
            paths = project_modules.note_consulted(self.filename, self._text, hops=1)
            self._imported = frozenset(paths)
        return self._imported

    def _may_read(self, path: str) -> bool:
        return path in self.imported or path in self.allowed

    def _file_bindings(self) -> dict[str, tuple[int, str]]:
        """What the linted file's import statements bind, relative ones included."""
        if self._bindings is None:
            self._bindings = project_modules.bindings(self._text)
        return self._bindings

    def _local_classes(self) -> dict[str, cst.ClassDef]:
        return {n.name.value: n for n in self._module.body if isinstance(n, cst.ClassDef)}

    # -- questions --------------------------------------------------------------------------
    def steps_optimizer(
        self,
        call: cst.Call,
        class_def: cst.ClassDef | None,
        function: cst.FunctionDef | None = None,
    ) -> bool:
        """Whether `call`, which no function of the linted file answers, runs a function
        of another project module that steps an optimizer on each call. `function`: the
        function of the file whose body makes the call (its parameters' annotations)."""
        if not self.imported:
            return False
        return any(
            not module.knows_xla and self._steps(module, target, owner, _CALL_DEPTH)
            for module, target, owner in self._targets(call, class_def, function)
        )

    def grad_step(
        self,
        call: cst.Call,
        class_def: cst.ClassDef | None,
        function: cst.FunctionDef | None = None,
    ) -> bool:
        """Whether `call`, which no function of the linted file answers, runs a function
        of another project module that runs backward and hands back a value it updated
        from the gradient (`grad_step_of`: cleverhans's `fast_gradient_method`)."""
        if not self.imported:
            return False
        return any(
            not module.knows_xla and target.grad_step
            for module, target, _ in self._targets(call, class_def, function)
        )

    def joins(self, call: cst.Call, position: int) -> bool:
        """Whether `call` (`gather_listed_dicts(results)`), which no function of the linted
        file answers, runs a function of another project module that joins the elements
        of its positional argument `position` into one tensor (`_joined_params`); a
        package's `__init__.py` re-exporting the function is followed one hop."""
        if not self.imported or type(call.func) is not cst.Name:
            return False
        binding = self._file_bindings().get(call.func.value)  # type: ignore[attr-defined]
        if binding is None:
            return False
        found = self._locate(self.filename, *binding)
        if found is not None and found[1] not in found[0].functions:
            module, name = found
            reexport = module.bindings.get(name)
            found = None if reexport is None else self._locate(module.path, *reexport)
        if found is None or found[1] not in found[0].functions:
            return False
        module, name = found
        return not module.knows_xla and position in module.functions[name].joins

    def _targets(
        self,
        call: cst.Call,
        class_def: cst.ClassDef | None,
        function: cst.FunctionDef | None = None,
    ) -> Iterator[tuple[_Module, _Function, _Class | None]]:
        func = call.func
        if isinstance(func, cst.Attribute) and class_def is not None and self_call(call):
            yield from self._inherited(class_def, func.attr.value)
            return
        spelled = get_full_name_for_node(func)
        head, _, rest = (spelled or "").partition(".")
        binding = self._file_bindings().get(head)
        if binding is None:
            if isinstance(func, cst.Attribute) and (
                classes := self._receiver_classes(func.value, class_def, function)
            ):
                # `amp.step(model, optimizer)` with `amp = MixedPrecisionManager(...)`,
                # `agent.learn(batch)` with `agent: DQN | TD3`, `self.learner.update(b)`
                # with `self.learner = Learner(...)`: the classes are known, so is the
                # method, however generic its name (of any of them: the call may run each).
                for cls in classes:
                    found = self._in_classes([cls], func.attr.value)
                    if found is not None:
                        yield found
                return
            if isinstance(func, cst.Attribute) and not generic_method(func.attr.value):
                # `self.optimizers.optimizer_scaler_step_some(scaler, groups)`: a method
                # of that name of a class the file imports, as `LoopFacts.resolve` takes
                # one of the file's own classes by the method's name.
                found = self._in_classes(self._imported_classes(), func.attr.value)
                if found is not None:
                    yield found
            return
        level, dotted = binding
        found = self._locate(self.filename, level, f"{dotted}.{rest}" if rest else dotted)
        if found is not None:
            module, name = found
            if name in module.functions:
                yield module, module.functions[name], None

    def _receiver_classes(
        self,
        receiver: cst.BaseExpression,
        class_def: cst.ClassDef | None,
        function: cst.FunctionDef | None,
    ) -> list[tuple[_Module, _Class]]:
        """The classes of other project modules whose instance `receiver` holds: a plain
        name every binding of the file constructs (`_instance_class`), a parameter of the
        function making the call annotated with them (`agent: SupportedOffPolicy`, the
        file's alias of `DQN | TD3`) and not rebound there, or an attribute of `self` that
        every assignment in the calling class sets to one (`self.learner = Learner(...)`,
        or a parameter so annotated: `self.policy = policy`)."""
        if (cls := self._instance_class(receiver)) is not None:
            return [cls]
        if type(receiver) is cst.Name:
            name = receiver.value  # type: ignore[attr-defined]
            if function is None or name in bound_names(function):
                return []
            return self._parameter_classes(function, name)
        attribute = self_attribute(receiver)
        if attribute is None or class_def is None:
            return []
        classes: list[tuple[_Module, _Class]] = []
        for value, method in self._attribute_values(class_def).get(attribute, ()):
            made = self._made_classes(value, method)
            if not made:
                return []  # some assignment holds something else
            classes.extend(made)
        return classes

    def _attribute_values(
        self, class_def: cst.ClassDef
    ) -> dict[str, list[tuple[cst.BaseExpression, cst.FunctionDef]]]:
        """`self.<attribute> = value` in the class's methods: attribute -> (value, method),
        from one walk of the class per lint."""
        table = self._assigned.get(id(class_def))
        if table is None:
            table = self._assigned[id(class_def)] = {}
            for method in class_def.body.body:  # type: ignore[attr-defined]
                if type(method) is not cst.FunctionDef:
                    continue
                for node in descendants(method):
                    if type(node) is not cst.Assign:
                        continue
                    for target in node.targets:  # type: ignore[attr-defined]
                        if (attribute := self_attribute(target.target)) is not None:
                            table.setdefault(attribute, []).append((node.value, method))  # type: ignore[attr-defined]
        return table

    def _made_classes(
        self, value: cst.BaseExpression, function: cst.FunctionDef
    ) -> list[tuple[_Module, _Class]]:
        """`Learner(...)` of an imported class, or a parameter of `function` annotated
        with such classes (and not rebound in it)."""
        if type(value) is cst.Call:
            spelled = get_full_name_for_node(value.func)  # type: ignore[attr-defined]
            found = self._file_class(spelled, reexports=True) if spelled else None
            return [found] if found is not None else []
        if type(value) is cst.Name and value.value not in bound_names(function):  # type: ignore[attr-defined]
            return self._parameter_classes(function, value.value)  # type: ignore[attr-defined]
        return []

    def _parameter_classes(
        self, function: cst.FunctionDef, name: str
    ) -> list[tuple[_Module, _Class]]:
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == name:
                if param.annotation is None:
                    return []
                return self._annotated_classes(param.annotation.annotation, 2)
        return []

    def _annotated_classes(
        self, annotation: cst.BaseExpression, depth: int
    ) -> list[tuple[_Module, _Class]]:
        """The imported project classes an annotation names: `DQN`, `DQN | TD3`,
        `Optional[DQN]`, `Union[DQN, TD3]`, `"DQN"`, or a module-level alias of the file
        (`SupportedOffPolicy = DQN | RainbowDQN`), `depth` aliases deep."""
        kind = type(annotation)
        if kind is cst.SimpleString:
            # A forward reference, `agent: "DQN"`.
            text = annotation.evaluated_value  # type: ignore[attr-defined]
            try:
                annotation = cst.parse_expression(text) if isinstance(text, str) else None
            except cst.ParserSyntaxError:
                return []
            if annotation is None or type(annotation) is cst.SimpleString:
                return []
            kind = type(annotation)
        if kind is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:  # type: ignore[attr-defined]
            return self._annotated_classes(
                annotation.left,  # type: ignore[attr-defined]
                depth,
            ) + self._annotated_classes(annotation.right, depth)  # type: ignore[attr-defined]
        if kind is cst.Subscript:
            if last_name(annotation.value) not in ("Optional", "Union"):  # type: ignore[attr-defined]
                return []
            found: list[tuple[_Module, _Class]] = []
            for element in annotation.slice:  # type: ignore[attr-defined]
                if isinstance(element.slice, cst.Index):
                    found.extend(self._annotated_classes(element.slice.value, depth))
            return found
        spelled = get_full_name_for_node(annotation) if kind in (cst.Name, cst.Attribute) else None
        if spelled is None:
            return []
        if (cls := self._file_class(spelled, reexports=True)) is not None:
            return [cls]
        alias = self._aliases().get(spelled)
        return [] if alias is None or depth <= 0 else self._annotated_classes(alias, depth - 1)

    def _aliases(self) -> dict[str, cst.BaseExpression]:
        """Module-level names the file binds once, to what (`SupportedOffPolicy = DQN |
        TD3`, `Agent: TypeAlias = ...`): candidate type aliases."""
        if self._alias_table is None:
            values: dict[str, list[cst.BaseExpression]] = {}
            for statement in self._module.body:
                if type(statement) is not cst.SimpleStatementLine:
                    continue
                for small in statement.body:  # type: ignore[attr-defined]
                    if type(small) is cst.Assign and len(small.targets) == 1:  # type: ignore[attr-defined]
                        target = small.targets[0].target  # type: ignore[attr-defined]
                        if type(target) is cst.Name:
                            values.setdefault(target.value, []).append(small.value)  # type: ignore[attr-defined]
                    elif type(small) is cst.AnnAssign and small.value is not None:  # type: ignore[attr-defined]
                        target = small.target  # type: ignore[attr-defined]
                        if type(target) is cst.Name:
                            values.setdefault(target.value, []).append(small.value)  # type: ignore[attr-defined]
            self._alias_table = {n: v[0] for n, v in values.items() if len(v) == 1}
        return self._alias_table

    def _instance_class(self, receiver: cst.BaseExpression) -> tuple[_Module, _Class] | None:
        """The class of another project module that every binding of a plain name in the
        linted file constructs (`amp = MixedPrecisionManager(config.amp)`; no parameter,
        loop target or other assignment of that name), else None."""
        if type(receiver) is not cst.Name:
            return None
        name = receiver.value  # type: ignore[attr-defined]
        if self._instances is None and not (
            set(_CALLED_CLASS.findall(self._text)) & self._file_bindings().keys()
        ):
            self._instances = {}  # the file constructs no class it imports
        if self._instances is None:
            made: dict[str, set[str]] = {}
            for node in descendants(self._module):
                if type(node) is cst.Assign:
                    value = node.value  # type: ignore[attr-defined]
                    spelled = (
                        get_full_name_for_node(value.func) if type(value) is cst.Call else None
                    )
                    for target in node.targets:  # type: ignore[attr-defined]
                        if type(target.target) is cst.Name:
                            made.setdefault(target.target.value, set()).add(spelled or "")
                elif type(node) in (cst.AnnAssign, cst.AugAssign, cst.For) and (
                    type(node.target) is cst.Name  # type: ignore[attr-defined]
                ):
                    made.setdefault(node.target.value, set()).add("")  # type: ignore[attr-defined]
                elif type(node) is cst.Param:
                    made.setdefault(node.name.value, set()).add("")  # type: ignore[attr-defined]
            self._instances = {n: next(iter(c)) for n, c in made.items() if len(c) == 1}
        spelled = self._instances.get(name)
        return self._file_class(spelled, reexports=True) if spelled else None

    def _inherited(
        self, class_def: cst.ClassDef, method: str
    ) -> Iterator[tuple[_Module, _Function, _Class | None]]:
        """The first definition of `method` along the bases of a class of the linted file
        (whose own methods do not define it)."""
        local = self._local_classes()
        pending: list[cst.ClassDef] = [class_def]
        seen: set[int] = set()
        for _ in range(_CLASS_LEVELS):
            foreign: list[tuple[_Module, _Class]] = []
            following: list[cst.ClassDef] = []
            for cls in pending:
                if id(cls) in seen:
                    continue
                seen.add(id(cls))
                for base in cls.bases:
                    spelled = None if base.keyword else get_full_name_for_node(base.value)
                    if spelled is None:
                        continue
                    if spelled in local:
                        following.append(local[spelled])
                    elif (found := self._file_class(spelled)) is not None:
                        foreign.append(found)
            if foreign:
                found_method = self._in_classes(foreign, method)
                if found_method is not None:
                    yield found_method
                return
            pending = following
            if not pending:
                return

    def _in_classes(
        self, classes: list[tuple[_Module, _Class]], method: str
    ) -> tuple[_Module, _Function, _Class] | None:
        """`method` along other modules' classes, in MRO order (left to right, a level of
        bases at a time)."""
        level = classes
        for _ in range(_CLASS_LEVELS):
            following: list[tuple[_Module, _Class]] = []
            for module, cls in level:
                if method in cls.methods:
                    return module, cls.methods[method], cls
                following.extend(self._bases(module, cls))
            level = following
            if not level:
                break
        return None

    def _self_targets(
        self, module: _Module, owner: _Class, method: str
    ) -> Iterator[tuple[_Module, _Function, _Class]]:
        """What `self.<method>(...)` runs in a class of another module: the method along its
        bases, or the methods an attribute of that name is bound to (`self._update_impl =
        self.update`, then `self._update_impl(obs, ...)`)."""
        found = self._in_classes([(module, owner)], method)
        if found is not None:
            yield found
            return
        level = [(module, owner)]
        for _ in range(_CLASS_LEVELS):
            following: list[tuple[_Module, _Class]] = []
            for where, cls in level:
                if method in cls.bound:
                    for name in cls.bound[method]:
                        if (bound := self._in_classes([(module, owner)], name)) is not None:
                            yield bound
                    return
                following.extend(self._bases(where, cls))
            level = following

    def _bases(self, module: _Module, cls: _Class) -> Iterator[tuple[_Module, _Class]]:
        for spelled in cls.bases:
            if spelled in module.classes:
                yield module, module.classes[spelled]
                continue
            head, _, rest = spelled.partition(".")
            binding = module.bindings.get(head)
            if binding is None:
                continue
            level, dotted = binding
            found = self._locate(module.path, level, f"{dotted}.{rest}" if rest else dotted)
            if found is not None and found[1] in found[0].classes:
                yield found[0], found[0].classes[found[1]]

    def _imported_classes(self) -> list[tuple[_Module, _Class]]:
        """The classes of other project modules that the file's imports bind."""
        if self._classes is None:
            # Only classes the file constructs (`Optimizers(...)`, a capitalised name called
            # somewhere in its text): the file holds their instances.
            called = set(_CALLED_CLASS.findall(self._text))
            self._classes = [
                found
                for name in self._file_bindings()
                if name in called and (found := self._file_class(name))
            ]
        return self._classes

    def _file_class(self, spelled: str, reexports: bool = False) -> tuple[_Module, _Class] | None:
        head, _, rest = spelled.partition(".")
        binding = self._file_bindings().get(head)
        if binding is None:
            return None
        level, dotted = binding
        found = self._locate(self.filename, level, f"{dotted}.{rest}" if rest else dotted)
        if reexports and found is not None and found[1] not in found[0].classes:
            # `from agilerl.algorithms import DQN`: a package's `__init__.py` re-exporting
            # the class of one of its modules (`from .dqn import DQN`), one hop. Only for
            # the classes a receiver is stated to hold: following every base and every
            # constructed name so read a module more per lint on a third of diffusers.
            module, name = found
            reexport = module.bindings.get(name)
            found = None if reexport is None else self._locate(module.path, *reexport)
        if found is None or found[1] not in found[0].classes:
            return None
        return found[0], found[0].classes[found[1]]

    def _locate(self, importer: str, level: int, dotted: str) -> tuple[_Module, str] | None:
        """`pkg.mod.Name` seen from `importer` -> (the module `pkg.mod`, "Name"), where the
        module is one the linted file may consult."""
        module_path, _, name = dotted.rpartition(".")
        if not name:
            return None
        path = project_modules.resolve(importer, level, module_path)
        if path is None or not self._may_read(path):
            return None
        module = _module(path)
        return None if module is None else (module, name)

    # -- what another module's function does ---------------------------------------------
    def _steps(
        self, module: _Module, function: _Function, owner: _Class | None, depth: int
    ) -> bool:
        """An optimizer step in one call of `function`, or in the functions of its module
        (the methods of `owner` and its bases for `self.m()`) it calls, `depth` deep."""
        key = (module.path, owner.name if owner else "", function.name)
        if key not in self._memo:
            self._memo[key] = False  # recursion guard
            self._memo[key] = function.steps or (
                depth > 0
                and (
                    any(
                        self._steps(*found, depth - 1)
                        for method in (function.self_calls if owner is not None else ())
                        for found in self._self_targets(module, owner, method)  # type: ignore[arg-type]
                    )
                    or any(
                        self._steps(module, module.functions[name], None, depth - 1)
                        for name in function.name_calls
                        if name in module.functions
                    )
                )
            )
        return self._memo[key]
