"""Functions of a module that return Python numbers.

A helper such as `def accuracy(logits, y): return float((logits.argmax(-1) == y).mean())`
reads its tensor on the host itself (that read is its own finding); what it hands back is a
number. Without knowing that, `acc = accuracy(logits, y)` stays unknown, and `loss =
reduce(loss)` (a helper returning `loss.item()`) would keep `loss` a tensor, so that every
later print or comparison of the number is reported as a device read.

The answer is syntactic and per module: every `return` of every definition of the name
returns a number (a numeric literal, `float(...)`/`int(...)`/`round(...)`/`len(...)`,
`.item()`/`.tolist()`, arithmetic on those, a tuple of those, or a local name only ever
assigned such values).
"""

from __future__ import annotations

from collections.abc import Container

import libcst as cst

from xlalint.analysis import tensor_methods
from xlalint.analysis.arguments import parameters
from xlalint.walk import EXPRESSIONS, binding_counts, code_children, target_names

_NUMBER_BUILTINS = frozenset({"float", "int", "round", "len", "bool", "abs"})
_NUMBER_METHODS = frozenset({"item", "tolist", "numel", "dim", "nelement", "element_size"})
# Exact types in the walks below: libcst's node classes are final, and `isinstance` on them
# runs ABCMeta's check in Python.
_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def _walk_body(function: cst.FunctionDef, expressions: bool = True) -> list[cst.CSTNode]:
    """Statements and expressions of a function, not of definitions nested in it (without
    `expressions`: its statements only, which is where every `return` is)."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) in _SCOPES or (not expressions and type(node) in EXPRESSIONS):
            continue
        found.append(node)
        stack.extend(code_children(node))
    return found


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What a function's `return` statements hand back (not those of nested definitions),
    a returned tuple's elements one by one: `return train_dl, val_dl` -> both."""
    found: list[cst.BaseExpression] = []
    for node in _walk_body(function):
        if isinstance(node, cst.Return) and node.value is not None:
            value = node.value
            if isinstance(value, cst.Tuple | cst.List):
                found.extend(
                    e.value for e in value.elements if not isinstance(e, cst.StarredElement)
                )
            else:
                found.append(value)
    return found


class _AnyName:
    """Stands for "every local name holds a number": what a return needs at best."""

    def __contains__(self, name: object) -> bool:
        return True


def _annotated_a_tensor(function: cst.FunctionDef) -> bool:
    """`def probability(self, a, b) -> th.Tensor`: the function says it returns a tensor,
    whatever its arithmetic looks like (`noise * 0.5 + (1 - noise) * model_probability`);
    so does `-> Tensor | tuple[Tensor, Tensor]` (an ODE step returning `x_next, abs(x_next
    - x_star)` with an error flag), every alternative tensors."""
    from xlalint.analysis.tensors import annotates_tensors  # (tensors.py imports this)

    annotation = function.returns
    return annotation is not None and annotates_tensors(annotation.annotation)


def _returns_numbers(function: cst.FunctionDef) -> bool:
    if _annotated_a_tensor(function):
        return False
    # Most functions return something that is no number whatever their names hold (a
    # call, a dict): their statements tell, without reading every expression.
    returns = [
        n.value
        for n in _walk_body(function, expressions=False)
        if type(n) is cst.Return and n.value is not None  # type: ignore[attr-defined]
    ]
    if not returns or not all(_is_number(value, _AnyName()) for value in returns):
        return False
    nodes = _walk_body(function)
    if any(type(n) is cst.Yield or type(n) is cst.Await for n in nodes):
        return False
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for node in nodes:
        if type(node) is cst.Assign:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    assigned.setdefault(target.target.value, []).append(node.value)
                else:
                    for name in target_names(target.target):
                        assigned.setdefault(name, []).append(cst.Name("__unknown__"))
        elif type(node) in (cst.AugAssign, cst.AnnAssign) and type(node.target) is cst.Name:
            value = node.value if node.value is not None else cst.Name("__unknown__")
            assigned.setdefault(node.target.value, []).append(value)
        elif type(node) in (cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr):
            target = node.asname.name if isinstance(node, cst.WithItem) and node.asname else None
            target = (
                node.target if isinstance(node, cst.For | cst.CompFor | cst.NamedExpr) else target
            )
            for name in target_names(target) if target is not None else ():
                assigned.setdefault(name, []).append(cst.Name("__unknown__"))
    numbers: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in assigned.items():
            if name not in numbers and all(_is_number(v, numbers) for v in values):
                numbers.add(name)
                changed = True
    return all(_is_number(value, numbers) for value in returns)


def _is_number(node: cst.BaseExpression, numbers: Container[str]) -> bool:
    if type(node) in (cst.Integer, cst.Float):
        return True
    if isinstance(node, cst.Name):
        return node.value in numbers
    if isinstance(node, cst.UnaryOperation):
        return _is_number(node.expression, numbers)
    if isinstance(node, cst.BinaryOperation):
        # `loss.item() / world_size`: a number scaled by a plain name or attribute (a
        # count, a size) is a number; `x.item() * weights` where `weights` is a tensor
        # would not be, which a helper that has just read a number rarely does.
        left, right = node.left, node.right
        return (_is_number(left, numbers) and _is_number_or_name(right, numbers)) or (
            _is_number(right, numbers) and _is_number_or_name(left, numbers)
        )
    if isinstance(node, cst.Tuple) and node.elements:
        return all(_is_number(e.value, numbers) for e in node.elements)
    if isinstance(node, cst.ListComp):
        # `[float(correct[:k].sum()) for k in topk]`: numbers, one per item.
        return _is_number(node.elt, numbers)
    if isinstance(node, cst.IfExp):
        return _is_number(node.body, numbers) and _is_number(node.orelse, numbers)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name):
            return func.value in _NUMBER_BUILTINS
        if isinstance(func, cst.Attribute):
            return func.attr.value in _NUMBER_METHODS
    return False


def _is_number_or_name(node: cst.BaseExpression, numbers: Container[str]) -> bool:
    return isinstance(node, cst.Name | cst.Attribute) or _is_number(node, numbers)


class NumberReturns:
    """Which functions and methods of a module return Python numbers, by name.

    The module's definitions are indexed by name on the first question; a name's bodies
    are read only when it is asked about (most definitions of a module never are)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._functions: dict[str, list[cst.FunctionDef]] | None = None
        self._methods: dict[str, list[cst.FunctionDef]] | None = None
        self._answers: dict[tuple[bool, str], bool] = {}
        self._derived: dict[tuple[str, str], dict[int | None, frozenset[str]]] = {}
        self._host: dict[tuple[bool, str], frozenset[int]] = {}  # `host_positions`
        # `uncomputed_positions`
        self._kept: dict[tuple[bool, str], tuple[frozenset[int], frozenset[int]]] = {}

    def _scan(self) -> None:
        functions: dict[str, list[cst.FunctionDef]] = {}
        methods: dict[str, list[cst.FunctionDef]] = {}
        stack: list[tuple[cst.CSTNode, bool]] = [(self.module, False)]
        while stack:
            node, in_class = stack.pop()
            if type(node) is cst.FunctionDef:
                table = methods if in_class else functions
                table.setdefault(node.name.value, []).append(node)
                stack.extend((child, False) for child in code_children(node.body))
            elif type(node) is cst.ClassDef:
                stack.extend((child, True) for child in code_children(node.body))
            elif type(node) is cst.IndentedBlock and in_class:
                stack.extend((child, True) for child in code_children(node))
            elif type(node) not in EXPRESSIONS and type(node) is not cst.SimpleStatementLine:
                stack.extend((child, False) for child in code_children(node))
        self._functions, self._methods = functions, methods

    def _every_definition(self, method: bool, name: str) -> bool:
        key = (method, name)
        if key not in self._answers:
            definitions = self.definitions(method, name)
            self._answers[key] = bool(definitions) and all(map(_returns_numbers, definitions))
        return self._answers[key]

    def function(self, name: str) -> bool:
        """Every function of this name (not a method) returns a Python number."""
        return self._every_definition(False, name)

    def method(self, name: str) -> bool:
        """Every method of this name in this module's classes returns a Python number."""
        return self._every_definition(True, name)

    def host_positions(self, method: bool, name: str) -> frozenset[int]:
        """The positions of the returned tuple where every definition of the name (among
        methods, or functions) hands back a host value on every `return`
        (`_host_positions`): `env_step` returning `obs, torch.from_numpy(rewards),
        torch.from_numpy(dones), infos` on one path and `obs, rewards.cpu(), dones.cpu(),
        infos` on the other -> {1, 2}."""
        definitions = self.definitions(method, name)
        if not definitions:
            return frozenset()
        key = (method, name)
        if key not in self._host:
            found = [_host_positions(d) for d in definitions]
            widths = {width for width, _ in found}
            self._host[key] = (
                frozenset.intersection(*(p for _, p in found)) if len(widths) == 1 else frozenset()
            )
        return self._host[key]

    def uncomputed_positions(
        self, method: bool, name: str
    ) -> tuple[frozenset[int], frozenset[int]]:
        """The positions of the returned tuple where every definition of the name hands
        back, on every `return`, a host value (`host_positions`, the first set), or a host
        value or a value it was handed unchanged (the second: `_handed_positions`, `return
        preds.cpu(), _targets` after `input_texts, targets = batch; _targets = targets`):
        nothing the callee computed on the device is pending in them."""
        definitions = self.definitions(method, name)
        if not definitions:
            return frozenset(), frozenset()
        key = (method, name)
        if key not in self._kept:
            found = [_host_positions(d) for d in definitions]
            widths = {width for width, _ in found}
            if len(widths) != 1 or None in widths:
                self._kept[key] = frozenset(), frozenset()
            else:
                handed = [_handed_positions(d) for d in definitions]
                host = frozenset.intersection(*(p for _, p in found))
                kept = frozenset.intersection(
                    *(p | h for (_, p), h in zip(found, handed, strict=True))
                )
                self._kept[key] = host, kept
        return self._kept[key]

    def definitions(self, method: bool, name: str) -> list[cst.FunctionDef]:
        """Every definition of the name among the module's methods, or its functions."""
        if self._functions is None:
            self._scan()
        table = self._methods if method else self._functions
        assert table is not None
        return table.get(name) or []

    def derived(self, name: str) -> tuple[cst.FunctionDef, dict[int | None, frozenset[str]]] | None:
        """The one module-level function of this name, and what each position of its
        result is computed from (`_derived_returns`), where it computes any from its
        parameters."""
        if self._functions is None:
            self._scan()
        assert self._functions is not None
        definitions = self._functions.get(name)
        if not definitions or len(definitions) != 1:
            return None
        key = ("derived", name)
        if key not in self._derived:
            self._derived[key] = _derived_returns(definitions[0])
        found = self._derived[key]
        return (definitions[0], found) if found else None


# Tensor methods whose result is a tensor computed from the receiver (elementwise maths,
# reductions, casts): a helper returning `sigma.log()` hands back a tensor for a tensor.
_TENSOR_MATH_METHODS = (
    tensor_methods.UNARY_MATH
    | tensor_methods.BOUNDS
    | tensor_methods.REDUCTIONS
    | tensor_methods.FLOAT_CASTS
    | tensor_methods.COMPARISONS
    | tensor_methods.PREDICATES
    | {"lerp"}
)
_MATH_BUILTINS = frozenset({"min", "max", "abs"})
# The usual spellings of the torch module, whose maths functions mirror the methods.
_TORCH_NAMES = frozenset({"torch", "th"})


def _derived_from(
    node: cst.BaseExpression, env: dict[str, frozenset[str]]
) -> frozenset[str] | None:
    """The parameters `node` computes its value from by arithmetic, comparisons, `min`/
    `max`/`abs` and tensor maths (`env`: what each known name derives from; a number
    derives from none), or None where it is anything else (a call, an attribute, a shape)."""
    if isinstance(node, cst.Integer | cst.Float):
        return frozenset()
    if isinstance(node, cst.Name):
        return env.get(node.value)
    if isinstance(node, cst.UnaryOperation):
        return _derived_from(node.expression, env)
    if isinstance(node, cst.BinaryOperation):
        parts = [_derived_from(node.left, env), _derived_from(node.right, env)]
    elif isinstance(node, cst.Comparison):
        parts = [_derived_from(node.left, env)]
        parts += [_derived_from(c.comparator, env) for c in node.comparisons]
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        if node.func.value not in _MATH_BUILTINS or not node.args:
            return None
        parts = [_derived_from(a.value, env) for a in node.args if a.keyword is None]
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value not in _TENSOR_MATH_METHODS:
            return None
        owner = node.func.value
        if isinstance(owner, cst.Name) and owner.value in _TORCH_NAMES:
            # `torch.any(eos_mask, dim=-1)`: the same maths as a function of torch, computed
            # from its tensor arguments (its keywords are options).
            parts = [_derived_from(a.value, env) for a in node.args if a.keyword is None]
            if not parts:
                return None
        else:
            parts = [_derived_from(owner, env)]
    else:
        return None
    if any(part is None for part in parts):
        return None
    return frozenset().union(*parts)  # type: ignore[arg-type]


def _derived_returns(function: cst.FunctionDef) -> dict[int | None, frozenset[str]]:
    """For each position of what a function returns (None: the whole value, an int: an
    element of the returned tuple), the parameters it is computed from, where every
    `return` computes it so (or returns a number there) and some `return` uses one:
    `get_ancestral_step(sigma_from, sigma_to)` returning `sigma_to, 0.` or `sigma_down,
    sigma_up` (both arithmetic of the two) -> {0: {sigma_from, sigma_to}, ...}."""
    names = [p.name.value for p in parameters(function)]
    env: dict[str, frozenset[str]] = {name: frozenset({name}) for name in names}
    nodes = _walk_body(function, expressions=False)
    if any(type(n) is cst.Yield for n in _walk_body(function)):
        return {}
    # Locals bound once, by a plain assignment; any other binding of a name (a loop target,
    # an augmented or a second assignment, `with ... as`) makes it unknown.
    bindings = binding_counts(function)
    for name in bindings:
        env.pop(name, None)  # a parameter rebound no longer holds the caller's value
    assigned = {
        node.targets[0].target.value: node.value
        for node in nodes
        if isinstance(node, cst.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0].target, cst.Name)
        and bindings.get(node.targets[0].target.value) == 1
        and node.targets[0].target.value not in names
    }
    changed = True
    while changed:  # the walk is not in statement order: settle the locals together
        changed = False
        for name, value in assigned.items():
            if name not in env and (derived := _derived_from(value, env)) is not None:
                env[name] = derived
                changed = True
    returns = [n.value for n in nodes if isinstance(n, cst.Return)]
    if not returns or any(value is None for value in returns):
        return {}
    shapes = {len(v.elements) if isinstance(v, cst.Tuple) else None for v in returns}  # type: ignore[union-attr]
    if len(shapes) != 1:
        return {}
    width = shapes.pop()
    positions: list[int | None] = [None] if width is None else list(range(width))
    found: dict[int | None, frozenset[str]] = {}
    for position in positions:
        parts = []
        for value in returns:
            assert value is not None
            element = value if position is None else value.elements[position].value  # type: ignore[union-attr]
            parts.append(_derived_from(element, env))
        if all(part is not None for part in parts):
            used = frozenset().union(*parts)  # type: ignore[arg-type]
            if used:
                found[position] = used
    return found


# Calls whose result lives on the host: a tensor wrapping a NumPy array, a host copy.
_HOST_FUNCTIONS = frozenset({"from_numpy"})
_HOST_METHODS = frozenset({"cpu", "numpy"})


def _host_value(node: cst.BaseExpression) -> bool:
    """`torch.from_numpy(rewards)`, `dones.cpu()`, a number: a value on the host whatever
    the code around it holds."""
    if _is_number(node, ()):
        return True
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _HOST_METHODS and not node.args:
        return True
    name = func.attr.value if isinstance(func, cst.Attribute) else None
    if isinstance(func, cst.Name):
        name = func.value
    return name in _HOST_FUNCTIONS


def _host_positions(function: cst.FunctionDef) -> tuple[int | None, frozenset[int]]:
    """The width of the tuple every `return` of `function` hands back (None where they
    differ or return anything else), and the positions where each of them returns a host
    value (`_host_value`); none in a generator."""
    nodes = _walk_body(function, expressions=False)
    returns = [n.value for n in nodes if isinstance(n, cst.Return)]
    if not returns or any(not isinstance(v, cst.Tuple) for v in returns):
        return None, frozenset()
    if any(type(n) is cst.Yield for n in _walk_body(function)):
        return None, frozenset()
    tuples: list[cst.Tuple] = returns  # type: ignore[assignment]
    widths = {len(v.elements) for v in tuples}
    if len(widths) != 1 or any(
        isinstance(e, cst.StarredElement) for v in tuples for e in v.elements
    ):
        return None, frozenset()
    width = widths.pop()
    return width, frozenset(
        i for i in range(width) if all(_host_value(v.elements[i].value) for v in tuples)
    )


def _handed_positions(function: cst.FunctionDef) -> frozenset[int]:
    """The positions of the tuple every `return` of `function` hands back where it returns
    a value its caller handed it, unchanged: a parameter it never rebinds, or a local bound
    once, in the function's own top-level statements, to a parameter or to an element
    unpacked from one (`input_texts, targets = batch; _targets = targets`), read as the
    statements run (a later `targets = targets.to(device)` leaves `_targets` alone)."""
    returns = [n.value for n in _walk_body(function, expressions=False) if type(n) is cst.Return]
    if not returns or any(type(v) is not cst.Tuple for v in returns):
        return frozenset()
    counts = binding_counts(function)
    params = {p.name.value for p in parameters(function)}
    handed = set(params)
    for statement in function.body.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) is not cst.Assign or len(small.targets) != 1:
                continue
            target, value = small.targets[0].target, small.value
            if type(value) is not cst.Name or value.value not in handed:
                handed -= target_names(target)
            elif type(target) is cst.Name or (
                type(target) in (cst.Tuple, cst.List)
                and all(type(e.value) is cst.Name for e in target.elements)  # type: ignore[attr-defined]
            ):
                handed |= target_names(target)
    # A parameter bound nowhere in the body, a local bound only by that one statement.
    handed = {name for name in handed if counts.get(name, 0) == (name not in params)}
    tuples: list[cst.Tuple] = returns  # type: ignore[assignment]
    width = len(tuples[0].elements)
    if any(len(v.elements) != width for v in tuples):
        return frozenset()
    return frozenset(
        i
        for i in range(width)
        if all(
            type(v.elements[i].value) is cst.Name and v.elements[i].value.value in handed  # type: ignore[attr-defined]
            for v in tuples
        )
    )
