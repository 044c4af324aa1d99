"""Unified diffs of what `xlalint fix` would change.

A notebook is diffed cell by cell (`a/nb.ipynb:cell 3`), on the cells' code, as ruff does:
its JSON is not what a reader wants to review.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

from xlalint.edits import split_lines
from xlalint.fixer import FixOutcome
from xlalint.notebooks import changed_cells
from xlalint.sources import is_notebook


def _pairs(outcome: FixOutcome) -> Iterator[tuple[str, str, str]]:
    """(name, before, after) of each text to diff."""
    name = outcome.filename
    if is_notebook(name):
        for cell, before, after in changed_cells(outcome.original.text, outcome.text):
            # A cell's last line rarely ends in a newline; that is no news in a cell diff.
            yield f"{name}:cell {cell}", _terminated(before), _terminated(after)
    else:
        yield name, outcome.original.text, outcome.text


def _terminated(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def render_diff(outcomes: Iterable[FixOutcome]) -> str:
    chunks = []
    for outcome in outcomes:
        if not outcome.changed:
            continue
        for name, before, after in _pairs(outcome):
            for line in difflib.unified_diff(
                split_lines(before), split_lines(after), fromfile=f"a/{name}", tofile=f"b/{name}"
            ):
                chunks.append(line)
                # Either side's last line may lack a newline; each such line gets the marker.
                if not line.endswith(("\n", "\r")):
                    chunks.append("\n\\ No newline at end of file\n")
    return "".join(chunks)
