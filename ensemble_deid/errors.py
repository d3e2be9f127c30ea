"""Problems found in input files, and the errors that carry them.

A message names the file, the document or tag id, and the field, never the PHI
text itself.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Sequence

ERROR = "error"  # fatal: loading stops
WARNING = "warning"  # counted and shown; loading goes on


def printable(name: str | os.PathLike) -> str:
    """A file name safe to print: control characters (newlines, terminal
    escapes) and undecodable bytes are shown escaped, never sent raw."""
    text = os.fsdecode(name) if isinstance(name, (bytes, os.PathLike)) else str(name)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@dataclass(frozen=True)
class Problem:
    severity: str
    file: str
    message: str
    tag: str | None = None  # tag id (or BRAT line id / line number)
    field: str | None = None  # attribute or element concerned

    def __str__(self) -> str:
        where = printable(self.file)
        if self.tag is not None:
            where += f" [tag {printable(self.tag)}]"
        if self.field is not None:
            where += f" field {printable(self.field)!r}"
        return f"{self.severity}: {where}: {self.message}"


class EnsembleDeidError(Exception):
    """Base class of the toolkit's own errors."""


class CorpusError(EnsembleDeidError):
    """Input that cannot be loaded; carries every problem found, not just the first."""

    def __init__(self, problems: Sequence[Problem] | str):
        if isinstance(problems, str):
            self.problems: tuple[Problem, ...] = ()
            super().__init__(problems)
            return
        self.problems = tuple(problems)
        errors = [p for p in self.problems if p.severity == ERROR]
        shown = errors[:20]
        more = f"\n  ... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        super().__init__(
            f"{len(errors)} fatal problem(s):\n  " + "\n  ".join(map(str, shown)) + more
        )


def fatal(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == ERROR]


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """" (did you mean 'crf'?)" for a mistyped name (difflib), or ""."""
    import difflib

    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class ParameterError(EnsembleDeidError, ValueError):
    """A bad option or parameter value, found before any work starts.

    ``option`` names what the user gave it as (``--param``, ``--members``),
    so that the command line can point at its own option; the library's
    callers just see the message."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option
