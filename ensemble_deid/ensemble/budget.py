"""Cost in selection: voting over member subsets whose summed inference cost
fits a budget, and the Pareto front of (objective, cost).

A member's cost is its inference cost, CPU seconds per million tokens
(``experiment.cost``); a subset costs the sum of its members' costs (voting
runs every kept member on every note; the vote itself costs nothing beside
them). The threshold does not change the cost.

With a budget, every subset whose cost is at most the budget is scored at
every threshold 1..|subset| on the fitting documents (exhaustive, vectorised
by :class:`~ensemble_deid.ensemble.pruning.SubsetScorer`), and the best
(objective, then lower cost, lower threshold, fewer members, better-ranked
members) is kept: so raising the budget never lowers the chosen score. Up to
``MAX_EXHAUSTIVE`` members (2^16 subsets).

The **Pareto front** is the set of (threshold, subset) points that no other
point beats on both axes: none scores at least as well at no higher cost and
strictly better on one of them. Points equal on both are one point on the
front: the first in the tie order above is kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import ParameterError

MAX_EXHAUSTIVE = 16
CHUNK = 2048  # subsets scored at once: bounds the (candidates x subsets) arrays
UNIT = "CPU s per million tokens"


@dataclass(frozen=True)
class SubsetPoint:
    """Voting at ``threshold`` over ``subset`` (member names, in member order):
    its summed cost, the objective's figure (``score``) and sortable key, and
    strict (tp, fp, fn) on the fitting documents."""

    threshold: int
    subset: tuple[str, ...]
    cost: float
    score: float
    key: tuple
    counts: tuple[int, int, int]
    order: int = 0  # the subset's tie rank: the sum of 2^rank of its members (lower = better-ranked members)

    def tie_key(self) -> tuple:
        """Lower first among equal scores: cheaper, lower threshold, fewer members, better-ranked members."""
        return (self.cost, self.threshold, len(self.subset), self.order)


def check_budget(budget, option: str = "--budget") -> float | None:
    """A budget in CPU seconds per million tokens (a positive finite number), or None for none."""
    if budget is None:
        return None
    if isinstance(budget, str):
        text = budget.strip().lower()
        if text in ("", "none"):
            return None
        try:
            budget = float(text)
        except ValueError:
            raise ParameterError(f"expected a number of {UNIT} (e.g. 20) or 'none', got {budget!r}", option) from None
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not math.isfinite(budget) or budget <= 0:
        raise ParameterError(f"expected a positive number of {UNIT}, got {budget!r}", option)
    return float(budget)


def cost_vector(names: Sequence[str], costs: Mapping[str, float | None] | None, option: str = "--budget") -> np.ndarray:
    """The members' costs in column order; a member without one is a ParameterError naming it."""
    costs = costs or {}
    unknown = [n for n in names if not _is_cost(costs.get(n))]
    if unknown:
        raise ParameterError(f"member(s) {', '.join(unknown)} have no recorded inference cost ({UNIT}): a "
                             "cached ensemble named as a member has none; name its taggers instead", option)
    return np.array([float(costs[n]) for n in names], dtype=np.float64)


def _is_cost(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def affordable_subsets(costs: np.ndarray, budget: float | None, option: str = "--budget") -> np.ndarray:
    """Column masks (bit j = member column j) of every non-empty subset whose
    summed cost is at most ``budget`` (every subset for None), cheapest-first
    ties aside in mask order. No subset fitting is a ParameterError naming the
    option and the cheapest subset's cost."""
    m = len(costs)
    if m > MAX_EXHAUSTIVE:
        raise ParameterError(f"{m} members: the cost search scores every member subset and takes at most "
                             f"{MAX_EXHAUSTIVE} members", option)
    masks = np.arange(1, 1 << m, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(m)) & 1
    total = bits @ costs
    if budget is None:
        return masks
    fits = total <= budget + 1e-9 * max(1.0, budget)  # a sum of rounded costs equal to the budget fits
    if not fits.any():
        cheapest = int(np.argmin(costs))
        raise ParameterError(f"no member subset fits the budget of {budget:g} {UNIT}: the cheapest subset is "
                             f"one member costing {costs[cheapest]:,.1f}; raise {option} to at least that", option)
    return masks[fits]


def score_subsets(scorer, names: Sequence[str], costs: np.ndarray, masks: np.ndarray,
                  thresholds: Sequence[int] | None = None) -> list[SubsetPoint]:
    """Every (threshold, subset) point of the column masks: thresholds 1..m
    by default, each over the subsets with at least that many members."""
    m = len(names)
    rank = np.asarray(scorer.rank, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(m)) & 1
    sizes = bits.sum(axis=1)
    cost = bits @ costs
    # The scorer's masks put member j at bit rank[j]; the same sum ranks subsets for ties.
    ranked = (bits.astype(np.uint64) << rank.astype(np.uint64)[None, :]).sum(axis=1, dtype=np.uint64)
    points = []
    for t in (range(1, m + 1) if thresholds is None else thresholds):
        rows = np.flatnonzero(sizes >= int(t))
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start:start + CHUNK]
            for i, counts in zip(chunk.tolist(), scorer.counts(ranked[chunk], int(t)).tolist()):
                key = scorer.score(counts)
                points.append(SubsetPoint(int(t), tuple(names[j] for j in range(m) if bits[i, j]), float(cost[i]),
                                          scorer.target.figure(key), key, tuple(int(x) for x in counts),
                                          int(ranked[i])))
    return points


def best_point(points: Sequence[SubsetPoint]) -> SubsetPoint:
    """The highest score; ties: cheaper, lower threshold, fewer members, better-ranked members."""
    top = max(p.key for p in points)
    return min((p for p in points if p.key == top), key=SubsetPoint.tie_key)


def pareto_front(points: Sequence[SubsetPoint]) -> list[SubsetPoint]:
    """The points no other point dominates, cheapest first (each dearer point
    scores strictly better than every cheaper one); points equal on both axes
    are one point (the first in tie order)."""
    ordered = sorted(points, key=lambda p: (p.threshold, len(p.subset), p.order))
    ordered.sort(key=lambda p: p.key, reverse=True)  # stable: ties keep the order above
    ordered.sort(key=lambda p: p.cost)
    front: list[SubsetPoint] = []
    for p in ordered:
        if not front or p.key > front[-1].key:
            front.append(p)
    return front


def best_within(front: Sequence[SubsetPoint], budget: float | None) -> SubsetPoint | None:
    """The best point of a front that fits the budget (None when none does)."""
    fits = [p for p in front if budget is None or p.cost <= budget + 1e-9 * max(1.0, budget)]
    return max(fits, key=lambda p: p.key) if fits else None  # keys differ along a front


__all__ = ["MAX_EXHAUSTIVE", "SubsetPoint", "UNIT", "affordable_subsets", "best_point", "best_within",
           "check_budget", "cost_vector", "pareto_front", "score_subsets"]
