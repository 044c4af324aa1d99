"""Functions handed to a function as arguments, and called there.

`def run_single_epoch(self, iterator, step_fn): for batch in iterator: step_fn(batch)`,
called as `self.run_single_epoch(loader, step_fn=self.train_step)`: the loop runs
`train_step` on every pass. What a loop does (train, reach a barrier) then depends on the
functions its callers hand it, which this module finds: the arguments this file's calls
of the function pass for the parameter, where they name a function or method of the file.
"""

from __future__ import annotations

import libcst as cst

from xlalint.walk import code_children


def positional_parameters(function: cst.FunctionDef, method: bool) -> list[str]:
    """The parameters a call's positional arguments land on, in order (`self` not counted
    for a method called as `x.f(...)`)."""
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    return positional[1:] if method and positional else positional


def _parameter_index(function: cst.FunctionDef, name: str, method: bool) -> int | None:
    """Where `name` sits among the positional arguments of a call (`self` not counted)."""
    positional = positional_parameters(function, method)
    return positional.index(name) if name in positional else None


class CallSites:
    """This module's calls, by the name they call (`f(...)`) or the method (`x.f(...)`)."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._by_name: dict[str, list[cst.Call]] | None = None
        self._by_method: dict[str, list[cst.Call]] = {}

    def _index(self) -> None:
        """One walk of the module, on the first question (skipping whitespace and
        punctuation, testing exact types: libcst's classes are final)."""
        by_name: dict[str, list[cst.Call]] = {}
        by_method = self._by_method
        stack: list[cst.CSTNode] = [self._module]
        while stack:
            node = stack.pop()
            if type(node) is cst.Call:
                func = node.func  # type: ignore[attr-defined]
                if type(func) is cst.Name:
                    by_name.setdefault(func.value, []).append(node)  # type: ignore[arg-type]
                elif type(func) is cst.Attribute:
                    by_method.setdefault(func.attr.value, []).append(node)  # type: ignore[arg-type]
            stack.extend(code_children(node))
        self._by_name = by_name

    def handed(
        self, function: cst.FunctionDef, name: str, method: bool
    ) -> list[cst.BaseExpression]:
        """What the calls of `function` (a method when `method`, called as `x.f(...)`)
        pass for its parameter `name`, by keyword or position."""
        if self._by_name is None:
            self._index()
        assert self._by_name is not None
        table = self._by_method if method else self._by_name
        index = _parameter_index(function, name, method)
        found: list[cst.BaseExpression] = []
        for call in table.get(function.name.value, []):
            keyword = [a.value for a in call.args if a.keyword and a.keyword.value == name]
            plain = [a.value for a in call.args if a.keyword is None and not a.star]
            if keyword:
                found.append(keyword[0])
            elif (
                index is not None
                and index < len(plain)
                and not any(a.star for a in call.args[: index + 1])
            ):
                found.append(plain[index])
        return found
