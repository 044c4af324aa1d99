"""Flags that choose between CUDA and staying on the CPU.

`use_cuda = torch.cuda.is_available() and not args.cpu`, then `if use_cuda: model.cuda()`
and `sample = move_to_cuda(sample) if use_cuda else sample`: there is no device variable
and no ladder, yet the flag is the program's device choice. On an XLA host the probe is
false, so nothing is ever placed on a device and the program runs on the host CPU. A test
of where a value lives asks the same question (`use_cuda = next(model.parameters()).is_cuda`,
then `if use_cuda: loader = DataLoader(kg, use_cuda="batch")`): with the model on the XLA
device it is false, and the batches stay on the host.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.devices import device_string_type, mentions_xla
from xlalint.analysis.guards import falsy_constant, implied, local_values
from xlalint.analysis.imports import ImportTable
from xlalint.walk import children, descendants, self_attribute

# What asks whether a CUDA device is there (not a flag name or a string, which only says
# that the code is about CUDA).
_AVAILABILITY = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
# Helpers named for moving values to a CUDA device: `move_to_cuda(sample)`.
_TO_CUDA = re.compile(r"(^|_)(to|onto)_(cuda|gpu)$", re.IGNORECASE)
# Keywords asking a callee to put what it makes on CUDA: `DataLoader(kg, use_cuda="batch")`,
# `Batcher(data, cuda=True)`.
_CUDA_KEYWORD = re.compile(r"^(use_|on_)?cuda$", re.IGNORECASE)


def probes_availability(value: cst.BaseExpression, imports: ImportTable) -> bool:
    """`torch.cuda.is_available() and not args.cpu`: true only where CUDA is there; so is
    a test of where a value lives, `next(model.parameters()).is_cuda` (`x.is_cuda`)."""

    def asks(test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.Attribute):
            return test.attr.value == "is_cuda"
        return isinstance(test, cst.Call) and imports.resolve(test.func) in _AVAILABILITY

    if implied(value, True, asks) is True:
        return True
    # `torch.cuda.device_count() > 0`
    return (
        type(value) is cst.Comparison
        and len(value.comparisons) == 1
        and isinstance(value.comparisons[0].operator, cst.GreaterThan | cst.GreaterThanEqual)
        and asks(value.left)
    )


def places_on_cuda(node: cst.CSTNode, imports: ImportTable) -> bool:
    """Whether code under `node` puts a value on a CUDA device: `.cuda()`, `.to("cuda")`,
    a helper named for it (`move_to_cuda(sample)`), or a call asked to by a keyword named
    for CUDA (`DataLoader(kg, use_cuda="batch")`; not `use_cuda=False`)."""
    for found in descendants(node):
        if not isinstance(found, cst.Call):
            continue
        if any(
            arg.keyword is not None
            and _CUDA_KEYWORD.match(arg.keyword.value)
            and falsy_constant(arg.value) is not True
            for arg in found.args
        ):
            return True
        func = found.func
        if isinstance(func, cst.Attribute):
            if func.attr.value == "cuda":
                return True
            if func.attr.value == "to" and any(
                device_string_type(arg.value) == "cuda" for arg in found.args
            ):
                return True
        name = (get_full_name_for_node(func) or "").rsplit(".", 1)[-1]
        if _TO_CUDA.search(name):
            return True
    return False


def cuda_flag_places(function: cst.FunctionDef, name: str, imports: ImportTable) -> bool:
    """Whether `name`, a flag of `function` assigned only from a CUDA availability probe,
    decides where values go: an `if name:` (or a ternary on it) whose true side places
    something on CUDA."""
    values = local_values(function, name)
    if not values or not all(probes_availability(v, imports) for v in values):
        return False

    def is_flag(test: cst.BaseExpression) -> bool:
        return isinstance(test, cst.Name) and test.value == name

    return any(
        isinstance(node, cst.If | cst.IfExp)
        and implied(node.test, True, is_flag) is True
        and places_on_cuda(node.body, imports)
        for node in descendants(function.body)
    )


def class_cuda_flag(test: cst.BaseExpression) -> str | None:
    """`use_cuda` in `if self.use_cuda:`: an attribute of the instance named for CUDA, whose
    value may come from anywhere (a method of another module, a constructor argument)."""
    if (
        isinstance(test, cst.Attribute)
        and isinstance(test.value, cst.Name)
        and test.value.value == "self"
        and "cuda" in test.attr.value.lower()
    ):
        return test.attr.value
    return None


def _moves_to_a_chosen_device(node: cst.CSTNode) -> bool:
    """`x.to(self.device)`, `model.to(device=args.device)`: values go to a device chosen
    elsewhere, which may be an XLA device."""
    for found in descendants(node):
        if (
            isinstance(found, cst.Call)
            and isinstance(found.func, cst.Attribute)
            and found.func.attr.value == "to"
        ):
            for arg in found.args:
                name = get_full_name_for_node(arg.value) or ""
                if "device" in name.rsplit(".", 1)[-1].lower():
                    return True
    return False


def flag_placements(class_def: cst.ClassDef, flag: str, imports: ImportTable) -> list[cst.If]:
    """The `if self.<flag>:` statements of the class that put values on CUDA
    (`self.model.cuda()`), without `else` or with an `else` that stays on the CPU
    (`else: loader = DataLoader(kg)`, placing nothing), in source order, where they are the
    class's only placement: the class moves nothing to a device chosen elsewhere
    (`.to(self.device)`), so on an XLA host, where the flag cannot be true, everything stays
    on the CPU. Empty otherwise."""
    if _moves_to_a_chosen_device(class_def.body):
        return []
    return [
        node
        for node in descendants(class_def.body)
        if isinstance(node, cst.If)
        and stays_on_the_cpu(node.orelse)
        and self_attribute(node.test) == flag
        and places_on_cuda(node.body, imports)
    ]


def stays_on_the_cpu(orelse: cst.If | cst.Else | None) -> bool:
    """No `else`, or an `else` (not an `elif`) that places nothing on a device: no
    `.to(...)`, `.cuda()`, no `device=` and no keyword named for CUDA."""
    if orelse is None:
        return True
    if not isinstance(orelse, cst.Else):
        return False
    for found in descendants(orelse.body):
        if not isinstance(found, cst.Call):
            continue
        func = found.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            return False
        if any(
            arg.keyword is not None
            and (arg.keyword.value == "device" or _CUDA_KEYWORD.match(arg.keyword.value))
            for arg in found.args
        ):
            return False
    return True


def code_mentions_xla(node: cst.CSTNode, imports: ImportTable) -> bool:
    """`mentions_xla` outside docstrings: a class whose docstring lists "TPU training" as
    a plan has no XLA path."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Expr) and isinstance(
            current.value, cst.SimpleString | cst.ConcatenatedString
        ):
            continue
        if isinstance(current, cst.Name | cst.SimpleString | cst.FormattedStringText):
            if mentions_xla(current, imports):
                return True
        else:
            stack.extend(children(current))
    return False
