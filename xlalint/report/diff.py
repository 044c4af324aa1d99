"""Unified diffs of what `xlalint fix` would change."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from xlalint.edits import split_lines
from xlalint.fixer import FixOutcome


def render_diff(outcomes: Iterable[FixOutcome]) -> str:
    chunks = []
    for outcome in outcomes:
        if not outcome.changed:
            continue
        name = outcome.filename
        for line in difflib.unified_diff(
            split_lines(outcome.original.text),
            split_lines(outcome.text),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        ):
            chunks.append(line)
            # Either side's last line may lack a newline; each such line gets the marker.
            if not line.endswith(("\n", "\r")):
                chunks.append("\n\\ No newline at end of file\n")
    return "".join(chunks)
