"""GitHub Actions workflow commands: each finding becomes an annotation on the PR diff.

The command follows the rule's severity (`::error`, `::warning`, `::notice`). A finding in
a notebook is annotated on the file, not on a line: its rows count within a cell, not in
the notebook's JSON; the message says `cell N:row:col`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xlalint.api import CheckReport
from xlalint.rule import Rule
from xlalint.severity import severity


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
    commands = {rule.code: _COMMANDS[severity(rule)] for rule in rules}
    lines = []
    for d in report.diagnostics:
        fields = [
            f"title={_escape_property(f'xlalint ({d.code})')}",
            f"file={_escape_property(d.filename)}",
        ]
        if d.cell is None:
            fields += [
                f"line={d.start.row}",
                f"col={d.start.column}",
                f"endLine={d.end.row}",
                f"endColumn={d.end.column}",
            ]
        message = f"{d.filename}:{d.position}: {d.code} {d.message}"
        command = commands.get(d.code, "error")
        lines.append(f"::{command} {','.join(fields)}::{_escape_data(message)}\n")
    for error in report.problems:
        properties = f"title=xlalint,file={_escape_property(error.filename)}"
        if error.location is not None:
            properties += f",line={error.location.row},col={error.location.column}"
        lines.append(f"::error {properties}::{_escape_data(f'{error.filename}: {error.reason}')}\n")
    return "".join(lines)
