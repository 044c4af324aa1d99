"""`--stdin-filename PATH -`: lint and fix a buffer as if it were PATH."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import BAD, BAD_COL, BAD_ROW, CLEAN, ITEM_MESSAGE, SELECT, Run, write

from xlalint.cli import main

CONCISE = ("--output-format", "concise")
# XLA604's safe fix: `xm.mark_step()` -> `torch_xla.sync()`.
SAFE_FIXABLE = """\
import torch_xla.core.xla_model as xm

for batch in loader:
    step(batch)
    xm.mark_step()
"""


def run_stdin(data: str | bytes, *args: str) -> Run:
    result = CliRunner().invoke(main, list(args), input=data)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def test_check_reads_stdin_as_the_named_file(project: Path) -> None:
    run = run_stdin(BAD, "check", *SELECT, "--stdin-filename", "src/train.py", "-")
    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    assert lines[0] == f"src/train.py:{BAD_ROW}:{BAD_COL}: XLA101 {ITEM_MESSAGE}"
    # The snippet quotes the buffer: no such file exists on disk.
    assert f"{BAD_ROW} |         total += loss.item()" in lines
    assert not (project / "src").exists()


def test_lone_dash_reads_stdin(project: Path) -> None:
    write(project, {"other.py": BAD})
    clean = run_stdin(CLEAN, "check", *SELECT, "-")
    assert (clean.exit_code, clean.stdout) == (0, "All checks passed!\n")
    bad = run_stdin(BAD, "check", *SELECT, *CONCISE, "-")
    assert bad.stdout.startswith(f"-:{BAD_ROW}:{BAD_COL}: XLA101")


def test_stdin_filename_wins_over_paths(project: Path) -> None:
    write(project, {"other.py": BAD})
    run = run_stdin(CLEAN, "check", *SELECT, "--stdin-filename", "a.py", "other.py")
    assert run.exit_code == 0
    assert "ignoring other.py in favour of standard input" in run.stderr


def test_config_and_per_file_ignores_resolved_for_the_path(project: Path) -> None:
    # The config is found from PATH's folder, not the current one, and its
    # per-file-ignores match PATH relative to it.
    write(
        project,
        {"sub/xlalint.toml": 'select = ["XLA101"]\nper-file-ignores = {"gen/*" = ["XLA101"]}\n'},
    )
    ignored = run_stdin(BAD, "check", "--stdin-filename", "sub/gen/a.py", "-")
    assert (ignored.exit_code, ignored.stdout) == (0, "All checks passed!\n")
    linted = run_stdin(BAD, "check", *CONCISE, "--stdin-filename", "sub/src/a.py", "-")
    assert linted.exit_code == 1
    assert [line.split(" ")[1] for line in linted.stdout.splitlines()[:-2]] == ["XLA101"]


def test_force_exclude_passes_an_excluded_path_through(project: Path) -> None:
    write(project, {"xlalint.toml": 'select = ["XLA101"]\nextend-exclude = ["vendor"]\n'})
    args = ("--stdin-filename", "vendor/a.py", "--force-exclude", "-")
    check = run_stdin(BAD, "check", *args)
    assert (check.exit_code, check.stdout) == (0, "All checks passed!\n")
    fixed = run_stdin(BAD, "fix", "--unsafe-fixes", *args)
    assert (fixed.exit_code, fixed.stdout) == (0, BAD)
    # Without --force-exclude the buffer is linted, as a file named on the command line is.
    assert run_stdin(BAD, "check", "--stdin-filename", "vendor/a.py", "-").exit_code == 1


def test_fix_prints_the_fixed_source(project: Path) -> None:
    run = run_stdin(SAFE_FIXABLE, "fix", "--select", "XLA604", "--stdin-filename", "t.py", "-")
    assert run.exit_code == 0
    assert "torch_xla.sync()" in run.stdout
    assert "mark_step" not in run.stdout
    assert run.stdout.startswith("import torch_xla\n")
    assert "Fixed 1 finding in 1 file (XLA604 x1)." in run.stderr
    # Fixing the output again changes nothing.
    again = run_stdin(run.stdout, "fix", "--select", "XLA604", "--stdin-filename", "t.py", "-")
    assert (again.exit_code, again.stdout) == (0, run.stdout)


def test_fix_leaves_what_remains_on_stderr_and_exits_1(project: Path) -> None:
    run = run_stdin(BAD, "fix", *SELECT, "--stdin-filename", "t.py", "-")  # unsafe: not applied
    assert run.exit_code == 1
    assert run.stdout == BAD
    assert f"t.py:{BAD_ROW}:{BAD_COL}: XLA101" in run.stderr
    unsafe = run_stdin(BAD, "fix", *SELECT, "--unsafe-fixes", "--stdin-filename", "t.py", "-")
    assert unsafe.exit_code == 0
    assert "total += loss.detach()" in unsafe.stdout


def test_fix_echoes_bytes_exactly_when_nothing_applies(project: Path) -> None:
    data = b"# coding: latin-1\r\nname = '\xe9t\xe9'\r\nprint(name)"  # CRLF, no final newline
    run = CliRunner().invoke(main, ["fix", "--stdin-filename", "t.py", "-"], input=data)
    assert run.exit_code == 0
    assert run.stdout_bytes == data


def test_check_fix_on_stdin(project: Path) -> None:
    run = run_stdin(
        SAFE_FIXABLE, "check", "--select", "XLA604", "--fix", "--stdin-filename", "t.py", "-"
    )
    assert run.exit_code == 0
    assert "torch_xla.sync()" in run.stdout


def test_unreadable_stdin_is_a_file_error(project: Path) -> None:
    run = CliRunner().invoke(main, ["check", "--stdin-filename", "t.py", "-"], input=b"x = 1\x00")
    assert run.exit_code == 1
    assert "error: t.py: contains a null byte" in run.stderr
