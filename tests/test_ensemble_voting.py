"""Voting: thresholds, overlaps (more votes wins, greedy chains) and the
cross-validated-F1 tie-break, on hand-made fixtures."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_deid.ensemble import Voting, build_candidates, vote_select

from .test_ensemble_fixtures import CITY, DATE, NAME, doc, members_of, random_case, spans_of


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
])
def test_threshold_keeps_spans_with_enough_votes(threshold_case, threshold, expected):
    d, members = threshold_case
    assert _fit_predict(Voting(threshold=threshold), members, [d]) == [expected]


def test_a_threshold_above_the_members_is_refused_not_fitted(threshold_case):
    # It would keep no span (issue 52 item 5: MetaLearner.check_members, which a bundle's loader runs too).
    d, members = threshold_case
    with pytest.raises(ValueError, match=r"threshold 5 exceeds the number of members \(4\)"):
        Voting(threshold=5).fit(members, [d])


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


# --- the authors' chain sweep (overlap="chain") --------------------------------

def _chain_case():
    """Three spans in a chain: X overlaps Y, Y overlaps Z, X and Z do not.
    Votes: X 2 (A, B), Y 3 (C, D, E), Z 4 (A, B, F, G)."""
    d = doc("d", 10)
    X, Y, Z = (0, 2, NAME), (1, 4, NAME), (3, 5, NAME)
    members = members_of([d], {
        "A": {"d": [X, Z]}, "B": {"d": [X, Z]}, "C": {"d": [Y]}, "D": {"d": [Y]}, "E": {"d": [Y]},
        "F": {"d": [Z]}, "G": {"d": [Z]},
    })
    return d, members, X, Y, Z


@pytest.mark.parametrize("threshold", [1, 2])
def test_chain_of_three_greedy_keeps_both_ends_chain_keeps_one(threshold):
    d, members, X, Y, Z = _chain_case()
    # Greedy, by decreasing votes: Z (4) accepted, Y (3) overlaps Z: rejected,
    # X (2) overlaps only Y, which was rejected: accepted -> {X, Z}.
    assert _fit_predict(Voting(threshold=threshold), members, [d]) == [{X, Z}]
    # Chain, in start order: X (2) has an undecided neighbour Y (3 > 2): dropped;
    # Y (3) has an undecided neighbour Z (4 > 3): dropped; Z (4): no undecided
    # neighbour beats it (Y is decided): accepted -> {Z}. X lost to Y, which
    # was itself dropped later.
    assert _fit_predict(Voting(threshold=threshold, overlap="chain"), members, [d]) == [{Z}]


def test_chain_of_three_agrees_with_greedy_when_the_first_wins():
    """Votes X 3 > Y 2 > Z 1: chain accepts X and drops Y (its undecided
    neighbour), then Z has no undecided neighbour left: {X, Z}, as greedy."""
    d = doc("d", 10)
    X, Y, Z = (0, 2, NAME), (1, 4, NAME), (3, 5, NAME)
    members = members_of([d], {"A": {"d": [X, Z]}, "B": {"d": [X]}, "C": {"d": [X]}, "D": {"d": [Y]},
                               "E": {"d": [Y]}})
    for overlap in ("greedy", "chain"):
        assert _fit_predict(Voting(threshold=1, overlap=overlap), members, [d]) == [{X, Z}]


def test_chain_never_keeps_the_weaker_neighbour_of_a_tie_winner():
    """The authors' defect: P = (0, 5) and Q = (3, 8) have 2 votes each, R =
    (4, 6) has 1 and overlaps both. Their sweep visits P, finds Q tied (P's
    best voter A ranks better) and R weaker, accepts P and marks only Q done;
    R, never marked, is then accepted too, overlapping P. Here P is accepted
    and both neighbours dropped."""
    d = doc("d", 12, gold=[(0, 5, NAME)])
    P, Q, R = (0, 5, NAME), (3, 8, NAME), (4, 6, DATE)
    members = members_of([d], {"A": {"d": [P]}, "B": {"d": [P]}, "C": {"d": [Q]}, "D": {"d": [Q]},
                               "E": {"d": [R]}})
    assert _fit_predict(Voting(threshold=1, overlap="chain"), members, [d]) == [{P}]


def test_chain_tie_loser_stays_undecided_and_still_outvotes():
    """P = (0, 5) and Q = (3, 8) have 2 votes each; Q's voters (A, B: F1 1)
    rank better than P's (C, D: F1 0); R = (1, 2) has 1 vote (E) and overlaps
    P only. Greedy: Q, then P (overlaps Q) rejected, then R (its only
    neighbour P is gone) accepted -> {Q, R}. Chain: P loses to Q on the
    tie-break only, so it stays undecided; R is outvoted by the undecided P
    (2 > 1) and dropped; Q beats P and is accepted, dropping P -> {Q}."""
    P, Q, R = (0, 5, NAME), (3, 8, NAME), (1, 2, DATE)
    d = doc("d", 12, gold=[Q])
    members = members_of([d], {"A": {"d": [Q]}, "B": {"d": [Q]}, "C": {"d": [P]}, "D": {"d": [P]},
                               "E": {"d": [R]}})
    assert _fit_predict(Voting(threshold=1), members, [d]) == [{Q, R}]
    assert _fit_predict(Voting(threshold=1, overlap="chain"), members, [d]) == [{Q}]


def chain_reference(table, keep, priority, primary):
    """Sequential chain sweep over kept rows in (start, end, label) order."""
    undecided = set(np.flatnonzero(keep).tolist())
    out = np.zeros(len(table), dtype=bool)
    overlaps = lambda i, j: table.first[i] < table.stop[j] and table.first[j] < table.stop[i]  # noqa: E731
    for i in sorted(undecided, key=lambda r: (table.first[r], table.stop[r], table.label[r])):
        if i not in undecided:
            continue
        rivals = [j for j in undecided if j != i and overlaps(i, j)]
        if any(primary[j] > primary[i] for j in rivals):
            undecided.discard(i)  # outvoted: dropped
        elif not any(priority[j] > priority[i] for j in rivals):
            out[i] = True
            undecided -= {i, *rivals}
        # else: lost on the tie-break only, stays undecided
    return out


def test_vectorised_chain_equals_the_sequential_sweep():
    from ensemble_deid.ensemble.voting import resolve_chain

    rng = np.random.default_rng(1)
    for seed in range(60):  # enough for components where a tie loser outvotes a later span
        docs, members = random_case(seed, n_docs=3, n_members=8, n_tokens=40)
        names = tuple(members)
        table = build_candidates([members[n] for n in names], names, docs)
        keep = rng.random((len(table), 4)) < 0.8
        priority = rng.integers(0, 8, size=(len(table), 4))  # ties on purpose: the visited one wins
        primary = priority // 3  # the first key of the priority
        got = resolve_chain(table, keep, priority, primary)
        for c in range(4):
            want = chain_reference(table, keep[:, c], priority[:, c], primary[:, c])
            assert np.array_equal(got[:, c], want), (seed, c)
            chosen = np.flatnonzero(got[:, c])
            assert all(table.stop[a] <= table.first[b] for a, b in zip(chosen[:-1], chosen[1:])
                       if table.doc[a] == table.doc[b])  # never two overlapping spans
        assert np.array_equal(resolve_chain(table, keep[:, 0], priority[:, 0], primary[:, 0]), got[:, 0])


def test_bad_overlap_rule_is_refused(threshold_case):
    d, members = threshold_case
    with pytest.raises(ValueError, match="overlap='sweep'; expected one of 'greedy', 'chain'"):
        Voting(overlap="sweep").fit(members, [d])


def test_overlap_rule_is_part_of_the_parameter_hash():
    assert Voting().param_hash() != Voting(overlap="chain").param_hash()
    assert Voting(overlap="chain").get_params() == {"threshold": 2, "overlap": "chain", "operating_point": None,
                                                      "trust": None}
