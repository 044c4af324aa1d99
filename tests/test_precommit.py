"""The `xlalint-check` pre-commit hook, installed by the real pre-commit as users install it.

The working tree is copied (without .venv, .git and caches) into a fresh git repository
and committed; a second repository's .pre-commit-config.yaml points at it by path and
commit, so pre-commit clones it and builds the hook's environment from
.pre-commit-hooks.yaml and pyproject.toml (dependencies come from the package index).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BAD, BAD_COL, BAD_ROW, CLEAN, ROOT, write

TIMEOUT = 300  # the first run builds the hook's virtualenv
SKIP = shutil.ignore_patterns(
    ".venv",
    ".git",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".xlalint_cache",
    "*.egg-info",
    "build",
    "dist",
)


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        GIT_AUTHOR_NAME="xlalint tests",
        GIT_AUTHOR_EMAIL="tests@xlalint.invalid",
        GIT_COMMITTER_NAME="xlalint tests",
        GIT_COMMITTER_EMAIL="tests@xlalint.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        PRE_COMMIT_HOME=str(home),
    )
    env.pop("XLALINT_OUTPUT_FORMAT", None)
    return env


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=TIMEOUT
    )


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    result = _run(["git", "-c", "commit.gpgsign=false", *args], cwd, env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """A committed copy of the working tree: (its path, HEAD sha, environment)."""
    if shutil.which("git") is None:
        pytest.fail("git is required for the pre-commit test")
    base = tmp_path_factory.mktemp("precommit")
    env = _git_env(base / "pre-commit-home")
    repo = base / "xlalint"
    shutil.copytree(ROOT, repo, ignore=SKIP, symlinks=True)
    _git(repo, env, "init", "-q")
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-q", "-m", "xlalint under test")
    return repo, _git(repo, env, "rev-parse", "HEAD"), env


def _pre_commit() -> str:
    script = Path(sys.executable).with_name("pre-commit")
    if not script.exists():
        pytest.fail("pre-commit is a dev dependency: pip install -e '.[dev]'")
    return str(script)


def test_xlalint_check_hook(tmp_path: Path, hook_repo: tuple[Path, str, dict[str, str]]) -> None:
    repo, sha, env = hook_repo
    project = tmp_path / "project"
    project.mkdir()
    _git(project, env, "init", "-q")
    write(
        project,
        {
            ".pre-commit-config.yaml": (
                "repos:\n"
                f"  - repo: {repo}\n"
                f"    rev: {sha}\n"
                "    hooks:\n"
                "      - id: xlalint-check\n"
                "        args: [--select, XLA101]\n"
            ),
            "pyproject.toml": '[tool.xlalint]\nextend-exclude = ["generated"]\n',
            "clean.py": CLEAN,
            "bad.py": BAD,
            "generated/model.py": BAD,  # excluded: pre-commit names it, --force-exclude skips it
        },
    )
    pre_commit = _pre_commit()

    # Only the clean file (and an excluded one) staged: the hook passes.
    _git(project, env, "add", ".pre-commit-config.yaml", "pyproject.toml", "clean.py")
    _git(project, env, "add", "generated/model.py")
    passed = _run([pre_commit, "run"], project, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "xlalint check" in passed.stdout and "Passed" in passed.stdout

    # The bad file staged too: the hook fails and names it.
    _git(project, env, "add", "bad.py")
    failed = _run([pre_commit, "run"], project, env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Failed" in failed.stdout
    assert "- hook id: xlalint-check" in failed.stdout
    assert f"bad.py:{BAD_ROW}:{BAD_COL}: XLA101 " in failed.stdout
    assert "clean.py:" not in failed.stdout
    assert "generated/model.py" not in failed.stdout

    # Files named explicitly, as in CI: the same verdicts.
    only_clean = _run([pre_commit, "run", "--files", "clean.py"], project, env)
    assert only_clean.returncode == 0, only_clean.stdout
    everything = _run([pre_commit, "run", "--all-files"], project, env)
    assert everything.returncode == 1
    assert f"bad.py:{BAD_ROW}:{BAD_COL}: XLA101 " in everything.stdout
