"""`xlalint fix --verify -- python train.py ARGS`: the user's script before and after the fixes.

The fixes are applied to a temporary copy of the project (the current folder), never to the
user's files; the script is profiled in both folders, and what each run printed is compared
number by number, so a user sees what the port buys and whether it changed their results
before deciding to `--apply`.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from xlalint.api import FixReport, fix_paths
from xlalint.config import Settings
from xlalint.diagnostics import Applicability
from xlalint.discovery import PYTHON_SUFFIXES
from xlalint.harness.profile import Profile, profile
from xlalint.harness.runner import last_line
from xlalint.registry import all_rules
from xlalint.report import plural
from xlalint.rule import Rule

# Folders a project copy does not need: environments, caches, version control.
_NOT_COPIED = (
    ".git", ".hg", ".venv", "venv", ".tox", "__pycache__", "*.egg-info", ".xlalint_cache",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules",
)  # fmt: skip
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
RTOL = 1e-4


@dataclass(frozen=True)
class PrintedComparison:
    """The numbers two runs printed, in order."""

    count: tuple[int, int]
    exact: bool
    max_rel_diff: float

    @property
    def agrees(self) -> bool:
        """The same numbers, or within RTOL of each other."""
        return self.count[0] == self.count[1] and self.max_rel_diff <= RTOL

    def describe(self) -> str:
        if self.count[0] != self.count[1]:
            return f"different output: {self.count[0]} vs {plural(self.count[1], 'number')} printed"
        if self.exact:
            if self.count[0] == 1:
                return "the same number printed"
            return f"the same {self.count[0]} numbers printed"
        verdict = "close" if self.max_rel_diff <= RTOL else "different"
        return (
            f"{verdict}: {plural(self.count[0], 'number')}, "
            f"max relative difference {self.max_rel_diff:.2g}"
        )


def compare_printed(before: str, after: str) -> PrintedComparison:
    a = [float(n) for n in _NUMBER.findall(before)]
    b = [float(n) for n in _NUMBER.findall(after)]
    if len(a) != len(b):
        return PrintedComparison((len(a), len(b)), False, math.inf)
    diffs = [abs(x - y) / max(abs(x), abs(y), 1e-12) for x, y in zip(a, b, strict=True)]
    return PrintedComparison((len(a), len(b)), a == b, max(diffs, default=0.0))


def no_xla_reason(run: Profile) -> str | None:
    """Why a run has no XLA counts (None when it has them): the "as it is" column says so."""
    if not run.totals:
        return "the run left no metrics (it was killed or timed out)"
    if run.totals.get("imported_torch_xla"):
        return None
    if run.returncode != 0:
        return "the script failed before it imported torch_xla"
    return "the script never imported torch_xla: it ran without XLA (on the CPU or a GPU)"


@dataclass
class FixVerification:
    fixes: FixReport
    before: Profile
    after: Profile
    unsafe: bool = False

    @property
    def printed(self) -> PrintedComparison:
        return compare_printed(self.before.stdout, self.after.stdout)

    @property
    def unsafe_codes(self) -> list[str]:
        """The applied fixes that may change behaviour: their differences are declared."""
        if not self.unsafe:
            return []
        rules = all_rules()
        applied = {code for o in self.fixes.outcomes for code in o.applied}
        return sorted(
            code
            for code in applied
            if code in rules and rules[code].fix_applicability is Applicability.UNSAFE
        )

    @property
    def problems(self) -> list[str]:
        """Why the fixes must not be applied: the fixed script fails, or its results moved.

        A difference in what the script printed is a problem only when every applied fix is
        safe: unsafe fixes declare that results may change, and the difference is reported.
        The numbers are compared only when both runs succeed.
        """
        found = []
        if self.after.returncode != 0:
            tail = last_line(self.after.stderr, "no error output")
            found.append(f"the fixed script fails (exit code {self.after.returncode}): {tail}")
        elif self.before.returncode == 0:
            printed = self.printed
            if not printed.agrees and not self.unsafe_codes:
                found.append(
                    f"the safe fixes changed what the script printed: {printed.describe()}"
                )
        return found

    @property
    def passed(self) -> bool:
        return not self.problems


def _in_copy(argument: str, project: Path, copy: Path) -> str:
    """An absolute path into the project, redirected into its copy."""
    path = Path(argument)
    if path.is_absolute() and path.resolve().is_relative_to(project):
        return str(copy / path.resolve().relative_to(project))
    return argument


def named_scripts(command: Sequence[str], project: Path) -> list[Path]:
    """The Python files in `project` that the command names (`python examples/train.py`),
    as written: they are fixed even where `exclude` leaves their folder out, as any file
    named on the command line is."""
    scripts = []
    for argument in command[1:]:
        path = Path(argument)
        full = (project / path).resolve()
        if path.suffix in PYTHON_SUFFIXES and full.is_file() and full.is_relative_to(project):
            scripts.append(path)
    return scripts


def verify_fixes(
    command: Sequence[str],
    settings: Settings,
    rules: Sequence[type[Rule]],
    *,
    unsafe: bool,
    device: str = "auto",
    project: Path | None = None,
) -> FixVerification:
    project = (project or Path.cwd()).resolve()
    with tempfile.TemporaryDirectory(prefix="xlalint-fix-verify-") as folder:
        copy = Path(folder) / project.name
        shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns(*_NOT_COPIED))
        root = settings.root.resolve()
        copied_root = copy / root.relative_to(project) if root.is_relative_to(project) else root
        scripts = [
            copy / (project / p).resolve().relative_to(project)
            for p in named_scripts(command, project)
        ]
        fixes = fix_paths(
            [copy, *scripts],
            replace(settings, root=copied_root),
            rules=rules,
            unsafe=unsafe,
            apply=True,
        )
        before = profile(command, device=device, cwd=project)
        after = profile([_in_copy(a, project, copy) for a in command], device=device, cwd=copy)
    for outcome in fixes.outcomes:
        outcome.filename = str(Path(outcome.filename).relative_to(copy))
    return FixVerification(fixes, before, after, unsafe)
