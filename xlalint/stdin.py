"""Linting and fixing source read from standard input, as editors and pipelines send it.

`--stdin-filename PATH` names the buffer: the config is found from PATH's folder, its
`per-file-ignores` apply, findings carry PATH, and a `.ipynb` PATH is read as a notebook.
As in ruff, with `--force-exclude` an excluded PATH is passed through untouched (no
findings; `fix` echoes the input). The result cache is not used: the buffer has no file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xlalint.api import CheckReport, FixReport, fix_source, lint_source_file, rules_for
from xlalint.config import Settings, line_length_for
from xlalint.diagnostics import FileError
from xlalint.discovery import force_excluded
from xlalint.rule import Rule

if TYPE_CHECKING:
    from xlalint.fixer import FixOutcome


def check_stdin(
    raw: bytes, path: Path, settings: Settings, rules: Sequence[type[Rule]]
) -> CheckReport:
    """Lint `raw` as the content of `path`."""
    if force_excluded(path, settings):
        return CheckReport()
    kept = rules_for(path, tuple(rules), settings)
    result = lint_source_file(raw, path, kept, settings.hot_functions, settings.target_version)
    report = CheckReport(results=[result])
    report.buffers[str(path)] = raw
    return report


def fix_stdin(
    raw: bytes,
    path: Path,
    settings: Settings,
    rules: Sequence[type[Rule]],
    unsafe: bool = False,
) -> tuple[bytes, FixReport]:
    """The fixed content of `raw` (or `raw` itself when nothing applies), and the report."""
    report = FixReport()
    if force_excluded(path, settings):
        return raw, report
    kept = rules_for(path, tuple(rules), settings)
    outcome = fix_source(
        raw,
        path,
        kept,
        settings.hot_functions,
        unsafe=unsafe,
        line_length=line_length_for(settings),
        target=settings.target_version,
    )
    if not isinstance(outcome, FileError) and outcome.error is not None:
        outcome = FileError(str(path), outcome.error)
    if isinstance(outcome, FileError):
        report.errors.append(outcome)
        return raw, report
    report.outcomes.append(outcome)
    return (_encoded(outcome) if outcome.changed else raw), report


def _encoded(outcome: FixOutcome) -> bytes:
    try:
        return outcome.encoded()
    except UnicodeEncodeError:
        # The fixed text no longer fits the declared encoding: echo the input unchanged.
        outcome.text = outcome.original.text
        outcome.applied.clear()
        return outcome.original.raw
