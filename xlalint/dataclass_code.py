"""The code of the methods `dataclasses` writes, compiled once per text and kept on disk.

`dataclasses` writes each class's `__init__`, `__repr__`, `__eq__`, `__setattr__` and
`__delattr__` as source text and compiles it when the class is made: libcst's ~200 node
classes (978 functions, 623 distinct texts) and xlalint's own (~420) at every start of a
process, about a tenth of a cold one-file check's instructions after round 24. Here each
text's code object is compiled once (a third of libcst's repeat another class's), and kept
in a file of the user's cache folder that the next process reads back with `marshal`, as
Python keeps a module's bytecode in `__pycache__`: the code is what `compile` makes of the
text (the same flags as `dataclasses`' own `exec`: none inherited), and `dataclasses` runs
it exactly as it would have run its own compile.

The file (`<cache>/xlalint/dataclass-code/<key>.marshal`) is named by a hash of the
interpreter's version and bytecode magic number, xlalint's version and libcst's version
(the file stays near one process's texts: a new release of either writes a file of its
own); in it, each code object is found by its whole text, so a text whose code is missing
is compiled and the file written again (atomically, the union of what it held and what
the process compiled) when the process ends. A file that is missing, unreadable, of
another format or whose checksum does not match is read as empty; a folder that cannot
be written leaves the file unwritten: neither ever fails a run, they only compile as
`dataclasses` would. It caches code, not results, so `--no-cache` does not bypass it (as
it does not bypass `__pycache__`); `XLALINT_NO_CODE_CACHE=1` does, and
`XLALINT_CODE_CACHE_DIR` moves it.

Only where `dataclasses` compiles its methods by a call of `exec` it looks up in its module
(CPython 3.10-3.13) is anything changed; elsewhere the classes are made as usual.
"""

from __future__ import annotations

import binascii
import builtins
import dataclasses
import marshal
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

import xlalint

ENV_DIR = "XLALINT_CODE_CACHE_DIR"
ENV_OFF = "XLALINT_NO_CODE_CACHE"
_FORMAT = b"xlalint-dataclass-code-1\n"
_CHECKSUM = 4  # bytes of CRC-32 after the format line, over the marshalled payload


class CodeStore:
    """Code objects by the text `dataclasses` compiled them from: those read from `path`
    (on the first text asked about) and those compiled since."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.codes: dict[str, CodeType] | None = None
        self.compiled = 0  # texts compiled here (not found in the file)

    def code(self, text: str) -> CodeType:
        codes = self.codes
        if codes is None:
            codes = self.codes = _read(self.path)
        code = codes.get(text)
        if type(code) is not CodeType:
            # `exec` of a text compiles it with the flags of the code calling it:
            # `dataclasses` has none (no `from __future__ import annotations`); this
            # module's are not inherited.
            code = codes[text] = compile(text, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
        return code

    def save(self) -> None:
        """Write the file again if a text was compiled here (never raises)."""
        if not self.compiled or self.path is None or self.codes is None:
            return
        self.compiled = 0
        codes = dict(_read(self.path))  # what another process may have added meanwhile
        codes.update(self.codes)
        _write(self.path, codes)


def _read(path: Path | None) -> dict[str, CodeType]:
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


def _write(path: Path, codes: dict[str, CodeType]) -> None:
    try:
        payload = marshal.dumps(codes)
        checksum = binascii.crc32(payload).to_bytes(_CHECKSUM, "big")
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            with open(scratch, "wb") as file:
                file.write(_FORMAT + checksum + payload)
            os.replace(scratch, path)
        finally:
            if scratch.exists():
                scratch.unlink()
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
            return Path(base) / "xlalint" / "Cache" / "dataclass-code"
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Caches" / "xlalint" / "dataclass-code"
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no home folder
        return None
    return Path(base) / "xlalint" / "dataclass-code"


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


_store: CodeStore | None = None  # the hook's, while installed


def builds_by_exec() -> bool:
    """Whether `dataclasses` compiles its methods by a call of `exec` it looks up in its
    module (CPython 3.10-3.13), and nothing shadows that name there."""
    create = getattr(dataclasses, "_create_fn", None)
    code = getattr(create, "__code__", None)
    return code is not None and "exec" in code.co_names and "exec" not in vars(dataclasses)


def installed() -> bool:
    return _store is not None


def install(path: Path | bool | None = True) -> bool:
    """Have `dataclasses` take its methods' code from the store (the file at `path`; True:
    `store_path()`; None or False: in memory only). False where it is installed already or
    `dataclasses` builds its methods otherwise."""
    global _store
    if _store is not None or not builds_by_exec():
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

    dataclasses.exec = exec_stored  # type: ignore[attr-defined]
    _store = store
    return True


def uninstall() -> None:
    """Give `dataclasses` its own `exec` back and write the store's file if it grew."""
    global _store
    store, _store = _store, None
    if store is None:
        return
    if "exec" in vars(dataclasses):
        del dataclasses.exec  # type: ignore[attr-defined]
    store.save()


def install_for_process() -> None:
    """The command line's: the store for the whole process, its file written at exit."""
    if install():
        import atexit

        atexit.register(_save_at_exit)


def _save_at_exit() -> None:
    if _store is not None:
        _store.save()
