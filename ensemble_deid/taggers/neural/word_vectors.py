"""Word vectors fitted on the training notes themselves (PPMI + truncated SVD).

Where no pre-trained vectors can be had (none for Spanish clinical text
offline here, and the licensed corpora may not leave their machine), the
training notes' own text still says which words occur in the same contexts:
months with months, cities with cities, hospital words with hospital words.
Counting that is cheap and deterministic: a co-occurrence matrix within a
window (weighted 1/distance), positive pointwise mutual information with
context-distribution smoothing (alpha 0.75), and a rank-``dim`` truncated SVD
with the singular values split evenly between words and contexts [Levy,
Goldberg and Dagan 2015, "Improving distributional similarity with lessons
learned from word embeddings", TACL 3]. Vectors are scaled to unit length,
which puts their entries on the scale of the random initialisation (about
0.1). Only the training documents' text is read, so in cross-validation each
fold's vectors come from that fold's training notes alone.

The vectors hold the notes' vocabulary, names included: they live inside
the fitted model, never in a log; ``write_vectors`` writes owner-only files.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np


def cooccurrence(sequences: Iterable[np.ndarray], n_words: int, window: int):
    """Symmetric co-occurrence counts of word ids (negative ids ignored),
    each pair at distance k counted 1/k, within each sequence only."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for ids in sequences:
        ids = np.asarray(ids, dtype=np.int64)
        for k in range(1, window + 1):
            if len(ids) <= k:
                break
            a, b = ids[:-k], ids[k:]
            keep = (a >= 0) & (b >= 0)
            a, b = a[keep], b[keep]
            rows += [a, b]
            cols += [b, a]
            vals.append(np.full(2 * len(a), 1.0 / k))
    if not vals:
        return sp.csr_matrix((n_words, n_words))
    matrix = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_words, n_words)
    )
    matrix.sum_duplicates()
    return matrix


def ppmi(counts, alpha: float = 0.75):
    """Positive PMI of a co-occurrence matrix; context probabilities raised
    to ``alpha`` (rare contexts otherwise get inflated PMI)."""
    import scipy.sparse as sp

    counts = counts.tocoo()
    total = counts.sum()
    if total <= 0:
        return sp.csr_matrix(counts.shape)
    word_p = np.asarray(counts.sum(axis=1)).ravel() / total
    context = np.asarray(counts.sum(axis=0)).ravel() ** alpha
    context_p = context / context.sum()
    pmi = np.log(counts.data / total) - np.log(word_p[counts.row]) - np.log(context_p[counts.col])
    keep = pmi > 0
    return sp.csr_matrix((pmi[keep], (counts.row[keep], counts.col[keep])), shape=counts.shape)


def fit_word_vectors(
    sequences: Sequence[Sequence[str]],
    dim: int = 100,
    window: int = 5,
    min_count: int = 2,
    alpha: float = 0.75,
    random_state: int = 0,
) -> dict[str, np.ndarray]:
    """Unit-length ``dim``-d vectors of the words seen at least ``min_count``
    times in ``sequences`` (already normalised words; one sequence per note).
    Fewer distinct words than ``dim`` leave the trailing dimensions zero;
    words whose contexts carry no information get no vector."""
    from collections import Counter

    from scipy.sparse.linalg import svds
    from threadpoolctl import threadpool_limits

    if dim < 1 or window < 1 or min_count < 1:
        raise ValueError(f"dim, window and min_count must be at least 1 (got {dim}, {window}, {min_count})")
    counts = Counter(w for seq in sequences for w in seq)
    vocab = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    if len(vocab) < 2:
        return {}
    index = {w: i for i, w in enumerate(vocab)}
    ids = (np.fromiter((index.get(w, -1) for w in seq), dtype=np.int64, count=len(seq)) for seq in sequences)
    matrix = ppmi(cooccurrence(ids, len(vocab), window), alpha)
    rank = min(dim, min(matrix.shape) - 1)
    if matrix.nnz == 0 or rank < 1:
        return {}
    # ARPACK's start vector from a seeded generator: the same notes give the same vectors.
    v0 = np.random.default_rng(random_state).uniform(-1, 1, min(matrix.shape))
    # On one BLAS thread: ARPACK's dense steps sum in an order that depends on
    # the thread count, so a fit on 2 cores and a CV worker limited to 1 thread
    # got vectors a last bit apart, and the Adam-trained members learnt from
    # them diverged (a bundle's lstm-crf-l differed from its cached run on 56
    # of 250 MEDDOCAN dev notes).
    with threadpool_limits(1):
        u, s, _ = svds(matrix.astype(np.float64), k=rank, v0=v0)
    order = np.argsort(-s)
    vectors = np.zeros((len(vocab), dim), dtype=np.float64)
    vectors[:, :rank] = u[:, order] * np.sqrt(s[order])
    # An SVD fixes each direction only up to sign: make the largest entry positive.
    signs = np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(dim)])
    vectors *= np.where(signs == 0, 1.0, signs)
    norms = np.linalg.norm(vectors, axis=1)
    return {w: (vectors[i] / norms[i]).astype(np.float32) for i, w in enumerate(vocab) if norms[i] > 0}


def write_vectors(vectors: dict[str, np.ndarray], path: str | Path) -> Path:
    """A GloVe text file (``word v1 ... vd``), owner-only, written atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        for word, vec in vectors.items():
            if not word or any(c.isspace() for c in word):
                continue  # the text format cannot hold it
            fh.write(word + " " + " ".join(f"{x:.6f}" for x in vec) + "\n")
    os.replace(tmp, path)
    return path
