"""Opening one corpus file: the checks every reader makes before parsing.

A file name must be valid UTF-8 (document ids come from it and end up in
cache records and reports), and the file must be a regular file: a FIFO or
device named ``*.xml`` would block or never end. Problems name the file
(escaped where it holds control characters), never its content.

Sizes are capped before anything is read: feature extraction alone (what
the linear taggers do with each note in cv, fit and deidentify) takes about
``FEATURE_GB_PER_NOTE_MB`` of memory per MB of note text
(benchmarks/scale/bench_long_inputs.py), so a note over
``MAX_NOTE_BYTES`` (2 MB, some 300,000 words: forty times a long discharge
summary) is refused with its size and the limit, never loaded to end in a
MemoryError. Any other corpus file (an XML record with its tags, a BRAT
``.ann``) may reach ``MAX_FILE_BYTES``.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable

from ...errors import ERROR, Problem

MAX_NOTE_BYTES = 2_000_000  # the text of one note (UTF-8 bytes; characters for a decoded XML TEXT)
MAX_FILE_BYTES = 64_000_000  # any one corpus file
# GB of memory per MB of note text in feature extraction: the largest figure in
# benchmarks/results/long-inputs.json (0.36 at 1 MB; 0.30 at 0.25 MB).
FEATURE_GB_PER_NOTE_MB = 0.36


def too_large(size: int, name: str, what: str = "note", limit: int = MAX_NOTE_BYTES) -> Problem | None:
    """The problem of a note (or file) of ``size`` bytes over ``limit``, else None."""
    if size <= limit:
        return None
    why = (f" per note (feature extraction alone takes about {FEATURE_GB_PER_NOTE_MB:.2f} GB of memory per MB of "
           "note text): split it into several documents" if limit == MAX_NOTE_BYTES else " per corpus file")
    return Problem(ERROR, name, f"{what} of {size / 1e6:.1f} MB is over the limit of {limit / 1e6:.0f} MB{why}")


def corpus_files(directory: Path, suffix: str) -> list[Path]:
    """Every entry of ``directory`` whose name ends in ``suffix``, sorted by
    name, whatever it is: a FIFO, a folder or a symbolic link loop named
    ``*.xml`` is listed, so that ``read_source`` reports it instead of every
    reader skipping it silently or stumbling on it (one guard for all)."""
    try:
        names = sorted(e.name for e in os.scandir(directory) if e.name.endswith(suffix))
    except OSError as exc:
        from ...errors import CorpusError

        raise CorpusError(f"{directory}: cannot list the folder ({exc.strerror or type(exc).__name__})") from exc
    return [directory / name for name in names]


def read_each(paths: Iterable[Path], reader: Callable[[Path], tuple[Any, list[Problem]]]) -> tuple[list, list[Problem]]:
    """What ``reader`` (a path -> (item or None, problems) function) reads
    from each of ``paths``: the items it gave and every problem it found."""
    items: list = []
    problems: list[Problem] = []
    for path in paths:
        item, found = reader(path)
        problems += found
        if item is not None:
            items.append(item)
    return items, problems


def read_source(path: Path, limit: int = MAX_FILE_BYTES, what: str = "file") -> tuple[bytes | None, list[Problem]]:
    """The bytes of ``path``, or None and the one problem that stops reading it.
    A file over ``limit`` bytes is refused before it is read (``what`` names
    it in the message: a "note" for a BRAT text)."""
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
        if info.st_size > limit:
            return None, [too_large(info.st_size, name, what, limit)]
        # O_NONBLOCK: a file swapped for a FIFO after the stat still cannot hang us.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None, [Problem(ERROR, name, "not a regular file")]
            data = fh.read(limit + 1)  # a file grown since the stat still stops at the limit
            if len(data) > limit:
                return None, [too_large(len(data), name, what, limit)]
            return data, []
    except OSError as exc:
        return None, [Problem(ERROR, name, f"cannot read file ({exc.strerror or type(exc).__name__})")]
