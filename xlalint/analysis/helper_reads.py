"""Parameters that a function of this module reads on the host (`float(p)`, `p.item()`).

A loop that hands a device tensor to a helper which turns it into a Python number pays the
read every step, as if the loop had written `float(loss)` itself: a running-sum helper
(`metric.add(loss * n, correct, n)` where `add` keeps `[a + float(b) for a, b in
zip(self.data, args)]`), a logger that `.item()`s what it is given. Whether it costs depends
on both ends: the helper reads the parameter itself (not a value it computed), and the
caller passes a device tensor, not a Python number.

`HelperReads` records the helper's side during the engine's single walk: for each function,
the parameters it reads, and whether it reads the elements of its `*args` (a loop or a
comprehension over `args`, `zip(..., args)` or `enumerate(args)`). It also records which
names hold instances of the module's classes (`metric = Accumulator(3)`), so that
`metric.add(...)` finds `Accumulator.add`. The caller's side is XLA101's; `arguments.bind`
maps a call's arguments to the parameters once the whole file has been walked (the helper
may be defined after the loop).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.hotness import FunctionKey
from xlalint.walk import target_names

# Builtins that turn a tensor into a Python number.
_CONVERSIONS = frozenset({"float", "int"})


@dataclass(frozen=True)
class HostRead:
    """A read of a parameter in a helper, and whether the helper's own code is flagged for
    it already (the parameter is a tensor there, so the read is reported where it is)."""

    call: cst.Call
    spelled: str  # `float()`, `.item()`
    flagged: bool


@dataclass
class Reader:
    """A function of this module and the reads it makes of its parameters."""

    node: cst.FunctionDef
    is_method: bool
    reads: dict[str, HostRead] = field(default_factory=dict)  # parameter -> first read
    star_read: HostRead | None = None  # a read of an element of `*args`


@dataclass
class _Scope:
    reader: Reader
    params: set[str]  # parameters not rebound (yet)
    star: str | None  # the name of `*args`
    elements: set[str] = field(default_factory=set)  # names holding an element of `*args`
    instances: dict[str, str] = field(default_factory=dict)  # name -> class it holds


class HelperReads:
    """Functions of the module by key, the parameters each reads on the host, and the
    module's classes (to resolve methods called on their instances)."""

    def __init__(self) -> None:
        self.readers: dict[FunctionKey, Reader] = {}
        self.classes: set[str] = set()
        self._scopes: list[_Scope] = []

    def push_function(self, node: cst.FunctionDef, key: FunctionKey | None) -> None:
        is_method = key is not None and key.class_name is not None
        reader = Reader(node, is_method)
        if key is not None:
            self.readers.setdefault(key, reader)  # the first definition of a name wins
        params = node.params
        names = [p.name.value for p in (*params.posonly_params, *params.params)]
        if is_method and names:
            names = names[1:]
        names += [p.name.value for p in params.kwonly_params]
        star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
        self._scopes.append(_Scope(reader, set(names), star))

    def pop_function(self) -> None:
        if self._scopes:
            self._scopes.pop()

    def note_class(self, node: cst.ClassDef) -> None:
        self.classes.add(node.name.value)

    def bind(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """`targets = value`: a rebound parameter no longer holds what the caller passed;
        a name bound to `SomeClass(...)` holds an instance of it."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        made = _constructed_class(value)
        for target in targets:
            for name in target_names(target):
                scope.params.discard(name)
                scope.elements.discard(name)
                if made is not None and isinstance(target, cst.Name):
                    scope.instances[name] = made
                else:
                    scope.instances.pop(name, None)

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for b in args`, `for a, b in zip(xs, args)`, `for i, b in enumerate(args)`: the
        names that hold an element of `*args`; any other loop name is no parameter."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        names = target_names(target)
        scope.params -= names
        scope.elements -= names
        if scope.star is not None:
            scope.elements |= _element_names(target, iterable, scope.star)

    def note_read(self, call: cst.Call, flagged: bool) -> None:
        """`float(p)`, `int(p)`, `p.item()` in the function being walked; `flagged` when the
        read is reported where it is."""
        if not self._scopes:
            return
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args:
            value, spelled = func.value, ".item()"
        elif (
            isinstance(func, cst.Name)
            and func.value in _CONVERSIONS
            and len(call.args) == 1
            and call.args[0].keyword is None
            and not call.args[0].star
        ):
            value, spelled = call.args[0].value, f"{func.value}()"
        else:
            return
        if not isinstance(value, cst.Name):
            return
        scope = self._scopes[-1]
        read = HostRead(call, spelled, flagged)
        if value.value in scope.params:
            scope.reader.reads.setdefault(value.value, read)
        elif value.value in scope.elements and scope.reader.star_read is None:
            scope.reader.star_read = read

    def callee(self, call: cst.Call, function: FunctionKey | None) -> FunctionKey | None:
        """The function of this module that `call` runs, as far as names tell: `f(...)`,
        `self.f(...)` in a method, `obj.f(...)` where `obj` holds an instance of a class of
        this module (resolved once the walk is over: the class may come later)."""
        func = call.func
        if isinstance(func, cst.Name):
            return FunctionKey(None, func.value)
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
            return None
        owner = func.value.value
        if owner == "self":
            if function is None or function.class_name is None:
                return None
            return FunctionKey(function.class_name, func.attr.value)
        held = self._scopes[-1].instances.get(owner) if self._scopes else None
        return FunctionKey(held, func.attr.value) if held is not None else None


def _constructed_class(value: cst.BaseExpression) -> str | None:
    """`Accumulator(3)` or `utils.Accumulator(3)`: the class name (capitalized), whose
    definition the caller looks up among the module's classes."""
    if not isinstance(value, cst.Call):
        return None
    name = (get_full_name_for_node(value.func) or "").rsplit(".", 1)[-1]
    return name if name[:1].isupper() else None


def _element_names(target: cst.BaseExpression, iterable: cst.BaseExpression, star: str) -> set[str]:
    """Names of a loop target that take the elements of `star` (`*args`)."""
    if isinstance(iterable, cst.Name):
        return target_names(target) if iterable.value == star else set()
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
        return set()
    args = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
    elements = target.elements if isinstance(target, cst.Tuple | cst.List) else None
    if iterable.func.value == "zip" and elements is not None and len(elements) == len(args):
        found: set[str] = set()
        for element, arg in zip(elements, args, strict=True):
            found |= _element_names(element.value, arg, star)
        return found
    if iterable.func.value == "enumerate" and elements is not None and len(elements) == 2:
        return _element_names(elements[1].value, args[0], star) if args else set()
    return set()
