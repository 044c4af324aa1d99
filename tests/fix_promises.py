"""What a fix promises, as checks: shared by the hostile-input tests and the robustness run
over real packages (benchmarks/robustness.py).

A fix round may change only what its findings and their edits cover, must keep code that
CPython accepted acceptable, and is observed round by round by recording each text the
fixer lints (later rounds can have findings the first round did not).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from xlalint import fixer
from xlalint.diagnostics import Diagnostic, FileResult
from xlalint.edits import split_lines
from xlalint.engine import lint_source


class Rounds:
    """Each text the fixer lints, with its findings: one entry per fix round."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[Diagnostic]]] = []

    def __call__(self, text: str, *args: Any, **kwargs: Any) -> FileResult:
        result = lint_source(text, *args, **kwargs)
        self.seen.append((text, result.diagnostics))
        return result

    def changes(self) -> Iterator[tuple[str, str, list[Diagnostic]]]:
        """(before, after, findings of before) for every round that changed the text."""
        for (before, findings), (after, _) in zip(self.seen, self.seen[1:], strict=False):
            if before != after:
                yield before, after, findings


@contextmanager
def recorded_rounds() -> Iterator[Rounds]:
    """Record the fix rounds of the `fixer.fix_text` calls made inside the block."""
    rounds = Rounds()
    with mock.patch.object(fixer, "lint_source", rounds):
        yield rounds


def touched_rows(diagnostics: list[Diagnostic]) -> set[int]:
    """Rows a finding or one of its fix's edits covers (end rows included, conservatively)."""
    rows: set[int] = set()
    for d in diagnostics:
        rows.update(range(d.start.row, d.end.row + 1))
        for edit in d.fix.edits if d.fix else ():
            rows.update(range(edit.start.row, edit.end.row + 1))
    return rows


def lost_untouched_row(before: str, after: str, findings: list[Diagnostic]) -> int | None:
    """The first row of `before` that no finding or edit covers and that `after` does not
    keep in order, or None. Import lines are left out (the fixer removes the imports its
    fixes made unused), and so is the last line (an edit may end it with a newline)."""
    touched = touched_rows(findings)
    lines = split_lines(before)
    remaining = iter(split_lines(after))
    for row, line in enumerate(lines, start=1):
        if row in touched or "import" in line or row == len(lines):
            continue
        if not any(line == candidate for candidate in remaining):
            return row
    return None


def compiles(text: str, only_ast: bool = False) -> bool:
    """Whether CPython accepts `text`: as a tree (`only_ast`), or compiled to bytecode."""
    flags = ast.PyCF_ONLY_AST if only_ast else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<source>", "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
