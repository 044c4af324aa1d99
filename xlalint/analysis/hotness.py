"""Which code runs every step ("hot code").

A host sync costs once per execution, so it matters where code runs every training or
sampling step: loop bodies, per-step functions (`forward`, `training_step`, a scheduler's
`step`...), configured `hot-functions`, and functions reached from those in the same module.
Whether a function is reached from a loop is only known once the whole file has been read,
so findings carry a `Site` and are judged by `HotCode.is_hot` after the pass.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

# `compute_loss` is the per-step hook of transformers' `Trainer` (and of trl's trainers).
PER_STEP_FUNCTIONS = re.compile(
    r"^(forward|step|\w+_step|scale_model_input|training_step|validation_step|test_step|"
    r"predict_step|compute_loss)$"
)
RUN_ONCE_FUNCTIONS = frozenset(
    {"__init__", "setup", "set_timesteps", "configure_optimizers", "__post_init__", "main"}
)


@dataclass(frozen=True)
class FunctionKey:
    """A function by its enclosing class (if any) and name."""

    class_name: str | None
    name: str


@dataclass(frozen=True)
class Site:
    """Where a finding sits, as far as hot-code reasoning needs to know."""

    function: FunctionKey | None
    in_loop: bool
    in_step_closure: bool
    # the function is one a framework calls per step with tensors: `__call__` of an
    # nn.Module subclass, `update` of a Metric subclass
    module_call: bool = False
    # The function, then the loops around the site in it (outermost first): what tells
    # per-epoch code (after the batch loop of an epoch function) from per-step code.
    scopes: tuple[cst.CSTNode, ...] = ()


class HotCode:
    """Collects call edges while the file is walked, then answers `is_hot(site)`."""

    def __init__(
        self,
        extra_hot_functions: Iterable[str] = (),
        per_epoch: Callable[[Sequence[cst.CSTNode]], bool] | None = None,
    ) -> None:
        self._extra = tuple(extra_hot_functions)
        self._per_epoch = per_epoch
        self._edges: list[tuple[Site, str]] = []
        self._closure_callbacks: set[str] = set()
        self._hot_names: set[str] | None = None

    def add_call(self, site: Site, callee_name: str) -> None:
        """A call to a same-module function or method named `callee_name` from `site`."""
        self._edges.append((site, callee_name))
        self._hot_names = None

    def add_step_closure_callback(self, name: str) -> None:
        """A function handed to `xm.add_step_closure`: it runs after the step, off the trace."""
        self._closure_callbacks.add(name)
        self._hot_names = None

    def declared_per_step(self, name: str) -> bool:
        """A function that runs per step by its name (`forward`, `*_step`) or config."""
        return self._declared_hot(name)

    def _declared_hot(self, name: str) -> bool:
        if name in RUN_ONCE_FUNCTIONS or name in self._closure_callbacks:
            return False
        return PER_STEP_FUNCTIONS.match(name) is not None or any(
            fnmatch.fnmatchcase(name, pattern) for pattern in self._extra
        )

    def _function_hot(self, site: Site) -> bool:
        function = site.function
        if function is None:
            return False
        if function.name in RUN_ONCE_FUNCTIONS or function.name in self._closure_callbacks:
            return False
        return (
            site.module_call
            or self._declared_hot(function.name)
            or function.name in self._reached_names()
        )

    def _once_per_epoch(self, site: Site) -> bool:
        """The site is outside the batch loop of an epoch function or loop (a declared
        per-step function, whose loops are part of one step, has no epoch code)."""
        if self._per_epoch is None or not site.scopes:
            return False
        function = site.function
        if site.module_call or (function is not None and self._declared_hot(function.name)):
            return False
        return self._per_epoch(site.scopes)

    def _reached_names(self) -> set[str]:
        """Function names called, directly or transitively, from hot code."""
        if self._hot_names is None:
            hot: set[str] = set()
            changed = True
            while changed:
                changed = False
                for site, callee in self._edges:
                    if callee in hot or callee in RUN_ONCE_FUNCTIONS:
                        continue
                    if callee in self._closure_callbacks or site.in_step_closure:
                        continue
                    caller_hot = (
                        site.in_loop
                        or (
                            site.function is not None
                            and (
                                site.module_call
                                or self._declared_hot(site.function.name)
                                or site.function.name in hot
                            )
                        )
                    ) and not self._once_per_epoch(site)
                    if caller_hot:
                        hot.add(callee)
                        changed = True
            self._hot_names = hot
        return self._hot_names

    def is_hot(self, site: Site) -> bool:
        if site.in_step_closure or self._once_per_epoch(site):
            return False
        return site.in_loop or self._function_hot(site)
