"""What the CLI, the pre-commit hook and tests call: lint or fix paths, get results.

Files are handled in worker processes when there are enough of them to pay for it; results
come back in path order whatever the number of workers, so output is deterministic.
`per-file-ignores` is applied by giving each file only the rules it keeps. With a
`ResultCache`, files whose cached result is current are answered in this process and only
the others go to the workers, which store what they compute.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from xlalint.analysis import project_modules
from xlalint.analysis.xla_api import LATEST, Release
from xlalint.cache import MemoryCache, ResultCache, StaleEntry, current_deps, encode_deps
from xlalint.config import Settings, line_length_for
from xlalint.diagnostics import Diagnostic, FileError, FileResult, allowed
from xlalint.discovery import discover
from xlalint.registry import RuleSet, expand, select_rules
from xlalint.rule import Rule
from xlalint.sources import Source, SourceError, decode, is_notebook, read_bytes
from xlalint.writer import WriteError, write_atomic

if TYPE_CHECKING:  # the engine and the fixer (libcst) are imported where files are linted
    import libcst as cst
    import pathspec

    from xlalint.fixer import FixOutcome
    from xlalint.importer import ParsedTexts

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 16
RECURSION_LIMIT = 10_000
MISSING = "no such file or directory"

# The rule classes themselves travel (pickled by reference), so that rules passed in by the
# caller need not be registered.
# (path, rules, hot functions, unsafe, cache, line length, target release)
Job = tuple[
    str, Sequence[type[Rule]], tuple[str, ...], bool, ResultCache | None, int | None, Release
]
T = TypeVar("T")
Progress = Callable[[int, int], None]  # (files done, files in all)


@dataclass
class CheckReport:
    results: list[FileResult] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    empty: list[Path] = field(default_factory=list)  # folders without a Python file to lint
    # Content linted from somewhere other than its file (stdin), for renderers that quote it.
    buffers: dict[str, bytes] = field(default_factory=dict)
    # The closing fix forecast of the files whose worker ran it right after their lint
    # (`check_paths(forecast=True)`), by filename; `forecast_fixes` runs the others.
    forecasts: dict[str, FixForecast] = field(default_factory=dict)

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


def enabled_fixes(outcome: FixOutcome, unsafe: bool) -> Counter[str]:
    """Fixes applied, per code, beyond those the file's own findings offered: fixes for
    findings that appeared only once other fixes were applied (a fix that adds `import
    torch_xla` turns on the rules that need it)."""
    offered = Counter(d.code for d in outcome.found if allowed(d.fix, unsafe))
    return Counter(
        {code: n - offered[code] for code, n in outcome.applied.items() if n > offered[code]}
    )


@dataclass
class FixForecast:
    """What `xlalint fix --apply` would do to the files `check` linted, from the fixer's
    own fixed point: a fix can bring out findings that `check` could not list yet, and one
    fix can settle more than one finding, so counting `[*]` marks is not enough."""

    marked: int = 0  # findings listed with a safe fix
    safe: int = 0  # fixes `fix --apply` applies
    enabled: Counter[str] = field(default_factory=Counter)  # of them, for findings not listed
    unsafe: int = 0  # fixes `fix --apply --unsafe-fixes` applies
    kept: int = 0  # marked findings `fix --apply` leaves (a fix dropped or held back)


def enabled_rules(settings: Settings) -> RuleSet:
    return select_rules(settings.select, settings.extend_select, settings.ignore)


@cache
def _ignore_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    import pathspec

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
    target: Release = LATEST,
) -> FileResult:
    """Lint one file; with `cache`, store the result under the bytes actually linted."""
    return _lint_file_keyed(path, rules, hot_functions, cache, target)[1]


def _lint_file_keyed(
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str],
    cache: ResultCache | None,
    target: Release,
    whole: dict[str, cst.Module] | None = None,
) -> tuple[str | None, FileResult]:
    """`lint_file`, and the cache key of the bytes it linted (None: not stored). `whole`:
    see `engine.lint_source`."""
    filename = str(path)
    try:
        raw = read_bytes(path)
        with project_modules.recording() as noted:
            result = _lint_raw(raw, path, rules, hot_functions, target, whole)
        result.deps = project_modules.frozen(noted)  # the depfile its cache entry keeps
    except SourceError as error:
        return None, FileResult(filename, error=FileError(filename, str(error)))
    except Exception as error:  # a bug in xlalint must not stop the other files
        return None, FileResult(filename, error=FileError(filename, _internal(error)))
    if cache is None:
        return None, result
    key = cache.key(filename, raw, rules, hot_functions, target)
    cache.store(key, result)
    return key, result


def _lint_raw(
    raw: bytes,
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str],
    target: Release = LATEST,
    whole: dict[str, cst.Module] | None = None,
) -> FileResult:
    if is_notebook(path):
        from xlalint.notebooks import lint_notebook

        return lint_notebook(raw, str(path), rules, hot_functions, target)
    from xlalint.cst_import import import_libcst

    import_libcst()  # (before the engine's modules import it)
    from xlalint.engine import lint_source

    return lint_source(decode(raw).text, str(path), rules, hot_functions, target, whole=whole)


def lint_source_file(
    raw: bytes,
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    target: Release = LATEST,
) -> FileResult:
    """Lint `raw` as the content of `path`, which need not exist (stdin)."""
    filename = str(path)
    try:
        return _lint_raw(raw, path, rules, hot_functions, target)
    except SourceError as error:
        return FileResult(filename, error=FileError(filename, str(error)))
    except Exception as error:  # a bug in xlalint must not crash the caller
        return FileResult(filename, error=FileError(filename, _internal(error)))


def fix_file(
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    unsafe: bool = False,
    cache: ResultCache | None = None,
    line_length: int | None = None,
    target: Release = LATEST,
) -> FixOutcome | FileError:
    """Fix one file. The caller has asked the cache already (`_cached_fix`); with `cache`,
    an unchanged file's findings are stored for `check`."""
    filename = str(path)
    try:
        raw = read_bytes(path)
    except SourceError as error:
        return FileError(filename, str(error))
    with project_modules.recording() as noted:
        outcome = fix_source(raw, path, rules, hot_functions, unsafe, line_length, target)
    if isinstance(outcome, FileError):
        return outcome
    source = outcome.original
    if cache is not None and outcome.error is None and not outcome.changed:
        # The findings of an unchanged text are its lint result: worth keeping for `check`,
        # with the modules its lint consulted.
        result = FileResult(filename, outcome.remaining, deps=project_modules.frozen(noted))
        cache.store(cache.key(filename, source.raw, rules, hot_functions, target), result)
    if outcome.error is not None:
        return FileError(filename, outcome.error)
    return outcome


def fix_source(
    raw: bytes,
    path: Path,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    unsafe: bool = False,
    line_length: int | None = None,
    target: Release = LATEST,
    lints: dict[str, FileResult] | None = None,
    parsed: ParsedTexts | None = None,
    fixes_only: bool = False,
) -> FixOutcome | FileError:
    """Fix `raw` as the content of `path`, which need not exist (stdin). The outcome's
    `error` is set when the text cannot be linted. `lints`, `parsed`, `fixes_only`: see
    `fixer.fix_text` (a notebook's fixer lints every text with all of `rules`)."""
    filename = str(path)
    try:
        if is_notebook(path):
            from xlalint.notebooks import fix_notebook

            return fix_notebook(
                raw,
                filename,
                rules,
                unsafe=unsafe,
                hot_functions=hot_functions,
                line_length=line_length,
                target=target,
            )
        from xlalint.fixer import fix_text

        return fix_text(
            decode(raw),
            filename,
            rules,
            unsafe=unsafe,
            hot_functions=hot_functions,
            line_length=line_length,
            target=target,
            lints=lints,
            parsed=parsed,
            fixes_only=fixes_only,
        )
    except SourceError as error:
        return FileError(filename, str(error))
    except Exception as error:  # a bug in xlalint must not stop the other files
        return FileError(filename, _internal(error))


def _unchanged_by_fix(
    source: Source,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str],
    unsafe: bool,
    cache: ResultCache,
    target: Release = LATEST,
) -> FixOutcome | FileError | None:
    """What `fix_text` would return for a file whose cached findings offer no fix to apply
    (its first round would choose nothing), or None when the fixer must run."""
    cached = cache.load(cache.key(filename, source.raw, rules, hot_functions, target), filename)
    if cached is None:
        return None
    if cached.error is not None:
        return FileError(filename, cached.error.reason)
    if any(allowed(d.fix, unsafe) for d in cached.diagnostics):
        return None
    from xlalint.fixer import FixOutcome

    found = cached.diagnostics
    return FixOutcome(filename, source, source.text, remaining=found, found=found)


def _internal(error: Exception) -> str:
    return f"internal error ({type(error).__name__}: {error}); please report it"


def _raise_recursion_limit() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def _lint_job(job: Job) -> FileResult:
    path, rules, hot_functions, _, cache, _, target = job
    return lint_file(Path(path), rules, hot_functions, cache, target)


def _keyed_lint_job(job: Job) -> tuple[str | None, FileResult]:
    path, rules, hot_functions, _, cache, _, target = job
    return _lint_file_keyed(Path(path), rules, hot_functions, cache, target)


def _keyed_lint_forecast_job(job: Job) -> tuple[str | None, FileResult, FixForecast | None]:
    """`_keyed_lint_job`, then, for a file with a fixable finding, the closing forecast's
    fixer run on it at once in the same worker (None for the others): it starts from this
    lint's result and, where the lint parsed the whole text, its tree; and it meets the
    summaries of other modules (callers, bases, helpers) that this worker made already,
    which a pool of its own made again.

    The lint and the fixer's lints of the fixed texts share one `lint_memo.lint_scope`:
    what the layers learn from the disk (the file's own module as `module_reads` reads it,
    the other modules' trees `project_modules` holds, stats) is the same for every text
    of the file, and each lint of a fixed text made it again; memos keyed by libcst nodes
    never meet another text's nodes, and those keyed by text see the fixed text's own."""
    from xlalint import lint_memo

    with lint_memo.lint_scope():
        # (The trees go with the call's frame, before the scope's end lets the cyclic
        # collector run again: it would go over them all.)
        return _lint_forecast(job)


def _lint_forecast(job: Job) -> tuple[str | None, FileResult, FixForecast | None]:
    path, rules, hot_functions, _, cache, line_length, target = job
    whole: dict[str, cst.Module] = {}
    key, result = _lint_file_keyed(Path(path), rules, hot_functions, cache, target, whole)
    if not any(d.fix is not None for d in result.diagnostics):
        return key, result, None
    from xlalint.importer import ParsedTexts

    parsed = ParsedTexts()
    for text, module in whole.items():
        parsed.lend(text, module)
    whole.clear()
    forecast = _forecast_file(Path(path), rules, hot_functions, line_length, target, cache, parsed)
    return key, result, forecast


def _cached_keyed_forecast_lint(
    job: Job,
) -> tuple[str | None, FileResult, FixForecast | None] | None:
    result = _cached_lint(job)
    return None if result is None else (None, result, None)


def _fix_job(job: Job) -> FixOutcome | FileError:
    path, rules, hot_functions, unsafe, cache, line_length, target = job
    return fix_file(Path(path), rules, hot_functions, unsafe, cache, line_length, target)


def _job_key(job: Job) -> str | None:
    """The cache key of a job's file as it is now; None without a cache or a readable file
    (the worker reports it)."""
    path, rules, hot_functions, _, cache, _, target = job
    if cache is None:
        return None
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    return cache.key(path, raw, rules, hot_functions, target)


def _cached_lint(job: Job) -> FileResult | None:
    key = _job_key(job)
    cache = job[4]
    return None if key is None or cache is None else cache.load(key, job[0])


def _cached_fix(job: Job) -> FixOutcome | FileError | None:
    path, rules, hot_functions, unsafe, cache, _, target = job
    if cache is None:
        return None
    try:
        source = decode(Path(path).read_bytes())
    except (OSError, SourceError):
        return None  # the worker reports it
    return _unchanged_by_fix(source, path, rules, hot_functions, unsafe, cache, target)


def default_jobs() -> int:
    return os.cpu_count() or 1


def _run(
    worker: Callable[[Job], T],
    jobs: list[Job],
    processes: int,
    done: Callable[[], None] = lambda: None,
) -> list[T]:
    """Run `worker` over `jobs`, in a process pool when it pays; results in job order.
    `done` is called as each result arrives (for a progress bar)."""
    _raise_recursion_limit()
    if processes <= 1 or len(jobs) < PARALLEL_THRESHOLD:
        results = []
        for job in jobs:
            results.append(worker(job))
            done()
        return results
    import multiprocessing  # only runs large enough for a pool pay for its import
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    chunk = max(1, len(jobs) // (processes * 8))
    with ProcessPoolExecutor(
        max_workers=processes, mp_context=context, initializer=_raise_recursion_limit
    ) as pool:
        results = []
        for result in pool.map(worker, jobs, chunksize=chunk):
            results.append(result)
            done()
        return results


def _run_cached(
    lookup: Callable[[Job], T | None],
    worker: Callable[[Job], T],
    jobs: list[Job],
    processes: int,
    progress: Progress | None = None,
) -> list[T]:
    """Answer from the cache here; run `worker` on the misses only; results in job order.
    `progress(done, total)` hears of each file as it is answered."""
    report = progress or (lambda done, total: None)
    count = 0

    def done() -> None:
        nonlocal count
        count += 1
        report(count, len(jobs))

    results = []
    for job in jobs:
        results.append(lookup(job))
        if results[-1] is not None:
            done()
    misses = [index for index, result in enumerate(results) if result is None]
    computed = _run(worker, [jobs[index] for index in misses], processes, done)
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
    every = rules if isinstance(rules, RuleSet) else tuple(rules)
    line_length = line_length_for(settings)
    return [
        (
            str(path),
            rules_for(path, every, settings),
            settings.hot_functions,
            unsafe,
            cache,
            line_length,
            settings.target_version,
        )
        for path in files
    ]


def rules_for(path: Path, rules: Sequence[type[Rule]], settings: Settings) -> Sequence[type[Rule]]:
    """`rules` without the codes `per-file-ignores` turns off for `path`."""
    ignored = ignored_codes_for(path, settings)
    if not ignored:
        return rules
    if isinstance(rules, RuleSet):
        return rules.without(ignored)
    return tuple(rule for rule in rules if rule.code not in ignored)


def check_paths(
    paths: Iterable[Path],
    settings: Settings,
    *,
    rules: Sequence[type[Rule]] | None = None,
    jobs: int | None = None,
    cache: ResultCache | None = None,
    progress: Progress | None = None,
    forecast: bool = False,
) -> CheckReport:
    """Lint every file under `paths` with the enabled rules (answered from `cache` where
    it holds a result for the file's current content); `progress(done, total)` is told of
    each file linted. With `forecast` and a `MemoryCache` (`check --no-cache`), the worker
    that lints a file with a fixable finding runs the closing fix forecast on it too
    (`CheckReport.forecasts`; `forecast_fixes` adds up those and runs the others)."""
    rules = enabled_rules(settings) if rules is None else rules
    found = discover(paths, settings)
    work = _jobs(found.files, rules, settings, unsafe=False, cache=cache)
    processes = jobs or default_jobs()
    if forecast and isinstance(cache, MemoryCache):
        both = _run_cached(
            _cached_keyed_forecast_lint, _keyed_lint_forecast_job, work, processes, progress
        )
        forecasts: dict[str, FixForecast] = {}
        for key, result, fixes in both:
            if key is not None:
                cache.store(key, result)
            if fixes is not None:
                forecasts[result.filename] = fixes
        return CheckReport(
            results=[result for _, result, _ in both],
            missing=found.missing,
            empty=found.empty,
            forecasts=forecasts,
        )
    if isinstance(cache, MemoryCache):
        # Worker processes store into their own copy: the results come back with the key
        # of the bytes each linted, to be kept here for the closing forecast.
        keyed = _run_cached(_cached_keyed_lint, _keyed_lint_job, work, processes, progress)
        for key, result in keyed:
            if key is not None:
                cache.store(key, result)
        results = [result for _, result in keyed]
    else:
        results = _run_cached(_cached_lint, _lint_job, work, processes, progress)
    return CheckReport(results=results, missing=found.missing, empty=found.empty)


def _cached_keyed_lint(job: Job) -> tuple[str | None, FileResult] | None:
    result = _cached_lint(job)
    return None if result is None else (None, result)


def _forecast_file(
    path: Path,
    rules: Sequence[type[Rule]],
    hot: Sequence[str],
    line_length: int | None = None,
    target: Release = LATEST,
    cache: ResultCache | None = None,
    parsed: ParsedTexts | None = None,
) -> FixForecast:
    """Run the fixer on one file, writing nothing: safe fixes alone, then with unsafe ones.
    With `cache`, the check's result for these very bytes is the fixer's first lint;
    `parsed`: trees of texts the check parsed already (`ParsedTexts.lend`)."""
    forecast = FixForecast()
    try:
        raw = read_bytes(path)
    except SourceError:
        return forecast
    from xlalint.importer import ParsedTexts

    # Texts both runs reach are linted, and parsed for their imports, once.
    lints: dict[str, FileResult] = {}
    if cache is not None and not is_notebook(path):
        known = cache.load(cache.key(str(path), raw, rules, hot, target), str(path))
        if known is not None:
            # This lint is not run again, but the forecast rests on what it consulted.
            project_modules.note(dep for dep, _ in known.deps)
        if known is not None and known.error is None:
            with contextlib.suppress(SourceError):  # the fixer reports it
                lints[decode(raw).text] = known
    parsed = ParsedTexts() if parsed is None else parsed
    for unsafe in (False, True):
        if unsafe and not is_notebook(path) and not _unsafe_only_fixes(lints):
            # Every text the safe run linted is in `lints`, and none offers a fix that
            # only `--unsafe-fixes` applies: the unsafe run would choose the same fixes
            # in every round, reach the same texts and apply as many.
            forecast.unsafe = forecast.safe
            continue
        # The fixed texts are linted with the rules that may offer a fix alone: the
        # forecast counts fixes (`fixer.fix_text`'s `fixes_only`).
        item = fix_source(
            raw, path, rules, hot, unsafe, line_length, target, lints, parsed, fixes_only=True
        )
        if isinstance(item, FileError) or item.error is not None:
            return FixForecast()
        applied = sum(item.applied.values())
        if unsafe:
            forecast.unsafe = applied
            continue
        enabled = enabled_fixes(item, unsafe=False)
        marked = sum(1 for d in item.found if allowed(d.fix, False))
        unapplied = marked - (applied - sum(enabled.values()))
        forecast.marked, forecast.safe, forecast.enabled = marked, applied, enabled
        if unapplied > 0:
            # Findings left beyond those that had no safe fix: marked ones the fixer kept.
            # Only here does the count of every finding left matter (`kept` is 0 where
            # nothing marked went unapplied): the fixed text's lint by all the rules.
            remaining = _all_remaining(item, rules, hot, target, parsed)
            if remaining is None:
                return FixForecast()  # as where the fixer's own lint of it failed
            beyond = len(remaining)
            forecast.kept = max(0, min(unapplied, beyond - (len(item.found) - marked)))
    return forecast


def _all_remaining(
    item: FixOutcome,
    rules: Sequence[type[Rule]],
    hot: Sequence[str],
    target: Release,
    parsed: ParsedTexts,
) -> list[Diagnostic] | None:
    """The findings every rule makes in the fixer's last text: its `remaining` where the
    text is the file's own (that lint ran with all the rules), else a lint by all of them
    of the tree its parse guard made (None where that lint fails)."""
    if is_notebook(Path(item.filename)) or item.text == item.original.text:
        return item.remaining
    from xlalint.engine import lint_source

    module = parsed.known(item.text)
    result = lint_source(item.text, item.filename, rules, hot, target, module)
    return None if result.error is not None else result.diagnostics


def _unsafe_only_fixes(lints: dict[str, FileResult]) -> bool:
    """Whether a finding of these lints has a fix that only `--unsafe-fixes` applies."""
    return any(
        allowed(d.fix, True) and not allowed(d.fix, False)
        for result in lints.values()
        for d in result.diagnostics
    )


def _forecast_key(job: Job) -> str | None:
    key = _job_key(job)
    return None if key is None else key + "-fixes"


def _cached_forecast(job: Job) -> FixForecast | None:
    key = _forecast_key(job)
    data = None if key is None or job[4] is None else job[4].load_data(key)
    if not isinstance(data, dict):
        return None
    try:
        current_deps(data)  # a module the fixer's lints consulted changed: a miss
        fields = {k: v for k, v in data.items() if k != "deps"}
        return FixForecast(**{**fields, "enabled": Counter(data["enabled"])})
    except (TypeError, KeyError, IndexError, StaleEntry):
        return None


def _forecast_job(job: Job) -> FixForecast:
    path, rules, hot_functions, _, cache, line_length, target = job
    with project_modules.recording() as noted:
        forecast = _forecast_file(Path(path), rules, hot_functions, line_length, target, cache)
    key = _forecast_key(job)
    if cache is not None and key is not None:
        data = {**asdict(forecast), "enabled": dict(forecast.enabled)}
        if noted:
            data["deps"] = encode_deps(project_modules.frozen(noted))
        cache.store_data(key, data)
    return forecast


def forecast_fixes(
    report: CheckReport,
    settings: Settings,
    *,
    rules: Sequence[type[Rule]] | None = None,
    jobs: int | None = None,
    cache: ResultCache | None = None,
) -> FixForecast:
    """What `fix --apply` (and with `--unsafe-fixes`) would do to the files of `report`:
    the fixer runs, writing nothing, on each file with a fixable finding (the others would
    not change); with `cache`, a file's forecast is kept under its content, like its
    findings."""
    rules = enabled_rules(settings) if rules is None else rules
    fixable = [
        Path(r.filename)
        for r in report.results
        if r.filename not in report.forecasts and any(d.fix is not None for d in r.diagnostics)
    ]
    work = _jobs(fixable, rules, settings, unsafe=False, cache=cache)
    total = FixForecast()
    done = _run_cached(_cached_forecast, _forecast_job, work, jobs or default_jobs())
    for forecast in [*report.forecasts.values(), *done]:
        total.marked += forecast.marked
        total.safe += forecast.safe
        total.enabled.update(forecast.enabled)
        total.unsafe += forecast.unsafe
        total.kept += forecast.kept
    return total


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
