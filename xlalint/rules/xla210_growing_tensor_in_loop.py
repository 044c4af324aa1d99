from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from xlalint.analysis.arguments import (
    Signature,
    bind,
    is_staticmethod,
    keyword_argument,
    parameters,
    signature_of,
)
from xlalint.analysis.devices import positional_argument
from xlalint.analysis.members import member_method_call
from xlalint.analysis.structural_loops import StructuralLoops
from xlalint.analysis.tensors import TO_HOST_METHODS
from xlalint.context import FileContext, Kind
from xlalint.rule import Rule
from xlalint.walk import EXPRESSIONS, bound_names, children, descendants, node_types

# Joins whose output is as long as all their inputs together.
_JOINS = frozenset(
    {
        "torch.cat",
        "torch.concat",
        "torch.concatenate",
        "torch.stack",
        "torch.hstack",
        "torch.vstack",
        "torch.dstack",
        "torch.column_stack",
        "torch.row_stack",
    }
)
# Joins that hand back the joined tensor first, beside what unpacking needs: einops'
# `packed, ps = pack([x, y], "b *")` concatenates as `torch.cat` does.
_PACKS = frozenset({"einops.pack"})
_LIST_GROWTH = frozenset({"append", "extend", "insert"})


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """`x` and `x`, `self.cache` and `self.cache`, `cache[key]` and `cache[key]`."""
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        return a.value == b.value
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        return a.attr.value == b.attr.value and _same(a.value, b.value)
    if isinstance(a, cst.Subscript) and isinstance(b, cst.Subscript):
        index_a, index_b = a.slice[0].slice, b.slice[0].slice
        return (
            len(a.slice) == len(b.slice) == 1
            and isinstance(index_a, cst.Index)
            and isinstance(index_b, cst.Index)
            and _same(index_a.value, index_b.value)
            and _same(a.value, b.value)
        )
    return False


# Methods that keep a joined tensor's shape: `torch.cat([...]).detach()` still grows.
_SHAPE_KEEPING = frozenset({"detach", "contiguous", "clone", "float", "half", "bfloat16", "to"})


def _unwrapped(value: cst.BaseExpression) -> cst.BaseExpression:
    """`torch.cat([...]).detach()` -> the join."""
    while (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _SHAPE_KEEPING
        and isinstance(value.func.value, cst.Call)
    ):
        value = value.func.value
    return value


def _on_host(node: cst.BaseExpression) -> bool:
    """`y.cpu()`, `y.detach().cpu()`, `y.to("cpu")`: a host copy."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        if method in TO_HOST_METHODS:  # growing a host copy costs no compile
            return True
        if method == "to" and any(
            isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == "cpu"
            for a in node.args
        ):
            return True
        node = node.func.value
    return False


class GrowingTensorInLoop(Rule):
    """
    ## What it does
    Flags a tensor that grows every step: inside a loop, `x = torch.cat((x, y), dim)`
    (also `torch.cat([x, y])`, `torch.stack`, `hstack`/`vstack`, ...) where the result
    replaces one of the joined tensors, and `torch.cat(xs)`/`torch.stack(xs)` inside a loop
    that appends to the list `xs`; einops' `pack` joins as `torch.cat` does, its first
    result the joined tensor (`codes, _ = pack([codes, sample], "b *")` in a sampling
    loop). In code that runs every step (`forward`, `*_step`), an
    attribute grown on every call (`self.cache = torch.cat([self.cache, k], dim=2)`) is
    flagged too, and so is an entry of a container that outlives the call (`self.memory[
    layer]`, or a closure's dict: a forward hook's `cache[module] = torch.cat([cache[
    module], output], dim=1).detach()`, registered with `register_forward_hook` and so run
    on every forward); a dict the function builds itself is not. So is a helper of the
    module that returns a join of one of its parameters with something new (`def
    append_token(xs, x): return torch.cat((xs, x))`), at its join, where code that runs
    every step hands it a value and keeps the result in its place: `seq =
    append_token(seq, tok)` carried from pass to pass of a loop, or
    `Hypothesis(yseq=append_token(hyp.yseq, tok))`, a beam search's new hypothesis carrying
    its parent's sequence one token longer. A helper that rebinds its parameter once to
    such a join and returns it, alone or in a tuple (`tokens = torch.cat([tokens, nxt],
    -1); return tokens, completed`), grows it the same way for a loop that unpacks the
    result back into its argument (`tokens, completed = self.decoder.update(tokens,
    logits)`, also through an attribute holding an instance of a class of the module).
    The value is carried from pass to pass also where the pass reorders, expands or masks
    it besides growing it (`out = repeat(out, ...)`, `out = out[beam_idx]`, `out =
    out.masked_fill(done, pad)`, or casts, reshapes and fills such as `.to(device)`,
    `.view(...)`, `.masked_fill_(...)`): these keep the length it has grown to.
    Left alone: joins of fresh tensors (`torch.cat([a, b], -1)`), sliding windows that
    keep the length (`x = torch.cat([x[:, 1:], y], 1)`, or a crop in the same pass: `out =
    out[:, -window:]`, or any other method applied to it, such as `out = out.narrow(1, 1,
    window)`, that may change its length), a value bound anew each pass (`out =
    prompt.new_zeros(...)`), joins after the loop (`torch.cat(outputs)` once all steps are
    done), growth of host copies (`torch.cat([preds, logits.cpu()])`, or a list that only
    ever appends host copies, `saved.append(x.detach().cpu())`), a list started afresh in
    each pass (`actions, outputs = [], []` before the inner loop that fills it), and helpers whose
    result is a new value each pass (`features = pair(x, y)`, a grown prompt kept under
    another name) or that are called once, after the loop. Also left alone: growth in a loop over
    the module's own structure (`for layer in self.layers`, `enumerate`/`zip`/`reversed` of such a
    container, a slice of one with literal bounds, `self.layers[1:]`, `range(len(self.blocks))`,
    `range(self.num_layers)`, a literal tuple) whose passes neither sync, read the device on the
    host (`.item()`, `int(t)`) nor `break`: it runs the same number of passes on every call and
    traces into one graph, the same shapes every step, so it compiles once. So is a counted loop
    whose passes call only torch's functions (`for _ in range(k): grid = torch.cat([grid[:, [0]] -
    h, grid], dim=1)`, padding a value `k` times): no model or helper runs in a pass, so no pass is
    a step; the loop traces into its caller's graph, the same shapes for the same count. A token
    loop's passes are
    steps (a host read, a barrier or a `break` per pass, or a trip count the caller picks):
    those stay flagged.

    ## Why is this bad?
    XLA compiles a graph per set of input shapes. A tensor that is one step longer on every
    pass gives every step a new shape: the step compiles again each time (and everything
    downstream of the tensor with it), so a generation loop of N tokens compiles N graphs
    and the compile time grows with the sequence.

    ## Example
    ```python
    for _ in range(max_new_tokens):
        logits = model(tokens)[:, -1]
        next_token = logits.argmax(-1, keepdim=True)
        tokens = torch.cat((tokens, next_token), dim=1)
        torch_xla.sync()
    ```

    ## Use instead
    Preallocate to the maximum length and write each step into a static slice (with
    `index_copy_` at a device-side position), and let the model read a static KV cache:
    ```python
    tokens = torch.full((batch, max_len), pad_id, device=device)
    tokens[:, :prompt_len] = prompt
    for pos in range(prompt_len, max_len):
        logits = model(tokens, attention_mask=tokens != pad_id)
        next_token = logits[:, pos - 1].argmax(-1, keepdim=True)
        tokens.index_copy_(1, torch.tensor([pos], device=device), next_token)
        torch_xla.sync()
    ```

    ## Off by default
    On code its rule was never tuned on (the held-out projects of rounds 11-17 of
    `benchmarks/quality/`, first scores), 10 findings held 4 true costs: the others
    were concatenations over a fixed list (a model's backbone layers, a spline order), the
    same shapes every step, and growth in code that runs once per grid update.
    A rule wrong more often than right on unseen code stays out of the default set;
    turn it on with `extend-select = ["XLA210"]` (or `--extend-select XLA210`).

    ## Fix safety
    No fix: the rewrite changes the model's inputs (padding and a mask, or a static cache)
    and needs a maximum length, so this rule reports with a hint.

    ## Runtime evidence
    Measured with `benchmarks/xla_semantics.py --group growth` (torch 2.9.0, torch_xla
    2.9.0, `PJRT_DEVICE=CPU`): 5 steps of `y = tanh(x[-1:] @ w); x = torch.cat((x, y), 0)`
    with a `torch_xla.sync()` each cost 5 uncached compiles, one per length; the same steps
    writing `y` into a preallocated `x` with `x.index_copy_(0, pos, y)` at a position kept
    on the device cost 1, with the same final shape and no device-to-host transfer.
    """

    code = "XLA210"
    name = "growing-tensor-in-loop"
    default_enabled = False
    message = "`{name}` grows every step: each step has a new shape and compiles again"
    hint = (
        "Preallocate to the maximum length and write with `index_copy_`/a static slice, "
        "or use a static KV cache"
    )
    hot_only = True
    needs_torch = True
    triggers = ("cat", "stack", "pack")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._grower_map: dict[str, list[_Grower]] | None = None
        self._reported_joins: set[int] = set()
        self._structural: StructuralLoops | None = None

    def visit_Assign(self, node: cst.Assign) -> None:
        call = _unwrapped(node.value)
        if not isinstance(call, cst.Call):
            return
        qualified = self.ctx.qualified(call.func)
        targets = [t.target for t in node.targets]
        if qualified in _PACKS:
            # `codes, _ = pack([codes, sample], "b *")`: the first target is the join.
            targets = [
                t.elements[0].value
                for t in targets
                if type(t) in (cst.Tuple, cst.List) and t.elements  # type: ignore[attr-defined]
            ]
        elif qualified not in _JOINS:
            return
        joined = self._joined(call)
        if joined is None:
            return
        for target in targets:
            carried = isinstance(target, cst.Name) and self.ctx.in_loop and not self._fixed_passes()
            grown_attribute = isinstance(target, cst.Attribute) or self._kept_item(target)
            if not (carried or grown_attribute):
                continue
            added = [element for element in joined if not _same(target, element)]
            if len(added) == len(joined) or self._on_host(added):
                continue
            loop = self._loop()
            if loop is None or not _bound_afresh(loop, target, node):
                name = self.ctx.module.code_for_node(target)
                self.report(call, self.message.format(name=name))
                return

    def visit_Call(self, node: cst.Call) -> None:
        if (grown := self._grown_through_helper(node)) is not None:
            join, name = grown
            if id(join) not in self._reported_joins:
                self._reported_joins.add(id(join))
                self.report(join, self.message.format(name=name))
            return
        if not self.ctx.in_loop or self.ctx.qualified(node.func) not in _JOINS:
            return
        first = self._first(node)
        if not isinstance(first, cst.Name):
            return
        loop = self._loop()
        growth = _list_growth(loop.body, first.value) if loop is not None else None
        if growth is not None and not self._on_host(_appended(growth)) and not self._fixed_passes():
            message = (
                f"the list `{first.value}` grows every step, and so does the tensor joined "
                "from it: each step has a new shape and compiles again"
            )
            self.report(node, message)

    def _kept_item(self, target: cst.BaseExpression) -> bool:
        """`cache[module]` (or `self.cache[key]`) where the container outlives the call: an
        attribute, or a name the function neither binds nor takes (a closure's dict, as in
        a forward hook filling a KV cache), so each call grows what the last one left."""
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return False
        base = target.value
        if isinstance(base, cst.Attribute):
            return True
        if not isinstance(base, cst.Name):
            return False
        function = next((n for n in self.ctx.ancestors() if isinstance(n, cst.FunctionDef)), None)
        if function is None:
            return False
        return base.value not in _param_names(function) | bound_names(function)

    # -- growth through a helper -----------------------------------------------------------
    def _growers(self) -> dict[str, list[_Grower]]:
        """The module's functions and methods that return a join of one of their
        parameters with something new (`def append_token(xs, x): return torch.cat((xs,
        torch.tensor([x])))`), by name; found once per file."""
        if self._grower_map is None:
            self._grower_map = {}
            for function, is_method in _functions(self.ctx.module):
                signature = signature_of(function, is_method)
                nodes = _own_nodes(function)
                joins = self._returned_joins(function, nodes)
                joins += self._returned_growth(function, nodes)
                for join, params, position in joins:
                    grower = _Grower(signature, params, join, position)
                    self._grower_map.setdefault(function.name.value, []).append(grower)
        return self._grower_map

    def _returned_joins(self, function: cst.FunctionDef, nodes: list[cst.CSTNode]) -> list[_Join]:
        params = _param_names(function)
        # A parameter the body rebinds (`x = torch.tensor([x])`) no longer holds what the
        # caller passed.
        params -= {
            t.value
            for node in nodes
            if type(node) in (cst.Assign, cst.AnnAssign, cst.For)
            for t in _targets(node)
            if isinstance(t, cst.Name)
        }
        found: list[_Join] = []
        for node in nodes:
            if type(node) is not cst.Return or type(node.value) is not cst.Call:
                continue
            call = node.value
            if self.ctx.qualified(call.func) not in _JOINS:
                continue
            joined = self._joined(call)
            if not joined:
                continue
            grown = frozenset(
                e.value for e in joined if isinstance(e, cst.Name) and e.value in params
            )
            added = [e for e in joined if not (isinstance(e, cst.Name) and e.value in grown)]
            if grown and added and not any(_on_host(e) for e in added):
                found.append((call, grown, None))
        return found

    def _returned_growth(self, function: cst.FunctionDef, nodes: list[cst.CSTNode]) -> list[_Join]:
        """`tokens = torch.cat([tokens, next_tokens[:, None]], -1)` on a parameter, the
        function's only binding of it, then `return tokens` or `return tokens, done`: the
        caller gets its argument back one step longer (at that position of the result)."""
        params = _param_names(function)
        # Cheap first: most functions return no parameter of theirs (a call, a new value).
        returned = [n.value for n in nodes if type(n) is cst.Return and n.value is not None]  # type: ignore[attr-defined]
        if not any(_position(value, p) != -1 for value in returned for p in params):
            return []
        bindings: dict[str, list[cst.CSTNode]] = {}
        for node in nodes:
            kind = type(node)
            if kind in _BINDINGS:
                bound = [node.target] if kind is cst.AugAssign else _targets(node)  # type: ignore[attr-defined]
                for t in bound:
                    if type(t) is cst.Name and t.value in params:  # type: ignore[attr-defined]
                        bindings.setdefault(t.value, []).append(node)  # type: ignore[attr-defined]
        found: list[_Join] = []
        for param, nodes_binding in bindings.items():
            if len(nodes_binding) != 1 or not isinstance(nodes_binding[0], cst.Assign):
                continue
            call = nodes_binding[0].value
            if not isinstance(call, cst.Call) or self.ctx.qualified(call.func) not in _JOINS:
                continue
            joined = self._joined(call) or []
            added = [e for e in joined if not (isinstance(e, cst.Name) and e.value == param)]
            if len(added) == len(joined) or not added or any(_on_host(e) for e in added):
                continue
            positions = {_position(value, param) for value in returned}
            if len(positions) == 1 and (position := positions.pop()) != -1:
                found.append((call, frozenset({param}), position))
        return found

    def _grown_through_helper(self, call: cst.Call) -> tuple[cst.Call, str] | None:
        """A call of such a helper whose result replaces the argument it grows: `xs =
        grow(xs, y)` (carried from pass to pass of a loop), or `Hypothesis(yseq=grow(
        hyp.yseq, token))`, a field of one record grown into the same field of the next.
        The join in the helper, and what grows."""
        func = call.func
        if type(func) is cst.Name and self.ctx.qualified(func) is None:
            name = func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            if func.value.value not in ("self", "cls") and self.ctx.qualified(func) is not None:
                return None
            name = func.attr.value
        elif member_method_call(func, self.ctx.module, self.ctx.class_name):
            name = func.attr.value  # `self.decoder.update(...)`: a module class's method
        else:
            return None
        growers = self._growers().get(name)
        if not growers:
            return None
        parent = self.ctx.parent
        for grower in growers:
            bound = bind(call, grower.signature)
            if bound is None:
                continue
            for param in grower.params:
                argument = bound.get(param)
                if argument is None:
                    continue
                if self._replaces(parent, call, argument, grower.position):
                    return grower.join, self.ctx.module.code_for_node(argument)
        return None

    def _replaces(
        self,
        parent: cst.CSTNode | None,
        call: cst.Call,
        argument: cst.BaseExpression,
        position: int | None,
    ) -> bool:
        if isinstance(parent, cst.Assign) and parent.value is call:
            if not self.ctx.in_loop or self._fixed_passes():
                return False
            loop = self._loop()
            targets = [t.target for t in parent.targets]
            if position is not None:
                targets = [
                    t.elements[position].value
                    for t in targets
                    if isinstance(t, cst.Tuple | cst.List) and len(t.elements) > position
                ]
            return any(
                _same(target, argument)
                and (loop is None or not _bound_afresh(loop, target, parent))
                for target in targets
            )
        return (
            position is None
            and isinstance(parent, cst.Arg)
            and parent.keyword is not None
            and isinstance(argument, cst.Attribute)
            and argument.attr.value == parent.keyword.value
        )

    def _loop(self) -> cst.For | cst.While | None:
        """The innermost loop whose pass runs the node being visited, in its function."""
        loops = self.ctx.enclosing_loops
        loop = loops[-1] if loops else None
        return loop if isinstance(loop, cst.For | cst.While) else None

    def _fixed_passes(self) -> bool:
        """The innermost loop runs over the module's structure (`for layer in
        self.layers`) with no barrier, host read or `break` in a pass: the same passes,
        the same shapes, on every call."""
        loop = self._loop()
        if loop is None:
            return False
        if self._structural is None:
            self._structural = StructuralLoops(self.ctx.imports)
        return self._structural.fixed_passes(loop)

    def _on_host(self, added: list[cst.BaseExpression]) -> bool:
        """The tensors joined on are host copies (`y.cpu()`) or made on the host: the
        growing tensor stays on the host too."""
        return bool(added) and all(
            _on_host(element) or self.ctx.kind(element) is Kind.HOST for element in added
        )

    @staticmethod
    def _first(call: cst.Call) -> cst.BaseExpression | None:
        """What a join joins: `torch.cat(xs)`, `torch.cat(tensors=xs)`."""
        arg = positional_argument(call, 0) or keyword_argument(call, "tensors")
        return arg.value if arg is not None else None

    def _joined(self, call: cst.Call) -> list[cst.BaseExpression] | None:
        """The tensors a join takes, when written out as a list or tuple."""
        first = self._first(call)
        if not isinstance(first, cst.List | cst.Tuple):
            return None
        return [e.value for e in first.elements if not isinstance(e, cst.StarredElement)]


@dataclass(frozen=True)
class _Grower:
    """A helper returning `join` of its parameters `params` with something new."""

    signature: Signature
    params: frozenset[str]
    join: cst.Call
    position: int | None = None  # the result's element that is the grown value, if a tuple


# A join in a helper, the parameters it grows, and where the helper's result holds it.
_Join = tuple[cst.Call, frozenset[str], "int | None"]


def _param_names(function: cst.FunctionDef) -> set[str]:
    return {p.name.value for p in parameters(function)}


def _position(value: cst.BaseExpression, name: str) -> int | None:
    """Where a returned value holds `name`: None for `return name`, the index for `return
    name, done`, -1 where it does not (or not alone)."""
    if isinstance(value, cst.Name) and value.value == name:
        return None
    if isinstance(value, cst.Tuple):
        hits = [
            i
            for i, e in enumerate(value.elements)
            if isinstance(e.value, cst.Name) and e.value.value == name
        ]
        if len(hits) == 1 and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            return hits[0]
    return -1


_SCOPES = node_types(cst.FunctionDef, cst.ClassDef, cst.Lambda)
_BINDINGS = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For})


def _functions(module: cst.Module) -> list[tuple[cst.FunctionDef, bool]]:
    """The module's top-level functions and its classes' methods, each with whether its
    callers bind their first argument past `self`/`cls` (not for a `@staticmethod`)."""
    found: list[tuple[cst.FunctionDef, bool]] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(s, False) for s in module.body]
    while stack:
        node, in_class = stack.pop()
        if isinstance(node, cst.ClassDef):
            stack.extend((s, True) for s in node.body.body)
        elif isinstance(node, cst.FunctionDef):
            found.append((node, in_class and not is_staticmethod(node)))
    return found


def _own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The statements of a function, not of definitions nested in it."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) in _SCOPES or type(node) in EXPRESSIONS:
            continue
        found.append(node)
        stack.extend(children(node))
    return found


def _list_growth(body: cst.CSTNode, name: str) -> list[cst.CSTNode] | None:
    """The statements' calls and `+=` by which `body` grows the list `name`
    (`xs.append(y)`, `xs.extend(...)`, `xs += [y]`), or None when it grows nothing or
    starts the list afresh (`xs = []`, or `xs, ys = [], []`, in the body: a list of the
    same length every pass)."""
    growth: list[cst.CSTNode] = []
    for node in descendants(body):
        if type(node) is cst.Assign and any(
            type(t) is cst.Name and t.value == name for t in _targets(node)
        ):
            return None
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in _LIST_GROWTH
            and type(node.func.value) is cst.Name
            and node.func.value.value == name
        ) or (
            type(node) is cst.AugAssign
            and type(node.operator) is cst.AddAssign
            and type(node.target) is cst.Name
            and node.target.value == name
        ):
            growth.append(node)
    return growth or None


def _appended(growth: list[cst.CSTNode]) -> list[cst.BaseExpression]:
    """What a list's growth adds, when every step of it is `xs.append(y)` (else nothing:
    an `extend` or `+=` adds elements this rule does not look into)."""
    added: list[cst.BaseExpression] = []
    for node in growth:
        appends = (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "append"
            and bool(node.args)
        )
        if not appends:
            return []
        added.append(node.args[0].value)
    return added


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The names a binding statement or loop binds (tuples unpacked)."""
    if isinstance(node, cst.Assign):
        found = [t.target for t in node.targets]
    elif isinstance(node, cst.AnnAssign | cst.For):
        found = [node.target]
    else:
        return []
    flat: list[cst.BaseExpression] = []
    while found:
        target = found.pop()
        if type(target) in (cst.Tuple, cst.List):
            found.extend(e.value for e in target.elements)
        else:
            flat.append(target)
    return flat


def _bound_afresh(
    loop: cst.For | cst.While, target: cst.BaseExpression, growth: cst.Assign
) -> bool:
    """Whether each pass of `loop` binds `target` anew (the loop's own target, or an
    assignment in its body other than the growth): then it is not carried from pass to
    pass, and padding it (`t = torch.cat([t, pad])`) does not grow it step after step."""
    if isinstance(loop, cst.For) and any(_same(target, t) for t in _targets(loop)):
        return True
    return any(
        not _extends(node, target)
        and not _derived(node, target)
        and any(_same(target, t) for t in _targets(node))
        for node in descendants(loop.body)
        if node is not growth and type(node) in (cst.Assign, cst.AnnAssign, cst.For)
    )


# Methods whose result keeps every element of the tensor, so the length it has grown to:
# casts and copies, reshapes and reorders, masks and fills, expansions, elementwise maths.
_KEEPS_GROWN_LENGTH = _SHAPE_KEEPING | frozenset(
    {
        *("double", "long", "int", "bool", "type", "type_as", "cuda", "requires_grad_"),
        *("view", "view_as", "reshape", "reshape_as", "flatten", "unsqueeze", "squeeze"),
        *("transpose", "permute", "t", "flip", "roll", "index_select"),
        *("masked_fill", "masked_fill_", "masked_scatter", "where", "fill_", "zero_"),
        *("expand", "expand_as", "repeat", "repeat_interleave"),
        *("clamp", "clamp_", "add", "sub", "mul", "div", "neg", "abs", "exp", "log"),
        *("sigmoid", "tanh", "softmax", "log_softmax"),
    }
)


def _derived(node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """`out = repeat(out, ...)`, `out = out[beam_idx]`, `out = out.masked_fill(m, pad)`:
    an assignment whose value is the target itself, reshaped, reordered or masked, which
    keeps the length it has grown to (the value is carried, not bound anew). A bounded
    slice (`out = out[:, -window:]`) crops it; a method not known to keep every element
    (`out.narrow(1, 1, window)`, a `new_*` method that builds a fresh tensor) may crop or
    replace it: those bind it anew."""
    if not isinstance(node, cst.Assign):
        return False
    value: cst.BaseExpression | None = node.value
    while value is not None and not _same(target, value):
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value not in _KEEPS_GROWN_LENGTH:
                return False
            value = value.func.value
        elif isinstance(value, cst.Call):
            arg = positional_argument(value, 0)
            value = arg.value if arg is not None else None
        elif isinstance(value, cst.Subscript):
            if any(_bounded_slice(e.slice) for e in value.slice):
                return False
            value = value.value
        else:
            return False
    return value is not None


def _bounded_slice(index: cst.BaseSlice) -> bool:
    """`a:b`, `-n:`: a slice that can change the length (not a bare `:`)."""
    return isinstance(index, cst.Slice) and (index.lower is not None or index.upper is not None)


def _extends(node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """`x = torch.cat([x, ...])`-like: an assignment that joins onto the value it replaces
    (another growth of the same tensor, in another branch)."""
    if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call):
        return False
    joined = node.value.args[0].value if node.value.args else None
    return isinstance(joined, cst.List | cst.Tuple) and any(
        _same(target, element.value) for element in joined.elements
    )
