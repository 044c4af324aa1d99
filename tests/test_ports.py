"""Porting CUDA scripts: the device-ladder fix, fixes that must go together, and the
classic CUDA example scripts of fixtures/ports/ run on the XLA device after `fix`.

fixtures/XLA305/bad_*.py with a fixed_*.py twin: the unsafe XLA305 fix turns the first
(without its `# expect:` markers) into the second, byte for byte; the twin is also a clean
fixture, so the fixed ladders are not reported again.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import run_cli, run_subprocess

from xlalint.diagnostics import Diagnostic
from xlalint.engine import lint_source
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


# -- fixes that move values to the XLA device, judged for the file as a whole -----------------
LADDER_AND_LOADER = """\
import torch
from torch.utils.data import DataLoader

import torch_xla


def train(model, loader, opt):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    for x, y in DataLoader(loader, batch_size=8):
        x = x.to(device)
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
"""


def _findings(text: str, *codes: str) -> dict[str, Diagnostic]:
    result = lint_source(text, "script.py", [all_rules()[code] for code in codes])
    return {d.code: d for d in result.diagnostics}


def test_loader_wrap_goes_together_with_the_ladder_fix() -> None:
    found = _findings(LADDER_AND_LOADER, "XLA305", "XLA403")
    ladder, loader = found["XLA305"].fix, found["XLA403"].fix
    assert loader.applicability.value == "unsafe"
    assert "goes together with the XLA305 fix" in loader.description
    assert ladder.group == loader.group is not None
    # Safe fixes leave the model's device and the loader alone; the unsafe ones move both.
    assert _fixed(LADDER_AND_LOADER, "XLA305", "XLA403", unsafe=False) == LADDER_AND_LOADER
    both = _fixed(LADDER_AND_LOADER, "XLA305", "XLA403")
    assert 'torch.device("xla" if importlib.util.find_spec("torch_xla") else "cuda"' in both
    assert "in pl.MpDeviceLoader(DataLoader(loader, batch_size=8), torch_xla.device()):" in both


def test_without_a_ladder_the_loader_wrap_stays_safe_and_alone() -> None:
    text = LADDER_AND_LOADER.replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', "torch_xla.device()"
    )
    [loader] = _findings(text, "XLA305", "XLA403").values()
    assert loader.fix.applicability.value == "safe" and loader.fix.group is None


def test_a_ladder_without_a_fix_leaves_the_moves_unsafe_and_says_why() -> None:
    # A ternary inside an f-string gets no fix: the model's device stays undecided.
    text = LADDER_AND_LOADER.replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        "f\"{'cuda' if torch.cuda.is_available() else 'cpu'}:0\"",
    )
    found = _findings(text, "XLA305", "XLA403")
    assert found["XLA305"].fix is None
    loader = found["XLA403"].fix
    assert loader.applicability.value == "unsafe" and loader.group is None
    assert "cannot fix (XLA305)" in loader.description


def test_a_group_is_applied_whole_or_not_at_all() -> None:
    # `pl` means something else here: the loader wrap cannot be applied, so neither is the
    # ladder fix that goes with it.
    text = LADDER_AND_LOADER.replace("import torch_xla\n", "import torch_xla\nimport numpy as pl\n")
    assert _fixed(text, "XLA305", "XLA403") == text


# -- the classic CUDA examples of fixtures/ports/, run after `fix` -----------------------------
PORTS = ROOT / "fixtures" / "ports"

# A host without torch_xla, simulated: the path finder does not see the package.
WITHOUT_TORCH_XLA = """\
import sys
from importlib.machinery import PathFinder


class _WithoutTorchXla(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "torch_xla" or name.startswith("torch_xla."):
            return None
        return PathFinder.find_spec(name, path, target)


sys.meta_path = [_WithoutTorchXla if f is PathFinder else f for f in sys.meta_path]
"""


def _port(project: Path, name: str, *options: str) -> Path:
    script = project / name
    script.write_bytes((PORTS / name).read_bytes())
    run = run_cli("fix", "--apply", *options, name)
    assert "error" not in run.stderr, run.stderr
    return script


def _run(script: Path, *env: str) -> str:
    done = run_subprocess(["env", *env, sys.executable, script.name], cwd=script.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.runtime
def test_safe_fixes_do_not_break_a_script_whose_model_a_ladder_places(project: Path) -> None:
    # Line by line, wrapping the loader is safe; here the model stays on the CPU and the
    # loop moves batches only for CUDA: wrapped alone, it died with "Expected XLA tensor".
    script = _port(project, "gpu_flag.py")
    assert "MpDeviceLoader" not in script.read_text(encoding="utf-8")
    assert "model on cpu" in _run(script, "PJRT_DEVICE=CPU")


@pytest.mark.runtime
@pytest.mark.parametrize("name", ["use_cuda_flag.py", "gpu_flag.py"])
def test_unsafe_fixes_port_a_classic_cuda_script_to_xla(project: Path, name: str) -> None:
    script = _port(project, name, "--unsafe-fixes")
    text = script.read_text(encoding="utf-8")
    assert "XLA_AVAILABLE" in text and "pl.MpDeviceLoader(" in text
    assert "model on xla" in _run(script, "PJRT_DEVICE=CPU")


@pytest.mark.runtime
def test_the_ladder_fix_keeps_the_script_running_without_torch_xla(project: Path) -> None:
    script = _port(project, "use_cuda_flag.py", "--unsafe-fixes", "--select", "XLA305")
    (project / "sitecustomize.py").write_text(WITHOUT_TORCH_XLA, encoding="utf-8")
    assert "model on cpu" in _run(script, f"PYTHONPATH={project}")
