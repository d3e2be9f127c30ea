"""SVM: a per-token linear SVM [KIM20 Table 3: LIBLINEAR].

scikit-learn's ``LinearSVC`` (LIBLINEAR, one-vs-rest, L2-regularised squared
hinge) on the shared features of each token; no sequence model, tags are
predicted for all tokens in one batch. ``o_weight`` scales the cost of
errors on ``O`` tokens (LIBLINEAR's ``-w``, here ``class_weight``); Table 3
used 0.01 for the "negative" class, which trades precision for recall (see
docs/linear-taggers.md for what it does on MEDDOCAN).

Confidences: ``sigmoid`` of the margin between the best and the second-best
class decision value (uncalibrated; in [0.5, 1]).
"""
from __future__ import annotations

from itertools import chain

import numpy as np
import scipy.sparse as sp

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.taggers.linear import FEATURES_TAG, FeatureIndex, LabelIndex, LinearTagger, margin_confidence, offsets_of, sparse_scores
from ensemble_deid.taggers.constraints import MAX_COST, MAX_COUNT, MAX_TOLERANCE, Interval


class SvmTagger(LinearTagger):
    name = "svm"
    version = "1" + FEATURES_TAG
    requires = ("sklearn",)
    description = "per-token linear SVM (LIBLINEAR via scikit-learn LinearSVC)"

    _parameter_constraints = {
        "c": [Interval(float, 0, MAX_COST, closed="right")], "o_weight": [Interval(float, 0, MAX_COST, closed="right")],
        "max_iter": [Interval(int, 1, MAX_COUNT)], "tol": [Interval(float, 0, MAX_TOLERANCE, closed="right")],
        "min_count": [Interval(int, 1, MAX_COUNT)],
    }

    def __init__(self, c=0.1, o_weight=0.01, max_iter=1000, tol=1e-4, min_count=1, features=None, random_state=0):
        self._store_params(locals())

    def fit(self, documents):
        feats = self._training_features(documents)  # first: a missing library is one clear error
        from sklearn.svm import LinearSVC
        labels = LabelIndex.from_documents(documents)
        index = FeatureIndex(self.min_count)
        X = index.fit_transform(list(chain.from_iterable(feats)))
        y = labels.encode(list(chain.from_iterable(gold_tags(d) for d in documents)))
        K = len(labels)
        if K == 1:
            coef, bias = np.zeros((X.shape[1], 1), dtype=np.float32), np.zeros(1)
        else:
            weights = {k: 1.0 for k in range(K)}
            weights[0] = float(self.o_weight)
            svm = LinearSVC(C=self.c, class_weight=weights, max_iter=self.max_iter, tol=self.tol,
                            random_state=self.random_state)
            svm.fit(X, y)
            coef, bias = svm.coef_, svm.intercept_
            if K == 2:  # one decision function: class 1 vs class 0
                coef = np.vstack([-coef, coef]) / 2
                bias = np.array([-bias[0], bias[0]]) / 2
            coef = np.ascontiguousarray(coef.T, dtype=np.float32)
        self.labels_ = labels
        self.index_ = index
        self.weights_ = coef  # (F, K)
        self.bias_ = np.asarray(bias, dtype=np.float64)
        return self

    def _fitted_state(self):
        state = super()._fitted_state()
        # LIBLINEAR leaves nearly all weights at zero (98 % on MEDDOCAN): saved as
        # a CSR matrix, a fifteenth of the dense table's bytes to check and read.
        state["weights_"] = sp.csr_matrix(self.weights_)
        return state

    def _restore_state(self, state):
        super()._restore_state(state)
        W = self.weights_  # a CSR matrix; a dense array in bundles saved before
        if not (sp.issparse(W) or isinstance(W, np.ndarray)) or W.ndim != 2 or W.dtype.kind != "f" \
                or W.shape != (self.index_.n_features, len(self.labels_)) or self.bias_.shape != (len(self.labels_),):
            raise ValueError("svm weights do not match its features and labels")

    def decision_function(self, documents):
        """Per-token decision values, (n_tokens, n_labels), documents stacked."""
        self.check_fitted()
        X, lengths = self._design(documents)
        return sparse_scores(X, self.weights_) + self.bias_, offsets_of(lengths)

    def predict(self, documents):
        scores, offs = self.decision_function(documents)
        ids = scores.argmax(1)
        conf = margin_confidence(scores)
        results = [(ids[a:b], conf[a:b]) for a, b in zip(offs[:-1], offs[1:])]
        return self._predictions(documents, self.labels_, results)
