"""Applying fixes to one file, to a fixed point, without ever breaking it.

Each round lints the current text, takes the allowed fixes (safe ones, plus unsafe ones when
asked) whose edits do not overlap, applies them with the imports they need, removes the
imports they made unused (`importer.remove_unused_imports`), and keeps the result only if it
still parses; a fix whose output would not parse is dropped and reported, and one whose
import would rebind a name the file imports as something else is not applied.
Rounds repeat until nothing changes (bounded), so fixing twice equals fixing once. The
text is encoded back with the file's own encoding and BOM; line endings are kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import libcst as cst

from xlalint.analysis.xla_api import LATEST, Release
from xlalint.diagnostics import Diagnostic, FileResult, FixAvailability, allowed
from xlalint.edits import apply_edits_marking, edit_spans, spans_overlap, wrap_long_lines
from xlalint.engine import lint_source, rules_for_text
from xlalint.importer import (
    ParsedTexts,
    add_imports,
    import_bindings,
    import_conflicts,
    left_unused,
    remove_unused_imports,
)
from xlalint.rule import Rule, analyses_used
from xlalint.sources import Source

MAX_ROUNDS = 10
BOM = "\ufeff"


@dataclass
class FixOutcome:
    filename: str
    original: Source
    text: str
    applied: Counter[str] = field(default_factory=Counter)
    remaining: list[Diagnostic] = field(default_factory=list)
    # The findings of the text as given: what `check` lists (a fix can bring out others).
    found: list[Diagnostic] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.text != self.original.text

    def encoded(self) -> bytes:
        bom = BOM if self.original.raw.startswith(b"\xef\xbb\xbf") else ""
        encoding = "utf-8" if self.original.encoding == "utf-8-sig" else self.original.encoding
        return (bom + self.text).encode(encoding)


def _parses(text: str, parsed: ParsedTexts) -> bool:
    try:
        parsed.module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return False
    return True


def _units(diagnostics: Sequence[Diagnostic]) -> list[list[Diagnostic]]:
    """Findings as the fixer takes them: each alone, or with the other members of its fix's
    group (fixes that must go together), at the place of the group's first member."""
    groups: dict[str, list[Diagnostic]] = {}
    units: list[list[Diagnostic]] = []
    for diagnostic in diagnostics:
        group = diagnostic.fix.group if diagnostic.fix is not None else None
        if group is None:
            units.append([diagnostic])
        elif group in groups:
            groups[group].append(diagnostic)
        else:
            groups[group] = [diagnostic]
            units.append(groups[group])
    return units


def _choose(
    text: str,
    diagnostics: Sequence[Diagnostic],
    unsafe: bool,
    rejected: Sequence[Diagnostic] = (),
    parsed: ParsedTexts | None = None,
) -> list[Diagnostic]:
    """Fixable findings whose edits overlap no earlier chosen fix, in source order.

    A group of fixes that must go together is chosen whole or not at all: every member
    allowed, none rejected, none overlapping. Two fixes that make the very same edit (the
    same guard inserted at the same place) do not overlap: the edit is made once.
    A fix whose import would rebind a name the file imports as something else (`import
    torch_xla.core.xla_model as xm` in a file with `import numpy as xm`) is not chosen: the
    finding remains, and the file keeps working.
    """
    chosen: list[Diagnostic] = []
    taken: list[tuple[tuple[int, int], str]] = []
    bound: dict[str, str] | None = None
    for unit in _units(diagnostics):
        if not all(allowed(d.fix, unsafe) and d not in rejected for d in unit):
            continue
        imports = [i for d in unit for i in d.fix.required_imports]  # type: ignore[union-attr]
        if imports:
            if bound is None:
                bound = import_bindings(text, parsed)
            if import_conflicts(bound, imports):
                continue
        edits = list(dict.fromkeys(e for d in unit for e in d.fix.edits))  # type: ignore[union-attr]
        spans = list(zip(edit_spans(text, edits), (e.content for e in edits), strict=True))
        if any(
            spans_overlap(a, b) and (a, content) != (b, other)
            for index, (a, content) in enumerate(spans)
            for b, other in [*taken, *spans[:index]]
        ):
            continue
        chosen.extend(unit)
        taken.extend(spans)
    return chosen


def _apply(
    text: str,
    fixes: Sequence[Diagnostic],
    filename: str = "",
    keep: Collection[tuple[str, str]] = (),
    line_length: int | None = None,
    parsed: ParsedTexts | None = None,
) -> str:
    """`text` with `fixes` applied, the lines they wrote wrapped where they grew past
    `line_length`, the imports they need added and the imports they made unused removed
    (but not those in `keep`)."""
    # The same edit from two fixes (a shared guard) is made once.
    edits = list(dict.fromkeys(edit for d in fixes for edit in d.fix.edits))  # type: ignore[union-attr]
    imports = [i for d in fixes for i in d.fix.required_imports]  # type: ignore[union-attr]
    edited, rows = apply_edits_marking(text, edits)
    if line_length is not None:
        edited = wrap_long_lines(edited, rows, line_length)
    try:
        parsed = parsed or ParsedTexts()
        with_imports = add_imports(edited, imports, parsed)
        return remove_unused_imports(text, with_imports, filename, keep, parsed)
    except (cst.ParserSyntaxError, RecursionError):
        return edited  # does not parse: the caller's parse guard drops the culprit


def offering_fixes(text: str, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    """The rules of `rules` that `text` may trigger whose findings the fixer chooses from:
    those that may offer a fix, and those that decide a device (their findings make the
    moves' fixes one group or none: `engine.group_device_fixes`). A rule's findings do not
    depend on which other rules run (it reads the context and the analyses, never another
    rule) and no rule supersedes one that offers fixes, so a lint with these rules, whose
    walk feeds the analyses all of `rules` use (`lint_fixes`), offers the fixes a lint
    with all of `rules` offers (`tests/test_fixer.py` holds it on every fixture)."""
    return [
        rule
        for rule in rules_for_text(text, rules)
        if rule.fix_availability is not FixAvailability.NONE or rule.decides_device
    ]


def lint_fixes(
    text: str,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    target: Release = LATEST,
    module: cst.Module | None = None,
) -> FileResult:
    """`text` linted by the rules of `rules` that may offer a fix (`offering_fixes`), its
    walk feeding the analyses all of `rules` that `text` may trigger use: the fixes of a
    lint by all of `rules`, without the findings of the other rules."""
    analyses = analyses_used(rules_for_text(text, rules))
    offering = offering_fixes(text, rules)
    return lint_source(text, filename, offering, hot_functions, target, module, analyses=analyses)


def fix_text(
    source: Source,
    filename: str,
    rules: Sequence[type[Rule]],
    *,
    unsafe: bool = False,
    hot_functions: Sequence[str] = (),
    line_length: int | None = None,
    target: Release = LATEST,
    lints: dict[str, FileResult] | None = None,
    parsed: ParsedTexts | None = None,
    fixes_only: bool = False,
) -> FixOutcome:
    """Fix `source` to a fixed point. `lints`: results of texts linted before with the same
    rules, shared by runs over one file (the forecast's safe and unsafe runs meet the same
    texts), and filled with this run's; `parsed`: the same for libcst's trees of the texts
    the fixes' imports and the parse guard read. `fixes_only` (the closing forecast, which
    counts fixes): the texts the fixes make are linted with the rules that may offer a fix
    alone (`lint_fixes`), enough to choose each round's fixes; `remaining` then holds
    only their findings where the text changed (`lints` keeps those results)."""
    lints = {} if lints is None else lints
    parsed = ParsedTexts() if parsed is None else parsed

    def lint(text: str) -> FileResult:
        if text not in lints:
            # A fixed text was parsed whole by the parse guard: the lint reads that tree.
            module = parsed.known(text)
            if fixes_only and text != source.text:
                lints[text] = lint_fixes(text, filename, rules, hot_functions, target, module)
            else:
                lints[text] = lint_source(text, filename, rules, hot_functions, target, module)
        return lints[text]

    outcome = FixOutcome(filename, source, source.text)
    text = source.text
    seen = {text: Counter[str]()}  # each text reached, with the fixes applied to reach it
    keep: set[tuple[str, str]] | None = None  # imports the file left unused: never removed
    for _ in range(MAX_ROUNDS):
        result = lint(text)
        if result.error is not None:
            outcome.error = result.error.reason
            return outcome
        if text == source.text:
            outcome.found = result.diagnostics
        # Positions are the current text's: only the last round's drops are reported.
        outcome.dropped = []
        rejected: list[Diagnostic] = []
        chosen = _choose(text, result.diagnostics, unsafe, parsed=parsed)
        if chosen and keep is None:
            keep = left_unused(source.text, parsed)
        candidate = _apply(text, chosen, filename, keep, line_length, parsed)
        while chosen and not _parses(candidate, parsed):
            # Keep the fixes that parse on their own; report the others, and let the fixes
            # they overlapped be chosen in their place.
            # A group of fixes that must go together is kept or dropped whole.
            kept: list[Diagnostic] = []
            for unit in _units(chosen):
                trial = _apply(text, [*kept, *unit], filename, keep, line_length, parsed)
                if _parses(trial, parsed):
                    kept.extend(unit)
                    continue
                rejected.extend(unit)
                outcome.dropped.extend(f"{d.code} at {d.start.row}:{d.start.column}" for d in unit)
            chosen = kept or _choose(text, result.diagnostics, unsafe, rejected, parsed)
            candidate = _apply(text, chosen, filename, keep, line_length, parsed)
        if not chosen:
            break
        if candidate in seen:
            # A cycle: go back to where it started rather than flip-flop, so that fixing
            # the result again changes nothing.
            text, outcome.applied = candidate, seen[candidate].copy()
            break
        outcome.applied.update(d.code for d in chosen)
        seen[candidate] = outcome.applied.copy()
        text = candidate
    outcome.text = text
    outcome.dropped = list(dict.fromkeys(outcome.dropped))
    outcome.remaining = list(lint(text).diagnostics)
    return outcome


def fix_one(
    text: str,
    diagnostic: Diagnostic,
    diagnostics: Sequence[Diagnostic],
    filename: str = "",
    line_length: int | None = None,
) -> str | None:
    """`text` with only `diagnostic`'s fix applied (with the fixes its group must go
    with), as an editor offers it for one finding; None when the fix cannot apply alone:
    its import would rebind a name, or the result would not parse."""
    if diagnostic.fix is None:
        return None
    pool = diagnostics if diagnostic in diagnostics else [diagnostic]
    unit = next(u for u in _units(pool) if diagnostic in u)
    if _choose(text, unit, unsafe=True) != unit:
        return None
    parsed = ParsedTexts()
    candidate = _apply(text, unit, filename, left_unused(text, parsed), line_length, parsed)
    return candidate if candidate != text and _parses(candidate, parsed) else None
