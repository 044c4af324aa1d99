"""Which calls are graph barriers: `torch_xla.sync()`, `xm.mark_step()`,
`xm.optimizer_step(..., barrier=True)`, a syncing `with torch_xla.step():`. Shared by the
loop facts (does a pass reach one?) and the barrier rules (XLA404-406).
"""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import keyword_argument
from xlalint.analysis.imports import ImportTable

SYNC = frozenset({"torch_xla.sync", "torch_xla.torch_xla.sync"})
MARK_STEP = "torch_xla.core.xla_model.mark_step"
OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"
# Context managers that sync when they exit: `with torch_xla.step():`.
SYNCING_CONTEXTS = frozenset(
    {
        "torch_xla.step",
        "torch_xla.torch_xla.step",
        "torch_xla.compile",
        "torch_xla.torch_xla.compile",
    }
)
COMPILE_DECORATORS = frozenset({"torch_xla.compile", "torch_xla.torch_xla.compile"})


class Barrier:
    """How a call stands to the step barrier."""

    NONE = 0
    SYNC = 1  # torch_xla.sync(), xm.mark_step(), xm.optimizer_step(..., barrier=True)
    OPTIMIZER_STEP = 2  # xm.optimizer_step(...) without barrier=True


def barrier_kind(call: cst.Call, imports: ImportTable) -> int:
    """Whether `call` is a barrier, an `xm.optimizer_step` without one, or neither.

    Names resolve by the file's imports; an unresolved `xm.mark_step()` also counts (a
    helper module may hand out `xm`): taking it for a barrier only ever silences a finding.
    """
    func = call.func
    qualified = imports.resolve(func)
    spelled = get_full_name_for_node(func) or ""
    if qualified in SYNC or qualified == MARK_STEP or spelled == "xm.mark_step":
        return Barrier.SYNC
    if qualified == OPTIMIZER_STEP or (qualified is None and spelled == "xm.optimizer_step"):
        return Barrier.OPTIMIZER_STEP if barrier_argument(call) is None else Barrier.SYNC
    return Barrier.NONE


def barrier_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The `barrier` argument of `xm.optimizer_step(...)` unless it is absent, `False` or
    `None` (then the call does not sync)."""
    arg = keyword_argument(call, "barrier")
    positional = [a for a in call.args if a.keyword is None and not a.star]
    value = arg.value if arg else positional[1].value if len(positional) > 1 else None
    if value is None or (isinstance(value, cst.Name) and value.value in ("False", "None")):
        return None
    return value
