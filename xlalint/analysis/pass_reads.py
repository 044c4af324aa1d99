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
with, and no tensor that read reads (the indexed one included) is written in place or
rebound in that loop.

`PassReads` is fed by XLA207 during the engine's single walk: marks at calls, assignments and
block entries, and names bound in the pass; nothing is walked again.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from xlalint.analysis.loop_values import Loop
from xlalint.analysis.value_names import value_names


@dataclass
class Noted:
    node: cst.Subscript
    loops: frozenset[Loop]
    base: str  # the indexed value's code: `tokens`, `self.cache`


@dataclass(frozen=True)
class Flow:
    """What a value carries: the noted subscripts it holds, and the names it reads, each
    with the loops whose pass was open where it was read (None: at the host read itself)."""

    ids: frozenset[int] = frozenset()
    names: frozenset[tuple[str, frozenset[Loop] | None]] = frozenset()

    def __or__(self, other: Flow) -> Flow:
        return Flow(self.ids | other.ids, self.names | other.names)

    def reads_changed(self, loop: Loop, changed: set[str]) -> bool:
        """Whether a name read within the pass of `loop` is one that loop changes."""
        return any(
            name in changed and (within is None or loop in within) for name, within in self.names
        )


_EMPTY = Flow()


@dataclass(frozen=True)
class _Read:
    flow: Flow
    loops: frozenset[Loop]  # the loops whose pass was walked at the read


class PassReads:
    """Follows noted subscripts into names and host reads, one function at a time; decides
    once the walk is over, when every write of every loop is known."""

    def __init__(self) -> None:
        self._holds: list[dict[str, Flow]] = [{}]  # per function: name -> what it holds
        self._noted: list[Noted] = []
        self._by_id: dict[int, Noted] = {}
        self._marks: dict[int, int] = {}  # id(node) -> len(self._noted) when it was entered
        self._reads: list[_Read] = []
        self._changed: dict[Loop, set[str]] = {}  # loop -> names written or rebound in it
        self._decided: set[int] | None = None
        self._read_by: dict[int, frozenset[int]] = {}

    # -- feeding --------------------------------------------------------------------------
    def push_function(self) -> None:
        self._holds.append({})

    def pop_function(self) -> None:
        self._holds.pop()

    def note(self, node: cst.Subscript, loops: frozenset[Loop], base: str) -> None:
        """A subscript of the tensor `base` at an int that changes with `loops`."""
        noted = Noted(node, loops, base)
        self._noted.append(noted)
        self._by_id[id(node)] = noted

    def mark(self, node: cst.CSTNode) -> None:
        """`node` (a call, an assignment, a `for` or `if`) starts: subscripts noted from now
        on, until `since(node)`, are inside it."""
        self._marks[id(node)] = len(self._noted)

    def since(self, node: cst.CSTNode) -> list[Noted]:
        start = self._marks.pop(id(node), None)
        return [] if start is None else self._noted[start:]

    def bind(
        self,
        targets: list[cst.BaseExpression],
        value: cst.BaseExpression,
        inside: list[Noted],
        open_loops: list[Loop],
        names: set[str] | None = None,
    ) -> None:
        """`targets = value` (or a `for` target and its iterable): names now hold the noted
        subscripts of `value` and what its names held (`names`: `value`'s, if known)."""
        written = {id(t) for t in targets}
        flow = self._flow(value, [n for n in inside if id(n.node) not in written], names)
        within = frozenset(open_loops)
        flow = Flow(flow.ids, frozenset((n, w or within) for n, w in flow.names))
        holds = self._holds[-1]
        for target in targets:
            if isinstance(target, cst.Name):
                holds[target.value] = flow
            elif isinstance(target, cst.Tuple | cst.List):
                for element in target.elements:
                    self.bind([element.value], value, inside, open_loops, names)

    def host_read(self, value: cst.CSTNode, inside: list[Noted], open_loops: list[Loop]) -> None:
        """A host read of `value` in the passes of `open_loops`."""
        self.read_later(self.carried(value, inside), open_loops)

    def carried(self, value: cst.CSTNode, inside: list[Noted]) -> Flow:
        """What `value` carries (`inside`: the noted subscripts within it), for a read that
        is known only later (a helper of the module that reads its argument)."""
        return self._flow(value, inside)

    def read_later(self, flow: Flow, open_loops: list[Loop] | frozenset[Loop]) -> None:
        """A host read of a value that carried `flow` in the passes of `open_loops`; before
        the first question."""
        if flow.ids:
            self._reads.append(_Read(flow, frozenset(open_loops)))

    def holds_any(self, value: cst.CSTNode) -> bool:
        """Whether a name `value` reads holds noted subscripts (in the function walked)."""
        holds = self._holds[-1]
        return any(holds.get(name, _EMPTY).ids for name in value_names(value))

    def changed(self, name: str, open_loops: list[Loop]) -> None:
        """`name` is written in place (`name[i] = v`, `name.add_(v)`) or rebound in the
        passes of `open_loops`."""
        for loop in open_loops:
            self._changed.setdefault(loop, set()).add(name)

    # -- questions, after the walk --------------------------------------------------------
    def read_per_value(self, node: cst.Subscript) -> bool:
        """Whether a host read executes `node` once per value of its int: in a pass of a
        loop the int changes with, reading nothing that loop writes or rebinds (else every
        pass is a new graph anyway, whatever the index)."""
        if self._decided is None:
            self._decided = self._decide()
        return id(node) in self._decided

    def reads_of(self, node: cst.Subscript) -> frozenset[int]:
        """The host reads (numbered in walk order) that execute `node` once per value of its
        int: a subscript that two of them read is in the graph of each."""
        if self._decided is None:
            self._decided = self._decide()
        return self._read_by.get(id(node), frozenset())

    def _decide(self) -> set[int]:
        decided: set[int] = set()
        read_by: dict[int, set[int]] = {}
        for number, read in enumerate(self._reads):
            for found in read.flow.ids:
                noted = self._by_id[found]
                loops = noted.loops & read.loops
                if loops and not any(
                    read.flow.reads_changed(loop, self._changed.get(loop, set())) for loop in loops
                ):
                    decided.add(found)
                    read_by.setdefault(found, set()).add(number)
        self._read_by = {found: frozenset(numbers) for found, numbers in read_by.items()}
        return decided

    def _flow(self, value: cst.CSTNode, inside: list[Noted], read: set[str] | None = None) -> Flow:
        holds = self._holds[-1]
        names = {n.base for n in inside} | (set(value_names(value)) if read is None else read)
        flow = Flow(frozenset(id(n.node) for n in inside), frozenset((n, None) for n in names))
        for name in names:
            held = holds.get(name)
            if held is not None:
                flow = flow | held
        return flow
