"""The document-level consistency member (issue 29): hand-made notes for the
spreading rule, and the shared adapter contract."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_deid.taggers.constraints import InvalidParameter
from ensemble_deid.taggers.registry import make_tagger
from ensemble_deid_adapters.doc_consistency import propagate, tagged_runs

from .tagger_contract import TaggerContract


def test_tagged_runs_read_bio():
    tags = ["O", "B-NAME", "I-NAME", "I-ID", "O", "B-ID", "B-ID"]
    assert tagged_runs(tags) == [(1, 3, "NAME"), (3, 4, "ID"), (5, 6, "ID"), (6, 7, "ID")]


def test_a_tagged_string_is_tagged_at_every_other_occurrence():
    words = ["Dr", "Ana", "Pérez", "vio", "a", "Pérez", "y", "Ana", "Pérez", "."]
    tags = ["O", "B-NAME", "I-NAME", "O", "O", "O", "O", "O", "O", "O"]
    conf = np.array([0.9, 0.6, 0.8, 1, 1, 1, 1, 1, 1, 1], dtype=np.float32)
    out, new_conf = propagate(words, tags, conf, min_chars=3, proper_only=True)
    # The whole name again; "Pérez" alone was never tagged alone, so it stays.
    assert out == ["O", "B-NAME", "I-NAME", "O", "O", "O", "O", "B-NAME", "I-NAME", "O"]
    assert new_conf[7] == new_conf[8] == pytest.approx(0.7) and new_conf[5] == 1


def test_the_most_frequent_label_wins_and_tagged_tokens_stay():
    words = ["12345", "x", "12345", "y", "12345", "12345"]
    tags = ["B-ID", "O", "B-PHONE", "O", "B-ID", "O"]
    out, _ = propagate(words, tags, None, min_chars=3, proper_only=True)
    assert out == ["B-ID", "O", "B-PHONE", "O", "B-ID", "B-ID"]


def test_short_and_lowercase_strings_are_not_spread():
    words = ["mujer", "de", "40", "mujer", "40"]
    tags = ["B-SEX", "O", "B-AGE", "O", "O"]
    assert propagate(words, tags, None, min_chars=3, proper_only=True)[0] == tags
    assert propagate(words, tags, None, min_chars=2, proper_only=False)[0] == ["B-SEX", "O", "B-AGE", "B-SEX",
                                                                                 "B-AGE"]


def test_a_bad_base_is_refused_by_name():
    with pytest.raises(InvalidParameter, match="base='doc-consistency'"):
        make_tagger("doc-consistency", base="doc-consistency")
    with pytest.raises(InvalidParameter, match="base='nope'"):
        make_tagger("doc-consistency", base="nope")
    with pytest.raises(InvalidParameter, match="base_params.*max_iterations"):
        make_tagger("doc-consistency", base_params={"max_iterations": -1})


def test_it_saves_and_loads(tmp_path):
    from tests.tiny_corpus import tiny_corpus

    docs = tiny_corpus(12)
    tagger = make_tagger("doc-consistency", base_params={"max_iterations": 20}).fit(docs[:8])
    tagger.save(tmp_path / "m")
    again = type(tagger).load(tmp_path / "m")
    assert [p.tags for p in again.predict(docs[8:])] == [p.tags for p in tagger.predict(docs[8:])]


class TestDocConsistencyContract(TaggerContract):
    tagger_name = "doc-consistency"
    tagger_params = {"base_params": {"max_iterations": 50}}


def test_it_is_its_base_then_the_spreading_rule():
    # What the MEDDOCAN benchmark relies on: doc-consistency(crf) is the crf's output, spread.
    from tests.tiny_corpus import tiny_corpus

    docs = tiny_corpus(14)
    member = make_tagger("doc-consistency", base_params={"max_iterations": 20}).fit(docs[:10])
    base = make_tagger("crf", max_iterations=20).fit(docs[:10])
    for pred, base_pred, doc in zip(member.predict(docs[10:]), base.predict(docs[10:]), docs[10:]):
        tags, conf = propagate(doc.tokens.words, base_pred.tags, base_pred.confidences, 3, True)
        assert list(pred.tags) == tags and np.array_equal(pred.confidences, conf)
