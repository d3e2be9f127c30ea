"""Scoring folders of files as the official program reads them.

i2b2 XML is read with ``read_scoring_xml`` (exact element names and TYPE,
file order kept, oddities the official program scores accepted with a
warning); BRAT folders with the corpus reader. Every file is read, and every
fatal problem reported at once, before any scoring starts.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any, Iterable

from ..corpus.formats.i2b2 import ScoringRecord, read_scoring_xml
from ..corpus.formats.source import corpus_files, read_each
from ..errors import ERROR, CorpusError, Problem
from .align import EvaluationWarning
from .criteria import ALL, Criterion
from .options import EvalOptions


def read_folder(directory: str | Path, fmt: str = "auto", label_map: Any = None) -> tuple[list[ScoringRecord], list[Problem]]:
    """Every record of a folder (i2b2 XML or BRAT) and every problem found.

    ``label_map`` (a LabelMap) renames, merges or drops the folder's labels,
    e.g. a user's own BRAT gold onto the i2b2 categories of exported
    predictions."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CorpusError(f"{directory}: not a directory")
    xml_files = corpus_files(directory, ".xml") if fmt in ("auto", "xml") else []
    if fmt == "auto":
        fmt = "xml" if xml_files else "brat"
    if fmt == "xml":
        records, problems = read_each(xml_files, read_scoring_xml)
    elif fmt == "brat":
        from ..corpus.formats import read_directory

        docs, problems = read_directory(directory, "brat", label_map)
        label_map = None  # applied by the reader
        records = [ScoringRecord(d.id, d.text, tuple((a.start, a.end, a.category, a.type) for a in d.annotations),
                                 str(d.metadata.get("source", d.id))) for d in docs]
    else:
        raise CorpusError(f"unknown format {fmt!r}; expected xml, brat or auto")
    if not records and not any(p.severity == ERROR for p in problems):
        problems.append(Problem(ERROR, str(directory), f"no {'.xml' if fmt == 'xml' else '.txt/.ann'} documents found"))
    if label_map is not None:
        records = [_mapped(r, label_map) for r in records]
    return records, problems


def _mapped(record: ScoringRecord, label_map) -> ScoringRecord:
    from ..corpus.document import Annotation

    tags = []
    for start, end, category, type_ in record.annotations:
        mapped = label_map.apply(Annotation(start, end, category, type_))
        if mapped is not None:
            tags.append((mapped.start, mapped.end, mapped.category, mapped.type))
    return ScoringRecord(record.id, record.text, tuple(tags), record.source)


def read_pair(gold_dir: str | Path, system_dir: str | Path, fmt: str = "auto", label_map: Any = None):
    """Gold records and a mapping id -> system tags (file order), after
    checking that every system TEXT equals its gold TEXT. Raises with every
    fatal problem of both folders; warns (EvaluationWarning) about the rest."""
    gold, problems = read_folder(gold_dir, fmt, label_map)
    system, found = read_folder(system_dir, fmt)
    problems += found
    by_id = {g.id: g for g in gold}
    for s in system:
        g = by_id.get(s.id)
        if g is not None and g.text != s.text:
            problems.append(Problem(ERROR, s.source, f"TEXT differs from the gold TEXT of document {s.id!r} ({g.source})",
                                    field="TEXT"))
    if any(p.severity == ERROR for p in problems):
        raise CorpusError(problems)
    for p in problems:  # only warnings are left: "file [tag ids] field: message"
        warnings.warn(str(p).removeprefix(f"{p.severity}: "), EvaluationWarning, stacklevel=2)
    return gold, {s.id: s.annotations for s in system}


def evaluate_folders(gold_dir: str | Path, system_dir: str | Path, *, fmt: str = "auto", label_map: Any = None,
                     criteria: str | Iterable[str | Criterion] = ALL, options: EvalOptions = EvalOptions()):
    """``evaluate`` on two folders, reading them as the official program does."""
    from .core import evaluate
    from .spans import gc_paused

    with gc_paused():  # tens of thousands of small objects, none cyclic
        gold, system = read_pair(gold_dir, system_dir, fmt, label_map)
        if gold and gold[0].source.endswith(".xml"):
            gold = _in_official_order(gold, system, gold_dir, system_dir, options)
        report = evaluate(gold, system, criteria=criteria, options=options, lenient=True)
    # names the label map's author wrote are printed as they are; other unknown ones are masked
    return dataclasses.replace(report, known_names=label_map.names()) if label_map is not None else report


def _in_official_order(gold: list[ScoringRecord], system: dict, gold_dir, system_dir, options: EvalOptions):
    """Gold records in the order the 2014 program walks them, so that the
    macro means (numpy sums, whose rounding depends on the order) come out
    as it prints them."""
    from .py2order import official_document_order

    scored = [g.id for g in gold if options.missing != "skip" or g.id in system]
    order = official_document_order(gold_dir, system_dir, scored, lambda i: i + ".xml")
    rank = {doc_id: k for k, doc_id in enumerate(order)}
    return sorted(gold, key=lambda g: rank.get(g.id, len(rank)))
