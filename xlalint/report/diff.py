"""Unified diffs of what `xlalint fix` would change."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from xlalint.fixer import FixOutcome


def render_diff(outcomes: Iterable[FixOutcome]) -> str:
    chunks = []
    for outcome in outcomes:
        if not outcome.changed:
            continue
        name = outcome.filename
        chunks.extend(
            difflib.unified_diff(
                outcome.original.text.splitlines(keepends=True),
                outcome.text.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )
        if chunks and not chunks[-1].endswith("\n"):
            chunks.append("\n\\ No newline at end of file\n")
    return "".join(chunks)
