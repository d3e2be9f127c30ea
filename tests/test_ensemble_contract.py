"""The estimator contract every method honours, and model selection by
cross-validation (plain and nested) on out-of-fold predictions."""
from __future__ import annotations

import pytest

from ensemble_deid.ensemble import (
    METHODS, GridSearch, MissingMemberError, Voting, build_candidates, cross_val_predict, make_method, vote_select,
)
from ensemble_deid.ensemble.registry import UnknownMethod
from ensemble_deid.ensemble.selection import make_folds
from ensemble_deid.taggers.prediction import DocumentPrediction
from ensemble_deid.taggers.base import NotFittedError

from .test_ensemble_fixtures import random_case

FAST = {"stacked-searn": {"passes": 2}, "stacked-lstm": {"epochs": 2, "device": "cpu", "threads": 1}}


@pytest.fixture(scope="module")
def case():
    docs, members = random_case(21, n_docs=12, n_members=3, n_tokens=30)
    return docs[:8], {m: {d.id: p[d.id] for d in docs[:8]} for m, p in members.items()}, \
        docs[8:], {m: {d.id: p[d.id] for d in docs[8:]} for m, p in members.items()}


def _make(name):
    if name == "stacked-lstm":
        pytest.importorskip("torchcrf")
    return make_method(name, **FAST.get(name, {}))


@pytest.mark.parametrize("name", list(METHODS))
class TestContract:
    def test_unfitted_predict_raises(self, name, case):
        _, _, test, m_test = case
        with pytest.raises(NotFittedError, match="not fitted"):
            _make(name).predict(m_test, test)

    def test_fit_returns_self_and_learns_member_names(self, name, case):
        train, m_train, _, _ = case
        learner = _make(name)
        assert learner.fit(m_train, train) is learner
        assert learner.member_names_ == tuple(m_train)
        assert learner.is_fitted()

    def test_missing_member_is_named(self, name, case):
        train, m_train, test, m_test = case
        learner = _make(name).fit(m_train, train)
        partial = {k: v for k, v in m_test.items() if k != "m1"}
        with pytest.raises(MissingMemberError, match="'m1'"):
            learner.predict(partial, test)
        lacking = {**m_test, "m2": {k: v for k, v in m_test["m2"].items() if k != test[0].id}}
        with pytest.raises(MissingMemberError, match=f"'m2' has no prediction for 1 document.*'{test[0].id}'"):
            learner.predict(lacking, test)

    def test_wrong_token_count_is_refused(self, name, case):
        train, m_train, _, _ = case
        bad = dict(m_train)
        d = train[0]
        bad["m0"] = {**m_train["m0"], d.id: DocumentPrediction(d.id, ("O",) * (len(d.tokens) - 1))}
        with pytest.raises(ValueError, match="not the common tokenization"):
            _make(name).fit(bad, train)

    def test_params_round_trip(self, name, case):
        learner = _make(name)
        params = learner.get_params()
        clone = learner.clone()
        assert clone.get_params() == params and clone is not learner
        assert type(learner)(**params).param_hash() == learner.param_hash()
        if params:
            key = sorted(params)[0]
            assert learner.set_params(**{key: params[key]}) is learner
        with pytest.raises(ValueError, match="invalid parameter 'nope'"):
            learner.set_params(nope=1)
        assert not any(k.endswith("_") for k in params)

    def test_deterministic_and_well_formed(self, name, case):
        train, m_train, test, m_test = case
        first = _make(name).fit(m_train, train).predict(m_test, test)
        second = _make(name).fit(m_train, train).predict(m_test, test)
        assert [p.tags for p in first] == [p.tags for p in second]
        assert [p.doc_id for p in first] == [d.id for d in test]
        assert all(len(p.tags) == len(d.tokens) for p, d in zip(first, test))

    def test_member_order_in_predict_does_not_matter(self, name, case):
        train, m_train, test, m_test = case
        learner = _make(name).fit(m_train, train)
        shuffled = {k: m_test[k] for k in reversed(list(m_test))}
        extra = {**shuffled, "unused": m_test["m0"]}
        assert [p.tags for p in learner.predict(extra, test)] == [p.tags for p in learner.predict(m_test, test)]


def test_unknown_method():
    with pytest.raises(UnknownMethod, match="known: voting"):
        make_method("boosting")


def test_grid_search_scores_are_pooled_held_out_counts():
    """No overlaps and no learned state but the tie-break: each threshold's CV
    counts equal voting's counts over all documents."""
    docs, members = random_case(4, n_docs=10, n_members=4)
    search = GridSearch(Voting(), folds=5, seed=1, fixed=("trust",)).fit(members, docs)  # thresholds only
    table = build_candidates(list(members.values()), tuple(members), docs)
    assert [r.params for r in search.cv_results_] == [{"threshold": t} for t in range(1, 5)]
    rank = table.member_rank()
    for res in search.cv_results_:
        counts = table.counts(vote_select(table, res.params["threshold"], rank))
        if not len(table.contested):
            assert (res.tp, res.fp, res.fn) == counts
        assert res.tp + res.fn == table.n_gold.sum()
    best = max(search.cv_results_, key=lambda r: r.score)
    assert search.best_params_ == best.params and search.best_score_ == best.score
    assert search.best_estimator_.threshold == best.params["threshold"]
    assert search.fits_ == 4 * 5 + 1
    preds = search.predict(members, docs)
    assert [p.tags for p in preds] == [p.tags for p in search.best_estimator_.predict(members, docs)]


def test_grid_search_objective_recall_prefers_low_thresholds():
    docs, members = random_case(4, n_docs=10, n_members=4)
    search = GridSearch(Voting(), folds=5, objective="recall").fit(members, docs)
    assert search.best_params_ == {"threshold": 1, "trust": None}
    with pytest.raises(ValueError, match="objective=.accuracy."):
        GridSearch(Voting(), objective="accuracy").fit(members, docs)


def test_single_setting_needs_no_cv():
    docs, members = random_case(4, n_docs=6, n_members=3)
    search = GridSearch(Voting(threshold=2), param_grid={}).fit(members, docs)
    assert search.cv_results_ == [] and search.fits_ == 1 and search.best_params_ == {}


def test_nested_cv_reports_its_cost_and_choices():
    docs, members = random_case(5, n_docs=12, n_members=3)
    search = GridSearch(Voting(), folds=3, nested=True).fit(members, docs)
    nested = search.nested_
    assert len(nested.chosen) == 3 and all(set(c) == {"threshold", "trust"} for c in nested.chosen)
    assert nested.fits == 3 * (3 * 3 * 5 + 1)  # 3 thresholds x 5 trust levels
    assert nested.tp + nested.fn == sum(len(d.annotations) for d in docs)
    assert 0 <= nested.score <= 1 and nested.seconds >= 0


def test_folds_group_patients():
    docs, _ = random_case(5, n_docs=12, n_members=2)
    folds = make_folds(docs, 10, 0)  # 6 patients: k lowered to 6
    assert folds.k == 6
    by_patient = {}
    for d in docs:
        by_patient.setdefault(d.group, set()).add(folds.folds[d.id])
    assert all(len(f) == 1 for f in by_patient.values())


def test_cross_val_predict_fits_on_the_other_folds():
    docs, members = random_case(6, n_docs=10, n_members=4)
    folds = make_folds(docs, 5, 0)
    oof = cross_val_predict(Voting(threshold=1), members, docs, folds)
    assert set(oof) == {d.id for d in docs}
    for f in range(folds.k):
        train = [d for d in docs if folds.folds[d.id] != f]
        held = [d for d in docs if folds.folds[d.id] == f]
        model = Voting(threshold=1).fit({m: {d.id: p[d.id] for d in train} for m, p in members.items()}, train)
        for p in model.predict(members, held):
            assert oof[p.doc_id].tags == p.tags
