"""The engine's fast walk must produce exactly the events of libcst's own `visit`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest
from conftest import ROOT

from xlalint import engine, walk
from xlalint.api import enabled_rules
from xlalint.config import Settings

# Nodes whose visiting code is unusual: fields visited conditionally or in two ways.
TRICKY = """\
from . import (a, b as c)
from .. import *
from x.y import z
import p.q as r
x = f"{a!r:>{width}} {b=} {c:{d}.{e}f}"
{t_string}type Alias[T: int = str, *Ts = *tuple[int], **P = [int]] = list[T]
def g[T](a, /, b: int = 1, *args, c, d=2, **kw) -> T: ...
@decorator(1)
async def h():
    async with a as b, c:
        async for i in j:
            yield [k async for k in i if k]
    await h()
match command:
    case [Point(x=0, y=0), *rest] | {"k": v, **others} if v:
        pass
    case str() as s:
        pass
lambda *a, b=1, **c: (yield)
del a[1:2, ::3], b.c
global q
with (open(a) as b, open(c) as d):
    pass
try:
    pass
except* (ValueError, TypeError) as e:
    raise RuntimeError from e
else:
    pass
finally:
    pass
print(*a, **b, sep="")  # a comment
x: int = 1; y += 2 ; z @= w
"""
# t-strings parse from libcst 1.8.1 on; xlalint supports older releases, which test without.
TRICKY = TRICKY.replace(
    "{t_string}", 't = t"{a:{b}}" if False else 0\n' if hasattr(cst, "TemplatedString") else ""
)


def events(module: cst.Module, *, fast: bool) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []

    class Recorder(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            seen.append(("enter", id(node)))
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            seen.append(("leave", id(original_node)))

    if fast:
        walk.walk(
            module,
            lambda node: seen.append(("enter", id(node))),
            lambda node: seen.append(("leave", id(node))),
        )
    else:
        module.visit(Recorder())
    return seen


def sources() -> list[Path]:
    return sorted([*(ROOT / "examples").rglob("*.py"), *(ROOT / "fixtures").rglob("*.py")])


def test_tricky_nodes_are_walked_like_libcst() -> None:
    module = cst.parse_module(TRICKY)
    assert events(module, fast=True) == events(module, fast=False)


def test_every_example_and_fixture_is_walked_like_libcst() -> None:
    checked = 0
    for path in sources():
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        assert events(module, fast=True) == events(module, fast=False), path
        checked += 1
    assert checked > 50


def test_handlers_run_inside_enter_and_leave() -> None:
    module = cst.parse_module(TRICKY)
    seen: list[tuple[str, int]] = []
    visits = {cst.Name: [lambda node: seen.append(("visit", id(node)))]}
    leaves = {
        cst.Call: [lambda node: seen.append(("leave Call", id(node)))],
        cst.Name: [lambda node: seen.append(("leave Name", id(node)))] * 2,
    }
    walk.walk(
        module,
        lambda node: seen.append(("enter", id(node))),
        lambda node: seen.append(("leave", id(node))),
        visits=visits,
        leaves=leaves,
    )
    expected: list[tuple[str, int]] = []
    for event, node_id in events(module, fast=False):
        kind = next(type(n) for n in walk.descendants(module, frozenset()) if id(n) == node_id)
        if event == "leave" and kind in (cst.Call, cst.Name):
            expected += [(f"leave {kind.__name__}", node_id)] * (2 if kind is cst.Name else 1)
        expected.append((event, node_id))
        if event == "enter" and kind is cst.Name:
            expected.append(("visit", node_id))
    assert seen == expected


def test_without_libcst_sources_the_engine_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = enabled_rules(Settings(root=ROOT).with_overrides(select=("ALL",)))
    paths = sorted((ROOT / "examples").glob("*.py"))
    expected = [engine.lint_source(p.read_text(), str(p), rules) for p in paths]

    def unavailable(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
        raise walk.WalkUnavailable(node_type.__name__)

    monkeypatch.setattr(walk, "child_fields", unavailable)
    walk._reader.cache_clear()  # (what it read before the sources went)
    with pytest.raises(walk.WalkUnavailable):
        walk.walk(cst.parse_module("x = 1\n"), lambda node: None, lambda node: None)
    fallback = [engine.lint_source(p.read_text(), str(p), rules) for p in paths]
    assert fallback == expected
    assert any(result.diagnostics for result in expected)


def test_skipping_trivia_changes_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = enabled_rules(Settings(root=ROOT).with_overrides(select=("ALL",)))
    paths = [p for p in sources() if "XLA" in p.parent.name or p.parent.name == "examples"]
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in paths}
    skipped = [engine.lint_source(text, str(p), rules) for p, text in texts.items()]
    monkeypatch.setattr(engine, "TRIVIA", frozenset())
    complete = [engine.lint_source(text, str(p), rules) for p, text in texts.items()]
    assert skipped == complete
    assert sum(len(result.diagnostics) for result in complete) > 100


def test_trivia_never_enclose_code() -> None:
    module = cst.parse_module(TRICKY)
    inside: list[type[cst.CSTNode]] = []

    def collect(node: cst.CSTNode) -> None:
        for child in node.children:
            if type(node) in walk.TRIVIA:
                inside.append(type(child))
            collect(child)

    collect(module)
    assert inside  # comments in empty lines, whitespace in operators
    assert set(inside) <= walk.TRIVIA


def parsed_sources() -> list[cst.Module]:
    modules = [cst.parse_module(TRICKY)]
    for path in sources():
        try:
            modules.append(cst.parse_module(path.read_text(encoding="utf-8")))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
    return modules


def test_children_are_libcsts_children() -> None:
    for module in parsed_sources():
        for node in walk.descendants(module, skip=frozenset()):
            assert list(map(id, walk.children(node))) == list(map(id, node.children))


def test_shared_children_are_libcsts_children() -> None:
    for module in parsed_sources():
        with walk.shared_children():
            # The walk lists each node's children, a look-ahead may list some first.
            walk.children(module.body[-1])
            walk.walk(module, lambda node: None, lambda node: None)
            for node in walk.descendants(module, skip=frozenset()):
                listed = walk.children(node)
                assert list(map(id, listed)) == list(map(id, node.children))
                assert walk.children(node) is listed  # listed once
        assert walk._shared is None


def test_shared_children_belong_to_their_node() -> None:
    first, second = cst.parse_module("f(a, b)\ng(c)\n").body
    code = [id(n) for n in second.children if type(n) not in walk.TRIVIA]
    under = [id(n) for n in walk.descendants(second)]  # (outside the block: not shared)
    with walk.shared_children():
        assert walk._shared is not None
        # What a node freed and its id taken by another would leave behind.
        stale = [first, walk.children(first), walk.code_children(first)]
        walk._shared[id(second)] = stale
        assert list(map(id, walk.children(second))) == list(map(id, second.children))
        walk._shared[id(second)] = stale
        assert list(map(id, walk.code_children(second))) == code
        walk._shared[id(second)] = stale
        assert [id(n) for n in walk.descendants(second)] == under


def test_listed_owners_are_libcsts_parents_of_what_the_walk_passed_over() -> None:
    module = cst.parse_module(TRICKY)
    parents = {id(child): node for node in walk.descendants(module) for child in node.children}
    trivia = [n for n in walk.descendants(module, skip=frozenset()) if type(n) in walk.TRIVIA]
    assert walk.listed_owners(trivia) == {}  # outside `shared_children`: none listed
    with walk.shared_children():
        walk.walk(module, lambda node: None, lambda node: None, walk.TRIVIA)
        owners = walk.listed_owners(trivia)
    outermost = [node for node in trivia if id(node) in parents]  # a code node's child
    assert outermost and owners == {id(node): parents[id(node)] for node in outermost}


def test_the_engine_keeps_no_child_lists_after_a_file() -> None:
    rules = enabled_rules(Settings(root=ROOT).with_overrides(select=("ALL",)))
    path = ROOT / "examples" / "train_xla_slow.py"
    assert engine.lint_source(path.read_text(), str(path), rules).diagnostics
    assert walk._shared is None


def test_descendants_are_the_walked_nodes_in_order() -> None:
    for module in parsed_sources():
        entered = [node_id for event, node_id in events(module, fast=False) if event == "enter"]
        assert list(map(id, walk.descendants(module, skip=frozenset()))) == entered


def test_descendants_leave_out_skipped_subtrees() -> None:
    module = cst.parse_module(TRICKY)
    kept = list(walk.descendants(module))
    assert not any(type(node) in walk.TRIVIA for node in kept)
    names = [node for node in walk.descendants(module, skip=frozenset()) if type(node) is cst.Name]
    assert [node for node in kept if type(node) is cst.Name] == names


SAMPLE_TEXTS = [
    (ROOT / "examples" / "train_xla_slow.py").read_text(encoding="utf-8"),
    (ROOT / "xlalint" / "walk.py").read_text(encoding="utf-8"),
]


def test_a_root_walked_again_reads_back_its_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the engine lints (`shared_children`), the nodes under a root walked a second
    time are kept and later walks read them back: the same nodes in the same order as a
    walk, each root walked at most twice; another `skip` and a walk outside the block keep
    nothing; an entry left by a node whose id another took is not read."""
    made: list[int] = []
    real = walk._descendants

    def counting(node: cst.CSTNode, skip: frozenset[type[cst.CSTNode]] = walk.TRIVIA) -> object:
        made.append(id(node))
        return real(node, skip)

    monkeypatch.setattr(walk, "_descendants", counting)
    for module in [cst.parse_module(TRICKY), *map(cst.parse_module, SAMPLE_TEXTS)]:
        functions = [n for n in real(module) if type(n) is cst.FunctionDef]
        roots = [module, *functions[:20]]
        expected = {id(root): list(map(id, real(root))) for root in roots}
        with walk.shared_children():
            made.clear()
            for _ in range(4):
                for root in roots:
                    assert list(map(id, walk.descendants(root))) == expected[id(root)]
                    # A walk left early reads no further (and changes nothing kept).
                    next(iter(walk.descendants(root)))
            assert all(made.count(id(root)) <= 2 for root in roots)
            everything = list(map(id, real(module, frozenset())))
            assert list(map(id, walk.descendants(module, frozenset()))) == everything
            assert list(map(id, walk.descendants(module, frozenset()))) == everything
            assert walk._walked is not None and all(
                len(entry) == 2 for entry in walk._walked.values()
            )
        assert walk._walked is None
        made.clear()
        for _ in range(3):
            list(walk.descendants(module))
        assert made.count(id(module)) == 3  # outside the block, nothing is kept
    first, second = cst.parse_module("f(a, b)\ng(c)\n").body
    with walk.shared_children():
        assert walk._walked is not None
        walk._walked[id(second)] = [first, tuple(real(first))]  # a stale entry
        assert list(map(id, walk.descendants(second))) == list(map(id, real(second)))
        assert list(map(id, walk.descendants(second))) == list(map(id, real(second)))


def test_the_field_table_is_what_libcst_source_says() -> None:
    """`walk_fields.py` is current for the installed libcst (regenerate it with `python -m
    xlalint.walk` after upgrading libcst); under another release the walk reads libcst's
    source as before."""
    from libcst._version import __version__

    from xlalint import walk_fields

    table = walk.field_table()
    if __version__ != walk_fields.LIBCST_VERSION:
        assert walk._known_fields() == {}
        pytest.skip(f"walk_fields.py is for libcst {walk_fields.LIBCST_VERSION}")
    assert table == walk_fields.FIELDS
    assert walk._known_fields() is walk_fields.FIELDS
    assert walk.child_fields(cst.Call) == table["libcst._nodes.expression.Call"]


def test_bound_names_are_the_functions_own_bindings() -> None:
    """Every way a body binds a name counts, in its own scope only: a comprehension's and
    a nested function's locals are theirs, except names declared `nonlocal` there."""
    function = cst.parse_module(
        "def f(param, *args, **kw):\n"
        "    a = b = 1\n"
        "    c: int\n"
        "    d += 1\n"
        "    for e, (g, *h) in x:\n"
        "        pass\n"
        "    with open(p) as i:\n"
        "        pass\n"
        "    try:\n"
        "        pass\n"
        "    except E as j:\n"
        "        pass\n"
        "    if (k := 2):\n"
        "        del l\n"
        "    import m.n, o.p as q\n"
        "    from r import s, t as u\n"
        "    [w for v in x if (y := v)]\n"
        "    lambda z: (zz := z)\n"
        "    match x:\n"
        "        case [aa, *bb]:\n"
        "            pass\n"
        "        case {'k': 1, **cc}:\n"
        "            pass\n"
        "        case P() as dd:\n"
        "            pass\n"
        "    def inner():\n"
        "        nonlocal ee\n"
        "        own = 1\n"
        "    class Inner:\n"
        "        attribute = 1\n"
        "    self.x = x[0] = 1\n"
    ).body[0]
    assert isinstance(function, cst.FunctionDef)
    expected = {"a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "l", "m", "q", "s", "u"}
    expected |= {"y", "aa", "bb", "cc", "dd", "inner", "ee", "Inner"}
    assert walk.bound_names(function) == expected
    assert walk.binding_counts(function)["a"] == 1
    assert walk.bound_names(function) is walk.bound_names(function)  # one walk per function


def test_binding_counts_count_each_binding() -> None:
    function = cst.parse_module("def f(x):\n    y = x\n    y += 1\n    z = y\n").body[0]
    assert isinstance(function, cst.FunctionDef)
    assert dict(walk.binding_counts(function)) == {"y": 2, "z": 1}


def _exact_type_tests(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """`(row, class name)` for each libcst class the code tests by identity: `type(x) is
    cst.Name`, `kind is not cst.Call`, `type(x) in (cst.If, cst.While)`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq):
                named = [right]
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.Tuple | ast.Set):
                named = right.elts
            else:
                continue
            for item in named:
                if (
                    isinstance(item, ast.Attribute)
                    and isinstance(item.value, ast.Name)
                    and item.value.id == "cst"
                    and isinstance(getattr(cst, item.attr, None), type)
                ):
                    yield node.lineno, item.attr


def test_classes_tested_by_exact_type_have_no_subclasses() -> None:
    """An exact type test (`type(node) is cst.Name`) says what `isinstance` says only for a
    class libcst never subclasses; a class that gains a subclass in the installed libcst
    (this test runs on the lowest supported one too) must go through `walk.node_types`."""
    tested: dict[str, list[str]] = {}
    for path in sorted((ROOT / "xlalint").rglob("*.py")):
        for row, name in _exact_type_tests(ast.parse(path.read_text(), str(path))):
            tested.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{row}")
    assert {"Name", "Attribute", "Call", "FunctionDef", "Assign"} <= tested.keys()
    subclassed = {
        name: (sorted(t.__name__ for t in getattr(cst, name).__subclasses__()), where[0])
        for name, where in tested.items()
        if getattr(cst, name).__subclasses__()
    }
    assert subclassed == {}


def test_node_types_are_what_isinstance_accepts() -> None:
    """`type(node) in node_types(...)` is `isinstance(node, ...)` on every parsed node."""
    groups = [
        (cst.BaseExpression,),
        (cst.BaseSuite,),
        (cst.BaseStatement, cst.Else, cst.ExceptHandler),
        (cst.FunctionDef, cst.ClassDef, cst.Lambda),
        (cst.BaseCompOp, cst.BaseBinaryOp),
    ]
    for path in sources()[::10]:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        nodes = list(walk.descendants(module, frozenset()))
        for bases in groups:
            exact = walk.node_types(*bases)
            assert [type(n) in exact for n in nodes] == [isinstance(n, bases) for n in nodes]


def test_name_assignments_lists_plain_name_bindings_of_the_block_in_order() -> None:
    module = cst.parse_module(
        "a = 1\n"
        "b, c = 2, 3\n"
        "d = e = 4\n"
        "self.f = 5\n"
        "g += 6\n"
        "h = True; i = j\n"
        "if k:\n"
        "    nested = 7\n"
    )
    found = [
        (name, cst.Module(body=[]).code_for_node(value))
        for name, value in walk.name_assignments(module.body)
    ]
    assert found == [("a", "1"), ("h", "True"), ("i", "j")]
