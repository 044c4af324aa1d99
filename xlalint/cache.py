"""Per-file lint results cached by content, so an unchanged tree is not parsed again.

An entry is named by a digest of everything the result depends on: xlalint's own code (its
version plus a fingerprint of its installed sources, so an edited checkout never serves
results of older rules), the Python and libcst versions (syntax errors are theirs), the
file's rule set after `per-file-ignores`, `hot-functions`, the file name (fixes differ in
`__init__.py`) and the file's bytes. A changed input is a different name, so nothing is
ever invalidated in place: stale entries are just never read again (`xlalint clean` drops
them).

What a lint learnt from the project's other modules (`analysis/project_modules.py`: a base
class's step) is a depfile, as build systems keep: the entry lists the modules the lint
actually consulted with their size and mtime then, and a hit re-stats them; any
difference (edited, deleted) is a miss. So a warm run resolves no import, and most files,
which consult nothing, record nothing. A module created later that an existing import
would now resolve to is not seen until the file itself changes (or `xlalint clean`).

Unlike ruff, files with findings are cached too. Entries are JSON (never pickle: a cache
folder may be writable by others), written atomically; an entry that cannot be read or
decoded is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import xlalint
from xlalint.analysis import project_modules
from xlalint.analysis.xla_api import LATEST, Release
from xlalint.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    Location,
)
from xlalint.registry import rule_ids
from xlalint.rule import Rule
from xlalint.writer import replace_bytes

CACHE_DIR_NAME = ".xlalint_cache"
ENV_CACHE_DIR = "XLALINT_CACHE_DIR"
ENV_NO_CACHE = "XLALINT_NO_CACHE"
FORMAT = 4  # bump when the entry layout changes (4: the depfile, "deps")
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by xlalint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class StaleEntry(Exception):
    """An entry whose recorded modules (its depfile) changed since: a miss."""


class CleanError(Exception):
    """A folder `xlalint clean` refuses to delete because it is not an xlalint cache."""


# Subpackages that never change a file's lint result: the runtime harness and the output
# formats (applied to results after the cache). Edits there keep the cache warm.
_NOT_LINTING = ("harness", "report")


@cache
def code_fingerprint() -> str:
    """xlalint's version plus the size and mtime of each source file that can change a
    lint result.

    Releases change the version; a development checkout changes its files. Stats, not
    contents: a hundred stats cost about a millisecond.
    """
    package = Path(xlalint.__file__).parent
    digest = hashlib.blake2b(digest_size=16)
    for part in (xlalint.__version__, sys.version, _libcst_version(), str(FORMAT)):
        digest.update(part.encode() + b"\0")
    for folder, dirs, files in os.walk(package):
        top = os.path.samefile(folder, package)
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (top and d in _NOT_LINTING))
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return f"{xlalint.__version__}-{digest.hexdigest()}"


def _libcst_version() -> str:
    """libcst's version, read from its `_version.py` without importing libcst (0.2 s) or
    `importlib.metadata` (~30 ms); from the package metadata where that file is missing."""
    spec = importlib.util.find_spec("libcst")
    if spec is not None and spec.origin:
        try:
            return Path(spec.origin).with_name("_version.py").read_text(encoding="utf-8")
        except OSError:
            pass
    from importlib import metadata

    return metadata.version("libcst")


def default_cache_dir(root: Path) -> Path:
    """`XLALINT_CACHE_DIR` if set, else `.xlalint_cache` in the project root."""
    configured = os.environ.get(ENV_CACHE_DIR)
    return Path(configured) if configured else root / CACHE_DIR_NAME


@dataclass(frozen=True)
class ResultCache:
    """The entries under one cache folder. Picklable: worker processes store their own."""

    directory: Path

    @property
    def entries(self) -> Path:
        # One subfolder per version keeps `clean` meaningful and old entries out of the way.
        return self.directory / xlalint.__version__

    def key(
        self,
        filename: str,
        raw: bytes,
        rules: Sequence[type[Rule]],
        hot_functions: Sequence[str],
        target: Release = LATEST,
    ) -> str:
        prefix = _prefix(rule_ids(rules), tuple(hot_functions), target)
        digest = hashlib.blake2b(prefix, digest_size=20)
        digest.update(filename.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
        digest.update(raw)
        return digest.hexdigest()

    def load(self, key: str, filename: str) -> FileResult | None:
        """The cached result, or None on a miss, an unusable entry or one whose recorded
        modules changed since."""
        try:
            with open(self.entries / f"{key}.json", "rb") as handle:
                return decode(json.loads(handle.read()), filename)
        except Exception:  # a missing, truncated, foreign or stale entry is just a miss
            return None

    def store(self, key: str, result: FileResult) -> None:
        """Write an entry atomically; a cache that cannot be written is silently skipped."""
        self.store_data(key, encode(result))

    def load_data(self, key: str) -> Any:
        """Another kind of entry (its key says which), or None on a miss."""
        try:
            with open(self.entries / f"{key}.json", "rb") as handle:
                return json.loads(handle.read())
        except Exception:  # a missing, truncated or foreign entry is just a miss
            return None

    def store_data(self, key: str, value: Any) -> None:
        try:
            self._prepare()
            data = json.dumps(value, separators=(",", ":")).encode()
            replace_bytes(self.entries / f"{key}.json", data)
        except OSError:
            pass  # read-only or full: lint without caching

    def _prepare(self) -> None:
        if self.entries.is_dir():
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "*\n")):
            path = self.directory / name
            if not path.exists():
                path.write_text(content, encoding="utf-8")

    def clean(self) -> bool:
        """Delete the cache folder; False if there was none. Refuses a folder without
        xlalint's CACHEDIR.TAG, so a mistyped `--cache-dir` cannot delete a user's files."""
        if not self.directory.exists():
            return False
        tag = self.directory / "CACHEDIR.TAG"
        try:
            ours = tag.read_text(encoding="utf-8").startswith(CACHEDIR_TAG.splitlines()[0])
        except (OSError, UnicodeDecodeError):
            ours = False
        if not ours:
            raise CleanError(f"{self.directory}: not an xlalint cache (no CACHEDIR.TAG); kept")
        import shutil  # only `xlalint clean` deletes (shutil brings bz2, lzma)

        shutil.rmtree(self.directory)
        return True


@dataclass(frozen=True)
class MemoryCache(ResultCache):
    """Entries kept by this process only, for `check --no-cache`: the closing fix forecast
    starts from the check's own result for the same bytes, as it does with a cache on disk,
    and nothing is read from or written to a folder. Entries go through the same encoding
    as on disk, so a result loaded here is the one a disk cache would give."""

    directory: Path = Path()
    _entries: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def load(self, key: str, filename: str) -> FileResult | None:
        data = self._entries.get(key)
        try:
            return None if data is None else decode(data, filename)
        except StaleEntry:
            return None

    def load_data(self, key: str) -> Any:
        return self._entries.get(key)

    def store_data(self, key: str, value: Any) -> None:
        self._entries[key] = value

    def clean(self) -> bool:
        return False


@cache
def _prefix(rules: tuple[str, ...], hot_functions: tuple[str, ...], target: Release) -> bytes:
    """`rules`: the rules' ids (`registry.rule_ids`), so that a key never imports a rule."""
    parts = [code_fingerprint(), *sorted(rules), f"target:{target}", "hot:", *hot_functions]
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=32).digest()


# -- serialization: exact, compact, no filename (the key already fixes it) ----------------


def encode(result: FileResult) -> dict[str, Any]:
    deps = {"deps": encode_deps(result.deps)} if result.deps else {}
    if result.error is not None:
        where = result.error.location
        return {"error": result.error.reason, **({"at": _loc(where)} if where else {}), **deps}
    return {"diagnostics": [_encode_diagnostic(d) for d in result.diagnostics], **deps}


def encode_deps(deps: project_modules.Deps) -> list[list[Any]]:
    """The depfile as JSON: `[path, size, mtime_ns]`, `[path]` for a module missing then."""
    return [[path, *stat] if stat is not None else [path] for path, stat in deps]


def current_deps(data: dict[str, Any]) -> project_modules.Deps:
    """An entry's depfile; raises `StaleEntry` when a recorded module changed (a miss)."""
    deps = tuple(
        (_str(item[0]), (_int(item[1]), _int(item[2])) if len(item) == 3 else None)
        for item in data.get("deps", ())
    )
    if deps and not project_modules.current(deps):
        raise StaleEntry
    return deps


def _encode_diagnostic(d: Diagnostic) -> list[Any]:
    fix = None
    if d.fix is not None:
        edits = [[*_loc(e.start), *_loc(e.end), e.content] for e in d.fix.edits]
        fix = [
            d.fix.applicability.value,
            d.fix.description,
            edits,
            list(d.fix.required_imports),
            d.fix.group,
        ]
    return [
        *(d.code, d.name, d.message, *_loc(d.start), *_loc(d.end)),
        *(fix, d.hint, d.noqa_row, d.cell),
    ]


def _loc(location: Location) -> tuple[int, int]:
    return location.row, location.column


def decode(data: dict[str, Any], filename: str) -> FileResult:
    """The inverse of `encode`; raises on anything malformed, or `StaleEntry` when a module
    the lint consulted changed since (the caller treats either as a miss)."""
    deps = current_deps(data)
    if "error" in data:
        at = data.get("at")
        where = Location(_int(at[0]), _int(at[1])) if at is not None else None
        error = FileError(filename, _str(data["error"]), where)
        return FileResult(filename, error=error, deps=deps)
    diagnostics = [_decode_diagnostic(item, filename) for item in data["diagnostics"]]
    return FileResult(filename, diagnostics, deps=deps)


def _decode_diagnostic(item: list[Any], filename: str) -> Diagnostic:
    code, name, message, r1, c1, r2, c2, fix, hint, noqa_row, cell = item
    return Diagnostic(
        code=_str(code),
        name=_str(name),
        message=_str(message),
        filename=filename,
        start=Location(_int(r1), _int(c1)),
        end=Location(_int(r2), _int(c2)),
        fix=None if fix is None else _decode_fix(fix),
        hint=None if hint is None else _str(hint),
        noqa_row=None if noqa_row is None else _int(noqa_row),
        cell=None if cell is None else _int(cell),
    )


def _decode_fix(item: list[Any]) -> Fix:
    applicability, description, edits, imports, group = item
    return Fix(
        Applicability(applicability),
        _str(description),
        tuple(
            Edit(Location(_int(r1), _int(c1)), Location(_int(r2), _int(c2)), _str(content))
            for r1, c1, r2, c2, content in edits
        ),
        tuple(_str(i) for i in imports),
        None if group is None else _str(group),
    )


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value
