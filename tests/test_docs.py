"""The committed rules reference matches what the rules' docstrings say."""

from __future__ import annotations

import pytest

from xlalint.docgen import DOCS, pages, rule_page
from xlalint.harness import evidence
from xlalint.registry import all_rules
from xlalint.rule import DOC_SECTIONS, HOST_SYNC_REACH, HOST_SYNC_VALUES


@pytest.mark.parametrize("name", sorted(pages()))
def test_committed_docs_are_current(name: str) -> None:
    committed = DOCS / name
    assert committed.is_file(), f"docs/rules/{name} missing: run `python -m xlalint.docgen`"
    assert committed.read_text(encoding="utf-8") == pages()[name], (
        f"docs/rules/{name} is stale: run `python -m xlalint.docgen`"
    )


@pytest.mark.parametrize("code", list(all_rules()))
def test_every_rule_documents_every_section(code: str) -> None:
    sections = all_rules()[code].doc_sections()
    for heading in (*DOC_SECTIONS, "Runtime evidence"):
        assert sections.get(heading), f"{code} has an empty or missing '{heading}' section"


@pytest.mark.parametrize("code", list(all_rules()))
def test_a_rule_off_by_default_says_why_and_how_to_turn_it_on(code: str) -> None:
    rule = all_rules()[code]
    off = rule.doc_sections().get("Off by default", "")
    if rule.default_enabled:
        assert not off, f"{code} is on by default but has an 'Off by default' section"
    else:
        assert f'extend-select = ["{code}"]' in off, (
            f"{code}: say why it is off and how to turn it on"
        )


@pytest.mark.parametrize("code", list(all_rules()))
def test_host_sync_rules_say_what_is_left_out_in_what_it_does(code: str) -> None:
    """`Rule.report` skips a host sync's findings off XLA and under long log intervals;
    exactly those rules say so, once, in "What it does"."""
    rule = all_rules()[code]
    what_it_does = rule.doc_sections()["What it does"]
    assert (HOST_SYNC_REACH in what_it_does) is rule.is_host_sync()
    assert rule.docs().count(HOST_SYNC_REACH) == int(rule.is_host_sync())


@pytest.mark.parametrize("code", list(all_rules()))
def test_host_sync_rules_say_what_a_tensor_is_in_what_it_does(code: str) -> None:
    """Every host-sync rule asks the same walk what is a tensor where it is read (type
    tests, branches, range checks); exactly those rules say how, once."""
    rule = all_rules()[code]
    what_it_does = rule.doc_sections()["What it does"]
    assert (HOST_SYNC_VALUES in what_it_does) is rule.is_host_sync()
    assert rule.docs().count(HOST_SYNC_VALUES) == int(rule.is_host_sync())


@pytest.mark.parametrize("code", list(all_rules()))
def test_runtime_evidence_is_the_last_section(code: str) -> None:
    """docgen appends the measured numbers to the page: they must land in this section."""
    assert list(all_rules()[code].doc_sections())[-1] == "Runtime evidence"


def test_measured_evidence_appears_on_the_rule_page() -> None:
    record = evidence.load()
    measured = {case["code"] for case in record["cases"]}
    assert measured, "xlalint/evidence.json records no case"
    for code in measured:
        page = rule_page(all_rules()[code])
        assert "Measured by `xlalint verify`" in page
        assert page.index("## Runtime evidence") < page.index("Measured by")


ARCHITECTURE = DOCS.parent / "architecture.md"


@pytest.mark.parametrize(
    "module",
    sorted(
        path.name
        for path in (DOCS.parent.parent / "xlalint" / "analysis").glob("*.py")
        if path.name != "__init__.py"
    ),
)
def test_architecture_describes_every_analysis_module(module: str) -> None:
    """docs/architecture.md's analysis table is the map of shared reasoning: a module
    missing from it is reasoning a reader cannot find."""
    assert f"| `{module}` |" in ARCHITECTURE.read_text(encoding="utf-8"), (
        f"docs/architecture.md has no row for analysis/{module}"
    )
