"""Base of the rules that follow values from calls into the module's helpers.

Such a rule judges code in a helper by what its callers hand it (a device tensor passed as
the parameter a mask indexes), so it feeds `HelperCalls` (xlalint.analysis.helper_calls)
during the walk and asks it in `leave_Module`. Not a rule module: it defines no rule code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from xlalint.analysis.arguments import keyword_argument
from xlalint.analysis.epochs import takes_a_loader
from xlalint.analysis.helper_calls import HelperCalls
from xlalint.analysis.helper_reads import HelperReads
from xlalint.analysis.host_reads import BranchReads, value_read
from xlalint.analysis.hotness import RUN_ONCE_FUNCTIONS
from xlalint.analysis.loop_facts import runs_a_named_model
from xlalint.analysis.tensors import Kind
from xlalint.rule import Rule
from xlalint.walk import (
    COMPREHENSIONS,
    TRIVIA,
    binding_counts,
    descendants,
    name_assignments,
)

if TYPE_CHECKING:
    from xlalint.analysis.hotness import FunctionKey
    from xlalint.context import FileContext


# Builtins whose items are the items (or rows) of what they are handed.
_ROW_ITERATORS = frozenset({"zip", "enumerate", "reversed", "list", "tqdm"})
# Definitions whose bodies run when they are called, not where they stand.
_NESTED_SCOPES = TRIVIA | {cst.FunctionDef, cst.Lambda, cst.ClassDef}
# Factories that build a tensor from the Python data they are handed.
_HOST_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.LongTensor"})
# Builtins that read their argument's value (`int(t)`), as `.item()` does.
_VALUE_READS = frozenset({"int", "float", "bool"})


def _read_name(node: cst.CSTNode | None) -> str | None:
    """The name whose tensor a host read or copy reads (`lengths` of `lengths.max().
    item()`, `int(lengths.max())`, `sizes.tolist()`, `x[0].cpu()`), through its own
    methods and rows; None where anything else enters (`(a - b).max()`, a call's
    arguments)."""
    if type(node) is not cst.Call:
        return None
    func = node.func  # type: ignore[attr-defined]
    if type(func) is cst.Attribute:
        value: cst.BaseExpression = func.value  # type: ignore[attr-defined]
    elif type(func) is cst.Name and func.value in _VALUE_READS and len(node.args) == 1:  # type: ignore[attr-defined]
        value = node.args[0].value  # type: ignore[attr-defined]
    else:
        return None
    while True:
        kind = type(value)
        if kind is cst.Name:
            return value.value  # type: ignore[attr-defined]
        if kind is cst.Call and type(value.func) is cst.Attribute:  # type: ignore[attr-defined]
            if any(type(a.value) not in _PLAIN_ARGUMENTS for a in value.args):  # type: ignore[attr-defined]
                return None
            value = value.func.value  # type: ignore[attr-defined]
        elif kind is cst.Subscript:
            value = value.value  # type: ignore[attr-defined]
        else:
            return None


# Arguments of a method of the read tensor that bring no other tensor in (`max(dim=1)`).
_PLAIN_ARGUMENTS = (cst.Integer, cst.Float, cst.SimpleString, cst.UnaryOperation)


def spelled_argument(code: str) -> str:
    """The argument itself in a message when it is short and on one line."""
    return code if len(code) <= 40 and "\n" not in code else "the tensor"


class HelperCallRule(Rule):
    """Feeds `self.calls` from the walk: functions, classes, rebound names and calls. A
    subclass that visits the same nodes calls these methods too."""

    # With `{argument}`, `{helper}`, `{read}`, `{file}`, `{line}`: a read in another module.
    elsewhere_message: ClassVar[str] = ""
    # Host reads: one in a loop over a device tensor's rows is a per-call cost (`report`).
    per_row_reads: ClassVar[bool] = False

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.calls = HelperCalls()
        # Calls (by id) handed a read of another module's function already reported.
        self._handed_elsewhere: set[int] = set()
        self._if_branches = BranchReads()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.calls.note_class(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.push_function(node, self.ctx.function)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.pop_function()

    def leave_Assign(self, node: cst.Assign) -> None:
        self.calls.bind([t.target for t in node.targets], node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.calls.bind([node.target], node.value)

    def visit_For(self, node: cst.For) -> None:
        self.calls.bind([node.target], None)

    def report(self, node: cst.CSTNode, message: str | None = None, **kwargs) -> None:  # type: ignore[override]
        """A read in a loop or comprehension over the rows of a device tensor (`[target(o).
        cpu().item() for target, o in zip(targets, outputs)]`, `input_tensor[i].cpu()` for
        `i in range(batch_size)`), in a function that runs a model on what it is handed,
        pays one sync per row on every call with new data, where one copy of the whole
        would do: judged as a per-call cost."""
        if (
            self.per_row_reads
            and kwargs.get("site") is None
            and not kwargs.get("per_call")
            and self._per_row(node)
            and self._runs_a_model()
        ):
            kwargs["per_call"] = True
        elif (
            self.per_row_reads
            and kwargs.get("site") is None
            # (XLA102 reports a copy at its method's name, through the call.)
            and self._round_trip(node if type(node) is cst.Call else kwargs.get("end_node"))
            and self._runs_a_named_model()
        ):
            # Each call pays the round trip for what the host had, whoever calls it.
            kwargs["every_call"] = True
        super().report(node, message, **kwargs)

    def _runs_a_named_model(self) -> bool:
        """The function being walked is an inference on what it is handed: it runs a
        model in its own body, as `_runs_a_model` says, or calls a value named a model, or
        a method of one, on something (`model.encode(padded, audio_lengths=lengths)`);
        it runs no backward and takes no data loader (an epoch function's code outside
        its loop runs once per pass over the data), nor runs once by its name
        (`__init__`)."""
        function = self.ctx.function_node
        if (
            function is None
            or function.name.value in RUN_ONCE_FUNCTIONS
            or self.ctx.in_loop
            or takes_a_loader(function)
            or self.ctx.loops.runs_backward(function)
        ):
            return False
        return self._runs_a_model() or any(
            type(n) is cst.Call and runs_a_named_model(n)
            for n in descendants(function.body, _NESTED_SCOPES)
        )

    def _round_trip(self, node: cst.CSTNode | None) -> bool:
        """The read copies back a tensor the function built on the device from Python
        values the host holds (`lengths = torch.tensor([a.shape[-1] for a in audios],
        device=model.device)`, then `lengths.max().item()`), through its own methods
        and rows: a device round trip for what the host had, on every call."""
        function = self.ctx.function_node
        name = _read_name(node)
        if function is None or name is None or binding_counts(function).get(name) != 1:
            return False
        for bound, value in name_assignments(function.body.body):  # type: ignore[attr-defined]
            if bound == name:
                return self._built_on_device_from_host_values(value)
        return False

    def _built_on_device_from_host_values(self, value: cst.BaseExpression) -> bool:
        """`torch.tensor(data, device=...)` (`torch.as_tensor`, `torch.LongTensor` given a
        device) whose data holds no tensor: Python numbers, a list of them or one built
        by a comprehension of them."""
        if (
            type(value) is not cst.Call
            or self.ctx.qualified(value.func) not in _HOST_DATA_FACTORIES
        ):
            return False
        device_arg = keyword_argument(value, "device")
        device = device_arg.value if device_arg is not None else None
        positional = [a for a in value.args if a.keyword is None]
        if device is None or len(positional) != 1 or positional[0].star:
            return False
        if type(device) is cst.SimpleString and "cpu" in device.value:
            return False
        data = positional[0].value
        if type(data) in (cst.List, cst.Tuple):
            items = [e.value for e in data.elements]  # type: ignore[attr-defined]
        elif type(data) in (cst.ListComp, cst.GeneratorExp):
            items = [data.elt]  # type: ignore[attr-defined]
        else:
            items = [data]
        return all(
            type(item) is not cst.StarredElement and self.ctx.kind(item) is not Kind.TENSOR
            for item in items
        )

    def _runs_a_model(self) -> bool:
        """The function being walked runs a model itself (`outputs = self.model(x)`): each
        call is an inference on new data, not a summary made once after a loop elsewhere
        (`finalize(sum_logprobs, tokens)` after decoding)."""
        function = self.ctx.function_node
        return function is not None and self.ctx.loops.facts(function).model_calls > 0

    def _per_row(self, node: cst.CSTNode) -> bool:
        read: cst.CSTNode = node
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            kind = type(ancestor)
            if kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
            if kind is cst.Call and read is node and type(node) is not cst.Call:
                read = ancestor  # `x[i].cpu()` reported at its `cpu`
            if kind in COMPREHENSIONS and child is not ancestor.for_in:  # type: ignore[attr-defined]
                comp: cst.CompFor | None = ancestor.for_in  # type: ignore[attr-defined]
                while comp is not None:
                    if self._over_rows(comp.target, comp.iter, read):
                        return True
                    comp = comp.inner_for_in
            if (
                kind is cst.For
                and child is ancestor.body  # type: ignore[attr-defined]
                and self._over_rows(ancestor.target, ancestor.iter, read)  # type: ignore[attr-defined]
            ):
                return True
            child = ancestor
        return False

    def _over_rows(
        self, target: cst.BaseExpression, iterable: cst.BaseExpression, read: cst.CSTNode
    ) -> bool:
        """The loop walks a device tensor's rows: it iterates one (through `zip`,
        `enumerate`), or counts positions the read indexes a device tensor at."""
        values = [iterable]
        while values and type(values[0]) is cst.Call:
            call = values[0]
            name = call.func.value if type(call.func) is cst.Name else None  # type: ignore[attr-defined]
            if name not in _ROW_ITERATORS:
                break
            values = [a.value for a in call.args if a.keyword is None and not a.star] + values[1:]  # type: ignore[attr-defined]
        if any(type(v) is not cst.Call and self.ctx.is_tensor(v) for v in values):
            return True
        if not (
            type(iterable) is cst.Call
            and type(iterable.func) is cst.Name
            and iterable.func.value == "range"
            and type(target) is cst.Name
        ):
            return False
        index = target.value
        return any(
            type(n) is cst.Subscript
            and self.ctx.is_tensor(n.value)  # type: ignore[attr-defined]
            and any(
                type(e.slice) is cst.Index
                and type(e.slice.value) is cst.Name
                and e.slice.value.value == index
                for e in n.slice  # type: ignore[attr-defined]
            )
            for n in descendants(read)
        )

    def visit_comprehension(self, node: cst.BaseComp | cst.DictComp) -> None:
        """Names a comprehension binds are no parameters (its element is walked before
        its `for`, so they are unbound when the comprehension is entered)."""
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            self.calls.bind([comp.target], None)
            comp = comp.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self.visit_comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self.visit_comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self.visit_comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self.visit_comprehension(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.note_call(node)

    def note_call(self, node: cst.Call) -> None:
        """A call that may run a helper of this module, with its device-tensor arguments."""
        self.calls.note_method_call(node)
        if type(node.func) is cst.Name and self.ctx.qualified(node.func):
            return  # an imported function, not one of this module
        helper = self.calls.callee(node, self.ctx.function)
        if helper is None or not self.ctx.defines_name(helper.name):
            return  # runs no helper of this module: no one asks what its arguments hold
        tensors = frozenset(
            id(arg.value) for arg in node.args if not arg.star and self.on_device(arg.value)
        )
        self.calls.note_call(node, self.ctx.function, tensors, self.ctx.site())

    def compared_on_device(self, function: FunctionKey, compared: frozenset[str]) -> bool:
        """Whether a mask the helper `function` compares from its parameters `compared`
        (`valid = gt_classes[i] > -1`) is computed from a device tensor: a call of this
        module hands one of them a tensor (or the helper uses it as one), or, where no
        call of this module runs the helper, another module calls it every step with its
        data (`HotCode.called_from_elsewhere`: effdet's bench hands its batch's targets to
        `batch_label_anchors`)."""
        if any(self.calls.holds_tensor(function, name) for name in compared):
            return True
        return (
            bool(compared)
            and not self.calls.called_here(function)
            and self.ctx.hot.called_from_elsewhere(function)
        )

    def on_device(self, value: cst.BaseExpression) -> bool:
        """Whether an argument is taken for a device tensor handed to the helper."""
        return self.ctx.kind(value) is Kind.TENSOR

    def report_read_elsewhere(self, node: cst.Call, hint: str | None = None) -> None:
        """A device tensor handed to a function of another project module that reads it
        on the host as this rule's code says (`asdict_as_float(loss)` a value,
        `to_numpy(loss)` a copy): reported at the call, naming the function and its read."""
        found = self.ctx.read_elsewhere(node)
        if found is None or found[1].read.code != self.code:
            return
        argument, where = found
        if self._if_branches.repeats(value_read(argument), where.function, self.ctx.ancestors()):
            # `if stress: to_numpy(out[k].squeeze())` / `else: to_numpy(out[k])`: one
            # branch runs per pass, one read of the value, reported in the first.
            return
        consumer = _handed_to(self.ctx.ancestors())
        if consumer is not None:
            if id(consumer) in self._handed_elsewhere:
                # `accuracy(to_numpy(pred), to_numpy(gt), to_numpy(w) > 0)`: the reads
                # one call is handed are one cause, reported at the first.
                return
            self._handed_elsewhere.add(id(consumer))
        message = self.elsewhere_message.format(
            argument=spelled_argument(self.ctx.module.code_for_node(argument)),
            helper=where.function,
            read=where.read.spelled,
            file=os.path.basename(where.path),
            line=where.read.line,
        )
        self.report(node, message, hint=hint)


class HelperReadRule(HelperCallRule):
    """A `HelperCallRule` that also follows what each function of the module computes from
    its parameters (`HelperReads`, fed the same walk): the reads and tests of what a
    helper is handed, judged once its callers are known (XLA101, XLA103)."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._reads = HelperReads(self.calls)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._reads.push_function(node, self.ctx.function)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._reads.pop_function()

    def leave_Assign(self, node: cst.Assign) -> None:
        self._reads.bind([t.target for t in node.targets], node.value)
        super().leave_Assign(node)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._reads.bind([node.target], node.value)
        super().leave_AnnAssign(node)

    def visit_For(self, node: cst.For) -> None:
        super().visit_For(node)
        self._reads.bind_loop_target(node.target, node.iter)

    def visit_comprehension(self, node: cst.BaseComp | cst.DictComp) -> None:
        super().visit_comprehension(node)
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            self._reads.bind_loop_target(comp.target, comp.iter)
            comp = comp.inner_for_in


def _handed_to(ancestors: Iterable[cst.CSTNode]) -> cst.Call | None:
    """The call whose argument holds the node whose `ancestors` (innermost first) these
    are, directly or in an expression made from it (`to_numpy(w) > 0`); None outside any
    argument of the statement."""
    outward = iter(ancestors)
    for ancestor in outward:
        if isinstance(ancestor, cst.BaseStatement | cst.BaseSmallStatement | cst.Lambda):
            return None
        if type(ancestor) is cst.Arg:
            call = next(outward, None)
            return call if type(call) is cst.Call else None
    return None
