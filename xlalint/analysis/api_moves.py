"""References to torch_xla APIs that moved, and writing the new name where the old was imported.

The API modernization rules (family 6) replace one torch_xla name with another. Two things
decide whether such a fix keeps the code working:

- Is this really a read of the imported name? Not the import itself, not a definition or an
  assignment target, not a local variable or parameter that shadows `xm`, and not a
  version-compatibility branch (`if hasattr(xm, "xrt_world_size")`, `except AttributeError`)
  that must keep the old spelling for older torch_xla releases.
- Where does the new name's import go? Libraries import torch_xla conditionally
  (`if is_torch_xla_available(): import torch_xla.core.xla_model as xm`) or inside a
  function, to stay importable without it. A fix that added `import torch_xla` at the top of
  such a file would break it for everyone without torch_xla, so the new import goes beside
  the statement that imported the old name, in the same block; only when that statement is
  an unconditional module-level import does it go with the file's imports (the fixer's
  `add_imports`).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import parameters
from xlalint.analysis.guards import ends_in
from xlalint.analysis.imports import ImportTable, statement_bindings
from xlalint.walk import descendants, node_types

if TYPE_CHECKING:
    from xlalint.context import FileContext
    from xlalint.rule import NodeFix, Rule

# Exceptions a version-compatibility `try:` catches around an old API (not `Exception`,
# which training loops catch for other reasons).
_COMPAT_EXCEPTIONS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError"})


@dataclass(frozen=True)
class ImportSite:
    """One import statement: where it is and what it binds."""

    node: cst.Import | cst.ImportFrom
    in_line: bool  # on its own statement line (not `if x: import y`), so a line can go before
    function: cst.FunctionDef | None  # the innermost enclosing function
    unconditional: bool  # directly in the module's body
    indent: str
    block: cst.CSTNode  # the Module or IndentedBlock holding the statement
    bindings: dict[str, str]


@dataclass
class ImportSites:
    """Every import statement of a module, and the names bound other than by import."""

    sites: list[ImportSite] = field(default_factory=list)
    top_level: ImportTable = field(default_factory=ImportTable)
    # Names assigned, defined or taken as parameters anywhere, and per function.
    assigned: set[str] = field(default_factory=set)
    function_locals: dict[int, set[str]] = field(default_factory=dict)

    def binding_site(
        self, name: str, functions: list[cst.FunctionDef], target: str | None
    ) -> ImportSite | None:
        """The import that binds `name` where a use inside `functions` (innermost first)
        sees it: a local import of the nearest function, else a module-level one."""
        for scope in (*functions, None):
            candidates = [s for s in self.sites if s.function is scope and name in s.bindings]
            if candidates:
                exact = [s for s in candidates if s.bindings[name] == target]
                unconditional = [s for s in exact if s.unconditional]
                return (unconditional or exact or candidates)[0]
        return None

    def shadowed(self, name: str, functions: list[cst.FunctionDef]) -> bool:
        """Whether an enclosing function binds `name` itself (a parameter or local)."""
        return any(name in self.function_locals.get(id(f), ()) for f in functions)

    def table_beside(self, site: ImportSite) -> ImportTable:
        """The imports a statement beside `site` can rely on: the unconditional module-level
        ones and those in its own block."""
        table = ImportTable()
        for other in self.sites:
            if other.unconditional or other.block is site.block:
                table.add(other.node)
        return table


# Attributes of compound statements that hold nested suites or clauses.
_CLAUSES = ("body", "orelse", "handlers", "finalbody", "cases")
_SUITES = node_types(cst.BaseSuite)


class _Scanner:
    """Reads imports and bindings statement by statement, without descending into
    expressions: a fraction of a full libcst walk (walrus targets are not seen)."""

    def __init__(self, module: cst.Module) -> None:
        self.result = ImportSites()
        self._module = module
        self._functions: list[cst.FunctionDef] = []
        self._globals: list[set[str]] = []  # per function: names declared global/nonlocal

    def scan(self) -> ImportSites:
        self._statements(self._module.body, self._module, "")
        return self.result

    def _statements(self, body: Sequence[cst.CSTNode], block: cst.CSTNode, indent: str) -> None:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                self._smalls(statement.body, block, indent, in_line=True)
            else:
                self._compound(statement, block, indent)

    def _suite(self, suite: cst.CSTNode, block: cst.CSTNode, indent: str) -> None:
        if isinstance(suite, cst.IndentedBlock):
            step = self._module.default_indent if suite.indent is None else suite.indent
            self._statements(suite.body, suite, indent + step)
        elif isinstance(suite, cst.SimpleStatementSuite):
            # `if x: import y` is a one-line suite: conditional, and no line to add to.
            self._smalls(suite.body, suite, indent, in_line=False)

    def _compound(self, node: cst.CSTNode, block: cst.CSTNode, indent: str) -> None:
        if isinstance(node, cst.FunctionDef):
            self._bind(node.name.value)
            self._functions.append(node)
            self._globals.append(set())
            for param in parameters(node, star=True):
                self._bind(param.name.value)
            self._suite(node.body, block, indent)
            self._functions.pop()
            declared = self._globals.pop()
            self.result.function_locals.get(id(node), set()).difference_update(declared)
            return
        if isinstance(node, cst.ClassDef):
            self._bind(node.name.value)
        elif isinstance(node, cst.For):
            self._bind_target(node.target)
        elif isinstance(node, cst.With):
            for item in node.items:
                if item.asname is not None:
                    self._bind_target(item.asname.name)
        elif isinstance(node, cst.ExceptHandler | cst.ExceptStarHandler) and node.name:
            self._bind_target(node.name.name)
        elif isinstance(node, cst.Match):
            # `case` clauses sit one indentation step inside `match`.
            indent += self._module.default_indent if node.indent is None else node.indent
        for attribute in _CLAUSES:
            value = getattr(node, attribute, None)
            for part in value if isinstance(value, Sequence) else (value,):
                if type(part) in _SUITES:
                    self._suite(part, block, indent)
                elif isinstance(part, cst.CSTNode):
                    # `else:`/`elif`/`except`/`finally`/`case` clauses hold suites themselves.
                    self._compound(part, block, indent)

    def _smalls(
        self,
        smalls: Sequence[cst.BaseSmallStatement],
        block: cst.CSTNode,
        indent: str,
        in_line: bool,
    ) -> None:
        for small in smalls:
            if type(small) in (cst.Import, cst.ImportFrom):
                self._add_site(small, block, indent, in_line)
            elif isinstance(small, cst.Assign):
                for target in small.targets:
                    self._bind_target(target.target)
            elif isinstance(small, cst.AnnAssign | cst.AugAssign):
                self._bind_target(small.target)
            elif isinstance(small, cst.Global | cst.Nonlocal) and self._globals:
                # Not a local: the name stays the module's (or the outer function's).
                self._globals[-1].update(item.name.value for item in small.names)

    def _add_site(
        self, node: cst.Import | cst.ImportFrom, block: cst.CSTNode, indent: str, in_line: bool
    ) -> None:
        table = ImportTable()
        table.add(node)
        unconditional = block is self._module
        self.result.sites.append(
            ImportSite(
                node=node,
                in_line=in_line,
                function=self._functions[-1] if self._functions else None,
                unconditional=unconditional,
                indent=indent,
                block=block,
                bindings=table.bindings,
            )
        )
        if unconditional:
            self.result.top_level.add(node)

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def _bind(self, name: str) -> None:
        self.result.assigned.add(name)
        if self._functions:
            self.result.function_locals.setdefault(id(self._functions[-1]), set()).add(name)


_SITES: weakref.WeakKeyDictionary[FileContext, ImportSites] = weakref.WeakKeyDictionary()


def import_sites(ctx: FileContext) -> ImportSites:
    """The file's import statements and other bindings, scanned once per file on demand
    (only files with a family-6 finding pay for it)."""
    sites = _SITES.get(ctx)
    if sites is None:
        sites = _SITES[ctx] = _Scanner(ctx.module).scan()
    return sites


def enclosing_functions(ctx: FileContext) -> list[cst.FunctionDef]:
    return [a for a in ctx.ancestors() if isinstance(a, cst.FunctionDef)]


def head_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


# -- is this a read of the imported name? ------------------------------------------------------
def _is_store_or_definition(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    if isinstance(parent, cst.Attribute):
        return parent.attr is node
    if isinstance(parent, cst.Arg):
        return parent.keyword is node
    if isinstance(parent, cst.FunctionDef | cst.ClassDef | cst.Param):
        return parent.name is node
    if isinstance(parent, cst.AssignTarget | cst.AnnAssign | cst.AugAssign | cst.NamedExpr):
        return parent.target is node
    if isinstance(parent, cst.For | cst.CompFor):
        return parent.target is node
    return isinstance(parent, cst.AsName | cst.NameItem | cst.ImportAlias | cst.Del)


def reads_import(ctx: FileContext, node: cst.Name | cst.Attribute) -> bool:
    """Whether `node`, being visited, reads an imported name: not an import statement, a
    definition or an assignment target, and not a local that shadows the import."""
    if _is_store_or_definition(node, ctx.parent):
        return False
    if any(isinstance(a, cst.Import | cst.ImportFrom) for a in ctx.ancestors()):
        return False
    head = head_name(node)
    return head is not None and not import_sites(ctx).shadowed(head, enclosing_functions(ctx))


def in_compat_guard(ctx: FileContext, node: cst.CSTNode, names: Collection[str]) -> bool:
    """Whether `node`, being visited, sits where code picks an API by torch_xla version:
    under `if hasattr(xm, "mark_step")` / `getattr(...)` on one of `names` or under a test
    that reads a version (either branch, or the test itself), or after such an `if` whose
    body returns; or in the body of a `try:` that catches AttributeError or ImportError.
    Such code keeps the old name on purpose."""
    child = node
    for ancestor in ctx.ancestors():
        if isinstance(ancestor, cst.If | cst.IfExp):
            if _probes_api(ancestor.test, names):
                return True
        elif isinstance(ancestor, cst.IndentedBlock | cst.Module):
            if any(_returns_early_on_probe(s, names) for s in _before(ancestor.body, child)):
                return True
        elif (
            isinstance(ancestor, cst.Try)
            and child is ancestor.body
            and any(_catches_compat_error(h) for h in ancestor.handlers)
        ):
            return True
        child = ancestor
    return False


def _probes_api(test: cst.BaseExpression, names: Collection[str]) -> bool:
    """`hasattr(xm, "mark_step")`/`getattr(...)` on one of `names`, or a torch_xla version
    check (`torch_xla.__version__`, `is_torch_xla_version(...)`, `XLA_VERSION`); a torch
    version check (`is_torch_version("<", "2.2")`) is not about torch_xla's API."""
    words = set()
    for node in descendants(test):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value in {"hasattr", "getattr"}
            and any(
                isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value in names
                for arg in node.args
            )
        ):
            return True
        if isinstance(node, cst.Name):
            words.add(node.value.lower())
    return any("version" in w for w in words) and any("xla" in w for w in words)


# How the new-API branch of a compatibility `if` leaves before the old API's use (not `raise`:
# `if is_torch_version("<", "2.2"): raise ...` guards something else).
_EXITS = (cst.Return, cst.Continue, cst.Break)


def _before(body: Sequence[cst.CSTNode], child: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """The statements of `body` before `child` (none if `child` is not one of them)."""
    for index, statement in enumerate(body):
        if statement is child:
            return list(body[:index])
    return []


def _returns_early_on_probe(statement: cst.CSTNode, names: Collection[str]) -> bool:
    """`if hasattr(torch_xla, "sync"): ...; return` before the old API's use."""
    if not isinstance(statement, cst.If) or not _probes_api(statement.test, names):
        return False
    return ends_in(statement.body, _EXITS)


def _catches_compat_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for element in types:
        value = element.value if isinstance(element, cst.Element) else element
        name = get_full_name_for_node(value) or ""
        if name.rsplit(".", 1)[-1] in _COMPAT_EXCEPTIONS:
            return True
    return False


# -- writing the new name -------------------------------------------------------------------
@dataclass(frozen=True)
class Spelling:
    """How a fix writes a new name: the text, the imports for the fixer to add at the top,
    and edits that put an import beside a conditional or local one."""

    text: str
    imports: tuple[str, ...] = ()
    edits: tuple[tuple[cst.CSTNode, str], ...] = ()

    def fix(
        self, rule: Rule, description: str, *replacements: tuple[cst.CSTNode, cst.CSTNode | str]
    ) -> NodeFix:
        """`rule`'s fix making `replacements`, with the imports this spelling needs."""
        return rule.fix(description, *replacements, *self.edits, imports=self.imports)


def spell_beside(
    ctx: FileContext, reference: cst.BaseExpression, qualified: str, module_import: str
) -> Spelling | None:
    """Write `qualified` for a fix of `reference` (an old name being visited), importing it
    where `reference`'s own import is; None when that cannot be done safely."""
    head = head_name(reference)
    if head is None:
        return None
    sites = import_sites(ctx)
    site = sites.binding_site(head, enclosing_functions(ctx), ctx.imports.bindings.get(head))
    if site is None:
        return None
    if site.unconditional:
        text, imports = sites.top_level.spell(qualified, module_import)
        if imports and _clashes(ctx, sites, module_import):
            return None
        return Spelling(text, imports)
    text, imports = sites.table_beside(site).spell(qualified, module_import)
    if not imports:
        return Spelling(text)
    if not site.in_line or _clashes(ctx, sites, module_import):
        return None
    # Put the import on a line of its own just before the one that imported the old name.
    (statement,) = imports
    before = f"{statement}\n{site.indent}{ctx.module.code_for_node(site.node)}"
    return Spelling(text, (), ((site.node, before),))


def _clashes(ctx: FileContext, sites: ImportSites, statement: str) -> bool:
    """Whether adding `statement` would rebind a name the file uses for something else."""
    existing = ctx.imports.bindings
    return any(
        name in sites.assigned or existing.get(name, target) != target
        for name, target in statement_bindings(statement).items()
    )


def call_of(ctx: FileContext, node: cst.CSTNode) -> cst.Call | None:
    """The call whose callee is `node` (being visited), if it is called."""
    parent = ctx.parent
    return parent if isinstance(parent, cst.Call) and parent.func is node else None
