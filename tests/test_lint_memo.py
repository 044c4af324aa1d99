"""Caches keyed by libcst nodes are memos of one file's lint (`xlalint/lint_memo.py`).

A process-wide `functools.lru_cache` keyed by a node keeps that node's whole tree alive
for the rest of a worker's run: round 13 found most of a cold run's peak memory there.
This test reads xlalint's own sources and fails on the next such cache.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import xlalint
from xlalint import lint_memo
from xlalint.analysis import project_modules

SOURCES = Path(xlalint.__file__).parent


def _is_process_cache(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("lru_cache", "cache")


def _node_keyed(function: ast.FunctionDef) -> bool:
    """A parameter annotated with a libcst node (`module: cst.Module`); a node type
    (`type[cst.CSTNode]`) keeps no tree."""
    arguments = function.args
    for argument in (*arguments.posonlyargs, *arguments.args):
        spelled = "" if argument.annotation is None else ast.unparse(argument.annotation)
        if "cst." in spelled and not spelled.startswith("type["):
            return True
    return False


def test_no_process_wide_cache_is_keyed_by_libcst_nodes() -> None:
    found = []
    for path in sorted(SOURCES.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.FunctionDef)
                and any(_is_process_cache(d) for d in node.decorator_list)
                and _node_keyed(node)
            ):
                found.append(f"{path.relative_to(SOURCES)}:{node.lineno} {node.name}")
    assert found == [], "use lint_memo.memo for caches keyed by nodes: " + ", ".join(found)


def test_memos_are_emptied_when_a_lint_ends() -> None:
    calls: list[int] = []

    @lint_memo.memo(4)
    def double(n: int) -> int:
        calls.append(n)
        return 2 * n

    with lint_memo.lint_scope():
        assert double(3) == double(3) == 6
    assert calls == [3]
    with lint_memo.lint_scope():
        assert double(3) == 6
    assert calls == [3, 3]


def test_scratch_dicts_are_emptied_when_a_lint_ends() -> None:
    kept = lint_memo.scratch()
    with lint_memo.lint_scope():
        kept["tree"] = object()
        with lint_memo.lint_scope():  # a nested scope ends: the outer lint goes on
            pass
        assert "tree" in kept
    assert kept == {}


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was:
            gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_off_for_the_outermost_scope_alone() -> None:
    """A lint's objects live as long as it does: the cyclic collector waits for its end."""
    with lint_memo.lint_scope():
        assert not gc.isenabled()
        with lint_memo.lint_scope():  # a nested scope ends: the collector stays off
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), lint_memo.lint_scope():
        raise ValueError  # a lint that fails gives the collector back too
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_switched_off_outside_stays_off() -> None:
    gc.disable()
    with lint_memo.lint_scope():
        assert not gc.isenabled()
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_lint_runs_no_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's lint of a file (its parse, walk, analyses, positions): no cyclic
    collection runs while it goes, however low the thresholds; they bring one after."""
    from xlalint import engine
    from xlalint.registry import select_rules

    fixture = sorted((SOURCES.parent / "fixtures" / "XLA101").glob("*.py"))[0]
    sample = fixture.read_text(encoding="utf-8")
    rules = list(select_rules(["ALL"]))
    engine.lint_source(sample, "warm.py", rules)  # rule imports and tables outside the count
    collections: list[int] = []
    during: list[int] = []
    real = engine._lint_source

    def linting(*args: object) -> object:
        before = len(collections)
        result = real(*args)  # type: ignore[arg-type]
        during.extend(collections[before:])
        return result

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    monkeypatch.setattr(engine, "_lint_source", linting)
    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # a collection at nearly every allocation, where it may run
    gc.callbacks.append(count)
    try:
        result = engine.lint_source(sample, "sample.py", rules)
        [[] for _ in range(10)]
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
    assert result.error is None and result.diagnostics
    assert during == []
    assert collections


def test_the_lent_tree_answers_only_for_the_text_it_was_parsed_from(tmp_path: Path) -> None:
    """The engine lends its parse of the linted file to the layers that summarise modules
    from disk; a text that differs (a buffer not saved, a fixed text) is parsed anew."""
    path = tmp_path / "m.py"
    text = "def f(x):\n    return x\n"
    lent = ast.parse(text)
    with lint_memo.lint_scope():
        project_modules.lend(str(path), text, lent)
        assert project_modules.parse(str(path), text) is lent
        other = project_modules.parse(str(path), text + "y = 1\n")
        assert other is not None and other is not lent
    assert project_modules.parse(str(path), text) is not lent


def test_a_lint_parses_each_module_once_while_their_texts_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layers that summarise other modules (`module_steps`, `module_reads`,
    `module_callers`) meet the same base module a few modules apart within one lint: its
    tree is held while the texts parsed add up to `_HELD_TEXT`, the oldest going first, and
    none outlives the lint."""
    parsed: list[str] = []
    real = project_modules._parse

    def counting(path: str, text: str) -> ast.Module | None:
        parsed.append(Path(path).stem)
        return real(path, text)

    monkeypatch.setattr(project_modules, "_parse", counting)
    monkeypatch.setattr(project_modules, "_HELD_TEXT", 210)  # five of these texts
    texts = {name: f"def {name[0]}():\n    return {'1' * 20}\n" for name in "abcdef"}
    paths = {name: str(tmp_path / f"{name}.py") for name in texts}
    with lint_memo.lint_scope():
        first = project_modules.parse(paths["a"], texts["a"])
        for name in "bcd":
            project_modules.parse(paths[name], texts[name])
        assert project_modules.parse(paths["a"], texts["a"]) is first  # four held
        for name in "ef":  # six: the least recently asked (b) goes
            project_modules.parse(paths[name], texts[name])
        project_modules.parse(paths["a"], texts["a"])
        project_modules.parse(paths["b"], texts["b"])  # parsed again; c goes
        assert project_modules.parse(paths["b"], texts["b"] + "x = 1\n") is not None
    assert parsed == ["a", "b", "c", "d", "e", "f", "b", "b"]
    with lint_memo.lint_scope():
        project_modules.parse(paths["a"], texts["a"])
    assert parsed[-1] == "a"  # the last lint's trees are gone


def _alive(kind: type) -> int:
    """How many objects of `kind` are alive (of a tree, with a body: not an empty module a
    module of xlalint keeps as a constant)."""
    return sum(
        1 for found in gc.get_objects() if type(found) is kind and getattr(found, "body", True)
    )


@pytest.mark.usefixtures("collector_on")
def test_a_lint_leaves_no_cycle_holding_its_tree() -> None:
    """The context, its analyses and the rules refer to one another: the engine lets them
    go when the lint ends, with the tree the context holds, by reference counts alone."""
    import libcst as cst

    from xlalint.context import FileContext
    from xlalint.engine import lint_source
    from xlalint.registry import select_rules

    sample = (SOURCES.parent / "examples" / "train_xla_legacy.py").read_text(encoding="utf-8")
    rules = list(select_rules(["ALL"]))
    gc.collect()
    gc.disable()
    try:
        result = lint_source(sample, "train.py", rules)
        contexts, trees = _alive(FileContext), _alive(cst.Module)
    finally:
        gc.enable()
    assert result.diagnostics
    assert (contexts, trees) == (0, 0)


@pytest.mark.usefixtures("collector_on")
def test_a_checked_file_and_its_forecast_free_their_trees_before_the_collector_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --no-cache`'s job (a lint, then the forecast's fixer on the fixed texts, in
    one scope): no tree is alive when the scope gives the collector back."""
    import libcst as cst

    from xlalint import api
    from xlalint.analysis.xla_api import LATEST
    from xlalint.registry import select_rules

    path = tmp_path / "train.py"
    path.write_text((SOURCES.parent / "examples" / "train_xla_legacy.py").read_text("utf-8"))
    seen: list[int] = []
    real = gc.enable

    def enable() -> None:
        seen.append(_alive(cst.Module))
        real()

    monkeypatch.setattr(lint_memo.gc, "enable", enable)
    gc.collect()
    rules = tuple(select_rules(["ALL"]))
    _, result, forecast = api._keyed_lint_forecast_job(
        (str(path), rules, (), False, None, None, LATEST)
    )
    assert result.diagnostics and forecast is not None and forecast.safe
    assert seen == [0]
