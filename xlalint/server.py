"""`xlalint server`: a Language Server over stdio, so editors show findings as they type.

Each open Python document is linted from its in-memory text (not the file on disk) on
open, change and save, with the config found from the document's path, its
`per-file-ignores` and `force-exclude` applied and `# noqa` honoured, as
`xlalint check --stdin-filename PATH -` does. Code actions offer each finding's fix (unsafe
ones say so in their title), a `# noqa: CODE` for the finding's line, and
`source.fixAll.xlalint`, which applies every safe fix as `xlalint fix --apply` would.

Positions: xlalint counts 1-based rows and 1-based columns in characters; LSP counts
0-based lines and columns in the code units the client negotiated (UTF-16 unless it asks
otherwise). Lines break only at `\\n`, `\\r\\n` and `\\r`, as both LSP and Python break
them. Notebooks are not served: editors send their cells as separate documents.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import PositionCodec

from xlalint import __version__
from xlalint.analysis import project_modules
from xlalint.api import enabled_rules, rules_for
from xlalint.config import CONFIG_FILES, ConfigError, Settings, find_settings, line_length_for
from xlalint.diagnostics import Applicability, Diagnostic, FileError, Location
from xlalint.discovery import force_excluded
from xlalint.edits import split_lines
from xlalint.engine import lint_source
from xlalint.fixer import fix_one, fix_text
from xlalint.registry import get_rule
from xlalint.rule import DOCS_URL, Rule
from xlalint.severity import severity
from xlalint.sources import Source, is_notebook

SOURCE = "xlalint"
CHANGE_DELAY = 0.15  # seconds without a change before a changed document is linted
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # source.fixAll.xlalint
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
}
# A noqa comment that lists codes, to extend with one more code.
_NOQA_CODES = re.compile(r"#\s*noqa:\s*[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*", re.IGNORECASE)


@dataclass
class Linted:
    """One document's text as last linted, with its settings and findings."""

    version: int | None
    text: str
    path: Path
    settings: Settings
    rules: list[type[Rule]]
    findings: list[Diagnostic]
    error: FileError | None = None

    fixed: dict[Diagnostic, str | None] = field(default_factory=dict)

    def fixed_by(self, finding: Diagnostic) -> str | None:
        """The text with only `finding`'s fix applied (None: it has none that applies),
        computed once per finding: editors ask for code actions at every cursor move."""
        if finding not in self.fixed:
            try:
                self.fixed[finding] = fix_one(
                    self.text,
                    finding,
                    self.findings,
                    str(self.path),
                    self.line_length,
                )
            except Exception:  # a bug in xlalint must not take the editor's server down
                self.fixed[finding] = None
        return self.fixed[finding]

    @cached_property
    def line_length(self) -> int:
        """Read from the config files once per document version, not per code action."""
        return line_length_for(self.settings)

    @cached_property
    def fixed_all(self) -> str | None:
        """`fix_all` of this text, once: editors ask for code actions at every cursor move."""
        return fix_all(self)


def document_lines(text: str) -> list[str]:
    """The document's lines as LSP numbers them (a final empty line after a newline)."""
    lines = split_lines(text)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    return lines


def to_position(lines: Sequence[str], codec: PositionCodec, location: Location) -> types.Position:
    """xlalint's 1-based row and character column as an LSP position in client units."""
    line = location.row - 1
    if line >= len(lines):
        return types.Position(line=len(lines) - 1, character=codec.client_num_units(lines[-1]))
    text = lines[line].rstrip("\r\n")
    return types.Position(
        line=line, character=codec.client_num_units(text[: max(location.column - 1, 0)])
    )


def from_position(lines: Sequence[str], codec: PositionCodec, position: types.Position) -> Location:
    """An LSP position in client units as xlalint's 1-based row and character column."""
    if position.line >= len(lines):
        return Location(len(lines), len(lines[-1].rstrip("\r\n")) + 1)
    point = codec.position_from_client_units(lines, position)
    return Location(point.line + 1, point.character + 1)


def _offset_position(lines: Sequence[str], codec: PositionCodec, offset: int) -> types.Position:
    for index, line in enumerate(lines):
        if offset <= len(line.rstrip("\r\n")) or index == len(lines) - 1:
            return types.Position(line=index, character=codec.client_num_units(line[:offset]))
        if offset < len(line):  # inside a line ending: the next line's start
            return types.Position(line=index + 1, character=0)
        offset -= len(line)
    return types.Position(line=len(lines) - 1, character=0)


def text_edits(old: str, new: str, codec: PositionCodec) -> list[types.TextEdit]:
    """The edits that turn `old` into `new`: each changed block of lines, narrowed to the
    characters that differ, so the editor keeps its cursor and markers elsewhere."""
    old_lines, new_lines = split_lines(old), split_lines(new)
    lines = document_lines(old)
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    edits: list[types.TextEdit] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        before, after = "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2])
        prefix = _common_length(before, after)
        suffix = _common_length(before[prefix:][::-1], after[prefix:][::-1])
        start, end = starts[i1] + prefix, starts[i2] - suffix
        content = after[prefix : len(after) - suffix]
        # LSP cannot place a position between the `\r` and `\n` of a line ending.
        if old[start - 1 : start + 1] == "\r\n":
            start, content = start - 1, "\r" + content
        if old[end - 1 : end + 1] == "\r\n":
            end, content = end + 1, content + "\n"
        edits.append(
            types.TextEdit(
                range=types.Range(
                    start=_offset_position(lines, codec, start),
                    end=_offset_position(lines, codec, end),
                ),
                new_text=content,
            )
        )
    return edits


def _common_length(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def lint_document(text: str, path: Path, version: int | None) -> Linted:
    """Lint `text` as the content of `path`, as `check --stdin-filename` would."""
    settings = find_settings(path)
    rules = list(rules_for(path, tuple(enabled_rules(settings)), settings))
    linted = Linted(version, text, path, settings, rules, [])
    if force_excluded(path, settings):
        return linted
    project_modules.forget_layout()  # the project's other modules may have changed
    try:
        result = lint_source(
            text, str(path), rules, settings.hot_functions, settings.target_version
        )
    except Exception as error:  # a bug in xlalint must not take the editor's server down
        linted.error = FileError(str(path), f"internal error: {error!r}")
        return linted
    linted.findings, linted.error = result.diagnostics, result.error
    return linted


def lsp_diagnostic(
    finding: Diagnostic, lines: Sequence[str], codec: PositionCodec
) -> types.Diagnostic:
    """`finding` as the editor shows it: graded as SARIF grades it, linked to the rule's docs."""
    rule = get_rule(finding.code)
    message = finding.message if finding.hint is None else f"{finding.message}\n{finding.hint}"
    return types.Diagnostic(
        range=types.Range(
            start=to_position(lines, codec, finding.start),
            end=to_position(lines, codec, finding.end),
        ),
        message=message,
        severity=_SEVERITY[severity(rule)] if rule else types.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=types.CodeDescription(href=DOCS_URL.format(code=finding.code)),
        source=SOURCE,
        data={"fixable": finding.fix is not None},
    )


def _error_diagnostic(
    error: FileError, lines: Sequence[str], codec: PositionCodec
) -> types.Diagnostic:
    where = error.location or Location(1, 1)
    position = to_position(lines, codec, where)
    return types.Diagnostic(
        range=types.Range(start=position, end=position),
        message=f"xlalint cannot lint this file: {error.reason}",
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
    )


def noqa_edit(text: str, finding: Diagnostic, codec: PositionCodec) -> types.TextEdit:
    """Add `finding`'s code to the `# noqa` of the line that suppresses it, or end that
    line with `  # noqa: CODE`."""
    lines = document_lines(text)
    row = finding.noqa_row or finding.start.row
    line = lines[row - 1].rstrip("\r\n")
    comment = _comment_on(text, row)
    if comment is not None:
        column, body = comment
        match = _NOQA_CODES.search(body)
        if match is not None:
            at = column + match.end()
            return _replace(lines, codec, row, (at, at), f", {finding.code}")
    # Trailing blanks make way for the comment.
    return _replace(lines, codec, row, (len(line.rstrip()), len(line)), f"  # noqa: {finding.code}")


def _replace(
    lines: Sequence[str], codec: PositionCodec, row: int, span: tuple[int, int], content: str
) -> types.TextEdit:
    """Replace 0-based character columns `span` of line `row` with `content`."""
    start, end = (to_position(lines, codec, Location(row, column + 1)) for column in span)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=content)


def _comment_on(text: str, row: int) -> tuple[int, str] | None:
    """The 0-based character column and text of the comment ending line `row`."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.COMMENT and token.start[0] == row:
                return token.start[1], token.string
            if token.start[0] > row:
                break
    except (tokenize.TokenError, SyntaxError):
        pass
    return None


def code_actions(
    linted: Linted,
    uri: str,
    wanted: types.Range,
    codec: PositionCodec,
    only: Sequence[str] | None = None,
    named: Sequence[types.Diagnostic] = (),
) -> list[types.CodeAction]:
    """Quick fixes and `# noqa` for the findings touching `wanted` or `named` by the client
    (the diagnostics it shows where the user asked), and the fix-all action."""
    lines = document_lines(linted.text)
    asked = {(d.code, _range_key(d.range)) for d in named if d.source == SOURCE}
    first, last = from_position(lines, codec, wanted.start), from_position(lines, codec, wanted.end)
    actions: list[types.CodeAction] = []
    quick = only is None or any(
        types.CodeActionKind.QuickFix.value.startswith(kind) for kind in only
    )
    for finding in linted.findings if quick else ():
        diagnostic = lsp_diagnostic(finding, lines, codec)
        touches = not (finding.end < first or finding.start > last)
        if not touches and (diagnostic.code, _range_key(diagnostic.range)) not in asked:
            continue
        fixed = linted.fixed_by(finding)
        if fixed is not None and finding.fix is not None:
            unsafe = finding.fix.applicability is Applicability.UNSAFE
            title = f"{finding.code}: {finding.fix.description}" + (
                " (unsafe fix)" if unsafe else ""
            )
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=not unsafe,
                    edit=_workspace_edit(uri, linted, text_edits(linted.text, fixed, codec)),
                )
            )
        actions.append(
            types.CodeAction(
                title=f"{finding.code}: ignore on this line (# noqa: {finding.code})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=_workspace_edit(uri, linted, [noqa_edit(linted.text, finding, codec)]),
            )
        )
    if only is None or any(FIX_ALL.startswith(kind) for kind in only):
        fixed_all = linted.fixed_all
        if fixed_all is not None:
            actions.append(
                types.CodeAction(
                    title="xlalint: fix all safe findings",
                    kind=FIX_ALL,
                    edit=_workspace_edit(uri, linted, text_edits(linted.text, fixed_all, codec)),
                )
            )
    return actions


def _range_key(span: types.Range) -> tuple[int, int, int, int]:
    return (span.start.line, span.start.character, span.end.line, span.end.character)


def fix_all(linted: Linted) -> str | None:
    """The document with every safe fix applied, or None when none applies."""
    safe = Applicability.SAFE
    if not any(f.fix and f.fix.applicability is safe for f in linted.findings) or force_excluded(
        linted.path, linted.settings
    ):
        return None
    try:
        outcome = fix_text(
            Source(linted.text, linted.text.encode("utf-8", "surrogatepass"), "utf-8"),
            str(linted.path),
            linted.rules,
            hot_functions=linted.settings.hot_functions,
            line_length=linted.line_length,
            target=linted.settings.target_version,
        )
    except Exception:  # a bug in xlalint must not take the editor's server down
        return None
    return outcome.text if outcome.error is None and outcome.changed else None


def _workspace_edit(uri: str, linted: Linted, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=linted.version
                ),
                edits=list(edits),
            )
        ]
    )


class XlalintServer(LanguageServer):
    """The documents' last lint results, so code actions reuse them."""

    def __init__(self) -> None:
        super().__init__(SOURCE, __version__)
        self.linted: dict[str, Linted] = {}
        self.pending: dict[str, int] = {}  # the latest version of each changed document

    def publish_if_current(self, uri: str, version: int) -> None:
        if self.pending.get(uri) == version and uri in self.workspace.text_documents:
            del self.pending[uri]
            self.publish(uri)

    def lint(self, uri: str) -> Linted | None:
        if uri not in self.workspace.text_documents:
            return None  # not open: the editor shows no findings for it
        document = self.workspace.get_text_document(uri)
        path = Path(to_fs_path(uri) or uri)
        if document.language_id not in (None, "python") or is_notebook(path):
            return None
        cached = self.linted.get(uri)
        if (
            cached is not None
            and cached.version == document.version
            and cached.text == document.source
        ):
            return cached
        try:
            linted = lint_document(document.source, path, document.version)
        except ConfigError as error:
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"xlalint: {error}")
            )
            return None
        self.linted[uri] = linted
        return linted

    def publish(self, uri: str) -> None:
        linted = self.lint(uri)
        if linted is None:
            return
        codec = self.workspace.position_codec
        lines = document_lines(linted.text)
        diagnostics = [lsp_diagnostic(f, lines, codec) for f in linted.findings]
        if linted.error is not None:
            diagnostics.append(_error_diagnostic(linted.error, lines, codec))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=linted.version, diagnostics=diagnostics)
        )


def build_server() -> XlalintServer:
    server = XlalintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: XlalintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: XlalintServer, params: types.DidChangeTextDocumentParams) -> None:
        # Lint once typing pauses, not at every keystroke; a code action asked for in
        # between lints the current text itself.
        uri, version = params.text_document.uri, params.text_document.version
        ls.pending[uri] = version
        asyncio.get_running_loop().call_later(CHANGE_DELAY, ls.publish_if_current, uri, version)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: XlalintServer, params: types.DidSaveTextDocumentParams) -> None:
        if Path(to_fs_path(params.text_document.uri) or "").name in CONFIG_FILES:
            # A config file changed: every open document may lint differently now.
            uris = list(ls.linted)
            ls.linted.clear()
            for uri in uris:
                ls.publish(uri)
            return
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: XlalintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.pending.pop(uri, None)
        if ls.linted.pop(uri, None) is not None:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    )
    def code_action(ls: XlalintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        linted = ls.lint(params.text_document.uri)
        if linted is None:
            return []
        only = (
            [getattr(kind, "value", kind) for kind in params.context.only]
            if params.context.only
            else None
        )
        return code_actions(
            linted,
            params.text_document.uri,
            params.range,
            ls.workspace.position_codec,
            only,
            params.context.diagnostics,
        )

    return server


def serve() -> None:
    """Serve LSP over stdin and stdout until the client says exit."""
    build_server().start_io()
