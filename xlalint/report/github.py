"""GitHub Actions workflow commands: each finding becomes an annotation on the PR diff."""

from __future__ import annotations

from collections.abc import Sequence

from xlalint.api import CheckReport
from xlalint.rule import Rule


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
    lines = []
    for d in report.diagnostics:
        properties = ",".join(
            (
                f"title={_escape_property(f'xlalint ({d.code})')}",
                f"file={_escape_property(d.filename)}",
                f"line={d.start.row}",
                f"col={d.start.column}",
                f"endLine={d.end.row}",
                f"endColumn={d.end.column}",
            )
        )
        message = f"{d.filename}:{d.start.row}:{d.start.column}: {d.code} {d.message}"
        lines.append(f"::error {properties}::{_escape_data(message)}\n")
    for error in report.problems:
        properties = f"title=xlalint,file={_escape_property(error.filename)}"
        if error.location is not None:
            properties += f",line={error.location.row},col={error.location.column}"
        lines.append(f"::error {properties}::{_escape_data(f'{error.filename}: {error.reason}')}\n")
    return "".join(lines)
