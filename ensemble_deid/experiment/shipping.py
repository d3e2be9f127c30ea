"""Sending a corpus to parallel workers once per worker, not once per task.

joblib pickles a task's arguments for every task. A ``ShippedDocuments``
instead pickles as a small handle: for local process pools the documents are
spilled once to an owner-only temporary file that each worker loads the first
time it needs them and then keeps in memory; for dask the documents object is
scattered to every worker up front (``inline=True``, see cv.py).

The spilled file holds full note text, so on Linux it is unlinked as soon as
it is written and workers open it through ``/proc/PID/fd/N`` of the parent:
the kernel frees it when the parent's descriptor closes, even after SIGKILL,
and nothing is ever left in ``$TMPDIR``. Elsewhere the named file is removed
by ``cleanup``.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Sequence

from ..corpus.document import Document
from ..files import os_error, private_temp_file

_PROC_FD = Path("/proc/self/fd")

# key -> documents, per worker process
_WORKER_MEMO: dict[str, list[Document]] = {}


class ShippedDocuments:
    def __init__(self, documents: Sequence[Document], key: str, inline: bool = False):
        self.key = key
        self.inline = inline
        self._documents: list[Document] | None = list(documents)
        self._path: str | None = None
        self._fd: int | None = None  # kept open while the unlinked spill is in use

    def spill(self, directory: str | Path | None = None) -> None:
        """Write the documents to a private temp file that workers read once."""
        if self.inline or self._path is not None:
            return
        fd, path = private_temp_file("ensemble-deid-corpus-", ".pkl", directory)
        unlinked = _PROC_FD.is_dir()
        try:
            if unlinked:
                os.unlink(path)
            with open(fd, "wb", closefd=False) as fh:
                # Trusted, private, short-lived IPC between our own processes (not the cache).
                pickle.dump(self._documents, fh, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:
            os.close(fd)
            Path(path).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise os_error(path, exc) from exc
            raise
        if unlinked:
            self._fd, self._path = fd, f"/proc/{os.getpid()}/fd/{fd}"
        else:
            os.close(fd)
            self._path = path

    def cleanup(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        elif self._path:
            Path(self._path).unlink(missing_ok=True)
        self._path = None

    def get(self) -> list[Document]:
        if self._documents is None:
            docs = _WORKER_MEMO.get(self.key)
            if docs is None:
                with open(self._path, "rb") as fh:
                    docs = pickle.load(fh)
                _WORKER_MEMO.clear()  # keep one corpus per worker
                _WORKER_MEMO[self.key] = docs
            self._documents = docs
        return self._documents

    def __getstate__(self):
        if self.inline or self._path is None:
            return {"key": self.key, "inline": True, "documents": self._documents, "path": None}
        return {"key": self.key, "inline": False, "documents": None, "path": self._path}

    def __setstate__(self, state):
        self.key = state["key"]
        self.inline = state["inline"]
        self._documents = state["documents"]
        self._path = state["path"]
        self._fd = None
