"""Precision and recall of xlalint's default rules on labelled real-world code.

    python benchmarks/quality.py                         # both splits
    python benchmarks/quality.py --split tune --show fp,fn
    python benchmarks/quality.py --split test --json

Projects and their labels live in benchmarks/quality/projects/*.toml (the method is in
benchmarks/quality/README.md). Each project's pinned distribution is fetched into a cache
outside the repository (benchmarks/quality/fetch.py), and xlalint's API lints exactly the
listed files with the default rules (`--select ALL`: every rule): no configuration from the
unpacked sources, no result cache. Scoring is benchmarks/quality/scoring.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "quality"))

from fetch import project_root  # noqa: E402
from scoring import Finding, Label, Project, RuleScore, Score, load_projects, score  # noqa: E402

from xlalint.api import check_paths  # noqa: E402
from xlalint.config import Settings  # noqa: E402

SPLITS = ("tune", "test")


def lint_project(
    project: Project, jobs: int, select: tuple[str, ...] | None = None
) -> tuple[list[Finding], list[str]]:
    """xlalint's findings on the project's listed files, and the files it could not lint."""
    root = project_root(project.requirement)
    paths = {str(root / name): name for name in project.files}
    missing = [name for path, name in paths.items() if not Path(path).is_file()]
    if missing:
        raise SystemExit(f"{project.name}: listed file(s) not in {root}: {missing}")
    # Settings built here, not read from disk: the project's own config must not apply.
    settings = Settings(root=root, select=select)
    report = check_paths([Path(p) for p in paths], settings, jobs=jobs, cache=None)
    findings = [
        Finding(project.name, paths[d.filename], d.start.row, d.code, d.message)
        for d in report.diagnostics
    ]
    errors = [f"{project.name}/{paths[e.filename]}: {e.reason}" for e in report.errors]
    return findings, errors


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _rule_json(row: RuleScore) -> dict[str, Any]:
    return {
        "tp_findings": row.tp_findings,
        "fp": row.fp,
        "tp_labels": row.tp_labels,
        "fn": row.fn,
        "precision": row.precision,
        "recall": row.recall,
    }


def _where(item: Finding | Label) -> str:
    return f"{item.project}/{item.file}:{item.line}"


def split_json(projects: list[Project], result: Score, errors: list[str]) -> dict[str, Any]:
    labels = [label for project in projects for label in project.labels]
    return {
        "projects": [project.name for project in projects],
        "files": sum(len(project.files) for project in projects),
        "labels": len(labels),
        "borderline": sum(label.kind == "borderline" for label in labels),
        "hard_negatives": sum(not label.expect and label.counted for label in labels),
        "overall": {
            "tp": len(result.tp),
            "fp": len(result.fp),
            "fn": len(result.fn),
            "ignored": len(result.ignored),
            "precision": result.precision,
            "recall": result.recall,
        },
        "rules": {code: _rule_json(row) for code, row in result.per_rule().items()},
        "fp": [
            {
                "where": _where(false.finding),
                "code": false.finding.code,
                "message": false.finding.message,
                "reason": false.reason,
                "label_note": false.label.note if false.label else "",
            }
            for false in result.fp
        ],
        "fn": [
            {"where": _where(label), "code": label.code, "note": label.note} for label in result.fn
        ],
        "errors": errors,
    }


def print_split(name: str, data: dict[str, Any], show: set[str]) -> None:
    print(
        f"== {name} split: {len(data['projects'])} projects, {data['files']} files, "
        f"{data['labels']} labels ({data['borderline']} borderline, "
        f"{data['hard_negatives']} hard negatives) =="
    )
    print(f"{'rule':<8} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>7}")
    for code, row in data["rules"].items():
        # Findings carry full codes and labels may carry a family: a family row has only
        # label-side counts, a code row counts its findings (TP) for precision.
        tp = row["tp_findings"] if len(code) == 6 else row["tp_labels"]
        print(
            f"{code:<8} {tp:>4} {row['fp']:>4} {row['fn']:>4} "
            f"{_ratio(row['precision']):>10} {_ratio(row['recall']):>7}"
        )
    total = data["overall"]
    print(
        f"{'overall':<8} {total['tp']:>4} {total['fp']:>4} {total['fn']:>4} "
        f"{_ratio(total['precision']):>10} {_ratio(total['recall']):>7}"
        f"   ({total['ignored']} finding(s) on borderline labels ignored)"
    )
    if "fp" in show:
        print(f"-- false positives ({len(data['fp'])})")
        for item in data["fp"]:
            extra = f"  [{item['reason']}: {item['label_note']}]" if item["label_note"] else ""
            reason = "" if extra else f"  [{item['reason']}]"
            print(f"{item['where']} {item['code']} {item['message']}{reason}{extra}")
    if "fn" in show:
        print(f"-- misses ({len(data['fn'])})")
        for item in data["fn"]:
            print(f"{item['where']} {item['code']} {item['note']}")
    for error in data["errors"]:
        print(f"!! could not lint {error}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--show", default="", help="comma-separated: fp, fn")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--project", action="append", help="only these projects (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="lint worker processes")
    parser.add_argument(
        "--select", help="score these rules instead of the default set (codes, prefixes, ALL)"
    )
    args = parser.parse_args(argv)
    select = tuple(args.select.split(",")) if args.select else None
    show = {part.strip() for part in args.show.split(",") if part.strip()}
    if show - {"fp", "fn"}:
        parser.error(f"--show takes fp and/or fn, got {args.show!r}")

    known = {project.name for project in load_projects()}
    unknown = set(args.project or ()) - known
    if unknown:
        parser.error(f"unknown project(s) {sorted(unknown)}; known: {sorted(known)}")
    splits = SPLITS if args.split == "all" else (args.split,)
    out: dict[str, Any] = {}
    for split in splits:
        projects = [
            p
            for p in load_projects()
            if p.split == split and (not args.project or p.name in args.project)
        ]
        findings: list[Finding] = []
        errors: list[str] = []
        for project in projects:
            found, failed = lint_project(project, args.jobs, select)
            findings += found
            errors += failed
        labels = [label for project in projects for label in project.labels]
        out[split] = split_json(projects, score(findings, labels), errors)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for split, data in out.items():
            print_split(split, data, show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
