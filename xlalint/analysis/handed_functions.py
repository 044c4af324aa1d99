"""Functions handed to a function as arguments, and called there.

`def run_single_epoch(self, iterator, step_fn): for batch in iterator: step_fn(batch)`,
called as `self.run_single_epoch(loader, step_fn=self.train_step)`: the loop runs
`train_step` on every pass. What a loop does (train, reach a barrier) then depends on the
functions its callers hand it, which this module finds: the arguments this file's calls
of the function pass for the parameter, where they name a function or method of the file.
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from xlalint import lint_memo
from xlalint.analysis.arguments import positional_names
from xlalint.walk import code_children, descendants


def positional_parameters(function: cst.FunctionDef, method: bool) -> list[str]:
    """The parameters a call's positional arguments land on, in order (`self` not counted
    for a method called as `x.f(...)`)."""
    positional = positional_names(function)
    return positional[1:] if method and positional else positional


def _parameter_index(function: cst.FunctionDef, name: str, method: bool) -> int | None:
    """Where `name` sits among the positional arguments of a call (`self` not counted)."""
    positional = positional_parameters(function, method)
    return positional.index(name) if name in positional else None


class CallSites:
    """This module's calls, by the name they call (`f(...)`, and `wrap(f)(...)`, which
    hands its arguments on to `f`: `delayed(f)(...)`) or the method (`x.f(...)`), each with
    the function and class it is made in."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._by_name: dict[str, list[CallSite]] | None = None
        self._by_method: dict[str, list[CallSite]] = {}

    def _index(self) -> None:
        """One walk of the module, on the first question (skipping whitespace and
        punctuation, testing exact types: libcst's classes are final)."""
        by_name: dict[str, list[CallSite]] = {}
        by_method = self._by_method
        function: cst.FunctionDef | None = None
        class_def: cst.ClassDef | None = None
        # Nodes, and below a definition's children the scope to restore after them.
        stack: list = [self._module]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is tuple:
                function, class_def = node
                continue
            if kind is cst.Call:
                func = node.func
                if type(func) is cst.Call and len(func.args) == 1 and not func.args[0].star:
                    func = func.args[0].value  # `delayed(f)(...)`: a call of `f`
                if type(func) is cst.Name:
                    site = CallSite(node, function, class_def)
                    by_name.setdefault(func.value, []).append(site)
                elif type(func) is cst.Attribute and type(node.func) is not cst.Call:
                    site = CallSite(node, function, class_def)
                    by_method.setdefault(func.attr.value, []).append(site)
            elif kind is cst.FunctionDef:
                stack.append((function, class_def))
                function = node
            elif kind is cst.ClassDef:
                stack.append((function, class_def))
                class_def, function = node, None
            stack.extend(code_children(node))
        self._by_name = by_name

    def handed(
        self, function: cst.FunctionDef, name: str, method: bool
    ) -> list[cst.BaseExpression]:
        """What the calls of `function` (a method when `method`, called as `x.f(...)`)
        pass for its parameter `name`, by keyword or position."""
        return [value for value, _ in self.handed_from(function, name, method)]

    def handed_from(
        self, function: cst.FunctionDef, name: str, method: bool
    ) -> list[tuple[cst.BaseExpression, CallSite]]:
        """`handed`, each value with the call site that passes it."""
        if self._by_name is None:
            self._index()
        assert self._by_name is not None
        table = self._by_method if method else self._by_name
        index = _parameter_index(function, name, method)
        found: list[tuple[cst.BaseExpression, CallSite]] = []
        for site in table.get(function.name.value, []):
            call = site.call
            keyword = [a.value for a in call.args if a.keyword and a.keyword.value == name]
            plain = [a.value for a in call.args if a.keyword is None and not a.star]
            if keyword:
                found.append((keyword[0], site))
            elif (
                index is not None
                and index < len(plain)
                and not any(a.star for a in call.args[: index + 1])
            ):
                found.append((plain[index], site))
        return found

    def calls(self, function: cst.FunctionDef, method: bool) -> list[CallSite]:
        """Every call of `function` in the module."""
        return self.named(function.name.value, method)

    def named(self, name: str, method: bool) -> list[CallSite]:
        """Every call of the name `name` (`name(...)`, `delayed(name)(...)`, a class's
        constructor `Cls(...)`) or, with `method`, of a method so named (`x.name(...)`)."""
        if self._by_name is None:
            self._index()
        assert self._by_name is not None
        table = self._by_method if method else self._by_name
        return list(table.get(name, ()))


class CallSite(NamedTuple):
    """A call, with the function (None at module level and in a class body) and the class
    it is made in (also in a function nested in a method)."""

    call: cst.Call
    function: cst.FunctionDef | None
    class_def: cst.ClassDef | None

    @property
    def method_of(self) -> cst.ClassDef | None:
        """The class whose body (directly) or method the call is in: None in a function
        nested in a method."""
        class_def = self.class_def
        if class_def is None or self.function is None:
            return class_def
        body = class_def.body.body if isinstance(class_def.body, cst.IndentedBlock) else ()
        return class_def if any(s is self.function for s in body) else None


# Interval and origin questions ask about the calls of the same few functions; one walk of
# a module answers them all (nodes hash by identity).
@lint_memo.memo(8)
def call_sites(module: cst.Module) -> CallSites:
    """The (lazily built) call index of `module`."""
    return CallSites(module)


def default_never_used(
    module: cst.Module, function: cst.FunctionDef, name: str, method: bool
) -> bool:
    """Whether the default of the parameter `name` of a private function or method
    (`def _compute_dist(self, batch, device="cuda")`) is never used: every call of its name
    in the module (at least one; for a method, through any receiver) hands that parameter
    a value, by keyword or position, and the name is never handed on uncalled (a callback
    may be called without it). Other modules should not call a private function, so the
    callers here decide what it gets: the default is no choice of the program's."""
    called = function.name.value
    if not called.startswith("_") or called.endswith("__"):
        return False
    index = call_sites(module)
    sites = index.named(called, method)
    if not sites:
        return False
    if any(a.star for site in sites for a in site.call.args):
        return False  # `*args` / `**kwargs`: what they hand is not known
    if len(index.handed_from(function, name, method)) != len(sites):
        return False
    # The callees of those calls (`self._compute_dist` and its `_compute_dist`), and the
    # names of definitions so named (other classes may define their own).
    known = {id(site.call.func) for site in sites}
    known |= {id(site.call.func.attr) for site in sites if type(site.call.func) is cst.Attribute}
    for node in descendants(module):
        kind = type(node)
        if kind is cst.FunctionDef and node.name.value == called:  # type: ignore[attr-defined]
            known.add(id(node.name))  # type: ignore[attr-defined]
        elif kind is cst.Name and node.value == called and id(node) not in known:  # type: ignore[attr-defined]
            return False  # `fn = _compute_dist`: handed on, called elsewhere
        elif kind is cst.Attribute and node.attr.value == called and id(node) not in known:  # type: ignore[attr-defined]
            return False
    return True
