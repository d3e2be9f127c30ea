"""The selection objective (ensemble/objective.py): parsing, hand-computed
scores of every target, counts under the three criteria against the official
scorer, per-category thresholds, the operating-point choice, and that the
objective reaches every learner (issue 28; issue 31 item 5)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.ensemble import GridSearch, build_candidates, make_method
from ensemble_deid.ensemble.objective import (
    GoldKeys, ObjectiveError, Target, best_index, candidate_weights, parse_objective, tally_spans,
)
from ensemble_deid.ensemble.pruning import PrunedVoting, pruning_search
from ensemble_deid.ensemble.selection import choose_category_points
from ensemble_deid.ensemble.voting import Voting
from ensemble_deid.evaluation import Scorer
from ensemble_deid.taggers.constraints import InvalidParameter

from .test_ensemble_fixtures import doc, members_of, random_case


# --- parsing ------------------------------------------------------------------------

@pytest.mark.parametrize("text, canonical", [
    ("f1", "f1"), ("F2", "f2"), ("f0.5", "f0.5"), ("recall", "recall"),
    ("binary-token:recall>=0.99", "binary-token:recall>=0.99"), ("binary_token:recall@0.99", "binary-token:recall>=0.99"),
    ("token:precision>=0.9", "token:precision>=0.9"), ("strict:f1", "f1"),
    ("f1, name+id+contact = token:recall>=0.99", "f1,CONTACT+ID+NAME=token:recall>=0.99"),
])
def test_objective_strings_read_and_print_canonically(text, canonical):
    assert str(parse_objective(text)) == canonical
    assert parse_objective(canonical) == parse_objective(text)


@pytest.mark.parametrize("text, words", [
    ("accuracy", "cannot read 'accuracy'"), ("leak:f1", "unknown criterion 'leak'"),
    ("recall>=1.5", "bound 1.5"), ("f0", "beta must be positive"), ("f1,token:recall>=0.9", "names no categories"),
    ("f1,NAME=recall,NAME=f2", "category NAME has two targets"), ("", "expected a string"),
])
def test_a_bad_objective_is_named_in_the_error(text, words):
    with pytest.raises(ObjectiveError, match=words) as err:
        parse_objective(text)
    assert repr(text) in str(err.value)


def test_a_bad_objective_fails_before_any_fit():
    docs, members = random_case(1, n_docs=4, n_members=3)
    with pytest.raises(InvalidParameter, match="objective='recall>=2'"):
        GridSearch(Voting(), objective="recall>=2").fit(members, docs)


def test_default_is_plain_strict_f1():
    assert parse_objective("f1").is_default and parse_objective("strict:f1").is_default
    assert not parse_objective("f2").is_default and not parse_objective("f1,NAME=f1").is_default


# --- scores, hand-computed ------------------------------------------------------------
# counts (tp_sys, n_sys, tp_gold, n_gold) = (1, 3, 1, 2): P = 1/3, R = 1/2

@pytest.mark.parametrize("target, score", [
    ("f1", (2 / 5,)),                         # 2tp / (2tp + fp + fn) = 2 / (2 + 2 + 1)
    ("f2", (5 / 11,)),                        # 5tp / (5tp + 4fn + fp) = 5 / (5 + 4 + 2)
    ("f0.5", (1.25 / 3.5,)),                  # 1.25tp / (1.25tp + 0.25fn + fp)
    ("recall", (1 / 2,)),
    ("recall>=0.5", (1, 1 / 3, 1 / 2)),       # met: then precision
    ("recall>=0.6", (0, 1 / 2, 1 / 3)),       # missed: the closest recall first
    ("precision>=0.3", (1, 1 / 2, 1 / 3)),
    ("precision>=0.5", (0, 1 / 3, 1 / 2)),
])
def test_every_target_scores_as_computed_by_hand(target, score):
    got = parse_objective(target).base.score((1, 3, 1, 2))
    assert got == pytest.approx(score)


def test_f1_is_todays_strict_formula_to_the_last_bit():
    from ensemble_deid.ensemble.base import metric_value

    for tp, fp, fn in [(5502, 157, 299), (7, 3, 11), (0, 0, 0), (123456, 789, 1011)]:
        assert Target().score((tp, tp + fp, tp, tp + fn)) == (metric_value(tp, fp, fn, "f1"),)
        assert Target(beta=2.0).score((tp, tp + fp, tp, tp + fn)) == (metric_value(tp, fp, fn, "f2"),)


def test_best_index_breaks_ties_by_the_earlier_candidate():
    assert best_index([(0.5,), (0.7,), (0.7,)]) == 1
    assert best_index([(1, 0.9, 0.99), (1, 0.9, 0.995), (0, 0.999, 0.95)]) == 1  # met, equal P: more recall


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=30),
       st.floats(0.01, 1.0), st.floats(0.01, 1.0))
def test_raising_a_recall_target_never_lowers_the_chosen_recall(points, r1, r2):
    """Over any set of candidate operating points (their out-of-fold counts)."""
    low, high = sorted((r1, r2))
    counts = [(tp, tp + fp, tp, tp + fn) for tp, fp, fn in points]

    def chosen_recall(bound):
        target = Target("binary-token", "recall>=", bound=bound)
        tp, _, tp_g, n_g = counts[best_index([target.score(c) for c in counts])]
        return tp_g / n_g if n_g else 0.0

    assert chosen_recall(high) >= chosen_recall(low)


def test_raising_a_recall_target_never_lowers_the_cv_recall_of_voting():
    docs, members = random_case(7, n_docs=12, n_members=5)
    recalls = []
    for bound in (0.5, 0.8, 0.9, 0.95, 1.0):
        search = GridSearch(Voting(), folds=4, objective=f"recall>={bound}").fit(members, docs)
        best = next(r for r in search.cv_results_ if r.params == search.best_params_)
        recalls.append(best.tp / (best.tp + best.fn))
        assert search.reached_ == {"*": recalls[-1] >= bound}  # said when the closest setting was taken
    assert recalls == sorted(recalls)


# --- counting: hand-computed, and equal to the official scorer -------------------------

def _real_text_case():
    # "Ana Lopez vio 555 1234 hoy": Ana 0-3, Lopez 4-9, vio 10-13, 555 14-17, 1234 18-22, hoy 23-26
    d1 = Document("d1", "Ana Lopez vio 555 1234 hoy",
                  [Annotation(0, 9, "NAME", "PATIENT"), Annotation(14, 22, "CONTACT", "PHONE")])
    d2 = Document("d2", "Lopez", [Annotation(0, 5, "NAME", "PATIENT")])
    system = {"d1": [Annotation(0, 3, "NAME", "PATIENT"), Annotation(14, 22, "CONTACT", "PHONE"),
                     Annotation(23, 26, "LOCATION", "CITY")],
              "d2": [Annotation(0, 5, "LOCATION", "CITY")]}
    return [d1, d2], system


def test_counts_of_every_criterion_by_hand():
    docs, system = _real_text_case()
    c = tally_spans(GoldKeys(docs), [system[d.id] for d in docs])
    assert c.overall["strict"] == (1, 4, 1, 3)           # the phone; 4 system spans, 3 gold
    assert c.overall["token"] == (3, 5, 3, 5)            # Ana, 555, 1234 of Ana Lopez 555 1234 Lopez
    assert c.overall["binary-token"] == (4, 5, 4, 5)     # + Lopez (d2) found as a city
    assert c.by_category["token"]["NAME"] == (1, 1, 1, 3)
    # binary per category: the city-labelled Lopez is a LOCATION system token matching a NAME gold token
    assert c.by_category["binary-token"]["NAME"] == (1, 1, 2, 3)
    assert c.by_category["binary-token"]["LOCATION"] == (1, 2, 0, 0)
    assert c.by_category["strict"]["CONTACT"] == (1, 1, 1, 1)


def test_counts_equal_the_official_scorer():
    docs, system = _real_text_case()
    c = tally_spans(GoldKeys(docs), [system[d.id] for d in docs])
    for name, criterion in (("strict", "strict"), ("token", "token"), ("binary-token", "binary_token")):
        counts = Scorer(docs, criterion).counts(system)
        tp, fp, fn = int(counts.tp.sum()), int(counts.fp.sum()), int(counts.fn.sum())
        assert c.overall[name] == (tp, tp + fp, tp, tp + fn)


@pytest.mark.parametrize("seed", range(4))
def test_candidate_weights_add_up_to_the_counts_of_the_selection(seed):
    docs, members = random_case(seed, n_docs=5, n_members=4)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    voting = Voting(threshold=2).fit(members, docs)
    selected = voting._predict_raw(table)
    want = tally_spans(GoldKeys(docs), [p.spans(d) for p, d in zip(table.to_predictions(selected), docs)])
    got = candidate_weights(table).counts(selected)[0]
    assert got.overall == want.overall
    for crit in got.by_category:
        for cat, v in want.by_category[crit].items():
            assert got.by_category[crit][cat] == v


# --- the objective reaches the learners -------------------------------------------------

def test_grid_search_hands_its_objective_to_pruned_voting():
    """Issue 31 item 5: ``--method voting-pruned --metric recall`` returned the F1 choice."""
    docs, members = random_case(3, n_docs=8, n_members=5)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    search = GridSearch(make_method("voting-pruned"), folds=3, objective="recall").fit(members, docs)
    model = search.best_estimator_
    assert model.objective == "recall"
    want = pruning_search(table, table.member_rank(), metric="recall")
    assert (model.threshold_, model.subset_) == (want.threshold, want.subset)
    assert search.chosen_params()["objective"] == "recall"


def test_a_learner_objective_that_contradicts_the_selection_is_refused():
    docs, members = random_case(3, n_docs=6, n_members=3)
    with pytest.raises(InvalidParameter, match="objective='f2' given to the method and 'recall'"):
        GridSearch(PrunedVoting(objective="f2"), objective="recall", fixed=("objective",)).fit(members, docs)


@pytest.mark.parametrize("method", ["stacked-svm", "decision-templates"])
def test_a_leak_first_objective_moves_the_decision_threshold(method):
    docs, members = random_case(5, n_docs=12, n_members=5)
    f1 = GridSearch(make_method(method), folds=3).fit(members, docs)
    first = GridSearch(make_method(method), folds=3, objective="binary-token:recall>=0.99").fit(members, docs)
    assert f1.best_estimator_.operating_point is None and f1.operating_search_ is None
    point = first.best_estimator_.operating_point
    op = first.operating_search_
    assert op is not None and op.points[0] is None and len(op.points) > 1
    recall = {str(p): c["recall"] for p, c in zip(op.points, op.curve())}
    assert recall[str(point)] >= recall["None"]  # never less recall than the learner's own rule
    assert op.reached["*"] == (recall[str(point)] >= 0.99)


# --- per-category thresholds --------------------------------------------------------------

def _category_case():
    """Gold NAME(0,1), DATE(3,4), DATE(6,7); votes: NAME(0,1) 1 (A), DATE(3,4) 3,
    DATE(6,7) 2 (B, C), DATE(8,9) 1 (A, false), NAME(9,10) 1 (C, false). Four
    patients with the same notes."""
    docs = [doc(f"p{i}", 10, [(0, 1, "NAME:PATIENT"), (3, 4, "DATE:DATE"), (6, 7, "DATE:DATE")], group=f"g{i}")
            for i in range(4)]
    spans = {"A": [(0, 1, "NAME:PATIENT"), (3, 4, "DATE:DATE"), (8, 9, "DATE:DATE")],
             "B": [(3, 4, "DATE:DATE"), (6, 7, "DATE:DATE")],
             "C": [(3, 4, "DATE:DATE"), (6, 7, "DATE:DATE"), (9, 10, "NAME:PATIENT")]}
    return docs, members_of(docs, {m: {d.id: s for d in docs} for m, s in spans.items()})


def test_voting_gets_a_per_category_threshold_by_hand():
    docs, members = _category_case()
    # t = 1: tp 3 fp 2 fn 0 -> F1 6/8; t = 2: tp 2 fp 0 fn 1 -> 4/5; t = 3: 2/4. NAME at t = 1: recall 1.
    search = GridSearch(Voting(), folds=2, objective="f1,NAME=token:recall>=1").fit(members, docs)
    assert search.best_params_ == {"threshold": 2, "trust": None, "operating_point": {"NAME": 1.0}}
    assert search.operating_search_.reached == {"*": True, "NAME": True}
    kept = {(a.start, a.end, a.label) for a in search.predict(members, docs[:1])[0].spans(docs[0])}
    assert kept == {(0, 1, "NAME:PATIENT"), (6, 7, "DATE:DATE"), (12, 13, "DATE:DATE"), (18, 19, "NAME:PATIENT")}
    plain = GridSearch(Voting(), folds=2).fit(members, docs)
    assert plain.best_params_ == {"threshold": 2, "trust": None}


def test_pruned_voting_gets_per_category_thresholds_on_its_fitting_documents():
    docs, members = _category_case()
    model = PrunedVoting(objective="f1,NAME=token:recall>=1").fit(members, docs)
    assert model.operating_point_ == {"NAME": 1.0}
    names = {a.label for a in model.predict(members, docs[:1])[0].spans(docs[0])}
    assert "NAME:PATIENT" in names


def test_category_thresholds_tie_to_the_lower_candidate():
    # every candidate scores the same for NAME: the first (lowest) is kept
    from ensemble_deid.ensemble.objective import Counts

    flat = Counts({"token": (1, 1, 1, 1)}, {"token": {"NAME": (1, 2, 1, 2)}})
    point, reached = choose_category_points(parse_objective("f1,NAME=token:recall>=0.9"), [1.0, 2.0, 3.0], {"*": 0.5},
                                            lambda pts: [flat] * len(pts))
    assert point == {"*": 0.5, "NAME": 1.0} and reached == {"NAME": False}


def test_an_unreachable_target_takes_the_closest_point_and_says_so():
    docs, members = _category_case()
    search = GridSearch(Voting(), folds=2, objective="token:precision>=1,DATE=token:recall>=1").fit(members, docs)
    # precision 1 is met at t = 2 (base); DATE recall 1 needs t = 1 where... DATE(3,4), (6,7) both need <= 2
    assert search.operating_search_.reached["*"] is True
    unreachable = GridSearch(Voting(), folds=2, objective="strict:precision>=1,NAME=strict:precision>=1")
    unreachable.fit(members, docs)
    # NAME spans: one right, one wrong at t = 1; none at t >= 2 (precision 0 of 0): not reached
    assert unreachable.operating_search_.reached["NAME"] is False
    assert np.isfinite(unreachable.best_estimator_.operating_point["NAME"])


def test_the_ensembles_own_oof_predictions_refit_the_objective_estimator():
    """run_ensemble refits ``objective_estimator()`` with the chosen parameters on other folds:
    a pruned voting searched for recall must stay a recall pruned voting there."""
    from ensemble_deid.ensemble.selection import cross_val_predict, make_folds

    docs, members = random_case(3, n_docs=8, n_members=5)
    search = GridSearch(make_method("voting-pruned"), folds=3, objective="recall").fit(members, docs)
    refit = search.objective_estimator().clone().set_params(**search.best_params_)
    assert refit.objective == "recall"
    folds = make_folds(docs, 3, 0)
    got = cross_val_predict(refit, members, docs, folds)
    want = cross_val_predict(PrunedVoting(objective="recall"), members, docs, folds)
    assert {k: v.tags for k, v in got.items()} == {k: v.tags for k, v in want.items()}


@pytest.mark.parametrize("method", ["stacked-svm", "decision-templates"])
def test_a_category_clause_leaves_the_other_categories_at_the_f1_only_decisions(method):
    """With a plain strict-F1 base, only the named category gets a threshold: the
    whole output keeps the learner's own rule, as the F1-only ensemble (the base
    sweep once moved every category: decision templates' OTHER F1 by 0.34 pt on
    MEDDOCAN dev)."""
    docs, members = random_case(0, n_docs=12, n_members=5)
    per = GridSearch(make_method(method), folds=3, objective="f1,DATE=token:recall>=0.99").fit(members, docs)
    plain = GridSearch(make_method(method), folds=3).fit(members, docs)
    assert set(per.best_estimator_.operating_point) == {"DATE"}
    assert per.best_params_.items() >= {k: v for k, v in plain.best_params_.items()}.items()

    def others(search):
        return {(d, a.start, a.end, a.label) for d, p in enumerate(search.predict(members, docs))
                for a in p.spans(docs[d]) if a.category != "DATE"}

    assert others(per) == others(plain)


# --- the operating point of a scored learner, by hand ---------------------------------------
# Decision templates (paper) on _category_case: profiles v (votes of A, B, C); templates
# True = mean of gold rows [1,0,0], [1,1,1], [0,1,1] = (2/3, 2/3, 2/3), False = mean of [1,0,0],
# [0,0,1] = (1/2, 0, 1/2); score = d_false - d_true = 2 * sum(|v - F| - |v - T|):
#   DATE(3,4) [1,1,1]: 2 * (2 - 1) = 2;  DATE(6,7) [0,1,1]: 2 * (2 - 4/3) = 4/3;
#   NAME(0,1), DATE(8,9) [1,0,0] and NAME(9,10) [0,0,1]: 2 * (1 - 5/3) = -4/3.
# Every fold sees the same notes, so the held-out scores are these; points: own rule (score > 0),
# then -4/3, 4/3, 2. Per note: own rule and 4/3 keep both true DATEs (tp 2, fp 0, fn 1); -4/3
# keeps all five (tp 3, fp 2, fn 0); 2 keeps DATE(3,4) alone (tp 1, fp 0, fn 2).

@pytest.mark.parametrize("objective, point", [
    ("strict:recall>=1", {"*": -4 / 3}),      # only -4/3 finds every span
    ("f2", {"*": -4 / 3}),                    # F2 15/17 against 10/14 (own rule, 4/3) and 5/13 (2)
    ("strict:precision>=1", None),            # own rule and 4/3 tie (P 1, R 2/3): the own rule
    ("strict:recall>=0.5", None),             # own rule and 4/3 tie (R 2/3 met, P 1): the own rule
    ("f1,NAME=token:recall>=1", {"NAME": -4 / 3}),  # the rest at the own rule; NAME's two at -4/3
])
def test_decision_templates_operating_point_by_hand(objective, point):
    docs, members = _category_case()
    search = GridSearch(make_method("decision-templates"), folds=2, objective=objective).fit(members, docs)
    got = search.best_estimator_.operating_point
    assert (got is None) == (point is None)
    if point is not None:
        assert got == pytest.approx(point)
    points = search.operating_search_.points
    assert points[0] is None  # the own rule first, then the thresholds, lowest first
    swept = [p["*"] for p in points[1:] if "*" in p]
    want = set() if objective.startswith("f1,") else {round(t, 9) for t in (-4 / 3, 4 / 3, 2)}  # F1 base: no sweep
    assert swept == sorted(swept) and {round(t, 9) for t in swept} == want


@pytest.mark.parametrize("method", ["decision-templates", "stacked-svm"])
def test_raising_a_recall_target_never_lowers_the_chosen_oof_recall_of_a_scored_learner(method):
    """The operating point chosen along the score: its pooled held-out recall
    never falls as the target rises."""
    docs, members = random_case(7, n_docs=12, n_members=5)
    recalls = []
    for bound in (0.5, 0.8, 0.9, 0.95, 0.99, 1.0):
        op = GridSearch(make_method(method), folds=3, objective=f"binary-token:recall>={bound}").fit(
            members, docs).operating_search_
        curve = {str(p): c["recall"] for p, c in zip(op.points, op.curve("binary-token"))}
        recalls.append(curve[str(op.chosen)])
        assert op.reached["*"] == (recalls[-1] >= bound)
    assert recalls == sorted(recalls)
