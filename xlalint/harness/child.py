"""Run one runtime case in this (fresh) process and print what it measured as JSON.

    python -m xlalint.harness.child CASE.py

A case is a module with `setup(device)` (builds inputs, seeded, returns a tuple of
arguments) and `run(*args)` (the code a rule is about; returns the outputs to compare).
The measurement window follows torch_xla's own advice: inputs are on the device and
synced before the counters are cleared, and a final `torch_xla.sync(wait=True)` inside the
window makes pending work count, so code without a barrier does not look free.

The parent sets PJRT_DEVICE and the other XLA variables before this process starts:
torch_xla reads them once, at import.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

# torch_xla.debug.metrics names, read after the window (absent means zero).
COUNTERS = ("ExecuteComputation", "UncachedCompile", "CachedCompile")
METRICS = ("TransferFromDeviceTime", "TransferToDeviceTime", "CompileTime")


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("xlalint_case", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["xlalint_case"] = module
    spec.loader.exec_module(module)
    return module


def _to_host(value: Any) -> Any:
    """Outputs as JSON-able Python values (tensors as nested lists with their dtype)."""
    import torch

    if isinstance(value, torch.Tensor):
        host = value.detach().cpu()
        return {"tensor": host.float().tolist() if host.is_floating_point() else host.tolist(),
                "dtype": str(host.dtype), "shape": list(host.shape)}  # fmt: skip
    if isinstance(value, dict):
        return {str(k): _to_host(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_host(v) for v in value]
    if isinstance(value, float | int | bool | str) or value is None:
        return value
    return repr(value)


def metrics() -> dict[str, Any]:
    """The counts verify and profile report, from torch_xla's metrics since the last clear."""
    import torch_xla.debug.metrics as met

    counters = {name: met.counter_value(name) or 0 for name in COUNTERS}
    fallbacks = {
        name: met.counter_value(name) or 0
        for name in met.counter_names()
        if name.startswith("aten::")
    }
    samples = {name: (met.metric_data(name) or (0, 0.0, []))[0] for name in METRICS}
    graph = met.metric_data("TensorsGraphSize")
    graph_sizes = [int(value) for _, value in graph[2]] if graph else []
    return {
        "executions": counters["ExecuteComputation"],
        "uncached_compiles": counters["UncachedCompile"],
        "cached_compiles": counters["CachedCompile"],
        "device_to_host": samples["TransferFromDeviceTime"],
        "host_to_device": samples["TransferToDeviceTime"],
        "compile_samples": samples["CompileTime"],
        "max_graph_size": max(graph_sizes, default=0),
        "fallbacks": fallbacks,
    }


def measure(path: Path) -> dict[str, Any]:
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met

    case = _load(path)
    device = torch_xla.device()
    torch.manual_seed(0)
    args = case.setup(device)
    torch_xla.sync()
    xm.wait_device_ops()
    met.clear_all()
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # a deprecated API warns in the run
        warnings.simplefilter("always")
        outputs = case.run(*args)
        torch_xla.sync(wait=True)
    elapsed = time.perf_counter() - started
    measured = metrics()  # before the outputs are copied to the host: that copy is not the case's
    measured["warnings"] = len(caught)
    measured["warning_messages"] = sorted(
        {f"{w.category.__name__}: {(str(w.message).splitlines() or [''])[0]}" for w in caught}
    )
    return {"ok": True, "outputs": _to_host(outputs), "metrics": measured, "seconds": elapsed}


def main() -> None:
    path = Path(sys.argv[1])
    try:
        result = measure(path)
    except BaseException as error:  # the case's own failure is a result, not a crash
        frames = traceback.extract_tb(error.__traceback__)
        where = next((f for f in reversed(frames) if Path(f.filename) == path), None)
        result = {
            "ok": False,
            "error": f"{type(error).__name__}: {error}".splitlines()[0],
            "line": where.lineno if where else None,
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
