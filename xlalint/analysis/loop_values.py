"""Values that change from one pass of a loop to the next, and host values read from tensors.

XLA bakes Python numbers into the traced graph as constants, so whether a value changes
between passes decides whether a pass compiles a new graph (XLA_FACTS.md, re-measured while
writing XLA207-XLA209 on the XLA CPU device, 5 passes each):
- `X[i]` with `i` the pass's index and a barrier every pass: 5 compiles (1 with
  `index_select` and a device index). The same loop traced into one graph, without a barrier
  inside, unrolls identically every step and compiles once.
- `torch.arange(i, i + 16, device=dev)`: 5 compiles; `torch.arange(16, device=dev)`: 1.
- a loop run `int(t)` times inside the step: one compile per distinct count.

`LoopValues` follows, during the engine's single walk, which names hold the pass's index
(`for i in range(n)`, `for i, x in enumerate(xs)`) or ints derived from it (`j = i + 1`), and
which names change with the pass at all (XLA207, XLA208). `TensorReads` follows which names
hold a number or list read from a tensor (`n = int(t)`, `lens = t.tolist()`; XLA209).
`LoopValues` is one analysis of the context (`ctx.loop_values`, for rules that declare
`uses = ("loop_values",)`), which feeds it during the walk; XLA209 feeds its own
`TensorReads`: no tree is walked twice. Whether a
loop runs the device on every pass comes from `ctx.loops` (analysis/loop_facts.py), shared with
the barrier rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import parameters
from xlalint.analysis.guards import conjuncts
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.tensors import (
    HOST_ATTRIBUTES,
    HOST_METHODS,
    TO_HOST_METHODS,
    Kind,
    TensorKinds,
)
from xlalint.analysis.value_names import SHAPE_CALLS, value_names
from xlalint.walk import (
    EXPRESSIONS,
    children,
    descendants,
    node_types,
    self_attribute,
    target_names,
)

if TYPE_CHECKING:
    from xlalint.analysis.step_loops import LoopAnalysis

Loop = cst.For | cst.While

# Iterables whose items are the pass's index, possibly through wrappers.
_RANGES = frozenset({"range", "trange"})
_WRAPPERS = frozenset({"reversed", "tqdm", "list", "iter", "sorted"})
# Int operators: an index stays an int through them.
_SIGNS = node_types(cst.Minus, cst.Plus, cst.BitInvert)
_INT_OPERATORS = node_types(
    cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Power,
    cst.LeftShift, cst.RightShift, cst.BitAnd, cst.BitOr, cst.BitXor,
)  # fmt: skip
_INT_BUILTINS = frozenset({"int", "abs", "min", "max"})
# Tensor methods and torch functions that return a tuple or list of tensors.
_SEQUENCE_METHODS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit"}
)
_SEQUENCE_FUNCTIONS = frozenset(
    {
        "torch.split", "torch.chunk", "torch.unbind", "torch.tensor_split", "torch.hsplit",
        "torch.vsplit", "torch.dsplit", "torch.meshgrid", "torch.broadcast_tensors",
        "torch.atleast_1d", "torch.atleast_2d", "torch.atleast_3d",
    }
)  # fmt: skip
_SEQUENCE_BUILTINS = frozenset({"list", "tuple", "sorted", "zip", "map", "filter", "reversed"})
_SEQUENCE_ANNOTATIONS = frozenset(
    {"tuple", "Tuple", "list", "List", "Sequence", "Iterable", "Iterator", "dict", "Dict"}
)
# Names that say they hold several tensors: `all_hidden_states`, `res_hidden_states_tuple`,
# `past_key_values`, `layer_outputs`, `image_list`, `blocks`.
COLLECTION_NAME = re.compile(
    r"(^all_|_tuple$|_tuples$|_list$|_lists$|^list_|_seq$|_dict$|past_key_values|"
    r"(^|_)(outputs|layers|blocks|cache|caches|chunks|splits|pieces|parts|items)$)",
    re.IGNORECASE,
)
_TO_HOST = frozenset({"item", "tolist"})


@dataclass
class _Function:
    loops: list[Loop] = field(default_factory=list)  # innermost last
    in_body: list[Loop] = field(default_factory=list)  # loops whose pass is being walked
    # name -> the loops whose pass it changes with
    varying: dict[str, frozenset[Loop]] = field(default_factory=dict)
    ints: dict[str, frozenset[Loop]] = field(default_factory=dict)
    sequences: set[str] = field(default_factory=set)
    # names bound to host lists of Python ints (`list(range(n))`, `t.tolist()`), or of
    # pairs of them (`list(zip(times[:-1], times[1:]))`)
    int_lists: dict[str, str] = field(default_factory=dict)
    # names bound to a literal (`prev_pos = 0`, `last = None`) -> its code
    literals: dict[str, str] = field(default_factory=dict)
    # per loop: the names that hold its pass's index (each value on one pass only), and
    # the names its pass rebinds that held a literal before it (`prev_pos = 0`, then
    # `prev_pos = cur_pos` in the pass): that literal is theirs on the first pass only
    indexes: dict[Loop, frozenset[str]] = field(default_factory=dict)
    first_pass: dict[Loop, dict[str, str]] = field(default_factory=dict)


_INTS = "ints"
_PAIRS = "pairs"
_LIST_WRAPPERS = frozenset({"list", "tuple", "reversed", "sorted"})


class LoopValues:
    """Which names change with the pass of an enclosing loop, for one function at a time,
    and which loops read a tensor on the host (each such pass ends in an execution)."""

    def __init__(self, kinds: TensorKinds) -> None:
        self.kinds = kinds
        self._functions: list[_Function] = [_Function()]
        self._reading: set[Loop] = set()

    # -- feeding, from the rule's visit/leave methods --------------------------------------
    def push_function(self, node: cst.FunctionDef) -> None:
        function = _Function()
        for param in parameters(node):
            annotation = param.annotation
            if annotation is not None and _names_sequence(annotation.annotation):
                function.sequences.add(param.name.value)
        self._functions.append(function)

    def pop_function(self) -> None:
        self._functions.pop()

    def enter_loop(self, node: Loop) -> None:
        function = self._functions[-1]
        function.loops.append(node)
        # A name the pass also sets back to its literal (`prev = None` on a reset) holds it
        # on later passes too.
        rebound: dict[str, bool] = {}
        # (Only names bound to a literal before the loop count: most functions bind none,
        # and their loop bodies need no walk.)
        for name, value in _rebound(node.body) if function.literals else ():
            literal = function.literals.get(name)
            if literal is not None:
                rebound[name] = rebound.get(name, True) and _literal(value) != literal
        function.first_pass[node] = {
            name: function.literals[name] for name, moves in rebound.items() if moves
        }
        if isinstance(node, cst.While):
            function.in_body.append(node)
        else:
            only = frozenset({node})
            for name in target_names(node.target):
                function.varying[name] = only
                function.ints.pop(name, None)
                function.sequences.discard(name)
                function.literals.pop(name, None)
            indexes = _index_targets(node.target, node.iter, self.int_sequence)
            for name in indexes:
                function.ints[name] = only
            function.indexes[node] = frozenset(indexes)
        # A counter the pass steps (`seq_len += 1` at the end of a decode loop) differs from
        # one pass to the next from the start of the pass, before the increment too.
        innermost = frozenset({node})
        counters = [(c.target.value, c.value) for c in _counters(node.body)]  # type: ignore[attr-defined]
        for name, value in [*counters, *_rebound_counters(node.body)]:
            int_like = self.kinds.lookup(name) is Kind.HOST or name in function.ints
            # A step of the counter and shape reads only (`s + q.size(0)`, with `q` bound
            # later in the pass) is an int whatever the kinds know yet.
            if int_like and (
                self.int_loops(value) is not None or set(value_names(value)) <= {name}
            ):
                function.varying[name] = function.varying.get(name, frozenset()) | innermost
                function.ints[name] = function.ints.get(name, frozenset()) | innermost

    def enter_block(self, block: cst.BaseSuite, parent: cst.CSTNode | None) -> None:
        """A suite is entered: a `for` body starts its pass (the iterable and an `else:` run
        once, not per pass; a `while` pass starts at its test)."""
        if type(parent) is cst.For and parent.body is block:
            self._functions[-1].in_body.append(parent)

    def leave_block(self, block: cst.BaseSuite, parent: cst.CSTNode | None) -> None:
        in_body = self._functions[-1].in_body
        if type(parent) is cst.For and in_body and in_body[-1] is parent:
            in_body.pop()

    def leave_loop(self, node: Loop) -> None:
        function = self._functions[-1]
        if not function.loops or function.loops[-1] is not node:
            return
        function.loops.pop()
        if function.in_body and function.in_body[-1] is node:
            function.in_body.pop()
        function.indexes.pop(node, None)
        function.first_pass.pop(node, None)
        for table in (function.varying, function.ints):
            for name in [n for n, loops in table.items() if node in loops]:
                remaining = table[name] - {node}
                if remaining:
                    table[name] = remaining
                else:
                    del table[name]

    def note_call(self, call: cst.Call) -> None:
        """A call in the bodies being walked: a host read (`.item()`, `.tolist()`,
        `.cpu()`, `int(t)`) makes every enclosing loop of this function execute per pass."""
        loops = self._functions[-1].in_body
        if loops and self.reads_host(call):
            self._reading.update(loops)

    def executes_every_pass(
        self, loop: Loop, analysis: LoopAnalysis, *, reads: bool = True
    ) -> bool:
        """Whether each pass of `loop` ends in an execution of its own: it reaches a barrier,
        takes its batches from a loader that syncs, reads a tensor on the host (as far as
        `note_call` was told; not with `reads=False`), or is a step loop that trains or
        samples (it needs a barrier per pass, which XLA401/XLA402 ask for; a loop nested in
        one is a micro-step of it). Loops that do none of these are traced into the graph
        around them, unrolled."""
        site = analysis.site(loop)
        return (
            (reads and loop in self._reading)
            or analysis.reaches_barrier(loop)
            or (site is not None and analysis.syncs_per_pass(site))
            or any(step.site.node is loop for step in analysis.step_loops())
        )

    def reads_host(self, call: cst.Call) -> bool:
        """`t.item()`, `t.tolist()`, `t.cpu()`, `t.numpy()`, `int(t)`, `float(t)`, `bool(t)`
        on a value that is (or, for the methods, may be) a device tensor."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in TO_HOST_METHODS:
            return self.kinds.of(func.value) in (Kind.TENSOR, Kind.UNKNOWN) and not call.args
        return (
            isinstance(func, cst.Name)
            and func.value in ("int", "float", "bool")
            and self.kinds.lookup(func.value) is None
            and len(call.args) == 1
            and self.kinds.of(call.args[0].value) is Kind.TENSOR
        )

    def bind(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """`targets = value` (also the value of an annotated assignment)."""
        function = self._functions[-1]
        varying = self._varying_loops(value)
        ints = self.int_loops(value)
        sequence = self.makes_sequence(value)
        int_sequence = self.int_sequence(value)
        literal = _literal(value)
        for target in targets:
            names = target_names(target)
            unpacked = not isinstance(target, cst.Name)
            if isinstance(target, cst.Name) and literal is not None:
                function.literals[target.value] = literal
            else:
                for name in names:
                    function.literals.pop(name, None)
            if isinstance(target, cst.Name) and int_sequence is not None:
                function.int_lists[target.value] = int_sequence
            else:
                for name in names:
                    function.int_lists.pop(name, None)
            for name in names:
                if varying:
                    function.varying[name] = varying
                else:
                    function.varying.pop(name, None)
                if ints and not unpacked:
                    function.ints[name] = ints
                else:
                    function.ints.pop(name, None)
                if sequence and not unpacked:
                    function.sequences.add(name)
                else:
                    function.sequences.discard(name)

    def bind_augmented(self, augmented: cst.AugAssign) -> None:
        """`target op= value`: inside a loop, a name changes every pass, and a counter
        (`step += 1`, `i -= 1`) stays an int."""
        function = self._functions[-1]
        target, value = augmented.target, augmented.value
        if isinstance(target, cst.Name):
            function.literals.pop(target.value, None)
        if not isinstance(target, cst.Name) or not function.loops:
            return
        name = target.value
        innermost = frozenset({function.loops[-1]})
        function.varying[name] = function.varying.get(name, frozenset()) | innermost
        int_like = self.kinds.of(target) is Kind.HOST or name in function.ints
        counting = isinstance(augmented.operator, cst.AddAssign | cst.SubtractAssign)
        if counting and int_like and self.int_loops(value) is not None:
            function.ints[name] = function.ints.get(name, frozenset()) | innermost
        else:
            function.ints.pop(name, None)

    # -- questions -------------------------------------------------------------------------
    @property
    def in_loop(self) -> bool:
        return bool(self._functions[-1].loops)

    def passes_walked(self) -> list[Loop]:
        """The loops of this function whose pass (body, or `while` test) is being walked."""
        return self._functions[-1].in_body

    def int_loops(self, expr: cst.BaseExpression) -> frozenset[Loop] | None:
        """If `expr` is a Python int computed from loop indices (`i`, `i + 1`, `n - 1 - i`,
        `min(i * bs, n)`), the loops whose pass it changes with (empty for an int that does
        not change, such as a literal). None if it may not be an int: a tensor, an unknown
        call, a subscript."""
        if type(expr) is cst.Integer:
            return frozenset()
        if type(expr) is cst.Name:
            ints = self._functions[-1].ints
            if expr.value in ints:
                return ints[expr.value]
            kind = self.kinds.of(expr)
            return frozenset() if kind in (Kind.HOST, Kind.UNKNOWN) else None
        attribute = self_attribute(expr)
        if attribute is not None and f"self.{attribute}" in self._functions[-1].ints:
            return self._functions[-1].ints[f"self.{attribute}"]
        if type(expr) is cst.BinaryOperation and type(expr.operator) in _INT_OPERATORS:
            left, right = self.int_loops(expr.left), self.int_loops(expr.right)
            return None if left is None or right is None else left | right
        if type(expr) is cst.UnaryOperation and type(expr.operator) in _SIGNS:
            return self.int_loops(expr.expression)
        if (
            type(expr) is cst.Call
            and type(expr.func) is cst.Name
            and expr.func.value in _INT_BUILTINS
            and self.kinds.lookup(expr.func.value) is None
            and expr.args
        ):
            found: frozenset[Loop] = frozenset()
            for arg in expr.args:
                if arg.keyword is not None or arg.star:
                    return None
                loops = self.int_loops(arg.value)
                if loops is None:
                    return None
                found |= loops
            return found
        if type(expr) in (cst.Attribute, cst.Call) and self.kinds.of(expr) is Kind.HOST:
            return frozenset()  # `x.shape[0]`-like values and `len(...)`: ints, fixed
        if type(expr) is cst.Attribute and self.kinds.of(expr) is Kind.UNKNOWN:
            # `self.receptive_field + t`: a setting, read like a name of unknown kind (a
            # tensor attribute is known as one where the class assigns it).
            return frozenset()
        return None

    def one_pass(self, test: cst.BaseExpression) -> frozenset[Loop]:
        """The loops of this function of which at most one pass takes the branch of `test`
        (or of one of the conditions `and` joins in it): a test of the pass's index against
        a constant (`if i == 0:`, each value of `range`/`enumerate` is one pass), or of a
        name the pass rebinds against the literal it held before the loop (`prev_pos = 0`,
        then `if prev_pos == 0:` and `prev_pos = cur_pos` in the pass; `last = None`, then
        `if last is None:`): the first pass. A subscript there takes one value per run of
        the loop, whatever int indexes it."""
        function = self._functions[-1]
        found: set[Loop] = set()
        for condition in conjuncts(test):
            pinned = _pinned(condition)
            if pinned is None:
                continue
            name, literal = pinned
            for loop in function.loops:
                first = function.first_pass.get(loop, {})
                if first.get(name) == literal or (
                    name in function.indexes.get(loop, ()) and literal != "None"
                ):
                    found.add(loop)
        return frozenset(found)

    @staticmethod
    def few_passes(loop: Loop) -> bool:
        """Whether the loop's source fixes its passes at a handful (FEW_COUNTS at most),
        whatever the data: `for k in range(3)`, `range(1, 4)`, `reversed(range(2))`,
        `enumerate((a, b))`, `for axis in (0, 1, 2)`. Its index takes those few values on
        every run, so a graph per value is a fixed handful, each compiled once and reused on
        every later run of the loop, not a compile per step."""
        if not isinstance(loop, cst.For):
            return False
        count = _literal_count(loop.iter)
        return count is not None and count <= FEW_COUNTS

    def instance_ints(self) -> dict[str, frozenset[Loop]]:
        """Attributes of the instance that hold the index of a pass being walked here
        (`for self.step_nr in range(...)`), by their spelling (`self.step_nr`)."""
        return {k: v for k, v in self._functions[-1].ints.items() if k.startswith("self.")}

    def varies(self, expr: cst.CSTNode) -> bool:
        """Whether `expr` reads a name that changes with the pass of an enclosing loop (a
        loop target, or a value computed from one). Shapes (`x.shape`, `x.size(0)`,
        `len(x)`) do not count: they change only with the shapes, which recompile anyway."""
        return bool(self._varying_loops(expr))

    def is_sequence(self, name: str) -> bool:
        """Whether the latest binding of `name` here holds several values (a tuple, a list,
        `x.chunk(4)`), or a parameter annotated as such."""
        return name in self._functions[-1].sequences

    def int_sequence(self, value: cst.BaseExpression) -> str | None:
        """`"ints"` for a host sequence of Python ints (`range(n)`, `list(range(n))`,
        `t.int().tolist()`, `[999, 749, 499]`, a slice of one), `"pairs"` for a sequence of
        pairs of them (`zip(ts[:-1], ts[1:])`, `list(zip(...))`), else None."""
        if type(value) is cst.Name:
            return self._functions[-1].int_lists.get(value.value)
        if type(value) is cst.Subscript:
            sliced = len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Slice)
            return self.int_sequence(value.value) if sliced else None
        if type(value) is cst.BinaryOperation and type(value.operator) is cst.Add:
            left, right = self.int_sequence(value.left), self.int_sequence(value.right)
            return left if left == right else None
        if type(value) in (cst.List, cst.Tuple) and value.elements:
            items = [e.value for e in value.elements]
            if all(isinstance(item, cst.Integer) for item in items):
                return _INTS
            if all(
                isinstance(item, cst.Tuple) and self.int_sequence(item) == _INTS for item in items
            ):
                return _PAIRS
            return None
        if not isinstance(value, cst.Call):
            return None
        func = value.func
        if isinstance(func, cst.Attribute):
            return _INTS if func.attr.value == "tolist" and not value.args else None
        if not isinstance(func, cst.Name) or self.kinds.lookup(func.value) is not None:
            return None
        if func.value in _RANGES:
            return _INTS
        args = [arg.value for arg in value.args if arg.keyword is None and not arg.star]
        if func.value in _LIST_WRAPPERS and len(args) == 1:
            return self.int_sequence(args[0])
        if func.value == "zip" and len(args) == 2 == len(value.args):
            return _PAIRS if all(self.int_sequence(a) == _INTS for a in args) else None
        return None

    def makes_sequence(self, value: cst.BaseExpression) -> bool:
        """`(a, b)`, `[...]`, `x.split(2)`, `torch.chunk(x, 4)`, `list(...)`, `acc + (h,)`."""
        if type(value) in (cst.Tuple, cst.List, cst.ListComp, cst.GeneratorExp):
            return True
        if type(value) is cst.BinaryOperation and type(value.operator) is cst.Add:
            return self.makes_sequence(value.left) or self.makes_sequence(value.right)
        if type(value) is cst.Name:
            return self.is_sequence(value.value)
        if isinstance(value, cst.Call):
            func = value.func
            qualified = self.kinds.imports.resolve(func)
            if qualified is not None:
                return qualified in _SEQUENCE_FUNCTIONS
            if isinstance(func, cst.Name):
                return func.value in _SEQUENCE_BUILTINS and self.kinds.lookup(func.value) is None
            if isinstance(func, cst.Attribute):
                return func.attr.value in _SEQUENCE_METHODS
        return False

    def _varying_loops(self, expr: cst.CSTNode) -> frozenset[Loop]:
        function = self._functions[-1]
        if not function.varying:
            return frozenset()
        found: frozenset[Loop] = frozenset()
        for name in value_names(expr):
            found |= function.varying.get(name, frozenset())
        return found


class TensorReads:
    """Which names hold a host value read from a tensor (`n = int(t)`, `k = t.item()`,
    `lens = lengths.tolist()`), one function at a time, as a trip count takes it: a value
    capped by a small literal (`min(3, n)`, at most FEW_COUNTS) counts as none, as it makes
    a fixed handful of counts whatever the data."""

    def __init__(self, kinds: TensorKinds, imports: ImportTable) -> None:
        self.kinds = kinds
        self.imports = imports
        self._functions: list[set[str]] = [set()]

    def push_function(self) -> None:
        self._functions.append(set())

    def pop_function(self) -> None:
        self._functions.pop()

    def bind(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        read = self.reads(value)
        names = self._functions[-1]
        for target in targets:
            for name in target_names(target):
                if read:
                    names.add(name)
                else:
                    names.discard(name)

    def bind_augmented(self, augmented: cst.AugAssign) -> None:
        """`n += int(t)`: a read value stays read."""
        target = augmented.target
        if isinstance(target, cst.Name) and self.reads(augmented.value):
            self._functions[-1].add(target.value)

    def is_read_name(self, name: str) -> bool:
        return name in self._functions[-1]

    def direct_read(self, expr: cst.BaseExpression) -> bool:
        """`expr` itself reads a tensor: it is one, or contains `int(t)`/`t.item()`."""
        return self._reads(expr, names=False)

    def reads(self, expr: cst.BaseExpression) -> bool:
        """`expr` is (computed from) a value read from a tensor, here or earlier."""
        return self._reads(expr, names=True)

    def _reads(self, expr: cst.BaseExpression, names: bool) -> bool:
        if type(expr) is cst.Name:
            if names and expr.value in self._functions[-1]:
                return True
            return self.kinds.of(expr) is Kind.TENSOR
        if type(expr) is cst.Call:
            return self._call_reads(expr, names)
        if isinstance(expr, cst.BinaryOperation):
            return self._reads(expr.left, names) or self._reads(expr.right, names)
        if isinstance(expr, cst.UnaryOperation):
            return self._reads(expr.expression, names)
        if isinstance(expr, cst.Subscript):
            # `lens[i]` of `lens = t.tolist()`; a tensor element `t[0]` is a tensor.
            return self._reads(expr.value, names)
        if isinstance(expr, cst.IfExp):
            return self._reads(expr.body, names) or self._reads(expr.orelse, names)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value not in HOST_ATTRIBUTES and self.kinds.of(expr) is Kind.TENSOR
        return False

    def _call_reads(self, call: cst.Call, names: bool) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _TO_HOST and not call.args:
                kind = self.kinds.of(func.value)
                # `.item()` exists on tensors and numpy values: in torch code, a tensor
                # unless known to live on the host (as XLA101 reads it).
                return kind is Kind.TENSOR or (kind is Kind.UNKNOWN and self.imports.binds("torch"))
            if method in HOST_METHODS:
                return False
        qualified = self.imports.resolve(func)
        if qualified is not None:
            if qualified.startswith("math."):
                return any(self._reads(a.value, names) for a in call.args)
            return self.kinds.of(call) is Kind.TENSOR
        if isinstance(func, cst.Name) and self.kinds.lookup(func.value) is None:
            if func.value in SHAPE_CALLS:
                return False
            if func.value == "min" and _capped_by_few(call):
                # `num_gen_perms = min(3, max_perms)`: at most a handful of counts, so a
                # handful of graphs, each compiled once, whatever the data.
                return False
            if func.value in {"int", "float", "round", "abs", "min", "max", "sum", "bool"}:
                return any(self._reads(a.value, names) for a in call.args if not a.keyword)
        return self.kinds.of(call) is Kind.TENSOR


# -- helpers ----------------------------------------------------------------------------------
# The largest cap, written as a literal, under which a count read from a tensor still takes
# few enough values (0 to the cap) that their graphs are a fixed handful, each compiled once.
FEW_COUNTS = 8


def _capped_by_few(call: cst.Call) -> bool:
    """`min(3, n)`: a `min` of positional values, one an integer literal no larger than
    FEW_COUNTS, so the result, whatever the others are, takes at most that many values
    above zero."""
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            return False
    return any(
        type(arg.value) is cst.Integer and arg.value.evaluated_value <= FEW_COUNTS
        for arg in call.args
    )


def _literal_count(iterable: cst.BaseExpression) -> int | None:
    """How many items an iterable written with literals alone yields (`range(3)`,
    `range(0, 6, 2)`, `(0, 1, 2)`, `enumerate([a, b])`, `reversed(range(4))`): None where
    the count is not spelled in the source (`range(n)`, `range(len(x))`, a name)."""
    if isinstance(iterable, cst.List | cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in iterable.elements):
            return None
        return len(iterable.elements)
    if not isinstance(iterable, cst.Call) or not iterable.args:
        return None
    if any(arg.keyword is not None or arg.star for arg in iterable.args):
        return None
    name = _callee_name(iterable)
    if name in _RANGES:
        bounds = [_literal_int(arg.value) for arg in iterable.args]
        if len(bounds) > 3 or any(b is None for b in bounds) or bounds[2:] == [0]:
            return None
        return len(range(*bounds))  # type: ignore[arg-type]
    if (name == "enumerate" or name in _LIST_WRAPPERS) and len(iterable.args) == 1:
        return _literal_count(iterable.args[0].value)
    return None


def _literal_int(value: cst.BaseExpression) -> int | None:
    """`3`, `-1`: an integer literal's value."""
    if type(value) is cst.Integer:
        return int(value.evaluated_value)
    if (
        type(value) is cst.UnaryOperation
        and isinstance(value.operator, cst.Minus)
        and type(value.expression) is cst.Integer
    ):
        return -int(value.expression.evaluated_value)
    return None


def _counters(body: cst.BaseSuite) -> Iterator[cst.AugAssign]:
    """`name += n` and `name -= n` statements of one pass of a loop body, not those of
    nested loops (they count the nested passes) or definitions."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if (
            type(node) is cst.AugAssign
            and isinstance(node.target, cst.Name)
            and isinstance(node.operator, cst.AddAssign | cst.SubtractAssign)
        ):
            yield node
            continue
        if type(node) in EXPRESSIONS:
            continue
        stack.extend(children(node))


def _rebound_counters(body: cst.BaseSuite) -> list[tuple[str, cst.BaseExpression]]:
    """Counters a pass steps by plain assignment: `pos = pos + n`, or through a name
    the pass computes from it first (`e = s + q.size(0)`, then `s = e`: the next chunk's
    offset). Each with the value it is rebound to, in one pass of `body` (not nested loops
    or definitions)."""
    bound: dict[str, cst.BaseExpression] = {}
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.For | cst.While | cst.FunctionDef | cst.ClassDef | cst.Lambda):
            continue
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
        ):
            bound.setdefault(node.targets[0].target.value, node.value)
            continue
        if isinstance(node, cst.BaseExpression):
            continue
        stack.extend(children(node))
    found: list[tuple[str, cst.BaseExpression]] = []
    for name, value in bound.items():
        read = set(value_names(value))
        if name in read and _adds(value):
            found.append((name, value))
            continue
        for other in read:
            step = bound.get(other)
            if (
                step is not None
                and other != name
                and name in set(value_names(step))
                and _adds(step)
            ):
                found.append((name, step))
                break
    return found


def _rebound(body: cst.BaseSuite) -> Iterator[tuple[str, cst.BaseExpression | None]]:
    """Names one pass of a loop body rebinds (not nested loops or definitions), each with
    the value of a plain assignment (None for `+=` and the like)."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    yield target.target.value, node.value
            continue
        if type(node) is cst.AugAssign:
            if type(node.target) is cst.Name:
                yield node.target.value, None
            continue
        if type(node) in EXPRESSIONS:
            continue
        stack.extend(children(node))


def _literal(value: cst.BaseExpression | None) -> str | None:
    """The code of an int literal or `None`, else None."""
    if type(value) is cst.Integer:
        return value.value
    if type(value) is cst.Name and value.value == "None":
        return "None"
    return None


def _pinned(condition: cst.BaseExpression) -> tuple[str, str] | None:
    """`name == 0`, `0 == name`, `name is None`: the name and the literal it is held to."""
    if type(condition) is not cst.Comparison or len(condition.comparisons) != 1:
        return None
    target = condition.comparisons[0]
    if type(target.operator) not in (cst.Equal, cst.Is):
        return None
    left, right = condition.left, target.comparator
    for name, value in ((left, right), (right, left)):
        literal = _literal(value)
        if type(name) is cst.Name and literal is not None:
            return name.value, literal
    return None


def _adds(value: cst.BaseExpression) -> bool:
    """`a + b`, `(a + b) % n`, `min(a + b, n)`: a step forward."""
    return any(
        isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Add)
        for n in descendants(value)
    )


def _callee_name(call: cst.Call) -> str:
    return (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]


def _index_targets(
    target: cst.BaseExpression,
    iterable: cst.BaseExpression,
    int_sequence: Callable[[cst.BaseExpression], str | None],
) -> list[str]:
    """Names of a `for` target that hold the pass's index: `i` of `for i in range(n)`,
    `for i, x in enumerate(xs)`, `for i in reversed(range(n))`, `for i, _ in zip(range(n), xs)`,
    or a Python int taken from a host list of them: `for t, t_next in time_pairs` with
    `time_pairs = list(zip(times[:-1], times[1:]))` and `times = t.int().tolist()`."""
    kind = int_sequence(iterable)
    if kind == _INTS and isinstance(target, cst.Name):
        return [target.value]
    if kind == _PAIRS and isinstance(target, cst.Tuple | cst.List):
        names = [e.value for e in target.elements]
        if len(names) == 2 and all(isinstance(n, cst.Name) for n in names):
            return [n.value for n in names]  # type: ignore[attr-defined]
        return []
    if not isinstance(iterable, cst.Call) or not iterable.args:
        return []
    name = _callee_name(iterable)
    if name in _RANGES:
        if isinstance(target, cst.Name):
            return [target.value]
        # `for self.step_nr in range(...)`: the methods the pass calls read it from `self`.
        attribute = self_attribute(target)
        return [f"self.{attribute}"] if attribute is not None else []
    if name == "enumerate":
        if isinstance(target, cst.Tuple | cst.List) and len(target.elements) == 2:
            first, second = target.elements[0].value, target.elements[1].value
            items = _index_targets(second, iterable.args[0].value, int_sequence)
            return [first.value, *items] if isinstance(first, cst.Name) else items
        return []
    if name in _WRAPPERS:
        return _index_targets(target, iterable.args[0].value, int_sequence)
    if name == "zip" and isinstance(target, cst.Tuple | cst.List):
        if len(target.elements) != len(iterable.args):
            return []
        found: list[str] = []
        for element, arg in zip(target.elements, iterable.args, strict=True):
            found.extend(_index_targets(element.value, arg.value, int_sequence))
        return found
    return []


def _names_sequence(annotation: cst.BaseExpression) -> bool:
    """`tuple[torch.Tensor, ...]`, `List[Tensor]`, `Sequence[Tensor]`: several tensors."""
    if type(annotation) is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
        return _names_sequence(annotation.left) or _names_sequence(annotation.right)
    head = annotation
    if isinstance(head, cst.Subscript):
        head = head.value
    name = get_full_name_for_node(head) or ""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ("Optional",) and isinstance(annotation, cst.Subscript):
        inner = annotation.slice[0].slice
        return isinstance(inner, cst.Index) and _names_sequence(inner.value)
    return leaf in _SEQUENCE_ANNOTATIONS
