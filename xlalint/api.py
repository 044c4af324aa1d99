"""What the CLI, the pre-commit hook and tests call: lint or fix paths, get results.

Files are handled in worker processes when there are enough of them to pay for it; results
come back in path order whatever the number of workers, so output is deterministic.
`per-file-ignores` is applied by giving each file only the rules it keeps.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TypeVar

import pathspec

from xlalint.config import Settings
from xlalint.diagnostics import Diagnostic, FileError, FileResult
from xlalint.discovery import discover
from xlalint.engine import lint_source
from xlalint.fixer import FixOutcome, fix_text
from xlalint.registry import expand, select_rules
from xlalint.rule import Rule
from xlalint.sources import SourceError, read_source
from xlalint.writer import WriteError, write_atomic

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 16
RECURSION_LIMIT = 10_000

# The rule classes themselves travel (pickled by reference), so that rules passed in by the
# caller need not be registered.
Job = tuple[str, tuple[type[Rule], ...], tuple[str, ...], bool]
T = TypeVar("T")


@dataclass
class CheckReport:
    results: list[FileResult] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for result in self.results for d in result.diagnostics]

    @property
    def errors(self) -> list[FileError]:
        return [result.error for result in self.results if result.error is not None]


@dataclass
class FixReport:
    outcomes: list[FixOutcome] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)

    @property
    def remaining(self) -> list[Diagnostic]:
        return [d for outcome in self.outcomes for d in outcome.remaining]


def enabled_rules(settings: Settings) -> list[type[Rule]]:
    return select_rules(settings.select, settings.extend_select, settings.ignore)


@cache
def _ignore_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def ignored_codes_for(path: Path, settings: Settings) -> set[str]:
    """Codes that `per-file-ignores` switches off for `path`.

    Patterns use gitignore syntax relative to the config's folder, as `exclude` does: an
    unanchored `__init__.py` matches at any depth, an anchored `/scripts/*.py` only there.
    """
    if not settings.per_file_ignores:
        return set()
    try:
        relative = path.resolve().relative_to(settings.root.resolve()).as_posix()
    except ValueError:
        relative = path.name  # outside the project: only unanchored patterns can apply
    codes: set[str] = set()
    for pattern, selectors in settings.per_file_ignores.items():
        if _ignore_spec(pattern).match_file(relative):
            codes.update(code for selector in selectors for code in expand(selector))
    return codes


def lint_file(
    path: Path, rules: Sequence[type[Rule]], hot_functions: Sequence[str] = ()
) -> FileResult:
    filename = str(path)
    try:
        source = read_source(path)
    except SourceError as error:
        return FileResult(filename, error=FileError(filename, str(error)))
    try:
        return lint_source(source.text, filename, rules, hot_functions)
    except Exception as error:  # a bug in xlalint must not stop the other files
        return FileResult(filename, error=FileError(filename, _internal(error)))


def fix_file(
    path: Path, rules: Sequence[type[Rule]], hot_functions: Sequence[str] = (), unsafe: bool = False
) -> FixOutcome | FileError:
    filename = str(path)
    try:
        source = read_source(path)
    except SourceError as error:
        return FileError(filename, str(error))
    try:
        outcome = fix_text(source, filename, rules, unsafe=unsafe, hot_functions=hot_functions)
    except Exception as error:  # a bug in xlalint must not stop the other files
        return FileError(filename, _internal(error))
    if outcome.error is not None:
        return FileError(filename, outcome.error)
    return outcome


def _internal(error: Exception) -> str:
    return f"internal error ({type(error).__name__}: {error}); please report it"


def _raise_recursion_limit() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def _lint_job(job: Job) -> FileResult:
    path, rules, hot_functions, _ = job
    return lint_file(Path(path), rules, hot_functions)


def _fix_job(job: Job) -> FixOutcome | FileError:
    path, rules, hot_functions, unsafe = job
    return fix_file(Path(path), rules, hot_functions, unsafe)


def default_jobs() -> int:
    return os.cpu_count() or 1


def _run(worker: Callable[[Job], T], jobs: list[Job], processes: int) -> list[T]:
    """Run `worker` over `jobs`, in a process pool when it pays; results in job order."""
    _raise_recursion_limit()
    if processes <= 1 or len(jobs) < PARALLEL_THRESHOLD:
        return [worker(job) for job in jobs]
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    chunk = max(1, len(jobs) // (processes * 8))
    with ProcessPoolExecutor(
        max_workers=processes, mp_context=context, initializer=_raise_recursion_limit
    ) as pool:
        return list(pool.map(worker, jobs, chunksize=chunk))


def _jobs(
    files: Iterable[Path], rules: Sequence[type[Rule]], settings: Settings, unsafe: bool
) -> list[Job]:
    every = tuple(rules)
    jobs = []
    for path in files:
        ignored = ignored_codes_for(path, settings)
        kept = tuple(rule for rule in every if rule.code not in ignored) if ignored else every
        jobs.append((str(path), kept, settings.hot_functions, unsafe))
    return jobs


def check_paths(
    paths: Iterable[Path],
    settings: Settings,
    *,
    rules: Sequence[type[Rule]] | None = None,
    jobs: int | None = None,
) -> CheckReport:
    """Lint every file under `paths` with the enabled rules."""
    rules = enabled_rules(settings) if rules is None else rules
    found = discover(paths, settings)
    work = _jobs(found.files, rules, settings, unsafe=False)
    results = _run(_lint_job, work, jobs or default_jobs())
    return CheckReport(results=results, missing=found.missing)


def _encoded(outcome: FixOutcome) -> bytes:
    try:
        return outcome.encoded()
    except UnicodeEncodeError as error:
        raise WriteError(
            f"the fixed text has characters {error.encoding} cannot encode; not written"
        ) from None


def fix_paths(
    paths: Iterable[Path],
    settings: Settings,
    *,
    rules: Sequence[type[Rule]] | None = None,
    unsafe: bool = False,
    apply: bool = False,
    jobs: int | None = None,
) -> FixReport:
    """Compute fixes for every file under `paths`; with `apply`, write the changed files."""
    rules = enabled_rules(settings) if rules is None else rules
    found = discover(paths, settings)
    work = _jobs(found.files, rules, settings, unsafe=unsafe)
    report = FixReport(missing=found.missing)
    for job, item in zip(work, _run(_fix_job, work, jobs or default_jobs()), strict=True):
        if isinstance(item, FileError):
            report.errors.append(item)
            continue
        report.outcomes.append(item)
        if apply and item.changed:
            try:
                write_atomic(Path(item.filename), item.original.raw, _encoded(item))
            except WriteError as error:
                report.errors.append(FileError(item.filename, str(error)))
                # Nothing was written: report the file as it is.
                item.text = item.original.text
                item.applied.clear()
                item.remaining = _lint_job(job).diagnostics
    return report
