"""The ast screen (`screen.py`) changes what libcst parses, never what xlalint reports."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

import pytest
from fix_rules import CudaToXla

from xlalint import screen
from xlalint.engine import lint_source
from xlalint.registry import all_rules, select_rules

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    p
    for folder in ("fixtures", "examples")
    for p in (ROOT / folder).rglob("*.py")
    if "ports" not in p.parts
)


def _lint_both(
    monkeypatch: pytest.MonkeyPatch, text: str, name: str, rules: list
) -> tuple[object, object]:
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    whole = lint_source(text, name, rules)
    monkeypatch.delenv(screen.ENV_NO_SCREEN)
    return whole, lint_source(text, name, rules)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_findings_with_and_without_the_screen(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fixture and example, with the default rules and, for a fixture, with its own
    rule alone (as `test_fixtures.py` runs it): fixes and messages included."""
    text = path.read_text(encoding="utf-8")
    rule_sets = [list(select_rules(None))]
    if path.parent.name in all_rules():
        rule_sets.append([all_rules()[path.parent.name]])
    for rules in rule_sets:
        whole, screened = _lint_both(monkeypatch, text, str(path), rules)
        assert screened == whole


HOT_AND_COLD = """\
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(3)

    def forward(self, x):
        return helper(x) * self.scale

    def summary(self, x):
        if x.sum() > 0:
            print("positive")
        return x.mean().item()


def helper(x):
    return x + x.sum().item()


def report(x):
    return float(x.max())
"""


def _plan(text: str, codes: list[str]) -> screen.Screened | None:
    rules = [all_rules()[code] for code in codes]
    return screen.screen_text(ast.parse(text), text, rules)


def test_cold_functions_are_blanked_line_for_line() -> None:
    plan = _plan(HOT_AND_COLD, ["XLA101", "XLA103"])  # both report only in hot code
    assert plan is not None
    before, after = HOT_AND_COLD.splitlines(), plan.text.splitlines()
    assert len(after) == len(before)
    # `forward` runs every step; `helper` is called from it; `__init__` binds `scale`.
    for row in (*range(5, 8), *range(9, 11), *range(18, 20)):
        assert after[row - 1] == before[row - 1]
    # Nobody calls `summary` or `report`: a stub on the first body row, the rest blank.
    assert after[12] == "        pass" and after[13:15] == ["", ""]
    assert after[22] == "    pass"
    assert after[11] == before[11] and after[21] == before[21]  # the headers stay
    assert ast.parse(plan.text)


def test_findings_of_cold_functions_would_not_count() -> None:
    plan = _plan(HOT_AND_COLD, ["XLA101"])
    assert plan is not None
    assert plan.counts(19)  # helper's `.item()`
    assert not plan.counts(15)  # summary's, blanked


def test_a_rule_without_a_screen_keeps_the_whole_file() -> None:
    assert CudaToXla.screen is None and not CudaToXla.hot_only  # a test rule: no screen
    rules = [all_rules()["XLA101"], CudaToXla]
    assert screen.screen_text(ast.parse(HOT_AND_COLD), HOT_AND_COLD, rules) is None


def test_a_function_called_from_a_loop_elsewhere_is_hot() -> None:
    text = dedent(
        """\
        def loss_of(batch):
            return batch.sum().item()


        def train(loader):
            for batch in loader:
                loss_of(batch)
        """
    )
    plan = _plan(text, ["XLA101"])
    assert plan is None or plan.text == text  # both are kept: nothing to blank


def test_a_function_taking_tensors_is_kept_for_per_call_rules() -> None:
    """A mask write in a function annotated to take tensors that this file never calls
    counts per call (XLA203 declares `per_call`): the screen must keep its body."""
    text = dedent(
        """\
        from torch import Tensor


        def format_target(target: Tensor, ignore_index: int) -> Tensor:
            target[target == ignore_index] = -1
            return target


        def describe(target):
            target[target == 0] = -1
            return target
        """
    )
    plan = _plan(text, ["XLA203"])
    assert plan is not None
    assert plan.counts(5)  # format_target's write
    assert not plan.counts(10)  # describe: nothing makes it hot
    assert lint_source(text, "t.py", [all_rules()["XLA203"]]).diagnostics[0].start.row == 5


def test_a_method_handing_tensors_to_a_computing_function_is_kept_alone() -> None:
    """Hotness is worked out only for the units it decides; a method handing its parameter
    to a top-level function that computes on it still counts, though nothing else makes
    that function (passed by no screen either) worth examining for itself."""
    text = dedent(
        """\
        import torch


        def clamp(values):
            return torch.clamp(values, 0)


        class Box:
            def fit(self, boxes):
                boxes[boxes < 0] = 0
                return clamp(boxes)

            def name(self, label):
                label[label < 0] = 0
                return label
        """
    )
    tree = ast.parse(text)
    units, _ = screen._split(tree)
    fit = next(i for i, u in enumerate(units) if u.node.name == "fit")
    whole = screen._computing_on_parameters(units, {}, set())
    assert fit in screen._computing_on_parameters(units, {}, set(), {fit})
    assert fit in whole and len(whole) == 2  # `clamp` and `fit`, not `name`
    plan = _plan(text, ["XLA203"])
    assert plan is not None
    assert plan.counts(10)  # fit's write
    assert not plan.counts(14)  # name's: nothing computes on `label`


def test_a_body_on_the_header_row_is_kept() -> None:
    text = (
        "def cold(x): return x.item()\n\n\ndef other(y):\n    return y\n\n\n"
        "def train(loader):\n    for b in loader:\n        b.sum().item()\n"
    )
    plan = _plan(text, ["XLA101"])
    assert plan is None or plan.text.splitlines()[0] == "def cold(x): return x.item()"


def test_a_file_where_no_finding_could_count_is_not_parsed() -> None:
    """No unit passes and the module-level code cannot pass: the plan holds nothing, and the
    engine answers without libcst (the findings are the same: none would count)."""
    text = "import torch\n\n\ndef cold(x):\n    return x.item()\n"
    plan = _plan(text, ["XLA101"])
    assert plan is not None and plan.holds_nothing
    assert lint_source(text, "cold.py", [all_rules()["XLA101"]]).diagnostics == []
    # A loop in the module-level code may be hot: it is parsed.
    looping = text + "\nfor batch in range(3):\n    cold(torch.ones(1))\n"
    looping_plan = _plan(looping, ["XLA101"])
    assert looping_plan is None or not looping_plan.holds_nothing
    # So may a function it defines under a condition (per step by its name).
    nested = "import torch\n\nif True:\n    def forward(x):\n        return x.item()\n"
    nested_plan = _plan(nested, ["XLA101"])
    assert nested_plan is None or not nested_plan.holds_nothing


def test_a_body_starting_with_a_decorated_function_is_blanked_from_its_decorator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ast` places a decorated `def` at `def`, below its decorators: blanking the body from
    there left `@functools.wraps(...)` over `pass`, which libcst refuses (lightning's
    `_restricted_classmethod_impl.__get__`)."""
    text = dedent(
        """\
        import functools

        import torch


        class Restricted:
            def __get__(self, instance, cls=None):
                # the wrapper keeps the method inspectable
                @functools.wraps(self.method)
                def wrapper(*args, **kwargs):
                    return self.method(cls, *args, **kwargs)

                return wrapper


        def train(model, loader):
            for batch in loader:
                model(batch).sum().item()
        """
    )
    plan = _plan(text, ["XLA101"])
    assert plan is not None
    rows = plan.text.splitlines()
    assert rows[8] == "        pass" and rows[9:13] == ["", "", "", ""]
    assert ast.parse(plan.text)
    rules = list(select_rules(None))
    whole, screened = _lint_both(monkeypatch, text, "t.py", rules)
    assert screened == whole and whole.error is None
    assert [d.code for d in whole.diagnostics] == ["XLA101"]


def test_the_screen_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert not screen.enabled()
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "0")
    assert screen.enabled()


def test_screen_tokens() -> None:
    features = screen.Features()
    features.add(ast.parse('import torch_xla.core.xla_model as xm\nxm.mark_step("cuda:0")\n'))
    features.resolve_aliases({"xm": {"torch_xla", "core", "xla_model"}})
    assert features.matches(["mark_step"])
    assert features.matches(["xla_model"])  # through the alias
    assert features.matches(["~mark"])
    assert features.matches(["'cuda"])
    assert features.matches(["<Call>"])
    assert not features.matches(["item", "'cpu", "<For>", "~zzz"])


def test_names_in_use_of_a_screened_file_are_the_whole_files() -> None:
    """An import a fix adds must not rebind a name used in a blanked body: the context's
    `names_in_use` (the screened tree's, with each blanked body parsed alone) is the whole
    file's."""
    import libcst as cst

    from xlalint.analysis.imports import names_in_use
    from xlalint.context import FileContext

    screened_files = 0
    for path in FILES:
        if path.parent.name not in all_rules():
            continue
        text = path.read_text(encoding="utf-8")
        # A fixture's own rule alone, as `test_fixtures.py` runs it: the default set
        # blanks nothing in files this small.
        screened = screen.screen_text(ast.parse(text), text, [all_rules()[path.parent.name]])
        if screened is None:
            continue
        screened_files += 1
        module = cst.parse_module(screened.text)
        ctx = FileContext(module, str(path), full_text=text, blanked=screened.blanked)
        assert ctx.names_in_use == names_in_use(cst.parse_module(text)), path
    assert screened_files > 20
