"""Runtime cases: small programs in fixtures/<CODE>/runtime_*.py that a rule's fix must improve.

A case defines `setup(device)` and `run(*args)` (see child.py) and names, in a module-level
`COSTS`, the measured costs its rule is about (`executions`, `device_to_host`, ...). A cost
that only a TPU shows (float16 vs bfloat16 speed) is declared with `MEASURED_ON = ("TPU",)`:
elsewhere verify compares outputs and says the cost was not measurable there. Its
"after" variant is never written by hand: xlalint's own fixer produces it, with only the
case's rule enabled, so the harness proves the rewrite users will get.

A case whose outputs are random draws on the device (dropout, `torch.randn(...,
device=...)` in the loop) declares `OUTPUTS = "distribution"`: a barrier changes which
numbers each step draws, so verify checks that before and after are draws of the same
distribution (and says so) rather than the same values.

A fix with no cost to lower on any single device (a rename of the same function, a
gradient reduction that needs several replicas) declares `COSTS = ()` and says why in
`WHY_NO_COST = "..."`: verify then proves only that the fixed program runs and gives the
same results.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from xlalint.diagnostics import Applicability
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.rule import Rule
from xlalint.sources import decode

# What a case may name in COSTS: the child's metrics, plus `cpu_fallbacks` (all `aten::*`
# counters together), `errors` (1 when the program fails, as `.cuda()` does on a TPU host)
# and `warnings` (the warnings the run raised, such as a deprecated API's).
COST_NAMES = frozenset(
    {
        "executions", "uncached_compiles", "cached_compiles", "device_to_host",
        "host_to_device", "max_graph_size", "cpu_fallbacks", "errors", "warnings",
    }
)  # fmt: skip
# An installed xlalint carries the cases as package data (xlalint/runtime_cases/, built from
# fixtures/: see pyproject.toml); a source checkout reads them from fixtures/ directly.
PACKAGED_CASES = Path(__file__).resolve().parent.parent / "runtime_cases"
SOURCE_CASES = Path(__file__).resolve().parent.parent.parent / "fixtures"
FIXTURES = PACKAGED_CASES if PACKAGED_CASES.is_dir() else SOURCE_CASES


class CaseError(Exception):
    """A runtime case that cannot be run as written (bad COSTS, nothing to fix, ...)."""


@dataclass(frozen=True)
class RuntimeCase:
    code: str
    path: Path
    costs: tuple[str, ...]
    measured_on: tuple[str, ...] = ()  # PJRT devices that show the cost; () means all
    why_no_cost: str = ""  # set exactly when costs is (): why no device shows one
    random_outputs: bool = False  # OUTPUTS = "distribution": compared as draws, not values

    @property
    def name(self) -> str:
        return self.path.stem.removeprefix("runtime_")

    @property
    def rule(self) -> type[Rule]:
        return all_rules()[self.code]

    @property
    def unsafe(self) -> bool:
        return self.rule.fix_applicability is Applicability.UNSAFE


def _constants(path: Path) -> dict[str, object]:
    """The case's module-level literal constants, read without running the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[str, object] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                try:
                    found[target.id] = ast.literal_eval(statement.value)
                except ValueError:
                    continue
    return found


def read_costs(path: Path) -> tuple[str, ...]:
    """The case's `COSTS = ("executions", ...)`; `()` only beside a `WHY_NO_COST` reason."""
    constants = _constants(path)
    costs = constants.get("COSTS")
    if not isinstance(costs, tuple | list):
        raise CaseError(f"{path}: no `COSTS = (...)` tuple of cost names")
    if not costs and not constants.get("WHY_NO_COST"):
        raise CaseError(f'{path}: `COSTS = ()` needs `WHY_NO_COST = "..."`: why no cost drops')
    unknown = sorted(set(costs) - COST_NAMES)
    if unknown:
        raise CaseError(f"{path}: COSTS names unknown costs {unknown}; use {sorted(COST_NAMES)}")
    return tuple(str(c) for c in costs)


def read_case(code: str, path: Path) -> RuntimeCase:
    constants = _constants(path)
    measured_on = constants.get("MEASURED_ON", ())
    if not isinstance(measured_on, tuple | list):
        raise CaseError(f'{path}: MEASURED_ON must be a tuple of devices, e.g. ("TPU",)')
    outputs = constants.get("OUTPUTS", "values")
    if outputs not in ("values", "distribution"):
        raise CaseError(f'{path}: OUTPUTS must be "values" or "distribution", not {outputs!r}')
    costs = read_costs(path)
    why = str(constants.get("WHY_NO_COST", "")) if not costs else ""
    devices = tuple(str(d).upper() for d in measured_on)
    return RuntimeCase(code, path, costs, devices, why, outputs == "distribution")


def discover(fixtures: Path = FIXTURES, codes: set[str] | None = None) -> list[RuntimeCase]:
    """Every runtime case under `fixtures`, for the rules in `codes` (all when None)."""
    rules = all_rules()
    cases = []
    for path in sorted(fixtures.glob("XLA*/runtime_*.py")):
        code = path.parent.name
        if code not in rules or (codes is not None and code not in codes):
            continue
        cases.append(read_case(code, path))
    return cases


def fixed_variant(case: RuntimeCase, folder: Path) -> Path:
    """Write the case as xlalint's fixer rewrites it into `folder`; return the new path."""
    source = decode(case.path.read_bytes())
    outcome = fix_text(source, str(case.path), [case.rule], unsafe=case.unsafe)
    if outcome.error is not None:
        raise CaseError(f"{case.path}: {outcome.error}")
    if not outcome.changed:
        raise CaseError(f"{case.path}: the {case.code} fix changed nothing")
    fixed = folder / f"{case.code}_{case.path.stem}_fixed.py"
    fixed.write_bytes(outcome.encoded())
    return fixed
