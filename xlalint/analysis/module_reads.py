"""Host reads inside the functions of other project modules that a call hands a value to.

`from ..dataclass_utils import asdict_as_float`, then `asdict_as_float(loss)` every step;
`from TTS.tts.utils.measures import alignment_diagonal_score`, then
`alignment_diagonal_score(outputs["alignments"])` in `train_step`: the read happens in
another file, on the value this file hands over. `ModuleReads.read(call, position)` says
whether the function a call reaches in a module the file imports (`f` bound by `from m
import f`, `m.f` by `import m` / `from . import m`, `Cls.m` for a static method of an
imported class, through one re-export of a package's `__init__.py`) reads the parameter
that argument binds on the host (`param_reads.summarize`), itself or in a function of its
module it hands the value on to (two hops).

Bounded as `module_steps.py` is: only the modules `project_modules.consulted` names, read
with CPython's `ast` once per path and size/mtime in a process (a summary per function that
reads a parameter, not the tree); a module that names XLA or TPUs contributes nothing.
Every list computed and module read is noted (`project_modules.note`) for the file's
cache entry, so editing the helper re-lints its callers' files.
"""

from __future__ import annotations

import ast
import os
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from xlalint import lint_memo
from xlalint.analysis import project_modules
from xlalint.analysis.devices import names_xla
from xlalint.analysis.hotness import PER_STEP_FUNCTIONS
from xlalint.analysis.param_reads import Function, Read, Summary, summarize

_HOPS = 2  # the function called, and one function of a module it hands the value to


@dataclass(frozen=True)
class _Module:
    """One project module: the summaries of its functions and of its classes' methods
    (`Class.m`) that read or hand on a parameter, and what its imports bind."""

    path: str
    functions: Mapping[str, Summary]
    bindings: dict[str, tuple[int, str]]
    knows_xla: bool


@dataclass(frozen=True)
class Found:
    """A host read a call causes in another module: the function called (as its module
    spells it), the read, and the file the read is in."""

    function: str
    read: Read
    path: str


def module_summary(path: str) -> _Module | None:
    """The summary of the project module at `path` (noted for the cache entry)."""
    project_modules.note((path,))
    return _module(path)


def _module(path: str) -> _Module | None:
    """The summary of the module at `path` as it is on disk now."""
    stat = project_modules.stat_key(path)
    return None if stat is None else _module_at(path, stat)


@lru_cache(maxsize=2048)
def _module_at(path: str, stat: tuple[int, int]) -> _Module | None:
    """Made once per path and size/mtime in a process; its summaries are made as asked
    (`_Held`), and the text or tree they need is dropped within a few modules."""
    text = project_modules.text_at(path, stat)
    if text is None:
        return None
    summaries = _Held(path, text)
    _holding(summaries, len(text))
    return _Module(path, summaries, project_modules.bindings(text), names_xla(text))


class _Summaries(Mapping[str, Summary]):
    """The summaries of a module's functions (`f`) and methods (`Class.m`), each made when
    first asked: the first definition of a name that reads or hands on a parameter. A lint
    asks about the few functions its calls and bases name (summarising every function of
    the linted file was 4% of a cold lint's CPU; of the modules a one-file check meets,
    more than a third of it)."""

    def __init__(self, tree: ast.Module | None) -> None:
        self._candidates: dict[str, list[tuple[Function, bool]]] = {}
        self._made: dict[str, Summary | None] = {}
        if tree is not None:
            self._candidates = _candidates(tree)

    def _summary(self, key: str) -> Summary | None:
        if key not in self._made:
            self._made[key] = _first_summary(self._candidates.get(key, ()))
        return self._made[key]

    def __getitem__(self, key: str) -> Summary:
        summary = self._summary(key)
        if summary is None:
            raise KeyError(key)
        return summary

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._summary(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (key for key in list(self._candidates) if key in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _candidates(tree: ast.Module) -> dict[str, list[tuple[Function, bool]]]:
    """Each top-level function (`f`) and method of a top-level class (`Class.m`), by name,
    in order of definition, with whether it is a method."""
    found: dict[str, list[tuple[Function, bool]]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.setdefault(node.name, []).append((node, False))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.setdefault(f"{node.name}.{item.name}", []).append((item, True))
    return found


def _first_summary(definitions: Sequence[tuple[Function, bool]]) -> Summary | None:
    for node, method in definitions:
        if (found := summarize(node, method)) is not None:
            return found
    return None


class _Held(_Summaries):
    """Another module's summaries, kept for the process. A name whose `def` the text does
    not spell has none, so the module is parsed only when a name it may define is asked
    (a one-file check asks ~100 times about 6 modules' bases, for a few methods); the text,
    then the tree, is held only while the module is among the last read (`_HELD_BYTES`;
    `complete`: every summary made, as before, so that no tree outlives them)."""

    def __init__(self, path: str, text: str) -> None:
        super().__init__(None)
        self._path = path
        self._text: str | None = text
        self._parsed = False
        self._tree_ok = False
        self._complete = False

    def _summary(self, key: str) -> Summary | None:
        if self._complete:
            return self._made.get(key)
        if key not in self._made and not self._parsed:
            last = key.rsplit(".", 1)[-1]
            if self._text is None or not _spells(self._text, last):
                self._made[key] = None
                return None
            self._parse()
        return super()._summary(key)

    def _parse(self) -> None:
        text, self._text, self._parsed = self._text, None, True
        tree = None if text is None else project_modules.parse(self._path, text)
        self._tree_ok = tree is not None
        if tree is not None:
            self._candidates = _candidates(tree)

    def __iter__(self) -> Iterator[str]:
        if self._complete:
            return iter(list(self._made))
        self.parses()
        return super().__iter__()

    def parses(self) -> bool:
        """Whether the module parses (one that does not tells nothing, not even what it
        re-exports)."""
        if not self._parsed:
            self._parse()
        return self._tree_ok

    def complete(self) -> None:
        """Make every summary and drop the tree (and the text): only the summaries stay."""
        self.parses()
        made = {key: self._summary(key) for key in self._candidates}
        self._made = {key: summary for key, summary in made.items() if summary is not None}
        self._candidates = {}
        self._complete = True


def _parses(module: _Module) -> bool:
    """A module that does not parse is read as no module at all."""
    functions = module.functions
    return not isinstance(functions, _Held) or functions.parses()


def _spells(text: str, name: str) -> bool:
    """Whether `text` spells the identifier `name` as a whole word: a module whose text
    does not cannot define a function or method of that name."""
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


# The text of the modules whose text or tree is held while their summaries are made as
# asked: a tree is about 22 times its text (pipeline_utils.py: 118 kB -> 2.5 MB), so at
# most ~11 MB of trees per process.
_HELD_BYTES = 512 * 1024
_held: deque[tuple[_Held, int]] = deque()
_held_bytes = 0


def _holding(summaries: _Held, size: int) -> None:
    """Hold `summaries` (of a text of `size` characters) among the last modules read, at
    most `_HELD_BYTES` of text; the oldest are completed (their trees dropped): a
    whole-tree run makes no more summaries than when each module was summarised whole."""
    global _held_bytes
    _held.append((summaries, size))
    _held_bytes += size
    while _held_bytes > _HELD_BYTES and _held:
        oldest, oldest_size = _held.popleft()
        _held_bytes -= oldest_size
        oldest.complete()


def _own_module(path: str) -> _Module | None:
    """The linted file's own module, its summaries made as asked (`_Summaries`); kept for
    the lint only, with the tree (the engine's, lent to `project_modules.parse`)."""
    stat = project_modules.stat_key(path)
    return None if stat is None else _own_module_at(path, stat)


@lint_memo.memo(2)
def _own_module_at(path: str, stat: tuple[int, int]) -> _Module | None:
    text = project_modules.text_at(path, stat)
    tree = None if text is None else project_modules.parse(path, text)
    if tree is None or text is None:
        return None
    return _Module(path, _Summaries(tree), project_modules.bindings(text), names_xla(text))


def converts_what_it_is_handed(path: str, qualified: str) -> bool:
    """Whether the function `qualified` (`f`, `Class.m`) of the module at `path` reads
    parameters on the host, and nothing else: a conversion helper, whose callers in other
    modules report the call (`module_callers.py` asks, so that the read is not reported a
    second time in the helper's file)."""
    module = _module(path)
    summary = None if module is None else module.functions.get(qualified)
    if summary is None or summary.bound:
        return False
    return bool(summary.reads) and summary.only_parameters


class ModuleReads:
    """The linted file's view of the host reads in the functions it imports; nothing is
    read until a question needs it."""

    def __init__(self, filename: str, text: str) -> None:
        self.filename = filename
        self._text = text
        self._bindings: dict[str, tuple[int, str]] | None = None
        self._allowed: frozenset[str] | None = None
        self._results: dict[str, Summary | None] = {}  # `result_from`, by spelling
        # `read_named_instance`: (class, method) -> the method's module and name, if one.
        self._instances: dict[tuple[str, str], tuple[_Module, str] | None] = {}
        self._properties: dict[str, bool] = {}  # `tensor_property`, by spelling

    @property
    def bindings(self) -> dict[str, tuple[int, str]]:
        """What the file's import statements bind (no module is read to answer)."""
        if self._bindings is None:
            self._bindings = project_modules.bindings(self._text)
        return self._bindings

    def _may_read(self, path: str, importer: str) -> bool:
        """The modules the file imports, and for a value handed on, those the module
        handing it imports (its text is in the depfile already)."""
        if importer != self.filename:
            stat = project_modules.stat_key(importer)
            return stat is not None and path in project_modules.module_imports(importer, stat)
        if self._allowed is None:
            paths = project_modules.note_consulted(self.filename, self._text, hops=1)
            self._allowed = frozenset(paths)
        return path in self._allowed

    def read(
        self, spelled: str, position: int | str, passed: frozenset[int | str] = frozenset()
    ) -> Found | None:
        """The host read that calling `spelled` (`f`, `m.f`, `Cls.m`, as the file writes
        it) causes on the argument at `position` (an index or a keyword); None if the
        function is not found, reads nothing of it, or is per step by its own name (its
        own file reports the read). `passed`: the positions and keywords the call passes
        (a read made only where one of them is left out is not made)."""
        head, _, rest = spelled.partition(".")
        binding = self.bindings.get(head)
        if binding is None or spelled.rsplit(".", 1)[-1][:1].isupper():
            return None  # (`Attention(...)`: a class built, no function of a module run)
        level, dotted = binding
        located = self._locate(self.filename, level, f"{dotted}.{rest}" if rest else dotted, 1)
        if located is None:
            return None
        return self._answer(*located, position, passed, own=False)

    def result_from(self, spelled: str) -> Summary | None:
        """The summary of the function of another project module that calling `spelled`
        (`f`, `m.f`, as the file writes it) runs, where its result is computed on the
        device from what it is handed (`Summary.returns`: `misc.is_nan(t)` returning
        `torch.any(torch.isnan(t))`); None otherwise (a class built, a method that takes
        `self`, a function of a module that names XLA)."""
        if spelled not in self._results:
            self._results[spelled] = self._result_from(spelled)
        return self._results[spelled]

    def _result_from(self, spelled: str) -> Summary | None:
        head, _, rest = spelled.partition(".")
        binding = self.bindings.get(head)
        if binding is None or spelled.rsplit(".", 1)[-1][:1].isupper():
            return None
        level, dotted = binding
        located = self._locate(self.filename, level, f"{dotted}.{rest}" if rest else dotted, 1)
        if located is None:
            return None
        summary = located[0].functions.get(located[1])
        if summary is None or summary.bound or not summary.returns:
            return None
        return summary

    def tensor_property(self, spelled: str) -> bool:
        """Whether `spelled` (`sequence_parallel.real_position_ids`, as the file writes it)
        reads a property declared to return a tensor (`def real_position_ids(self) ->
        torch.Tensor` under `@property`) of an object another project module builds once
        at its top level (`sequence_parallel = SequenceParallel()`, of a class it
        defines), imported by name (also through one re-export of a package's
        `__init__.py`): reading it runs the property, whose value the code declares a
        tensor. Not a module that names XLA."""
        known = self._properties.get(spelled)
        if known is None:
            head, _, attribute = spelled.partition(".")
            binding = self.bindings.get(head)
            known = self._properties[spelled] = (
                binding is not None
                and bool(attribute)
                and "." not in attribute
                and self._instance_property(self.filename, *binding, attribute, 1)
            )
        return known

    def _instance_property(
        self, importer: str, level: int, dotted: str, attribute: str, reexports: int
    ) -> bool:
        parts = dotted.rsplit(".", 1)
        if len(parts) != 2:
            return False
        path = project_modules.resolve(importer, level, parts[0])
        if path is None or not self._may_read(path, importer):
            return False
        module = module_summary(path)
        stat = project_modules.stat_key(path)
        if module is None or module.knows_xla or stat is None:
            return False
        instances = _instance_properties(path, stat)
        if parts[1] in instances:
            return attribute in instances[parts[1]]
        binding = module.bindings.get(parts[1])
        if reexports > 0 and binding is not None:
            return self._instance_property(path, *binding, attribute, reexports - 1)
        return False

    def read_own(
        self, qualified: str, position: int | str, passed: frozenset[int | str] = frozenset()
    ) -> Found | None:
        """`read` for a function of the linted file itself (`f`, or `Class.m` called as
        `self.m(...)`), as far as it hands the value on to a function of another module:
        the file's own reads are its rules' (XLA101's same-module helper reads)."""
        module = _own_module(os.path.abspath(self.filename))
        if module is None:
            return None
        found = self._answer(module, qualified, position, passed, own=True)
        return found if found is not None and found.path != module.path else None

    def read_inherited(
        self,
        bases: Sequence[str],
        method: str,
        position: int | str,
        passed: frozenset[int | str] = frozenset(),
    ) -> Found | None:
        """`read` for `self.m(...)` in a class of the linted file that inherits `m` from a
        class of another project module (`class BaseEmbedder(AbsEmbedder)`, with
        `from pkg.abc import AbsEmbedder`, calling `self._convert_to_numpy(embeddings)`
        that `AbsEmbedder` defines): `bases` are the classes it inherits from, as the file
        spells them, in order; the first of them that defines a method of that name reading
        or handing on what it is handed answers."""
        for spelled in bases:
            head, _, rest = spelled.partition(".")
            binding = self.bindings.get(head)
            if binding is None:
                continue
            level, dotted = binding
            target = f"{dotted}.{rest}" if rest else dotted
            located = self._locate(self.filename, level, f"{target}.{method}", 1)
            if located is not None:
                return self._answer(*located, position, passed, own=True)
        return None

    def read_named_instance(
        self,
        word: str,
        method: str,
        position: int | str,
        passed: frozenset[int | str] = frozenset(),
    ) -> Found | None:
        """`read` for `logger.log("loss", loss, step)` where `logger` is a parameter nobody
        annotated, named as a class of the project (`logger` for `Logger`, `meter` for
        `Meter`, `train_logger` for `TrainLogger`): the class that a module the file imports
        defines or re-exports (`from .logger import Logger` in the package's
        `__init__.py`), the only one of that name among them, answers with its method."""
        klass = "".join(part[:1].upper() + part[1:] for part in word.split("_") if part)
        if not klass.isidentifier() or PER_STEP_FUNCTIONS.match(method):
            return None
        key = (klass, method)
        if key not in self._instances:
            self._instances[key] = self._named_class_method(klass, method)
        located = self._instances[key]
        return None if located is None else self._answer(*located, position, passed, own=True)

    def _named_class_method(self, klass: str, method: str) -> tuple[_Module, str] | None:
        if self._allowed is None:
            self._may_read(self.filename, self.filename)
        found: dict[str, tuple[_Module, str]] = {}
        for path in sorted(self._allowed or ()):
            module = module_summary(path)
            if module is None or module.knows_xla:
                continue
            qualified = f"{klass}.{method}"
            if qualified in module.functions:
                found[f"{path}:{qualified}"] = (module, qualified)
                continue
            binding = module.bindings.get(klass)
            if binding is not None and _parses(module):
                located = self._locate(path, binding[0], f"{binding[1]}.{method}", 0)
                if located is not None:
                    found[f"{located[0].path}:{located[1]}"] = located
        if len(found) != 1:
            return None  # none, or two classes of that name: which one is not said
        return next(iter(found.values()))

    def _answer(
        self,
        module: _Module,
        qualified: str,
        position: int | str,
        passed: frozenset[int | str],
        own: bool,
    ) -> Found | None:
        if PER_STEP_FUNCTIONS.match(qualified.rsplit(".", 1)[-1]):
            return None
        found = self._reads(module, qualified, position, _HOPS, own)
        if found is None or not found.read.unless:
            return found
        summary = module.functions[qualified]
        param = summary.parameter_at(position)
        if found.read is not summary.read_of(param or ""):
            return None  # a read further on, made only without one of its own parameters
        if any(summary.parameter_at(p) in found.read.unless for p in passed):
            return None  # `scatter_argmax(t, index, dim_size=n)`: the read is skipped
        return found

    def _locate(
        self, importer: str, level: int, dotted: str, reexports: int
    ) -> tuple[_Module, str] | None:
        """`pkg.mod.f` or `pkg.mod.Cls.m` seen from `importer` -> (module, `f` or
        `Cls.m`), following a name a package's `__init__.py` imports `reexports` times."""
        for split in (1, 2):
            parts = dotted.rsplit(".", split)
            if len(parts) != split + 1:
                continue
            path = project_modules.resolve(importer, level, parts[0])
            if path is None or not self._may_read(path, importer):
                continue
            module = module_summary(path)
            if module is None or module.knows_xla:
                continue
            name = ".".join(parts[1:])
            if name in module.functions:
                return module, name
            binding = module.bindings.get(parts[1])
            if reexports > 0 and binding is not None and _parses(module):
                tail = ".".join(parts[2:])
                target = f"{binding[1]}.{tail}" if tail else binding[1]
                return self._locate(path, binding[0], target, reexports - 1)
            # (`pkg.AbsEmbedder.m` where `pkg/AbsEmbedder.py` is a module too: its class
            # of that name is the next split's.)
        return None

    def _reads(
        self, module: _Module, qualified: str, position: int | str, hops: int, bound: bool = False
    ) -> Found | None:
        """`bound`: a method called on `self` (the linted file's own) may take `self`."""
        summary = module.functions.get(qualified)
        if summary is None or (summary.bound and not bound):
            return None  # `Cls.m(x)` of a method that takes `self` first: not bound here
        param = summary.parameter_at(position)
        if param is None:
            return None
        read = summary.read_of(param)
        if read is not None:
            return Found(qualified, read, module.path)
        if hops <= 1:
            return None
        for handed in summary.hands:
            for argument, carried in handed.arguments:
                if carried != param:
                    continue
                found = self._handed_to(module, handed.callee, argument, hops - 1)
                if found is not None:
                    return Found(qualified, found.read, found.path)
        return None

    def _handed_to(
        self, module: _Module, callee: str, position: int | str, hops: int
    ) -> Found | None:
        """A function of `module` (or one it imports) that a value is handed on to."""
        if callee in module.functions:
            return self._reads(module, callee, position, hops)
        head, _, rest = callee.partition(".")
        binding = module.bindings.get(head)
        if binding is None:
            return None
        level, dotted = binding
        found = self._locate(module.path, level, f"{dotted}.{rest}" if rest else dotted, 1)
        return None if found is None else self._reads(found[0], found[1], position, hops)


# `name = Class(...)` at a module's top level (a whole line: no indentation).
_TOP_LEVEL_INSTANCE = re.compile(r"^[A-Za-z_]\w*\s*=\s*[A-Za-z_]\w*\(", re.MULTILINE)


@lru_cache(maxsize=2048)
def _instance_properties(path: str, stat: tuple[int, int]) -> dict[str, frozenset[str]]:
    """The objects a module builds once at its top level from a class it defines
    (`sequence_parallel = SequenceParallel()`), with the properties of that class declared
    to return a tensor (`@property def real_position_ids(self) -> torch.Tensor`). The
    module is parsed only where its text builds such an object and declares a property."""
    text = project_modules.text_at(path, stat)
    if text is None or "@property" not in text or not _TOP_LEVEL_INSTANCE.search(text):
        return {}
    tree = project_modules.parse(path, text)
    if tree is None:
        return {}
    properties: dict[str, frozenset[str]] = {}
    built: dict[str, list[str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            properties[node.name] = frozenset(
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef)
                and any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                and item.returns is not None
                and _tensor_annotation(item.returns)
            )
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign | ast.AugAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Name):
                value = getattr(node, "value", None)
                built.setdefault(target.id, []).append(
                    value.func.id
                    if isinstance(node, ast.Assign)
                    and isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    else None
                )
    return {
        name: properties[classes[0]]
        for name, classes in built.items()
        if len(classes) == 1 and classes[0] in properties and properties[classes[0]]
    }


def _tensor_annotation(annotation: ast.expr) -> bool:
    """`torch.Tensor`, `Tensor`, `Optional[Tensor]`, `Tensor | None`, or such a string."""
    if isinstance(annotation, ast.Constant):
        if not isinstance(annotation.value, str):
            return False
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Tensor"
    if isinstance(annotation, ast.Name):
        return annotation.id == "Tensor"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        return any(_tensor_annotation(s) for s in sides) and all(
            _tensor_annotation(s) or (isinstance(s, ast.Constant) and s.value is None)
            for s in sides
        )
    if isinstance(annotation, ast.Subscript):
        wrapper = annotation.value
        named = wrapper.attr if isinstance(wrapper, ast.Attribute) else getattr(wrapper, "id", "")
        return named == "Optional" and _tensor_annotation(annotation.slice)
    return False
