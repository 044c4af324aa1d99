"""Why the ast screen keeps each line it hands libcst: which step of `screen.py` keeps it.

For every file, the non-blank lines are split into: the module-level code (never blanked),
bodies that cannot be blanked (they share a row with their header), the blanked bodies, and
the kept bodies by the first step that keeps them: a rule's screen passes the unit, a
`hot_only` rule passes it (`_maybe_hot` or `_computing_on_parameters`), it calls a passing
unit (the callers' closure), the module-level code uses it (`from_glue`), a kept unit uses
it (the `used` closure), it imports, declares `global`/`nonlocal` or holds a `noqa`. Also
prints, per rule with a screen, the lines of the units its screen passes, and the floors:
the lines libcst would get if the screen kept no unit for a link (only the passing units and
those that import, declare `global`/`nonlocal` or hold `noqa`), if no unit passed for being
hot, and both (what no cut of links or of hotness can go below; not findings-safe).

    python benchmarks/screen_why.py FILE_OR_FOLDER... [--every 15] [--sample 50]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from xlalint import engine, screen  # noqa: E402
from xlalint.registry import select_rules  # noqa: E402
from xlalint.sources import SourceError, decode  # noqa: E402

STEPS = (
    "module-level code",
    "body not blankable",
    "screen of a rule passes",
    "hot_only: _maybe_hot",
    "hot_only: _computing_on_parameters",
    "callers' closure",
    "from_glue",
    "used closure",
    "imports/global/noqa",
    "blanked",
)


def _nonblank(lines: list[str], first: int, last: int) -> int:
    return sum(1 for line in lines[first - 1 : last] if line.strip())


def explain(text: str, path: str, steps: Counter[str], by_rule: Counter[str]) -> None:
    rules = list(select_rules(None))
    lines = text.splitlines()
    total = _nonblank(lines, 1, len(lines))
    _, tree = engine.cpython_parse(text, path)
    active = engine.rules_for_text(text, rules)
    if tree is None or not active:
        steps["no rule runs (libcst not run)"] += total
        return
    if any(rule.screen is None and not rule.hot_only for rule in active):
        steps["a rule without a screen runs"] += total
        return
    units, glue = screen._split(tree)
    aliases = screen._aliases(tree)
    for features in (glue, *(unit.features for unit in units)):
        features.resolve_aliases(aliases)
    records = screen._record_classes(tree)
    maybe_hot = screen._maybe_hot(units, glue, ())
    computing = screen._computing_on_parameters(units, aliases, records)
    by_screen = {
        i
        for i, u in enumerate(units)
        if any(
            r.screen is not None and not r.hot_only and u.features.matches(r.screen) for r in active
        )
    }
    hot_rules = [r for r in active if r.hot_only]
    hot_pass = {
        i
        for i in maybe_hot | computing
        if any(r.screen is None or units[i].features.matches(r.screen) for r in hot_rules)
    }
    passing = by_screen | hot_pass
    kept = screen._connected(units, glue, passing, text)
    # Re-derive the closure's steps in the order `_connected` takes them.
    defined_by, users = screen.links(units)
    callers = screen.closure(passing, lambda i: users.get(i, ()))
    from_glue = {i for n in glue.identifiers for i in defined_by.get(n, ())}
    used = screen.closure(
        callers | from_glue,
        lambda i: [j for n in units[i].features.identifiers for j in defined_by.get(n, ())],
    )
    text_lines = screen.LINE.findall(text)
    body_total = 0
    for index, unit in enumerate(units):
        node = unit.node
        body_first = screen._first_row(node.body[0])
        count = _nonblank(lines, body_first, node.end_lineno or node.lineno)
        if screen._blank(node, list(text_lines)) is None:
            if any(u.node is not node and u.first <= unit.first <= u.last for u in units):
                continue  # nested in another unit: counted there (never: units are top)
            steps["body not blankable"] += count
            body_total += count
            continue
        body_total += count
        for rule in active:
            if rule.screen is not None and not rule.hot_only and unit.features.matches(rule.screen):
                by_rule[rule.code] += count
        if index not in kept:
            steps["blanked"] += count
        elif index in by_screen:
            steps["screen of a rule passes"] += count
        elif index in hot_pass and index in maybe_hot:
            steps["hot_only: _maybe_hot"] += count
        elif index in hot_pass:
            steps["hot_only: _computing_on_parameters"] += count
        elif index in callers:
            steps["callers' closure"] += count
        elif index in from_glue:
            steps["from_glue"] += count
        elif index in used:
            steps["used closure"] += count
        else:
            steps["imports/global/noqa"] += count
    steps["module-level code"] += total - body_total


FLOORS = ("as is", "no links", "no hotness", "no links, no hotness")


def _passing_only(units: list, glue: object, passing: set[int], text: str) -> set[int]:
    lines = text.splitlines()
    return passing | {
        i
        for i, unit in enumerate(units)
        if unit.features.reaching
        or any("noqa" in line for line in lines[unit.first - 1 : unit.last])
    }


@contextmanager
def _floor(variant: str) -> Iterator[None]:
    with ExitStack() as stack:
        if "links" in variant:
            stack.enter_context(mock.patch.object(screen, "_connected", _passing_only))
        if "hotness" in variant:
            stack.enter_context(mock.patch.object(screen, "_maybe_hot", lambda *a: set()))
            stack.enter_context(
                mock.patch.object(screen, "_computing_on_parameters", lambda *a: set())
            )
        yield


def floors(text: str, path: str, kept: Counter[str]) -> None:
    _, tree = engine.cpython_parse(text, path)
    active = engine.rules_for_text(text, list(select_rules(None)))
    total = _nonblank(text.splitlines(), 1, len(text.splitlines()))
    kept["all"] += total
    for variant in FLOORS:
        plan = None
        if tree is not None and active:
            with _floor(variant):
                plan = screen.screen_text(tree, text, active)
        if plan is None:
            kept[variant] += total if active else 0
        else:
            kept[variant] += sum(1 for line in plan.text.splitlines() if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--every", type=int, default=1, help="every n-th file, sorted")
    parser.add_argument("--sample", type=int, default=0, help="at most n files, evenly spread")
    args = parser.parse_args()
    files = sorted(
        str(f) for p in map(Path, args.paths) for f in ([p] if p.is_file() else p.rglob("*.py"))
    )[:: args.every]
    if args.sample and len(files) > args.sample:
        files = [files[i * len(files) // args.sample] for i in range(args.sample)]
    sys.setrecursionlimit(10_000)
    steps: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    for path in files:
        try:
            text = decode(Path(path).read_bytes()).text
        except (OSError, SourceError):
            continue
        explain(text, path, steps, by_rule)
        floors(text, path, kept)
    total = sum(steps.values())
    print(f"{len(files)} files, {total:,} non-blank lines")
    print("| step | non-blank lines | share |\n|---|---:|---:|")
    for step in (*STEPS, "a rule without a screen runs", "no rule runs (libcst not run)"):
        print(f"| {step} | {steps[step]:,} | {steps[step] / max(total, 1):.1%} |")
    print("\n| rule | lines of the units its screen passes | share of all |\n|---|---:|---:|")
    for code, count in by_rule.most_common():
        print(f"| {code} | {count:,} | {count / max(total, 1):.1%} |")

    print("\n| screen | non-blank lines to libcst | share |\n|---|---:|---:|")
    for variant in FLOORS:
        print(f"| {variant} | {kept[variant]:,} | {kept[variant] / max(kept['all'], 1):.1%} |")


if __name__ == "__main__":
    main()
