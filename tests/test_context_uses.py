"""The context keeps walk-time analyses only for rules that declare them (`Rule.uses`):
BooleanMasks only where XLA201-203 run, loop registration only where a loop rule or a
hot-code rule runs, and an undeclared question fails loudly instead of answering from
an analysis that was never fed."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst
import pytest

from xlalint.analysis.xla_api import LATEST
from xlalint.context import ANALYSES, FileContext
from xlalint.engine import _analyse
from xlalint.registry import all_rules
from xlalint.rule import analyses_used

SOURCE = dedent(
    """\
    import torch
    import torch_xla.core.xla_model as xm

    def train(model, loader, optimizer):
        for x, y in loader:
            loss = model(x[y > 0])
            loss.backward()
            optimizer.step()
    """
)


def analyse(*codes: str) -> FileContext:
    rules = [all_rules()[code] for code in codes]
    ctx, _ = _analyse(cst.parse_module(SOURCE), "t.py", rules, (), LATEST, fast=True)
    return ctx


def test_analyses_used_by_declarations_and_hot_code() -> None:
    rules = all_rules()
    assert analyses_used([rules["XLA301"]]) == frozenset()
    assert analyses_used([rules["XLA401"]]) == {"loops"}
    assert analyses_used([rules["XLA101"]]) == {"loops"}  # hot code asks what loops do
    assert analyses_used([rules["XLA202"]]) == {"loops", "masks"}
    assert analyses_used([rules["XLA301"], rules["XLA203"]]) == {"loops", "masks"}


def test_masks_are_kept_only_for_the_mask_rules() -> None:
    with pytest.raises(RuntimeError, match="masks"):
        _ = analyse("XLA101", "XLA401").masks
    assert analyse("XLA202").masks is not None


def test_loops_are_registered_only_for_rules_that_ask() -> None:
    with pytest.raises(RuntimeError, match="loops"):
        _ = analyse("XLA301").loops
    sites = analyse("XLA401").loops.sites()
    assert [type(site.node) for site in sites] == [cst.For]
    assert sites[0].function is not None and sites[0].function.name.value == "train"


def test_every_shipped_rule_declares_known_analyses() -> None:
    for code, rule in all_rules().items():
        assert ANALYSES.issuperset(rule.uses), code
