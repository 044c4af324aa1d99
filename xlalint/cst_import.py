"""libcst's import, with each method its dataclasses generate compiled once per text.

libcst builds its ~200 node classes as dataclasses when it is imported: `dataclasses`
writes each class's `__init__`, `__repr__`, `__eq__`, `__setattr__` and `__delattr__` as
source text and compiles it, 978 functions in all, most of libcst's import and a seventh
of a cold one-file check's instructions before round 24. A third of those texts are
another class's over again (a frozen class's `__setattr__` names only its own fields; a
class with the fields of another writes its `__eq__` anew): here each distinct text is
compiled once and the code object run for every class that writes it, exactly as
`dataclasses` would run its own compile of that text (the same flags: none inherited).

Only the first import in a process pays anything; where `dataclasses` does not build its
methods through a module-level `exec` of the text (a Python that does it otherwise), the
import is libcst's own.
"""

from __future__ import annotations

import builtins
import dataclasses
import sys
from collections.abc import Mapping
from typing import Any


def import_libcst() -> None:
    """Import libcst (nothing where it is imported already)."""
    if "libcst" in sys.modules:
        return
    if not _builds_by_exec():
        import libcst

        return
    compiled: dict[str, Any] = {}

    def exec_once(
        source: object,
        globals: dict[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
    ) -> None:
        if type(source) is str:
            code = compiled.get(source)
            if code is None:
                # `exec` of a text compiles it with the flags of the code calling it:
                # `dataclasses` has none (no `from __future__ import annotations`); this
                # module's are not inherited.
                code = compiled[source] = compile(source, "<string>", "exec", dont_inherit=True)
            source = code
        if globals is None:  # as `exec` does: the caller's (`dataclasses` passes its own)
            caller = sys._getframe(1)
            globals = caller.f_globals
            locals = caller.f_locals if locals is None else locals
        builtins.exec(source, globals, locals)  # type: ignore[arg-type]

    dataclasses.exec = exec_once  # type: ignore[attr-defined]
    try:
        import libcst  # noqa: F401
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]


def _builds_by_exec() -> bool:
    """Whether `dataclasses` compiles its methods by a call of `exec` it looks up in its
    module (CPython 3.10-3.13), and nothing shadows that name there."""
    create = getattr(dataclasses, "_create_fn", None)
    code = getattr(create, "__code__", None)
    return code is not None and "exec" in code.co_names and "exec" not in vars(dataclasses)
