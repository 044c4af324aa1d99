"""Read torch_xla's debug analysis (`PT_XLA_DEBUG_LEVEL=2`) into events tied to source lines.

Each compilation and each execution is logged as a block: its cause ("user code trying to
access tensor value before torch_xla.sync", "user torch_xla.sync", ...) and the Python
frames that triggered it, innermost first. The event belongs to the innermost frame in the
user's own code: not torch, torch_xla or the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

_BLOCK_START = re.compile(r"^(?P<kind>Compilation|Execution) Analysis: =+$")
_FRAME = re.compile(r"^\w+ Analysis:\s+(?P<function>\S+) \((?P<file>.+):(?P<line>\d+)\)$")
_SECTION = re.compile(r"^\w+ Analysis: (?P<title>[A-Z][\w ]+?):?\s*$")
_GRAPH_HASH = re.compile(r"^\w+ Analysis:\s+Graph Hash: (?P<hash>\w+)")
HOST_READ = "access tensor value"


@dataclass(frozen=True)
class Event:
    """One compilation or execution, where the user's code triggered it."""

    kind: str  # "compile" or "execute"
    cause: str
    file: str | None
    line: int | None
    graph_hash: str | None = None

    @property
    def host_read(self) -> bool:
        """An execution forced by reading a value on the host (`.item()`, a fallback op...)."""
        return HOST_READ in self.cause


def parse(lines: Iterable[str], is_user_file: Callable[[str], bool]) -> list[Event]:
    events: list[Event] = []
    kind: str | None = None
    cause = ""
    section = ""
    frame: tuple[str, int] | None = None
    graph_hash: str | None = None

    def close() -> None:
        if kind is not None:
            file, line = frame if frame else (None, None)
            events.append(Event(kind, cause, file, line, graph_hash))

    for raw in lines:
        text = raw.rstrip("\n")
        start = _BLOCK_START.match(text)
        if start:
            if kind is not None and section:  # the closing rule of an open block
                close()
                kind = None
                continue
            kind = "compile" if start["kind"] == "Compilation" else "execute"
            cause, section, frame, graph_hash = "", "", None, None
            continue
        if kind is None:
            continue
        if heading := _SECTION.match(text):
            section = heading["title"]
            continue
        if section == "Graph Info" and (match := _GRAPH_HASH.match(text)):
            graph_hash = match["hash"]
        elif section == "Compilation Cause" or section == "Execution Cause":
            cause = (cause + " " + text.split(":", 1)[1].strip()).strip()
        elif (
            section == "Python Frame Triggered Execution"
            and frame is None
            and (match := _FRAME.match(text))
            and is_user_file(match["file"])
        ):
            frame = (match["file"], int(match["line"]))
    return events


def user_file_filter(roots: Iterable[Path], cwd: Path) -> Callable[[str], bool]:
    """Files under the user's folders, but not installed packages inside them (a venv).

    Relative names (a frame of a script started by a relative path) are relative to `cwd`,
    the folder the script ran in.
    """
    resolved = [root.resolve() for root in roots]

    def is_user_file(name: str) -> bool:
        if "site-packages" in name or "dist-packages" in name or name.startswith("<"):
            return False
        path = (cwd / name).resolve()
        return any(path.is_relative_to(root) for root in resolved)

    return is_user_file
