from __future__ import annotations

from xlalint.analysis.env_vars import EnvSetting
from xlalint.rules._env_rules import EnvSettingRule

_SHELL_HINT = "set it for a debugging run only: `{name}=1 python train.py`"
_UNREAD = "is not read by torch_xla 2.9: setting it does nothing"

# Each variable: what it does to every run of the program, in torch_xla 2.9.
DEBUG_VARIABLES: dict[str, str] = {
    "XLA_IR_DEBUG": "records the Python frames of every traced op, slowing down tracing",
    "XLA_HLO_DEBUG": "writes Python source locations into every compiled graph",
    "XLA_SYNC_WAIT": "makes every `torch_xla.sync()` block until the device has finished",
    "XLA_SAVE_TENSORS_FILE": "dumps every graph torch_xla runs to a file",
    "GET_TENSORS_OPBYOP": _UNREAD,
    "SYNC_TENSORS_OPBYOP": _UNREAD,
}


class DebugEnvInCode(EnvSettingRule):
    """
    ## What it does
    Flags code that sets torch_xla's debugging environment variables, `XLA_IR_DEBUG`,
    `XLA_HLO_DEBUG`, `XLA_SYNC_WAIT`, `XLA_SAVE_TENSORS_FILE`, `GET_TENSORS_OPBYOP` and
    `SYNC_TENSORS_OPBYOP`, through `os.environ[...] = ...`, `os.environ.setdefault`,
    `os.putenv`, `os.environ.update` or `os.environ |= {...}`. Reading them, setting them to
    an off value (`"0"`), and env dicts built for a child process are not flagged.

    ## Why is this bad?
    These switches exist to debug one run. Set in the program, they apply to every run,
    including long training jobs: `XLA_IR_DEBUG` captures Python stack frames for every
    op traced, `XLA_HLO_DEBUG` writes source locations into every graph (torch_xla warns
    that both do not mix with the persistent compilation cache), `XLA_SYNC_WAIT` turns
    every asynchronous `torch_xla.sync()` into a blocking one so host and device stop
    overlapping, and `XLA_SAVE_TENSORS_FILE` writes every graph to disk. The op-by-op
    switches of old releases are no longer read at all.

    ## Example
    ```python
    import os

    os.environ["XLA_IR_DEBUG"] = "1"
    os.environ["XLA_HLO_DEBUG"] = "1"
    os.environ["XLA_SYNC_WAIT"] = "1"
    ```

    ## Use instead
    ```bash
    # only for the run being debugged
    XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 python train.py
    ```

    ## Fix safety
    No fix: whether a switch was left in by accident or is part of a debugging tool is
    the author's call. Each finding carries a hint.

    ## Runtime evidence
    Checked on torch_xla 2.9.0's sources: `torch_xla.sync()` computes
    `wait=xu.getenv_as('XLA_SYNC_WAIT', bool, wait)`, so the variable overrides every
    caller's `wait=False`; the extension module reads `XLA_IR_DEBUG`, `XLA_HLO_DEBUG` and
    `XLA_SAVE_TENSORS_FILE` and warns that the debug flags do not mix with the persistent
    cache; it contains no `OPBYOP` variable. Not measured by the harness yet; it will
    time a training step with and without each variable and count blocking syncs.
    """

    code = "XLA608"
    name = "debug-env-in-code"
    message = "`{name}` {effect}; a debugging switch should not be set in code"
    triggers = tuple(DEBUG_VARIABLES)

    def check_setting(self, setting: EnvSetting) -> None:
        effect = DEBUG_VARIABLES.get(setting.name)
        if effect is None:
            return
        message = self.message.format(name=setting.name, effect=effect)
        hint = "remove it" if effect is _UNREAD else _SHELL_HINT.format(name=setting.name)
        self.report(setting.node, message, hint=hint)
