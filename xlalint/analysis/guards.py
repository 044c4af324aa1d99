"""Code that only runs on CUDA machines.

`if torch.cuda.is_available(): model.cuda()` is not a porting problem: on an XLA host the
branch is never taken. Device rules ask whether a node sits under such a guard.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import ImportTable

_CUDA_PROBES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})


def mentions_cuda(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """Whether a condition asks about CUDA: `torch.cuda.is_available()`, `args.cuda`,
    `use_cuda`, `device.type == "cuda"`."""
    for call in m.findall(test, m.Call()):
        assert isinstance(call, cst.Call)
        if imports.resolve(call.func) in _CUDA_PROBES:
            return True
    for node in m.findall(test, m.Name() | m.Attribute() | m.SimpleString()):
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
                return True
            continue
        name = get_full_name_for_node(node) or ""
        if "cuda" in name.rsplit(".", 1)[-1].lower():
            return True
    return False
