"""`xlalint profile`: run a user's script on the XLA device and tie its costs to source lines.

The script runs once, in a child process, with torch_xla's debug analysis written to a
file. Every compilation and execution is attributed to the line of the user's code that
triggered it; the totals (executions, host transfers, compiles, CPU fallbacks) come from
torch_xla's metrics. The files those lines live in are then linted, so each static finding
can be shown with what it cost at runtime, and each costly line that no rule explains is
listed too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xlalint.api import check_paths
from xlalint.config import find_settings
from xlalint.diagnostics import Diagnostic
from xlalint.harness import debug_log
from xlalint.harness.runner import child_environment


class ScriptCommandError(ValueError):
    """The command after `--` is not `python SCRIPT ...` or `python -m MODULE ...`."""


@dataclass
class LineCost:
    file: str
    line: int
    executions: int = 0
    host_reads: int = 0
    compiles: int = 0
    causes: Counter[str] = field(default_factory=Counter)

    @property
    def costly(self) -> bool:
        """Worth a look: it reads values on the host, or compiles more than once."""
        return self.host_reads > 0 or self.compiles > 1


@dataclass
class Confirmation:
    finding: Diagnostic
    cost: LineCost | None


@dataclass
class Profile:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    totals: dict[str, Any]
    lines: list[LineCost]
    findings: list[Confirmation]
    unexplained: list[LineCost]

    @property
    def confirmed(self) -> list[Confirmation]:
        return [c for c in self.findings if c.cost is not None]

    def to_json(self) -> dict[str, Any]:
        def line_json(cost: LineCost) -> dict[str, Any]:
            return {
                "file": cost.file, "line": cost.line, "executions": cost.executions,
                "host_reads": cost.host_reads, "compiles": cost.compiles,
                "causes": dict(cost.causes),
            }  # fmt: skip

        return {
            "command": self.command,
            "returncode": self.returncode,
            "totals": self.totals,
            "lines": [line_json(c) for c in self.lines],
            "findings": [
                {
                    "code": c.finding.code,
                    "file": c.finding.filename,
                    "line": c.finding.start.row,
                    "message": c.finding.message,
                    "confirmed": c.cost is not None,
                    "runtime": line_json(c.cost) if c.cost else None,
                }
                for c in self.findings
            ],
            "unexplained": [line_json(c) for c in self.unexplained],
        }


def script_arguments(command: Sequence[str], cwd: Path) -> tuple[list[str], Path | None]:
    """The child's arguments for `python SCRIPT ARGS` / `python -m MODULE ARGS`, and the script."""
    if not command or not Path(command[0]).name.startswith("python"):
        raise ScriptCommandError(
            "give the script as `python SCRIPT [ARGS...]` or `python -m MODULE [ARGS...]`"
        )
    rest = list(command[1:])
    if rest[:1] == ["-m"] and len(rest) >= 2:
        return rest, None
    if not rest or rest[0].startswith("-"):
        raise ScriptCommandError(f"no script to run in `{' '.join(command)}`")
    script = cwd / rest[0]
    if not script.is_file():
        raise ScriptCommandError(f"{rest[0]}: no such file")
    return rest, script


def _line_costs(events: list[debug_log.Event]) -> list[LineCost]:
    costs: dict[tuple[str, int], LineCost] = {}
    for event in events:
        if event.file is None or event.line is None:
            continue
        cost = costs.setdefault((event.file, event.line), LineCost(event.file, event.line))
        if event.kind == "compile":
            cost.compiles += 1
        else:
            cost.executions += 1
            cost.host_reads += event.host_read
            cost.causes[event.cause] += 1
    return sorted(costs.values(), key=lambda c: (c.file, c.line))


def _lint(files: set[str], cwd: Path) -> list[Diagnostic]:
    """The static findings in `files`, under the user's own config (selection, noqa...)."""
    if not files:
        return []
    settings = find_settings(cwd)
    return check_paths([Path(f) for f in sorted(files)], settings, jobs=1).diagnostics


def _relative(name: str, cwd: Path) -> str:
    path = Path(name).resolve()
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)


def profile(
    command: Sequence[str], device: str = "auto", cwd: Path | None = None, timeout: float = 3600
) -> Profile:
    cwd = (cwd or Path.cwd()).resolve()
    arguments, script = script_arguments(command, cwd)
    roots = {cwd} | ({script.resolve().parent} if script else set())
    with tempfile.TemporaryDirectory(prefix="xlalint-profile-") as folder:
        log, out = Path(folder) / "debug.txt", Path(folder) / "metrics.json"
        env = child_environment(device, {"PT_XLA_DEBUG_LEVEL": "2", "PT_XLA_DEBUG_FILE": str(log)})
        done = subprocess.run(
            [sys.executable, "-m", "xlalint.harness.script_child", str(out), *arguments],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        totals = _read_json(out)
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    events = debug_log.parse(text.splitlines(), debug_log.user_file_filter(roots, cwd))
    lines = _line_costs(events)
    for cost in lines:
        cost.file = _relative(str(cwd / cost.file), cwd)
    files = {str(cwd / c.file) for c in lines} | ({str(script.resolve())} if script else set())
    findings = _lint({f for f in files if f.endswith(".py")}, cwd)
    by_line = {(c.file, c.line): c for c in lines}
    confirmations = []
    explained: set[tuple[str, int]] = set()
    for finding in findings:
        name = _relative(finding.filename, cwd)
        finding = replace(finding, filename=name)
        rows = range(finding.start.row, finding.end.row + 1)
        hits = [by_line[name, row] for row in rows if (name, row) in by_line]
        cost = hits[0] if hits else None
        explained |= {(name, row) for row in rows}
        confirmations.append(Confirmation(finding, cost))
    unexplained = [c for c in lines if c.costly and (c.file, c.line) not in explained]
    return Profile(
        list(command), done.returncode, done.stdout, done.stderr, totals, lines,
        confirmations, unexplained,
    )  # fmt: skip


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
