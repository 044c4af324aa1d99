"""Each finding with its source line, a caret under the span, and its fix or hint."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from xlalint.api import CheckReport
from xlalint.diagnostics import Diagnostic
from xlalint.report.concise import header
from xlalint.rule import Rule
from xlalint.sources import SourceError, decode, read_bytes


def _lines(diagnostic: Diagnostic, buffer: bytes | None) -> list[str]:
    """The lines the finding's rows count in: its file's, its buffer's (stdin), or its
    notebook cell's."""
    try:
        raw = read_bytes(Path(diagnostic.filename)) if buffer is None else buffer
        if diagnostic.cell is not None:
            from xlalint.notebooks import cell_lines  # only notebooks: not on a warm .py run

            return cell_lines(raw, diagnostic.cell)
        return decode(raw).text.splitlines()
    except SourceError:
        return []


def _snippet(diagnostic: Diagnostic, lines: list[str]) -> list[str]:
    row = diagnostic.start.row
    if not 0 < row <= len(lines):
        return []
    line = lines[row - 1].expandtabs(1)
    start = diagnostic.start.column - 1
    end = diagnostic.end.column - 1 if diagnostic.end.row == row else len(line)
    width = max(1, end - start)
    gutter = " " * len(str(row))
    return [
        f"{gutter} |",
        f"{row} | {line}",
        f"{gutter} | {' ' * start}{'^' * width}",
    ]


def _help(diagnostic: Diagnostic) -> list[str]:
    notes = []
    if diagnostic.fix is not None:
        kind = diagnostic.fix.applicability.value
        notes.append(f"  = fix ({kind}): {diagnostic.fix.description}")
    if diagnostic.hint:
        notes.append(f"  = help: {diagnostic.hint}")
    return notes


def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
    out: list[str] = []
    cache: dict[tuple[str, int | None], list[str]] = {}
    for diagnostic in report.diagnostics:
        key = (diagnostic.filename, diagnostic.cell)
        if key not in cache:
            cache[key] = _lines(diagnostic, report.buffers.get(diagnostic.filename))
        out.append(header(diagnostic))
        out.extend(_snippet(diagnostic, cache[key]))
        out.extend(_help(diagnostic))
        out.append("")
    return "".join(line + "\n" for line in out)
