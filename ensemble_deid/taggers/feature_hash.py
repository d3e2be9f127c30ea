"""Feature strings -> hashed ids, the ids scikit-learn's
``FeatureHasher(n_features=2**31 - 1, input_type="string", alternate_sign=False)``
gives (and that fitted linear members store), without importing scikit-learn
(seconds per process) and without a Python call into it per string.

The hash is MurmurHash3 x86 32-bit, seed 0, of the string's UTF-8 bytes, as
a signed int ``h``; the id is ``abs(h) % n_features``, with ``-2**31`` mapped as
scikit-learn maps it. ``murmur3_32`` computes it with numpy for many strings
at once (block by block over the strings still that long); ``hash_rows``
builds the CSR matrix ``FeatureHasher.transform`` builds (duplicates summed,
indices sorted). Nothing is kept between calls.
"""
from __future__ import annotations

from itertools import chain
from typing import Sequence

import numpy as np
import scipy.sparse as sp

HASH_SPACE = (1 << 31) - 1  # buckets: ~200 collisions among MEDDOCAN's 937k distinct feature strings

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_M5, _N = np.uint32(5), np.uint32(0xE6546B64)
_F1, _F2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)
_TAIL_MASK = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF], dtype=np.uint32)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k(k: np.ndarray) -> np.ndarray:
    k *= _C1
    k = _rotl(k, 15)
    k *= _C2
    return k


def murmur3_32(buf: bytes, starts: np.ndarray, lens: np.ndarray, seed: int = 0) -> np.ndarray:
    """MurmurHash3_x86_32 (uint32) of the byte strings ``buf[starts[i]:starts[i] + lens[i]]``:
    numpy, vectorised over the strings."""
    lens = np.asarray(lens, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    n = len(lens)
    if not n:
        return np.zeros(0, dtype=np.uint32)
    buf = bytes(buf) + b"\x00\x00\x00\x00"
    # The little-endian 32-bit word that starts at each byte (an unaligned
    # view: nothing is copied until words are picked).
    word_at = np.ndarray((len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))
    nblocks = lens >> 2
    # Body, block by block; longest strings first, so the strings that have
    # a block j are a prefix of the order.
    most = int(nblocks.max())
    key = (most - nblocks).astype(np.uint16 if most < 1 << 16 else np.int64)  # small ints: a radix sort
    order = np.argsort(key, kind="stable")
    h = np.full(n, seed & 0xFFFFFFFF, dtype=np.uint32)
    at = starts[order]
    n_with = np.searchsorted(key[order], np.arange(most - 1, -1, -1), side="right")  # strings with a block j
    for j, m in enumerate(n_with.tolist()):
        k = _mix_k(word_at[at[:m] + 4 * j])
        hj = h[:m]
        hj ^= k
        hj[:] = _rotl(hj, 13)
        hj *= _M5
        hj += _N
    h[order] = h.copy()
    # Tail: the last len % 4 bytes, the bytes after them masked out.
    rem = lens & 3
    tail = np.flatnonzero(rem)
    if len(tail):
        k = word_at[starts[tail] + 4 * nblocks[tail]] & _TAIL_MASK[rem[tail]]
        h[tail] ^= _mix_k(k)
    # Finalisation.
    h ^= lens.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h


def hashed_ids(strings: Sequence[str]) -> np.ndarray:
    """Each string's id in ``[0, HASH_SPACE)`` (int32), as scikit-learn's
    ``FeatureHasher`` with ``n_features=HASH_SPACE`` places it."""
    n = len(strings)
    if not n:
        return np.zeros(0, dtype=np.int32)
    # One UTF-8 encoding of all the strings, NUL between them (a string with
    # a NUL of its own: each is encoded apart).
    buf = "\x00".join(strings).encode("utf-8")
    nul = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 0)
    if len(nul) == max(n - 1, 0):
        starts = np.concatenate(([0], nul + 1))
        lens = np.concatenate((nul, [len(buf)])) - starts
    else:
        encoded = [s.encode("utf-8") for s in strings]
        buf = b"".join(encoded)
        lens = np.array([len(b) for b in encoded], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(lens[:-1])))
    h = murmur3_32(buf, starts, lens).view(np.int32).astype(np.int64)
    ids = np.abs(h) % HASH_SPACE
    ids[h == -(1 << 31)] = (HASH_SPACE - (HASH_SPACE - 1)) % HASH_SPACE  # scikit-learn's value for abs(-2**31)
    return ids.astype(np.int32)


def hash_rows(token_features: Sequence[Sequence[str]]) -> sp.csr_matrix:
    """``FeatureHasher(n_features=HASH_SPACE, input_type="string",
    alternate_sign=False).transform(token_features).tocsr()``: one row per
    token, float64 counts, duplicates summed, indices sorted."""
    n = len(token_features)
    if not n:
        return sp.csr_matrix((0, HASH_SPACE), dtype=np.float64)
    lengths = np.fromiter(map(len, token_features), dtype=np.int64, count=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = hashed_ids(list(chain.from_iterable(token_features)))
    X = sp.csr_matrix((np.ones(len(indices), dtype=np.float64), indices, indptr.astype(np.int32)),
                      shape=(n, HASH_SPACE))
    X.sum_duplicates()  # as FeatureHasher: also sorts each row's indices
    return X
