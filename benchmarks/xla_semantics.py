"""What CUDA-era APIs, `multinomial`, distributed backends, growing tensors, host reads in a loop
and `torch.compile` do on an XLA device: the measurements behind XLA303, XLA204, XLA306, XLA210,
XLA401/XLA402 and XLA307's docs.

Each case runs in a fresh process on torch_xla's CPU device (`PJRT_DEVICE=CPU`), one at a
time, and reports whether it raised (the exception's type and first line), what it
returned, the warnings it gave, and torch_xla's counts over the measured window:
device-to-host transfers (`TransferFromDeviceTime` samples), `aten::_local_scalar_dense`,
executions and CPU fallbacks (`aten::*` counters).

    .venv/bin/python benchmarks/xla_semantics.py [--group GROUP] [--case TEXT]

Groups: cuda, multinomial, dist, growth, barrier, compile.

Prints one markdown table per group. Needs torch 2.9.0 and torch-xla 2.9.0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

# The child's frame: imports, a measured window, and one JSON line on stdout.
_PRELUDE = """
import json, warnings
warnings.simplefilter("always")
import torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
dev = torch_xla.device()
torch.manual_seed(0)
out = {}
caught = []
def _window_start():
    torch_xla.sync(); xm.wait_device_ops(); met.clear_all()
def _counts():
    torch_xla.sync(wait=True)
    d2h = met.metric_data("TransferFromDeviceTime")
    return {
        "d2h": d2h[0] if d2h else 0,
        "scalar_reads": met.counter_value("aten::_local_scalar_dense") or 0,
        "executions": met.counter_value("ExecuteComputation") or 0,
        "uncached_compiles": met.counter_value("UncachedCompile") or 0,
        "fallbacks": sorted(
            n for n in met.counter_names() if n.startswith("aten::") and met.counter_value(n)
        ),
    }
"""
_POSTLUDE = """
print("RESULT " + json.dumps(out, default=str))
"""

# Five training steps of a small model with the scaler built by `{scaler}`.
_SCALER_STEPS = """
model = torch.nn.Linear(16, 4).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16).to(dev), torch.randn(8, 4).to(dev)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    scaler = {scaler}
caught += [str(m.message) for m in w]
out["enabled"] = scaler.is_enabled()
_window_start()
for _ in range(5):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    torch_xla.sync()
out.update(_counts())
"""
_PLAIN_STEPS = """
model = torch.nn.Linear(16, 4).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16).to(dev), torch.randn(8, 4).to(dev)
_window_start()
for _ in range(5):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    torch_xla.sync()
out.update(_counts())
"""
# A matmul on the XLA device under the context manager `{ctx}`: the dtype it runs in.
_AUTOCAST = """
a, b = torch.randn(8, 8).to(dev), torch.randn(8, 8).to(dev)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    with {ctx}:
        out["dtype"] = (a @ b).dtype
caught += [str(m.message) for m in w]
"""
_DECORATED = """
from torch.amp import autocast
@autocast("cuda", enabled=False)
def f(a, b):
    return a @ b
a, b = torch.randn(8, 8).to(dev), torch.randn(8, 8).to(dev)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out["dtype"] = f(a, b).dtype
caught += [str(m.message) for m in w]
"""


def _call(expr: str) -> str:
    """A case that evaluates `expr` and records its value and warnings."""
    return f"""
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out["value"] = repr({expr})
caught += [str(m.message) for m in w]
"""


def _statement(stmt: str) -> str:
    return f"""
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
{textwrap.indent(stmt, "    ")}
caught += [str(m.message) for m in w]
out["value"] = "ran"
"""


def _multinomial(args: str) -> str:
    return f"""
p = torch.rand(4, 16).to(dev)
gen = torch.Generator().manual_seed(0)
_window_start()
for _ in range(5):
    s = torch.multinomial(p, {args})
    torch_xla.sync()
out.update(_counts())
out["shape"] = tuple(s.shape)
"""


_DIST = """
import torch.distributed as dist
{setup}
dist.init_process_group({args})
out["backend"] = dist.get_backend()
t = torch.ones(4, device=dev)
dist.all_reduce(t)
out["value"] = t.cpu().tolist()
dist.destroy_process_group()
"""
_TCP = "init_method='tcp://127.0.0.1:29531', rank=0, world_size=1"

_COMPILE = """
def f(x):
    return torch.sin(x) * 2 + x.sum()
x = torch.randn(16).to(dev)
expected = f(x).cpu()
g = torch.compile(f{args})
got = g(x).cpu()
out["same_output"] = bool(torch.allclose(expected, got))
"""

_GROWTH = """
w = torch.randn(8, 8).to(dev)
x = torch.randn(2, 8).to(dev)
_window_start()
for step in range(5):
    y = torch.tanh(x[-1:] @ w)
    {grow}
    torch_xla.sync()
out.update(_counts())
out["shape"] = tuple(x.shape)
"""

# A loop whose state carries from step to step, with a host read of it every step: the read
# executes only the read value's graph, so the state stays pending and its graph grows.
_READ_EACH_STEP = """
x = torch.ones(4, device=dev)
_window_start()
for step in range(8):
    x = x * 1.01 + 0.5
    flag = (x.sum() > 0).cpu()
    {barrier}
out.update(_counts())
"""

# The same loop reading the carried state itself: `.cpu()` (and `.tolist()`) leave it as
# device data, so nothing is pending; `.item()` and `float()` read its value but leave its
# own graph pending.
_READ_OF_THE_STATE = """
x = torch.ones({shape}, device=dev)
_window_start()
for step in range(8):
    x = x * 1.01 + 0.5
    value = {read}
out.update(_counts())
"""

# An evaluation-style total on the device, with each step's value read on the host: the
# total keeps every step's graph pending, so the loop run for 6, 7, 8 and 9 steps compiles
# the total's graph anew for each count.
_TOTAL_PAST_A_READ = """
w = torch.randn(16, 16).to(dev)
batches = [torch.randn(4, 16).to(dev) for _ in range(9)]
_window_start()
for n in (6, 7, 8, 9):
    total = torch.zeros((), device=dev)
    for x in batches[:n]:
        loss = torch.tanh(x @ w).mean()
        total = total + loss
        loss.item()
        {barrier}
    total.item()
out.update(_counts())
"""

# The rewrite: a tensor of the final length, written at a position kept on the device.
_PREALLOCATED = """
w = torch.randn(8, 8).to(dev)
x = torch.cat((torch.randn(2, 8), torch.zeros(5, 8))).to(dev)
pos = torch.tensor([1]).to(dev)
_window_start()
for step in range(5):
    y = torch.tanh(x.index_select(0, pos) @ w)
    pos = pos + 1
    x.index_copy_(0, pos, y)
    torch_xla.sync()
out.update(_counts())
out["shape"] = tuple(x.shape)
"""

CASES: dict[str, dict[str, str]] = {
    "cuda": {
        "torch.cuda.synchronize()": _call("torch.cuda.synchronize()"),
        "torch.cuda.set_device(0)": _call("torch.cuda.set_device(0)"),
        "torch.cuda.current_device()": _call("torch.cuda.current_device()"),
        "torch.cuda.get_device_name(0)": _call("torch.cuda.get_device_name(0)"),
        "torch.cuda.get_device_capability()": _call("torch.cuda.get_device_capability()"),
        "torch.cuda.get_device_properties(0)": _call("torch.cuda.get_device_properties(0)"),
        "torch.cuda.device_count()": _call("torch.cuda.device_count()"),
        "torch.cuda.manual_seed(0)": _call("torch.cuda.manual_seed(0)"),
        "torch.cuda.manual_seed_all(0)": _call("torch.cuda.manual_seed_all(0)"),
        "torch.cuda.seed()": _call("torch.cuda.seed()"),
        "torch.cuda.empty_cache()": _call("torch.cuda.empty_cache()"),
        "torch.cuda.memory_allocated()": _call("torch.cuda.memory_allocated()"),
        "torch.cuda.max_memory_allocated()": _call("torch.cuda.max_memory_allocated()"),
        "torch.cuda.memory_reserved()": _call("torch.cuda.memory_reserved()"),
        "torch.cuda.reset_peak_memory_stats()": _call("torch.cuda.reset_peak_memory_stats()"),
        "torch.cuda.mem_get_info()": _call("torch.cuda.mem_get_info()"),
        "torch.cuda.memory_summary()": _call("len(torch.cuda.memory_summary())"),
        "torch.cuda.Stream()": _call("torch.cuda.Stream()"),
        "torch.cuda.current_stream()": _call("torch.cuda.current_stream()"),
        "with torch.cuda.stream(None)": _statement("with torch.cuda.stream(None):\n    pass"),
        "torch.cuda.Event(enable_timing=True)": _call("torch.cuda.Event(enable_timing=True)"),
        "torch.cuda.Event().record()": _call("torch.cuda.Event(enable_timing=True).record()"),
        "torch.cuda.is_bf16_supported()": _call("torch.cuda.is_bf16_supported()"),
        "torch.cuda.get_rng_state()": _call("torch.cuda.get_rng_state()"),
        "torch.cuda.set_rng_state(torch.get_rng_state())": _call(
            "torch.cuda.set_rng_state(torch.get_rng_state())"
        ),
        "torch.cuda.get_arch_list()": _call("torch.cuda.get_arch_list()"),
        "torch.cuda.get_rng_state_all()": _call("torch.cuda.get_rng_state_all()"),
        "torch.cuda.get_gencode_flags()": _call("torch.cuda.get_gencode_flags()"),
        "torch.cuda.get_allocator_backend()": _call("torch.cuda.get_allocator_backend()"),
        "torch.cuda.list_gpu_processes()": _call("torch.cuda.list_gpu_processes()"),
        "torch.cuda.ipc_collect()": _call("torch.cuda.ipc_collect()"),
        "torch.cuda.init()": _call("torch.cuda.init()"),
        "torch.cuda.initial_seed()": _call("torch.cuda.initial_seed()"),
        "torch.cuda.is_current_stream_capturing()": _call(
            "torch.cuda.is_current_stream_capturing()"
        ),
        "torch.cuda.CUDAGraph()": _call("torch.cuda.CUDAGraph()"),
        "torch.cuda.set_per_process_memory_fraction(0.5)": _call(
            "torch.cuda.set_per_process_memory_fraction(0.5)"
        ),
        "torch.cuda.reset_max_memory_allocated()": _call("torch.cuda.reset_max_memory_allocated()"),
        "with torch.cuda.device(0)": _statement("with torch.cuda.device(0):\n    pass"),
        "torch.cuda.nvtx.range_push('step')": _call("torch.cuda.nvtx.range_push('step')"),
        "@torch.cuda.amp.custom_fwd, called": _statement(
            "@torch.cuda.amp.custom_fwd\ndef f(a):\n    return a * 2\nf(torch.ones(2).to(dev))"
        ),
        "torch.backends.cudnn.benchmark = True": _statement(
            "torch.backends.cudnn.benchmark = True"
        ),
        "torch.backends.cudnn.deterministic = True": _statement(
            "torch.backends.cudnn.deterministic = True"
        ),
        "torch.backends.cuda.matmul.allow_tf32 = True": _statement(
            "torch.backends.cuda.matmul.allow_tf32 = True"
        ),
        'torch.set_default_tensor_type("torch.cuda.FloatTensor")': _call(
            'torch.set_default_tensor_type("torch.cuda.FloatTensor")'
        ),
        'set_default_tensor_type("torch.cuda.FloatTensor"), then torch.ones(2)': _statement(
            'torch.set_default_tensor_type("torch.cuda.FloatTensor")\ntorch.ones(2)'
        ),
        "x.type(torch.cuda.FloatTensor)": _call(
            "torch.ones(2).to(dev).type(torch.cuda.FloatTensor)"
        ),
        "with torch.cuda.amp.autocast()": _AUTOCAST.format(ctx="torch.cuda.amp.autocast()"),
        'with torch.autocast("cuda", dtype=torch.bfloat16)': _AUTOCAST.format(
            ctx='torch.autocast("cuda", dtype=torch.bfloat16)'
        ),
        "with torch.cuda.amp.autocast(enabled=False)": _AUTOCAST.format(
            ctx="torch.cuda.amp.autocast(enabled=False)"
        ),
        '@autocast("cuda", enabled=False)': _DECORATED,
        'with torch.autocast("xla", dtype=torch.bfloat16) (reference)': _AUTOCAST.format(
            ctx='torch.autocast("xla", dtype=torch.bfloat16)'
        ),
        "train 5 steps, no scaler (reference)": _PLAIN_STEPS,
        "train 5 steps, torch.cuda.amp.GradScaler()": _SCALER_STEPS.format(
            scaler="torch.cuda.amp.GradScaler()"
        ),
        'train 5 steps, torch.amp.GradScaler("cuda")': _SCALER_STEPS.format(
            scaler='torch.amp.GradScaler("cuda")'
        ),
        "train 5 steps, torch.GradScaler()": _SCALER_STEPS.format(scaler="torch.GradScaler()"),
    },
    "multinomial": {
        "multinomial(p, 1)": _multinomial("1"),
        "multinomial(p, 4)": _multinomial("4"),
        "multinomial(p, 1, replacement=True)": _multinomial("1, replacement=True"),
        "multinomial(p, 4, replacement=True)": _multinomial("4, replacement=True"),
        "multinomial(p, 1, generator=gen)": _multinomial("1, generator=gen"),
        "multinomial(p, 1, replacement=True, generator=gen)": _multinomial(
            "1, replacement=True, generator=gen"
        ),
        "multinomial(p, 4, replacement=True, generator=gen)": _multinomial(
            "4, replacement=True, generator=gen"
        ),
    },
    "dist": {
        'init_process_group("xla", init_method="xla://")': _DIST.format(
            setup="import torch_xla.distributed.xla_backend",
            args='"xla", init_method="xla://"',
        ),
        'init_process_group("nccl", world_size=1)': _DIST.format(setup="", args=f'"nccl", {_TCP}'),
        'init_process_group(backend="nccl") from env (world size 1)': _DIST.format(
            setup="import os; os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='29532',"
            " RANK='0', WORLD_SIZE='1')",
            args='backend="nccl"',
        ),
        'init_process_group(backend="xla") from env (world size 1)': _DIST.format(
            setup="import torch_xla.distributed.xla_backend, os; os.environ.update("
            "MASTER_ADDR='127.0.0.1', MASTER_PORT='29533', RANK='0', WORLD_SIZE='1')",
            args='backend="xla"',
        ),
        'init_process_group("gloo", world_size=1)': _DIST.format(setup="", args=f'"gloo", {_TCP}'),
    },
    "growth": {
        "x = torch.cat((x, y), 0), 5 steps": _GROWTH.format(grow="x = torch.cat((x, y), 0)"),
        "preallocated x, x.index_copy_(0, pos, y), 5 steps": _PREALLOCATED,
    },
    "barrier": {
        "a host read of the carried state every step, no barrier, 8 steps": _READ_EACH_STEP.format(
            barrier="pass"
        ),
        "the same with torch_xla.sync() every step (reference)": _READ_EACH_STEP.format(
            barrier="torch_xla.sync()"
        ),
        "x.cpu() of the carried state itself every step, no barrier, 8 steps": (
            _READ_OF_THE_STATE.format(shape="4", read="x.cpu()")
        ),
        "x.tolist() of the carried state itself every step, no barrier, 8 steps": (
            _READ_OF_THE_STATE.format(shape="4", read="x.tolist()")
        ),
        "x.item() of the carried 0-dim state itself every step, no barrier, 8 steps": (
            _READ_OF_THE_STATE.format(shape="()", read="x.item()")
        ),
        "float(x) of the carried 0-dim state itself every step, no barrier, 8 steps": (
            _READ_OF_THE_STATE.format(shape="()", read="float(x)")
        ),
        "a device total with each step's loss.item() read, no barrier, 6, 7, 8, 9 steps": (
            _TOTAL_PAST_A_READ.format(barrier="pass")
        ),
        "the device total with torch_xla.sync() every step (reference)": (
            _TOTAL_PAST_A_READ.format(barrier="torch_xla.sync()")
        ),
    },
    "compile": {
        "torch.compile(f)": _COMPILE.format(args=""),
        'torch.compile(f, backend="inductor")': _COMPILE.format(args=', backend="inductor"'),
        'torch.compile(f, backend="openxla")': _COMPILE.format(args=', backend="openxla"'),
    },
}


def run_case(body: str) -> dict[str, object]:
    """Run one case in a fresh process; its outcome as a dict."""
    code = (
        _PRELUDE
        + "try:\n"
        + textwrap.indent(body, "    ")
        + (
            "\nexcept BaseException as error:\n"
            "    out['raised'] = type(error).__name__ + ': ' + (str(error).strip().splitlines()"
            " or [''])[0][:160]\n"
            "out['warnings'] = sorted({m.splitlines()[0][:120] for m in caught})\n"
        )
        + _POSTLUDE
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"raised": f"process exited {proc.returncode}: {tail[:160]}"}


def _cell(result: dict[str, object]) -> tuple[str, str, str]:
    raised = str(result.get("raised", "")).split(". ")[0]  # the first sentence
    outcome = f"raises `{raised}`" if raised else "runs"
    shown = {k: v for k, v in result.items() if k not in ("raised", "warnings")}
    warned = "; ".join(result.get("warnings", [])) or "-"  # type: ignore[arg-type]
    return outcome, json.dumps(shown) if shown else "-", warned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", choices=sorted(CASES), action="append")
    parser.add_argument(
        "--case", action="append", help="run only cases whose name contains this (repeatable)"
    )
    args = parser.parse_args()
    for group in args.group or list(CASES):
        print(f"\n### {group}\n")
        print("| case | outcome | result | warnings |")
        print("|---|---|---|---|")
        for name, body in CASES[group].items():
            if args.case and not any(part in name for part in args.case):
                continue
            outcome, shown, warned = _cell(run_case(body))
            print(f"| `{name}` | {outcome} | {shown} | {warned} |", flush=True)


if __name__ == "__main__":
    main()
