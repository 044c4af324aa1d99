"""The result cache: hits give the same output as linting, and any input change is a miss."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BAD, CLEAN, NO_FIX, ROOT, run_cli, write

import xlalint
from xlalint import api, cache, engine, fixer
from xlalint.cache import CACHEDIR_TAG, ResultCache, decode, encode
from xlalint.config import Settings

JSON = ("--output-format", "json")
SYNTAX_ERROR = "def broken(:\n    pass\n"
HOT_HELPER = """\
import torch


def accumulate(loss):
    return loss.item()
"""


@pytest.fixture(autouse=True)
def _cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XLALINT_NO_CACHE", raising=False)
    monkeypatch.delenv("XLALINT_CACHE_DIR", raising=False)


@pytest.fixture
def lint_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files actually linted (not answered from the cache) in this process."""
    calls: list[str] = []
    real = engine.lint_source

    def counting(text: str, filename: str, *args: object, **kwargs: object) -> object:
        calls.append(filename)
        return real(text, filename, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "lint_source", counting)  # api imports it where it lints
    monkeypatch.setattr(fixer, "lint_source", counting)
    yield calls


def entries(folder: Path, kind: str = "") -> list[Path]:
    """Findings entries; `kind="-fixes"`: the fixable counts of `check`'s summary."""
    every = (folder / ".xlalint_cache" / xlalint.__version__).glob("*.json")
    return sorted(p for p in every if p.stem.endswith("-fixes") == (kind == "-fixes"))


def test_hit_gives_identical_output_without_linting(project: Path, lint_calls: list[str]) -> None:
    write(project, {"bad.py": BAD, "clean.py": CLEAN, "nofix.py": NO_FIX, "err.py": SYNTAX_ERROR})
    first = run_cli("check", "--select", "ALL", ".")
    # Each file is linted; a fixable one also by the fixer, for the summary's counts.
    assert sorted(set(lint_calls)) == ["bad.py", "clean.py", "err.py", "nofix.py"]
    lint_calls.clear()
    second = run_cli("check", "--select", "ALL", ".")
    assert lint_calls == []
    assert (second.exit_code, second.stdout, second.stderr) == (
        first.exit_code,
        first.stdout,
        first.stderr,
    )
    assert "err.py: syntax error" in second.stderr
    assert len(entries(project)) == 4  # files with findings and errors are cached too
    assert len(entries(project, "-fixes")) == 1  # bad.py, the one file with a fix


def test_cache_folder_is_tagged_and_ignored_by_git(project: Path) -> None:
    write(project, {"bad.py": BAD})
    run_cli("check", ".")
    folder = project / ".xlalint_cache"
    assert (
        (folder / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    )
    assert (folder / ".gitignore").read_text() == "*\n"


def test_cache_lives_beside_the_config_file(project: Path) -> None:
    write(project, {"xlalint.toml": "", "pkg/sub/bad.py": BAD})
    run_cli("check", "pkg/sub")
    assert entries(project)
    assert not (project / "pkg" / ".xlalint_cache").exists()


def test_serialization_round_trips_exactly() -> None:
    rules = api.enabled_rules(Settings(root=ROOT).with_overrides(select=("ALL",)))
    results = [api.lint_file(path, rules) for path in sorted((ROOT / "examples").glob("*.py"))]
    with_fixes = [d for r in results for d in r.diagnostics if d.fix and d.fix.edits]
    assert with_fixes, "the examples should exercise fixes"
    assert any(d.hint for r in results for d in r.diagnostics)
    for result in results:
        data = json.loads(json.dumps(encode(result)))
        assert decode(data, result.filename) == result


def test_content_change_is_a_miss(project: Path, lint_calls: list[str]) -> None:
    write(project, {"a.py": CLEAN})
    assert run_cli("check", "a.py").exit_code == 0
    write(project, {"a.py": BAD})
    lint_calls.clear()
    run = run_cli("check", *JSON, "a.py")
    assert lint_calls == ["a.py"]
    assert run.exit_code == 1
    assert [f[3] for f in run.findings()] == ["XLA101"]


def test_config_change_is_a_miss(project: Path, lint_calls: list[str]) -> None:
    write(project, {"helper.py": HOT_HELPER})
    assert run_cli("check", "--select", "XLA101", "helper.py").exit_code == 0
    write(project, {"xlalint.toml": 'hot-functions = ["accumulate"]\n'})
    lint_calls.clear()
    run = run_cli("check", "--select", "XLA101", *JSON, "helper.py")
    assert lint_calls == ["helper.py"]
    assert [f[3] for f in run.findings()] == ["XLA101"]


def test_per_file_ignores_change_is_a_miss(project: Path) -> None:
    write(project, {"bad.py": BAD})
    assert run_cli("check", "--select", "XLA101", "bad.py").exit_code == 1
    write(project, {"xlalint.toml": 'per-file-ignores = { "bad.py" = ["XLA101"] }\n'})
    assert run_cli("check", "--select", "XLA101", "bad.py").exit_code == 0


def test_rule_selection_change_is_a_miss(project: Path, lint_calls: list[str]) -> None:
    write(project, {"bad.py": BAD})
    assert run_cli("check", "--select", "XLA104", "bad.py").exit_code == 0
    lint_calls.clear()
    run = run_cli("check", "--select", "XLA101", *JSON, "bad.py")
    assert lint_calls == ["bad.py"]
    assert [f[3] for f in run.findings()] == ["XLA101"]
    lint_calls.clear()
    run_cli("check", "--select", "XLA104", "bad.py")
    assert lint_calls == []  # both selections stay cached


def test_version_change_is_a_miss(
    project: Path, lint_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project, {"bad.py": BAD})
    run_cli("check", "bad.py")
    lint_calls.clear()
    monkeypatch.setattr(xlalint, "__version__", "99.0.0")
    cache.code_fingerprint.cache_clear()
    cache._prefix.cache_clear()
    try:
        run_cli("check", "bad.py")
    finally:
        cache.code_fingerprint.cache_clear()
        cache._prefix.cache_clear()
    assert set(lint_calls) == {"bad.py"}
    assert (project / ".xlalint_cache" / "99.0.0").is_dir()


def test_no_cache_neither_reads_nor_writes(project: Path, lint_calls: list[str]) -> None:
    write(project, {"bad.py": BAD})
    run_cli("check", "bad.py")
    lint_calls.clear()
    run = run_cli("check", "--no-cache", "bad.py")
    assert set(lint_calls) == {"bad.py"}
    assert run.exit_code == 1
    shutil.rmtree(project / ".xlalint_cache")
    run_cli("check", "--no-cache", "bad.py")
    run_cli("fix", "--no-cache", "--apply", "bad.py")
    run_cli("check", "bad.py", env={"XLALINT_NO_CACHE": "1"})
    assert not (project / ".xlalint_cache").exists()


def test_cache_dir_option_and_environment(project: Path, tmp_path: Path) -> None:
    write(project, {"bad.py": BAD})
    run_cli("check", "--cache-dir", str(tmp_path / "elsewhere"), "bad.py")
    assert (tmp_path / "elsewhere" / "CACHEDIR.TAG").is_file()
    run_cli("check", "bad.py", env={"XLALINT_CACHE_DIR": str(tmp_path / "from-env")})
    assert (tmp_path / "from-env" / "CACHEDIR.TAG").is_file()
    assert not (project / ".xlalint_cache").exists()


def test_clean_removes_the_cache(project: Path, tmp_path: Path) -> None:
    write(project, {"bad.py": BAD})
    run_cli("check", "bad.py")
    run = run_cli("clean")
    assert run.exit_code == 0
    assert not (project / ".xlalint_cache").exists()
    assert run_cli("clean").stdout.startswith("No cache at")
    run_cli("check", "--cache-dir", str(tmp_path / "c"), "bad.py")
    assert run_cli("clean", "--cache-dir", str(tmp_path / "c")).exit_code == 0
    assert not (tmp_path / "c").exists()


def test_clean_refuses_a_folder_that_is_not_a_cache(project: Path) -> None:
    write(project, {"precious/keep.txt": "mine"})
    run = run_cli("clean", "--cache-dir", "precious")
    assert run.exit_code == 2
    assert "not an xlalint cache" in run.stderr
    assert (project / "precious" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "garbage", [b"", b"{not json", b'{"diagnostics": [["XLA101"]]}', b"[1, 2]", b"\xff\xfe"]
)
def test_corrupt_entry_is_a_miss(project: Path, garbage: bytes) -> None:
    write(project, {"bad.py": BAD, "err.py": SYNTAX_ERROR})
    expected = run_cli("check", "--no-cache", ".")
    run_cli("check", ".")
    for entry in entries(project):
        entry.write_bytes(garbage)
    run = run_cli("check", ".")
    assert (run.exit_code, run.stdout, run.stderr) == (
        expected.exit_code,
        expected.stdout,
        expected.stderr,
    )
    assert all(e.read_bytes() != garbage for e in entries(project))  # rewritten


def test_unwritable_cache_is_skipped(project: Path) -> None:
    write(project, {"bad.py": BAD, "blocker": "a file where the cache folder should be"})
    run = run_cli("check", "--cache-dir", "blocker/cache", "bad.py")
    assert run.exit_code == 1
    assert run.stderr == ""


def test_same_findings_across_jobs_and_cache(project: Path) -> None:
    files = {f"pkg/m{i:02}.py": (BAD, CLEAN, NO_FIX, HOT_HELPER)[i % 4] for i in range(40)}
    files["pkg/broken.py"] = SYNTAX_ERROR
    write(project, files)
    runs = [
        run_cli("check", "--select", "ALL", *JSON, *extra, "pkg")
        for extra in (
            ("--no-cache", "-j", "1"),
            ("--no-cache", "-j", "2"),
            ("-j", "2"),  # cold: workers store
            ("-j", "1"),  # warm
            ("-j", "2"),  # warm
        )
    ]
    assert len(runs[0].json()) >= 20
    for run in runs[1:]:
        assert (run.exit_code, run.stdout, run.stderr) == (
            runs[0].exit_code,
            runs[0].stdout,
            runs[0].stderr,
        )


def test_fix_output_is_the_same_with_a_warm_cache(project: Path, lint_calls: list[str]) -> None:
    write(project, {"bad.py": BAD, "nofix.py": NO_FIX, "clean.py": CLEAN})
    expected = run_cli("fix", "--no-cache", "--unsafe-fixes", ".")
    run_cli("check", ".")
    lint_calls.clear()
    run = run_cli("fix", "--unsafe-fixes", ".")
    assert (run.exit_code, run.stdout, run.stderr) == (
        expected.exit_code,
        expected.stdout,
        expected.stderr,
    )
    assert "nofix.py" not in lint_calls  # no fix to apply: answered from the cache
    assert "bad.py" in lint_calls  # has a fix: the fixer runs


def test_check_fix_never_reports_stale_findings(project: Path, tmp_path: Path) -> None:
    write(project, {"bad.py": BAD, "nofix.py": NO_FIX})
    reference = tmp_path / "reference"
    shutil.copytree(project, reference)
    run_cli("check", ".")  # caches the findings of the unfixed files
    run = run_cli("check", "--fix", "--unsafe-fixes", *JSON, ".")
    assert (project / "bad.py").read_text() != BAD
    expected = run_cli(
        "check", "--no-cache", "--fix", "--unsafe-fixes", *JSON, str(reference / ".")
    )
    assert [f[1:] for f in run.findings()] == [f[1:] for f in expected.findings()]
    again = run_cli("check", *JSON, ".")
    assert again.stdout == run.stdout


def test_cache_object_survives_a_bad_entry_name(tmp_path: Path) -> None:
    store = ResultCache(tmp_path / "c")
    assert store.load("no-such-key", "x.py") is None
    assert not (tmp_path / "c").exists()
    assert CACHEDIR_TAG.startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_memory_cache_keeps_what_worker_processes_lint(project: Path) -> None:
    """`check --no-cache` keeps results in memory for its forecast (`MemoryCache`); with a
    process pool, each file's result comes back with the key of the bytes its worker
    linted, so the forecast finds every file the check linted."""
    files = {f"bad{i}.py": BAD.replace("accumulate", f"accumulate{i}") for i in range(20)}
    write(project, {**files, "err.py": SYNTAX_ERROR})
    settings = Settings(root=project)
    memory = cache.MemoryCache()
    report = api.check_paths([project], settings, jobs=2, cache=memory)
    assert len(report.results) == 21 > api.PARALLEL_THRESHOLD
    rules = api.enabled_rules(settings)
    for result in report.results:
        raw = Path(result.filename).read_bytes()
        key = memory.key(result.filename, raw, rules, settings.hot_functions)
        assert memory.load(key, result.filename) == result
    assert sum(1 for r in report.results if r.diagnostics) == 20
    assert sum(1 for r in report.results if r.error) == 1
    assert not any(project.glob(".*"))  # nothing written
