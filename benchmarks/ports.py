"""Does one `xlalint fix` port a CUDA-style script to XLA? Measure it on real scripts.

On demand, not part of the test suite (it downloads packages and takes minutes):

    python benchmarks/ports.py                       # every script, table on stdout
    python benchmarks/ports.py --only mnist_cuda,dcgan_cuda
    python benchmarks/ports.py --write               # also refresh the table in PORTS.md

Each script runs for a few steps on synthetic data in three versions, each in a copy of its
folder: as written (on the CPU: it does not know XLA), after `xlalint fix --apply`, and after
`xlalint fix --apply --unsafe-fixes`. The fixed versions run under `xlalint profile`'s own
runner on the XLA CPU device (`PJRT_DEVICE=CPU`), twice: for N steps and for 2N steps. The
difference between the two runs is what N more steps cost once warmed up: compilations
(flat means 0), graph executions and device-to-host transfers per step, so one-off work
(start-up, the first compilations, the end-of-epoch evaluation) cancels out.

Scripts come from two places. `benchmarks/ports/*.py` are written in the style of the
classic CUDA examples (device ladders, `--no-cuda`/`--cuda` flags, `args.gpu`, AMP,
checkpoints). The others are pinned sources, downloaded with pip into a cache outside the
repository (`~/.cache/xlalint-ports`, `--cache`), with the packages they import installed
there (`pip install --no-deps --target`), never into the running environment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from xlalint.api import fix_paths  # noqa: E402
from xlalint.config import find_settings  # noqa: E402
from xlalint.harness.fix_verify import compare_printed  # noqa: E402
from xlalint.harness.profile import Profile, profile  # noqa: E402

CACHE = Path.home() / ".cache" / "xlalint-ports"
WRITTEN = HERE / "ports"
IGNITE = "pytorch-ignite==0.5.5"  # its sdist ships examples/
# What the pinned examples import besides torch: installed into the cache, never the venv.
DEPENDENCIES = ("pytorch-ignite==0.5.5", "torchvision==0.24.0", "tqdm==4.70.1", "pillow==13.0.0")
# A run whose largest graph is this small did not trace a model: the model is elsewhere.
MODEL_GRAPH_NODES = 50
VARIANTS = ("as written", "fix --apply", "--unsafe-fixes")
# A run that compiles every step (a graph that grows without a barrier) can take hours.
TIMEOUT = 300.0

# The runs' sitecustomize. As written, a script runs as on the machine it was written for:
# torch_xla is not importable (libraries that probe for it, like ignite and
# `torch.cuda.amp`, take their non-XLA path). Where a port asks, torchvision's MNIST is
# FakeData of the same shape (no network here).
SHIM = """\
import os

if os.environ.get("XLALINT_PORTS_NO_TORCH_XLA"):
    from importlib.machinery import PathFinder

    _find_spec = PathFinder.find_spec

    def _no_torch_xla(name, path=None, target=None):
        if name.partition(".")[0] in ("torch_xla", "_XLAC"):
            return None
        return _find_spec(name, path, target)

    PathFinder.find_spec = staticmethod(_no_torch_xla)

if os.environ.get("XLALINT_PORTS_FAKE_MNIST"):
    import torchvision.datasets

    class MNIST(torchvision.datasets.FakeData):
        def __init__(self, root=None, train=True, transform=None, download=False, **kwargs):
            size = int(os.environ["XLALINT_PORTS_FAKE_MNIST"]) if train else 64
            super().__init__(size=size, image_size=(1, 28, 28), num_classes=10,
                             transform=transform, random_offset=0 if train else 1_000_000)

    torchvision.datasets.MNIST = MNIST
"""


@dataclass(frozen=True)
class Port:
    """One script: where it comes from, and its command line for a number of steps."""

    name: str
    origin: str
    folder: Callable[[Path], Path]  # the folder to copy (from the cache for pinned sources)
    script: str  # relative to the folder
    # For this many training steps, writing into a fresh output folder (relative to the
    # script's folder; each run gets its own: scripts may refuse a folder that is not empty).
    arguments: Callable[[int, str], list[str]]
    steps: int  # N: measured at N and 2N steps
    environment: Callable[[int], dict[str, str]] = lambda steps: {}
    ci: bool = False  # among the smallest: tests/test_ports.py runs it
    # Installed packages (from the cache's deps) copied beside the script and fixed with it:
    # where the library itself calls torch_xla APIs that torch_xla 2.9 removed.
    libraries: tuple[str, ...] = ()
    # Printed text that differs from run to run (timings): left out of the comparison.
    unstable: str | None = None


def _written(_: Path) -> Path:
    return WRITTEN


def _ignite(example: str) -> Callable[[Path], Path]:
    return lambda cache: cache / "src" / "pytorch_ignite-0.5.5" / "examples" / example


PORTS = (
    Port(
        "mnist_cuda", "benchmarks/ports/mnist_cuda.py (classic MNIST example: `--no-cuda`, "
        "`use_cuda`/`use_mps` ladder)", _written, "mnist_cuda.py",
        lambda n, out: ["--synthetic", "--train-size", str(32 * n), "--test-size", "64",
                   "--batch-size", "32", "--test-batch-size", "64", "--epochs", "1",
                   "--log-interval", "1", "--save-model"],
        steps=4, ci=True,
    ),
    Port(
        "dcgan_cuda", "benchmarks/ports/dcgan_cuda.py (classic DCGAN example: `--cuda`, "
        "`cuda:0 if opt.cuda else cpu`, per-step `.item()` prints)", _written, "dcgan_cuda.py",
        lambda n, out: ["--dataset", "fake", "--fake-size", str(32 * n), "--batchSize", "32",
                        "--niter", "1", "--nz", "16", "--ngf", "8", "--ndf", "8",
                        "--outf", out, "--manualSeed", "1"],
        steps=4, ci=True,
    ),
    Port(
        "imagenet_gpu", "benchmarks/ports/imagenet_gpu.py (classic ImageNet example: "
        "`args.gpu`, `model.cuda(args.gpu)`, AMP `GradScaler`, checkpoints, `--dummy`)",
        _written, "imagenet_gpu.py",
        lambda n, out: ["--dummy", "--dummy-size", str(32 * n), "-b", "32", "--epochs", "1",
                   "--amp", "--seed", "0", "-p", "1"],
        steps=4, unstable=r"Time\s+[\d.]+ \(\s*[\d.]+\)",
    ),
    Port(
        "word_lm_cuda", "benchmarks/ports/word_lm_cuda.py (classic word-language-model "
        "example: `--cuda`/`--mps`, BPTT slices, manual SGD, `clip_grad_norm_`)",
        _written, "word_lm_cuda.py",
        # 8 sequences of 16 tokens per step, plus the one token each target is shifted by.
        lambda n, out: ["--synthetic-tokens", str(8 * (16 * n + 1)), "--epochs", "1",
                   "--bptt", "16", "--batch_size", "8", "--emsize", "32", "--nhid", "32",
                   "--vocab", "500", "--log-interval", "2"],
        steps=4, unstable=r"ms/batch\s+[\d.]+",
    ),
    Port(
        "ignite_dcgan", f"{IGNITE} sdist: examples/gan/dcgan.py (`--no-cuda`, "
        "`cpu if ... else cuda:0`, an ignite `Engine`, `--dataset fake`)",
        _ignite("gan"), "dcgan.py",
        # FakeData holds 256 images: 4 steps of 64 per epoch.
        lambda n, out: ["--dataset", "fake", "--dataroot", "unused", "--batch-size", "64",
                        "--epochs", str(n // 4), "--workers", "0", "--z-dim", "16",
                        "--g-filters", "8", "--d-filters", "8", "--seed", "1",
                        "--output-dir", out],
        steps=4, libraries=("ignite",), unstable=r"\d+(\.\d+)?(it/s|s/it)|\[[\d:<,]+",
    ),
    Port(
        "ignite_mnist", f"{IGNITE} sdist: examples/mnist/mnist.py (`cpu` unless "
        "`torch.cuda.is_available()`, ignite's supervised trainer and evaluator; MNIST "
        "replaced by torchvision's FakeData)", _ignite("mnist"), "mnist.py",
        lambda n, out: ["--batch_size", "32", "--val_batch_size", "64", "--epochs", "1",
                   "--log_interval", "1"],
        steps=4, libraries=("ignite",), unstable=r"took [\d.]+ seconds",
        environment=lambda n: {"XLALINT_PORTS_FAKE_MNIST": str(32 * n)},
    ),
)  # fmt: skip


@dataclass
class Run:
    """One run of one version of a script."""

    steps: int
    returncode: int
    seconds: float
    error: str | None
    totals: dict[str, Any]
    stdout: str

    @property
    def on_xla(self) -> bool:
        """The model ran on the XLA device: graphs were executed, large enough to hold it."""
        return (
            self.returncode == 0
            and self.totals.get("executions", 0) > 0
            and self.totals.get("max_graph_size", 0) >= MODEL_GRAPH_NODES
        )


@dataclass
class Version:
    """A script as written or as fixed, and what its runs measured."""

    port: str
    variant: str
    applied: dict[str, int] = field(default_factory=dict)
    remaining: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    # The fixed script where torch_xla cannot be imported (the machine it was written for).
    without_xla: Run | None = None
    library_applied: dict[str, int] = field(default_factory=dict)  # in the copied libraries
    commit: str = ""  # the xlalint commit that fixed and measured it

    @property
    def runs_ok(self) -> bool:
        return bool(self.runs) and all(r.returncode == 0 for r in self.runs)

    def per_step(self, name: str) -> float | None:
        """What one more step costs once warmed up: (2N-step run - N-step run) / N."""
        if len(self.runs) < 2 or not all(r.on_xla for r in self.runs):
            return None
        short, long = self.runs
        return (long.totals.get(name, 0) - short.totals.get(name, 0)) / (long.steps - short.steps)

    def warm_compiles(self) -> int | None:
        """Compilations in the N extra steps: 0 when compiles stay flat."""
        if len(self.runs) < 2 or not all(r.on_xla for r in self.runs):
            return None
        short, long = self.runs
        return long.totals.get("uncached_compiles", 0) - short.totals.get("uncached_compiles", 0)


def _pip(*arguments: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *arguments], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def prepare_cache(cache: Path) -> None:
    """The pinned sources and the packages they import (not the running environment)."""
    source = cache / "src" / "pytorch_ignite-0.5.5"
    if not source.is_dir():
        downloads = cache / "downloads"
        _pip("download", "--no-deps", "--no-binary", ":all:", IGNITE, "-d", str(downloads))
        with tarfile.open(downloads / "pytorch_ignite-0.5.5.tar.gz") as archive:
            archive.extractall(cache / "src", filter="data")
    deps = cache / "deps"
    if not (deps / "ignite").is_dir():
        _pip("install", "--no-deps", "--target", str(deps), *DEPENDENCIES)


def child_pythonpath(cache: Path) -> str:
    """The runs see the shim, the pinned packages, and this checkout's xlalint."""
    shim = cache / "shim"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "sitecustomize.py").write_text(SHIM, encoding="utf-8")
    parts = [str(cache / "shim"), str(cache / "deps"), str(HERE.parent)]
    return os.pathsep.join([*parts, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


def run_script(
    port: Port, folder: Path, steps: int, cache: Path, *, xla: bool, timeout: float = TIMEOUT
) -> Run:
    """Run the script in `folder` under xlalint's profile runner: on the XLA CPU device, or
    (`xla=False`) where torch_xla cannot be imported."""
    saved = dict(os.environ)
    os.environ.update({"PYTHONPATH": child_pythonpath(cache), **port.environment(steps)})
    if not xla:
        os.environ["XLALINT_PORTS_NO_TORCH_XLA"] = "1"
    outputs = f"out{steps}" + ("" if xla else "_without_xla")
    shutil.rmtree(folder / outputs, ignore_errors=True)
    started = time.perf_counter()
    command = ["python", port.script, *port.arguments(steps, outputs)]
    try:
        result: Profile = profile(command, device="cpu", cwd=folder, timeout=timeout)
    except subprocess.TimeoutExpired:
        totals = {"timed_out": True}
        return Run(steps, -1, round(timeout), f"did not finish in {timeout:.0f} s", totals, "")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    seconds = time.perf_counter() - started
    error = None
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        error = lines[-1].strip() if lines else f"exit code {result.returncode}"
    return Run(steps, result.returncode, round(seconds, 1), error, result.totals, result.stdout)


def prepare(port: Port, variant: str, cache: Path) -> tuple[Path, Version]:
    """A fresh copy of the script's folder (and its libraries), fixed as `variant` says;
    the version records the fixes applied and the findings left, the script's apart from
    its libraries'."""
    folder = cache / "work" / port.name / variant.replace(" ", "_").strip("-")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(port.folder(cache), folder)
    for library in port.libraries:
        shutil.copytree(cache / "deps" / library, folder / library)
    version = Version(port.name, variant)
    if variant == "as written":
        return folder, version
    script = folder / port.script
    targets = [script, *(folder / library for library in port.libraries)]
    report = fix_paths(targets, find_settings(folder), unsafe=variant == "--unsafe-fixes",
                       apply=True, jobs=1)  # fmt: skip
    applied: Counter[str] = Counter()
    library: Counter[str] = Counter()
    for outcome in report.outcomes:
        (applied if Path(outcome.filename) == script else library).update(outcome.applied)
        if Path(outcome.filename) == script:
            version.remaining = sorted(d.code for d in outcome.remaining)
    version.applied = dict(sorted(applied.items()))
    version.library_applied = dict(sorted(library.items()))
    return folder, version


def measure(
    port: Port, variant: str, cache: Path, *, without_xla: bool = True, timeout: float = TIMEOUT
) -> Version:
    """Copy the script's folder, fix it as `variant` says, and run it: as written once;
    fixed for N steps on the XLA device, for 2N more if the model ran there, and
    (`without_xla`) once without torch_xla."""
    folder, version = prepare(port, variant, cache)
    xla = variant != "as written"
    version.runs = [run_script(port, folder, port.steps, cache, xla=xla, timeout=timeout)]
    if xla and version.runs[0].on_xla:  # per-step costs only mean something on the device
        version.runs.append(
            run_script(port, folder, 2 * port.steps, cache, xla=True, timeout=timeout)
        )
    if xla and without_xla:
        version.without_xla = run_script(
            port, folder, port.steps, cache, xla=False, timeout=timeout
        )
    return version


def xlalint_commit() -> str:
    """This checkout's commit, `+` when xlalint/ has uncommitted changes."""
    root = HERE.parent
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()  # fmt: skip
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "xlalint"], check=False)
    return head + ("+" if dirty.returncode else "")


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def _codes(counts: dict[str, int] | list[str]) -> str:
    if isinstance(counts, list):
        counts = dict(Counter(counts))
    return ", ".join(f"{code} x{n}" if n > 1 else code for code, n in sorted(counts.items())) or "-"


def _ran(run: Run) -> str:
    if run.returncode == 0:
        return "yes"
    return f"no: `{(run.error or '').replace('|', '/')[:160]}`"


def table(versions: Sequence[Version]) -> str:
    """The Markdown table PORTS.md shows."""
    header = (
        "| script | version | runs | without torch_xla | model on XLA "
        "| compiles after warm-up (N more steps) "
        "| executions / step | device-to-host / step | largest graph | printed vs as written "
        "| fixes applied | findings left | measured on |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    written: dict[str, Version] = {v.port: v for v in versions if v.variant == "as written"}
    ports = {p.name: p for p in PORTS}
    for v in versions:
        runs = "yes" if v.runs_ok else _ran(next(r for r in v.runs if r.error))
        on_xla = "yes" if v.runs and all(r.on_xla for r in v.runs) else "no"
        without = _ran(v.without_xla) if v.without_xla else runs
        graph = max((r.totals.get("max_graph_size", 0) for r in v.runs), default=0)
        printed = "-"
        fixed = v.variant != "as written"
        applied, remaining = (_codes(v.applied), _codes(v.remaining)) if fixed else ("-", "-")
        if fixed and v.library_applied:
            libraries = "/".join(ports[v.port].libraries)
            applied += f"; in {libraries}: {_codes(v.library_applied)}"
        base = written.get(v.port)
        if v.variant != "as written" and base and base.runs_ok and v.runs_ok:
            unstable = ports[v.port].unstable or r"(?!)"
            before, after = (re.sub(unstable, "", r.stdout) for r in (base.runs[0], v.runs[0]))
            printed = compare_printed(before, after).describe()
        rows.append(
            f"| {v.port} | {v.variant} | {runs} | {without} | {on_xla} "
            f"| {_number(v.warm_compiles())} "
            f"| {_number(v.per_step('executions'))} | {_number(v.per_step('device_to_host'))} "
            f"| {graph or '-'} | {printed} | {applied} | {remaining} | {v.commit or '-'} |"
        )
    return header + "\n".join(rows) + "\n"


TABLE_START = "<!-- ports table: written by benchmarks/ports.py --write -->"
TABLE_END = "<!-- end of ports table -->"


def write_table(markdown: str, path: Path, measured: set[str]) -> None:
    """Replace the rows of the scripts in `measured`; the other scripts keep the rows (and
    the `measured on` commits) of the table as it was: a run with `--only` refreshes only
    what it ran."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(TABLE_START), text.index(TABLE_END)
    old = text[start + len(TABLE_START) : end].strip().splitlines()[2:]
    new = markdown.strip().splitlines()
    header, rows = new[:2], new[2:]
    kept = []
    for port in PORTS:
        source = rows if port.name in measured else old
        kept += [row for row in source if row.startswith(f"| {port.name} |")]
    markdown = "\n".join([*header, *kept]) + "\n"
    text = text[: start + len(TABLE_START)] + "\n" + markdown + text[end:]
    path.write_text(text, encoding="utf-8")


def _run(recorded: dict[str, Any]) -> Run | None:
    data = recorded.get("without_xla")
    return Run(**data) if data else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--only", help="comma-separated script names")
    parser.add_argument("--write", action="store_true", help="refresh the table in PORTS.md")
    parser.add_argument("--variants", help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        help="seconds a run gets before it is called unfinished (more on a loaded machine)",
    )
    parser.add_argument(
        "--refix",
        action="store_true",
        help="recompute only the fixes and findings of the recorded runs (no script runs)",
    )
    options = parser.parse_args()
    cache = options.cache.resolve()
    by_name = {p.name: p for p in PORTS}
    selected = [by_name[name] for name in options.only.split(",")] if options.only else PORTS
    if any(p.folder is not _written for p in selected):
        prepare_cache(cache)
    results = cache / "results.json"
    recorded = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
    for port in selected:
        print(f"{port.name} ...", file=sys.stderr, flush=True)
        if options.refix:
            for data in recorded.get(port.name, []):
                _, fixed = prepare(port, data["variant"], cache)
                data.update(applied=fixed.applied, remaining=fixed.remaining,
                            library_applied=fixed.library_applied)  # fmt: skip
        else:
            variants = options.variants.split(",") if options.variants else VARIANTS
            old = {d["variant"]: d for d in recorded.get(port.name, [])}
            for variant in variants:
                version = measure(port, variant, cache, timeout=options.timeout)
                version.commit = xlalint_commit()
                old[variant] = asdict(version)
            recorded[port.name] = [old[v] for v in VARIANTS if v in old]
        results.write_text(json.dumps(recorded, indent=1), encoding="utf-8")
    order = [p.name for p in PORTS]
    versions = [
        Version(**{**d, "runs": [Run(**r) for r in d["runs"]], "without_xla": _run(d)})
        for name in order
        if name in recorded
        for d in recorded[name]
    ]
    markdown = table(versions)
    print(markdown)
    if options.write:
        write_table(markdown, HERE / "PORTS.md", set(recorded))


if __name__ == "__main__":
    main()
