"""torch_xla names that 2.9 renamed, removed, deprecated or keeps private, and what replaces them.

The API modernization rules (family 6) look a reference's qualified name up here; the
import resolver uses `modernize` so that code still importing the pre-1.0 `torch_xla_py`
package is understood as the torch_xla modules it meant. Every entry was checked against the
torch_xla 2.9.0 wheel's sources (see each rule's "Runtime evidence"); the release in which
each one was deprecated or removed is `xla_api`'s to say (the rules ask it for the target).

This module imports nothing from xlalint but `xla_api` (which imports nothing), so the
import resolver can depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlalint.analysis.xla_api import BARRIER, DEVICE, IMPORT_TORCH_XLA, XLA_MODEL, history

LEGACY_PACKAGE = "torch_xla_py"

# The package was called `torch_xla_py` until 2019; each of its modules and where it lives
# in torch_xla 2.9. Modules that have no successor (`xla_dist`, the XRT launcher) are absent.
LEGACY_MODULES: dict[str, str] = {
    "torch_xla_py.xla_model": "torch_xla.core.xla_model",
    "torch_xla_py.xla_env_vars": "torch_xla.core.xla_env_vars",
    "torch_xla_py.data_parallel": "torch_xla.distributed.data_parallel",
    "torch_xla_py.parallel_loader": "torch_xla.distributed.parallel_loader",
    "torch_xla_py.xla_multiprocessing": "torch_xla.distributed.xla_multiprocessing",
    "torch_xla_py.utils": "torch_xla.utils.utils",
    "torch_xla_py.keyd_queue": "torch_xla.utils.keyd_queue",
    "torch_xla_py.metrics_saver": "torch_xla.debug.metrics_saver",
    "torch_xla_py.graph_saver": "torch_xla.debug.graph_saver",
    "torch_xla_py.model_comparator": "torch_xla.debug.model_comparator",
}


def modern_module(dotted: str) -> str | None:
    """`torch_xla_py.xla_model.mark_step` -> `torch_xla.core.xla_model.mark_step`; None when
    `dotted` is not under a known `torch_xla_py` module."""
    if not dotted.startswith(LEGACY_PACKAGE + "."):
        return None
    module, _, rest = dotted.partition(".")
    leaf, _, rest = rest.partition(".")
    new = LEGACY_MODULES.get(f"{module}.{leaf}")
    if new is None:
        return None
    return f"{new}.{rest}" if rest else new


def modernize(dotted: str) -> str:
    """`dotted` with a known `torch_xla_py` prefix replaced; anything else unchanged."""
    return modern_module(dotted) or dotted


@dataclass(frozen=True)
class Replacement:
    """An old torch_xla API and what to write instead.

    `new` is None when nothing public replaces it; `module_import` is the import a fix adds
    when the file does not yet name `new`'s module."""

    old: str
    new: str | None
    module_import: str = ""
    hint: str = ""


IMPORT_RUNTIME = "import torch_xla.runtime as xr"
IMPORT_METRICS = "import torch_xla.debug.metrics as met"

# Deprecated in 2.8 (`typing_extensions.deprecated`: a DeprecationWarning on every call).
XLA_DEVICE = Replacement(f"{XLA_MODEL}.xla_device", DEVICE, IMPORT_TORCH_XLA)
MARK_STEP = Replacement(f"{XLA_MODEL}.mark_step", BARRIER, IMPORT_TORCH_XLA)

# Gone from torch_xla 2.9: AttributeError on use, ImportError when imported by name.
REMOVED: dict[str, Replacement] = {
    r.old: r
    for r in (
        Replacement(f"{XLA_MODEL}.xrt_world_size", "torch_xla.runtime.world_size", IMPORT_RUNTIME),
        Replacement(f"{XLA_MODEL}.get_ordinal", "torch_xla.runtime.global_ordinal", IMPORT_RUNTIME),
        Replacement(
            f"{XLA_MODEL}.parse_xla_device",
            None,
            hint=f"removed in {history(f'{XLA_MODEL}.parse_xla_device').removed} with no "
            "public successor: split the `'TPU:0'` string yourself",
        ),
        Replacement(
            "torch_xla.runtime.using_pjrt",
            None,
            hint=f"removed in {history('torch_xla.runtime.using_pjrt').removed}: PJRT is the "
            "only runtime, so the answer is always `True`",
        ),
    )
}

# The torch_xla 2.9 module whose only public class is the legacy thread-based replicator.
DATA_PARALLEL = "torch_xla.distributed.data_parallel.DataParallel"

# `torch_xla._XLAC` metrics functions and the public torch_xla.debug.metrics function that
# wraps each one with the same arguments and result.
_METRICS = "torch_xla.debug.metrics"
PRIVATE_METRICS: dict[str, Replacement] = {
    f"torch_xla._XLAC.{private}": Replacement(
        f"torch_xla._XLAC.{private}", f"{_METRICS}.{public}" if public else None, IMPORT_METRICS
    )
    for private, public in (
        ("_xla_metrics_report", "metrics_report"),
        ("_xla_counter_names", "counter_names"),
        ("_xla_counter_value", "counter_value"),
        ("_clear_xla_counters", "clear_counters"),
        ("_xla_metric_names", "metric_names"),
        ("_xla_metric_data", "metric_data"),
        ("_clear_xla_metrics", "clear_metrics"),
        ("_get_executed_fallback_ops", "executed_fallback_ops"),
        # The public wrapper replaces empty name lists with its defaults: not the same call.
        ("_short_xla_metrics_report", None),
    )
}


def private_metrics(qualified: str) -> Replacement | None:
    """The entry for `torch_xla._XLAC.<fn>`, also when `_XLAC` was imported on its own."""
    if qualified.startswith("_XLAC."):
        qualified = "torch_xla." + qualified
    return PRIVATE_METRICS.get(qualified)
