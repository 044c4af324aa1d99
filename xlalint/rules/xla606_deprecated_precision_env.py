from __future__ import annotations

from xlalint.analysis.env_vars import EnvSetting
from xlalint.analysis.xla_api import ENV_HISTORY
from xlalint.rules._env_rules import EnvSettingRule

_BF16_HINT = (
    "convert the model with `model.to(torch.bfloat16)`, or compute in "
    '`torch.autocast("xla", dtype=torch.bfloat16)`'
)
_DEPRECATED = "{name} {effect} and is deprecated: set the dtype in the code instead"
_UNREAD = "{name} is no longer read by torch_xla {{release}}: setting it only prints a warning"
_FP16_HINT = f"remove it; for reduced precision, {_BF16_HINT}"

# Each variable: what setting it means in torch_xla 2.9, and what to do instead. The fp16
# ones, read until 2.4 (deprecated there), get `_FP16_DEPRECATED` at that target.
_FP16_DEPRECATED = _DEPRECATED.format(name="`{name}`", effect="silently computes in float16")
PRECISION_VARIABLES: dict[str, tuple[str, str]] = {
    "XLA_USE_BF16": (
        _DEPRECATED.format(name="`XLA_USE_BF16`", effect="silently stores float32 as bfloat16"),
        _BF16_HINT,
    ),
    "XLA_DOWNCAST_BF16": (
        _DEPRECATED.format(
            name="`XLA_DOWNCAST_BF16`", effect="silently computes float32 in bfloat16"
        ),
        _BF16_HINT,
    ),
    "XLA_USE_32BIT_LONG": (
        _DEPRECATED.format(name="`XLA_USE_32BIT_LONG`", effect="silently stores int64 as int32"),
        "create index tensors with `dtype=torch.int32` where 32 bits suffice",
    ),
    "XLA_USE_FP16": (_UNREAD.format(name="`XLA_USE_FP16`"), _FP16_HINT),
    "XLA_DOWNCAST_FP16": (_UNREAD.format(name="`XLA_DOWNCAST_FP16`"), _FP16_HINT),
}


class DeprecatedPrecisionEnv(EnvSettingRule):
    """
    ## What it does
    Flags code that sets torch_xla's precision environment variables, `XLA_USE_BF16`,
    `XLA_DOWNCAST_BF16`, `XLA_USE_32BIT_LONG`, `XLA_USE_FP16` and `XLA_DOWNCAST_FP16`:
    `os.environ["XLA_USE_BF16"] = "1"`, `os.environ.setdefault(...)`, `os.putenv(...)`,
    `os.environ.update({...})` or `update(XLA_USE_BF16="1")`, and `os.environ |= {...}`.
    Reading them, setting them to an off value (`"0"`), and env dicts built for a child
    process are not flagged.

    Reported where `target-version` is 2.4 or later (the default is 2.9): 2.4 is the first
    release whose native library prints the deprecation notice. The fp16 variables are
    reported as deprecated at 2.4 and as no longer read from 2.5, the first release whose
    library does not name them (docs/target-version.md).

    ## Why is this bad?
    The bfloat16 and 32-bit-long variables change the precision of every tensor on the
    device while `tensor.dtype` still says `float32` or `int64`, so a precision bug is
    invisible in the code, applies to every tensor (optimizer state and loss included)
    and ties the program to a switch torch_xla has announced it will drop. The fp16
    variables are no longer read at all: setting them does nothing but warn, so the code
    that sets them promises a precision the program does not get.

    ## Example
    ```python
    import os

    os.environ["XLA_USE_BF16"] = "1"
    model = Net().to(torch_xla.device())
    ```

    ## Use instead
    ```python
    model = Net().to(torch_xla.device()).to(torch.bfloat16)
    # or keep float32 weights and compute in bfloat16:
    with torch.autocast("xla", dtype=torch.bfloat16):
        loss = criterion(model(x), y)
    ```

    ## Fix safety
    No fix: choosing between converting the model and autocasting (and which values stay
    in float32) is a numerical decision. Each finding carries a hint.

    ## Runtime evidence
    Checked on torch_xla 2.9.0 with `PJRT_DEVICE=CPU`: with `XLA_USE_BF16=1`,
    `torch.full((1,), 1/3)` moved to the device, times 3, minus 1 gives `0.0` (float32
    gives `2.98e-08`) while the dtype reads `torch.float32`, and torch_xla prints
    `XLA_USE_BF16 will be deprecated after the 2.6 release, please convert your model to
    bf16 directly` (likewise for `XLA_DOWNCAST_BF16` and `XLA_USE_32BIT_LONG`).
    `XLA_USE_FP16` and `XLA_DOWNCAST_FP16` only raise `UserWarning: The environment
    variable 'XLA_USE_FP16' is deprecated` at import; the 2.9 extension module does not
    read them. Not measured by the harness yet; it will compare outputs with the variable
    set and with the explicit `.to(torch.bfloat16)`.
    """

    code = "XLA606"
    name = "deprecated-precision-env"
    message = "a deprecated precision variable is set: set the dtype in the code instead"
    triggers = tuple(PRECISION_VARIABLES)

    def check_setting(self, setting: EnvSetting) -> None:
        if setting.name not in PRECISION_VARIABLES:
            return
        history, target = ENV_HISTORY[setting.name], self.ctx.target
        if not history.deprecated_at(target) and not history.removed_at(target):
            return  # torch_xla reads it without a word at the target release
        message, hint = PRECISION_VARIABLES[setting.name]
        if history.removed is not None and not history.removed_at(target):
            message = _FP16_DEPRECATED.format(name=setting.name)
        self.report(setting.node, message.format(release=target), hint=hint)
