"""Methods reached through an attribute that holds an instance of a class of the module.

A decoding loop often delegates each step to a strategy object the constructor picks
(`self.decoder = GreedyDecoder(...)` or `BeamSearchDecoder(...)`), and calls
`self.decoder.update(tokens, logits)` once per token. Hot code is found by function name
(`analysis/hotness.py`); this index says which method names such a call can reach: the
methods of every class of the module ever assigned to that attribute of `self`. An
attribute never assigned a class of the module (a model, a tokenizer, a list) reaches
nothing here, so `self.model.generate(...)` stays unknown.
"""

from __future__ import annotations

import functools

import libcst as cst

from xlalint.walk import descendants


# Nodes hash by identity: one walk per module, whatever the number of calls asked about.
@functools.lru_cache(maxsize=16)
def member_methods(module: cst.Module) -> dict[str, frozenset[str]]:
    """For each attribute name `x` assigned `self.x = C(...)` with `C` a class of the
    module (conditional expressions' branches included), the methods those classes and
    their same-module bases define."""
    nodes = list(descendants(module))
    classes = {node.name.value: node for node in nodes if isinstance(node, cst.ClassDef)}
    if not classes:
        return {}
    found: dict[str, set[str]] = {}
    for node in nodes:
        if not isinstance(node, cst.Assign):
            continue
        for target in node.targets:
            attribute = target.target
            if not (
                isinstance(attribute, cst.Attribute)
                and isinstance(attribute.value, cst.Name)
                and attribute.value.value == "self"
            ):
                continue
            for name in _constructed(node.value, classes):
                found.setdefault(attribute.attr.value, set()).update(_methods(name, classes))
    return {attr: frozenset(methods) for attr, methods in found.items()}


def _constructed(value: cst.BaseExpression, classes: dict[str, cst.ClassDef]) -> list[str]:
    """`C(...)`, `C(...) if flag else D(...)`: the module classes the value constructs."""
    if isinstance(value, cst.IfExp):
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


def member_method_call(func: cst.BaseExpression, module: cst.Module) -> bool:
    """`self.decoder.update`: a method of a class of the module that the attribute holds."""
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Attribute)
        and isinstance(func.value.value, cst.Name)
        and func.value.value.value == "self"
        and func.attr.value in member_methods(module).get(func.value.attr.value, ())
    )
