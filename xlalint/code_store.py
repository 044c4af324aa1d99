"""What a process compiles at start-up, kept on disk: the methods `dataclasses` writes and
the regular expressions modules compile as they are imported.

`dataclasses` writes each class's `__init__`, `__repr__`, `__eq__`, `__setattr__` and
`__delattr__` as source text and compiles it when the class is made: libcst's ~200 node
classes (978 functions, 623 distinct texts) and xlalint's own (~420) at every start of a
process, about a tenth of a cold one-file check's instructions after round 24. And the
~190 regular expressions xlalint's modules, libcst's tokenizer and the standard library
compile at import are parsed and translated by `re`'s compiler, in Python, each time
(~2%). Here each text's code object, and each expression's compiled program, is made once
and kept in a file of the user's cache folder that the next process reads back with
`marshal`, as Python keeps a module's bytecode in `__pycache__`:

- a dataclass method's code is what `compile` makes of the text (the same flags as
  `dataclasses`' own `exec`: none inherited), and `dataclasses` runs it exactly as it
  would have run its own compile;
- an expression's program is what `re._compiler.compile` hands `_sre.compile` (the flags,
  the code, the groups and their names), kept only where the pattern `_sre.compile` makes
  of it equals (`==`: flags, pattern and code; and the groups) the one `re`'s own compile
  makes, and only for a pattern compiled at a module's top level (at import: those are
  the same in every process; one made from names at run time is not kept).

The file (`<cache>/xlalint/code/<key>.marshal`) is named by a hash of the interpreter's
version and bytecode magic number, xlalint's version and libcst's version (the file stays
near one process's needs: a new release of either writes a file of its own); in it, a
code object is found by its whole text and a program by its pattern and flags, so what is
missing is compiled and the file written again (atomically, the union of what it held and
what the process added) when the process ends. A file that is missing, unreadable, of
another format or whose checksum does not match is read as empty; a folder that cannot be
written leaves the file unwritten: neither ever fails a run, they only compile as Python
would. It caches code, not results, so `--no-cache` does not bypass it (as it does not
bypass `__pycache__`); `XLALINT_NO_CODE_CACHE=1` does, and `XLALINT_CODE_CACHE_DIR`
moves it.

Only where `dataclasses` compiles its methods by a call of `exec` it looks up in its module
(CPython 3.10-3.13), and where `re._compiler` compiles as CPython 3.11-3.13's does, is
anything changed; elsewhere classes and expressions are made as usual.
"""

from __future__ import annotations

import binascii
import builtins
import dataclasses
import marshal
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

import xlalint

ENV_DIR = "XLALINT_CODE_CACHE_DIR"
ENV_OFF = "XLALINT_NO_CODE_CACHE"
_FORMAT = b"xlalint-code-store-2\n"
_CHECKSUM = 4  # bytes of CRC-32 after the format line, over the marshalled payload

# A kept expression: (flags, code, groups - 1, groupindex, indexgroup), `_sre.compile`'s
# arguments after the pattern.
Program = tuple[int, list[int], int, dict[str, int], tuple[Any, ...]]


class CodeStore:
    """Code objects by the text `dataclasses` compiled them from, and expressions'
    programs by (pattern, flags): those read from `path` (on the first asked about) and
    those made since. The file holds each entry marshalled on its own, and an entry is
    read (`marshal.loads`) when first asked for: the entries a process does not use stay
    bytes (the file's size in memory, not its objects': ~1.3 against ~4 MB)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        # key -> the entry's marshalled bytes (as read) or the entry (asked for, or made)
        self.codes: dict[Any, Any] | None = None
        self.compiled = 0  # entries made here (not found in the file)

    def _entry(self, key: Any) -> Any:
        codes = self.codes
        if codes is None:
            codes = self.codes = _read(self.path)
        found = codes.get(key)
        if type(found) is bytes:
            try:
                found = marshal.loads(found)
            except Exception:  # corrupt: made again
                found = None
            codes[key] = found
        return found

    def code(self, text: str) -> CodeType:
        code = self._entry(text)
        if type(code) is not CodeType:
            # `exec` of a text compiles it with the flags of the code calling it:
            # `dataclasses` has none (no `from __future__ import annotations`); this
            # module's are not inherited.
            code = compile(text, "<string>", "exec", dont_inherit=True)
            self.codes[text] = code  # type: ignore[index]
            self.compiled += 1
        return code

    def program(self, pattern: str | bytes, flags: int) -> Program | None:
        found = self._entry((pattern, flags))
        return found if type(found) is tuple and len(found) == 5 else None

    def keep_program(self, pattern: str | bytes, flags: int, program: Program) -> None:
        self._entry((pattern, flags))
        self.codes[(pattern, flags)] = program  # type: ignore[index]
        self.compiled += 1

    def save(self) -> None:
        """Write the file again if an entry was made here (never raises)."""
        if not self.compiled or self.path is None or self.codes is None:
            return
        self.compiled = 0
        codes = dict(_read(self.path))  # what another process may have added meanwhile
        codes.update((k, v) for k, v in self.codes.items() if v is not None)
        _write(self.path, codes)


def _read(path: Path | None) -> dict[Any, Any]:
    if path is None:
        return {}
    try:
        data = path.read_bytes()
        start = len(_FORMAT) + _CHECKSUM
        if not data.startswith(_FORMAT) or len(data) < start:
            return {}
        payload = memoryview(data)[start:]
        if binascii.crc32(payload) != int.from_bytes(data[len(_FORMAT) : start], "big"):
            return {}
        codes = marshal.loads(payload)
    except Exception:  # missing, unreadable, another Python's marshal, corrupt
        return {}
    return codes if type(codes) is dict else {}


def _write(path: Path, codes: dict[Any, Any]) -> None:
    try:
        payload = marshal.dumps(
            {key: v if type(v) is bytes else marshal.dumps(v) for key, v in codes.items()}
        )
        checksum = binascii.crc32(payload).to_bytes(_CHECKSUM, "big")
        path.parent.mkdir(parents=True, exist_ok=True)
        from xlalint.writer import replace_bytes  # at exit, once: not at start-up

        replace_bytes(path, _FORMAT + checksum + payload)
    except Exception:  # an unwritable folder, a full disk: compile again next time
        pass


def cache_folder() -> Path | None:
    """The folder of the files (`XLALINT_CODE_CACHE_DIR`, else the user's cache folder),
    or None where `XLALINT_NO_CODE_CACHE` is set or there is no home folder."""
    if os.environ.get(ENV_OFF, "") not in ("", "0"):
        return None
    configured = os.environ.get(ENV_DIR)
    if configured:
        return Path(configured)
    try:
        if sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
            return Path(base) / "xlalint" / "Cache" / "code"
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Caches" / "xlalint" / "code"
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no home folder
        return None
    return Path(base) / "xlalint" / "code"


def store_path() -> Path | None:
    folder = cache_folder()
    if folder is None:
        return None
    from importlib.util import MAGIC_NUMBER

    key = "\0".join((sys.version, MAGIC_NUMBER.hex(), xlalint.__version__, _libcst_version()))
    return folder / f"{binascii.crc32(key.encode()):08x}-{sys.implementation.cache_tag}.marshal"


def _libcst_version() -> str:
    """libcst's version without importing it (its `_version.py`), or its folder's stat."""
    from importlib.util import find_spec

    spec = find_spec("libcst")
    if spec is None or not spec.origin:
        return ""
    origin = Path(spec.origin)
    try:
        return origin.with_name("_version.py").read_text(encoding="utf-8")
    except OSError:
        try:
            stat = origin.stat()
        except OSError:
            return str(origin)
        return f"{origin}:{stat.st_size}:{stat.st_mtime_ns}"


_store: CodeStore | None = None  # the hooks', while installed
_re_compile: Any = None  # `re._compiler.compile`, while the hook replaces it


def builds_by_exec() -> bool:
    """Whether `dataclasses` compiles its methods by a call of `exec` it looks up in its
    module (CPython 3.10-3.13), and nothing shadows that name there."""
    create = getattr(dataclasses, "_create_fn", None)
    code = getattr(create, "__code__", None)
    return code is not None and "exec" in code.co_names and "exec" not in vars(dataclasses)


def _compiles_as_known() -> bool:
    """Whether `re._compiler.compile` is CPython 3.11-3.13's (`_parser.parse`, `_code`,
    then `_sre.compile` of the flags, code and groups)."""
    compiler = getattr(re, "_compiler", None)
    return (
        sys.implementation.name == "cpython"
        and (3, 11) <= sys.version_info[:2] <= (3, 13)
        and compiler is not None
        and hasattr(compiler, "_code")
        and hasattr(getattr(compiler, "_parser", None), "parse")
        and hasattr(getattr(compiler, "_sre", None), "compile")
    )


def installed() -> bool:
    return _store is not None


def install(path: Path | bool | None = True) -> bool:
    """Have `dataclasses` take its methods' code, and `re` its top-level expressions'
    programs, from the store (the file at `path`; True: `store_path()`; None or False: in
    memory only). False where it is installed already or neither can be."""
    global _store, _re_compile
    by_exec, known = builds_by_exec(), _compiles_as_known()
    if _store is not None or not (by_exec or known):
        return False
    store = CodeStore(store_path() if path is True else (path or None))

    def exec_stored(
        source: object,
        globals: dict[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
    ) -> None:
        if type(source) is str:
            source = store.code(source)
        if globals is None:  # as `exec` does: the caller's (`dataclasses` passes its own)
            caller = sys._getframe(1)
            globals = caller.f_globals
            locals = caller.f_locals if locals is None else locals
        builtins.exec(source, globals, locals)  # type: ignore[arg-type]

    if by_exec:
        dataclasses.exec = exec_stored  # type: ignore[attr-defined]
    if known:
        compiler = re._compiler  # type: ignore[attr-defined]
        _re_compile = compiler.compile
        compiler.compile = _compile_stored(store, _re_compile)
    _store = store
    return True


def _compile_stored(store: CodeStore, own: Any) -> Any:
    compiler = re._compiler  # type: ignore[attr-defined]
    parse, code_of, sre_compile = compiler._parser.parse, compiler._code, compiler._sre.compile

    def compile_stored(p: Any, flags: int = 0) -> Any:
        kind = type(p)
        if (kind is not str and kind is not bytes) or flags & re.DEBUG:
            return own(p, flags)
        flags = int(flags)
        program = store.program(p, flags)
        if program is not None:
            try:
                return sre_compile(p, *program)
            except Exception:  # not a program this `_sre` takes: compile as `re` does
                return own(p, flags)
        pattern = own(p, flags)
        if _at_import():
            try:
                parsed = parse(p, flags)
                groupindex = dict(parsed.state.groupdict)
                indexgroup = [None] * parsed.state.groups
                for name, index in groupindex.items():
                    indexgroup[index] = name
                program = (
                    int(flags | parsed.state.flags),
                    [int(c) for c in code_of(parsed, flags)],
                    int(parsed.state.groups - 1),
                    {str(name): int(index) for name, index in groupindex.items()},
                    tuple(indexgroup),
                )
                made = sre_compile(p, *program)
                if (
                    made == pattern
                    and made.groups == pattern.groups
                    and made.groupindex == pattern.groupindex
                ):
                    store.keep_program(p, flags, program)
            except Exception:  # kept only where it is `re`'s own
                pass
        return pattern

    return compile_stored


def _at_import() -> bool:
    """Whether the expression being compiled is compiled by a module's top-level code
    (the first frame outside `re`, up to a few frames out)."""
    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            return False
        name = frame.f_globals.get("__name__", "")
        if name != "re" and not name.startswith("re.") and name != __name__:
            return frame.f_code.co_name == "<module>"
        frame = frame.f_back
    return False


def uninstall() -> None:
    """Give `dataclasses` and `re` their own compiles back and write the store's file if it
    grew."""
    global _store, _re_compile
    store, _store = _store, None
    if store is None:
        return
    if "exec" in vars(dataclasses):
        del dataclasses.exec  # type: ignore[attr-defined]
    if _re_compile is not None:
        re._compiler.compile = _re_compile  # type: ignore[attr-defined]
        _re_compile = None
    store.save()


def install_for_process() -> None:
    """The command line's: the store for the whole process, its file written at exit."""
    if install():
        import atexit

        atexit.register(_save_at_exit)


def _save_at_exit() -> None:
    if _store is not None:
        _store.save()
