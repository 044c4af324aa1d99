"""The harness's commands: `xlalint verify` and `xlalint profile`.

They live apart from cli.py because they are the only commands that run torch (in child
processes): the linter's own commands stay importable and fast without the runtime extra.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import Progress

from xlalint.harness import DEVICES
from xlalint.harness.cases import FIXTURES, CaseError, discover
from xlalint.harness.profile import ScriptCommandError, profile
from xlalint.harness.runner import RuntimeUnavailable, last_line, require_runtime
from xlalint.harness.table import output_console, print_profile, print_report
from xlalint.harness.verify import DEFAULT_JOBS, verify
from xlalint.registry import UnknownSelectorError, expand

EXIT_CLEAN, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class HarnessProblem(click.ClickException):
    """A missing runtime or a broken case: exit 2 with one line naming it."""

    exit_code = EXIT_ERROR


def _codes(rules: str | None) -> set[str] | None:
    if not rules:
        return None
    try:
        return {code for selector in rules.split(",") if selector.strip()
                for code in expand(selector)}  # fmt: skip
    except UnknownSelectorError as error:
        raise click.BadParameter(f"unknown rule code {error}", param_hint="--rules") from None


@click.command("verify")
@click.option(
    "--rules", metavar="CODES", help="Only these rules (codes or prefixes, comma-separated)."
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=DEFAULT_JOBS, show_default=True,
              help="Child processes at once (each holds a torch_xla runtime).")  # fmt: skip
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True,
              help="auto: the TPU where one is attached, else the CPU.")  # fmt: skip
@click.option("--json", "json_path", type=click.Path(path_type=Path), metavar="FILE",
              help="Also write the results as JSON (`-` for standard output).")  # fmt: skip
@click.option("--cases", "cases_folder", type=click.Path(path_type=Path, file_okay=False),
              default=FIXTURES, show_default=False,
              help="Folder of <CODE>/runtime_*.py cases (default: xlalint's own).")  # fmt: skip
def verify_command(
    rules: str | None, jobs: int, device: str, json_path: Path | None, cases_folder: Path
) -> None:
    """Prove each fix on an XLA device: run every runtime case as written and as fixed.

    Exits 1 if a safe fix changes results or a fix does not lower the cost its rule is
    about; unsafe fixes report their output difference instead.
    """
    try:
        require_runtime()
        cases = discover(cases_folder, _codes(rules))
    except (RuntimeUnavailable, CaseError) as error:
        raise HarnessProblem(str(error)) from None
    if not cases:
        raise HarnessProblem(f"no runtime cases for {rules or 'any rule'} in {cases_folder}")
    console = output_console(stderr=json_path == Path("-"))
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("running cases", total=2 * len(cases))

        def advance(label: str) -> None:
            progress.update(task, advance=1, description=label)

        try:
            report = verify(cases, device=device, jobs=jobs, on_done=advance)
        except CaseError as error:
            raise HarnessProblem(str(error)) from None
    print_report(report, console)
    if json_path is not None:
        _write_json(report.to_json(), json_path)
    raise SystemExit(EXIT_CLEAN if report.passed else EXIT_FAILED)


@click.command("profile", context_settings={"ignore_unknown_options": True})
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True,
              help="auto: the TPU where one is attached, else the CPU.")  # fmt: skip
@click.option("--json", "json_path", type=click.Path(path_type=Path), metavar="FILE",
              help="Also write the profile as JSON (`-` for standard output).")  # fmt: skip
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def profile_command(device: str, json_path: Path | None, command: tuple[str, ...]) -> None:
    """Run a script on the XLA device and tie its costs to source lines and findings.

    \b
    xlalint profile -- python train.py --epochs 1

    Exits with the script's own exit code.
    """
    try:
        require_runtime()
        with Console(stderr=True).status(f"running {' '.join(command)}"):
            result = profile(command, device=device)
    except (RuntimeUnavailable, ScriptCommandError) as error:
        raise HarnessProblem(str(error)) from None
    click.echo(result.stdout, nl=False, err=json_path == Path("-"))
    if result.returncode != 0:
        tail = last_line(result.stderr, "no error output")
        click.echo(f"error: the script failed (exit code {result.returncode}): {tail}", err=True)
    print_profile(result, output_console(stderr=json_path == Path("-")))
    if json_path is not None:
        _write_json(result.to_json(), json_path)
    raise SystemExit(result.returncode)


def _write_json(data: object, path: Path) -> None:
    """`--json FILE`, or `--json -` for standard output."""
    text = json.dumps(data, indent=2) + "\n"
    if path == Path("-"):
        click.echo(text, nl=False)
    else:
        path.write_text(text, encoding="utf-8")
