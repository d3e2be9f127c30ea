"""The common tokenization [LIU17] and a newline-aware sentence splitter.

Every tagger, the prediction cache and the meta-learners share this
tokenization: bump ``TOKENIZER_VERSION`` whenever its output can change, since
corpus fingerprints (and so every cache entry) depend on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

TOKENIZER_VERSION = "liu17-2"

# White space separates pieces; inside a piece, maximal digit runs, maximal
# letter runs (any script) and single other characters are tokens. "\S" last
# so it catches everything else one character at a time.
_TOKEN_RE = re.compile(r"\d+|[^\W\d_]+|\S")
# A sentence ends at a line break, or after . ? ! (optionally followed by
# closing quotes/brackets) when white space and a capital (of any script, so
# Spanish "Ángel" counts), a digit or a bullet follow. The character after the
# white space is captured and checked in sentence_boundaries, since Python's re
# has no class for upper-case letters beyond ASCII.
_SENTENCE_END_RE = re.compile(r"\n|[.?!][\"')\]]*(?=\s+(\S))")
_SENTENCE_OPENERS = frozenset("0123456789-*•(\"'")


@dataclass(frozen=True)
class Tokens:
    """Tokens of one text: words with character offsets and sentence ids."""

    words: tuple[str, ...]
    starts: np.ndarray  # int32, character offset of each token
    ends: np.ndarray  # int32, end offset (exclusive)
    sentence_ids: np.ndarray  # int32, index of the sentence of each token

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"Tokens(n={len(self.words)}, sentences={self.n_sentences})"

    @property
    def n_sentences(self) -> int:
        return int(self.sentence_ids[-1]) + 1 if len(self.words) else 0

    def sentences(self) -> list[tuple[int, int]]:
        """Token index ranges ``[start, end)`` of each sentence."""
        if not len(self.words):
            return []
        change = np.flatnonzero(np.diff(self.sentence_ids)) + 1
        bounds = np.concatenate(([0], change, [len(self.words)]))
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def sentence_boundaries(text: str) -> list[int]:
    """Character offsets at which a new sentence starts (excluding 0)."""
    return [
        m.end()
        for m in _SENTENCE_END_RE.finditer(text)
        if m.group(1) is None or m.group(1).isupper() or m.group(1) in _SENTENCE_OPENERS
    ]


def tokenize(text: str) -> Tokens:
    words: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for m in _TOKEN_RE.finditer(text):
        words.append(m.group())
        starts.append(m.start())
        ends.append(m.end())
    starts_a = np.asarray(starts, dtype=np.int32)
    ends_a = np.asarray(ends, dtype=np.int32)
    bounds = np.asarray(sentence_boundaries(text), dtype=np.int32)
    # A token's sentence is the number of boundaries at or before its start.
    sentence_ids = np.searchsorted(bounds, starts_a, side="right").astype(np.int32)
    if len(sentence_ids):  # renumber densely: empty sentences are skipped
        _, sentence_ids = np.unique(sentence_ids, return_inverse=True)
        sentence_ids = sentence_ids.astype(np.int32)
    return Tokens(tuple(words), starts_a, ends_a, sentence_ids)
