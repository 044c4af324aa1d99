"""Applying text edits to source, adding imports the edits need, and removing those they
made unused.

Edits address text by 1-based row and 1-based character column, as diagnostics do. Only the
edited spans change: every other character (comments, blank lines, line endings) is kept.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import CodeRange

from xlalint.analysis.imports import ImportTable, statement_bindings
from xlalint.analysis.usage import ImportBinding, made_unused
from xlalint.diagnostics import Edit, Location
from xlalint.positions import Positions

# Where Python (and libcst) break lines; unlike str.splitlines, not at form feeds, \x1c-\x1e,
# \x85 or \u2028, which may sit inside comments and strings.
LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_STDLIB_MODULES = frozenset(getattr(sys, "stdlib_module_names", ()))  # Python 3.10+


def split_lines(text: str) -> list[str]:
    """`text`'s lines with their endings, broken only where Python breaks lines."""
    return _LINE.findall(text)


class _Offsets:
    """Converts (row, column) locations to string offsets."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [match.end() for match in LINE_BREAK.finditer(text)]
        self._length = len(text)

    def __call__(self, location: Location) -> int:
        row = min(max(location.row, 1), len(self._starts))
        return min(self._starts[row - 1] + location.column - 1, self._length)


def newline_of(text: str) -> str:
    """The file's line ending, so inserted lines match it."""
    crlf = text.count("\r\n")
    lf, cr = text.count("\n") - crlf, text.count("\r") - crlf
    if cr > max(crlf, lf):
        return "\r"  # old Mac line endings, which Python still reads
    return "\r\n" if crlf and crlf >= lf else "\n"


def _with_newline(content: str, newline: str) -> str:
    if newline == "\n":
        return content
    return content.replace("\r\n", "\n").replace("\n", newline)


def spans_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two edits touch the same text. An insertion at the start of another edit
    conflicts too: the order of the two would be arbitrary."""
    if a[0] < b[1] and b[0] < a[1]:
        return True
    return a[0] == b[0] and (a[0] == a[1] or b[0] == b[1])


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits (the caller guarantees they do not overlap)."""
    offsets = _Offsets(text)
    newline = newline_of(text)
    spans = sorted(
        ((offsets(e.start), offsets(e.end), e.content) for e in edits), key=lambda s: s[:2]
    )
    pieces: list[str] = []
    cursor = 0
    for start, end, content in spans:
        pieces.append(text[cursor:start])
        pieces.append(_with_newline(content, newline))
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def edit_spans(text: str, edits: Iterable[Edit]) -> list[tuple[int, int]]:
    offsets = _Offsets(text)
    return [(offsets(e.start), offsets(e.end)) for e in edits]


def add_imports(text: str, statements: Iterable[str]) -> str:
    """Add each import statement the file does not already have, after its last top-level
    import (or its docstring and `__future__` imports), in the file's line ending."""
    wanted = list(dict.fromkeys(statements))
    if not wanted:
        return text
    module = cst.parse_module(text)
    existing = ImportTable()
    existing.add_top_level(module)
    missing = [
        s
        for s in wanted
        if any(existing.bindings.get(k) != v for k, v in statement_bindings(s).items())
    ]
    if not missing:
        return text
    if not _import_block(module):
        text = _insert_lines(text, _insertion_row(module), missing[:1])
        missing = missing[1:]
    for statement in missing:
        text = _insert_sorted(text, statement)
    return text


def _insert_lines(text: str, row: int, statements: Sequence[str], blank: str = "") -> str:
    """`statements` as lines before 0-based line `row`, with a blank line `"before"` or
    `"after"` them when `blank` says so (a new section of imports)."""
    newline = newline_of(text)
    lines = split_lines(text)
    if lines and row >= len(lines) and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    block = "".join(statement + newline for statement in statements)
    block = newline + block if blank == "before" else block + newline if blank else block
    lines.insert(row, block)
    return "".join(lines)


# -- where an isort-style sort puts an import -------------------------------------------------
# Sections in order (`from __future__`, the standard library, everything else, relative
# imports), separated by blank lines; within one, `import x` lines before `from x import y`
# lines, each sorted by module name without regard to case: isort's and ruff's defaults. A
# fix's import (torch, torch_xla) joins the paragraph of the file's other third-party
# imports at its sorted place, so that a sorted file stays sorted (ruff's I001 stays quiet).

_FUTURE, _STDLIB, _THIRD_PARTY, _RELATIVE = range(4)


@dataclass(frozen=True)
class _ImportLine:
    first: int  # 0-based line of the statement itself (after its leading comments/blanks)
    end: int  # 0-based line after it
    new_paragraph: bool  # a blank line or comment above it
    key: tuple[int, int, str, str]


def _sort_key(small: cst.Import | cst.ImportFrom) -> tuple[int, int, str, str]:
    if isinstance(small, cst.Import):
        name = get_full_name_for_node(small.names[0].name) or ""
        alias = small.names[0].asname
        asname = (get_full_name_for_node(alias.name) or "") if alias else ""
        return (_section(name), 0, name.lower(), asname.lower())
    module = get_full_name_for_node(small.module) if small.module else ""
    if small.relative:
        return (_RELATIVE, 1, "." * len(small.relative) + (module or ""), "")
    return (_section(module or ""), 1, (module or "").lower(), "")


def _section(module: str) -> int:
    top = module.split(".", 1)[0]
    if top == "__future__":
        return _FUTURE
    return _STDLIB if top in _STDLIB_MODULES else _THIRD_PARTY


def _import_block(module: cst.Module) -> list[_ImportLine]:
    """The file's leading run of import statements (after its docstring)."""
    entries = []
    position = len(module.header)
    for index, statement in enumerate(module.body):
        height = len(LINE_BREAK.findall(module.code_for_node(statement)))
        small = _small(statement)
        if isinstance(small, cst.Import | cst.ImportFrom):
            assert isinstance(statement, cst.SimpleStatementLine)
            leading = len(statement.leading_lines)
            first = position + leading
            entries.append(_ImportLine(first, position + height, leading > 0, _sort_key(small)))
        elif not (index == 0 and _is_docstring(statement)):
            break
        position += height
    return entries


def _insert_sorted(text: str, statement: str) -> str:
    """`text` with the one-line import `statement` where a sort of the imports puts it."""
    entries = _import_block(cst.parse_module(text))
    parsed = cst.parse_statement(statement)
    small = _small(parsed)
    assert isinstance(small, cst.Import | cst.ImportFrom)
    key = _sort_key(small)
    if isinstance(small, cst.ImportFrom):
        for entry in entries:
            if entry.key == key and entry.end == entry.first + 1:
                merged = _merged_from_import(text, entry.first, small)
                if merged is not None:
                    return merged
    paragraphs: list[list[_ImportLine]] = []
    for entry in entries:
        if entry.new_paragraph or not paragraphs:
            paragraphs.append([])
        paragraphs[-1].append(entry)
    # The paragraph holding the imports of this section (the first, if the file has split
    # it); else a new paragraph after the sections that come before it.
    same = [p for p in paragraphs if any(e.key[0] == key[0] for e in p)]
    if not same:
        before = [p for p in paragraphs if all(e.key[0] < key[0] for e in p)]
        if before:
            return _insert_lines(text, before[-1][-1].end, [statement], blank="before")
        return _insert_lines(text, paragraphs[0][0].first, [statement], blank="after")
    paragraph = same[0]
    following = [e for e in paragraph if e.key > key]
    row = following[0].first if following else paragraph[-1].end
    return _insert_lines(text, row, [statement])


def import_bindings(text: str) -> dict[str, str]:
    """The names `text` imports at module level (under `try:` and `if` too), and what to."""
    table = ImportTable()
    table.add_top_level(cst.parse_module(text))
    return table.bindings


def import_conflicts(bound: dict[str, str], statements: Iterable[str]) -> list[str]:
    """The names that `statements` would bind to something other than what `bound` (a
    file's `import_bindings`) binds them to: adding those would break the file."""
    return [
        name
        for statement in statements
        for name, target in statement_bindings(statement).items()
        if bound.get(name, target) != target
    ]


def _insertion_row(module: cst.Module) -> int:
    """The 0-based line index before which new imports go: after the first run of imports
    (and a leading docstring), else after the file's header comments."""
    position = row = len(module.header)
    for index, statement in enumerate(module.body):
        height = len(LINE_BREAK.findall(module.code_for_node(statement)))
        if _is_import(statement) or (index == 0 and _is_docstring(statement)):
            row = position + height
        else:
            break
        position += height
    return row


def _small(statement: cst.BaseStatement) -> cst.BaseSmallStatement | None:
    if isinstance(statement, cst.SimpleStatementLine) and statement.body:
        return statement.body[0]
    return None


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(_small(statement), cst.Import | cst.ImportFrom)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    small = _small(statement)
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)


def _member_key(alias: cst.ImportAlias) -> tuple[int, str]:
    """isort's `order-by-type`: CONSTANTS, then Classes, then everything else."""
    name = get_full_name_for_node(alias.name) or ""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _merged_from_import(text: str, row: int, new: cst.ImportFrom) -> str | None:
    """`text` with the names of `new` added to the one-line `from M import ...` on 0-based
    line `row` (isort keeps one statement per module), or None if that line is not one."""
    lines = split_lines(text)
    line = lines[row]
    body = LINE_BREAK.sub("", line)
    try:
        parsed = cst.parse_statement(body + "\n")
    except cst.ParserSyntaxError:
        return None
    small = _small(parsed)
    if (
        not isinstance(small, cst.ImportFrom)
        or isinstance(small.names, cst.ImportStar)
        or isinstance(new.names, cst.ImportStar)
        or small.lpar is not None
        or len(parsed.body) != 1  # type: ignore[attr-defined]
    ):
        return None
    bare = [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in small.names]
    names = sorted([*bare, *new.names], key=_member_key)
    merged = parsed.with_changes(body=[small.with_changes(names=names)])  # type: ignore[attr-defined]
    code = cst.Module([]).code_for_node(merged)
    lines[row] = LINE_BREAK.sub("", code) + line[len(body) :]
    return "".join(lines)


# -- removing imports a fix made unused --------------------------------------------------------


def remove_unused_imports(
    before: str, after: str, filename: str = "", keep: Collection[tuple[str, str]] = ()
) -> str:
    """`after` without the module-level imports that its fixes made unused.

    `after` is `before` with fixes applied. A binding used in `before` and no longer used in
    `after` is removed (`xlalint.analysis.usage` says which, and which imports are never
    touched), unless it is in `keep`: the fixer passes the bindings the file left unused
    before any fix, which earlier rounds of fixes may have put to use. Only that alias goes
    from an import of several, the whole statement when none is left; the comments and
    blank lines above a removed statement stay. The last import of torch_xla is kept even
    if unused: importing it registers the XLA device that `torch.device("xla")` and
    `"xla"` strings rely on.
    """
    if after == before:
        return after
    after_module = cst.parse_module(after)
    unused = made_unused(cst.parse_module(before), after_module, filename)
    unused = [b for b in unused if (b.name, b.target) not in keep]
    unused = _keep_torch_xla_loaded(after_module, unused)
    if not unused:
        return after
    return apply_edits(after, _removal_edits(after, after_module, unused))


def _is_torch_xla(target: str) -> bool:
    return target == "torch_xla" or target.startswith("torch_xla.")


def _keep_torch_xla_loaded(module: cst.Module, unused: list[ImportBinding]) -> list[ImportBinding]:
    removed = [b for b in unused if _is_torch_xla(b.target)]
    if not removed:
        return unused
    table = ImportTable()
    table.add_top_level(module)  # includes imports under `try:` and `if`
    gone = {(b.name, b.target) for b in removed}
    if any(_is_torch_xla(t) and (n, t) not in gone for n, t in table.bindings.items()):
        return unused
    keep = removed[0]
    return [b for b in unused if b is not keep]


def _removal_edits(text: str, module: cst.Module, bindings: Sequence[ImportBinding]) -> list[Edit]:
    """Text edits that remove `bindings`: the lines of a statement left empty (so the
    comments and blank lines above it stay), or the rewritten imports of a statement that
    keeps some. Text edits rather than libcst's rendering of the whole module, which does
    not give back every file byte for byte (a final bare-CR line ending)."""
    by_statement: dict[int, set[tuple[int, int]]] = {}
    for binding in bindings:
        by_statement.setdefault(binding.statement, set()).add((binding.small, binding.alias))
    positions = Positions(module, text)
    lines = split_lines(text)
    edits = []
    emptied: list[list[int]] = []  # [first, last] rows of removed statements, adjacent merged
    for index, removals in sorted(by_statement.items()):
        statement = module.body[index]
        assert isinstance(statement, cst.SimpleStatementLine)
        where = positions[statement]
        kept = _without_aliases(statement, removals)
        if kept is not None:
            bare = kept.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace())
            code = module.code_for_node(bare)
            code = LINE_BREAK.sub("\n", code).removesuffix("\n")
            start = Location(where.start.line, where.start.column + 1)
            edits.append(Edit(start, Location(where.end.line, where.end.column + 1), code))
        elif emptied and emptied[-1][1] + 1 == where.start.line:
            emptied[-1][1] = where.end.line
        else:
            emptied.append([where.start.line, where.end.line])
    for first, last in emptied:
        if lines[last - 1].endswith(("\n", "\r")):
            edits.append(Edit(Location(first, 1), Location(last + 1, 1), ""))
        elif first > 1:  # the file's last line, without a line ending: keep it so
            # The text then ends where the last line left standing ends (blank lines
            # between it and the removed import go too, or the file would end in one).
            above = first - 1
            while above > 1 and not LINE_BREAK.sub("", lines[above - 1]).strip():
                above -= 1
            previous = LINE_BREAK.sub("", lines[above - 1])
            end = Location(last, len(lines[last - 1]) + 1)
            edits.append(Edit(Location(above, len(previous) + 1), end, ""))
        else:
            edits.append(Edit(Location(1, 1), Location(last, len(lines[last - 1]) + 1), ""))
    return edits


def _without_aliases(
    line: cst.SimpleStatementLine, removals: set[tuple[int, int]]
) -> cst.SimpleStatementLine | None:
    smalls: list[cst.BaseSmallStatement] = []
    for small_index, small in enumerate(line.body):
        gone = {alias for s, alias in removals if s == small_index}
        if not gone:
            smalls.append(small)
            continue
        assert isinstance(small, cst.Import | cst.ImportFrom)
        assert not isinstance(small.names, cst.ImportStar)
        names = [a for i, a in enumerate(small.names) if i not in gone]
        if not names:
            continue
        changes: dict[str, object] = {"names": names}
        if len(small.names) - 1 in gone:
            kept_last = names[-1]
            names[-1] = kept_last.with_changes(comma=_last_comma(kept_last, small.names[-1]))
            rpar = getattr(small, "rpar", None)
            if rpar is not None and not isinstance(small.names[-1].comma, cst.Comma):
                changes["rpar"] = _closing(rpar, kept_last)
        smalls.append(small.with_changes(**changes))
    if not smalls:
        return None
    smalls[-1] = smalls[-1].with_changes(semicolon=line.body[-1].semicolon)
    return line.with_changes(body=smalls)


def _last_comma(
    new_last: cst.ImportAlias, old_last: cst.ImportAlias
) -> cst.Comma | cst.MaybeSentinel:
    """The comma of the alias that becomes last when the old last one goes: none, or (in
    parentheses) a trailing comma. A comment on the new last alias's own line stays there;
    the lines up to the closing parenthesis come from the old last alias."""
    old, own = old_last.comma, new_last.comma
    if not isinstance(old, cst.Comma) or not isinstance(own, cst.Comma):
        return old
    after = old.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace) and isinstance(
        own.whitespace_after, cst.ParenthesizedWhitespace
    ):
        after = after.with_changes(first_line=own.whitespace_after.first_line)
    return own.with_changes(whitespace_after=after)


def _closing(rpar: cst.RightParen, new_last: cst.ImportAlias) -> cst.RightParen:
    """The closing parenthesis after the new last alias, when the old one had no trailing
    comma: its line's comment (in front of the parenthesis) went with it."""
    before, own = rpar.whitespace_before, new_last.comma
    if (
        isinstance(before, cst.ParenthesizedWhitespace)
        and isinstance(own, cst.Comma)
        and isinstance(own.whitespace_after, cst.ParenthesizedWhitespace)
    ):
        return rpar.with_changes(
            whitespace_before=before.with_changes(first_line=own.whitespace_after.first_line)
        )
    return rpar


# -- keeping rewritten lines within the line length --------------------------------------------


def apply_edits_marking(text: str, edits: Sequence[Edit]) -> tuple[str, set[int]]:
    """`apply_edits`, and the 1-based rows of the result that an edit wrote to."""
    offsets = _Offsets(text)
    newline = newline_of(text)
    spans = sorted(
        ((offsets(e.start), offsets(e.end), e.content) for e in edits), key=lambda s: s[:2]
    )
    pieces: list[str] = []
    written: list[tuple[int, int]] = []
    cursor = length = 0
    for start, end, content in spans:
        pieces.append(text[cursor:start])
        length += start - cursor
        new = _with_newline(content, newline)
        pieces.append(new)
        written.append((length, length + len(new)))
        length += len(new)
        cursor = end
    pieces.append(text[cursor:])
    result = "".join(pieces)
    starts = [0] + [match.end() for match in LINE_BREAK.finditer(result)]
    rows = set()
    for start, end in written:
        first = bisect_right(starts, start)
        last = bisect_right(starts, max(start, end - 1))
        rows.update(range(first, last + 1))
    return result, rows


def wrap_long_lines(text: str, rows: Iterable[int], line_length: int) -> str:
    """`text` with each of `rows` (1-based) that is longer than `line_length` wrapped as
    ruff's formatter would: the call that ends last on the line gets its arguments on an
    indented line of their own, or one a line with a trailing comma where they do not fit
    on one. Rows with no such call, or that would still not fit or not parse, stay as they
    are."""
    lines = split_lines(text)
    long_rows = sorted(
        (r for r in set(rows) if 0 < r <= len(lines) and _width(lines[r - 1]) > line_length),
        reverse=True,  # bottom up: a wrap moves only the rows below it
    )
    if not long_rows:
        return text
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return text
    positions = Positions(module, text)
    newline = newline_of(text)
    calls = [
        (positions[node], node)
        for node in positions.nodes_of(frozenset({cst.Call}))
        if node.args  # type: ignore[attr-defined]
    ]
    for row in long_rows:
        on_row = [
            (where, call) for where, call in calls if where.start.line == where.end.line == row
        ]
        if not on_row:
            continue
        # The call ending last, the outermost of those ending there: ruff's right-hand split.
        where, call = max(on_row, key=lambda item: (item[0].end.column, -item[0].start.column))
        wrapped = _wrapped_call(module, call, lines[row - 1], where, newline, line_length)
        if wrapped is None:
            continue
        candidate = "".join([*lines[: row - 1], wrapped, *lines[row:]])
        try:
            cst.parse_module(candidate)
        except (cst.ParserSyntaxError, RecursionError):
            continue
        lines = split_lines(candidate)
    return "".join(lines)


def _width(line: str) -> int:
    return len(LINE_BREAK.sub("", line))


def _wrapped_call(
    module: cst.Module, call: cst.Call, line: str, where: CodeRange, newline: str, limit: int
) -> str | None:
    """`line` with `call`'s arguments split over lines, or None if the call cannot be."""
    if any(
        isinstance(arg.comma, cst.Comma)
        and not isinstance(arg.comma.whitespace_after, cst.SimpleWhitespace)
        for arg in call.args
    ):
        return None  # a comment or line break among the arguments: not a one-line call
    body = LINE_BREAK.sub("", line)
    ending = line[len(body) :]
    start, end = where.start.column, where.end.column
    code = body[start:end]
    func = module.code_for_node(call.func)
    if not code.startswith(func) or not code.endswith(")"):
        return None
    head = body[:start] + code[: code.index("(", len(func)) + 1]
    tail = body[end - 1 :]
    indent = body[: len(body) - len(body.lstrip())]
    inner = indent + " " * 4
    arguments = [
        module.code_for_node(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip()
        for arg in call.args
    ]
    one_line = inner + ", ".join(arguments)
    if len(one_line) <= limit and not _has_trailing_comma(call):
        middle = one_line + newline
    else:  # one a line, with the trailing comma that keeps ruff's formatter from joining them
        middle = "".join(f"{inner}{argument},{newline}" for argument in arguments)
    wrapped = f"{head}{newline}{middle}{indent}{tail}"
    if any(_width(part) > limit for part in split_lines(wrapped)):
        return None  # it would still not fit (deep indentation, one long argument): leave it
    return wrapped + ending


def _has_trailing_comma(call: cst.Call) -> bool:
    return isinstance(call.args[-1].comma, cst.Comma)
