"""Numbers in the rules' "Runtime evidence" prose come from xlalint/evidence.json.

A rule with a runtime case writes its measured counts as placeholders
(`{accumulate_loss.after.executions}`) that docgen fills from the evidence, so the prose
cannot disagree with the table printed below it. Counts that no runtime case measures are
allowed only in a paragraph that says where they come from ("by hand", XLA_FACTS.md, a
script under benchmarks/).
"""

from __future__ import annotations

import re

import pytest

from xlalint.docgen import rule_page
from xlalint.harness import evidence
from xlalint.registry import all_rules

UNITS = (
    r"executions?|(?:device-to-host |host-to-device )?transfers?|(?:uncached |cached )?"
    r"compiles?|nodes?|calls?|fallbacks?|warnings?"
)
# A literal count: "10 executions", "5 `aten::nonzero` CPU fallbacks", "4 uncached and 6".
LITERAL = re.compile(rf"\b\d+\s+(?:`[^`]*`\s+)?(?:CPU\s+)?(?:{UNITS})\b|\b\d+ uncached and \d+")
MEASURED = sorted({case["code"] for case in evidence.load()["cases"]})


def _prose(code: str) -> str:
    return all_rules()[code].doc_sections()["Runtime evidence"]


@pytest.mark.parametrize("code", list(all_rules()))
def test_every_placeholder_is_measured(code: str) -> None:
    evidence.fill(code, all_rules()[code].docs(), strict=True)


# A paragraph that names where its numbers come from other than a runtime case.
SOURCES = ("by hand", "XLA_FACTS.md", "benchmarks/")


@pytest.mark.parametrize("code", MEASURED)
def test_measured_rules_write_no_count_by_hand(code: str) -> None:
    literal = []
    for paragraph in _prose(code).split("\n\n"):
        for sentence in re.split(r"(?<=[.;])\s+", " ".join(paragraph.split())):
            if not LITERAL.search(evidence.PLACEHOLDER.sub("", sentence)):
                continue
            if not any(source in sentence or source in paragraph for source in SOURCES):
                literal.append(sentence)
    assert literal == [], f"{code}: write measured counts as evidence placeholders"


def test_the_prose_and_the_table_agree_on_xla101() -> None:
    """The prose once said 5 executions where the table below it said 6."""
    page = rule_page(all_rules()["XLA101"])
    (case,) = [c for c in evidence.load()["cases"] if c["code"] == "XLA101"]
    before, after = case["before"]["executions"], case["after"]["executions"]
    assert f"| executions | {before} | {after} |" in page
    prose = " ".join(page.split("## Runtime evidence", 1)[1].split("Measured by")[0].split())
    assert f"costs {before} executions" in prose
    assert f"`loss.detach()` costs {after} executions" in prose


def test_a_placeholder_reads_its_case() -> None:
    record = {"cases": [{"code": "XLA101", "case": "loop", "before": {"executions": 10},
                         "after": {"executions": 6},
                         "outputs": {"exact": False, "close": True}}]}  # fmt: skip
    text = "{loop.before.executions} then {XLA101:loop.after.executions}; {loop.outputs}"
    assert evidence.fill("XLA101", text, record) == "10 then 6; equal within tolerance"
    assert evidence.fill("XLA102", "{gone.after.executions}", record) == "(not measured)"
    with pytest.raises(evidence.MissingEvidence):
        evidence.fill("XLA101", "{loop.after.compiles}", record, strict=True)
