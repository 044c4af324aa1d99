"""`xlalint server`: the Language Server, spoken to over stdio as an editor would, and its
position and edit conversions checked on their own."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import PositionCodec

from xlalint.diagnostics import Location
from xlalint.server import (
    Linted,
    code_actions,
    document_lines,
    from_position,
    lint_document,
    lsp_diagnostic,
    noqa_edit,
    text_edits,
    to_position,
)

ROOT = Path(__file__).resolve().parents[1]
UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)
UTF8 = PositionCodec(types.PositionEncodingKind.Utf8)

# Line 4 holds two non-BMP characters (two UTF-16 code units each) before its finding.
SOURCE = 'import torch\n\nx = torch.ones(3).cuda()\ny = "😀😀"; z = torch.zeros(2).cuda()\n'
FIXED = (
    "import torch\nimport torch_xla\n\nx = torch.ones(3).to(torch_xla.device())\n"
    'y = "😀😀"; z = torch.zeros(2).to(torch_xla.device())\n'
)


def apply(text: str, edits: list[types.TextEdit], codec: PositionCodec = UTF16) -> str:
    """`edits` applied to `text` as an editor applies them (all ranges are the original's)."""
    lines = document_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        point = codec.position_from_client_units(lines, position)
        return starts[point.line] + point.character

    spans = sorted((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits)
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text


class Client:
    """A minimal LSP client: Content-Length framed JSON-RPC over the server's stdio."""

    def __init__(self, cwd: Path) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "xlalint", "server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            headers: dict[str, str] = {}
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            if not headers:
                self.messages.put(None)
                return
            self.messages.put(json.loads(stream.read(int(headers["content-length"]))))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"method": method, **({"params": params} if params is not None else {})})

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.next_id += 1
        self.send(
            {
                "id": self.next_id,
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )
        reply = self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def wait(self, wanted: Any) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=20)
            assert message is not None, self.process.stderr.read().decode()  # type: ignore[union-attr]
            if wanted(message):
                return message


def published(client: Client, uri: str) -> dict[str, Any]:
    message = client.wait(
        lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
    )
    return message["params"]


def test_lsp_conversation_over_stdio(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.xlalint]\nper-file-ignores = {"skip_*.py" = ["XLA301"]}\n'
    )
    path = tmp_path / "train.py"
    uri = path.as_uri()
    client = Client(tmp_path)
    try:
        result = client.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}},
        )
        capabilities = result["capabilities"]
        assert capabilities["positionEncoding"] == "utf-16"
        assert "source.fixAll.xlalint" in capabilities["codeActionProvider"]["codeActionKinds"]
        client.notify("initialized", {})

        # The buffer is linted, not the (missing) file on disk.
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}},
        )
        diagnostics = published(client, uri)["diagnostics"]
        assert [(d["code"], d["source"], d["range"]) for d in diagnostics] == [
            (
                "XLA301",
                "xlalint",
                {"start": {"line": 2, "character": 18}, "end": {"line": 2, "character": 24}},
            ),
            # Columns 30 to 36 in characters are 31 to 37 in UTF-16 units: two emoji before.
            (
                "XLA301",
                "xlalint",
                {"start": {"line": 3, "character": 31}, "end": {"line": 3, "character": 37}},
            ),
        ]
        assert diagnostics[0]["severity"] == types.DiagnosticSeverity.Error
        assert diagnostics[0]["codeDescription"]["href"].endswith("/docs/rules/XLA301.md")

        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": diagnostics[1]["range"],
                "context": {"diagnostics": [diagnostics[1]]},
            },
        )
        by_kind = {(a["kind"], a["title"].split(":")[0]): a for a in actions}
        quick = [a for a in actions if a["kind"] == "quickfix" and "noqa" not in a["title"]]
        assert len(quick) == 1 and "unsafe" not in quick[0]["title"]
        assert quick[0]["diagnostics"][0]["range"] == diagnostics[1]["range"]
        change = quick[0]["edit"]["documentChanges"][0]
        assert change["textDocument"] == {"uri": uri, "version": 1}
        edits = [
            types.TextEdit(range=_range(e["range"]), new_text=e["newText"]) for e in change["edits"]
        ]
        # Only the second finding is fixed, with the import its fix needs.
        assert apply(SOURCE, edits) == SOURCE.replace(
            "import torch\n", "import torch\nimport torch_xla\n"
        ).replace("(2).cuda()", "(2).to(torch_xla.device())")
        # The rewrite lands right after the emoji: its range is in UTF-16 units.
        assert any(e.range.start.line == 3 and e.range.start.character == 31 for e in edits)

        noqa = next(a for a in actions if "noqa" in a["title"])
        noqa_edits = noqa["edit"]["documentChanges"][0]["edits"]
        assert noqa_edits == [
            {
                "range": {
                    "start": {"line": 3, "character": 37},
                    "end": {"line": 3, "character": 37},
                },
                "newText": "  # noqa: XLA301",
            }
        ]
        fix_all = by_kind[("source.fixAll.xlalint", "xlalint")]
        all_edits = [
            types.TextEdit(range=_range(e["range"]), new_text=e["newText"])
            for e in fix_all["edit"]["documentChanges"][0]["edits"]
        ]
        assert apply(SOURCE, all_edits) == FIXED

        # A change re-lints the buffer: the applied noqa silences the second finding.
        noqa_applied = SOURCE.replace("(2).cuda()\n", "(2).cuda()  # noqa: XLA301\n")
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"text": noqa_applied}],
            },
        )
        params = published(client, uri)
        assert params["version"] == 2
        assert [d["range"]["start"]["line"] for d in params["diagnostics"]] == [2]

        # Per-file ignores apply to the document's path; save re-lints too.
        skipped = (tmp_path / "skip_me.py").as_uri()
        client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": skipped,
                    "languageId": "python",
                    "version": 1,
                    "text": SOURCE,
                }
            },
        )
        assert published(client, skipped)["diagnostics"] == []
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert len(published(client, uri)["diagnostics"]) == 1

        # Incremental changes arrive in UTF-16 units: `.cuda()` on line 2 becomes `.cpu()`.
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": 3},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": 2, "character": 18},
                            "end": {"line": 2, "character": 22},
                        },
                        "text": "cpu",
                    }
                ],
            },
        )
        assert published(client, uri)["diagnostics"] == []

        # A bad config is shown to the user, not swallowed.
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad" / "xlalint.toml").write_text("select = 3\n")
        client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": (tmp_path / "bad" / "a.py").as_uri(),
                    "languageId": "python",
                    "version": 1,
                    "text": SOURCE,
                }
            },
        )
        shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
        assert shown["type"] == types.MessageType.Error
        assert "`select` must be a list" in shown["message"]

        # A buffer that does not parse says so where the parser stopped.
        broken = (tmp_path / "broken.py").as_uri()
        client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": broken,
                    "languageId": "python",
                    "version": 1,
                    "text": "import torch\ndef f(:\n",
                }
            },
        )
        [error] = published(client, broken)["diagnostics"]
        assert error["severity"] == types.DiagnosticSeverity.Error
        assert error["message"].startswith("xlalint cannot lint this file")
        assert error["range"]["start"]["line"] == 1

        # Closing a document clears its findings.
        client.notify("textDocument/didClose", {"textDocument": {"uri": broken}})
        assert published(client, broken)["diagnostics"] == []

        assert client.request("shutdown") is None
        client.notify("exit")
        assert client.process.wait(timeout=10) == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()
            client.process.wait()


def test_server_without_its_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from xlalint.cli import main

    # As if pygls were not installed: no module of it can be imported.
    for name in [m for m in sys.modules if m == "pygls" or m.startswith("pygls.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "xlalint.server")
    result = CliRunner().invoke(main, ["server"])
    assert result.exit_code == 2
    assert "pip install 'xlalint[server]'" in result.output


def _range(raw: dict[str, Any]) -> types.Range:
    return types.Range(start=types.Position(**raw["start"]), end=types.Position(**raw["end"]))


@pytest.mark.parametrize(("codec", "character"), [(UTF16, 31), (UTF8, 35)], ids=["utf-16", "utf-8"])
def test_positions_count_the_negotiated_code_units(codec: PositionCodec, character: int) -> None:
    lines = document_lines(SOURCE)
    position = to_position(lines, codec, Location(4, 30))
    assert (position.line, position.character) == (3, character)
    assert from_position(lines, codec, position) == Location(4, 30)


def test_lines_break_only_where_python_and_lsp_break_them() -> None:
    # A form feed and U+2028 are not line breaks: the finding stays on line 2.
    text = "a = '\u2028'\x0c\nb = 1\r\nc = 2"
    lines = document_lines(text)
    assert len(lines) == 3
    assert to_position(lines, UTF16, Location(3, 5)) == types.Position(line=2, character=4)
    assert from_position(lines, UTF16, types.Position(line=5, character=0)) == Location(3, 6)


@pytest.mark.parametrize(
    "new",
    [
        FIXED,
        SOURCE.replace("😀😀", "😀x😀"),
        SOURCE + "tail",
        "",
        SOURCE.replace("\n", "\r\n"),
    ],
)
def test_text_edits_turn_the_old_text_into_the_new(new: str) -> None:
    assert apply(SOURCE, text_edits(SOURCE, new, UTF16)) == new
    assert apply(SOURCE, text_edits(SOURCE, new, UTF8), UTF8) == new


@pytest.mark.parametrize(
    ("old", "new"),
    [("a\r\nb\r\n", "a\nb\r\n"), ("a\r\nb", "a\rb"), ("x = 1\r\n", "x = 12\r\n")],
)
def test_text_edits_never_split_a_crlf(old: str, new: str) -> None:
    edits = text_edits(old, new, UTF16)
    assert apply(old, edits) == new
    lines = document_lines(old)
    for edit in edits:
        for position in (edit.range.start, edit.range.end):
            # Within the line's text or at the start of a line: never inside its ending.
            assert position.character <= len(lines[position.line].rstrip("\r\n"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x = t.cuda()", "x = t.cuda()  # noqa: XLA301"),
        ("x = t.cuda()  # noqa: XLA101", "x = t.cuda()  # noqa: XLA101, XLA301"),
        (
            "x = t.cuda()  # type: ignore  # noqa:XLA1",
            "x = t.cuda()  # type: ignore  # noqa:XLA1, XLA301",
        ),
        # Trailing blanks make way for the comment.
        ("x = t.cuda()  # keep  ", "x = t.cuda()  # keep  # noqa: XLA301"),
        ("x = t.cuda() \t", "x = t.cuda()  # noqa: XLA301"),
        # A `#` inside a string is not a comment.
        ('x = t.cuda("# noqa: XLA101")', 'x = t.cuda("# noqa: XLA101")  # noqa: XLA301'),
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r"])
def test_noqa_edit(tmp_path: Path, line: str, expected: str, newline: str) -> None:
    text = f"import torch{newline}{line}{newline}"
    linted = lint_document(text, tmp_path / "a.py", 1)
    finding = next(f for f in linted.findings if f.code == "XLA301")
    edited = apply(text, [noqa_edit(text, finding, UTF16)])
    assert edited == f"import torch{newline}{expected}{newline}"


def test_unsafe_fixes_are_titled_unsafe_and_left_out_of_fix_all(tmp_path: Path) -> None:
    text = "import torch\n\nx = torch.ones(3, dtype=torch.float16).cuda()\n"
    # XLA304 (unsafe fix) is off by default: the project's config turns it on.
    (tmp_path / "xlalint.toml").write_text('extend-select = ["XLA304"]\n')
    linted = lint_document(text, tmp_path / "a.py", 1)
    assert sorted(f.code for f in linted.findings) == ["XLA301", "XLA304"]
    line = types.Range(
        start=types.Position(line=2, character=0), end=types.Position(line=3, character=0)
    )
    actions = code_actions(linted, "file:///a.py", line, UTF16)
    fixes = {a.title: a for a in actions if a.kind == "quickfix" and "noqa" not in a.title}
    assert sorted(fixes) == [
        "XLA301: Move to the XLA device: `.to(torch_xla.device())`",
        "XLA304: Use bfloat16: `torch.bfloat16` (unsafe fix)",
    ]
    unsafe = fixes["XLA304: Use bfloat16: `torch.bfloat16` (unsafe fix)"]
    assert not unsafe.is_preferred
    assert unsafe.edit is not None and unsafe.edit.document_changes is not None
    edits = unsafe.edit.document_changes[0].edits  # type: ignore[union-attr]
    assert apply(text, edits) == text.replace("float16", "bfloat16")  # type: ignore[arg-type]
    # Fix all applies the safe fix only, as `xlalint fix --apply` does.
    fix_all = next(a for a in actions if a.kind == "source.fixAll.xlalint")
    edits = fix_all.edit.document_changes[0].edits  # type: ignore[union-attr]
    assert apply(text, edits) == (  # type: ignore[arg-type]
        "import torch\nimport torch_xla\n\n"
        "x = torch.ones(3, dtype=torch.float16).to(torch_xla.device())\n"
    )


def test_no_actions_outside_the_findings(tmp_path: Path) -> None:
    linted: Linted = lint_document(SOURCE, tmp_path / "a.py", 1)
    first_line = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=3)
    )
    actions = code_actions(linted, "file:///a.py", first_line, UTF16)
    assert [a.kind for a in actions] == ["source.fixAll.xlalint"]
    assert code_actions(linted, "file:///a.py", first_line, UTF16, only=["quickfix"]) == []


def test_a_quick_fix_imports_under_a_free_name_rather_than_rebind_one(tmp_path: Path) -> None:
    # `import torch_xla` would rebind the file's `torch_xla` (numpy): the fix takes another.
    text = "import torch\nimport numpy as torch_xla\n\nx = torch.ones(3).cuda()\n"
    linted = lint_document(text, tmp_path / "a.py", 1)
    line = types.Range(
        start=types.Position(line=3, character=0), end=types.Position(line=4, character=0)
    )
    actions = code_actions(linted, "file:///a.py", line, UTF16)
    assert [a.title for a in actions] == [
        "XLA301: Move to the XLA device: `.to(xla_torch_xla.device())`",
        "XLA301: ignore on this line (# noqa: XLA301)",
        "xlalint: fix all safe findings",
    ]
    fixed = linted.fixed_by(linted.findings[0])
    assert fixed is not None
    assert "import numpy as torch_xla\nimport torch_xla as xla_torch_xla\n" in fixed
    assert "x = torch.ones(3).to(xla_torch_xla.device())\n" in fixed


def test_a_quick_fix_brings_the_fixes_its_group_must_go_with(tmp_path: Path) -> None:
    # Wrapping the loader for the XLA device is right only with the device choice's fix.
    from test_ports import LADDER_AND_LOADER

    linted = lint_document(LADDER_AND_LOADER, tmp_path / "a.py", 1)
    loader = next(f for f in linted.findings if f.code == "XLA403")
    lines = document_lines(LADDER_AND_LOADER)
    at = lsp_diagnostic(loader, lines, UTF16).range
    actions = code_actions(linted, "file:///a.py", at, UTF16, ["quickfix"])
    [fix] = [a for a in actions if a.title.startswith("XLA403") and "noqa" not in a.title]
    assert fix.title.startswith("XLA403") and fix.title.endswith("(unsafe fix)")
    edits = fix.edit.document_changes[0].edits  # type: ignore[union-attr]
    fixed = apply(LADDER_AND_LOADER, edits)  # type: ignore[arg-type]
    assert "pl.MpDeviceLoader(DataLoader(loader, batch_size=8), torch_xla.device())" in fixed
    assert 'torch.device("xla" if importlib.util.find_spec("torch_xla") else "cuda"' in fixed


def test_actions_for_the_diagnostics_the_client_names(tmp_path: Path) -> None:
    # Editors ask with the cursor's range and the diagnostics they show there.
    linted = lint_document(SOURCE, tmp_path / "a.py", 1)
    lines = document_lines(SOURCE)
    shown = lsp_diagnostic(linted.findings[1], lines, UTF16)
    cursor = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
    )
    actions = code_actions(linted, "file:///a.py", cursor, UTF16, ["quickfix"], [shown])
    assert [a.diagnostics for a in actions] == [[shown], [shown]]
    other = types.Diagnostic(range=shown.range, message="", code="XLA301", source="another-tool")
    assert code_actions(linted, "file:///a.py", cursor, UTF16, ["quickfix"], [other]) == []
