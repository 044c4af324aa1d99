"""Unit tests of xlalint.edits: offsets, overlap, applying edits, adding imports."""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xlalint.diagnostics import Edit, Location
from xlalint.edits import (
    add_imports,
    apply_edits,
    edit_spans,
    newline_of,
    spans_overlap,
    split_lines,
)

IMPORT = "import torch_xla"


def edit(row: int, col: int, end_row: int, end_col: int, content: str) -> Edit:
    return Edit(Location(row, col), Location(end_row, end_col), content)


def assert_parses(text: str) -> None:
    cst.parse_module(text)
    compile(text, "<fixed>", "exec")


# -- newline_of ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "\n"),
        ("x = 1", "\n"),
        ("x = 1\n", "\n"),
        ("x = 1\r\ny = 2\r\n", "\r\n"),
        ("x = 1\r\ny = 2\n", "\r\n"),  # a tie goes to CRLF
        ("x = 1\r\ny = 2\nz = 3\n", "\n"),  # majority LF
        ("a\r\nb\r\nc\n", "\r\n"),  # majority CRLF
        ("x = 1\ry = 2\r", "\r"),  # old Mac line endings
        ("x = 1\ry = 2\n", "\n"),
        ("s = 'a\\r'\n", "\n"),  # an escaped \r in a string is not a line ending
    ],
)
def test_newline_of(text: str, expected: str) -> None:
    assert newline_of(text) == expected


# -- split_lines ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\r\nb", ["a\r\n", "b"]),
        ("a\rb\r\nc\n", ["a\r", "b\r\n", "c\n"]),
        ("\n\n", ["\n", "\n"]),
        # Characters str.splitlines breaks at, and Python does not.
        (
            "# a\x0cb\x1cc\x1dd\x1ee\x85f\u2028g\u2029h\x0bi\n",
            ["# a\x0cb\x1cc\x1dd\x1ee\x85f\u2028g\u2029h\x0bi\n"],
        ),
    ],
)
def test_split_lines_breaks_where_python_does(text: str, expected: list[str]) -> None:
    assert split_lines(text) == expected
    assert "".join(split_lines(text)) == text


# -- spans_overlap --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 5), (10, 15), False),  # apart
        ((0, 5), (5, 10), False),  # adjacent replacements
        ((0, 6), (5, 10), True),  # one character shared
        ((2, 8), (0, 10), True),  # nested
        ((3, 7), (3, 7), True),  # identical
        ((5, 5), (5, 10), True),  # insertion at the start of a replacement: order unclear
        ((5, 5), (5, 5), True),  # two insertions at one point: order unclear
        ((7, 7), (5, 10), True),  # insertion inside a replacement
        ((10, 10), (5, 10), False),  # insertion right after a replacement
        ((4, 4), (5, 10), False),  # insertion before it
        ((4, 4), (6, 6), False),  # two insertions apart
    ],
)
def test_spans_overlap(a: tuple[int, int], b: tuple[int, int], expected: bool) -> None:
    assert spans_overlap(a, b) is expected
    assert spans_overlap(b, a) is expected  # symmetric


# -- apply_edits ----------------------------------------------------------------------------


def test_apply_single_replacement() -> None:
    text = "x = t.cuda()\ny = 2\n"
    assert apply_edits(text, [edit(1, 5, 1, 13, "t.to(d)")]) == "x = t.to(d)\ny = 2\n"


def test_apply_several_edits_in_any_order() -> None:
    text = "a = f(1)\nb = f(2)\nc = f(3)\n"
    edits = [edit(3, 5, 3, 9, "g(3)"), edit(1, 5, 1, 9, "g(1)"), edit(2, 5, 2, 9, "g(22)")]
    assert apply_edits(text, edits) == "a = g(1)\nb = g(22)\nc = g(3)\n"


def test_apply_adjacent_and_insertion_after_replacement() -> None:
    text = "abcdef\n"
    edits = [edit(1, 4, 1, 4, "X"), edit(1, 1, 1, 4, "123"), edit(1, 4, 1, 7, "456")]
    # The insertion sits at the start of "def": the one that is sorted first (insertion,
    # empty span) comes first.
    assert apply_edits(text, edits[1:]) == "123456\n"
    assert apply_edits(text, [edits[1], edits[0]]) == "123Xdef\n"


def test_apply_no_edits_is_identity() -> None:
    text = "x = 1\r\n\ty = 2"
    assert apply_edits(text, []) == text


def test_apply_edit_at_end_of_file() -> None:
    assert apply_edits("x = 1\n", [edit(2, 1, 2, 1, "y = 2\n")]) == "x = 1\ny = 2\n"
    # No trailing newline: the last line's end.
    assert apply_edits("x = t.cuda()", [edit(1, 5, 1, 13, "t")]) == "x = t"
    assert apply_edits("x = 1", [edit(1, 6, 1, 6, "\ny = 2")]) == "x = 1\ny = 2"


def test_apply_clamps_positions_past_the_end() -> None:
    assert apply_edits("x = 1\n", [edit(9, 1, 9, 1, "# end\n")]) == "x = 1\n# end\n"
    assert apply_edits("ab", [edit(1, 2, 1, 50, "Z")]) == "aZ"


def test_apply_to_empty_file() -> None:
    assert apply_edits("", [edit(1, 1, 1, 1, IMPORT + "\n")]) == IMPORT + "\n"


def test_columns_count_characters_not_bytes() -> None:
    text = "é, ü = 'ß', t.cuda()  # ☃\n"
    start = text.index("t.cuda()") + 1
    fixed = apply_edits(text, [edit(1, start, 1, start + len("t.cuda()"), "t.to(d)")])
    assert fixed == "é, ü = 'ß', t.to(d)  # ☃\n"


def test_tab_is_one_column() -> None:
    text = "if x:\n\ty = t.cuda()\n"
    assert apply_edits(text, [edit(2, 6, 2, 14, "t")]) == "if x:\n\ty = t\n"


def test_rows_follow_python_line_breaks() -> None:
    # A bare \r ends a line (Python and libcst agree); a form feed or \u2028 does not.
    text = "a = 1\rb = 2\r\n# \x0c \u2028\nc = 3\n"
    fixed = apply_edits(text, [edit(2, 5, 2, 6, "20"), edit(4, 5, 4, 6, "30")])
    assert fixed == "a = 1\rb = 20\r\n# \x0c \u2028\nc = 30\n"


def test_inserted_newlines_follow_the_file() -> None:
    text = "x = 1\r\ny = 2\r\n"
    fixed = apply_edits(text, [edit(2, 1, 2, 1, "a = 1\nb = 2\n")])
    assert fixed == "x = 1\r\na = 1\r\nb = 2\r\ny = 2\r\n"
    assert apply_edits("x = 1\n", [edit(2, 1, 2, 1, "a = 1\nb = 2\n")]) == "x = 1\na = 1\nb = 2\n"


def test_edit_spans_are_string_offsets() -> None:
    text = "ab\r\ncd\ref\n"
    spans = edit_spans(text, [edit(1, 1, 1, 3, ""), edit(2, 2, 3, 2, ""), edit(4, 1, 4, 1, "")])
    assert spans == [(0, 2), (5, 8), (len(text), len(text))]
    assert text[5:8] == "d\re"


@st.composite
def text_and_edits(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, str]]]:
    alphabet = st.sampled_from([*"ab é\t#\x0c\u2028", "\n", "\r\n", "\r"])
    text = "".join(draw(st.lists(alphabet, max_size=40)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    spans = []
    for start, end in zip(cuts[::2], cuts[1::2], strict=False):
        # Do not split a \r\n: a location cannot point between its two characters.
        if text[start - 1 : start + 1] == "\r\n" or text[end - 1 : end + 1] == "\r\n":
            continue
        if spans and not (spans[-1][1] < start or (spans[-1][1] == start and start < end)):
            continue
        spans.append((start, end, draw(st.sampled_from(["", "X", "yy"]))))
    return text, spans


def _location(text: str, offset: int) -> Location:
    lines = split_lines(text)
    row, start = 1, 0
    for index, line in enumerate(lines):
        last = index == len(lines) - 1
        if start + len(line) > offset or (last and not line.endswith(("\n", "\r"))):
            break
        start += len(line)
        row += 1
    return Location(row, offset - start + 1)


@settings(deadline=None)
@given(text_and_edits())
def test_apply_keeps_every_character_outside_the_edits(
    case: tuple[str, list[tuple[int, int, str]]],
) -> None:
    text, spans = case
    edits = [Edit(_location(text, s), _location(text, e), c) for s, e, c in spans]
    assert edit_spans(text, edits) == [(s, e) for s, e, _ in spans]
    expected, cursor = [], 0
    for start, end, content in spans:
        expected += [text[cursor:start], content]
        cursor = end
    expected.append(text[cursor:])
    assert apply_edits(text, edits) == "".join(expected)


# -- add_imports ----------------------------------------------------------------------------


def test_no_imports_wanted_returns_the_text() -> None:
    text = "x = (\n"  # does not even parse: nothing is asked, nothing is read
    assert add_imports(text, []) is text


def test_empty_file() -> None:
    assert add_imports("", [IMPORT]) == IMPORT + "\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"""Only a docstring."""\n', f'"""Only a docstring."""\n{IMPORT}\n'),
        ('"""Only a docstring."""', f'"""Only a docstring."""\n{IMPORT}\n'),
        ('"""Multi\nline\ndocstring."""\n', f'"""Multi\nline\ndocstring."""\n{IMPORT}\n'),
        ("'''Doc.'''\r\n", f"'''Doc.'''\r\n{IMPORT}\r\n"),
    ],
)
def test_file_that_is_only_a_docstring(text: str, expected: str) -> None:
    assert add_imports(text, [IMPORT]) == expected


def test_after_the_existing_imports() -> None:
    text = "import os\nimport sys\n\nx = 1\n"
    assert add_imports(text, [IMPORT]) == f"import os\nimport sys\n{IMPORT}\n\nx = 1\n"


def test_after_docstring_and_future_imports() -> None:
    text = '"""Doc."""\n\nfrom __future__ import annotations\n\nx = 1\n'
    expected = f'"""Doc."""\n\nfrom __future__ import annotations\n{IMPORT}\n\nx = 1\n'
    assert add_imports(text, [IMPORT]) == expected


def test_after_docstring_when_there_are_no_imports() -> None:
    text = '"""Doc."""\nx = 1\n'
    assert add_imports(text, [IMPORT]) == f'"""Doc."""\n{IMPORT}\nx = 1\n'


def test_a_string_that_is_not_first_is_not_a_docstring() -> None:
    text = 'x = 1\n"""Not a docstring."""\n'
    assert add_imports(text, [IMPORT]) == f'{IMPORT}\nx = 1\n"""Not a docstring."""\n'


def test_after_header_comments_shebang_and_coding_cookie() -> None:
    text = "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n# Copyright.\n\nx = t.cuda()\n"
    fixed = add_imports(text, [IMPORT])
    assert fixed == (
        "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n# Copyright.\n\n"
        f"{IMPORT}\nx = t.cuda()\n"
    )
    # The shebang stays first and the cookie second, where Python looks for them.
    assert fixed.splitlines()[:2] == text.splitlines()[:2]


def test_shebang_cookie_docstring_and_imports() -> None:
    text = (
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"
        '"""Doc."""\nfrom __future__ import annotations\nimport torch\n\n\ndef f():\n    pass\n'
    )
    fixed = add_imports(text, [IMPORT])
    assert fixed == text.replace("import torch\n", f"import torch\n{IMPORT}\n")


def test_first_statement_code_puts_imports_at_the_top_after_header() -> None:
    assert add_imports("x = 1\nimport os\n", [IMPORT]) == f"{IMPORT}\nx = 1\nimport os\n"
    text = "# header\nx = 1\n"
    assert add_imports(text, [IMPORT]) == f"# header\n{IMPORT}\nx = 1\n"


def test_stops_at_the_first_compound_statement() -> None:
    text = "import os\nif TYPE_CHECKING:\n    import sys\nimport re\n"
    assert add_imports(text, [IMPORT]) == f"import os\n{IMPORT}\nif TYPE_CHECKING:\n" + (
        "    import sys\nimport re\n"
    )


@pytest.mark.parametrize(
    "imports",
    [
        "from os import (\n    path,\n    sep,\n)\n",
        "from os import \\\n    path\n",
        "import os; import sys\n",
        "import os  # comment\n",
    ],
)
def test_after_multi_line_imports(imports: str) -> None:
    fixed = add_imports(imports + "x = 1\n", [IMPORT])
    assert fixed == f"{imports}{IMPORT}\nx = 1\n"


def test_no_trailing_newline_after_the_last_import() -> None:
    assert add_imports("import os", [IMPORT]) == f"import os\n{IMPORT}\n"
    assert add_imports("import os\r\nimport sys", [IMPORT]) == (
        f"import os\r\nimport sys\r\n{IMPORT}\r\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "import torch_xla\nx = 1\n",
        "import torch_xla.core.xla_model\n",  # binds `torch_xla` too
        "import os, torch_xla\n",
        "try:\n    import torch_xla\nexcept ImportError:\n    torch_xla = None\n",
        "x = 1\nimport torch_xla\n",  # late, still bound at module level
    ],
)
def test_not_added_when_the_file_binds_the_name(text: str) -> None:
    assert add_imports(text, [IMPORT]) == text


@pytest.mark.parametrize(
    "text",
    [
        "import torch_xla as xla\n",  # binds `xla`, not `torch_xla`
        "from torch_xla import device\n",
        "def f():\n    import torch_xla\n",  # not module level
        "torch_xla_helper = 1\n",
    ],
)
def test_added_when_the_name_is_not_bound(text: str) -> None:
    fixed = add_imports(text, [IMPORT])
    assert fixed.count(IMPORT + "\n") == text.count(IMPORT + "\n") + 1
    assert_parses(fixed)


def test_alias_bound_to_something_else_is_added() -> None:
    text = "import numpy as xm\n"
    wanted = "import torch_xla.core.xla_model as xm"
    assert add_imports(text, [wanted]) == f"{text}{wanted}\n"
    assert add_imports(f"{wanted}\n", [wanted]) == f"{wanted}\n"


def test_added_once_when_many_fixes_need_it() -> None:
    fixed = add_imports("import os\n", [IMPORT] * 5)
    assert fixed == f"import os\n{IMPORT}\n"


def test_several_imports_in_order() -> None:
    wanted = [IMPORT, "import torch_xla.core.xla_model as xm", IMPORT]
    assert add_imports("x = 1\n", wanted) == (
        f"{IMPORT}\nimport torch_xla.core.xla_model as xm\nx = 1\n"
    )


def test_crlf_file_gets_a_crlf_import_line() -> None:
    text = "import os\r\n\r\nx = 1\r\n"
    fixed = add_imports(text, [IMPORT, "import sys"])
    assert fixed == f"import os\r\n{IMPORT}\r\nimport sys\r\n\r\nx = 1\r\n"
    assert fixed.count("\n") == fixed.count("\r\n")


def test_adding_is_idempotent() -> None:
    text = '"""D."""\nimport os\nx = 1\n'
    once = add_imports(text, [IMPORT])
    assert add_imports(once, [IMPORT]) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # str.splitlines would see two lines in each of these first lines.
        ("# page\x0c\nx = 1\n", f"# page\x0c\n{IMPORT}\nx = 1\n"),
        ('"""Doc\u2028more."""\nx = 1\n', f'"""Doc\u2028more."""\n{IMPORT}\nx = 1\n'),
        ('"""Doc\x0c."""\nimport os\nx = 1\n', f'"""Doc\x0c."""\nimport os\n{IMPORT}\nx = 1\n'),
        ("import os  # \x85\x1c\nx = 1\n", f"import os  # \x85\x1c\n{IMPORT}\nx = 1\n"),
        # Bare \r line endings are lines to Python.
        ("import os\rx = 1\r", f"import os\r{IMPORT}\rx = 1\r"),
    ],
)
def test_insertion_row_counts_python_lines(text: str, expected: str) -> None:
    fixed = add_imports(text, [IMPORT])
    assert fixed == expected
    assert_parses(fixed)
