"""OGD: per-token multiclass online gradient descent in Vowpal Wabbit
[KIM20 Table 3: learning rate 0.1, 10 epochs].

One-against-all logistic regression (``--oaa K --loss_function logistic``)
learnt by VW's online gradient descent (its default adaptive, normalised,
invariant updates), 10 passes over a cached data file, learning rate 0.1.
Features: the shared module's, written in VW's text format with escaping;
VW hashes them (``bits``) and generates the window n-grams (``--ngram``).
Prediction runs on the model loaded in VW once per process (``VowpalModel``);
confidences are VW's probabilities (``--probabilities``: the one-against-all
logistic outputs, normalised), to the 6 digits VW prints
(``as_printed_argmax``).
"""
from __future__ import annotations

from itertools import chain

import numpy as np

from ensemble_deid.taggers.linear import FEATURES_TAG, VowpalTagger
from ensemble_deid.taggers.constraints import MAX_COUNT, MAX_RATE, Interval


class OgdTagger(VowpalTagger):
    name = "ogd"
    version = "1" + FEATURES_TAG
    description = "per-token multiclass online gradient descent (Vowpal Wabbit --oaa, logistic)"
    vw_predict_args = ("--probabilities",)

    _parameter_constraints = {
        "learning_rate": [Interval(float, 0, MAX_RATE, closed="right")], "passes": [Interval(int, 1, MAX_COUNT)],
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
        n = sum(len(f) for f in feats)
        K2 = max(K, 2)
        probs = np.zeros((n, K2))
        if n:
            model = self.vw_model()  # loaded once, kept for the next batches
            rows = model.scalars(chain.from_iterable(examples))
            if len(rows) != n or any(len(r) != K2 for r in rows):
                raise RuntimeError(f"ogd: Vowpal Wabbit returned {len(rows)} predictions for {n} tokens "
                                   f"(expected {K2} probabilities each)")
            probs = np.array(rows, dtype=np.float64)
        ids, conf = as_printed_argmax(probs[:, :K])
        out, a = [], 0
        for f in feats:
            b = a + len(f)
            out.append((ids[a:b], conf[a:b]))
            a = b
        return self._predictions(documents, self.labels_, out)


def as_printed_argmax(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's most probable class and its probability, as they were read
    from VW's ``-p`` output file before the model stayed loaded: VW prints 6
    significant digits, so two classes can tie there (the first wins) and the
    confidence is the printed value. Kept so that tags and confidences, and
    the published predictions, stay exactly what they were. Only values
    within a relative 2e-5 of a row's maximum can print as it does; those
    rows are resolved by printing them."""
    n = len(probs)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    top = probs.max(1)
    near = probs >= top[:, None] * (1 - 2e-5)
    ids = near.argmax(1)
    for r in np.flatnonzero(near.sum(1) > 1):
        printed = [float(f"{p:.6g}") for p in probs[r]]
        ids[r] = int(np.argmax(printed))  # the first of the largest
    conf = np.array([float(f"{p:.6g}") for p in top.tolist()])  # %g: C++ streams' default
    return ids, conf
