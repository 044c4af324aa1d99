"""Which files to lint.

Directories are walked for `.py` and `.pyi` files, skipping `exclude`/`extend-exclude`
patterns (gitignore syntax, relative to the config's folder) and whatever `.gitignore` files
on the way ignore. Files named on the command line are always linted, as in ruff. Symbolic
links to directories are not followed, so a link loop cannot trap the walk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from xlalint.config import Settings

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class Discovered:
    files: list[Path]
    missing: list[Path]  # named on the command line but absent


def _spec(patterns: Iterable[str]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitwildmatch", patterns)


class _Ignores:
    """`.gitignore` files met on the way down, each applying below its own folder."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.PathSpec | None] = {}

    def spec_for(self, folder: Path) -> pathspec.PathSpec | None:
        if folder not in self._specs:
            gitignore = folder / ".gitignore"
            spec = None
            if gitignore.is_file():
                try:
                    lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = _spec(lines)
                except OSError:
                    spec = None
            self._specs[folder] = spec
        return self._specs[folder]

    def ignored(self, path: Path, is_dir: bool, chain: list[Path]) -> bool:
        for folder in chain:
            spec = self.spec_for(folder)
            if spec is None:
                continue
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(relative):
                return True
        return False


def discover(paths: Iterable[Path], settings: Settings) -> Discovered:
    excludes = _spec([*settings.exclude, *settings.extend_exclude])
    root = settings.root.resolve()
    files: list[Path] = []
    missing: list[Path] = []
    ignores = _Ignores()

    def matches(path: Path, is_dir: bool, base: Path) -> bool:
        try:
            relative = path.absolute().relative_to(base).as_posix()
        except ValueError:
            relative = path.name
        suffix = "/" if is_dir else ""
        return excludes.match_file(relative + suffix) or excludes.match_file(path.name + suffix)

    for given in paths:
        if given.is_dir():
            # A folder named on the command line is linted even if excluded; patterns then
            # apply to what is inside it, relative to it.
            base = given.absolute() if matches(given, True, root) else root
            walk_ignores = ignores if settings.respect_gitignore else None
            files.extend(_walk(given, lambda p, d, b=base: matches(p, d, b), walk_ignores))
        elif given.exists() or given.is_symlink():
            # Named explicitly: linted unless `force-exclude` (pre-commit passes every file).
            if not (settings.force_exclude and _excluded_anywhere(given, matches, root)):
                files.append(given)
        else:
            missing.append(given)
    unique = list(dict.fromkeys(files))
    return Discovered(files=sorted(unique, key=lambda p: p.as_posix()), missing=missing)


def _excluded_anywhere(path: Path, matches: Callable[[Path, bool, Path], bool], root: Path) -> bool:
    """Whether the file, or a folder it sits in, is excluded."""
    if matches(path, False, root):
        return True
    return any(matches(parent, True, root) for parent in path.absolute().parents)


def _walk(
    top: Path, excluded: Callable[[Path, bool], bool], ignores: _Ignores | None
) -> Iterator[Path]:
    stack: list[tuple[Path, list[Path]]] = [(top, [])]
    while stack:
        folder, chain = stack.pop()
        chain = [*chain, folder.absolute()] if ignores else chain
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if excluded(path, is_dir):
                continue
            if ignores and ignores.ignored(path.absolute(), is_dir, chain):
                continue
            if is_dir:
                stack.append((path, chain))
            elif path.suffix in PYTHON_SUFFIXES and (entry.is_file() or entry.is_symlink()):
                yield path
