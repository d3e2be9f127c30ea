"""Pairing system output with gold documents: ids, texts, missing documents.

The official program scores only documents present on both sides and skips
a missing system file silently. Here a missing document is an error unless
the policy says ``empty`` (its gold tags become false negatives) or ``skip``
(the official behaviour); both of those always warn.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..corpus.document import Document
from .options import EvaluationError


class EvaluationWarning(UserWarning):
    """Something the scores depend on that a reader should know about."""


@dataclass(frozen=True)
class Alignment:
    per_doc: list  # system tags of each gold document, in gold order ([] when missing)
    present: np.ndarray  # bool per gold document
    missing: tuple[str, ...]
    extra: tuple[str, ...]


def _ids(ids: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(i) for i in list(ids)[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def check_gold(gold: Sequence[Document]) -> None:
    seen: set[str] = set()
    dupes = [d.id for d in gold if d.id in seen or seen.add(d.id)]
    if dupes:
        raise EvaluationError(f"duplicate gold document ids: {_ids(dupes)}")


def _tags_of(doc_id: str, value: Any, gold_text: str):
    if isinstance(value, Document):
        if value.text != gold_text:
            raise EvaluationError(f"document {doc_id!r}: system TEXT differs from gold TEXT")
        return value.annotations
    return value


def align(gold: Sequence[Document], system: Any, missing_policy: str) -> Alignment:
    """``system``: a mapping doc id -> tags (or -> Document), a sequence of
    Documents, or a sequence of per-document tag lists in gold order."""
    n = len(gold)
    if isinstance(system, Mapping):
        by_id = system
    elif isinstance(system, Sequence) and not isinstance(system, (str, bytes)):
        if len(system) and not all(isinstance(d, Document) for d in system):
            if len(system) != n:
                raise EvaluationError(
                    f"system: {len(system)} per-document tag lists for {n} gold documents "
                    "(a sequence that is not of Documents must follow the gold order)"
                )
            return Alignment(list(system), np.ones(n, dtype=bool), (), ())
        by_id = {}
        for d in system:
            if d.id in by_id:
                raise EvaluationError(f"duplicate system document id {d.id!r}")
            by_id[d.id] = d
    else:
        raise EvaluationError(f"system: expected a mapping or a sequence, not {type(system).__name__}")

    per_doc: list = []
    present = np.ones(n, dtype=bool)
    missing: list[str] = []
    for i, g in enumerate(gold):
        value = by_id.get(g.id)
        if value is None:
            present[i] = False
            missing.append(g.id)
            per_doc.append(())
        else:
            per_doc.append(_tags_of(g.id, value, g.text))
    gold_ids = {g.id for g in gold}
    extra = tuple(k for k in by_id if k not in gold_ids)
    if missing:
        msg = f"{len(missing)} of {n} gold documents have no system output: {_ids(missing)}"
        if missing_policy == "error":
            raise EvaluationError(msg + " (score them as empty output, or skip them like the official program)")
        what = "scored as empty output (gold tags count as false negatives)" if missing_policy == "empty" else "skipped, as the official program does"
        warnings.warn(f"{msg}; {what}", EvaluationWarning, stacklevel=3)
    if extra:
        warnings.warn(f"{len(extra)} system documents have no gold and are ignored: {_ids(extra)}",
                      EvaluationWarning, stacklevel=3)
    return Alignment(per_doc, present, tuple(missing), extra)
