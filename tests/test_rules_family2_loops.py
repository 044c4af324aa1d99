"""Family 2, the loop and data rules (XLA205-XLA209): fixes, and what fixtures cannot say.

Fixtures pin which lines are flagged. These tests pin the exact text of XLA205's and
XLA208's fixes (through the real fixer: it parses, and fixing twice equals fixing once),
the cases that are reported without a fix, and which rule owns which part of a
data-dependent loop (XLA101/XLA107 the read, XLA209 the trip count).
"""

from __future__ import annotations

from textwrap import dedent

import pytest

from xlalint.diagnostics import Applicability, Diagnostic
from xlalint.engine import lint_source
from xlalint.fixer import FixOutcome, fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode


def lint(source: str, *codes: str) -> list[Diagnostic]:
    result = lint_source(dedent(source), "t.py", [all_rules()[code] for code in codes])
    assert result.error is None
    return result.diagnostics


def fix(source: str, *codes: str, unsafe: bool = False) -> FixOutcome:
    """Fix `source` with `codes`; the result parses and a second run changes nothing."""
    rules = [all_rules()[code] for code in codes]
    outcome = fix_text(decode(dedent(source).encode()), "t.py", rules, unsafe=unsafe)
    assert outcome.error is None and not outcome.dropped
    compile(outcome.text, "<fixed>", "exec")
    again = fix_text(decode(outcome.encoded()), "t.py", rules, unsafe=unsafe)
    assert again.text == outcome.text and not again.applied
    return outcome


# -- XLA205 dataloader-drop-last: unsafe `drop_last=True` -------------------------------------
LOADER_HEAD = "from torch.utils.data import DataLoader\n\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "train_loader = DataLoader(ds, batch_size=32, shuffle=True)\n",
            "train_loader = DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)\n",
        ),
        (
            "loader = DataLoader(ds, 32, True)\n",
            "loader = DataLoader(ds, 32, True, drop_last=True)\n",
        ),
        (
            "loader = DataLoader(ds, batch_size=32, shuffle=True, drop_last=False)\n",
            "loader = DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)\n",
        ),
        (
            "train_loader = DataLoader(\n    train_set,\n    batch_size=64,\n"
            "    shuffle=True,\n)\n",
            "train_loader = DataLoader(\n    train_set,\n    batch_size=64,\n"
            "    shuffle=True, drop_last=True,\n)\n",
        ),
        (
            "train_loader = DataLoader(\n    train_set,\n    batch_size=64,\n    shuffle=True\n)\n",
            "train_loader = DataLoader(\n    train_set,\n    batch_size=64,\n"
            "    shuffle=True, drop_last=True\n)\n",
        ),
        (
            "train_loader = DataLoader(train_set, batch_size=8  )  # last\n",
            "train_loader = DataLoader(train_set, batch_size=8, drop_last=True  )  # last\n",
        ),
        (
            "class M:\n    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=self.bs)\n",
            "class M:\n    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=self.bs, drop_last=True)\n",
        ),
    ],
)
def test_xla205_adds_drop_last(before: str, after: str) -> None:
    [diagnostic] = lint(LOADER_HEAD + before, "XLA205")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fix(LOADER_HEAD + before, "XLA205").text == LOADER_HEAD + before  # not without --unsafe
    assert fix(LOADER_HEAD + before, "XLA205", unsafe=True).text == LOADER_HEAD + after


def test_xla205_no_fix_when_the_last_argument_spans_lines_up_to_the_parenthesis() -> None:
    source = (
        LOADER_HEAD
        + "train_loader = DataLoader(\n    ds, batch_size=2, shuffle=True, collate_fn=partial(\n"
        "        pad, value=0\n    )\n)\n"
    )
    [diagnostic] = lint(source, "XLA205")
    assert diagnostic.fix is None


# -- XLA208 host-tensor-in-loop: safe `device=` ------------------------------------------------
def forward(body: str, head: str = "import torch\n") -> str:
    return f"{head}\n\ndef forward(self, x):\n    return {body}\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("torch.arange(x.shape[1]).to(x.device)", "torch.arange(x.shape[1], device=x.device)"),
        (
            "torch.ones(4, 4, dtype=torch.bool).to(x.device, non_blocking=True)",
            "torch.ones(4, 4, dtype=torch.bool, device=x.device)",
        ),
        ("torch.zeros(3).float().to(device=x.device)", "torch.zeros(3, device=x.device).float()"),
        ("torch.zeros(3)[None].to(x.device)", "torch.zeros(3, device=x.device)[None]"),
        ('torch.zeros(3, device="cpu").to(x.device)', "torch.zeros(3, device=x.device)"),
        ("torch.zeros(3,).to(x.device)", "torch.zeros(3, device=x.device,)"),
        ("(torch.full((2,), 0.5).to(x.device))", "(torch.full((2,), 0.5, device=x.device))"),
        ('torch.eye(3).to("xla")', 'torch.eye(3, device="xla")'),
        (
            "torch.linspace(0, 1, 8).to(self.device) * x",
            "torch.linspace(0, 1, 8, device=self.device) * x",
        ),
        # Arithmetic by a number on either side; the receiver's parentheses stay where
        # dropping them would regroup the expression around it.
        (
            "x / (torch.arange(8) * 2).to(x.device)",
            "x / (torch.arange(8, device=x.device) * 2)",
        ),
        (
            "x - (-2.0 * torch.arange(8) / 8).to(x.device)",
            "x - (-2.0 * torch.arange(8, device=x.device) / 8)",
        ),
    ],
)
def test_xla208_builds_on_the_device(before: str, after: str) -> None:
    [diagnostic] = lint(forward(before), "XLA208")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.SAFE
    assert fix(forward(before), "XLA208").text == forward(after)


@pytest.mark.parametrize(
    "body",
    [
        "torch.exp(-math.log(10000) * torch.arange(8) / 8).to(x.device)",
        "torch.arange(8).float().exp().to(x.device)",
        "(0.5 ** torch.arange(8)).to(x.device)",
    ],
)
def test_xla208_reports_host_math_without_a_fix(body: str) -> None:
    # The device's `exp`/`pow` may round otherwise than the host's: reported, not rewritten.
    [diagnostic] = lint(forward(body, head="import math\nimport torch\n"), "XLA208")
    assert diagnostic.fix is None


def test_xla208_fix_keeps_the_files_torch_alias() -> None:
    source = forward("th.arange(8).to(x.device)", head="import torch as th\n")
    assert fix(source, "XLA208").text == forward(
        "th.arange(8, device=x.device)", "import torch as th\n"
    )


def test_xla208_and_xla301_fix_a_cuda_move_in_two_rounds() -> None:
    # XLA301 turns `.cuda()` into `.to(torch_xla.device())`; then XLA208 folds the move.
    outcome = fix(forward("torch.zeros(3).cuda()"), "XLA208", "XLA301")
    assert outcome.text == forward(
        "torch.zeros(3, device=torch_xla.device())", head="import torch\nimport torch_xla\n"
    )


@pytest.mark.parametrize(
    "body",
    [
        "torch.zeros(3).to(x.device, torch.float16)",  # the move also casts
        "torch.zeros(3).to(device=x.device, dtype=x.dtype)",
        "torch.zeros(3).to(x.device, memory_format=torch.channels_last)",
        "torch.zeros(3, requires_grad=True).to(x.device)",  # a leaf on the host
        "torch.zeros(3, pin_memory=True).to(x.device)",
        "torch.zeros(3).cuda()",
        "torch.zeros(\n        3,\n    ).to(x.device)",
    ],
)
def test_xla208_reports_without_fix(body: str) -> None:
    [diagnostic] = lint(forward(body), "XLA208")
    assert diagnostic.fix is None


@pytest.mark.parametrize(
    ("indexed", "named"),
    [
        ("logprobs", "the device tensor `logprobs`"),
        # Too long (or multi-line) to quote: described, not renamed.
        ("F.log_softmax(logits.float() / temperature_of_this_step, dim=-1)", "the indexed tensor"),
    ],
)
def test_xla208_host_index_message_names_the_indexed_tensor(indexed: str, named: str) -> None:
    source = f"""\
        import torch
        import torch.nn.functional as F

        def decode(model, tokens, steps, temperature_of_this_step):
            total = 0
            for _ in range(steps):
                logits = model(tokens)[:, -1]
                logprobs = F.log_softmax(logits.float(), dim=-1)
                total += {indexed}[torch.arange(tokens.shape[0]), tokens[:, -1]]
            return total
        """
    [diagnostic] = lint(source, "XLA208")
    assert f"indexing {named} with it" in diagnostic.message


def test_xla208_two_statement_form_is_reported_without_fix() -> None:
    source = """\
        import torch

        def train(model, loader, device):
            base = torch.arange(16)
            for x in loader:
                model(x.to(device) + base.to(device))
        """
    [diagnostic] = lint(source, "XLA208")
    assert diagnostic.fix is None
    assert diagnostic.message.startswith("`base` (from `torch.arange(...)`)")


# -- XLA207 python-index-in-loop ----------------------------------------------------------------
def test_xla207_needs_a_loop_that_runs_the_device_every_pass() -> None:
    unrolled = """\
        import torch
        import torch_xla

        def run(X, steps, width):
            for step in range(steps):
                acc = X[0]
                for i in range(width):
                    acc = acc + X[i]
                torch_xla.sync()
        """
    X = "X = torch.randn(8, 16).to(torch_xla.device())\n"
    source = dedent(unrolled).replace(
        "def run(X, steps, width):\n", f"def run(steps, width):\n    {X}"
    )
    assert lint(source, "XLA207") == []  # the inner loop unrolls into each step's graph
    stepping = source.replace("acc = acc + X[i]", "acc = acc + X[i]\n            torch_xla.sync()")
    [diagnostic] = lint(stepping, "XLA207")
    assert (diagnostic.start.row, diagnostic.start.column) == (9, 25)
    assert diagnostic.fix is None
    assert diagnostic.hint is not None and "index_select" in diagnostic.hint
    assert "`i`" in diagnostic.message


def test_xla207_follows_ints_derived_from_the_index() -> None:
    source = """\
        import torch
        import torch_xla

        def run(n, bs, device):
            data = torch.randn(n * bs, 4, device=device)
            for i in range(n):
                start = i * bs
                end = min(start + bs, n * bs)
                batch = data[start:end]
                start = 0
                fixed = data[start:bs]
                torch_xla.sync()
        """
    assert [(d.start.row, d.message.split("`")[1]) for d in lint(source, "XLA207")] == [
        (9, "start")
    ]


# -- XLA209 data-dependent-trip-count: who owns what --------------------------------------------
def test_xla209_owns_the_trip_count_and_the_host_sync_rules_own_the_read() -> None:
    source = """\
        import torch

        def forward(self, x, lengths):
            for _ in range(lengths.max().item()):
                x = self.cell(x)
            for _ in range(lengths.sum()):
                x = self.cell(x)
            n = int(lengths.min())
            for _ in range(n):
                x = self.cell(x)
            return x
        """
    found = [
        (d.start.row, d.start.column, d.code) for d in lint(source, "XLA101", "XLA107", "XLA209")
    ]
    assert found == [
        (4, 14, "XLA209"),  # `range(...)`: the number of passes
        (4, 20, "XLA101"),  # `.item()`: the read
        (6, 14, "XLA209"),
        (6, 20, "XLA107"),  # the tensor handed to `range()`: its hidden read
        (8, 9, "XLA101"),
        (9, 14, "XLA209"),
    ]
    assert all(d.fix is None for d in lint(source, "XLA209"))


def test_xla209_skips_loops_that_sync_every_pass() -> None:
    source = """\
        import torch
        import torch_xla

        def forward(self, x, lengths):
            for _ in range(int(lengths.max())):
                x = self.cell(x)
                torch_xla.sync()
            return x
        """
    assert lint(source, "XLA209") == []


# -- XLA206 dynamic-padding ----------------------------------------------------------------------
def test_xla206_reports_collate_functions_found_through_collate_fn() -> None:
    source = """\
        from torch.utils.data import DataLoader

        def batchify(examples):
            return tokenizer([e["text"] for e in examples], padding="longest")

        def tokenize(examples):
            return tokenizer(examples["text"], padding=True)

        loader = DataLoader(data, batch_size=8, collate_fn=batchify)
        """
    [diagnostic] = lint(source, "XLA206")
    assert diagnostic.start.row == 4
    assert diagnostic.fix is None
    assert diagnostic.hint is not None and "max_length" in diagnostic.hint
