"""The measured evidence behind each fix, as the rules' docs show it.

`xlalint verify --json xlalint/evidence.json` records what every runtime case cost before
and after its fix; `python -m xlalint.docgen` renders those numbers into the "Runtime
evidence" section of each rule's page (and `xlalint rule CODE`). A runtime test re-runs
verify and checks the committed numbers, so the docs cannot claim what was not measured.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

EVIDENCE = Path(__file__).resolve().parent.parent / "evidence.json"

ROWS = (
    ("executions", "executions"),
    ("device_to_host", "device-to-host transfers"),
    ("host_to_device", "host-to-device transfers"),
    ("uncached_compiles", "compiles"),
    ("cached_compiles", "cached compiles"),
    ("cpu_fallbacks", "CPU fallbacks"),
    ("max_graph_size", "largest graph (nodes)"),
    ("warnings", "warnings"),
)


@cache
def load(path: Path = EVIDENCE) -> dict[str, Any]:
    """verify's JSON, or an empty record where none was committed (an installed wheel)."""
    if not path.is_file():
        return {"cases": []}
    return json.loads(path.read_text(encoding="utf-8"))


def _cell(costs: dict[str, int] | None, error: str | None, name: str) -> str:
    if costs is None:
        return f"fails: `{error}`" if name == "executions" else "-"
    return str(costs[name])


def _fallbacks(fallbacks: dict[str, int]) -> str:
    return ", ".join(f"`{k}` {v}" for k, v in sorted(fallbacks.items())) or "none"


def _outputs(case: dict[str, Any]) -> str:
    outputs = case["outputs"]
    if outputs is None:
        return "not compared: the original program fails"
    if outputs["exact"]:
        return "identical"
    if outputs["close"]:
        return f"equal within tolerance (max abs difference {outputs['max_abs_diff']:.2g})"
    if outputs.get("same_distribution"):
        return (
            f"different values (max abs difference {outputs['max_abs_diff']:.2g}), the same "
            "distribution: the case draws random numbers on the device, and the fix changes "
            "which numbers each step draws"
        )
    return f"different (max abs difference {outputs['max_abs_diff']:.2g})"


def render(code: str, record: dict[str, Any] | None = None) -> str:
    """Markdown tables of the measured cases of rule `code`; empty if none were measured."""
    record = load() if record is None else record
    cases = [c for c in record["cases"] if c["code"] == code]
    if not cases:
        return ""
    where = (
        f"torch {record.get('torch')}, torch_xla {record.get('torch_xla')}, "
        f"on the XLA {record.get('device')} device"
    )
    parts = [f"Measured by `xlalint verify` ({where}):"]
    for case in cases:
        about = ", ".join(case["costs"]) or "none: it proves the fix runs with the same results"
        lines = [
            f"Case `{case['case']}` (the costs it is about: {about}):",
            "",
            "| | as written | as fixed |",
            "|---|---|---|",
        ]
        for name, label in ROWS:
            before = _cell(case["before"], case["before_error"], name)
            after = _cell(case["after"], case["after_error"], name)
            lines.append(f"| {label} | {before} | {after} |")
        lines.append(
            f"| fallback ops | {_fallbacks(case['fallbacks_before'])} | "
            f"{_fallbacks(case['fallbacks_after'])} |"
        )
        lines.append("")
        lines.append(f"Outputs: {_outputs(case)}.")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


# A measured number in a rule's prose: `{case.before.executions}` (a case of the rule
# itself) or `{XLA101:case.after.device_to_host}`; `{case.outputs}` gives the verdict in
# words. docgen fills them from evidence.json, so prose and table cannot disagree.
PLACEHOLDER = re.compile(
    r"\{(?:(?P<code>XLA\d+):)?(?P<case>\w+)\.(?:(?P<side>before|after)\.(?P<cost>\w+)|outputs)\}"
)
_OUTPUT_WORDS = {(True, True): "identical", (False, True): "equal within tolerance",
                 (False, False): "different"}  # fmt: skip


class MissingEvidence(KeyError):
    """A placeholder names a case or a cost that evidence.json does not hold."""


def _value(record: dict[str, Any], code: str, match: re.Match[str]) -> str:
    code = match["code"] or code
    case = next(
        (c for c in record["cases"] if c["code"] == code and c["case"] == match["case"]), None
    )
    if case is None:
        raise MissingEvidence(f"{match[0]}: no measured case {code} {match['case']}")
    if match["side"] is None:
        outputs = case["outputs"]
        if outputs is None:
            return "not compared (the original fails)"
        if outputs.get("same_distribution") and not outputs["close"]:
            return "different values from the same distribution"
        return _OUTPUT_WORDS[outputs["exact"], outputs["close"]]
    costs = case[match["side"]]
    if costs is None or match["cost"] not in costs:
        raise MissingEvidence(f"{match[0]}: {code} {match['case']} has no {match['cost']}")
    return str(costs[match["cost"]])


def fill(code: str, text: str, record: dict[str, Any] | None = None, strict: bool = False) -> str:
    """`text` with each measured-number placeholder replaced by its value in evidence.json.

    A placeholder without a measurement reads "(not measured)", or raises when `strict` (the
    docs test: every placeholder of the committed docs must resolve).
    """
    record = load() if record is None else record

    def value(match: re.Match[str]) -> str:
        try:
            return _value(record, code, match)
        except MissingEvidence:
            if strict:
                raise
            return "(not measured)"

    return PLACEHOLDER.sub(value, text)
