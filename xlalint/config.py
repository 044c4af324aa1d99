"""Settings from `[tool.xlalint]` in pyproject.toml, or from an xlalint.toml.

The config is found from the linted path upward (an xlalint.toml wins over a pyproject.toml
in the same folder; a pyproject.toml without a `[tool.xlalint]` table is passed over), or
named with `--config`. Relative paths in it (`exclude`, `per-file-ignores`) are relative to
the folder it sits in. Every key and every rule code is checked: a typo is an error that
names the file, the key and the expected form, never silently ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xlalint.analysis.xla_api import LATEST, Release, parse_release, supported_text
from xlalint.registry import did_you_mean, unknown_selectors_message, validate_selectors

CONFIG_FILES = ("xlalint.toml", "pyproject.toml")

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox",
    ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".xlalint_cache",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv",
)  # fmt: skip


class ConfigError(Exception):
    """A config or command-line value xlalint cannot use; the message says which and why."""


@dataclass(frozen=True)
class Settings:
    root: Path
    config_file: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    hot_functions: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    line_length: int | None = None  # for the lines fixes rewrite; None: see `line_length_for`
    # The torch_xla release the code runs on: what fixes write and what XLA6xx reports.
    target_version: Release = LATEST

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _string_list(source: str, key: str, value: object, *, codes: bool = False) -> tuple[str, ...]:
    kind = "rule codes or prefixes" if codes else "strings"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: `{key}` must be a list of {kind}, got {value!r}")
    if codes:
        unknown = validate_selectors(value)
        if unknown:
            raise ConfigError(
                f"{source}: `{key}` has {unknown_selectors_message(unknown)}; see `xlalint rules`"
            )
    return tuple(value)


def _per_file_ignores(source: str, value: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"{source}: `per-file-ignores` must be a table of glob = [codes], got {value!r}"
        )
    return {
        pattern: _string_list(source, f"per-file-ignores.{pattern}", codes, codes=True)
        for pattern, codes in value.items()
    }


def _line_length(source: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 320:
        raise ConfigError(
            f"{source}: `line-length` must be an integer from 1 to 320, got {value!r}"
        )
    return value


def target_version(where: str, value: object) -> Release:
    """A `target-version` value (`"2.4"`, or `"2.4.1"`: patch releases keep the API);
    `where` names its origin in the error (a config file's key, or the CLI flag)."""
    release = parse_release(value) if isinstance(value, str) else None
    if release is None:
        quote = ' (quote it: `target-version = "2.4"`)' if isinstance(value, float | int) else ""
        raise ConfigError(
            f"{where}: unknown torch_xla release {value!r}{quote}; supported: {supported_text()}"
        )
    return release


DEFAULT_LINE_LENGTH = 88  # ruff's and black's


def line_length_for(settings: Settings) -> int:
    """The line length fixes keep to: `line-length` in xlalint's config, else the one ruff
    or black is configured with in the project root (pyproject.toml, ruff.toml,
    .ruff.toml), else their default, 88."""
    if settings.line_length is not None:
        return settings.line_length
    root = settings.root
    candidates = [
        (root / "ruff.toml", ("line-length",)),
        (root / ".ruff.toml", ("line-length",)),
        (root / "pyproject.toml", ("tool", "ruff", "line-length")),
        (root / "pyproject.toml", ("tool", "black", "line-length")),
    ]
    for path, keys in candidates:
        if not path.is_file():
            continue
        try:
            value: Any = _load_toml(path)
        except ConfigError:
            continue
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return DEFAULT_LINE_LENGTH


def _bool(source: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: `{key}` must be true or false, got {value!r}")
    return value


_KEYS = {
    "select": lambda s, v: ("select", _string_list(s, "select", v, codes=True)),
    "extend-select": lambda s, v: (
        "extend_select",
        _string_list(s, "extend-select", v, codes=True),
    ),
    "ignore": lambda s, v: ("ignore", _string_list(s, "ignore", v, codes=True)),
    "per-file-ignores": lambda s, v: ("per_file_ignores", _per_file_ignores(s, v)),
    "exclude": lambda s, v: ("exclude", _string_list(s, "exclude", v)),
    "extend-exclude": lambda s, v: ("extend_exclude", _string_list(s, "extend-exclude", v)),
    "hot-functions": lambda s, v: ("hot_functions", _string_list(s, "hot-functions", v)),
    "respect-gitignore": lambda s, v: ("respect_gitignore", _bool(s, "respect-gitignore", v)),
    "force-exclude": lambda s, v: ("force_exclude", _bool(s, "force-exclude", v)),
    "line-length": lambda s, v: ("line_length", _line_length(s, v)),
    "target-version": lambda s, v: ("target_version", target_version(f"{s}: `target-version`", v)),
}


def settings_from_table(table: Mapping[str, object], root: Path, source: str) -> Settings:
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(
                f"{source}: unknown key `{key}`{did_you_mean(key, _KEYS)} (known keys: {known})"
            )
        attr, parsed = _KEYS[key](source, value)
        values[attr] = parsed
    return Settings(root=root, config_file=Path(source), **values)


def _load_toml(path: Path) -> dict[str, Any]:
    # Imported here: a run without a config file never needs a TOML parser.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None


def _table_in(path: Path) -> Mapping[str, object] | None:
    """The xlalint table of a config file, or None for a pyproject.toml without one."""
    data = _load_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get("xlalint") if isinstance(tool, dict) else None
        if table is not None and not isinstance(table, dict):
            raise ConfigError(f"{path}: `tool.xlalint` must be a table")
        return table
    return data


def load_config_file(path: Path) -> Settings:
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    table = _table_in(path)
    return settings_from_table(table or {}, path.parent, str(path))


def find_settings(start: Path) -> Settings:
    """Settings from the nearest config file at or above `start`, else the defaults."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        for name in CONFIG_FILES:
            path = candidate / name
            if path.is_file():
                table = _table_in(path)
                if table is not None:
                    return settings_from_table(table, candidate, str(path))
    return Settings(root=Path.cwd())
