"""Stacked SVM at span level [LIU17, KIM20].

One example per candidate span (see ``candidates``); label = the span matches
a gold span under the strict criterion; a linear SVM (LIBLINEAR, through
scikit-learn's ``LinearSVC``). Features, all computed from the members'
outputs and the note itself:

- ``member``: which members produced the span (one bit per member);
- ``votes``: how many produced it (divided by m);
- ``exact_any``: per member, whether it produced a span with the same
  boundaries and any type, and their count (the same-type version is
  ``member``/``votes``);
- ``partial_same`` / ``partial_any``: per member, whether it produced a span
  that overlaps this one without the same boundaries, with the same type /
  any type, and their counts;
- ``record_span`` / ``record_text``: log(1 + times the members predicted the
  same text with the same label in this record) and the same with any label;
- ``tokens``: log(1 + number of tokens) and whether it is a single token;
- ``conj_prep``: the span contains a conjunction or a preposition (a short
  English and Spanish list, :data:`CONJ_PREP`);
- ``label``: the span's label (one-hot over the labels seen in fit);
- ``confidence`` (with ``confidences=True``): per member, its mean token
  confidence over the span's tokens, split by whether that member produced
  the span (sure of this span) or not (sure of something else, often ``O``);
  a member without confidences counts as sure (1.0).

Kept spans: SVM decision value > 0. Overlapping kept spans: the higher
decision value wins; equal values fall back to the voting tie-breaks.
"""
from __future__ import annotations

import numpy as np

from ..corpus.formats.source import MAX_NOTE_BYTES
from .base import OPERATING_POINT
from .spans import SpanMetaLearner
from .candidates import CandidateTable, best_voter_rank, build_candidates, resolve_overlaps
from ..taggers.constraints import MAX_COST, MAX_COUNT, Check, Interval, Options

CONJ_PREP = frozenset("""
and or but nor of in at on for to from with by into onto near via per
y e o u ni pero sino de del en a al con por para sin sobre entre hacia desde hasta según tras ante bajo
""".split())


def span_features(table: CandidateTable) -> tuple[np.ndarray, list[str]]:
    """Label-independent features of every candidate, with their names."""
    n, m = table.votes.shape
    votes = table.votes.astype(np.float64)
    count = votes.sum(axis=1)
    # Same boundaries, any label: OR of the votes of candidates with equal (first, stop).
    bkey = table.first * (int(table.stop.max() - table.first.min()) + 2 if n else 1) + (table.stop - table.first)
    _, group = np.unique(bkey, return_inverse=True)
    exact_any = np.zeros((int(group.max()) + 1 if n else 0, m), dtype=bool)
    np.logical_or.at(exact_any, group, table.votes)
    exact_any = exact_any[group].astype(np.float64)
    # Partial overlaps (different boundaries), same / any label.
    a, b = table.pairs
    partial = (table.first[a] != table.first[b]) | (table.stop[a] != table.stop[b])
    same = partial & (table.label[a] == table.label[b])
    partial_any = np.zeros((n, m), dtype=bool)
    partial_same = np.zeros((n, m), dtype=bool)
    np.logical_or.at(partial_any, a[partial], table.votes[b[partial]])
    np.logical_or.at(partial_same, a[same], table.votes[b[same]])
    # Repetitions in the record (text compared exactly, never stored or shown).
    starts, ends = table.char_offsets()
    texts = [table.documents[d].text[s:e] for d, s, e in zip(table.doc.tolist(), starts.tolist(), ends.tolist())]
    same_span: dict[tuple, float] = {}
    same_text: dict[tuple, float] = {}
    for d, t, lab, c in zip(table.doc.tolist(), texts, table.label.tolist(), count.tolist()):
        same_span[(d, t, lab)] = same_span.get((d, t, lab), 0.0) + c
        same_text[(d, t)] = same_text.get((d, t), 0.0) + c
    record_span = np.array([same_span[(d, t, lab)] for d, t, lab in zip(table.doc.tolist(), texts, table.label.tolist())])
    record_text = np.array([same_text[(d, t)] for d, t in zip(table.doc.tolist(), texts)])
    n_tokens = (table.stop - table.first).astype(np.float64)
    words = np.concatenate([np.array([w.lower() for w in d.tokens.words], dtype=object) for d in table.documents]) \
        if table.documents else np.zeros(0, object)
    is_cp = np.fromiter((w in CONJ_PREP for w in words), dtype=bool, count=len(words))
    cum = np.concatenate(([0], np.cumsum(is_cp)))
    conj = (cum[table.stop] - cum[table.first]) > 0
    blocks = [
        votes, count[:, None] / max(m, 1),
        exact_any, exact_any.sum(axis=1, keepdims=True) / max(m, 1),
        partial_same, partial_same.sum(axis=1, keepdims=True) / max(m, 1),
        partial_any, partial_any.sum(axis=1, keepdims=True) / max(m, 1),
        np.log1p(record_span)[:, None], np.log1p(record_text)[:, None],
        np.log1p(n_tokens)[:, None], (n_tokens == 1)[:, None], conj[:, None],
    ]
    names = ([f"member[{j}]" for j in range(m)] + ["votes"] + [f"exact_any[{j}]" for j in range(m)] + ["exact_any"]
             + [f"partial_same[{j}]" for j in range(m)] + ["partial_same"]
             + [f"partial_any[{j}]" for j in range(m)] + ["partial_any"]
             + ["record_span", "record_text", "tokens", "single_token", "conj_prep"])
    X = np.hstack([np.asarray(x, dtype=np.float64).reshape(n, -1) for x in blocks]) if n else np.zeros((0, len(names)))
    return X, names


def confidence_features(table: CandidateTable, members, documents) -> tuple[np.ndarray, list[str]]:
    """Per member, the mean of its token confidences over each candidate's
    tokens, in two blocks: where it voted for the candidate, and where not."""
    n, m = table.votes.shape
    voted = np.zeros((n, m))
    other = np.zeros((n, m))
    width = np.maximum(table.stop - table.first, 1).astype(np.float64)
    for j, preds in enumerate(members):
        conf = np.concatenate([
            np.ones(len(d.tokens)) if preds[d.id].confidences is None
            else np.asarray(preds[d.id].confidences, dtype=np.float64)
            for d in documents
        ]) if documents else np.zeros(0)
        cum = np.concatenate(([0.0], np.cumsum(conf)))
        mean = (cum[table.stop] - cum[table.first]) / width
        voted[:, j] = np.where(table.votes[:, j], mean, 0.0)
        other[:, j] = np.where(table.votes[:, j], 0.0, mean)
    names = [f"confidence_voted[{j}]" for j in range(m)] + [f"confidence_other[{j}]" for j in range(m)]
    return np.hstack([voted, other]), names


def _class_weights(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(w, (int, float)) and not isinstance(w, bool) and 0 < w <= MAX_COST for w in value.values())


CLASS_WEIGHTS = Check(_class_weights, f"a table of class -> weight in (0, {MAX_COST:g}]")


class StackedSVM(SpanMetaLearner):
    """Linear SVM over span agreement features.

    Parameters
    ----------
    C : float
        LIBLINEAR regularisation (chosen by cross-validation over
        0.01, 0.1, 1, 10 through ``GridSearch``).
    class_weight : None or "balanced"
    confidences : bool
        Add the members' token confidences as features (see the module
        docstring). Off by default: on MEDDOCAN (CRF, MEMM, MIRA, SEARN)
        they gave 0.9633 strict F1 on dev against 0.9640 without.
    max_iter : int
    random_state : int
    operating_point : None or dict
        Decision thresholds on the SVM's decision value, ``{"*": t}`` and/or
        per category (None: keep a span when its value is > 0). Chosen by
        ``GridSearch`` for objectives other than plain F1.
    """

    name = "stacked-svm"
    description = "span-level linear SVM (LIBLINEAR) on agreement features; overlaps by SVM confidence"

    _parameter_constraints = {"C": [Interval(float, 0, MAX_COST, closed="right")],
                              "class_weight": [None, Options("balanced"), CLASS_WEIGHTS],
                              "confidences": [bool], "max_iter": [Interval(int, 1, MAX_COUNT)],
                              "operating_point": [OPERATING_POINT]}
    scored = True
    sweeps_base = True

    def __init__(self, C=0.1, class_weight=None, confidences=False, max_iter=5000, random_state=0,
                 operating_point=None):
        self._store_params(locals())

    def default_grid(self, n_members: int) -> dict[str, list]:
        return {"C": [0.01, 0.1, 1.0, 10.0]}

    def _prepare(self, members, names, documents):
        table = build_candidates(members, names, documents)
        table.columns["X"] = span_features(table)[0]
        # Computed whatever ``confidences`` says: preparation is shared by
        # every parameter setting a grid search tries.
        table.columns["confidence"] = confidence_features(table, members, table.documents)[0]
        return table

    def _design(self, table: CandidateTable) -> np.ndarray:
        index = {lab: i for i, lab in enumerate(self.labels_)}
        onehot = np.zeros((len(table), len(self.labels_)))
        cols = np.array([index.get(table.labels[i], -1) for i in table.label.tolist()], dtype=np.int64)
        known = cols >= 0
        onehot[np.flatnonzero(known), cols[known]] = 1.0
        blocks = [table.columns["X"], onehot]
        if self.confidences:
            blocks.append(table.columns["confidence"])
        return np.hstack(blocks)

    def _fit_prepared(self, table: CandidateTable) -> None:
        from sklearn.svm import LinearSVC

        self._member_ranks(table)
        self.labels_ = tuple(sorted({table.labels[i] for i in table.label.tolist()}))
        X, y = self._design(table), table.gold
        if y.all() or not y.any():  # one class only: a constant decision
            self.svm_ = None
            self.constant_ = 1.0 if y.all() and len(y) else -1.0
            return
        self.svm_ = LinearSVC(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter,
                              random_state=self.random_state, dual="auto")
        self.svm_.fit(X, y)
        self.constant_ = None

    # Saving: the LIBLINEAR model as its plain arrays (never pickled).
    def _fitted_state(self) -> dict:
        state = super()._fitted_state()
        if state.get("svm_") is not None:
            svm = state["svm_"]
            state["svm_"] = {"coef": svm.coef_, "intercept": svm.intercept_, "classes": svm.classes_}
        return state

    def _restore_state(self, state: dict) -> None:
        state = dict(state)
        arrays = state.pop("svm_", None)
        super()._restore_state(state)
        self.svm_ = None
        if arrays is not None:
            from sklearn.svm import LinearSVC

            svm = LinearSVC(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter,
                            random_state=self.random_state, dual="auto")
            svm.coef_, svm.intercept_, svm.classes_ = arrays["coef"], arrays["intercept"], arrays["classes"]
            svm.n_features_in_ = svm.coef_.shape[1]
            self.svm_ = svm

    def decision_function(self, table: CandidateTable) -> np.ndarray:
        self.check_fitted()
        if self.svm_ is None:
            return np.full(len(table), self.constant_)
        if not len(table):
            return np.zeros(0)
        return self.svm_.decision_function(self._design(table))

    def _predict_raw(self, table: CandidateTable) -> np.ndarray:
        return self._select(table, self._scores(table), [self.operating_point])[0]

    # The score: the SVM's decision value.
    score_meaning = "the SVM's decision value, bounded by its weights and the features' ranges"

    def score_range(self) -> tuple[float, float]:
        """The decision value's bounds over every design row: its features
        are each in [0, 1] but the three log counts (the span's repetitions
        in the note, its length), which a note's size bounds."""
        self.check_fitted()
        if self.svm_ is None:
            return float(self.constant_), float(self.constant_)
        w = np.asarray(self.svm_.coef_, dtype=np.float64).ravel()
        top = np.ones_like(w)
        m = len(self.member_names_)
        top[4 * m + 4:4 * m + 7] = np.log1p(float(MAX_NOTE_BYTES) * max(m, 1))  # record_span, record_text, tokens
        b = float(np.asarray(self.svm_.intercept_).ravel()[0])
        return b + float(np.minimum(w, 0) @ top), b + float(np.maximum(w, 0) @ top)

    def _scores(self, table: CandidateTable) -> np.ndarray:
        return self.decision_function(table)

    def _select(self, table, scores, points):
        keep = self._keep(table, scores, points, scores > 0)
        count = table.vote_count
        best = best_voter_rank(table.votes, self.member_rank_)
        order = np.lexsort((-best, count, scores))  # ascending: last = highest priority
        priority = np.empty(len(table), dtype=np.int64)
        priority[order] = np.arange(len(table))
        chosen = resolve_overlaps(table, keep, np.repeat(priority[:, None], keep.shape[1], 1))
        return [chosen[:, i] for i in range(keep.shape[1])]

    def _raw_to_predictions(self, table, raw):
        score = self.decision_function(table)
        return table.to_predictions(raw, 1.0 / (1.0 + np.exp(-score)))
