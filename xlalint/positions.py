"""Line and column of the nodes that findings and fixes name.

libcst's `PositionProvider` regenerates the whole module and, token by token, splits each
token on newlines to keep a line and column current, then builds a `CodeRange` for every
node: a fifth of a lint for each file with findings. The regeneration itself is cheap. So
the same codegen runs here with a state that only counts characters, and the few nodes
asked about get their line and column from the source's table of line starts.

The ranges equal `PositionProvider`'s (the tests compare them node by node), including
its syntactic ranges (`record_syntactic_position`: a function's range starts at `def`,
not at its decorators' leading comments).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

# Newlines as libcst's position tracking counts them.
_NEWLINE = re.compile(r"\r\n?|\n")


@dataclass
class _OffsetState(CodegenState):
    """Codegen that records each node's (start, end) character offsets."""

    offset: int = 0
    popped: str = ""  # the newline libcst adds for its own codegen to a file without one
    # id(node): (node, start, end). Keyed by `id` (what a node's `__hash__` returns, but
    # that is a Python call, one more per node); holding the node keeps its id its own.
    spans: dict[int, tuple[cst.CSTNode, int, int]] = field(default_factory=dict)
    _starts: list[int] = field(default_factory=list)
    # (node, start node, end node, start offset) of the syntactic ranges being written
    _syntactic: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None, int]] = field(
        default_factory=list
    )

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        self.offset += sum(map(len, self.indent_tokens))

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.popped = self.tokens.pop()

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        # A syntactic range recorded inside the node's codegen takes precedence.
        self.spans.setdefault(id(node), (node, start, self.offset))

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _OffsetState:
        """The state is its own context manager here: libcst enters this for most nodes,
        and a generator-based `contextmanager` costs several calls more each time."""
        self._syntactic.append((node, start_node, end_node, self.offset))
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        node, start_node, end_node, start = self._syntactic.pop()
        end = self.offset
        if start_node is not None:
            start = self.spans[id(start_node)][1]
        if end_node is not None:
            end = self.spans[id(end_node)][2]
        self.spans[id(node)] = (node, start, end)


class Positions:
    """`positions[node]` is the node's `CodeRange`, as `PositionProvider` gives it."""

    def __init__(self, module: cst.Module, text: str | None = None) -> None:
        """`text`: the source `module` was parsed from (None: the module's own code)."""
        state = _OffsetState(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        module._codegen(state)
        self._fallback: dict[cst.CSTNode, CodeRange] | None = None
        generated = "".join(state.tokens)
        if text is None:
            text = generated
        elif generated != text:  # not this text's tree: ask libcst itself
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            self._fallback = dict(wrapper.resolve(PositionProvider))
        self._spans = state.spans
        self.text = text
        # Ranges at the end of a file without a final newline count the one libcst added.
        counted = text + state.popped
        self._line_starts = [0, *(match.end() for match in _NEWLINE.finditer(counted))]

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if self._fallback is not None:
            return self._fallback[node]
        _, start, end = self._spans[id(node)]
        return CodeRange(self._position(start), self._position(end))

    def nodes_of(self, types: frozenset[type[cst.CSTNode]]) -> Iterator[cst.CSTNode]:
        """Every node of one of `types` (exact types), children before their parents."""
        if self._fallback is not None:
            return (node for node in self._fallback if type(node) in types)
        return (node for node, _, _ in self._spans.values() if type(node) in types)

    def _position(self, offset: int) -> CodePosition:
        line = bisect_right(self._line_starts, offset)
        return CodePosition(line, offset - self._line_starts[line - 1])


_last: list[tuple[cst.Module, Positions]] = []


def positions_of(module: cst.Module, text: str | None = None) -> Positions:
    """`Positions(module, text)`, computed once for the module being linted: the rules that
    name another node's line in a message (a helper's slice, its read) and the engine that
    places the findings share one codegen."""
    if not _last or _last[0][0] is not module or (text is not None and _last[0][1].text != text):
        _last[:] = [(module, Positions(module, text))]
    return _last[0][1]
