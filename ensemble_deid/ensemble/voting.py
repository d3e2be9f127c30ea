"""Voting [KIM20]: keep the candidate spans with at least ``threshold`` votes.

Rules, exactly:

1. A candidate is a distinct (document, start, end, label); its votes are the
   members that predicted exactly that span with exactly that label.
2. Keep the candidates with ``votes >= threshold``.
3. Overlapping kept candidates: visit them by decreasing votes and accept each
   one that overlaps no accepted span ("the one with more votes wins"). Equal
   votes: the candidate whose best voter has the better cross-validated
   (out-of-fold, strict) F1 on the fitting documents comes first; members with
   equal F1 rank in the order they were given. Two overlapping candidates can
   never share a voter (a member's own spans never overlap), so this order is
   total.
"""
from __future__ import annotations

import numpy as np

from .base import SpanMetaLearner
from .candidates import CandidateTable, best_voter_rank, resolve_overlaps, voting_priority
from ..taggers.constraints import Interval


def vote_select(table: CandidateTable, threshold: int, rank: np.ndarray,
                columns: np.ndarray | None = None) -> np.ndarray:
    """The voting rule over some members (all by default): a candidate mask."""
    votes = table.votes if columns is None else table.votes[:, columns]
    sub_rank = rank if columns is None else rank[columns]
    count = votes.sum(axis=1)
    keep = count >= threshold
    priority = voting_priority(count, best_voter_rank(votes, sub_rank), table.n_members)
    return resolve_overlaps(table, keep, priority)


def check_threshold(threshold, who: str) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)) or threshold < 1:
        raise ValueError(f"{who}: threshold must be an integer >= 1, not {threshold!r}")
    return int(threshold)


class Voting(SpanMetaLearner):
    """Majority-style voting over member spans with the [KIM20] tie-breaks.

    Parameters
    ----------
    threshold : int
        Minimum number of members that must predict a span (label included).
        Chosen by cross-validation over 1..m when used through ``GridSearch``.
    """

    name = "voting"
    description = "keep spans with >= t votes; overlaps: more votes, then the better member"

    _parameter_constraints = {"threshold": [Interval(int, 1, None)]}

    def __init__(self, threshold=2):
        self.threshold = threshold

    def default_grid(self, n_members: int) -> dict[str, list]:
        return {"threshold": list(range(1, n_members + 1))}

    def _fit_prepared(self, table: CandidateTable) -> None:
        check_threshold(self.threshold, self.name)
        self._member_ranks(table)

    def _predict_raw(self, table: CandidateTable) -> np.ndarray:
        return vote_select(table, check_threshold(self.threshold, self.name), self.member_rank_)

    def _raw_to_predictions(self, table, raw):
        return table.to_predictions(raw, table.vote_count / max(table.n_members, 1))
