"""SARIF 2.1.0, the format code-scanning services ingest.

Rule metadata (name, summary, docs, help link) travels with the results so a viewer can
explain each finding without xlalint installed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from xlalint import __version__
from xlalint.api import CheckReport
from xlalint.diagnostics import Diagnostic, FileError, Location
from xlalint.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
HOMEPAGE = "https://github.com/xlalint/xlalint"


def _uri(filename: str) -> str:
    path = Path(filename)
    if path.is_absolute():
        return path.as_uri()
    return quote(path.as_posix())  # a relative URI reference: spaces, `%`, `#` escaped


def _region(start: Location, end: Location) -> dict[str, int]:
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


def _rule(rule: type[Rule]) -> dict[str, Any]:
    sections = rule.doc_sections()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.name.replace("-", " ")},
        "fullDescription": {"text": sections.get("What it does", "")},
        "help": {"text": rule.docs(), "markdown": rule.docs()},
        "helpUri": rule.url(),
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["xla", "performance"], "fixable": rule.fix_availability.value},
    }


def _result(diagnostic: Diagnostic, rule_index: int) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(diagnostic.filename)},
            "region": _region(diagnostic.start, diagnostic.end),
        }
    }
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": diagnostic.message},
        "locations": [location],
    }
    if diagnostic.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": diagnostic.fix.description},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(diagnostic.filename)},
                        "replacements": [
                            {
                                "deletedRegion": _region(edit.start, edit.end),
                                "insertedContent": {"text": edit.content},
                            }
                            for edit in diagnostic.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


def _notification(error: FileError) -> dict[str, Any]:
    """A file xlalint could not lint, as a tool execution notification."""
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(error.filename)}}
    if error.location is not None:
        physical["region"] = {
            "startLine": error.location.row,
            "startColumn": error.location.column,
        }
    return {
        "level": "error",
        "message": {"text": error.reason},
        "locations": [{"physicalLocation": physical}],
    }


def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
    index = {rule.code: i for i, rule in enumerate(rules)}
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "xlalint",
                        "version": __version__,
                        "informationUri": HOMEPAGE,
                        "rules": [_rule(rule) for rule in rules],
                    }
                },
                "results": [_result(d, index.get(d.code, -1)) for d in report.diagnostics],
                "invocations": [
                    {
                        "executionSuccessful": not report.problems,
                        "toolExecutionNotifications": [
                            _notification(error) for error in report.problems
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
