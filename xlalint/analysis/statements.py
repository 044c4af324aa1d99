"""Where control leaves a statement and where its text ends: what a fix that inserts a
statement after another needs (the barrier fixes, XLA305's device ladder).
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from xlalint.walk import node_types

_EXITS = node_types(cst.Return, cst.Break, cst.Continue, cst.Raise)


def always_exits(statement: cst.CSTNode) -> bool:
    """Whether control never falls through `statement` (it returns, breaks, continues or
    raises on every path), so that a statement after it would never run."""
    if type(statement) in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
        return bool(statement.body) and type(statement.body[-1]) in _EXITS
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


_BLOCKS = (cst.IndentedBlock, cst.SimpleStatementSuite)
_SCOPES = node_types(cst.FunctionDef, cst.ClassDef, cst.Lambda)


def block_exit(block: cst.BaseSuite) -> type[cst.Break | cst.Return] | None:
    """`break` or `return` when it is the last statement of `block`: whatever of the
    block runs, runs once, and control then leaves the loop (or the function)."""
    last: cst.CSTNode | None = block.body[-1] if block.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    if isinstance(last, cst.Break):
        return cst.Break
    if isinstance(last, cst.Return):
        return cst.Return
    return None


def passes_left(path: Iterable[cst.CSTNode], depth: int) -> tuple[int, int]:
    """Code inside a block that ends in `break` or `return` (`if step >= max_steps: ...;
    break`) runs at most once per run of the loop it breaks (of the function it returns
    from), not on every pass. `path` is the node and its ancestors, innermost first, and
    `depth` how many loop passes of its function it is in. The answer is how many of those
    passes (innermost first) lie inside the block, and how many around the block it
    leaves (one for `break`, all for `return`); (0, 0) when no such block is on the path.
    A loop's own body that ends so (`while True: ...; return x`) is left alone: a
    `continue` before its end runs it again (a retry loop)."""
    inside = 0
    child: cst.CSTNode | None = None
    block: cst.BaseSuite | None = None
    for node in path:
        if inside >= depth or type(node) in _SCOPES:
            break
        kind = type(node)
        if block is not None and not (kind is cst.For or kind is cst.While):
            exit_kind = block_exit(block)
            if exit_kind is not None:
                return inside, 1 if exit_kind is cst.Break else depth - inside
        block = None
        if (kind is cst.For or kind is cst.While) and (
            child is node.body or (kind is cst.While and child is node.test)  # type: ignore[attr-defined]
        ):
            inside += 1
        elif kind in _BLOCKS and child is not None:
            block = node  # type: ignore[assignment]
        child = node
    return 0, 0


def retries_until_success(loop: cst.CSTNode) -> bool:
    """A loop that runs its body again only when a pass fails: a `while` whose pass, once
    it completes, ends the loop, by a `break` or by setting the flag its test reads (`while
    flag is False: try: ...; flag = True except RuntimeError: batch_size //= 2`, `while not
    done:`, `while True: try: ...; break`), at the end of its body or of a `try` there. A
    batch-size or out-of-memory probe: one successful pass per run of the loop, not a pass
    per step."""
    if type(loop) is not cst.While:
        return False
    flag = _exit_flag(loop.test)  # type: ignore[attr-defined]
    body: cst.BaseSuite = loop.body  # type: ignore[attr-defined]
    blocks = [body]
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.Try):
        blocks.append(last.orelse.body if last.orelse is not None else last.body)
    return any(_ends_the_loop(block, flag) for block in blocks)


def _exit_flag(test: cst.BaseExpression) -> str | None:
    """The name whose truth ends a `while`: `not done`, `flag is False`, `flag == False`."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        operand = test.expression
        return operand.value if type(operand) is cst.Name else None
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if (
            type(test.left) is cst.Name
            and type(target.operator) in (cst.Is, cst.Equal)
            and type(target.comparator) is cst.Name
            and target.comparator.value == "False"
        ):
            return test.left.value
    return None


def _ends_the_loop(block: cst.BaseSuite, flag: str | None) -> bool:
    """`block` ends in `break`, or in `flag = True` for the flag the loop's test reads."""
    if block_exit(block) is cst.Break:
        return True
    last = block.body[-1] if block.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return (
        flag is not None
        and isinstance(last, cst.Assign)
        and type(last.value) is cst.Name
        and last.value.value == "True"
        and any(type(t.target) is cst.Name and t.target.value == flag for t in last.targets)
    )
