"""A test-only tagger: remembers the token sequences labelled in training and
tags them wherever they recur (longest match first). ``delay`` seconds of sleep
in fit make runs slow enough to interrupt in tests."""
from __future__ import annotations

import time

import numpy as np

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.taggers.prediction import DocumentPrediction
from ensemble_deid.taggers.base import Tagger


class MemorizeTagger(Tagger):
    name = "memorize"
    version = "1"
    description = "test plugin: dictionary of training PHI token sequences"

    def __init__(self, delay=0.0, max_len=6):
        self.delay = delay
        self.max_len = max_len

    def fit(self, documents):
        time.sleep(self.delay)
        lexicon = {}
        for doc in documents:
            words = [w.lower() for w in doc.tokens.words]
            for ann in doc.annotations:
                idx = [i for i, (s, e) in enumerate(zip(doc.tokens.starts, doc.tokens.ends)) if s < ann.end and ann.start < e]
                if idx and len(idx) <= self.max_len:
                    lexicon[tuple(words[idx[0]: idx[-1] + 1])] = ann.label
        self.lexicon_ = lexicon
        return self

    def predict(self, documents):
        self.check_fitted()
        out = []
        for doc in documents:
            words = [w.lower() for w in doc.tokens.words]
            tags = ["O"] * len(words)
            conf = np.full(len(words), 0.9, dtype=np.float32)
            i = 0
            while i < len(words):
                for n in range(min(self.max_len, len(words) - i), 0, -1):
                    label = self.lexicon_.get(tuple(words[i:i + n]))
                    if label:
                        tags[i] = "B-" + label
                        tags[i + 1:i + n] = ["I-" + label] * (n - 1)
                        i += n
                        break
                else:
                    i += 1
            out.append(DocumentPrediction(doc.id, tuple(tags), conf))
        return out
