from __future__ import annotations

import itertools

import libcst as cst

from xlalint.analysis.devices import (
    in_own_method,
    positional_argument,
    runs_without_xla,
    xla_string_source,
)
from xlalint.analysis.guards import favours_cuda, mentions_cuda
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import Rule

XLA_BACKEND_IMPORT = "import torch_xla.distributed.xla_backend"
# Calls whose first positional argument is the backend.
_BACKEND_FIRST = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.distributed.distributed_c10d.init_process_group",
    }
)
_ARGPARSE_DEFAULT = "default"


def _names_backend(name: str) -> bool:
    """`backend`, `dist_backend`, `process_group_backend`, `--dist-backend`."""
    return "backend" in name.lower()


def _name_of(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return None


class NcclBackend(Rule):
    """
    ## What it does
    Flags the string `"nccl"` where it chooses a `torch.distributed` backend: the backend
    argument of `dist.init_process_group(...)`, any `backend=`/`dist_backend=`/
    `process_group_backend=` keyword, a default argument or argparse default of such a
    parameter or option (`def setup(backend="nccl")`,
    `parser.add_argument("--dist-backend", default="nccl")`), and a config value stored
    under such a name (`dist_backend = "nccl"`, `{"backend": "nccl"}`) or returned by a
    function so named (`def get_backend(): return "nccl"`), also as a branch of `or` or a
    ternary, or as the fallback of a lookup (`{"npu": "hccl"}.get(device_type, "nccl")`).
    Left alone: comparisons (`if backend == "nccl":`), a choice that
    only CUDA machines make (`"nccl" if torch.cuda.is_available() else "gloo"`), code where
    a test for XLA failed (`"xla" if use_tpu else "nccl"`), code under a CUDA guard whose
    question about CUDA leads to the string's branch (`"nccl" if use_cuda or args.force
    else "gloo"`; not one a host without CUDA takes wherever a CUDA host does: `"nccl" if
    (not args.gloo or not torch.cuda.is_available()) and not args.cpu else "gloo"`, or
    the `else` of `if torch.cuda.is_available():`, both reported), the
    GPU implementation of a device abstraction (`class DeviceGPU(Device): dist_backend =
    "nccl"`), whose framework picks its XLA sibling on a TPU host, and a function this
    file reaches only off XLA (a worker it hands to `mp.spawn` only under `if
    torch.cuda.device_count() and self.ddp:`, and the setup that worker calls through
    `self`, `self.init_ddp(rank)`: `reachability.py`).

    ## Why is this bad?
    NCCL is NVIDIA's collective library. On an XLA host `init_process_group("nccl")`
    raises `ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!`, so a
    multi-device script never starts. PyTorch/XLA registers its own backend, `"xla"`, when
    `torch_xla.distributed.xla_backend` is imported; its collectives run on the XLA device.

    ## Example
    ```python
    import torch.distributed as dist

    dist.init_process_group("nccl")
    ```

    ## Use instead
    ```python
    import torch.distributed as dist
    import torch_xla.distributed.xla_backend

    dist.init_process_group("xla", init_method="xla://")
    ```

    ## Fix safety
    Unsafe: the fix writes `"xla"` and adds `import torch_xla.distributed.xla_backend`.
    The script then needs torch_xla on every machine it runs on, including GPU machines it
    may still be meant for; and the rank and world size still come from where the call
    took them (`init_method`, or the environment as `torchrun` sets it), where
    `torch_xla.launch` programs usually pass `init_method="xla://"`: review the call.

    ## Runtime evidence
    Measured with `benchmarks/xla_semantics.py --group dist` (torch 2.9.0, torch_xla
    2.9.0, `PJRT_DEVICE=CPU`, world size 1): `init_process_group("nccl", ...)` and
    `init_process_group(backend="nccl")` with the rank and world size in the environment
    raise `ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!`;
    `init_process_group("xla", init_method="xla://")` after
    `import torch_xla.distributed.xla_backend` runs, and so does
    `init_process_group(backend="xla")` with the rank and world size in the environment:
    `get_backend()` is `"xla"`, and `all_reduce` of an XLA tensor of ones gives ones.
    """

    code = "XLA306"
    name = "nccl-backend"
    message = "`{text}` chooses the NCCL backend, which needs GPUs: it raises on an XLA host"
    hint = 'use `"xla"` with `import torch_xla.distributed.xla_backend` and `init_method="xla://"`'
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.UNSAFE
    triggers = ("nccl", "NCCL")
    screen = ("'nccl", "'NCCL")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if not (isinstance(value, str) and value.lower() == "nccl"):
            return
        if not self._chooses_backend(node) or self._cuda_only(node):
            return
        text = self.ctx.module.code_for_node(node)
        fix = self.fix(
            'Use the XLA backend: `"xla"`',
            (node, xla_string_source(node)),
            imports=(XLA_BACKEND_IMPORT,),
        )
        self.report(node, self.message.format(text=text), fix=fix)

    def _chooses_backend(self, node: cst.SimpleString) -> bool:
        """Whether the string is stored or passed as a backend: climb through `or` and the
        branches of a ternary to the position that takes the value."""
        value: cst.CSTNode = node
        chain = list(self.ctx.ancestors())
        index = 0
        while index < len(chain):
            parent = chain[index]
            above = chain[index + 1] if index + 1 < len(chain) else None
            if isinstance(parent, cst.BooleanOperation) or (
                isinstance(parent, cst.IfExp) and value is not parent.test
            ):
                value = parent
                index += 1
                continue
            if isinstance(above, cst.Call) and _lookup_default(above, parent):
                # `{"npu": "hccl"}.get(device_type, "nccl")`: the fallback of a lookup
                value, index = above, index + 2
                continue
            return self._backend_position(value, parent, above)
        return False

    def _backend_position(
        self, value: cst.CSTNode, parent: cst.CSTNode, above: cst.CSTNode | None
    ) -> bool:
        if isinstance(parent, cst.Arg):
            call = above
            if not isinstance(call, cst.Call):
                return False
            if parent.keyword is not None:
                keyword = parent.keyword.value
                if keyword == _ARGPARSE_DEFAULT:
                    return _is_backend_option(call)
                return _names_backend(keyword)
            return (
                positional_argument(call, 0) is parent
                and self.ctx.qualified(call.func) in _BACKEND_FIRST
            )
        if isinstance(parent, cst.Param):
            return parent.default is value and _names_backend(parent.name.value)
        if isinstance(parent, cst.Assign):
            return any(_names_backend(_name_of(t.target) or "") for t in parent.targets)
        if isinstance(parent, cst.AnnAssign):
            return _names_backend(_name_of(parent.target) or "")
        if isinstance(parent, cst.Return):
            function = self.ctx.function
            return function is not None and _names_backend(function.name)
        if isinstance(parent, cst.DictElement):
            return parent.value is value and _names_backend(_name_of(parent.key) or "")
        return False

    def _cuda_only(self, node: cst.SimpleString) -> bool:
        """Code that only CUDA machines run, or where a test for XLA failed (the string's
        own ternary counts: `"xla" if use_tpu else "nccl"`)."""
        if in_own_method(self.ctx.function, "cuda") or self._under_cuda_guard(node):
            return True
        if self.ctx.in_gpu_implementation or self.ctx.in_cuda_only_function:
            return True
        return runs_without_xla((node, *self.ctx.ancestors()), self.ctx.imports)

    def _under_cuda_guard(self, node: cst.SimpleString) -> bool:
        """Under an `if` or ternary whose test asks about CUDA in a way that leads to the
        string's branch (`guards.favours_cuda`): not the body of `"nccl" if (not args.gloo
        or not torch.cuda.is_available()) and not args.cpu else "gloo"`, which a host
        without CUDA takes by default, nor the `else` of `if torch.cuda.is_available():`."""
        if not self.ctx.under_cuda_guard:
            return False
        imports = self.ctx.imports
        for child, parent in itertools.pairwise((node, *self.ctx.ancestors())):
            if type(parent) in (cst.If, cst.IfExp) and child is not parent.test:
                test = parent.test  # type: ignore[attr-defined]
                holds = child is parent.body  # type: ignore[attr-defined]
                if mentions_cuda(test, imports) and favours_cuda(test, holds, imports):
                    return True
        return False


def _lookup_default(call: cst.Call, arg: cst.CSTNode) -> bool:
    """`arg` is the default of a dict literal's lookup, `{...}.get(key, arg)`: the value
    the lookup gives for every key the dict does not list."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "get"
        and isinstance(func.value, cst.Dict)
        and positional_argument(call, 1) is arg
    )


def _is_backend_option(call: cst.Call) -> bool:
    """`parser.add_argument("--dist-backend", default=...)`."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
        return False
    return any(a.keyword is None and _names_backend(_name_of(a.value) or "") for a in call.args)
