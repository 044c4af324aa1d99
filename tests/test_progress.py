"""The progress bar of long `check` runs: on a terminal, for people, erased at the end."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import CLEAN, SELECT, run_cli, write

from xlalint import api
from xlalint.config import Settings
from xlalint.report import progress
from xlalint.report.progress import ProgressBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_counts_files_and_is_erased() -> None:
    stream = Terminal()
    bar = ProgressBar(stream, minimum=4)
    for done in range(1, 5):
        bar(done, 4)
    bar.close()
    frames = stream.getvalue().split("\r")[1:]
    assert frames[0] == "[" + "#" * 7 + "." * 23 + "] 1/4 files"
    assert frames[3] == "[" + "#" * 30 + "] 4/4 files"
    assert frames[-1] == "\x1b[K"


def test_no_bar_for_a_small_run() -> None:
    stream = Terminal()
    bar = ProgressBar(stream, minimum=10)
    bar(1, 9)
    bar.close()
    assert stream.getvalue() == ""


def test_no_bar_off_a_terminal_or_for_machine_formats() -> None:
    assert progress.progress_bar(io.StringIO(), human_output=True) is None
    assert progress.progress_bar(Terminal(), human_output=False) is None
    assert progress.progress_bar(Terminal(), human_output=True) is not None


def test_check_paths_reports_each_file(project: Path) -> None:
    write(project, {f"m{i}.py": CLEAN for i in range(20)})
    seen: list[tuple[int, int]] = []
    report = api.check_paths(
        [project], Settings(root=project), jobs=1, progress=lambda d, t: seen.append((d, t))
    )
    assert len(report.results) == 20
    assert seen == [(done, 20) for done in range(1, 21)]


@pytest.mark.parametrize(
    ("output_format", "shown"),
    [("full", True), ("concise", True), ("json", False), ("sarif", False), ("github", False)],
)
def test_check_shows_the_bar_only_for_people(
    project: Path, monkeypatch: pytest.MonkeyPatch, output_format: str, shown: bool
) -> None:
    monkeypatch.setattr(progress, "PROGRESS_THRESHOLD", 3)
    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)
    write(project, {f"m{i}.py": CLEAN for i in range(5)})
    run = run_cli("check", *SELECT, "--output-format", output_format, ".")
    assert ("] 5/5 files" in run.stderr) is shown
    assert "files" not in run.stdout
