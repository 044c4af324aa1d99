"""Child processes on the XLA device: one program per fresh process.

torch_xla keeps compiled graphs in memory for the life of a process, and reads its
environment once, at import: so every measured variant gets a process of its own, with
PJRT_DEVICE and friends set before it starts.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNTIME_PACKAGES = ("torch", "torch_xla")
INSTALL_HINT = (
    "the runtime harness needs torch and torch_xla: pip install 'xlalint[runtime]' "
    "(torch==2.9.0 and torch-xla==2.9.0)"
)


class RuntimeUnavailable(Exception):
    """torch/torch_xla are not installed where xlalint runs."""


def require_runtime() -> None:
    missing = [name for name in RUNTIME_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeUnavailable(f"{', '.join(missing)} not installed; {INSTALL_HINT}")


def pjrt_device(device: str) -> str:
    """`auto` is the TPU where one is attached (its /dev/accel* or vfio nodes), else the CPU."""
    if device == "auto":
        return "TPU" if glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*") else "CPU"
    return device.upper()


def child_environment(device: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PT_XLA_")}
    env["PJRT_DEVICE"] = pjrt_device(device)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep XLA's C++ logging out of the output
    env.update(extra or {})
    return env


def last_line(output: str, default: str) -> str:
    """The last line a process wrote (its error, for a Python traceback), or `default`."""
    lines = output.strip().splitlines()
    return lines[-1] if lines else default


@dataclass
class ChildResult:
    """What one run of a case measured, or how it failed."""

    ok: bool
    outputs: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    line: int | None = None

    def cost(self, name: str) -> int:
        if name == "errors":
            return 0 if self.ok else 1
        if name == "cpu_fallbacks":
            return sum(self.metrics.get("fallbacks", {}).values())
        return int(self.metrics.get(name, 0))

    def to_json(self) -> dict[str, Any]:
        if not self.ok:
            return {"ok": False, "error": self.error, "line": self.line}
        return {"ok": True, "metrics": self.metrics}


def run_case(path: Path, device: str, timeout: float = 300) -> ChildResult:
    """Measure the case at `path` in a fresh interpreter (this one's, with torch_xla)."""
    command = [sys.executable, "-W", "always", "-m", "xlalint.harness.child", str(path)]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_environment(device),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ChildResult(ok=False, error=f"timed out after {timeout:.0f} s")
    try:
        data = json.loads(last_line(done.stdout, ""))
    except json.JSONDecodeError:
        tail = last_line(done.stderr, f"exit code {done.returncode}")
        return ChildResult(ok=False, error=f"the child process died: {tail}")
    return ChildResult(
        ok=data["ok"],
        outputs=data.get("outputs"),
        metrics=data.get("metrics", {}),
        seconds=data.get("seconds", 0.0),
        error=data.get("error"),
        line=data.get("line"),
    )
