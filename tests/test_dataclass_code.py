"""The dataclasses' generated methods' code kept on disk (`xlalint/dataclass_code.py`):
the classes are the ones their own compile makes, function for function, whether the file
is missing, read back, corrupt or cannot be written; a process that finds every text
compiles none; the command line holds the store for its whole process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BAD, ROOT

from xlalint import dataclass_code

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
    assert dataclass_code._read(path)  # written whole again
    path.write_bytes(b"not a marshal file")
    assert _dump("store", XLALINT_CODE_CACHE_DIR=str(folder))["found"] == plain["found"]
    assert dataclass_code._read(tmp_path / "missing.marshal") == {}


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
    assert len(dataclass_code._read(path)) >= compiled_first
    second, compiled_second = check()
    assert second == first
    assert compiled_second == 0  # every dataclass of the run, xlalint's own too


def test_the_file_is_named_by_the_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(dataclass_code.ENV_DIR, str(tmp_path))
    monkeypatch.delenv(dataclass_code.ENV_OFF, raising=False)
    path = dataclass_code.store_path()
    assert path is not None and path.parent == tmp_path
    assert path.name.endswith(f"-{sys.implementation.cache_tag}.marshal")
    with monkeypatch.context() as other:
        other.setattr("xlalint.__version__", "0.0.0-other")
        assert dataclass_code.store_path() != path
    with monkeypatch.context() as other:
        other.setattr(dataclass_code, "_libcst_version", lambda: "9.9.9")
        assert dataclass_code.store_path() != path
    assert dataclass_code.store_path() == path
    monkeypatch.setenv(dataclass_code.ENV_OFF, "1")
    assert dataclass_code.store_path() is None


def test_the_default_folder_is_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dataclass_code.ENV_DIR, raising=False)
    monkeypatch.delenv(dataclass_code.ENV_OFF, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    if sys.platform not in ("win32", "darwin"):
        assert dataclass_code.cache_folder() == Path("/somewhere/cache/xlalint/dataclass-code")


def test_a_store_compiles_each_text_once(tmp_path: Path) -> None:
    store = dataclass_code.CodeStore(tmp_path / "s.marshal")
    text = "def __create_fn__():\n    def f(self): return 1\n    return f\n"
    code = store.code(text)
    assert store.code(text) is code and store.compiled == 1
    assert code == compile(text, "<string>", "exec", dont_inherit=True)
    store.save()
    again = dataclass_code.CodeStore(tmp_path / "s.marshal")
    assert again.code(text) == code and again.compiled == 0
    again.save()  # nothing new: not written
