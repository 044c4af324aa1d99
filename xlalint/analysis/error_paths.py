"""Handlers that recover from a failed computation: they run when it fails, not every step.

`try: B = torch.linalg.solve_triangular(C, Y) except RuntimeError: B = torch.linalg.
solve_triangular(C.to("cpu"), Y.to("cpu")).to(C.device)`: the handler is a fallback for a
computation that raised (a library bug, a matrix that is not positive definite, memory run
out), and its host copies run only then, as a `raise`'s message is built only when the
error is raised. A handler counts when every exception it names is such a failure
(`RuntimeError`, `torch.linalg.LinAlgError`, `torch.cuda.OutOfMemoryError`, an arithmetic
error). One that catches anything (`except:`, `except Exception:`), or an exception code
raises to steer (`StopIteration` at the end of a loader, `KeyError`, `TypeError`,
`AttributeError` for a value of another type, `NotImplementedError` for an operation a
backend lacks), may run on every step and stays per step.

Nor is a `TypeError` handler a steering one where its `try` only calls torch on tensors
(`try: clamped = torch.clamp(x, low, high)` with tensor bounds, `except TypeError:` then
a loop of masked writes "for PyTorch < 1.9"): torch's functions handed tensors raise
`TypeError` only where the installed release lacks that signature, so the handler is a
fallback for an old release that never runs on a supported one (`compatibility_probe`).
A `try` that converts a value of unknown kind (`torch.as_tensor(v)`, `float(v)`) or
calls anything but torch steers by type and stays per step.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.helpers import get_full_name_for_node

# The last part of the names of exceptions that report a failed computation.
_FAILURES = frozenset(
    {"RuntimeError", "LinAlgError", "OutOfMemoryError", "MemoryError", "ArithmeticError",
     "FloatingPointError", "ZeroDivisionError", "OverflowError"}
)  # fmt: skip


def _names_a_failure(node: cst.BaseExpression) -> bool:
    name = get_full_name_for_node(node)
    return name is not None and name.rsplit(".", 1)[-1] in _FAILURES


def handles_a_failure(handler: cst.ExceptHandler) -> bool:
    """`except RuntimeError:`, `except (torch.linalg.LinAlgError, RuntimeError) as e:`:
    every exception the handler catches reports a failed computation."""
    caught = handler.type
    if caught is None:
        return False
    if isinstance(caught, cst.Tuple):
        return bool(caught.elements) and all(
            _names_a_failure(element.value) for element in caught.elements
        )
    return _names_a_failure(caught)


def _catches_only_type_errors(handler: cst.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False
    names = (
        [element.value for element in caught.elements]
        if isinstance(caught, cst.Tuple)
        else [caught]
    )
    return bool(names) and all(get_full_name_for_node(name) == "TypeError" for name in names)


def compatibility_probe(
    handler: cst.ExceptHandler,
    attempt: cst.Try,
    qualified: Callable[[cst.CSTNode], str | None],
    is_tensor: Callable[[cst.BaseExpression], bool],
) -> bool:
    """`try: y = torch.clamp(x, low, high) except TypeError:`: the handler catches only
    `TypeError`, and every statement of the `try` is a call of a `torch` function (bound
    to names or not) handed only tensors, positionally or by keyword. Such a call raises
    `TypeError` only where the installed torch lacks the signature: the handler is the
    fallback for an old release, never run on a supported one."""
    if not _catches_only_type_errors(handler):
        return False
    if not attempt.body.body:
        return False
    for line in attempt.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            return False
        for statement in line.body:
            if isinstance(statement, cst.Assign | cst.AnnAssign | cst.Expr):
                value = statement.value
            else:
                return False
            if not isinstance(value, cst.Call):
                return False
            name = qualified(value.func)
            if name is None or not name.startswith("torch."):
                return False
            if not value.args or not all(
                arg.star == "" and is_tensor(arg.value) for arg in value.args
            ):
                return False
    return True
