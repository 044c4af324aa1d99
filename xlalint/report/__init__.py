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
