"""Reading and writing corpora: directories of i2b2-style XML or BRAT standoff."""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Iterator, Sequence

from ..document import Document
from ...errors import ERROR, CorpusError, ParameterError, Problem, printable
from ..labelmap import LabelMap
from .brat import read_brat
from .i2b2 import read_i2b2_xml, to_i2b2_xml, write_i2b2_xml
from .source import corpus_files, read_each

__all__ = [
    "I2B2_GROUP_PATTERN", "compile_group_pattern", "detect_format", "group_ids", "load_directory", "read_directory",
    "read_brat", "read_i2b2_xml", "to_i2b2_xml", "write_i2b2_xml",
]

# 2014 i2b2 record names are PPP-NN: patient PPP, that patient's NN-th record.
I2B2_GROUP_PATTERN = r"^(\d{3})-\d{2}$"


def detect_format(directory: Path) -> str:
    if corpus_files(directory, ".xml"):
        return "xml"
    if corpus_files(directory, ".txt") or corpus_files(directory, ".ann"):
        return "brat"
    raise CorpusError(f"{printable(directory)}: no .xml or .txt/.ann files found")


def read_directory(
    directory: str | Path,
    fmt: str = "auto",
    label_map: LabelMap | None = None,
    group_pattern: str | None = I2B2_GROUP_PATTERN,
) -> tuple[list[Document], list[Problem]]:
    """Every document of a directory and every problem found, fatal or not.

    Documents whose file has a fatal problem are left out; the caller decides
    whether to go on (``corpus check``) or stop (``load_directory``).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise CorpusError(f"{printable(directory)}: not a directory")
    fmt = detect_format(directory) if fmt == "auto" else fmt
    suffix = {"xml": ".xml", "brat": ".txt"}.get(fmt)
    files = corpus_files(directory, suffix) if suffix else []
    if suffix is not None and not files:
        # e.g. --format brat on a folder of XML: refuse rather than load 0 documents.
        raise CorpusError(f"{printable(directory)}: no {suffix} files for format {fmt}")
    if fmt == "xml":
        docs, problems = read_each(files, read_i2b2_xml)
    elif fmt == "brat":
        parents = label_map.parents() if label_map else None
        docs, problems = read_each(files, lambda path: read_brat(path, parents))
        for ann in corpus_files(directory, ".ann"):
            if not os.path.lexists(ann.with_suffix(".txt")):
                problems.append(Problem(ERROR, str(ann), "no .txt file beside this .ann file"))
    else:
        raise CorpusError(f"unknown format {fmt!r}; expected xml, brat or auto")

    seen: dict[str, str] = {}
    for doc in docs:
        if doc.id in seen:
            problems.append(Problem(ERROR, doc.metadata["source"], f"duplicate document id {doc.id!r} (also {seen[doc.id]})", field="id"))
        seen[doc.id] = doc.metadata["source"]
    if label_map is not None:
        docs = [label_map.apply_document(d) for d in docs]
    assign_groups(docs, group_pattern)
    return docs, problems


# Grouping every id of a corpus takes milliseconds; a pattern that backtracks
# catastrophically takes longer than the universe (ids are up to 255 bytes).
GROUP_PATTERN_SECONDS = 10.0


def compile_group_pattern(pattern: str) -> re.Pattern:
    """A patient-group pattern checked before any work: a valid regular
    expression with at least one capture group (its first gives the patient)."""
    try:
        regex = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ParameterError(f"not a valid regular expression ({exc})", "--group-pattern") from None
    if regex.groups < 1:
        raise ParameterError(r"no capture group: its first group (...) must give the patient, e.g. '^(\d{3})-\d{2}$'",
                             "--group-pattern")
    problem = _constant_group(pattern)
    if problem:
        raise ParameterError(f"'{printable(pattern)}': its first group {problem}, so it would make every note "
                             r"one patient; the group must capture the part of the id that names the patient, "
                             r"e.g. '^(\d{3})-\d{2}$'", "--group-pattern")
    return regex


def _constant_group(pattern: str) -> str:
    r"""Why the first group of ``pattern`` cannot tell patients apart ("" when
    it can): it can match the empty string (``()``, ``(\d*)``), or it
    matches one fixed text whatever the id (``(-)``). Read from the parsed
    pattern (its width and its items), before any id is seen."""
    from re import _constants as c, _parser

    def group(node):
        """The items of group 1, wherever it is nested (a branch, a repeat, another group)."""
        if isinstance(node, _parser.SubPattern):
            for op, arg in node:
                if op is c.SUBPATTERN and arg[0] == 1:
                    return arg[3]
                found = group(arg)
                if found is not None:
                    return found
        elif isinstance(node, (list, tuple)):
            for part in node:
                found = group(part)
                if found is not None:
                    return found
        return None

    try:
        items = group(_parser.parse(pattern))
    except Exception:  # noqa: BLE001 - re.compile accepted it; a parser detail must not refuse it
        return ""
    if items is None:
        return ""
    if items.getwidth()[0] == 0:
        return "can match an empty text"
    if all(op in (c.LITERAL, c.AT) for op, _ in items):
        return "matches one fixed text"
    return ""


def group_ids(ids: Sequence[str], group_pattern: str | None) -> dict[str, str]:
    """Each id's patient group: the pattern's first capture group, or the id
    itself where the pattern does not match. A pattern that runs longer than
    ``GROUP_PATTERN_SECONDS`` over all ids (catastrophic backtracking) is
    stopped and refused: no pattern can be proved safe up front, and ids are
    few and short, so a time limit is exact where a static check would guess.
    The limit needs the main thread (a signal); elsewhere there is none."""
    if not group_pattern:
        return {i: i for i in ids}
    regex = compile_group_pattern(group_pattern)
    groups = {}
    try:
        with _time_limit(GROUP_PATTERN_SECONDS):
            for doc_id in ids:
                match = regex.search(doc_id)
                group = match.group(1) if match else None
                if group == "":  # one shared empty group would make every such note one patient
                    raise ParameterError(f"'{printable(group_pattern)}': its first group matched an empty text "
                                         f"in a document id (the id is not shown: ids can hold PHI)", "--group-pattern")
                groups[doc_id] = group if group is not None else doc_id
    except _Expired:
        raise ParameterError(f"ran over {GROUP_PATTERN_SECONDS:.0f} s on {len(ids)} document ids (it backtracks "
                             "catastrophically, e.g. nested repeats like (a+)+): simplify it", "--group-pattern") from None
    return groups


class _Expired(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    import signal
    import threading

    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer") \
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assign_groups(docs: Sequence[Document], group_pattern: str | None) -> None:
    """Set each document's patient group from its id (``group_ids``)."""
    groups = group_ids([doc.id for doc in docs], group_pattern)
    for doc in docs:
        doc.metadata["group"] = groups[doc.id]


def load_directory(
    directory: str | Path,
    fmt: str = "auto",
    label_map: LabelMap | None = None,
    group_pattern: str | None = I2B2_GROUP_PATTERN,
) -> list[Document]:
    """Like read_directory, but stops with a CorpusError on any fatal problem."""
    docs, problems = read_directory(directory, fmt, label_map, group_pattern)
    if any(p.severity == ERROR for p in problems):
        raise CorpusError(problems)
    return docs
