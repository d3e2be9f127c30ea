"""The interface every meta-learner implements (scikit-learn style).

A meta-learner sees only the base taggers' outputs ("members"): it is fitted
on their out-of-fold predictions over the training set plus the gold
annotations, and predicts from their predictions on other documents.

    learner = Voting(threshold=2)
    learner.fit({"crf": crf_oof, "rules": rules_oof}, train_documents)
    predictions = learner.predict({"crf": crf_test, "rules": rules_test}, test_documents)

``members`` maps a member name to ``{doc_id: DocumentPrediction}``. Parameters
are the constructor's arguments (``get_params``/``set_params``/``clone``/
``param_hash`` are those of :class:`~ensemble_deid.taggers.base.Tagger`); learned
attributes end in ``_``; ``member_names_`` records the members seen in fit.

Internally a learner works on a *prepared* form of the members' outputs
(candidate spans or token tag matrices) that is built once and sliced by
document, so model selection never re-decodes predictions:

    _prepare(members, names, documents) -> prepared   (independent of the parameters)
    _fit_prepared(prepared)
    _predict_raw(prepared) -> raw                 (a candidate mask, tag arrays, ...)
    _raw_to_predictions(prepared, raw) -> [DocumentPrediction]
    _raw_counts(prepared, raw) -> (tp, fp, fn)    strict micro counts
    _tally(prepared, raw) -> counts under every criterion, per category (what an objective scores)

A learner with a *score to move along* (``scored = True``) also implements
``_scores(prepared)`` (per candidate span or per token, higher = more
likely PHI) and ``_select(prepared, scores, points)``: its output at decision
thresholds given as operating points (``{"*": threshold, CATEGORY:
threshold}``; None or a missing key: the learner's own rule). Its
``operating_point`` parameter fixes one; ``GridSearch`` chooses it by
cross-validation for objectives other than plain F1.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from ..corpus.document import Document
from ..errors import EnsembleDeidError, ParameterError, did_you_mean, printable
from ..taggers.prediction import DocumentPrediction
from ..taggers.base import NotFittedError, Tagger
from ..taggers.constraints import SEED, Check, validate_params
from ..taggers.state import StateError, encodable, read_state, write_state

Members = Mapping[str, Mapping[str, DocumentPrediction]]

# Bump when any method's output for the same input can change (cache key).
ENSEMBLE_VERSION = "3"  # 2: tag ids no longer depend on PYTHONHASHSEED (token-level methods); 3: stacked-lstm on the shared BiLSTM and CRF steps
METRICS = ("f1", "f2", "recall")


class MissingMemberError(EnsembleDeidError, KeyError):
    """A member the learner needs is absent (or lacks predictions for a document)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


def metric_value(tp: int, fp: int, fn: int, metric: str = "f1") -> float:
    """Strict micro F1, F2 or recall from counts (0 when undefined)."""
    if metric == "recall":
        return tp / (tp + fn) if tp + fn else 0.0
    beta2 = {"f1": 1, "f2": 4}.get(metric)
    if beta2 is None:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    denom = (1 + beta2) * tp + beta2 * fn + fp
    return (1 + beta2) * tp / denom if denom else 0.0


def check_operating_point(point) -> bool:
    """Whether ``point`` is None or {"*" or CATEGORY: finite number} (NaN or
    an infinity keeps no span, or every one: never a decision threshold)."""
    return point is None or (isinstance(point, dict) and all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v)
        for k, v in point.items()))


def _finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too large for a float
        return False


def check_point_against(point, name: str, score_range: tuple[float, float], what: str,
                        categories=None) -> None:
    """A ParameterError (option ``--operating-point``) naming the first key
    of ``point`` that is not ``"*"`` or one of ``categories`` (None: any; a
    close name suggested), or whose value is not a finite number inside
    ``score_range``, the scores ``name``'s decisions compare against the
    thresholds (``what`` they are): outside it a threshold keeps every span
    or none, which is never a decision (all the PHI left in the notes)."""
    option = "--operating-point"
    if point is None:
        return
    if not isinstance(point, dict):
        raise ParameterError(f"operating point: expected null or an object of thresholds such as "
                             f"{{\"*\": {score_range[1]:g}}}, not a {type(point).__name__}", option)
    low, high = score_range
    known = sorted(categories) if categories is not None else None
    for key, value in point.items():
        if not isinstance(key, str):
            raise ParameterError("operating point: every key is \"*\" or a category name", option)
        shown = printable(key)[:40]
        if known is not None and key != "*" and key not in known:
            raise ParameterError(f"operating point: {shown!r} is not a category of this model"
                                 f"{did_you_mean(key.upper() if key.upper() in known else key, known)}; its "
                                 f"categories: {', '.join(known) or 'none'} (or \"*\": all)", option)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"operating point {shown!r}: the threshold must be a number, not "
                                 f"{'a ' + type(value).__name__ if not isinstance(value, bool) else 'true/false'}",
                                 option)
        if not _finite(value):
            raise ParameterError(f"operating point {shown!r}: {value!r:.30} is not a finite number (such a "
                                 "threshold keeps no span, or every one)", option)
        if not low <= float(value) <= high:
            raise ParameterError(f"operating point {shown!r}: {float(value):g} is outside [{low:g}, {high:g}], the "
                                 f"range of {name}'s scores ({what}): it would keep "
                                 f"{'no span' if value > high else 'every candidate span'}", option)


OPERATING_POINT = Check(check_operating_point, 'None or a dict {"*": threshold, CATEGORY: threshold}')


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    return metric


class MetaLearner:
    """Base class of the ensemble methods (see the module docstring)."""

    name: ClassVar[str] = ""
    level: ClassVar[str] = "span"  # "span" (candidate spans) or "token"
    description: ClassVar[str] = ""

    # Parameters that change the predictions at most by float rounding (CPU
    # threads, as the base neural taggers' num_threads), each with
    # the value the cache key records whatever it is set to: entries cached
    # before it was a free setting stay valid (ensemble.run.run_ensemble).
    unkeyed_params: ClassVar[dict[str, object]] = {}

    # Whether ``predict`` reads the members' token confidences (a method that
    # decides on their spans alone lets a bundle skip computing them).
    reads_member_confidences: ClassVar[bool] = True

    # Parameters: the Tagger machinery, reused as is (constraints included).
    _parameter_constraints: ClassVar[dict[str, list]] = {"random_state": [None, SEED]}
    parameter_constraints = Tagger.__dict__["parameter_constraints"]
    _param_names = Tagger.__dict__["_param_names"]
    _kind: ClassVar[str] = "ensemble method"
    _store_params = Tagger._store_params
    # Settings of the machine that runs the method (threads, device): a saved
    # method's are never used (``Tagger.loaded_params``).
    machine_params: ClassVar[tuple[str, ...]] = ()
    fit_only_params: ClassVar[tuple[str, ...]] = ()
    _defaults = Tagger.__dict__["_defaults"]
    loaded_params = Tagger.__dict__["loaded_params"]
    get_params = Tagger.get_params
    set_params = Tagger.set_params
    clone = Tagger.clone

    # Parameters added after ensembles were cached: at None (the learner's own
    # rule, what every earlier version did) they are left out of the cache key,
    # so entries cached before they existed stay valid.
    added_later: ClassVar[tuple[str, ...]] = ("operating_point",)

    def hashed_params(self) -> dict[str, Any]:
        """The cache key's parameters (``added_later`` ones at None left out)."""
        params = Tagger.hashed_params(self)
        for later in self.added_later:
            if params.get(later, 0) is None:
                del params[later]
        return params

    param_hash = Tagger.param_hash
    __repr__ = Tagger.__repr__
    is_fitted = Tagger.is_fitted

    # Saving (no pickle): the Tagger machinery and its hooks, with the method
    # registry (registry.load_method) loading whichever method a folder holds.
    _fitted_state = Tagger._fitted_state
    _from_saved = Tagger.__dict__["_from_saved"]
    _restore_state = Tagger._restore_state

    def save(self, folder):
        """Write the fitted method to ``folder`` (owner-only, no pickle)."""
        self.check_fitted()
        header = {"kind": "ensemble-method", "name": self.name, "version": ENSEMBLE_VERSION,
                  "params": encodable(self.get_params())}
        return write_state(folder, header, self._fitted_state())

    @classmethod
    def load(cls, folder) -> "MetaLearner":
        """A method of this class saved by :meth:`save`; another method's or
        another version's files are refused. Whichever method a folder holds:
        ``ensemble.registry.load_method(folder)``."""
        if not cls.name:
            raise TypeError(f"{cls.__name__}.load reads one method's files: load_method(folder) "
                            "(ensemble_deid.ensemble.registry) finds the method a folder holds")
        header, state = read_saved_method(folder)
        if header.get("name") != cls.name:
            raise StateError(f"{folder}: saved by ensemble method {printable(str(header.get('name')))!r}, "
                             f"not {cls.name!r}")
        return cls._from_saved(folder, header["params"], state)

    def validate_params(self) -> None:
        """Every parameter against its declared constraints (InvalidParameter
        naming the method, the parameter and the value)."""
        validate_params(f"ensemble method {self.name or type(self).__name__!r}", self.get_params(),
                        self.parameter_constraints())
        self.check_params()

    def check_fitted(self) -> None:
        if not self.is_fitted():
            raise NotFittedError(
                f"ensemble method {self.name or type(self).__name__!r} is not fitted: "
                "call fit(members, documents) before predict()"
            )

    def default_grid(self, n_members: int) -> dict[str, list]:
        """Hyperparameter values that cross-validation chooses from by default."""
        return {}

    def check_params(self) -> None:
        """Checks the declared constraints cannot express (ValueError);
        ``validate_params`` runs it after them, before any work."""

    def check_members(self, n_members: int) -> None:
        """Checks of the parameters against the number of members (a
        ValueError naming the parameter): a voting threshold above it would
        keep no span. The one check of its kind: ``fit``, the CLI's search
        (``ensemble.run.make_search``) and a bundle's loader all call it."""

    # --- the public API ----------------------------------------------------
    def fit(self, members: Members, documents: Sequence[Document]) -> "MetaLearner":
        names = tuple(members)
        if not names:
            raise ValueError(f"{self.name}: no members given")
        self.validate_params()  # declared constraints, then check_params: before any work
        self.check_members(len(names))
        prepared = self._prepare(ordered_members(members, names, documents, self.name), names, documents)
        self._fit_prepared(prepared)
        self.member_names_ = names
        return self

    def predict(self, members: Members, documents: Sequence[Document]) -> list[DocumentPrediction]:
        self.check_fitted()
        names = self.member_names_
        prepared = self._prepare(ordered_members(members, names, documents, self.name), names, documents)
        return self._raw_to_predictions(prepared, self._predict_raw(prepared))

    # --- hooks -------------------------------------------------------------
    def _prepare(self, members: list[Mapping[str, DocumentPrediction]], names: tuple[str, ...],
                 documents: Sequence[Document]):
        raise NotImplementedError

    def _fit_prepared(self, prepared) -> None:
        raise NotImplementedError

    def _predict_raw(self, prepared):
        raise NotImplementedError

    def _raw_to_predictions(self, prepared, raw) -> list[DocumentPrediction]:
        raise NotImplementedError

    def _raw_counts(self, prepared, raw) -> tuple[int, int, int]:
        raise NotImplementedError

    def _tally(self, prepared, raw):
        """Counts of ``raw`` under every criterion, per category (``objective.Counts``)."""
        raise NotImplementedError

    # --- a score to move along (``scored = True``) ------------------------------
    scored: ClassVar[bool] = False
    sweeps_base: ClassVar[bool] = False  # the whole output's threshold ("*") is searched, not only per category
    chooses_operating_point: ClassVar[bool] = False  # fits its own objective (GridSearch hands it over)

    def _scores(self, prepared):
        raise NotImplementedError(f"{self.name} has no score to move along")

    def _select(self, prepared, scores, points: Sequence[Mapping[str, float] | None]) -> list:
        """One ``raw`` per operating point."""
        raise NotImplementedError(f"{self.name} has no score to move along")

    def _tallies(self, prepared, scores, points) -> list:
        """Counts (objective.Counts) of the output at each operating point."""
        return [self._tally(prepared, raw) for raw in self._select(prepared, scores, points)]

    def threshold_candidates(self, pooled_scores: np.ndarray) -> list[float]:
        """Decision thresholds worth trying, given the scores seen out of fold."""
        return []

    def score_range(self) -> tuple[float, float]:
        """(lowest, highest) score the fitted learner can give a candidate
        (what ``_scores`` compares against an operating point's thresholds).
        A method that does not say: any finite number (a run that then tags
        nothing is still caught by ``deidentify``)."""
        return -float("inf"), float("inf")

    score_meaning: ClassVar[str] = "its decision score"

    def repoint(self, point: Mapping[str, float] | None, categories=None) -> "MetaLearner":
        """Move a fitted learner to another operating point of its score
        (``{"*": t, CATEGORY: t}``; None: its own rule) without refitting.
        Refused (ParameterError): a threshold that is not a finite number
        inside :meth:`score_range`, and with ``categories`` (the model's
        upper-case categories) a key that is none of them."""
        if not self.scored:
            raise ValueError(f"ensemble method {self.name!r} has no score to move along: it cannot be re-pointed")
        check_point_against(point, self.name, self.score_range(), self.score_meaning, categories)
        if not check_operating_point(point):
            raise ValueError(f"operating point {point!r}: expected {OPERATING_POINT}")
        self.set_params(operating_point=dict(point) if point else None)
        if hasattr(self, "operating_point_"):  # learners that choose it when fitting
            self.operating_point_ = self.operating_point
        return self

    def _score_values(self, scores) -> np.ndarray:
        """The scores of ``_scores`` as one flat array."""
        return np.asarray(scores, dtype=np.float64)


def ordered_members(
    members: Members, names: Sequence[str], documents: Sequence[Document], who: str
) -> list[Mapping[str, DocumentPrediction]]:
    """Members in ``names`` order, each checked to cover every document with
    one tag per token. Errors name the member and the document, never text."""
    missing = [n for n in names if n not in members]
    if missing:
        raise MissingMemberError(
            f"{who}: member(s) {', '.join(map(repr, missing))} missing from the predictions given "
            f"(have: {', '.join(map(repr, members)) or 'none'})"
        )
    out = []
    for name in names:
        preds = members[name]
        for doc in documents:
            pred = preds.get(doc.id)
            if pred is None:
                lacking = sum(d.id not in preds for d in documents)
                raise MissingMemberError(
                    f"{who}: member {name!r} has no prediction for {lacking} document(s), e.g. {doc.id!r} "
                    "(is it cached for this document set?)"
                )
            if len(pred.tags) != len(doc.tokens):
                raise ValueError(
                    f"{who}: member {name!r}, document {doc.id!r}: {len(pred.tags)} tags for "
                    f"{len(doc.tokens)} tokens (not the common tokenization)"
                )
        out.append(preds)
    return out


def read_saved_method(folder) -> tuple[dict, dict[str, Any]]:
    """(header, state) of a method written by :meth:`MetaLearner.save`;
    another kind of file or another ensemble version is refused."""
    header, state = read_state(folder)
    if header.get("kind") != "ensemble-method" or str(header.get("version")) != ENSEMBLE_VERSION:
        raise StateError(f"{folder}: not an ensemble method saved by ensemble version {ENSEMBLE_VERSION}")
    return header, state
