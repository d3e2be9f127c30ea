"""The files module: owner-only folders and atomic owner-only writes whatever
the umask, nothing left behind on failure, and errors that name the file."""
from __future__ import annotations

import errno
import os
import stat

import pytest

from ensemble_deid.errors import EnsembleDeidError, printable
from ensemble_deid.files import (
    FileWriteError,
    atomic_private_file,
    private_dir,
    private_temp_file,
    write_private,
    write_private_json,
)


@pytest.fixture
def open_umask():
    old = os.umask(0)
    yield
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_folders_and_files_are_owner_only_under_umask_000(tmp_path, open_umask):
    folder = private_dir(tmp_path / "a" / "b" / "c")
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    path = write_private(folder / "x.txt", "text")
    assert _mode(path) == 0o600 and path.read_text() == "text"
    write_private_json(folder / "y.json", {"b": 1, "a": 2})
    assert (folder / "y.json").read_text() == '{\n  "a": 2,\n  "b": 1\n}\n'
    with atomic_private_file(folder / "z.bin") as fh:
        fh.write(b"\x00\x01")
    assert _mode(folder / "z.bin") == 0o600
    fd, name = private_temp_file("t-", directory=folder)
    os.close(fd)
    assert _mode(name) == 0o600
    assert sorted(os.listdir(folder)) == sorted(["x.txt", "y.json", "z.bin", os.path.basename(name)])


def test_existing_folders_are_tightened_only_below_a_managed_root(tmp_path, open_umask):
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    (home / "ws" / "sub").mkdir(parents=True)
    os.chmod(home / "ws", 0o777)
    os.chmod(home / "ws" / "sub", 0o777)
    private_dir(home / "ws" / "sub")
    assert _mode(home / "ws" / "sub") == 0o777  # not ours to manage
    private_dir(home / "ws" / "sub" / "new", root=home / "ws")
    assert [_mode(home / p) for p in ("ws", "ws/sub", "ws/sub/new")] == [0o700] * 3
    assert _mode(home) == 0o755


def test_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path):
    path = write_private(tmp_path / "report.md", "old")

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with atomic_private_file(path) as fh:
            fh.write(b"half")
            raise Boom
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.md"]


def test_disk_full_is_an_error_naming_the_file(tmp_path, monkeypatch):
    path = write_private(tmp_path / "report.md", "old")
    real_fdopen = os.fdopen

    class FullFile:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: FullFile(real_fdopen(fd, *a, **k)))
    with pytest.raises(FileWriteError) as info:
        write_private(path, "new content")
    assert isinstance(info.value, EnsembleDeidError)
    assert str(info.value) == f"cannot write {path}: no space left on the device"
    assert "new content" not in str(info.value)
    monkeypatch.undo()
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["report.md"]


def test_missing_folder_and_file_in_the_way_are_named(tmp_path):
    with pytest.raises(FileWriteError, match="nope/x.txt: the folder does not exist"):
        write_private(tmp_path / "nope" / "x.txt", "a")
    (tmp_path / "plain").write_text("x")
    with pytest.raises(FileWriteError, match="plain: exists and is not a folder"):
        private_dir(tmp_path / "plain")
    with pytest.raises(FileWriteError, match="a part of the path is a file"):
        private_dir(tmp_path / "plain" / "sub")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_permission_denied_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        with pytest.raises(FileWriteError, match="locked/x: permission denied"):
            write_private(locked / "x", "a")
    finally:
        os.chmod(locked, 0o700)


def test_printable_escapes_control_characters_and_bad_bytes():
    assert printable("plain name.xml") == "plain name.xml"
    assert printable("a\nb\x1b[31m.xml") == "a\\nb\\x1b[31m.xml"
    assert printable(os.fsdecode(b"caf\xe9.xml")) == "caf\\udce9.xml"
    assert printable(b"x\ty") == "x\\ty"
