"""Reading and writing corpora: directories of i2b2-style XML or BRAT standoff."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from ..document import Document
from ...errors import ERROR, CorpusError, Problem, printable
from ..labelmap import LabelMap
from .brat import read_brat
from .i2b2 import read_i2b2_xml, to_i2b2_xml, write_i2b2_xml
from .source import corpus_files

__all__ = [
    "I2B2_GROUP_PATTERN", "detect_format", "load_directory", "read_directory",
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
    problems: list[Problem] = []
    docs: list[Document] = []
    if fmt == "xml":
        for path in files:
            doc, found = read_i2b2_xml(path)
            problems += found
            if doc is not None:
                docs.append(doc)
    elif fmt == "brat":
        parents = label_map.parents() if label_map else None
        for path in files:
            doc, found = read_brat(path, parents)
            problems += found
            if doc is not None:
                docs.append(doc)
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


def assign_groups(docs: Sequence[Document], group_pattern: str | None) -> None:
    """Set each document's patient group from its id (first capture group of
    the pattern); a document the pattern does not match is its own group."""
    regex = re.compile(group_pattern) if group_pattern else None
    for doc in docs:
        match = regex.search(doc.id) if regex else None
        doc.metadata["group"] = (match.group(1) if match and match.groups() else doc.id)


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
