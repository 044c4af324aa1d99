"""Which files to lint.

Directories are walked for `.py` and `.pyi` files, skipping `exclude`/`extend-exclude`
patterns (gitignore syntax, relative to the config's folder) and whatever `.gitignore` files
on the way ignore (and those of the folders above, up to the git repository's root). Files
named on the command line are always linted, as in ruff. Symbolic links to directories are
not followed, so a link loop cannot trap the walk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from xlalint.config import Settings

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class Discovered:
    files: list[Path]
    missing: list[Path]  # named on the command line but absent
    # Folders named on the command line in which no Python file is linted: worth a warning.
    empty: list[Path] = field(default_factory=list)


def _spec(patterns: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


class _Ignores:
    """`.gitignore` files met on the way down, each applying below its own folder."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}

    def spec_for(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
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
        # As in git, the deepest .gitignore with a matching pattern decides, so a `!pattern`
        # in a sub-folder re-includes what a folder above ignored.
        for folder in reversed(chain):
            spec = self.spec_for(folder)
            if spec is None:
                continue
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            verdict = _verdict(spec, relative)
            if verdict is not None:
                return verdict
        return False


def _verdict(spec: pathspec.GitIgnoreSpec, relative: str) -> bool | None:
    """True if `spec` ignores `relative`, False if it re-includes it, None if it is silent."""
    verdict = None
    for pattern in spec.patterns:
        if pattern.include is not None and pattern.match_file(relative) is not None:
            verdict = pattern.include
    return verdict


def discover(paths: Iterable[Path], settings: Settings) -> Discovered:
    excludes = _spec([*settings.exclude, *settings.extend_exclude])
    root = settings.root.resolve()
    files: list[Path] = []
    missing: list[Path] = []
    empty: list[Path] = []
    ignores = _Ignores()

    def matches(path: Path, is_dir: bool, base: Path) -> bool:
        # Relative to `base`, so that anchored patterns (`/vendor`, `src/gen`) stay anchored.
        try:
            relative = path.absolute().relative_to(base).as_posix()
        except ValueError:
            relative = path.name
        return excludes.match_file(relative + ("/" if is_dir else ""))

    for given in paths:
        if given.is_dir():
            # A folder named on the command line is linted even if excluded; patterns then
            # apply to what is inside it, relative to it.
            base = given.absolute() if matches(given, True, root) else root
            walk_ignores = ignores if settings.respect_gitignore else None
            found = list(_walk(given, lambda p, d, b=base: matches(p, d, b), walk_ignores))
            if not found:
                empty.append(given)
            files.extend(found)
        elif given.exists() or given.is_symlink():
            # Named explicitly: linted unless `force-exclude` (pre-commit passes every file).
            if not (settings.force_exclude and _excluded_anywhere(given, matches, root)):
                files.append(given)
        else:
            missing.append(given)
    unique = list(dict.fromkeys(files))
    return Discovered(
        files=sorted(unique, key=lambda p: p.as_posix()), missing=missing, empty=empty
    )


def _excluded_anywhere(path: Path, matches: Callable[[Path, bool, Path], bool], root: Path) -> bool:
    """Whether the file, or a folder it sits in below the project root, is excluded.

    Folders at or above the root are not the project's to exclude: a checkout that lives
    in, say, `~/build/` must not lose every file to the default `build` pattern.
    """
    if matches(path, False, root):
        return True
    for parent in _normalized(path).parents:
        if parent == root or not parent.is_relative_to(root):
            break
        if matches(parent, True, root):
            return True
    return False


def _normalized(path: Path) -> Path:
    """Absolute, with `..` resolved lexically (symbolic links are left alone)."""
    return Path(os.path.abspath(path))


def _repo_parents(top: Path) -> list[Path]:
    """The folders above `top` up to its git repository's root, outermost first.

    Their `.gitignore` files apply inside `top` too, as they do for git, unless one of them
    ignores `top` itself: a folder named on the command line is linted.
    """
    top = _normalized(top)
    above: list[Path] = []
    if (top / ".git").exists():
        return above
    for parent in top.parents:
        above.append(parent)
        if (parent / ".git").exists():
            return above[::-1]
    return []


def _walk(
    top: Path, excluded: Callable[[Path, bool], bool], ignores: _Ignores | None
) -> Iterator[Path]:
    parents: list[Path] = []
    if ignores:
        parents = [
            folder
            for folder in _repo_parents(top)
            if not ignores.ignored(_normalized(top), True, [folder])
        ]
    stack: list[tuple[Path, list[Path]]] = [(top, parents)]
    while stack:
        folder, chain = stack.pop()
        chain = [*chain, _normalized(folder)] if ignores else chain
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if excluded(path, is_dir):
                continue
            if ignores and ignores.ignored(_normalized(path), is_dir, chain):
                continue
            if is_dir:
                stack.append((path, chain))
            elif path.suffix in PYTHON_SUFFIXES and (entry.is_file() or entry.is_symlink()):
                yield path
