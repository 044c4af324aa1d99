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
"""

from __future__ import annotations

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
