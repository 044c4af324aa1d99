"""A realistic CUDA training script goes through `xlalint fix --apply --unsafe-fixes`.

It must come out as the XLA-ready script a person would write (the XLA device, an
`MpDeviceLoader` that syncs every batch, no per-step `.item()`, `xm.save`), byte for byte
`fixtures/whole_script/train_xla.expected.py`; that output must lint clean, fixing it again
must change nothing, and on the XLA CPU device it must train to the same losses the
original script reaches on the host.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, run_subprocess

SCRIPTS = ROOT / "fixtures" / "whole_script"
GPU_SCRIPT = SCRIPTS / "train_gpu.py"
EXPECTED = SCRIPTS / "train_xla.expected.py"
LOSS = re.compile(r"^epoch (\d+) loss ([0-9.]+)$", re.MULTILINE)

# Runs a CUDA script on the host CPU: `.cuda()` on tensors and modules becomes a no-op.
ON_HOST = """\
import runpy, sys, torch
torch.Tensor.cuda = lambda self, *args, **kwargs: self
torch.nn.Module.cuda = lambda self, *args, **kwargs: self
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture
def ported(project: Path) -> Path:
    """The GPU script, fixed in place with every fix xlalint has."""
    script = project / "train.py"
    shutil.copyfile(GPU_SCRIPT, script)
    run = run_cli("fix", "--apply", "--unsafe-fixes", "train.py")
    assert run.exit_code == 0, run.stdout + run.stderr
    assert "XLA301 x3" in run.stdout and "XLA401 x1" in run.stdout
    return script


def test_the_gpu_script_becomes_the_xla_script_a_person_writes(ported: Path) -> None:
    assert ported.read_bytes() == EXPECTED.read_bytes()


def test_the_ported_script_lints_clean_and_fixing_again_changes_nothing(ported: Path) -> None:
    assert run_cli("check", "train.py").exit_code == 0
    again = run_cli("fix", "--unsafe-fixes", "train.py")
    assert again.exit_code == 0
    assert again.stdout.strip() == ""
    assert ported.read_bytes() == EXPECTED.read_bytes()


def _losses(output: str) -> list[float]:
    return [float(loss) for _, loss in LOSS.findall(output)]


@pytest.mark.runtime
def test_the_ported_script_trains_like_the_original_on_the_xla_device(ported: Path) -> None:
    original = run_subprocess(
        [sys.executable, "-c", ON_HOST], str(GPU_SCRIPT), "--epochs", "2", cwd=ported.parent
    )
    assert original.returncode == 0, original.stderr
    on_xla = run_subprocess(
        ["env", "PJRT_DEVICE=CPU", sys.executable], str(ported), "--epochs", "2", cwd=ported.parent
    )
    assert on_xla.returncode == 0, on_xla.stderr
    expected, measured = _losses(original.stdout), _losses(on_xla.stdout)
    assert len(expected) == len(measured) == 2
    assert measured == pytest.approx(expected, abs=2e-4)
    assert (ported.parent / "classifier.pt").is_file()  # `xm.save` wrote the checkpoint
