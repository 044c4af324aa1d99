"""A log interval a settings object holds, counted by the default its class declares in
another module of the project (`config_fields.field_default`), through a package's
re-export; the module read is in the cache entry's depfile, so editing the default
re-lints the trainer."""

from __future__ import annotations

from pathlib import Path

from xlalint import api
from xlalint.analysis import config_fields, project_modules
from xlalint.cache import ResultCache
from xlalint.config import Settings

PARAMS = """\
from dataclasses import dataclass, field


@dataclass
class BaseParams:
    save_steps: int = 0


@dataclass
class TrainingParams(BaseParams):
    logging_steps: int = 50
    print_every: int = field(default=200)
    log_every: int = 5
    sync_every: int = None
"""

TRAINER = """\
import copy

import torch.nn.functional as F

from pkg.configs import TrainingParams


class Trainer:
    def __init__(self, model, optimizer, args: TrainingParams):
        self.model = model
        self.optimizer = optimizer
        self.params = copy.deepcopy(args)

    def train_epoch(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = F.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            if step % self.params.logging_steps == 0:
                print(loss.item())
            if step % self.params.print_every == 0:
                print(loss.item())
            if step % self.params.log_every == 0:
                print(loss.item())
            if step % self.params.sync_every == 0:
                print(loss.item())
"""


def _project(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    (package / "configs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "configs" / "__init__.py").write_text(
        "from pkg.configs.params import TrainingParams\n\n__all__ = ['TrainingParams']\n"
    )
    (package / "configs" / "params.py").write_text(PARAMS)
    (package / "trainer.py").write_text(TRAINER)
    project_modules.forget_layout()
    return package


def _findings(path: Path, cache: ResultCache | None = None) -> list[tuple[str, int]]:
    settings = Settings(root=path.parent, select=("XLA101",))
    report = api.check_paths([path], settings, jobs=1, cache=cache)
    return sorted((d.code, d.start.row) for d in report.diagnostics)


def test_field_defaults_through_a_reexport(tmp_path: Path) -> None:
    package = _project(tmp_path)
    trainer = str(package / "trainer.py")
    assert config_fields.field_default(trainer, "pkg.configs.TrainingParams", "logging_steps") == 50
    assert config_fields.field_default(trainer, "pkg.configs.TrainingParams", "print_every") == 200
    assert config_fields.field_default(trainer, "pkg.configs.TrainingParams", "save_steps") == 0
    assert config_fields.field_default(trainer, "pkg.configs.TrainingParams", "sync_every") is None
    assert config_fields.field_default(trainer, "pkg.configs.TrainingParams", "missing") is None
    assert config_fields.field_default(trainer, "pkg.configs.Other", "logging_steps") is None
    assert config_fields.field_default(trainer, "torch.optim.SGD", "lr") is None


def test_an_interval_of_a_settings_class_elsewhere_counts_by_its_default(tmp_path: Path) -> None:
    """Long defaults (50, `field(default=200)`) are amortised; a short one (5) or none
    (`None`) may be every step; editing the default re-lints the trainer."""
    package = _project(tmp_path)
    cache = ResultCache(tmp_path / "cache")
    assert _findings(package / "trainer.py", cache) == [("XLA101", 24), ("XLA101", 26)]
    params = package / "configs" / "params.py"
    params.write_text(PARAMS.replace("logging_steps: int = 50", "logging_steps: int = 1"))
    assert _findings(package / "trainer.py", cache) == [
        ("XLA101", 20), ("XLA101", 24), ("XLA101", 26)
    ]  # fmt: skip
