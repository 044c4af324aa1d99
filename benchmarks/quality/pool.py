"""Blind lists for judging the findings no label covers.

A labeller reads a file before xlalint runs on it, and some per-step costs go unseen: a
finding on such a line scores as a false positive ("unlabelled") whether or not the cost
is real. Judging it after seeing the finding would favour xlalint, so its line is pooled
with decoys, lines of the same file that look alike (a host read, an index, a device
choice, a loop) and that neither a label nor a finding covers, and a second judge labels
every line of the shuffled list without knowing which ones xlalint reported. What the
judge finds on a decoy is a label like any other (a true one is a miss xlalint had).

    python benchmarks/quality.py --split test --json > scored.json
    python benchmarks/quality/pool.py scored.json --lines pool.md --key pool_key.json

`--lines` is for the judge (file, line, the statement's text); `--key` (which lines are
findings) is for the lead, who merges the judged labels and scores again.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fetch import project_root  # noqa: E402
from scoring import Project, load_projects  # noqa: E402

# Lines that could hold a finding of some rule: what a decoy must look like.
LOOKALIKE = re.compile(
    r"\.item\(|\.cpu\(|\.numpy\(|\.tolist\(|\bfloat\(|\bint\(|\bprint\(|\bif\b|\bwhile\b"
    r"|\bfor\b|\[[^\]]+\]|\.cuda\(|torch\.tensor\(|torch\.cat\(|\.to\(|nonzero|masked"
)
DECOYS_PER_FINDING = 2


@dataclass(frozen=True)
class Line:
    project: str
    file: str
    line: int
    text: str


def _place(item: dict) -> tuple[str, str, int]:
    """(project, file, line) of a scored finding, from its `where`."""
    where, _, line = item["where"].rpartition(":")
    project, _, file = where.partition("/")
    return project, file, int(line)


def _unlabelled(scored: dict) -> list[tuple[str, str, int]]:
    """(project, file, line) of each finding no label covers."""
    return sorted({_place(item) for item in scored["fp"] if item["reason"] == "unlabelled"})


def _taken(project: Project, reported: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """Lines a label spans or a finding stands on: never a decoy."""
    spans = {
        (label.file, n) for label in project.labels for n in range(label.line, label.end_line + 1)
    }
    return spans | reported


def _statement_lines(source: str) -> set[int]:
    """Lines where a statement starts: not docstrings, comments, headers or imports."""
    skip = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt) or isinstance(node, skip):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring or a bare string
        lines.add(node.lineno)
    return lines


def _decoys(
    project: Project, file: str, source: str, taken: set[tuple[str, int]], rng: random.Random
) -> list[Line]:
    text = source.splitlines()
    candidates = [
        Line(project.name, file, n, text[n - 1].strip())
        for n in sorted(_statement_lines(source))
        if (file, n) not in taken and LOOKALIKE.search(text[n - 1])
    ]
    return rng.sample(candidates, min(DECOYS_PER_FINDING, len(candidates)))


def read_source(project: Project, file: str) -> str:
    return (project_root(project.requirement) / file).read_text(encoding="utf-8")


def pool(
    scored: dict,
    projects: Sequence[Project],
    seed: int,
    read: Callable[[Project, str], str] = read_source,
) -> tuple[list[Line], list[Line]]:
    """The shuffled list for the judge, and which of its lines are findings."""
    by_name = {project.name: project for project in projects}
    rng = random.Random(seed)
    reported: dict[str, set[tuple[str, int]]] = {}
    for item in scored["fp"]:
        project, file, line = _place(item)
        reported.setdefault(project, set()).add((file, line))
    findings: list[Line] = []
    decoys: list[Line] = []
    for name, file, line in _unlabelled(scored):
        project = by_name[name]
        source = read(project, file)
        findings.append(Line(name, file, line, source.splitlines()[line - 1].strip()))
        taken = _taken(project, reported.get(name, set())) | {(d.file, d.line) for d in decoys}
        decoys += _decoys(project, file, source, taken, rng)
    lines = findings + decoys
    rng.shuffle(lines)
    return lines, findings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scored", type=Path, help="quality.py --json output")
    parser.add_argument("--split", default="test", help="the split of the JSON to pool")
    parser.add_argument("--lines", type=Path, required=True, help="the judge's list (markdown)")
    parser.add_argument("--key", type=Path, required=True, help="which lines are findings (JSON)")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    scored = json.loads(args.scored.read_text())[args.split]
    lines, findings = pool(scored, load_projects(), args.seed)
    rows = [
        f"| {n} | {x.project} | `{x.file}` | {x.line} | `{x.text}` |"
        for n, x in enumerate(lines, 1)
    ]
    header = ["| # | project | file | line | statement |", "|---|---|---|---|---|"]
    args.lines.write_text("\n".join([*header, *rows]) + "\n")
    key = [{"project": x.project, "file": x.file, "line": x.line} for x in findings]
    args.key.write_text(json.dumps(key, indent=1) + "\n")
    print(f"{len(lines)} lines ({len(findings)} findings, {len(lines) - len(findings)} decoys)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
