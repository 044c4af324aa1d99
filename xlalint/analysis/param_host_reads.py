"""Parameters whose value a function of this module reads on the host.

A loop that hands a row of a device tensor at its Python int (`labels[idx]`, `cls_probs[i]`)
to a helper that branches on it (`if pred != label:`), `.item()`s it or masks with a value
computed from it (`indices[ious >= threshold]`, `torch.nonzero(...)`) executes the row's
graph in that helper, once per value of the int: the read costs what it would cost in the
loop itself (measured: `x[i]` feeding a host read in the pass, 8 compiles in 8 passes).

`ParamHostReads` records the helper's side during the engine's single walk: for each
function, the locals computed from its parameters (shape reads carry nothing, see
`value_names`) and the parameters a host read reaches. A parameter handed on to another
function of the module that reads it is read too (`nms(boxes, conf)` reading `conf` in a
`while` test): resolved once the whole file has been walked, as a helper may be defined
after its caller. The caller's side (what the argument carries) is XLA207's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from xlalint.analysis.arguments import bind, passed_names, signature_of
from xlalint.analysis.hotness import FunctionKey
from xlalint.analysis.value_names import value_names
from xlalint.walk import target_names


@dataclass
class _Function:
    node: cst.FunctionDef
    is_method: bool
    reads: set[str] = field(default_factory=set)  # parameters a host read reaches
    # Calls of the module's functions: (callee, call, id(argument) -> the parameters it reads).
    calls: list[tuple[FunctionKey, cst.Call, dict[int, frozenset[str]]]] = field(
        default_factory=list
    )


@dataclass
class _Scope:
    function: _Function
    # Names carrying parameters: each parameter carries itself, a local what it was computed
    # from.
    carries: dict[str, frozenset[str]]


class ParamHostReads:
    """Functions of the module by key, and the parameters each reads on the host."""

    def __init__(self) -> None:
        self._functions: dict[FunctionKey, _Function] = {}
        self._scopes: list[_Scope] = []
        self._resolved: dict[FunctionKey, frozenset[str]] | None = None

    # -- feeding --------------------------------------------------------------------------
    def push_function(self, node: cst.FunctionDef, key: FunctionKey | None) -> None:
        is_method = key is not None and key.class_name is not None
        function = _Function(node, is_method)
        if key is not None:
            self._functions.setdefault(key, function)  # the first definition of a name wins
        names = passed_names(node, is_method)
        self._scopes.append(_Scope(function, {name: frozenset({name}) for name in names}))

    def pop_function(self) -> None:
        if self._scopes:
            self._scopes.pop()

    def carried(self, expr: cst.CSTNode) -> frozenset[str]:
        """The parameters of the function being walked that `expr`'s value reads."""
        if not self._scopes:
            return frozenset()
        carries = self._scopes[-1].carries
        found: set[str] = set()
        for name in value_names(expr):
            found |= carries.get(name, frozenset())
        return frozenset(found)

    def bind(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """`targets = value` (a `for` target and its iterable too)."""
        if not self._scopes:
            return
        carried = self.carried(value)
        carries = self._scopes[-1].carries
        for target in targets:
            if isinstance(target, cst.Subscript | cst.Attribute):
                continue  # writes into a container: the name keeps what it held
            for name in target_names(target):
                if carried:
                    carries[name] = carried
                else:
                    carries.pop(name, None)

    def host_read(self, expr: cst.CSTNode) -> None:
        """A host read of `expr`'s value in the function being walked."""
        if self._scopes:
            self._scopes[-1].function.reads |= self.carried(expr)

    def call(self, callee: FunctionKey, call: cst.Call) -> None:
        """A call of a function of this module: its arguments may hand parameters on."""
        if not self._scopes:
            return
        passed = {id(arg.value): self.carried(arg.value) for arg in call.args}
        passed = {key: carried for key, carried in passed.items() if carried}
        if passed:
            self._scopes[-1].function.calls.append((callee, call, passed))

    # -- questions, after the walk --------------------------------------------------------
    def arguments_read(self, callee: FunctionKey, call: cst.Call) -> list[cst.BaseExpression]:
        """The arguments of `call` that `callee` (a function of this module) reads on the
        host, directly or through the functions it hands them to."""
        function = self._functions.get(callee)
        if function is None:
            return []
        reads = self._reads().get(callee, frozenset())
        if not reads:
            return []
        bound = bind(call, signature_of(function.node, function.is_method))
        if bound is None:
            return []
        return [value for name, value in bound.items() if name in reads]

    def _reads(self) -> dict[FunctionKey, frozenset[str]]:
        """Each function's read parameters, with those handed to a reader, to a fixpoint."""
        if self._resolved is not None:
            return self._resolved
        reads = {key: set(function.reads) for key, function in self._functions.items()}
        changed = True
        while changed:
            changed = False
            for key, function in self._functions.items():
                for callee, call, passed in function.calls:
                    target = self._functions.get(callee)
                    if target is None or not reads.get(callee):
                        continue
                    bound = bind(call, signature_of(target.node, target.is_method))
                    if bound is None:
                        continue
                    for name, value in bound.items():
                        if name in reads[callee]:
                            new = passed.get(id(value), frozenset()) - reads[key]
                            if new:
                                reads[key] |= new
                                changed = True
        self._resolved = {key: frozenset(found) for key, found in reads.items()}
        return self._resolved
