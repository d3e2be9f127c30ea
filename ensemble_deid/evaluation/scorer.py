"""The fast path: one gold set, one criterion, many systems.

``Scorer`` lays out the gold tags and computes their keys once; each call then
only converts the system's tags and intersects sorted int64 arrays. Used by
meta-learners (threshold and pruning searches) and significance tests, which
pair systems on the per-document counts.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence


from ..corpus.document import Annotation, Document
from .align import align, check_gold
from .criteria import Criterion, get_criterion
from .engine import Engine
from .metrics import DocumentCounts, micro_prf
from .options import EvalOptions
from .spans import SpanTable


class Scorer:
    """Re-score systems against fixed gold documents under one criterion.

    >>> scorer = Scorer(gold_docs, "strict")
    >>> p, r, f1 = scorer.prf({doc_id: annotations, ...})
    >>> table = scorer.table(system)           # convert once ...
    >>> scorer.prf(table.select(votes >= 2))   # ... re-score subsets fast
    """

    def __init__(self, gold_documents: Sequence[Document], criterion: str | Criterion = "strict",
                 options: EvalOptions = EvalOptions()):
        self.criterion = get_criterion(criterion)
        self.options = options
        self.gold_documents = list(gold_documents)
        check_gold(self.gold_documents)
        self.engine = Engine(self.gold_documents, options)
        self.engine.freeze()
        self.doc_ids = tuple(self.engine.doc_ids)
        self._gold = self.engine.prepare(self.engine.gold, self.criterion)

    def __repr__(self) -> str:
        return f"Scorer(criterion={self.criterion.name!r}, documents={len(self.doc_ids)})"

    def table(self, system: Any) -> SpanTable:
        """The system's tags in columnar form (documents in gold order).

        ``counts`` and ``prf`` accept the result, and ``table.select(mask)``
        gives any subset of its tags without touching Python objects again:
        convert each base system once, then re-score subsets (vote
        thresholds, pruning) at numpy speed. Missing documents follow the
        options (under "skip" they score as empty here)."""
        aligned = align(self.gold_documents, system, self.options.missing)
        return self.engine.table(aligned.per_doc)

    def _counts(self, system: Any):
        rows = None
        if isinstance(system, SpanTable):
            table = system
        else:
            aligned = align(self.gold_documents, system, self.options.missing)
            table = self.engine.table(aligned.per_doc)
            if self.options.missing == "skip" and aligned.missing:
                rows = aligned.present
        if self.engine.ensure_capacity():  # labels gold never had: re-encode gold keys
            self._gold = self.engine.prepare(self.engine.gold, self.criterion)
        tp, fp, fn = self.engine.compare(self.criterion, self._gold, self.engine.prepare(table, self.criterion))
        return tp, fp, fn, rows

    def counts(self, system: Mapping[str, Sequence[Annotation]] | Sequence[Sequence[Any]] | Sequence[Document]) -> DocumentCounts:
        """Per-document TP, FP, FN in gold order (documents skipped under
        ``missing="skip"`` are left out)."""
        tp, fp, fn, rows = self._counts(system)
        ids = self.doc_ids
        if rows is not None:
            ids = tuple(d for d, k in zip(ids, rows.tolist()) if k)
            tp, fp, fn = tp[rows], fp[rows], fn[rows]
        return DocumentCounts(ids, tp, fp, fn)

    def prf(self, system: Mapping[str, Sequence[Annotation]] | Sequence[Sequence[Any]] | Sequence[Document]) -> tuple[float, float, float]:
        """Micro precision, recall, F1."""
        tp, fp, fn, rows = self._counts(system)
        if rows is not None:
            tp, fp, fn = tp[rows], fp[rows], fn[rows]
        return micro_prf(tp, fp, fn)

    def f1(self, system) -> float:
        return self.prf(system)[2]
