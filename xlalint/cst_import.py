"""libcst's import, with each method its dataclasses generate compiled once per text.

libcst builds its ~200 node classes as dataclasses when it is imported: `dataclasses`
writes each class's `__init__`, `__repr__`, `__eq__`, `__setattr__` and `__delattr__` as
source text and compiles it, 978 functions in all, most of libcst's import and a seventh
of a cold one-file check's instructions before round 24. A third of those texts are
another class's over again (a frozen class's `__setattr__` names only its own fields; a
class with the fields of another writes its `__eq__` anew): each distinct text is compiled
once and the code object run for every class that writes it, exactly as `dataclasses`
would run its own compile of that text, and since round 25 the code is read back from the
user's cache folder (`code_store`, with the programs of the expressions modules compile
at import): the command line holds that store for its whole process (xlalint's own
dataclasses and expressions too); an import through the API holds it for libcst's import
alone.

Only the first import in a process pays anything; where `dataclasses` does not build its
methods through a module-level `exec` of the text (a Python that does it otherwise), the
import is libcst's own.
"""

from __future__ import annotations

import sys

from xlalint import code_store


def import_libcst() -> None:
    """Import libcst (nothing where it is imported already)."""
    if "libcst" in sys.modules:
        return
    if code_store.installed() or not code_store.install():
        import libcst

        return
    try:
        import libcst  # noqa: F401
    finally:
        code_store.uninstall()
