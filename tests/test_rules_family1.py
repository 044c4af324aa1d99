"""Family 1 (host syncs): what the fixtures cannot say.

Fixtures pin which lines are flagged. These tests pin the rest: the text of XLA103's fix and
the imports it needs, columns, that a finding is reported once, and that XLA103 and XLA105
never both claim the same hand-written clipping `if`.
"""

from __future__ import annotations

from textwrap import dedent

from xlalint.diagnostics import Applicability, Diagnostic
from xlalint.engine import lint_source
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode


def lint(source: str, *codes: str) -> list[Diagnostic]:
    rules = [all_rules()[code] for code in codes]
    result = lint_source(dedent(source), "t.py", rules)
    assert result.error is None
    return result.diagnostics


def fixed(source: str, code: str) -> str:
    raw = dedent(source).encode()
    return fix_text(decode(raw), "t.py", [all_rules()[code]], unsafe=True).text


def test_xla103_ternary_fix_selects_with_torch_where() -> None:
    source = """\
        import torch

        def forward(self, x):
            h = self.body(x)
            return h * (0.5 if h.abs().max() > 10 else 1.0)
        """
    [diagnostic] = lint(source, "XLA103")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed(source, "XLA103") == dedent(
        """\
        import torch

        def forward(self, x):
            h = self.body(x)
            return h * (torch.where(h.abs().max() > 10, 0.5, 1.0))
        """
    )


def test_xla103_fix_uses_the_files_torch_alias() -> None:
    source = """\
        import torch as th

        def forward(self, x):
            y = x if x.sum() > 0 else -x
            return y
        """
    [diagnostic] = lint(source, "XLA103")
    assert diagnostic.fix is not None
    assert diagnostic.fix.required_imports == ()
    assert "y = th.where(x.sum() > 0, x, -x)" in fixed(source, "XLA103")


def test_xla103_fix_adds_import_torch_when_missing() -> None:
    source = """\
        from torch import nn

        def forward(self, x):
            return x if x.sum() > 0 else x * 2
        """
    [diagnostic] = lint(source, "XLA103")
    assert diagnostic.fix is not None
    assert diagnostic.fix.required_imports == ("import torch",)
    output = fixed(source, "XLA103")
    assert "import torch\n" in output
    assert "return torch.where(x.sum() > 0, x, x * 2)" in output


def test_xla103_no_fix_when_a_branch_is_not_selectable() -> None:
    source = """\
        import torch

        def forward(self, x, mask):
            a = "big" if x.sum() > 0 else "small"
            b = x if mask.any() else x * 2
            c = x if x.sum() > 0 and mask.any() else x * 2
            return a, b, c
        """
    diagnostics = lint(source, "XLA103")
    assert [d.start.row for d in diagnostics] == [4, 5, 6, 6]
    assert all(d.fix is None for d in diagnostics)


def test_xla103_and_xla105_split_the_clipping_if() -> None:
    source = """\
        import torch

        def train(model, loader, max_norm):
            for x, y in loader:
                params = list(model.parameters())
                total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
                clip_coef = max_norm / (total_norm + 1e-6)
                if clip_coef < 1:
                    for p in params:
                        p.grad.detach().mul_(clip_coef)
                if total_norm > 100:
                    print("exploding")
        """
    codes = [(d.start.row, d.code) for d in lint(source, "XLA103", "XLA105")]
    assert codes == [(8, "XLA105"), (11, "XLA103")]


def test_xla102_chain_reported_once_at_the_first_copy() -> None:
    source = """\
        import torch

        def forward(self, x):
            y = self.net(x)
            return y.detach().cpu().numpy(), y.to("cpu").tolist()
        """
    diagnostics = lint(source, "XLA102")
    assert [(d.start.row, d.start.column) for d in diagnostics] == [(5, 23), (5, 40)]
    assert ".cpu()" in diagnostics[0].message
    assert '.to("cpu")' in diagnostics[1].message


def test_xla104_print_of_an_fstring_is_one_finding() -> None:
    source = """\
        import torch

        def train(model, loader):
            for x, y in loader:
                loss = model(x)
                print(f"loss {loss} {str(loss)}")
        """
    [diagnostic] = lint(source, "XLA104")
    assert diagnostic.message.startswith("`print()`")


def test_xla106_resolves_names_through_imports() -> None:
    source = """\
        import torch_xla.core.xla_model as xla
        from torch_xla import sync

        class xm:
            @staticmethod
            def wait_device_ops():
                pass

        def train(loader):
            for batch in loader:
                xla.wait_device_ops()
                xm.wait_device_ops()
                sync(wait=True)
                sync()
        """
    assert [d.start.row for d in lint(source, "XLA106")] == [11, 13]


def test_xla103_reports_each_operand_whose_truth_is_taken() -> None:
    source = """\
        import torch

        def forward(self, x, mask):
            a = bool(x.sum() > 0 or mask.any())
            b = bool(-x.sum())
            c = mask.any() and x.sum()
            d = bool(x.shape[0] > 1 and x.ndim == 2)
            return a, b, c, d
        """
    found = [(d.start.row, d.start.column, d.message.split(" ")[0]) for d in lint(source, "XLA103")]
    assert found == [(4, 14, "`or`"), (4, 29, "`bool()`"), (5, 14, "`bool()`"), (6, 9, "`and`")]
