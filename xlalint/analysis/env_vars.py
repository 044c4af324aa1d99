"""Where code sets environment variables (for torch_xla to read).

Rules about torch_xla's environment variables flag the places a program sets one for itself:
`os.environ["X"] = v`, `os.environ.setdefault("X", v)`, `os.putenv("X", v)`,
`os.environ.update({"X": v})` / `update(X=v)` / `update(dict(X=v))` and `os.environ |= {...}`.
Reading a variable (`os.environ.get`, `os.getenv`, `os.environ["X"]` as a value) is not
setting it, and neither is building an `env` dict for a child process. Only literal names
count; a literal value that switches the variable off (`"0"`, `""`, `"false"`) is no setting.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from xlalint.analysis.imports import ImportTable

ENVIRON = "os.environ"
_OFF_VALUES = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True)
class EnvSetting:
    """One variable set by the code: the node to report, the name, the value if known."""

    node: cst.CSTNode
    name: str
    value: cst.BaseExpression | None


def env_settings(node: cst.CSTNode, imports: ImportTable) -> Iterator[EnvSetting]:
    """The variables `node` (an Assign, AugAssign or Call) sets to something that is not off."""
    for setting in _settings(node, imports):
        if setting.value is None or not _switches_off(setting.value):
            yield setting


def _settings(node: cst.CSTNode, imports: ImportTable) -> Iterator[EnvSetting]:
    if isinstance(node, cst.Assign):
        for target in node.targets:
            name = _environ_key(target.target, imports)
            if name is not None:
                yield EnvSetting(node, name, node.value)
    elif isinstance(node, cst.AugAssign):
        # `os.environ |= {"X": "1"}`
        if isinstance(node.operator, cst.BitOrAssign) and imports.resolve(node.target) == ENVIRON:
            yield from _mapping_settings(node.value)
    elif isinstance(node, cst.Call):
        qualified = imports.resolve(node.func)
        if qualified in {f"{ENVIRON}.setdefault", "os.putenv"}:
            if len(node.args) == 2 and all(a.keyword is None and not a.star for a in node.args):
                name = _literal(node.args[0].value)
                if name is not None:
                    yield EnvSetting(node, name, node.args[1].value)
        elif qualified == f"{ENVIRON}.update":
            for arg in node.args:
                if arg.keyword is not None:
                    yield EnvSetting(arg, arg.keyword.value, arg.value)
                elif not arg.star:
                    yield from _mapping_settings(arg.value)


def _environ_key(target: cst.BaseExpression, imports: ImportTable) -> str | None:
    """`X` for an assignment target `os.environ["X"]`."""
    if not isinstance(target, cst.Subscript) or imports.resolve(target.value) != ENVIRON:
        return None
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    return _literal(target.slice[0].slice.value)


def _mapping_settings(value: cst.BaseExpression) -> Iterator[EnvSetting]:
    """Entries of a dict display `{"X": v}` or a `dict(X=v)` call."""
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                name = _literal(element.key)
                if name is not None:
                    yield EnvSetting(element, name, element.value)
    elif isinstance(value, cst.Call) and _is_name(value.func, "dict"):
        for arg in value.args:
            if arg.keyword is not None:
                yield EnvSetting(arg, arg.keyword.value, arg.value)


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _literal(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _switches_off(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return isinstance(text, str) and text.strip().lower() in _OFF_VALUES
    if isinstance(value, cst.Integer):
        return value.evaluated_value == 0
    return isinstance(value, cst.Name) and value.value in {"False", "None"}
