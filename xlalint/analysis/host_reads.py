"""Runs of host reads of elements of one value: one cause, one finding.

Reading a tensor on the host executes the graph that computes it. Code that needs a value
on the host often reads it, or elements of it, several times in a row:
`begin = int(cumsum[b].item())` then `end = int(cumsum[e].item())`, or
`int(t[0].item()), int(t[1].item())`. To whoever ports the code that is one sync point
with one fix (keep the value on the device, or read it once), so the host-sync rules
report the first read of such a run: reads of the same value in one statement or in
statements that follow each other in a block.

Reads and copies handed to one call are one cause too: `self.update_k(real.item(),
fake.item())`, `tree.update(ids.cpu(), probs.cpu())`, a progress line formatted from
several copies (`pbar.set_description("%.2e %.2e" % (a.cpu().numpy(), b.cpu().numpy()))`),
or reads scaled on the host on their way in (`dict(loss=loss.item() / n, recon=recon.item()
/ n)`): the call needs its inputs on the host, and moving it (or handing it the device
values) is one fix. `consuming_call` names that call.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from xlalint.analysis.tensors import binding_key

# Methods that hand back the values they are called on (a copy, a view, another dtype).
_SAME_VALUE = frozenset({"cpu", "detach", "to", "clone", "float", "int", "long", "double"})


# Methods that hand back a view of the values they are called on, reshaped or recast:
# what they hand back is those values, element for element.
_VIEWS = _SAME_VALUE | {"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous"}
# Reads and copies of a value to the host: `t.item()`, `t.tolist()`, `t.cpu()`, `int(t)`.
_COPIES = frozenset({"item", "tolist", "cpu", "numpy"})
# Attributes that hand back the values of the tensor they are read from, element for
# element: `t.data` (the same storage, out of autograd), `t.T`, `t.mT` (a transposed view).
_SAME_VALUE_ATTRIBUTES = frozenset({"data", "T", "mT"})
_CASTS = frozenset({"int", "float", "bool"})


def copied_value(read: cst.CSTNode) -> cst.CSTNode | None:
    """The expression a host read or copy (`read`, the call) takes the elements of, as
    they are: under the read's own rows and views (`torch.where(m)[0]` of
    `torch.where(m)[0].tolist()`, `torch.nonzero(m)` of `torch.nonzero(m).view(-1).cpu()`),
    not a value computed from them (`x.nonzero().max()` of `.max().item()` is a reduction of
    its own). None for anything but such a read."""
    if type(read) is not cst.Call:
        return None
    func = read.func  # type: ignore[attr-defined]
    args = read.args  # type: ignore[attr-defined]
    if type(func) is cst.Attribute and func.attr.value in _COPIES:
        value = func.value
    elif type(func) is cst.Name and func.value in _CASTS and len(args) == 1:
        value = args[0].value
    else:
        return None
    while True:
        if type(value) is cst.Subscript:
            value = value.value
        elif (
            type(value) is cst.Call
            and type(value.func) is cst.Attribute
            and value.func.attr.value in _VIEWS
        ):
            value = value.func.value
        else:
            return value


def read_root(expr: cst.BaseExpression) -> str | None:
    """The value a read takes: `cumsum` of `cumsum[i - 1]` and `t[0].cpu()`, `keep` of
    `-keep`, `src_len.sum()` of `src_len.sum().item()`. Reads of one value in a run wait
    for the one graph that computes it, and one fix reads it once: `begin =
    int(cumsum[b])` then `end = int(cumsum[e])`, `n = int(count.item())` then `if
    n != count.item():`, `x[:, -keep:]` then `y[:, -keep:]`. Different reductions of a
    value (`t.min()`, `t.max()`) are graphs of their own, and so are reads of values
    computed from several (`a + b`): None. A view of the same elements by an attribute
    (`pred_dur[i].data`, `w.T`) reads the value it is taken of: `x[i, c:c +
    int(pred_dur[i].data)] = 1` then `c += int(pred_dur[i].data)` is one run."""
    reductions = ""
    while True:
        if (
            isinstance(expr, cst.Attribute)
            and expr.attr.value in _SAME_VALUE_ATTRIBUTES
            and not (isinstance(expr.value, cst.Name) and expr.value.value == "self")
        ):
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            key = _field(expr)
            if key is not None:
                reductions = f"[{key}]{reductions}"
            expr = expr.value
        elif isinstance(expr, cst.UnaryOperation):
            expr = expr.expression
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method not in _SAME_VALUE:
                if expr.args:
                    return None
                reductions = f".{method}(){reductions}"
            expr = expr.func.value
        else:
            key = binding_key(expr)
            return None if key is None else key + reductions


def _field(subscript: cst.Subscript) -> str | None:
    """The key of `batch["raw"]`: a field, a value of its own (`batch["raw"]` and
    `batch["total"]` are two tensors), where `t[i]` and `t[j]` are elements of one."""
    if len(subscript.slice) != 1:
        return None
    index = subscript.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        return index.value.value
    return None


def consuming_call(read: cst.CSTNode, ancestors: Iterable[cst.CSTNode]) -> cst.Call | None:
    """The call that `read` (an `.item()`, a copy to the host; `ancestors` innermost
    first) is handed to: as an argument of its own (`f(x.item())`, `f(x.cpu())`, also
    through methods that hand back the copy as it is: `f(x.detach().cpu().numpy())`), as an
    operand of host arithmetic that makes the argument (`f(loss=x.item() / n)`: the read
    scaled on its way in), or as a part of a tuple, list, `%` operand or f-string
    formatted into one argument (`f("%f" % (x.cpu().numpy(),))`), there also through
    methods applied to the copy. None otherwise: a copy processed further on the host
    before it is handed on as an argument of its own (`f(y.cpu().numpy().astype(
    "float64"))`) is an input of its own."""
    child = read
    formatted = False
    # Only methods that hand back the copy as it is applied to it so far (`x.cpu().numpy()`
    # is the copy itself, as `f(x.cpu(), ...)` would hand it).
    same = True
    method = ""
    outward = iter(ancestors)
    for ancestor in outward:
        kind = type(ancestor)
        if kind is cst.Arg:
            if ancestor.value is not child or not (child is read or formatted or same):  # type: ignore[attr-defined]
                return None
            call = next(outward, None)
            return call if type(call) is cst.Call else None
        if kind is cst.Attribute:
            if formatted or ancestor.value is not child:  # type: ignore[attr-defined]
                return None
            method = ancestor.attr.value  # type: ignore[attr-defined]
        elif kind is cst.Call:
            if formatted or ancestor.func is not child:  # type: ignore[attr-defined]
                return None
            same = same and method in _KEEPS_COPY and not ancestor.args  # type: ignore[attr-defined]
        elif kind is cst.BinaryOperation:
            operator = type(ancestor.operator)  # type: ignore[attr-defined]
            if operator is not cst.Modulo and operator not in _ARITHMETIC:
                return None
            formatted = True
        elif kind in _FORMATTED:
            formatted = True
        else:
            return None
        child = ancestor
    return None


# Methods of a host copy that hand back the same values: `x.cpu().numpy()`, `.detach()`.
_KEEPS_COPY = frozenset({"numpy", "detach", "cpu", "clone", "contiguous"})
_ARITHMETIC = frozenset(
    {cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power}
)


def arithmetic_whole(read: cst.CSTNode, ancestors: Iterable[cst.CSTNode]) -> cst.CSTNode | None:
    """The arithmetic expression or comparison that `read` (`ancestors` innermost first)
    is an operand of, outermost: `float(numerator) / float(denominator)`, or
    `score[label].item() >= score.max().item()`, for either read. Its reads make one host
    number (or truth value) together: one cause, whose fix computes it on the device and
    reads it once (`(numerator / denominator).item()`, `(score[label] >=
    score.max()).item()`). The operands of `and`/`or` make one truth value as well
    (`torch.isinf(g).any().item() or torch.isnan(g).any().item()`, whose fix is `(a |
    b).item()`). None where the read is no direct operand."""
    whole: cst.CSTNode | None = None
    child = read
    for ancestor in ancestors:
        kind = type(ancestor)
        if kind is cst.BinaryOperation:
            if type(ancestor.operator) not in _ARITHMETIC:  # type: ignore[attr-defined]
                break
            if ancestor.left is not child and ancestor.right is not child:  # type: ignore[attr-defined]
                break
        elif kind is cst.BooleanOperation:
            if ancestor.left is not child and ancestor.right is not child:  # type: ignore[attr-defined]
                break
        elif kind is cst.ComparisonTarget:
            if ancestor.comparator is not child:  # type: ignore[attr-defined]
                break
            child = ancestor  # its comparison is next
            continue
        elif kind is cst.Comparison:
            if ancestor.left is not child and child not in ancestor.comparisons:  # type: ignore[attr-defined]
                break
        else:
            break
        whole = child = ancestor
    return whole


def returned_whole(read: cst.CSTNode, ancestors: Iterable[cst.CSTNode]) -> cst.CSTNode | None:
    """The `return` statement whose value holds `read` as an entry of a literal: an
    element of a tuple, list or set, or a value of a dict (`return loss, pred_acc.item(),
    stop_acc.item()`, `return {"loss": loss.item(), "q": q.mean().item(), "priority":
    td.abs().tolist()}`), nested or not: the function hands its caller host values
    together, one cause, whose fix returns the device values (or reads them stacked,
    once). None for any other read (one processed further on the host first, a key)."""
    child = read
    for ancestor in ancestors:
        kind = type(ancestor)
        if kind is cst.Return:
            return ancestor if ancestor.value is child else None  # type: ignore[attr-defined]
        if kind in (cst.Element, cst.DictElement, cst.StarredElement):
            if ancestor.value is not child:  # type: ignore[attr-defined]
                return None  # a dict's key
        elif kind not in RETURNED_LITERALS:
            return None
        child = ancestor
    return None


# The literals whose entries a `return` hands back together.
RETURNED_LITERALS = frozenset({cst.Tuple, cst.List, cst.Set, cst.Dict})


# What carries a value into one formatted argument: a tuple's or list's element, an
# f-string's expression.
_FORMATTED = frozenset(
    {cst.Element, cst.Tuple, cst.List, cst.FormattedStringExpression, cst.FormattedString}
)


class ReadRuns:
    """Tells, read by read in walk order, which read of the same value a read repeats:
    the one just before it, in the same statement (an `if` and its `elif` tests) or the
    statement before it in the same block, or the read in the test of the `if` whose
    branch the read's statement opens (`if right_rf.item():`, then `x = x[...,
    :-right_rf.item()]`: that statement runs right after the test). The host-sync
    rules report the repeat with `repeat_of` that read, so that it
    shows only where a `# noqa` suppresses that read: a suppressed read hands its run on
    to the next, as a `# noqa` on one line leaves the others reported."""

    def __init__(self) -> None:
        # root -> (id(block), statement index, the read)
        self._last: dict[str, tuple[int, int, cst.CSTNode]] = {}
        # root -> the first read of it in each statement, by (id(block), statement index):
        # where an `if` test read it, for the first statement of each branch
        self._first: dict[str, dict[tuple[int, int], cst.CSTNode]] = {}

    def previous(
        self, root: str | None, ancestors: Iterable[cst.CSTNode], read: cst.CSTNode
    ) -> cst.CSTNode | None:
        """The read `read` repeats, or None. `ancestors`: of the read, innermost first."""
        if root is None:
            return None
        ancestors = tuple(ancestors)
        where = _statement(ancestors)
        if where is None:
            return None
        block, index = where
        last = self._last.get(root)
        self._last[root] = (id(block), index, read)
        firsts = self._first.setdefault(root, {})
        earlier = firsts.setdefault((id(block), index), read)
        if last is not None and last[0] == id(block) and index - last[1] in (0, 1):
            return last[2]
        if earlier is not read:
            # `if total.item() > limit: ...` then `elif total.item() < -limit:`: the tests
            # of one statement, a branch's reads between them.
            return earlier
        if index == 0 and (test := _tested_by(ancestors)) is not None and test in firsts:
            # `if right_rf.item():`, then `x = x[..., : -right_rf.item()]` first in a
            # branch it chooses (its `else` too): that statement runs right after the test.
            return firsts[test]
        return None


def _tested_by(ancestors: Iterable[cst.CSTNode]) -> tuple[int, int] | None:
    """Where the `if` statement stands (id of its block, its position) whose branch holds
    the read's statement: the test ran just before that branch's first statement."""
    child: cst.CSTNode | None = None
    branch = False
    for ancestor in ancestors:
        if isinstance(ancestor, cst.Lambda):
            return None
        if not branch:
            if isinstance(ancestor, cst.IndentedBlock):
                branch = True
        elif isinstance(ancestor, cst.If | cst.Else):
            pass  # the `if` (an `elif` chain's, through its `else`) holding the branch
        elif isinstance(ancestor, cst.IndentedBlock | cst.Module) and isinstance(child, cst.If):
            for index, statement in enumerate(ancestor.body):
                if statement is child:
                    return id(ancestor), index
            return None
        else:
            return None
        child = ancestor
    return None


def enclosing_statement(ancestors: Iterable[cst.CSTNode]) -> tuple[cst.CSTNode, int] | None:
    """The block holding a node (`ancestors`: its ancestors, innermost first) and the
    position in it of the statement holding the node; None inside a lambda."""
    return _statement(ancestors)


def _statement(ancestors: Iterable[cst.CSTNode]) -> tuple[cst.CSTNode, int] | None:
    """The block holding the read and the position in it of the statement holding it."""
    child: cst.CSTNode | None = None
    for ancestor in ancestors:
        if isinstance(ancestor, cst.Lambda):
            return None  # a lambda runs where it is called, not with its neighbours
        if isinstance(ancestor, cst.IndentedBlock | cst.Module) and child is not None:
            for index, statement in enumerate(ancestor.body):
                if statement is child:
                    return ancestor, index
            return None
        child = ancestor
    return None


def value_read(expr: cst.BaseExpression) -> str | None:
    """The tensor an argument hands over, under its rows, views and methods: `out` of
    `out[name]` and `out[name].squeeze()`, `v` of `-v` (`binding_key`), a field of its
    own (`out["grad"]` and `out["aux"]` are two values); None for anything else (a call
    of a function, arithmetic of several values)."""
    fields = ""
    while True:
        if type(expr) is cst.Subscript:
            key = _field(expr)
            if key is not None:
                fields = f"[{key}]{fields}"
            expr = expr.value
        elif type(expr) is cst.UnaryOperation:
            expr = expr.expression
        elif (
            type(expr) is cst.Attribute
            and expr.attr.value in _SAME_VALUE_ATTRIBUTES
            and not (type(expr.value) is cst.Name and expr.value.value == "self")
        ):
            expr = expr.value
        elif (
            type(expr) is cst.Call
            and type(expr.func) is cst.Attribute
            and expr.func.attr.value in _VIEWS
        ):
            expr = expr.func.value
        else:
            key = binding_key(expr)
            return None if key is None else key + fields


class BranchReads:
    """Reads of one value in the two branches of one `if` statement: one branch runs per
    pass, so they are one read, one cause (`if prop == "stress": r[prop] =
    to_numpy(out[key].squeeze())` / `else: r[prop] = to_numpy(out[key])`), and one edit
    (read the value once, before the `if`, or keep it on the device) fixes both. The
    conditional expression's branches are XLA101's own (`_other_branch_reads`). Fed read
    by read in walk order; a read under an `elif` is in the `else` of every `if` above."""

    def __init__(self) -> None:
        # (id(if), "body" or "orelse") -> the keys read there, with what read them
        self._seen: dict[tuple[int, str], set[tuple[str, str]]] = {}

    def repeats(self, key: str | None, what: str, ancestors: Iterable[cst.CSTNode]) -> bool:
        """Whether a read of `key` by `what` (the helper or the read's spelling) repeats one
        in the other branch of an `if` around it; `ancestors` innermost first, up to the
        function."""
        if key is None:
            return False
        entry = (key, what)
        repeat = False
        child: cst.CSTNode | None = None
        for ancestor in ancestors:
            if isinstance(ancestor, cst.FunctionDef | cst.Lambda | cst.ClassDef):
                break
            if type(ancestor) is cst.If and child is not None and child is not ancestor.test:
                branch = "body" if child is ancestor.body else "orelse"
                other = "orelse" if branch == "body" else "body"
                if entry in self._seen.get((id(ancestor), other), ()):
                    repeat = True
                self._seen.setdefault((id(ancestor), branch), set()).add(entry)
            child = ancestor
        return repeat
