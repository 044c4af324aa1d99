"""Porting CUDA scripts: the device-ladder fix, fixes that must go together, and the
classic CUDA example scripts of fixtures/ports/ run on the XLA device after `fix`.

fixtures/XLA305/bad_*.py with a fixed_*.py twin: the unsafe XLA305 fix turns the first
(without its `# expect:` markers) into the second, byte for byte; the twin is also a clean
fixture, so the fixed ladders are not reported again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode

ROOT = Path(__file__).resolve().parent.parent
LADDERS = ROOT / "fixtures" / "XLA305"
MARKER = re.compile(r"  # expect: [A-Z0-9, ]+")


def _fixed(text: str, *codes: str, unsafe: bool = True) -> str:
    rules = [all_rules()[code] for code in codes]
    outcome = fix_text(decode(text.encode()), "script.py", rules, unsafe=unsafe)
    assert outcome.error is None and not outcome.dropped
    return outcome.text


TWINS = [
    (bad, bad.with_name(bad.name.replace("bad_", "fixed_", 1)))
    for bad in sorted(LADDERS.glob("bad_*.py"))
    if bad.with_name(bad.name.replace("bad_", "fixed_", 1)).exists()
]


@pytest.mark.parametrize(("bad", "twin"), TWINS, ids=lambda p: p.name)
def test_ladder_fix_gives_xla_the_first_choice(bad: Path, twin: Path) -> None:
    text = MARKER.sub("", bad.read_text(encoding="utf-8"))
    assert _fixed(text, "XLA305") == twin.read_text(encoding="utf-8")
    assert _fixed(twin.read_text(encoding="utf-8"), "XLA305") == twin.read_text(encoding="utf-8")


def test_ladder_fix_is_unsafe_and_never_applied_by_safe_fixes() -> None:
    text = MARKER.sub("", (LADDERS / "bad_ladder_shapes.py").read_text(encoding="utf-8"))
    assert _fixed(text, "XLA305", unsafe=False) == text
