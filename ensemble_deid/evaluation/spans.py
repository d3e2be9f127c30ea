"""Columnar form of documents and tags, shared by every criterion.

The texts of the scored documents are laid end to end (one NUL between two
documents) so that a tag becomes global integer offsets and the whole corpus
can be matched with a few numpy operations instead of per-tag Python work.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from functools import cached_property
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any, Sequence

import numpy as np

from .options import EvaluationError

_ATTR_GETTERS = (attrgetter("start"), attrgetter("end"), attrgetter("category", "type"))
_TUPLE_GETTERS = (itemgetter(0), itemgetter(1), itemgetter(2, 3))
# White space (str.isspace) for the character-level leak rate.
_SPACES = np.array(
    [9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
     0x2028, 0x2029, 0x202F, 0x205F, 0x3000],
    dtype=np.uint32,
)
_ASCII_NONSPACE = np.array([not chr(c).isspace() for c in range(128)], dtype=bool)
_ASCII_ALNUM = np.zeros(128, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
    _ASCII_ALNUM[_c] = True


def nonspace(codepoints: np.ndarray) -> np.ndarray:
    """Whether each code point is not white space (``str.isspace``)."""
    out = _ASCII_NONSPACE[np.minimum(codepoints, 127)]
    high = codepoints >= 128
    if high.any():
        out[high] = ~np.isin(codepoints[high], _SPACES)
    return out


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building many small tuples
    (with large corpora in memory, the collections it triggers dominate)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class CorpusText:
    """The texts of the scored documents, in a fixed order, end to end.

    ``extents`` (optional, per document) reserve room past the end of a text
    for tags that reach beyond it (files the official program scores): the
    room is NUL-filled, so such tags get no tokens and keys of their own."""

    def __init__(self, texts: Sequence[str], doc_ids: Sequence[str], extents: Sequence[int] | None = None):
        self.texts = list(texts)
        self.doc_ids = list(doc_ids)
        self.lengths = np.fromiter((len(t) for t in self.texts), dtype=np.int64, count=len(self.texts))
        self.extents = self.lengths if extents is None else np.maximum(self.lengths, np.asarray(extents, dtype=np.int64))
        # bases[d] = global offset of document d's first character; one NUL after each.
        self.bases = np.zeros(len(self.texts), dtype=np.int64)
        if len(self.texts) > 1:
            np.cumsum(self.extents[:-1] + 1, out=self.bases[1:])
        self.total = int(self.extents.sum() + len(self.texts))
        self.max_length = int(self.extents.max()) if len(self.texts) else 0

    def __len__(self) -> int:
        return len(self.texts)

    @cached_property
    def codepoints(self) -> np.ndarray:
        pads = (self.extents - self.lengths + 1).tolist()
        joined = "".join(t + "\x00" * n for t, n in zip(self.texts, pads))
        return np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    @cached_property
    def _high(self) -> np.ndarray:
        """Positions of the non-ASCII characters."""
        return np.flatnonzero(self.codepoints >= 128)

    def _alnum(self, ascii_only: bool) -> np.ndarray:
        cp = self.codepoints
        mask = _ASCII_ALNUM[np.minimum(cp, 127)]  # DEL (127) is not alphanumeric
        high = self._high
        if not ascii_only and len(high):
            values = cp[high]
            distinct = np.unique(values)
            ok = np.fromiter((chr(c).isalnum() for c in distinct.tolist()), dtype=bool, count=len(distinct))
            mask[high] = ok[np.searchsorted(distinct, values)]
        return mask

    @cached_property
    def ascii_runs(self) -> tuple[np.ndarray, np.ndarray]:
        return _runs(self._alnum(True))

    @cached_property
    def unicode_runs(self) -> tuple[np.ndarray, np.ndarray]:
        return _runs(self._alnum(False))

    def runs(self, ascii_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """Global [start, end) of every maximal alphanumeric run: the tokens of
        ``[a-zA-Z0-9]+`` (ascii_only) or ``[^\\W_]+`` over the whole corpus."""
        return self.ascii_runs if ascii_only else self.unicode_runs

    def nonspace_at(self, positions: np.ndarray) -> np.ndarray:
        """Whether the characters at these global positions are not white space."""
        return nonspace(self.codepoints[positions])

    def doc_of(self, global_offsets: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bases, global_offsets, side="right") - 1


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    edges = np.diff(np.concatenate(([False], mask, [False])).astype(np.int8))
    return np.flatnonzero(edges == 1).astype(np.int64), np.flatnonzero(edges == -1).astype(np.int64)


class LabelVocab:
    """Ids of (category, type) pairs as written (``raw``) and upper-cased."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, str], int] = {}
        self.pairs: list[tuple[str, str]] = []
        self.upper_index: dict[tuple[str, str], int] = {}
        self.upper_pairs: list[tuple[str, str]] = []
        self._to_upper: list[int] = []

    def __len__(self) -> int:
        return len(self.pairs)

    def add(self, pair: tuple[str, str]) -> int:
        i = self.index.get(pair)
        if i is None:
            i = self.index[pair] = len(self.pairs)
            self.pairs.append(pair)
            up = (str(pair[0]).upper(), str(pair[1]).upper())
            u = self.upper_index.get(up)
            if u is None:
                u = self.upper_index[up] = len(self.upper_pairs)
                self.upper_pairs.append(up)
            self._to_upper.append(u)
        return i

    def ids(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        found = list(map(self.index.get, pairs))
        if None in found:
            for pair in dict.fromkeys(p for p, i in zip(pairs, found) if i is None):
                self.add(pair)
            found = list(map(self.index.__getitem__, pairs))
        return np.array(found, dtype=np.int64)

    def to_upper(self) -> np.ndarray:
        return np.array(self._to_upper, dtype=np.int64)


class SpanTable:
    """Tags of every scored document as parallel arrays (document order)."""

    __slots__ = ("doc", "start", "end", "label", "gstart", "gend", "__dict__")

    def __init__(self, doc: np.ndarray, start: np.ndarray, end: np.ndarray, label: np.ndarray, corpus: CorpusText):
        self.doc, self.start, self.end, self.label = doc, start, end, label
        base = corpus.bases[doc] if len(doc) else np.zeros(0, dtype=np.int64)
        self.gstart = start + base
        self.gend = end + base

    def __len__(self) -> int:
        return len(self.doc)

    def select(self, mask: np.ndarray | None) -> "SpanTable":
        if mask is None:
            return self
        out = object.__new__(SpanTable)
        out.doc, out.start, out.end, out.label = self.doc[mask], self.start[mask], self.end[mask], self.label[mask]
        out.gstart, out.gend = self.gstart[mask], self.gend[mask]
        return out


def build_table(per_doc: Sequence[Sequence[Any]], corpus: CorpusText, vocab: LabelVocab, side: str,
                lenient: bool = False) -> SpanTable:
    """A SpanTable from per-document sequences of Annotation (or of
    ``(start, end, category, type)`` tuples), in corpus order; row order
    within a document is the order given (relaxed set building depends on it).

    ``lenient`` accepts what the official program scores from files:
    zero-length tags and tags reaching past the end of the text (within the
    corpus's extents)."""
    counts = list(map(len, per_doc))
    flat = list(chain.from_iterable(per_doc))
    n = len(flat)
    getters = _TUPLE_GETTERS if n and isinstance(flat[0], tuple) else _ATTR_GETTERS
    get_start, get_end, get_label = getters
    try:
        with gc_paused():
            start = np.fromiter(map(get_start, flat), np.int64, n)
            end = np.fromiter(map(get_end, flat), np.int64, n)
            label = vocab.ids(list(map(get_label, flat)))
    except (AttributeError, IndexError, TypeError) as exc:
        raise EvaluationError(f"{side}: tags must be Annotations or (start, end, category, type) tuples ({exc})") from None
    del flat
    doc = np.repeat(np.arange(len(per_doc), dtype=np.int64), counts)
    if lenient:
        bad = (start < 0) | (end < start) | (end > corpus.extents[doc])
    else:
        bad = (start < 0) | (end <= start) | (end > corpus.lengths[doc])
    if bad.any():
        ids = sorted({corpus.doc_ids[i] for i in doc[bad].tolist()})
        raise EvaluationError(
            f"{side}: {int(bad.sum())} tag(s) with offsets outside their text or {'reversed' if lenient else 'empty'}, "
            f"in document(s) {', '.join(map(repr, ids[:10]))}{' ...' if len(ids) > 10 else ''}"
        )
    return SpanTable(doc, start, end, label, corpus)
