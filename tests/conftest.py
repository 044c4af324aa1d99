"""Shared helpers for the product-surface tests (CLI, config, discovery, output, noqa).

Only rule XLA101 is guaranteed to exist, and more rules land all the time: tests whose
expected output must stay put select it explicitly (`SELECT`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from xlalint.cli import main

ROOT = Path(__file__).resolve().parent.parent
SELECT = ("--select", "XLA101")

# One XLA101 finding, at 8:18-8:29, with an (unsafe) fix: `loss.item()` -> `loss.detach()`.
BAD = """\
import torch


def train(model, loader):
    total = 0.0
    for x, y in loader:
        loss = model(x)
        total += loss.item()
    return total
"""
BAD_ROW, BAD_COL, BAD_END_COL = 8, 18, 29
# One XLA101 finding at 6:15-6:26 that has no fix (the value is printed, not accumulated).
NO_FIX = """\
import torch


for x, y in loader:
    loss = model(x)
    print(loss.item())
"""
CLEAN = """\
import torch


def double(x):
    return x * 2
"""
ITEM_MESSAGE = "`.item()` reads a tensor on the host every step, forcing a graph execution"


@dataclass
class Run:
    """What a command printed and how it exited."""

    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error: ")]

    def findings(self) -> list[tuple[str, int, int, str]]:
        """(filename, row, column, code) of each finding; needs `--output-format json`.
        Entries for files that could not be linted (`code` null) are not findings."""
        return [
            (d["filename"], d["location"]["row"], d["location"]["column"], d["code"])
            for d in self.json()
            if d["code"] is not None
        ]


def run_cli(*args: str, env: Mapping[str, str | None] | None = None) -> Run:
    """`xlalint ARGS` in this process. A crash (anything but a clean exit) fails the test."""
    result = CliRunner().invoke(main, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        details = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        pytest.fail(f"xlalint {' '.join(args)} crashed:\n{details}")
    return Run(result.exit_code, result.stdout, result.stderr)


def run_subprocess(
    command: list[str], *args: str, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XLALINT_OUTPUT_FORMAT"}
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=env,
    )


def console_script() -> Path:
    """The `xlalint` console script installed beside the running interpreter."""
    return Path(sys.executable).with_name("xlalint")


def write(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create `files` (relative path -> text or bytes) under `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")


@pytest.fixture(autouse=True)
def _no_format_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`XLALINT_OUTPUT_FORMAT` in the developer's shell must not change what tests see."""
    monkeypatch.delenv("XLALINT_OUTPUT_FORMAT", raising=False)


@pytest.fixture(autouse=True)
def _no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests lint fresh each time and leave no cache folder behind; test_cache.py opts in."""
    monkeypatch.setenv("XLALINT_NO_CACHE", "1")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder, made the current directory, so paths in the output are relative."""
    folder = tmp_path / "project"
    folder.mkdir()
    for parent in folder.parents:
        stray = [parent / "xlalint.toml", parent / "pyproject.toml"]
        for path in stray:
            if path.is_file() and (path.name == "xlalint.toml" or "xlalint" in path.read_text()):
                pytest.fail(f"{path} would be picked up as the tests' config")
    monkeypatch.chdir(folder)
    yield folder
