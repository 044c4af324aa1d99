"""`[tool.xlalint]` in pyproject.toml, or xlalint.toml: where it is found, every key, every
kind of mistake (exit 2 and one line naming the file and the key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BAD, BAD_COL, BAD_ROW, CLEAN, SELECT, run_cli, write

from xlalint.config import (
    DEFAULT_EXCLUDE,
    ConfigError,
    find_settings,
    line_length_for,
    load_config_file,
)

JSON = ("--output-format", "json")


def linted(*args: str) -> list[str]:
    """Files with XLA101 findings, by name, for `xlalint check ARGS`."""
    run = run_cli("check", *JSON, *args)
    assert run.exit_code in (0, 1), run.stderr
    return sorted({name for name, *_ in run.findings()})


def pyproject(body: str) -> str:
    return f'[project]\nname = "demo"\n\n[tool.xlalint]\n{body}'


# -- where the config is found ---------------------------------------------------------------


def test_found_from_the_linted_path_upward(project: Path) -> None:
    write(
        project,
        {"pyproject.toml": pyproject('ignore = ["XLA101"]\n'), "src/pkg/deep/train.py": BAD},
    )
    assert linted("src/pkg/deep/train.py") == []
    assert linted("src/pkg") == []
    assert linted("src/pkg/deep") == []


def test_found_from_the_linted_path_not_the_current_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        project,
        {
            "repo/pyproject.toml": pyproject('ignore = ["XLA101"]\n'),
            "repo/train.py": BAD,
            "elsewhere/pyproject.toml": pyproject('select = ["XLA101"]\n'),
        },
    )
    monkeypatch.chdir(project / "elsewhere")
    assert linted(str(project / "repo" / "train.py")) == []
    assert linted("../repo") == []


def test_defaults_without_any_config(project: Path) -> None:
    write(project, {"train.py": BAD})
    assert linted(*SELECT) == ["train.py"]
    settings = find_settings(project)
    assert settings.config_file is None
    assert settings.exclude == DEFAULT_EXCLUDE


def test_xlalint_toml_wins_over_pyproject_in_the_same_folder(project: Path) -> None:
    write(
        project,
        {
            "pyproject.toml": pyproject('ignore = ["XLA101"]\n'),
            "xlalint.toml": 'select = ["XLA101"]\n',
            "train.py": BAD,
        },
    )
    assert linted() == ["train.py"]
    assert find_settings(project).config_file == project / "xlalint.toml"
    (project / "xlalint.toml").unlink()
    assert linted() == []


def test_the_nearest_config_wins(project: Path) -> None:
    write(
        project,
        {
            "xlalint.toml": 'ignore = ["XLA101"]\n',
            "sub/pyproject.toml": pyproject('select = ["XLA101"]\n'),
            "sub/train.py": BAD,
            "train.py": BAD,
        },
    )
    assert linted("sub") == ["sub/train.py"]
    assert linted("train.py") == []


def test_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    write(
        project,
        {
            "xlalint.toml": 'ignore = ["XLA101"]\n',
            "sub/pyproject.toml": '[project]\nname = "sub"\n\n[tool.ruff]\nline-length = 90\n',
            "sub/train.py": BAD,
        },
    )
    assert linted("sub") == []
    assert find_settings(project / "sub").config_file == project / "xlalint.toml"


def test_empty_table_means_defaults(project: Path) -> None:
    write(project, {"pyproject.toml": "[tool.xlalint]\n", "train.py": BAD})
    assert linted(*SELECT) == ["train.py"]
    settings = find_settings(project)
    assert settings.config_file == project / "pyproject.toml"
    assert settings.root == project


def test_paths_are_relative_to_the_config_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        project,
        {
            "pyproject.toml": pyproject(
                'extend-exclude = ["/src/gen"]\n'
                'per-file-ignores = { "src/tests/*.py" = ["XLA1"] }\n'
            ),
            "src/gen/a.py": BAD,
            "src/tests/test_a.py": BAD,
            "src/app/gen/b.py": BAD,  # `/src/gen` is anchored at the config's folder
            "src/app/tests/test_b.py": BAD,
        },
    )
    expected = ["app/gen/b.py", "app/tests/test_b.py"]
    monkeypatch.chdir(project / "src")
    assert linted(*SELECT, ".") == expected
    monkeypatch.chdir(project)
    assert linted(*SELECT, "src") == [f"src/{name}" for name in expected]


# -- every key ---------------------------------------------------------------------------------


def test_select(project: Path) -> None:
    write(project, {"xlalint.toml": 'select = ["XLA1"]\n', "train.py": BAD})
    codes = {code for *_, code in run_cli("check", *JSON, ".").findings()}
    assert "XLA101" in codes
    assert all(code.startswith("XLA1") for code in codes)
    write(project, {"xlalint.toml": "select = []\n"})
    assert linted() == []


def test_extend_select(project: Path) -> None:
    write(project, {"xlalint.toml": 'select = []\nextend-select = ["XLA101"]\n', "a.py": BAD})
    assert linted() == ["a.py"]


def test_ignore(project: Path) -> None:
    write(project, {"xlalint.toml": 'ignore = ["XLA101"]\n', "a.py": BAD})
    assert linted(*SELECT) == []
    write(project, {"xlalint.toml": 'ignore = ["xla1"]\n'})  # prefixes, any case
    assert linted(*SELECT) == []


def test_per_file_ignores(project: Path) -> None:
    write(
        project,
        {
            "pyproject.toml": pyproject(
                "[tool.xlalint.per-file-ignores]\n"
                '"tests/**" = ["XLA1"]\n'
                '"scripts/*.py" = ["XLA101"]\n'
                '"notebook_*.py" = ["ALL"]\n'
                '"other.py" = []\n'
            ),
            "tests/unit/test_x.py": BAD,
            "scripts/run.py": BAD,
            "scripts/sub/run.py": BAD,  # `*` does not cross folders
            "pkg/notebook_1.py": BAD,  # a pattern without a slash matches the name anywhere
            "other.py": BAD,
            "train.py": BAD,
        },
    )
    assert linted(*SELECT) == ["other.py", "scripts/sub/run.py", "train.py"]


def test_per_file_ignores_anchored_patterns_stay_anchored(project: Path) -> None:
    write(
        project,
        {
            "pyproject.toml": pyproject(
                '[tool.xlalint.per-file-ignores]\n"/train.py" = ["XLA101"]\n'
            ),
            "train.py": BAD,
            "pkg/train.py": BAD,
        },
    )
    assert linted(*SELECT) == ["pkg/train.py"]


def test_exclude_replaces_the_defaults(project: Path) -> None:
    files = {"build/a.py": BAD, ".venv/b.py": BAD, "vendor/c.py": BAD, "d.py": BAD}
    write(project, files)
    assert linted(*SELECT) == ["d.py", "vendor/c.py"]
    write(project, {"xlalint.toml": 'exclude = ["vendor"]\n'})
    assert linted(*SELECT) == [".venv/b.py", "build/a.py", "d.py"]


def test_extend_exclude_adds_to_the_defaults(project: Path) -> None:
    files = {"build/a.py": BAD, "third_party/b.py": BAD, "gen_c.py": BAD, "d.py": BAD}
    write(project, {**files, "xlalint.toml": 'extend-exclude = ["third_party", "gen_*.py"]\n'})
    assert linted(*SELECT) == ["d.py"]


HOT = """\
import torch


def train_one_epoch(model, batch):
    loss = model(batch)
    return loss.item()


def evaluate(model, batch):
    return model(batch).item()
"""


def test_hot_functions_make_a_function_hot(project: Path) -> None:
    write(project, {"hot.py": HOT})
    assert linted(*SELECT) == []  # not in a loop, not a per-step function
    write(project, {"xlalint.toml": 'hot-functions = ["train_one_epoch"]\n'})
    run = run_cli("check", *JSON, *SELECT, ".")
    assert run.findings() == [("hot.py", 6, 12, "XLA101")]
    write(project, {"xlalint.toml": 'hot-functions = ["*_epoch", "eval*"]\n'})  # globs
    run = run_cli("check", *JSON, *SELECT, ".")
    assert run.findings() == [("hot.py", 6, 12, "XLA101"), ("hot.py", 10, 12, "XLA101")]


def test_respect_gitignore(project: Path) -> None:
    write(project, {".gitignore": "generated/\n", "generated/a.py": BAD, "b.py": BAD})
    assert linted(*SELECT) == ["b.py"]
    write(project, {"xlalint.toml": "respect-gitignore = false\n"})
    assert linted(*SELECT) == ["b.py", "generated/a.py"]


def test_force_exclude_key(project: Path) -> None:
    write(project, {"xlalint.toml": 'extend-exclude = ["gen"]\n', "gen/a.py": BAD, "b.py": BAD})
    assert linted(*SELECT, "gen/a.py", "b.py") == ["b.py", "gen/a.py"]
    write(project, {"xlalint.toml": 'extend-exclude = ["gen"]\nforce-exclude = true\n'})
    assert linted(*SELECT, "gen/a.py", "b.py") == ["b.py"]


def test_settings_from_every_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": pyproject(
                'select = ["XLA1"]\nextend-select = ["XLA101"]\nignore = ["XLA101"]\n'
                'per-file-ignores = { "t/**" = ["XLA1"] }\nexclude = ["a"]\n'
                'extend-exclude = ["b"]\nhot-functions = ["run_*"]\n'
                "respect-gitignore = false\nforce-exclude = true\n"
            )
        },
    )
    settings = load_config_file(tmp_path / "pyproject.toml")
    assert settings.root == tmp_path
    assert settings.config_file == tmp_path / "pyproject.toml"
    assert settings.select == ("XLA1",)
    assert settings.extend_select == ("XLA101",)
    assert settings.ignore == ("XLA101",)
    assert settings.per_file_ignores == {"t/**": ("XLA1",)}
    assert settings.exclude == ("a",)
    assert settings.extend_exclude == ("b",)
    assert settings.hot_functions == ("run_*",)
    assert settings.respect_gitignore is False
    assert settings.force_exclude is True


# -- mistakes: exit 2, one line naming the file and the key ---------------------------------


def assert_config_error(project: Path, config_name: str, *expected: str) -> None:
    write(project, {"train.py": BAD, "clean.py": CLEAN})
    run = run_cli("check", ".")
    assert run.exit_code == 2, run
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert str(project / config_name) in lines[0]
    for part in expected:
        assert part in lines[0]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("bogus = 1\n", ["unknown key `bogus`", "known keys:", "select"]),
        ("extend_select = []\n", ["unknown key `extend_select` (did you mean `extend-select`?)"]),
        ("selct = []\n", ["unknown key `selct` (did you mean `select`?)"]),
        ('select = ["XLA1011"]\n', ["unknown rule code(s) XLA1011 (did you mean `XLA101`?)"]),
        ('select = ["XLA999"]\n', ["`select`", "unknown rule code(s) XLA999"]),
        ('extend-select = ["XLA101", "NOPE1"]\n', ["`extend-select`", "NOPE1"]),
        ('ignore = ["E501"]\n', ["`ignore`", "E501"]),
        ('select = "XLA101"\n', ["`select`", "must be a list of rule codes or prefixes"]),
        ("ignore = [101]\n", ["`ignore`", "must be a list"]),
        ('exclude = "build"\n', ["`exclude`", "must be a list of strings"]),
        ("extend-exclude = [1]\n", ["`extend-exclude`", "must be a list of strings"]),
        ('hot-functions = "train"\n', ["`hot-functions`", "must be a list of strings"]),
        ('respect-gitignore = "yes"\n', ["`respect-gitignore`", "must be true or false"]),
        ("force-exclude = 1\n", ["`force-exclude`", "must be true or false"]),
        ('per-file-ignores = ["tests"]\n', ["`per-file-ignores`", "glob = [codes]"]),
        ('per-file-ignores = { "t/*" = "XLA1" }\n', ["`per-file-ignores.t/*`", "list"]),
        ('per-file-ignores = { "t/*" = ["XLA9"] }\n', ["`per-file-ignores.t/*`", "XLA9"]),
    ],
)
@pytest.mark.parametrize("config_name", ["pyproject.toml", "xlalint.toml"])
def test_bad_values(project: Path, config_name: str, body: str, expected: list[str]) -> None:
    text = pyproject(body) if config_name == "pyproject.toml" else body
    write(project, {config_name: text})
    assert_config_error(project, config_name, *expected)


@pytest.mark.parametrize(
    ("config_name", "text", "expected"),
    [
        ("pyproject.toml", "[tool.xlalint\nselect = []\n", ["invalid TOML", "line 1"]),
        ("pyproject.toml", "[tool.xlalint]\nselect = [\n", ["invalid TOML"]),
        ("xlalint.toml", "select = XLA101\n", ["invalid TOML"]),
        ("xlalint.toml", "select = []\nselect = []\n", ["invalid TOML"]),
        ("pyproject.toml", "[tool]\nxlalint = 1\n", ["`tool.xlalint` must be a table"]),
        ("xlalint.toml", '[tool.xlalint]\nselect = ["XLA101"]\n', ["unknown key `tool`"]),
    ],
)
def test_bad_files(project: Path, config_name: str, text: str, expected: list[str]) -> None:
    write(project, {config_name: text})
    assert_config_error(project, config_name, *expected)


def test_bad_config_given_with_config_option(project: Path) -> None:
    write(project, {"conf/x.toml": "nonsense = true\n", "train.py": BAD})
    run = run_cli("check", "--config", "conf/x.toml", "train.py")
    assert run.exit_code == 2
    assert run.stderr.strip().splitlines() == [
        f"Error: {project / 'conf' / 'x.toml'}: unknown key `nonsense` (known keys: exclude, "
        "extend-exclude, extend-select, force-exclude, hot-functions, ignore, line-length, "
        "per-file-ignores, respect-gitignore, select, target-version)"
    ]


def test_a_broken_config_farther_up_is_not_read(project: Path) -> None:
    write(
        project,
        {
            "xlalint.toml": "bogus = 1\n",
            "sub/xlalint.toml": 'select = ["XLA101"]\n',
            "sub/a.py": BAD,
        },
    )
    run = run_cli("check", *JSON, "sub")
    assert run.exit_code == 1
    assert run.findings() == [("sub/a.py", BAD_ROW, BAD_COL, "XLA101")]


def test_bad_config_for_fix_and_api(project: Path) -> None:
    write(project, {"xlalint.toml": "select = 1\n", "a.py": BAD})
    run = run_cli("fix", ".")
    assert run.exit_code == 2
    assert "`select` must be a list" in run.stderr
    with pytest.raises(ConfigError, match=r"xlalint\.toml: `select` must be a list"):
        find_settings(project)


# -- line-length: how long a line a fix may write ---------------------------------------------


def test_line_length_is_configured_or_found_where_ruff_and_black_keep_it(project: Path) -> None:
    assert line_length_for(find_settings(project)) == 88  # their default
    write(project, {"pyproject.toml": "[tool.black]\nline-length = 79\n"})
    assert line_length_for(find_settings(project)) == 79
    write(
        project,
        {"pyproject.toml": "[tool.ruff]\nline-length = 100\n[tool.black]\nline-length = 79\n"},
    )
    assert line_length_for(find_settings(project)) == 100
    write(project, {"ruff.toml": "line-length = 120\n"})
    assert line_length_for(find_settings(project)) == 120
    write(project, {"xlalint.toml": "line-length = 60\n"})
    assert line_length_for(find_settings(project)) == 60


@pytest.mark.parametrize("value", ["'88'", "0", "true", "1000"])
def test_line_length_must_be_a_sensible_integer(project: Path, value: str) -> None:
    write(project, {"xlalint.toml": f"line-length = {value}\n"})
    assert_config_error(project, "xlalint.toml", "`line-length` must be an integer")
