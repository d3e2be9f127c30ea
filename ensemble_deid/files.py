"""Owner-only files and folders, written atomically, with errors that name the file.

Everything the toolkit writes (registry, corpora, cache, reports, plots,
temporary spills) goes through here, so three promises hold in one place:

* owner-only whatever the umask: folders 0700, files 0600 (``mkdir`` and
  ``open`` modes are masked by the umask, so modes are set explicitly);
* atomic: a file is written to a temporary file beside it and renamed into
  place; on any failure (disk full, interrupt) the temporary file is removed
  and the old file, if any, is left as it was;
* an ``OSError`` (disk full, permission denied, missing folder) becomes a
  ``FileWriteError`` naming the path and the reason, never note text.

API:

* ``private_dir(path, root=None)``: make a folder (and missing parents) 0700;
  with ``root``, also tighten the existing folders from ``path`` up to ``root``;
* ``write_private(path, data, fsync=False)`` (bytes or str),
  ``write_private_json(path, obj)``, and ``atomic_private_file(path)`` (a
  binary handle, for ``savefig`` or ``pickle.dump``): atomic, 0600;
* ``private_temp_file`` / ``private_temp_dir``: ``mkstemp`` / ``mkdtemp``;
* ``temp_files(folder, name)``: the atomic writers' temp files (a killed run's leftovers);
* ``os_error(path, exc)`` / ``reason(exc)`` for callers doing their own I/O;
* ``read_utf8(path, error)`` / ``read_json(path, error)``: the reading side,
  every failure one ``error`` (the caller's exception class) naming the file
  and the reason, never a byte of its content;
* ``folder_checksums`` / ``check_folder``: a saved model folder's files and
  their SHA-256, and the check that a folder still holds exactly them (model
  bundles, the models cv keeps); ``owner_only_tree`` tightens what a
  library's own writer left to the umask.

A hand-written "temp file + os.replace + chmod" elsewhere is one of these:
``write_private(path, data, fsync=True)`` for an atomic durable write,
``private_dir(path, root=cache_root)`` for a chmod loop up to a root.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterator

from .errors import EnsembleDeidError, printable

DIR_MODE = 0o700
FILE_MODE = 0o600

_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "the folder does not exist",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EEXIST: "exists and is not a folder",
    errno.EROFS: "read-only file system",
    errno.EISDIR: "is a folder",
}


class FileWriteError(EnsembleDeidError):
    """Writing or creating ``path`` failed; the message names it and the reason."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot write {printable(self.path)}: {reason}")


def reason(exc: OSError) -> str:
    """An OSError's cause in words ("no space left on the device")."""
    return _REASONS.get(exc.errno or -1) or (exc.strerror or type(exc).__name__).lower()


def os_error(path: str | os.PathLike, exc: OSError) -> FileWriteError:
    """The FileWriteError for an OSError met while writing ``path``."""
    return FileWriteError(path, reason(exc))


def read_utf8(path: str | os.PathLike, error: type[Exception], what: str = "", bom: bool = False) -> str:
    """The text of a UTF-8 file (``bom``: a leading byte-order mark is
    dropped). An unreadable file or a bad byte raises ``error`` naming the
    file, ``what`` it is and the offset of the bad byte."""
    path = Path(path)
    name = printable(str(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{name}: cannot read{' ' + what if what else ''} ({reason(exc)})") from None
    try:
        return raw.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{name}: {what + ' is ' if what else ''}not valid UTF-8 "
                    f"(bad byte at offset {exc.start})") from None


def read_json(path: str | os.PathLike, error: type[Exception], what: str = "") -> Any:
    """A JSON file's value; unreadable, not UTF-8 or not JSON raises ``error``
    naming the file (the parser's message, which may quote the file, is dropped)."""
    text = read_utf8(path, error, what)
    try:
        return json.loads(text)
    except ValueError:
        raise error(f"{printable(str(path))}: {what + ' is ' if what else ''}not valid JSON") from None
    except RecursionError:  # arrays or objects nested thousands deep: no file we write
        raise error(f"{printable(str(path))}: {what + ' is ' if what else ''}nested too deeply to read") from None


def read_toml(path: str | os.PathLike, error: type[Exception], what: str = "") -> dict:
    """A TOML file's table; unreadable, not UTF-8 or not TOML raises ``error``
    naming the file (the parser's message gives the line and column, no text)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    text = read_utf8(path, error, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{printable(str(path))}: not valid TOML ({exc})") from None


def private_dir(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """Create folder ``path`` and its missing parents, owner-only (0700
    whatever the umask); returns it.

    Existing folders are left as they are (one may be the user's home), except
    with ``root``: then every folder we own from ``path`` up to ``root``
    (a folder the toolkit manages, such as the workspace) is tightened too.
    """
    path = Path(path)
    created = [p for p in (path, *path.parents) if not p.exists()]
    owned = []
    if root is not None:
        root = Path(root)
        owned = [p for p in (path, *path.parents) if p == root or root in p.parents]
    try:
        path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        for p in created + owned:
            if p.stat().st_uid == os.getuid() and p.stat().st_mode & 0o7777 != DIR_MODE:
                os.chmod(p, DIR_MODE)
    except FileExistsError as exc:  # path, or a parent, is a file
        raise FileWriteError(path, _REASONS[errno.EEXIST]) from exc
    except OSError as exc:
        raise os_error(path, exc) from exc
    return path


def write_private(path: str | os.PathLike, data: bytes | str, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically, owner-only (0600).

    The parent folder must exist (create it with ``private_dir``). On failure
    nothing is left behind and the previous content of ``path`` is kept.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with _atomic(path) as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    return path


def write_private_json(path: str | os.PathLike, obj: Any, fsync: bool = False) -> Path:
    """``obj`` as indented, key-sorted JSON (newline-terminated), atomically, 0600."""
    return write_private(path, json.dumps(obj, indent=2, sort_keys=True) + "\n", fsync=fsync)


@contextlib.contextmanager
def atomic_private_file(path: str | os.PathLike) -> Iterator:
    """A binary file handle whose content replaces ``path`` (0600) when the
    block ends without error; for writers that need a file object
    (``savefig``, ``pickle.dump``)."""
    with _atomic(Path(path)) as fh:
        yield fh


@contextlib.contextmanager
def _atomic(path: Path) -> Iterator:
    # Unique per call (pid + random): threads and processes writing one path never share a temp file.
    tmp = path.with_name(f"{_temp_prefix(path.name)}{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, FILE_MODE)
    except OSError as exc:
        raise os_error(path, exc) from exc
    try:
        os.fchmod(fd, FILE_MODE)  # O_CREAT's mode is masked by the umask
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_error(path, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# Temp names keep at most this many bytes of the target's name: a target
# name near the 255-byte limit must still leave room for ".PID.HEX.tmp".
_TEMP_NAME_BYTES = 200
_TEMP_TAIL = re.compile(r"\d+\.[0-9a-f]{8}\.tmp")


def _temp_prefix(name: str) -> str:
    return "." + os.fsdecode(os.fsencode(name)[:_TEMP_NAME_BYTES]) + "."


def temp_files(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """The temp files the atomic writers make in ``folder`` (only those for
    target ``name``, if given): all a killed writer leaves behind. Deleting
    them is safe only when no writer can be running (the caller holds a lock)."""
    folder = Path(folder)
    prefix = _temp_prefix(name) if name is not None else "."
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return [Path(e.path) for e in entries
            if e.name.startswith(prefix) and e.is_file(follow_symlinks=False)
            and (_TEMP_TAIL.fullmatch(e.name[len(prefix):]) if name is not None
                 else re.fullmatch(r"\..+\.\d+\.[0-9a-f]{8}\.tmp", e.name, re.DOTALL))]


def private_temp_file(prefix: str, suffix: str = "", directory: str | os.PathLike | None = None) -> tuple[int, str]:
    """``tempfile.mkstemp`` (already 0600), with a FileWriteError naming the folder on failure."""
    try:
        return tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    except OSError as exc:
        raise os_error(directory or tempfile.gettempdir(), exc) from exc


def private_temp_dir(prefix: str, suffix: str = "", directory: str | os.PathLike | None = None) -> Path:
    """``tempfile.mkdtemp`` (already 0700), with a FileWriteError naming the folder on failure."""
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=directory))
    except OSError as exc:
        raise os_error(directory or tempfile.gettempdir(), exc) from exc


# --- checksummed folders (model bundles, kept models) -------------------------------

def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def folder_files(root: str | os.PathLike, error: type[Exception], what: str = "the bundle") -> list[str]:
    """Every file under ``root`` (relative, '/'-separated, sorted). A symbolic
    link or special file anywhere is refused with ``error``: reading through
    it would read outside the folder."""
    root = Path(root)

    def unreadable(exc: OSError) -> None:
        raise error(f"{printable(str(exc.filename))}: cannot read ({exc.strerror})")

    names = []
    for folder, dirs, files in os.walk(root, onerror=unreadable):
        for name in dirs + files:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise error(f"{printable(str(path))}: a symbolic link ({what} holds only its own files)")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise error(f"{printable(str(path))}: not a regular file ({what} holds only its own files)")
        names += [(Path(folder) / f).relative_to(root).as_posix() for f in files]
    return sorted(names)


def folder_checksums(root: str | os.PathLike, error: type[Exception], skip: tuple[str, ...] = (),
                     what: str = "the bundle") -> dict[str, str]:
    """{relative name: SHA-256} of every file under ``root`` but ``skip``."""
    return {name: file_sha256(Path(root) / name) for name in folder_files(root, error, what) if name not in skip}


def check_folder(root: str | os.PathLike, listed: dict[str, str], error: type[Exception], skip: tuple[str, ...] = (),
                 what: str = "the bundle") -> None:
    """``error`` naming the first file of ``root`` that is not listed, listed
    but missing, or whose SHA-256 is not the listed one (``skip``: the files
    holding the list itself)."""
    root = Path(root)
    present = [n for n in folder_files(root, error, what) if n not in skip]
    for name in present:
        if name not in listed:
            raise error(f"{printable(str(root / name))}: file not listed in the manifest ({what} was modified)")
    found = set(present)
    for name, digest in listed.items():
        if name not in found:
            raise error(f"{printable(str(root / name))}: missing from {what}")
        if file_sha256(root / name) != digest:
            raise error(f"{printable(str(root / name))}: checksum mismatch (the file was modified or damaged)")


def owner_only_tree(root: str | os.PathLike) -> None:
    """Folders 0700 and files 0600 under ``root``, whatever a library's own
    writer did (torch.save follows the umask)."""
    for path in Path(root).rglob("*"):
        os.chmod(path, DIR_MODE if path.is_dir() else FILE_MODE)
