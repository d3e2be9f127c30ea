"""Per-label member trust (``ensemble.trust``): a member precise on a label
keeps its spans where the ensemble leaves O, on hand-computed fixtures."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ensemble_deid.deid.model import needed_members
from ensemble_deid.ensemble import DecisionTemplates, GridSearch, MetaLearner, PrunedVoting, Voting, build_candidates
from ensemble_deid.ensemble.trust import trusted_pairs

from .test_ensemble_fixtures import NAME, doc, members_of, random_case, spans_of

SSN = "ID:SSN"
SSNS = [(12, 13, SSN), (15, 16, SSN), (18, 19, SSN), (21, 22, SSN)]


@pytest.fixture
def train():
    """A and B find the names; R (the rules) finds the 4 SSNs, nothing else
    finds them, and R also makes one wrong NAME span.
    A on NAME: tp 3, n 3 -> 3/4 = 0.75; B: tp 3, n 4 -> 3/5 = 0.6;
    R on SSN: tp 4, n 4 -> 4/5 = 0.8; R on NAME: tp 0, n 1 -> 0."""
    names = [(0, 2, NAME), (4, 6, NAME), (8, 10, NAME)]
    d = doc("t", 30, gold=names + SSNS)
    return [d], members_of([d], {"A": {"t": names}, "B": {"t": names + [(24, 25, NAME)]},
                                 "R": {"t": SSNS + [(26, 27, NAME)]}})


@pytest.fixture
def test_case():
    """A and B agree on a name; R finds an SSN alone, an SSN inside the name
    and a NAME span alone."""
    d = doc("x", 20)
    return [d], members_of([d], {"A": {"x": [(0, 2, NAME)]}, "B": {"x": [(0, 2, NAME)]},
                                 "R": {"x": [(5, 6, SSN), (1, 2, SSN), (8, 9, NAME)]}})


@pytest.mark.parametrize("trust, expected", [
    (0.8, [["R", SSN]]),
    (0.81, []),
    (0.75, [["A", NAME], ["R", SSN]]),
    (0.6, [["A", NAME], ["B", NAME], ["R", SSN]]),
])
def test_pairs_earn_trust_by_precision_with_one_unseen_false_positive(train, trust, expected):
    docs, members = train
    table = build_candidates(list(members.values()), tuple(members), docs)
    assert trusted_pairs(table, trust) == expected


PHONE, EMAIL, FAX = "CONTACT:PHONE", "CONTACT:EMAIL", "CONTACT:FAX"


@pytest.fixture
def contact():
    """R finds 40 phone numbers, 4 e-mails and 4 faxes, all gold, plus one
    wrong fax span; A finds 2 of the e-mails.
    R alone:  PHONE 40/41 = 0.976; EMAIL 4/5 = 0.8; FAX 4/6 = 0.667.
    R pooled over CONTACT: tp 48, n 49: 48/50 = 0.96.
    A: EMAIL 2/3 = 0.667, pooled the same (its only CONTACT spans)."""
    phones = [(2 * i, 2 * i + 1, PHONE) for i in range(40)]
    emails = [(80 + 2 * i, 81 + 2 * i, EMAIL) for i in range(4)]
    faxes = [(88 + 2 * i, 89 + 2 * i, FAX) for i in range(4)]
    d = doc("c", 100, gold=phones + emails + faxes)
    return build_candidates(list(members_of([d], {"A": {"c": emails[:2]},
                                                  "R": {"c": phones + emails + faxes + [(97, 98, FAX)]}}).values()),
                            ("A", "R"), [d])


@pytest.mark.parametrize("trust, expected", [
    (0.95, [["R", EMAIL], ["R", PHONE]]),  # EMAIL backs off to CONTACT (0.96); FAX was wrong once
    (0.97, [["R", PHONE]]),  # the category no longer earns it: PHONE by its own spans only
    (0.8, [["R", EMAIL], ["R", PHONE]]),  # EMAIL by its own 4/5 too; FAX still not (0.667, and a wrong span)
    (0.6, [["A", EMAIL], ["R", EMAIL], ["R", FAX], ["R", PHONE]]),  # every label's own evidence earns it
])
def test_a_rare_label_backs_off_to_its_category_only_if_never_wrong(contact, trust, expected):
    assert trusted_pairs(contact, trust) == expected


@pytest.mark.parametrize("method", [Voting(threshold=2), PrunedVoting(threshold=2, trust=None), DecisionTemplates()])
def test_a_trusted_member_keeps_its_span_where_the_ensemble_says_o(train, test_case, method):
    docs, members = train
    tdocs, tmembers = test_case
    plain = method.clone().fit(members, docs).predict(tmembers, tdocs)
    trusted = method.clone().set_params(trust=0.8).fit(members, docs).predict(tmembers, tdocs)
    assert spans_of(tdocs[0], plain[0]) == {(0, 2, NAME)}
    # R's lone SSN is kept; its SSN inside the kept name and its NAME span (not trusted on NAME) are not.
    assert spans_of(tdocs[0], trusted[0]) == {(0, 2, NAME), (5, 6, SSN)}


def test_trust_off_is_the_method_s_own_rule_and_its_cache_key(train, test_case):
    docs, members = train
    tdocs, tmembers = test_case
    assert Voting().hashed_params() == {"threshold": 2, "overlap": "greedy"}  # entries cached before trust stay valid
    a = Voting(threshold=2, trust=0.999).fit(members, docs).predict(tmembers, tdocs)  # nothing earns it
    b = Voting(threshold=2).fit(members, docs).predict(tmembers, tdocs)
    assert [p.tags for p in a] == [p.tags for p in b]


@pytest.mark.parametrize("seed", range(6))
def test_trust_only_adds_spans_and_never_overlaps(seed):
    docs, members = random_case(seed)
    for t in (1, 2, 3):
        plain = Voting(threshold=t).fit(members, docs).predict(members, docs)
        trusted = Voting(threshold=t, trust=0.3).fit(members, docs).predict(members, docs)
        for d, p, q in zip(docs, plain, trusted):
            a, b = spans_of(d, p), spans_of(d, q)  # decoding BIO tags: overlapping spans could not be written
            assert a <= b


def _patients(n=6):
    """n patients' notes: A and B find the names and make one wrong name each
    (different ones); R finds the 4 SSNs, which nobody else finds, and makes
    10 wrong NAME spans."""
    names = [(0, 2, NAME), (4, 6, NAME), (8, 10, NAME)]
    docs = [doc(f"p{i}", 60, gold=names + SSNS) for i in range(n)]
    wrong = [(30 + 2 * i, 31 + 2 * i, NAME) for i in range(10)]
    spans = {"A": {d.id: names + [(24, 25, NAME)] for d in docs}, "B": {d.id: names + [(26, 27, NAME)] for d in docs},
             "R": {d.id: SSNS + wrong for d in docs}}
    return docs, members_of(docs, spans)


def test_cross_validation_chooses_trust_where_it_pays():
    """3 folds of 6 patients: each fit sees R's SSNs on 4 notes (tp 16, n 16:
    16/17 = 0.94), so only 0.9 of the grid trusts R, which keeps every SSN at
    threshold 2; threshold 1 keeps them too but with every wrong span."""
    docs, members = _patients()
    search = GridSearch(Voting(), folds=3).fit(members, docs)
    assert search.best_params_ == {"threshold": 2, "trust": 0.9}
    assert search.best_estimator_.trusted_ == [["R", SSN]]
    assert search.best_score_ == 1.0  # tp 36, fp 0, fn 0 pooled over the held-out folds


def test_cross_validation_keeps_trust_off_when_it_changes_nothing():
    """R's SSNs are also found by A and B: trust adds no span, and a tie keeps None."""
    docs, members = _patients()
    for m in ("A", "B"):
        members[m] = members_of(docs, {m: {d.id: [(s, e, lab) for s, e, lab in
                                                   [(0, 2, NAME), (4, 6, NAME), (8, 10, NAME)] + SSNS] for d in docs}})[m]
    search = GridSearch(Voting(), folds=3).fit(members, docs)
    assert search.best_params_["trust"] is None


def test_pruned_voting_cross_validates_its_trust_level():
    """Pruning keeps threshold 2 (names only: F1 0.6; any threshold-1 subset
    with R takes its 10 wrong names). Trust is cross-validated over 6 folds
    (one patient each): fitted on 5 notes R has tp 20, n 20 (20/21 = 0.952),
    so 0.95 and 0.9 both trust it and reach F1 1.0 held out; 0.95 comes first.
    On all 6 notes: 24/25 = 0.96 >= 0.95."""
    docs, members = _patients()
    method = PrunedVoting().fit(members, docs)
    assert (method.threshold_, method.trust_, method.trusted_) == (2, 0.95, [["R", SSN]])
    assert PrunedVoting(trust=None).fit(members, docs).trusted_ == []
    preds = method.predict(members, docs)
    assert all(spans_of(d, p) == {(0, 2, NAME), (4, 6, NAME), (8, 10, NAME), *SSNS} for d, p in zip(docs, preds))


def test_trusted_pairs_survive_save_and_load(train, test_case, tmp_path):
    docs, members = train
    tdocs, tmembers = test_case
    method = PrunedVoting(trust=0.8).fit(members, docs)
    method.save(tmp_path / "m")
    loaded = MetaLearner.load(tmp_path / "m")
    assert loaded.trusted_ == [["R", SSN]]
    assert [p.tags for p in loaded.predict(tmembers, tdocs)] == [p.tags for p in method.predict(tmembers, tdocs)]


def test_a_bundle_keeps_a_trusted_member_that_pruning_eliminated():
    method = SimpleNamespace(subset_=("A",), trusted_=[["R", SSN]])
    assert needed_members(method, ["A", "B", "R"]) == ["A", "R"]


def test_trust_is_refused_for_the_authors_templates():
    with pytest.raises(ValueError, match="trust needs variant='paper'"):
        DecisionTemplates(variant="authors", trust=0.9).validate_params()


def test_trust_values_outside_zero_one_are_refused():
    for bad in (0, 1.5, "high"):
        with pytest.raises(ValueError, match="trust"):
            Voting(trust=bad).validate_params()
    assert np.isclose(Voting(trust=1).trust, 1)


@pytest.mark.parametrize("method, params, grid, trusts", [
    ("voting", {}, None, True),  # trust in the default grid
    ("voting-pruned", {}, None, True),  # trust="auto"
    ("decision-templates", {"trust": 0.9}, None, True),
    ("voting", {}, {"threshold": [1, 2], "trust": [None, 0.9]}, True),
    ("voting", {"trust": None}, None, False),  # fixed off: never trusts
    ("voting", {}, {"threshold": [1, 2]}, False),  # a grid without trust: the default None
    ("stacked-svm", {}, None, False),  # no trust parameter
])
def test_the_trust_rule_is_in_the_cache_key_of_searches_that_may_trust(method, params, grid, trusts):
    """An ensemble cached under an earlier trust rule (per label only) is not
    reused; searches that can never trust keep the key they had."""
    from ensemble_deid.ensemble.run import key_settings, make_search
    from ensemble_deid.ensemble.trust import TRUST_RULE

    settings = key_settings(make_search(method, params, grid, folds=3))
    assert settings.get("trust_rule") == (TRUST_RULE if trusts else None)
