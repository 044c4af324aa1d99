"""Which functions of a module other modules of the project call every step.

A helper module is often cold by its own reasoning: funasr's `metrics/compute_acc.py`
defines `th_accuracy` (a `masked_select`, `float(numerator)`) and nothing of that file
runs it; paraformer's `forward` does, every training step. `hot_elsewhere(filename,
names)` answers, for a linted file on disk, which of the functions (`"f"`) and methods
(`"Class.m"`) named another module of the project calls from code that runs per step
*there*, handing it something that may be a device tensor (not a literal, a string, a
path or a config). `HotCode` counts such a function as hot, as if a hot caller of its
own file called it, and the screen keeps it.

Finding callers, bounded: the reverse index of a package root (`project_modules.
package_root`): its own modules and its packages' (`project_modules.package_folders`, at
most `MAX_INDEX_FILES` files), their import statements read by `project_modules`' regular
expression, built once per root in a process (again when a package folder changes). A
module's callers are the files whose imports name it (and, one hop further, the files
importing a package `__init__.py` that imports it), at most `MAX_CALLERS`; of those, only
the ones whose text spells a name asked about and whose imports bind the module, the
function or its class are parsed, with CPython's `ast`, once per path and size/mtime (a
summary is kept, not the tree); nothing is imported or run; a caller that fails to parse
contributes nothing.

Per step in a caller: a function per step by its name (`forward`, `*_step`), a framework
hook of its class (`hotness.per_step_hooks`), a function that trains in its body
(backward, an optimizer step), the body of a loop that trains or steps (`x.step(...)`,
a per-step method called in it, or a function of the caller's module that trains), and
the caller's own functions that such code calls, transitively; not under a log interval
(`if step % 100 == 0:`). Not per step: run-once names (`__init__`, `setup`, `main`),
evaluation or plotting loops that step nothing, the pass of an epoch loop around a loop
that steps (a scheduler's `step` and `self.logger.log_metrics(output, step=i)` after the
batch loop run once per epoch, unless that pass trains itself). Absence of evidence stays
cold: a function no module calls per step is not hot.

Resolution: `f(...)` bound by `from .m import f` (or through a package that re-exports
it, by name or `from .m import *`), `m.f(...)` bound by `import pkg.m as m` / `from pkg
import m`; a method through a subclass the caller defines (`self.m(...)` in its per-step
code, `m` not its own), through an instance of the class the caller builds
(`self.acc = Accuracy(...)`, then `self.acc.update(...)`), one built on the spot
(`Interpolation().interpolate(...)`), or one the caller is handed and keeps, typed by its
parameter's annotation (darts' `likelihood: TorchLikelihood | None`, then `self.likelihood =
likelihood` and `self.likelihood.compute_loss(...)` in `training_step`) or by the
attribute's own (`self.model: Model = model`): the method of that
class or of any subclass of it in the module (whichever instance it is handed). A name
bound to `partial(f, ...)` (`self.encode_text = partial(t5_encode_text, name=t5_name)`,
then `self.encode_text(texts)` in `forward`) calls `f`. A template method: a method of a
class of the linted module that a base class of it in another module (its bases followed
three levels) calls through `self` from per-step code, handing it a tensor (mmengine's
`SupervisedFinetune.forward(data, mode="loss")` running `self.compute_loss(data)`, which
`DPO` overrides elsewhere): per step, as Lightning's `training_step` is.

The cache: every importer of the module and the root's package folders (one entry,
`project_modules.tree`) are noted (`project_modules.note`) where the question is asked,
so an edit of a caller, or a file added or removed in a package, re-lints the helper's
file on a warm run.
"""

from __future__ import annotations

import ast
import os
import re
import symtable
import unicodedata
import warnings
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from xlalint import ast_nodes, lint_memo
from xlalint.analysis import project_modules
from xlalint.analysis.hotness import PER_STEP_FUNCTIONS, RUN_ONCE_FUNCTIONS, per_step_hooks
from xlalint.analysis.members import _reach
from xlalint.analysis.module_reads import converts_what_it_is_handed
from xlalint.analysis.module_steps import steps_its_optimizer

MAX_INDEX_FILES = 4000
MAX_CALLERS = 64
Function = ast.FunctionDef | ast.AsyncFunctionDef
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Arguments that are no device tensor by their name: configuration, paths, loggers.
_HOST_NAME = re.compile(
    r"^_*(self|cls|cfg|conf|config|args|opts?|options|hparams|kwargs|logger|writer|"
    r"tokenizer|mode|name|device|dtype|verbose)$|(_path|path|_dir|dir|_file|filename|_name|"
    r"_cfg|_config|_conf|_args|_dtype|_device|_mode)$",
    re.I,
)
_HOST_CALLS = frozenset({"str", "len", "int", "float", "bool", "repr", "dict", "open"})


# -- the reverse index of a package root --------------------------------------------------


@dataclass(frozen=True)
class _Index:
    stamp: tuple[int, int]  # `project_modules.tree_stamp` when built
    importers: dict[str, tuple[str, ...]]  # module path -> the files importing it


_indexes: dict[str, _Index] = {}


def _index(root: str) -> _Index:
    """The index of `root`, built once per process while its package folders keep their
    stats (a file added, removed or renamed in a package changes its folder's)."""
    index = _indexes.get(root)
    if index is None or index.stamp != project_modules.tree_stamp(root):
        index = _indexes[root] = _build_index(root)
    return index


def _build_index(root: str) -> _Index:
    """Who imports whom under `root`, from the import lines of every file (no parse): the
    root's own modules and those of its packages (a script folder's files resolve no
    import of the project)."""
    importers: dict[str, list[str]] = {}
    for path, stat in _indexed_files(root):
        for imported in project_modules.module_imports(path, stat):
            importers.setdefault(imported, []).append(path)
    stamp = project_modules.tree_stamp(root)
    return _Index(stamp, {k: tuple(v) for k, v in importers.items()})


def _indexed_files(root: str) -> list[tuple[str, tuple[int, int]]]:
    """The files the index reads under `root`, with their stats, in its order: the first
    `MAX_INDEX_FILES` Python files of its package folders (a file that cannot be stat'ed
    counts toward the cap and is left out)."""
    files: list[tuple[str, tuple[int, int]]] = []
    count = 0
    for _, entries in project_modules.package_folders(root):
        for entry in entries:
            if not entry.name.endswith(".py") or count >= MAX_INDEX_FILES:
                continue
            count += 1
            stat = project_modules.stat_key(entry.path)
            if stat is not None:
                files.append((entry.path, stat))
    return files


# The callers of the first module a process asks about under a root, found without the
# index (`_callers_unindexed`): root -> (tree stamp, module path, its callers).
_first: dict[str, tuple[tuple[int, int], str, list[str]]] = {}


def _forget() -> None:
    _indexes.clear()
    _first.clear()


project_modules.on_forget(_forget)  # the language server, before each lint


def _callers_under(root: str, path: str) -> list[str]:
    """`_callers(path, _index(root))`. The first module a process asks about under `root`
    (a one-file check's, the language server's after each `forget_layout`) is answered
    without the index: only the files that may import it have their imports resolved
    (`_callers_unindexed`); a second module builds the index."""
    index = _indexes.get(root)
    stamp = project_modules.tree_stamp(root)
    if index is not None and index.stamp == stamp:
        return _callers(path, index)
    first = _first.get(root)
    if first is None or first[0] != stamp:
        first = _first[root] = (stamp, path, _callers_unindexed(root, path))
    if first[1] == path:
        return first[2]
    return _callers(path, _index(root))


def _callers(path: str, index: _Index) -> list[str]:
    """The files importing `path`, and those importing a package `__init__.py` that
    imports it (a re-export), at most `MAX_CALLERS`."""
    found = dict.fromkeys(index.importers.get(path, ()))
    for importer in list(found):
        if os.path.basename(importer) == "__init__.py":
            found.update(dict.fromkeys(index.importers.get(importer, ())))
    found.pop(path, None)
    return list(found)[:MAX_CALLERS]


def _may_import(path: str) -> Callable[[str, str], bool]:
    """A test, of a file of the root and its text, that every file whose imports resolve
    to `path` passes (`project_modules._imports_of`): a module file `m.py` is named by its
    last part, which the text spells; a package's `__init__.py` by its folder's name, or
    by a bare relative import (`from . import x`, `from .. import x`) from a file in that
    folder or under it (or, at the root, `import __init__`)."""
    word, folder = _import_word(path)
    if word is None:
        return lambda file, text: False  # only `.py` files are resolved
    if folder is not None:
        return lambda file, text: (
            _names_in_imports(text, word) or project_modules.within(os.path.dirname(file), folder)
        )
    return lambda file, text: _names_in_imports(text, word)


def _import_word(path: str) -> tuple[str | None, str | None]:
    """The word `_may_import(path)`'s text test looks for (None: no file passes), and for
    a package `__init__.py` its folder, whose files pass by their path alone."""
    folder, name = os.path.split(path)
    if name == "__init__.py":
        return os.path.basename(folder), folder
    if name.endswith(".py"):
        return name[:-3], None
    return None, None


def _may_import_raw(path: str) -> Callable[[str, bytes], bool]:
    """`_may_import(path)` answered False from a file's bytes where it surely fails, so
    the text is not decoded: a word of ASCII letters, digits and underscores that the
    bytes do not hold is not in the text `project_modules.text_at` decodes from them
    (UTF-8 with `replace`: an ASCII byte always decodes to its own character, and an
    ASCII character comes from no other byte), and `_names_in_imports` needs the word
    spelled. True means: decode, and ask `_may_import`. Round 26: 850 of the 1,105
    files a one-file check of a diffusers pipeline reads never spell its module's name."""
    word, folder = _import_word(path)
    if word is None:
        return lambda file, raw: False
    if not word.isascii():
        return lambda file, raw: True
    spelled = word.encode("ascii")
    if folder is not None:
        return lambda file, raw: (
            spelled in raw or project_modules.within(os.path.dirname(file), folder)
        )
    return lambda file, raw: spelled in raw


def _names_in_imports(text: str, word: str) -> bool:
    """Whether `text` may name the module `word` in an import: spells it (an identifier
    once not followed by a word character: each part an import resolves ends there, so
    `pipeline_stable_diffusion` is not named by `..._img2img`), where that spelling may
    sit in one of the text's import
    statements (`project_modules._IMPORT`, the statements `_imports_of` reads: every name
    it resolves is spelled in one): on a line that starts with `from` or `import` (a
    statement's first line, which holds all of it but a parenthesised list of names), or
    after a `(` that no `)` closes before it (such a list holds no `)`; the `(` of a call
    or a string only lets more through). A word that only comment lines and other code
    spell names no import, and the file's imports are not resolved (round 25: 203 of the
    204 diffusers files that spell `pipeline_stable_diffusion`, in `# Copied from`
    comments)."""
    at = text.find(word)
    if at == -1 or not word.isidentifier():
        return at != -1
    size = len(word)
    while at != -1:
        after = text[at + size : at + size + 1]
        if not (after.isalnum() or after == "_"):
            line = text[text.rfind("\n", 0, at) + 1 : at].lstrip(" \t")
            if line.startswith(("from", "import")):
                return True
            if text.find("(", text.rfind(")", 0, at) + 1, at) != -1:
                return True
        at = text.find(word, at + 1)
    return False


def _callers_unindexed(root: str, path: str) -> list[str]:
    """`_callers(path, _build_index(root))`, resolving the imports of only the files whose
    text may name `path` or a package `__init__.py` importing it (for diffusers'
    `pipeline_stable_diffusion.py`, 263 of 1,105 files): the package `__init__.py`s first,
    to know which of them import `path`, then every file once, in the index's order. A
    file whose bytes rule out every test (`_may_import_raw`) is not decoded."""
    files = _indexed_files(root)
    asks = _may_import(path)
    asks_raw = _may_import_raw(path)
    inits = []  # the package `__init__.py`s that import `path` (its re-exports)
    for file, stat in files:
        if os.path.basename(file) == "__init__.py":
            text = _text_if(file, stat, (asks_raw,))
            if (
                text is not None
                and asks(file, text)
                and project_modules.imports_among(file, text, (path,))
            ):
                inits.append(file)
    targets = [path, *inits]
    tests = [_may_import(target) for target in targets]
    raw_tests = [_may_import_raw(target) for target in targets]
    importers: dict[str, list[str]] = {target: [] for target in targets}
    for file, stat in files:
        text = _text_if(file, stat, raw_tests)
        if text is None or not any(test(file, text) for test in tests):
            continue
        imported = project_modules.imports_among(file, text, targets)
        for target in targets:
            if target in imported:
                importers[target].append(file)
    found = dict.fromkeys(importers[path])
    for importer in list(found):
        if os.path.basename(importer) == "__init__.py":
            found.update(dict.fromkeys(importers.get(importer, ())))
    found.pop(path, None)
    return list(found)[:MAX_CALLERS]


def _text_if(
    file: str, stat: tuple[int, int], tests: list[Callable[[str, bytes], bool]] | tuple
) -> str | None:
    """`project_modules.text_at(file, stat)` where one of `tests` (`_may_import_raw`) may
    pass on the file's bytes; None where none can (or it cannot be read)."""
    raw = project_modules.bytes_at(file, stat)
    if raw is None or not any(test(file, raw) for test in tests):
        return None
    return project_modules.decoded(raw)


# -- what a caller calls every step ---------------------------------------------------------


@dataclass(frozen=True)
class _Caller:
    """One caller module: its import bindings, the callees its per-step code calls (as
    spelled: `th_accuracy`, `metrics.th_accuracy`, `self.acc.update`), the `self.m` calls
    of per-step methods of each class with its bases, and what names and attributes it
    binds to constructed classes."""

    bindings: dict[str, tuple[int, str]]
    calls: frozenset[str]
    self_calls: tuple[tuple[tuple[str, ...], frozenset[str], str], ...]  # bases, own, method
    built: dict[str, str]  # `self.acc` / `acc` -> `Accuracy` (as spelled)
    # `self.likelihood` -> `TorchLikelihood` (as spelled): an attribute bound to a parameter
    # annotated with a class, which may hold an instance of any subclass of it.
    handed: dict[str, str]


@dataclass
class _Def:
    node: Function
    owner: ast.ClassDef | None
    per_step: bool


@dataclass
class _Scan:
    """The calls a block of statements makes each time it runs (not inside functions,
    lambdas and classes it defines, nor under a log interval: `if step % 100 == 0:` runs
    once every many passes), those it makes once (not in its loops), and, for each of its
    loops, the calls one pass makes once and all the calls of its body. One walk."""

    calls: list[ast.Call]
    once: list[ast.Call]
    loops: list[tuple[list[ast.Call], list[ast.Call]]]  # (one pass, the whole body)
    # For each loop, the indexes of the loops around it (outermost first).
    outer: list[tuple[int, ...]] = field(default_factory=list)


def _scan(statements: list[ast.stmt]) -> _Scan:
    scan = _Scan([], [], [])
    stack: list[tuple[ast.AST, tuple[int, ...]]] = [(s, ()) for s in reversed(statements)]
    while stack:
        node, chain = stack.pop()
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, ast.Call):
            scan.calls.append(node)
            if not chain:
                scan.once.append(node)
            else:
                scan.loops[chain[-1]][0].append(node)
                for index in chain:
                    scan.loops[index][1].append(node)
        if isinstance(node, _LOOPS):
            scan.loops.append(([], []))
            scan.outer.append(chain)
            inner = (*chain, len(scan.loops) - 1)
            head = [node.iter if isinstance(node, ast.For | ast.AsyncFor) else node.test]
            stack.extend((child, chain) for child in head)  # evaluated where the loop is
            body = [*node.body, *node.orelse]
            stack.extend((child, inner) for child in reversed(body))
            continue
        if isinstance(node, ast.If) and _interval(node.test):
            stack.extend((child, chain) for child in (*reversed(node.orelse), node.test))
            continue
        stack.extend((child, chain) for child in ast_nodes.child_nodes(node))
    return scan


def _interval(test: ast.expr) -> bool:
    """`step % every == 0`, `not (i % k)`, `log and i % k == 0`: a test that holds once
    every many passes."""
    if isinstance(test, ast.BinOp):
        return isinstance(test.op, ast.Mod)
    if isinstance(test, ast.Compare):
        return any(_interval(side) for side in (test.left, *test.comparators))
    if isinstance(test, ast.UnaryOp):
        return _interval(test.operand)
    if isinstance(test, ast.BoolOp):
        return any(_interval(value) for value in test.values)
    return False


def _steps(call: ast.Call) -> bool:
    """`loss.backward()`, `optimizer.step()`: a call that trains."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    return func.attr == "backward" or steps_its_optimizer(call)


def _local_callee(call: ast.Call) -> str | None:
    """`self.m(...)` / `f(...)` -> the name a function of the module may have."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        return func.attr
    return None


def _may_be_tensor(node: ast.expr) -> bool:
    """Not a literal, a string, a path or a configuration: a value that may be a tensor."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Constant | ast.JoinedStr | ast.Lambda | ast.Dict):
        return False
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return any(_may_be_tensor(element) for element in node.elts)
    if isinstance(node, ast.Call):
        func = node.func
        return not (isinstance(func, ast.Name) and func.id in _HOST_CALLS)
    if isinstance(node, ast.Name | ast.Attribute):
        spelled = project_modules.dotted_name(node)
        last = spelled.rsplit(".", 1)[-1] if spelled else ""
        return _HOST_NAME.search(last) is None
    return True


def _hands_a_tensor(call: ast.Call) -> bool:
    return any(_may_be_tensor(arg) for arg in call.args) or any(
        keyword.arg is not None and _may_be_tensor(keyword.value) for keyword in call.keywords
    )


def _spelled(call: ast.Call) -> str | None:
    """`metrics.th_accuracy`, `self.acc.update`; `Interpolation().interpolate` for a
    method called on an instance built on the spot."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        built = project_modules.dotted_name(func.value.func)
        if built is not None and built.rsplit(".", 1)[-1][:1].isupper():
            return f"{built}().{func.attr}"
        return None
    return project_modules.dotted_name(func)


@dataclass
class _PerStep:
    """A module's functions and methods (`defs`, with one `_Scan` each), the indexes of
    those that run every step (`per_step`), and every call its per-step code makes
    (`hot_calls`): what a caller's summary and a base's template calls read."""

    defs: list[_Def]
    scans: list[_Scan]
    per_step: set[int]
    hot_calls: list[ast.Call]


def _per_step(tree: ast.Module) -> _PerStep:
    defs: list[_Def] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.append(_Def(node, None, False))
        elif isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, Function)]
            bases = [
                b.rsplit(".", 1)[-1] for b in map(project_modules.dotted_name, node.bases) if b
            ]
            hooks = per_step_hooks([*bases, node.name], [m.name for m in methods])
            for method in methods:
                defs.append(_Def(method, node, method.name in hooks))
    scans = [_scan(item.node.body) for item in defs]
    trains: set[str] = set()
    for item, scan in zip(defs, scans, strict=True):
        if item.node.name not in RUN_ONCE_FUNCTIONS and any(_steps(c) for c in scan.once):
            trains.add(item.node.name)
    # A function is one training step if it calls one of the module's functions that is
    # (once per call: a function looping over batches is an epoch).
    changed = True
    while changed:
        changed = False
        for item, scan in zip(defs, scans, strict=True):
            name = item.node.name
            if name in trains or name in RUN_ONCE_FUNCTIONS:
                continue
            if any(_local_callee(c) in trains for c in scan.once):
                trains.add(name)
                changed = True

    def trains_per_pass(calls: list[ast.Call]) -> bool:
        """One pass of a loop (`calls`: not its inner loops') trains."""
        return any(_steps(node) or _local_callee(node) in trains for node in calls)

    def steps_per_pass(calls: list[ast.Call]) -> bool:
        """One pass of a loop (`calls`: not its inner loops') is a step: trains or steps."""
        for node in calls:
            func = node.func
            if _steps(node) or _local_callee(node) in trains:
                return True
            if isinstance(func, ast.Attribute) and PER_STEP_FUNCTIONS.match(func.attr):
                return True  # `scheduler.step(...)`, `model.training_step(batch)`
        return False

    def stepping_loops(scan: _Scan) -> Iterator[list[ast.Call]]:
        """The bodies of the loops of `scan` whose passes are steps. A loop around one
        whose passes step is an epoch loop: what its own pass calls besides (a scheduler's
        `step` after the batch loop, `self.logger.log_metrics(output, step=i)` once the
        dev loop is done) runs once per epoch, not per step, unless the pass itself trains
        (a generator's step after the discriminator's inner loop)."""
        stepping = [steps_per_pass(one_pass) for one_pass, _ in scan.loops]
        epochs = {k for j, outer in enumerate(scan.outer) if stepping[j] for k in outer}
        for k, (one_pass, body) in enumerate(scan.loops):
            if stepping[k] and (k not in epochs or trains_per_pass(one_pass)):
                yield body

    hot_calls: list[ast.Call] = []
    pending: list[int] = []
    for index, item in enumerate(defs):
        name = item.node.name
        if name in RUN_ONCE_FUNCTIONS:
            continue
        if item.per_step or PER_STEP_FUNCTIONS.match(name) or name in trains:
            pending.append(index)
    # Loops that step, wherever they are (module-level code included): their calls.
    module_scan = _scan(tree.body)
    for index, scan in enumerate((module_scan, *scans)):
        if index and defs[index - 1].node.name in RUN_ONCE_FUNCTIONS - {"main"}:
            continue
        for body in stepping_loops(scan):
            hot_calls.extend(body)
    by_name: dict[str, list[int]] = {}
    for index, item in enumerate(defs):
        by_name.setdefault(item.node.name, []).append(index)
    for call in hot_calls:
        name = _local_callee(call)
        if name is not None and name not in RUN_ONCE_FUNCTIONS:
            pending.extend(by_name.get(name, ()))
    per_step: set[int] = set()
    while pending:
        index = pending.pop()
        if index in per_step:
            continue
        per_step.add(index)
        for call in scans[index].calls:
            hot_calls.append(call)
            name = _local_callee(call)
            if name is not None and name not in RUN_ONCE_FUNCTIONS:
                pending.extend(by_name.get(name, ()))
    return _PerStep(defs, scans, per_step, hot_calls)


def _template_calls(code: _PerStep) -> dict[str, frozenset[str]]:
    """Each class's `self.m` calls handing a tensor from its per-step methods, its own
    methods included: a template method (mmengine's `forward(mode="loss")` calling
    `self.compute_loss(data)`, which a subclass elsewhere overrides)."""
    template_calls: dict[str, set[str]] = {}
    for index in code.per_step:
        item = code.defs[index]
        if item.owner is not None:
            template_calls.setdefault(item.owner.name, set()).update(
                call.func.attr
                for call in code.scans[index].calls
                if isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "self"
                and _hands_a_tensor(call)
            )
    return {name: frozenset(called) for name, called in template_calls.items()}


def _summary(tree: ast.Module, bindings: dict[str, tuple[int, str]]) -> _Caller:
    code = _per_step(tree)
    defs, scans, per_step, hot_calls = code.defs, code.scans, code.per_step, code.hot_calls
    assignments = _assignments(tree)
    partials = _partials(assignments)
    calls = frozenset(
        partials.get(spelled, spelled)
        for call in hot_calls
        if _hands_a_tensor(call) and (spelled := _spelled(call)) is not None
    )
    self_calls: list[tuple[tuple[str, ...], frozenset[str], str]] = []
    for index in per_step:
        item = defs[index]
        if item.owner is None or not item.owner.bases:
            continue
        bases = tuple(b for b in map(project_modules.dotted_name, item.owner.bases) if b)
        own = frozenset(
            m.name for m in item.owner.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
        )
        for call in scans[index].calls:
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and func.attr not in own
                and _hands_a_tensor(call)
            ):
                self_calls.append((bases, own, func.attr))
    built: dict[str, str] = {}
    for node in assignments.calls:
        spelled = project_modules.dotted_name(node.value.func)  # type: ignore[attr-defined]
        if spelled is None or not spelled.rsplit(".", 1)[-1][:1].isupper():
            continue
        for target in node.targets:
            if (held := project_modules.dotted_name(target)) is not None:
                built.setdefault(held, spelled)
    return _Caller(
        bindings,
        calls,
        tuple(self_calls),
        built,
        _handed(assignments),
    )


@dataclass
class _Assignments:
    """A module's assignments of a call's result (`calls`) and of a plain name (`named`, by
    each function they sit in, nested ones included), and its functions, each in
    `ast.walk`'s order (which, restricted to a function's nodes, is `ast.walk(function)`'s):
    what a caller's summary reads for instances built, partials and instances handed, from
    one walk of the tree (three walks, and one more per function with an annotated
    parameter, were most of the summary's cost)."""

    calls: list[ast.Assign] = field(default_factory=list)
    named: dict[int, list[ast.Assign]] = field(default_factory=dict)  # by id of a function
    functions: list[Function] = field(default_factory=list)
    # `self.model: Model = model`: attributes bound with a class annotation of their own.
    annotated: list[ast.AnnAssign] = field(default_factory=list)


def _assignments(tree: ast.Module) -> _Assignments:
    found = _Assignments()
    todo: deque[tuple[ast.AST, tuple[int, ...]]] = deque([(tree, ())])
    while todo:
        node, owners = todo.popleft()
        kind = type(node)
        if kind is ast.Assign:
            value = type(node.value)  # type: ignore[attr-defined]
            if value is ast.Call:
                found.calls.append(node)  # type: ignore[arg-type]
            elif value is ast.Name:
                for owner in owners:
                    found.named.setdefault(owner, []).append(node)  # type: ignore[arg-type]
        elif kind is ast.AnnAssign:
            if owners and node.value is not None:  # type: ignore[attr-defined]
                found.annotated.append(node)  # type: ignore[arg-type]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            found.functions.append(node)  # type: ignore[arg-type]
            owners = (*owners, id(node))
        todo.extend((child, owners) for child in ast_nodes.child_nodes(node))
    return found


def _partials(assignments: _Assignments) -> dict[str, str]:
    """`self.encode_text = partial(t5_encode_text, name=t5_name)` (or `functools.partial`):
    calling the name it is bound to calls the function it wraps (muse-maskgit's
    `self.encode_text(texts)` in `forward`)."""
    partials: dict[str, str] = {}
    for node in assignments.calls:
        if not (
            node.value.args  # type: ignore[attr-defined]
            and (project_modules.dotted_name(node.value.func) or "").rsplit(".", 1)[-1] == "partial"
        ):
            continue
        wrapped = project_modules.dotted_name(node.value.args[0])
        if wrapped is None:
            continue
        for target in node.targets:
            if (held := project_modules.dotted_name(target)) is not None:
                partials.setdefault(held, wrapped)
    return partials


def _handed(assignments: _Assignments) -> dict[str, str]:
    """`self.likelihood = likelihood` in a method whose parameter is annotated with a class
    (`likelihood: TorchLikelihood | None = None`, `Optional[Loss]`): the attribute holds an
    instance the caller is handed, of that class or of any subclass of it. So does an
    attribute a method binds with a class annotation of its own (`self.model: Model =
    model`): it declares what the attribute holds, whatever the parameter's annotation."""
    handed: dict[str, str] = {}
    for node in assignments.annotated:
        held = project_modules.dotted_name(node.target)
        if (
            held is not None
            and held.startswith("self.")
            and (spelled := _annotated_class(node.annotation)) is not None
        ):
            handed.setdefault(held, spelled)
    for function in assignments.functions:
        arguments = function.args
        annotated = {
            arg.arg: spelled
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            if arg.annotation is not None
            and (spelled := _annotated_class(arg.annotation)) is not None
        }
        if not annotated:
            continue
        for node in assignments.named.get(id(function), ()):
            if node.value.id in annotated:  # type: ignore[attr-defined]
                for target in node.targets:
                    held = project_modules.dotted_name(target)
                    if held is not None and held.startswith("self."):
                        handed.setdefault(held, annotated[node.value.id])
    return handed


def _annotated_class(annotation: ast.expr) -> str | None:
    """`TorchLikelihood`, `losses.Loss`, `Loss | None`, `Optional[Loss]`: the one class an
    annotation names (capitalized, as spelled); None for anything else."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        kept = [s for s in sides if not (isinstance(s, ast.Constant) and s.value is None)]
        return _annotated_class(kept[0]) if len(kept) == 1 else None
    if isinstance(annotation, ast.Subscript):
        spelled = project_modules.dotted_name(annotation.value)
        if spelled is None or spelled.rsplit(".", 1)[-1] != "Optional":
            return None
        return _annotated_class(annotation.slice)
    spelled = project_modules.dotted_name(annotation)
    if spelled is None or not spelled.rsplit(".", 1)[-1][:1].isupper():
        return None
    return spelled


@lru_cache(maxsize=2048)
def _caller_at(path: str, stat: tuple[int, int]) -> _Caller | None:
    text = project_modules.text_at(path, stat)
    tree = None if text is None else project_modules.parse(path, text)
    # The bindings `_bound` read already: one dict per caller, not two.
    return None if tree is None else _summary(tree, _bindings_at(path, stat))


@lru_cache(maxsize=8192)
def _bindings_at(path: str, stat: tuple[int, int]) -> dict[str, tuple[int, str]]:
    """What a module's import statements bind, from their text (no parse)."""
    text = project_modules.text_at(path, stat)
    return {} if text is None else project_modules.bindings(text)


def _class_bases(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Each top-level class of a module with its bases, as spelled."""
    return {
        node.name: tuple(b for b in map(project_modules.dotted_name, node.bases) if b)
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


@dataclass
class _Classes:
    """What following a class's bases through a module needs of it: its import bindings
    and its classes' bases (as spelled), without the summary of its per-step code, which
    `_called_by_bases` asks of a module only where its text spells a method asked about
    (`_templates_at`)."""

    bindings: dict[str, tuple[int, str]]
    class_bases: dict[str, tuple[str, ...]]


@lru_cache(maxsize=2048)
def _classes_at(path: str, stat: tuple[int, int]) -> _Classes | None:
    """A module's `_Classes` (None where `_caller_at` is None: no text, or no parse). Its
    classes' bases come from the tree the lint holds, else from its top-level class
    statements alone (`_top_level_class_bases`): the chase of a class's bases reads
    whole modules for a few lines each (round 26: 66 ms of parses in a one-file check of
    a diffusers pipeline, `lora_pipeline.py`'s 327 kB for its classes' headers)."""
    text = project_modules.text_at(path, stat)
    if text is None:
        return None
    tree = project_modules.held(path, text)
    if project_modules.not_held(tree):
        bases = _top_level_class_bases(path, text)
    else:
        bases = None if tree is None else _class_bases(tree)  # type: ignore[arg-type]
    return None if bases is None else _Classes(_bindings_at(path, stat), bases)


def _top_level_class_bases(path: str, text: str) -> dict[str, tuple[str, ...]] | None:
    """`_class_bases(project_modules.parse(path, text))` (None where it does not parse),
    without building the module's whole tree: CPython's `symtable` parses the text (the
    same parser, without the tree's Python objects: about a third of `ast.parse`'s
    cost) and names its module-level classes with their lines; those whose `class` starts
    its line (only form feeds before it, which reset the indentation: a class in an `if`
    or `try` block is indented, and no other statement can precede one on its line) are
    the tree's top-level ones, and each one's header alone is parsed for its bases. Where
    `symtable` fails (it also rejects what only the compiler checks, such as `nonlocal`
    at module level) or a header does not read as expected, the module is parsed whole."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = symtable.symtable(text, path, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        table = None
    if table is not None:
        # The parser's lines: `\r\n` and a lone `\r` end a line as `\n` does.
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        bases: dict[str, tuple[str, ...]] | None = {}
        for child in table.get_children():
            if child.get_type() != "class":
                continue
            found = _class_header(lines, child.get_lineno(), child.get_name())
            if found is False:
                bases = None
                break
            if found is not None and bases is not None:
                bases[child.get_name()] = found
        if bases is not None:
            return bases
    tree = project_modules.parse(path, text)
    return None if tree is None else _class_bases(tree)


def _class_header(lines: list[str], row: int, name: str) -> tuple[str, ...] | bool | None:
    """The bases (as spelled) of the class statement `name` on line `row` (1-based) if it
    is a top-level statement, None if it is not, False if its header does not read as
    the class: the shortest run of lines from `row` that parses as the statement, with a
    body of its own (`class A(B): pass`) or one added (`class A(\n    B,\n):`)."""
    if row < 1 or row > len(lines):
        return False
    line = lines[row - 1]
    start = len(line) - len(line.lstrip(" \t\f"))
    if line[:start].rpartition("\f")[2] or not line.startswith("class", start):
        return None  # indented (a nested block's), or not a `class` line
    header = [line[start:]]
    for end in range(row, len(lines) + 1):
        if end > row:
            header.append(lines[end - 1])
        text = "\n".join(header)
        for candidate in (text + "\n pass", text):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    statement = ast.parse(candidate).body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            node = statement[0] if len(statement) == 1 else None
            if not isinstance(node, ast.ClassDef) or node.name != name:
                return False
            return tuple(b for b in map(project_modules.dotted_name, node.bases) if b)
    return False


@lru_cache(maxsize=2048)
def _templates_at(path: str, stat: tuple[int, int]) -> dict[str, frozenset[str]] | None:
    """A base module's `_template_calls` (None where it has no text or does not parse):
    its per-step code alone, without the assignments and calls a caller's summary
    (`_caller_at`) also reads."""
    text = project_modules.text_at(path, stat)
    tree = None if text is None else project_modules.parse(path, text)
    return None if tree is None else _template_calls(_per_step(tree))


def _may_call(path: str, stat: tuple[int, int], methods: set[str]) -> bool:
    """Whether a module's text may spell one of `methods` (`_may_spell`): a `self.m(...)`
    call its per-step code makes (`_template_calls`) spells `m` as a word. True
    where a name is not ASCII (`_WORD` starts words at ASCII letters) or the text is not
    in NFKC form (Python reads a fullwidth `m`, U+FF4D, as `m`: the call would not spell
    the name)."""
    if not all(method.isascii() for method in methods) or not _spelled_as_read(path, stat):
        return True
    return _may_spell(path, stat, frozenset(methods))


@lru_cache(maxsize=4096)
def _spelled_as_read(path: str, stat: tuple[int, int]) -> bool:
    """Whether a module's text spells every identifier as Python reads it (ASCII, or in
    NFKC form), once per path and stat: a base module is asked about for each of its
    subclasses' files."""
    text = project_modules.text_at(path, stat)
    return text is not None and (text.isascii() or unicodedata.is_normalized("NFKC", text))


# -- the answer ----------------------------------------------------------------------------


Bindings = dict[str, tuple[int, str]]


def _target(caller_path: str, bindings: Bindings, spelled: str) -> tuple[str, str] | None:
    """`metrics.th_accuracy` in a caller -> (the module file, "th_accuracy"), following a
    package `__init__.py` that re-exports the name one hop."""
    head, _, rest = spelled.partition(".")
    binding = bindings.get(head)
    if binding is None:
        return None
    level, dotted = binding
    full = f"{dotted}.{rest}" if rest else dotted
    module, _, name = full.rpartition(".")
    if not name:
        return None
    path = project_modules.resolve(caller_path, level, module)
    if path is None:
        return None
    if os.path.basename(path) == "__init__.py" and (stat := _stat(path)):
        project_modules.note((path,))
        again = _bindings_at(path, stat).get(name)
        if again is not None:
            inner, _, inner_name = again[1].rpartition(".")
            if inner and (found := project_modules.resolve(path, again[0], inner)):
                return found, inner_name
        for source in _star_sources(path, stat):  # `from .utils import *`
            if (source_stat := _stat(source)) and name in _defined(source, source_stat):
                return source, name
    return path, name


_STAR = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\*", re.M)


@lru_cache(maxsize=1024)
def _star_sources(path: str, stat: tuple[int, int]) -> tuple[str, ...]:
    """The project modules a package `__init__.py` re-exports whole (`from .m import *`)."""
    text = project_modules.text_at(path, stat) or ""
    found = (
        project_modules.resolve(path, len(dots), module) for dots, module in _STAR.findall(text)
    )
    return tuple(p for p in found if p is not None)


_DEFINED = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)


@lru_cache(maxsize=1024)
def _defined(path: str, stat: tuple[int, int]) -> frozenset[str]:
    """The module's own name and the names its top-level `def`s and `class`es bind (a
    regular expression: what a binding must mention to lead to it)."""
    text = project_modules.text_at(path, stat) or ""
    stem = os.path.basename(os.path.dirname(path) if path.endswith("__init__.py") else path)
    return frozenset({stem.removesuffix(".py"), *_DEFINED.findall(text)})


def _bound(own: str, caller_path: str, bindings: Bindings) -> frozenset[str]:
    """The names of the module's definitions that the caller's imports bind (`"*"`: the
    module itself, through which any of them may be called)."""
    stat = _stat(own)
    names = _defined(own, stat) if stat else frozenset()
    found: set[str] = set()
    for name, (level, dotted) in bindings.items():
        if not names.intersection(dotted.split(".")):
            continue  # names neither the module nor one of its definitions
        if project_modules.resolve(caller_path, level, dotted) == own:
            found.add("*")
            continue
        target = _target(caller_path, bindings, name)
        if target is not None and target[0] == own:
            found.add(target[1])
    return frozenset(found)


def _reached(own: str, caller_path: str, caller: _Caller) -> Iterator[str]:
    """What of `own` the caller's per-step code calls: `"f"`, `"Class.m"`."""
    for spelled in caller.calls:
        found = _target(caller_path, caller.bindings, spelled)
        if found is not None and found[0] == own:
            yield found[1]
            continue
        holder, _, method = spelled.rpartition(".")
        built = holder[:-2] if holder.endswith("()") else caller.built.get(holder)
        if built is not None:
            found = _target(caller_path, caller.bindings, built)
            if found is not None and found[0] == own:
                yield f"{found[1]}.{method}"
        elif (handed := caller.handed.get(holder)) is not None:
            found = _target(caller_path, caller.bindings, handed)
            if found is not None and found[0] == own:
                # An instance of the annotated class or of a subclass: the method of
                # whichever it is, as `_ANY_SUBCLASS` marks for `hot_elsewhere`.
                yield f"{found[1]}{_ANY_SUBCLASS}.{method}"
    for bases, _own, method in caller.self_calls:
        for base in bases:
            found = _target(caller_path, caller.bindings, base)
            if found is not None and found[0] == own:
                yield f"{found[1]}.{method}"


@lint_memo.memo(8192)
def _stat_in_lint(path: str) -> tuple[int, int] | None:
    return project_modules.stat_key(path)


def _stat(path: str) -> tuple[int, int] | None:
    """A caller's (or a module's) size and mtime, taken once per lint: a file asks about
    several of its functions, each over the same callers (and the depfile notes the
    first stat anyway). Outside a lint, a fresh stat."""
    return _stat_in_lint(path) if lint_memo.in_lint() else project_modules.stat_key(path)


_ANY_SUBCLASS = "+"  # `Base+.m`: the method `m` of `Base` or of any subclass of it


@lru_cache(maxsize=1024)
def _subclasses_at(path: str, stat: tuple[int, int]) -> dict[str, frozenset[str]]:
    """Each class of a module with the module's classes that derive from it, directly or
    not (bases by their last name), itself included."""
    text = project_modules.text_at(path, stat)
    tree = None if text is None else project_modules.parse(path, text)
    if tree is None:
        return {}
    bases = {
        node.name: {b.rsplit(".", 1)[-1] for b in map(project_modules.dotted_name, node.bases) if b}
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    derived: dict[str, set[str]] = {}
    for cls, of in bases.items():
        for base in of:
            derived.setdefault(base, set()).add(cls)
    return {name: frozenset({name} | _reach(name, derived)) for name in bases}


def _dispatched(own: str, reached: set[str]) -> set[str]:
    """`Base+.m` -> `Base.m` and `Sub.m` for every subclass `Sub` of `Base` in `own`."""
    plain = {entry for entry in reached if _ANY_SUBCLASS not in entry}
    marked = reached - plain
    if not marked:
        return plain
    stat = _stat(own)
    family = _subclasses_at(own, stat) if stat else {}
    for entry in marked:
        base, _, method = entry.partition(f"{_ANY_SUBCLASS}.")
        plain.update(f"{klass}.{method}" for klass in family.get(base, {base}))
    return plain


_WORD = re.compile(r"[A-Za-z_]\w*+")  # possessive: the same words, no backtracking state
_HASH_BITS = 0xFFFFFFFF


@lru_cache(maxsize=4096)
def _words_at(path: str, stat: tuple[int, int]) -> array[int]:
    """The identifiers a module's text spells, as their sorted 32-bit hashes: a caller
    that never spells a name cannot call it (checked before the caller is parsed). A
    hash shared by chance only lets a caller through to the parse that decides; a set of
    the words themselves held ~80 kB per large caller, a large share of a worker's memory
    on a large project."""
    text = project_modules.text_at(path, stat) or ""
    # Each distinct word hashed once (a module spells ~20x fewer words than it writes).
    return array("I", sorted({hash(word) & _HASH_BITS for word in set(_WORD.findall(text))}))


def _spells(words: array[int], names: frozenset[str]) -> bool:
    """Whether `words` (`_words_at`) may hold one of `names`."""
    for name in names:
        key = hash(name) & _HASH_BITS
        at = bisect_left(words, key)
        if at < len(words) and words[at] == key:
            return True
    return False


def _may_spell(path: str, stat: tuple[int, int], names: frozenset[str]) -> bool:
    """Whether a module's text spells one of `names` as a word (`_WORD`). For the first
    `_SEARCHES` sets of names asked about a path and stat, its text is searched for them
    (`_text_spells`, each answer kept); after that its word hashes answer (`_words_at`,
    made then and kept for the run). A one-file check asks about each of its callers and
    bases for one set of names (its lint and its forecast's lints alike), and hashing
    every word of ~40 modules was 4% of it (round 24); a whole tree asks about a caller
    for each module it imports. A word the hashes hold by chance only lets a module
    through to the parse that decides, so both ways decide the same."""
    searched = _searched(path, stat)
    answer = searched.get(names)
    if answer is None:
        if len(searched) >= _SEARCHES:
            return _spells(_words_at(path, stat), names)
        answer = searched[names] = _text_spells(project_modules.text_at(path, stat) or "", names)
    return answer


_SEARCHES = 2


@lru_cache(maxsize=4096)
def _searched(path: str, stat: tuple[int, int]) -> dict[frozenset[str], bool]:
    """The sets of names a module's text was searched for (`_may_spell`), with the answers."""
    return {}


_WORD_CHARACTER = re.compile(r"\w")


def _text_spells(text: str, names: frozenset[str]) -> bool:
    """Whether `_WORD.findall(text)` holds one of `names`, without listing the words: a
    word runs from the first ASCII letter or underscore of a run of word characters to the
    run's end (`9abc` spells `abc`; `x9abc` does not)."""
    for name in names:
        if _WORD.fullmatch(name) is None:
            continue  # not one word: no word is spelled so
        at = text.find(name)
        while at >= 0:
            end = at + len(name)
            if (end == len(text) or _WORD_CHARACTER.match(text, end) is None) and _starts_a_word(
                text, at
            ):
                return True
            at = text.find(name, at + 1)
    return False


def _starts_a_word(text: str, at: int) -> bool:
    """Whether `_WORD`'s scan starts a word at `at` (an ASCII letter or underscore): no
    ASCII letter or underscore comes before it in its run of word characters."""
    before = at - 1
    while before >= 0 and _WORD_CHARACTER.match(text, before) is not None:
        character = text[before]
        if character == "_" or ("a" <= character <= "z") or ("A" <= character <= "Z"):
            return False
        before -= 1
    return True


def hot_elsewhere(filename: str, names: frozenset[str]) -> frozenset[str]:
    """Of the functions (`"f"`) and methods (`"Class.m"`) of `filename` named in `names`,
    those that another module of its project calls every step (empty for a text without a
    file on disk). Only callers whose text spells one of them and whose imports bind the
    module, the function or the class are parsed.
    The callers and the index's folders are noted for the file's cache entry."""
    # A run-once name is never hot, and no resolved call reaches a dunder method.
    names = frozenset(
        n for n in names if (last := n.rsplit(".", 1)[-1]) not in RUN_ONCE_FUNCTIONS
        and last[:2] != "__"
    )  # fmt: skip
    if not names or not project_modules.is_on_disk(filename):
        return frozenset()
    own = os.path.abspath(filename)
    lasts = frozenset(n.rsplit(".", 1)[-1] for n in names)
    heads = frozenset(n.split(".", 1)[0] for n in names) | {"*"}
    if any("." in n for n in names) and (own_stat := _stat(own)):
        # A caller handed an instance of a base class may run a subclass's method.
        heads |= {
            base
            for base, family in _subclasses_at(own, own_stat).items()
            if not heads.isdisjoint(family)
        }
    root = project_modules.package_root(own)
    callers = _callers_under(root, own)
    project_modules.note((project_modules.tree(root),))  # a caller added or removed
    found: set[str] = set()
    project_modules.note(callers, _stat)
    for path in callers:
        stat = _stat(path)
        if stat is None or not _may_spell(path, stat, lasts):
            continue
        if heads.isdisjoint(_bound(own, path, _bindings_at(path, stat))):
            continue  # binds neither the module nor a function or class asked about
        caller = _caller_at(path, stat)
        if caller is not None:
            found.update(_reached(own, path, caller))
    found.update(_called_by_bases(own, names))
    # A conversion helper's read is reported at its callers' calls (`module_reads.py`).
    return frozenset(
        n for n in _dispatched(own, found) & names if not converts_what_it_is_handed(own, n)
    )


_BASE_LEVELS = 3  # a class's bases followed this many levels into other modules


def _called_by_bases(own: str, names: frozenset[str]) -> Iterator[str]:
    """The methods (`"Class.m"`) of `own` that a base class of `Class` in another project
    module calls through `self` from its per-step code: a template method. xtuner's
    `SupervisedFinetune.forward(data, mode="loss")` runs `self.compute_loss(data)` every
    training step (mmengine's `BaseModel.train_step` calls the model), so `DPO`'s
    `compute_loss`, overriding it in another module, runs every step, as Lightning's
    `training_step` does; so does a hook the base's per-step method calls (`self.
    _shared_step(batch)`). The bases' modules are noted for the file's cache entry."""
    asked: dict[str, set[str]] = {}
    for name in names:
        klass, _, method = name.rpartition(".")
        if klass:
            asked.setdefault(klass, set()).add(method)
    stat = _stat(own) if asked else None
    if not stat:
        return
    mine = _classes_at(own, stat)
    if mine is None:
        return
    for klass, methods in asked.items():
        level: list[tuple[str, _Classes, str]] = [(own, mine, klass)]
        seen: set[tuple[str, str]] = set()
        for _ in range(_BASE_LEVELS):
            following: list[tuple[str, _Classes, str]] = []
            for path, module, cls in level:
                for base in module.class_bases.get(cls, ()):
                    if "." not in base and base in module.class_bases:
                        where: tuple[str, str] | None = (path, base)
                    else:
                        where = _target(path, module.bindings, base)
                    if where is None or where in seen:
                        continue
                    seen.add(where)
                    base_stat = _stat(where[0])
                    if base_stat is None:
                        continue
                    project_modules.note((where[0],), _stat)
                    held = module if where[0] == path else _classes_at(where[0], base_stat)
                    if held is None or where[1] not in held.class_bases:
                        continue
                    if where[0] != own and _may_call(where[0], base_stat, methods):
                        templates = _templates_at(where[0], base_stat)
                        if templates is None:  # not reached: `held` is of the same parse
                            continue
                        for method in methods & templates.get(where[1], frozenset()):
                            yield f"{klass}.{method}"
                    following.append((where[0], held, where[1]))
            level = following
            if not level:
                break


# -- command-line defaults the project declares --------------------------------------------

# `parser.add_argument("--logging_steps", type=int, default=100)`: the option's spelling
# (dashes or underscores) and its integer default, within one call.
_ADD_ARGUMENT = re.compile(
    r"add_argument\(\s*(?:['\"]-\w['\"]\s*,\s*)?['\"]--([\w-]+)['\"]([^()]*(?:\([^()]*\)[^()]*)*)\)"
)
_INT_DEFAULT = re.compile(r"\bdefault\s*=\s*(\d+)\s*(?:[,)]|$)")


# The interval options of transformers' `TrainingArguments` (`Seq2SeqTrainingArguments`
# and the dataclasses deriving from it inherit them) and their defaults: an
# `HfArgumentParser` over such a dataclass declares them (`--logging_steps`, 500).
_HF_TRAINING_INTERVALS: dict[str, int | None] = {"logging_steps": 500, "save_steps": 500}
_HF_PARSER = re.compile(r"\bHfArgumentParser\s*\(")
# A dataclass field the project declares with an integer default
# (`logging_steps: int = 10`, `logging_steps: int = field(default=10, metadata=...)`).
_INT_FIELD = re.compile(
    r"^[ \t]+(\w+)[ \t]*:[ \t]*(?:Optional\[int\]|int)[ \t]*=[ \t]*"
    r"(?:field\([^)]*?\bdefault[ \t]*=[ \t]*)?(\d+)\b",
    re.MULTILINE,
)


def _option_defaults(text: str) -> dict[str, list[int | None]]:
    """The integer default of each `--option` a text declares with argparse (None for one
    declared without an integer default), by its attribute name (`logging_steps`). A
    text that builds an `HfArgumentParser` declares the options of the dataclasses it
    parses: transformers' `TrainingArguments` intervals with the library's defaults
    (`logging_steps`, 500), unless a dataclass of the text declares the field with a
    default of its own (`logging_steps: int = field(default=10)`)."""
    found: dict[str, list[int | None]] = {}
    if _HF_PARSER.search(text):
        fields = {m.group(1): int(m.group(2)) for m in _INT_FIELD.finditer(text)}
        for option, default in _HF_TRAINING_INTERVALS.items():
            found[option] = [fields.get(option, default)]
    if "add_argument" not in text:
        return found
    for match in _ADD_ARGUMENT.finditer(text):
        default = _INT_DEFAULT.search(match.group(2))
        found.setdefault(match.group(1).replace("-", "_"), []).append(
            int(default.group(1)) if default else None
        )
    return found


@lru_cache(maxsize=4096)
def _option_defaults_at(path: str, stat: tuple[int, int]) -> dict[str, list[int | None]]:
    text = project_modules.text_at(path, stat)
    return {} if text is None else _option_defaults(text)


def declared_defaults(filename: str, text: str, option: str) -> list[int | None]:
    """The defaults the project declares for the command-line option `option` (read as
    `args.logging_steps`): in the linted file's own text and in the files of its package
    root that import it (the training script building the parser and handing `args` to
    `train_one_epoch`, also a script beside it importing it by its bare name, `from
    train_utils import train_one_epoch`), each a default per declaration (None: no integer
    default). Empty
    where none declares it, or the file is not on disk. The importers are noted for the
    file's cache entry."""
    found = list(_option_defaults(text).get(option, ()))
    if not project_modules.is_on_disk(filename):
        return found
    own = os.path.abspath(filename)
    root = project_modules.package_root(own)
    callers = [*_callers_under(root, own), *_script_importers(own)]
    project_modules.note((project_modules.tree(root),))
    project_modules.note(callers, _stat)
    for path in dict.fromkeys(callers):
        stat = _stat(path)
        if stat is not None:
            found.extend(_option_defaults_at(path, stat).get(option, ()))
    return found


def _script_importers(path: str) -> list[str]:
    """The scripts in `path`'s own folder that import it by its bare name (`from
    train_utils import train_one_epoch`, `import train_utils`): run from that folder,
    Python finds it beside them, as no import from the package root spells it."""
    folder, name = os.path.split(path)
    if not name.endswith(".py") or name == "__init__.py":
        return []
    stem = re.escape(name[:-3])
    spelled = re.compile(rf"^[ \t]*(?:from[ \t]+{stem}[ \t]+import\b|import[ \t]+{stem}\b)", re.M)
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        other = os.path.join(folder, entry)
        if not entry.endswith(".py") or other == path:
            continue
        stat = _stat(other)
        text = None if stat is None else project_modules.text_at(other, stat)
        if text is not None and spelled.search(text):
            found.append(other)
    return found
