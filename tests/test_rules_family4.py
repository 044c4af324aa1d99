"""Family 4 (graph barriers): the fixes, applied by the fixer to whole files.

Each case states the file before and after in full: the fix, the import it adds (once, in
the file's style) and everything else byte for byte. Every fixed file must parse, and
fixing it again must change nothing. Detection is covered by fixtures/XLA40*/; here also
the cases reported without a fix, where placing a barrier would be a judgement call.
"""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from xlalint.diagnostics import Diagnostic
from xlalint.engine import lint_source
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode


def lint(source: str, code: str) -> list[Diagnostic]:
    result = lint_source(dedent(source), "t.py", [all_rules()[code]])
    assert result.error is None
    return result.diagnostics


def fixed(source: str, *codes: str) -> str:
    """The file fixed with `codes` (safe fixes); checks that it parses and is stable."""
    rules = [all_rules()[code] for code in codes]
    outcome = fix_text(decode(source.encode("utf-8")), "t.py", rules)
    assert outcome.error is None
    assert outcome.applied, f"{codes} fixed nothing"
    ast.parse(outcome.text)
    again = fix_text(decode(outcome.text.encode("utf-8")), "t.py", rules)
    assert again.text == outcome.text
    assert not again.applied
    return outcome.text


# -- XLA401 training-loop-without-barrier --------------------------------------------------
TRAIN_BODY = """\
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "\n"
            "\n"
            "def train(model, loader, optimizer):\n"
            "    for x, y in loader:\n" + TRAIN_BODY + "    return model\n",
            "import torch\n"
            "import torch.nn.functional as F\n"
            "import torch_xla\n"
            "\n"
            "\n"
            "def train(model, loader, optimizer):\n"
            "    for x, y in loader:\n" + TRAIN_BODY + "        torch_xla.sync()\n"
            "    return model\n",
            id="adds-import-torch_xla",
        ),
        pytest.param(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "import torch_xla.core.xla_model as xm\n"
            "\n"
            "for x, y in loader:\n"
            "    loss = F.cross_entropy(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "\n"
            "xm.mark_step()\n",
            "import torch\n"
            "import torch.nn.functional as F\n"
            "import torch_xla.core.xla_model as xm\n"
            "\n"
            "for x, y in loader:\n"
            "    loss = F.cross_entropy(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    xm.mark_step()\n"
            "\n"
            "xm.mark_step()\n",
            id="file-already-calls-mark_step",
        ),
        pytest.param(
            "import torch\n"
            "from torch_xla import sync\n"
            "\n"
            "for x, y in loader:\n"
            "    model(x).sum().backward()\n"
            "    optimizer.step()  # update\n",
            "import torch\n"
            "from torch_xla import sync\n"
            "\n"
            "for x, y in loader:\n"
            "    model(x).sum().backward()\n"
            "    optimizer.step()  # update\n"
            "    sync()\n",
            id="from-torch_xla-import-sync",
        ),
        pytest.param(
            "import torch\n"
            "import torch_xla as xla\n"
            "\n"
            "class Trainer:\n"
            "    def fit(self, loader):\n"
            "        for i, batch in enumerate(loader):\n"
            "            self.model(batch).mean().backward()\n"
            "            if (i + 1) % 4 == 0:\n"
            "                self.optimizer.step()\n"
            "                self.optimizer.zero_grad()\n"
            "            # log every step\n"
            "\n"
            "        return self\n",
            "import torch\n"
            "import torch_xla as xla\n"
            "\n"
            "class Trainer:\n"
            "    def fit(self, loader):\n"
            "        for i, batch in enumerate(loader):\n"
            "            self.model(batch).mean().backward()\n"
            "            if (i + 1) % 4 == 0:\n"
            "                self.optimizer.step()\n"
            "                self.optimizer.zero_grad()\n"
            "            xla.sync()\n"
            "            # log every step\n"
            "\n"
            "        return self\n",
            id="after-a-trailing-if-at-body-indent",
        ),
        pytest.param(
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "def fit(loader):\n"
            "\tfor batch in loader:\n"
            "\t\tmodel(batch).mean().backward()\n"
            "\t\ttry:\n"
            "\t\t\toptimizer.step()\n"
            "\t\tfinally:\n"
            "\t\t\toptimizer.zero_grad()\n",
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "def fit(loader):\n"
            "\tfor batch in loader:\n"
            "\t\tmodel(batch).mean().backward()\n"
            "\t\ttry:\n"
            "\t\t\toptimizer.step()\n"
            "\t\tfinally:\n"
            "\t\t\toptimizer.zero_grad()\n"
            "\t\ttorch_xla.sync()\n",
            id="tabs-and-try-finally",
        ),
        pytest.param(
            "import torch\n"
            "\n"
            "step = 0\n"
            "while step < 100:\n"
            "    model(next(it)).mean().backward()\n"
            "    optimizer.step()\n"
            "    step += 1",
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "step = 0\n"
            "while step < 100:\n"
            "    model(next(it)).mean().backward()\n"
            "    optimizer.step()\n"
            "    step += 1\n"
            "    torch_xla.sync()",
            id="while-loop-at-end-of-file-without-newline",
        ),
    ],
)
def test_training_loop_fix(before: str, after: str) -> None:
    assert fixed(before, "XLA401") == after


ENGINE_STEP = """\
import torch
from ignite.engine import Engine


def main(model, loader, optimizer, criterion):
    def step(engine, batch):
        optimizer.zero_grad()
        loss = criterion(model(batch[0]), batch[1])
        loss.backward()
        optimizer.step()
        return loss.item()

    Engine(step).run(loader, 1)
"""


def test_engine_step_function_gets_its_barrier_before_the_return() -> None:
    [diagnostic] = lint(ENGINE_STEP, "XLA401")
    assert diagnostic.start.row == 6
    assert "ignite's `Engine`" in diagnostic.message
    after = ENGINE_STEP.replace("import torch\n", "import torch\nimport torch_xla\n").replace(
        "        optimizer.step()\n", "        optimizer.step()\n        torch_xla.sync()\n"
    )
    assert fixed(ENGINE_STEP, "XLA401") == after


def test_engine_step_function_not_reported_where_the_loader_syncs() -> None:
    source = ENGINE_STEP.replace(
        "    Engine(step).run(loader, 1)",
        "    Engine(step).run(pl.MpDeviceLoader(loader, torch_xla.device()), 1)",
    ).replace(
        "import torch\n",
        "import torch\nimport torch_xla\nimport torch_xla.distributed.parallel_loader as pl\n",
    )
    assert lint(source, "XLA401") == []


def test_training_loop_fix_at_end_of_file_keeps_the_comment_on_its_line() -> None:
    before = (
        "import torch_xla\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()  # !"
    )
    after = (
        "import torch_xla\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()  # !\n"
        "    torch_xla.sync()"
    )
    assert fixed(before, "XLA401") == after


def test_training_loop_fix_keeps_crlf() -> None:
    before = (
        "import torch\r\nfor x in loader:\r\n    model(x).sum().backward()\r\n    opt.step()\r\n"
    )
    after = (
        "import torch\r\nimport torch_xla\r\nfor x in loader:\r\n"
        "    model(x).sum().backward()\r\n    opt.step()\r\n    torch_xla.sync()\r\n"
    )
    assert fixed(before, "XLA401") == after


def test_training_loop_fix_through_a_step_function() -> None:
    before = dedent(
        """\
        import torch


        def train_step(model, batch, optimizer):
            model(batch).mean().backward()
            optimizer.step()


        def fit(model, loader, optimizer):
            for batch in loader:
                train_step(model, batch, optimizer)
        """
    )
    after = (
        before.replace("import torch\n", "import torch\nimport torch_xla\n")
        + "        torch_xla.sync()\n"
    )
    assert fixed(before, "XLA401") == after


@pytest.mark.parametrize(
    "loop",
    [
        pytest.param(
            "for x in loader: model(x).sum().backward(); optimizer.step()\n", id="one-line"
        ),
        pytest.param(
            "for x in loader:\n    model(x).sum().backward()\n    optimizer.step()\n"
            "else:\n    print('done')\n",
            id="for-else",
        ),
        pytest.param(
            "def f():\n    for x in loader:\n        model(x).sum().backward()\n"
            "        optimizer.step()\n        return x\n",
            id="ends-in-return",
        ),
        pytest.param(
            "for x in loader:\n    model(x).sum().backward()\n    optimizer.step()\n"
            "    if done:\n        break\n    else:\n        continue\n",
            id="ends-in-if-else-that-always-leaves",
        ),
        pytest.param(
            "while True:\n    model(x).sum().backward()\n    optimizer.step()\n"
            "    raise StopIteration\n",
            id="ends-in-raise",
        ),
    ],
)
def test_training_loop_reported_without_fix(loop: str) -> None:
    [diagnostic] = lint("import torch\n" + loop, "XLA401")
    assert diagnostic.fix is None


def test_training_loop_reported_at_the_header_once() -> None:
    source = """\
        import torch

        for epoch in range(3):
            for x, y in loader:
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        """
    [diagnostic] = lint(source, "XLA401")
    assert (diagnostic.start.row, diagnostic.start.column) == (4, 5)
    assert (diagnostic.end.row, diagnostic.end.column) == (4, 23)


def test_training_loop_needs_torch() -> None:
    source = """\
        for batch in batches:
            grads = layer.backward(batch)
            optimizer.step(grads)
        """
    assert lint(source, "XLA401") == []
    assert lint("import torch\n" + dedent(source), "XLA401")


# -- XLA402 inference-loop-without-barrier -------------------------------------------------
def test_inference_loop_fix() -> None:
    before = dedent(
        """\
        import torch


        @torch.no_grad()
        def sample(unet, scheduler, latents, embeds):
            for t in scheduler.timesteps:
                noise_pred = unet(latents, t, encoder_hidden_states=embeds).sample
                latents = scheduler.step(noise_pred, t, latents).prev_sample
            return latents
        """
    )
    after = dedent(
        """\
        import torch
        import torch_xla


        @torch.no_grad()
        def sample(unet, scheduler, latents, embeds):
            for t in scheduler.timesteps:
                noise_pred = unet(latents, t, encoder_hidden_states=embeds).sample
                latents = scheduler.step(noise_pred, t, latents).prev_sample
                torch_xla.sync()
            return latents
        """
    )
    assert fixed(before, "XLA402") == after


def test_inference_loop_fix_uses_mark_step_where_the_file_does() -> None:
    before = dedent(
        """\
        import torch
        import torch_xla.core.xla_model as xm


        def generate(model, ids, steps):
            for _ in range(steps):
                next_id = model(ids).logits[:, -1:].argmax(-1)
                ids = torch.cat([ids, next_id], dim=1)
            xm.mark_step()
            return ids
        """
    )
    assert fixed(before, "XLA402") == before.replace("dim=1)\n", "dim=1)\n        xm.mark_step()\n")


def test_barrier_fix_follows_an_optional_torch_xla_import() -> None:
    before = dedent(
        """\
        import torch

        from diffusers.utils import is_torch_xla_available

        if is_torch_xla_available():
            import torch_xla.core.xla_model as xm

            XLA_AVAILABLE = True
        else:
            XLA_AVAILABLE = False


        def sample(unet, scheduler, latents):
            for t in scheduler.timesteps:
                latents = scheduler.step(unet(latents, t).sample, t, latents).prev_sample
            if XLA_AVAILABLE:
                xm.mark_step()
            return latents
        """
    )
    assert fixed(before, "XLA402") == before.replace(
        "prev_sample\n",
        "prev_sample\n        if XLA_AVAILABLE:\n            xm.mark_step()\n",
    )


def test_barrier_fix_withheld_when_the_optional_import_has_no_flag() -> None:
    source = """\
        import torch

        try:
            import torch_xla
        except ImportError:
            torch_xla = None

        for t in scheduler.timesteps:
            latents = scheduler.step(unet(latents, t).sample, t, latents).prev_sample
        """
    [diagnostic] = lint(source, "XLA402")
    assert diagnostic.fix is None


def test_barrier_fix_adds_no_import_where_torch_xla_is_optional() -> None:
    # `xm` is bound but never used for mark_step: the fix would need `import torch_xla`,
    # which this file only has where torch_xla is installed.
    source = """\
        import torch

        if XLA_AVAILABLE:
            import torch_xla.core.xla_model as xm

        for x, y in loader:
            model(x).sum().backward()
            optimizer.step()
        """
    [diagnostic] = lint(source, "XLA401")
    assert diagnostic.fix is None


def test_inference_loop_one_line_body_has_no_fix() -> None:
    source = "import torch\nfor t in ts: x = scheduler.step(unet(x, t), t, x).prev_sample\n"
    [diagnostic] = lint(source, "XLA402")
    assert diagnostic.fix is None


# -- XLA403 plain-dataloader ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "for x, y in loader:\n",
            "for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):\n",
            id="plain",
        ),
        pytest.param(
            "for step, (x, y) in enumerate(tqdm(loader, desc='train')):\n",
            "for step, (x, y) in enumerate(tqdm(pl.MpDeviceLoader(loader, torch_xla.device()), "
            "desc='train')):\n",
            id="inside-enumerate-and-tqdm",
        ),
    ],
)
def test_plain_dataloader_fix(before: str, after: str) -> None:
    head = (
        "import torch\n"
        "import torch_xla\n"
        "from torch.utils.data import DataLoader\n"
        "from tqdm import tqdm\n"
        "\n"
        "loader = DataLoader(dataset, batch_size=8)\n"
    )
    body = "    model(x).sum().backward()\n    optimizer.step()\n    torch_xla.sync()\n"
    imported = head.replace(
        "import torch_xla\n",
        "import torch_xla\nimport torch_xla.distributed.parallel_loader as pl\n",
    )
    assert fixed(head + before + body, "XLA403") == imported + after + body


def test_plain_dataloader_fix_uses_the_files_import_of_mp_device_loader() -> None:
    before = dedent(
        """\
        import torch_xla
        from torch.utils.data import DataLoader
        from torch_xla.distributed.parallel_loader import MpDeviceLoader

        val_loader = MpDeviceLoader(DataLoader(val_set), torch_xla.device())
        for x, y in DataLoader(train_set, batch_size=8, drop_last=True):
            model(x).sum().backward()
        """
    )
    assert fixed(before, "XLA403") == before.replace(
        "for x, y in DataLoader(train_set, batch_size=8, drop_last=True):",
        "for x, y in MpDeviceLoader(DataLoader(train_set, batch_size=8, drop_last=True), "
        "torch_xla.device()):",
    )


def test_plain_dataloader_no_fix_where_torch_xla_is_optional() -> None:
    source = """\
        from torch.utils.data import DataLoader

        try:
            import torch_xla
        except ImportError:
            pass

        for x, y in DataLoader(dataset):
            model(x).sum().backward()
            optimizer.step()
        """
    [diagnostic] = lint(source, "XLA403")
    assert diagnostic.fix is None


# -- XLA404 unreduced-optimizer-step -------------------------------------------------------
PASSED_LOADER = """\
import torch
import torch_xla
from torch.utils.data import DataLoader


def train_epoch(model, loader, optimizer):
    for x, y in loader:
        model(x).sum().backward()
        optimizer.step()
        torch_xla.sync()


def main(dataset, model, optimizer):
    train_epoch(model, {argument}, optimizer)
"""


@pytest.mark.parametrize(
    ("argument", "reported"),
    [
        ("DataLoader(dataset, batch_size=8)", True),
        ("loader", True),  # `loader = DataLoader(...)` in `main`, below
        ("pl.MpDeviceLoader(DataLoader(dataset), torch_xla.device())", False),
        ("make_batches(dataset)", False),  # unknown: not a DataLoader for sure
    ],
)
def test_plain_dataloader_traced_through_a_parameter(argument: str, reported: bool) -> None:
    source = PASSED_LOADER.format(argument=argument)
    if argument == "loader":
        source = source.replace(
            "def main(dataset, model, optimizer):\n",
            "def main(dataset, model, optimizer):\n    loader = DataLoader(dataset)\n",
        )
    found = lint(source, "XLA403")
    assert [d.start.row for d in found] == ([7] if reported else [])


def test_plain_dataloader_parameter_untraced_when_a_call_passes_star_args() -> None:
    source = PASSED_LOADER.format(argument="DataLoader(dataset)") + (
        "\n\ndef again(args):\n    train_epoch(*args)\n"
    )
    assert lint(source, "XLA403") == []


GPU_LOOP = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=8)
    for x, y in loader:
{moves}        model(x).sum().backward()
        optimizer.step()
"""


def test_barrier_fix_wraps_a_dataloader_whose_batches_the_loop_moves() -> None:
    before = GPU_LOOP.format(moves="        x, y = x.cuda(), y.cuda()\n")
    after = before.replace(
        "import torch\n",
        "import torch\nimport torch_xla\nimport torch_xla.distributed.parallel_loader as pl\n",
        1,
    ).replace("for x, y in loader:", "for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):")
    assert fixed(before, "XLA401") == after


def test_barrier_fix_wraps_when_a_comprehension_moves_the_batch() -> None:
    before = GPU_LOOP.replace("for x, y in loader:", "for batch in loader:").format(
        moves="        x = {k: v.to('cuda') for k, v in batch.items()}\n"
    )
    assert "pl.MpDeviceLoader(loader, torch_xla.device())" in fixed(before, "XLA401")


def test_optimizer_step_fix_wraps_the_loader_instead_of_a_second_barrier() -> None:
    before = (
        GPU_LOOP.replace("import torch\n", "import torch\nimport torch_xla\n")
        .replace(
            "from torch.utils.data", "import torch_xla.core.xla_model as xm\nfrom torch.utils.data"
        )
        .replace("optimizer.step()", "xm.optimizer_step(optimizer)")
        .format(moves="        x, y = x.to('xla'), y.to('xla')\n")
    )
    # Both rules fix the loop the same way, so it gets one barrier: the loader's.
    after = fixed(before, "XLA403", "XLA406")
    assert "pl.MpDeviceLoader(loader, torch_xla.device())" in after
    assert "barrier=True" not in after


def test_barrier_fix_appends_a_sync_where_the_loop_does_not_move_its_batches() -> None:
    before = GPU_LOOP.format(moves="")
    after = before.replace(
        "import torch\n",
        "import torch\nimport torch_xla\n",
        1,
    ).replace("optimizer.step()\n", "optimizer.step()\n        torch_xla.sync()\n")
    assert fixed(before, "XLA401") == after


def test_unreduced_optimizer_step_fix() -> None:
    before = dedent(
        """\
        import torch
        import torch_xla


        def _mp_fn(index, trainer):
            for batch in trainer.loader:
                trainer.model(batch).mean().backward()
                trainer.optimizer.step()
                optimizer.step()
                optimizer.step(closure)


        torch_xla.launch(_mp_fn, args=())
        """
    )
    after = dedent(
        """\
        import torch
        import torch_xla
        import torch_xla.core.xla_model as xm


        def _mp_fn(index, trainer):
            for batch in trainer.loader:
                trainer.model(batch).mean().backward()
                xm.optimizer_step(trainer.optimizer)
                xm.optimizer_step(optimizer)
                optimizer.step(closure)


        torch_xla.launch(_mp_fn, args=())
        """
    )
    assert fixed(before, "XLA404") == after
    remaining = lint(after, "XLA404")
    assert [(d.start.row, d.fix) for d in remaining] == [(11, None)]


def test_unreduced_optimizer_step_uses_the_files_xm_alias() -> None:
    before = dedent(
        """\
        import torch_xla.core.xla_model as xla_model
        import torch_xla.distributed.xla_multiprocessing as xmp

        def _mp_fn(index):
            opt.step()

        xmp.spawn(_mp_fn)
        """
    )
    assert fixed(before, "XLA404") == before.replace("opt.step()", "xla_model.optimizer_step(opt)")


# -- XLA405 barrier-inside-trace -----------------------------------------------------------
def test_barrier_inside_trace_has_a_hint_and_no_fix() -> None:
    source = """\
        import torch_xla
        import torch_xla.debug.profiler as profiler

        with profiler.Trace("step"):
            torch_xla.sync()
        """
    [diagnostic] = lint(source, "XLA405")
    assert diagnostic.fix is None
    assert diagnostic.hint is not None and "after" in diagnostic.hint


def test_barrier_inside_a_trace_resolves_names_by_import() -> None:
    source = """\
        import torch_xla
        from my_profiler import Trace

        with Trace("step"):
            torch_xla.sync()
        """
    assert lint(source, "XLA405") == []


# -- XLA406 optimizer-step-without-barrier -------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "    xm.optimizer_step(optimizer)\n",
            "    xm.optimizer_step(optimizer, barrier=True)\n",
            id="one-argument",
        ),
        pytest.param(
            "    xm.optimizer_step(optimizer, optimizer_args={'closure': c})\n",
            "    xm.optimizer_step(optimizer, optimizer_args={'closure': c}, barrier=True)\n",
            id="keyword-argument",
        ),
        pytest.param(
            "    xm.optimizer_step(\n        optimizer,\n    )\n",
            "    xm.optimizer_step(\n        optimizer, barrier=True,\n    )\n",
            id="trailing-comma",
        ),
    ],
)
def test_optimizer_step_without_barrier_fix(before: str, after: str) -> None:
    head = (
        "import torch_xla.core.xla_model as xm\n"
        "for x, y in batches:\n"
        "    model(x).sum().backward()\n"
    )
    assert fixed(head + before, "XLA406") == head + after


@pytest.mark.parametrize(
    "call",
    [
        "xm.optimizer_step(optimizer, barrier=False)",
        "xm.optimizer_step(optimizer, False)",
        "xm.optimizer_step(optimizer, **step_kwargs)",
    ],
)
def test_optimizer_step_without_barrier_reported_without_fix(call: str) -> None:
    source = (
        "import torch_xla.core.xla_model as xm\n"
        f"for x, y in batches:\n    model(x).sum().backward()\n    {call}\n"
    )
    [diagnostic] = lint(source, "XLA406")
    assert diagnostic.fix is None


def test_optimizer_step_loops_are_left_to_xla406_by_xla401() -> None:
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "for x, y in batches:\n    model(x).sum().backward()\n    xm.optimizer_step(opt)\n"
    )
    assert lint(source, "XLA401") == []
    assert len(lint(source, "XLA406")) == 1


# -- the family together ---------------------------------------------------------------------
def test_all_fixes_together_reach_a_fixed_point() -> None:
    before = dedent(
        """\
        import torch
        import torch.nn.functional as F
        import torch_xla.distributed.xla_multiprocessing as xmp
        from torch.utils.data import DataLoader


        def _mp_fn(index, model, dataset, optimizer):
            loader = DataLoader(dataset, batch_size=32, drop_last=True)
            for epoch in range(3):
                for x, y in loader:
                    F.cross_entropy(model(x), y).backward()
                    optimizer.step()


        xmp.spawn(_mp_fn)
        """
    )
    after = dedent(
        """\
        import torch
        import torch.nn.functional as F
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.parallel_loader as pl
        import torch_xla.distributed.xla_multiprocessing as xmp
        from torch.utils.data import DataLoader


        def _mp_fn(index, model, dataset, optimizer):
            loader = DataLoader(dataset, batch_size=32, drop_last=True)
            for epoch in range(3):
                for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):
                    F.cross_entropy(model(x), y).backward()
                    xm.optimizer_step(optimizer)
                    torch_xla.sync()


        xmp.spawn(_mp_fn)
        """
    )
    codes = ("XLA401", "XLA402", "XLA403", "XLA404", "XLA405", "XLA406")
    assert fixed(before, *codes) == after
