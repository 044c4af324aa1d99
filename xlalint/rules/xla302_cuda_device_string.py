from __future__ import annotations

import libcst as cst

from xlalint.analysis.arguments import parameter
from xlalint.analysis.devices import (
    TORCH_DEVICE,
    cuda_strings,
    device_arguments,
    in_own_method,
    is_cuda_string,
    is_device_name,
    is_device_option,
    keyword_argument,
    only_examined,
    positional_argument,
    probe_with_cuda_fallback,
    torch_device_type_argument,
    xla_device_source,
    xla_string_source,
)
from xlalint.analysis.guards import path_conditions
from xlalint.analysis.handed_functions import default_never_used
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import descendants

_MAP_LOCATION_HINT = (
    'load to the host with `map_location="cpu"`, then move the model with `.to(torch_xla.device())`'
)


# Methods that declare a command-line option with a `default=`.
_OPTION_DECLARATIONS = frozenset({"add_argument", "add_option", "addoption"})
_CLICK_OPTIONS = frozenset({"click.option", "click.decorators.option"})


class CudaDeviceString(Rule):
    """
    ## What it does
    Flags the strings `"cuda"` and `"cuda:N"` (and `f"cuda:{rank}"`, `"cuda:{}".format(gpu)`,
    `"cuda:%d" % gpu`, `"cuda:" + str(gpu)`) where they choose a device: `torch.device("cuda")`,
    `torch.device("cuda", 0)`, `device="cuda"` arguments,
    `.to("cuda")`, `torch.set_default_device("cuda")`, `map_location="cuda"`, and values
    given to a device-like name (`device = "cuda"`, `device = args.device or "cuda"`,
    `def run(device="cuda")`, `{"device": "cuda"}`,
    `add_argument("--device", default="cuda")`, `@click.option("--device",
    default="cuda")` (or optparse's `add_option`), or a configuration's device entry whose
    default is CUDA: `config.get("device", "cuda:0")`).

    Left alone: comparisons (`device.type == "cuda"` checks, it does not choose), words in
    strings, comments and docstrings, strings under a CUDA guard (a count of GPUs that
    needs one, `if ngpu > 0:`, or a flag this file keeps False on an XLA host, as XLA303
    describes, included, but not the branch of a test that says a value is not on CUDA,
    `if attr.device != torch.device("cuda"): attr = attr.to(torch.device("cuda"))`, which
    an XLA tensor always takes; and a test that the process group is NCCL: `torch.device("cuda")
    if self.backend == dist.Backend.NCCL else self._default_device`, which only a CUDA
    host takes, and which is no device ladder either (not a backend setting compared with
    its own default, `if distributed_backend == "nccl":` in `def __init__(...,
    distributed_backend="nccl")`: an XLA host with the defaults takes that branch); or
    after
    `if not torch.cuda.is_available(): return`), in code that runs only where a test for
    XLA failed (`if device == "xla": ... else: <here>`) or in a class's own `cuda()`
    method, the branches of a device ladder such as
    `"cuda" if torch.cuda.is_available() else "cpu"` (XLA305's; not a chain whose other
    branch keeps the device the caller handed in, `self.device = device` before `if
    self.is_ddp: self.device = torch.device("cuda", rank)`: there CUDA is forced on one
    path and reported here), also the first rung of a
    ladder that sibling `if`s make (`if device == "auto": device = "cuda"` before
    `if device.type == "cuda" and not torch.cuda.is_available(): return
    torch.device("cpu")`: one ladder, one finding; also before an `if`/`else` ladder whose
    test examines the name the first rung sets, `if device is None: device = "cuda"`, then
    `if device == "cuda": device = torch.device(f"cuda:{torch.cuda.current_device()}")
    else: device = torch.device(device)`: the default flows into it), and the default of a
    parameter that its function only asks about and places nothing with
    (`def build_dataloader(..., device="cuda")` that reads `device.type` to decide
    `pin_memory`, or hands it to an autocast: XLA303's), and the default of a parameter of
    a private function or method that every call of its name in the module replaces
    (`def _compute_dist(self, batch, device="cuda")`, always called with the solver's
    device; not where a call leaves it out, spreads `**kwargs`, or the name is handed on
    uncalled).
    Also left alone: a string in the body of a `try:` that asks whether CUDA works and
    answers with a literal (`device = torch.device("cuda:" + str(n))`, a tiny tensor moved
    there, `return True`, with handlers that pass or return and never raise: cellpose's
    `_use_gpu_torch`): on an XLA host the probe fails and its handler's path runs.
    Also left alone: `torch.device("cuda", device)` under `if isinstance(device, int):`
    with `device` a parameter (`load_model(file, model, device=0)`): CUDA only when the
    caller hands in an integer GPU index, its own choice of a GPU; a caller on an XLA host
    hands in its device. `torch.device("cuda", device)` of an index from anywhere else
    (`local_rank`) is reported.

    ## Why is this bad?
    A TPU host has no CUDA device: every tensor or module sent to `"cuda"` fails to get
    there, and none of them reaches the XLA device the port is meant to use.

    ## Example
    ```python
    device = torch.device("cuda")
    x = torch.randn(8, 128, device="cuda:0")
    batch = batch.to("cuda")
    ```

    ## Use instead
    ```python
    import torch_xla

    device = torch_xla.device()
    x = torch.randn(8, 128, device=torch_xla.device())
    batch = batch.to(torch_xla.device())
    ```

    ## Fix safety
    Safe. `torch.device("cuda", ...)` and a device string passed as an argument become
    `torch_xla.device()`; in a parameter's default, `torch.device("xla")`. A string stored
    in a variable, default, dict or argparse option becomes the string `"xla"`, so the value
    stays a string (`torch.device("xla")` and `.to("xla")` are the XLA device) and nothing
    touches the XLA runtime when the module is imported. Both add `import torch_xla`, which
    registers the XLA device. A device index is dropped: each XLA process owns its device.
    `map_location="cuda"` and strings inside a ternary or an `or` are reported without a
    fix, as are strings in a file that imports torch_xla only where it is installed (under
    `try:`/`if`). In a file with a device ladder without XLA (XLA305), the fix is unsafe:
    the ladder decides where the model goes, and moving this value alone could put it on
    another device than the model (`RuntimeError: Expected XLA tensor`). It then goes
    together with the ladder's fix: `--unsafe-fixes` applies both or neither.

    ## Runtime evidence
    Not measured by the harness yet. Without a CUDA device, allocating on or moving to
    `"cuda"` raises (RuntimeError with the CUDA build of torch, AssertionError with a
    CPU-only build), and `torch.load(..., map_location="cuda")` refuses to deserialize. The
    harness will run the script before and after the fix with `PJRT_DEVICE=CPU`.
    """

    code = "XLA302"
    name = "cuda-device-string"
    message = "`{text}` chooses a CUDA device, which an XLA host does not have"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("cuda",)
    screen = ("'cuda", "~cuda")

    # -- argument positions --------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        imports = self.ctx.imports
        if self.ctx.qualified(node.func) == TORCH_DEVICE:
            self._torch_device(node)
            return
        for arg in device_arguments(node, imports):
            self._strings(arg.value, argument=True)
        if map_location := keyword_argument(node, "map_location"):
            strings = cuda_strings(map_location.value, imports)
            if strings and self._may_report():
                for string in strings:
                    self.report(string, self._message(string), hint=_MAP_LOCATION_HINT)
        if self._declares_an_option(node):
            self._argparse_default(node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
            self._mapping_default(node)

    def _mapping_default(self, node: cst.Call) -> None:
        """`config.get("device", "cuda:0")`: a configuration's device entry whose default
        is CUDA, like an argparse default."""
        key, default = positional_argument(node, 0), positional_argument(node, 1)
        if key is None or default is None or len(node.args) != 2:
            return
        if not (
            isinstance(key.value, cst.SimpleString)
            and isinstance(key.value.evaluated_value, str)
            and is_device_option(key.value.evaluated_value)
        ):
            return
        self._strings(default.value, argument=False)

    def _torch_device(self, node: cst.Call) -> None:
        arg = torch_device_type_argument(node)
        if arg is None or not cuda_strings(arg.value, self.ctx.imports):
            return
        parent = self.ctx.parent
        if isinstance(parent, cst.Comparison | cst.ComparisonTarget):
            return  # `x.device == torch.device("cuda")` checks, it does not choose
        if not self._may_report() or self._callers_gpu_index(node):
            return
        message = self.message.format(text=self.ctx.module.code_for_node(node))
        if (
            isinstance(parent, cst.Arg)
            and parent.keyword
            and parent.keyword.value == "map_location"
        ):
            self.report(node, message, hint=_MAP_LOCATION_HINT)
            return
        fix = None
        if self.ctx.import_guards.optional("torch_xla"):
            pass  # CUDA hosts without torch_xla still run this line: no fix
        elif is_cuda_string(arg.value) and isinstance(parent, cst.Param):
            # `def run(device=torch.device("cuda"))`: the default is made at import, where
            # `torch_xla.device()` would start the XLA runtime; `torch.device("xla")` does not.
            # A spelling built at run time (`"cuda:{}".format(gpu)`) gets no fix.
            string = arg.value
            if isinstance(string, cst.SimpleString | cst.FormattedString):
                func = self.ctx.module.code_for_node(node.func)
                fix = self.fix(
                    'Use the XLA device: `torch.device("xla")`',
                    (node, f"{func}({xla_string_source(string)})"),
                    imports=("import torch_xla",),
                    moves_to_xla=True,
                )
        elif is_cuda_string(arg.value):
            device, imports = xla_device_source(self.ctx)
            fix = self.fix(
                f"Use the XLA device: `{device}`",
                (node, device),
                imports=imports,
                moves_to_xla=True,
            )
        self.report(node, message, fix=fix)

    def _callers_gpu_index(self, node: cst.Call) -> bool:
        """`if isinstance(device, int): device = torch.device("cuda", device)` with `device`
        a parameter: CUDA only where the caller hands in an integer GPU index, the caller's
        choice of a GPU; a caller on an XLA host hands in its device, not an int."""
        index = positional_argument(node, 1) or keyword_argument(node, "index")
        function = next((a for a in self.ctx.ancestors() if type(a) is cst.FunctionDef), None)
        if index is None or type(index.value) is not cst.Name or function is None:
            return False
        name = index.value.value
        if parameter(function, name) is None:
            return False
        return any(
            holds and _is_int_test(test, name)
            for test, holds in path_conditions((node, *self.ctx.ancestors()))
        )

    def _declares_an_option(self, node: cst.Call) -> bool:
        """Whether `node` declares a command-line option whose default the command takes
        unless told otherwise: argparse's `add_argument`, optparse's `add_option`,
        pytest's `addoption`, click's `@click.option(...)` (also `from click import
        option`)."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _OPTION_DECLARATIONS:
            return True
        return self.ctx.qualified(func) in _CLICK_OPTIONS

    def _argparse_default(self, node: cst.Call) -> None:
        options = [
            a.value.evaluated_value
            for a in node.args
            if a.keyword is None and isinstance(a.value, cst.SimpleString)
        ]
        if not any(isinstance(o, str) and is_device_option(o) for o in options):
            return
        if default := keyword_argument(node, "default"):
            self._strings(default.value, argument=False)

    # -- value positions -----------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if any(is_device_name(t.target) for t in node.targets):
            self._strings(node.value, argument=False)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and is_device_name(node.target):
            self._strings(node.value, argument=False)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None and is_device_name(node.name):
            function = next(
                (a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef | cst.Lambda)),
                None,
            )
            if isinstance(function, cst.FunctionDef) and only_examined(
                function, node.name.value, self.ctx.imports
            ):
                return  # `def build_loader(..., device="cuda")` only asks about the device
            if isinstance(function, cst.FunctionDef) and default_never_used(
                self.ctx.module, function, node.name.value, self._is_method(function)
            ):
                return  # `def _compute_dist(self, batch, device="cuda")`: every caller hands one
            self._strings(node.default, argument=False)

    def _is_method(self, function: cst.FunctionDef) -> bool:
        """Whether `function` (an ancestor of the node being visited) is a method: defined
        directly in a class body."""
        ancestors = list(self.ctx.ancestors())
        at = next((i for i, a in enumerate(ancestors) if a is function), None)
        owner = ancestors[at + 2] if at is not None and at + 2 < len(ancestors) else None
        return type(owner) is cst.ClassDef

    def visit_DictElement(self, node: cst.DictElement) -> None:
        key = node.key
        if (
            isinstance(key, cst.SimpleString)
            and isinstance(key.evaluated_value, str)
            and is_device_option(key.evaluated_value)
        ):
            self._strings(node.value, argument=False)

    def visit_Return(self, node: cst.Return) -> None:
        function = self.ctx.function
        if node.value is not None and function is not None and "device" in function.name.lower():
            self._strings(node.value, argument=False)

    # -- helpers -------------------------------------------------------------------------
    def _strings(self, value: cst.BaseExpression, *, argument: bool) -> None:
        """Report the CUDA strings `value` chooses. An argument is fixed to
        `torch_xla.device()`, a stored value to `"xla"`; strings in a ternary get no fix."""
        if probe_with_cuda_fallback(value, self.ctx.imports):
            return  # `probe() or "cuda"`: a device choice, XLA305's
        strings = cuda_strings(value, self.ctx.imports)
        if not strings or not self._may_report():
            return
        optional = self.ctx.import_guards.optional("torch_xla")
        for string in strings:
            fix: NodeFix | None = None
            if string is value and not optional:
                device, imports = xla_device_source(self.ctx)
                if argument:
                    fix = self.fix(
                        f"Use the XLA device: `{device}`",
                        (string, device),
                        imports=imports,
                        moves_to_xla=True,
                    )
                elif isinstance(string, cst.SimpleString | cst.FormattedString):
                    fix = self.fix(
                        'Use the XLA device: `"xla"`',
                        (string, xla_string_source(string)),
                        imports=imports,
                        moves_to_xla=True,
                    )
            self.report(string, self._message(string), fix=fix)

    def _message(self, string: cst.BaseExpression) -> str:
        return self.message.format(text=self.ctx.module.code_for_node(string))

    def _may_report(self) -> bool:
        """Not in CUDA-only code, a class's own `cuda()`, or an `if` device ladder (or the
        first rung of one that sibling `if`s make, which XLA305 reports)."""
        if in_own_method(self.ctx.function, "cuda") or self.ctx.runs_without_xla:
            return False
        if self._works_probe():
            return False
        choices = self.ctx.device_choices
        return not (
            choices.in_ladder(self.ctx.ancestors()) or choices.opens_ladder(self.ctx.ancestors())
        )

    def _works_probe(self) -> bool:
        """The string is in the body of a `try:` that asks whether CUDA works and answers
        with a literal (cellpose's `_use_gpu_torch`: `device = torch.device("cuda:" +
        str(n))`, a tiny tensor moved there, `return True`; `except: pass`, then the next
        probe): on an XLA host the move fails and the handler's path runs; nothing is
        placed on CUDA beyond the probe's own tensor."""
        below: cst.CSTNode | None = None
        for ancestor in self.ctx.ancestors():
            if type(ancestor) is cst.Try and below is ancestor.body:
                break
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef | cst.Lambda | cst.Module):
                return False
            below = ancestor
        else:
            return False
        statements = ancestor.body.body
        if not statements or not _returns_a_bool(statements[-1]):
            return False
        # No handler lets the failure out: each ends in a literal answer or falls through.
        return all(
            not any(type(n) is cst.Raise for n in descendants(handler.body))
            for handler in ancestor.handlers
        ) and bool(ancestor.handlers)


def _returns_a_bool(statement: cst.BaseStatement) -> bool:
    """`return True` / `return False` as the statement."""
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return False
    returned = statement.body[0]
    return (
        type(returned) is cst.Return
        and type(returned.value) is cst.Name
        and returned.value.value in ("True", "False")
    )


def _is_int_test(test: cst.BaseExpression, name: str) -> bool:
    """`isinstance(name, int)`."""
    if type(test) is not cst.Call or type(test.func) is not cst.Name:
        return False
    if test.func.value != "isinstance" or len(test.args) != 2:
        return False
    subject, kind = test.args[0].value, test.args[1].value
    return (
        type(subject) is cst.Name
        and subject.value == name
        and type(kind) is cst.Name
        and kind.value == "int"
    )
