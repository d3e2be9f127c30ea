"""Tag and token keys as sorted int64 arrays, and their matching.

A key (position, length, label) is packed into one int64:
``(global_start * width + length) * n_labels + label``, where ``width`` exceeds
every document's length, so equal keys mean equal tags (or tokens) and a
sorted key array is in document order. TP = gold ∩ system, FP = system − gold,
FN = gold − system, per document, through one ``np.searchsorted``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .options import EvaluationError
from .spans import CorpusText

_LIMIT = 2**62


@dataclass(frozen=True)
class KeySpace:
    width: int  # > any document length
    n_labels: int

    @classmethod
    def for_corpus(cls, corpus: CorpusText, n_labels: int, pad: int = 0) -> "KeySpace":
        space = cls(corpus.max_length + 1 + pad, max(int(n_labels), 1))
        if (corpus.total + 1) * space.width * space.n_labels >= _LIMIT:
            raise EvaluationError(
                "corpus too large for packed int64 keys "
                f"({corpus.total} characters x {space.width} x {space.n_labels} labels)"
            )
        return space

    def encode(self, gstart: np.ndarray, length: np.ndarray, label: np.ndarray | int) -> np.ndarray:
        return (gstart * self.width + length) * self.n_labels + label

    def label_of(self, keys: np.ndarray) -> np.ndarray:
        return keys % self.n_labels

    def start_of(self, keys: np.ndarray) -> np.ndarray:
        return keys // (self.n_labels * self.width)


@dataclass(frozen=True)
class KeySet:
    """Unique keys of one side (sorted), with each key's document and label."""

    keys: np.ndarray
    doc: np.ndarray
    label: np.ndarray

    @classmethod
    def build(cls, keys: np.ndarray, space: KeySpace, corpus: CorpusText) -> "KeySet":
        keys = sorted_unique(keys)
        return cls(keys, corpus.doc_of(space.start_of(keys)), space.label_of(keys))

    def __len__(self) -> int:
        return len(self.keys)


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` for int64 keys (sort, then drop repeats)."""
    a = np.sort(a)
    if len(a) > 1:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a


def token_pieces(gstart: np.ndarray, gend: np.ndarray, runs: tuple[np.ndarray, np.ndarray],
                 text_end: np.ndarray | None = None):
    """Tokens of each span: its intersections with the alphanumeric runs (so a
    tag cut inside a word yields a partial token). A span with no alphanumeric
    character yields one empty token where the official program puts it:
    after the text it covers, at ``start + len(TEXT[start:end])`` (its end,
    unless it reaches past ``text_end``, the global end of its text).

    Returns (token_start, token_end, index of the parent span)."""
    run_start, run_end = runs
    lo = np.searchsorted(run_end, gstart, side="right")
    hi = np.searchsorted(run_start, gend, side="left")
    n = hi - lo
    empty = n <= 0
    reps = np.where(empty, 1, n)
    total = int(reps.sum())
    parent = np.repeat(np.arange(len(gstart)), reps)
    first = np.cumsum(reps) - reps
    ridx = lo[parent] + (np.arange(total) - first[parent])
    if len(run_start):
        ridx = np.minimum(ridx, len(run_start) - 1)
        ts = np.maximum(run_start[ridx], gstart[parent])
        te = np.minimum(run_end[ridx], gend[parent])
    else:
        ts = gstart[parent].copy()
        te = ts.copy()
    e = empty[parent]
    if e.any():
        p = parent[e]
        at = gend[p] if text_end is None else np.maximum(gstart[p], np.minimum(gend[p], text_end[p]))
        ts[e] = at
        te[e] = at
    return ts, te, parent


def sorted_isin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.isin(a, b)`` for a sorted ``b``."""
    if not len(b) or not len(a):
        return np.zeros(len(a), dtype=bool)
    idx = np.searchsorted(b, a)
    idx[idx == len(b)] = len(b) - 1
    return b[idx] == a


def key_counts(gold: KeySet, system: KeySet, n_docs: int):
    """Per-document TP, FP, FN, plus the system mask of matched keys."""
    found = sorted_isin(system.keys, gold.keys)
    tp = np.bincount(system.doc[found], minlength=n_docs)
    fp = np.bincount(system.doc, minlength=n_docs) - tp
    fn = np.bincount(gold.doc, minlength=n_docs) - tp
    return tp, fp, fn, found


def grouped_key_counts(gold: KeySet, system: KeySet, found: np.ndarray, group_of_label: np.ndarray, n_groups: int,
                       n_docs: int):
    """TP, FP, FN per document and group of labels (category or subtype),
    each of shape (n_docs, n_groups)."""
    c_sys = system.doc * n_groups + group_of_label[system.label]
    c_gold = gold.doc * n_groups + group_of_label[gold.label]
    size = n_docs * n_groups
    tp = np.bincount(c_sys[found], minlength=size)
    fp = np.bincount(c_sys, minlength=size) - tp
    fn = np.bincount(c_gold, minlength=size) - tp
    shape = (n_docs, n_groups)
    return tp.reshape(shape), fp.reshape(shape), fn.reshape(shape)
