"""Which files `xlalint check` lints: the walk, .gitignore, exclusions, named files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import BAD, CLEAN, SELECT, run_cli, write

from xlalint.config import Settings, find_settings
from xlalint.discovery import discover

JSON = ("--output-format", "json")


def found(*paths: str, settings: Settings | None = None) -> list[str]:
    """The files discovered under `paths` (relative to the current folder), as posix text."""
    settings = settings or find_settings(Path.cwd())
    return [p.as_posix() for p in discover([Path(p) for p in paths], settings).files]


def linted(*args: str) -> list[str]:
    run = run_cli("check", *SELECT, *JSON, *args)
    assert run.exit_code in (0, 1), run.stderr
    return sorted({name for name, *_ in run.findings()})


def git_init(folder: Path) -> None:
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True)


def test_walks_folders_for_py_and_pyi_files_in_order(project: Path) -> None:
    write(
        project,
        {
            "b.py": CLEAN,
            "a.pyi": CLEAN,
            "pkg/z.py": CLEAN,
            "pkg/sub/y.py": CLEAN,
            "pkg/sub/data.json": "{}",
            "pkg/README.md": "",
            "pkg/script": "#!/usr/bin/env python\n",
            "pkg/compiled.pyc": b"\x00",
            "pkg/.hidden.py": CLEAN,
        },
    )
    assert found(".") == ["a.pyi", "b.py", "pkg/.hidden.py", "pkg/sub/y.py", "pkg/z.py"]


def test_named_files_are_linted_whatever_their_suffix(project: Path) -> None:
    write(project, {"script": BAD, "notes.txt": CLEAN})
    assert found("script", "notes.txt") == ["notes.txt", "script"]
    assert linted("script") == ["script"]


def test_each_file_once_whatever_the_spelling(project: Path) -> None:
    write(project, {"a.py": BAD, "pkg/b.py": BAD})
    assert found(".", "a.py", "./a.py", "pkg", "pkg/b.py") == ["a.py", "pkg/b.py"]
    run = run_cli("check", *SELECT, *JSON, ".", "a.py", "./a.py")
    assert [name for name, *_ in run.findings()] == ["a.py", "pkg/b.py"]


def test_missing_paths_are_reported_apart(project: Path) -> None:
    write(project, {"a.py": CLEAN})
    result = discover([Path("a.py"), Path("nope.py"), Path("gone")], find_settings(project))
    assert result.files == [Path("a.py")]
    assert result.missing == [Path("nope.py"), Path("gone")]


# -- .gitignore ------------------------------------------------------------------------------


def test_gitignore_files_are_respected(project: Path) -> None:
    write(
        project,
        {
            ".gitignore": "generated/\n*_pb2.py\n/top_only.py\n# a comment\n",
            "generated/a.py": BAD,
            "model_pb2.py": BAD,
            "pkg/model_pb2.py": BAD,
            "top_only.py": BAD,
            "pkg/top_only.py": BAD,  # `/top_only.py` is anchored at the .gitignore's folder
            "pkg/.gitignore": "local.py\n!keep_pb2.py\n",
            "pkg/local.py": BAD,
            "pkg/keep_pb2.py": BAD,  # re-included by the nested .gitignore
            "local.py": BAD,  # pkg/.gitignore applies inside pkg/ only
            "train.py": BAD,
        },
    )
    expected = ["local.py", "pkg/keep_pb2.py", "pkg/top_only.py", "train.py"]
    assert found(".") == expected
    assert linted() == expected


def test_respect_gitignore_false_lints_ignored_files(project: Path) -> None:
    write(project, {".gitignore": "*.py\n", "a.py": BAD, "pkg/b.py": BAD})
    assert found(".") == []
    write(project, {"pyproject.toml": "[tool.xlalint]\nrespect-gitignore = false\n"})
    assert found(".") == ["a.py", "pkg/b.py"]


def test_named_files_are_linted_even_if_gitignored(project: Path) -> None:
    write(project, {".gitignore": "generated/\n", "generated/a.py": BAD})
    assert linted("generated/a.py") == ["generated/a.py"]


def test_gitignore_of_the_repository_applies_to_a_subfolder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_init(project)
    write(
        project,
        {
            ".gitignore": "src/generated/\n*_pb2.py\n",
            "src/generated/a.py": BAD,
            "src/model_pb2.py": BAD,
            "src/train.py": BAD,
        },
    )
    assert found("src") == ["src/train.py"]
    monkeypatch.chdir(project / "src")
    assert found(".") == ["train.py"]
    assert linted() == ["train.py"]


def test_a_named_folder_is_linted_though_a_parent_gitignore_ignores_it(project: Path) -> None:
    git_init(project)
    write(project, {".gitignore": "generated/\n", "generated/a.py": BAD})
    assert found(".") == []
    assert found("generated") == ["generated/a.py"]


def test_gitignore_above_the_repository_does_not_apply(project: Path) -> None:
    write(project, {".gitignore": "*.py\n", "repo/a.py": BAD})
    git_init(project / "repo")
    assert found("repo") == ["repo/a.py"]


# -- exclude, extend-exclude, force-exclude -------------------------------------------------


@pytest.mark.parametrize(
    "folder", [".git", ".venv", "venv", "build", "dist", "node_modules", ".tox", ".mypy_cache"]
)
def test_default_excludes(project: Path, folder: str) -> None:
    write(project, {f"{folder}/a.py": BAD, f"pkg/{folder}/b.py": BAD, "c.py": BAD})
    assert found(".") == ["c.py"]
    # Named on the command line: linted, folder or file.
    assert found(folder) == [f"{folder}/a.py"]
    assert found(f"pkg/{folder}/b.py") == [f"pkg/{folder}/b.py"]


def test_exclude_patterns_are_gitignore_style(project: Path) -> None:
    write(
        project,
        {
            "pyproject.toml": "[tool.xlalint]\n"
            'extend-exclude = ["/vendor", "legacy_*.py", "docs/examples/", "**/fixtures/*.py"]\n',
            "vendor/a.py": BAD,
            "pkg/vendor/b.py": BAD,  # `/vendor` is anchored at the config's folder
            "legacy_train.py": BAD,
            "pkg/legacy_eval.py": BAD,
            "docs/examples/c.py": BAD,
            "docs/d.py": BAD,
            "tests/fixtures/e.py": BAD,
            "tests/f.py": BAD,
        },
    )
    assert found(".") == ["docs/d.py", "pkg/vendor/b.py", "tests/f.py"]


def test_excluded_folder_named_on_the_command_line_is_walked(project: Path) -> None:
    write(
        project,
        {
            "xlalint.toml": 'extend-exclude = ["third_party", "*_gen.py"]\n',
            "third_party/lib/a.py": BAD,
            "third_party/lib/b_gen.py": BAD,  # patterns still apply inside it
        },
    )
    assert found(".") == []
    assert found("third_party") == ["third_party/lib/a.py"]


def test_force_exclude(project: Path) -> None:
    write(
        project,
        {
            "xlalint.toml": 'extend-exclude = ["gen", "legacy_*.py"]\n',
            "gen/deep/a.py": BAD,
            "legacy_b.py": BAD,
            "build/c.py": BAD,
            "d.py": BAD,
        },
    )
    named = ["gen/deep/a.py", "legacy_b.py", "build/c.py", "d.py"]
    assert linted(*named) == sorted(named)
    assert linted("--force-exclude", *named) == ["d.py"]
    assert linted("--force-exclude", "./gen/deep/../deep/a.py") == []


def test_force_exclude_ignores_folders_above_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout under a folder named like a default exclude (`build`, `dist`, `venv`) is
    still linted by the pre-commit hook; only folders inside the project are excluded."""
    root = tmp_path / "build" / "dist" / "project"
    write(root, {"pyproject.toml": "[tool.xlalint]\n", "a.py": BAD, "build/b.py": BAD})
    monkeypatch.chdir(root)
    assert linted("--force-exclude", "a.py", "build/b.py") == ["a.py"]
    monkeypatch.chdir(tmp_path)
    assert linted("--force-exclude", "build/dist/project/a.py") == ["build/dist/project/a.py"]


# -- links -----------------------------------------------------------------------------------


def test_symlinked_folders_are_not_followed(project: Path) -> None:
    write(project, {"pkg/a.py": BAD, "other/b.py": BAD})
    (project / "pkg" / "loop").symlink_to(project / "pkg", target_is_directory=True)
    (project / "pkg" / "up").symlink_to(project, target_is_directory=True)
    (project / "pkg" / "link_to_other").symlink_to(project / "other", target_is_directory=True)
    assert found("pkg") == ["pkg/a.py"]
    assert linted("pkg") == ["pkg/a.py"]
    assert found("pkg/link_to_other") == ["pkg/link_to_other/b.py"]  # named: followed


def test_symlinked_files_are_linted(project: Path) -> None:
    write(project, {"real/a.py": BAD})
    (project / "pkg").mkdir()
    (project / "pkg" / "alias.py").symlink_to(project / "real" / "a.py")
    assert found("pkg") == ["pkg/alias.py"]
    assert linted("pkg") == ["pkg/alias.py"]


# -- git's other excludes: .git/info/exclude and the global excludes file -------------------


@pytest.fixture
def no_global_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git configuration of the tests' own: no user's global excludes leak in."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return config


def test_git_info_exclude_is_respected(project: Path, no_global_git_config: Path) -> None:
    git_init(project)
    write(
        project,
        {
            ".git/info/exclude": "secret.py\nvendored/\n",
            "secret.py": BAD,
            "vendored/a.py": BAD,
            "pkg/secret.py": BAD,
            "train.py": BAD,
        },
    )
    assert found(".") == ["train.py"]
    assert found("pkg") == []  # the repository's excludes apply in a sub-folder too
    assert linted("secret.py") == ["secret.py"]  # a file named on the command line is linted


def test_a_gitignore_overrides_info_exclude(project: Path, no_global_git_config: Path) -> None:
    git_init(project)
    write(project, {".git/info/exclude": "*_gen.py\n", ".gitignore": "!keep_gen.py\n",
                    "a_gen.py": BAD, "keep_gen.py": BAD})  # fmt: skip
    assert found(".") == ["keep_gen.py"]


def test_core_excludes_file_is_respected(
    project: Path, tmp_path: Path, no_global_git_config: Path
) -> None:
    ignore = tmp_path / "global-ignore"
    ignore.write_text("scratch_*.py\n")
    no_global_git_config.write_text(f"[core]\n\texcludesFile = {ignore}\n")
    git_init(project)
    write(project, {"scratch_1.py": BAD, "train.py": BAD})
    assert found(".") == ["train.py"]


def test_the_default_global_excludes_file_is_respected(
    project: Path, tmp_path: Path, no_global_git_config: Path
) -> None:
    write(tmp_path, {"xdg/git/ignore": "notes.py\n"})
    git_init(project)
    write(project, {"notes.py": BAD, "train.py": BAD})
    assert found(".") == ["train.py"]
    # Outside a git repository git's excludes do not apply, as in git.
    write(tmp_path, {"plain/notes.py": BAD})
    assert found(str(tmp_path / "plain")) == [(tmp_path / "plain/notes.py").as_posix()]


def test_info_exclude_of_a_worktrees_repository(
    tmp_path: Path, no_global_git_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = tmp_path / "main"
    git_init(main)
    write(main, {"a.py": CLEAN, ".git/info/exclude": "secret.py\n"})
    env = ("-c", "user.name=t", "-c", "user.email=t@t.invalid")
    for command in (["add", "a.py"], ["commit", "-qm", "a"], ["worktree", "add", "-q", "../wt"]):
        subprocess.run(["git", *env, *command], cwd=main, check=True, capture_output=True)
    worktree = tmp_path / "wt"
    assert (worktree / ".git").is_file()
    write(worktree, {"secret.py": BAD})
    monkeypatch.chdir(worktree)
    assert found(".") == ["a.py"]
