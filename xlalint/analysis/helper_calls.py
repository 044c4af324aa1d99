"""Calls of this module's functions, and the device tensors they hand to each parameter.

A helper's code often cannot tell what its parameters hold (`def _prefix_tokens(self, step,
lprobs, ...)`), while the loop that calls it can (`lprobs` came out of the model). Rules that
judge a helper's code by what it is given (XLA101's hand-offs, XLA202/XLA203's masks on a
parameter) follow the value from the call to the parameter: `HelperCalls` records, during
the engine's single walk, the module's functions, the calls that may run them (`f(...)`,
`self.f(...)` in a method, `obj.f(...)` where `obj` holds an instance of a class of the
module: `metric = Accumulator(3)`) with the arguments that are device tensors there, and
which names of the function being walked are still its parameters (not rebound). Once the
walk is over (a helper may be defined after its caller), `arguments.bind` maps each call's
arguments to the parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import Signature, bind, signature_of
from xlalint.analysis.handed_functions import positional_parameters
from xlalint.analysis.helper_indexes import TENSOR_ONLY_METHODS
from xlalint.analysis.hotness import FunctionKey, Site
from xlalint.walk import target_names

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power)


@dataclass(frozen=True)
class HelperCall:
    """A call that may run a function of this module, with its device-tensor arguments."""

    node: cst.Call
    helper: FunctionKey
    tensors: frozenset[int]  # ids of the argument values that are device tensors there
    site: Site


@dataclass
class _Scope:
    key: FunctionKey | None
    params: set[str]  # parameters not rebound (yet)
    instances: dict[str, str] = field(default_factory=dict)  # name -> class it holds
    # name -> the parameters it is computed from element for element (`result = a / b`)
    derived: dict[str, frozenset[str]] = field(default_factory=dict)


class HelperCalls:
    """The module's functions and classes, and the calls to them, during and after the walk."""

    def __init__(self) -> None:
        self.functions: dict[FunctionKey, cst.FunctionDef] = {}
        self.classes: set[str] = set()
        self.calls: list[HelperCall] = []
        # Parameters a function uses as tensors (`p.gather(...)`, `p.view(...)`).
        self.used_as_tensors: dict[FunctionKey, set[str]] = {}
        # Every call of a helper with its host-value arguments, for rules that ask
        # `host_only` (recorded by them alone: it costs a kind per argument of every call).
        self.host_calls: list[tuple[cst.Call, FunctionKey, frozenset[int]]] = []
        # Every call of a helper with its boolean-mask arguments (masks computed from
        # tensors), for rules that ask `handed_mask` (recorded by XLA202 alone).
        self.mask_calls: list[tuple[cst.Call, FunctionKey, frozenset[int]]] = []
        # Calls that hand a helper values computed from the caller's own parameters, by
        # argument id (recorded by rules that ask `handed_tensor`): a helper's helper is
        # handed a device tensor where its caller is.
        self.forwarded: list[
            tuple[cst.Call, FunctionKey, FunctionKey, dict[int, frozenset[str]], Site]
        ] = []
        self._scopes: list[_Scope] = []

    # -- walk --------------------------------------------------------------------------------
    def push_function(self, node: cst.FunctionDef, key: FunctionKey | None) -> None:
        if key is not None:
            self.functions.setdefault(key, node)  # the first definition of a name wins
        method = key is not None and key.class_name is not None
        names = positional_parameters(node, method)
        names += [p.name.value for p in node.params.kwonly_params]
        self._scopes.append(_Scope(key, set(names)))

    def pop_function(self) -> None:
        if self._scopes:
            self._scopes.pop()

    def note_class(self, node: cst.ClassDef) -> None:
        self.classes.add(node.name.value)

    def bind(self, targets: list[cst.BaseExpression], value: cst.BaseExpression | None) -> None:
        """`targets = value` (`value` None for a loop target or another unknown binding): a
        rebound parameter no longer holds what the caller passed; a name bound to
        `SomeClass(...)` holds an instance of it."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        made = _constructed_class(value) if value is not None else None
        sources = self._arithmetic_sources(value) if value is not None else frozenset()
        for target in targets:
            for name in target_names(target):
                scope.params.discard(name)
                scope.derived.pop(name, None)
                if sources and isinstance(target, cst.Name) and len(targets) == 1:
                    scope.derived[name] = sources
                if made is not None and isinstance(target, cst.Name):
                    scope.instances[name] = made
                else:
                    scope.instances.pop(name, None)

    def note_call(
        self, call: cst.Call, function: FunctionKey | None, tensors: frozenset[int], site: Site
    ) -> None:
        """A call in the function `function`; `tensors`: ids of its device-tensor arguments."""
        helper = self.callee(call, function)
        if helper is not None and tensors:
            self.calls.append(HelperCall(call, helper, tensors, site))

    def note_forwarded(
        self,
        call: cst.Call,
        function: FunctionKey | None,
        handed: dict[int, frozenset[str]],
        site: Site,
    ) -> None:
        """A call in `function`; `handed`: ids of its arguments computed from `function`'s
        parameters, with those parameters (`_cubic_interpolate(t, f, gtd, ...)` in
        `_strong_wolfe`, handed `gtd` by `step`)."""
        helper = self.callee(call, function)
        if helper is not None and function is not None and handed:
            self.forwarded.append((call, helper, function, handed, site))

    def note_host_call(self, call: cst.Call, helper: FunctionKey, hosts: frozenset[int]) -> None:
        """A call of `helper` (its `callee`); `hosts`: ids of its host-value arguments."""
        self.host_calls.append((call, helper, hosts))

    def note_mask_call(self, call: cst.Call, helper: FunctionKey, masks: frozenset[int]) -> None:
        """A call of `helper` (its `callee`); `masks`: ids of its boolean-mask arguments."""
        self.mask_calls.append((call, helper, masks))

    def note_method_call(self, call: cst.Call) -> None:
        """`p.gather(...)`, `p[a:b].view(...)`: a method only tensors have, on a parameter."""
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value not in TENSOR_ONLY_METHODS:
            return
        receiver = func.value
        while isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        param = self.param(receiver)
        key = self._scopes[-1].key if self._scopes else None
        if param is not None and key is not None:
            self.used_as_tensors.setdefault(key, set()).add(param)

    # -- questions ---------------------------------------------------------------------------
    def holds_tensor(self, key: FunctionKey, param: str) -> bool:
        """Whether the parameter `param` of `key` holds a device tensor: the function uses it
        as one, or a call hands it one."""
        return param in self.used_as_tensors.get(key, ()) or bool(self.tensor_sites(key, param))

    def called_here(self, key: FunctionKey) -> bool:
        """Whether a call of this module may run `key` (as names tell: `callee`)."""
        return any(call.helper == key for call in self.calls)

    def param(self, node: cst.BaseExpression) -> str | None:
        """The parameter `node` is, if it is one of the function being walked, not rebound."""
        if not self._scopes or not isinstance(node, cst.Name):
            return None
        return node.value if node.value in self._scopes[-1].params else None

    def sources(self, node: cst.BaseExpression) -> frozenset[str]:
        """The parameters `node` is (a parameter not rebound) or is computed from by
        arithmetic alone (`result = a / b`, then `result[result != result] = 0.0`): it is a
        tensor where a caller hands one of them a tensor."""
        if (
            type(node) is cst.Subscript
            and len(node.slice) == 1
            and type(node.slice[0].slice) is cst.Index
            and type(node.slice[0].slice.value) in (cst.Name, cst.Integer)
        ):
            node = node.value  # `gt_boxes[i]`: a row of a tensor is a tensor
        if not self._scopes or not isinstance(node, cst.Name):
            return frozenset()
        scope = self._scopes[-1]
        if node.value in scope.params:
            return frozenset({node.value})
        return scope.derived.get(node.value, frozenset())

    def _arithmetic_sources(self, value: cst.BaseExpression) -> frozenset[str]:
        """The parameters (or names computed from them) an arithmetic expression of them and
        numbers reads, or a plain name of them stands for (`dist_masked_tokens =
        masked_tokens`: the same value); empty if it reads anything else or is no
        arithmetic."""
        if isinstance(value, cst.Name):
            return self.sources(value)
        if not isinstance(value, cst.BinaryOperation | cst.UnaryOperation):
            return frozenset()
        found: set[str] = set()
        pending: list[cst.BaseExpression] = [value]
        while pending:
            node = pending.pop()
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
                pending.extend((node.left, node.right))
            elif isinstance(node, cst.UnaryOperation) and isinstance(
                node.operator, cst.Minus | cst.Plus
            ):
                pending.append(node.expression)
            elif isinstance(node, cst.Integer | cst.Float):
                continue
            elif sources := self.sources(node):
                found |= sources
            else:
                return frozenset()
        return frozenset(found)

    def is_param(self, name: str) -> bool:
        """`param` for a name: whether it is a parameter of the function being walked, not
        rebound (without building a `Name` node to ask)."""
        return bool(self._scopes) and name in self._scopes[-1].params

    def callee(self, call: cst.Call, function: FunctionKey | None) -> FunctionKey | None:
        """The function of this module that `call` may run, as far as names tell (confirmed
        by `signature` once the walk is over)."""
        func = call.func
        if type(func) is cst.Name:
            return FunctionKey(None, func.value)
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
            return None
        owner = func.value.value
        if owner == "self":
            if function is None or function.class_name is None:
                return None
            return FunctionKey(function.class_name, func.attr.value)
        held = self._scopes[-1].instances.get(owner) if self._scopes else None
        return FunctionKey(held, func.attr.value) if held is not None else None

    def signature(self, key: FunctionKey) -> Signature | None:
        """The signature of the module's function `key` as its callers see it; None if the
        module defines no such function (or no such class)."""
        node = self.functions.get(key)
        if node is None or (key.class_name is not None and key.class_name not in self.classes):
            return None
        return signature_of(node, key.class_name is not None)

    def tensor_sites(self, key: FunctionKey, param: str) -> list[Site]:
        """Where calls hand the parameter `param` of `key` a device tensor."""
        signature = self.signature(key)
        if signature is None:
            return []
        sites = []
        for call in self.calls:
            if call.helper != key:
                continue
            value = _handed(call.node, signature, param)
            if value is not None and id(value) in call.tensors:
                sites.append(call.site)
        return sites

    def handed_tensor(
        self, key: FunctionKey, param: str, counts: Callable[[Site], bool] = lambda site: True
    ) -> bool:
        """Whether a call of the module at a site that `counts` (a per-step one) hands the
        parameter `param` of `key` a device tensor: directly (`tensor_sites`), or a value
        computed from a parameter of its caller that is itself so handed one
        (`note_forwarded`), through any depth of helpers."""
        pending, seen = [(key, param)], set()
        while pending:
            slot = pending.pop()
            if slot in seen:
                continue
            seen.add(slot)
            if any(counts(site) for site in self.tensor_sites(*slot)):
                return True
            signature = self.signature(slot[0])
            if signature is None:
                continue
            for call, helper, caller, handed, site in self.forwarded:
                if helper != slot[0] or not counts(site):
                    continue
                value = _handed(call, signature, slot[1])
                if value is not None:
                    pending.extend((caller, source) for source in handed.get(id(value), ()))
        return False

    def handed_mask(self, key: FunctionKey, param: str) -> bool:
        """Whether the module calls `key` and every call that binds `param` hands it a
        boolean mask computed from tensors (`self.cal_dist_loss(d, t, masked_tokens)` with
        `masked_tokens = tgt_tokens.ne(pad)`): the parameter is that mask in the helper,
        whatever it is named (needs `note_mask_call` for every call)."""
        signature = self.signature(key)
        if signature is None:
            return False
        found = False
        for call, helper, masks in self.mask_calls:
            if helper != key:
                continue
            value = _handed(call, signature, param)
            if value is None:
                continue
            if id(value) not in masks:
                return False
            found = True
        return found

    def host_only(self, key: FunctionKey, param: str) -> bool:
        """Whether the module calls `key` and every call hands `param` a host value (a
        tensor built from Python values, a number): what the parameter holds, whatever its
        annotation says (needs `note_host_call` for every call)."""
        signature = self.signature(key)
        if signature is None:
            return False
        found = False
        for call, helper, hosts in self.host_calls:
            if helper != key:
                continue
            value = _handed(call, signature, param)
            if value is None or id(value) not in hosts:
                return False
            found = True
        return found


def _handed(call: cst.Call, signature: Signature, param: str) -> cst.BaseExpression | None:
    """What `call` passes for `param`; None where it passes nothing or cannot be bound."""
    bound = bind(call, signature)
    return bound.get(param) if bound is not None else None


def _constructed_class(value: cst.BaseExpression) -> str | None:
    """`Accumulator(3)` or `utils.Accumulator(3)`: the class name (capitalized), whose
    definition the caller looks up among the module's classes."""
    if type(value) is not cst.Call:
        return None
    name = (get_full_name_for_node(value.func) or "").rsplit(".", 1)[-1]
    return name if name[:1].isupper() else None
