"""Loop-int subscripts whose value a host read executes in the same pass of the loop.

A host read (`.item()`, `.tolist()`, `.cpu()`, `int(t)`, `if t > u:`) executes the graph
of the value it reads, and only that one. Measured by hand on the XLA CPU device (8 passes,
the loop run three times with a barrier after it; compiles per run):
- `x[i]` or `x[:, : i + 1]` feeding a `.item()` in the same pass: 8, 0, 0 (a device index
  with `index_select`: 1, 0, 0). Each value of `i` is its own graph, as with a barrier.
- `buf[i] = v` with a `.item()` of an unrelated value: 1, 0, 0 with an int or a device index.
  The write stays pending and runs once, in the graph after the loop.
- `buf[i] = v` then a `.item()` of `buf[i]` (or of all of `buf`): 9, 0, 0 with an int *and*
  with a device index. Every pass reads the chain of the writes so far, a different graph
  each pass whatever the index is: only a barrier per pass (then a device index) helps.
So a subscript read at the pass's int counts as executed per value when its value, directly
or through names bound earlier in the pass, reaches a host read in a pass the int changes
with, and the indexed value is not written in place or rebound in that loop.

`PassReads` is fed by XLA207 during the engine's single walk: marks at calls, assignments and
block entries, and names bound in the pass; nothing is walked again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from xlalint.analysis.loop_values import Loop
from xlalint.analysis.value_names import value_names


@dataclass
class _Noted:
    node: cst.Subscript
    loops: frozenset[Loop]


@dataclass
class _Function:
    # name -> ids of the noted subscripts whose value it holds
    holds: dict[str, frozenset[int]] = field(default_factory=dict)


class PassReads:
    """Follows noted subscripts into names and host reads, one function at a time."""

    def __init__(self) -> None:
        self._functions: list[_Function] = [_Function()]
        self._noted: list[_Noted] = []
        self._loops_of: dict[int, frozenset[Loop]] = {}
        self._marks: dict[int, int] = {}  # id(node) -> len(self._noted) when it was entered
        self.read: set[int] = set()  # ids of subscripts a host read executes per value
        self._changed: dict[Loop, set[str]] = {}  # loop -> names written or rebound in it

    # -- feeding --------------------------------------------------------------------------
    def push_function(self) -> None:
        self._functions.append(_Function())

    def pop_function(self) -> None:
        self._functions.pop()

    def note(self, node: cst.Subscript, loops: frozenset[Loop]) -> None:
        """A subscript of a tensor at an int that changes with `loops`."""
        self._noted.append(_Noted(node, loops))
        self._loops_of[id(node)] = loops

    def mark(self, node: cst.CSTNode) -> None:
        """`node` (a call, an assignment, a `for` or `if`) starts: subscripts noted from now
        on, until `since(node)`, are inside it."""
        self._marks[id(node)] = len(self._noted)

    def since(self, node: cst.CSTNode) -> list[_Noted]:
        start = self._marks.pop(id(node), None)
        return [] if start is None else self._noted[start:]

    def bind(
        self, targets: list[cst.BaseExpression], value: cst.BaseExpression, inside: list[_Noted]
    ) -> None:
        """`targets = value` (or a `for` target and its iterable): names now hold the noted
        subscripts of `value` and what its names held."""
        written = {id(t) for t in targets}
        held = {id(n.node) for n in inside if id(n.node) not in written} | self._held(value)
        holds = self._functions[-1].holds
        for target in targets:
            if isinstance(target, cst.Name):
                if held:
                    holds[target.value] = frozenset(held)
                else:
                    holds.pop(target.value, None)
            elif isinstance(target, cst.Tuple | cst.List):
                for element in target.elements:
                    self.bind([element.value], value, inside)

    def host_read(self, value: cst.CSTNode, inside: list[_Noted], open_loops: list[Loop]) -> None:
        """A host read of `value` in the passes of `open_loops`: the noted subscripts in it,
        or held by its names, are executed per value of an int of an open loop."""
        ids = {id(n.node) for n in inside} | self._held(value)
        if not ids:
            return
        open_set = set(open_loops)
        for found in ids:
            if self._loops_of[found] & open_set:
                self.read.add(found)

    def changed(self, name: str, open_loops: list[Loop]) -> None:
        """`name` is written in place (`name[i] = v`, `name.add_(v)`) or rebound in the
        passes of `open_loops`."""
        for loop in open_loops:
            self._changed.setdefault(loop, set()).add(name)

    # -- questions ------------------------------------------------------------------------
    def read_per_value(self, node: cst.Subscript, loops: frozenset[Loop], base: str) -> bool:
        """Whether a host read executes `node` once per value of its int, in loops that all
        leave the indexed value `base` unchanged (else every pass is a new graph anyway)."""
        if id(node) not in self.read:
            return False
        return all(base not in self._changed.get(loop, ()) for loop in loops)

    def _held(self, value: cst.CSTNode) -> set[int]:
        holds = self._functions[-1].holds
        if not holds:
            return set()
        found: set[int] = set()
        for name in value_names(value):
            found |= holds.get(name, frozenset())
        return found
