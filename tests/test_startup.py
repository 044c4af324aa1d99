"""What a run imports: a `check` answered from the cache parses nothing, so it must not pay
for libcst (~0.2 s), rich or the runtime harness, nor for exclude patterns (pathspec), the
process pool or a TOML parser when no file needs them; selection works from the rule index."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import astuple
from pathlib import Path

import pytest
from conftest import BAD, ROOT, write

from xlalint import registry
from xlalint.docgen import INDEX
from xlalint.registry import RuleInfo, RuleSet, all_rules, catalogue, index_source, select_rules

HEAVY = (
    *("libcst", "rich", "torch", "torch_xla", "xlalint.harness.profile", "xlalint.engine"),
    *("pathspec", "concurrent.futures", "tomllib", "importlib.metadata"),
    # stdlib modules only a miss, a fix, a folder or a typo needs (~30 M instructions)
    *("tempfile", "shutil", "subprocess", "difflib", "xlalint.harness.runner", "xlalint.notebooks"),
)

# Runs the CLI in a fresh interpreter, then reports which heavy modules it imported.
DRIVER = f"""
import sys
from xlalint.cli import main
try:
    main.main(args=sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = [m for m in {HEAVY!r} if m in sys.modules]
rules = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("xlalint.rules.xla"))
print("RULES=" + ",".join(rules), file=sys.stderr)
print("IMPORTED=" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def _check(folder: Path, *args: str) -> tuple[str, list[str]]:
    out, imported, _ = _check_rules(folder, *args)
    return out, imported


def _check_rules(folder: Path, *args: str) -> tuple[str, list[str], list[str]]:
    """`_check`, and the rule modules (`xla101_item_in_hot_code` ...) the run imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLALINT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, "check", "--cache-dir", str(folder / "cache"), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    rules, imported = run.stderr.rsplit("RULES=", 1)[1].split("IMPORTED=")
    return run.stdout, _names(imported), _names(rules)


def _names(listed: str) -> list[str]:
    return listed.strip().split(",") if listed.strip() else []


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_a_warm_check_imports_no_libcst(project: Path, output_format: str) -> None:
    write(project, {"train.py": BAD, "clean.py": "x = 1\n"})
    args = ("--output-format", output_format, "train.py", "clean.py")
    cold_out, cold_imported = _check(project, *args)
    assert "libcst" in cold_imported  # the cold run parses: the probe sees the import
    assert "XLA101" in cold_out
    warm_out, warm_imported = _check(project, *args)
    assert warm_out == cold_out
    assert warm_imported == []


def test_a_cold_check_imports_only_the_rules_the_file_may_trigger(project: Path) -> None:
    """The text prefilter runs on the index: a rule none of whose trigger strings occur in
    the file is never imported (XLA601's `torch_xla_py`, XLA301's `cuda` here). Quiet: the
    closing summary's fix forecast lints the fixed text too, which may trigger others."""
    write(project, {"train.py": BAD})
    out, imported, rules = _check_rules(project, "--no-cache", "-q", "train.py")
    assert "XLA101" in out and "libcst" in imported
    expected = [i.module.rsplit(".", 1)[1] for i in select_rules(None).for_text(BAD).infos]
    assert rules == sorted(expected)
    assert "xla101_item_in_hot_code" in rules
    assert "xla601_legacy_torch_xla_py" not in rules and "xla301_cuda_call" not in rules


def test_a_file_no_rule_may_trigger_imports_no_rule(project: Path) -> None:
    write(project, {"clean.py": "x = 1\n"})
    out, _, rules = _check_rules(project, "--no-cache", "clean.py")
    assert "All checks passed" in out
    assert rules == []


@pytest.mark.parametrize("text", [BAD, "x = 1\n", "import torch\nif x:\n    y.cuda()\n", ""])
def test_the_index_prefilter_is_the_rules_prefilter(text: str) -> None:
    """`RuleInfo.may_flag` (on the index) keeps exactly the rules `rules_for_text` keeps
    on the classes, so that prefiltering before the import changes no finding."""
    from xlalint.engine import rules_for_text

    classes = list(all_rules().values())
    by_info = [info.code for info in catalogue().values() if info.may_flag(text)]
    assert by_info == [rule.code for rule in rules_for_text(text, classes)]
    assert [rule.code for rule in rules_for_text(text, select_rules(["ALL"]))] == by_info


def test_the_committed_rule_index_is_current() -> None:
    assert INDEX.read_text(encoding="utf-8") == index_source(), (
        "xlalint/rule_index.py is stale: run `python -m xlalint.docgen`"
    )


def test_the_index_agrees_with_the_rules() -> None:
    assert catalogue() == {code: RuleInfo.of(rule) for code, rule in all_rules().items()}


def test_a_stale_index_falls_back_to_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule module the index does not list (a rule added without regenerating it) makes
    selection read the rule classes instead."""
    catalogue.cache_clear()
    monkeypatch.setattr(registry, "rule_modules", lambda: ["xla999_new_rule"])
    try:
        assert catalogue() == {code: RuleInfo.of(rule) for code, rule in all_rules().items()}
    finally:
        catalogue.cache_clear()


def test_a_rule_set_loads_its_classes_on_first_use() -> None:
    rules = select_rules(["XLA101", "XLA604"])
    assert rules.codes == ("XLA101", "XLA604")
    assert rules._classes is None  # codes, length and ids come from the index
    assert len(rules) == 2
    assert rules.without(["XLA101"]).codes == ("XLA604",)
    again = pickle.loads(pickle.dumps(rules))
    assert again == rules and again._classes is None
    assert list(rules) == [all_rules()["XLA101"], all_rules()["XLA604"]]
    assert rules[1] is all_rules()["XLA604"]


def test_a_rule_set_refuses_an_entry_that_names_another_rule() -> None:
    wrong = RuleInfo("XLA101", "x", "xlalint.rules.xla604_deprecated_mark_step", "Nope", True)
    with pytest.raises(RuntimeError, match="stale"):
        list(RuleSet([wrong]))


def test_a_rule_set_refuses_an_entry_with_other_triggers() -> None:
    """An index whose prefilter differs from the rule's (triggers edited without running
    docgen) would skip files the rule flags: loading the rule says the index is stale."""
    info = catalogue()["XLA604"]
    stale = RuleInfo(*astuple(info)[:5], ("mark_step", "sync"), info.needs_torch)
    with pytest.raises(RuntimeError, match="stale"):
        list(RuleSet([stale]))
