"""Decision templates [KIM20, after Kuncheva 2001].

Rules, exactly:

1. Every candidate span (see ``candidates``) has a decision profile: one row
   per member, ``[1, 0]`` if the member produced the span (label included),
   else ``[0, 1]``.
2. Fitting: the template of each class (True span = matches gold under the
   strict criterion; False span) is the mean profile over the training
   candidates of that class. A class with no training candidate has no
   template and is never chosen.
3. A candidate is classified by the nearest template under the Hamming
   (city-block) distance between its binary profile and the real-valued
   template, ``sum_j |p_j - T_j|`` over both columns of every row. A tie
   goes to False (the span is dropped).
4. Overlapping True candidates are resolved as in voting: more votes wins, a
   tie goes to the better cross-validated member.
"""
from __future__ import annotations

import numpy as np

from .base import SpanMetaLearner
from .candidates import CandidateTable, best_voter_rank, resolve_overlaps, voting_priority


def profiles(votes: np.ndarray) -> np.ndarray:
    """(n, m, 2) decision profiles of candidates."""
    v = votes.astype(np.float64)
    return np.stack([v, 1.0 - v], axis=2)


def hamming(profile: np.ndarray, template: np.ndarray) -> np.ndarray:
    """City-block distance of each (m, 2) profile to a template."""
    return np.abs(profile - template[None]).sum(axis=(1, 2))


class DecisionTemplates(SpanMetaLearner):
    """Nearest class template (Hamming distance) on the members' span profiles."""

    name = "decision-templates"
    description = "nearest decision template (Hamming) per candidate span; voting tie-breaks"

    def __init__(self):
        pass

    def _fit_prepared(self, table: CandidateTable) -> None:
        self._member_ranks(table)
        prof = profiles(table.votes)
        self.template_true_ = prof[table.gold].mean(axis=0) if table.gold.any() else None
        self.template_false_ = prof[~table.gold].mean(axis=0) if (~table.gold).any() else None

    def distances(self, table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
        """(distance to the True template, distance to the False template); inf
        where a class has no template."""
        self.check_fitted()
        prof = profiles(table.votes)
        inf = np.full(len(table), np.inf)
        d_true = inf if self.template_true_ is None else hamming(prof, self.template_true_)
        d_false = inf if self.template_false_ is None else hamming(prof, self.template_false_)
        return d_true, d_false

    def _predict_raw(self, table: CandidateTable) -> np.ndarray:
        d_true, d_false = self.distances(table)
        keep = d_true < d_false
        count = table.vote_count
        priority = voting_priority(count, best_voter_rank(table.votes, self.member_rank_), table.n_members)
        return resolve_overlaps(table, keep, priority)
