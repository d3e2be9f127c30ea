"""Structural SVM: a linear-chain model trained on the margin-rescaled
structured hinge loss with Hamming loss [KIM20 Table 3 used MITIE, whose
general-domain features made it weak; this one uses the shared features].

Minimises ``lambda/2 ||w||^2 + mean_i max_y [score(y) + hamming(y, y_i)] - score(y_i)``
over training sentences (never cutting a gold span) by averaged stochastic
subgradient descent (Bottou's ASGD bookkeeping: weight decay by a divisor, a
running average updated sparsely; no dense pass per example), one
loss-augmented Viterbi per sentence, ``epochs`` passes in a seeded random
order. Parameters: per-feature label weights over the shared features,
label transitions and start scores. Prediction: batched Viterbi over whole
documents with the averaged weights.

Confidences: ``sigmoid`` of the max-marginal margin of each chosen tag (best
path through it minus best path through any other tag; uncalibrated).
"""
from __future__ import annotations

from itertools import chain

import numpy as np

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.taggers.linear import (
    FEATURES_TAG,
    FeatureIndex,
    LabelIndex,
    LinearTagger,
    decode_chains,
    loss_augmented_viterbi,
    offsets_of,
    sparse_scores,
    training_chunks,
)
from ensemble_deid.taggers.constraints import MAX_COST, MAX_COUNT, MAX_PENALTY, MAX_RATE, Interval


class StructSvmTagger(LinearTagger):
    name = "struct-svm"
    version = "1" + FEATURES_TAG
    requires = ()  # feature hashing: feature_hash (numpy)
    description = "structural SVM (structured hinge, loss-augmented Viterbi, averaged SGD)"

    _parameter_constraints = {
        "reg": [Interval(float, 0, MAX_PENALTY)], "epochs": [Interval(int, 1, MAX_COUNT)],
        "learning_rate": [Interval(float, 0, MAX_RATE, closed="right")],
        "cost": [Interval(float, 0, MAX_COST, closed="right")],
        "average_from": [Interval(int, 1, MAX_COUNT)], "min_count": [Interval(int, 1, MAX_COUNT)],
    }

    def __init__(self, reg=1e-6, epochs=10, learning_rate=0.01, cost=1.0, average_from=1, min_count=2,
                 features=None, random_state=0):
        self._store_params(locals())

    def fit(self, documents):
        feats = self._training_features(documents)
        labels = LabelIndex.from_documents(documents)
        index = FeatureIndex(self.min_count)
        X = index.fit_transform(list(chain.from_iterable(feats)))
        offs = offsets_of([len(d.tokens) for d in documents])
        y_all = np.empty(X.shape[0], dtype=np.int64)
        chunks = []
        for doc, a in zip(documents, offs[:-1]):
            tags = gold_tags(doc)
            y_all[a:a + len(tags)] = labels.encode(tags)
            chunks += [(a + s, a + e) for s, e in training_chunks(doc, tags)]
        W, T, S = _train(X, y_all, chunks, len(labels), float(self.reg), int(self.epochs),
                         float(self.learning_rate), float(self.cost), int(self.average_from),
                         np.random.default_rng(self.random_state))
        self.labels_ = labels
        self.index_ = index
        self.weights_ = W.astype(np.float32)
        self.transitions_ = T
        self.start_ = S
        return self

    def predict(self, documents):
        return self._decode(documents, confidences=True)

    def predict_tags(self, documents):
        return self._decode(documents, confidences=False)  # the same paths, no max-marginal pass

    def _decode(self, documents, confidences):
        self.check_fitted()
        X, lengths = self._design(documents)
        Z = sparse_scores(X, self.weights_)
        offs = offsets_of(lengths)
        unaries = [Z[a:b] for a, b in zip(offs[:-1], offs[1:])]
        results = decode_chains(unaries, self.transitions_, self.start_, local=False, confidences=confidences)
        return self._predictions(documents, self.labels_, results)


def _train(X, y, chunks, K, reg, epochs, eta0, cost, average_from, rng):
    """Averaged SGD on the structured hinge. Stored parameters ``w`` (emission
    weights, transitions, start) are the real ones times ``w_div``; the
    average is ``(a + w_frac * w) / a_div`` (Bottou, "Stochastic gradient
    descent tricks", 2012)."""
    F = X.shape[1]
    indptr, indices, data = X.indptr, X.indices, X.data
    W = np.zeros((F, K))
    T = np.zeros((K, K))
    S = np.zeros(K)
    A_W, A_T, A_S = np.zeros_like(W), np.zeros_like(T), np.zeros_like(S)
    w_div, a_div, w_frac = 1.0, 1.0, 0.0
    averaging = False
    step = 0
    n = len(chunks)

    def renorm():
        nonlocal w_div, a_div, w_frac
        for w, a in ((W, A_W), (T, A_T), (S, A_S)):
            a += w_frac * w
            a /= a_div
            w /= w_div
        w_div = a_div = 1.0
        w_frac = 0.0

    for epoch in range(epochs):
        if epoch == average_from and not averaging:
            averaging = True  # the average starts from the current weights
            renorm()
            for w, a in ((W, A_W), (T, A_T), (S, A_S)):
                a[...] = w
            w_frac, a_div = 0.0, 1.0
            t_avg = 0
        for ci in rng.permutation(n):
            a, b = chunks[ci]
            if w_div > 1e5 or a_div > 1e5:
                renorm()
            lo, hi = indptr[a], indptr[b]
            feats = indices[lo:hi]
            vals = data[lo:hi]
            row_starts = indptr[a:b] - lo
            lengths = np.diff(indptr[a:b + 1])
            G = W[feats] * vals[:, None]
            if lengths.min() > 0:
                E = np.add.reduceat(G, row_starts, axis=0)
            else:  # a token without a kept feature
                E = np.zeros((b - a, K))
                nz = lengths > 0
                E[nz] = np.add.reduceat(G, row_starts[nz], axis=0)
            gold = y[a:b]
            pred, _ = loss_augmented_viterbi(E / w_div, T / w_div, gold, S / w_div, cost)
            eta = eta0 / (1.0 + reg * eta0 * step) ** 0.75
            step += 1
            w_div /= 1.0 - eta * reg
            wrong = pred != gold
            g_scale = eta * w_div
            if wrong.any():
                # emission features of the wrong tokens: + gold label, - predicted label
                tok = np.flatnonzero(wrong)
                sel = np.repeat(tok, lengths[tok])
                pos = np.concatenate([np.arange(row_starts[t], row_starts[t] + lengths[t]) for t in tok])
                f_idx = feats[pos]
                v = vals[pos] * g_scale
                np.add.at(W, (f_idx, gold[sel]), v)
                np.add.at(W, (f_idx, pred[sel]), -v)
                dT = np.zeros((K, K))
                np.add.at(dT, (gold[:-1], gold[1:]), 1.0)
                np.add.at(dT, (pred[:-1], pred[1:]), -1.0)
                dS = np.zeros(K)
                dS[gold[0]] += 1.0
                dS[pred[0]] -= 1.0
                T += g_scale * dT
                S += g_scale * dS
                if averaging:
                    c = -w_frac * g_scale
                    np.add.at(A_W, (f_idx, gold[sel]), c * vals[pos])
                    np.add.at(A_W, (f_idx, pred[sel]), -c * vals[pos])
                    A_T += c * dT
                    A_S += c * dS
            if averaging:
                t_avg += 1
                mu = 1.0 / t_avg
                if mu >= 1.0:
                    for w, a_ in ((W, A_W), (T, A_T), (S, A_S)):
                        a_[...] = 0.0
                    a_div, w_frac = w_div, 1.0
                else:
                    a_div /= 1.0 - mu
                    w_frac += mu * a_div / w_div
    if averaging:
        return ((A_W + w_frac * W) / a_div, (A_T + w_frac * T) / a_div, (A_S + w_frac * S) / a_div)
    return W / w_div, T / w_div, S / w_div
