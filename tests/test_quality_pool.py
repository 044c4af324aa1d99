"""The blind pool of unlabelled findings and decoys (benchmarks/quality/pool.py).

Synthetic projects and sources; nothing is downloaded or linted here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

QUALITY = Path(__file__).resolve().parent.parent / "benchmarks" / "quality"
sys.path.insert(0, str(QUALITY))
_spec = importlib.util.spec_from_file_location("xlalint_quality_pool", QUALITY / "pool.py")
assert _spec is not None and _spec.loader is not None
pool_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pool_module  # dataclasses look their module up by name
_spec.loader.exec_module(pool_module)

from scoring import Label, Project  # noqa: E402

SOURCE = '''\
"""A module docstring that mentions for and if."""
import torch


def step(model, batch, total):
    """Runs for every batch: if the loss is high, print it."""
    # a comment with .item() in it
    loss = model(batch)
    value = loss.item()
    if value > 3:
        print(loss)
    for name in ("a", "b"):
        total[name] = batch[name].cpu()
    return int(value)
'''


def _project(labels: list[Label]) -> Project:
    return Project(
        name="p", requirement="p==1", split="test", files=("a.py",), labels=tuple(labels)
    )


def _scored(*lines: int, reason: str = "unlabelled") -> dict:
    return {"fp": [{"where": f"p/a.py:{n}", "reason": reason} for n in lines]}


def test_findings_are_pooled_with_lookalike_decoys_nobody_labelled_or_reported() -> None:
    labelled = Label("p", "a.py", 11, 11, "XLA104", True)
    lines, findings = pool_module.pool(
        _scored(9), [_project([labelled])], seed=1, read=lambda project, file: SOURCE
    )
    assert [(f.line, f.text) for f in findings] == [(9, "value = loss.item()")]
    decoys = [line for line in lines if line not in findings]
    assert len(decoys) == pool_module.DECOYS_PER_FINDING
    for decoy in decoys:
        # statements only (no docstring, comment or header), not the finding, not a label
        assert decoy.line in {8, 10, 12, 13, 14}, decoy
    assert {line.line for line in lines} >= {9}


def test_hard_negatives_and_duplicates_are_not_pooled() -> None:
    lines, findings = pool_module.pool(
        _scored(9, reason="hard negative"), [_project([])], seed=1, read=lambda p, f: SOURCE
    )
    assert lines == [] and findings == []


def test_the_same_seed_gives_the_same_list() -> None:
    def run() -> list[int]:
        lines, _ = pool_module.pool(
            _scored(9, 13), [_project([])], seed=5, read=lambda p, f: SOURCE
        )
        return [line.line for line in lines]

    assert run() == run()
    assert len(run()) == 2 + 2 * pool_module.DECOYS_PER_FINDING
