"""Stacked SVM (features by hand, overlaps by confidence), and the stacked
learners recovering a member that is always right among noisy ones."""
from __future__ import annotations

import random

import numpy as np
import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.ensemble import StackedLSTM, StackedSEARN, StackedSVM, build_candidates
from ensemble_deid.ensemble.stacked_svm import confidence_features, span_features
from ensemble_deid.evaluation import Scorer
from ensemble_deid.taggers.prediction import DocumentPrediction

from .test_ensemble_fixtures import CITY, DATE, NAME, doc, pred, spans_of

WORDS = "Juan de la Cruz vive en Madrid con Juan".split()


def _spanish_doc():
    text = " ".join(WORDS)
    d = Document("es", text, [], {"group": "es"})
    assert list(d.tokens.words) == WORDS
    return d


def _tok(d, first, stop, label):
    cat, typ = label.split(":")
    return Annotation(int(d.tokens.starts[first]), int(d.tokens.ends[stop - 1]), cat, typ)


@pytest.fixture
def svm_table():
    d = _spanish_doc()
    spans = {
        "A": [(0, 4, NAME), (6, 7, CITY), (8, 9, NAME)],
        "B": [(0, 1, NAME), (6, 7, CITY), (8, 9, NAME)],
        "C": [(3, 4, NAME), (6, 7, DATE)],
    }
    members = {m: {d.id: DocumentPrediction.from_spans(d, [_tok(d, *s) for s in ss])} for m, ss in spans.items()}
    table = build_candidates(list(members.values()), tuple(members), [d])
    return d, members, table


def _row(table, first, stop, label):
    for r in range(len(table)):
        if (table.first[r], table.stop[r], table.labels[table.label[r]]) == (first, stop, label):
            return r
    raise AssertionError("no such candidate")


def test_span_features_by_hand(svm_table):
    _, _, table = svm_table
    X, names = span_features(table)
    col = {n: i for i, n in enumerate(names)}

    def f(span, *feats):
        r = _row(table, *span)
        return [X[r, col[n]] for n in feats]

    members = [f"member[{j}]" for j in range(3)]
    exact = [f"exact_any[{j}]" for j in range(3)]
    psame = [f"partial_same[{j}]" for j in range(3)]
    pany = [f"partial_any[{j}]" for j in range(3)]
    k1, k2, k3, k4, k5, k6 = (0, 1, NAME), (0, 4, NAME), (3, 4, NAME), (6, 7, CITY), (6, 7, DATE), (8, 9, NAME)
    assert f(k4, *members, "votes") == [1, 1, 0, pytest.approx(2 / 3)]
    # Same boundaries with any label: C's DATE on "Madrid" counts.
    assert f(k4, *exact, "exact_any") == [1, 1, 1, 1.0]
    assert f(k5, *exact) == [1, 1, 1]
    assert f(k1, *exact) == [0, 1, 0]
    # Partial overlaps: "Juan de la Cruz" (A) overlaps B's "Juan" and C's "Cruz", both NAME.
    assert f(k2, *psame, *pany) == [0, 1, 1, 0, 1, 1]
    assert f(k1, *psame, *pany) == [1, 0, 0, 1, 0, 0]
    assert f(k4, *pany) == [0, 0, 0]  # same boundaries are not a partial overlap
    # "Juan" as NAME is predicted 1 + 2 times in the record; "Madrid" 2 (CITY) + 1 (DATE).
    assert f(k1, "record_span", "record_text") == pytest.approx([np.log1p(3), np.log1p(3)])
    assert f(k6, "record_span") == pytest.approx([np.log1p(3)])
    assert f(k4, "record_span", "record_text") == pytest.approx([np.log1p(2), np.log1p(3)])
    assert f(k2, "tokens", "single_token", "conj_prep") == pytest.approx([np.log1p(4), 0, 1])  # "de"
    assert f(k3, "tokens", "single_token", "conj_prep") == pytest.approx([np.log1p(1), 1, 0])


def test_confidence_features_by_hand(svm_table):
    d, members, table = svm_table
    # Member A is sure of its tokens except "de la" (0.5 each); B has no
    # confidences (counted as 1.0); C is 0.8 everywhere.
    conf_a = np.ones(len(WORDS))
    conf_a[1:3] = 0.5
    members["A"][d.id] = DocumentPrediction(d.id, members["A"][d.id].tags, conf_a)
    members["C"][d.id] = DocumentPrediction(d.id, members["C"][d.id].tags, np.full(len(WORDS), 0.8))
    X, names = confidence_features(table, list(members.values()), [d])
    col = {n: i for i, n in enumerate(names)}
    r = _row(table, 0, 4, NAME)  # "Juan de la Cruz": A voted for it
    # A: (1 + 0.5 + 0.5 + 1) / 4 = 0.75 where it voted; B and C did not vote.
    assert [X[r, col[f"confidence_voted[{j}]"]] for j in range(3)] == pytest.approx([0.75, 0, 0])
    assert [X[r, col[f"confidence_other[{j}]"]] for j in range(3)] == pytest.approx([0, 1.0, 0.8])
    r = _row(table, 6, 7, DATE)  # "Madrid" as DATE: C only
    assert [X[r, col[f"confidence_voted[{j}]"]] for j in range(3)] == pytest.approx([0, 0, 0.8])
    assert [X[r, col[f"confidence_other[{j}]"]] for j in range(3)] == pytest.approx([1.0, 1.0, 0])


def test_stacked_svm_confidences_switch_changes_the_design(svm_table):
    d, members, table = svm_table
    svm = StackedSVM(confidences=True)
    prepared = svm._prepare(list(members.values()), tuple(members), [d])
    svm.labels_ = tuple(sorted(prepared.labels))
    with_conf = svm._design(prepared).shape[1]
    svm.confidences = False
    assert with_conf - svm._design(prepared).shape[1] == 2 * 3


def test_svm_overlaps_go_to_the_higher_confidence(svm_table, monkeypatch):
    d, members, table = svm_table
    svm = StackedSVM().fit(members, [d.with_annotations([_tok(d, 0, 4, NAME), _tok(d, 6, 7, CITY)])])
    scores = {(0, 1, NAME): 0.5, (0, 4, NAME): 1.0, (3, 4, NAME): 0.2,
              (6, 7, CITY): 0.3, (6, 7, DATE): 0.8, (8, 9, NAME): -0.1}

    def fake(tab):
        return np.array([scores[(int(tab.first[r]), int(tab.stop[r]), tab.labels[tab.label[r]])]
                         for r in range(len(tab))])

    monkeypatch.setattr(svm, "decision_function", fake)
    got = spans_of_doc(d, svm.predict(members, [d])[0])
    # (0,4) beats both overlapping NAMEs; DATE (1 vote, 0.8) beats CITY (2 votes, 0.3); (8,9) < 0.
    assert got == {(0, 4, NAME), (6, 7, DATE)}
    scores[(6, 7, DATE)] = 0.3  # equal confidence: more votes wins
    assert spans_of_doc(d, svm.predict(members, [d])[0]) == {(0, 4, NAME), (6, 7, CITY)}


def spans_of_doc(d, prediction):
    starts = d.tokens.starts.tolist()
    ends = d.tokens.ends.tolist()
    return {(starts.index(a.start), ends.index(a.end) + 1, a.label) for a in prediction.spans(d)}


def oracle_case(n_docs=40, n_tokens=40, seed=0):
    """Member "right" copies the gold; "noisy" members miss, shift and invent."""
    rng = random.Random(seed)
    labels = [NAME, DATE, CITY]
    docs, members = [], {"noisy1": {}, "right": {}, "noisy2": {}}
    for i in range(n_docs):
        gold, pos = [], 0
        while True:
            pos += rng.randint(2, 6)
            length = rng.randint(1, 3)
            if pos + length > n_tokens:
                break
            gold.append((pos, pos + length, rng.choice(labels)))
            pos += length
        d = doc(f"d{i:02d}", n_tokens, gold, group=f"p{i // 2}")
        docs.append(d)
        members["right"][d.id] = pred(d, gold)
        for name in ("noisy1", "noisy2"):
            spans = []
            for a, b, lab in gold:
                r = rng.random()
                if r < 0.3:
                    continue
                if r < 0.5:
                    b = min(n_tokens, b + 1)
                elif r < 0.6:
                    lab = rng.choice(labels)
                spans.append((a, b, lab))
            a = rng.randrange(n_tokens - 2)
            spans.append((a, a + 2, rng.choice(labels)))
            members[name][d.id] = pred(d, spans)
    return docs, members


def _split(docs, members, n_train):
    train, test = docs[:n_train], docs[n_train:]
    pick = lambda ds: {m: {d.id: p[d.id] for d in ds} for m, p in members.items()}  # noqa: E731
    return train, pick(train), test, pick(test)


def _f1(learner, docs, members, n_train=30):
    train, m_train, test, m_test = _split(docs, members, n_train)
    learner.fit(m_train, train)
    preds = learner.predict(m_test, test)
    return Scorer(test, "strict").prf({p.doc_id: p.spans(d) for p, d in zip(preds, test)})[2]


def test_noisy_members_alone_are_poor():
    docs, members = oracle_case()
    scorer = Scorer(docs, "strict")
    for name in ("noisy1", "noisy2"):
        assert scorer.prf({d.id: members[name][d.id].spans(d) for d in docs})[2] < 0.7


def test_stacked_svm_recovers_the_right_member():
    docs, members = oracle_case()
    assert _f1(StackedSVM(C=1.0), docs, members) == 1.0


def test_stacked_searn_recovers_the_right_member():
    docs, members = oracle_case()
    assert _f1(StackedSEARN(passes=10), docs, members) == 1.0


def test_stacked_lstm_recovers_the_right_member():
    pytest.importorskip("torchcrf")
    docs, members = oracle_case(n_docs=24, n_tokens=24)
    learner = StackedLSTM(epochs=12, batch_size=2, learning_rate=0.005, early_stopping=False, device="cpu", threads=1)
    assert _f1(learner, docs, members, n_train=18) >= 0.95
    assert len(learner.history_) == 12


def test_stacked_lstm_early_stopping_holds_out_whole_patients():
    pytest.importorskip("torchcrf")
    docs, members = oracle_case(n_docs=20)
    learner = StackedLSTM(epochs=3, validation_fraction=0.2, device="cpu", threads=1)
    train_idx, val_idx = learner._split_validation(type("T", (), {"documents": docs})())
    assert val_idx and train_idx
    assert not {docs[i].group for i in train_idx} & {docs[i].group for i in val_idx}
    learner.fit(*reversed(_split(docs, members, 20)[:2]))
    assert all("validation_loss" in h for h in learner.history_)


def test_stacked_searn_uses_context_and_tag_history():
    """A member that is right one token late: only the window can fix it."""
    docs, members = oracle_case(n_docs=30)
    late = {}
    for d in docs:
        tags = list(members["right"][d.id].tags)
        late[d.id] = DocumentPrediction(d.id, tuple(["O"] + tags[:-1]))
    shifted = {"late": late, "noisy1": members["noisy1"]}
    assert _f1(StackedSEARN(passes=5), docs, shifted, n_train=22) >= 0.9


def test_unknown_member_tags_at_prediction_are_tolerated():
    docs, members = oracle_case(n_docs=12)
    train, m_train, test, m_test = _split(docs, members, 8)
    odd = {d.id: DocumentPrediction(d.id, tuple("B-ODD:THING" if t != "O" else t for t in m_test["noisy1"][d.id].tags))
           for d in test}
    m_test = {**m_test, "noisy1": odd}
    for learner in (StackedSVM(), StackedSEARN(passes=1)):
        learner.fit(m_train, train)
        assert len(learner.predict(m_test, test)) == len(test)
    assert spans_of(test[0], learner.predict(m_test, test)[0]) is not None


def test_stacked_searn_features_by_hand():
    """Per token, member j's input id at each offset of the window, in the
    order offsets -w..w then members; -1 past the document edge, the
    unknown id for a tag not seen in fit."""
    from ensemble_deid.ensemble.tokens import build_token_table

    d = Document("x", "a b c", [], {"group": "x"})
    tags = {"A": ("B-NAME:P", "I-NAME:P", "O"), "B": ("O", "B-LOCATION:CITY", "O")}
    table = build_token_table([{d.id: DocumentPrediction(d.id, t)} for t in tags.values()], tuple(tags), [d])
    learner = StackedSEARN(window=1)
    # ids in fit: O -> 0, B-NAME:P -> 1, I-NAME:P -> 2; B-LOCATION:CITY unseen -> 3 (unknown)
    learner.input_tags_ = {"O": 0, "B-NAME:P": 1, "I-NAME:P": 2}
    assert learner._features(table) == [[
        "m0@-1=-1 m1@-1=-1 m0@0=1 m1@0=0 m0@1=2 m1@1=3",
        "m0@-1=1 m1@-1=0 m0@0=2 m1@0=3 m0@1=0 m1@1=0",
        "m0@-1=2 m1@-1=3 m0@0=0 m1@0=0 m0@1=-1 m1@1=-1",
    ]]


def test_stacked_lstm_threads_leave_torch_as_it_was():
    """Fit and prediction run on ``threads`` CPU threads (default None: torch's
    own) and give torch its setting back; on a short fit one and two threads
    give the same tags (over many epochs the rounding can add up)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchcrf")
    docs, members = oracle_case(n_docs=12, n_tokens=16)
    train, m_train, test, m_test = _split(docs, members, 8)
    before = torch.get_num_threads()
    outputs = []
    for threads in (1, 2):
        torch.set_num_threads(3)
        learner = StackedLSTM(epochs=2, batch_size=2, early_stopping=False, device="cpu", threads=threads)
        learner.fit(m_train, train)
        outputs.append(([p.tags for p in learner.predict(m_test, test)], learner._marginals(
            learner._prepare([m_test[n] for n in learner.member_names_], learner.member_names_, test))))
        assert torch.get_num_threads() == 3
    torch.set_num_threads(before)
    assert StackedLSTM().threads is None
    assert outputs[0][0] == outputs[1][0]
    assert all(np.allclose(a, b, rtol=0, atol=1e-6) for a, b in zip(outputs[0][1], outputs[1][1]))


def test_stacked_lstm_cache_key_holds_a_set_thread_count():
    """A thread count changes the network by float rounding over many epochs
    (MEDDOCAN dev 0.9642 on one thread, 0.9644 on two): a set count is its own
    entry; the default None keeps the key entries were cached under."""
    from ensemble_deid.ensemble import GridSearch
    from ensemble_deid.ensemble.run import key_settings

    keys = [key_settings(GridSearch(StackedLSTM(threads=t))) for t in (None, 1, 4)]
    assert keys[0]["params"]["threads"] is None
    assert keys[1]["params"]["threads"] == 1 and keys[2]["params"]["threads"] == 4
    assert keys[0] != keys[1] != keys[2] != keys[0]
    assert key_settings(GridSearch(StackedLSTM(epochs=3)))["params"]["epochs"] == 3


def test_stacked_searn_predicts_what_it_did_before_its_model_stayed_loaded(tmp_path, monkeypatch):
    """The learner's tags, fitted here, loaded from a method folder the code
    before the change saved, and saved and loaded again, are the tags that
    code predicted (tests/data/stacked_searn, recorded by commit 38bdbfd);
    the model is loaded in VW once, not again for the next batch."""
    import json

    from ensemble_deid.ensemble.registry import load_method
    from ensemble_deid.taggers import linear

    from .conftest import TESTS_DIR

    data = TESTS_DIR / "data" / "stacked_searn"
    recorded = json.loads((data / "tags-by-38bdbfd.json").read_text())
    docs, members = oracle_case(n_docs=40)
    noisy = {k: v for k, v in members.items() if k != "right"}
    train, m_train, test, m_test = _split(docs, noisy, 24)

    def tags(learner, batch):
        return {p.doc_id: [[i, t] for i, t in enumerate(p.tags) if t != "O"]
                for p in learner.predict({m: {d.id: preds[d.id] for d in batch} for m, preds in m_test.items()},
                                         batch)}

    fitted = StackedSEARN(passes=3, bits=16).fit(m_train, train)
    assert tags(fitted, test) == recorded
    old = load_method(data / "saved-by-38bdbfd")
    assert tags(old, test[:8]) == {d.id: recorded[d.id] for d in test[:8]}
    with monkeypatch.context() as m:
        m.setattr(linear, "_vw", lambda: pytest.fail("the model was loaded again"))
        assert tags(old, test[8:]) == {d.id: recorded[d.id] for d in test[8:]}
    fitted.save(tmp_path / "saved")
    assert tags(load_method(tmp_path / "saved"), test) == recorded
