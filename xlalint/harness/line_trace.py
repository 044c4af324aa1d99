"""Per-line runtime costs, measured inside the profiled script (`xlalint profile`).

torch_xla's debug analysis names a line for each execution and compile, but not for a
device-to-host transfer that needs no execution (`.item()` of a tensor a barrier already
computed), and it cannot see a graph grow. So the profiled script runs under a line
tracer, active only in the user's own files: whenever torch_xla's counters move, the
change belongs to the innermost user line running at the time. Per-line transfers then sum
to the run's `TransferFromDeviceTime` count.

At the head of each loop in the user's files, for its first iterations, the tracer also
records the largest pending (not yet executed) graph among live tensors: a graph that grows
from one iteration to the next is a loop that reaches no barrier (XLA401/XLA402).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

# Cheap counters that move whenever a transfer or an execution may have happened; the
# transfer metric itself (hundreds of microseconds to read) is read only then.
_GUARDS = ("ExecuteComputation", "UncachedCompile", "xla::_to_cpu", "xla::_to_copy",
           "aten::_local_scalar_dense")  # fmt: skip
_IR_NODES = re.compile(r"ir_nodes=(\d+)")
LOOP_SAMPLES = 8  # iterations sampled per loop: enough to see growth, cheap on big graphs

Line = tuple[str, int]
OUTSIDE: Line = ("", 0)  # costs while no user line ran (interpreter exit, other threads)


def loop_heads(path: str) -> frozenset[int]:
    """The lines of the `for`/`while` statements in a file (none when it does not parse)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return frozenset()
    return frozenset(
        node.lineno for node in ast.walk(tree) if isinstance(node, ast.For | ast.While)
    )


class LineTracer:
    """Counts executions, compiles and transfers per user line; samples graph sizes in loops."""

    def __init__(self, is_user_file: Callable[[str], bool]) -> None:
        self._is_user_file = is_user_file
        self._user: dict[str, bool] = {}
        self._loops: dict[str, frozenset[int]] = {}
        self._metrics: Any = None  # torch_xla.debug.metrics, once the script imported it
        self.current: Line = OUTSIDE
        self.costs: dict[Line, list[int]] = {}  # [executions, compiles, device_to_host]
        self.growth: dict[Line, list[int]] = {}
        self._guards: tuple[int, ...] = ()
        self._transfers = 0

    def _active(self) -> bool:
        """Counting starts once the script has imported torch_xla (never imported here)."""
        if self._metrics is None:
            self._metrics = sys.modules.get("torch_xla.debug.metrics")
            if self._metrics is None:
                return False
            self._guards, self._transfers = self._read(), self._transfer_count()
        return True

    def _read(self) -> tuple[int, ...]:
        return tuple(self._metrics.counter_value(name) or 0 for name in _GUARDS)

    def _transfer_count(self) -> int:
        data = self._metrics.metric_data("TransferFromDeviceTime")
        return int(data[0]) if data else 0

    def flush(self) -> None:
        """Give what the counters moved since the last event to the current line."""
        if not self._active():
            return
        guards = self._read()
        if guards == self._guards:
            return
        transfers = self._transfer_count()
        moved = (guards[0] - self._guards[0], guards[1] - self._guards[1],
                 transfers - self._transfers)  # fmt: skip
        self._guards, self._transfers = guards, transfers
        if any(moved):
            cost = self.costs.setdefault(self.current, [0, 0, 0])
            for i, value in enumerate(moved):
                cost[i] += value

    def _is_user(self, filename: str) -> bool:
        known = self._user.get(filename)
        if known is None:
            known = self._user[filename] = self._is_user_file(filename)
        return known

    def _innermost_user_line(self, frame: FrameType | None) -> Line:
        while frame is not None:
            if self._is_user(frame.f_code.co_filename):
                return (frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return OUTSIDE

    def _sample(self, where: Line) -> None:
        samples = self.growth.setdefault(where, [])
        if len(samples) >= LOOP_SAMPLES or self._metrics is None:
            return
        report = sys.modules["_XLAC"]._xla_tensors_report(1, "")
        samples.append(max((int(n) for n in _IR_NODES.findall(report)), default=0))

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.flush()
            filename = frame.f_code.co_filename
            self.current = (filename, frame.f_lineno)
            heads = self._loops.get(filename)
            if heads is None:
                heads = self._loops[filename] = loop_heads(filename)
            if frame.f_lineno in heads:
                self._sample(self.current)
        elif event == "return":
            self.flush()
            self.current = self._innermost_user_line(frame.f_back)
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call" or not self._is_user(frame.f_code.co_filename):
            return None
        self.flush()
        self.current = (frame.f_code.co_filename, frame.f_lineno)
        return self._local

    def start(self) -> None:
        """Trace the main thread only: user code in a loader's thread (a Dataset's
        `__getitem__` under MpDeviceLoader) must not move the main thread's current line."""
        sys.settrace(self._global)

    def stop(self) -> None:
        sys.settrace(None)
        self.flush()

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": [[file, line, *cost] for (file, line), cost in self.costs.items()],
            "loops": [[file, line, sizes] for (file, line), sizes in self.growth.items()],
        }
