"""Base of the rules about environment variables set in code (XLA606, XLA608).

A variable can be set by assignment (`os.environ["X"] = "1"`), augmented assignment, or a
call (`os.environ.setdefault`, `os.putenv`, `os.environ.update({...})`); `env_settings`
(xlalint.analysis.env_vars) recognizes them all. Not a rule module: it defines no code.
"""

from __future__ import annotations

import libcst as cst

from xlalint.analysis.env_vars import EnvSetting, env_settings
from xlalint.rule import Rule


class EnvSettingRule(Rule):
    """Calls `check_setting` for every environment variable the file sets."""

    def visit_Assign(self, node: cst.Assign) -> None:
        self._settings(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._settings(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._settings(node)

    def _settings(self, node: cst.CSTNode) -> None:
        for setting in env_settings(node, self.ctx.imports):
            self.check_setting(setting)

    def check_setting(self, setting: EnvSetting) -> None:
        raise NotImplementedError
