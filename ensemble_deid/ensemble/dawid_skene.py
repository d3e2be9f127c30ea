"""Dawid-Skene aggregation of the members' spans, re-estimated on the notes
it is given, without their labels [Dawid & Skene 1979; Lison et al. 2020].

A model meets another site's notes, where nobody has annotated anything and
its members err in other ways than on the training notes. Dawid-Skene treats
each member as a noisy annotator and learns how far to trust it from the
members' agreement on the unlabelled notes themselves.

1. Every candidate span (``candidates``: a distinct document, token span and
   label that at least one member proposed) is PHI or not, a hidden class.
   Member ``j`` proposes it with probability ``sens[j, k]`` if it is PHI and
   ``fpr[j, k]`` if not, ``k`` the category of its label; a candidate is PHI
   with probability ``prior[k]``; members err independently given the class.
2. Fitting (labelled out-of-fold predictions): the three tables are counted on
   the candidates, a candidate being PHI when it equals a gold span under the
   strict criterion (add-one smoothing). With ``adapt=False`` this is the
   whole method: a naive Bayes over the votes.
3. Predicting with ``adapt=True``: EM on the candidates of the documents
   given, started from the fitted tables and held to them by
   ``prior_strength`` pseudo-candidates per (member, category): the E step
   computes each candidate's posterior P(PHI | votes), the M step re-counts
   the tables with the posteriors as weights. ``prior_strength=0`` forgets the
   training notes after the first step. A category unseen in fitting starts
   from the tables pooled over all categories.
4. A candidate is kept when its posterior is at least 0.5 (or the operating
   point's threshold, a probability); overlapping kept candidates: the higher
   posterior wins, a tie goes to the earlier span.

Step 3 makes a candidate's output depend on the other documents predicted with
it: the documents given to ``predict`` should be one site's notes, all at once.
``adapt_to`` freezes the tables learned on a set of notes, after which ``predict``
no longer re-estimates them (``adapted_``).
"""
from __future__ import annotations

import numpy as np

from ..taggers.constraints import MAX_COUNT, Interval, Options
from .base import OPERATING_POINT, Members, ordered_members
from .candidates import CandidateTable, resolve_overlaps
from .objective import category_of_labels
from .spans import SpanMetaLearner

_EPS = 1e-4  # probabilities stay inside (0, 1): a member never proposing a category cannot veto it
MAX_STRENGTH = 1e9


class DawidSkene(SpanMetaLearner):
    """Dawid-Skene over the members' candidate spans (see the module docstring).

    Parameters
    ----------
    adapt : bool
        Re-estimate the members' reliabilities by EM on the documents
        predicted (True), or use those counted on the fitting documents.
    prior_strength : float >= 0
        Pseudo-candidates per member and category holding EM to the fitted
        tables. Chosen by cross-validation (default grid 0-1000): each held-out
        fold is adapted to as an unlabelled site.
    max_iter, tol : EM's stopping rule (iterations; largest change of a posterior).
    operating_point : None or dict
        Thresholds on the posterior probability, ``{"*": p}`` and/or per
        category (None: 0.5).
    """

    name = "dawid-skene"
    description = "members as noisy annotators, reliabilities re-estimated on the predicted notes by EM"
    reads_member_confidences = False  # spans (votes) only
    scored = True
    sweeps_base = True

    _parameter_constraints = {"adapt": [Options(True, False)], "prior_strength": [Interval(float, 0, MAX_STRENGTH)],
                              "max_iter": [Interval(int, 1, MAX_COUNT)], "tol": [Interval(float, 0, 1)],
                              "operating_point": [OPERATING_POINT]}

    def __init__(self, adapt=True, prior_strength=100.0, max_iter=100, tol=1e-6, operating_point=None):
        self._store_params(locals())

    def default_grid(self, n_members: int) -> dict[str, list]:
        return {"prior_strength": [0.0, 10.0, 100.0, 1000.0]} if self.adapt else {}

    # --- fitting: the tables counted on labelled candidates ----------------------------
    def _fit_prepared(self, table: CandidateTable) -> None:
        self._member_ranks(table)
        cats = category_of_labels(table.labels)
        self.categories_ = sorted(set(cats))
        k = self._category_index(table)
        weights = table.gold.astype(np.float64)
        self.sens_, self.fpr_, self.prior_ = _counted(table.votes, k, weights, len(self.categories_) + 1, 1.0)
        self.adapted_ = False

    def _category_index(self, table: CandidateTable) -> np.ndarray:
        """Per candidate, its category's column (the last column: a category not seen in fitting)."""
        fitted = {c: i for i, c in enumerate(getattr(self, "categories_", ()))}
        col = np.array([fitted.get(c, len(fitted)) for c in category_of_labels(table.labels)] + [len(fitted)])
        return col[table.label] if len(table) else np.zeros(0, np.int64)

    # --- predicting ------------------------------------------------------------------------
    def adapt_to(self, members: Members, documents) -> "DawidSkene":
        """Re-estimate the tables on ``documents`` (one site's notes, no labels
        needed) and keep them: later predictions use them as they are."""
        self.check_fitted()
        table = self._prepare(ordered_members(members, self.member_names_, documents, self.name),
                              self.member_names_, documents)
        self.sens_, self.fpr_, self.prior_ = self._estimate(table)[1:]
        self.adapted_ = True
        return self

    def posteriors(self, table: CandidateTable) -> np.ndarray:
        """P(PHI | votes) of each candidate, after EM on this table when adapting."""
        return self._estimate(table)[0]

    def _estimate(self, table: CandidateTable):
        self.check_fitted()
        k = self._category_index(table)
        sens, fpr, prior = self.sens_, self.fpr_, self.prior_
        q = _posterior(table.votes, k, sens, fpr, prior)
        if not self.adapt or self.adapted_ or not len(table):
            return q, sens, fpr, prior
        strength = float(self.prior_strength)
        for _ in range(int(self.max_iter)):
            new_sens, new_fpr, new_prior = _counted(table.votes, k, q, sens.shape[1], 0.0,
                                                     anchor=(self.sens_, self.fpr_, self.prior_, strength))
            new_q = _posterior(table.votes, k, new_sens, new_fpr, new_prior)
            change = float(np.max(np.abs(new_q - q)))
            q, sens, fpr, prior = new_q, new_sens, new_fpr, new_prior
            if change <= self.tol:
                break
        return q, sens, fpr, prior

    def _scores(self, table: CandidateTable) -> np.ndarray:
        return self.posteriors(table)

    def _select(self, table, scores, points):
        keep = self._keep(table, scores, points, scores >= 0.5)
        return [resolve_overlaps(table, keep[:, i], scores) for i in range(keep.shape[1])]

    def _predict_raw(self, table: CandidateTable):
        return self._select(table, self._scores(table), [self.operating_point])[0]

    def threshold_candidates(self, pooled_scores: np.ndarray) -> list[float]:
        """Posterior thresholds between 0.01 and 0.99 (posteriors crowd at 0 and 1)."""
        return [float(t) for t in np.round(np.linspace(0.01, 0.99, 99), 2)]


def _counted(votes: np.ndarray, k: np.ndarray, q: np.ndarray, n_cats: int, smoothing: float,
             anchor=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sens, fpr, prior) counted with weights ``q`` (P(PHI) per candidate):
    (m, n_cats + 1), (m, n_cats + 1), (n_cats + 1,). The last column pools every
    category (a category unseen in fitting starts from it). ``anchor``:
    (sens0, fpr0, prior0, strength) pseudo-counts toward earlier tables;
    otherwise ``smoothing`` (add-one) toward one half."""
    m, cols = votes.shape[1], n_cats
    onehot = np.zeros((len(k), cols))
    if len(k):
        onehot[np.arange(len(k)), k] = 1.0
    onehot[:, -1] = 1.0  # the pooled column sees every candidate
    v = votes.astype(np.float64)
    pos = onehot * q[:, None]  # (n, K) weight of PHI
    neg = onehot * (1.0 - q)[:, None]
    pos_votes, neg_votes = v.T @ pos, v.T @ neg  # (m, K)
    pos_n, neg_n, n = pos.sum(axis=0), neg.sum(axis=0), onehot.sum(axis=0)
    if anchor is not None:
        sens0, fpr0, prior0, s = anchor
        sens = (pos_votes + s * sens0) / (pos_n + s)[None, :].clip(min=1e-12)
        fpr = (neg_votes + s * fpr0) / (neg_n + s)[None, :].clip(min=1e-12)
        prior = (pos_n + s * prior0) / (n + s).clip(min=1e-12)
        # a category with no candidate and no anchor weight keeps its earlier values
        empty = (n + s) <= 0
        sens[:, empty], fpr[:, empty], prior[empty] = sens0[:, empty], fpr0[:, empty], prior0[empty]
    else:
        sens = (pos_votes + smoothing) / (pos_n + 2 * smoothing)[None, :].clip(min=1e-12)
        fpr = (neg_votes + smoothing) / (neg_n + 2 * smoothing)[None, :].clip(min=1e-12)
        prior = (pos_n + smoothing) / (n + 2 * smoothing).clip(min=1e-12)
    assert sens.shape == (m, cols)
    return sens.clip(_EPS, 1 - _EPS), fpr.clip(_EPS, 1 - _EPS), prior.clip(_EPS, 1 - _EPS)


def _posterior(votes: np.ndarray, k: np.ndarray, sens: np.ndarray, fpr: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """P(PHI | votes) per candidate under the independent-annotator model."""
    if not len(k):
        return np.zeros(0)
    v = votes.astype(np.float64)
    s, f = sens[:, k].T, fpr[:, k].T  # (n, m)
    log_pos = np.log(prior[k]) + (v * np.log(s) + (1 - v) * np.log1p(-s)).sum(axis=1)
    log_neg = np.log1p(-prior[k]) + (v * np.log(f) + (1 - v) * np.log1p(-f)).sum(axis=1)
    return 1.0 / (1.0 + np.exp(np.clip(log_neg - log_pos, -700, 700)))
