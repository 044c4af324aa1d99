"""Functions that write a checkpoint through another function: by what they read, not
by their names.

`save_to_checkpoint_folder` reads the step count (`int(self.steps.sum().item())`) to name
the file it hands to `self.save(...)`, which calls `torch.save`: the read is part of the
save, which runs when a checkpoint is due. `report_progress(loss, path)` prints
`loss.item()` and then calls `self.save(path)`: its read serves the progress line, on
every step that calls it. What tells them apart is where the reads go: a caller is a
checkpoint writer when it reads on the host, and every read goes into the call of the
saving function (directly in its arguments, or through names bound from the reads and
used there). A name (`checkpoint_forward`) says nothing: activation checkpointing
(`torch.utils.checkpoint.checkpoint(...)`) runs on every step.
"""

from __future__ import annotations

import libcst as cst

from xlalint.analysis.tensors import HOST_CASTS, TO_HOST_METHODS
from xlalint.walk import NOT_OWN, descendants, names_under, target_names

# Nested definitions run when they are called, not as part of this function's body.


def _is_read(node: cst.CSTNode) -> bool:
    """`t.item()`, `t.cpu()`, `int(t)`: a copy of a device value to the host."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in TO_HOST_METHODS
    return isinstance(func, cst.Name) and func.value in HOST_CASTS and bool(node.args)


def _calls_of(body: cst.CSTNode, callee: str) -> list[cst.Call]:
    """`callee(...)` and `self.callee(...)` in `body`."""
    found = []
    for n in descendants(body, NOT_OWN):
        if not isinstance(n, cst.Call):
            continue
        func = n.func
        if (isinstance(func, cst.Name) and func.value == callee) or (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and func.attr.value == callee
        ):
            found.append(n)
    return found


def feeds_the_call(function: cst.FunctionDef, callee: str) -> bool:
    """Whether `function` reads on the host and every read goes into its calls of `callee`:
    in their arguments, or bound by a plain assignment to names used there, directly or
    through other names (`total_steps = int(self.steps.sum().item())`, `filepath =
    os.path.join(folder, f"...{total_steps}.pt")`, then `self.save(filepath)`)."""
    calls = _calls_of(function.body, callee)
    if not calls:
        return False
    fed: set[str] = set()
    in_calls: set[int] = set()
    for call in calls:
        for arg in call.args:
            fed |= names_under(arg.value)
            in_calls.update(id(n) for n in descendants(arg.value, NOT_OWN))
    _feeding(function, fed)
    read = False
    for node in descendants(function.body, NOT_OWN):
        if not _is_read(node):
            continue
        read = True
        if id(node) not in in_calls and not _bound_to(node, function, fed):
            return False  # `print(loss.item())` beside the save: a read of its own
    return read


def _bound_to(read: cst.Call, function: cst.FunctionDef, fed: set[str]) -> bool:
    """The read is in the value of a plain assignment (`total = int(t.item())`) whose
    names all go into the saving call."""
    for node in descendants(function.body, NOT_OWN):
        if isinstance(node, cst.Assign) and any(
            n is read for n in descendants(node.value, NOT_OWN)
        ):
            names = set().union(*(target_names(t.target) for t in node.targets))
            return bool(names) and names <= fed
    return False


def _feeding(function: cst.FunctionDef, fed: set[str]) -> None:
    """Add to `fed` the names the values of its names are computed from
    (`filepath = os.path.join(folder, f"checkpoint.{total_steps}.pt")` feeds `total_steps`
    into `self.save(filepath)`)."""
    assigns = [n for n in descendants(function.body, NOT_OWN) if isinstance(n, cst.Assign)]
    changed = True
    while changed:
        changed = False
        for node in assigns:
            names = set().union(*(target_names(t.target) for t in node.targets))
            if names & fed and not (used := names_under(node.value)) <= fed:
                fed |= used
                changed = True
