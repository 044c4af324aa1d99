"""Why a graph compiled again: the node whose shape changed, read from torch_xla's IR dump.

With `XLA_IR_DEBUG=1` each IR node carries the Python line that created it, and
`XLA_SAVE_TENSORS_FILE` (format `text`) writes every graph a barrier or a host read runs:

    %1 = f32[2,4]{1,0} xla::select(%0), location=take@train.py:9, xla_shape=f32[2,4]{1,0}

A compile whose graph matches an earlier compiled one node for node except for some nodes'
shapes (or ops: a Python number that became a device scalar) is a recompile, and it belongs
to the first node that changed, in graph order: where the changed tensor was made (a slice
taken with a Python int, a batch of a new size moved to the device), not where the barrier
that compiled it stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NODE = re.compile(
    r"^\s*%(?P<id>\d+) = (?P<shape>\(.*?\)|\S+) (?P<op>[\w:.]+)\((?P<operands>[^)]*)\)(?P<rest>.*)$"
)
_LOCATION = re.compile(r"location=(?P<function>[^@,\s]+)@(?P<file>[^:,\s]+):(?P<line>\d+)")
_LAYOUT = re.compile(r"\{[\d,]*\}")
_HASH = re.compile(r"^Graph Hash: (?P<hash>\w+)")


@dataclass(frozen=True)
class Node:
    shape: str  # without layouts: f32[2,4]
    op: str
    operands: str
    function: str | None
    file: str | None  # the file's base name, as torch_xla prints it
    line: int | None

    def same_as(self, other: Node) -> bool:
        return (self.shape, self.op, self.operands) == (other.shape, other.op, other.operands)


@dataclass(frozen=True)
class Recompile:
    """A compile of a graph that differs from an earlier compiled one in `node`'s shape/op."""

    graph_hash: str
    before: Node
    after: Node

    @property
    def change(self) -> str:
        """`f32[1,4] -> f32[2,4]`, or the ops where the shape stayed (a constant that moved)."""
        if self.before.shape != self.after.shape:
            return f"{self.before.shape} -> {self.after.shape}"
        return f"{self.before.op} -> {self.after.op}"


def _node(text: str) -> Node | None:
    match = _NODE.match(text)
    if match is None:
        return None
    where = _LOCATION.search(match["rest"])
    return Node(
        _LAYOUT.sub("", match["shape"]),
        match["op"],
        match["operands"].strip(),
        where["function"] if where else None,
        where["file"] if where else None,
        int(where["line"]) if where else None,
    )


def graphs(lines: Iterable[str], wanted: set[str]) -> dict[str, list[Node]]:
    """The first dumped graph of each hash in `wanted` (the compiled ones), streamed."""
    found: dict[str, list[Node]] = {}
    nodes: list[Node] | None = None
    for raw in lines:
        text = raw.rstrip("\n")
        if text.startswith("## BEGIN_GRAPH"):
            nodes = []
        elif nodes is not None and (match := _HASH.match(text)):
            if match["hash"] in wanted and match["hash"] not in found:
                found[match["hash"]] = nodes
            nodes = None
        elif nodes is not None and (node := _node(text)) is not None:
            nodes.append(node)
    return found


def recompiles(order: list[str], dumped: dict[str, list[Node]]) -> dict[int, Recompile]:
    """For each compile (index into `order`, the compiled hashes in order) that recompiles an
    earlier graph, the first node that changed. The earlier graph is the compiled one of the
    same length that differs from it in the fewest nodes, and at most in half of them."""
    found: dict[int, Recompile] = {}
    seen: list[list[Node]] = []
    for index, graph_hash in enumerate(order):
        graph = dumped.get(graph_hash)
        if graph is None:
            continue
        best: tuple[int, list[Node]] | None = None
        for earlier in seen:
            if len(earlier) != len(graph):
                continue
            changed = sum(not a.same_as(b) for a, b in zip(earlier, graph, strict=True))
            if 0 < changed <= len(graph) // 2 and (best is None or changed < best[0]):
                best = (changed, earlier)
        if best is not None:
            earlier = best[1]
            pairs = enumerate(zip(earlier, graph, strict=True))
            first = next(i for i, (a, b) in pairs if not a.same_as(b))
            found[index] = Recompile(graph_hash, earlier[first], graph[first])
        seen.append(graph)
    return found
