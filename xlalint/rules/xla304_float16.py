from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import keyword_argument
from xlalint.analysis.devices import (
    device_string_type,
    in_own_method,
    is_super_call,
    positional_argument,
)
from xlalint.analysis.dtypes import FLOAT16, in_float16_probe, is_dtype_choice, keeps_float16
from xlalint.analysis.guards import local_values
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule
from xlalint.walk import children, descendants, self_attribute

if TYPE_CHECKING:
    from xlalint.context import FileContext

# A function named for converting to float16: `to_half`, `network_to_half`, `to_fp16`.
_CONVERSION_NAME = re.compile(r"(^|_)(half|fp16|float16)$")


def _host_load(value: cst.BaseExpression) -> bool:
    """`torch.load(f, map_location="cpu")`,
    `load_checkpoint(f, map_location=torch.device("cpu"))`: loaded onto the host."""
    if not isinstance(value, cst.Call):
        return False
    name = (get_full_name_for_node(value.func) or "").rsplit(".", 1)[-1]
    location = keyword_argument(value, "map_location")
    if not name.endswith("load") or location is None:
        return False
    target = location.value
    if isinstance(target, cst.Call) and (get_full_name_for_node(target.func) or "").endswith(
        "device"
    ):
        first = positional_argument(target, 0)
        target = first.value if first is not None else target
    return device_string_type(target) == "cpu"


class Float16(Rule):
    """
    ## What it does
    Flags float16 choices: `.half()` calls, and `torch.float16`/`torch.half` used as a
    dtype (call arguments such as `.to(torch.float16)` or `autocast(dtype=torch.float16)`,
    assignments, parameter defaults, returned values, `{"torch_dtype": torch.float16}`).

    Left alone: checks (`x.dtype == torch.float16`, `dtype in (torch.float16,
    torch.bfloat16)`), lookup tables of dtypes, `torch.finfo(torch.float16)`, numpy's
    float16, anything under a CUDA guard (a count of GPUs that needs one, or a flag this
    file keeps False on an XLA host, as XLA303 describes, included; or after
    `if not torch.cuda.is_available(): return`, or where a test for XLA failed), a class's
    own `half()` method, and code under `if x.dtype == torch.float16:` (or the branch of
    `m.half() if x.dtype is torch.float16 else m`), which keeps a dtype chosen elsewhere
    (`softmax(w, dtype=torch.float32).to(torch.float16)`) and is not taken in bfloat16,
    functions that ask whether float16 works (`is_torch_fp16_available_on_device`): trying
    it is how they answer, and `.half()` of a checkpoint this function loaded onto the host
    (`ckpt = torch.load(f, map_location="cpu")`, then `ckpt["model"].half()`): storage.
    So is `.half()` of a deep copy put straight into a record (`{"model":
    deepcopy(model).half()}`, `ckpt["ema"] = deepcopy(ema).half()`): the model that
    computes stays as it was; a halved copy kept in a name and run is reported. A round
    trip (`model.half().float()`, rounding the weights once) leaves the model in float32
    and chooses no float16 math either.
    Also left alone: a function named for the float16 conversion (`to_half`,
    `network_to_fp16`) that the file defines and never calls or hands on, an API whose
    callers in other modules choose float16 (where the file calls it, or hands it on as a
    callback, the conversion is its choice and is reported), and a parameter default that
    only labels a mode, compared and never used otherwise (`def __init__(self, ...,
    dtype=torch.half): self.dtype = dtype`, then only `if self.dtype == torch.half:` in
    the class): the callers choose the dtype. A default that also reaches a cast, a call,
    a return, or an attribute nothing in the class reads (`model.dtype`, read by others)
    is reported.

    ## Why is this bad?
    TPUs compute natively in bfloat16 and float32; float16 is not their native
    reduced-precision type. bfloat16 has float32's exponent range, so it needs no loss
    scaling, and it is what `torch.autocast("xla")` uses on TPUs. float16 code on a TPU gets
    neither the native speed nor the range.

    ## Example
    ```python
    model = model.half()
    with torch.autocast("xla", dtype=torch.float16):
        out = model(x)
    ```

    ## Use instead
    ```python
    model = model.bfloat16()
    with torch.autocast("xla", dtype=torch.bfloat16):
        out = model(x)
    ```

    ## Off by default
    On code its rule was never tuned on (the held-out projects of rounds 11-17 of
    `benchmarks/quality/`, first scores), 14 findings held 5 true costs: the others were
    `.half()` copies of a model or its EMA for a checkpoint (storage format, once per
    epoch), a `half().float()` round trip at set-up, and float16 on paths that run only on
    CUDA (a CUDA-only kernel package, `if use_gpu:`). Whether float16 is wanted is the
    user's choice more often than a cost: turn the rule on when porting a model's dtype.
    A rule wrong more often than right on unseen code stays out of the default set;
    turn it on with `extend-select = ["XLA304"]` (or `--extend-select XLA304`).

    ## Fix safety
    Unsafe: `.half()` becomes `.bfloat16()` and `torch.float16`/`torch.half` become
    `torch.bfloat16` (a name imported from torch becomes `bfloat16`, imported the same way).
    Both are 16-bit types, but bfloat16 keeps 8 bits of mantissa instead of 11, so results
    change in the last digits: `xlalint verify` measures a difference of about 1e-2 on a
    small MLP's outputs. That is the intended trade on a TPU, but a change a person should
    accept, so the fix applies only with `--unsafe-fixes`.

    ## Runtime evidence
    The speed difference shows on a TPU, where bfloat16 is the matrix units' native type;
    on the `PJRT_DEVICE=CPU` device both precisions cost the same executions and compiles,
    so verify reports the output difference there and judges the cost only on a TPU.
    """

    code = "XLA304"
    name = "float16"
    default_enabled = False
    message = "`{text}` chooses float16; TPUs compute natively in bfloat16"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.UNSAFE
    triggers = ("half", "float16")
    screen = ("half", "float16")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._names: Counter[str] | None = None  # how often the file spells each name

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "half"):
            return
        if is_super_call(func.value) or in_own_method(self.ctx.function, "half"):
            return
        qualified = self.ctx.qualified(func) or ""
        if qualified.startswith("numpy.") or qualified == "torch.half":
            return  # `np.half(1.0)` builds a numpy scalar
        if self._left_alone(node) or self._loaded_to_host(func.value):
            return
        if _stored_copy(node, func.value, self.ctx.parent) or _round_trip(
            node, list(self.ctx.ancestors())
        ):
            return
        fix = self.fix("Use bfloat16: `.bfloat16()`", (func.attr, "bfloat16"))
        self.report(func.attr, self.message.format(text=".half()"), end_node=node, fix=fix)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.ctx.qualified(node) not in FLOAT16 or not self._chosen(node):
            return
        fix = self.fix("Use bfloat16: `torch.bfloat16`", (node.attr, "bfloat16"))
        text = self.ctx.module.code_for_node(node)
        self.report(node, self.message.format(text=text), fix=fix)

    def visit_Name(self, node: cst.Name) -> None:
        # `from torch import float16`; attribute parts and import names are not dtype uses
        # and fail `_chosen`'s position test.
        if self.ctx.qualified(node) not in FLOAT16 or not self._chosen(node):
            return
        fix = self.fix(
            "Use bfloat16: `bfloat16`", (node, "bfloat16"), imports=("from torch import bfloat16",)
        )
        self.report(node, self.message.format(text=node.value), fix=fix)

    def _chosen(self, node: cst.BaseExpression) -> bool:
        if not is_dtype_choice(node, self.ctx.ancestors(), self.ctx.imports):
            return False
        if self._default_only_compared(node):
            return False
        return not self._left_alone(node)

    def _default_only_compared(self, node: cst.BaseExpression) -> bool:
        """`def __init__(self, ..., dtype=torch.half): self.dtype = dtype`, then only `if
        self.dtype == torch.half:` in the class: a default that only labels which mode the
        object is in, compared and never used to make or cast a tensor, chooses nothing;
        its callers choose the dtype. A default that reaches a cast (`x.to(self.dtype)`),
        a call or a return is the choice and is reported."""
        param = self.ctx.parent
        if type(param) is not cst.Param or param.default is not node:
            return False
        ancestors = list(self.ctx.ancestors())
        function = next((a for a in ancestors if type(a) is cst.FunctionDef), None)
        if function is None:
            return False
        name = param.name.value
        class_def = next((a for a in ancestors if type(a) is cst.ClassDef), None)
        stored: set[str] = set()
        compared = False
        for use, parent in _uses(function.body, lambda n: type(n) is cst.Name and n.value == name):
            if _names_no_value(use, parent):
                continue
            if _compared(use, parent):
                compared = True
                continue
            attribute = _stored_on_self(use, parent)
            if attribute is None or class_def is None:
                return False
            stored.add(attribute)
        if stored:
            assert class_def is not None
            for use, parent in _uses(
                class_def.body, lambda n: type(n) is cst.Attribute and self_attribute(n) in stored
            ):
                if _compared(use, parent):
                    compared = True
                elif not _is_store(use, parent):
                    return False
        # Never read at all (an attribute others may read: `model.dtype`) is not known to be
        # only compared.
        return compared

    def _uncalled_conversion(self) -> bool:
        """A function named for the float16 conversion (`to_half`, `network_to_half`,
        `convert_to_fp16`) that this file defines and never calls or hands on: an API that
        does what its callers ask, in other files; the choice of float16 is theirs. Used
        here, the conversion is this file's choice and is reported."""
        function = self.ctx.function
        if function is None or _CONVERSION_NAME.search(function.name) is None:
            return False
        if self._names is None:
            # Every name the file spells, with how often: its own `def` is one; a call or
            # a callback handed on (`apply_to_sample(apply_half, sample)`) is another.
            self._names = Counter(
                node.value  # type: ignore[attr-defined]
                for node in descendants(self.ctx.module)
                if type(node) is cst.Name  # type: ignore[comparison-overlap]
            )
        return self._names[function.name] <= 1

    def _loaded_to_host(self, receiver: cst.BaseExpression) -> bool:
        """`ckpt["model"].half()` where `ckpt = torch.load(f, map_location="cpu")` in this
        function: a checkpoint converted on the host for storage, not TPU math."""
        while isinstance(receiver, cst.Subscript | cst.Attribute):
            receiver = receiver.value
        function = next((a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)
        if not isinstance(receiver, cst.Name) or function is None:
            return False
        values = local_values(function, receiver.value)
        return bool(values) and all(_host_load(value) for value in values)

    def _left_alone(self, node: cst.CSTNode) -> bool:
        """Code a TPU host never runs, that runs only on values already in float16, or that
        asks whether float16 works. `node` is the visited node: the path starts there, so
        that a ternary's branch (`m.half() if x.dtype is torch.float16 else m`) counts."""
        if in_float16_probe(self.ctx.function) or self.ctx.runs_without_xla:
            return True
        if self._uncalled_conversion():
            return True
        return keeps_float16((node, *self.ctx.ancestors()), self.ctx.imports)


def _stored_copy(call: cst.Call, receiver: cst.BaseExpression, parent: cst.CSTNode | None) -> bool:
    """`{"model": deepcopy(model).half()}`, `ckpt["ema"] = deepcopy(ema).half()`,
    `torch.save(deepcopy(m).half(), f)`: a deep copy halved to be written, not run; the
    model that computes is not touched. A copy bound to a name may be run, and is not
    this."""
    if not isinstance(receiver, cst.Call):
        return False
    copier = get_full_name_for_node(receiver.func) or ""
    if copier.rsplit(".", 1)[-1] != "deepcopy":
        return False
    if type(parent) is cst.DictElement:
        return parent.value is call
    if type(parent) is cst.Assign:
        return parent.value is call and all(type(t.target) is cst.Subscript for t in parent.targets)
    return False


def _round_trip(call: cst.Call, ancestors: list[cst.CSTNode]) -> bool:
    """`model.half().float()`: float16 and straight back to float32 (rounding the weights
    once); the result computes in float32."""
    if len(ancestors) < 2:
        return False
    attribute, outer = ancestors[0], ancestors[1]
    return (
        type(attribute) is cst.Attribute
        and attribute.value is call
        and attribute.attr.value == "float"
        and type(outer) is cst.Call
        and outer.func is attribute
    )


def _uses(
    root: cst.CSTNode, wanted: Callable[[cst.CSTNode], bool]
) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """Each node under `root` that `wanted` picks, with its parent."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode]] = [(c, root) for c in children(root)]
    while stack:
        node, parent = stack.pop()
        if wanted(node):
            yield node, parent
            continue
        stack.extend((c, node) for c in children(node))


def _names_no_value(use: cst.CSTNode, parent: cst.CSTNode) -> bool:
    """`x.dtype`'s attribute name, `f(dtype=...)`'s keyword: the same word, not the
    parameter."""
    if type(parent) is cst.Attribute:
        return parent.attr is use
    return type(parent) is cst.Arg and parent.keyword is use


def _compared(use: cst.CSTNode, parent: cst.CSTNode) -> bool:
    """`use == torch.half`, `torch.half is use`, `use in (...)`: a comparison operand."""
    return type(parent) is cst.Comparison or type(parent) is cst.ComparisonTarget


def _stored_on_self(use: cst.CSTNode, parent: cst.CSTNode) -> str | None:
    """`self.dtype = use`: the attribute it is stored in."""
    if type(parent) is cst.Assign and parent.value is use and len(parent.targets) == 1:
        return self_attribute(parent.targets[0].target)
    return None


def _is_store(use: cst.CSTNode, parent: cst.CSTNode) -> bool:
    """`self.dtype = ...`: the attribute assigned, not read."""
    return type(parent) is cst.AssignTarget
