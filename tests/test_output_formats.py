"""Every output format: a golden file each, and the structure tools rely on.

Golden files live in tests/golden/<format>.txt and are compared exactly. After an intended
change, regenerate them and review the diff:

    XLALINT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_output_formats.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import BAD, CLEAN, ITEM_MESSAGE, SELECT, run_cli, write

from xlalint import __version__
from xlalint.api import CheckReport
from xlalint.cli import summary
from xlalint.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    Location,
)
from xlalint.registry import all_rules
from xlalint.report import FORMATS, HUMAN_FORMATS, concise, full, github, sarif

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("XLALINT_UPDATE_GOLDEN") == "1"

TRAIN = """\
import torch


def train(model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        print(f"step loss {loss.mean().item()}")
    return total
"""
ODD_NAME = "pkg/odd name,1%.py"  # a space, a comma and a percent sign: escaping matters
ODD = """\
import torch

for batch in loader:
    value = batch.sum().item()  # no fix: not accumulated
"""
TREE: dict[str, str | bytes] = {
    "pkg/train.py": TRAIN,
    "pkg/clean.py": CLEAN,
    "pkg/nul.py": b"import torch\x00\n",
    ODD_NAME: ODD,
}
ERROR_LINE = "error: pkg/nul.py: contains a null byte; not Python source\n"


def render(project: Path, output_format: str, *extra: str) -> str:
    write(project, TREE)
    run = run_cli("check", *SELECT, "--output-format", output_format, *extra, "pkg")
    assert run.exit_code == 1
    assert run.stderr == ERROR_LINE
    return run.stdout


def assert_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="")
    assert path.is_file(), f"{path} missing: run with XLALINT_UPDATE_GOLDEN=1 to create it"
    expected = path.read_bytes().decode("utf-8")
    assert actual == expected, (
        f"output differs from tests/golden/{name}; if the change is intended, rerun with "
        "XLALINT_UPDATE_GOLDEN=1 and review the diff"
    )


@pytest.mark.parametrize("output_format", sorted(FORMATS))
def test_golden(project: Path, output_format: str) -> None:
    # SARIF anchors relative paths at the project's absolute location, which varies.
    output = render(project, output_format).replace(project.resolve().as_uri(), "file:///PROJECT")
    assert_golden(f"{output_format}.txt", output)


def test_every_format_has_a_golden_file() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} >= set(FORMATS)


# -- full ------------------------------------------------------------------------------------


def test_full_shows_the_line_a_caret_and_the_fix(project: Path) -> None:
    out = render(project, "full")
    first = (
        f"pkg/train.py:10:18: XLA101 {ITEM_MESSAGE}\n"
        "   |\n"
        "10 |         total += loss.item()\n"
        "   |                  ^^^^^^^^^^^\n"
        "  = fix (unsafe): Accumulate `.detach()` instead of `.item()`\n"
        "\n"
    )
    assert first in out
    # A finding without a fix has no fix line.
    odd = out.split(f"{ODD_NAME}:4:13:")[1].split("\n\n")[0]
    assert "^" * len("batch.sum().item()") in odd
    assert "= fix" not in odd


def test_full_caret_matches_the_span(project: Path) -> None:
    write(project, TREE)
    findings = run_cli("check", *SELECT, "--output-format", "json", "pkg").stdout
    out = render(project, "full")
    for finding in json.loads(findings):
        if finding["code"] is None:
            continue  # the file that could not be linted
        start, end = finding["location"], finding["end_location"]
        header = f"{finding['filename']}:{start['row']}:{start['column']}: "
        block = out.split(header, 1)[1].split("\n\n", 1)[0].splitlines()
        caret = block[3]
        assert caret.index("^") - caret.index("|") - 2 == start["column"] - 1
        assert caret.count("^") == end["column"] - start["column"]


def test_full_and_concise_end_with_the_summary(project: Path) -> None:
    expected = (
        "1 file could not be linted.\n"
        "Found 3 findings in 2 files.\n"
        "No safe fixes; 1 with `xlalint fix --apply --unsafe-fixes`.\n"
    )
    for output_format in ("full", "concise"):
        out = render(project, output_format)
        assert out.endswith(expected)
        assert out.count("Found ") == 1


def test_summary_wording() -> None:
    def report(*diagnostics: Diagnostic, errors: int = 0) -> CheckReport:
        results = [FileResult(d.filename, [d]) for d in diagnostics]
        results += [FileResult(f"e{i}.py", error=FileError(f"e{i}.py", "x")) for i in range(errors)]
        return CheckReport(results=results)

    safe = _diagnostic("a.py", Applicability.SAFE)
    unsafe = _diagnostic("b.py", Applicability.UNSAFE)
    none = _diagnostic("b.py", None, row=3)
    assert summary(report()) == "All checks passed!\n"
    assert summary(report(errors=2)) == "2 files could not be linted.\n"
    assert summary(report(none)) == "Found 1 finding in 1 file.\n"
    assert summary(report(safe, unsafe, none, errors=1)) == (
        "1 file could not be linted.\n"
        "Found 3 findings in 2 files.\n"
        "[*] 1 fixable with `xlalint fix --apply` (1 more with `--unsafe-fixes`).\n"
    )
    assert summary(report(safe)).endswith("[*] 1 fixable with `xlalint fix --apply`.\n")


def _diagnostic(
    filename: str,
    applicability: Applicability | None,
    *,
    row: int = 2,
    message: str = "a message",
) -> Diagnostic:
    edit = Edit(Location(row, 5), Location(row, 9), "new")
    return Diagnostic(
        code="XLA101",
        name="item-in-hot-code",
        message=message,
        filename=filename,
        start=Location(row, 5),
        end=Location(row, 9),
        fix=Fix(applicability, "rewrite it", (edit,)) if applicability else None,
    )


def test_safe_fix_marker_in_concise_and_full(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\nabc old_ = 2\n", encoding="utf-8")
    safe = _diagnostic(str(source), Applicability.SAFE)
    unsafe = _diagnostic(str(source), Applicability.UNSAFE)
    assert concise.header(safe) == f"{source}:2:5: XLA101 [*] a message"
    assert concise.header(unsafe) == f"{source}:2:5: XLA101 a message"
    out = full.render(CheckReport(results=[FileResult(str(source), [safe])]), [])
    assert out == (
        f"{source}:2:5: XLA101 [*] a message\n"
        "  |\n"
        "2 | abc old_ = 2\n"
        "  |     ^^^^\n"
        "  = fix (safe): rewrite it\n"
        "\n"
    )


# -- concise ---------------------------------------------------------------------------------

CONCISE_LINE = re.compile(
    r"^(?P<path>[^\n]+):(?P<row>\d+):(?P<col>\d+): (?P<code>XLA\d{3}) (?P<fix>\[\*\] )?(?P<msg>.+)$"
)


def test_concise_one_line_per_finding(project: Path) -> None:
    out = render(project, "concise")
    lines = out.splitlines()
    findings = [m for line in lines if (m := CONCISE_LINE.match(line))]
    assert [(m["path"], int(m["row"]), int(m["col"])) for m in findings] == [
        (ODD_NAME, 4, 13),
        ("pkg/train.py", 10, 18),
        ("pkg/train.py", 11, 28),
    ]
    assert all(m["msg"] == ITEM_MESSAGE and m["fix"] is None for m in findings)
    assert lines[len(findings) :] == [
        "1 file could not be linted.",
        "Found 3 findings in 2 files.",
        "No safe fixes; 1 with `xlalint fix --apply --unsafe-fixes`.",
    ]


# -- machine formats: nothing but the format ------------------------------------------------


@pytest.mark.parametrize("output_format", sorted(set(FORMATS) - HUMAN_FORMATS))
def test_machine_formats_have_no_summary(project: Path, output_format: str) -> None:
    out = render(project, output_format)
    assert "Found " not in out and "fixable with" not in out and "could not" not in out
    assert render(project, output_format, "--quiet") == out
    if output_format == "github":
        assert all(line.startswith(("::error ", "::warning ")) for line in out.splitlines())
    else:
        json.loads(out)  # the whole output is one JSON document


@pytest.mark.parametrize(
    ("output_format", "expected"),
    [
        ("full", "All checks passed!\n"),
        ("concise", "All checks passed!\n"),
        ("json", "[]\n"),
        ("github", ""),
    ],
)
def test_clean_run(project: Path, output_format: str, expected: str) -> None:
    write(project, {"a.py": CLEAN})
    run = run_cli("check", *SELECT, "--output-format", output_format, ".")
    assert (run.exit_code, run.stdout, run.stderr) == (0, expected, "")


def test_clean_run_sarif(project: Path) -> None:
    write(project, {"a.py": CLEAN})
    run = run_cli("check", *SELECT, "--output-format", "sarif", ".")
    assert run.exit_code == 0
    document = run.json()
    assert document["runs"][0]["results"] == []
    assert document["runs"][0]["invocations"][0]["executionSuccessful"] is True


# -- json ------------------------------------------------------------------------------------


def test_json_fields(project: Path) -> None:
    items = json.loads(render(project, "json"))
    errors = [item for item in items if item["code"] is None]
    assert [(e["name"], e["filename"]) for e in errors] == [("file-error", "pkg/nul.py")]
    items = [item for item in items if item["code"] is not None]
    assert [item["filename"] for item in items] == [ODD_NAME, "pkg/train.py", "pkg/train.py"]
    fixed = items[1]
    assert set(fixed) >= {
        "code",
        "name",
        "message",
        "filename",
        "location",
        "end_location",
        "fix",
        "url",
    }
    assert fixed["code"] == "XLA101"
    assert fixed["name"] == "item-in-hot-code"
    assert fixed["message"] == ITEM_MESSAGE
    assert fixed["location"] == {"row": 10, "column": 18}
    assert fixed["end_location"] == {"row": 10, "column": 29}
    assert fixed["url"] == all_rules()["XLA101"].url()
    assert fixed["fix"]["applicability"] == "unsafe"
    assert fixed["fix"]["message"] == "Accumulate `.detach()` instead of `.item()`"
    assert fixed["fix"]["edits"] == [
        {
            "content": "loss.detach()",
            "location": {"row": 10, "column": 18},
            "end_location": {"row": 10, "column": 29},
        }
    ]
    assert items[0]["fix"] is None and items[2]["fix"] is None


def test_json_edit_applies_to_the_source(project: Path) -> None:
    """Applying the reported edit by its (1-based, character) positions gives the fix."""
    items = [item for item in json.loads(render(project, "json")) if item["code"] is not None]
    edit = items[1]["fix"]["edits"][0]
    lines = TRAIN.splitlines(keepends=True)
    row = lines[edit["location"]["row"] - 1]
    start, end = edit["location"]["column"] - 1, edit["end_location"]["column"] - 1
    assert row[start:end] == "loss.item()"
    assert row[:start] + edit["content"] + row[end:] == "        total += loss.detach()\n"


# -- github ----------------------------------------------------------------------------------

GITHUB_LINE = re.compile(r"^::(?:error|warning|notice) (?P<properties>[^:]*)::(?P<message>.*)$")


def test_github_annotations(project: Path) -> None:
    lines = render(project, "github").splitlines()
    parsed = [GITHUB_LINE.match(line) for line in lines]
    assert all(parsed), lines
    properties = [dict(p.split("=", 1) for p in m["properties"].split(",")) for m in parsed]
    assert properties[0] == {
        "title": "xlalint (XLA101)",
        "file": "pkg/odd name%2C1%25.py",
        "line": "4",
        "col": "13",
        "endLine": "4",
        "endColumn": "31",
    }
    assert parsed[0]["message"] == f"pkg/odd name,1%25.py:4:13: XLA101 {ITEM_MESSAGE}"
    assert lines[0].startswith("::warning ")  # XLA101's severity: the code runs, slowly
    assert properties[1]["file"] == "pkg/train.py"
    assert (properties[1]["line"], properties[1]["col"]) == ("10", "18")
    # Files that could not be linted are annotated too.
    assert lines[-1] == (
        "::error title=xlalint,file=pkg/nul.py::pkg/nul.py: contains a null byte; not Python source"
    )


def test_github_escaping() -> None:
    diagnostic = _diagnostic("dir:a,b/100%.py", None, message="50% done\r\nnext: line, more")
    error = FileError("x:y,z.py", "bad\nthing 5%")
    report = CheckReport(
        results=[FileResult(diagnostic.filename, [diagnostic]), FileResult("x", error=error)]
    )
    first, second = github.render(report, []).splitlines()
    assert first == (
        "::error title=xlalint (XLA101),file=dir%3Aa%2Cb/100%25.py,line=2,col=5,endLine=2,"
        "endColumn=9::dir:a,b/100%25.py:2:5: XLA101 50%25 done%0D%0Anext: line, more"
    )
    assert second == "::error title=xlalint,file=x%3Ay%2Cz.py::x:y,z.py: bad%0Athing 5%25"


# -- sarif -----------------------------------------------------------------------------------


def test_sarif_document(project: Path) -> None:
    document = json.loads(render(project, "sarif"))
    assert document["version"] == "2.1.0"
    assert document["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    [run] = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "xlalint"
    assert driver["version"] == __version__
    assert [rule["id"] for rule in driver["rules"]] == ["XLA101"]  # the enabled rules
    rule = driver["rules"][0]
    assert rule["shortDescription"]["text"]
    assert rule["helpUri"] == all_rules()["XLA101"].url()
    assert rule["name"] == "item-in-hot-code"
    results = run["results"]
    assert len(results) == 3
    for result in results:
        assert result["ruleId"] == "XLA101"
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert result["message"]["text"] == ITEM_MESSAGE
        location = result["locations"][0]["physicalLocation"]
        assert set(location["region"]) == {"startLine", "startColumn", "endLine", "endColumn"}
    first = results[1]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "pkg/train.py"
    assert first["region"] == {"startLine": 10, "startColumn": 18, "endLine": 10, "endColumn": 29}
    odd = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert odd == "pkg/odd%20name%2C1%25.py"  # a valid URI reference
    replacement = results[1]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "loss.detach()"
    assert "fixes" not in results[0]
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    [notification] = invocation["toolExecutionNotifications"]
    assert notification["message"]["text"] == "contains a null byte; not Python source"


def test_sarif_absolute_paths_are_relative_to_the_root(project: Path) -> None:
    write(project, {"my dir/a.py": BAD})
    run = run_cli("check", *SELECT, "--output-format", "sarif", str(project / "my dir"))
    [result] = run.json()["runs"][0]["results"]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "my%20dir/a.py", "uriBaseId": "%SRCROOT%"}


def test_sarif_paths_outside_the_root_are_file_uris(tmp_path: Path, project: Path) -> None:
    write(tmp_path, {"elsewhere/my dir/a.py": BAD})
    target = tmp_path / "elsewhere" / "my dir"
    run = run_cli("check", *SELECT, "--output-format", "sarif", str(target))
    [result] = run.json()["runs"][0]["results"]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (target / "a.py").as_uri()}
    assert " " not in artifact["uri"]


def test_sarif_lists_every_enabled_rule(project: Path) -> None:
    write(project, {"a.py": CLEAN})
    run = run_cli("check", "--select", "ALL", "--output-format", "sarif", ".")
    ids = [rule["id"] for rule in run.json()["runs"][0]["tool"]["driver"]["rules"]]
    assert ids == list(all_rules())


def test_sarif_render_without_rules_metadata() -> None:
    diagnostic = _diagnostic("a.py", None)
    out = sarif.render(CheckReport(results=[FileResult("a.py", [diagnostic])]), [])
    [result] = json.loads(out)["runs"][0]["results"]
    assert result["ruleIndex"] == -1  # SARIF's "no index" when the rule is not described
