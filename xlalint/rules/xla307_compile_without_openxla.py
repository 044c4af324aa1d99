from __future__ import annotations

import libcst as cst

from xlalint.analysis.arguments import append_keyword, keyword_argument
from xlalint.analysis.devices import device_types, mentions_xla, positional_argument
from xlalint.analysis.imports import ImportTable
from xlalint.context import Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule
from xlalint.walk import children, descendants

TORCH_COMPILE = frozenset({"torch.compile"})
# Backends that lower to Inductor, which has no XLA device.
_INDUCTOR = frozenset({"inductor"})
# Options that only Inductor reads: `torch.compile` hands them to any other backend, which
# `openxla` does not accept.
_INDUCTOR_OPTIONS = ("mode", "options")


class CompileWithoutOpenxla(Rule):
    """
    ## What it does
    Flags `torch.compile(...)` in XLA code (a file that imports torch_xla) without
    `backend="openxla"`: no `backend` argument (the default is Inductor) or
    `backend="inductor"`, as a call or as a decorator (`@torch.compile`,
    `@torch.compile(fullgraph=True)`), and `model.compile()` of an `nn.Module`, which
    compiles the module's forward the same way. Left alone: other backends (`"openxla"`,
    `"aot_eager"`, a backend held in a variable), calls with `**kwargs` (the backend may be
    in them), code that only CUDA machines run, and files that do not import torch_xla,
    except where compiling is on by default for an XLA device: `torch.compile` under `if
    self._do_i_compile():`, a function of the module that returns False for the devices
    it tests (`if self.device == torch.device("mps"): return False`, the CPU), names no
    XLA device, and returns True elsewhere (nnU-Net's trainer; reported without a fix,
    since `openxla` would not run where the file runs today). A gate that tests for CUDA,
    or that only returns a setting (opt-in), is left alone.

    ## Why is this bad?
    Inductor generates Triton or C++ kernels for CUDA and CPU tensors; it has no lowering
    for XLA tensors, so the first call of the compiled function on the XLA device raises
    an `InductorError`. PyTorch/XLA registers the `openxla` backend for dynamo, which
    captures the graph and compiles it with XLA.

    ## Example
    ```python
    import torch_xla

    model = torch.compile(model)
    ```

    ## Use instead
    ```python
    import torch_xla

    model = torch.compile(model, backend="openxla")
    ```

    ## Fix safety
    Safe in XLA code: the fix adds `backend="openxla"` (or replaces `"inductor"`). Where the
    call also passes `mode=` or `options=`, which only Inductor understands, the finding has
    no fix: drop them by hand.

    ## Runtime evidence
    Measured with `benchmarks/xla_semantics.py --group compile` (torch 2.9.0, torch_xla
    2.9.0, `PJRT_DEVICE=CPU`): `torch.compile(f)` and `torch.compile(f,
    backend="inductor")` called on an XLA tensor raise
    `InductorError: LoweringException`; `torch.compile(f, backend="openxla")` runs and gives
    the same output as `f`.
    """

    code = "XLA307"
    name = "compile-without-openxla"
    message = "`{name}` uses Inductor by default, which fails on XLA tensors"
    hint = 'pass `backend="openxla"`'
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("compile",)
    screen = ("compile",)

    def visit_Call(self, node: cst.Call) -> None:
        if not (self._torch_compile(node) or self._module_compile(node)):
            return
        on_by_default = False
        if not self._in_xla_code():
            # Code not written for XLA yet: only where a gate turns compiling off for the
            # devices it names and on for every other one, an XLA device among them.
            on_by_default = (
                self._torch_compile(node)
                and not self.ctx.runs_without_xla
                and self._on_for_other_devices(node)
            )
            if not on_by_default:
                return
        if any(arg.star == "**" for arg in node.args):
            return
        backend = keyword_argument(node, "backend")
        if backend is None and self._torch_compile(node):
            backend = positional_argument(node, 1)  # `torch.compile(model, backend)`
        if backend is not None:
            value = backend.value
            if not (isinstance(value, cst.SimpleString) and value.evaluated_value in _INDUCTOR):
                return
            message = f"`backend={value.value}` fails on XLA tensors: Inductor has no XLA device"
            fix = self.fix('Use `backend="openxla"`', (value, _openxla(value)))
            self.report(node, message, fix=None if self._inductor_options(node) else fix)
            return
        fix = None
        if (
            not on_by_default
            and not self._inductor_options(node)
            and (edit := self._append_backend(node))
        ):
            fix = self.fix('Add `backend="openxla"`', edit)
        name = "torch.compile" if self._torch_compile(node) else ".compile()"
        self.report(node, self.message.format(name=name), fix=fix)

    def _on_for_other_devices(self, node: cst.Call) -> bool:
        """The call runs under `if self._do_i_compile():` (or `if f():`), a function of
        this module that returns False for the device types it tests (`if self.device ==
        torch.device("mps"): return False`, the CPU) and True otherwise: compiling is the
        default on any other device, an XLA device too."""
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef):
                return False
            if isinstance(ancestor, cst.If) and child is ancestor.body:
                gate = self._gate_function(ancestor.test)
                if gate is not None and _excludes_named_devices(gate, self.ctx.imports):
                    return True
            child = ancestor
        return False

    def _gate_function(self, test: cst.BaseExpression) -> cst.FunctionDef | None:
        """`f()` or `self.f()`: the function of this module (or method of the class
        around the call) the test calls, without arguments."""
        if not isinstance(test, cst.Call) or test.args:
            return None
        func = test.func
        if isinstance(func, cst.Name):
            candidates = list(self.ctx.module.body)
            name = func.value
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            owner = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
            if owner is None or not isinstance(owner.body, cst.IndentedBlock):
                return None
            candidates = list(owner.body.body)
            name = func.attr.value
        else:
            return None
        found = [c for c in candidates if isinstance(c, cst.FunctionDef) and c.name.value == name]
        return found[0] if len(found) == 1 else None

    def _torch_compile(self, node: cst.Call) -> bool:
        return self.ctx.qualified(node.func) in TORCH_COMPILE

    def _module_compile(self, node: cst.Call) -> bool:
        """`model.compile()`: `nn.Module.compile` takes `torch.compile`'s arguments."""
        func = node.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "compile"
            and self.ctx.qualified(func) is None
            and self.ctx.kind(func.value) is Kind.MODULE
        )

    def visit_Decorator(self, node: cst.Decorator) -> None:
        """`@torch.compile` without a call: the default backend."""
        decorator = node.decorator
        if isinstance(decorator, cst.Call) or self.ctx.qualified(decorator) not in TORCH_COMPILE:
            return
        if not self._in_xla_code():
            return
        text = self.ctx.module.code_for_node(decorator)
        fix = self.fix('Add `backend="openxla"`', (decorator, f'{text}(backend="openxla")'))
        self.report(decorator, self.message.format(name="torch.compile"), fix=fix)

    def _append_backend(self, node: cst.Call) -> tuple[cst.CSTNode, str] | None:
        return append_keyword(node, self.ctx.module, "backend", '"openxla"')

    @staticmethod
    def _inductor_options(node: cst.Call) -> bool:
        return any(keyword_argument(node, name) for name in _INDUCTOR_OPTIONS)

    def _in_xla_code(self) -> bool:
        return self.ctx.imports.binds("torch_xla") and not self.ctx.runs_without_xla


def _excludes_named_devices(function: cst.FunctionDef, imports: ImportTable) -> bool:
    """The function returns False under tests of the device against types other than
    CUDA or XLA (`if self.device == torch.device("mps"): return False`, the CPU), and
    True outside every test of a device (`if "nnUNet_compile" not in os.environ: return
    True`): an XLA device, which it never names, gets that default. A gate that returns
    only a setting there (`return os.environ.get("COMPILE") == "1"`) is opt-in."""
    if mentions_xla(function, imports):
        return False
    excluded = False
    default = False
    stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]
    while stack:
        node, under_device_test = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.If:
            types = {
                kind
                for leaf in descendants(node.test)  # type: ignore[attr-defined]
                if isinstance(leaf, cst.BaseExpression)
                for kind in (device_types(leaf, imports) or ())
            }
            if types and not types <= {"cpu", "mps"}:
                return False  # it tests for CUDA (or an unknown type): a device's own gate
            tested = under_device_test or bool(types)
            stack.append((node.body, tested))  # type: ignore[attr-defined]
            if node.orelse is not None:  # type: ignore[attr-defined]
                stack.append((node.orelse, under_device_test))  # type: ignore[attr-defined]
            continue
        if type(node) is cst.Return:
            value = node.value  # type: ignore[attr-defined]
            literal = value.value if isinstance(value, cst.Name) else None
            if under_device_test and literal == "False":
                excluded = True
            elif not under_device_test and literal == "True":
                default = True
            continue
        stack.extend((child, under_device_test) for child in children(node))
    return excluded and default


def _openxla(string: cst.SimpleString) -> str:
    """`"openxla"` spelled with the prefix and quotes of `string`."""
    return f"{string.prefix}{string.quote}openxla{string.quote}"
