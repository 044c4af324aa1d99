"""Is this index a boolean mask, and does it cover a tensor element for element?

`x[mask]` with a boolean mask has as many rows as the mask has `True`s, so XLA cannot know
its shape when it traces the step: it runs `nonzero` on the CPU and compiles a graph per
count. `x[idx]` with integer indices has a static shape and is cheap. The two look alike in
the source, so the rules of family 2 ask this module which indexes are masks.

The answer comes with its `Evidence`: `VALUE` when the expression makes booleans from
tensors (a comparison with a tensor, `isnan`, `&`/`|`/`~` of such masks, `.bool()`,
`dtype=torch.bool`, or a name, or a dict's entry under a literal key, bound to one of
those in the same function); `LIKELY` when it
compares values of unknown kind (`labels != -100`) or inverts/combines masks known by
name; `NAME` when only the spelling says so (`mask`, `padding_mask`, `dones`); `NONE`
otherwise. A name bound to anything else (a list, a `LongTensor`, `topk` indices) is not a
mask whatever it is called, and a name does not inherit another name's spelling. Rules take
weak evidence only when the indexed value is known to be a tensor.

Fixes need more: `torch.where(mask, x, 0)` equals `x[mask]` reduced only if the mask has
exactly `x`'s shape. `elementwise_base` answers that: the one tensor a mask is computed from
element for element (`x > 0`, `torch.isnan(x) | (x < lo)`), through names whose base has not
been rebound since (versions) and within the same loop iteration.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import parameters
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.members import member_values_in
from xlalint.analysis.tensors import Kind, TensorKinds, array_dtype
from xlalint.walk import EXPRESSIONS, children, descendants


class Evidence(enum.IntEnum):
    """How sure we are that an expression holds booleans."""

    NONE = 0
    NAME = 1  # only its spelling: `mask`, `padding_mask`, `self.keep_masks`
    # computed like booleans from values of unknown kind (`labels != -100` with `labels`
    # unknown), or by `~`/`&` from masks known by name: a mask if it indexes a tensor
    LIKELY = 2
    VALUE = 3  # computed as booleans from tensors, here or where the name was bound


# Names that read as boolean masks. `mask_*` names (`mask_ratio`, `mask_token_id`) do not.
# A batch of episode-end flags (`dones`, `terminals`, `terminated`) is one too: indexing a
# tensor with it (`next_q[dones] = 0.0`) only works for booleans (or integer indices,
# which such names do not hold); a float `dones` is multiplied, never an index.
MASK_NAME = re.compile(
    r"^((\w+_)?masks?|(\w+_)?(dones|terminals|terminated|truncated))$", re.IGNORECASE
)

# The special tokens a Hugging Face tokenizer names as strings (`SPECIAL_TOKENS_ATTRIBUTES`:
# `tokenizer.eos_token` is "</s>"; the integers are the `*_token_id` attributes).
_TOKEN_STRINGS = frozenset(
    {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}
)


def is_string(node: cst.BaseExpression) -> bool:
    """A string: a literal (plain, concatenated or formatted), or a special token of an
    object named as a tokenizer (`tokenizer.eos_token`, `self.tokenizer.pad_token`,
    `processor.tokenizer.sep_token`), a string by the tokenizers' convention (its id is
    `eos_token_id`)."""
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString):
        return True
    if type(node) is not cst.Attribute or node.attr.value not in _TOKEN_STRINGS:
        return False
    owner = node.value
    name = owner.attr.value if type(owner) is cst.Attribute else getattr(owner, "value", None)
    return isinstance(name, str) and "tokenizer" in name.lower()


_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual,
                cst.Equal, cst.NotEqual)  # fmt: skip
_LOGICAL_BINARY = (cst.BitAnd, cst.BitOr, cst.BitXor)
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo,
               cst.Power)  # fmt: skip

# torch functions and tensor methods whose result is boolean, by their last name part.
_BOOLEAN_OPS = frozenset(
    {
        "eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
        "not_equal", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "isclose",
        "isin", "signbit", "logical_and", "logical_or", "logical_not", "logical_xor", "any",
        "all", "bool",
    }
)  # fmt: skip
# Those that keep the shape (not the reductions `any`, `all`).
_ELEMENTWISE_BOOLEAN = _BOOLEAN_OPS - {"any", "all"}
# Boolean ops with one operand, elementwise: the mask has the operand's shape.
_UNARY_BOOLEAN = frozenset(
    {"isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "signbit", "logical_not",
     "bool"}
)  # fmt: skip
# Boolean ops with two operands, elementwise (the result broadcasts them).
_BINARY_BOOLEAN = frozenset(
    {"eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
     "not_equal", "logical_and", "logical_or", "logical_xor"}
)  # fmt: skip
# Tensor methods that keep the dtype (and so keep a mask a mask).
_DTYPE_KEEPING_METHODS = frozenset(
    {
        "to", "cuda", "cpu", "detach", "clone", "contiguous", "view", "reshape", "flatten",
        "squeeze", "unsqueeze", "expand", "expand_as", "repeat", "permute", "transpose", "t",
        "flip", "roll", "tril", "triu", "narrow", "unflatten", "view_as", "reshape_as",
        "movedim", "logical_not_", "logical_and_", "logical_or_", "requires_grad_",
        "scatter", "scatter_", "masked_fill", "masked_fill_", "index_fill", "index_fill_",
    }
)  # fmt: skip
_DTYPE_KEEPING_FUNCTIONS = frozenset(
    {"tril", "triu", "flip", "roll", "reshape", "flatten", "squeeze", "unsqueeze",
     "transpose", "permute", "broadcast_to", "movedim"}
)  # fmt: skip
# torch functions that join tensors (`torch.stack((left, up, right))`): masks joined are a
# mask. And factories shaped and typed like their argument (`torch.ones_like(left)`): a
# mask's is a mask (unless given a `dtype=`).
_JOINING_FUNCTIONS = frozenset({"stack", "cat", "concat", "concatenate", "vstack", "hstack"})
_LIKE_FACTORIES = frozenset({"ones_like", "zeros_like", "empty_like", "full_like"})
# Tensor methods that split a tensor into parts of its dtype, unpacked into names.
_SPLITTING_METHODS = frozenset({"unbind", "chunk", "split", "tensor_split"})
# Elementwise tensor methods without arguments: same shape as the receiver.
_ELEMENTWISE_METHODS = frozenset(
    {
        "abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "square", "sigmoid", "tanh",
        "relu", "sign", "floor", "ceil", "round", "trunc", "frac", "float", "double", "half",
        "bfloat16", "long", "int", "short", "detach", "clone", "contiguous", "reciprocal",
    }
)  # fmt: skip
_ELEMENTWISE_FUNCTIONS = frozenset(
    {"abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "square", "sigmoid", "tanh",
     "sign", "floor", "ceil", "round", "trunc", "frac", "reciprocal"}
)  # fmt: skip
# Tensor methods that, called without arguments, reduce to a 0-d tensor.
ZERO_DIM_REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "norm", "nansum",
     "nanmean"}
)  # fmt: skip
# Attributes of `torch.finfo(...)`/`torch.iinfo(...)`: Python numbers.
_INFO_ATTRIBUTES = frozenset({"min", "max", "eps", "tiny", "smallest_normal", "resolution"})
# Python's types that torch takes as dtypes (`dtype=bool` is `torch.bool`).
_PYTHON_DTYPES = frozenset({"bool", "int", "float", "complex"})
# numpy functions that build an array from data (not from sizes: `np.zeros(n)`).
_NUMPY_ARRAYS = frozenset({"numpy.array", "numpy.asarray", "numpy.asanyarray"})
_MATH_CONSTANTS = frozenset(
    {"math.inf", "math.nan", "math.pi", "math.e", "math.tau", "numpy.inf", "numpy.nan",
     "numpy.pi", "numpy.e"}
)  # fmt: skip


class _Scalar:
    """Marks a Python number (or a 0-d tensor): it broadcasts to any shape."""


SCALAR = _Scalar()


@dataclass(frozen=True)
class _Binding:
    evidence: Evidence
    # The tensor the bound mask is computed from element for element, with the versions of
    # that name (and its prefixes) when the mask was bound, and the loop it was bound in.
    base: str | None = None
    versions: tuple[tuple[str, int], ...] = ()
    loop: cst.CSTNode | None = None
    # A comparison of values of unknown kind (`mask = probs >= thresh`): the names it
    # compares, each with its version when the mask was bound (`mask_of_itself`).
    compared: tuple[tuple[str, int], ...] = ()
    # A comparison method called on a name (`sign.gt(0)`): that name, with its version
    # when the mask was bound (`tested_by_method`).
    tested: tuple[str, int] | None = None
    # Bound to a numpy array built from data (`np.array(flags)`): a host array, of booleans
    # where it and its complement both index (`_split_by_complement`).
    array: bool = False
    # `NAME` evidence carried from a mask's name to a row or a move of it (`sample_keep =
    # keep_mask[i]`, `keep = sample_keep.to(device)`): kept whatever the new name says.
    carried: bool = False


class BooleanMasks:
    """Mask evidence of expressions, with one table of bound names per function frame.

    `stack` is the walk's ancestor stack (shared with FileContext), used only to tell which
    loop a binding and a use sit in.
    """

    def __init__(self, imports: ImportTable, kinds: TensorKinds, stack: Sequence[cst.CSTNode]):
        self.imports = imports
        self.kinds = kinds
        self._stack = stack
        # False where the file's text never spells `register_buffer` (set by the context,
        # which has the text): no class of it registers a buffer (`_registered` need not walk
        # each one).
        self.may_register = True
        self._frames: list[dict[str, _Binding]] = [{}]
        self._versions: list[dict[str, int]] = [{}]
        # Per function frame: the bindings of mask names seen indexing a device tensor
        # (`grads[sel]`), by identity (a rebinding makes a new one): `note_index`.
        self._indexing: list[dict[int, _Binding]] = [{}]

    # -- frames and bindings (called by FileContext during the walk) ----------------------
    def push_function(self, node: cst.FunctionDef) -> None:
        frame: dict[str, _Binding] = {}
        for param in parameters(node):
            if param.annotation is None:
                continue
            dtype = array_dtype(_required(param.annotation.annotation))
            if dtype is not None:
                # `face_mask: Bool['b nf']`, `x: Float[Tensor, "b n"]`: the dtype is declared.
                frame[param.name.value] = _Binding(
                    Evidence.VALUE if dtype == "Bool" else Evidence.NONE
                )
                continue
            names = _names_in(param.annotation.annotation)
            if not names:
                continue  # a string annotation: let the name speak
            if "BoolTensor" in names:
                frame[param.name.value] = _Binding(Evidence.VALUE)
            elif "Tensor" not in names and "TensorType" not in names:
                # `mask: list[bool]`, `attention_mask: torch.LongTensor`: not a bool tensor.
                frame[param.name.value] = _Binding(Evidence.NONE)
        self._frames.append(frame)
        self._versions.append({})
        self._indexing.append({})

    def pop_function(self) -> None:
        self._frames.pop()
        self._versions.pop()
        self._indexing.pop()

    def note_index(self, node: cst.Subscript) -> None:
        """`grads[sel]` with `grads` a device tensor and `sel` a name bound to a value
        computed like booleans (`sel = (info["radii"] > 0.0).all(dim=-1)`): that binding
        of `sel` is a device mask from here on (`_indexes_tensors`). Called by the context
        on every subscript it enters, whichever of XLA201-203 run."""
        frame = self._frames[-1]
        for element in node.slice:
            index = element.slice
            if type(index) is not cst.Index or type(index.value) is not cst.Name:
                continue
            binding = frame.get(index.value.value)
            if (
                binding is not None
                and binding.evidence >= Evidence.LIKELY
                and id(binding) not in self._indexing[-1]
                and self.kinds.of(node.value) is Kind.TENSOR
            ):
                self._indexing[-1][id(binding)] = binding

    def _indexes_tensors(self, mask: cst.BaseExpression) -> bool:
        """`mask` is a name whose current binding has indexed a device tensor in this
        function (`note_index`): a device boolean tensor, which indexes only tensors (a
        list takes no tensor index, and a numpy array would copy it to the host)."""
        if type(mask) is not cst.Name:
            return False
        binding = self._frames[-1].get(mask.value)
        return binding is not None and id(binding) in self._indexing[-1]

    def bind_assignment(
        self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression
    ) -> None:
        """`targets = value`; call before the kinds of the targets are rebound."""
        if len(targets) == 1 and type(targets[0]) in (cst.Tuple, cst.List):
            elements = targets[0].elements
            if isinstance(value, cst.Tuple) and len(value.elements) == len(elements):
                pairs = [(e.value, v.value) for e, v in zip(elements, value.elements, strict=True)]
                bindings = [(t, self._binding(v)) for t, v in pairs]
                for target, binding in bindings:
                    self._bind(target, binding)
                return
            rows = value
            if (
                type(value) is cst.Call
                and type(value.func) is cst.Attribute
                and value.func.attr.value in _SPLITTING_METHODS
            ):
                rows = value.func.value  # `ok_x, ok_y = torch.isfinite(xy).unbind(-1)`
            if self.evidence(rows) is Evidence.VALUE and all(
                type(e) is cst.Element for e in elements
            ):
                # `left, up = ((xy % 1 < thr) & (xy > 1)).T`: the rows (or parts) of a
                # boolean tensor are boolean tensors (of another shape: no base for a fix).
                for element in elements:
                    self._bind(element.value, _Binding(Evidence.VALUE))
                return
        binding = self._binding(value)
        for target in targets:
            self._bind(target, binding)
            if type(value) is cst.Dict:
                self._bind_entries(target, value)

    def _bind_entries(self, target: cst.BaseExpression, value: cst.Dict) -> None:
        """`params = {"keep": x > 0, ...}`: each entry under a literal string key is bound
        as `params["keep"] = x > 0` would be (a dict of masks read back by key)."""
        container = dotted(target)
        if container is None:
            return
        for element in value.elements:
            if type(element) is not cst.DictElement:
                continue
            key = _literal_key(element.key)
            if key is not None:
                self._bind_entry(f"{container}[{key!r}]", self._binding(element.value))

    def _bind_entry(self, key: str, binding: _Binding | None) -> None:
        if binding is None or binding.evidence is Evidence.NAME:
            binding = _Binding(Evidence.NONE)  # a key's spelling is no evidence
        self._frames[-1][key] = binding

    def unbind(self, target: cst.BaseExpression) -> None:
        """`target` is rebound to something unknown (a loop variable, `with ... as`)."""
        self._bind(target, None)

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for target in iterable:`. The rows of a mask are masks: `for keep in masks`,
        `for pred, keep in zip(preds, conf > t)` (each name paired with its iterable),
        `for i, keep in enumerate(mask)`, `for keep in mask.unbind(0)` each bind a row of
        booleans (computed from tensors where the mask was), as `keep = mask[i]` would."""
        self._bind(target, None)
        for name, rows in _loop_rows(target, iterable):
            evidence = self.evidence(rows)
            if evidence > Evidence.NAME:  # a spelling speaks for the name that has it only
                self._bind(name, _Binding(evidence))

    def _binding(self, value: cst.BaseExpression) -> _Binding:
        evidence = self.evidence(value)
        if (
            evidence is Evidence.NONE
            and type(value) is cst.Call
            and self.imports.resolve(value.func) in _NUMPY_ARRAYS
        ):
            return _Binding(evidence, array=True)
        if evidence is Evidence.NONE and self._opaque_call(value):
            # `penalty_mask = rlhf.get_reward_penalty_mask(...)`: what a helper returns is
            # unknown, so the name it is given is the evidence (kept only for mask names).
            return _Binding(Evidence.NAME)
        if evidence is Evidence.NAME and self._row_of_named_mask(value):
            return _Binding(evidence, carried=True)
        if evidence is Evidence.LIKELY and type(value) in (cst.Comparison, cst.BinaryOperation):
            versions = self._versions[-1]
            compared = tuple((n, versions.get(n, 0)) for n in _compared_names(value))
            return _Binding(evidence, compared=compared)
        if evidence is not Evidence.VALUE:
            return _Binding(evidence)
        receiver = _tested_receiver(value)
        tested = None if receiver is None else (receiver, self._versions[-1].get(receiver, 0))
        base = self._base(value)
        if not isinstance(base, str):
            return _Binding(evidence, tested=tested)
        return _Binding(evidence, base, self._versions_of(base), self._loop(), tested=tested)

    def _bind(self, target: cst.BaseExpression, binding: _Binding | None) -> None:
        """Record `target = <binding>`. Spelling is evidence only for the name that has it:
        `ids = order_mask[perm]` does not make `ids` a mask."""
        if type(target) is cst.StarredElement:
            target = target.value
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._bind(element.value, None)
            return
        if type(target) is cst.Subscript:
            entry = _entry_key(target)
            if entry is not None:
                # `params["keep"] = x > 0`: the entry holds what was bound to it.
                self._bind_entry(entry, binding)
            return
        key = dotted(target)
        if key is None:
            return
        versions = self._versions[-1]
        versions[key] = versions.get(key, 0) + 1
        frame = self._frames[-1]
        prefix = f"{key}["
        for stale in [k for k in frame if k.startswith(prefix)]:
            del frame[stale]  # the container was rebound: its entries are gone
        if isinstance(target, cst.Name):
            if (
                binding is not None
                and binding.evidence is Evidence.NAME
                and not binding.carried
                and not MASK_NAME.match(target.value)
            ):
                binding = _Binding(Evidence.NONE)
            if binding is None:
                self._frames[-1].pop(target.value, None)
            else:
                self._frames[-1][target.value] = binding

    def _row_of_named_mask(self, value: cst.BaseExpression) -> bool:
        """`keep_mask[i]`, `keep_mask[:, 0]`, `sample_keep.to(device=x.device)`: a row (at
        a Python position: a literal, a host number, a slice) or a move of a value named as
        a mask (or of a name already so carried): booleans as much as the mask is, whatever
        the name they are bound to says. Not a gather by a value of unknown kind
        (`ids = order_mask[perm]`), which may be positions of another dtype."""
        for _ in range(20):
            if type(value) is cst.Call:
                func = value.func
                if type(func) is not cst.Attribute or func.attr.value not in _DTYPE_KEEPING_METHODS:
                    return False
                value = func.value
            elif type(value) is cst.Subscript:
                if not all(self._python_position(element.slice) for element in value.slice):
                    return False
                value = value.value
            elif type(value) is cst.Name:
                binding = self._frames[-1].get(value.value)
                if binding is not None:
                    return binding.carried
                return MASK_NAME.match(value.value) is not None
            elif type(value) is cst.Attribute:
                return self.imports.resolve(value) is None and bool(
                    MASK_NAME.match(value.attr.value)
                )
            else:
                return False
        return False

    def _python_position(self, index: cst.BaseSlice) -> bool:
        """An index that picks rows by position: a slice, an integer literal (`-1`), `None`,
        or a host value (a loop's counter)."""
        if type(index) is cst.Slice:
            return True
        if type(index) is not cst.Index or index.star is not None:
            return False
        value = index.value
        if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus:
            value = value.expression
        if type(value) is cst.Integer or (type(value) is cst.Name and value.value == "None"):
            return True
        return type(value) is cst.Name and self.kinds.of(value) is Kind.HOST

    def _versions_of(self, dotted: str) -> tuple[tuple[str, int], ...]:
        parts = dotted.split(".")
        versions = self._versions[-1]
        prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
        return tuple((p, versions.get(p, 0)) for p in prefixes)

    def _loop(self) -> cst.CSTNode | None:
        """The innermost loop whose body holds the node being visited, in this function."""
        stack = self._stack
        for index in range(len(stack) - 2, -1, -1):
            node = stack[index]
            if isinstance(node, cst.FunctionDef | cst.Lambda):
                return None
            if isinstance(node, cst.For | cst.While) and stack[index + 1] is node.body:
                return node
        return None

    # -- questions ------------------------------------------------------------------------
    def evidence(self, node: cst.BaseExpression) -> Evidence:
        """How sure we are that `node` holds booleans (a mask)."""
        if type(node) is cst.Name:
            binding = self._frames[-1].get(node.value)
            if binding is not None:
                if binding.array and self._split_by_complement(node, node.value, host=True):
                    # `flags = np.array(eq_flags)`, then `c[:, flags]` and `c[:, ~flags]`:
                    # a host array of booleans, still a mask of the tensor it indexes.
                    return Evidence.LIKELY
                return binding.evidence
            if MASK_NAME.match(node.value):
                return Evidence.NAME
            if self._split_by_complement(node, node.value):
                return Evidence.LIKELY
            return Evidence.NONE
        if type(node) is cst.Attribute:
            if node.attr.value in ("T", "mT", "data"):
                return self.evidence(node.value)
            if self.imports.resolve(node) is None and MASK_NAME.match(node.attr.value):
                return Evidence.NAME
            if type(node.value) is cst.Name and node.value.value == "self":
                evidence = self._member_evidence(node.attr.value)
                if evidence is not Evidence.NONE:
                    return evidence
            if self._split_by_complement(node, dotted(node)):
                return Evidence.LIKELY
            return Evidence.NONE
        if type(node) is cst.Comparison:
            if len(node.comparisons) != 1:
                return Evidence.NONE  # `0 < x < 1` is Python's `and`, not a mask
            target = node.comparisons[0]
            if not isinstance(target.operator, _COMPARISONS):
                return Evidence.NONE
            operands = (node.left, target.comparator)
            if any(is_string(o) for o in operands):
                # `labels == tokenizer.eos_token`: a tensor compared with a string is
                # Python's `False` (`!=`: `True`; an ordering raises), never a mask.
                return Evidence.NONE
            if any(self._tensorish(o) for o in operands):
                return Evidence.VALUE
            if all(self.kinds.of(o) is Kind.HOST for o in operands):
                return Evidence.NONE  # Python numbers, shapes, numpy arrays
            return Evidence.LIKELY
        if type(node) is cst.BinaryOperation:
            if not isinstance(node.operator, _LOGICAL_BINARY):
                return Evidence.NONE
            # `a_mask & b_mask`: two names that read as masks, combined logically.
            low, high = sorted((self.evidence(node.left), self.evidence(node.right)))
            if low is not Evidence.NONE:
                return max(high, Evidence.LIKELY)
            return high
        if type(node) is cst.UnaryOperation:
            if not isinstance(node.operator, cst.BitInvert):
                return Evidence.NONE
            # `~padding_mask`: one rarely inverts the bits of an integer mask.
            inverted = self.evidence(node.expression)
            return max(inverted, Evidence.LIKELY) if inverted is not Evidence.NONE else inverted
        if isinstance(node, cst.Call):
            return self._call_evidence(node)
        if isinstance(node, cst.Subscript):
            entry = _entry_key(node)
            if entry is not None:
                bound = self._frames[-1].get(entry)
                if bound is not None:
                    return bound.evidence  # `params["keep"]`, bound in this function
                if type(node.value) is cst.Attribute and _self_attribute(node.value):
                    evidence = self._member_entry_evidence(node.value.attr.value, entry)
                    if evidence is not Evidence.NONE:
                        return evidence
                if self._split_by_complement(node, entry):
                    return Evidence.LIKELY  # `x[batch["tags"]]` beside `y[~batch["tags"]]`
            return self.evidence(node.value)  # `mask[:, None]`, `masks[i]`
        if isinstance(node, cst.IfExp):
            return min(self.evidence(node.body), self.evidence(node.orelse))
        if isinstance(node, cst.NamedExpr):
            return self.evidence(node.value)
        return Evidence.NONE

    def _split_by_complement(
        self, node: cst.BaseExpression, spelling: str | None, *, host: bool = False
    ) -> bool:
        """`node` (spelled `spelling`: a name, `self.flags`, `batch["kto_tags"]`) is one
        whose complement indexes a value in the function being walked (`logits[tags]`
        beside `logits[~tags]`, `torch.logical_not(tags)`, `tags.logical_not()`): splitting
        rows in two by a value and its complement is what a boolean mask does. Not a
        Python number's `~i` (`a[i] + a[~i]`: the i-th row from the end), nor a host value's,
        unless (`host`) the caller knows it for a numpy array the function built from data
        (`np.array(eq_flags)`): a host mask indexing a device tensor still runs `nonzero`."""
        if spelling is None or self.imports.resolve(node) is not None:
            return False
        function = next((n for n in reversed(self._stack) if type(n) is cst.FunctionDef), None)
        if function is None or spelling not in _complemented_indexes(function):
            return False
        return host or self.kinds.of(node) is not Kind.HOST

    def _member_evidence(self, attribute: str) -> Evidence:
        """`self.pos_idx` in a method, where the class's code binds `self.pos_idx = weights
        >= 0` (or registers it, `self.register_buffer("pos_idx", w >= 0)`) in another
        method: the attribute holds what every value bound to it makes, booleans (a
        comparison, `isnan`, `&`/`~` of those, `.bool()`; `None` aside), computed there from
        values of unknown kind here (`LIKELY`): a mask where it indexes a tensor."""
        cls = self._enclosing_class()
        if cls is None:
            return Evidence.NONE
        module: cst.Module = self._stack[0]  # type: ignore[assignment]
        values = [v for v, _ in member_values_in(module, cls.name.value, attribute)]
        registered = _registered(cls).get(attribute, []) if self.may_register else []
        return self._all_masks(values + registered)

    def _member_entry_evidence(self, attribute: str, entry: str) -> Evidence:
        """`self.params["selector"]` in a method, where the class's code binds every value
        of that entry as booleans element for element (`self.params["selector"] = peaks >
        0.0` in another method, or `self.params = {"selector": draw.to(dtype=torch.bool)}`;
        `None` aside): a mask kept in a dict of the instance, computed there from values of
        unknown kind here (`LIKELY`, as for an attribute)."""
        cls = self._enclosing_class()
        if cls is None:
            return Evidence.NONE
        key = entry[len(f"self.{attribute}") :]
        return self._all_masks(_member_entries(cls).get((attribute, key), []))

    def _enclosing_class(self) -> cst.ClassDef | None:
        """The class whose code is being walked, in a module's walk; None elsewhere."""
        stack = self._stack
        if not stack or type(stack[0]) is not cst.Module:
            return None
        return next((n for n in reversed(stack) if type(n) is cst.ClassDef), None)  # type: ignore[return-value]

    def _all_masks(self, values: list[cst.BaseExpression]) -> Evidence:
        """`LIKELY` where every value bound (`None` aside), and at least one, is made as
        booleans element for element; otherwise no evidence."""
        values = [v for v in values if not (type(v) is cst.Name and v.value == "None")]
        if values and all(_made_as_mask(v, self.imports) for v in values):
            return Evidence.LIKELY
        return Evidence.NONE

    def _opaque_call(self, value: cst.BaseExpression) -> bool:
        """A call of a helper whose result xlalint cannot tell: a function (`get_mask(x)`),
        a function of an imported module (`rlhf.get_reward_penalty_mask(...)`) or a method
        on `self`; not torch's, not a method of some value (`(x != 0).sum(-1)` counts),
        not a known tensor or host value (`len(x)`)."""
        if type(value) is not cst.Call or self.kinds.of(value) is not Kind.UNKNOWN:
            return False
        func = value.func
        qualified = self.imports.resolve(func)
        if qualified is not None:
            return not qualified.startswith("torch.")
        if isinstance(func, cst.Name):
            return True
        return (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        )

    def _tensorish(self, node: cst.BaseExpression) -> bool:
        """A comparison operand that makes the comparison elementwise: a tensor (or a
        schedule of them, `timesteps`), or a mask (itself a tensor)."""
        kind = self.kinds.of(node)
        if kind in (Kind.TENSOR, Kind.ITERABLE):
            return True
        return kind is Kind.UNKNOWN and self.evidence(node) >= Evidence.LIKELY

    def _call_evidence(self, node: cst.Call) -> Evidence:
        if any(_is_keyword(a, "dtype") for a in node.args):
            return Evidence.VALUE if self._bool_dtype(node) else Evidence.NONE
        func = node.func
        qualified = self.imports.resolve(func)
        if qualified is not None:
            if qualified == "torch.nn.functional.pad" and node.args:
                # Padding keeps the dtype: a mask shifted by `F.pad(m, (1, -1))` is a mask.
                return self.evidence(node.args[0].value)
            module, _, name = qualified.rpartition(".")
            if module != "torch":
                return Evidence.NONE
            if name in _BOOLEAN_OPS:
                return Evidence.VALUE
            if (name in _DTYPE_KEEPING_FUNCTIONS or name in _LIKE_FACTORIES) and node.args:
                return self.evidence(node.args[0].value)
            if name in _JOINING_FUNCTIONS and node.args and not node.args[0].star:
                return self._joined_evidence(node.args[0].value)
            return Evidence.NONE
        if not isinstance(func, cst.Attribute):
            return Evidence.NONE
        method = func.attr.value
        receiver = self.kinds.of(func.value)
        if (
            receiver in (Kind.MODULE, Kind.HOST)
            and method != "bool"
            and not (
                # `torch.zeros(n, dtype=bool).to(device)`: a host tensor's dtype travels.
                method in _DTYPE_KEEPING_METHODS and self.kinds.is_host_tensor(func.value)
            )
        ):
            return Evidence.NONE
        if method in _BOOLEAN_OPS:
            return Evidence.VALUE
        if method in ("to", "type", "view"):
            dtype = self._positional_dtype(node)
            if dtype is not None:
                return Evidence.VALUE if dtype == "bool" else Evidence.NONE
        if method in _DTYPE_KEEPING_METHODS:
            return self.evidence(func.value)
        return Evidence.NONE

    def _joined_evidence(self, tensors: cst.BaseExpression) -> Evidence:
        """`torch.stack((torch.ones_like(left), left, up))` of a literal list or tuple: as
        sure a mask as its least sure element (joined booleans are booleans; one number
        among them makes the join numbers)."""
        if type(tensors) not in (cst.Tuple, cst.List) or not tensors.elements:
            return Evidence.NONE
        if any(type(e) is cst.StarredElement for e in tensors.elements):
            return Evidence.NONE
        return min(self.evidence(e.value) for e in tensors.elements)

    def _bool_dtype(self, node: cst.Call) -> bool:
        for arg in node.args:
            if _is_keyword(arg, "dtype"):
                return self._dtype_name(arg.value) == "bool"
        return False

    def _positional_dtype(self, node: cst.Call) -> str | None:
        for arg in node.args:
            if arg.keyword is None and not arg.star:
                name = self._dtype_name(arg.value)
                if name is not None:
                    return name
        return None

    def _dtype_name(self, node: cst.BaseExpression) -> str | None:
        """`torch.bool` -> "bool", `torch.BoolTensor` -> "bool", `torch.float` -> "float";
        Python's own `bool`, `int`, `float` (torch takes them for its dtypes: `torch.zeros(n,
        dtype=bool)` is a boolean tensor) -> "bool", "int", "float"."""
        qualified = self.imports.resolve(node) or ""
        if not qualified and type(node) is cst.Name and node.value in _PYTHON_DTYPES:
            return node.value
        module, _, name = qualified.rpartition(".")
        if module != "torch":
            if isinstance(node, cst.SimpleString) and "Tensor" in node.value:
                return "bool" if "BoolTensor" in node.value else "other"
            return None
        if name == "BoolTensor":
            return "bool"
        return name if name[:1].islower() or name.endswith("Tensor") else None

    def mask_index(self, node: cst.Subscript) -> cst.BaseExpression | None:
        """The boolean mask `node` indexes a device tensor with (`x[mask]`, `x[:, m]`).

        Any evidence counts when the indexed value is known to be a tensor; on a schedule
        (`timesteps`) or a value of unknown kind only a mask computed from tensors counts
        (and on the latter, one known to be a device tensor). Lists, dicts, numpy arrays
        and host tensors are never masked reads for XLA.
        """
        base_kind: Kind | None = None
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or index.star is not None:
                continue
            evidence = self.evidence(index.value)
            if evidence is Evidence.NONE:
                continue
            if base_kind is None:
                base_kind = self.kinds.of(node.value)
            if base_kind is Kind.TENSOR:
                return index.value
            sliced = _unsliced(node.value)
            if (
                base_kind is Kind.UNKNOWN
                and self.kinds.is_derived(sliced)
                and not self.kinds.is_dict(sliced)
            ):
                # A helper's result computed from tensors, indexed by a mask: both agree
                # that it is a tensor (`logprobs[padding_masks] = 1.0`); so does a slice of
                # it, which holds the same kind of value (`logps[:n][loss_mask[:n]]`).
                return index.value
            if (
                base_kind is Kind.UNKNOWN
                and not self.kinds.is_dict(sliced)
                and self._indexes_tensors(index.value)
            ):
                # `grads[sel]`, then `info["radii"][sel]`: a mask that indexed a device
                # tensor is one, and indexes a tensor again (another read, its own cause).
                return index.value
            if evidence is not Evidence.VALUE:
                continue
            if base_kind is Kind.ITERABLE:
                return index.value  # `self.timesteps[self.timesteps > t]`
            if (
                base_kind is Kind.UNKNOWN
                and not self.kinds.is_dict(node.value)
                and self.tested_by_method(index.value, node.value)
            ):
                return index.value  # `sign[sign.gt(0)]`: only a tensor has `.gt`
            if (
                base_kind is Kind.UNKNOWN
                and not self.kinds.is_dict(node.value)
                and self.kinds.of(index.value) is Kind.TENSOR
            ):
                return index.value
        return None

    def tested_by_method(self, mask: cst.BaseExpression, indexed: cst.BaseExpression) -> bool:
        """`mask` is a comparison or test METHOD called on the indexed value itself
        (`sign[sign.gt(0)]`, `x[x.isnan()]`), or a name bound to one while the indexed name
        held what it holds now (`keep = x.ne(pad)`, then `x[keep]`). Python numbers,
        lists and numpy arrays have no such methods (numpy spells them `np.greater(a, 0)`,
        `np.isnan(a)`): the indexed value is a tensor. pandas objects have `.gt`/`.eq`...
        too, so not in a file that imports pandas."""
        name = dotted(indexed)
        if name is None or self.imports.binds("pandas"):
            return False
        if type(mask) is cst.Name:
            binding = self._frames[-1].get(mask.value)
            return (
                binding is not None
                and binding.evidence is Evidence.VALUE
                and binding.tested == (name, self._versions[-1].get(name, 0))
            )
        return _tested_receiver(mask) == name

    def computed_mask(self, node: cst.Subscript) -> cst.BaseExpression | None:
        """The index of `node` that is a mask computed from tensors (`VALUE` evidence),
        whatever the indexed value is: where the indexed value is a helper's parameter, its
        callers tell whether it is a tensor (XLA202/XLA203 ask `HelperCalls`)."""
        return self._index_with(node, Evidence.VALUE)

    def mask_of_itself(self, node: cst.Subscript) -> cst.BaseExpression | None:
        """The index of `node` computed like booleans (`LIKELY` evidence) from the indexed
        name itself (`result[result != result]`, `x[x == inf]`, or a name bound to such a
        comparison while the indexed name held the value it holds now: `mask = probs >=
        thresh`, then `probs[mask]`): a mask computed from a tensor wherever the indexed
        value is one (its callers tell, for a helper's value)."""
        if type(node.value) is not cst.Name:
            return None
        mask = self._index_with(node, Evidence.LIKELY)
        name = node.value.value
        if type(mask) is cst.Name:
            binding = self._frames[-1].get(mask.value)
            version = self._versions[-1].get(name, 0)
            if binding is not None and (name, version) in binding.compared:
                return mask
            return None
        if type(mask) is not cst.Comparison or len(mask.comparisons) != 1:
            return None
        operands = (mask.left, mask.comparisons[0].comparator)
        if not any(type(o) is cst.Name and o.value == name for o in operands):
            return None
        return mask

    def compared_mask(self, node: cst.Subscript) -> tuple[cst.BaseExpression, frozenset[str]]:
        """The index of `node` computed like booleans (`LIKELY`) by comparing names of
        unknown kind, with those names: `mask = (dist < best) & self.ok(out)`, then
        `best[mask] = dist[mask]`, with `dist` and `best` a helper's parameters. The mask
        is computed from tensors where a caller hands one of those names a tensor (XLA203
        asks `HelperCalls`). Names compared and rebound since are left out."""
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or index.star is not None:
                continue
            value = index.value
            if self.evidence(value) is not Evidence.LIKELY:
                continue
            versions = self._versions[-1]
            if type(value) is cst.Name:
                binding = self._frames[-1].get(value.value)
                if binding is None:
                    continue
                names = frozenset(n for n, v in binding.compared if versions.get(n, 0) == v)
            else:
                names = _compared_names(value)
            if names:
                return value, names
        return node, frozenset()

    def any_mask(self, node: cst.Subscript) -> cst.BaseExpression | None:
        """The index of `node` with any evidence of being a mask, whatever the indexed
        value is: for values that other evidence shows to be tensors (`th.mean(x[m])`)."""
        return self._index_with(node, Evidence.NAME)

    def _index_with(self, node: cst.Subscript, least: Evidence) -> cst.BaseExpression | None:
        for element in node.slice:
            index = element.slice
            if (
                isinstance(index, cst.Index)
                and index.star is None
                and self.evidence(index.value) >= least
            ):
                return index.value
        return None

    def elementwise_base(self, mask: cst.BaseExpression) -> str | None:
        """The tensor (`x`, `self.buf`) a mask is computed from element for element, so it
        has exactly that tensor's shape; None if it mixes tensors or reshapes."""
        if self.evidence(mask) is not Evidence.VALUE:
            return None
        base = self._base(mask)
        return base if isinstance(base, str) else None

    def _base(self, node: cst.BaseExpression, depth: int = 0) -> str | _Scalar | None:
        """Element-for-element provenance: one dotted tensor name, SCALAR, or None."""
        if depth > 50:
            return None
        depth += 1
        if is_scalar(node, self.imports) or self.is_zero_dim(node):
            return SCALAR
        if isinstance(node, cst.Name):
            binding = self._frames[-1].get(node.value)
            if binding is not None and binding.evidence is Evidence.VALUE:
                if binding.base is None or binding.loop is not self._loop():
                    return None
                if binding.versions != self._versions_of(binding.base):
                    return None  # the base was rebound since the mask was made
                return binding.base
        name = dotted(node)
        if name is not None:
            return name if self.kinds.of(node) is Kind.TENSOR else None
        if isinstance(node, cst.Comparison):
            if len(node.comparisons) != 1:
                return None
            return _combine(
                self._base(node.left, depth), self._base(node.comparisons[0].comparator, depth)
            )
        if isinstance(node, cst.BinaryOperation):
            if not isinstance(node.operator, _ARITHMETIC + _LOGICAL_BINARY):
                return None
            return _combine(self._base(node.left, depth), self._base(node.right, depth))
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return None
            return self._base(node.expression, depth)
        if isinstance(node, cst.Call):
            return self._call_base(node, depth)
        return None

    def _call_base(self, node: cst.Call, depth: int) -> str | _Scalar | None:
        if any(arg.keyword is not None or arg.star for arg in node.args):
            return None
        args = [arg.value for arg in node.args]
        func = node.func
        qualified = self.imports.resolve(func)
        if qualified is not None:
            module, _, name = qualified.rpartition(".")
            if module != "torch":
                return None
            if name in _UNARY_BOOLEAN | _ELEMENTWISE_FUNCTIONS and len(args) == 1:
                return self._base(args[0], depth)
            if name in _BINARY_BOOLEAN and len(args) == 2:
                return _combine(self._base(args[0], depth), self._base(args[1], depth))
            return None
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        receiver = self._base(func.value, depth)
        if method in _UNARY_BOOLEAN | _ELEMENTWISE_METHODS and not args:
            return receiver if isinstance(receiver, str) else None
        if method in _BINARY_BOOLEAN and len(args) == 1:
            combined = _combine(receiver, self._base(args[0], depth))
            return combined if isinstance(combined, str) else None
        return None

    def is_zero_dim(self, node: cst.BaseExpression) -> bool:
        """`t.mean()`, `t.max()`: a 0-d tensor, which broadcasts like a number."""
        return (
            isinstance(node, cst.Call)
            and not node.args
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ZERO_DIM_REDUCTIONS
            and self.kinds.of(node.func.value) is Kind.TENSOR
        )


# torch's tensor operations (`torch.mean`, `F.pad`), not its modules' APIs; and those of them
# that take any object: host data made into tensors (lists, numpy arrays), saved, tested or
# used as settings.
_TORCH_OPERATION = re.compile(r"^torch\.(nn\.functional\.)?[a-z_0-9]+$")
# Constructors and utilities that take any object (`torch.sparse_coo_tensor(indices,
# values)` of a scipy matrix's fields), and factories that take sizes (`torch.arange(n)`:
# `n` is a Python int).
_ANY_OBJECT = re.compile(
    r"^torch\.(tensor|as_tensor|from_numpy|asarray|save|load|manual_seed|numel|set_\w+|is_\w+"
    r"|arange|range|zeros|ones|empty|full|rand|randn|randint|randperm|linspace|logspace|eye"
    r"|finfo|iinfo|device|sparse_\w+_tensor)$"
)


def takes_tensors(qualified: str) -> bool:
    """A torch operation that raises on anything but tensors (`torch.mean`, `torch.where`):
    what it is handed is a tensor. Not constructors and utilities that take any object."""
    return bool(_TORCH_OPERATION.match(qualified)) and not _ANY_OBJECT.match(qualified)


def _compared_names(value: cst.BaseExpression) -> frozenset[str]:
    """The plain names compared in a comparison, or in the comparisons `&`, `|`, `^` or `~`
    combine (`(dist < best) & ok` -> dist, best), also through a row of one at a position
    (`gt_classes[i] > -1` -> gt_classes: a row of a tensor is a tensor)."""
    if type(value) is cst.Comparison:
        if len(value.comparisons) != 1:
            return frozenset()
        operands = [value.left, value.comparisons[0].comparator]
        for index, operand in enumerate(operands):
            if type(operand) is cst.Subscript and all(
                type(e.slice) is cst.Index and type(e.slice.value) in (cst.Name, cst.Integer)
                for e in operand.slice
            ):
                operands[index] = operand.value
        return frozenset(o.value for o in operands if type(o) is cst.Name)
    if type(value) is cst.BinaryOperation and isinstance(value.operator, _LOGICAL_BINARY):
        return _compared_names(value.left) | _compared_names(value.right)
    if type(value) is cst.UnaryOperation and isinstance(value.operator, cst.BitInvert):
        return _compared_names(value.expression)
    return frozenset()


# Tests as tensor methods that numbers, lists and numpy arrays lack: the receiver of one
# is a tensor (or a pandas object).
_TEST_METHODS = frozenset(
    {"eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
     "not_equal", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit",
     "logical_not"}
)  # fmt: skip


def _tested_receiver(value: cst.BaseExpression) -> str | None:
    """`sign.gt(0)`, `x.isnan()`, `self.buf.ne(pad)`: the plain name chain a test method
    is called on; else None."""
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return None
    if value.func.attr.value not in _TEST_METHODS:
        return None
    return dotted(value.func.value)


def _literal_key(node: cst.BaseExpression | None) -> str | None:
    """A dict key written as a plain string literal (`"selector"`), else None."""
    if type(node) is not cst.SimpleString:
        return None
    value = node.evaluated_value
    return value if isinstance(value, str) else None


def _entry_key(node: cst.Subscript) -> str | None:
    """`params["keep"]`, `self.params["keep"]`: the entry of a plain name chain under a
    literal string key, spelled as the frame keeps it; else None."""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if type(index) is not cst.Index or index.star is not None:
        return None
    key = _literal_key(index.value)
    container = dotted(node.value)
    if key is None or container is None:
        return None
    return f"{container}[{key!r}]"


def _self_attribute(node: cst.Attribute) -> bool:
    return type(node.value) is cst.Name and node.value.value == "self"


def _unsliced(value: cst.BaseExpression) -> cst.BaseExpression:
    """The value `value` slices, through any number of slicings (`x` of `x[:n]`,
    `x[:, :n]`, `x[n:][:, 1:]`): a slice holds what its value holds (a tensor's slice is a
    tensor, a list's a list). A subscript with an index that is no slice (`x[0]`,
    `x["k"]`) picks an element, and is kept."""
    while type(value) is cst.Subscript and all(
        type(element.slice) is cst.Slice for element in value.slice
    ):
        value = value.value
    return value


def _complement_of(index: cst.BaseExpression) -> cst.BaseExpression | None:
    """What `index` is the complement of: `~m`, `torch.logical_not(m)` (or any
    `logical_not(m)`), `m.logical_not()`; else None."""
    if type(index) is cst.UnaryOperation and isinstance(index.operator, cst.BitInvert):
        return index.expression
    if type(index) is not cst.Call:
        return None
    func = index.func
    if type(func) is cst.Attribute and func.attr.value == "logical_not":
        if not index.args:
            return func.value  # `m.logical_not()`
        if len(index.args) == 1 and not index.args[0].star:
            return index.args[0].value  # `torch.logical_not(m)`
    if type(func) is cst.Name and func.value == "logical_not" and len(index.args) == 1:
        return index.args[0].value
    return None


def _spelling(node: cst.BaseExpression) -> str | None:
    """A name chain (`tags`, `self.tags`) or its entry under a literal key
    (`batch["kto_tags"]`), spelled as `evidence` looks it up; else None."""
    if type(node) is cst.Subscript:
        return _entry_key(node)
    return dotted(node)


@lint_memo.memo(256)
def _complemented_indexes(function: cst.FunctionDef) -> frozenset[str]:
    """The spellings of the values whose complement indexes something in `function`
    (`y[~batch["tags"]]`, `x[:, torch.logical_not(keep)]`): `_split_by_complement`."""
    found: set[str] = set()
    for node in descendants(function.body):
        if type(node) is not cst.Subscript:
            continue
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or index.star is not None:
                continue
            complemented = _complement_of(index.value)
            spelling = _spelling(complemented) if complemented is not None else None
            if spelling is not None:
                found.add(spelling)
    return frozenset(found)


@lint_memo.memo(256)
def _member_entries(cls: cst.ClassDef) -> dict[tuple[str, str], list[cst.BaseExpression]]:
    """The values a class's code binds to entries of its attributes under literal string
    keys, by (attribute, `['key']`): `self.params["k"] = v`, and the entries of a dict
    literal bound to the attribute (`self.params = {"k": v}`)."""
    found: dict[tuple[str, str], list[cst.BaseExpression]] = {}
    for node in descendants(cls.body):
        if type(node) is not cst.Assign:
            continue
        for target in node.targets:
            target = target.target
            if type(target) is cst.Subscript:
                if type(target.value) is not cst.Attribute or not _self_attribute(target.value):
                    continue
                entry = _entry_key(target)
                if entry is not None:
                    attribute = target.value.attr.value
                    key = entry[len(f"self.{attribute}") :]
                    found.setdefault((attribute, key), []).append(node.value)
            elif (
                type(target) is cst.Attribute
                and _self_attribute(target)
                and type(node.value) is cst.Dict
            ):
                for element in node.value.elements:
                    if type(element) is not cst.DictElement:
                        continue
                    key = _literal_key(element.key)
                    if key is not None:
                        found.setdefault((target.attr.value, f"[{key!r}]"), []).append(
                            element.value
                        )
    return found


# The method `_registered` looks for: a class whose code calls it spells it.
REGISTER_BUFFER = "register_buffer"


@lint_memo.memo(256)
def _registered(cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
    """The values a class's code registers as buffers by name (`self.register_buffer("m",
    value)`)."""
    found: dict[str, list[cst.BaseExpression]] = {}
    for node in descendants(cls.body):
        if not (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == REGISTER_BUFFER
            and type(node.func.value) is cst.Name
            and node.func.value.value == "self"
            and len(node.args) >= 2
            and type(node.args[0].value) is cst.SimpleString
            and node.args[0].keyword is None
            and node.args[1].keyword is None
            and not node.args[1].star
        ):
            continue
        name = node.args[0].value.evaluated_value
        if isinstance(name, str):
            found.setdefault(name, []).append(node.args[1].value)
    return found


def _made_as_mask(value: cst.BaseExpression, imports: ImportTable) -> bool:
    """`value` makes booleans elementwise from what it is given, whatever that is: a
    comparison of something other than literals (`weights >= 0`; not `mode == "train"`,
    nor `x is None`), a boolean op (`torch.isnan(w)`, `w.ne(0)`, `.bool()`), `dtype=
    torch.bool`, and `~`, `&`, `|` of such."""
    if type(value) is cst.Comparison:
        if len(value.comparisons) != 1 or not isinstance(
            value.comparisons[0].operator, _COMPARISONS
        ):
            return False
        operands = (value.left, value.comparisons[0].comparator)
        literal = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
        if any(isinstance(o, literal) for o in operands):
            return False
        if any(type(o) is cst.Name and o.value in ("None", "True", "False") for o in operands):
            return False
        return not all(is_scalar(o, imports) for o in operands)
    if type(value) is cst.UnaryOperation:
        return isinstance(value.operator, cst.BitInvert) and _made_as_mask(
            value.expression, imports
        )
    if type(value) is cst.BinaryOperation:
        return isinstance(value.operator, _LOGICAL_BINARY) and (
            _made_as_mask(value.left, imports) and _made_as_mask(value.right, imports)
        )
    if type(value) is not cst.Call:
        return False
    for arg in value.args:
        if _is_keyword(arg, "dtype"):
            return (imports.resolve(arg.value) or "") == "torch.bool"
    qualified = imports.resolve(value.func)
    if qualified is not None:
        module, _, name = qualified.rpartition(".")
        return module == "torch" and name in _ELEMENTWISE_BOOLEAN
    return type(value.func) is cst.Attribute and value.func.attr.value in _ELEMENTWISE_BOOLEAN


def _combine(a: str | _Scalar | None, b: str | _Scalar | None) -> str | _Scalar | None:
    if a is None or b is None:
        return None
    if a is SCALAR:
        return b
    if b is SCALAR or a == b:
        return a
    return None


def is_scalar(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """A Python number written in place: `0`, `-1e4`, `True`, `float("-inf")`, `math.inf`,
    `torch.finfo(x.dtype).min`, and arithmetic of those."""
    if isinstance(node, cst.Integer | cst.Float):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False") and imports.resolve(node) is None
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, cst.Minus | cst.Plus) and is_scalar(
            node.expression, imports
        )
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, _ARITHMETIC) and (
            is_scalar(node.left, imports) and is_scalar(node.right, imports)
        )
    if isinstance(node, cst.Call):
        func = node.func
        return (
            isinstance(func, cst.Name)
            and func.value in ("float", "int")
            and imports.resolve(func) is None
            and len(node.args) == 1
            and node.args[0].keyword is None
            and (
                isinstance(node.args[0].value, cst.SimpleString)
                or is_scalar(node.args[0].value, imports)
            )
        )
    if isinstance(node, cst.Attribute):
        if imports.resolve(node) in _MATH_CONSTANTS:
            return True
        value = node.value
        return (
            node.attr.value in _INFO_ATTRIBUTES
            and isinstance(value, cst.Call)
            and imports.resolve(value.func) in ("torch.finfo", "torch.iinfo")
        )
    return False


def dotted(node: cst.BaseExpression) -> str | None:
    """`x` or `self.buf.data`: a plain chain of names, else None."""
    head = node
    while type(head) is cst.Attribute:
        head = head.value
    if not isinstance(head, cst.Name):
        return None
    return get_full_name_for_node(node)


def atom(node: cst.BaseExpression, code: str) -> str:
    """`code` (the source of `node`) ready to take `.sum()`: parenthesized unless it
    already binds tightly."""
    if node.lpar or isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Subscript):
        return code
    return f"({code})"


def _names_in(node: cst.CSTNode) -> set[str]:
    """The names an annotation mentions (`torch.Tensor | None` -> torch, Tensor, None)."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            names.add(current.value)
        elif type(current) is cst.Attribute:
            names.add(current.attr.value)
            stack.append(current.value)
        elif type(current) in EXPRESSIONS or type(current) in (cst.SubscriptElement, cst.Index):
            stack.extend(children(current))
    return names


def _is_keyword(arg: cst.Arg, name: str) -> bool:
    return arg.keyword is not None and arg.keyword.value == name


def _required(annotation: cst.BaseExpression) -> cst.BaseExpression:
    """The annotation of the value an optional parameter holds when it is given:
    `Optional[TensorType["b", "n", bool]]`, `Bool[Tensor, "b n"] | None` -> the inner one."""
    if (
        type(annotation) is cst.Subscript
        and type(annotation.value) is cst.Name
        and annotation.value.value == "Optional"
        and len(annotation.slice) == 1
        and type(annotation.slice[0].slice) is cst.Index
    ):
        return annotation.slice[0].slice.value
    if type(annotation) is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
        for side, other in (
            (annotation.left, annotation.right),
            (annotation.right, annotation.left),
        ):
            if type(other) is cst.Name and other.value == "None":
                return side
    return annotation


def _loop_rows(
    target: cst.BaseExpression, iterable: cst.BaseExpression
) -> list[tuple[cst.Name, cst.BaseExpression]]:
    """The names a `for` target binds to rows of one iterable each, with that iterable:
    `for m in masks` (and `masks.unbind(0)`, `masks.split(1)`: parts of its dtype), `for a,
    m in zip(xs, masks)` (one name per iterable), `for i, m in enumerate(masks)`."""
    if type(iterable) is cst.Call and not any(a.star or a.keyword for a in iterable.args):
        func = iterable.func
        args = [a.value for a in iterable.args]
        if type(func) is cst.Name and func.value in ("zip", "enumerate"):
            if type(target) not in (cst.Tuple, cst.List):
                return []
            names = [e.value for e in target.elements]  # type: ignore[attr-defined]
            if func.value == "enumerate":
                if len(args) != 1 or len(names) != 2:
                    return []
                names, args = names[1:], args
            elif len(names) != len(args):
                return []
            found: list[tuple[cst.Name, cst.BaseExpression]] = []
            for name, rows in zip(names, args, strict=True):
                found.extend(_loop_rows(name, rows))
            return found
        if type(func) is cst.Attribute and func.attr.value in _SPLITTING_METHODS:
            iterable = func.value
    return [(target, iterable)] if type(target) is cst.Name else []
