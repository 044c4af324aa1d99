"""Which files to lint.

Directories are walked for `.py`, `.pyi` and `.ipynb` files, skipping `exclude`/`extend-exclude`
patterns (gitignore syntax, relative to the config's folder) and whatever git ignores: the
`.gitignore` files on the way (and those of the folders above, up to the git repository's
root), the repository's `.git/info/exclude` and git's global excludes file. Files
named on the command line are always linted, as in ruff. Symbolic links to directories are
not followed, so a link loop cannot trap the walk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlalint.config import Settings

if TYPE_CHECKING:  # imported when a pattern is first needed (~50 ms): never for named files
    import pathspec

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks: `extend-exclude = ["*.ipynb"]` skips them


@dataclass(frozen=True)
class Discovered:
    files: list[Path]
    missing: list[Path]  # named on the command line but absent
    # Folders named on the command line in which no Python file is linted: worth a warning.
    empty: list[Path] = field(default_factory=list)


def _spec(patterns: Iterable[str]) -> pathspec.GitIgnoreSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _read_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    """The patterns of an ignore file, or None when there is none (or it cannot be read)."""
    try:
        if not path.is_file():
            return None
        return _spec(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


def _git(repository: Path, *args: str) -> str:
    """What `git ARGS` prints in `repository`, or "" where git is missing or fails."""
    import subprocess  # only folders ask git for their excludes, not named files

    try:
        result = subprocess.run(
            ["git", *args], cwd=repository, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def repository_excludes(repository: Path) -> list[Path]:
    """The repository's own excludes file (`.git/info/exclude`, in the common git folder of
    a worktree) and git's global one (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`
    or `~/.config/git/ignore`), as git itself finds them; in that order of precedence."""
    info = _git(repository, "rev-parse", "--git-path", "info/exclude")
    own = repository / info if info else repository / ".git" / "info" / "exclude"
    configured = _git(repository, "config", "--path", "--get", "core.excludesFile")
    if configured:
        return [own, Path(configured).expanduser()]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [own, Path(xdg) / "git" / "ignore"]


class _Ignores:
    """`.gitignore` files met on the way down, each applying below its own folder, then
    the repository's `.git/info/exclude` and git's global excludes file, in git's order."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._repository_specs: dict[Path, list[pathspec.GitIgnoreSpec]] = {}

    def spec_for(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            self._specs[folder] = _read_spec(folder / ".gitignore")
        return self._specs[folder]

    def repository_specs(self, root: Path) -> list[pathspec.GitIgnoreSpec]:
        """`info/exclude`, then the global excludes, for the repository at `root`."""
        if root not in self._repository_specs:
            specs = []
            if (root / ".git").exists():
                specs = [s for f in repository_excludes(root) if (s := _read_spec(f)) is not None]
            self._repository_specs[root] = specs
        return self._repository_specs[root]

    def ignored(
        self, path: Path, is_dir: bool, chain: list[Path], repository: Path | None = None
    ) -> bool:
        # As in git, the deepest .gitignore with a matching pattern decides, so a `!pattern`
        # in a sub-folder re-includes what a folder above ignored; only where none has a
        # say do the repository's own excludes and then the global ones.
        for folder in reversed(chain):
            spec = self.spec_for(folder)
            if spec is None:
                continue
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            verdict = _verdict(spec, relative)
            if verdict is not None:
                return verdict
        if repository is not None:
            relative = path.relative_to(repository).as_posix() + ("/" if is_dir else "")
            for spec in self.repository_specs(repository):
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


def _exclude_matcher(settings: Settings) -> Callable[[Path, bool, Path], bool]:
    """Whether `exclude`/`extend-exclude` match a path (a folder when `is_dir`), taken
    relative to `base` so that anchored patterns (`/vendor`, `src/gen`) stay anchored."""
    excludes: list[pathspec.GitIgnoreSpec] = []  # built on first use

    def matches(path: Path, is_dir: bool, base: Path) -> bool:
        if not excludes:
            excludes.append(_spec([*settings.exclude, *settings.extend_exclude]))
        try:
            relative = path.absolute().relative_to(base).as_posix()
        except ValueError:
            relative = path.name
        return excludes[0].match_file(relative + ("/" if is_dir else ""))

    return matches


def discover(paths: Iterable[Path], settings: Settings) -> Discovered:
    matches = _exclude_matcher(settings)
    root = settings.root.resolve()
    files: list[Path] = []
    missing: list[Path] = []
    empty: list[Path] = []
    ignores = _Ignores()

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


def force_excluded(path: Path, settings: Settings) -> bool:
    """Whether `force-exclude` drops a file named on the command line (or a buffer named by
    `--stdin-filename`, which need not exist on disk)."""
    if not settings.force_exclude:
        return False
    return _excluded_anywhere(path, _exclude_matcher(settings), settings.root.resolve())


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


def _repo_parents(top: Path, repository: Path | None) -> list[Path]:
    """The folders above `top` up to its git repository's root, outermost first.

    Their `.gitignore` files apply inside `top` too, as they do for git, unless one of them
    ignores `top` itself: a folder named on the command line is linted.
    """
    if repository is None:
        return []
    top = _normalized(top)
    return [parent for parent in reversed(top.parents) if parent.is_relative_to(repository)]


def _repository_root(top: Path) -> Path | None:
    """The git repository `top` is in (the folder holding `.git`), if any."""
    top = _normalized(top)
    return next((f for f in (top, *top.parents) if (f / ".git").exists()), None)


def _walk(
    top: Path, excluded: Callable[[Path, bool], bool], ignores: _Ignores | None
) -> Iterator[Path]:
    repository = _repository_root(top)
    parents: list[Path] = []
    if ignores:
        parents = [
            folder
            for folder in _repo_parents(top, repository)
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
            if ignores and ignores.ignored(_normalized(path), is_dir, chain, repository):
                continue
            if is_dir:
                stack.append((path, chain))
            elif path.suffix in PYTHON_SUFFIXES and (entry.is_file() or entry.is_symlink()):
                yield path
