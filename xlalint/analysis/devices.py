"""Which values are devices, and how code chooses one.

GPU code names its device in a few shapes: `.cuda()`, the strings `"cuda"`/`"cuda:0"`,
`torch.device("cuda")`, `device="cuda"` arguments, and ladders such as
`"cuda" if torch.cuda.is_available() else "cpu"`. The device rules (family 3) ask here what
a string, call or `if` means for the choice of device, so that "is this a CUDA device
string", "which arguments take a device" and "is this a device ladder" are decided once.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import keyword_argument, parameters
from xlalint.analysis.guards import (
    asks_about_backend_only,
    asks_held_accelerator,
    ends_in,
    implied,
    mentions_cuda,
    path_conditions,
    requires_cuda,
    requires_host_device,
    requires_other_accelerator,
    requires_other_framework,
)
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.xla_api import DEVICE
from xlalint.walk import children, code_children, descendants, last_name, node_types, only_return

__all__ = ["keyword_argument"]  # re-exported: device rules import it from here

if TYPE_CHECKING:
    from xlalint.analysis.hotness import FunctionKey
    from xlalint.context import FileContext

# Device types torch accepts in a device string.
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xla", "xpu", "meta", "hpu", "npu", "mtia"})
# What `torch.accelerator.current_accelerator()` selects: CUDA, MPS, XPU... never XLA
# (measured with torch 2.9 and torch_xla 2.9 imported: `is_available()` is False and
# `current_accelerator()` is `device(type='cuda')`, from torch's CUDA build, on an XLA host).
ACCELERATOR = "accelerator"
ACCELERATOR_CALLS = frozenset({"torch.accelerator.current_accelerator"})
# Probes of the device type that never name XLA (measured on the XLA CPU device with
# torch_xla imported and an XLA tensor made: `torch._utils._get_available_device_type()` is
# None, `torch.accelerator.current_accelerator()` `device(type='cuda')`).
DEVICE_TYPE_PROBES = ACCELERATOR_CALLS | {"torch._utils._get_available_device_type"}
# GPU backends that a port to XLA replaces.
GPU_TYPES = frozenset({"cuda", "mps", ACCELERATOR})
# A device expression whose type is not known statically (`torch.device(args.device)`).
UNKNOWN = "?"

_DEVICE_STRING = re.compile(r"^([a-z]+)(?::\d+)?$")
_DEVICE_NAME = re.compile(r"^(dev|device|devices|device_\w+|\w+_device|\w+_dev)$", re.IGNORECASE)
_NOT_DEVICE_NAMES = frozenset({"device_map", "device_ids", "device_count", "device_id"})
# "xla"/"tpu" as a word or a camel-case part (`use_tpu`, `is_torch_xla_available`,
# `XLAStrategy`, `"TPU"`), not inside another word: `output_type` holds "tpu".
_XLA_WORD = re.compile(r"XLA|TPU|Xla|Tpu|(?<![a-z])(?:xla|tpu)|(?:xla|tpu)(?![a-z])")
# Conventional aliases of torch_xla modules, recognised even when imported elsewhere.
_XLA_ALIASES = frozenset({"xm", "xr", "xmp"})

TORCH_DEVICE = "torch.device"
XLA_DEVICE_CALLS = frozenset(
    {"torch_xla.device", "torch_xla.torch_xla.device", "torch_xla.core.xla_model.xla_device"}
)
# Calls whose first positional argument is a device.
_DEVICE_FIRST_CALLS = frozenset({"torch.set_default_device", "torch.Generator"})

# `torch.cuda` functions that only ask whether CUDA is there: guards and ladders use them.
CUDA_PROBES = frozenset(
    {
        "torch.cuda.is_available",
        "torch.cuda.is_initialized",
        "torch.backends.cudnn.is_available",
        "torch.backends.cuda.is_built",
        "torch.backends.mps.is_available",
        "torch.backends.mps.is_built",
        "torch.accelerator.is_available",
    }
)
AUTOCAST_CALLS = frozenset(
    {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
)
GRAD_SCALER_CALLS = frozenset(
    {"torch.GradScaler", "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"}
)
CUDA_BACKEND_PREFIXES = ("torch.backends.cudnn.", "torch.backends.cuda.")


# -- device strings ---------------------------------------------------------------------------
def probe_with_cuda_fallback(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """`_get_available_device_type() or "cuda"`: a probe of the device type that never
    names XLA, falling back to CUDA. A device choice (XLA305's), not a CUDA string alone."""
    if not (isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or)):
        return False
    left = node.left
    if isinstance(left, cst.Attribute) and left.attr.value == "type":
        left = left.value  # `torch.accelerator.current_accelerator().type or "cuda"`
    return (
        isinstance(left, cst.Call)
        and imports.resolve(left.func) in DEVICE_TYPE_PROBES
        and device_string_type(node.right) == "cuda"
    )


def device_string_type(node: cst.CSTNode) -> str | None:
    """`"cuda"`, `"cuda:1"`, `f"cuda:{rank}"`, `"cuda:" + str(rank)` -> `"cuda"`; `"cpu"`
    -> `"cpu"`; else None.

    Only whole strings count: `"use cuda for speed"` and `"torch.cuda.FloatTensor"` are not
    device strings."""
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        if isinstance(value, str) and (match := _DEVICE_STRING.match(value)):
            return match[1] if match[1] in DEVICE_TYPES else None
        return None
    if type(node) is cst.FormattedString:
        parts = node.parts
        if (
            len(parts) == 2
            and isinstance(parts[0], cst.FormattedStringText)
            and isinstance(parts[1], cst.FormattedStringExpression)
            and parts[0].value.endswith(":")
            and parts[0].value[:-1] in DEVICE_TYPES
        ):
            return parts[0].value[:-1]
    if (
        type(node) is cst.BinaryOperation
        and type(node.operator) is cst.Add
        and type(node.left) is cst.SimpleString
        and not isinstance(node.right, cst.SimpleString | cst.ConcatenatedString)
        and isinstance(prefix := node.left.evaluated_value, str)
        and prefix.endswith(":")
        and prefix[:-1] in DEVICE_TYPES
    ):
        # `"cuda:" + str(gpu_id)`: `cuda:N` built by concatenation.
        return prefix[:-1]
    template = _formatted_template(node)
    if template is not None:
        # `"cuda:{}".format(gpu)`, `"cuda:%d" % gpu`: `cuda:N` spelled the older ways.
        match = _DEVICE_TEMPLATE.fullmatch(template)
        return match[1] if match and match[1] in DEVICE_TYPES else None
    return None


# A device template with one index placeholder: `cuda:{}`, `cuda:{0}`, `cuda:%d`, `cuda:%s`.
_DEVICE_TEMPLATE = re.compile(r"([a-z]+):(?:\{[0-9a-z_]*\}|%[ds])")


def _formatted_template(node: cst.CSTNode) -> str | None:
    """The string of `"...".format(x)` or `"..." % x`, else None."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
        and len(node.args) == 1
    ):
        string = node.func.value
    elif type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
        string = node.left
    else:
        return None
    if not isinstance(string, cst.SimpleString):
        return None
    value = string.evaluated_value
    return value if isinstance(value, str) else None


def is_cuda_string(node: cst.CSTNode) -> bool:
    return device_string_type(node) == "cuda"


def cuda_strings(value: cst.BaseExpression, imports: ImportTable) -> list[cst.BaseExpression]:
    """The CUDA device strings an expression may evaluate to, as chosen by this expression.

    Operands of `or` count (`args.device or "cuda"`). Branches of a ternary that tests CUDA
    (`"cuda" if torch.cuda.is_available() else "cpu"`) or that is a device ladder belong to
    the guard or the ladder and are left out."""
    if is_cuda_string(value):
        return [value]
    if isinstance(value, cst.IfExp):
        if mentions_cuda(value.test, imports):
            return []
        choice = ifexp_device_choice(value, imports)
        if choice is not None and choice.is_ladder:
            return []
        return [*cuda_strings(value.body, imports), *cuda_strings(value.orelse, imports)]
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
        # `args.device or "cuda"`: the fallback is a choice too.
        return [*cuda_strings(value.left, imports), *cuda_strings(value.right, imports)]
    return []


def xla_string_source(node: cst.SimpleString | cst.FormattedString) -> str:
    """`"xla"` spelled with the quotes of `node` (`'cuda:0'` -> `'xla'`)."""
    if isinstance(node, cst.SimpleString):
        return f"{node.prefix}{node.quote}xla{node.quote}"
    return f"{node.end}xla{node.end}"


def xla_device_source(ctx: FileContext) -> tuple[str, tuple[str, ...]]:
    """The expression for the XLA device at the target release (`torch_xla.device()`, or
    `xm.xla_device()` before 2.3), in the file's spelling, and the import it needs."""
    spelling, imports = ctx.spell_api(DEVICE)
    return f"{spelling}()", imports


# -- where a device goes -----------------------------------------------------------------------
def is_device_name(node: cst.CSTNode) -> bool:
    """A name or attribute that holds a device: `device`, `self.device`, `DEVICE`,
    `train_device`, `device_type`; not `device_map` or `device_ids`."""
    name = last_name(node)
    return (
        name is not None
        and name.lower() not in _NOT_DEVICE_NAMES
        and _DEVICE_NAME.match(name) is not None
    )


def sets_default_device(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """A `with` item that makes a device the default for tensor factories:
    `with torch.device("xla"):`, `with self.device:`; not `with torch.device("cpu"):`."""
    if isinstance(node, cst.Call):
        if imports.resolve(node.func) != "torch.device" or not node.args:
            return False
        first = node.args[0].value
        return not (isinstance(first, cst.SimpleString) and first.evaluated_value == "cpu")
    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")
    return is_device_name(node) and not str(name).endswith("_type")


def is_device_option(value: str) -> bool:
    """An argparse option that holds a device: `"--device"`, `"--train-device"`."""
    name = value.lstrip("-").replace("-", "_")
    return bool(name) and name.lower() not in _NOT_DEVICE_NAMES and bool(_DEVICE_NAME.match(name))


def positional_argument(call: cst.Call, index: int) -> cst.Arg | None:
    """The `index`-th positional argument (not `*args`), or None."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index] if index < len(positional) else None


def torch_device_type_argument(call: cst.Call) -> cst.Arg | None:
    """The type argument of `torch.device("cuda", 0)` / `torch.device(type="cuda")`."""
    return positional_argument(call, 0) or keyword_argument(call, "type")


def device_arguments(call: cst.Call, imports: ImportTable) -> list[cst.Arg]:
    """Arguments of `call` that take the device to work on: `device=` keywords, the first
    argument of `.to(...)`, `torch.set_default_device(d)` and `torch.Generator(d)`.

    `torch.device(...)` itself, `map_location=` and the CUDA API calls (`torch.cuda.*`,
    CUDA autocast, GradScaler) are not included: callers treat them on their own."""
    qualified = imports.resolve(call.func)
    if qualified == TORCH_DEVICE or cuda_api_kind(call, imports) is not None:
        return []
    found = []
    if keyword := keyword_argument(call, "device"):
        found.append(keyword)
    first_is_device = qualified in _DEVICE_FIRST_CALLS or (
        isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
    )
    if first_is_device and (first := positional_argument(call, 0)):
        found.append(first)
    return found


# -- CUDA runtime API ------------------------------------------------------------------------
def cuda_api_kind(call: cst.Call, imports: ImportTable) -> str | None:
    """What kind of CUDA-only API a call is: "autocast", "scaler", "backend", "runtime", or
    None (not a CUDA API, or a probe such as `torch.cuda.is_available()`)."""
    qualified = imports.resolve(call.func)
    if qualified is None or qualified in CUDA_PROBES:
        return None
    if qualified.startswith("torch.cuda.amp."):
        # The old spelling of `torch.amp` for CUDA: its scaler and autocast are CUDA's;
        # the rest is Python that needs no CUDA runtime (`custom_fwd`, the scaler
        # module's `_refresh_per_optimizer_state`, which builds a dict).
        tail = qualified.rsplit(".", 1)[-1]
        if tail == "GradScaler":
            return "scaler"
        return "autocast" if tail == "autocast" else None
    if qualified.startswith("torch.cuda."):
        return "runtime"
    if qualified.startswith(CUDA_BACKEND_PREFIXES):
        return "backend"
    if qualified in GRAD_SCALER_CALLS:
        device = positional_argument(call, 0) or keyword_argument(call, "device")
        if device is not None and isinstance(device.value, cst.SimpleString | cst.FormattedString):
            return "scaler" if is_cuda_string(device.value) else None
        return "scaler"  # the default device of torch.amp.GradScaler is "cuda"
    if qualified in AUTOCAST_CALLS:
        device = positional_argument(call, 0) or keyword_argument(call, "device_type")
        if device is not None and is_cuda_string(device.value):
            return "autocast"
    return None


_CUDA_TENSOR_TYPE = re.compile(r"^torch\.cuda\.[A-Z]\w*Tensor$")
_TENSOR_TYPE_SETTERS = frozenset({"torch.set_default_tensor_type"})


def is_cuda_tensor_type(node: cst.CSTNode, imports: ImportTable) -> bool:
    """`torch.cuda.FloatTensor` or the string `"torch.cuda.FloatTensor"`."""
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return isinstance(value, str) and _CUDA_TENSOR_TYPE.match(value) is not None
    if type(node) in (cst.Attribute, cst.Name):
        return _CUDA_TENSOR_TYPE.match(imports.resolve(node) or "") is not None
    return False


def converts_to_cuda_tensor_type(call: cst.Call, imports: ImportTable) -> bool:
    """`x.type(torch.cuda.FloatTensor)`, `torch.set_default_tensor_type("torch.cuda.FloatTensor")`:
    legacy CUDA tensor types used to convert or to set the default."""
    first = positional_argument(call, 0) or keyword_argument(call, "dtype")
    if first is None or not is_cuda_tensor_type(first.value, imports):
        return False
    func = call.func
    if imports.resolve(func) in _TENSOR_TYPE_SETTERS:
        return True
    return isinstance(func, cst.Attribute) and func.attr.value == "type"


# -- device ladders ---------------------------------------------------------------------------
# A CUDA device index: `torch.device(torch.cuda.current_device())` is a CUDA device.
_CURRENT_CUDA_DEVICE = "torch.cuda.current_device"
# A process's rank or a GPU's number (`rank`, `local_rank`, `args.local_rank`, `gpu`,
# `gpu_id`, `gpu_idx`): an integer wherever it names a device.
_GPU_NUMBER = re.compile(r"^(?:\w+_)?rank$|^gpu(?:_?(?:id|idx|index|num))?$", re.IGNORECASE)


def _gpu_number(node: cst.BaseExpression) -> bool:
    """An integer that `torch.device` takes for a CUDA index: a literal (`0`), `int(...)`,
    or a name or attribute for a rank or a GPU's number (`rank`, `args.local_rank`)."""
    if type(node) is cst.Integer:
        return True
    if type(node) is cst.Call:
        return type(node.func) is cst.Name and node.func.value == "int"
    if type(node) in (cst.Name, cst.Attribute):
        last = (get_full_name_for_node(node) or "").rsplit(".", 1)[-1]
        return _GPU_NUMBER.match(last) is not None
    return False


def device_types(node: cst.BaseExpression, imports: ImportTable) -> frozenset[str] | None:
    """The device types an expression selects, or None if it is not a device expression.

    `"cuda:0"` -> {cuda}; `torch.device("cpu")` -> {cpu}; `torch_xla.device()` -> {xla};
    `torch.device(rank)`, `torch.device(0)` -> {cuda}; `torch.device(name)` -> {?};
    `"cuda" if c else other` -> {cuda, ?}."""
    if (kind := device_string_type(node)) is not None:
        return frozenset({kind})
    if isinstance(node, cst.Call):
        qualified = imports.resolve(node.func)
        if qualified in XLA_DEVICE_CALLS:
            return frozenset({"xla"})
        if qualified in ACCELERATOR_CALLS:
            return frozenset({ACCELERATOR})
        if qualified == TORCH_DEVICE:
            arg = torch_device_type_argument(node)
            if (
                arg is not None
                and isinstance(arg.value, cst.Call)
                and imports.resolve(arg.value.func) == _CURRENT_CUDA_DEVICE
            ):
                return frozenset({"cuda"})  # `torch.device(torch.cuda.current_device())`
            if (
                arg is not None
                and arg.keyword is None
                and len(node.args) == 1
                and _gpu_number(arg.value)
            ):
                # `torch.device(rank)`: an integer alone is a CUDA index (`cuda:<rank>`,
                # also with torch_xla imported: measured, torch 2.9).
                return frozenset({"cuda"})
            inner = device_types(arg.value, imports) if arg is not None else None
            return inner or frozenset({UNKNOWN})
        return None
    if isinstance(node, cst.IfExp):
        body = device_types(node.body, imports)
        orelse = device_types(node.orelse, imports)
        if body is None and orelse is None:
            return None
        return (body or frozenset({UNKNOWN})) | (orelse or frozenset({UNKNOWN}))
    return None


def _leaves(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Names and string pieces under `node` (a plain walk: `m.findall` costs far more)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) in (cst.Name, cst.SimpleString, cst.FormattedStringText):
            yield current
        else:
            stack.extend(children(current))


def probes_gpu(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether a condition asks about CUDA, MPS (`torch.backends.mps.is_available()`) or
    torch's current accelerator (`torch.accelerator.is_available()`, `use_accel`); not one
    that only asks whether the process group is NCCL (`guards.asks_about_backend_only`)."""
    for node in _leaves(test):
        if isinstance(node, cst.Name) and "mps" in node.value.lower():
            return True
        if isinstance(node, cst.SimpleString) and device_string_type(node) == "mps":
            return True
    return mentions_cuda(test, imports) and not asks_about_backend_only(test, imports)


def names_xla(text: str) -> bool:
    """`use_tpu`, `is_xla`, `TPUStrategy`, `tpu_data_loader`: XLA or TPU as a word or a
    part of a name (not inside another word: `_step_output`). `_XLA_WORD.search(text)`,
    by `str.find`: the expression's scan of a module that names neither took 10-16 ms
    for 60-120 kB (module_steps and module_reads ask it of every module they read)."""
    if "XLA" in text or "TPU" in text or "Xla" in text or "Tpu" in text:
        return True
    for word in ("xla", "tpu"):
        at = text.find(word)
        while at != -1:
            before, after = text[at - 1 : at] if at else "", text[at + 3 : at + 4]
            if not "a" <= before <= "z" or not "a" <= after <= "z":
                return True
            at = text.find(word, at + 1)
    return False


def mentions_xla(node: cst.CSTNode, imports: ImportTable, *, modules: bool = True) -> bool:
    """Whether code mentions XLA or TPUs: `torch_xla`, `xm.xla_device()`, `xr.`, `"xla"`,
    `use_tpu`, `PJRT_DEVICE == "TPU"`. With `modules=False`, torch_xla's modules do not
    count: a condition that calls into them (`xm.is_master_ordinal()`) presupposes XLA
    rather than asking whether it is in use."""
    for found in _leaves(node):
        if isinstance(found, cst.Name):
            qualified = imports.resolve(found)
            module = found.value in _XLA_ALIASES or (
                qualified is not None and qualified.startswith("torch_xla")
            )
            if module:
                if modules:
                    return True
            elif _XLA_WORD.search(found.value):
                return True
        elif isinstance(found, cst.SimpleString):
            value = found.evaluated_value
            if isinstance(value, str) and _XLA_WORD.search(value):
                return True
        elif isinstance(found, cst.FormattedStringText) and _XLA_WORD.search(found.value):
            return True
    return False


def runs_without_xla(
    path: Iterable[cst.CSTNode], imports: ImportTable, *, host_tests: bool = True
) -> bool:
    """Whether the code on `path` (a node and its ancestors, innermost first) runs only
    where XLA is not in use: on CUDA machines (after `if not torch.cuda.is_available():
    return` or `assert device.type == "cuda"`, under `if use_cuda:`), under a test for
    another accelerator (`if device.type == "mps":`) or framework (`elif backend_name ==
    "paddle":` in a library written for several) or where a test for XLA failed (`if
    is_xla: xm.save(...) else: <here>`). Device rules leave such code alone: a TPU host
    never runs it. `host_tests=False`: a test that a value is on the CPU (`if
    x.device.type == "cpu":`) is no guard, as for a move to CUDA (`param.cuda() if
    param.device.type == "cpu" else param`): an XLA host has host tensors too, and that
    branch is the move it must make to its own device."""
    nodes = list(path)
    return (
        requires_cuda(nodes, imports)
        or requires_other_accelerator(nodes)
        or requires_other_framework(nodes)
        or (host_tests and requires_host_device(nodes))
        or xla_ruled_out(nodes, imports)
    )


_EXAMINING_CALLS = frozenset(
    {"str", "repr", "getattr", "hasattr", "isinstance", "print", "len", "format"}
)
_QUERY_CALL = re.compile(r"^_*(get|is|has)_")
_EXAMINED_ATTRIBUTES = frozenset({"type", "index"})


def only_examined(function: cst.FunctionDef, name: str, imports: ImportTable) -> bool:
    """Whether `function` only examines its parameter `name` (at least once) and places
    nothing with it: comparisons (`device == "cuda"`), `device.type`, `str(device)`,
    `getattr(device, "type", ...)`, queries (`get_backend(device).device_count()`, not a
    getter handed other values beside it: `get_model(cfg, device)` builds there) and the
    device type of an autocast or scaler (XLA303's). A `"cuda"` default of such a
    parameter picks no device: `build_dataloader(..., device="cuda")` only decides
    `pin_memory`. Any other use (`.to(device)`, `device=device`, passed on, stored,
    returned) counts as placing."""
    uses = 0
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(function.body, ())]
    while stack:
        node, above = stack.pop()
        kind = type(node)  # exact types: `isinstance` on libcst's classes runs ABCMeta's check
        if kind is cst.FunctionDef or kind is cst.Lambda or kind is cst.ClassDef:
            continue  # a nested scope may rebind the name
        if kind is cst.Name and node.value == name:  # type: ignore[attr-defined]
            parent = above[-1] if above else None
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            if any(isinstance(a, cst.AssignTarget) for a in above[-3:]):
                continue  # rebound: the uses after it are looked at as well
            if not _examines(node, above, imports):
                return False
            uses += 1
            continue
        # Only the three nearest ancestors are ever looked at: a longer path would cost a
        # copy of every ancestor per node.
        inner = (*above[-2:], node)
        stack.extend((child, inner) for child in code_children(node))
    return uses > 0


def _examines(node: cst.Name, above: tuple[cst.CSTNode, ...], imports: ImportTable) -> bool:
    parent = above[-1] if above else None
    if isinstance(parent, cst.Comparison | cst.ComparisonTarget | cst.FormattedStringExpression):
        return True
    if isinstance(parent, cst.Attribute):
        return parent.value is node and parent.attr.value in _EXAMINED_ATTRIBUTES
    call = above[-2] if len(above) >= 2 else None
    if isinstance(parent, cst.Arg) and isinstance(call, cst.Call):
        callee = (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]
        qualified = imports.resolve(call.func)
        return (
            callee in _EXAMINING_CALLS
            or (_QUERY_CALL.match(callee) is not None and _asks_of(call, callee))
            or qualified in AUTOCAST_CALLS
            or qualified in GRAD_SCALER_CALLS
        )
    return False


def _asks_of(call: cst.Call, callee: str) -> bool:
    """A query's call asks about what it is handed: `is_*`/`has_*` answer yes or no, and
    `get_*` handed the device alone (`get_backend(device)`); a `get_*` handed the device
    among other values (`get_problem(rank, world_size, batch_size, device, model_name)`,
    `get_model(cfg, device)`) builds what it gets there, which places it."""
    return not callee.lstrip("_").startswith("get_") or len(call.args) == 1


def creates_xla_device(node: cst.CSTNode, imports: ImportTable) -> bool:
    """Whether code under `node` creates the XLA device: `xm.xla_device()`,
    `torch_xla.device()`, `torch.device("xla")`. A bare `"xla"` does not count: out of a
    device position it is as often a backend or strategy name."""
    return any(
        isinstance(found, cst.Call) and "xla" in (device_types(found, imports) or ())
        for found in descendants(node)
    )


def xla_ruled_out(path: Iterable[cst.CSTNode], imports: ImportTable) -> bool:
    """Whether the code on `path` (a node and its ancestors, innermost first) runs only
    where a test for XLA failed, within its function: in the `else` of
    `if device == "xla":`, under `if not use_tpu:`, or after
    `if is_xla: return XLAPrecision()`. Its author handles XLA elsewhere."""
    return any(
        implied(test, holds, lambda t: mentions_xla(t, imports, modules=False)) is False
        for test, holds in path_conditions(path)
    )


@dataclass(frozen=True)
class DeviceChoice:
    """An `if` chain or ternary whose branches select devices."""

    node: cst.If | cst.IfExp
    types: frozenset[str]  # device types the branches select (UNKNOWN where not literal)
    # A condition asks about CUDA or MPS. Only computed (else False) when the selected types
    # alone do not decide `is_ladder`: no GPU type selected, or a ternary with one known type.
    probes_gpu: bool
    returns: bool  # a branch returns the device (a helper function's ladder)
    remaps: bool  # replaces the value its test examines; see `_remaps`
    # An `if` chain with an `else`: every path selects. Without one, a chain that selects
    # only devices of unknown type under a GPU test (`if self.cuda and pipelined:
    # self.last_device = torch.device(cfg.devices[-1])`) configures the GPU path and
    # chooses nothing against another device.
    has_else: bool = True

    @property
    def is_ladder(self) -> bool:
        """Chooses a GPU backend against something else: a device ladder.

        `"cuda:0" if rank == 0 else "cuda:1"` chooses between two CUDA devices and is not a
        ladder; an `if` that sets a CUDA device is one (its alternative is the value before),
        unless it only remaps the value its test examines."""
        known = self.types - {UNKNOWN}
        if self.remaps or not (known & GPU_TYPES or self.probes_gpu):
            return False
        if isinstance(self.node, cst.IfExp):
            return len(known) >= 2 or self.probes_gpu
        return bool(known) or self.has_else


def ifexp_device_choice(node: cst.IfExp, imports: ImportTable) -> DeviceChoice | None:
    if asks_about_backend_only(node.test, imports):
        return None  # `torch.device("cuda") if backend == "nccl" else ...`: no choice
    types = device_types(node, imports)
    if types is None:
        return None
    known = types - {UNKNOWN}
    # The conditions only matter when the selected types do not settle `is_ladder`.
    probes = (not known & GPU_TYPES or len(known) < 2) and any(
        probes_gpu(test, imports) for test in _ifexp_tests(node)
    )
    # `"cpu" if device == "mps" else device`: a branch is the very name the test examines,
    # and every value the test does not list (an XLA device included) passes through.
    tested = _examined(node.test, imports)
    catch_all = _catch_all_branch(node)
    kept = [
        branch
        for branch in (node.body, node.orelse)
        if isinstance(branch, cst.Name | cst.Attribute) and get_full_name_for_node(branch) in tested
    ]
    remaps = any(catch_all is None or branch is catch_all for branch in kept)
    if kept and not remaps:
        # `t if t in {"npu", "xpu"} else "cuda"`: the listed types are kept, every other
        # value (XLA's too) becomes the catch-all: a ladder over all of them.
        listed = {
            kind
            for found in descendants(node.test)
            if isinstance(found, cst.SimpleString)
            and (kind := device_string_type(found)) is not None
        }
        types = frozenset(types | listed)
        probes = probes or bool(listed & GPU_TYPES)
    return DeviceChoice(node, types, probes, returns=False, remaps=remaps)


_LISTING = (cst.Equal, cst.In, cst.Is)
_EXCLUDING = (cst.NotEqual, cst.NotIn, cst.IsNot)


def _catch_all_branch(node: cst.IfExp) -> cst.BaseExpression | None:
    """The branch of `a if <test> else b` taken for every value its one comparison does not
    list: `b` for `x == "mps"`/`x in {...}`, `a` for `x != "mps"`; None for other tests."""
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    operator = test.comparisons[0].operator
    if isinstance(operator, _LISTING):
        return node.orelse
    if isinstance(operator, _EXCLUDING):
        return node.body
    return None


def device_helpers(module: cst.Module, imports: ImportTable) -> dict[str, frozenset[str]]:
    """Module-level functions whose body is one `return` of a device expression, by name,
    with the device types they return: `def gpu(i=0): return torch.device(f"cuda:{i}")`.
    A ladder that returns `gpu(i)` or `cpu()` chooses what those return."""
    found: dict[str, frozenset[str]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef) or statement.asynchronous:
            continue
        returned = only_return(statement)
        if returned is None:
            continue
        value = returned.value
        types = device_types(value, imports) if value is not None else None
        if types and types - {UNKNOWN}:
            found[statement.name.value] = types
    return found


def helper_device_types(
    value: cst.BaseExpression, helpers: dict[str, frozenset[str]] | None
) -> frozenset[str] | None:
    """The device types a call to a same-module device helper returns (`gpu(i)`)."""
    if helpers and isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        return helpers.get(value.func.value)
    return None


def _holds_a_ladder(value: cst.IfExp, imports: ImportTable) -> bool:
    """The conditional expression is a device ladder, or holds one in its branches."""
    stack: list[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if type(node) is cst.IfExp:
            choice = ifexp_device_choice(node, imports)  # type: ignore[arg-type]
            if choice is not None and choice.is_ladder:
                return True
        stack.extend(children(node))
    return False


def listed_device_types(value: cst.BaseExpression, imports: ImportTable) -> frozenset[str] | None:
    """The device types a list of devices selects, where a branch of a chain picks the
    devices to use (`if torch.cuda.is_available(): return [f"cuda:{i}" for i in
    range(torch.cuda.device_count())]` ... `else: return ["cpu"]`): every element of a
    literal list or tuple, or the element of a comprehension, a device expression."""
    if isinstance(value, cst.ListComp):
        return device_types(value.elt, imports)
    if not isinstance(value, cst.List | cst.Tuple) or not value.elements:
        return None
    types: set[str] = set()
    for element in value.elements:
        if isinstance(element, cst.StarredElement):
            return None
        selected = device_types(element.value, imports)
        if not selected:
            return None
        types |= selected
    return frozenset(types)


def if_device_choice(
    node: cst.If, imports: ImportTable, helpers: dict[str, frozenset[str]] | None = None
) -> DeviceChoice | None:
    """The device choice made by an `if`/`elif`/`else` chain, if any branch assigns or
    returns a device expression (or a call of one of `helpers`, see `device_helpers`). A
    nested `if` statement is a choice of its own and is not looked into. A chain whose
    every test asks only whether the process group is NCCL (`if dist.get_backend() ==
    dist.Backend.NCCL: return torch.device("cuda")`) chooses no device: it gives the
    collectives what NCCL needs, on CUDA hosts only (`guards.asks_about_backend_only`)."""
    tests, blocks = chain(node)
    if tests and all(asks_about_backend_only(test, imports) for test in tests):
        return None
    # Lists of devices only in a chain that asks what the host has (a list built where a
    # parameter is left out, `if devices is None:`, is the caller's choice and spells its
    # CUDA string itself: XLA302's).
    lists = any(probes_gpu(test, imports) for test in tests)
    types: set[str] = set()
    returns = False
    last_selecting = -1  # index in `blocks` of the last branch that selects a device
    for index, block in enumerate(blocks):
        for value, targets in _selections(block):
            if isinstance(value, cst.IfExp) and (
                len(blocks) == 1 or _holds_a_ladder(value, imports)
            ):
                # `if __name__ == "__main__": dev = "cuda" if ... else "cpu"`: the `if`
                # only guards the statement; the conditional expression is the choice. In
                # one branch of a longer chain, a ladder of its own is its own choice, also
                # inside a default filled in for a parameter left out (realesrgan's
                # `torch.device("cuda" if ... else "cpu") if device is None else device`).
                continue
            selected = (
                device_types(value, imports)
                or helper_device_types(value, helpers)
                or (lists and listed_device_types(value, imports))
                or None
            )
            if selected:
                types |= selected
                returns = returns or targets is None
                last_selecting = index
    if not types:
        return _placement_choice(node, tests, blocks, imports)
    # The conditions only matter when no branch selects a GPU device. A test after the last
    # branch that selects one (`elif gen == "cuda": raise ...`) cannot change the choice.
    probes = not types & GPU_TYPES and any(
        probes_gpu(test, imports) for test in tests[: last_selecting + 1]
    )
    has_else = len(blocks) > len(tests) or returns  # code after a returning branch is its else
    remaps = (
        _else_passes_through(tests, blocks, imports)
        if len(blocks) > len(tests)
        else not has_else and _remaps(tests, blocks, imports)
    )
    return DeviceChoice(node, frozenset(types), probes, returns, remaps, has_else)


def _placement_choice(
    node: cst.If,
    tests: list[cst.BaseExpression],
    blocks: list[cst.BaseSuite],
    imports: ImportTable,
) -> DeviceChoice | None:
    """A chain whose branches move values to different devices rather than naming one
    (`if is_xpu_available(): model.to("xpu:0")` / `elif torch.cuda.is_available():
    model.to("cuda")`; `if self.device == "cuda": x = x.cuda()` / `elif self.device ==
    "cpu": x = x.cpu()`): where two branches place on two known types, one a GPU, the
    chain chooses between them. One guarded move (`if torch.cuda.is_available(): model =
    model.cuda()`) chooses nothing against another device: the value stays where it was."""
    placed = [_placed_types(block, imports) for block in blocks]
    types = frozenset().union(*placed) - {UNKNOWN}
    if sum(1 for p in placed if p - {UNKNOWN}) < 2 or len(types) < 2 or not types & GPU_TYPES:
        return None
    has_else = len(blocks) > len(tests)
    return DeviceChoice(node, types, False, False, False, has_else)


def _placed_types(block: cst.CSTNode, imports: ImportTable) -> frozenset[str]:
    """The device types a block's own statements move values to: `x.cuda()`, `x.cpu()`,
    `x.to("xpu:0")`, as a statement or an assigned value (not in nested `if`s, loops,
    functions or classes)."""
    found: set[str] = set()
    for child in children(block):
        if type(child) in (cst.If, cst.FunctionDef, cst.ClassDef, cst.For, cst.While):
            continue
        value = child.value if type(child) in (cst.Expr, cst.Assign) else None  # type: ignore[attr-defined]
        if type(value) is cst.Call and type(value.func) is cst.Attribute:  # type: ignore[attr-defined]
            method = value.func.attr.value  # type: ignore[attr-defined]
            if method in ("cuda", "cpu"):
                found.add(method)
            elif method == "to" and value.args and value.args[0].keyword is None:  # type: ignore[attr-defined]
                found |= device_types(value.args[0].value, imports) or {UNKNOWN}  # type: ignore[attr-defined]
        elif type(child) in _BLOCK_TYPES:
            found |= _placed_types(child, imports)
    return frozenset(found)


def defers_to_function(
    node: cst.If,
    imports: ImportTable,
    functions: frozenset[str],
    helpers: dict[str, frozenset[str]] | None,
) -> bool:
    """Whether every branch of the chain that selects something other than the CPU takes
    its device from a function of this module that is no one-line device helper
    (`if defaults.use_cuda == False: device = "cpu"` / `elif device is None: device =
    default_device()`): that function decides between the GPU and the CPU, and its own
    ladder, if any, is the choice; this chain only forces the CPU."""
    deferred = False
    for block in chain(node)[1]:
        for value, _ in _selections(block):
            if device_types(value, imports) == frozenset({"cpu"}):
                continue
            if (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Name)
                and value.func.value in functions
                and imports.resolve(value.func) is None
                and not (helpers and value.func.value in helpers)
            ):
                deferred = True
                continue
            if device_types(value, imports) is not None:
                return False
    return deferred


def has_silent_branch(node: cst.If, imports: ImportTable) -> bool:
    """Whether a chain ending in `else` has a branch that selects no device (`if not
    cuda and not mps: print("using CPU")`): there the value set before the chain stands."""
    tests, blocks = chain(node)
    if len(blocks) == len(tests):
        return False  # no `else`
    return any(
        not any(device_types(value, imports) for value, _ in _selections(block)) for block in blocks
    )


def chain(node: cst.If) -> tuple[list[cst.BaseExpression], list[cst.BaseSuite]]:
    """The tests of an `if`/`elif` chain and its blocks (one more block for an `else`)."""
    tests: list[cst.BaseExpression] = []
    blocks: list[cst.BaseSuite] = []
    current = node
    while True:
        tests.append(current.test)
        blocks.append(current.body)
        orelse = current.orelse
        if isinstance(orelse, cst.If):
            current = orelse
            continue
        if isinstance(orelse, cst.Else):
            blocks.append(orelse.body)
        return tests, blocks


def _remaps(
    tests: list[cst.BaseExpression], blocks: list[cst.BaseSuite], imports: ImportTable
) -> bool:
    """An `if` chain without `else` whose branches only reassign the value their tests
    examine: `if device_map == "cuda": device_map = f"cuda:{rank}"`,
    `if device_type == "mps": device_type = "cpu"`. Every other value, an XLA device
    included, passes through as given."""
    examined: set[str] = set()
    remapped = False
    for test, block in zip(tests, blocks, strict=True):
        examined |= _examined(test, imports)  # a branch runs after the tests before it
        for value, targets in _selections(block):
            if device_types(value, imports) is None:
                continue
            if targets is None or any(get_full_name_for_node(t) not in examined for t in targets):
                return False  # returned, or stored elsewhere: a choice
            remapped = True
    return remapped


def _else_passes_through(
    tests: list[cst.BaseExpression], blocks: list[cst.BaseSuite], imports: ImportTable
) -> bool:
    """A chain whose tests list values of what they examine (`device == "cuda"`, `device in
    {...}`) and whose `else` sets the names the branches set to that value itself: `if
    device == "cuda": device_vad = f"cuda:{device_index}"` / `else: device_vad = device`,
    the statement form of `f"cuda:{i}" if device == "cuda" else device`. A test may narrow
    its listing with `and` (`if self.device.type == "mps" and do_3D: device =
    torch.device("cpu")` / `else: device = self.device`): it is taken for listed values
    only. Every value the tests do not list, an XLA device included, passes through as
    given."""
    examined: set[str] = set()
    for test in tests:
        listing = _listing(test)
        if listing is None:
            return False
        examined |= _examined(listing, imports)
    kept: set[str] = set()
    for value, targets in _selections(blocks[-1]):
        name = get_full_name_for_node(value) if type(value) in (cst.Name, cst.Attribute) else None
        if targets is None or name is None or name not in examined:
            return False  # the `else` chooses something of its own
        kept |= {get_full_name_for_node(t) or "" for t in targets}
    if not kept:
        return False
    for block in blocks[:-1]:
        for value, targets in _selections(block):
            if device_types(value, imports) is None:
                continue
            if targets is None or any(get_full_name_for_node(t) not in kept for t in targets):
                return False  # returned, or stored elsewhere: a choice
    return True


def _listing(test: cst.BaseExpression) -> cst.Comparison | None:
    """The comparison that lists values a test is taken for: `device == "cuda"`, `device in
    {...}`, or such a comparison as a side of an `and` (the other side only narrows it)."""
    if (
        type(test) is cst.Comparison
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, _LISTING)
    ):
        return test
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _listing(test.left) or _listing(test.right)
    return None


def passes_through(node: cst.If, following: cst.CSTNode | None, imports: ImportTable) -> bool:
    """An `if` without `else` that returns a device for some values of what its test
    examines, followed by returning that value itself: `if device.type == "cuda" and
    device.index is None: return torch.device("cuda", torch.cuda.current_device())`, then
    `return device`. Every other device, an XLA one included, comes back as given."""
    if node.orelse is not None or not isinstance(following, cst.SimpleStatementLine):
        return False
    statement = following.body[0] if following.body else None
    if not isinstance(statement, cst.Return) or statement.value is None:
        return False
    returned = get_full_name_for_node(statement.value)
    return returned is not None and returned in _examined(node.test, imports)


def _examined(node: cst.CSTNode, imports: ImportTable) -> set[str]:
    """Names and attribute chains a condition reads (`device`, `args.device`), without
    imported modules (`torch.cuda`) and a bare `self`, which every method shares."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name | cst.Attribute):
            name = get_full_name_for_node(current)
            if name not in (None, "self", "cls") and imports.resolve(current) is None:
                found.add(name)  # type: ignore[arg-type]
            if isinstance(current, cst.Attribute):
                stack.append(current.value)  # `.attr` alone names nothing
        else:
            stack.extend(children(current))
    return found


class DeviceChoices:
    """`if_device_choice`/`ifexp_device_choice` for one file, each node computed once.

    Rules ask about every enclosing `if` of a node; without the memo, nested code would pay
    for the same analysis once per descendant."""

    def __init__(
        self, imports: ImportTable, helpers: dict[str, frozenset[str]] | None = None
    ) -> None:
        self.imports = imports
        self.helpers = helpers  # same-module functions that return a device
        # Keyed by id(node); the node is kept so that its id cannot be reused.
        self._memo: dict[int, tuple[cst.CSTNode, DeviceChoice | None]] = {}

    def of(self, node: cst.If | cst.IfExp) -> DeviceChoice | None:
        cached = self._memo.get(id(node))
        if cached is not None and cached[0] is node:
            return cached[1]
        if isinstance(node, cst.If):
            choice = if_device_choice(node, self.imports, self.helpers)
        else:
            choice = ifexp_device_choice(node, self.imports)
        self._memo[id(node)] = (node, choice)
        return choice

    def is_ladder(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, cst.If | cst.IfExp):
            return False
        choice = self.of(node)
        return choice is not None and choice.is_ladder

    def in_ladder(self, ancestors: Iterable[cst.CSTNode], *, ternaries: bool = False) -> bool:
        """Whether any of `ancestors` is an `if` device ladder (or a ternary one), not one
        that keeps the caller's device (`keeps_handed_device`)."""
        kinds = (cst.If, cst.IfExp) if ternaries else (cst.If,)
        path = list(ancestors)
        return any(
            isinstance(a, kinds)
            and self.is_ladder(a)
            and not (isinstance(a, cst.If) and self.keeps_handed_device(a, path[index + 1 :]))
            for index, a in enumerate(path)
        )

    def keeps_handed_device(self, node: cst.If, ancestors: Iterable[cst.CSTNode]) -> bool:
        """An `if` chain with a branch that selects no device (an `else` that only prints,
        or no `else`), where every name the chain sets holds, before it, the device the
        caller handed in: a parameter of the function, directly or as the block last
        assigned it (`self.device = device`, then `if self.is_ddp: self.device =
        torch.device("cuda", rank)` / `else: print(...)`). On an XLA host that branch keeps
        the caller's XLA device: the chain is no ladder without XLA, and a branch that sets
        CUDA whatever was handed in chooses a CUDA device on its path (XLA302's finding).
        Not where a test asks about the hardware (`if not torch.cuda.is_available():
        device = "cpu"`): an XLA host takes the branch that selects. `ancestors`: of
        `node`, innermost first."""
        tests, blocks = chain(node)
        if len(blocks) > len(tests) and not has_silent_branch(node, self.imports):
            return False
        if any(probes_gpu(test, self.imports) for test in tests):
            # `if not torch.cuda.is_available(): device = "cpu"`: the hardware decides, and
            # on an XLA host the branch that selects runs, not the one that keeps.
            return False
        targets = self._device_targets(blocks)
        if targets is None:
            return False  # a branch returns a device: the function's choice
        path = iter(ancestors)
        block = next(path, None)
        function = next((a for a in path if type(a) is cst.FunctionDef), None)
        if not targets or function is None or type(block) is not cst.IndentedBlock:
            return False
        if len(blocks) == len(tests):
            # No `else`, and nothing else in the function (for `self.` attributes, the
            # class) sets those names: the chain chooses no alternative device
            # (rl-games' `if self.multi_gpu: self.device_name = "cuda:" + str(rank)`); the
            # CUDA device its branch forces on that path is XLA302's finding.
            class_def = next((a for a in path if type(a) is cst.ClassDef), None)
            if all(
                _set_only_in(target, node, class_def if target.startswith("self.") else function)
                for target in targets
            ):
                return True
        handed = {p.name.value for p in parameters(function)}
        before = list(itertools.takewhile(lambda s: s is not node, block.body))  # type: ignore[attr-defined]
        return all(_holds_parameter(target, before, handed) for target in targets)

    def follows_placement(self, node: cst.If, ancestors: Iterable[cst.CSTNode]) -> bool:
        """An `if` chain without `else` (or with one that only raises) whose every branch is
        taken only for a value found
            on another accelerator (`if expected_device.type == "cuda" and
            torch.cuda.is_available(): current = torch.device("cuda",
            torch.cuda.current_device())`; `if torch.device(inp_device).type == "cuda" and "out
            of memory" in str(exc): canonical_device = torch.device("cpu")`): it tests where a
            value already is, and on an XLA host, whose values are on XLA, no branch runs, so
            it chooses nothing there. Only where no other assignment in the function (the
            class, for `self.` attributes) gives the names it sets a known device: otherwise
            that value (`device = "cpu"`, then `if model.device.type == "cuda": device =
            "cuda"`) is the XLA host's choice. `ancestors`: of `node`, innermost first."""
        tests, blocks = chain(node)
        if len(blocks) > len(tests):
            # An `else` that only raises again (`else: raise` in an `except`) is no path
            # that goes on with a device.
            if not ends_in(blocks[-1], (cst.Raise,)) or any(
                device_types(value, self.imports) for value, _ in _selections(blocks[-1])
            ):
                return False
            blocks = blocks[:-1]
        if not all(implied(test, True, asks_held_accelerator) is True for test in tests):
            return False
        targets = self._device_targets(blocks)
        if targets is None:
            return False  # returned: the code after the chain is its `else`
        path = list(ancestors)
        function = next((a for a in path if type(a) is cst.FunctionDef), None)
        class_def = next((a for a in path if type(a) is cst.ClassDef), None)
        for target in targets:
            scope = class_def if target.startswith("self.") else function
            if scope is None or _chooses_elsewhere(target, node, scope, self.imports):
                return False
        return True

    def _device_targets(self, blocks: list[cst.BaseSuite]) -> set[str] | None:
        """The names a chain's blocks set to a device (`device = "cuda"`, `self.device =
        torch.device(...)`); None where a block returns a device, or sets one through a
        target with no name (`devices[i] = ...`)."""
        targets: set[str] = set()
        for block in blocks:
            for value, assigned in _selections(block):
                if device_types(value, self.imports) is None:
                    continue
                if assigned is None:
                    return None
                for target in assigned:
                    name = get_full_name_for_node(target)
                    if name is None:
                        return None
                    targets.add(name)
        return targets

    def opens_ladder(self, ancestors: Iterable[cst.CSTNode]) -> bool:
        """Whether the node is in an `if` without `else` that selects a device and is
        followed in its block by an `if` device ladder without `else`: sibling `if`s form
        one ladder, reported at its first ladder `if` (XLA305), and this one is its first
        rung (`if device == "auto": device = "cuda"`, then `if device.type == "cuda" and
        not torch.cuda.is_available(): return torch.device("cpu")`). A later ladder with an
        `else` is a rung of the same ladder where its test examines the name this `if`
        sets (`if device is None: device = "cuda"`, then `if device == "cuda": device =
        torch.device(f"cuda:{torch.cuda.current_device()}") else: device =
        torch.device(device)`): the value flows into it, one choice, reported there."""
        path = list(ancestors)
        for node, block in itertools.pairwise(path):
            if not isinstance(node, cst.If) or not isinstance(block, cst.IndentedBlock):
                continue
            if _chain_has_else(node) or self.of(node) is None:
                continue
            later = itertools.dropwhile(lambda s, n=node: s is not n, block.body)
            bound = _names_set_in(node)
            if any(
                isinstance(s, cst.If)
                and s is not node
                and self.is_ladder(s)
                and (
                    not _chain_has_else(s)
                    or any(bound & _examined(test, self.imports) for test in chain(s)[0])
                )
                for s in later
            ):
                return True
        return False


def _chooses_elsewhere(
    target: str, chain_node: cst.If, scope: cst.CSTNode, imports: ImportTable
) -> bool:
    """Whether an assignment in `scope` outside `chain_node` gives `target` a device of a
    known type (`device = "cpu"`), or a value of another shape (unpacking, `+=`)."""
    stack: list[cst.CSTNode] = [scope]
    while stack:
        current = stack.pop()
        if current is chain_node:
            continue
        kind = type(current)
        if kind is cst.Assign:
            for assign_target in current.targets:  # type: ignore[attr-defined]
                if get_full_name_for_node(assign_target.target) == target:
                    types = device_types(current.value, imports)  # type: ignore[attr-defined]
                    if types and types - {UNKNOWN}:
                        return True
        elif (
            kind in (cst.AnnAssign, cst.AugAssign)
            and get_full_name_for_node(current.target) == target  # type: ignore[attr-defined]
        ):
            value = current.value  # type: ignore[attr-defined]
            types = device_types(value, imports) if value is not None else None
            if kind is cst.AugAssign or (types and types - {UNKNOWN}):
                return True
        stack.extend(children(current))
    return False


def _set_only_in(target: str, chain_node: cst.If, scope: cst.CSTNode | None) -> bool:
    """No assignment in `scope` (a function, or a class for `self.` attributes) outside
    `chain_node` binds `target`: the name holds nothing but what the chain sets."""
    if scope is None:
        return False
    stack: list[cst.CSTNode] = [scope]
    while stack:
        current = stack.pop()
        if current is chain_node:
            continue
        if type(current) is cst.Assign:
            bound = [get_full_name_for_node(t.target) for t in current.targets]
        elif type(current) in (cst.AnnAssign, cst.AugAssign):
            bound = [get_full_name_for_node(current.target)]  # type: ignore[attr-defined]
        else:
            bound = []
        if target in bound:
            return False
        stack.extend(children(current))
    return True


def _holds_parameter(target: str, before: list[cst.CSTNode], handed: set[str]) -> bool:
    """`target` holds a parameter after the statements `before`: its last plain
    assignment there is a parameter's name, or it is a parameter none of them rebinds."""
    for statement in reversed(before):
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in reversed(statement.body):  # type: ignore[attr-defined]
            if type(small) is not cst.Assign:
                continue
            if any(get_full_name_for_node(t.target) == target for t in small.targets):
                return type(small.value) is cst.Name and small.value.value in handed
    return target in handed


def _names_set_in(node: cst.If) -> set[str]:
    """The names and attributes (`device`, `self.device`) the plain assignments of an
    `if` chain's branches bind."""
    found: set[str] = set()
    for current in descendants(node):
        if type(current) is cst.Assign:
            for target in current.targets:  # type: ignore[attr-defined]
                name = get_full_name_for_node(target.target)
                if name is not None:
                    found.add(name)
    return found


def _chain_has_else(node: cst.If) -> bool:
    tests, blocks = chain(node)
    return len(blocks) > len(tests)


def _ifexp_tests(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(node, cst.IfExp):
        yield node.test
        yield from _ifexp_tests(node.body)
        yield from _ifexp_tests(node.orelse)


_BLOCK_TYPES = node_types(
    cst.BaseSuite,
    cst.BaseStatement,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
)


def _selections(
    node: cst.CSTNode,
) -> Iterator[tuple[cst.BaseExpression, list[cst.BaseExpression] | None]]:
    """Values assigned in a block, with their targets, or returned (targets None); not in
    nested `if`s, functions or classes, nor in loops: a device set on each pass (`for i in
    range(torch.cuda.device_count()): device = torch.device(f"cuda:{i}")`, to read each
    GPU's memory statistics) names every device in turn and chooses none."""
    for child in children(node):
        if type(child) in (cst.If, cst.FunctionDef, cst.ClassDef, cst.For, cst.While):
            continue
        if type(child) is cst.Assign:
            yield child.value, [t.target for t in child.targets]
        elif type(child) is cst.AnnAssign:
            if child.value is not None:
                yield child.value, [child.target]
        elif type(child) is cst.Return:
            if child.value is not None:
                yield child.value, None
        elif type(child) in _BLOCK_TYPES:
            yield from _selections(child)


_GPU_CLASS = re.compile(r"gpu|cuda|nccl", re.IGNORECASE)
_DEVICE_ABSTRACTION = re.compile(r"(Device|Accelerator|Backend|Strategy|Platform)$")


def is_gpu_implementation(node: cst.ClassDef) -> bool:
    """A GPU implementation of a device abstraction (`class DeviceGPU(Device)`,
    `class CUDAAccelerator(Accelerator)`): a framework picks a sibling class on an XLA host
    (Composer's `DeviceTPU`), so this one's `dist_backend = "nccl"` never runs there."""
    return _GPU_CLASS.search(node.name.value) is not None and any(
        _DEVICE_ABSTRACTION.search(get_full_name_for_node(base.value) or "") is not None
        for base in node.bases
    )


def in_own_method(function: FunctionKey | None, name: str) -> bool:
    """Whether code runs in a class's own `cuda()`/`half()` method: a wrapper that moves
    its parts (`def cuda(self): return Rigid(self._rots.cuda(), self._trans.cuda())`) does
    what its caller asked for; the caller's `.cuda()` is the finding, not the method."""
    return function is not None and function.class_name is not None and function.name == name


def is_super_call(node: cst.BaseExpression) -> bool:
    """`super()` or `super(Cls, self)`: `super().cuda()` inside an override of `cuda` is the
    implementation of the method, not a choice of device or dtype to rewrite."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "super"
    )
