"""Family 6 (API modernization): the fixes the rules record, applied to real text.

Exact before/after pairs apply one rule's edits with a small local helper and list the
imports the fixer is asked to add; the fixer tests at the end drive `xlalint.fixer` over
whole files (imports added once, output parses, fixing twice equals fixing once). Detection
itself is covered by fixtures/XLA60*/.
"""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest
from snippet_fixes import apply, lint
from snippet_fixes import fixed as fixed_snippet

from xlalint.analysis.imports import ImportTable
from xlalint.diagnostics import Diagnostic
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode

XM = "import torch_xla.core.xla_model as xm\n"
TORCH_XLA = "import torch_xla"
XR = "import torch_xla.runtime as xr"
MET = "import torch_xla.debug.metrics as met"
FAMILY6 = [rule for code, rule in all_rules().items() if code.startswith("XLA6")]


def fixed(code: str, source: str) -> tuple[str, set[str]]:
    """The snippet with every fix of `code` applied; every finding must have one."""
    return fixed_snippet(code, source, all_fixable=True)


def assert_no_fix(code: str, source: str) -> list[Diagnostic]:
    diagnostics = lint(code, source)
    assert diagnostics, f"{code} found nothing in the snippet"
    assert all(d.fix is None for d in diagnostics)
    return diagnostics


# -- import resolution ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "expression", "qualified"),
    [
        ("import torch_xla_py.xla_model as xm", "xm.mark_step",
         "torch_xla.core.xla_model.mark_step"),
        ("from torch_xla_py import data_parallel as dp", "dp.DataParallel",
         "torch_xla.distributed.data_parallel.DataParallel"),
        ("import torch_xla_py.utils", "torch_xla_py.utils.getenv_as",
         "torch_xla.utils.utils.getenv_as"),
        ("import torch_xla_py.xla_dist as xd", "xd.main", "torch_xla_py.xla_dist.main"),
    ],
)  # fmt: skip
def test_imports_of_torch_xla_py_resolve_to_their_successors(
    source: str, expression: str, qualified: str
) -> None:
    table = ImportTable()
    table.add_top_level(cst.parse_module(source))
    assert table.resolve(cst.parse_expression(expression)) == qualified


# -- XLA601 legacy-torch-xla-py ------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("import torch_xla_py.xla_model as xm\n", "import torch_xla.core.xla_model as xm\n"),
        (
            "import torch_xla_py.parallel_loader as pl, torch_xla_py.utils as xu\n",
            "import torch_xla.distributed.parallel_loader as pl, torch_xla.utils.utils as xu\n",
        ),
        (
            "from torch_xla_py import utils as xu, keyd_queue  # helpers\n",
            "from torch_xla.utils import utils as xu, keyd_queue  # helpers\n",
        ),
        (
            "from torch_xla_py import (\n    xla_model,\n    xla_env_vars,\n)\n",
            "from torch_xla.core import (\n    xla_model,\n    xla_env_vars,\n)\n",
        ),
        (
            "from torch_xla_py.parallel_loader import ParallelLoader\n",
            "from torch_xla.distributed.parallel_loader import ParallelLoader\n",
        ),
        (
            "import torch_xla_py.data_parallel\n"
            "m = torch_xla_py.data_parallel.DataParallel(net)\n"
            "def f():\n    return torch_xla_py.data_parallel\n",
            "import torch_xla.distributed.data_parallel\n"
            "m = torch_xla.distributed.data_parallel.DataParallel(net)\n"
            "def f():\n    return torch_xla.distributed.data_parallel\n",
        ),
    ],
)
def test_legacy_torch_xla_py_fix(before: str, after: str) -> None:
    result, imports = fixed("XLA601", "import torch\n" + before)
    assert result == "import torch\n" + after
    assert imports == set()


@pytest.mark.parametrize(
    "source",
    [
        "import torch_xla_py.xla_dist as xd\n",
        "import torch_xla_py\n",
        "from torch_xla_py import *\n",
        "from torch_xla_py import xla_model, data_parallel\n",  # two packages now
        "from torch_xla_py.xla_dist import main\n",
    ],
)
def test_legacy_torch_xla_py_without_fix(source: str) -> None:
    [diagnostic] = assert_no_fix("XLA601", source)
    assert diagnostic.hint and "xla_model" in diagnostic.hint


# -- XLA603 deprecated-xla-device ----------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after", "imports"),
    [
        (XM + "device = xm.xla_device()\n", XM + "device = torch_xla.device()\n", {TORCH_XLA}),
        (XM + "d = xm.xla_device(1)\n", XM + "d = torch_xla.device(1)\n", {TORCH_XLA}),
        (XM + "d = xm.xla_device(n=rank)\n", XM + "d = torch_xla.device(index=rank)\n",
         {TORCH_XLA}),
        ("import torch_xla\n" + XM + "x = torch.ones(2, device=xm.xla_device())\n",
         "import torch_xla\n" + XM + "x = torch.ones(2, device=torch_xla.device())\n", set()),
        ("from torch_xla.core.xla_model import xla_device as dev\nd = dev()\n",
         "from torch_xla.core.xla_model import xla_device as dev\nd = torch_xla.device()\n",
         {TORCH_XLA}),
        ("import torch_xla as tx\nfrom torch_xla.core import xla_model\n"
         "d = xla_model.xla_device()\n",
         "import torch_xla as tx\nfrom torch_xla.core import xla_model\nd = tx.device()\n",
         set()),
    ],
)  # fmt: skip
def test_deprecated_xla_device_fix(before: str, after: str, imports: set[str]) -> None:
    result, required = fixed("XLA603", before)
    assert result == after
    assert required == imports


@pytest.mark.parametrize(
    "source",
    [
        'd = xm.xla_device(devkind="TPU")\n',
        'd = xm.xla_device(0, "TPU")\n',
        "d = xm.xla_device(**kwargs)\n",
        "get_device = xm.xla_device\n",
    ],
)
def test_deprecated_xla_device_without_fix(source: str) -> None:
    [diagnostic] = assert_no_fix("XLA603", XM + source)
    assert diagnostic.hint


# -- XLA604 deprecated-mark-step -----------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after", "imports"),
    [
        (XM + "xm.mark_step()\n", XM + "torch_xla.sync()\n", {TORCH_XLA}),
        (XM + "xm.mark_step(wait=True)\n", XM + "torch_xla.sync(wait=True)\n", {TORCH_XLA}),
        (XM + "xm.mark_step(True, False)  # barrier\n",
         XM + "torch_xla.sync(True, False)  # barrier\n", {TORCH_XLA}),
        (XM + "hooks = [xm.mark_step]\n", XM + "hooks = [torch_xla.sync]\n", {TORCH_XLA}),
        ("from torch_xla.core.xla_model import mark_step\nfor b in data:\n    mark_step()\n",
         "from torch_xla.core.xla_model import mark_step\nfor b in data:\n    torch_xla.sync()\n",
         {TORCH_XLA}),
        ("from torch_xla import sync\n" + XM + "xm.mark_step()\n",
         "from torch_xla import sync\n" + XM + "sync()\n", set()),
        ("import torch_xla as tx\n" + XM + "xm.mark_step()\n",
         "import torch_xla as tx\n" + XM + "tx.sync()\n", set()),
        ("import torch_xla_py.xla_model as xm\nxm.mark_step()\n",
         "import torch_xla_py.xla_model as xm\ntorch_xla.sync()\n", {TORCH_XLA}),
    ],
)  # fmt: skip
def test_deprecated_mark_step_fix(before: str, after: str, imports: set[str]) -> None:
    result, required = fixed("XLA604", before)
    assert result == after
    assert required == imports


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # A library that must import without torch_xla: the import goes in the same branch.
        (
            "if is_torch_xla_available():\n"
            "    import torch_xla.core.xla_model as xm\n\n"
            "    XLA_AVAILABLE = True\n"
            "else:\n"
            "    XLA_AVAILABLE = False\n\n\n"
            "def sample(unet, latents):\n"
            "    for t in range(10):\n"
            "        latents = unet(latents, t)\n"
            "        if XLA_AVAILABLE:\n"
            "            xm.mark_step()\n",
            "if is_torch_xla_available():\n"
            "    import torch_xla\n"
            "    import torch_xla.core.xla_model as xm\n\n"
            "    XLA_AVAILABLE = True\n"
            "else:\n"
            "    XLA_AVAILABLE = False\n\n\n"
            "def sample(unet, latents):\n"
            "    for t in range(10):\n"
            "        latents = unet(latents, t)\n"
            "        if XLA_AVAILABLE:\n"
            "            torch_xla.sync()\n",
        ),
        (
            "def step():\n    import torch_xla.core.xla_model as xm\n    xm.mark_step()\n",
            "def step():\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n"
            "    torch_xla.sync()\n",
        ),
        (
            "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n"
            "xm.mark_step()\n",
            "try:\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n"
            "except ImportError:\n    xm = None\ntorch_xla.sync()\n",
        ),
        (
            # The same block already imports torch_xla: nothing to add.
            "if XLA:\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n"
            "xm.mark_step()\n",
            "if XLA:\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n"
            "torch_xla.sync()\n",
        ),
    ],
)
def test_deprecated_mark_step_imports_beside_a_conditional_import(before: str, after: str) -> None:
    result, imports = fixed("XLA604", before)
    assert result == after
    assert imports == set()


@pytest.mark.parametrize(
    "source",
    [
        "if XLA: import torch_xla.core.xla_model as xm\nxm.mark_step()\n",  # no line to add to
        "if XLA:\n    import torch_xla.core.xla_model as xm\ntorch_xla = None\nxm.mark_step()\n",
    ],
)
def test_deprecated_mark_step_without_fix(source: str) -> None:
    assert_no_fix("XLA604", source)


def test_mark_step_of_a_local_or_shadowing_xm_is_not_torch_xlas() -> None:
    source = """\
        import torch_xla.core.xla_model as xm

        def run(xm, device):
            xm.mark_step()
            device.mark_step()

        class Stepper:
            def mark_step(self):
                pass
        """
    assert lint("XLA604", source) == []


# -- XLA605 removed-runtime-api ------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after", "imports"),
    [
        (XM + "n = xm.xrt_world_size()\n", XM + "n = xr.world_size()\n", {XR}),
        (XM + "r = xm.get_ordinal(defval=-1)\n", XM + "r = xr.global_ordinal()\n", {XR}),
        (XM + "import torch_xla.runtime as runtime\nr = xm.get_ordinal()\n",
         XM + "import torch_xla.runtime as runtime\nr = runtime.global_ordinal()\n", set()),
        ("from torch_xla import runtime as xr\n" + XM + "s = Sampler(d, xm.xrt_world_size())\n",
         "from torch_xla import runtime as xr\n" + XM + "s = Sampler(d, xr.world_size())\n",
         set()),
        (XM + "print(f'rank {xm.get_ordinal()} of {xm.xrt_world_size(1)}')\n",
         XM + "print(f'rank {xr.global_ordinal()} of {xr.world_size()}')\n", {XR}),
    ],
)  # fmt: skip
def test_removed_runtime_api_fix(before: str, after: str, imports: set[str]) -> None:
    result, required = fixed("XLA605", before)
    assert result == after
    assert required == imports


def test_removed_runtime_api_from_import_is_reported_and_its_calls_fixed() -> None:
    source = "from torch_xla.core.xla_model import get_ordinal\nr = get_ordinal()\n"
    import_line, call = lint("XLA605", source)
    assert (import_line.start.row, import_line.fix) == (1, None)
    assert "ImportError" in import_line.message
    assert call.fix is not None and call.fix.required_imports == (XR,)
    assert apply(source, list(call.fix.edits)).endswith("r = xr.global_ordinal()\n")


@pytest.mark.parametrize(
    "source",
    [
        "r = xm.get_ordinal(compute_default())\n",
        "rank_fn = xm.get_ordinal\n",
        'kind, index = xm.parse_xla_device("TPU:0")\n',
        "import torch_xla.runtime as xr\npjrt = xr.using_pjrt()\n",
        "xr = 3\nn = xm.xrt_world_size()\n",  # `xr` is something else here
    ],
)
def test_removed_runtime_api_without_fix(source: str) -> None:
    for diagnostic in assert_no_fix("XLA605", XM + source):
        assert diagnostic.hint


# -- XLA607 private-metrics-api ------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after", "imports"),
    [
        ("print(torch_xla._XLAC._xla_metrics_report())\n", "print(met.metrics_report())\n",
         {MET}),
        ("import torch_xla.debug.metrics as metrics\n"
         "n = torch_xla._XLAC._xla_counter_value('UncachedCompile')\n",
         "import torch_xla.debug.metrics as metrics\n"
         "n = metrics.counter_value('UncachedCompile')\n",
         set()),
        ("from torch_xla import _XLAC\nnames = _XLAC._xla_counter_names()\n",
         "from torch_xla import _XLAC\nnames = met.counter_names()\n", {MET}),
        ("report = torch_xla._XLAC._xla_metrics_report\n", "report = met.metrics_report\n", {MET}),
    ],
)  # fmt: skip
def test_private_metrics_api_fix(before: str, after: str, imports: set[str]) -> None:
    result, required = fixed("XLA607", "import torch_xla\n" + before)
    assert result == "import torch_xla\n" + after
    assert required == imports


@pytest.mark.parametrize(
    "source",
    [
        "s = torch_xla._XLAC._short_xla_metrics_report([], [])\n",
        "met = {}\nreport = torch_xla._XLAC._xla_metrics_report()\n",
    ],
)
def test_private_metrics_api_without_fix(source: str) -> None:
    assert_no_fix("XLA607", "import torch_xla\n" + source)


# -- XLA602, XLA606, XLA608: reported with hints -------------------------------------------
@pytest.mark.parametrize(
    ("code", "source", "hint_mentions"),
    [
        ("XLA602", "import torch_xla.distributed.data_parallel as dp\nm = dp.DataParallel(Net)\n",
         "torch_xla.launch"),
        ("XLA606", 'import os\nos.environ["XLA_USE_BF16"] = "1"\n', "torch.bfloat16"),
        ("XLA608", 'import os\nos.environ.setdefault("XLA_IR_DEBUG", "1")\n',
         "XLA_IR_DEBUG=1 python"),
    ],
)  # fmt: skip
def test_report_only_rules_give_hints(code: str, source: str, hint_mentions: str) -> None:
    [diagnostic] = assert_no_fix(code, source)
    assert diagnostic.hint and hint_mentions in diagnostic.hint


# -- the fixer over whole files ------------------------------------------------------------
LEGACY_SCRIPT = """\
import os

import torch
import torch_xla_py.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data.distributed import DistributedSampler

os.environ["XLA_USE_BF16"] = "1"


def _mp_fn(index, dataset, model, optimizer):
    device = xm.xla_device()
    sampler = DistributedSampler(
        dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()
    )
    loader = pl.MpDeviceLoader(torch.utils.data.DataLoader(dataset, sampler=sampler), device)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
    print(torch_xla._XLAC._xla_metrics_report())
"""

MODERN_SCRIPT = """\
import os

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch.utils.data.distributed import DistributedSampler

os.environ["XLA_USE_BF16"] = "1"


def _mp_fn(index, dataset, model, optimizer):
    device = torch_xla.device()
    sampler = DistributedSampler(
        dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal()
    )
    loader = pl.MpDeviceLoader(torch.utils.data.DataLoader(dataset, sampler=sampler), device)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
    print(met.metrics_report())
"""


def test_fixer_modernizes_a_legacy_script_once_and_stably() -> None:
    outcome = fix_text(decode(LEGACY_SCRIPT.encode()), "train.py", FAMILY6)
    assert outcome.error is None
    assert outcome.text == MODERN_SCRIPT
    # `torch_xla._XLAC` resolves only once an earlier round has imported torch_xla.
    assert outcome.applied == {
        "XLA601": 1, "XLA603": 1, "XLA604": 1, "XLA605": 2, "XLA607": 1
    }  # fmt: skip
    assert [d.code for d in outcome.remaining] == ["XLA606"]  # reported only
    again = fix_text(decode(outcome.encoded()), "train.py", FAMILY6)
    assert again.text == outcome.text
    assert not again.applied


def test_fixer_keeps_a_conditional_import_conditional() -> None:
    source = textwrap.dedent(
        """\
        from .utils import is_torch_xla_available

        if is_torch_xla_available():
            import torch_xla.core.xla_model as xm

            XLA_AVAILABLE = True
        else:
            XLA_AVAILABLE = False


        def denoise(unet, scheduler, latents):
            for t in scheduler.timesteps:
                latents = scheduler.step(unet(latents, t), t, latents)
                if XLA_AVAILABLE:
                    xm.mark_step()
            if XLA_AVAILABLE:
                xm.mark_step(wait=True)
            return latents
        """
    )
    outcome = fix_text(decode(source.encode()), "pipeline.py", FAMILY6)
    text = outcome.text
    ast.parse(text)
    assert outcome.applied == {"XLA604": 2}
    assert text.count("import torch_xla\n") == 1
    assert "if is_torch_xla_available():\n    import torch_xla\n" in text
    assert "torch_xla.sync()" in text and "torch_xla.sync(wait=True)" in text
    assert fix_text(decode(outcome.encoded()), "pipeline.py", FAMILY6).text == text
