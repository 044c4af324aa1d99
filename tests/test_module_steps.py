"""Cross-module facts: a loop whose training step another module of the project defines
(`analysis/module_steps.py`, `analysis/project_modules.py`), and the depfile a cache
entry keeps of what a file consulted."""

from __future__ import annotations

import ast
import json
import os
from collections import deque
from pathlib import Path

import pytest

import xlalint
from xlalint import api, lint_memo, screen
from xlalint.analysis import module_steps, project_modules
from xlalint.cache import ResultCache
from xlalint.config import Settings

BASE = """\
import torch


class AgentBase:
    def __init__(self, net):
        self.net = net
        self.optimizer = torch.optim.Adam(net.parameters())

    def optimizer_update(self, optimizer, objective):
        optimizer.zero_grad()
        objective.backward()
        optimizer.step()

    def train_epoch(self, loader):
        for batch in loader:
            self.optimizer_update(self.optimizer, self.net(batch).mean())

    def report(self, value):
        return value
"""

AGENT = """\
import torch

from .base import AgentBase


class AgentPPO(AgentBase):
    def update_net(self, states):
        for _ in range(8):
            loss = self.net(states).mean()
            self.optimizer_update(self.optimizer, loss)

    def fit(self, loaders):
        for loader in loaders:
            self.train_epoch(loader)

    def log(self, states):
        for _ in range(8):
            self.report(self.net(states))
"""

# The positive, on line 8; `fit` (an epoch loop around the base's batch loop) and `log`
# (a base method that steps nothing) stay clean.
POSITIVE_LINE = 8


def _package(root: Path, base: str = BASE, agent: str = AGENT) -> Path:
    package = root / "agents"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(base)
    (package / "ppo.py").write_text(agent)
    return package


def _xla401(paths: list[Path], cache: ResultCache | None = None) -> list[tuple[str, int]]:
    settings = Settings(root=paths[0].parent, select=("XLA401", "XLA402"))
    report = api.check_paths(paths, settings, jobs=1, cache=cache)
    return sorted((Path(d.filename).name, d.start.row) for d in report.diagnostics)


def test_base_class_step_in_another_module(tmp_path: Path) -> None:
    package = _package(tmp_path)
    assert _xla401([package / "ppo.py"]) == [("ppo.py", POSITIVE_LINE)]


def test_absolute_import_of_the_base(tmp_path: Path) -> None:
    agent = AGENT.replace("from .base import AgentBase", "from agents.base import AgentBase")
    package = _package(tmp_path, agent=agent)
    assert _xla401([package / "ppo.py"]) == [("ppo.py", POSITIVE_LINE)]


def test_absolute_import_through_a_namespace_package(tmp_path: Path) -> None:
    """PEP 420: `ns/` holds the package `agents/` and no `__init__.py` of its own (a
    namespace shared by several distributions, as `instructlab/` is); absolute imports
    spell it, `from ns.agents.base import AgentBase`, and find the base under it, also
    through a `from` import of a submodule. A spelling that names another top package
    finds nothing."""
    namespace = tmp_path / "ns"
    namespace.mkdir()
    for spelled in ("from ns.agents.base import AgentBase", "from ns.agents import base"):
        agent = AGENT.replace("from .base import AgentBase", spelled)
        if spelled.endswith("import base"):
            agent = agent.replace("(AgentBase)", "(base.AgentBase)")
        package = _package(namespace, agent=agent)
        assert _xla401([package / "ppo.py"]) == [("ppo.py", POSITIVE_LINE)]
    agent = AGENT.replace("from .base import AgentBase", "from other.agents.base import AgentBase")
    package = _package(namespace, agent=agent)
    assert _xla401([package / "ppo.py"]) == []


def test_base_of_the_base_two_modules_away(tmp_path: Path) -> None:
    package = _package(tmp_path)
    (package / "middle.py").write_text(
        "from .base import AgentBase\n\n\nclass OnPolicy(AgentBase):\n    pass\n"
    )
    agent = AGENT.replace("from .base import AgentBase", "from .middle import OnPolicy")
    (package / "ppo.py").write_text(agent.replace("(AgentBase)", "(OnPolicy)"))
    assert _xla401([package / "ppo.py"]) == [("ppo.py", POSITIVE_LINE)]


def test_imported_function_that_steps(tmp_path: Path) -> None:
    package = _package(tmp_path)
    (package / "steps.py").write_text(
        "def sgd_step(optimizer, loss):\n    loss.backward()\n    optimizer.step()\n"
    )
    (package / "script.py").write_text(
        "import torch\n\nfrom .steps import sgd_step\n\n\n"
        "def train(model, opt, xs):\n    for x in xs:\n        sgd_step(opt, model(x).sum())\n"
    )
    assert _xla401([package / "script.py"]) == [("script.py", 7)]
    absolute = "import torch\n\nimport agents.steps as steps\n\n\n"
    (package / "script.py").write_text(
        f"{absolute}def train(model, opt, xs):\n    for x in xs:\n"
        "        steps.sgd_step(opt, model(x).sum())\n"
    )
    assert _xla401([package / "script.py"]) == [("script.py", 7)]


GRADIENT_STEP = """\
import torch


def fast_gradient_method(model_fn, x, eps, y):
    x = x.clone().detach().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(model_fn(x), y)
    loss.backward()
    perturbation = optimize_linear(x.grad, eps)
    adv_x = x + perturbation
    return adv_x


def optimize_linear(grad, eps):
    return eps * torch.sign(grad)
"""

ATTACK = """\
import torch

from .fgm import fast_gradient_method


def pgd(model_fn, x, eps, eps_iter, nb_iter, y):
    adv_x = x
    i = 0
    while i < nb_iter:
        adv_x = fast_gradient_method(model_fn, adv_x, eps_iter, y)
        adv_x = x + torch.clamp(adv_x - x, -eps, eps)
        i += 1
    return adv_x


def each(model_fn, batches, eps, y):
    advs = []
    for x in batches:
        adv = fast_gradient_method(model_fn, x, eps, y)
        advs.append(adv.cpu())
    return advs
"""


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("", "", [("pgd.py", 9)]),
        # The gradient handed back as it is (a saliency map) updates no state.
        ("    adv_x = x + perturbation\n", "    adv_x = perturbation\n", []),
        # Backward nowhere: the helper reads a gradient some other code computed.
        ("    loss.backward()\n", "", []),
        # A module that knows XLA may hold its own barrier.
        ("import torch\n", "import torch\nimport torch_xla\n", []),
    ],
)
def test_gradient_step_handed_back_by_another_module(
    tmp_path: Path, old: str, new: str, expected: list[tuple[str, int]]
) -> None:
    """An iterative gradient method (PGD) whose step, forward, backward and the update
    from the gradient, is a function of another module that hands the updated state
    back: the loop that rebinds it is a training loop; one that starts from each batch
    anew (`each`) carries nothing."""
    package = tmp_path / "attacks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fgm.py").write_text(GRADIENT_STEP.replace(old, new) if old else GRADIENT_STEP)
    (package / "pgd.py").write_text(ATTACK)
    assert _xla401([package / "pgd.py"]) == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("        optimizer.step()\n", "        pass\n"),  # backward alone: accumulation
        ("import torch\n", "import torch\nimport torch_xla\n"),  # the base knows XLA
        (  # the step is in a loop of the base: it is an epoch, not one step
            "        optimizer.zero_grad()\n        objective.backward()\n"
            "        optimizer.step()\n",
            "        for _ in range(3):\n            optimizer.step()\n",
        ),
    ],
)
def test_hard_negatives(tmp_path: Path, old: str, new: str) -> None:
    assert old in BASE
    package = _package(tmp_path, base=BASE.replace(old, new, 1))
    assert _xla401([package / "ppo.py"]) == []


def test_a_base_that_fails_to_parse_contributes_nothing(tmp_path: Path) -> None:
    package = _package(tmp_path, base="def broken(:\n")
    assert _xla401([package / "ppo.py"]) == []


def test_no_path_no_layer(tmp_path: Path) -> None:
    """A text without a file on disk (stdin, an unsaved buffer) consults nothing."""
    package = _package(tmp_path)
    assert project_modules.consulted(str(package / "unsaved.py"), AGENT) == ()
    assert project_modules.consulted("<stdin>", AGENT) == ()
    assert project_modules.consulted(str(package / "ppo.py"), AGENT) == (str(package / "base.py"),)


def test_nothing_outside_the_package_root(tmp_path: Path) -> None:
    package = _package(tmp_path)
    (tmp_path / "outside.py").write_text(BASE)
    agent = AGENT.replace("from .base import AgentBase", "from ...outside import AgentBase")
    (package / "ppo.py").write_text(agent)
    assert project_modules.consulted(str(package / "ppo.py"), agent) == ()


def test_screen_keeps_findings_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path)
    screened = _xla401([package])
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    # (The base's own batch loop is a training loop of its module.)
    assert _xla401([package]) == screened == [("base.py", 15), ("ppo.py", POSITIVE_LINE)]


def test_editing_the_base_relints_the_subclass_on_a_warm_run(tmp_path: Path) -> None:
    package = _package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "ppo.py"]
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    entries = cache.directory / xlalint.__version__
    stored = set(os.listdir(entries))
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]  # warm: a hit
    assert set(os.listdir(entries)) == stored
    # The subclass's bytes are unchanged; its base no longer steps the optimizer.
    base = package / "base.py"
    base.write_text(BASE.replace("        optimizer.step()\n", "        pass  # no step\n"))
    assert _xla401(paths, cache) == []
    # And back: the first entry answers again.
    base.write_text(BASE)
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]


OPTIMIZERS = """\
import torch


class Optimizers:
    def __init__(self, optimizers):
        self.optimizers = optimizers

    def scaler_step_some(self, grad_scaler, groups):
        for group in groups:
            optimizer = self.optimizers[group]
            grad_scaler.step(optimizer)

    def load_some(self, groups):
        for group in groups:
            self.optimizers[group].load_state_dict({})
"""

TRAINER = """\
import torch

from agents.optimizers import Optimizers


class Trainer:
    def __init__(self, model, optimizers):
        self.model = model
        self.optimizers = Optimizers(optimizers)

    def train(self, batches, groups):
        for batch in batches:
            self.model(batch).sum().backward()
            self.optimizers.scaler_step_some(self.scaler, groups)

    def reload(self, batches, groups):
        for batch in batches:
            self.model(batch).sum().backward()
            self.optimizers.load_some(groups)
"""


def test_method_of_an_imported_class_by_its_name(tmp_path: Path) -> None:
    """A loop over the optimizers' keys in the other module is one step of each; a
    method of the same class that steps nothing (`load_some`) is no step."""
    package = _package(tmp_path)
    (package / "optimizers.py").write_text(OPTIMIZERS)
    (package / "trainer.py").write_text(TRAINER)
    assert _xla401([package / "trainer.py"]) == [("trainer.py", 12)]


AMP = """\
import torch


class MixedPrecisionManager:
    def __init__(self, activated):
        self.activated = activated
        if activated:
            self.scaler = torch.cuda.amp.GradScaler()

    def backward(self, loss):
        loss.backward()

    def step(self, model, optimizer):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        optimizer.step()
        optimizer.zero_grad()

    def log(self, model):
        return model
"""

AMP_TRAINING = """\
import torch

from .amp import MixedPrecisionManager


def train(model, optimizer, reader, config):
    amp = MixedPrecisionManager(config.amp)
    for batches in reader:
        for batch in batches:
            amp.backward(model(batch).sum())
        amp.step(model, optimizer)


def evaluate(model, reader, config):
    amp = MixedPrecisionManager(config.amp)
    for batches in reader:
        for batch in batches:
            amp.backward(model(batch).sum())
        amp.log(model)
"""


def test_method_of_an_instance_of_an_imported_class(tmp_path: Path) -> None:
    """`amp = MixedPrecisionManager(...)`, then `amp.step(model, optimizer)`: the name holds
    an instance of that class, so the call runs its `step`, however generic the name
    (colbert's training loop); `amp.log(model)` steps nothing, so the second nest (whose
    micro-batches run backward alone) is no training loop."""
    package = _package(tmp_path)
    (package / "amp.py").write_text(AMP)
    (package / "training.py").write_text(AMP_TRAINING)
    assert _xla401([package / "training.py"]) == [("training.py", 8)]
    # A name bound to something else too is no known instance.
    (package / "training.py").write_text(
        AMP_TRAINING.replace(
            "    amp = MixedPrecisionManager(config.amp)\n    for",
            "    amp = MixedPrecisionManager(config.amp)\n    amp = config.amp\n    for",
            1,
        )
    )
    assert _xla401([package / "training.py"]) == []


def test_bindings_from_the_import_statements() -> None:
    text = (
        "import a.b\nimport c.d as e\nfrom ..m import (x,  # why\n    y as z)\n"
        "from . import w\n    from .k import f as g\n"
    )
    assert project_modules.bindings(text) == {
        "a": (0, "a"),
        "e": (0, "c.d"),
        "x": (2, "m.x"),
        "z": (2, "m.y"),
        "w": (1, "w"),
        "g": (1, "k.f"),
    }


@pytest.mark.parametrize(
    "text",
    [
        "import a\nimport b",
        "x = 1  # import y\nfrom a import (b,\n  c)  import d\nfrom e import f; import g",
        "from a import (b,\nimport c)\n import d\n\timport e\nimportant = 1\nimport",
        '"""\nimport docs\n"""\nfrom . import (x, y) # import z\nfrom .import w',
    ],
)
def test_import_statements_as_the_expression_finds_them(text: str) -> None:
    # Tried only at the starts of lines that spell `import`: the same matches as a scan.
    expected = [m.group(0) for m in project_modules._IMPORT.finditer(text)]
    assert [m.group(0) for m in project_modules._import_statements(text)] == expected


def _entry(cache: ResultCache, path: Path) -> dict[str, object]:
    """The one cache entry stored for `path`'s current bytes."""
    settings = Settings(root=path.parent, select=("XLA401", "XLA402"))
    rules = api.enabled_rules(settings)
    key = cache.key(str(path), path.read_bytes(), rules, settings.hot_functions)
    return json.loads((cache.entries / f"{key}.json").read_text())


def test_the_entry_records_the_modules_consulted(tmp_path: Path) -> None:
    package = _package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    _xla401([package / "ppo.py", package / "base.py"], cache)
    base = str(package / "base.py")
    size, mtime = project_modules.stat_key(base) or (0, 0)
    assert _entry(cache, package / "ppo.py")["deps"] == [[base, size, mtime]]
    # The base consults nothing (its `self.optimizer_update` is its own): no depfile.
    assert "deps" not in _entry(cache, package / "base.py")


def test_deleting_a_consulted_module_relints(tmp_path: Path) -> None:
    package = _package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "ppo.py"]
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    (package / "base.py").unlink()
    project_modules.forget_layout()  # (a new process would know nothing of the old layout)
    assert _xla401(paths, cache) == []


def test_a_warm_run_resolves_no_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "ppo.py", package / "base.py"]
    cold = _xla401(paths, cache)

    def fail(*args: object, **kwargs: object) -> tuple[str, ...]:
        raise AssertionError("a warm run asked project_modules.consulted")

    monkeypatch.setattr(project_modules, "consulted", fail)
    assert _xla401(paths, cache) == cold


def test_a_fix_run_keeps_the_depfile(tmp_path: Path) -> None:
    """`fix` answers from the cache only while the modules a lint consulted are as they
    were, and stores an unchanged file's findings for `check` with its own depfile."""
    package = _package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    settings = Settings(root=package, select=("XLA401", "XLA402"))
    assert _xla401([package / "ppo.py"], cache) == [("ppo.py", POSITIVE_LINE)]
    (package / "base.py").write_text(BASE.replace("        optimizer.step()\n", "        pass\n"))
    report = api.fix_paths([package / "ppo.py"], settings, jobs=1, cache=cache)
    assert [outcome.remaining for outcome in report.outcomes] == [[]]
    base = str(package / "base.py")
    assert [dep[0] for dep in _entry(cache, package / "ppo.py")["deps"]] == [base]
    assert _xla401([package / "ppo.py"], cache) == []


def test_language_server_consults_the_project_around_the_buffer(tmp_path: Path) -> None:
    """The server lints a buffer as its path: the base it imports is read from disk, and
    a base created after the server started is found."""
    from xlalint.server import lint_document

    package = _package(tmp_path)
    (package / "base.py").unlink()
    path = package / "ppo.py"
    assert [d.start.row for d in lint_document(AGENT, path, 1).findings] == []
    (package / "base.py").write_text(BASE)
    assert [d.code for d in lint_document(AGENT, path, 2).findings] == ["XLA401"]


def _two_hops(root: Path) -> Path:
    """`ppo.py` -> `middle.py` (its base class) -> `base.py` (the step, read) and
    `extra.py` (imported by `middle.py`, never read for `ppo.py`'s questions)."""
    package = _package(root)
    (package / "extra.py").write_text("def describe(x):\n    return str(x)\n")
    (package / "middle.py").write_text(
        "from .base import AgentBase\nfrom .extra import describe\n\n\n"
        "class OnPolicy(AgentBase):\n    pass\n"
    )
    agent = AGENT.replace("from .base import AgentBase", "from .middle import OnPolicy")
    (package / "ppo.py").write_text(agent.replace("(AgentBase)", "(OnPolicy)"))
    return package


def _counting_lints(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files linted from now on (cache misses), by name."""
    from xlalint import engine

    linted: list[str] = []
    real = engine.lint_source

    def lint_source(text: str, filename: str, *args: object, **kwargs: object) -> object:
        linted.append(Path(filename).name)
        return real(text, filename, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "lint_source", lint_source)
    return linted


def test_a_last_hop_module_is_noted_by_its_existence(tmp_path: Path) -> None:
    """The modules a file may consult two hops away enter the list by name: their text
    decides neither the list nor (unless a layer reads them) the result, so the depfile
    notes them by existence; those whose imports the list follows, and those read, by
    their stats."""
    package = _two_hops(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    assert _xla401([package / "ppo.py"], cache) == [("ppo.py", POSITIVE_LINE)]
    deps = {dep[0]: dep[1:] for dep in _entry(cache, package / "ppo.py")["deps"]}  # type: ignore[union-attr]
    middle, base, extra = (str(package / f"{name}.py") for name in ("middle", "base", "extra"))
    assert deps[middle] == list(project_modules.stat_key(middle) or ())  # its imports followed
    assert deps[base] == list(project_modules.stat_key(base) or ())  # read: the step
    assert project_modules.exists(extra) in deps and extra not in deps  # only listed


def test_editing_an_unread_last_hop_module_keeps_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _two_hops(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "ppo.py"]
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    linted = _counting_lints(monkeypatch)
    (package / "extra.py").write_text("def describe(x):\n    return repr(x)  # edited\n")
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    assert linted == []  # a hit: nothing `ppo.py` reads changed
    # Gone, it is a miss (the list would differ).
    (package / "extra.py").unlink()
    project_modules.forget_layout()
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    assert linted == ["ppo.py"]


def test_editing_a_read_last_hop_module_relints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base two hops away decides the finding: an edit that stops its optimizer step
    re-lints the file, and the finding goes; and back."""
    package = _two_hops(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "ppo.py"]
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    linted = _counting_lints(monkeypatch)
    base = package / "base.py"
    base.write_text(BASE.replace("        optimizer.step()\n", "        pass  # no step\n"))
    assert _xla401(paths, cache) == []
    assert linted == ["ppo.py"]
    base.write_text(BASE)
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]


def test_editing_the_imports_of_a_followed_module_relints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list follows the imports of the modules the file imports: a module that stops
    importing the base changes the list, and the file is linted again."""
    package = _two_hops(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    paths = [package / "ppo.py"]
    assert _xla401(paths, cache) == [("ppo.py", POSITIVE_LINE)]
    linted = _counting_lints(monkeypatch)
    (package / "middle.py").write_text(
        "from .extra import describe\n\n\nclass OnPolicy:\n    pass\n"
    )
    assert _xla401(paths, cache) == []
    assert linted == ["ppo.py"]


GATHERING = """\
import numpy as np
import torch


def gather_listed_dicts(dict_list):
    gathered = {}
    for k in dict_list[0].keys():
        gathered[k] = torch.cat([d[k] for d in dict_list], dim=0).cpu().numpy()
    return gathered


def read_each(outputs):
    return [out.cpu().numpy() for out in outputs]
"""

PREDICTOR = """\
import torch
from torch.utils.data import DataLoader

from ..functional import gather_listed_dicts, read_each


class Imputer:
    def predict(self, test_set):
        results = []
        for data in DataLoader(test_set, batch_size=32):
            results.append(self.model(data))
        return gather_listed_dicts(results)

    def predict_each(self, test_set):
        results = []
        for data in DataLoader(test_set, batch_size=32):
            results.append(self.model(data))
        return read_each(results)
"""


def _gathering_package(root: Path, gathering: str = GATHERING) -> Path:
    package = root / "pots"
    (package / "functional").mkdir(parents=True, exist_ok=True)
    (package / "imputation").mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "functional" / "__init__.py").write_text(
        "from .gathering import gather_listed_dicts, read_each\n"
    )
    (package / "functional" / "gathering.py").write_text(gathering)
    (package / "imputation" / "__init__.py").write_text("")
    (package / "imputation" / "base.py").write_text(PREDICTOR)
    return package / "imputation" / "base.py"


def test_results_joined_by_a_helper_of_another_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An evaluation loop keeps each batch's results on the device and hands the list to
    a function of another module (re-exported by its package) that joins them with
    `torch.cat`: every batch joins one graph. A helper that copies each result to the
    host on its own joins nothing (hard negative)."""
    predictor = _gathering_package(tmp_path)
    screened = _xla401([predictor])
    assert screened == [("base.py", 10)]
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert _xla401([predictor]) == screened


def test_a_joining_helper_in_a_module_that_names_xla_contributes_nothing(tmp_path: Path) -> None:
    predictor = _gathering_package(tmp_path, "import torch_xla\n" + GATHERING)
    assert _xla401([predictor]) == []


def test_editing_the_joining_helper_relints_its_caller(tmp_path: Path) -> None:
    predictor = _gathering_package(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    assert _xla401([predictor], cache) == [("base.py", 10)]
    helper = predictor.parent.parent / "functional" / "gathering.py"
    helper.write_text(GATHERING.replace("torch.cat([d[k] for d in dict_list], dim=0)", "None"))
    assert _xla401([predictor], cache) == []


def test_names_xla_answers_as_its_expression() -> None:
    """`devices.names_xla` finds what `_XLA_WORD.search` finds, by `str.find`: XLA or TPU
    in capitals or capitalised anywhere, in lower case where a letter of `a-z` does not
    stand on both sides; on random texts of those letters, and on xlalint's own modules."""
    import random

    from xlalint.analysis.devices import _XLA_WORD, names_xla

    def expected(text: str) -> bool:
        return _XLA_WORD.search(text) is not None

    for text in ("", "xla", "use_tpu", "_step_output", "axlab", "Xla", "TPUs", "tpux", "ax"):
        assert names_xla(text) == expected(text), text
    shuffle = random.Random(14)
    for _ in range(20_000):
        text = "".join(shuffle.choice("xlatpuXLATPU_ a.\né") for _ in range(shuffle.randint(0, 8)))
        assert names_xla(text) == expected(text), repr(text)
    for path in Path(xlalint.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert names_xla(text) == expected(text), path
        assert names_xla(text.replace("xla", "x").replace("XLA", "X").replace("tpu", "t")) == (
            expected(text.replace("xla", "x").replace("XLA", "X").replace("tpu", "t"))
        ), path


def test_the_context_finds_called_names_as_the_plain_expression_does() -> None:
    """`context._CALLED`, tried only at word starts and without backtracking, finds what
    `(\\w+)\\s*\\(` finds, in the same order."""
    import random
    import re

    from xlalint.context import _CALLED

    plain = re.compile(r"(\w+)\s*\(")
    shuffle = random.Random(14)
    for _ in range(20_000):
        text = "".join(shuffle.choice("ab_9( \n\t.é)") for _ in range(shuffle.randint(0, 10)))
        assert _CALLED.findall(text) == plain.findall(text), repr(text)
    for path in Path(xlalint.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert _CALLED.findall(text) == plain.findall(text), path


GAN_TRAINER = """\
from functools import partial

import torch


def loss_backwards(fp16, loss, optimizer):
    loss.backward()


class Trainer:
    def __init__(self, gan):
        self.GAN = gan
        self.steps = 0

    def train(self):
        backwards = partial(loss_backwards, False)
        total_disc_loss = torch.tensor(0.0).cuda(self.rank)
        self.GAN.D_opt.zero_grad()
        for i in range(self.gradient_accumulate_every):
            disc_loss = self.GAN.D(next(self.loader)).mean()
            backwards(disc_loss, self.GAN.D_opt)
            total_disc_loss += disc_loss.detach()
        self.d_loss = float(total_disc_loss)
        self.GAN.D_opt.step()
        self.steps += 1
"""

GAN_CLI = """\
import torch
from retry.api import retry_call

from gan.trainer import Trainer


def run_training(gan, num_train_steps):
    model = Trainer(gan)
    while model.steps < num_train_steps:
        retry_call(model.train, tries=3)
"""


def test_step_retried_through_another_modules_trainer(tmp_path: Path) -> None:
    """lightweight-gan's and stylegan2's CLIs: `retry_call(model.train, ...)` runs, every
    pass, a method of another module's class that steps its optimizers after loops of
    micro-batches (backward through a `partial`); the loop is a training loop, and the
    method's read after those loops runs every step."""
    package = tmp_path / "gan"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "trainer.py").write_text(GAN_TRAINER)
    (package / "cli.py").write_text(GAN_CLI)
    assert _xla401([package / "cli.py"]) == [("cli.py", 9)]
    settings = Settings(root=tmp_path, select=("XLA101",))
    report = api.check_paths([package / "trainer.py"], settings, jobs=1, cache=None)
    assert [d.start.row for d in report.diagnostics] == [23]
    (package / "cli.py").write_text(GAN_CLI.replace("retry_call(model.train", "print(model.train"))
    assert _xla401([package / "cli.py"]) == []


def _unscreened(path: str, tree: ast.Module, text: str) -> object:
    real = module_steps._function
    try:
        module_steps._function = lambda node, backward=True, joins=True: real(node)  # type: ignore[assignment]
        return _complete(module_steps._summary(path, tree, text))
    finally:
        module_steps._function = real


def _complete(summary: module_steps._Module) -> module_steps._Module:
    """`summary` with every function's summary made (they are made as asked)."""
    for functions in (summary.functions, *(c.methods for c in summary.classes.values())):
        functions.complete()  # type: ignore[attr-defined]
    return summary


def test_a_summary_screened_by_its_text_is_the_whole_summary() -> None:
    """A module's summary skips the walks for `backward` and for joins where its text never
    spells them, with the same summary: on xlalint's sources, and its tests, and on
    texts that spell them only in a non-ASCII form (NFKC reads a fullwidth `b` as `b`)."""
    root = Path(xlalint.__file__).parent.parent
    paths = [*root.joinpath("xlalint").rglob("*.py"), *root.joinpath("tests").rglob("*.py")]
    compared = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        compared += 1
        assert module_steps._summary(str(path), tree, text) == _unscreened(str(path), tree, text)
    assert compared > 200
    texts = {
        "plain": GRADIENT_STEP,
        "fullwidth backward": GRADIENT_STEP.replace(".backward(", ".\uff42ackward("),
        "fullwidth cat": "import torch\ndef gather(outs):\n    return torch.\uff43at(outs)\n",
        "joins": "import torch\ndef gather(outs):\n    return torch.stack(outs)\n",
    }
    for name, text in texts.items():
        tree = ast.parse(text)
        summary = module_steps._summary("m.py", tree, text)
        assert summary == _unscreened("m.py", tree, text), name
    for name in ("plain", "fullwidth backward"):
        fgm = module_steps._summary("m.py", ast.parse(texts[name]), texts[name])
        assert fgm.functions["fast_gradient_method"].grad_step, name
    for name in ("fullwidth cat", "joins"):
        gather = module_steps._summary("m.py", ast.parse(texts[name]), texts[name])
        assert gather.functions["gather"].joins == (0,), name


def test_a_modules_functions_are_summarised_when_asked_and_all_when_it_is_let_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A summary makes the summary of a function or method only when asked for it (round
    26), the same one as when every function was summarised at once; a module let go
    from the held ones (`_HELD_TEXT`) has every summary made and keeps no node."""
    root = Path(xlalint.__file__).parent
    made: list[str] = []
    real = module_steps._function

    def recording(node: ast.AST, backward: bool = True, joins: bool = True) -> object:
        made.append(node.name)  # type: ignore[attr-defined]
        return real(node, backward, joins)  # type: ignore[arg-type]

    monkeypatch.setattr(module_steps, "_function", recording)
    monkeypatch.setattr(module_steps, "_held", deque())  # none held by other tests
    monkeypatch.setattr(module_steps, "_held_text", 0)
    path = root / "analysis" / "module_steps.py"
    text = path.read_text(encoding="utf-8")
    summary = module_steps._summary(str(path), ast.parse(text), text)
    assert made == []
    assert "_summary" in summary.functions and "_Functions" in summary.classes
    assert summary.functions["_summary"].name == "_summary"
    assert "complete" in summary.classes["_Functions"].methods
    assert made == ["_summary"]
    every = _complete(module_steps._summary(str(path), ast.parse(text), text))
    assert dict(summary.functions) == dict(every.functions)
    assert summary == every
    monkeypatch.setattr(module_steps, "_HELD_TEXT", 0)
    made.clear()
    let_go = module_steps._summary(str(path), ast.parse(text), text)
    assert sorted(made) == sorted(
        [*every.functions, *(m for c in every.classes.values() for m in c.methods)]
    )
    assert let_go == every
    assert let_go.functions._nodes == {}  # type: ignore[attr-defined]


def test_the_summaries_a_lint_left_unmade_are_made_when_the_next_lint_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nodes a module's summary holds for the functions not asked about are let go
    (every summary made) when the next file's lint starts, not only when the module
    leaves the held ones: no tree of one lint's modules outlives the next's start."""
    monkeypatch.setattr(module_steps, "_held", deque())
    monkeypatch.setattr(module_steps, "_held_text", 0)
    path = Path(xlalint.__file__).parent / "analysis" / "module_steps.py"
    text = path.read_text(encoding="utf-8")
    with lint_memo.lint_scope():
        summary = module_steps._summary(str(path), ast.parse(text), text)
        assert summary.functions["_summary"].name == "_summary"
    assert summary.functions._nodes  # type: ignore[attr-defined]
    with lint_memo.lint_scope():
        assert summary.functions._nodes == {}  # type: ignore[attr-defined]
        assert all(not c.methods._nodes for c in summary.classes.values())  # type: ignore[attr-defined]
        assert len(module_steps._held) == 0
    assert summary == _complete(module_steps._summary(str(path), ast.parse(text), text))
