"""Code that only runs on CUDA (or other non-XLA) machines, and the conditions known on the
way to a node.

`if torch.cuda.is_available(): model.cuda()` is not a porting problem: on an XLA host the
branch is never taken. Device rules ask whether a node sits under such a guard.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import parameter
from xlalint.analysis.imports import ImportTable
from xlalint.walk import EXPRESSIONS, TRIVIA, code_children, descendants, node_types, target_names

_CUDA_PROBES = frozenset(
    {"torch.cuda.is_available", "torch.cuda.device_count", "torch.accelerator.is_available"}
)
_CUDA_WORDS = frozenset({"cuda", "nccl"})
# `use_accel`, `args.no_accel`: flags for torch.accelerator, which is never XLA.
_ACCEL_FLAG = re.compile(r"(?:^|_)accel(?:$|_)", re.IGNORECASE)


def mentions_cuda(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether a condition asks about CUDA: `torch.cuda.is_available()`, `args.cuda`,
    `use_cuda`, `device.type == "cuda"`, `dist.get_backend() == "nccl"` or
    `self.backend == dist.Backend.NCCL` (NCCL runs on CUDA devices only: a process group
    that is NCCL exists only on a CUDA host); or about torch's current accelerator
    (`torch.accelerator.is_available()`, `use_accel`), which is never XLA: measured with
    torch_xla 2.9 imported, `torch.accelerator.is_available()` is False on an XLA host."""
    return any(True for _ in cuda_mentions(test, imports))


def cuda_mentions(test: cst.BaseExpression, imports: ImportTable) -> Iterator[cst.CSTNode]:
    """The parts of a condition that ask about CUDA (`mentions_cuda`): probes, `"cuda"`
    and `"nccl"` strings, names and attributes named for CUDA, `Backend.NCCL`."""
    for node in descendants(test):
        kind = type(node)
        if kind is cst.Call:
            if imports.resolve(node.func) in _CUDA_PROBES:  # type: ignore[attr-defined]
                yield node
        elif kind is cst.SimpleString:
            value = node.evaluated_value  # type: ignore[attr-defined]
            if isinstance(value, str) and (value in _CUDA_WORDS or value.startswith("cuda:")):
                yield node
        elif kind is cst.Name or kind is cst.Attribute:
            last = (get_full_name_for_node(node) or "").rsplit(".", 1)[-1]
            if "cuda" in last.lower() or last == "NCCL" or _ACCEL_FLAG.search(last):
                yield node


def names_nccl(node: cst.CSTNode) -> bool:
    """`"nccl"` or `dist.Backend.NCCL`: the collective backend, not a device."""
    if type(node) is cst.SimpleString:
        return node.evaluated_value == "nccl"  # type: ignore[attr-defined]
    if type(node) is cst.Attribute:
        return node.attr.value == "NCCL"  # type: ignore[attr-defined]
    return type(node) is cst.Name and node.value == "NCCL"  # type: ignore[attr-defined]


def asks_about_backend_only(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """A condition whose every question about CUDA is whether the process group is NCCL
    (`self.backend == dist.Backend.NCCL`, `dist.get_backend() == "nccl"`): it asks what the
    collectives need (NCCL takes CUDA tensors), which on an XLA host is never NCCL; it
    chooses no device of its own, so a device picked under it (`torch.device("cuda") if
    self.backend == dist.Backend.NCCL else self._default_device`) is no device ladder: an
    XLA run takes the other branch."""
    mentions = list(cuda_mentions(test, imports))
    return bool(mentions) and all(names_nccl(m) for m in mentions)


# The process group backends of `torch.distributed` that a program may assert it has
# (`dist.Backend.GLOO` spelled as a constant too).
_COLLECTIVE_BACKENDS = frozenset({"gloo", "nccl", "mpi", "ucc"})


def _backend_names(node: cst.BaseExpression) -> frozenset[str] | None:
    """`{"gloo"}` for `"gloo"` or `dist.Backend.GLOO`; every name of a literal list, tuple
    or set of such; None for anything else."""
    if type(node) is cst.SimpleString:
        value = node.evaluated_value  # type: ignore[attr-defined]
        return frozenset({value}) if value in _COLLECTIVE_BACKENDS else None
    if type(node) is cst.Attribute:
        value = node.attr.value.lower()  # type: ignore[attr-defined]
        owner = get_full_name_for_node(node.value) or ""  # type: ignore[attr-defined]
        return (
            frozenset({value})
            if owner.endswith("Backend") and value in _COLLECTIVE_BACKENDS
            else None
        )
    if type(node) in (cst.List, cst.Tuple, cst.Set):
        names: set[str] = set()
        for element in node.elements:  # type: ignore[attr-defined]
            found = _backend_names(element.value)
            if found is None:
                return None
            names |= found
        return frozenset(names) or None
    return None


def _backend_question(test: cst.BaseExpression) -> tuple[str, cst.BaseOperator] | None:
    """`("backend", ==)` for `backend == "gloo"` (either side, `!=`, `in`, `not in` a
    literal list of backend names): which name it asks about, and how."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    for subject, names in ((test.left, comparison.comparator), (comparison.comparator, test.left)):
        if type(subject) in (cst.Name, cst.Attribute) and _backend_names(names) is not None:
            name = get_full_name_for_node(subject)
            if name is not None:
                return name, comparison.operator
    return None


def follows_asserted_backend(test: cst.BaseExpression, path: Iterable[cst.CSTNode]) -> bool:
    """Whether every question of `test` is which process group backend a name holds
    (`backend == "gloo"`), where a condition known on `path` (a node and its ancestors,
    innermost first) already keeps that name to named backends none of which is XLA's
    (`assert backend in ["gloo", "nccl"]`, or the code after `if backend not in (...):
    raise`): detectron2's `torch.device("cpu" if backend == "gloo" else "cuda")` gives the
    collectives what their backend needs (NCCL, on CUDA hosts only, takes CUDA tensors),
    and an XLA run's process group never reaches it."""
    questions = [_backend_question(c) for c in conjuncts(test)]
    if not questions or any(q is None for q in questions):
        return False
    subjects = {q[0] for q in questions if q is not None}
    kept: set[str] = set()
    for condition, holds in path_conditions(path):
        question = _backend_question(condition)
        if question is None:
            continue
        name, operator = question
        if (type(operator) is cst.In and holds) or (type(operator) is cst.NotIn and not holds):
            kept.add(name)
    return subjects <= kept


# Accelerators other than CUDA and XLA, as a word or a camel-case part (`DeviceMPS`,
# `is_hpu_installed`, `"mps"`, `torch.backends.mps`), not inside another word.
_OTHER_ACCELERATOR = re.compile(
    r"MPS|HPU|NPU|XPU|Mps|Hpu|Npu|Xpu|(?<![a-z])(?:mps|hpu|npu|xpu)(?![a-z])"
)


def mentions_other_accelerator(test: cst.BaseExpression) -> bool:
    """Whether a condition asks about an accelerator that is neither CUDA nor XLA (Apple's
    MPS, Intel's HPU/XPU, Ascend's NPU): `device.type == "mps"`,
    `isinstance(device, DeviceMPS)`, `torch.backends.mps.is_available()`."""
    for node in descendants(test):
        kind = type(node)
        if kind is cst.SimpleString:
            value = node.evaluated_value  # type: ignore[attr-defined]
            if isinstance(value, str) and _OTHER_ACCELERATOR.fullmatch(value.split(":")[0]):
                return True
        elif kind is cst.Name or kind is cst.Attribute:
            name = get_full_name_for_node(node) or ""
            if _OTHER_ACCELERATOR.search(name):
                return True
    return False


def requires_other_accelerator(path: Iterable[cst.CSTNode]) -> bool:
    """Whether the code on `path` runs only where a test for another accelerator passed:
    under `if device.type == "mps":` or `if isinstance(self.device, DeviceHPU):`."""
    return any(
        implied(test, holds, mentions_other_accelerator) is True
        for test, holds in path_conditions(path)
    )


# Deep-learning frameworks other than PyTorch, by the names a multi-backend library gives
# its backends (`backend_name == "paddle"`, `"tensorflow.compat.v1"`, `"jax"`).
_OTHER_FRAMEWORKS = frozenset(
    {"tensorflow", "jax", "paddle", "paddlepaddle", "mxnet", "oneflow", "mindspore"}
)
# What a library calls the name that holds its framework: `backend_name`, `dde.backend`,
# `config.framework` (not a device or a distributed backend: their strings are no
# framework's name).
_FRAMEWORK_SETTING = re.compile(r"backend|framework", re.I)


def _names_other_frameworks(node: cst.BaseExpression) -> bool:
    """`"paddle"`, `"tensorflow.compat.v1"`, or a tuple, list or set of such names."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and value.split(".")[0].lower() in _OTHER_FRAMEWORKS
    if isinstance(node, cst.Tuple | cst.List | cst.Set):
        return bool(node.elements) and all(
            _names_other_frameworks(element.value) for element in node.elements
        )
    return False


def mentions_other_framework(test: cst.BaseExpression) -> bool:
    """Whether a condition asks if the running framework is another one than PyTorch, as a
    library written for several backends does (deepxde's `if backend_name == "paddle":`,
    `backend in ("tensorflow", "jax")`): code where it holds runs on that framework, never
    on an XLA device through PyTorch."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal | cst.NotEqual | cst.In | cst.NotIn):
        return False
    for setting, value in ((test.left, comparison.comparator), (comparison.comparator, test.left)):
        name = (
            get_full_name_for_node(setting)
            if isinstance(setting, cst.Name | cst.Attribute)
            else None
        )
        if (
            name is not None
            and _FRAMEWORK_SETTING.search(name.rsplit(".", 1)[-1])
            and _names_other_frameworks(value)
        ):
            return True
    return False


def requires_other_framework(path: Iterable[cst.CSTNode]) -> bool:
    """Whether the code on `path` runs only where a test for another framework passed:
    under `elif backend_name == "paddle":`."""
    return any(
        implied(test, holds, mentions_other_framework) is True
        for test, holds in path_conditions(path)
    )


def path_conditions(path: Iterable[cst.CSTNode]) -> Iterator[tuple[cst.BaseExpression, bool]]:
    """Conditions known where the code on `path` runs (a node and its ancestors, innermost
    first), within its function, as `(test, holds)`: true for an `if` or a ternary whose
    body holds it, or the left side of an `and` whose right side holds it
    (`torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 9)`); false
    for an `else`/`elif`, the left side of an `or`, or an earlier `if` whose body returns or
    raises (`if not torch.cuda.is_available(): return False`); true for an earlier `assert`
    of the block (`assert device.type == "cuda"`: what follows runs only where it held);
    `count > 0` in the body of a loop over `range(count)` of a count of GPUs (`for i in
    range(torch.cuda.device_count()):`, `[... for i in range(args.n_gpu)]`): a pass runs
    only where there is a GPU to count, and on an XLA host the count is 0."""
    for child, parent in itertools.pairwise(path):
        if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return
        if type(parent) in (cst.If, cst.IfExp) and child is not parent.test:
            yield parent.test, child is parent.body
        elif type(parent) is cst.For and child is parent.body:
            count = _range_count(parent.iter)
            if count is not None:
                yield _positive(count), True
        elif type(parent) in _COMPREHENSIONS and child is not parent.for_in:
            comp_for: cst.CompFor | None = parent.for_in
            while comp_for is not None:
                count = _range_count(comp_for.iter)
                if count is not None:
                    yield _positive(count), True
                comp_for = comp_for.inner_for_in
        elif type(parent) is cst.BooleanOperation and child is parent.right:
            yield parent.left, type(parent.operator) is cst.And
        elif type(parent) in (cst.IndentedBlock, cst.Module):
            for statement in parent.body:
                if statement is child:
                    break
                if type(statement) is cst.If and ends_in(statement.body, _LEAVES):
                    yield statement.test, False
                elif isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if type(small) is cst.Assert:
                            yield small.test, True  # past `assert dev.type == "cuda"`


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def _range_count(iterable: cst.BaseExpression) -> cst.BaseExpression | None:
    """`count` for `range(count)` or `range(0, count)` where `count` reads as a count of
    GPUs (`torch.cuda.device_count()`, `ngpu`, `args.n_gpu`), else None."""
    if type(iterable) is not cst.Call or get_full_name_for_node(iterable.func) != "range":
        return None
    args = iterable.args
    if any(a.keyword is not None or a.star for a in args):
        return None
    if len(args) == 2 and type(args[0].value) is cst.Integer and args[0].value.value == "0":
        args = args[1:]
    if len(args) != 1:
        return None
    count = args[0].value
    callee = count.func if type(count) is cst.Call else count
    name = (get_full_name_for_node(callee) or "").rsplit(".", 1)[-1]
    return count if name == "device_count" or _names_gpu_count(name) else None


def _positive(count: cst.BaseExpression) -> cst.Comparison:
    """`count > 0`: what a pass of a loop over `range(count)` knows."""
    return cst.Comparison(
        left=count,
        comparisons=[cst.ComparisonTarget(operator=cst.GreaterThan(), comparator=cst.Integer("0"))],
    )


# How a guard leaves its function when its test holds.
_LEAVES = (cst.Return, cst.Raise)


def ends_in(block: cst.BaseSuite, kinds: tuple[type[cst.BaseSmallStatement], ...]) -> bool:
    """Whether the last statement of `block` (an indented block, or the statements on an
    `if`'s own line) is one of `kinds`: `return`, `raise`, `continue`..."""
    last: cst.CSTNode | None = block.body[-1] if block.body else None
    if type(last) is cst.SimpleStatementLine:
        last = last.body[-1] if last.body else None  # type: ignore[union-attr]
    return type(last) in _exactly(kinds)


def _exactly(kinds: tuple[type[cst.CSTNode], ...]) -> frozenset[type[cst.CSTNode]]:
    """`kinds` and their subclasses, for an exact type test (no ABCMeta check per miss);
    kept per tuple of node types (types, not nodes: no tree is held)."""
    found = _EXACT.get(kinds)
    if found is None:
        found = _EXACT[kinds] = node_types(*kinds)
    return found


_EXACT: dict[tuple[type[cst.CSTNode], ...], frozenset[type[cst.CSTNode]]] = {}


def negated(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` for `not x`, else None."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return test.expression
    return None


_NEGATIVE_COMPARISONS = (cst.NotEqual, cst.IsNot, cst.NotIn)
_FALSY = frozenset({"False", "None"})


def falsy_constant(node: cst.BaseExpression) -> bool | None:
    """True for `False`, `None` and `0`, False for `True` and other int literals, None for
    anything else."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value in _FALSY
    if isinstance(node, cst.Integer):
        return node.evaluated_value == 0
    return None


# A count of GPUs (`ngpu`, `args.n_gpu`, `num_gpus`, `gpu_count`,
# `config.total_visible_gpus`): the number of CUDA devices a program was told to use or
# found (`torch.cuda.device_count()`), 0 on a host without them. By its words: one that
# counts (`n`, `num`, `total`, ...) and `gpu`/`gpus` last or before another that counts;
# not a count of something else on a GPU (`n_gpu_layers`).
_GPU_COUNT_WORD = re.compile(r"^(?:n|num)gpus?$|^gpus?(?:count|num)$")
_GPU_WORDS = frozenset({"gpu", "gpus"})
_COUNT_WORDS = frozenset({"n", "nb", "num", "number", "count", "cnt", "total"})
_COUNT_CALLS = frozenset({"torch.cuda.device_count"})


def _names_gpu_count(name: str) -> bool:
    """Whether a name reads as a count of GPUs, by its `_`-separated words: one that spells
    it alone (`ngpu`, `numgpus`, `gpucount`), or `gpu`/`gpus` last or followed by
    a counting word, with a counting word elsewhere (`n_gpu`, `num_gpus`, `gpu_count`,
    `total_visible_gpus`). The word lists stand in for reading what the value holds, which
    the file does not show (a config field, a command-line flag): they are the spellings
    training scripts use for the count they test against 0 (`if args.n_gpu > 0:`), and a
    count of something else kept on a GPU (`n_gpu_layers`: `layers` follows `gpu`) is
    left out."""
    words = [word for word in name.lower().split("_") if word]
    if any(_GPU_COUNT_WORD.match(word) for word in words):
        return True
    for at, word in enumerate(words):
        if word in _GPU_WORDS and (at + 1 == len(words) or words[at + 1] in _COUNT_WORDS):
            return any(w in _COUNT_WORDS for i, w in enumerate(words) if i != at)
    return False


def counts_gpus(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether `node` is a count of CUDA devices: `torch.cuda.device_count()`, or a name or
    attribute named for one (`ngpu`, `distributed_option.ngpu`, `args.n_gpu`)."""
    if isinstance(node, cst.Call):
        return imports.resolve(node.func) in _COUNT_CALLS
    if isinstance(node, cst.Name | cst.Attribute):
        last = (get_full_name_for_node(node) or "").rsplit(".", 1)[-1]
        return _names_gpu_count(last)
    return False


def _names_device(node: cst.BaseExpression) -> bool:
    """`device`, `x.device`, `orig_device`, `self.device`: a name or attribute whose last
    part is named for a device."""
    return (get_full_name_for_node(node) or "").rsplit(".", 1)[-1].endswith("device")


def _device_text(node: cst.BaseExpression) -> bool:
    """What a placement test compares with "cuda": a device's type (`x.device.type`) or
    its text (`str(x.device)`, `str(orig_device)` after `orig_device = logits.device`)."""
    if type(node) is cst.Attribute:
        return node.attr.value == "type" and _names_device(node.value)
    return (
        type(node) is cst.Call
        and type(node.func) is cst.Name
        and node.func.value == "str"
        and len(node.args) == 1
        and node.args[0].star == ""
        and _names_device(node.args[0].value)
    )


def asks_placement(test: cst.BaseExpression) -> bool:
    """Whether a condition asks if a value lives on CUDA: `p.is_cuda`, `x.device.type ==
    "cuda"`, a value's device against a CUDA device (`attr.device != torch.device("cuda")`:
    a tensor's `.device`, never CUDA on an XLA host), or the device's text holding "cuda"
    (`'cuda' not in str(orig_device)`,
    `"cuda" in str(x.device)`: an XLA device's text is `xla:0`, so such a test fails
    there, and its `not in` branch is what an XLA host runs); not a flag, a probe or a
    comparison with None."""
    if type(test) is cst.Attribute:
        return test.attr.value == "is_cuda"
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    sides = (test.left, comparison.comparator)
    if isinstance(comparison.operator, cst.In | cst.NotIn):
        # `"cuda" in str(device)`: the word inside the device's text.
        return (
            type(test.left) is cst.SimpleString
            and test.left.evaluated_value == "cuda"
            and _device_text(comparison.comparator)
        )
    if any(type(side) is cst.SimpleString and side.evaluated_value == "cuda" for side in sides):
        return any(_device_text(side) for side in sides)
    # `attr.device != torch.device("cuda")`: where a value lives, against a CUDA device.
    return any(_cuda_device(side) for side in sides) and any(
        type(side) is cst.Attribute and side.attr.value == "device" for side in sides
    )


def _cuda_device(node: cst.BaseExpression) -> bool:
    """`torch.device("cuda")`, `torch.device("cuda:0")`, `torch.device("cuda", 0)`: a CUDA
    device built from its literal type."""
    if type(node) is not cst.Call or not node.args:
        return False
    if (get_full_name_for_node(node.func) or "").rsplit(".", 1)[-1] != "device":
        return False
    first = node.args[0].value
    if type(first) is not cst.SimpleString:
        return False
    value = first.evaluated_value
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))


# Accelerators a value may be found on, other than XLA (and the CPU, where an XLA host
# keeps its host tensors).
_HELD_ACCELERATORS = frozenset({"cuda", "mps", "npu", "xpu", "hpu"})


def asks_held_accelerator(test: cst.BaseExpression) -> bool:
    """Whether a condition asks if a value the program holds lives on an accelerator other
    than XLA: a placement test for CUDA (`asks_placement`), or a device's type compared
    with another accelerator's (`expected_device.type == "npu"`, `torch.device(d).type
    == "xpu"`). An XLA host's values are never there."""
    if asks_placement(test):
        return True
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal | cst.NotEqual):
        return False
    sides = (test.left, comparison.comparator)
    return any(
        type(side) is cst.SimpleString and side.evaluated_value in _HELD_ACCELERATORS
        for side in sides
    ) and any(_device_text(side) for side in sides)


def asks_about_cuda(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """`mentions_cuda`, or a comparison of a count of GPUs (`if ngpu == 1:`)."""
    if mentions_cuda(test, imports):
        return True
    if isinstance(test, cst.Comparison):
        return counts_gpus(test.left, imports)
    return counts_gpus(test, imports)


_NOT_A_COUNT = object()
_COMPARE: dict[type, Callable[[int, int], bool]] = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
}


def _count_implies(test: cst.BaseExpression, holds: bool) -> object:
    """For `count OP n` with a literal `n` (a count of GPUs): True when the outcome needs a
    GPU (`ngpu == 1`, `device_count() > 0`), False when it needs none (`ngpu == 0`, a
    false `ngpu > 0`), None when either fits (`ngpu < 2`); `_NOT_A_COUNT` for other tests."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return _NOT_A_COUNT
    target = test.comparisons[0]
    compare = _COMPARE.get(type(target.operator))
    if compare is None or not isinstance(target.comparator, cst.Integer):
        return _NOT_A_COUNT
    left = test.left
    callee = left.func if isinstance(left, cst.Call) else left
    name = (get_full_name_for_node(callee) or "").rsplit(".", 1)[-1]
    if not (name == "device_count" or _names_gpu_count(name)):
        return _NOT_A_COUNT
    bound = int(target.comparator.evaluated_value)
    none = compare(0, bound) == holds
    some = any(compare(n, bound) == holds for n in range(1, max(bound, 0) + 3))
    if some and not none:
        return True
    if none and not some:
        return False
    return None


def implied(
    test: cst.BaseExpression,
    holds: bool,
    asks: Callable[[cst.BaseExpression], bool],
    values: Callable[[str], list[cst.BaseExpression]] | None = None,
) -> bool | None:
    """What `test` being `holds` says of the thing `asks` recognises in a plain condition
    (CUDA, XLA): True (in use), False (not), or None (nothing). `not`, `!=` and `not in`
    turn it around; both sides of a true `and` or a false `or` count, and neither side of
    the other two: `if args.cuda and not torch.cuda.is_available(): raise` says nothing of
    CUDA once passed. With `values` (what a local name is assigned), a flag is read through
    its assignments: `use_ids = initialized and backend == "nccl"` ... `if use_ids:`
    implies CUDA when every assignment does."""
    inner = negated(test)
    if inner is not None:
        return implied(inner, not holds, asks, values)
    if type(test) is cst.BooleanOperation:
        if isinstance(test.operator, cst.And) != holds:
            return None  # one side decided it, and which one is not known
        left = implied(test.left, holds, asks, values)
        return left if left is not None else implied(test.right, holds, asks, values)
    if values is not None and isinstance(test, cst.Name) and not asks(test):
        # A value that cannot make the test hold (`non_blocking = False` when it holds)
        # says nothing of when it does.
        assigned = [v for v in values(test.value) if falsy_constant(v) is not holds]
        answers = {implied(value, holds, asks) for value in assigned}
        return answers.pop() if len(answers) == 1 else None
    if not asks(test):
        return None
    count = _count_implies(test, holds)
    if count is not _NOT_A_COUNT:
        return count
    if isinstance(test, cst.Comparison) and any(
        isinstance(c.operator, _NEGATIVE_COMPARISONS) for c in test.comparisons
    ):
        return not holds  # `device.type != "cuda"`
    return holds


def favours_cuda(test: cst.BaseExpression, holds: bool, imports: ImportTable) -> bool:
    """Whether some question about CUDA in `test` leads to its branch where the test is
    `holds`: CUDA in use helps take it (`use_cuda or args.force`, the body of `if
    torch.cuda.is_available():`). Not where every such question only leads away from it,
    as the body of `(not args.gloo or not torch.cuda.is_available()) and not args.cpu`:
    there a host without CUDA takes the branch wherever a CUDA host does, and the test
    keeps nothing off XLA. A question whose answer is not known either way (`ngpu < 2`)
    counts as leading there."""
    inner = negated(test)
    if inner is not None:
        return favours_cuda(inner, not holds, imports)
    if type(test) is cst.BooleanOperation:
        return favours_cuda(test.left, holds, imports) or favours_cuda(test.right, holds, imports)
    if not asks_about_cuda(test, imports):
        return False
    return implied(test, holds, lambda t: asks_about_cuda(t, imports)) is not False


def requires_cuda(path: Iterable[cst.CSTNode], imports: ImportTable) -> bool:
    """Whether the code on `path` runs only where a CUDA test passed: under `if use_cuda:`,
    or after `if not torch.cuda.is_available(): return False`. A check that leaves on some
    other failure (`if args.cuda and not torch.cuda.is_available(): raise`) does not count.
    A local flag counts by what it is assigned (`use_ids = backend == "nccl"`); a
    parameter that is on by default (`def build(name, cuda=True)`) does not count."""
    nodes = list(path)
    function = next((n for n in nodes if isinstance(n, cst.FunctionDef)), None)
    values = (lambda name: local_values(function, name)) if function is not None else None

    def asks(test: cst.BaseExpression) -> bool:
        return asks_about_cuda(test, imports) and not on_by_default(test, function)

    return any(implied(test, holds, asks, values) is True for test, holds in path_conditions(nodes))


# A flag named for using the GPU (`use_gpu`, `on_gpu`, `with_gpus`, `useGPU`): not a count
# (`n_gpu`), an index (`gpu`, `gpu_id`) or a setting of something kept on a GPU.
_GPU_USE_FLAG = re.compile(r"^(?:use|using|on|with|enable|is)_?gpus?$", re.IGNORECASE)


def gpu_use_parameter(test: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """Whether `test` is a parameter of `function` named for using the GPU (`use_gpu`,
    `on_gpu`), handed in without a default or off by default, that the function never
    rebinds: the callers' CUDA switch (vissl's `distributed_sinkhornknopp(..., use_gpu)`,
    handed `self.use_gpu = get_cuda_device_index() > -1`), as a `use_cuda` parameter is.
    On an XLA host there is no GPU to use, so its callers pass False, and a `.cuda()` it
    guards runs only on CUDA hosts (XLA301 asks; a host tensor the branch would have
    moved still reaches the device math after it there, so the per-step rules do not).
    Not a flag on by default (`use_gpu=True`: the defaults take
    the branch, `on_by_default`), nor an attribute set from configuration (`self.on_gpu =
    not cfg.cpu`: judged by its value)."""
    if type(test) is not cst.Name or function is None:
        return False
    if not _GPU_USE_FLAG.match(test.value):  # type: ignore[attr-defined]
        return False
    param = parameter(function, test.value)  # type: ignore[attr-defined]
    if param is None or param.star:
        return False
    if param.default is not None and falsy_constant(param.default) is not True:
        return False
    return test.value not in _assigned_values(function)  # type: ignore[attr-defined]


def on_by_default(test: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """Whether `test` is a flag parameter of `function` with a true default that the
    function never rebinds (`def create_feature_extractor(name, cuda=True)`, `use_gpu=1`):
    the caller's switch, on unless turned off, which no CUDA probe sets. With the defaults
    an XLA host takes the branch it guards (`if cuda: model.cuda()` raises there), so it
    keeps nothing off XLA; a flag set from a probe (`use_cuda = torch.cuda.is_available()`)
    or handed in without a default is judged as before. So is a comparison of such a
    parameter with its own default (`distributed_backend == "nccl"` in `def
    __init__(..., distributed_backend: str = "nccl")`): the defaults decide it, and an XLA
    host with the defaults takes what it guards."""
    if function is not None and type(test) is cst.Comparison:
        return _compares_with_default(test, function)
    if type(test) is not cst.Name or function is None:
        return False
    param = parameter(function, test.value)  # type: ignore[attr-defined]
    if param is None or param.default is None or falsy_constant(param.default) is not False:
        return False
    return test.value not in _assigned_values(function)  # type: ignore[attr-defined]


def _literal(node: cst.BaseExpression) -> str | None:
    """A string literal's value, or a dotted constant's name (`dist.Backend.NCCL`)."""
    if type(node) is cst.SimpleString:
        value = node.evaluated_value  # type: ignore[attr-defined]
        return f"'{value}'" if isinstance(value, str) else None
    if type(node) is cst.Attribute:
        return get_full_name_for_node(node)
    return None


def _compares_with_default(test: cst.Comparison, function: cst.FunctionDef) -> bool:
    """`name == <literal>` (or `!=`) where `name` is a parameter of `function` whose default
    is that literal and which the function never rebinds."""
    if len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal | cst.NotEqual):
        return False
    for side, other in ((test.left, target.comparator), (target.comparator, test.left)):
        if type(side) is not cst.Name:
            continue
        param = parameter(function, side.value)
        if param is None or param.default is None:
            continue
        literal = _literal(other)
        if literal is not None and literal == _literal(param.default):
            return side.value not in _assigned_values(function)
    return False


def mentions_host_device(test: cst.BaseExpression) -> bool:
    """A test of a device's type against the CPU: `points.device.type == "cpu"`,
    `device.type != "cpu"`."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal | cst.NotEqual | cst.Is | cst.IsNot):
        return False
    sides = (test.left, comparison.comparator)
    return any(
        isinstance(side, cst.SimpleString) and side.evaluated_value == "cpu" for side in sides
    ) and any(
        isinstance(side, cst.Attribute)
        and side.attr.value == "type"
        and (get_full_name_for_node(side.value) or "").rsplit(".", 1)[-1].endswith("device")
        for side in sides
    )


def requires_host_device(path: Iterable[cst.CSTNode]) -> bool:
    """Whether the code on `path` runs only where a device was found to be the CPU: under
    `if x.device.type == "cpu":`, or under a local flag every assignment of which that can
    make it true says so (`use_direct = ... and points.device.type == "cpu" and ...`; its
    refinements, `use_direct = use_direct and ...` and assignments under `if
    use_direct:`, only keep it true where it was). Its tensors are host tensors there."""
    nodes = list(path)
    function = next((n for n in nodes if isinstance(n, cst.FunctionDef)), None)
    if function is None:
        return False

    def values(name: str) -> list[cst.BaseExpression]:
        refined = _refinements(function, name)
        return [v for v in local_values(function, name) if id(v) not in refined]

    return any(
        implied(test, holds, mentions_host_device, values) is True
        for test, holds in path_conditions(nodes)
    )


def conjuncts(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The operands of a chain of `and`s (`a and b and c`); the test itself otherwise."""
    if type(test) is cst.BooleanOperation and isinstance(test.operator, cst.And):
        yield from conjuncts(test.left)
        yield from conjuncts(test.right)
    else:
        yield test


def _requires_name(test: cst.BaseExpression, name: str) -> bool:
    return any(type(c) is cst.Name and c.value == name for c in conjuncts(test))


def _refinements(function: cst.FunctionDef, name: str) -> set[int]:
    """Ids of the values of assignments to `name` that can hold only where `name` already
    held: `name = name and ...`, and assignments in the body of `if name:`."""
    found: set[int] = set()
    stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]
    while stack:
        node, under = stack.pop()
        kind = type(node)
        if kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if kind is cst.Assign and any(
            type(t.target) is cst.Name and t.target.value == name
            for t in node.targets  # type: ignore[attr-defined]
        ):
            if under or _requires_name(node.value, name):  # type: ignore[attr-defined]
                found.add(id(node.value))  # type: ignore[attr-defined]
            continue
        if kind is cst.If and _requires_name(node.test, name):  # type: ignore[attr-defined]
            stack.append((node.body, True))  # type: ignore[attr-defined]
            if node.orelse is not None:  # type: ignore[attr-defined]
                stack.append((node.orelse, under))  # type: ignore[attr-defined]
            continue
        stack.extend((child, under) for child in code_children(node))
    return found


def unpacked_value(
    targets: list[cst.BaseExpression], value: cst.BaseExpression, name: str
) -> cst.BaseExpression | None:
    """What `name, other = value, other_value` gives `name`: the matching element of a
    tuple written out; None for any other unpacking."""
    if len(targets) != 1 or not isinstance(targets[0], cst.Tuple | cst.List):
        return None
    if not isinstance(value, cst.Tuple | cst.List):
        return None
    names, values = targets[0].elements, value.elements
    if len(names) != len(values) or any(
        isinstance(e, cst.StarredElement) for e in (*names, *values)
    ):
        return None
    for target, element in zip(names, values, strict=True):
        if isinstance(target.value, cst.Name) and target.value.value == name:
            return element.value
    return None


def local_values(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """Every value a plain `name = ...` in `function` (not in nested definitions) assigns;
    empty where the name is bound any other way too (a parameter, a loop target, `+=`)."""
    if parameter(function, name) is not None:
        return []
    return list(_assigned_values(function).get(name) or ())


def possible_values(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """The values `name` may hold somewhere in `function`: its parameter's default and
    every value a plain `name = ...` assigns (a parameter reassigned on one path,
    `num_classes = -1` under `if num_classes is None:`), where `local_values` answers
    nothing for a parameter. Values bound any other way are not listed."""
    found: list[cst.BaseExpression] = []
    param = parameter(function, name)
    if param is not None and param.default is not None:
        found.append(param.default)
    found += _assigned_values(function).get(name) or ()
    return found


def module_values(module: cst.Module, name: str) -> list[cst.BaseExpression]:
    """Every value a module-level `name = ...` assigns (`META_BATCH_SIZE = 1`, also in a
    module-level `if` or `try`); empty where the name is bound any other way too (an
    import, a loop, `+=`, unpacking of something other than a written-out tuple), or
    rebound through `global` in a function."""
    values = module_assignments(module).get(name) or ()
    return [] if any(value is None for value in values) else list(values)  # type: ignore[misc]


# Walks for statements (assignments, loops, imports, `global`) need not enter expressions:
# no statement sits in one (a lambda's body is an expression too).
_STATEMENTS_ONLY = TRIVIA | EXPRESSIONS


@lint_memo.memo(8)
def module_assignments(module: cst.Module) -> dict[str, list[cst.BaseExpression | None]]:
    """For each name the module binds at its level, the values its assignments give it
    (None for a binding of another kind: an import, a loop, `+=`, a `global` in a
    function)."""
    found: dict[str, list[cst.BaseExpression | None]] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            continue
        for node in descendants(statement, _STATEMENTS_ONLY):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    for bound in target_names(target.target):
                        value = (
                            node.value
                            if type(target.target) is cst.Name
                            else unpacked_value([target.target], node.value, bound)
                        )
                        found.setdefault(bound, []).append(value)
            elif isinstance(node, cst.AnnAssign | cst.AugAssign | cst.For):
                value = node.value if isinstance(node, cst.AnnAssign) else None
                for bound in target_names(node.target):
                    found.setdefault(bound, []).append(value)
            elif isinstance(node, cst.Import | cst.ImportFrom):
                for alias in node.names if isinstance(node.names, list | tuple) else ():
                    imported = alias.evaluated_alias or alias.evaluated_name
                    found.setdefault(imported.split(".")[0], []).append(None)
    for node in descendants(module, _STATEMENTS_ONLY):
        if type(node) is cst.Global:
            for item in node.names:  # type: ignore[attr-defined]
                found.setdefault(item.name.value, []).append(None)
    return found


# Interval, flag and guard questions ask about many names of the same few functions (every
# `if` of a hot loop); one walk per function answers them all. Nodes hash by identity.
@lint_memo.memo(64)
def _assigned_values(
    function: cst.FunctionDef,
) -> dict[str, list[cst.BaseExpression] | None]:
    """For each name bound in `function`'s body, the values its plain assignments give it,
    in order, or None once it is bound any other way (the walk `local_values` answers
    from)."""
    values: dict[str, list[cst.BaseExpression] | None] = {}
    for node in descendants(function.body):
        if type(node) is cst.Assign:
            targets = [t.target for t in node.targets]
            bound: set[str] = set()
            for t in targets:
                bound |= target_names(t)
            for name in bound:
                if values.get(name, ()) is None:
                    continue
                if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                    value = node.value if len(targets) == 1 else None
                else:
                    value = unpacked_value(targets, node.value, name)
                if value is None:
                    values[name] = None
                else:
                    values.setdefault(name, []).append(value)  # type: ignore[union-attr]
        elif type(node) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            for name in target_names(node.target):
                values[name] = None
    return values
