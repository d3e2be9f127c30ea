"""Opening one corpus file: the checks every reader makes before parsing.

A file name must be valid UTF-8 (document ids come from it and end up in
cache records and reports), and the file must be a regular file: a FIFO or
device named ``*.xml`` would block or never end. Problems name the file
(escaped where it holds control characters), never its content.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ...errors import ERROR, Problem


def read_source(path: Path) -> tuple[bytes | None, list[Problem]]:
    """The bytes of ``path``, or None and the one problem that stops reading it."""
    name = str(path)
    try:
        os.fsencode(path.name).decode("utf-8")
    except UnicodeDecodeError:
        return None, [Problem(ERROR, name, "file name is not valid UTF-8 (rename the file)", field="file name")]
    try:
        info = os.stat(path)  # stat never blocks, even on a FIFO
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO, socket or device"
            return None, [Problem(ERROR, name, f"not a regular file ({kind})")]
        # O_NONBLOCK: a file swapped for a FIFO after the stat still cannot hang us.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None, [Problem(ERROR, name, "not a regular file")]
            return fh.read(), []
    except OSError as exc:
        return None, [Problem(ERROR, name, f"cannot read file ({exc.strerror or type(exc).__name__})")]
