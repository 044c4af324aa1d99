"""Lint a snippet with one rule and apply its fixes' edits with an independent helper.

The rule-family tests check each fix's exact text through this small applier (1-based rows
and columns, as diagnostics state them) rather than through `xlalint.edits`, so a bug in
the engine's own edit application cannot hide a wrong fix.
"""

from __future__ import annotations

import ast
import textwrap

from xlalint.diagnostics import Diagnostic, Edit
from xlalint.engine import lint_source
from xlalint.registry import all_rules


def lint(code: str, source: str) -> list[Diagnostic]:
    result = lint_source(textwrap.dedent(source), "snippet.py", [all_rules()[code]])
    assert result.error is None
    return result.diagnostics


def apply(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits, converting 1-based (row, column) to offsets."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1

    spans = sorted(
        ((offset(e.start.row, e.start.column), offset(e.end.row, e.end.column), e.content)
         for e in edits),
        reverse=True,
    )  # fmt: skip
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def fixed(code: str, source: str, *, all_fixable: bool = False) -> tuple[str, set[str]]:
    """The snippet with every fix of `code` applied (it must parse), and the imports the
    fixes require. `all_fixable`: every finding must carry a fix."""
    text = textwrap.dedent(source)
    diagnostics = lint(code, text)
    assert diagnostics, f"{code} found nothing in the snippet"
    if all_fixable:
        assert all(d.fix for d in diagnostics), [d.message for d in diagnostics if not d.fix]
    edits = [edit for d in diagnostics if d.fix for edit in d.fix.edits]
    imports = {i for d in diagnostics if d.fix for i in d.fix.required_imports}
    result = apply(text, edits)
    ast.parse(result)
    return result, imports
