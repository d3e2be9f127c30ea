"""Choosing hyperparameters and thresholds by cross-validation on the
out-of-fold predictions of the training set [KIM20].

``GridSearch(method, grid)`` splits the training documents into k folds
grouped by patient (``folds.assign_folds``), and for each setting fits the
method on k-1 folds of the members' out-of-fold predictions and predicts the
k-th; the pooled strict micro counts over the k held-out folds give the
setting's score (F1 by default; F2 or recall for privacy-first use). The best
setting (ties: the first in grid order) is refitted on every document.

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
from ..corpus.folds import FoldAssignment, assign_folds
from ..taggers.constraints import MAX_COUNT, SEED, Interval, InvalidParameter, Options
from ..taggers.prediction import DocumentPrediction
from .base import METRICS, MetaLearner, Members, metric_value, ordered_members


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of a parameter grid, in a stable order."""
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(list(grid[k]) for k in keys))]


def fold_indices(documents: Sequence[Document], folds: FoldAssignment) -> list[tuple[np.ndarray, np.ndarray]]:
    """(training, held-out) document indices of every fold."""
    which = np.array([folds.folds[d.id] for d in documents], dtype=np.int64)
    return [(np.flatnonzero(which != f), np.flatnonzero(which == f)) for f in range(folds.k)]


def make_folds(documents: Sequence[Document], k: int, seed: int) -> FoldAssignment:
    """Patient-grouped folds; k is lowered to the number of patients if needed."""
    groups = len({d.group for d in documents})
    if groups < 2:
        raise ValueError(f"cross-validation needs documents of at least 2 patients, got {groups}")
    return assign_folds(documents, min(int(k), groups), seed)


@dataclass
class SettingResult:
    params: dict[str, Any]
    tp: int = 0
    fp: int = 0
    fn: int = 0
    score: float = 0.0

    def to_dict(self) -> dict:
        return {"params": self.params, "tp": self.tp, "fp": self.fp, "fn": self.fn, "score": self.score}


def cv_scores(estimator: MetaLearner, grid: list[dict], prepared, folds: FoldAssignment, metric: str) -> list[SettingResult]:
    """Pooled held-out counts of every setting."""
    results = [SettingResult(dict(p)) for p in grid]
    for train_idx, test_idx in fold_indices(prepared.documents, folds):
        if not len(test_idx) or not len(train_idx):
            continue
        train, test = prepared.subset(train_idx), prepared.subset(test_idx)
        for res in results:
            model = estimator.clone().set_params(**res.params)
            model._fit_prepared(train)
            tp, fp, fn = model._raw_counts(test, model._predict_raw(test))
            res.tp += tp
            res.fp += fp
            res.fn += fn
    for res in results:
        res.score = metric_value(res.tp, res.fp, res.fn, metric)
    return results


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
    metric : {"f1", "f2", "recall"}
    nested : bool
        Also estimate the whole procedure by nested cross-validation.
    """

    name = "grid-search"
    description = "cross-validated choice of a method's hyperparameters"
    _parameter_constraints = {"folds": [Interval(int, 2, MAX_COUNT)], "seed": [SEED], "metric": [Options(*METRICS)],
                              "nested": [bool]}

    def __init__(self, estimator, param_grid=None, folds=10, seed=0, metric="f1", nested=False, fixed=()):
        self.estimator = estimator
        self.param_grid = param_grid
        self.folds = folds
        self.seed = seed
        self.metric = metric
        self.nested = nested
        self.fixed = tuple(fixed)

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

    def chosen_params(self) -> dict[str, Any]:
        """Every parameter of the refitted model: fixed, chosen and defaults."""
        return self.best_estimator_.get_params()

    def _prepare(self, members, names, documents):
        return self.estimator._prepare(members, names, documents)

    def _fit_prepared(self, prepared) -> None:
        self.validate_params()
        grid = self.grid(prepared.n_members)
        t0 = time.perf_counter()
        if len(grid) > 1:
            folds = make_folds(prepared.documents, self.folds, self.seed)
            results = cv_scores(self.estimator, grid, prepared, folds, self.metric)
            best = max(range(len(results)), key=lambda i: (results[i].score, -i))
            self.cv_results_ = results
            self.best_score_ = results[best].score
            self.best_params_ = dict(results[best].params)
            self.fits_ = len(grid) * folds.k + 1
        else:
            self.cv_results_ = []
            self.best_score_ = None
            self.best_params_ = dict(grid[0])
            self.fits_ = 1
        model = self.estimator.clone().set_params(**self.best_params_)
        model._fit_prepared(prepared)
        model.member_names_ = prepared.member_names
        self.best_estimator_ = model
        self.seconds_ = time.perf_counter() - t0
        if self.nested:
            self.nested_ = self._nested(prepared)

    def _nested(self, prepared) -> NestedResult:
        t0 = time.perf_counter()
        outer = make_folds(prepared.documents, self.folds, self.seed)
        inner = self.clone().set_params(nested=False)
        res = NestedResult(0, 0, 0, 0.0)
        for train_idx, test_idx in fold_indices(prepared.documents, outer):
            if not len(test_idx) or not len(train_idx):
                continue
            model = inner.clone()
            train, test = prepared.subset(train_idx), prepared.subset(test_idx)
            model._fit_prepared(train)
            tp, fp, fn = model._raw_counts(test, model._predict_raw(test))
            res.tp, res.fp, res.fn = res.tp + tp, res.fp + fp, res.fn + fn
            res.chosen.append(model.best_params_)
            res.fits += model.fits_
        res.score = metric_value(res.tp, res.fp, res.fn, self.metric)
        res.seconds = time.perf_counter() - t0
        return res

    def _predict_raw(self, prepared):
        return self.best_estimator_._predict_raw(prepared)

    def _raw_to_predictions(self, prepared, raw):
        return self.best_estimator_._raw_to_predictions(prepared, raw)

    def _raw_counts(self, prepared, raw):
        return self.best_estimator_._raw_counts(prepared, raw)


def cross_val_predict(
    estimator: MetaLearner, members: Members, documents: Sequence[Document], folds: FoldAssignment,
) -> dict[str, DocumentPrediction]:
    """The method's own out-of-fold predictions: for each fold, fitted on the
    other folds' documents and predicting this one's (so that an ensemble can
    itself be a member). ``estimator`` is cloned for every fold; a
    ``GridSearch`` makes its choice inside each fold (honest, k times the cost)."""
    names = tuple(members)
    prepared = estimator._prepare(ordered_members(members, names, documents, estimator.name), names, documents)
    out: dict[str, DocumentPrediction] = {}
    for train_idx, test_idx in fold_indices(prepared.documents, folds):
        if not len(test_idx):
            continue
        model = estimator.clone()
        test = prepared.subset(test_idx)
        model._fit_prepared(prepared.subset(train_idx))
        model.member_names_ = names
        for pred in model._raw_to_predictions(test, model._predict_raw(test)):
            out[pred.doc_id] = pred
    return out


def fold_predictions(estimator: MetaLearner, members: Members, documents: Sequence[Document],
                     folds: FoldAssignment) -> dict[int, list[DocumentPrediction]]:
    """Like :func:`cross_val_predict`, grouped by fold (for the cache's parts)."""
    preds = cross_val_predict(estimator, members, documents, folds)
    by_fold: dict[int, list[DocumentPrediction]] = {}
    for doc in documents:
        by_fold.setdefault(folds.folds[doc.id], []).append(preds[doc.id])
    return by_fold
