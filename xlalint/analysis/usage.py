"""Which module-level imports a file uses, so that the fixer can drop those a fix made unused.

The question is asked twice, of a file's text before a round of fixes and after it: an import
binding that was used before and is not used after is one the fixes made unused, and only
those are removed. Imports the author left unused are never touched.

"Used" is decided by name and errs towards keeping an import. A binding counts as used when
its name is mentioned anywhere outside import statements: read, assigned, deleted, declared
`global`, used as a parameter name, listed in `__all__`, or spelled in a string annotation
(`"xm.Foo"`). Attribute names (`a.xm`) and keyword names (`f(xm=1)`) are not mentions.

Only plain import statements directly in the module body are candidates. These never are:
- imports under `try:` (optional dependencies: `except ImportError: xm = None` needs them),
  `if` (`TYPE_CHECKING`, version checks), functions or classes, whose use depends on flow;
- `from __future__ import ...`, which changes how the file compiles;
- star imports, whose bindings are unknown;
- any import in an `__init__.py`, where imports re-export names to other modules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import import_aliases
from xlalint.walk import code_children, descendants

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ImportBinding:
    """One name bound by a module-level import: `xm` in `import torch_xla.core.xla_model as
    xm`, `mark_step` in `from torch_xla.core.xla_model import mark_step`."""

    statement: int  # index of the statement line in module.body
    small: int  # index of the import within that line (`import a; import b`)
    alias: int  # index of the alias within the import
    name: str  # the bound name
    target: str  # what it is bound to, e.g. `torch_xla.core.xla_model`


def module_import_bindings(module: cst.Module) -> list[ImportBinding]:
    """The bindings of the removable imports directly in the module body, in order."""
    bindings = []
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small_index, small in enumerate(statement.body):
            if _imports_from_future(small):
                continue  # `from __future__ import annotations` is a directive, not a name
            for alias_index, name, target in import_aliases(small):
                bindings.append(ImportBinding(index, small_index, alias_index, name, target))
    return bindings


def _imports_from_future(small: cst.BaseSmallStatement) -> bool:
    return (
        isinstance(small, cst.ImportFrom)
        and small.module is not None
        and get_full_name_for_node(small.module) == "__future__"
    )


def _is_all(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "__all__"


def _strings(node: cst.CSTNode) -> list[str]:
    return [
        found.evaluated_value  # type: ignore[attr-defined]
        for found in descendants(node)
        if type(found) is cst.SimpleString and isinstance(found.evaluated_value, str)  # type: ignore[attr-defined]
    ]


def mentioned_names(module: cst.Module) -> set[str]:
    """Names `module` mentions anywhere outside import statements (see the module doc).

    A hand-written walk (code nodes only, exact types): libcst's visitor rebuilds every
    node, and this runs on each text the fixer meets."""
    names: set[str] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name:
            names.add(node.value)  # type: ignore[attr-defined]
            continue
        if kind is cst.Import or kind is cst.ImportFrom:
            continue
        if kind is cst.Attribute or kind is cst.Arg:
            # `x.attr` names a field and `f(keyword=...)` a parameter, not a variable.
            stack.append(node.value)  # type: ignore[attr-defined]
            continue
        if kind is cst.Annotation:
            # `x: "xm.Tensor"`: a string annotation names what it mentions.
            for string in _strings(node.annotation):  # type: ignore[attr-defined]
                names.update(_WORD.findall(string))
        elif kind is cst.Assign:
            # `__all__ = ["xm"]` exports the name: keep its import.
            if any(_is_all(target.target) for target in node.targets):  # type: ignore[attr-defined]
                names.update(_strings(node.value))  # type: ignore[attr-defined]
        elif kind is cst.AugAssign and _is_all(node.target):  # type: ignore[attr-defined]
            names.update(_strings(node.value))  # type: ignore[attr-defined]
        stack.extend(code_children(node))
    return names


def unused_bindings(module: cst.Module, used: set[str] | None = None) -> set[tuple[str, str]]:
    """`(name, target)` of the removable imports that `module` does not use. `used`: its
    `mentioned_names`, where the caller has them."""
    used = mentioned_names(module) if used is None else used
    return {(b.name, b.target) for b in module_import_bindings(module) if b.name not in used}


def made_unused(
    before: cst.Module,
    after: cst.Module,
    filename: str,
    mentioned: Callable[[cst.Module], set[str]] | None = None,
) -> list[ImportBinding]:
    """The bindings of `after`'s removable imports that `before` used and `after` does not.

    `after` is `before` with fixes applied: its imports are matched to `before`'s by name and
    target, so an import a fix added is never one it "made unused". `mentioned`: how to
    get a module's `mentioned_names` (the fixer's runs keep them per text).
    """
    if filename.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py":
        return []
    mentioned = mentioned_names if mentioned is None else mentioned
    used_before = mentioned(before)
    earlier = {(b.name, b.target) for b in module_import_bindings(before)}
    used_after = mentioned(after)
    return [
        binding
        for binding in module_import_bindings(after)
        if (binding.name, binding.target) in earlier
        and binding.name in used_before
        and binding.name not in used_after
    ]
