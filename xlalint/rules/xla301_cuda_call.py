from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.arguments import parameters
from xlalint.analysis.devices import (
    in_own_method,
    is_super_call,
    xla_device_source,
)
from xlalint.analysis.guards import gpu_use_parameter, implied, local_values, path_conditions
from xlalint.analysis.members import class_method, instance_methods
from xlalint.analysis.module_classes import builds_stateless_module, is_module_class
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import descendants

if TYPE_CHECKING:
    from xlalint.context import FileContext

# `Tensor.cuda(device=None, non_blocking=False, memory_format=...)`; `Module.cuda(device=None)`.
_KEPT_KEYWORDS = ("non_blocking", "memory_format")


class CudaCall(Rule):
    """
    ## What it does
    Flags `.cuda()` calls on tensors and modules, with or without arguments
    (`.cuda(non_blocking=True)`, `.cuda(args.gpu)`), anywhere in the file except under a
    CUDA guard such as `if torch.cuda.is_available():` (or a count of GPUs that needs one, `if
    args.ngpu == 1:`, a name counting GPUs by its words too, as `use_gpu = config.total_visible_gpus
    > 0` is, but not `n_gpu_layers`, or a flag this file keeps False on an XLA host, as XLA303
    describes: `if self.on_gpu:` after `self.on_gpu = torch.cuda.is_available() and not cfg.cpu` in
    `__init__`), in the branches of a device ladder (`if args.gpu is not None: model.cuda(args.gpu)
    ... else: <cpu>`: XLA305 adds the XLA branch and the CUDA one stays for CUDA hosts), or after
    `if not torch.cuda.is_available(): return`, code that runs only where a test for XLA
    failed (`if is_xla: ... else: x.cuda()`), a class's own `cuda()` method (a wrapper
    moving its parts for a caller that asked for CUDA), a call that runs a `cuda` method
    of the module's own classes that places on the device it is handed (`self.cuda(
    self.device)` in a class with `def cuda(self, device):` moving its parts with
    `.to(device)`, also through a name bound to an instance: the device handed decides; a
    `cuda(self)` that takes no device, or one deferring to `super().cuda(device)`, moves to
    CUDA and its callers are reported), calls under a flag of `self` in
    a class whose bases all come from other modules (not a module class: a model's flags
    are its options, `if self.use_attention:`), where the class never assigns the
    flag (`if self.use_gpu: imgs = imgs.cuda()` in a subclass of an imported `Engine`
    that sets `self.use_gpu = torch.cuda.is_available() and use_gpu`): the switch is the
    base class's device choice, reported as XLA305 where the flag is set (a flag this
    file assigns is judged by its value, as above, also from a closure inside a method),
    and calls that torch's `.cuda()`
    could not take (`quantizer.cuda(qtensor, meta=meta, device=d)`: another library's
    method of the same name). A test that says CUDA is not in use where the call runs is
    no guard: `if not p.is_cuda: p.data = p.data.cuda()` (an XLA tensor is never
    `is_cuda`, so an XLA host takes exactly this branch), the `else` of `if t.is_cuda:`,
    `if x.device.type != "cuda":`; nor is a test that a value is on the CPU (`param.cuda()
    if param.device.type == "cpu" else param`, `if t.device.type == "cpu": t = t.cuda()`):
    an XLA host holds host tensors too (a state dict offloaded to the CPU) and takes that
    branch for them. Nor is a flag parameter on by default that the function
    never rebinds (`def create_feature_extractor(name, cuda=True)`, then `if cuda:
    extractor.cuda()`): no CUDA probe sets it, and a caller using the defaults on an XLA
    host takes the branch; a flag off by default (`cuda=False`), set from a probe in the
    function, or handed in without a default keeps its call quiet, as above; so does a
    parameter named for using the GPU (`use_gpu`, `on_gpu`), handed in without a default
    or off by default (`def distributed_sinkhornknopp(Q, ..., use_gpu): if use_gpu: r =
    r.cuda()`): the callers' CUDA switch, False on a host without a GPU. A
    `torch.cuda` call in its arguments (`state["scale"].cuda(torch.cuda.current_device())`)
    is part of this finding, not an XLA303 of its own: the fix drops it with the move.
    A `torch.nn` module that holds no parameter or buffer (activations, softmax, pooling,
    dropout, `Flatten`, `Identity`, a loss built without `weight`) is left alone, built in
    place (`nn.LogSoftmax(dim=1).cuda()`) or bound to a local name that only ever holds
    one (`criterion = nn.MSELoss()`, then `criterion.cuda()`): `.cuda()` moves its tensors,
    it has none, and it returns without touching CUDA (measured on an XLA host without
    CUDA: `nn.LogSoftmax(dim=1).cuda()` returns, `nn.Linear(2, 2).cuda()` raises). A
    module with state (`nn.PReLU()`, `nn.BatchNorm1d(n)`, `nn.CrossEntropyLoss(weight=w)`,
    whose weight is a buffer) is flagged.

    ## Why is this bad?
    `.cuda()` places the value on a CUDA GPU. A TPU host has none, so the call fails, and
    nothing in it puts the value on the XLA device where the rest of the port expects it.

    ## Example
    ```python
    model = Net().cuda()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    ```

    ## Use instead
    ```python
    import torch_xla

    model = Net().to(torch_xla.device())
    for x, y in loader:
        x = x.to(torch_xla.device(), non_blocking=True)
        y = y.to(torch_xla.device(), non_blocking=True)
    ```

    ## Fix safety
    Safe. The fix rewrites `.cuda(...)` to `.to(torch_xla.device())`, keeping
    `non_blocking=` and `memory_format=`, and adds `import torch_xla` (where
    `target-version` is before 2.3, which added `torch_xla.device`: `.to(xm.xla_device())`
    with `import torch_xla.core.xla_model as xm`). A device index
    (`.cuda(0)`, `.cuda(args.gpu)`) is dropped: each XLA process owns its device, which
    `torch_xla.device()` returns. Calls with `*args`/`**kwargs` or other keywords are
    reported without a fix, as are calls in a file that imports torch_xla only where it is
    installed (under `try:`/`if`): CUDA hosts without torch_xla still run them. In a file
    with a device ladder without XLA (XLA305), the fix is unsafe: the ladder decides where
    the model goes, and moving this value alone could put it on another device than the
    model (`RuntimeError: Expected XLA tensor`). It then goes together with the ladder's
    fix: `--unsafe-fixes` applies both or neither.

    ## Runtime evidence
    Not measured by the harness yet. Without a CUDA device, `.cuda()` raises: a RuntimeError
    (no NVIDIA driver / no CUDA GPUs) with the CUDA build of torch that torch_xla installs,
    `AssertionError: Torch not compiled with CUDA enabled` with a CPU-only build. The harness
    will run the script before and after the fix with `PJRT_DEVICE=CPU`: the original fails,
    the fixed one runs on the XLA device.
    """

    code = "XLA301"
    name = "cuda-call"
    message = "`.cuda()` moves the value to a CUDA GPU, which an XLA host does not have"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("cuda",)
    screen = ("~cuda",)
    # `t.cuda(torch.cuda.current_device())`: the device query steers this move, one cause.
    supersedes_inside = ("XLA303",)
    # `torch.zeros(n).cuda()`, `self.bank[idx].cuda()`: the host tensor this call moves is
    # the move's own cause (XLA208's upload), one edit of the move fixing both.
    supersedes_moved = ("XLA208",)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._classes: frozenset[str] | None = None
        self._assigned: dict[int, frozenset[str]] = {}
        self._cuda_methods: list[cst.FunctionDef] | None = None  # the module's own `cuda`s

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return
        if self.ctx.qualified(func) == "torch.cuda":
            return
        if is_super_call(func.value) or in_own_method(self.ctx.function, "cuda"):
            return
        if not _fits_torch_cuda(node):
            return  # `quantizer.cuda(qtensor, meta=meta, device=d)`: some other `cuda()`
        if self._reaches_own_placement(func.value):
            return  # `self.cuda(self.device)`: the class's own `cuda(device)` places there
        if self._moves_nothing(func.value):
            return  # `nn.LogSoftmax(dim=1).cuda()`: no parameter, no buffer, no CUDA call
        if self.ctx.moves_without_xla:
            return
        if self.ctx.device_choices.in_ladder(self.ctx.ancestors()):
            return  # a branch of a device ladder: XLA305 gives the ladder its XLA branch
        if self._under_gpu_use_parameter(node):
            return  # `def f(Q, use_gpu): if use_gpu: r = r.cuda()`: the callers' switch
        if self._under_inherited_flag(node):
            return
        self.report(func.attr, end_node=node, fix=self._to_xla_fix(node, func))

    def _reaches_own_placement(self, receiver: cst.BaseExpression) -> bool:
        """Whether `receiver.cuda(...)` runs a `cuda` method a class of this module defines
        (or inherits from a base here) that places on the device its caller hands it:
        `self.cuda(self.device)` in a class with `def cuda(self, device):` that moves
        its parts with `.to(device)`. Such a method is no `Module.cuda()`: the device
        handed decides (an XLA device on an XLA host), and a CUDA device spelled there
        is XLA302's. Reached through `self` in the class, or through a name every
        binding of which is an instance of the module's classes (`layer =
        QuantLinear(...)`, then `layer.cuda(device)`), where every `cuda` of those
        classes is such a method. A `cuda(self)` that takes no device (`return
        Rigid(self._rots.cuda(), ...)`) or defers to `super().cuda(device)` moves to CUDA
        as `Module.cuda()` does: the call is reported."""
        if type(receiver) is not cst.Name:
            return False
        if self._cuda_methods is None:
            self._cuda_methods = [
                m
                for c in descendants(self.ctx.module)
                if type(c) is cst.ClassDef and isinstance(c.body, cst.IndentedBlock)
                for m in c.body.body
                if type(m) is cst.FunctionDef and m.name.value == "cuda"
            ]
        if not self._cuda_methods:
            return False  # no class of this module defines `cuda`
        module = self.ctx.module
        function = self.ctx.function
        if receiver.value == "self":
            if function is None or function.class_name is None:
                return False
            method = class_method(module, function.class_name, "cuda")
            return method is not None and _places_on_handed_device(method)
        if "cuda" not in instance_methods(module).get(receiver.value, frozenset()):
            return False
        return all(_places_on_handed_device(m) for m in self._cuda_methods)

    def _under_gpu_use_parameter(self, node: cst.Call) -> bool:
        """Under `if use_gpu:` with `use_gpu` a parameter named for using the GPU, handed
        in without a default or off by default (`guards.gpu_use_parameter`): the callers
        decide, and on an XLA host, with no GPU, they pass False."""
        function = self.ctx.function_node
        if function is None:
            return False
        return any(
            implied(test, holds, lambda t: gpu_use_parameter(t, function)) is True
            for test, holds in path_conditions((node, *self.ctx.ancestors()))
        )

    def _moves_nothing(self, receiver: cst.BaseExpression) -> bool:
        """Whether the receiver is a `torch.nn` module that holds no parameter or buffer:
        built here (`nn.Softmax(dim=1).cuda()`), or a local name every binding of which
        builds one (`criterion = nn.MSELoss()`, then `criterion.cuda()`). `Module.cuda()`
        moves the module's tensors; with none it returns at once, CUDA or not."""
        imports = self.ctx.imports
        if builds_stateless_module(receiver, imports):
            return True
        function = self.ctx.function_node
        if type(receiver) is not cst.Name or function is None:
            return False
        values = local_values(function, receiver.value)
        return bool(values) and all(builds_stateless_module(v, imports) for v in values)

    def _under_inherited_flag(self, node: cst.Call) -> bool:
        """Under `if self.use_gpu:` in a class whose bases all come from other modules,
        where the class never assigns the flag: the switch between CUDA and the CPU is
        the base class's device choice, made (and reported, as XLA305) where the flag is
        set; here it is only read. Not in a module class: a model's flags (`if
        self.use_attention:` in a `LightningModule`) are options of the model."""
        class_def = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
        if class_def is None or not class_def.bases:
            return False
        if is_module_class(class_def, self.ctx.imports):
            return False  # a model's flags (`if self.use_attention:`) are its own options
        local_classes = self._local_classes()
        if any(
            isinstance(b.value, cst.Name | cst.Attribute)
            # A class of this file, or a base that holds no device flag.
            and (_last(b.value) in local_classes or _last(b.value) == "object")
            for b in class_def.bases
        ):
            return False
        for test, holds in path_conditions((node, *self.ctx.ancestors())):
            if (
                holds
                and isinstance(test, cst.Attribute)
                and isinstance(test.value, cst.Name)
                and test.value.value == "self"
                and test.attr.value not in self._assigned_attributes(class_def)
            ):
                return True
        return False

    def _local_classes(self) -> frozenset[str]:
        if self._classes is None:
            self._classes = frozenset(
                n.name.value for n in descendants(self.ctx.module) if isinstance(n, cst.ClassDef)
            )
        return self._classes

    def _assigned_attributes(self, class_def: cst.ClassDef) -> frozenset[str]:
        """Attribute names the class's own code assigns (`self.use_gpu = ...`), once per
        class."""
        key = id(class_def)
        if key not in self._assigned:
            found: set[str] = set()
            for n in descendants(class_def):
                targets: list[cst.BaseExpression] = []
                if isinstance(n, cst.AssignTarget | cst.AugAssign | cst.AnnAssign):
                    targets = [n.target]
                while targets:
                    t = targets.pop()
                    if isinstance(t, cst.Tuple | cst.List):
                        targets.extend(e.value for e in t.elements)
                    elif isinstance(t, cst.Attribute):
                        found.add(t.attr.value)
            self._assigned[key] = frozenset(found)
        return self._assigned[key]

    def _to_xla_fix(self, node: cst.Call, func: cst.Attribute) -> NodeFix | None:
        """Small edits that leave the receiver alone (it may carry fixes of its own):
        `cuda` -> `to`, and the device argument -> `torch_xla.device()`."""
        if self.ctx.import_guards.optional("torch_xla"):
            return None  # CUDA hosts without torch_xla still run this line
        receiver = func.value
        qualified_receiver = (
            self.ctx.qualified(receiver) if isinstance(receiver, cst.Name | cst.Attribute) else None
        )
        if qualified_receiver is not None and qualified_receiver.startswith("torch."):
            return None  # `nn.Module.cuda(model)`: the receiver is a class, not the value
        device, imports = xla_device_source(self.ctx)
        edits: list[tuple[cst.CSTNode, cst.CSTNode | str]] = [(func.attr, "to")]
        positional = [a for a in node.args if a.keyword is None]
        keywords = {a.keyword.value: a for a in node.args if a.keyword is not None}
        if any(a.star for a in node.args) or len(positional) > 2:
            return None
        if set(keywords) - {"device", *_KEPT_KEYWORDS}:
            return None
        if positional:
            # `.cuda(0)`, `.cuda(args.gpu, True)`: the second positional is non_blocking.
            edits.append((positional[0].value, device))
            if len(positional) == 2:
                value = self.ctx.module.code_for_node(positional[1].value)
                edits.append((positional[1].value, f"non_blocking={value}"))
        elif "device" in keywords:
            edits.append((keywords["device"].value, device))  # `.to(device=...)` is valid
        elif node.args:
            first = node.args[0]
            assert first.keyword is not None
            edits.append((first.keyword, f"{device}, {first.keyword.value}"))
        else:
            edits.append((node.whitespace_before_args, device))
        return self.fix(
            f"Move to the XLA device: `.to({device})`",
            *edits,
            imports=imports,
            moves_to_xla=True,
        )


# `Tensor.cuda(device=None, non_blocking=False, memory_format=...)`; `Module.cuda(device=None)`.
_TORCH_CUDA_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})


def _last(node: cst.BaseExpression) -> str:
    """`Engine` for `Engine` and `engine.Engine`."""
    return node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")


def _places_on_handed_device(method: cst.FunctionDef) -> bool:
    """`def cuda(self, device):`: a parameter past `self` without a default, which the
    body uses, and no `super().cuda(...)`: the method places on the device its caller
    names (hqq's `HQQLinear.cuda`, moving its packed weights with `.to(device)`)."""
    params = parameters(method)[1:]
    required = [p.name.value for p in params if p.default is None]
    if not required:
        return False
    used = False
    for node in descendants(method.body):
        if type(node) is cst.Name and node.value in required:
            used = True
        elif (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "cuda"
            and is_super_call(node.func.value)
        ):
            return False
    return used


def _fits_torch_cuda(call: cst.Call) -> bool:
    """Whether torch's `.cuda()` accepts these arguments. A call with other keywords or more
    positional arguments is another library's method of the same name."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return True  # `*args`, `**kwargs`: cannot tell
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value not in _TORCH_CUDA_KEYWORDS:
            return False
    return positional <= 2
