"""Unit tests of xlalint.edits: offsets, overlap, applying edits, adding imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xlalint.diagnostics import Edit, Location
from xlalint.edits import (
    apply_edits,
    apply_edits_marking,
    edit_spans,
    newline_of,
    spans_overlap,
    split_lines,
    wrap_long_lines,
)
from xlalint.importer import (
    add_imports,
    import_bindings,
    import_conflicts,
    remove_unused_imports,
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
    # torch_xla is not in the standard library: a section of its own, as isort makes it.
    assert add_imports(text, [IMPORT]) == f"import os\nimport sys\n\n{IMPORT}\n\nx = 1\n"
    text = "import os\n\nimport torch\n\nx = 1\n"
    assert add_imports(text, [IMPORT]) == f"import os\n\nimport torch\n{IMPORT}\n\nx = 1\n"


def test_after_docstring_and_future_imports() -> None:
    text = '"""Doc."""\n\nfrom __future__ import annotations\n\nx = 1\n'
    expected = f'"""Doc."""\n\nfrom __future__ import annotations\n\n{IMPORT}\n\nx = 1\n'
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
    assert add_imports(text, [IMPORT]) == f"import os\n\n{IMPORT}\nif TYPE_CHECKING:\n" + (
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
    assert fixed == f"{imports}\n{IMPORT}\nx = 1\n"


def test_no_trailing_newline_after_the_last_import() -> None:
    assert add_imports("import os", [IMPORT]) == f"import os\n\n{IMPORT}\n"
    assert add_imports("import os\r\nimport sys", [IMPORT]) == (
        f"import os\r\nimport sys\r\n\r\n{IMPORT}\r\n"
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
    assert fixed == f"import os\n\n{IMPORT}\n"


def test_several_imports_in_order() -> None:
    wanted = [IMPORT, "import torch_xla.core.xla_model as xm", IMPORT]
    assert add_imports("x = 1\n", wanted) == (
        f"{IMPORT}\nimport torch_xla.core.xla_model as xm\nx = 1\n"
    )


def test_crlf_file_gets_a_crlf_import_line() -> None:
    text = "import os\r\n\r\nx = 1\r\n"
    fixed = add_imports(text, [IMPORT, "import sys"])
    assert fixed == f"import os\r\nimport sys\r\n\r\n{IMPORT}\r\n\r\nx = 1\r\n"
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
        ('"""Doc\x0c."""\nimport os\nx = 1\n', f'"""Doc\x0c."""\nimport os\n\n{IMPORT}\nx = 1\n'),
        ("import os  # \x85\x1c\nx = 1\n", f"import os  # \x85\x1c\n\n{IMPORT}\nx = 1\n"),
        # Bare \r line endings are lines to Python.
        ("import os\rx = 1\r", f"import os\r\r{IMPORT}\rx = 1\r"),
    ],
)
def test_insertion_row_counts_python_lines(text: str, expected: str) -> None:
    fixed = add_imports(text, [IMPORT])
    assert fixed == expected
    assert_parses(fixed)


# -- remove_unused_imports ------------------------------------------------------------------

XM = "import torch_xla.core.xla_model as xm"


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (  # the whole statement goes
            f"import torch_xla\n{XM}\n\nxm.mark_step()\n",
            f"import torch_xla\n{XM}\n\ntorch_xla.sync()\n",
            "import torch_xla\n\ntorch_xla.sync()\n",
        ),
        (  # one alias of several, first or last
            "from torch_xla.core.xla_model import mark_step, optimizer_step\nimport torch_xla\n"
            "mark_step()\noptimizer_step(o)\n",
            "from torch_xla.core.xla_model import mark_step, optimizer_step\nimport torch_xla\n"
            "torch_xla.sync()\noptimizer_step(o)\n",
            "from torch_xla.core.xla_model import optimizer_step\nimport torch_xla\n"
            "torch_xla.sync()\noptimizer_step(o)\n",
        ),
        (
            "import torch_xla, torch_xla.core.xla_model as xm, os\nxm.f(os)\ntorch_xla.g()\n",
            "import torch_xla, torch_xla.core.xla_model as xm, os\nos\ntorch_xla.g()\n",
            "import torch_xla, os\nos\ntorch_xla.g()\n",
        ),
        (
            "import torch_xla\nimport os, torch_xla.core.xla_model as xm\nxm.f(os)\n",
            "import torch_xla\nimport os, torch_xla.core.xla_model as xm\nos\n",
            "import torch_xla\nimport os\nos\n",
        ),
        (  # parenthesized, over several lines: each alias's comment goes with it
            "from m import (\n    a,  # for a\n    b,\n    c,  # for c\n)\na(b, c)\n",
            "from m import (\n    a,  # for a\n    b,\n    c,  # for c\n)\nb\n",
            "from m import (\n    b,\n)\nb\n",
        ),
        (
            "from m import (\n    a,\n    b  # for b\n)\na(b)\n",
            "from m import (\n    a,\n    b  # for b\n)\na\n",
            "from m import (\n    a\n)\na\n",
        ),
        (
            "from m import (a, b)\na(b)\n",
            "from m import (a, b)\na\n",
            "from m import (a)\na\n",
        ),
        (  # an import sharing its line with another statement
            f"import os; {XM}  # tail\nimport torch_xla\nxm.f(os)\n",
            f"import os; {XM}  # tail\nimport torch_xla\nos\n",
            "import os  # tail\nimport torch_xla\nos\n",
        ),
        (
            f"{XM}; import os\nimport torch_xla\nxm.f(os)\n",
            f"{XM}; import os\nimport torch_xla\nos\n",
            "import os\nimport torch_xla\nos\n",
        ),
        (  # the comment and blank lines above a removed statement stay
            f"import torch_xla\n\n# XLA helpers\n{XM}  # the model API\nx = xm.f()\n",
            f"import torch_xla\n\n# XLA helpers\n{XM}  # the model API\nx = 1\n",
            "import torch_xla\n\n# XLA helpers\nx = 1\n",
        ),
        (  # the last statement of the file
            f"import torch_xla\nxm.f()\n# end\n{XM}\n",
            f"import torch_xla\n1\n# end\n{XM}\n",
            "import torch_xla\n1\n# end\n",
        ),
        (  # the line endings of the file
            f"import torch_xla\r\n{XM}\r\nxm.f()\r\n",
            f"import torch_xla\r\n{XM}\r\ntorch_xla.g()\r\n",
            "import torch_xla\r\ntorch_xla.g()\r\n",
        ),
        (  # several at once, of different statements
            f"import torch_xla\n{XM}\nimport torch_xla.debug.metrics as met\nxm.f(met)\n",
            f"import torch_xla\n{XM}\nimport torch_xla.debug.metrics as met\nx = 1\n",
            "import torch_xla\nx = 1\n",
        ),
    ],
)
def test_removes_what_the_fixes_made_unused(before: str, after: str, expected: str) -> None:
    assert remove_unused_imports(before, after) == expected
    assert_parses(expected)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # unused already before: the author's business
        (f"import torch_xla\n{XM}\nx = 1\n", f"import torch_xla\n{XM}\nx = 2\n"),
        # still used
        (f"{XM}\nxm.a()\nxm.b()\n", f"{XM}\nxm.a()\nx = 1\n"),
        # never: `__future__`, under `try:`, under `if`, in a function
        (
            "from __future__ import annotations\nimport torch_xla\nx: int = 1\n",
            "from __future__ import annotations\nimport torch_xla\ny = 1\n",
        ),
        (
            f"import torch_xla\ntry:\n    {XM}\nexcept ImportError:\n    pass\nxm.f()\n",
            f"import torch_xla\ntry:\n    {XM}\nexcept ImportError:\n    pass\nx = 1\n",
        ),
        (
            f"import torch_xla\nif TYPE_CHECKING:\n    {XM}\nxm.f()\n",
            f"import torch_xla\nif TYPE_CHECKING:\n    {XM}\nx = 1\n",
        ),
        (
            f"import torch_xla\ndef f():\n    {XM}\n    xm.f()\n",
            f"import torch_xla\ndef f():\n    {XM}\n    x = 1\n",
        ),
        # exported
        (
            f"import torch_xla\n{XM}\n__all__ = ['xm']\nxm.f()\n",
            f"import torch_xla\n{XM}\n__all__ = ['xm']\n1\n",
        ),
        # the last import of torch_xla: it registers the XLA device
        (f"{XM}\nimport torch\nxm.f(torch)\n", f"{XM}\nimport torch\nd = torch.device('xla')\n"),
        # nothing changed
        (f"{XM}\nx = 1\n", f"{XM}\nx = 1\n"),
    ],
)
def test_keeps_imports_it_must_not_remove(before: str, after: str) -> None:
    assert remove_unused_imports(before, after) == after


def test_the_last_torch_xla_import_is_kept_and_the_others_go() -> None:
    before = f"{XM}\nimport torch_xla.debug.metrics as met\nxm.f(met)\n"
    after = f"{XM}\nimport torch_xla.debug.metrics as met\nx = 1\n"
    assert remove_unused_imports(before, after) == f"{XM}\nx = 1\n"


def test_nothing_is_removed_from_an_init_module() -> None:
    before = f"import torch_xla\n{XM}\nxm.f()\n"
    after = f"import torch_xla\n{XM}\n1\n"
    assert remove_unused_imports(before, after, "pkg/__init__.py") == after
    assert remove_unused_imports(before, after, "pkg/train.py") == "import torch_xla\n1\n"


def test_the_closing_parenthesis_keeps_the_new_last_alias_comment() -> None:
    before = "from m import (\n    a,  # for a\n    b,\n    c  # for c\n)\na(b, c)\n"
    after = "from m import (\n    a,  # for a\n    b,\n    c  # for c\n)\na\n"
    assert remove_unused_imports(before, after) == "from m import (\n    a  # for a\n)\na\n"


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (  # bare CR line endings, which libcst's rendering would not give back
            f"import torch_xla\r{XM}\rxm.f()\r",
            f"import torch_xla\r{XM}\rtorch_xla.g()\r",
            "import torch_xla\rtorch_xla.g()\r",
        ),
        (
            "import torch_xla\rfrom m import (\r    a,\r    b,\r)\ra(b)\r",
            "import torch_xla\rfrom m import (\r    a,\r    b,\r)\rb\r",
            "import torch_xla\rfrom m import (\r    b,\r)\rb\r",
        ),
        (  # the last line, without a line ending: the file still ends without one
            f"import torch_xla\nxm.f()\n{XM}",
            f"import torch_xla\n1\n{XM}",
            "import torch_xla\n1",
        ),
        (f"{XM}\nimport torch_xla\nxm.f()", f"{XM}\nimport torch_xla\n1", "import torch_xla\n1"),
        (  # two removed statements end the file, the last without a line ending
            f"import torch_xla\nxm.f()\n{XM}\n{XM}  # again",
            f"import torch_xla\n1\n{XM}\n{XM}  # again",
            "import torch_xla\n1",
        ),
        (  # ... with a comment between them, which stays and now ends the file
            f"import torch_xla\nxm.f()\n{XM}\n# the model API\n{XM}",
            f"import torch_xla\n1\n{XM}\n# the model API\n{XM}",
            "import torch_xla\n1\n# the model API",
        ),
    ],
)
def test_line_endings_and_the_end_of_the_file(before: str, after: str, expected: str) -> None:
    assert remove_unused_imports(before, after) == expected


def test_bindings_to_keep_are_not_removed() -> None:
    before = f"import torch_xla\n{XM}\nxm.f()\n"
    after = f"import torch_xla\n{XM}\n1\n"
    keep = {("xm", "torch_xla.core.xla_model")}
    assert remove_unused_imports(before, after, "t.py", keep) == after
    assert (
        remove_unused_imports(before, after, "t.py", {("xm", "other")}) == "import torch_xla\n1\n"
    )


def test_import_conflicts() -> None:
    bound = import_bindings(
        "import numpy as xm\nimport torch_xla\ntry:\n    import a as b\nexcept:\n    pass\n"
    )
    assert bound == {"xm": "numpy", "torch_xla": "torch_xla", "b": "a"}
    assert import_conflicts(bound, [XM, "import torch_xla", "import os"]) == ["xm"]
    assert import_conflicts(bound, ["from c import d as b"]) == ["b"]
    assert import_conflicts({}, [XM]) == []


# -- sorted placement: ruff's isort (I001) finds nothing to sort after a fix ------------------

SORTED_FILES = [
    "import lightning.pytorch as pl\nimport torch\nfrom torch.utils.data import DataLoader\n",
    "import os\nimport sys\n\nimport numpy as np\nimport torch\n\nfrom . import local\n",
    "import os\n\nfrom mypkg import thing\n",
    '"""Doc."""\n\nfrom __future__ import annotations\n\nimport math\n',
    "import torch\nimport torch_xla.core.xla_model as xm\nimport zeta\n",
    "import abc\n\nimport torch_xla.utils\nfrom torch_xla import runtime\n",
    "import argparse\n\nimport torch.nn as nn\nimport yaml\nfrom torch import optim\n",
]
WANTED = [
    "import torch",
    "import torch_xla",
    "import torch_xla.core.xla_model as xm",
    "import torch_xla.distributed.parallel_loader as xla_pl",
    "from torch_xla import sync",
]


def _ruff_isort(folder: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = folder / "t.py"
    path.write_text(text + "\n\nx = 1\n")
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", str(path)]
    return subprocess.run(command, capture_output=True, text=True, cwd=folder, check=False)


@pytest.mark.parametrize("text", SORTED_FILES)
def test_added_imports_keep_a_sorted_file_sorted(text: str, tmp_path: Path) -> None:
    assert _ruff_isort(tmp_path, text.rstrip("\n")).returncode == 0, "the input is not sorted"
    for count in range(1, len(WANTED) + 1):
        fixed = add_imports(text, WANTED[:count])
        result = _ruff_isort(tmp_path, fixed.rstrip("\n"))
        assert result.returncode == 0, (fixed, result.stdout)


# -- wrapping rewritten lines that grew too long -------------------------------------------------

LOOP = (
    "def train():\n"
    "    for x, y in pl.MpDeviceLoader(DataLoader(dataset, batch_size=8), torch_xla.device()):\n"
    "        pass\n"
)


def test_a_long_rewritten_line_is_wrapped_like_ruff_format(tmp_path: Path) -> None:
    wrapped = wrap_long_lines(LOOP, [2], 88)
    assert wrapped == (
        "def train():\n"
        "    for x, y in pl.MpDeviceLoader(\n"
        "        DataLoader(dataset, batch_size=8), torch_xla.device()\n"
        "    ):\n"
        "        pass\n"
    )
    path = tmp_path / "t.py"
    path.write_text(wrapped)
    command = [sys.executable, "-m", "ruff", "format", "--isolated", "--check", str(path)]
    assert subprocess.run(command, capture_output=True, check=False).returncode == 0


def test_arguments_that_do_not_fit_on_one_line_get_one_each() -> None:
    assert wrap_long_lines(LOOP, [2], 50) == (
        "def train():\n"
        "    for x, y in pl.MpDeviceLoader(\n"
        "        DataLoader(dataset, batch_size=8),\n"
        "        torch_xla.device(),\n"
        "    ):\n"
        "        pass\n"
    )


def test_only_the_rewritten_rows_and_only_when_too_long() -> None:
    assert wrap_long_lines(LOOP, [1, 3], 40) == LOOP  # row 2 was not rewritten
    assert wrap_long_lines(LOOP, [2], 100) == LOOP
    crlf = LOOP.replace("\n", "\r\n")
    assert wrap_long_lines(crlf, [2], 88) == wrap_long_lines(LOOP, [2], 88).replace("\n", "\r\n")


def test_apply_edits_marking_names_the_rows_written() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    edits = [Edit(Location(2, 5), Location(2, 6), "f(\n  2\n)")]
    result, rows = apply_edits_marking(text, edits)
    assert result == "a = 1\nb = f(\n  2\n)\nc = 3\n"
    assert rows == {2, 3, 4}


def test_a_line_that_would_still_not_fit_is_left_alone() -> None:
    deep = " " * 90 + "total += model(x, y).detach()\n"
    assert wrap_long_lines(deep, [1], 88) == deep
    one_long = "x = f(" + "a" * 90 + ")\n"
    assert wrap_long_lines(one_long, [1], 88) == one_long
