"""In-domain word vectors (PPMI + SVD) for the neural taggers: the counts and
the PMI against hand-computed values, determinism, the owner-only file, and
the tagger parameter that starts the embeddings from them."""
from __future__ import annotations

import math
import stat

import numpy as np
import pytest

pytest.importorskip("scipy")

from ensemble_deid.taggers.neural.vocab import load_embeddings  # noqa: E402
from ensemble_deid.taggers.neural.word_vectors import cooccurrence, fit_word_vectors, ppmi, write_vectors  # noqa: E402


def test_cooccurrence_counts_pairs_by_inverse_distance():
    # ids 0 1 2 0 ; window 2; -1 is an ignored (rare) word.
    counts = cooccurrence([np.array([0, 1, 2, 0]), np.array([1, -1, 2])], n_words=3, window=2).toarray()
    # distance 1: (0,1) (1,2) (2,0); distance 2: (0,2) (1,0) ; second sequence: (1,2) at distance 2.
    expected = np.zeros((3, 3))
    for a, b, w in [(0, 1, 1), (1, 2, 1), (2, 0, 1), (0, 2, 0.5), (1, 0, 0.5), (1, 2, 0.5)]:
        expected[a, b] += w
        expected[b, a] += w
    assert np.allclose(counts, expected)


def test_ppmi_by_hand():
    import scipy.sparse as sp

    counts = sp.csr_matrix(np.array([[0.0, 2.0], [2.0, 1.0]]))
    got = ppmi(counts, alpha=1.0).toarray()
    total = 5.0
    row = np.array([2.0, 3.0]) / total
    # PMI(0,1) = log((2/5) / (2/5 * 3/5)) = log(5/3) > 0; PMI(1,1) = log((1/5) / (9/25)) < 0 -> dropped.
    assert got[0, 1] == pytest.approx(math.log((2 / total) / (row[0] * row[1])))
    assert got[1, 0] == pytest.approx(math.log((2 / total) / (row[1] * row[0])))
    assert got[1, 1] == 0 and got[0, 0] == 0


def _toy_corpus(n=60, seed=0):
    """Months and towns in their own contexts."""
    rng = np.random.default_rng(seed)
    months, towns = ["enero", "marzo", "abril", "mayo"], ["soria", "lugo", "jaen", "avila"]
    seqs = []
    for _ in range(n):
        seqs.append(["el", "dia", "0", "de", rng.choice(months), "de", "0000", "ingresa", "."])
        seqs.append(["vive", "en", rng.choice(towns), ",", "provincia", "de", rng.choice(towns), "."])
    return seqs, months, towns


def test_vectors_group_words_that_share_contexts():
    seqs, months, towns = _toy_corpus()
    vectors = fit_word_vectors(seqs, dim=6, window=2)
    assert all(v.shape == (6,) and v.dtype == np.float32 for v in vectors.values())
    assert all(np.linalg.norm(v) == pytest.approx(1, abs=1e-5) for v in vectors.values())

    def sim(a, b):
        return float(vectors[a] @ vectors[b])

    within = np.mean([sim(a, b) for a in months for b in months if a < b])
    across = np.mean([sim(a, b) for a in months for b in towns])
    assert within > across + 0.3
    again = fit_word_vectors(seqs, dim=6, window=2)
    assert all(np.array_equal(vectors[w], again[w]) for w in vectors)  # deterministic


def test_rare_words_and_tiny_vocabularies():
    vectors = fit_word_vectors([["a", "b", "a", "b", "c"]], dim=10, window=1, min_count=2)
    assert set(vectors) <= {"a", "b"} and "c" not in vectors
    assert all(v.shape == (10,) for v in vectors.values())
    assert fit_word_vectors([["a"]], dim=4) == {}
    with pytest.raises(ValueError, match="at least 1"):
        fit_word_vectors([["a", "b"]], dim=0)


def test_written_file_is_owner_only_and_loads_back(tmp_path):
    seqs, _, _ = _toy_corpus(10)
    vectors = fit_word_vectors(seqs, dim=4, window=2)
    path = write_vectors(vectors, tmp_path / "vectors.txt")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = load_embeddings(path, dim=4)
    assert set(loaded) == set(vectors)
    assert all(np.allclose(loaded[w], vectors[w], atol=1e-5) for w in vectors)
    assert not list(tmp_path.glob(".*tmp"))


def test_tagger_starts_from_corpus_vectors(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchcrf")
    from ensemble_deid.taggers.neural.vocab import normalize_word
    from ensemble_deid.taggers.registry import tagger_class

    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(12)
    params = dict(epochs=1, lr=1e-9, word_dim=16, word_lstm_dim=8, char_dim=4, char_lstm_dim=4,
                  validation_fraction=0.0, context="document", corpus_vectors=True)
    tagger = tagger_class("lstm-crf-l")(**params).fit(docs)
    expected = fit_word_vectors([[normalize_word(w) for w in d.tokens.words] for d in docs], dim=16)
    emb = tagger.state_dict_["word_emb.weight"].numpy()
    for w, v in list(expected.items())[:20]:
        assert np.allclose(emb[tagger.words_.index(w)], v, atol=1e-6)

    # A vectors file takes precedence over the corpus vectors.
    word = next(iter(expected))
    path = tmp_path / "vectors.txt"
    path.write_text(f"{word} " + " ".join(["0.5"] * 16) + "\n", encoding="utf-8")
    filed = tagger_class("lstm-crf-l")(**{**params, "embeddings_path": str(path)}).fit(docs)
    row = filed.state_dict_["word_emb.weight"].numpy()[filed.words_.index(word)]
    assert np.allclose(row, 0.5)
    other = next(w for w in list(expected)[1:] if w in filed.words_)
    assert not np.allclose(filed.state_dict_["word_emb.weight"].numpy()[filed.words_.index(other)], expected[other])


def test_vectors_do_not_depend_on_the_blas_thread_count():
    """A CV worker limited to one BLAS thread and a fit on every core must
    learn from the same vectors, to the last bit: ARPACK's dense steps summed
    in a thread-dependent order, and members trained with Adam from vectors a
    last bit apart diverged (a MEDDOCAN bundle's lstm-crf-l differed from its
    cached test predictions on 56 of 250 notes)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    ids = rng.zipf(1.2, 60_000)
    ids = ids[ids <= 1000][:20_000]
    notes = [[f"w{i}" for i in ids[j:j + 200]] for j in range(0, len(ids), 200)]
    vectors = {}
    for threads in (1, 2):
        with threadpool_limits(threads):
            vectors[threads] = fit_word_vectors(notes, dim=150, random_state=0)
    assert len(vectors[1]) > 500 and vectors[1].keys() == vectors[2].keys()
    assert all(np.array_equal(vectors[1][w], vectors[2][w]) for w in vectors[1])
