"""MIRA: sequence MIRA, i.e. passive-aggressive training of a linear-chain
model [KIM20 Table 3: Miralium, max weight update 0.1, 30 epochs].

CRFsuite's passive-aggressive algorithm (``pa``; 1-best MIRA, Crammer et al.
2006): after each training sequence, the smallest weight change that puts the
gold sequence ahead of the Viterbi sequence by a margin of its (Hamming)
loss, capped at ``c`` (PA-I: the max update, 0.1 as in Table 3), 30 epochs,
averaged weights. Features: the shared module's strings, as the CRF adapter
feeds them. Training sequences are sentences (never cutting a gold span);
prediction tags whole documents.

Confidences: CRFsuite's marginal probability of each chosen tag under the
learnt weights (uncalibrated: PA weights are not trained as probabilities).
"""
from __future__ import annotations

import numpy as np

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.taggers.linear import FEATURES_TAG, LabelIndex, LinearTagger, crfsuite_tagger, crfsuite_train, scratch_dir, training_chunks
from ensemble_deid.taggers.constraints import MAX_COST, MAX_COUNT, Interval, Options
from ensemble_deid.taggers.crfsuite_file import check_crfsuite_model


class MiraTagger(LinearTagger):
    name = "mira"
    version = "1" + FEATURES_TAG
    requires = ("pycrfsuite",)
    description = "sequence MIRA: passive-aggressive linear-chain model (CRFsuite pa)"

    _parameter_constraints = {
        "c": [Interval(float, 0, MAX_COST, closed="right")], "epochs": [Interval(int, 1, MAX_COUNT)],
        "pa_type": [Options(0, 1, 2)], "error_sensitive": [bool], "averaging": [bool],
        "min_freq": [Interval(float, 0, MAX_COUNT)], "confidences": [bool],
    }

    def __init__(self, c=0.1, epochs=30, pa_type=1, error_sensitive=True, averaging=True, min_freq=0,
                 confidences=True, features=None, random_state=0):
        self._store_params(locals())

    def _restore_state(self, state) -> None:
        super()._restore_state(state)
        check_crfsuite_model(self.model_, f"{self.name} model")  # a damaged file is refused when loaded, not used

    def fit(self, documents):
        feats = self._training_features(documents)
        seqs = []
        for doc, f in zip(documents, feats):
            tags = gold_tags(doc)
            for a, b in training_chunks(doc, tags):
                seqs.append((f[a:b], tags[a:b]))
        # CRFsuite's pa reshuffles the sequences every epoch with C's rand(),
        # which crfsuite_train seeds; the pre-shuffle mixes documents for seeds alike
        order = np.random.default_rng(self.random_state).permutation(len(seqs))
        params = {
            "type": int(self.pa_type),
            "c": float(self.c),
            "error_sensitive": bool(self.error_sensitive),
            "averaging": bool(self.averaging),
            "max_iterations": int(self.epochs),
            "feature.minfreq": float(self.min_freq),
        }
        with scratch_dir() as tmp:
            self.model_ = crfsuite_train("pa", params, (seqs[i] for i in order), tmp, seed=self.random_state)
        self.labels_ = LabelIndex.from_documents(documents)
        return self

    def predict(self, documents):
        return self._tag(documents, self.confidences)

    def predict_tags(self, documents):
        return self._tag(documents, False)  # no marginals: a Python call per token

    def _tag(self, documents, confidences: bool):
        self.check_fitted()
        feats = self._extract(documents)
        out = []
        with crfsuite_tagger(self.model_) as tagger:
            for doc, f in zip(documents, feats):
                if not f:
                    out.append((np.zeros(0, dtype=np.int64), np.zeros(0) if confidences else None))
                    continue
                tags = tagger.tag(f)  # one call per document
                conf = None
                if confidences:
                    marginal = tagger.marginal
                    conf = np.fromiter((marginal(t, i) for i, t in enumerate(tags)), dtype=np.float64, count=len(tags))
                out.append((self.labels_.encode(tags), conf))
        return self._predictions(documents, self.labels_, out)
