"""Adding the imports fixes need and removing those fixes made unused: the one place that
writes import statements into a file.

New imports go where an isort-style sort puts them in the file's import block (merged into
an existing `from` import of the same module), in the file's line ending. An import that
would rebind a name the file imports as something else is a conflict, and the fix that
needs it is not applied. Only imports a round of fixes made unused are removed
(`analysis/usage.py` says which); the last import of torch_xla stays.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.imports import ImportTable, statement_bindings
from xlalint.analysis.usage import ImportBinding, made_unused, mentioned_names, unused_bindings
from xlalint.cst_parse import parse_module
from xlalint.diagnostics import Edit, Location
from xlalint.edits import LINE_BREAK, apply_edits, newline_of, split_lines
from xlalint.positions import focused_positions

_STDLIB_MODULES = frozenset(getattr(sys, "stdlib_module_names", ()))  # Python 3.10+


class ParsedTexts:
    """libcst's trees of the texts that the fixer's runs over one file meet, and the names
    each mentions, so that each text is parsed (and read for names) once: a round's text
    is met for its unused imports, as "before" of its fixes and by the parse guard of the
    text it makes, which is the next round's "before"; the forecast's unsafe run meets the
    texts of its safe run again. Texts that do not parse raise their error each time."""

    def __init__(self) -> None:
        self._modules: dict[str, cst.Module | Exception] = {}
        self._names: dict[int, set[str]] = {}  # by id of a module held in `_modules`

    def module(self, text: str) -> cst.Module:
        found = self._modules.get(text)
        if found is None:
            try:
                found = parse_module(text)
            except (cst.ParserSyntaxError, RecursionError) as error:
                found = error
            self._modules[text] = found
        if isinstance(found, Exception):
            raise found
        return found

    def lend(self, text: str, module: cst.Module) -> None:
        """Take `module` as the tree of `text`: the lint that parsed the whole text for
        `check` lends it to the closing forecast's fixer, which would parse it again."""
        self._modules.setdefault(text, module)

    def known(self, text: str) -> cst.Module | None:
        """The tree of `text` if this memo parsed it already (None otherwise, parsing
        nothing): the fixer's lint of a text its parse guard read takes that tree rather
        than parsing the text again."""
        found = self._modules.get(text)
        return found if isinstance(found, cst.Module) else None

    def mentioned(self, module: cst.Module) -> set[str]:
        """`usage.mentioned_names` of a module this memo parsed."""
        names = self._names.get(id(module))
        if names is None:
            names = self._names[id(module)] = mentioned_names(module)
        return names


def add_imports(text: str, statements: Iterable[str], parsed: ParsedTexts | None = None) -> str:
    """Add each import statement the file does not already have, after its last top-level
    import (or its docstring and `__future__` imports), in the file's line ending."""
    wanted = list(dict.fromkeys(statements))
    if not wanted:
        return text
    parsed = parsed or ParsedTexts()
    module = parsed.module(text)
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
        text = _insert_sorted(text, statement, parsed)
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


def _insert_sorted(text: str, statement: str, texts: ParsedTexts) -> str:
    """`text` with the one-line import `statement` where a sort of the imports puts it."""
    entries = _import_block(texts.module(text))
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


def left_unused(text: str, parsed: ParsedTexts | None = None) -> set[tuple[str, str]]:
    """The module-level imports `text` leaves unused, as (name, target): fixes never remove
    them, even where a later round stops using them again."""
    parsed = parsed or ParsedTexts()
    module = parsed.module(text)
    return unused_bindings(module, parsed.mentioned(module))


def import_bindings(text: str, parsed: ParsedTexts | None = None) -> dict[str, str]:
    """The names `text` imports at module level (under `try:` and `if` too), and what to."""
    table = ImportTable()
    table.add_top_level((parsed or ParsedTexts()).module(text))
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
    before: str,
    after: str,
    filename: str = "",
    keep: Collection[tuple[str, str]] = (),
    parsed: ParsedTexts | None = None,
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
    parsed = parsed or ParsedTexts()
    after_module = parsed.module(after)
    unused = made_unused(parsed.module(before), after_module, filename, parsed.mentioned)
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
    statements = [module.body[index] for index in by_statement]
    positions = focused_positions(module, text, statements=statements)
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
