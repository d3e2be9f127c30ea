"""The CRF tagger (python-crfsuite, L-BFGS, shared [LIU17] features)."""
from __future__ import annotations

import pickle
import sys
import time

import numpy as np
import pytest

from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.base import TaggerUnavailable
from ensemble_deid_adapters.crf import CRFTagger

from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus

pytest.importorskip("pycrfsuite")


class TestCRFContract(TaggerContract):
    tagger_name = "crf"
    tagger_params = {"max_iterations": 40}


def strict_prf(tagger, docs):
    preds = tagger.predict(docs)
    gold = {(d.id,) + a.key for d in docs for a in d.annotations}
    found = {(p.doc_id,) + s.key for p, d in zip(preds, docs) for s in p.spans(d)}
    tp = len(gold & found)
    p = tp / len(found) if found else 0.0
    r = tp / len(gold)
    return p, r, (2 * p * r / (p + r) if tp else 0.0)


@pytest.fixture(scope="module")
def corpus():
    docs = tiny_corpus(30, seed=1)
    return docs[:20], docs[20:]


@pytest.fixture(scope="module")
def fitted(corpus):
    return CRFTagger(max_iterations=50).fit(corpus[0])


def test_learns_a_tiny_corpus_and_beats_the_majority_baseline(fitted, corpus):
    # the majority tag is O everywhere: no spans, strict F1 0
    p, r, f = strict_prf(fitted, corpus[1])
    assert f > 0.8, (p, r, f)


def test_marginals_are_probabilities(fitted, corpus):
    for pred, doc in zip(fitted.predict(corpus[1]), corpus[1]):
        c = pred.confidences
        assert c is not None and c.shape == (len(doc.tokens),)
        assert np.all((c >= 0) & (c <= 1))
    assert float(np.mean(c)) > 0.5  # a model this sure of its training data


def test_pickle_round_trips_predictions(fitted, corpus):
    blob = pickle.dumps(fitted)
    restored = pickle.loads(blob)
    a, b = fitted.predict(corpus[1]), restored.predict(corpus[1])
    assert [p.tags for p in a] == [p.tags for p in b]
    assert all(np.allclose(x.confidences, y.confidences) for x, y in zip(a, b))
    assert isinstance(restored.model_, bytes) and restored.model_ == fitted.model_


def test_fit_stats_and_labels(fitted, corpus):
    stats = fitted.fit_stats_
    assert stats["sequences"] == len(corpus[0])  # whole documents
    assert stats["tokens"] == sum(len(d.tokens) for d in corpus[0])
    assert 0 < stats["iterations"] <= 50
    assert stats["feature_seconds"] >= 0 and stats["crfsuite_seconds"] > 0
    assert "O" in fitted.labels_ and "B-NAME:PATIENT" in fitted.labels_


def test_sentence_sequences(corpus):
    tagger = CRFTagger(max_iterations=30, sequence="sentence").fit(corpus[0])
    assert tagger.fit_stats_["sequences"] > len(corpus[0])
    preds = tagger.predict(corpus[1])
    assert all(len(p.tags) == len(d.tokens) for p, d in zip(preds, corpus[1]))
    assert strict_prf(tagger, corpus[1])[2] > 0.5


def test_feature_parameters_reach_the_extractor(corpus):
    tagger = CRFTagger(max_iterations=5, features={"window": 1, "gazetteers": False})
    tagger.fit(corpus[0][:4])
    assert tagger._extractor().window == 1 and tagger._extractor().gazetteers is False
    assert tagger.get_params()["features"] == {"window": 1, "gazetteers": False}


def test_refit_replaces_the_model(corpus):
    tagger = CRFTagger(max_iterations=5).fit(corpus[0][:3])
    first = tagger.model_
    tagger.set_params(max_iterations=20).fit(corpus[0])
    assert tagger.model_ != first
    assert len(tagger.predict(corpus[1][:1])[0].tags) == len(corpus[1][0].tokens)


def test_empty_and_unlabelled_documents(fitted):
    empty = Document("empty", "  \n")
    pred = fitted.predict([empty])[0]
    assert pred.tags == () and pred.confidences.shape == (0,)
    with pytest.raises(ValueError, match="no training tokens"):
        CRFTagger().fit([empty])
    plain = CRFTagger(max_iterations=5).fit([Document("p", "Nothing to hide here.")])
    assert set(plain.predict([Document("q", "Still nothing.")])[0].tags) == {"O"}


def test_invalid_parameters(corpus):
    with pytest.raises(ValueError, match="sequence"):
        CRFTagger(sequence="paragraph").fit(corpus[0])
    with pytest.raises(ValueError, match="c1"):
        CRFTagger(c1=-1).fit(corpus[0])


def test_missing_pycrfsuite_is_a_clear_error(monkeypatch, corpus):
    monkeypatch.setitem(sys.modules, "pycrfsuite", None)
    with pytest.raises(TaggerUnavailable, match="pip install python-crfsuite"):
        CRFTagger(max_iterations=5).fit(corpus[0])


@pytest.mark.slow
def test_meddocan_strict_f1(meddocan_dir):
    from ensemble_deid.corpus.formats import load_directory

    train = load_directory(meddocan_dir / "train" / "xml")
    dev = load_directory(meddocan_dir / "dev" / "xml")
    t = time.perf_counter()
    tagger = CRFTagger().fit(train)
    assert time.perf_counter() - t < 1200
    p, r, f = strict_prf(tagger, dev)
    assert f >= 0.93, (p, r, f)
