"""Which names in a file stand for torch, torch_xla and their modules.

Rules ask for a call's qualified name (`torch_xla.core.xla_model.mark_step`) rather than
its spelling (`xm.mark_step`), so aliases like `import torch_xla.core.xla_model as xm` or
`from torch_xla import sync as s` are understood, and a local `xm` that is not torch_xla's
is not mistaken for it. This is a light, flow-insensitive stand-in for libcst's
QualifiedNameProvider: it reads import statements, and module-level names bound once to a
torch function (`zeros = torch.zeros`) or to the module itself (`d2l =
sys.modules[__name__]`), which is all these rules need and costs a fraction of full scope
analysis.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.legacy_api import modernize
from xlalint.walk import descendants, target_names

_BUILTINS = frozenset(dir(builtins))
# What a relative star import is taken to bring under the name `DataLoader`.
_TORCH_DATALOADER = "torch.utils.data.DataLoader"


class ImportTable:
    """Maps a bound local name to the dotted path it was imported as."""

    def __init__(self) -> None:
        self._bindings: dict[str, str] = {}
        # Module-level aliases of torch's functions (`zeros = torch.zeros`), read by
        # `resolve` only: fixes never spell an API through them.
        self._aliases: dict[str, str] = {}
        # Names bound to the module itself (`d2l = sys.modules[__name__]`): `d2l.zeros` is
        # the module's own `zeros`.
        self._own_module: set[str] = set()

    @property
    def bindings(self) -> dict[str, str]:
        return dict(self._bindings)

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        """Record what an import binds; relative imports name this package's own modules,
        never torch's, and are left out, but for PyTorch handed on as `torch`. A star import
        (`from fastai.basics import *`) is taken to bring `torch` where nothing else binds
        it: libraries built on PyTorch re-export it; a relative one (the project's own
        module) also torch's `DataLoader`."""
        for _, bound, target in import_aliases(node):
            if not target.startswith("."):
                self._bindings[bound] = modernize(target)
            if bound == "torch" and target.rsplit(".", 1)[-1] == "torch":
                # `from mlagents.torch_utils import torch`, `from ..utils import torch`: a
                # package handing on PyTorch under its own name.
                self._bindings[bound] = "torch"
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            # `from fastai.basics import *`: libraries built on torch re-export it, and a
            # file that star-imports one uses `torch.` unbound otherwise.
            self._bindings.setdefault("torch", "torch")
            if node.relative:
                # `from .utils.tokenizer_utils import *` (trankit): the project's own
                # module hands on what it imports, and a bare `DataLoader(...)` no other
                # import binds is torch's (a library's star import may bring its own).
                self._bindings.setdefault("DataLoader", _TORCH_DATALOADER)

    def add_top_level(self, module: cst.Module) -> None:
        """Read imports at module level, including those under `try:` and `if`."""
        for statement in top_level_imports(module):
            self.add(statement)
        self._add_aliases(module)

    def _add_aliases(self, module: cst.Module) -> None:
        """Module-level names bound once, to a torch function (`zeros = torch.zeros`, as
        d2l's generated library spells every factory) or to the module itself (`d2l =
        sys.modules[__name__]`), read wherever the module's functions use them."""
        values: dict[str, list[cst.BaseExpression | None]] = {}
        for stmt in module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        single = isinstance(target.target, cst.Name)
                        for name in target_names(target.target):
                            values.setdefault(name, []).append(small.value if single else None)
                elif isinstance(small, cst.AnnAssign | cst.AugAssign):
                    for name in target_names(small.target):
                        values.setdefault(name, []).append(None)
        for name, bound in values.items():
            if len(bound) != 1 or bound[0] is None or name in self._bindings:
                continue
            value = bound[0]
            if _own_module(value):
                self._own_module.add(name)
            elif (target := self.resolve(value)) is not None and target.startswith("torch."):
                self._aliases[name] = target

    def resolve(self, node: cst.CSTNode) -> str | None:
        """The qualified name of a Name/Attribute chain whose head is an import, else None.

        Only plain chains resolve: `torch.zeros(3).view` and `xs[0].cpu` are not names
        (libcst's `get_full_name_for_node` would spell them `torch.zeros.view`, `xs.cpu`).
        """
        # Exact types: libcst's node classes are final, and `isinstance` on them is costly.
        attributes: list[str] = []
        while type(node) is cst.Attribute:
            attributes.append(node.attr.value)  # type: ignore[attr-defined]
            node = node.value  # type: ignore[attr-defined]
        if type(node) is not cst.Name:
            return None
        head: str = node.value  # type: ignore[attr-defined]
        if head in self._own_module and attributes and head not in self._bindings:
            head = attributes.pop()  # `d2l.zeros`: the module's own `zeros`
        target = self._bindings.get(head) or self._aliases.get(head)
        if target is None:
            return None
        rest = ".".join(reversed(attributes))
        # `torch_xla_py.xla_model.x` (pre-1.0 imports) reads as `torch_xla.core.xla_model.x`.
        return modernize(f"{target}.{rest}") if rest else target

    def without(self, names: Iterable[str]) -> ImportTable:
        """A copy without `names`: where code rebinds an imported name (`import model`,
        then `model = model.GPT(conf)`), the binding that reaches a use decides."""
        table = ImportTable()
        dropped = set(names)
        table._bindings = {k: v for k, v in self._bindings.items() if k not in dropped}
        return table

    def binding_count(self) -> int:
        """How many names the imports read so far bind."""
        return len(self._bindings)

    def binds_any(self, packages: Collection[str]) -> bool:
        """Whether the file imports anything from one of the top-level `packages`: else no
        name `resolve` answers (module-level aliases name torch's functions only) is
        theirs."""
        return any(target.split(".", 1)[0] in packages for target in self._bindings.values())

    def binds(self, qualified_prefix: str) -> bool:
        """Whether the file imports anything at or under `qualified_prefix`."""
        return any(
            target == qualified_prefix or target.startswith(qualified_prefix + ".")
            for target in self._bindings.values()
        )

    def local_names_for(self, qualified: str) -> list[str]:
        """Local names bound to exactly `qualified` (e.g. `xm` for torch_xla's xla_model)."""
        return [name for name, target in self._bindings.items() if target == qualified]

    def spell(
        self, qualified: str, module_import: str, in_use: NamesInUse | None = None
    ) -> tuple[str, tuple[str, ...]]:
        """How this file writes `qualified`, and the import a fix must add for it (if any).

        A fix should read like the file around it: with `import torch_xla.core.xla_model as
        xm`, `torch_xla.core.xla_model.optimizer_step` is `xm.optimizer_step`, and with
        `from torch_xla import sync`, `torch_xla.sync` is `sync`. Only a binding of the name
        itself or of its module is reused; otherwise `module_import` (which must bind that
        module, e.g. `import torch_xla.core.xla_model as xm`) is added and its name used,
        unless the file already uses that name for something else (`in_use`: Lightning's
        `import lightning.pytorch as pl`): then the import gets a free alias (`xla_pl`).
        """
        parent, _, leaf = qualified.rpartition(".")
        for target, suffix in ((qualified, ""), (parent, f".{leaf}")):
            names = sorted(self.local_names_for(target))
            if names:
                return names[0] + suffix, ()
        if in_use is not None:
            module_import = in_use.free_import(module_import)
        statement = cst.parse_statement(module_import)
        table = ImportTable()
        assert isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body:
            assert isinstance(small, cst.Import | cst.ImportFrom)
            table.add(small)
        for target, suffix in ((qualified, ""), (parent, f".{leaf}")):
            names = table.local_names_for(target)
            if names:
                return names[0] + suffix, (module_import,)
        raise ValueError(f"{module_import!r} binds neither {qualified} nor its module")


@dataclass(frozen=True)
class NamesInUse:
    """The names a file uses anywhere, and what its imports (at any depth) bind them to:
    what an import added by a fix must not rebind."""

    names: Collection[str]
    imported: Mapping[str, frozenset[str]] = field(default_factory=dict)
    bound: Collection[str] = ()  # bound other than by an import: assigned, a def, a parameter

    def clashes(self, name: str, target: str) -> bool:
        """Whether binding `name` to `target` at module level could change what some code
        in the file refers to: the file binds the name to something else somewhere, or uses
        the builtin of that name. A name read but bound nowhere (`torch` used, never
        imported) is free: binding it is what that code needs."""
        if name in self.bound:
            return True
        if name in self.imported:
            return self.imported[name] != frozenset({target})
        return name in self.names and name in _BUILTINS

    def free_import(self, statement: str) -> str:
        """`statement` (one import of one name), with an alias no code in the file uses
        when the name it binds would clash: `import a.b as pl` -> `import a.b as xla_pl`."""
        parsed = cst.parse_statement(statement)
        assert isinstance(parsed, cst.SimpleStatementLine)
        small = parsed.body[0]
        assert isinstance(small, cst.Import | cst.ImportFrom)
        aliases = list(import_aliases(small))
        if len(aliases) != 1 or len(parsed.body) != 1:
            return statement
        _, bound, target = aliases[0]
        if not self.clashes(bound, modernize(target)):
            return statement
        alias = next(
            candidate
            for n in range(1, len(self.names) + 2)
            if (candidate := f"xla_{bound}{n if n > 1 else ''}") not in self.names
        )
        assert not isinstance(small.names, cst.ImportStar)
        renamed = small.names[0].with_changes(asname=cst.AsName(cst.Name(alias)))
        return (
            cst.Module([])
            .code_for_node(parsed.with_changes(body=[small.with_changes(names=[renamed])]))
            .strip()
        )


def names_in_use(module: cst.Module) -> NamesInUse:
    """`NamesInUse` of `module`: every name it binds or reads, anywhere, but not the
    module paths of its imports (`torch` in `import torch.nn as nn` binds nothing)."""
    imported: dict[str, set[str]] = {}
    names: set[str] = set()
    bound: set[str] = set()
    paths: set[int] = set()  # ids of the Name nodes that only spell an imported path
    for node in descendants(module):
        kind = type(node)
        if kind is cst.Import or kind is cst.ImportFrom:
            paths.update(_path_names(node))  # type: ignore[arg-type]
            for _, name, target in import_aliases(node):  # type: ignore[arg-type]
                imported.setdefault(name, set()).add(modernize(target))
        elif kind is cst.Name:
            if id(node) not in paths:
                names.add(node.value)  # type: ignore[attr-defined]
        else:
            for target in _binding_targets(node):
                bound.update(target_names(target))
    return NamesInUse(names, {name: frozenset(t) for name, t in imported.items()}, bound)


def _binding_targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    """What `node` binds other than by importing: assignment and loop targets, `with ...
    as`, `except ... as`, a def's or class's name, parameters, `global`/`nonlocal`, `del`."""
    if type(node) is cst.Assign:
        return [t.target for t in node.targets]
    if type(node) in (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor):
        return [node.target]
    if type(node) is cst.WithItem and node.asname is not None:
        return [node.asname.name]
    if type(node) in (cst.ExceptHandler, cst.ExceptStarHandler) and node.name is not None:
        return [node.name.name]
    if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Param):
        return [node.name]
    if type(node) in (cst.Global, cst.Nonlocal):
        return [item.name for item in node.names]
    if type(node) is cst.Del:
        return [node.target]
    if type(node) in (cst.MatchAs, cst.MatchStar) and node.name is not None:
        return [node.name]
    return []


def _path_names(node: cst.Import | cst.ImportFrom) -> Iterator[int]:
    """The ids of the Names in an import that name what is imported rather than bind it:
    all of `from a.b import c as d` but `d`, all of `import a.b` but `a`."""
    spelled: list[cst.CSTNode] = []
    if isinstance(node, cst.ImportFrom):
        if node.module is not None:
            spelled.append(node.module)
        if not isinstance(node.names, cst.ImportStar):
            spelled.extend(alias.name for alias in node.names if alias.asname is not None)
    else:
        for alias in node.names:
            if alias.asname is not None:
                spelled.append(alias.name)
            elif isinstance(alias.name, cst.Attribute):
                spelled.append(alias.name)  # binds its head, counted as imported
    for part in spelled:
        for name in descendants(part):
            if type(name) is cst.Name:
                yield id(name)


def _own_module(value: cst.BaseExpression) -> bool:
    """`sys.modules[__name__]`: the module itself."""
    return (
        isinstance(value, cst.Subscript)
        and get_full_name_for_node(value.value) == "sys.modules"
        and len(value.slice) == 1
        and isinstance(value.slice[0].slice, cst.Index)
        and isinstance(value.slice[0].slice.value, cst.Name)
        and value.slice[0].slice.value.value == "__name__"
    )


def top_level_imports(module: cst.Module) -> Iterator[cst.Import | cst.ImportFrom]:
    """The module's imports at module level, including those under `try:` and `if` (not
    in functions or classes: those bind names of their own scope)."""
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import | cst.ImportFrom):
                    yield small
        elif isinstance(stmt, cst.Try | cst.If | cst.Else | cst.ExceptHandler | cst.Finally):
            stack.extend(_child_statements(stmt))


def _child_statements(node: cst.CSTNode) -> list[cst.CSTNode]:
    children: list[cst.CSTNode] = []
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        children.extend(body.body)
    for attr in ("handlers", "orelse", "finalbody"):
        value = getattr(node, attr, None)
        if isinstance(value, cst.CSTNode):
            children.append(value)
        elif isinstance(value, tuple | list):
            children.extend(value)
    return children


def statement_bindings(statement: str) -> dict[str, str]:
    """What a one-line import statement binds: `import torch_xla.core.xla_model as xm` ->
    `{"xm": "torch_xla.core.xla_model"}`."""
    table = ImportTable()
    parsed = cst.parse_statement(statement)
    assert isinstance(parsed, cst.SimpleStatementLine)
    for small in parsed.body:
        assert isinstance(small, cst.Import | cst.ImportFrom)
        table.add(small)
    return table.bindings


def import_aliases(node: cst.BaseSmallStatement) -> Iterator[tuple[int, str, str]]:
    """(position in the statement, bound name, dotted target) for each name an import
    binds: `import a.b as c` -> `c: a.b`; `import a.b` -> `a: a`; `from .m import x as y`
    -> `y: .m.x`. Nothing for a star import, or for a statement that imports nothing."""
    if isinstance(node, cst.Import):
        for index, alias in enumerate(node.names):
            dotted = get_full_name_for_node(alias.name)
            if dotted is None:
                continue
            if alias.asname is not None:
                bound = get_full_name_for_node(alias.asname.name)
                if bound:
                    yield index, bound, dotted
            else:  # `import torch_xla.core.xla_model` binds `torch_xla`
                head = dotted.split(".", 1)[0]
                yield index, head, head
    elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        module = get_full_name_for_node(node.module) if node.module else ""
        if module is None:
            return
        prefix = "." * len(node.relative) + module
        for index, alias in enumerate(node.names):
            name = get_full_name_for_node(alias.name)
            if name is None:
                continue
            bound = get_full_name_for_node(alias.asname.name) if alias.asname else name
            if bound:
                yield index, bound, f"{prefix}.{name}" if prefix else name
