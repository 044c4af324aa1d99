"""The harness's reasoning, without a device: debug-log parsing, verdicts, cases, commands.

The same code runs for real on the XLA CPU device in test_harness_runtime.py; these tests
pin down the decisions (what counts as a pass, which frame a cost belongs to) exactly.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from rich.console import Console

from xlalint.api import FixReport
from xlalint.diagnostics import Diagnostic, Location
from xlalint.fixer import FixOutcome
from xlalint.harness import debug_log, evidence, ir_dump
from xlalint.harness.cases import CaseError, RuntimeCase, discover, read_case, read_costs
from xlalint.harness.fix_verify import FixVerification, no_xla_reason
from xlalint.harness.profile import (
    Confirmation,
    LineCost,
    LoopGrowth,
    Profile,
    RecompileCause,
    ScriptCommandError,
    _lint,
    _measured_its_cost,
    closest_rule,
    script_arguments,
)
from xlalint.harness.runner import ChildResult
from xlalint.harness.table import (
    PLAIN_WIDTH,
    output_console,
    print_fix_verification,
    print_profile,
    print_report,
)
from xlalint.harness.verdict import compare_outputs, judge
from xlalint.harness.verify import VerifyReport
from xlalint.sources import Source

RULE, DASHES = "=" * 80, "-" * 80


def block(kind: str, *lines: str) -> list[str]:
    """A block of torch_xla's debug analysis, as PT_XLA_DEBUG_LEVEL=2 writes it."""
    return [f"{kind} Analysis: {text}" for text in (RULE, *lines, DASHES, RULE)] + [""]


LOG = [
    "",
    *block("Compilation", "Compilation Cause",
           "  most likely user code trying to access tensor value before torch_xla.sync",
           "Graph Info: ", "  Graph Hash: afd866b3337109b1912a6135882bd614",
           "Python Frame Triggered Execution: ",
           "  item (/venv/lib/python3.11/site-packages/torch/_tensor.py:40)",
           "  train (train.py:10)", "  <module> (/work/proj/train.py:20)"),
    *block("Post Compilation", "Graph input size: 0.000000 GB"),
    *block("Execution", "Execution Cause", "  user torch_xla.sync", "Graph Info: ",
           "Python Frame Triggered Execution: ",
           "  sync (/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)"),
]  # fmt: skip


def test_debug_log_attributes_each_event_to_the_innermost_user_frame() -> None:
    is_user = debug_log.user_file_filter([Path("/work/proj")], cwd=Path("/work/proj"))
    events = debug_log.parse(LOG, is_user)
    assert [(e.kind, e.file, e.line, e.host_read) for e in events] == [
        ("compile", "train.py", 10, True),
        ("execute", None, None, False),  # only torch_xla's own frames: no user line
    ]


def test_user_files_exclude_installed_packages_inside_the_project() -> None:
    is_user = debug_log.user_file_filter([Path("/work/proj")], cwd=Path("/work/proj"))
    assert is_user("/work/proj/model.py")
    assert not is_user("/work/proj/.venv/lib/python3.11/site-packages/torch/nn.py")
    assert not is_user("/elsewhere/model.py")
    assert not is_user("<frozen runpy>")


def ok(outputs: object, **metrics: int) -> ChildResult:
    return ChildResult(ok=True, outputs=outputs, metrics=dict(metrics))


def case(
    tmp_path: Path, code: str = "XLA301", costs: tuple[str, ...] = ("executions",)
) -> RuntimeCase:
    return RuntimeCase(code, tmp_path / "runtime_x.py", costs)


def test_outputs_are_compared_exactly_and_within_tolerance() -> None:
    assert compare_outputs(1.0, 1.0).exact
    near = compare_outputs({"tensor": [1.0, 2.0]}, {"tensor": [1.0, 2.0000001]})
    assert (near.exact, near.close) == (False, True)
    far = compare_outputs([1.0], [1.5])
    assert (far.exact, far.close, far.max_abs_diff) == (False, False, 0.5)
    assert not compare_outputs("a", "b").close


def test_a_safe_fix_that_changes_results_fails(tmp_path: Path) -> None:
    verdict = judge(case(tmp_path), ok([1.0], executions=10), ok([2.0], executions=5))
    assert not verdict.passed
    assert "a safe fix changed the results" in verdict.problems[0]


def test_an_unsafe_fix_reports_its_difference(tmp_path: Path) -> None:
    unsafe = case(tmp_path, code="XLA101")  # XLA101's fix is unsafe
    verdict = judge(unsafe, ok([1.0], executions=10), ok([2.0], executions=5))
    assert verdict.passed
    assert "unsafe fix" in verdict.notes[0]


def test_a_fix_must_lower_its_cost_and_raise_none(tmp_path: Path) -> None:
    same = judge(case(tmp_path), ok(1, executions=5), ok(1, executions=5))
    assert same.problems == ["the fix did not lower executions"]
    both = case(tmp_path, costs=("executions", "device_to_host"))
    worse = judge(
        both, ok(1, executions=4, device_to_host=1), ok(1, executions=2, device_to_host=2)
    )
    assert worse.problems == ["the fix raised device_to_host"]


def test_a_failing_original_counts_only_where_errors_are_the_cost(tmp_path: Path) -> None:
    crash = ChildResult(ok=False, error="RuntimeError: no CUDA GPUs")
    assert judge(case(tmp_path, costs=("errors",)), crash, ok(1)).passed
    assert not judge(case(tmp_path), crash, ok(1, executions=1)).passed
    assert not judge(case(tmp_path, costs=("errors",)), ok(1), crash).passed


def test_costs_are_read_without_running_the_case(tmp_path: Path) -> None:
    path = tmp_path / "runtime_x.py"
    path.write_text('import torch\nCOSTS = ("executions", "device_to_host")\n')
    assert read_costs(path) == ("executions", "device_to_host")
    path.write_text('COSTS = ("speed",)\n')
    with pytest.raises(CaseError, match="unknown costs"):
        read_costs(path)
    path.write_text("STEPS = 5\n")
    with pytest.raises(CaseError, match="no `COSTS"):
        read_costs(path)


def test_every_runtime_case_belongs_to_a_fixable_rule() -> None:
    cases = discover()
    assert cases, "no runtime cases under fixtures/"
    for runtime_case in cases:
        assert runtime_case.rule.fix_applicability is not None, runtime_case.path


def test_profile_takes_only_python_commands(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print(1)\n")
    assert script_arguments(["python", "train.py", "--lr", "1"], tmp_path) == (
        ["train.py", "--lr", "1"], tmp_path / "train.py")  # fmt: skip
    assert script_arguments(["python3", "-m", "pkg.train"], tmp_path) == (["-m", "pkg.train"], None)
    for bad, reason in [(["bash", "run.sh"], "give the script as"),
                        (["python", "missing.py"], "missing.py: no such file"),
                        (["python", "-c", "1"], "no script")]:  # fmt: skip
        with pytest.raises(ScriptCommandError, match=reason):
            script_arguments(bad, tmp_path)


def test_without_the_runtime_extra_the_commands_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch_xla" else real(name, *a),
    )
    for args in (["verify"], ["profile", "--", "python", "train.py"]):
        run = run_cli(*args)
        assert run.exit_code == 2
        assert "torch_xla not installed" in run.stderr
        assert "pip install 'xlalint[runtime]'" in run.stderr


def test_a_case_without_a_cost_must_say_why(tmp_path: Path) -> None:
    path = tmp_path / "runtime_x.py"
    path.write_text("COSTS = ()\n")
    with pytest.raises(CaseError, match="WHY_NO_COST"):
        read_costs(path)
    path.write_text('COSTS = ()\nWHY_NO_COST = "needs several devices"\n')
    assert read_case("XLA404", path).why_no_cost == "needs several devices"


def test_a_case_without_a_cost_passes_only_with_the_same_results(tmp_path: Path) -> None:
    free = RuntimeCase("XLA404", tmp_path / "runtime_x.py", (), why_no_cost="one device")
    same = judge(free, ok([1.0], executions=5), ok([1.0], executions=5))
    assert same.passed and same.notes == ["no cost to lower: one device"]
    assert not judge(free, ok([1.0]), ok([2.0])).passed
    assert not judge(free, ChildResult(ok=False, error="AttributeError: x"), ok([1.0])).passed


def test_a_fix_that_silences_a_deprecation_lowers_warnings(tmp_path: Path) -> None:
    warned = ok(1, warnings=5)
    warned.metrics["warning_messages"] = ["DeprecationWarning: Use torch_xla.sync instead"]
    verdict = judge(case(tmp_path, code="XLA604", costs=("warnings",)), warned, ok(1, warnings=0))
    assert verdict.passed
    assert verdict.notes == ["the original warns: DeprecationWarning: Use torch_xla.sync instead"]
    still = judge(case(tmp_path, code="XLA604", costs=("warnings",)), warned, ok(1, warnings=5))
    assert still.problems == ["the fix did not lower warnings"]


def test_the_verify_report_fits_80_columns_with_notes_below(tmp_path: Path) -> None:
    crash = ChildResult(
        ok=False, error="AttributeError: module 'xm' has no attribute 'xrt_world_size'"
    )
    verdicts = [
        judge(case(tmp_path, code="XLA605", costs=("errors",)), crash, ok([1.0], executions=3)),
        judge(case(tmp_path, code="XLA101", costs=("device_to_host", "executions")),
              ok([1.0], executions=10, device_to_host=5, max_graph_size=163),
              ok([3.0], executions=5, device_to_host=0, max_graph_size=36)),
    ]  # fmt: skip
    console = Console(width=80, record=True, color_system=None)
    print_report(VerifyReport("CPU", verdicts), console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():  # the table's row comes first, the case's lines after it
        if line.startswith("XLA"):
            rows.setdefault(line.split()[0], line.split())
    assert rows["XLA101"][:8] == [
        "XLA101", "differ", "10->5", "5->0", "0", "0", "0", "163->36"]  # fmt: skip
    assert rows["XLA605"][:3] == ["XLA605", "-", "err->3"]
    # Notes and problems are whole lines below the table, not one word per line in a cell.
    assert "XLA605 x (safe fix): errors 1->0: ok\n  the original fails (AttributeError:" in text
    assert "XLA101 x (unsafe fix): device_to_host 5->0, executions 10->5: ok" in text
    assert "\n  outputs differ (max |diff| 2) (unsafe fix: reported, not a failure)\n" in text
    assert "2 cases, 0 failed" in text


def test_rule_pages_show_every_cost_a_case_may_declare() -> None:
    costs = {
        "executions": 6, "device_to_host": 0, "host_to_device": 5, "uncached_compiles": 2,
        "cached_compiles": 4, "cpu_fallbacks": 0, "max_graph_size": 7, "warnings": 3,
    }  # fmt: skip
    case_record = {
        "code": "XLA604", "case": "mark_step", "costs": [], "before": costs,
        "after": {**costs, "host_to_device": 0, "warnings": 0}, "before_error": None,
        "after_error": None, "fallbacks_before": {}, "fallbacks_after": {},
        "outputs": {"exact": True, "close": True, "max_abs_diff": 0.0},
    }  # fmt: skip
    page = evidence.render("XLA604", {"device": "CPU", "cases": [case_record]})
    assert "| host-to-device transfers | 5 | 0 |" in page
    assert "| warnings | 3 | 0 |" in page
    assert "(the costs it is about: none: it proves the fix runs with the same results)" in page


def run_of(returncode: int, stdout: str, stderr: str = "", xla: bool = True) -> Profile:
    totals = {"imported_torch_xla": xla, "executions": 3} if xla else {"imported_torch_xla": False}
    return Profile(["python", "t.py"], returncode, stdout, stderr, totals, [], [], [])


def checked(before: Profile, after: Profile, applied: str, unsafe: bool) -> FixVerification:
    outcome = FixOutcome("t.py", Source("", b"", "utf-8"), "", Counter([applied]))
    return FixVerification(FixReport(outcomes=[outcome]), before, after, unsafe)


def test_fix_verify_fails_when_the_fixed_script_fails() -> None:
    crash = run_of(1, "", "Traceback...\nRuntimeError: Expected XLA tensor. Got: torch.FloatTensor")
    verification = checked(run_of(0, "loss 1.0"), crash, "XLA403", unsafe=False)
    assert verification.problems == [
        "the fixed script fails (exit code 1): RuntimeError: Expected XLA tensor. Got: "
        "torch.FloatTensor"
    ]
    assert not checked(run_of(1, ""), crash, "XLA205", unsafe=True).passed


def test_fix_verify_fails_a_safe_fix_that_changes_the_printed_numbers() -> None:
    before, after = run_of(0, "step 0 loss 0.4552"), run_of(0, "step 0 loss 0.5826")
    safe = checked(before, after, "XLA401", unsafe=False)
    assert safe.problems == [
        "the safe fixes changed what the script printed: different: 2 numbers, max relative "
        "difference 0.22"
    ]
    # An unsafe fix declares that results may change: reported, not a failure.
    declared = checked(before, after, "XLA205", unsafe=True)
    assert declared.unsafe_codes == ["XLA205"] and declared.passed
    # --unsafe-fixes with only safe fixes applied declares nothing.
    assert not checked(before, after, "XLA401", unsafe=True).passed
    assert checked(before, run_of(0, "step 0 loss 0.45520001"), "XLA401", unsafe=False).passed


def test_fix_verify_says_why_the_as_it_is_column_is_empty() -> None:
    cpu_only = run_of(0, "loss 1.0", xla=False)
    assert no_xla_reason(cpu_only) == (
        "the script never imported torch_xla: it ran without XLA (on the CPU or a GPU)"
    )
    assert no_xla_reason(run_of(1, "", xla=False)) == (
        "the script failed before it imported torch_xla"
    )
    assert no_xla_reason(run_of(0, "loss 1.0")) is None
    console = Console(width=200, record=True, color_system=None)
    print_fix_verification(checked(cpu_only, run_of(0, "loss 1.0"), "XLA301", False), console)
    text = console.export_text()
    assert "as it is: no XLA counts (-): the script never imported torch_xla" in text
    assert "fixed: no XLA counts" not in text


def test_random_outputs_pass_as_draws_of_the_same_distribution(tmp_path: Path) -> None:
    import random

    rng = random.Random(0)
    first = [rng.gauss(0.0, 1.0) for _ in range(2000)]
    second = [rng.gauss(0.0, 1.0) for _ in range(2000)]
    shifted = [x + 0.5 for x in second]
    draws = RuntimeCase("XLA401", tmp_path / "runtime_x.py", ("max_graph_size",),
                        random_outputs=True)  # fmt: skip
    same = judge(draws, ok(first, max_graph_size=90), ok(second, max_graph_size=20))
    assert same.passed and same.outputs is not None and same.outputs.same_distribution
    assert "but are draws of the same distribution" in same.notes[0]
    moved = judge(draws, ok(first, max_graph_size=90), ok(shifted, max_graph_size=20))
    assert not moved.passed
    assert "not as draws of one distribution" in moved.problems[0]
    # A case about values (the default) fails on the same draws: the values differ.
    values = RuntimeCase("XLA401", tmp_path / "runtime_x.py", ("max_graph_size",))
    assert not judge(values, ok(first, max_graph_size=90), ok(second, max_graph_size=20)).passed


def test_outputs_kind_is_read_from_the_case(tmp_path: Path) -> None:
    path = tmp_path / "runtime_x.py"
    path.write_text('COSTS = ("max_graph_size",)\nOUTPUTS = "distribution"\n')
    assert read_case("XLA401", path).random_outputs
    path.write_text('COSTS = ("max_graph_size",)\nOUTPUTS = "roughly"\n')
    with pytest.raises(CaseError, match='OUTPUTS must be "values" or "distribution"'):
        read_case("XLA401", path)


def test_verify_shows_host_to_device_transfers(tmp_path: Path) -> None:
    """XLA208's cost is host-to-device copies: its row must show 5->0."""
    verdict = judge(case(tmp_path, code="XLA208", costs=("host_to_device",)),
                    ok([1.0], executions=6, host_to_device=5), ok([1.0], executions=6))  # fmt: skip
    console = Console(width=80, record=True, color_system=None)
    print_report(VerifyReport("CPU", [verdict]), console)
    text = console.export_text().splitlines()
    header = next(line for line in text if "H2D" in line)
    row = next(line for line in text if line.startswith("XLA208"))
    assert row.split()[:5] == ["XLA208", "identical", "6", "0", "5->0"]
    assert header.split()[:5] == ["rule", "outputs", "exec", "D2H", "H2D"]


def test_without_a_terminal_reports_are_wide_and_never_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    console = output_console()
    assert not console.is_terminal and console.width == PLAIN_WIDTH
    cause = "user code trying to access tensor value before torch_xla.sync"
    cost = LineCost("models/very_long_module_name/train_loop.py", 123, executions=5,
                    host_reads=5, causes=Counter({cause: 5}))  # fmt: skip
    totals = {"imported_torch_xla": True, "executions": 5, "device_to_host": 5,
              "uncached_compiles": 1, "cached_compiles": 0, "max_graph_size": 9}  # fmt: skip
    result = Profile(["python", "train.py"], 0, "", "", totals, [cost], [], [])
    console = Console(width=console.width, record=True, color_system=None)
    print_profile(result, console)
    text = console.export_text()
    row = next(line for line in text.splitlines() if "train_loop.py:123" in line)
    assert cause in row  # the whole cause on the row's one line


def ir_graph(rows: int, graph_hash: str) -> list[str]:
    """One graph of torch_xla's IR dump (XLA_SAVE_TENSORS_FMT=text, XLA_IR_DEBUG=1)."""
    return [
        "[ScheduleSyncTensorsGraph]", "TensorsGraphInfo:", "  sync (torch_xla.py:87)", "",
        "## BEGIN_GRAPH", "IR {",
        "  %0 = f32[8,4]{1,0} xla::device_data(), location=<module>@train.py:5, "
        "xla_shape=f32[8,4]{1,0}",
        f"  %1 = f32[{rows},4]{{1,0}} xla::select(%0), location=take@train.py:9, "
        f"xla_shape=f32[{rows},4]{{1,0}}, ROOT=0",
        "  %2 = f32[] aten::sum(%1), location=<module>@train.py:15, xla_shape=f32[], ROOT=1",
        "}", "", f"Graph Hash: {graph_hash}", "", "## END_GRAPH", "",
    ]  # fmt: skip


def test_a_recompile_belongs_to_the_node_whose_shape_changed() -> None:
    dump = [*ir_graph(1, "a1"), *ir_graph(2, "b2"), *ir_graph(2, "b2"), *ir_graph(3, "c3")]
    graphs = ir_dump.graphs(dump, {"a1", "b2", "c3"})
    assert [len(graphs[h]) for h in ("a1", "b2", "c3")] == [3, 3, 3]
    found = ir_dump.recompiles(["a1", "b2", "c3"], graphs)
    assert sorted(found) == [1, 2]  # the first compile is a new graph, not a recompile
    assert found[1].change == "f32[1,4] -> f32[2,4]"
    assert (found[1].after.function, found[1].after.file, found[1].after.line) == (
        "take", "train.py", 9)  # fmt: skip
    # A graph of another length is a different graph: no recompile is claimed.
    assert ir_dump.recompiles(["a1", "x"], {**graphs, "x": graphs["a1"][:2]}) == {}


def test_a_loop_grows_only_when_every_iteration_adds_nodes() -> None:
    assert LoopGrowth("t.py", 3, (91, 22, 45, 68)).grows  # the first sample: before the loop
    assert not LoopGrowth("t.py", 3, (0, 5, 5, 5)).grows  # a barrier each iteration
    assert not LoopGrowth("t.py", 3, (0, 5)).grows  # too few iterations to tell


def test_an_unexplained_cost_names_the_closest_rule() -> None:
    slice_ = LineCost("t.py", 9, compiles=3)
    slice_.recompiles.append(
        RecompileCause("f32[1,4] -> f32[2,4]", "t.py:16", "take", "xla::select")
    )
    assert closest_rule(slice_, "    return w[:n]")[1] == "XLA207"
    batch = LineCost("t.py", 20, compiles=2)
    batch.recompiles.append(RecompileCause("s64[8,31] -> s64[8,40]", "t.py:25", "<module>",
                                           "xla::device_data"))  # fmt: skip
    assert closest_rule(batch, "    ids = ids.to(device)")[1] == "XLA206"
    read = LineCost("t.py", 30, host_reads=5)
    assert closest_rule(read, "    total += loss.item()") == (
        "5 device-to-host transfers",
        "XLA101",
    )
    assert closest_rule(read, "    if loss > 3:")[1] == "XLA103"
    assert closest_rule(read, "    values = helper(loss)")[1] == "XLA107"


SLICED_IN_A_LOOP = """\
import torch
import torch_xla

data = torch.randn(8, 4).to(torch_xla.device())


def first_rows(n):
    return data[:n]


for n in range(1, len(data) // 2 + 1):  # four passes, counted from the data
    total = torch.sum(first_rows(n))
    torch_xla.sync()
"""


@pytest.mark.parametrize(
    ("config", "chosen", "doubtful"),
    [
        ("", [], ["XLA207"]),  # off by default: asked, kept only where measured
        ('extend-select = ["XLA207"]\n', ["XLA207"], []),  # chosen: reported as usual
        ('ignore = ["XLA207"]\n', [], []),  # ignored: never asked
    ],
)
def test_profile_asks_rules_off_by_default_unless_the_config_ignores_them(
    tmp_path: Path, config: str, chosen: list[str], doubtful: list[str]
) -> None:
    (tmp_path / "xlalint.toml").write_text(config)
    script = tmp_path / "train.py"
    script.write_text(SLICED_IN_A_LOOP)
    found, off = _lint({str(script)}, tmp_path)
    assert [d.code for d in found if d.code == "XLA207"] == chosen
    assert [d.code for d in off] == doubtful


@pytest.mark.parametrize(
    ("code", "cost", "kept"),
    [
        ("XLA107", LineCost("a.py", 3, executions=1, host_reads=2), True),
        ("XLA107", LineCost("a.py", 3, executions=4, compiles=5), False),  # no read
        (
            "XLA207",
            LineCost("a.py", 3, compiles=1, recompiles=[RecompileCause("a", None, None)]),
            True,
        ),
        ("XLA207", LineCost("a.py", 3, executions=1, host_reads=1), False),  # a read, not a shape
        ("XLA304", LineCost("a.py", 3, executions=1, host_reads=1, compiles=3), False),
    ],
)
def test_a_rule_off_by_default_is_kept_only_where_its_own_cost_was_measured(
    code: str, cost: LineCost, kept: bool
) -> None:
    finding = Diagnostic(
        code=code, name="n", message="m", filename="a.py", start=Location(3, 1), end=Location(3, 2)
    )
    assert _measured_its_cost(Confirmation(finding, cost)) is kept
    assert _measured_its_cost(Confirmation(finding, None)) is False
