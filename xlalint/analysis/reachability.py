"""Functions and methods that an XLA host never reaches.

`if not self.tpu: self._check_grad_norms(grad_norm)`: a private method that this file
calls only where a test for XLA failed (or where CUDA or another accelerator is in use)
never runs on a TPU host, so its host reads cost nothing there. The guards are those of
`devices.runs_without_xla`; this module follows them through calls, and into predicates
that answer for XLA first (`if self._use_closures():` where `_use_closures` returns False
when the backend is `"xla"`).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from xlalint.analysis.devices import mentions_xla, runs_without_xla
from xlalint.analysis.guards import asks_about_cuda, implied, negated
from xlalint.analysis.imports import ImportTable
from xlalint.walk import code_children, descendants, only_return


def _private(name: str) -> bool:
    """`_check_grad_norms`: a method callers in other files should not call (a public one
    may be called from anywhere, guarded or not)."""
    return name.startswith("_") and not name.endswith("__")


# Calls that run a function they are handed in new processes or threads: the function
# runs where the call does (`mp.spawn(self.worker, nprocs=torch.cuda.device_count())`).
_SPAWNERS_BY_POSITION = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch.multiprocessing.spawn.spawn",
        "torch.multiprocessing.spawn.start_processes",
    }
)
_SPAWNERS_BY_TARGET = frozenset(
    {"multiprocessing.Process", "torch.multiprocessing.Process", "threading.Thread"}
)


def _referenced_name(node: cst.CSTNode, functions: dict[str, list[cst.FunctionDef]]) -> str | None:
    """The candidate a node refers to: `f` (a module-level function) or `obj.m` (a
    method, by name on any receiver: a public one counts only through `self`, which
    `_index` checks)."""
    if type(node) is cst.Name and node.value in functions:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined]
    if type(node) is cst.Attribute:
        name = node.attr.value  # type: ignore[attr-defined]
        return name if name in functions else None
    return None


def _through_self(node: cst.CSTNode) -> bool:
    """`self.m`: a reference to a method of the instance at hand."""
    value = getattr(node, "value", None)
    return type(value) is cst.Name and value.value == "self"  # type: ignore[attr-defined]


def _spawner(imports: ImportTable, arg: cst.CSTNode, call: cst.CSTNode) -> bool:
    """Whether `arg` hands `call` the function it runs in new processes or threads: the
    first argument of `torch.multiprocessing.spawn` (or `fn=`), the `target=` of a
    `Process` or `Thread`."""
    if type(arg) is not cst.Arg or type(call) is not cst.Call:
        return False
    qualified = imports.resolve(call.func) or ""  # type: ignore[attr-defined]
    keyword = arg.keyword.value if arg.keyword is not None else None  # type: ignore[attr-defined]
    if qualified in _SPAWNERS_BY_POSITION:
        if keyword is not None:
            return keyword == "fn"
        return call.args[0] is arg  # type: ignore[attr-defined]
    return qualified in _SPAWNERS_BY_TARGET and keyword == "target"


class OffXla:
    """Which functions of a module an XLA host never reaches, judged per function when a
    finding asks about the function it sits in (a file's first hot finding used to judge
    every function of the module).

    A module-level function is off XLA when every call of it here (at least one) is under
    a CUDA guard or a failed XLA test, or inside another such function (`get_gpu_info(i)`
    called only under `if torch.cuda.is_available():`). A module-level function or a
    private method is off XLA, too, when every use of its name here (at least one) is such
    a call, from such a function: one handed on without a call (a callback) may run
    anywhere. A function the module exports in `__all__` never is (other modules may call
    its API on XLA). The module's uses are indexed by one walk, on the first question about
    a function that has a name to look up; callers are judged only as far as an answer
    needs them, and every answer is kept for the file. A function handed to a process
    spawner (`mp.spawn(self.inference_with_ddp, ...)`, `Process(target=worker)`) runs
    where the spawn does: that use counts as a call there. A public method counts too,
    where every use of its name here is through `self` (`self.init_ddp(local_rank)` from
    such workers alone): a use through another receiver (`trainer.init_ddp(0)`), or a
    name handed on, may run anywhere. A method of a module-level class
    (public or not) is off XLA, too, when every use of its class's name here (at least one)
    is such a call, from such a function: the class is built only off XLA (`if device_type
    == "cuda": return CudaBatchTimingTracker()`), and named nowhere else (a base of
    another class, an annotation, a value handed on, all of which may bring an instance
    to XLA); nor does the module export it."""

    def __init__(
        self,
        module: cst.Module,
        imports: ImportTable,
        also_guarded: Callable[[tuple[cst.CSTNode, ...]], bool] | None = None,
    ) -> None:
        self._module = module
        self._imports = imports
        self._also_guarded = also_guarded
        # Module-level functions by name (the last definition, for calls) and every
        # candidate of by-name uses: module-level functions and private methods.
        self._functions: dict[str, cst.FunctionDef] = {}
        self._candidates: dict[str, list[cst.FunctionDef]] = {}
        self._public: set[str] = set()  # names of public methods among the candidates
        # Each method of a module-level class (by `id`): the class's name. A class is a
        # candidate too, by its name (its uses are what builds its instances).
        self._method_class: dict[int, str] = {}
        for statement in module.body:
            if isinstance(statement, cst.FunctionDef):
                self._functions[statement.name.value] = statement
                self._candidates.setdefault(statement.name.value, []).append(statement)
            elif isinstance(statement, cst.ClassDef) and isinstance(
                statement.body, cst.IndentedBlock
            ):
                self._candidates.setdefault(statement.name.value, [])
                for member in statement.body.body:
                    if isinstance(member, cst.FunctionDef):
                        self._method_class[id(member)] = statement.name.value
                        name = member.name.value
                        if _private(name):
                            self._candidates.setdefault(name, []).append(member)
                        elif not name.startswith("__"):
                            # A public method: judged by its uses through `self` alone.
                            self._candidates.setdefault(name, []).append(member)
                            self._public.add(name)
        self._exported: frozenset[int] | None = None
        self._exported_classes: frozenset[str] | None = None
        # name -> (guarded, name of the function the site is in) of each call / each use
        self._calls: dict[str, list[tuple[bool, str | None]]] | None = None
        self._uses: dict[str, list[tuple[bool, str | None]]] = {}
        self._calls_only: dict[str, bool] = {}
        self._uses_only: dict[str, bool] = {}
        self._answers: dict[int, bool] = {}

    def never_on_xla(self, function: cst.FunctionDef) -> bool:
        """Whether `function` (a node of this module) runs only where XLA is not in use."""
        key = id(function)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = self._judge(function)
        return answer

    def _judge(self, function: cst.FunctionDef) -> bool:
        name = function.name.value
        by_calls = self._functions.get(name) is function
        by_uses = any(function is f for f in self._candidates.get(name, ()))
        owner = self._method_class.get(id(function))
        if not (by_calls or by_uses or owner is not None):
            return False  # a nested function: callable from anywhere
        if self._exported is None:
            self._exported = exported_functions(self._module, self._exported_names())
        if id(function) in self._exported:
            return False
        calls = self._index()
        if by_calls and _only_under_guards(name, calls, self._calls_only, set()):
            return True
        if by_uses and _only_under_guards(name, self._uses, self._uses_only, set()):
            return True
        # A method of a class this file builds only off XLA (`if device_type == "cuda":
        # return CudaBatchTimingTracker()`), and names nowhere else (no base of another
        # class, no annotation, no instance handed on): no instance exists on XLA.
        return (
            owner is not None
            and owner not in self._exported_names()
            and _only_under_guards(owner, self._uses, self._uses_only, set())
        )

    def _exported_names(self) -> frozenset[str]:
        if self._exported_classes is None:
            self._exported_classes = exported_names(self._module)
        return self._exported_classes

    def _guarded(self, at: tuple[cst.CSTNode, ...]) -> bool:
        """Whether the call `at` (innermost first) runs only off XLA: under a CUDA guard, a
        failed XLA test, or a guard `also_guarded` names (a flag the module keeps False on
        XLA: `if self.args.fp16: self._setup_amp()`)."""
        return runs_without_xla(at, self._imports) or (
            self._also_guarded is not None and self._also_guarded(at)
        )

    def _index(self) -> dict[str, list[tuple[bool, str | None]]]:
        """Every call of a module-level function, and every use of a candidate's name,
        with whether it is guarded and the function it is in: one walk of the module."""
        if self._calls is not None:
            return self._calls
        calls: dict[str, list[tuple[bool, str | None]]] = {}
        uses = self._uses
        functions, candidates = self._functions, self._candidates
        # Depth-first with one shared ancestor list, cut back to a node's depth when it is
        # reached (a copy of the path per node would cost more than the rest).
        path: list[cst.CSTNode] = []
        # (node, depth, function a call is in, candidate a use is in)
        stack: list[tuple[cst.CSTNode, int, str | None, str | None]] = [
            (self._module, 0, None, None)
        ]
        while stack:
            node, depth, caller, user = stack.pop()
            del path[depth:]
            kind = type(node)  # exact types: `isinstance` on libcst's classes runs ABCMeta's
            if kind is cst.FunctionDef:
                name = node.name.value  # type: ignore[attr-defined]
                if caller is None and name in functions:
                    caller = name
                if name in candidates and any(node is f for f in candidates[name]):
                    user = name
            elif kind is cst.Call:
                func = node.func  # type: ignore[attr-defined]
                if type(func) is cst.Name and func.value in functions:
                    guarded = self._guarded((node, *reversed(path)))
                    calls.setdefault(func.value, []).append((guarded, caller))
            else:
                used = _referenced_name(node, candidates)
                parent = path[-1] if path else None
                if kind is cst.Attribute and used is not None and not _private(used):
                    if used not in self._public:
                        used = None  # `obj.f`: not the module-level function `f`
                    elif not _through_self(node):
                        # `trainer.fit(...)`: another object's method of that name, or
                        # this class's reached from outside: it may run anywhere.
                        uses.setdefault(used, []).append((False, user))
                        used = None
                if used is not None and not (kind is cst.Name and type(parent) is cst.Attribute):
                    if type(parent) is cst.Call and parent.func is node:  # type: ignore[attr-defined]
                        guarded = self._guarded((parent, *reversed(path[:-1])))
                        uses.setdefault(used, []).append((guarded, user))
                    elif len(path) > 1 and _spawner(self._imports, parent, path[-2]):  # type: ignore[arg-type]
                        # `mp.spawn(self.worker, ...)`: the worker runs where the spawn does.
                        guarded = self._guarded((path[-2], *reversed(path[:-2])))
                        uses.setdefault(used, []).append((guarded, user))
                    elif type(parent) is not cst.FunctionDef and type(parent) is not cst.ClassDef:
                        uses.setdefault(used, []).append((False, user))  # handed on
            path.append(node)
            stack.extend((child, depth + 1, caller, user) for child in code_children(node))
        self._calls = calls
        return calls


def _only_under_guards(
    name: str,
    sites: dict[str, list[tuple[bool, str | None]]],
    known: dict[str, bool],
    asking: set[str],
) -> bool:
    """Whether each site of `name` (at least one) is guarded, or sits in another function
    that is itself only reached through guarded sites: `sites` maps a function's name to
    its (guarded, name of the function the site is in). Callers are judged on demand and
    `known` keeps the answers. A function on the chain being asked about counts as not
    guarded: a cycle of calls with no guarded way in never holds (the least fixed point)."""
    answer = known.get(name)
    if answer is not None:
        return answer
    if name in asking:
        return False
    found = sites.get(name)
    if not found:
        known[name] = False
        return False
    asking.add(name)
    answer = all(
        guarded
        or (owner is not None and owner != name and _only_under_guards(owner, sites, known, asking))
        for guarded, owner in found
    )
    asking.discard(name)
    known[name] = answer
    return answer


def _constant(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def value_on_xla(function: cst.FunctionDef, imports: ImportTable) -> bool | None:
    """What a predicate returns on an XLA host, where it says so before anything else
    returns: `if self.device.dist_backend == "xla": return False` as its first return
    (Composer's `_use_closures`). None when that is not known."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return None

    def asks_xla(test: cst.BaseExpression) -> bool:
        return mentions_xla(test, imports, modules=False)

    for statement in body.body:
        if isinstance(statement, cst.If) and statement.orelse is None:
            answer = _returned_constant(statement.body)
            if answer is not None and implied(statement.test, True, asks_xla) is True:
                return answer
        if any(isinstance(node, cst.Return) for node in descendants(statement)):
            return None  # it may return first, for other reasons
    return None


def returns_cuda_test(function: cst.FunctionDef, imports: ImportTable) -> bool:
    """A predicate that only returns a CUDA test (`return bool(outputs["logits"].is_cuda)`):
    False on an XLA host whatever it is handed, since no tensor there is a CUDA tensor."""
    statement = only_return(function)
    returned = statement.value if statement is not None else None
    return returned is not None and (
        implied(returned, True, lambda t: asks_about_cuda(t, imports)) is True
    )


def returns_none_on_xla(function: cst.FunctionDef, imports: ImportTable) -> bool:
    """Whether `function` hands back None wherever an XLA host runs it: every `return` of
    its own body that can run there returns None (or nothing), and at least one that
    returns a value runs only off XLA (`if torch.device(d).type != "cuda" or not
    torch.cuda.is_available(): return None`, then `return torch.cuda.Event()`: gptqmodel's
    `_cuda_event_for`). A value it hands back is then None on XLA, and `if event is not
    None:` guards what needs CUDA as the test inside the function did. Not a generator."""
    guarded_value = False
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(function.body, (function,))]
    while stack:
        node, path = stack.pop()
        kind = type(node)
        if kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            continue
        if kind in (cst.Yield, cst.Await):
            return False
        if kind is cst.Return:
            value = node.value  # type: ignore[attr-defined]
            if value is None or (type(value) is cst.Name and value.value == "None"):
                continue
            # A test that a value is on the CPU keeps nothing off XLA: its host tensors
            # take that branch too.
            if not runs_without_xla((node, *reversed(path)), imports, host_tests=False):
                return False
            guarded_value = True
            continue
        inner = (*path, node)
        stack.extend((child, inner) for child in code_children(node))
    return guarded_value


def _returned_constant(block: cst.BaseSuite) -> bool | None:
    """`True`/`False` for a block that is only `return True`/`return False`."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if len(statements) != 1:
        return None
    line = statements[0]
    if not isinstance(line, cst.SimpleStatementLine | cst.SimpleStatementSuite):
        return None
    small = line.body[-1] if len(line.body) == 1 else None
    if not isinstance(small, cst.Return) or small.value is None:
        return None
    return _constant(small.value)


def _none_test(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool] | None:
    """`(x, True)` for `x is not None`, `(x, False)` for `x is None` (either side)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if type(comparison.operator) not in (cst.Is, cst.IsNot):
        return None
    left, right = test.left, comparison.comparator
    if type(right) is cst.Name and right.value == "None":
        subject = left
    elif type(left) is cst.Name and left.value == "None":
        subject = right
    else:
        return None
    return subject, type(comparison.operator) is cst.IsNot


def false_on_xla(
    test: cst.BaseExpression,
    holds: bool,
    predicates: XlaPredicates,
    flag_false: Callable[[cst.BaseExpression], bool] | None = None,
    none_on_xla: Callable[[cst.BaseExpression], bool] | None = None,
) -> bool:
    """Whether the branch of `test` taken when it is `holds` never runs on XLA: `if
    self._use_closures():` with a predicate that returns False there, or `if
    self.args.fp16:` with a flag the module keeps False there (`flag_false`, from
    `flag_facts`), or the branch where a value is not None (`if event is not None:`, the
    code after `if event is None: return`) of a value that is None on XLA (`none_on_xla`:
    `event = self._cuda_event_for(device)`, a function that returns None unless CUDA is
    in use, `returns_none_on_xla`)."""
    inner = negated(test)
    if inner is not None:
        return false_on_xla(inner, not holds, predicates, flag_false, none_on_xla)
    if isinstance(test, cst.BooleanOperation) and holds == isinstance(test.operator, cst.And):
        return false_on_xla(test.left, holds, predicates, flag_false, none_on_xla) or false_on_xla(
            test.right, holds, predicates, flag_false, none_on_xla
        )
    none_test = _none_test(test)
    if none_test is not None:
        subject, not_none = none_test
        return holds == not_none and none_on_xla is not None and none_on_xla(subject)
    if isinstance(test, cst.Call) and not test.args:
        answer = predicates.on_xla(test)
        return answer is not None and answer != holds
    if isinstance(test, cst.Call) and holds:
        # `if self._device_supported(outputs):` returning `outputs["logits"].is_cuda`.
        return predicates.tests_cuda(test)
    if holds and flag_false is not None and isinstance(test, cst.Name | cst.Attribute):
        return flag_false(test)
    return False


class XlaPredicates:
    """This module's functions and methods without arguments whose result on an XLA host
    is known (`value_on_xla`), found by the name a call spells."""

    def __init__(self, module: cst.Module, imports: ImportTable) -> None:
        self._imports = imports
        self._functions: dict[str, list[cst.FunctionDef]] = {}
        self._methods: dict[str, list[cst.FunctionDef]] = {}
        for statement in module.body:
            if isinstance(statement, cst.FunctionDef):
                self._functions.setdefault(statement.name.value, []).append(statement)
            elif isinstance(statement, cst.ClassDef) and isinstance(
                statement.body, cst.IndentedBlock
            ):
                for member in statement.body.body:
                    if isinstance(member, cst.FunctionDef):
                        self._methods.setdefault(member.name.value, []).append(member)
        self._answers: dict[int, bool | None] = {}
        self._cuda_tests: dict[int, bool] = {}  # id(function): `returns_cuda_test`
        self._none: dict[int, bool] = {}  # id(function): `returns_none_on_xla`

    def _candidates(self, call: cst.Call) -> list[cst.FunctionDef] | None:
        func = call.func
        if isinstance(func, cst.Name):
            return self._functions.get(func.value, [])
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return self._methods.get(func.attr.value, [])
        return None

    def on_xla(self, call: cst.Call) -> bool | None:
        """What `f()` or `self.f()` returns on XLA, when every definition of that name here
        agrees."""
        candidates = self._candidates(call)
        if candidates is None:
            return None
        answers = set()
        for function in candidates:
            if id(function) not in self._answers:
                self._answers[id(function)] = value_on_xla(function, self._imports)
            answers.add(self._answers[id(function)])
        return answers.pop() if len(answers) == 1 else None

    def none_on_xla(self, call: cst.Call) -> bool:
        """`f(...)` or `self.f(...)`, whatever its arguments, where every definition of
        that name here returns None on XLA (`returns_none_on_xla`)."""
        candidates = self._candidates(call)
        if not candidates:
            return False
        for function in candidates:
            known = self._none.get(id(function))
            if known is None:
                known = self._none[id(function)] = returns_none_on_xla(function, self._imports)
            if not known:
                return False
        return True

    def tests_cuda(self, call: cst.Call) -> bool:
        """`f(...)` or `self.f(...)`, whatever its arguments, where every definition of
        that name here only returns a CUDA test (`returns_cuda_test`)."""
        candidates = self._candidates(call)
        return bool(candidates) and all(self._returns_cuda_test(f) for f in candidates)

    def _returns_cuda_test(self, function: cst.FunctionDef) -> bool:
        known = self._cuda_tests.get(id(function))
        if known is None:
            known = self._cuda_tests[id(function)] = returns_cuda_test(function, self._imports)
        return known


def exported_functions(module: cst.Module, names: frozenset[str]) -> frozenset[int]:
    """The module-level functions (by `id`) that the module lists in `__all__` (`names`,
    from `exported_names`): its API, which other modules may call on an XLA host however
    this file guards its own calls (ignite's `supervised_training_step`, which its own
    trainer factory picks only off TPUs)."""
    return frozenset(
        id(statement)
        for statement in module.body
        if isinstance(statement, cst.FunctionDef) and statement.name.value in names
    )


def exported_names(module: cst.Module) -> frozenset[str]:
    """The names the module lists in `__all__`."""
    names: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign | cst.AugAssign | cst.AnnAssign)
                and small.value is not None
                and "__all__" in [getattr(t, "value", None) for t in _targets(small)]
                and isinstance(small.value, cst.List | cst.Tuple)
            ):
                for element in small.value.elements:
                    value = element.value
                    if isinstance(value, cst.SimpleString) and isinstance(
                        value.evaluated_value, str
                    ):
                        names.add(value.evaluated_value)
    return frozenset(names)


def _targets(node: cst.Assign | cst.AugAssign | cst.AnnAssign) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    return [node.target]
