"""Jupyter notebooks (`.ipynb`): lint and fix the code cells as one module.

A notebook runs its cells in order in one namespace, so an import in cell 1 serves cell 5
and a training loop may span cells: the code cells are joined, in order, into one virtual
module, with a boundary comment between cells and a map from virtual rows back to cell
numbers (1-based over all cells, markdown included, as ruff counts) and rows in the cell.

IPython syntax is not Python: line magics (`%time`), shell lines (`!pip install`), help
(`obj?`) and assignments from them (`files = !ls`) are masked line for line (a comment, or
`pass` at the line's own indent inside a block), so rows and columns stay exact. A cell
magic keeps its body when the body is Python run in this namespace (`%%time`, `%%capture`,
...); any other (`%%bash`, `%%writefile`) masks the whole cell.

Fixes run on the virtual module; the result is split back at the boundaries, masked lines
are restored, and only the changed cells' `source` changes: outputs, metadata and cell ids
stay as they were. The notebook is written back in its own JSON style (indent, ASCII
escaping, key order, final newline) when that style reproduces the original bytes, so
untouched cells are byte-identical; otherwise in nbformat's standard style. The result is
validated against the nbformat 4 schema before it is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from xlalint.analysis.xla_api import LATEST, Release
from xlalint.diagnostics import Diagnostic, Edit, FileError, FileResult, Location
from xlalint.rule import Rule
from xlalint.sources import Source, SourceError

if TYPE_CHECKING:  # the engine and the fixer (libcst) are imported where cells are linted
    from xlalint.fixer import FixOutcome

# Markers carry a digest of the notebook, so no line of its own can look like one.
BOUNDARY = "# %% xlalint: next cell {tag}"
_MARK = "xlalint-masked-{tag}-"
# Cell magics whose body is Python run in the notebook's own namespace.
PYTHON_CELL_MAGICS = frozenset(
    {"time", "timeit", "capture", "prun", "debug", "python", "python3", "ipython"}
)
_MAGIC = re.compile(
    r"""^\s*(
        [%!?]                      # %line_magic, !shell, ?help
      | [\w.]+\?{1,2}\s*$          # obj? / obj??
      | [\w.,\s\[\]()*]+=\s*[%!]   # files = !ls, t = %timeit f()
    )""",
    re.VERBOSE,
)
_SYNTAX_AT = re.compile(r"syntax error at (\d+):(\d+)")
_DROPPED = re.compile(r"(\S+) at (\d+):(\d+)")
_INNER_POSITION = re.compile(r"(?:parser error: )?error at \d+:\d+: ")


@dataclass(frozen=True)
class _Span:
    cell: int  # 1-based over all cells
    first_row: int  # the cell's first row in the virtual module (1-based)
    rows: int  # the cell's line count in the virtual module
    added_newline: bool = False  # the cell's source lacks a final newline


@dataclass
class VirtualModule:
    """The code cells as one module, with the way back to cells."""

    text: str
    spans: list[_Span]
    masked: list[str]  # original lines, by mask number
    tag: str  # the notebook's digest, in the boundary and mask markers

    @property
    def boundary(self) -> str:
        return BOUNDARY.format(tag=self.tag)

    def locate(self, row: int) -> tuple[int, int]:
        """(cell, row in cell) of a virtual row; a boundary row counts as its cell's next."""
        for span in reversed(self.spans):
            if row >= span.first_row:
                return span.cell, row - span.first_row + 1
        return self.spans[0].cell if self.spans else 1, row

    def _location(self, location: Location) -> Location:
        return Location(self.locate(location.row)[1], location.column)

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        """`d` with cell-relative positions."""
        cell = self.locate(d.start.row)[0]
        fix = None
        if d.fix is not None:
            edits = tuple(
                Edit(self._location(e.start), self._location(e.end), e.content) for e in d.fix.edits
            )
            fix = replace(d.fix, edits=edits)
        return replace(
            d,
            cell=cell,
            start=self._location(d.start),
            end=self._location(d.end),
            fix=fix,
            noqa_row=None if d.noqa_row is None else self.locate(d.noqa_row)[1],
        )

    def reason(self, reason: str) -> str:
        """A lint error's reason with its virtual position given as cell, row, column."""

        def cell_position(match: re.Match[str]) -> str:
            cell, row = self.locate(int(match.group(1)))
            return f"syntax error at cell {cell}:{row}:{match.group(2)}"

        # libcst's message repeats the virtual position; the cell position says it.
        return _INNER_POSITION.sub("", _SYNTAX_AT.sub(cell_position, reason))

    def dropped(self, entry: str) -> str:
        """A dropped fix's `CODE at row:col` with its position given as cell, row, column."""
        match = _DROPPED.fullmatch(entry)
        if match is None:
            return entry
        cell, row = self.locate(int(match.group(2)))
        return f"{match.group(1)} at cell {cell}:{row}:{match.group(3)}"

    def result(self, result: FileResult) -> FileResult:
        error = result.error
        if error is not None:
            location = error.location and self._location(error.location)
            error = FileError(error.filename, self.reason(error.reason), location)
        return FileResult(result.filename, [self.diagnostic(d) for d in result.diagnostics], error)

    def split(self, text: str) -> list[str]:
        """The cells' sources from a (fixed) virtual text; ValueError if the boundaries did
        not survive."""
        lines = text.splitlines(keepends=True)
        cells: list[list[str]] = [[]]
        for line in lines:
            if line.rstrip("\r\n") == self.boundary:
                cells.append([])
            else:
                cells[-1].append(line)
        if len(cells) != len(self.spans):
            raise ValueError("the fixes moved code across cells")
        sources = []
        for span, cell in zip(self.spans, cells, strict=True):
            source = "".join(self._unmask(line) for line in cell)
            if span.added_newline and source.endswith("\n"):
                source = source[:-1]
            sources.append(source)
        return sources

    def rebased(self, text: str) -> VirtualModule:
        """The same cells over `text`, an edited version of this module's text."""
        spans = []
        row = first = 1
        index = 0
        for row, line in enumerate(text.splitlines(), start=1):
            if line == self.boundary and index + 1 < len(self.spans):
                old = self.spans[index]
                spans.append(_Span(old.cell, first, row - first, old.added_newline))
                first, index = row + 1, index + 1
        old = self.spans[index]
        spans.append(_Span(old.cell, first, max(0, row - first + 1), old.added_newline))
        spans.extend(self.spans[index + 1 :])
        return VirtualModule(text, spans, self.masked, self.tag)

    def _unmask(self, line: str) -> str:
        body = line.rstrip("\r\n")
        match = re.search(rf"#{_MARK.format(tag=self.tag)}(\d+)$", body)
        if match is None:
            return line
        return self.masked[int(match.group(1))] + line[len(body) :]


class Notebook:
    """A parsed `.ipynb` file: its JSON, its code cells, and how it was written."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        try:
            self.data: dict[str, Any] = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise SourceError(f"notebook is not valid UTF-8 (byte {error.start})") from None
        except json.JSONDecodeError as error:
            raise SourceError(
                f"not a notebook: invalid JSON at line {error.lineno}, column {error.colno}"
            ) from None
        if not isinstance(self.data, dict) or not isinstance(self.data.get("cells"), list):
            raise SourceError("not a notebook: no `cells` list")
        if self.data.get("nbformat") != 4:
            raise SourceError(
                f"nbformat {self.data.get('nbformat')} notebooks are not supported; "
                "convert it with `jupyter nbconvert --to notebook --nbformat 4`"
            )

    @property
    def is_python(self) -> bool:
        metadata = self.data.get("metadata") or {}
        language = (metadata.get("language_info") or {}).get("name") or (
            metadata.get("kernelspec") or {}
        ).get("language")
        return language is None or str(language).lower() == "python"

    def code_cells(self) -> list[tuple[int, str]]:
        """(1-based cell number, source) of each code cell, in order."""
        if not self.is_python:
            return []
        cells = []
        for number, cell in enumerate(self.data["cells"], start=1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                cells.append((number, _source_text(cell.get("source", ""))))
        return cells

    def virtual(self) -> VirtualModule:
        parts: list[str] = []
        spans: list[_Span] = []
        masked: list[str] = []
        tag = hashlib.blake2b(self.raw, digest_size=6).hexdigest()
        boundary = BOUNDARY.format(tag=tag)
        row = 1
        for index, (number, source) in enumerate(self.code_cells()):
            if index:
                parts.append(boundary + "\n")
                row += 1
            added = not source.endswith("\n")
            text = _mask(source + "\n" if added else source, masked, _MARK.format(tag=tag))
            count = text.count("\n")
            spans.append(_Span(number, row, count, added))
            parts.append(text)
            row += count
        return VirtualModule("".join(parts), spans, masked, tag)

    def with_sources(self, sources: Sequence[str]) -> bytes:
        """The notebook with its code cells' sources replaced, in its own JSON style."""
        import copy  # only fixes copy a notebook

        data = copy.deepcopy(self.data)
        numbers = [number for number, _ in self.code_cells()]
        for number, source in zip(numbers, sources, strict=True):
            cell = data["cells"][number - 1]
            old = cell.get("source", "")
            if _source_text(old) == source:
                continue
            cell["source"] = source.splitlines(keepends=True) if isinstance(old, list) else source
        return self._dumps(data)

    def _dumps(self, data: dict[str, Any]) -> bytes:
        import nbformat  # only fixes need it: validation and the standard style

        nbformat.validate(nbformat.from_dict(data))
        text = self.raw.decode("utf-8")
        for style in _styles(text):
            dumped = json.dumps(self.data, **style)
            if text.startswith(dumped) and not text[len(dumped) :].strip():
                return (json.dumps(data, **style) + text[len(dumped) :]).encode("utf-8")
        return nbformat.writes(nbformat.from_dict(data)).encode("utf-8")


def _styles(text: str) -> Iterator[dict[str, Any]]:
    """json.dumps settings that may have written `text`: its own indent first (read from
    its second line), then the common ones; ASCII escaping or not; compact or not."""
    second = text.split("\n", 2)[1] if text.count("\n") >= 1 else ""
    own = len(second) - len(second.lstrip(" "))
    indents: list[int | str | None] = [own] if own else []
    if second.startswith("\t"):
        indents.append("\t")
    indents += [1, 2, 4, None]
    for indent in dict.fromkeys(indents):
        separators = [(",", ": ")] if indent is not None else [(", ", ": "), (",", ":")]
        for separator in separators:
            for ensure_ascii in (False, True):
                yield {"indent": indent, "separators": separator, "ensure_ascii": ensure_ascii}


def _source_text(source: object) -> str:
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return str(source)


def _mask(text: str, masked: list[str], mark: str) -> str:
    """`text` with IPython-only lines replaced, line for line, by Python that does nothing;
    the originals are appended to `masked` (the replacement names its index)."""
    lines = text.splitlines(keepends=True)
    whole_cell = False
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""
        whole_cell = magic not in PYTHON_CELL_MAGICS
    out = []
    continued = False
    for index, line in enumerate(lines):
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        if whole_cell or continued or (index == 0 and first.startswith("%%")):
            replacement = f"#{mark}{len(masked)}"
        elif _MAGIC.match(body):
            # In a block, `pass` keeps the block valid; at the top a comment, so that the
            # imports a fix adds go below a leading `!pip install`, as a comment header.
            indent = body[: len(body) - len(body.lstrip())]
            statement = "pass  " if indent else ""
            replacement = f"{indent}{statement}#{mark}{len(masked)}"
        else:
            out.append(line)
            continued = False
            continue
        masked.append(body)
        out.append(replacement + ending)
        continued = body.endswith("\\")
    return "".join(out)


def changed_cells(before: str, after: str) -> list[tuple[int, str, str]]:
    """(cell number, old source, new source) of each cell whose source differs between two
    versions of a notebook's JSON text, for diffs shown cell by cell."""
    old_cells = json.loads(before).get("cells", [])
    new_cells = json.loads(after).get("cells", [])
    return [
        (number, _source_text(old.get("source", "")), _source_text(new.get("source", "")))
        for number, (old, new) in enumerate(zip(old_cells, new_cells, strict=False), start=1)
        if old.get("source") != new.get("source")
    ]


def cell_lines(raw: bytes, cell: int) -> list[str]:
    """The lines of cell `cell` (1-based over all cells), for quoting a finding."""
    try:
        cells = Notebook(raw).data["cells"]
        return _source_text(cells[cell - 1].get("source", "")).splitlines()
    except (SourceError, IndexError, AttributeError):
        return []


def lint_notebook(
    raw: bytes,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    target: Release = LATEST,
) -> FileResult:
    """Lint a notebook's code cells; positions are cell-relative. Raises SourceError."""
    module = Notebook(raw).virtual()
    if not module.spans:
        return FileResult(filename)
    from xlalint.engine import lint_source

    return module.result(lint_source(module.text, filename, rules, hot_functions, target))


def fix_notebook(
    raw: bytes,
    filename: str,
    rules: Sequence[type[Rule]],
    *,
    unsafe: bool = False,
    hot_functions: Sequence[str] = (),
    line_length: int | None = None,
    target: Release = LATEST,
) -> FixOutcome:
    """Fix a notebook's code cells; the outcome's text is the notebook's new JSON."""
    from xlalint.fixer import FixOutcome, fix_text

    notebook = Notebook(raw)
    original = Source(raw.decode("utf-8"), raw, "utf-8")
    module = notebook.virtual()
    if not module.spans:
        return FixOutcome(filename, original, original.text)
    virtual = Source(module.text, module.text.encode("utf-8"), "utf-8")
    fixed = fix_text(
        virtual,
        filename,
        rules,
        unsafe=unsafe,
        hot_functions=hot_functions,
        line_length=line_length,
        target=target,
    )
    after = module.rebased(fixed.text)
    outcome = FixOutcome(
        filename,
        original,
        original.text,
        applied=fixed.applied,
        remaining=[after.diagnostic(d) for d in fixed.remaining],
        found=[module.diagnostic(d) for d in fixed.found],
        dropped=[after.dropped(entry) for entry in fixed.dropped],
        error=None if fixed.error is None else module.reason(fixed.error),
    )
    if fixed.error is not None or not fixed.changed:
        return outcome
    try:
        outcome.text = notebook.with_sources(module.split(fixed.text)).decode("utf-8")
    except Exception as error:  # e.g. nbformat's ValidationError: never write a bad file
        outcome.error = f"fixed notebook not written: {error}".splitlines()[0]
        outcome.applied.clear()
    return outcome
