"""A progress bar on stderr for long `check` runs.

A large tree takes tens of seconds; without a sign of life a user cannot tell a slow run
from a hung one. The bar is drawn only where a person watches: stderr is a terminal, the
output format is read by people, and the run is large. It is erased when the run ends, so
it never mixes with the findings, and machine formats (json, github, sarif) never see it.
"""

from __future__ import annotations

from typing import TextIO

# Below this many files a run takes a few seconds: a bar would only flicker.
PROGRESS_THRESHOLD = 200
WIDTH = 30


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real file
        return False


class ProgressBar:
    """`bar(done, total)` redraws `[#####.....] done/total files` in place, about a
    hundred times a run at most; `close()` erases it."""

    def __init__(self, stream: TextIO, minimum: int = PROGRESS_THRESHOLD) -> None:
        self._stream = stream
        self._minimum = minimum
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        if total < self._minimum:
            return
        step = max(1, total // 100)
        if done % step and done != total:
            return
        filled = WIDTH * done // total
        bar = "#" * filled + "." * (WIDTH - filled)
        self._stream.write(f"\r[{bar}] {done}/{total} files")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")  # back to the line start, and clear it
            self._stream.flush()
            self._shown = False


def progress_bar(stream: TextIO, human_output: bool) -> ProgressBar | None:
    """A bar for this run, or None where none belongs (not a terminal, machine output)."""
    if not human_output or not is_terminal(stream):
        return None
    return ProgressBar(stream, PROGRESS_THRESHOLD)
