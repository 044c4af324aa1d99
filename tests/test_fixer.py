"""The fix engine: xlalint.fixer.fix_text and xlalint.api.fix_paths.

Rules with fixes are test-only (tests/fix_rules.py) and passed explicitly. Every expected
output is spelled out in full, so a changed byte anywhere fails the test.
"""

from __future__ import annotations

import concurrent.futures
import os
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import libcst as cst
import pytest
from fix_rules import (
    BrokenFix,
    BrokenFixWithImport,
    CudaToString,
    CudaToXla,
    Enabler,
    Grow,
    MarkStepAfterStep,
    MarkStepToSync,
    NoFix,
    NonLatin,
    Ping,
    Pong,
    UnsafeNonzero,
    WrapCall,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from xlalint import api, fixer, writer
from xlalint.config import Settings
from xlalint.fixer import FixOutcome, fix_text
from xlalint.importer import ParsedTexts
from xlalint.rule import Rule
from xlalint.sources import decode

IMPORT = "import torch_xla\n"
XM = "import torch_xla.core.xla_model as xm\n"


def fix(
    source: str | bytes, *rules: type[Rule], unsafe: bool = False, filename: str = "t.py"
) -> FixOutcome:
    raw = source.encode("utf-8") if isinstance(source, str) else source
    return fix_text(decode(raw), filename, rules, unsafe=unsafe)


def assert_parses(text: str) -> None:
    cst.parse_module(text)
    compile(text, "<fixed>", "exec")


def assert_stable(outcome: FixOutcome, rules: Sequence[type[Rule]], unsafe: bool) -> None:
    """The output parses, and fixing it again changes nothing."""
    assert outcome.error is None
    assert_parses(outcome.text)
    again = fix_text(decode(outcome.encoded()), outcome.filename, rules, unsafe=unsafe)
    assert again.text == outcome.text
    assert not again.applied
    assert again.encoded() == outcome.encoded()
    assert [(d.code, d.start) for d in again.remaining] == [
        (d.code, d.start) for d in outcome.remaining
    ]


# Each case: id, source, rules, unsafe, expected text, expected applied counts.
CASES = [
    (
        "cuda",
        "import torch\n\nx = torch.ones(3).cuda()\n",
        [CudaToXla],
        False,
        f"import torch\n{IMPORT}\nx = torch.ones(3).to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "five-fixes-one-import",
        "import torch\n\n" + "".join(f"a{i} = t{i}.cuda()\n" for i in range(5)),
        [CudaToXla],
        False,
        f"import torch\n{IMPORT}\n"
        + "".join(f"a{i} = t{i}.to(torch_xla.device())\n" for i in range(5)),
        {"XLA901": 5},
    ),
    (
        "already-imported",
        "import torch_xla\nx = t.cuda()\n",
        [CudaToXla],
        False,
        "import torch_xla\nx = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "already-imported-submodule",
        "import torch_xla.core.xla_model as xm\nimport torch_xla.runtime\nx = t.cuda()\n",
        [CudaToXla],
        False,
        "import torch_xla.core.xla_model as xm\nimport torch_xla.runtime\n"
        "x = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "docstring-and-future",
        '"""Train."""\n\nfrom __future__ import annotations\n\nx = t.cuda()\n',
        [CudaToXla],
        False,
        f'"""Train."""\n\nfrom __future__ import annotations\n\n{IMPORT}\n'
        "x = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "header-comments",
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# (c) me\n\nx = t.cuda()\n",
        [CudaToXla],
        False,
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# (c) me\n\n"
        f"{IMPORT}x = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "nested-overlap-same-rule",
        "y = x.cuda().cuda()\n",
        [CudaToXla],
        False,
        f"{IMPORT}y = x.to(torch_xla.device()).to(torch_xla.device())\n",
        {"XLA901": 2},
    ),
    (
        "two-rules-same-span",
        "x = t.cuda()\n",
        [CudaToString, CudaToXla],
        False,
        f"{IMPORT}x = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "outer-and-inner-rules",
        "legacy_move(x.cuda(), y)\n",
        [WrapCall, CudaToXla],
        False,
        f"{IMPORT}xla_move(x.to(torch_xla.device()), y)\n",
        {"XLA906": 1, "XLA901": 1},
    ),
    (
        "fix-enables-another",
        "y = old_device(x)\n",
        [Enabler, CudaToXla],
        False,
        f"{IMPORT}y = x.to(torch_xla.device())\n",
        {"XLA908": 1, "XLA901": 1},
    ),
    (
        "chain-of-enablers",
        "y = old_device(old_device(x))\n",
        [Enabler, CudaToXla],
        False,
        f"{IMPORT}y = x.to(torch_xla.device()).to(torch_xla.device())\n",
        {"XLA908": 2, "XLA901": 2},
    ),
    (
        "insert-statement",
        "import torch\nfor batch in loader:\n    loss = model(batch)\n    optimizer.step()\n",
        [MarkStepAfterStep],
        False,
        f"import torch\n{XM}for batch in loader:\n    loss = model(batch)\n"
        "    optimizer.step()\n    xm.mark_step()\n",
        {"XLA903": 1},
    ),
    (
        "insert-statement-nested-tabs",
        "def train():\n\tfor b in loader:\n\t\toptimizer.step()  # go\n\treturn 1\n",
        [MarkStepAfterStep],
        False,
        f"{XM}def train():\n\tfor b in loader:\n\t\toptimizer.step()\n\t\txm.mark_step()  # go\n"
        "\treturn 1\n",
        {"XLA903": 1},
    ),
    (
        "two-imports",
        '"""Doc."""\nimport os\nfor b in loader:\n    b = b.cuda()\n    optimizer.step()\n',
        [CudaToXla, MarkStepAfterStep],
        False,
        f'"""Doc."""\nimport os\n\n{IMPORT}{XM}for b in loader:\n'
        "    b = b.to(torch_xla.device())\n    optimizer.step()\n    xm.mark_step()\n",
        {"XLA901": 1, "XLA903": 1},
    ),
    (
        "unsafe-not-applied",
        "idx = mask.nonzero()\nx = t.cuda()\n",
        [UnsafeNonzero, CudaToXla],
        False,
        f"{IMPORT}idx = mask.nonzero()\nx = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "unsafe-applied",
        "idx = mask.nonzero()\nx = t.cuda()\n",
        [UnsafeNonzero, CudaToXla],
        True,
        f"{IMPORT}idx = mask.nonzero_static(size=mask.numel())\nx = t.to(torch_xla.device())\n",
        {"XLA901": 1, "XLA902": 1},
    ),
    (
        "broken-dropped-others-applied",
        "import torch\nx.broken()\ny = t.cuda()\n",
        [BrokenFix, CudaToXla],
        False,
        f"import torch\n{IMPORT}x.broken()\ny = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "broken-with-import-dropped-others-applied",
        "import torch\nx.broken_import()\ny = t.cuda()\n",
        [BrokenFixWithImport, CudaToXla],
        False,
        f"import torch\n{IMPORT}x.broken_import()\ny = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "broken-alone",
        "x.broken()\n",
        [BrokenFix],
        False,
        "x.broken()\n",
        {},
    ),
    (
        "broken-does-not-block-what-it-overlaps",
        "[t.cuda()][0].broken()\n",
        [BrokenFix, CudaToXla],
        False,
        f"{IMPORT}[t.to(torch_xla.device())][0].broken()\n",
        {"XLA901": 1},
    ),
    (
        "cycle-goes-back-to-its-start",
        "ping()\n",
        [Ping, Pong],
        False,
        "ping()\n",
        {},
    ),
    (
        "cycle-after-progress",
        "y = old_device(x)\npong()\n",
        [Enabler, CudaToXla, Ping, Pong],
        False,
        f"{IMPORT}y = x.to(torch_xla.device())\npong()\n",
        None,  # the ping/pong fixes that cancel out inside the rounds are counted too
    ),
    (
        "finding-without-fix",
        "sync_now()\nx = t.cuda()\n",
        [NoFix, CudaToXla],
        False,
        f"{IMPORT}sync_now()\nx = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "nothing-to-fix",
        "import torch\n\nx = torch.ones(3)  # .cuda( in a comment\n",
        [CudaToXla, MarkStepAfterStep],
        False,
        "import torch\n\nx = torch.ones(3)  # .cuda( in a comment\n",
        {},
    ),
    (
        "non-ascii-columns",
        "s = 'ünïcødé ☃'; x = t.cuda()  # ñ\n",
        [CudaToXla],
        False,
        f"{IMPORT}s = 'ünïcødé ☃'; x = t.to(torch_xla.device())  # ñ\n",
        {"XLA901": 1},
    ),
    (
        "form-feed-and-line-separator",
        '"""Doc\u2028more."""\n# page\x0c\nx = t.cuda()\n',
        [CudaToXla],
        False,
        f'"""Doc\u2028more."""\n{IMPORT}# page\x0c\nx = t.to(torch_xla.device())\n',
        {"XLA901": 1},
    ),
    (
        "import-made-unused-is-removed",
        f"import torch\n{XM}for b in loader:\n    xm.mark_step()\n",
        [MarkStepToSync],
        False,
        f"import torch\n{IMPORT}for b in loader:\n    torch_xla.sync()\n",
        {"XLA914": 1},
    ),
    (
        "import-still-used-is-kept",
        f"{XM}for b in loader:\n    xm.optimizer_step(opt)\n    xm.mark_step()\n",
        [MarkStepToSync],
        False,
        f"{IMPORT}{XM}for b in loader:\n    xm.optimizer_step(opt)\n    torch_xla.sync()\n",
        {"XLA914": 1},
    ),
    (
        "existing-torch-xla-import-is-reused",
        f"import torch_xla\n{XM}\nxm.mark_step()\nxm.mark_step()\n",
        [MarkStepToSync],
        False,
        "import torch_xla\n\ntorch_xla.sync()\ntorch_xla.sync()\n",
        {"XLA914": 2},
    ),
    (
        "existing-sync-import-is-reused",
        "from torch_xla import sync\nfrom torch_xla.core.xla_model import mark_step\nmark_step()\n",
        [MarkStepToSync],
        False,
        "from torch_xla import sync\nsync()\n",
        {"XLA914": 1},
    ),
    (
        "one-alias-of-a-from-import-is-removed",
        "import torch_xla\nfrom torch_xla.core.xla_model import (\n    mark_step,  # old\n"
        "    optimizer_step,\n)\n\nmark_step()\noptimizer_step(opt)\n",
        [MarkStepToSync],
        False,
        "import torch_xla\nfrom torch_xla.core.xla_model import (\n    optimizer_step,\n)\n\n"
        "torch_xla.sync()\noptimizer_step(opt)\n",
        {"XLA914": 1},
    ),
    (
        "imports-unused-before-are-kept",
        f"import os\nimport torch_xla.debug.metrics as met\n{XM}\nxm.mark_step()\n",
        [MarkStepToSync],
        False,
        f"import os\n{IMPORT}import torch_xla.debug.metrics as met\n\ntorch_xla.sync()\n",
        {"XLA914": 1},
    ),
    (
        "another-alias-for-xla-model",
        "import torch_xla.core.xla_model as xla\n\nfor b in loader:\n    xla.mark_step()\n",
        [MarkStepToSync],
        False,
        f"{IMPORT}\nfor b in loader:\n    torch_xla.sync()\n",
        {"XLA914": 1},
    ),
    (
        "import-a-fix-added-and-a-later-fix-made-unused-is-removed",
        "for b in loader:\n    optimizer.step()\n",
        [MarkStepAfterStep, MarkStepToSync],
        False,
        f"{IMPORT}for b in loader:\n    optimizer.step()\n    torch_xla.sync()\n",
        {"XLA903": 1, "XLA914": 1},
    ),
    (
        "import-unused-before-fixing-is-kept-even-if-a-fix-used-it-meanwhile",
        f"{XM}for b in loader:\n    optimizer.step()\n",
        [MarkStepAfterStep, MarkStepToSync],
        False,
        f"{IMPORT}{XM}for b in loader:\n    optimizer.step()\n    torch_xla.sync()\n",
        {"XLA903": 1, "XLA914": 1},
    ),
    (
        "fix-whose-import-would-rebind-a-name-is-not-applied",
        "import numpy as xm\nfor b in loader:\n    optimizer.step()\nx = t.cuda()\n",
        [MarkStepAfterStep, CudaToXla],
        False,
        f"import numpy as xm\n{IMPORT}for b in loader:\n    optimizer.step()\n"
        "x = t.to(torch_xla.device())\n",
        {"XLA901": 1},
    ),
    (
        "empty-file",
        "",
        [CudaToXla],
        False,
        "",
        {},
    ),
]


@pytest.mark.parametrize(
    ("source", "rules", "unsafe", "expected", "applied"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_fix_text(
    source: str,
    rules: list[type[Rule]],
    unsafe: bool,
    expected: str,
    applied: dict[str, int] | None,
) -> None:
    outcome = fix(source, *rules, unsafe=unsafe)
    assert outcome.text == expected
    if applied is not None:
        assert outcome.applied == Counter(applied)
    assert outcome.changed is (expected != source)
    assert_stable(outcome, rules, unsafe)


def test_passing_the_rules_in_another_order_changes_nothing() -> None:
    for _, source, rules, unsafe, expected, _ in CASES:
        assert fix(source, *reversed(rules), unsafe=unsafe).text == expected


def test_remaining_findings_are_those_of_the_fixed_text() -> None:
    outcome = fix(
        "idx = mask.nonzero()\nx = t.cuda()\nsync_now()\n", UnsafeNonzero, CudaToXla, NoFix
    )
    assert [(d.code, d.start.row, d.start.column) for d in outcome.remaining] == [
        ("XLA902", 2, 7),  # unsafe, not asked for: row 2 now, below the import
        ("XLA912", 4, 1),
    ]
    assert outcome.remaining[0].fix is not None


def test_non_overlapping_fixes_are_applied_in_one_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixer, "MAX_ROUNDS", 1)
    outcome = fix("a = x.cuda()\nb = y.cuda().cuda()\nc = z.cuda()\n", CudaToXla)
    # One round: the three separate calls and the outer call of the nested pair; the inner
    # call overlaps the outer one and waits for a next round that is not allowed.
    assert outcome.text == (
        f"{IMPORT}a = x.to(torch_xla.device())\nb = y.cuda().to(torch_xla.device())\n"
        "c = z.to(torch_xla.device())\n"
    )
    assert outcome.applied == Counter({"XLA901": 3})
    assert [(d.code, d.start.row) for d in outcome.remaining] == [("XLA901", 3)]


def test_overlapping_fixes_never_both_apply_in_one_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fixer, "MAX_ROUNDS", 1)
    outcome = fix("x = t.cuda()\n", CudaToXla, CudaToString)
    assert outcome.text == f"{IMPORT}x = t.to(torch_xla.device())\n"
    assert outcome.applied == Counter({"XLA901": 1})
    outcome = fix("legacy_move(x.cuda())\n", CudaToXla, WrapCall)
    assert outcome.text == "xla_move(x.cuda())\n"
    assert [d.code for d in outcome.remaining] == ["XLA901"]


def test_runaway_fixes_stop_after_a_bounded_number_of_rounds() -> None:
    outcome = fix("grow()\n", Grow)
    assert outcome.applied == Counter({"XLA911": fixer.MAX_ROUNDS})
    assert outcome.text == "[" * fixer.MAX_ROUNDS + "grow()" + "]" * fixer.MAX_ROUNDS + "\n"
    assert_parses(outcome.text)
    assert [d.code for d in outcome.remaining] == ["XLA911"]


def test_cycle_reports_the_finding_and_stops() -> None:
    outcome = fix("ping()\npong()\n", Ping, Pong)
    assert outcome.text == "ping()\npong()\n"
    assert not outcome.applied
    assert [d.code for d in outcome.remaining] == ["XLA909", "XLA910"]
    assert_stable(outcome, [Ping, Pong], False)


# -- the parse guard ------------------------------------------------------------------------


def test_dropped_fix_is_reported_once_at_its_final_position() -> None:
    outcome = fix("import torch\nx.broken()\ny = t.cuda()\n", BrokenFix, CudaToXla)
    # The import moved the finding to row 3: the warning agrees with what remains.
    assert outcome.dropped == ["XLA904 at 3:1"]
    assert [(d.code, d.start.row, d.start.column) for d in outcome.remaining] == [("XLA904", 3, 1)]


def test_several_dropped_fixes() -> None:
    outcome = fix("a.broken()\nb.broken_import()\nc.broken()\n", BrokenFix, BrokenFixWithImport)
    assert outcome.text == "a.broken()\nb.broken_import()\nc.broken()\n"
    assert outcome.dropped == ["XLA904 at 1:1", "XLA905 at 2:1", "XLA904 at 3:1"]
    assert not outcome.changed


def test_no_dropped_fix_when_all_parse() -> None:
    assert fix("x = t.cuda()\n", CudaToXla).dropped == []


def test_fix_that_would_not_parse_never_reaches_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    real = fixer._parses

    def spy(text: str, parsed: ParsedTexts) -> bool:
        seen.append(text)
        return real(text, parsed)

    monkeypatch.setattr(fixer, "_parses", spy)
    outcome = fix("x.broken()\ny = t.cuda()\n", BrokenFix, CudaToXla)
    assert any("(((" in text for text in seen)  # the broken candidate was checked...
    assert "(((" not in outcome.text  # ...and rejected


# -- syntax errors --------------------------------------------------------------------------


def test_syntax_error_is_reported_and_nothing_changes() -> None:
    source = "x = t.cuda(\n"
    outcome = fix(source, CudaToXla)
    assert outcome.error is not None and outcome.error.startswith("syntax error")
    assert outcome.text == source
    assert not outcome.changed
    assert not outcome.applied


# -- bytes outside the edits ----------------------------------------------------------------


def encoded_fix(raw: bytes, *rules: type[Rule]) -> bytes:
    outcome = fix(raw, *rules)
    assert outcome.changed
    assert_stable(outcome, rules, False)
    return outcome.encoded()


def test_crlf_is_kept_everywhere_including_inserted_lines() -> None:
    raw = (
        b'"""Doc."""\r\nimport torch\r\n\r\nfor b in loader:\r\n'
        b"    b = b.cuda()  # move\r\n    optimizer.step()\r\n"
    )
    fixed = encoded_fix(raw, CudaToXla, MarkStepAfterStep)
    assert fixed == (
        b'"""Doc."""\r\nimport torch\r\nimport torch_xla\r\n'
        b"import torch_xla.core.xla_model as xm\r\n\r\nfor b in loader:\r\n"
        b"    b = b.to(torch_xla.device())  # move\r\n    optimizer.step()\r\n"
        b"    xm.mark_step()\r\n"
    )
    assert fixed.count(b"\n") == fixed.count(b"\r\n")


def test_utf8_bom_survives() -> None:
    raw = b"\xef\xbb\xbf# caf\xc3\xa9\nx = t.cuda()\n"
    fixed = encoded_fix(raw, CudaToXla)
    assert fixed == b"\xef\xbb\xbf# caf\xc3\xa9\nimport torch_xla\nx = t.to(torch_xla.device())\n"
    assert decode(fixed).encoding == "utf-8-sig"


def test_latin1_with_coding_cookie_survives_byte_for_byte() -> None:
    text = (
        "# -*- coding: latin-1 -*-\n# Größe: café, ½\nname = 'Müller'; x = t.cuda()  # déjà\n"
        "y = 'ÿ'\n"
    )
    raw = text.encode("latin-1")
    fixed = encoded_fix(raw, CudaToXla)
    assert fixed == (
        "# -*- coding: latin-1 -*-\n# Größe: café, ½\nimport torch_xla\n"
        "name = 'Müller'; x = t.to(torch_xla.device())  # déjà\ny = 'ÿ'\n"
    ).encode("latin-1")
    assert decode(fixed).encoding == "iso-8859-1"  # the cookie still works


def test_shebang_and_cookie_stay_on_lines_one_and_two() -> None:
    raw = "#!/usr/bin/env python\n# coding: latin-1\nx = t.cuda()  # é\n".encode("latin-1")
    fixed = encoded_fix(raw, CudaToXla)
    assert fixed.split(b"\n")[:3] == [
        b"#!/usr/bin/env python",
        b"# coding: latin-1",
        b"import torch_xla",
    ]
    assert fixed.endswith("  # é\n".encode("latin-1"))


def test_mixed_line_endings_are_untouched_outside_the_edits() -> None:
    raw = b"import os\r\nx = 1\ny = t.cuda()\r\nz = 2\rw = 3\n"
    fixed = encoded_fix(raw, CudaToXla)
    # Two CRLF against two LF: a tie, so the new line is CRLF; the rest is as it was.
    assert fixed == (
        b"import os\r\n\r\nimport torch_xla\r\n"
        b"x = 1\ny = t.to(torch_xla.device())\r\nz = 2\rw = 3\n"
    )


def test_old_mac_line_endings() -> None:
    raw = b"import os\rx = t.cuda()\ry = 2\r"
    fixed = encoded_fix(raw, CudaToXla)
    assert fixed == b"import os\r\rimport torch_xla\rx = t.to(torch_xla.device())\ry = 2\r"


def test_tabs_and_trailing_whitespace_are_kept() -> None:
    raw = b"if ok:\n\tx = t.cuda()\t# tab \n\ty = 1 \t\n"
    fixed = encoded_fix(raw, CudaToXla)
    assert (
        fixed == b"import torch_xla\nif ok:\n\tx = t.to(torch_xla.device())\t# tab \n\ty = 1 \t\n"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"x = t.cuda()", b"import torch_xla\nx = t.to(torch_xla.device())"),
        (
            b"import os\nx = t.cuda()",
            b"import os\n\nimport torch_xla\nx = t.to(torch_xla.device())",
        ),
        (
            b"import os\r\nx = t.cuda()",
            b"import os\r\n\r\nimport torch_xla\r\nx = t.to(torch_xla.device())",
        ),
        (b"import torch\n\n# end", b"import torch\n\n# end"),
    ],
)
def test_no_newline_at_end_of_file_is_kept(raw: bytes, expected: bytes) -> None:
    outcome = fix(raw, CudaToXla)
    assert outcome.encoded() == expected
    assert_stable(outcome, [CudaToXla], False)


def test_unchanged_file_encodes_to_its_own_bytes() -> None:
    for raw in [
        b"\xef\xbb\xbfx = 1\r\n",
        "# coding: latin-1\ns = 'é'\n".encode("latin-1"),
        b"x = 1\ry = 2",
    ]:
        outcome = fix(raw, CudaToXla)
        assert not outcome.changed
        assert outcome.encoded() == raw


LINES = [
    "import torch\n",
    "x = t.cuda()\n",
    "y = old_device(z)\n",
    "legacy_move(q.cuda(), 1)\n",
    "w = a.cuda().cuda()\n",
    "idx = m.nonzero()\n",
    "c.broken()\n",
    "d.broken_import()\n",
    "sync_now()\n",
    "s = 'é☃'  # ü\n",
    "# comment with \x0c form feed\n",
    "for b in loader:\n    optimizer.step()\n",
    "\n",
    '"""a string."""\n',
    "v = 1  ;  u = 2\n",
    "import torch_xla.core.xla_model as xm  # model API\n",
    "xm.mark_step()\n",
]
SAFE_RULES = [
    CudaToXla,
    MarkStepAfterStep,
    BrokenFix,
    BrokenFixWithImport,
    WrapCall,
    CudaToString,
    Enabler,
    NoFix,
    UnsafeNonzero,
    MarkStepToSync,
]
PLAIN = [
    line
    for line in LINES
    if not any(
        t in line
        for t in ("cuda", "old_", "legacy", "nonzero", "broken", "optimizer", "xla_model", "xm.")
    )
]


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), max_size=12),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    bom=st.booleans(),
    final_newline=st.booleans(),
    unsafe=st.booleans(),
)
def test_random_programs(
    lines: list[str], newline: str, bom: bool, final_newline: bool, unsafe: bool
) -> None:
    text = "".join(lines).replace("\n", newline)
    if not final_newline and text.endswith(newline):
        text = text[: -len(newline)]
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    outcome = fix(raw, *SAFE_RULES, unsafe=unsafe)
    assert_stable(outcome, SAFE_RULES, unsafe)
    fixed = outcome.encoded()
    assert fixed.startswith(b"\xef\xbb\xbf") is bom
    assert fixed.endswith(newline.encode()) is text.endswith(newline)
    if newline in text:  # one style throughout, inserted lines included
        others = fixed.replace(newline.encode(), b"")
        assert b"\r" not in others and b"\n" not in others
    # Lines no rule touches survive byte for byte, in order.
    kept = [line.replace("\n", newline) for line in lines if line in PLAIN]
    out_lines = [line.replace("\n", newline) for line in kept]
    position = 0
    for line in out_lines:
        found = outcome.text.find(line.rstrip("\r\n"), position)
        assert found >= 0, line
        position = found + len(line.rstrip("\r\n"))
    assert "(((" not in outcome.text  # no broken fix got through
    assert outcome.text.count("import torch_xla" + newline) <= 1
    # The `xm` import goes when a fix took its last use, and only then.
    had_xm = "import torch_xla.core.xla_model as xm" in text
    uses_xm = "xm.mark_step()" in text
    kept_xm = "import torch_xla.core.xla_model as xm" in outcome.text
    assert kept_xm is (had_xm and not uses_xm)


# -- fix_paths ------------------------------------------------------------------------------


def settings_for(root: Path) -> Settings:
    return Settings(root=root)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_bytes(b"import torch\r\nx = t.cuda()\r\n")
    (tmp_path / "clean.py").write_bytes(b"import torch\n\nx = torch.ones(3)\n")
    (tmp_path / "broken.py").write_bytes(b"x = t.cuda(\n")
    return tmp_path


def stat_of(path: Path) -> tuple[int, int, bytes]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns, path.read_bytes()


def test_fix_paths_without_apply_writes_nothing(project: Path) -> None:
    before = {p.name: stat_of(p) for p in project.iterdir()}
    report = api.fix_paths([project], settings_for(project), rules=[CudaToXla], jobs=1)
    assert {p.name: stat_of(p) for p in project.iterdir()} == before
    by_name = {Path(o.filename).name: o for o in report.outcomes}
    assert by_name["train.py"].changed and not by_name["clean.py"].changed
    assert [Path(e.filename).name for e in report.errors] == ["broken.py"]


def test_fix_paths_apply(project: Path) -> None:
    clean, broken = stat_of(project / "clean.py"), stat_of(project / "broken.py")
    report = api.fix_paths([project], settings_for(project), rules=[CudaToXla], apply=True, jobs=1)
    assert (project / "train.py").read_bytes() == (
        b"import torch\r\nimport torch_xla\r\nx = t.to(torch_xla.device())\r\n"
    )
    # The file without findings is not rewritten; the one with a syntax error is untouched.
    assert stat_of(project / "clean.py") == clean
    assert stat_of(project / "broken.py") == broken
    [error] = report.errors
    assert error.filename.endswith("broken.py") and error.reason.startswith("syntax error")
    assert report.remaining == []
    assert sorted(p.name for p in project.iterdir()) == ["broken.py", "clean.py", "train.py"]


def test_fix_paths_keeps_the_mode(project: Path) -> None:
    (project / "train.py").chmod(0o755)
    api.fix_paths([project], settings_for(project), rules=[CudaToXla], apply=True, jobs=1)
    assert stat.S_IMODE((project / "train.py").stat().st_mode) == 0o755
    assert b"torch_xla.device()" in (project / "train.py").read_bytes()


def test_fix_paths_file_and_a_symbolic_link_to_it(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text("x = t.cuda()\n")
    (tmp_path / "link.py").symlink_to(real)
    report = api.fix_paths(
        [tmp_path], settings_for(tmp_path), rules=[CudaToXla], apply=True, jobs=1
    )
    # Fixed once through whichever name comes first; the other name finds it done.
    assert report.errors == []
    assert real.read_text() == f"{IMPORT}x = t.to(torch_xla.device())\n"
    assert (tmp_path / "link.py").is_symlink()
    assert report.remaining == []


def test_fix_paths_does_not_overwrite_a_file_changed_meanwhile(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fix_file = api.fix_file
    concurrent = b"x = t.cuda()\ny = u.cuda()\n"

    def fix_then_someone_edits(path: Path, *args: object, **kwargs: object) -> object:
        outcome = real_fix_file(path, *args, **kwargs)  # type: ignore[arg-type]
        if path.name == "train.py":
            path.write_bytes(concurrent)
        return outcome

    monkeypatch.setattr(api, "fix_file", fix_then_someone_edits)
    report = api.fix_paths([project], settings_for(project), rules=[CudaToXla], apply=True, jobs=1)
    assert (project / "train.py").read_bytes() == concurrent
    errors = {Path(e.filename).name: e.reason for e in report.errors}
    assert errors["train.py"] == "changed on disk since it was read; not overwritten"
    outcome = next(o for o in report.outcomes if o.filename.endswith("train.py"))
    # Nothing was written: the outcome says so, and what remains is what is on disk.
    assert not outcome.changed and not outcome.applied
    assert [(d.code, d.start.row) for d in outcome.remaining] == [("XLA901", 1), ("XLA901", 2)]


def test_fix_paths_read_only_file_is_reported_and_others_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("x = t.cuda()\n")
    (tmp_path / "b.py").chmod(0o444)
    real_access = os.access

    def access(path: object, mode: int) -> bool:  # as a non-root user would see it
        if Path(str(path)).name == "b.py" and mode == os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.os, "access", access)
    report = api.fix_paths(
        [tmp_path], settings_for(tmp_path), rules=[CudaToXla], apply=True, jobs=1
    )
    assert [(Path(e.filename).name, e.reason) for e in report.errors] == [
        ("b.py", "read-only; not written")
    ]
    assert (tmp_path / "b.py").read_text() == "x = t.cuda()\n"
    for name in ("a.py", "c.py"):
        assert (tmp_path / name).read_text() == f"{IMPORT}x = t.to(torch_xla.device())\n"
    assert [Path(d.filename).name for d in report.remaining] == ["b.py"]


def test_fix_paths_text_the_encoding_cannot_hold(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes("# coding: latin-1\ns = 'é'\na = arrow()\n".encode("latin-1"))
    other = tmp_path / "other.py"
    other.write_bytes(b"a = arrow()\n")
    before = stat_of(latin)
    report = api.fix_paths([tmp_path], settings_for(tmp_path), rules=[NonLatin], apply=True, jobs=1)
    assert stat_of(latin) == before
    [error] = report.errors
    assert error.filename == str(latin)
    assert error.reason == "the fixed text has characters latin-1 cannot encode; not written"
    assert other.read_text(encoding="utf-8") == 'a = "\u2192"\n'


def test_fix_paths_in_parallel_equals_serial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = [
        "x = t.cuda()\n",
        "import os\r\nfor b in loader:\r\n    b = b.cuda()\r\n    optimizer.step()\r\n",
        "y = old_device(x)\n",
        "x.broken()\nz = t.cuda()\n",
        "idx = m.nonzero()\n",
        "clean = 1\n",
        "x = (\n",
    ]
    rules = [CudaToXla, MarkStepAfterStep, Enabler, BrokenFix, UnsafeNonzero]

    def make(folder: Path) -> Path:
        folder.mkdir()
        for i in range(24):
            (folder / f"m{i:02}.py").write_bytes(sources[i % len(sources)].encode())
        return folder

    pools: list[int] = []
    real_pool = concurrent.futures.ProcessPoolExecutor

    class CountingPool(real_pool):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            pools.append(1)
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountingPool)

    def run(folder: Path, jobs: int) -> tuple[object, ...]:
        report = api.fix_paths(
            [folder], settings_for(folder), rules=rules, unsafe=True, apply=True, jobs=jobs
        )
        outcomes = [
            (
                Path(o.filename).name,
                o.text,
                dict(o.applied),
                o.dropped,
                [(d.code, d.start) for d in o.remaining],
            )
            for o in report.outcomes
        ]
        errors = [(Path(e.filename).name, e.reason) for e in report.errors]
        files = {p.name: p.read_bytes() for p in folder.iterdir()}
        return outcomes, errors, files

    serial = run(make(tmp_path / "serial"), 1)
    assert pools == []
    parallel = run(make(tmp_path / "parallel"), 2)
    assert pools == [1]  # the pool really ran
    assert parallel == serial
    assert len(serial[1]) == 3  # the syntax errors, one per copy of "x = (\n"


def test_no_final_newline_stays_absent_when_the_last_import_goes() -> None:
    """The removed import was the last line, without a line ending, after a blank line: the
    fixed file ends where its last remaining line does, still without one."""
    source = "xm.mark_step()\n\nimport torch_xla.core.xla_model as xm  # model API"
    assert fix(source, MarkStepToSync).text == "import torch_xla\ntorch_xla.sync()"


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize(
    "path",
    sorted(FIXTURES.rglob("*.py")),
    ids=lambda p: str(p.relative_to(FIXTURES)),
)
def test_the_rules_that_offer_fixes_offer_alone_what_they_offer_beside_the_others(
    path: Path,
) -> None:
    """The closing forecast lints each fixed text with the rules that may offer a fix
    (`fixer.lint_fixes`): on every fixture, read whole as a fixed text is (the parse
    guard's tree), they offer the very fixes that every rule run together offers, and no
    other rule offers one."""
    from xlalint.cst_parse import parse_module
    from xlalint.diagnostics import FixAvailability
    from xlalint.engine import lint_source, rules_for_text
    from xlalint.registry import select_rules

    text = path.read_text(encoding="utf-8")
    rules = select_rules(["ALL"], [], [])
    try:
        module = parse_module(text)
    except cst.ParserSyntaxError:
        pytest.skip("no fixed text parses as this one")
    every = lint_source(text, str(path), rules, module=module)
    offering = fixer.offering_fixes(text, rules)
    alone = fixer.lint_fixes(text, str(path), rules, module=module)
    assert alone.error == every.error
    assert [d for d in alone.diagnostics if d.fix] == [d for d in every.diagnostics if d.fix]
    fixing = {d.code for d in every.diagnostics if d.fix}
    assert fixing <= {rule.code for rule in offering}
    assert all(
        rule.fix_availability is FixAvailability.NONE
        for rule in rules_for_text(text, rules)
        if rule not in offering
    )


def test_no_rule_that_offers_no_fix_takes_findings_from_one_that_does() -> None:
    """A lint by the rules that offer fixes runs no rule that could supersede their
    findings (`Rule.supersedes`, `supersedes_inside`, `supersedes_moved`): none offers no
    fix."""
    from xlalint.diagnostics import FixAvailability
    from xlalint.registry import all_rules

    rules = all_rules().values()
    offering = {r.code for r in rules if r.fix_availability is not FixAvailability.NONE}
    for rule in rules:
        if rule.code not in offering:
            assert (
                not {*rule.supersedes, *rule.supersedes_inside, *rule.supersedes_moved} & offering
            ), rule.code


def test_a_lint_for_fixes_feeds_the_analyses_of_every_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`lint_fixes` runs fewer rules, but its walk feeds the analyses all of them use
    (`Rule.uses`): an analysis fed or not never changes what another rule is told."""
    from xlalint import engine
    from xlalint.registry import select_rules

    text = "import torch\nfor i in range(9):\n    y = loader[i].cuda()\n"
    rules = select_rules(["XLA207", "XLA301"], [], [])  # XLA207 (no fix) uses them all
    fed: list[frozenset[str]] = []
    real = engine.FileContext

    def recording(*args: object, uses: frozenset[str], **kwargs: object) -> object:
        fed.append(frozenset(uses))
        return real(*args, uses=uses, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "FileContext", recording)
    found = fixer.lint_fixes(text, "t.py", rules)
    assert [rule.code for rule in fixer.offering_fixes(text, rules)] == ["XLA301"]
    assert fed == [frozenset({"loops", "masks", "loop_values"})]
    assert {d.code for d in found.diagnostics} == {"XLA301"}
