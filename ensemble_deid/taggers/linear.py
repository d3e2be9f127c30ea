"""Shared machinery of the linear and structured taggers (MEMM, SEARN, MIRA,
SVM, OGD, structural SVM): everything they have in common, so that each
adapter in ``adapters/`` only says how its model is trained and decoded.

- ``LinearTagger``: the base class. Features come from the shared
  ``FeatureExtractor`` (``features`` parameter: its keyword arguments);
  ``_extract`` gives one list of feature strings per token of each document.
- ``LabelIndex``: BIO tags <-> integer ids (``O`` is always id 0).
- ``FeatureIndex``: feature strings -> columns of a scipy CSR matrix
  (murmurhash of the string as scikit-learn's ``FeatureHasher`` places it,
  ``feature_hash.hash_rows``, then the hashed ids seen in training, at least
  ``min_count`` times, get compact columns; others are dropped).
- ``viterbi`` / ``decode_chains``: first-order Viterbi, vectorised over labels
  (``decode_chains`` also over sequences), for a linear chain (scores add up)
  or for a locally normalised chain (MEMM: ``log softmax`` of each step's scores
  given the previous label); per-token confidences (forward marginals for a
  MEMM, max-marginal margins for a linear chain).
- ``training_chunks``: sentence-sized training sequences that never cut a gold
  span (1.6 % of MEDDOCAN's spans cross a sentence boundary of the common
  splitter, e.g. after "Dr."); prediction decodes whole documents.
- Vowpal Wabbit helpers (text format with escaping, file training with a
  cache, model kept as bytes and loaded once per process for prediction) and
  a python-crfsuite helper (model kept as bytes).

Nothing here prints note text: errors name documents by id and count tokens.
"""
from __future__ import annotations

import importlib.util
import os
import re
import tempfile
from contextlib import contextmanager
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from ..corpus.bio import OUTSIDE, gold_tags
from ..corpus.document import Document
from .feature_hash import HASH_SPACE, hash_rows
from .features import FEATURES_VERSION, FeatureExtractor, vw_escape
from .prediction import DocumentPrediction
from .base import Tagger, TaggerUnavailable
from ..errors import EnsembleDeidError
from ..files import FileWriteError, reason
from .crfsuite_file import check_crfsuite_model
from .state import bytes_file_name, register_state_class

LINEAR_VERSION = "1"
# Adapter versions: bump the first part when a tagger's output changes; the
# shared features' version is part of it, as in the CRF adapter.
FEATURES_TAG = "-f" + FEATURES_VERSION


# --- labels ------------------------------------------------------------------------

@register_state_class
class LabelIndex:
    """BIO tags <-> ids. ``O`` is id 0; the others follow in sorted order."""

    def __init__(self, tags: Iterable[str]):
        others = sorted(set(tags) - {OUTSIDE})
        self.labels: tuple[str, ...] = (OUTSIDE,) + tuple(others)
        self._ids = {t: i for i, t in enumerate(self.labels)}

    @classmethod
    def from_documents(cls, documents: Sequence[Document]) -> "LabelIndex":
        return cls(chain.from_iterable(gold_tags(d) for d in documents))

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        return f"LabelIndex(n={len(self.labels)})"

    def encode(self, tags: Sequence[str]) -> np.ndarray:
        try:
            return np.fromiter((self._ids[t] for t in tags), dtype=np.int64, count=len(tags))
        except KeyError as exc:  # a tag never seen in training
            raise ValueError(f"tag {exc.args[0]!r} is not among the {len(self.labels)} training labels") from None

    def decode(self, ids: Iterable[int]) -> tuple[str, ...]:
        labels = self.labels
        return tuple(labels[i] for i in ids)

    def __getstate__(self):
        return {"labels": self.labels}

    def __setstate__(self, state):
        self.labels = tuple(state["labels"])
        self._ids = {t: i for i, t in enumerate(self.labels)}


# --- sparse features -----------------------------------------------------------------

@register_state_class
class FeatureIndex:
    """Feature strings -> compact columns of a CSR matrix (one row per token).

    ``fit_transform`` keeps the hashed features seen at least ``min_count``
    times; ``transform`` drops features not kept. Values are occurrence counts
    (1 for nearly every feature)."""

    def __init__(self, min_count: int = 1):
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        self.min_count = int(min_count)
        self.columns: np.ndarray | None = None  # sorted hashed ids of the kept features
        self._slots: tuple | None = None  # (columns, mask, table): built on first use, never saved

    def __getstate__(self) -> dict:
        return {"min_count": self.min_count, "columns": self.columns}

    def __setstate__(self, state: dict) -> None:
        columns = state["columns"]
        if columns is not None:  # what fit makes: np.unique's ids of the hash space (a bundle may say otherwise)
            columns = np.asarray(columns)
            if columns.ndim != 1 or columns.dtype.kind not in "iu" or (
                    len(columns) and (columns[0] < 0 or columns[-1] >= HASH_SPACE or np.any(columns[1:] <= columns[:-1]))):
                raise ValueError("FeatureIndex columns are not increasing ids of the hash space")
        self.min_count = state["min_count"]
        self.columns = columns
        self._slots = None

    @property
    def n_features(self) -> int:
        if self.columns is None:
            raise ValueError("FeatureIndex is not fitted")
        return len(self.columns)

    def __repr__(self) -> str:
        n = "unfitted" if self.columns is None else len(self.columns)
        return f"FeatureIndex(min_count={self.min_count}, n_features={n})"

    @staticmethod
    def hash(token_features: Sequence[Sequence[str]]) -> sp.csr_matrix:
        """Rows of hashed features over the whole hash space (what ``compact``
        takes): the same for every index, so members may share it."""
        return hash_rows(token_features)

    def fit_transform(self, token_features: Sequence[Sequence[str]]) -> sp.csr_matrix:
        hashed = self.hash(token_features)
        ids, counts = np.unique(hashed.indices, return_counts=True)
        self.columns = ids[counts >= self.min_count].astype(np.int64)
        return self._compact(hashed)

    def transform(self, token_features: Sequence[Sequence[str]]) -> sp.csr_matrix:
        if self.columns is None:
            raise ValueError("FeatureIndex is not fitted")
        return self._compact(self.hash(token_features))

    def compact(self, hashed: sp.csr_matrix) -> sp.csr_matrix:
        """``transform`` of features already hashed (``hash``)."""
        if self.columns is None:
            raise ValueError("FeatureIndex is not fitted")
        return self._compact(hashed)

    def _compact(self, hashed: sp.csr_matrix) -> sp.csr_matrix:
        n_rows = hashed.shape[0]
        pos = self._positions(hashed.indices)
        valid = pos >= 0
        rows = np.repeat(np.arange(n_rows), np.diff(hashed.indptr))[valid]
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
        out = sp.csr_matrix(
            (hashed.data[valid], pos[valid].astype(np.int32), indptr), shape=(n_rows, len(self.columns))
        )
        out.sort_indices()
        return out

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        """Each hashed id's column (its position in ``columns``), -1 for an
        id not kept. A hash table (open addressing on the ids' low bits, a
        quarter full) rather than a binary search of every id in the
        million columns: a few gathers per id instead of twenty."""
        cols = self.columns
        if getattr(self, "_slots", None) is None or self._slots[0] is not cols:
            self._slots = (cols, _slot_table(cols))
        built = self._slots[1]
        if built is None:  # ids crowded on a few slots (a crafted bundle's): the binary search instead
            pos = np.searchsorted(cols, ids)
            inside = pos < len(cols)
            inside[inside] = cols[pos[inside]] == ids[inside]
            return np.where(inside, pos, -1)
        mask, table = built
        slot = ids & mask
        found = table[slot]
        pos = np.full(len(ids), -1, dtype=np.int64)
        taken = found >= 0
        hit = taken.copy()
        hit[taken] = cols[found[taken]] == ids[taken]
        pos[hit] = found[hit]
        todo = np.flatnonzero(taken & ~hit)  # home slot held by another id: probe the next ones
        slot = slot[todo]
        for _ in range(MAX_PROBES):  # every kept id sits within MAX_PROBES slots of its home: past that, absent
            if not len(todo):
                break
            slot = (slot + 1) & mask
            found = table[slot]
            taken = found >= 0
            hit = taken.copy()
            hit[taken] = cols[found[taken]] == ids[todo[taken]]
            pos[todo[hit]] = found[hit]
            more = taken & ~hit
            todo, slot = todo[more], slot[more]
        return pos


MAX_PROBES = 64  # a quarter-full table of uniform ids needs a handful; more means crowded ids


def _slot_table(cols: np.ndarray) -> tuple[int, np.ndarray] | None:
    """(mask, table) of :meth:`FeatureIndex._positions`: column ``i`` sits in
    the first free slot from ``cols[i] & mask`` on (hashed ids are uniform
    in their low bits). None when some id would sit more than MAX_PROBES
    slots from its home: columns read from a bundle are untrusted, and ids
    crowded on one slot would make this and every lookup quadratic."""
    mask = (1 << (len(cols).bit_length() + 2)) - 1
    table = np.full(mask + 1, -1, dtype=np.int32)
    keys = np.arange(len(cols), dtype=np.int32)
    slot = cols & mask
    for _ in range(MAX_PROBES + 1):  # each round, every slot still free takes one of the ids that reach it
        if not len(keys):
            return mask, table
        free = table[slot] < 0
        table[slot[free]] = keys[free]
        left = table[slot] != keys
        keys, slot = keys[left], (slot[left] + 1) & mask
    return (mask, table) if not len(keys) else None


def sparse_scores(X: sp.csr_matrix, weights: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """``np.asarray(X @ weights, dtype=np.float64)``, reading only the weight
    rows that ``X`` uses: scipy would convert the whole (features x labels)
    float32 matrix to float64 for every batch of notes first. The same
    products are summed in the same order: the same scores. ``weights`` may
    be a CSR matrix (mostly zeros, as an SVM's): its used rows are made
    dense first, so again the same scores."""
    seen = np.zeros(X.shape[1], dtype=bool)  # np.unique(X.indices, return_inverse=True) without a sort
    seen[X.indices] = True
    used = np.flatnonzero(seen)
    inverse = (np.cumsum(seen, dtype=np.int64) - 1)[X.indices]
    X_used = sp.csr_matrix((X.data, inverse.astype(X.indices.dtype), X.indptr), shape=(X.shape[0], len(used)))
    rows = weights[used]
    if sp.issparse(rows):
        rows = rows.toarray()
    return np.asarray(X_used @ np.asarray(rows, dtype=np.float64), dtype=np.float64)


def offsets_of(lengths: Sequence[int]) -> np.ndarray:
    """[0, l0, l0 + l1, ...]: where each document's rows start in a stacked matrix."""
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


# --- sequences -------------------------------------------------------------------------

def training_chunks(document: Document, tags: Sequence[str] | None = None) -> list[tuple[int, int]]:
    """Token ranges ``[a, b)`` for training sequence models: the sentences of
    the common splitter, merged where a gold span runs across a boundary (a
    sentence whose first tag is ``I-``), so no chunk starts inside a span."""
    tags = gold_tags(document) if tags is None else tags
    chunks: list[tuple[int, int]] = []
    for a, b in document.tokens.sentences():
        if chunks and tags[a].startswith("I-"):
            chunks[-1] = (chunks[-1][0], b)
        else:
            chunks.append((a, b))
    return chunks


# --- Viterbi -------------------------------------------------------------------------------

def _log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    z = x - m
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def path_score(unary: np.ndarray, transitions: np.ndarray, path: Sequence[int],
               start: np.ndarray | None = None, local: bool = False) -> float:
    """The score ``viterbi`` maximises, for one given path (see ``viterbi``)."""
    path = list(path)
    total = 0.0
    prev_row = np.zeros(unary.shape[1]) if start is None else start
    for t, k in enumerate(path):
        row = unary[t] + prev_row
        total += float(_log_softmax(row)[k] if local else row[k])
        prev_row = transitions[k]
    return total


def viterbi(unary: np.ndarray, transitions: np.ndarray, start: np.ndarray | None = None,
            local: bool = False) -> tuple[np.ndarray, float]:
    """Best label path of one sequence and its score.

    ``unary`` (T, K): per-token label scores; ``transitions`` (K, K): score of
    label k after label j (``[j, k]``); ``start`` (K,): score of the first
    label (0 if None).

    - ``local=False`` (linear chain: CRF, MIRA, structural SVM): the score of
      a path is ``start[y0] + sum_t unary[t, y_t] + sum_t transitions[y_t-1, y_t]``.
    - ``local=True`` (MEMM): each step is normalised given the previous
      label: the score is ``sum_t log softmax(unary[t] + prev_row)[y_t]`` with
      ``prev_row = start`` at t = 0 and ``transitions[y_t-1]`` after.
    """
    unary = np.asarray(unary, dtype=np.float64)
    T, K = unary.shape
    if T == 0:
        return np.zeros(0, dtype=np.int64), 0.0
    start = np.zeros(K) if start is None else np.asarray(start, dtype=np.float64)
    transitions = np.asarray(transitions, dtype=np.float64)
    back = np.zeros((T, K), dtype=np.int64)
    if local:
        score = _log_softmax(unary[0] + start)
        # log P(k | j) for every (j, k): rows are previous labels
        for t in range(1, T):
            cand = score[:, None] + _log_softmax(unary[t][None, :] + transitions, axis=1)
            back[t] = cand.argmax(0)
            score = cand[back[t], np.arange(K)]
    else:
        score = unary[0] + start
        for t in range(1, T):
            cand = score[:, None] + transitions
            back[t] = cand.argmax(0)
            score = cand[back[t], np.arange(K)] + unary[t]
    path = np.empty(T, dtype=np.int64)
    path[-1] = int(score.argmax())
    best = float(score[path[-1]])
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path, best


def _pair_log_normalizers(U: np.ndarray, transitions: np.ndarray) -> np.ndarray:
    """``lz[t, j] = log sum_k exp(U[t, k] + transitions[j, k])`` for all t, j."""
    mu = U.max(1, keepdims=True)
    mt = transitions.max(1, keepdims=True)
    with np.errstate(divide="ignore"):
        lz = np.log(np.exp(U - mu) @ np.exp(transitions - mt).T) + mu + mt.T
    bad = ~np.isfinite(lz).all(1)
    if bad.any():  # underflow (extreme scores): the exact, slower way for those rows
        rows = U[bad][:, None, :] + transitions[None, :, :]
        m = rows.max(2, keepdims=True)
        lz[bad] = (np.log(np.exp(rows - m).sum(2, keepdims=True)) + m)[:, :, 0]
    return lz


def loss_augmented_viterbi(unary: np.ndarray, transitions: np.ndarray, gold: Sequence[int],
                           start: np.ndarray | None = None, cost: float = 1.0) -> tuple[np.ndarray, float]:
    """``argmax_y score(y) + cost * hamming(y, gold)`` (margin rescaling with
    Hamming loss): Viterbi on the unary scores plus ``cost`` for every label
    that differs from the gold one. Returns the path and its augmented score."""
    aug = np.array(unary, dtype=np.float64, copy=True)
    aug += cost
    gold = np.asarray(gold, dtype=np.int64)
    aug[np.arange(len(gold)), gold] -= cost
    return viterbi(aug, transitions, start)


def decode_chains(unaries: Sequence[np.ndarray], transitions: np.ndarray, start: np.ndarray | None = None,
                  local: bool = False, confidences: bool = True) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """``viterbi`` for many sequences at once (vectorised over sequences as well
    as labels: one numpy step per position of the longest sequence).

    Returns (path, confidences) per sequence. Confidences, in [0, 1]:
    - ``local=True`` (MEMM): the model's marginal probability of the chosen
      label, ``P(y_t = path_t | x)``, by the forward algorithm over the local
      distributions (exact for a directed chain);
    - ``local=False``: ``sigmoid`` of the max-marginal margin, the best score
      of a path through the chosen label minus the best through any other label
      at that token (uncalibrated; 0.5 = a tie).
    """
    unaries = [np.asarray(u, dtype=np.float64) for u in unaries]
    out: list[tuple[np.ndarray, np.ndarray | None]] = [None] * len(unaries)  # type: ignore[list-item]
    K = transitions.shape[1]
    start = np.zeros(K) if start is None else np.asarray(start, dtype=np.float64)
    transitions = np.asarray(transitions, dtype=np.float64)
    lengths = np.array([len(u) for u in unaries], dtype=np.int64)
    for i in np.flatnonzero(lengths == 0):
        out[i] = (np.zeros(0, dtype=np.int64), np.zeros(0) if confidences else None)
    order = np.argsort(-lengths, kind="stable")
    order = order[lengths[order] > 0]
    if not len(order):
        return out
    lens = lengths[order]
    U = np.concatenate([unaries[i] for i in order])  # (N, K), sequences back to back
    offs = offsets_of(lens)[:-1]
    # lens is sorted in decreasing order: the sequences longer than t are a prefix
    n_active = np.searchsorted(-lens, -np.arange(int(lens[0])), side="left")
    N = len(U)
    B = len(order)
    back = np.zeros((N, K), dtype=np.int32)
    ar = np.arange(K)
    fwd = np.zeros((N, K)) if (confidences and local) else None
    alpha = np.zeros((N, K)) if (confidences and not local) else None
    rows = offs.copy()
    if local:
        # log P(k | j, x_t) = U[t, k] + transitions[j, k] - lz[t, j]: the
        # normaliser of every (token, previous label) pair by one matrix
        # product, so each step costs what a linear-chain step costs.
        lz = _pair_log_normalizers(U, transitions)
        score = _log_softmax(U[rows] + start)
        if fwd is not None:
            fwd[rows] = np.exp(score)
            t_max = transitions.max()
            e_trans = np.exp(transitions - t_max)
    else:
        trans_t = np.ascontiguousarray(transitions.T)
        score = U[rows] + start
        if alpha is not None:
            alpha[rows] = score
    for t in range(1, int(lens[0])):
        na = int(n_active[t])
        r = offs[:na] + t
        s = score[:na]
        if local:
            cand = (s - lz[r])[:, :, None] + transitions[None, :, :]
            arg = cand.argmax(1)
            score[:na] = np.take_along_axis(cand, arg[:, None, :], axis=1)[:, 0, :] + U[r]
            if fwd is not None:
                # fwd[t, k] = sum_j fwd[t-1, j] exp(U[t, k] + transitions[j, k] - lz[t, j])
                with np.errstate(divide="ignore"):
                    a = np.log(fwd[r - 1]) - lz[r]
                ma = a.max(1, keepdims=True)
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    new = np.exp(np.log(np.exp(a - ma) @ e_trans) + U[r] + ma + t_max)
                bad = ~(np.abs(new.sum(1) - 1.0) < 1e-6)  # under/overflow (extreme scores): exactly
                if bad.any():
                    z = a[bad][:, :, None] + transitions[None, :, :]
                    mz = z.max(1, keepdims=True)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        z = np.log(np.exp(z - mz).sum(1)) + mz[:, 0, :] + U[r][bad]
                    new[bad] = softmax(z)
                fwd[r] = new
        else:
            # cand[b, k, j] = s[b, j] + transitions[j, k]: the previous label on
            # the last, contiguous axis (the same sums, ties to the lowest j)
            cand = s[:, None, :] + trans_t[None, :, :]
            arg = cand.argmax(2)
            score[:na] = cand.max(2) + U[r]
            if alpha is not None:
                alpha[r] = score[:na]
        back[r] = arg
    # backtrack, all sequences together
    paths = np.zeros(N, dtype=np.int64)
    cur = score.argmax(1)
    for t in range(int(lens[0]) - 1, -1, -1):
        na = int(n_active[t])
        r = offs[:na] + t
        paths[r] = cur[:na]
        if t > 0:
            cur[:na] = back[r, cur[:na]]
    conf = None
    if confidences and local:
        conf = fwd[np.arange(N), paths]
    elif confidences:
        # backward max-product: beta[t, j] = max_k transitions[j, k] + U[t+1, k] + beta[t+1, k]
        beta = np.zeros((N, K))
        for t in range(int(lens[0]) - 2, -1, -1):
            na = int(n_active[t + 1])  # sequences that have a token t + 1
            r = offs[:na] + t
            nxt = U[r + 1] + beta[r + 1]
            beta[r] = (transitions[None, :, :] + nxt[:, None, :]).max(2)
        mm = alpha + beta
        chosen = mm[np.arange(N), paths]
        mm[np.arange(N), paths] = -np.inf
        margin = chosen - mm.max(1) if K > 1 else np.full(N, np.inf)
        conf = 1.0 / (1.0 + np.exp(-np.clip(margin, -50, 50)))
    bounds = offsets_of(lens)
    for b, i in enumerate(order):
        a, z = bounds[b], bounds[b + 1]
        out[i] = (paths[a:z].copy(), None if conf is None else conf[a:z].copy())
    return out


def margin_confidence(scores: np.ndarray) -> np.ndarray:
    """``sigmoid(best - second best)`` per row of a (n, K) score matrix: an
    uncalibrated confidence in [0.5, 1] for one-vs-rest margins."""
    if scores.shape[1] < 2:
        return np.ones(scores.shape[0])
    top2 = -np.partition(-scores, 1, axis=1)[:, :2]
    return 1.0 / (1.0 + np.exp(-np.clip(top2[:, 0] - top2[:, 1], -50, 50)))


# --- the base class ------------------------------------------------------------------------

class LinearTagger(Tagger):
    """Base of the linear taggers: feature extraction, labels, predictions.

    Subclasses keep their constructors explicit (scikit-learn style) and store
    a ``features`` parameter: ``None`` for the shared extractor's defaults, or a
    dict of ``FeatureExtractor`` keyword arguments."""

    features: dict[str, Any] | None = None

    def _require(self) -> None:
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            raise TaggerUnavailable(
                f"tagger {self.name!r} needs {', '.join(missing)}: pip install "
                + " ".join(_PIP_NAMES.get(m, m) for m in missing)
            )

    def _extractor(self, **overrides: Any) -> FeatureExtractor:
        params = dict(self.features or {})
        params.update(overrides)
        return FeatureExtractor(**params)

    def _extract(self, documents: Sequence[Document], **overrides: Any) -> list[list[list[str]]]:
        fx = getattr(self, "extractor_", None)
        if fx is None or overrides:
            fx = self._extractor(**overrides)
        return [fx.document_features(d) for d in documents]

    def _design(self, documents: Sequence[Document]) -> tuple[sp.csr_matrix, list[int]]:
        """The documents' tokens as rows over the fitted ``index_``'s columns,
        stacked, and each document's token count. An extractor shared with
        other members (``deid.model.SharedFeatures``) hashes each document's
        features once for all of them."""
        hashed = getattr(getattr(self, "extractor_", None), "document_hashed", None)
        if hashed is None or not documents:
            feats = self._extract(documents)
            return self.index_.transform(list(chain.from_iterable(feats))), [len(f) for f in feats]
        blocks = [hashed(d) for d in documents]
        return self.index_.compact(sp.vstack(blocks, format="csr")), [b.shape[0] for b in blocks]

    # Saving: the feature extractor is rebuilt from the parameters, not stored.
    def _extractor_overrides(self) -> dict[str, Any]:
        return {}

    def _fitted_state(self) -> dict[str, Any]:
        state = super()._fitted_state()
        state.pop("extractor_", None)
        return state

    def _restore_state(self, state: dict[str, Any]) -> None:
        super()._restore_state(state)
        self.extractor_ = self._extractor(**self._extractor_overrides())

    @staticmethod
    def _predictions(documents: Sequence[Document], labels: LabelIndex,
                     results: Sequence[tuple[np.ndarray, np.ndarray | None]]) -> list[DocumentPrediction]:
        out = []
        for doc, (ids, conf) in zip(documents, results):
            if len(ids) != len(doc.tokens):
                raise RuntimeError(f"document {doc.id!r}: {len(ids)} tags for {len(doc.tokens)} tokens")
            c = None if conf is None else np.clip(np.asarray(conf, dtype=np.float32), 0.0, 1.0)
            out.append(DocumentPrediction(doc.id, labels.decode(ids), c))
        return out

    @staticmethod
    def _check_training(documents: Sequence[Document], who: str) -> None:
        if not documents or not any(len(d.tokens) for d in documents):
            raise ValueError(f"{who}: no training tokens (got {len(documents)} documents)")

    def _training_features(self, documents: Sequence[Document], **overrides: Any) -> list:
        """The start of every fit: the library is there and there are tokens
        to learn from; then the extractor (``overrides`` on the tagger's
        features) and each training document's token features."""
        self._require()
        self._check_training(documents, self.name)
        self.extractor_ = self._extractor(**overrides)
        return self._extract(documents)


_PIP_NAMES = {"sklearn": "scikit-learn", "pycrfsuite": "python-crfsuite", "vowpalwabbit": "vowpalwabbit"}


# --- Vowpal Wabbit ----------------------------------------------------------------------------

_VW_SPECIAL = re.compile(r"[\\:| \t\n\r]")  # what vw_escape rewrites


def vw_join(features: Sequence[str]) -> str:
    """``" ".join(vw_escape(f) for f in features)``, escaping the joined string
    once instead of each feature (the common case has nothing to escape)."""
    joined = "\x00".join(features)
    if joined.count("\x00") != max(len(features) - 1, 0):  # a NUL inside a feature: the slow way
        return " ".join(vw_escape(f) for f in features)
    if _VW_SPECIAL.search(joined):
        joined = vw_escape(joined)  # leaves the NUL separators alone
    return joined.replace("\x00", " ")


def _is_window_word(feature: str) -> bool:
    return feature.startswith("w[") and "|" not in feature.partition("=")[0]


def vw_token_line(features: Sequence[str], label: int | None = None, n_window: int | None = None) -> str:
    """One token as a line of VW's text format: ``[label] |w <window words> |f <other features>``.

    Feature strings are escaped (``vw_escape``: backslash, ``:``, ``|`` and
    white space), so each stays one VW feature whatever it contains; VW hashes
    them itself. The window unigrams ``w[k]=...`` (in window order) go to
    namespace ``w``, so ``--ngram w<n>`` makes VW generate the window n-grams;
    everything else goes to ``f``. ``n_window`` (2 * window + 1) lets the
    common layout of the shared extractor (``bias`` then the window words) be
    split by position; the layout is checked, and anything else is split by
    name.
    """
    head = "" if label is None else str(int(label))
    f = features
    n = n_window or 0
    if (n and len(f) > n and f[0] == "bias" and f[1].startswith("w[") and f[n].startswith("w[")
            and (len(f) == n + 1 or not f[n + 1].startswith("w["))):
        words, rest = f[1:n + 1], [f[0]] + list(f[n + 1:])
    else:
        words = [x for x in f if _is_window_word(x)]
        rest = [x for x in f if not _is_window_word(x)]
    return f"{head} |w {vw_join(words)} |f {vw_join(rest)}"


def vw_lines(token_features: Sequence[Sequence[str]], labels: Sequence[int] | None = None,
             n_window: int | None = None) -> list[str]:
    """``vw_token_line`` for each token of a sequence."""
    if labels is None:
        return [vw_token_line(f, None, n_window) for f in token_features]
    return [vw_token_line(f, y, n_window) for f, y in zip(token_features, labels)]


@contextmanager
def scratch_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="edeid-linear-") as path:
        yield path


def _vw():
    try:
        from vowpalwabbit import Workspace
    except ImportError as exc:  # pragma: no cover - checked by availability()
        raise TaggerUnavailable("Vowpal Wabbit is not installed: pip install vowpalwabbit") from exc
    return Workspace


def vw_train(args: Sequence[str], write_data, tmp: str) -> bytes:
    """Train VW from a data file (written by ``write_data(handle)``) with a
    cache, and return the model file's bytes."""
    Workspace = _vw()
    data = os.path.join(tmp, "train.vw")
    model = os.path.join(tmp, "model.vw")
    with open(data, "w", encoding="utf-8") as fh:
        write_data(fh)
    cache = os.path.join(tmp, "train.cache")
    vw = Workspace(arg_list=list(args) + ["-d", data, "--cache_file", cache, "-k", "-f", model, "--quiet"])
    vw.finish()
    with open(model, "rb") as fh:
        return fh.read()


@contextmanager
def vw_model_file(what: str) -> Iterator[str]:
    """A path for a VW model file in a new scratch folder (removed after).
    VW reports a failed write or read (a full TMPDIR) as a bare RuntimeError:
    it becomes an error naming the file and the likely cause; ``what`` says
    what was happening ("written", "read back")."""
    path = os.path.join(tempfile.gettempdir(), "edeid-linear-*", "model.vw")
    try:
        with scratch_dir() as tmp:
            path = os.path.join(tmp, "model.vw")
            yield path
    except (OSError, RuntimeError) as exc:
        why = reason(exc) if isinstance(exc, OSError) else "Vowpal Wabbit could not write or read it"
        raise FileWriteError(path, f"{why} while the model was {what}; is the disk full? Free space there "
                                   "or point TMPDIR elsewhere, then rerun") from exc


def vw_model_bytes(workspace) -> bytes:
    """The model file of a VW workspace trained in this process (what ``-f``
    would write), as bytes: what ``VowpalModel`` loads and a bundle stores."""
    with vw_model_file("written") as path:
        workspace.save(path)
        with open(path, "rb") as fh:
            return fh.read()


class VowpalModel:
    """A VW model loaded once in test mode and kept for every later batch
    (``KeepsVowpalModel``): writing and loading the model file again for
    every batch of notes was repeated work on the apply path. Examples go
    through VW's own text parser, as they do from a data file. Not safe for
    two threads at once: a lock keeps calls apart."""

    def __init__(self, model: bytes, args: Sequence[str] = (), where: str = "Vowpal Wabbit model"):
        import threading

        Workspace = _vw()
        with vw_model_file("read back") as path:  # VW reads the whole model at start; the file is removed after
            with open(path, "wb") as fh:  # a failed write here is the disk's (vw_model_file says so)
                fh.write(model)
            try:
                self._vw = Workspace(arg_list=["-i", path, "-t", "--quiet"] + list(args))
            except RuntimeError:  # written whole, refused by VW: the model itself (VW's words may quote it)
                raise VowpalModelError(f"{where}: not a model Vowpal Wabbit can read (the file is damaged or was "
                                       f"edited): refit it") from None
        self._label_type = self._vw.get_label_type()  # what parse asks the workspace for each example otherwise
        self._lock = threading.Lock()

    def sequence_labels(self, lines: Sequence[str]) -> list[int]:
        """The label (1..K) a ``--search sequence`` model predicts for each
        example of one sequence (its unlabelled lines): what ``-p`` writes
        for the sequence."""
        with self._lock:
            examples = self._vw.parse(list(lines), self._label_type)
            try:
                self._vw.predict(examples)
                return [e.get_multiclass_prediction() for e in examples]
            finally:
                self._vw.finish_example(examples)

    def scalars(self, lines: Iterable[str]) -> list[list[float]]:
        """What a single-line model predicts for each example line as a list
        of numbers (``--oaa K --probabilities``: the K class probabilities)."""
        vw = self._vw
        out = []
        with self._lock:
            for line in lines:
                example = vw.parse(line, self._label_type)
                try:
                    out.append(vw.predict(example))
                finally:
                    vw.finish_example(example)
        return out


class VowpalModelError(EnsembleDeidError, ValueError):
    """A saved Vowpal Wabbit model that VW refuses to read (damaged, edited):
    not a full disk, which is a ``FileWriteError``."""


class KeepsVowpalModel:
    """A learner that keeps its fitted VW model loaded (``VowpalModel``) from
    one batch to the next: once per process, again when the model bytes (a
    refit, a load) or the options change. Never pickled: a live VW workspace
    is loaded again where it is needed. A loaded (saved) model is read into
    VW when it is loaded, with the options prediction uses
    (``vw_predict_args``), so a damaged file is refused then, naming it."""

    vw_model_field: str = "model_"  # the attribute holding the model bytes
    vw_predict_args: tuple[str, ...] = ()

    def loaded_vw_model(self, model: bytes, args: Sequence[str] = ()) -> VowpalModel:
        kept = self.__dict__.get("_vw_model")
        if kept is None or kept[0] is not model or kept[1] != tuple(args):
            where = f"{self.name}: its Vowpal Wabbit model {bytes_file_name(self.vw_model_field)}"
            kept = self.__dict__["_vw_model"] = (model, tuple(args), VowpalModel(model, args, where))
        return kept[2]

    def _restore_state(self, state: dict[str, Any]) -> None:
        super()._restore_state(state)
        model = getattr(self, self.vw_model_field, None)
        if not isinstance(model, bytes):
            from .state import StateError

            raise StateError(f"{self.name}: saved state lacks its Vowpal Wabbit model (field {self.vw_model_field!r})")
        self.loaded_vw_model(model, self.vw_predict_args)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_vw_model", None)
        return state


# --- CRFsuite ------------------------------------------------------------------------------------

def seed_c_rand(seed: int) -> bool:
    """Seed the C library's ``rand()``: CRFsuite's online algorithms (ap, pa,
    arow, l2sgd) shuffle the training data with it each epoch and never seed
    it, so without this a second fit in the same process sees another order.
    Returns False where libc cannot be reached (then runs are reproducible
    per process only)."""
    import ctypes
    import ctypes.util

    for name in (None, ctypes.util.find_library("c")):
        try:
            ctypes.CDLL(name).srand(ctypes.c_uint(int(seed) & 0xFFFFFFFF))
            return True
        except (OSError, AttributeError, TypeError):
            continue
    return False


def crfsuite_train(algorithm: str, params: dict[str, Any], sequences, tmp: str, seed: int | None = None) -> bytes:
    """Train python-crfsuite on (xseq, yseq) pairs; return the model bytes.
    ``seed``: seed C's ``rand()`` first (see ``seed_c_rand``)."""
    try:
        import pycrfsuite
    except ImportError as exc:  # pragma: no cover
        raise TaggerUnavailable("python-crfsuite is not installed: pip install python-crfsuite") from exc
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    if seed is not None:
        seed_c_rand(seed)
    for xseq, yseq in sequences:
        trainer.append(xseq, yseq)
    trainer.set_params(params)
    path = os.path.join(tmp, "model.crfsuite")
    trainer.train(path)
    with open(path, "rb") as fh:
        return fh.read()


@contextmanager
def crfsuite_tagger(model: bytes) -> Iterator[Any]:
    """A CRFsuite tagger opened on model bytes (in memory, no file)."""
    import pycrfsuite

    check_crfsuite_model(model, "CRFsuite model")
    tagger = pycrfsuite.Tagger()
    tagger.open_inmemory(model)
    try:
        yield tagger
    finally:
        tagger.close()


# --- Vowpal Wabbit taggers ------------------------------------------------------------------------

class VowpalTagger(KeepsVowpalModel, LinearTagger):
    """Shared parts of the VW taggers: features without pre-made n-grams (VW
    makes the window n-grams itself with ``--ngram w<n>``), training through a
    cached data file, the model kept as bytes so that a fitted tagger pickles,
    prediction on the model loaded once per process (``vw_model``).
    Deterministic for a seed: fixed ``--random_seed``, a seeded shuffle of
    the training sequences, and VW's single learning thread;
    ``--holdout_off`` so every pass sees every example (no early stop on a
    held-out tenth)."""

    requires = ("vowpalwabbit",)
    bits: int = 22
    random_state: int = 0
    _fitted_caches = ("_vw_model",)

    def vw_model(self) -> VowpalModel:
        """The fitted model loaded in VW, once per process (again after a refit)."""
        return self.loaded_vw_model(self.model_, self.vw_predict_args)

    def _vw_features(self) -> tuple[dict[str, Any], int, int]:
        """Extractor overrides (n-grams left to VW), VW's n-gram order and the
        number of window words per token."""
        params = dict(self.features or {})
        n = int(params.get("ngrams", 3))
        window = int(params.get("window", 2))
        return {"ngrams": 1}, min(n, 2 * window + 1), 2 * window + 1

    def _extractor_overrides(self) -> dict[str, Any]:
        return self._vw_features()[0]

    def _common_args(self, n_gram: int) -> list[str]:
        args = ["-b", str(int(self.bits)), "--random_seed", str(int(self.random_state)), "--holdout_off"]
        if n_gram > 1:
            args += ["--ngram", f"w{n_gram}"]
        return args

    def _fit_vw(self, documents, args_for: Callable[[LabelIndex, int], list[str]], sequence_end: str = "\n"):
        """Train VW on the documents' training chunks, in a seeded order:
        ``args_for(labels, n_gram)`` gives the learner's whole command line
        and ``sequence_end`` ends each chunk's lines (a blank line between
        search sequences). Keeps the model, the labels and the window size."""
        overrides, n_gram, n_window = self._vw_features()
        feats = self._training_features(documents, **overrides)
        labels = LabelIndex.from_documents(documents)
        seqs = self._sequences(documents, feats, labels)

        def write(fh):
            for f, ids in seqs:
                fh.write("\n".join(vw_lines(f, ids, n_window)))
                fh.write(sequence_end)

        with scratch_dir() as tmp:
            self.model_ = vw_train(args_for(labels, n_gram), write, tmp)
        self.labels_ = labels
        self.n_window_ = n_window
        return self

    def _test_lines(self, documents: Sequence[Document], feats) -> list[list[str]]:
        """Each document's example lines, unlabelled; an extractor shared with
        other members (``deid.model.SharedFeatures``) writes them once for all."""
        shared = getattr(getattr(self, "extractor_", None), "document_vw_lines", None)
        if shared is None:
            return [vw_lines(f, None, self.n_window_) for f in feats]
        return [shared(d, self.n_window_) for d in documents]

    def _sequences(self, documents, feats, labels: LabelIndex):
        """(features, VW label ids 1..K) per training chunk, in a seeded random order."""
        seqs = []
        for doc, f in zip(documents, feats):
            tags = gold_tags(doc)
            ids = labels.encode(tags) + 1  # VW labels are 1..K
            for a, b in training_chunks(doc, tags):
                seqs.append((f[a:b], ids[a:b]))
        order = np.random.default_rng(self.random_state).permutation(len(seqs))
        return [seqs[i] for i in order]
