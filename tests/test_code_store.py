"""What a process compiles at start-up, kept on disk (`xlalint/code_store.py`): the
dataclasses' classes are the ones their own compile makes, function for function, whether
the file is missing, read back, corrupt or cannot be written; a process that finds every
text compiles none; the command line holds the store for its whole process; the programs
of expressions compiled at import are `re`'s own, and no other expression is kept."""

from __future__ import annotations

import _sre
import json
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import BAD, ROOT

from xlalint import code_store

# libcst's node classes and xlalint's engine (its own dataclasses), described method by
# method, and how many texts were compiled from source while they were made.
DUMP = """
import builtins, dataclasses, json, sys
compiled = []
real_compile = builtins.compile
def counting(source, filename, *args, **kwargs):
    if filename == "<string>" and str(source).startswith("def __create_fn__("):
        compiled.append(source)
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting
if sys.argv[1] == "store":
    from xlalint.cst_import import import_libcst
    import_libcst()
import libcst
import xlalint.engine
builtins.compile = real_compile
from libcst._nodes.base import CSTNode

def described(function):
    code = function.__code__
    return [
        function.__qualname__, function.__module__, code.co_code.hex(), repr(code.co_consts),
        code.co_names, code.co_varnames, code.co_freevars, code.co_filename, code.co_name,
        code.co_qualname, code.co_firstlineno, code.co_linetable.hex(),
        repr(function.__annotations__), repr(function.__defaults__),
        repr(function.__kwdefaults__), code.co_flags,
        sorted(function.__globals__)[:3], function.__globals__["__name__"],
    ]

found = {}
pending = [CSTNode]
while pending:
    cls = pending.pop()
    pending.extend(cls.__subclasses__())
    for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__"):
        function = vars(cls).get(name)
        code = getattr(function, "__code__", None)
        if code is not None and code.co_filename == "<string>":  # written by `dataclasses`
            found[f"{cls.__module__}.{cls.__qualname__}.{name}"] = described(function)
print(json.dumps({"found": found, "compiled": len(compiled), "exec": hasattr(dataclasses, "exec")}))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLALINT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _dump(how: str, **env: str) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", DUMP, how],
        capture_output=True,
        text=True,
        check=True,
        env=_env(**env),
    )
    return json.loads(run.stdout)


def _own_compile(pattern: str | bytes, flags: int) -> re.Pattern[Any]:
    """`re`'s own compile (this process may hold the store: the command line's import)."""
    own = code_store._re_compile or re._compiler.compile  # type: ignore[attr-defined]
    return own(pattern, flags)  # type: ignore[no-any-return]


def _entries(path: Path) -> dict[Any, Any]:
    """The file's entries, each read (the file holds each marshalled on its own)."""
    return {key: marshal.loads(entry) for key, entry in code_store._read(path).items()}


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.marshal")) if folder.is_dir() else []


@pytest.fixture(scope="module")
def plain() -> dict[str, object]:
    return _dump("plain", XLALINT_NO_CODE_CACHE="1")


def test_written_then_read_back(tmp_path: Path, plain: dict[str, object]) -> None:
    folder = tmp_path / "codes"
    first = _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))
    assert len(_files(folder)) == 1
    second = _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))
    assert len(plain["found"]) > 400  # type: ignore[arg-type]
    assert first["found"] == plain["found"]
    assert second["found"] == plain["found"]
    assert not first["exec"] and not second["exec"]  # `dataclasses` is left as it was
    # The first compiles each distinct text of libcst's once (`dataclasses`' own `exec`
    # compiles each of the >400 again, uncounted here), the second none of them.
    assert first["compiled"] > 400  # type: ignore[operator]
    assert second["compiled"] == 0
    # (xlalint.engine's own dataclasses are made after libcst's import by `dataclasses`' own
    # `exec` through the API; the command line's process holds the store for them too.)


def test_a_corrupt_file_is_read_as_empty_and_written_again(
    tmp_path: Path, plain: dict[str, object]
) -> None:
    folder = tmp_path / "codes"
    _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))
    (path,) = _files(folder)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    again = _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))
    assert again["found"] == plain["found"]
    assert code_store._read(path)  # written whole again
    path.write_bytes(b"not a marshal file")
    assert _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))["found"] == plain["found"]
    assert code_store._read(tmp_path / "missing.marshal") == {}


def test_an_unwritable_folder_compiles_as_dataclasses_would(
    tmp_path: Path, plain: dict[str, object]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    folder = blocker / "codes"  # under a file: mkdir fails
    first = _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))
    assert first["found"] == plain["found"]
    assert not folder.exists()


def test_switched_off(tmp_path: Path, plain: dict[str, object]) -> None:
    folder = tmp_path / "codes"
    off = _dump("store", XLALINT_CODE_CACHE_DIR=str(folder), XLALINT_NO_CODE_CACHE="1")
    assert off["found"] == plain["found"]
    assert not folder.exists()


CLI = """
import builtins, sys
compiled = []
real_compile = builtins.compile
def counting(source, filename, *args, **kwargs):
    if filename == "<string>" and str(source).startswith("def __create_fn__("):
        compiled.append(source)
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting
from xlalint.cli import main
try:
    main.main(args=sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print("COMPILED=%d" % len(compiled), file=sys.stderr)
"""


def test_the_command_line_holds_the_store_for_its_process(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    folder = tmp_path / "codes"

    def check() -> tuple[str, int]:
        run = subprocess.run(
            [sys.executable, "-c", CLI, "check", "--no-cache", "train.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=_env(XLALINT_CODE_CACHE_DIR=str(folder)),
            check=False,
            timeout=120,
        )
        (count,) = [line for line in run.stderr.splitlines() if line.startswith("COMPILED=")]
        return run.stdout, int(count.split("=")[1])

    first, compiled_first = check()
    assert "XLA101" in first and compiled_first > 500  # libcst's texts and xlalint's
    (path,) = _files(folder)
    assert len(code_store._read(path)) >= compiled_first
    written = path.read_bytes()
    second, compiled_second = check()
    assert second == first
    assert compiled_second == 0  # every dataclass of the run, xlalint's own too
    assert path.read_bytes() == written  # nothing new: not written again
    # The expressions xlalint's modules (and libcst's, the standard library's) compile at
    # import, each program `re`'s own compile's.
    programs = {k: v for k, v in _entries(path).items() if type(k) is tuple}
    assert len(programs) > 100
    for (pattern, flags), program in programs.items():
        own = _own_compile(pattern, flags)
        made = _sre.compile(pattern, *program)
        assert made == own and made.groupindex == own.groupindex and made.groups == own.groups


def test_the_file_is_named_by_the_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(code_store.ENV_DIR, str(tmp_path))
    monkeypatch.delenv(code_store.ENV_OFF, raising=False)
    path = code_store.store_path()
    assert path is not None and path.parent == tmp_path
    assert path.name.endswith(f"-{sys.implementation.cache_tag}.marshal")
    with monkeypatch.context() as other:
        other.setattr("xlalint.__version__", "0.0.0-other")
        assert code_store.store_path() != path
    with monkeypatch.context() as other:
        other.setattr(code_store, "_libcst_version", lambda: "9.9.9")
        assert code_store.store_path() != path
    assert code_store.store_path() == path
    monkeypatch.setenv(code_store.ENV_OFF, "1")
    assert code_store.store_path() is None


def test_the_default_folder_is_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(code_store.ENV_DIR, raising=False)
    monkeypatch.delenv(code_store.ENV_OFF, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    if sys.platform not in ("win32", "darwin"):
        assert code_store.cache_folder() == Path("/somewhere/cache/xlalint/code")


def test_a_store_compiles_each_text_once(tmp_path: Path) -> None:
    store = code_store.CodeStore(tmp_path / "s.marshal")
    text = "def __create_fn__():\n    def f(self): return 1\n    return f\n"
    code = store.code(text)
    assert store.code(text) is code and store.compiled == 1
    assert code == compile(text, "<string>", "exec", dont_inherit=True)
    store.save()
    assert set(code_store._read(tmp_path / "s.marshal")) == {text}  # each entry as bytes
    again = code_store.CodeStore(tmp_path / "s.marshal")
    assert again.code(text) == code and again.compiled == 0
    assert again.code(text) is again.code(text)  # read once
    again.save()  # nothing new: not written
    # An entry that does not read back is made again, and the file written whole.
    code_store._write(tmp_path / "s.marshal", {text: b"not marshal"})
    broken = code_store.CodeStore(tmp_path / "s.marshal")
    assert broken.code(text) == code and broken.compiled == 1
    broken.save()
    assert _entries(tmp_path / "s.marshal") == {text: code}


KEPT = """
import re, sys
from pathlib import Path
from xlalint import code_store
own = re._compiler.compile
if not code_store._compiles_as_known():
    print("unknown")
    sys.exit(0)
assert code_store.install(Path(sys.argv[1]))
try:
    module = (
        "import re\\n"
        "TOP = re.compile(r'(?P<round>r[0-9]+)_kept_at_import')\\n"
        "def later(word):\\n"
        "    return re.compile(word + r'_made_at_run_time')\\n"
        "LATER = later('x25')\\n"
    )
    exec(compile(module, "<module>", "exec"), {"__name__": "kept_at_import"})
finally:
    code_store.uninstall()
assert re._compiler.compile is own
print("done")
"""


def test_expressions_compiled_at_import_are_kept(tmp_path: Path) -> None:
    """An expression a module compiles at its top level is kept, its program `re`'s own;
    one compiled inside a function (from names, at run time) is not; a kept one is read
    back as the same pattern, and `re` has its compile back after `uninstall`."""
    path = tmp_path / "store.marshal"
    run = subprocess.run(
        [sys.executable, "-c", KEPT, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    )
    if run.stdout.strip() == "unknown":
        pytest.skip("`re` compiles otherwise here")
    assert run.stdout.strip() == "done"
    programs = {k: v for k, v in _entries(path).items() if type(k) is tuple}
    assert list(programs) == [("(?P<round>r[0-9]+)_kept_at_import", 0)]
    (program,) = programs.values()
    made = _sre.compile("(?P<round>r[0-9]+)_kept_at_import", *program)
    own = _own_compile("(?P<round>r[0-9]+)_kept_at_import", 0)
    assert made == own and made.groupindex == {"round": 1}
    store = code_store.CodeStore(path)
    assert store.program("(?P<round>r[0-9]+)_kept_at_import", 0) == program
