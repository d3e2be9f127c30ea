"""Leak-first figures (studies/leaks.py, issue 28): entity and token leak
rates with document-bootstrap intervals, the members' union as the ceiling,
and the union's oracle recall per category, all computed by hand."""
from __future__ import annotations

import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.studies.leaks import OVERALL, leak_table, oracle_recalls, union_spans
from ensemble_deid.taggers.prediction import DocumentPrediction


def _case():
    # d1 "Ana Lopez vio 555 1234 hoy": NAME Ana Lopez (2 tokens), CONTACT 555 1234 (2 tokens)
    # d2 "Lopez en Madrid": NAME Lopez, LOCATION Madrid
    d1 = Document("d1", "Ana Lopez vio 555 1234 hoy",
                  [Annotation(0, 9, "NAME", "PATIENT"), Annotation(14, 22, "CONTACT", "PHONE")])
    d2 = Document("d2", "Lopez en Madrid", [Annotation(0, 5, "NAME", "PATIENT"), Annotation(9, 15, "LOCATION", "CITY")])
    a = {"d1": [Annotation(0, 3, "NAME", "PATIENT"), Annotation(14, 22, "CONTACT", "PHONE")], "d2": []}
    b = {"d1": [], "d2": [Annotation(0, 5, "NAME", "DOCTOR")]}
    return [d1, d2], a, b


def test_entity_and_token_leaks_by_hand():
    docs, a, _ = _case()
    got = leak_table(docs, a, reps=1000, seed=0)
    # tokens: Lopez (d1), Lopez and Madrid (d2) of 6 leak; entities: both names and Madrid of 4
    assert (got["token"][OVERALL].tokens, got["token"][OVERALL].leaked) == (6, 3)
    assert (got["entity"][OVERALL].tokens, got["entity"][OVERALL].leaked) == (4, 3)
    assert {k: (v.tokens, v.leaked) for k, v in got["token"].items() if k != OVERALL} == {
        "NAME": (3, 2), "CONTACT": (2, 0), "LOCATION": (1, 1)}
    assert {k: (v.tokens, v.leaked) for k, v in got["entity"].items() if k != OVERALL} == {
        "NAME": (2, 2), "CONTACT": (1, 0), "LOCATION": (1, 1)}
    # two documents: a resample is {d1, d1} (token rate 2/8, entity 2/4) a quarter of the time,
    # {d2, d2} (4/4, 4/4) a quarter, mixed (3/6, 3/4) half: the 2.5% and 97.5% quantiles are the extremes
    assert (got["token"][OVERALL].low, got["token"][OVERALL].high) == (0.25, 1.0)
    assert (got["entity"][OVERALL].low, got["entity"][OVERALL].high) == (0.5, 1.0)
    assert got["token"][OVERALL].percent() == "50.00 (25.00-100.00)"


def test_the_members_union_is_the_leak_ceiling():
    docs, a, b = _case()
    union = union_spans(docs, {"a": a, "b": b})
    got = leak_table(docs, union, reps=200)
    # b covers d2's Lopez (any type covers): Lopez (d1) and Madrid leak
    assert (got["token"][OVERALL].tokens, got["token"][OVERALL].leaked) == (6, 2)
    assert (got["entity"][OVERALL].tokens, got["entity"][OVERALL].leaked) == (4, 2)
    for unit in ("token", "entity"):
        for member in (a, b):
            assert got[unit][OVERALL].rate <= leak_table(docs, member, reps=200)[unit][OVERALL].rate


def test_oracle_recall_per_category_by_hand():
    docs, a, b = _case()
    members = {"a": {d.id: DocumentPrediction.from_spans(d, a[d.id]) for d in docs},
               "b": {d.id: DocumentPrediction.from_spans(d, b[d.id]) for d in docs}}
    # binary token: Ana, 555, 1234 (a) and d2's Lopez (b) of 6 gold tokens
    assert oracle_recalls(docs, members) == pytest.approx({OVERALL: 4 / 6, "NAME": 2 / 3, "CONTACT": 1.0,
                                                           "LOCATION": 0.0})
    # token criterion: b's Lopez is a DOCTOR where the gold says PATIENT
    assert oracle_recalls(docs, members, "token") == pytest.approx({OVERALL: 3 / 6, "NAME": 1 / 3, "CONTACT": 1.0,
                                                                    "LOCATION": 0.0})
    with pytest.raises(ValueError, match="criterion 'strict'"):
        oracle_recalls(docs, members, "strict")


def test_compare_shows_f1_and_both_leaks_with_the_union_as_ceiling():
    from ensemble_deid.studies.comparison import compare_systems, leak_rows

    docs, a, b = _case()
    systems = {name: {d.id: DocumentPrediction.from_spans(d, s[d.id]) for d in docs} for name, s in (("a", a), ("b", b))}
    comp = compare_systems(docs, systems, tests=("randomization",), trials=100)
    headers, rows = leak_rows(comp)
    assert headers == ["system", "F1", "entity leak %", "token leak %"]
    # a: strict tp 1 (CONTACT), fp 1, fn 3 -> F1 2/6; entity leak 3/4, token 3/6 (by hand above)
    # b: tp 0 (DOCTOR is not PATIENT) -> F1 0; leaks everything but d2's Lopez: entities 3/4, tokens 5/6
    # union: entities 2/4, tokens 2/6
    by_name = {r[0]: r for r in rows}
    assert by_name["a"][1] == pytest.approx(2 / 6) and by_name["b"][1] == 0.0
    assert [by_name[n][2].split()[0] for n in ("a", "b", "union (ceiling)")] == ["75.00", "75.00", "50.00"]
    assert [by_name[n][3].split()[0] for n in ("a", "b", "union (ceiling)")] == ["50.00", "83.33", "33.33"]
    assert rows[-1][0] == "union (ceiling)" and rows[-1][1] is None
    alone = compare_systems(docs, systems, tests=("randomization",), trials=100, members=["a"])
    assert alone.ceiling is None  # one member: no union row


def test_per_document_leaks_of_one_pass_equal_each_document_scored_alone():
    from ensemble_deid.evaluation import evaluate

    from .test_ensemble_fixtures import random_case

    docs, members = random_case(3, n_docs=6, n_members=3)
    spans = {d.id: members[next(iter(members))][d.id].spans(d) for d in docs}
    whole = evaluate(docs, spans, criteria=["strict"], leak_documents=True).leak
    assert len(whole.by_document) == len(docs)
    for doc, rep in zip(docs, whole.by_document):
        alone = evaluate([doc], {doc.id: spans[doc.id]}, criteria=["strict"]).leak
        assert rep.overall == alone.overall and rep.by_category == alone.by_category and rep.hipaa == alone.hipaa
