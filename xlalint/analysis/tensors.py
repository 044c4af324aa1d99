"""Is this expression (likely) a tensor on the device?

XLA's costs come from reading device tensors on the host, so a sync rule must know whether a
value is a tensor. Python has no types to ask, so this is a small, explainable abstract
interpretation: each expression gets a `Kind` from what produced it (a torch call, a tensor
method, a model call, a DataLoader element, a literal, `len()`, a shape...), and names take
the kind of their latest assignment in the enclosing function (falling back to module
scope). Unknown stays unknown: rules decide how much certainty they need.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import ImportTable


class Kind(enum.Enum):
    TENSOR = "tensor"  # a tensor, presumed on the device
    # certainly not a device tensor: numbers, strings, shapes, numpy, host copies, and CPU
    # tensors made without a device (`torch.rand(1)`)
    HOST = "host"
    MODULE = "module"  # an nn.Module (calling it yields tensors)
    ITERABLE = "iterable"  # iterating yields tensors: loaders, parameters(), timesteps
    UNKNOWN = "unknown"


# Tensor attributes and methods whose result lives on the host.
HOST_ATTRIBUTES = frozenset(
    {
        "shape", "dtype", "device", "ndim", "is_cuda", "is_xla", "is_leaf", "requires_grad",
        "layout", "is_sparse", "is_quantized", "is_meta", "names", "itemsize", "nbytes",
    }
)  # fmt: skip
HOST_METHODS = frozenset(
    {
        "size", "dim", "ndimension", "numel", "nelement", "element_size", "stride",
        "storage_offset", "data_ptr", "get_device", "is_contiguous", "is_floating_point",
        "is_complex", "is_pinned", "is_shared", "type", "__len__", "has_names", "untyped_storage",
    }
)  # fmt: skip
# Attributes that hold tensors whatever they hang off: parameters and their gradients.
PARAMETER_ATTRIBUTES = frozenset({"grad", "weight", "bias"})
# Methods that copy a device tensor to the host (the syncs themselves).
TO_HOST_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})

# torch functions that do not return tensors.
_TORCH_NON_TENSOR = re.compile(
    r"^torch\.("
    r"is_\w+|equal|allclose|numel|typename|"
    r"device|Size|dtype|finfo|iinfo|get_\w+|set_\w+|manual_seed|seed|initial_seed|"
    r"no_grad|enable_grad|inference_mode|autocast|compile|save|load|use_deterministic_algorithms|"
    r"cuda|backends|distributed|utils|optim|jit|onnx|hub|profiler|autograd|amp|mps|xpu|"
    r"testing|export|fx|library|overrides|multiprocessing|random"
    r")(\.|$)"
)
_TORCH_TENSOR_NAMESPACES = re.compile(r"^torch\.(nn\.functional|linalg|fft|special|nn\.init)\.")
# torch factories that build a tensor from sizes or Python data: on the host (a CPU tensor,
# like a numpy array) unless given a device. `torch.rand(1) < p` in a transform is no sync.
_TORCH_FACTORIES = re.compile(
    r"^torch\.(tensor|zeros|ones|empty|full|rand|randn|randint|randperm|arange|linspace|"
    r"logspace|eye|[A-Z]\w*Tensor)$"
)
_DTYPE_NAMES = frozenset(
    {
        "float", "float16", "float32", "float64", "bfloat16", "half", "double", "int", "int8",
        "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
        "cfloat", "cdouble",
    }
)  # fmt: skip
_NN_MODULE_CLASS = re.compile(r"^torch\.nn\.(modules\.)?[A-Z]\w*$")

# Callees whose call produces tensors (models and losses), by spelling.
_MODEL_NAME = re.compile(
    r"(^|_)(model|net|network|unet|vae|encoder|decoder|transformer|backbone|head|criterion|"
    r"loss_fn|loss_func|loss_function|lossfn|module|generator|discriminator|classifier|"
    r"text_encoder|controlnet|denoiser|policy|critic|actor)s?$",
    re.IGNORECASE,
)
_LOADER_NAME = re.compile(r"(loader|dataloader|batches|timesteps|sigmas)$", re.IGNORECASE)
_INDEX_NAME = re.compile(
    r"^(i|j|k|n|idx|index|step|epoch|it|iteration|global_step|batch_idx|batch_index|\w+_idx|"
    r"\w+_id|\w+_step|num_\w+|\w+_size)$"
)
# Parameters whose names say they hold a Python flag or size (`use_cache`, `return_dict`,
# `is_causal`, `H`, `W`, `seq_len`, `hidden_dim`, `max_norm`), not a tensor: per-step
# functions take tensors by default, and these would otherwise read as tensors.
_HOST_PARAM_NAME = re.compile(
    r"^(use_\w+|return_\w+|is_\w+|has_\w+|do_\w+|output_attentions|output_hidden_states|"
    r"training|verbose|H|W|height|width|depth|dim|\w+_dim|length|\w+_len|\w+_length|"
    r"max_\w+|min_\w+|count|\w+_count)$"
)
_TENSOR_PARAM_FUNCTIONS = re.compile(r"^(forward|\w*_step|step|__call__|compute_loss|loss)$")
# Module methods that return the module itself.
_MODULE_CHAINING = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16",
                              "double", "requires_grad_", "xla", "type"})  # fmt: skip
_MODULE_ITERABLES = frozenset({"parameters", "buffers"})
_HOST_BUILTINS = frozenset(
    {
        "len", "int", "float", "bool", "str", "repr", "isinstance", "hasattr", "range",
        "enumerate", "zip", "sorted", "list", "dict", "set", "tuple", "type", "id", "hash",
        "format", "round", "abs", "print", "getattr", "callable", "ord", "chr",
    }
)  # fmt: skip


def _join(kinds: Iterable[Kind]) -> Kind:
    """TENSOR if any part is a tensor; HOST only if every part is host."""
    seen = set(kinds)
    if Kind.TENSOR in seen:
        return Kind.TENSOR
    if seen == {Kind.HOST}:
        return Kind.HOST
    return Kind.UNKNOWN


class TensorKinds:
    """Kinds of expressions, with one symbol table per function frame."""

    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self._frames: list[dict[str, Kind]] = [{}]
        self._self_attributes: list[dict[str, Kind]] = [{}]

    # -- frames ---------------------------------------------------------------------------
    def push_function(self, node: cst.FunctionDef, in_class: bool) -> None:
        frame: dict[str, Kind] = {}
        params = node.params
        positional = [*params.posonly_params, *params.params]
        tensor_params = _TENSOR_PARAM_FUNCTIONS.match(node.name.value) is not None
        for index, param in enumerate([*positional, *params.kwonly_params]):
            name = param.name.value
            if in_class and index == 0 and param in positional:
                continue  # self / cls
            frame[name] = self._param_kind(param, tensor_params)
        self._frames.append(frame)

    def pop_function(self) -> None:
        self._frames.pop()

    def push_class(self) -> None:
        self._self_attributes.append({})

    def pop_class(self) -> None:
        self._self_attributes.pop()

    def _param_kind(self, param: cst.Param, tensor_params: bool) -> Kind:
        if param.annotation is not None:
            annotation = get_full_name_for_node(param.annotation.annotation) or ""
            tail = annotation.rsplit(".", 1)[-1]
            if tail in {"Tensor", "FloatTensor", "LongTensor", "BoolTensor"}:
                return Kind.TENSOR
            if tail in {"int", "float", "bool", "str", "bytes"}:
                return Kind.HOST
        default = param.default
        optional = isinstance(default, cst.Name) and default.value == "None"
        if default is not None and not optional:
            return Kind.HOST if _is_literal(default) else Kind.UNKNOWN
        if _INDEX_NAME.match(param.name.value) or _HOST_PARAM_NAME.match(param.name.value):
            return Kind.HOST
        # `forward(self, x, mask=None)`: an optional tensor is still a tensor when given.
        return Kind.TENSOR if tensor_params else Kind.UNKNOWN

    # -- bindings -------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, kind: Kind) -> None:
        """Record an assignment `target = <value of kind>`; tuples unpack elementwise."""
        if isinstance(target, cst.Name):
            frame = self._frames[-1]
            # A name keeps what it is known to hold when reassigned from something opaque:
            # `latents = scheduler.step(noise, t, latents)` still holds a tensor.
            if kind is not Kind.UNKNOWN or frame.get(target.value) in (None, Kind.UNKNOWN):
                frame[target.value] = kind
        elif isinstance(target, cst.Tuple | cst.List):
            element_kind = Kind.TENSOR if kind in (Kind.TENSOR, Kind.ITERABLE) else kind
            for element in target.elements:
                value = element.value
                if isinstance(value, cst.StarredElement):
                    value = value.value
                self.bind(value, element_kind)
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            self._self_attributes[-1][target.attr.value] = kind

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for target in iterable`: what the loop variables hold."""
        if isinstance(iterable, cst.Call):
            callee = get_full_name_for_node(iterable.func)
            if callee == "enumerate" and iterable.args and isinstance(target, cst.Tuple):
                elements = target.elements
                if len(elements) == 2:
                    self.bind(elements[0].value, Kind.HOST)
                    self.bind_loop_target(elements[1].value, iterable.args[0].value)
                    return
            if (
                callee == "zip"
                and isinstance(target, cst.Tuple)
                and len(target.elements) == len(iterable.args)
            ):
                for element, arg in zip(target.elements, iterable.args, strict=True):
                    self.bind_loop_target(element.value, arg.value)
                return
            if callee == "range":
                self.bind(target, Kind.HOST)
                return
            if isinstance(iterable.func, cst.Attribute):
                method = iterable.func.attr.value
                if (
                    method == "named_parameters"
                    and isinstance(target, cst.Tuple)
                    and len(target.elements) == 2
                ):
                    self.bind(target.elements[0].value, Kind.HOST)
                    self.bind(target.elements[1].value, Kind.TENSOR)
                    return
                if method == "items":
                    self.bind(target, Kind.UNKNOWN)
                    return
        kind = self.of(iterable)
        element = {Kind.ITERABLE: Kind.TENSOR, Kind.TENSOR: Kind.TENSOR, Kind.HOST: Kind.HOST}
        self.bind(target, element.get(kind, Kind.UNKNOWN))

    def lookup(self, name: str) -> Kind | None:
        frame = self._frames[-1]
        if name in frame:
            return frame[name]
        return self._frames[0].get(name)

    # -- inference ------------------------------------------------------------------------
    def of(self, node: cst.BaseExpression) -> Kind:
        """The kind of an expression's value."""
        if _is_literal(node) or isinstance(
            node, cst.FormattedString | cst.ConcatenatedString | cst.List | cst.Dict | cst.Set
        ):
            return Kind.HOST
        if isinstance(node, cst.Name):
            known = self.lookup(node.value)
            if known is not None and known is not Kind.UNKNOWN:
                return known
            if node.value in {"True", "False", "None"}:
                return Kind.HOST
            if _LOADER_NAME.search(node.value):
                return Kind.ITERABLE
            if _MODEL_NAME.search(node.value):
                return Kind.MODULE
            return Kind.UNKNOWN
        if isinstance(node, cst.Attribute):
            return self._attribute(node)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.Subscript):
            base = self.of(node.value)
            if base is Kind.ITERABLE:
                return Kind.TENSOR
            return base if base in (Kind.TENSOR, Kind.HOST) else Kind.UNKNOWN
        if isinstance(node, cst.BinaryOperation):
            return _join((self.of(node.left), self.of(node.right)))
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return Kind.HOST
            return self.of(node.expression)
        if isinstance(node, cst.Comparison):
            if all(
                isinstance(t.operator, cst.Is | cst.IsNot | cst.In | cst.NotIn)
                for t in node.comparisons
            ):
                return Kind.HOST
            return _join([self.of(node.left), *(self.of(t.comparator) for t in node.comparisons)])
        if isinstance(node, cst.IfExp):
            return _join((self.of(node.body), self.of(node.orelse)))
        if isinstance(node, cst.BooleanOperation):
            return _join((self.of(node.left), self.of(node.right)))
        if isinstance(node, cst.Tuple):
            return _join(self.of(e.value) for e in node.elements) if node.elements else Kind.HOST
        if isinstance(node, cst.NamedExpr):
            return self.of(node.value)
        return Kind.UNKNOWN

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.of(node) is Kind.TENSOR

    def _attribute(self, node: cst.Attribute) -> Kind:
        attr = node.attr.value
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            known = self._self_attributes[-1].get(attr)
            if known is not None:
                return known
        qualified = self.imports.resolve(node)
        if qualified is not None:
            if qualified.startswith("torch.") and attr[:1].islower():
                # torch.float32, torch.cuda, torch.nn...: dtypes and namespaces
                return Kind.HOST
            return Kind.UNKNOWN
        if attr in HOST_ATTRIBUTES:
            return Kind.HOST
        base = self.of(node.value)
        if base is Kind.TENSOR:
            return Kind.TENSOR  # .grad, .data, .T, .loss of a model output
        if base is not Kind.HOST and attr in PARAMETER_ATTRIBUTES:
            return Kind.TENSOR  # `model.fc.weight`, `p.grad`
        if base is Kind.MODULE:
            return Kind.UNKNOWN
        if _LOADER_NAME.search(attr):
            return Kind.ITERABLE
        if _MODEL_NAME.search(attr):
            return Kind.MODULE
        return Kind.UNKNOWN

    def _call(self, node: cst.Call) -> Kind:
        func = node.func
        qualified = self.imports.resolve(func)
        if qualified is not None:
            return self._qualified_call(qualified, node)
        if isinstance(func, cst.Name):
            name = func.value
            if name in _HOST_BUILTINS and self.lookup(name) is None:
                return Kind.HOST
            return Kind.TENSOR if self.of(func) is Kind.MODULE else Kind.UNKNOWN
        if isinstance(func, cst.Attribute):
            if self._attribute(func) is Kind.MODULE:
                return Kind.TENSOR  # `self.proj(x)` with `self.proj = nn.Linear(...)`
            method = func.attr.value
            receiver = self.of(func.value)
            if receiver is Kind.TENSOR:
                if method in HOST_METHODS or method in TO_HOST_METHODS:
                    return Kind.HOST
                if method == "to" and moves_to_cpu(node):
                    return Kind.HOST
                return Kind.TENSOR
            if receiver is Kind.MODULE:
                if method in _MODULE_CHAINING:
                    return Kind.MODULE
                if method in _MODULE_ITERABLES:
                    return Kind.ITERABLE
                if method in {"forward", "__call__"}:
                    return Kind.TENSOR
                return Kind.UNKNOWN
            if receiver is Kind.HOST:
                if method == "cuda" or (method == "to" and self._moves_to_device(node)):
                    return Kind.TENSOR  # a host tensor moved to the device
                return Kind.HOST
            if method in TO_HOST_METHODS or (method == "to" and moves_to_cpu(node)):
                # Whatever the receiver was, a copy to the host lives on the host: the
                # `.numpy()` of `out.cpu().numpy()` reads no device tensor.
                return Kind.HOST
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                return Kind.TENSOR if _MODEL_NAME.search(method) else Kind.UNKNOWN
        return Kind.UNKNOWN

    def _moves_to_device(self, call: cst.Call) -> bool:
        """`.to(device)`, `.to("xla")`, `.to(other)`; not `.to("cpu")`, `.to(torch.float16)`."""
        if moves_to_cpu(call):
            return False
        for arg in call.args:
            if _is_keyword(arg, "device"):
                return True
            if arg.keyword is None and not arg.star:
                qualified = self.imports.resolve(arg.value) or ""
                spelled = get_full_name_for_node(arg.value) or ""
                return not (
                    qualified.rsplit(".", 1)[-1] in _DTYPE_NAMES or spelled.endswith("dtype")
                )
        return False

    def _qualified_call(self, qualified: str, node: cst.Call) -> Kind:
        if qualified.startswith(("numpy.", "math.", "random.", "time.", "os.")):
            return Kind.HOST
        if _NN_MODULE_CLASS.match(qualified):
            return Kind.MODULE
        if qualified.startswith("torch.utils.data.") and qualified.endswith("DataLoader"):
            return Kind.ITERABLE
        if qualified.startswith("torch_xla.distributed.parallel_loader."):
            return Kind.ITERABLE
        if _TORCH_TENSOR_NAMESPACES.match(qualified):
            return Kind.TENSOR
        if qualified == "torch.from_numpy" or (
            _TORCH_FACTORIES.match(qualified)
            and (moves_to_cpu(node) or not any(_is_keyword(a, "device") for a in node.args))
        ):
            return Kind.HOST  # made on the host: `torch.randint(n, (b,))`, `torch.rand(1)`
        if qualified.startswith("torch.") and not _TORCH_NON_TENSOR.match(qualified):
            return Kind.TENSOR
        return Kind.UNKNOWN


def _is_keyword(arg: cst.Arg, name: str) -> bool:
    return arg.keyword is not None and arg.keyword.value == name


def _is_literal(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Integer | cst.Float | cst.Imaginary | cst.SimpleString):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _is_literal(node.expression)
    return isinstance(node, cst.Name) and node.value in {"True", "False", "None"}


def moves_to_cpu(call: cst.Call) -> bool:
    """`.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value != "device":
            continue
        value = arg.value
        if isinstance(value, cst.Call) and value.args:
            value = value.args[0].value
        if isinstance(value, cst.SimpleString) and value.evaluated_value == "cpu":
            return True
    return False
