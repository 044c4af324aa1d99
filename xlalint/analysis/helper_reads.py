"""Parameters that a function of this module reads on the host (`float(p)`, `p.item()`).

A loop that hands a device tensor to a helper which turns it into a Python number pays the
read every step, as if the loop had written `float(loss)` itself: a running-sum helper
(`metric.add(loss * n, correct, n)` where `add` keeps `[a + float(b) for a, b in
zip(self.data, args)]`), a logger that `.item()`s what it is given. Whether it costs depends
on both ends: the helper reads the parameter itself (or arithmetic of parameters:
`math.sqrt(sigma_next**2 * (sigma**2 - sigma_next**2) / sigma**2)`, a device tensor where
one of them is handed one), and the caller passes a device tensor, not a Python number.

`HelperReads` records the helper's side during the engine's single walk: for each function,
the parameters it reads, and whether it reads the elements of its `*args` (a loop or a
comprehension over `args`, `zip(..., args)` or `enumerate(args)`). The calls and what they
pass are `HelperCalls`' (helper_calls.py), which also says which names are still
parameters; the two meet in XLA101 once the whole file has been walked.

Where such a read is a conversion (its result handed back or kept: `float(v)` in
`asdict_as_float`, `Accumulator.add`), the cause is the call, where the caller can stop
handing a device tensor: it is reported there even where the helper's own code knows the
parameter is a tensor, and not at the read (`slot` names what the read converts). A check
of the input (a read in the test of an `assert`, `if`, `while` or conditional expression,
`is_check`) is the helper's own, reported at the read once, whichever caller hands it, and
so are reads in a loop statement of the helper (`in_own_loop`) and in a function per
step by its own name (`forward`): `converts_handed` says which reads remain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from xlalint.analysis.helper_calls import HelperCalls
from xlalint.analysis.hotness import PER_STEP_FUNCTIONS, FunctionKey
from xlalint.analysis.tensor_members import HOST_METHODS
from xlalint.walk import descendants, last_name, target_names

# Builtins that turn a tensor into a Python number.
_CONVERSIONS = frozenset({"float", "int"})
# Arguments that are options of a method (`dim=1`, `keepdim=True`), not second tensors.
_PLAIN = (cst.Integer, cst.Float, cst.SimpleString, cst.Name, cst.UnaryOperation)
STAR = "*"  # the slot of a read of an element of `*args`
# The usual spellings of the torch module (`import torch as th`), whose functions compute
# on the device from their tensor arguments (`_sources`).
_TORCH_NAMES = frozenset({"torch", "th"})
# A function named for casting its argument to a tensor (`cast_tensor(den)` of
# torch_einops_utils, a project's `as_tensor(x)`): `torch.as_tensor`'s contract, a tensor
# handed back as it is, on its device; anything else made a tensor.
_TENSOR_CASTS = frozenset({"as_tensor", "cast_tensor", "to_tensor", "cast_to_tensor"})
# Namespaces whose functions look like methods (`th.sum(x)`): no receiver to follow.
_MODULES = frozenset({*_TORCH_NAMES, "F", "np", "numpy", "math"})
_TESTED = (cst.If, cst.While, cst.Assert, cst.IfExp)
# Methods that read a tensor's metadata, or copy it off the device (`tolist`, `numpy`): a
# chain through them leaves the tensor's data on the device.
_METADATA = HOST_METHODS | {"tolist", "numpy"}
# Methods that build a new tensor from their arguments, taking only the receiver's device
# and dtype (`value.new_tensor(factor)`): no value of the receiver's is carried.
_NEW_FROM_ARGUMENTS = frozenset({"new_tensor", "new_zeros", "new_ones", "new_full", "new_empty"})


@dataclass(frozen=True)
class HostRead:
    """A read of a parameter in a helper, and whether the helper's own code is flagged for
    it already (the parameter is a tensor there, so the read is reported where it is)."""

    call: cst.Call
    spelled: str  # `float()`, `.item()`
    flagged: bool


@dataclass
class Reader:
    """A function of this module and the reads it makes of its parameters."""

    node: cst.FunctionDef
    reads: dict[str, HostRead] = field(default_factory=dict)  # parameter -> first read
    star_read: HostRead | None = None  # a read of an element of `*args`


@dataclass
class _Scope:
    reader: Reader
    star: str | None  # the name of `*args`
    elements: set[str] = field(default_factory=set)  # names holding an element of `*args`
    # Locals computed on the device from parameters (`pred = logits < 0`), by those
    # parameters: a read of one converts what the helper was handed.
    derived: dict[str, frozenset[str]] = field(default_factory=dict)
    # Locals bound to arithmetic of parameters (`r = sigma**2 - sigma_next**2`), by those
    # parameters: a device tensor wherever one of them is handed one (`_arithmetic_sources`).
    arithmetic: dict[str, frozenset[str]] = field(default_factory=dict)


class HelperReads:
    """Functions of the module by key, and the parameters each reads on the host; which
    names are parameters is `calls`' to say (fed the same walk)."""

    def __init__(self, calls: HelperCalls) -> None:
        self.readers: dict[FunctionKey, Reader] = {}
        self._calls = calls
        self._scopes: list[_Scope] = []

    def push_function(self, node: cst.FunctionDef, key: FunctionKey | None) -> None:
        reader = Reader(node)
        if key is not None:
            self.readers.setdefault(key, reader)  # the first definition of a name wins
        star = node.params.star_arg
        self._scopes.append(
            _Scope(reader, star.name.value if isinstance(star, cst.Param) else None)
        )

    def pop_function(self) -> None:
        if self._scopes:
            self._scopes.pop()

    def bind(
        self, targets: list[cst.BaseExpression], value: cst.BaseExpression | None = None
    ) -> None:
        """`targets = value` (asked before the parameters learn of the binding): a rebound
        name no longer holds an element of `*args`, and holds what `value` is computed
        from (`_sources`)."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        sources = self._sources(value) if value is not None else frozenset()
        arithmetic = self._arithmetic_sources(value) if value is not None else frozenset()
        for target in targets:
            scope.elements -= target_names(target)
            for name in target_names(target):
                scope.derived.pop(name, None)
                scope.arithmetic.pop(name, None)
        if sources and len(targets) == 1 and isinstance(targets[0], cst.Name):
            scope.derived[targets[0].value] = sources
        if arithmetic and len(targets) == 1 and isinstance(targets[0], cst.Name):
            scope.arithmetic[targets[0].value] = arithmetic

    def _arithmetic_sources(self, value: cst.BaseExpression) -> frozenset[str]:
        """The parameters an arithmetic expression is computed from (`sigma_next**2 *
        (sigma**2 - sigma_next**2) / sigma**2`, or a local bound to one), whatever their
        kind: where a caller hands one of them a device tensor, the result is a device
        tensor too (arithmetic with numbers, names and attributes keeps it there), so a
        conversion of it (`math.sqrt(...)`, `float(...)`) reads what the call handed. Only
        operators, numbers, names and attributes: a call or a row of an unknown value may
        be anything (`float(cfg.get("lr") * 2)`), a string makes it formatting."""
        if not self._scopes:
            return frozenset()
        scope = self._scopes[-1]
        if not isinstance(value, cst.BinaryOperation | cst.UnaryOperation):
            return frozenset()
        found: set[str] = set()
        pending: list[cst.BaseExpression] = [value]
        while pending:
            node = pending.pop()
            if isinstance(node, cst.BinaryOperation):
                pending.extend((node.left, node.right))
            elif isinstance(node, cst.UnaryOperation):
                if isinstance(node.operator, cst.Not):
                    return frozenset()
                pending.append(node.expression)
            elif isinstance(node, cst.Name):
                param = self._calls.param(node)
                if param is not None:
                    found.add(param)
                else:
                    found |= scope.arithmetic.get(node.value, frozenset())
            elif not isinstance(node, cst.Integer | cst.Float | cst.Attribute):
                return frozenset()
        return frozenset(found)

    def _sources(self, value: cst.BaseExpression) -> frozenset[str]:
        """The parameters a value is computed from on the device: the parameter (or a local
        computed from one) through its own methods and rows, arithmetic and comparisons
        of such values and numbers, and `torch.*` functions of them (`th.mean(pred ==
        labels)`); empty for anything else (a call of another function, an attribute)."""
        root = computed_root(value)
        if isinstance(root, cst.Name):
            param = self._calls.param(root)
            if param is not None:
                return frozenset({param})
            return self._scopes[-1].derived.get(root.value, frozenset())
        parts: list[cst.BaseExpression]
        if isinstance(root, cst.BinaryOperation):
            parts = [root.left, root.right]
        elif isinstance(root, cst.Comparison):
            parts = [root.left, *(c.comparator for c in root.comparisons)]
        elif isinstance(root, cst.UnaryOperation):
            parts = [root.expression]
        elif (
            isinstance(root, cst.Call)
            and isinstance(root.func, cst.Attribute)
            and isinstance(root.func.value, cst.Name)
            and root.func.value.value in _TORCH_NAMES
            and not _python_valued(root.func.attr.value)
        ):
            parts = [arg.value for arg in root.args if arg.keyword is None and not arg.star]
        elif _casts_to_a_tensor(root):
            # `den = cast_tensor(den)`, then `assert (den >= 0).all()`: the value handed.
            parts = [root.args[0].value]  # type: ignore[attr-defined]
        else:
            return frozenset()
        found: set[str] = set()
        for part in parts:
            if isinstance(part, cst.Integer | cst.Float):
                continue
            sources = self._sources(part)
            if not sources:
                return frozenset()
            found |= sources
        return frozenset(found)

    def device_sources(self, test: cst.BaseExpression) -> frozenset[str]:
        """The parameters whose device value a truth test of `test` reads (or an argument
        `test` hands on carries), in the function
        being walked: a comparison (not `is`/`in`, nor with a string or `None`), arithmetic,
        `abs()` or a negation any operand of which is computed from a parameter on the
        device (`_sources`), or such a value itself (`if d2_square >= 0:` with `d2_square =
        d1**2 - g1 * g2` of parameters; `if abs(gtd_new) <= -c2 * gtd:` with `gtd` one).
        A test of a helper's input: where a caller hands that parameter a device tensor,
        the test reads it on the host (XLA103, reported at the test)."""
        if not self._scopes:
            return frozenset()
        found: set[str] = set()
        pending: list[cst.BaseExpression] = [test]
        while pending:
            node = pending.pop()
            if isinstance(node, cst.Comparison):
                if any(type(c.operator) in _IDENTITY_TESTS for c in node.comparisons):
                    return frozenset()
                operands = [node.left, *(c.comparator for c in node.comparisons)]
                if any(_not_a_tensor(o) for o in operands):
                    return frozenset()  # `mode == "train"`, `x == None`
                pending.extend(operands)
            elif isinstance(node, cst.BinaryOperation):
                pending.extend((node.left, node.right))
            elif isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
                pending.append(node.expression)
            elif (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Name)
                and node.func.value == "abs"
                and len(node.args) == 1
            ):
                pending.append(node.args[0].value)
            elif not _host_valued(node):
                found |= self._sources(node)
        return frozenset(found)

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for b in args`, `for a, b in zip(xs, args)`, `for i, b in enumerate(args)`: the
        names that hold an element of `*args`."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        scope.elements -= target_names(target)
        if scope.star is not None:
            scope.elements |= _element_names(target, iterable, scope.star)

    def note_read(self, call: cst.Call, flagged: bool, tensor: bool = False) -> None:
        """`float(p)`, `int(p)`, `p.item()` in the function being walked; `flagged` when the
        read is reported where it is, `tensor` when it reads a device tensor."""
        if not self._scopes:
            return
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args:
            value, spelled = func.value, ".item()"
        elif (
            isinstance(func, cst.Name)
            and func.value in _CONVERSIONS
            and len(call.args) == 1
            and call.args[0].keyword is None
            and not call.args[0].star
        ):
            value, spelled = call.args[0].value, f"{func.value}()"
        else:
            return
        self.note_value_read(call, value, spelled, flagged, tensor)

    def slot(self, value: cst.BaseExpression) -> str | None:
        """What a read of `value` in the function being walked converts: the parameter it
        is (not rebound) or is computed from by the tensor's own methods and rows
        (`batch_loss.detach().mean()`, `finished.sum()`), `STAR` for an element of
        `*args`, else None."""
        if not self._scopes:
            return None
        sources = self._sources(value)
        if sources:
            return min(sources)
        value = computed_root(value)
        if isinstance(value, cst.Name) and value.value in self._scopes[-1].elements:
            return STAR
        return None

    def note_value_read(
        self,
        call: cst.Call,
        value: cst.BaseExpression,
        spelled: str,
        flagged: bool,
        tensor: bool = False,
    ) -> None:
        """`call` reads `value` on the host (`torch.tensor([p])` reads each element).
        `tensor`: the read is known to be of a device tensor here, so a value computed from
        a parameter by its methods counts as that parameter (`int(x.size(0))`, of a value
        of unknown kind, does not)."""
        if not self._scopes:
            return
        scope = self._scopes[-1]
        read = HostRead(call, spelled, flagged)
        if tensor and (sources := self._sources(value)):
            for source in sorted(sources):
                scope.reader.reads.setdefault(source, read)
            return
        if sources := self._arithmetic_sources(value):
            # `sqrt(sigma_next**2 * (sigma**2 - sigma_next**2) / sigma**2)` of parameters
            # of unknown kind: a read of each, wherever a call hands it a device tensor.
            for source in sorted(sources):
                scope.reader.reads.setdefault(source, read)
            return
        if not isinstance(value, cst.Name):
            return
        param = self._calls.param(value)
        if param is not None:
            scope.reader.reads.setdefault(param, read)
        elif value.value in scope.elements and scope.reader.star_read is None:
            scope.reader.star_read = read


def _casts_to_a_tensor(node: cst.BaseExpression) -> bool:
    """`cast_tensor(den)`, `utils.as_tensor(x)`: a call of a function named for casting
    its one argument to a tensor (`_TENSOR_CASTS`), given no device to move it to."""
    if type(node) is not cst.Call:
        return False
    args = node.args  # type: ignore[attr-defined]
    return (
        last_name(node.func) in _TENSOR_CASTS  # type: ignore[attr-defined]
        and bool(args)
        and args[0].keyword is None
        and not args[0].star
        and all(arg.keyword is not None for arg in args[1:])
        and not any(arg.keyword is not None and arg.keyword.value == "device" for arg in args)
    )


# Comparisons whose result is a Python bool whatever the operands hold.
_IDENTITY_TESTS = (cst.Is, cst.IsNot, cst.In, cst.NotIn)


def _not_a_tensor(operand: cst.BaseExpression) -> bool:
    """A string or `None`: compared with it, a value is no tensor being tested."""
    return isinstance(operand, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString) or (
        isinstance(operand, cst.Name) and operand.value == "None"
    )


def _host_valued(node: cst.BaseExpression) -> bool:
    """A value read from a parameter that is no tensor computation: an entry of a mapping
    under a string key (`inputs["predict_mode"]`), or a torch predicate of a value
    (`torch.is_tensor(value)`, `torch.is_floating_point(target)`: a Python bool)."""
    for part in (node, computed_root(node)):
        if isinstance(part, cst.Subscript) and any(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString)
            for e in part.slice
        ):
            return True
        if (
            isinstance(part, cst.Call)
            and isinstance(part.func, cst.Attribute)
            and part.func.attr.value.startswith("is_")
        ):
            return True
    return False


def _python_valued(function: str) -> bool:
    """A torch function that answers about its argument with a Python value, not a tensor
    computed on the device: a predicate (`torch.is_tensor(wav)`, `torch.is_floating_point`)
    or a count (`torch.numel`)."""
    return function.startswith("is_") or function == "numel"


def _element_names(target: cst.BaseExpression, iterable: cst.BaseExpression, star: str) -> set[str]:
    """Names of a loop target that take the elements of `star` (`*args`)."""
    if isinstance(iterable, cst.Name):
        return target_names(target) if iterable.value == star else set()
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
        return set()
    args = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
    elements = target.elements if isinstance(target, cst.Tuple | cst.List) else None
    if iterable.func.value == "zip" and elements is not None and len(elements) == len(args):
        found: set[str] = set()
        for element, arg in zip(elements, args, strict=True):
            found |= _element_names(element.value, arg, star)
        return found
    if iterable.func.value == "enumerate" and elements is not None and len(elements) == 2:
        return _element_names(elements[1].value, args[0], star) if args else set()
    return set()


def computed_root(value: cst.BaseExpression) -> cst.BaseExpression:
    """The value a chain of the tensor's own methods and rows starts from (`batch_loss` of
    `batch_loss.detach().mean()`, `x` of `x[0].sum()`); not through its metadata
    (`x.size(0)`, `x.shape[0]` are Python ints), nor through a method handed arguments
    that are values of their own (`a.add(b)`), nor through a new tensor built from its
    arguments (`x.new_tensor(f)`)."""
    while True:
        if isinstance(value, cst.Subscript):
            value = value.value
        elif (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and not (isinstance(value.func.value, cst.Name) and value.func.value.value in _MODULES)
            and value.func.attr.value not in _METADATA
            and value.func.attr.value not in _NEW_FROM_ARGUMENTS
            and all(_plain(arg.value) for arg in value.args)
        ):
            value = value.func.value
        else:
            return value


def _plain(value: cst.BaseExpression) -> bool:
    """A literal or a name (`dim=1`, `keepdim=True`): an option, not a second tensor."""
    return isinstance(value, _PLAIN)


def converts_handed(
    function: FunctionKey,
    read: cst.CSTNode,
    ancestors: Iterable[cst.CSTNode],
    loops: Iterable[cst.CSTNode],
    hook: bool = False,
) -> bool:
    """Whether a read of a parameter in `function` converts what the helper is handed,
    the cause of the per-step calls that hand it a device tensor (XLA101's and XLA102's
    findings at the call): not in a function per step by its own name (`forward`) or by
    what it is (`hook`: a method a framework calls every step, a detection head's
    `loss_by_feat`, which its own `loss` also calls), not a
    check of the input (`is_check`), not in a loop statement of the helper
    (`in_own_loop`). Those reads are reported where they are."""
    ancestors = tuple(ancestors)
    return (
        not hook
        and not PER_STEP_FUNCTIONS.match(function.name)
        and not is_check(read, ancestors)
        and not in_own_loop(loops)
        and not sizes_own_tensor(read, ancestors)
    )


# Calls whose arguments are sizes or bounds: the tensor (or the loop) the helper makes, or
# the pieces it splits a tensor into (`x[mask].split(lens.tolist())`: the sizes of its own
# pieces, not a copy of what it is handed).
_SIZED = frozenset(
    {"arange", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "linspace",
     "new_zeros", "new_ones", "new_empty", "new_full", "range", "split", "split_with_sizes",
     "tensor_split"}
)  # fmt: skip
# Expressions a read passes through on its way to a size (`(int(n.item() + 1), dim)`, a
# method of the copy: `counts.cpu().tolist()`).
_ARITHMETIC = (cst.BinaryOperation, cst.UnaryOperation, cst.Arg, cst.Call, cst.Element, cst.Tuple,
               cst.List, cst.Attribute)  # fmt: skip


def sizes_own_tensor(read: cst.CSTNode, ancestors: Iterable[cst.CSTNode]) -> bool:
    """Whether `read` (with its ancestors, innermost first) becomes a size or bound of a
    tensor the helper builds itself, or of its own loop: `max_len = seq_len.max().item()`,
    then `torch.arange(max_len, device=...)`; `torch.zeros(int(n.item()) + 1)`; also
    through names bound from it (`size = (b, max_len)`, then `output_size=size`); the sizes
    it splits a tensor into, `real_seq[mask].split(prompt_len.tolist())`; a position it
    slices or indexes a tensor at, `stm = stop_token_indices.min().item()`, then
    `codes[stm:] = 83`. The read
    serves the helper's own computation, as a check does, not a conversion of what it is
    handed: it is reported where it is."""
    child = read
    function: cst.FunctionDef | None = None
    name: str | None = None
    for ancestor in ancestors:
        if (
            type(ancestor) is cst.Call
            and child is not ancestor.func
            and any(arg is child for arg in _size_arguments(ancestor))
        ):
            return True
        if type(ancestor) in (cst.Slice, cst.Index, cst.SubscriptElement):
            return True  # `x[: int(n.item())]`: a position of the helper's own indexing
        if type(ancestor) is cst.Assign and name is None and function is None:
            targets = ancestor.targets
            if len(targets) == 1 and type(targets[0].target) is cst.Name:
                name = targets[0].target.value
        if type(ancestor) is cst.FunctionDef:
            function = ancestor
            break
        if (
            name is None
            and type(ancestor) is not cst.Assign
            and not isinstance(ancestor, _ARITHMETIC)
        ):
            return False
        child = ancestor
    if function is None or name is None:
        return False
    nodes = list(descendants(function.body))
    # The read's name and the names bound from it (`size = (b, max_len)`), to a fixpoint.
    names = {name}
    grown = True
    while grown:
        grown = False
        for node in nodes:
            if type(node) is cst.Assign and len(node.targets) == 1:
                target = node.targets[0].target
                if (
                    type(target) is cst.Name
                    and target.value not in names
                    and any(
                        type(n) is cst.Name and n.value in names for n in descendants(node.value)
                    )
                ):
                    names.add(target.value)
                    grown = True
    for node in nodes:
        if type(node) is cst.Call:
            for arg in _size_arguments(node):
                if any(type(n) is cst.Name and n.value in names for n in descendants(arg.value)):
                    return True
        elif type(node) is cst.Subscript:
            # A position is the read itself (`codes[stm:]`), not every name bound from it:
            # rows of a host copy (`x = boxes[:, 0]`, then `x[x < 1]`) are data.
            for element in node.slice:
                if any(type(n) is cst.Name and n.value == name for n in descendants(element)):
                    return True
    return False


def _size_arguments(call: cst.Call) -> list[cst.Arg]:
    """The arguments of `call` that are sizes or bounds: all of a factory's or a range's
    (`torch.zeros(n, d)`, `range(n)`) or a shaping method's (`x.view(b, n)`,
    `x.reshape(...)`, `x.expand(...)`), and a size handed by keyword to any call
    (`torch.nested.to_padded_tensor(ids, padding=0, output_size=(b, max_len))`,
    `F.interpolate(x, size=(h, w))`)."""
    func = call.func
    last = func.attr.value if type(func) is cst.Attribute else getattr(func, "value", None)
    if last in _SIZED or (type(func) is cst.Attribute and last in _SHAPING):
        return list(call.args)
    return [
        arg for arg in call.args if arg.keyword is not None and arg.keyword.value in _SIZE_KEYWORDS
    ]


# Tensor methods whose arguments are all sizes of the tensor they hand back.
_SHAPING = frozenset({"view", "reshape", "expand"})
# Keywords that hand a call a size of what it builds.
_SIZE_KEYWORDS = frozenset({"size", "shape", "output_size"})


def in_own_loop(loops: Iterable[cst.CSTNode]) -> bool:
    """Whether a read sits in a `for`/`while` statement of the helper (`for i in
    range(batch): int(lens[i].item())`): its reads per row are the helper's own work, judged
    where they are, not a conversion of what it is handed (a comprehension over `*args`, as
    in `Accumulator.add`, is)."""
    return any(isinstance(loop, cst.For | cst.While) for loop in loops)


def is_check(read: cst.CSTNode, ancestors: Iterable[cst.CSTNode]) -> bool:
    """Whether `read` (with its ancestors, innermost first) is in the test of an `assert`,
    `if`, `while` or conditional expression: a check of the value, not a conversion."""
    child = read
    for ancestor in ancestors:
        if isinstance(ancestor, _TESTED) and child is ancestor.test:
            return True
        if isinstance(ancestor, cst.BaseSuite | cst.FunctionDef | cst.Lambda):
            return False
        child = ancestor
    return False
