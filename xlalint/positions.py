"""Line and column of the nodes that findings and fixes name.

libcst's `PositionProvider` regenerates the whole module and, token by token, splits each
token on newlines to keep a line and column current, then builds a `CodeRange` for every
node: a fifth of a lint for each file with findings. The regeneration itself is cheap. So
the same codegen runs here with a state that only counts characters, and the few nodes
asked about get their line and column from the source's table of line starts.

The ranges equal `PositionProvider`'s (the tests compare them node by node), including
its syntactic ranges (`record_syntactic_position`: a function's range starts at `def`,
not at its decorators' leading comments).

With a `Focus` (the nodes that will be asked about, and rows whose comments matter) the
codegen writes only the statements on the way to them: libcst statements start at line
starts, so a statement that holds none of them is passed over by jumping to the row where
the next one starts, which CPython's tree of the same text gives (its first token's row,
less the next statement's leading lines). What is written is checked against the text;
where it differs, or a node asked about was passed over, the whole codegen runs.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from xlalint import lint_memo

# Rows as libcst's position tracking counts them: each with its line break.
_ROW = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


@dataclass
class _OffsetState(CodegenState):
    """Codegen that records each node's (start, end) character offsets."""

    offset: int = 0
    popped: str = ""  # the newline libcst adds for its own codegen to a file without one
    # id(node): (node, start, end). Keyed by `id` (what a node's `__hash__` returns, but
    # that is a Python call, one more per node); holding the node keeps its id its own.
    # A partial codegen leaves a bound None where it passed over the node that gives it.
    spans: dict[int, tuple[cst.CSTNode, int | None, int | None]] = field(default_factory=dict)
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
        begin: int | None = start
        end: int | None = self.offset
        spans = self.spans
        # (A partial codegen may have passed over the start or end node: no bound then.)
        if start_node is not None:
            try:
                begin = spans[id(start_node)][1]
            except KeyError:
                begin = None
        if end_node is not None:
            try:
                end = spans[id(end_node)][2]
            except KeyError:
                end = None
        spans[id(node)] = (node, begin, end)


@dataclass(frozen=True)
class Focus:
    """What a partial codegen must write: every statement that holds one of `holders` or
    one of `rows` (and a block's first statement where the block is a target: its range
    starts there). The ranges of the nodes written are exact, whatever they pass over."""

    targets: frozenset[int]  # ids of the nodes whose ranges will be asked
    holders: frozenset[int]  # ids of those nodes and of all their ancestors
    rows: tuple[int, ...]  # sorted rows whose every node (a comment on them) must be written
    tree: ast.Module  # CPython's tree of the same text: the rows where statements start

    @classmethod
    def of(
        cls,
        nodes: Iterable[cst.CSTNode],
        parent_of: Mapping[int, cst.CSTNode | None],
        rows: Iterable[int],
        tree: ast.Module,
    ) -> Focus:
        """The focus on `nodes`, whose ancestors `parent_of` gives (by id; the module's
        parent is None). A node it does not know (punctuation, whitespace: not walked) is
        written only if its statement is for another reason."""
        targets = {id(node) for node in nodes}
        holders: set[int] = set()
        for key in targets:
            while key not in holders and key in parent_of:
                holders.add(key)
                parent = parent_of[key]
                if parent is None:
                    break
                key = id(parent)
        return cls(frozenset(targets), frozenset(holders), tuple(sorted(set(rows))), tree)


# libcst's compound statements and the CPython statements they parse to.
_COMPOUND: dict[type[cst.CSTNode], tuple[type[ast.stmt], ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.Try: (ast.Try,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Match: (ast.Match,),
}
if hasattr(cst, "TryStar") and hasattr(ast, "TryStar"):
    _COMPOUND[cst.TryStar] = (ast.TryStar,)
_AST_COMPOUND = frozenset(kind for kinds in _COMPOUND.values() for kind in kinds)
_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _first_row(statement: ast.stmt) -> int:
    """The row of the statement's first token (its first decorator's)."""
    if isinstance(statement, _DECORATED) and statement.decorator_list:
        return statement.decorator_list[0].lineno
    return statement.lineno


def _inner_bodies(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists directly under a compound statement, and those of its `elif`s
    (which libcst nests in the `If` node, not in a block)."""
    for name in ("body", "orelse", "finalbody"):
        body = getattr(statement, name, None)
        if body:
            yield body
    for clause in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
        yield clause.body
    if type(statement) is ast.If and len(statement.orelse) == 1:
        inner = statement.orelse[0]
        if type(inner) is ast.If:
            yield from _inner_bodies(inner)


@dataclass
class _PartialState(_OffsetState):
    """An `_OffsetState` that passes over the statements outside its focus."""

    text: str = ""
    line_starts: Sequence[int] = ()
    focus: Focus | None = None
    # CPython's statement lists by the row of their first statement, filled as the
    # codegen enters the compound statements it writes.
    bodies: dict[int, list[ast.stmt]] = field(default_factory=dict)

    def write_statements(self, owner: cst.CSTNode, body: Sequence[cst.BaseStatement]) -> None:
        """Write `body`, the statements of `owner` (a module or a block), passing over
        those outside the focus (never the last: where it ends, the tree does not say)."""
        lined_up = self._line_up(body)
        if lined_up is None:
            for statement in body:
                statement._codegen(self)
            return
        paired, starts = lined_up
        focus = self.focus
        assert focus is not None
        rows, holders = focus.rows, focus.holders
        first_needed = id(owner) in focus.targets  # its range starts at its first statement
        last = len(body) - 1
        for index, statement in enumerate(body):
            if (
                index < last
                and id(statement) not in holders
                and not (index == 0 and first_needed)
                and not (rows and _any_between(rows, starts[index], starts[index + 1]))
            ):
                skip_to = self.line_starts[starts[index + 1] - 1]
                self.tokens.append(self.text[self.offset : skip_to])
                self.offset = skip_to
                continue
            if type(statement) in _COMPOUND:
                for inner in _inner_bodies(paired[index]):
                    self.bodies.setdefault(_first_row(inner[0]), inner)
            statement._codegen(self)

    def _line_up(
        self, body: Sequence[cst.BaseStatement]
    ) -> tuple[list[ast.stmt], list[int]] | None:
        """CPython's statement for each of `body` (the first of a line of small statements)
        and the row where each starts (its leading lines included); None where CPython's
        tree does not line up with `body` at the offset the codegen is at."""
        line_starts = self.line_starts
        row = bisect_right(line_starts, self.offset)
        if not body or line_starts[row - 1] != self.offset:
            return None
        listed = self.bodies.get(row + len(body[0].leading_lines))
        if listed is None:
            return None
        paired: list[ast.stmt] = []
        starts: list[int] = []
        index = 0
        previous = row - 1
        for statement in body:
            if index >= len(listed):
                return None
            parsed = listed[index]
            kinds = _COMPOUND.get(type(statement))
            if kinds is None:
                if type(statement) is not cst.SimpleStatementLine or type(parsed) in _AST_COMPOUND:
                    return None
                index += len(statement.body)  # type: ignore[attr-defined]
            elif type(parsed) in kinds:
                index += 1
            else:
                return None
            start = _first_row(parsed) - len(statement.leading_lines)
            if start <= previous:
                return None
            paired.append(parsed)
            starts.append(start)
            previous = start
        if index != len(listed) or starts[0] != row:
            return None
        return paired, starts


def _any_between(rows: Sequence[int], first: int, stop: int) -> bool:
    """Whether a row of the sorted `rows` is in [first, stop)."""
    at = bisect_left(rows, first)
    return at < len(rows) and rows[at] < stop


_block_codegen = cst.IndentedBlock._codegen_impl


def _partial_block_codegen(self: cst.IndentedBlock, state: CodegenState, **kwargs: Any) -> None:
    """`IndentedBlock._codegen_impl`, passing over statements for a `_PartialState`.

    libcst's block writes its statements itself; no hook of the state can pass over one.
    Any other state gets libcst's own codegen."""
    if type(state) is not _PartialState:
        _block_codegen(self, state, **kwargs)
        return
    self.header._codegen(state)
    indent = self.indent
    state.increase_indent(state.default_indent if indent is None else indent)
    if self.body:
        with state.record_syntactic_position(self, start_node=self.body[0], end_node=self.body[-1]):
            state.write_statements(self, self.body)
    else:
        state.add_indent_tokens()
        with state.record_syntactic_position(self):
            state.add_token("pass")
        state.add_token(state.default_newline)
    for line in self.footer:
        line._codegen(state)
    state.decrease_indent()


cst.IndentedBlock._codegen_impl = _partial_block_codegen  # type: ignore[method-assign]


def _module_codegen(module: cst.Module, state: _PartialState) -> None:
    """`Module._codegen`, passing over the statements outside the state's focus."""
    state.before_codegen(module)
    for line in module.header:
        line._codegen(state)
    state.write_statements(module, module.body)
    for line in module.footer:
        line._codegen(state)
    if module.has_trailing_newline:
        if not state.tokens:
            state.add_token(state.default_newline)
    else:
        state.pop_trailing_newline()
    state.after_codegen(module)


def _line_starts(text: str) -> list[int]:
    return [0, *accumulate(map(len, _ROW.findall(text)))]


class Positions:
    """`positions[node]` is the node's `CodeRange`, as `PositionProvider` gives it."""

    def __init__(
        self, module: cst.Module, text: str | None = None, focus: Focus | None = None
    ) -> None:
        """`text`: the source `module` was parsed from (None: the module's own code).
        `focus`: write only what it asks for (`text` given); another node asked about
        makes the whole codegen run then."""
        self._module = module
        self._fallback: dict[cst.CSTNode, CodeRange] | None = None
        self._whole: Positions | None = None
        self.partial = False
        if focus is not None and text is not None and focus.tree.body and not _lone_cr(text):
            line_starts = _line_starts(text)
            partial = _PartialState(
                default_indent=module.default_indent,
                default_newline=module.default_newline,
                text=text,
                line_starts=line_starts,
                focus=focus,
            )
            first = focus.tree.body[0]
            partial.bodies[_first_row(first)] = focus.tree.body
            _module_codegen(module, partial)
            if "".join(partial.tokens) == text:
                self.partial = True
                self._spans = partial.spans
                self.text = text
                self._line_starts = line_starts
                if partial.popped:
                    self._line_starts = _line_starts(text + partial.popped)
                return
        state = _OffsetState(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        module._codegen(state)
        generated = "".join(state.tokens)
        if text is None:
            text = generated
        elif generated != text:  # not this text's tree: ask libcst itself
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            self._fallback = dict(wrapper.resolve(PositionProvider))
        self._spans = state.spans
        self.text = text
        # Ranges at the end of a file without a final newline count the one libcst added.
        self._line_starts = _line_starts(text + state.popped)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if self._fallback is not None:
            return self._fallback[node]
        if self._whole is not None:
            return self._whole[node]
        try:
            _, start, end = self._spans[id(node)]
        except KeyError:
            if not self.partial:
                raise
            start = end = None
        if start is None or end is None:
            return self._complete()[node]
        return CodeRange(self._position(start), self._position(end))

    def nodes_of(self, types: frozenset[type[cst.CSTNode]]) -> Iterator[cst.CSTNode]:
        """Every node of one of `types` (exact types), children before their parents;
        of a partial codegen, those it wrote (every one in a statement it wrote)."""
        if self._fallback is not None:
            return (node for node in self._fallback if type(node) in types)
        if self._whole is not None:
            return self._whole.nodes_of(types)
        return (node for node, _, _ in self._spans.values() if type(node) in types)

    def _complete(self) -> Positions:
        """The whole codegen, for a node a partial one passed over."""
        if self._whole is None:
            self._whole = Positions(self._module, self.text)
        return self._whole

    def _position(self, offset: int) -> CodePosition:
        line = bisect_right(self._line_starts, offset)
        return CodePosition(line, offset - self._line_starts[line - 1])


def _lone_cr(text: str) -> bool:
    """Whether a carriage return ends a row alone (CPython's rows may count it otherwise)."""
    return "\r" in text and "\r" in text.replace("\r\n", "")


def focused_positions(
    module: cst.Module,
    text: str,
    *,
    statements: Iterable[cst.BaseStatement] = (),
    rows: Iterable[int] = (),
) -> Positions:
    """`Positions(module, text)` for what the fixer asks of a text it made: the module-level
    `statements` (imports it removes) and every node on `rows` (lines it wraps). Only the
    statements holding them are written, where CPython's tree of `text` places the others;
    where CPython does not parse `text` (libcst's grammar may be newer), the whole codegen."""
    from xlalint.engine import cpython_parse  # (the engine uses positions)

    tree = cpython_parse(text, "<fixed>")[1]
    if tree is None:
        return Positions(module, text)
    listed = list(statements)
    parents: dict[int, cst.CSTNode | None] = {id(module): None}
    parents.update((id(statement), module) for statement in listed)
    return Positions(module, text, Focus.of(listed, parents, rows, tree))


# The module being linted and its positions (emptied, with the tree, when the lint ends).
_last: dict[str, tuple[cst.Module, Positions]] = lint_memo.scratch()


def positions_of(
    module: cst.Module, text: str | None = None, focus: Focus | None = None
) -> Positions:
    """`Positions(module, text, focus)`, computed once for the module being linted: the
    rules that name another node's line in a message (a helper's slice, its read) and the
    engine that places the findings share one codegen."""
    last = _last.get("last")
    if last is None or last[0] is not module or (text is not None and last[1].text != text):
        last = _last["last"] = (module, Positions(module, text, focus))
    return last[1]
