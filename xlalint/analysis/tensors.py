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
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import (
    bind,
    is_staticmethod,
    parameter,
    parameters,
    positional_params,
    signature_of,
)
from xlalint.analysis.documented_types import (
    documented_host_parameters,
    documented_tensor_parameters,
)
from xlalint.analysis.foreign_arrays import ForeignArrays, other_library
from xlalint.analysis.guards import local_values, negated
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.host_arguments import (
    SAME_PLACE,
    converted_in_place_before,
    host_copy,
    host_parameters,
    moved_later,
    moved_next,
    value_before,
)
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.index_loaders import loads_indices
from xlalint.analysis.members import class_method, held_classes
from xlalint.analysis.module_classes import NN_MODULE_CLASS, NN_TENSOR_CLASS
from xlalint.analysis.records import (
    Record,
    annotated_record,
    constructed_record,
    filled_lists,
    record_classes,
)
from xlalint.analysis.returns import NumberReturns, _walk_body
from xlalint.analysis.tensor_members import HOST_ATTRIBUTES as TENSOR_HOST_ATTRIBUTES
from xlalint.analysis.tensor_members import HOST_METHODS as TENSOR_HOST_METHODS
from xlalint.analysis.tensor_members import MODULE_MEMBERS, TENSOR_MEMBERS
from xlalint.analysis.tensor_methods import (
    ONLY_TENSOR_MATH,
    ONLY_TENSOR_MATH_WITH_ARGUMENTS,
    ONLY_TENSOR_NORMS,
    ONLY_TENSOR_PREDICATES,
    ONLY_TENSOR_SELECTIONS,
)
from xlalint.analysis.type_tests import class_name
from xlalint.walk import (
    TRIVIA,
    binding_counts,
    code_children,
    descendants,
    names_under,
    self_attribute,
    target_names,
    top_level_definitions,
)


def _type_names(annotation: cst.BaseExpression) -> set[str]:
    """The types an annotation names, each by its last part: `Optional[np.ndarray]` ->
    Optional, ndarray (the module a dotted name hangs off is no type)."""
    found: set[str] = set()
    prefixes: set[int] = set()
    for node in descendants(annotation):
        if type(node) is cst.Attribute:
            prefixes.add(id(node.value))  # type: ignore[attr-defined]
            if id(node) not in prefixes:
                found.add(node.attr.value)  # type: ignore[attr-defined]
        elif type(node) is cst.Name and id(node) not in prefixes:
            found.add(node.value)  # type: ignore[attr-defined]
    return found


class Kind(enum.Enum):
    TENSOR = "tensor"  # a tensor, presumed on the device
    # certainly not a device tensor: numbers, strings, shapes, numpy, host copies, and CPU
    # tensors made without a device (`torch.rand(1)`)
    HOST = "host"
    MODULE = "module"  # an nn.Module (calling it yields tensors)
    ITERABLE = "iterable"  # iterating yields tensors: loaders, parameters(), timesteps
    UNKNOWN = "unknown"


# Tensor attributes and methods whose result lives on the host (`tensor_members.py`: the
# whole metadata API of `torch.Tensor`), and `len()`'s hook.
HOST_ATTRIBUTES = TENSOR_HOST_ATTRIBUTES
HOST_METHODS = TENSOR_HOST_METHODS | {"__len__"}
# Attributes that hold tensors whatever they hang off: parameters and their gradients.
PARAMETER_ATTRIBUTES = frozenset({"grad", "weight", "bias"})
# Attributes that view the tensor they hang off (where it lives).
_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})
# The fields of the named tuple a torch reduction returns (`torch.kthvalue(x, k).values`):
# on the host where the reduction ran there.
_RESULT_FIELDS = frozenset({"values", "indices"})
# Methods that copy a device tensor to the host (the syncs themselves).
TO_HOST_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
# Built-in casts that turn a tensor into a Python number (`float(loss)`).
HOST_CASTS = frozenset({"int", "float", "bool"})

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
# Conversions that keep a tensor where it is and make anything else on the host.
_AS_TENSOR = frozenset({"torch.as_tensor", "torch.asarray"})
# Functions that answer a question about the program (`is_compiling`, `has_cuda`,
# `_get_cudnn_enabled`, `_are_functorch_transforms_active`).
_PREDICATE = re.compile(r"^((is|has|are)_|get_\w+_enabled$)")
# Methods that move what they are given to the device and return it.
_TO_DEVICE_METHOD = re.compile(r"(^|_)to_device$")
# Dict methods that return one of its values.
_DICT_LOOKUPS = frozenset({"get", "pop", "setdefault"})
# Mappings whose every value is a tensor: the tensordict library's classes.
_TENSOR_MAPPINGS = frozenset({"TensorDictBase", "TensorDict"})
# Annotations of parameters that are dicts (their values may be anything).
_DICT_ANNOTATIONS = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})
_RNG_STATE_GETTERS = frozenset({"get_rng_state", "get_rng_state_all"})
# Conditions true only while TorchScript traces or scripts the code.
# Probes of a TorchScript trace or an ONNX export: true on a path no XLA step takes.
_TRACING_PROBES = frozenset(
    {"torch.jit.is_tracing", "torch.jit.is_scripting", "torch.onnx.is_in_onnx_export"}
)
_TORCH_TENSOR_NAMESPACES = re.compile(r"^torch\.(nn\.functional|linalg|fft|special|nn\.init)\.")
# torch factories that build a tensor from sizes or Python data: on the host (a CPU tensor,
# like a numpy array) unless given a device. `torch.rand(1) < p` in a transform is no sync.
_TORCH_FACTORIES = re.compile(
    r"^torch\.(tensor|zeros|ones|empty|full|rand|randn|randint|randperm|arange|linspace|"
    r"logspace|eye|([A-Z]\w*)?Tensor)$"
)


def _builds_from_sizes(qualified: str, call: cst.Call) -> bool:
    """A torch factory call: `torch.zeros(n)`, `torch.rand(1)`, the legacy constructors
    (`torch.Tensor([0])`, `torch.LongTensor(n)`: a CPU tensor, like `torch.tensor`), or
    `torch.normal` given a
    `size` (`torch.normal(0.0, std, size=(1,))`, mean and std as numbers), which, like
    them, builds a new tensor on the host unless given a device. `torch.normal(mean, std)`
    of tensors samples where they are."""
    if _TORCH_FACTORIES.match(qualified):
        return True
    return qualified == "torch.normal" and (
        any(_is_keyword(arg, "size") for arg in call.args)
        or sum(arg.keyword is None and not arg.star for arg in call.args) >= 3
    )


_DTYPE_NAMES = frozenset(
    {
        "float", "float16", "float32", "float64", "bfloat16", "half", "double", "int", "int8",
        "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
        "cfloat", "cdouble",
    }
)  # fmt: skip
# Collectives that return what they are given, gathered or reduced across processes.
_STRUCTURE_KEEPING = re.compile(r"gather|reduce|broadcast|pad_across_processes", re.I)

# Callees whose call produces tensors (models and losses), by spelling.
_MODEL_NAME = re.compile(
    r"(^|_)(model|net|network|unet|vae|encoder|decoder|transformer|backbone|head|criterion|"
    r"loss_fn|loss_func|loss_function|lossfn|module|generator|discriminator|classifier|"
    r"text_encoder|controlnet|denoiser|policy|critic|actor)s?$",
    re.IGNORECASE,
)
# Names that start with a verb are functions (`get_model`, `maybe_pad_head`,
# `eval_model`, `train_model`), not models;
# `named_modules`, `iter_modules`, `num_heads` name collections and counts of them.
_VERB_PREFIX = re.compile(
    r"^_*(get|load|build|create|make|init|prepare|setup|set|is|has|to|apply|convert|register|"
    r"named|iter|list|all|num|n|total|"
    r"find|compile|save|freeze|patch|replace|enable|disable|remove|add|check|resolve|update|"
    r"copy|fuse|unfuse|unwrap|wrap|maybe|compute|run|call|process|reset|clear|swap|"
    r"eval|evaluate|train|test|validate|predict|fit|infer|score)_"
)


@lint_memo.memo(256)
def unpacked_into_networks(function: cst.FunctionDef) -> frozenset[str]:
    """The names `function` unpacks as the keyword arguments of a call of a network
    (`model(**input_kwargs)`, `self.reward_model(**batch, return_dict=True)`: a callee
    named as one, `names_model`)."""
    found: set[str] = set()
    for node in descendants(function.body):
        if type(node) is not cst.Call:
            continue
        callee = node.func
        name = callee.attr.value if type(callee) is cst.Attribute else None
        if type(callee) is cst.Name:
            name = callee.value
        if name is None or not names_model(name):
            continue
        for arg in node.args:
            if arg.star == "**" and type(arg.value) is cst.Name:
                found.add(arg.value.value)
    return frozenset(found)


def names_model(name: str) -> bool:
    """`model`, `text_encoder`, `nets`: a name the file's code gives a network (not a
    function named for what it does with one: `get_model`, `train_model`). A camelCase
    name reads as its words (`netNetwork`, `bodyModel`; `getModel` a function)."""
    name = snake_cased(name)
    return _MODEL_NAME.search(name) is not None and _VERB_PREFIX.match(name) is None


_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_cased(name: str) -> str:
    """A camelCase name (one starting with a lowercase letter: `netNetwork`, `bodyModel`,
    `getModel`) spelled with its words apart, as snake case does (`net_Network`), so the
    name patterns read its last word; a PascalCase name (`RidgeDecoder`, a class, not an
    instance of one) and any other name as they are."""
    stripped = name.lstrip("_")
    if not stripped[:1].islower() or stripped.islower():
        return name
    return _CAMEL_HUMP.sub("_", name)


_LOADER_NAME = re.compile(r"(loader|dataloader|batches|timesteps|sigmas)$", re.IGNORECASE)
# Iterables of tensors that are tensors themselves, so indexing one gives a tensor.
_SCHEDULE_NAME = re.compile(r"(timesteps|sigmas)$", re.IGNORECASE)
# Parameters whose names say they count or index (`batch_idx`, `epoch_num`, `batch_no`,
# `unet_number`, `step_counter`, a trainer's `iters`): Python ints, whatever function takes
# them (not `data_iter`, an iterator).
_INDEX_NAME = re.compile(
    r"^(i|j|k|n|idx|index|step|steps|epoch|epochs|it|iters|iteration|iterations|"
    r"global_step|batch_idx|batch_index|\w+_idx|\w+_id|\w+_step|\w+_steps|\w+_epoch|"
    r"\w+_epochs|num_\w+|\w+_num|\w+_no|\w+_number|\w+_counter|\w+_iters|"
    r"\w+_iteration|\w+_iterations|\w+_size)$"
)
# Names of the position of a loader among a combined loader's (`dataloader_idx`, Lightning's
# `(batch, batch_idx, dataloader_idx)` items): a Python int, even unpacked from a batch.
_LOADER_INDEX_NAME = re.compile(r"^(\w+_)?(data)?loader_(idx|index|id|i|no|num)$")
# Parameters whose names say they hold a Python flag, size or kind (`use_cache`,
# `return_dict`, `is_causal`, a predicate about something named first: `target_is_real`,
# `labels_are_smoothed`, `H`, `W`, `seq_len`, `hidden_dim`, `max_norm`, `layer_type`,
# a solver's or a norm's `order`; a mode switch, as `training` is: `inference`, `train`,
# `test_mode`, `mode`),
# not a tensor: per-step functions take tensors by default, and these would otherwise read
# as tensors.
_HOST_PARAM_NAME = re.compile(
    r"^(use_\w+|return_\w+|(\w+_)?(is|are|has)_\w+|do_\w+|output_attentions|output_hidden_states|"
    r"training|train|inference|(\w+_)?mode|verbose|"
    r"H|W|height|width|depth|dim|\w+_dim|length|\w+_len|\w+_length|"
    r"max_\w+|min_\w+|count|\w+_count|order|device|dtype|\w+_type)$"
)
# Functions whose unannotated parameters hold tensors (plus `__call__` of an nn.Module).
_TENSOR_PARAM_FUNCTIONS = re.compile(r"^(forward|\w*_step|step|compute_loss|loss)$")
# An environment's `step(self, action)` (gym's API) takes the agent's action: an int or a
# NumPy array sampled on the host (`action.item()`), not a tensor of the step.
_ENVIRONMENT_ACTION = re.compile(r"^actions?$")
# Optional parameters (`=None`) of those functions whose names say they hold tensors.
_OPTIONAL_TENSOR_NAME = re.compile(
    r"(^|_)(x|mask|states|embeds|embeddings|ids|latents|labels|logits|targets|input|inputs|"
    r"hidden|features|scores|sample|noise|pixel_values|image|images)$"
)
# torchtyping's `TensorType['b', 'n', int]` (a `torch.Tensor` subclass) is a tensor too.
TENSOR_ANNOTATIONS = frozenset(
    {"Tensor", "FloatTensor", "LongTensor", "BoolTensor", "HalfTensor", "Parameter", "TensorType"}
)
# The dtype word of torchtyping's `TensorType[..., bool]` by its dtype part (`bool`,
# `torch.bool`, `int`, `torch.long`, `float`, `torch.float32`).
_TENSOR_TYPE_DTYPES = {"bool": "Bool", "int": "Int", "float": "Float"}
_HOST_ANNOTATIONS = frozenset(
    {"int", "float", "bool", "str", "bytes", "dict", "list", "tuple", "set", "Dict", "List",
     "Tuple", "Set", "Sequence", "Mapping", "Callable", "Any", "ndarray", "Generator"}
)  # fmt: skip
# Module methods that return the module itself.
_MODULE_CHAINING = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16",
                              "double", "requires_grad_", "xla", "type"})  # fmt: skip
_MODULE_ITERABLES = frozenset({"parameters", "buffers"})
# `nn.Module` methods that walk its submodules (named for modules, not models' outputs).
MODULE_WALKS = frozenset({"modules", "children", "named_modules", "named_children"})
# Methods only an `nn.Module` has: a value the code calls one on is a module.
_MODULE_ONLY_METHODS = _MODULE_ITERABLES | MODULE_WALKS | {"named_parameters", "named_buffers"}
_HOST_BUILTINS = frozenset(
    {
        "len", "int", "float", "bool", "str", "repr", "isinstance", "hasattr", "range",
        "enumerate", "zip", "sorted", "list", "dict", "set", "tuple", "type", "id", "hash",
        "format", "round", "abs", "print", "getattr", "callable", "ord", "chr",
    }
)  # fmt: skip
# Builtins that call a method of their operand (`abs(t)` is `t.__abs__()`): of a tensor, a
# tensor; of anything else, a Python number as `_HOST_BUILTINS` says.
_TENSOR_DUNDER_BUILTINS = frozenset({"abs", "round"})
# Builtins that give back elements of the one iterable they are handed (`max(t)`,
# `min(t)`) or their sum: of a device tensor, a 0-dim tensor on its device.
_ELEMENT_BUILTINS = frozenset({"max", "min", "sum"})


# Methods by which a module moves itself (and its buffers) to a device.
_MODULE_MOVES = frozenset({"to", "cuda", "xpu", "to_empty"})
_BINDINGS = frozenset({cst.Assign, cst.AnnAssign})  # (`+=` updates a tensor in place)
# Built-ins that hand back one of the values they are given.
_CHOOSING_BUILTINS = frozenset({"min", "max"})


# Wrappers that yield the items of the iterable they are handed, unchanged.
_PASS_THROUGH_ITERATORS = frozenset({"tqdm", "iter", "islice"})
# Builtins that copy what they iterate into a sequence: iterating `list(zip(a, b))`, or a
# name bound to it, yields what iterating `zip(a, b)` does.
_COPYING_ITERATORS = frozenset({"list", "tuple"})
_SEQUENCE_ANNOTATIONS = frozenset({"Sequence", "List", "Tuple", "list", "tuple"})
# `nn.Module` methods that make an attribute of the module hold a tensor, by name.
# `self.register_buffer(name, t)`, `register_parameter`, and a torchmetrics `Metric`'s
# `self.add_state(name, default=torch.tensor(0))`: attributes moved with the module.
REGISTERED_TENSORS = frozenset({"register_buffer", "register_parameter", "add_state"})
# jaxtyping's dtype words for shape-typed arrays (`Float32[Tensor, "b"]`, `Bool['b n']`).
ARRAY_DTYPE = re.compile(
    r"^(Bool|Float|Int|UInt|Integer|Num|Real|Inexact|Complex|Shaped|BFloat16|"
    r"Float(8\w*|16|32|64)|U?Int(4|8|16|32|64)|Complex(64|128))$"
)
# Modules a dotted tensor annotation comes from: `torch.Tensor`, `nn.Parameter`, `th.Tensor`.
_TORCH_MODULE_PREFIX = re.compile(r"^(torch|nn|th)\.")


def tensor_returns(body: Sequence[cst.BaseStatement], kind: Kind = Kind.TENSOR) -> frozenset[str]:
    """The functions defined directly in `body` (a module's or a class's) whose return
    annotation names a tensor (`-> torch.Tensor`, `-> Optional[Tensor]`): what a call of
    one hands back is a tensor, wherever in the file it is defined (an agent's `update`
    calls `self._compute_loss(batch)`, defined below it). With `kind` ITERABLE: those
    annotated to return tensors only (`-> Tuple[torch.Tensor, torch.Tensor]`), each
    element of which is one (`y, t = self._compute_y_and_t(batch)`)."""
    return frozenset(
        statement.name.value
        for statement in body
        if isinstance(statement, cst.FunctionDef)
        and statement.returns is not None
        and _tensor_annotation(statement.returns.annotation) is kind
    )


# Methods of Python's containers: a parameter of a per-step function used as a dict or a
# list (`batch.items()`, `inputs.get("mask")`) may still hold the step's tensors.
# Methods of a mapping or a sequence that no tensor has and that give its keys or
# positions, never an element: on a value taken for a tensor they say it is a container.
_KEY_METHODS = frozenset({"keys", "index", "count"}) - TENSOR_MEMBERS
_CONTAINER_METHODS = frozenset(
    name for kind in (dict, list, tuple) for name in dir(kind) if not name.startswith("_")
)


def used_as_objects(function: cst.FunctionDef, presumed: Iterable[str]) -> set[str]:
    """The parameters among `presumed` (taken for tensors only because their function runs
    per step) that `function` uses as an object no tensor is: it calls a method on one that
    neither `torch.Tensor` nor a dict or list has (`g.num_nodes()`,
    `tree_graphs.apply_edges(...)`), or on an element a loop takes from one (`for mol,
    nodes, _ in cand_batch:`, then `mol.GetNumAtoms()`). A DGL graph or a batch of RDKit
    molecules is handed to `forward` as a tensor would be; what the code calls on it says
    it is not one."""
    names = set(presumed)
    if not names:
        return set()
    elements: dict[str, str] = {}  # a loop's target -> the parameter it iterates
    calls: list[cst.Attribute] = []
    for node in descendants(function.body):
        node_type = type(node)
        if node_type is cst.For or node_type is cst.CompFor:
            iterable = node.iter  # type: ignore[attr-defined]
            if type(iterable) is cst.Name and iterable.value in names:
                for target in target_names(node.target):  # type: ignore[attr-defined]
                    elements.setdefault(target, iterable.value)
        elif node_type is cst.Call and type(node.func) is cst.Attribute:  # type: ignore[attr-defined]
            calls.append(node.func)  # type: ignore[attr-defined]
    found: set[str] = set()
    for func in calls:
        receiver = func.value
        method = func.attr.value
        if type(receiver) is not cst.Name or method.startswith("_"):
            continue
        owner = receiver.value if receiver.value in names else elements.get(receiver.value)
        if owner is None or method in TENSOR_MEMBERS or method in _CONTAINER_METHODS:
            continue
        found.add(owner)
    return found


def sliced_backwards(function: cst.FunctionDef, presumed: Iterable[str]) -> set[str]:
    """The parameters among `presumed` (taken for tensors only because their function
    runs per step) that `function` slices with a negative step (`image[:, :, ::-1]`, an
    RGB image turned BGR): torch refuses one, so what the caller hands in is a numpy array
    (or a sequence), on the host."""
    names = set(presumed)
    found: set[str] = set()
    if not names:
        return found
    for node in descendants(function.body):
        if type(node) is not cst.Subscript:
            continue
        receiver = node.value  # type: ignore[attr-defined]
        if (
            type(receiver) is cst.Name
            and receiver.value in names
            and any(_negative_step(e.slice) for e in node.slice)  # type: ignore[attr-defined]
        ):
            found.add(receiver.value)
    return found


def _negative_step(index: cst.BaseSlice) -> bool:
    """`::-1`, `:, ::-2`: a slice whose step is a negative number."""
    step = index.step if type(index) is cst.Slice else None  # type: ignore[attr-defined]
    return (
        type(step) is cst.UnaryOperation
        and type(step.operator) is cst.Minus
        and type(step.expression) in (cst.Integer, cst.Float)
    )


def used_as_data(function: cst.FunctionDef) -> set[str]:
    """Names `function` uses as a tensor no module is: it reads their `.shape` or calls a
    method on them (through subscripts) that `torch.Tensor` has and neither `torch.nn.Module`
    nor a dict or list has (`heads.repeat(n_neg)`, `neg_heads.long()`, `x.view(-1)`). A
    knowledge graph's `heads` and `neg_heads` are index tensors, whatever their names
    say of models."""
    found: set[str] = set()
    for node in descendants(function.body):
        if type(node) is not cst.Attribute:
            continue
        attr = node.attr.value  # type: ignore[attr-defined]
        if attr != "shape" and attr not in _DATA_METHODS:
            continue
        receiver = node.value  # type: ignore[attr-defined]
        while type(receiver) is cst.Subscript:
            receiver = receiver.value  # type: ignore[attr-defined]
        if type(receiver) is cst.Name:
            found.add(receiver.value)  # type: ignore[attr-defined]
    return found


# Tensor methods no module has (nor a dict or list): called on a value, they say it is data.
_DATA_METHODS = TENSOR_MEMBERS - MODULE_MEMBERS - _CONTAINER_METHODS - {"device", "dtype"}


def compared_with_strings(function: cst.FunctionDef, presumed: Iterable[str]) -> set[str]:
    """The parameters among `presumed` (taken for tensors only because their function runs
    per step) that `function` compares with a string literal (`stage == "train"`, `mode !=
    "eval"`, `stage in ["train", "val"]`): a tensor compared with a string is no question
    torch answers, so the value is a string (a stage or mode name handed along with the
    batch)."""
    names = set(presumed)
    if not names:
        return set()
    found: set[str] = set()
    keyed: set[str] | None = None
    for node in descendants(function.body):
        if type(node) is not cst.Comparison:
            continue
        operands = [node.left, *(c.comparator for c in node.comparisons)]  # type: ignore[attr-defined]
        if not all(
            isinstance(c.operator, _STRING_COMPARISONS)
            for c in node.comparisons  # type: ignore[attr-defined]
        ):
            continue
        if not any(_strings(operand) for operand in operands):
            continue
        compared = {o.value for o in operands if type(o) is cst.Name and o.value in names}
        if len(node.comparisons) == 1 and isinstance(  # type: ignore[attr-defined]
            node.comparisons[0].operator,  # type: ignore[attr-defined]
            cst.In | cst.NotIn,
        ):
            # `"labels" in inputs`: a key test where the function also looks the key up
            # (`inputs["labels"]`, `inputs.pop("labels")`), which no string takes: a batch
            # dict, not a name ("train" in stage, a substring test, still is one).
            container = node.comparisons[0].comparator  # type: ignore[attr-defined]
            if type(container) is cst.Name and container.value in compared:
                if keyed is None:
                    keyed = _looked_up_by_keys(function)
                if container.value in keyed:
                    compared.discard(container.value)
        found |= compared
    return found


_MAPPING_METHODS = frozenset({"get", "pop", "keys", "items", "values", "setdefault"})


def _looked_up_by_keys(function: cst.FunctionDef) -> set[str]:
    """Names `function` subscripts with a string literal (`inputs["labels"]`) or calls a
    mapping's method on (`inputs.pop("labels")`, `batch.items()`): mappings, never
    strings."""
    found: set[str] = set()
    for node in descendants(function.body):
        if type(node) is cst.Subscript:
            value = node.value  # type: ignore[attr-defined]
            elements = node.slice  # type: ignore[attr-defined]
            if (
                type(value) is cst.Name
                and len(elements) == 1
                and type(elements[0].slice) is cst.Index
                and type(elements[0].slice.value) is cst.SimpleString
            ):
                found.add(value.value)
        elif type(node) is cst.Call:
            receiver = _receiver_of(node, _MAPPING_METHODS)  # type: ignore[arg-type]
            if receiver is not None:
                found.add(receiver)
    return found


def _receiver_of(call: cst.Call, methods: frozenset[str] | set[str]) -> str | None:
    """`x` in `x.method(...)` where `method` is one of `methods`, else None."""
    func = call.func
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.attr.value in methods:
        return func.value.value
    return None


_STRING_COMPARISONS = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)

# torch factories whose positional arguments (or first tuple) are the sizes of the tensor
# they build, and the tensor methods whose arguments are the dimensions of a new shape.
_SIZED_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"}
)
_SHAPING_METHODS = frozenset(
    {"new_zeros", "new_ones", "new_empty", "new_full", "view", "reshape", "expand", "repeat"}
)


def used_as_sizes(
    function: cst.FunctionDef, presumed: Iterable[str], imports: ImportTable
) -> set[str]:
    """The parameters among `presumed` (taken for tensors only because their function runs
    per step) that `function` hands a tensor's shape as one of its dimensions: a size of a
    torch factory (`torch.zeros(B, n_sampling_times, K, L)`, `torch.randn((b, n))`) or a
    dimension of a new shape (`x.view(b, n, -1)`, `x.repeat(1, n, 1)`). A tensor there
    would be read as a Python int; the caller hands a count along with the batch (CSDI's
    `n_sampling_times`, then `for i in range(n_sampling_times)`)."""
    names = set(presumed)
    if not names:
        return set()
    found: set[str] = set()
    for node in descendants(function.body, _NOT_OWN_CODE):
        if type(node) is not cst.Call:
            continue
        func = node.func  # type: ignore[attr-defined]
        args = [a for a in node.args if a.keyword is None and not a.star]  # type: ignore[attr-defined]
        if type(func) is cst.Attribute and func.attr.value in _SHAPING_METHODS:
            if func.attr.value == "new_full":
                args = args[:1]  # (size, fill_value)
        elif imports.resolve(func) in _SIZED_FACTORIES:
            if imports.resolve(func) == "torch.full":
                args = args[:1]  # (size, fill_value)
        else:
            continue
        if len(args) == 1 and type(args[0].value) in (cst.Tuple, cst.List):
            sizes = [e.value for e in args[0].value.elements]  # type: ignore[attr-defined]
        else:
            sizes = [a.value for a in args]
        found |= {s.value for s in sizes if type(s) is cst.Name and s.value in names}  # type: ignore[attr-defined]
    return found


def _strings(node: cst.BaseExpression) -> bool:
    """A string literal, or a literal collection of them (`["train", "val"]`)."""
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        return True
    if isinstance(node, cst.List | cst.Tuple | cst.Set):
        return bool(node.elements) and all(
            isinstance(e.value, cst.SimpleString) for e in node.elements
        )
    return False


_NUMBER_ANNOTATIONS = frozenset({"int", "float", "complex"})


def indexed_numbers(function: cst.FunctionDef, numbers: Iterable[str]) -> set[str]:
    """The parameters among `numbers` (annotated as Python numbers: `a: float`) that
    `function` indexes, or a name it computes from them by arithmetic (`div = a / b`, then
    `div[div != div] = 0.0`): a number has no elements, so such an annotation is wrong
    (momentfm's `_divide_no_nan(self, a: float, b: float)`, handed tensors or numpy arrays
    by its callers)."""
    derived: dict[str, set[str]] = {name: {name} for name in numbers}
    found: set[str] = set()
    for node in descendants(function.body, _NOT_OWN_CODE):
        node_type = type(node)
        if node_type is cst.Assign:
            value = node.value  # type: ignore[attr-defined]
            targets = node.targets  # type: ignore[attr-defined]
            if len(targets) == 1 and type(targets[0].target) is cst.Name:
                sources = _arithmetic_of(value, derived)
                name = targets[0].target.value
                if sources:
                    derived[name] = sources
                else:
                    derived.pop(name, None)
        elif node_type is cst.Subscript:
            value = node.value  # type: ignore[attr-defined]
            if type(value) is cst.Name and value.value in derived:
                found |= derived[value.value]
    return found


def _arithmetic_of(value: cst.BaseExpression, derived: dict[str, set[str]]) -> set[str]:
    """The parameters an arithmetic expression of names in `derived` and numbers reads;
    empty if it reads anything else."""
    found: set[str] = set()
    pending = [value]
    while pending:
        node = pending.pop()
        node_type = type(node)
        if node_type is cst.BinaryOperation:
            pending.extend((node.left, node.right))  # type: ignore[attr-defined]
        elif node_type is cst.UnaryOperation:
            pending.append(node.expression)  # type: ignore[attr-defined]
        elif node_type is cst.Integer or node_type is cst.Float:
            continue
        elif node_type is cst.Name and node.value in derived:  # type: ignore[attr-defined]
            found |= derived[node.value]  # type: ignore[attr-defined]
        else:
            return set()
    return found


# A function named for collating a loader's samples (`collate_fn`, `pad_collate_fn`,
# `collate_batch`), and the `__call__` of a collator class (`DataCollatorForSeq2Seq`).
_COLLATE = re.compile(r"collat", re.IGNORECASE)


def collates(function: cst.FunctionDef, method_of: str | None = None) -> bool:
    """`function` collates a loader's samples into a batch: named for it (`collate_fn`,
    `pad_collate_fn`), or the `__call__` of a class named for it (a `DataCollator`). A
    `DataLoader` runs it on what its dataset hands out, host values (in its worker
    processes, where no device is set up), before the training loop moves the batch it
    returns: its parameters are host values, and its reads (`(item["labels"] !=
    -100).sum().item()`, `item["input_ids"].tolist()`) read no device."""
    name = function.name.value
    if _COLLATE.search(name):
        return True
    return name == "__call__" and method_of is not None and _COLLATE.search(method_of) is not None


def has_tensor_parameter(function: cst.CSTNode) -> bool:
    """A function with a parameter annotated as a tensor (or a sequence of tensors)."""
    if not isinstance(function, cst.FunctionDef):
        return False
    return any(
        param.annotation is not None
        and _tensor_annotation(param.annotation.annotation) in (Kind.TENSOR, Kind.ITERABLE)
        for param in parameters(function)
    )


# Annotation names that say nothing of the class a value is.
_GENERIC_TYPES = frozenset({"Optional", "Union", "None", "Callable", "Any", "Type", "type"})


def _names_other_class(annotation: cst.Annotation | None) -> bool:
    """`StoppingCriterion | None`: an annotation naming classes none of which is named as
    a model or loss (`nn.Module`, `CrossEntropyLoss` are; `Callable` says nothing)."""
    if annotation is None:
        return False
    types = _type_names(annotation.annotation) - _GENERIC_TYPES
    return bool(types) and not any(names_model(t) or t.endswith("Loss") for t in types)


@lru_cache(maxsize=256)
def _parsed_reference(text: str) -> cst.BaseExpression | None:
    try:
        return cst.parse_expression(text.strip())
    except (cst.ParserSyntaxError, ValueError):
        return None


def unquoted(node: cst.BaseExpression) -> cst.BaseExpression:
    """The type a forward reference spells (`"torch.Tensor"`, written in quotes where
    torch is imported only under `TYPE_CHECKING`), parsed; any other annotation as it is
    (a string that is no expression, jaxtyping's `"b n"`, too)."""
    if type(node) in (cst.SimpleString, cst.ConcatenatedString):
        text = node.evaluated_value  # type: ignore[attr-defined]
        if isinstance(text, str) and (parsed := _parsed_reference(text)) is not None:
            return parsed
    return node


def _maps_to_tensors(node: cst.BaseExpression) -> bool:
    """`dict[str, torch.Tensor]`, `Dict[str, Tensor]`, `Mapping[str, Tensor]` (also under
    `Optional`), or a tensordict (`TensorDictBase`, `TensorDict`): a mapping declared to
    hold tensors, each value one (a part in quotes, `dict[str, "torch.Tensor"]`, is the
    type it spells)."""
    node = unquoted(node)
    if isinstance(node, cst.BinaryOperation):  # `dict[str, Tensor] | None`
        return _maps_to_tensors(node.left) or _maps_to_tensors(node.right)
    if isinstance(node, cst.Name | cst.Attribute):
        last = node.attr.value if isinstance(node, cst.Attribute) else node.value
        return last in _TENSOR_MAPPINGS
    if not isinstance(node, cst.Subscript):
        return False
    base = node.value.attr if isinstance(node.value, cst.Attribute) else node.value
    parts = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
    if not isinstance(base, cst.Name):
        return False
    if base.value == "Optional" and len(parts) == 1:
        return _maps_to_tensors(parts[0])
    return (
        base.value in _DICT_ANNOTATIONS
        and len(parts) == 2
        and _tensor_annotation(parts[1]) is Kind.TENSOR
    )


def _names_a_type(node: cst.BaseExpression) -> bool:
    """`"torch.FloatTensor"`, `torch.FloatTensor`: a tensor type, which may name the CPU
    (a dtype, `x.dtype` or `torch.float32`, keeps the device)."""
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString):
        return True
    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    return isinstance(name, str) and name.endswith("Tensor")


def tensor_annotation(node: cst.BaseExpression) -> Kind:
    """What an annotation says its value is (see `_tensor_annotation`)."""
    return _tensor_annotation(node)


def annotates_tensors(node: cst.BaseExpression) -> bool:
    """An annotation whose every alternative is a tensor, a sequence of tensors or None
    (`-> Tensor | tuple[Tensor, Tensor]`, `-> Tuple[torch.Tensor, torch.Tensor]`): no
    Python number, whatever the function's arithmetic looks like."""
    alternatives = _alternatives(node)
    return any(a is not None for a in alternatives) and all(
        a is None or _tensor_annotation(a) in (Kind.TENSOR, Kind.ITERABLE) for a in alternatives
    )


@lint_memo.memo(64)
def _registers_without_moving(node: cst.ClassDef) -> bool:
    """Whether a class defines its own `register_buffer` whose body moves nothing to a
    device (`setattr(self, name, attr)`, no `.to(...)`/`.cuda()`): a plain object's
    registration binds the value where it is. One that moves its tensors (`attr =
    attr.to(torch.device("cuda"))`) puts them on the device, as torch's does with the
    module."""
    for statement in node.body.body:
        if type(statement) is cst.FunctionDef and statement.name.value == "register_buffer":
            return not any(
                type(current) is cst.Call
                and type(current.func) is cst.Attribute  # type: ignore[attr-defined]
                and current.func.attr.value in _MODULE_MOVES  # type: ignore[attr-defined]
                for current in descendants(statement.body)
            )
    return False


def _merges_entries(module: cst.Module, name: str) -> bool:
    """`name` is a function of `module` that writes each entry of its second parameter
    into its first: `for key, value in new.items(): log[key] = ... value ...`."""
    for statement in module.body:
        if type(statement) is not cst.FunctionDef or statement.name.value != name:
            continue
        params = positional_params(statement)
        if len(params) < 2:
            return False
        into, source = params[0].name.value, params[1].name.value
        for loop in descendants(statement.body):
            if not (
                type(loop) is cst.For
                and type(loop.iter) is cst.Call
                and type(loop.iter.func) is cst.Attribute
                and loop.iter.func.attr.value == "items"
                and type(loop.iter.func.value) is cst.Name
                and loop.iter.func.value.value == source
                and type(loop.target) is cst.Tuple
                and len(loop.target.elements) == 2
                and type(loop.target.elements[0].value) is cst.Name
                and type(loop.target.elements[1].value) is cst.Name
            ):
                continue
            key = loop.target.elements[0].value.value
            value = loop.target.elements[1].value.value
            for assign in descendants(loop.body):
                if (
                    type(assign) is cst.Assign
                    and len(assign.targets) == 1
                    and type(target := assign.targets[0].target) is cst.Subscript
                    and type(target.value) is cst.Name
                    and target.value.value == into
                    and len(target.slice) == 1
                    and type(target.slice[0].slice) is cst.Index
                    and type(target.slice[0].slice.value) is cst.Name
                    and target.slice[0].slice.value.value == key
                    and value in names_under(assign.value)
                ):
                    return True
        return False
    return False


def _only_tensors(node: cst.BaseExpression) -> bool:
    """An annotation whose every alternative is a tensor or None (`Tensor | None`,
    `Optional[torch.Tensor]`): not `np.ndarray | torch.Tensor | Batch`, which may be
    anything of these."""
    alternatives = _alternatives(node)
    return any(a is not None for a in alternatives) and all(
        a is None or _tensor_annotation(a) is Kind.TENSOR for a in alternatives
    )


def _alternatives(node: cst.BaseExpression) -> list[cst.BaseExpression | None]:
    """The types a union annotation allows, None for `None`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return [*_alternatives(node.left), *_alternatives(node.right)]
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name | cst.Attribute):
        base = node.value.attr if isinstance(node.value, cst.Attribute) else node.value
        if base.value in ("Optional", "Union"):
            parts = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
            return [None, *parts] if base.value == "Optional" else parts
    if isinstance(node, cst.Name) and node.value == "None":
        return [None]
    return [node]


def array_dtype(node: cst.BaseExpression) -> str | None:
    """The dtype word of a shape-typed tensor annotation, jaxtyping's `Float[Tensor, "b
    n"]`, `Bool[torch.Tensor, "b"]`, or the string-only form projects define over it
    (`Float['b n d']`, `Bool['b nf']`): "Float", "Bool", ... ; None for anything else
    (`Float[np.ndarray, "b"]` is an array on the host)."""
    if type(node) is not cst.Subscript:
        return None
    base = node.value.attr if type(node.value) is cst.Attribute else node.value
    if type(base) is cst.Name and base.value == "TensorType":
        return _tensor_type_dtype(node)
    if type(base) is not cst.Name or ARRAY_DTYPE.match(base.value) is None:
        return None
    parts = [e.slice.value for e in node.slice if type(e.slice) is cst.Index]
    if (
        len(parts) == 1
        and type(parts[0]) in (cst.SimpleString, cst.ConcatenatedString)
        and type(node.value) is cst.Name
    ):
        return base.value  # `Float['b n d']`
    if len(parts) == 2 and _tensor_annotation(parts[0]) is Kind.TENSOR:
        return base.value  # `Float[Tensor, "b n d"]`
    return None


def _tensor_type_dtype(node: cst.Subscript) -> str:
    """torchtyping's `TensorType['b', 'n', int]`, `TensorType["batch", torch.bool]`: the
    dtype word of its dtype part ("Bool", "Int", "Float"), "Shaped" where it names none."""
    for element in node.slice:
        part = element.slice.value if type(element.slice) is cst.Index else None
        word = (
            part.attr.value
            if type(part) is cst.Attribute
            else part.value
            if type(part) is cst.Name
            else None
        )
        if word is None:
            continue
        if word in _TENSOR_TYPE_DTYPES:
            return _TENSOR_TYPE_DTYPES[word]
        if word.startswith(("int", "uint", "long", "short")):
            return "Int"
        if word.startswith(("float", "double", "half", "bfloat")):
            return "Float"
    return "Shaped"


def _tensor_annotation(node: cst.BaseExpression) -> Kind:
    """TENSOR for an annotation naming a tensor (`Tensor`, `Optional[torch.FloatTensor]`,
    `Tensor | None`, a shape-typed one: `Float[Tensor, "b n"]`, `Bool['b n']`); ITERABLE
    for a sequence of tensors (`Sequence[torch.Tensor]`, `tuple[Tensor, Tensor]`: each
    element is one); UNKNOWN for one that only holds tensors (`dict[str, Tensor]`). A
    forward reference, `"torch.Tensor"` (also as a part: `Optional["Tensor"]`), is the
    type it spells."""
    node = unquoted(node)
    if isinstance(node, cst.BinaryOperation):
        return _join([_tensor_annotation(node.left), _tensor_annotation(node.right)])
    if isinstance(node, cst.Subscript):
        if array_dtype(node) is not None:
            return Kind.TENSOR
        base = node.value.attr if isinstance(node.value, cst.Attribute) else node.value
        parts = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if isinstance(base, cst.Name) and base.value in ("Optional", "Union"):
            return _join([_tensor_annotation(part) for part in parts])
        if (
            isinstance(base, cst.Name)
            and base.value in _SEQUENCE_ANNOTATIONS
            and parts
            and all(
                isinstance(part, cst.Ellipsis) or _tensor_annotation(part) is Kind.TENSOR
                for part in parts
            )
        ):
            return Kind.ITERABLE
        return Kind.UNKNOWN
    if isinstance(node, cst.Attribute) and not _TORCH_MODULE_PREFIX.match(
        get_full_name_for_node(node) or ""
    ):
        return Kind.UNKNOWN  # `inspect.Parameter` is no `nn.Parameter`
    name = node.attr if isinstance(node, cst.Attribute) else node
    if isinstance(name, cst.Name) and name.value in TENSOR_ANNOTATIONS:
        return Kind.TENSOR
    return Kind.UNKNOWN


def _rows_of(iterable: cst.BaseExpression, width: int) -> list[list[cst.BaseExpression]]:
    """The rows of a literal `((a, b), (c, d))` whose rows all have `width` plain elements."""
    if not isinstance(iterable, cst.Tuple | cst.List) or not iterable.elements:
        return []
    rows = []
    for element in iterable.elements:
        row = element.value
        if not isinstance(row, cst.Tuple | cst.List) or len(row.elements) != width:
            return []
        if any(isinstance(e, cst.StarredElement) for e in row.elements):
            return []
        rows.append([e.value for e in row.elements])
    return rows


# The stand-in target of a helper's result used where it is made (`_computes_from_tensors`).
_RESULT = cst.Name("_")


def _positions(
    target: cst.BaseExpression, value: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression | cst.StarredElement]]:
    """`a, b = x, y`: the pairs `(a, x)`, `(b, y)` when both sides are literal tuples or
    lists and the target has no starred element; else none. A starred value element
    (`grad, lr, beta1, beta2, wd = p.grad, group["lr"], *group["betas"], group["wd"]`)
    spreads over the targets left between the elements before and after it, each paired
    with that `StarredElement` (an element of what it unpacks); the elements before the
    first star and after the last keep their own values. None where the lengths cannot
    match."""
    if not (type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List)):
        return []
    targets = target.elements  # type: ignore[attr-defined]
    values = value.elements  # type: ignore[attr-defined]
    if any(isinstance(e, cst.StarredElement) for e in targets):
        return []
    stars = [i for i, e in enumerate(values) if isinstance(e, cst.StarredElement)]
    if not stars:
        if len(targets) != len(values):
            return []
        return [(t.value, v.value) for t, v in zip(targets, values, strict=True)]
    front, back = stars[0], len(values) - stars[-1] - 1
    if len(stars) != 1 or front + back > len(targets):
        return []  # (two stars: which targets each fills is unknown)
    star = values[front]
    spread = len(targets) - front - back
    return [
        *((t.value, v.value) for t, v in zip(targets[:front], values[:front], strict=True)),
        *((t.value, star) for t in targets[front : front + spread]),
        *(
            (t.value, v.value)
            for t, v in zip(targets[front + spread :], values[front + 1 :], strict=True)
        ),
    ]


def _operands(node: cst.BinaryOperation | cst.Comparison) -> list[cst.BaseExpression]:
    """The operands of an arithmetic, bitwise or comparison expression."""
    if type(node) is cst.BinaryOperation:
        return [node.left, node.right]
    return [node.left, *(t.comparator for t in node.comparisons)]  # type: ignore[union-attr]


def _compares_with_a_string(node: cst.Comparison) -> bool:
    """`mode == "train"`, `"val" != split`: one equality test with a string literal."""
    if len(node.comparisons) != 1:
        return False
    test = node.comparisons[0]
    return type(test.operator) in (cst.Equal, cst.NotEqual) and any(
        type(side) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
        for side in (node.left, test.comparator)
    )


def _join(kinds: Iterable[Kind]) -> Kind:
    """TENSOR if any part is a tensor; HOST only if every part is host."""
    seen = set(kinds)
    if Kind.TENSOR in seen:
        return Kind.TENSOR
    if seen == {Kind.HOST}:
        return Kind.HOST
    return Kind.UNKNOWN


# What a list filled by `append` holds: values of one kind, tuples (a kind per position)
# or dict literals (a kind per string key, None for all values joined).
Held = Kind | tuple[Kind, ...] | dict[str | None, Kind]


# The kinds of a function's names where a branch of an `if` starts or ends, and the names
# set to `None` there.
BranchState = tuple[dict[str, Kind], frozenset[str]]
# What `TensorKinds.narrow` hands back for `restore`: the name's kind before, and its count
# of bindings then.
Narrowed = tuple[Kind | None, int]


class TensorKinds:
    """Kinds of expressions, with one symbol table per function frame."""

    def __init__(
        self,
        imports: ImportTable,
        returns: NumberReturns | None = None,
        module: cst.Module | None = None,
    ) -> None:
        self.imports = imports
        self.returns = returns
        self._module = module
        # Whether a call runs a function of another project module whose result is computed
        # on the device from a device tensor the call hands it (set by the context where
        # the file is on disk: `module_reads.result_from`).
        self.elsewhere: Callable[[cst.Call], bool] | None = None
        # Whether an attribute of an imported object is a property another project module
        # declares a tensor (`module_reads.tensor_property`); set by the context.
        self.property_elsewhere: Callable[[cst.Attribute], bool] | None = None
        # False where the file's text never spells `from_numpy` (set by the context, which
        # has the text): no function of it hands a value to a torch function that takes only
        # a numpy array (`tensor_uses.arrays_handed_on` need not walk each one).
        self.may_hand_arrays: bool = True
        # The module's record classes with tensor fields (`analysis/records.py`), and per
        # frame the names known to hold one record or a list of them: (class, is_list).
        self._records: dict[str, Record] = (
            record_classes(module, lambda a: _tensor_annotation(a) is Kind.TENSOR)
            if module is not None
            else {}
        )
        self._record_names: list[dict[str, tuple[str, bool]]] = [{}]
        # Lists a function fills with new records (`hyps.append(Hypothesis(...))`): by
        # name for the whole function, whatever else the name is bound to first (`[]`).
        self._filled: list[dict[str, str]] = [{}]
        # Names bound to the values of a record's dict field, per frame: the record's key.
        self._record_elements: list[dict[str, str]] = [{}]
        # Lists a function fills with `append`, per frame: the kind of what they hold, or of
        # each position of the tuples they hold (`beams.append((score, seq))`).
        self._list_elements: list[dict[str, Held]] = [{}]
        self._class_names: list[str | None] = []
        self._frames: list[dict[str, Kind]] = [{}]
        self._dicts: list[set[str | None]] = [set()]
        # Parameters annotated as sequences of tensors, per frame (until rebound).
        self._sequences: list[set[str]] = [set()]
        # Names bound to what a helper xlalint cannot see computed from tensors, per frame:
        # `logprobs = rlhf.logits_to_logprobs(logits, ...)`. Of unknown kind (the helper
        # may return anything), but likely tensors where a tensor's use confirms it.
        self._derived: list[set[str]] = [set()]
        # Dicts of tensors moved to the device, per frame:
        # `batch = {k: v.to(device) for k, v in batch.items()}`.
        self._tensor_dicts: list[set[str]] = [set()]
        # The functions being walked, innermost last (None: the module's own code).
        self._functions: list[cst.FunctionDef | None] = [None]
        # Parameters taken for tensors only by where they are (a per-step function's
        # unannotated parameters), per frame, until rebound: a guess that a use may undo.
        self._presumed: list[set[str]] = [set()]
        # Names whose binding is a plain `None`, per frame (`merge_branches`).
        self._absent: list[set[str]] = [set()]
        # How many times each name was bound in the frame (`narrow`/`restore`).
        self._bindings: list[dict[str, int]] = [{}]
        # How many `with <device>:` blocks enclose the code being walked (kept by the
        # context): torch factories there make their tensors on that device.
        self.device_contexts = 0
        # Names bound to the CPU device (`cpu = torch.device("cpu")`), per frame.
        self._cpu_devices: list[set[str]] = [set()]
        # Names bound to a torch tensor made on the host (`idx = torch.zeros(n)`,
        # `x.cpu()`), per frame; attributes of `self` so bound in any method, per class.
        self._host_tensors: list[set[str]] = [set()]
        self._self_host_tensors: list[set[str]] = [set()]
        # Kinds of the values of dicts built here from literals (`{"a": x, "b": y}`).
        # Per dict, its values' joined kind (key None) and each string key's own kind.
        self._dict_values: list[dict[str, dict[str | None, Kind]]] = [{}]
        self._self_attributes: list[dict[str, Kind]] = [{}]
        # Per class of the module walked, by name: what the methods its instances run
        # (its own, and its bases' that it does not override) bind attributes of `self`
        # to, by (method, attribute): each binding's kind and whether it is a host tensor.
        # Per class being walked, the bindings it inherits, then its own.
        self._class_bindings: dict[str, dict[tuple[str, str], list[tuple[Kind, bool]]]] = {}
        self._walked_bindings: list[dict[tuple[str, str], list[tuple[Kind, bool]]]] = [{}]
        # `_host_built_returns` by (method, name): what every definition builds on the host.
        self._built_returns: dict[tuple[bool, str], frozenset[int | None]] = {}
        # Per class being walked, the attributes of `self` declared to hold a tensor
        # (`self._prompt_lens: Tensor | None`): `declare_attribute`.
        self._declared_tensors: list[set[str]] = [set()]
        # Per class being walked, the attributes of `self` a method binds to a dict
        # (`self.id_dict = dict(...)` in `__init__`): another method's `self.id_dict[k]`
        # looks a key up, whatever the key.
        self._self_dicts: list[set[str]] = [set()]
        # Per class being walked, the methods its body defines (`def restore_model`).
        self._class_methods: list[frozenset[str]] = [frozenset()]
        self._class_tensor_returns: list[frozenset[str]] = [frozenset()]
        # Those annotated to return tensors only (`-> tuple[Tensor, Tensor]`).
        self._class_tensors_returns: list[frozenset[str]] = [frozenset()]
        # Module-level functions annotated to return a tensor (`tensor_returns`), or
        # tensors only.
        body = module.body if module is not None else ()
        self._tensor_functions = tensor_returns(body)
        self._tensors_functions = tensor_returns(body, Kind.ITERABLE)
        # Per method being walked (None for other functions), the kinds its `return`s give:
        # one kind, or one per position of a returned tuple. Once walked, a method name
        # whose every definition in a class of the module returns only tensors (`def
        # get_action(self, x): ... return action, log_prob`) is in `_tensor_methods`.
        self._method_returns: list[list[tuple[Kind, ...]] | None] = []
        self._module_classes: set[str] = set()
        self._tensor_methods: dict[str, bool] = {}
        # The same for the methods of every class of the module, by (class, method): what
        # `self.get_alpha_bar(step)` gives in another method of that class (a noise
        # schedule's tensors, whether or not the class is an `nn.Module`).
        self._own_tensor_methods: dict[tuple[str | None, str], bool] = {}
        # The module classes of the file whose `forward`, once walked, returns only Python
        # values (`return stop` with `stop = bool(action == self.stop)`), and per class
        # being walked, its attributes that hold an instance of a module class of the file
        # (`self.add_node_agent = AddNode(...)`): calling one gives what that class's
        # `forward` gives.
        self._host_forwards: set[str] = set()
        self._self_classes: list[dict[str, str]] = [{}]
        # Per class being walked, whether each attribute it assigns holds an
        # `nn.ModuleDict` on every assignment (`self.metrics = nn.ModuleDict(metrics)`):
        # the values of its `items()`/`values()` are modules.
        self._self_module_dicts: list[dict[str, bool]] = [{}]
        # Per class being walked, the buffers it keeps on the host (`host_buffers`).
        self._host_buffers: list[frozenset[str]] = [frozenset()]
        # Per class: whether it defines a `register_buffer` of its own that moves nothing
        # (`setattr(self, name, attr)`): a plain object's, not torch's.
        self._plain_registrations: list[bool] = [False]
        # Per function being walked: the class it is a method of (None if none), and
        # whether that class is an `nn.Module`.
        self._methods_walked: list[tuple[str | None, bool]] = []
        # `self.clip_func = torch.nn.utils.clip_grad_norm_`: the torch functions an attribute
        # is set to anywhere in the class, so that calling it has their result's kind.
        self._self_functions: list[dict[str, set[str]]] = [{}]
        # Per frame, the attributes of `self` its framework fills with the batch's tensors.
        self._batch_state: list[frozenset[str]] = [frozenset()]
        # Per frame, names bound to arithmetic on other names (`adjusted = loss * n`): what
        # they were scaled from, which a `backward()` on them shows to be the loss.
        self._scaled: list[dict[str, tuple[str, ...]]] = [{}]
        # Per frame, the function being walked, and the names it runs backward on (found on
        # the first question: `trained_names`).
        self._function_nodes: list[cst.FunctionDef | None] = [None]
        # Per frame, the names its function uses as tensors (`tensor_uses`), on demand.
        self._uses: list[frozenset[str] | None] = [None]
        # Per frame, the names its function calls a tensor-only method on, on demand.
        self._receivers: list[frozenset[str] | None] = [None]
        # Per frame, the values bound to names the function hands next to
        # `torch.from_numpy` (`tensor_uses.arrays_handed_on`), on demand.
        self._arrays: list[frozenset[int] | None] = [frozenset()]
        self._trained: list[tuple[dict[str, int], dict[int, int]] | None] = [({}, {})]
        # Per frame, the names the function walks as modules (`next(pnet.parameters())`),
        # found on the first question (`_walked_as_module`).
        self._module_uses: list[frozenset[str] | None] = [frozenset()]
        # Per frame, parameters annotated with a class whose name is no model's, until
        # rebound: their names (`stopping_criterion`) do not make them models.
        self._typed: list[set[str]] = [set()]
        # Parameters annotated as tensors (`input: torch.Tensor`), and names bound to rows
        # of them, per frame: tensors by the code's word, not by presumption.
        self._declared: list[set[str]] = [set()]
        # Per frame, names last bound as one element of an unpacked tuple (`_, lengths =
        # self.embedder(x)`): taken for tensors by position only, so `max(lengths)` of one
        # says nothing (a tuple of tensors and `list[int]` lengths unpacks the same way).
        self._unpacked: list[set[str]] = [set()]
        # Names bound to what another module's function computes on the host
        # (`_computes_on_host`): their fields are host values too.
        self._host_computed: list[set[str]] = [set()]
        # Per frame, names the function uses as a tensor no module is (`used_as_data`):
        # their names (`heads`, `neg_heads`) do not make them models. Found on the first
        # question about a name that says model (None until then).
        self._data_names: list[set[str] | None] = [set()]
        # Per frame, names bound to a progress bar or iterator over something (`with
        # tqdm(enumerate(loader)) as t:`, `pbar = tqdm(loader)`): a loop over the name
        # yields what the wrapped iterable yields.
        self._wrappers: list[dict[str, cst.Call]] = [{}]
        self._unwrapping: set[str] = set()  # names `bind_loop_target` is looking through
        # Names and `self` attributes holding another array library's values
        # (`foreign_arrays.py`: `loss` of an MLX `value_and_grad`): host values.
        self.foreign = ForeignArrays(imports, module)

    # -- frames ---------------------------------------------------------------------------
    def push_function(
        self,
        node: cst.FunctionDef,
        in_class: bool,
        module_call: bool = False,
        module_method: bool = False,
        method_of: str | None = None,
        batch_state: frozenset[str] = frozenset(),
        autograd_backward: bool = False,
    ) -> None:
        """Enter a function; `batch_state`: the attributes of `self` (or of `self.learn`)
        that its framework fills with the current batch's device tensors (a fastai
        callback's `self.pred` in `after_pred`: `hotness.batch_state`); `autograd_backward`:
        the function is the `backward` of a custom autograd function, whose positional
        parameters after `ctx` are the output gradients autograd hands it, device tensors
        (`def backward(ctx, grad_output: Any)`: whatever the annotation says)."""
        frame: dict[str, Kind] = {}
        positional = positional_params(node)
        # Not callback hooks (`on_prediction_step(self, args, state, control)`): they get
        # the trainer's state, not tensors.
        tensor_params = module_call or (
            _TENSOR_PARAM_FUNCTIONS.match(node.name.value) is not None
            and not node.name.value.startswith("on_")
        )
        sequences: set[str] = set()
        dicts: set[str | None] = set()
        presumed: set[str] = set()
        tensors: set[str] = set()
        typed: set[str] = set()
        declared: set[str] = set()
        documented = documented_host_parameters(node)
        documented_tensors = documented_tensor_parameters(node)
        for index, param in enumerate(parameters(node)):
            name = param.name.value
            if in_class and index == 0 and param in positional:
                continue  # self / cls
            if param.annotation is None and name in documented:
                # `target_is_real (bool): ...` in the docstring: annotated there.
                frame[name] = Kind.HOST
                continue
            frame[name] = self._param_kind(param, tensor_params)
            if (
                frame[name] is Kind.HOST
                and param.annotation is None
                and param.default is None
                and name in documented_tensors
            ):
                # `target_is_real (bool | Tensor)`: the docstring's type, not the name.
                frame[name] = Kind.TENSOR if tensor_params else Kind.UNKNOWN
            if frame[name] is Kind.TENSOR and param.annotation is None:
                presumed.add(name)
            elif frame[name] is Kind.TENSOR:
                declared.add(name)
            if node.name.value == "step" and _ENVIRONMENT_ACTION.match(name):
                frame[name] = Kind.UNKNOWN
            if frame[name] is Kind.ITERABLE and param.annotation is not None:
                sequences.add(name)
            if (
                frame[name] is Kind.HOST
                and param.annotation is not None
                and names_under(param.annotation.annotation) & _DICT_ANNOTATIONS
            ):
                dicts.add(name)  # `features: dict[str, Any]`: its values may be tensors
            if param.annotation is not None and _maps_to_tensors(param.annotation.annotation):
                tensors.add(name)  # `x: dict[str, torch.Tensor]`: `x["lengths"]` is one
            if frame[name] is Kind.UNKNOWN and _names_other_class(param.annotation):
                typed.add(name)  # `stopping_criterion: StoppingCriterion`: no loss module
        if autograd_backward:
            for param in positional[1:]:
                frame[param.name.value] = Kind.TENSOR
                declared.add(param.name.value)
                presumed.discard(param.name.value)
                typed.discard(param.name.value)
        hook_output = self._forward_hook_output(node, in_class)
        if hook_output is not None and frame.get(hook_output) is not Kind.HOST:
            # `def save_activation(self, module, input, output)` registered with
            # `layer.register_forward_hook(self.save_activation)`: torch hands it the
            # layer's output, a device tensor on every forward.
            frame[hook_output] = Kind.TENSOR
        host_copies = (
            host_parameters(self._module, node, in_class, method_of)
            if self._module is not None
            else {}
        )
        for name in host_copies:
            # Every call of the function in this module hands it a host copy.
            frame[name] = Kind.HOST
            presumed.discard(name)
        if collates(node, method_of):
            # `pad_collate_fn(batch)`: the loader runs it on the dataset's samples, on the
            # host (in its workers), before the training loop moves the batch it returns.
            for name in frame:
                frame[name] = Kind.HOST
                dicts.add(name)
                presumed.discard(name)
        unmoved = moved_later(node, [n for n in frame if n not in host_copies])
        for name in unmoved:
            # `batch = move_to_device(batch, self.device)` further down: handed over on the
            # host, and so is every value read from it before the move.
            frame[name] = Kind.HOST
            dicts.add(name)
            presumed.discard(name)
        numbers = [
            param.name.value
            for param in parameters(node)
            if frame.get(param.name.value) is Kind.HOST
            and param.annotation is not None
            and type(param.annotation.annotation) is cst.Name
            and param.annotation.annotation.value in _NUMBER_ANNOTATIONS
        ]
        # Parameters presumed Python numbers by their names alone (`mel_input_length`,
        # `count`, `idx`): indexed, they are not numbers either (`mel_input_length[bib]
        # .item()`: the lengths of a batch).
        numbers += [
            param.name.value
            for param in parameters(node)
            if frame.get(param.name.value) is Kind.HOST
            and param.annotation is None
            and param.default is None
            and (_INDEX_NAME.match(param.name.value) or _HOST_PARAM_NAME.match(param.name.value))
        ]
        for name in indexed_numbers(node, numbers) if numbers else ():
            # `div = a / b`, then `div[div != div] = 0.0`, with `a: float`: no number has
            # elements, so the annotation (or the name) is wrong; the parameter holds what
            # it is handed.
            frame[name] = Kind.UNKNOWN
        for name in sliced_backwards(node, presumed):
            # `image[:, :, ::-1]`: a numpy array handed to `forward`, not a tensor.
            frame[name] = Kind.HOST
            presumed.discard(name)
        for name in used_as_objects(node, presumed):
            # `g.num_nodes()`: a graph, a molecule, some object of a library; not a tensor.
            frame[name] = Kind.UNKNOWN
            presumed.discard(name)
        for name in compared_with_strings(node, presumed):
            # `stage == "train"`: a stage's name handed along with the batch.
            frame[name] = Kind.HOST
            presumed.discard(name)
        for name in used_as_sizes(node, presumed, self.imports):
            # `torch.zeros(B, n_samples, K, L)`: a count handed along with the batch.
            frame[name] = Kind.HOST
            presumed.discard(name)
        closure = self._host_closure(node, frame)
        for name in closure:
            # `[mask] = atom_mask.cpu()`, then `def per_token(x): ... indices[mask]`: the
            # nested function reads the enclosing function's host value.
            frame[name] = Kind.HOST
        self._frames.append(frame)
        self._method_returns.append([] if method_of is not None else None)
        self._methods_walked.append((method_of, module_method))
        self._record_names.append(self._record_parameters(node, in_class))
        self._record_elements.append({})
        self._list_elements.append({})
        self._filled.append(filled_lists(node, self._records) if self._records else {})
        self._dicts.append(dicts)
        self._sequences.append(sequences)
        self._derived.append(set())
        self._tensor_dicts.append(tensors)
        self._functions.append(node)
        self._presumed.append(presumed)
        self._absent.append(set())
        self._bindings.append({})
        self._cpu_devices.append(set())
        self._host_tensors.append(
            {name for name, tensor in host_copies.items() if tensor} | closure
        )
        self._dict_values.append({name: {None: Kind.HOST} for name in unmoved})
        self._batch_state.append(batch_state)
        self._scaled.append({})
        self._function_nodes.append(node)
        self._uses.append(None)
        self._receivers.append(None)
        self._arrays.append(None)
        self._trained.append(None)
        self._module_uses.append(None)
        self._typed.append(typed)
        self._declared.append(declared)
        self._unpacked.append(set())
        self._host_computed.append(set())
        self._data_names.append(None)
        self._wrappers.append({})
        self.foreign.push_function()

    def _host_closure(self, node: cst.FunctionDef, frame: dict[str, Kind]) -> set[str]:
        """The host tensors of the enclosing function that `node`, defined in its body,
        reads as free names (a closure): names the enclosing function binds once, to a
        tensor on the host (`[mask] = atom_single_mask.cpu()`, `idx = ids.cpu()`), before
        the `def`, and that `node` neither takes nor binds. Bound once and before the
        `def`, a name holds that value whenever the nested function runs."""
        enclosing = self._function_nodes[-1]
        hosts = self._host_tensors[-1]
        if enclosing is None or not hosts:
            return set()
        outer = self._frames[-1]
        counts = binding_counts(enclosing)
        own = binding_counts(node)
        return {
            name
            for name in hosts
            if outer.get(name) is Kind.HOST
            and counts.get(name) == 1
            and name not in own
            and name not in frame
        }

    def note_return(self, value: cst.BaseExpression | None) -> None:
        """A `return` of the function being walked (a method: others are not asked)."""
        returns = self._method_returns[-1] if self._method_returns else None
        if returns is None:
            return
        if value is None:
            returns.append(())
        elif isinstance(value, cst.Tuple):
            returns.append(tuple(self.of(e.value) for e in value.elements))
        else:
            returns.append((self.of(value),))

    def _walked_as_module(self, name: str) -> bool:
        """`name` (bound here, of no known kind, no other class by its annotation) is one
        the function walks as an `nn.Module`: it calls `name.parameters()` (or `buffers`,
        `modules`, `children` and their `named_` forms, which only a module has) somewhere
        in its body, as facenet-pytorch's `detect_face(imgs, minsize, pnet, ...)` reads
        `next(pnet.parameters()).dtype`; so `pnet(im_data)` is a model's output. Found by
        one walk of the function, on the first question."""
        if self.lookup(name) is not Kind.UNKNOWN or name in self._typed[-1]:
            return False
        known = self._module_uses[-1]
        if known is None:
            function = self._function_nodes[-1]
            found: set[str] = set()
            if function is not None:
                for node in descendants(function.body, _NOT_OWN_CODE):
                    if type(node) is not cst.Call:
                        continue
                    receiver = _receiver_of(node, _MODULE_ONLY_METHODS)  # type: ignore[arg-type]
                    if receiver is not None:
                        found.add(receiver)
            known = self._module_uses[-1] = frozenset(found)
        return name in known

    def _in_module_method(self) -> bool:
        """The function being walked is a method of an `nn.Module` class of the module."""
        return bool(self._methods_walked) and self._methods_walked[-1][1]

    def pop_function(self, name: str | None = None) -> None:
        returns = self._method_returns.pop() if self._method_returns else None
        owner, module_method = self._methods_walked.pop() if self._methods_walked else (None, False)
        if returns is not None and name is not None:
            tensors = bool(returns) and all(
                kinds and all(k is Kind.TENSOR for k in kinds) for kinds in returns
            )
            if module_method:
                self._tensor_methods[name] = self._tensor_methods.get(name, True) and tensors
            key = (owner, name)
            self._own_tensor_methods[key] = self._own_tensor_methods.get(key, True) and tensors
            if module_method and name == "forward" and owner is not None:
                host = bool(returns) and all(
                    kinds and all(k is Kind.HOST for k in kinds) for kinds in returns
                )
                if host:
                    self._host_forwards.add(owner)
                else:
                    self._host_forwards.discard(owner)
        self._frames.pop()
        self._record_names.pop()
        self._filled.pop()
        self._record_elements.pop()
        self._list_elements.pop()
        self._dicts.pop()
        self._sequences.pop()
        self._derived.pop()
        self._tensor_dicts.pop()
        self._functions.pop()
        self._presumed.pop()
        self._absent.pop()
        self._bindings.pop()
        self._cpu_devices.pop()
        self._host_tensors.pop()
        self._dict_values.pop()
        self._batch_state.pop()
        self._scaled.pop()
        self._function_nodes.pop()
        self._uses.pop()
        self._receivers.pop()
        self._arrays.pop()
        self._trained.pop()
        self._module_uses.pop()
        self._typed.pop()
        self._declared.pop()
        self._unpacked.pop()
        self._host_computed.pop()
        self._data_names.pop()
        self._wrappers.pop()
        self.foreign.pop_function()

    def push_class(
        self,
        name: str | None = None,
        module: bool = False,
        methods: frozenset[str] = frozenset(),
        tensor_methods: frozenset[str] = frozenset(),
        tensors_methods: frozenset[str] = frozenset(),
        bases: Sequence[str] = (),
        overridden: Callable[[], frozenset[str]] = frozenset,
        node: cst.ClassDef | None = None,
    ) -> None:
        """Entering a class; `module`: a module class (`module_classes.is_module_class`),
        whose instances (`pg = Policy(env)`) are modules (`class MaskedCELoss(
        nn.CrossEntropyLoss)`: calling it is calling the loss). `methods`: the names the
        class body defines with `def`: `self.restore_model(...)` calls one of them, not a
        submodule; `tensor_methods`: those annotated to return a tensor (`tensor_returns`),
        `tensors_methods`: those annotated to return tensors only (a tuple of them).
        `bases`: the names of its bases; `overridden`: the methods it defines without
        running its base's (`super().m(...)`), asked only where a base of the module
        bound attributes (a walk of every method's body). An attribute that every binding of the
        base methods its instances run gives one kind (a tensor built on the host in
        the inherited `__init__`, moved only in a method the class overrides) starts
        with that kind in its methods. `node`: the class, for the buffers a trainer
        module keeps on the host (`host_buffers`)."""
        if name is not None and module:
            self._module_classes.add(name)
        inherited: dict[tuple[str, str], list[tuple[Kind, bool]]] = {}
        replaced: frozenset[str] | None = None
        for base in bases:
            bindings = self._class_bindings.get(base)
            if not bindings:
                continue
            if replaced is None:
                replaced = overridden()
            for (method, attribute), given in bindings.items():
                if method not in replaced:
                    inherited.setdefault((method, attribute), []).extend(given)
        self._walked_bindings.append(inherited)
        by_attribute: dict[str, list[tuple[Kind, bool]]] = {}
        for (_, attribute), given in inherited.items():
            by_attribute.setdefault(attribute, []).extend(given)
        attributes: dict[str, Kind] = {}
        host_tensors: set[str] = set()
        for attribute, given in by_attribute.items():
            kinds = {kind for kind, _ in given}
            if len(kinds) == 1 and Kind.UNKNOWN not in kinds:
                attributes[attribute] = kinds.pop()
                if all(host for _, host in given):
                    host_tensors.add(attribute)
        self._class_methods.append(methods)
        self._class_tensor_returns.append(tensor_methods)
        self._class_tensors_returns.append(tensors_methods)
        self._self_attributes.append(attributes)
        self._declared_tensors.append(set())
        self._self_dicts.append(set())
        self._self_host_tensors.append(host_tensors)
        self._self_functions.append({})
        self._self_classes.append({})
        self._self_module_dicts.append({})
        self._class_names.append(name)
        self.foreign.push_class()
        self._host_buffers.append(
            self.host_buffers(node) if module and node is not None else frozenset()
        )
        self._plain_registrations.append(
            not module and node is not None and _registers_without_moving(node)
        )

    def host_buffers(self, node: cst.ClassDef) -> frozenset[str]:
        """The buffers a trainer module keeps on the host: a module class whose methods
        run backward (`self.accelerator.backward(loss)`, `loss.backward()`) holds the
        training loop, and hands its networks to the device (`accelerator.prepare(model)`)
        without moving itself (no `self.to(...)`/`self.cuda()` in it), so a buffer it
        registers with a tensor a factory builds without a device
        (`self.register_buffer("step", torch.tensor(0))`) stays on the host where no
        method binds the attribute again (`self.step.add_(1)`, `self.step += 1` and
        `self.step.copy_(n)` update it in place; `self.step = torch.tensor(n,
        device=self.device)` in a `load` makes it something else)."""
        trains = False
        registered: set[str] = set()
        bound: set[str] = set()
        for current in descendants(node):
            kind = type(current)
            if kind is cst.Call:
                func = current.func  # type: ignore[attr-defined]
                if type(func) is not cst.Attribute:
                    continue
                method = func.attr.value
                if method == "backward":
                    trains = True
                elif method in _MODULE_MOVES and self_attribute(func) is not None:
                    return frozenset()  # `self.to(device)`: the module moves itself
                elif method == "register_buffer" and self_attribute(func) is not None:
                    args = current.args  # type: ignore[attr-defined]
                    if (
                        len(args) >= 2
                        and type(args[0].value) is cst.SimpleString
                        and args[1].keyword is None
                        and type(args[1].value) is cst.Call
                        and not any(_is_keyword(a, "device") for a in args[1].value.args)
                        and _builds_from_sizes(
                            self.imports.resolve(args[1].value.func) or "", args[1].value
                        )
                    ):
                        registered.add(str(args[0].value.evaluated_value))
            elif kind in _BINDINGS:
                targets = (
                    [t.target for t in current.targets]  # type: ignore[attr-defined]
                    if kind is cst.Assign
                    else [current.target]  # type: ignore[attr-defined]
                )
                for target in targets:
                    bound.update(_self_attributes_in(target))
        return frozenset(registered - bound) if trains else frozenset()

    @property
    def module_classes(self) -> frozenset[str]:
        """The module classes of the file walked so far (bases of later module classes)."""
        return frozenset(self._module_classes)

    def pop_class(self) -> None:
        bindings = self._walked_bindings.pop() if len(self._walked_bindings) > 1 else {}
        if self._class_names and self._class_names[-1] is not None:
            self._class_bindings[self._class_names[-1]] = bindings  # type: ignore[index]
        self._class_methods.pop()
        self._class_tensor_returns.pop()
        self._class_tensors_returns.pop()
        self._self_attributes.pop()
        self._declared_tensors.pop()
        self._self_dicts.pop()
        self._self_host_tensors.pop()
        self._self_functions.pop()
        self._self_classes.pop()
        self._self_module_dicts.pop()
        self._host_buffers.pop()
        self._plain_registrations.pop()
        self.foreign.pop_class()
        if self._class_names:
            self._class_names.pop()

    # -- records (`analysis/records.py`) --------------------------------------------------
    def _record_parameters(
        self, node: cst.FunctionDef, in_class: bool
    ) -> dict[str, tuple[str, bool]]:
        """`self` in a method of a record class; parameters annotated with a record class
        or a list of one."""
        if not self._records:
            return {}
        found: dict[str, tuple[str, bool]] = {}
        params = parameters(node)
        owner = self._class_names[-1] if self._class_names else None
        for index, param in enumerate(params):
            if in_class and index == 0 and param in positional_params(node):
                if owner in self._records:
                    found[param.name.value] = (owner, False)
                continue
            if param.annotation is not None and (
                record := annotated_record(param.annotation.annotation, self._records)
            ):
                found[param.name.value] = record
        return found

    def record_method(self, name: str) -> bool:
        """A method some record class of the module defines (`hyp.asdict()`)."""
        return any(name in record.methods for record in self._records.values())

    def record_of(self, node: cst.BaseExpression) -> str | None:
        """The record class of one object: a name bound to one, an element of a list of
        them, `Record(...)`, `record._replace(...)`."""
        if not self._records:
            return None
        if type(node) is cst.Name:
            known = self._record_names[-1].get(node.value)
            return known[0] if known is not None and not known[1] else None
        if type(node) is cst.Subscript:
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                return self.record_list(node.value)
            return None
        if type(node) is cst.Call:
            if (built := constructed_record(node, self._records)) is not None:
                return built
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "_replace":
                return self.record_of(func.value)
        return None

    def record_list(self, node: cst.BaseExpression) -> str | None:
        """The record class of the elements of a list: a name bound to such a list, a
        slice of one, `sorted(...)`/`list(...)`/`reversed(...)` of one."""
        if not self._records:
            return None
        if type(node) is cst.Name:
            known = self._record_names[-1].get(node.value)
            if known is not None and known[1]:
                return known[0]
            return self._filled[-1].get(node.value)
        if type(node) is cst.Subscript:
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
                return self.record_list(node.value)
            return None
        if (
            type(node) is cst.Call
            and isinstance(node.func, cst.Name)
            and node.func.value in ("sorted", "list", "reversed")
            and node.args
            and self.lookup(node.func.value) is None
        ):
            return self.record_list(node.args[0].value)
        if type(node) is cst.ListComp:
            return self.record_of(node.elt)  # `[h._replace(...) for h in hyps]`
        return None

    def _record_field(self, node: cst.BaseExpression) -> Record | None:
        """The record an attribute `obj.field` reads a field of."""
        if type(node) is not cst.Attribute:
            return None
        cls = self.record_of(node.value)  # type: ignore[attr-defined]
        return self._records[cls] if cls is not None else None

    def _bind_record(self, target: cst.BaseExpression, record: tuple[str, bool] | None) -> None:
        if isinstance(target, cst.Name) and record is not None:
            self._record_names[-1][target.value] = record

    def record_root(self, node: cst.BaseExpression) -> str | None:
        """The record whose field a value is: `self` for `self.score`, and for `v` bound
        by `for k, v in self.scores.items()`; None for anything else."""
        if type(node) is cst.Name:
            return self._record_elements[-1].get(node.value)
        if type(node) is cst.Attribute and self._record_field(node) is not None:
            key = binding_key(node.value)  # type: ignore[attr-defined]
            return None if key is None else f"record:{key}"
        return None

    def note_backward(self, call: cst.Call) -> None:
        """`loss.backward()` on a name of this function whose kind is unknown (`loss, out =
        self._compute(x, y)`): only a tensor runs autograd's backward, so the name holds one
        (on the device the model trains on) until it is bound again, and so do the names
        it was scaled from (`adjusted = loss_tensor * step.size`, then `adjusted.backward()`:
        `loss_tensor` is the step's loss). Positional arguments
        (`layer.backward(dout)` of a hand-written network) say nothing."""
        name = backward_receiver(call)
        if name is None:
            return
        for trained in (name, *self._scaled[-1].get(name, ())):
            if self._frames[-1].get(trained) is Kind.UNKNOWN:
                self._frames[-1][trained] = Kind.TENSOR

    def _trained_names(self) -> tuple[dict[str, int], dict[int, int]]:
        """Names the function being walked runs autograd's backward on (`loss.backward()`,
        keyword arguments at most), and the names those are sums or scalings of (`loss =
        actor_loss + critic_loss`): the step's loss and its terms, each with the position
        (in walk order) of its last backward; and the position of each assigned value. A
        binding before that backward holds the loss, a tensor on the training device from
        there on; one after it (`loss = self.history[-1]`) holds whatever it is bound to.
        A module's `training_step` hands the loss it returns (`return loss`, `return
        {"loss": loss}`) to the framework that calls it (Lightning), which runs backward on
        it: that return counts as the backward.
        Found by one walk of the function, on the first question."""
        known = self._trained[-1]
        if known is not None:
            return known
        function = self._function_nodes[-1]
        names: dict[str, int] = {}
        values: dict[int, int] = {}
        sums: list[tuple[set[str], tuple[str, ...]]] = []
        returns_loss = self._returns_its_loss(function)
        if function is not None:
            for index, node in enumerate(descendants(function.body, _NOT_OWN_CODE)):
                kind = type(node)
                if kind is cst.Return and returns_loss:
                    for name in _returned_loss(node.value):  # type: ignore[attr-defined]
                        names[name] = index
                elif kind is cst.Call:
                    trained = backward_receiver(node)  # type: ignore[arg-type]
                    if trained is not None:
                        names[trained] = index
                    else:
                        # `self._backward_and_step(optimizer, loss, model)`: a helper of
                        # the module that runs backward on the parameter it binds.
                        for name in self._handed_to_backward(node):  # type: ignore[arg-type]
                            names[name] = index
                elif kind is cst.Assign or kind is cst.AnnAssign:
                    value = node.value  # type: ignore[attr-defined]
                    if value is None:
                        continue
                    values[id(value)] = index
                    terms = _scaled_names(value)
                    if terms:
                        targets = (
                            [t.target for t in node.targets]  # type: ignore[attr-defined]
                            if kind is cst.Assign
                            else [node.target]  # type: ignore[attr-defined]
                        )
                        bound = set().union(*(target_names(t) for t in targets))
                        sums.append((bound, terms))
        changed = bool(names)
        while changed:
            changed = False
            for bound, terms in sums:
                last = max((names[n] for n in bound if n in names), default=None)
                if last is None:
                    continue
                for term in terms:
                    if names.get(term, -1) < last:
                        names[term] = last
                        changed = True
        found = self._trained[-1] = (names, values)
        return found

    def _handed_to_backward(self, call: cst.Call) -> tuple[str, ...]:
        """The names `call` hands to a function of the module (`f(loss)`, or a method of
        the class being walked through `self`) that runs autograd's backward on the
        parameter each binds (`def _backward_and_step(self, optimizer, loss, model):
        loss.backward()`): the step's loss, a tensor, handed to be trained on."""
        func = call.func
        module = self._module
        if module is None or not call.args:
            return ()
        callee: cst.FunctionDef | None = None
        method = False
        if type(func) is cst.Name:
            callee = top_level_definitions(module).get(func.value)
        elif (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and self._class_names
            and self._class_names[-1] is not None
            and func.attr.value in self._class_methods[-1]
        ):
            callee = class_method(module, self._class_names[-1], func.attr.value)
            method = callee is not None and not is_staticmethod(callee)
        if callee is None:
            return ()
        trained = backward_parameters(callee)
        if not trained:
            return ()
        bound = bind(call, signature_of(callee, method))
        if bound is None:
            return ()
        return tuple(
            value.value
            for param, value in bound.items()
            if param in trained and type(value) is cst.Name
        )

    def _returns_its_loss(self, function: cst.FunctionDef | None) -> bool:
        """`training_step` of a module class (a `LightningModule`): what it returns is the
        loss its framework runs backward on."""
        return (
            function is not None
            and function.name.value == "training_step"
            and self._in_module_method()
        )

    def note_buffer(self, call: cst.Call) -> None:
        """`self.register_buffer("inited", torch.Tensor([False]))` (or `register_parameter`):
        the module's attribute of that name is a tensor (a buffer takes a tensor or None),
        moved with the module to its device: `if self.inited:` in a method `forward` calls
        reads it on the host. So is a torchmetrics state with a tensor default
        (`self.add_state("count", default=torch.tensor(0))`), which the metric's `.to()`
        moves; a list state (`default=[]`) is a Python list."""
        func = call.func
        if (
            type(func) is not cst.Attribute
            or func.attr.value not in REGISTERED_TENSORS  # type: ignore[attr-defined]
            or type(func.value) is not cst.Name  # type: ignore[attr-defined]
            or func.value.value != "self"  # type: ignore[attr-defined]
            or not call.args
            or call.args[0].keyword is not None
            or call.args[0].star
        ):
            return
        name = call.args[0].value
        value = next(
            (
                arg.value
                for index, arg in enumerate(call.args)
                if not arg.star
                and (
                    (index == 1 and arg.keyword is None)
                    or (
                        arg.keyword is not None
                        and arg.keyword.value in ("tensor", "param", "default")
                    )
                )
            ),
            None,
        )
        if (
            type(name) is not cst.SimpleString
            or value is None
            or (type(value) is cst.Name and value.value == "None")  # type: ignore[attr-defined]
            or type(value) in _CONTAINER_LITERALS
        ):
            return
        if (
            func.attr.value == "register_buffer"  # type: ignore[attr-defined]
            and self._plain_registrations[-1]
            and self.of(value) is not Kind.TENSOR
        ):
            # A plain class's own `register_buffer` that only binds what it is handed
            # (`setattr(self, name, attr)`, a sampler copied from a module's code): the
            # attribute holds that value where it is, a host schedule on the host.
            return
        attribute = name.evaluated_value  # type: ignore[attr-defined]
        if isinstance(attribute, str) and attribute.isidentifier():
            if attribute in self._host_buffers[-1]:
                # A trainer module's step counter: it stays where it was made, the host.
                self._self_attributes[-1][attribute] = Kind.HOST
                self._self_host_tensors[-1].add(attribute)
                return
            self._self_attributes[-1][attribute] = Kind.TENSOR

    def note_append(self, call: cst.Call) -> None:
        """`xs.append(v)`: the list `xs` holds values of `v`'s kind (a tuple's, position by
        position), joined over its appends until `xs` is bound again."""
        func = call.func
        if (
            type(func) is not cst.Attribute
            or func.attr.value != "append"  # type: ignore[attr-defined]
            or type(func.value) is not cst.Name  # type: ignore[attr-defined]
            or len(call.args) != 1
            or call.args[0].keyword is not None
            or call.args[0].star
        ):
            return
        name = func.value.value  # type: ignore[attr-defined]
        value = call.args[0].value
        held: Held
        if type(value) is cst.Tuple and not any(
            type(e) is cst.StarredElement
            for e in value.elements  # type: ignore[attr-defined]
        ):
            held = tuple(self.of(e.value) for e in value.elements)  # type: ignore[attr-defined]
        elif (literal := self._literal_dict(value)) is not None:
            held = literal  # `hyps.append({"score": s, "yseq": seq})`
        else:
            held = self.of(value)
        known = self._list_elements[-1].get(name)
        if known is None:
            self._list_elements[-1][name] = held
        elif isinstance(known, tuple) and isinstance(held, tuple) and len(known) == len(held):
            self._list_elements[-1][name] = tuple(
                _join(pair) for pair in zip(known, held, strict=True)
            )
        elif isinstance(known, dict) and isinstance(held, dict):
            self._list_elements[-1][name] = {
                key: _join((known[key], held[key])) for key in known.keys() & held.keys()
            }
        elif isinstance(known, Kind) and isinstance(held, Kind):
            self._list_elements[-1][name] = _join((known, held))
        else:
            self._list_elements[-1][name] = Kind.UNKNOWN

    def note_merge(self, call: cst.Call) -> None:
        """`accum_log(logs, {"loss": loss.item() / n, "gen_loss": gen_loss / n})` with a
        function of the module that writes each entry of its second parameter into its
        first (`for key, value in new.items(): log[key] = log.get(key, 0.) + value`): the
        dict `logs` then holds, under each key of the literal, a value of that entry's kind
        (joined with what it held there)."""
        func = call.func
        if type(func) is not cst.Name or self._module is None or self.lookup(func.value):
            return
        args = [a.value for a in call.args if a.keyword is None and not a.star]
        if len(args) < 2 or type(args[0]) is not cst.Name:
            return
        literal = self._literal_dict(args[1])
        if literal is None or not _merges_entries(self._module, func.value):
            return
        name = args[0].value
        known = self._dict_values[-1].get(name) or {}
        merged: dict[str | None, Kind] = dict(known)
        for key, kind in literal.items():
            if key is not None:
                merged[key] = _join((known[key], kind)) if key in known else kind
        merged[None] = known.get(None, Kind.UNKNOWN)  # other keys: what it held, if known
        self._dict_values[-1][name] = merged

    def _literal_dict(self, value: cst.BaseExpression) -> dict[str | None, Kind] | None:
        """The kinds of a dict literal's values (`{"a": x, "b": y}`): all of them joined
        (key None) and each string key's own."""
        if type(value) is not cst.Dict or not value.elements:  # type: ignore[attr-defined]
            return None
        elements = value.elements  # type: ignore[attr-defined]
        if not all(type(e) is cst.DictElement for e in elements):
            return None
        values: dict[str | None, Kind] = {None: _join(self.of(e.value) for e in elements)}
        for e in elements:
            if type(e.key) is cst.SimpleString:
                values[str(e.key.evaluated_value)] = self.of(e.value)
        return values

    def list_elements(self, node: cst.BaseExpression) -> Held | None:
        """What a list filled by `append` holds (`list_elements`), also through a slice
        of it or `sorted(...)`/`list(...)`/`reversed(...)` of it."""
        if type(node) is cst.Name:
            return self._list_elements[-1].get(node.value)  # type: ignore[attr-defined]
        if type(node) is cst.Subscript:
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):  # type: ignore[attr-defined]
                return self.list_elements(node.value)  # type: ignore[attr-defined]
            return None
        if (
            type(node) is cst.Call
            and isinstance(node.func, cst.Name)  # type: ignore[attr-defined]
            and node.func.value in ("sorted", "list", "reversed")  # type: ignore[attr-defined]
            and node.args  # type: ignore[attr-defined]
            and self.lookup(node.func.value) is None  # type: ignore[attr-defined]
        ):
            return self.list_elements(node.args[0].value)  # type: ignore[attr-defined]
        return None

    def _held_by(self, value: cst.BaseExpression) -> Held | None:
        """What a list value holds: one filled by `append` (`list_elements`), or a list
        (or tuple) literal of tuples of one width (`[(score, [sos])]`, `((buf, "states"),
        (acts, "actions"))`), position by position."""
        if type(value) in (cst.List, cst.Tuple):
            first = value.elements[0].value if value.elements else None  # type: ignore[attr-defined]
            if type(first) is not cst.Tuple:
                return None
            rows = _rows_of(value, len(first.elements))  # type: ignore[union-attr]
            if not rows:
                return None
            return tuple(_join(self.of(row[i]) for row in rows) for i in range(len(rows[0])))
        if type(value) is cst.ListComp and self.of(value.elt) is Kind.TENSOR:  # type: ignore[attr-defined]
            # `input_ids = [ids[mask] for ids, mask in zip(input_ids, attention_mask)]`: a
            # list of the device tensors the element makes (its targets are bound already).
            return Kind.TENSOR
        return self.list_elements(value)

    def compared_kind(self, iterable: cst.BaseExpression) -> Kind:
        """The kind of what `sorted(xs)`/`max(xs)` compare: the elements of a list filled
        with tensors, or the first position of the tuples it holds."""
        held = self.list_elements(iterable)
        if isinstance(held, tuple):
            return held[0] if held else Kind.UNKNOWN
        return held if isinstance(held, Kind) else Kind.UNKNOWN  # dicts do not compare

    def key_kind(self, iterable: cst.BaseExpression, key: cst.BaseExpression) -> Kind:
        """The kind of what a `key=lambda h: ...` returns for the elements of `iterable`
        (`sorted(hyps, key=lambda h: h.score)`), where they are known records, or values
        of a list filled with `append` (`key=lambda c: c[0]` of `(score, seq)` tuples)."""
        if not isinstance(key, cst.Lambda) or len(key.params.params) != 1:
            return Kind.UNKNOWN
        name = key.params.params[0].name.value
        cls = self.record_list(iterable)
        if cls is None:
            return self._element_key_kind(iterable, name, key.body)
        names = self._record_names[-1]
        saved = names.get(name)
        names[name] = (cls, False)
        try:
            return self.of(key.body)
        finally:
            if saved is None:
                names.pop(name, None)
            else:
                names[name] = saved

    def _element_key_kind(
        self, iterable: cst.BaseExpression, name: str, body: cst.BaseExpression
    ) -> Kind:
        held = self.list_elements(iterable)
        if isinstance(held, tuple | dict):
            # `lambda c: c[0]`, `lambda h: h["score"]`: the position or key a literal picks.
            if not (
                isinstance(body, cst.Subscript)
                and isinstance(body.value, cst.Name)
                and body.value.value == name
                and len(body.slice) == 1
                and isinstance(body.slice[0].slice, cst.Index)
            ):
                return Kind.UNKNOWN
            index = body.slice[0].slice.value
            if isinstance(held, tuple) and isinstance(index, cst.Integer):
                position = int(index.value)
                return held[position] if position < len(held) else Kind.UNKNOWN
            if isinstance(held, dict) and isinstance(index, cst.SimpleString):
                return held.get(str(index.evaluated_value), Kind.UNKNOWN)
            return Kind.UNKNOWN
        if held is None:
            return Kind.UNKNOWN
        frame = self._frames[-1]
        saved = frame.get(name)
        frame[name] = held
        try:
            return self.of(body)
        finally:
            if saved is None:
                frame.pop(name, None)
            else:
                frame[name] = saved

    def _param_kind(self, param: cst.Param, tensor_params: bool) -> Kind:
        name = param.name.value
        if param.annotation is not None:
            # `x: "torch.Tensor"`: a forward reference names the type it spells.
            annotation = unquoted(param.annotation.annotation)
            if array_dtype(annotation) is not None:
                return Kind.TENSOR  # `embed: Float['b n d']`, `x: Float[Tensor, "b n"]`
            names = names_under(annotation)
            if names & TENSOR_ANNOTATIONS:
                # `dict[str, Tensor] | None` holds tensors but is not one.
                return _tensor_annotation(annotation)
            # Any other annotation names what the parameter is: a host type, or a class
            # such as `attn: Attention` whose attributes are not tensors. A dotted type is
            # named by its last part (`np.ndarray`: a numpy array, not a module `np`).
            types = _type_names(param.annotation.annotation)
            return (
                Kind.HOST
                if types and types <= _HOST_ANNOTATIONS | {"Optional", "Union", "None"}
                else Kind.UNKNOWN
            )
        default = param.default
        if isinstance(default, cst.Name) and default.value == "None":
            # `forward(self, x, attention_mask=None)`: a tensor when given, by its name.
            if tensor_params and _OPTIONAL_TENSOR_NAME.search(name):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if default is not None:
            return Kind.HOST if _is_literal(default) else Kind.UNKNOWN
        if _INDEX_NAME.match(name) or _HOST_PARAM_NAME.match(name):
            return Kind.HOST
        if names_model(name):
            # `compute_loss(self, model, inputs)`: the model, not a tensor of the step (its
            # name says so where it is read).
            return Kind.UNKNOWN
        return Kind.TENSOR if tensor_params else Kind.UNKNOWN

    # -- bindings -------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, kind: Kind) -> None:
        """Record an assignment `target = <value of kind>`; tuples unpack elementwise."""
        if isinstance(target, cst.Name):
            self._frames[-1][target.value] = kind
            counts = self._bindings[-1]
            counts[target.value] = counts.get(target.value, 0) + 1
            self._record_names[-1].pop(target.value, None)
            self._record_elements[-1].pop(target.value, None)
            self._list_elements[-1].pop(target.value, None)
            self._sequences[-1].discard(target.value)
            self._derived[-1].discard(target.value)
            self._tensor_dicts[-1].discard(target.value)
            self._presumed[-1].discard(target.value)
            self._absent[-1].discard(target.value)
            self._scaled[-1].pop(target.value, None)
            self._typed[-1].discard(target.value)
            self._declared[-1].discard(target.value)
            self._unpacked[-1].discard(target.value)
            self._host_computed[-1].discard(target.value)
            self._wrappers[-1].pop(target.value, None)
            self.foreign.forget(target.value)
        elif isinstance(target, cst.Tuple | cst.List):
            element_kind = Kind.TENSOR if kind in (Kind.TENSOR, Kind.ITERABLE) else kind
            for element in target.elements:
                value = element.value
                if isinstance(value, cst.StarredElement):
                    value = value.value
                if (
                    element_kind is Kind.TENSOR
                    and type(value) is cst.Name
                    and _LOADER_INDEX_NAME.match(value.value)
                ):
                    # `batch, _, dataloader_idx = batch_packed`: the position of the loader
                    # a combined loader's item came from, a Python int beside the batch.
                    self.bind(value, Kind.HOST)
                    continue
                self.bind(value, element_kind)
                if isinstance(value, cst.Name):
                    self._unpacked[-1].add(value.value)
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            attribute = target.attr.value
            self._self_attributes[-1][attribute] = kind
            function = self._function_nodes[-1]
            if function is not None and self._methods_walked and self._methods_walked[-1][0]:
                # A binding in a method of the class being walked, for its subclasses.
                host = attribute in self._self_host_tensors[-1]
                key = (function.name.value, attribute)
                self._walked_bindings[-1].setdefault(key, []).append((kind, host))

    def declare_attribute(self, target: cst.BaseExpression, annotation: cst.Annotation) -> None:
        """`self._prompt_lens: Tensor | None`: the attribute holds a tensor wherever it is
        not None, whatever opaque value fills it (`layout.seq_lens_pt`): read in another
        method, it is a tensor unless an assignment says it is a host value."""
        attribute = self_attribute(target)
        if attribute is not None and _only_tensors(annotation.annotation):
            self._declared_tensors[-1].add(attribute)

    def _emptied(self, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """`self._prompt_lens = None` of an attribute declared to hold a tensor, or known
        to hold a tensor or a module (`self.temperature_holder = None` in the `else` of the
        branch that builds it): the empty case, which says nothing of what it holds
        otherwise (it is used where it is not None)."""
        attribute = self_attribute(target)
        return (
            attribute is not None
            and type(value) is cst.Name
            and value.value == "None"
            and (
                attribute in self._declared_tensors[-1]
                or self._self_attributes[-1].get(attribute) in (Kind.TENSOR, Kind.MODULE)
            )
        )

    def bind_assignment(
        self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression
    ) -> None:
        """`targets = value`. A tensor passed through an opaque call keeps being a tensor:
        after `latents, _ = scheduler.step(noise, t, latents)`, `latents` is still one."""
        targets = [t for t in targets if not self._emptied(t, value)]
        if not targets:
            return
        # Judged before the binding (`loss = loss * 2`), recorded after it: `bind` forgets
        # what the names held.
        foreign = self.foreign.holds(value, self._is_module)
        self._bind_assignment(targets, value)
        self.foreign.note_binding(targets, foreign)

    def _bind_assignment(
        self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression
    ) -> None:
        kind = self.of(value)
        host_built = (
            self._host_built_returns(value)
            if kind is Kind.UNKNOWN or kind is Kind.HOST
            else frozenset()
        )
        # What the helper builds on the host at each position, numpy arrays included
        # (`flow_errors = np.array(...)`, then `return flow_errors, dP`): a superset of
        # `host_built`, the positions of host tensors alone.
        host_values = (
            self._host_built_returns(value, arrays=True) if kind is Kind.UNKNOWN else frozenset()
        )
        if None in host_values:
            kind = Kind.HOST  # `self.probs = self.evaluate()`, returning `tensor(p).float()`
        if kind is Kind.UNKNOWN and self._hands_back_host_argument(value):
            # `mask_data = self.postprocess(mask_data, ...)`, whose every `return` hands
            # back the record it was given (edited in place): still the host record.
            kind = Kind.HOST
        if kind is Kind.UNKNOWN and self._handed_on_as_array(value):
            # `mask = norm_img(mask)`, then `torch.from_numpy(mask)`: a numpy array, not a
            # tensor passed through the opaque call.
            kind = Kind.HOST
        derived = kind is Kind.UNKNOWN and self._computed_from_tensors(value)
        scaled = _scaled_names(value) if len(targets) == 1 else ()
        makes_dict = _makes_dict(value)
        if makes_dict:
            for target in targets:
                self._dicts[-1].add(binding_key(target))
        built = (
            value.func.value
            if type(value) is cst.Call
            and type(value.func) is cst.Name
            and value.func.value in self._module_classes
            else None
        )
        for target in targets:
            if (attribute := self_attribute(target)) is not None:
                if makes_dict:
                    self._self_dicts[-1].add(attribute)
                elif kind is Kind.TENSOR:
                    self._self_dicts[-1].discard(attribute)
                if built is not None and attribute not in self._self_classes[-1]:
                    self._self_classes[-1][attribute] = built
                elif self._self_classes[-1].get(attribute) != built:
                    self._self_classes[-1][attribute] = ""  # assigned something else too
                module_dicts = self._self_module_dicts[-1]
                module_dicts[attribute] = module_dicts.get(attribute, True) and (
                    type(value) is cst.Call
                    and self.imports.resolve(value.func) == "torch.nn.ModuleDict"
                )
        values: dict[str | None, Kind] | None = None
        if (
            type(value) is cst.Dict
            and value.elements
            and all(isinstance(e, cst.DictElement) for e in value.elements)
        ):
            elements = [e for e in value.elements if isinstance(e, cst.DictElement)]
            values = {None: _join(self.of(e.value) for e in elements)}
            for e in elements:
                if isinstance(e.key, cst.SimpleString):
                    values[str(e.key.evaluated_value)] = self.of(e.value)
        elif type(value) is cst.DictComp and self.of(value.value) is Kind.HOST:
            # `{k: v.detach().cpu() for k, v in metrics.items()}`: every value a host
            # copy, whatever the names the comprehension binds held.
            values = {None: Kind.HOST}
        for target in targets:
            if (key := binding_key(target)) is not None:
                if values is not None:
                    self._dict_values[-1][key] = values
                else:
                    self._dict_values[-1].pop(key, None)
        cpu = self.is_cpu_device(value)
        for target in targets:
            if (key := binding_key(target)) is not None:
                if cpu:
                    self._cpu_devices[-1].add(key)
                else:
                    self._cpu_devices[-1].discard(key)
        host_tensor = kind is Kind.HOST and (None in host_built or self._makes_host_tensor(value))
        for target in targets:
            if type(target) is cst.Name:
                if host_tensor:
                    self._host_tensors[-1].add(target.value)
                else:
                    self._host_tensors[-1].discard(target.value)
            elif type(target) in (cst.Tuple, cst.List):
                # `[mask] = atom_mask.cpu()`: the rows of a host tensor, on the host.
                for element in target.elements:  # type: ignore[attr-defined]
                    if type(element.value) is cst.Name:
                        if host_tensor:
                            self._host_tensors[-1].add(element.value.value)
                        else:
                            self._host_tensors[-1].discard(element.value.value)
            elif (attribute := self_attribute(target)) is not None:
                if host_tensor:
                    self._self_host_tensors[-1].add(attribute)
                elif kind is not Kind.UNKNOWN:
                    self._self_host_tensors[-1].discard(attribute)
        passed_through: set[str] = set()
        if kind is Kind.UNKNOWN and isinstance(value, cst.Call):
            passed_through = {
                arg.value.value
                for arg in value.args
                if isinstance(arg.value, cst.Name) and self.lookup(arg.value.value) is Kind.TENSOR
            }
        function = self.imports.resolve(value) if type(value) in (cst.Name, cst.Attribute) else None
        held = self._held_by(value)
        record: tuple[str, bool] | None = None
        if self._records:
            if (cls := self.record_of(value)) is not None:
                record = (cls, False)
            elif (cls := self.record_list(value)) is not None:
                record = (cls, True)
        for target in targets:
            if function is not None and function.startswith("torch."):
                key = binding_key(target)
                if key is not None and key.startswith("self."):
                    self._self_functions[-1].setdefault(key[5:], set()).add(function)
            if kind is Kind.UNKNOWN and (packed := self._packed(target, value)):
                # `target, _ = pack((target, sampled), "b *")`: one array joining the
                # tensors it was handed, where they live; the shapes are host values.
                for name, item_kind in packed:
                    self.bind(name, item_kind)
                continue
            if kind is Kind.UNKNOWN and (gathered := self._gathered(target, value)):
                # `preds, refs = accelerator.gather_for_metrics((preds, labels))`: a
                # collective hands back what it was given, element for element.
                for name, item_kind in gathered:
                    self.bind(name, item_kind)
                continue
            if kind is Kind.UNKNOWN and (hosted := self._host_results(target, value, host_values)):
                # `obs, r, done, info = self.env_step(env, action)` where every `return`
                # of `env_step` hands back `torch.from_numpy(...)` (or a `.cpu()` copy)
                # at those positions: host tensors, whatever the step's device.
                for position, (name, item_kind) in enumerate(hosted):
                    if position in host_built:
                        self._note_host_tensor(name)
                    self.bind(name, item_kind)
                continue
            if kind is Kind.UNKNOWN and (computed := self._helper_results(target, value)):
                # `sigma_down, sigma_up = get_ancestral_step(sigmas[i], sigmas[i + 1])`:
                # what the helper computes from tensor arguments by arithmetic is a tensor.
                for name, item_kind in computed:
                    self.bind(name, item_kind)
                continue
            if pairs := _positions(target, value):
                # `x, h, w = hidden, height, width`: each name gets its own value's kind
                # (all read before any is bound, as in `a, b = b, a`).
                kinds = [
                    (name, self._unpacked_kind(item.value), False)
                    if isinstance(item, cst.StarredElement)
                    else (name, self.of(item), self._computed_from_tensors(item))
                    for name, item in pairs
                ]
                for name, item_kind, from_tensors in kinds:
                    self.bind(name, item_kind)
                    if item_kind is Kind.UNKNOWN and from_tensors:
                        self._derived[-1].update(target_names(name))
                continue
            if (
                type(value) is cst.Name
                and value.value == "None"
                and isinstance(target, cst.Name)
                and self.lookup(target.value) is not None
            ):
                # `else: mask = None` after `mask = make_mask(...)`: the absent case of an
                # optional value says nothing of the value where present (any use of it
                # as a value, `mask[:, idx]`, is on that path).
                continue
            declared = self._declared_tensor(value)
            self.bind(target, kind)
            if declared and type(target) is cst.Name:
                self._declared[-1].add(target.value)  # `input = input[0]`: a row of one
            if type(value) is cst.Name and value.value == "None":
                # Noted for the branches of an `if` (`merge_branches`), where the name may
                # be new in this one.
                self._absent[-1].update(names_under(target))
            self._bind_record(target, record)
            if held is not None and isinstance(target, cst.Name):
                self._list_elements[-1][target.value] = held
            for name in names_under(target) & passed_through:
                self._frames[-1][name] = Kind.TENSOR
            if derived:
                self._derived[-1].update(target_names(target))
            if isinstance(target, cst.Name) and (
                self._moves_values(value)
                or self._copies_tensor_mapping(value)
                or self._fed_to_network(target.value, value)
            ):
                self._tensor_dicts[-1].add(target.value)
            if isinstance(target, cst.Name) and scaled:
                self._scaled[-1][target.value] = scaled
            if isinstance(target, cst.Name):
                self.note_wrapper(target, value)
                if kind is Kind.HOST and self._host_result(value):
                    self._host_computed[-1].add(target.value)
            if kind is Kind.UNKNOWN:
                trained, positions = self._trained_names()
                at = positions.get(id(value))
                for name in target_names(target):
                    if (
                        at is not None
                        and at < trained.get(name, -1)
                        and self._frames[-1].get(name) is Kind.UNKNOWN
                    ):
                        # `loss = self.compute(x)`, then `print(loss.item())`, then
                        # `loss.backward()`: the step's loss from its binding on.
                        self._frames[-1][name] = Kind.TENSOR

    def _defaults_to_a_tensor_function(self, name: str) -> bool:
        """`name` is a parameter of the function being walked, not rebound, whose default
        is a function of this module declared to return a tensor (`decode_one_token=
        decode_one_token_ar` with `def decode_one_token_ar(...) -> torch.Tensor`): the
        default states what every function handed in instead returns."""
        function = self._function_nodes[-1]
        if function is None or self._bindings[-1].get(name, 0):
            return False
        param = parameter(function, name)
        return (
            param is not None
            and type(param.default) is cst.Name
            and param.default.value in self._tensor_functions
            and self.lookup(param.default.value) is None
        )

    def _unpacked_kind(self, iterable: cst.BaseExpression) -> Kind:
        """The kind of one element a starred `*iterable` spreads over a tuple's names: a
        tensor's rows (or an iterable of tensors) are tensors; otherwise the iterable's
        own kind (a host value's elements are host values, an unknown one's unknown)."""
        kind = self.of(iterable)
        return Kind.TENSOR if kind in (Kind.TENSOR, Kind.ITERABLE) else kind

    def _note_host_tensor(self, target: cst.BaseExpression) -> None:
        """`target` is bound to a torch tensor made on the host."""
        if type(target) is cst.Name:
            self._host_tensors[-1].add(target.value)
        elif (attribute := self_attribute(target)) is not None:
            self._self_host_tensors[-1].add(attribute)

    def _forward_hook_output(self, node: cst.FunctionDef, in_class: bool) -> str | None:
        """The parameter that receives the module's output, where the module registers
        `node` as a forward hook (`register_forward_hook(save_to_cache)`, or a method
        handed as `self.save_activation` from its own class): the third of `(module,
        input, output)`, unannotated."""
        positional = positional_params(node)
        first = 1 if in_class else 0
        if self._module is None or len(positional) < first + 3:
            return None
        output = positional[first + 2]
        if output.annotation is not None:
            return None
        name = node.name.value
        for site in call_sites(self._module).named("register_forward_hook", True):
            args = site.call.args
            if not args or args[0].keyword is not None:
                continue
            hook = args[0].value
            if in_class:
                registered = (
                    type(hook) is cst.Attribute
                    and type(hook.value) is cst.Name
                    and hook.value.value == "self"
                    and hook.attr.value == name
                    and site.class_def is not None
                    and any(s is node for s in site.class_def.body.body)  # type: ignore[attr-defined]
                )
            else:
                registered = type(hook) is cst.Name and hook.value == name
            if registered:
                return output.name.value
        return None

    def _host_built_returns(
        self, value: cst.BaseExpression, arrays: bool = False
    ) -> frozenset[int | None]:
        """For a call of a function of this module (`f(...)`) or a method of its classes
        (`self.f(...)`), the positions of the returned tuple (None: the whole value) where
        every definition returns, on every `return` that hands back a value, a tensor it
        builds on the host: a torch factory given no device (`tensor(tmp).float()`),
        `torch.from_numpy`, a `.cpu()` copy, or a local name only ever bound to one (`n =
        tensor(counts)`, then `return heads, tails, n`); with `arrays`, also what numpy
        builds (`errors = np.array(...)`, then `return errors, flows`). A bare `return`
        (an early exit on bad input) hands back None, no device tensor."""
        if self.returns is None or type(value) is not cst.Call:
            return frozenset()
        func = value.func
        if type(func) is cst.Name and self.lookup(func.value) is None:
            key = (False, func.value)
        elif (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
        ):
            key = (True, func.attr.value)
        else:
            return frozenset()
        known = self._built_returns.get((*key, arrays))
        if known is None:
            found: frozenset[int | None] | None = None
            for function in self.returns.definitions(*key):
                positions = self._built_positions(function, arrays)
                found = positions if found is None else found & positions
                if not found:
                    break
            known = self._built_returns[(*key, arrays)] = found or frozenset()
        return known

    def _hands_back_host_argument(self, value: cst.BaseExpression) -> bool:
        """A call of a function of this module (`f(...)`) or a method of its classes
        (`self.f(...)`) every definition of which hands back, on every `return`, one
        parameter it never rebinds (`return mask_data`, after editing it in place), where
        the call hands that parameter a host value: the call gives the host value back.
        (A device tensor handed through an opaque call is kept as one already.)"""
        if self.returns is None or type(value) is not cst.Call:
            return False
        func = value.func
        if type(func) is cst.Name and self.lookup(func.value) is None:
            method, name = False, func.value
        elif (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
        ):
            method, name = True, func.attr.value
        else:
            return False
        definitions = self.returns.definitions(method, name)
        if not definitions:
            return False
        for function in definitions:
            returned = _returned_parameter(function)
            if returned is None:
                return False
            through_instance = method and not is_staticmethod(function)
            bound = bind(value, signature_of(function, through_instance))
            argument = bound.get(returned) if bound is not None else None
            if argument is None or self.of(argument) is not Kind.HOST:
                return False
        return True

    def _built_positions(
        self, function: cst.FunctionDef, arrays: bool = False
    ) -> frozenset[int | None]:
        returns = [
            n
            for n in _walk_body(function, expressions=False)
            if type(n) is cst.Return and not _returns_none(n)
        ]
        if not returns or any(type(n) is cst.Yield for n in _walk_body(function)):
            return frozenset()
        found: frozenset[int | None] | None = None
        for statement in returns:
            value = statement.value
            assert value is not None
            if type(value) is cst.Tuple:
                positions = frozenset(
                    i
                    for i, e in enumerate(value.elements)
                    if type(e) is cst.Element
                    and self._built_on_host(e.value, function, statement, arrays)
                )
            else:
                positions = (
                    frozenset({None})
                    if self._built_on_host(value, function, statement, arrays)
                    else frozenset()
                )
            found = positions if found is None else found & positions
            if not found:
                return frozenset()
        return found or frozenset()

    def _built_on_host(
        self,
        value: cst.BaseExpression,
        function: cst.FunctionDef,
        at: cst.CSTNode,
        arrays: bool = False,
    ) -> bool:
        """`value`, the value of a name where `at` stands (first a `return`), is a tensor
        `function` builds on the host (with `arrays`, or an array numpy builds). A name is
        looked up before the statement that last bound it, so `x = x.float()` goes back
        to where `x` was made."""
        while (
            type(value) is cst.Call
            and type(value.func) is cst.Attribute
            and (
                (value.func.attr.value in _SAME_PLACE_METHODS and not value.args)
                or (
                    # `.repeat_interleave(4)`, `.reshape(n, -1)`: shaped by numbers, where
                    # the tensor is (not a move, nor a copy out of torch)
                    value.args
                    and value.func.attr.value not in _NOT_SHAPING
                    and self.imports.resolve(value.func) is None  # not `torch.arange(n)`
                    and all(
                        not a.star
                        and a.keyword is None
                        and (_is_literal(a.value) or _number_parameter(function, a.value))
                        for a in value.args
                    )
                )
            )
        ):
            value = value.func.value
        if type(value) is cst.Name:
            if arrays and converted_in_place_before(function, at, value.value):
                # `data.to_numpy()`, then `return data`: a record whose fields it turned
                # into numpy arrays in place.
                return True
            assigned = value_before(function, at, value.value)
            if assigned is None or type(assigned) is cst.Name:
                return False
            return self._built_on_host(assigned, function, assigned, arrays)
        if type(value) is cst.Subscript and not _string_keyed(value):
            # `torch.linspace(lo, hi, 2 * n + 1)[1::2]`: a view of what it builds, on the
            # host too (not `batch["x"]`, a field of a mapping).
            return self._built_on_host(value.value, function, at, arrays)
        if type(value) is cst.BinaryOperation:
            # `edges[1:] / n` with `n: int`: arithmetic of what it builds on the host with
            # numbers stays there (not with another tensor, which may be a device's).
            sides = (value.left, value.right)
            return any(self._built_on_host(v, function, at, arrays) for v in sides) and all(
                _is_literal(v)
                or _number_parameter(function, v)
                or self._built_on_host(v, function, at, arrays)
                for v in sides
            )
        if type(value) is not cst.Call:
            return False
        func = value.func
        if type(func) is cst.Attribute and func.attr.value == "cpu" and not value.args:
            return True
        qualified = self.imports.resolve(func)
        if arrays and qualified is not None and qualified.startswith("numpy."):
            return True  # `np.array([...])`, `np.stack(rows)`: a numpy array
        return (
            qualified is not None
            and (qualified == "torch.from_numpy" or _builds_from_sizes(qualified, value))
            and not any(_is_keyword(arg, "device") for arg in value.args)
        )

    def _host_results(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression,
        built: frozenset[int | None] = frozenset(),
    ) -> list[tuple[cst.BaseExpression, Kind]] | None:
        """The elements of a tuple target bound from a call of this module's function
        (`f(...)`) or of its own class's method (`self.f(...)`) whose every definition
        returns a host value at that position on every path
        (`NumberReturns.host_positions`): HOST there, UNKNOWN elsewhere; None where no
        position is known to be on the host."""
        if (
            self.returns is None
            or type(target) not in (cst.Tuple, cst.List)
            or not isinstance(value, cst.Call)
            or any(isinstance(e, cst.StarredElement) for e in target.elements)
        ):
            return None
        func = value.func
        if isinstance(func, cst.Name) and self.lookup(func.value) is None:
            positions = self.returns.host_positions(False, func.value)
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            positions = self.returns.host_positions(True, func.attr.value)
        else:
            return None
        positions = positions | {p for p in built if p is not None}
        if not positions:
            return None
        return [
            (e.value, Kind.HOST if i in positions else Kind.UNKNOWN)
            for i, e in enumerate(target.elements)
        ]

    def _helper_results(
        self, target: cst.BaseExpression, value: cst.BaseExpression
    ) -> list[tuple[cst.BaseExpression, Kind]] | None:
        """The targets of a call of a module function whose result (or a position of its
        returned tuple) is arithmetic of its parameters (`NumberReturns.derived`), each with
        TENSOR where the call hands one of those parameters a tensor; None where none is."""
        if (
            self.returns is None
            or not isinstance(value, cst.Call)
            or not isinstance(value.func, cst.Name)
            or self.lookup(value.func.value) is not None
        ):
            return None
        derived = self.returns.derived(value.func.value)
        if derived is None:
            return None
        function, positions = derived
        bound = bind(value, signature_of(function, False))
        if bound is None:
            return None
        tensors = {name for name, arg in bound.items() if self.of(arg) is Kind.TENSOR}
        if isinstance(target, cst.Tuple | cst.List):
            if any(isinstance(e, cst.StarredElement) for e in target.elements):
                return None
            items = [(e.value, positions.get(i)) for i, e in enumerate(target.elements)]
        else:
            items = [(target, positions.get(None))]
        found = [
            (item, Kind.TENSOR if params and params & tensors else Kind.UNKNOWN)
            for item, params in items
        ]
        return found if any(kind is Kind.TENSOR for _, kind in found) else None

    def _computes_from_tensors(self, call: cst.Call) -> bool:
        """A call of a module function whose whole result is computed on the device from
        parameters the call hands a tensor (`NumberReturns.derived`: `all_rows_have_eos_id(t,
        eos_id)` returning `torch.any(t == eos_id, dim=-1).all()`), used where it is made
        (`if all_rows_have_eos_id(...): break`), not bound first (`_helper_results`)."""
        if (
            self.returns is None
            or type(call.func) is not cst.Name
            or self.returns.derived(call.func.value) is None
        ):
            return False  # (most calls: no function of the module computes their result)
        found = self._helper_results(_RESULT, call)
        return found is not None and found[0][1] is Kind.TENSOR

    def _packed(
        self, target: cst.BaseExpression, value: cst.BaseExpression
    ) -> list[tuple[cst.BaseExpression, Kind]]:
        """`packed, shapes = einops.pack([x, y], pattern)`: the packed array is a device
        tensor where one input is, a host value where all are; the shapes are host values."""
        if not (
            type(target) in (cst.Tuple, cst.List)
            and type(value) is cst.Call
            and self.imports.resolve(value.func) == "einops.pack"
            and value.args
            and value.args[0].keyword is None
            and isinstance(value.args[0].value, cst.Tuple | cst.List)
        ):
            return []
        elements = [e.value for e in target.elements]
        inputs = value.args[0].value.elements  # type: ignore[attr-defined]
        if (
            len(elements) != 2
            or not inputs
            or any(isinstance(e, cst.StarredElement) for e in inputs)
        ):
            return []
        kinds = {self.of(e.value) for e in inputs}
        if Kind.TENSOR in kinds:
            # one device tensor among them: the join is made on the device (the others
            # must be there too, or torch refuses to concatenate them)
            kind = Kind.TENSOR
        elif kinds == {Kind.HOST}:
            kind = Kind.HOST
        else:
            return []
        return [(elements[0], kind), (elements[1], Kind.HOST)]

    def _gathered(
        self, target: cst.BaseExpression, value: cst.BaseExpression
    ) -> list[tuple[cst.BaseExpression, Kind]]:
        """`a, b = gather((x, y))` or `a, b = all_reduce(x, y)` with a collective that keeps
        the structure of its input: the target elements with their inputs' kinds."""
        if not (type(target) in (cst.Tuple, cst.List) and type(value) is cst.Call):
            return []
        name = (get_full_name_for_node(value.func) or "").rsplit(".", 1)[-1]
        if not _STRUCTURE_KEEPING.search(name):
            return []
        args = [a.value for a in value.args if a.keyword is None and not a.star]
        if len(args) == 1 and isinstance(args[0], cst.Tuple | cst.List):
            args = [e.value for e in args[0].elements]
        elements = [e.value for e in target.elements]
        if len(args) != len(elements) or any(isinstance(e, cst.StarredElement) for e in elements):
            return []
        return [(element, self.of(arg)) for element, arg in zip(elements, args, strict=True)]

    def note_wrapper(self, name: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`pbar = tqdm(loader)` or `with tqdm(enumerate(loader)) as t:`: `name` iterates
        as the wrapped iterable does (`_PASS_THROUGH_ITERATORS`)."""
        if (
            type(name) is cst.Name
            and type(value) is cst.Call
            and (_passes_through(value) or _pairs_items(value))  # type: ignore[arg-type]
            and value.args  # type: ignore[attr-defined]
            and value.args[0].keyword is None  # type: ignore[attr-defined]
            and not value.args[0].star  # type: ignore[attr-defined]
        ):
            self._wrappers[-1][name.value] = value  # type: ignore[attr-defined,assignment]

    def note_opened(self, name: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`with safe_open(path, framework="pt") as f:`: a checkpoint reader's handle,
        whose tensors (`f.get_tensor(key)`) are read to the host (`_HOST_CHECKPOINT_READERS`,
        given no device)."""
        if type(name) is not cst.Name or type(value) is not cst.Call:
            return
        if self.imports.resolve(value.func) in _HOST_CHECKPOINT_READERS and not (  # type: ignore[attr-defined]
            self._names_a_device(value)  # type: ignore[arg-type]
        ):
            self.bind(name, Kind.HOST)

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for target in iterable`: what the loop variables hold."""
        name = iterable.value if type(iterable) is cst.Name else None  # type: ignore[attr-defined]
        wrapped = self._wrappers[-1].get(name) if name is not None else None
        if wrapped is not None and name not in self._unwrapping:
            # Once per name: `batches = iter(batches)` wraps itself.
            self._unwrapping.add(name)  # type: ignore[arg-type]
            try:
                self.bind_loop_target(target, wrapped)
            finally:
                self._unwrapping.discard(name)  # type: ignore[arg-type]
            return
        if isinstance(target, cst.Name) and (cls := self.record_list(iterable)) is not None:
            self.bind(target, Kind.UNKNOWN)
            self._bind_record(target, (cls, False))
            return
        held = self.list_elements(iterable)
        if isinstance(held, tuple) and isinstance(target, cst.Tuple):
            # `for score, seq in beams` over a list filled with `(score, seq)` tuples.
            elements = target.elements
            if len(elements) == len(held) and not any(
                isinstance(e, cst.StarredElement) for e in elements
            ):
                for element, element_kind in zip(elements, held, strict=True):
                    self.bind(element.value, element_kind)
                return
        elif isinstance(held, Kind) and held is not Kind.UNKNOWN and isinstance(target, cst.Name):
            self.bind(target, held)
            return
        elif isinstance(held, dict) and isinstance(target, cst.Name):
            # `for h in hyps` over a list filled with dict literals: each `h` is such a dict.
            self.bind(target, Kind.HOST)
            self._dicts[-1].add(target.value)
            self._dict_values[-1][target.value] = held
            return
        if isinstance(iterable, cst.Call):
            callee = get_full_name_for_node(iterable.func)
            if (
                _passes_through(iterable)
                and iterable.args
                and iterable.args[0].keyword is None
                and not iterable.args[0].star
            ):
                # `for batch in tqdm(loader)`: a progress bar yields what it wraps.
                self.bind_loop_target(target, iterable.args[0].value)
                return
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
            if (
                callee == "zip"
                and len(iterable.args) == 1
                and iterable.args[0].star == "*"
                and self.of(iterable.args[0].value) is Kind.TENSOR
            ):
                # `for logprob, token in zip(*logprobs[i].topk(k))`: zipping the rows of a
                # tensor (or the tensors of `topk`'s pair) yields its elements, 0-dim
                # tensors on the device.
                self.bind(target, Kind.TENSOR)
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
                values = self._values_of(iterable.func.value)
                if method in ("items", "values") and self._module_dict(iterable.func.value):
                    # `for name, metric in self.metrics.items()` with `self.metrics =
                    # nn.ModuleDict(metrics)`: each value is a module, and calling one on
                    # tensors (`metric(y_hat, y)`) gives a tensor.
                    values = Kind.MODULE
                # The values of a mapping a helper computed from device tensors (`M, masks =
                # net.forward_masks(x)`) were computed there too.
                derived = values is Kind.UNKNOWN and self._computed_from_tensors(
                    iterable.func.value
                )
                if method == "items":
                    if isinstance(target, cst.Tuple) and len(target.elements) == 2:
                        # A dict's keys are names, numbers or tuples: never device tensors.
                        self.bind(target.elements[0].value, Kind.HOST)
                        self.bind(target.elements[1].value, values)
                        root = self.record_root(iterable.func.value)
                        element = target.elements[1].value
                        if root is not None and isinstance(element, cst.Name):
                            self._record_elements[-1][element.value] = root
                        if derived:
                            self._derived[-1].update(target_names(element))
                    else:
                        self.bind(target, Kind.UNKNOWN)
                    return
                if method == "keys":
                    self.bind(target, Kind.HOST)
                    return
                if method == "values":
                    self.bind(target, values)
                    if derived:
                        self._derived[-1].update(target_names(target))
                    return
        if _param_group_params(iterable):
            # `for p in group["params"]`: an optimizer's param group holds the parameters.
            self.bind(target, Kind.TENSOR)
            return
        if isinstance(target, cst.Tuple) and _rows_of(iterable, len(target.elements)):
            # `for name, t in (("q", q), ("k", k))`: each position has its own kind.
            rows = _rows_of(iterable, len(target.elements))
            for index, element in enumerate(target.elements):
                self.bind(element.value, _join(self.of(row[index]) for row in rows))
            return
        kind = self.of(iterable)
        element = {Kind.ITERABLE: Kind.TENSOR, Kind.TENSOR: Kind.TENSOR, Kind.HOST: Kind.HOST}
        if kind is Kind.ITERABLE and loads_indices(
            iterable,
            self._function_nodes[-1],
            self._module,
            self.imports,
            lambda value: self.of(value) is Kind.HOST,
        ):
            # `for idx in DataLoader(range(n), batch_size=b)`: batches of positions,
            # collated on the host (`index_loaders.py`).
            self.bind(target, Kind.HOST)
            return
        if kind is Kind.UNKNOWN and self._handed_in(iterable) and self._used_as_tensor(target):
            # `for i, cont_idx in enumerate(batch["continuation_indices"])`, then
            # `x.index_select(0, cont_idx - 1)`: what the function does with each item of
            # the data it was handed says it is a tensor, and so does every item of a
            # mapping's entry it iterates. (Data the function builds itself, a tokenizer's
            # `return_tensors="pt"` output, shows no device: its tensors stay unknown.)
            self.bind(target, Kind.TENSOR)
            self._holds_tensors(iterable)
            return
        self.bind(target, element.get(kind, Kind.UNKNOWN))
        if kind is Kind.ITERABLE:
            # Items of a loader are taken for tensors by its name: a guess for the loop's
            # own names, not for attributes of `self` that every method reads
            # (`for self.batch, self.dataset in batches`).
            for attribute in _self_attributes_in(target):
                self._self_attributes[-1][attribute] = Kind.UNKNOWN

    def _handed_in(self, value: cst.BaseExpression) -> bool:
        """`batch["continuation_indices"]`, `batch.ids`: a part of a parameter of the
        function being walked that its body never rebinds: data its caller handed in."""
        function = self._function_nodes[-1]
        while type(value) in (cst.Subscript, cst.Attribute):
            value = value.value  # type: ignore[attr-defined]
        return (
            function is not None
            and type(value) is cst.Name
            and value.value not in ("self", "cls")
            and any(p.name.value == value.value for p in parameters(function))
            and value.value not in binding_counts(function)
        )

    def _handed_on_as_array(self, value: cst.BaseExpression) -> bool:
        """`value`, assigned to a name, is what the function hands next to a torch function
        that takes only a numpy array (`tensor_uses.arrays_handed_on`): an array."""
        function = self._function_nodes[-1]
        if function is None or not self.may_hand_arrays:
            return False
        arrays = self._arrays[-1]
        if arrays is None:
            # (imported here: `tensor_uses` builds on this module)
            from xlalint.analysis.tensor_uses import arrays_handed_on

            arrays = self._arrays[-1] = arrays_handed_on(function, self.imports)
        return id(value) in arrays

    def _used_as_tensor(self, target: cst.BaseExpression) -> bool:
        """A loop's name that the function being walked uses as a tensor (`tensor_uses`):
        handed to a torch operation that takes only tensors, as an index tensor, or the
        receiver of a method only tensors have."""
        function = self._function_nodes[-1]
        if type(target) is not cst.Name or function is None:
            return False
        uses = self._uses[-1]
        if uses is None:
            # (imported here: `tensor_uses` builds on this module)
            from xlalint.analysis.tensor_uses import tensor_uses

            uses = self._uses[-1] = tensor_uses(function, self.imports)
        return target.value in uses

    def tensor_by_use(self, node: cst.BaseExpression) -> bool:
        """`node` is a parameter taken for a tensor only by its function's use of it
        (`_handed_tensor`): where it lives is its callers' to show, as for a parameter of
        unknown kind (a conversion helper's `def numpy(x): return x.detach().numpy()`)."""
        return (
            type(node) is cst.Name
            and self.lookup(node.value) is Kind.UNKNOWN
            and self._handed_tensor(node)
        )

    def _handed_tensor(self, name: cst.Name) -> bool:
        """A parameter of unknown kind, never rebound, that its function calls a method
        only tensors have on (`bboxes.new_empty(n, 4)`, `x.masked_fill(m, 0)`): its callers
        hand it a tensor, so tests and reads of it are on one (`if (bboxes[:, 2:] <=
        0).any():`)."""
        function = self._function_nodes[-1]
        if function is None or name.value in self._typed[-1] or not self._handed_in(name):
            return False
        receivers = self._receivers[-1]
        if receivers is None:
            # (imported here: `tensor_uses` builds on this module)
            from xlalint.analysis.tensor_uses import tensor_receivers

            receivers = self._receivers[-1] = tensor_receivers(function)
        return name.value in receivers

    def _holds_tensors(self, iterable: cst.BaseExpression) -> None:
        """`batch["continuation_indices"]` of a mapping of unknown values, iterated for
        tensors: that entry holds tensors (`batch["continuation_indices"][i][0]` later in
        the function is one); the mapping's other entries stay as they were."""
        if not (type(iterable) is cst.Subscript and len(iterable.slice) == 1):
            return
        index = iterable.slice[0].slice
        key = binding_key(iterable.value)
        if not (
            type(index) is cst.Index and type(index.value) is cst.SimpleString and key is not None
        ):
            return
        known = self._dict_values[-1].get(key)
        if known is None:
            if self.of(iterable.value) is Kind.TENSOR:
                return
            known = self._dict_values[-1][key] = {None: Kind.UNKNOWN}
        if known.get(str(index.value.evaluated_value), known[None]) is Kind.UNKNOWN:
            known[str(index.value.evaluated_value)] = Kind.TENSOR

    def keep_host_until_moved(
        self,
        binding: cst.CSTNode,
        targets: Sequence[cst.BaseExpression],
        function: cst.FunctionDef | None,
    ) -> None:
        """A name of unknown kind this assignment or `for` binds, whose next binding in
        the function is its own move onto the device (`batch = next(data_iter)`, then
        `batch = {k: v.to(self.device) for k, v in batch.items()}`): the code moves it
        itself, so it holds a host value (a loader's batch) until that move, as a
        parameter its function first rebinds to its move does (`moved_later`). A loop's
        target presumed a device tensor (a loader's batch) is judged the same way: a
        device loader would have made the move needless."""
        if function is None:
            return
        frame = self._frames[-1]
        for name in {name for target in targets for name in target_names(target)}:
            kind = frame.get(name, Kind.UNKNOWN)
            if not (kind is Kind.UNKNOWN or (kind is Kind.TENSOR and type(binding) is cst.For)):
                continue
            if moved_next(function, binding, name):
                frame[name] = Kind.HOST
                self._dicts[-1].add(name)
                # A batch dict's entries are the loader's host tensors too.
                self._dict_values[-1][name] = {None: Kind.HOST}

    def keep_unmoved_rows_on_host(self, loop: cst.For, function: cst.FunctionDef | None) -> None:
        """`for inputs, labels in loader:` whose body copies `labels.to(device)` (or
        `.cuda()`) without rebinding `labels`: the loader hands host tensors, since only a
        copy goes to the device (a no-op for a device tensor), so `labels.cpu()` there is
        no transfer. Only a name that nothing but the loop binds in its function counts:
        `labels = labels.to(device)` makes it a device tensor again.

        For the same reason a row the body never moves, beside rows it does move (`for im,
        targets, paths, shapes in loader:` moving `im` and `targets`), stays where the
        loader put it, on the host: `shapes[si]` reads the batch's list of image sizes. A
        device loader would have made the moves needless; a row used on the device without
        a move would fail on any accelerator.

        Rows of unknown kind (a batch of a dataset handed in as a parameter, `for i, (seq,
        im) in enumerate(iter(dataset))`) are judged by the same move: a row the body moves
        without rebinding it, and the rows unpacked beside it from one item (`seq`, beside
        `im.to(device)`), come on the host; a row of another item of the target (a `zip`
        partner) is left as it was."""
        if function is None:
            return
        frame = self._frames[-1]
        counts = binding_counts(function)
        names = target_names(loop.target)
        rows = {name for name in names if frame.get(name) is Kind.TENSOR}
        unknown = {name for name in names if frame.get(name, Kind.UNKNOWN) is Kind.UNKNOWN}
        if not rows and not unknown:
            return
        moved = {
            node.func.value.value
            for node in descendants(loop.body)
            if type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and type(node.func.value) is cst.Name
            and node.func.value.value in rows | unknown
            and self.copies_to_device(node)
        }
        moved |= self._moved_by_callees(loop.body, rows | unknown)
        if not moved:
            return
        host = set(rows) if moved & rows else set()
        host |= unknown & _unpacked_beside(loop.target, moved)
        for name in host:
            if counts.get(name) == 1:
                frame[name] = Kind.HOST

    def _moved_by_callees(self, body: cst.CSTNode, names: set[str]) -> set[str]:
        """The names among `names` that the body hands, as they are, to a function of the
        module that copies the parameter they bind to onto the device (`sample(model,
        prime=prime, positions=positions)` with `prime = prime.to(device)` in `sample`):
        the move is the body's, made one call down, and tells as much of where the loader
        puts its rows."""
        if self._module is None or not names:
            return set()
        functions = top_level_definitions(self._module)
        found: set[str] = set()
        for node in descendants(body):
            if type(node) is not cst.Call or type(node.func) is not cst.Name:
                continue
            function = functions.get(node.func.value)
            if function is None or self.lookup(node.func.value) is not None:
                continue
            bound = bind(node, signature_of(function, False))
            if not bound:
                continue
            handed = {
                param: value.value
                for param, value in bound.items()
                if type(value) is cst.Name and value.value in names
            }
            if handed:
                found |= {handed[p] for p in self._parameters_moved(function) & handed.keys()}
        return found

    def _parameters_moved(self, function: cst.FunctionDef) -> frozenset[str]:
        """The parameters of `function` that its own body (not a nested definition) copies
        to the device: `prime.to(device)`, `x.cuda()`, with the parameter's name as the
        receiver."""
        names = {param.name.value for param in parameters(function)}
        found: set[str] = set()
        stack: list[cst.CSTNode] = [function.body]
        while stack:
            node = stack.pop()
            if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and type(node.func.value) is cst.Name
                and node.func.value.value in names
                and self.copies_to_device(node)
            ):
                found.add(node.func.value.value)
            stack.extend(code_children(node))
        return frozenset(found)

    def narrowed_to_tensor(self, test: cst.BaseExpression) -> list[str]:
        """Names that an `if` test checks to be tensors (`isinstance(v, torch.Tensor)`,
        `torch.is_tensor(v)`, either side of an `and`) without their being known tensors
        already: code that converts whatever it is given (`if isinstance(v, Tensor): v =
        v.item()` in a logging helper). Whether a tensor ever arrives there is a matter of
        its callers, so the branch is left alone."""
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self.narrowed_to_tensor(test.left) + self.narrowed_to_tensor(test.right)
        subject = self._tensor_test_subject(test)
        if subject is None or self.lookup(subject) is Kind.TENSOR:
            return []
        return [subject]

    def kept_tensors(self, test: cst.BaseExpression) -> list[str]:
        """Known tensors that an `if` test checks not to be tensors (`if not isinstance(
        grad_norm, torch.Tensor): grad_norm = torch.tensor(grad_norm)`): the branch
        normalises a value of another kind, so for a tensor it never runs and the name is
        still the tensor after the `if`."""
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return []
        subject = self._tensor_test_subject(test.expression)
        return [subject] if subject is not None and self.lookup(subject) is Kind.TENSOR else []

    def _tensor_test_subject(self, test: cst.BaseExpression) -> str | None:
        """The name `isinstance(v, torch.Tensor)` (or `torch.is_tensor(v)`) tests."""
        if not (isinstance(test, cst.Call) and test.args):
            return None
        subject = test.args[0].value
        if not isinstance(subject, cst.Name):
            return None
        callee = get_full_name_for_node(test.func)
        qualified = self.imports.resolve(test.func)
        if qualified == "torch.is_tensor" and len(test.args) == 1:
            return subject.value
        if callee == "isinstance" and len(test.args) == 2:
            classes = test.args[1].value
            options = (
                [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
            )
            if any(class_name(option, self.imports) in TENSOR_ANNOTATIONS for option in options):
                return subject.value
        return None

    def _module_dict(self, mapping: cst.BaseExpression) -> bool:
        """`self.metrics` where every assignment of the class being walked makes it an
        `nn.ModuleDict`."""
        attribute = self_attribute(mapping)
        return attribute is not None and self._self_module_dicts[-1].get(attribute, False)

    def _values_of(
        self, mapping: cst.BaseExpression, item: cst.BaseExpression | None = None
    ) -> Kind:
        """What the values of a dict built here from a literal are: the value at `item`
        where it is a string key the literal has, else all of them. The values of a
        model's output (`outputs.items()`, a mapping of tensors) and of a record's field
        declared `Dict[str, Tensor]` (`hyp.scores`) are tensors; of any other dict,
        unknown."""
        record = self._record_field(mapping)
        if record is not None and mapping.attr.value in record.tensor_dicts:  # type: ignore[attr-defined]
            return Kind.TENSOR
        key = binding_key(mapping)
        known = None
        if key is not None:
            known = self._dict_values[-1].get(key, self._dict_values[0].get(key))
        if known is None:
            return Kind.TENSOR if self.of(mapping) is Kind.TENSOR else Kind.UNKNOWN
        if isinstance(item, cst.SimpleString) and str(item.evaluated_value) in known:
            return known[str(item.evaluated_value)]
        return known[None]

    def _makes_host_tensor(self, value: cst.BaseExpression) -> bool:
        """`torch.zeros(n)`, `torch.from_numpy(a)` (a factory given no device), `x.cpu()`
        or a subscript of a host tensor: a torch tensor on the host, not a Python container
        or a numpy array."""
        if type(value) is cst.Subscript:
            # `target = tokens[:, a:b]` of a host tensor: a view of it, on the host too
            # (not `batch["x"]`, a field of a mapping).
            return not _string_keyed(value) and self.is_host_tensor(value.value)
        if type(value) in (cst.BinaryOperation, cst.Comparison):
            # `scores[i] - offset`, `(query[i] != pad) & keep`: an operation with a host
            # tensor operand and no device one (`_operation`).
            operands = _operands(value)
            return self._operation(operands) is Kind.HOST and any(
                self.is_host_tensor(operand) for operand in operands
            )
        if type(value) is cst.UnaryOperation and not isinstance(value.operator, cst.Not):
            return self.is_host_tensor(value.expression)  # `~mask` of a host mask
        if type(value) is not cst.Call:
            return False
        func = value.func
        if type(func) is cst.Attribute and func.attr.value == "cpu":
            return True
        qualified = self.imports.resolve(func)
        return qualified is not None and (
            qualified == "torch.from_numpy" or _builds_from_sizes(qualified, value)
        )

    def holds_host_tensors(self) -> bool:
        """Some name of the function being walked, or attribute of its class, is known to
        hold a torch tensor made on the host."""
        return bool(self._host_tensors[-1] or self._self_host_tensors[-1])

    def is_host_tensor(self, node: cst.BaseExpression) -> bool:
        """Whether a host value is a torch tensor: made so in place, or a name (an
        attribute of `self`, in any method of its class) bound to one. Indexing it by a
        tensor is advanced indexing, as on the device, not a Python index."""
        if type(node) is cst.Name:
            return node.value in self._host_tensors[-1]
        attribute = self_attribute(node)
        if attribute is not None:
            return attribute in self._self_host_tensors[-1]
        return self._makes_host_tensor(node)

    def is_cpu_device(self, node: cst.BaseExpression) -> bool:
        """`"cpu"`, `torch.device("cpu")`, the `.device` of a torch tensor made on the host
        (`total.device` with `total = torch.zeros(n)`), or a name bound to one of them
        here."""
        if type(node) is cst.Attribute and node.attr.value == "device":
            return self.is_host_tensor(node.value)
        if type(node) is cst.Call and node.args:
            if (self.imports.resolve(node.func) or "") != "torch.device":
                return False
            node = node.args[0].value
        if type(node) is cst.SimpleString:
            return node.evaluated_value == "cpu"
        key = binding_key(node)
        return key is not None and (key in self._cpu_devices[-1] or key in self._cpu_devices[0])

    def moves_to_cpu(self, call: cst.Call) -> bool:
        """`.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`, `.to(cpu_device)`
        with `cpu_device = torch.device("cpu")`; and a move to where a torch tensor made on
        the host lives: `.to(total.device)`, `.to(total)` (its device and dtype) with
        `total = torch.zeros(n)`: the sum a host counter accumulates stays on the host."""
        if moves_to_cpu(call):
            return True
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value == "device":
                value = arg.value  # the device (or a tensor to match) comes first
                return self.is_cpu_device(value) or (
                    arg.keyword is None and self.is_host_tensor(value)
                )
        return False

    def is_dict(self, node: cst.BaseExpression) -> bool:
        """Whether a value is a dict (built here with `{}`, `dict()`, a dict comprehension
        or `defaultdict()`/`OrderedDict()`), or `locals()`/`globals()`/`vars()`; an
        attribute of `self` counts when any method of its class builds it so."""
        if _makes_dict(node):
            return True
        key = binding_key(node)
        if key is None:
            return False
        if key in self._dicts[-1] or key in self._dicts[0]:
            return True
        attribute = self_attribute(node)
        return attribute is not None and attribute in self._self_dicts[-1]

    def narrow(self, name: str, kind: Kind) -> Narrowed:
        """Take `name` for `kind` in the function being walked, where a test narrowed it
        (`analysis/type_tests.py`); returns what `restore` needs: its kind in this frame
        before (None if it had none here) and how many times it had been bound."""
        frame = self._frames[-1]
        previous = frame.get(name)
        frame[name] = kind
        return previous, self._bindings[-1].get(name, 0)

    def times_bound(self, name: str) -> int:
        """How many times the function being walked has bound `name` so far."""
        return self._bindings[-1].get(name, 0)

    def restore(self, name: str, narrowed: Narrowed) -> None:
        """Undo `narrow` where the narrowing ends, unless the name was rebound meanwhile
        (`if isinstance(x, int): x = float(x)`: what it was bound to stands)."""
        previous, bindings = narrowed
        if self._bindings[-1].get(name, 0) != bindings:
            return
        frame = self._frames[-1]
        if previous is None:
            frame.pop(name, None)
        else:
            frame[name] = previous

    # -- branches of an `if` statement ---------------------------------------------------
    def branch_state(self) -> BranchState:
        """The kinds of the function being walked as a branch starts or ends, and the names
        set to `None` there (an optional value's absent case)."""
        return dict(self._frames[-1]), frozenset(self._absent[-1])

    def start_branch(self, before: BranchState) -> None:
        """An `else`/`elif` starts from the kinds before the `if`, not where its body ended."""
        frame = self._frames[-1]
        frame.clear()
        frame.update(before[0])
        self._absent[-1] = set(before[1])

    def merge_branches(self, before: BranchState, ends: list[BranchState]) -> None:
        """After an `if`: a name every branch that goes on binds anew, some to tensors and
        the others to host values (`if step == 0: sigma2 = 0 elif ...: sigma2 = 1 -
        alpha`), is a tensor on some paths, so a tensor. Otherwise a name keeps the kind
        the last branch that rebinds it gives, as a walk in source order does: where only
        some branches rebind it (`if isinstance(v, Tensor): v = v.item()`, where the path
        that skips the body has no tensor to read), or where a branch's kind is unknown
        (a guess such as a tuple unpacked from a model call says too little to outweigh
        the others). A branch that sets the name to `None` (`else: mask = None`) says
        nothing of the value where present. `ends` holds the state at the end of each
        branch that goes on (not one that returns, raises or continues)."""
        if not ends:
            return
        frame = self._frames[-1]
        absent = self._absent[-1]
        kinds_before = before[0]
        for name in set().union(*(end for end, _ in ends)):
            real = [end[name] for end, nones in ends if name in end and name not in nones]
            if not real:
                frame[name] = Kind.HOST
                absent.add(name)
                continue
            absent.discard(name)
            changed = [kind for kind in real if kind is not kinds_before.get(name)]
            binding = [end for end, nones in ends if name not in nones]
            every = len(changed) == len(binding) or name not in kinds_before
            if every and set(real) == {Kind.TENSOR, Kind.HOST}:
                frame[name] = Kind.TENSOR
            else:
                frame[name] = changed[-1] if changed else real[-1]

    def _names_used_as_data(self) -> set[str]:
        """`used_as_data` of the function being walked, found once per frame."""
        found = self._data_names[-1]
        if found is None:
            function = self._function_nodes[-1]
            found = self._data_names[-1] = set() if function is None else used_as_data(function)
        return found

    def presumed(self, name: str) -> bool:
        """Whether `name` is a parameter taken for a tensor only because its function runs
        per step (unannotated, never rebound here)."""
        return name in self._presumed[-1]

    def _only_by_position(self, node: cst.BaseExpression) -> bool:
        """A name taken for a tensor only as one position of an unpacked tuple."""
        return type(node) is cst.Name and node.value in self._unpacked[-1]

    def lookup(self, name: str) -> Kind | None:
        frame = self._frames[-1]
        if name in frame:
            return frame[name]
        return self._frames[0].get(name)

    # -- inference ------------------------------------------------------------------------
    def of(self, node: cst.BaseExpression) -> Kind:
        """The kind of an expression's value."""
        # Exact types, not `isinstance`: libcst's node classes are final, and `isinstance`
        # on them goes through `ABCMeta`, the largest single cost of an analysis.
        node_type = type(node)
        if node_type in _HOST_VALUES or _is_literal(node):
            return Kind.HOST
        if node_type is cst.Name:
            known = self.lookup(node.value)
            if known is not None and known is not Kind.UNKNOWN:
                return known
            if node.value in {"True", "False", "None"}:
                return Kind.HOST
            if _LOADER_NAME.search(node.value):
                return Kind.ITERABLE
            if known is Kind.UNKNOWN and self._handed_tensor(node):
                return Kind.TENSOR
            # A model by its name, if the name is a variable or parameter here; an unbound
            # name called like `unwrap_module(...)` is a function.
            if (
                known is not None
                and names_model(node.value)
                and node.value not in self._typed[-1]
                and node.value not in self._names_used_as_data()
            ):
                return Kind.MODULE
            return Kind.UNKNOWN
        if node_type is cst.Attribute:
            return self._attribute(node)
        if node_type is cst.Call:
            kind = self._call(node)
            if kind is Kind.UNKNOWN and self.elsewhere is not None and self.elsewhere(node):
                return Kind.TENSOR  # `misc.is_nan(error)`: `torch.any(torch.isnan(t))` there
            return kind
        if node_type is cst.Subscript:
            if any(_negative_step(element.slice) for element in node.slice):
                # `image[:, :, ::-1]`: torch refuses a negative step, so the value sliced is
                # a numpy array or a sequence, on the host.
                return Kind.HOST
            if type(node.value) is cst.Name and node.value.value in self._tensor_dicts[-1]:
                return Kind.TENSOR  # an element of a dict of tensors moved to the device
            if self.foreign.any_known() and self.foreign.holds(node, self._is_module):
                return Kind.HOST  # `grads["w"]` of another array library's result
            base = self.of(node.value)
            if (
                base is Kind.ITERABLE
                and all(type(e.slice) is cst.Slice for e in node.slice)
                and _SCHEDULE_NAME.search(get_full_name_for_node(node.value) or "")
            ):
                # `self.ddim_timesteps[:subset_end]`: a slice of a schedule is a shorter
                # schedule, not one of its elements (a slice of anything else named for
                # batches is no loader, which cannot be sliced: unknown, as an index is).
                return Kind.ITERABLE
            if base is Kind.ITERABLE:
                # `timesteps[i]` is a tensor, and so is a fixed element of a parameter
                # annotated `Sequence[Tensor]` (`output[0]`: optimizers' parallel lists,
                # indexed by the loop's counter, are left to the loops over them); a loader
                # cannot be indexed, so `epoch_batches[epoch]` is some container of batches.
                schedule = _SCHEDULE_NAME.search(get_full_name_for_node(node.value) or "")
                value = node.value
                sequence = (
                    isinstance(value, cst.Name)
                    and value.value in self._sequences[-1]
                    and _literal_index(node)
                )
                return Kind.TENSOR if schedule or sequence else Kind.UNKNOWN
            if base is Kind.HOST and self.is_dict(node.value):
                # A dict lives on the host; what it holds need not (`features["mask"]`).
                index = node.slice[0].slice if len(node.slice) == 1 else None
                return self._values_of(
                    node.value, index.value if isinstance(index, cst.Index) else None
                )
            record = self._record_field(node.value)
            if record is not None and node.value.attr.value in record.tensor_dicts:  # type: ignore[attr-defined]
                return Kind.TENSOR  # `hyp.scores[k]`: a dict field declared to hold tensors
            return base if base in (Kind.TENSOR, Kind.HOST) else Kind.UNKNOWN
        if node_type is cst.BinaryOperation:
            return self._operation(_operands(node))
        if node_type is cst.UnaryOperation:
            if isinstance(node.operator, cst.Not):
                return Kind.HOST
            return self.of(node.expression)
        if node_type is cst.Comparison:
            if all(
                type(t.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for t in node.comparisons
            ):
                return Kind.HOST
            if self._compares_with_none(node):
                # `module.weight != None`: a tensor's `==`/`!=` hand a None operand back to
                # Python, which compares identities: a bool, no element read.
                return Kind.HOST
            if _compares_with_a_string(node):
                # `mode == "train"`: a tensor's `==`/`!=` refuse a string operand, which
                # Python then answers by identity (a bool, no element read): whatever
                # `mode` was taken for, the test reads no device value.
                return Kind.HOST
            return self._operation(_operands(node))
        if node_type is cst.IfExp:
            if (tracing := self.tests_tracing(node.test)) is not None:
                # `torch.min(torch.tensor(hw)) if torch.jit.is_tracing() else min(hw)`: a
                # step on the XLA device is not traced by TorchScript.
                return self.of(node.orelse if tracing else node.body)
            return _join((self.of(node.body), self.of(node.orelse)))
        if node_type is cst.BooleanOperation:
            return _join((self.of(node.left), self.of(node.right)))
        if node_type is cst.Tuple:
            return _join(self.of(e.value) for e in node.elements) if node.elements else Kind.HOST
        if node_type is cst.NamedExpr:
            return self.of(node.value)
        return Kind.UNKNOWN

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.of(node) is Kind.TENSOR

    def _compares_with_none(self, node: cst.Comparison) -> bool:
        """`x != None`, `None == x`, or with a local every assignment of which binds None
        (`implemented_weight = None`, then `module.weight != implemented_weight`): one
        equality test with None, which torch's tensors hand back to Python, and Python
        answers by identity (a bool, whatever `x` is)."""
        if len(node.comparisons) != 1:
            return False
        test = node.comparisons[0]
        if type(test.operator) not in (cst.Equal, cst.NotEqual):
            return False
        function = self._functions[-1] if self._functions else None
        for side in (node.left, test.comparator):
            if type(side) is not cst.Name:
                continue
            if side.value == "None":
                return True
            if isinstance(function, cst.FunctionDef):
                values = local_values(function, side.value)
                if values and all(
                    type(v) is cst.Name and v.value == "None"  # type: ignore[attr-defined]
                    for v in values
                ):
                    return True
        return False

    def _operation(self, operands: Sequence[cst.BaseExpression]) -> Kind:
        """The kind of an arithmetic, bitwise or comparison result: a tensor where an
        operand is one; else on the host where an operand is a torch tensor made on the
        host (`(query[i] != pad)` with `query = batch["ids"].cpu()`), whatever the others
        are: PyTorch refuses to combine a host tensor with a device tensor (a 0-dim one
        aside), so the operands of unknown kind are numbers or host tensors too."""
        kinds = [self.of(operand) for operand in operands]
        kind = _join(kinds)
        if kind is Kind.UNKNOWN and any(
            known is Kind.HOST and self.is_host_tensor(operand)
            for operand, known in zip(operands, kinds, strict=True)
        ):
            return Kind.HOST
        return kind

    def accumulated(self, target: cst.BaseExpression, value: cst.BaseExpression) -> Kind:
        """The kind `target op= value` leaves: the join of both, as before the host-operand
        reasoning of `_operation`: a running total a host tensor starts as (`returns =
        torch.zeros(n)`, then `returns += r`) takes what it accumulates, where a helper
        may hand back a device value on one of its paths."""
        return _join((self.of(target), self.of(value)))

    @property
    def records(self) -> dict[str, Record]:
        """The module's record classes with tensor fields, by name (`records.py`)."""
        return self._records

    def _copies_tensor_mapping(self, value: cst.BaseExpression) -> bool:
        """`TensorDict(source=td, batch_size=...)` or `td.clone()` of a tensor mapping
        handed in (`td: TensorDictBase`): another mapping of the same tensors."""
        if type(value) is not cst.Call:
            return False
        func = value.func
        if type(func) is cst.Attribute and func.attr.value == "clone":
            receiver = func.value
            return type(receiver) is cst.Name and receiver.value in self._tensor_dicts[-1]
        name = func.attr.value if type(func) is cst.Attribute else getattr(func, "value", None)
        return name in _TENSOR_MAPPINGS and any(
            type(arg.value) is cst.Name and arg.value.value in self._tensor_dicts[-1]
            for arg in value.args
        )

    def _fed_to_network(self, name: str, value: cst.BaseExpression) -> bool:
        """`input_kwargs = {k: v[i:j] for k, v in model_inputs.items()}` (or a dict
        display) in a function that hands it whole to a network as its keyword arguments
        (`model(**input_kwargs)`, `self.reward_model(**batch)`): the dict the function
        builds holds the network's inputs, device tensors where the network runs, whatever
        it was built from (an argument typed `dict[str, Any]`). Not one with an entry
        known to be on the host (`{"ids": ids.cpu()}`), nor a dict bound otherwise (a
        tokenizer's host batch is what its call says)."""
        if type(value) is cst.DictComp:
            entries: list[cst.BaseExpression] = [value.value]
        elif type(value) is cst.Dict:
            entries = [e.value for e in value.elements if type(e) is cst.DictElement]
        else:
            return False
        function = self._functions[-1]
        return (
            function is not None
            and name in unpacked_into_networks(function)
            and not any(self.of(entry) is Kind.HOST for entry in entries)
        )

    def _moves_values(self, value: cst.BaseExpression) -> bool:
        """`{k: v.to(device) for k, v in batch.items()}`: a dict whose values are moved to
        the device, so each is a tensor there."""
        if type(value) is not cst.DictComp or type(value.value) is not cst.Call:
            return False
        call = value.value
        if not isinstance(call.func, cst.Attribute):
            return False
        return self.copies_to_device(call)

    def is_derived(self, node: cst.BaseExpression) -> bool:
        """Whether a name of unknown kind was computed from tensors by a helper xlalint
        cannot see (`logprobs = rlhf.logits_to_logprobs(logits, ...)`, or a tuple element
        of such a result): not enough to call it a tensor, enough when a use agrees."""
        return isinstance(node, cst.Name) and node.value in self._derived[-1]

    def computed_from_tensors(self, value: cst.BaseExpression) -> bool:
        """Positive evidence that a value of unknown kind was computed on the device: a
        helper handed a device tensor made it (`outputs = self._calculate_loss(model,
        inputs)`), or it is a method or element of such a value (`outputs[0].detach()`).
        A value with no such origin (a tokenizer's output, an attribute of an object, a
        parameter) may as well be a host tensor."""
        return self._computed_from_tensors(value)

    def _computed_from_tensors(self, value: cst.BaseExpression) -> bool:
        """A call of a helper with a tensor, a model (whose parameters it computes with) or
        a derived value among its arguments, or a
        method called on a derived value (`helper(x).squeeze(-1)`, `mask.clone()`), or
        arithmetic or a comparison with one (`tokens == eos` of `tokens =
        sampler.sample(probs)`: the mask of a device tensor); not what lives on the host
        (`len()`, numpy, `.item()`)."""
        while type(value) is cst.Subscript:
            value = value.value
        if type(value) is cst.Name:
            return self.is_derived(value)
        if isinstance(value, cst.BinaryOperation):  # `(chosen - rejected).mean()`
            return self._computed_from_tensors(value.left) or self._computed_from_tensors(
                value.right
            )
        if isinstance(value, cst.Comparison):  # `eos_mask = vocab_indices == eos`
            return self._computed_from_tensors(value.left) or any(
                self._computed_from_tensors(c.comparator) for c in value.comparisons
            )
        if not isinstance(value, cst.Call) or self.of(value) is Kind.HOST:
            return False
        func = value.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in HOST_METHODS or func.attr.value in TO_HOST_METHODS:
                return False
            if self._computed_from_tensors(func.value):
                return True
        return any(
            not arg.star
            and (self.of(arg.value) in (Kind.TENSOR, Kind.MODULE) or self.is_derived(arg.value))
            for arg in value.args
        )

    def tests_tracing(self, test: cst.BaseExpression) -> bool | None:
        """True for `torch.jit.is_tracing()` (or an ONNX export's probe), False for its
        negation, else None."""
        inner = negated(test)
        call = test if inner is None else inner
        if isinstance(call, cst.Call) and self.imports.resolve(call.func) in _TRACING_PROBES:
            return inner is None
        return None

    def _is_module(self, node: cst.BaseExpression) -> bool:
        return self.of(node) is Kind.MODULE

    def _attribute(self, node: cst.Attribute) -> Kind:
        attr = node.attr.value
        if self.foreign.any_known() and self.foreign.holds(node, self._is_module):
            return Kind.HOST  # `loss_output.kl_sum` of another array library's output
        if type(node.value) is cst.Name and node.value.value == "self":
            known = self._self_attributes[-1].get(attr)
            if known is not None and known is not Kind.UNKNOWN:
                return known
            if attr in self._declared_tensors[-1]:
                return Kind.TENSOR  # `self._prompt_lens: Tensor | None` declared
            if known is None and attr in self._batch_state[-1]:
                return Kind.TENSOR  # a fastai callback's `self.pred` in `after_pred`
        elif attr in self._batch_state[-1] and self_attribute(node.value) == "learn":
            return Kind.TENSOR  # `self.learn.pred`
        qualified = self.imports.resolve(node)
        if qualified is not None:
            if qualified.startswith("torch.") and attr[:1].islower():
                # torch.float32, torch.cuda, torch.nn...: dtypes and namespaces
                return Kind.HOST
            if self._tensor_property_elsewhere(node):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if self._tensor_property_elsewhere(node):
            return Kind.TENSOR
        if attr in HOST_ATTRIBUTES or (attr.startswith("__") and attr.endswith("__")):
            return Kind.HOST  # `.shape`, ...; `x.__class__.__name__` is Python metadata
        if (record := self._record_field(node)) is not None and attr in record.tensors:
            return Kind.TENSOR  # `hyp.score`, a field the record class declares a tensor
        base = self.of(node.value)
        if base is Kind.TENSOR and attr in HOST_METHODS:
            # `value.size` (not called): a bound method, compared or passed as a Python
            # object, never a tensor.
            return Kind.HOST
        if base is Kind.TENSOR and attr not in TENSOR_MEMBERS and _INDEX_NAME.match(attr):
            # `g.batch_size`, `data.num_graphs`: no tensor has such an attribute, and its
            # name says a count or an index, as a parameter's would. (Not a camera's
            # `height`: a size per image may be a tensor.)
            return Kind.HOST
        if base is Kind.TENSOR and attr not in TENSOR_MEMBERS and self._declared_tensor(node.value):
            # `input.qtype` with `input: torch.Tensor`: the code says it is a tensor, and
            # torch's Tensor has no such attribute: a tensor subclass's own Python field
            # (optimum-quanto's qtype), no tensor value unless the code says so.
            return Kind.UNKNOWN
        if base is Kind.TENSOR:
            return Kind.TENSOR  # .grad, .data, .T, .loss of a model output
        if base is Kind.HOST and attr in _VIEW_ATTRIBUTES and type(node.value) is cst.Call:
            return Kind.HOST  # `y_pred.cpu().data`: a view of the host copy
        if base is Kind.HOST and attr in _RESULT_FIELDS and type(node.value) is cst.Call:
            return Kind.HOST  # `torch.kthvalue(host_vals, k).values`
        if base is Kind.HOST and (
            (type(node.value) is cst.Name and node.value.value in self._host_computed[-1])
            or self._host_result(node.value)
        ):
            # `ranking.aggregate_score` with `ranking = rank(atom_pos_cpu, ...)`: a field
            # of what a function computed from host tensors.
            return Kind.HOST
        if (
            base is Kind.HOST
            and type(node.value) is cst.Call
            and (self.imports.resolve(node.value.func) or "").startswith("numpy.")
        ):
            return Kind.HOST  # `np.finfo(np.float32).eps`: a field of a numpy object
        if base is not Kind.HOST and attr in PARAMETER_ATTRIBUTES:
            return Kind.TENSOR  # `model.fc.weight`, `p.grad`
        if base is Kind.MODULE:
            return Kind.UNKNOWN
        if _LOADER_NAME.search(attr):
            return Kind.ITERABLE
        if names_model(attr) and not self._own_method(node) and attr not in MODULE_WALKS:
            return Kind.MODULE  # (`self.modules` is a method walking the submodules)
        return Kind.UNKNOWN

    def _tensor_property_elsewhere(self, node: cst.Attribute) -> bool:
        """`sequence_parallel.real_position_ids` of an imported name (absolute or relative
        import, not rebound in the function): a property of an object another project
        module builds at its top level, declared `-> torch.Tensor` there."""
        return (
            self.property_elsewhere is not None
            and type(node.value) is cst.Name
            and self.lookup(node.value.value) is None  # type: ignore[attr-defined]
            and self.property_elsewhere(node)
        )

    def _declared_tensor(self, node: cst.BaseExpression) -> bool:
        """A parameter annotated as a tensor, a name bound to a row of one, or a row of
        one (`input[0]`): a tensor by the code's word. A presumed one (a model's output,
        a `forward`'s unannotated parameter) may be any object holding tensors
        (`outputs.logits`, a graph batch's `batch.ptr`)."""
        while type(node) is cst.Subscript:
            node = node.value  # type: ignore[attr-defined]
        return type(node) is cst.Name and node.value in self._declared[-1]  # type: ignore[attr-defined]

    def _own_method(self, node: cst.Attribute) -> bool:
        """`self.restore_model`, where the class being walked defines `def
        restore_model`: a method, whatever its name says, not a submodule."""
        return (
            isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and node.attr.value in self._class_methods[-1]
        )

    def _call(self, node: cst.Call) -> Kind:
        func = node.func
        if _returns_torch_tensors(node):
            # `self._tok(text, return_tensors="pt")`: a tokenizer's or processor's batch,
            # built on the host; `.to(device)` of it hands back its tensors on the device
            # (`inputs["input_ids"]` of `encoding.to(device)` is a device tensor).
            return Kind.HOST
        qualified = self.imports.resolve(func)
        if qualified is not None:
            return self._qualified_call(qualified, node)
        if self.foreign.any_known() and self.foreign.builds(node, self._is_module):
            # `loss_and_grad(model, batch)` with `loss_and_grad = nn.value_and_grad(...)`
            # of `import mlx.nn as nn`, `self.module(mlx_batch)`: another library's arrays.
            return Kind.HOST
        if type(func) is cst.Name:
            name = func.value
            if (
                name in _TENSOR_DUNDER_BUILTINS
                and self.lookup(name) is None
                and node.args
                and node.args[0].keyword is None
                and not node.args[0].star
                and self.of(node.args[0].value) is Kind.TENSOR
            ):
                # `abs(x_next - x_star)`, `round(t)`: `Tensor.__abs__`/`__round__` give a
                # tensor on the operand's device, as `t.abs()` does; no host read.
                return Kind.TENSOR
            if name in _HOST_BUILTINS and self.lookup(name) is None:
                return Kind.HOST
            if name in _CHOOSING_BUILTINS and self.lookup(name) is None:
                # `min(num_samples, max_batch)` hands back one of its arguments: a Python
                # number where every one is (one iterable argument: the block below).
                values = [a.value for a in node.args if a.keyword is None and not a.star]
                if (
                    len(values) > 1
                    and len(values) == len(node.args)
                    and all(self.of(v) is Kind.HOST for v in values)
                ):
                    return Kind.HOST
            if (
                name in _ELEMENT_BUILTINS
                and self.lookup(name) is None
                and len(node.args) == 1
                and node.args[0].keyword is None
                and not node.args[0].star
                and not self._only_by_position(node.args[0].value)
                and self.of(node.args[0].value) is Kind.TENSOR
            ):
                # `max(lengths)` of a device tensor iterates its elements: the largest is a
                # 0-dim tensor on the same device, not a Python number.
                return Kind.TENSOR
            if name == "self" and self._in_module_method():
                return Kind.TENSOR  # `pi, action, value = self(state)`: the module's forward
            if name in self._module_classes and self.lookup(name) is None:
                return Kind.MODULE  # `Policy(env)` with `class Policy(nn.Module)` above
            returns = self.returns
            if returns is not None and self.lookup(name) is None and returns.function(name):
                return Kind.HOST  # `acc = accuracy(logits, y)`: a helper's number
            if self.lookup(name) is None and None in self._host_built_returns(node):
                # `def _bin_centers(...) -> Tensor` returning `torch.linspace(...)[1::2]`:
                # a tensor, built on the host.
                return Kind.HOST
            if name in self._tensor_functions and self.lookup(name) is None:
                return Kind.TENSOR  # `def dqn_loss(...) -> Tensor` of this module
            if self._defaults_to_a_tensor_function(name):
                # `decode_one_token(...)` with `decode_one_token=decode_one_token_ar`, a
                # function of this module declared `-> torch.Tensor`.
                return Kind.TENSOR
            if name in self._tensors_functions and self.lookup(name) is None:
                return Kind.ITERABLE  # `def split(...) -> tuple[Tensor, Tensor]`
            if self.of(func) is Kind.MODULE and self._host_module_call(name, node):
                # `loss = cross_entropy_loss(logits, word_tensor)` with `cross_entropy_loss =
                # torch.nn.CrossEntropyLoss(...)` built here and never moved, handed host
                # tensors: the module computes on the host.
                return Kind.HOST
            if self.of(func) is Kind.MODULE or self._walked_as_module(name):
                return Kind.TENSOR
            if self.lookup(name) is None and self._computes_from_tensors(node):
                return Kind.TENSOR  # `if all_rows_have_eos_id(ids, eos):` of device ids
            return Kind.UNKNOWN
        if isinstance(func, cst.Attribute):
            if self._attribute(func) is Kind.MODULE:
                attribute = self_attribute(func)
                if attribute is not None and self._self_classes[-1].get(attribute) in (
                    self._host_forwards
                ):
                    # `self.add_node_agent(a)` of a module class whose `forward` returns a
                    # Python bool: a decision, not a tensor.
                    return Kind.HOST
                return Kind.TENSOR  # `self.proj(x)` with `self.proj = nn.Linear(...)`
            method = func.attr.value
            if (
                method == "get"
                and type(func.value) is cst.Name
                and func.value.value in self._tensor_dicts[-1]
            ):
                return Kind.TENSOR  # `tensordict.get("reward")`: a value of a tensor mapping
            receiver = self.of(func.value)
            if receiver is Kind.TENSOR:
                if method == "type" and node.args and not _names_a_type(node.args[0].value):
                    return Kind.TENSOR  # `x.type(x.dtype)`: a cast (`x.type()` is a string)
                if method in HOST_METHODS or method in TO_HOST_METHODS:
                    return Kind.HOST
                if method in _KEY_METHODS:
                    # No tensor has `keys()`: the value is a mapping (`outputs[0]` of a
                    # `list[Tensor | dict[str, Tensor]]`), and its keys are strings.
                    return Kind.HOST
                if method.startswith("get_"):
                    # Tensor's one getter, `get_device`, is a host method: a receiver with
                    # `get_seq_length()` is some other object (a cache typed as a tensor).
                    return Kind.UNKNOWN
                if method == "to" and self.moves_to_cpu(node):
                    return Kind.HOST
                return Kind.TENSOR
            if self.returns is not None and self.returns.method(method):
                return Kind.HOST  # `meter.average()`, `self.rate(t)`: this module's numbers
            if receiver is Kind.MODULE:
                if method in _MODULE_CHAINING:
                    return Kind.MODULE
                if method in _MODULE_ITERABLES:
                    return Kind.ITERABLE
                if method in {"forward", "__call__"} or self._tensor_methods.get(method):
                    # `agent.get_action(obs)`: a method this module's classes define to
                    # return only tensors, walked before the call.
                    return Kind.TENSOR
                return Kind.UNKNOWN
            if receiver is Kind.UNKNOWN and (
                method in ONLY_TENSOR_MATH_WITH_ARGUMENTS
                or (method in ONLY_TENSOR_MATH and not node.args)
                or (
                    method in ONLY_TENSOR_NORMS
                    and all(
                        a.keyword is not None or type(a.value) in (cst.Integer, cst.Float)
                        for a in node.args
                    )
                )
                or (method in ONLY_TENSOR_PREDICATES and not node.args)
                or (method in ONLY_TENSOR_SELECTIONS and _a_count_at_most(node))
            ):
                # `f0_mel = 1127 * (1 + f0 / 700).log()`, `(1 - r).clamp(min=0).sqrt()`,
                # `100 * h * d.norm() / norm_X`, `values.topk(k)`, `reward.isnan()`: only
                # a tensor has the method, so its result is one, on the receiver's device
                # (a host value is known as one: `receiver is Kind.HOST` below).
                return Kind.TENSOR
            if _TO_DEVICE_METHOD.search(method):
                # `device.tensor_to_device(t)`, `batch_to_device(b)`: a framework's device
                # object (itself host metadata) hands back what it moved to the device; a
                # model moved there (`to_device(self.dist_model)`) is still the model.
                moved = node.args[0].value if node.args and not node.args[0].star else None
                if moved is not None and self.of(moved) is Kind.MODULE:
                    return Kind.MODULE
                return Kind.TENSOR
            if receiver is Kind.HOST:
                if self.copies_to_device(node):
                    return Kind.TENSOR  # a host tensor moved to the device
                if method == "type_as" and node.args and self.of(node.args[0].value) is Kind.TENSOR:
                    return Kind.TENSOR  # `torch.zeros(1).type_as(self.bank_ptr)`: its device
                if method in _DICT_LOOKUPS and self.is_dict(func.value):
                    item = node.args[0].value if node.args else None
                    return self._values_of(func.value, item)  # `features.get("mask")`
                return Kind.HOST
            if method in TO_HOST_METHODS or (method == "to" and self.moves_to_cpu(node)):
                # Whatever the receiver was, a copy to the host lives on the host: the
                # `.numpy()` of `out.cpu().numpy()` reads no device tensor.
                return Kind.HOST
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                if functions := self._self_functions[-1].get(method):
                    return _join(self._qualified_call(name, node) for name in sorted(functions))
                if self._in_module_method() and (
                    method == "forward" or self._tensor_methods.get(method)
                ):
                    return Kind.TENSOR  # `self.forward(x)` in another method of a module
                if self._methods_walked and self._own_tensor_methods.get(
                    (self._methods_walked[-1][0], method)
                ):
                    return Kind.TENSOR  # `self.get_alpha_bar(t)`, walked above
                if method in self._class_tensor_returns[-1]:
                    if None in self._host_built_returns(node):
                        return Kind.HOST  # `-> Tensor`, returning `torch.tensor(stats)`
                    return Kind.TENSOR  # `def _compute_loss(self, batch) -> torch.Tensor`
                if method in self._class_tensors_returns[-1]:
                    return Kind.ITERABLE  # `def _compute_y_and_t(...) -> Tuple[Tensor, Tensor]`
                if method in MODULE_WALKS:
                    return Kind.UNKNOWN  # `self.modules()`: the submodules
                held = self._held_module_call(method)
                if held is not None:
                    return held
                if names_model(method) and method not in self._class_methods[-1]:
                    return Kind.TENSOR
                return Kind.UNKNOWN
        return Kind.UNKNOWN

    def _held_module_call(self, attribute: str) -> Kind | None:
        """`self.environment(actions)` where the attribute holds an instance of module
        classes of the file (`members.held_classes`: built there, or a parameter annotated
        with the class, `environment: BaseEnvironment`) whose `forward` is annotated to
        return a tensor (TENSOR) or tensors only (ITERABLE: `-> tuple[Float[''],
        Float['...'], Bool['']]`, each unpacked value one); None where that says nothing."""
        module = self._module
        class_name = self._class_names[-1] if self._class_names else None
        if module is None or class_name is None:
            return None
        classes = held_classes(module, class_name, attribute)
        if not classes or not classes <= self._module_classes:
            return None
        kinds = set()
        for name in classes:
            forward = class_method(module, name, "forward")
            if forward is None or forward.returns is None:
                return None
            kinds.add(_tensor_annotation(forward.returns.annotation))
        if len(kinds) == 1 and (kind := kinds.pop()) in (Kind.TENSOR, Kind.ITERABLE):
            return kind
        return None

    def _host_inputs(self, call: cst.Call) -> bool:
        """Every positional argument of a torch call is a host value, and none names a
        device: the result is on the host too (elements of a list or tuple argument count
        one by one, and a comprehension's by the element it makes). So it is where the
        input is a name holding a host tensor and no other argument is known to be a
        device tensor (`torch.kthvalue(rand_vals, n - k)` with `rand_vals = torch.randn(1,
        n)`): a device tensor beside a host one that is not a 0-dim scalar raises, and an
        unknown count is read as a number."""
        first = call.args[0] if call.args else None
        if (
            first is not None
            and first.keyword is None
            and not first.star
            and isinstance(first.value, cst.Name)
            and self.of(first.value) is Kind.HOST
            and self._holds_host_values(first.value)
            and not any(a.star or _is_keyword(a, "device") for a in call.args)
            and not any(self.of(a.value) is Kind.TENSOR for a in call.args[1:])
        ):
            return True
        if self._beside_a_host_copy(call):
            return True
        values = []
        for arg in call.args:
            if arg.star or _is_keyword(arg, "device"):
                return False
            if arg.keyword is None:
                value = arg.value
                if isinstance(value, cst.List | cst.Tuple):
                    values.extend(e.value for e in value.elements)
                elif isinstance(value, cst.ListComp | cst.GeneratorExp):
                    # `torch.stack([torch.from_numpy(t.audio) for t in tracks])`: each
                    # element is what the comprehension makes.
                    values.append(value.elt)
                else:
                    values.append(value)
        return bool(values) and all(
            self.of(v) is Kind.HOST and self._holds_host_values(v) for v in values
        )

    def _beside_a_host_copy(self, call: cst.Call) -> bool:
        """A positional argument is a host copy made right there (`~valids.cpu()`, in
        `torch.logical_or(mb.dones_cpu, ~valids.cpu())`), no argument is known to be a
        device tensor and none names a device: the operation runs on the host, where its
        copied input is (a device tensor beside it would raise)."""
        copied = False
        for arg in call.args:
            if arg.star or _is_keyword(arg, "device"):
                return False
            value = arg.value
            if self.of(value) is Kind.TENSOR:
                return False
            while type(value) is cst.UnaryOperation:
                value = value.expression  # type: ignore[attr-defined]
            if arg.keyword is None and host_copy(value) is True:
                copied = True
        return copied

    def _holds_host_values(self, value: cst.BaseExpression) -> bool:
        """A list the function fills with `append` (`value_losses.append(loss)`, then
        `torch.stack(value_losses)`) is a host object whose elements may be device tensors:
        its contents count only when every append hands a host value."""
        held = self.list_elements(value) if type(value) is cst.Name else None
        if held is None:
            return True
        if isinstance(held, Kind):
            return held is Kind.HOST
        kinds = held.values() if isinstance(held, dict) else held
        return all(kind is Kind.HOST for kind in kinds)

    def copies_to_device(self, call: cst.Call) -> bool:
        """`x.cuda()`, or `x.to(...)` to a device (`_moves_to_device`): a call of an
        attribute that copies its receiver to the device."""
        assert isinstance(call.func, cst.Attribute)
        method = call.func.attr.value
        return method == "cuda" or (method == "to" and self._moves_to_device(call))

    def _moves_to_device(self, call: cst.Call) -> bool:
        """`.to(device)`, `.to("xla")`, `.to(other)`; not `.to("cpu")`, `.to(torch.float16)`,
        `.to(x.dtype)`, `.to(torch.get_default_dtype())`."""
        if self.moves_to_cpu(call):
            return False
        for arg in call.args:
            if _is_keyword(arg, "device"):
                return True
            if arg.keyword is None and not arg.star:
                value = arg.value
                # `torch.get_default_dtype()`: a call that hands back a dtype.
                named = value.func if isinstance(value, cst.Call) else value
                qualified = self.imports.resolve(named) or ""
                spelled = get_full_name_for_node(named) or ""
                return not (
                    qualified.rsplit(".", 1)[-1] in _DTYPE_NAMES
                    or spelled.endswith("dtype")
                    or qualified.endswith("dtype")
                )
        return False

    def _names_a_device(self, call: cst.Call) -> bool:
        """The call is given a `device=` other than the CPU (`load_file(p, device="cuda")`,
        `device=rank`)."""
        for arg in call.args:
            if _is_keyword(arg, "device"):
                value = arg.value
                return not (type(value) is cst.SimpleString and value.evaluated_value == "cpu")
        return False

    def _host_module_call(self, name: str, call: cst.Call) -> bool:
        """`name(...)` where `name` was last bound, in the function being walked, to a
        `torch.nn` module built right there (`torch.nn.CrossEntropyLoss(reduction="none")`,
        not moved: a move is another value), and every argument of the call is a host
        value: a module that lives on the host computes on the host. (A module handed in,
        kept on `self` or built elsewhere may have been moved with its model.)"""
        function = self._function_nodes[-1]
        values = [a.value for a in call.args]
        if function is None or not values or any(a.star for a in call.args):
            return False
        built = value_before(function, call, name)
        if type(built) is not cst.Call:
            return False
        qualified = self.imports.resolve(built.func)
        if qualified is None or not NN_MODULE_CLASS.match(qualified):
            return False
        return all(self.of(value) is Kind.HOST for value in values)

    def _qualified_call(self, qualified: str, node: cst.Call) -> Kind:
        if qualified.startswith(_HOST_LIBRARIES) or other_library(qualified):
            return Kind.HOST  # numpy's values; jax's, MLX's, TensorFlow's (no torch tensors)
        if qualified in _HOST_CHECKPOINT_READERS and not self._names_a_device(node):
            # `safe_open(path, framework="pt")`, `load_file(path)`: the tensors of a file,
            # read to the CPU where no `device=` says otherwise (the handle's
            # `get_tensor(key)` too).
            return Kind.HOST
        if qualified == "functools.reduce" and node.args and node.args[0].keyword is None:
            # `reduce(torch.logical_or, checks)`: what the torch operation it folds with
            # returns, a tensor.
            folded = self.imports.resolve(node.args[0].value)
            if (
                folded is not None
                and folded.startswith("torch.")
                and not _TORCH_NON_TENSOR.match(folded)
                and not _PREDICATE.match(folded.rsplit(".", 1)[-1].lstrip("_"))
            ):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if NN_MODULE_CLASS.match(qualified):
            return Kind.MODULE
        if NN_TENSOR_CLASS.match(qualified):
            return Kind.TENSOR  # a parameter: on the device with its module
        if qualified.startswith("torch.utils.data.") and qualified.endswith("DataLoader"):
            return Kind.ITERABLE
        if qualified.startswith("torch_xla.distributed.parallel_loader."):
            return Kind.ITERABLE
        if (
            qualified.startswith("torch.")
            and not _builds_from_sizes(qualified, node)
            and self._host_inputs(node)
        ):
            return Kind.HOST  # `torch.argsort(logits_on_cpu)`: computed where its input is
        if (
            qualified in _AS_TENSOR
            and not any(_is_keyword(arg, "device") for arg in node.args)
            and (function := self._function_nodes[-1]) is not None
            and function.name.value == "__init__"
        ):
            # `self.weights = torch.as_tensor(weights)` in a constructor: its arguments are
            # configuration, made on the host, and `model.to(device)` moves buffers and
            # parameters, not plain attributes.
            return Kind.HOST
        if _TORCH_TENSOR_NAMESPACES.match(qualified):
            return Kind.TENSOR
        if qualified.rsplit(".", 1)[-1] in _RNG_STATE_GETTERS:
            return Kind.HOST  # a CPU ByteTensor, whatever the backend (`torch.npu.random`)
        if qualified == "torch.from_numpy" or (
            _builds_from_sizes(qualified, node)
            and (
                moves_to_cpu(node)
                # `device=total.device`: where a host tensor lives (not a name bound to the
                # CPU device, which a branch may have bound: `if device is None: device =
                # torch.device("cpu")`)
                or any(
                    _is_keyword(a, "device")
                    and type(a.value) is cst.Attribute
                    and a.value.attr.value == "device"
                    and self.is_host_tensor(a.value.value)
                    for a in node.args
                )
                or not (self.device_contexts or any(_is_keyword(a, "device") for a in node.args))
            )
        ):
            return Kind.HOST  # made on the host: `torch.randint(n, (b,))`, `torch.rand(1)`
        if qualified.startswith("torch.") and not _TORCH_NON_TENSOR.match(qualified):
            if _PREDICATE.match(qualified.rsplit(".", 1)[-1].lstrip("_")):
                # `torch._dynamo.is_compiling()`, `torch._C._get_cudnn_enabled()`: a flag
                return Kind.HOST
            return Kind.TENSOR
        if not qualified.startswith("torch") and self._computes_on_host(qualified, node):
            return Kind.HOST
        return Kind.UNKNOWN

    def _host_result(self, value: cst.BaseExpression) -> bool:
        """`value` is a call of another module's function that computes on the host."""
        if type(value) is not cst.Call:
            return False
        qualified = self.imports.resolve(value.func)
        return (
            qualified is not None
            and not qualified.startswith("torch")
            and self._computes_on_host(qualified, value)
        )

    def _computes_on_host(self, qualified: str, call: cst.Call) -> bool:
        """A function another module defines (`from .ranking import rank`), handed the CPU
        device (`move_data_to_device(inputs, torch.device("cpu"))`), or handed host values
        only, at least one a torch tensor on the host (`rank(atom_pos[idx : idx + 1],
        atom_mask=inputs["atom_exists_mask"], ...)` after `atom_pos = atom_pos.cpu()`):
        what it returns is on the host, as torch computes where its inputs are (a device
        tensor beside a host one raises). Not a class (a model built from host weights is
        still a model) nor a name that says model."""
        name = qualified.rsplit(".", 1)[-1]
        if not call.args or name[:1].isupper() or names_model(name):
            return False
        if any(arg.star for arg in call.args):
            return False
        if any(
            (arg.keyword is None or arg.keyword.value == "device") and self.is_cpu_device(arg.value)
            for arg in call.args
        ):
            return True
        if any(_is_keyword(arg, "device") for arg in call.args):
            return False
        host_tensor = False
        for arg in call.args:
            if self.of(arg.value) is not Kind.HOST:
                return False
            host_tensor = host_tensor or self.is_host_tensor(arg.value)
        return host_tensor


_SCALING = (cst.Multiply, cst.Divide, cst.Add)

# Libraries that compute on the host only: numbers, and arrays OpenCV takes and hands back
# as numpy arrays (`cv2.resize(image, size)` raises on a tensor).
_HOST_LIBRARIES = ("numpy.", "math.", "random.", "time.", "os.", "cv2.")
# Readers of checkpoint files that hand back host tensors unless given a `device=`:
# safetensors' handle (`safe_open(path, framework="pt")`: its `get_tensor(key)` is on the
# CPU by default) and its loaders (`load_file(path)`, `load(data)`).
_HOST_CHECKPOINT_READERS = frozenset(
    {"safetensors.safe_open", "safetensors.torch.safe_open", "safetensors.torch.load_file",
     "safetensors.torch.load"}
)  # fmt: skip


# What a function's own code is not under (besides trivia): nested definitions.
_NOT_OWN_CODE = frozenset({*TRIVIA, cst.FunctionDef, cst.ClassDef, cst.Lambda})


def backward_receiver(call: cst.Call) -> str | None:
    """The name `call` runs autograd's backward on (`loss.backward()`, keyword arguments
    at most: `layer.backward(dout)` of a hand-written network says nothing), else None."""
    func = call.func
    if (
        type(func) is cst.Attribute
        and func.attr.value == "backward"
        and type(func.value) is cst.Name
        and not any(a.keyword is None for a in call.args)
    ):
        return func.value.value
    return None


@lint_memo.memo(1024)
def backward_parameters(function: cst.FunctionDef) -> frozenset[str]:
    """The parameters `function` runs autograd's backward on in its own code (`loss.
    backward()`, keyword arguments at most; `layer.backward(dout)` of a hand-written
    network says nothing) and never rebinds: handed a value, it trains on it, so the value
    is a tensor (the step's loss)."""
    names = {param.name.value for param in parameters(function)}
    found: set[str] = set()
    for node in descendants(function.body, _NOT_OWN_CODE):
        if type(node) is cst.Call:
            trained = backward_receiver(node)  # type: ignore[arg-type]
            if trained in names:
                found.add(trained)  # type: ignore[arg-type]
    if not found:
        return frozenset()
    counts = binding_counts(function)
    return frozenset(name for name in found if not counts.get(name))


def _returned_loss(value: cst.BaseExpression | None) -> tuple[str, ...]:
    """The name a training step returns as its loss: `return loss` or `return {"loss":
    loss, ...}` (Lightning's two forms)."""
    if type(value) is cst.Name:
        return (value.value,)
    if type(value) is cst.Dict:
        for element in value.elements:
            if (
                type(element) is cst.DictElement
                and type(element.key) is cst.SimpleString
                and element.key.evaluated_value == "loss"
                and type(element.value) is cst.Name
            ):
                return (element.value.value,)
    return ()


def _scaled_names(value: cst.BaseExpression) -> tuple[str, ...]:
    """The names `value` scales by arithmetic: `loss_tensor` in `loss_tensor * n` or
    `loss_tensor / n` (the factor may be a Python number), both terms of a sum of losses
    (`a + b`), through nested operations."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _SCALING):
        if isinstance(value.operator, cst.Multiply | cst.Divide):
            return _scaled_names(value.left)
        return _scaled_names(value.left) + _scaled_names(value.right)
    return (value.value,) if isinstance(value, cst.Name) else ()


def overridden_methods(node: cst.ClassDef) -> frozenset[str]:
    """The methods a class defines that replace its bases' rather than extend them: not
    those that run the base's own (`super().__init__(...)` in `__init__`)."""
    found: set[str] = set()
    for statement in node.body.body:
        if type(statement) is not cst.FunctionDef:
            continue
        name = statement.name.value
        extends = any(
            type(call) is cst.Call
            and type(call.func) is cst.Attribute
            and call.func.attr.value == name
            and type(call.func.value) is cst.Call
            and type(call.func.value.func) is cst.Name
            and call.func.value.func.value == "super"
            for call in descendants(statement.body)
        )
        if not extends:
            found.add(name)
    return frozenset(found)


# Methods that hand back a tensor where it was: `host_arguments.SAME_PLACE`'s casts and
# copies, and the `bool()` and `half()` casts a host-built return goes through too.
_SAME_PLACE_METHODS = SAME_PLACE | {"bool", "half"}
# Methods whose numeric arguments do not keep a tensor where it is, or a tensor at all.
_NOT_SHAPING = _MODULE_MOVES | TO_HOST_METHODS | HOST_METHODS | {"type", "pin_memory"}


def _returns_none(statement: cst.Return) -> bool:
    """A bare `return` or `return None`: an early exit, no value a caller computes on."""
    value = statement.value
    return value is None or (type(value) is cst.Name and value.value == "None")


def _is_keyword(arg: cst.Arg, name: str) -> bool:
    return arg.keyword is not None and arg.keyword.value == name


_DICT_FACTORIES = frozenset(
    {"dict", "defaultdict", "OrderedDict", "Counter", "locals", "globals", "vars"}
)


def _self_attributes_in(target: cst.BaseExpression) -> list[str]:
    """`x` and `y` of the target `self.x, (self.y, z)`."""
    if isinstance(target, cst.Tuple | cst.List):
        return [a for e in target.elements for a in _self_attributes_in(e.value)]
    key = binding_key(target)
    return [key[5:]] if key is not None and key.startswith("self.") else []


def copied_to_host(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`t` of `t.cpu()` or `t.to("cpu")`: the value a host copy is made of."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and (
            (node.func.attr.value == "cpu" and not node.args)
            or (node.func.attr.value == "to" and moves_to_cpu(node))
        )
    ):
        return node.func.value
    return None


def _param_group_params(node: cst.BaseExpression) -> bool:
    """`group["params"]`: the parameters in an optimizer's param group."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.SimpleString)
        and index.value.evaluated_value == "params"
    )


# A state's default that is a Python container (`add_state("preds", default=[])`).
_CONTAINER_LITERALS = frozenset({cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp})


def _makes_dict(node: cst.BaseExpression) -> bool:
    if type(node) in (cst.Dict, cst.DictComp):
        return True
    if type(node) is cst.Call:
        name = get_full_name_for_node(node.func) or ""
        return name.rsplit(".", 1)[-1] in _DICT_FACTORIES
    return False


def _literal_index(node: cst.Subscript) -> bool:
    """`x[0]`, `x[-1]`: one element, at a position written in place."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    value = node.slice[0].slice.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, cst.Integer)


def binding_key(node: cst.BaseExpression) -> str | None:
    """`name` or `self.attr`: what a bound value is remembered by (a dict here, a loader's
    assignments in `loops`)."""
    if type(node) is cst.Name:
        return node.value
    attribute = self_attribute(node)
    return None if attribute is None else f"self.{attribute}"


_LITERALS = frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString})
_HOST_VALUES = frozenset({cst.FormattedString, cst.ConcatenatedString, cst.List, cst.Dict, cst.Set})
_CONSTANTS = frozenset({"True", "False", "None"})


def _number_parameter(function: cst.FunctionDef, node: cst.CSTNode) -> bool:
    """`node` names a parameter of `function` annotated as a Python number (`n: int`)."""
    if type(node) is not cst.Name:
        return False
    return any(
        param.name.value == node.value  # type: ignore[attr-defined]
        and param.annotation is not None
        and type(param.annotation.annotation) is cst.Name
        and param.annotation.annotation.value in _NUMBER_ANNOTATIONS
        for param in parameters(function)
    )


def _is_literal(node: cst.CSTNode) -> bool:
    node_type = type(node)
    if node_type in _LITERALS:
        return True
    if node_type is cst.UnaryOperation and type(node.operator) is cst.Minus:  # type: ignore[attr-defined]
        return _is_literal(node.expression)  # type: ignore[attr-defined]
    return node_type is cst.Name and node.value in _CONSTANTS  # type: ignore[attr-defined]


def _returns_torch_tensors(call: cst.Call) -> bool:
    """A call asked for torch tensors by Hugging Face's keyword (`return_tensors="pt"`)."""
    for arg in call.args:
        if (
            arg.keyword is not None
            and arg.keyword.value == "return_tensors"
            and type(arg.value) is cst.SimpleString
        ):
            return arg.value.evaluated_value == "pt"
    return False


def moves_to_cpu(call: cst.Call) -> bool:
    """`.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value != "device":
            continue
        value = arg.value
        if type(value) is cst.Call and value.args:
            value = value.args[0].value
        if type(value) is cst.SimpleString and value.evaluated_value == "cpu":
            return True
    return False


def _string_keyed(subscript: cst.Subscript) -> bool:
    """`batch["x"]`: a mapping's field, not a slice or an element of a tensor."""
    return any(
        isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.SimpleString)
        for element in subscript.slice
    )


def _pairs_items(call: cst.Call) -> bool:
    """`zip(a, b)`, `enumerate(xs)` bound to a name (`zipped = zip(self.param_groups,
    grouped_grads)`, then `for i, (group, grads) in enumerate(zipped)`): iterating the name
    yields what iterating the call does, each item's parts what `a`, `b` or `xs` yield."""
    func = call.func
    return (
        type(func) is cst.Name
        and func.value in ("zip", "enumerate")  # type: ignore[attr-defined]
        and all(arg.keyword is None and not arg.star for arg in call.args)
    )


def _passes_through(call: cst.Call) -> bool:
    """`tqdm(xs)`, `iter(xs)`, `islice(xs, n)`, and the builtins `list(xs)`/`tuple(xs)`:
    iterating the call yields what iterating `xs` does (chai-lab's `sigmas_and_gammas =
    list(zip(sigmas[:-1], sigmas[1:], gammas[:-1]))`: 0-dim tensors of the schedule)."""
    func = call.func
    if type(func) is cst.Name and func.value in _COPYING_ITERATORS:  # type: ignore[attr-defined]
        return True
    return (get_full_name_for_node(func) or "").rsplit(".", 1)[-1] in _PASS_THROUGH_ITERATORS


def _unpacked_beside(target: cst.BaseExpression, moved: set[str]) -> set[str]:
    """The names of `moved`, and the plain names unpacked beside one of them from the same
    tuple of a loop target (`seq` beside `im` in `i, (seq, im)`; not `i`, the other item)."""
    found: set[str] = set()
    if type(target) is cst.Name:
        return {target.value} & moved  # type: ignore[attr-defined]
    if type(target) not in (cst.Tuple, cst.List):
        return found
    elements = [e.value for e in target.elements]  # type: ignore[attr-defined]
    plain = {e.value for e in elements if type(e) is cst.Name}  # type: ignore[attr-defined]
    if plain & moved:
        found |= plain
    for element in elements:
        if type(element) in (cst.Tuple, cst.List):
            found |= _unpacked_beside(element, moved)
    return found


def _returned_parameter(function: cst.FunctionDef) -> str | None:
    """The parameter every `return` of `function` hands back by its name (one of them,
    never rebound in the body, not a generator), or None."""
    returns = [n for n in _walk_body(function, expressions=False) if type(n) is cst.Return]
    if not returns or any(type(n) is cst.Yield for n in _walk_body(function)):
        return None
    names = {r.value.value for r in returns if type(r.value) is cst.Name}  # type: ignore[union-attr]
    if len(names) != 1 or any(type(r.value) is not cst.Name for r in returns):
        return None
    (name,) = names
    if name in ("self", "cls") or name in binding_counts(function):
        return None
    if not any(p.name.value == name for p in parameters(function)):
        return None
    return name


def _a_count_at_most(call: cst.Call) -> bool:
    """`topk(k)`, `topk(k, -1)`, `topk(self.elite_num, dim=1)`: a count, perhaps a literal
    dimension after it, and keywords; not a search index's `topk(query, k)`."""
    positional = [a.value for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or not 1 <= len(positional) <= 2:
        return False
    return len(positional) == 1 or _an_integer(positional[1])


def _an_integer(node: cst.BaseExpression) -> bool:
    """`1`, `-1`: an integer literal."""
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        node = node.expression
    return type(node) is cst.Integer
