from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.rule import Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext

_LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
)
# Receivers of logging calls, by spelling: `logger`, `log`, `self.logger`, `train_log`.
_LOGGER_NAME = re.compile(r"(^|[._])(log|logger)$", re.IGNORECASE)
_PRINTS = {"torch_xla.core.xla_model.master_print": "`xm.master_print()`"}
_PROGRESS_METHODS = frozenset(
    {"set_postfix", "set_postfix_str", "set_description", "set_description_str"}
)
_SCALAR_METHODS = frozenset({"add_scalar", "add_scalars"})
_STRINGIFIERS = frozenset({"str", "repr", "format"})


class PrintInHotCode(Rule):
    """
    ## What it does
    Flags printing, logging and formatting of tensors in code that runs every step:
    `print(...)`, `logging`/`logger`/`log` calls, tqdm's `set_postfix`/`set_description`
    and tensorboard's `add_scalar`/`add_scalars` when an argument is a tensor or formats
    one, and f-strings, `str()`, `repr()`, `format()`, `.format()` and `%` formatting of
    tensors anywhere in the step. Printing strings and Python numbers is not flagged (a
    `loss.item()` read for printing is XLA101's finding), nor is code inside an
    `xm.add_step_closure(...)` callback, a `raise` or an `assert` message.

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Turning a tensor
    into text needs its value, so the pending graph is compiled and executed right there
    and the tensor is copied to the host: one extra execution and one device-to-host
    transfer per step, and the step's graph is cut in two. Logging calls format their
    arguments when the level is enabled, and tensorboard's `add_scalar` reads the value.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss:.4f}")
        writer.add_scalar("train/loss", loss, step)
    ```

    ## Use instead
    Hand the tensors to a step closure, which runs after the step's graph has executed:
    ```python
    def log_step(step, loss):
        print(f"step {step} loss {loss:.4f}")
        writer.add_scalar("train/loss", loss, step)


    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        xm.add_step_closure(log_step, args=(step, loss))
    ```
    Or log every N steps only, or accumulate on the device and print after the loop.

    ## Fix safety
    No fix yet. The planned fix is unsafe: moving the call into `xm.add_step_closure(...)`
    defers it until after the step runs, which changes when (and, with mutated tensors,
    what) it prints.

    ## Runtime evidence
    5 steps of a small model on the XLA CPU device: `print(loss)` each step costs 2
    uncached and 8 cached compiles, 10 executions and 5 device-to-host transfers;
    `xm.add_step_closure(print, args=(loss,))` costs 1 uncached and 4 cached compiles and
    5 executions (the 5 transfers stay, the extra executions go), with identical output.
    """

    code = "XLA104"
    name = "print-in-hot-code"
    message = "{what} turns a tensor into text every step, forcing a graph execution and a copy"
    hint = "Print or log in xm.add_step_closure(fn, args=(...)), or every N steps"
    hot_only = True
    # Sinks (`print`, `log...`, `set_postfix`, `set_description`, `add_scalar`) and
    # formatting: f-string fields need `{`, the rest `str`, `repr`, `format` or `%`.
    triggers = (
        "print",
        "log",
        "set_postfix",
        "set_description",
        "add_scalar",
        "str",
        "repr",
        "format",
        "%",
        "{",
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    # -- sinks ----------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        sink = self._sink(node)
        if sink is not None:
            what, arguments = sink
            if any(self._formats_tensor(arg) for arg in arguments):
                self._report(node, what)
            return
        if self._stringifier(node) is not None:
            self._check_formatting(node)

    def _sink(self, node: cst.Call) -> tuple[str, list[cst.BaseExpression]] | None:
        """`(how to name it, the arguments it turns into text)` for a printing call."""
        func = node.func
        positional = [arg.value for arg in node.args if arg.keyword is None]
        qualified = self.ctx.qualified(func)
        if isinstance(func, cst.Name) and func.value == "print":
            # The builtin, or an imported one (rich's): either formats its arguments.
            return "`print()`", positional  # not sep=, end=, file=
        if qualified in _PRINTS:
            return _PRINTS[qualified], positional
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in _LOG_METHODS and self._is_logger(func.value):
            return f"`{method}()` logging", positional
        if qualified is not None:
            return None
        if method in _PROGRESS_METHODS:
            return f"`.{method}()`", [arg.value for arg in node.args]
        if method in _SCALAR_METHODS:
            values = [
                arg.value
                for index, arg in enumerate(node.args)
                if not (arg.keyword is None and index == 0)
                and not (arg.keyword is not None and arg.keyword.value in ("tag", "main_tag"))
            ]
            return f"`.{method}()`", values  # the values and the step, not the tag
        return None

    def _is_logger(self, receiver: cst.BaseExpression) -> bool:
        """`logging`, `logger`, `log`, `self.logger`, `logging.getLogger(...)`, loguru's."""
        if isinstance(receiver, cst.Call):
            return self.ctx.qualified(receiver.func) == "logging.getLogger"
        qualified = self.ctx.qualified(receiver)
        if qualified is not None:
            return qualified == "logging" or _LOGGER_NAME.search(qualified) is not None
        if isinstance(receiver, cst.Attribute):
            return _LOGGER_NAME.search(receiver.attr.value) is not None
        if isinstance(receiver, cst.Name):
            return _LOGGER_NAME.search(receiver.value) is not None
        return False

    # -- formatting outside a sink --------------------------------------------------------
    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._check_formatting(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo) and _is_string_literal(node.left):
            self._check_formatting(node)

    def _check_formatting(self, node: cst.BaseExpression) -> None:
        if any(id(ancestor) in self._reported for ancestor in self.ctx.ancestors()):
            return  # inside a sink or formatting already reported
        if any(isinstance(a, cst.Raise | cst.Assert) for a in self.ctx.ancestors()):
            return  # runs only on the error path
        if self._formats_tensor(node):
            self._report(node, "Formatting")

    def _report(self, node: cst.CSTNode, what: str) -> None:
        self._reported.add(id(node))
        self.report(node, self.message.format(what=what))

    # -- what turns a tensor into text ----------------------------------------------------
    def _formats_tensor(self, node: cst.BaseExpression) -> bool:
        """Whether turning `node` into text (or logging it) reads a tensor's value."""
        if self.ctx.is_tensor(node):
            return True
        if isinstance(node, cst.FormattedString):
            return any(
                self._formats_tensor(part.expression)
                for part in node.parts
                if isinstance(part, cst.FormattedStringExpression)
            )
        if isinstance(node, cst.ConcatenatedString):
            return self._formats_tensor(node.left) or self._formats_tensor(node.right)
        if isinstance(node, cst.Call):
            arguments = self._stringifier(node)
            return arguments is not None and any(self._formats_tensor(a) for a in arguments)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and _is_string_literal(node.left):
                return self._formats_tensor(node.right)
            if isinstance(node.operator, cst.Add):  # "loss: " + str(loss)
                return self._formats_tensor(node.left) or self._formats_tensor(node.right)
            return False
        if isinstance(node, cst.Tuple | cst.List | cst.Set):
            return any(
                self._formats_tensor(e.value) for e in node.elements if isinstance(e, cst.Element)
            )
        if isinstance(node, cst.Dict):
            return any(
                self._formats_tensor(e.value)
                for e in node.elements
                if isinstance(e, cst.DictElement)
            )
        return False

    def _stringifier(self, node: cst.Call) -> list[cst.BaseExpression] | None:
        """The arguments that `str(x)`, `repr(x)`, `format(x, spec)` or `"...".format(...)`
        turn into text; None for other calls."""
        func = node.func
        if (
            isinstance(func, cst.Name)
            and func.value in _STRINGIFIERS
            and self.ctx.qualified(func) is None
            and node.args
        ):
            return [node.args[0].value]
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "format"
            and _is_string_literal(func.value)
        ):
            return [arg.value for arg in node.args]
        return None


def _is_string_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString)
