"""How serious a rule's finding is, for outputs that grade findings (SARIF levels).

- `error`: the code fails on an XLA host (raises, or calls an API that is gone).
- `warning`: the code runs, but slowly or wrongly placed: host syncs, recompilations,
  CPU fallbacks, missing barriers, device-state saves (most rules).
- `note`: the code works as it is; an API is deprecated or a debugging setting is left on.

A rule may set `severity` itself; otherwise this table, kept beside the catalogue's
reasons, decides.
"""

from __future__ import annotations

from typing import Literal

from xlalint.rule import Rule

Severity = Literal["error", "warning", "note"]

# Fails at run time on an XLA host (see each rule's "Why is this bad?").
_ERRORS = frozenset(
    {
        "XLA301",  # `.cuda()`: no CUDA device on a TPU host
        "XLA302",  # "cuda" device strings: the same
        "XLA303",  # `torch.cuda.synchronize()` / `set_device()` raise
        "XLA306",  # init_process_group("nccl"): no GPUs found
        "XLA307",  # torch.compile's inductor: KeyError 'xla'
        "XLA405",  # a barrier inside `xp.Trace`: RuntimeError
        "XLA601",  # `torch_xla_py` no longer exists
        "XLA602",  # `torch_xla.distributed.data_parallel` no longer exists
        "XLA605",  # `xm.xrt_world_size()` and friends: AttributeError in 2.9
    }
)
# Works as written: deprecated names and debugging settings.
_NOTES = frozenset({"XLA603", "XLA604", "XLA606", "XLA607", "XLA608"})


def severity(rule: type[Rule]) -> Severity:
    own = getattr(rule, "severity", None)
    if own in ("error", "warning", "note"):
        return own  # type: ignore[return-value]
    if rule.code in _ERRORS:
        return "error"
    if rule.code in _NOTES:
        return "note"
    return "warning"
