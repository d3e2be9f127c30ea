"""Voting [KIM20]: keep the candidate spans with at least ``threshold`` votes.

Rules, exactly:

1. A candidate is a distinct (document, start, end, label); its votes are the
   members that predicted exactly that span with exactly that label.
2. Keep the candidates with ``votes >= threshold``.
3. Overlapping kept candidates (``overlap="greedy"``, the default): visit
   them by decreasing votes and accept each one that overlaps no accepted
   span ("the one with more votes wins"). Equal votes: the candidate whose
   best voter has the better cross-validated (out-of-fold, strict) F1 on the
   fitting documents comes first; members with equal F1 rank in the order
   they were given. Two overlapping candidates can never share a voter (a
   member's own spans never overlap), so this order is total.

``overlap="chain"`` is the sweep of the [KIM20] authors' code (vote.java,
voteSearch.java, DTM.java): visit the kept candidates in (start, end, type)
order (here (start, end, CATEGORY:TYPE): the order among one span's labels
cannot change the outcome, as they share their neighbours). A candidate is
compared with its overlapping candidates not yet decided:

- one has more votes: the candidate is dropped;
- else one has as many votes and a better best voter: the candidate is not
  kept but stays undecided, so it still outvotes its weaker neighbours
  visited later (until a neighbour that beats it is accepted);
- else it is accepted, and every undecided candidate overlapping it is
  dropped.

A span can so lose to a neighbour that is itself dropped later (X < Y < Z in
a chain keeps only Z, where greedy keeps X and Z). The authors' code drops
only the tied neighbours of a span that won a tie, leaving the weaker ones
undecided, so that two overlapping spans (even two labels on one span) can
both be kept; here every neighbour of an accepted span is dropped, so the
output never overlaps.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from .base import OPERATING_POINT
from .spans import SpanMetaLearner
from .candidates import CandidateTable, best_voter_rank, resolve_overlaps, voting_priority
from ..taggers.constraints import MAX_COUNT, Interval, Options
from .trust import TRUST, TRUST_GRID

OVERLAP_RULES = ("greedy", "chain")


def resolve_chain(table: CandidateTable, keep: np.ndarray, priority: np.ndarray, primary: np.ndarray) -> np.ndarray:
    """The chain sweep (module docstring) over kept candidates. ``primary`` is
    the first key of ``priority`` (votes, or a similarity): losing on it drops
    a candidate, losing only on the rest of ``priority`` leaves it undecided.
    Like :func:`~ensemble_deid.ensemble.candidates.resolve_overlaps`, the
    arrays are (n,) or (n, k) for k settings at once."""
    selected = keep.copy()
    c = table.contested
    if len(c):
        selected[c] = resolve_chain_contested(table, keep[c], priority[c], primary[c])
    return selected


def resolve_chain_contested(table: CandidateTable, keep: np.ndarray, priority: np.ndarray,
                            primary: np.ndarray) -> np.ndarray:
    """:func:`resolve_chain` on the contested rows only (indexed like
    ``table.contested``), vectorised over the components of each size."""
    comp = table.components
    flat = keep.ndim == 1
    if flat:
        keep, priority, primary = keep[:, None], priority[:, None], primary[:, None]
    chosen = np.zeros_like(keep)
    at = 0
    for size, count, adj in comp.blocks:
        block = slice(at, at + size * count)
        at += size * count
        undecided = keep[block].reshape(count, size, -1).copy()
        prio = priority[block].reshape(count, size, -1)
        first = primary[block].reshape(count, size, -1)
        won = chosen[block].reshape(count, size, -1)  # a view: filled in place
        if adj is None:  # two rows: they overlap
            adj = np.ones((count, 2, 2), dtype=bool)
            adj[:, [0, 1], [0, 1]] = False
        # A component's rows are consecutive and in (start, end, label) order: the sweep's.
        for q in range(size):
            rivals = adj[:, q, :, None] & undecided  # (count, size, k): undecided neighbours of row q
            outvoted = (rivals & (first > first[:, q, None, :])).any(axis=1)
            beaten = (rivals & (prio > prio[:, q, None, :])).any(axis=1)
            accept = undecided[:, q] & ~beaten
            won[:, q] = accept
            undecided &= ~(adj[:, q, :, None] & accept[:, None, :])
            undecided[:, q] &= ~(accept | outvoted)  # beaten on the tie-break only: stays undecided
    return chosen[:, 0] if flat else chosen


def resolve(table: CandidateTable, keep: np.ndarray, priority: np.ndarray, overlap: str = "greedy",
            primary: np.ndarray | None = None) -> np.ndarray:
    """Overlap resolution by the named rule (``primary``: see :func:`resolve_chain`)."""
    if overlap == "chain":
        return resolve_chain(table, keep, priority, priority if primary is None else primary)
    return resolve_overlaps(table, keep, priority)


def check_threshold(threshold, n_members: int, name: str = "threshold") -> None:
    """A vote threshold no span can reach (above the number of members) is a
    ValueError: the method would keep nothing."""
    if isinstance(threshold, Integral) and not isinstance(threshold, bool) and threshold > n_members:
        raise ValueError(f"{name} {threshold} exceeds the number of members ({n_members})")


def vote_select(table: CandidateTable, threshold: int, rank: np.ndarray,
                columns: np.ndarray | None = None, overlap: str = "greedy") -> np.ndarray:
    """The voting rule over some members (all by default): a candidate mask."""
    votes = table.votes if columns is None else table.votes[:, columns]
    sub_rank = rank if columns is None else rank[columns]
    count = votes.sum(axis=1)
    keep = count >= threshold
    priority = voting_priority(count, best_voter_rank(votes, sub_rank), table.n_members)
    return resolve(table, keep, priority, overlap, count)


def select_kept_by_votes(table: CandidateTable, keep: np.ndarray, rank: np.ndarray, overlap: str = "greedy") -> list:
    """Per operating point (a column of ``keep``), the kept candidates with
    their overlaps resolved by voting's priority (more votes, then the better
    member): one candidate mask a column."""
    count = table.vote_count
    priority = voting_priority(count, best_voter_rank(table.votes, rank), table.n_members)
    k = keep.shape[1]
    chosen = resolve(table, keep, np.repeat(priority[:, None], k, 1), overlap, np.repeat(count[:, None], k, 1))
    return [chosen[:, i] for i in range(k)]


class Voting(SpanMetaLearner):
    """Majority-style voting over member spans with the [KIM20] tie-breaks.

    Parameters
    ----------
    threshold : int
        Minimum number of members that must predict a span (label included).
        Chosen by cross-validation over 1..m when used through ``GridSearch``.
    overlap : {"greedy", "chain"}
        How overlapping kept spans are resolved: by decreasing priority (the
        project's rule) or the authors' (start, end, type) sweep.
    operating_point : None or dict
        Per-category vote thresholds, e.g. ``{"NAME": 1}`` (other categories:
        ``threshold``); chosen by ``GridSearch`` for a per-category objective.
    trust : None or float in (0, 1]
        Let a member keep its spans of a label it has earned trust on
        (tp / (n + 1) >= trust on the fitting documents, or its category's)
        where the method leaves their tokens O or kept only spans inside
        them (``ensemble.trust``); None: the method's own rule. Chosen by
        cross-validation (default grid: ``ensemble.trust.TRUST_GRID``).
    """

    reads_member_confidences = False  # spans (votes) only

    name = "voting"
    description = "keep spans with >= t votes; overlaps: more votes, then the better member"
    scored = True

    _parameter_constraints = {"threshold": [Interval(int, 1, MAX_COUNT)], "overlap": [Options(*OVERLAP_RULES)],
                              "operating_point": [OPERATING_POINT], "trust": TRUST}

    def __init__(self, threshold=2, overlap="greedy", operating_point=None, trust=None):
        self._store_params(locals())

    def default_grid(self, n_members: int) -> dict[str, list]:
        return {"threshold": list(range(1, n_members + 1)), "trust": list(TRUST_GRID)}

    def check_members(self, n_members: int) -> None:
        check_threshold(self.threshold, n_members)

    def _fit_prepared(self, table: CandidateTable) -> None:
        self._member_ranks(table)
        self._learn_trust(table)

    def _predict_raw(self, table: CandidateTable) -> np.ndarray:
        if self.operating_point:
            return self._select(table, self._scores(table), [self.operating_point])[0]
        return self._trusted(table, vote_select(table, int(self.threshold), self.member_rank_, overlap=self.overlap))

    # The score: a candidate's votes.
    score_meaning = "the votes a span gets: 1 to the number of members"

    def score_range(self) -> tuple[float, float]:
        self.check_fitted()
        return 1.0, float(len(self.member_names_))

    def _scores(self, table: CandidateTable) -> np.ndarray:
        return table.vote_count.astype(np.float64)

    def _select(self, table, scores, points):
        keep = self._keep(table, scores, points, scores >= int(self.threshold))
        return self._trusted(table, select_kept_by_votes(table, keep, self.member_rank_, self.overlap))

    def _raw_to_predictions(self, table, raw):
        return table.to_predictions(raw, table.vote_count / max(table.n_members, 1))
