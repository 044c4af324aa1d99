"""Code that runs once every many steps, not every step.

`if batch % self.log_interval == 0: print(total.item() / self.log_interval)` in a batch
loop reads the device once per interval: with `self.log_interval = 100`, a sync every
hundred steps of a total accumulated on the device, which is what the torch_xla docs
recommend. Such a branch is not per-step code when the interval is known to be long: an
integer of at least `SPARSE`, 20 passes (a sync every 20 steps is amortised, one every 10
is still a cost; a literal, a constant, or every value this file assigns the
name or `self.` attribute, a parameter's default, or, for a parameter without one,
whatever every call of its function in this file hands it: `_train_epoch(loader,
log_interval)` called only from `fit(..., log_interval=100)`, directly or as
`delayed(_train_epoch)(...)`), or a fraction of a loader's length
(`max(1, len(loader) // 10)`: a few times per epoch). The test may sit in a local name
(`should_log = step % self.log_frequency == 0`, then `if should_log:`) or in a predicate
of the module the branch calls (`def divisible_by(num, den): return (num % den) == 0`,
then `if divisible_by(step, self.val_every):`), also `or` one value of the counter it
divides (`is_divisible(step, self.log_every) or step == (self.num_train_steps - 1)`: once
more, on the last step, also through a name bound to the counter shifted, `batch_count =
i + 1` then `i % 100 == 0 or batch_count == num_batches`, or a local flag that ends the
loop on the pass it holds, `stop or step % every == 0` before `if stop: break`; not `step
% 100 == 0 or step < 10`), and an attribute
may be set from a parameter (`self.log_frequency = log_frequency`, whose default counts),
and a setting read with a default (`self.log_interval = kwargs.get("log_interval", 50)`,
`getattr(args, "log_every", 100)`) counts by that default, as a parameter's does.
A command-line option (`args.logging_steps`) counts by the default the project's parsers
declare for it (`parser.add_argument("--logging_steps", type=int, default=100)`, in this
file or in a script importing it: `module_callers.declared_defaults`), every declaration
long; a script that builds an `HfArgumentParser` declares transformers' `TrainingArguments`
intervals with the library's defaults (`training_args.logging_steps`, 500 steps), or the
default a dataclass of the script gives the field (`logging_steps: int =
field(default=1)`). A field of a settings object (`self.params.logging_steps`, with
`self.params = copy.deepcopy(args)` and `args: TrainingParams`; `cfg.log_every` with
`cfg: TrainConfig`) counts by the default the annotated class declares for it
(`logging_steps: int = 50`), in this module or in the project module its import names
(`config_fields.field_default`, through a package's re-export). An interval whose
value is not known here (`args.log_interval` that no parser
declares with a default, `cfg.train.log_every`) may be 1 and stays per step, as does one
whose default is short (`log_interval=1`): a log interval that defaults to every step is
per step. One named for checkpoints or evaluations
(`steps_per_checkpoint`, `cfg.eval_every`, `save_interval`) is long whatever its value:
saving or evaluating a model every step is no run anyone configures. A branch gated by
wall-clock time (`if time.time() - self.last_summary_time > interval:`) runs once that
time has passed since its last run, once every many steps of milliseconds each. A branch
on one value of a counter that its loop raises on every pass (`if state["n_iter"] == 1:`
beside `state["n_iter"] += 1`) is taken on one pass only, and one on one value of a
counter kept across calls that its function raises on every call (`if group["step"] ==
0:` in an optimizer's `step` doing `group["step"] += 1`) on one call only. A branch
that flips a switch kept across calls (`group["phase"] = "sgd"`, itself or through a
local it sets) behind an exit on that switch (`if group["phase"] == "sgd": continue`)
runs on one step, then never again. A branch
that sets its counter back to zero when it reaches a long bound (`if self._growth_step
== self._growth_interval: self._growth_step = 0`, with `growth_interval=1000`) runs
once every bound passes. A branch that needs the index of its function's outermost loop to
be 0 (`if i == 0 and self.no_speech is not None:` in `for i in range(self.sample_len)`)
runs on that loop's first pass only, once per run of the loop (an inner loop's first pass
comes on every pass of the loop around it, and a function that is one step by itself runs
its loop on every step).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import parameter, positional_names
from xlalint.analysis.guards import local_values, negated
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.loop_facts import first_pass_test, loop_counter
from xlalint.analysis.members import member_values_in
from xlalint.analysis.settled_exits import exits_before
from xlalint.analysis.statements import block_exit
from xlalint.walk import (
    children,
    descendants,
    node_types,
    only_return,
    self_attribute,
    target_names,
)

SPARSE = 20  # passes between two runs of the branch, at least
# The defaults the project declares for a command-line option, by its attribute name
# (`module_callers.declared_defaults`); None for a declaration without an integer default.
# With a settings class as well (`TrainingParams`, as the file spells it): the default
# that class, in the project module the file's imports name, declares for the field.
OptionDefaults = Callable[..., Sequence[int | None]]


def _int_value(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def _fraction_of_length(value: cst.BaseExpression) -> bool:
    """`len(loader) // 10`, `int(len(batch_loader) / 10)`, `max(1, len(data) // 5)`: an
    interval that is a fraction of how many batches an epoch has."""
    for node in descendants(value):
        if (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.Divide | cst.FloorDivide)
            and any(
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Name)
                and inner.func.value == "len"
                for inner in descendants(node.left)
            )
        ):
            return True
    return False


def _read_default(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """`50` in `kwargs.get("log_interval", 50)` or `getattr(args, "log_interval", 50)`: a
    setting read with a default, which is its value wherever the run does not set it, as a
    parameter's default is."""
    if not isinstance(value, cst.Call):
        return None
    func, args = value.func, value.args
    if any(arg.keyword is not None or arg.star for arg in args):
        return None
    if isinstance(func, cst.Attribute) and func.attr.value == "get" and len(args) == 2:
        return args[1].value
    if isinstance(func, cst.Name) and func.value == "getattr" and len(args) == 3:
        return args[2].value
    return None


def _long_value(value: cst.BaseExpression) -> bool:
    value = _read_default(value) or value
    number = _int_value(value)
    return (number is not None and number >= SPARSE) or _fraction_of_length(value)


# An interval's name that counts steps between checkpoints or evaluations:
# `steps_per_checkpoint`, `cfg.eval_every`, `save_interval`, `val_check_interval`.
# (a word of the name, so `log_interval` holds no `val`).
_SAVE_OR_EVALUATION = re.compile(r"(^|_)(checkpoint|ckpt|sav(e|ing)|eval|valid|val(_|$))", re.I)


def _names_a_save_or_evaluation(interval: cst.BaseExpression) -> bool:
    """`step % final_steps_per_checkpoint == 0`, `step % args.eval_every == 0`: an interval
    named for checkpoints or evaluations, whatever its value here. Saving or evaluating a
    model is what runs once every many steps (a full evaluation, a write to disk), and no
    run sets it to every step; a log interval may be 1, so its name does not count."""
    if isinstance(interval, cst.Attribute):
        interval = interval.attr
    return isinstance(interval, cst.Name) and _SAVE_OR_EVALUATION.search(interval.value) is not None


def attribute_values(
    class_def: cst.ClassDef, attribute: str, defaults: bool = True
) -> list[cst.BaseExpression]:
    """Every value a method of `class_def` assigns `self.<attribute>`, also as one element
    of a tuple assigned from a tuple of as many (`self.model, self.log_every = model,
    log_every`); empty where it is also bound some other way (`+=`, unpacking a value).
    A parameter of the method assigned as it is (`self.log_frequency = log_frequency`)
    counts by its default (with `defaults`; otherwise it stays the parameter's name: what
    callers hand in)."""
    found: list[cst.BaseExpression] = []
    method: cst.FunctionDef | None = None
    stack: list[tuple[cst.CSTNode, cst.FunctionDef | None]] = [(class_def.body, None)]
    while stack:
        node, method = stack.pop()
        if isinstance(node, cst.FunctionDef):
            method = node
        stack.extend((child, method) for child in children(node))
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = []
        if isinstance(node, cst.Assign):
            pairs = [pair for t in node.targets for pair in _paired_targets(t.target, node.value)]
        elif isinstance(node, cst.AnnAssign):
            pairs = [(node.target, node.value)]
        elif isinstance(node, cst.AugAssign):
            pairs = [(node.target, None)]
        for target, value in pairs:
            if self_attribute(target) == attribute:
                if value is None:
                    return []
                if defaults and isinstance(value, cst.Name) and method is not None:
                    value = _parameter_default(method, value.value) or value
                found.append(value)
            elif any(self_attribute(inner) == attribute for inner in descendants(target)):
                return []
    return found


def _paired_targets(
    target: cst.BaseExpression, value: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """Each target of an assignment with the value it gets: `a, b = x, y` pairs element
    by element (no starred element on either side); any other target gets the whole
    value."""
    sequences = (cst.Tuple, cst.List)
    if (
        isinstance(target, sequences)
        and isinstance(value, sequences)
        and len(target.elements) == len(value.elements)
        and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements))
    ):
        return [(t.value, v.value) for t, v in zip(target.elements, value.elements, strict=True)]
    return [(target, value)]


def _parameter_default(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    param = parameter(function, name)
    return param.default if param is not None else None


def _is_method(function: cst.FunctionDef, class_def: cst.ClassDef | None) -> bool:
    """`function` is a method of `class_def` (called as `x.f(...)`, `self` not passed)."""
    return class_def is not None and any(
        isinstance(line, cst.FunctionDef) and line is function for line in class_def.body.body
    )


def _handed_long(
    function: cst.FunctionDef,
    name: str,
    class_def: cst.ClassDef | None,
    module: cst.Module,
    depth: int,
) -> bool:
    """A parameter without a default is long when this module calls its function, and
    every call hands it a long interval: `_train_epoch(loader, log_interval)` called from
    `fit(self, loader, log_interval=100)` only. A call that passes nothing for it (through
    `*args`, or not at all) leaves it unknown."""
    if depth >= _HANDED_DEPTH:
        return False
    method = _is_method(function, class_def)
    sites = call_sites(module)
    calls = sites.calls(function, method)
    handed = sites.handed_from(function, name, method)
    return (
        bool(calls)
        and len(handed) == len(calls)
        and all(
            long_interval(value, site.function, site.class_def, module, depth + 1)
            for value, site in handed
        )
    )


_HANDED_DEPTH = 3  # callers followed up from a parameter, at most


def long_interval(
    interval: cst.BaseExpression,
    function: cst.FunctionDef | None,
    class_def: cst.ClassDef | None,
    module: cst.Module,
    _depth: int = 0,
    options: OptionDefaults | None = None,
) -> bool:
    """Whether `interval` is known to be at least `SPARSE` passes. `options`: the
    defaults the project declares for a command-line option (`args.logging_steps`, with
    `parser.add_argument("--logging_steps", type=int, default=100)` in the script that
    hands `args` in), where the caller can look them up."""
    if _long_value(interval) or _names_a_save_or_evaluation(interval):
        return True
    values: list[cst.BaseExpression] = []
    if isinstance(interval, cst.Name):
        name = interval.value
        if function is not None and (default := _parameter_default(function, name)) is not None:
            return _long_value(default)
        if function is not None and parameter(function, name) is not None:
            return _handed_long(function, name, class_def, module, _depth)
        if function is not None:
            values = local_values(function, name)
        if not values:
            values = [
                s.value
                for line in module.body
                if isinstance(line, cst.SimpleStatementLine)
                for s in line.body
                if isinstance(s, cst.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0].target, cst.Name)
                and s.targets[0].target.value == name
            ]
    elif (
        isinstance(interval, cst.Attribute)
        and class_def is not None
        and self_attribute(interval) is not None
    ):
        values = attribute_values(class_def, interval.attr.value)
    elif type(interval) is cst.Attribute and (
        settings := _settings_class(interval.value, function, class_def, module)
    ):
        # `self.params.logging_steps` with `self.params = args`, `args: TrainingParams`:
        # the default the settings class declares for the field (in this module, or, by
        # `options`, in the project module its import names).
        field = interval.attr.value
        local = _local_field(module, settings, field)
        if local is not None:
            return _long_value(local)
        if options is not None:
            declared = options(field, settings)
            if declared:
                return all(d is not None and d >= SPARSE for d in declared)
    if (
        options is not None
        and type(interval) is cst.Attribute
        and type(interval.value) is cst.Name
        and interval.value.value != "self"
    ):
        # `args.logging_steps`: long where every declaration of the option defaults to a
        # long interval (one without an integer default, or none at all, may be 1).
        defaults = options(interval.attr.value)
        return bool(defaults) and all(d is not None and d >= SPARSE for d in defaults)
    return bool(values) and all(_long_value(value) for value in values)


# Calls that copy a settings object whole: what they return is of the class handed in.
_COPIES = frozenset({"copy.deepcopy", "copy.copy", "deepcopy", "copy"})


def _settings_class(
    holder: cst.BaseExpression,
    function: cst.FunctionDef | None,
    class_def: cst.ClassDef | None,
    module: cst.Module,
) -> cst.BaseExpression | None:
    """The class a settings object is annotated with: `TrainingParams` for `args` in
    `def fit(self, args: TrainingParams)`, or for `self.params` where every value the
    class assigns it is such a parameter of the assigning method, as it is or copied
    whole (`self.params = copy.deepcopy(args)`). `Optional[C]` and `C | None` are `C`."""
    if type(holder) is cst.Name and function is not None:
        return _annotated(function, holder.value)
    attribute = self_attribute(holder)
    if attribute is None or class_def is None:
        return None
    found: cst.BaseExpression | None = None
    values = member_values_in(module, class_def.name.value, attribute)
    for value, method in values:
        while (
            type(value) is cst.Call
            and len(value.args) == 1
            and (get_full_name_for_node(value.func) or "") in _COPIES
        ):
            value = value.args[0].value
        if type(value) is not cst.Name or method is None:
            return None
        annotation = _annotated(method, value.value)
        if annotation is None or (found is not None and not found.deep_equals(annotation)):
            return None
        found = annotation
    return found


def _annotated(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The class parameter `name` of `function` is annotated with (a name or a dotted
    name; `Optional[C]`, `C | None` read as `C`)."""
    param = parameter(function, name)
    if param is None or param.annotation is None:
        return None
    annotation = param.annotation.annotation
    if type(annotation) is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
        sides = [annotation.left, annotation.right]
        kept = [side for side in sides if not (type(side) is cst.Name and side.value == "None")]
        annotation = kept[0] if len(kept) == 1 else annotation
    if (
        type(annotation) is cst.Subscript
        and (get_full_name_for_node(annotation.value) or "").endswith("Optional")
        and len(annotation.slice) == 1
        and type(annotation.slice[0].slice) is cst.Index
    ):
        annotation = annotation.slice[0].slice.value
    if type(annotation) in (cst.Name, cst.Attribute):
        return annotation
    return None


def _local_field(
    module: cst.Module, settings: cst.BaseExpression, field: str, depth: int = 0
) -> cst.BaseExpression | None:
    """The value a class of this module named `settings` (or a base of it here) gives
    `field` in its body (`logging_steps: int = 50`; of `field(default=50)`, the default);
    None where the class is not this module's or declares no value for the field."""
    if type(settings) is not cst.Name or depth > 3:
        return None
    class_def = next(
        (s for s in module.body if type(s) is cst.ClassDef and s.name.value == settings.value),
        None,
    )
    if class_def is None or type(class_def.body) is not cst.IndentedBlock:
        return None
    for line in class_def.body.body:
        if type(line) is not cst.SimpleStatementLine:
            continue
        for small in line.body:
            target, value = None, None
            if type(small) is cst.AnnAssign:
                target, value = small.target, small.value
            elif type(small) is cst.Assign and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            if type(target) is cst.Name and target.value == field and value is not None:
                return _field_default(value)
    for base in class_def.bases:
        found = _local_field(module, base.value, field, depth + 1)
        if found is not None:
            return found
    return None


def _field_default(value: cst.BaseExpression) -> cst.BaseExpression:
    """`50` of `field(default=50)` (dataclasses', pydantic's `Field`); the value itself
    otherwise."""
    if type(value) is cst.Call and (get_full_name_for_node(value.func) or "").rsplit(".", 1)[
        -1
    ] in ("field", "Field"):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                return arg.value
        if value.args and value.args[0].keyword is None:
            return value.args[0].value
    return value


def _equality_sides(
    test: cst.BaseExpression,
) -> tuple[tuple[cst.BaseExpression, cst.BaseExpression], ...]:
    """Both readings, (side, other), of a single `a == b`; none for any other test."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return ()
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal):
        return ()
    return ((test.left, comparison.comparator), (comparison.comparator, test.left))


def _modulo_interval(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`n` in `step % n == 0`, `(i + 1) % n == 0`, `0 == step % n`, `not step % n`."""
    inner = negated(test)
    if inner is not None:
        if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Modulo):
            return inner.right
        return None
    for side, other in _equality_sides(test):
        if (
            isinstance(side, cst.BinaryOperation)
            and isinstance(side.operator, cst.Modulo)
            and _int_value(other) == 0
        ):
            return side.right
    return None


def sparse_test(
    test: cst.BaseExpression,
    function: cst.FunctionDef | None,
    class_def: cst.ClassDef | None,
    module: cst.Module,
    _seen: frozenset[str] = frozenset(),
    options: OptionDefaults | None = None,
) -> bool:
    """Whether an `if` body under `test` runs only once every `SPARSE` passes or more:
    `step % 100 == 0`, a call of a predicate of the module that returns such a test of
    its parameters (`divisible_by(step, self.val_every)`), or such a test as one side of
    an `and`, or a local name holding one (`_seen`: the names being followed)."""
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And):
            return any(
                sparse_test(side, function, class_def, module, _seen, options)
                for side in (test.left, test.right)
            )
        return _sparse_or_last(test, function, class_def, module, _seen, options)
    if isinstance(test, cst.Name) and function is not None and test.value not in _seen:
        # `should_log = step % self.log_frequency == 0` then `if should_log:`.
        values = local_values(function, test.value)
        seen = _seen | {test.value}
        return bool(values) and all(
            isinstance(value, cst.Comparison | cst.UnaryOperation | cst.BooleanOperation)
            and sparse_test(value, function, class_def, module, seen, options)
            for value in values
        )
    if _wall_clock_gate(test):
        return True
    interval = _modulo_interval(test)
    if interval is None and type(test) is cst.Call:
        interval = _interval_handed_to_predicate(test, module)
    return interval is not None and long_interval(
        interval, function, class_def, module, options=options
    )


def _or_operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of `a or b or c`, however the parser nested them."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return [*_or_operands(test.left), *_or_operands(test.right)]
    return [test]


def _one_value_of(
    test: cst.BaseExpression, counters: set[str], function: cst.FunctionDef | None = None
) -> bool:
    """`step == (self.num_train_steps - 1)`, `i + 1 == len(loader)`: an equality that
    holds for one value of a counter named in `counters` (a plain name or `self.` attribute,
    as code), so one pass of the loop that advances it; also through a local name bound
    only to the counter shifted (`batch_count = i + 1`, `step = epoch * n + i`: `_shifts`),
    one value of which is one value of the counter."""
    for side, _other in _equality_sides(test):
        for node in (side, *descendants(side)):
            if type(node) in (cst.Name, cst.Attribute) and _code(node) in counters:
                return True
            if type(node) is cst.Name and _shifted_counter(node, counters, function, 0):
                return True
    return False


def _shifted_counter(
    name: cst.Name, counters: set[str], function: cst.FunctionDef | None, depth: int
) -> bool:
    """`batch_count` with `batch_count = i + 1` (every plain assignment of the function,
    and no other binding): a name that moves with the counter `i`, one value for one."""
    if function is None or depth > 2:
        return False
    values = local_values(function, name.value)
    return bool(values) and all(_shifts(value, counters, function, depth) for value in values)


def _shifts(
    value: cst.BaseExpression, counters: set[str], function: cst.FunctionDef | None, depth: int
) -> bool:
    """`i + 1`, `i - 1`, `num_batches_per_epoch * epoch + i`: a counter of `counters` (or
    a name shifting one) plus or minus other values, which takes one value per value of
    the counter. Not `i // 10`, `i % 7` or `i * 0`: many passes give one value."""
    if type(value) is cst.BinaryOperation and type(value.operator) in (cst.Add, cst.Subtract):
        return _shifts(value.left, counters, function, depth) or _shifts(
            value.right, counters, function, depth
        )
    if type(value) in (cst.Name, cst.Attribute) and _code(value) in counters:
        return True
    return type(value) is cst.Name and _shifted_counter(value, counters, function, depth + 1)


def _code(node: cst.CSTNode) -> str:
    return get_full_name_for_node(node) or ""


def _counted(test: cst.BaseExpression, module: cst.Module) -> set[str]:
    """The names (as code) a test divides by its interval: `step` in `step % n == 0` or
    `(step + 1) % n == 0`, and in `divisible_by(step, n)` (what the module's predicate is
    handed beside its divisor). The interval's own names are not counters."""
    found: set[str] = set()
    for node in (test, *descendants(test)):
        counted: list[cst.CSTNode] = []
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
            counted = [node.left]
        elif type(node) is cst.Call:
            interval = _interval_handed_to_predicate(node, module)
            if interval is not None:
                counted = [arg.value for arg in node.args if arg.value is not interval]
        for part in counted:
            found.update(
                _code(inner)
                for inner in (part, *descendants(part))
                if type(inner) in (cst.Name, cst.Attribute) and _code(inner)
            )
    return found


def _sparse_or_last(
    test: cst.BooleanOperation,
    function: cst.FunctionDef | None,
    class_def: cst.ClassDef | None,
    module: cst.Module,
    _seen: frozenset[str],
    options: OptionDefaults | None = None,
) -> bool:
    """`is_divisible(step, self.log_every) or step == (self.num_train_steps - 1)`: an
    interval test, or one value of the counter it divides (the last step, the first): the
    branch runs once every interval and once more, still amortised. Every operand must be
    one or the other, with one interval at least (`step % 100 == 0 or step < 10` runs on
    ten steps in a row)."""
    operands = _or_operands(test)
    sparse = [o for o in operands if sparse_test(o, function, class_def, module, _seen, options)]
    if not sparse:
        return False
    counters = {
        name for o in sparse for held in _held_tests(o, function) for name in _counted(held, module)
    }
    return all(
        any(o is s for s in sparse)
        or _ends_its_loop(o, test, function)
        or all(_one_value_of(held, counters, function) for held in _held_tests(o, function))
        for o in operands
    )


def _ends_its_loop(
    operand: cst.BaseExpression, test: cst.BaseExpression, function: cst.FunctionDef | None
) -> bool:
    """`stop_on_max_steps_limit or step % self.logging_steps == 0`, where a later
    statement of the block holding the test (or of a block around it, in the loop)
    leaves the loop on that flag (`if stop_on_max_steps_limit: ...; break`): a local
    flag, bound by plain assignments, that ends the loop on the pass it holds, so it
    holds on one pass only, the last, as `step == last_step` does. Not where the test
    sits in a loop nested inside that one (the flag would hold on every pass of the
    inner loop)."""
    if type(operand) is not cst.Name or function is None:
        return False
    name = operand.value
    if not local_values(function, name):
        return False
    path = _path_to(function.body, test)
    # From the test outwards: each block on the way, up to the body of the innermost
    # loop around the test, and the statement of it that holds the test.
    for depth in range(len(path) - 2, -1, -1):
        block, statement = path[depth], path[depth + 1]
        if type(block) is cst.IndentedBlock:
            statements = list(block.body)
            position = next(i for i, line in enumerate(statements) if line is statement)
            if any(
                type(later) is cst.If
                and type(later.test) is cst.Name
                and later.test.value == name
                and block_exit(later.body) is cst.Break
                for later in statements[position + 1 :]
            ):
                return True
        if type(block) in _NESTED:
            return False
    return False


def _path_to(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode]:
    """`root` and its descendants down to `target`, outermost first; empty where `target`
    is not under `root` (nested definitions are not entered)."""
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    path: list[cst.CSTNode] = []
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        path.append(node)
        if node is target:
            return path
        if node is not root and type(node) in _SCOPES:
            continue
        stack.extend((child, depth + 1) for child in reversed(children(node)))
    return []


_NESTED = node_types(cst.For, cst.While)
_SCOPES = node_types(cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _held_tests(
    test: cst.BaseExpression, function: cst.FunctionDef | None, _seen: frozenset[str] = frozenset()
) -> list[cst.BaseExpression]:
    """The tests a local name holds (`is_last = step == total - 1` then `... or is_last`),
    followed through names bound to names; the test itself where it is no such name."""
    if isinstance(test, cst.Name) and function is not None and test.value not in _seen:
        values = local_values(function, test.value)
        if values and all(
            isinstance(value, cst.Name | cst.Comparison | cst.UnaryOperation | cst.BooleanOperation)
            for value in values
        ):
            seen = _seen | {test.value}
            return [held for value in values for held in _held_tests(value, function, seen)]
    return [test]


def _interval_handed_to_predicate(call: cst.Call, module: cst.Module) -> cst.BaseExpression | None:
    """`divisible_by(step, self.val_every)`, with the module's `def divisible_by(num, den):
    return (num % den) == 0`: the argument the call hands the predicate's divisor."""
    if type(call.func) is not cst.Name or any(arg.star for arg in call.args):
        return None
    name = call.func.value
    helper = next(
        (s for s in module.body if type(s) is cst.FunctionDef and s.name.value == name), None
    )
    returned = only_return(helper) if helper is not None else None
    if returned is None or returned.value is None:
        return None
    divisor = _modulo_interval(returned.value)
    if type(divisor) is not cst.Name:
        return None
    positional = positional_names(helper)
    for position, arg in enumerate(call.args):
        if arg.keyword is not None:
            if arg.keyword.value == divisor.value:
                return arg.value
        elif position < len(positional) and positional[position] == divisor.value:
            return arg.value
    return None


_CLOCKS = frozenset(
    {"time.time", "time.perf_counter", "time.monotonic", "perf_counter", "monotonic"}
)


def _elapsed(node: cst.BaseExpression) -> bool:
    """`time.time() - self.last_summary_time`: the wall-clock time since a mark."""
    return (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and isinstance(node.left, cst.Call)
        and not node.left.args
        and get_full_name_for_node(node.left.func) in _CLOCKS
    )


def _wall_clock_gate(test: cst.BaseExpression) -> bool:
    """`time.time() - self.last_log_time > self.log_every_seconds` (or `interval <
    time.time() - last`): a branch taken once a wall-clock interval has passed since the
    last time, which a step lasting milliseconds meets once every many steps, like `step %
    100 == 0`."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    return (
        _elapsed(test.left) and isinstance(operator, cst.GreaterThan | cst.GreaterThanEqual)
    ) or (_elapsed(right) and isinstance(operator, cst.LessThan | cst.LessThanEqual))


def may_be_sparse(test: cst.BaseExpression) -> bool:
    """A cheap first look, true wherever `sparse_test` may be: the test takes a remainder
    or a difference (an elapsed time) somewhere, is a name (which may hold such a test) or
    has one as an operand of its `and`/`or` (`if should_learn and step > 0:`), or calls a
    plain name (a predicate of the module that may take one: `divisible_by(step, every)`)."""
    if isinstance(test, cst.Name):
        return True
    if isinstance(test, cst.BooleanOperation) and (
        may_be_sparse(test.left) or may_be_sparse(test.right)
    ):
        return True
    return any(
        (type(node) is cst.BinaryOperation and type(node.operator) in (cst.Modulo, cst.Subtract))
        or (type(node) is cst.Call and type(node.func) is cst.Name)  # type: ignore[attr-defined]
        for node in descendants(test)
    )


def runs_on_its_first_pass(node: cst.If, loops: Sequence[cst.CSTNode]) -> bool:
    """`if i == 0 and self.tokenizer.no_speech is not None:` in `for i in
    range(self.sample_len)`: a test that needs the loop's own index to be 0 (the test, or
    an operand of its `and`) holds on the loop's first pass only, so the branch runs once
    per run of the loop. Only for the outermost loop of `loops` (those of the function
    holding the branch, outermost first; none where the function is one step by itself),
    whose index nothing else in it binds: an inner loop's first pass comes again on every
    pass of the loop around it."""
    if not loops or not isinstance(loops[0], cst.For):
        return False
    loop = loops[0]
    counter = loop_counter(loop)
    if counter is None or counter in _names_bound_in(loop.body):
        return False
    tests = [node.test]
    while tests:
        test = tests.pop()
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            tests.extend((test.left, test.right))
        elif first_pass_test(test, {counter}):
            return True
    return False


# Asked for every `if` of a loop's body (each branch of a denoising loop asks of the same
# loop): one walk of the body per lint answers them all. Nodes hash by identity.
@lint_memo.memo(64)
def _names_bound_in(block: cst.CSTNode) -> frozenset[str]:
    """The names the assignments and loops anywhere in `block` bind (`_bound_in`)."""
    return frozenset(name for target in _bound_in(block) for name in target_names(target))


def _bound_in(block: cst.CSTNode) -> list[cst.BaseExpression]:
    """The targets of the assignments and loops anywhere in `block`, nested functions too."""
    found: list[cst.BaseExpression] = []
    for node in descendants(block):
        if isinstance(node, cst.Assign):
            found.extend(t.target for t in node.targets)
        elif isinstance(
            node, cst.AugAssign | cst.AnnAssign | cst.For | cst.CompFor | cst.NamedExpr
        ):
            found.append(node.target)
    return found


def clears_its_flag(
    node: cst.If, function: cst.FunctionDef | None, loops: Sequence[cst.CSTNode]
) -> bool:
    """`if need_init: self.init_rnn(); need_init = False` (or `if not self.initted: ...;
    self.initted = True`): a branch whose own body sets its flag so that its test fails
    runs once, on the first pass, not every step. A local flag must be bound nowhere else
    but once (its initial value), and that before the loops holding the branch (`loops`,
    outermost first), so no later pass raises it again: `first = True` inside the batch
    loop re-arms it every step, and so does a branch in no loop, run on every call (the
    context hands no loops for a function that is one step by itself)."""
    test, wanted = node.test, "False"
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, wanted = test.expression, "True"
    if isinstance(test, cst.Name):
        if function is None or not loops:
            return False
        values = local_values(function, test.value)
        if len(values) != 2:
            return False
        in_loops = {id(n) for n in descendants(loops[0])}
        if sum(id(v) not in in_loops for v in values) != 1:
            return False  # armed again on every pass (or never before the loops)
    elif self_attribute(test) is None:
        return False
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for line in body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for statement in line.body:
            if (
                isinstance(statement, cst.Assign)
                and len(statement.targets) == 1
                and statement.targets[0].target.deep_equals(test)
                and isinstance(statement.value, cst.Name)
                and statement.value.value == wanted
            ):
                return True
    return False


def _counter(node: cst.BaseExpression) -> bool:
    """A name, `self.<attribute>`, or an entry by a string key (`state["n_iter"]`)."""
    if isinstance(node, cst.Subscript):
        return (
            len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)
            and isinstance(node.slice[0].slice.value, cst.SimpleString)
            and isinstance(node.value, cst.Name | cst.Attribute)
        )
    return isinstance(node, cst.Name) or self_attribute(node) is not None


def _equality_with_a_number(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`X` in `X == 1` or `0 == X`, with `X` a counter."""
    for side, other in _equality_sides(test):
        if _int_value(other) is not None and _counter(side):
            return side
    return None


def _increments(line: cst.CSTNode, counter: cst.BaseExpression) -> bool:
    """`counter += 1` (any positive integer) as a statement of its own line."""
    return isinstance(line, cst.SimpleStatementLine) and any(
        isinstance(small, cst.AugAssign)
        and isinstance(small.operator, cst.AddAssign)
        and small.target.deep_equals(counter)
        and (_int_value(small.value) or 0) > 0
        for small in line.body
    )


def _binds(node: cst.CSTNode, counter: cst.BaseExpression) -> list[cst.CSTNode]:
    """The statements under `node` that bind `counter` (an assignment of it, or of a
    tuple holding it; an augmented assignment)."""
    found: list[cst.CSTNode] = []
    for inner in descendants(node):
        if isinstance(inner, cst.Assign):
            targets = [t.target for t in inner.targets]
        elif isinstance(inner, cst.AugAssign | cst.AnnAssign):
            targets = [inner.target]
        else:
            continue
        if any(d.deep_equals(counter) for target in targets for d in descendants(target)):
            found.append(inner)
    return found


def _counter_and_bound(
    test: cst.BaseExpression,
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(`counter`, `bound`) of `counter == bound` or `counter >= bound` (either way round:
    `bound <= counter`), with `counter` a name or `self.<attribute>`."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    operator = test.comparisons[0].operator
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(operator, cst.Equal):
        pairs = ((left, right), (right, left))
    elif isinstance(operator, cst.GreaterThanEqual | cst.GreaterThan):
        pairs = ((left, right),)
    elif isinstance(operator, cst.LessThanEqual | cst.LessThan):
        pairs = ((right, left),)
    else:
        return None
    for counter, bound in pairs:
        if _counter(counter) and not isinstance(counter, cst.Subscript):
            return counter, bound
    return None


def resets_its_counter(
    node: cst.If,
    function: cst.FunctionDef | None,
    class_def: cst.ClassDef | None,
    module: cst.Module,
) -> bool:
    """`if self._growth_step == self._growth_interval: self._growth_step = 0; ...` (beside
    `self._growth_step += 1`): a branch that sets its counter back to zero when it reaches
    a bound runs once every `bound` passes, a log interval by another spelling. It is
    sparse when the bound is known to be long (`long_interval`: `growth_interval=1000`, a
    parameter's default kept in `self._growth_interval`); a bound that may be 1 (unknown,
    or short) stays per step."""
    found = _counter_and_bound(node.test)
    if found is None:
        return False
    counter, bound = found
    resets = any(
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and small.targets[0].target.deep_equals(counter)
        and _int_value(small.value) == 0
        for line in node.body.body
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
    )
    return resets and long_interval(bound, function, class_def, module)


def passes_its_value_once(
    node: cst.If,
    function: cst.FunctionDef | None,
    loops: Sequence[cst.CSTNode],
    per_call: bool,
) -> bool:
    """`if state["n_iter"] == 1: t = min(1.0, 1.0 / g.abs().sum()) * lr` in a loop that
    does `state["n_iter"] += 1` on every pass: a counter that only grows equals a number on
    one pass, so the branch runs once, not every step. The increment must be a statement
    of the body of a loop holding the branch (`loops`, outermost first), made on every
    pass, and nothing else in the function may bind the counter. A local name may also be
    given its initial value before those loops, unless the function is one step by itself
    (`per_call`: `n_iter = 0` at the top of an optimizer's `step` starts the count again on
    every call); an attribute or an entry of a state dict keeps counting across calls."""
    counter = _equality_with_a_number(node.test)
    if counter is None or function is None or not loops:
        return False
    increments = [
        line
        for loop in loops
        if isinstance(loop, cst.For | cst.While) and isinstance(loop.body, cst.IndentedBlock)
        for line in loop.body.body
        if _increments(line, counter)
    ]
    if not increments:
        return False
    counted = {id(small) for line in increments for small in line.body}  # type: ignore[attr-defined]
    others = [b for b in _binds(function.body, counter) if id(b) not in counted]
    if not others:
        return True
    if not isinstance(counter, cst.Name) or per_call or len(others) != 1:
        return False
    in_loops = {id(n) for n in descendants(loops[0])}
    return id(others[0]) not in in_loops and _int_value(getattr(others[0], "value", None)) == 0


def counts_its_calls(node: cst.If, function: cst.FunctionDef | None) -> bool:
    """`if group["step"] == 0: group["g0_norm"] = norm.sqrt_().item()` in an optimizer's
    `step` that does `group["step"] += 1` on every call: a counter kept across calls (an
    attribute of `self`, or an entry of a dict the function is handed or reaches, as an
    optimizer's param group or state) that the function raises on every call equals a
    number on one call only, so the branch (in none of the function's loops) runs once
    per run, not once per call. The increment must run on every call: a statement of the
    function's body, or of the body of a loop, `with` or `try` in it (not of a branch),
    and nothing else in the function may bind the counter. A local name starts over on
    every call, and so does an entry of a dict the function builds itself."""
    counter = _equality_with_a_number(node.test)
    if counter is None or function is None or isinstance(counter, cst.Name):
        return False
    if isinstance(counter, cst.Subscript) and isinstance(counter.value, cst.Name):
        built = local_values(function, counter.value.value)
        if any(_new_dict(value) for value in built):
            return False
    increments = [line for line in _every_call_lines(function.body) if _increments(line, counter)]
    if not increments:
        return False
    counted = {id(small) for line in increments for small in line.body}  # type: ignore[attr-defined]
    return not [b for b in _binds(function.body, counter) if id(b) not in counted]


def _new_dict(value: cst.BaseExpression) -> bool:
    """`{}`, `{"step": 0}`, `dict(...)`: a dict built where it is bound."""
    return isinstance(value, cst.Dict | cst.DictComp) or (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "dict"
    )


def _every_call_lines(block: cst.BaseSuite) -> list[cst.SimpleStatementLine]:
    """The simple statement lines of `block` that run whenever it does, and those of the
    bodies of its loops, `with` and `try` statements (a loop's body runs on its passes;
    a branch's or a handler's only when taken)."""
    found: list[cst.SimpleStatementLine] = []
    if not isinstance(block, cst.IndentedBlock):
        return found
    for line in block.body:
        if isinstance(line, cst.SimpleStatementLine):
            found.append(line)
        elif isinstance(line, cst.For | cst.While | cst.With | cst.Try):
            found.extend(_every_call_lines(line.body))
    return found


def switches_once(node: cst.If, path: Sequence[cst.CSTNode]) -> bool:
    """`if ...: next_lr = corrected_exp_avg.item()` in SWATS's Adam branch, which the
    function follows with `if next_lr is not None: group["phase"] = "sgd"`, behind `if
    group["phase"] == "sgd": ...; continue`: a branch whose taking flips a switch kept
    across calls (an attribute of `self`, an entry of a dict by a string key) to a
    constant, itself (`self.phase = "sgd"` in its body) or through a local it sets
    (bound nowhere else but to None), where an exit before it (`continue`, `return`)
    leaves every pass once the switch holds that constant: it runs until the switch, on
    one step, then never again. `path`: the branch and its ancestors, innermost first."""
    # The exits first: they are few and cheap to find, while the flips walk the function.
    exits = [exit_if for exit_if, _, _ in exits_before(path, (cst.Continue, cst.Return))]
    if not exits:
        return False
    flips = _flips(node.body, path)
    return any(
        _tests_switch(exit_if.test, switch, value) for exit_if in exits for switch, value in flips
    )


def _constant(node: cst.BaseExpression) -> object:
    """The value of a string, integer or `True`/`False` literal; `_constant` itself for
    anything else."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return _constant


def _switch(node: cst.BaseExpression) -> bool:
    """`self.phase`, `group["phase"]`: state kept across calls."""
    return (isinstance(node, cst.Subscript) and _counter(node)) or self_attribute(node) is not None


def _assignments(block: cst.BaseSuite) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(target, value) of the single-target assignments that are statements of `block`."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else ()
    return [
        (small.targets[0].target, small.value)
        for line in lines
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
        if isinstance(small, cst.Assign) and len(small.targets) == 1
    ]


def _flips(
    body: cst.BaseSuite, path: Sequence[cst.CSTNode]
) -> list[tuple[cst.BaseExpression, object]]:
    """The switches (and the constants) the branch `body` sets, itself or through a local
    name it sets that a later `if name is not None:` (or `if name:`) of the function turns
    into the switch."""
    function = next((n for n in path if isinstance(n, cst.FunctionDef)), None)
    found = _switches_set(body)
    if function is not None:
        for target, _ in _assignments(body):
            if isinstance(target, cst.Name):
                found.extend(_flipped_through(target.value, body, function))
    return found


def _switches_set(block: cst.BaseSuite) -> list[tuple[cst.BaseExpression, object]]:
    """The switches `block`'s own statements set to a constant, with the constants."""
    return [
        (target, constant)
        for target, value in _assignments(block)
        if _switch(target) and (constant := _constant(value)) is not _constant
    ]


# Exact type tests (`walk.node_types`): `isinstance` on libcst's ABC-derived classes runs
# ABCMeta's check in Python for every node of the function that does not match.
_BINDING_STATEMENTS = node_types(cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.With)


def _flipped_through(
    name: str, body: cst.BaseSuite, function: cst.FunctionDef
) -> list[tuple[cst.BaseExpression, object]]:
    """The switches that `if <name> is not None:` (or `if <name>:`) in `function` sets to
    a constant, where `name` is bound only by plain assignments, to None but in `body`."""
    in_body = {id(n) for n in descendants(body)}
    bindings, ifs = _binding_statements(function)
    for node, names, plain in bindings:
        if name not in names:
            continue
        if not plain:
            return []
        value = getattr(node, "value", None)
        if id(node) not in in_body and not (isinstance(value, cst.Name) and value.value == "None"):
            return []
    found: list[tuple[cst.BaseExpression, object]] = []
    for node in ifs:
        if id(node) not in in_body and _tests_set(node.test, name):
            found.extend(_switches_set(node.body))
    return found


# Asked for each name each branch of the function assigns (`_flips`): one walk of the
# function per lint, not two per name. Nodes hash by identity.
@lint_memo.memo(64)
def _binding_statements(
    function: cst.FunctionDef,
) -> tuple[list[tuple[cst.CSTNode, frozenset[str], bool]], list[cst.If]]:
    """The statements anywhere in `function`'s body that bind names (`_BINDING_STATEMENTS`),
    in source order, each with the names it binds and whether it is a plain assignment (one
    target, a name: `x = ...`, `x: T = ...`); and its `if` statements, in source order."""
    bindings: list[tuple[cst.CSTNode, frozenset[str], bool]] = []
    ifs: list[cst.If] = []
    for node in descendants(function.body):
        node_type = type(node)
        if node_type is cst.If:
            ifs.append(node)  # type: ignore[arg-type]
        if node_type not in _BINDING_STATEMENTS:
            continue
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else []
        if isinstance(node, cst.AnnAssign | cst.AugAssign | cst.For):
            targets = [node.target]
        if isinstance(node, cst.With):
            targets = [i.asname.name for i in node.items if i.asname is not None]
        names = frozenset(n for target in targets for n in target_names(target))
        plain = (
            isinstance(node, cst.Assign | cst.AnnAssign)
            and len(targets) == 1
            and isinstance(targets[0], cst.Name)
        )
        bindings.append((node, names, plain))
    return bindings, ifs


def _tests_set(test: cst.BaseExpression, name: str) -> bool:
    """`name is not None` or `name`."""
    if isinstance(test, cst.Name):
        return test.value == name
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.IsNot)
        and isinstance(test.left, cst.Name)
        and test.left.value == name
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    )


def _tests_switch(test: cst.BaseExpression, switch: cst.BaseExpression, value: object) -> bool:
    """`switch == value` (either way round), or `switch` itself for `True`."""
    if value is True and test.deep_equals(switch):
        return True
    for side, other in _equality_sides(test):
        if (
            side.deep_equals(switch)
            and _constant(other) == value
            and _constant(other) is not _constant
        ):
            return True
    return False


# A per-step function's parameter that numbers the batches or steps of its loop.
_PASS_COUNTER = re.compile(
    r"^(batch_?(idx|index|nb|num|no|i|id)|i_batch|(global_)?step|iteration)$"
)


def _later_pass(test: cst.BaseExpression) -> str | None:
    """The counter in `batch_idx > 0`, `batch_idx != 0`, `batch_idx >= 1`, `0 < batch_idx`
    (or one side of an `or`): a test true on every pass but the first."""
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.Or):
            return _later_pass(test.left) or _later_pass(test.right)
        return None
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    for counter, number, after in ((test.left, right, True), (right, test.left, False)):
        value = _int_value(number)
        if not isinstance(counter, cst.Name) or not _PASS_COUNTER.match(counter.value):
            continue
        later = (cst.GreaterThan, cst.NotEqual) if after else (cst.LessThan, cst.NotEqual)
        at_least = cst.GreaterThanEqual if after else cst.LessThanEqual
        if (value == 0 and isinstance(operator, later)) or (
            value == 1 and isinstance(operator, at_least)
        ):
            return counter.value
    return None


def past_interval_exit(path: Sequence[cst.CSTNode], module: cst.Module) -> bool:
    """Whether the code on `path` (a node and its ancestors, innermost first) follows, in
    its function's blocks, an exit that leaves all passes but a few: a first-pass exit
    (`_first_pass_exit`) or a sparse one (`_sparse_exit`). The exits before it are
    scanned once for both."""
    class_def = next((n for n in path if type(n) is cst.ClassDef), None)
    return any(
        _first_pass_exit(statement.test, function)
        or _sparse_exit(statement.test, function, class_def, module)
        for statement, _, function in exits_before(path, (cst.Return,))
    )


def _first_pass_exit(test: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """`if ... or batch_idx > 0: return` with `batch_idx` a parameter the function is
    handed (a step hook's batch number): what follows runs on the first batch only, once
    per epoch, whatever the `or`'s other sides add. `if batch_idx == 0: return` leaves
    every other batch, and stays per step."""
    counter = _later_pass(test)
    return counter is not None and parameter(function, counter) is not None


def _off_interval(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`n` in `step % n != 0`, `(step - 1) % n` (truthy), or one side of an `or` that is:
    a test true on every pass but those the interval `n` counts."""
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.Or):
            return _off_interval(test.left) or _off_interval(test.right)
        return None
    if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo):
        return test.right
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.NotEqual):
        return None
    for side, other in ((test.left, comparison.comparator), (comparison.comparator, test.left)):
        if (
            isinstance(side, cst.BinaryOperation)
            and isinstance(side.operator, cst.Modulo)
            and _int_value(other) == 0
        ):
            return side.right
    return None


def _sparse_exit(
    test: cst.BaseExpression,
    function: cst.FunctionDef,
    class_def: cst.ClassDef | None,
    module: cst.Module,
) -> bool:
    """`if (step - 1) % self.demo_every != 0 or ...: return` with an interval known to be
    long: what follows runs once every many passes, as the body of `if step % every ==
    0:` does."""
    interval = _off_interval(test)
    return interval is not None and long_interval(interval, function, class_def, module)
