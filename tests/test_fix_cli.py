"""`xlalint fix` and `xlalint check --fix`, end to end.

The shipped rule XLA101 (unsafe: `total += loss.item()` in a loop -> `total += loss.detach()`)
drives the console-script runs; test-only rules (tests/fix_rules.py), registered for the
duration of a test, drive in-process runs that need other kinds of fixes.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fix_rules import (
    BrokenFix,
    CudaToXla,
    MarkStepAfterStep,
    MarkStepToSync,
    UnsafeNonzero,
    registered,
)

from xlalint import writer
from xlalint.cli import main

TRAIN = """\
import torch


def train(model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total
"""
TRAIN_FIXED = TRAIN.replace("total += loss.item()", "total += loss.detach()")
# XLA101 without a fix: the value is printed, not accumulated.
REPORT = """\
import torch

for x in loader:
    loss = model(x)
    print(loss.item())
"""
CLEAN = "import torch\n\n\ndef f(x):\n    return x + 1\n"
ITEM_MESSAGE = "XLA101 `.item()` reads a tensor on the host every step"


def xlalint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("xlalint")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "xlalint"]
    return subprocess.run(
        [*command, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def snapshot(folder: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Every file's inode, mtime, mode and bytes."""
    result = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            info = path.stat()
            result[str(path.relative_to(folder))] = (
                info.st_ino,
                info.st_mtime_ns,
                stat.S_IMODE(info.st_mode),
                path.read_bytes(),
            )
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "report.py").write_text(REPORT)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in-process commands from tmp_path, so file names are relative."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def test_rules() -> Iterator[None]:
    with registered(CudaToXla, UnsafeNonzero, MarkStepAfterStep, BrokenFix):
        yield


# -- `xlalint fix`: a diff, nothing written --------------------------------------------------


def test_fix_prints_a_diff_and_writes_nothing(project: Path) -> None:
    before = snapshot(project)
    result = xlalint("fix", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    assert result.stdout == (
        "--- a/train.py\n"
        "+++ b/train.py\n"
        "@@ -7,5 +7,5 @@\n"
        "         loss = model(x, y)\n"
        "         loss.backward()\n"
        "         optimizer.step()\n"
        "-        total += loss.item()\n"
        "+        total += loss.detach()\n"
        "     return total\n"
    )
    assert result.stderr == "Would fix 1 finding in 1 file (XLA101 x1).\n"
    assert snapshot(project) == before


def test_fix_exits_0_when_nothing_would_change(project: Path) -> None:
    (project / "train.py").unlink()
    before = snapshot(project)
    result = xlalint("fix", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert snapshot(project) == before


def test_fix_without_unsafe_fixes_shows_no_unsafe_fix(project: Path) -> None:
    before = snapshot(project)
    result = xlalint("fix", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert snapshot(project) == before


def patch_applies(diff: bytes, folder: Path, expected: dict[str, bytes]) -> None:
    if shutil.which("patch") is None:
        pytest.skip("needs the `patch` program")
    result = subprocess.run(
        ["patch", "-p1", "--forward", "--batch"],
        input=diff,
        cwd=folder,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr).decode()
    for name, content in expected.items():
        assert (folder / name).read_bytes() == content, name


def test_the_diff_applies_and_gives_what_apply_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, test_rules: None
) -> None:
    sources = {
        "a.py": '"""Doc."""\nimport os\n\nx = t.cuda()\n',
        "b.py": "for b in loader:\n    b = b.cuda()\n    optimizer.step()",  # no final newline
        "c.py": "x = t.cuda()",  # no newline at all
        "d.py": "y = 1\n",  # nothing to fix
        "e.py": "import os\r\n\r\nx = t.cuda()\r\n",
    }
    for copy in ("diffed", "applied"):
        (tmp_path / copy).mkdir()
        for name, text in sources.items():
            (tmp_path / copy / name).write_text(text, newline="")
    monkeypatch.chdir(tmp_path / "diffed")
    shown = invoke("fix", "--select", "XLA901,XLA903", ".")
    assert shown.exit_code == 1
    assert shown.stdout.count("\\ No newline at end of file\n") == 4  # old and new, b and c
    monkeypatch.chdir(tmp_path / "applied")
    applied = invoke("fix", "--apply", "--select", "XLA901,XLA903", ".")
    assert applied.exit_code == 0, applied.output
    written = {name: (tmp_path / "applied" / name).read_bytes() for name in sources}
    assert written["b.py"] == (
        b"import torch_xla\nimport torch_xla.core.xla_model as xm\nfor b in loader:\n"
        b"    b = b.to(torch_xla.device())\n    optimizer.step()\n    xm.mark_step()"
    )
    assert (
        written["e.py"]
        == b"import os\r\n\r\nimport torch_xla\r\n\r\nx = t.to(torch_xla.device())\r\n"
    )
    # The bytes: `Result.stdout` turns CRLF into LF.
    patch_applies(shown.stdout_bytes, tmp_path / "diffed", written)


# -- `xlalint fix --apply` ------------------------------------------------------------------


def test_apply_writes_and_exits_0_when_nothing_remains(project: Path) -> None:
    (project / "report.py").unlink()
    clean = snapshot(project)["clean.py"]
    result = xlalint("fix", "--apply", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fixed 1 finding in 1 file (XLA101 x1).\n"
    assert (project / "train.py").read_text() == TRAIN_FIXED
    # The file without findings was not rewritten: same inode, mtime and bytes.
    assert snapshot(project)["clean.py"] == clean


def test_apply_reports_what_remains_and_exits_1(project: Path) -> None:
    result = xlalint("fix", "--apply", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"report.py:5:11: {ITEM_MESSAGE}")
    assert lines[1] == "Fixed 1 finding in 1 file (XLA101 x1)."
    assert lines[2] == "1 finding remains (no fix available)."
    assert len(lines) == 3
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert (project / "report.py").read_text() == REPORT


def test_apply_without_unsafe_fixes_leaves_unsafe_fixes(project: Path) -> None:
    before = snapshot(project)
    result = xlalint("fix", "--apply", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["report.py", "train.py"]
    assert lines[2] == "No fixes applied."
    assert lines[3].startswith("2 findings remain") and "--unsafe-fixes" in lines[3]
    assert snapshot(project) == before


def test_apply_quiet_prints_only_the_remaining_findings(project: Path) -> None:
    result = xlalint(
        "fix", "--apply", "-q", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project
    )
    assert result.returncode == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["report.py"]


def test_apply_twice_changes_nothing_the_second_time(project: Path) -> None:
    xlalint("fix", "--apply", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    after_first = snapshot(project)
    again = xlalint("fix", "--apply", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert "No fixes applied." in again.stdout.splitlines()
    assert snapshot(project) == after_first


def test_select_and_ignore(inside: Path, test_rules: None) -> None:
    text = "idx = m.nonzero()\nx = t.cuda()\n"
    for name in ("one.py", "two.py", "three.py"):
        (inside / name).write_text(text)
    result = invoke("fix", "--apply", "--unsafe-fixes", "--select", "XLA901", "one.py")
    assert result.exit_code == 0, result.output
    assert (inside / "one.py").read_text() == (
        "import torch_xla\nidx = m.nonzero()\nx = t.to(torch_xla.device())\n"
    )
    result = invoke(
        "fix", "--apply", "--unsafe-fixes", "--select", "XLA90", "--ignore", "XLA901", "two.py"
    )
    assert result.exit_code == 0, result.output
    assert (inside / "two.py").read_text() == (
        "idx = m.nonzero_static(size=m.numel())\nx = t.cuda()\n"
    )
    result = invoke(
        "fix",
        "--apply",
        "--unsafe-fixes",
        "--select",
        "XLA901,XLA902",
        "--ignore",
        "XLA9",
        "three.py",
    )
    assert result.exit_code == 0, result.output
    assert (inside / "three.py").read_text() == text


def test_unknown_rule_code_is_a_usage_error(project: Path) -> None:
    before = snapshot(project)
    result = xlalint("fix", "--apply", "--select", "XLA999", ".", cwd=project)
    assert result.returncode == 2
    assert "XLA999" in result.stderr
    assert snapshot(project) == before


def test_missing_path_exits_2(project: Path) -> None:
    result = xlalint(
        "fix", "--apply", "--unsafe-fixes", "--select", "XLA101", "nope.py", cwd=project
    )
    assert result.returncode == 2
    assert "error: nope.py: no such file or directory" in result.stderr


# -- files that cannot be fixed ---------------------------------------------------------------


def test_syntax_error_is_reported_and_the_file_untouched(project: Path) -> None:
    (project / "bad.py").write_text("import torch\nfor x in y:\n    total += x.item(\n")
    bad = snapshot(project)["bad.py"]
    for extra in ([], ["--apply"]):
        result = xlalint("fix", *extra, "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
        assert result.returncode == 1
        [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert error.startswith("error: bad.py: syntax error at ")
        assert snapshot(project)["bad.py"] == bad
    assert (project / "train.py").read_text() == TRAIN_FIXED  # the others were fixed


def test_fix_that_would_not_parse_is_dropped_with_a_warning(inside: Path, test_rules: None) -> None:
    (inside / "t.py").write_text("import torch\nx.broken()\ny = t.cuda()\n")
    shown = invoke("fix", "--select", "XLA901,XLA904", "t.py")
    warning = "warning: t.py: fix for XLA904 at 3:1 dropped: its result would not parse\n"
    assert shown.stderr.startswith(warning)
    assert shown.stderr.count("warning:") == 1
    assert "+y = t.to(torch_xla.device())\n" in shown.stdout
    assert "broken(((" not in shown.stdout

    result = invoke("fix", "--apply", "--select", "XLA901,XLA904", "t.py")
    assert result.stderr == warning
    assert result.exit_code == 1  # XLA904 remains
    assert (inside / "t.py").read_text() == (
        "import torch\nimport torch_xla\nx.broken()\ny = t.to(torch_xla.device())\n"
    )
    assert result.stdout.splitlines()[0].startswith("t.py:3:1: XLA904 ")


def test_read_only_file_is_reported_and_the_others_are_fixed(
    inside: Path, test_rules: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.py", "ro.py", "z.py"):
        (inside / name).write_text("x = t.cuda()\n")
    (inside / "ro.py").chmod(0o444)
    real_access = os.access

    def access(path: object, mode: int) -> bool:  # what a non-root user gets
        if Path(str(path)).name == "ro.py" and mode == os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.os, "access", access)
    result = invoke("fix", "--apply", "--select", "XLA901", ".")
    assert result.exit_code == 1
    assert result.stderr == "error: ro.py: read-only; not written\n"
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "ro.py:1:5: XLA901 [*] `.cuda()` hard-codes a CUDA device",
        "Fixed 2 findings in 2 files (XLA901 x2).",
    ]
    assert lines[2] == "1 finding remains (no fix, or unsafe: see --unsafe-fixes)."
    assert len(lines) == 3
    assert (inside / "ro.py").read_text() == "x = t.cuda()\n"
    for name in ("a.py", "z.py"):
        assert (inside / name).read_text() == "import torch_xla\nx = t.to(torch_xla.device())\n"


def test_read_only_file_for_real(project: Path) -> None:
    (project / "train.py").chmod(0o444)
    result = xlalint(
        "fix", "--apply", "--unsafe-fixes", "--select", "XLA101", "train.py", cwd=project
    )
    if os.access(project / "train.py", os.W_OK):
        # Running as root: the OS lets us write it, so xlalint does, keeping the mode.
        assert result.returncode == 0, result.stderr
        assert (project / "train.py").read_text() == TRAIN_FIXED
    else:
        assert result.returncode == 1
        assert "error: train.py: read-only; not written" in result.stderr
        assert (project / "train.py").read_text() == TRAIN
    assert stat.S_IMODE((project / "train.py").stat().st_mode) == 0o444


def test_mode_is_kept(project: Path) -> None:
    (project / "train.py").chmod(0o755)
    result = xlalint("fix", "--apply", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert "Fixed 1 finding" in result.stdout
    assert stat.S_IMODE((project / "train.py").stat().st_mode) == 0o755


def test_crlf_and_bom_files_through_the_cli(project: Path) -> None:
    raw = b"\xef\xbb\xbf" + TRAIN.replace("\n", "\r\n").encode()
    (project / "train.py").write_bytes(raw)
    xlalint("fix", "--apply", "--unsafe-fixes", "--select", "XLA101", "train.py", cwd=project)
    assert (project / "train.py").read_bytes() == raw.replace(b".item()", b".detach()")


# -- `xlalint check --fix` ------------------------------------------------------------------


def test_check_fix_applies_then_reports_what_remains_like_check(project: Path) -> None:
    fixed = xlalint("check", "--fix", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert fixed.returncode == 1
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert "Fixed 1 finding." in fixed.stdout.splitlines()
    # What it reports is what a plain `check` now reports, plus the "Fixed" line.
    after = xlalint("check", "--select", "XLA101", ".", cwd=project)
    assert after.returncode == 1
    assert fixed.stdout.replace("Fixed 1 finding.\n", "") == after.stdout
    assert "report.py:5:11: XLA101" in after.stdout
    assert "train.py" not in after.stdout


def test_check_fix_exits_0_when_everything_is_fixed(project: Path) -> None:
    (project / "report.py").unlink()
    result = xlalint("check", "--fix", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-2:] == ["Fixed 1 finding.", "All checks passed!"]
    assert (project / "train.py").read_text() == TRAIN_FIXED


def test_check_fix_without_unsafe_fixes_applies_only_safe_ones(project: Path) -> None:
    before = snapshot(project)
    result = xlalint("check", "--fix", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "No fixes applied." in lines
    assert lines[-1] == "No safe fixes; 1 with `xlalint fix --apply --unsafe-fixes`."
    assert "train.py:10:18: XLA101" in result.stdout
    assert snapshot(project) == before


def test_check_without_fix_writes_nothing(project: Path) -> None:
    before = snapshot(project)
    result = xlalint("check", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 1
    assert snapshot(project) == before


def test_check_fix_with_json_output_prints_only_json(project: Path) -> None:
    result = xlalint(
        "check",
        "--fix",
        "--unsafe-fixes",
        "--select",
        "XLA101",
        "--output-format",
        "json",
        ".",
        cwd=project,
    )
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    assert [(f["filename"], f["code"]) for f in findings] == [("report.py", "XLA101")]
    assert (project / "train.py").read_text() == TRAIN_FIXED


def test_check_fix_warns_about_dropped_fixes(inside: Path, test_rules: None) -> None:
    (inside / "t.py").write_text("x.broken()\ny = t.cuda()\n")
    result = invoke(
        "check", "--fix", "--select", "XLA901,XLA904", "--output-format", "concise", "t.py"
    )
    assert result.stderr == (
        "warning: t.py: fix for XLA904 at 2:1 dropped: its result would not parse\n"
    )
    assert result.stdout.splitlines()[0].startswith("t.py:2:1: XLA904 [*] ")
    assert "Fixed 1 finding." in result.stdout.splitlines()
    assert (
        inside / "t.py"
    ).read_text() == "import torch_xla\nx.broken()\ny = t.to(torch_xla.device())\n"


def test_check_fix_reports_a_file_it_could_not_write(
    inside: Path, test_rules: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (inside / "ro.py").write_text("x = t.cuda()\n")
    (inside / "ok.py").write_text("x = t.cuda()\n")
    real_access = os.access

    def access(path: object, mode: int) -> bool:
        if Path(str(path)).name == "ro.py" and mode == os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.os, "access", access)
    result = invoke("check", "--fix", "--select", "XLA901", "--output-format", "concise", ".")
    assert result.exit_code == 1
    assert result.stderr == "error: ro.py: read-only; not written\n"
    assert result.stdout.splitlines()[0] == (
        "ro.py:1:5: XLA901 [*] `.cuda()` hard-codes a CUDA device"
    )
    assert "Fixed 1 finding." in result.stdout.splitlines()
    assert (inside / "ok.py").read_text() == "import torch_xla\nx = t.to(torch_xla.device())\n"


def test_check_fix_does_not_report_a_syntax_error_twice(project: Path) -> None:
    (project / "bad.py").write_text("total += loss.item(\n")
    result = xlalint("check", "--fix", "--unsafe-fixes", "--select", "XLA101", ".", cwd=project)
    assert result.returncode == 1
    [line] = [line for line in result.stderr.splitlines() if "bad.py" in line]
    assert line.startswith("error: bad.py: syntax error at ")
    assert (project / "train.py").read_text() == TRAIN_FIXED


# -- parallel runs --------------------------------------------------------------------------


def test_parallel_fix_equals_serial(tmp_path: Path) -> None:
    variants = [TRAIN, REPORT, CLEAN, TRAIN.replace("\n", "\r\n"), "t += x.item(\n"]
    runs = {}
    for jobs in ("1", "2"):
        folder = tmp_path / f"j{jobs}"
        (folder / "pkg").mkdir(parents=True)
        for i in range(24):
            (folder / "pkg" / f"m{i:02}.py").write_text(variants[i % len(variants)], newline="")
        diff = xlalint("fix", "-j", jobs, "--unsafe-fixes", "--select", "XLA101", ".", cwd=folder)
        applied = xlalint(
            "fix", "--apply", "-j", jobs, "--unsafe-fixes", "--select", "XLA101", ".", cwd=folder
        )
        files = {name: entry[3] for name, entry in snapshot(folder).items()}
        runs[jobs] = (
            diff.returncode,
            diff.stdout,
            diff.stderr,
            applied.returncode,
            applied.stdout,
            applied.stderr,
            files,
        )
    assert runs["2"] == runs["1"]
    returncode, stdout, stderr, *_ = runs["1"]
    assert returncode == 1
    assert stdout.count("+++ b/") == 10  # the TRAIN copies, LF and CRLF
    assert stderr.count("syntax error") == 4
    files = runs["1"][-1]
    assert files["pkg/m00.py"] == TRAIN_FIXED.encode()
    assert files["pkg/m03.py"] == TRAIN_FIXED.replace("\n", "\r\n").encode()


# -- what the engine does, through the CLI ----------------------------------------------------


def test_apply_removes_an_import_the_fix_made_unused(inside: Path) -> None:
    source = (
        "import torch\n"
        "import torch_xla.core.xla_model as xm  # the old API\n"
        "import torch_xla.debug.metrics as met  # unused, and left alone\n"
        "\n"
        "for b in loader:\n"
        "    xm.mark_step()\n"
    )
    (inside / "t.py").write_text(source)
    with registered(MarkStepToSync):
        shown = invoke("fix", "--select", "XLA914", "t.py")
        assert shown.exit_code == 1
        assert "-import torch_xla.core.xla_model as xm  # the old API\n" in shown.stdout
        result = invoke("fix", "--apply", "--select", "XLA914", "t.py")
    assert result.exit_code == 0, result.output
    assert (inside / "t.py").read_text() == (
        "import torch\n"
        "import torch_xla\n"
        "import torch_xla.debug.metrics as met  # unused, and left alone\n"
        "\n"
        "for b in loader:\n"
        "    torch_xla.sync()\n"
    )


def test_config_selection_and_per_file_ignores_apply_to_fix(inside: Path) -> None:
    (inside / "xlalint.toml").write_text(
        'select = ["XLA90"]\nignore = ["XLA902"]\n[per-file-ignores]\n"legacy.py" = ["XLA901"]\n'
    )
    text = "idx = m.nonzero()\nx = t.cuda()\n"
    for name in ("train.py", "legacy.py"):
        (inside / name).write_text(text)
    with registered(CudaToXla, UnsafeNonzero):
        result = invoke("fix", "--apply", "--unsafe-fixes", ".")
        assert result.exit_code == 0, result.output
        assert (inside / "train.py").read_text() == (
            "import torch_xla\nidx = m.nonzero()\nx = t.to(torch_xla.device())\n"
        )
        assert (inside / "legacy.py").read_text() == text
        # The command line adds to the config, as in `check`.
        (inside / "train.py").write_text(text)
        result = invoke("fix", "--apply", "--ignore", "XLA901", "train.py")
        assert result.exit_code == 0, result.output
        assert (inside / "train.py").read_text() == text


def test_the_safe_clipping_fix_is_applied_without_unsafe_fixes(project: Path) -> None:
    (project / "clip.py").write_text(
        "import torch\n\n\ndef train(params, loader, max_norm):\n    for x in loader:\n"
        "        total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))\n"
        "        clip_coef = max_norm / (total_norm + 1e-6)\n"
        "        if clip_coef < 1:\n"
        "            for p in params:\n"
        "                p.grad.detach().mul_(clip_coef)\n"
    )
    result = xlalint("fix", "--apply", "--select", "XLA105", "clip.py", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "Fixed 1 finding in 1 file (XLA105 x1).\n"
    assert (
        (project / "clip.py")
        .read_text()
        .endswith(
            "        clip_coef = max_norm / (total_norm + 1e-6)\n"
            "        for p in params:\n"
            "            p.grad.detach().mul_(torch.where(clip_coef < 1, clip_coef, 1.0))\n"
        )
    )


LIGHTNING = """\
import lightning.pytorch as pl
import torch_xla
from torch.utils.data import DataLoader


class Model(pl.LightningModule):
    pass


def train(model, dataset, optimizer):
    device = torch_xla.device()
    for x, y in DataLoader(dataset, batch_size=8):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
"""


def test_a_fix_never_shadows_a_name_the_file_binds(inside: Path) -> None:
    """XLA403's loader wrapper needs torch_xla's parallel_loader, usually imported as `pl`:
    next to Lightning's `pl` it is imported under a free alias, and the fix is applied."""
    (inside / "lightning_train.py").write_text(LIGHTNING)
    result = invoke("fix", "--apply", "--select", "XLA403", "lightning_train.py")
    assert result.exit_code == 0, result.output
    fixed = (inside / "lightning_train.py").read_text()
    assert fixed == LIGHTNING.replace(
        "import torch_xla\n",
        "import torch_xla\nimport torch_xla.distributed.parallel_loader as xla_pl\n",
    ).replace(
        "DataLoader(dataset, batch_size=8):",
        # Wrapped at 88 characters, ruff's and black's default line length, as they would.
        "xla_pl.MpDeviceLoader(\n"
        "        DataLoader(dataset, batch_size=8), torch_xla.device()\n"
        "    ):",
    )
    assert "class Model(pl.LightningModule)" in fixed


# -- ruff's split: --fix-only and --exit-non-zero-on-fix ------------------------------------


def test_fix_only_exits_0_when_findings_remain(project: Path) -> None:
    """REPORT has a finding without a fix: plain --apply fails on it, --fix-only does not."""
    assert invoke("fix", "--apply", "--select", "XLA101", str(project / "report.py")).exit_code == 1
    result = invoke(
        "fix", "--apply", "--fix-only", "--select", "XLA101", str(project / "report.py")
    )
    assert result.exit_code == 0
    assert "XLA101" not in result.stdout  # the remaining finding is not listed
    assert (project / "report.py").read_text() == REPORT


def test_exit_non_zero_on_fix_fails_exactly_when_a_file_changed(project: Path) -> None:
    args = ("fix", "--apply", "--unsafe-fixes", "--exit-non-zero-on-fix", "--select", "XLA101")
    assert invoke(*args, str(project / "train.py")).exit_code == 1
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert invoke(*args, str(project / "train.py")).exit_code == 0  # nothing left to change
    assert invoke(*args, "--fix-only", str(project / "report.py")).exit_code == 0


def test_the_fix_hook_fails_only_when_it_changes_a_file() -> None:
    """pre-commit's xlalint-fix hook: a report-only finding must not fail every commit."""
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert "entry: xlalint fix --apply --fix-only --exit-non-zero-on-fix --force-exclude" in hooks


def test_rewritten_lines_keep_to_the_projects_line_length(inside: Path) -> None:
    """The loader line grows to 96 characters: wrapped at 88 (the default), not at 120."""
    (inside / "lightning_train.py").write_text(LIGHTNING)
    (inside / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    assert invoke("fix", "--apply", "--select", "XLA403", "lightning_train.py").exit_code == 0
    fixed = (inside / "lightning_train.py").read_text()
    assert (
        "    for x, y in xla_pl.MpDeviceLoader(DataLoader(dataset, batch_size=8), "
        "torch_xla.device()):\n" in fixed
    )
    assert max(len(line) for line in fixed.splitlines()) <= 120
