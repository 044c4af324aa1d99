"""Family 5 (serialization and semantics): XLA501's fix, and what fixtures cannot say.

The fix goes through the real fixer (imports added once, in the file's style; the output
parses; fixing twice equals fixing once). XLA502 and XLA503 report with hints only.
"""

from __future__ import annotations

from textwrap import dedent

import pytest

from xlalint.diagnostics import Applicability, Diagnostic
from xlalint.engine import lint_source
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode


def lint(source: str, code: str) -> list[Diagnostic]:
    result = lint_source(dedent(source), "t.py", [all_rules()[code]])
    assert result.error is None
    return result.diagnostics


def fixed(source: str, code: str) -> str:
    rules = [all_rules()[code]]
    outcome = fix_text(decode(dedent(source).encode()), "t.py", rules)
    assert outcome.error is None and not outcome.dropped
    compile(outcome.text, "<fixed>", "exec")
    again = fix_text(decode(outcome.encoded()), "t.py", rules)
    assert again.text == outcome.text and not again.applied
    return outcome.text


# -- XLA501 torch-save-device-state: safe `xm.save` ------------------------------------------
XM = "import torch\nimport torch_xla.core.xla_model as xm\n\ntorch.manual_seed(0)\n"


@pytest.mark.parametrize(
    ("head", "before", "after"),
    [
        (
            XM,
            'torch.save(model.state_dict(), "model.pt")\n',
            'xm.save(model.state_dict(), "model.pt")\n',
        ),
        (
            XM,
            'torch.save({"model": model.state_dict(), "epoch": 3}, os.path.join(d, "c.pt"))\n',
            'xm.save({"model": model.state_dict(), "epoch": 3}, os.path.join(d, "c.pt"))\n',
        ),
        (
            XM,
            "state = {'opt': optimizer.state_dict()}\ntorch.save(state, ckpt_path)\n",
            "state = {'opt': optimizer.state_dict()}\nxm.save(state, ckpt_path)\n",
        ),
        (
            XM,
            'if xm.is_master_ordinal():\n    torch.save(model.state_dict(), out / "m.pt")\n',
            'if xm.is_master_ordinal():\n    xm.save(model.state_dict(), out / "m.pt")\n',
        ),
        (
            XM,
            'if rank == 0 and epoch % 5 == 0:\n    torch.save(model.state_dict(), f"{d}/m.pt")\n',
            'if rank == 0 and epoch % 5 == 0:\n    xm.save(model.state_dict(), f"{d}/m.pt")\n',
        ),
        (
            "import torch as th\nfrom torch_xla.core import xla_model\n\nth.manual_seed(0)\n",
            'th.save(model.state_dict(), "m.pt")\n',
            'xla_model.save(model.state_dict(), "m.pt")\n',
        ),
    ],
)
def test_xla501_saves_with_xm_save(head: str, before: str, after: str) -> None:
    [diagnostic] = lint(head + before, "XLA501")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.SAFE
    assert fixed(head + before, "XLA501") == head + after


def test_xla501_fix_adds_the_xla_model_import_once() -> None:
    # The fixer also drops `import torch`, which the fix leaves unused.
    source = """\
        import torch
        import torch_xla

        def save(model, optimizer):
            torch.save(model.state_dict(), "model.pt")
            torch.save(optimizer.state_dict(), "optimizer.pt")
        """
    [first, _] = lint(source, "XLA501")
    assert first.fix is not None
    assert first.fix.required_imports == ("import torch_xla.core.xla_model as xm",)
    assert fixed(source, "XLA501") == dedent(
        """\
        import torch_xla
        import torch_xla.core.xla_model as xm

        def save(model, optimizer):
            xm.save(model.state_dict(), "model.pt")
            xm.save(optimizer.state_dict(), "optimizer.pt")
        """
    )


@pytest.mark.parametrize(
    "body",
    [
        'torch.save(model.state_dict(), f"model_{rank}.pt")',  # one file per process
        "torch.save(model.state_dict(), buffer)",  # not a path
        "with open(path, 'wb') as f:\n    torch.save(model.state_dict(), f)",
        'torch.save(model.state_dict(), "m.pt", pickle_protocol=4)',
        'torch.save(obj=model.state_dict(), f="m.pt")',
        'if xr.global_ordinal() == 1:\n    torch.save(model.state_dict(), "m.pt")',
        'if xm.is_master_ordinal():\n    pass\nelse:\n    torch.save(model.state_dict(), "m.pt")',
    ],
)
def test_xla501_reports_without_fix_where_master_only_saving_could_differ(body: str) -> None:
    [diagnostic] = lint(XM + "import torch_xla.runtime as xr\n" + body + "\n", "XLA501")
    assert diagnostic.fix is None


def test_xla501_needs_xla_code() -> None:
    assert lint('import torch\ntorch.save(model.state_dict(), "m.pt")\n', "XLA501") == []


# -- XLA502 copy-copy-tensor, XLA503 load-map-location-xla: hints only ----------------------
def test_xla502_hints_at_view_as_and_clone() -> None:
    source = """\
        import copy
        import torch

        def snapshot(device):
            w = torch.ones(3, device=device)
            return copy.copy(w), copy.copy({"w": w})
        """
    [diagnostic] = lint(source, "XLA502")
    assert (diagnostic.start.row, diagnostic.start.column) == (6, 12)
    assert diagnostic.fix is None
    assert diagnostic.hint is not None and "view_as" in diagnostic.hint


def test_xla503_reports_the_map_location_argument() -> None:
    source = """\
        import torch
        import torch_xla

        def load(path):
            device = torch_xla.device()
            return torch.load(path, map_location=device)
        """
    [diagnostic] = lint(source, "XLA503")
    assert (diagnostic.start.row, diagnostic.start.column) == (6, 29)
    assert diagnostic.fix is None
    assert diagnostic.hint is not None and 'map_location="cpu"' in diagnostic.hint
