"""Loader tracing for the family 4 rules: what a loop iterates (an `MpDeviceLoader`, a
loader handed to `accelerator.prepare`, a plain `DataLoader`), traced back through the
assignments of its name, a class's `self.` attributes, what this module's functions return
and what its calls pass as a parameter. Assignments are collected per scope only when a
loader has to be traced back to where it was made.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import (
    bind,
    is_staticmethod,
    parameter,
    positional_names,
    signature_of,
)
from xlalint.analysis.devices import mentions_xla
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.loop_facts import (
    LoopFacts,
    LoopSite,
    _last_name,
    _names_in,
    unwrap_iteration,
)
from xlalint.analysis.returns import returned_values
from xlalint.analysis.tensors import binding_key
from xlalint.walk import COMPREHENSIONS, EXPRESSIONS, children, descendants, target_names

MP_DEVICE_LOADER = "torch_xla.distributed.parallel_loader.MpDeviceLoader"
PARALLEL_LOADER_MODULE = "torch_xla.distributed.parallel_loader"
DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

_ACCELERATOR_NAME = re.compile(r"accelerator|fabric", re.I)
_ACCELERATOR_PREPARE = frozenset(
    {"prepare", "prepare_data_loader", "skip_first_batches", "setup_dataloaders"}
)
_NON_LOADER_CALLS = frozenset({"range", "zip", "len", "list", "tuple", "sorted", "reversed"})
_LOADER_NAME = re.compile(r"loader|batches|data|(^|_)dl$", re.I)
# `accelerate.utils.is_xpu_available`: a question about the host, not a loader's wrapper.


def _wraps_loaders(target: str) -> bool:
    """An import of accelerate that prepares loaders (`_file_wraps_loaders`): the package
    (`import accelerate`), `Accelerator`, or a name of its `data_loader` module."""
    if target == "accelerate":
        return True
    parts = target.split(".")
    return parts[0] == "accelerate" and (
        parts[1] in _LOADER_WRAPPING_PARTS
        or parts[-1] in ("Accelerator", "prepare_data_loader", "skip_first_batches")
    )


# accelerate's modules whose names prepare or wrap loaders; `utils`, `logging`, `hooks`,
# `big_modeling` and the rest hold helpers (device probes, batch moves, model placement).
_LOADER_WRAPPING_PARTS = frozenset({"Accelerator", "accelerator", "data_loader"})


def is_accelerator_prepare(call: cst.Call) -> bool:
    """`accelerator.prepare(...)`, `self.accelerator.prepare_data_loader(...)`,
    `fabric.setup_dataloaders(...)`: the loaders it is handed come back wrapped for the
    device (a syncing device loader on XLA, batches evened out across processes)."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in _ACCELERATOR_PREPARE
        and _ACCELERATOR_NAME.search(_last_name(func.value) or "") is not None
    )


# A call, with the function and the class around it.
_CallSite = tuple[cst.Call, cst.FunctionDef | None, cst.ClassDef | None]
# An expression, with the function and the class it is evaluated in.
_Scoped = tuple[cst.FunctionDef | None, cst.ClassDef | None, cst.BaseExpression]


class Wrapping:
    """What a loader expression is."""

    SYNCING = "syncing"  # MpDeviceLoader, per_device_loader, accelerator.prepare(...)
    DATALOADER = "dataloader"  # a plain torch DataLoader
    OTHER = "other"
    UNKNOWN = "unknown"


class LoaderTracing(LoopFacts):
    """Loop facts, and where each loop's batches come from."""

    def __init__(self, module: cst.Module, imports: ImportTable) -> None:
        super().__init__(module, imports)
        self._assignments: dict[int, dict[str, list[cst.BaseExpression]]] = {}
        self._calls: dict[str, list[_CallSite]] | None = None  # plain-name calls, by name
        self._prepared: tuple[frozenset[str], frozenset[int]] | None = None
        # A class's `self.attr = value`: the method it is assigned in, by the value's id.
        self._assigning_method: dict[int, cst.FunctionDef] = {}

    def handed_to_accelerator(self, loader: cst.Call, bound_to: set[str]) -> bool:
        """Whether a `DataLoader(...)` call, or a name or `self.attr` it is bound to, is
        handed to `accelerator.prepare(...)` somewhere in this file."""
        if self._prepared is None:
            keys: set[str] = set()
            calls: set[int] = set()
            for node in descendants(self.module):
                if isinstance(node, cst.Call) and is_accelerator_prepare(node):
                    for arg in node.args:
                        value = unwrap_iteration(arg.value)
                        if (key := binding_key(value)) is not None:
                            keys.add(key)
                        calls.add(id(value))
            self._prepared = frozenset(keys), frozenset(calls)
        keys_seen, calls_seen = self._prepared
        return id(loader) in calls_seen or bool(bound_to & keys_seen)

    def iterated_loader(self, site: LoopSite) -> cst.BaseExpression | None:
        """What a `for` loop iterates, through `enumerate`, `tqdm`, `iter`, `islice`."""
        node = site.node
        return unwrap_iteration(node.iter) if isinstance(node, cst.For) else None

    def wrapping(self, site: LoopSite, expr: cst.BaseExpression) -> str:
        """What a loader expression is, traced through the assignments of its name in the
        loop's function (else the module), for `self.x` in the loop's class, and for a
        parameter of a module-level function to what this module's calls pass it:
        `train_epoch(model, loader, opt)` with `loader = DataLoader(...)` in `main()`."""
        return self._wrapping_in(site.function, site.class_def, expr, 0)

    def _wrapping_in(
        self,
        function: cst.FunctionDef | None,
        class_def: cst.ClassDef | None,
        expr: cst.BaseExpression,
        depth: int,
    ) -> str:
        expr = unwrap_iteration(expr)  # `it = iter(loader)` is traced through `loader`
        kind = self._wrapping_of_value(expr)
        if kind != Wrapping.UNKNOWN or depth > 6:
            return kind
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            # `train_dl, val_dl = get_dataloaders(fabric, ...)`: what this module's
            # function returns (`fabric.setup_dataloaders(...)` inside it).
            returned = [
                self._wrapping_in(fn, None, value, depth + 1)
                for fn in self._functions.get(expr.func.value, [])
                for value in returned_values(fn)
            ]
            return _combine(set(returned))
        key = binding_key(expr)
        if key is None:
            return Wrapping.UNKNOWN
        traced = [
            self._wrapping_in(scope_function, scope_class, value, depth + 1)
            for scope_function, scope_class, value in self._sources_of(function, class_def, key)
        ]
        return _combine(set(traced))

    def _sources_of(
        self, function: cst.FunctionDef | None, class_def: cst.ClassDef | None, key: str
    ) -> list[tuple[cst.FunctionDef | None, cst.ClassDef | None, cst.BaseExpression]]:
        """The values `key` may hold, each with the scope it is evaluated in."""
        if key.startswith("self."):
            if class_def is None:
                return []
            # Each value is evaluated in the method that assigns it: `dl =
            # accelerator.prepare(dl)` then `self.dl = cycle(dl)` in `__init__`.
            values = self._scope_assignments(class_def).get(key, [])
            return [(self._assigning_method.get(id(v)), class_def, v) for v in values]
        if function is not None:
            values = self._scope_assignments(function).get(key, [])
            if values:
                return [(function, class_def, v) for v in values]
            if parameter(function, key) is not None:
                return [] if class_def is not None else self._arguments_for(function, key)
        return [(None, None, v) for v in self._scope_assignments(self.module).get(key, [])]

    def _arguments_for(
        self, function: cst.FunctionDef, name: str
    ) -> list[tuple[cst.FunctionDef | None, cst.ClassDef | None, cst.BaseExpression]]:
        """What this module's calls of a module-level `function` pass as parameter `name`;
        nothing if any call's argument for it cannot be told (`*args`, `**kwargs`)."""
        positional = positional_names(function)
        found: list[tuple[cst.FunctionDef | None, cst.ClassDef | None, cst.BaseExpression]] = []
        for call, caller, caller_class in self._calls_by_name().get(function.name.value, []):
            if any(arg.star for arg in call.args):
                return []
            by_keyword = [a.value for a in call.args if a.keyword and a.keyword.value == name]
            plain = [a.value for a in call.args if a.keyword is None]
            index = positional.index(name) if name in positional else None
            if by_keyword:
                found.append((caller, caller_class, by_keyword[0]))
            elif index is not None and index < len(plain):
                found.append((caller, caller_class, plain[index]))
        return found

    def _calls_by_name(self) -> dict[str, list[_CallSite]]:
        """Calls of plain names in this module, with the function and class around each."""
        if self._calls is not None:
            return self._calls
        calls: dict[str, list[_CallSite]] = {}
        stack: list[tuple[cst.CSTNode, cst.FunctionDef | None, cst.ClassDef | None]] = [
            (self.module, None, None)
        ]
        while stack:
            node, function, class_def = stack.pop()
            if isinstance(node, cst.FunctionDef):
                function = node
            elif isinstance(node, cst.ClassDef):
                function, class_def = None, node
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                calls.setdefault(node.func.value, []).append((node, function, class_def))
            stack.extend((child, function, class_def) for child in children(node))
        self._calls = calls
        return calls

    def moves_batches(self, site: LoopSite) -> bool:
        """The loop moves what it iterates to a device itself (`x.to(device)`, `x.cuda()`,
        `batch = {k: v.to(device) ...}`): batches that arrive on the XLA device already
        change nothing for it."""
        node = site.node
        if not isinstance(node, cst.For):
            return False
        batch = target_names(node.target)
        return next(_batch_moves(node.body, batch), None) is not None

    def syncs_per_pass(self, site: LoopSite) -> bool:
        """The loop takes its batches from a loader that syncs on every batch: it iterates
        one, or calls `next()` on an iterator of one, in its body, in a loop nested in it
        (`for _ in range(accumulate): batch = next(self.dl)`: every pass pulls at least
        one batch, each a barrier) or in a function of this module the pass calls (`while
        self.steps < n: self.train_step()`, whose body pulls `next(self.dl_iter)` from
        `cycle()` over an `accelerator.prepare()`d loader): each judged in the scope of
        the function that pulls it."""
        candidates = [
            (function, class_def, unwrap_iteration(arg))
            for function, class_def, arg in self._next_of(site.node, site.function, site.class_def)
        ]
        if (loader := self.iterated_loader(site)) is not None:
            candidates.append((site.function, site.class_def, loader))
        for function, class_def, candidate in candidates:
            kind = self._wrapping_in(function, class_def, candidate, 0)
            if kind == Wrapping.SYNCING:
                return True
            if kind == Wrapping.UNKNOWN and self._file_wraps_loaders():
                name = _last_name(candidate) or ""
                if _LOADER_NAME.search(name):
                    # Handed in from elsewhere, in a file that wraps its loaders for XLA
                    # (or with accelerate): most likely the wrapped one.
                    return True
        return False

    def _next_of(
        self,
        node: cst.For | cst.While | cst.FunctionDef,
        function: cst.FunctionDef | None,
        class_def: cst.ClassDef | None,
        seen: set[int] | None = None,
    ) -> list[tuple[cst.FunctionDef | None, cst.ClassDef | None, cst.BaseExpression]]:
        """The `next()` arguments of a pass, each with the function and class it is
        evaluated in: its body's, its nested loops' and those of the functions of this
        module it calls (`self.train_step()`), through their calls in turn. A callee's
        `next()` of one of its parameters (`def next_batch(self, dl_iter): data =
        next(dl_iter)`) pulls from what the call hands it, judged where the call is
        (`self.next_batch(dl_iter)` with `dl_iter = cycle(self.dataloader)`)."""
        seen = set() if seen is None else seen
        if id(node) in seen:
            return []
        seen.add(id(node))
        facts = self.facts(node)
        found = [(function, class_def, arg) for arg in facts.next_of]
        for loop in facts.child_loops:
            found.extend(self._next_of(loop, function, class_def, seen))
        around = self._class_of(node)
        for call in facts.calls:
            for callee in self._resolve_in(node, call, around):
                owner = self._method_classes.get(id(callee))
                for pulled in self._next_of(callee, callee, owner, seen):
                    found.append(self._handed_iterator(call, callee, pulled, function, class_def))
        return found

    def _handed_iterator(
        self,
        call: cst.Call,
        callee: cst.FunctionDef,
        pulled: _Scoped,
        function: cst.FunctionDef | None,
        class_def: cst.ClassDef | None,
    ) -> _Scoped:
        """`pulled`, a `next()` argument found in `callee`; where it is a parameter of
        `callee` that the callee never rebinds, the argument `call` hands it, in the
        caller's scope."""
        scope, _, arg = pulled
        if scope is not callee or type(arg) is not cst.Name:
            return pulled
        name = arg.value
        if parameter(callee, name) is None or name in self._scope_assignments(callee):
            return pulled
        is_method = id(callee) in self._method_classes and not is_staticmethod(callee)
        bound = bind(call, signature_of(callee, is_method))
        if bound is None or name not in bound:
            return pulled
        return function, class_def, bound[name]

    def plain_dataloader(self, site: LoopSite) -> cst.BaseExpression | None:
        """The loader expression of a loop that iterates a `DataLoader` made in this file
        directly (not through `MpDeviceLoader` or `accelerator.prepare`)."""
        loader = self.iterated_loader(site)
        if loader is None or self.wrapping(site, loader) != Wrapping.DATALOADER:
            return None
        return loader

    def _file_wraps_loaders(self) -> bool:
        """The file imports torch_xla's parallel loaders, or what of accelerate wraps
        loaders: the package itself, its `Accelerator` (`prepare`), its `data_loader`
        module (`prepare_data_loader`, `skip_first_batches`). Its helpers wrap nothing:
        `from accelerate.utils import is_xpu_available` picks a device (llama-cookbook's
        plain DataLoader loop), `from accelerate.utils.operations import send_to_device`
        moves a batch, `from accelerate.logging import get_logger` logs, and
        `init_empty_weights`/`dispatch_model` place a model."""
        return self.imports.binds(PARALLEL_LOADER_MODULE) or any(
            _wraps_loaders(target) for target in self.imports.bindings.values()
        )

    def _wrapping_of_value(self, value: cst.BaseExpression) -> str:
        value = unwrap_iteration(value)
        if isinstance(value, cst.Call):
            func = value.func
            qualified = self.imports.resolve(func)
            leaf = (get_full_name_for_node(func) or "").rsplit(".", 1)[-1]
            if qualified == MP_DEVICE_LOADER or leaf in ("MpDeviceLoader", "per_device_loader"):
                return Wrapping.SYNCING
            if is_accelerator_prepare(value):
                return Wrapping.SYNCING
            if qualified in DATALOADERS or (qualified is None and leaf == "DataLoader"):
                return Wrapping.DATALOADER
            if qualified is not None or leaf in _NON_LOADER_CALLS:
                return Wrapping.OTHER
            return Wrapping.UNKNOWN
        if isinstance(value, cst.List | cst.Tuple | cst.ListComp | cst.SimpleString):
            return Wrapping.OTHER
        # `pl.MpDeviceLoader(loader, device) if XLA_AVAILABLE else loader`: where XLA is in
        # use the loader syncs; elsewhere the loop does not run on XLA.
        if (
            isinstance(value, cst.IfExp)
            and mentions_xla(value.test, self.imports)
            and Wrapping.SYNCING
            in (self._wrapping_of_value(value.body), self._wrapping_of_value(value.orelse))
        ):
            return Wrapping.SYNCING
        return Wrapping.UNKNOWN

    def _scope_assignments(
        self, scope: cst.Module | cst.FunctionDef | cst.ClassDef
    ) -> dict[str, list[cst.BaseExpression]]:
        """`name -> assigned values` in a function or at module level (not in nested
        definitions), or `self.attr -> values` across a class's methods."""
        cached = self._assignments.get(id(scope))
        if cached is not None:
            return cached
        found: dict[str, list[cst.BaseExpression]] = {}
        body = scope.body if isinstance(scope, cst.Module) else children(scope.body)
        stack: list[tuple[cst.CSTNode, cst.FunctionDef | None]] = [(n, None) for n in body]
        in_class = isinstance(scope, cst.ClassDef)
        while stack:
            node, method = stack.pop()
            value: cst.BaseExpression | None = None
            if type(node) is cst.FunctionDef:
                if in_class:
                    stack.extend((child, node) for child in children(node.body))
            elif type(node) is cst.Assign:
                value = node.value
                for target in node.targets:
                    _record(found, target.target, value)
            elif type(node) is cst.AnnAssign:
                if node.value is not None:
                    value = node.value
                    _record(found, node.target, value)
            elif type(node) is not cst.ClassDef and type(node) not in EXPRESSIONS:
                stack.extend((child, method) for child in children(node))
            if in_class and method is not None and value is not None:
                # The value, or its elements where a tuple is unpacked (`_record`).
                values = [value]
                if isinstance(value, cst.Tuple | cst.List):
                    values.extend(element.value for element in value.elements)
                for assigned in values:
                    self._assigning_method[id(assigned)] = method
        self._assignments[id(scope)] = found
        return found


def _combine(kinds: set[str]) -> str:
    """What a name is, from what each of its sources is: syncing if any source syncs (the
    loop is covered where it matters), a DataLoader only if every source is one."""
    if Wrapping.SYNCING in kinds:
        return Wrapping.SYNCING
    if kinds == {Wrapping.DATALOADER}:
        return Wrapping.DATALOADER
    if kinds and Wrapping.UNKNOWN not in kinds:
        return Wrapping.OTHER
    return Wrapping.UNKNOWN


_DEVICE_MOVES = frozenset({"to", "cuda"})


def _is_device_move(node: cst.CSTNode) -> bool:
    """`x.to(...)` or `x.cuda(...)`."""
    return (
        type(node) is cst.Call
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in _DEVICE_MOVES
    )


def _batch_moves(node: cst.CSTNode, batch: set[str]) -> Iterator[cst.CSTNode]:
    """Device moves of the batch: `x.to(device)`, or any move inside a comprehension over
    the batch (`{k: v.to(device) for k, v in batch.items()}`)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) in COMPREHENSIONS and _names_in(current) & batch:
            yield from (node for node in descendants(current) if _is_device_move(node))
            continue
        if _is_device_move(current):
            assert isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute)
            if _names_in(current.func.value) & batch:
                yield current
        stack.extend(children(current))


def _record(
    found: dict[str, list[cst.BaseExpression]],
    target: cst.BaseExpression,
    value: cst.BaseExpression,
) -> None:
    """Tuple targets map elementwise; `a, b, loader = accelerator.prepare(a, b, loader)`
    hands the call to every target."""
    key = binding_key(target)
    if key is not None:
        found.setdefault(key, []).append(value)
    elif isinstance(target, cst.Tuple | cst.List):
        elements = [e.value for e in target.elements]
        if isinstance(value, cst.Tuple | cst.List) and len(value.elements) == len(elements):
            for element, item in zip(elements, value.elements, strict=True):
                _record(found, element, item.value)
        else:
            for element in elements:
                _record(found, element, value)


def _is_static(function: cst.FunctionDef) -> bool:
    """`@staticmethod`: its callers' arguments start at its first parameter."""
    return any(
        type(d.decorator) is cst.Name and d.decorator.value == "staticmethod"
        for d in function.decorators
    )
