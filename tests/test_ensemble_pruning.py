"""Voting pruned by greedy backward elimination: the elimination order, the
stopping rule, ties, the best (threshold, subset), and the vectorised subset
scorer against the plain voting rule."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_deid.ensemble import PrunedVoting, SubsetScorer, Voting, build_candidates, pruning_search, vote_select

from .test_ensemble_fixtures import NAME, doc, members_of, random_case, spans_of

# Six gold spans g1..g6 (tokens 0, 2, .., 10) and false spans f1..f8 (tokens 20, 22, .., 34).
G = [(2 * i, 2 * i + 1, NAME) for i in range(6)]
F = [(20 + 2 * i, 21 + 2 * i, NAME) for i in range(8)]


@pytest.fixture
def elimination_case():
    d = doc("d", 40, gold=G)
    members = members_of([d], {
        "A": {"d": G[0:4] + [F[0]]},        # tp 4, fp 1
        "B": {"d": G[0:3] + F[1:4]},        # tp 3, fp 3
        "C": {"d": [G[0], G[4]]},           # tp 2, fp 0
        "D": {"d": F[4:8]},                 # tp 0, fp 4
    })
    return d, members


def test_elimination_path_by_hand(elimination_case):
    d, members = elimination_case
    table = build_candidates(list(members.values()), tuple(members), [d])
    search = pruning_search(table, table.member_rank())
    t1 = search.paths[1]
    # All four at t=1: tp 5, fp 8, fn 1 -> F1 10/19. Dropping D gives 10/15
    # (better than dropping B: 10/16, A: 8/17, C: 8/18); then dropping B gives
    # 10/12; from {A, C} no removal helps (C alone 4/8, A alone 8/11).
    assert t1.start_score == pytest.approx(10 / 19)
    assert [name for name, _ in t1.steps] == ["D", "B"]
    assert [s for _, s in t1.steps] == pytest.approx([10 / 15, 10 / 12])
    assert t1.subset == ("A", "C") and t1.counts == (5, 1, 1)
    # t=2: g1..g3 (tp 3, fn 3) -> 6/9; dropping C or D leaves it equal: no strict gain, stop.
    assert search.paths[2].start_score == pytest.approx(6 / 9) and search.paths[2].steps == []
    assert search.paths[2].subset == ("A", "B", "C", "D")
    # t=3: only g1 -> 2/7; t=4: nothing.
    assert search.paths[3].score == pytest.approx(2 / 7) and search.paths[3].steps == []
    assert search.paths[4].score == 0.0
    assert (search.threshold, search.subset, search.score) == (1, ("A", "C"), pytest.approx(10 / 12))


def test_pruned_voting_predicts_with_the_chosen_subset(elimination_case):
    d, members = elimination_case
    learner = PrunedVoting().fit(members, [d])
    assert (learner.threshold_, learner.subset_) == (1, ("A", "C"))
    assert spans_of(d, learner.predict(members, [d])[0]) == set(G[0:5]) | {F[0]}
    # A fixed threshold searches that threshold only.
    fixed = PrunedVoting(threshold=2).fit(members, [d])
    assert (fixed.threshold_, fixed.subset_) == (2, ("A", "B", "C", "D"))
    assert list(fixed.search_.paths) == [2]


def test_equal_removals_drop_the_worse_ranked_member():
    d = doc("d", 40, gold=G[:3])
    members = members_of([d], {"A": {"d": G[:3]}, "E": {"d": F[0:2]}, "F": {"d": F[2:4]}})
    table = build_candidates(list(members.values()), tuple(members), [d])
    path = pruning_search(table, table.member_rank(), [1]).paths[1]
    # Dropping E or F gives 6/8 alike: F (equal F1 0, listed later) goes first.
    assert path.steps == [("F", pytest.approx(0.75)), ("E", pytest.approx(1.0))]
    assert path.subset == ("A",)


def test_equal_scores_across_thresholds_pick_the_lower_threshold():
    d = doc("d", 10, gold=[G[0]])
    members = members_of([d], {"A": {"d": [G[0]]}, "B": {"d": [G[0]]}})
    search = pruning_search(*(lambda t: (t, t.member_rank()))(build_candidates(list(members.values()), ("A", "B"), [d])))
    assert search.paths[1].score == search.paths[2].score == 1.0
    assert search.threshold == 1


def test_metric_recall_changes_the_choice(elimination_case):
    d, members = elimination_case
    table = build_candidates(list(members.values()), tuple(members), [d])
    search = pruning_search(table, table.member_rank(), metric="recall")
    assert search.threshold == 1 and search.score == pytest.approx(5 / 6)
    assert search.paths[1].steps == []  # every removal loses recall or keeps it equal


@pytest.mark.parametrize("overlap, seed", [("greedy", s) for s in range(5)] + [("chain", s) for s in range(4)])
def test_subset_scorer_equals_the_voting_rule(overlap, seed):
    docs, members = random_case(seed, n_docs=5, n_members=5, n_tokens=40)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    rank = table.member_rank()
    scorer = SubsetScorer(table, rank, overlap=overlap)
    rng = np.random.default_rng(seed)
    for _ in range(10):
        cols = sorted(rng.choice(5, size=rng.integers(1, 6), replace=False).tolist())
        t = int(rng.integers(1, len(cols) + 1))
        fast = scorer.counts(scorer.subset_bits(cols), t)[0]
        slow = table.counts(vote_select(table, t, rank, np.array(cols), overlap=overlap))
        assert tuple(fast) == slow


def test_search_agrees_with_voting_fitted_on_the_subset():
    """The pruned ensemble is plain voting over the kept members (same
    tie-break order restricted to the subset, so the same output)."""
    docs, members = random_case(7, n_docs=6, n_members=6)
    learner = PrunedVoting().fit(members, docs)
    kept = {n: members[n] for n in learner.subset_}
    plain = Voting(threshold=learner.threshold_).fit(kept, docs)
    a = learner.predict(members, docs)
    b = plain.predict(kept, docs)
    assert [p.tags for p in a] == [p.tags for p in b]


def test_scorer_batches_equal_single_evaluations():
    docs, members = random_case(11, n_docs=4, n_members=6)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    scorer = SubsetScorer(table, table.member_rank())
    subsets = np.array([scorer.subset_bits(c) for c in ([0, 1, 2], [1, 3, 4, 5], [0, 5], list(range(6)))], dtype=np.uint64)
    batch = scorer.counts(subsets, 2)
    assert [tuple(r) for r in batch.tolist()] == [tuple(scorer.counts(s, 2)[0].tolist()) for s in subsets]


def test_equal_removals_earliest_listed_as_the_authors():
    """Members listed best first: A (6 gold spans: tp 6, fp 0), B (g1..g3 and
    f1: tp 3, fp 1), C (g4..g6 and f2: tp 3, fp 1); F1 1, 0.6667, 0.6667.
    At t = 2 with all three: each gold span has 2 votes (A + B or A + C), no
    false span has 2: tp 6, fp 0 -> F1 1; no removal strictly improves, so use
    t = 1: tp 6, fp 2, fn 0 -> 12/14. Dropping B: g1..g6, f2 -> 12/13; dropping
    C: g1..g6, f1 -> 12/13 (a tie); dropping A: 6 + 2 -> 12/14. Worse rule: B
    and C have equal F1, so C (listed later, ranked worse) goes; the authors'
    rule drops the earliest-listed of the tied: B. Then {A, C} (or {A, B}) ->
    dropping the other gives A alone: 12/12 = 1."""
    d = doc("d", 40, gold=G)
    members = members_of([d], {"A": {"d": G}, "B": {"d": G[:3] + [F[0]]}, "C": {"d": G[3:] + [F[1]]}})
    table = build_candidates(list(members.values()), tuple(members), [d])
    worse = pruning_search(table, table.member_rank(), [1]).paths[1]
    earliest = pruning_search(table, table.member_rank(), [1], removal_ties="earliest").paths[1]
    assert worse.start_score == earliest.start_score == pytest.approx(12 / 14)
    assert worse.steps == [("C", pytest.approx(12 / 13)), ("B", pytest.approx(1.0))]
    assert earliest.steps == [("B", pytest.approx(12 / 13)), ("C", pytest.approx(1.0))]
    assert worse.subset == earliest.subset == ("A",)


def test_removal_ties_with_a_member_ranked_between():
    """Members A = g1..g4 + f1 (tp 4, fp 1, fn 2: F1 8/11), B = g5 + f2 and
    C = g6 + f3 (tp 1, fp 1, fn 5: 2/8 each), D = g5 + g6 (tp 2, fn 4: 4/8);
    rank A, D, B, C. At t = 1, all: tp 6, fp 3 -> 12/15. Dropping A: tp 2, fp 2,
    fn 4 -> 4/10; B: f2 goes (g5 stays with D) -> 12/14; C: likewise 12/14; D:
    nothing changes -> 12/15. B and C tie: worse drops C (ranked last),
    earliest drops B (listed before C). The other one goes next (12/13), then
    no removal helps: both end with {A, D}."""
    d = doc("d", 40, gold=G)
    members = members_of([d], {"A": {"d": G[:4] + [F[0]]}, "B": {"d": [G[4], F[1]]},
                               "C": {"d": [G[5], F[2]]}, "D": {"d": G[4:6]}})
    table = build_candidates(list(members.values()), tuple(members), [d])
    worse = pruning_search(table, table.member_rank(), [1]).paths[1]
    earliest = pruning_search(table, table.member_rank(), [1], removal_ties="earliest").paths[1]
    assert worse.start_score == pytest.approx(12 / 15)
    assert [n for n, _ in worse.steps] == ["C", "B"] and [n for n, _ in earliest.steps] == ["B", "C"]
    assert [s for _, s in worse.steps] == [s for _, s in earliest.steps] == pytest.approx([12 / 14, 12 / 13])
    assert worse.subset == earliest.subset == ("A", "D")


def test_pruned_voting_takes_the_variants_as_parameters():
    d = doc("d", 40, gold=G)
    members = members_of([d], {"A": {"d": G}, "B": {"d": G[:3] + [F[0]]}, "C": {"d": G[3:] + [F[1]]}})
    learner = PrunedVoting(threshold=1, removal_ties="earliest").fit(members, [d])
    assert learner.search_.paths[1].steps[0][0] == "B"
    assert PrunedVoting().param_hash() != PrunedVoting(removal_ties="earliest").param_hash()
    with pytest.raises(ValueError, match="removal_ties='first'; expected one of 'worse', 'earliest'"):
        PrunedVoting(removal_ties="first").fit(members, [d])
    with pytest.raises(ValueError, match="overlap='sweep'; expected one of 'greedy', 'chain'"):
        PrunedVoting(overlap="sweep").fit(members, [d])


def test_the_search_functions_refuse_what_the_method_refuses_in_its_words():
    # One definition of a valid value (the declared constraints), not a second hand-written check.
    d = doc("d", 40, gold=G)
    members = members_of([d], {"A": {"d": G}, "B": {"d": G[:3] + [F[0]]}})
    table = build_candidates([members[n] for n in members], tuple(members), [d])
    for bad in ({"removal_ties": "first"}, {"overlap": "sweep"}):
        with pytest.raises(ValueError) as method:
            PrunedVoting(**bad).fit(members, [d])
        with pytest.raises(ValueError) as function:
            pruning_search(table, table.member_rank(), **bad)
        assert str(function.value) == str(method.value)
    for t in (0, True, 1.5):  # one threshold searched: an integer of at least 1
        with pytest.raises(ValueError, match=rf"^ensemble method 'voting-pruned': invalid value threshold={t}; "
                                             r"expected an integer in \[1, 1,000,000\]$"):
            pruning_search(table, table.member_rank(), [t])


def test_chain_pruning_agrees_with_chain_voting_on_the_subset():
    docs, members = random_case(8, n_docs=6, n_members=6)
    learner = PrunedVoting(overlap="chain").fit(members, docs)
    kept = {n: members[n] for n in learner.subset_}
    plain = Voting(threshold=learner.threshold_, overlap="chain").fit(kept, docs)
    assert [p.tags for p in learner.predict(members, docs)] == [p.tags for p in plain.predict(kept, docs)]
