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
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from xlalint.api import check_paths, enabled_rules
from xlalint.config import find_settings
from xlalint.diagnostics import Diagnostic
from xlalint.harness import debug_log, ir_dump
from xlalint.harness.runner import child_environment
from xlalint.registry import select_rules
from xlalint.report import plural


class ScriptCommandError(ValueError):
    """The command after `--` is not `python SCRIPT ...` or `python -m MODULE ...`."""


@dataclass(frozen=True)
class RecompileCause:
    """A recompile this line caused: a tensor it made changed shape (or op) since a graph
    that compiled earlier; `trigger` is where the barrier or read that compiled it stands."""

    change: str
    trigger: str | None
    function: str | None
    op: str = ""  # the changed node's op: `xla::device_data` is data moved to the device


@dataclass
class LineCost:
    file: str
    line: int
    executions: int = 0
    host_reads: int = 0  # device-to-host transfers made while this line ran
    compiles: int = 0
    causes: Counter[str] = field(default_factory=Counter)
    recompiles: list[RecompileCause] = field(default_factory=list)

    @property
    def costly(self) -> bool:
        """Worth a look: it reads values on the host, or makes a graph compile again. (Two
        compiles at one barrier are usually two different graphs, such as the first step's
        and the steady one; three or more with no changed tensor found are worth a look.)"""
        return self.host_reads > 0 or self.recompiled

    @property
    def recompiled(self) -> bool:
        """A tensor made here changed shape since an earlier graph, or three or more
        compiles with none found."""
        return bool(self.recompiles) or self.compiles > 2

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file, "line": self.line, "executions": self.executions,
            "host_reads": self.host_reads, "compiles": self.compiles,
            "causes": dict(self.causes),
            "recompiles": [{"change": r.change, "trigger": r.trigger} for r in self.recompiles],
        }  # fmt: skip


@dataclass(frozen=True)
class LoopGrowth:
    """The largest pending graph at the head of a loop's first iterations."""

    file: str
    line: int
    sizes: tuple[int, ...]

    @property
    def grows(self) -> bool:
        """Larger at every sampled iteration: the loop reaches no barrier."""
        iterations = self.sizes[1:]  # the first sample is taken as the loop starts
        return len(iterations) >= 2 and all(b > a for a, b in pairwise(iterations))

    def describe(self) -> str:
        shown = ", ".join(str(n) for n in self.sizes)
        return f"the graph grew every iteration ({shown} nodes)"


@dataclass
class Confirmation:
    finding: Diagnostic
    cost: LineCost | None
    growth: LoopGrowth | None = None  # for a missing barrier: the loop's graph sizes
    shared_with: tuple[str, ...] = ()  # other findings on the line: the cost is shown once

    @property
    def confirmed(self) -> bool:
        return self.cost is not None or self.growth is not None


@dataclass(frozen=True)
class Unexplained:
    """A runtime cost no finding covers, with the rule closest to it."""

    file: str
    line: int
    what: str
    closest_rule: str
    cost: LineCost | None = None


@dataclass
class Profile:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    totals: dict[str, Any]
    lines: list[LineCost]
    findings: list[Confirmation]
    unexplained: list[Unexplained]
    loops: list[LoopGrowth] = field(default_factory=list)

    @property
    def confirmed(self) -> list[Confirmation]:
        return [c for c in self.findings if c.confirmed]

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "returncode": self.returncode,
            "totals": {k: v for k, v in self.totals.items() if k not in ("lines", "loops")},
            "lines": [c.to_json() for c in self.lines],
            "loops": [
                {"file": g.file, "line": g.line, "graph_sizes": list(g.sizes), "grows": g.grows}
                for g in self.loops
            ],
            "findings": [
                {
                    "code": c.finding.code,
                    "file": c.finding.filename,
                    "line": c.finding.start.row,
                    "message": c.finding.message,
                    "confirmed": c.confirmed,
                    "runtime": c.cost.to_json() if c.cost else None,
                    "graph_sizes": list(c.growth.sizes) if c.growth else None,
                    "shared_with": list(c.shared_with),
                }
                for c in self.findings
            ],
            "unexplained": [
                {"file": u.file, "line": u.line, "what": u.what, "closest_rule": u.closest_rule}
                for u in self.unexplained
            ],
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


# Barrier rules: a loop whose graph grows each iteration confirms them.
GROWTH_RULES = ("XLA401", "XLA402")
_SUGGESTIONS = (  # what the source line shows -> the rule closest to a host read there
    (re.compile(r"\.item\(\)"), "XLA101"),
    (re.compile(r"\.(cpu|numpy|tolist)\(\)"), "XLA102"),
    (re.compile(r"\bprint\("), "XLA104"),
    (re.compile(r"^\s*(if|elif|while|assert)\b"), "XLA103"),
)


def _line_text(path: Path, line: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    return lines[line - 1] if 0 < line <= len(lines) else ""


def closest_rule(cost: LineCost, source_line: str) -> tuple[str, str]:
    """What a cost no finding explains is, and the rule closest to it."""
    if cost.recompiles:
        first = cost.recompiles[0]
        what = f"recompiles: a tensor made here changed ({first.change})"
        if first.op == "xla::device_data" and "->" in first.change and "[" in first.change:
            return what, "XLA206"  # data of a new shape moved to the device: pad it
        return what, "XLA207"  # a slice or view sized by a Python value
    if cost.host_reads:
        what = plural(cost.host_reads, "device-to-host transfer")
        for pattern, code in _SUGGESTIONS:
            if pattern.search(source_line):
                return what, code
        return what, "XLA107"
    return plural(cost.compiles, "compile"), "XLA207"


def _user_file(name: str, known: set[str]) -> str | None:
    """The user file an IR location's base name (`train.py`) stands for, if exactly one."""
    matches = [f for f in known if Path(f).name == name]
    return matches[0] if len(matches) == 1 else None


def _line_costs(
    traced: list[list[Any]],
    events: list[debug_log.Event],
    recompiled: dict[int, ir_dump.Recompile],
    cwd: Path,
) -> list[LineCost]:
    """Per-line costs: executions and transfers as traced, compiles where the graph changed."""
    costs: dict[tuple[str, int], LineCost] = {}

    def at(file: str, line: int) -> LineCost:
        name = _relative(str(cwd / file), cwd)
        return costs.setdefault((name, line), LineCost(name, line))

    for file, line, executions, _compiles, transfers in traced:
        if file:
            cost = at(file, line)
            cost.executions += executions
            cost.host_reads += transfers
    known = {str((cwd / e.file).resolve()) for e in events if e.file} | {
        str(Path(t[0]).resolve()) for t in traced if t[0]
    }
    compile_index = 0
    for event in events:
        if event.kind == "compile":
            change = recompiled.get(compile_index)
            compile_index += 1
            trigger = (
                f"{_relative(str(cwd / event.file), cwd)}:{event.line}" if event.file else None
            )
            where = _user_file(change.after.file, known) if change and change.after.file else None
            if change is not None and where is not None and change.after.line is not None:
                cost = at(where, change.after.line)
                cost.compiles += 1
                cost.recompiles.append(
                    RecompileCause(change.change, trigger, change.after.function, change.after.op)
                )
            elif event.file is not None and event.line is not None:
                at(event.file, event.line).compiles += 1
        elif event.file is not None and event.line is not None:
            at(event.file, event.line).causes[event.cause] += 1
    return sorted(costs.values(), key=lambda c: (c.file, c.line))


def _lint(files: set[str], cwd: Path) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """The static findings in `files` under the user's own config (selection, noqa...), and
    those of the rules off by default that the config neither turned on nor ignored: they
    are off because they are often wrong on unseen code, and a measured cost on their line
    settles that doubt, so the profile keeps them where it does."""
    if not files:
        return [], []
    settings = find_settings(cwd)
    paths = [Path(f) for f in sorted(files)]
    chosen = check_paths(paths, settings, jobs=1).diagnostics
    default_on = select_rules(None, ()).codes
    enabled = enabled_rules(settings).codes
    rest = select_rules(["ALL"], (), settings.ignore).without([*default_on, *enabled])
    if not rest.codes:
        return chosen, []
    doubtful = replace(settings, select=rest.codes, extend_select=())
    return chosen, check_paths(paths, doubtful, jobs=1).diagnostics


def _relative(name: str, cwd: Path) -> str:
    path = Path(name).resolve()
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)


def _recompiles(events: list[debug_log.Event], dumps: list[Path]) -> dict[int, ir_dump.Recompile]:
    order = [e.graph_hash or "" for e in events if e.kind == "compile"]
    dumped: dict[str, list[ir_dump.Node]] = {}
    for dump in dumps:
        with dump.open(encoding="utf-8", errors="replace") as lines:
            dumped.update(ir_dump.graphs(lines, set(order) - set(dumped)))
    return ir_dump.recompiles(order, dumped)


def _measured_its_cost(confirmation: Confirmation) -> bool:
    """Whether the run measured, on the finding's lines, the cost its rule names: host reads
    for a host-sync rule (XLA1xx), a recompile for a shape rule (XLA2xx). Other rules off
    by default (XLA304's dtype) name no cost a run on this device shows."""
    cost = confirmation.cost
    if cost is None:
        return False
    family = confirmation.finding.code[:4]
    if family == "XLA1":
        return cost.host_reads > 0
    if family == "XLA2":
        return cost.recompiled
    return False


def _in_order(finding: Diagnostic) -> tuple[str, int, str]:
    return (finding.filename, finding.start.row, finding.code)


def _confirm(
    findings: list[Diagnostic], lines: list[LineCost], loops: list[LoopGrowth], cwd: Path
) -> tuple[list[Confirmation], set[tuple[str, int]]]:
    """Each finding with the runtime cost of its lines; a line's cost is shown once."""
    by_line = {(c.file, c.line): c for c in lines}
    growth = {(g.file, g.line): g for g in loops if g.grows}
    confirmations = []
    explained: set[tuple[str, int]] = set()
    owners: dict[tuple[str, int], list[Confirmation]] = {}
    for finding in sorted(findings, key=_in_order):
        name = _relative(finding.filename, cwd)
        finding = replace(finding, filename=name)
        rows = range(finding.start.row, finding.end.row + 1)
        grew = growth.get((name, finding.start.row)) if finding.code in GROWTH_RULES else None
        hits = [by_line[name, row] for row in rows if (name, row) in by_line]
        confirmation = Confirmation(finding, hits[0] if hits else None, grew)
        explained |= {(name, row) for row in rows}
        if confirmation.cost is not None:
            owners.setdefault((name, confirmation.cost.line), []).append(confirmation)
        confirmations.append(confirmation)
    for sharing in owners.values():
        for confirmation in sharing:
            others = tuple(c.finding.code for c in sharing if c is not confirmation)
            confirmation.shared_with = others
    return confirmations, explained


def profile(
    command: Sequence[str], device: str = "auto", cwd: Path | None = None, timeout: float = 3600
) -> Profile:
    cwd = (cwd or Path.cwd()).resolve()
    arguments, script = script_arguments(command, cwd)
    roots = {cwd} | ({script.resolve().parent} if script else set())
    with tempfile.TemporaryDirectory(prefix="xlalint-profile-") as folder:
        log, out = Path(folder) / "debug.txt", Path(folder) / "metrics.json"
        env = child_environment(device, {
            "PT_XLA_DEBUG_LEVEL": "2", "PT_XLA_DEBUG_FILE": str(log),
            "XLA_IR_DEBUG": "1", "XLA_SAVE_TENSORS_FILE": str(Path(folder) / "ir.txt"),
            "XLA_SAVE_TENSORS_FMT": "text",
            "XLALINT_PROFILE_ROOTS": os.pathsep.join(str(r) for r in sorted(roots)),
        })  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "xlalint.harness.script_child", str(out), *arguments],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        totals = _read_json(out)
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        events = debug_log.parse(text.splitlines(), debug_log.user_file_filter(roots, cwd))
        recompiled = _recompiles(events, sorted(Path(folder).glob("ir.txt*")))
    lines = _line_costs(totals.pop("lines", []), events, recompiled, cwd)
    loops = [
        LoopGrowth(_relative(file, cwd), line, tuple(sizes))
        for file, line, sizes in totals.pop("loops", [])
    ]
    files = {str(cwd / c.file) for c in lines} | ({str(script.resolve())} if script else set())
    chosen, doubtful = _lint({f for f in files if f.endswith(".py")}, cwd)
    doubtful.sort(key=_in_order)  # as _confirm orders its confirmations
    judged = _confirm(doubtful, lines, loops, cwd)[0]
    measured = [d for d, c in zip(doubtful, judged, strict=True) if _measured_its_cost(c)]
    # One pass over both, so that a line's cost is shown once.
    confirmations, explained = _confirm([*chosen, *measured], lines, loops, cwd)
    unexplained = []
    for cost in lines:
        if cost.costly and (cost.file, cost.line) not in explained:
            what, rule = closest_rule(cost, _line_text(cwd / cost.file, cost.line))
            unexplained.append(Unexplained(cost.file, cost.line, what, rule, cost))
    confirmed_loops = {(c.finding.filename, c.growth.line) for c in confirmations if c.growth}
    for grew in loops:
        if grew.grows and (grew.file, grew.line) not in confirmed_loops:
            unexplained.append(Unexplained(grew.file, grew.line, grew.describe(), "XLA401"))
    return Profile(
        list(command), done.returncode, done.stdout, done.stderr, totals, lines,
        confirmations, unexplained, loops,
    )  # fmt: skip


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
