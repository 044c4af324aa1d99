"""Read each torch_xla release's wheel and print which APIs xlalint relies on it has.

The table in docs/target-version.md, and the dates in xlalint/analysis/xla_api.py, come
from this script, not from memory. It downloads the wheels (80-200 MB each; not run in
CI), reads the sources it needs straight from the zip files, and compares what it finds
with `xla_api.HISTORY`:

    python scripts/torch_xla_api_table.py --wheels /tmp/txla-wheels        # download, print
    python scripts/torch_xla_api_table.py --wheels /tmp/txla-wheels --check # exit 1 on drift

An API "exists" when its module defines the name at top level (a `def`, a class or an
assignment; for `torch_xla.device`/`sync`/`launch`, in torch_xla/torch_xla.py, which
torch_xla/__init__.py star-imports); it is "deprecated" when that definition is wrapped
in a `deprecated(...)` call or decorator. The precision environment variables are
deprecated in the release whose native library first carries the notice naming them.
Delete the wheels afterwards.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xlalint.analysis.xla_api import ENV_HISTORY, HISTORY, SUPPORTED, History, Release

FLAT = "torch_xla/torch_xla.py"
MODULE_FILES = {
    "torch_xla.core.xla_model": "torch_xla/core/xla_model.py",
    "torch_xla.runtime": "torch_xla/runtime.py",
    "torch_xla.debug.metrics": "torch_xla/debug/metrics.py",
    "torch_xla.distributed.xla_multiprocessing": "torch_xla/distributed/xla_multiprocessing.py",
    "torch_xla.distributed.parallel_loader": "torch_xla/distributed/parallel_loader.py",
    "torch_xla.distributed.data_parallel": "torch_xla/distributed/data_parallel.py",
}


@dataclass(frozen=True)
class Found:
    exists: bool
    deprecated: bool = False


def wheel_for(folder: Path, release: Release, download: bool) -> Path:
    version = f"{release}.0"
    found = sorted(folder.glob(f"torch_xla-{version}-*.whl"))
    if found or not download:
        if not found:
            sys.exit(f"no torch_xla {version} wheel in {folder}")
        return found[0]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
         "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
         "-d", str(folder), f"torch_xla=={version}"],
        check=True,
    )  # fmt: skip
    return wheel_for(folder, release, download=False)


def _is_deprecated_call(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "deprecated"


def top_level(source: str) -> dict[str, Found]:
    """Names a module defines at top level, and whether each is wrapped in `deprecated`."""
    names: dict[str, Found] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            deprecated = any(
                _is_deprecated_call(d) or getattr(d, "id", "") == "deprecated"
                for d in node.decorator_list
            )
            names[node.name] = Found(True, deprecated)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = Found(True, _is_deprecated_call(node.value))
    return names


def sync_parameters(source: str) -> list[str]:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "sync":
            return [a.arg for a in node.args.args]
    return []


def read_release(wheel: Path) -> tuple[dict[str, Found], list[str], dict[str, str]]:
    """The APIs of HISTORY and the variables of ENV_HISTORY as found in `wheel` (a variable
    exists where the native library names it, and is deprecated where it carries a notice
    about it), `torch_xla.sync`'s parameters, and each variable's notice."""
    with zipfile.ZipFile(wheel) as archive:
        files = set(archive.namelist())

        def text(name: str) -> str:
            return archive.read(name).decode("utf-8") if name in files else ""

        flattened = "from .torch_xla import *" in text("torch_xla/__init__.py")
        modules = {m: top_level(text(f)) for m, f in MODULE_FILES.items()}
        modules["torch_xla"] = top_level(text(FLAT)) if flattened else {}
        found = {}
        for qualified in HISTORY:
            module, _, name = qualified.rpartition(".")
            found[qualified] = modules.get(module, {}).get(name, Found(False))
        sync = sync_parameters(text(FLAT)) if flattened else []
        native = next(n for n in files if re.search(r"(^|/)_XLAC\.cpython.*\.so$", n))
        library = archive.read(native)
    notices = {}
    for variable in ENV_HISTORY:
        match = re.search(re.escape(variable.encode()) + rb" (will be|is) [ -~]{0,120}", library)
        notices[variable] = match[0].decode() if match else ""
        found[variable] = Found(variable.encode() in library, bool(match))
    return found, sync, notices


def history_of(rows: dict[Release, dict[str, Found]], qualified: str) -> History:
    """`introduced`, `deprecated` and `removed` as the wheels show them."""
    releases = sorted(rows)
    present = [r for r in releases if rows[r][qualified].exists]
    warned = [r for r in releases if rows[r][qualified].deprecated]
    gone = [r for r in releases if present and r > present[-1]]
    return History(
        introduced=present[0] if present else releases[-1],
        deprecated=warned[0] if warned else None,
        removed=gone[0] if gone else None,
    )


def cell(found: Found) -> str:
    return "deprecated" if found.deprecated else ("yes" if found.exists else "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, default=Path("/tmp/txla-wheels"))
    parser.add_argument("--no-download", action="store_true", help="use the wheels there")
    parser.add_argument("--check", action="store_true", help="exit 1 if xla_api disagrees")
    args = parser.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    rows: dict[Release, dict[str, Found]] = {}
    syncs: dict[Release, list[str]] = {}
    notices: dict[Release, dict[str, str]] = {}
    for release in SUPPORTED:
        wheel = wheel_for(args.wheels, release, download=not args.no_download)
        rows[release], syncs[release], notices[release] = read_release(wheel)

    header = " | ".join(str(r) for r in SUPPORTED)
    print(f"| API | {header} | introduced / deprecated / removed |")
    print(f"|---|{'---|' * len(SUPPORTED)}---|")
    drift = []
    for qualified, recorded in {**HISTORY, **ENV_HISTORY}.items():
        seen = history_of(rows, qualified)
        cells = " | ".join(cell(rows[r][qualified]) for r in SUPPORTED)
        dates = " / ".join(str(d or "-") for d in (seen.introduced, seen.deprecated, seen.removed))
        name = f"`{qualified}` (env)" if qualified in ENV_HISTORY else f"`{qualified}`"
        print(f"| {name} | {cells} | {dates} |")
        if seen != recorded:
            drift.append(f"{qualified}: wheels say {seen}, xla_api says {recorded}")
    params = " | ".join(f"`({', '.join(syncs[r])})`" if syncs[r] else "-" for r in SUPPORTED)
    print(f"| `torch_xla.sync` parameters | {params} | |")
    print()
    for variable in ENV_HISTORY:
        texts = {notices[r][variable] for r in SUPPORTED} - {""}
        for text in sorted(texts):
            first = next(r for r in SUPPORTED if notices[r][variable] == text)
            print(f"- {first}: `{text}`")
    if args.check and drift:
        print("\n".join(drift), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
