"""Dawid-Skene aggregation (ensemble/dawid_skene.py): hand-computed tables,
posteriors and EM steps, and adaptation to notes whose members err otherwise."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble_deid.corpus.bio import OUTSIDE
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.ensemble import make_method
from ensemble_deid.ensemble.candidates import build_candidates
from ensemble_deid.ensemble.dawid_skene import DawidSkene, _counted, _posterior
from ensemble_deid.taggers.prediction import DocumentPrediction

from .tiny_corpus import tiny_corpus


_WORDS = ["ann", "bob", "cal", "dee", "eve", "fay", "gus", "hal"]


def _doc(doc_id: str, n_words: int, gold: list[tuple[int, str]]) -> Document:
    """A note of ``n_words`` one-token words; ``gold``: (word index, CATEGORY:TYPE) one-word spans."""
    text = " ".join(_WORDS[:n_words])
    starts = [4 * i for i in range(n_words)]
    anns = [Annotation(starts[i], starts[i] + 3, *label.split(":")) for i, label in gold]
    return Document(doc_id, text, anns)


def _pred(doc: Document, spans: list[tuple[int, str]]) -> DocumentPrediction:
    tags = [OUTSIDE] * len(doc.tokens)
    for i, label in spans:
        tags[i] = f"B-{label}"
    return DocumentPrediction(doc.id, tags)


def test_fitted_tables_by_hand():
    # One note, 4 candidates of NAME:PATIENT (words 0-3); gold: words 0 and 1.
    doc = _doc("a", 6, [(0, "NAME:PATIENT"), (1, "NAME:PATIENT")])
    lab = "NAME:PATIENT"
    members = {"m1": {"a": _pred(doc, [(0, lab), (1, lab), (2, lab)])},  # 2 of 2 gold, 1 of 2 false
               "m2": {"a": _pred(doc, [(0, lab), (3, lab)])}}  # 1 of 2 gold, 1 of 2 false
    ds = DawidSkene(adapt=False).fit(members, [doc])
    assert ds.categories_ == ["NAME"]
    # add-one smoothing: sens = (hits + 1) / (gold candidates + 2); fpr likewise over false candidates
    np.testing.assert_allclose(ds.sens_[:, 0], [(2 + 1) / 4, (1 + 1) / 4])
    np.testing.assert_allclose(ds.fpr_[:, 0], [(1 + 1) / 4, (1 + 1) / 4])
    assert ds.prior_[0] == pytest.approx((2 + 1) / (4 + 2))
    table = build_candidates([members["m1"], members["m2"]], ("m1", "m2"), [doc])
    q = ds.posteriors(table)
    # candidate word 0, voted by both: prior 1/2, sens 3/4 and 1/2, fpr 1/2 and 1/2
    p_pos = 0.5 * (3 / 4) * (2 / 4)
    p_neg = 0.5 * (2 / 4) * (2 / 4)
    assert q[0] == pytest.approx(p_pos / (p_pos + p_neg))
    # word 3, only m2: sens m1 miss (1/4), m2 hit (1/2); fpr m1 miss (1/2), m2 hit (1/2)
    p_pos = 0.5 * (1 / 4) * (2 / 4)
    p_neg = 0.5 * (2 / 4) * (2 / 4)
    assert q[3] == pytest.approx(p_pos / (p_pos + p_neg))
    (pred,) = ds.predict(members, [doc])
    assert tuple(pred.tags[:4]) == (f"B-{lab}", f"B-{lab}", f"B-{lab}", OUTSIDE)  # 0.6, 0.6, 0.6 kept; word 3 at 1/3 dropped


def test_one_em_step_by_hand():
    votes = np.array([[1, 1], [1, 0], [0, 1]], dtype=bool)
    k = np.zeros(3, dtype=int)
    sens0, fpr0, prior0 = np.array([[0.8, 0.8], [0.8, 0.8]]), np.array([[0.2, 0.2], [0.2, 0.2]]), np.array([0.5, 0.5])
    q = _posterior(votes, k, sens0, fpr0, prior0)
    assert q[0] == pytest.approx(0.64 / (0.64 + 0.04))
    assert q[1] == pytest.approx(0.16 / (0.16 + 0.16))
    sens, fpr, prior = _counted(votes, k, q, 2, 0.0, anchor=(sens0, fpr0, prior0, 2.0))
    # member 1 proposed candidates 0 and 1: sens = (q0 + q1 + 2 * 0.8) / (q0 + q1 + q2 + 2)
    assert sens[0, 0] == pytest.approx((q[0] + q[1] + 1.6) / (q.sum() + 2))
    assert fpr[1, 0] == pytest.approx(((1 - q[0]) + (1 - q[2]) + 0.4) / ((1 - q).sum() + 2))
    assert prior[0] == pytest.approx((q.sum() + 1.0) / (3 + 2))


def _noisy_members(docs, rng, recall_of, false_rate_of):
    """Members that find each gold span with a per-member chance and add false one-word spans."""
    out = {}
    for name in recall_of:
        preds = {}
        for doc in docs:
            tags = [OUTSIDE] * len(doc.tokens)
            starts = {int(s): i for i, s in enumerate(doc.tokens.starts)}
            ends = {int(e): i for i, e in enumerate(doc.tokens.ends)}
            for a in doc.annotations:
                if a.start in starts and a.end in ends and rng.random() < recall_of[name]:
                    i, j = starts[a.start], ends[a.end]
                    tags[i] = f"B-{a.label}"
                    for t in range(i + 1, j + 1):
                        tags[t] = f"I-{a.label}"
            for t in range(len(tags)):
                if tags[t] == OUTSIDE and rng.random() < false_rate_of[name]:
                    tags[t] = "B-NAME:PATIENT"
            preds[doc.id] = DocumentPrediction(doc.id, tags)
        out[name] = preds
    return out


def test_adaptation_learns_that_a_member_became_noisy():
    rng = np.random.default_rng(0)
    source, target = tiny_corpus(24, seed=1), tiny_corpus(24, seed=2, prefix="t")
    recall = {"a": 0.9, "b": 0.9, "c": 0.9}
    # On the source every member is precise; on the target member c proposes many false spans.
    src = _noisy_members(source, rng, recall, {"a": 0.0, "b": 0.0, "c": 0.0})
    tgt = _noisy_members(target, rng, recall, {"a": 0.0, "b": 0.0, "c": 0.15})
    fixed = DawidSkene(adapt=False).fit(src, source)
    adapted = DawidSkene(adapt=True, prior_strength=1.0).fit(src, source)
    table = build_candidates([tgt[n] for n in "abc"], ("a", "b", "c"), target)
    c_only = table.votes[:, 2] & ~table.votes[:, 0] & ~table.votes[:, 1]
    assert c_only.sum() > 20 and table.gold[c_only].mean() < 0.05
    # Trained on the source, c alone is believed; adapted, c alone is not.
    assert fixed.posteriors(table)[c_only].mean() > 0.5
    assert adapted.posteriors(table)[c_only].mean() < 0.2
    fixed_tp, fixed_fp, fixed_fn = fixed._raw_counts(table, fixed._predict_raw(table))
    tp, fp, fn = adapted._raw_counts(table, adapted._predict_raw(table))
    # adapted, the false spans go; only the few true spans c alone found go with them
    assert fp < fixed_fp / 10 and tp >= fixed_tp * 0.9
    assert 2 * tp / (2 * tp + fp + fn) > 2 * fixed_tp / (2 * fixed_tp + fixed_fp + fixed_fn) + 0.1
    # adapt() freezes what EM learned: predicting again re-estimates nothing
    adapted.adapt_to(tgt, target)
    assert adapted.adapted_
    frozen = adapted.posteriors(table)
    np.testing.assert_allclose(frozen, _posterior(table.votes, adapted._category_index(table), adapted.sens_,
                                                  adapted.fpr_, adapted.prior_))


def test_registered_and_bad_params_named():
    assert isinstance(make_method("dawid-skene"), DawidSkene)
    for bad in ({"prior_strength": -1.0}, {"prior_strength": math.nan}, {"tol": 2.0}, {"adapt": "yes"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            make_method("dawid-skene", **bad)
