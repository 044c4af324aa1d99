"""Flags whose value on an XLA host is decided far from where they are read, and the
conditions that say so: counts of GPUs, flags unpacked from tuples, attributes set in
another method, module-level flags."""

from __future__ import annotations

import libcst as cst
import pytest

from xlalint.analysis.flag_facts import FlagFacts
from xlalint.analysis.guards import asks_about_cuda, implied, local_values
from xlalint.analysis.imports import ImportTable


def _imports(module: cst.Module) -> ImportTable:
    imports = ImportTable()
    imports.add_top_level(module)
    return imports


def _implies_cuda(test: str, holds: bool) -> bool | None:
    imports = _imports(cst.parse_module("import torch\n"))
    expression = cst.parse_expression(test)
    return implied(expression, holds, lambda t: asks_about_cuda(t, imports))


@pytest.mark.parametrize(
    ("test", "holds", "expected"),
    [
        ("ngpu == 1", True, True),
        ("args.n_gpu > 0", True, True),
        ("num_gpus >= 1", True, True),
        ("ngpu == 0", True, False),
        ("ngpu > 0", False, False),
        ("ngpu < 2", True, None),  # 0 or 1 GPU
        ("ngpu == 1", False, None),  # none, or several
        ("torch.cuda.device_count() > 1", True, True),
        ("torch.cuda.device_count() == 0", True, False),
        ("ngpu", True, True),
        ("batch_count == 1", True, None),  # not a count of GPUs
    ],
)
def test_counts_of_gpus_say_whether_cuda_is_in_use(
    test: str, holds: bool, expected: bool | None
) -> None:
    assert _implies_cuda(test, holds) is expected


def test_tuple_unpacking_gives_each_name_its_element() -> None:
    function = cst.parse_module(
        "def f(buffered):\n"
        "    non_blocking, last = torch.cuda.is_available(), -1\n"
        "    if not buffered:\n"
        "        non_blocking = False\n"
    ).body[0]
    assert isinstance(function, cst.FunctionDef)
    values = [cst.Module([]).code_for_node(v) for v in local_values(function, "non_blocking")]
    assert values == ["torch.cuda.is_available()", "False"]
    assert [cst.Module([]).code_for_node(v) for v in local_values(function, "last")] == ["-1"]


def _flag_false(source: str, read: str, method: str) -> bool:
    """Whether `read` (an expression), read in `method` of the module's last class, is
    False on an XLA host."""
    module = cst.parse_module(source)
    facts = FlagFacts(module, _imports(module))
    owner = [s for s in module.body if isinstance(s, cst.ClassDef)][-1]
    assert isinstance(owner.body, cst.IndentedBlock)
    function = next(
        m for m in owner.body.body if isinstance(m, cst.FunctionDef) and m.name.value == method
    )
    return facts.false_on_xla(cst.parse_expression(read), function, owner)


_FORCED = """
import torch

class Model:
    def __init__(self, args, use_cuda=True):
        self.args = args
        if not use_cuda:
            self.args.fp16 = False
{extra}
    def train(self):
        pass
"""


def test_init_that_forces_a_flag_off_without_cuda_decides_it() -> None:
    assert _flag_false(_FORCED.format(extra=""), "self.args.fp16", "train")


@pytest.mark.parametrize(
    "extra",
    [
        "        self.args = load(args)\n",  # the object replaced after the forcing
        "    def enable(self):\n        self.args.fp16 = True\n",  # set again elsewhere
    ],
)
def test_a_forced_flag_set_again_is_not_known(extra: str) -> None:
    assert not _flag_false(_FORCED.format(extra=extra), "self.args.fp16", "train")


def test_attribute_assigned_from_a_cuda_probe_in_another_method() -> None:
    source = (
        "import torch\n"
        "class Base:\n"
        "    def __init__(self, config):\n"
        "        self.use_amp = torch.cuda.is_available() and config['amp']\n"
        "class Trainer(Base):\n"
        "    def fit(self):\n"
        "        pass\n"
    )
    assert _flag_false(source, "self.use_amp", "fit")
    assert _flag_false(source, "self.use_amp and self.verbose", "fit")
    assert not _flag_false(source, "self.use_amp or self.verbose", "fit")
    assert not _flag_false(
        source.replace("torch.cuda.is_available() and ", ""), "self.use_amp", "fit"
    )


def test_module_flags_rebound_through_global_are_not_known() -> None:
    source = (
        "import torch\n"
        "AMP = torch.cuda.is_available()\n"
        "class T:\n"
        "    def fit(self):\n"
        "        pass\n"
    )
    assert _flag_false(source, "AMP", "fit")
    rebound = source + "def enable():\n    global AMP\n    AMP = True\n"
    assert not _flag_false(rebound, "AMP", "fit")


_PARAMETER = """
import torch

def _step(model, batch, use_amp):
    if use_amp:
        pass

def train(model, loader, amp):
    for batch in loader:
        _step(model, batch, {argument})

def evaluate(model, batch, use_amp=torch.cuda.is_available()):
    pass
"""


def _parameter_false(source: str, function_name: str, parameter: str) -> bool:
    module = cst.parse_module(source)
    facts = FlagFacts(module, _imports(module))
    function = next(
        s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function_name
    )
    return facts.false_on_xla(cst.Name(parameter), function, None)


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("amp and torch.cuda.is_available()", True),
        ("torch.cuda.is_available() if amp else False", True),
        ("amp", False),  # whatever the caller of `train` asked for
        ("amp if torch.cuda.is_available() else True", False),
    ],
)
def test_private_function_parameters_are_what_every_call_passes(
    argument: str, expected: bool
) -> None:
    source = _PARAMETER.format(argument=argument)
    assert _parameter_false(source, "_step", "use_amp") is expected


def test_public_parameters_count_only_with_a_default_tied_to_cuda() -> None:
    source = _PARAMETER.format(argument="False")
    assert _parameter_false(source, "evaluate", "use_amp")  # no call passes another value
    assert not _parameter_false(source, "train", "amp")  # a caller's option
    called = source + "\ndef main(model, batch):\n    evaluate(model, batch, use_amp=True)\n"
    assert not _parameter_false(called, "evaluate", "use_amp")
