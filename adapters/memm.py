"""MEMM: a maximum-entropy Markov model [KIM20 Table 3; Wapiti's MEMM there].

A multinomial logistic regression (scikit-learn, lbfgs) of a token's tag on
the shared features of the token plus its previous tag, trained with the gold
previous tags; prediction runs Viterbi over the local log probabilities
``log P(y_t | x_t, y_t-1)`` (not greedy left-to-right decoding). The score of
a label given every possible previous label is computed at once: the token's
feature scores plus the previous-tag weight row, normalised per previous tag
(``ensemble_deid.taggers.linear.decode_chains(local=True)``).

Confidences: the model's marginal probability of each chosen tag (forward
algorithm over the local distributions).

Table 3's stopping interval e = 0.004 is Wapiti's; here ``tol`` is lbfgs's
tolerance and ``max_iter`` caps the iterations.
"""
from __future__ import annotations

import warnings
from itertools import chain

import numpy as np
import scipy.sparse as sp

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.taggers.linear import FEATURES_TAG, LabelIndex, FeatureIndex, LinearTagger, decode_chains, offsets_of, sparse_scores
from ensemble_deid.taggers.constraints import MAX_COST, MAX_COUNT, MAX_TOLERANCE, Interval


class MemmTagger(LinearTagger):
    name = "memm"
    version = "1" + FEATURES_TAG
    requires = ("sklearn",)
    description = "maximum-entropy Markov model (multinomial logistic regression + previous tag, Viterbi)"

    _parameter_constraints = {
        "c": [Interval(float, 0, MAX_COST, closed="right")], "max_iter": [Interval(int, 1, MAX_COUNT)],
        "tol": [Interval(float, 0, MAX_TOLERANCE, closed="right")], "min_count": [Interval(int, 1, MAX_COUNT)],
    }

    def __init__(self, c=1.0, max_iter=100, tol=1e-4, min_count=2, features=None, random_state=0):
        self._store_params(locals())

    def fit(self, documents):
        feats = self._training_features(documents)  # first: a missing library is one clear error
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression
        labels = LabelIndex.from_documents(documents)
        K = len(labels)
        index = FeatureIndex(self.min_count)
        X = index.fit_transform(list(chain.from_iterable(feats)))
        y = labels.encode(list(chain.from_iterable(gold_tags(d) for d in documents)))
        # previous gold tag of every token; K = "start of document"
        prev = np.empty_like(y)
        offs = offsets_of([len(d.tokens) for d in documents])
        prev[1:] = y[:-1]
        prev[offs[:-1][np.diff(offs) > 0]] = K
        P = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), prev)), shape=(len(y), K + 1))
        F = X.shape[1]
        if K == 1:  # only O in training
            coef = np.zeros((1, F + K + 1))
            bias = np.zeros(1)
        else:
            clf = LogisticRegression(C=self.c, solver="lbfgs", max_iter=self.max_iter, tol=self.tol,
                                     random_state=self.random_state)
            with warnings.catch_warnings():
                # A capped max_iter is a choice (n_iter_ records it), not a fault to print per fold.
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf.fit(sp.hstack([X, P], format="csr"), y)
            coef, bias = clf.coef_, clf.intercept_
            self.n_iter_ = int(np.max(clf.n_iter_))
            if K == 2:  # scikit-learn keeps one vector for two classes: softmax(-z/2, z/2) = sigmoid(z)
                coef = np.vstack([-coef / 2, coef / 2])
                bias = np.array([-bias[0] / 2, bias[0] / 2])
        self.labels_ = labels
        self.index_ = index
        self.weights_ = np.ascontiguousarray(coef[:, :F].T, dtype=np.float32)  # (F, K)
        self.bias_ = np.asarray(bias, dtype=np.float64)
        self.transitions_ = np.asarray(coef[:, F:F + K].T, dtype=np.float64)  # (previous, current)
        self.start_ = np.asarray(coef[:, F + K], dtype=np.float64)
        return self

    def predict(self, documents):
        self.check_fitted()
        X, lengths = self._design(documents)
        Z = sparse_scores(X, self.weights_) + self.bias_
        offs = offsets_of(lengths)
        unaries = [Z[a:b] for a, b in zip(offs[:-1], offs[1:])]
        results = decode_chains(unaries, self.transitions_, self.start_, local=True)
        return self._predictions(documents, self.labels_, results)
