"""What the CLI, the pre-commit hook and tests call: lint or fix paths, get results.

Files are handled in worker processes when there are enough of them to pay for it; results
come back in path order whatever the number of workers, so output is deterministic.
`per-file-ignores` is applied by giving each file only the rules it keeps. With a
`ResultCache`, files whose cached result is current are answered in this process and only
the others go to the workers, which store what they compute.
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

from xlalint.cache import ResultCache
from xlalint.config import Settings
from xlalint.diagnostics import Diagnostic, FileError, FileResult
from xlalint.discovery import discover
from xlalint.engine import lint_source
from xlalint.fixer import FixOutcome, allowed, fix_text
from xlalint.registry import expand, select_rules
from xlalint.rule import Rule
from xlalint.sources import Source, SourceError, decode, read_source
from xlalint.writer import WriteError, write_atomic

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 16
RECURSION_LIMIT = 10_000
MISSING = "no such file or directory"

# The rule classes themselves travel (pickled by reference), so that rules passed in by the
# caller need not be registered.
Job = tuple[str, tuple[type[Rule], ...], tuple[str, ...], bool, ResultCache | None]
T = TypeVar("T")


@dataclass
class CheckReport:
    results: list[FileResult] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    empty: list[Path] = field(default_factory=list)  # folders without a Python file to lint

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for result in self.results for d in result.diagnostics]

    @property
    def errors(self) -> list[FileError]:
        return [result.error for result in self.results if result.error is not None]

    @property
    def problems(self) -> list[FileError]:
        """Files that could not be linted, and paths named on the command line that do not
        exist: what every output format reports besides the findings."""
        missing = [FileError(str(path), MISSING) for path in self.missing]
        return [*missing, *self.errors]


@dataclass
class FixReport:
    outcomes: list[FixOutcome] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    empty: list[Path] = field(default_factory=list)  # folders without a Python file to fix

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
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    cache: ResultCache | None = None,
) -> FileResult:
    """Lint one file; with `cache`, store the result under the bytes actually linted."""
    filename = str(path)
    try:
        source = read_source(path)
    except SourceError as error:
        return FileResult(filename, error=FileError(filename, str(error)))
    try:
        result = lint_source(source.text, filename, rules, hot_functions)
    except Exception as error:  # a bug in xlalint must not stop the other files
        return FileResult(filename, error=FileError(filename, _internal(error)))
    if cache is not None:
        cache.store(cache.key(filename, source.raw, rules, hot_functions), result)
    return result


def fix_file(
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    unsafe: bool = False,
    cache: ResultCache | None = None,
) -> FixOutcome | FileError:
    """Fix one file. The caller has asked the cache already (`_cached_fix`); with `cache`,
    an unchanged file's findings are stored for `check`."""
    filename = str(path)
    try:
        source = read_source(path)
    except SourceError as error:
        return FileError(filename, str(error))
    try:
        outcome = fix_text(source, filename, rules, unsafe=unsafe, hot_functions=hot_functions)
    except Exception as error:  # a bug in xlalint must not stop the other files
        return FileError(filename, _internal(error))
    if cache is not None and outcome.error is None and not outcome.changed:
        # The findings of an unchanged text are its lint result: worth keeping for `check`.
        result = FileResult(filename, outcome.remaining)
        cache.store(cache.key(filename, source.raw, rules, hot_functions), result)
    if outcome.error is not None:
        return FileError(filename, outcome.error)
    return outcome


def _unchanged_by_fix(
    source: Source,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str],
    unsafe: bool,
    cache: ResultCache,
) -> FixOutcome | FileError | None:
    """What `fix_text` would return for a file whose cached findings offer no fix to apply
    (its first round would choose nothing), or None when the fixer must run."""
    cached = cache.load(cache.key(filename, source.raw, rules, hot_functions), filename)
    if cached is None:
        return None
    if cached.error is not None:
        return FileError(filename, cached.error.reason)
    if any(allowed(d.fix, unsafe) for d in cached.diagnostics):
        return None
    return FixOutcome(filename, source, source.text, remaining=cached.diagnostics)


def _internal(error: Exception) -> str:
    return f"internal error ({type(error).__name__}: {error}); please report it"


def _raise_recursion_limit() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def _lint_job(job: Job) -> FileResult:
    path, rules, hot_functions, _, cache = job
    return lint_file(Path(path), rules, hot_functions, cache)


def _fix_job(job: Job) -> FixOutcome | FileError:
    path, rules, hot_functions, unsafe, cache = job
    return fix_file(Path(path), rules, hot_functions, unsafe, cache)


def _cached_lint(job: Job) -> FileResult | None:
    path, rules, hot_functions, _, cache = job
    if cache is None:
        return None
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None  # the worker reports it
    return cache.load(cache.key(path, raw, rules, hot_functions), path)


def _cached_fix(job: Job) -> FixOutcome | FileError | None:
    path, rules, hot_functions, unsafe, cache = job
    if cache is None:
        return None
    try:
        source = decode(Path(path).read_bytes())
    except (OSError, SourceError):
        return None  # the worker reports it
    return _unchanged_by_fix(source, path, rules, hot_functions, unsafe, cache)


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


def _run_cached(
    lookup: Callable[[Job], T | None],
    worker: Callable[[Job], T],
    jobs: list[Job],
    processes: int,
) -> list[T]:
    """Answer from the cache here; run `worker` on the misses only; results in job order."""
    results = [lookup(job) for job in jobs]
    misses = [index for index, result in enumerate(results) if result is None]
    computed = _run(worker, [jobs[index] for index in misses], processes)
    for index, result in zip(misses, computed, strict=True):
        results[index] = result
    return results  # type: ignore[return-value]  # no None is left


def _jobs(
    files: Iterable[Path],
    rules: Sequence[type[Rule]],
    settings: Settings,
    unsafe: bool,
    cache: ResultCache | None,
) -> list[Job]:
    every = tuple(rules)
    jobs = []
    for path in files:
        ignored = ignored_codes_for(path, settings)
        kept = tuple(rule for rule in every if rule.code not in ignored) if ignored else every
        jobs.append((str(path), kept, settings.hot_functions, unsafe, cache))
    return jobs


def check_paths(
    paths: Iterable[Path],
    settings: Settings,
    *,
    rules: Sequence[type[Rule]] | None = None,
    jobs: int | None = None,
    cache: ResultCache | None = None,
) -> CheckReport:
    """Lint every file under `paths` with the enabled rules (answered from `cache` where
    it holds a result for the file's current content)."""
    rules = enabled_rules(settings) if rules is None else rules
    found = discover(paths, settings)
    work = _jobs(found.files, rules, settings, unsafe=False, cache=cache)
    results = _run_cached(_cached_lint, _lint_job, work, jobs or default_jobs())
    return CheckReport(results=results, missing=found.missing, empty=found.empty)


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
    cache: ResultCache | None = None,
) -> FixReport:
    """Compute fixes for every file under `paths`; with `apply`, write the changed files.

    With `cache`, a file whose cached findings offer no applicable fix is not parsed: it
    would not change. Files that do change are keyed by new content, so never served stale.
    """
    rules = enabled_rules(settings) if rules is None else rules
    found = discover(paths, settings)
    work = _jobs(found.files, rules, settings, unsafe=unsafe, cache=cache)
    report = FixReport(missing=found.missing, empty=found.empty)
    items = _run_cached(_cached_fix, _fix_job, work, jobs or default_jobs())
    for job, item in zip(work, items, strict=True):
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
