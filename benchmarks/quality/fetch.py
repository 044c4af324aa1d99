"""Download and unpack the pinned distributions the labelled corpus reads.

    python benchmarks/quality/fetch.py            # every project in projects/
    python benchmarks/quality/fetch.py torchtune  # some of them

Each project's `requirement` (`name==version`) is fetched with `pip download --no-deps`
(a wheel when the registry has one, else the sdist) into a cache outside the repository:
`$XLALINT_QUALITY_CACHE`, by default `~/.cache/xlalint-quality`. Archives land in
`downloads/` and are unpacked once into `src/<name>-<version>/`; the label files' paths are
relative to that folder (an sdist's single top-level folder is stripped).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

DEFAULT_CACHE = Path.home() / ".cache" / "xlalint-quality"


def cache_dir() -> Path:
    return Path(os.environ.get("XLALINT_QUALITY_CACHE") or DEFAULT_CACHE)


def _canonical(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _archive(downloads: Path, name: str, version: str) -> Path | None:
    """The wheel or sdist of exactly `name==version` in `downloads`, wheels first."""
    stem = _canonical(f"{name}-{version}")
    found = []
    for path in downloads.iterdir() if downloads.is_dir() else ():
        canonical = _canonical(path.name)
        if not canonical.startswith(stem) or canonical[len(stem) : len(stem) + 1] != "-":
            continue
        if path.name.endswith(".whl"):
            found.append((0, path))
        elif path.name.endswith((".tar.gz", ".zip")):
            found.append((1, path))
    return min(found)[1] if found else None


def _download(requirement: str, downloads: Path) -> None:
    downloads.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(downloads)]
    # A wheel needs no build step to be unpacked; fall back to the sdist only without one.
    wheel = subprocess.run([*base, "--only-binary", ":all:", requirement], check=False)
    if wheel.returncode != 0:
        subprocess.run([*base, requirement], check=True)


def _unpack(archive: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(partial)
    else:
        with tarfile.open(archive) as sdist:
            sdist.extractall(partial, filter="data")
    root = partial
    entries = list(partial.iterdir())
    if archive.name.endswith(".tar.gz") and len(entries) == 1 and entries[0].is_dir():
        root = entries[0]  # sdists hold one `name-version/` folder
    root.rename(target)
    shutil.rmtree(partial, ignore_errors=True)


def project_root(requirement: str, cache: Path | None = None) -> Path:
    """The unpacked distribution of `requirement`, fetching it on first use."""
    name, _, version = requirement.partition("==")
    cache = cache or cache_dir()
    target = cache / "src" / f"{_canonical(name)}-{version}"
    if target.is_dir():
        return target
    downloads = cache / "downloads"
    archive = _archive(downloads, name, version)
    if archive is None:
        _download(requirement, downloads)
        archive = _archive(downloads, name, version)
    if archive is None:
        raise SystemExit(f"pip download {requirement} left no archive in {downloads}")
    target.parent.mkdir(parents=True, exist_ok=True)
    _unpack(archive, target)
    return target


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scoring import load_projects

    wanted = set(argv if argv is not None else sys.argv[1:])
    for project in load_projects():
        if wanted and project.name not in wanted:
            continue
        root = project_root(project.requirement)
        missing = [f for f in project.files if not (root / f).is_file()]
        state = f"{len(missing)} listed file(s) missing: {missing}" if missing else "ok"
        print(f"{project.name:<20} {project.requirement:<28} {root}  {state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
