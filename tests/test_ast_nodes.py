"""`ast_nodes`: CPython trees' children and walks as `ast.iter_child_nodes` and `ast.walk`
give them (round 26)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import xlalint
from xlalint import ast_nodes

SOURCES = sorted(Path(xlalint.__file__).parent.rglob("*.py"))
TESTS = sorted(Path(__file__).parent.glob("*.py"))


def test_children_and_walks_are_asts_own_on_xlalints_sources_and_tests() -> None:
    """Every node of every module of xlalint and its tests: the same children, in the same
    order, as `ast.iter_child_nodes`; every walk the same nodes in `ast.walk`'s order."""
    nodes = 0
    for path in [*SOURCES, *TESTS]:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        walked = list(ast_nodes.walk(tree))
        expected = list(ast.walk(tree))
        assert len(walked) == len(expected), path
        assert all(a is b for a, b in zip(walked, expected, strict=True)), path
        for node in expected:
            nodes += 1
            mine, theirs = ast_nodes.child_nodes(node), list(ast.iter_child_nodes(node))
            assert len(mine) == len(theirs) and all(
                a is b for a, b in zip(mine, theirs, strict=True)
            ), (path, ast.dump(node)[:80])
    assert nodes > 100_000


def test_a_hand_built_node_with_fields_left_unset() -> None:
    """A node built without some of its fields: those are skipped, as `ast.iter_fields`
    skips them."""
    name = ast.Name(id="x", ctx=ast.Load())
    partial = ast.Call(func=name)  # no `args`, no `keywords`
    assert ast_nodes.child_nodes(partial) == [name]
    assert list(ast_nodes.walk(partial)) == list(ast.walk(partial))
    assert ast_nodes.child_nodes(ast.Load()) == []
    joined = ast.BinOp(left=name, op=ast.Add(), right=ast.Constant(1))
    assert ast_nodes.child_nodes(joined) == list(ast.iter_child_nodes(joined))


def test_the_layers_walk_cpythons_trees_through_ast_nodes() -> None:
    """The screen and the layers that read other modules list children and walk trees
    through `ast_nodes` (round 26: ~100k listings in a one-file check)."""
    layers = ["screen.py", *(f"analysis/{name}.py" for name in (
        "config_fields", "module_callers", "module_steps", "param_reads", "step_loops",
    ))]  # fmt: skip
    root = Path(xlalint.__file__).parent
    for layer in layers:
        code = (root / layer).read_text(encoding="utf-8")
        code = re.sub(r'"""[\s\S]*?"""|#[^\n]*', "", code)  # prose may name ast's own
        assert "ast.walk(" not in code and "ast.iter_child_nodes(" not in code, layer
