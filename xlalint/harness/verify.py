"""`xlalint verify`: run every runtime case as written and as fixed, and judge the fix.

Each case needs two fresh processes (before, after). They are scheduled as independent
jobs so that `jobs` children run at once (2 by default: each holds a torch_xla runtime of
about 1.3 GB and compiles on the CPU, so more than two on a 2-core machine only queue).
"""

from __future__ import annotations

import platform
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from xlalint import __version__
from xlalint.harness.cases import RuntimeCase, fixed_variant
from xlalint.harness.runner import ChildResult, pjrt_device, run_case
from xlalint.harness.verdict import CaseVerdict, judge

DEFAULT_JOBS = 2
# Costs shown for every case, in this order, whatever the case is about.
SHOWN_COSTS = (
    "executions", "device_to_host", "uncached_compiles", "cached_compiles", "cpu_fallbacks",
    "max_graph_size",
)  # fmt: skip


@dataclass
class VerifyReport:
    device: str
    verdicts: list[CaseVerdict]

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return {
            "xlalint": __version__,
            "torch": _version("torch"),
            "torch_xla": _version("torch-xla"),
            "device": self.device,
            "machine": f"{platform.machine()}, {platform.python_implementation()} "
            f"{platform.python_version()}",
            "cases": [_case_json(v) for v in self.verdicts],
        }


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _costs_json(result: ChildResult) -> dict[str, int] | None:
    if not result.ok:
        return None
    names = dict.fromkeys([*SHOWN_COSTS, "host_to_device", "warnings"])
    return {name: result.cost(name) for name in names}


def _case_json(verdict: CaseVerdict) -> dict[str, Any]:
    case = verdict.case
    outputs = verdict.outputs
    return {
        "code": case.code,
        "case": case.name,
        "fix": "unsafe" if case.unsafe else "safe",
        "costs": list(case.costs),
        "before": _costs_json(verdict.before),
        "after": _costs_json(verdict.after),
        "before_error": verdict.before.error,
        "after_error": verdict.after.error,
        "fallbacks_before": verdict.before.metrics.get("fallbacks", {}),
        "fallbacks_after": verdict.after.metrics.get("fallbacks", {}),
        "outputs": None
        if outputs is None
        else {
            "exact": outputs.exact,
            "close": outputs.close,
            "max_abs_diff": outputs.max_abs_diff,
            "same_distribution": outputs.same_distribution,
        },
        "passed": verdict.passed,
        "problems": verdict.problems,
        "notes": verdict.notes,
    }


def verify(
    cases: Sequence[RuntimeCase],
    device: str = "cpu",
    jobs: int = DEFAULT_JOBS,
    on_done: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Fix each case with xlalint's fixer, run both variants, judge each fix."""
    with tempfile.TemporaryDirectory(prefix="xlalint-verify-") as folder:
        fixed = {case: fixed_variant(case, Path(folder)) for case in cases}
        runs = [(case, variant) for case in cases for variant in ("before", "after")]

        def measure(job: tuple[RuntimeCase, str]) -> ChildResult:
            case, variant = job
            result = run_case(case.path if variant == "before" else fixed[case], device)
            if on_done is not None:
                on_done(f"{case.code} {case.name} ({variant})")
            return result

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = dict(zip(runs, pool.map(measure, runs), strict=True))
    where = pjrt_device(device)
    verdicts = [
        judge(case, results[case, "before"], results[case, "after"], where) for case in cases
    ]
    return VerifyReport(where, verdicts)
