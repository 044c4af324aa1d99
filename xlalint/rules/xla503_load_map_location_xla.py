from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.arguments import keyword_argument
from xlalint.analysis.devices import device_types
from xlalint.analysis.guards import path_conditions
from xlalint.analysis.members import is_property, member_values_in
from xlalint.rule import Rule
from xlalint.walk import self_attribute

if TYPE_CHECKING:
    from xlalint.context import FileContext

TORCH_LOAD = "torch.load"
XLA = frozenset({"xla"})
# accelerate's `Accelerator`: its `device` is the XLA device on an XLA host.
ACCELERATOR = "accelerate.Accelerator"


class LoadMapLocationXla(Rule):
    """
    ## What it does
    Flags `torch.load(f, map_location=<XLA device>)`: `"xla"`, `"xla:0"`,
    `torch.device("xla")`, `torch_xla.device()`, `xm.xla_device()`, or a name assigned one
    of these in the same function or at module level. Also a device handed in (a name the
    file assigns no device) where the code has just found it is not the CPU (the `else` of
    `if device == "cpu":`, or under `if device.type != "cpu":`): that branch is the
    accelerator's, which on an XLA host is the XLA device (easyocr's `get_detector(...,
    device)` loads with `map_location=device` there). And the device of an accelerate
    `Accelerator`, which on an XLA host is the XLA device: `accelerator.device` of a name
    bound to `Accelerator(...)` (or annotated as one), `self.accelerator.device` where every
    assignment of the class binds `Accelerator(...)`, a name assigned one of these
    (naturalspeech2's `Trainer.load`: `device = accelerator.device`, then
    `torch.load(..., map_location=device)`), or a property of the class that returns one
    (`self.device`). An accelerator handed in whose kind the file does not state is not
    taken for one.

    ## Why is this bad?
    `torch.load` restores storages with the location functions torch has registered
    (CPU, CUDA, MPS, meta, ...); XLA has none, so asking for an XLA device does not load
    the tensors there. With torch 2.9 and torch_xla 2.9 it fails outright on any checkpoint
    that holds tensors: `RuntimeError: don't know how to restore data location of
    torch.storage.UntypedStorage (tagged with xla:0)`.

    ## Example
    ```python
    device = torch_xla.device()
    state = torch.load("model.pt", map_location=device)
    model.load_state_dict(state)
    ```

    ## Use instead
    Load on the CPU and move the model (or the tensors) to the device:
    ```python
    state = torch.load("model.pt", map_location="cpu")
    model.load_state_dict(state)
    model.to(torch_xla.device())
    ```

    ## Fix safety
    No fix: where the loaded tensors should go next (a model already on the device, or
    tensors used directly) is for the code to say, so this rule reports with a hint only.

    ## Runtime evidence
    Not measured by the harness yet. Observed while writing this rule (torch 2.9, torch_xla
    2.9, XLA CPU device): `torch.load(buffer, map_location=d)` raised the RuntimeError above
    for `d` in `"xla"`, `"xla:0"`, `torch.device("xla")`, `xm.xla_device()` and
    `torch_xla.device()`, for checkpoints saved from CPU and from XLA tensors alike;
    `map_location="cpu"` loaded both.
    """

    code = "XLA503"
    name = "load-map-location-xla"
    message = "`torch.load` cannot map storages to an XLA device: load on the CPU, then move"
    hint = 'Use map_location="cpu", then model.load_state_dict(...) and model.to(device)'
    triggers = ("map_location",)
    screen = ("load",)  # `torch.load(path, device)` names no map_location

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Per function (module level first): assigned names, and whether to an XLA device.
        self._devices: list[dict[str, bool]] = [{}]
        # Per function (module level first): assigned names, and whether to an Accelerator.
        self._accelerators: list[dict[str, bool]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._devices.append({})
        self._accelerators.append({})
        for param in node.params.params:
            annotation = param.annotation
            if annotation is not None and self.ctx.qualified(annotation.annotation) == ACCELERATOR:
                self._accelerators[-1][param.name.value] = True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._devices.pop()
        self._accelerators.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        is_xla = device_types(node.value, self.ctx.imports) == XLA or self._accelerator_device(
            node.value
        )
        holds_accelerator = self._holds_accelerator(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._devices[-1][target.target.value] = is_xla
                self._accelerators[-1][target.target.value] = holds_accelerator

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualified(node.func) != TORCH_LOAD:
            return
        location = keyword_argument(node, "map_location")
        if location is None:
            positional = [a for a in node.args if a.keyword is None and not a.star]
            location = positional[1] if len(positional) > 1 else None
        if location is not None and self._is_xla_device(location.value, node):
            self.report(location)

    def _is_xla_device(self, value: cst.BaseExpression, call: cst.Call) -> bool:
        if device_types(value, self.ctx.imports) == XLA or self._accelerator_device(value):
            return True
        if isinstance(value, cst.Name):
            local = self._devices[-1].get(value.value)
            if local is None:
                local = self._devices[0].get(value.value)
            if local is not None:
                return local
            return self._found_not_cpu(value.value, call)
        return False

    def _accelerator_device(self, value: cst.BaseExpression) -> bool:
        """`accelerator.device`, `self.accelerator.device`, or a property of the class
        (`self.device`) that returns one: the device of an accelerate `Accelerator`, which
        on an XLA host is the XLA device."""
        if type(value) is not cst.Attribute:
            return False
        if value.attr.value == "device" and self._holds_accelerator(value.value):
            return True
        attribute = self_attribute(value)
        return attribute is not None and any(
            self._accelerator_device(returned) for returned in self._property_returns(attribute)
        )

    def _holds_accelerator(self, value: cst.BaseExpression) -> bool:
        """`Accelerator(...)`, a name the function (or the module) binds to one, or an
        attribute of the instance every assignment of its class binds to one."""
        if type(value) is cst.Call:
            return self.ctx.qualified(value.func) == ACCELERATOR
        if type(value) is cst.Name:
            local = self._accelerators[-1].get(value.value)
            if local is None:
                local = self._accelerators[0].get(value.value)
            return bool(local)
        attribute = self_attribute(value)
        key = self.ctx.function
        if attribute is None or key is None or key.class_name is None:
            return False
        values = member_values_in(self.ctx.module, key.class_name, attribute)
        return bool(values) and all(
            type(v) is cst.Call and self.ctx.qualified(v.func) == ACCELERATOR for v, _ in values
        )

    def _property_returns(self, attribute: str) -> list[cst.BaseExpression]:
        """What the enclosing class's property named `attribute` returns (`@property def
        device(self): return self.accelerator.device`): one `return` statement."""
        key = self.ctx.function
        if key is None or key.class_name is None:
            return []
        for statement in self.ctx.module.body:
            if type(statement) is not cst.ClassDef or statement.name.value != key.class_name:
                continue
            for member in statement.body.body:
                if (
                    type(member) is cst.FunctionDef
                    and member.name.value == attribute
                    and is_property(member)
                ):
                    body = member.body.body
                    if len(body) == 1 and type(body[0]) is cst.SimpleStatementLine:
                        line = body[0].body
                        if len(line) == 1 and type(line[0]) is cst.Return and line[0].value:
                            return [line[0].value]
        return []

    def _found_not_cpu(self, name: str, call: cst.Call) -> bool:
        """`call` runs where `name` was found not to be the CPU (`else` of `if device ==
        "cpu":`, `if device.type != "cpu":`): the accelerator's branch."""
        path = [call, *self.ctx.ancestors()]
        for test, holds in path_conditions(path):
            cpu = _compares_with_cpu(test, name)
            if cpu is not None and cpu is not holds:
                return True
        return False


def _compares_with_cpu(test: cst.BaseExpression, name: str) -> bool | None:
    """True for `name == "cpu"` (`name.type == "cpu"`), False for `!=`; None for any other
    test."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal | cst.NotEqual):
        return None
    sides = (test.left, comparison.comparator)
    if not any(isinstance(s, cst.SimpleString) and s.evaluated_value == "cpu" for s in sides):
        return None
    for side in sides:
        if isinstance(side, cst.Attribute) and side.attr.value == "type":
            side = side.value
        if isinstance(side, cst.Name) and side.value == name:
            return isinstance(comparison.operator, cst.Equal)
    return None
