"""The closing words of `check` and `fix`: counts that agree, and say why they differ.

A fix can bring out findings that `check` cannot list yet (a fix that adds `import torch_xla`
turns on the rules that need torch_xla), and one fix can settle more than one finding, so
`check` counts what the fixer's own fixed point will fix rather than its `[*]` marks.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import libcst
import pytest
from conftest import run_cli, write
from rich.console import Console

from xlalint.api import CheckReport, FixForecast
from xlalint.cli import summary
from xlalint.diagnostics import Applicability, Diagnostic, FileResult, Fix, Location
from xlalint.harness.fix_verify import compare_printed
from xlalint.harness.profile import Confirmation, LineCost, Profile, Unexplained, closest_rule
from xlalint.harness.table import profile_tables
from xlalint.report import plural

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# `.cuda()` has a safe fix that imports torch_xla; only then is `torch.save` of device
# state XLA code, and XLA501's fix (`xm.save`) applies.
CUDA_SCRIPT = """\
import torch

model = torch.nn.Linear(4, 4).cuda()
torch.save(model.state_dict(), "m.pt")
"""

FIXABLE = re.compile(r"^\[\*\] (\d+) fixable with `xlalint fix --apply`")
FIXED = re.compile(r"^Fixed (\d+) findings? in ")
MARKED = re.compile(r": XLA\d{3} \[\*\] ")


def _marked(stdout: str) -> int:
    return sum(1 for line in stdout.splitlines() if MARKED.search(line))


def _fixable(stdout: str) -> int:
    return next(int(m[1]) for line in stdout.splitlines() if (m := FIXABLE.match(line)))


def _fixed(stdout: str) -> int:
    return next(int(m[1]) for line in stdout.splitlines() if (m := FIXED.match(line)))


def test_check_counts_the_fixes_that_other_fixes_enable(project: Path) -> None:
    write(project, {"train.py": CUDA_SCRIPT})
    concise = run_cli("check", "--output-format", "concise", "train.py")
    assert _marked(concise.stdout) == 1  # only `.cuda()` can be listed as fixable
    assert concise.stdout.splitlines()[-2:] == [
        "[*] 2 fixable with `xlalint fix --apply`.",
        "Of these, 1 is marked [*] and 1 (XLA501) appears only once other fixes are applied: "
        "a fix can enable another.",
    ]

    diff = run_cli("fix", "train.py")
    assert diff.stderr.splitlines() == [
        "Would fix 2 findings in 1 file (XLA301 x1, XLA501 x1).",
        "1 of them (XLA501) is found only once other fixes are applied: a fix can enable another.",
    ]
    applied = run_cli("fix", "--apply", "train.py")
    assert applied.stdout.splitlines() == [
        "Fixed 2 findings in 1 file (XLA301 x1, XLA501 x1).",
        "1 of them (XLA501) was found only once other fixes were applied: a fix can enable "
        "another.",
    ]
    assert "xm.save(model.state_dict()" in (project / "train.py").read_text()
    assert run_cli("check", "train.py").stdout == "All checks passed!\n"


def test_check_and_fix_agree_on_the_cuda_example(project: Path) -> None:
    """What `check` says `fix --apply` (with and without `--unsafe-fixes`) fixes, it fixes."""
    shutil.copy(EXAMPLES / "train_cuda.py", project / "train_cuda.py")
    check = run_cli("check", "train_cuda.py").stdout
    promised = _fixable(check)
    more = next(
        int(m[1])
        for line in check.splitlines()
        if (m := re.search(r"\((\d+) more with `--un", line))
    )
    shutil.copy(project / "train_cuda.py", project / "unsafe.py")

    fixed = run_cli("fix", "--apply", "train_cuda.py")
    assert _fixed(fixed.stdout) == promised
    left = run_cli("check", "--output-format", "concise", "train_cuda.py").stdout
    remaining = len([line for line in left.splitlines() if ": XLA" in line])
    assert f"{plural(remaining, 'finding')} remain" in fixed.stdout
    assert _fixed(run_cli("fix", "--apply", "--unsafe-fixes", "unsafe.py").stdout) == (
        promised + more
    )


def test_check_fix_with_nothing_safe_to_fix_says_so(project: Path) -> None:
    write(project, {"train.py": CUDA_SCRIPT})
    run_cli("fix", "--apply", "train.py")
    again = run_cli("check", "--fix", "train.py")
    assert again.stdout.splitlines() == ["No fixes applied.", "All checks passed!"]


def _diagnostic(row: int, applicability: Applicability | None) -> Diagnostic:
    fix = Fix(applicability, "rewrite it", ()) if applicability else None
    return Diagnostic(
        code="XLA101", name="item-in-hot-code", message="m", filename="a.py",
        start=Location(row, 1), end=Location(row, 2), fix=fix,
    )  # fmt: skip


def _report(*applicabilities: Applicability | None) -> CheckReport:
    diagnostics = [_diagnostic(row, a) for row, a in enumerate(applicabilities, 1)]
    return CheckReport(results=[FileResult("a.py", diagnostics)])


def test_summary_without_safe_fixes_names_the_unsafe_ones() -> None:
    unsafe = Applicability.UNSAFE
    report = _report(unsafe, unsafe, None)
    assert summary(report).splitlines()[-1] == (
        "No safe fixes; 2 with `xlalint fix --apply --unsafe-fixes`."
    )
    assert summary(report, FixForecast(marked=0, safe=0, unsafe=3)).splitlines()[-1] == (
        "No safe fixes; 3 with `xlalint fix --apply --unsafe-fixes`."
    )
    assert summary(_report(None)) == "Found 1 finding in 1 file.\n"


def test_summary_says_when_a_fix_settles_or_holds_back_a_marked_finding() -> None:
    safe = Applicability.SAFE
    report = _report(safe, safe, safe, None)
    settled = summary(report, FixForecast(marked=3, safe=2, unsafe=2)).splitlines()
    assert settled[1:] == [
        "[*] 2 fixable with `xlalint fix --apply`.",
        "1 of the 3 findings marked [*] goes away with another finding's fix.",
    ]
    kept = summary(report, FixForecast(marked=3, safe=1, unsafe=1, kept=2)).splitlines()
    assert kept[2] == (
        "2 of the 3 findings marked [*] stay: their fixes cannot be applied with the others."
    )
    one = summary(_report(safe), FixForecast(marked=1, safe=0, unsafe=0, kept=0))
    assert one == "Found 1 finding in 1 file.\n"
    enabled = summary(
        report, FixForecast(marked=3, safe=5, unsafe=6, enabled=Counter({"XLA501": 2}))
    ).splitlines()
    assert enabled[1:] == [
        "[*] 5 fixable with `xlalint fix --apply` (1 more with `--unsafe-fixes`).",
        "Of these, 3 are marked [*] and 2 (XLA501) appear only once other fixes are applied: "
        "a fix can enable another.",
    ]


def test_profile_and_verify_words_agree_in_number() -> None:
    totals = {
        "imported_torch_xla": True, "executions": 1, "device_to_host": 1,
        "uncached_compiles": 1, "cached_compiles": 0, "max_graph_size": 1, "fallbacks": {},
    }  # fmt: skip
    cost = LineCost("train.py", 3, executions=1, host_reads=1, compiles=1)
    finding = _diagnostic(3, None)
    read = LineCost("train.py", 4, executions=1, host_reads=1)
    what, rule = closest_rule(read, "print(loss)")
    assert what == "1 device-to-host transfer"
    assert closest_rule(LineCost("train.py", 5, compiles=1), "y = f(x)")[0] == "1 compile"
    result = Profile(
        ["python", "train.py"], 0, "", "", totals, [cost, read],
        [Confirmation(replace(finding, filename="train.py"), cost)],
        [Unexplained("train.py", 4, what, rule, read)],
    )  # fmt: skip
    console = Console(record=True, width=200)
    for part in profile_tables(result):
        console.print(part)
    text = console.export_text()
    assert "1 execution, 1 device-to-host transfer, 1 compile (0 cached)" in text
    assert "largest graph 1 node;" in text
    assert "confirmed: 1 execution, 1 device-to-host transfer, 1 compile" in text
    assert "train.py:4: 1 device-to-host transfer;" in text
    assert not re.search(r"\b1 (executions|compiles|transfers|nodes)\b", text)
    assert compare_printed("loss 0.5", "loss 0.5").describe() == "the same number printed"
    assert compare_printed("1 2", "1").describe() == "different output: 2 vs 1 number printed"


def test_forecast_from_the_stored_check_result_is_the_same(project: Path) -> None:
    """With a cache, the forecast starts from the check's stored result for the same bytes
    instead of linting the file again: the closing words must not change."""
    shutil.copy(EXAMPLES / "train_cuda.py", project / "train_cuda.py")
    write(project, {"train.py": CUDA_SCRIPT})
    cold = run_cli("check", "--no-cache", "train_cuda.py", "train.py")
    cache = project / ".cache"
    cached = run_cli(
        "check", "--cache-dir", str(cache), "train_cuda.py", "train.py",
        env={"XLALINT_NO_CACHE": None},
    )  # fmt: skip
    assert any(cache.rglob("*.json"))  # the check's results were stored, and read back
    assert _fixable(cold.stdout) > 0
    assert cached.stdout == cold.stdout


def test_forecast_without_a_cache_starts_from_the_checks_own_result(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --no-cache` keeps its results in memory for the closing forecast, as a cache
    folder would: the forecast lints no text the check linted, says the same, and nothing
    is written. Its worker forecasts each file right after linting it, so the fixer takes
    the check's tree of a text the screen kept whole rather than parsing it again: libcst
    parses no text more often than with a fresh cache folder, and fewer texts in all."""
    shutil.copy(EXAMPLES / "train_cuda.py", project / "train_cuda.py")
    write(project, {"train.py": CUDA_SCRIPT})
    parses: list[str] = []
    real = libcst.parse_module

    def counting(source: str, *args: object, **kwargs: object) -> libcst.Module:
        parses.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(libcst, "parse_module", counting)
    cold = run_cli("check", "--no-cache", "train_cuda.py", "train.py")
    assert sorted(p.name for p in project.iterdir()) == ["train.py", "train_cuda.py"]
    cold_parses, parses[:] = list(parses), []
    cached = run_cli(
        "check", "--cache-dir", str(project / ".cache"), "train_cuda.py", "train.py",
        env={"XLALINT_NO_CACHE": None},
    )  # fmt: skip
    assert _fixable(cold.stdout) > 0
    assert cold.stdout == cached.stdout
    assert Counter(cold_parses) <= Counter(parses)
    assert len(cold_parses) < len(parses)


@pytest.mark.parametrize(
    ("example", "runs"),
    [
        ("train_xla_legacy.py", 1),
        ("mnist_2019.py", 1),
        ("train_cuda.py", 2),
        ("train_xla_slow.py", 2),
    ],
)
def test_the_forecast_runs_the_unsafe_fixer_only_where_a_text_offers_an_unsafe_fix(
    example: str, runs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forecast's run with `--unsafe-fixes` would choose the same fixes as the safe
    run in every round, and apply as many, where no text the safe run linted offers a fix
    only it applies: it is not run then, and the forecast is the same as with both runs."""
    from xlalint import api
    from xlalint.config import Settings

    rules = api.enabled_rules(Settings(root=EXAMPLES))
    real = api.fix_source
    unsafe_runs: list[bool] = []

    def counting(*args: object, **kwargs: object) -> object:
        unsafe_runs.append(bool(args[4]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "fix_source", counting)
    forecast = api._forecast_file(EXAMPLES / example, rules, ())
    assert unsafe_runs == [False, True][:runs]
    monkeypatch.setattr(api, "_unsafe_only_fixes", lambda lints: True)  # both runs, always
    assert api._forecast_file(EXAMPLES / example, rules, ()) == forecast
    assert forecast.safe > 0
    assert (forecast.unsafe > forecast.safe) == (runs == 2)


def test_a_check_that_forecasts_lints_a_text_its_screen_barely_cuts_whole(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --no-cache` forecasts a file with a fix by parsing its whole text: where the
    screen blanks under 2% of the rows, the check lints the whole text (findings are the
    same with and without the screen) and lends the forecast its tree. The libcst parses
    are then those of a run without the screen; `-q` (no forecast) still screens."""
    import ast

    from xlalint import screen
    from xlalint.api import enabled_rules
    from xlalint.config import Settings
    from xlalint.engine import rules_for_text

    text = CUDA_SCRIPT + "\n\ndef helper(x):\n    return x + 1\n\n\n"
    text += "".join(f"A{i} = {i}\n" for i in range(100))
    write(project, {"train.py": text})
    rules = rules_for_text(text, enabled_rules(Settings(root=project)))
    screened = screen.screen_text(ast.parse(text), text, rules)
    assert screened is not None and screened.blanked  # the helper's body
    parses: list[str] = []
    real = libcst.parse_module

    def counting(source: str, *args: object, **kwargs: object) -> libcst.Module:
        parses.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(libcst, "parse_module", counting)
    checked = run_cli("check", "--no-cache", "train.py")
    assert parses.count(text) == 1 and screened.text not in parses
    with_screen, parses[:] = list(parses), []
    unscreened = run_cli("check", "--no-cache", "train.py", env={"XLALINT_NO_SCREEN": "1"})
    assert checked.stdout == unscreened.stdout
    assert _fixable(checked.stdout) > 0
    assert Counter(with_screen) == Counter(parses)
    parses[:] = []
    run_cli("check", "-q", "--no-cache", "train.py")
    assert screened.text in parses and text not in parses


HELPED_SCRIPT = """\
import torch
from helpers import scale, show


def log(value):
    show(value)


model = torch.nn.Linear(4, 4).cuda()
for batch in range(10):
    out = scale(model(torch.ones(4).cuda()))
    log(out)
torch.save(model.state_dict(), "m.pt")
"""

HELPERS = """\
import torch


def scale(x):
    return x * 2


def show(x):
    print(x.item())
"""


def test_the_forecast_reads_other_modules_in_the_checks_lint_scope(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --no-cache` lints a file and forecasts its fixes in one `lint_memo` scope:
    what the layers read from the disk (the modules it imports, its own module) is parsed
    once for the check's lint and the fixer's lints of the fixed texts, not once per lint;
    the memos are emptied when the file's forecast ends, and the words are those of a run
    with a cache folder."""
    from xlalint import lint_memo
    from xlalint.analysis import project_modules

    write(project, {"train.py": HELPED_SCRIPT, "helpers.py": HELPERS})
    parsed: list[str] = []
    real = project_modules._parse

    def counting(path: str, text: str) -> object:
        parsed.append(path)
        return real(path, text)

    cleared: list[bool] = []
    real_clear = lint_memo.clear

    def clearing() -> None:
        cleared.append(True)
        real_clear()

    monkeypatch.setattr(project_modules, "_parse", counting)
    monkeypatch.setattr(lint_memo, "clear", clearing)
    cold = run_cli("check", "--no-cache", "train.py")
    assert not lint_memo.in_lint()
    assert _fixable(cold.stdout) > 0
    # One scope for the file: the check's lint and the fixer's lints of the fixed texts
    # (at least one here), emptied once, when the forecast ends.
    assert cleared == [True]
    assert any(p.endswith("helpers.py") for p in parsed)
    assert len(parsed) == len(set(parsed))  # each module parsed once
    cached = run_cli(
        "check", "--cache-dir", str(project / ".cache"), "train.py",
        env={"XLALINT_NO_CACHE": None},
    )  # fmt: skip
    assert cached.stdout == cold.stdout


@pytest.mark.parametrize("held_back", [False, True], ids=["all-applied", "one-code-held-back"])
@pytest.mark.parametrize(
    "example", ["train_xla_legacy.py", "mnist_2019.py", "train_cuda.py", "train_xla_slow.py"]
)
def test_the_forecast_lints_fixed_texts_with_the_rules_that_offer_fixes(
    example: str, held_back: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forecast counts fixes: each text a fix makes is linted with the rules that may
    offer a fix (`fixer.offering_fixes`), and the last one by all the rules only where a
    marked fix was held back (then `kept` counts the findings left). The forecast is the
    one lints by all the rules give, with every fix applied and with one code's held back."""
    from xlalint import api, engine, fixer
    from xlalint.config import Settings
    from xlalint.diagnostics import FixAvailability

    path = EXAMPLES / example
    rules = api.enabled_rules(Settings(root=EXAMPLES))
    if held_back:
        # The fixer never takes the fixes of the file's first marked finding's code.
        first = next(
            d for d in engine.lint_source(path.read_text(), str(path), rules).diagnostics if d.fix
        )
        real_choose = fixer._choose

        def holding_back(*args: object, **kwargs: object) -> list[Diagnostic]:
            chosen = real_choose(*args, **kwargs)  # type: ignore[arg-type]
            return [d for d in chosen if d.code != first.code]

        monkeypatch.setattr(fixer, "_choose", holding_back)
    linted: list[tuple[str, set[str]]] = []
    real_lint = fixer.lint_source

    def counting(text: str, filename: str, used: list, *args: object, **kw: object) -> FileResult:
        linted.append((text, {rule.code for rule in used}))
        return real_lint(text, filename, used, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fixer, "lint_source", counting)
    alone: list[str] = []
    real_all = api._all_remaining
    monkeypatch.setattr(
        api, "_all_remaining", lambda item, *a: alone.append(item.text) or real_all(item, *a)
    )
    forecast = api._forecast_file(path, rules, ())
    offering = {
        rule.code
        for rule in rules
        if rule.fix_availability is not FixAvailability.NONE or rule.decides_device
    }
    fixed = [codes for text, codes in linted if text != path.read_text()]
    assert fixed and all(codes <= offering for codes in fixed)
    assert (forecast.kept > 0) == held_back
    assert len(alone) == held_back  # the last text, by all the rules (the file's own: its lint)
    if held_back:  # a text the fixes changed, unless none applied (train_cuda.py's one)
        assert (alone[0] != path.read_text()) == (forecast.safe > 0)
    monkeypatch.setattr(fixer, "offering_fixes", lambda text, rules: rules)  # all, always
    assert api._forecast_file(path, rules, ()) == forecast
