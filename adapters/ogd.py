"""OGD: per-token multiclass online gradient descent in Vowpal Wabbit
[KIM20 Table 3: learning rate 0.1, 10 epochs].

One-against-all logistic regression (``--oaa K --loss_function logistic``)
learnt by VW's online gradient descent (its default adaptive, normalised,
invariant updates), 10 passes over a cached data file, learning rate 0.1.
Features: the shared module's, written in VW's text format with escaping;
VW hashes them (``bits``) and generates the window n-grams (``--ngram``).
Prediction is one batch through files; confidences are VW's probabilities
(``--probabilities``: the one-against-all logistic outputs, normalised).
"""
from __future__ import annotations

import numpy as np

from ensemble_deid.taggers.linear import FEATURES_TAG, VowpalTagger, scratch_dir, vw_predict_file
from ensemble_deid.taggers.constraints import MAX_COUNT, Interval


class OgdTagger(VowpalTagger):
    name = "ogd"
    version = "1" + FEATURES_TAG
    description = "per-token multiclass online gradient descent (Vowpal Wabbit --oaa, logistic)"

    _parameter_constraints = {
        "learning_rate": [Interval(float, 0, None, closed="neither")], "passes": [Interval(int, 1, MAX_COUNT)],
        "bits": [Interval(int, 1, 30)], "l2": [Interval(float, 0, 0.1)],
    }

    def __init__(self, learning_rate=0.1, passes=10, bits=24, l2=0.0, features=None, random_state=0):
        self._store_params(locals())

    def fit(self, documents):
        def args(labels, n_gram):
            out = ["--oaa", str(max(len(labels), 2)), "--loss_function", "logistic", "-l", str(self.learning_rate),
                   "--passes", str(int(self.passes))] + self._common_args(n_gram)
            return out + (["--l2", str(self.l2)] if self.l2 else [])

        return self._fit_vw(documents, args)

    def predict(self, documents):
        self.check_fitted()
        feats = self._extract(documents)
        K = len(self.labels_)
        examples = self._test_lines(documents, feats)

        def write(fh):
            for f, lines in zip(feats, examples):
                if f:
                    fh.write("\n".join(lines))
                    fh.write("\n")

        n = sum(len(f) for f in feats)
        K2 = max(K, 2)
        probs = np.zeros((n, K2))
        if n:
            with scratch_dir() as tmp:
                lines = vw_predict_file(self.model_, ["--probabilities"], write, tmp)
            if len(lines) != n:
                raise RuntimeError(f"ogd: Vowpal Wabbit returned {len(lines)} predictions for {n} tokens")
            # each line is "1:p1 2:p2 ... K:pK"
            values = np.array(" ".join(lines).replace(":", " ").split(), dtype=np.float64)
            if values.size != n * 2 * K2:
                raise RuntimeError(f"ogd: unexpected Vowpal Wabbit probability output ({values.size} numbers for {n} tokens)")
            values = values.reshape(n, K2, 2)
            if not np.array_equal(values[0, :, 0], np.arange(1, K2 + 1)):
                raise RuntimeError("ogd: Vowpal Wabbit probabilities are not listed by class")
            probs = values[:, :, 1]
        probs = probs[:, :K]
        ids = probs.argmax(1)
        conf = probs[np.arange(n), ids]
        out, a = [], 0
        for f in feats:
            b = a + len(f)
            out.append((ids[a:b], conf[a:b]))
            a = b
        return self._predictions(documents, self.labels_, out)
