"""A file named on the command line is linted and fixed even where `exclude` leaves its
folder out (unless `--force-exclude`), including the script `fix --verify` runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BAD, SELECT, run_cli, write

from xlalint import cli
from xlalint.config import Settings
from xlalint.harness import fix_verify
from xlalint.harness.fix_verify import named_scripts, verify_fixes
from xlalint.registry import get_rule

EXCLUDING = '[tool.xlalint]\nextend-exclude = ["examples"]\n'
FIXED = BAD.replace("total += loss.item()", "total += loss.detach()")


@pytest.fixture
def excluded(project: Path) -> Path:
    write(project, {"pyproject.toml": EXCLUDING, "examples/train.py": BAD, "main.py": "x = 1\n"})
    return project


def test_a_named_file_in_an_excluded_folder_is_linted(excluded: Path) -> None:
    assert run_cli("check", *SELECT, ".").exit_code == 0
    named = run_cli("check", *SELECT, "--output-format", "json", "examples/train.py")
    assert [f[3] for f in named.findings()] == ["XLA101"]
    forced = run_cli("check", *SELECT, "--force-exclude", "examples/train.py")
    assert forced.exit_code == 0


def test_named_scripts_are_the_commands_python_files_in_the_project(
    excluded: Path, tmp_path: Path
) -> None:
    write(tmp_path, {"outside.py": "x = 1\n"})
    command = ["python", "examples/train.py", "--data", "main.py", "missing.py", "../outside.py"]
    assert named_scripts(command, excluded) == [Path("examples/train.py"), Path("main.py")]
    assert named_scripts(["python", "-m", "examples.train"], excluded) == []


def test_fix_verify_fixes_the_script_it_runs(
    excluded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script is fixed in the copy even though the config excludes its folder."""
    seen: dict[str, str] = {}

    def profile(command: list[str], device: str, cwd: Path) -> object:
        seen[str(cwd)] = (cwd / "examples/train.py").read_text()
        return object()

    monkeypatch.setattr(fix_verify, "profile", profile)
    settings = Settings(root=excluded, extend_exclude=("examples",))
    rule = get_rule("XLA101")
    assert rule is not None
    result = verify_fixes(
        ["python", "examples/train.py"], settings, [rule], unsafe=True, project=excluded
    )
    assert [o.filename for o in result.fixes.outcomes if o.changed] == ["examples/train.py"]
    assert sorted(seen.values()) == sorted([BAD, FIXED])
    assert (excluded / "examples/train.py").read_text() == BAD  # the user's file untouched


def test_fix_verify_apply_writes_the_script_it_ran(
    excluded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "_verify_fixes", lambda *args: True)  # the runtime part: it held up
    run = run_cli(
        "fix", "--verify", "--apply", "--unsafe-fixes", *SELECT, "--", "python",
        "examples/train.py",
    )  # fmt: skip
    assert run.exit_code == 0, run
    assert (excluded / "examples/train.py").read_text() == FIXED
