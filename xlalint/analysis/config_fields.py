"""The defaults a settings class of the project declares for its fields.

`if self.state.global_step % self.params.logging_steps == 0:` reads its interval from a
settings object: `self.params = copy.deepcopy(args)` in `__init__(self, ..., args:
TrainingParams)`, and `TrainingParams`, a dataclass in another module of the project
(imported through its package, `from oumi.core.configs import TrainingParams`), declares
`logging_steps: int = 50`. Wherever the run does not set the field, it holds that
default, as a parameter's default or an option's declared default does
(`intervals.long_interval`).

A field's default is the integer it is declared with in the class body (`logging_steps:
int = 50`, `log_every = 100`, a dataclass's or pydantic's `field(default=50)`,
`Field(default=50)`), in the class or in a base class of the same module (the first
that declares it, depth first); a field declared without an integer default
(`logging_steps: int`, `= None`, `= field(default_factory=...)`) is None, and so is a
class not found. The class is found in the module its import names, or past re-exports
of that module (`from .training_params import TrainingParams` in a package's
`__init__.py`, followed up to three modules). Modules are read with CPython's `ast`,
each once per path and size/mtime in a process (`project_modules.parse` within a lint),
and every module read is noted for the cache entry, as `module_callers.declared_defaults`
notes the files it reads.
"""

from __future__ import annotations

import ast

from xlalint import ast_nodes
from xlalint.analysis import project_modules

_FOLLOWED = 3  # modules followed through re-exports, at most
_DEFAULTS = frozenset({"field", "Field", "attr.ib", "attrib"})


def field_default(filename: str, qualified: str, field: str) -> int | None:
    """The integer default the class `qualified` (as the linted file's imports resolve
    it: `oumi.core.configs.TrainingParams`) declares for `field`; None where the class,
    the field or an integer default is not found (the file not on disk included)."""
    if not project_modules.is_on_disk(filename):
        return None
    module, _, class_name = qualified.rpartition(".")
    if not module or not class_name:
        return None
    path = project_modules.resolve(filename, 0, module)
    for _ in range(_FOLLOWED):
        if path is None:
            return None
        tree = _tree(path)
        if tree is None:
            return None
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        if class_name in classes:
            return _declared(classes, class_name, field, set())
        path = _reexported(path, tree, class_name)
    return None


def _tree(path: str) -> ast.Module | None:
    stat = project_modules.stat_key(path)
    project_modules.note((path,))
    text = None if stat is None else project_modules.text_at(path, stat)
    return None if text is None else project_modules.parse(path, text)


def _reexported(path: str, tree: ast.Module, name: str) -> str | None:
    """The module a `from X import name` at the top of `tree` (also inside a `try:` or
    `if`) takes `name` from, resolved from `path`."""
    for node in ast_nodes.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(
            alias.name == name and alias.asname in (None, name) for alias in node.names
        ):
            return project_modules.resolve(path, node.level, node.module or "")
    return None


def _declared(
    classes: dict[str, ast.ClassDef], class_name: str, field: str, seen: set[str]
) -> int | None:
    """`field`'s integer default in class `class_name`, or in its bases of the module."""
    if class_name in seen or class_name not in classes:
        return None
    seen.add(class_name)
    node = classes[class_name]
    for statement in node.body:
        target, value = None, None
        if isinstance(statement, ast.AnnAssign):
            target, value = statement.target, statement.value
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        if isinstance(target, ast.Name) and target.id == field:
            return _integer(value)
    for base in node.bases:
        if isinstance(base, ast.Name):
            found = _declared(classes, base.id, field, seen)
            if found is not None:
                return found
    return None


def _integer(value: ast.expr | None) -> int | None:
    """`50`, `field(default=50)`, `Field(50)`: the integer a field starts as."""
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _DEFAULTS and ast.unparse(func) not in _DEFAULTS:
            return None
        keyword = next((k.value for k in value.keywords if k.arg == "default"), None)
        value = keyword if keyword is not None else (value.args[0] if value.args else None)
    if (
        isinstance(value, ast.Constant)
        and type(value.value) is int
        and not isinstance(value.value, bool)
    ):
        return value.value
    return None
