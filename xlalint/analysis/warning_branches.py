"""Branches that only warn: they run when a checked value is out of range, not every step.

`if kl.max().item() > 100: log.warning(f"KL-divergence is very high: {kl.max().item()}")`:
the test reads the device on every pass (the host-sync rules report it there), but the
warning's own reads run only when the value has gone wrong, as a `raise`'s message is built
only when the error is raised. A host read inside such a warning is no per-step cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import ImportTable
from xlalint.walk import descendants

_WARN_METHODS = frozenset({"warning", "warn"})
# Receivers of logging calls, by spelling: `log`, `logger`, `self.logger`, `logging`.
_LOGGER = re.compile(r"(^|[._])(log|logger|logging)$", re.IGNORECASE)
# What makes a test a check of a value, rather than a setting: a comparison, or a call
# (`torch.isnan(x).any()`, `not torch.isfinite(g)`).
_CHECKS = (cst.Comparison, cst.Call)


def is_warning(call: cst.Call, imports: ImportTable) -> bool:
    """`warnings.warn(...)`, `log.warning(...)`, `self.logger.warn(...)`."""
    if imports.resolve(call.func) == "warnings.warn":
        return True
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in _WARN_METHODS:
        return False
    receiver = get_full_name_for_node(func.value)
    return receiver is not None and _LOGGER.search(receiver) is not None


def _only_warns(block: cst.BaseSuite, imports: ImportTable, repairs: bool = False) -> bool:
    """Every statement of the block is a warning call (at least one), or sets a flag to a
    constant beside one (`force_summaries = True`: no work of its own); with `repairs`,
    also assignments beside the warning (`grad[grad.isnan()] = 0.0`: the checked value
    repaired where the warning says it went wrong)."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else (block,)
    warns = False
    for line in lines:
        if not isinstance(line, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            return False
        for small in line.body:
            if type(small) is cst.Expr and type(small.value) is cst.Call:
                if not is_warning(small.value, imports):
                    return False
                warns = True
            elif repairs and type(small) in (cst.Assign, cst.AugAssign):
                continue
            elif not _sets_a_flag(small):
                return False
    return warns


def _sets_a_flag(statement: cst.BaseSmallStatement) -> bool:
    """`name = True`, `self.flag = None`, `count = 0`: a constant stored, nothing run."""
    return (
        type(statement) is cst.Assign
        and type(statement.value) in (cst.Name, cst.Integer, cst.Float, cst.SimpleString)  # type: ignore[attr-defined]
        and (
            type(statement.value) is not cst.Name  # type: ignore[attr-defined]
            or statement.value.value in ("True", "False", "None")  # type: ignore[attr-defined]
        )
        and all(
            type(t.target) in (cst.Name, cst.Attribute)
            for t in statement.targets  # type: ignore[attr-defined]
        )
    )


def in_warning_branch(
    path: Iterable[cst.CSTNode], imports: ImportTable, repairs: bool = False
) -> bool:
    """Whether the node on `path` (it and its ancestors, innermost first) sits in the body
    of an `if` (without `else`) that only warns and whose test checks a value (a
    comparison or a call, not a bare flag such as `if verbose:`); with `repairs`, one that
    warns and repairs the value with assignments (`if torch.any(grad.isnan()):
    logger.warning(...); grad[grad.isnan()] = 0.0`): it runs when the value has gone
    wrong."""
    child: cst.CSTNode | None = None
    for ancestor in path:
        kind = type(ancestor)
        if kind is cst.If:
            return (
                child is ancestor.body  # type: ignore[attr-defined]
                and ancestor.orelse is None  # type: ignore[attr-defined]
                and any(isinstance(n, _CHECKS) for n in descendants(ancestor.test))  # type: ignore[attr-defined]
                and _only_warns(ancestor.body, imports, repairs)  # type: ignore[attr-defined]
            )
        if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
            return False
        child = ancestor
    return False
