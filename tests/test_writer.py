"""xlalint.writer.write_atomic: temp file + rename, mode kept, stale or read-only files left."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from xlalint import writer
from xlalint.writer import WriteError, write_atomic

OLD = b"x = t.cuda()\r\n"
NEW = b"import torch_xla\r\nx = t.to(torch_xla.device())\r\n"


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_bytes(OLD)
    return path


def test_replaces_the_bytes(target: Path) -> None:
    write_atomic(target, OLD, NEW)
    assert target.read_bytes() == NEW


def test_writes_a_new_file_and_renames_it(target: Path) -> None:
    before = target.stat().st_ino
    kept_open = target.open("rb")  # a reader of the old file keeps the old inode
    try:
        write_atomic(target, OLD, NEW)
        assert kept_open.read() == OLD
    finally:
        kept_open.close()
    assert target.stat().st_ino != before
    assert sorted(p.name for p in target.parent.iterdir()) == ["train.py"]  # no temp left


def test_renames_a_temp_file_from_the_same_folder(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        calls.append((str(src), str(dst)))
        assert Path(src).read_bytes() == NEW  # fully written before the rename
        assert target.read_bytes() == OLD
        real_replace(src, dst)

    monkeypatch.setattr(writer.os, "replace", spy)
    write_atomic(target, OLD, NEW)
    [(src, dst)] = calls
    assert Path(src).parent == target.parent
    assert Path(src).name.startswith(".train.py.")
    assert Path(dst) == target.resolve()


@pytest.mark.parametrize("mode", [0o755, 0o644, 0o600, 0o640, 0o775])
def test_keeps_the_file_mode(target: Path, mode: int) -> None:
    target.chmod(mode)
    write_atomic(target, OLD, NEW)
    assert mode_of(target) == mode
    assert target.read_bytes() == NEW


def test_changed_on_disk_is_not_overwritten(target: Path) -> None:
    target.write_bytes(b"edited = True\n")
    mtime = target.stat().st_mtime_ns
    with pytest.raises(WriteError, match="changed on disk"):
        write_atomic(target, OLD, NEW)  # `OLD` is what the fixer read: stale now
    assert target.read_bytes() == b"edited = True\n"
    assert target.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in target.parent.iterdir()) == ["train.py"]


def test_file_that_already_has_the_content_is_left_alone(target: Path) -> None:
    # E.g. written a moment ago through a symbolic link to it: nothing to do, no error.
    target.write_bytes(NEW)
    before = target.stat()
    write_atomic(target, OLD, NEW)
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert target.read_bytes() == NEW


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="cannot read it back"):
        write_atomic(tmp_path / "gone.py", OLD, NEW)
    assert not (tmp_path / "gone.py").exists()


def test_read_only_is_not_written(target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whoever runs the test (root can write anything), a file the OS reports as not
    # writable is left alone.
    target.chmod(0o444)
    checked: list[tuple[str, int]] = []

    def access(path: object, mode: int) -> bool:
        checked.append((str(path), mode))
        return False

    monkeypatch.setattr(writer.os, "access", access)
    with pytest.raises(WriteError, match="read-only; not written"):
        write_atomic(target, OLD, NEW)
    assert checked == [(str(target), os.W_OK)]
    assert target.read_bytes() == OLD
    assert mode_of(target) == 0o444


def test_read_only_for_real(target: Path) -> None:
    target.chmod(0o444)
    try:
        if os.access(target, os.W_OK):  # root: the OS lets us write, and so does xlalint
            write_atomic(target, OLD, NEW)
            assert target.read_bytes() == NEW
        else:
            with pytest.raises(WriteError, match="read-only"):
                write_atomic(target, OLD, NEW)
            assert target.read_bytes() == OLD
        assert mode_of(target) == 0o444  # either way, the mode is unchanged
    finally:
        target.chmod(0o644)


def test_folder_without_room_for_a_temp_file(target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # the writer imports it when it writes
    with pytest.raises(WriteError, match="could not be written: Permission denied"):
        write_atomic(target, OLD, NEW)
    assert target.read_bytes() == OLD


def test_read_only_folder_for_real(target: Path) -> None:
    folder = target.parent
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):  # root
            write_atomic(target, OLD, NEW)
            assert target.read_bytes() == NEW
        else:
            with pytest.raises(WriteError, match="could not be written"):
                write_atomic(target, OLD, NEW)
            assert target.read_bytes() == OLD
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("failing", ["replace", "chmod"])
def test_failure_leaves_the_old_file_and_no_temp(
    target: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, failing, fail)
    with pytest.raises(WriteError, match="could not be written: No space left on device"):
        write_atomic(target, OLD, NEW)
    assert target.read_bytes() == OLD
    assert sorted(p.name for p in target.parent.iterdir()) == ["train.py"]


def test_failure_while_writing_the_temp_file(target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle: int, mode: str) -> None:
            self._stream = real_fdopen(handle, mode)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self._stream.close()

        def write(self, data: bytes) -> int:
            self._stream.write(data[:3])  # half written, then the disk is full
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "fdopen", Full)
    with pytest.raises(WriteError, match="No space left"):
        write_atomic(target, OLD, NEW)
    assert target.read_bytes() == OLD  # never half of each
    assert sorted(p.name for p in target.parent.iterdir()) == ["train.py"]


def test_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_bytes(OLD)
    real.chmod(0o750)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_atomic(link, OLD, NEW)
    assert link.is_symlink()
    assert real.read_bytes() == NEW
    assert mode_of(real) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "real.py"]
