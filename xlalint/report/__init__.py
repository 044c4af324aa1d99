"""Output formats: one module each, all rendering a `CheckReport` to text."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from xlalint.api import CheckReport
from xlalint.rule import Rule

Renderer = Callable[[CheckReport, Sequence[type[Rule]]], str]


def _renderer(module: str) -> Renderer:
    """The `render` of `xlalint.report.<module>`, imported when a run uses that format
    (SARIF brings the rules' docs, which the other formats never need)."""

    def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
        renderer: Renderer = importlib.import_module(f"{__name__}.{module}").render
        return renderer(report, rules)

    return render


FORMATS: dict[str, Renderer] = {
    "full": _renderer("full"),
    "concise": _renderer("concise"),
    "json": _renderer("json_format"),
    "github": _renderer("github"),
    "sarif": _renderer("sarif"),
}
# Formats read by people get the closing summary; machine formats stay pure.
HUMAN_FORMATS = frozenset({"full", "concise"})


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 file`, `2 files`; `nouns` where adding an s is wrong (`fixes`)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
