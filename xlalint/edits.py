"""Applying text edits to source, and keeping rewritten lines within the line length (the
imports edits need are `importer.py`'s).

Edits address text by 1-based row and 1-based character column, as diagnostics do. Only the
edited spans change: every other character (comments, blank lines, line endings) is kept.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence

import libcst as cst
from libcst.metadata import CodeRange

from xlalint.cst_parse import parse_module
from xlalint.diagnostics import Edit, Location
from xlalint.positions import focused_positions

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


# -- keeping rewritten lines within the line length --------------------------------------------


def apply_edits_marking(text: str, edits: Sequence[Edit]) -> tuple[str, set[int]]:
    """`apply_edits`, and the 1-based rows of the result that an edit wrote to."""
    offsets = _Offsets(text)
    newline = newline_of(text)
    spans = sorted(
        ((offsets(e.start), offsets(e.end), e.content) for e in edits), key=lambda s: s[:2]
    )
    pieces: list[str] = []
    written: list[tuple[int, int]] = []
    cursor = length = 0
    for start, end, content in spans:
        pieces.append(text[cursor:start])
        length += start - cursor
        new = _with_newline(content, newline)
        pieces.append(new)
        written.append((length, length + len(new)))
        length += len(new)
        cursor = end
    pieces.append(text[cursor:])
    result = "".join(pieces)
    starts = [0] + [match.end() for match in LINE_BREAK.finditer(result)]
    rows = set()
    for start, end in written:
        first = bisect_right(starts, start)
        last = bisect_right(starts, max(start, end - 1))
        rows.update(range(first, last + 1))
    return result, rows


def wrap_long_lines(text: str, rows: Iterable[int], line_length: int) -> str:
    """`text` with each of `rows` (1-based) that is longer than `line_length` wrapped as
    ruff's formatter would: the call that ends last on the line gets its arguments on an
    indented line of their own, or one a line with a trailing comma where they do not fit
    on one. Rows with no such call, or that would still not fit or not parse, stay as they
    are."""
    lines = split_lines(text)
    long_rows = sorted(
        (r for r in set(rows) if 0 < r <= len(lines) and _width(lines[r - 1]) > line_length),
        reverse=True,  # bottom up: a wrap moves only the rows below it
    )
    if not long_rows:
        return text
    try:
        module = parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return text
    positions = focused_positions(module, text, rows=long_rows)
    newline = newline_of(text)
    calls = [
        (positions[node], node)
        for node in positions.nodes_of(frozenset({cst.Call}))
        if node.args  # type: ignore[attr-defined]
    ]
    for row in long_rows:
        on_row = [
            (where, call) for where, call in calls if where.start.line == where.end.line == row
        ]
        if not on_row:
            continue
        # The call ending last, the outermost of those ending there: ruff's right-hand split.
        where, call = max(on_row, key=lambda item: (item[0].end.column, -item[0].start.column))
        wrapped = _wrapped_call(module, call, lines[row - 1], where, newline, line_length)
        if wrapped is None:
            continue
        candidate = "".join([*lines[: row - 1], wrapped, *lines[row:]])
        try:
            parse_module(candidate)
        except (cst.ParserSyntaxError, RecursionError):
            continue
        lines = split_lines(candidate)
    return "".join(lines)


def _width(line: str) -> int:
    return len(LINE_BREAK.sub("", line))


def _wrapped_call(
    module: cst.Module, call: cst.Call, line: str, where: CodeRange, newline: str, limit: int
) -> str | None:
    """`line` with `call`'s arguments split over lines, or None if the call cannot be."""
    if any(
        isinstance(arg.comma, cst.Comma)
        and not isinstance(arg.comma.whitespace_after, cst.SimpleWhitespace)
        for arg in call.args
    ):
        return None  # a comment or line break among the arguments: not a one-line call
    body = LINE_BREAK.sub("", line)
    ending = line[len(body) :]
    start, end = where.start.column, where.end.column
    code = body[start:end]
    func = module.code_for_node(call.func)
    if not code.startswith(func) or not code.endswith(")"):
        return None
    head = body[:start] + code[: code.index("(", len(func)) + 1]
    tail = body[end - 1 :]
    indent = body[: len(body) - len(body.lstrip())]
    inner = indent + " " * 4
    arguments = [
        module.code_for_node(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip()
        for arg in call.args
    ]
    one_line = inner + ", ".join(arguments)
    if len(one_line) <= limit and not _has_trailing_comma(call):
        middle = one_line + newline
    else:  # one a line, with the trailing comma that keeps ruff's formatter from joining them
        middle = "".join(f"{inner}{argument},{newline}" for argument in arguments)
    wrapped = f"{head}{newline}{middle}{indent}{tail}"
    if any(_width(part) > limit for part in split_lines(wrapped)):
        return None  # it would still not fit (deep indentation, one long argument): leave it
    return wrapped + ending


def _has_trailing_comma(call: cst.Call) -> bool:
    return isinstance(call.args[-1].comma, cst.Comma)
