"""A feature view apart from [LIU17]'s: character n-grams and word shapes only.

    fx = CharFeatureExtractor()                 # n-grams of 2..4 characters, context +-1, shapes +-2
    feats = fx.document_features(doc)           # one list of feature strings per token

It shares only the word shapes with the [LIU17] set; no feature names a
whole word, a word n-gram, a gazetteer, a section or a regular expression: a CRF trained on this view errs where the word-level members do
not (a misspelt name, an unseen street), which is what an ensemble needs from
another member. Character n-grams are taken of the lowercased token with ``^``
and ``$`` marking its ends; a token of up to ``max_n - 2`` characters is then
one n-gram of itself, so short words are not hidden, only never named as
words. Neighbours contribute their n-grams of one length (``context_n``) under
their offset, and shapes (``Aa``, ``0``, ``.``) reach ``shape_window`` tokens
either side.
"""
from __future__ import annotations

from typing import Any

from ..corpus.document import Document
from .features import _shape, _short_shape

CHAR_FEATURES_VERSION = "1"


def char_ngrams(word: str, sizes: range) -> list[str]:
    """The character n-grams of ``^word$`` (lowercased), longest last, repeats kept once."""
    marked = "^" + word.lower() + "$"
    seen: dict[str, None] = {}
    for n in sizes:
        for i in range(max(len(marked) - n + 1, 0)):
            seen.setdefault(marked[i:i + n], None)
    return list(seen)


class CharFeatureExtractor:
    """Character n-gram and shape features of each common token.

    Parameters:
        min_n, max_n: n-gram lengths of the token itself.
        context: neighbours either side whose n-grams are features.
        context_n: the n-gram length taken of a neighbour.
        shape_window: neighbours either side whose short shape is a feature.
    """

    def __init__(self, min_n: int = 2, max_n: int = 4, context: int = 1, context_n: int = 3, shape_window: int = 2):
        if not 1 <= min_n <= max_n:
            raise ValueError(f"need 1 <= min_n <= max_n, got {min_n}, {max_n}")
        if context < 0 or shape_window < 0 or context_n < 1:
            raise ValueError("context and shape_window must be >= 0 and context_n >= 1")
        self.min_n, self.max_n = int(min_n), int(max_n)
        self.context, self.context_n, self.shape_window = int(context), int(context_n), int(shape_window)
        self._cache: dict[str, tuple[list[str], str, str]] = {}

    def get_config(self) -> dict[str, Any]:
        return {"min_n": self.min_n, "max_n": self.max_n, "context": self.context, "context_n": self.context_n,
                "shape_window": self.shape_window, "version": CHAR_FEATURES_VERSION}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    def _entry(self, word: str) -> tuple[list[str], list[str], str, str]:
        entry = self._cache.get(word)
        if entry is None:
            long = _shape(word)
            own = ["c=" + g for g in char_ngrams(word, range(self.min_n, self.max_n + 1))]
            ctx = char_ngrams(word, range(self.context_n, self.context_n + 1)) or ["^" + word.lower() + "$"]
            entry = (own, ctx, long[:12], _short_shape(long))
            if len(self._cache) > 400_000:  # bounded like the word extractor's cache
                self._cache.clear()
            self._cache[word] = entry
        return entry

    def document_features(self, doc: Document) -> list[list[str]]:
        words = doc.tokens.words
        n = len(words)
        entries = [self._entry(w) for w in words]
        out = []
        for i, (own, _, long, short) in enumerate(entries):
            feats = ["bias", "shape=" + long, "sh[0]=" + short, *own]
            for k in range(1, self.context + 1):
                for sign in (-1, 1):
                    j = i + sign * k
                    tag = f"c[{sign * k}]="
                    if 0 <= j < n:
                        feats.extend(tag + g for g in entries[j][1])
                    else:
                        feats.append(tag + ("<s>" if j < 0 else "</s>"))
            for k in range(1, self.shape_window + 1):
                for sign in (-1, 1):
                    j = i + sign * k
                    feats.append(f"sh[{sign * k}]=" + (entries[j][3] if 0 <= j < n else "<b>"))
            if i:
                feats.append("sh[-1]|sh[0]=" + entries[i - 1][3] + "|" + short)
            out.append(feats)
        return out
