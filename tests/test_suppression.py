"""`# noqa` and `# xlalint: noqa`, with ruff's semantics.

Each snippet is linted with XLA101 only; `.item()` on a value in a loop of a file that
imports torch is a finding, so the lines that still report show what a comment suppressed.
Reads of one value in consecutive statements are one finding (`analysis/host_reads.py`), so
a snippet whose lines must each report reads a value of its own on each (`x`, `y`, ...).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent, indent
from typing import Any

import pytest
from conftest import BAD, SELECT, run_cli, write

from xlalint import positions
from xlalint.engine import lint_source
from xlalint.registry import all_rules
from xlalint.suppression import parse_suppressions

HEADER = "import torch\n\nfor x, y, z, u, v in loader:\n"  # the loop body starts on line 4


def reported_rows(body: str) -> list[int]:
    """Rows of XLA101 findings in HEADER + `body`, indented into the loop."""
    text = HEADER + indent(dedent(body), "    ")
    result = lint_source(text, "t.py", [all_rules()["XLA101"]])
    assert result.error is None, result.error
    return [d.start.row for d in result.diagnostics]


def test_unsuppressed_baseline() -> None:
    assert reported_rows("    a = x.item()\n    b = y.item()\n") == [4, 5]


def test_a_run_of_reads_of_one_value_reports_once_and_noqa_hands_it_on() -> None:
    """One cause, one finding; a `# noqa` on a read leaves the next read of the run
    reported, as a `# noqa` on one line leaves the others."""
    assert reported_rows("    a = x.item()\n    b = x.item()\n    c = x.item()\n") == [4]
    assert reported_rows("    a = x.item()  # noqa\n    b = x.item()\n    c = x.item()\n") == [5]
    both = "    a = x.item()  # noqa\n    b = x.item()  # noqa: XLA101\n    c = x.item()\n"
    assert reported_rows(both) == [6]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa",
        "#noqa",
        "# NOQA",
        "# noqa: XLA101",
        "# noqa:XLA101",
        "# noqa:   XLA101",
        "# noqa: xla101",
        "# noqa: XLA101,XLA104",
        "# noqa: XLA104, XLA101",
        "# noqa: XLA104 XLA101",
        "# noqa: XLA104,XLA101 because the loop runs once",
        "# type: ignore  # noqa: XLA101",
        "# some words # noqa",
    ],
)
def test_noqa_on_the_line_suppresses(comment: str) -> None:
    assert reported_rows(f"    a = x.item()  {comment}\n    b = x.item()\n") == [5]


@pytest.mark.parametrize(
    "comment", ["# noqa: XLA1", "# noqa: xla10", "# noqa: XLA104, XLA1", "# noqa:XLA101"]
)
def test_noqa_takes_code_prefixes_as_select_does(comment: str) -> None:
    assert reported_rows(f"    a = x.item()  {comment}\n    b = x.item()\n") == [5]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: XLA104",
        "# noqa:XLA102,XLA104",
        "# noqa:   XLA104",  # not a blanket noqa because of the spaces
        "# noqa: XLA1010",
        "# noqa: XLA11",
        "# noqa: XLA2",
        "# no qa",
        "# xlalint: noqa",  # a file-level directive counts only on a line of its own
    ],
)
def test_noqa_for_other_codes_does_not_suppress(comment: str) -> None:
    assert reported_rows(f"    a = x.item()  {comment}\n") == [4]


def test_noqa_on_another_line_does_not_suppress() -> None:
    body = """\
        # noqa
        a = x.item()
        b = 1  # noqa
    """
    assert reported_rows(body) == [5]


def test_noqa_inside_a_string_does_not_suppress() -> None:
    body = """\
        a = x.item() if "# noqa" else 0
        b = f"{y.item()} # noqa"
        c = [z.item(), '# noqa: XLA101']
        d = u.item()  # "# noqa" inside a comment is still a comment
    """
    assert reported_rows(body) == [4, 5, 6]


def test_multiline_string_takes_the_noqa_at_its_end() -> None:
    body = '''\
        a = """
        {}
        """.format(x.item())  # noqa
        b = f"""
        {y.item()}
        """  # noqa: XLA101
        c = f"""
        {z.item()}
        """
        d = f"""
        {u.item()}  # noqa
        """
        e = f"""  # noqa
        {v.item()}
        """
    '''
    # b's finding (line 8) is silenced from line 9; d's "comment" is string text; e's is too.
    assert reported_rows(body) == [11, 14, 17]


def test_backslash_continuation_takes_the_noqa_at_its_last_line() -> None:
    body = """\
        a = x.item() + \\
            1  # noqa
        b = y.item() + \\
            1 + \\
            2  # noqa: XLA101
        c = z.item() + \\
            1
        d = u.item() + \\
            1  # noqa: XLA104
        e = v.item() + 1  # noqa
    """
    assert reported_rows(body) == [9, 11]


def test_noqa_reaches_no_further_than_its_logical_line() -> None:
    body = """\
        a = (x.item()  # noqa
             + 1)
        b = x.item() + \\
            1
        c = 2  # noqa
    """
    assert reported_rows(body) == [6]


def test_parenthesized_call_needs_the_noqa_on_the_findings_line() -> None:
    body = """\
        total = add(x.item(),
                    1)  # noqa
        total = add(
            y.item(),
        )  # noqa
        total = add(z.item(),  # noqa
                    1)
        total = add(
            u.item(),  # noqa: XLA101
        )
    """
    assert reported_rows(body) == [4, 7]


def test_noqa_on_a_loop_line_does_not_cover_the_body() -> None:
    text = "import torch\n\nfor x in loader:  # noqa\n    a = x.item()\n"
    result = lint_source(text, "t.py", [all_rules()["XLA101"]])
    assert [d.start.row for d in result.diagnostics] == [4]


# -- file level ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "directive",
    [
        "# xlalint: noqa",
        "#xlalint:noqa",
        "# XLALINT: NOQA",
        "# xlalint: noqa: XLA101",
        "# xlalint: noqa: xla101",
        "# xlalint: noqa: XLA104, XLA101",
        "# xlalint: noqa: XLA104 XLA101",
        "    # xlalint: noqa",  # indented, still a line of its own
    ],
)
def test_file_level_noqa(directive: str) -> None:
    text = HEADER + "    a = x.item()\n    b = x.item()\n"
    for placed in (directive + "\n" + text, text + directive + "\n"):
        result = lint_source(placed, "t.py", [all_rules()["XLA101"]])
        assert result.diagnostics == [], placed


def test_file_level_noqa_takes_code_prefixes() -> None:
    directive = "# xlalint: noqa: XLA1"
    text = HEADER + "    a = x.item()\n    b = x.item()\n"
    for placed in (directive + "\n" + text, text + directive + "\n"):
        result = lint_source(placed, "t.py", [all_rules()["XLA101"]])
        assert result.diagnostics == [], placed


@pytest.mark.parametrize(
    "directive",
    [
        "# xlalint: noqa: XLA104",
        "# xlalint: noqa: XLA2",
        "# ruff: noqa",
        "# flake8: noqa: XLA104",
        "x = 1  # xlalint: noqa",  # not on a line of its own
        '"""\n# xlalint: noqa\n"""',  # inside a string
    ],
)
def test_not_a_file_level_noqa(directive: str) -> None:
    text = HEADER + "    a = x.item()\n"
    placed = directive + "\n" + text
    result = lint_source(placed, "t.py", [all_rules()["XLA101"]])
    assert len(result.diagnostics) == 1, placed


def test_parse_suppressions_records_file_and_line_codes() -> None:
    text = "# xlalint: noqa: XLA301\nx = 1  # noqa: XLA101, xla104\ny = 2  # noqa\n"
    suppressions = parse_suppressions(text)
    assert suppressions.file_codes == {"XLA301"}
    assert suppressions.line_codes == {2: {"XLA101", "XLA104"}, 3: None}
    assert suppressions.suppresses("XLA301", 10)
    assert suppressions.suppresses("XLA104", 2)
    assert not suppressions.suppresses("XLA102", 2)
    assert suppressions.suppresses("XLA999", 3)
    assert not suppressions.suppresses("XLA101", 1)


# -- through the command line ----------------------------------------------------------------


def test_noqa_through_the_cli_and_json_noqa_row(project: Path) -> None:
    suppressed = BAD.replace("loss.item()", "loss.item()  # noqa: XLA101")
    in_string = HEADER + '    a = f"""\n    {x.item()}\n    """\n'
    write(project, {"suppressed.py": suppressed, "string.py": in_string, "bad.py": BAD})
    run = run_cli("check", *SELECT, "--output-format", "json", ".")
    assert run.exit_code == 1
    rows = {(d["filename"], d["location"]["row"], d["noqa_row"]) for d in run.json()}
    # A finding inside a multi-line string tells where its noqa must go: the string's end.
    assert rows == {("bad.py", 8, 8), ("string.py", 5, 6)}


def test_file_level_noqa_through_the_cli(project: Path) -> None:
    write(project, {"a.py": "# xlalint: noqa\n" + BAD, "b.py": "# xlalint: noqa: XLA101\n" + BAD})
    run = run_cli("check", *SELECT, ".")
    assert (run.exit_code, run.stdout) == (0, "All checks passed!\n")


# Findings in one loop of a longer file, between functions whose statements the engine's
# positions pass over (`positions.Focus`): noqa comments and noqa text in strings there,
# and the ways a noqa reaches a finding's row in the loop.
LONG_FILE = '''\
import torch


def before(a):
    s = """
    # noqa
    """
    t = f"{a}  # noqa: XLA101"
    return s, t


for x1, x2, x3, x4, x5, x6, x7 in loader:
    a = x1.item()  # noqa: XLA101
    b = x2.item()
    c = f"""{x3.item()}
    """  # noqa
    d = """# noqa""" + str(x4.item())
    e = (x5.item(),
         1)  # noqa
    g = x6.item() \\
        + 1  # noqa
    h = x7.item()\t# noqa


def after():
    u = "# xlalint: noqa"
    return u
'''
LONG_FILE_ROWS = [14, 17, 18]


def long_file_rows(text: str) -> tuple[list[int], list[int | None]]:
    result = lint_source(text, "t.py", [all_rules()["XLA101"]])
    assert result.error is None, result.error
    return [d.start.row for d in result.diagnostics], [d.noqa_row for d in result.diagnostics]


@pytest.mark.parametrize(
    "change",
    [
        lambda text: text,
        lambda text: text.replace("\n", "\r\n"),
        lambda text: text.replace("\n\n\ndef", "\n\x0c\n\ndef"),
        lambda text: text.replace("    ", "\t"),
        lambda text: "type Alias = int\n" + text,  # CPython 3.11 cannot parse this
    ],
    ids=["lf", "crlf", "form feeds", "tabs", "no ast"],
)
def test_noqa_in_a_longer_file(change, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    text = change(LONG_FILE)
    shift = 1 if text.startswith("type") else 0
    made: list[positions.Positions] = []
    real = positions.positions_of

    def recording(*args: Any) -> positions.Positions:
        made.append(real(*args))
        return made[-1]

    monkeypatch.setattr("xlalint.engine.positions_of", recording)
    rows, noqa_rows = long_file_rows(text)
    assert rows == [row + shift for row in LONG_FILE_ROWS]
    # Positions passed over the functions (CPython's tree lined up with libcst's), except
    # where CPython cannot parse the file.
    assert made[-1].partial == (shift == 0)
    # The whole file's positions, as before positions had a focus: the same findings.
    monkeypatch.setattr("xlalint.engine._focus", lambda *_: None)
    assert long_file_rows(text) == (rows, noqa_rows)


def test_file_level_noqa_in_a_function_the_positions_pass_over() -> None:
    text = LONG_FILE.replace('    u = "# xlalint: noqa"\n', "    # xlalint: noqa\n    u = 1\n")
    assert long_file_rows(text) == ([], [])
