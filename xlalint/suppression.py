"""`# noqa` comments, with ruff's semantics.

- `# noqa` on a finding's line suppresses every finding there; `# noqa: XLA101, XLA104`
  suppresses only those codes (commas or spaces between them, any case).
- A finding inside a multi-line string, or on a backslash-continued line, is suppressed by a
  `# noqa` at the end of that string or continued line, which is where a comment can go.
- `# xlalint: noqa` on a line of its own silences the whole file; `# xlalint: noqa: XLA101`
  only those codes.
- A code may be a prefix, as in `--select` and `per-file-ignores`: `# noqa: XLA1` covers
  XLA101 to XLA199 (a user who wrote it meant that; ignoring it silently helped no one).

Only comments count: `"# noqa"` inside a string literal does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from xlalint.positions import Positions

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_FILE_NOQA = re.compile(
    r"^#\s*xlalint\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

ALL = None  # a directive without codes covers every code


@dataclass
class Suppressions:
    """The noqa directives of one file."""

    file_codes: set[str] | None = field(default_factory=set)  # None: the whole file
    line_codes: dict[int, set[str] | None] = field(default_factory=dict)
    noqa_row_for: dict[int, int] = field(default_factory=dict)

    def noqa_row(self, row: int) -> int:
        return self.noqa_row_for.get(row, row)

    def suppresses(self, code: str, row: int) -> bool:
        if self.file_codes is None or _covers(self.file_codes, code):
            return True
        target = self.noqa_row(row)
        if target not in self.line_codes:
            return False
        codes = self.line_codes[target]
        return codes is None or _covers(codes, code)


def _covers(codes: set[str], code: str) -> bool:
    """Whether one of `codes` is `code` or a prefix of it."""
    return any(code.startswith(listed) for listed in codes)


def _codes(match: re.Match[str]) -> set[str] | None:
    raw = match.group("codes")
    if raw is None:
        return ALL
    return {code.upper() for code in _CODE.findall(raw)}


def _merge(existing: set[str] | None, new: set[str] | None) -> set[str] | None:
    if existing is None or new is None:
        return None
    return existing | new


_MENTION = re.compile("noqa", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\r\n?|\n")


def directive_rows(source: str) -> list[int]:
    """The rows that mention noqa (in a comment or not): every directive is on one."""
    return [source.count("\n", 0, match.start()) + 1 for match in _MENTION.finditer(source)]


def parse_suppressions(source: str, positions: Positions | None = None) -> Suppressions:
    """The directives of `source`, read from its syntax tree: comments are `Comment` nodes
    (never text inside a string), multi-line strings are string nodes spanning lines.
    `positions` are the parsed file's, when the caller has them. Positions of a partial
    codegen give what their focus holds: the directives on its rows (`directive_rows`)
    and the strings around its nodes, which is all that findings on those nodes need."""
    if positions is None:
        positions = Positions(cst.parse_module(source), source)
    result = Suppressions()
    for row, text, own_line in _comments(positions):
        if own_line and (file_match := _FILE_NOQA.match(text)):
            result.file_codes = _merge(result.file_codes, _codes(file_match))
            continue
        if line_match := _NOQA.search(text):
            result.line_codes[row] = _merge(result.line_codes.get(row, set()), _codes(line_match))
    for string in positions.nodes_of(_STRINGS):
        where = positions[string]
        for row in range(where.start.line, where.end.line):
            result.noqa_row_for[row] = where.end.line
    _map_continuations(source, result.noqa_row_for)
    return result


# Every comment hangs off one of these: a line of its own, or the end of a line of code.
_COMMENT_LINES = frozenset({cst.EmptyLine, cst.TrailingWhitespace})
# String tokens (a concatenation is several); an f-string counts whole, as `tokenize` saw it.
# (libcst has t-strings, `TemplatedString`, from 1.8.1 on; older releases cannot parse them.)
_STRINGS = frozenset(
    {cst.SimpleString, cst.FormattedString, *filter(None, [getattr(cst, "TemplatedString", None)])}
)


def _comments(positions: Positions) -> list[tuple[int, str, bool]]:
    """(row, text, on a line of its own) of every comment."""
    found = []
    for line in positions.nodes_of(_COMMENT_LINES):
        comment = line.comment  # type: ignore[attr-defined]
        if comment is not None:
            found.append(
                (positions[comment].start.line, comment.value, type(line) is cst.EmptyLine)
            )
    return found


def _map_continuations(source: str, mapping: dict[int, int]) -> None:
    """Rows ending in a backslash take the noqa of the row where the statement continues to."""
    # Rows as the parser counts them (`splitlines` also breaks at form feeds and the like).
    lines = _LINE_BREAK.split(source)
    row = len(lines)
    target = row
    while row >= 1:
        if lines[row - 1].endswith("\\") and row not in mapping:
            mapping[row] = mapping.get(target, target)
        else:
            target = row
        row -= 1
