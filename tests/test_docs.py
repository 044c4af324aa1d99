"""The committed rules reference matches what the rules' docstrings say."""

from __future__ import annotations

import pytest

from xlalint.docgen import DOCS, pages
from xlalint.registry import all_rules
from xlalint.rule import DOC_SECTIONS


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
