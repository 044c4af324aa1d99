"""Run xlalint over real codebases and prove it never breaks them.

On demand, not part of the test suite (it downloads packages and takes minutes):

    python benchmarks/robustness.py                          # every package
    python benchmarks/robustness.py --packages diffusers,stdlib --jobs 2
    python benchmarks/robustness.py --report-only            # rewrite the reports

Pinned packages are fetched with `pip download --no-deps` into a cache outside the repo
(~/.cache/xlalint-robustness), unpacked, and every .py file is linted with every registered
rule, in worker processes. Each file with findings is then fixed with unsafe fixes too, and
must: not crash, still parse and compile (if it compiled before), be stable under a second
fix, and change no line outside the findings and edits of each fix round. The Python
standard library of the running interpreter is the non-torch control.

Results are kept per package in the cache, so a run is resumable: a package already done is
not run again unless `--rerun` says so. The reports (`benchmarks/ROBUSTNESS.md`, counts only,
and `benchmarks/robustness_sample.md`, a seeded sample of findings per rule for a person to
review) are written from whatever packages have results.
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing
import os
import random
import subprocess
import sys
import sysconfig
import tarfile
import time
import traceback
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # fix_promises: the checks the tests make

from fix_promises import compiles, lost_untouched_row, recorded_rounds  # noqa: E402

from xlalint import fixer  # noqa: E402
from xlalint.engine import lint_source  # noqa: E402
from xlalint.registry import all_rules  # noqa: E402
from xlalint.sources import SourceError, decode  # noqa: E402

PACKAGES = {
    "diffusers": "0.42.1",
    "transformers": "5.23.0",
    "accelerate": "1.15.0",
    "timm": "1.0.31",
    "lightning": "2.6.6",
    "stdlib": None,  # the running interpreter's own standard library
}
CACHE = Path.home() / ".cache" / "xlalint-robustness"
REVIEW_MARKER = "<!-- review: kept when this file is regenerated -->"


# -- fetching ---------------------------------------------------------------------------------


def package_root(name: str, cache: Path) -> Path:
    """The folder holding the package's unpacked source, downloading it if needed."""
    if name == "stdlib":
        return Path(sysconfig.get_paths()["stdlib"])
    version = PACKAGES[name]
    target = cache / "src" / f"{name}-{version}"
    if target.is_dir():
        return target
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    spec = f"{name}=={version}"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", spec, "-d", str(downloads)],
        check=True,
    )
    stem = f"{name}-{version}".lower()
    archives = [p for p in downloads.iterdir() if p.name.lower().replace("_", "-").startswith(stem)]
    if not archives:
        raise SystemExit(f"pip download {spec} left no archive in {downloads}")
    partial = target.with_suffix(".partial")
    partial.mkdir(parents=True, exist_ok=True)
    archive = archives[0]
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(partial)
    else:
        with tarfile.open(archive) as sdist:
            sdist.extractall(partial, filter="data")
    partial.rename(target)
    return target


def python_files(root: Path, name: str) -> list[Path]:
    files = sorted(root.rglob("*.py"))
    if name == "stdlib":
        files = [p for p in files if "site-packages" not in p.parts]
    return [p for p in files if p.is_file()]


# -- checking one file ------------------------------------------------------------------------


def check_file(job: tuple[str, str, str]) -> dict[str, Any]:
    """Lint and fix one file; every broken promise goes into `failures`."""
    package, root, relative = job
    rules = list(all_rules().values())
    out: dict[str, Any] = {
        "package": package,
        "file": relative,
        "findings": [],
        "applied": {},
        "failures": [],
        "error": None,
    }
    try:
        raw = (Path(root) / relative).read_bytes()
        source = decode(raw)
    except (SourceError, OSError) as error:
        out["error"] = f"unreadable: {error}"
        return out
    try:
        result = lint_source(source.text, relative, rules)
    except Exception:
        out["failures"].append(f"lint crashed: {traceback.format_exc(limit=-3)}")
        return out
    if result.error is not None:
        out["error"] = result.error.reason
        return out
    lines = source.text.splitlines()
    out["findings"] = [
        [d.code, d.start.row, lines[d.start.row - 1].strip() if d.start.row <= len(lines) else ""]
        for d in result.diagnostics
    ]
    if not result.diagnostics:
        return out
    try:
        with recorded_rounds() as rounds:
            outcome = fixer.fix_text(source, relative, rules, unsafe=True)
        again = fixer.fix_text(decode(outcome.encoded()), relative, rules, unsafe=True)
    except Exception:
        out["failures"].append(f"fix crashed: {traceback.format_exc(limit=-3)}")
        return out
    out["applied"] = dict(outcome.applied)
    if outcome.error is not None:
        out["failures"].append(f"fix reported an error lint did not: {outcome.error}")
        return out
    try:
        ast.parse(outcome.text)
    except SyntaxError as error:
        out["failures"].append(f"fixed file does not parse: {error}")
    if compiles(source.text) and not compiles(outcome.text):
        out["failures"].append("fixed file does not compile")
    if again.text != outcome.text or again.applied:
        out["failures"].append(f"second fix changed it again ({dict(again.applied)})")
    for before, after, findings in rounds.changes():
        if (row := lost_untouched_row(before, after, findings)) is not None:
            out["failures"].append(f"fix changed line {row}, outside every finding")
            break
    return out


# -- running a package ------------------------------------------------------------------------


def run_package(name: str, cache: Path, jobs: int, limit: int | None) -> dict[str, Any]:
    root = package_root(name, cache)
    files = python_files(root, name)[:limit]
    jobs_list = [(name, str(root), p.relative_to(root).as_posix()) for p in files]
    print(f"{name}: {len(files)} files under {root}", flush=True)
    results = []
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for i, result in enumerate(pool.imap_unordered(check_file, jobs_list, chunksize=2), 1):
            results.append(result)
            for failure in result["failures"]:
                print(f"  FAILURE {result['file']}: {failure.splitlines()[0]}", flush=True)
            if i % 50 == 0 or i == len(jobs_list):
                elapsed = time.perf_counter() - started
                print(f"  {name}: {i}/{len(jobs_list)} files, {elapsed:.0f} s", flush=True)
    results.sort(key=lambda r: r["file"])
    return {
        "package": name,
        "version": PACKAGES[name] or sys.version.split()[0],
        "seconds": round(time.perf_counter() - started, 1),
        "files": results,
    }


# -- reports ----------------------------------------------------------------------------------


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    findings: Counter[str] = Counter()
    applied: Counter[str] = Counter()
    for f in data["files"]:
        findings.update(code for code, *_ in f["findings"])
        applied.update(f["applied"])
    return {
        "files": len(data["files"]),
        "not_linted": sum(1 for f in data["files"] if f["error"]),
        "with_findings": sum(1 for f in data["files"] if f["findings"]),
        "findings": findings,
        "applied": applied,
        "failures": [(f["file"], x) for f in data["files"] for x in f["failures"]],
    }


def review_sample(
    data: dict[str, Any], size: int, seed: int
) -> dict[str, list[tuple[str, int, str]]]:
    """Up to `size` findings per rule of one package, drawn reproducibly: what the run
    prints and robustness_sample.md lists for a person to judge."""
    rng = random.Random(seed)
    by_rule: dict[str, list[tuple[str, int, str]]] = {}
    for f in data["files"]:
        for code, row, line in f["findings"]:
            by_rule.setdefault(code, []).append((f["file"], row, line))
    return {code: rng.sample(hits, min(size, len(hits))) for code, hits in sorted(by_rule.items())}


def write_reports(results: dict[str, dict[str, Any]], sample: int, seed: int) -> None:
    names = [n for n in PACKAGES if n in results]
    sums = {n: summarize(results[n]) for n in names}
    codes = sorted({c for s in sums.values() for c in s["findings"]} | set(all_rules()))
    md = [
        "# Robustness on real codebases",
        "",
        "Generated by `python benchmarks/robustness.py` (see its docstring). Every .py file of",
        "each package is linted with every registered rule; each file with findings is fixed",
        "with unsafe fixes and must parse, compile, be stable under a second fix and change",
        "nothing outside its findings. A failure is any broken promise or crash.",
        "",
        "| package | version | files | not linted | files with findings | findings "
        "| fixes applied | failures |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n in names:
        s = sums[n]
        md.append(
            f"| {n} | {results[n]['version']} | {s['files']} | {s['not_linted']} "
            f"| {s['with_findings']} | {sum(s['findings'].values())} "
            f"| {sum(s['applied'].values())} | {len(s['failures'])} |"
        )
    md += [
        "",
        '"Not linted": files xlalint reports as an error (syntax it cannot parse, such as',
        "the standard library's deliberately broken test files, or undecodable bytes).",
        "",
        "## Findings per rule (fixes applied in brackets)",
        "",
        "| rule | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for code in codes:
        cells = [
            f"{sums[n]['findings'][code]} ({sums[n]['applied'][code]})"
            if sums[n]["findings"][code]
            else "0"
            for n in names
        ]
        md.append(f"| {code} | " + " | ".join(cells) + " |")
    failures = [(n, f, x) for n in names for f, x in sums[n]["failures"]]
    md += ["", "## Failures", ""]
    md += [f"- {n}/{f}: {x.splitlines()[0]}" for n, f, x in failures] or ["None."]
    path = HERE / "ROBUSTNESS.md"
    review = ""
    if path.is_file() and REVIEW_MARKER in (old := path.read_text(encoding="utf-8")):
        review = old[old.index(REVIEW_MARKER) :]
    path.write_text("\n".join(md) + "\n\n" + (review or REVIEW_MARKER + "\n"), encoding="utf-8")

    out = [
        "# Sample of findings for review",
        "",
        f"Up to {sample} findings per rule and package (seed {seed}), as the run prints them.",
        "Verdicts and the false-positive patterns found are in ROBUSTNESS.md.",
    ]
    for n in names:
        picked = review_sample(results[n], sample, seed)
        out += ["", f"## {n}"]
        for code, hits in picked.items():
            out += ["", f"### {code} ({sums[n]['findings'][code]} findings)", ""]
            out += [f"- `{file}:{row}`: `{line[:140]}`" for file, row, line in hits]
    (HERE / "robustness_sample.md").write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote {path} and {HERE / 'robustness_sample.md'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default=",".join(PACKAGES), help="comma-separated")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, help="at most this many files per package")
    parser.add_argument("--rerun", action="store_true", help="run packages already done")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the reports")
    parser.add_argument("--sample", type=int, default=5, help="findings per rule to review")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    wanted = [n.strip() for n in args.packages.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in PACKAGES]
    if unknown:
        parser.error(f"unknown packages {unknown}; choose from {list(PACKAGES)}")
    store = args.cache / "results"
    store.mkdir(parents=True, exist_ok=True)
    failed = 0
    if not args.report_only:
        for name in wanted:
            target = store / f"{name}.json"
            if target.is_file() and not args.rerun:
                print(f"{name}: done before ({target}); --rerun to run again", flush=True)
                continue
            data = run_package(name, args.cache, args.jobs, args.limit)
            target.write_text(json.dumps(data), encoding="utf-8")
            s = summarize(data)
            failed += len(s["failures"])
            print(
                f"{name}: {s['files']} files, {s['not_linted']} not linted, "
                f"{sum(s['findings'].values())} findings, "
                f"{sum(s['applied'].values())} fixes applied, {len(s['failures'])} failures, "
                f"{data['seconds']} s",
                flush=True,
            )
            picked = review_sample(data, args.sample, args.seed)
            for code, count in sorted(s["findings"].items()):
                print(f"    {code}: {count} ({s['applied'][code]} fixed)")
                for file, row, line in picked[code]:
                    print(f"        {file}:{row}: {line[:120]}")
    results = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(store.glob("*.json"))
        if p.stem in PACKAGES
    }
    write_reports(results, args.sample, args.seed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
