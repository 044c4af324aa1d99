"""SARIF 2.1.0, the format code-scanning services ingest.

Rule metadata (name, summary, docs, help link) travels with the results so a viewer can
explain each finding without xlalint installed. Levels follow each rule's severity
(`xlalint.severity`). Paths are relative to the repository root (the git work tree holding
the current folder, else the current folder) through the `%SRCROOT%` base, which
`originalUriBaseIds` anchors, so code scanning places findings on the right file whatever
folder xlalint ran in; files outside the root keep absolute `file:` URIs. Columns count
Unicode code points, as in every xlalint output. A finding in a notebook has its cell in
the location's `properties` (rows count within that cell).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from xlalint import __version__
from xlalint.api import CheckReport
from xlalint.diagnostics import Diagnostic, FileError, Location
from xlalint.docgen import filled_docs, rule_page
from xlalint.rule import Rule, doc_sections
from xlalint.severity import severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
HOMEPAGE = "https://github.com/xlalint/xlalint"
BASE_ID = "%SRCROOT%"


def repository_root(start: Path | None = None) -> Path:
    """The git work tree holding `start` (default: the current folder), else `start`."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _artifact(filename: str, root: Path) -> dict[str, str]:
    """An artifactLocation: relative to `root` through BASE_ID where the file is inside it."""
    path = Path(filename)
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    # A relative URI reference: spaces, `%`, `#` escaped.
    return {"uri": quote(relative.as_posix()), "uriBaseId": BASE_ID}


def _region(start: Location, end: Location) -> dict[str, int]:
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


_PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "note": "recommendation"}


def _rule(rule: type[Rule]) -> dict[str, Any]:
    # The docs as `xlalint rule CODE` shows them: measured numbers filled in.
    page = rule_page(rule)
    sections = doc_sections(filled_docs(rule))
    what = sections.get("What it does", "").strip()
    why = sections.get("Why is this bad?", "").strip()
    level = severity(rule)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": _first_sentence(what) or rule.name.replace("-", " ")},
        "fullDescription": {"text": "\n\n".join(part for part in (what, why) if part)},
        "help": {"text": page, "markdown": page},
        "helpUri": rule.url(),
        "defaultConfiguration": {"level": level},
        "properties": {
            "tags": ["xla", "performance"],
            "fixable": rule.fix_availability.value,
            "problem.severity": _PROBLEM_SEVERITY[level],
        },
    }


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


def _result(diagnostic: Diagnostic, rule_index: int, level: str, root: Path) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": _artifact(diagnostic.filename, root),
            "region": _region(diagnostic.start, diagnostic.end),
        }
    }
    message = diagnostic.message
    if diagnostic.cell is not None:
        location["properties"] = {"cell": diagnostic.cell}
        message = f"cell {diagnostic.cell}: {message}"
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": level,
        "message": {"text": message},
        "locations": [location],
    }
    if diagnostic.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": diagnostic.fix.description},
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(diagnostic.filename, root),
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


def _notification(error: FileError, root: Path) -> dict[str, Any]:
    """A file xlalint could not lint, as a tool execution notification."""
    physical: dict[str, Any] = {"artifactLocation": _artifact(error.filename, root)}
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
    levels = {rule.code: severity(rule) for rule in rules}
    root = repository_root()
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
                "originalUriBaseIds": {BASE_ID: {"uri": root.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": [
                    _result(d, index.get(d.code, -1), levels.get(d.code, "warning"), root)
                    for d in report.diagnostics
                ],
                "invocations": [
                    {
                        "executionSuccessful": not report.problems,
                        "toolExecutionNotifications": [
                            _notification(error, root) for error in report.problems
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
