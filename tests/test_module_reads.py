"""Host reads in functions of other project modules that a per-step call hands a device
tensor to (`analysis/module_reads.py`, `analysis/param_reads.py`): reported at the call,
once per cause, with the helper in the cache entry's depfile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import xlalint
from xlalint import api, screen
from xlalint.cache import ResultCache
from xlalint.config import Settings

UTILS = """\
import math

import torch


def to_numpy(t):
    return t.detach().cpu().numpy()


def diagonal_score(alignments, binary=False):
    maxs = alignments.max(dim=1)[0]
    if binary:
        maxs[maxs > 0] = 1
    return maxs.mean(dim=1).mean(dim=0).item()


def one_hot(targets, classes):
    assert torch.max(targets).item() < classes
    return torch.zeros(targets.shape[0], classes, device=targets.device)


def as_number(x):
    return x if isinstance(x, (int, float)) else float(x)


def log_value(v):
    return _exp(v)


def _exp(v):
    return math.exp(v)


class ModelUtils:
    @staticmethod
    def to_numpy(t):
        return t.cpu().numpy()
"""

TRAIN = """\
import torch
import torch.nn.functional as F

from . import utils
from .utils import ModelUtils, as_number, diagonal_score, log_value, one_hot, to_numpy


def train(model, loader, optimizer):
    for x, y in loader:
        out = model(x)
        loss = F.mse_loss(out, y)
        loss.backward()
        optimizer.step()
        a = to_numpy(loss)
        b = diagonal_score(out)
        c = one_hot(y.view(-1, 1), 10)
        d = as_number(loss)
        e = log_value(loss)
        f = ModelUtils.to_numpy(loss)
        g = utils.diagonal_score(out)
        h = to_numpy(x.shape)
        print(a, b, c, d, e, f, g, h)
"""

EXPECTED = [
    ("train.py", 14, "XLA102"),
    ("train.py", 15, "XLA101"),
    ("train.py", 17, "XLA101"),
    ("train.py", 18, "XLA101"),
    ("train.py", 19, "XLA102"),
    ("train.py", 20, "XLA101"),
]


def _package(root: Path, utils: str = UTILS, train: str = TRAIN) -> Path:
    package = root / "proj"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text(utils)
    (package / "train.py").write_text(train)
    return package


def _check(paths: list[Path], cache: ResultCache | None = None) -> list[tuple[str, int, str]]:
    settings = Settings(root=paths[0].parent, select=("XLA1",))
    report = api.check_paths(paths, settings, jobs=1, cache=cache)
    return sorted((Path(d.filename).name, d.start.row, d.code) for d in report.diagnostics)


def test_reads_in_imported_helpers_are_reported_at_the_call(tmp_path: Path) -> None:
    package = _package(tmp_path)
    assert _check([package / "train.py"]) == EXPECTED


def test_message_names_the_helper_and_its_read(tmp_path: Path) -> None:
    package = _package(tmp_path)
    settings = Settings(root=package, select=("XLA101",))
    report = api.check_paths([package / "train.py"], settings, jobs=1)
    messages = {d.start.row: d.message for d in report.diagnostics}
    assert "`diagonal_score()`" in messages[15] and "(utils.py:14)" in messages[15]
    assert "`log_value()`" in messages[18] and "math.exp()" in messages[18]


def test_one_finding_per_cause_with_the_helper_linted_too(tmp_path: Path) -> None:
    """The helpers read what they are handed and nothing else: their own file does not
    report the reads that their per-step callers' calls are reported for."""
    package = _package(tmp_path)
    assert _check([package / "train.py", package / "utils.py"]) == sorted(
        [*EXPECTED, ("utils.py", 18, "XLA101")]
    )


def test_a_check_of_what_a_helper_is_handed_is_reported_in_the_helper(tmp_path: Path) -> None:
    """`one_hot` asserts on its input: a check of its own, reported once, in its file (a
    training loop of another module calls it every step), not at each call."""
    package = _package(tmp_path)
    assert ("train.py", 16, "XLA101") not in _check([package / "train.py"])
    assert ("utils.py", 18, "XLA101") in _check([package / "utils.py"])


def test_reexport_of_a_package(tmp_path: Path) -> None:
    package = _package(tmp_path)
    (package / "__init__.py").write_text("from .utils import to_numpy\n")
    (tmp_path / "script.py").write_text(
        "import torch\n\nfrom proj import to_numpy\n\n\n"
        "def train(model, xs, opt):\n    for x in xs:\n        loss = model(x).sum()\n"
        "        loss.backward()\n        opt.step()\n        print(to_numpy(loss))\n"
    )
    settings = Settings(root=tmp_path, select=("XLA102",))
    report = api.check_paths([tmp_path / "script.py"], settings, jobs=1)
    assert [d.start.row for d in report.diagnostics] == [11]


HELPER_NEGATIVES = """\
import torch


def scatter_max(src, index, dim_size=None):
    if dim_size is None:
        dim_size = int(index.max()) + 1
    return src.new_zeros(dim_size).scatter_reduce(0, index, src, reduce="amax")


def count(t):
    return int(t.shape[0]) + int(t.numel())


def only_numbers(x):
    if isinstance(x, torch.Tensor):
        return x
    return float(x)


def generate(prompt, steps):
    token = prompt
    out = []
    for _ in range(steps):
        out.append(token.item())
    return out


def forward(x):
    return x.item()


def rebound(t):
    t = 3
    return float(t)


def nms(prediction, conf):
    mps = "mps" in prediction.device.type
    if mps:
        prediction = prediction.cpu()
    return prediction[prediction > conf]


def num_nodes(edge_index, count=None):
    if count is not None:
        return count
    return int(edge_index.max()) + 1


def subgraph(edge_index, count=None):
    return num_nodes(edge_index, count)
"""

CALLER_NEGATIVES = """\
import torch

from .helpers import count, forward, generate, nms, only_numbers, rebound, scatter_max, subgraph


def train(model, loader, optimizer):
    for x, y in loader:
        out = model(x)
        loss = out.sum()
        loss.backward()
        optimizer.step()
        a = scatter_max(out, y, dim_size=4)
        b = count(out)
        c = only_numbers(loss)
        d = generate(out, 3)
        e = forward(out)
        f = rebound(out)
        g = count(3)
        h = nms(out, 0.5)
        i = subgraph(y, 10)
        print(a.shape, b, c, d, e, f, g, h, i)  # (`a` is a device tensor: XLA104's)
"""


def test_hard_negatives(tmp_path: Path) -> None:
    """A read skipped where the caller passes the value it stands in for (also two hops
    away), shape reads, a read only of Python values, reads in the helper's own loop (its
    module judges them), a per-step helper (its file reports it), a rebound parameter, a
    copy in a branch for another device (MPS)."""
    package = _package(tmp_path, train=CALLER_NEGATIVES)
    (package / "helpers.py").write_text(HELPER_NEGATIVES)
    assert _check([package / "train.py"]) == []


def test_a_helper_that_knows_xla_contributes_nothing(tmp_path: Path) -> None:
    package = _package(tmp_path, utils="import torch_xla\n" + UTILS)
    assert _check([package / "train.py"]) == []


def test_no_path_no_layer(tmp_path: Path) -> None:
    """A text without a file on disk (stdin) resolves no import."""
    from xlalint.engine import lint_source
    from xlalint.registry import all_rules

    _package(tmp_path)
    result = lint_source(TRAIN, "<stdin>", [all_rules()["XLA101"], all_rules()["XLA102"]])
    assert result.diagnostics == []


def test_screen_keeps_findings_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path)
    screened = _check([package])
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert _check([package]) == screened == sorted([*EXPECTED, ("utils.py", 18, "XLA101")])


def test_editing_the_helper_relints_the_caller_on_a_warm_run(tmp_path: Path) -> None:
    package = _package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "train.py"]
    assert _check(paths, cache) == EXPECTED
    entries = cache.directory / xlalint.__version__
    stored = set(os.listdir(entries))
    assert _check(paths, cache) == EXPECTED  # warm: a hit
    assert set(os.listdir(entries)) == stored
    # The caller's bytes are unchanged; the helper no longer copies to the host.
    utils = package / "utils.py"
    utils.write_text(UTILS.replace("    return t.detach().cpu().numpy()\n", "    return t\n"))
    assert ("train.py", 14, "XLA102") not in _check(paths, cache)
    utils.write_text(UTILS)
    assert _check(paths, cache) == EXPECTED


LOSS = """\
import torch
from torch import nn

from .utils import diagonal_score


class SmoothedLoss(nn.Module):
    def valid_targets(self, target, classes):
        mask = target != -1
        valid = target.float() * mask.float()
        return diagonal_score(valid.view(1, -1, 1)) * classes

    def forward(self, output, target):
        targets = self.valid_targets(target=target, classes=output.shape[1])
        return -(targets * output.log_softmax(-1)).sum()
"""


def test_a_method_of_the_file_that_hands_the_value_on(tmp_path: Path) -> None:
    """`forward` hands the target to a method of its class that hands a value computed
    from it to another module's helper, which reads it: reported at `forward`'s call."""
    package = _package(tmp_path)
    (package / "loss.py").write_text(LOSS)
    assert _check([package / "loss.py"]) == [("loss.py", 14, "XLA101")]


ABSTRACT = """\
import numpy as np
import torch


class AbsEmbedder:
    def __init__(self, model):
        self.model = model

    def _convert_to_numpy(self, embeddings, device=None):
        if device != "cpu" and embeddings.dtype == torch.bfloat16:
            embeddings = embeddings.float()
        return embeddings.cpu().numpy()

    def _truncate(self, embeddings):
        return embeddings[..., :128]

"""

ABSTRACT_INIT = "from .embedder import AbsEmbedder\n"

EMBEDDERS = """\
import torch

from . import base
from .abc import AbsEmbedder


class DenseEmbedder(AbsEmbedder):
    def encode(self, batches, device):
        out = []
        for batch in batches:
            hidden = self.model(**batch.to(device)).last_hidden_state
            out.append(self._convert_to_numpy(hidden[:, 0], device=device))  # expect
        return out

    def score(self, pairs, device):
        scores = []
        for q, p in pairs:
            sim = self.model.similarity(self.model(q.to(device)), self.model(p.to(device)))
            inx = torch.arange(0, len(q))
            diagonal = sim[inx, inx].float()
            scores.extend(self._convert_to_numpy(diagonal).tolist())  # expect
        return scores


class PooledEmbedder(DenseEmbedder):
    def encode(self, batches, device):
        pooled = []
        for batch in batches:
            hidden = self.model(**batch.to(device)).last_hidden_state
            pooled.append(self._convert_to_numpy(hidden.mean(1)))  # expect
        return pooled


class SpelledEmbedder(base.Base):
    def encode(self, batches, device):
        rows = []
        for batch in batches:
            hidden = self.model(**batch.to(device)).last_hidden_state
            rows.append(self.to_host(hidden))  # expect
        return rows


class OwnConversion(AbsEmbedder):
    def _convert_to_numpy(self, embeddings, device=None):
        return embeddings

    def encode(self, batches, device):
        out = []
        for batch in batches:
            hidden = self.model(**batch.to(device)).last_hidden_state
            out.append(self._convert_to_numpy(hidden))
            out.append(self._truncate(hidden))
            out.append(self._convert_to_numpy(batch["lengths"]))
        return out
"""

BASE = """\
class Base:
    def to_host(self, t):
        return t.detach().cpu()
"""


def test_a_method_inherited_from_another_modules_class(tmp_path: Path) -> None:
    """`self._convert_to_numpy(hidden)` in a class whose base, imported from another
    module (through a package's re-export, or spelled `base.Base`), defines the method and
    copies what it is handed: reported at the call, as for a function of that module; a
    method the class defines itself, or a base method that copies nothing, is not."""
    package = _package(tmp_path)
    (package / "abc").mkdir()
    (package / "abc" / "__init__.py").write_text(ABSTRACT_INIT)
    (package / "abc" / "embedder.py").write_text(ABSTRACT)
    (package / "base.py").write_text(BASE)
    (package / "embedders.py").write_text(EMBEDDERS)
    expected = [
        ("embedders.py", row, "XLA102")
        for row, line in enumerate(EMBEDDERS.splitlines(), start=1)
        if line.endswith("# expect")
    ]
    assert _check([package / "embedders.py"]) == expected


LOGGERS = """\
import torch


class Logger:
    def __init__(self, log_frequency=1):
        self.log_frequency = log_frequency
        self.values = {}

    def log(self, key, value, step, n=1):
        if step % self.log_frequency != 0:
            return
        if type(value) == torch.Tensor:
            value = value.item()
        self.values[key] = value

    def note(self, key, value):
        self.values[key] = value


class TrainMeter:
    def update(self, value):
        self.total = float(value)
"""

LOGGERS_INIT = "from .loggers import Logger, TrainMeter\n"

AGENT = """\
import logging

import torch
import torch.nn.functional as F

from proj import utils


class Agent:
    def update_critic(self, obs, target, logger, step, train_meter):
        loss = F.mse_loss(self.critic(obs), target)
        logger.log("train/critic_loss", loss, step)  # expect
        logger.log("train/entropy", -loss.mean(), step)  # expect
        logger.note("train/loss", loss)
        logger.log("train/target", self.target_entropy, step)
        train_meter.update(loss.detach())  # expect
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def update_actor(self, obs, logger: logging.Logger, meter, step):
        loss = self.actor(obs).mean()
        logger.log(logging.INFO, loss)
        meter.update(loss)
        loss.backward()
        self.optimizer.step()

    def update_value(self, obs, logger, step):
        logger = logger or utils.default_logger()
        loss = self.value(obs).mean()
        logger.log("train/value", loss, step)
        loss.backward()
        self.optimizer.step()
"""


def test_a_method_of_a_parameter_named_as_a_project_class(tmp_path: Path) -> None:
    """`logger.log("train/critic_loss", loss, step)` where `logger` is a parameter nobody
    annotated: the one class the imported modules define or re-export under that name
    (`Logger`, `TrainMeter` for `train_meter`) reads what it is handed, so the call is
    reported, naming the method. Not a method that keeps the value (`note`), nor a
    parameter annotated as another class (`logging.Logger`), nor one no class of the
    project is named for (`meter`), nor one the function rebinds."""
    package = _package(tmp_path)
    (package / "__init__.py").write_text(LOGGERS_INIT)
    (package / "loggers.py").write_text(LOGGERS)
    (package / "agent.py").write_text(AGENT)
    expected = [
        ("agent.py", row, "XLA101")
        for row, line in enumerate(AGENT.splitlines(), start=1)
        if line.endswith("# expect")
    ]
    settings = Settings(root=package, select=("XLA101", "XLA102", "XLA103"))
    report = api.check_paths([package / "agent.py"], settings, jobs=1)
    found = sorted((Path(d.filename).name, d.start.row, d.code) for d in report.diagnostics)
    assert found == expected
    assert "`Logger.log()`" in report.diagnostics[0].message


def test_a_parameter_named_as_two_project_classes_is_left_alone(tmp_path: Path) -> None:
    """Two imported modules each define a `Logger` reading what it is handed: which one
    the callers hand is not said, and its calls are left alone (the one `TrainMeter`
    still answers)."""
    package = _package(tmp_path)
    (package / "__init__.py").write_text(LOGGERS_INIT)
    (package / "loggers.py").write_text(LOGGERS)
    (package / "tb.py").write_text(LOGGERS.split("class TrainMeter")[0])
    agent = AGENT.replace("from proj import utils", "from proj import tb, utils")
    (package / "agent.py").write_text(agent)
    settings = Settings(root=package, select=("XLA101",))
    report = api.check_paths([package / "agent.py"], settings, jobs=1)
    assert [d.start.row for d in report.diagnostics] == [16]


def test_a_helper_that_copies_hands_back_a_host_value(tmp_path: Path) -> None:
    """`to_numpy(scale(x))` is one copy, `scale`'s: what a copying helper hands back is on
    the host, so the outer conversion reads nothing of the device."""
    utils = UTILS + "\n\ndef scale(t):\n    return t.detach().cpu() * 2\n"
    train = TRAIN.replace(
        "        h = to_numpy(x.shape)\n",
        "        h = to_numpy(x.shape)\n        i = to_numpy(scale(model.head(out)))\n",
    ).replace("from .utils import ModelUtils", "from .utils import ModelUtils, scale")
    package = _package(tmp_path, utils=utils, train=train)
    found = _check([package / "train.py"])
    assert [f for f in found if f[1] == 22] == [("train.py", 22, "XLA102")]


def test_other_modules_are_parsed_only_for_names_they_spell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another module's summaries are made as asked: a name its text never spells has
    none, without a parse; completing a module (once `_HELD_BYTES` of later modules are
    read) keeps every answer."""
    from xlalint.analysis import module_reads, project_modules

    path = tmp_path / "utils.py"
    path.write_text(UTILS)
    parses: list[str] = []
    real = project_modules.parse
    monkeypatch.setattr(project_modules, "parse", lambda p, t: parses.append(p) or real(p, t))
    module = module_reads._module_at(str(path), project_modules.stat_key(str(path)))
    assert module is not None
    assert "Mixin.progress_bar" not in module.functions and not parses
    assert "to_numpy" in module.functions and parses == [str(path)]
    answers = {key: module.functions.get(key) for key in ("diagonal_score", "_exp", "nope")}
    listed = list(module.functions)
    held = module.functions
    assert isinstance(held, module_reads._Held)
    held.complete()
    assert {key: module.functions.get(key) for key in answers} == answers
    assert list(module.functions) == listed and parses == [str(path)]


def test_a_module_that_does_not_parse_reexports_nothing(tmp_path: Path) -> None:
    from xlalint.analysis import module_reads, project_modules

    path = tmp_path / "broken.py"
    path.write_text("from .utils import to_numpy\ndef f(:\n")
    module = module_reads._module_at(str(path), project_modules.stat_key(str(path)))
    assert module is not None and "to_numpy" in module.bindings
    assert not module_reads._parses(module) and not list(module.functions)


def test_held_modules_are_completed_past_their_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held texts and trees stay within `_HELD_BYTES`: the oldest modules are summarised
    whole and drop them."""
    from collections import deque

    from xlalint.analysis import module_reads, project_modules

    monkeypatch.setattr(module_reads, "_held", deque())
    monkeypatch.setattr(module_reads, "_held_bytes", 0)
    monkeypatch.setattr(module_reads, "_HELD_BYTES", len(UTILS) + 1)
    modules = []
    for name in ("a.py", "b.py"):
        path = tmp_path / name
        path.write_text(UTILS)
        modules.append(module_reads._module_at(str(path), project_modules.stat_key(str(path))))
    first, second = (m.functions for m in modules if m is not None)
    assert isinstance(first, module_reads._Held) and isinstance(second, module_reads._Held)
    assert first._complete and not second._complete
    assert "to_numpy" in first and "nope" not in first
    assert module_reads._held_bytes == len(UTILS)


MISC = """\
import torch


def is_nan(t):
    return torch.any(torch.isnan(t))


def hairer_norm(x):
    return x.abs().pow(2).mean().sqrt()


def contains_unknown(labels):
    return (labels < 0).any()


def as_number(t):
    return t.sum().item()


def maybe_host(t, host):
    if host:
        return t.cpu()
    return t


def steps(t):
    for row in t:
        yield row > 0


def absent(t):
    return t is None
"""

SOLVER = """\
import numpy as np
import torch

from . import misc
from .misc import contains_unknown, hairer_norm


def integrate(y: torch.Tensor, ts: np.ndarray):
    for t in ts:
        y_new = y * 0.5 + t
        error = hairer_norm(y_new - y)
        assert not misc.is_nan(error)
        if error <= 1:
            y = y_new
        if contains_unknown(labels=y.long()):
            break
        if misc.as_number(y) > 3:
            break
        if misc.maybe_host(y, True).sum() > 0:
            break
        if misc.is_nan(torch.from_numpy(ts)):
            break
        if any(misc.steps(y)):
            break
        if misc.absent(y):
            break
    return y
"""


def _solver(root: Path, misc: str = MISC) -> Path:
    package = root / "solver"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "misc.py").write_text(misc)
    (package / "step.py").write_text(SOLVER)
    return package


def test_a_result_another_module_computes_on_the_device_is_a_tensor(tmp_path: Path) -> None:
    """`misc.is_nan(error)`, `hairer_norm(y_new - y)` (bound, then tested) and
    `contains_unknown(labels=...)` hand back what those functions compute on the device
    from the device tensors handed to them: testing them reads the device every step. Not
    a Python number they read (`.item()`), a result some `return` copies to the host, a
    host tensor handed in (`torch.from_numpy`), a generator's values, nor `t is None` (the
    number and the copy are the reads those helpers make of `y`, reported at their calls)."""
    package = _solver(tmp_path)
    assert _check([package / "step.py"]) == [
        ("step.py", 12, "XLA103"),
        ("step.py", 13, "XLA103"),
        ("step.py", 15, "XLA103"),
        ("step.py", 17, "XLA101"),
        ("step.py", 19, "XLA102"),
    ]


def test_a_result_through_a_package_reexport(tmp_path: Path) -> None:
    package = _solver(tmp_path)
    (package / "__init__.py").write_text("from .misc import is_nan\n")
    (tmp_path / "run.py").write_text(
        "import torch\n\nfrom solver import is_nan\n\n\n"
        "def train(model, xs, opt):\n    for x in xs:\n        loss = model(x).sum()\n"
        "        if is_nan(loss):\n            continue\n"
        "        loss.backward()\n        opt.step()\n"
    )
    assert _check([tmp_path / "run.py"]) == [("run.py", 9, "XLA103")]


def test_editing_the_function_that_computes_a_result_relints_its_caller(tmp_path: Path) -> None:
    package = _solver(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "step.py"]
    found = _check(paths, cache)
    assert ("step.py", 12, "XLA103") in found
    assert _check(paths, cache) == found  # warm: a hit
    misc = package / "misc.py"
    misc.write_text(
        MISC.replace("return torch.any(torch.isnan(t))", "return bool(t.isnan().any())")
    )
    assert ("step.py", 12, "XLA103") not in _check(paths, cache)
    misc.write_text(MISC)
    assert _check(paths, cache) == found


def test_results_elsewhere_with_and_without_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _solver(tmp_path)
    screened = _check([package])
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert _check([package]) == screened


HEAD = """\
import torch
from torch import nn

from .utils import to_numpy


def pck_accuracy(output, target, mask):
    return 0.0, 0.0, 0


class HeatmapHead(nn.Module):
    def loss(self, feats, gt_heatmaps, keypoint_weights):
        pred = self.conv(feats)
        loss = (pred - gt_heatmaps).pow(2).mean()
        _, acc, _ = pck_accuracy(
            output=to_numpy(pred),
            target=to_numpy(gt_heatmaps),
            mask=to_numpy(keypoint_weights) > 0,
        )
        logged = to_numpy(pred)
        return loss, acc, logged


class BaseHead(nn.Module):
    def loss(self, feats, samples):
        scores = self.fc(feats)
        return self.loss_by_feat(scores, samples)

    def loss_by_feat(self, scores: torch.Tensor, samples):
        labels = torch.stack([s.label for s in samples]).to(scores.device)
        top = topk_accuracy(scores.detach().cpu().numpy(), labels.detach().cpu().numpy())
        return scores.sum() + top


def topk_accuracy(scores, labels):
    return float((scores.argmax(1) == labels).mean())
"""


def test_detection_head_loss_reads_one_finding_per_consuming_call(tmp_path: Path) -> None:
    """A head's `loss` runs every step (a per-step hook): the device tensors it hands
    another module's `to_numpy` for one accuracy call are one cause, reported at the
    first (the three calls and the comparison in one argument list); a copy in the next
    statement is another finding. A hook that copies what its own per-step
    caller hands it (`loss_by_feat`) reports the copy where it is, not at the call."""
    package = _package(tmp_path)
    (package / "head.py").write_text(HEAD)
    settings = Settings(root=tmp_path, select=("XLA102",))
    report = api.check_paths([package / "head.py"], settings, jobs=1)
    assert sorted(d.start.row for d in report.diagnostics) == [16, 20, 31]


BRANCHES = """\
import torch

from .utils import diagonal_score, to_numpy


def train(model, loader, optimizer, results):
    for batch in loader:
        out = model(batch)
        out["energy"].sum().backward()
        optimizer.step()
        for prop in ("energy", "forces", "stress"):
            key = "energy" if prop == "free_energy" else prop
            if prop == "stress":
                results[prop] = to_numpy(out[key].squeeze())
            else:
                results[prop] = to_numpy(out[key])
            if prop == "forces":
                results["score"] = diagonal_score(out[key])
            elif prop == "stress":
                results["score"] = diagonal_score(-out[key])
            if prop == "energy":
                results["grad"] = to_numpy(out["grad"])
            else:
                results["other"] = to_numpy(out["aux"])
            results["again"] = to_numpy(out[key])
"""


def test_one_value_handed_in_both_branches_of_an_if_is_one_read(tmp_path: Path) -> None:
    """The same value handed to a host-reading helper in the two branches of one `if`
    (an `elif` included): one branch runs per pass, one cause, reported in the first.
    Different values in the branches, or the value again after the `if`, are reads of
    their own."""
    package = _package(tmp_path, train=BRANCHES)
    assert _check([package / "train.py"]) == [
        ("train.py", 14, "XLA102"),
        ("train.py", 18, "XLA101"),
        ("train.py", 22, "XLA102"),
        ("train.py", 24, "XLA102"),
        ("train.py", 25, "XLA102"),
    ]


PARALLEL_STATE = """\
from typing import Optional

import torch


class SequenceParallel:
    def __init__(self):
        self.extra_kwargs = {}
        self.world_size = 1

    @property
    def real_position_ids(self) -> torch.Tensor:
        return self.extra_kwargs.get("text_position_ids")

    @property
    def padding_mask(self) -> Optional[torch.Tensor]:
        return self.extra_kwargs.get("padding_mask")

    @property
    def sp_world_size(self) -> int:
        return self.world_size

    @property
    def enabled(self):
        return self.world_size > 1

    def pad(self, tensor, value):
        return tensor


class Registry:
    @property
    def scale(self) -> torch.Tensor:
        return torch.ones(1)


sequence_parallel = SequenceParallel()
registry = Registry()
registry = Registry()
"""

PARALLEL_LOSS = """\
import torch.nn.functional as F

from .parallel import sequence_parallel
from .parallel.state import registry
from .parallel.state import sequence_parallel as sp


def train(model, loader, optimizer):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y, reduction="none")
        position_ids = sequence_parallel.real_position_ids
        if position_ids is not None and position_ids.min() == -1:
            loss = loss[position_ids >= 0]
        if sp.padding_mask.any():
            loss = loss * 2
        if sequence_parallel.sp_world_size > 1:
            loss = loss / 2
        if sequence_parallel.enabled:
            loss = loss * 1
        if registry.scale > 1:
            loss = loss * 1
        loss.mean().backward()
        optimizer.step()
"""


def _parallel(root: Path, state: str = PARALLEL_STATE) -> Path:
    package = root / "proj"
    (package / "parallel").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "parallel" / "__init__.py").write_text(
        "from .state import SequenceParallel, sequence_parallel\n"
    )
    (package / "parallel" / "state.py").write_text(state)
    (package / "loss.py").write_text(PARALLEL_LOSS)
    return package


def test_a_tensor_property_of_an_object_another_module_builds_is_a_tensor(
    tmp_path: Path,
) -> None:
    """`sequence_parallel.real_position_ids` reads a property declared `-> torch.Tensor`
    (or `Optional[torch.Tensor]`) of the object another project module builds once at its
    top level, imported by name directly or through a package's re-export: testing it reads
    the device every step. Not a property declared a Python number, nor one with no
    annotation, nor one of a name the module binds twice (which object is unclear)."""
    package = _parallel(tmp_path)
    assert _check([package / "loss.py"]) == [("loss.py", 12, "XLA103"), ("loss.py", 14, "XLA103")]


def test_tensor_properties_elsewhere_with_and_without_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _parallel(tmp_path)
    screened = _check([package / "loss.py"])
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert _check([package / "loss.py"]) == screened


def test_a_tensor_property_of_a_module_that_names_xla_tells_nothing(tmp_path: Path) -> None:
    package = _parallel(tmp_path, "import torch_xla\n" + PARALLEL_STATE)
    assert _check([package / "loss.py"]) == []
