"""Cross-module steps reached through what a call's receiver holds (`module_steps.py`):
a parameter annotated with another module's classes (directly, through a union, or
through the file's alias of one), an instance kept in an attribute, a class a package
re-exports, and a method the other class binds to an attribute of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlalint import api, screen
from xlalint.cache import ResultCache
from xlalint.config import Settings

INIT = "from .dqn import DQN\nfrom .td3 import TD3\n\n__all__ = ['DQN', 'TD3']\n"

DQN = """\
import torch


class DQN:
    def __init__(self, actor, lr):
        self.actor = actor
        self.optimizer = torch.optim.Adam(actor.parameters(), lr=lr)
        self._update_impl = self.update

    def update(self, obs, actions):
        loss = (self.actor(obs) - actions).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def learn(self, experiences):
        loss = self._update_impl(experiences["obs"], experiences["action"])
        return loss.item()

    def act(self, obs):
        return self.actor(obs).argmax(-1)
"""

TD3 = """\
class TD3:
    def learn(self, experiences):
        return self.log(experiences)

    def log(self, experiences):
        print(len(experiences))
"""

# agilerl's shape: a helper of the training module, handed the agent, whose annotation is
# the module's alias of the algorithms it supports; a Protocol stub of `learn` beside it.
TRAIN = """\
from typing import Protocol

import torch

from rl.algorithms import DQN, TD3

SupportedOffPolicy = DQN | TD3


class NStepAgent(Protocol):
    def learn(self, experiences, n_experiences=None): ...


def _learn_from_buffer(agent: SupportedOffPolicy, sampler):
    experiences = sampler.sample(agent.batch_size)
    agent.learn(experiences)


def train(population, env, sampler, steps):
    for agent in population:
        obs = env.reset()
        for _ in range(steps):
            action = agent.act(torch.as_tensor(obs))
            obs = env.step(action.cpu())
            _learn_from_buffer(agent, sampler)
"""
TRAIN_LINE = 22


def _project(root: Path, train: str = TRAIN, dqn: str = DQN, td3: str = TD3) -> Path:
    package = root / "rl"
    (package / "algorithms").mkdir(parents=True, exist_ok=True)
    (package / "training").mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "training" / "__init__.py").write_text("")
    (package / "algorithms" / "__init__.py").write_text(INIT)
    (package / "algorithms" / "dqn.py").write_text(dqn)
    (package / "algorithms" / "td3.py").write_text(td3)
    (package / "training" / "train.py").write_text(train)
    return package / "training" / "train.py"


def _found(paths: list[Path], root: Path, cache: ResultCache | None = None) -> list[int]:
    settings = Settings(root=root, select=("XLA401", "XLA402"))
    report = api.check_paths(paths, settings, jobs=1, cache=cache)
    return sorted(d.start.row for d in report.diagnostics)


def test_parameter_annotated_with_an_alias_of_reexported_classes(tmp_path: Path) -> None:
    assert _found([_project(tmp_path)], tmp_path) == [TRAIN_LINE]


@pytest.mark.parametrize(
    "annotation",
    ["DQN", "Optional[DQN]", "Union[TD3, DQN]", "TD3 | DQN | None", "algorithms.DQN", '"DQN"'],
)
def test_other_annotations(tmp_path: Path, annotation: str) -> None:
    train = TRAIN.replace("agent: SupportedOffPolicy", f"agent: {annotation}").replace(
        "from typing import Protocol", "from typing import Optional, Protocol, Union"
    )
    train = train.replace("from rl.algorithms import DQN, TD3", "from rl import algorithms\n"
                          "from rl.algorithms import DQN, TD3")  # fmt: skip
    assert _found([_project(tmp_path, train=train)], tmp_path) == [TRAIN_LINE + 1]


TRAINER = """\
import torch

from rl.algorithms.dqn import DQN


class Trainer:
    def __init__(self, actor, agent: DQN):
        self.learner = DQN(actor, 1e-3)
        self.agent = agent

    def fit(self, batches):
        for step, batch in enumerate(batches):
            self.learner.learn(batch)

    def fit_handed(self, batches):
        for batch in batches:
            self.agent.learn(batch)

    def evaluate(self, batches):
        outs = []
        for batch in batches:
            outs.append(self.learner.act(batch["obs"]).cpu())
        return outs
"""


def test_instance_kept_in_an_attribute(tmp_path: Path) -> None:
    """Built in `__init__` (`self.learner = DQN(...)`) or handed in annotated (`self.agent
    = agent`); `act` trains nothing. (The file must spell a word of XLA401's text
    prefilter, `step` here, as any file it reports does.)"""
    _project(tmp_path)
    trainer = tmp_path / "rl" / "training" / "trainer.py"
    trainer.write_text(TRAINER)
    assert _found([trainer], tmp_path) == [12, 16]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The method only logs: TD3 alone.
        ("agent: SupportedOffPolicy", "agent: TD3"),
        # The parameter is rebound in the function: its annotation says nothing of it.
        ("    experiences = sampler", "    agent = sampler.agent\n    experiences = sampler"),
        # No annotation: nothing is known of the agent.
        ("agent: SupportedOffPolicy", "agent"),
        # A barrier every pass.
        ("            _learn_from_buffer(agent, sampler)\n",
         "            _learn_from_buffer(agent, sampler)\n            torch_xla.sync()\n"),
    ],
)  # fmt: skip
def test_hard_negatives(tmp_path: Path, old: str, new: str) -> None:
    assert old in TRAIN
    train = TRAIN.replace(old, new, 1).replace("import torch\n", "import torch\nimport torch_xla\n")
    if "torch_xla.sync" not in new:
        train = train.replace("import torch_xla\n", "")
    assert _found([_project(tmp_path, train=train)], tmp_path) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The other module syncs itself (it names XLA): its step may hold the barrier.
        ("import torch\n", "import torch\nimport torch_xla\n"),
        # `learn` loops over batches: an epoch, its own loop is the training loop.
        ('        loss = self._update_impl(experiences["obs"], experiences["action"])\n',
         '        for b in experiences:\n'
         '            loss = self._update_impl(b["obs"], b["action"])\n'),
        # The bound attribute holds no method that steps.
        ("        self._update_impl = self.update\n", "        self._update_impl = self.act\n"),
    ],
)  # fmt: skip
def test_hard_negatives_in_the_other_module(tmp_path: Path, old: str, new: str) -> None:
    assert old in DQN
    path = _project(tmp_path, dqn=DQN.replace(old, new, 1))
    assert _found([path], tmp_path) == []


GENERIC = """\
import torch

from rl.algorithms.dqn import DQN


class Trainer:
    def __init__(self, actor):
        self.algo = DQN(actor, 1e-3)

    def fit(self, batches):
        for step, batch in enumerate(batches):
            self.algo.update(batch["obs"], batch["action"])
"""


def test_generic_method_through_the_attribute(tmp_path: Path) -> None:
    """`update` is too common a name to resolve by itself; the attribute's class says
    which `update` runs. Assigned anything else as well, the attribute says nothing."""
    _project(tmp_path)
    trainer = tmp_path / "rl" / "training" / "trainer.py"
    trainer.write_text(GENERIC)
    assert _found([trainer], tmp_path) == [11]
    trainer.write_text(GENERIC + "\n    def swap(self, other):\n        self.algo = other\n")
    assert _found([trainer], tmp_path) == []


def test_generic_method_through_a_local(tmp_path: Path) -> None:
    """The same instance kept in a local every binding of which constructs it; rebound
    to something else as well, the name says nothing."""
    _project(tmp_path)
    script = tmp_path / "rl" / "training" / "script.py"
    local = (
        "import torch\n\nfrom rl.algorithms import DQN\n\n\n"
        "def fit(actor, batches):\n    algo = DQN(actor, 1e-3)\n"
        "    for step, batch in enumerate(batches):\n"
        '        algo.update(batch["obs"], batch["action"])\n'
    )
    script.write_text(local.replace("from rl.algorithms import", "from rl.algorithms.dqn import"))
    assert _found([script], tmp_path) == [8]
    script.write_text(local)  # the package's re-export
    assert _found([script], tmp_path) == [8]
    script.write_text(
        local.replace("from rl.algorithms import", "from rl.algorithms.dqn import")
        + "\n\ndef other(algo):\n    return algo\n"
    )
    assert _found([script], tmp_path) == []


def test_screen_and_warm_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _project(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    assert _found([path], tmp_path, cache) == [TRAIN_LINE]
    # Editing the class another module defines re-lints the caller on a warm run.
    dqn = tmp_path / "rl" / "algorithms" / "dqn.py"
    dqn.write_text(DQN.replace("        self.optimizer.step()\n", ""))
    assert _found([path], tmp_path, cache) == []
    dqn.write_text(DQN)
    assert _found([path], tmp_path, cache) == [TRAIN_LINE]
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")
    assert _found([path], tmp_path) == [TRAIN_LINE]


def test_fix_inserts_one_barrier_per_pass(tmp_path: Path) -> None:
    path = _project(tmp_path)
    settings = Settings(root=tmp_path, select=("XLA401",))
    api.fix_paths([path], settings, apply=True, jobs=1)
    fixed = path.read_text()
    assert fixed.count("torch_xla.sync()") == 1
    assert "            _learn_from_buffer(agent, sampler)\n            torch_xla.sync()\n" in fixed
    api.fix_paths([path], settings, apply=True, jobs=1)
    assert path.read_text() == fixed
    assert _found([path], tmp_path) == []
