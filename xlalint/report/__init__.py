"""Output formats: one module each, all rendering a `CheckReport` to text."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xlalint.api import CheckReport
from xlalint.report import concise, full, github, json_format, sarif
from xlalint.rule import Rule

Renderer = Callable[[CheckReport, Sequence[type[Rule]]], str]

FORMATS: dict[str, Renderer] = {
    "full": full.render,
    "concise": concise.render,
    "json": json_format.render,
    "github": github.render,
    "sarif": sarif.render,
}
# Formats read by people get the closing summary; machine formats stay pure.
HUMAN_FORMATS = frozenset({"full", "concise"})


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 file`, `2 files`; `nouns` where adding an s is wrong (`fixes`)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
