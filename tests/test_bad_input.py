"""Files xlalint cannot lint, and odd files it must lint right.

Whatever is wrong with one file, the run reports it on one line, `error: PATH: reason`, on
stderr, lints every other file, and exits 1 (2 only for a path that does not exist).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    BAD,
    BAD_COL,
    BAD_END_COL,
    BAD_ROW,
    CLEAN,
    SELECT,
    Run,
    run_cli,
    run_subprocess,
    write,
)

from xlalint.sources import SourceError, decode

JSON = ("--output-format", "json")
CONCISE = ("--output-format", "concise")


def check_with_neighbours(project: Path, name: str, content: str | bytes | None) -> Run:
    """Lint `name` beside a file with a finding and a clean one, folder walk and JSON."""
    write(project, {"other/bad.py": BAD, "other/clean.py": CLEAN})
    if content is not None:
        write(project, {name: content})
    return run_cli("check", *SELECT, *JSON, ".")


def assert_one_error(run: Run, name: str, *reason: str) -> str:
    """Exactly one `error: NAME: ...` line, containing `reason`; the neighbours linted."""
    assert run.exit_code == 1, run
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: {name}: "), lines[0]
    for part in reason:
        assert part in lines[0], lines[0]
    assert ("other/bad.py", BAD_ROW, BAD_COL, "XLA101") in run.findings()
    return lines[0]


# -- cannot be linted ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nfor x in y:\n    total += x.item(\n",
        "def f(:\n    pass\n",  # no rule's trigger string: must still be parsed
        "import torch\nfor x in y:\n  a = 1\n    b = x.item()\n",
        "print 'python 2'\n",
    ],
    ids=["unclosed", "no-trigger", "indentation", "python2"],
)
def test_syntax_error(project: Path, source: str) -> None:
    run = check_with_neighbours(project, "broken.py", source)
    assert_one_error(run, "broken.py", "syntax error")


def test_syntax_error_in_full_and_concise_output(project: Path) -> None:
    write(project, {"broken.py": "def f(:\n", "bad.py": BAD})
    for output_format in ("full", "concise"):
        run = run_cli("check", *SELECT, "--output-format", output_format, ".")
        assert run.exit_code == 1
        assert run.stderr.startswith("error: broken.py: syntax error")
        assert "1 file could not be linted.\nFound 1 finding in 1 file.\n" in run.stdout


def test_syntax_error_alone_is_not_all_clear(project: Path) -> None:
    write(project, {"broken.py": "def f(:\n"})
    run = run_cli("check", *SELECT, ".")
    assert (run.exit_code, run.stdout) == (1, "1 file could not be linted.\n")
    assert "All checks passed" not in run.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'x = "\xff\xfe"\n', "not valid utf-8 (byte 0xff on line 1)"),
        (b'# a comment\ns = "caf\xe9"\n', "not valid utf-8 (byte 0xe9 on line 2)"),
        (b'import torch\n\n\ns = "caf\xe9"\n', "not valid utf-8 (byte 0xe9 on line 4)"),
    ],
    ids=["line-1", "line-2", "line-4"],
)
def test_not_utf8_without_a_coding_cookie(project: Path, content: bytes, reason: str) -> None:
    run = check_with_neighbours(project, "latin.py", content)
    line = assert_one_error(run, "latin.py", reason)
    assert "coding declaration" in line  # says how to fix it


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"# -*- coding: klingon -*-\nx = 1\n", "bad coding declaration"),
        (b'# coding: ascii\nx = "\xc3\xa9"\n', "not valid ascii (byte 0xc3 on line 2)"),
    ],
)
def test_bad_coding_declaration(project: Path, content: bytes, reason: str) -> None:
    run = check_with_neighbours(project, "cookie.py", content)
    assert_one_error(run, "cookie.py", reason)


def test_null_byte(project: Path) -> None:
    run = check_with_neighbours(project, "nul.py", b"import torch\nx = 1\x00\n")
    assert_one_error(run, "nul.py", "contains a null byte")


def test_utf16_file_is_reported_not_misread(project: Path) -> None:
    run = check_with_neighbours(project, "wide.py", "import torch\n".encode("utf-16"))
    assert_one_error(run, "wide.py")


def test_broken_symlink(project: Path) -> None:
    write(project, {"other/bad.py": BAD})
    (project / "dangling.py").symlink_to(project / "nowhere.py")
    run = check_with_neighbours(project, "dangling.py", None)
    assert_one_error(run, "dangling.py", "broken symbolic link")
    named = run_cli("check", *SELECT, *CONCISE, "dangling.py", "other/bad.py")
    assert named.exit_code == 1
    assert named.stderr == "error: dangling.py: broken symbolic link\n"


def test_unreadable_file(project: Path) -> None:
    write(project, {"secret.py": BAD})
    os.chmod(project / "secret.py", 0)
    try:
        readable = os.access(project / "secret.py", os.R_OK)
        run = check_with_neighbours(project, "secret.py", None)
    finally:
        os.chmod(project / "secret.py", 0o644)
    if readable:  # root reads anything: then the file is simply linted
        assert run.exit_code == 1 and run.stderr == ""
        assert ("secret.py", BAD_ROW, BAD_COL, "XLA101") in run.findings()
    else:
        assert_one_error(run, "secret.py", "permission denied")


def test_unreadable_file_error_path(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whoever runs the tests: a read that fails with EACCES is reported, not raised."""
    original = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    run = check_with_neighbours(project, "secret.py", BAD)
    assert_one_error(run, "secret.py", "permission denied")


@pytest.fixture
def world_readable_tmp() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="xlalint-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="only as root (with setpriv) can the test drop to a user that cannot read it",
)
def test_unreadable_file_as_an_unprivileged_user(world_readable_tmp: Path) -> None:
    folder = world_readable_tmp
    write(folder, {"secret.py": BAD, "ok.py": BAD})
    os.chmod(folder / "secret.py", 0)
    os.chmod(folder / "ok.py", 0o644)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    result = subprocess.run(
        [*nobody, sys.executable, "-m", "xlalint", "check", *SELECT, *CONCISE, "."],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if "Permission denied" in result.stderr and "xlalint" not in result.stdout:
        pytest.skip(f"the unprivileged user cannot run this interpreter: {result.stderr}")
    assert result.returncode == 1
    assert result.stderr == "error: secret.py: permission denied\n"
    assert result.stdout.startswith(f"ok.py:{BAD_ROW}:{BAD_COL}: XLA101 ")


def test_path_that_does_not_exist(project: Path) -> None:
    write(project, {"bad.py": BAD})
    run = run_cli("check", *SELECT, *JSON, "bad.py", "missing.py", "missing_dir")
    assert run.exit_code == 2
    assert run.stderr.splitlines() == [
        "error: missing.py: no such file or directory",
        "error: missing_dir: no such file or directory",
    ]
    assert run.findings() == [("bad.py", BAD_ROW, BAD_COL, "XLA101")]


def test_several_bad_files_each_get_a_line(project: Path) -> None:
    write(
        project,
        {"a.py": "def f(:\n", "b.py": b"\x00", "c.py": b"x = '\xff'\n", "d.py": BAD},
    )
    run = run_cli("check", *SELECT, *CONCISE, ".")
    assert run.exit_code == 1
    assert [line.split(":")[0] for line in run.stderr.splitlines()] == [
        "error",
        "error",
        "error",
    ]
    assert [line.split(": ")[1] for line in run.stderr.splitlines()] == ["a.py", "b.py", "c.py"]
    assert "3 files could not be linted.\nFound 1 finding in 1 file.\n" in run.stdout


# -- odd but valid: linted, at the right positions -----------------------------------------


def test_latin1_with_a_coding_cookie(project: Path) -> None:
    source = (
        "# -*- coding: latin-1 -*-\n"
        "import torch\n"
        "\n"
        "for x in loader:\n"
        '    note = "café"; total += x.item()\n'
    )
    write(project, {"latin.py": source.encode("latin-1")})
    run = run_cli("check", *SELECT, *JSON, "latin.py")
    assert (run.exit_code, run.stderr) == (1, "")
    # Columns count characters: "é" is one column though it is one byte here, two in UTF-8.
    [finding] = run.json()
    assert (finding["location"], finding["end_location"]) == (
        {"row": 5, "column": 29},
        {"row": 5, "column": 37},
    )
    full = run_cli("check", *SELECT, "latin.py").stdout
    assert '5 |     note = "café"; total += x.item()\n' in full
    assert "  |                             ^^^^^^^^\n" in full


def test_empty_file(project: Path) -> None:
    run = check_with_neighbours(project, "empty.py", "")
    assert run.exit_code == 1
    assert run.stderr == ""
    assert {name for name, *_ in run.findings()} == {"other/bad.py"}
    write(project, {"only/empty.py": b""})
    assert run_cli("check", *SELECT, "only/empty.py").exit_code == 0


def test_whitespace_and_comment_only_files(project: Path) -> None:
    write(project, {"a.py": "\n\n   \n", "b.py": "# just a comment", "c.py": "\t\n"})
    run = run_cli("check", *SELECT, ".")
    assert (run.exit_code, run.stderr) == (0, "")


def test_utf8_bom(project: Path) -> None:
    write(project, {"bom.py": b"\xef\xbb\xbf" + BAD.encode()})
    run = run_cli("check", *SELECT, *JSON, "bom.py")
    assert (run.exit_code, run.stderr) == (1, "")
    assert run.findings() == [("bom.py", BAD_ROW, BAD_COL, "XLA101")]
    [finding] = run.json()
    assert finding["end_location"] == {"row": BAD_ROW, "column": BAD_END_COL}


def test_bom_with_a_utf8_cookie(project: Path) -> None:
    write(project, {"bom.py": b"\xef\xbb\xbf# coding: utf-8\n" + BAD.encode()})
    run = run_cli("check", *SELECT, *JSON, "bom.py")
    assert run.findings() == [("bom.py", BAD_ROW + 1, BAD_COL, "XLA101")]


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_other_line_endings(project: Path, newline: str) -> None:
    write(project, {"win.py": BAD.replace("\n", newline)})
    run = run_cli("check", *SELECT, *JSON, "win.py")
    assert (run.exit_code, run.stderr) == (1, "")
    [finding] = run.json()
    assert finding["location"] == {"row": BAD_ROW, "column": BAD_COL}
    assert finding["end_location"] == {"row": BAD_ROW, "column": BAD_END_COL}
    full = run_cli("check", *SELECT, "win.py").stdout
    assert f"{BAD_ROW} |         total += loss.item()\n" in full
    assert "\r" not in full


def test_crlf_noqa_and_multiline_positions(project: Path) -> None:
    source = (
        "import torch\r\n"
        "for x in loader:\r\n"
        '    a = """\r\n'
        '    {}""".format(x.item())\r\n'
        "    b = x.item()  # noqa: XLA101\r\n"
        "    c = x.item()\r\n"
    )
    write(project, {"win.py": source})
    run = run_cli("check", *SELECT, *JSON, "win.py")
    assert run.findings() == [("win.py", 4, 18, "XLA101"), ("win.py", 6, 9, "XLA101")]


def test_tabs_count_as_one_column(project: Path) -> None:
    write(project, {"tabs.py": "import torch\nfor x in loader:\n\ttotal += x.item()\n"})
    run = run_cli("check", *SELECT, *JSON, "tabs.py")
    assert run.findings() == [("tabs.py", 3, 11, "XLA101")]
    full = run_cli("check", *SELECT, "tabs.py").stdout
    assert "3 |  total += x.item()\n  |           ^^^^^^^^\n" in full


def test_non_ascii_identifiers_and_wide_characters(project: Path) -> None:
    source = "import torch\nfor x in loader:\n    π = '日本語'; total += x.item()\n"
    write(project, {"wide.py": source})
    run = run_cli("check", *SELECT, *JSON, "wide.py")
    assert run.findings() == [("wide.py", 3, 25, "XLA101")]


def test_folder_named_like_a_python_file(project: Path) -> None:
    write(project, {"x.py/inner.py": BAD, "x.py/notes.txt": "", "empty.py/.keep": ""})
    run = run_cli("check", *SELECT, *JSON, ".")
    assert (run.exit_code, run.stderr) == (1, "")
    assert run.findings() == [("x.py/inner.py", BAD_ROW, BAD_COL, "XLA101")]
    named = run_cli("check", *SELECT, *JSON, "x.py", "empty.py")
    # A folder named on the command line that holds no Python file is worth a warning.
    assert (named.exit_code, named.stderr) == (1, "warning: empty.py: no Python files found\n")
    assert named.findings() == [("x.py/inner.py", BAD_ROW, BAD_COL, "XLA101")]
    assert run_cli("check", *SELECT, "empty.py").exit_code == 0


# -- deep nesting --------------------------------------------------------------------------


def _nested_parentheses(depth: int) -> str:
    return f"import torch\nfor x in loader:\n    y = {'(' * depth}x.item(){')' * depth}\n"


def _nested_ifs(depth: int) -> str:
    lines = ["import torch", "for x in loader:"]
    lines += ["    " * level + "if x:" for level in range(1, depth + 1)]
    lines.append("    " * (depth + 1) + "y = x.item()")
    return "\n".join(lines) + "\n"


def _nested_calls(depth: int) -> str:
    return f"import torch\nfor x in loader:\n    y = {'f(' * depth}x.item(){')' * depth}\n"


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("parens100", _nested_parentheses(100)),
        ("parens500", _nested_parentheses(500)),
        ("ifs100", _nested_ifs(100)),
        ("ifs500", _nested_ifs(500)),
        ("calls200", _nested_calls(200)),
        ("parens500_no_trigger", _nested_parentheses(500).replace(".item()", "")),
        ("ifs500_no_trigger", _nested_ifs(500).replace(".item()", "")),
    ],
)
def test_deep_nesting(project: Path, name: str, source: str) -> None:
    run = check_with_neighbours(project, f"{name}.py", source)
    assert run.exit_code == 1
    assert ("other/bad.py", BAD_ROW, BAD_COL, "XLA101") in run.findings()
    own = [finding for finding in run.findings() if finding[0] == f"{name}.py"]
    if run.stderr:  # either one clear line for it...
        assert_one_error(run, f"{name}.py")
        assert own == []
    elif ".item()" in source:  # ...or linted, the finding where it is
        assert [(row, code) for _, row, _, code in own] == [(source.count("\n"), "XLA101")]


@pytest.mark.parametrize(
    "deep_source",
    [
        _nested_parentheses(3000),
        "import torch\nx = " + " + ".join(["a"] * 12_000) + "\n",
    ],
    ids=["3000-nested-brackets", "12000-term-chain"],
)
def test_very_deep_nesting_does_not_crash_the_run(tmp_path: Path, deep_source: str) -> None:
    """Sources nested beyond what libcst's native parser survives are refused, not parsed
    (parsing them would kill the process), and the run goes on."""
    write(tmp_path, {"deep.py": deep_source, "bad.py": BAD})
    command = [sys.executable, "-m", "xlalint"]
    result = run_subprocess(command, "check", *SELECT, *CONCISE, "-j", "1", ".", cwd=tmp_path)
    assert result.returncode == 1, result.returncode
    assert f"bad.py:{BAD_ROW}:{BAD_COL}: XLA101 " in result.stdout
    assert "error: deep.py: too deeply nested to analyse safely" in result.stderr


def test_deep_nesting_of_a_hundred_is_linted(project: Path) -> None:
    run = check_with_neighbours(project, "deep.py", _nested_parentheses(100))
    assert run.stderr == ""
    assert ("deep.py", 3, 109, "XLA101") in run.findings()


# -- decoding, directly --------------------------------------------------------------------


def test_decode_reasons_are_one_line() -> None:
    for raw in (b"\x00", b"\xff", b"# coding: nope\n", b"x = 1\n\n\n\xe9\n"):
        with pytest.raises(SourceError) as caught:
            decode(raw)
        assert "\n" not in str(caught.value)
    assert decode(b"\xef\xbb\xbfx = 1\n").text == "x = 1\n"
    assert decode("# coding: latin-1\nx = 'é'\n".encode("latin-1")).text.endswith("'é'\n")


def test_analysis_that_recurses_is_reported_as_an_xlalint_bug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CPython vouched for the nesting, so a RecursionError in the analysis is xlalint's own
    reasoning going round: the one-line error says so and asks for a report."""
    from xlalint import engine
    from xlalint.registry import all_rules

    def recurse(*args: object, **kwargs: object) -> None:
        raise RecursionError

    monkeypatch.setattr(engine, "_analyse", recurse)
    # (In a loop: module-level code outside one cannot be hot, and the screen would skip
    # the analysis of a file where no finding could count.)
    text = "import torch\nfor _ in range(3):\n    x = torch.ones(2).item()\n"
    result = engine.lint_source(text, "loop.py", [all_rules()["XLA101"]])
    assert result.error is not None
    assert result.error.reason == engine.ANALYSIS_RECURSED
    assert "xlalint bug" in result.error.reason and "\n" not in result.error.reason
