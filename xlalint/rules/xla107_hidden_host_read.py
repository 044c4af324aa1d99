from __future__ import annotations

import libcst as cst

from xlalint.context import Kind
from xlalint.rule import Rule

# torch factories whose positional arguments are all sizes (or a tuple of sizes).
_SIZED_FACTORIES = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "empty", "rand", "randn")
)
# torch factories and functions taking one size, by its position.
_SIZE_ARGUMENT = {"torch.full": 0, "torch.reshape": 1}
# `torch.arange(start, end, step)`: every bound is read as a Python number.
_RANGES = frozenset({"torch.arange"})
# Tensor methods whose positional arguments are all sizes (or a tuple of sizes).
_SIZED_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"}
)
_SIZE_KEYWORDS = frozenset({"size", "shape", "start", "end", "step"})


class HiddenHostRead(Rule):
    """
    ## What it does
    Flags a tensor used where Python needs a plain number, in code that runs every step:
    an index into a list, tuple, dict, string or host array (`labels[pred]`), a slice
    bound on anything (`x[:n]`), a size (`torch.zeros(n)`, `x.view(n, -1)`,
    `x.reshape(...)`, `x.expand(...)`, `x.repeat(...)`, `torch.ones/empty/full/rand/randn`),
    a bound of `torch.arange(...)`, or an argument of `range(...)`. Indexing a tensor with
    a tensor (`x[idx]`) is advanced indexing on the device and is not flagged; nor are
    `range(int(t))` and `range(t.item())`, whose explicit read XLA101 reports. For
    `range(t)` this rule reports the hidden read of `t`; the loop's trip count, which
    depends on the data even when read once, is XLA209's (data-dependent-trip-count).

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Python indexes,
    slices and sizes are host integers, so a 0-d tensor used as one is converted with
    `__index__`, which reads its value: the pending graph is compiled and executed right
    there and the value is copied back, with no `.item()` in sight. A size or slice bound
    that changes from step to step also gives each step a new shape, and a new compile.

    ## Example
    ```python
    for x, lengths in loader:
        n = lengths.max()
        tokens = x[:, :n]
        pad = torch.zeros(n)
        names = [class_names[c] for c in model(tokens).argmax(-1)]
    ```

    ## Use instead
    Keep shapes static and select on the device; read values once, outside the step:
    ```python
    for x, lengths in loader:
        mask = torch.arange(x.shape[1], device=x.device) < lengths[:, None]
        tokens = x * mask
        preds.append(model(tokens).argmax(-1))
    names = [class_names[c] for c in torch.cat(preds).tolist()]
    ```

    ## Fix safety
    No fix: a static-shape rewrite (padding and masks) needs judgement, so this rule
    reports with a hint only.

    ## Runtime evidence
    Not measured yet. The harness will run 5 steps of `x[:n]` and `torch.zeros(n)` with `n`
    a 0-d device tensor against a static-shape, masked version, and compare executions,
    compiles and `TransferFromDeviceTime` samples: each read is expected to cost one extra
    execution and one device-to-host transfer per step, like `.item()` (10 executions and
    5 transfers for 5 steps in the measured `.item()` case).
    """

    code = "XLA107"
    name = "hidden-host-read"
    message = "A tensor used as {use} is read on the host every step, forcing a graph execution"
    hint = "Keep shapes static (pad and mask) and index on the device; read values after the loop"
    hot_only = True
    needs_torch = True
    # Subscripts need `[`; the sized calls and `range` need their names.
    triggers = (
        "[",
        "range",
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "view",
        "reshape",
        "expand",
        "repeat",
        "new_",
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        container = None  # computed only when an index is a tensor
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None and self.ctx.is_tensor(bound):
                        self.report(bound, self.message.format(use="a slice bound"))
            elif self.ctx.is_tensor(index.value):
                if container is None:
                    container = self.ctx.kind(node.value)
                # A tensor indexing a tensor is advanced indexing, on the device; a dict
                # hashes a tensor key by identity, reading nothing.
                if container is Kind.HOST and not self.ctx.kinds.is_dict(node.value):
                    self.report(index.value, self.message.format(use="a Python index"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.ctx.qualified(func)
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        keywords = [
            arg.value
            for arg in node.args
            if arg.keyword is not None and arg.keyword.value in _SIZE_KEYWORDS
        ]
        if qualified is not None:
            if qualified in _SIZED_FACTORIES:
                self._check_sizes([*positional, *keywords])
            elif qualified in _RANGES:
                self._check_sizes([*positional, *keywords], "a `torch.arange()` bound")
            elif qualified in _SIZE_ARGUMENT:
                position = _SIZE_ARGUMENT[qualified]
                self._check_sizes([*positional[position : position + 1], *keywords])
            return
        if isinstance(func, cst.Name):
            if func.value == "range":
                for arg in positional:
                    if self.ctx.is_tensor(arg):
                        self.report(arg, self.message.format(use="a `range()` argument"))
        elif (
            isinstance(func, cst.Attribute)
            and func.attr.value in _SIZED_METHODS
            and self.ctx.kind(func.value) is not Kind.MODULE
            and not (isinstance(func.value, cst.Name) and func.value.value == "self")
        ):
            # `self.expand(x)` calls the module's own layer, not `Tensor.expand`.
            self._check_sizes([*positional, *keywords])
        elif isinstance(func, cst.Attribute) and func.attr.value == "new_full":
            self._check_sizes([*positional[:1], *keywords])

    def _check_sizes(self, sizes: list[cst.BaseExpression], use: str = "a size") -> None:
        for size in sizes:
            if isinstance(size, cst.Tuple | cst.List):
                elements = [e.value for e in size.elements if isinstance(e, cst.Element)]
                self._check_sizes(elements, use)
            elif self.ctx.is_tensor(size):
                self.report(size, self.message.format(use=use))
