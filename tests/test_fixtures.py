"""Every rule's fixtures: lines marked `# expect: CODE` must be flagged, no other line may be.

fixtures/<CODE>/ holds small, real-looking programs. A file is linted with only its
directory's rule enabled; the findings' (line, code) pairs must equal the markers exactly,
so a fixture catches missed findings and false positives alike.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xlalint.engine import lint_source
from xlalint.registry import all_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MARKER = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expected_findings(text: str) -> set[tuple[int, str]]:
    expected = set()
    for row, line in enumerate(text.splitlines(), start=1):
        if match := MARKER.search(line):
            expected |= {(row, code.strip()) for code in match["codes"].split(",")}
    return expected


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("XLA*/*.py"))


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_findings_match_markers(path: Path) -> None:
    code = path.parent.name
    rule = all_rules()[code]
    text = path.read_text(encoding="utf-8")
    result = lint_source(text, str(path), [rule])
    assert result.error is None
    found = {(d.start.row, d.code) for d in result.diagnostics}
    expected = {(row, c) for row, c in expected_findings(text) if c == code}
    assert sorted(found) == sorted(expected)


@pytest.mark.parametrize("code", list(all_rules()))
def test_every_rule_has_flagged_and_clean_fixtures(code: str) -> None:
    files = sorted((FIXTURES / code).glob("*.py"))
    flagged = [f for f in files if expected_findings(f.read_text(encoding="utf-8"))]
    clean = [f for f in files if not expected_findings(f.read_text(encoding="utf-8"))]
    assert flagged, f"fixtures/{code} has no file with `# expect: {code}` markers"
    assert clean, f"fixtures/{code} has no clean file (hard negatives)"
