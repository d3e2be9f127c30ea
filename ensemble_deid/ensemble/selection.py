"""Choosing hyperparameters and thresholds by cross-validation on the
out-of-fold predictions of the training set [KIM20].

``GridSearch(method, grid)`` splits the training documents into k folds
grouped by patient (``folds.assign_folds``), and for each setting fits the
method on k-1 folds of the members' out-of-fold predictions and predicts the
k-th; the pooled strict micro counts over the k held-out folds give the
setting's score under the objective (``objective``: strict F1 by default;
F-beta, recall-constrained targets, token criteria, per-category clauses).
The best setting (ties: the first in grid order) is refitted on every document.

Operating points: for an objective other than plain F1, a learner with a
score to move along (``scored``) is also given the decision threshold that
the objective prefers on the pooled held-out folds: the learner's own rule
first, then every threshold the out-of-fold scores suggest, lowest first
(ties go to the own rule, then to the lower threshold, which keeps more).
Per-category clauses then choose one threshold per named category the same
way, the others staying at the chosen point (with a plain strict-F1 base,
the learner's own rule: the F1-only ensemble's decisions). A constrained target met by
no threshold gets the closest one; ``reached_`` says so.

Nested cross-validation (``nested=True``) wraps that whole procedure in an
outer k-fold loop, so that the reported score did not help choose the
setting. It costs k times the plain selection: k * (k * |grid| + 1) fits
instead of k * |grid| + 1 (``nested_fits_`` reports it, with the seconds).
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..corpus.document import Document
from ..corpus.folds import FoldAssignment
from ..taggers.constraints import MAX_COUNT, SEED, Check, Interval, InvalidParameter
from ..taggers.prediction import DocumentPrediction
from .base import MetaLearner, Members, metric_value, ordered_members
from .objective import (Objective, Target, add_counts, best_index, check_objective, choose_category_points,
                        parse_objective)
from .splits import fitted_folds, fold_indices, make_folds


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of a parameter grid, in a stable order."""
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(list(grid[k]) for k in keys))]


@dataclass
class SettingResult:
    """One setting's pooled held-out result, all of it at one operating point:
    ``point`` (None: the learner's own rule), where the setting scores best
    for the objective. ``tp``/``fp``/``fn`` count strict spans; ``precision``
    and ``recall`` are under the objective's criterion (``criterion``), and
    ``score`` the figure the objective maximises (``Target.figure``)."""

    params: dict[str, Any]
    tp: int = 0
    fp: int = 0
    fn: int = 0
    score: float = 0.0
    point: dict | None = None
    criterion: str = "strict"
    precision: float | None = None
    recall: float | None = None

    def to_dict(self) -> dict:
        return {"params": self.params, "tp": self.tp, "fp": self.fp, "fn": self.fn, "score": self.score,
                "point": self.point, "criterion": self.criterion, "precision": self.precision,
                "recall": self.recall}


def _no_step() -> None:
    pass


def cv_scores(estimator: MetaLearner, grid: list[dict], prepared, folds: FoldAssignment, metric: str,
              step=_no_step) -> list[SettingResult]:
    """Pooled held-out counts of every setting (``step()`` after each fit)."""
    results = [SettingResult(dict(p)) for p in grid]
    for train_idx, test_idx in fold_indices(prepared.documents, folds):
        if not len(test_idx) or not len(train_idx):
            continue
        train, test = prepared.subset(train_idx), prepared.subset(test_idx)
        for res in results:
            model = estimator.clone().set_params(**res.params)
            model._fit_prepared(train)
            step()
            tp, fp, fn = model._raw_counts(test, model._predict_raw(test))
            res.tp += tp
            res.fp += fp
            res.fn += fn
    for res in results:
        res.score = metric_value(res.tp, res.fp, res.fn, metric)
        res.precision = res.tp / (res.tp + res.fp) if res.tp + res.fp else 0.0
        res.recall = res.tp / (res.tp + res.fn) if res.tp + res.fn else 0.0
    return results


@dataclass
class OperatingPointSearch:
    """The held-out curve of the chosen setting: one row per candidate point."""

    points: list  # operating points tried (None: the learner's own rule)
    counts: list  # pooled objective.Counts of each
    chosen: dict | None
    reached: dict  # "*" and each category clause -> target met on the held-out folds

    def curve(self, criterion: str = "binary-token") -> list[dict]:
        """precision/recall of every point under ``criterion`` (for plots)."""
        out = []
        for point, c in zip(self.points, self.counts):
            tp_s, n_s, tp_g, n_g = c.overall[criterion]
            out.append({"point": point, "precision": tp_s / n_s if n_s else 0.0, "recall": tp_g / n_g if n_g else 0.0})
        return out


def cv_choose(estimator: MetaLearner, grid: list[dict], prepared, folds: FoldAssignment, objective: Objective,
              scored: bool, step=_no_step):
    """Objective scores of every setting on the pooled held-out folds and,
    when ``scored``, the best setting's operating point (module docstring).
    Returns (results, best index, OperatingPointSearch or None, whether each
    target ("*" and each category clause) was met on the held-out folds)."""
    results = [SettingResult(dict(p)) for p in grid]
    fitted: list[list] = [[] for _ in grid]  # per setting: (model, held-out table, scores) per fold
    pooled = [None] * len(grid)
    for train_idx, test_idx in fold_indices(prepared.documents, folds):
        if not len(test_idx) or not len(train_idx):
            continue
        train, test = prepared.subset(train_idx), prepared.subset(test_idx)
        for i, res in enumerate(results):
            model = estimator.clone().set_params(**res.params)
            model._fit_prepared(train)
            step()
            if scored:
                fitted[i].append((model, test, model._scores(test)))
            else:
                pooled[i] = add_counts(pooled[i], model._tally(test, model._predict_raw(test)))
    base = objective.base
    search = None
    if not scored:
        keys = [objective.score(c) for c in pooled]
        best = best_index(keys)
        for res, c, key in zip(results, pooled, keys):
            _fill(res, c, base.figure(key), None, base.criterion)
        return results, best, None, {"*": base.is_reached(keys[best])}

    def tallies(i, points):
        total = [None] * len(points)
        for model, test, scores in fitted[i]:
            total = [add_counts(a, b) for a, b in zip(total, model._tallies(test, scores, points))]
        return total

    best_key, best, best_points, best_counts = None, 0, None, None
    # A plain strict-F1 base keeps the learner's own rule, as the F1-only ensemble does: per-category
    # clauses then move their own categories only, the others keep the F1-only decisions.
    sweeps = estimator.sweeps_base and objective.base != Target()
    for i, res in enumerate(results):
        points: list = [None]
        if sweeps and fitted[i]:
            all_scores = np.concatenate([estimator._score_values(sc) for _, _, sc in fitted[i]])
            points += [{"*": t} for t in fitted[i][0][0].threshold_candidates(all_scores)]
        counts = tallies(i, points)
        keys = [objective.score(c) for c in counts]
        j = best_index(keys)
        # The row at its own best point, counts and figures alike (issue 53 item 7: the
        # counts at the learner's own rule beside the chosen point's figure misled).
        _fill(res, counts[j], base.figure(keys[j]), points[j], base.criterion)
        if best_key is None or keys[j] > best_key:
            best_key, best, best_points, best_counts = keys[j], i, (points, j), counts
    points, j = best_points
    chosen = points[j]
    reached = {"*": base.is_reached(best_key)}
    if objective.categories:
        all_scores = np.concatenate([estimator._score_values(sc) for _, _, sc in fitted[best]])
        candidates = fitted[best][0][0].threshold_candidates(all_scores)
        chosen, cat_reached = choose_category_points(objective, candidates, chosen,
                                                     lambda pts: tallies(best, pts))
        reached.update(cat_reached)
    search = OperatingPointSearch(points, best_counts, chosen or None, reached)
    return results, best, search, reached


def _fill(res: SettingResult, counts, score: float, point: dict | None, criterion: str) -> None:
    tp, n_sys, _, n_gold = counts.overall["strict"]
    res.tp, res.fp, res.fn, res.score, res.point = tp, n_sys - tp, n_gold - tp, score, point
    tp_sys, n_sys, tp_gold, n_gold = counts.overall[criterion]
    res.criterion = criterion
    res.precision = tp_sys / n_sys if n_sys else 0.0
    res.recall = tp_gold / n_gold if n_gold else 0.0


@dataclass
class NestedResult:
    """The outer loop of nested cross-validation."""

    tp: int
    fp: int
    fn: int
    score: float
    chosen: list[dict[str, Any]] = field(default_factory=list)  # per outer fold
    fits: int = 0
    seconds: float = 0.0


class GridSearch(MetaLearner):
    """Cross-validated choice of a method's hyperparameters (scikit-learn's
    GridSearchCV, on the members' out-of-fold predictions).

    Parameters
    ----------
    estimator : MetaLearner
    param_grid : dict or None
        name -> values; None uses ``estimator.default_grid(m)`` (e.g. every
        voting threshold 1..m) less the ``fixed`` parameters. Parameters set on
        the estimator and absent from the grid are kept.
    fixed : sequence of str
        Parameters the user set on the estimator (``--param``, a study's
        ``[method_params]``): their value is used as given, never searched.
        Naming one in ``param_grid`` too is refused.
    folds, seed : int
        k and the seed of the patient-grouped fold assignment.
    objective : str
        What the choice maximises (``ensemble.objective``): "f1" (default),
        "f2", "binary-token:recall>=0.99", "f1,NAME+ID=token:recall>=0.99", ...
        A learner that fits its own objective (pruned voting) is given it.
    nested : bool
        Also estimate the whole procedure by nested cross-validation.

    ``on_fit`` (an attribute, not a parameter: clones do not report) is
    called after each of the search's fits, :meth:`planned_fits` of them.
    """

    name = "grid-search"
    description = "cross-validated choice of a method's hyperparameters"
    _parameter_constraints = {"folds": [Interval(int, 2, MAX_COUNT)], "seed": [SEED],
                              "objective": [Check(check_objective, "an objective such as 'f1' or "
                                                  "'binary-token:recall>=0.99' (see docs/ensembles.md)")],
                              "nested": [bool]}

    def __init__(self, estimator, param_grid=None, folds=10, seed=0, objective="f1", nested=False, fixed=()):
        self.estimator = estimator
        self.param_grid = param_grid
        self.folds = folds
        self.seed = seed
        self.objective = objective
        self.nested = nested
        self.fixed = tuple(fixed)
        self.on_fit = None

    def planned_fits(self, n_members: int, n_patients: int) -> int:
        """The fits :meth:`fit` makes (k lowered to the patients as the folds are)."""
        grid = self.grid(n_members)
        k = min(int(self.folds), n_patients)
        searched = len(grid) > 1 or self._scored(self.objective_estimator(), parse_objective(self.objective))
        return (len(grid) * k if searched else 0) + 1

    def grid(self, n_members: int) -> list[dict[str, Any]]:
        if self.param_grid is not None:
            return expand_grid(self.param_grid)
        default = self.estimator.default_grid(n_members)
        return expand_grid({k: v for k, v in default.items() if k not in self.fixed})

    def validate_params(self) -> None:
        """The search settings, the estimator's parameters and every grid
        value, before any fit: a fixed parameter that is also searched, an
        unknown name or a bad value is one error naming it."""
        super().validate_params()
        self.estimator.validate_params()
        method = f"ensemble method {self.estimator.name!r}"
        valid = set(self.estimator._param_names())
        unknown = sorted(set(self.fixed) - valid)
        if unknown:
            raise InvalidParameter(f"{method}: unknown parameter(s) {unknown}; valid: {sorted(valid)}")
        for key, values in (self.param_grid or {}).items():
            if key not in valid:
                raise InvalidParameter(f"{method}: cannot search unknown parameter {key!r}; valid: {sorted(valid)}")
            if key in self.fixed:
                raise InvalidParameter(f"{method}: {key} is both fixed and searched; give it either a value "
                                       "(--param) or values to choose from (--grid), not both")
            if not list(values):
                raise InvalidParameter(f"{method}: no values to search for {key}")
            for value in values:
                self.estimator.clone().set_params(**{key: value}).validate_params()

    def objective_estimator(self) -> MetaLearner:
        """The estimator as the search fits it: given the objective when it
        fits its own (so that no learner keeps a private default that
        overrides it). Refit ``objective_estimator().set_params(**best_params_)``
        to reproduce the choice (e.g. on other folds)."""
        objective = parse_objective(self.objective)
        est = self.estimator
        if not est.chooses_operating_point:
            return est
        own = parse_objective(est.get_params()["objective"])
        if "objective" in self.fixed and own != objective:
            raise InvalidParameter(f"ensemble method {est.name!r}: objective={str(own)!r} given to the method and "
                                   f"{str(objective)!r} to the selection; give one")
        return est.clone().set_params(objective=str(objective))

    def _scored(self, est: MetaLearner, objective: Objective) -> bool:
        """Whether an operating point is searched (see the module docstring)."""
        if not est.scored or est.chooses_operating_point or "operating_point" in self.fixed \
                or est.get_params().get("operating_point") is not None:
            return False
        return bool(objective.categories) or (est.sweeps_base and not objective.is_default)

    def chosen_params(self) -> dict[str, Any]:
        """Every parameter of the refitted model: fixed, chosen and defaults."""
        return self.best_estimator_.get_params()

    def _prepare(self, members, names, documents):
        return self.estimator._prepare(members, names, documents)

    def _fit_prepared(self, prepared) -> None:
        self.validate_params()
        objective = parse_objective(self.objective)
        estimator = self.objective_estimator()
        scored = self._scored(estimator, objective)
        grid = self.grid(prepared.n_members)
        t0 = time.perf_counter()
        self.operating_search_ = None
        self.reached_ = {}  # per target, met on the held-out folds (filled for objectives other than plain F1)
        point = None
        step = self.on_fit or _no_step
        if len(grid) > 1 or scored:
            folds = make_folds(prepared.documents, self.folds, self.seed)
            if objective.is_default:  # today's strict F1 choice, counted as it always was
                results = cv_scores(estimator, grid, prepared, folds, "f1", step)
                best = max(range(len(results)), key=lambda i: (results[i].score, -i))
            else:
                results, best, self.operating_search_, self.reached_ = cv_choose(
                    estimator, grid, prepared, folds, objective, scored, step)
                point = self.operating_search_.chosen if self.operating_search_ else None
            self.cv_results_ = results
            self.best_score_ = results[best].score
            self.best_params_ = dict(results[best].params)
            self.fits_ = len(grid) * folds.k + 1
        else:
            self.cv_results_ = []
            self.best_score_ = None
            self.best_params_ = dict(grid[0])
            self.fits_ = 1
        if point is not None:
            self.best_params_["operating_point"] = point
        model = estimator.clone().set_params(**self.best_params_)
        model._fit_prepared(prepared)
        step()
        model.member_names_ = prepared.member_names
        self.best_estimator_ = model
        self.seconds_ = time.perf_counter() - t0
        if self.nested:
            self.nested_ = self._nested(prepared)

    def _nested(self, prepared) -> NestedResult:
        t0 = time.perf_counter()
        outer = make_folds(prepared.documents, self.folds, self.seed)
        inner = self.clone().set_params(nested=False)
        objective = parse_objective(self.objective)
        res = NestedResult(0, 0, 0, 0.0)
        pooled = None
        for train_idx, test_idx in fold_indices(prepared.documents, outer):
            if not len(test_idx) or not len(train_idx):
                continue
            model = inner.clone()
            train, test = prepared.subset(train_idx), prepared.subset(test_idx)
            model._fit_prepared(train)
            raw = model._predict_raw(test)
            tp, fp, fn = model._raw_counts(test, raw)
            res.tp, res.fp, res.fn = res.tp + tp, res.fp + fp, res.fn + fn
            if not objective.is_default:
                pooled = add_counts(pooled, model._tally(test, raw))
            res.chosen.append(model.best_params_)
            res.fits += model.fits_
        res.score = metric_value(res.tp, res.fp, res.fn, "f1") if pooled is None \
            else objective.base.figure(objective.score(pooled))
        res.seconds = time.perf_counter() - t0
        return res

    def _predict_raw(self, prepared):
        return self.best_estimator_._predict_raw(prepared)

    def _raw_to_predictions(self, prepared, raw):
        return self.best_estimator_._raw_to_predictions(prepared, raw)

    def _raw_counts(self, prepared, raw):
        return self.best_estimator_._raw_counts(prepared, raw)

    def _tally(self, prepared, raw):
        return self.best_estimator_._tally(prepared, raw)


def cross_val_predict(
    estimator: MetaLearner, members: Members, documents: Sequence[Document], folds: FoldAssignment,
    step=_no_step,
) -> dict[str, DocumentPrediction]:
    """The method's own out-of-fold predictions: for each fold, fitted on the
    other folds' documents and predicting this one's (so that an ensemble can
    itself be a member). ``estimator`` is cloned for every fold; a
    ``GridSearch`` makes its choice inside each fold (honest, k times the cost)."""
    names = tuple(members)
    prepared = estimator._prepare(ordered_members(members, names, documents, estimator.name), names, documents)
    out: dict[str, DocumentPrediction] = {}
    for model, test in fitted_folds(estimator, prepared, names, folds):
        step()
        for pred in model._raw_to_predictions(test, model._predict_raw(test)):
            out[pred.doc_id] = pred
    return out


def fold_predictions(estimator: MetaLearner, members: Members, documents: Sequence[Document],
                     folds: FoldAssignment, step=_no_step) -> dict[int, list[DocumentPrediction]]:
    """Like :func:`cross_val_predict`, grouped by fold (for the cache's parts)."""
    preds = cross_val_predict(estimator, members, documents, folds, step)
    by_fold: dict[int, list[DocumentPrediction]] = {}
    for doc in documents:
        by_fold.setdefault(folds.folds[doc.id], []).append(preds[doc.id])
    return by_fold
