"""Record classes whose fields are declared to hold tensors.

Search and sampling code keeps per-candidate state in small records: a beam hypothesis
declared as `class Hypothesis(NamedTuple): yseq: torch.Tensor; score: Union[float,
torch.Tensor]`, a dataclass of a sample's log-probabilities. The tensors in them (0-dim
scores, token sequences) travel through Python lists and loops, so the value a host read
finally touches (`float(hyp.score)`, `if hyp.yseq[-1] == eos:`, `sorted(hyps, key=lambda h:
h.score)`) is an attribute of an object, not a name bound to a torch call.

A record class is a class of the module whose body declares fields with annotations
(NamedTuples, dataclasses, attrs classes, plain classes with declared attributes). A field
is a tensor field when its annotation names a tensor or a union that admits one; a dict
field whose values are annotated so holds tensors. The author's annotation is the evidence:
an unannotated field, or one annotated as anything else, is not taken for a tensor.

Which objects are records is kept narrow, to what the code says about them: `self` in the
class's own methods, parameters annotated with the class (or a list/sequence of it), names
bound to a call of the class or to `record._replace(...)`, elements of such lists (by loop
or by index), and local lists a function fills with calls of the class
(`hyps.append(Hypothesis(...))`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst

from xlalint.walk import code_children

# Annotations of a collection whose elements are one class: `List[Hypothesis]`.
_LIST_ANNOTATIONS = frozenset({"List", "list", "Sequence", "Iterable", "Tuple", "tuple"})
_DICT_ANNOTATIONS = frozenset({"Dict", "dict", "Mapping", "MutableMapping"})
_OPTIONAL = frozenset({"Optional", "Union"})
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True)
class Record:
    """A record class's fields that hold tensors, or dicts of tensors."""

    tensors: frozenset[str]
    tensor_dicts: frozenset[str]
    methods: frozenset[str] = frozenset()  # methods the class defines


def _class_bodies(module: cst.Module) -> Iterator[cst.ClassDef]:
    """Classes at module level and nested in classes (not in functions)."""
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.ClassDef):
            yield node
            stack.extend(node.body.body)


def record_classes(
    module: cst.Module, annotation_kind: Callable[[cst.BaseExpression], bool]
) -> dict[str, Record]:
    """The module's classes that declare tensor fields, by name. `annotation_kind` says
    whether an annotation names a tensor (a union that admits one counts)."""
    found: dict[str, Record] = {}
    for cls in _class_bodies(module):
        tensors: set[str] = set()
        dicts: set[str] = set()
        for statement in cls.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not isinstance(small, cst.AnnAssign) or not isinstance(small.target, cst.Name):
                    continue
                annotation = small.annotation.annotation
                if annotation_kind(annotation):
                    tensors.add(small.target.value)
                elif (value := _dict_value(annotation)) is not None and annotation_kind(value):
                    dicts.add(small.target.value)
        if tensors or dicts:
            methods = frozenset(
                s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)
            )
            found[cls.name.value] = Record(frozenset(tensors), frozenset(dicts), methods)
    return found


def _subscript_parts(node: cst.BaseExpression) -> tuple[str | None, list[cst.BaseExpression]]:
    """`List[X]` -> ("List", [X]); `typing.Dict[str, T]` -> ("Dict", [str, T])."""
    if not isinstance(node, cst.Subscript):
        return None, []
    base = node.value.attr if isinstance(node.value, cst.Attribute) else node.value
    parts = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
    return (base.value if isinstance(base, cst.Name) else None), parts


def _dict_value(annotation: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value annotation of `Dict[K, V]`."""
    base, parts = _subscript_parts(annotation)
    return parts[1] if base in _DICT_ANNOTATIONS and len(parts) == 2 else None


def _class_named(node: cst.BaseExpression, records: dict[str, Record]) -> str | None:
    if isinstance(node, cst.Name) and node.value in records:
        return node.value
    if isinstance(node, cst.SimpleString):  # a forward reference: `"Hypothesis"`
        text = node.evaluated_value
        return text if isinstance(text, str) and text in records else None
    return None


def annotated_record(
    annotation: cst.BaseExpression, records: dict[str, Record]
) -> tuple[str, bool] | None:
    """(class, is_list) for a parameter annotated `Hypothesis`, `Optional[Hypothesis]` or
    `List[Hypothesis]`; None for anything else (a union with other classes included)."""
    if (name := _class_named(annotation, records)) is not None:
        return name, False
    base, parts = _subscript_parts(annotation)
    if base in _OPTIONAL:
        others = [p for p in parts if not (isinstance(p, cst.Name) and p.value == "None")]
        if len(others) == 1 and (name := _class_named(others[0], records)) is not None:
            return name, False
        return None
    if base in _LIST_ANNOTATIONS and parts:
        elements = [p for p in parts if not isinstance(p, cst.Ellipsis)]
        names = {_class_named(p, records) for p in elements}
        if len(names) == 1 and (name := names.pop()) is not None:
            return name, True
    return None


def constructed_record(node: cst.BaseExpression, records: dict[str, Record]) -> str | None:
    """The record class a call builds: `Hypothesis(...)`."""
    if isinstance(node, cst.Call):
        return _class_named(node.func, records)
    return None


def filled_lists(function: cst.FunctionDef, records: dict[str, Record]) -> dict[str, str]:
    """Local lists a function fills with new records: `hyps.append(Hypothesis(...))`,
    `hyps = [Hypothesis(...) for ...]`, by name (not in nested definitions)."""
    found: dict[str, str] = {}
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        node_type = type(node)  # exact types: libcst's classes are final
        if node_type in _SCOPES:
            continue
        if (
            node_type is cst.Call
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("append", "insert")
            and isinstance(node.func.value, cst.Name)
            and node.args
            and (cls := constructed_record(node.args[-1].value, records)) is not None
        ):
            found[node.func.value.value] = cls
        elif (
            node_type is cst.Assign
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.ListComp)
            and (cls := constructed_record(node.value.elt, records)) is not None
        ):
            found[node.targets[0].target.value] = cls
        stack.extend(code_children(node))  # no whitespace or punctuation: no calls there
    return found
