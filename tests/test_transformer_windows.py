"""Sliding windows and sub-word alignment of the transformer tagger (numpy
only, hand-computed), and its availability without the optional extra."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ensemble_deid.taggers.neural.windows import (
    MAX_PIECES_PER_WORD, Specials, document_windows, owners, pad_windows, window_bounds,
)

SPECIALS = Specials(prefix=(101,), suffix=(102,), pad=0, unk=100)


def test_window_bounds_cover_every_word_with_overlap():
    # Word lengths in pieces; offsets 0 1 3 4 5 8 9 11 | 12.
    lengths = [1, 2, 1, 1, 3, 1, 2, 1]
    # capacity 16 holds everything: one window.
    assert window_bounds(lengths, 16, 8) == [(0, 8)]
    with pytest.raises(ValueError):
        window_bounds(lengths, 5, 2)  # below MAX_PIECES_PER_WORD
    # 20 words of 1 piece, capacity 16, stride 8: starts 0, 8 (ends at 16 then 20).
    assert window_bounds([1] * 20, 16, 8) == [(0, 16), (8, 20)]
    # Stride 16 = capacity: no overlap, still covering.
    assert window_bounds([1] * 20, 16, 16) == [(0, 16), (16, 20)]
    # Whole words: pieces 3 each, capacity 16 -> 5 words (15 pieces); stride 7 -> the
    # first word starting at offset >= 7 is word 3 (offset 9).
    assert window_bounds([3] * 8, 16, 7) == [(0, 5), (3, 8)]


def test_every_word_is_owned_by_its_most_central_window():
    bounds = [(0, 16), (8, 20)]
    owner = owners(bounds, 20)
    # Word 11: 11 from the first window's start, 4 from its end -> context 4;
    # in the second: 3 from its start, 8 from its end -> 3. The first keeps it.
    # Word 12: 3 vs 4 -> second window.
    assert owner[:12].tolist() == [0] * 12
    assert owner[12:].tolist() == [1] * 8


def test_document_windows_add_specials_and_map_pieces_to_words():
    pieces = [np.array([5]), np.array([6, 7]), np.array([8])]
    (w,) = document_windows(0, pieces, SPECIALS, max_length=24, stride=10)
    assert w.ids.tolist() == [101, 5, 6, 7, 8, 102]
    assert w.slots.tolist() == [-1, 0, 1, 1, 2, -1]
    assert (w.first, w.last) == (0, 3) and w.owned.all()


def test_long_note_windows_respect_max_length_and_each_word_is_owned_once():
    pieces = [np.arange(1 + i % 3) + 10 for i in range(200)]
    windows = document_windows(0, pieces, SPECIALS, max_length=40, stride=20)
    assert len(windows) > 5 and all(len(w.ids) <= 40 for w in windows)
    owned = np.zeros(200, dtype=int)
    for w in windows:
        owned[w.first:w.last] += w.owned
        # The window's pieces are exactly its words' pieces, in order.
        assert w.ids[1:-1].tolist() == np.concatenate(pieces[w.first:w.last]).tolist()
    assert owned.tolist() == [1] * 200


def test_pad_windows_numbers_word_slots_across_the_batch():
    a = document_windows(0, [np.array([5]), np.array([6, 7])], SPECIALS, 24, 10)[0]
    b = document_windows(1, [np.array([9, 9, 9])], SPECIALS, 24, 10)[0]
    ids, attention, slots, W = pad_windows([a, b], pad=0, first_piece_only=False)
    assert W == 2
    assert ids.tolist() == [[101, 5, 6, 7, 102], [101, 9, 9, 9, 102]]
    assert attention.tolist() == [[1] * 5, [1] * 5]
    assert slots.tolist() == [[-1, 0, 1, 1, -1], [-1, 2, 2, 2, -1]]
    _, _, first, _ = pad_windows([a, b], pad=0, first_piece_only=True)
    assert first.tolist() == [[-1, 0, 1, -1, -1], [-1, 2, -1, -1, -1]]


def test_word_pieces_cap_and_unknown():
    from ensemble_deid.taggers.neural.windows import word_pieces

    class Encoding:  # what tokenizers.Tokenizer.encode returns, for two words
        ids = [7] * 20 + []
        word_ids = [0] * 20

    class Tokenizer:
        def encode(self, words, is_pretokenized, add_special_tokens):
            assert is_pretokenized and not add_special_tokens
            return Encoding()

    pieces = word_pieces(Tokenizer(), ["x" * 40, "\u200b"], unk=100)
    assert len(pieces[0]) == MAX_PIECES_PER_WORD
    assert pieces[1].tolist() == [100]  # a word with no pieces reads as unknown


def test_unavailable_without_the_extra_names_the_install(monkeypatch):
    from ensemble_deid_adapters.transformer import TransformerTagger

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    ok, reason = TransformerTagger.availability()
    assert not ok
    assert "transformers" in reason and "pip install 'ensemble-deid[transformer]'" in reason
