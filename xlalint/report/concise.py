"""`path:line:col: CODE [*] message`, one finding a line (`[*]`: a safe fix exists)."""

from __future__ import annotations

from collections.abc import Sequence

from xlalint.api import CheckReport
from xlalint.diagnostics import Applicability, Diagnostic
from xlalint.rule import Rule


def fix_marker(diagnostic: Diagnostic) -> str:
    fix = diagnostic.fix
    return "[*] " if fix is not None and fix.applicability is Applicability.SAFE else ""


def header(diagnostic: Diagnostic) -> str:
    d = diagnostic
    return f"{d.filename}:{d.position}: {d.code} {fix_marker(d)}{d.message}"


def render(report: CheckReport, rules: Sequence[type[Rule]]) -> str:
    return "".join(header(d) + "\n" for d in report.diagnostics)
