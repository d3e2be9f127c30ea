"""A third-party ensemble-deid tagger adapter: a token lexicon tagger.

Training counts, for every token (lower-cased), the labels it had in the gold
annotations (``O`` included). Prediction gives each token the label it most
often had, when it was seen at least ``min_count`` times and that label holds
at least ``min_share`` of its occurrences; unknown tokens are ``O``. Runs of
tokens with the same label become one span, and with ``bridge`` a single
``O`` token between two tokens of the same label joins them (so "Dr. Adams"
or "03/12/2090" stay whole although "." and "/" are mostly ``O``).

It is deliberately small, but it is a real tagger: it learns, it is
deterministic, it pickles, and its confidences are the shares it chose by.
Registered by the entry point in this package's ``pyproject.toml``::

    [project.entry-points."ensemble_deid.taggers"]
    example-lexicon = "edeid_example_adapter:LexiconTagger"
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ensemble_deid.taggers import MAX_COUNT, OUTSIDE, DocumentPrediction, Interval, Tagger, gold_tags

__all__ = ["LexiconTagger"]
__version__ = "0.1.0"


class LexiconTagger(Tagger):
    name = "example-lexicon"  # must equal the entry-point name
    version = "1"  # bump whenever the output for the same input can change
    requires = ("numpy",)  # importable modules it needs (checked by availability())
    description = "example third-party adapter: each token gets the label it most often had in training"

    # The values each parameter accepts: checked before any fold runs, so a
    # bad value is one error naming tagger, parameter and value.
    _parameter_constraints = {
        "min_count": [Interval(int, 1, MAX_COUNT)], "min_share": [Interval(float, 0, 1)],
        "lowercase": [bool], "bridge": [bool],
    }

    def __init__(self, min_count=1, min_share=0.5, lowercase=True, bridge=True):
        # The constructor only stores its arguments (scikit-learn style):
        # get_params, set_params, clone and the cache key are built from them.
        self.min_count = min_count
        self.min_share = min_share
        self.lowercase = lowercase
        self.bridge = bridge

    def _key(self, word: str) -> str:
        return word.lower() if self.lowercase else word

    def fit(self, documents):
        counts: dict[str, Counter] = {}
        for doc in documents:
            for word, tag in zip(doc.tokens.words, gold_tags(doc)):
                label = OUTSIDE if tag == OUTSIDE else tag[2:]  # drop B-/I-: labels are CATEGORY:TYPE
                counts.setdefault(self._key(word), Counter())[label] += 1
        lexicon = {}
        for word, c in counts.items():
            total = sum(c.values())
            # most frequent label; ties broken by name, so the result never
            # depends on document order
            label, n = min(c.items(), key=lambda kv: (-kv[1], kv[0]))
            if total >= self.min_count and n / total >= self.min_share:
                lexicon[word] = (label, n / total)
        self.lexicon_ = lexicon  # learned attributes end in "_": is_fitted() looks for them
        return self

    def predict(self, documents):
        self.check_fitted()  # NotFittedError before fit()
        out = []
        for doc in documents:
            found = [self.lexicon_.get(self._key(w), (OUTSIDE, 1.0)) for w in doc.tokens.words]
            labels = [label for label, _ in found]
            conf = np.array([share for _, share in found], dtype=np.float32)
            if self.bridge:
                for i in range(1, len(labels) - 1):
                    if labels[i] == OUTSIDE and labels[i - 1] != OUTSIDE and labels[i - 1] == labels[i + 1]:
                        labels[i] = labels[i - 1]
                        conf[i] = min(conf[i - 1], conf[i + 1])
            tags = []
            for i, label in enumerate(labels):
                if label == OUTSIDE:
                    tags.append(OUTSIDE)
                else:
                    tags.append(("I-" if i and labels[i - 1] == label else "B-") + label)
            # one tag per common token, confidences in [0, 1]
            out.append(DocumentPrediction(doc.id, tuple(tags), conf))
        return out
