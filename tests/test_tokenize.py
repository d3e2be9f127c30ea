"""The [LIU17] tokenizer and the newline-aware sentence splitter."""
from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ensemble_deid.corpus.tokenize import TOKENIZER_VERSION, sentence_boundaries, tokenize


def _spans(toks):
    return [(w, int(s), int(e)) for w, s, e in zip(toks.words, toks.starts, toks.ends)]


def _sentences(text):
    toks = tokenize(text)
    return [list(toks.words[a:b]) for a, b in toks.sentences()]


def test_liu17_example_words_and_offsets():
    text = "1/20/71Total time (in minutes):"
    toks = tokenize(text)
    assert list(toks.words) == ["1", "/", "20", "/", "71", "Total", "time", "(", "in", "minutes", ")", ":"]
    assert _spans(toks) == [
        ("1", 0, 1), ("/", 1, 2), ("20", 2, 4), ("/", 4, 5), ("71", 5, 7), ("Total", 7, 12),
        ("time", 13, 17), ("(", 18, 19), ("in", 19, 21), ("minutes", 22, 29), (")", 29, 30), (":", 30, 31),
    ]
    assert toks.starts.dtype == np.int32 and toks.ends.dtype == np.int32
    assert toks.sentence_ids.dtype == np.int32


def test_letter_runs_include_non_ascii_letters():
    text = "Paciente: José Muñoz-Peña, 45 años; ÁNGEL düsseldorf"
    toks = tokenize(text)
    assert list(toks.words) == [
        "Paciente", ":", "José", "Muñoz", "-", "Peña", ",", "45", "años", ";", "ÁNGEL", "düsseldorf",
    ]
    for w, s, e in _spans(toks):
        assert text[s:e] == w


def test_digit_letter_and_symbol_runs_split():
    assert list(tokenize("abc123def").words) == ["abc", "123", "def"]
    # underscore is neither a letter nor a digit: a single-character token
    assert list(tokenize("a_b").words) == ["a", "_", "b"]
    assert list(tokenize("$$12.5%").words) == ["$", "$", "12", ".", "5", "%"]
    assert list(tokenize("john@x.org").words) == ["john", "@", "x", ".", "org"]


def test_empty_and_blank_text():
    for text in ("", "   \n\t \r\n"):
        toks = tokenize(text)
        assert len(toks) == 0
        assert toks.n_sentences == 0
        assert toks.sentences() == []


def test_sentences_split_at_newlines():
    assert _sentences("Record date 2069\nPatient seen\r\nPlan rest") == [
        ["Record", "date", "2069"], ["Patient", "seen"], ["Plan", "rest"],
    ]


def test_blank_lines_make_no_empty_sentences():
    toks = tokenize("one\n\n\n\ntwo\n")
    assert toks.sentence_ids.tolist() == [0, 1]
    assert toks.n_sentences == 2


def test_sentences_split_at_period_then_capital():
    assert _sentences("He is stable. Plan to discharge. 2 tablets daily.") == [
        ["He", "is", "stable", "."], ["Plan", "to", "discharge", "."], ["2", "tablets", "daily", "."],
    ]
    assert _sentences("Is he stable? Yes! Good.") == [["Is", "he", "stable", "?"], ["Yes", "!"], ["Good", "."]]
    # closing quotes/brackets stay with their sentence
    assert _sentences('He said "fine." Then left.') == [["He", "said", '"', "fine", ".", '"'], ["Then", "left", "."]]


def test_no_split_inside_numbers_or_before_lowercase():
    assert len(_sentences("Creatinine 1.1 and A1c 7.2 today.")) == 1
    assert len(_sentences("Take 5 mg. then rest.")) == 1
    assert len(_sentences("He is fine.Plan tomorrow")) == 1  # no white space after the period


def test_sentences_split_before_non_ascii_capital():
    # Spanish (MEDDOCAN) sentences often begin with an accented capital.
    assert _sentences("Estable. Ángel vino. Él también.") == [["Estable", "."], ["Ángel", "vino", "."], ["Él", "también", "."]]


def test_sentence_boundaries_are_character_offsets():
    text = "A b.\nC d. E"
    bounds = sentence_boundaries(text)
    assert all(0 < b <= len(text) for b in bounds)
    assert bounds == sorted(bounds)
    assert bounds == [4, 5, 9]  # after ".", after "\n", after "."


def test_repr_shows_counts_not_words():
    toks = tokenize("Zacarias Quintanilla came. Left.")
    assert "Zacarias" not in repr(toks) and "Quintanilla" not in repr(toks)
    assert repr(toks) == "Tokens(n=6, sentences=2)"


def test_tokenizer_version_is_set():
    assert isinstance(TOKENIZER_VERSION, str) and TOKENIZER_VERSION


_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list(" \n\r\t.?!,;:/()-_\"'0123456789aZñÁé")),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(_TEXT)
def test_tokens_cover_every_non_space_character_once(text):
    toks = tokenize(text)
    spans = _spans(toks)
    for w, s, e in spans:
        assert text[s:e] == w
        assert w and not re.search(r"\s", w)
    for (_, _, e1), (_, s2, _) in zip(spans, spans[1:]):
        assert e1 <= s2
    # Tokens are a partition of the non-white-space characters.
    assert "".join(toks.words) == re.sub(r"\s", "", text)
    ids = toks.sentence_ids.tolist()
    assert ids == sorted(ids)
    if ids:
        assert ids[0] == 0 and set(ids) == set(range(ids[-1] + 1))
        ranges = toks.sentences()
        assert ranges[0][0] == 0 and ranges[-1][1] == len(toks)
        assert all(a < b for a, b in ranges)

