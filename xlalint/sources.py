"""Reading source files into text, with errors a user can act on.

Encodings follow Python's own rules (a UTF-8 BOM or a PEP 263 coding cookie, else UTF-8),
so a file xlalint can read is exactly a file Python can import.
"""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """A file that cannot be linted; the message is one line naming the reason."""


NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: Path | str) -> bool:
    """Here, not in notebooks.py: every file asks, and a warm run imports no notebook code."""
    return str(path).endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class Source:
    text: str
    raw: bytes
    encoding: str


def decode(raw: bytes) -> Source:
    if b"\x00" in raw:
        raise SourceError("contains a null byte; not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:
        # Also raised for a file without a declaration whose first lines are not UTF-8.
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise SourceError(_not_valid("utf-8", raw, bad)) from None
        raise SourceError(f"bad coding declaration: {error.msg}") from None
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceError(_not_valid(encoding, raw, error)) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in coding declaration") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return Source(text=text, raw=raw, encoding=encoding)


def _not_valid(encoding: str, raw: bytes, error: UnicodeDecodeError) -> str:
    line = raw[: error.start].count(b"\n") + 1
    return (
        f"not valid {encoding} (byte 0x{raw[error.start]:02x} on line {line}); "
        "add a coding declaration or re-save the file as UTF-8"
    )


def read_source(path: Path) -> Source:
    return decode(read_bytes(path))


def read_bytes(path: Path) -> bytes:
    """A file's bytes, or a SourceError with a reason a user can act on."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except FileNotFoundError:
        reason = "broken symbolic link" if os.path.islink(path) else "no such file"
        raise SourceError(reason) from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as error:
        raise SourceError(error.strerror or str(error)) from None
    return raw
