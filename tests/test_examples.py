"""The bundled examples: the findings the quickstart shows, the same in every output format.

The expected findings live in tests/golden/examples.txt (`path:row:col: CODE`, one per line).
After a rule change that intends to change them, regenerate and review the diff:

    XLALINT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_examples.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from xlalint.api import enabled_rules
from xlalint.config import find_settings
from xlalint.harness.fix_verify import verify_fixes
from xlalint.report import FORMATS

GOLDEN = ROOT / "tests" / "golden" / "examples.txt"
UPDATE = os.environ.get("XLALINT_UPDATE_GOLDEN") == "1"
Finding = tuple[str, int, int, str]

_TEXT_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<row>\d+):(?P<col>\d+): (?P<code>XLA\d+)")
_GITHUB = re.compile(r"^::(?:error|warning|notice) title=xlalint \((?P<code>XLA\d+)\),"
                     r"file=(?P<path>[^,]+),line=(?P<row>\d+),col=(?P<col>\d+),")  # fmt: skip


def _from_text(output: str, pattern: re.Pattern[str]) -> list[Finding]:
    return [
        (m["path"], int(m["row"]), int(m["col"]), m["code"])
        for m in map(pattern.match, output.splitlines())
        if m is not None
    ]


def _from_json(output: str) -> list[Finding]:
    return [
        (d["filename"], d["location"]["row"], d["location"]["column"], d["code"])
        for d in json.loads(output)
    ]


def _from_sarif(output: str) -> list[Finding]:
    findings = []
    for result in json.loads(output)["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]
        region = location["region"]
        uri = location["artifactLocation"]["uri"]
        findings.append((uri, region["startLine"], region["startColumn"], result["ruleId"]))
    return findings


PARSERS: dict[str, Callable[[str], list[Finding]]] = {
    "full": lambda out: _from_text(out, _TEXT_LOCATION),
    "concise": lambda out: _from_text(out, _TEXT_LOCATION),
    "github": lambda out: _from_text(out, _GITHUB),
    "json": _from_json,
    "sarif": _from_sarif,
}


def _expected() -> list[Finding]:
    lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    return _from_text("\n".join(lines), _TEXT_LOCATION)


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(ROOT)
    return ROOT


def test_every_format_has_a_parser() -> None:
    assert sorted(PARSERS) == sorted(FORMATS)


@pytest.mark.parametrize("output_format", sorted(PARSERS))
def test_examples_report_the_expected_findings(in_root: Path, output_format: str) -> None:
    run = run_cli("check", "examples", "--output-format", output_format)
    assert run.exit_code == 1
    assert run.stderr == ""
    found = PARSERS[output_format](run.stdout)
    if UPDATE and output_format == "concise":
        GOLDEN.write_text("".join(f"{p}:{r}:{c}: {code}\n" for p, r, c, code in found))
    assert found == _expected()


def test_examples_show_every_rule_family() -> None:
    """The quickstart demonstrates both the host-sync and the device-placement rules."""
    codes = {code for *_, code in _expected()}
    assert {code[:4] for code in codes} >= {"XLA1", "XLA3"}
    assert len(codes) >= 9


@pytest.mark.runtime
def test_fix_verify_on_the_slow_xla_example_proves_the_fixes_pay(project: Path) -> None:
    """The bundled XLA training script, profiled as it is and with the fixes on a copy."""
    shutil.copyfile(ROOT / "examples" / "train_xla_slow.py", project / "train.py")
    original = (project / "train.py").read_bytes()
    settings = find_settings(project)
    result = verify_fixes(
        ["python", "train.py"], settings, enabled_rules(settings), unsafe=True, device="cpu"
    )
    assert (project / "train.py").read_bytes() == original  # only the copy was fixed
    applied = sum((outcome.applied for outcome in result.fixes.outcomes), Counter())
    assert applied == Counter({"XLA101": 1, "XLA401": 1, "XLA603": 1})
    before, after = result.before, result.after
    assert before.returncode == after.returncode == 0
    assert result.printed.count == (3, 3)
    assert result.printed.max_rel_diff < 1e-5
    assert after.totals["device_to_host"] < before.totals["device_to_host"]
    assert after.totals["max_graph_size"] < before.totals["max_graph_size"]
    confirmed = {(c.finding.code, c.finding.start.row) for c in before.findings if c.cost}
    assert {("XLA101", 40), ("XLA201", 41)} <= confirmed
    # The boolean-mask read (line 21) reads its indices on the host in the forward pass and
    # again in `loss.backward()` (line 38): no rule flags either line.
    unexplained = [(cost.file, cost.line) for cost in before.unexplained]
    assert unexplained == [("train.py", 21), ("train.py", 38)]
    # Every transfer is on a line: the lines add up to the run's count.
    assert sum(c.host_reads for c in before.lines) == before.totals["device_to_host"]
    # The loop without a barrier is confirmed by its graph growing at every step.
    (no_barrier,) = [c for c in before.findings if c.finding.code == "XLA401"]
    assert no_barrier.growth is not None and no_barrier.growth.grows


def test_the_readme_shows_what_check_prints_on_the_examples(in_root: Path) -> None:
    """The README's first example is the quickstart's output: keep it true."""
    readme = (in_root / "README.md").read_text(encoding="utf-8")
    block = readme.split("$ xlalint check examples/ --output-format concise\n", 1)[1]
    block = block.split("```", 1)[0]
    shown = [line for line in block.splitlines() if line and line != "..."]
    run = run_cli("check", "examples/", "--output-format", "concise", "--no-cache")
    printed = run.stdout.splitlines()
    assert shown and all(line in printed for line in shown), (shown, printed[-4:])
