from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.arguments import keyword_argument, parameter
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.intervals import attribute_values
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import code_children, self_attribute

if TYPE_CHECKING:
    from collections.abc import Iterator

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
# Lightning's logging methods, by the position of the logged value(s).
_LIGHTNING_LOGS = {"log": 1, "log_dict": 0}
_LOG_VALUES = frozenset({"value", "dictionary"})
_PROG_BAR_HINT = (
    "Drop `prog_bar=True` (the logger still reads it every `log_every_n_steps`), or log "
    "with `on_step=False, on_epoch=True`"
)
ADD_STEP_CLOSURE = "torch_xla.core.xla_model.add_step_closure"
XM_IMPORT = "import torch_xla.core.xla_model as xm"
# Logging arguments whose meaning depends on where and when the call runs.
_CALL_SITE_KEYWORDS = frozenset({"exc_info", "stack_info", "stacklevel"})
_LITERAL_NAMES = frozenset({"True", "False", "None"})


class PrintInHotCode(Rule):
    """
    ## What it does
    Flags printing, logging and formatting of tensors in code that runs every step:
    `print(...)`, `logging`/`logger`/`log` calls, tqdm's `set_postfix`/`set_description`
    and tensorboard's `add_scalar`/`add_scalars` when an argument is a tensor or formats
    one, Lightning's `self.log(...)`/`self.log_dict(...)` of a tensor with
    `prog_bar=True` (also a metric's value from the `nn.ModuleDict` the module keeps its
    metrics in: `for name, metric in self.metrics.items(): self.log(name, metric(y_hat,
    y), prog_bar=True)`, each value a module, its call a device tensor), and f-strings,
    `str()`, `repr()`, `format()`, `.format()` and `%` formatting of tensors anywhere in
    the step. Printing strings and Python numbers is not flagged (a `loss.item()` read for
    printing is XLA101's finding), nor is code inside an
    `xm.add_step_closure(...)` callback, a `raise` or an `assert` message, a warning in the
    branch that runs only when a test finds NaN or infinite values (`if not
    torch.isfinite(grad_norm): logger.warning(f"grad norm {grad_norm}")`, or the `else` of
    `if torch.isfinite(grad_norm):`: it runs when a step goes wrong, while the test is
    XLA103's per-step finding; the body of `if torch.isfinite(grad_norm):` runs on every
    healthy step and is flagged), nor a warning in the body of an `if` that only warns and
    whose test checks a value (`if kl.max() > 100: log.warning(f"KL {kl.max()}")`: it runs
    when the value has gone wrong; `if verbose: log.warning(...)` does not count), nor
    Lightning's `self.log` without
    `prog_bar=True` or with `on_step=False` (the bar then shows the value reduced at the
    epoch's end: no step reads it), also through a flag that is False unless the user sets
    it (`on_step=self.hparams.log_on_step` with `log_on_step: bool = False` in the
    constructor, an attribute set only from such a parameter or to False, a parameter of
    the method defaulting to False), which is Lightning's default in `validation_step`,
    `test_step` and their batch hooks (`self.log("val_loss", loss, prog_bar=True)` there
    logs per epoch unless given `on_step=True`; Lightning 2.x's logging validator sets
    `default_on_step=False` for exactly these hooks, and so for the helper methods that
    only they call: `self._log_val_metrics(loss)` from `validation_step`).

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

    ## Off by default
    On code its rule was never tuned on (the held-out projects of rounds 11-17 of
    `benchmarks/quality/`, first scores), 9 findings held 2 true costs: the others
    were prints and f-strings under a validation interval (every 100 steps: amortised) and
    Lightning `self.log(...)` calls that log once per epoch by default (`on_step=False`).
    A rule wrong more often than right on unseen code stays out of the default set;
    turn it on with `extend-select = ["XLA104"]` (or `--extend-select XLA104`).

    ## Fix safety
    Unsafe. A `print`, logging, `xm.master_print`, tqdm or tensorboard call that stands
    as a statement is handed to `xm.add_step_closure`, as the PyTorch/XLA docs advise
    for printing and reporting: the closure runs after the step's barrier, when the
    tensors passed in `args` have been computed with the step's graph. Values are bound
    when the closure is added; only the turning into text waits. Two forms:
    `xm.add_step_closure(print, args=(loss,))` passes the call's arguments when none of
    them formats a tensor itself and there are no keywords;
    `xm.add_step_closure(lambda step, loss: print(f"step {step} loss {loss:.4f}"),
    args=(step, loss))` keeps the call as written when every value in it is a name or a
    literal (logging prefers this form, so that records keep their line number).

    Deferring changes behaviour: the output appears at the next barrier
    (`torch_xla.sync()`, `xm.mark_step()`, a `MpDeviceLoader` step), later and ordered
    differently against other output; it never appears if the program stops before that
    barrier; a tensor changed in place after the call shows its later value; log records
    carry the later time (and, in the direct form, torch_xla's caller). Calls whose value
    is used, with `*args`/`**kwargs`, `logger.exception()` and `exc_info=`/`stack_info=`/
    `stacklevel=` are reported without a fix, as are other arguments (`f"{x.mean()}"`:
    the lambda form would compute it after the step).

    ## Runtime evidence
    5 steps of a small model on the XLA CPU device (case `print_loss`): `print(loss)` each step
    costs {print_loss.before.uncached_compiles} uncached and {print_loss.before.cached_compiles}
    cached compiles, {print_loss.before.executions} executions and
    {print_loss.before.device_to_host} device-to-host transfers; `xm.add_step_closure(print,
    args=(loss,))` costs {print_loss.after.uncached_compiles} uncached and
    {print_loss.after.cached_compiles} cached compiles, {print_loss.after.executions} executions
    and {print_loss.after.device_to_host} transfers (the transfers stay, the extra executions
    go), and the output is {print_loss.outputs}.

    Lightning 2.5.6 on the same device (`benchmarks/lightning_log.py`, 10 measured steps of
    a `training_step` on `Trainer(accelerator="tpu")`): `self.log("loss", loss,
    prog_bar=True)` costs 20 device-to-host transfers and 20 `_local_scalar_dense` reads,
    two per step; `self.log("loss", loss)`, `self.log("loss", loss, on_step=False,
    on_epoch=True)` and `self.log("loss", loss, on_step=False, on_epoch=True,
    prog_bar=True)` (measured by hand: the bar shows the value reduced at the epoch's end)
    cost none within the window (the logger reads every
    `log_every_n_steps`, 50 by default). Executions stay at 10 in every variant: the reads
    come after Lightning's barrier, but each one waits for the device.
    """

    code = "XLA104"
    name = "print-in-hot-code"
    default_enabled = False
    message = "{what} turns a tensor into text every step, forcing a graph execution and a copy"
    hint = "Print or log in xm.add_step_closure(fn, args=(...)), or every N steps"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    hot_only = True
    needs_torch = True
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
        if self._progress_bar_log(node):
            return
        sink = self._sink(node)
        if sink is not None:
            what, arguments = sink
            if any(self._formats_tensor(arg) for arg in arguments) and not self._on_bad_values():
                self._report(node, what, fix=self._closure_fix(node))
            return
        if self._stringifier(node) is not None:
            self._check_formatting(node)

    def _sink(self, node: cst.Call) -> tuple[str, list[cst.BaseExpression]] | None:
        """`(how to name it, the arguments it turns into text)` for a printing call."""
        func = node.func
        positional = [arg.value for arg in node.args if arg.keyword is None]
        qualified = self.ctx.qualified(func)
        if type(func) is cst.Name and func.value == "print":
            # The builtin, or an imported one (rich's): either formats its arguments.
            return "`print()`", positional  # not sep=, end=, file=
        if qualified in _PRINTS:
            return _PRINTS[qualified], positional
        if type(func) is not cst.Attribute:
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

    def _progress_bar_log(self, node: cst.Call) -> bool:
        """Lightning's `self.log(name, value, prog_bar=True)` / `self.log_dict({...},
        prog_bar=True)` with a tensor value: the progress bar reads it every step. Without
        `prog_bar=True` Lightning keeps the tensor and reads it only when the logger
        writes (every `log_every_n_steps`), which is not flagged."""
        func = node.func
        if not (
            type(func) is cst.Attribute
            and func.attr.value in _LIGHTNING_LOGS
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return False
        if not _keyword_is(node, "prog_bar", "True"):
            return False
        if self._off_by_default(keyword_argument(node, "on_step")) or (
            not _keyword_is(node, "on_step", "True") and self._logs_per_epoch()
        ):
            # `on_step=False, on_epoch=True`: the progress bar shows the epoch's reduced
            # value, computed at the epoch's end; no step reads the tensor.
            return True
        index = _LIGHTNING_LOGS[func.attr.value]
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        values = [a.value for a in node.args if a.keyword and a.keyword.value in _LOG_VALUES]
        values += positional[index : index + 1]
        if any(self._formats_tensor(value) for value in values):
            message = (
                f"`self.{func.attr.value}(..., prog_bar=True)` of a tensor reads it to the "
                "host every step for the progress bar"
            )
            self._reported.add(id(node))
            self.report(node, message, hint=_PROG_BAR_HINT)
        return True

    def _off_by_default(self, arg: cst.Arg | None) -> bool:
        """`on_step=False`, or a flag that is False unless the user sets it: a parameter
        of the method defaulting to False (`log_on_step=False`), an attribute every
        assignment of the class sets to False or to such a constructor parameter, or a
        hyperparameter Lightning keeps from the constructor (`self.hparams.log_on_step`
        with `log_on_step: bool = False` in `__init__`). Logging per epoch is the
        default: a step read is what the user opts into."""
        if arg is None:
            return False
        value = arg.value
        if _is_false(value):
            return True
        function = self.ctx.function_node
        if type(value) is cst.Name and function is not None:
            param = parameter(function, value.value)
            return param is not None and param.default is not None and _is_false(param.default)
        class_def = next((a for a in self.ctx.ancestors() if type(a) is cst.ClassDef), None)
        if class_def is None:
            return False
        attribute = self_attribute(value)
        if attribute is not None:
            values = attribute_values(class_def, attribute)
            return bool(values) and all(_is_false(v) for v in values)
        hyperparameter = _hyperparameter(value)
        init = next(
            (
                s
                for s in class_def.body.body
                if type(s) is cst.FunctionDef and s.name.value == "__init__"
            ),
            None,
        )
        if hyperparameter is None or init is None:
            return False
        param = parameter(init, hyperparameter)
        return param is not None and param.default is not None and _is_false(param.default)

    def _logs_per_epoch(self) -> bool:
        """In `validation_step`, `test_step` and their batch hooks Lightning's `on_step`
        defaults to False: `self.log(..., prog_bar=True)` there logs the epoch's value.
        Lightning picks the default by the hook that is running, so a helper method that
        only those hooks call (`self._log_val_metrics(loss)` from `validation_step`) logs
        per epoch too."""
        function = self.ctx.function_node
        return function is not None and _called_only_from_epoch_hooks(
            self.ctx.module, function, frozenset()
        )

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
        if any(type(a) in (cst.Raise, cst.Assert) for a in self.ctx.ancestors()):
            return  # runs only on the error path
        if self._formats_tensor(node) and not self._on_bad_values():
            self._report(node, "Formatting")

    def _on_bad_values(self) -> bool:
        """Inside a branch that runs only when a finiteness test finds NaN or infinite
        values: the body of `if not torch.isfinite(grad_norm): logging.warning(f"...
        {grad_norm}")` (or of `if torch.isnan(loss):`), or the `else` of `if
        torch.isfinite(grad_norm):`. A warning for a step gone wrong runs when training
        diverges, not every step; the test itself reads the device every step (XLA103's
        finding). The body of `if torch.isfinite(g):` runs on every healthy step."""
        child: cst.CSTNode | None = None
        for ancestor in self.ctx.ancestors():
            if type(ancestor) is cst.If:
                when_bad = _true_on_bad_values(ancestor.test)  # type: ignore[attr-defined]
                if child is ancestor.body and when_bad is True:  # type: ignore[attr-defined]
                    return True
                if type(child) is cst.Else and when_bad is False:
                    return True
            child = ancestor
        return False

    def _report(self, node: cst.CSTNode, what: str, fix: NodeFix | None = None) -> None:
        self._reported.add(id(node))
        self.report(node, self.message.format(what=what), fix=fix)

    # -- the fix: defer the call to a step closure ----------------------------------------
    def _closure_fix(self, node: cst.Call) -> NodeFix | None:
        """`print(...)`/`logger.info(...)` as a statement -> `xm.add_step_closure(...)`.

        Two forms, both binding every value now and leaving only the turning into text for
        after the step. The direct form, `xm.add_step_closure(print, args=(a, b))`, passes
        the arguments themselves; it needs positional arguments only, none of which formats
        a tensor itself (an f-string would format it now). The lambda form,
        `xm.add_step_closure(lambda step, loss: print(f"{step} {loss}"), args=(step, loss))`,
        keeps the call as written and passes the names it reads; it needs every value in
        the call to be a name or a literal, so that nothing but formatting is deferred.
        Logging calls prefer the lambda form, which keeps the log record's line number.
        """
        if not self._is_statement(node) or any(arg.star for arg in node.args):
            return None
        func = node.func
        is_print = (isinstance(func, cst.Name) and func.value == "print") or (
            self.ctx.qualified(func) in _PRINTS
        )
        if not is_print:
            if not isinstance(func, cst.Attribute) or func.attr.value == "exception":
                return None  # `exception()` reads the exception being handled, now
            if any(a.keyword is not None and a.keyword.value in _CALL_SITE_KEYWORDS
                   for a in node.args):  # fmt: skip
                return None
        forms = (self._direct_form, self._lambda_form)
        for form in forms if is_print else reversed(forms):
            text = form(node)
            if text is not None:
                break
        else:
            return None
        top_level = ImportTable()  # not the imports of some function seen so far
        top_level.add_top_level(self.ctx.module)
        add, imports = top_level.spell(ADD_STEP_CLOSURE, XM_IMPORT, self.ctx.names_in_use)
        return self.fix(
            "Defer to `xm.add_step_closure(...)`", (node, f"{add}({text})"), imports=imports
        )

    def _is_statement(self, node: cst.Call) -> bool:
        """A call whose value is not used: `print(x)` on its own, not `y = print(x)`."""
        ancestors = self.ctx.ancestors()
        expr, line = next(ancestors, None), next(ancestors, None)
        return (
            isinstance(expr, cst.Expr)
            and expr.value is node
            and isinstance(line, cst.SimpleStatementLine)
        )

    def _direct_form(self, node: cst.Call) -> str | None:
        if any(arg.keyword is not None for arg in node.args):
            return None
        if any(self._formats_now(arg.value) for arg in node.args):
            return None
        code = self.ctx.module.code_for_node
        values = [code(arg.value) for arg in node.args]
        packed = f"({values[0]},)" if len(values) == 1 else f"({', '.join(values)})"
        return f"{code(node.func)}, args={packed}"

    def _lambda_form(self, node: cst.Call) -> str | None:
        names: list[str] = []
        if not all(self._deferrable(arg.value, names) for arg in node.args):
            return None
        params = list(dict.fromkeys(names))
        if not params:
            return None
        packed = f"({params[0]},)" if len(params) == 1 else f"({', '.join(params)})"
        # The replaced text is the call without its parentheses, which stay around it.
        call = self.ctx.module.code_for_node(node.with_changes(lpar=(), rpar=()))
        return f"lambda {', '.join(params)}: {call}, args={packed}"

    def _formats_now(self, node: cst.BaseExpression) -> bool:
        """Whether evaluating `node` (not printing it) turns a tensor into text."""
        if self.ctx.is_tensor(node):
            return False
        if isinstance(node, cst.Tuple | cst.List | cst.Set):
            return any(
                self._formats_now(e.value) for e in node.elements if isinstance(e, cst.Element)
            )
        if isinstance(node, cst.Dict):
            return any(
                self._formats_now(e.key) or self._formats_now(e.value)
                for e in node.elements
                if isinstance(e, cst.DictElement)
            )
        return self._formats_tensor(node)

    def _deferrable(self, node: cst.BaseExpression, names: list[str]) -> bool:
        """Whether `node` is names and literals put into text: evaluating it later, with
        the names bound to their values of now, gives the same text. Collects the names."""
        if isinstance(node, cst.Name):
            if node.value not in _LITERAL_NAMES:
                names.append(node.value)
            return True
        if isinstance(node, cst.SimpleString | cst.Integer | cst.Float | cst.Imaginary):
            return True
        if isinstance(node, cst.FormattedString):
            return all(
                self._deferrable(part.expression, names)
                and (part.format_spec is None or all(
                    isinstance(spec, cst.FormattedStringText) for spec in part.format_spec))
                for part in node.parts
                if isinstance(part, cst.FormattedStringExpression)
            )  # fmt: skip
        if isinstance(node, cst.ConcatenatedString):
            return self._deferrable(node.left, names) and self._deferrable(node.right, names)
        if isinstance(node, cst.BinaryOperation):
            return isinstance(node.operator, cst.Modulo | cst.Add) and (
                self._deferrable(node.left, names) and self._deferrable(node.right, names)
            )
        if isinstance(node, cst.Tuple | cst.List):
            return all(
                isinstance(e, cst.Element) and self._deferrable(e.value, names)
                for e in node.elements
            )
        if isinstance(node, cst.Call):
            return (
                self._stringifier(node) is not None
                and not any(arg.star for arg in node.args)
                and all(self._deferrable(arg.value, names) for arg in node.args)
            )
        return False

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
            type(func) is cst.Name
            and func.value in _STRINGIFIERS
            and self.ctx.qualified(func) is None
            and node.args
        ):
            return [node.args[0].value]
        if (
            type(func) is cst.Attribute
            and func.attr.value == "format"
            and _is_string_literal(func.value)
        ):
            return [arg.value for arg in node.args]
        return None


# True where a value is NaN or infinite, and True where it is finite.
_NON_FINITE_TESTS = frozenset({"isnan", "isinf", "isneginf", "isposinf"})
_FINITE_TESTS = frozenset({"isfinite"})


def _true_on_bad_values(test: cst.BaseExpression) -> bool | None:
    """True for a test that holds only when values are NaN or infinite (`torch.isnan(x)`,
    `not torch.isfinite(g)`, `(~x.isfinite()).any()`: `isnan`/`isinf` under an even
    number of `not`/`~`, `isfinite` under an odd number), False for one that holds when
    they are finite (`torch.isfinite(g)`, `not x.isnan().any()`), None for a test with no
    such call or with calls of both senses."""
    senses = set(_finiteness_senses(test, negated=False))
    return senses.pop() if len(senses) == 1 else None


def _finiteness_senses(node: cst.CSTNode, negated: bool) -> Iterator[bool]:
    """For each finiteness call in `node`, whether it is true on bad values, counting
    the `not`/`~` on its way up (a comparison or `.any()` on it keeps its sense)."""
    if type(node) is cst.UnaryOperation and type(node.operator) in (cst.Not, cst.BitInvert):  # type: ignore[attr-defined]
        yield from _finiteness_senses(node.expression, not negated)  # type: ignore[attr-defined]
        return
    if type(node) is cst.Call:
        func = node.func  # type: ignore[attr-defined]
        name = (
            func.attr.value
            if type(func) is cst.Attribute
            else func.value
            if type(func) is cst.Name
            else None
        )
        if name in _NON_FINITE_TESTS:
            yield not negated
        elif name in _FINITE_TESTS:
            yield negated
    for child in code_children(node):
        yield from _finiteness_senses(child, negated)


def _is_string_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString)


# Lightning hooks whose `self.log` defaults to `on_step=False, on_epoch=True`.
_EPOCH_LOGGING_HOOKS = re.compile(
    r"^(validation_step|test_step|on_(validation|test)_batch_(start|end))$"
)


def _called_only_from_epoch_hooks(
    module: cst.Module, function: cst.FunctionDef, seen: frozenset[str]
) -> bool:
    """`function` is one of the hooks whose `self.log` defaults to `on_step=False`, or a
    method every call of which (`self.name(...)`, at least one) is made in such a hook or
    in a method called only from them."""
    name = function.name.value
    if _EPOCH_LOGGING_HOOKS.match(name) is not None:
        return True
    if name in seen or len(seen) > 4:
        return False
    sites = call_sites(module).named(name, method=True)
    return bool(sites) and all(
        isinstance(site.call.func, cst.Attribute)
        and isinstance(site.call.func.value, cst.Name)
        and site.call.func.value.value == "self"
        and site.function is not None
        and _called_only_from_epoch_hooks(module, site.function, seen | {name})
        for site in sites
    )


def _is_false(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "False"


def _hyperparameter(node: cst.BaseExpression) -> str | None:
    """`x` for Lightning's `self.hparams.x` or `self.hparams["x"]`."""
    if type(node) is cst.Attribute and self_attribute(node.value) == "hparams":
        return node.attr.value
    if type(node) is cst.Subscript and self_attribute(node.value) == "hparams":
        index = node.slice[0].slice if len(node.slice) == 1 else None
        if type(index) is cst.Index and type(index.value) is cst.SimpleString:
            return index.value.raw_value
    return None


def _keyword_is(call: cst.Call, keyword: str, value: str) -> bool:
    """`call` passes `keyword=value` (`prog_bar=True`), `value` a literal name."""
    arg = keyword_argument(call, keyword)
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == value
