"""Flags that choose between CUDA and staying on the CPU.

`use_cuda = torch.cuda.is_available() and not args.cpu`, then `if use_cuda: model.cuda()`
and `sample = move_to_cuda(sample) if use_cuda else sample`: there is no device variable
and no ladder, yet the flag is the program's device choice. On an XLA host the probe is
false, so nothing is ever placed on a device and the program runs on the host CPU. A test
of where a value lives asks the same question (`use_cuda = next(model.parameters()).is_cuda`,
then `if use_cuda: loader = DataLoader(kg, use_cuda="batch")`): with the model on the XLA
device it is false, and the batches stay on the host.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import parameters
from xlalint.analysis.devices import device_string_type, device_types, mentions_xla
from xlalint.analysis.guards import falsy_constant, implied, local_values, module_assignments
from xlalint.analysis.imports import ImportTable, import_aliases, top_level_imports
from xlalint.analysis.members import member_values_in
from xlalint.walk import EXPRESSIONS, TRIVIA, children, descendants, self_attribute, target_names

# What asks whether a CUDA device is there (not a flag name or a string, which only says
# that the code is about CUDA).
_AVAILABILITY = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
# Helpers named for moving values to a CUDA device: `move_to_cuda(sample)`.
_TO_CUDA = re.compile(r"(^|_)(to|onto)_(cuda|gpu)$", re.IGNORECASE)
# Keywords asking a callee to put what it makes on CUDA: `DataLoader(kg, use_cuda="batch")`,
# `Batcher(data, cuda=True)`.
_CUDA_KEYWORD = re.compile(r"^(use_|on_)?cuda$", re.IGNORECASE)


def probes_availability(value: cst.BaseExpression, imports: ImportTable) -> bool:
    """`torch.cuda.is_available() and not args.cpu`: true only where CUDA is there; so is
    a test of where a value lives, `next(model.parameters()).is_cuda` (`x.is_cuda`)."""

    def asks(test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.Attribute):
            return test.attr.value == "is_cuda"
        return isinstance(test, cst.Call) and imports.resolve(test.func) in _AVAILABILITY

    if implied(value, True, asks) is True:
        return True
    # `torch.cuda.device_count() > 0`
    return (
        type(value) is cst.Comparison
        and len(value.comparisons) == 1
        and isinstance(value.comparisons[0].operator, cst.GreaterThan | cst.GreaterThanEqual)
        and asks(value.left)
    )


def places_on_cuda(node: cst.CSTNode, imports: ImportTable) -> bool:
    """Whether code under `node` puts a value on a CUDA device: `.cuda()`, `.to("cuda")`,
    a helper named for it (`move_to_cuda(sample)`), or a call asked to by a keyword named
    for CUDA (`DataLoader(kg, use_cuda="batch")`; not `use_cuda=False`)."""
    for found in descendants(node):
        if not isinstance(found, cst.Call):
            continue
        if any(
            arg.keyword is not None
            and _CUDA_KEYWORD.match(arg.keyword.value)
            and falsy_constant(arg.value) is not True
            for arg in found.args
        ):
            return True
        func = found.func
        if isinstance(func, cst.Attribute):
            if func.attr.value == "cuda":
                return True
            if func.attr.value == "to" and any(
                device_string_type(arg.value) == "cuda" for arg in found.args
            ):
                return True
        name = (get_full_name_for_node(func) or "").rsplit(".", 1)[-1]
        if _TO_CUDA.search(name):
            return True
    return False


def cuda_flag_places(function: cst.FunctionDef, name: str, imports: ImportTable) -> bool:
    """Whether `name`, a flag of `function` assigned only from a CUDA availability probe,
    decides where values go: an `if name:` (or a ternary on it) whose true side places
    something on CUDA."""
    values = local_values(function, name)
    if not values or not all(probes_availability(v, imports) for v in values):
        return False

    def is_flag(test: cst.BaseExpression) -> bool:
        return isinstance(test, cst.Name) and test.value == name

    return any(
        isinstance(node, cst.If | cst.IfExp)
        and implied(node.test, True, is_flag) is True
        and places_on_cuda(node.body, imports)
        for node in descendants(function.body)
    )


def class_cuda_flag(test: cst.BaseExpression) -> str | None:
    """`use_cuda` in `if self.use_cuda:`: an attribute of the instance named for CUDA, whose
    value may come from anywhere (a method of another module, a constructor argument)."""
    if (
        isinstance(test, cst.Attribute)
        and isinstance(test.value, cst.Name)
        and test.value.value == "self"
        and "cuda" in test.attr.value.lower()
    ):
        return test.attr.value
    return None


def flag_properties(module: cst.Module, class_def: cst.ClassDef) -> dict[str, str]:
    """Properties of the class, or of a base class of the module it derives from, that
    hand back another attribute of the instance (`@property def use_cuda(self): return
    self._use_cuda`), by name: the attribute each reads. `if self.use_cuda:` in a subclass
    tests the same flag as `if self._use_cuda:` in its `__init__`. The class's own
    definition of a name wins over its bases'; a property that computes something of its
    own maps to nothing."""
    classes = {node.name.value: node for node in module.body if type(node) is cst.ClassDef}
    found: dict[str, str | None] = {}
    seen: set[int] = set()
    pending = [class_def]
    while pending:
        klass = pending.pop(0)
        if id(klass) in seen:
            continue
        seen.add(id(klass))
        for statement in klass.body.body:
            if type(statement) is not cst.FunctionDef or statement.name.value in found:
                continue
            if any(
                type(d.decorator) is cst.Name and d.decorator.value == "property"
                for d in statement.decorators
            ):
                read = _returned_attribute(statement)
                found[statement.name.value] = None if read == statement.name.value else read
        for base in klass.bases:
            if type(base.value) is cst.Name and base.value.value in classes:
                pending.append(classes[base.value.value])
    return {name: read for name, read in found.items() if read is not None}


def inherited_flag(module: cst.Module, class_def: cst.ClassDef, flag: str) -> bool:
    """The flag is a base class's of another project module: neither the class nor a base
    class of this module binds `self.<flag>` (an assignment, a tuple target, a property of
    that name), and the class derives, itself or through such a base, from a class this
    module imports from outside torch (ding's `DQNPolicy(Policy)`, whose `Policy` sets
    `self._cuda` and the device beside it). That base chooses the device, and the `if
    self.<flag>:` placements here follow its choice."""
    classes = {node.name.value: node for node in module.body if type(node) is cst.ClassDef}
    seen: set[int] = set()
    pending = [class_def]
    foreign = False
    imported: dict[str, str] | None = None  # `_imported_names`, read at the first import
    while pending:
        klass = pending.pop(0)
        if id(klass) in seen:
            continue
        seen.add(id(klass))
        if _binds_attribute(klass, flag):
            return False
        for base in klass.bases:
            value = base.value
            if type(value) is cst.Name and value.value in classes:
                pending.append(classes[value.value])
                continue
            head = (get_full_name_for_node(value) or "").split(".")[0]
            if imported is None:
                imported = _imported_names(module)
            target = imported.get(head)
            if target is not None and target.split(".")[0] not in ("torch", "builtins"):
                foreign = True
    return foreign


def _imported_names(module: cst.Module) -> dict[str, str]:
    """The names the module's top-level imports bind (also under `try:`/`if`), each with
    what it imports: a relative import (`from .base_policy import Policy`) keeps its
    leading dots."""
    found: dict[str, str] = {}
    for statement in top_level_imports(module):
        for _, bound, target in import_aliases(statement):
            found[bound] = target
    return found


def _binds_attribute(class_def: cst.ClassDef, name: str) -> bool:
    """A statement of the class binds `self.<name>` (`self.x = ...`, `self.x: bool = ...`,
    `self.x, self.n = ...`, `self.x += ...`), or the class defines a method of that name."""
    for node in descendants(class_def.body):
        kind = type(node)
        if kind is cst.FunctionDef and node.name.value == name:  # type: ignore[attr-defined]
            return True
        if kind is cst.AssignTarget or kind in (cst.AnnAssign, cst.AugAssign):
            targets = [node.target]  # type: ignore[attr-defined]
        else:
            continue
        while targets:
            target = targets.pop()
            if type(target) in (cst.Tuple, cst.List):
                targets.extend(e.value for e in target.elements)  # type: ignore[attr-defined]
            elif self_attribute(target) == name:
                return True
    return False


def _returned_attribute(function: cst.FunctionDef) -> str | None:
    """`x` where the function's body (its docstring aside) is `return self.x`."""
    body = function.body
    if type(body) is not cst.IndentedBlock:
        return None
    statements = list(body.body)
    if (
        statements
        and type(statements[0]) is cst.SimpleStatementLine
        and len(statements[0].body) == 1
        and type(statements[0].body[0]) is cst.Expr
        and isinstance(statements[0].body[0].value, cst.SimpleString | cst.ConcatenatedString)
    ):
        statements = statements[1:]
    if len(statements) != 1 or type(statements[0]) is not cst.SimpleStatementLine:
        return None
    small = statements[0].body
    if len(small) != 1 or type(small[0]) is not cst.Return or small[0].value is None:
        return None
    return self_attribute(small[0].value)


def _moves_to_a_chosen_device(node: cst.CSTNode) -> bool:
    """`x.to(self.device)`, `model.to(device=args.device)`: values go to a device chosen
    elsewhere, which may be an XLA device."""
    for found in descendants(node):
        if (
            isinstance(found, cst.Call)
            and isinstance(found.func, cst.Attribute)
            and found.func.attr.value == "to"
        ):
            for arg in found.args:
                name = get_full_name_for_node(arg.value) or ""
                if "device" in name.rsplit(".", 1)[-1].lower():
                    return True
    return False


def flag_placements(
    class_def: cst.ClassDef,
    flag: str,
    imports: ImportTable,
    properties: dict[str, str] | None = None,
) -> list[cst.If]:
    """The `if self.<flag>:` statements of the class that put values on CUDA
    (`self.model.cuda()`), without `else` or with an `else` that stays on the CPU
    (`else: loader = DataLoader(kg)`, placing nothing), in source order, where they are the
    class's only placement: the class moves nothing to a device chosen elsewhere
    (`.to(self.device)`), so on an XLA host, where the flag cannot be true, everything stays
    on the CPU. Empty otherwise. With `properties` (`flag_properties`), a test of a
    property that hands back the flag (`self.use_cuda` returning `self._use_cuda`) tests
    the flag."""
    if _moves_to_a_chosen_device(class_def.body):
        return []
    properties = properties or {}
    return [
        node
        for node in descendants(class_def.body)
        if isinstance(node, cst.If)
        and stays_on_the_cpu(node.orelse)
        and (tested := self_attribute(node.test)) is not None
        and properties.get(tested, tested) == flag
        and places_on_cuda(node.body, imports)
    ]


def stays_on_the_cpu(orelse: cst.If | cst.Else | None) -> bool:
    """No `else`, or an `else` (not an `elif`) that places nothing on a device: no
    `.to(...)`, `.cuda()`, no `device=` and no keyword named for CUDA."""
    if orelse is None:
        return True
    if not isinstance(orelse, cst.Else):
        return False
    for found in descendants(orelse.body):
        if not isinstance(found, cst.Call):
            continue
        func = found.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            return False
        if any(
            arg.keyword is not None
            and (arg.keyword.value == "device" or _CUDA_KEYWORD.match(arg.keyword.value))
            for arg in found.args
        ):
            return False
    return True


def probe_placement(
    node: cst.If,
    function: cst.FunctionDef | None,
    class_name: str | None,
    module: cst.Module,
    imports: ImportTable,
) -> bool:
    """`if torch.cuda.is_available(): t5 = t5.cuda()` (without `else`, or with one that
    places nothing) where every value the block moves to CUDA is one the code made or
    fetched itself (`t5, tokenizer = get_model_and_tokenizer(name)`, `MODEL =
    torch.hub.load(...)`, `self.model = Net()`), not one handed in: such a value starts on
    the host, so the probe chooses between CUDA and the CPU, and on an XLA host it stays on
    the CPU. A value handed in (`def to_cuda(x)`, `token_ids` of an embedding function, or
    a value computed from one) is where its caller put it, which may be the XLA device; a
    value the function also moves to a device chosen elsewhere (`model.to(device)`) has
    another placement."""
    if not probes_availability(node.test, imports) or not stays_on_the_cpu(node.orelse):
        return False
    moved = _moved_to_cuda(node.body, imports)
    if not moved:
        return False
    handed = {p.name.value for p in parameters(function, star=True)} if function else set()
    handed -= {"self", "cls"}  # an instance's methods make values as functions do
    scope = function.body if function is not None else module
    for receiver in moved:
        if type(receiver) is cst.Name:
            name = receiver.value
            if name in handed:
                return False
            values = _bound_values(scope, name, node)
            if values is None and function is None:
                found = module_assignments(module).get(name) or []
                values = None if any(v is None for v in found) else found  # type: ignore[assignment]
        elif (attribute := self_attribute(receiver)) is not None and class_name is not None:
            inside = set(map(id, descendants(node)))
            values = [
                value
                for value, _ in member_values_in(module, class_name, attribute)
                if id(value) not in inside
            ]
        else:
            return False
        if not values:
            return False  # bound some other way too (a loop, `with ... as`), or not here
        # `model = model.float()` keeps what the name held: the other bindings decide.
        values = [v for v in values if not _method_of(v, receiver)]
        if not values or not all(_made_here(v, handed) for v in values):
            return False
        if _moved_elsewhere(scope, receiver, node):
            return False
    return True


def _moved_to_cuda(block: cst.CSTNode, imports: ImportTable) -> list[cst.BaseExpression]:
    """The receivers the block moves to CUDA (`t5.cuda()`, `model.to("cuda")`), or [] where
    it moves anything else or nothing."""
    moved: list[cst.BaseExpression] = []
    for found in descendants(block):
        if type(found) is not cst.Call or type(found.func) is not cst.Attribute:
            continue
        method = found.func.attr.value
        if method == "cuda" or (
            method == "to"
            and found.args
            and device_types(found.args[0].value, imports) == frozenset({"cuda"})
        ):
            moved.append(found.func.value)
        elif method == "to":
            return []
    return moved


def _bound_values(
    scope: cst.CSTNode, name: str, skip: cst.CSTNode
) -> list[cst.BaseExpression] | None:
    """The values the statements of `scope` outside `skip` bind `name` to (the whole
    right-hand side of an unpacking), or None where something else binds it (a loop, `+=`,
    `with ... as`)."""
    values: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [scope]
    while stack:
        current = stack.pop()
        if current is skip or type(current) in _STATEMENT_SKIP:
            continue
        kind = type(current)
        if kind is cst.Assign:
            if any(name in target_names(t.target) for t in current.targets):  # type: ignore[attr-defined]
                values.append(current.value)  # type: ignore[attr-defined]
        elif kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.AsName):
            target = current.name if kind is cst.AsName else current.target  # type: ignore[attr-defined]
            if name in target_names(target):
                return None
        stack.extend(children(current))
    return values


# Statements do not sit in expressions, nor do a nested function's bindings belong to the
# function around it.
_STATEMENT_SKIP = (TRIVIA | EXPRESSIONS | frozenset({cst.FunctionDef, cst.ClassDef})) - {cst.AsName}


def _made_here(value: cst.BaseExpression, handed: set[str]) -> bool:
    """A call that makes or fetches a value (`Net()`, `T5EncoderModel.from_pretrained(n)`,
    `get_model_and_tokenizer(name)`, `self.build_model()`), not a method of something
    handed in (`x.float()`)."""
    if type(value) is not cst.Call:
        return False
    root = value.func
    while type(root) in (cst.Attribute, cst.Call, cst.Subscript):
        root = root.func if type(root) is cst.Call else root.value  # type: ignore[attr-defined]
    return type(root) is cst.Name and root.value not in handed


def _method_of(value: cst.BaseExpression, receiver: cst.BaseExpression) -> bool:
    """`model.float()`, `model.eval()` for `model`: a method of the value itself."""
    if type(value) is not cst.Call:
        return False
    called = get_full_name_for_node(value.func)  # type: ignore[attr-defined]
    spelled = get_full_name_for_node(receiver)
    return bool(called and spelled and called.startswith(spelled + "."))


def _moved_elsewhere(scope: cst.CSTNode, receiver: cst.BaseExpression, skip: cst.If) -> bool:
    """`model.to(device)`, `model.cuda()` outside the probe: the value has another
    placement, which the probe does not decide alone."""
    spelled = get_full_name_for_node(receiver)
    inside = set(map(id, descendants(skip)))
    for found in descendants(scope):
        if (
            type(found) is cst.Call
            and type(found.func) is cst.Attribute
            and found.func.attr.value in ("to", "cuda", "cpu")
            and id(found) not in inside
            and get_full_name_for_node(found.func.value) == spelled
        ):
            return True
    return False


def code_mentions_xla(node: cst.CSTNode, imports: ImportTable) -> bool:
    """`mentions_xla` outside docstrings: a class whose docstring lists "TPU training" as
    a plan has no XLA path."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Expr) and isinstance(
            current.value, cst.SimpleString | cst.ConcatenatedString
        ):
            continue
        if isinstance(current, cst.Name | cst.SimpleString | cst.FormattedStringText):
            if mentions_xla(current, imports):
                return True
        else:
            stack.extend(children(current))
    return False
