"""Voting pruned by greedy backward elimination [KIM20].

For each threshold t: start from every member; repeatedly drop the one member
whose removal gives the best training score (strict micro F1 of voting at t
over the remaining members, on the out-of-fold predictions the learner is
fitted on); stop when no removal strictly improves the score. Then keep the
(t, subset) with the best score.

Deterministic tie rules (not specified by the paper):
- two removals giving the same score: drop the member with the worse
  cross-validated F1 (the later one in the voting tie-break order;
  ``removal_ties="worse"``, the default), or, as the [KIM20] authors'
  voteSearch.java does, the earliest-listed member (``removal_ties="earliest"``:
  their loop keeps the first removal that strictly beats the best so far, and
  they listed members best first, so it drops the better one);
- two (t, subset) results with the same score: the lower t wins (both).

Overlapping kept spans are resolved by voting's rule (``overlap``: greedy, or
the authors' chain sweep; see ``voting``).

The search is vectorised (:class:`SubsetScorer`): members become bits of a
uint64 mask per candidate (bit = the member's tie-break rank), candidates
that overlap nothing are grouped by mask once, so a subset's score at t is a
popcount, a comparison and a dot product, plus the overlap resolution of the
contested candidates (components of overlapping spans, decided in closed
form or by dense local maxima); all removals of one elimination step are scored
together as columns of one array.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .base import METRICS, SpanMetaLearner, check_metric, metric_value
from .candidates import CandidateTable, resolve_contested
from .voting import OVERLAP_RULES, Voting, resolve_chain_contested, vote_select
from ..taggers.constraints import MAX_COUNT, Interval, Options, validate_params

ONE = np.uint64(1)
REMOVAL_TIES = ("worse", "earliest")


def _bits(columns) -> np.uint64:
    out = np.uint64(0)
    for c in columns:
        out |= ONE << np.uint64(c)
    return out


def _greedy_contested(table: CandidateTable, keep: np.ndarray, priority: np.ndarray, primary: np.ndarray) -> np.ndarray:
    """``resolve_contested`` called like ``resolve_chain_contested`` (greedy needs no primary key)."""
    return resolve_contested(table, keep, priority)


def _check(**params) -> None:
    """The search's own arguments, by the methods' declared constraints (the
    functions are called directly too: prune, the study's curves); a single
    threshold is an integer of at least 1 as voting's."""
    constraints = {**PrunedVoting._parameter_constraints, "threshold": Voting._parameter_constraints["threshold"]}
    validate_params(f"ensemble method {PrunedVoting.name!r}", params, constraints)


class SubsetScorer:
    """Scores of voting over member subsets at a threshold, many at once."""

    def __init__(self, table: CandidateTable, rank: np.ndarray, metric: str = "f1", overlap: str = "greedy"):
        self.metric = check_metric(metric)
        _check(overlap=overlap)
        self.resolve = resolve_chain_contested if overlap == "chain" else _greedy_contested
        self.m = table.n_members
        self.rank = np.asarray(rank, dtype=np.int64)
        self.table = table
        weights = np.left_shift(ONE, self.rank.astype(np.uint64))  # member j -> bit rank[j]
        masks = (table.votes.astype(np.uint64) * weights[None, :]).sum(axis=1, dtype=np.uint64) \
            if len(table) else np.zeros(0, np.uint64)
        contested = np.zeros(len(table), dtype=bool)
        contested[table.contested] = True
        # Uncontested candidates: grouped by mask (selected iff kept).
        free = ~contested
        self.free_masks, inverse = np.unique(masks[free], return_inverse=True)
        self.free_total = np.bincount(inverse, minlength=len(self.free_masks)).astype(np.int64)
        self.free_gold = np.bincount(inverse, weights=table.gold[free], minlength=len(self.free_masks)).astype(np.int64)
        # Contested candidates: resolved per component at every evaluation.
        # Narrow masks when the priority key fits: less memory traffic per evaluation.
        self.dtype = np.uint32 if self.m <= 27 else np.uint64
        self.free_masks = self.free_masks.astype(self.dtype)
        self.c_masks = masks[table.contested].astype(self.dtype)
        self.c_gold_rows = np.flatnonzero(table.gold[table.contested])
        self.n_gold = int(table.n_gold.sum())
        self.evaluations = 0

    def subset_bits(self, columns) -> np.uint64:
        """The mask of a set of member columns."""
        return _bits(int(self.rank[c]) for c in columns)

    def counts(self, subsets: np.ndarray, threshold: int) -> np.ndarray:
        """(k, 3) strict tp, fp, fn of voting at ``threshold`` over each subset mask."""
        subsets = np.atleast_1d(np.asarray(subsets, dtype=np.uint64)).astype(self.dtype)
        self.evaluations += len(subsets)
        kept = np.bitwise_count(self.free_masks[:, None] & subsets[None, :]) >= threshold
        tp = self.free_gold @ kept
        n_sel = self.free_total @ kept
        if len(self.c_masks):
            x = self.c_masks[:, None] & subsets[None, :]
            votes = np.bitwise_count(x)
            keep = votes >= threshold
            chosen = self.resolve(self.table, keep, self._priority(x, votes), votes)
            tp = tp + np.count_nonzero(chosen[self.c_gold_rows], axis=0)
            n_sel = n_sel + np.count_nonzero(chosen, axis=0)
        tp = np.asarray(tp, dtype=np.int64)
        return np.stack([tp, n_sel - tp, self.n_gold - tp], axis=1)

    def _priority(self, x: np.ndarray, votes: np.ndarray) -> np.ndarray:
        """Voting priority from voter masks: more votes, then the best-ranked
        voter (the lowest set bit)."""
        one, m = self.dtype(1), self.dtype(self.m)
        low = x & (~x + one)
        if self.m <= 57:  # votes * 2^m + (2^m - lowbit) fits in the mask's width (32 bits up to m = 27)
            return (votes.astype(self.dtype) << m) + ((one << m) - low)
        best = np.where(x > 0, np.log2(np.maximum(low, one).astype(np.float64)), self.m)
        return votes * (self.m + 1.0) + (self.m - best)

    def scores(self, subsets: np.ndarray, threshold: int) -> np.ndarray:
        return np.array([metric_value(*c, self.metric) for c in self.counts(subsets, threshold).tolist()])


@dataclass
class PruningPath:
    """Backward elimination at one threshold: the members removed in order,
    with the score after each removal."""

    threshold: int
    start_score: float
    steps: list[tuple[str, float]] = field(default_factory=list)
    subset: tuple[str, ...] = ()
    score: float = 0.0
    counts: tuple[int, int, int] = (0, 0, 0)


@dataclass
class PruningSearch:
    paths: dict[int, PruningPath]
    threshold: int
    subset: tuple[str, ...]
    score: float
    metric: str
    evaluations: int


def pruning_search(table: CandidateTable, rank: np.ndarray, thresholds=None, metric: str = "f1",
                   removal_ties: str = "worse", overlap: str = "greedy") -> PruningSearch:
    """Greedy backward elimination for each threshold (all of 1..m by default)."""
    _check(removal_ties=removal_ties)
    earliest = removal_ties == "earliest"
    scorer = SubsetScorer(table, rank, metric, overlap)
    m = table.n_members
    names = table.member_names
    if thresholds is None:
        thresholds = list(range(1, m + 1))
    paths: dict[int, PruningPath] = {}
    for t in thresholds:
        _check(threshold=t)
        t = int(t)
        current = list(range(m))  # member columns, in order
        bits = scorer.subset_bits(current)
        counts = scorer.counts(bits, t)[0]
        score = metric_value(*counts.tolist(), metric)
        path = PruningPath(t, score)
        while len(current) > 1:
            candidates = np.array([bits & ~(ONE << np.uint64(scorer.rank[c])) for c in current], dtype=np.uint64)
            all_counts = scorer.counts(candidates, t)
            scores = np.array([metric_value(*c, metric) for c in all_counts.tolist()])
            best = scores.max()
            if not best > score:
                break
            # Ties: the earliest-listed member (``current`` is in column order)
            # or the one with the worst rank (highest bit).
            tied = [i for i in range(len(current)) if scores[i] == best]
            pick = tied[0] if earliest else max(tied, key=lambda i: scorer.rank[current[i]])
            removed = current.pop(pick)
            bits = candidates[pick]
            score, counts = float(best), all_counts[pick]
            path.steps.append((names[removed], score))
        path.subset = tuple(names[c] for c in current)
        path.score = float(score)
        path.counts = tuple(int(x) for x in counts.tolist())
        paths[t] = path
    best_t = max(paths, key=lambda t: (paths[t].score, -t))
    return PruningSearch(paths, best_t, paths[best_t].subset, paths[best_t].score, metric, scorer.evaluations)


class PrunedVoting(SpanMetaLearner):
    """Voting over the member subset and threshold found by greedy backward
    elimination on the fitting documents.

    Parameters
    ----------
    threshold : int or None
        Search only this threshold; None searches every threshold 1..m.
    metric : {"f1", "f2", "recall"}
        Strict micro score the elimination maximises.
    removal_ties : {"worse", "earliest"}
        Which of two equally good removals is made: the member with the worse
        cross-validated F1 (the project's rule) or the earliest-listed one
        (the authors' code).
    overlap : {"greedy", "chain"}
        Overlap resolution of the voting rule (see ``Voting``).
    """

    name = "voting-pruned"
    description = "voting over the subset and threshold chosen by greedy backward elimination"

    _parameter_constraints = {"threshold": [None, Options("auto"), Interval(int, 1, MAX_COUNT)], "metric": [Options(*METRICS)],
                              "removal_ties": [Options(*REMOVAL_TIES)], "overlap": [Options(*OVERLAP_RULES)]}

    def __init__(self, threshold=None, metric="f1", removal_ties="worse", overlap="greedy"):
        self.threshold = threshold
        self.metric = metric
        self.removal_ties = removal_ties
        self.overlap = overlap

    def _fit_prepared(self, table: CandidateTable) -> None:
        thresholds = None if self.threshold in (None, "auto") else [int(self.threshold)]
        self._member_ranks(table)
        search = pruning_search(table, self.member_rank_, thresholds, self.metric, self.removal_ties, self.overlap)
        self.search_ = search
        self.threshold_ = search.threshold
        self.subset_ = tuple(search.subset)
        self.subset_columns_ = np.array([table.member_names.index(n) for n in search.subset], dtype=np.int64)

    def _fitted_state(self) -> dict:
        state = super()._fitted_state()
        state.pop("search_", None)  # the elimination record: reported, not needed to predict
        return state

    def _predict_raw(self, table: CandidateTable) -> np.ndarray:
        return vote_select(table, self.threshold_, self.member_rank_, self.subset_columns_, self.overlap)

    def _raw_to_predictions(self, table, raw):
        votes = table.votes[:, self.subset_columns_].sum(axis=1)
        return table.to_predictions(raw, votes / max(len(self.subset_columns_), 1))
