"""The base of the span-level methods (voting, pruned voting, decision
templates, stacked SVM): they decide on the candidate spans pooled from the
members (``candidates.CandidateTable``), move along a score per candidate to an
operating point (``{"*": threshold, CATEGORY: threshold}``), count their output
under every criterion (``objective``) and may let trusted members keep their
spans (``trust``). This is the layer the span methods stand on; the abstract
``MetaLearner`` below it knows none of it."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..taggers.prediction import DocumentPrediction
from .base import MetaLearner
from .candidates import build_candidates
from .objective import candidate_weights, category_of_labels
from .trust import trusted_pairs, veto_outside


class SpanMetaLearner(MetaLearner):
    """A method deciding on candidate spans pooled from the members
    (:class:`~ensemble_deid.ensemble.candidates.CandidateTable`). ``raw`` is a
    boolean selection of non-overlapping candidates."""

    level: ClassVar[str] = "span"
    added_later = (*MetaLearner.added_later, "trust")

    def _prepare(self, members, names, documents):
        return build_candidates(members, names, documents)

    def _raw_to_predictions(self, prepared, raw) -> list[DocumentPrediction]:
        return prepared.to_predictions(raw)

    def _raw_counts(self, prepared, raw) -> tuple[int, int, int]:
        return prepared.counts(raw)

    def _tally(self, table, raw):
        return candidate_weights(table).counts(raw)[0]

    def _tallies(self, table, scores, points) -> list:
        return candidate_weights(table).counts(np.stack(self._select(table, scores, points), axis=1))

    def _keep(self, table, scores, points, native: np.ndarray) -> np.ndarray:
        """(n, k) kept candidates: score >= the point's threshold for the
        candidate's category (or its ``"*"``), else the native rule."""
        cats = np.array(category_of_labels(table.labels) + [""], dtype=object)[table.label] if len(table) \
            else np.zeros(0, dtype=object)
        keep = np.zeros((len(table), len(points)), dtype=bool)
        for k, point in enumerate(points):
            point = point or {}
            col = native.copy()
            if "*" in point:
                col = scores >= point["*"]
            for cat, tau in point.items():
                if cat != "*":
                    rows = cats == cat
                    col[rows] = scores[rows] >= tau
            keep[:, k] = col
        return keep

    def threshold_candidates(self, pooled_scores: np.ndarray) -> list[float]:
        """At most 200 thresholds: the distinct out-of-fold scores, thinned to quantiles."""
        values = np.unique(pooled_scores[np.isfinite(pooled_scores)])
        if len(values) > 200:
            values = np.unique(np.quantile(values, np.linspace(0, 1, 200), method="lower"))
        return [float(v) for v in values]

    def _learn_trust(self, table) -> None:
        """The (member, label) pairs that have earned trust on the fitting
        documents (``trust``; see ``ensemble.trust``)."""
        trust = getattr(self, "trust", None)
        self.trusted_ = trusted_pairs(table, float(trust)) if trust is not None else []

    def _trusted(self, table, selected):
        """``selected`` (a candidate mask, or a list of them) with the trusted
        members' spans added where it leaves their tokens O or kept only spans
        strictly inside them (``ensemble.trust.veto_outside``)."""
        pairs = getattr(self, "trusted_", None)
        if not pairs:
            return selected
        if isinstance(selected, list):
            if not selected:
                return selected
            out = veto_outside(table, np.stack(selected, axis=1), pairs, self.member_rank_)
            return [out[:, i] for i in range(out.shape[1])]
        return veto_outside(table, selected, pairs, self.member_rank_)

    def _member_ranks(self, table) -> None:
        """Members' strict F1 on the fitting documents and their ranks: the
        voting tie-break ("the member with the better cross-validated F1")."""
        self.member_f1_ = table.member_f1()
        self.member_rank_ = table.member_rank()
