"""What the harness measured, as tables a person reads at a glance (verify and profile)."""

from __future__ import annotations

import os
import textwrap
from collections import Counter

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from xlalint.harness.fix_verify import FixVerification, no_xla_reason
from xlalint.harness.profile import Confirmation, Profile
from xlalint.harness.runner import last_line
from xlalint.harness.verdict import CaseVerdict
from xlalint.harness.verify import VerifyReport
from xlalint.report import plural

COLUMNS = (
    ("executions", "exec"),
    ("device_to_host", "D2H"),
    ("host_to_device", "H2D"),
    ("uncached_compiles", "comp"),
    ("cpu_fallbacks", "fallb"),
    ("max_graph_size", "graph"),
    ("warnings", "warn"),
)
PLAIN = {"highlight": False, "markup": False, "soft_wrap": True}
OUTPUTS = {(True, True): "identical", (False, True): "close", (False, False): "differ"}
LEGEND = (
    "Cells: as written->as fixed (one number when equal or when one run fails; err in exec: "
    "the program fails). Bold: the "
    "costs each rule is about. exec executions, D2H device-to-host transfers, H2D "
    "host-to-device transfers, comp "
    "compiles, fallb CPU fallbacks, graph largest graph (nodes), warn warnings; counted by "
    "torch_xla's metrics."
)


# Without a terminal (a CI log, a pipe) nothing needs to fit a screen: lines are as long as
# their content, so no cell is folded mid-token. COLUMNS, where set, still decides.
PLAIN_WIDTH = 1000


def output_console(stderr: bool = False) -> Console:
    """A console for the harness's reports: the terminal's width, or a wide plain layout."""
    console = Console(stderr=stderr)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(stderr=stderr, width=PLAIN_WIDTH)


def _change(verdict: CaseVerdict, cost: str) -> str:
    """`before->after`, kept short: the table must fit an 80-column terminal or log."""
    before, after = verdict.before, verdict.after
    left = str(before.cost(cost)) if before.ok or cost == "errors" else "err"
    right = str(after.cost(cost)) if after.ok or cost == "errors" else "err"
    if "err" in (left, right) and cost != "executions":
        return right if left == "err" else left  # `err` once per row, in its first column
    return left if left == right else f"{left}->{right}"


def _cell(verdict: CaseVerdict, cost: str) -> str:
    text = _change(verdict, cost)
    return f"[bold]{text}[/bold]" if cost in verdict.case.costs else text


def _outputs(verdict: CaseVerdict) -> str:
    if verdict.outputs is None:
        return "-"
    if verdict.outputs.same_distribution:
        return "same dist"
    return OUTPUTS[verdict.outputs.exact, verdict.outputs.close]


def verify_table(report: VerifyReport) -> Table:
    """One short row per case; what needs words goes below the table (`case_lines`)."""
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("rule", no_wrap=True)
    table.add_column("outputs", no_wrap=True)
    for _, header in COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("pass", justify="right", no_wrap=True)
    for verdict in report.verdicts:
        table.add_row(
            verdict.case.code,
            _outputs(verdict),
            *(_cell(verdict, cost) for cost, _ in COLUMNS),
            "[green]ok[/green]" if verdict.passed else "[red]FAIL[/red]",
        )
    return table


def _costs_text(verdict: CaseVerdict) -> str:
    """The case's own costs, as written->as fixed: some (host_to_device) have no column."""
    cells = [f"{cost} {_change(verdict, cost)}" for cost in verdict.case.costs]
    return ", ".join(cells) or "no cost declared"


def case_lines(verdict: CaseVerdict) -> list[str]:
    """The case's name, costs and verdict, then each problem and note on a line of its own."""
    fix = "unsafe" if verdict.case.unsafe else "safe"
    status = "ok" if verdict.passed else "FAIL"
    lines = [
        f"{verdict.case.code} {verdict.case.name} ({fix} fix): {_costs_text(verdict)}: {status}"
    ]
    if verdict.outputs is not None and verdict.outputs.close and not verdict.outputs.exact:
        lines.append(f"outputs {verdict.outputs.describe()}")
    lines += [f"problem: {p}" for p in verdict.problems]
    lines += verdict.notes
    return lines


def _wrapped(text: str, width: int, indent: str = "") -> str:
    """Plain text wrapped at the console's width, continuation lines indented, no padding."""
    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent + "  ")


def print_report(report: VerifyReport, console: Console) -> None:
    width = console.width
    console.print(f"xlalint verify on the XLA {report.device} device", style="bold")
    console.print(verify_table(report))
    plain = {"highlight": False, "markup": False, "soft_wrap": True}
    console.print(_wrapped(LEGEND, width), **plain)
    console.print()
    for verdict in report.verdicts:
        first, *rest = case_lines(verdict)
        style = None if verdict.passed else "bold red"
        console.print(_wrapped(first, width), style=style, **plain)
        for line in rest:
            console.print(_wrapped(line, width, indent="  "), **plain)
    failed = [v for v in report.verdicts if not v.passed]
    summary = f"{plural(len(report.verdicts), 'case')}, {len(failed)} failed"
    console.print(f"[red]{summary}[/red]" if failed else f"[green]{summary}[/green]")


def _short_cause(causes: Counter[str]) -> str:
    if not causes:
        return ""
    cause, _ = causes.most_common(1)[0]
    return cause.removeprefix("most likely ")


def _seen(confirmation: Confirmation) -> str:
    """What the run showed for one finding: its line's cost (once per line) or its loop's growth."""
    if confirmation.growth is not None:
        return f"confirmed: {confirmation.growth.describe()}"
    cost = confirmation.cost
    if cost is None:
        return "not seen (did not run, or cost nothing measurable)"
    if confirmation.shared_with and confirmation.finding.code > min(confirmation.shared_with):
        return f"confirmed: the same line's cost, counted under {min(confirmation.shared_with)}"
    shared = f" (one cost for {', '.join(confirmation.shared_with)} too)" * bool(
        confirmation.shared_with
    )
    recompiles = f", {plural(len(cost.recompiles), 'recompile')} caused here" * bool(
        cost.recompiles
    )
    return (
        f"confirmed: {plural(cost.executions, 'execution')}, "
        f"{plural(cost.host_reads, 'device-to-host transfer')}, "
        f"{plural(cost.compiles, 'compile')}{recompiles}{shared}"
    )


def profile_tables(result: Profile) -> list[Table | str]:
    totals = result.totals
    out: list[Table | str] = [
        f"[bold]xlalint profile[/bold] `{escape(' '.join(result.command))}` "
        f"(exit code {result.returncode})"
    ]
    if not totals.get("imported_torch_xla"):
        out.append("The script did not import torch_xla: nothing ran on an XLA device.")
        return out
    fallbacks = ", ".join(f"{k} {v}" for k, v in sorted(totals.get("fallbacks", {}).items()))
    out.append(
        f"{plural(totals['executions'], 'execution')}, "
        f"{plural(totals['device_to_host'], 'device-to-host transfer')}, "
        f"{plural(totals['uncached_compiles'], 'compile')} ({totals['cached_compiles']} "
        f"cached), largest graph {plural(totals['max_graph_size'], 'node')}; CPU fallbacks: "
        f"{fallbacks or 'none'}"
    )
    lines = Table(title="Where the device work was triggered", title_justify="left")
    # Narrow numbers and a whole location; the cause, last, wraps in what is left.
    lines.add_column("line", no_wrap=True)
    for header in ("exec", "D2H", "comp"):
        lines.add_column(header, justify="right", no_wrap=True)
    lines.add_column("findings", no_wrap=True)
    lines.add_column("cause", overflow="fold")
    codes: dict[tuple[str, int], list[str]] = {}
    for confirmation in result.confirmed:
        if confirmation.cost is not None:
            key = (confirmation.cost.file, confirmation.cost.line)
            codes.setdefault(key, []).append(confirmation.finding.code)
    for cost in result.lines:
        cause = _short_cause(cost.causes)
        if cost.recompiles:
            first = cost.recompiles[0]
            cause = f"recompiles: {first.change}" + (
                f" (compiled at {first.trigger})" if first.trigger else ""
            )
        lines.add_row(
            f"{cost.file}:{cost.line}", str(cost.executions), str(cost.host_reads),
            str(cost.compiles), ", ".join(codes.get((cost.file, cost.line), [])), escape(cause),
        )  # fmt: skip
    out.append(lines)
    findings = Table(title="Static findings, checked against the run", title_justify="left")
    findings.add_column("finding", no_wrap=True)
    findings.add_column("rule", no_wrap=True)
    findings.add_column("at runtime")
    for confirmation in result.findings:
        finding = confirmation.finding
        seen = escape(_seen(confirmation)).replace("confirmed", "[green]confirmed[/green]", 1)
        findings.add_row(f"{finding.filename}:{finding.start.row}", finding.code, seen)
    out.append(findings)
    if result.unexplained:
        out.append("[yellow]Runtime costs no rule explains:[/yellow]")
        for item in result.unexplained:
            out.append(
                escape(f"  {item.file}:{item.line}: {item.what}; no finding here, closest "
                       f"rule {item.closest_rule}")
            )  # fmt: skip
    return out


def print_profile(result: Profile, console: Console) -> None:
    for part in profile_tables(result):
        console.print(part)


TOTALS = (
    ("executions", "executions"),
    ("device_to_host", "device-to-host transfers"),
    ("uncached_compiles", "compiles"),
    ("cached_compiles", "cached compiles"),
    ("max_graph_size", "largest graph (nodes)"),
)


def _total(result: Profile, key: str) -> str:
    totals = result.totals
    if not totals.get("imported_torch_xla"):
        return "-"
    if key == "fallbacks":
        return str(sum(totals.get("fallbacks", {}).values()))
    return str(totals.get(key, 0))


def print_fix_verification(verification: FixVerification, console: Console) -> None:
    before, after = verification.before, verification.after
    applied = sum(sum(o.applied.values()) for o in verification.fixes.outcomes)
    changed = [o.filename for o in verification.fixes.outcomes if o.changed]
    console.print(
        f"[bold]xlalint fix --verify[/bold] `{' '.join(before.command)}`: "
        f"{plural(applied, 'fix', 'fixes')} in {plural(len(changed), 'file')}, "
        f"applied to a temporary copy ({', '.join(changed) or 'none'})"
    )
    table = Table(title="The script as it is, and with the fixes", title_justify="left")
    table.add_column("")
    table.add_column("as it is", justify="right")
    table.add_column("fixed", justify="right")
    table.add_row("exit code", str(before.returncode), str(after.returncode))
    for key, label in (*TOTALS, ("fallbacks", "CPU fallbacks")):
        table.add_row(label, _total(before, key), _total(after, key))
    table.add_row(
        "static findings confirmed at runtime",
        str(len(before.confirmed)),
        str(len(after.confirmed)),
    )
    console.print(table)
    for label, result in (("as it is", before), ("fixed", after)):
        reason = no_xla_reason(result)
        if reason:
            console.print(f"{label}: no XLA counts (-): {reason}.", **PLAIN)
    console.print(f"What the script printed: {verification.printed.describe()}.", **PLAIN)
    if verification.unsafe_codes:
        console.print(
            f"Unsafe fixes applied ({', '.join(verification.unsafe_codes)}): they may change "
            "results, so a difference is reported, not a failure.",
            **PLAIN,
        )
    if before.returncode != 0:
        tail = last_line(before.stderr, "no error output")
        console.print(f"[red]The script as it is fails:[/red] {escape(tail)}")
    for problem in verification.problems:
        console.print(f"[red]FAIL:[/red] {escape(problem)}")
