"""Review routing (``ensemble.review_risk``): the items and their features on
a hand-made note, the simulated review's curve and the budget's threshold
computed by hand, the review settings' round trip through a bundle, and
tampered settings refused."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.folds import FoldAssignment
from ensemble_deid.ensemble.review_risk import (Budget, GoldCoverage, Lexicon, PhiRates, ReviewModel,
                                                build_items, choose_threshold, context_rates, document_views,
                                                fit_review,
                                                learn_lexicon, parse_budget, per_note_order, review_curve)
from ensemble_deid.taggers.prediction import DocumentPrediction

TEXT = "Seen by Ana Lopez on 12 May today."
#        tokens: Seen by Ana Lopez on 12 May today .
GOLD = [Annotation(8, 17, "NAME", "PATIENT"), Annotation(21, 27, "DATE", "DATE")]
O = "O"


def _note(doc_id="d1", text=TEXT, gold=GOLD, group=None) -> Document:
    return Document(doc_id, text, gold, {"group": group or doc_id})


def _fixture():
    doc = _note()
    assert doc.tokens.words == ("Seen", "by", "Ana", "Lopez", "on", "12", "May", "today", ".")
    m1 = DocumentPrediction("d1", (O, O, "B-NAME:PATIENT", "I-NAME:PATIENT", O, O, O, O, O))
    m2 = DocumentPrediction("d1", (O, O, O, "B-NAME:PATIENT", O, "B-DATE:DATE", O, O, O))
    out = DocumentPrediction("d1", (O, O, "B-NAME:PATIENT", O, O, O, O, O, O))  # the ensemble masks "Ana" only
    lexicon = Lexicon(frozenset({"seen", "by", "on", "today"}), frozenset())
    views = document_views([doc], [out], [{"d1": m1}, {"d1": m2}])
    gold = GoldCoverage([doc], [out])
    return doc, views, gold, lexicon


def test_items_and_features_of_a_hand_made_note():
    doc, views, gold, lexicon = _fixture()
    items = build_items(views, ("m1", "m2"), lexicon, {"digit": "ID:IDNUM"}, None, gold)
    # "Lopez" (both members, next to the masked "Ana"); "12 May" (m2 on "12", "May" outside the vocabulary)
    assert [(int(a), int(b)) for a, b in zip(items.first, items.stop)] == [(3, 4), (5, 7)]
    assert list(zip(items.start_char.tolist(), items.end_char.tolist())) == [(12, 17), (21, 27)]
    assert items.kind == ["disagreement", "dropped-span"]
    assert items.label == ["NAME:PATIENT", "DATE:DATE"]
    assert items.proposed_by == [("m1", "m2"), ("m2",)]
    f = {name: items.features[:, i].tolist() for i, name in enumerate(items.feature_names)}
    assert f["proposed"] == [1, 1]
    assert f["vote_share_max"] == [1.0, 0.5]
    assert f["vote_share_mean"] == [1.0, 0.25]
    assert f["touches_phi"] == [1, 0]
    assert f["has_score"] == [0, 0] and f["score_gap"] == [0, 0]
    assert f["has_digit"] == [0, 1] and f["all_digits"] == [0, 0]
    assert f["log_digits"] == [0, pytest.approx(math.log(3))]
    assert f["capitalised_oov"] == [1, 1] and f["oov_share"] == [1.0, 1.0]
    assert f["log_tokens"] == [pytest.approx(math.log(2)), pytest.approx(math.log(3))]
    assert f["log_chars"] == [pytest.approx(math.log(6)), pytest.approx(math.log(7))]
    assert f["masked_elsewhere"] == [0, 0] and f["after_cue"] == [0, 0] and f["phi_word"] == [0, 0]
    assert f["category:NAME"] == [1, 0] and f["category:DATE"] == [0, 1]
    assert f["member:m1"] == [1, 0] and f["member:m2"] == [1, 1]
    # gold keys Ana(0) Lopez(1) 12(2) May(3); the output covers Ana only
    assert gold.covered.tolist() == [True, False, False, False]
    assert items.recovers == [(1,), (2, 3)]
    assert items.useful.tolist() == [True, True]


def test_a_lexical_item_and_the_score_gap():
    doc = _note(text="Ana Lopez seen 12345 today.", gold=[Annotation(0, 9, "NAME", "PATIENT")])
    assert doc.tokens.words == ("Ana", "Lopez", "seen", "12345", "today", ".")
    out = DocumentPrediction("d1", ("B-NAME:PATIENT", "I-NAME:PATIENT", O, O, O, O))
    gaps = np.array([2.0, 2.0, -np.inf, -0.5, -np.inf, -np.inf])
    views = document_views([doc], [out], [{"d1": out}], [gaps])
    lexicon = Lexicon(frozenset({"seen", "today"}), frozenset())
    items = build_items(views, ("m1",), lexicon, {"digit": "ID:IDNUM"}, None, GoldCoverage([doc], [out]))
    assert items.kind == ["lexical"] and items.label == ["ID:IDNUM"] and items.proposed_by == [()]
    f = dict(zip(items.feature_names, items.features[0].tolist()))
    assert f["proposed"] == 0 and f["all_digits"] == 1 and f["touches_phi"] == 0
    assert f["has_score"] == 1 and f["score_gap"] == -0.5  # the learner's score is there, whoever proposed
    assert items.recovers == [()]  # no gold there: reviewing it finds nothing
    # a member's span scored just below the threshold: near-threshold once the cut is known
    m = DocumentPrediction("d1", (O, O, O, "B-ID:IDNUM", O, O))
    views = document_views([doc], [out], [{"d1": m}], [gaps])
    items = build_items(views, ("m1",), lexicon, {}, -1.0, None)
    assert items.kind[0] == "near-threshold" and dict(zip(items.feature_names, items.features[0]))["score_gap"] == -0.5


def test_review_curve_and_the_threshold_by_hand():
    doc, views, gold, lexicon = _fixture()
    items = build_items(views, ("m1", "m2"), lexicon, {}, None, gold)
    curve = review_curve(items, gold, np.array([1, 0]), np.array([0.9, 0.5]), n_notes=1)
    n = len(doc.tokens)
    assert [(p.items, p.recall, p.precision, p.tokens_share) for p in curve] == [
        (0, 0.25, 1.0, 0.0), (1, 0.75, 1.0, 2 / n), (2, 1.0, 1.0, 3 / n)]
    assert [p.threshold for p in curve] == [math.inf, 0.9, 0.5]
    assert choose_threshold(curve, 0.7) == (0.9, True)
    assert choose_threshold(curve, 0.99) == (0.5, True)
    assert choose_threshold(curve, 0.2) == (1.0, True)  # reached before any review: nothing queued
    short = curve[:2]
    assert choose_threshold(short, 0.9) == (0.9, False)  # the closest: the highest recall, said not reached
    # equal risks are reviewed together: one point for both
    tied = review_curve(items, gold, np.array([0, 1]), np.array([0.5, 0.5]))
    assert [p.items for p in tied] == [0, 2]


def test_per_note_order():
    doc, views, gold, lexicon = _fixture()
    other = _note("d2")
    views2 = views + document_views([other], [DocumentPrediction("d2", (O,) * 9)], [
        {"d2": DocumentPrediction("d2", (O, O, "B-NAME:PATIENT", O, O, O, O, O, O))},
        {"d2": DocumentPrediction("d2", (O,) * 9)}])
    items = build_items(views2, ("m1", "m2"), lexicon, {}, None, None)
    assert items.doc.tolist() == [0, 0, 1, 1]  # d2: "Ana" (m1) and "12 May" (lexical)
    risk = np.array([0.2, 0.9, 0.1, 0.05])
    order, rank = per_note_order(items, risk)
    assert order.tolist() == [1, 2, 0, 3] and rank.tolist() == [1, 1, 2, 2]
    model = _stored_model(("m1", "m2"))
    assert model.select(items, risk, Budget("items", 1)).tolist() == [1, 2]
    assert model.select(items, risk, Budget("recall", 1.0)).tolist() == [0, 1, 2, 3]  # the curve's lowest threshold


def _corpus():
    """Four notes of two patients; the members: m1 finds every name, m2 the
    names of the first patient only, and the ensemble masks what both find."""
    docs, m1, m2, out = [], {}, {}, {}
    for i in range(4):
        doc = _note(f"n{i}", group=f"p{i // 2}")
        docs.append(doc)
        m1[doc.id] = DocumentPrediction(doc.id, (O, O, "B-NAME:PATIENT", "I-NAME:PATIENT", O, "B-DATE:DATE",
                                                 "I-DATE:DATE", O, O))
        m2[doc.id] = m1[doc.id] if i < 2 else DocumentPrediction(doc.id, (O,) * 9)
        out[doc.id] = m2[doc.id]
    return docs, {"m1": m1, "m2": m2}, [out[d.id] for d in docs]


def test_the_budget_on_a_tiny_corpus():
    docs, members, outputs = _corpus()
    folds = FoldAssignment({d.id: int(d.group[1:]) for d in docs}, 2, 0)
    model, items, held, gold = fit_review(docs, outputs, None, members, folds, Budget("recall", 1.0),
                                          vocabulary_min_documents=2)
    # notes n2, n3: the names (2 keys) and dates (2 keys) left readable; 8 of 16 keys covered before review
    assert gold.n_gold == 16 and int(gold.covered.sum()) == 8
    assert model.cv["recall_before"] == 0.5
    assert [items.label[i] for i in range(len(items)) if items.useful[i]] == ["NAME:PATIENT", "DATE:DATE"] * 2
    assert model.reached and model.cv["chosen"]["recall"] == 1.0
    assert model.lexicon.ordinary == frozenset({"seen", "by", "on", "today"})  # in >= 2 notes, outside PHI
    assert model.lexicon.phi == frozenset({"ana", "lopez", "may"})
    # at most one item per note: each of n2, n3 gets its riskiest
    per_note, _, _, _ = fit_review(docs, outputs, None, members, folds, Budget("items", 1), vocabulary_min_documents=2)
    assert per_note.cv["chosen"]["items"] == 2 and per_note.cv["chosen"]["items_per_note"] == 0.5


def test_learn_lexicon_counts_documents_not_occurrences():
    plain = [Document("a", "Ana saw Ana."), Document("b", "Ana left.")]
    assert learn_lexicon(plain, 2).ordinary == frozenset({"ana"})
    assert learn_lexicon(plain, 3).ordinary == frozenset()


def test_context_rates_count_gold_tokens_by_word_and_neighbours():
    # "Seen by Ana Lopez on 12 May today ." twice (n1, n2 in groups 0, 1), once without gold (n3, group 1)
    docs = [_note("n1"), _note("n2"), _note("n3", gold=[])]
    rates, without = context_rates(docs, 2, [0, 1, 1])
    assert (rates.tokens, rates.phi) == (27, 8)  # Ana Lopez 12 May in n1 and n2
    assert rates.tables["word"]["ana"] == (3, 2) and rates.tables["word"]["seen"] == (3, 0)
    assert rates.tables["before"]["by"] == (3, 2)  # the word after "by" is PHI in two notes of three
    assert rates.tables["after"]["on"] == (3, 2)  # "Lopez", before "on"
    assert rates.tables["before2"]["seen"] == (3, 2)
    assert rates.tables["pair"]["by ana"] == (3, 2)
    # smoothed toward the prior: (2 + 2 * 8/27) / (3 + 2)
    assert rates.rate("word", "ana") == pytest.approx((2 + 2 * 8 / 27) / 5)
    assert rates.rate("word", "never-seen") == pytest.approx(8 / 27)
    # leaving group 1 out leaves n1: keys kept are still those found in 2 notes of all
    assert without[1].tables["word"]["ana"] == (1, 1) and (without[1].tokens, without[1].phi) == (9, 4)
    assert without[0].tables["word"]["ana"] == (2, 1)
    # a word in one patient's notes only is not kept (no single patient's word), however many notes
    one = [Document(i, "solo x", metadata={"group": "p1"}) for i in "ab"] + [Document("c", "y x")]
    assert set(context_rates(one, 2)[0].tables["word"]) == {"x"}


def test_rate_features_of_an_item():
    doc, views, gold, lexicon = _fixture()
    rates = PhiRates({"word": {"lopez": (4, 4)}, "before": {"ana": (10, 5)}, "after": {}, "before2": {},
                      "pair": {"ana lopez": (2, 2)}}, 100, 10)
    items = build_items(views, ("m1", "m2"), lexicon, {"digit": "ID:IDNUM"}, None, gold, rates)
    f = {name: items.features[0, i] for i, name in enumerate(items.feature_names)}  # the item "Lopez"
    log = lambda r: math.log(r + 1e-4)  # noqa: E731
    assert f["word_rate_max"] == pytest.approx(log((4 + 0.2) / 6))
    assert f["before_rate"] == pytest.approx(log((5 + 0.2) / 12))
    assert f["after_rate"] == pytest.approx(log(0.1))  # "on": unseen, the prior
    assert f["pair_rate_max"] == pytest.approx(log((2 + 0.2) / 4))
    assert f["context_rate_max"] == pytest.approx(log((4 + 0.2) / 6))
    # without counts every rate feature sits at the floor
    bare = build_items(views, ("m1", "m2"), lexicon, {"digit": "ID:IDNUM"}, None, gold)
    assert bare.features[0, bare.feature_names.index("word_rate_max")] == pytest.approx(log(0.0))


def test_the_risk_model_c_is_chosen_on_the_held_out_curve():
    docs, members, outputs = _corpus()
    folds = FoldAssignment({d.id: int(d.group[1:]) for d in docs}, 2, 0)
    model = fit_review(docs, outputs, None, members, folds, Budget("recall", 1.0), vocabulary_min_documents=2,
                       C=(0.01, 100.0))[0]
    grid = model.cv["C_grid"]
    assert [g["C"] for g in grid] == [0.01, 100.0]
    best = min(grid, key=lambda g: (not g["reached"], g["tokens_share"] if g["reached"] else -g["recall"]))
    assert model.cv["C"] == best["C"]


def test_training_items_rates_leave_their_own_fold_out():
    docs, members, outputs = _corpus()
    folds = FoldAssignment({d.id: int(d.group[1:]) for d in docs}, 2, 0)
    model, items, _, _ = fit_review(docs, outputs, None, members, folds, Budget("recall", 1.0),
                                    vocabulary_min_documents=2, rates_min_patients=2)
    groups = [folds.folds[d.id] for d in docs]
    rates, without = context_rates(docs, 2, groups)
    assert model.rates == rates  # the bundle keeps the counts of every training note
    col = items.feature_names.index("word_rate_max")
    for i in range(len(items)):
        d = int(items.doc[i])
        words = [w.lower() for w in docs[d].tokens.words][int(items.first[i]):int(items.stop[i])]
        own = math.log(max(without[groups[d]].rate("word", w) for w in words) + 1e-4)
        full = math.log(max(rates.rate("word", w) for w in words) + 1e-4)
        assert items.features[i, col] == pytest.approx(own) and own != pytest.approx(full)


def test_parse_budget():
    assert parse_budget("recall>=0.998") == Budget("recall", 0.998)
    assert parse_budget("items<=5") == Budget("items", 5.0)
    assert parse_budget("none") is None and parse_budget(None) is None
    assert str(parse_budget(" recall @ 0.99 ")) == "recall>=0.99"
    for bad in ("recall>=0", "recall>=1.5", "items<=-1", "f1", "recall>=nan"):
        with pytest.raises(ValueError, match="review budget"):
            parse_budget(bad)


def _stored_model(names):
    docs, members, outputs = _corpus()
    members = {n: m for n, m in zip(names, members.values())}
    folds = FoldAssignment({d.id: int(d.group[1:]) for d in docs}, 2, 0)
    return fit_review(docs, outputs, None, members, folds, Budget("recall", 1.0), vocabulary_min_documents=2)[0]


def test_review_settings_round_trip_and_tampering():
    model = _stored_model(("m1", "m2"))
    stored = json.loads(json.dumps(model.to_dict()))  # as the manifest keeps it
    back = ReviewModel.from_dict(stored, ("m1", "m2"))
    assert back.to_dict() == stored
    assert back.threshold == model.threshold and back.budget == model.budget
    np.testing.assert_array_equal(back.risk.coef, model.risk.coef)
    edits = {
        "threshold": lambda d: d.__setitem__("threshold", 1.5),
        "risk.coef": lambda d: d["risk"].__setitem__("coef", [float("nan")] * len(d["risk"]["coef"])),
        "risk.intercept": lambda d: d["risk"].__setitem__("intercept", "1"),
        "risk.scale": lambda d: d["risk"]["scale"].__setitem__(0, 0.0),
        "risk.features": lambda d: d["risk"]["features"].reverse(),
        "members": lambda d: d.__setitem__("members", ["m2", "m1"]),
        "budget": lambda d: d.__setitem__("budget", "recall>=7"),
        "vocabulary": lambda d: d.__setitem__("vocabulary", [1, 2]),
        "lexical_labels": lambda d: d.__setitem__("lexical_labels", {"digit": "<script>"}),
        "curve[0].recall": lambda d: d["curve"][0].__setitem__("recall", 2.0),
        "reached": lambda d: d.__setitem__("reached", "yes"),
        "version": lambda d: d.__setitem__("version", 1),  # a bundle fitted before the context rates
        "rates.word": lambda d: d["rates"].__setitem__("word", [["ana", 1, 2]]),  # more PHI than occurrences
        "rates.pair": lambda d: d["rates"].__setitem__("pair", [["", 1, 0]]),
        "rates.tokens": lambda d: d["rates"].__setitem__("tokens", -3),
        "rates.phi": lambda d: d["rates"].__setitem__("phi", 10**9),
        "rates": lambda d: d.__setitem__("rates", []),
    }
    for field, edit in edits.items():
        data = json.loads(json.dumps(stored))
        edit(data)
        with pytest.raises(ValueError, match=f"review settings: field '{field.split('[')[0]}"):
            ReviewModel.from_dict(data, ("m1", "m2"))


# --- through a bundle: fit stores it, deidentify queues, a tampered bundle is refused ------------------
# The deidentify CLI tests' bundle: a voting bundle of the tiny corpus, fitted with the default review budget.
from .test_deid_cli import _run, tiny_bundle  # noqa: E402,F401

def test_fit_stores_the_review_model_and_deidentify_queues_items(tiny_bundle, tmp_path):
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.deid import Deidentifier, read_manifest
    from ensemble_deid.deid.review import queue_path, read_queue

    manifest = read_manifest(tiny_bundle / "model")
    stored = manifest["review"]
    assert stored["budget"] == "recall>=0.998" and 0 <= stored["threshold"] <= 1
    model = Deidentifier.load(tiny_bundle / "model")
    assert model.review.member_names == tuple(m["label"] for m in manifest["members"])
    texts = {d.id: d.text for d in load_directory(tiny_bundle / "test")}
    out = tmp_path / "out"
    _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", out, "--no-progress")
    queue = read_queue(queue_path(out), texts, None)
    assert queue.bundle == manifest["manifest_sha256"] and queue.budget["rule"] == "recall>=0.998"
    assert all(0 <= it.risk <= 1 and it.current == "text" for it in queue.items)
    assert all(it.risk >= stored["threshold"] for it in queue.items)
    assert (queue_path(out).stat().st_mode & 0o077) == 0 and (queue_path(out).parent.stat().st_mode & 0o077) == 0
    # a resume keeps it; another budget on the same folder is refused, naming --review
    again = _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", out, "--no-progress")
    assert "0 note(s) de-identified" in again.output
    assert read_queue(queue_path(out), texts).items == queue.items
    other = _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", out, "--review-items", "1", ok=False)
    assert other.exit_code != 0 and "--review" in other.output
    # at most one item per note; no queue at all with --review none
    one = tmp_path / "one"
    _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", one, "--review", "items<=1", "--no-progress")
    per_note = {}
    for it in read_queue(queue_path(one), texts).items:
        per_note[it.doc] = per_note.get(it.doc, 0) + 1
    assert max(per_note.values(), default=0) <= 1
    none = tmp_path / "none"
    _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", none, "--review", "none", "--no-progress")
    assert not queue_path(none).exists()
    bad = _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", tmp_path / "bad", "--review", "recall>=3",
               ok=False)
    assert bad.exit_code != 0 and "--review" in bad.output


def test_a_bundle_with_tampered_review_settings_is_refused(tiny_bundle, tmp_path):
    import shutil

    from ensemble_deid.deid import BundleError, Deidentifier

    from .test_bundle_security import reseal

    for edit in (lambda r: r.__setitem__("threshold", float("inf")),
                 lambda r: r["risk"]["coef"].__setitem__(0, 1e400),
                 lambda r: r.__setitem__("members", ["someone-else"])):
        copy = tmp_path / f"model-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(tiny_bundle / "model", copy)
        manifest = json.loads((copy / "manifest.json").read_text())
        edit(manifest["review"])
        (copy / "manifest.json").write_text(json.dumps(manifest))
        reseal(copy)
        with pytest.raises(BundleError, match="manifest.json: review settings: field"):
            Deidentifier.load(copy)


def test_fit_refuses_a_bad_review_budget_before_any_work(tiny_bundle, tmp_path):
    result = _run("fit", "--corpus", "tiny", "--method", "voting", "--members", "rules,svm", "--review", "items<=x",
                  "--out", tmp_path / "m", ok=False)
    assert result.exit_code != 0 and "--review" in result.output and not (tmp_path / "m").exists()


def test_score_gaps_of_a_span_learner_and_a_token_learner():
    """Span level: a token's gap is the highest score of a candidate covering
    it minus the decision threshold (voting: votes - threshold); token level:
    the posterior of PHI minus 0.5 (the Viterbi rule)."""
    from ensemble_deid.ensemble import StackedLSTM, Voting
    from ensemble_deid.ensemble.review_risk import decision_threshold, predict_for_review

    docs, members, _ = _corpus()
    voting = Voting(threshold=2).fit(members, docs)
    assert decision_threshold(voting) == 2.0
    preds, gaps = predict_for_review(voting, members, ("m1", "m2"), docs)
    # n0: both members tag "Ana Lopez" and "12 May" (2 votes); n2: m1 alone (1 vote)
    assert gaps[0].tolist() == [-np.inf, -np.inf, 0, 0, -np.inf, 0, 0, -np.inf, -np.inf]
    assert gaps[2].tolist() == [-np.inf, -np.inf, -1, -1, -np.inf, -1, -1, -np.inf, -np.inf]
    assert preds[2].tags == (O,) * 9
    lstm = StackedLSTM(embedding_dim=2, hidden_size=4, num_layers=1, epochs=1, early_stopping=False, threads=1,
                       device="cpu").fit(members, docs)
    assert decision_threshold(lstm) == 0.5
    _, gaps = predict_for_review(lstm, members, ("m1", "m2"), docs)
    assert [len(g) for g in gaps] == [9] * 4
    assert all(np.all((g >= -0.5) & (g <= 0.5)) for g in gaps)
    lstm.repoint({"*": 0.2})
    assert decision_threshold(lstm) == 0.2


def test_fit_refuses_review_for_a_single_tagger(tiny_bundle, tmp_path):
    result = _run("fit", "--corpus", "tiny", "--tagger", "rules", "--review", "recall>=0.99", "--out", tmp_path / "m",
                  ok=False)
    assert result.exit_code != 0 and "--review needs an ensemble" in result.output
