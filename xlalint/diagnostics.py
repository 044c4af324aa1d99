"""The findings xlalint reports, and the fixes they carry.

Positions are 1-based lines and 1-based columns counted in characters, as in ruff's
output, so that editors and CI annotations land on the right spot.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Applicability(enum.Enum):
    """Whether a fix keeps behaviour (safe) or needs the user's judgement (unsafe)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


class FixAvailability(enum.Enum):
    """What a rule promises about fixes, shown by `xlalint rules`."""

    NONE = "none"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


@dataclass(frozen=True, order=True)
class Location:
    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations with `content`."""

    start: Location
    end: Location
    content: str


@dataclass(frozen=True)
class Fix:
    """A rewrite that resolves one finding.

    `required_imports` are module-level import statements (as source text) the edits rely on;
    the fixer adds each at most once per file. Fixes of one file with the same `group` must
    go together: the fixer applies all of them or none.
    """

    applicability: Applicability
    description: str
    edits: tuple[Edit, ...]
    required_imports: tuple[str, ...] = ()
    group: str | None = None


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    filename: str
    start: Location
    end: Location
    fix: Fix | None = None
    hint: str | None = None
    # The line a noqa comment must sit on (differs from `start.row` for findings inside
    # multi-line strings or backslash-continued lines).
    noqa_row: int | None = None
    # In a notebook, the 1-based cell (over all cells) that rows and columns count within.
    cell: int | None = None

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.filename, self.cell or 0, self.start.row, self.start.column, self.code)

    @property
    def position(self) -> str:
        """`row:col`, or `cell N:row:col` in a notebook, as shown after the file name."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{cell}{self.start.row}:{self.start.column}"


@dataclass(frozen=True)
class FileError:
    """A file xlalint could not lint, with a one-line reason a user can act on."""

    filename: str
    reason: str
    location: Location | None = None  # where a syntax error is, when the parser says


@dataclass
class FileResult:
    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
    # The other project modules the lint consulted, each with its (size, mtime_ns) then
    # (None: missing), sorted by path: the depfile a cache entry keeps and re-stats on
    # a hit. Not part of the result's value.
    deps: tuple[tuple[str, tuple[int, int] | None], ...] = field(default=(), compare=False)


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    """Whether `fix` is applied: a safe one always, an unsafe one with `--unsafe-fixes`."""
    return fix is not None and (fix.applicability is Applicability.SAFE or unsafe)
