"""A JSON array of findings, shaped like ruff's JSON output, for tools to consume.

A file that could not be linted (a syntax error, an unreadable file, a missing path) is an
entry too, as in ruff: `code` null, `name` "file-error", the reason as `message`, and the
position of a syntax error (else null), so a tool reading only this output misses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from xlalint.api import CheckReport
from xlalint.diagnostics import Diagnostic, FileError, Fix, Location
from xlalint.rule import Rule


def _location(location: Location) -> dict[str, int]:
    return {"row": location.row, "column": location.column}


def fix_to_json(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.description,
        "edits": [
            {
                "content": edit.content,
                "location": _location(edit.start),
                "end_location": _location(edit.end),
            }
            for edit in fix.edits
        ],
        "required_imports": list(fix.required_imports),
    }


def diagnostic_to_json(diagnostic: Diagnostic, url: str) -> dict[str, Any]:
    return {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "filename": diagnostic.filename,
        "cell": diagnostic.cell,  # notebooks: rows count within this cell (1-based)
        "location": _location(diagnostic.start),
        "end_location": _location(diagnostic.end),
        "noqa_row": diagnostic.noqa_row,
        "fix": fix_to_json(diagnostic.fix),
        "hint": diagnostic.hint,
        "url": url,
    }


def error_to_json(error: FileError) -> dict[str, Any]:
    where = _location(error.location) if error.location else None
    return {
        "code": None,
        "name": "file-error",
        "message": error.reason,
        "filename": error.filename,
        "location": where,
        "end_location": where,
        "noqa_row": None,
        "fix": None,
        "hint": None,
        "url": None,
    }


def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
    urls = {rule.code: rule.url() for rule in rules}
    items = [error_to_json(e) for e in report.problems]
    items += [diagnostic_to_json(d, urls.get(d.code, "")) for d in report.diagnostics]
    return json.dumps(items, indent=2) + "\n"
