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

from .base import OPERATING_POINT
from .spans import SpanMetaLearner
from .budget import affordable_subsets, best_point, check_budget, cost_vector, score_subsets
from .objective import CRITERIA, Target, candidate_weights, check_objective, choose_category_points, parse_objective
from .candidates import CandidateTable, best_voter_rank, resolve_contested, voting_priority
from .voting import OVERLAP_RULES, Voting, check_threshold, resolve, resolve_chain_contested, vote_select
from .trust import TRUST, choose_trust, trusted_pairs
from ..taggers.constraints import MAX_COUNT, MAX_CPU_COST, Check, Interval, Options, validate_params

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


def _cost_table(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_CPU_COST
        for k, v in value.items())


class SubsetScorer:
    """Scores of voting over member subsets at a threshold, many at once."""

    def __init__(self, table: CandidateTable, rank: np.ndarray, objective="f1", overlap: str = "greedy"):
        self.target: Target = parse_objective(objective).base
        self.metric = str(self.target)
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
        # What a candidate adds under the target's criterion: strict, one
        # span (gold or not); token criteria, its tokens (candidate_weights).
        if self.target.criterion == "strict":
            tp_w, n_w, self.n_gold = table.gold.astype(np.int64), np.ones(len(table), np.int64), int(table.n_gold.sum())
        else:
            w, c = candidate_weights(table), CRITERIA.index(self.target.criterion)
            tp_w, n_w, self.n_gold = w.tp[c], w.n[c], int(w.gold_overall[c])
        self.free_masks, inverse = np.unique(masks[free], return_inverse=True)
        self.free_total = np.bincount(inverse, weights=n_w[free], minlength=len(self.free_masks)).astype(np.int64)
        self.free_gold = np.bincount(inverse, weights=tp_w[free], minlength=len(self.free_masks)).astype(np.int64)
        # Contested candidates: resolved per component at every evaluation.
        # Narrow masks when the priority key fits: less memory traffic per evaluation.
        self.dtype = np.uint32 if self.m <= 27 else np.uint64
        self.free_masks = self.free_masks.astype(self.dtype)
        self.c_masks = masks[table.contested].astype(self.dtype)
        self.c_tp = tp_w[table.contested]
        self.c_n = n_w[table.contested]
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
            tp = tp + self.c_tp @ chosen
            n_sel = n_sel + self.c_n @ chosen
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

    def score(self, counts) -> tuple:
        """The target's sortable score of (tp, fp, fn)."""
        tp, fp, fn = (int(x) for x in counts)
        return self.target.score((tp, tp + fp, tp, tp + fn))

    def figure(self, counts) -> float:
        """The figure the target maximises (F-beta, or the precision/recall it trades)."""
        return self.target.figure(self.score(counts))

    def scores(self, subsets: np.ndarray, threshold: int) -> list[tuple]:
        return [self.score(c) for c in self.counts(subsets, threshold).tolist()]

    def figures(self, subsets: np.ndarray, threshold: int) -> np.ndarray:
        """The target's figure (F1, ...) of each subset."""
        return np.array([self.figure(c) for c in self.counts(subsets, threshold).tolist()])


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
    key: tuple = ()  # the objective's sortable score (``score`` is its figure)


@dataclass
class PruningSearch:
    paths: dict[int, PruningPath]
    threshold: int
    subset: tuple[str, ...]
    score: float
    metric: str
    evaluations: int
    reached: bool = True  # a constrained target was met (else the closest result was kept)
    budget: float | None = None  # CPU s per million tokens the chosen subset had to fit (``budget``)
    cost: float | None = None  # the chosen subset's summed cost, when costs were given
    points: list = field(default_factory=list)  # every (threshold, subset) scored by a budgeted search


def pruning_search(table: CandidateTable, rank: np.ndarray, thresholds=None, metric="f1",
                   removal_ties: str = "worse", overlap: str = "greedy") -> PruningSearch:
    """Greedy backward elimination for each threshold (all of 1..m by default),
    maximising the base clause of the objective ``metric``."""
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
        score = scorer.score(counts)
        path = PruningPath(t, scorer.target.figure(score))
        while len(current) > 1:
            candidates = np.array([bits & ~(ONE << np.uint64(scorer.rank[c])) for c in current], dtype=np.uint64)
            all_counts = scorer.counts(candidates, t)
            scores = [scorer.score(c) for c in all_counts.tolist()]
            best = max(scores)
            if not best > score:
                break
            # Ties: the earliest-listed member (``current`` is in column order)
            # or the one with the worst rank (highest bit).
            tied = [i for i in range(len(current)) if scores[i] == best]
            pick = tied[0] if earliest else max(tied, key=lambda i: scorer.rank[current[i]])
            removed = current.pop(pick)
            bits = candidates[pick]
            score, counts = best, all_counts[pick]
            path.steps.append((names[removed], scorer.target.figure(score)))
        path.subset = tuple(names[c] for c in current)
        path.score = scorer.target.figure(score)
        path.key = score
        path.counts = tuple(int(x) for x in counts.tolist())
        paths[t] = path
    best_t = max(paths, key=lambda t: (paths[t].key, -t))
    return PruningSearch(paths, best_t, paths[best_t].subset, paths[best_t].score, scorer.metric,
                         scorer.evaluations, scorer.target.is_reached(paths[best_t].key))


def budgeted_search(table: CandidateTable, rank: np.ndarray, costs, budget: float | None, thresholds=None,
                    metric="f1", overlap: str = "greedy") -> PruningSearch:
    """The best (threshold, subset) among every subset whose summed cost
    (``costs``: member name -> CPU s per million tokens) fits ``budget``
    (None: every subset), scored exhaustively (``ensemble.budget``)."""
    _check(overlap=overlap)
    budget = check_budget(budget, "budget")
    names = table.member_names
    cost = cost_vector(names, costs, "costs")
    scorer = SubsetScorer(table, rank, metric, overlap)
    masks = affordable_subsets(cost, budget, "budget")
    points = score_subsets(scorer, names, cost, masks, thresholds)
    if not points:
        raise ValueError(f"no subset within the budget has as many members as the threshold(s) {list(thresholds)}")
    everyone = scorer.subset_bits(range(len(names)))
    paths = {}
    for t in sorted({p.threshold for p in points}):
        best = best_point([p for p in points if p.threshold == t])
        paths[t] = PruningPath(t, scorer.figure(scorer.counts(everyone, t)[0]), [], best.subset, best.score,
                               best.counts, best.key)
    chosen = best_point(points)
    return PruningSearch(paths, chosen.threshold, chosen.subset, chosen.score, scorer.metric, scorer.evaluations,
                         scorer.target.is_reached(chosen.key), budget, chosen.cost, points)


class PrunedVoting(SpanMetaLearner):
    """Voting over the member subset and threshold found by greedy backward
    elimination on the fitting documents.

    Parameters
    ----------
    threshold : int or None
        Search only this threshold; None searches every threshold 1..m.
    objective : str
        What the elimination maximises (``ensemble.objective``: "f1", "f2",
        "binary-token:recall>=0.99", ...). Per-category clauses
        ("f1,NAME+ID=token:recall>=0.99") then choose a vote threshold per
        named category over the kept members, on the same documents.
        ``GridSearch`` hands its own objective over.
    removal_ties : {"worse", "earliest"}
        Which of two equally good removals is made: the member with the worse
        cross-validated F1 (the project's rule) or the earliest-listed one
        (the authors' code).
    overlap : {"greedy", "chain"}
        Overlap resolution of the voting rule (see ``Voting``).
    operating_point : None or dict
        Per-category vote thresholds over the kept members (``{"NAME": 1}``);
        None: chosen from the objective's category clauses when fitting.
    trust : "auto", None or float in (0, 1]
        Let a member (kept or eliminated) keep its spans of a label it has earned trust on
        (tp / (n + 1) >= trust on the fitting documents, or its category's)
        where the method leaves their tokens O or kept only spans inside them
        (``ensemble.trust``); None: the method's own rule; "auto" (default):
        the level of ``ensemble.trust.TRUST_GRID`` with the
        best F1 over 10 patient-grouped folds of the fitting documents, the
        elimination fitted once (``trust_`` records it).
    budget : None or float
        Keep only member subsets whose summed inference cost (``costs``, CPU
        seconds per million tokens) is at most this; the subset and threshold
        are then chosen by scoring every such subset (``budgeted_search``)
        instead of the greedy elimination. None: no budget.
    costs : None or dict
        Member name -> inference cost (``MemberRun.cost``); needed with a budget.
    """

    reads_member_confidences = False  # spans (votes) only

    name = "voting-pruned"
    description = "voting over the subset and threshold chosen by greedy backward elimination"
    scored = True
    chooses_operating_point = True

    _parameter_constraints = {"threshold": [None, Options("auto"), Interval(int, 1, MAX_COUNT)],
                              "objective": [Check(check_objective, "an objective such as 'f1' or "
                                                  "'binary-token:recall>=0.99' (see docs/ensembles.md)")],
                              "removal_ties": [Options(*REMOVAL_TIES)], "overlap": [Options(*OVERLAP_RULES)],
                              "operating_point": [OPERATING_POINT], "trust": [Options("auto"), *TRUST],
                              "budget": [None, Interval(float, 0, MAX_CPU_COST, closed="right")],
                              "costs": [None, Check(_cost_table, "a table of member name -> cost (a number in "
                                                                 f"[0, {MAX_CPU_COST:g}])")]}

    def __init__(self, threshold=None, objective="f1", removal_ties="worse", overlap="greedy", operating_point=None,
                 trust="auto", budget=None, costs=None):
        self._store_params(locals())

    def check_params(self) -> None:
        if self.budget is not None and self.costs is None:
            raise ValueError("ensemble method 'voting-pruned': a budget needs the members' costs (parameter costs)")

    def check_members(self, n_members: int) -> None:
        check_threshold(self.threshold, n_members)
        if hasattr(self, "threshold_"):  # fitted (a loaded bundle): the threshold chosen over the kept members
            check_threshold(self.threshold_, len(self.subset_), "the chosen threshold")


    def _fit_prepared(self, table: CandidateTable) -> None:
        thresholds = None if self.threshold in (None, "auto") else [int(self.threshold)]
        self._member_ranks(table)
        if self.budget is None:
            search = pruning_search(table, self.member_rank_, thresholds, self.objective, self.removal_ties,
                                    self.overlap)
        else:
            search = budgeted_search(table, self.member_rank_, self.costs, self.budget, thresholds, self.objective,
                                     self.overlap)
        self.search_ = search
        self.threshold_ = search.threshold
        self.subset_ = tuple(search.subset)
        self.subset_columns_ = np.array([table.member_names.index(n) for n in search.subset], dtype=np.int64)
        self.operating_point_ = self.operating_point or self._category_thresholds(table)
        self.trusted_ = []
        # Within a budget only the kept members may be trusted: another would add its inference cost.
        allowed = None if self.budget is None else set(self.subset_)
        if self.trust == "auto":  # the elimination is too costly to repeat per fold: trust is cross-validated alone
            self.trust_ = choose_trust(table, self._predict_raw, self.member_rank_, allowed=allowed)
            if self.trust_ is not None:
                self.trusted_ = trusted_pairs(table, self.trust_, allowed)
        elif self.trust is not None:
            self.trusted_ = trusted_pairs(table, float(self.trust), allowed)

    def _category_thresholds(self, table: CandidateTable) -> dict | None:
        """Per named category, the vote threshold (over the kept members) that
        its clause scores best on the fitting documents; ties: the lower one."""
        objective = parse_objective(self.objective)
        self.category_reached_ = {}
        if not objective.categories:
            return None
        scores = self._scores(table)
        candidates = [float(t) for t in range(1, len(self.subset_columns_) + 1)]
        point, self.category_reached_ = choose_category_points(
            objective, candidates, {}, lambda points: self._tallies(table, scores, points))
        return point or None

    def _fitted_state(self) -> dict:
        state = super()._fitted_state()
        state.pop("search_", None)  # the elimination record: reported, not needed to predict
        return state

    def _predict_raw(self, table: CandidateTable) -> np.ndarray:
        point = getattr(self, "operating_point_", None)
        if point:
            return self._select(table, self._scores(table), [point])[0]
        return self._trusted(table, vote_select(table, self.threshold_, self.member_rank_, self.subset_columns_,
                                                self.overlap))

    # The score: votes of the kept members.
    score_meaning = "the votes of the kept members: 0 to their number"

    def score_range(self) -> tuple[float, float]:
        self.check_fitted()
        return 0.0, float(len(self.subset_columns_))

    def _scores(self, table: CandidateTable) -> np.ndarray:
        return table.votes[:, self.subset_columns_].sum(axis=1).astype(np.float64)

    def _select(self, table, scores, points):
        keep = self._keep(table, scores, points, scores >= self.threshold_)
        votes = table.votes[:, self.subset_columns_]
        count = votes.sum(axis=1)
        priority = voting_priority(count, best_voter_rank(votes, self.member_rank_[self.subset_columns_]),
                                   table.n_members)
        k = keep.shape[1]
        chosen = resolve(table, keep, np.repeat(priority[:, None], k, 1), self.overlap, np.repeat(count[:, None], k, 1))
        return self._trusted(table, [chosen[:, i] for i in range(k)])

    def _raw_to_predictions(self, table, raw):
        votes = table.votes[:, self.subset_columns_].sum(axis=1)
        return table.to_predictions(raw, votes / max(len(self.subset_columns_), 1))
