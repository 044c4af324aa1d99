"""Never break a user's code: every registered rule against generated and mutated sources,
and the odd files and runs a real codebase throws at the CLI.

tests/test_fixer.py::test_random_programs proves the fix engine with test-only rules; here
the real rules (xlalint.registry.all_rules()) run over programs built from their own
patterns and from the fixtures, re-indented, commented, nested, re-aliased and mutated.
Whatever the input: linting and fixing return (with an error for input that does not
parse), a fixed file parses and compiles, fixing it again changes nothing, and each line no
finding or edit touches is still there, byte for byte and in order.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pytest
from conftest import BAD, CLEAN, SELECT, run_cli, write
from fix_promises import compiles, lost_untouched_row, recorded_rounds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xlalint.engine import lint_source
from xlalint.fixer import fix_text
from xlalint.registry import all_rules
from xlalint.rule import Rule
from xlalint.sources import SourceError, decode

ROOT = Path(__file__).resolve().parent.parent
RULES: list[type[Rule]] = list(all_rules().values())
BUDGET = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- the generators ---------------------------------------------------------------------------

HEADERS = [
    "import torch\n",
    "import torch as T\n",
    "import torch.nn as nn\n",
    "import torch_xla\n",
    "import torch_xla.core.xla_model as xm\n",
    "from torch_xla.core import xla_model as xm\n",
    "import torch_xla.core.xla_model as xmm\n",
    "from torch.utils.data import DataLoader\n",
    "import torch_xla.distributed.parallel_loader as pl\n",
    "import copy\n",
    "import os\n",
    "from __future__ import annotations\n",
]
# Statements around the rules' patterns; `{}` marks the spots a name can be swapped in.
STATEMENTS = [
    "loss = model(x)",
    "total += loss.item()",
    "print(loss.item())",
    "value = float(loss)",
    "x = x.cuda()",
    "model.cuda()",
    "y = torch.ones(3).cuda(non_blocking=True)",
    'd = torch.device("cuda")',
    'x = x.to("cuda:0")',
    "x[mask] = 0",
    "s = x[m].sum()",
    "idx = x.nonzero()",
    "xm.mark_step()",
    "xmm.mark_step()",
    "device = xm.xla_device()",
    "torch.save(model.state_dict(), p)",
    "xm.save(model.state_dict(), p)",
    "loss.backward()",
    "optimizer.step()",
    "optimizer.zero_grad()",
    "xm.optimizer_step(optimizer)",
    "model = model.half()",
    "x = x.to(torch.float16)",
    "arr = out.cpu().numpy()",
    "n = len(x.nonzero())",
    "u = torch.unique(x)",
    "w = copy.deepcopy(x)",
    'os.environ["XLA_USE_BF16"] = "1"',
    "torch.cuda.synchronize()",
    "scaler = torch.cuda.amp.GradScaler()",
    "z = torch.zeros(4)",
    "k = x.view(x.size(0), -1)",
    "pass",
    "return loss",
    "continue",
    "t = T.ones(2).cuda()",
    "loader = DataLoader(ds, batch_size=8)",
    "state = torch.load(p, map_location='cpu')",
    "a, b = x.max(0)",
    "x = x * 2  # a comment: x.item()",
    "s = 'x.cuda() in a string'",
]
HEADS = [
    "for x, y in loader:",
    "for step, batch in enumerate(loader):",
    "for i in range(n):",
    "while True:",
    "while loss.item() > 0:",
    "if t.sum() > 0:",
    "if x.nonzero().numel():",
    "if torch.cuda.is_available():",
    "with torch.no_grad():",
    "try:",
    "def forward(self, x):",
    "def train(model, loader, optimizer):",
    "def train_one_epoch(model, loader):",
    "async def sample(x):",
    "class Trainer:",
    "class Net(nn.Module):",
    "for batch in DataLoader(ds):",
    "for x in pl.MpDeviceLoader(loader, device):",
]
COMMENTS = ["", "  # note", "  # noqa", "  # noqa: XLA101", "  # x.item()", "# type: ignore"]


@st.composite
def blocks(draw: st.DrawFn, depth: int = 0) -> list[tuple[int, str]]:
    """(depth, text) lines: statements and nested compound statements."""
    lines: list[tuple[int, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 5 and draw(st.integers(0, 2)) == 0:
            head = draw(st.sampled_from(HEADS))
            lines.append((depth, head))
            lines.extend(draw(blocks(depth + 1)))
            if head == "try:":
                lines.append((depth, "except Exception:"))
                lines.append((depth + 1, "pass"))
        else:
            statement = draw(st.sampled_from(STATEMENTS))
            lines.append((depth, statement + draw(st.sampled_from(COMMENTS[:5]))))
    return lines


def _render(lines: list[tuple[int, str]], indent: str, newlines: list[str]) -> str:
    out = []
    for i, (depth, text) in enumerate(lines):
        out.append(indent * depth + text + newlines[i % len(newlines)])
    return "".join(out)


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A program around the rules' patterns, in a random style."""
    header = draw(st.lists(st.sampled_from(HEADERS), max_size=5, unique=True))
    if "from __future__ import annotations\n" in header:  # must come first to parse
        header.remove("from __future__ import annotations\n")
        header.insert(0, "from __future__ import annotations\n")
    body = draw(blocks())
    indent = draw(st.sampled_from(["    ", "  ", "\t", "        "]))
    newlines = draw(st.lists(st.sampled_from(["\n", "\r\n"]), min_size=1, max_size=3))
    text = _render([(0, line.rstrip("\n")) for line in header] + body, indent, newlines)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no newline at the end of the file
    return text


@cache
def fixture_sources() -> list[str]:
    return [
        path.read_text(encoding="utf-8")
        for path in sorted(ROOT.glob("fixtures/XLA*/*.py"))
        if "__future__" not in path.read_text(encoding="utf-8")
    ]


@st.composite
def restyled_fixtures(draw: st.DrawFn) -> str:
    """A fixture, nested in a function or class, re-indented, commented, re-aliased."""
    text = draw(st.sampled_from(fixture_sources()))
    lines = text.splitlines()
    if draw(st.booleans()):
        text = text.replace(
            "import torch_xla.core.xla_model as xm", "from torch_xla.core import xla_model as xm"
        ).replace("import torch\n", "import torch as torch\n")
        lines = text.splitlines()
    wrapper = draw(st.sampled_from([None, "def _outer():", "class _Outer:", "if True:"]))
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    if indent != "    ":
        lines = [_reindent(line, indent) for line in lines]
    if wrapper:
        lines = [wrapper] + [indent + line if line.strip() else line for line in lines]
        lines.append(indent + "pass")
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        if lines[at].strip() and not lines[at].rstrip().endswith(("\\", ",", "(", "[")):
            lines[at] += draw(st.sampled_from(COMMENTS[1:]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + newline


def _reindent(line: str, indent: str) -> str:
    stripped = line.lstrip(" ")
    spaces = len(line) - len(stripped)
    return indent * (spaces // 4) + " " * (spaces % 4) + stripped


NOISE = [*"()[]{}:.\n\t #'\"\\", " if ", "\r"]


@st.composite
def mutated(draw: st.DrawFn, source: st.SearchStrategy[str]) -> str:
    """`source` with a few random edits: most of which break the syntax."""
    text = draw(source)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "swap"]))
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(NOISE)) + text[at:]
        elif kind == "duplicate":
            text = text[:at] + text[max(0, at - 20) : at] + text[at:]
        else:
            lines = text.splitlines(keepends=True)
            if len(lines) > 1:
                i = draw(st.integers(0, len(lines) - 2))
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
                text = "".join(lines)
    return text


# -- the properties ---------------------------------------------------------------------------


def assert_never_breaks(text: str, unsafe: bool) -> None:
    """The properties every input must keep."""
    try:
        source = decode(text.encode("utf-8"))
    except SourceError:
        return  # reported as a one-line error before any rule runs
    with recorded_rounds() as rounds:
        outcome = fix_text(source, "t.py", RULES, unsafe=unsafe)
    first = lint_source(source.text, "t.py", RULES)
    if first.error is not None:
        assert outcome.error is not None
        assert outcome.text == source.text and not outcome.applied
        return
    assert outcome.error is None
    # What CPython accepted before (as a tree, or compiled), it accepts after.
    for only_ast in (True, False):
        if compiles(source.text, only_ast):
            assert compiles(outcome.text, only_ast), outcome.text
    again = fix_text(decode(outcome.encoded()), "t.py", RULES, unsafe=unsafe)
    assert again.text == outcome.text, "fixing twice differs from fixing once"
    assert not again.applied
    # Each round changes only what its findings cover.
    for before, after, findings in rounds.changes():
        assert lost_untouched_row(before, after, findings) is None, (before, after)


def test_the_untouched_line_check_catches_a_lost_line() -> None:
    """The oracle the properties rely on: a line no finding covers must survive."""
    before = "import torch\nx = 1\ny = x.cuda()\nz = 2\nend = 3\n"
    [finding] = lint_source(before, "t.py", [all_rules()["XLA301"]]).diagnostics
    fixed = "x = 1\ny = x.to(torch_xla.device())\nz = 2\nend = 3\n"
    assert lost_untouched_row(before, fixed, [finding]) is None  # an import may go
    assert lost_untouched_row(before, fixed.replace("z = 2", "z = 3"), [finding]) == 4
    assert lost_untouched_row(before, fixed.replace("x = 1\n", ""), [finding]) == 2


@BUDGET
@given(programs(), st.booleans())
def test_generated_programs_never_break(text: str, unsafe: bool) -> None:
    assert_never_breaks(text, unsafe)


@BUDGET
@given(restyled_fixtures(), st.booleans())
def test_restyled_fixtures_never_break(text: str, unsafe: bool) -> None:
    assert_never_breaks(text, unsafe)


@BUDGET
@given(st.one_of(mutated(programs()), mutated(restyled_fixtures())), st.booleans())
def test_mutated_sources_never_crash(text: str, unsafe: bool) -> None:
    assert_never_breaks(text, unsafe)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(raw: bytes) -> None:
    try:
        source = decode(raw)
    except SourceError as error:
        assert "\n" not in str(error)
        return
    result = lint_source(source.text, "t.py", RULES)
    outcome = fix_text(source, "t.py", RULES, unsafe=True)
    assert (outcome.error is None) is (result.error is None)
    if result.error is not None:
        assert "\n" not in result.error.reason
        assert outcome.encoded() == raw


# -- named cases through the CLI --------------------------------------------------------------

TRAIN = BAD  # one XLA101 finding on row 8, with an unsafe fix `.item()` -> `.detach()`
FIX_ALL = ("fix", "--apply", "--unsafe-fixes", *SELECT)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"import torch\nx = t.item()\x00\n", "contains a null byte"),
        (b"import torch\nx = '\xff'.item()\n", "not valid utf-8"),
    ],
    ids=["null-byte", "invalid-utf8"],
)
def test_fix_apply_leaves_an_unreadable_file_byte_for_byte(
    project: Path, content: bytes, reason: str
) -> None:
    write(project, {"bad.py": content, "train.py": TRAIN})
    run = run_cli(*FIX_ALL, ".")
    assert run.error_lines == [run.error_lines[0]]
    assert run.error_lines[0].startswith("error: bad.py: ") and reason in run.error_lines[0]
    assert (project / "bad.py").read_bytes() == content
    assert ".detach()" in (project / "train.py").read_text()


def test_fix_keeps_each_lines_own_ending(project: Path) -> None:
    endings = ["\r\n", "\n", "\r\n", "\n", "\r\n", "\n", "\r\n", "\n", "\r\n"]
    lines = TRAIN.splitlines()
    raw = "".join(line + end for line, end in zip(lines, endings, strict=False)).encode()
    write(project, {"mixed.py": raw})
    run = run_cli(*FIX_ALL, "mixed.py")
    assert run.exit_code == 0, run
    assert (project / "mixed.py").read_bytes() == raw.replace(b".item()", b".detach()")


def test_fix_in_a_tab_indented_file(project: Path) -> None:
    raw = TRAIN.replace("    ", "\t").encode()
    write(project, {"tabs.py": raw})
    run = run_cli(*FIX_ALL, "tabs.py")
    assert run.exit_code == 0, run
    assert (project / "tabs.py").read_bytes() == raw.replace(b".item()", b".detach()")


def test_ten_thousand_line_file(project: Path) -> None:
    filler = "pass\n" * 10_000
    write(project, {"big.py": filler + TRAIN})
    run = run_cli("check", *SELECT, "--output-format", "json", "big.py")
    assert run.exit_code == 1 and run.stderr == ""
    assert run.findings() == [("big.py", 10_000 + 8, 18, "XLA101")]
    assert run_cli(*FIX_ALL, "big.py").exit_code == 0
    assert (project / "big.py").read_text() == filler + TRAIN.replace(".item()", ".detach()")


def test_ninety_deep_blocks_are_fixed(project: Path) -> None:
    body = "".join("    " * i + f"if c{i}:\n" for i in range(90))
    body += "    " * 90 + "for x, y in loader:\n" + "    " * 91 + "total += model(x).item()\n"
    deep = "import torch\n" + body
    write(project, {"deep.py": deep})
    run = run_cli(*FIX_ALL, "deep.py")
    assert run.exit_code == 0, run
    assert (project / "deep.py").read_text() == deep.replace(".item()", ".detach()")


def test_two_hundred_deep_brackets_are_an_error_not_a_crash(project: Path) -> None:
    deep = "import torch\nx = " + "(" * 200 + "t.item()" + ")" * 200 + "\n"
    write(project, {"deep.py": deep, "train.py": TRAIN})
    run = run_cli(*FIX_ALL, ".")
    assert run.exit_code == 1
    assert len(run.error_lines) == 1 and run.error_lines[0].startswith("error: deep.py: ")
    assert (project / "deep.py").read_text() == deep
    assert ".detach()" in (project / "train.py").read_text()


def _vanishing(monkeypatch: pytest.MonkeyPatch, name: str, action: str) -> None:
    """Delete or change `name` right after discovery listed it, before it is read."""
    from xlalint import api

    real = api.discover

    def discover(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        if action == "delete":
            os.remove(name)
        else:
            Path(name).write_text(CLEAN)
        return found

    monkeypatch.setattr(api, "discover", discover)


def test_file_deleted_during_the_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project, {"gone.py": TRAIN, "train.py": TRAIN})
    _vanishing(monkeypatch, "gone.py", "delete")
    run = run_cli("check", *SELECT, "--output-format", "json", "-j", "1", ".")
    assert run.exit_code == 1
    assert run.error_lines == ["error: gone.py: no such file"]
    assert [name for name, *_ in run.findings()] == ["train.py"]


def test_file_changed_during_the_run_is_linted_as_it_is_now(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project, {"moving.py": TRAIN})
    _vanishing(monkeypatch, "moving.py", "change")
    run = run_cli(*FIX_ALL, ".")
    assert run.exit_code == 0, run
    assert (project / "moving.py").read_text() == CLEAN


def test_symlink_loop_named_explicitly(project: Path) -> None:
    (project / "a.py").symlink_to(project / "b.py")
    (project / "b.py").symlink_to(project / "a.py")
    write(project, {"train.py": TRAIN})
    run = run_cli("check", *SELECT, "--output-format", "concise", "a.py", "train.py")
    assert run.exit_code == 1
    assert len(run.error_lines) == 1 and run.error_lines[0].startswith("error: a.py: ")
    assert "train.py:8:18: XLA101" in run.stdout


def test_empty_directory(project: Path) -> None:
    (project / "empty").mkdir()
    warning = "warning: empty: no Python files found\n"
    run = run_cli("check", *SELECT, "empty")
    assert (run.exit_code, run.stderr) == (0, warning)
    fix = run_cli(*FIX_ALL, "empty")
    assert (fix.exit_code, fix.stderr) == (0, warning)
    assert list((project / "empty").iterdir()) == []


def test_non_python_file_named_explicitly_is_fixed(project: Path) -> None:
    write(project, {"train.txt": TRAIN, "notes.txt": "not python at all: (\n"})
    run = run_cli(*FIX_ALL, "train.txt")
    assert run.exit_code == 0, run
    assert ".detach()" in (project / "train.txt").read_text()
    bad = run_cli(*FIX_ALL, "notes.txt")
    assert bad.exit_code == 1
    assert bad.error_lines[0].startswith("error: notes.txt: syntax error")
    assert (project / "notes.txt").read_text() == "not python at all: (\n"
