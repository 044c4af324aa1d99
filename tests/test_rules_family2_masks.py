"""Family 2, masks and nonzero (XLA201-XLA204): the fixes, applied to real text.

Detection is pinned by fixtures/XLA20[1-4]/. These tests pin each fix's exact output, that
it parses and that fixing again changes nothing, the imports it needs in the file's own
style, and the cases that are reported without a fix because no rewrite is exact.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from xlalint.diagnostics import Applicability, Diagnostic
from xlalint.engine import lint_source
from xlalint.fixer import FixOutcome, fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode

HEADER = "import torch\n\ntorch.manual_seed(0)\n\n\ndef train(loader):\n    for x, y in loader:\n"


def in_loop(body: str, header: str = HEADER) -> str:
    """`body` as the body of a training loop, where `x` and `y` are device tensors."""
    return header + textwrap.indent(textwrap.dedent(body), " " * 8)


def lint(code: str, source: str) -> list[Diagnostic]:
    result = lint_source(source, "snippet.py", [all_rules()[code]])
    assert result.error is None
    return result.diagnostics


def fix(code: str, source: str) -> FixOutcome:
    """Fix `source` with one rule (safe fixes only); the output must parse, and fixing it
    again must change nothing."""
    rules = [all_rules()[code]]
    outcome = fix_text(decode(source.encode()), "snippet.py", rules)
    assert outcome.error is None
    ast.parse(outcome.text)
    again = fix_text(decode(outcome.text.encode()), "snippet.py", rules)
    assert again.text == outcome.text
    assert not again.applied
    return outcome


def assert_fixed(code: str, before: str, after: str, header: str = HEADER) -> None:
    diagnostics = lint(code, in_loop(before, header))
    assert diagnostics, f"{code} found nothing"
    assert all(d.fix is None or d.fix.applicability is Applicability.SAFE for d in diagnostics)
    outcome = fix(code, in_loop(before, header))
    assert outcome.text == in_loop(after, header)


def assert_reported_without_fix(code: str, body: str, count: int = 1) -> None:
    diagnostics = lint(code, in_loop(body))
    assert len(diagnostics) == count
    assert all(d.fix is None for d in diagnostics)


# -- XLA201 nonzero ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "r = y.sum() / torch.nonzero(x > 0).shape[0]\n",
            "r = y.sum() / (x > 0).sum()\n",
        ),
        ("r = y.sum() / len((x > 0).nonzero())\n", "r = y.sum() / (x > 0).sum()\n"),
        ("r = y.sum() / (x > 0).nonzero().size(0)\n", "r = y.sum() / (x > 0).sum()\n"),
        ("r = (x > 0).nonzero().size(dim=0) > y\n", "r = (x > 0).sum() > y\n"),
        ("r = y >= torch.argwhere(x < 1).shape[0]\n", "r = y >= (x < 1).sum()\n"),
        ("r = y / x.argwhere().shape[0]\n", "r = y / (x != 0).sum()\n"),
        (
            "m = torch.isnan(x)\nr = m.nonzero().shape[0] / y.sum()\n",
            "m = torch.isnan(x)\nr = m.sum() / y.sum()\n",
        ),
        (
            "r = y / (\n    x.nonzero().shape[0]  # nonzero rows\n)\n",
            "r = y / (\n    (x != 0).sum()  # nonzero rows\n)\n",
        ),
    ],
)
def test_nonzero_count_fix(before: str, after: str) -> None:
    assert_fixed("XLA201", before, after)


def test_nonzero_count_fix_needs_no_torch_name() -> None:
    header = HEADER.replace("torch", "th").replace("import th", "import torch as th")
    assert_fixed(
        "XLA201",
        "r = y.sum() / th.nonzero(x > 0).shape[0]\n",
        "r = y.sum() / (x > 0).sum()\n",
        header,
    )


@pytest.mark.parametrize(
    "body",
    [
        # A Python int where a tensor would change types downstream.
        "n = len(x.nonzero())\n",
        "n = torch.nonzero(x).shape[0] + 1\n",
        "r = y / max(x.nonzero().shape[0], 1)\n",
        "r = 4 / x.nonzero().shape[0]\n",
        # `+` with a 0-d int32 tensor would promote to int64.
        "r = y + x.nonzero().shape[0]\n",
        # Not a count: one column per dimension, or a tuple.
        "r = y / x.nonzero().numel()\n",
        "r = y / x.nonzero().shape[1]\n",
        "r = y / x.nonzero(as_tuple=True)[0].shape[0]\n",
        "r = y / torch.nonzero(x, as_tuple=False).shape[0]\n",
        "first = (x == 3).nonzero().item()\n",
        "rows = torch.where(x > 0)\n",
    ],
)
def test_nonzero_without_fix(body: str) -> None:
    assert_reported_without_fix("XLA201", body)


def test_nonzero_on_host_values_is_clean() -> None:
    source = in_loop(
        """\
        import numpy as np
        idx = np.nonzero(np.arange(4))
        cpu = torch.zeros(4).nonzero()
        both = torch.where(x > 0, x, y)
        """
    )
    assert lint("XLA201", source) == []


# -- XLA202 boolean-mask-read --------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("s = x[x > 0].sum()\n", "s = torch.where(x > 0, x, 0).sum()\n"),
        (
            "s = x[torch.isfinite(x)].mean()\n",
            "s = torch.where(torch.isfinite(x), x, 0).sum() / torch.isfinite(x).sum()\n",
        ),
        (
            "s = x[x > 0].mean() * 2\n",
            "s = (torch.where(x > 0, x, 0).sum() / (x > 0).sum()) * 2\n",
        ),
        (
            "s = (x[~torch.isnan(x)].mean())\n",
            "s = (torch.where(~torch.isnan(x), x, 0).sum() / (~torch.isnan(x)).sum())\n",
        ),
        (
            "m = x.abs() > x.std()\nlog(x[m].mean(), x[m].sum().item())\n",
            "m = x.abs() > x.std()\n"
            "log(torch.where(m, x, 0).sum() / m.sum(), torch.where(m, x, 0).sum().item())\n",
        ),
        (
            "s = x[(x > 0) & (x < 1)].sum()\n",
            "s = torch.where((x > 0) & (x < 1), x, 0).sum()\n",
        ),
        (
            "total += x[x.float().gt(0.5)].sum()\n",
            "total += torch.where(x.float().gt(0.5), x, 0).sum()\n",
        ),
        ("s = torch.masked_select(x, y > 0).sum()\n", "s = torch.where(y > 0, x, 0).sum()\n"),
        ("s = x.masked_select(mask=y > 0).sum()\n", "s = torch.where(y > 0, x, 0).sum()\n"),
    ],
)
def test_boolean_mask_read_fix(before: str, after: str) -> None:
    assert_fixed("XLA202", before, after)


@pytest.mark.parametrize(
    ("header", "where", "imports"),
    [
        ("import torch as th\n", "th.where", set()),
        ("import torch\nfrom torch import where\n", "where", set()),
        ("from torch import nn\n", "torch.where", {"import torch"}),
    ],
)
def test_boolean_mask_read_fix_spells_torch_like_the_file(
    header: str, where: str, imports: set[str]
) -> None:
    source = in_loop("s = x[x > 0].sum()\n", HEADER.replace("import torch\n", header))
    [diagnostic] = lint("XLA202", source)
    assert diagnostic.fix is not None
    assert set(diagnostic.fix.required_imports) == imports
    assert f"s = {where}(x > 0, x, 0).sum()\n" in fix("XLA202", source).text
    if imports:
        assert fix("XLA202", source).text.startswith("import torch\nfrom torch import nn\n")


@pytest.mark.parametrize(
    "body",
    [
        # The mask is another tensor's: its shape may differ from `x`'s.
        "s = y[x > 0].sum()\n",
        "s = x[x > y].sum()\n",
        "s = x[padding_mask].sum()\n",
        # `x` was rebound after the mask was made.
        "m = x > 0\nx = x.flatten()\ns = x[m].sum()\n",
        # Random masks differ when evaluated twice.
        "s = x[torch.rand_like(x) > 0.5].mean()\n",
        # Not a full reduction, or not the only index.
        "s = x[x > 0].sum(0)\n",
        "s = x[x > 0, 0].sum()\n",
        "s = x[x > 0].max()\n",
        "kept = x[x > 0]\n",
    ],
)
def test_boolean_mask_read_without_fix(body: str) -> None:
    diagnostics = lint("XLA202", in_loop(body))
    assert diagnostics
    assert all(d.fix is None for d in diagnostics)


def test_boolean_mask_read_mask_from_before_the_loop_has_no_fix() -> None:
    source = (
        "import torch\n\n\ndef train(loader):\n"
        '    x = torch.randn(8, device="xla")\n    m = x > 0\n'
        "    for _ in loader:\n        s = x[m].sum()\n        x = torch.cat([x, x])\n"
    )
    [diagnostic] = lint("XLA202", source)
    assert diagnostic.fix is None


def test_boolean_mask_read_names_the_code_and_skips_writes() -> None:
    source = in_loop("x[x > 0] = 0\ndel y[y > 0]\n(a, x[x < 0]) = (1, 2)\nv = y[y > 1]\n")
    [diagnostic] = lint("XLA202", source)
    assert diagnostic.message.startswith("`y[y > 1]` selects")


# -- XLA203 boolean-mask-write -------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x[x < 0] = 0\n", "x.masked_fill_(x < 0, 0)\n"),
        ('x[torch.isnan(x)] = float("-inf")\n', 'x.masked_fill_(torch.isnan(x), float("-inf"))\n'),
        (
            "x[x > 1] = torch.finfo(x.dtype).max\n",
            "x.masked_fill_(x > 1, torch.finfo(x.dtype).max)\n",
        ),
        ("x[x != x] = -1e4 * 2\n", "x.masked_fill_(x != x, -1e4 * 2)\n"),
        (
            "big = x > 10\nx[big] = x[big] * 0.1\n",
            "big = x > 10\nx.copy_(torch.where(big, x * 0.1, x))\n",
        ),
        ("x[x > 0] = -x[x > 0]\n", "x.copy_(torch.where(x > 0, -x, x))\n"),
        (
            "x[x > 0] = y.mean()\n",
            "x.copy_(torch.where(x > 0, y.mean().to(x.dtype), x))\n",
        ),
        (
            "x[x > 0] = 2 * y.max()\n",
            "x.copy_(torch.where(x > 0, (2 * y.max()).to(x.dtype), x))\n",
        ),
        ("x[x < 0] = 0; z = 1\n", "x.masked_fill_(x < 0, 0); z = 1\n"),
    ],
)
def test_boolean_mask_write_fix(before: str, after: str) -> None:
    assert_fixed("XLA203", before, after)


def test_boolean_mask_write_fix_uses_the_torch_alias() -> None:
    header = HEADER.replace("torch", "th").replace("import th", "import torch as th")
    assert_fixed(
        "XLA203",
        "m = x > 10\nx[m] = x[m] / 2\n",
        "m = x > 10\nx.copy_(th.where(m, x / 2, x))\n",
        header,
    )


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ("x[x > 0] = value\n", 1),
        ("x[y > 0] = 0\n", 1),
        ("x[x > 0] = y[y > 0]\n", 1),
        ("x[x > 0] = torch.zeros(3)\n", 1),
        ("x[x > 0, 0] = 0\n", 1),
        ("x[x > 0] += 1\n", 1),
        ("x[x > 0] = y[x > 0] = 0\n", 2),
        ("x[x < 0] = (  # clamp\n    0\n)\n", 1),
        ("x[0][x[0] > 0] = 0\n", 1),
        ("m = x > 0\nx = x.t()\nx[m] = 0\n", 1),
    ],
)
def test_boolean_mask_write_without_fix(body: str, count: int) -> None:
    assert_reported_without_fix("XLA203", body, count)


def test_boolean_mask_write_messages_spell_the_target() -> None:
    diagnostics = lint("XLA203", in_loop("x[x > 0] = 1\ny[y > 0] *= 2\n"))
    assert [d.message.split(" writes")[0] for d in diagnostics] == [
        "`x[x > 0] = ...`",
        "`y[y > 0] *= ...`",
    ]


# -- XLA204 data-dependent-shape-op --------------------------------------------------------
def test_data_dependent_ops_have_hints_and_no_fix() -> None:
    diagnostics = lint(
        "XLA204",
        in_loop("u = torch.unique(y)\nm = x.median()\nr = x.repeat_interleave(y, dim=0)\n"),
    )
    assert [d.start.row for d in diagnostics] == [8, 9, 10]
    assert all(d.fix is None and d.hint for d in diagnostics)
    assert "shape depends on the data" in diagnostics[0].message
    assert "shape depends on the data" not in diagnostics[1].message
    assert "kthvalue" in (diagnostics[1].hint or "")


_LABELER = """\
import torch


class AnchorLabeler:
    def __init__(self, anchors):
        self.anchors = anchors

    def batch_label_anchors(self, gt_boxes, gt_classes):
        labels = []
        for i in range(len(gt_boxes)):
            valid_idx = gt_classes[i] > -1
            labels.append((gt_boxes[i][valid_idx], gt_classes[i][valid_idx]))
        return labels
"""

_BENCH = """\
from torch import nn

from .anchors import AnchorLabeler


class DetBenchTrain(nn.Module):
    def __init__(self, model, anchors):
        super().__init__()
        self.model = model
        self.anchor_labeler = AnchorLabeler(anchors)

    def forward(self, x, target):
        out = self.model(x)
        labels = self.anchor_labeler.batch_label_anchors(target["bbox"], target["cls"])
        return out, labels
"""


@pytest.mark.parametrize(
    ("bench", "expected"),
    [
        # Another module's `forward` hands the batch's targets every step.
        (_BENCH, [("XLA202", 12)]),
        # Built and labelled once, from paths and settings: no per-step data.
        (
            _BENCH.replace(
                "        labels = self.anchor_labeler.batch_label_anchors("
                'target["bbox"], target["cls"])\n',
                "        labels = None\n",
            ),
            [],
        ),
    ],
)
def test_helper_rows_masked_for_a_per_step_caller_elsewhere(
    tmp_path, bench: str, expected: list[tuple[str, int]]
) -> None:
    """`gt_boxes[i][gt_classes[i] > -1]` in a method no code of its file calls, which
    another module's `forward` calls with its batch (effdet's `batch_label_anchors`)."""
    from xlalint import api
    from xlalint.analysis import project_modules
    from xlalint.config import Settings

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "anchors.py").write_text(_LABELER)
    (package / "bench.py").write_text(bench)
    project_modules.forget_layout()
    settings = Settings(root=tmp_path, select=("XLA202", "XLA203"))
    report = api.check_paths([package / "anchors.py"], settings, jobs=1, cache=None)
    assert sorted((d.code, d.start.row) for d in report.diagnostics) == expected
