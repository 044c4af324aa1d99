"""The modules of the linted file's own project that it imports, found on disk.

A training step is often another module's: a subclass calls `self.optimizer_update(...)`
that its base class, in a file of its own, defines. `module_steps.py` reads such modules;
this module says which ones a file may consult, and records those a lint actually
consulted (`recording`), the depfile its cache entry keeps, so that editing a base class
re-lints its subclasses' files.

Bounds, all by design: only files under the linted file's package root (the parent of
its topmost folder holding an `__init__.py`; a script's own folder), found from the
import statements of the file's text (`import a.b`, `from .m import x`, `from a import
b`, wherever they sit) and, one hop further, of those modules' texts; at most
`MAX_MODULES` of them. Nothing is imported or run: modules are read and parsed with
CPython's `ast` (`module_steps.py` keeps a summary of each per path and size/mtime, not
the tree), and a module that cannot be read or parsed contributes nothing. A text
without a file on disk (stdin, an unsaved buffer, a notebook) consults nothing.

The import statements are found by a regular expression rather than a parse: most files
that ask are answered from the modules they import, without parsing the file again. A
warm run resolves nothing: it re-stats the paths a cache entry recorded.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from xlalint import lint_memo

MAX_MODULES = 48
HOPS = 2
_MAX_BYTES = 1 << 21  # a larger "module" is generated code: nothing to learn from it
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)"
    r"|import[ \t]+([^\n;#]+))",
    re.M,
)
_NAME = re.compile(r"[A-Za-z_]\w*")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_COMMENT = re.compile(r"#[^\n]*")


def _import_statements(text: str) -> Iterator[re.Match[str]]:
    """`_IMPORT.finditer(text)`, tried only at the starts of lines that spell `import` (a
    statement's first line always does): `str.find` skips the rest of a module ten times
    faster than the expression's own scan, most of a package's reverse index."""
    end = 0  # where the last statement ended: the search goes on from there
    at = text.find("import")
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        if start >= end and (match := _IMPORT.match(text, start)):
            yield match
            end = match.end()
        line_end = text.find("\n", at)
        if line_end == -1:
            return
        at = text.find("import", max(line_end + 1, end))


def package_root(filename: str) -> str:
    """The folder absolute imports of `filename` start from: the parent of its topmost
    package folder, or its own folder outside a package. A folder without an
    `__init__.py` inside a package (at most `NAMESPACE_DEPTH` folders below one) is a
    namespace portion of it, as Python imports it (facenet-pytorch's
    `facenet_pytorch/models/utils/detect_face.py`, with only `facenet_pytorch/__init__.py`,
    is `facenet_pytorch.models.utils.detect_face`). A topmost folder without one (a PEP 420
    namespace package, `instructlab/` over the package `instructlab/training/`) is the root,
    and absolute imports spelled through its name (`instructlab.training.model`) resolve
    inside it (`_namespace_base`)."""
    return _root_of(os.path.dirname(os.path.abspath(filename)))


NAMESPACE_DEPTH = 2


def _is_package(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "__init__.py"))


@lru_cache(maxsize=1024)
def _root_of(folder: str) -> str:
    root = folder
    while True:
        if not _is_package(root):
            portion_of = root
            for _ in range(NAMESPACE_DEPTH):
                portion_of = os.path.dirname(portion_of)
                if _is_package(portion_of):
                    break
            else:
                return root
            root = portion_of
        parent = os.path.dirname(root)
        if parent == root:
            return root
        root = parent


def _module_file(base: str, dotted: str) -> str | None:
    """`base/a/b.py` or `base/a/b/__init__.py` for `a.b`, if it exists."""
    parts = [p for p in dotted.split(".") if p]
    path = os.path.join(base, *parts)
    if parts and os.path.isfile(path + ".py"):
        return path + ".py"
    init = os.path.join(path, "__init__.py")
    return init if os.path.isfile(init) else None


def within(path: str, root: str) -> bool:
    """`_within`, for the other layers."""
    return _within(path, root)


def _within(path: str, root: str) -> bool:
    """Whether `path` is `root` or under it (both absolute and normal, as `abspath` and
    `_root_of` make them): a prefix test, not `commonpath`'s split of both."""
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def resolve(filename: str, level: int, dotted: str) -> str | None:
    """The project file that `dotted` (after `level` dots) names, seen from `filename`
    (remembered per folder for a process: a module that appears during a run is not
    seen until the next)."""
    return _resolve(os.path.join(os.path.dirname(os.path.abspath(filename)), ""), level, dotted)


@lru_cache(maxsize=8192)
def _resolve(folder: str, level: int, dotted: str) -> str | None:
    base, root = _start(folder, level)
    return None if base is None else _resolve_in(base, dotted, root)


@lru_cache(maxsize=4096)
def _start(folder: str, level: int) -> tuple[str | None, str]:
    """For the files of `folder` (absolute, ending in a separator, as `resolve` spells
    it): the folder a relative import of `level` dots starts from (the root for 0; None
    where it would leave the package root), and their package root, in one pass."""
    base = os.path.dirname(folder + "-")
    root = _root_of(base)
    if level == 0:
        return root, root
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return (base if _within(base, root) else None), root


@lru_cache(maxsize=8192)
def _resolve_in(base: str, dotted: str, root: str) -> str | None:
    """`_resolve` past the folder of the importing file: shared by the files of a root
    whose imports start from the same folder (`from diffusers.utils import x` anywhere,
    `from ...utils import x` at one depth), so each module is looked up once."""
    found = _module_file(_namespace_base(base, dotted, root), dotted)
    return found if found is not None and _within(found, root) else None


def _namespace_base(base: str, dotted: str, root: str) -> str:
    """Where an absolute import starts: the root, or, where the root is a namespace
    package that the import names (PEP 420: `instructlab/` without an `__init__.py`
    holding the package `training/`, imported as `instructlab.training.accelerator`),
    the folder above it, as Python finds such a package on its path."""
    if base != root or _is_package(root):
        return base
    first = dotted.split(".", 1)[0]
    return os.path.dirname(root) if first and first == os.path.basename(root) else base


@lru_cache(maxsize=4096)
def _is_folder(folder: str, level: int, dotted: str) -> bool:
    """Whether `dotted` (after `level` dots, seen from `folder`) is a folder on disk: the
    only place `from dotted import name` can find a submodule `name` (most `from`
    imports name a module's functions, or another project's: a stat, not one per name)."""
    base, root = _start(folder, level)
    if base is None:
        return False
    parts = [p for p in dotted.split(".") if p]
    return os.path.isdir(os.path.join(_namespace_base(base, dotted, root), *parts))


def bindings(text: str) -> dict[str, tuple[int, str]]:
    """What the import statements of `text` bind: name -> (dots, dotted target), `from
    ..m import x as y` -> `y: (2, "m.x")`, `import a.b` -> `a: (0, "a")`. The same
    statements `consulted` reads, so a binding never leads past the modules it names."""
    found: dict[str, tuple[int, str]] = {}
    for match in _import_statements(text):
        dots, module, names, plain = match.groups()
        if plain is not None:
            for part in plain.split(","):
                dotted, _, alias = part.strip().partition(" as ")
                dotted, alias = dotted.strip(), alias.strip()
                if _DOTTED.fullmatch(dotted):
                    if alias:
                        found[alias] = (0, dotted)
                    else:
                        found[dotted.split(".", 1)[0]] = (0, dotted.split(".", 1)[0])
            continue
        for part in _COMMENT.sub("", names).strip("()").split(","):
            name, _, alias = part.strip().partition(" as ")
            name, alias = name.strip(), alias.strip()
            if _NAME.fullmatch(name):
                found[alias or name] = (len(dots or ""), f"{module}.{name}" if module else name)
    return found


def _imports_of(filename: str, text: str) -> list[str]:
    """The project files that the import statements of `text` name (modules, and the
    submodules a `from` import may bind)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(filename)), "")
    found: list[str] = []
    for match in _import_statements(text):
        dots, module, names, plain = match.groups()
        if plain is not None:
            for part in plain.split(","):
                dotted = part.split(" as ")[0].strip()
                if dotted and (path := _resolve(folder, 0, dotted)):
                    found.append(path)
            continue
        level = len(dots or "")
        if path := _resolve(folder, level, module):
            found.append(path)
        if not _is_folder(folder, level, module):
            continue  # `from torch import nn`, `from .m import f`: no submodule to find
        for name in _NAME.findall(names.replace(" as ", " ")):
            sub = f"{module}.{name}" if module else name
            if path := _resolve(folder, level, sub):
                found.append(path)
    own = os.path.abspath(filename)
    return list(dict.fromkeys(p for p in found if p != own))


def imports_among(filename: str, text: str, targets: Collection[str]) -> set[str]:
    """`set(imports_of(filename, text)) & set(targets)`, resolving only the imports that
    may name one of `targets` (the callers question asks which of a few modules a file
    imports): `_module_file` finds `.../m.py` or `.../m/__init__.py` only for a dotted name
    whose last part is `m` (`pkg.__init__` finds `pkg/__init__.py` as a module file), and
    the starting folder's `__init__.py` for one with no part (`from . import x`), so an
    import spelled otherwise cannot resolve to a target."""
    words: set[str] = set()
    bare = False  # a target is a package `__init__.py`: `from . import x` may name it
    for target in targets:
        folder, name = os.path.split(target)
        if name.endswith(".py"):
            words.add(name[:-3])
        if name == "__init__.py":
            words.add(os.path.basename(folder))
            bare = True

    def may(dotted: str) -> bool:
        parts = [part for part in dotted.split(".") if part]
        return parts[-1] in words if parts else bare

    folder = os.path.join(os.path.dirname(os.path.abspath(filename)), "")
    found: set[str] = set()
    for match in _import_statements(text):
        dots, module, names, plain = match.groups()
        if plain is not None:
            for part in plain.split(","):
                dotted = part.split(" as ")[0].strip()
                if dotted and may(dotted) and (path := _resolve(folder, 0, dotted)):
                    found.add(path)
            continue
        level = len(dots or "")
        if may(module) and (path := _resolve(folder, level, module)):
            found.add(path)
        subs = [name for name in _NAME.findall(names.replace(" as ", " ")) if name in words]
        if not subs or not _is_folder(folder, level, module):
            continue
        for name in subs:
            if path := _resolve(folder, level, f"{module}.{name}" if module else name):
                found.add(path)
    found.discard(os.path.abspath(filename))
    return found & set(targets)


def imports_of(filename: str, text: str) -> list[str]:
    """The project files that the import statements of `text` name, as the file
    `filename` (`module_imports` without its memo, for a text already read)."""
    return _imports_of(filename, text)


def stat_key(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _read(path: str, stat: tuple[int, int]) -> bytes | None:
    """The file's bytes up to its end, as `open(path, "rb").read()` gives them, in four
    system calls rather than nine (no buffered reader, which also asks whether the file
    is a terminal, for its size twice and its position twice): the one-file callers
    question reads every module of its root (1,105 for diffusers). The end is read in a
    small buffer: a file's bytes are not copied again where it has not grown."""
    if stat[0] > _MAX_BYTES:
        return None
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        data = os.read(handle, stat[0] + 1)  # its size at the stat, and one more byte
        more = os.read(handle, 1 << 12)  # its end (or what it grew by since the stat)
        if not more:
            return data
        chunks = [data, more]
        while chunks[-1]:
            chunks.append(os.read(handle, 1 << 16))
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(handle)


def text_at(path: str, stat: tuple[int, int]) -> str | None:
    """A module's text (UTF-8, as nearly all are), read once its stat has been taken
    (the key of the caller's cache: no second stat); None if it cannot be read."""
    raw = _read(path, stat)
    return None if raw is None else decoded(raw)


def bytes_at(path: str, stat: tuple[int, int]) -> bytes | None:
    """A module's bytes, as `text_at` reads them (None where it gives None), for a caller
    that may rule the text out before decoding it (`decoded`)."""
    return _read(path, stat)


def decoded(raw: bytes) -> str:
    """The text `text_at` gives for a module's bytes."""
    return raw.decode("utf-8", "replace")


@lru_cache(maxsize=8192)
def module_imports(path: str, stat: tuple[int, int]) -> tuple[str, ...]:
    """The project files a module's import statements name (once per path and stat)."""
    text = text_at(path, stat)
    return () if text is None else tuple(_imports_of(path, text))


def forget_layout() -> None:
    """Forget which files exist where (package roots, resolved imports): a long-lived
    process (the language server) asks before each lint, so a module created since is
    found. Module summaries need no forgetting: they are keyed by size and mtime."""
    _root_of.cache_clear()
    _resolve.cache_clear()
    _resolve_in.cache_clear()
    _start.cache_clear()
    _is_folder.cache_clear()
    _consulted.cache_clear()
    _stamps.clear()
    for forget in _forgetting:
        forget()


_forgetting: list[Callable[[], None]] = []


def on_forget(forget: Callable[[], None]) -> None:
    """Have `forget_layout` call `forget` too (an index built from the layout)."""
    _forgetting.append(forget)


def is_on_disk(filename: str) -> bool:
    """Only a file on disk, a Python module, has a project to consult."""
    return filename.endswith((".py", ".pyi")) and os.path.isfile(filename)


def consulted(filename: str, text: str, hops: int = HOPS) -> tuple[str, ...]:
    """The project modules `filename` (whose text is `text`) may consult, in a stable
    order: those it imports, then those they import, at most `MAX_MODULES`. (Asked by
    the analysis only, when a question needs another module: never by a cache lookup.)"""
    if not is_on_disk(filename):
        return ()
    return _consulted(os.path.abspath(filename), text, hops)


def note_consulted(filename: str, text: str, hops: int = HOPS) -> tuple[str, ...]:
    """`consulted`, noted for the cache entry as what decides the list: the modules whose
    imports it follows (every hop but the last) by their stats, those of the last hop,
    entered by name only, by their existence (`exists`). An edit of a last-hop module
    changes neither the list nor, unless a layer reads the module, the result; a layer
    that reads one notes it by its stat itself (`module_steps._module`,
    `module_reads.module_summary`), so that edit still re-lints where it counts. (The
    stats of the whole list re-linted the three HunyuanDiT pipelines of diffusers for an
    edit of `pipeline_stable_diffusion.py`, which none of them reads.)"""
    paths = consulted(filename, text, hops)
    followed = frozenset(consulted(filename, text, hops - 1)) if hops > 1 else frozenset()
    note(p for p in paths if p in followed)
    note(exists(p) for p in paths if p not in followed)
    return paths


# One file's question (keyed by its whole text): a memo of its lint, not of the process.
@lint_memo.memo(8)
def _consulted(filename: str, text: str, hops: int) -> tuple[str, ...]:
    found = dict.fromkeys(_imports_of(filename, text))
    frontier = list(found)
    for _ in range(hops - 1):
        following: list[str] = []
        for path in frontier:
            stat = stat_key(path)
            for imported in module_imports(path, stat) if stat else ():
                if imported not in found:
                    found[imported] = None
                    following.append(imported)
        frontier = following
    own = os.path.abspath(filename)
    return tuple(p for p in found if p != own)[:MAX_MODULES]


def lend(path: str, text: str, tree: ast.Module) -> None:
    """Lend `parse` the linted file's own tree (the engine's guard parse of `text`) for
    the lint: the layers that summarise modules from disk meet the linted file as well
    (its own helpers, its callers' index), and parsed it a second time."""
    _lent[os.path.abspath(path)] = (text, tree)


_lent: dict[str, tuple[str, ast.Module]] = lint_memo.scratch()


def parse(path: str, text: str) -> ast.Module | None:
    """A module's CPython tree; None if it fails (a module that does not parse tells
    nothing). Callers keep what they learn from it, not the tree; within a lint, the
    summaries of the same module by several layers share one parse (`_parsed`), and the
    linted file's is the engine's where the text on disk is the text linted."""
    lent = _lent.get(path)
    if lent is not None and lent[0] == text:
        return lent[1]
    return _parsed(path, text) if lint_memo.in_lint() else _parse(path, text)


_NOT_HELD = object()


def held(path: str, text: str) -> ast.Module | object | None:
    """The tree `parse(path, text)` would give without parsing: the linted file's own
    (`lend`), or one the lint in progress holds (None: the text does not parse);
    `_NOT_HELD` where it would have to parse."""
    lent = _lent.get(path)
    if lent is not None and lent[0] == text:
        return lent[1]
    kept = _trees.get(path) if lint_memo.in_lint() else None
    if kept is not None and kept[0] == text:
        return kept[1]
    return _NOT_HELD


def not_held(tree: ast.Module | object | None) -> bool:
    """Whether `held` found no tree (it gave `_NOT_HELD`)."""
    return tree is _NOT_HELD


# The trees of other modules parsed in the lint in progress, by path, with their texts:
# the most recently asked stay while their texts add up to `_HELD_TEXT` (the newest
# always does). A lint's layers meet the same base module a few modules apart: in a
# one-file check of a diffusers pipeline, `module_reads` and `module_steps` each parsed
# the 118 kB `pipeline_utils.py`, other modules between, while one tree was held.
_HELD_TEXT = 1 << 19
_trees: dict[str, tuple[str, ast.Module | None]] = lint_memo.scratch()


def _parsed(path: str, text: str) -> ast.Module | None:
    held = _trees.pop(path, None)
    if held is not None and held[0] == text:
        _trees[path] = held  # the most recently asked again
        return held[1]
    tree = _parse(path, text)
    _trees[path] = (text, tree)
    size = sum(len(kept) for kept, _ in _trees.values())
    for old in list(_trees):
        if size <= _HELD_TEXT or old == path:
            break
        size -= len(_trees.pop(old)[0])
    return tree


def _parse(path: str, text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# -- the depfile: which modules a lint consulted, with their stats at the time ----------

Deps = tuple[tuple[str, tuple[int, int] | None], ...]
_recording: ContextVar[dict[str, tuple[int, int] | None] | None] = ContextVar(
    "xlalint_consulted_modules", default=None
)


@contextmanager
def recording() -> Iterator[dict[str, tuple[int, int] | None]]:
    """Collect, while the block runs, every module path the analysis consulted (the lists
    it computed and the modules it read) with its `stat_key` when first noted: what a
    cached result of this lint depends on besides the file itself."""
    noted: dict[str, tuple[int, int] | None] = {}
    token = _recording.set(noted)
    try:
        yield noted
    finally:
        _recording.reset(token)


def note(paths: Iterable[str], stat: Callable[[str], tuple[int, int] | None] | None = None) -> None:
    """Record `paths` as consulted by the lint in progress (nothing outside `recording`).
    The first stat wins: it is the one the analysis saw (`stat`: how the caller takes
    it, if it keeps the stats of its files). A `tree(root)` path stands for the package
    folders of `root` (`tree_stamp`)."""
    noted = _recording.get()
    if noted is None:
        return
    for path in paths:
        if path not in noted:
            noted[path] = _stat_of(path) if stat is None else stat(path)


# -- the package folders of a root, as one depfile entry ----------------------------------

_TREE = os.sep + "*"
_SKIPPED_FOLDERS = frozenset(
    {"node_modules", "__pycache__", "build", "dist", "site-packages", "venv", "env"}
)
_stamps: dict[str, tuple[int, int]] = {}


def tree(root: str) -> str:
    """The depfile path that stands for the package folders under `root`."""
    return root.rstrip(os.sep) + _TREE


def package_folders(root: str) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """`root` and its packages (folders with an `__init__.py`, followed down; inside a
    package also its namespace portions, folders without one that hold a module), each
    with its entries, sorted by name (hidden and build folders skipped): where a module
    of the project can be."""
    pending = [(root, False)]
    while pending:
        folder, portion = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        if portion and not any(entry.name.endswith(".py") for entry in entries):
            continue  # data or assets inside a package, no module
        yield folder, entries
        for entry in reversed(entries):
            name = entry.name
            if name.startswith(".") or name in _SKIPPED_FOLDERS:
                continue
            if entry.is_dir(follow_symlinks=False):
                if os.path.isfile(os.path.join(entry.path, "__init__.py")):
                    pending.append((entry.path, False))
                elif folder != root:
                    pending.append((entry.path, True))


def tree_stamp(root: str) -> tuple[int, int]:
    """The number of package folders under `root` and a digest of their sizes and mtimes
    (not the root's own: a repository's top, where outputs and caches come and go): a file
    added, removed or renamed in a package changes it. Once per root in a process (a
    warm run checks hundreds of entries against it); `forget_layout` forgets it."""
    stamp = _stamps.get(root)
    if stamp is None:
        digest = hashlib.blake2b(digest_size=7)
        count = 0
        for folder, _ in package_folders(root):
            if folder != root:
                count += 1
                digest.update(f"{folder}\0{stat_key(folder)}\0".encode())
        stamp = _stamps[root] = (count, int.from_bytes(digest.digest(), "big"))
    return stamp


def _stat_of(path: str) -> tuple[int, int] | None:
    if path.endswith(_TREE):
        return tree_stamp(path[: -len(_TREE)])
    if path.endswith(_EXISTS):
        return _PRESENT if stat_key(path[: -len(_EXISTS)]) is not None else None
    return stat_key(path)


# A depfile path that stands for a module's existence alone, whatever its size and mtime
# (`note_consulted`); no module's path ends so (`?` is no character of a Windows file name).
_EXISTS = "?"
_PRESENT = (1, 1)


def exists(path: str) -> str:
    """The depfile path that stands for whether `path` exists, not for its stat."""
    return path + _EXISTS


def frozen(noted: dict[str, tuple[int, int] | None]) -> Deps:
    """The recorded modules in a stable order (by path), for a cache entry; a module's
    existence is not recorded beside its stat, which says as much."""
    return tuple(
        sorted(
            (path, stat)
            for path, stat in noted.items()
            if not (path.endswith(_EXISTS) and path[: -len(_EXISTS)] in noted)
        )
    )


def current(deps: Deps) -> bool:
    """Whether every recorded module still has the stat it had (a deleted one has none):
    a cached result is valid only then."""
    return all(_stat_of(path) == stat for path, stat in deps)


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` spelled out, for a name or a chain of attributes on one; else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])
