"""Did a fix keep the results and cut the cost its rule is about?

Outputs are compared twice, and reported separately: exactly (bit for bit, as JSON values)
and within a tolerance (a different but equivalent float order may round differently). A
safe fix must keep results within tolerance; an unsafe fix reports its difference instead.
A case whose outputs are random draws on the device must keep their distribution (a
two-sample Kolmogorov-Smirnov test), and the verdict says the values differ.
Every fix must lower at least one of the case's costs and raise none of them; a case that
declares no cost (`COSTS = ()`, with its reason) must run before and after with the same
results. A crash or a warning is a cost too: a fix that turns a failing program into a
working one lowers `errors`, one that silences a deprecation lowers `warnings`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from xlalint.harness.cases import RuntimeCase
from xlalint.harness.runner import ChildResult

RTOL, ATOL = 1e-5, 1e-6


# Two-sample Kolmogorov-Smirnov critical coefficient at a 0.1% false-alarm rate.
KS_C = 1.949


@dataclass(frozen=True)
class OutputComparison:
    exact: bool
    close: bool
    max_abs_diff: float
    # Only for outputs that are random draws: same distribution by a two-sample KS test.
    same_distribution: bool | None = None
    ks_statistic: float | None = None

    def describe(self) -> str:
        if self.exact:
            return "identical"
        if self.close:
            return f"close (max |diff| {self.max_abs_diff:.2g})"
        if self.same_distribution:
            return (
                f"differ as values (max |diff| {self.max_abs_diff:.2g}) but are draws of the "
                f"same distribution (KS D={self.ks_statistic:.2g})"
            )
        if self.same_distribution is False:
            return f"differ, and not as draws of one distribution (KS D={self.ks_statistic:.2g})"
        return f"differ (max |diff| {self.max_abs_diff:.2g})"


def ks_statistic(a: list[float], b: list[float]) -> float:
    """The two-sample Kolmogorov-Smirnov distance: the largest gap between the two CDFs."""
    xs, ys = sorted(a), sorted(b)
    i = j = 0
    gap = 0.0
    while i < len(xs) and j < len(ys):
        value = min(xs[i], ys[j])
        while i < len(xs) and xs[i] == value:
            i += 1
        while j < len(ys) and ys[j] == value:
            j += 1
        gap = max(gap, abs(i / len(xs) - j / len(ys)))
    return gap


def same_distribution(a: list[float], b: list[float]) -> tuple[bool, float]:
    """Could `a` and `b` be draws of one distribution? (KS test at the 0.1% level.)"""
    n, m = len(a), len(b)
    statistic = ks_statistic(a, b)
    return statistic <= KS_C * math.sqrt((n + m) / (n * m)), statistic


def _numbers(value: Any) -> list[float] | None:
    """The numbers in an output, flattened; None when its structure is not numeric."""
    if isinstance(value, dict) and "tensor" in value:
        return _numbers(value["tensor"])
    if isinstance(value, bool | int | float):
        return [float(value)]
    if isinstance(value, list):
        flat: list[float] = []
        for item in value:
            numbers = _numbers(item)
            if numbers is None:
                return None
            flat.extend(numbers)
        return flat
    if isinstance(value, dict):
        return _numbers([value[k] for k in sorted(value)])
    return None


def compare_outputs(before: Any, after: Any, random: bool = False) -> OutputComparison:
    """Values compared exactly and within tolerance; draws (`random`) also as distributions."""
    exact = before == after
    a, b = _numbers(before), _numbers(after)
    if a is None or b is None or len(a) != len(b):
        return OutputComparison(exact, exact, 0.0 if exact else math.inf)
    diffs = [abs(x - y) for x, y in zip(a, b, strict=True)]
    close = all(
        math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(x) and math.isnan(y))
        for x, y in zip(a, b, strict=True)
    )
    if not random or close or not a:
        return OutputComparison(exact, close, max(diffs, default=0.0))
    same, statistic = same_distribution(a, b)
    return OutputComparison(exact, close, max(diffs), same, statistic)


@dataclass
class CaseVerdict:
    case: RuntimeCase
    before: ChildResult
    after: ChildResult
    outputs: OutputComparison | None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def _short(error: str | None) -> str:
    """An error's first sentence: enough to recognise it in a table cell."""
    text = (error or "").split(". ", 1)[0]
    return text if len(text) <= 60 else text[:57] + "..."


def _warnings(result: ChildResult) -> list[str]:
    """The distinct warnings a run raised, each shortened for a report line."""
    return [_short(m) for m in result.metrics.get("warning_messages", [])]


def judge(
    case: RuntimeCase, before: ChildResult, after: ChildResult, device: str = "CPU"
) -> CaseVerdict:
    verdict = CaseVerdict(case, before, after, None)
    if not after.ok:
        verdict.problems.append(f"the fixed program fails: {after.error}")
        return verdict
    if not before.ok:
        if "errors" not in case.costs:
            verdict.problems.append(f"the original program fails: {before.error}")
            return verdict
        verdict.notes.append(f"the original fails ({_short(before.error)}); the fixed one runs")
    else:
        verdict.outputs = compare_outputs(before.outputs, after.outputs, case.random_outputs)
        if verdict.outputs.same_distribution:
            verdict.notes.append(
                f"outputs {verdict.outputs.describe()}: the loop draws random numbers on the "
                "device, and the fix changes which numbers each step draws"
            )
        elif not verdict.outputs.close:
            message = f"outputs {verdict.outputs.describe()}"
            if case.unsafe:
                verdict.notes.append(f"{message} (unsafe fix: reported, not a failure)")
            else:
                verdict.problems.append(f"a safe fix changed the results: {message}")
    if before.ok and before.cost("warnings") > after.cost("warnings"):
        verdict.notes.append(f"the original warns: {'; '.join(_warnings(before))}")
    if not case.costs:
        verdict.notes.append(f"no cost to lower: {case.why_no_cost}")
        return verdict
    if case.measured_on and device not in case.measured_on:
        where = "/".join(case.measured_on)
        verdict.notes.append(f"{', '.join(case.costs)} shows only on {where}: not judged here")
        return verdict
    raised = [c for c in case.costs if after.cost(c) > before.cost(c)]
    lowered = [c for c in case.costs if after.cost(c) < before.cost(c)]
    if raised:
        verdict.problems.append(f"the fix raised {', '.join(raised)}")
    elif not lowered:
        verdict.problems.append(f"the fix did not lower {', '.join(case.costs)}")
    return verdict
