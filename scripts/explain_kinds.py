"""Show what xlalint's tensor-kind analysis thinks of the names on one line.

A developer tool for chasing false positives:
    .venv/bin/python scripts/explain_kinds.py path/to/file.py LINE
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from xlalint.engine import lint_source
from xlalint.rule import Rule


def main() -> None:
    path, line = Path(sys.argv[1]), int(sys.argv[2])
    text = path.read_text(encoding="utf-8")
    module = cst.parse_module(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    class Explain(Rule):
        """
        ## What it does
        -
        ## Why is this bad?
        -
        ## Example
        -
        ## Use instead
        -
        ## Fix safety
        -
        """

        code = "XLA999"
        name = "explain"
        message = "-"

        def visit_Name(self, node: cst.Name) -> None:
            self._show(node)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            self._show(node)

        def visit_Call(self, node: cst.Call) -> None:
            self._show(node)

        def _show(self, node: cst.BaseExpression) -> None:
            where = positions.get(node)
            if where is not None and where.start.line == line:
                code = module.code_for_node(node)
                print(f"{where.start.column + 1:>4} {self.ctx.kind(node).value:<8} {code[:70]}")

    # The walk must see the same nodes the positions were computed for.
    import xlalint.engine as engine

    original = engine.cst.parse_module
    engine.cst.parse_module = lambda _text: module  # type: ignore[assignment]
    try:
        lint_source(text, str(path), [Explain])
    finally:
        engine.cst.parse_module = original


if __name__ == "__main__":
    main()
