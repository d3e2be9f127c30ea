"""Diagnostics beyond [KIM20], all on a candidate table (strict criterion):

- the oracle: a gold span counts as found if any member produced it exactly
  (precision 1 by construction); its recall bounds every span-selecting
  ensemble;
- pairwise agreement: Jaccard overlap of two members' span sets, and their
  double fault (share of gold spans both miss);
- each member's marginal contribution: gold spans only it found, and the
  change in voting's score when it is left out (threshold fixed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from typing import Mapping, Sequence

from ..corpus.document import Document
from ..evaluation import micro_prf
from ..taggers.prediction import DocumentPrediction
from .base import metric_value
from .candidates import CandidateTable, build_candidates
from .pruning import ONE, SubsetScorer


@dataclass(frozen=True)
class Oracle:
    found: int
    n_gold: int

    @property
    def recall(self) -> float:
        return self.found / self.n_gold if self.n_gold else 0.0

    @property
    def f1(self) -> float:
        return metric_value(self.found, 0, self.n_gold - self.found, "f1")


def oracle(table: CandidateTable) -> Oracle:
    return Oracle(int(table.gold.sum()), int(table.n_gold.sum()))


def pairwise_agreement(table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
    """(jaccard, double_fault), both (m, m). jaccard[i, j] = |S_i & S_j| /
    |S_i | S_j| over the members' spans (label included); double_fault[i, j]
    = share of gold spans that neither i nor j produced."""
    v = table.votes.astype(np.int64)
    both = v.T @ v
    size = np.diag(both)
    union = size[:, None] + size[None, :] - both
    jaccard = np.divide(both, union, out=np.ones_like(both, dtype=np.float64), where=union > 0)
    g = v[table.gold]
    hit_either = g.shape[0] - ((1 - g).T @ (1 - g))  # gold candidates found by i or j
    n_gold = int(table.n_gold.sum())
    double_fault = (n_gold - hit_either) / n_gold if n_gold else np.zeros_like(jaccard)
    return jaccard, np.asarray(double_fault, dtype=np.float64)


@dataclass(frozen=True)
class Contribution:
    member: str
    precision: float
    recall: float
    f1: float
    unique_true: int  # gold spans no other member found
    unique_false: int  # false spans no other member produced
    delta: float  # score(all members) - score(all but this one), voting at the threshold


def best_threshold(table: CandidateTable, rank: np.ndarray | None = None, metric: str = "f1") -> int:
    """The voting threshold with the best score over all members on ``table``."""
    scorer = SubsetScorer(table, table.member_rank() if rank is None else rank, metric)
    full = scorer.subset_bits(range(table.n_members))
    scores = [scorer.scores(full, t)[0] for t in range(1, table.n_members + 1)]
    return max(range(len(scores)), key=lambda i: (scores[i], -i)) + 1


def marginal_contributions(table: CandidateTable, threshold: int, rank: np.ndarray | None = None,
                           metric: str = "f1") -> list[Contribution]:
    rank = table.member_rank() if rank is None else rank
    scorer = SubsetScorer(table, rank, metric)
    m = table.n_members
    full = scorer.subset_bits(range(m))
    base = scorer.figures(full, threshold)[0]
    without = np.array([full & ~(ONE << np.uint64(rank[j])) for j in range(m)], dtype=np.uint64)
    scores = scorer.figures(without, threshold)
    only = table.votes & (table.votes.sum(axis=1) == 1)[:, None]
    out = []
    for j, (tp, fp, fn) in enumerate(table.member_counts().tolist()):
        p, r, f = micro_prf(tp, fp, fn)
        out.append(Contribution(
            table.member_names[j], p, r, f, int((only[:, j] & table.gold).sum()),
            int((only[:, j] & ~table.gold).sum()), float(base - scores[j]),
        ))
    return out


@dataclass(frozen=True)
class MemberDiagnostics:
    """The diagnostics of one member set on a scored split: voting's
    threshold and the members' rank come from the training split's
    out-of-fold predictions (as the ensembles choose them), the figures from
    the scored split."""

    members: tuple[str, ...]
    threshold: int
    oracle: Oracle
    contributions: list[Contribution]
    jaccard: np.ndarray
    double_fault: np.ndarray


def member_diagnostics(oof: Mapping[str, Mapping[str, DocumentPrediction]], train: Sequence[Document],
                       scored: Mapping[str, Mapping[str, DocumentPrediction]], documents: Sequence[Document]) -> MemberDiagnostics:
    """``oof``: member -> out-of-fold predictions on ``train``; ``scored``:
    the same members' predictions on ``documents`` (the split reported)."""
    names = tuple(oof)
    train_table = build_candidates([oof[n] for n in names], names, train)
    table = build_candidates([scored[n] for n in names], names, documents)
    rank = train_table.member_rank()
    t = best_threshold(train_table, rank)
    jaccard, double_fault = pairwise_agreement(table)
    return MemberDiagnostics(names, t, oracle(table), marginal_contributions(table, t, rank), jaccard, double_fault)
