"""Parameters a function's docstring declares as Python values.

`target_is_real (bool): Whether the target is real or fake.` in a loss's `forward`
documents a flag, however tensor-like its place (a per-step function's unannotated
parameters are taken for tensors): `input = -input if target_is_real else input` selects
on the host what to compute, and reads nothing from the device. The docstring is read as
an annotation would be, in its three common styles: Google's `name (bool): ...` (also
`name (int, optional): ...`), NumPy's `name : bool` and Sphinx's `:type name: bool` /
`:param bool name:`. Only a declaration of plain Python scalars counts (`bool`, `int`,
`float`, `str`, alternatives of those): `input (Tensor)`, `target (bool | Tensor)` or
any type the docstring names beside them say nothing of a host value.
"""

from __future__ import annotations

import re

import libcst as cst

from xlalint.analysis.arguments import parameters

# `name (bool): text`, `name (int, optional): text` (Google style).
_GOOGLE = re.compile(r"^\s*\*{0,2}(\w+)\s*\(([^()]*)\)\s*:")
# `name : bool` (NumPy style: a space before the colon).
_NUMPY = re.compile(r"^\s*(\w+)\s+:\s*([^:]+?)\s*$")
# `:type name: bool`, `:param bool name:` (Sphinx).
_SPHINX_TYPE = re.compile(r"^\s*:type\s+(\w+)\s*:\s*(.+?)\s*$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(\w+)\s+(\w+)\s*:")
_SEPARATOR = re.compile(r"\s*(?:,|\bor\b|\|)\s*")
_HOST_TYPES = frozenset({"bool", "boolean", "int", "integer", "float", "str", "string"})
_QUALIFIERS = re.compile(r"^(?:optional|default.*|keyword.*)$")


def _host_type(text: str) -> bool:
    parts = [p.strip().strip("`").lower() for p in _SEPARATOR.split(text.strip())]
    types = [p for p in parts if p and not _QUALIFIERS.match(p)]
    return bool(types) and all(t in _HOST_TYPES for t in types)


def documented_host_parameters(function: cst.FunctionDef) -> frozenset[str]:
    """The parameters of `function` its docstring declares as Python scalars (`bool`,
    `int`, `float`, `str`); empty without a docstring."""
    return frozenset(name for name, text in _declared(function).items() if _host_type(text))


def documented_tensor_parameters(function: cst.FunctionDef) -> frozenset[str]:
    """The parameters of `function` its docstring declares as tensors, alone or among
    other types (`target (bool | Tensor)`): a tensor, whatever its name says."""
    return frozenset(
        name for name, text in _declared(function).items() if _TENSOR_TYPE.search(text)
    )


_TENSOR_TYPE = re.compile(r"\b(torch\.)?\w*Tensor\b")


def _declared(function: cst.FunctionDef) -> dict[str, str]:
    """Each parameter the docstring declares a type for, with the declaration's text."""
    docstring = function.get_docstring(clean=True)
    if not docstring:
        return {}
    names = {param.name.value for param in parameters(function)}
    declared: dict[str, str] = {}
    for line in docstring.splitlines():
        match = _GOOGLE.match(line) or _NUMPY.match(line) or _SPHINX_TYPE.match(line)
        if match is not None:
            name, text = match.group(1), match.group(2)
        else:
            param = _SPHINX_PARAM.match(line)
            if param is None:
                continue
            text, name = param.group(1), param.group(2)
        if name in names:
            declared.setdefault(name, text)
    return declared
