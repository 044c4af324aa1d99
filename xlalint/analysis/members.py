"""Methods reached through an attribute that holds an instance of a class of the module.

A decoding loop often delegates each step to a strategy object the constructor picks
(`self.decoder = GreedyDecoder(...)` or `BeamSearchDecoder(...)`), and calls
`self.decoder.update(tokens, logits)` once per token. Hot code is found by function name
(`analysis/hotness.py`); this index says which method names such a call can reach: the
methods of every class of the module that the calling class (or a class it derives from
or that derives from it) assigns to that attribute of `self`. An attribute never assigned
a class of the module (a model, a tokenizer, a list) reaches nothing here, so
`self.model.generate(...)` stays unknown; nor does one that only another, unrelated class
fills with a class of the module (`Report.stats = Stats()` says nothing of a `Trainer`'s
`self.stats = {}`). A script does the same through a plain name (`q_network =
QNetwork(...).to(device)`, then `q_network.get_action(obs)` in its loop): a name every
assignment binds to a class of the module reaches its methods. Such an instance may also
come from a factory of the module (a function or method whose every `return` builds one,
`self._search_factory(dev)`), through methods that hand back `self`, and a loop name over
a name bound to a list comprehension of them holds one (parlai's `for i, b in
enumerate(beams): b.advance(score[i])`, every token).
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import parameter, parameters, positional_names
from xlalint.analysis.returns import _walk_body
from xlalint.walk import EXPRESSIONS, code_children, name_assignments, top_level_functions


def is_property(function: cst.FunctionDef) -> bool:
    """`@property`, `@functools.cached_property`, `@abc.abstractproperty`: reading the
    attribute runs the function (and hands back what it returns, which may be a model)."""
    for decorator in function.decorators:
        value = decorator.decorator
        func = value.func if isinstance(value, cst.Call) else value
        if (get_full_name_for_node(func) or "").rsplit(".", 1)[-1].endswith("property"):
            return True
    return False


# Nodes hash by identity: one walk per module, whatever the number of calls asked about.
@lint_memo.memo(16)
def member_methods(module: cst.Module) -> dict[tuple[str, str], frozenset[str]]:
    """For each class `K` of the module and attribute name `x` that `K`'s code assigns
    `self.x = C(...)` with `C` a class of the module (conditional expressions' branches
    included), the methods those classes and their same-module bases define."""
    classes, assignments = _walked(module)[:2]
    if not classes:
        return {}
    found: dict[tuple[str, str], set[str]] = {}
    for owner, node, _ in assignments:
        if owner is None:
            continue
        for target in node.targets:
            attribute = target.target
            if not (
                type(attribute) is cst.Attribute
                and isinstance(attribute.value, cst.Name)
                and attribute.value.value == "self"
            ):
                continue
            for name in _constructed(node.value, classes):
                key = (owner, attribute.attr.value)
                found.setdefault(key, set()).update(_methods(name, classes))
    return {key: frozenset(methods) for key, methods in found.items()}


class _Walked(NamedTuple):
    classes: dict[str, cst.ClassDef]  # by name
    # Assignment statements, each with the name of the innermost class whose code holds
    # it (None outside classes) and the innermost function (None outside functions, or
    # in a class body).
    assignments: list[tuple[str | None, cst.Assign, cst.FunctionDef | None]]
    functions: list[cst.FunctionDef]  # functions and methods, at any depth
    loops: list[cst.For]  # `for` loops, at any depth


# Shared by `member_methods`, `member_values`, `instance_methods` and `_made_by`.
@lint_memo.memo(16)
def _walked(module: cst.Module) -> _Walked:
    """What the module's tables are made of, found by one walk of its statements that
    skips expressions (most of a module's nodes)."""
    walked = _Walked({}, [], [], [])
    stack: list[tuple[cst.CSTNode, str | None, cst.FunctionDef | None]] = [
        (s, None, None) for s in module.body
    ]
    while stack:
        node, owner, function = stack.pop()
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            walked.assignments.extend(
                (owner, s, function)  # type: ignore[misc]
                for s in node.body  # type: ignore[attr-defined]
                if type(s) is cst.Assign
            )
        elif kind in EXPRESSIONS:
            continue
        else:
            if kind is cst.ClassDef:
                owner, function = node.name.value, None  # type: ignore[attr-defined]
                walked.classes[owner] = node  # type: ignore[assignment]
            elif kind is cst.FunctionDef:
                function = node  # type: ignore[assignment]
                walked.functions.append(node)  # type: ignore[arg-type]
            elif kind is cst.For:
                walked.loops.append(node)  # type: ignore[arg-type]
            stack.extend((child, owner, function) for child in code_children(node))
    return walked


def _constructed(value: cst.BaseExpression, classes: dict[str, cst.ClassDef]) -> list[str]:
    """`C(...)`, `C(...) if flag else D(...)`: the module classes the value constructs."""
    if type(value) is cst.IfExp:
        return _constructed(value.body, classes) + _constructed(value.orelse, classes)
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value in classes
    ):
        return [value.func.value]
    return []


def _methods(name: str, classes: dict[str, cst.ClassDef], depth: int = 0) -> set[str]:
    """The methods class `name` defines or inherits from a base of the module."""
    cls = classes.get(name)
    if cls is None or depth > 8:
        return set()
    methods = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    for base in cls.bases:
        if isinstance(base.value, cst.Name):
            methods |= _methods(base.value.value, classes, depth + 1)
    return methods


def calls_own_instance(module: cst.Module, class_name: str | None) -> bool:
    """`self(...)` in the code of class `class_name` runs a `__call__` the class defines
    or inherits from a class of the module (a schedule's `self("alphas_cumprod", t,
    shape)` in its `q_sample`); not where the call is nn.Module's, running `forward`."""
    return class_name is not None and "__call__" in _methods(class_name, _walked(module).classes)


def member_method_call(
    func: cst.BaseExpression, module: cst.Module, class_name: str | None
) -> bool:
    """`self.decoder.update` in the code of class `class_name`: a method of a class of
    the module that the attribute holds, as that class, a base or a subclass of it of the
    module assigns it."""
    if not (
        class_name is not None
        and isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Attribute)
        and isinstance(func.value.value, cst.Name)
        and func.value.value.value == "self"
    ):
        return False
    attribute, method = func.value.attr.value, func.attr.value
    owners = {
        owner
        for (owner, attr), methods in member_methods(module).items()
        if attr == attribute and method in methods
    }
    if not owners or class_name in owners:
        return bool(owners)
    return not owners.isdisjoint(_family(class_name, module))


# A value assigned to an attribute, with the function whose code assigns it.
MemberValue = tuple[cst.BaseExpression, cst.FunctionDef | None]


@lint_memo.memo(16)
def member_values(module: cst.Module) -> dict[tuple[str, str], tuple[MemberValue, ...]]:
    """For each class `K` of the module and attribute name `x`, the values `K`'s code
    assigns to `self.x` (conditional expressions' branches apart), each with the function
    that assigns it: where they are functions of the module (`self.train_function =
    one_step_on_data`, a function nested in that method, or that function wrapped,
    `torch.compile(one_step_on_data)`), `self.train_function(data)` runs them. What wraps
    a function is the caller's to judge (`loop_facts.py`), by the file's imports. From
    the assignments of `_walked`'s one walk of the statements."""
    found: dict[tuple[str, str], list[MemberValue]] = {}
    for owner, small, function in _walked(module).assignments:
        if owner is None:
            continue
        for target in small.targets:
            attribute = target.target
            if not (
                type(attribute) is cst.Attribute
                and type(attribute.value) is cst.Name
                and attribute.value.value == "self"
            ):
                continue
            values = found.setdefault((owner, attribute.attr.value), [])
            pending = [small.value]
            while pending:
                value = pending.pop()
                if type(value) is cst.IfExp:
                    pending.extend((value.orelse, value.body))  # type: ignore[attr-defined]
                else:
                    values.append((value, function))
    return {key: tuple(values) for key, values in found.items()}


def member_values_in(
    module: cst.Module, class_name: str, attribute: str
) -> tuple[MemberValue, ...]:
    """The values (with the functions assigning them) that the class `class_name`, its
    bases and its subclasses of the module assign to `self.<attribute>`: what a method of
    that class reads there."""
    table = member_values(module)
    if not table:
        return ()
    return tuple(
        value
        for owner in _family(class_name, module)
        for value in table.get((owner, attribute), ())
    )


@lint_memo.memo(256)
def _family(name: str, module: cst.Module) -> frozenset[str]:
    """Class `name` with its bases and its subclasses of the module: the classes whose
    code may assign an attribute that a method of `name` reads through `self`."""
    classes = _walked(module).classes
    bases = {
        cls: {b.value.value for b in node.bases if isinstance(b.value, cst.Name)}
        for cls, node in classes.items()
    }
    derived: dict[str, set[str]] = {}
    for cls, of in bases.items():
        for base in of:
            derived.setdefault(base, set()).add(cls)
    return frozenset({name} | _reach(name, bases) | _reach(name, derived))


def _reach(name: str, edges: dict[str, set[str]]) -> set[str]:
    """The classes reached from `name` by following `edges` (to bases, or to subclasses)."""
    seen: set[str] = set()
    pending = [name]
    while pending:
        for other in edges.get(pending.pop(), ()):
            if other not in seen:
                seen.add(other)
                pending.append(other)
    return seen


# Module methods that hand back the module itself: `Net(...).to(device)` is still a `Net`.
_RETURNS_SELF = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "double"})


@lint_memo.memo(16)
def instance_methods(module: cst.Module) -> dict[str, frozenset[str]]:
    """For each plain name that every assignment of the module binds to an instance of a
    class of the module (`q_network = QNetwork(...).to(device)`, at module level or in a
    function), the methods those classes define: a script's loop that calls
    `q_network.get_action(obs)` runs that method every pass. A name also bound to anything
    else (a model from a library, a list) reaches nothing here."""
    classes, assignments = _walked(module)[:2]
    if not classes:
        return {}
    made_by = _made_by(module)
    found: dict[str, set[str]] = {}
    lists: dict[str, set[str]] = {}  # names bound to lists of instances, with their classes
    other: set[str] = set()
    for _, node, _ in assignments:
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            value = node.value
            if type(value) is cst.ListComp:
                elements = _instances(value.elt, classes, made_by)
                if elements:
                    lists.setdefault(name, set()).update(elements)
                    continue
            made = _instances(value, classes, made_by)
            if not made:
                other.add(name)
            for cls in made:
                found.setdefault(name, set()).update(_methods(cls, classes))
    if lists:
        # `for b in beams:` / `for i, b in enumerate(beams):` over such a list: `b` holds
        # one of its instances; a name a loop binds to anything else reaches nothing.
        for loop in _walked(module).loops:
            element, iterated = _loop_element(loop)
            if element is None:
                continue
            held = lists.get(iterated or "") if iterated not in other else None
            if held is None:
                other.add(element)
                continue
            for cls in held:
                found.setdefault(element, set()).update(_methods(cls, classes))
    return {name: frozenset(m) for name, m in found.items() if name not in other}


def _instances(
    value: cst.BaseExpression, classes: dict[str, cst.ClassDef], made_by: _MadeBy
) -> list[str]:
    """The module classes whose instance `value` is: `C(...)` (through methods that hand
    back the instance, `Net(...).to(device)`, `Search(...).set_context(c)` whose every
    `return` is `self`), or a call of a function or method of the module whose every
    `return` builds one (a factory: `self._search_factory(device)`)."""
    returns_self, factories = made_by
    while (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and (value.func.attr.value in _RETURNS_SELF or value.func.attr.value in returns_self)
    ):
        value = value.func.value
    made = _constructed(value, classes)
    if made or type(value) is not cst.Call:
        return made
    func = value.func
    if type(func) is cst.Name or (
        type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"
    ):
        name = func.value if type(func) is cst.Name else func.attr.value
        return sorted(factories.get(name, ()))  # type: ignore[arg-type]
    return []


# Method names whose every `return` is `self`; functions whose every `return` builds an
# instance of a class of the module, with those classes.
_MadeBy = tuple[frozenset[str], dict[str, frozenset[str]]]


@lint_memo.memo(16)
def _made_by(module: cst.Module) -> _MadeBy:
    classes = _walked(module).classes
    returns_self: set[str] = set()
    factories: dict[str, frozenset[str]] = {}
    for function in _walked(module).functions:
        returned = _returned(function)
        if not returned:
            continue
        if all(type(r) is cst.Name and r.value == "self" for r in returned):
            returns_self.add(function.name.value)
            continue
        built = [_constructed(r, classes) for r in returned]
        if all(built):
            made = frozenset(cls for found in built for cls in found)
            factories[function.name.value] = factories.get(function.name.value, made) | made
    return frozenset(returns_self), factories


def _returned(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What each `return` of `function` (not of the functions it defines) hands back;
    empty if some `return` hands back nothing."""
    found: list[cst.BaseExpression] = []
    for node in _walk_body(function, expressions=False):  # every `return` is a statement
        if type(node) is cst.Return:
            if node.value is None:  # type: ignore[attr-defined]
                return []
            found.append(node.value)  # type: ignore[attr-defined]
    return found


def _loop_element(loop: cst.For) -> tuple[str | None, str | None]:
    """`for b in beams` -> ("b", "beams"); `for i, b in enumerate(beams)` -> ("b",
    "beams"); the names a loop binds to another iterable's elements -> (name, None)."""
    target, iterated = loop.target, loop.iter
    if (
        type(target) is cst.Tuple
        and len(target.elements) == 2
        and type(iterated) is cst.Call
        and type(iterated.func) is cst.Name
        and iterated.func.value == "enumerate"
        and len(iterated.args) == 1
    ):
        target, iterated = target.elements[1].value, iterated.args[0].value
    if type(target) is not cst.Name:
        return None, None
    return target.value, iterated.value if type(iterated) is cst.Name else None


def instance_method_call(func: cst.BaseExpression, module: cst.Module) -> bool:
    """`q_network.get_action`: a method of a class of the module that the name holds."""
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.attr.value in instance_methods(module).get(func.value.value, ())
    )


@lint_memo.memo(16)
def dispatch_tables(module: cst.Module) -> dict[str, frozenset[str]]:
    """Module-level dicts whose values are functions of the module, by name, with those
    functions: `FILTERS = dict(top_p=top_p, top_k=top_k)` or `{"top_p": top_p, ...}`. A
    call through such a table (`FILTERS[name](logits)`, or `fn = FILTERS[name]` then
    `fn(logits)`) may run any of them."""
    functions = top_level_functions(module)
    if not functions:
        return {}
    found: dict[str, frozenset[str]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                continue
            values = _table_values(small.value)
            if values and all(isinstance(v, cst.Name) and v.value in functions for v in values):
                names = frozenset(v.value for v in values if isinstance(v, cst.Name))
                found[small.targets[0].target.value] = names
    return found


def _table_values(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values of a dict display or of a `dict(k=v, ...)` call of keywords only."""
    if isinstance(value, cst.Dict):
        elements = value.elements
        if all(isinstance(e, cst.DictElement) for e in elements):
            return [e.value for e in elements]
        return []
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "dict"
        and value.args
        and all(a.keyword is not None and not a.star for a in value.args)
    ):
        return [a.value for a in value.args]
    return []


@lint_memo.memo(16)
def own_module_names(module: cst.Module) -> frozenset[str]:
    """Module-level names bound to the module itself: `d2l = sys.modules[__name__]` (d2l's
    one-file library calls its own functions as `d2l.grad_clipping(net, 1)`)."""
    return frozenset(name for name, value in name_assignments(module.body) if _this_module(value))


def _this_module(value: cst.BaseExpression) -> bool:
    """`sys.modules[__name__]`."""
    if not (isinstance(value, cst.Subscript) and len(value.slice) == 1):
        return False
    index = value.slice[0].slice
    return (
        isinstance(value.value, cst.Attribute)
        and isinstance(value.value.value, cst.Name)
        and value.value.value.value == "sys"
        and value.value.attr.value == "modules"
        and isinstance(index, cst.Index)
        and isinstance(index.value, cst.Name)
        and index.value.value == "__name__"
    )


def own_module_function(func: cst.BaseExpression, module: cst.Module) -> str | None:
    """`d2l.grad_clipping` with `d2l` bound to this module: its function `grad_clipping`."""
    if (
        type(func) is cst.Attribute
        and type(func.value) is cst.Name
        and func.value.value in own_module_names(module)
        and func.attr.value in top_level_functions(module)
    ):
        return func.attr.value
    return None


def table_functions(node: cst.BaseExpression, module: cst.Module) -> frozenset[str]:
    """`FILTERS[name]` for a dispatch table of the module: the functions it may give; and
    a function of the module a value picks as a fallback (`fn = default(fn,
    default_time_fn)`, `fn or default_time_fn`, `a if c else b`: `chosen_functions`)."""
    if type(node) is cst.Subscript and type(node.value) is cst.Name:
        return dispatch_tables(module).get(node.value.value, frozenset())
    return chosen_functions(node, module)


def chosen_functions(node: cst.BaseExpression, module: cst.Module) -> frozenset[str]:
    """The functions of the module, named bare, that `node` may hand back: an operand of
    `or`/`and`, a branch of a conditional expression, or an argument of a function of
    the module that hands back one of its parameters (`def default(v, d): return v if
    exists(v) else d`). Calling the name bound to it may call any of them."""
    functions = top_level_functions(module)
    if not functions:
        return frozenset()
    found: set[str] = set()
    pending = [node]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is cst.Name:
            if value.value in functions:  # type: ignore[attr-defined]
                found.add(value.value)  # type: ignore[attr-defined]
        elif kind is cst.BooleanOperation:
            pending += [value.left, value.right]  # type: ignore[attr-defined]
        elif kind is cst.IfExp:
            pending += [value.body, value.orelse]  # type: ignore[attr-defined]
        elif (
            kind is cst.Call
            and type(value.func) is cst.Name  # type: ignore[attr-defined]
            and value.func.value in _choosers(module)  # type: ignore[attr-defined]
        ):
            pending += [a.value for a in value.args if not a.star]  # type: ignore[attr-defined]
    return frozenset(found)


def called_back(call: cst.Call, module: cst.Module) -> frozenset[str]:
    """The functions of the module (`f`) and methods of the calling class (`self.f`), by
    name, that `call` hands to a parameter its callee calls in its own body, the callee a
    top-level function of the module: `default(current_decay, self.get_current_decay)`
    with `def default(val, d): return val if exists(val) else (d() if callable(d) else
    d)`, or `run_with_retry(self._sync_step, n)` calling `fn()`. The callee runs them
    there and then, so each is called from where `call` runs (a callee that only stores
    or returns what it is handed calls nothing)."""
    func = call.func
    if type(func) is not cst.Name:
        return frozenset()
    called = _called_parameters(module).get(func.value)
    if not called:
        return frozenset()
    names, positional = called
    found: set[str] = set()
    for position, arg in enumerate(call.args):
        if arg.star:
            break  # which parameter the rest land on is unknown
        if arg.keyword is not None:
            landed: str | None = arg.keyword.value
        else:
            landed = positional[position] if position < len(positional) else None
        if landed not in names:
            continue
        value = arg.value
        if type(value) is cst.Name and value.value in top_level_functions(module):
            found.add(value.value)
        elif (
            type(value) is cst.Attribute
            and type(value.value) is cst.Name
            and value.value.value == "self"
        ):
            found.add(value.attr.value)
    return frozenset(found)


@lint_memo.memo(16)
def _called_parameters(module: cst.Module) -> dict[str, tuple[frozenset[str], list[str]]]:
    """The module's top-level functions that call one of their parameters in their own
    body (`d()`, `fn(batch)`; not in a nested definition, not a parameter the function
    binds again): by name, those parameters and the function's positional parameters."""
    found: dict[str, tuple[frozenset[str], list[str]]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        names = {p.name.value for p in parameters(statement)}
        called: set[str] = set()
        rebound: set[str] = set()
        stack: list[cst.CSTNode] = [statement.body]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if kind is cst.Call:
                func = node.func  # type: ignore[attr-defined]
                if type(func) is cst.Name and func.value in names:
                    called.add(func.value)
            elif kind in (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For):
                targets = (
                    [t.target for t in node.targets]  # type: ignore[attr-defined]
                    if kind is cst.Assign
                    else [node.target]  # type: ignore[attr-defined]
                )
                rebound |= {t.value for t in targets if type(t) is cst.Name}
            stack.extend(code_children(node))
        called -= rebound
        if called:
            found[statement.name.value] = (frozenset(called), positional_names(statement))
    return found


@lint_memo.memo(16)
def _choosers(module: cst.Module) -> frozenset[str]:
    """Top-level functions whose one statement returns one of their parameters, or a
    conditional choice between them (`return v if exists(v) else d`)."""
    found = set()
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        body = statement.body.body
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
            continue
        small = body[0].body
        if len(small) != 1 or not isinstance(small[0], cst.Return) or small[0].value is None:
            continue
        params = {p.name.value for p in statement.params.params}
        value = small[0].value
        branches = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        if all(isinstance(b, cst.Name) and b.value in params for b in branches):
            found.add(statement.name.value)
    return frozenset(found)


def held_classes(module: cst.Module, class_name: str, attribute: str) -> frozenset[str]:
    """The classes of the module whose instance `self.<attribute>` holds in the code of
    class `class_name`, where every value the class's family assigns it says so: a
    constructor call (`self.env = MockEnvironment(...)`), or a parameter of the assigning
    method annotated with the class (`def __init__(self, *, environment:
    BaseEnvironment): self.environment = environment`). Empty where any value says
    nothing."""
    classes = _walked(module).classes
    values = member_values_in(module, class_name, attribute)
    found: set[str] = set()
    for value, function in values:
        made = _constructed(value, classes)
        if made:
            found.update(made)
            continue
        annotated = _annotated_class(value, function, classes)
        if annotated is None:
            return frozenset()
        found.add(annotated)
    return frozenset(found)


def called_classes(module: cst.Module, class_name: str, attribute: str) -> frozenset[str]:
    """The classes of the module whose instance `self.<attribute>(...)` calls, in the
    code of class `class_name`: every value its family assigns the attribute constructs
    one (`self.early_stopper = EarlyStopper(...)`), or is `None`, an optional part left
    out (`self.early_stopper = None` before the `if` that builds it). Calling the
    attribute runs that class's `__call__`, a module's `forward`. Empty where any value
    says nothing, or none constructs."""
    classes = _walked(module).classes
    found: set[str] = set()
    for value, _ in member_values_in(module, class_name, attribute):
        if type(value) is cst.Name and value.value == "None":
            continue
        made = _constructed(value, classes)
        if not made:
            return frozenset()
        found.update(made)
    return frozenset(found)


def _annotated_class(
    value: cst.BaseExpression, function: cst.FunctionDef | None, classes: dict[str, cst.ClassDef]
) -> str | None:
    """The class of the module a parameter `value` of `function` is annotated with."""
    if type(value) is not cst.Name or function is None:
        return None
    param = parameter(function, value.value)
    if param is None or param.annotation is None:
        return None
    annotation = param.annotation.annotation
    if type(annotation) is cst.Name and annotation.value in classes:
        return annotation.value
    return None


def class_method(module: cst.Module, class_name: str, name: str) -> cst.FunctionDef | None:
    """The method `name` of class `class_name` of the module, defined there or inherited
    from a base of the module (the first base, depth first, that defines it)."""
    classes = _walked(module).classes
    pending, seen = [class_name], set()
    while pending:
        current = pending.pop(0)
        cls = classes.get(current)
        if cls is None or current in seen:
            continue
        seen.add(current)
        for statement in cls.body.body:
            if type(statement) is cst.FunctionDef and statement.name.value == name:
                return statement
        pending.extend(b.value.value for b in cls.bases if type(b.value) is cst.Name)  # type: ignore[attr-defined]
    return None
