"""Memos of one file's lint: caches keyed by libcst nodes, emptied when the lint ends.

Several analyses memoise by node (nodes hash by identity): `members.member_methods(module)`,
`walk.binding_counts(function)`. As process-wide `lru_cache`s they kept their keys, whole
trees of earlier files (16 modules, 256 functions each), alive for the rest of a worker's
run: most of a cold run's peak memory. An answer about a node is worth nothing once the
file's lint is over, so `memo` caches stay bounded as before within a lint and are emptied
by `lint_scope` when the outermost lint ends (the engine's `lint_source`).

The outermost scope also holds off CPython's cyclic garbage collector until it ends. A lint
builds a libcst tree and its analyses' tables (hundreds of thousands of objects that live
as long as the lint) while it allocates, so the collector ran its full collections over
those very objects, finding almost nothing to free: 3 full and ~380 younger collections in
a one-file check of diffusers' Stable Diffusion pipeline, 0.2 of its 1.3 CPU s (round 24).
What a lint frees is freed by reference counts as before; the little it leaves in cycles
(a context and its rules) waits for the first collection after the scope, as the
collector's own thresholds bring it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_memos: list[Any] = []
_scratch: list[dict[Any, Any]] = []
_starting: list[Callable[[], None]] = []
_depth = 0


def memo(maxsize: int) -> Callable[[F], F]:
    """`functools.lru_cache(maxsize)`, emptied at the end of each file's lint."""

    def wrap(function: F) -> F:
        cached = lru_cache(maxsize=maxsize)(function)
        _memos.append(cached)
        return cached  # type: ignore[return-value]

    return wrap


def scratch() -> dict[Any, Any]:
    """A dict emptied at the end of each file's lint, as the memos are."""
    found: dict[Any, Any] = {}
    _scratch.append(found)
    return found


def clear() -> None:
    """Empty every memo (their nodes, and the trees those hold, can go)."""
    for cached in _memos:
        cached.cache_clear()
    for found in _scratch:
        found.clear()


def on_start(callback: Callable[[], None]) -> None:
    """Run `callback` when a file's lint starts (the outermost scope opens): what the
    last lint left to finish for the layers, finished only if another lint comes
    (`module_steps` makes the summaries a one-file check never asked for only then)."""
    _starting.append(callback)


def in_lint() -> bool:
    """Whether a file's lint is in progress (its memos will be emptied)."""
    return _depth > 0


@contextmanager
def lint_scope() -> Iterator[None]:
    """One file's lint: the memos are emptied when the outermost scope ends. `check
    --no-cache` opens one around a file's lint and its closing forecast's lints of the
    fixed texts (`api._keyed_lint_forecast_job`); elsewhere a fixer's lint is a scope of
    its own. The cyclic garbage collector is off for the outermost scope (where it was on:
    see the module's docstring), and back on once the memos are emptied."""
    global _depth
    holds_collector = _depth == 0 and gc.isenabled()
    if holds_collector:
        gc.disable()
    _depth += 1
    try:
        if _depth == 1:
            for callback in _starting:
                callback()
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            clear()
        if holds_collector:
            gc.enable()
