"""Sub-word pieces of the common tokens, and sliding windows over long notes.

A transformer reads sub-word pieces, at most ``max_length`` per sequence
(special tokens included); the toolkit tags its own tokens. This module
maps one onto the other, without torch:

- every common token is split into pieces by the model's tokenizer (a word
  that yields none gets the unknown piece; at most ``MAX_PIECES_PER_WORD``
  pieces are kept, enough for the first piece and a mean);
- a note's pieces are cut into windows of whole words, each at most
  ``max_length`` pieces with the model's special tokens around them; the next
  window starts at the first word ``stride`` pieces or more after the start of
  the previous one, so consecutive windows overlap by about
  ``max_length - specials - stride`` pieces;
- every word is *owned* by one window, the one where it has the most context
  on its nearer side (the "maximum context" rule of BERT's reading
  comprehension code): its prediction comes from that window only, and in
  training its loss is counted there only, so each word counts once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

# A token longer than this many pieces (a URL, a long number) keeps its first
# ones: the first piece and a mean over 16 carry the word.
MAX_PIECES_PER_WORD = 16


@dataclass(frozen=True)
class Specials:
    """The model's special pieces around a sequence, and its padding and unknown pieces."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    pad: int
    unk: int

    def __len__(self) -> int:
        return len(self.prefix) + len(self.suffix)


@dataclass
class Window:
    """One model input: ``ids`` (pieces, special ones included), ``slots``
    (per piece, the index of its word within the window, -1 for special
    pieces), words ``[first, last)`` of document ``doc``, and ``owned`` (per
    word of the window, whether this window gives that word its prediction)."""

    doc: int
    first: int
    last: int
    ids: np.ndarray
    slots: np.ndarray
    owned: np.ndarray


def word_pieces(tokenizer, words: Sequence[str], unk: int) -> list[np.ndarray]:
    """Piece ids of each word (a ``tokenizers.Tokenizer``, pre-split words)."""
    pieces: list[list[int]] = [[] for _ in words]
    if words:
        enc = tokenizer.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        for piece, w in zip(enc.ids, enc.word_ids):
            if w is not None and len(pieces[w]) < MAX_PIECES_PER_WORD:
                pieces[w].append(piece)
    return [np.asarray(p or [unk], dtype=np.int64) for p in pieces]


def window_bounds(lengths: Sequence[int], capacity: int, stride: int) -> list[tuple[int, int]]:
    """Windows ``[first, last)`` of whole words whose ``lengths`` (pieces) sum
    to at most ``capacity``; each starts at the first word ``stride`` pieces
    or more after the previous start (never past the previous window's end).
    Together they cover every word."""
    if capacity < MAX_PIECES_PER_WORD or not (1 <= stride <= capacity):
        raise ValueError(f"windows need capacity >= {MAX_PIECES_PER_WORD} and 1 <= stride <= capacity")
    n = len(lengths)
    starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])  # piece offset of each word
    bounds, first = [], 0
    while first < n:
        last = int(np.searchsorted(starts, starts[first] + capacity, side="right")) - 1
        last = min(max(last, first + 1), n)
        bounds.append((first, last))
        if last == n:
            break
        nxt = int(np.searchsorted(starts, starts[first] + stride, side="left"))
        first = min(max(nxt, first + 1), last)
    return bounds


def owners(bounds: Sequence[tuple[int, int]], n: int) -> np.ndarray:
    """For each of ``n`` words, the window that owns it: the one where the word
    is farthest from the nearer window edge (earliest window on ties)."""
    owner = np.full(n, -1, dtype=np.int64)
    best = np.full(n, -1, dtype=np.int64)
    for k, (a, b) in enumerate(bounds):
        pos = np.arange(a, b)
        context = np.minimum(pos - a, b - 1 - pos)
        better = context > best[a:b]
        best[a:b][better] = context[better]
        owner[a:b][better] = k
    return owner


def document_windows(
    doc: int, pieces: Sequence[np.ndarray], specials: Specials, max_length: int, stride: int
) -> list[Window]:
    """The windows of one document's words (``pieces`` from :func:`word_pieces`)."""
    if not pieces:
        return []
    capacity = max_length - len(specials)
    bounds = window_bounds([len(p) for p in pieces], capacity, stride)
    owner = owners(bounds, len(pieces))
    prefix = np.asarray(specials.prefix, dtype=np.int64)
    suffix = np.asarray(specials.suffix, dtype=np.int64)
    windows = []
    for k, (a, b) in enumerate(bounds):
        body = pieces[a:b]
        ids = np.concatenate([prefix, *body, suffix])
        slots = np.concatenate([
            np.full(len(prefix), -1, dtype=np.int64),
            np.repeat(np.arange(b - a, dtype=np.int64), [len(p) for p in body]),
            np.full(len(suffix), -1, dtype=np.int64),
        ])
        windows.append(Window(doc, a, b, ids, slots, owner[a:b] == k))
    return windows


def pad_windows(windows: Sequence[Window], pad: int, first_piece_only: bool):
    """Arrays for a batch: ``ids`` and ``attention`` (B, T), ``slots`` (B, T)
    numbered across the batch (word ``j`` of window ``i`` is ``i * W + j``,
    -1 for pieces that feed no word: special, padding, and with
    ``first_piece_only`` every piece after a word's first) and ``W``."""
    B = len(windows)
    T = max(len(w.ids) for w in windows)
    W = max(w.last - w.first for w in windows)
    ids = np.full((B, T), pad, dtype=np.int64)
    attention = np.zeros((B, T), dtype=np.int64)
    slots = np.full((B, T), -1, dtype=np.int64)
    for i, w in enumerate(windows):
        n = len(w.ids)
        ids[i, :n] = w.ids
        attention[i, :n] = 1
        s = w.slots.copy()
        if first_piece_only:
            repeat = np.zeros(n, dtype=bool)
            repeat[1:] = (s[1:] == s[:-1]) & (s[1:] >= 0)
            s[repeat] = -1
        slots[i, :n] = np.where(s >= 0, s + i * W, -1)
    return ids, attention, slots, W
