"""Family 3 (device placement): the fixes the rules record, applied to real text.

Each case lints a snippet with one rule, applies every diagnostic's fix with a small local
helper (1-based rows and columns, as the diagnostics state them), and checks the exact
result and that it still parses. Detection itself is covered by fixtures/XLA30*/.
"""

from __future__ import annotations

import pytest
from snippet_fixes import fixed, lint


# -- XLA301 cuda-call ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x = x.cuda()\n", "x = x.to(torch_xla.device())\n"),
        (
            "x = x.cuda(non_blocking=True)\n",
            "x = x.to(torch_xla.device(), non_blocking=True)\n",
        ),
        ("model = model.cuda(args.gpu)\n", "model = model.to(torch_xla.device())\n"),
        (
            "x = x.cuda(args.gpu, True)\n",
            "x = x.to(torch_xla.device(), non_blocking=True)\n",
        ),
        ("x = x.cuda(device=0)\n", "x = x.to(device=torch_xla.device())\n"),
        (
            "x = x.cuda(0, non_blocking=True)\n",
            "x = x.to(torch_xla.device(), non_blocking=True)\n",
        ),
        (
            "y = torch.zeros(3).cuda(\n    non_blocking=True,  # async copy\n)\n",
            "y = torch.zeros(3).to(\n    torch_xla.device(), non_blocking=True,  # async copy\n)\n",
        ),
        (
            "m = Net(\n    width=4,\n).cuda()\n",
            "m = Net(\n    width=4,\n).to(torch_xla.device())\n",
        ),
    ],
)
def test_cuda_call_fix(before: str, after: str) -> None:
    result, imports = fixed("XLA301", "import torch\n" + before)
    assert result == "import torch\n" + after
    assert imports == {"import torch_xla"}


def test_cuda_call_fix_leaves_the_receiver_to_other_fixes() -> None:
    # `.half()` inside the receiver is XLA304's to fix: XLA301's edits must not cover it.
    [diagnostic] = lint("XLA301", "import torch\nmodel = model.half().cuda()\n")
    assert diagnostic.fix is not None
    assert all(edit.start.column > len("model = model.half()") for edit in diagnostic.fix.edits)


@pytest.mark.parametrize("source", ["x = x.cuda(**kwargs)\n", "nn.Module.cuda(model)\n"])
def test_cuda_call_without_fix(source: str) -> None:
    [diagnostic] = lint("XLA301", "import torch\nimport torch.nn as nn\n" + source)
    assert diagnostic.fix is None


@pytest.mark.parametrize(
    "source",
    [
        "x = x.cuda(memory=1)\n",
        "q.cuda(qtensor, meta=meta, device=d)\n",
        "q.cuda(a, b, c)\n",
    ],
)
def test_cuda_methods_torch_could_not_take_are_not_flagged(source: str) -> None:
    assert lint("XLA301", "import torch\n" + source) == []


def test_cuda_call_with_torchs_arguments_is_flagged() -> None:
    source = "import torch\nx = x.cuda(0, non_blocking=True, memory_format=torch.preserve_format)\n"
    assert [d.code for d in lint("XLA301", source)] == ["XLA301"]


# -- XLA302 cuda-device-string -------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('device = torch.device("cuda")\n', "device = torch_xla.device()\n"),
        ('device = torch.device("cuda", 1)\n', "device = torch_xla.device()\n"),
        ('d = torch.device(f"cuda:{rank}")\n', "d = torch_xla.device()\n"),
        (
            'x = x.to("cuda", non_blocking=True)\n',
            "x = x.to(torch_xla.device(), non_blocking=True)\n",
        ),
        ('x = torch.ones(2, device="cuda:0")\n', "x = torch.ones(2, device=torch_xla.device())\n"),
        ("device = 'cuda'\n", "device = 'xla'\n"),
        ('DEVICE = f"cuda:{rank}"\n', 'DEVICE = "xla"\n'),
        ('def run(device="cuda:1"):\n    pass\n', 'def run(device="xla"):\n    pass\n'),
        # A default is made at import: `torch.device("xla")` does not start the runtime.
        (
            'def run(device=torch.device("cuda", 0)):\n    pass\n',
            'def run(device=torch.device("xla")):\n    pass\n',
        ),
        (
            'parser.add_argument("--device", default="cuda")\n',
            'parser.add_argument("--device", default="xla")\n',
        ),
        ('cfg = {"device": "cuda", "lr": 1}\n', 'cfg = {"device": "xla", "lr": 1}\n'),
    ],
)
def test_cuda_device_string_fix(before: str, after: str) -> None:
    result, imports = fixed("XLA302", "import torch\n" + before)
    assert result == "import torch\n" + after
    assert imports == {"import torch_xla"}


@pytest.mark.parametrize(
    "source",
    [
        'state = torch.load(path, map_location="cuda")\n',
        'state = torch.load(path, map_location=torch.device("cuda"))\n',
        'peer = "cuda:0" if rank == 1 else "cuda:1"\ndevice = peer\ndev = peer\n'
        'x = x.to("cuda:0" if rank == 1 else "cuda:1")\n',
        'device = args.device or "cuda"\n',
    ],
)
def test_cuda_device_string_without_fix(source: str) -> None:
    diagnostics = lint("XLA302", "import torch\n" + source)
    assert diagnostics
    assert all(d.fix is None for d in diagnostics)


# -- XLA303 cuda-api -----------------------------------------------------------------------
def test_cuda_api_resolves_imports_and_gives_hints() -> None:
    source = """\
        import torch
        import torch.cuda as tc
        from torch.cuda.amp import GradScaler
        from torch.amp import autocast

        tc.synchronize()
        scaler = GradScaler()
        with autocast("cuda"):
            pass
        with autocast("xla"):
            pass
        ok = torch.cuda.is_available()
        """
    diagnostics = lint("XLA303", source)
    assert [(d.start.row, d.fix) for d in diagnostics] == [(6, None), (7, None), (8, None)]
    hints = [d.hint or "" for d in diagnostics]
    assert "wait_device_ops" in hints[0]
    assert "scaler" in hints[1]
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in hints[2]


def test_cuda_api_ignores_a_local_grad_scaler() -> None:
    source = """\
        import torch

        class GradScaler:
            pass

        scaler = GradScaler()
        """
    assert lint("XLA303", source) == []


# -- XLA304 float16 ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after", "imports"),
    [
        ("model = model.half()\n", "model = model.bfloat16()\n", set()),
        ("x = x.to(torch.float16)\n", "x = x.to(torch.bfloat16)\n", set()),
        ("dtype = th.half\n", "dtype = th.bfloat16\n", set()),
        (
            'with torch.autocast("xla", dtype=torch.float16):\n    pass\n',
            'with torch.autocast("xla", dtype=torch.bfloat16):\n    pass\n',
            set(),
        ),
        (
            "from torch import float16 as f16\nx = y.to(f16)\n",
            "from torch import float16 as f16\nx = y.to(bfloat16)\n",
            {"from torch import bfloat16"},
        ),
        (
            "m = net.half().to(dtype=torch.half)\n",
            "m = net.bfloat16().to(dtype=torch.bfloat16)\n",
            set(),
        ),
    ],
)
def test_float16_fix(before: str, after: str, imports: set[str]) -> None:
    result, required = fixed("XLA304", "import torch\nimport torch as th\n" + before)
    assert result == "import torch\nimport torch as th\n" + after
    assert required == imports


# -- XLA305 device-ladder-without-xla ------------------------------------------------------
def test_device_ladder_is_reported_once_with_an_unsafe_xla_branch_first() -> None:
    source = """\
        import torch

        if torch.cuda.is_available():
            device = torch.device("cuda")
        elif torch.backends.mps.is_available():
            device = torch.device("mps")
        else:
            device = torch.device("cpu")
        """
    [diagnostic] = lint("XLA305", source)
    assert (diagnostic.start.row, diagnostic.start.column) == (3, 1)
    assert (diagnostic.end.row, diagnostic.end.column) == (3, 29)
    assert diagnostic.fix is not None and diagnostic.fix.applicability.value == "unsafe"
    assert "CUDA/MPS/the CPU" in diagnostic.message
    assert "picks the CPU" in diagnostic.message
    result, imports = fixed("XLA305", source)
    assert imports == set()
    assert (
        result
        == """\
import torch

try:
    import torch_xla

    XLA_AVAILABLE = True
except ImportError:
    XLA_AVAILABLE = False

if XLA_AVAILABLE:
    device = torch.device("xla")
elif torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")
"""
    )


@pytest.mark.parametrize(
    ("source", "test"),
    [
        # An unconditional import: ask whether the module is there.
        ("import torch_xla\n", 'importlib.util.find_spec("torch_xla")'),
        # The file's own guard and its flag.
        (
            "try:\n    import torch_xla\n    HAS_XLA = True\nexcept ImportError:\n"
            "    HAS_XLA = False\n",
            "HAS_XLA",
        ),
    ],
)
def test_ladder_fix_tests_for_xla_as_the_file_imports_it(source: str, test: str) -> None:
    text = "import torch\n" + source + 'dev = "cuda" if torch.cuda.is_available() else "cpu"\n'
    result, _ = fixed("XLA305", text)
    assert result.endswith(
        f'dev = "xla" if {test} else "cuda" if torch.cuda.is_available() else "cpu"\n'
    )


def test_ladder_message_says_what_a_cuda_only_branch_picks() -> None:
    # #16.12: a DDP branch picks `cuda:N`, not the CPU.
    source = """\
        import torch

        def setup(args, rank):
            device = args.device
            if args.distributed:
                device = f"cuda:{rank}"
            return device
        """
    [diagnostic] = lint("XLA305", source)
    assert "the CPU" not in diagnostic.message
    assert "on an XLA host it picks CUDA, which is not there" in diagnostic.message


# -- XLA306 nccl-backend -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('dist.init_process_group("nccl")\n', 'dist.init_process_group("xla")\n'),
        (
            "dist.init_process_group(backend='nccl', init_method=url)\n",
            "dist.init_process_group(backend='xla', init_method=url)\n",
        ),
        (
            'def setup(rank, backend="nccl"):\n    pass\n',
            'def setup(rank, backend="xla"):\n    pass\n',
        ),
        ('cfg = {"backend": "nccl"}\n', 'cfg = {"backend": "xla"}\n'),
    ],
)
def test_nccl_backend_fix(before: str, after: str) -> None:
    header = "import torch.distributed as dist\n"
    result, imports = fixed("XLA306", header + before, all_fixable=True)
    assert result == header + after
    assert imports == {"import torch_xla.distributed.xla_backend"}


@pytest.mark.parametrize(
    "source",
    [
        'if backend == "nccl":\n    pass\n',
        'names = ["nccl", "gloo"]\n',
        'dist.init_process_group(dist_url, "nccl")\n',  # not the backend's position
        'backend = "xla" if args.tpu else "nccl"\n',
        'backend = "nccl" if torch.cuda.is_available() else "gloo"\n',
        'log("nccl")\n',
    ],
)
def test_nccl_backend_leaves_other_strings_alone(source: str) -> None:
    assert lint("XLA306", "import torch\nimport torch.distributed as dist\n" + source) == []


# -- XLA307 compile-without-openxla --------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("m = torch.compile(m)\n", 'm = torch.compile(m, backend="openxla")\n'),
        ("m = torch.compile(m, )\n", 'm = torch.compile(m, backend="openxla", )\n'),
        (
            "m = torch.compile(m, backend='inductor')\n",
            "m = torch.compile(m, backend='openxla')\n",
        ),
        (
            "@torch.compile\ndef f(x):\n    return x\n",
            '@torch.compile(backend="openxla")\ndef f(x):\n    return x\n',
        ),
        (
            "@torch.compile(dynamic=False)\ndef f(x):\n    return x\n",
            '@torch.compile(dynamic=False, backend="openxla")\ndef f(x):\n    return x\n',
        ),
    ],
)
def test_compile_without_openxla_fix(before: str, after: str) -> None:
    header = "import torch\nimport torch_xla\n"
    result, imports = fixed("XLA307", header + before, all_fixable=True)
    assert result == header + after
    assert imports == set()


def test_compile_with_inductor_options_has_no_fix() -> None:
    source = 'import torch\nimport torch_xla\nm = torch.compile(m, mode="reduce-overhead")\n'
    [diagnostic] = lint("XLA307", source)
    assert diagnostic.fix is None


def test_compile_outside_xla_code_is_not_reported() -> None:
    assert lint("XLA307", "import torch\nm = torch.compile(m)\n") == []


@pytest.mark.parametrize(
    "source",
    [
        "torch.backends.cudnn.benchmark = True\n",
        "torch.backends.cuda.matmul.allow_tf32 = True\n",
        "torch.cuda.manual_seed_all(0)\n",
        "torch.cuda.empty_cache()\n",
        "n = torch.cuda.device_count()\n",
        "print(torch.cuda.max_memory_allocated() / 2**30)\n",
        'with torch.autocast("cuda", enabled=False):\n    pass\n',
        "scaler = torch.cuda.amp.GradScaler(enabled=False)\n",
        '@torch.autocast("cuda", enabled=False)\ndef f(x):\n    return x\n',
    ],
)
def test_cuda_api_leaves_measured_no_ops_alone(source: str) -> None:
    assert lint("XLA303", "import torch\n" + source) == []


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("torch.cuda.synchronize()\n", "raises on an XLA host"),
        ('with torch.autocast("cuda", enabled=args.amp):\n    pass\n', "float32"),
        ('with torch.autocast("cuda", dtype=torch.bfloat16):\n    pass\n', "raises"),
        ("scaler = torch.amp.GradScaler()\n", "reads the found-inf flag to the host"),
        ("big = torch.cuda.memory_allocated() > limit\n", "returns 0"),
        ("bf16 = torch.cuda.is_bf16_supported() and args.bf16\n", "returns False"),
        ("t = torch.cuda.Event(enable_timing=True)\n", "when recorded"),
    ],
)
def test_cuda_api_says_what_the_call_does_on_xla(source: str, says: str) -> None:
    [diagnostic] = lint("XLA303", "import torch\n" + source)
    assert says in diagnostic.message


@pytest.mark.parametrize(
    "source",
    [
        "torch.cuda.set_rng_state(state)\n",
        "@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\ndef f(x):\n    return x\n",
        'torch.cuda.nvtx.range_push("step")\n',
        "archs = torch.cuda.get_arch_list()\n",
    ],
)
def test_cuda_api_leaves_more_measured_no_ops_alone(source: str) -> None:
    assert lint("XLA303", "import torch\n" + source) == []


def test_cuda_api_reports_a_query_that_decides() -> None:
    [diagnostic] = lint("XLA303", 'import torch\nnew = "sm_90" in torch.cuda.get_arch_list()\n')
    assert "an empty list" in diagnostic.message


def test_module_compile_gets_the_openxla_backend() -> None:
    source = """\
        import torch
        import torch.nn as nn
        import torch_xla

        model = nn.Linear(4, 4).to(torch_xla.device())
        model.compile(fullgraph=True)
        """
    result, _ = fixed("XLA307", source, all_fixable=True)
    assert 'model.compile(fullgraph=True, backend="openxla")' in result


def test_a_guard_around_a_ternary_ladder_is_not_the_ladder() -> None:
    # The `if` only guards the statement; rewriting it into a ladder would skip the
    # script's main block on an XLA host.
    source = """\
import torch

if __name__ == "__main__":
    args = parse()
    dev = "cpu" if (not torch.cuda.is_available() or args.no_cuda) else "cuda:0"
    main(device=dev)
"""
    [diagnostic] = lint("XLA305", source)
    assert diagnostic.start.row == 5
    result, _ = fixed("XLA305", source)
    assert 'if __name__ == "__main__":\n    args = parse()\n' in result
    assert '    dev = "xla" if XLA_AVAILABLE else "cpu" if (' in result
