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
from xlalint.walk import descendants, walk

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


def test_loop_values_are_one_analysis_for_the_loop_value_rules() -> None:
    rules = all_rules()
    for code in ("XLA207", "XLA208", "XLA209"):
        assert "loop_values" in analyses_used([rules[code]]), code
    with pytest.raises(RuntimeError, match="loop_values"):
        _ = analyse("XLA101", "XLA401").loop_values
    # One instance, fed by the context, for every rule that asks.
    ctx, instances = _analyse(
        cst.parse_module(SOURCE),
        "t.py",
        [rules["XLA207"], rules["XLA208"], rules["XLA209"]],
        (),
        LATEST,
        fast=True,
    )
    assert all(rule.values is ctx.loop_values for rule in instances)  # type: ignore[attr-defined]


def test_loop_values_follow_the_pass_of_each_loop() -> None:
    source = dedent(
        """\
        import torch

        def run(x, n):
            for i in range(n):
                j = i + 1
                k: int = j * 2
                step = 0
                step += 1
                x[j].sum().item()
            return x
        """
    )
    module = cst.parse_module(source)
    seen: dict[str, object] = {}

    ctx = FileContext(module, "t.py", uses={"loops", "loop_values"})

    def enter(node: cst.CSTNode) -> None:
        ctx.enter(node)
        func = node.func if isinstance(node, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "item":
            values = ctx.loop_values
            seen.update({name: values.int_loops(cst.Name(name)) for name in ("i", "j", "k")})
            seen.update({f"{n} varies": values.varies(cst.Name(n)) for n in ("step", "n")})
            seen["passes"] = list(values.passes_walked())

    walk(module, enter, ctx.leave)
    loop = next(n for n in descendants(module) if isinstance(n, cst.For))
    assert seen["i"] == seen["j"] == seen["k"] == frozenset({loop})
    assert seen["step varies"] and not seen["n varies"]  # a counter of the pass; a bound
    assert seen["passes"] == [loop]
    assert ctx.loop_values.executes_every_pass(loop, ctx.loops)  # `.item()` each pass
    assert not ctx.loop_values.executes_every_pass(loop, ctx.loops, reads=False)
