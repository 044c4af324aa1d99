"""`Positions` must give every node the range libcst's `PositionProvider` gives it."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from xlalint import engine
from xlalint.api import enabled_rules
from xlalint.config import Settings
from xlalint.positions import Focus, Positions, focused_positions
from xlalint.suppression import directive_rows, parse_suppressions
from xlalint.walk import TRIVIA, walk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    path for folder in ("fixtures", "examples") for path in (ROOT / folder).rglob("*.py")
)

EDGE_CASES = {
    "no final newline": "import torch\nx = torch.ones(3)\nif x.sum():\n    y = x.item()",
    "comment last, no final newline": "x = 1\n\n# done",
    "crlf": "def f(x):\r\n    return (x +\r\n            1)\r\n",
    "bare cr": "x = 1\ry = (2,\r     3)\r",
    "bare cr, no final newline": "x = 1\ry = 2",
    "mixed endings": "x = 1\r\ny = 2\nz = 3\r",
    "decorated, with comments": "# head\n\n@dec  # why\n# lead\ndef f():\n    pass\n",
    "non-ascii": "s = 'größe'  # ü\nt = s.upper()\n",
    "tabs and continuation": "if a:\n\tx = [1,\n\t\t2] \\\n\t\t+ [3]\n",
    "empty": "",
    "form feed": "x = 1\n\x0c\n\x0cdef f():\n    return 2  # c\n\x0c# end\n",
    "nested syntactic ranges": (
        "@a\nclass C:\n    @b\n    # c\n    def f(self, x=lambda y: y):\n"
        "        return [z for z in x if z]\n"
    ),
}


def assert_same_ranges(text: str) -> None:
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module, text)
    mismatches = {
        type(node).__name__: (code_range, positions[node])
        for node, code_range in expected.items()
        if positions[node] != code_range
    }
    assert not mismatches


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_node_of_the_fixtures_and_examples(path: Path) -> None:
    assert_same_ranges(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text", EDGE_CASES.values(), ids=EDGE_CASES.keys())
def test_line_endings_and_file_ends(text: str) -> None:
    assert_same_ranges(text)


def test_nodes_of_lists_every_node_once_children_first() -> None:
    text = EDGE_CASES["nested syntactic ranges"]
    module = cst.parse_module(text)
    every = frozenset(
        type(node)
        for node in MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    )
    listed = list(Positions(module, text).nodes_of(every))
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(listed) == len({id(node) for node in listed}) == len(expected)
    assert listed[-1] is module
    assert listed.index(module.body[0].body) < listed.index(module.body[0])


def walked_parents(module: cst.Module) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode | None]]:
    """The nodes the engine's walk enters, in order, and each one's parent (by id), as
    `FileContext.parent_of` records them."""
    order: list[cst.CSTNode] = []
    parent_of: dict[int, cst.CSTNode | None] = {}
    stack: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode) -> None:
        parent_of[id(node)] = stack[-1] if stack else None
        order.append(node)
        stack.append(node)

    walk(module, enter, lambda node: stack.pop(), TRIVIA)
    return order, parent_of


def assert_focus_exact(text: str, pick: int) -> Positions:
    """A codegen focused on every `pick`-th walked node (and the rows mentioning noqa)
    gives each node it wrote libcst's range, writes every node asked about, and reads the
    same noqa directives and the same noqa row for each of them as the whole codegen."""
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    order, parent_of = walked_parents(module)
    asked = order[pick // 2 :: pick]
    focus = Focus.of(asked, parent_of, directive_rows(text), ast.parse(text))
    positions = Positions(module, text, focus)
    wrong = {
        type(node).__name__
        for node, start, end in positions._spans.values()
        if start is not None and end is not None and positions[node] != expected[node]
    }
    assert not wrong
    assert all(positions[node] == expected[node] for node in asked)
    whole = parse_suppressions(text, Positions(module, text))
    partial = parse_suppressions(text, positions)
    assert (partial.file_codes, partial.line_codes) == (whole.file_codes, whole.line_codes)
    for node in asked:
        row = expected[node].start.line
        assert partial.noqa_row(row) == whole.noqa_row(row)
    return positions


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_a_focused_codegen_of_the_fixtures_and_examples(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for pick in (9, 97):
        positions = assert_focus_exact(text, pick)
        assert positions.partial  # CPython's rows lined up with libcst's statements
        assert positions._whole is None  # every node asked about was written


def test_a_focused_codegen_passes_over_most_of_a_long_file() -> None:
    text = (ROOT / "examples" / "train_cuda.py").read_text(encoding="utf-8")
    positions = assert_focus_exact(text, 10_000)
    every = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(positions._spans) < len(every) / 3


@pytest.mark.parametrize(
    "text",
    [text for name, text in EDGE_CASES.items() if "cr" not in name.split()],
    ids=[name for name in EDGE_CASES if "cr" not in name.split()],
)
def test_a_focused_codegen_of_line_endings_and_file_ends(text: str) -> None:
    for pick in (1, 2, 5):
        assert_focus_exact(text, pick)


def test_a_lone_carriage_return_makes_the_whole_codegen_run() -> None:
    text = EDGE_CASES["bare cr"]
    module = cst.parse_module(text)
    order, parent_of = walked_parents(module)
    positions = Positions(module, text, Focus.of(order[-1:], parent_of, (), ast.parse(text)))
    assert not positions.partial
    assert_same_ranges(text)


def single_row_nodes(expected: Mapping[cst.CSTNode, CodeRange], rows: set[int]) -> list:
    return [n for n, r in expected.items() if r.start.line == r.end.line and r.start.line in rows]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_fixers_focus_on_rows_and_statements(path: Path) -> None:
    """What the fixer asks of a text it made (the calls on the lines it wraps, the imports
    it removes) the focused codegen gives as the whole one, writing nothing else whole."""
    text = path.read_text(encoding="utf-8")
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    rows = set(range(3, text.count("\n") + 1, 7))
    on_rows = focused_positions(module, text, rows=rows)
    assert on_rows.partial
    calls = frozenset({cst.Call})
    written = {id(n) for n in on_rows.nodes_of(calls)}
    assert all(id(n) in written for n in single_row_nodes(expected, rows) if type(n) is cst.Call)
    assert all(on_rows[n] == expected[n] for n in single_row_nodes(expected, rows))
    assert on_rows._whole is None
    statements = module.body[::3]
    of_statements = focused_positions(module, text, statements=statements)
    assert of_statements.partial
    assert all(of_statements[s] == expected[s] for s in statements)
    assert of_statements._whole is None


def test_the_fixers_focus_without_cpythons_tree_is_the_whole_codegen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # libcst's grammar may be newer than CPython's (`type X = int` before 3.12).
    monkeypatch.setattr(engine, "cpython_parse", lambda text, filename: ("no", None))
    text = EDGE_CASES["decorated, with comments"]
    module = cst.parse_module(text)
    positions = focused_positions(module, text, rows={3}, statements=module.body)
    assert not positions.partial
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert all(positions[node] == code_range for node, code_range in expected.items())


def test_a_fix_replacing_whitespace_is_placed_without_the_whole_codegen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # train_cuda.py's barrier fixes write a line after a statement: they replace the
    # whitespace ending it, which the engine's walk passes over.
    rules = enabled_rules(Settings(root=ROOT))
    text = (ROOT / "examples" / "train_cuda.py").read_text(encoding="utf-8")
    expected = engine.lint_source(text, "train_cuda.py", rules)
    assert any(d.fix is not None for d in expected.diagnostics)

    def whole(self: Positions) -> Positions:
        raise AssertionError("the whole codegen ran")

    monkeypatch.setattr(Positions, "_complete", whole)
    assert engine.lint_source(text, "train_cuda.py", rules) == expected
