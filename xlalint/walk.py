"""A read-only walk over a libcst tree: libcst's own visiting order, about 3x faster.

`Module.visit` serves transformers too, so it rebuilds (and validates) every node it passes
and calls a per-attribute hook around each child: most of the cost of a lint. The engine
only reads. This walk takes, for each node type, the child fields in the order that type's
`_visit_and_replace_children` visits them (read once per type from libcst's source), so it
produces the same enter/leave events on the same node objects in the same order.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from operator import attrgetter
from typing import Any

import libcst as cst

from xlalint import lint_memo

_VISIT_HELPERS = frozenset(
    {
        "visit_required",
        "visit_optional",
        "visit_sentinel",
        "visit_sequence",
        "visit_iterable",
        "visit_body_sequence",
        "visit_body_iterable",
    }
)

Callback = Callable[[cst.CSTNode], object]


class WalkUnavailable(Exception):
    """libcst's sources cannot be read or parsed here: use `Module.visit` instead."""


@cache
def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields `node_type` visits, in visiting order."""
    known = _known_fields().get(_type_key(node_type))
    if known is not None:
        return known
    try:
        return _child_fields(node_type)
    except (OSError, TypeError, SyntaxError) as error:
        raise WalkUnavailable(f"{node_type.__name__}: {error}") from None


def _type_key(node_type: type) -> str:
    return f"{node_type.__module__}.{node_type.__qualname__}"


@cache
def _known_fields() -> dict[str, tuple[str, ...]]:
    """`walk_fields.FIELDS` where the installed libcst is the release it was read from:
    reading libcst's source for each node type costs a run ~50 ms (every worker too)."""
    from xlalint import walk_fields

    try:
        from libcst._version import __version__ as version
    except ImportError:
        return {}
    return walk_fields.FIELDS if version == walk_fields.LIBCST_VERSION else {}


def field_table() -> dict[str, tuple[str, ...]]:
    """Every libcst node type's visited fields, read from libcst's source (what
    `walk_fields.py` holds for the release it names)."""
    return {_type_key(t): _child_fields(t) for t in sorted(node_types(cst.CSTNode), key=_type_key)}


def _child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    source = textwrap.dedent(inspect.getsource(node_type._visit_and_replace_children))
    calls = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _VISIT_HELPERS
    ]
    calls.sort(key=lambda call: (call.lineno, call.col_offset))
    fields: list[str] = []
    for call in calls:
        name = call.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            raise TypeError("unexpected visiting code")
        if name.value not in fields:  # `ImportFrom.names` is visited in one of two ways
            fields.append(name.value)
    return tuple(fields)


def node_types(*bases: type[cst.CSTNode]) -> frozenset[type[cst.CSTNode]]:
    """`bases` and every class under them: `type(node) in node_types(...)` is the test
    `isinstance(node, bases)` without ABCMeta's check (`isinstance` on libcst's classes,
    which derive from ABC, runs `__instancecheck__` in Python whenever the exact type does
    not match). A single leaf class (no subclasses: tests/test_walk.py checks every class
    so tested) is tested as `type(node) is cst.Name`."""
    found: set[type[cst.CSTNode]] = set()
    pending = list(bases)
    while pending:
        node_type = pending.pop()
        found.add(node_type)
        pending.extend(node_type.__subclasses__())
    return frozenset(found)


# Whitespace, comments and punctuation: about half of all nodes. Their subtrees hold nothing
# else, they never enclose code, and the engine's context does nothing with them but push
# and pop its ancestor stack, so a file none of whose rules visits them can skip them.
TRIVIA = node_types(
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline,
    cst.Comment, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Comma, cst.Colon, cst.Semicolon, cst.Dot,
    cst.AssignEqual, cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp,
    cst.BaseAugOp,
)  # fmt: skip
# What a walk of a body's own code skips: trivia, and the definitions nested in it (their
# code runs when they are called, not where they are written).
NOT_OWN = TRIVIA | {cst.FunctionDef, cst.ClassDef, cst.Lambda}


Handlers = Mapping[type[cst.CSTNode], Sequence[Callback]]
_NO_HANDLERS: Handlers = {}


def walk(
    node: cst.CSTNode,
    enter: Callback,
    leave: Callback,
    skip: frozenset[type[cst.CSTNode]] = frozenset(),
    visits: Handlers = _NO_HANDLERS,
    leaves: Handlers = _NO_HANDLERS,
) -> None:
    """Call `enter` and `leave` around every node under `node`, as `node.visit` would,
    except under nodes whose type is in `skip` (not entered at all). After `enter`, the
    `visits` handlers of the node's type run, and its `leaves` handlers before `leave`:
    the engine's rules, called here rather than by a callback that would run `enter` and
    look them up, two calls more for every node. Within `shared_children`, the child
    lists it makes are kept for the analyses' own walks.

    Raises WalkUnavailable (possibly midway) where libcst's sources cannot be read.
    """
    enter(node)
    kind = type(node)
    if kind in visits:
        for handler in visits[kind]:
            handler(node)
    shared = _shared
    if shared is None:
        listed = _listed(node)
    else:  # (an analysis looking ahead may have listed it already)
        key = id(node)
        known = shared.get(key)
        if known is not None and known[0] is node:
            listed = known[1]
        else:
            listed = _listed(node)
            shared[key] = [node, listed, None]
    for child in listed:
        if type(child) not in skip:
            walk(child, enter, leave, skip, visits, leaves)
    if kind in leaves:
        for handler in leaves[kind]:
            handler(node)
    leave(node)


@cache
def _reader(node_type: type[cst.CSTNode]) -> Callable[[cst.CSTNode], tuple[object, ...]] | None:
    """One call that reads, in visiting order, the fields `node_type` visits (None: it
    visits none)."""
    fields = child_fields(node_type)
    if len(fields) > 1:
        return attrgetter(*fields)
    if fields:
        field = attrgetter(fields[0])
        return lambda node: (field(node),)
    return None  # a leaf: whitespace, a comment, `pass`...


def _listed(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """`node`'s children in visiting order (raises WalkUnavailable, as `child_fields`)."""
    read = _reader(type(node))
    if read is None:
        return ()
    found: list[cst.CSTNode] = []
    for value in read(node):
        kind = type(value)  # exact types: a parsed tree's sequences are tuples or lists
        if kind is tuple or kind is list:
            found.extend(value)  # type: ignore[arg-type]
        # A visited field holds a node, None or a sentinel. (`isinstance` on libcst's
        # abstract CSTNode runs ABCMeta's check, in Python, for every field.)
        elif value is not None and kind is not cst.MaybeSentinel:
            found.append(value)  # type: ignore[arg-type]
    return tuple(found)


# Analyses walk the same subtrees by hand, each for its own question (what a function
# binds, returns, calls...): on diffusers a node's children were listed about three times
# over. While the engine lints a file (`shared_children`), each node's list is made once,
# most of them by the engine's walk. Keyed by `id` (a node's `__hash__` is a Python call);
# the entry holds the node, so the id stays its own, and libcst's nodes are immutable, so
# the lists stay true. An entry: [node, its children, its `code_children` once asked].
_shared: dict[int, list[Any]] | None = None


# The analyses' own walks start again and again at the same roots (a function's body:
# the host arguments it hands on, the attributes it reads from the host, the names it
# trains, the masks it complements... ~8 walks each): while the engine lints a file, a root
# walked a second time has its nodes kept in visiting order (`descendants`), and each walk
# after reads them back. By id, as `_shared`: [node, None (walked once) or its nodes].
_walked: dict[int, list[Any]] | None = None


@contextmanager
def shared_children() -> Iterator[None]:
    """List each node's children once while in this block (one file's lint: the table
    holds the nodes it met and goes with the block), and the nodes under each root walked
    more than once (`descendants`)."""
    global _shared, _walked
    outer, outer_walked = _shared, _walked
    if outer is None:
        _shared, _walked = {}, {}
    try:
        yield
    finally:
        _shared, _walked = outer, outer_walked


def children(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """`node.children`, in the same order, without libcst's cost: its property runs a
    visitor over the node's fields, rebuilding the node, and dominates analyses that walk
    subtrees by hand."""
    shared = _shared
    if shared is None:
        try:
            return _listed(node)
        except WalkUnavailable:
            return tuple(node.children)
    key = id(node)
    known = shared.get(key)
    if known is not None and known[0] is node:
        return known[1]
    try:
        listed = _listed(node)
    except WalkUnavailable:
        return tuple(node.children)
    shared[key] = [node, listed, None]
    return listed


def listed_owners(nodes: Iterable[cst.CSTNode]) -> dict[int, cst.CSTNode]:
    """By id, the node whose child list `shared_children` holds each of `nodes` (those it
    holds): the node that whitespace or punctuation, which the engine's walk passes over,
    belongs to."""
    shared = _shared
    wanted = {id(node) for node in nodes}
    found: dict[int, cst.CSTNode] = {}
    if shared is None or not wanted:
        return found
    for owner, listed, _ in shared.values():
        for child in listed:
            if id(child) in wanted:
                found[id(child)] = owner
    return found


def code_children(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """`children` less whitespace, comments and punctuation (`TRIVIA`), which hold no code:
    hand-written walks looking for names, calls or statements visit half the nodes."""
    shared = _shared
    if shared is None:
        return tuple([child for child in children(node) if type(child) not in TRIVIA])
    entry = shared.get(id(node))
    if entry is None or entry[0] is not node:  # (`children` shares the list it makes)
        return tuple([child for child in children(node) if type(child) not in TRIVIA])
    code = entry[2]
    if code is None:
        code = entry[2] = tuple([child for child in entry[1] if type(child) not in TRIVIA])
    return code


# Every expression node type, for exact-type tests in hot walks (`isinstance` on libcst's
# abstract bases runs ABCMeta's check in Python).
EXPRESSIONS = node_types(cst.BaseExpression)


def last_name(node: cst.CSTNode) -> str | None:
    """The name a `Name` or an `Attribute` ends in (`self.optimizers` -> `optimizers`);
    None for anything else: names are how such code says what a value holds."""
    kind = type(node)  # (exact types: `isinstance` on libcst's ABCs runs in Python)
    if kind is cst.Attribute:
        return node.attr.value  # type: ignore[attr-defined]
    if kind is cst.Name:
        return node.value  # type: ignore[attr-defined]
    return None


def names_under(node: cst.CSTNode) -> set[str]:
    """The value of every `Name` under `node`, attributes' included (`dict[str, Tensor]`
    -> dict, str, Tensor; `device.type == "cuda"` -> device, type)."""
    return {name.value for name in descendants(node) if type(name) is cst.Name}  # type: ignore[attr-defined]


def descendants(
    node: cst.CSTNode, skip: frozenset[type[cst.CSTNode]] = TRIVIA
) -> Iterator[cst.CSTNode]:
    """`node` and every node under it, in visiting order, except under (and including)
    nodes whose type is in `skip`: by default whitespace, comments and punctuation, which
    hold no names, calls or strings. The cheap `libcst.matchers.findall` for a type test.
    While the engine lints a file, the nodes under a root walked (with the default `skip`)
    a second time are kept, and later walks of it read them back (`_walked`)."""
    walked = _walked
    if walked is None or skip is not TRIVIA:
        return _descendants(node, skip)
    entry = walked.get(id(node))
    if entry is None or entry[0] is not node:
        walked[id(node)] = [node, None]
        return _descendants(node, skip)
    found = entry[1]
    if found is None:
        found = entry[1] = tuple(_descendants(node, skip))
    return iter(found)


def _descendants(
    node: cst.CSTNode, skip: frozenset[type[cst.CSTNode]] = TRIVIA
) -> Iterator[cst.CSTNode]:
    shared = _shared
    trivia = skip is TRIVIA
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) in skip:
            continue
        yield current
        known = None if shared is None else shared.get(id(current))  # (`children`, inline)
        if known is None or known[0] is not current:
            stack.extend(reversed(children(current)))
        elif trivia:
            # The shared code children (`code_children`, inline): trivia never stacked.
            code = known[2]
            if code is None:
                code = known[2] = tuple([c for c in known[1] if type(c) not in TRIVIA])
            stack.extend(reversed(code))
        else:
            stack.extend(reversed(known[1]))


def flat_targets(targets: Iterable[cst.BaseExpression]) -> Iterator[cst.BaseExpression]:
    """Assignment targets with tuples and lists unpacked, in order: `a, (b, c[i])` -> a, b,
    c[i]; attributes and subscripts kept whole (what `target_names` leaves out)."""
    for target in targets:
        if isinstance(target, cst.Tuple | cst.List):
            yield from flat_targets(element.value for element in target.elements)
        else:
            yield target


def name_assignments(
    statements: Iterable[cst.BaseStatement],
) -> Iterator[tuple[str, cst.BaseExpression]]:
    """`name = value` among `statements` (one target, a plain name), in order, as (name,
    value): the simple statements of a block, not those nested in its compound ones."""
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                yield small.targets[0].target.value, small.value


def target_names(target: cst.CSTNode) -> set[str]:
    """Names bound by an assignment target (`a, (b, *c) = ...`); `self.x`/`x[i]` bind none."""
    kind = type(target)  # (exact types, as in `last_name`)
    if kind is cst.Name:
        return {target.value}  # type: ignore[attr-defined]
    if kind is cst.Tuple or kind is cst.List:
        names: set[str] = set()
        for element in target.elements:  # type: ignore[attr-defined]
            names |= target_names(element.value)
        return names
    if kind is cst.StarredElement:
        return target_names(target.value)  # type: ignore[attr-defined]
    return set()


# Several analyses ask what a function rebinds (is a parameter still the caller's value, is a
# test's name settled, is a container a local), often many times for the same function: one
# walk per function answers them all. Nodes hash by identity.
@lint_memo.memo(256)
def binding_counts(function: cst.FunctionDef) -> Mapping[str, int]:
    """How many times `function`'s own body binds each name: targets of `=`, annotated
    assignments, `+=`, `:=` (in comprehensions too), `for`, `with ... as`, `except ... as`,
    `del`, imports, match captures, `type` aliases, and the names of `def`s and `class`es
    in it. Parameters are not counted, nor what nested definitions bind in their own
    bodies, except names they declare `nonlocal` or `global` (which they may rebind under
    us). Shared: do not change the mapping."""
    counts: dict[str, int] = {}

    def bind(names: Iterable[str]) -> None:
        for name in names:
            counts[name] = counts.get(name, 0) + 1

    stack: list[cst.CSTNode] = [function.body]
    # Exact types (libcst's node classes are final): `isinstance` on them runs ABCMeta's
    # check, in Python, once per class of a union, for every node of the function.
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            bind({node.name.value})  # type: ignore[attr-defined]
            bind(_declared_in(node.body))  # type: ignore[attr-defined]
            continue
        if kind is cst.Lambda:
            continue
        if kind is cst.Import or kind is cst.ImportFrom:
            bind(_imported(node))  # type: ignore[arg-type]
            continue
        if kind in _TARGETED:
            bind(target_names(node.target))  # type: ignore[attr-defined]
        elif kind is cst.AsName:
            bind(target_names(node.name))  # type: ignore[attr-defined]
        elif kind is cst.MatchAs or kind is cst.MatchStar:
            if node.name is not None:  # type: ignore[attr-defined]
                bind({node.name.value})  # type: ignore[attr-defined]
        elif kind is cst.MatchMapping and node.rest is not None:  # type: ignore[attr-defined]
            bind({node.rest.value})  # type: ignore[attr-defined]
        elif kind is cst.TypeAlias:
            bind({node.name.value})  # type: ignore[attr-defined]
        stack.extend(code_children(node))
    return counts


@lint_memo.memo(256)
def bound_names(function: cst.FunctionDef) -> frozenset[str]:
    """The names `function`'s own body binds, its parameters aside (see `binding_counts`)."""
    return frozenset(binding_counts(function))


# `comprehension for` targets are not here: they bind in the comprehension's own scope.
_TARGETED = frozenset(
    {cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.Del}
)


def _declared_in(body: cst.CSTNode) -> Iterator[str]:
    """Names a nested definition's statements declare `nonlocal` or `global`."""
    stack = [body]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Nonlocal or kind is cst.Global:
            yield from (n.name.value for n in node.names)  # type: ignore[attr-defined]
        elif kind not in EXPRESSIONS:
            stack.extend(code_children(node))


def _imported(node: cst.Import | cst.ImportFrom) -> Iterator[str]:
    """The names an import binds: `import a.b` binds `a`; `from m import *`, none known."""
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        if alias.asname is not None:
            yield from target_names(alias.asname.name)
        elif isinstance(node, cst.Import):
            yield alias.evaluated_name.split(".")[0]
        else:
            yield alias.evaluated_name


@lint_memo.memo(16)
def top_level_functions(module: cst.Module) -> frozenset[str]:
    """The names of a module's top-level functions (calls by name, dispatch tables)."""
    return frozenset(s.name.value for s in module.body if isinstance(s, cst.FunctionDef))


@lint_memo.memo(16)
def top_level_definitions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """A module's top-level functions by name (the last definition of a name wins, as
    at run time). Shared: read it, do not change it."""
    return {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}


# The comprehensions, each its own scope with its own `for` clauses.
COMPREHENSIONS = node_types(cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def self_attribute(node: cst.CSTNode) -> str | None:
    """`x` for `self.x`: an attribute of the instance a method runs on."""
    if (
        type(node) is cst.Attribute  # (exact types, as in `last_name`)
        and type(node.value) is cst.Name  # type: ignore[attr-defined]
        and node.value.value == "self"  # type: ignore[attr-defined]
    ):
        return node.attr.value  # type: ignore[attr-defined]
    return None


if __name__ == "__main__":  # regenerate walk_fields.py for the installed libcst
    import pathlib

    from libcst._version import __version__

    def row(key: str, fields: tuple[str, ...]) -> str:  # laid out as `ruff format` does
        names = [f'"{name}",' for name in fields]
        if len(names) < 2:
            return f'    "{key}": ({"".join(names)}),\n'
        return f'    "{key}": (\n' + "".join(f"        {n}\n" for n in names) + "    ),\n"

    rows = "".join(row(key, fields) for key, fields in field_table().items())
    pathlib.Path(__file__).with_name("walk_fields.py").write_text(
        '"""The fields each libcst node type visits, in order, as `walk.field_table()` reads\n'
        "them from libcst's source; generated by `python -m xlalint.walk`, do not edit.\n"
        'Used only where the installed libcst is this release."""\n\n'
        f'LIBCST_VERSION = "{__version__}"\n\n'
        f"FIELDS: dict[str, tuple[str, ...]] = {{\n{rows}}}\n",
        encoding="utf-8",
    )


def is_docstring(statement: cst.BaseStatement) -> bool:
    """A statement that is only a string: a module's, class's or function's docstring
    when it comes first."""
    return (
        type(statement) is cst.SimpleStatementLine
        and len(statement.body) == 1
        and type(statement.body[0]) is cst.Expr
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def only_return(function: cst.FunctionDef) -> cst.Return | None:
    """The `return` statement of a function whose body is only that (after a docstring):
    a helper that hands back one expression."""
    if type(function.body) is not cst.IndentedBlock:
        return None
    statements = list(function.body.body)
    if statements and is_docstring(statements[0]):
        statements = statements[1:]
    if len(statements) != 1 or type(statements[0]) is not cst.SimpleStatementLine:
        return None
    small = statements[0].body
    return small[0] if len(small) == 1 and type(small[0]) is cst.Return else None
