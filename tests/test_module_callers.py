"""Cross-module hot code: a helper module's function that another module of the project
calls every step (`analysis/module_callers.py`), and the depfile entries it adds."""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Collection
from pathlib import Path

import pytest

import xlalint
from xlalint import api, screen
from xlalint.analysis import module_callers, project_modules
from xlalint.cache import ResultCache
from xlalint.config import Settings

METRICS = """\
import torch


def th_accuracy(pad_outputs, pad_targets, ignore_label):
    pad_pred = pad_outputs.argmax(-1)
    mask = pad_targets != ignore_label
    numerator = torch.sum(pad_pred.masked_select(mask) == pad_targets.masked_select(mask))
    return float(numerator) / float(torch.sum(mask))


class Meter:
    def __init__(self):
        self.total = 0.0

    def add(self, loss):
        self.total += loss.item()

    def report(self, loss):
        return loss.item()
"""
# th_accuracy's reads (one cause each: two selections with one mask, the operands of one
# division); `Meter.add`'s `.item()`.
ACCURACY = [("XLA101", 8), ("XLA202", 7)]
METER = [("XLA101", 16)]

MODEL = """\
import torch
from torch import nn

from .metrics import th_accuracy


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, y):
        logits = self.linear(x)
        return logits, self._accuracy(logits, y)

    def _accuracy(self, logits, y):
        return th_accuracy(logits, y, ignore_label=-1)
"""

TRAIN = """\
import torch

import pkg.metrics as metrics


def train(model, optimizer, loader):
    meter = metrics.Meter()
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        meter.add(loss)
    meter.report(loss)
"""


def _package(root: Path, **modules: str) -> Path:
    package = root / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "metrics.py").write_text(METRICS)
    for name, text in modules.items():
        (package / f"{name}.py").write_text(text)
    project_modules.forget_layout()  # each test's package is new to the process
    return package


def _findings(paths: list[Path], cache: ResultCache | None = None) -> list[tuple[str, int]]:
    settings = Settings(root=paths[0].parent, select=("XLA1", "XLA2"))
    report = api.check_paths(paths, settings, jobs=1, cache=cache)
    return sorted((d.code, d.start.row) for d in report.diagnostics)


def test_a_forward_elsewhere_makes_the_helper_hot(tmp_path: Path) -> None:
    """Paraformer's `forward` -> its own `_accuracy` -> `th_accuracy` of another module."""
    package = _package(tmp_path, model=MODEL)
    assert _findings([package / "metrics.py"]) == ACCURACY
    names = frozenset({"th_accuracy", "Meter.add", "Meter.report"})
    assert module_callers.hot_elsewhere(str(package / "metrics.py"), names) == {"th_accuracy"}
    # Only the names asked about: a caller that spells none of them is not even parsed.
    assert (
        module_callers.hot_elsewhere(str(package / "metrics.py"), frozenset({"Meter.add"})) == set()
    )


def test_a_training_loop_elsewhere_through_a_module_alias_and_an_instance(tmp_path: Path) -> None:
    """`metrics.Meter()` built by the caller, `meter.add(loss)` in its training loop;
    `meter.report(loss)` after the loop runs once."""
    package = _package(tmp_path, train=TRAIN)
    assert _findings([package / "metrics.py"]) == METER


def test_a_subclass_calling_the_base_method_in_its_forward(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        losses=(
            "from torch import nn\n\nfrom pkg.metrics import Meter\n\n\n"
            "class Loss(nn.Module, Meter):\n    def forward(self, loss):\n"
            "        self.add(loss)\n        return loss\n"
        ),
    )
    assert _findings([package / "metrics.py"]) == METER


@pytest.mark.parametrize(
    "caller",
    [
        # Run once: `__init__`, `main`, evaluation after training.
        MODEL.replace("return logits, self._accuracy(logits, y)", "return logits").replace(
            "        self.linear = nn.Linear(4, 4)\n",
            "        self.linear = nn.Linear(4, 4)\n        self.acc = self._accuracy(x, y)\n",
        ),
        (
            "from .metrics import th_accuracy\n\n\ndef evaluate(model, loader):\n"
            "    for x, y in loader:\n        print(th_accuracy(model(x), y, -1))\n"
        ),
        # A literal, a path and a config handed: no device tensor.
        "from .metrics import th_accuracy\n\n\ndef forward(path, cfg):\n"
        "    return th_accuracy(path, cfg, 0)\n",
        "from .metrics import th_accuracy\n\n\ndef forward(self):\n"
        "    return th_accuracy(1, 2, 0)\n",
        # Another module's function of the same name.
        "from .other import th_accuracy\n\n\ndef forward(x, y):\n    return th_accuracy(x, y, 0)\n",
    ],
)
def test_hard_negatives(tmp_path: Path, caller: str) -> None:
    package = _package(tmp_path, caller=caller, other="def th_accuracy(a, b, c):\n    pass\n")
    assert _findings([package / "metrics.py"]) == []


def test_no_caller_stays_cold(tmp_path: Path) -> None:
    """Public API no module of the project calls: absence of evidence."""
    package = _package(tmp_path)
    assert _findings([package / "metrics.py"]) == []


def test_a_caller_that_fails_to_parse_contributes_nothing(tmp_path: Path) -> None:
    package = _package(tmp_path, model=MODEL + "\ndef broken(:\n")
    assert _findings([package / "metrics.py"]) == []


def test_no_path_no_layer(tmp_path: Path) -> None:
    package = _package(tmp_path, model=MODEL)
    names = frozenset({"th_accuracy"})
    assert module_callers.hot_elsewhere("<stdin>", names) == frozenset()
    assert module_callers.hot_elsewhere(str(package / "unsaved.py"), names) == frozenset()


def test_screen_keeps_findings_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path, model=MODEL, train=TRAIN)
    screened = _findings([package / "metrics.py"])
    assert screened == sorted(ACCURACY + METER)
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert _findings([package / "metrics.py"]) == screened


def test_callers_and_new_files_relint_the_helper_on_a_warm_run(tmp_path: Path) -> None:
    package = _package(tmp_path, model=MODEL)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "metrics.py"]
    assert _findings(paths, cache) == ACCURACY
    entries = cache.directory / xlalint.__version__
    stored = set(os.listdir(entries))
    assert _findings(paths, cache) == ACCURACY  # warm: a hit
    assert set(os.listdir(entries)) == stored
    # The caller stops calling it per step: the helper's file is linted again.
    model = package / "model.py"
    model.write_text(MODEL.replace("return logits, self._accuracy(logits, y)", "return logits"))
    assert _findings(paths, cache) == []
    # A new caller file whose training loop calls `Meter.add`: its package folder changed.
    (package / "train.py").write_text(TRAIN)
    project_modules.forget_layout()  # (a new process would know nothing of the old layout)
    assert _findings(paths, cache) == METER
    # And back: the first caller calls it again.
    model.write_text(MODEL)
    assert _findings(paths, cache) == sorted(ACCURACY + METER)


def test_the_entry_records_the_callers_and_the_package_folders(tmp_path: Path) -> None:
    package = _package(tmp_path, model=MODEL)
    cache = ResultCache(tmp_path / "cache")
    _findings([package / "metrics.py"], cache)
    settings = Settings(root=package, select=("XLA1", "XLA2"))
    rules = api.enabled_rules(settings)
    path = package / "metrics.py"
    key = cache.key(str(path), path.read_bytes(), rules, settings.hot_functions)
    deps = [dep[0] for dep in json.loads((cache.entries / f"{key}.json").read_text())["deps"]]
    assert deps == sorted([str(package / "model.py"), project_modules.tree(str(tmp_path))])
    # A file added to a package changes the stamp; one added at the root does not.
    before = project_modules.tree_stamp(str(tmp_path))
    (tmp_path / "notes.txt").write_text("")
    project_modules.forget_layout()
    assert project_modules.tree_stamp(str(tmp_path)) == before
    (package / "new.py").write_text("")
    project_modules.forget_layout()
    assert project_modules.tree_stamp(str(tmp_path)) != before


def test_a_package_that_re_exports_the_helper_whole(tmp_path: Path) -> None:
    """pytorch-ood's losses: `from ..utils import drop_unknown`, where `utils/__init__.py`
    holds `from .utils import *`."""
    package = _package(
        tmp_path,
        loss=(
            "from torch import nn\n\nfrom . import drop_unknown\n\n\n"
            "class CenterLoss(nn.Module):\n    def forward(self, distmat, target):\n"
            "        target, distmat = drop_unknown(target, distmat)\n"
            "        return distmat.sum()\n"
        ),
    )
    (package / "__init__.py").write_text("from .metrics import *\n")
    (package / "metrics.py").write_text(
        METRICS + "\n\ndef drop_unknown(y: torch.Tensor, x: torch.Tensor):\n    known = y >= 0\n"
        "    if known.all():\n        return y, x\n    return y[known], x[known]\n"
    )
    found = _findings([package / "metrics.py"])
    assert found == [("XLA103", 24), ("XLA202", 26)]


def test_a_method_of_an_instance_built_on_the_spot(tmp_path: Path) -> None:
    """gpytorch's kernel: `Interpolation().interpolate(self.grid, inputs)` in `forward`."""
    package = _package(
        tmp_path,
        kernel=(
            "from torch import nn\n\nfrom pkg.metrics import Meter\n\n\n"
            "class Kernel(nn.Module):\n    def forward(self, loss):\n"
            "        Meter().add(loss)\n        return loss\n"
        ),
    )
    assert _findings([package / "metrics.py"]) == METER


def test_a_conversion_helper_is_its_callers_cost(tmp_path: Path) -> None:
    """`to_numpy(t)` only returns what it is handed, converted: the caller's file reports
    the call; a helper that computes before it reads is reported in the helper."""
    package = _package(
        tmp_path,
        convert=(
            "import torch\n\n\ndef to_numpy(t: torch.Tensor):\n"
            "    return t.cpu().detach().numpy()\n\n\n"
            "def total(t: torch.Tensor):\n    return t.sum().cpu().numpy()\n"
        ),
        step=(
            "from .convert import to_numpy, total\n\n\n"
            "def training_step(model, batch):\n    loss = model(batch)\n"
            "    return to_numpy(loss), total(loss)\n"
        ),
    )
    assert _findings([package / "convert.py"]) == [("XLA102", 9)]


def test_calls_under_a_log_interval_are_not_per_step(tmp_path: Path) -> None:
    train = TRAIN.replace(
        "        meter.add(loss)\n", "        if step % 100 == 0:\n            meter.add(loss)\n"
    ).replace("for x, y in loader:", "for step, (x, y) in enumerate(loader):")
    package = _package(tmp_path, train=train)
    assert _findings([package / "metrics.py"]) == []


LIKELIHOODS = """\
import torch
from torch.distributions import Beta, Gamma


class Likelihood:
    def compute_loss(self, output, target):
        return -self._distr(output).log_prob(target).mean()

    def _distr(self, output):
        raise NotImplementedError


class BetaLikelihood(Likelihood):
    def _distr(self, output):
        alpha, beta = torch.exp(output).unbind(-1)
        return Beta(alpha, beta)


class GammaTable:
    def compute_loss(self, output, target):
        alpha, beta = torch.exp(output).unbind(-1)
        return -Gamma(alpha, beta).log_prob(target).mean()
"""

FORECASTER = """\
from pytorch_lightning import LightningModule

from pkg.likelihoods import Likelihood


class Forecaster(LightningModule):
    def __init__(self, model, likelihood: Likelihood | None = None):
        super().__init__()
        self.model = model
        self.likelihood = likelihood

    def training_step(self, batch, batch_idx):
        x, y = batch
        return self.likelihood.compute_loss(self.model(x), y)
"""


def test_a_method_of_an_instance_handed_by_a_class_annotation(tmp_path: Path) -> None:
    """darts' `PLForecastingModule(likelihood: TorchLikelihood | None)` keeps the instance it
    is handed in `self.likelihood` and calls `compute_loss` in `training_step`: the method
    of the annotated class or of any subclass of it runs every step (`BetaLikelihood`'s
    `_distr` through the base's `compute_loss`), not one of a class outside that family
    (`GammaTable.compute_loss`)."""
    package = _package(tmp_path, likelihoods=LIKELIHOODS, forecaster=FORECASTER)
    assert _findings([package / "likelihoods.py"]) == [("XLA107", 16)]
    names = frozenset({"BetaLikelihood.compute_loss", "GammaTable.compute_loss"})
    found = module_callers.hot_elsewhere(str(package / "likelihoods.py"), names)
    assert found == {"BetaLikelihood.compute_loss"}


@pytest.mark.parametrize(
    "forecaster",
    [
        # An attribute bound to a parameter of no class annotation (a host number).
        FORECASTER.replace("likelihood: Likelihood | None = None", "likelihood: int = 0"),
        # Annotated with the class, but called only once, at setup.
        FORECASTER.replace(
            "        return self.likelihood.compute_loss(self.model(x), y)\n",
            "        return self.model(x)\n\n    def setup(self, stage):\n"
            "        self.likelihood.compute_loss(self.model.example, stage)\n",
        ),
    ],
)
def test_handed_instances_hard_negatives(tmp_path: Path, forecaster: str) -> None:
    package = _package(tmp_path, likelihoods=LIKELIHOODS, forecaster=forecaster)
    assert _findings([package / "likelihoods.py"]) == []


ANNOTATED_FORECASTER = FORECASTER.replace(
    "likelihood: Likelihood | None = None", "likelihood=None"
).replace("self.likelihood = likelihood", "self.likelihood: Likelihood = likelihood")


def test_a_method_of_an_instance_declared_by_the_attributes_annotation(tmp_path: Path) -> None:
    """instructlab's `BatchLossManager.__init__(self, model, ...)` binds `self.model: Model =
    model` (the parameter unannotated) and calls `self.model.compute_loss(...)` in its
    loop that runs backward: the attribute's own annotation declares the class."""
    package = _package(tmp_path, likelihoods=LIKELIHOODS, forecaster=ANNOTATED_FORECASTER)
    names = frozenset({"BetaLikelihood.compute_loss", "GammaTable.compute_loss"})
    found = module_callers.hot_elsewhere(str(package / "likelihoods.py"), names)
    assert found == {"BetaLikelihood.compute_loss"}


def test_an_attribute_annotated_with_no_class_is_no_instance(tmp_path: Path) -> None:
    forecaster = ANNOTATED_FORECASTER.replace(
        "self.likelihood: Likelihood = likelihood", "self.likelihood: float = likelihood"
    )
    package = _package(tmp_path, likelihoods=LIKELIHOODS, forecaster=forecaster)
    assert _findings([package / "likelihoods.py"]) == []


def _top_level_namespace(root: Path, spelled: str) -> Path:
    """instructlab-training's layout: `instructlab/` has no `__init__.py` (a PEP 420
    namespace package), `instructlab/training/` is a package whose modules import each
    other absolutely through the namespace (`from instructlab.training.model import
    Model`)."""
    package = root / "ns" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "likelihoods.py").write_text(LIKELIHOODS)
    (package / "forecaster.py").write_text(
        FORECASTER.replace("from pkg.likelihoods import", f"from {spelled}.likelihoods import")
    )
    project_modules.forget_layout()
    return package / "likelihoods.py"


def test_absolute_imports_through_a_top_level_namespace_package(tmp_path: Path) -> None:
    likelihoods = _top_level_namespace(tmp_path, "ns.pkg")
    names = frozenset({"BetaLikelihood.compute_loss", "GammaTable.compute_loss"})
    assert module_callers.hot_elsewhere(str(likelihoods), names) == {"BetaLikelihood.compute_loss"}


def test_a_namespace_of_another_name_is_another_project(tmp_path: Path) -> None:
    """`from other.pkg.likelihoods import ...` seen from a root named `ns`: another
    installed distribution's namespace, not this folder."""
    likelihoods = _top_level_namespace(tmp_path, "other.pkg")
    names = frozenset({"BetaLikelihood.compute_loss", "GammaTable.compute_loss"})
    assert module_callers.hot_elsewhere(str(likelihoods), names) == set()


def _namespace_package(root: Path) -> Path:
    """facenet-pytorch's layout: `pkg/__init__.py` only; `pkg/models/model.py` and
    `pkg/models/utils/metrics.py` are namespace portions of `pkg` (no `__init__.py`)."""
    utils = root / "pkg" / "models" / "utils"
    utils.mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (utils / "metrics.py").write_text(METRICS)
    (root / "pkg" / "models" / "model.py").write_text(
        MODEL.replace("from .metrics import", "from .utils.metrics import")
    )
    project_modules.forget_layout()
    return utils / "metrics.py"


def test_a_caller_in_a_namespace_portion_of_the_package(tmp_path: Path) -> None:
    """A folder without an `__init__.py` inside a package is imported as part of it
    (`pkg.models.utils.metrics`): its modules' callers are found as in a regular package."""
    metrics = _namespace_package(tmp_path)
    assert project_modules.package_root(str(metrics)) == str(tmp_path)
    assert _findings([metrics]) == ACCURACY


def test_folders_outside_a_package_are_no_namespace_portion(tmp_path: Path) -> None:
    """The same two files in loose folders (a script's folder, no package above it within
    reach): each folder is its own root, and the helper stays cold."""
    metrics = _namespace_package(tmp_path)
    (tmp_path / "pkg" / "__init__.py").unlink()
    project_modules.forget_layout()
    assert project_modules.package_root(str(metrics)) == str(metrics.parent)
    assert _findings([metrics]) == []


def _under_a_namespace_root(root: Path, spelled: str) -> Path:
    """instructlab-training's layout: `ns/` without an `__init__.py` around the package
    `ns/pkg/`, whose modules import each other as `ns.pkg.m` (PEP 420 namespace package
    at the top); `spelled` is the import prefix the trainer writes."""
    package = root / "ns" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "metrics.py").write_text(METRICS)
    (package / "train.py").write_text(TRAIN.replace("import pkg.metrics", f"import {spelled}"))
    project_modules.forget_layout()
    return package / "metrics.py"


def test_a_caller_importing_through_a_namespace_root(tmp_path: Path) -> None:
    """The topmost package's parent has no `__init__.py` and the modules spell it
    (`import ns.pkg.metrics`): absolute imports start above it, as Python's do, so the
    training loop's `meter.add(loss)` is found, and so is every import of the package."""
    metrics = _under_a_namespace_root(tmp_path, "ns.pkg.metrics")
    assert project_modules.package_root(str(metrics)) == str(tmp_path / "ns")
    train = metrics.parent / "train.py"
    stat = project_modules.stat_key(str(train))
    assert project_modules.module_imports(str(train), stat) == (str(metrics),)
    assert _findings([metrics]) == METER


def test_imports_not_spelling_the_namespace_root_start_at_it(tmp_path: Path) -> None:
    """The same layout, the trainer importing `pkg.metrics`: that resolves from the root
    as before; `other.pkg.metrics`, naming a folder that is not the root, resolves to
    nothing (another distribution's namespace), and the helper stays cold."""
    metrics = _under_a_namespace_root(tmp_path, "pkg.metrics")
    assert _findings([metrics]) == METER
    (tmp_path / "other").mkdir()
    metrics.parent.joinpath("train.py").write_text(
        TRAIN.replace("import pkg.metrics", "import other.pkg.metrics")
    )
    project_modules.forget_layout()
    assert _findings([metrics]) == []


PARTIAL_MODEL = """\
from functools import partial

from torch import nn

from .metrics import th_accuracy


class Model(nn.Module):
    def __init__(self, ignore):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.accuracy = partial(th_accuracy, ignore_label=ignore)

    def forward(self, x, y):
        logits = self.linear(x)
        return logits, self.accuracy(logits, y)
"""

PARTIAL_TRAIN = """\
import functools

import pkg.metrics as metrics


def train(model, optimizer, loader):
    add = functools.partial(metrics.Meter().add)
    score = functools.partial(metrics.th_accuracy, ignore_label=-1)
    for x, y in loader:
        out = model(x)
        loss = out.sum()
        loss.backward()
        optimizer.step()
        score(out, y)
"""


@pytest.mark.parametrize("caller", [PARTIAL_MODEL, PARTIAL_TRAIN])
def test_a_function_wrapped_by_partial(tmp_path: Path, caller: str) -> None:
    """`self.accuracy = partial(th_accuracy, ignore_label=ignore)` in `__init__`, then
    `self.accuracy(logits, y)` in `forward` (muse-maskgit's `self.encode_text =
    partial(t5_encode_text, name=t5_name)`), or a local `functools.partial(...)` called in
    a training loop: the wrapped function runs every step."""
    package = _package(tmp_path, model=caller)
    assert _findings([package / "metrics.py"]) == ACCURACY


def test_a_partial_called_once_stays_cold(tmp_path: Path) -> None:
    caller = PARTIAL_MODEL.replace(
        "        return logits, self.accuracy(logits, y)\n", "        return logits\n"
    ).replace(
        "        self.accuracy = partial(th_accuracy, ignore_label=ignore)\n",
        "        self.accuracy = partial(th_accuracy, ignore_label=ignore)\n"
        "        self.first = self.accuracy(self.linear.weight, self.linear.bias)\n",
    )
    package = _package(tmp_path, model=caller)
    assert _findings([package / "metrics.py"]) == []


SPLITS = """\
import torch


class Coupling:
    def __init__(self, meta, mask):
        self.meta = meta
        self.idx_a = mask.nonzero().squeeze(-1)
        self.idx_b = (~mask).nonzero().squeeze(-1)

    def __call__(self, x):
        return self.meta(x[..., self.idx_a])
"""


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        # zuko's `GeneralCouplingTransform.forward`: a new transform from the registered mask
        # on every call, so its constructor's nonzero runs every step (one cause for the
        # mask and its complement, read in a run).
        (
            "from torch import nn\n\nfrom pkg.splits import Coupling\n\n\n"
            "class Layer(nn.Module):\n    def forward(self, c=None):\n"
            "        return Coupling(self.meta, self.mask)\n",
            [("XLA201", 7)],
        ),
        # Built once, in the caller's `__init__`: the constructor runs once.
        (
            "from torch import nn\n\nfrom pkg import splits\n\n\n"
            "class Layer(nn.Module):\n    def __init__(self, meta, mask):\n"
            "        super().__init__()\n        self.split = splits.Coupling(meta, mask)\n\n"
            "    def forward(self, x):\n        return self.split(x)\n",
            [],
        ),
    ],
)
def test_a_class_built_every_step_elsewhere_runs_its_constructor_every_step(
    tmp_path: Path, caller: str, expected: list[tuple[str, int]]
) -> None:
    package = _package(tmp_path, splits=SPLITS, flows=caller)
    assert _findings([package / "splits.py"]) == expected


def test_a_helper_of_a_constructor_built_every_step_elsewhere_is_hot(tmp_path: Path) -> None:
    """The constructor hands the mask to a method of its class: that runs every step too."""
    splits = SPLITS.replace(
        "        self.idx_a = mask.nonzero().squeeze(-1)\n"
        "        self.idx_b = (~mask).nonzero().squeeze(-1)\n",
        "        self.idx_a = self._indices(mask)\n\n"
        "    def _indices(self, mask):\n        return mask.nonzero().squeeze(-1)\n",
    )
    caller = (
        "from torch import nn\n\nfrom pkg.splits import Coupling\n\n\n"
        "class Layer(nn.Module):\n    def forward(self, c=None):\n"
        "        return Coupling(self.meta, self.mask)\n"
    )
    package = _package(tmp_path, splits=splits, flows=caller)
    assert _findings([package / "splits.py"]) == [("XLA201", 10)]


def _assert_unindexed_answers_are_the_index(root: str, modules: list[str]) -> module_callers._Index:
    """The callers question asked without the index finds, for every module, the callers
    the index of `root` finds, in its order."""
    project_modules.forget_layout()
    index = module_callers._build_index(root)
    for module in modules:
        assert module_callers._callers_unindexed(root, module) == module_callers._callers(
            module, index
        ), module
    return index


def test_the_first_module_asked_about_finds_its_callers_without_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process's first question under a root (a one-file check) resolves the imports of
    only the files whose text may name the module or a package `__init__.py` importing it
    (by its last part, or a bare relative import from inside that package), and finds the
    callers the index finds, in its order; a second module's question builds the index."""
    package = _package(
        tmp_path,
        model=MODEL,
        train=TRAIN,
        loss="from . import th_accuracy\n",  # through the package's re-export
    )
    (package / "__init__.py").write_text("from .metrics import th_accuracy\n")
    (package / "sub").mkdir()
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "deep.py").write_text("from .. import th_accuracy\n")
    (tmp_path / "script.py").write_text("from pkg import Meter\n")
    (tmp_path / "other.py").write_text("import os\n")
    (tmp_path / "tools.py").write_text("import metrics_tools\n")  # `metrics`, as a prefix
    root = str(tmp_path)
    modules = sorted(str(path) for path in tmp_path.rglob("*.py"))
    index = _assert_unindexed_answers_are_the_index(root, modules)
    (package / "gone.py").symlink_to(tmp_path / "nowhere.py")  # counted, not read
    for cap in (3, 7):  # the files beyond the index's cap are no callers either way
        monkeypatch.setattr(module_callers, "MAX_INDEX_FILES", cap)
        capped = module_callers._build_index(root)
        for module in modules:
            assert module_callers._callers_unindexed(root, module) == module_callers._callers(
                module, capped
            ), (cap, module)
    monkeypatch.undo()
    metrics = str(package / "metrics.py")
    assert [os.path.relpath(p, root) for p in module_callers._callers(metrics, index)] == [
        "pkg/__init__.py", "pkg/model.py", "pkg/train.py",  # its importers
        "script.py", "pkg/loss.py", "pkg/sub/deep.py",  # the package's
    ]  # fmt: skip

    resolved: list[str] = []
    real = project_modules.imports_among

    def recording(filename: str, text: str, targets: Collection[str]) -> set[str]:
        resolved.append(os.path.relpath(filename, root))
        return real(filename, text, targets)

    monkeypatch.setattr(project_modules, "imports_among", recording)
    project_modules.forget_layout()
    assert module_callers._callers_under(root, metrics) == module_callers._callers(metrics, index)
    assert module_callers._indexes == {}
    assert "script.py" in resolved
    assert "other.py" not in resolved and "tools.py" not in resolved
    model = str(package / "model.py")
    assert module_callers._callers_under(root, model) == module_callers._callers(model, index)
    assert module_callers._indexes  # the second module asked about


def test_a_module_only_comments_and_code_spell_has_no_imports_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose text spells the module's name only on comment lines or in code (`#
    Copied from pkg.metrics.th_accuracy`) is not resolved for the callers question; one
    spelling it on an import's first line or inside a parenthesised list of names (a
    comment there too: `_imports_of` reads the list whole) is, and the callers are the
    index's."""
    package = _package(tmp_path, model=MODEL, train=TRAIN)
    (package / "copied.py").write_text("# Copied from pkg.metrics.th_accuracy\nx = metrics\n")
    (package / "call.py").write_text("f(1)\ny = metrics.th_accuracy\n")
    (package / "listed.py").write_text("from . import (  # the\n    metrics,\n)\n")
    (package / "remarked.py").write_text("from . import (\n    # metrics\n    model,\n)\n")
    (package / "opened.py").write_text("f = g(\n    metrics\n)\n")  # not an import: asked
    root = str(tmp_path)
    _assert_unindexed_answers_are_the_index(
        root, sorted(str(path) for path in tmp_path.rglob("*.py"))
    )
    resolved: list[str] = []
    real = project_modules.imports_among

    def recording(filename: str, text: str, targets: Collection[str]) -> set[str]:
        resolved.append(os.path.basename(filename))
        return real(filename, text, targets)

    monkeypatch.setattr(project_modules, "imports_among", recording)
    metrics = str(package / "metrics.py")
    module_callers._callers_unindexed(root, metrics)
    assert "copied.py" not in resolved and "call.py" not in resolved
    assert {"listed.py", "remarked.py", "opened.py", "model.py", "train.py"} <= set(resolved)


def test_the_callers_question_decodes_only_the_files_whose_bytes_spell_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose bytes do not hold the module's name (nor, for a package
    `__init__.py`, sit in its folder) is not decoded by the callers question: its text
    could not pass the test (`_may_import_raw` False where `_may_import` is, on invalid
    UTF-8 around the name too); the callers are the index's."""
    package = _package(tmp_path, model=MODEL, train=TRAIN)
    (package / "far.py").write_bytes(b"import os\n# caf\xe9\n")
    (package / "broken.py").write_bytes(b"from .\xff\xfemetrics import th_accuracy\n")
    (package / "split.py").write_bytes(b"from .met\xc3rics import th_accuracy\n")
    (package / "wide.py").write_bytes("from .metrics import th_accuracy\n".encode("utf-16"))
    root = str(tmp_path)
    _assert_unindexed_answers_are_the_index(
        root, sorted(str(path) for path in tmp_path.rglob("*.py"))
    )
    decoded: list[str] = []
    real = project_modules.decoded

    def recording(raw: bytes) -> str:
        decoded.append(real(raw))
        return decoded[-1]

    monkeypatch.setattr(project_modules, "decoded", recording)
    metrics = str(package / "metrics.py")
    module_callers._callers_unindexed(root, metrics)
    assert all("metrics" in text for text in decoded)
    assert not any("caf" in text or "met\ufffdrics" in text for text in decoded)
    assert any("\ufffd\ufffdmetrics" in text for text in decoded)
    files = [*Path(xlalint.__file__).parent.rglob("*.py"), *tmp_path.rglob("*.py")]
    targets = [metrics, str(package / "__init__.py"), str(package / "mét.py"), str(tmp_path)]
    for path in files:
        raw = path.read_bytes()
        text = raw.decode("utf-8", "replace")
        for target in targets:
            if not module_callers._may_import_raw(target)(str(path), raw):
                assert not module_callers._may_import(target)(str(path), text), (path, target)


CLASS_HEADERS = [
    "@dataclass\nclass A(B, pkg.C, metaclass=M):\n    x: int\n",
    "class A(\n    B,  # the base\n    C,\n):\n    pass\n",
    "class A(B): x = (1,\n  2)\nclass D(A): pass; y = 1\n",
    "class A(B, \\\n   C): pass\n",
    'class A(make("""\nclass X(Y): pass\n""")): pass\n',
    "if flag:\n    class A(B): pass\nelse:\n    class A(C): pass\n"
    "try:\n    class E(F): pass\nexcept E:\n    pass\n",
    "def f():\n    class A(B): pass\nclass G(H):\n    class I(J): pass\n",
    "class A(B): pass\nclass A(C): pass\n",
    "\fclass A(B): pass\n  \fclass C(D): pass\n",
    "class A(B):\r\n    pass\r\nclass C(D):\r    pass\r",
    'x = """\nclass Fake(Base): pass\n"""\nclassify = 1\nclass A(B[int], C()): pass\n',
    "nonlocal x\nclass A(B): pass\n",  # only the compiler rejects it: the tree has A
    "class A(B:\n    pass\n",  # no parse
    "class A(B): pass\n\0\n",  # no parse (a null byte)
    "class A(B): pass\n\ufeffclass C: pass\n",  # no parse (a BOM inside)
    "",
]


@pytest.mark.parametrize("text", CLASS_HEADERS)
def test_the_bases_chase_reads_class_headers_as_the_whole_tree_does(text: str) -> None:
    """A module's top-level classes and their bases, from `symtable` and each class's
    header, are those of its whole tree (None where it does not parse), in its order."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    expected = None if tree is None else module_callers._class_bases(tree)
    found = module_callers._top_level_class_bases("m.py", text)
    assert found == expected
    assert found is None or list(found.items()) == list(expected.items())  # type: ignore[union-attr]


def test_the_bases_chase_reads_the_class_headers_of_xlalints_sources_as_their_trees() -> None:
    """The same on every module of xlalint's sources and tests (and on diffusers' and
    transformers' 4,203 modules and the quality corpus, measured in round 26)."""
    files = [*Path(xlalint.__file__).parent.rglob("*.py"), *Path(__file__).parent.glob("*.py")]
    for path in files:
        text = path.read_text(encoding="utf-8")
        expected = module_callers._class_bases(ast.parse(text))
        assert module_callers._top_level_class_bases(str(path), text) == expected, path


def test_the_bases_chase_parses_no_whole_base_module(tmp_path: Path) -> None:
    """Following a class's bases through a module that spells no method asked about builds
    no tree of it; the answer is the tree's."""
    package = _package(tmp_path, model=MODEL)
    (package / "base.py").write_text("import torch\n\n\nclass Base(torch.nn.Module):\n    pass\n")
    (package / "child.py").write_text(
        "from .base import Base\n\n\nclass Child(Base):\n    def compute(self, x):\n"
        "        return x\n"
    )
    project_modules.forget_layout()
    module_callers._classes_at.cache_clear()
    parsed: list[str] = []
    real = project_modules._parse

    def recording(path: str, text: str) -> ast.Module | None:
        parsed.append(os.path.basename(path))
        return real(path, text)

    headers = module_callers._top_level_class_bases
    read: list[str] = []

    def reading(path: str, text: str) -> dict[str, tuple[str, ...]] | None:
        read.append(os.path.basename(path))
        return headers(path, text)

    child = str(package / "child.py")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(project_modules, "_parse", recording)
        patch.setattr(module_callers, "_top_level_class_bases", reading)
        assert list(module_callers._called_by_bases(child, frozenset({"Child.compute"}))) == []
    assert "base.py" in read and "base.py" not in parsed
    base = str(package / "base.py")
    classes = module_callers._classes_at(base, module_callers._stat(base))
    assert classes is not None and classes.class_bases == {"Base": ("torch.nn.Module",)}


def test_every_import_of_xlalints_sources_is_spelled_where_the_callers_question_looks() -> None:
    """Each module an import statement of xlalint's sources and tests resolves to passes
    the text test that decides which files' imports the callers question resolves."""
    files = [*Path(xlalint.__file__).parent.rglob("*.py"), *Path(__file__).parent.glob("*.py")]
    pairs = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        for target in project_modules.imports_of(str(path), text):
            pairs += 1
            assert module_callers._may_import(target)(str(path), text), (path, target)
    assert pairs > 500


TRAIN_UTILS = """\
import torch.nn.functional as F


def train_one_epoch(args, model, loader, optimizer):
    for num_steps, (x, y) in enumerate(loader):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if (num_steps + 1) % args.logging_steps == 0:
            print(f"loss: {loss.item():.3f}")
"""

TRAIN_SCRIPT = """\
import argparse

from train_utils import train_one_epoch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--logging_steps", type=int, default=100, help="log every n steps")
    args = parser.parse_args()
    train_one_epoch(args, None, [], None)
"""


def test_a_log_interval_read_from_args_counts_by_the_scripts_default(tmp_path: Path) -> None:
    """open-flamingo's `train_utils.py`: `args.logging_steps`, which `train.py` beside it
    (`from train_utils import ...`, a script run from that folder) declares with a default
    of 100, is a long interval; declared short, or not at all, it may be every step, and
    editing the script's default re-lints the helper on a warm run."""
    folder = tmp_path / "train"
    folder.mkdir()
    (folder / "train_utils.py").write_text(TRAIN_UTILS)
    project_modules.forget_layout()
    paths = [folder / "train_utils.py"]
    assert _findings(paths) == [("XLA101", 10)]  # no parser declares the option
    script = folder / "train.py"
    script.write_text(TRAIN_SCRIPT)
    project_modules.forget_layout()
    cache = ResultCache(tmp_path / "cache")
    assert _findings(paths, cache) == []
    script.write_text(TRAIN_SCRIPT.replace("default=100", "default=1"))
    assert _findings(paths, cache) == [("XLA101", 10)]
    script.write_text(TRAIN_SCRIPT.replace('"--logging_steps"', '"--logging-steps"'))
    assert _findings(paths, cache) == []


# -- template methods: a base class elsewhere calls the override every step ----------------

FINETUNE = """\
import torch
from torch import nn


class Finetune(nn.Module):
    def __init__(self, llm):
        super().__init__()
        self.llm = llm
        self.setup_labels(llm)

    def forward(self, data, data_samples=None, mode="loss"):
        if mode == "loss":
            return self.compute_loss(data, data_samples)
        return self.predict(data)

    def compute_loss(self, data, data_samples=None):
        return self.llm(**data).loss

    def predict(self, data):
        return self.llm(**data).logits

    def setup_labels(self, llm):
        pass

    def export(self, data):
        pass
"""

DPO = """\
import torch

from {base_import}


class DPO({base}):
    def compute_loss(self, data, data_samples=None):
        labels = data["labels"].clone()
        labels[labels == -100] = 0
        return self.llm(**data, labels=labels).loss

    def setup_labels(self, llm):
        labels = llm.labels.clone()
        labels[labels == -100] = 0

    def export(self, data):
        labels = data["labels"].clone()
        labels[labels == -100] = 0
        return labels
"""


@pytest.mark.parametrize(
    ("base_import", "base"),
    [
        (".finetune import Finetune", "Finetune"),
        ("pkg.finetune import Finetune", "Finetune"),
        ("pkg import finetune", "finetune.Finetune"),
        # Two levels: the subclass's base derives from the class whose `forward` runs it.
        (".middle import Middle", "Middle"),
    ],
)
def test_a_method_a_base_elsewhere_calls_from_its_forward(
    tmp_path: Path, base_import: str, base: str
) -> None:
    """mmengine's models: `forward(mode="loss")` of a base in another module runs
    `self.compute_loss(data)` every step, so the subclass's override is per step; what the
    base calls once (`setup_labels` from `__init__`) or never (`export`) is not."""
    package = _package(
        tmp_path,
        finetune=FINETUNE,
        middle="from .finetune import Finetune\n\n\nclass Middle(Finetune):\n    pass\n",
        dpo=DPO.format(base_import=base_import, base=base),
    )
    names = frozenset({"DPO.compute_loss", "DPO.setup_labels", "DPO.export"})
    assert module_callers.hot_elsewhere(str(package / "dpo.py"), names) == {"DPO.compute_loss"}
    settings = Settings(root=tmp_path, select=("XLA203",))
    report = api.check_paths([package / "dpo.py"], settings, jobs=1, cache=None)
    assert sorted((d.code, d.start.row) for d in report.diagnostics) == [("XLA203", 9)]


@pytest.mark.parametrize(
    "finetune",
    [
        # The base's per-step code hands the method no tensor, or calls it only once.
        FINETUNE.replace("self.compute_loss(data, data_samples)", "self.compute_loss(None)"),
        FINETUNE.replace(
            "        self.setup_labels(llm)\n", "        self.compute_loss(llm.dummy)\n"
        ).replace("return self.compute_loss(data, data_samples)", "return self.llm(**data)"),
        # Another class of the module runs it: not the subclass's base.
        FINETUNE.replace("class Finetune(nn.Module)", "class Other(nn.Module)")
        + "\n\nclass Finetune(nn.Module):\n    pass\n",
    ],
)
def test_a_base_that_never_runs_the_override_per_step(tmp_path: Path, finetune: str) -> None:
    package = _package(
        tmp_path,
        finetune=finetune,
        dpo=DPO.format(base_import=".finetune import Finetune", base="Finetune"),
    )
    names = frozenset({"DPO.compute_loss", "DPO.setup_labels", "DPO.export"})
    assert module_callers.hot_elsewhere(str(package / "dpo.py"), names) == set()


def test_bases_followed_without_summarising_modules_that_spell_no_method_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chase through the bases reads each base module's classes (`_classes_at`) and
    summarises the per-step code only of a module whose text spells a method asked about,
    for its template calls alone (`_templates_at`, not a caller's whole summary):
    `middle.py` (which spells none) is followed, not summarised."""
    package = _package(
        tmp_path,
        finetune=FINETUNE,
        middle="from .finetune import Finetune\n\n\nclass Middle(Finetune):\n    pass\n",
        dpo=DPO.format(base_import=".middle import Middle", base="Middle"),
    )
    templates = _recording(monkeypatch, "_templates_at")
    callers = _recording(monkeypatch, "_caller_at")
    names = frozenset({"DPO.compute_loss", "DPO.setup_labels", "DPO.export"})
    assert module_callers.hot_elsewhere(str(package / "dpo.py"), names) == {"DPO.compute_loss"}
    assert templates == ["finetune.py"]
    assert callers == []  # no other module of the package imports dpo.py


def _recording(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Replace `module_callers.<name>(path, stat)` by a wrapper noting each file asked."""
    asked: list[str] = []
    original = getattr(module_callers, name)

    def recorded(path: str, stat: tuple[int, int]) -> object:
        asked.append(os.path.basename(path))
        return original(path, stat)

    monkeypatch.setattr(module_callers, name, recorded)
    return asked


def test_a_base_spelling_the_method_in_another_unicode_form(tmp_path: Path) -> None:
    """Python reads identifiers in NFKC form: `self.\uff43ompute_loss(...)` (a fullwidth
    c) calls `compute_loss`, though the text never spells that word; such a text is
    summarised."""
    finetune = FINETUNE.replace(
        "    def compute_loss(self, data, data_samples=None):\n"
        "        return self.llm(**data).loss\n\n",
        "",
    ).replace("self.compute_loss(data, data_samples)", "self.\uff43ompute_loss(data)")
    assert "compute_loss" not in finetune
    package = _package(
        tmp_path,
        finetune=finetune,
        dpo=DPO.format(base_import=".finetune import Finetune", base="Finetune"),
    )
    names = frozenset({"DPO.compute_loss"})
    assert module_callers.hot_elsewhere(str(package / "dpo.py"), names) == {"DPO.compute_loss"}


@pytest.mark.parametrize(
    "text",
    [
        METRICS,
        MODEL,
        FINETUNE,
        "x9 = 9abc + _y\u00e9 + \u00e9t\u00e9 + \uff43ompute + a.b.c(d) # ___ 1_000 __init__\n",
        "",
    ],
)
def test_the_words_of_a_text_are_the_expressions_words(tmp_path: Path, text: str) -> None:
    """`_words_at` (distinct words hashed once, a possessive expression): the hashes of
    the words `[A-Za-z_]\\w*` finds, as before."""
    path = tmp_path / "m.py"
    path.write_text(text, encoding="utf-8")
    stat = project_modules.stat_key(str(path))
    assert stat is not None
    words = sorted({hash(w) & 0xFFFFFFFF for w in re.findall(r"[A-Za-z_]\w*", text)})
    assert list(module_callers._words_at(str(path), stat)) == words


def _word_probes(text: str) -> set[str]:
    """The words of `text`, their parts and neighbours: what `_text_spells` may be asked."""
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    probes = set(words)
    for word in words:
        probes |= {word[1:], word[:-1], word + "x", "x" + word, word[:3], word[2:]}
    return {p for p in probes if p} | {"9abc", "abc", "bc", "t\u00e9", "ompute", "a.b", "1_000"}


EDGES = [
    "x9 = 9abc + _y\u00e9 + \u00e9t\u00e9 + \uff43ompute + a.b.c(d) # ___ 1_000 __init__\n",
    "abc",
    "9abc",
    "x9abc abc9 \u00e9abc abc\u00e9 _abc abc_ a__bc 99_abc \u0661abc \u00b2abc",
    "self.encode_prompt(x)\nencode_prompt2 = _encode_prompt + encode_prompt_\n",
    "",
]


@pytest.mark.parametrize("text", [METRICS, MODEL, FINETUNE, DPO, *EDGES])
def test_a_text_searched_for_a_name_spells_the_words_the_expression_finds(text: str) -> None:
    """`_text_spells` (a one-file check's first question about a module) answers what the
    word list answers, for every word of the text and names that are parts of words."""
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    for name in _word_probes(text):
        assert module_callers._text_spells(text, frozenset({name})) == (name in words), name


def test_the_sources_searched_for_names_spell_their_words() -> None:
    """The same on xlalint's own modules (each name of a sample of each module's words)."""
    import xlalint

    for path in sorted(Path(xlalint.__file__).parent.rglob("*.py"))[::7]:
        text = path.read_text(encoding="utf-8")
        words = set(re.findall(r"[A-Za-z_]\w*", text))
        for name in sorted(_word_probes(text))[::11]:
            assert module_callers._text_spells(text, frozenset({name})) == (name in words), name


def test_a_module_is_searched_for_two_sets_of_names_and_hashed_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module asked about for one or two sets of names (a one-file check's callers and
    bases, by its lint and its forecast's) is searched; its words are hashed once a third
    set is asked (a whole tree asks again and again), and answer from then on."""
    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    return g(x)\n", encoding="utf-8")
    stat = project_modules.stat_key(str(path))
    assert stat is not None
    hashed: list[str] = []
    real = module_callers._words_at

    def counting(at: str, key: tuple[int, int]) -> object:
        hashed.append(at)
        return real(at, key)

    monkeypatch.setattr(module_callers, "_words_at", counting)
    module_callers._searched.cache_clear()
    asked = [frozenset({"g"}), frozenset({"h"}), frozenset({"g"}), frozenset({"h"})]
    answers = [module_callers._may_spell(str(path), stat, names) for names in asked]
    assert answers == [True, False, True, False]
    assert hashed == []
    answers = [module_callers._may_spell(str(path), stat, frozenset({n})) for n in "fxy"]
    assert answers == [True, True, False]
    assert hashed == [str(path)] * 3
    assert module_callers._may_spell(str(path), stat, frozenset({"g"}))  # searched: kept
    assert len(hashed) == 3


EPOCHS = """\
import pkg.metrics as metrics


def train(model, optimizer, scheduler, loader, dev_loader, epochs):
    meter = metrics.Meter()
    for epoch in range(epochs):
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
        scheduler.step()
        for x, y in dev_loader:
            dev = model(x).sum()
        meter.add(loss)
"""


@pytest.mark.parametrize(
    "train",
    [
        EPOCHS,
        # The epoch's own pass calls a scheduler's `step` only: still once per epoch.
        EPOCHS.replace("        meter.add(loss)\n", "        meter.add(dev)\n"),
        # A `while` over epochs, the batch loop stepping through a per-step method.
        EPOCHS.replace("for epoch in range(epochs):", "while True:").replace(
            "            loss.backward()\n            optimizer.step()\n",
            "            loss = model.training_step(x)\n",
        ),
    ],
)
def test_calls_of_an_epoch_loop_after_its_batch_loop_are_per_epoch(
    tmp_path: Path, train: str
) -> None:
    """neuromancer's `Trainer.train`: `self.logger.log_metrics(output, step=i)` after the
    batch and dev loops, beside `lr_scheduler.step()`: the epoch loop's pass is no step,
    its inner batch loop is."""
    package = _package(tmp_path, train=train)
    assert _findings([package / "metrics.py"]) == []


@pytest.mark.parametrize(
    "train",
    [
        # In the batch loop: every step.
        EPOCHS.replace(
            "            optimizer.step()\n",
            "            optimizer.step()\n            meter.add(loss)\n",
        ),
        # The epoch pass trains itself (a generator's step after the critic's loop).
        EPOCHS.replace(
            "        scheduler.step()\n",
            "        loss = model(x).mean()\n        loss.backward()\n        optimizer.step()\n",
        ),
        # A loop with no inner stepping loop whose pass calls a scheduler's `step`.
        TRAIN.replace("        optimizer.step()\n", "        scheduler.step()\n"),
    ],
)
def test_calls_of_a_pass_that_steps_are_per_step(tmp_path: Path, train: str) -> None:
    package = _package(tmp_path, train=train)
    assert _findings([package / "metrics.py"]) == METER


def test_the_imports_among_a_few_modules_are_those_the_whole_resolution_finds(
    tmp_path: Path,
) -> None:
    """`imports_among` (the callers question's: which of a few modules a file imports)
    resolves only the imports that may name one of them, with the answer of resolving
    every import: module files, package `__init__.py`s by their folder, as
    `pkg.__init__`, and by a bare relative import, submodules a `from` import binds,
    aliases (measured in round 26 on diffusers, transformers and the quality corpus)."""
    package = _package(tmp_path, model=MODEL, train=TRAIN)
    (package / "sub").mkdir()
    (package / "sub" / "__init__.py").write_text("from .. import metrics\n")
    (package / "sub" / "deep.py").write_text(
        "from . import helper as h\nfrom .. import model, metrics as m\n"
        "import pkg.__init__\nfrom pkg.__init__ import x\nfrom pkg.sub import deep\n"
        "from ..metrics import th_accuracy\nimport pkg.sub.helper, os\n"
    )
    (package / "sub" / "helper.py").write_text("from . import *\nfrom .deep import f\n")
    project_modules.forget_layout()
    files = sorted(str(p) for p in tmp_path.rglob("*.py"))
    for file in files:
        text = Path(file).read_text()
        every = set(project_modules.imports_of(file, text))
        for target in files:
            assert project_modules.imports_among(file, text, (target,)) == every & {target}, (
                file,
                target,
            )
        assert project_modules.imports_among(file, text, files) == every & set(files), file


def test_a_module_is_read_to_its_end_whatever_its_size_since_the_stat(tmp_path: Path) -> None:
    """`project_modules._read` gives `open(path, "rb").read()`'s bytes: a file grown or
    shrunk since its stat was taken, an empty one, one larger than a read's chunk; None
    for a missing file or a folder."""
    path = tmp_path / "m.py"
    for before, after in [
        (b"x = 1\n", b"x = 1\ny = 2\n"),
        (b"x = 1\ny = 2\n", b"x = 1\n"),
        (b"", b""),
        (b"", b"x = 1\n"),
        (b"a" * 10, b"b" * 200_000),
    ]:
        path.write_bytes(before)
        stat = project_modules.stat_key(str(path))
        assert stat is not None
        path.write_bytes(after)
        assert project_modules._read(str(path), stat) == after
    assert project_modules._read(str(tmp_path / "gone.py"), (1, 1)) is None
    assert project_modules._read(str(tmp_path), (1, 1)) is None
