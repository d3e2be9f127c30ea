"""SEARN: Vowpal Wabbit learning-to-search sequence labelling
[KIM20 Table 3: learning rate 0.05, 20 epochs].

``--search K --search_task sequence``: a left-to-right policy whose features
are the token's and the previous predicted tag(s) (``history``), trained by
learning to search against the gold sequence (Hamming loss), 20 passes over a
cached data file. Training sequences are sentences (never cutting a gold
span); prediction runs the policy over each whole document, on the model
loaded in VW once per process (``VowpalModel``). Features: the shared module's, in VW's text format with escaping; VW
hashes them (``bits``) and makes the window n-grams (``--ngram``).

``rollin``/``rollout``/``interpolation``: VW's search settings (None = VW's
default; ``interpolation="policy"`` with ``rollin``/``rollout`` ``"policy"``
is SEARN proper). The default ``rollout="none"`` (one-step deviations, no
roll-outs) trains three times faster than VW's default with the same F1 on
MEDDOCAN subsets (see docs/linear-taggers.md). No per-token confidences: the
search policy is greedy and VW reports only the chosen tag.
"""
from __future__ import annotations

import numpy as np

from ensemble_deid.taggers.linear import FEATURES_TAG, VowpalTagger
from ensemble_deid.taggers.constraints import MAX_COUNT, MAX_RATE, Interval, Options


class SearnTagger(VowpalTagger):
    name = "searn"
    version = "1" + FEATURES_TAG
    description = "learning-to-search sequence labelling (Vowpal Wabbit --search sequence)"

    # VW's --search_rollin / --search_rollout / --search_interpolation values.
    _parameter_constraints = {
        "learning_rate": [Interval(float, 0, MAX_RATE, closed="right")], "passes": [Interval(int, 1, MAX_COUNT)],
        "bits": [Interval(int, 1, 30)], "history": [Interval(int, 0, MAX_COUNT)],
        "rollin": [None, Options("policy", "learn", "oracle", "ref", "mix_per_state", "mix_per_roll")],
        "rollout": [None, Options("policy", "learn", "oracle", "ref", "mix_per_state", "mix_per_roll", "none")],
        "interpolation": [None, Options("data", "policy")],
    }

    def __init__(self, learning_rate=0.05, passes=20, bits=22, history=1, rollin=None, rollout="none",
                 interpolation=None, features=None, random_state=0):
        self._store_params(locals())

    def fit(self, documents):
        def args(labels, n_gram):
            out = ["--search", str(max(len(labels), 2)), "--search_task", "sequence",
                   "--search_history_length", str(int(self.history)),
                   "-l", str(self.learning_rate), "--passes", str(int(self.passes))] + self._common_args(n_gram)
            for opt, value in (("--search_rollin", self.rollin), ("--search_rollout", self.rollout),
                               ("--search_interpolation", self.interpolation)):
                if value is not None:
                    out += [opt, str(value)]
            return out

        return self._fit_vw(documents, args, sequence_end="\n\n")  # sequences end with a blank line

    def predict(self, documents):
        self.check_fitted()
        feats = self._extract(documents)
        todo = [i for i, f in enumerate(feats) if f]
        examples = self._test_lines(documents, feats)

        model = self.vw_model() if todo else None  # loaded once, kept for the next batches
        K = len(self.labels_)
        results = [(np.zeros(0, dtype=np.int64), None)] * len(documents)
        for i in todo:
            ids = np.array(model.sequence_labels(examples[i]), dtype=np.int64) - 1
            if len(ids) != len(feats[i]):
                raise RuntimeError(
                    f"searn: document {documents[i].id!r}: {len(ids)} tags for {len(feats[i])} tokens"
                )
            results[i] = (np.clip(ids, 0, K - 1), None)
        return self._predictions(documents, self.labels_, results)
