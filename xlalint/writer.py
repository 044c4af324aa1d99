"""Writing fixed files safely.

A fixed file is written to a temporary file beside it and renamed over it, so a crash
leaves either the old file or the new one, never half of each. The file's mode is kept. A
file that changed on disk since it was read, or that is read-only, is left alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


class WriteError(Exception):
    """A fixed file that was not written; the message says why."""


def write_atomic(path: Path, expected: bytes, content: bytes) -> None:
    """Replace `path`'s bytes `expected` with `content`."""
    try:
        current = path.read_bytes()
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as error:
        raise WriteError(f"cannot read it back: {error.strerror or error}") from None
    if current == content:
        return  # already done, e.g. through another name (a symbolic link) for this file
    if current != expected:
        raise WriteError("changed on disk since it was read; not overwritten")
    if not os.access(path, os.W_OK):
        raise WriteError("read-only; not written")
    target = path.resolve()  # write through a symbolic link, not over it
    try:
        replace_bytes(target, content, mode=mode)
    except OSError as error:  # e.g. a read-only folder
        raise WriteError(f"could not be written: {error.strerror or error}") from None


def replace_bytes(target: Path, content: bytes, mode: int | None = None) -> None:
    """Write `content` to a temporary file beside `target` (`mode`, if given) and rename
    it over `target`: a reader sees the old bytes or the new, never part of either, and no
    temporary file is left behind. Raises OSError (a read-only folder, a full disk)."""
    import tempfile  # only a run that writes needs it

    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
