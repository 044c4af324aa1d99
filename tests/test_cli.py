"""`xlalint check`, `xlalint rules`, `xlalint rule`: options, exit codes, entry points."""

from __future__ import annotations

import concurrent.futures
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import (
    BAD,
    BAD_COL,
    BAD_ROW,
    CLEAN,
    ITEM_MESSAGE,
    NO_FIX,
    SELECT,
    console_script,
    run_cli,
    run_subprocess,
    write,
)

from xlalint import __version__, api
from xlalint.api import CheckReport
from xlalint.cli import statistics
from xlalint.diagnostics import Applicability, Diagnostic, Edit, FileResult, Fix, Location
from xlalint.registry import all_rules
from xlalint.rule import DOC_SECTIONS

CONCISE = ("--output-format", "concise")
JSON = ("--output-format", "json")


def bad_line(path: str) -> str:
    return f"{path}:{BAD_ROW}:{BAD_COL}: XLA101 {ITEM_MESSAGE}"


# -- exit codes ------------------------------------------------------------------------------


def test_clean_files_exit_0(project: Path) -> None:
    write(project, {"a.py": CLEAN, "pkg/b.py": CLEAN})
    run = run_cli("check", *SELECT, ".")
    assert run.exit_code == 0
    assert run.stdout == "All checks passed!\n"
    assert run.stderr == ""


def test_findings_exit_1(project: Path) -> None:
    write(project, {"bad.py": BAD, "clean.py": CLEAN})
    run = run_cli("check", *SELECT, *CONCISE, "bad.py", "clean.py")
    assert run.exit_code == 1
    assert run.stdout.splitlines()[0] == bad_line("bad.py")
    assert "clean.py" not in run.stdout


def test_default_path_is_the_current_folder(project: Path) -> None:
    write(project, {"top.py": BAD, "pkg/deep/inner.py": BAD, "pkg/ok.py": CLEAN})
    run = run_cli("check", *SELECT, *CONCISE)
    assert run.exit_code == 1
    assert run.stdout.splitlines()[:2] == [bad_line("pkg/deep/inner.py"), bad_line("top.py")]


def test_only_python_files_are_linted(project: Path) -> None:
    write(project, {"a.py": BAD, "b.pyi": BAD, "c.txt": BAD, "d.pyc": BAD, "e.py.bak": BAD})
    run = run_cli("check", *SELECT, *JSON)
    assert sorted({f[0] for f in run.findings()}) == ["a.py", "b.pyi"]


def test_exit_zero_keeps_the_findings_but_exits_0(project: Path) -> None:
    write(project, {"bad.py": BAD})
    run = run_cli("check", *SELECT, *CONCISE, "--exit-zero", "bad.py")
    assert run.exit_code == 0
    assert bad_line("bad.py") in run.stdout
    assert "Found 1 finding in 1 file." in run.stdout


def test_exit_zero_covers_unlintable_files(project: Path) -> None:
    write(project, {"broken.py": "def f(:\n    x.item()\n"})
    assert run_cli("check", *SELECT, "broken.py").exit_code == 1
    run = run_cli("check", *SELECT, "--exit-zero", "broken.py")
    assert run.exit_code == 0
    assert run.error_lines and run.error_lines[0].startswith("error: broken.py: syntax error")


def test_missing_path_exits_2_and_the_rest_is_still_linted(project: Path) -> None:
    write(project, {"bad.py": BAD})
    run = run_cli("check", *SELECT, *CONCISE, "bad.py", "nope.py", "gone/")
    assert run.exit_code == 2
    assert bad_line("bad.py") in run.stdout
    assert run.error_lines == [
        "error: nope.py: no such file or directory",
        "error: gone: no such file or directory",
    ]


def test_exit_zero_does_not_hide_a_missing_path(project: Path) -> None:
    write(project, {"clean.py": CLEAN})
    assert run_cli("check", *SELECT, "--exit-zero", "clean.py", "nope.py").exit_code == 2


@pytest.mark.parametrize(
    "args",
    [
        ("--output-format", "nope"),
        ("--jobs", "0"),
        ("--select", "XLA999"),
        ("--ignore", "NOPE1"),
        ("--extend-select", "XLA101,XLA999"),
        ("--no-such-option",),
    ],
)
def test_usage_errors_exit_2(project: Path, args: tuple[str, ...]) -> None:
    write(project, {"bad.py": BAD})
    run = run_cli("check", *args, "bad.py")
    assert run.exit_code == 2
    assert run.stdout == ""  # nothing linted
    assert "Error:" in run.stderr


def test_unknown_code_error_names_the_option_and_code(project: Path) -> None:
    run = run_cli("check", "--select", "XLA101,XLA999", ".")
    assert run.exit_code == 2
    assert "Invalid value for --select: unknown rule code(s) XLA999" in run.stderr


def test_unknown_codes_get_a_did_you_mean(project: Path) -> None:
    run = run_cli("check", "--ignore", "XLA1011", ".")
    assert run.exit_code == 2
    assert "unknown rule code(s) XLA1011 (did you mean `XLA101`?);" in run.stderr
    run = run_cli("rule", "xla1011")
    assert run.exit_code == 2
    assert "no rule 'xla1011' (did you mean `XLA101`?)" in run.stderr
    run = run_cli("rule", "item-in-hot-cod")
    assert "(did you mean `item-in-hot-code`?)" in run.stderr


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_folder_without_python_files_gets_a_warning(project: Path, command: str) -> None:
    write(project, {"docs/readme.md": "# docs\n", "pkg/a.py": "x = 1\n", "empty/.keep": ""})
    run = run_cli(command, *SELECT, "docs", "pkg", "empty")
    assert run.exit_code == 0
    assert [line for line in run.stderr.splitlines() if line.startswith("warning")] == [
        "warning: docs: no Python files found",
        "warning: empty: no Python files found",
    ]
    assert "warning" not in run_cli(command, *SELECT, "pkg").stderr


# -- rule selection --------------------------------------------------------------------------


def codes_reported(*args: str) -> set[str]:
    run = run_cli("check", *JSON, *args, "bad.py")
    assert run.exit_code in (0, 1), run.stderr
    return {code for _, _, _, code in run.findings()}


@pytest.mark.parametrize(
    ("args", "reported"),
    [
        (("--select", "XLA101"), True),
        (("--select", "xla101"), True),
        (("--select", "XLA1"), True),
        (("--select", "XLA"), True),
        (("--select", "ALL"), True),
        (("--select", "XLA1,XLA101"), True),
        (("--select", " XLA101 , XLA1 "), True),
        (("--select", "XLA1", "--select", "XLA101"), True),
        (("--select", "ALL", "--ignore", "XLA101"), False),
        (("--select", "XLA101", "--ignore", "XLA1"), False),
        (("--select", "XLA101", "--ignore", "ALL"), False),
        (("--select", "ALL", "--ignore", "XLA1"), False),
        (("--select", "XLA101", "--ignore", "XLA1,XLA101"), False),
        (("--select", "XLA101", "--ignore", "XLA1", "--ignore", "XLA101"), False),
        (("--ignore", "XLA101"), False),
    ],
)
def test_select_and_ignore(project: Path, args: tuple[str, ...], reported: bool) -> None:
    write(project, {"bad.py": BAD})
    assert ("XLA101" in codes_reported(*args)) is reported


def test_select_one_code_reports_only_that_code(project: Path) -> None:
    write(project, {"bad.py": BAD + "x = torch.zeros(3).cuda()\nprint(x.nonzero())\n"})
    assert codes_reported("--select", "XLA101") == {"XLA101"}


def test_select_prefix_reports_only_codes_under_it(project: Path) -> None:
    write(project, {"bad.py": BAD + "x = torch.zeros(3).cuda()\n"})
    codes = codes_reported("--select", "XLA1")
    assert "XLA101" in codes
    assert all(code.startswith("XLA1") for code in codes)


def test_default_selection_is_every_default_on_rule(project: Path) -> None:
    write(project, {"bad.py": BAD})
    defaults = {code for code, rule in all_rules().items() if rule.default_enabled}
    codes = codes_reported()
    assert "XLA101" in codes
    assert codes <= defaults


@pytest.mark.parametrize(
    ("cli", "reported"),
    [
        ((), False),
        (("--extend-select", "XLA101"), True),
        (("--extend-select", "XLA1"), True),
        (("--extend-select", "XLA1,XLA101"), True),
        (("--extend-select", "XLA1", "--extend-select", "XLA101"), True),
        (("--extend-select", "XLA101", "--ignore", "XLA101"), False),
        (("--select", "XLA101"), True),  # the command line's select replaces the config's
    ],
)
def test_extend_select_adds_to_the_configured_selection(
    project: Path, cli: tuple[str, ...], reported: bool
) -> None:
    write(project, {"bad.py": BAD, "pyproject.toml": "[tool.xlalint]\nselect = []\n"})
    assert ("XLA101" in codes_reported(*cli)) is reported


def test_ignore_on_the_command_line_adds_to_the_configured_ignore(project: Path) -> None:
    write(project, {"bad.py": BAD, "xlalint.toml": 'select = ["XLA101"]\nignore = []\n'})
    assert codes_reported() == {"XLA101"}
    assert codes_reported("--ignore", "XLA1") == set()


# -- statistics, quiet, formats from the environment --------------------------------------


def test_statistics_text(project: Path) -> None:
    write(project, {"a.py": BAD, "b.py": BAD + NO_FIX.replace("import torch\n", "")})
    run = run_cli("check", *SELECT, "--statistics", ".")
    assert run.exit_code == 1
    # XLA101's fixes are unsafe: `[*]` (what `xlalint fix --apply` fixes) does not apply.
    assert run.stdout == "3\tXLA101\titem-in-hot-code\n"


def test_statistics_json(project: Path) -> None:
    write(project, {"a.py": BAD, "b.py": BAD})
    run = run_cli("check", *SELECT, "--statistics", *JSON, ".")
    assert run.exit_code == 1
    assert run.json() == [
        {"code": "XLA101", "name": "item-in-hot-code", "count": 2, "fixable": False}
    ]


def test_statistics_of_a_clean_run(project: Path) -> None:
    write(project, {"a.py": CLEAN})
    assert run_cli("check", *SELECT, "--statistics", ".").stdout == ""
    run = run_cli("check", *SELECT, "--statistics", *JSON, ".")
    assert (run.exit_code, run.json()) == (0, [])


def test_statistics_with_exit_zero(project: Path) -> None:
    write(project, {"a.py": BAD})
    run = run_cli("check", *SELECT, "--statistics", "--exit-zero", ".")
    assert (run.exit_code, run.stdout) == (0, "1\tXLA101\titem-in-hot-code\n")


def _diagnostic(code: str, row: int, fix: Applicability | None) -> Diagnostic:
    edit = Edit(Location(row, 1), Location(row, 2), "y")
    return Diagnostic(
        code=code,
        name=f"name-of-{code.lower()}",
        message="message",
        filename="f.py",
        start=Location(row, 1),
        end=Location(row, 2),
        fix=Fix(fix, "do it", (edit,)) if fix else None,
    )


def test_statistics_order_counts_and_fix_marker() -> None:
    diagnostics = [
        _diagnostic("XLA101", 1, Applicability.UNSAFE),
        _diagnostic("XLA900", 2, None),
        _diagnostic("XLA900", 3, Applicability.SAFE),
        _diagnostic("XLA901", 4, None),
        _diagnostic("XLA900", 5, None),
        _diagnostic("XLA901", 6, None),
    ] + [_diagnostic("XLA902", row, None) for row in range(10, 20)]
    report = CheckReport(results=[FileResult("f.py", diagnostics)])
    assert statistics(report, "text") == (
        "10\tXLA902\tname-of-xla902\n"
        " 3\tXLA900\t[*] name-of-xla900\n"
        " 2\tXLA901\tname-of-xla901\n"
        " 1\tXLA101\tname-of-xla101\n"
    )
    rows = {row["code"]: row["fixable"] for row in json.loads(statistics(report, "json"))}
    assert rows == {"XLA902": False, "XLA900": True, "XLA901": False, "XLA101": False}


def test_quiet_prints_findings_only(project: Path) -> None:
    write(project, {"bad.py": BAD})
    run = run_cli("check", *SELECT, *CONCISE, "--quiet", "bad.py")
    assert (run.exit_code, run.stdout) == (1, bad_line("bad.py") + "\n")
    run = run_cli("check", *SELECT, "-q", "bad.py")
    assert run.exit_code == 1
    assert run.stdout.startswith(bad_line("bad.py") + "\n")
    assert "Found" not in run.stdout and "fixable" not in run.stdout


def test_quiet_clean_run_prints_nothing(project: Path) -> None:
    write(project, {"clean.py": CLEAN})
    assert run_cli("check", *SELECT, "-q", ".") == run_cli("check", *SELECT, "--quiet", ".")
    run = run_cli("check", *SELECT, "-q", ".")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")


def test_quiet_still_reports_unlintable_files(project: Path) -> None:
    write(project, {"nul.py": b"x = 1\x00\n"})
    run = run_cli("check", *SELECT, "-q", ".")
    assert run.exit_code == 1
    assert run.error_lines == ["error: nul.py: contains a null byte; not Python source"]


def test_output_format_from_the_environment(project: Path) -> None:
    write(project, {"bad.py": BAD})
    run = run_cli("check", *SELECT, "-q", "bad.py", env={"XLALINT_OUTPUT_FORMAT": "concise"})
    assert run.stdout == bad_line("bad.py") + "\n"
    run = run_cli("check", *SELECT, *JSON, "bad.py", env={"XLALINT_OUTPUT_FORMAT": "concise"})
    assert run.findings() == [("bad.py", BAD_ROW, BAD_COL, "XLA101")]


def test_version() -> None:
    run = run_cli("--version")
    assert (run.exit_code, run.stdout) == (0, f"xlalint, version {__version__}\n")


# -- parallel runs ---------------------------------------------------------------------------


BROKEN = "import torch\nfor x in y:\n    x.item(\n"
TREE_ERRORS = [
    "error: pkg1/broken.py: syntax error at ",  # then libcst's own words
    "error: pkg2/nul.py: contains a null byte; not Python source",
]


def assert_tree_errors(stderr: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 2, stderr
    assert lines[0].startswith(TREE_ERRORS[0])
    assert lines[1] == TREE_ERRORS[1]


def _tree_of(folder: Path, count: int) -> int:
    """`count` files with findings, clean ones and two that cannot be linted; returns the
    number of findings."""
    kinds = [(BAD, 1), (CLEAN, 0), (NO_FIX, 1), (BAD + NO_FIX, 2)]
    files: dict[str, str | bytes] = {"pkg1/broken.py": BROKEN, "pkg2/nul.py": b"x = 1\x00\n"}
    findings = 0
    for index in range(count):
        text, found = kinds[index % 4]
        files[f"pkg{index % 3}/mod_{index:02d}.py"] = text
        findings += found
    write(folder, files)
    return findings


class _RecordingPool(ProcessPoolExecutor):
    started: ClassVar[list[int]] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        _RecordingPool.started.append(int(kwargs.get("max_workers") or 0))
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("output_format", ["full", "json"])
def test_jobs_output_is_identical_and_ordered(
    project: Path, monkeypatch: pytest.MonkeyPatch, output_format: str
) -> None:
    findings = _tree_of(project, 24)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _RecordingPool)
    _RecordingPool.started = []
    one = run_cli("check", *SELECT, "--output-format", output_format, "-j", "1", ".")
    assert _RecordingPool.started == []  # one job: no pool
    two = run_cli("check", *SELECT, "--output-format", output_format, "--jobs", "2", ".")
    assert _RecordingPool.started == [2]  # the pool really ran
    assert one == two
    assert one.exit_code == 1
    assert_tree_errors(one.stderr)
    if output_format == "json":
        found = one.findings()
        assert len(found) == findings == 24
        assert found == sorted(found)
        assert len({name for name, *_ in found}) == 18  # 24 files, 6 of them clean
    else:
        assert f"Found {findings} findings in 18 files." in one.stdout


def test_small_runs_stay_in_one_process(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree_of(project, api.PARALLEL_THRESHOLD - 3)  # with the two broken files: one short
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _RecordingPool)
    _RecordingPool.started = []
    run = run_cli("check", *SELECT, "-j", "4", ".")
    assert run.exit_code == 1
    assert_tree_errors(run.stderr)
    assert _RecordingPool.started == []


# -- --config and --force-exclude ------------------------------------------------------------


def test_config_option_replaces_the_search(project: Path) -> None:
    write(
        project,
        {
            "pkg/bad.py": BAD,
            "pkg/pyproject.toml": '[tool.xlalint]\nignore = ["XLA101"]\n',
            "elsewhere/strict.toml": 'select = ["XLA101"]\n',
            "other/pyproject.toml": '[tool.xlalint]\nselect = ["XLA101"]\n',
        },
    )
    assert run_cli("check", *SELECT, "pkg").exit_code == 0  # the nearby config ignores it
    for config in ("elsewhere/strict.toml", "other/pyproject.toml"):
        run = run_cli("check", "--config", config, *CONCISE, "pkg")
        assert run.exit_code == 1
        assert bad_line("pkg/bad.py") in run.stdout
    # A file not named pyproject.toml holds the settings at its top level, as xlalint.toml.
    write(project, {"elsewhere/strict.toml": '[tool.xlalint]\nselect = ["XLA101"]\n'})
    run = run_cli("check", "--config", "elsewhere/strict.toml", "pkg")
    assert run.exit_code == 2
    assert "strict.toml: unknown key `tool`" in run.stderr


def test_config_option_takes_an_xlalint_toml(project: Path) -> None:
    write(project, {"bad.py": BAD, "conf/xlalint.toml": 'ignore = ["XLA1"]\n'})
    assert run_cli("check", *SELECT, "bad.py").exit_code == 1
    assert run_cli("check", *SELECT, "--config", "conf/xlalint.toml", "bad.py").exit_code == 0


def test_config_option_errors(project: Path) -> None:
    write(project, {"bad.py": BAD, "folder/x": ""})
    run = run_cli("check", "--config", "missing.toml", "bad.py")
    assert run.exit_code == 2
    assert "missing.toml" in run.stderr and "not found" in run.stderr
    assert run_cli("check", "--config", "folder", "bad.py").exit_code == 2


def test_force_exclude_applies_exclusions_to_named_files(project: Path) -> None:
    write(
        project,
        {
            "pyproject.toml": '[tool.xlalint]\nextend-exclude = ["generated", "legacy_*.py"]\n',
            "generated/model.py": BAD,
            "legacy_train.py": BAD,
            "build/out.py": BAD,
            "train.py": BAD,
        },
    )
    named = ("generated/model.py", "legacy_train.py", "build/out.py", "train.py")
    run = run_cli("check", *SELECT, *JSON, *named)
    assert sorted(f[0] for f in run.findings()) == sorted(named)  # named: always linted
    run = run_cli("check", *SELECT, *JSON, "--force-exclude", *named)
    assert [f[0] for f in run.findings()] == ["train.py"]
    run = run_cli("check", *SELECT, "--force-exclude", "generated/model.py")
    assert (run.exit_code, run.stdout) == (0, "All checks passed!\n")


# -- rules and rule --------------------------------------------------------------------------


def test_rules_table_lists_every_rule() -> None:
    run = run_cli("rules")
    assert run.exit_code == 0
    header, *rows = run.stdout.splitlines()
    assert header.split() == ["CODE", "NAME", "FIX", "DEFAULT"]
    table = [row.split() for row in rows]
    assert [row[0] for row in table] == list(all_rules())
    for code, name, fix, default in table:
        rule = all_rules()[code]
        assert name == rule.name
        assert fix in ("safe", "unsafe", "-")
        assert default == ("on" if rule.default_enabled else "off")
    assert ["XLA101", "item-in-hot-code", "unsafe", "on"] in table
    # Columns line up: every row starts its NAME where the header does.
    assert {row.index(row.split()[1]) for row in rows} == {header.index("NAME")}


def test_rules_json_lists_every_rule() -> None:
    run = run_cli("rules", "--output-format", "json")
    assert run.exit_code == 0
    rows = run.json()
    assert [row["code"] for row in rows] == list(all_rules())
    for row in rows:
        assert {"code", "name", "fix", "default"} <= set(row)
        assert row["name"] == all_rules()[row["code"]].name
        assert isinstance(row["default"], bool)
    xla101 = next(row for row in rows if row["code"] == "XLA101")
    assert xla101["name"] == "item-in-hot-code"
    assert xla101["fix"] == "unsafe"
    # A rule without a fix has none: null, not a placeholder string.
    assert {row["fix"] for row in rows} <= {"safe", "unsafe", None}
    assert next(row for row in rows if row["code"] == "XLA102")["fix"] is None
    assert xla101["default"] is True
    assert xla101["url"].endswith("XLA101.md")


def _section_positions(text: str) -> list[int]:
    return [text.index(f"## {heading}\n") for heading in DOC_SECTIONS]


def test_rule_prints_the_documentation() -> None:
    run = run_cli("rule", "XLA101")
    assert run.exit_code == 0
    assert run.stdout.startswith("# item-in-hot-code (XLA101)\n")
    assert DOC_SECTIONS == ("What it does", "Why is this bad?", "Example", "Use instead",
                            "Fix safety")  # fmt: skip
    positions = _section_positions(run.stdout)
    assert positions == sorted(positions)
    assert "Fix (unsafe) is sometimes available." in run.stdout
    assert "total_loss += loss.item()" in run.stdout  # the example's code


@pytest.mark.parametrize("spelling", ["item-in-hot-code", "xla101", "XLA101"])
def test_rule_by_name_or_any_case(spelling: str) -> None:
    assert run_cli("rule", spelling) == run_cli("rule", "XLA101")


@pytest.mark.parametrize("code", list(all_rules()))
def test_every_rule_has_its_documentation(code: str) -> None:
    run = run_cli("rule", code)
    assert run.exit_code == 0
    assert run.stdout.startswith(f"# {all_rules()[code].name} ({code})\n")
    for heading in DOC_SECTIONS:
        body = run.stdout.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
        assert body.strip(), f"{code}: empty {heading!r}"


@pytest.mark.parametrize("code", ["XLA999", "no-such-rule", ""])
def test_rule_unknown_exits_2(code: str) -> None:
    run = run_cli("rule", code)
    assert run.exit_code == 2
    assert run.stdout == ""
    assert f"no rule {code!r}" in run.stderr


def test_rule_without_argument_exits_2() -> None:
    assert run_cli("rule").exit_code == 2


# -- the real entry points -------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "xlalint"], [str(console_script())]],
    ids=["python -m xlalint", "console script"],
)
def test_entry_points_exit_codes(tmp_path: Path, command: list[str]) -> None:
    if not Path(command[0]).exists():
        pytest.fail(f"{command[0]} is missing: is xlalint installed in this environment?")
    write(tmp_path, {"bad.py": BAD, "clean.py": CLEAN})
    clean = run_subprocess(command, "check", *SELECT, "clean.py", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "All checks passed!\n")
    bad = run_subprocess(command, "check", *SELECT, *CONCISE, ".", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.splitlines()[0] == bad_line("bad.py")
    usage = run_subprocess(command, "check", "--select", "XLA999", ".", cwd=tmp_path)
    assert usage.returncode == 2
    assert "XLA999" in usage.stderr
    missing = run_subprocess(command, "check", *SELECT, "nope.py", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == "error: nope.py: no such file or directory\n"
    assert run_subprocess(command, "rule", "XLA999", cwd=tmp_path).returncode == 2
    version = run_subprocess(command, "--version", cwd=tmp_path)
    assert version.stdout.strip() == f"xlalint, version {__version__}"


def test_jobs_in_a_real_process(tmp_path: Path) -> None:
    findings = _tree_of(tmp_path, 22)
    command = [sys.executable, "-m", "xlalint", "check", *SELECT]
    one = run_subprocess(command, "-j", "1", ".", cwd=tmp_path)
    two = run_subprocess(command, "-j", "2", ".", cwd=tmp_path)
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout
    assert one.stderr == two.stderr
    assert_tree_errors(one.stderr)
    headers = [
        (match[1], int(match[2]))
        for match in re.finditer(r"^(pkg\d/mod_\d+\.py):(\d+):\d+: XLA101 ", one.stdout, re.M)
    ]
    assert len(headers) == findings == 21
    assert headers == sorted(headers)
