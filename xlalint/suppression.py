"""`# noqa` comments, with ruff's semantics.

- `# noqa` on a finding's line suppresses every finding there; `# noqa: XLA101, XLA104`
  suppresses only those codes (commas or spaces between them, any case).
- A finding inside a multi-line string, or on a backslash-continued line, is suppressed by a
  `# noqa` at the end of that string or continued line, which is where a comment can go.
- `# xlalint: noqa` on a line of its own silences the whole file; `# xlalint: noqa: XLA101`
  only those codes.

Only comments count: `"# noqa"` inside a string literal does nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

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
        if self.file_codes is None or code in self.file_codes:
            return True
        target = self.noqa_row(row)
        if target not in self.line_codes:
            return False
        codes = self.line_codes[target]
        return codes is None or code in codes


def _codes(match: re.Match[str]) -> set[str] | None:
    raw = match.group("codes")
    if raw is None:
        return ALL
    return {code.upper() for code in _CODE.findall(raw)}


def _merge(existing: set[str] | None, new: set[str] | None) -> set[str] | None:
    if existing is None or new is None:
        return None
    return existing | new


def parse_suppressions(source: str) -> Suppressions:
    result = Suppressions()
    try:
        comments, multiline_strings = _scan_tokens(source)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        comments, multiline_strings = _scan_lines(source), []
    for row, text, own_line in comments:
        if own_line and (file_match := _FILE_NOQA.match(text)):
            result.file_codes = _merge(result.file_codes, _codes(file_match))
            continue
        if line_match := _NOQA.search(text):
            result.line_codes[row] = _merge(result.line_codes.get(row, set()), _codes(line_match))
    for start, end in multiline_strings:
        for row in range(start, end):
            result.noqa_row_for[row] = end
    _map_continuations(source, result.noqa_row_for)
    return result


def _scan_tokens(source: str) -> tuple[list[tuple[int, str, bool]], list[tuple[int, int]]]:
    comments: list[tuple[int, str, bool]] = []
    strings: list[tuple[int, int]] = []
    lines = source.splitlines()
    fstring_start: int | None = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = tok.type
        if kind == tokenize.COMMENT:
            row, col = tok.start
            own_line = row <= len(lines) and not lines[row - 1][:col].strip()
            comments.append((row, tok.string, own_line))
        elif kind == tokenize.STRING and tok.start[0] != tok.end[0]:
            strings.append((tok.start[0], tok.end[0]))
        elif kind == getattr(tokenize, "FSTRING_START", -1):
            fstring_start = tok.start[0]
        elif kind == getattr(tokenize, "FSTRING_END", -1) and fstring_start is not None:
            if fstring_start != tok.end[0]:
                strings.append((fstring_start, tok.end[0]))
            fstring_start = None
    return comments, strings


def _scan_lines(source: str) -> list[tuple[int, str, bool]]:
    """Fallback for sources `tokenize` rejects: find `#` comments line by line."""
    comments = []
    for row, line in enumerate(source.splitlines(), start=1):
        index = line.find("#")
        if index >= 0:
            comments.append((row, line[index:], not line[:index].strip()))
    return comments


def _map_continuations(source: str, mapping: dict[int, int]) -> None:
    """Rows ending in a backslash take the noqa of the row where the statement continues to."""
    lines = source.splitlines()
    row = len(lines)
    target = row
    while row >= 1:
        if lines[row - 1].endswith("\\") and row not in mapping:
            mapping[row] = mapping.get(target, target)
        else:
            target = row
        row -= 1
