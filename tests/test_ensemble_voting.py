"""Voting: thresholds, overlaps (more votes wins, greedy chains) and the
cross-validated-F1 tie-break, on hand-made fixtures."""
from __future__ import annotations

import pytest

from ensemble_deid.ensemble import Voting, build_candidates, vote_select

from .test_ensemble_fixtures import CITY, DATE, NAME, doc, members_of, spans_of


def _fit_predict(learner, members, docs, test_members=None, test_docs=None):
    learner.fit(members, docs)
    test_docs = test_docs or docs
    preds = learner.predict(test_members or members, test_docs)
    return [spans_of(d, p) for d, p in zip(test_docs, preds)]


@pytest.fixture
def threshold_case():
    d = doc("d", 20, gold=[(0, 2, NAME), (5, 6, DATE), (10, 12, CITY)])
    members = members_of([d], {
        "A": {"d": [(0, 2, NAME), (5, 6, DATE), (15, 16, NAME)]},
        "B": {"d": [(0, 2, NAME), (5, 6, DATE)]},
        "C": {"d": [(0, 2, NAME), (10, 12, CITY)]},
        "D": {"d": [(0, 2, NAME), (10, 12, CITY)]},
    })
    return d, members


@pytest.mark.parametrize("threshold, expected", [
    (1, {(0, 2, NAME), (5, 6, DATE), (10, 12, CITY), (15, 16, NAME)}),
    (2, {(0, 2, NAME), (5, 6, DATE), (10, 12, CITY)}),
    (3, {(0, 2, NAME)}),
    (4, {(0, 2, NAME)}),
    (5, set()),
])
def test_threshold_keeps_spans_with_enough_votes(threshold_case, threshold, expected):
    d, members = threshold_case
    assert _fit_predict(Voting(threshold=threshold), members, [d]) == [expected]


def test_counts_per_threshold(threshold_case):
    d, members = threshold_case
    table = build_candidates(list(members.values()), tuple(members), [d])
    rank = table.member_rank()
    assert [table.counts(vote_select(table, t, rank)) for t in (1, 2, 3, 5)] == [
        (3, 1, 0), (3, 0, 0), (1, 0, 2), (0, 0, 3)]


def test_votes_count_only_identical_spans_and_labels():
    d = doc("d", 10, gold=[(0, 2, NAME)])
    members = members_of([d], {
        "A": {"d": [(0, 2, NAME)]},
        "B": {"d": [(0, 2, DATE)]},  # same span, other label: not a vote for (0, 2, NAME)
        "C": {"d": [(0, 3, NAME)]},  # other boundary: not a vote either
    })
    assert _fit_predict(Voting(threshold=2), members, [d]) == [set()]


def test_overlap_more_votes_wins_even_over_the_best_member():
    d = doc("d", 10, gold=[(0, 3, NAME)])
    members = members_of([d], {
        "A": {"d": [(0, 3, NAME)]},  # right, and the best member
        "B": {"d": [(0, 2, NAME)]},
        "C": {"d": [(0, 2, NAME)]},
    })
    assert _fit_predict(Voting(threshold=1), members, [d]) == [{(0, 2, NAME)}]


def test_overlap_chain_is_resolved_greedily():
    """X (3 votes) beats Y (2); Z (1 vote) overlaps only Y, which lost, so Z stays."""
    d = doc("d", 10)
    X, Y, Z = (0, 2, NAME), (1, 4, NAME), (3, 5, NAME)
    members = members_of([d], {
        "A": {"d": [X, Z]}, "B": {"d": [X]}, "C": {"d": [X]}, "D": {"d": [Y]}, "E": {"d": [Y]},
    })
    assert _fit_predict(Voting(threshold=1), members, [d]) == [{X, Z}]
    assert _fit_predict(Voting(threshold=2), members, [d]) == [{X}]
    assert _fit_predict(Voting(threshold=4), members, [d]) == [set()]


def _tie_case(a_is_better: bool):
    """Training: one member gets all three gold spans, the other only one.
    Test: each member predicts one of two overlapping spans (one vote each)."""
    train = doc("t", 10, gold=[(0, 1, NAME), (3, 4, NAME), (6, 7, NAME)])
    good, poor = [(0, 1, NAME), (3, 4, NAME), (6, 7, NAME)], [(0, 1, NAME)]
    train_members = members_of([train], {"A": {"t": good if a_is_better else poor},
                                         "B": {"t": poor if a_is_better else good}})
    test = doc("s", 10)
    test_members = members_of([test], {"A": {"s": [(0, 3, NAME), (6, 8, NAME)]},
                                       "B": {"s": [(1, 4, NAME), (6, 8, DATE)]}})
    return train, train_members, test, test_members


@pytest.mark.parametrize("a_is_better", [True, False])
def test_tie_goes_to_the_member_with_better_cv_f1(a_is_better):
    train, train_members, test, test_members = _tie_case(a_is_better)
    learner = Voting(threshold=1)
    got = _fit_predict(learner, train_members, [train], test_members, [test])
    if a_is_better:
        assert got == [{(0, 3, NAME), (6, 8, NAME)}]  # boundary and label conflicts both go to A
    else:
        assert got == [{(1, 4, NAME), (6, 8, DATE)}]
    assert list(learner.member_rank_) == ([0, 1] if a_is_better else [1, 0])
    assert learner.member_f1_.max() == 1.0


def test_equal_f1_ties_go_to_the_member_listed_first():
    d = doc("d", 10)
    for order in (("A", "B"), ("B", "A")):
        spans = {"A": {"d": [(0, 3, NAME)]}, "B": {"d": [(1, 4, NAME)]}}
        members = members_of([d], {name: spans[name] for name in order})
        first = (0, 3, NAME) if order[0] == "A" else (1, 4, NAME)
        assert _fit_predict(Voting(threshold=1), members, [d]) == [{first}]


def test_vote_select_over_a_subset_of_members(threshold_case):
    d, members = threshold_case
    table = build_candidates(list(members.values()), tuple(members), [d])
    selected = vote_select(table, 2, table.member_rank(), columns=[0, 1])  # A and B only
    rows = {(int(table.first[r]), int(table.stop[r])) for r in selected.nonzero()[0]}
    assert rows == {(0, 2), (5, 6)}


def test_bad_threshold_is_refused(threshold_case):
    d, members = threshold_case
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threshold"):
            Voting(threshold=bad).fit(members, [d])
