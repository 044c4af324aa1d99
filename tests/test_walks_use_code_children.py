"""Hand-written walks go through `xlalint.walk` (`children`, `code_children`,
`descendants`), never libcst's `.children` property.

The property runs a visitor over the node's fields and rebuilds the node on every access.
Round 14 found this round's module-wide facts in `analysis/host_arguments.py` walking every
function body that way: cold diffusers took 46% more CPU. This test reads xlalint's own
sources and fails on the next such walk; `xlalint/walk.py` alone may touch the property
(its fallback for node types it cannot list).
"""

from __future__ import annotations

import ast
from pathlib import Path

import xlalint

SOURCES = Path(xlalint.__file__).parent
ALLOWED = {SOURCES / "walk.py"}


def test_no_walk_reads_libcsts_children_property() -> None:
    found = []
    for path in sorted(SOURCES.rglob("*.py")):
        if path in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "children":
                found.append(f"{path.relative_to(SOURCES)}:{node.lineno}")
    assert found == [], f"use xlalint.walk.code_children (or children) instead: {found}"
