"""Which torch_xla release has which API, and how to spell an API at the targeted release.

Projects pin torch_xla (Colab and Kaggle images lag behind), so a fix must write what the
project's release has: `xm.mark_step()` before `torch_xla.sync()` existed, and the
API-modernization rules (XLA6xx) must call deprecated or removed only what is so at that
release. `target-version` in the config (`--target-version`) names the release; this module
answers "does T have X", "is X deprecated or removed at T" and "how is X written at T", so
that rules, fixes and messages never hold version knowledge of their own.

Every date here was read from the release's wheel (`def` or `@deprecated` in its sources);
`scripts/torch_xla_api_table.py` downloads the wheels and prints the table that
docs/target-version.md shows. This module imports nothing from xlalint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Release:
    """A torch_xla minor release: patch releases do not change the API."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


SUPPORTED = tuple(Release(2, minor) for minor in range(1, 10))
OLDEST = SUPPORTED[0]
LATEST = SUPPORTED[-1]

_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")


def parse_release(text: str) -> Release | None:
    """`"2.4"`, `"2.4.0"`, `"2.8.1"` -> 2.4 / 2.8; None for a release xlalint does not know."""
    match = _RELEASE.match(text.strip())
    if match is None:
        return None
    release = Release(int(match[1]), int(match[2]))
    return release if release in SUPPORTED else None


def supported_text() -> str:
    return ", ".join(str(release) for release in SUPPORTED)


@dataclass(frozen=True)
class History:
    """When an API appeared, started to warn, and disappeared (None: not in 2.1 .. 2.9)."""

    introduced: Release = OLDEST  # OLDEST: in every supported release
    deprecated: Release | None = None
    removed: Release | None = None

    def exists(self, target: Release) -> bool:
        return self.introduced <= target and not self.removed_at(target)

    def deprecated_at(self, target: Release) -> bool:
        return self.deprecated is not None and self.deprecated <= target and self.exists(target)

    def removed_at(self, target: Release) -> bool:
        return self.removed is not None and self.removed <= target


XLA_MODEL = "torch_xla.core.xla_model"
RUNTIME = "torch_xla.runtime"
METRICS = "torch_xla.debug.metrics"
XMP = "torch_xla.distributed.xla_multiprocessing"

IMPORT_TORCH_XLA = "import torch_xla"
IMPORT_XM = "import torch_xla.core.xla_model as xm"
IMPORT_XMP = "import torch_xla.distributed.xla_multiprocessing as xmp"


def _r(minor: int) -> Release:
    return Release(2, minor)


# The APIs xlalint's fixes, messages and XLA6xx rules rely on (checked in each wheel).
HISTORY: dict[str, History] = {
    # The flattened API: torch_xla/torch_xla.py, star-imported by torch_xla/__init__.py.
    "torch_xla.device": History(introduced=_r(3)),
    "torch_xla.sync": History(introduced=_r(4)),
    "torch_xla.launch": History(introduced=_r(5)),
    # `@deprecated("Use torch_xla.device instead")` / `("Use torch_xla.sync instead")`.
    f"{XLA_MODEL}.xla_device": History(deprecated=_r(8)),
    f"{XLA_MODEL}.mark_step": History(deprecated=_r(8)),
    # `xrt_world_size = deprecated(this_module, torch_xla.runtime.world_size, ...)` in 2.5.
    f"{XLA_MODEL}.xrt_world_size": History(deprecated=_r(5), removed=_r(7)),
    f"{XLA_MODEL}.get_ordinal": History(deprecated=_r(5), removed=_r(7)),
    f"{XLA_MODEL}.parse_xla_device": History(deprecated=_r(5), removed=_r(7)),
    f"{RUNTIME}.using_pjrt": History(removed=_r(5)),
    f"{RUNTIME}.world_size": History(),
    f"{RUNTIME}.global_ordinal": History(),
    f"{RUNTIME}.local_ordinal": History(),
    f"{XLA_MODEL}.save": History(),
    f"{XLA_MODEL}.optimizer_step": History(),
    f"{XMP}.spawn": History(),
    "torch_xla.distributed.parallel_loader.MpDeviceLoader": History(),
    "torch_xla.distributed.data_parallel.DataParallel": History(),
    f"{METRICS}.metrics_report": History(),
    f"{METRICS}.counter_names": History(),
    f"{METRICS}.counter_value": History(),
    f"{METRICS}.clear_counters": History(),
    f"{METRICS}.metric_names": History(),
    f"{METRICS}.metric_data": History(),
    f"{METRICS}.clear_metrics": History(),
    f"{METRICS}.executed_fallback_ops": History(introduced=_r(4)),
}

# torch_xla's precision environment variables, as its native library reads them: from
# 2.4 reading one prints "... will be deprecated after the 2.4 release"; from 2.5 the
# library no longer names the fp16 ones at all.
ENV_HISTORY: dict[str, History] = {
    "XLA_USE_BF16": History(deprecated=_r(4)),
    "XLA_DOWNCAST_BF16": History(deprecated=_r(4)),
    "XLA_USE_32BIT_LONG": History(deprecated=_r(4)),
    "XLA_USE_FP16": History(deprecated=_r(4), removed=_r(5)),
    "XLA_DOWNCAST_FP16": History(deprecated=_r(4), removed=_r(5)),
}

# Keyword arguments of `torch_xla.sync` and the release that added each (2.4's took none).
SYNC_KEYWORDS = {"wait": _r(5), "reset_scope": _r(8)}


def history(qualified: str) -> History:
    """What is known of `qualified`; an API not listed is taken to be in every release."""
    return HISTORY.get(qualified, History())


def exists(qualified: str, target: Release) -> bool:
    return history(qualified).exists(target)


def deprecated_at(qualified: str, target: Release) -> bool:
    return history(qualified).deprecated_at(target)


def removed_at(qualified: str, target: Release) -> bool:
    return history(qualified).removed_at(target)


# The flattened APIs, the import that binds each, and what releases before it write.
_FLAT = {
    "torch_xla.device": (IMPORT_TORCH_XLA, f"{XLA_MODEL}.xla_device", IMPORT_XM),
    "torch_xla.sync": (IMPORT_TORCH_XLA, f"{XLA_MODEL}.mark_step", IMPORT_XM),
    "torch_xla.launch": (IMPORT_TORCH_XLA, f"{XMP}.spawn", IMPORT_XMP),
}

DEVICE = "torch_xla.device"
BARRIER = "torch_xla.sync"
LAUNCH = "torch_xla.launch"


def api_at(qualified: str, target: Release) -> tuple[str, str]:
    """The API to write for `qualified` (one of the flattened `DEVICE`, `BARRIER`, `LAUNCH`)
    at `target`, and the import that binds its module: `torch_xla.sync` at 2.9, and
    `torch_xla.core.xla_model.mark_step` with `import torch_xla.core.xla_model as xm` at
    2.3, where `torch_xla.sync` does not exist yet. Each older form does the same call."""
    module_import, older, older_import = _FLAT[qualified]
    if exists(qualified, target):
        return qualified, module_import
    return older, older_import


# Message and fix-description text names torch_xla 2.9's APIs as `xm`/`torch_xla` users
# write them; before the release that added a flattened API, its older spelling.
_RESPELL = (
    (DEVICE, re.compile(r"\btorch_xla\.device\("), "xm.xla_device("),
    (BARRIER, re.compile(r"\btorch_xla\.sync\("), "xm.mark_step("),
    (LAUNCH, re.compile(r"\btorch_xla\.launch\("), "xmp.spawn("),
)


def respell(text: str, target: Release) -> str:
    """`text` (a message, hint or fix description) with each call of a flattened API the
    target lacks written the older way: `use torch_xla.sync()` -> `use xm.mark_step()`."""
    if target == LATEST:
        return text
    for qualified, pattern, older in _RESPELL:
        if not exists(qualified, target):
            text = pattern.sub(older, text)
    return text
