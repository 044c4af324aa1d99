from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.devices import xla_ruled_out
from xlalint.analysis.tensors import TO_HOST_METHODS, moves_to_cpu
from xlalint.context import Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import children

if TYPE_CHECKING:
    from xlalint.context import FileContext

TORCH_SAVE = "torch.save"
XM_SAVE = "torch_xla.core.xla_model.save"
XM_IMPORT = "import torch_xla.core.xla_model as xm"
# `.state_dict()` of these holds Python numbers, not device tensors.
_HOST_STATE_OWNER = re.compile(r"sched|sampler|scaler|loader|rng|generator|tokenizer", re.I)
# A destination named like a path (not a file object, which `xm.save` would leave empty on
# every process but the master).
_PATH_NAME = re.compile(r"path|file_?name|fname|ckpt|checkpoint|dest", re.I)
_FILE_OBJECT_CALLS = frozenset({"open", "BytesIO", "NamedTemporaryFile", "TemporaryFile"})
# Words that make a condition depend on the process, and a destination per process.
_PROCESS_WORD = re.compile(r"rank|ordinal|master|main_process|process_index|process_zero", re.I)
_PER_PROCESS_WORD = re.compile(r"rank|ordinal|process_index", re.I)
_MASTER_CALL = re.compile(
    r"(is_master_ordinal|is_main_process|is_local_main_process|is_world_process_zero|"
    r"is_local_process_zero|is_global_zero)$"
)


class TorchSaveDeviceState(Rule):
    """
    ## What it does
    Flags `torch.save(obj, f)` in XLA code (a file that imports torch_xla) when `obj` holds
    device tensors: a `model.state_dict()` or `optimizer.state_dict()`, a tensor, or a
    dict, list or tuple with any of these (also through a name assigned one, or a dict
    filled with `ckpt["model"] = model.state_dict()`). State dicts of LR schedulers,
    samplers, grad scalers and loaders, and values moved to the CPU first (`.cpu()`,
    `.to("cpu")`), are not flagged; nor is a whole module (`torch.save(model, f)`), which
    `xm.save` would pickle with its XLA parameters just the same; nor RNG states
    (`get_rng_state()` is a CPU tensor on every backend); nor a `torch.save` that runs only
    where XLA is not in use (`if is_xla: xm.save(...) else: torch.save(...)`, or after
    `if is_xla: ... return`).

    ## Why is this bad?
    `torch.save` pickles each XLA tensor on its own: one device-to-host transfer per
    tensor, and the file records the tensors as XLA tensors, which can only be rebuilt where
    torch_xla is installed (or with `map_location="cpu"`). `xm.save` syncs once, copies
    everything to the CPU in one transfer and writes plain CPU tensors; in multi-process
    runs, only the master process writes (every process would otherwise write the same
    file at once).

    ## Example
    ```python
    import torch_xla.core.xla_model as xm

    torch.save({"model": model.state_dict(), "epoch": epoch}, ckpt_path)
    ```

    ## Use instead
    ```python
    xm.save({"model": model.state_dict(), "epoch": epoch}, ckpt_path)
    ```

    ## Fix safety
    Safe: the fix replaces `torch.save` with `xm.save` in the file's spelling (adding
    `import torch_xla.core.xla_model as xm` if needed). The saved values are the same, as
    CPU tensors; `load_state_dict` accepts them as it did the XLA ones. The fix is offered
    only where the behaviour of `xm.save`'s `master_only=True` cannot differ: exactly two
    positional arguments, a destination that is a path (not a file object or buffer, which
    non-master processes would leave empty), a path that does not name a rank or ordinal
    (per-process files), and no enclosing condition on the rank other than a check for the
    master (`if xm.is_master_ordinal():`, `if rank == 0:`). Where the file imports
    torch_xla only if it is there (`try: import torch_xla` after a device-ladder fix), the
    finding has no fix: `xm.save` would make torch_xla a requirement.

    ## Runtime evidence
    On the XLA CPU device (case `checkpoint_state`): saving and loading back the state dict of a
    small trained model with `torch.save` costs {checkpoint_state.before.device_to_host}
    device-to-host transfers, with `xm.save` {checkpoint_state.after.device_to_host}. Measured
    by hand while writing this rule: loading the `torch.save` file in a process without
    torch_xla fails (`NotImplementedError` for the XLA backend) unless `map_location="cpu"` is
    given, while the `xm.save` file loads as CPU tensors.
    """

    code = "XLA501"
    name = "torch-save-device-state"
    message = (
        "`torch.save` of device state copies each XLA tensor to the host separately and "
        "saves XLA tensors; `xm.save` moves everything to the CPU in one transfer"
    )
    hint = "Use xm.save(obj, path) from torch_xla.core.xla_model"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("torch_xla",)  # only XLA code is flagged
    screen = ("save",)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Per function: names bound to device state, and names bound to file objects.
        self._state: list[set[str]] = [set()]
        self._files: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._state.append(set())
        self._files.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._state.pop()
        self._files.pop()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        asname = node.asname
        if asname is not None and isinstance(asname.name, cst.Name) and _opens_file(node.item):
            self._files[-1].add(asname.name.value)

    def leave_Assign(self, node: cst.Assign) -> None:
        device_state = self._holds_device_state(node.value)
        for target in node.targets:
            target_node = target.target
            if isinstance(target_node, cst.Name):
                _mark(self._state[-1], target_node.value, device_state)
                _mark(self._files[-1], target_node.value, _opens_file(node.value))
            elif (
                isinstance(target_node, cst.Subscript)
                and isinstance(target_node.value, cst.Name)
                and device_state
            ):
                self._state[-1].add(target_node.value.value)  # `ckpt["model"] = ...`

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualified(node.func) != TORCH_SAVE or not self.ctx.imports.binds("torch_xla"):
            return
        obj = _argument(node, 0, "obj")
        if obj is None or not self._holds_device_state(obj):
            return
        if xla_ruled_out(self.ctx.ancestors(), self.ctx.imports):
            return  # `if is_xla: xm.save(...) else: torch.save(...)`
        self.report(node, fix=self._xm_save_fix(node))

    # -- helpers ------------------------------------------------------------------------------
    def _holds_device_state(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Dict):
            return any(
                isinstance(e, cst.DictElement) and self._holds_device_state(e.value)
                for e in value.elements
            )
        if type(value) in (cst.Tuple, cst.List):
            return any(self._holds_device_state(e.value) for e in value.elements)
        if isinstance(value, cst.DictComp):
            return self._holds_device_state(value.value)
        if isinstance(value, cst.Name) and value.value in self._state[-1]:
            return True
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "state_dict":
                return self._device_owner(func.value)
            if isinstance(func, cst.Name) and func.value == "dict":
                return any(self._holds_device_state(a.value) for a in value.args)
        # Not a whole module: `xm.save` converts plain tensors only, so a pickled module keeps
        # its XLA parameters either way (re-measured); its `state_dict()` is flagged instead.
        return self.ctx.kind(value) is Kind.TENSOR

    def _device_owner(self, owner: cst.BaseExpression) -> bool:
        """Whether `owner.state_dict()` holds device tensors: not an LR scheduler's, nor a
        module moved to the CPU first."""
        name = get_full_name_for_node(owner) or ""
        if _HOST_STATE_OWNER.search(name.rsplit(".", 1)[-1]):
            return False
        if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Attribute):
            method = owner.func.attr.value
            if method in TO_HOST_METHODS or (method == "to" and moves_to_cpu(owner)):
                return False
        return True

    def _xm_save_fix(self, node: cst.Call) -> NodeFix | None:
        if len(node.args) != 2 or any(a.keyword is not None or a.star for a in node.args):
            return None
        destination = node.args[1].value
        if not self._is_path(destination) or _mentions_process(destination, _PER_PROCESS_WORD):
            return None
        if not self._runs_where_master_does():
            return None
        if self.ctx.import_guards.optional("torch_xla"):
            return None  # `xm.save` would need torch_xla where the file runs without it
        spelling, imports = self.ctx.imports.spell(XM_SAVE, XM_IMPORT, self.ctx.names_in_use)
        return self.fix(f"Save with `{spelling}`", (node.func, spelling), imports=imports)

    def _is_path(self, destination: cst.BaseExpression) -> bool:
        if isinstance(destination, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString):
            return True
        if isinstance(destination, cst.BinaryOperation):
            return True  # `out_dir / "model.pt"`, `prefix + ".pt"`
        if isinstance(destination, cst.Call):
            name = get_full_name_for_node(destination.func) or ""
            return name.rsplit(".", 1)[-1] in {"join", "Path", "joinpath", "format", "str"}
        name = get_full_name_for_node(destination)
        if name is None or (isinstance(destination, cst.Name) and name in self._files[-1]):
            return False
        return _PATH_NAME.search(name.rsplit(".", 1)[-1]) is not None

    def _runs_where_master_does(self) -> bool:
        """No enclosing condition on the process, other than the body of a master check:
        there `xm.save` (which writes on the master only) does what `torch.save` did."""
        child: cst.CSTNode | None = None
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef | cst.Lambda):
                return True
            if (
                isinstance(ancestor, cst.If | cst.IfExp)
                and _mentions_process(ancestor.test)
                and (child is not ancestor.body or not _is_master_check(ancestor.test))
            ):
                return False
            child = ancestor
        return True


def _mark(names: set[str], name: str, present: bool) -> None:
    if present:
        names.add(name)
    else:
        names.discard(name)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if position < len(positional):
        return positional[position].value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def _opens_file(value: cst.BaseExpression) -> bool:
    """`open(path, "wb")`, `io.BytesIO()`, `tempfile.NamedTemporaryFile()`."""
    if not isinstance(value, cst.Call):
        return False
    name = get_full_name_for_node(value.func) or ""
    return name.rsplit(".", 1)[-1] in _FILE_OBJECT_CALLS


def _mentions_process(node: cst.CSTNode, words: re.Pattern[str] = _PROCESS_WORD) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name | cst.SimpleString | cst.FormattedStringText) and (
            words.search(current.value)
        ):
            return True
        stack.extend(children(current))
    return False


def _is_master_check(test: cst.BaseExpression) -> bool:
    """`xm.is_master_ordinal()`, `accelerator.is_main_process`, `rank == 0`,
    `local_rank in (-1, 0)`, joined with `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        left, right = _mentions_process(test.left), _mentions_process(test.right)
        return (not left or _is_master_check(test.left)) and (
            not right or _is_master_check(test.right)
        )
    if isinstance(test, cst.Call):
        test = test.func
    if isinstance(test, cst.Attribute | cst.Name):
        name = get_full_name_for_node(test) or ""
        return _MASTER_CALL.search(name) is not None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        zero = comparison.comparator
        if isinstance(comparison.operator, cst.Equal):
            return isinstance(zero, cst.Integer) and zero.evaluated_value == 0
        if isinstance(comparison.operator, cst.In) and isinstance(zero, cst.Tuple | cst.List):
            values = {
                e.value.evaluated_value if isinstance(e.value, cst.Integer) else None
                for e in zero.elements
            } | {-1 for e in zero.elements if _is_minus_one(e.value)}
            return values - {None, -1} == {0}
    return False


def _is_minus_one(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
        and node.expression.evaluated_value == 1
    )
