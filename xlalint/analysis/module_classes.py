"""Which classes of a file are `torch.nn` modules.

Calling an instance of a module class runs its `forward` (tensors in, tensors out), its
`__call__` is called per step, and `self(x)` in its methods runs the model. Hot code, kinds
and loop facts all ask the same question of a class, so it is answered here once.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.imports import ImportTable
from xlalint.walk import descendants

# `torch.nn.Module`, `torch.nn.Linear`, `torch.nn.modules.Conv2d`: torch's module classes;
# also the wrappers that are modules around a model (`torch.nn.parallel.
# DistributedDataParallel`, `torch.distributed.fsdp.FullyShardedDataParallel`): calling
# one runs the wrapped model's `forward`.
# The tensor classes of `torch.nn` (`nn.Parameter`, `nn.Buffer`) are no modules.
NN_MODULE_CLASS = re.compile(
    r"^torch\.(nn\.(modules\.|parallel\.(\w+\.)?)?"
    r"(?!(Uninitialized)?(Parameter|Buffer)$)[A-Z]\w*"
    r"|distributed\.fsdp\.(\w+\.)?FullyShardedDataParallel)$"
)
# `nn.Parameter(torch.tensor(lamb))`, `nn.Buffer(...)`: a tensor a module owns, moved with
# it by `model.to(device)` whatever its data was built from, so a device tensor where the
# model runs on the device.
NN_TENSOR_CLASS = re.compile(r"^torch\.nn\.(parameter\.)?(Uninitialized)?(Parameter|Buffer)$")
# Bases named as modules or models by the libraries that derive them from `nn.Module`
# (`LightningModule`, `PreTrainedModel`, diffusers' `ModelMixin`).
_MODULE_BASE_NAME = re.compile(r"(Module|Model|ModelMixin)$")


def base_names(node: cst.ClassDef) -> list[str]:
    """The last names of a class's bases: `nn.Module` -> `Module`."""
    return [(get_full_name_for_node(base.value) or "").rsplit(".", 1)[-1] for base in node.bases]


def is_module_class(node: cst.ClassDef, imports: ImportTable, local: Collection[str] = ()) -> bool:
    """A class whose instances are modules: a subclass of any `torch.nn` module class
    (`class Head(nn.Linear)`), of a class named as a module or model (unless it is a
    record of declared fields, `_record_class`), or of a module class of this file
    (`local`, defined above it); or a class that defines `forward`."""
    for base, name in zip(node.bases, base_names(node), strict=True):
        value = base.value
        qualified = imports.resolve(value)
        if qualified is not None and NN_MODULE_CLASS.match(qualified):
            return True
        if isinstance(value, cst.Name) and value.value in local:
            return True
        if _MODULE_BASE_NAME.search(name) and not _record_class(node):
            return True
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    if any(isinstance(s, cst.FunctionDef) and s.name.value == "forward" for s in body):
        return True
    return _builds_own_layers(node, imports)


# Bases that say nothing of a class's instances: a layer kept by a subclass of these is an
# attribute of a plain object (a trainer holding its model), not a submodule.
_PLAIN_BASES = frozenset({"object", "ABC", "Generic", "Protocol", "Enum", "Exception"})
# torch.nn classes a plain object holds as well as a module does: losses, wrappers around
# a whole model, containers.
_HELD_BY_OBJECTS = re.compile(r"(Loss|DataParallel|Module|ModuleList|ModuleDict|Sequential)$")


@lint_memo.memo(64)
def _builds_own_layers(node: cst.ClassDef, imports: ImportTable) -> bool:
    """A subclass of a class this file cannot see (`class NRTRDecoder(BaseDecoder)`, the
    base imported from another module) whose `__init__` makes torch.nn layers of its own
    (`self.classifier = nn.Linear(d, n)`, `self.emb = nn.Embedding(...)`): a model part
    whose base comes from elsewhere. Losses, model wrappers and containers do not count
    (a trainer keeps `self.criterion = nn.CrossEntropyLoss()`)."""
    if not any(name and name not in _PLAIN_BASES for name in base_names(node)):
        return False
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for statement in body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__"):
            continue
        for assign in descendants(statement.body):
            if type(assign) is not cst.Assign or type(assign.value) is not cst.Call:
                continue
            if not any(
                type(t.target) is cst.Attribute
                and type(t.target.value) is cst.Name
                and t.target.value.value == "self"
                for t in assign.targets
            ):
                continue
            qualified = imports.resolve(assign.value.func) or ""
            if NN_TENSOR_CLASS.match(qualified) or (
                NN_MODULE_CLASS.match(qualified) and not _HELD_BY_OBJECTS.search(qualified)
            ):
                return True  # layers, or parameters of its own
    return False


def _record_class(node: cst.ClassDef) -> bool:
    """A class that declares its fields in its body (`lr: float = 1e-3`) and defines no
    `__init__` or `forward`: a record of values (pydantic's `BaseModel`, SQLModel), however
    its base is named. A module makes its parts in `__init__` (`PreTrainedModel`'s
    subclasses take a config there)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    fields = False
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in (
            "__init__",
            "forward",
        ):
            return False
        if isinstance(statement, cst.SimpleStatementLine):
            fields = fields or any(isinstance(s, cst.AnnAssign) for s in statement.body)
    return fields


# `torch.nn` modules that hold no parameter and no buffer: activations, softmax, pooling,
# dropout, reshaping, padding, and the losses and distances with no weight. `.cuda()` of
# one moves nothing and initialises no CUDA (measured on an XLA host without CUDA:
# `nn.LogSoftmax(dim=1).cuda()` returns, `nn.Linear(2, 2).cuda()` raises).
_STATELESS_MODULES = re.compile(
    r"(ReLU6?|LeakyReLU|RReLU|ELU|CELU|SELU|GELU|SiLU|Mish|GLU|Sigmoid|LogSigmoid|Hardsigmoid"
    r"|Hardswish|Hardtanh|Hardshrink|Softshrink|Tanhshrink|Tanh|Softsign|Softplus|Threshold"
    r"|Softmax2d|Softmax|Softmin|LogSoftmax"
    r"|(Adaptive)?(Max|Avg)Pool[123]d|LPPool[12]d|MaxUnpool[123]d"
    r"|Dropout[123]?d?|AlphaDropout|FeatureAlphaDropout"
    r"|Identity|Flatten|Unflatten|Upsample(Nearest2d|Bilinear2d)?|PixelShuffle|PixelUnshuffle"
    r"|ChannelShuffle|Fold|Unfold|(Zero|Constant|Reflection|Replication|Circular)Pad[123]d"
    r"|MSELoss|L1Loss|SmoothL1Loss|HuberLoss|KLDivLoss|PoissonNLLLoss|GaussianNLLLoss"
    r"|CosineEmbeddingLoss|MarginRankingLoss|HingeEmbeddingLoss|SoftMarginLoss"
    r"|TripletMarginLoss|TripletMarginWithDistanceLoss|CTCLoss"
    r"|CosineSimilarity|PairwiseDistance)"
)
# Losses that register their `weight` (and `pos_weight`) as buffers: stateless only when
# built without one.
_WEIGHTED_LOSSES = re.compile(
    r"(CrossEntropyLoss|NLLLoss|BCELoss|BCEWithLogitsLoss|MultiLabelSoftMarginLoss"
    r"|MultiMarginLoss|MultiLabelMarginLoss)"
)
_WEIGHTS = frozenset({"weight", "pos_weight"})


def builds_stateless_module(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether `node` builds a `torch.nn` module that holds no parameter or buffer
    (`nn.LogSoftmax(dim=1)`, `nn.Dropout(0.1)`, `nn.CrossEntropyLoss()` without a
    `weight`): moving it (`.cuda()`) moves nothing."""
    if type(node) is not cst.Call:
        return False
    name = imports.resolve(node.func) or ""
    prefix, _, last = name.rpartition(".")
    if prefix not in ("torch.nn", "torch.nn.modules"):
        return False
    if _STATELESS_MODULES.fullmatch(last):
        return True
    if not _WEIGHTED_LOSSES.fullmatch(last):
        return False
    # `nn.CrossEntropyLoss(w)`: the first positional argument is the weight.
    return not any(a.star or a.keyword is None or a.keyword.value in _WEIGHTS for a in node.args)
