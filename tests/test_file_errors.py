"""Files that cannot be linted, and paths that do not exist, in every output format.

A tool reading only the JSON, SARIF or GitHub output must learn about them, and no format
may print a success line next to them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BAD, SELECT, run_cli, write

# `(` opened on line 2, column 7, and never closed.
UNCLOSED = "import torch\nprint((1,\n"


@pytest.fixture
def files(project: Path) -> Path:
    write(project, {"bad.py": BAD, "broken.py": UNCLOSED})
    return project


def test_syntax_errors_show_cpythons_message_and_position(files: Path) -> None:
    run = run_cli("check", *SELECT, "broken.py")
    assert run.exit_code == 1
    assert run.error_lines == ["error: broken.py: syntax error at 2:7: '(' was never closed"]


def test_json_has_an_entry_for_each_file_error(files: Path) -> None:
    run = run_cli("check", *SELECT, "--output-format", "json", "bad.py", "broken.py", "nope.py")
    assert run.exit_code == 2
    entries = run.json()
    errors = [e for e in entries if e["code"] is None]
    assert errors == [
        {
            "code": None,
            "name": "file-error",
            "message": "no such file or directory",
            "filename": "nope.py",
            "location": None,
            "end_location": None,
            "noqa_row": None,
            "fix": None,
            "hint": None,
            "url": None,
        },
        {
            "code": None,
            "name": "file-error",
            "message": "syntax error at 2:7: '(' was never closed",
            "filename": "broken.py",
            "location": {"row": 2, "column": 7},
            "end_location": {"row": 2, "column": 7},
            "noqa_row": None,
            "fix": None,
            "hint": None,
            "url": None,
        },
    ]
    assert [e["code"] for e in entries if e["code"] is not None] == ["XLA101"]


def test_sarif_has_a_notification_for_each_file_error(files: Path) -> None:
    run = run_cli("check", *SELECT, "--output-format", "sarif", "broken.py", "nope.py")
    (invocation,) = run.json()["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert [(n["level"], n["message"]["text"]) for n in notes] == [
        ("error", "no such file or directory"),
        ("error", "syntax error at 2:7: '(' was never closed"),
    ]
    located = [n["locations"][0]["physicalLocation"] for n in notes]
    assert located[0] == {"artifactLocation": {"uri": "nope.py", "uriBaseId": "%SRCROOT%"}}
    assert located[1] == {
        "artifactLocation": {"uri": "broken.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 2, "startColumn": 7},
    }


def test_github_annotates_each_file_error(files: Path) -> None:
    run = run_cli("check", *SELECT, "--output-format", "github", "broken.py", "nope.py")
    assert run.stdout.splitlines() == [
        "::error title=xlalint,file=nope.py::nope.py: no such file or directory",
        "::error title=xlalint,file=broken.py,line=2,col=7::"
        "broken.py: syntax error at 2:7: '(' was never closed",
    ]


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_no_success_line_when_a_path_is_missing(files: Path, output_format: str) -> None:
    write(files, {"clean.py": "x = 1\n"})
    run = run_cli("check", *SELECT, "--output-format", output_format, "clean.py", "nope.py")
    assert run.exit_code == 2
    assert "All checks passed!" not in run.stdout
    assert run.stdout == "1 path not found.\n"
    assert run.error_lines == ["error: nope.py: no such file or directory"]


def test_cached_syntax_errors_keep_their_position(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XLALINT_NO_CACHE")
    first = run_cli("check", *SELECT, "--output-format", "json", "broken.py")
    second = run_cli("check", *SELECT, "--output-format", "json", "broken.py")
    assert (files / ".xlalint_cache").is_dir()
    assert second.json() == first.json()
    assert second.json()[0]["location"] == {"row": 2, "column": 7}
