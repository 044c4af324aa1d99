"""The vocabulary of torch's tensor methods, by what a call of one tells about its result.

Several judgements ask the same question of a method name with different ends in view: is
the result computed element for element from the receiver (a masked write's value read
under its own mask, XLA202; a host tensor's maths moved to the device, XLA208), computed
from the receiver at all (a helper's return derived from its parameters, `returns.py`), or
proof that the receiver is a tensor (`tensors.py`: no number, array or sequence has the
method)? The sets live here once; each user names the union it means.
"""

from __future__ import annotations

# Maths of one tensor, element for element, as a method (`x.exp()`) or a function of
# torch (`torch.exp(x)`); `pow` takes an exponent beside it.
UNARY_MATH = frozenset(
    {
        "abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
        "tan", "sinh", "cosh", "tanh", "sigmoid", "relu", "sign", "erf", "sqrt", "rsqrt",
        "reciprocal", "square", "pow", "floor", "ceil", "round", "trunc", "frac",
    }
)  # fmt: skip
# Bounds applied element for element.
BOUNDS = frozenset({"clamp", "clamp_min", "clamp_max", "clip"})
# Casts that keep the tensor where it is.
FLOAT_CASTS = frozenset({"float", "double", "half", "bfloat16"})
INTEGER_CASTS = frozenset({"long", "int"})
# Arithmetic of two tensors (or a tensor and a number), element for element.
BINARY_MATH = frozenset(
    {"add", "sub", "mul", "div", "true_divide", "maximum", "minimum", "lerp"}
)  # fmt: skip
# Comparisons and logical tests, element for element: their results are masks.
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
PREDICATES = frozenset(
    {"logical_not", "logical_and", "logical_or", "isnan", "isinf", "isfinite"}
)  # fmt: skip
# Reductions: a tensor computed from the receiver, but not element for element.
REDUCTIONS = frozenset({"sum", "mean", "prod", "all", "any", "amax", "amin"})
# Copies and views that keep every element: the same values, wherever the tensor lives.
SAME_VALUES = frozenset({"to", "type_as", "detach", "clone", "contiguous", "nan_to_num"})

# Math methods of tensors that Python numbers, numpy arrays, pandas objects and sequences
# lack (numpy spells them as functions, `np.log(a)`, and clips with `.clip`): called on a
# value of unknown kind they make a tensor on its device (`(1 + f0 / 700).log()`,
# `(1 - r).clamp(min=0).sqrt()`). The ones without arguments only when called without any
# (a logger's `run.log({"loss": v})`, `self.log("loss", v)` are no math).
ONLY_TENSOR_MATH = frozenset(
    {"log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "rsqrt", "sigmoid"}
)  # fmt: skip
ONLY_TENSOR_MATH_WITH_ARGUMENTS = frozenset(
    {"clamp", "clamp_min", "clamp_max", "softmax", "log_softmax", "logsumexp"}
)  # fmt: skip
# Norms: `x.norm()`, `x.norm(p="fro")`, `x.norm(2, dim=-1)` (numpy spells it
# `np.linalg.norm(a)`); only without positional arguments other than a number, since a
# module's layer norm is often an attribute called on its input (`self.norm(x)`).
ONLY_TENSOR_NORMS = frozenset({"norm"})
# Selections and tests only tensors have as methods: `values.topk(k)` hands back a tensor
# of values and one of indices on the receiver's device (numpy selects with
# `np.argpartition(a, k)`); `x.isnan()` without arguments is a mask on its device (numpy
# spells it `np.isnan(a)`, Python `math.isnan(v)`). A search index's `topk(query, k)` or
# a checker's `isnan(x)` is some other object's: the tests need no arguments, and the
# selection at most a count and keywords (`topk(k, dim=-1)`).
ONLY_TENSOR_SELECTIONS = frozenset({"topk", "kthvalue"})
ONLY_TENSOR_PREDICATES = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf"})
