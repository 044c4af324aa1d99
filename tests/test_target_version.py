"""`target-version`: fixes write, and XLA6xx report, what the targeted torch_xla release has."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import nbformat
import pytest
from click.testing import CliRunner
from conftest import Run, write

from xlalint.analysis.xla_api import (
    BARRIER,
    DEVICE,
    LATEST,
    SUPPORTED,
    Release,
    api_at,
    parse_release,
    respell,
)
from xlalint.api import check_paths
from xlalint.cache import ResultCache
from xlalint.cli import main
from xlalint.config import ConfigError, find_settings
from xlalint.engine import lint_source
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.server import fix_all, lint_document
from xlalint.sources import decode

# A CUDA training loop: XLA401 appends a barrier, XLA301 moves the batch to the device.
LOOP = """\
import torch


def train(model, loader, opt):
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
"""


def _r(text: str) -> Release:
    release = parse_release(text)
    assert release is not None
    return release


def fix(source: str, codes: list[str], target: str, unsafe: bool = False) -> str:
    rules = [all_rules()[code] for code in codes]
    release = _r(target)
    outcome = fix_text(
        decode(dedent(source).encode()), "t.py", rules, unsafe=unsafe, target=release
    )
    again = fix_text(decode(outcome.encoded()), "t.py", rules, unsafe=unsafe, target=release)
    assert again.text == outcome.text, "fixing the fixed text changed it again"
    assert [d.code for d in again.remaining] == [], "the fix left its own finding behind"
    return outcome.text


def findings(source: str, code: str, target: str) -> list[str]:
    result = lint_source(dedent(source), "t.py", [all_rules()[code]], target=_r(target))
    return [d.message for d in result.diagnostics]


def cli(*args: str, data: str | None = None) -> Run:
    result = CliRunner().invoke(main, list(args), input=data)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


# -- releases and spellings -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.4", (2, 4)), ("2.4.0", (2, 4)), ("2.8.1", (2, 8)), (" 2.9 ", (2, 9))],
)
def test_releases_parse_to_their_minor(text: str, expected: tuple[int, int]) -> None:
    assert parse_release(text) == Release(*expected)


@pytest.mark.parametrize("text", ["2.0", "2.10", "3.11", "py311", "2", "latest", ""])
def test_unknown_releases_are_refused(text: str) -> None:
    assert parse_release(text) is None


def test_default_is_the_newest_supported_release() -> None:
    assert LATEST == max(SUPPORTED) == Release(2, 9)
    assert find_settings(Path("/")).target_version == LATEST


def test_the_flattened_api_is_written_from_the_release_that_added_it() -> None:
    assert api_at(BARRIER, _r("2.3")) == (
        "torch_xla.core.xla_model.mark_step",
        "import torch_xla.core.xla_model as xm",
    )
    assert api_at(BARRIER, _r("2.4")) == ("torch_xla.sync", "import torch_xla")
    assert api_at(DEVICE, _r("2.2")) == (
        "torch_xla.core.xla_model.xla_device",
        "import torch_xla.core.xla_model as xm",
    )
    assert api_at(DEVICE, _r("2.3")) == ("torch_xla.device", "import torch_xla")


def test_messages_are_respelled_for_a_release_without_the_flattened_api() -> None:
    text = "call `torch_xla.sync()`; move with `.to(torch_xla.device())`; `torch_xla.launch(fn)`"
    assert respell(text, _r("2.2")) == (
        "call `xm.mark_step()`; move with `.to(xm.xla_device())`; `xmp.spawn(fn)`"
    )
    assert respell(text, _r("2.4")) == (
        "call `torch_xla.sync()`; move with `.to(torch_xla.device())`; `xmp.spawn(fn)`"
    )
    assert respell(text, LATEST) == text


# -- fixes at two targets ---------------------------------------------------------------------
def test_fixes_at_an_old_target_write_the_xla_model_api() -> None:
    fixed = fix(LOOP, ["XLA401", "XLA301"], "2.2")
    assert "import torch_xla.core.xla_model as xm\n" in fixed
    assert "loss = model(x.to(xm.xla_device())).sum()" in fixed
    assert "        opt.step()\n        xm.mark_step()\n" in fixed
    assert "torch_xla.sync" not in fixed and "torch_xla.device" not in fixed


def test_fixes_at_the_newest_target_write_the_flattened_api() -> None:
    fixed = fix(LOOP, ["XLA401", "XLA301"], "2.9")
    assert "import torch_xla\n" in fixed and "xla_model" not in fixed
    assert "loss = model(x.to(torch_xla.device())).sum()" in fixed
    assert "        opt.step()\n        torch_xla.sync()\n" in fixed


def test_between_the_two_the_device_is_flattened_before_the_barrier() -> None:
    fixed = fix(LOOP, ["XLA401", "XLA301"], "2.3")
    assert "x.to(torch_xla.device())" in fixed
    assert "        xm.mark_step()\n" in fixed


def test_an_old_target_reuses_the_files_own_alias() -> None:
    source = "import torch_xla.core.xla_model as xla_model\n" + LOOP
    fixed = fix(source, ["XLA401", "XLA301"], "2.2")
    assert "x.to(xla_model.xla_device())" in fixed
    assert "        xla_model.mark_step()\n" in fixed
    assert "import torch_xla.core.xla_model as xm" not in fixed


OPTIONAL = """\
import torch
from torch.utils.data import DataLoader

try:
    import torch_xla

    XLA_AVAILABLE = True
except ImportError:
    XLA_AVAILABLE = False


def train(model, dataset, opt):
    loader = DataLoader(dataset, batch_size=8)
    for x, y in loader:
        x = x.to("cpu")
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""


def test_an_optional_torch_xla_gets_the_old_device_import_in_its_guard() -> None:
    fixed = fix(OPTIONAL, ["XLA401", "XLA403"], "2.2", unsafe=True)
    guard = fixed.split("except ImportError")[0]
    assert "    import torch_xla.core.xla_model as xm\n" in guard
    assert "    import torch_xla.distributed.parallel_loader as pl\n" in guard
    assert "pl.MpDeviceLoader(loader, xm.xla_device()) if XLA_AVAILABLE else loader" in fixed
    new = fix(OPTIONAL, ["XLA401", "XLA403"], "2.9", unsafe=True)
    assert "xla_model" not in new and "torch_xla.device()" in new


def test_messages_name_the_targets_api() -> None:
    (old,) = findings(LOOP, "XLA401", "2.3")
    (new,) = findings(LOOP, "XLA401", "2.9")
    assert "call `xm.mark_step()` once per step" in old
    assert "call `torch_xla.sync()` once per step" in new


# -- XLA6xx by target ------------------------------------------------------------------------
MARK_STEP = """\
import torch_xla.core.xla_model as xm

for batch in loader:
    step(batch)
    xm.mark_step()
"""
XLA_DEVICE = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
WORLD_SIZE = "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size()\n"
USING_PJRT = "import torch_xla.runtime as xr\n\nok = xr.using_pjrt()\n"
FALLBACKS = "import torch_xla\n\nops = torch_xla._XLAC._get_executed_fallback_ops()\n"
REPORT = "import torch_xla\n\nprint(torch_xla._XLAC._xla_metrics_report())\n"
BF16 = 'import os\n\nos.environ["XLA_USE_BF16"] = "1"\n'
FP16 = 'import os\n\nos.environ["XLA_USE_FP16"] = "1"\n'


@pytest.mark.parametrize(
    ("source", "code", "quiet", "loud", "says"),
    [
        (MARK_STEP, "XLA604", "2.7", "2.8", "torch_xla 2.8 warns on every call"),
        (XLA_DEVICE, "XLA603", "2.7", "2.8", "torch_xla 2.8 warns on every call"),
        (WORLD_SIZE, "XLA605", "2.6", "2.7", "does not exist in torch_xla 2.7"),
        (USING_PJRT, "XLA605", "2.4", "2.5", "does not exist in torch_xla 2.5"),
        (FALLBACKS, "XLA607", "2.3", "2.4", "executed_fallback_ops"),
        (BF16, "XLA606", "2.3", "2.4", "is deprecated"),
        (FP16, "XLA606", "2.3", "2.4", "silently computes in float16 and is deprecated"),
    ],
    ids=["mark_step", "xla_device", "xrt_world_size", "using_pjrt", "fallback_ops", "bf16", "fp16"],
)
def test_modernization_rules_report_only_what_the_target_deprecated_or_removed(
    source: str, code: str, quiet: str, loud: str, says: str
) -> None:
    messages = findings(source, code, loud)
    assert len(messages) == 1 and says in messages[0]
    assert findings(source, code, quiet) == []


def test_fp16_variables_are_deprecated_at_2_4_and_unread_after() -> None:
    (deprecated,) = findings(FP16, "XLA606", "2.4")
    (unread,) = findings(FP16, "XLA606", "2.5")
    assert "is deprecated" in deprecated and "no longer read" not in deprecated
    assert "`XLA_USE_FP16` is no longer read by torch_xla 2.5" in unread


@pytest.mark.parametrize("code", ["XLA603", "XLA604", "XLA605", "XLA606"])
def test_an_old_target_is_quiet_about_the_newest_releases_deprecations(code: str) -> None:
    for source in (MARK_STEP, XLA_DEVICE, WORLD_SIZE, USING_PJRT, BF16, FP16):
        assert findings(source, code, "2.1") == []


def test_private_metrics_with_a_public_form_at_every_release_are_always_reported() -> None:
    assert len(findings(REPORT, "XLA607", "2.1")) == 1


def test_mark_step_is_modernized_at_the_release_that_deprecated_it() -> None:
    fixed = fix(MARK_STEP, ["XLA604"], "2.8")
    assert "    torch_xla.sync()\n" in fixed


# -- config, command line, stdin, language server, cache ------------------------------------
def test_config_key_sets_the_target(project: Path) -> None:
    write(project, {"pyproject.toml": '[tool.xlalint]\ntarget-version = "2.3.1"\n'})
    assert find_settings(project).target_version == Release(2, 3)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('"3.11"', "unknown torch_xla release '3.11'; supported: 2.1, 2.2"),
        ("2.4", 'unknown torch_xla release 2.4 (quote it: `target-version = "2.4"`)'),
        ('"py311"', "unknown torch_xla release 'py311'"),
    ],
)
def test_config_refuses_an_unknown_release(project: Path, value: str, says: str) -> None:
    write(project, {"xlalint.toml": f"target-version = {value}\n"})
    with pytest.raises(ConfigError, match="`target-version`: ") as error:
        find_settings(project)
    assert says in str(error.value)
    run = cli("check", ".")
    assert run.exit_code == 2
    assert run.stderr.splitlines() == [f"Error: {error.value}"]


def test_cli_flag_overrides_the_config_and_refuses_unknown_releases(project: Path) -> None:
    write(project, {"pyproject.toml": '[tool.xlalint]\ntarget-version = "2.9"\n', "t.py": LOOP})
    run = cli("fix", "--select", "XLA401", "--target-version", "2.3", ".")
    assert run.exit_code == 1
    assert "+        xm.mark_step()" in run.stdout
    bad = cli("check", "--target-version", "2.10", ".")
    assert bad.exit_code == 2
    assert bad.stderr.splitlines() == [
        "Error: --target-version: unknown torch_xla release '2.10'; "
        "supported: 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9"
    ]


def test_stdin_resolves_the_target_from_the_named_files_config(project: Path) -> None:
    write(project, {"src/pyproject.toml": '[tool.xlalint]\ntarget-version = "2.3"\n'})
    run = cli("fix", "--select", "XLA401", "--stdin-filename", "src/t.py", "-", data=LOOP)
    assert "        xm.mark_step()\n" in run.stdout
    elsewhere = cli("fix", "--select", "XLA401", "--stdin-filename", "t.py", "-", data=LOOP)
    assert "        torch_xla.sync()\n" in elsewhere.stdout


def test_language_server_uses_the_workspace_target(project: Path) -> None:
    write(project, {"pyproject.toml": '[tool.xlalint]\ntarget-version = "2.2"\n'})
    linted = lint_document(LOOP, project / "t.py", 1)
    by_code = {d.code: d for d in linted.findings}
    assert "`xm.mark_step()`" in by_code["XLA401"].message
    fixed = fix_all(linted)
    assert fixed is not None and "        xm.mark_step()\n" in fixed


def test_cached_results_are_kept_per_target(project: Path) -> None:
    write(project, {"t.py": MARK_STEP})
    cache = ResultCache(project / ".cache")
    rules = [all_rules()["XLA604"]]
    settings = find_settings(project)
    new = check_paths([project], settings, rules=rules, cache=cache, jobs=1)
    old_settings = settings.with_overrides(target_version=Release(2, 7))
    old = check_paths([project], old_settings, rules=rules, cache=cache, jobs=1)
    again = check_paths([project], settings, rules=rules, cache=cache, jobs=1)
    assert [d.code for d in new.diagnostics] == ["XLA604"] == [d.code for d in again.diagnostics]
    assert old.diagnostics == []


def test_notebooks_are_fixed_for_the_target(project: Path) -> None:
    imports, function = LOOP.split("\n\n\n")
    cells = [nbformat.v4.new_code_cell(imports), nbformat.v4.new_code_cell(function)]
    write(project, {"nb.ipynb": nbformat.writes(nbformat.v4.new_notebook(cells=cells))})
    run = cli("fix", "--select", "XLA401", "--target-version", "2.3", "--apply", "nb.ipynb")
    assert run.exit_code == 0
    fixed = nbformat.reads((project / "nb.ipynb").read_text(), as_version=4)
    assert fixed.cells[1].source.endswith("        opt.step()\n        xm.mark_step()\n")
    assert "import torch_xla.core.xla_model as xm" in fixed.cells[0].source


@pytest.mark.parametrize("target", [str(release) for release in SUPPORTED])
def test_every_rule_at_every_target_settles_on_what_it_wrote(target: str) -> None:
    """What the fixes write at a target is what the XLA6xx rules accept there: no fix
    is undone by another, and fixing again changes nothing."""
    codes = [code for code, rule in all_rules().items() if rule.fix_applicability is not None]
    fixed = fix(LOOP, codes, target)
    assert ("xm.mark_step()" in fixed) == (target < "2.4")
    assert ("xm.xla_device()" in fixed) == (target < "2.3")
