"""Where control leaves a statement and where its text ends: what a fix that inserts a
statement after another needs (the barrier fixes, XLA305's device ladder).
"""

from __future__ import annotations

import libcst as cst

_EXITS = (cst.Return, cst.Break, cst.Continue, cst.Raise)


def always_exits(statement: cst.CSTNode) -> bool:
    """Whether control never falls through `statement` (it returns, breaks, continues or
    raises on every path), so that a statement after it would never run."""
    if isinstance(statement, cst.SimpleStatementLine | cst.SimpleStatementSuite):
        return bool(statement.body) and isinstance(statement.body[-1], _EXITS)
    if isinstance(statement, cst.IndentedBlock):
        return bool(statement.body) and always_exits(statement.body[-1])
    if isinstance(statement, cst.If):
        orelse = statement.orelse
        if orelse is None:
            return False
        other = orelse if isinstance(orelse, cst.If) else orelse.body
        return always_exits(statement.body) and always_exits(other)
    if isinstance(statement, cst.With):
        return always_exits(statement.body)
    return False


def last_line_end(statement: cst.CSTNode) -> cst.TrailingWhitespace | None:
    """The end of a statement's last line (trailing whitespace, comment and newline):
    text inserted after it starts on the line after the statement."""
    if isinstance(statement, cst.SimpleStatementLine | cst.SimpleStatementSuite):
        return statement.trailing_whitespace
    if isinstance(statement, cst.IndentedBlock):
        return last_line_end(statement.body[-1]) if statement.body else None
    suite: cst.BaseSuite | None = None
    if isinstance(statement, cst.If):
        current: cst.If = statement
        while isinstance(current.orelse, cst.If):
            current = current.orelse
        suite = current.orelse.body if current.orelse is not None else current.body
    elif isinstance(statement, cst.For | cst.While):
        suite = statement.orelse.body if statement.orelse is not None else statement.body
    elif isinstance(statement, cst.Try | cst.TryStar):
        last = statement.finalbody or statement.orelse
        if last is not None:
            suite = last.body
        elif statement.handlers:
            suite = statement.handlers[-1].body
    elif isinstance(statement, cst.With | cst.FunctionDef | cst.ClassDef):
        suite = statement.body
    elif isinstance(statement, cst.Match) and statement.cases:
        suite = statement.cases[-1].body
    return last_line_end(suite) if suite is not None else None
