"""Per-label member trust (``ensemble.trust``): a member precise on a label
keeps its spans where the ensemble leaves O, on hand-computed fixtures."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ensemble_deid.deid.model import needed_members
from ensemble_deid.ensemble import DecisionTemplates, GridSearch, PrunedVoting, Voting, build_candidates, load_method
from ensemble_deid.ensemble.trust import trusted_pairs

from .test_ensemble_fixtures import NAME, doc, members_of, random_case, spans_of

SSN = "ID:SSN"
SSNS = [(12, 13, SSN), (15, 16, SSN), (18, 19, SSN), (21, 22, SSN)]
# Every ID subtype of the i2b2 scheme: R's trust on ID, earned with SSNs alone, covers them.
R_ON_ID = [["R", f"ID:{t}"] for t in ("ACCOUNT", "BIOID", "DEVICE", "HEALTHPLAN", "IDNUM", "LICENSE",
                                      "MEDICALRECORD", "SSN", "VEHICLE")]


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
    assert [p for p in trusted_pairs(table, trust) if p[1] in table.labels] == expected


def test_a_category_s_trust_covers_the_labels_its_member_never_predicted(train):
    """R earns trust on ID (its 4 SSNs: 4/5 = 0.8) and so on every ID subtype
    of the i2b2 scheme, which its training notes never held; at 0.75 A earns
    NAME (3/4) and with it the other NAME subtypes; B (3/5 = 0.6) and R on
    NAME (0/2) earn nothing."""
    docs, members = train
    table = build_candidates(list(members.values()), tuple(members), docs)
    assert trusted_pairs(table, 0.8) == R_ON_ID
    assert trusted_pairs(table, 0.75) == [["A", f"NAME:{t}"] for t in ("DOCTOR", "PATIENT", "USERNAME")] + R_ON_ID


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
    # every label's own evidence earns it; A's CONTACT (2/3) lends trust to the two it never predicted
    (0.6, [["A", EMAIL], ["A", FAX], ["A", PHONE], ["R", EMAIL], ["R", FAX], ["R", PHONE]]),
])
def test_a_rare_label_backs_off_to_its_category_only_if_never_wrong(contact, trust, expected):
    assert [p for p in trusted_pairs(contact, trust) if p[1] in contact.labels] == expected


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


def _covered(spans) -> set[int]:
    return {i for a, b, _ in spans for i in range(a, b)}


@pytest.mark.parametrize("seed", range(6))
def test_trust_never_uncovers_a_token_and_replaces_only_spans_strictly_inside(seed):
    docs, members = random_case(seed)
    for t in (1, 2, 3):
        plain = Voting(threshold=t).fit(members, docs).predict(members, docs)
        trusted = Voting(threshold=t, trust=0.3).fit(members, docs).predict(members, docs)
        for d, p, q in zip(docs, plain, trusted):
            a, b = spans_of(d, p), spans_of(d, q)  # decoding BIO tags: overlapping spans could not be written
            assert _covered(a) <= _covered(b)
            for first, stop, _ in a - b:  # a dropped span lies strictly inside a new one
                assert any(f <= first and stop <= s and s - f > stop - first for f, s, _ in b - a)


DATE = "DATE:DATE"


def test_a_trusted_span_replaces_the_kept_spans_strictly_inside_it(train):
    """R (trusted on SSN at 0.8) finds three SSNs; A and B agree on a DATE
    inside the first (tokens 3-4 of 2-5), on a DATE that reaches outside the
    second (9-12 against 8-11) and on a DATE of the same extent as the third
    (14-16). Only the first is replaced: the second would uncover token 11,
    the third covers nothing more."""
    docs, members = train
    d = doc("y", 20)
    dates = [(3, 4, DATE), (9, 12, DATE), (14, 16, DATE)]
    tmembers = members_of([d], {"A": {"y": dates}, "B": {"y": dates},
                                "R": {"y": [(2, 5, SSN), (8, 11, SSN), (14, 16, SSN)]}})
    for method in (Voting(threshold=2), PrunedVoting(threshold=2, trust=None), DecisionTemplates()):
        plain = method.clone().fit(members, docs).predict(tmembers, [d])
        trusted = method.clone().set_params(trust=0.8).fit(members, docs).predict(tmembers, [d])
        assert spans_of(d, plain[0]) == set(dates)
        assert spans_of(d, trusted[0]) == {(2, 5, SSN), (9, 12, DATE), (14, 16, DATE)}


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
    assert search.best_estimator_.trusted_ == R_ON_ID
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
    assert (method.threshold_, method.trust_, method.trusted_) == (2, 0.95, R_ON_ID)
    assert PrunedVoting(trust=None).fit(members, docs).trusted_ == []
    preds = method.predict(members, docs)
    assert all(spans_of(d, p) == {(0, 2, NAME), (4, 6, NAME), (8, 10, NAME), *SSNS} for d, p in zip(docs, preds))


def test_trusted_pairs_survive_save_and_load(train, test_case, tmp_path):
    docs, members = train
    tdocs, tmembers = test_case
    method = PrunedVoting(trust=0.8).fit(members, docs)
    method.save(tmp_path / "m")
    loaded = load_method(tmp_path / "m")
    assert loaded.trusted_ == R_ON_ID
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


def test_a_category_earns_trust_with_spans_of_the_wrong_subtype_but_a_label_does_not():
    """R tags 8 IDs: 4 MEDICALRECORD (all gold) and 4 ACCOUNT whose extents the
    annotators called IDNUM. Strictly R's ID spans are 4/9 = 0.44; counting the
    category whatever the subtype, 8/9 = 0.89 >= 0.8 (< 0.9): R is trusted on
    ID, so on every subtype it was never wrong on (MEDICALRECORD; IDNUM, SSN
    and the rest, which it never predicted), but not on ACCOUNT (4 strict
    errors)."""
    mrn = [(2 * i, 2 * i + 1, "ID:MEDICALRECORD") for i in range(4)]
    acct = [(10 + 2 * i, 11 + 2 * i) for i in range(4)]
    d = doc("i", 30, gold=mrn + [(a, b, "ID:IDNUM") for a, b in acct])
    table = build_candidates(list(members_of([d], {"R": {"i": mrn + [(a, b, "ID:ACCOUNT") for a, b in acct]}}).values()),
                             ("R",), [d])
    assert table.gold.sum() == 4 and table.gold_category.sum() == 8
    assert trusted_pairs(table, 0.8) == [p for p in R_ON_ID if p[1] != "ID:ACCOUNT"]
    assert trusted_pairs(table, 0.9) == []


def test_of_two_trusted_spans_the_enclosing_one_wins():
    """R (rules) earns trust on ID, M on DATE (6/7 = 0.86). M, the better
    member, tags the last token of R's three-token SSN as a date, alone (one
    vote each, under threshold 2): both spans are trusted; the SSN, which
    contains the date, is kept, where voting priority alone keeps M's date."""
    names = [(0, 2, NAME), (4, 6, NAME), (8, 10, NAME)]
    docs = [doc(f"p{i}", 60, gold=names + SSNS + [(40, 41, DATE)]) for i in range(6)]
    members = members_of(docs, {"A": {d.id: names for d in docs}, "B": {d.id: names for d in docs},
                                "R": {d.id: SSNS + [(30 + 2 * i, 31 + 2 * i, NAME) for i in range(10)] for d in docs},
                                "M": {d.id: names + [(40, 41, DATE)] for d in docs}})
    method = Voting(threshold=2, trust=0.8).fit(members, docs)
    assert ["R", SSN] in method.trusted_ and ["M", DATE] in method.trusted_
    assert method.member_rank_[3] < method.member_rank_[2]  # M ranks above R
    x = doc("x", 20)
    tm = members_of([x], {"A": {}, "B": {}, "R": {"x": [(5, 8, SSN)]}, "M": {"x": [(7, 8, DATE)]}})
    assert spans_of(x, method.predict(tm, [x])[0]) == {(5, 8, SSN)}


def test_a_category_outside_the_i2b2_scheme_lends_trust_only_to_its_own_labels():
    """MEDDOCAN-style ID labels: R's category earns trust, which covers the
    labels the table holds, not the i2b2 subtypes of ID."""
    own = "ID:ID_SUJETO_ASISTENCIA"
    d = doc("m", 30, gold=[(2 * i, 2 * i + 1, own) for i in range(9)])
    table = build_candidates(list(members_of([d], {"R": {"m": [(2 * i, 2 * i + 1, own) for i in range(9)]}}).values()),
                             ("R",), [d])
    assert trusted_pairs(table, 0.9) == [["R", own]]
