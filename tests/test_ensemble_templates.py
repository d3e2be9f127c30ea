"""Decision templates: template values, Hamming distances, the tie rule and
the voting tie-breaks for overlapping True spans."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_deid.ensemble import DecisionTemplates, Voting, build_candidates

from .test_ensemble_fixtures import NAME, doc, members_of, random_case, spans_of


@pytest.fixture
def fitted():
    """Training candidates (single tokens): c1 = A,B,C (gold), c2 = A,B (gold),
    c3 = C (false), c4 = A (false)."""
    train = doc("t", 10, gold=[(0, 1, NAME), (2, 3, NAME)])
    members = members_of([train], {
        "A": {"t": [(0, 1, NAME), (2, 3, NAME), (6, 7, NAME)]},
        "B": {"t": [(0, 1, NAME), (2, 3, NAME)]},
        "C": {"t": [(0, 1, NAME), (4, 5, NAME)]},
    })
    return DecisionTemplates().fit(members, [train])


def test_templates_are_mean_profiles(fitted):
    # rows: members A, B, C; columns: [produced, not produced]
    assert np.allclose(fitted.template_true_, [[1, 0], [1, 0], [0.5, 0.5]])
    assert np.allclose(fitted.template_false_, [[0.5, 0.5], [0, 1], [0.5, 0.5]])


def test_hamming_distances_and_classes(fitted):
    test = doc("s", 12)
    # x1 = A,B; x2 = A,C; x3 = B; x4 = C; x5 = A
    members = members_of([test], {
        "A": {"s": [(0, 1, NAME), (2, 3, NAME), (8, 9, NAME)]},
        "B": {"s": [(0, 1, NAME), (4, 5, NAME)]},
        "C": {"s": [(2, 3, NAME), (6, 7, NAME)]},
    })
    table = build_candidates(list(members.values()), tuple(members), [test])
    d_true, d_false = fitted.distances(table)
    # By hand (sum over both columns of every row):
    # x1 [1,1,0]: |0|+|0| + |0|+|0| + |.5|+|.5| = 1 ; to False: 1 + 2 + 1 = 4
    # x2 [1,0,1]: 0 + 2 + 1 = 3 ; 1 + 0 + 1 = 2
    # x3 [0,1,0]: 2 + 0 + 1 = 3 ; 1 + 2 + 1 = 4
    # x4 [0,0,1]: 2 + 2 + 1 = 5 ; 1 + 0 + 1 = 2
    # x5 [1,0,0]: 0 + 2 + 1 = 3 ; 1 + 0 + 1 = 2
    assert d_true.tolist() == [1, 3, 3, 5, 3]
    assert d_false.tolist() == [4, 2, 4, 2, 2]
    got = spans_of(test, fitted.predict(members, [test])[0])
    assert got == {(0, 1, NAME), (4, 5, NAME)}  # x1 and x3 (one vote, from B, yet PHI)


def test_equal_distances_go_to_false():
    """Training: True [1,1], [1,0]; False [0,1], [1,1] -> templates A: 1 / .5,
    B: .5 / 1; a [1,1] profile is at distance 1 from both."""
    train = doc("t", 10, gold=[(0, 1, NAME), (2, 3, NAME)])
    members = members_of([train], {
        "A": {"t": [(0, 1, NAME), (2, 3, NAME), (6, 7, NAME)]},
        "B": {"t": [(0, 1, NAME), (4, 5, NAME), (6, 7, NAME)]},
    })
    learner = DecisionTemplates().fit(members, [train])
    test = doc("s", 10)
    test_members = members_of([test], {"A": {"s": [(0, 1, NAME), (2, 3, NAME)]},
                                       "B": {"s": [(0, 1, NAME), (4, 5, NAME)]}})
    table = build_candidates(list(test_members.values()), ("A", "B"), [test])
    d_true, d_false = learner.distances(table)
    assert d_true.tolist() == [1, 1, 3] and d_false.tolist() == [1, 3, 1]
    assert spans_of(test, learner.predict(test_members, [test])[0]) == {(2, 3, NAME)}


def test_overlapping_true_spans_follow_the_voting_rules():
    """With every candidate classified True, the method is voting at t=1
    (more votes, then the better member) on any input."""
    docs, members = random_case(3, n_docs=5, n_members=4)
    learner = DecisionTemplates().fit(members, docs)
    learner.template_false_ = None  # no False template: every span is True
    voting = Voting(threshold=1).fit(members, docs)
    assert [p.tags for p in learner.predict(members, docs)] == [p.tags for p in voting.predict(members, docs)]


def test_no_gold_at_all_predicts_nothing():
    train = doc("t", 10)
    members = members_of([train], {"A": {"t": [(0, 1, NAME)]}, "B": {"t": [(0, 1, NAME)]}})
    learner = DecisionTemplates().fit(members, [train])
    assert learner.template_true_ is None
    assert spans_of(train, learner.predict(members, [train])[0]) == set()
