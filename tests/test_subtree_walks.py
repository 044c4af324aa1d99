"""Whole-subtree walks asked once per node, or not at all where the text rules them out.

Round 21's profile listed walks of a whole function or class repeated per question:
`intervals._bound_in` (per `if` of a loop), `intervals._flipped_through` (two walks of the
function per name a branch assigns), XLA305's `_maps_a_load` (per device ternary),
`tensor_uses.arrays_handed_on` (every function with an assignment) and `masks._registered`
(every class whose attributes index a tensor). Each answer is the same as before; these
tests hold the walks to their new count and the answers to the old code's.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from xlalint import lint_memo, screen
from xlalint.analysis import intervals, masks, tensor_uses
from xlalint.analysis.loop_facts import loop_counter
from xlalint.engine import lint_source
from xlalint.registry import select_rules
from xlalint.rules import xla305_device_ladder_without_xla as xla305
from xlalint.walk import descendants, target_names

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _nodes(module: cst.Module, kind: type[cst.CSTNode]) -> list[cst.CSTNode]:
    return [node for node in descendants(module) if type(node) is kind]


def _counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    """Replace `owner.name` by a wrapper that records each call's first argument."""
    calls: list[object] = []
    original = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[0] if args else None)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


FIRST_PASSES = """\
def run(loader, steps):
    for i in range(steps):
        if i == 0:
            warm_up()
        if i == 0 and loader:
            log()
        if i == 0:
            j = i
    for k in range(steps):
        k = k + 1
        if k == 0:
            log()
"""


def test_a_loop_body_is_walked_once_for_the_names_it_binds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = cst.parse_module(FIRST_PASSES)
    loops = _nodes(module, cst.For)
    walked = _counting(monkeypatch, intervals, "_bound_in")
    with lint_memo.lint_scope():
        answers = [
            intervals.runs_on_its_first_pass(branch, [loop])  # type: ignore[arg-type]
            for loop in loops
            for branch in _nodes(loop, cst.If)  # type: ignore[arg-type]
        ]
    assert walked == [loops[0].body, loops[1].body]  # type: ignore[attr-defined]
    # The old test: the counter among the names of any target bound in the body.
    expected = []
    for loop in loops:
        counter = loop_counter(loop)  # type: ignore[arg-type]
        rebound = any(
            counter in target_names(t)
            for t in intervals._bound_in(loop.body)  # type: ignore[attr-defined]
        )
        expected += [not rebound] * len(_nodes(loop, cst.If))
    assert answers == expected == [True, True, True, False]


FLIPS = """\
def step(self, group, grads):
    next_lr = None
    total = 0
    for g in grads:
        total += g
    with open("x") as handle:
        pass
    if group["phase"] == "sgd":
        return
    if cond(total):
        next_lr = total.item()
        other = 1
        handle = 2
        total = 3
    if next_lr is not None:
        group["phase"] = "sgd"
        self.switched = True
    if other:
        self.flag = 1
    if handle:
        self.seen = "yes"
    if total:
        self.mode = "z"

    def inner():
        later = 5
        if later:
            self.inner_flag = False
"""


def _flipped_through_twice(name: str, body: cst.BaseSuite, function: cst.FunctionDef) -> list:
    """Round 21's `_flipped_through`: two walks of the whole function per name."""
    in_body = {id(n) for n in descendants(body)}
    for node in descendants(function.body):
        if type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.With):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else []
            if isinstance(node, cst.AnnAssign | cst.AugAssign | cst.For):
                targets = [node.target]
            if isinstance(node, cst.With):
                targets = [i.asname.name for i in node.items if i.asname is not None]
            if not any(name in target_names(t) for t in targets):
                continue
            value = getattr(node, "value", None)
            plain = (
                isinstance(node, cst.Assign | cst.AnnAssign)
                and len(targets) == 1
                and isinstance(targets[0], cst.Name)
            )
            if not plain:
                return []
            if id(node) not in in_body and not (
                isinstance(value, cst.Name) and value.value == "None"
            ):
                return []
    found: list = []
    for node in descendants(function.body):
        if (
            type(node) is cst.If
            and id(node) not in in_body
            and intervals._tests_set(node.test, name)  # type: ignore[attr-defined]
        ):
            found.extend(intervals._switches_set(node.body))  # type: ignore[attr-defined]
    return found


def test_the_switches_a_name_flips_come_from_one_walk_of_the_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = cst.parse_module(FLIPS)
    function = _nodes(module, cst.FunctionDef)[0]
    branches = _nodes(module, cst.If)
    names = ["next_lr", "other", "handle", "total", "later", "group", "absent"]
    walked = _counting(monkeypatch, intervals, "descendants")
    with lint_memo.lint_scope():
        answers = {
            (i, name): intervals._flipped_through(name, branch.body, function)  # type: ignore[attr-defined]
            for i, branch in enumerate(branches)
            for name in names
        }
        # One walk of the function body for every question, beside one of each branch.
        assert sum(node is function.body for node in walked) == 1  # type: ignore[attr-defined]
    monkeypatch.undo()
    expected = {
        (i, name): _flipped_through_twice(name, branch.body, function)  # type: ignore[arg-type]
        for i, branch in enumerate(branches)
        for name in names
    }
    assert answers == expected
    flipped = answers[(1, "next_lr")]
    assert [(cst.Module([]).code_for_node(t), v) for t, v in flipped] == [
        ('group["phase"]', "sgd"),
        ("self.switched", True),
    ]
    assert answers[(1, "other")] != []  # bound only in the branch, tested after it
    assert answers[(1, "handle")] == []  # bound by `with ... as` too: not a plain local
    assert answers[(1, "total")] == []  # `+=`, a `for`: not plain


MAPS = """\
import torch


def restore(model, path, other):
    location = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    place = "cuda" if torch.cuda.is_available() else "cpu"
    checkpoint = torch.load(path, map_location=location)
    extra = torch.load(other, map_location=place)
    model.to(place)
    model.load_state_dict(checkpoint["model"])
    return model, extra
"""


def test_a_function_is_walked_once_for_the_loads_its_ternaries_map(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rules = select_rules(["XLA305"], [], [])
    walked = _counting(monkeypatch, xla305, "descendants")
    found = lint_source(MAPS, "restore.py", rules)
    functions = [n for n in walked if isinstance(n, cst.IndentedBlock)]
    # Two ternaries asked about, one walk of the function's body.
    assert len(functions) == 1
    # `location` maps a load only; `place` also places the model: a device choice.
    assert [d.start.row for d in found.diagnostics] == [6]
    module = cst.parse_module(MAPS)
    function = _nodes(module, cst.FunctionDef)[0]
    with lint_memo.lint_scope():
        mentions, maps = xla305._load_mappings(function)  # type: ignore[arg-type]
    assert (mentions["location"], maps["location"]) == (2, 1)
    assert (mentions["place"], maps["place"]) == (3, 1)
    assert maps["model"] == 0


ARRAYS = """\
import torch


def load_mask(path):
    mask = read_image(path)
    mask = norm_img(mask)
    mask = {call}(mask)
    return mask.to("xla")
"""


@pytest.mark.parametrize(
    ("call", "walks"), [("torch.from_numpy", 1), ("torch.as_tensor", 0), ("tensor", 0)]
)
def test_functions_are_walked_for_arrays_only_where_the_text_spells_from_numpy(
    monkeypatch: pytest.MonkeyPatch, call: str, walks: int
) -> None:
    monkeypatch.setenv(screen.ENV_NO_SCREEN, "1")  # the function reaches libcst
    text = ARRAYS.format(call=call)
    assert tensor_uses.may_hand_arrays(text) == (walks > 0)
    walked = _counting(monkeypatch, tensor_uses, "arrays_handed_on")
    lint_source(text, "arrays.py", select_rules(["ALL"], [], []))
    assert len(walked) == walks


def test_every_array_only_function_spells_the_screened_word() -> None:
    for name in tensor_uses._FROM_ARRAY:  # type: ignore[attr-defined]
        assert name.rsplit(".", 1)[-1] == tensor_uses._FROM_ARRAY_WORD  # type: ignore[attr-defined]


MEMBER_MASKS = """\
import torch


class Clipper(torch.nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.pos_idx = weights >= 0
        {register}

    def forward(self, x):
        for step in range(10):
            x[self.pos_idx] = 0
            x[self.keep] = 1
        return x
"""


@pytest.mark.parametrize(
    ("register", "walks"),
    [('self.register_buffer("keep", weights != 0)', True), ("self.keep = weights", False)],
)
def test_classes_are_walked_for_buffers_only_where_the_text_registers_one(
    monkeypatch: pytest.MonkeyPatch, register: str, walks: bool
) -> None:
    text = MEMBER_MASKS.format(register=register)
    walked = _counting(monkeypatch, masks, "_registered")
    rules = select_rules(["XLA201", "XLA202", "XLA203"], [], [])
    found = lint_source(text, "clipper.py", rules)
    assert bool(walked) == walks
    rows = [d.start.row for d in found.diagnostics]
    assert 12 in rows  # `self.pos_idx`: bound to a comparison in `__init__`
    assert (13 in rows) == walks  # `self.keep`: a registered comparison, or a plain value


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for code in ("XLA201", "XLA202", "XLA203", "XLA305", "XLA102", "XLA101")
        for p in (FIXTURES / code).glob("*.py")
    ),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_screened_walks_give_the_fixtures_the_same_findings(
    monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    """With the text screens off (every function and class walked), the same findings."""
    text = path.read_text(encoding="utf-8")
    rules = select_rules(["ALL"], [], [])
    screened = lint_source(text, str(path), rules)
    monkeypatch.setattr("xlalint.context.may_hand_arrays", lambda _text: True)
    monkeypatch.setattr("xlalint.context.REGISTER_BUFFER", "")  # in every text
    walked = lint_source(text, str(path), rules)
    assert screened.diagnostics == walked.diagnostics


VALIDATION = """\
import torch


def train(model, loader, val_loader, optimizer, is_valid_step):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        print(loss.item())
        if is_valid_step:
            total = 0.0
            for val_batch in val_loader:
                total = total + model(val_batch)
            print(total.item())
            print(loss.item())
            print(total.item() + loss.item())
"""


def test_the_statements_before_each_site_are_walked_for_loader_passes_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`FileContext._past_a_pass_over_a_loader` asks of each statement before a site in
    its block whether it holds a pass over a loader (`context._passes_over_a_loader`):
    once per statement for all the sites after it, with the answers of a walk per site."""
    from xlalint import context

    rules = select_rules(["XLA101"], [], [])
    asked = _counting(monkeypatch, context, "walks_a_loader")
    found = lint_source(VALIDATION, "train.py", rules)
    loops = [node for node in asked if type(node) is cst.For]
    assert loops and len(loops) == len({id(node) for node in loops})
    # The old code: the same walk for every site.
    monkeypatch.setattr(context, "_passes_over_a_loader", context._passes_over_a_loader.__wrapped__)
    again = lint_source(VALIDATION, "train.py", rules)
    assert [(d.code, d.start.row) for d in found.diagnostics] == [
        (d.code, d.start.row) for d in again.diagnostics
    ]
    assert [d.start.row for d in found.diagnostics] == [9]
