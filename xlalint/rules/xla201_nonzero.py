from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.masks import Evidence, atom
from xlalint.context import Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext

_FUNCTIONS = {"torch.nonzero": "torch.nonzero", "torch.argwhere": "torch.argwhere"}
_METHODS = frozenset({"nonzero", "argwhere"})
_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual,
                cst.Equal, cst.NotEqual)  # fmt: skip


class Nonzero(Rule):
    """
    ## What it does
    Flags `.nonzero()`, `torch.nonzero`, `torch.argwhere`/`.argwhere()` and one-argument
    `torch.where(cond)` on device tensors, in code that runs every step. This includes the
    timestep lookup of diffusion schedulers, `(self.timesteps == t).nonzero().item()`, in
    `step()` and the helpers it calls. `np.nonzero`, three-argument `torch.where` and
    `nonzero_static` are not flagged, nor `.argwhere(f)`/`.nonzero(x)` with a positional
    argument, which the tensor methods do not take (fastcore's `L.argwhere(predicate)`),
    nor calls in a `raise` (the message of an error that ends the step, run once) or in a
    block that ends in one with no other way out (`if below.any(): first =
    below.nonzero()[0]` before `raise RuntimeError(f"... {first}")`: it names what went
    wrong; not a `try` body, whose error may be caught). Nor is `.nonzero()` of what a
    helper of the module builds with numpy on every `return` that hands back a value
    (`errors = np.array(...)`, then `return errors, flows`; a bare `return` on bad input
    hands back nothing): `merrors, _ = flow_error(...)`, then `(merrors > t).nonzero()`.
    Nor is the `nonzero` of what a host copy's rows compute (`query = ids.detach().cpu()`,
    then `(query[i] != self.pad_id).nonzero()`): PyTorch refuses to combine a host tensor
    with a device tensor (a 0-dim one aside), so an operation with a host tensor operand
    and no device one runs on the host, whatever its other operands are.
    The nonzero of a mask and then of the same mask or its complement in the next statement
    (`idx_a = mask.nonzero()`, `idx_b = (~mask).nonzero()`) is one cause, reported at the
    first. A copy or read of the indices themselves, under their rows and views
    (`torch.where(m)[0].tolist()`, `torch.nonzero(m).view(-1).cpu()`), is this finding's
    cause too: it is reported here, not again as a host transfer (XLA101, XLA102), while
    this rule is on; a read of a value computed from them (`m.nonzero().max().item()`) is
    reported beside it. A class's `__init__` is code that runs every step where per-step
    code builds the class (a transform built from a mask buffer in `forward`, here or in
    another module of the project): its `mask.nonzero()` is reported there.

    ## Why is this bad?
    The result has one row per nonzero element, a count only the data knows. XLA compiles
    graphs for static shapes, so `nonzero` cannot stay in the traced graph: PyTorch/XLA
    executes the pending graph, copies the input to the host, runs `nonzero` on the CPU
    and copies the indices back. The step's graph is cut in two and every new count is a
    new shape downstream, which compiles again.

    ## Example
    ```python
    def step(self, model_output, timestep, sample):
        index = (self.timesteps == timestep).nonzero().item()
        positives = (labels > 0).nonzero().shape[0]
        loss = per_token.sum() / positives
    ```

    ## Use instead
    Count with a sum and keep indices static:
    ```python
    def step(self, model_output, timestep, sample):
        index = self._step_index  # kept as a Python int, advanced once per step
        loss = per_token.sum() / (labels > 0).sum()
    ```
    `(self.timesteps == timestep).int().argmax()` finds the first match on the device.

    ## Fix safety
    Safe, and only where the result is just counted and the count meets a tensor:
    `m.nonzero().shape[0]`, `m.nonzero().size(0)`, `len(m.nonzero())` and the same for
    `torch.nonzero(m)`/`torch.argwhere(m)`, used as an operand of `/` or of a comparison
    whose other side is a tensor, become `m.sum()` (`(m != 0).sum()` when `m` is not known
    to be boolean). The count is then a 0-d integer tensor instead of a Python int; as an
    operand of true division or a comparison with a tensor the result has the same value,
    dtype and shape either way. Elsewhere (`n = ...`, `range(n)`, `max(n, 1)`, f-strings,
    `+`/`*` with 0-d integer tensors, whose dtype could change) a Python int is not
    interchangeable with a tensor, so no fix is offered. `.numel()` of the result is not
    a count (the result has one column per dimension), and `as_tuple=True` returns a
    tuple: neither is fixed.

    ## Runtime evidence
    5 steps on the XLA CPU device (case `count_valid_tokens`): `torch.nonzero(m).shape[0]` each
    step costs {count_valid_tokens.before.uncached_compiles} uncached and
    {count_valid_tokens.before.cached_compiles} cached compiles,
    {count_valid_tokens.before.executions} executions and
    {count_valid_tokens.before.cpu_fallbacks} `aten::nonzero` CPU fallbacks; `m.sum()` costs
    {count_valid_tokens.after.uncached_compiles} uncached and
    {count_valid_tokens.after.cached_compiles} cached compiles and
    {count_valid_tokens.after.executions} executions, and the results are
    {count_valid_tokens.outputs}.
    """

    code = "XLA201"
    uses = ("masks",)
    name = "nonzero"
    message = (
        "`{call}` has a data-dependent shape: it runs on the CPU (a device-to-host copy) "
        "and recompiles whenever the count changes"
    )
    hint = (
        "Count with `mask.sum()`, select with `torch.where(mask, x, 0)`, find a first match "
        "with `(t == v).int().argmax()`, or keep the index as a Python int"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    hot_only = True
    per_call = True
    needs_torch = True
    triggers = ("nonzero", "argwhere", "where")
    # `torch.where(m)[0].tolist()`: the copy of the indices is the same cause.
    supersedes_copies = ("XLA101", "XLA102")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # The masks whose nonzero each statement line reported (by the mask's code, `~`
        # or `logical_not` taken off): id(line) -> codes.
        self._read_by_line: dict[int, set[str]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.ctx.qualified(func)
        if qualified in _FUNCTIONS:
            source = _input(node)
            if source is not None and self._read_just_before(source):
                return
            if source is not None and self._on_device(source) and not self._on_error_path():
                count = _single_positional(node)
                fix = self._count_fix(node, source) if count else None
                self.report(node, self.message.format(call=f"{_FUNCTIONS[qualified]}()"), fix=fix)
        elif qualified == "torch.where":
            cond = _single_positional(node)
            if cond is not None and self._on_device(cond) and not self._on_error_path():
                self.report(node, self.message.format(call="torch.where(cond)"))
        elif (
            qualified is None
            and isinstance(func, cst.Attribute)
            and func.attr.value in _METHODS
            and not (isinstance(func.value, cst.Name) and func.value.value == "self")
            and _tensor_method_signature(node)
            and self._on_device(func.value)
            and not self._on_error_path()
            and not self._read_just_before(func.value)
        ):
            fix = None if node.args else self._count_fix(node, func.value)
            self.report(node, self.message.format(call=f".{func.attr.value}()"), fix=fix)

    def _read_just_before(self, source: cst.BaseExpression) -> bool:
        """`idx_a = mask.nonzero()`, then `idx_b = (~mask).nonzero()` in the next statement:
        the nonzero of the same mask, or of its complement, read again in a run is one
        cause (one host copy of the mask gives both), reported at the first. Notes this
        read for the statement after it; True where the statement before read it."""
        line, previous = self._statement_lines()
        if line is None:
            return False
        code = self.ctx.module.code_for_node(_uncomplemented(source))
        self._read_by_line.setdefault(id(line), set()).add(code)
        return previous is not None and code in self._read_by_line.get(id(previous), ())

    def _statement_lines(self) -> tuple[cst.CSTNode | None, cst.CSTNode | None]:
        """The statement line around the call, and the one just before it in its block."""
        ancestors = list(self.ctx.ancestors())
        for index, node in enumerate(ancestors):
            if isinstance(node, cst.SimpleStatementLine):
                block = ancestors[index + 1] if index + 1 < len(ancestors) else None
                body = getattr(block, "body", None)
                if isinstance(body, Sequence) and not isinstance(body, str):
                    position = next((i for i, n in enumerate(body) if n is node), None)
                    if position:
                        return node, body[position - 1]
                return node, None
        return None, None

    def _on_error_path(self) -> bool:
        """Inside a `raise` (its message): runs once, when the step fails."""
        return any(isinstance(a, cst.Raise) for a in self.ctx.ancestors())

    def _on_device(self, value: cst.BaseExpression) -> bool:
        """Whether `value` is (likely) a device tensor: numpy arrays and CPU tensors made
        here are not; an unknown value in a file that uses torch is."""
        kind = self.ctx.kind(value)
        if kind in (Kind.TENSOR, Kind.ITERABLE):
            return True
        if kind is not Kind.UNKNOWN:
            return False
        return self.ctx.masks.evidence(value) is Evidence.VALUE or self.ctx.imports.binds("torch")

    def _count_fix(self, node: cst.Call, source: cst.BaseExpression) -> NodeFix | None:
        """`m.nonzero().shape[0]` (and `.size(0)`, `len(...)`) -> `m.sum()`, where the
        count only meets a tensor in `/` or a comparison."""
        ancestors = list(islice(self.ctx.ancestors(), 4))
        if len(ancestors) < 3:
            return None
        parent, count, outer = ancestors[:3]
        if isinstance(outer, cst.ComparisonTarget) and len(ancestors) == 4:
            outer = ancestors[3]  # `y >= count`: the comparator sits in a ComparisonTarget
        if not self._counts(node, parent, count) or not self._meets_tensor(count, outer):
            return None
        code = self.ctx.module.code_for_node(source)
        if self.ctx.masks.evidence(source) is Evidence.VALUE:
            replacement = f"{atom(source, code)}.sum()"
        else:
            replacement = f"({code} != 0).sum()"
        return self.fix(f"Count with `{replacement}`", (count, replacement))

    def _counts(self, node: cst.Call, parent: cst.CSTNode, count: cst.CSTNode) -> bool:
        """Whether `count` reads the number of rows of `node`'s result: `.shape[0]`,
        `.size(0)` or `len(...)`."""
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value == "shape" and isinstance(count, cst.Subscript):
                return (
                    count.value is parent
                    and len(count.slice) == 1
                    and _is_zero(count.slice[0].slice)
                )
            if parent.attr.value == "size" and isinstance(count, cst.Call):
                return (
                    count.func is parent
                    and len(count.args) == 1
                    and _keyword(count.args[0]) in (None, "dim")
                    and _is_zero_value(count.args[0].value)
                )
            return False
        return (
            isinstance(parent, cst.Arg)
            and parent.keyword is None
            and not parent.star
            and isinstance(count, cst.Call)
            and isinstance(count.func, cst.Name)
            and count.func.value == "len"
            and self.ctx.kinds.lookup("len") is None
            and len(count.args) == 1
        )

    def _meets_tensor(self, count: cst.BaseExpression, outer: cst.CSTNode) -> bool:
        if isinstance(outer, cst.BinaryOperation) and isinstance(outer.operator, cst.Divide):
            other = outer.right if outer.left is count else outer.left
            return self.ctx.is_tensor(other)
        if isinstance(outer, cst.Comparison) and len(outer.comparisons) == 1:
            target = outer.comparisons[0]
            if not isinstance(target.operator, _COMPARISONS):
                return False
            other = target.comparator if outer.left is count else outer.left
            return self.ctx.is_tensor(other)
        return False


def _uncomplemented(mask: cst.BaseExpression) -> cst.BaseExpression:
    """`m` of `~m`, `m.logical_not()` or `torch.logical_not(m)`; else the mask itself."""
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, cst.BitInvert):
        return mask.expression.with_changes(lpar=(), rpar=())
    if (
        isinstance(mask, cst.Call)
        and isinstance(mask.func, cst.Attribute)
        and mask.func.attr.value == "logical_not"
    ):
        if not mask.args:
            return mask.func.value.with_changes(lpar=(), rpar=())
        if len(mask.args) == 1 and mask.args[0].keyword is None:
            return mask.args[0].value.with_changes(lpar=(), rpar=())
    return mask.with_changes(lpar=(), rpar=())


def _input(node: cst.Call) -> cst.BaseExpression | None:
    for arg in node.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "input":
            return arg.value
    return None


def _tensor_method_signature(node: cst.Call) -> bool:
    """Whether a `.nonzero(...)`/`.argwhere(...)` call fits the tensor methods, which take
    no positional argument (`x.nonzero(as_tuple=True)`): fastcore's `L.argwhere(f)` and
    numpy-like containers called with a predicate or an array are something else."""
    return all(arg.keyword is not None or arg.star == "**" for arg in node.args)


def _single_positional(node: cst.Call) -> cst.BaseExpression | None:
    if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        return node.args[0].value
    return None


def _keyword(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def _is_zero(index: cst.BaseSlice) -> bool:
    return isinstance(index, cst.Index) and _is_zero_value(index.value)


def _is_zero_value(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Integer) and value.evaluated_value == 0
