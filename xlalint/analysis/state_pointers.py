"""Python ints that a method reads from its instance and advances on every call.

A queue or memory bank keeps a write position in an attribute: `ptr = int(self.queue_ptr)`,
then `self.queue[ptr : ptr + bs] = keys` and `self.queue_ptr[0] = (ptr + bs) % size`. The
method runs once per step (from `forward`), and every call finds the position moved: the
slice offset is a new constant of the traced graph each time, so each position compiles
its own graph (`size / bs` of them) before the queue wraps. The same holds for a plain int
attribute (`self.ptr = (self.ptr + bs) % size`) used as a bound directly.

`advanced_pointers` answers, per method: the spellings (`ptr`, `self.ptr`) that hold such a
position. A position is read from an attribute of `self` (`int(self.p)`, `int(self.p[0])`,
`self.p.item()`, or `self.p` itself) and the same method writes that attribute back from
it plus something (`self.p[0] = ptr + n`, `self.p = (ptr + n) % k`, `self.p += n`,
`self.p.add_(n)`), also through a local it advanced first (`ptr = (ptr + bs) % size`,
then `self.p[0] = ptr`: MoCo's and NNCLR's queues). A reset alone (`self.p.zero_()`,
`self.p = 0`) or a count read but never advanced here (`n = int(self.count)`) is the same
value on every call, not a moving position.
"""

from __future__ import annotations

import libcst as cst

from xlalint.analysis.value_names import value_names
from xlalint.walk import descendants, self_attribute

# In-place methods that advance a counter tensor by their argument.
_ADVANCING_METHODS = frozenset({"add_", "sub_"})


def advanced_pointers(function: cst.FunctionDef) -> dict[str, str]:
    """Spellings in `function` (a method) of a position it reads from an attribute of
    `self` and advances there on every call: `{"ptr": "queue_ptr", "self.ptr": "ptr"}`."""
    reads: dict[str, str] = {}  # local name -> attribute it was read from
    # local name -> attribute whose position it holds advanced (`ptr = (ptr + bs) % size`)
    moved: dict[str, str] = {}
    advanced: set[str] = set()  # attributes written back advanced
    plain: set[str] = set()  # attributes whose position is advanced as `self.x = self.x + n`
    # Exact types: `isinstance` on libcst's nodes runs ABCMeta's check for every node.
    for node in descendants(function.body):
        node_type = type(node)
        if node_type is cst.Assign:
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                local = node.targets[0].target.value
                source = _position_source(node.value)
                if source is not None:
                    reads[local] = source
                else:
                    # `ptr = (ptr + bs) % size`, or in two steps (`new = ptr + bs`, then
                    # `new = new % size`): the local holds the position advanced.
                    names = set(value_names(node.value))
                    carried = {moved[name] for name in names if name in moved}
                    moved.pop(local, None)
                    for attribute in set(reads.values()) | carried:
                        if attribute in carried or _advances(node.value, attribute, reads):
                            moved[local] = attribute
            for target in node.targets:
                attribute = _written_attribute(target.target)
                if attribute is not None and (
                    _advances(node.value, attribute, reads)
                    or (type(node.value) is cst.Name and moved.get(node.value.value) == attribute)
                ):
                    advanced.add(attribute)
                    if self_attribute(target.target) is not None:
                        plain.add(attribute)
        elif node_type is cst.AugAssign and isinstance(node.operator, cst.AddAssign):
            attribute = _written_attribute(node.target)
            if attribute is not None:
                advanced.add(attribute)
                if self_attribute(node.target) is not None:
                    plain.add(attribute)
        elif node_type is cst.Call:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _ADVANCING_METHODS:
                attribute = _written_attribute(func.value)
                if attribute is not None:
                    advanced.add(attribute)
    found = {name: source for name, source in reads.items() if source in advanced}
    for attribute in plain:
        found[f"self.{attribute}"] = attribute
    return found


def _position_source(value: cst.BaseExpression) -> str | None:
    """`p` for `int(self.p)`, `int(self.p[0])`, `self.p.item()`, `int(self.p.item())` or
    `self.p`: a Python int read from an attribute."""
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "int"
        and len(value.args) == 1
    ):
        value = value.args[0].value
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "item"
        and not value.args
    ):
        value = value.func.value
    if isinstance(value, cst.Subscript):
        value = value.value
    return self_attribute(value)


def _written_attribute(target: cst.BaseExpression) -> str | None:
    """`p` for a write to `self.p` or `self.p[...]`."""
    if isinstance(target, cst.Subscript):
        target = target.value
    return self_attribute(target)


def _advances(value: cst.BaseExpression, attribute: str, reads: dict[str, str]) -> bool:
    """`value` adds something to the position read from `attribute` (`ptr + bs`, `(ptr +
    bs) % size`, `self.p + n`)."""
    for node in descendants(value):
        if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
            continue
        for side in (node.left, node.right):
            if self_attribute(side) == attribute:
                return True
            if any(reads.get(name) == attribute for name in value_names(side)):
                return True
    return False
