"""Flags whose value on an XLA host the module decides, however far from where they are read.

`self.enable_scaler = torch.cuda.is_available() and config["enable_scaler"]` in `__init__`,
then `GradScaler(enabled=self.enable_scaler)` in `fit`; or `if not use_cuda:
self.args.fp16 = False` in `__init__`, then `if self.args.fp16: scaler = GradScaler()` in
`train_model`: the flag is set in one method and read in another, and on an XLA host it is
False, so what it enables never runs there. A flag's value is a fact of its class (every
assignment to the attribute in the class, its bases and subclasses in this module) or of
its module (every module-level assignment to a global): it is False on an XLA host when
every assignment that can run there gives it a value that is false without CUDA, or when
`__init__` ends by forcing it off whenever CUDA is not in use. One assignment of an unknown
value (a config entry, a parameter, `True`) and the flag may be set anywhere: not known.
Nor is a flag this module only ever sets to a falsy constant (`self._use_cached_vision_x =
False`, reset in `__init__` and cleared elsewhere): nothing about CUDA decides it, and
the code that uses the class (another module: `lang_encoder._use_cached_vision_x = True`)
turns it on, on any host.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import bind, parameter, positional_params, signature_of
from xlalint.analysis.devices import runs_without_xla
from xlalint.analysis.guards import (
    asks_about_cuda,
    falsy_constant,
    implied,
    local_values,
    module_assignments,
    on_by_default,
)
from xlalint.analysis.handed_functions import CallSite, call_sites
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.module_classes import base_names
from xlalint.analysis.reachability import XlaPredicates
from xlalint.walk import (
    bound_names,
    code_children,
    descendants,
    flat_targets,
    name_assignments,
    target_names,
)

_Site = tuple[cst.Call, cst.FunctionDef | None, cst.ClassDef | None]
_DEPTH = 4  # flags read through flags (`self.amp = self.fp16 and ...`), at most this deep
_PROBES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})


@dataclass(frozen=True)
class _Assignment:
    key: str  # `args.fp16` for `self.args.fp16 = ...`
    value: cst.BaseExpression | None  # None: bound some other way (`+=`, a loop, unpacking)
    function: cst.FunctionDef | None  # the method it is in (None: the class body)
    unreachable: bool  # under a guard an XLA host never passes (`if use_cuda:`)
    statement: cst.CSTNode | None  # the top-level statement of `__init__` it is in


def attribute_key(node: cst.BaseExpression, receiver: str = "self") -> str | None:
    """`args.fp16` for `self.args.fp16`; None for anything not an attribute chain on
    `receiver`."""
    name = get_full_name_for_node(node)
    if name is None or not isinstance(node, cst.Attribute):
        return None
    head, _, rest = name.partition(".")
    return rest if head == receiver and rest else None


class FlagFacts:
    """The module's attribute and global flags, and whether each is False on an XLA host."""

    def __init__(
        self, module: cst.Module, imports: ImportTable, predicates: XlaPredicates | None = None
    ) -> None:
        self._imports = imports
        # The module's functions whose value on XLA is known (`returns_none_on_xla`).
        self._predicates = predicates
        self._classes: dict[str, cst.ClassDef] = {}
        self._bases: dict[str, list[str]] = {}
        # Module-level assignments to names; a name rebound through `global` in a
        # function, or bound any other way at module level, gets an unknown value.
        self._globals = module_assignments(module)
        for statement in module.body:
            if isinstance(statement, cst.ClassDef):
                self._classes[statement.name.value] = statement
                self._bases[statement.name.value] = base_names(statement)
        self._assignments: dict[str, list[_Assignment]] = {}
        self._answers: dict[tuple[str, str], bool] = {}
        self._module = module
        self._read: dict[tuple[int, int, int], bool] = {}  # answers by (node, function, class)
        self._uncalled: set[str] | None = None

    # -- what is read ------------------------------------------------------------------

    def _asks(self, test: cst.BaseExpression) -> bool:
        """A condition about CUDA, in the shapes a flag's value takes: a name
        (`use_cuda`), a comparison (`device.type == "cuda"`, `ngpu > 0`) or a probe
        (`torch.cuda.is_available()`); not any expression that mentions CUDA
        (`pick("cuda")`, `amp if torch.cuda.is_available() else True`)."""
        if isinstance(test, cst.Call):
            return self._imports.resolve(test.func) in _PROBES
        if not isinstance(test, cst.Name | cst.Attribute | cst.Comparison):
            return False
        return asks_about_cuda(test, self._imports)

    def false_on_xla(
        self,
        node: cst.BaseExpression,
        function: cst.FunctionDef | None,
        owner: cst.ClassDef | None,
        depth: int = 0,
    ) -> bool:
        """Whether `node`, read in `function` (a method of `owner`), is false on any XLA
        host: a falsy constant, a value true only with CUDA (`torch.cuda.is_available() and
        x`), or a flag of the class or module that the module keeps False there."""
        if depth == 0:
            key = (id(node), id(function), id(owner))
            known = self._read.get(key)
            if known is None:
                known = self._read[key] = self.false_on_xla(node, function, owner, 1)
            return known
        if depth > _DEPTH:
            return False
        constant = falsy_constant(node)
        if constant is not None:
            return constant
        if type(node) is cst.Call and self._returns_none(node):
            return True  # `self._cuda_event_for(device)`: None unless CUDA is in use
        values = (lambda name: local_values(function, name)) if function is not None else None
        if on_by_default(node, function):
            return False  # `cuda=True`: on unless the caller turns it off
        asks = self._asks
        if implied(node, True, asks, values) is True:
            return True
        if isinstance(node, cst.BooleanOperation):
            left = self.false_on_xla(node.left, function, owner, depth + 1)
            right = self.false_on_xla(node.right, function, owner, depth + 1)
            return left or right if isinstance(node.operator, cst.And) else left and right
        if isinstance(node, cst.IfExp):
            return self._ternary_false(node, function, owner, depth)
        if isinstance(node, cst.Name):
            if function is not None and _is_local(function, node.value):
                if parameter(function, node.value) is not None:
                    return self._parameter_false(function, node.value, owner, depth)
                assigned = local_values(function, node.value)
                return bool(assigned) and all(
                    self.false_on_xla(v, function, owner, depth + 1) for v in assigned
                )
            assigned_globally = self._globals.get(node.value, [])
            return bool(assigned_globally) and all(
                v is not None and self.false_on_xla(v, None, None, depth + 1)
                for v in assigned_globally
            )
        receiver = _receiver(function)
        if owner is not None and function is not None and function not in owner.body.body:
            receiver = "self"  # a closure in a method, reading the method's `self`
        key = attribute_key(node, receiver) if receiver else None
        if key is not None and owner is not None:
            return self._attribute_false(key, owner.name.value, depth)
        return False

    def _returns_none(self, call: cst.Call) -> bool:
        return self._predicates is not None and self._predicates.none_on_xla(call)

    def none_on_xla(
        self,
        node: cst.BaseExpression,
        function: cst.FunctionDef | None,
        owner: cst.ClassDef | None,
        depth: int = 0,
    ) -> bool:
        """Whether `node`, read in `function` (a method of `owner`), is None on any XLA
        host: `None`, a call of a function of the module that returns None there
        (`reachability.returns_none_on_xla`: `self._cuda_event_for(device)`), a local name
        every binding of which is such a value (`event = self._cuda_event_for(device)`),
        or an attribute of the class every assignment of which that can run on XLA is
        (`self._hessian_ready_event = None` in `__init__`, `= event` in a method); not a
        name or attribute this module only ever binds to `None` (set elsewhere)."""
        if depth > _DEPTH:
            return False
        if type(node) is cst.Name and node.value == "None":
            return True
        if type(node) is cst.Call:
            return self._returns_none(node)
        if type(node) is cst.Name:
            if function is None or not _is_local(function, node.value):
                return False
            if parameter(function, node.value, star=True) is not None:
                return False
            assigned = local_values(function, node.value)
            return _not_only_none(assigned) and all(
                self.none_on_xla(v, function, owner, depth + 1) for v in assigned
            )
        receiver = _receiver(function)
        key = attribute_key(node, receiver) if receiver else None
        if key is None or owner is None:
            return False
        relevant = [
            a
            for name in self._family(owner.name.value)
            for a in self._class_assignments(name)
            if a.key == key or key.startswith(a.key + ".")
        ]
        # A state attribute this module only ever sets to None (`self._neural_net = None`)
        # is set elsewhere (a subclass, a caller): not known, as for falsy flags.
        reachable = [a.value for a in relevant if not a.unreachable]
        return _not_only_none(reachable) and all(
            a.unreachable
            or (
                a.key == key
                and a.value is not None
                and self.none_on_xla(a.value, a.function, self._owner_of(a.function), depth + 1)
            )
            for a in relevant
        )

    def _ternary_false(
        self,
        node: cst.IfExp,
        function: cst.FunctionDef | None,
        owner: cst.ClassDef | None,
        depth: int,
    ) -> bool:
        """`fp16 if torch.cuda.is_available() else False`: the branch an XLA host takes (the
        `else` of a test that needs CUDA), or both, is false there."""
        values = (lambda name: local_values(function, name)) if function is not None else None
        asks = self._asks
        branches = []
        if implied(node.test, True, asks, values) is not True:
            branches.append(node.body)  # an XLA host may take the body
        if implied(node.test, False, asks, values) is not True:
            branches.append(node.orelse)
        return all(self.false_on_xla(b, function, owner, depth + 1) for b in branches)

    def _parameter_false(
        self, function: cst.FunctionDef, name: str, owner: cst.ClassDef | None, depth: int
    ) -> bool:
        """A parameter never rebound in its function, whose every call in this module
        passes a value false on an XLA host (or leaves a default that is). A function
        other modules may call (public, at module level or a method) counts only when its
        default is tied to CUDA (`use_amp=torch.cuda.is_available()`): a caller may pass
        `True` to a default of `False`."""
        param = parameter(function, name)
        if param is None or name in bound_names(function):
            return False
        default = param.default
        values = lambda n: local_values(function, n)  # noqa: E731
        asks = self._asks
        private = function.name.value.startswith("_") and not function.name.value.endswith("__")
        tied = default is not None and implied(default, True, asks, values) is True
        sites = self._call_sites(function, owner)
        if sites is None or (not private and not tied) or (private and not sites):
            return False
        for call, caller, caller_owner, is_method in sites:
            bound = bind(call, signature_of(function, is_method))
            if bound is None:
                return False
            value = bound.get(name, default)
            if value is None or not self.false_on_xla(value, caller, caller_owner, depth + 1):
                return False
        return True

    def _call_sites(
        self, function: cst.FunctionDef, owner: cst.ClassDef | None
    ) -> list[tuple[cst.Call, cst.FunctionDef | None, cst.ClassDef | None, bool]] | None:
        """Calls of `function` in this module with the function and class each is in:
        `f(...)` for a module-level function, `self.f(...)` within its class family for
        a method, `Cls(...)` for `__init__`. None where it is also handed on uncalled."""
        name = function.name.value
        index = call_sites(self._module)
        if owner is None:
            if not any(s is function for s in self._module.body):
                return None  # a nested function: its calls are not indexed
            sites = [(c, f, o, False) for c, f, o in _sites(index.named(name, method=False))]
            if name in self._handed_on():
                return None
            return sites
        family = set(self._family(owner.name.value))
        if name == "__init__":
            return [
                (c, f, o, True)
                for cls in family
                for c, f, o in _sites(index.named(cls, method=False))
            ]
        found = []
        for call, caller, caller_owner in _sites(index.named(name, method=True)):
            receiver = call.func.value  # type: ignore[attr-defined]
            if not (
                isinstance(receiver, cst.Name)
                and caller_owner is not None
                and caller_owner.name.value in family
                and receiver.value == _receiver(caller)
            ):
                return None  # called on another object: who else calls it is not known
            found.append((call, caller, caller_owner, True))
        return found

    def _handed_on(self) -> set[str]:
        if self._uncalled is None:
            self._uncalled = _uncalled_names(self._module)
        return self._uncalled

    def _attribute_false(self, key: str, owner: str, depth: int) -> bool:
        cached = self._answers.get((owner, key))
        if cached is not None:
            return cached
        self._answers[(owner, key)] = False  # a flag defined through itself: not known
        answer = self._decide(key, owner, depth)
        self._answers[(owner, key)] = answer
        return answer

    def _decide(self, key: str, owner: str, depth: int) -> bool:
        family = self._family(owner)
        relevant = [
            a
            for name in family
            for a in self._class_assignments(name)
            if a.key == key or key.startswith(a.key + ".")
        ]
        if not relevant:
            return False  # set elsewhere (a config, a caller): not known
        if all(
            a.value is not None
            and not a.unreachable
            and a.key == key
            and falsy_constant(a.value) is True
            for a in relevant
        ):
            # `self._use_cached_vision_x = False` and nothing else here: a state flag
            # this module only clears, which its users turn on (`lang_encoder.
            # _use_cached_vision_x = True` in another module), the same on every host. No
            # fact about CUDA decides it.
            return False
        forced = {
            id(init)
            for name in family
            if (init := _init(self._classes[name])) is not None
            and self._init_forces(init, key, relevant, depth)
        }
        for assignment in relevant:
            if assignment.function is not None and id(assignment.function) in forced:
                continue  # `__init__` ends with it forced off on XLA hosts
            if not self._harmless(assignment, key, depth):
                return False
        return True

    def _harmless(self, assignment: _Assignment, key: str, depth: int) -> bool:
        """Whether an assignment leaves the flag False on an XLA host: it never runs there,
        or it assigns the flag itself a value false there."""
        if assignment.unreachable:
            return True
        if assignment.key != key or assignment.value is None:
            return False  # the object holding it replaced (`self.args = ...`), or unknown
        owner = self._owner_of(assignment.function)
        return self.false_on_xla(assignment.value, assignment.function, owner, depth + 1)

    def _init_forces(
        self, init: cst.FunctionDef, key: str, relevant: list[_Assignment], depth: int
    ) -> bool:
        """Whether `__init__` ends with the flag forced off wherever CUDA is not in use:
        `if not use_cuda: self.args.fp16 = False`, and nothing after it in `__init__` that
        could set it again."""
        if not isinstance(init.body, cst.IndentedBlock):
            return False
        forced = False
        for statement in init.body.body:
            if self._forces(statement, init, key, depth):
                forced = True
                continue
            inside = [a for a in relevant if a.statement is statement]
            if any(not self._harmless(a, key, depth) for a in inside):
                forced = False
        return forced

    def _forces(
        self, statement: cst.BaseStatement, init: cst.FunctionDef, key: str, depth: int
    ) -> bool:
        """`self.<key> = <false on XLA>`, or an `if` whose branch an XLA host takes does
        that: the body of `if <true wherever CUDA is not in use>:`, the `else` of `if
        <true only with CUDA>:`, or the body of `if self.<key>:` (whose other way leaves
        the flag false already: `if self.use_amp: if torch.cuda.is_available(): ... else:
        self.use_amp = False`)."""
        if isinstance(statement, cst.If):
            if statement.orelse is not None and isinstance(statement.orelse, cst.If):
                return False  # an `elif` chain: which branch an XLA host takes is not known
            values = lambda name: local_values(init, name)  # noqa: E731
            asks = self._asks
            if implied(statement.test, False, asks, values) is True or (
                attribute_key(statement.test, _receiver(init) or "self") == key
            ):
                return self._block_forces(statement.body, init, key, depth)
            if statement.orelse is not None and implied(statement.test, True, asks, values) is True:
                return self._block_forces(statement.orelse.body, init, key, depth)
            return False
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        receiver = _receiver(init)
        owner = self._owner_of(init)
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if attribute_key(target, receiver or "self") == key:
                    return self.false_on_xla(small.value, init, owner, depth + 1)
        return False

    def _block_forces(
        self, block: cst.BaseSuite, init: cst.FunctionDef, key: str, depth: int
    ) -> bool:
        body = block.body if isinstance(block, cst.IndentedBlock) else ()
        return any(self._forces(inner, init, key, depth) for inner in body)

    # -- what is assigned --------------------------------------------------------------

    def _family(self, name: str) -> list[str]:
        """The class, its bases and its subclasses defined in this module (none for a class
        defined inside a function: its flags are not the module's to know)."""
        if name not in self._classes:
            return []
        family = {name}
        changed = True
        while changed:
            changed = False
            for cls, bases in self._bases.items():
                linked = cls in family and any(b in self._classes for b in bases)
                if cls not in family and any(b in family for b in bases):
                    family.add(cls)
                    changed = True
                elif linked:
                    for base in bases:
                        if base in self._classes and base not in family:
                            family.add(base)
                            changed = True
        return sorted(family)

    def _owner_of(self, function: cst.FunctionDef | None) -> cst.ClassDef | None:
        if function is None:
            return None
        for cls in self._classes.values():
            body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
            if any(member is function for member in body):
                return cls
        return None

    def _class_assignments(self, name: str) -> list[_Assignment]:
        found = self._assignments.get(name)
        if found is not None:
            return found
        found = []
        cls = self._classes[name]
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
        for member in body:
            if isinstance(member, cst.FunctionDef):
                found.extend(self._method_assignments(member))
            elif isinstance(member, cst.SimpleStatementLine):
                for small in member.body:  # class-level defaults: `fp16 = True`
                    if isinstance(small, cst.Assign | cst.AnnAssign):
                        targets = (
                            [t.target for t in small.targets]
                            if isinstance(small, cst.Assign)
                            else [small.target]
                        )
                        for target in targets:
                            for bound in target_names(target):
                                found.append(_Assignment(bound, small.value, None, False, None))
        self._assignments[name] = found
        return found

    def _method_assignments(self, method: cst.FunctionDef) -> list[_Assignment]:
        receiver = _receiver(method)
        if receiver is None:
            return []
        is_init = method.name.value == "__init__"
        found: list[_Assignment] = []
        stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...], cst.CSTNode | None]] = [
            (method, (), None)
        ]
        while stack:
            node, path, top = stack.pop()
            targets: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = []
            if type(node) is cst.Assign:
                for target in node.targets:
                    targets.extend(_bound(target.target, node.value))
            elif type(node) is cst.AnnAssign:
                targets.append((node.target, node.value))
            elif type(node) in (cst.AugAssign, cst.For, cst.WithItem, cst.NamedExpr):
                if isinstance(node, cst.WithItem):
                    target = node.asname.name if node.asname is not None else None
                else:
                    target = node.target
                if target is not None:
                    targets.extend((t, None) for t in _attributes(target))
            for target, value in targets:
                key = attribute_key(target, receiver)
                if key is not None:
                    unreachable = runs_without_xla((node, *reversed(path)), self._imports)
                    found.append(_Assignment(key, value, method, unreachable, top))
            inner = (*path, node)
            for child in code_children(node):
                next_top = top
                if is_init and top is None and isinstance(node, cst.IndentedBlock):
                    next_top = child if node is method.body else None
                stack.append((child, inner, next_top))
        return found


def _not_only_none(values: list[cst.BaseExpression | None]) -> bool:
    """Some value other than the literal `None` (a call that returns None on XLA): a name
    or attribute only ever bound to `None` here says nothing of XLA."""
    return any(not (type(v) is cst.Name and v.value == "None") for v in values)


def _bound(
    target: cst.BaseExpression, value: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression | None]]:
    """(target, value) pairs of one assignment target: `self.a, self.b = x, y` pairs each
    with its element; other unpacking binds unknown values."""
    if not isinstance(target, cst.Tuple | cst.List):
        return [(target, value)]
    elements = target.elements
    if (
        isinstance(value, cst.Tuple | cst.List)
        and len(value.elements) == len(elements)
        and not any(isinstance(e, cst.StarredElement) for e in (*elements, *value.elements))
    ):
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = []
        for element, assigned in zip(elements, value.elements, strict=True):
            pairs.extend(_bound(element.value, assigned.value))
        return pairs
    return [(t, None) for e in elements for t in (*_attributes(e.value), *_names(e.value))]


def _names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    return [cst.Name(name) for name in target_names(target)]


def _attributes(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The attribute targets under an assignment target (`self.x`, in tuples too)."""
    if isinstance(target, cst.Attribute):
        return [target]
    if isinstance(target, cst.Tuple | cst.List):
        return [a for e in target.elements for a in _attributes(e.value)]
    if isinstance(target, cst.StarredElement):
        return _attributes(target.value)
    return []


def _receiver(function: cst.FunctionDef | None) -> str | None:
    """The name of a method's instance parameter (`self`); in `__new__`, the name its
    body binds the instance it builds to (`self = super().__new__(cls)`: a singleton's
    constructor sets its attributes there, as `__init__` does)."""
    if function is None:
        return None
    if function.name.value == "__new__":
        return _built_instance(function)
    params = positional_params(function)
    if not params:
        return None
    if any(
        get_full_name_for_node(d.decorator) in ("staticmethod", "classmethod")
        for d in function.decorators
    ):
        return None
    return params[0].name.value


def _built_instance(function: cst.FunctionDef) -> str | None:
    """`self` for `self = super().__new__(cls)` (or `object.__new__(cls)`) among the
    top-level statements of `__new__`."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    return next(
        (
            name
            for name, value in name_assignments(body)
            if isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "__new__"
        ),
        None,
    )


def _is_local(function: cst.FunctionDef, name: str) -> bool:
    """Whether `name` is a parameter of `function` or assigned in it."""
    return parameter(function, name, star=True) is not None or name in bound_names(function)


def _init(cls: cst.ClassDef) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next(
        (m for m in body if isinstance(m, cst.FunctionDef) and m.name.value == "__init__"), None
    )


def _sites(sites: list[CallSite]) -> list[_Site]:
    """Calls made by name (not `delayed(f)(...)`), each with the function it is in and the
    class of that function (or of the class body it is in)."""
    return [(s.call, s.function, s.method_of) for s in sites if type(s.call.func) is not cst.Call]


def _uncalled_names(module: cst.Module) -> set[str]:
    """Names used other than as the callee of a call (handed on as callbacks)."""
    found: set[str] = set()
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(module, None)]
    while stack:
        node, parent = stack.pop()
        called = isinstance(parent, cst.Call) and parent.func is node
        declared = isinstance(parent, cst.FunctionDef | cst.Attribute | cst.Param)
        if isinstance(node, cst.Name) and not called and not declared:
            found.add(node.value)
        stack.extend((c, node) for c in code_children(node))
    return found


def _class_level_values(class_def: cst.ClassDef, name: str) -> list[cst.BaseExpression | None]:
    """What the class body's own statements bind `name` to (`enable_autocast = False`);
    None for a binding of another shape (unpacking, a `def` of that name)."""
    values: list[cst.BaseExpression | None] = []
    for statement in class_def.body.body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            if statement.name.value == name:
                values.append(None)
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            # Bound under an `if` or a `try` of the class body: a value that varies.
            if any(
                type(n) in (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)
                and name in target_names(n.target)  # type: ignore[attr-defined]
                for n in descendants(statement)
            ):
                values.append(None)
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Name):
                        if target.target.value == name:
                            values.append(small.value)
                    elif name in target_names(target.target):
                        values.append(None)
            elif (
                isinstance(small, cst.AnnAssign | cst.AugAssign)
                and isinstance(small.target, cst.Name)
                and small.target.value == name
            ):
                values.append(small.value if isinstance(small, cst.AnnAssign) else None)
    return values


def class_setting_left_off(
    node: cst.BaseExpression, owner: cst.ClassDef | None, module: cst.Module
) -> bool:
    """Whether `node` reads a class attribute set once, in the class body, to a falsy
    constant that no code of the module ever assigns again (`enable_autocast = False` in
    `class CompositeModel`, then `autocast(enabled=self.enable_autocast)`): a setting of
    the class as shipped, left off, so what it enables is off on every host. Not a flag any
    code of the module writes (`self._use_cached_vision_x = False` in `__init__`, cleared
    in a method: a state flag the class's users turn on), one another class of the module
    binds (a subclass's `enable_autocast = True`), nor one set through `setattr`."""
    if owner is None or not isinstance(node, cst.Attribute):
        return False
    key = attribute_key(node) or attribute_key(node, "cls") or attribute_key(node, owner.name.value)
    if key is None or "." in key:
        return False
    values = _class_level_values(owner, key)
    if not values or any(v is None or falsy_constant(v) is not True for v in values):
        return False
    for candidate in descendants(module):
        kind = type(candidate)
        if kind is cst.ClassDef and candidate is not owner:
            if _class_level_values(candidate, key):  # type: ignore[arg-type]
                return False
        elif kind in (cst.AssignTarget, cst.AnnAssign, cst.AugAssign):
            targets = flat_targets([candidate.target])  # type: ignore[attr-defined]
            if any(isinstance(t, cst.Attribute) and t.attr.value == key for t in targets):
                return False
        elif kind is cst.Call and get_full_name_for_node(candidate.func) == "setattr":  # type: ignore[attr-defined]
            return False
    return True
