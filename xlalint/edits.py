"""Applying text edits to source, and adding imports the edits need.

Edits address text by 1-based row and 1-based character column, as diagnostics do. Only the
edited spans change: every other character (comments, blank lines, line endings) is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import libcst as cst

from xlalint.analysis.imports import ImportTable
from xlalint.diagnostics import Edit, Location

# Where Python (and libcst) break lines; unlike str.splitlines, not at form feeds, \x1c-\x1e,
# \x85 or \u2028, which may sit inside comments and strings.
LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """`text`'s lines with their endings, broken only where Python breaks lines."""
    return _LINE.findall(text)


class _Offsets:
    """Converts (row, column) locations to string offsets."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [match.end() for match in LINE_BREAK.finditer(text)]
        self._length = len(text)

    def __call__(self, location: Location) -> int:
        row = min(max(location.row, 1), len(self._starts))
        return min(self._starts[row - 1] + location.column - 1, self._length)


def newline_of(text: str) -> str:
    """The file's line ending, so inserted lines match it."""
    crlf = text.count("\r\n")
    lf, cr = text.count("\n") - crlf, text.count("\r") - crlf
    if cr > max(crlf, lf):
        return "\r"  # old Mac line endings, which Python still reads
    return "\r\n" if crlf and crlf >= lf else "\n"


def _with_newline(content: str, newline: str) -> str:
    if newline == "\n":
        return content
    return content.replace("\r\n", "\n").replace("\n", newline)


def spans_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two edits touch the same text. An insertion at the start of another edit
    conflicts too: the order of the two would be arbitrary."""
    if a[0] < b[1] and b[0] < a[1]:
        return True
    return a[0] == b[0] and (a[0] == a[1] or b[0] == b[1])


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits (the caller guarantees they do not overlap)."""
    offsets = _Offsets(text)
    newline = newline_of(text)
    spans = sorted(
        ((offsets(e.start), offsets(e.end), e.content) for e in edits), key=lambda s: s[:2]
    )
    pieces: list[str] = []
    cursor = 0
    for start, end, content in spans:
        pieces.append(text[cursor:start])
        pieces.append(_with_newline(content, newline))
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def edit_spans(text: str, edits: Iterable[Edit]) -> list[tuple[int, int]]:
    offsets = _Offsets(text)
    return [(offsets(e.start), offsets(e.end)) for e in edits]


def _bindings(statement: str) -> dict[str, str]:
    table = ImportTable()
    parsed = cst.parse_statement(statement)
    assert isinstance(parsed, cst.SimpleStatementLine)
    for small in parsed.body:
        assert isinstance(small, cst.Import | cst.ImportFrom)
        table.add(small)
    return table.bindings


def add_imports(text: str, statements: Iterable[str]) -> str:
    """Add each import statement the file does not already have, after its last top-level
    import (or its docstring and `__future__` imports), in the file's line ending."""
    wanted = list(dict.fromkeys(statements))
    if not wanted:
        return text
    module = cst.parse_module(text)
    existing = ImportTable()
    existing.add_top_level(module)
    missing = [
        s for s in wanted if any(existing.bindings.get(k) != v for k, v in _bindings(s).items())
    ]
    if not missing:
        return text
    row = _insertion_row(module)
    newline = newline_of(text)
    lines = split_lines(text)
    if lines and row >= len(lines) and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    block = "".join(statement + newline for statement in missing)
    lines.insert(row, block)
    return "".join(lines)


def _insertion_row(module: cst.Module) -> int:
    """The 0-based line index before which new imports go: after the first run of imports
    (and a leading docstring), else after the file's header comments."""
    position = row = len(module.header)
    for index, statement in enumerate(module.body):
        height = len(LINE_BREAK.findall(module.code_for_node(statement)))
        if _is_import(statement) or (index == 0 and _is_docstring(statement)):
            row = position + height
        else:
            break
        position += height
    return row


def _small(statement: cst.BaseStatement) -> cst.BaseSmallStatement | None:
    if isinstance(statement, cst.SimpleStatementLine) and statement.body:
        return statement.body[0]
    return None


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(_small(statement), cst.Import | cst.ImportFrom)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    small = _small(statement)
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)
