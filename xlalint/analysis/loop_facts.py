"""What a loop body does: the facts the graph-barrier rules (family 4) and hot-code
reasoning share.

XLA traces a step lazily and runs it at a barrier (`torch_xla.sync()`, `xm.mark_step()`,
`xm.optimizer_step(..., barrier=True)`, the next batch of an `MpDeviceLoader`). A loop that
trains or samples without one keeps growing a single graph. The rules ask here, once per
loop: does its body train (backward, optimizer step) or run a model step (a scheduler step,
a model fed with state carried over from the previous pass)? Does it reach a barrier, in its
body, in a nested loop or in a function of the same module that it calls? Whether it
iterates a loader that syncs is `loaders.py`'s question; whether it is a step loop of its
own, `step_loops.py`'s.

Costs: the engine walks the file once. The context registers every loop and function
during that walk (`register_loop`, `register_function`, from the ancestors it keeps: this
module knows nothing of the context); everything else is computed after the walk, on
demand, from the loop's own subtree, and cached: each loop body and each function body is
scanned at most once (nested loops are summarised by their own scan).
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint import lint_memo
from xlalint.analysis.arguments import keyword_argument, parameter, parameters
from xlalint.analysis.barrier_calls import (
    COMPILE_DECORATORS,
    SYNCING_CONTEXTS,
    Barrier,
    barrier_kind,
)
from xlalint.analysis.devices import names_xla, positional_argument
from xlalint.analysis.handed_functions import CallSites, call_sites
from xlalint.analysis.hotness import PER_STEP_FUNCTIONS
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.members import _reach, is_property, member_values_in
from xlalint.analysis.module_classes import is_module_class
from xlalint.analysis.returns import NumberReturns
from xlalint.analysis.tensors import HOST_CASTS, MODULE_WALKS, TO_HOST_METHODS, snake_cased
from xlalint.walk import (
    binding_counts,
    children,
    code_children,
    descendants,
    last_name,
    self_attribute,
    target_names,
)

Loop = cst.For | cst.While
Scope = cst.For | cst.While | cst.FunctionDef
T = TypeVar("T")

_OPTIMIZER_NAME = re.compile(r"^_*(\w+_)?(opt|optim|optimizer|optimiser)(s|_\w+|\d+)?$", re.I)
# A collection of optimizers (or of their names): `optimizers`, `self._optimizers`.
_OPTIMIZERS_NAME = re.compile(r"^_*(\w+_)?(opts|optims|optimizers|optimisers)$", re.I)
# Callables that run backward and the optimizer step they are handed: timm's and DeiT's
# `loss_scaler(loss, optimizer, ...)` (NativeScaler.__call__).
_STEPPING_CALLEE = re.compile(r"scaler$", re.I)
_SCHEDULER_NAME = re.compile(r"scheduler|sampler|solver", re.I)
_LR_SCHEDULER_NAME = re.compile(r"(^|_)lr(_|$)|warmup|plateau", re.I)
# Callees that run a model step: the network of a sampling or generation loop.
_MODEL_NAME = re.compile(
    r"(^|_)(model|unet|transformer|denoiser|net|network|decoder|generator|prior|policy|lm|llm|"
    r"controlnet|rnn|lstm|gru)s?\d*$"
    # A network named by what it is, in one word ending in `net`: `nnet`, `convnet`,
    # `resnet`, `hypernet`, `subnet`.
    r"|^_*[a-z]{1,8}nets?\d*$",
    re.I,
)
_VERB_PREFIX = re.compile(
    r"^_*(get|load|build|create|make|init|prepare|setup|set|is|has|to|apply|convert|register|"
    r"named|iter|list|num|find|compile|save|freeze|patch|replace|enable|disable|remove|add|"
    r"check|resolve|update|copy|fuse|unwrap|wrap|maybe|reset|clear|swap|print|log)_",
    re.I,
)
# Applying a model is running it: latent diffusion's samplers call the denoiser as
# `self.model.apply_model(x, t, c)` on every step.
_APPLIES_A_MODEL = re.compile(
    r"^_*apply_(model|unet|transformer|denoiser|net|network|decoder|generator|prior|policy)$",
    re.I,
)
# An optimizer's step by another name: Keras 3's optimizers update the variables they are
# handed with the gradients (`optimizer.apply(grads, trainable_variables)`).
_APPLY_METHODS = frozenset({"apply", "apply_gradients"})
# Calls that hand back a callable running the function they are handed first.
_FUNCTION_WRAPPERS = frozenset(
    {"torch.compile", "torch.jit.script", "torch.jit.trace", "functools.partial"}
)
_ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "islice", "cycle"})
# Iterator classes and helpers that re-yield the batches of the loader they are handed:
# litgpt's `CycleIterator(loader)`, `InfiniteIterator(loader)`, `repeat_loader(loader)`.
_ITERATOR_WRAPPER = re.compile(r"(^|_)(cycle|repeat|infinite)|iterator$", re.I)
_CACHE_KEYWORD = re.compile(r"cache|past", re.I)
# Imports no project module stands behind.
_LIBRARY = re.compile(r"(torch|torch_xla|numpy|math|os|time|logging|random)(\.|$)")
# Method names too common to resolve to a method of this module on any receiver.
_GENERIC_METHODS = frozenset(
    {
        "step", "forward", "__call__", "update", "run", "apply", "get", "set", "append",
        "extend", "add", "backward", "zero_grad", "eval", "train", "to", "item", "cpu",
        "cuda", "numpy", "tolist", "sum", "mean", "format", "join", "split", "copy", "pop",
        "keys", "values", "items", "close", "write", "read", "save", "load", "log", "info",
    }
)  # fmt: skip


# -- names -----------------------------------------------------------------------------------
def _last_name(node: cst.BaseExpression) -> str | None:
    """`self.noise_scheduler` -> `noise_scheduler`; `opts[0]` -> `opts`; `f()` -> None."""
    while type(node) is cst.Subscript:
        node = node.value
    return last_name(node)


def _keyed_optimizer(node: cst.BaseExpression) -> str | None:
    """`state[torchbearer.OPTIMIZER]`, `objects["optimizer"]` -> the key's name, where it
    names an optimizer: a state dict that holds the run's objects by key (torchbearer's
    `state`), whatever the dict is called. A key that is a loop's item is that loop's
    business (`optimizers[name]`: `keys_optimizers`)."""
    if type(node) is not cst.Subscript or len(node.slice) != 1:  # type: ignore[attr-defined]
        return None
    index = node.slice[0].slice  # type: ignore[attr-defined]
    if not isinstance(index, cst.Index):
        return None
    key = index.value
    name = key.evaluated_value if type(key) is cst.SimpleString else last_name(key)  # type: ignore[attr-defined]
    return name if isinstance(name, str) and names_optimizer(name) else None


def is_optimizer(node: cst.BaseExpression) -> bool:
    """`optimizer`, `opt`, `self.optimizer`, `self._optimizer`, `d_optimizer`,
    `optimizer_g`, `optimizers[0]`, `state[OPTIMIZER]`."""
    name = _last_name(node)
    return (name is not None and names_optimizer(name)) or _keyed_optimizer(node) is not None


def steps_an_optimizer(receiver: str) -> bool:
    """Whether `<receiver>.step(...)` steps an optimizer, by the receiver's last name:
    `optimizer`, `self.d_optim`, `scaler` (`scaler.step(optimizer)`)."""
    return _OPTIMIZER_NAME.match(receiver) is not None or receiver.endswith("scaler")


def names_optimizers(name: str) -> bool:
    """`optimizers`, `self._optimizers`, `opts`: a collection of optimizers, by its name."""
    return _OPTIMIZERS_NAME.match(name) is not None


def names_optimizer(name: str) -> bool:
    """`optimizer`, `d_optim`, `opt_g`: one optimizer, by its name."""
    return _OPTIMIZER_NAME.match(name) is not None


def generic_method(name: str) -> bool:
    """`step`, `update`, `run`, `get`...: a method name too common to say which class's
    method a call on an unknown receiver runs."""
    return name in _GENERIC_METHODS


def _is_model_callee(func: cst.BaseExpression) -> bool:
    """`model(...)`, `self.unet(...)`, `pipe.transformer(...)`, `model.forward(...)`."""
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    name = _last_name(func)
    if name is None:
        return False
    name = snake_cased(name)
    if _APPLIES_A_MODEL.match(name):
        return True
    return bool(_MODEL_NAME.search(name)) and not _VERB_PREFIX.match(name)


def _through_a_model(func: cst.BaseExpression) -> bool:
    """`self.model.teacher(x)`, `self.model.get_maps(img)`: a part or a method of a value
    named a model (a model's own submodule, or its method that runs it). Handed the pass's
    data, it runs the model (`model.to(device)`, `model.parameters()` hand none)."""
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value != "forward"
        and _is_model_callee(func.value)
    )


def runs_a_named_model(call: cst.Call) -> bool:
    """`model(x)`, `self.net(x)`, `model.encode(padded)`: a call of a value named a model,
    or of a part or method of one, handed something to run on."""
    return bool(call.args) and (_is_model_callee(call.func) or _through_a_model(call.func))


def _hands_a_model(call: cst.Call) -> bool:
    """`self._transform(model=self.model, inputs=batch)`, `predict(net, x)`: a function
    handed a model by name runs it on what else it is handed (`evaluate(model, loader)`,
    `infer(self.net, batch)`). Not a model's method (`model.to(device)`) nor a helper
    handed only the model (`count_params(model)`: `_hands_data` asks for the pass's
    data too)."""
    return any(
        not arg.star
        and isinstance(arg.value, cst.Name | cst.Attribute)
        and _is_model_callee(arg.value)
        for arg in call.args
    ) and not _is_model_callee(call.func)


def _device_moves(target: cst.BaseExpression, value: cst.BaseExpression) -> set[str]:
    """The names `target` binds to a device move (`x = x.to(device)`, `theta, x =
    theta.to(device), x.cuda()`)."""
    if type(target) is cst.Name:
        moved = (
            type(value) is cst.Call
            and type(value.func) is cst.Attribute  # type: ignore[attr-defined]
            and value.func.attr.value in ("to", "cuda")  # type: ignore[attr-defined]
        )
        return {target.value} if moved else set()  # type: ignore[attr-defined]
    if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List):
        targets, values = target.elements, value.elements  # type: ignore[attr-defined]
        if len(targets) == len(values):
            found: set[str] = set()
            for t, v in zip(targets, values, strict=True):
                found |= _device_moves(t.value, v.value)
            return found
    return set()


def _head_name(node: cst.BaseExpression) -> str | None:
    while type(node) in (cst.Attribute, cst.Subscript, cst.Call):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def _dotted_prefixes(node: cst.Attribute) -> list[str] | None:
    """`state.latents.to` -> `state`, `state.latents`, `state.latents.to`: the values an
    attribute chain reads (state may live in attributes: `block_state.latents`). None if
    the chain does not start at a name (`f().x`)."""
    parts: list[str] = []
    current: cst.BaseExpression = node
    while type(current) is cst.Attribute:
        parts.append(current.attr.value)
        current = current.value
    if not isinstance(current, cst.Name):
        return None
    prefixes = [current.value]
    for part in reversed(parts):
        prefixes.append(f"{prefixes[-1]}.{part}")
    return prefixes


def loop_counter(loop: cst.For) -> str | None:
    """`i` in `for i, batch in enumerate(loader)` (also inside a wrapper,
    `tqdm(enumerate(loader))`) or `for i in range(n)`: the loop's own index, 0 on its first
    pass. None where the count starts elsewhere (`enumerate(xs, 1)`, `range(1, n)`) or the
    loop has no index (`for obs, done in rollouts`: its items are data)."""
    call = loop.iter
    for _ in range(2):  # the iterable, or the first argument of a wrapper around it
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
            return None
        if call.func.value in ("enumerate", "range"):
            break
        first = positional_argument(call, 0)
        call = first.value if first is not None else None
    else:
        return None
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
    target = loop.target
    if call.func.value == "enumerate":
        start = positional_argument(call, 1) or keyword_argument(call, "start")
        if not isinstance(target, cst.Tuple | cst.List) or not target.elements:
            return None
        target = target.elements[0].value
    else:
        start = positional_argument(call, 0) if len(call.args) > 1 else None
    if start is not None and not (
        isinstance(start.value, cst.Integer) and start.value.evaluated_value == 0
    ):
        return None
    return target.value if isinstance(target, cst.Name) else None


def _counts(loop: cst.For) -> bool:
    """`for i in range(n)`, `for i in tqdm(range(n))`: the items are a count, not data."""
    iterated = unwrap_iteration(loop.iter)
    return (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value == "range"
    )


def first_pass_test(test: cst.BaseExpression, items: set[str]) -> bool:
    """`i == 0`, `0 == i` or `not i`, with `i` the loop's own index (`loop_counter`): true
    on its first pass only."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return isinstance(test.expression, cst.Name) and test.expression.value in items
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal):
        return False
    sides = (test.left, comparison.comparator)
    return any(
        isinstance(side, cst.Name)
        and side.value in items
        and isinstance(other, cst.Integer)
        and other.evaluated_value == 0
        for side, other in (sides, sides[::-1])
    )


def _sets_its_flag(branch: cst.If) -> bool:
    """`if not arrays_defined:` whose body sets `arrays_defined = True`: it runs on the
    first pass that reaches it, and never again."""
    test = branch.test
    if not (
        isinstance(test, cst.UnaryOperation)
        and isinstance(test.operator, cst.Not)
        and isinstance(test.expression, cst.Name)
    ):
        return False
    flag = test.expression.value
    return any(
        isinstance(small, cst.Assign)
        and isinstance(small.value, cst.Name)
        and small.value.value == "True"
        and any(isinstance(t.target, cst.Name) and t.target.value == flag for t in small.targets)
        for line in branch.body.body
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
    )


def _names_in(node: cst.CSTNode) -> set[str]:
    """Names and attribute chains whose device values an expression reads: not keywords,
    lambda bodies, or what it copies to the host (`env.step(action.item())` reads no
    device value)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Call and (_reads_host(current) or _reads_shape(current)):
            continue
        if type(current) is cst.Name:
            found.add(current.value)
        elif type(current) is cst.Attribute and current.attr.value in _SHAPE_ATTRIBUTES:
            continue  # `x.shape[0]`: a Python int, known without running the graph
        elif type(current) is cst.Attribute:
            prefixes = _dotted_prefixes(current)
            if prefixes is None:
                stack.append(current.value)
            else:
                found.update(prefixes)
        elif type(current) is cst.Arg:
            stack.append(current.value)
        elif type(current) is not cst.Lambda:
            stack.extend(children(current))
    return found


_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim"})
_SHAPE_METHODS = frozenset({"size", "dim", "numel", "ndimension"})


def _reads_shape(call: cst.Call) -> bool:
    """`q.size(0)`, `x.dim()`, `len(x)`: a shape, a Python int that no graph computes."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in _SHAPE_METHODS
    return isinstance(func, cst.Name) and func.value == "len"


def _model_inputs(call: cst.Call) -> frozenset[str]:
    """Names a model call reads, except caches (`conv_cache=`, `past_key_values=`): a loop
    that only threads a cache through chunks of one input decodes that input, it does not
    sample (a generation loop also carries its tokens)."""
    names: set[str] = set()
    for arg in call.args:
        if arg.keyword is None or not _CACHE_KEYWORD.search(arg.keyword.value):
            names |= _names_in(arg.value)
    return frozenset(names)


def _bound_names(scope: cst.Module | cst.FunctionDef) -> set[str]:
    """Names a module's or a function's own code binds other than by import: assignment,
    loop and `with` targets, parameters, nested `def`/`class` names (not their bodies)."""
    names: set[str] = set()
    if isinstance(scope, cst.FunctionDef):
        names.update(p.name.value for p in parameters(scope, star=True))
    stack: list[cst.CSTNode] = list(
        code_children(scope.body) if isinstance(scope, cst.FunctionDef) else scope.body
    )
    # Exact types (libcst's node classes are final): `isinstance` on them runs ABCMeta's
    # check, in Python, once per class of a union, for every node of the function.
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            names.add(node.name.value)  # type: ignore[attr-defined]
            continue
        if kind is cst.Lambda or kind is cst.Import or kind is cst.ImportFrom:
            continue  # `import x as y` binds by import: the table has it
        if kind in _BINDING_TARGETS:
            names |= target_names(node.target)  # type: ignore[attr-defined]
        elif kind is cst.AsName:
            names |= target_names(node.name)  # type: ignore[attr-defined]
        stack.extend(code_children(node))
    return names


_BINDING_TARGETS = frozenset(
    {cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr}
)


def _state_keys(target: cst.CSTNode) -> tuple[set[str], bool]:
    """What an assignment updates, for the loop-state dataflow: names, attribute chains
    (`block_state.latents`), the base of a subscript (`latents[:, i] = ...` updates
    `latents` in part). The flag says whether some update is partial (the old value stays
    a source)."""
    if isinstance(target, cst.Name):
        return {target.value}, False
    if isinstance(target, cst.Attribute):
        prefixes = _dotted_prefixes(target)
        return ({prefixes[-1]}, False) if prefixes else (set(), False)
    if isinstance(target, cst.Subscript):
        keys, _ = _state_keys(target.value)
        return keys, True
    if isinstance(target, cst.StarredElement):
        return _state_keys(target.value)
    if isinstance(target, cst.Tuple | cst.List):
        keys: set[str] = set()
        partial = False
        for element in target.elements:
            element_keys, element_partial = _state_keys(element.value)
            keys |= element_keys
            partial = partial or element_partial
        return keys, partial
    return set(), False


_APPENDS = frozenset({"append", "extend"})


def _appended_to(value: cst.BaseExpression) -> str | None:
    """`outs.append(y)`, `self.preds.extend(ys)`: the list (its name or attribute chain)
    that the call grows; None for any other expression."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return None
    if value.func.attr.value not in _APPENDS or len(value.args) != 1 or value.args[0].star:
        return None
    receiver = value.func.value
    if isinstance(receiver, cst.Name):
        return receiver.value
    prefixes = _dotted_prefixes(receiver) if isinstance(receiver, cst.Attribute) else None
    return prefixes[-1] if prefixes else None


# Operations that pick tokens or draw samples from a model's scores: `logits.argmax(-1)`,
# `torch.multinomial(probs, 1)`, `dist.sample()` (a value copied to the host holds none).
_CHOICES = frozenset({"argmax", "multinomial", "topk", "sample", "categorical"})
# Draws of fresh random noise: `torch.randn_like(x)`, `torch.randn(shape, device=d)`,
# `x.normal_()`, a sampler's own `self.randn_like(x0)`.
_NOISE = frozenset({"randn", "randn_like", "rand", "rand_like", "normal", "normal_"})


def _transition(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """`params = kernel.sample(params)`, `x = chain.sample(x, t)`: a Markov chain's step,
    a method named `sample` handed the state it replaces. (`buffer.sample(batch_size)`
    and `dist.sample()` draw from something else.)"""
    if not (
        isinstance(target, cst.Name)
        and isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "sample"
    ):
        return False
    return any(
        not arg.star and isinstance(arg.value, cst.Name) and arg.value.value == target.value
        for arg in value.args
    )


def _mentions_grad(names: set[str]) -> bool:
    return any(name.endswith(".grad") or ".grad." in name for name in names)


def _reads_host(value: cst.BaseExpression) -> bool:
    """`loss.item()`, `x.cpu().numpy()`, `float(t)`, `out.prev_sample.numpy()[0]`: the value
    is copied to the host, so what it is assigned to starts no graph."""
    while type(value) is cst.Subscript:
        value = value.value
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in TO_HOST_METHODS
    # `float("-inf")`, `int(3)`: a cast of a constant reads nothing.
    return (
        isinstance(func, cst.Name)
        and func.value in HOST_CASTS
        and not all(_constant(arg.value) for arg in value.args)
    )


# Copies that leave the tensor they copy as device data: `x.cpu()`, `x.tolist()` (measured,
# benchmarks/XLA_SEMANTICS.md "barrier": the read state's own graph is cut, as by a barrier).
# `x.item()` and `float(x)` read the value but leave `x`'s own graph pending.
_MATERIALISING_COPIES = frozenset({"cpu", "tolist"})


def _copied_whole(call: cst.Call) -> str | None:
    """The state key whose whole value this call copies to the host in a way that leaves
    it as device data: `x.cpu()`, `ids.tolist()`, `self.state.cpu()` (not `x[0].cpu()`,
    a part, nor `x.item()`, which leaves `x` pending)."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in _MATERIALISING_COPIES:
        return None
    if call.args:
        return None
    keys, partial = _state_keys(func.value)
    if partial or len(keys) != 1 or type(func.value) not in (cst.Name, cst.Attribute):
        return None
    return next(iter(keys))


def _constant(value: cst.BaseExpression) -> bool:
    """A literal number or string (`"-inf"`, `-1`, `1e9`)."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, cst.SimpleString | cst.Integer | cst.Float)


# `module.eval()`, `module.train()`, `module.train(False)`: the methods that switch an
# `nn.Module`'s mode.
_MODE_METHODS = frozenset({"eval", "train"})
_FORWARD_NAME = re.compile(r"^_*(\w+_)?forward$")
# Methods that keep, log or write what they are handed rather than compute on it: a handed
# object's call of one of them is no model call (`_BodyScanner._handed_callable`).
_STORING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "add",
        "update",
        "put",
        "put_nowait",
        "write",
        "log",
        "info",
        "debug",
        "warning",
        "add_scalar",
        "add_scalars",
        "save",
    }
)


# Calls that run the callable they are handed first, again while it raises: `retry`'s
# `retry_call(f, fargs, fkwargs, tries=3)`, redis' `call_with_retry(f, ...)`.
_RETRYING = re.compile(r"^(retry_call|call_with_retry|call_with_retries)$")
# The calls `_retried_callable` made, by id of the wrapper's call (kept beside it, so that
# neither id is reused while the lint's analyses key calls by id); emptied after each lint.
_RETRIED: dict[int, tuple[cst.Call, cst.Call]] = lint_memo.scratch()


def _retried_callable(call: cst.Call) -> cst.Call | None:
    """`retry_call(model.train, tries=3, exceptions=NanException)` -> `model.train()`: the
    call a retrying wrapper makes of the function or method it is handed (the arguments
    it hands on are left out). None for any other call."""
    if last_name(call.func) is None or _RETRYING.match(last_name(call.func) or "") is None:
        return None
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    target = call.args[0].value
    if type(target) not in (cst.Name, cst.Attribute):
        return None
    found = _RETRIED.get(id(call))
    if found is None or found[0] is not call:
        found = _RETRIED[id(call)] = (call, cst.Call(func=target))
    return found[1]


def _names_a_forward(func: cst.BaseExpression) -> bool:
    """`forward`, `_forward`, `self._staged_forward`: a function or own method named for
    the forward pass (PyTorch's name for running a model)."""
    if isinstance(func, cst.Attribute):
        if not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            return False
        name = func.attr.value
    elif isinstance(func, cst.Name):
        name = func.value
    else:
        return False
    return _FORWARD_NAME.match(name) is not None


def self_call(call: cst.Call) -> bool:
    """`self.m(...)`, `cls.m(...)`, `super().m(...)`: a call of the class's own method."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    receiver = func.value
    if isinstance(receiver, cst.Name):
        return receiver.value in ("self", "cls")
    return isinstance(receiver, cst.Call) and get_full_name_for_node(receiver.func) == "super"


# -- what one body does --------------------------------------------------------------------
@dataclass(frozen=True)
class _Assign:
    targets: frozenset[str]
    sources: frozenset[str]
    from_model: bool  # the value holds the result of a model call or scheduler step
    host: bool  # the value is copied to the host (`.numpy()`, `.item()`)
    # The value picks tokens or samples (`logits.argmax(-1)`, `torch.multinomial(p, 1)`).
    chooses: bool = False
    # The value holds device noise drawn in this pass (`torch.randn_like(x)`).
    draws: bool = False


@dataclass(frozen=True)
class _WholeCopy(_Assign):
    """`x.cpu()`, `ids.tolist()`: the whole of `x` copied to the host, which leaves it as
    device data with nothing pending (as a value rebound from the host starts no graph).
    Not an assignment: it rebinds nothing."""


@dataclass(frozen=True)
class _ModelCall:
    """A model call or scheduler step, and the names it reads."""

    call: cst.Call
    inputs: frozenset[str]


@dataclass(frozen=True)
class _Nested:
    """A nested loop, where its assignments happen in the body's order."""

    loop: Loop


# Python's builtin functions (`setattr`, `print`, `sorted`): never a network run.
_BUILTINS = frozenset(dir(builtins))


def first_match(searched: cst.BaseExpression) -> bool:
    """`next(filter(lambda t: t[1] == j, weights))`, `next(i for i, w in enumerate(ws) if
    w > t)`: `next()` of a filter or a generator expression finds the first item of a
    value in hand that passes a test, a lookup, not a batch pulled from a loader (unless
    what it searches is a loader or an iterator made with `iter()`, whose next item it
    takes)."""
    if type(searched) is cst.GeneratorExp:
        searched_values = []
        clause: cst.CompFor | None = searched.for_in
        while clause is not None:
            searched_values.append(clause.iter)
            clause = clause.inner_for_in
    elif (
        type(searched) is cst.Call
        and type(searched.func) is cst.Name
        and searched.func.value == "filter"
        and len(searched.args) == 2
    ):
        searched_values = [searched.args[1].value]
    else:
        return False
    return not any(_pulls_items(value) for value in searched_values)


# Names of what hands out batches one at a time: a loader, a data stream, an iterator.
_PULLED_NAME = re.compile(r"loader|(^|_)dl$|(^|_)ds$|(^|_)data(set)?$|^dataset|iter|stream", re.I)


def _pulls_items(value: cst.BaseExpression) -> bool:
    """`iter(loader)`, `self.train_loader`, `enumerate(data_iter)`: a source of batches,
    wherever the searched expression names one."""
    return any(
        (type(node) is cst.Name and _PULLED_NAME.search(node.value) is not None)
        or (type(node) is cst.Attribute and _PULLED_NAME.search(node.attr.value) is not None)
        for node in (value, *descendants(value))
    )


@dataclass
class BodyFacts:
    """What one pass of a body does, not counting nested loops and definitions.

    For a loop: its body (and a `while` test). For a function: its body. Nested loops are
    listed in `child_loops` and have facts of their own.
    """

    trains: bool = False  # backward() or an optimizer step
    backward: bool = False  # backward() itself
    steps_optimizer: bool = False  # `optimizer.step()`, `scaler.step(opt)`, `xm.optimizer_step`
    # `trainer.update(batch)`: a method named for a training step, on an object whose class
    # this module does not define, handed this pass's batch (`steps_optimizer` decides).
    steps_elsewhere: list[cst.Call] = field(default_factory=list)
    # `self.forward_backward(data)`: own methods handed data this pass fetched (the
    # loop's item, or a value read with it), not only a bare repetition counter.
    handed_data: list[cst.Call] = field(default_factory=list)
    zeroes_optimizer: bool = False  # `self.optimizer.zero_grad()`
    host_reads: bool = False  # `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `float(t)`
    appended: set[str] = field(default_factory=set)  # lists grown: `outs.append(y)`
    # `opt.step()` on the loop's own items: one step of each optimizer where the loop
    # iterates the optimizers (`iterates_optimizers`), else nothing this pass steps.
    steps_items: bool = False
    # `self._optimizers[name].step()` with `name` the loop's item: the loop iterates the
    # optimizers' keys (one step of each), whatever the collection of keys is called.
    keys_optimizers: bool = False
    updates_from_grad: bool = False  # `w -= lr * w.grad`, `p.add_(p.grad, alpha=-lr)`
    scheduler_step: bool = False  # `scheduler.step(model_output, t, sample)`
    barriers: list[cst.Call] = field(default_factory=list)
    optimizer_steps: list[cst.Call] = field(default_factory=list)  # xm's, without barrier
    model_calls: int = 0  # calls of a model (or of a function of this module that runs one)
    # Model runs whose result the statement drops (`model(images)` alone on its line, a
    # network called itself on the pass's data): the forward runs for what it leaves in
    # the model's state, the statistics its hooks or norm layers collect, not for an
    # output.
    dropped_runs: list[cst.Call] = field(default_factory=list)
    calls: list[cst.Call] = field(default_factory=list)  # calls that may be this module's
    # Calls of imported functions that may be another project module's (not torch's).
    imported_calls: list[cst.Call] = field(default_factory=list)
    child_loops: list[Loop] = field(default_factory=list)
    next_of: list[cst.BaseExpression] = field(default_factory=list)  # `next(it)` arguments
    # Receivers of `.get()` without a positional argument: `item = queue.get()` takes the
    # next item a producer put there (a dict's `get` names its key).
    pulled_from: list[cst.BaseExpression] = field(default_factory=list)
    events: list[_Assign | _ModelCall | _Nested] = field(default_factory=list)
    read_first: frozenset[str] = frozenset()  # read before this body assigns them
    assigned: frozenset[str] = frozenset()  # assigned by this body (not nested loops)


class _BodyScanner:
    """Collects `BodyFacts` in source order (a value's reads before the targets it feeds).

    `runs_model(call)` says whether a call of a function of this module runs a model (None
    when the call is not one of this module's functions)."""

    def __init__(
        self,
        imports: ImportTable,
        runs_model: Callable[[cst.Call], bool | None],
        items: set[str],
        self_is_model: bool = False,
        submodules: frozenset[str] = frozenset(),
        counter: str | None = None,
        counting: bool = False,
        returns_numbers: Callable[[cst.Call], bool] = lambda call: False,
        callables: frozenset[str] = frozenset(),
        uncomputed: Callable[[cst.Call], tuple[frozenset[int], frozenset[int]]] = lambda call: (
            frozenset(),
            frozenset(),
        ),
        networks: frozenset[str] = frozenset(),
        network_functions: frozenset[str] = frozenset(),
        walks_layers: bool = False,
    ) -> None:
        self.imports = imports
        # The loop walks a network's layers (`for block in dit.transformer_blocks`,
        # `model.children()`): its item is the layer each pass runs (`_walks_layers`).
        self.walks_layers = walks_layers
        # Networks handed in, by how the body spells them (`LoopFacts._handed_networks`):
        # `obj_fun` annotated `Callable[[Tensor], Tensor]`, `self.estimator` bound in
        # `__init__` from a parameter annotated `nn.Module`, `velocity_func` a `def` of
        # the function that runs a model.
        self.networks = networks
        # Those of them that are functions (a callable parameter, a `def` of the
        # function), which a helper handed them with the state may run on it.
        self.network_functions = network_functions
        # `preds, targets = self.evaluate_step(model, batch)` with a helper of this module
        # whose every `return` hands back `preds.cpu(), _targets`: the positions of its
        # result that hold a host copy or a value it was handed, nothing it computed on
        # the device (`NumberReturns.uncomputed_positions`).
        self.uncomputed = uncomputed
        # Parameters of the loop's function, callables its callers hand in (`posterior`,
        # `log_p`): called on data the pass moved to a device, they compute on it there.
        self.callables = callables
        self.moved: set[str] = set()  # names bound to this pass's data moved to a device
        self.runs_model = runs_model
        # `acc1, acc5 = accuracy(logits, y)` with a helper of this module that returns
        # Python numbers (`returns.NumberReturns`): a host value, like `loss.item()`.
        self.returns_numbers = returns_numbers
        self.items = set(items)  # the loop's own items: `for block in blocks: x = block(x)`
        # The loop's index (`loop_counter`): `if i == 0:` runs on the first pass only.
        self.counters = {counter} if counter is not None else set()
        # `for epoch in range(n)`: an item that is a count, not data.
        self.counts = set(items) if counting else set()
        self.data = set(items) - self.counts  # the pass's data, and values made from it
        self.self_is_model = self_is_model
        # `self.critic(x)` with `self.critic = nn.Sequential(...)` in a model class.
        self.submodules = submodules
        self.facts = BodyFacts()
        self.assigned = set(items)
        self.read_first: set[str] = set()
        self.model_events = 0
        # Receivers of `.zero_grad()` and of other `.step()` calls in this body: an object
        # whose gradients are zeroed and that is stepped is an optimizer, whatever its name
        # (`trainer.zero_grad()` ... `trainer.step()`).
        self.zeroed: set[str] = set()
        self.stepped: set[str] = set()
        # Receivers of `.eval()`/`.train()` in this body: modules, whatever their names
        # (`self.trunk.eval()` ... `self.embedder(self.trunk(x))`).
        self.modules: set[str] = set()
        # `params = kernel.sample(params)`: ids of calls that draw the next state of a chain.
        self.transitions: set[int] = set()
        self.choices = 0  # calls of `_CHOICES` met so far
        self.draws = 0  # calls of `_NOISE` met so far

    # statements
    def statements(self, statements: Sequence[cst.CSTNode]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        if type(node) in (cst.FunctionDef, cst.ClassDef):
            return  # defined here, run elsewhere
        if type(node) in (cst.For, cst.While):
            self.facts.child_loops.append(node)
            self.facts.events.append(_Nested(node))
            if isinstance(node, cst.For):
                self.expression(node.iter)  # evaluated on each pass of this body
            if node.orelse is not None:
                self.suite(node.orelse.body)
        elif isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small)
        elif isinstance(node, cst.If):
            self.expression(node.test)
            if node.orelse is None and (
                first_pass_test(node.test, self.counters) or _sets_its_flag(node)
            ):
                # `if i == 0: all_q = torch.zeros(n, d, device=device)`: allocated on the
                # first pass, then carried by every later pass, not rebound on each.
                return
            self.suite(node.body)
            if isinstance(node.orelse, cst.If):
                self.statement(node.orelse)
            elif node.orelse is not None:
                self.suite(node.orelse.body)
        elif isinstance(node, cst.With):
            for item in node.items:
                self.expression(item.item)
                call = item.item
                if (
                    isinstance(call, cst.Call)
                    and self.imports.resolve(call.func) in SYNCING_CONTEXTS
                ):
                    self.facts.barriers.append(call)
                if item.asname is not None:
                    self.assign(item.asname.name, item.item)
            self.suite(node.body)
        elif isinstance(node, cst.Try | cst.TryStar):
            self.suite(node.body)
            for handler in node.handlers:
                self.suite(handler.body)
            for part in (node.orelse, node.finalbody):
                if part is not None:
                    self.suite(part.body)
        elif isinstance(node, cst.Match):
            self.expression(node.subject)
            for case in node.cases:
                self.suite(case.body)

    def suite(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self.statements(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                self.small(small)

    def small(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self.assign(target.target, node.value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.assign(node.target, node.value)
        elif isinstance(node, cst.AugAssign):
            self.expression(node.target)
            self.assign(node.target, node.value, augmented=True)
        elif isinstance(node, cst.Expr) and (key := _appended_to(node.value)) is not None:
            self.append(key, node.value)  # type: ignore[arg-type]
        elif isinstance(node, cst.Expr) and type(node.value) is cst.Call:
            events = len(self.facts.events)
            self.expression(node)
            last = self.facts.events[-1] if len(self.facts.events) > events else None
            if (
                isinstance(last, _ModelCall)
                and last.call is node.value
                and self._runs_a_network_on_data(node.value)
            ):
                self.facts.dropped_runs.append(node.value)
        else:
            self.expression(node)

    def append(self, key: str, call: cst.Call) -> None:
        """`outs.append(model(x))`: a partial update of the list, as `outs[i] = ...` is."""
        before, chose, drew = self.model_events, self.choices, self.draws
        self.expression(call)
        host = any(self._host_value(arg.value) for arg in call.args)
        names: set[str] = {key}
        for arg in call.args:
            names |= _names_in(arg.value)
        from_model = self.model_events > before and not host
        chooses = self.choices > chose and not host
        draws = self.draws > drew and not host
        self.facts.events.append(
            _Assign(frozenset({key}), frozenset(names), from_model, host, chooses, draws)
        )
        self.facts.appended.add(key)
        self.assigned.add(key)

    def _host_value(self, value: cst.BaseExpression) -> bool:
        """A copy to the host (`_reads_host`), or what a helper of this module that
        returns Python numbers hands back."""
        return _reads_host(value) or (type(value) is cst.Call and self.returns_numbers(value))  # type: ignore[arg-type]

    def assign(
        self, target: cst.BaseExpression, value: cst.BaseExpression, augmented: bool = False
    ) -> None:
        before = self.model_events
        if _transition(target, value):
            self.transitions.add(id(value))
        chose, drew = self.choices, self.draws
        self.expression(value)
        chooses = self.choices > chose
        draws = self.draws > drew
        if type(target) is cst.Attribute:
            # `self.state.outputs = v` reads `self.state`, not the attribute it rebinds.
            self.expression(target.value)  # type: ignore[attr-defined]
        elif not isinstance(target, cst.Name | cst.Tuple | cst.List):
            self.expression(target)  # `x[i] = v` reads its base
        keys, partial = _state_keys(target)
        if type(target) is cst.Name and _keyed_by(value, self.items):
            # `optimizer = self.optimizers[param_group]`: the name holds the optimizer the
            # item names; acting on it (`scaler.step(optimizer)`) is acting on the item.
            self.items.add(target.value)  # type: ignore[attr-defined]
            self.facts.keys_optimizers = True
        names = _names_in(value)
        if self._data(value, names):
            self.data |= keys
            if self.callables:
                self.moved |= _device_moves(target, value)
        host = self._host_value(value)
        from_model = self.model_events > before and not host
        if (augmented or keys & names) and _mentions_grad(names):
            self.facts.updates_from_grad = True  # `w -= lr * w.grad`, `x = x + a * x.grad`
        sources = names | (keys if augmented or partial else set())
        hosted, kept = (
            self.uncomputed(value)  # type: ignore[arg-type]
            if type(value) is cst.Call and type(target) in (cst.Tuple, cst.List) and not host
            else (frozenset(), frozenset())
        )
        if kept and not any(type(e) is cst.StarredElement for e in target.elements):  # type: ignore[attr-defined]
            # Each position of the helper's result on its own: a host copy is host, a
            # value it was handed holds no result of its model call.
            for i, element in enumerate(target.elements):  # type: ignore[attr-defined]
                element_keys, element_partial = _state_keys(element.value)
                self.facts.events.append(
                    _Assign(
                        frozenset(element_keys),
                        frozenset(names | (element_keys if element_partial else set())),
                        from_model and i not in kept,
                        i in hosted,
                        chooses and i not in kept,
                        draws and i not in kept,
                    )
                )
            self.assigned |= keys
            return
        self.facts.events.append(
            _Assign(
                frozenset(keys),
                frozenset(sources),
                from_model,
                host,
                chooses and not host,
                draws and not host,
            )
        )
        self.assigned |= keys

    # expressions
    def expression(self, root: cst.CSTNode) -> None:
        stack: list[cst.CSTNode] = [root]
        while stack:
            node = stack.pop()
            if type(node) is cst.Lambda:
                continue
            if type(node) is cst.Name:
                if node.value not in self.assigned:
                    self.read_first.add(node.value)
                continue
            if type(node) is cst.Attribute:
                prefixes = _dotted_prefixes(node)
                if prefixes is None:
                    stack.append(node.value)
                else:
                    self.read_first.update(p for p in prefixes if p not in self.assigned)
                continue
            if type(node) is cst.Arg:
                stack.append(node.value)
                continue
            if type(node) is cst.Call:
                self.call(node)
            stack.extend(reversed(children(node)))  # popped in source order

    def call(self, call: cst.Call) -> None:
        facts = self.facts
        func = call.func
        handed = _retried_callable(call)
        if handed is not None:
            # `retry_call(model.train, tries=3)`: the wrapper calls what it is handed, here.
            self.call(handed)
        if last_name(func) in _CHOICES:
            self.choices += 1
        elif last_name(func) in _NOISE:
            self.draws += 1
        kind = barrier_kind(call, self.imports)
        if kind == Barrier.SYNC:
            facts.barriers.append(call)
            return
        if kind == Barrier.OPTIMIZER_STEP:
            facts.optimizer_steps.append(call)
            facts.trains = facts.steps_optimizer = True
            return
        if _reads_host(call):
            facts.host_reads = True
            if (whole := _copied_whole(call)) is not None:
                facts.events.append(_WholeCopy(frozenset({whole}), frozenset(), False, True))
        resolved = self.imports.resolve(func) is not None
        on_item = _head_name(func) in self.items
        if isinstance(func, cst.Attribute) and _keyed_by(func.value, self.items):
            # `self._optimizers[name].zero_grad()`, `optimizers[k].step()`: the item names
            # one of the optimizers; acting on it is acting on the item.
            on_item = facts.keys_optimizers = True
        if _hands_optimizer_to_step(call, func) and not on_item:
            # `model.train_step(batch, optim_wrapper=wrapper)`: the step function runs
            # backward and steps the optimizer it is handed (mmengine, ignite-style steps).
            facts.trains = facts.steps_optimizer = True
        if isinstance(func, cst.Attribute):
            # `for loss in losses: loss.backward()`, `for opt in optimizers: opt.step()` act
            # on the loop's items: parts of one step, not one step per pass.
            method = func.attr.value
            if method.endswith("_") and not method.startswith("_"):
                # An in-place update from the gradients: `p.data.add_(p.grad, alpha=-lr)`.
                facts.updates_from_grad |= _mentions_grad(_names_in(call))
            if method == "backward" and not on_item:
                facts.trains = facts.backward = True
            elif method == "step" and not on_item:
                self._step(call, func.value)
            elif (
                method in _APPLY_METHODS and call.args and not on_item and is_optimizer(func.value)
            ):
                # Keras 3's `optimizer.apply(grads, variables)` and `apply_gradients(zip(
                # grads, variables))` (also its torch backend's trainer): the step.
                self.facts.trains = self.facts.steps_optimizer = True
            elif method == "step" and not _SCHEDULER_NAME.search(_last_name(func.value) or ""):
                facts.steps_items = True
            elif method == "zero_grad" and not on_item:
                self._zero_grad(func.value)
            elif method == "get" and all(arg.keyword is not None for arg in call.args):
                facts.pulled_from.append(func.value)
            elif method in _MODE_METHODS and len(call.args) <= 1:
                spelled_module = get_full_name_for_node(func.value)
                if spelled_module is not None:
                    self.modules.add(spelled_module)
        elif (
            isinstance(func, cst.Name)
            and func.value == "next"
            and call.args
            and not first_match(call.args[0].value)
        ):
            facts.next_of.append(call.args[0].value)
        if (
            not resolved
            and _STEPPING_CALLEE.search(_last_name(func) or "")
            and any(is_optimizer(arg.value) for arg in call.args)
        ):
            # `loss_scaler(loss, optimizer)`: backward and the optimizer step in one call.
            facts.trains = facts.steps_optimizer = True
        if resolved and not on_item and not _LIBRARY.match(self.imports.resolve(func) or ""):
            # `sgd_step(opt, loss)` after `from pkg.steps import sgd_step`: perhaps a
            # function of another module of the project (`LoopFacts.other_modules`).
            facts.imported_calls.append(call)
        if resolved or on_item:
            return
        if self.walks_layers and _hands_first(call, self.items):
            # `text, image = checkpoint_forward(block, image=image, text=text)` in `for
            # block in dit.transformer_blocks:`: a helper handed the pass's layer runs that
            # layer, as `block(x)` does: a different layer each pass, the network's
            # structure walked in one forward, not repeated steps of one model.
            return
        local = isinstance(func, cst.Name) and func.value in self.assigned
        runs = None if local else self.runs_model(call)
        if not local:
            facts.calls.append(call)
        if runs is None and _runs_step_elsewhere(func) and self._reads_this_pass(call):
            # `loss = trainer.update(batch)`: a training object's step, defined elsewhere.
            facts.steps_elsewhere.append(call)
        if self_call(call) and self._hands_data(call):
            facts.handed_data.append(call)
        if runs is None:
            # Not a function of this module: a model by its name (`unet`, `self.model`).
            calls_self = isinstance(func, cst.Name) and func.value == "self"
            runs = (
                (calls_self and self.self_is_model)
                or (_is_model_callee(func) and not self._layer_of_pass(func))
                or self._calls_submodule(func)
                or (_through_a_model(func) and self._hands_data(call))
                or (_hands_a_model(call) and self._hands_data(call))
                or self._handed_callable(call)
            )
        # `obj_fun(population)`, `self.estimator.forward(x, t=t)`, `step_fn(velocity_func,
        # xt, t0, dt)`: a network handed in, called itself or handed to a helper with what
        # it runs on (`_runs_handed_network`).
        runs = runs or self._runs_handed_network(call)
        # `self.forward(*data)`, `_forward(estimators, *x)`, `self._staged_forward(i, *x)`:
        # a function or own method named for the forward pass runs the model, whatever it
        # calls it by (ensembles call their members by names of their own).
        runs = (
            runs
            or _names_a_forward(func)
            or self._switched_module(func)
            or id(call) in self.transitions
        )
        if runs:
            facts.model_calls += 1
            self._model_event(call)

    def _runs_a_network_on_data(self, call: cst.Call) -> bool:
        """`model(images)`, `self.model(x)`, `model_forward(model, inps)`: a network (or a
        helper handed one) called itself on the pass's data, not a function or method of
        this module (`self.test()`, which may keep or copy what it computes), nor a method
        of a model object (`model.validation(loader)`, `self.model.train()`): routines that
        do more than a forward."""
        func = call.func
        if isinstance(func, cst.Attribute):
            if not (isinstance(func.value, cst.Name) and func.value.value == "self"):
                return False
        elif not isinstance(func, cst.Name) or func.value in _BUILTINS:
            return False  # `setattr(model, name, layer)`: Python's own functions run no network
        return self.runs_model(call) is None and self._hands_data(call)

    def _runs_handed_network(self, call: cst.Call) -> bool:
        """A network the code was handed, called: by its spelling in `networks`
        (`obj_fun(population)`, `self.estimator(x)`), through a module's `forward` of a
        part of an object (`self.estimator.forward(x, mask=mask)`: PyTorch's protocol for
        running a module, whatever the part is called), or handed with other arguments to a
        helper that runs it on them (`step_fn(velocity_func, xt, t0, dt)`: an ODE step)."""
        func = call.func
        if type(func) is cst.Attribute and func.attr.value == "forward":  # type: ignore[attr-defined]
            receiver = func.value  # type: ignore[attr-defined]
            if type(receiver) is cst.Name:
                return receiver.value not in ("self", "cls", "super")  # type: ignore[attr-defined]
            if self_attribute(receiver) is not None:
                return True
            func = receiver
        if not self.networks:
            return False
        if get_full_name_for_node(func) in self.networks:
            return True
        # A helper of the code's own, not Python's (`isinstance(module, nn.Linear)`,
        # `setattr(cls, "forward", patched_forward)`) nor a library's (`MethodType(fn,
        # obj)`, `partial(fn, x)`), which take the network without running it here.
        if (type(func) is cst.Name and func.value in _BUILTINS) or self.imports.resolve(  # type: ignore[attr-defined]
            func
        ) is not None:
            return False
        # Only a function handed to a helper none of this module's functions answers
        # (`step_fn = step_fns[method]`): a module object handed to one (`self.
        # _get_target_parameters(model, target, state)`) may be read for its parameters.
        if self.runs_model(call) is not None:
            return False
        handed = [
            arg
            for arg in call.args
            if not arg.star
            and type(arg.value) is cst.Name
            and arg.value.value in self.networks  # type: ignore[attr-defined]
            and arg.value.value in self.network_functions  # type: ignore[attr-defined]
        ]
        return bool(handed) and len(call.args) > len(handed)

    def _layer_of_pass(self, func: cst.BaseExpression) -> bool:
        """`self.ar_net[i](x)` in `for i in range(len(self.layers) + 1):`: the callee is
        the element of a module list that the loop's own index picks, so each pass runs a
        different layer; so is `generators[domain](x)` in `for domain in domains:`, the
        model the loop's item keys. The loop walks the model's structure (one forward), not
        repeated steps of one model, as sampling and decoding loops are."""
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if type(func) is not cst.Subscript or len(func.slice) != 1:  # type: ignore[attr-defined]
            return False
        index = func.slice[0].slice  # type: ignore[attr-defined]
        return (
            isinstance(index, cst.Index)
            and type(index.value) is cst.Name
            and index.value.value in (self.counters | self.counts | self.items)  # type: ignore[attr-defined]
        )

    def _handed_callable(self, call: cst.Call) -> bool:
        """`posterior(x)`, `log_p(theta, x)` after `theta, x = theta.to(device),
        x.to(device)`: a callable the loop's function is handed (a parameter) applied to
        the data the pass moved to a device: an estimator or network the caller chose,
        computing on the device. So is a method of an object it is handed, applied to
        such data (`adversary.predict(data)`, `adversary.perturb(data, label)`: an attack
        or estimator the caller built), unless the method only stores or logs what it is
        given (`results.append(x)`, `meter.update(x)`, `logger.log(x)`)."""
        func = call.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name:
            if func.attr.value in _STORING_METHODS:  # type: ignore[attr-defined]
                return False
            func = func.value
        return (
            type(func) is cst.Name
            and func.value in self.callables  # type: ignore[attr-defined]
            and any(not arg.star and _names_in(arg.value) & self.moved for arg in call.args)
        )

    def _calls_submodule(self, func: cst.BaseExpression) -> bool:
        """`self.critic(x)` in a model class that assigns `self.critic` a torch.nn module
        (`_submodules`): the model's own layers run, whatever their names."""
        return (
            bool(self.submodules)
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and func.attr.value in self.submodules
        )

    def _switched_module(self, func: cst.BaseExpression) -> bool:
        """`self.trunk(x)` after `self.trunk.eval()` in this body: a module put in eval or
        train mode and then called is a model, whatever its name."""
        return bool(self.modules) and get_full_name_for_node(func) in self.modules

    def _reads_this_pass(self, call: cst.Call) -> bool:
        """An argument reads the loop's item or a value assigned earlier in this pass (the
        batch), not only values set before the loop."""
        return any(not arg.star and (_names_in(arg.value) & self.assigned) for arg in call.args)

    def _hands_data(self, call: cst.Call) -> bool:
        """An argument is this pass's data: the loop's item (not a count: `self.run(epoch)`),
        an element fetched with a count (`self.dataset[i]`), or a value made from them."""
        return any(not arg.star and self._data(arg.value) for arg in call.args)

    def _data(self, value: cst.BaseExpression, names: set[str] | None = None) -> bool:
        names = _names_in(value) if names is None else names
        return bool(names & self.data) or (
            isinstance(value, cst.Subscript) and bool(names & self.counts)
        )

    def _model_event(self, call: cst.Call) -> None:
        self.model_events += 1
        self.facts.events.append(_ModelCall(call, _model_inputs(call)))

    def _zero_grad(self, receiver: cst.BaseExpression) -> None:
        self.facts.zeroes_optimizer |= is_optimizer(receiver)
        spelled = get_full_name_for_node(receiver)
        if spelled is not None:
            self.zeroed.add(spelled)
            if spelled in self.stepped:
                self.facts.trains = self.facts.steps_optimizer = True

    def _step(self, call: cst.Call, receiver: cst.BaseExpression) -> None:
        name = _keyed_optimizer(receiver) or _last_name(receiver) or ""
        spelled = get_full_name_for_node(receiver)
        if steps_an_optimizer(name) or spelled in self.zeroed:
            # `optimizer.step()`, `scaler.step(optimizer)`, `trainer.step()` after
            # `trainer.zero_grad()`
            self.facts.trains = self.facts.steps_optimizer = True
        elif (
            _SCHEDULER_NAME.search(name)
            and not _LR_SCHEDULER_NAME.search(name)
            and len(call.args) >= 2
        ):
            # A diffusion scheduler steps on (model_output, timestep, sample); an LR
            # scheduler on nothing, an epoch or a metric.
            self.facts.scheduler_step = True
            self._model_event(call)
        elif _hands_a_diffusion_scheduler(call):
            # `self.step(self.scheduler, noise_pred=noise_pred, **inputs_shared)`: a
            # pipeline's step helper handed the scheduler with the model's output steps it.
            self.facts.scheduler_step = True
            self._model_event(call)
        elif spelled is not None and not call.args:
            self.stepped.add(spelled)  # an optimizer if its gradients are zeroed here


def _hands_a_diffusion_scheduler(call: cst.Call) -> bool:
    """`pipe.step(pipe.scheduler, progress_id=i, noise_pred=noise_pred, **inputs)`: a
    `step` handed, first, a scheduler named as a diffusion one (not `lr_scheduler`, not a
    `warmup` one) and what a diffusion scheduler steps on besides (two arguments or
    more: the model's output, the timestep or its index, the state): the helper steps
    that scheduler, as `scheduler.step(noise_pred, t, latents)` does. An LR scheduler's
    step takes it alone or with an epoch (`self.step(self.scheduler, epoch)`)."""
    first = next((arg for arg in call.args if arg.keyword is None), None)
    if first is None or first.star or len(call.args) < 3:
        return False
    name = _last_name(first.value) or ""
    return bool(_SCHEDULER_NAME.search(name)) and not _LR_SCHEDULER_NAME.search(name)


_STEP_FUNCTION = re.compile(r"^(\w+_)?step$")
# Methods named for a training step: `forward_backward`, `train_actor_critic`, `fit_batch`.
# Also a generic step a template runs on each batch (`run_step(idx, batch, metrics)`): left
# to subclasses, handed the batch, it is the step they write; a step named for evaluation
# or sampling (`valid_step`, `sample_step`) is not matched.
_TRAINING_METHOD = re.compile(
    r"(^|_)(train|training|backward|learn|fit|optimi[sz]e)(_|$)|^_*(run|do|perform)_step$", re.I
)
# Methods that step the optimizers, by their name: `optimizer_step`, `optimizers_step`,
# `step_optimizers`.
_OPTIMIZER_STEP_METHOD = re.compile(r"^_*(optimi[sz]ers?_step|step_optimi[sz]ers?)$", re.I)


# A method that runs one training step (forward, backward, optimizer step) of the object it
# is called on: `trainer.update(batch)`, `learner.train_step(batch)`, `net.fit_batch(b)`.
# `update` and `step` only on an object named for training or optimization
# (`self.optimizer.update(minibatch)`: torch's optimizers have no `update`, so an
# "optimizer" that takes a minibatch is a training object's; `optimization_stepper._step(
# self, batch)`), and only where the call takes a value of this pass (`_reads_this_pass`);
# `metric.update(preds)`, `ema.update(model)`, `env.step(action)`, `counts.update(tokens)`
# are no steps; Lightning's `training_step` returns the loss and steps nothing.
_TRAINER_NAME = re.compile(r"(^|_)(trainer|learner)$|optimi[sz](er|ation)", re.I)
_TRAINER_STEP_METHOD = re.compile(r"^_?(update|step)$")
_TRAINING_STEP_METHOD = re.compile(r"^_*(train_step|train_batch|train_on_batch|fit_batch)$")


def _runs_step_elsewhere(func: cst.BaseExpression) -> bool:
    """`trainer.update(...)`, `self.trainer.step(...)`, `model.train_step(...)`: a call
    named for one training step of its receiver."""
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if _TRAINING_STEP_METHOD.match(method):
        return True
    return bool(_TRAINER_STEP_METHOD.match(method)) and bool(
        _TRAINER_NAME.search(_last_name(func.value) or "")
    )


def iterates_optimizers(node: Loop, facts: BodyFacts | None = None) -> bool:
    """`for opt in optimizers:`, `for name in self._optimizers:` (skorch's
    `step_optimizers`, which fetches each optimizer by its name), `for k, v in
    self.optimizers.items():`: one step of each. With the loop's `facts`, also a loop over
    keys of any name that fetches an optimizer by each (`for name in step_names:
    self._optimizers[name].step()`, or `optimizer = self.optimizers[name]` before
    `scaler.step(optimizer)`)."""
    if not isinstance(node, cst.For):
        return False
    if facts is not None and facts.keys_optimizers:
        return True
    if any(_OPTIMIZER_NAME.match(name) for name in target_names(node.target)):
        return True
    iterable = unwrap_iteration(node.iter)
    if (
        isinstance(iterable, cst.Call)
        and not iterable.args
        and isinstance(iterable.func, cst.Attribute)
        and iterable.func.attr.value in _DICT_VIEWS
    ):
        # `optimizers.items()`: the optimizers' entries. An optimizer has no dict views,
        # so a name for one optimizer read through them holds a dict of optimizers
        # (`if isinstance(optimizer, dict): for o_ in optimizer.values(): scaler.step(o_)`).
        name = _last_name(iterable.func.value) or ""
        return bool(_OPTIMIZERS_NAME.match(name) or _OPTIMIZER_NAME.match(name))
    return _OPTIMIZERS_NAME.match(_last_name(iterable) or "") is not None


_DICT_VIEWS = frozenset({"keys", "values", "items"})


def _keyed_by(receiver: cst.BaseExpression, items: set[str]) -> bool:
    """`self._optimizers[name]`, `optimizers[k]`: a collection named for optimizers,
    indexed by exactly one of the loop's items."""
    if not isinstance(receiver, cst.Subscript) or len(receiver.slice) != 1:
        return False
    index = receiver.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.Name)
        and index.value.value in items
        and _OPTIMIZERS_NAME.match(_last_name(receiver.value) or "") is not None
    )


def names_optimizer_step(func: cst.BaseExpression) -> bool:
    """`self.optimizer_step()`, `self._step_optimizers()`: a call named for stepping the
    optimizer."""
    return _OPTIMIZER_STEP_METHOD.match(_last_name(func) or "") is not None


def _hands_optimizer_to_step(call: cst.Call, func: cst.BaseExpression) -> bool:
    """A per-step function (`train_step`, `run_step`) called with an optimizer argument:
    `model.train_step(data, optim_wrapper=self.optim_wrapper)`. `optimizer.step()`, scaler
    and scheduler steps are told apart by their receivers (`_BodyScanner._step`)."""
    name = _last_name(func) if isinstance(func, cst.Attribute | cst.Name) else None
    if name is None or name == "step" or not _STEP_FUNCTION.match(name):
        return False
    if _SCHEDULER_NAME.search(name) or _LR_SCHEDULER_NAME.search(name):
        return False  # `lr_step(optimizer)`, `scheduler_step(optimizer)` set learning rates
    return any(not arg.star and is_optimizer(arg.value) for arg in call.args)


def _model_state(events: Sequence[_Assign | _ModelCall], carried: frozenset[str]) -> frozenset[str]:
    """The state a loop's model calls or scheduler steps read that one of an earlier pass
    produced on the device: `x` in `x = model(x, t)`, `latents` in `latents =
    scheduler.step(eps, t, latents).prev_sample`, `ids` in `ids = torch.cat([ids,
    model(ids).argmax(-1)], 1)`.

    Such state is what makes a loop a sampling or generation loop, one graph growing pass
    after pass. An evaluation loop feeds each new batch to the model and carries none; a
    loop whose state comes back through the host (`latents = out.prev_sample.numpy()`, an
    ONNX pipeline) starts a new graph on every pass.
    """
    derived = _carried_results(events, carried)
    return frozenset(s for s in derived if _feeds_model(events, s))


def _carried_results(
    events: Sequence[_Assign | _ModelCall], carried: frozenset[str]
) -> frozenset[str]:
    """What each pass hands to the next that holds model results on the device at the end
    of the body: `x` in `x = model(x)`, `correct` in `correct += (model(x).argmax(-1) ==
    y).sum()`, `outs` in `outs.append(model(x))`."""
    if not carried or not any(isinstance(e, _ModelCall) for e in events):
        return frozenset()
    # The second round starts from what the first one handed over.
    derived: set[str] = set()
    for _ in range(2):
        current = derived & carried
        for event in events:
            if not isinstance(event, _Assign):
                continue
            if not event.host and (event.from_model or event.sources & current):
                current |= event.targets
            else:
                current -= event.targets
        derived = current
    return frozenset(carried & derived)


def _feeds_model(events: Sequence[_Assign | _ModelCall], state: str) -> bool:
    """Whether a model call's inputs depend, within one pass, on `state` as it was when
    the pass began."""
    depends = {state}
    for event in events:
        if isinstance(event, _ModelCall):
            if event.inputs & depends:
                return True
        elif event.sources & depends and not event.host:
            depends |= event.targets
        else:
            depends -= event.targets
    return False


# -- the analysis --------------------------------------------------------------------------
class OtherModules(Protocol):
    """What other modules of the project do (`module_steps.ModuleSteps`)."""

    def steps_optimizer(
        self,
        call: cst.Call,
        class_def: cst.ClassDef | None,
        function: cst.FunctionDef | None = None,
    ) -> bool: ...

    def joins(self, call: cst.Call, position: int) -> bool: ...

    def grad_step(
        self,
        call: cst.Call,
        class_def: cst.ClassDef | None,
        function: cst.FunctionDef | None = None,
    ) -> bool: ...


@dataclass(frozen=True)
class LoopSite:
    """Where a loop sits, as recorded during the walk."""

    node: Loop
    function: cst.FunctionDef | None
    class_def: cst.ClassDef | None
    parents: tuple[Loop, ...]  # enclosing loops of the same function, innermost first
    body_indent: str  # the absolute indentation of the loop body's statements
    per_step: bool  # inside `forward`, a `*_step` function or a module's `__call__`
    # The function of the module or class whose code holds the loop, where `function` is
    # one nested in it (`def get_adv_examples(x):` inside `forward`), else `function`.
    outer: cst.FunctionDef | None = None


class LoopFacts:
    """Per-file loop facts for the family 4 rules, computed after the walk."""

    def __init__(self, module: cst.Module, imports: ImportTable) -> None:
        self.module = module
        self.imports = imports
        self._sites: dict[int, LoopSite] = {}
        self._functions: dict[str, list[cst.FunctionDef]] = {}  # functions, by name
        self._methods: dict[str, list[cst.FunctionDef]] = {}  # methods, by name
        self._method_classes: dict[int, cst.ClassDef] = {}  # id(method) -> its class
        self._facts: dict[int, BodyFacts] = {}
        self._memo: dict[tuple[str, int], object] = {}  # (question, id(node)) -> answer
        # The project's other modules, where the file is on disk (`module_steps.py`): a
        # call no function here answers may step an optimizer there.
        self.other_modules: OtherModules | None = None
        self._numbers: NumberReturns | None = None  # built on the first question

    def _returns_numbers(self, call: cst.Call) -> bool:
        """`accuracy(logits, y)`, `self._score(x)`: a function (or a method of this
        module's classes, called on `self`) whose every definition here returns Python
        numbers."""
        called = _own_callee(call)
        if called is None:
            return False
        method, name = called
        return (
            self._number_returns().method(name) if method else self._number_returns().function(name)
        )

    def _uncomputed_positions(self, call: cst.Call) -> tuple[frozenset[int], frozenset[int]]:
        """`self.evaluate_step(model, batch)`: the positions of what a function (or a
        method of this module's classes, called on `self`) returns that every definition
        here fills with a host value, and those it fills with a host value or a value it
        was handed (`NumberReturns.uncomputed_positions`)."""
        called = _own_callee(call)
        if called is None:
            return frozenset(), frozenset()
        return self._number_returns().uncomputed_positions(*called)

    def _number_returns(self) -> NumberReturns:
        if self._numbers is None:
            self._numbers = NumberReturns(self.module)
        return self._numbers

    # -- registration, during the walk ----------------------------------------------------
    def register_loop(
        self, node: Loop, ancestors: Iterable[cst.CSTNode], per_step_frame: bool
    ) -> None:
        """Record where a loop sits, from its ancestors (innermost first) as the walk meets
        it. `per_step_frame`: the loop is in a module's `__call__` or a per-step hook of
        its class (`hotness.per_step_hooks`)."""
        function: cst.FunctionDef | None = None
        outer: cst.FunctionDef | None = None
        class_def: cst.ClassDef | None = None
        parents: list[Loop] = []
        indents: list[str] = []
        child: cst.CSTNode = node
        for ancestor in ancestors:
            if isinstance(ancestor, cst.IndentedBlock):
                indents.append(_indent(ancestor, self.module))
            elif isinstance(ancestor, cst.For | cst.While):
                if function is None and class_def is None and child is ancestor.body:
                    parents.append(ancestor)
            elif isinstance(ancestor, cst.FunctionDef):
                function = function or ancestor
                if class_def is None:
                    outer = ancestor
            elif isinstance(ancestor, cst.ClassDef):
                class_def = class_def or ancestor
            child = ancestor
        body_indent = "".join(reversed(indents))
        if isinstance(node.body, cst.IndentedBlock):
            body_indent += _indent(node.body, self.module)
        # A function nested in `forward` (`def get_adv_examples(x):`, then called there)
        # runs inside that forward, one step's graph as the forward's own loops are.
        per_step = per_step_frame or any(
            f is not None and PER_STEP_FUNCTIONS.match(f.name.value) is not None
            for f in (function, outer)
        )
        self._sites[id(node)] = LoopSite(
            node, function, class_def, tuple(parents), body_indent, per_step, outer or function
        )

    def register_function(self, node: cst.FunctionDef, owner: cst.ClassDef | None) -> None:
        """Record a definition as the walk meets it; `owner`: the class whose body holds it
        (methods apart: `f()` calls a function, `obj.f()` a method)."""
        if owner is not None:
            self._method_classes[id(node)] = owner
        table = self._methods if owner is not None else self._functions
        table.setdefault(node.name.value, []).append(node)

    def site(self, node: Loop) -> LoopSite | None:
        return self._sites.get(id(node))

    def sites(self) -> list[LoopSite]:
        """Every loop of the file, in source order."""
        return list(self._sites.values())

    # -- facts of one body ----------------------------------------------------------------
    def facts(self, node: Scope) -> BodyFacts:
        cached = self._facts.get(id(node))
        if cached is None:
            self._facts[id(node)] = BodyFacts()  # recursion guard: a function calling itself
            items = target_names(node.target) if isinstance(node, cst.For) else set()
            site = self._sites.get(id(node))
            self_is_model = site is not None and self.in_model_class(site)
            class_def = self._class_of(node)
            imports = self._imports_reaching(site.function if site is not None else None)
            scanner = _BodyScanner(
                imports,
                lambda call: self._runs_model(call, class_def),
                items,
                self_is_model,
                self._submodules(class_def),
                loop_counter(node) if isinstance(node, cst.For) else None,
                isinstance(node, cst.For) and _counts(node),
                self._returns_numbers,
                _callable_parameters(site.function) if site is not None else frozenset(),
                self._uncomputed_positions,
                *self._handed_networks(
                    node if isinstance(node, cst.FunctionDef) else site and site.function,
                    class_def,
                ),
                walks_layers=isinstance(node, cst.For) and _walks_layers(node),
            )
            if isinstance(node, cst.While):
                scanner.expression(node.test)
            scanner.suite(node.body)
            cached = scanner.facts
            cached.read_first = frozenset(scanner.read_first)
            cached.assigned = frozenset(scanner.assigned - items)
            self._facts[id(node)] = cached
        return cached

    def _handed_networks(
        self, function: cst.FunctionDef | None, class_def: cst.ClassDef | None
    ) -> tuple[frozenset[str], frozenset[str]]:
        """The networks a body may call that its code was handed, as it spells them, and
        those of them that are functions: the
        parameters of `function` annotated as a network (`obj_fun: Callable[[Tensor],
        Tensor]`, `net: nn.Module`: `_annotated_network`), the attributes its class (or a
        base of the module it hands its `__init__` arguments on to) binds in `__init__`
        from such a parameter (`self.estimator = estimator`, `estimator: torch.nn.Module
        = None`), and the functions `function` defines in its own code that run a model
        (`def velocity_func(x, t): return self.velocity_model(x=x, t=t)`)."""
        if function is None:
            return frozenset(), frozenset()
        key = ("networks", id(function))
        cached = self._memo.get(key)
        if isinstance(cached, tuple):
            return cached
        self._memo[key] = (frozenset(), frozenset())  # recursion guard: nested defs' facts
        found: set[str] = set()
        functions: set[str] = set()
        for p in parameters(function):
            if p.annotation is not None:
                kind = self._annotated_network(p.annotation.annotation)
                if kind:
                    found.add(p.name.value)
                    if kind == "function":
                        functions.add(p.name.value)
        if class_def is not None:
            found |= {f"self.{a}" for a in self._network_attributes(class_def, 3)}
        pending: list[cst.CSTNode] = [function.body]
        while pending:
            node = pending.pop()
            for child in code_children(node):
                if type(child) is cst.FunctionDef:
                    if self.facts(child).model_calls:  # type: ignore[arg-type]
                        found.add(child.name.value)  # type: ignore[attr-defined]
                        functions.add(child.name.value)  # type: ignore[attr-defined]
                elif type(child) not in (cst.ClassDef, cst.Lambda):
                    pending.append(child)
        result = (frozenset(found), frozenset(functions))
        self._memo[key] = result
        return result

    def _network_attributes(self, class_def: cst.ClassDef, depth: int) -> frozenset[str]:
        """Attributes `__init__` binds to a parameter annotated as a network, in the class
        or, through `super().__init__(...)`, in its bases of this module."""
        init = next(
            (
                s
                for s in class_def.body.body
                if type(s) is cst.FunctionDef and s.name.value == "__init__"  # type: ignore[attr-defined]
            ),
            None,
        )
        if init is None:
            return frozenset()
        annotated = {
            p.name.value
            for p in parameters(init)
            if p.annotation is not None and self._annotated_network(p.annotation.annotation)
        }
        found: set[str] = set()
        for node in descendants(init.body):
            if (
                type(node) is cst.Assign
                and type(node.value) is cst.Name  # type: ignore[attr-defined]
                and node.value.value in annotated  # type: ignore[attr-defined]
            ):
                for target in node.targets:  # type: ignore[attr-defined]
                    attribute = self_attribute(target.target)
                    if attribute is not None:
                        found.add(attribute)
        if depth > 0:
            names = {
                type(b.value) is cst.Name and b.value.value  # type: ignore[attr-defined]
                for b in class_def.bases
                if b.keyword is None
            }
            for node in self.module.body:
                if type(node) is cst.ClassDef and node.name.value in names:  # type: ignore[attr-defined]
                    found |= self._network_attributes(node, depth - 1)  # type: ignore[arg-type]
        return frozenset(found)

    def _annotated_network(self, annotation: cst.BaseExpression) -> str | None:
        """`"module"` for `nn.Module`, a `torch.nn` module class or a model class of this
        module, `"function"` for a callable that returns a tensor (`Callable[[torch.
        Tensor], torch.Tensor]`), also `Optional[...]` or `... | None` of one; else None."""
        if type(annotation) is cst.BinaryOperation:
            sides = (annotation.left, annotation.right)  # type: ignore[attr-defined]
            kinds = [
                self._annotated_network(side)
                for side in sides
                if not (type(side) is cst.Name and side.value == "None")  # type: ignore[attr-defined]
            ]
            return next((k for k in kinds if k), None)
        if type(annotation) is cst.Subscript:
            head = self.imports.resolve(annotation.value) or last_name(annotation.value) or ""  # type: ignore[attr-defined]
            leaf = head.rsplit(".", 1)[-1]
            elements = [
                e.slice.value
                for e in annotation.slice  # type: ignore[attr-defined]
                if isinstance(e.slice, cst.Index)
            ]
            if leaf == "Optional" and elements:
                return self._annotated_network(elements[0])
            if leaf == "Callable" and len(elements) == 2:
                returned = self.imports.resolve(elements[1]) or ""
                return "function" if returned == "torch.Tensor" else None
            return None
        if type(annotation) not in (cst.Name, cst.Attribute):
            return None
        qualified = self.imports.resolve(annotation) or ""
        leaf = qualified.rsplit(".", 1)[-1]
        if qualified.startswith("torch.nn.") and leaf[:1].isupper() and "." not in qualified[9:]:
            return "module"
        if qualified.startswith("torch.nn.modules.") and leaf[:1].isupper():
            return "module"
        if type(annotation) is cst.Name and annotation.value in self.model_classes():  # type: ignore[attr-defined]
            return "module"
        return None

    def _submodules(self, class_def: cst.ClassDef | None) -> frozenset[str]:
        """`critic` for `self.critic = nn.Sequential(...)` in a model class: attributes the
        class assigns a `torch.nn` module (or a model class of this file), whose calls
        (`self.critic(x)`) run the model. One walk of the class, cached."""
        if class_def is None:
            return frozenset()
        key = ("submodules", id(class_def))
        cached = self._memo.get(key)
        if isinstance(cached, frozenset):
            return cached
        found: set[str] = set()
        local_models = self.model_classes()
        if is_module_class(class_def, self.imports, local_models):
            for node in descendants(class_def.body):
                if type(node) is not cst.Assign or type(node.value) is not cst.Call:  # type: ignore[attr-defined]
                    continue
                func = node.value.func  # type: ignore[attr-defined]
                qualified = self.imports.resolve(func) or ""
                leaf = qualified.rsplit(".", 1)[-1]
                if not (
                    (qualified.startswith("torch.nn.") and leaf[:1].isupper())
                    or (isinstance(func, cst.Name) and func.value in local_models)
                ):
                    continue
                for target in node.targets:  # type: ignore[attr-defined]
                    attr = target.target
                    if (
                        isinstance(attr, cst.Attribute)
                        and isinstance(attr.value, cst.Name)
                        and attr.value.value == "self"
                    ):
                        found.add(attr.attr.value)
        result = frozenset(found)
        self._memo[key] = result
        return result

    def in_model_class(self, site: LoopSite) -> bool:
        """The loop is in a method of one of this module's model classes."""
        return site.class_def is not None and is_module_class(
            site.class_def, self.imports, self.model_classes()
        )

    def model_classes(self) -> frozenset[str]:
        """Names of this module's model classes (`class Encoder(nn.Module)`), cached."""
        key = ("model_classes", id(self.module))
        cached = self._memo.get(key)
        if not isinstance(cached, frozenset):
            found: set[str] = set()
            for node in self.module.body:
                if isinstance(node, cst.ClassDef) and is_module_class(node, self.imports, found):
                    found.add(node.name.value)
            cached = frozenset(found)
            self._memo[key] = cached
        return cached

    def _imports_reaching(self, function: cst.FunctionDef | None) -> ImportTable:
        """The file's imports without the names that the module's own code, or `function`,
        binds otherwise: after `import model` and `model = model.GPT(conf)`, `model(x)`
        calls the model, not the module."""
        key = ("imports", id(function))
        cached = self._memo.get(key)
        if isinstance(cached, ImportTable):
            return cached
        imported = set(self.imports.bindings)
        module_key = ("imports", id(self.module))
        at_module = self._memo.get(module_key)
        if not isinstance(at_module, frozenset):
            at_module = frozenset(_bound_names(self.module) & imported)
            self._memo[module_key] = at_module
        rebound = set(at_module)
        if function is not None:
            rebound |= _bound_names(function) & imported
        table = self.imports.without(rebound) if rebound else self.imports
        self._memo[key] = table
        return table

    def resolve(
        self, call: cst.Call, class_def: cst.ClassDef | None = None
    ) -> list[cst.FunctionDef]:
        """Functions of this module a call may run: `train_step(b)` -> `def train_step`,
        `self.training_step(b)` / `trainer.training_step(b)` -> methods of that name. Made
        in a method of `class_def`, `self.run_iter(b)` runs that class's own `run_iter` when
        it defines one (a training loop's and a validation loop's `run_iter` differ)."""
        func = call.func
        if isinstance(func, cst.Name):
            return self._functions.get(func.value, [])
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            # `self.model(x)` with `model` a property calls what the property returns.
            methods = [m for m in self._methods.get(name, []) if not is_property(m)]
            if self_call(call) and class_def is not None:
                own = [m for m in methods if self._method_classes.get(id(m)) is class_def]
                if own and all(map(_abstract, own)):
                    # `self.batch_update(x, y)` in a base that leaves it abstract runs
                    # what its subclasses here write (a trainer's and an evaluator's).
                    return self._overrides(class_def, methods) or own
                return own or methods or self._held_functions(class_def, name)
            if self_call(call) or name not in _GENERIC_METHODS:
                return methods
        return []

    def _held_functions(self, class_def: cst.ClassDef, name: str) -> list[cst.FunctionDef]:
        """`self.train_function(data)` where no method has that name: the functions of this
        module (a method's nested step function too) that the class, a base or a subclass
        of it here assigns to the attribute, as they are (`self.train_function =
        one_step_on_data`, a method: `self.train_step`) or wrapped by a call that runs them
        (`torch.compile(fn)`, `torch.jit.script(fn)`, `functools.partial(fn, ...)`; not
        `torch_xla.compile`, which syncs around it: the call stays unknown). A Keras-style
        trainer builds its step so and calls it on every batch."""
        key = ("held", id(class_def))
        memo = self._memo.get(key)
        if not isinstance(memo, dict):
            memo = self._memo[key] = {}
        found = memo.get(name)
        if found is None:
            found = []
            for value, scope in member_values_in(self.module, class_def.name.value, name):
                if isinstance(value, cst.Call) and value.args:
                    first = value.args[0]
                    if (
                        self.imports.resolve(value.func) not in _FUNCTION_WRAPPERS
                        or first.keyword is not None
                        or first.star
                    ):
                        continue
                    value = first.value
                if isinstance(value, cst.Name):
                    # The function of that name the assigning method defines, else the
                    # module's (two methods may each nest a `one_step_on_data`).
                    functions = self._functions.get(value.value, [])
                    local = [f for f in functions if scope is not None and _defines(scope, f)]
                    found.extend(
                        local or [f for f in functions if any(f is s for s in self.module.body)]
                    )
                    if not functions and scope is not None:
                        # `decode = self.decode_sampled` (or `self.decode_greedy`), then
                        # `self.decode_one_token = decode`: the methods the local holds.
                        for method in _methods_bound_to(scope, value.value):
                            if method != name:
                                found.extend(self._own_methods(class_def, method))
                elif (
                    isinstance(value, cst.Attribute)
                    and isinstance(value.value, cst.Name)
                    and value.value.value == "self"
                    and value.attr.value != name
                ):
                    # `self.step_fn = torch.compile(self.train_step)`: that method.
                    found.extend(self._own_methods(class_def, value.attr.value))
            memo[name] = found
        return found

    def _own_methods(self, class_def: cst.ClassDef, name: str) -> list[cst.FunctionDef]:
        """The methods `name` that `self.name(...)` in a method of `class_def` may run: the
        class's own, else any of the module's (a base's or a subclass's)."""
        methods = [m for m in self._methods.get(name, []) if not is_property(m)]
        own = [m for m in methods if self._method_classes.get(id(m)) is class_def]
        return own or methods

    def _overrides(
        self, class_def: cst.ClassDef, methods: list[cst.FunctionDef]
    ) -> list[cst.FunctionDef]:
        """Those of `methods` that classes of this module derived from `class_def`
        (through bases named as its classes, any depth) define."""
        key = ("subclasses", id(class_def))
        derived = self._memo.get(key)
        if derived is None:
            # Classes with methods (an override is one), and the module's own classes.
            classes = list(
                {
                    id(c): c
                    for c in (
                        *self._method_classes.values(),
                        *(n for n in self.module.body if type(n) is cst.ClassDef),
                    )
                }.values()
            )
            bases = {
                id(cls): {
                    (get_full_name_for_node(b.value) or "").rsplit(".", 1)[-1]
                    for b in cls.bases
                    if b.keyword is None
                }
                for cls in classes
                if cls is not class_def
            }
            subclasses: dict[str, set[str]] = {}  # base name -> names of classes deriving it
            for cls in classes:
                for base in bases.get(id(cls), ()):
                    subclasses.setdefault(base, set()).add(cls.name.value)
            own = class_def.name.value
            names = {own} | _reach(own, subclasses)
            derived = self._memo[key] = frozenset(i for i, of in bases.items() if of & names)
        return [m for m in methods if id(self._method_classes.get(id(m))) in derived]  # type: ignore[operator]

    def _function_of(self, node: Scope) -> cst.FunctionDef | None:
        """The function whose body holds a loop (a function's own body: itself)."""
        if isinstance(node, cst.FunctionDef):
            return node
        site = self._sites.get(id(node))
        return site.function if site is not None else None

    def _class_of(self, node: Scope) -> cst.ClassDef | None:
        """The class whose method holds a loop, or that a method belongs to."""
        if isinstance(node, cst.FunctionDef):
            return self._method_classes.get(id(node))
        site = self._sites.get(id(node))
        return site.class_def if site is not None else None

    def _callees(self, node: Scope) -> Iterator[cst.FunctionDef]:
        class_def = self._class_of(node)
        for call in self.facts(node).calls:
            yield from self._resolve_in(node, call, class_def)

    def _resolve_in(
        self, node: Scope, call: cst.Call, class_def: cst.ClassDef | None
    ) -> list[cst.FunctionDef]:
        """`resolve`, where a parameter of the function around `node` shadows the functions
        of its name: `step_fn(batch)` runs what the callers hand it."""
        if isinstance(call.func, cst.Name):
            handed = self._handed_callees(node, call.func.value, class_def)
            if handed is not None:
                return handed
            wrapped = self._wrapped_local(node, call.func.value)
            if wrapped is not None:
                return wrapped
        return self.resolve(call, class_def)

    def _wrapped_local(self, node: Scope, name: str) -> list[cst.FunctionDef] | None:
        """`backwards(loss, opt)` with `backwards = partial(loss_backwards, self.fp16)`
        bound once by the function around `node` (or `step = torch.compile(train_step)`):
        the function of this module the wrapper runs. None where the function binds the
        name otherwise, or not at all."""
        function = self._function_of(node)
        if function is None or binding_counts(function).get(name) != 1:
            return None
        for statement in descendants(function.body):
            if type(statement) is not cst.Assign or len(statement.targets) != 1:  # type: ignore[attr-defined]
                continue
            target = statement.targets[0].target  # type: ignore[attr-defined]
            if type(target) is not cst.Name or target.value != name:  # type: ignore[attr-defined]
                continue
            value = statement.value  # type: ignore[attr-defined]
            if (
                type(value) is not cst.Call
                or not value.args
                or self.imports.resolve(value.func) not in _FUNCTION_WRAPPERS
                or value.args[0].keyword is not None
                or value.args[0].star
                or type(value.args[0].value) is not cst.Name
            ):
                return None
            return self._functions.get(value.args[0].value.value, [])  # type: ignore[attr-defined]
        return None

    def _handed_callees(
        self, node: Scope, name: str, class_def: cst.ClassDef | None
    ) -> list[cst.FunctionDef] | None:
        """`step_fn(batch)` with `step_fn` a parameter of the function around `node`: the
        functions and methods of this module its callers hand it (`step_fn=self.train_step`,
        `handed_functions`). None where `name` is no parameter there."""
        site = self._sites.get(id(node))
        function = node if isinstance(node, cst.FunctionDef) else site and site.function
        if not isinstance(function, cst.FunctionDef):
            return None
        if parameter(function, name) is None:
            return None
        method = id(function) in self._method_classes
        found: list[cst.FunctionDef] = []
        for value in self._call_sites.handed(function, name, method):
            if isinstance(value, cst.Name):
                found.extend(self._functions.get(value.value, []))
            elif isinstance(value, cst.Attribute):
                methods = self._methods.get(value.attr.value, [])
                own = [m for m in methods if self._method_classes.get(id(m)) is class_def]
                found.extend(own or methods)
        return found

    @property
    def _call_sites(self) -> CallSites:
        return call_sites(self.module)

    def _runs_model(self, call: cst.Call, class_def: cst.ClassDef | None) -> bool | None:
        """Whether a call of a function of this module calls a model or steps a scheduler;
        None if it calls none of this module's functions."""
        functions = self.resolve(call, class_def)
        if not functions:
            return None
        return any(self.facts(fn).model_calls or self.facts(fn).scheduler_step for fn in functions)

    def _memoized(self, key: str, node: Scope, default: T, compute: Callable[[], T]) -> T:
        """`compute()` once per question and node; `default` while it runs, so that
        functions calling each other end the recursion."""
        memo_key = (key, id(node))
        if memo_key not in self._memo:
            self._memo[memo_key] = default
            self._memo[memo_key] = compute()
        return self._memo[memo_key]  # type: ignore[return-value]

    def reaches_barrier(self, node: Scope) -> bool:
        """A barrier anywhere in a pass: in the body, behind an `if` (`if XLA_AVAILABLE:
        xm.mark_step()`), in a nested loop, or in a function of this module it calls
        (a `@torch_xla.compile` function syncs around its body)."""

        def compute() -> bool:
            facts = self.facts(node)
            if facts.barriers:
                return True
            if isinstance(node, cst.FunctionDef) and any(
                self.imports.resolve(_decorator_func(d)) in COMPILE_DECORATORS
                for d in node.decorators
            ):
                return True
            return any(self.reaches_barrier(loop) for loop in facts.child_loops) or any(
                self.reaches_barrier(fn) for fn in self._callees(node)
            )

        return self._memoized("barrier", node, False, compute)

    def trains(self, node: Scope) -> bool:
        """Backward or an optimizer step in the body itself or in a function of this module
        it calls, not in a nested loop (that loop is then the training loop; a loop over the
        optimizers is part of this pass, see `steps_optimizer`)."""
        return self._through_calls("trains", node) or self.steps_optimizer(node)

    def steps_optimizer(self, node: Scope) -> bool:
        """An optimizer step in the body, in a loop of it over the optimizers (`for opt in
        optimizers.values(): scaler.step(opt)`, `for k, v in self.optimizers.items():
        v.step()`: one step of each, in this pass), or in a
        function it calls: one of this module, or a method this module does not define
        whose name says that it steps the optimizer (`self.optimizer_step()` of a template
        whose subclass or mixin implements it), or methods left abstract here that a pass
        zeroing the optimizer calls. A training step of another module counts where the
        pass hands its batch to one (`trainer.update(batch)`, `_steps_elsewhere`)."""

        def compute() -> bool:
            facts = self.facts(node)
            if facts.steps_optimizer:
                return True
            if any(self._steps_elsewhere(call) for call in facts.steps_elsewhere):
                return True
            if any(
                iterates_optimizers(loop, self.facts(loop))
                and (self.facts(loop).steps_items or self.steps_optimizer(loop))
                for loop in facts.child_loops
            ):
                return True
            class_def = self._class_of(node)
            function = self._function_of(node)
            if self.other_modules is not None and any(
                self.other_modules.steps_optimizer(call, class_def, function)
                for call in facts.imported_calls
            ):
                return True
            # A pass that zeroes the optimizer's gradients but runs no backward here leaves
            # backward and the step to the methods it calls: an abstract one (`raise
            # NotImplementedError`) is a template's, which its subclasses implement.
            template = facts.zeroes_optimizer and not self._through_calls("backward", node)
            for call in facts.calls:
                functions = self._resolve_in(node, call, class_def)
                if not functions and names_optimizer_step(call.func):
                    return True
                # Stubs here (a `Protocol`'s `def learn(self, batch): ...`) run nothing:
                # the instance's class is another module's (`agent: DQN | TD3`).
                if (
                    all(map(_placeholder, functions))
                    and self.other_modules is not None
                    and self.other_modules.steps_optimizer(call, class_def, function)
                ):
                    return True
                if any(self.steps_optimizer(fn) for fn in functions):
                    return True
                if template and self_call(call) and functions and all(map(_abstract, functions)):
                    return True
            # `self.forward_backward(data)`, `self.train_actor_critic(self.dataset[i])`: a
            # template's training step, named for training and left to its subclasses here
            # (`pass`, `...`, `raise NotImplementedError`), handed this pass's data.
            return any(
                _TRAINING_METHOD.search(call.func.attr.value)  # type: ignore[attr-defined]
                and (functions := self._resolve_in(node, call, class_def))
                and all(map(_placeholder, functions))
                for call in facts.handed_data
            )

        return self._memoized("steps_optimizer", node, False, compute)

    def _steps_elsewhere(self, call: cst.Call) -> bool:
        """`trainer.update(batch)`: the methods of that name this module defines, if any,
        decide; else the step is another module's, unless this module writes its own
        training step (then the call is something else)."""
        if not isinstance(call.func, cst.Attribute):
            return False
        methods = [m for m in self._methods.get(call.func.attr.value, []) if not is_property(m)]
        if methods:
            return any(self.steps_optimizer(m) for m in methods)
        return not self._trains_itself() and not self._knows_xla()

    def _knows_xla(self) -> bool:
        """The module imports torch_xla or names a TPU/XLA flag or helper (`if cfg.tpu: itr
        = utils.tpu_data_loader(itr)`): where the step is another module's, so may be its
        barrier, or the loader may sync. Asked only where such a step appears."""
        key = ("knows_xla", id(self.module))
        cached = self._memo.get(key)
        if cached is None:
            cached = any(b.split(".", 1)[0] == "torch_xla" for b in self.imports.bindings.values())
            if not cached:
                cached = any(
                    type(node) is cst.Name and names_xla(node.value)  # type: ignore[attr-defined]
                    for node in descendants(self.module)
                )
            self._memo[key] = cached
        return bool(cached)

    def _trains_itself(self) -> bool:
        """Some loop or function of this module calls `backward()` or steps an optimizer:
        the module writes its training step itself, so a call named for one (`update`)
        on another object is something else. Asked only where such a call appears."""
        cached = self._memo.get(("trains_itself", id(self.module)))
        if cached is None:
            self._memo[("trains_itself", id(self.module))] = False  # while computing
            scopes: list[Scope] = [site.node for site in self._sites.values()]
            for table in (self._functions, self._methods):
                scopes.extend(fn for functions in table.values() for fn in functions)
            cached = any(
                self.facts(scope).trains or self.facts(scope).updates_from_grad for scope in scopes
            )
            self._memo[("trains_itself", id(self.module))] = cached
        return bool(cached)

    def updates_from_grads(self, node: Scope) -> bool:
        """A hand-written update from the gradients in a pass: here, in a nested loop (`for
        p in params: p -= lr * p.grad`) or in a function of this module it calls. Reading
        `.grad` to check it is no update."""

        def compute() -> bool:
            facts = self.facts(node)
            return (
                facts.updates_from_grad
                or any(self.updates_from_grads(loop) for loop in facts.child_loops)
                or any(self.updates_from_grads(fn) for fn in self._callees(node))
            )

        return self._memoized("grads", node, False, compute)

    def steps_scheduler(self, node: Scope) -> bool:
        """A diffusion scheduler step in the body or in a function of this module it calls."""
        return self._through_calls("scheduler_step", node)

    def accumulates_then_steps(self, node: Scope) -> bool:
        """The body steps an optimizer itself (not in a loop of it) after loops of its own
        that run backward and step none (`for i in range(accumulate_every): ...
        backwards(loss, opt)`, then `opt.step()`): micro-batches accumulating the gradients
        of one training step, which the body is, whoever calls it."""

        def compute() -> bool:
            facts = self.facts(node)
            if not facts.steps_optimizer or iterates_optimizers(node, facts):
                return False
            loops = facts.child_loops
            return any(self._micro_batch_backward(node, loop) for loop in loops) and not any(
                self.steps_optimizer(loop) for loop in loops
            )

        return self._memoized("accumulates", node, False, compute)

    def _micro_batch_backward(self, scope: Scope, loop: Loop) -> bool:
        """Each pass of `loop` runs backward, itself or through a function it calls that
        does in its own body: one of the module's, or one `scope` defines (not another
        function's nested `closure` that shares the name of the one `scope` hands
        `optimizer.step(closure)`)."""
        if self.facts(loop).backward:
            return True
        top = {id(s) for s in self.module.body}
        return any(
            (id(callee) in top or id(callee) in self._method_classes or _defines(scope, callee))  # type: ignore[arg-type]
            and self.runs_backward(callee)
            for callee in self._callees(loop)
        )

    def runs_backward(self, node: Scope) -> bool:
        """Autograd's backward in the body itself or in a function of this module it calls
        (`backwards(loss, opt)` with `backwards = partial(loss_backwards, fp16)`), not in a
        nested loop."""
        return self._through_calls("backward", node)

    def _through_calls(self, fact: str, node: Scope) -> bool:
        """A `BodyFacts` flag of the body or of any function of this module it calls."""

        def compute() -> bool:
            facts = self.facts(node)
            return bool(getattr(facts, fact)) or any(
                self._through_calls(fact, fn) for fn in self._callees(node)
            )

        return self._memoized(fact, node, False, compute)

    def runs_model(self, node: Loop) -> bool:
        """The body trains, samples, or calls a model (an evaluation loop)."""
        return self.trains(node) or self.infers(node) or self.facts(node).model_calls > 0

    def infers(self, node: Loop) -> bool:
        """A sampling or generation step on every pass: a model call or scheduler step (here
        or in a function of this module) fed with device state of the previous pass.

        The state may be updated in a nested loop (`for i in frames: latents[:, :, i] =
        scheduler.step(...)` under a loop that runs the model on `latents`): nested loops'
        assignments count in their place, their model calls are theirs."""
        return bool(self.model_state(node))

    def model_state(self, node: Loop) -> frozenset[str]:
        """The device state one pass hands to the model calls of the next (`_model_state`).
        A nested loop's assignments count in its place; its model calls are its own."""

        def compute() -> frozenset[str]:
            events, assigned = self._state_events(node)
            return _model_state(events, self.facts(node).read_first & assigned)

        return self._memoized("state", node, frozenset(), compute)

    def accumulated(self, node: Loop) -> frozenset[str]:
        """Model results a pass adds to device state that it hands to the next without
        feeding the model: `correct += (model(x).argmax(-1) == y).sum()`,
        `outs.append(model(x))`. An evaluation loop that keeps them so holds every batch's
        forward in one pending graph. A host read of another value (`loss.item()`) is no
        barrier: it executes the graph of what it reads, and the total stays pending (as
        it does through its own `.item()`, measured: benchmarks/XLA_SEMANTICS.md,
        "barrier"). What the pass copies to the host (`correct += n.item()`) or copies
        whole with `.cpu()` or `.tolist()` (left as device data) is not pending."""

        def compute() -> frozenset[str]:
            events, assigned = self._state_events(node)
            derived = _carried_results(events, self.facts(node).read_first & assigned)
            return frozenset(s for s in derived if not _feeds_model(events, s))

        return self._memoized("accumulated", node, frozenset(), compute)

    def threads_cache(self, node: Loop) -> bool:
        """A model call of the body takes, as its cache (`conv_cache=`, `past_key_values=`),
        a value the previous pass handed over: the passes decode one input in pieces."""
        carried = self.carried(node)
        return any(
            isinstance(event, _ModelCall)
            and any(
                arg.keyword is not None
                and _CACHE_KEYWORD.search(arg.keyword.value) is not None
                and bool(_names_in(arg.value) & carried)
                for arg in event.call.args
            )
            for event in self.facts(node).events
        )

    def decodes(self, node: Loop) -> bool:
        """Autoregressive decoding: the state a pass hands to the model holds tokens or
        samples chosen from the model's scores (`outputs.append(Y.argmax(2))` before
        `decoder(outputs[-1], state)`; `res = torch.cat([res, torch.multinomial(p, 1)])`).
        A recurrent unroll (`h = cell(x[t], h)`) feeds back activations, not choices."""

        return self._memoized("decodes", node, False, lambda: self._state_holds(node, "chooses"))

    def draws_noise(self, node: Loop) -> bool:
        """Stochastic sampling: each pass adds device noise to the state it hands the
        model, outside the model (`x = mean + std * torch.randn_like(mean)` with `mean`
        computed from `x`, before `x = self.denoiser(x, sigma)`; `sample += sigma * noise`
        after `predicted = self.diff_model(...)`), as diffusion, Langevin and other MCMC
        samplers write each step. Not noise added to a pass's own data (`noisy = x[t] +
        torch.randn_like(x[t])` before `h = self.rnn(noisy, h)`, a recurrent unroll with
        noisy inputs), drawn inside a model call's arguments, or drawn afresh for a value
        no pass carries (`z = mu + std * torch.randn_like(std)`)."""

        def compute() -> bool:
            state = self.model_state(node)
            if not state:
                return False
            events, _ = self._state_events(node)
            derived: set[str] = set(state)  # computed from the state in this pass
            noisy: set[str] = set()
            for _ in range(2):
                for event in events:
                    if not isinstance(event, _Assign):
                        continue
                    from_state = bool(event.sources & derived)
                    drawn = event.draws and not event.from_model and from_state
                    if not event.host and (drawn or event.sources & noisy):
                        noisy |= event.targets
                    else:
                        noisy -= event.targets
                    if from_state and not event.host:
                        derived |= event.targets
            return bool(noisy & state)

        return self._memoized("draws", node, False, compute)

    def _state_holds(self, node: Loop, flag: str) -> bool:
        """The model state (`model_state`) is, at the end of a pass, computed from a value
        whose assignment has `flag` set (`chooses`) in that pass."""
        state = self.model_state(node)
        if not state:
            return False
        events, _ = self._state_events(node)
        marked: set[str] = set()
        for _ in range(2):
            for event in events:
                if not isinstance(event, _Assign):
                    continue
                if not event.host and (getattr(event, flag) or event.sources & marked):
                    marked |= event.targets
                else:
                    marked -= event.targets
        return bool(marked & state)

    def carried(self, node: Loop) -> frozenset[str]:
        """What a pass hands to the next: read before being assigned, and assigned (here or
        in a nested loop)."""
        return self.facts(node).read_first & self._state_events(node)[1]

    def pending(self, node: Loop) -> frozenset[str]:
        """What a pass hands to the next as pending device values: carried names whose last
        update in the pass is on the device, not a copy to the host (`ids = out.tolist()`)
        nor a whole copy that leaves them as device data (`ids.cpu()`). A host read of
        some other value leaves them pending: it executes only what it reads."""
        last: dict[str, bool] = {}
        for event in self._state_events(node)[0]:
            if isinstance(event, _Assign):
                for target in event.targets:
                    last[target] = event.host
        return frozenset(name for name in self.carried(node) if last.get(name) is False)

    def assigned_before(self, node: Loop, child: Loop) -> frozenset[str]:
        """What a pass of `node` assigns before it runs its nested loop `child` (nested
        loops before it count in their place)."""
        assigned: set[str] = set()
        for event in self.facts(node).events:
            if isinstance(event, _Nested):
                if event.loop is child:
                    break
                assigned |= self._state_events(event.loop)[1]
            elif isinstance(event, _Assign) and not isinstance(event, _WholeCopy):
                assigned |= event.targets
        return frozenset(assigned)

    def _state_events(self, node: Loop) -> tuple[list[_Assign | _ModelCall], frozenset[str]]:
        facts = self.facts(node)
        events: list[_Assign | _ModelCall] = []
        assigned = set(facts.assigned)
        for event in facts.events:
            if isinstance(event, _Nested):
                nested, nested_assigned = self._state_events(event.loop)
                events.extend(e for e in nested if isinstance(e, _Assign))
                assigned |= nested_assigned
            else:
                events.append(event)
        return events, frozenset(assigned)

    def optimizer_steps(self, node: Scope) -> tuple[cst.Call, ...]:
        """`xm.optimizer_step(...)` calls without `barrier=True` that a pass runs, directly or
        in functions of this module (not in nested loops)."""

        def compute() -> tuple[cst.Call, ...]:
            facts = self.facts(node)
            found = list(facts.optimizer_steps)
            for fn in self._callees(node):
                found.extend(c for c in self.optimizer_steps(fn) if c not in found)
            return tuple(found)

        return self._memoized("optimizer_steps", node, (), compute)


def _methods_bound_to(scope: cst.FunctionDef, name: str) -> list[str]:
    """The methods a local of `scope` holds where every binding of it (in `scope`'s own
    code) is one of them: `fn = self.decode_sampled` in one branch, `fn =
    self.decode_greedy` in the other (or `fn = self.a if flag else self.b`). Empty where
    some binding holds anything else, or where the name is a parameter."""
    if parameter(scope, name) is not None:
        return []
    methods: list[str] = []
    pending: list[cst.CSTNode] = [scope.body]
    while pending:
        node = pending.pop()
        for child in code_children(node):
            kind = type(child)
            if kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            pending.append(child)
            if kind is cst.AugAssign or kind is cst.AnnAssign:
                target = child.target  # type: ignore[attr-defined]
                if type(target) is cst.Name and target.value == name:  # type: ignore[attr-defined]
                    return []
            if kind is not cst.Assign:
                continue
            if not any(
                name in target_names(t.target)
                for t in child.targets  # type: ignore[attr-defined]
            ):
                continue
            if len(child.targets) != 1 or type(child.targets[0].target) is not cst.Name:  # type: ignore[attr-defined]
                return []
            values = [child.value]  # type: ignore[attr-defined]
            while values:
                value = values.pop()
                if type(value) is cst.IfExp:
                    values.extend((value.body, value.orelse))  # type: ignore[attr-defined]
                elif (method := self_attribute(value)) is not None:
                    methods.append(method)
                else:
                    return []
    return methods


def _callable_parameters(function: cst.FunctionDef | None) -> frozenset[str]:
    """The parameters of the function around a loop, but `self`/`cls`."""
    if function is None:
        return frozenset()
    return frozenset(
        p.name.value for p in parameters(function) if p.name.value not in ("self", "cls")
    )


def _defines(scope: cst.FunctionDef, function: cst.FunctionDef) -> bool:
    """`function` is defined in `scope`'s own code (not in a function nested there)."""
    pending: list[cst.CSTNode] = [scope.body]
    while pending:
        node = pending.pop()
        for child in code_children(node):
            if child is function:
                return True
            if type(child) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                pending.append(child)
    return False


def _abstract(function: cst.FunctionDef) -> bool:
    """A method left to subclasses: its body (after a docstring) only raises
    `NotImplementedError`."""
    body = function.body
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
    lines = [
        s for s in statements if isinstance(s, cst.SimpleStatementLine | cst.SimpleStatementSuite)
    ]
    if len(lines) != len(statements) or not lines:
        return False
    smalls = [small for line in lines for small in line.body]
    if smalls and isinstance(smalls[0], cst.Expr) and isinstance(smalls[0].value, cst.SimpleString):
        smalls = smalls[1:]  # the docstring
    if len(smalls) != 1 or not isinstance(smalls[0], cst.Raise):
        return False
    raised = smalls[0].exc
    if isinstance(raised, cst.Call):
        raised = raised.func
    return isinstance(raised, cst.Name) and raised.value == "NotImplementedError"


def _placeholder(function: cst.FunctionDef) -> bool:
    """A method whose body a subclass supplies: it only raises `NotImplementedError`
    (`_abstract`), or holds nothing but `pass` or `...` (after a docstring)."""
    if _abstract(function):
        return True
    body = function.body
    if not isinstance(body, cst.IndentedBlock | cst.SimpleStatementSuite):
        return False
    smalls: list[cst.BaseSmallStatement] = []
    for statement in body.body:
        if not isinstance(statement, cst.SimpleStatementLine | cst.BaseSmallStatement):
            return False
        smalls.extend(
            statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
        )
    if smalls and isinstance(smalls[0], cst.Expr) and isinstance(smalls[0].value, cst.SimpleString):
        smalls = smalls[1:]  # the docstring
    return bool(smalls) and all(
        isinstance(small, cst.Pass)
        or (isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis))
        for small in smalls
    )


def _decorator_func(decorator: cst.Decorator) -> cst.BaseExpression:
    value = decorator.decorator
    return value.func if isinstance(value, cst.Call) else value


def _indent(block: cst.IndentedBlock, module: cst.Module) -> str:
    return block.indent if block.indent is not None else module.default_indent


# A network's list of its layers, by the name models give it: `layers`, `blocks`,
# `transformer_blocks`, `down_blocks`, `stages`, `resblocks`.
_LAYER_LIST = re.compile(r"(^|_)(layers|blocks|stages|resblocks)$")


def _walks_layers(loop: cst.For) -> bool:
    """`for block in dit.transformer_blocks`, `enumerate(self.layers[:n])`,
    `reversed(self.up_blocks)`, `model.children()`: the loop walks a network's layers,
    one layer a pass."""
    iterated = unwrap_iteration(loop.iter)
    if (
        type(iterated) is cst.Call
        and type(iterated.func) is cst.Name  # type: ignore[attr-defined]
        and iterated.func.value == "reversed"  # type: ignore[attr-defined]
        and len(iterated.args) == 1  # type: ignore[attr-defined]
    ):
        iterated = iterated.args[0].value  # type: ignore[attr-defined]
    if type(iterated) is cst.Subscript:
        iterated = iterated.value  # type: ignore[attr-defined]
    if type(iterated) is cst.Call and type(iterated.func) is cst.Attribute:  # type: ignore[attr-defined]
        return iterated.func.attr.value in MODULE_WALKS  # type: ignore[attr-defined]
    name = _last_name(iterated)
    return name is not None and _LAYER_LIST.search(name) is not None


def _hands_first(call: cst.Call, items: set[str]) -> bool:
    """The call's first positional argument is one of the loop's items, as it stands."""
    first = next((arg for arg in call.args if arg.keyword is None), None)
    return (
        first is not None
        and not first.star
        and type(first.value) is cst.Name
        and first.value.value in items  # type: ignore[attr-defined]
    )


def unwrap_iteration(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`enumerate(tqdm(loader))` -> `loader`; `cycle(loader)`, `CycleIterator(loader)` ->
    `loader`."""
    while isinstance(expr, cst.Call) and expr.args:
        name = (get_full_name_for_node(expr.func) or "").rsplit(".", 1)[-1]
        wraps = name in _ITERATION_WRAPPERS or _ITERATOR_WRAPPER.search(name) is not None
        if not wraps or expr.args[0].star or expr.args[0].keyword is not None:
            break
        expr = expr.args[0].value
    return expr


def _own_callee(call: cst.Call) -> tuple[bool, str] | None:
    """(is a method, name) of a call of a module function (`accuracy(x)`) or of a method
    called on `self` (`self._score(x)`); None for any other call."""
    func = call.func
    if type(func) is cst.Name:
        return False, func.value  # type: ignore[attr-defined]
    if self_call(call):
        return True, func.attr.value  # type: ignore[attr-defined]
    return None
