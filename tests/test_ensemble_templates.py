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


# --- the authors' DTM.java (variant="authors") ---------------------------------

P, D = "NAME:PATIENT", "NAME:DOCTOR"


@pytest.fixture
def authors():
    """Training gold: g1 (0,1) PATIENT, g2 (2,3) PATIENT, g3 (4,5) DOCTOR.
    A (listed first, weight 1/1): g1 as PATIENT, g2 as DOCTOR, g3 as DOCTOR.
    B (weight 1/2): g1 as PATIENT, g3 as DOCTOR, and two false spans
    (6,7) PATIENT and (8,9) DOCTOR (the NONE class)."""
    train = doc("t", 12, gold=[(0, 1, P), (2, 3, P), (4, 5, D)])
    members = members_of([train], {
        "A": {"t": [(0, 1, P), (2, 3, D), (4, 5, D)]},
        "B": {"t": [(0, 1, P), (4, 5, D), (6, 7, P), (8, 9, D)]},
    })
    return DecisionTemplates(variant="authors", min_similarity=0.5).fit(members, [train])


def test_authors_templates_are_weighted_mean_profiles(authors):
    # Features per member: [subtype DOCTOR, subtype PATIENT, category NAME].
    # PATIENT (2 instances): A: g1 (P, NAME), g2 (D, NAME) -> [1/2, 1/2, 2/2];
    #                        B (x 1/2): g1 (P, NAME) -> [0, 0.5/2, 0.5/2].
    # DOCTOR (1): A [1, 0, 1]; B [0.5, 0, 0.5].
    # NONE (2: (6,7) and (8,9), B only): B [0.5/2, 0.5/2, 1/2].
    assert authors.classes_ == ["NONE", D, P]
    t = authors.templates_.reshape(3, 2, 3)
    assert np.allclose(t[0], [[0, 0, 0], [0.25, 0.25, 0.5]])
    assert np.allclose(t[1], [[1, 0, 1], [0.5, 0, 0.5]])
    assert np.allclose(t[2], [[0.5, 0.5, 1], [0, 0.25, 0.25]])
    assert authors.class_counts_.tolist() == [2, 1, 2]


def test_authors_cosine_similarities_and_decisions(authors):
    test = doc("s", 12)
    members = members_of([test], {"A": {"s": [(0, 1, P), (2, 3, D), (4, 5, D)]},
                                  "B": {"s": [(0, 1, P), (4, 5, P), (6, 7, D)]}})
    table = build_candidates(list(members.values()), ("A", "B"), [test])
    spans, sim = authors.similarities(table)
    # Template norms: NONE sqrt(.375) = .612372, DOCTOR sqrt(2.5) = 1.581139,
    # PATIENT sqrt(1.625) = 1.274755; a profile of v voters has norm sqrt(2v).
    # y1 (0,1) A:P, B:P: dots NONE .25+.5 = .75, DOCTOR 1+.5 = 1.5, PATIENT .5+1+.25+.25 = 2
    #    -> .75/(2*.612372) = .612372, 1.5/(2*1.581139) = .474342, 2/(2*1.274755) = .784465
    # y2 (2,3) A:D: NONE 0, DOCTOR 2/(1.414214*1.581139) = .894427, PATIENT 1.5/(1.414214*1.274755) = .832050
    # y3 (4,5) A:D, B:P: NONE .75 -> .612372, DOCTOR 1+1+.5 = 2.5 -> .790569, PATIENT .5+1+.25+.25 = 2 -> .784465
    # y4 (6,7) B:D: NONE .75/(1.414214*.612372) = .866025, DOCTOR 1/(1.414214*1.581139) = .447214,
    #    PATIENT .25/(1.414214*1.274755) = .138675
    assert list(zip(spans.first.tolist(), spans.stop.tolist())) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert np.allclose(sim, [[.612372, .474342, .784465], [0, .894427, .832050],
                             [.612372, .790569, .784465], [.866025, .447214, .138675]], atol=1e-6)
    # y4 is NONE (dropped); y3's members disagree and it takes DOCTOR.
    assert spans_of(test, authors.predict(members, [test])[0]) == {(0, 1, P), (2, 3, D), (4, 5, D)}
    # Kept only strictly above the threshold: at 0.79, y1 (.7845) goes, y2 (.8944) and y3 (.7906) stay.
    authors.min_similarity = 0.79
    assert spans_of(test, authors.predict(members, [test])[0]) == {(2, 3, D), (4, 5, D)}
    authors.min_similarity = 0.9
    assert spans_of(test, authors.predict(members, [test])[0]) == set()


def test_authors_variant_relabels_to_the_class():
    """A calls every DOCTOR a PATIENT: the DOCTOR template holds A's PATIENT
    subtype (there are no NONE instances: that template is empty and never
    chosen). A test span A labels PATIENT is output as DOCTOR:
    cos = (1 + 1) / (sqrt 2 * sqrt(1 + 1 + .0625 + .0625)) = .970143."""
    train = doc("t", 10, gold=[(0, 1, D), (2, 3, D)])
    members = members_of([train], {"A": {"t": [(0, 1, P), (2, 3, P)]}, "B": {"t": [(0, 1, D)]}})
    learner = DecisionTemplates(variant="authors").fit(members, [train])
    test = doc("s", 10)
    test_members = members_of([test], {"A": {"s": [(4, 6, P)]}, "B": {"s": []}})
    table = build_candidates(list(test_members.values()), ("A", "B"), [test])
    assert np.allclose(learner.similarities(table)[1], [[-1, 0.970143]], atol=1e-6)
    assert spans_of(test, learner.predict(test_members, [test])[0]) == {(4, 6, D)}


def test_authors_strict_counts_score_the_relabelled_spans():
    """The CV counts of the authors' variant are those of the strict scorer on
    its relabelled output (a relabelled span can be right where no member was)."""
    from ensemble_deid.evaluation import Scorer

    docs, members = random_case(4, n_docs=6, n_members=4)
    learner = DecisionTemplates(variant="authors", min_similarity=0.3).fit(members, docs)
    table = build_candidates([members[n] for n in members], tuple(members), docs)
    raw = learner._predict_raw(table)
    preds = learner._raw_to_predictions(table, raw)
    counts = Scorer(docs, "strict").counts({d.id: p.spans(d) for d, p in zip(docs, preds)})
    assert learner._raw_counts(table, raw) == (counts.tp.sum(), counts.fp.sum(), counts.fn.sum())


def test_authors_threshold_is_chosen_by_cross_validation():
    from ensemble_deid.ensemble import GridSearch

    docs, members = random_case(5, n_docs=8, n_members=4)
    search = GridSearch(DecisionTemplates(variant="authors", overlap="chain"), folds=4).fit(members, docs)
    assert [r.params["min_similarity"] for r in search.cv_results_] == [0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8]
    assert search.best_params_["min_similarity"] == max(
        search.cv_results_, key=lambda r: r.score).params["min_similarity"]
    assert search.best_estimator_.overlap == "chain"
    # the paper's variant chooses only whether to trust members (ensemble.trust)
    assert DecisionTemplates().default_grid(4) == {"trust": [None, 0.99, 0.95, 0.9, 0.8]}


def test_variants_are_parameters_in_the_hash_and_checked():
    assert len({DecisionTemplates(**p).param_hash() for p in (
        {}, {"variant": "authors"}, {"variant": "authors", "min_similarity": 0.6}, {"overlap": "chain"})}) == 4
    docs, members = random_case(6, n_docs=2, n_members=2)
    for bad, match in (({"variant": "dtm"}, "variant='dtm'; expected one of 'paper', 'authors'"),
                       ({"variant": "authors", "min_similarity": 1.5}, "min_similarity"),
                       ({"overlap": "x"}, "overlap='x'")):
        with pytest.raises(ValueError, match=match):
            DecisionTemplates(**bad).fit(members, docs)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overlap", ["greedy", "chain"])
def test_authors_variant_on_random_members_scores_like_the_scorer(seed, overlap):
    """Seeded random members: the output never overlaps (to_predictions
    refuses overlapping spans) and its CV counts are the strict scorer's."""
    from ensemble_deid.evaluation import Scorer

    docs, members = random_case(seed, n_docs=5, n_members=4)
    learner = DecisionTemplates(variant="authors", min_similarity=0.2, overlap=overlap).fit(members, docs[:3])
    table = build_candidates([members[n] for n in members], tuple(members), docs[3:])
    raw = learner._predict_raw(table)
    preds = learner._raw_to_predictions(table, raw)
    counts = Scorer(docs[3:], "strict").counts({d.id: p.spans(d) for d, p in zip(docs[3:], preds)})
    assert learner._raw_counts(table, raw) == (counts.tp.sum(), counts.fp.sum(), counts.fn.sum())


def test_authors_variant_without_gold_or_member_spans_predicts_nothing():
    train = doc("t", 10)
    members = members_of([train], {"A": {"t": [(0, 1, NAME)]}, "B": {"t": []}})
    learner = DecisionTemplates(variant="authors").fit(members, [train])
    assert learner.classes_ == ["NONE"]
    assert spans_of(train, learner.predict(members, [train])[0]) == set()
    empty = members_of([train], {"A": {"t": []}, "B": {"t": []}})
    assert spans_of(train, learner.predict(empty, [train])[0]) == set()
