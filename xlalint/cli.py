"""The `xlalint` command: parse arguments, call the API, set the exit code.

Exit codes, as in ruff: 0 no findings, 1 findings (or files that could not be linted),
2 usage or configuration errors.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import click

from xlalint import __version__, code_store

# Before xlalint's modules make their dataclasses and compile their expressions: the
# generated methods' code and the expressions' programs, xlalint's and libcst's, from the
# user's cache folder (`code_store`; round 25).
code_store.install_for_process()

from xlalint.api import (
    CheckReport,
    FixForecast,
    FixReport,
    check_paths,
    enabled_fixes,
    enabled_rules,
    fix_paths,
    forecast_fixes,
)
from xlalint.cache import (
    ENV_CACHE_DIR,
    ENV_NO_CACHE,
    CleanError,
    MemoryCache,
    ResultCache,
    default_cache_dir,
)
from xlalint.config import (
    ConfigError,
    Settings,
    find_settings,
    load_config_file,
    target_version,
)
from xlalint.diagnostics import Applicability, FileError, FixAvailability, allowed
from xlalint.harness import DEVICES
from xlalint.registry import (
    all_rules,
    did_you_mean,
    get_rule,
    unknown_selectors_message,
    validate_selectors,
)
from xlalint.report import FORMATS, HUMAN_FORMATS, plural
from xlalint.report.concise import header as concise_header
from xlalint.report.progress import progress_bar
from xlalint.stdin import check_stdin, fix_stdin

# Imported where a command needs them, not at start-up: the runtime harness (rich, the
# profiler), the rules' docs and the fixer (libcst). A `check` answered from the cache
# imports neither libcst nor rich (`tests/test_startup.py`).

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class ConfigProblem(click.ClickException):
    """A bad config file: exit 2, like any usage error."""

    exit_code = EXIT_ERROR


def _split_selectors(values: Sequence[str]) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(s.strip() for value in values for s in value.split(",") if s.strip())


def _check_selectors(option: str, selectors: Sequence[str] | None) -> None:
    unknown = validate_selectors(selectors or ())
    if unknown:
        raise click.BadParameter(
            f"{unknown_selectors_message(unknown)}; see `xlalint rules`", param_hint=option
        )


def _common_folder(paths: Sequence[Path]) -> Path:
    """Where to look for the config: the deepest folder holding every path. A path that
    cannot be resolved (a symlink loop) counts as written; discovery reports it."""
    resolved = [_resolved(p) for p in paths]
    try:
        return Path(os.path.commonpath(resolved))
    except ValueError:
        return Path.cwd()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def resolve_settings(
    paths: Sequence[Path],
    config: Path | None,
    select: Sequence[str],
    extend_select: Sequence[str],
    ignore: Sequence[str],
    force_exclude: bool | None = None,
    target: str | None = None,
) -> Settings:
    """Config file settings with command-line selectors (and `--target-version`) on top."""
    selected, extended, ignored = (
        _split_selectors(select),
        _split_selectors(extend_select),
        _split_selectors(ignore),
    )
    _check_selectors("--select", selected)
    _check_selectors("--extend-select", extended)
    _check_selectors("--ignore", ignored)
    try:
        release = None if target is None else target_version("--target-version", target)
        settings = load_config_file(config) if config else find_settings(_common_folder(paths))
    except ConfigError as error:
        raise ConfigProblem(str(error)) from None
    return settings.with_overrides(
        target_version=release,
        select=selected,
        extend_select=(*settings.extend_select, *(extended or ())) if extended else None,
        ignore=(*settings.ignore, *(ignored or ())) if ignored else None,
        force_exclude=force_exclude or None,
    )


def summary(report: CheckReport, forecast: FixForecast | None = None) -> str:
    """The closing lines of `check`. With `forecast` (the fixer's own fixed point), the
    fixable counts are what `xlalint fix --apply` will fix, and say why they differ from
    the findings marked `[*]`; without it, they count the marks."""
    diagnostics = report.diagnostics
    lines = []
    if report.missing:
        lines.append(f"{plural(len(report.missing), 'path')} not found.")
    if report.errors:
        count = len(report.errors)
        lines.append(f"{plural(count, 'file')} could not be linted.")
    if not diagnostics:
        if not report.problems:
            lines.append("All checks passed!")
        return "\n".join(lines) + "\n"
    files = len({d.filename for d in diagnostics})
    lines.append(f"Found {plural(len(diagnostics), 'finding')} in {plural(files, 'file')}.")
    if forecast is None:
        marked = sum(1 for d in diagnostics if allowed(d.fix, unsafe=False))
        forecast = FixForecast(
            marked=marked, safe=marked, unsafe=sum(1 for d in diagnostics if d.fix)
        )
    if fixable := _fixable_line(forecast):
        lines.append(fixable)
    return "\n".join(lines) + "\n"


def _fixable_line(forecast: FixForecast) -> str:
    more = forecast.unsafe - forecast.safe
    if forecast.safe == 0:
        return f"No safe fixes; {more} with `xlalint fix --apply --unsafe-fixes`." if more else ""
    hidden = f" ({more} more with `--unsafe-fixes`)" if more > 0 else ""
    lines = [f"[*] {forecast.safe} fixable with `xlalint fix --apply`{hidden}."]
    enabled = sum(forecast.enabled.values())
    if enabled:
        listed = forecast.safe - enabled
        lines.append(
            f"Of these, {listed} {'is' if listed == 1 else 'are'} marked [*] and {enabled} "
            f"({', '.join(sorted(forecast.enabled))}) {'appears' if enabled == 1 else 'appear'} "
            "only once other fixes are applied: a fix can enable another."
        )
    unapplied = forecast.marked - (forecast.safe - enabled)
    if forecast.kept:
        lines.append(
            f"{_of_the_marked(forecast.kept, forecast.marked)} "
            f"{'stays: its fix' if forecast.kept == 1 else 'stay: their fixes'} "
            "cannot be applied with the others."
        )
    settled = unapplied - forecast.kept
    if settled > 0:
        lines.append(
            f"{_of_the_marked(settled, forecast.marked)} "
            f"{'goes' if settled == 1 else 'go'} away with another finding's fix."
        )
    return "\n".join(lines)


def _of_the_marked(count: int, marked: int) -> str:
    if marked == 1:
        return "The finding marked [*]"
    return f"{count} of the {marked} findings marked [*]"


def _enabled_note(report: FixReport, unsafe: bool, *, would: bool = False) -> str:
    """Why `fix` fixed more findings than `check` marked: fixes that enable other fixes."""
    enabled: Counter[str] = Counter()
    for outcome in report.outcomes:
        enabled.update(enabled_fixes(outcome, unsafe))
    count = sum(enabled.values())
    if not count:
        return ""
    verb = ("is" if count == 1 else "are") if would else ("was" if count == 1 else "were")
    return (
        f"{count} of them ({', '.join(sorted(enabled))}) {verb} found only once other fixes "
        f"{'are' if would else 'were'} applied: a fix can enable another."
    )


def statistics(report: CheckReport, output_format: str) -> str:
    counts = Counter(d.code for d in report.diagnostics)
    names = {d.code: d.name for d in report.diagnostics}
    # `[*]` means what it means in the other outputs: `xlalint fix --apply` fixes some.
    safe = {
        d.code for d in report.diagnostics if d.fix and d.fix.applicability is Applicability.SAFE
    }
    rows = [
        {"code": code, "name": names[code], "count": count, "fixable": code in safe}
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    if output_format == "json":
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(row["count"])) for row in rows), default=1)
    return "".join(
        f"{row['count']:>{width}}\t{row['code']}\t{'[*] ' if row['fixable'] else ''}{row['name']}\n"
        for row in rows
    )


selector_options = [
    click.option("--select", multiple=True, metavar="CODES",
                 help="Rules to enable (codes or prefixes, comma-separated; `ALL`)."),
    click.option("--extend-select", multiple=True, metavar="CODES",
                 help="Rules to enable on top of the configured selection."),
    click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable."),
    click.option("--config", type=click.Path(path_type=Path, dir_okay=False),
                 help="Use this xlalint.toml or pyproject.toml instead of searching for one."),
    click.option("--force-exclude", is_flag=True, default=None,
                 help="Apply exclusions to files named on the command line too."),
    click.option("--target-version", metavar="X.Y",
                 help="The torch_xla release the code runs on (default: the config's, else "
                      "the newest supported): fixes write its APIs."),
]  # fmt: skip


jobs_option = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per CPU; small runs stay in one process).",
)


stdin_option = click.option(
    "--stdin-filename",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Read the source from standard input and treat it as this file (its config, "
    "per-file-ignores and file type apply).",
)


def stdin_target(paths: Sequence[Path], stdin_filename: Path | None) -> Path | None:
    """The file standard input stands for, or None when linting paths (ruff's rule: a
    `--stdin-filename` means stdin whatever else is named; so does a lone `-`)."""
    if stdin_filename is not None:
        for other in paths:
            if str(other) != "-":
                click.echo(f"warning: ignoring {other} in favour of standard input", err=True)
        return stdin_filename
    if [str(p) for p in paths] == ["-"]:
        return Path("-")
    return None


def _read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def _fix_stdin(path: Path, settings: Settings, unsafe: bool, quiet: bool) -> None:
    """Write the fixed source to stdout (the input as it is when nothing applies), what
    remains to stderr; exit 1 if findings remain, as with `fix --apply`."""
    fixed, report = fix_stdin(_read_stdin(), path, settings, enabled_rules(settings), unsafe)
    sys.stdout.flush()
    sys.stdout.buffer.write(fixed)
    sys.stdout.buffer.flush()
    for error in report.errors:
        click.echo(f"error: {error.filename}: {error.reason}", err=True)
    _echo_fix_problems(report)
    for diagnostic in report.remaining:
        click.echo(concise_header(diagnostic), err=True)
    if not quiet:
        click.echo(f"Fixed {_applied_summary(report)}.", err=True)
    raise SystemExit(EXIT_FINDINGS if report.remaining or report.errors else EXIT_CLEAN)


def with_selector_options(function):  # type: ignore[no-untyped-def]
    for option in reversed(selector_options):
        function = option(function)
    return function


cache_dir_option = click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar=ENV_CACHE_DIR,
    help="Cache folder (default: .xlalint_cache in the project root).",
)
cache_options = [
    click.option(
        "--no-cache",
        is_flag=True,
        envvar=ENV_NO_CACHE,
        help="Neither read nor write the result cache.",
    ),
    cache_dir_option,
]


def with_cache_options(function):  # type: ignore[no-untyped-def]
    for option in reversed(cache_options):
        function = option(function)
    return function


def result_cache(settings: Settings, no_cache: bool, cache_dir: Path | None) -> ResultCache | None:
    if no_cache:
        return None
    return ResultCache(cache_dir or default_cache_dir(settings.root))


class LazyGroup(click.Group):
    """A command group whose heavy commands (the runtime harness) are imported only when
    named, or when `--help` lists them."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy: dict[str, str] = {}

    def add_lazy_command(self, name: str, target: str) -> None:
        self._lazy[name] = target

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy and cmd_name not in self.commands:
            module, _, attribute = self._lazy[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="xlalint")
def main() -> None:
    """Find and fix PyTorch code that runs badly on XLA devices (TPUs)."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@with_selector_options
@click.option(
    "--output-format",
    type=click.Choice(list(FORMATS)),
    default="full",
    show_default=True,
    envvar="XLALINT_OUTPUT_FORMAT",
    help="How to print findings.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--statistics",
    "show_statistics",
    is_flag=True,
    help="Print a count per rule instead of each finding.",
)
@jobs_option
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--fix", is_flag=True, help="Apply fixes, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix, apply unsafe fixes too.")
@stdin_option
@with_cache_options
def check(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config: Path | None,
    force_exclude: bool | None,
    target_version: str | None,
    output_format: str,
    exit_zero: bool,
    show_statistics: bool,
    jobs: int | None,
    quiet: bool,
    fix: bool,
    unsafe_fixes: bool,
    stdin_filename: Path | None,
    no_cache: bool,
    cache_dir: Path | None,
) -> None:
    """Lint PATHS (default: the current folder) for XLA performance pitfalls.

    With `--stdin-filename PATH` (or a lone `-`), lint standard input as PATH; with
    `--fix`, the fixed source goes to stdout and the findings left to stderr.
    """
    stdin_path = stdin_target(paths, stdin_filename)
    targets = [stdin_path] if stdin_path else list(paths) or [Path(".")]
    settings = resolve_settings(
        targets, config, select, extend_select, ignore, force_exclude, target_version
    )
    if stdin_path is not None and fix:
        _fix_stdin(stdin_path, settings, unsafe_fixes, quiet)
    rules = enabled_rules(settings)
    cache = result_cache(settings, no_cache, cache_dir)
    forecasting = stdin_path is None and not show_statistics
    forecasting = forecasting and output_format in HUMAN_FORMATS and not quiet
    if cache is None and forecasting:
        # The closing forecast's first lint of each file is then the check's result.
        cache = MemoryCache()
    fixed = 0
    fixes = FixReport()
    fix_errors: list[FileError] = []
    if stdin_path is not None:
        report = check_stdin(_read_stdin(), stdin_path, settings, rules)
    elif fix:
        fixes = fix_paths(
            targets, settings, rules=rules, unsafe=unsafe_fixes, apply=True, jobs=jobs, cache=cache
        )
        fixed = sum(sum(o.applied.values()) for o in fixes.outcomes)
        fix_errors = fixes.errors
        _echo_fix_problems(fixes)
    if stdin_path is None:
        # A bar while a large run lints, for people watching a terminal; never in machine
        # formats.
        bar = progress_bar(sys.stderr, output_format in HUMAN_FORMATS and not quiet)
        try:
            # Without a cache on disk, each worker forecasts the fixes of the files it
            # lints as it goes (`check_paths(forecast=True)`).
            report = check_paths(
                targets,
                settings,
                rules=rules,
                jobs=jobs,
                cache=cache,
                progress=bar,
                forecast=forecasting,
            )
        finally:
            if bar is not None:
                bar.close()

    _echo_path_problems(report)
    for error in report.errors:
        click.echo(f"error: {error.filename}: {error.reason}", err=True)
    linting = {(error.filename, error.reason) for error in report.errors}
    for error in fix_errors:
        if (error.filename, error.reason) not in linting:  # e.g. a read-only file
            click.echo(f"error: {error.filename}: {error.reason}", err=True)

    if show_statistics:
        click.echo(statistics(report, output_format), nl=False)
    else:
        click.echo(FORMATS[output_format](report, rules), nl=False)
        if output_format in HUMAN_FORMATS and not quiet:
            if fix:
                click.echo(f"Fixed {plural(fixed, 'finding')}." if fixed else "No fixes applied.")
                if note := _enabled_note(fixes, unsafe_fixes):
                    click.echo(note)
            # The forecast reruns the fixer on the files; a buffer from stdin is not one.
            click.echo(
                summary(
                    report,
                    forecast_fixes(report, settings, rules=rules, jobs=jobs, cache=cache)
                    if forecasting
                    else None,
                ),
                nl=False,
            )

    if report.missing:
        raise SystemExit(EXIT_ERROR)
    if (report.diagnostics or report.errors) and not exit_zero:
        raise SystemExit(EXIT_FINDINGS)


def _echo_path_problems(report: CheckReport | FixReport) -> None:
    """Paths named on the command line that do not exist, or hold no Python file to lint
    (ruff warns about those too: a typo in a path must not pass as a clean run)."""
    for missing in report.missing:
        click.echo(f"error: {missing}: no such file or directory", err=True)
    for folder in report.empty:
        click.echo(f"warning: {folder}: no Python files found", err=True)


def _echo_fix_problems(report: FixReport) -> None:
    for outcome in report.outcomes:
        for dropped in outcome.dropped:
            click.echo(
                f"warning: {outcome.filename}: fix for {dropped} dropped: "
                "its result would not parse",
                err=True,
            )


def _applied_line(report: FixReport, verb: str, nothing: str) -> str:
    if not any(o.applied for o in report.outcomes):
        return nothing
    return f"{verb} {_applied_summary(report)}."


def _applied_summary(report: FixReport) -> str:
    counts: dict[str, int] = {}
    for outcome in report.outcomes:
        for code, count in outcome.applied.items():
            counts[code] = counts.get(code, 0) + count
    total = sum(counts.values())
    files = sum(1 for o in report.outcomes if o.changed)
    detail = ", ".join(f"{code} x{count}" for code, count in sorted(counts.items()))
    return f"{plural(total, 'finding')} in {plural(files, 'file')}" + (
        f" ({detail})" if detail else ""
    )


@main.command("fix")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@with_selector_options
@click.option("--apply", is_flag=True, help="Write the fixes (default: print them as a diff).")
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Include unsafe fixes, which change behaviour or need review.",
)
@jobs_option
@click.option("-q", "--quiet", is_flag=True, help="Print the diff or findings only.")
@click.option(
    "--verify",
    is_flag=True,
    help="Run `-- python SCRIPT ARGS` as it is and with the fixes (on a temporary copy of "
    "the current folder) on the XLA device, and compare the two.",
)
@click.option("--device", type=click.Choice(DEVICES), default="auto", help="With --verify.")
@click.option(
    "--fix-only",
    is_flag=True,
    help="With --apply, exit 0 even when findings remain (they are not listed), as ruff.",
)
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="With --apply, exit 1 when a file was changed, even if no finding remains.",
)
@stdin_option
@with_cache_options
def fix_command(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config: Path | None,
    force_exclude: bool | None,
    target_version: str | None,
    apply: bool,
    unsafe_fixes: bool,
    jobs: int | None,
    quiet: bool,
    verify: bool,
    device: str,
    fix_only: bool,
    exit_non_zero_on_fix: bool,
    stdin_filename: Path | None,
    no_cache: bool,
    cache_dir: Path | None,
) -> None:
    """Rewrite PATHS for XLA: show the fixes as a diff, or write them with --apply.

    Without --apply, exits 1 if any file would change. With --apply, exits 1 if findings
    remain after fixing (with --fix-only, never for that), or if a file was changed and
    --exit-non-zero-on-fix is given; 1 too for files that could not be linted or written.

    \b
    xlalint fix --verify [--unsafe-fixes] [--apply] -- python train.py ARGS
    fixes the current folder; the script's command comes after `--`. Exits 1 when the
    fixed script fails or, with safe fixes only, prints different numbers; --apply then
    writes nothing.

    \b
    xlalint fix --stdin-filename PATH -
    fixes standard input as PATH: the fixed source on stdout, findings left on stderr;
    exits 1 if findings remain.
    """
    stdin_path = None if verify else stdin_target(paths, stdin_filename)
    if stdin_path is not None:
        settings = resolve_settings([stdin_path], config, select, extend_select, ignore,
                                    force_exclude, target_version)  # fmt: skip
        _fix_stdin(stdin_path, settings, unsafe_fixes, quiet)
    if verify:
        verified = _verify_fixes(
            [str(p) for p in paths],
            config,
            select,
            extend_select,
            ignore,
            unsafe_fixes,
            device,
            target_version,
        )
        if not verified:
            if apply:
                click.echo("Not applied: the run showed the fixes break the script.", err=True)
            raise SystemExit(EXIT_FINDINGS)
        if not apply:
            raise SystemExit(EXIT_CLEAN)
        # The current folder, and the script even where `exclude` leaves its folder out.
        from xlalint.harness.fix_verify import named_scripts

        paths = (Path("."), *named_scripts([str(p) for p in paths], Path.cwd()))
    targets = list(paths) or [Path(".")]
    settings = resolve_settings(
        targets, config, select, extend_select, ignore, force_exclude, target_version
    )
    rules = enabled_rules(settings)
    cache = result_cache(settings, no_cache, cache_dir)
    report = fix_paths(
        targets, settings, rules=rules, unsafe=unsafe_fixes, apply=apply, jobs=jobs, cache=cache
    )
    _echo_path_problems(report)
    for error in report.errors:
        click.echo(f"error: {error.filename}: {error.reason}", err=True)
    _echo_fix_problems(report)
    if report.missing:
        raise SystemExit(EXIT_ERROR)
    if not apply:
        from xlalint.report.diff import render_diff

        click.echo(render_diff(report.outcomes), nl=False)
        if not quiet:
            click.echo(_applied_line(report, "Would fix", "No fixes to apply."), err=True)
            if note := _enabled_note(report, unsafe_fixes, would=True):
                click.echo(note, err=True)
        changed = any(o.changed for o in report.outcomes)
        raise SystemExit(EXIT_FINDINGS if changed or report.errors else EXIT_CLEAN)
    remaining = [] if fix_only else report.remaining
    for diagnostic in remaining:
        click.echo(concise_header(diagnostic))
    if not quiet:
        click.echo(_applied_line(report, "Fixed", "No fixes applied."))
        if note := _enabled_note(report, unsafe_fixes):
            click.echo(note)
        if remaining:
            why = "no fix available" if unsafe_fixes else "no fix, or unsafe: see --unsafe-fixes"
            left = len(remaining)
            click.echo(f"{plural(left, 'finding')} {'remains' if left == 1 else 'remain'} ({why}).")
    changed = exit_non_zero_on_fix and any(o.changed for o in report.outcomes)
    failed = remaining or report.errors or changed
    raise SystemExit(EXIT_FINDINGS if failed else EXIT_CLEAN)


def _verify_fixes(
    command: list[str],
    config: Path | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    unsafe: bool,
    device: str,
    target: str | None = None,
) -> bool:
    """Run the script as it is and fixed (on a copy); True when the fixed one holds up."""
    from rich.console import Console

    from xlalint.harness.commands import HarnessProblem
    from xlalint.harness.fix_verify import verify_fixes
    from xlalint.harness.profile import ScriptCommandError
    from xlalint.harness.runner import RuntimeUnavailable, require_runtime
    from xlalint.harness.table import output_console, print_fix_verification

    if not command:
        raise click.UsageError("--verify needs the script's command: -- python SCRIPT [ARGS...]")
    settings = resolve_settings([Path(".")], config, select, extend_select, ignore, None, target)
    try:
        require_runtime()
        with Console(stderr=True).status(f"profiling {' '.join(command)}, before and after"):
            verification = verify_fixes(
                command, settings, enabled_rules(settings), unsafe=unsafe, device=device
            )
    except (RuntimeUnavailable, ScriptCommandError) as error:
        raise HarnessProblem(str(error)) from None
    print_fix_verification(verification, output_console())
    return verification.passed


@main.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)  # fmt: skip
def list_rules(output_format: str) -> None:
    """List every rule: code, name, fix, and whether it is on by default."""
    from xlalint.docgen import fix_label

    rules = list(all_rules().values())
    if output_format == "json":
        rows = [
            {
                "code": r.code,
                "name": r.name,
                "fix": fix_label(r) if r.fix_availability is not FixAvailability.NONE else None,
                "default": r.default_enabled,
                "hot_code_only": r.hot_only,
                "url": r.url(),
            }
            for r in rules
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    name_width = max(len(r.name) for r in rules)
    click.echo(f"{'CODE':<7}  {'NAME':<{name_width}}  {'FIX':<6}  DEFAULT")
    for r in rules:
        default = "on" if r.default_enabled else "off"
        click.echo(f"{r.code:<7}  {r.name:<{name_width}}  {fix_label(r):<6}  {default}")


@main.command("rule")
@click.argument("code")
def show_rule(code: str) -> None:
    """Print a rule's documentation (by code, e.g. XLA101, or name)."""
    from xlalint.docgen import rule_page

    rule = get_rule(code)
    if rule is None:
        rules = all_rules()
        hint = did_you_mean(code.upper(), rules) or did_you_mean(
            code, [r.name for r in rules.values()]
        )
        raise click.BadParameter(f"no rule {code!r}{hint}; see `xlalint rules`", param_hint="CODE")
    click.echo(rule_page(rule))


@main.command("clean")
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The project whose cache to remove (default: found from the current folder).",
)
@cache_dir_option
def clean(config: Path | None, cache_dir: Path | None) -> None:
    """Remove the result cache."""
    settings = resolve_settings([Path(".")], config, (), (), ())
    directory = cache_dir or default_cache_dir(settings.root)
    try:
        removed = ResultCache(directory).clean()
    except CleanError as error:
        raise ConfigProblem(str(error)) from None
    click.echo(f"Removed {directory}" if removed else f"No cache at {directory}")


@main.command("server")
def server() -> None:
    """Run the Language Server over stdio, for editors (needs the `server` extra)."""
    try:
        from xlalint.server import serve
    except ImportError as error:
        raise ConfigProblem(
            f"`xlalint server` needs pygls and lsprotocol ({error}): pip install 'xlalint[server]'"
        ) from None
    serve()


main.add_lazy_command("verify", "xlalint.harness.commands:verify_command")
main.add_lazy_command("profile", "xlalint.harness.commands:profile_command")
