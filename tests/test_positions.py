"""`Positions` must give every node the range libcst's `PositionProvider` gives it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from xlalint.positions import Positions

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
