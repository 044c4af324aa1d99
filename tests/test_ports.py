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

from xlalint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from xlalint.engine import lint_source
from xlalint.fixer import _apply, _choose, fix_text
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
    assert (
        "goes together with the fix of the device choice (XLA305 at line 8)" in loader.description
    )
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
    assert "(XLA305 at line 8) has no fix" in loader.description


def test_in_a_file_without_torch_xla_the_moves_wait_for_the_ladder_guard() -> None:
    text = LADDER_AND_LOADER.replace("\nimport torch_xla\n", "")
    found = _findings(text, "XLA305", "XLA401")
    loader = found["XLA401"]
    assert loader.fix is None
    assert loader.hint is not None and "device choice (XLA305 at line 6)" in loader.hint
    assert _fixed(text, "XLA305", "XLA401", unsafe=False) == text
    # XLA401 wraps the loader (the loop moves its batches). With the ladder's guard in
    # place, only where the guard found torch_xla, and its import goes inside the guard.
    both = _fixed(text, "XLA305", "XLA401")
    assert (
        "try:\n    import torch_xla\n    import torch_xla.distributed.parallel_loader as pl\n"
        in both
    )
    wrapped = "pl.MpDeviceLoader(DataLoader(loader, batch_size=8), torch_xla.device())"
    assert f"in {wrapped} if XLA_AVAILABLE else DataLoader(loader, batch_size=8):" in both
    assert _findings(both, "XLA305", "XLA403", "XLA401") == {}


def _finding(row: int, start: int, end: int, content: str, group: str | None = None) -> Diagnostic:
    edit = Edit(Location(row, start), Location(row, end), content)
    fix = Fix(Applicability.SAFE, "edit", (edit,), group=group)
    return Diagnostic("XLA999", "test", "m", "t.py", edit.start, edit.end, fix=fix)


def test_a_group_is_applied_whole_or_not_at_all() -> None:
    text = "aaaa\nbbbb\ncccc\n"
    alone = _finding(1, 1, 3, "x")
    overlapping = _finding(1, 2, 4, "y", group="g")  # overlaps `alone`, chosen first
    elsewhere = _finding(3, 1, 3, "z", group="g")
    assert _choose(text, [alone, overlapping, elsewhere], unsafe=False) == [alone]
    assert _choose(text, [overlapping, elsewhere, alone], unsafe=False) == [
        overlapping,
        elsewhere,
    ]


def test_two_fixes_that_make_the_same_edit_are_both_chosen_and_applied_once() -> None:
    text = "aaaa\nbbbb\n"
    first, second = _finding(2, 1, 1, "guard\n"), _finding(2, 1, 1, "guard\n")
    assert _choose(text, [first, second], unsafe=False) == [first, second]
    assert _apply(text, [first, second]) == "aaaa\nguard\nbbbb\n"


def test_the_loader_wrap_takes_a_free_alias_beside_another_pl() -> None:
    # `pl` means something else here: the loader wrap imports torch_xla's loader under a
    # free alias rather than rebind it, and the ladder fix that goes with it comes along.
    text = LADDER_AND_LOADER.replace("import torch_xla\n", "import torch_xla\nimport numpy as pl\n")
    fixed = _fixed(text, "XLA305", "XLA403")
    assert "import numpy as pl\n" in fixed
    assert "import torch_xla.distributed.parallel_loader as xla_pl\n" in fixed
    assert "for x, y in xla_pl.MpDeviceLoader(DataLoader(loader, batch_size=8)," in fixed
    assert 'torch.device("xla" if importlib.util.find_spec("torch_xla") else "cuda"' in fixed


def test_sibling_chains_that_each_end_in_else_are_two_ladders() -> None:
    # The first moves the model, the second picks the device for the data: fixing only the
    # first would leave the batches on the CPU beside a model on XLA.
    source = """\
import torch

def setup(model, args):
    if not torch.cuda.is_available() and not torch.backends.mps.is_available():
        print("using CPU, this will be slow")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
        model = model.to(device)
    else:
        model = model.cuda()
    if torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    return model, device
"""
    first, second = lint_source(source, "script.py", [all_rules()["XLA305"]]).diagnostics
    assert (first.start.row, second.start.row) == (4, 11)
    assert "never picks the XLA device" in first.message
    assert "picks the CPU" in second.message
    result = _fixed(source, "XLA305")
    assert result.count("if XLA_AVAILABLE:") == 2
    assert result.count("import torch_xla\n") == 1


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


def _run(script: Path, *env: str, args: tuple[str, ...] = ()) -> str:
    command = ["env", *env, sys.executable, script.name, *args]
    done = run_subprocess(command, cwd=script.parent, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.runtime
def test_safe_fixes_do_not_break_a_script_whose_model_a_ladder_places(project: Path) -> None:
    # Line by line, wrapping the loader is safe; here the model stays on the CPU and the
    # loop moves batches only for CUDA: wrapped alone, it died with "Expected XLA tensor".
    script = _port(project, "gpu_flag.py")
    assert "MpDeviceLoader" not in script.read_text(encoding="utf-8")
    assert "model on cpu" in _run(script, "PJRT_DEVICE=CPU")


# The scripts of fixtures/ports/, the arguments that keep their runs short, and whether
# they iterate a DataLoader (whose batches the port moves with `pl.MpDeviceLoader`).
PORTED = [
    ("use_cuda_flag.py", (), True),
    ("gpu_flag.py", (), True),
    ("vae.py", ("--steps", "2"), True),
    ("siamese_accel.py", ("--steps", "2"), True),
    ("actor_critic.py", ("--episodes", "1", "--max-steps", "4"), False),
    ("transformer_lm.py", ("--steps", "1", "--nlayers", "1"), False),
]


@pytest.mark.runtime
@pytest.mark.parametrize(("name", "args", "loader"), PORTED, ids=[p[0] for p in PORTED])
def test_unsafe_fixes_port_a_classic_cuda_script_to_xla(
    project: Path, name: str, args: tuple[str, ...], loader: bool
) -> None:
    script = _port(project, name, "--unsafe-fixes")
    text = script.read_text(encoding="utf-8")
    assert "XLA_AVAILABLE" in text
    assert ("pl.MpDeviceLoader(" in text) is loader
    assert "model on xla" in _run(script, "PJRT_DEVICE=CPU", args=args)


@pytest.mark.runtime
@pytest.mark.parametrize(
    ("name", "args"), [("gpu_flag.py", ()), ("siamese_accel.py", ("--steps", "1"))]
)
def test_the_ported_script_still_runs_where_torch_xla_is_absent(
    project: Path, name: str, args: tuple[str, ...]
) -> None:
    # The ladder keeps its CUDA and CPU path, and the loader is wrapped only where the
    # guard found torch_xla: without it, the script runs as it did.
    script = _port(project, name, "--unsafe-fixes")
    (project / "sitecustomize.py").write_text(WITHOUT_TORCH_XLA, encoding="utf-8")
    assert "model on cpu" in _run(script, f"PYTHONPATH={project}", args=args)


def test_safe_fixes_leave_an_accelerator_ladder_script_alone(project: Path) -> None:
    # `torch.accelerator` picks the CPU on an XLA host: wrapping the loaders (and importing
    # torch_xla for it) would move the batches but not the model, and fail without
    # torch_xla. Safe fixes wait for the ladder's fix; the unsafe ones bring it along.
    script = _port(project, "siamese_accel.py")
    assert script.read_bytes() == (PORTS / "siamese_accel.py").read_bytes()
    ported = _port(project, "siamese_accel.py", "--unsafe-fixes").read_text(encoding="utf-8")
    assert (
        'device = torch.device("xla") if XLA_AVAILABLE else '
        "torch.accelerator.current_accelerator() if use_accel else"
    ) in ported
    assert "pl.MpDeviceLoader(train_loader, torch_xla.device()) if XLA_AVAILABLE" in ported


@pytest.mark.runtime
def test_torch_accelerator_does_not_see_the_xla_device(project: Path) -> None:
    # What XLA305's docs say of `torch.accelerator` ladders, measured again: with
    # torch_xla imported on an XLA host, they pick the CPU.
    probe = project / "probe.py"
    probe.write_text(
        "import torch\nimport torch_xla\n\nprint(torch_xla.device().type, "
        "torch.accelerator.is_available(), torch.accelerator.device_count())\n",
        encoding="utf-8",
    )
    assert _run(probe, "PJRT_DEVICE=CPU").split() == ["xla", "False", "0"]


@pytest.mark.parametrize(
    "source",
    [
        # Lightning-style accelerator names read "cuda" but are not devices.
        'accelerator = "cuda" if torch.cuda.is_available() else "cpu"\n',
        "def backend():\n"
        '    if torch.cuda.is_available():\n        return "cuda"\n    return "cpu"\n',
        'def f(flags):\n    if torch.cuda.is_available():\n        flags.accelerator = "cuda"\n',
        'print("cuda" if torch.cuda.is_available() else "cpu")\n',
    ],
)
def test_ladder_of_names_that_are_not_devices_gets_no_fix(source: str) -> None:
    [finding] = _findings("import torch\n" + source, "XLA305").values()
    assert finding.fix is None


@pytest.mark.parametrize(
    "source",
    [
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
        'x = x.to("cuda" if torch.cuda.is_available() else "cpu")\n',
        'x = torch.ones(2, device="cuda" if torch.cuda.is_available() else "cpu")\n',
        'def run(device="cuda" if torch.cuda.is_available() else "cpu"):\n    pass\n',
        "def get_device():\n"
        '    if torch.cuda.is_available():\n        return "cuda"\n    return "cpu"\n',
        "def f(flags):\n"
        '    if torch.cuda.is_available():\n        flags.x = torch.device("cuda")\n',
    ],
)
def test_ladder_in_a_device_position_gets_the_fix(source: str) -> None:
    [finding] = _findings("import torch\n" + source, "XLA305").values()
    assert finding.fix is not None


def test_save_fix_waits_where_torch_xla_is_optional() -> None:
    # After the ladder fix the file imports torch_xla only if it is there: `xm.save` would
    # make it a requirement, so XLA501 keeps its finding without a fix.
    source = """\
import torch

try:
    import torch_xla

    XLA_AVAILABLE = True
except ImportError:
    XLA_AVAILABLE = False

device = torch.device("xla") if XLA_AVAILABLE else torch.device("cpu")
model = torch.nn.Linear(2, 2).to(device)
torch.save(model.state_dict(), "model.pt")
"""
    [finding] = lint_source(source, "script.py", [all_rules()["XLA501"]]).diagnostics
    assert finding.fix is None
    assert _fixed(source, "XLA501") == source


def test_barriers_wait_for_the_ladder_guard_and_then_stay_behind_it() -> None:
    # Written in the same round as the ladder fix, the barrier would call torch_xla where
    # the guarded import left it undefined (NameError without torch_xla).
    source = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in range(3):
    loss = model(torch.ones(2, device=device)).sum()
    loss.backward()
    optimizer.step()
"""
    safe = _fixed(source, "XLA305", "XLA401", unsafe=False)
    assert safe == source  # the barrier waits for the device choice's XLA branch
    result = _fixed(source, "XLA305", "XLA401")
    assert "    if XLA_AVAILABLE:\n        torch_xla.sync()\n" in result
    assert result.count("import torch_xla\n") == 1
