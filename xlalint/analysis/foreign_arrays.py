"""Values of another array library: never torch tensors, so never device tensors.

A file written for PyTorch may carry a second backend beside it (scvi-tools'
`MlxTrainingPlan` under `if is_package_installed("mlx"):`, a `JaxTrainingPlan` under a jax
guard, a TensorFlow resize in a metrics module). What that code computes is an array of its
own library: `loss.item()` there reads an MLX or jax array, not an XLA tensor, and no torch
graph runs. A value is such an array when the library builds it:

- a call of the library's functions, as the file's imports resolve them where the walk
  stands (`mx.array(v)`, `jnp.sum(x)`, `tf.constant(...)`, `cp.asarray(...)`): `import
  mlx.nn as nn` makes `nn.value_and_grad` MLX's, whatever `nn` means in other files;
- a call of a callable the library built (`loss_and_grad = nn.value_and_grad(model,
  loss_fn)`, `step = jax.jit(update)`, also kept in an attribute of `self` in one method and
  called in another);
- a model called with the library's arrays (`self.module(mlx_batch)` with `mlx_batch = {k:
  mx.array(v) ...}`): a torch module refuses them, so the model is the other library's;
- the fields, items and arithmetic of such values (`loss_output.kl_local_sum`), and a
  literal or comprehension holding one.

Torch (a call of `torch.*`, a torch module, a loader, a parameter typed as a tensor) makes
none of these: a `torch.from_numpy`/`torch.tensor` of such an array is a torch value again,
judged as any. numpy is left to `tensors.py`'s host libraries (its arrays are host values
already), and so is keras, whose torch backend hands back torch tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from xlalint import lint_memo
from xlalint.analysis.imports import ImportTable
from xlalint.walk import descendants, self_attribute, target_names

# Array libraries other than PyTorch (and numpy), by the top-level package their imports
# name.
OTHER_ARRAY_LIBRARIES = frozenset(
    {"jax", "jaxlib", "mlx", "cupy", "tensorflow", "paddle", "mxnet", "oneflow", "mindspore"}
)


def other_library(qualified: str | None) -> bool:
    """`qualified` (a resolved name) belongs to another array library."""
    return qualified is not None and qualified.split(".", 1)[0] in OTHER_ARRAY_LIBRARIES


@lint_memo.memo(8)
def _transformed(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """The functions and methods of the module that another array library's transform
    decorates (`@jax.jit`, `@tf.function(jit_compile=True)`, `@partial(jax.jit,
    static_argnums=0)`, `@mx.compile`): called, they hand back that library's arrays. A
    name also defined without one is left out.

    Only a decorator that resolves into another library (or `functools.partial` of one)
    counts, and every name resolves through what the imports bind: a module whose imports
    so far bind no such library has none, and is not walked (the answer is memoised as
    the walk's was, at the first question)."""
    if not imports.binds_any(OTHER_ARRAY_LIBRARIES):
        return frozenset()
    plain: set[str] = set()
    found: set[str] = set()
    for node in descendants(module):
        if type(node) is not cst.FunctionDef:
            continue
        name = node.name.value  # type: ignore[attr-defined]
        if any(_transform(d.decorator, imports) for d in node.decorators):  # type: ignore[attr-defined]
            found.add(name)
        else:
            plain.add(name)
    return frozenset(found - plain)


def _transform(decorator: cst.BaseExpression, imports: ImportTable) -> bool:
    if type(decorator) is cst.Call:
        if other_library(imports.resolve(decorator.func)):  # type: ignore[attr-defined]
            return True  # `@tf.function(jit_compile=True)`
        if imports.resolve(decorator.func) == "functools.partial" and decorator.args:  # type: ignore[attr-defined]
            return other_library(imports.resolve(decorator.args[0].value))  # type: ignore[attr-defined]
        return False
    return other_library(imports.resolve(decorator))


class ForeignArrays:
    """Which names and `self` attributes hold another array library's values (or callables
    it built), per function frame and per class, as `TensorKinds` walks them."""

    def __init__(self, imports: ImportTable, module: cst.Module | None = None) -> None:
        self.imports = imports
        self._module = module
        self._names: list[set[str]] = [set()]
        self._attributes: list[set[str]] = [set()]
        self._imports_seen = -1  # the import table's size when last asked
        self._imports_other = False

    # -- frames -------------------------------------------------------------------------
    def push_function(self) -> None:
        self._names.append(set())

    def pop_function(self) -> None:
        self._names.pop()

    def push_class(self) -> None:
        self._attributes.append(set())

    def pop_class(self) -> None:
        self._attributes.pop()

    # -- bindings -----------------------------------------------------------------------
    def note_binding(self, targets: Sequence[cst.BaseExpression], foreign: bool) -> None:
        """`targets = value`: the names and attributes now hold another library's value
        (`foreign`: `holds(value)`, judged before the binding), or no longer do."""
        for target in targets:
            attribute = self_attribute(target)
            if attribute is not None:
                if foreign:
                    self._attributes[-1].add(attribute)
                else:
                    self._attributes[-1].discard(attribute)
                continue
            names = target_names(target)
            if foreign:
                self._names[-1].update(names)
            else:
                self._names[-1].difference_update(names)

    def forget(self, name: str) -> None:
        """`name` was bound to something else (a loop's target, a parameter)."""
        self._names[-1].discard(name)

    # -- questions ----------------------------------------------------------------------
    def any_known(self) -> bool:
        """Whether anything here may be another library's value: a name or attribute
        bound to one, or an import of such a library (checked again as imports come)."""
        if self._names[-1] or self._attributes[-1]:
            return True
        count = self.imports.binding_count()
        if count != self._imports_seen:
            self._imports_seen = count
            self._imports_other = self.imports.binds_any(OTHER_ARRAY_LIBRARIES)
        return self._imports_other

    def holds(
        self, node: cst.BaseExpression, is_module: Callable[[cst.BaseExpression], bool]
    ) -> bool:
        """`node`'s value is another array library's (or a callable it built)."""
        node_type = type(node)
        if node_type is cst.Call:
            return self.builds(node, is_module)  # type: ignore[arg-type]
        if node_type is cst.Name:
            return node.value in self._names[-1]  # type: ignore[attr-defined]
        if node_type is cst.Attribute:
            attribute = self_attribute(node)
            if attribute is not None:
                return attribute in self._attributes[-1]
            return self.holds(node.value, is_module)  # type: ignore[attr-defined]
        if node_type is cst.Subscript:
            return self.holds(node.value, is_module)  # type: ignore[attr-defined]
        if node_type is cst.BinaryOperation:
            return self.holds(node.left, is_module) or self.holds(node.right, is_module)  # type: ignore[attr-defined]
        if node_type is cst.IfExp:
            return self.holds(node.body, is_module) or self.holds(node.orelse, is_module)  # type: ignore[attr-defined]
        if node_type in (cst.Tuple, cst.List):
            return any(
                self.holds(e.value, is_module)
                for e in node.elements  # type: ignore[attr-defined]
            )
        if node_type is cst.Dict:
            return any(
                isinstance(e, cst.DictElement) and self.holds(e.value, is_module)
                for e in node.elements  # type: ignore[attr-defined]
            )
        if node_type is cst.DictComp:
            return self.holds(node.value, is_module)  # type: ignore[attr-defined]
        if node_type in (cst.ListComp, cst.GeneratorExp):
            return self.holds(node.elt, is_module)  # type: ignore[attr-defined]
        return False

    def builds(self, call: cst.Call, is_module: Callable[[cst.BaseExpression], bool]) -> bool:
        """`call` returns another array library's value: the library's own function, a
        callable it built, or a model handed its arrays."""
        func = call.func
        if type(func) in (cst.Name, cst.Attribute):
            if other_library(self.imports.resolve(func)):
                return True
            if type(func) is cst.Name and func.value in self._names[-1]:  # type: ignore[attr-defined]
                return True
            attribute = self_attribute(func)
            if attribute is not None and attribute in self._attributes[-1]:
                return True
            called = func.value if type(func) is cst.Name else attribute  # type: ignore[attr-defined]
            if (
                called is not None
                and self._module is not None
                and called in _transformed(self._module, self.imports)
            ):
                return True  # `@jax.jit def train_step(...)`, `@partial(jax.jit, ...)`
        return is_module(func) and any(self.holds(arg.value, is_module) for arg in call.args)
