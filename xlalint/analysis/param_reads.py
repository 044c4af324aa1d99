"""Parameters a function reads on the host, from its CPython tree: a per-function summary.

A per-step call that hands a device tensor to a helper pays the helper's host read every
step, wherever the helper lives: `asdict_as_float(loss)`, `to_numpy(loss)` (`t.cpu().
detach().numpy()`), `alignment_diagonal_score(outputs["alignments"])` ending in
`maxs.mean(dim=1).mean(dim=0).item()` with `maxs = alignments.max(dim=1)[0]`,
This module says, for one function, which of its parameters such a read reaches: the parameter
itself or a value computed from it on the device (its methods other than shape reads,
its rows, `torch.*` functions of it, arithmetic with it, locals bound to those), read by
`float()`, `int()`, `math.*()`, `.item()` (a value: XLA101) or `.cpu()`, `.numpy()`,
`.tolist()`, `.to("cpu")` (a copy: XLA102), also through one more call of its module that
it hands the value to (`hands`, resolved by `module_reads.py`). Not a read: one under a
type test that makes the parameter a Python value (`if isinstance(x, numbers.Number):`,
the `else` of `if torch.is_tensor(x):`), and reads of a parameter the function rebinds
to something not computed from it. Nor is a check, a read in the test of an `assert`,
`if`, `while` or conditional expression (`convert_to_one_hot(target, n)` asserting
`torch.max(targets).item() < n`): the helper judges its input for itself, and where it
runs every step its own file reports the read (`module_callers.py` makes it hot there),
once, whichever of its callers hands the value.

Only CPython's `ast`: the summary is made once per module path and stat
(`module_reads.py`), never by importing or running the code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from xlalint import ast_nodes
from xlalint.analysis.project_modules import dotted_name
from xlalint.analysis.tensor_members import HOST_METHODS

Function = ast.FunctionDef | ast.AsyncFunctionDef

# Methods that read a tensor's metadata (host values), not its data (`tensor_members.py`).
_SAME_DATA_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "real", "imag"})
_SHAPE_METHODS = HOST_METHODS
# Reads: a Python value (XLA101) or a host copy (XLA102).
VALUE_BUILTINS = frozenset({"float", "int"})
_VALUE_METHODS = frozenset({"item"})
_COPY_METHODS = frozenset({"cpu", "numpy", "tolist"})
_TENSOR_MODULES = frozenset({"torch", "F", "nn"})
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SKIPPED = (*_NESTED, ast.For, ast.AsyncFor, ast.While)


@dataclass(frozen=True)
class Read:
    """A host read of a parameter: where, as spelled in a message, and the rule's code."""

    line: int
    spelled: str  # `float()`, `.item()`, `math.exp()`, `.cpu()`
    code: str  # "XLA101" (a Python value) or "XLA102" (a host copy)
    # Parameters the read happens without (`if dim_size is None: dim_size = int(i.max())`):
    # a call that passes one of them does not make it.
    unless: tuple[str, ...] = ()


@dataclass(frozen=True)
class Handed:
    """A call the function makes handing on values computed from its parameters: the
    callee as spelled (`to_numpy`, `utils.to_numpy`) and, per argument position (an int)
    or keyword (a str), the parameter it carries."""

    callee: str
    arguments: tuple[tuple[int | str, str], ...]


@dataclass(frozen=True)
class Summary:
    """One function: its parameters as a caller binds them, what it reads of them itself,
    and the calls it hands them to."""

    name: str
    positional: tuple[str, ...]  # `self`/`cls` dropped for a method called on an instance
    keyword_only: tuple[str, ...]
    reads: tuple[tuple[str, Read], ...]  # parameter -> its first read
    hands: tuple[Handed, ...]
    star: bool  # takes `*args`: positions past `positional` bind nothing known
    bound: bool  # a method whose first parameter (`self`, `cls`) the call does not pass
    only_parameters: bool  # every host read it makes is of a parameter: a conversion helper
    # The parameters whose device data every `return` hands back (`returned`): the result
    # is a device tensor where a call hands one of them a device tensor.
    returns: tuple[str, ...] = ()

    def read_of(self, parameter: str) -> Read | None:
        for name, read in self.reads:
            if name == parameter:
                return read
        return None

    def parameter_at(self, position: int | str) -> str | None:
        """The parameter an argument binds (a position or a keyword)."""
        if isinstance(position, str):
            known = position in self.positional or position in self.keyword_only
            return position if known else None
        return self.positional[position] if position < len(self.positional) else None


def summarize(node: Function, method: bool) -> Summary | None:
    """The function's summary; None when it reads none of its parameters and hands none on
    (most functions: nothing is kept for them)."""
    args = node.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    if method and not static and positional:
        positional = positional[1:]
    keyword_only = [a.arg for a in args.kwonlyargs]
    params = frozenset(positional) | frozenset(keyword_only)
    if not params:
        return None
    nodes = _body_nodes(node)  # one walk of the body for the three questions below
    carriers, rebound = _carriers(nodes, params)
    if not carriers:
        return None

    def reaching(value: ast.expr, call: ast.Call, hosts: frozenset[str]) -> frozenset[str]:
        """The parameters `value` carries at `call`: not rebound before it, not proved
        Python values there."""
        found = _carried(value, carriers) - hosts
        return frozenset(p for p in found if rebound.get(p, call.lineno) >= call.lineno)

    reads: dict[str, Read] = {}
    hands: list[Handed] = []
    only_parameters = True
    checks = _in_tests(nodes)
    for call, hosts, unless in _calls(node, nodes, params):
        read = _read(call)
        if read is not None and id(call) in checks:
            # `assert torch.max(targets).item() < n`: the helper checks its input for
            # itself; the read is its own, reported in its file where it runs every step.
            only_parameters = False
            continue
        if read is not None:
            spelled, code, value = read
            carried = reaching(value, call, hosts)
            only_parameters = only_parameters and bool(carried)
            for param in sorted(carried):
                found = reads.get(param)
                if found is None or call.lineno < found.line:
                    reads[param] = Read(call.lineno, spelled, code, tuple(sorted(unless)))
            continue
        if unless:
            continue  # handed on only without a parameter the caller may pass
        callee = project_dotted(call.func)
        if callee is None:
            continue
        arguments: list[tuple[int | str, str]] = []
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            for param in sorted(reaching(arg, call, hosts)):
                arguments.append((position, param))
        for keyword in call.keywords:
            if keyword.arg is not None:
                for param in sorted(reaching(keyword.value, call, hosts)):
                    arguments.append((keyword.arg, param))
        if arguments:
            hands.append(Handed(callee, tuple(arguments)))
    returns = returned(nodes, carriers, rebound)
    if not reads and not hands and not returns:
        return None
    return Summary(
        node.name,
        tuple(positional),
        tuple(keyword_only),
        tuple(sorted(reads.items())),
        tuple(hands),
        args.vararg is not None,
        method and not static,
        only_parameters,
        tuple(sorted(returns)),
    )


def returned(
    nodes: list[ast.AST], carriers: dict[str, frozenset[str]], rebound: dict[str, int]
) -> frozenset[str]:
    """The parameters whose device data the function's result holds: every `return`
    hands back a value computed from one on the device (`_carried`, or a comparison of
    such values: `return torch.any(torch.isnan(t))`, `return (labels < 0).any()`), not
    past a rebinding of it; empty where any `return` hands back something else (a Python
    number, `.item()`, a host copy, a bare `return`) or the function is a generator."""
    found: set[str] = set()
    returns = 0
    for child in nodes:
        if isinstance(child, ast.Yield | ast.YieldFrom):
            return frozenset()
        if not isinstance(child, ast.Return):
            continue
        returns += 1
        if child.value is None:
            return frozenset()
        carried = set(_result_carries(child.value, carriers))
        line = child.lineno
        carried = {p for p in carried if rebound.get(p, line) >= line}
        if not carried:
            return frozenset()
        found |= carried
    return frozenset(found) if returns else frozenset()


def project_dotted(func: ast.expr) -> str | None:
    """`f`, `mod.f`, `Cls.m`: a call that may run a function of a project module (not a
    method of a value: `x.sum()` has a lower-case receiver that is no import... which the
    resolver decides; here only the spelling)."""
    spelled = dotted_name(func)
    if spelled is None or spelled.split(".", 1)[0] in ("self", "cls"):
        return None
    return spelled


def _read(call: ast.Call) -> tuple[str, str, ast.expr] | None:
    """`float(v)`, `math.exp(v)`, `v.item()`, `v.cpu()`, `v.to("cpu")`: (spelled, code,
    the value read)."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in VALUE_BUILTINS and len(call.args) == 1 and not call.keywords:
            arg = call.args[0]
            return (f"{func.id}()", "XLA101", arg) if not isinstance(arg, ast.Starred) else None
        return None
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "math" and call.args:
        arg = call.args[0]
        return (f"math.{func.attr}()", "XLA101", arg) if not isinstance(arg, ast.Starred) else None
    if call.args or call.keywords:
        if func.attr == "to" and _to_cpu(call):
            return '.to("cpu")', "XLA102", func.value
        return None
    if func.attr in _VALUE_METHODS:
        return f".{func.attr}()", "XLA101", func.value
    if func.attr in _COPY_METHODS:
        return f".{func.attr}()", "XLA102", func.value
    return None


def _to_cpu(call: ast.Call) -> bool:
    values = [*call.args, *(k.value for k in call.keywords if k.arg == "device")]
    return len(values) == 1 and isinstance(values[0], ast.Constant) and values[0].value == "cpu"


def _carriers(
    nodes: list[ast.AST], params: frozenset[str]
) -> tuple[dict[str, frozenset[str]], dict[str, int]]:
    """Names of the function that hold a parameter's device data, each with the
    parameters it carries: every parameter, and every local bound to a value computed
    from one (to a fixpoint: a local bound twice carries what either binding carries);
    and the first line where the function rebinds a parameter to something else (`x =
    Batch(x)`): reads after it read that, not what the caller handed."""
    bindings: list[tuple[ast.expr, ast.expr | None]] = []  # (target, value; None: unknown)
    for child in nodes:
        if isinstance(child, ast.Assign):
            bindings.extend((t, child.value) for t in child.targets)
        elif isinstance(child, ast.AnnAssign | ast.AugAssign) and child.value is not None:
            bindings.append((child.target, child.value))
        elif isinstance(child, ast.For | ast.AsyncFor | ast.comprehension):
            bindings.append((child.target, child.iter))
        elif isinstance(child, ast.NamedExpr):
            bindings.append((child.target, child.value))
        elif isinstance(child, ast.With | ast.AsyncWith):
            bindings.extend((i.optional_vars, None) for i in child.items if i.optional_vars)
    carriers: dict[str, frozenset[str]] = {p: frozenset({p}) for p in params}
    rebound: dict[str, int] = {}
    for target, value in bindings:
        for name in _target_names(target):
            if name in params and (value is None or name not in _carried(value, carriers)):
                line = getattr(target, "lineno", 0)
                rebound[name] = min(rebound.get(name, line), line)
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if value is None:
                continue
            carried = _carried(value, carriers)
            if not carried:
                continue
            for name in _target_names(target):
                if name in rebound:
                    continue
                known = carriers.get(name, frozenset())
                if not carried <= known:
                    carriers[name] = known | carried
                    changed = True
    return carriers, rebound


def _carried(expr: ast.expr, carriers: dict[str, frozenset[str]]) -> frozenset[str]:
    """The parameters whose device data `expr`'s value holds."""
    if isinstance(expr, ast.Name):
        return carriers.get(expr.id, frozenset())
    if isinstance(expr, ast.Attribute):
        if expr.attr in _SAME_DATA_ATTRIBUTES:
            return _carried(expr.value, carriers)
        return frozenset()  # metadata, or a field of some object
    if isinstance(expr, ast.Subscript):
        return _carried(expr.value, carriers)
    if isinstance(expr, ast.BinOp):
        return _carried(expr.left, carriers) | _carried(expr.right, carriers)
    if isinstance(expr, ast.UnaryOp):
        return frozenset() if isinstance(expr.op, ast.Not) else _carried(expr.operand, carriers)
    if isinstance(expr, ast.IfExp):
        return _carried(expr.body, carriers) | _carried(expr.orelse, carriers)
    if isinstance(expr, ast.Call):
        func = expr.func
        if not isinstance(func, ast.Attribute):
            return frozenset()  # a builtin or a function: `len(x)` is a host value
        if func.attr in _SHAPE_METHODS or func.attr in _VALUE_METHODS | _COPY_METHODS:
            return frozenset()
        if func.attr == "to" and _to_cpu(expr):
            return frozenset()
        receiver = _carried(func.value, carriers)
        if receiver:
            return receiver
        head = project_dotted(func.value)
        if head is not None and head.split(".", 1)[0] in _TENSOR_MODULES:
            found: frozenset[str] = frozenset()
            for arg in expr.args:
                if not isinstance(arg, ast.Starred):
                    found |= _carried(arg, carriers)
            return found
    return frozenset()


def _result_carries(expr: ast.expr, carriers: dict[str, frozenset[str]]) -> frozenset[str]:
    """`_carried`, through comparisons too (`(labels < 0).any()`, `x == y`): a result
    handed back, not a value read, so a comparison's device bool counts."""
    if isinstance(expr, ast.Compare):
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in expr.ops):
            return frozenset()  # `x is None`: a Python bool whatever `x` holds
        found: frozenset[str] = frozenset()
        for part in (expr.left, *expr.comparators):
            found |= _result_carries(part, carriers)
        return found
    if isinstance(expr, ast.IfExp):
        # `x if isinstance(x, float) else float(x)`: a device tensor only where each branch
        # hands one back.
        body, orelse = _result_carries(expr.body, carriers), _result_carries(expr.orelse, carriers)
        return body | orelse if body and orelse else frozenset()
    carried = _carried(expr, carriers)
    if carried or not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return carried
    method = expr.func.attr
    if method in _SHAPE_METHODS or method in _VALUE_METHODS | _COPY_METHODS:
        return frozenset()
    if isinstance(expr.func.value, ast.Compare):
        return _result_carries(expr.func.value, carriers)  # `(labels < 0).any()`
    return frozenset()


_Call = tuple[ast.Call, frozenset[str], frozenset[str]]


def _calls(node: Function, nodes: list[ast.AST], params: frozenset[str]) -> list[_Call]:
    """The calls one call of the function makes once (not in its `for`/`while` loops,
    whose passes its own module judges, nor in functions, lambdas or classes it defines,
    nor in branches for another device: `if mps: x = x.cpu()`), each with the parameters
    a type test around it proves to be Python values there (also after an `if
    isinstance(x, torch.Tensor): return ...`), and those it is made only without (`if q
    is None:`, or after `if q is not None: return q`)."""
    found: list[_Call] = []
    flags = frozenset(
        name
        for child in nodes
        if isinstance(child, ast.Assign) and _names_a_device(child.value)
        for target in child.targets
        for name in _target_names(target)
    )
    _block(node.body, frozenset(), frozenset(), (params, flags), found)
    return found


def _block(
    statements: list[ast.stmt],
    hosts: frozenset[str],
    unless: frozenset[str],
    scope: tuple[frozenset[str], frozenset[str]],
    found: list[_Call],
) -> None:
    params, flags = scope
    for statement in statements:
        if isinstance(statement, _SKIPPED):
            continue
        if isinstance(statement, ast.If):
            test = statement.test
            on_true, on_false = _host_tests(test)
            none_true, none_false = _tested_none(test, params)
            _expression(test, hosts, unless, found)
            device = _names_a_device(test) or any(
                isinstance(n, ast.Name) and n.id in flags for n in ast_nodes.walk(test)
            )
            if not device:  # a branch for a CUDA, MPS or CPU device does not run on XLA
                _block(statement.body, hosts | on_true, unless | none_true, scope, found)
            _block(statement.orelse, hosts | on_false, unless | none_false, scope, found)
            if statement.body and isinstance(statement.body[-1], ast.Return | ast.Raise):
                hosts = hosts | on_false  # what follows runs where the test failed
                unless = unless | none_false
            continue
        blocks = [
            getattr(statement, field)
            for field in ("body", "orelse", "finalbody")
            if isinstance(getattr(statement, field, None), list)
        ]
        for child in ast_nodes.child_nodes(statement):
            if isinstance(child, ast.expr):
                _expression(child, hosts, unless, found)
            elif isinstance(child, ast.ExceptHandler):
                _block(child.body, hosts, unless, scope, found)
            elif isinstance(child, ast.withitem):
                _expression(child.context_expr, hosts, unless, found)
        for block in blocks:
            _block(block, hosts, unless, scope, found)


_DEVICE_TYPES = frozenset({"cpu", "cuda", "mps"})
_DEVICE_ATTRIBUTES = frozenset({"is_cuda", "is_mps", "is_cpu"})


def _names_a_device(expr: ast.expr) -> bool:
    """`"mps" in x.device.type`, `x.is_cuda`, `torch.cuda.is_available()`: a test of which
    device the value is on, whose branch is another device's (on XLA it is neither)."""
    for node in ast_nodes.walk(expr):
        if isinstance(node, ast.Constant) and node.value in _DEVICE_TYPES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _DEVICE_ATTRIBUTES:
            return True
        if isinstance(node, ast.Attribute) and (project_dotted(node) or "").startswith(
            ("torch.cuda.", "torch.backends.mps.")
        ):
            return True
    return False


def _expression(
    expr: ast.expr, hosts: frozenset[str], unless: frozenset[str], found: list[_Call]
) -> None:
    stack: list[tuple[ast.AST, frozenset[str]]] = [(expr, hosts)]
    while stack:
        current, held = stack.pop()
        if isinstance(current, _NESTED):
            continue
        if isinstance(current, ast.IfExp):
            on_true, on_false = _host_tests(current.test)
            stack.extend(
                (
                    (current.test, held),
                    (current.body, held | on_true),
                    (current.orelse, held | on_false),
                )
            )
            continue
        if isinstance(current, ast.Call):
            found.append((current, held, unless))
        stack.extend((child, held) for child in ast_nodes.child_nodes(current))


def _tested_none(test: ast.expr, params: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """`q is None` of a parameter `q`: its branch runs only where the caller left `q` out;
    `q is not None`: its other branch does."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is | ast.IsNot)
        and isinstance(test.left, ast.Name)
        and test.left.id in params
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        missing = frozenset({test.left.id})
        return (missing, frozenset()) if isinstance(test.ops[0], ast.Is) else (frozenset(), missing)
    return frozenset(), frozenset()


def _host_tests(test: ast.expr) -> tuple[frozenset[str], frozenset[str]]:
    """The parameters a test proves host values where it holds, and where it fails:
    `isinstance(x, (int, float))` / `isinstance(x, numbers.Number)` hold for Python
    values; `isinstance(x, torch.Tensor)`, `torch.is_tensor(x)` fail for them."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated:
        test = test.operand  # type: ignore[attr-defined]
    if not isinstance(test, ast.Call) or not test.args or not isinstance(test.args[0], ast.Name):
        return frozenset(), frozenset()
    name = test.args[0].id
    spelled = project_dotted(test.func)
    if spelled in ("torch.is_tensor",):
        on_true, on_false = frozenset(), frozenset({name})
    elif spelled == "isinstance" and len(test.args) == 2:
        types = test.args[1]
        elements = types.elts if isinstance(types, ast.Tuple) else [types]
        spellings = [project_dotted(e) or "" for e in elements]
        if any("Tensor" in s for s in spellings):
            on_true, on_false = frozenset(), frozenset({name})
        else:
            on_true, on_false = frozenset({name}), frozenset()
    else:
        return frozenset(), frozenset()
    return (on_false, on_true) if negated else (on_true, on_false)


def _in_tests(nodes: list[ast.AST]) -> frozenset[int]:
    """Ids of the nodes in the tests of the function's `assert`, `if`, `while` and
    conditional expressions: reads there check a value, they do not convert it."""
    found: set[int] = set()
    for child in nodes:
        if isinstance(child, ast.Assert | ast.If | ast.While | ast.IfExp):
            found.update(id(n) for n in ast_nodes.walk(child.test))
    return frozenset(found)


def _body_nodes(node: Function) -> list[ast.AST]:
    """Every node of the function's own body (not of the functions, lambdas and classes
    it defines): walked once per summary, read by `_carriers`, `_calls` and `_in_tests`."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, _NESTED):
            continue
        found.append(current)
        stack.extend(ast_nodes.child_nodes(current))
    return found


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for e in target.elts for n in _target_names(e)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []
