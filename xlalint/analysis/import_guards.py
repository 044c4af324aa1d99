"""Module-level imports made only where a package is installed (under `if` or `try:`).

A fix that adds torch_xla code must stay as optional as the file's own torch_xla import:
where to put a guarded import, which flag (`XLA_AVAILABLE = True`) the guard sets, and
whether torch_xla is optional at all are read here, from one scan of the module's top
level (`FileContext.import_guards`), instead of a scan per question.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from xlalint.analysis.imports import ImportTable
from xlalint.walk import name_assignments


@dataclass(frozen=True)
class GuardedImport:
    """One import line in the block of a module-level `if` or `try:`."""

    line: cst.SimpleStatementLine
    indent: str  # the block's indentation
    in_try: bool
    flag: str | None  # the name the same block sets to True (`XLA_AVAILABLE = True`)
    imports: ImportTable  # what the line binds


class ImportGuards:
    """The guarded import lines of a module, in source order."""

    def __init__(self, module: cst.Module) -> None:
        self._lines: list[GuardedImport] = []
        for statement in module.body:
            if not isinstance(statement, cst.If | cst.Try):
                continue
            block = statement.body
            lines = [s for s in block.body if isinstance(s, cst.SimpleStatementLine)]
            flag = _true_flag(lines)
            indent = getattr(block, "indent", None)
            indent = module.default_indent if indent is None else indent
            for line in lines:
                table = ImportTable()
                for small in line.body:
                    if isinstance(small, cst.Import | cst.ImportFrom):
                        table.add(small)
                if table.bindings:
                    in_try = isinstance(statement, cst.Try)
                    self._lines.append(GuardedImport(line, indent, in_try, flag, table))

    def optional(self, qualified_prefix: str) -> bool:
        """Whether something at or under `qualified_prefix` (`torch_xla`) is imported only
        if it is there: a fix must not make it a requirement."""
        return any(g.imports.binds(qualified_prefix) for g in self._lines)

    def binding(self, name: str) -> GuardedImport | None:
        """The first guarded import line that binds the local `name` (`xm`, `torch_xla`)."""
        return next((g for g in self._lines if name in g.imports.bindings), None)

    def try_binding(self, name: str) -> GuardedImport | None:
        """`binding`, only under `try:`: where an import as optional as `name` goes."""
        return next((g for g in self._lines if g.in_try and name in g.imports.bindings), None)


def _true_flag(lines: list[cst.SimpleStatementLine]) -> str | None:
    return next(
        (
            name
            for name, value in name_assignments(lines)
            if isinstance(value, cst.Name) and value.value == "True"
        ),
        None,
    )
