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

from xlalint.analysis.devices import called_only_under_guards, mentions_xla, runs_without_xla
from xlalint.analysis.guards import implied, negated
from xlalint.analysis.imports import ImportTable
from xlalint.walk import children, descendants


def _private(name: str) -> bool:
    """`_check_grad_norms`: a method callers in other files should not call (a public one
    may be called from anywhere, guarded or not)."""
    return name.startswith("_") and not name.endswith("__")


def _candidates(module: cst.Module) -> dict[str, list[cst.FunctionDef]]:
    """Module-level functions and the private methods of module-level classes, by name."""
    found: dict[str, list[cst.FunctionDef]] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            found.setdefault(statement.name.value, []).append(statement)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for member in statement.body.body:
                if isinstance(member, cst.FunctionDef) and _private(member.name.value):
                    found.setdefault(member.name.value, []).append(member)
    return found


def _referenced_name(node: cst.CSTNode, functions: dict[str, list[cst.FunctionDef]]) -> str | None:
    """The candidate a node refers to: `f` (a module-level function) or `obj._m` (a
    private method, by name on any receiver)."""
    if isinstance(node, cst.Name) and node.value in functions:
        return node.value
    if isinstance(node, cst.Attribute) and _private(node.attr.value):
        name = node.attr.value
        return name if name in functions else None
    return None


def functions_run_without_xla(
    module: cst.Module,
    imports: ImportTable,
    also_guarded: Callable[[tuple[cst.CSTNode, ...]], bool] | None = None,
) -> frozenset[int]:
    """The functions (by `id`) that run only where XLA is not in use: module-level
    functions and private methods that this file uses at least once, and only by calls
    under a CUDA guard or a failed XLA test (`if not self.tpu:`), or from another such
    function. A function handed on without a call (a callback) may run anywhere.
    `also_guarded` (a call and its ancestors, innermost first) names more guards: flags
    the module keeps False on XLA (`if self.args.fp16: self._setup_amp()`)."""
    functions = _candidates(module)
    if not functions:
        return frozenset()
    # name -> (guarded, name of the candidate the use is in) of each use
    uses: dict[str, list[tuple[bool, str | None]]] = {}
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...], str | None]] = [(module, (), None)]
    while stack:
        node, path, owner = stack.pop()
        if (
            isinstance(node, cst.FunctionDef)
            and node.name.value in functions
            and any(node is f for f in functions[node.name.value])
        ):
            owner = node.name.value
        name = _referenced_name(node, functions)
        if name is not None and not (
            isinstance(node, cst.Name) and path and isinstance(path[-1], cst.Attribute)
        ):
            parent = path[-1] if path else None
            if isinstance(parent, cst.Call) and parent.func is node:
                at = (parent, *reversed(path[:-1]))
                guarded = runs_without_xla(at, imports) or (
                    also_guarded is not None and also_guarded(at)
                )
                uses.setdefault(name, []).append((guarded, owner))
            elif not isinstance(parent, cst.FunctionDef):
                uses.setdefault(name, []).append((False, owner))  # handed on, not called
        inner = (*path, node)
        stack.extend((child, inner, owner) for child in children(node))
    only = called_only_under_guards(uses)
    return frozenset(id(function) for name in only for function in functions[name])


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


def false_on_xla(
    test: cst.BaseExpression,
    holds: bool,
    predicates: XlaPredicates,
    flag_false: Callable[[cst.BaseExpression], bool] | None = None,
) -> bool:
    """Whether the branch of `test` taken when it is `holds` never runs on XLA: `if
    self._use_closures():` with a predicate that returns False there, or `if
    self.args.fp16:` with a flag the module keeps False there (`flag_false`, from
    `flag_facts`)."""
    inner = negated(test)
    if inner is not None:
        return false_on_xla(inner, not holds, predicates, flag_false)
    if isinstance(test, cst.BooleanOperation) and holds == isinstance(test.operator, cst.And):
        return false_on_xla(test.left, holds, predicates, flag_false) or false_on_xla(
            test.right, holds, predicates, flag_false
        )
    if isinstance(test, cst.Call) and not test.args:
        answer = predicates.on_xla(test)
        return answer is not None and answer != holds
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

    def on_xla(self, call: cst.Call) -> bool | None:
        """What `f()` or `self.f()` returns on XLA, when every definition of that name here
        agrees."""
        func = call.func
        if isinstance(func, cst.Name):
            candidates = self._functions.get(func.value, [])
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            candidates = self._methods.get(func.attr.value, [])
        else:
            return None
        answers = set()
        for function in candidates:
            if id(function) not in self._answers:
                self._answers[id(function)] = value_on_xla(function, self._imports)
            answers.add(self._answers[id(function)])
        return answers.pop() if len(answers) == 1 else None


def exported_functions(module: cst.Module) -> frozenset[int]:
    """The module-level functions (by `id`) that the module lists in `__all__`: its API,
    which other modules may call on an XLA host however this file guards its own calls
    (ignite's `supervised_training_step`, which its own trainer factory picks only off
    TPUs)."""
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
    return frozenset(
        id(statement)
        for statement in module.body
        if isinstance(statement, cst.FunctionDef) and statement.name.value in names
    )


def _targets(node: cst.Assign | cst.AugAssign | cst.AnnAssign) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    return [node.target]
