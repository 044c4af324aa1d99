"""Family 1 (host syncs): what the fixtures cannot say.

Fixtures pin which lines are flagged. These tests pin the rest: the exact text of each fix
(XLA101, XLA103, XLA104, XLA105) and the imports it needs, where each fix is withheld,
columns, that a finding is reported once, and that XLA103 and XLA105 never both claim the
same hand-written clipping `if`.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from xlalint.diagnostics import Applicability, Diagnostic
from xlalint.engine import lint_source
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.sources import decode

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


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
            h = torch.tanh(x)
            return h * (0.5 if h.abs().max() > 10 else 1.0)
        """
    [diagnostic] = lint(source, "XLA103")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed(source, "XLA103") == dedent(
        """\
        import torch

        def forward(self, x):
            h = torch.tanh(x)
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
    # `x.sum() > 0 and mask.any()` is one condition: reported once.
    assert [d.start.row for d in diagnostics] == [4, 5, 6]
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
            print(y.detach().cpu().numpy())
            return self.head(x).to("cpu").tolist()
        """
    diagnostics = lint(source, "XLA102")
    assert [(d.start.row, d.start.column) for d in diagnostics] == [(5, 22), (6, 25)]
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


def test_xla103_reports_each_truth_taken_once_per_condition() -> None:
    # An `and`/`or` chain is one condition (one fix folds it into a device expression):
    # `x.sum() > 0 or mask.any()` is reported at its first tensor operand only.
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
    assert found == [(4, 14, "`or`"), (5, 14, "`bool()`"), (6, 9, "`and`")]


# -- XLA105: hand-written clipping -> `torch.where`, scaling unconditionally ----------------


def safe_fixed(source: str, code: str) -> str:
    """The safe fixes of `code` only; they must parse and be stable."""
    raw = dedent(source).encode()
    rules = [all_rules()[code]]
    outcome = fix_text(decode(raw), "t.py", rules)
    assert outcome.error is None and not outcome.dropped
    again = fix_text(decode(outcome.encoded()), "t.py", rules)
    assert again.text == outcome.text and not again.applied
    return outcome.text


CLIP_LOOP = """\
    import torch

    def train(model, loader, max_norm):
        for x, y in loader:
            params = [p for p in model.parameters() if p.grad is not None]
            total_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
            clip_coef = max_norm / (total_norm + 1e-6)
            if clip_coef < 1:
                for p in params:
                    p.grad.detach().mul_(clip_coef)
            optimizer.step()
    """


def test_xla105_fix_is_safe_and_scales_by_torch_where() -> None:
    [diagnostic] = lint(CLIP_LOOP, "XLA105")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.SAFE
    assert diagnostic.fix.required_imports == ()
    assert safe_fixed(CLIP_LOOP, "XLA105") == dedent(
        """\
        import torch

        def train(model, loader, max_norm):
            for x, y in loader:
                params = [p for p in model.parameters() if p.grad is not None]
                total_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
                clip_coef = max_norm / (total_norm + 1e-6)
                for p in params:
                    p.grad.detach().mul_(torch.where(clip_coef < 1, clip_coef, 1.0))
                optimizer.step()
        """
    )


@pytest.mark.parametrize(
    ("clipping", "expected"),
    [
        (  # the norm against the maximum, foreach
            """\
            if total_norm > self.max_norm:
                torch._foreach_mul_([p.grad for p in params], self.max_norm / total_norm)
            """,
            """\
            torch._foreach_mul_([p.grad for p in params], torch.where(total_norm > self.max_norm, self.max_norm / total_norm, 1.0))
            """,  # noqa: E501
        ),
        (  # division, `<=`, reversed sides
            """\
            if max_norm <= total_norm:
                for g in grads:
                    g.div_(total_norm / max_norm)
            """,
            """\
            for g in grads:
                g.div_(torch.where(max_norm <= total_norm, total_norm / max_norm, 1.0))
            """,
        ),
        (  # augmented assignment, a `None` guard, several statements, comments
            """\
            if clip_coef < 1.0:  # clip
                # scale every gradient
                for p in params:
                    if p.grad is not None:
                        p.grad *= clip_coef  # in place
                torch._foreach_div_(extra_grads, 1 / clip_coef)
            """,
            """\
            # clip
            # scale every gradient
            for p in params:
                if p.grad is not None:
                    p.grad *= torch.where(clip_coef < 1.0, clip_coef, 1.0)  # in place
            torch._foreach_div_(extra_grads, torch.where(clip_coef < 1.0, 1 / clip_coef, 1.0))
            """,
        ),
    ],
)
def test_xla105_fix_of_each_recognised_shape(clipping: str, expected: str) -> None:
    def program(body: str) -> str:
        indented = "".join(f"            {line}\n" for line in dedent(body).splitlines())
        return (
            "import torch\n\nclass Trainer:\n    def training_step(self, x):\n"
            "        for chunk in x:\n"
            "            total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))\n"
            "            clip_coef = self.max_norm / (total_norm + 1e-6)\n"
            "            max_norm = self.max_norm\n"
            f"{indented}"
            "        return x\n"
        )

    assert [d.code for d in lint(program(clipping), "XLA105")] == ["XLA105"]
    assert safe_fixed(program(clipping), "XLA105") == program(expected)


def test_xla105_fix_keeps_the_file_style() -> None:
    source = (
        "import torch as th\r\n\r\nfor x in loader:\r\n\tnorm = th.norm(x)\r\n"
        "\tif norm > 1:\r\n\t\tfor g in grads:\r\n\t\t\tg.mul_(1 / norm)\r\n\tstep()\r\n"
    )
    assert safe_fixed(source, "XLA105") == (
        "import torch as th\r\n\r\nfor x in loader:\r\n\tnorm = th.norm(x)\r\n"
        "\tfor g in grads:\r\n\t\tg.mul_(th.where(norm > 1, 1 / norm, 1.0))\r\n\tstep()\r\n"
    )


def test_xla105_fix_adds_import_torch_when_only_a_function_imports_it() -> None:
    source = """\
        def clip(params, max_norm):
            import torch
            total = torch.norm(torch.stack([p.grad.norm() for p in params]))
            for _ in range(3):
                if total > max_norm:
                    for p in params:
                        p.grad.mul_(max_norm / total)
        """
    output = safe_fixed(source, "XLA105")
    assert output.startswith("import torch\ndef clip(params, max_norm):\n")
    assert "p.grad.mul_(torch.where(total > max_norm, max_norm / total, 1.0))" in output


@pytest.mark.parametrize(
    "clipping",
    [
        # an `else` branch
        "if clip_coef < 1:\n    p.grad.mul_(clip_coef)\nelse:\n    count += 1\n",
        # the body does something else too
        "if clip_coef < 1:\n    p.grad.mul_(clip_coef)\n    clipped += 1\n",
        "if clip_coef < 1:\n    p.grad.mul_(clip_coef)\n    print('clipped')\n",
        "if clip_coef < 1:\n    for p in params:\n        p.grad.mul_(clip_coef)\n"
        "        p.grad.add_(1)\n",
        # a factor with a call (side effects unknown)
        "if total_norm > 1:\n    p.grad.mul_(1 / total_norm.clamp(min=1e-6))\n",
        # a condition with a call, or reading the gradients the body changes
        "if clip_coef.max() < 1:\n    p.grad.mul_(clip_coef)\n",
        "if clip_coef < p.grad:\n    p.grad.mul_(clip_coef)\n",
        # a condition on the loop variable of the body
        "if clip_coef < 1:\n    for clip_coef in coefs:\n        p.grad.mul_(clip_coef)\n",
        # a loop with `else`, over a call that may have effects
        "if clip_coef < 1:\n    for p in params:\n        p.grad.mul_(clip_coef)\n"
        "    else:\n        pass\n",
        "if clip_coef < 1:\n    for p in fetch(params):\n        p.grad.mul_(clip_coef)\n",
        # a guard that reads a value
        "if clip_coef < 1:\n    for p in params:\n        if p.requires_grad:\n"
        "            p.grad.mul_(clip_coef)\n",
        # keywords
        "if clip_coef < 1:\n    p.grad.mul_(other=clip_coef)\n",
        # one line
        "if clip_coef < 1: p.grad.mul_(clip_coef)\n",
    ],
)
def test_xla105_no_fix_where_not_exactly_equivalent(clipping: str) -> None:
    indented = "".join(f"        {line}\n" for line in clipping.splitlines())
    source = (
        "import torch\n\ndef train(params, loader):\n    for x in loader:\n"
        "        total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))\n"
        "        clip_coef = 1.0 / (total_norm + 1e-6)\n"
        f"{indented}"
    )
    diagnostics = lint(source, "XLA105")
    assert [d.code for d in diagnostics] == ["XLA105"], source
    assert diagnostics[0].fix is None, source


def test_xla105_no_fix_for_an_elif_or_error_if_nonfinite() -> None:
    source = """\
        import torch

        def train(params, loader):
            for x in loader:
                total_norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
                clip_coef = 1.0 / (total_norm + 1e-6)
                if skip:
                    pass
                elif clip_coef < 1:
                    for p in params:
                        p.grad.mul_(clip_coef)
                torch.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
        """
    diagnostics = lint(source, "XLA105")
    assert [(d.start.row, d.fix) for d in diagnostics] == [(9, None), (12, None)]


def test_xla105_fixed_clipping_leaves_nothing_for_xla103() -> None:
    output = safe_fixed(CLIP_LOOP, "XLA105")
    assert lint(output, "XLA103", "XLA105") == []


# -- XLA104: printing and logging -> `xm.add_step_closure` -----------------------------------


def unsafe_fixed(source: str, code: str) -> str:
    """The fixes of `code`, unsafe ones included; they must parse and be stable."""
    raw = dedent(source).encode()
    rules = [all_rules()[code]]
    outcome = fix_text(decode(raw), "t.py", rules, unsafe=True)
    assert outcome.error is None and not outcome.dropped
    compile(outcome.text, "<fixed>", "exec")
    again = fix_text(decode(outcome.encoded()), "t.py", rules, unsafe=True)
    assert again.text == outcome.text and not again.applied
    return outcome.text


def in_loop(*statements: str, imports: str = "import torch_xla.core.xla_model as xm\n") -> str:
    body = "".join(f"        {s}\n" for s in statements)
    return (
        f"import logging\nimport torch\n{imports}\nlogger = logging.getLogger(__name__)\n\n"
        "def train(model, loader, writer):\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        loss = model(x, y)\n"
        f"{body}"
    )


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # the direct form: the arguments themselves, formatted by print after the step
        ("print(loss)", "xm.add_step_closure(print, args=(loss,))"),
        ('print("loss", loss, step)', 'xm.add_step_closure(print, args=("loss", loss, step))'),
        (
            'print("mean", loss.mean(), {"loss": loss})',
            'xm.add_step_closure(print, args=("mean", loss.mean(), {"loss": loss}))',
        ),
        (
            'xm.master_print(f"step {step}", loss)',
            'xm.add_step_closure(xm.master_print, args=(f"step {step}", loss))',
        ),
        # the lambda form: the call as written, the names it reads bound now
        (
            'print(f"step {step} loss {loss:.4f}")',
            'xm.add_step_closure(lambda step, loss: print(f"step {step} loss {loss:.4f}"), '
            "args=(step, loss))",
        ),
        (
            'print(f"{loss} {loss!r}", "x" + str(loss), "%s" % loss, flush=True)',
            'xm.add_step_closure(lambda loss: print(f"{loss} {loss!r}", "x" + str(loss), '
            '"%s" % loss, flush=True), args=(loss,))',
        ),
        (
            'logger.info("step %d loss %s", step, loss)',
            'xm.add_step_closure(lambda step, loss: logger.info("step %d loss %s", step, loss), '
            "args=(step, loss))",
        ),
        (
            'logging.warning("loss {:.3f}".format(loss))',
            'xm.add_step_closure(lambda loss: logging.warning("loss {:.3f}".format(loss)), '
            "args=(loss,))",
        ),
        (
            'writer.add_scalar("train/loss", loss, step)',
            "xm.add_step_closure(lambda loss, step: "
            'writer.add_scalar("train/loss", loss, step), args=(loss, step))',
        ),
        # logging with other arguments: the direct form
        (
            'logger.info("norm %s", model.weight.grad.norm())',
            'xm.add_step_closure(logger.info, args=("norm %s", model.weight.grad.norm()))',
        ),
        # parentheses around the call stay around the new one
        ("(print(loss))", "(xm.add_step_closure(print, args=(loss,)))"),
    ],
)
def test_xla104_fix_defers_the_call_to_a_step_closure(statement: str, expected: str) -> None:
    [diagnostic] = lint(in_loop(statement), "XLA104")
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert unsafe_fixed(in_loop(statement), "XLA104") == in_loop(expected)
    assert lint(in_loop(expected), "XLA104") == []  # a closure's body is not hot


@pytest.mark.parametrize(
    ("imports", "spelled", "added"),
    [
        ("import torch_xla.core.xla_model as xla\n", "xla.add_step_closure", ""),
        (
            "from torch_xla.core.xla_model import add_step_closure\n",
            "add_step_closure",
            "",
        ),
        ("import torch_xla\n", "xm.add_step_closure", "import torch_xla.core.xla_model as xm\n"),
        ("", "xm.add_step_closure", "import torch_xla.core.xla_model as xm\n"),
    ],
)
def test_xla104_fix_writes_add_step_closure_in_the_files_style(
    imports: str, spelled: str, added: str
) -> None:
    output = unsafe_fixed(in_loop("print(loss)", imports=imports), "XLA104")
    assert output == in_loop(f"{spelled}(print, args=(loss,))", imports=imports + added)


@pytest.mark.parametrize(
    "statement",
    [
        "print(*losses, loss)",  # unpacking
        "print(**{'sep': loss})",
        "shown = print(loss)",  # the value is used
        "print(loss) if verbose else None",
        'print(f"{(last := loss)}")',  # walrus
        'print(f"{loss.mean()}")',  # the lambda form would compute it after the step
        'print(f"{loss:{width}}")',
        'print(f"{loss}", file=streams[0])',
        'logger.exception("failed at %s", loss)',  # reads the exception being handled
        'logger.info("loss %s", loss, exc_info=True)',
        'logger.info("loss %s", loss, stacklevel=2)',
        'print(f"{loss}") or print(f"{loss}")',
    ],
)
def test_xla104_no_fix(statement: str) -> None:
    diagnostics = lint(in_loop(statement), "XLA104")
    assert diagnostics, statement
    assert all(d.fix is None for d in diagnostics), statement


def test_xla104_fixture_fixes_compile_and_are_stable() -> None:
    source = (FIXTURES / "XLA104" / "bad_logging.py").read_text()
    output = unsafe_fixed(source, "XLA104")
    assert "xm.add_step_closure(print, args=(loss,))  # expect: XLA104" in output
    # What is left: formatting outside a call that could be deferred.
    remaining = [d.start.row for d in lint(output, "XLA104")]
    assert remaining == [42, 43, 44]


# -- XLA101 and XLA103: edge cases of their fixes ---------------------------------------------


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("total += loss.item()", "total += loss.detach()"),
        ("total += (loss.item())", "total += (loss.detach())"),  # no doubled parentheses
        ("total += loss.detach().item()", "total += loss.detach()"),
        ("total += (loss.detach()).item()", "total += loss.detach()"),
        ("stats['loss'] += loss.item()", "stats['loss'] += loss.detach()"),
    ],
)
def test_xla101_fix(statement: str, expected: str) -> None:
    def program(line: str) -> str:
        return f"import torch\n\nfor x in loader:\n    loss = model(x)\n    {line}\n"

    assert unsafe_fixed(program(statement), "XLA101") == program(expected)


@pytest.mark.parametrize(
    "statement",
    [
        "total = total + loss.item()",
        "total -= loss.item()",
        "total += loss.item() * 2",
        "history.append(loss.item())",
    ],
)
def test_xla101_no_fix(statement: str) -> None:
    source = f"import torch\n\nfor x in loader:\n    loss = model(x)\n    {statement}\n"
    [diagnostic] = lint(source, "XLA101")
    assert diagnostic.fix is None


@pytest.mark.parametrize(
    "expression",
    ["x if x.sum() != 'nan' else -x", "x if 'train' == x.sum() else -x"],
)
def test_xla103_equality_with_a_string_reads_nothing(expression: str) -> None:
    # A tensor's `==`/`!=` refuse a string operand and Python compares identities: a
    # Python bool, no device read (`torch.tensor(1.0) != "nan"` is the Python `True`).
    source = f"import torch\n\ndef forward(self, x):\n    return {expression}\n"
    assert lint(source, "XLA103") == []


@pytest.mark.parametrize(
    "expression",
    ["x if x.sum() == None else -x", "x if None != x.sum() else -x"],
)
def test_xla103_equality_with_none_reads_nothing(expression: str) -> None:
    # A tensor hands `==`/`!=` with None back to Python, which compares identities: a
    # Python bool, no device read (pykan's `self.cache_data != None`, measured: 0 transfers).
    source = f"import torch\n\ndef forward(self, x):\n    return {expression}\n"
    assert lint(source, "XLA103") == []


def test_xla103_fix_ignores_a_torch_alias_local_to_another_function() -> None:
    source = """\
        def setup():
            import torch as th
            return th.zeros(1)

        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x if x.sum() > 0 else -x
        """
    output = unsafe_fixed(source, "XLA103")
    assert "return torch.where(x.sum() > 0, x, -x)" in output
    assert output.startswith("import torch\ndef setup():")


NO_TORCH_LOOP = """\
def train(model, loader, criterion):
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        if loss > 10:
            print(loss)
        total += loss.item()
    return total
"""


@pytest.mark.parametrize("code", ["XLA101", "XLA103", "XLA104"])
def test_host_sync_rules_need_a_file_that_uses_torch(code: str) -> None:
    """Tensor-ness is inferred (`loss` from `criterion(...)`), so a file that never mentions
    torch gets no finding: the standard library's `if m:` over module objects must not."""
    rule = all_rules()[code]
    assert lint_source(NO_TORCH_LOOP, "t.py", [rule]).diagnostics == []
    with_torch = "import torch\n\n\n" + NO_TORCH_LOOP
    assert [d.code for d in lint_source(with_torch, "t.py", [rule]).diagnostics] == [code]
