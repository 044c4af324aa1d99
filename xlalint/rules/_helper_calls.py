"""Base of the rules that follow values from calls into the module's helpers.

Such a rule judges code in a helper by what its callers hand it (a device tensor passed as
the parameter a mask indexes), so it feeds `HelperCalls` (xlalint.analysis.helper_calls)
during the walk and asks it in `leave_Module`. Not a rule module: it defines no rule code.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from xlalint.analysis.helper_calls import HelperCalls
from xlalint.analysis.tensors import Kind
from xlalint.rule import Rule

if TYPE_CHECKING:
    from xlalint.context import FileContext


def spelled_argument(code: str) -> str:
    """The argument itself in a message when it is short and on one line."""
    return code if len(code) <= 40 and "\n" not in code else "the tensor"


class HelperCallRule(Rule):
    """Feeds `self.calls` from the walk: functions, classes, rebound names and calls. A
    subclass that visits the same nodes calls these methods too."""

    # With `{argument}`, `{helper}`, `{read}`, `{file}`, `{line}`: a read in another module.
    elsewhere_message: ClassVar[str] = ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.calls = HelperCalls()

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
        if self.calls.callee(node, self.ctx.function) is None:
            return  # runs no helper of this module: no one asks what its arguments hold
        tensors = frozenset(
            id(arg.value) for arg in node.args if not arg.star and self.on_device(arg.value)
        )
        self.calls.note_call(node, self.ctx.function, tensors, self.ctx.site())

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
        message = self.elsewhere_message.format(
            argument=spelled_argument(self.ctx.module.code_for_node(argument)),
            helper=where.function,
            read=where.read.spelled,
            file=os.path.basename(where.path),
            line=where.read.line,
        )
        self.report(node, message, hint=hint)
