"""Prove the ast screen changes no finding on real code, and measure what it saves.

Every .py file of the packages of `benchmarks/robustness.py` (downloaded and unpacked there,
into ~/.cache/xlalint-robustness) is linted with xlalint's default rules twice, with the
screen and with `XLALINT_NO_SCREEN=1`; the findings (codes, positions, messages, fixes) must
be identical. Prints per package the files that differ (none, or it is a bug), the share of
lines handed to libcst, and the CPU seconds of both ways.

    python benchmarks/screen_check.py [--packages diffusers,timm] [--jobs 2] [--sample 100]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from robustness import CACHE, PACKAGES, package_root, python_files  # noqa: E402

from xlalint import engine, screen  # noqa: E402
from xlalint.registry import all_rules, select_rules  # noqa: E402
from xlalint.sources import SourceError, decode  # noqa: E402

_RULES: list[Any] = []


def _init(every_rule: bool) -> None:
    _RULES[:] = list(all_rules().values()) if every_rule else list(select_rules(None))
    sys.setrecursionlimit(10_000)


def _lint(text: str, name: str, screened: bool) -> tuple[float, Any]:
    os.environ[screen.ENV_NO_SCREEN] = "" if screened else "1"
    start = time.process_time()
    result = engine.lint_source(text, name, _RULES)
    return time.process_time() - start, result


def check_file(path: str) -> dict[str, Any]:
    try:
        text = decode(Path(path).read_bytes()).text
    except (OSError, SourceError):
        return {"path": path, "skipped": True}
    full_s, full = _lint(text, path, screened=False)
    screen_s, screened = _lint(text, path, screened=True)
    nonblank = sum(1 for line in text.splitlines() if line.strip())
    kept = nonblank
    _, tree = engine.cpython_parse(text, path)
    active = engine.rules_for_text(text, _RULES)
    if tree is not None and active:
        plan = screen.screen_text(tree, text, active)
        if plan is not None:
            kept = sum(1 for line in plan.text.splitlines() if line.strip())
    return {
        "path": path,
        "same": full == screened,
        "nonblank": nonblank,
        "kept": kept,
        "full_s": full_s,
        "screen_s": screen_s,
        "findings": len(full.diagnostics),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default=",".join(PACKAGES), help="comma-separated")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--all-rules", action="store_true", help="every rule, not the defaults")
    parser.add_argument(
        "--sample", type=int, default=0, help="at most this many files a package, evenly spread"
    )
    args = parser.parse_args()
    total_differ = 0
    print(
        "| package | files | differ | findings | non-blank lines to libcst (of all) "
        "| CPU s full | CPU s screened | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.packages.split(","):
        files = [str(p) for p in python_files(package_root(name, CACHE), name)]
        if args.sample and len(files) > args.sample:
            files = [files[i * len(files) // args.sample] for i in range(args.sample)]
        with multiprocessing.get_context("fork").Pool(
            args.jobs, initializer=_init, initargs=(args.all_rules,)
        ) as pool:
            rows = [r for r in pool.imap_unordered(check_file, files, chunksize=4) if "same" in r]
        differ = [r["path"] for r in rows if not r["same"]]
        total_differ += len(differ)
        nonblank = sum(r["nonblank"] for r in rows)
        kept = sum(r["kept"] for r in rows)
        full_s = sum(r["full_s"] for r in rows)
        screen_s = sum(r["screen_s"] for r in rows)
        print(
            f"| {name} | {len(rows)} | {len(differ)} | {sum(r['findings'] for r in rows)} "
            f"| {kept:,} of {nonblank:,} ({kept / max(nonblank, 1):.0%}) "
            f"| {full_s:.1f} | {screen_s:.1f} "
            f"| {screen_s / max(full_s, 1e-9):.2f} |",
            flush=True,
        )
        for path in differ[:20]:
            print(f"  differs: {path}", file=sys.stderr)
    sys.exit(1 if total_differ else 0)


if __name__ == "__main__":
    main()
