"""libcst's parse of a whole file, without validating again what libcst's parser built.

Every libcst node runs `_validate` from `__post_init__` when it is constructed, which is
right for nodes a fix builds by hand but redundant for the nodes of a tree libcst's own
native parser makes from valid source (libcst's `CSTNode.__post_init__` says as much: "It
might make more sense to move validation work into the visitor, which would allow us to
avoid validating the tree when parsing a file"). About one node in three is whitespace,
validated by a regex; measured, the checks are 15-22% of a parse (`benchmarks/RESULTS.md`).
Here the check is switched off for the length of one parse only, and only where libcst's
`__post_init__` does nothing but validate and no node class overrides it (else the parse is
libcst's own). The trees are equal either way (`tests/test_cst_parse.py`).

xlalint parses in one thread per process (the worker pool is processes, the language server
handles one request at a time), so no node built elsewhere can meet the switched-off check.
"""

from __future__ import annotations

import functools

import libcst as cst
from libcst._nodes.base import CSTNode

_VALIDATING = CSTNode.__post_init__


def _built_by_the_parser(self: CSTNode) -> None:
    """`__post_init__` while libcst's parser builds a tree: its nodes are valid as built."""


@functools.cache
def skips_validation() -> bool:
    """Whether a parse can leave out the checks: libcst's `__post_init__` only validates
    (as in libcst 1.x) and no node class has one of its own."""
    code = getattr(_VALIDATING, "__code__", None)
    if code is None or code.co_names != ("_validate",):
        return False
    pending, seen = list(CSTNode.__subclasses__()), set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        if "__post_init__" in vars(cls):
            return False
        pending.extend(cls.__subclasses__())
    return True


def parse_module(text: str) -> cst.Module:
    """`cst.parse_module(text)`: the same tree (and the same syntax errors), built without
    the nodes' redundant checks where `skips_validation()` allows it."""
    if not skips_validation():
        return cst.parse_module(text)
    CSTNode.__post_init__ = _built_by_the_parser  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = _VALIDATING  # type: ignore[method-assign]
