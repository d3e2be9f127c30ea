"""Candidate spans pooled from the members, as compact numpy arrays.

A *candidate* is a distinct (document, first token, end token, label) that at
least one member predicted; its votes are the members that predicted exactly
that span with exactly that label. Everything the span-level methods need is
computed once here, so that scoring a subset of members at a threshold is
vectorised counting, not re-decoding:

- ``votes``: bool (n, m), member j produced candidate i;
- ``gold``: bool (n,), the candidate equals a gold span under the strict
  criterion (same start, end, category and type, compared upper-cased);
- ``n_gold``: per document, the number of distinct strict gold keys, so
  TP = sum(selected & gold), FP = selected - TP, FN = n_gold - TP exactly as
  the strict scorer counts them (a gold span that is not token-aligned can
  never be matched, and counts as a false negative);
- the overlap structure: candidates of one document sharing a token; the
  *contested* candidates (those that overlap another) grouped into the
  connected components that overlap resolution works on.

Spans decode from tags exactly as :func:`ensemble_deid.corpus.bio.decode` does (an
``I-`` after ``O`` or another label opens a span); this is asserted in tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Mapping, Sequence

import numpy as np

from ..corpus.bio import OUTSIDE
from ..corpus.document import Document
from ..taggers.prediction import DocumentPrediction


class TagVocab:
    """Tag strings <-> small ints, with each tag's label and B/I role."""

    def __init__(self, tags: Sequence[str] = ()):
        self.tags: list[str] = [OUTSIDE]
        self.index: dict[str, int] = {OUTSIDE: 0}
        for tag in tags:
            self.add(tag)

    def __len__(self) -> int:
        return len(self.tags)

    def add(self, tag: str) -> int:
        i = self.index.get(tag)
        if i is None:
            if tag != OUTSIDE and tag[:2] not in ("B-", "I-"):
                raise ValueError(f"tag {tag!r} is not O, B-* or I-*")
            i = self.index[tag] = len(self.tags)
            self.tags.append(tag)
        return i

    def encode(self, tags: Sequence[str]) -> np.ndarray:
        """Ids of tags (most are ``O``: only the others are looked up)."""
        arr = np.array(tags, dtype=object)
        out = np.zeros(len(arr), dtype=np.int32)
        inside = np.flatnonzero(arr != OUTSIDE)
        if len(inside):
            labelled = arr[inside].tolist()
            # New tags get ids in order of first appearance: a set's order
            # changes with PYTHONHASHSEED, and stacked SEARN's hashed features
            # name tags by id, so ids must not depend on the process.
            for tag in dict.fromkeys(labelled):
                if tag not in self.index:
                    self.add(tag)
            out[inside] = np.fromiter(map(self.index.__getitem__, labelled), dtype=np.int32, count=len(labelled))
        return out

    def labels(self) -> list[str]:
        """Distinct span labels (CATEGORY:TYPE), sorted."""
        return sorted({t[2:] for t in self.tags if t != OUTSIDE})


def decode_ids(ids: np.ndarray, vocab: TagVocab, label_index: Mapping[str, int],
               doc_starts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spans of a tag-id sequence as (first token, end token, label id) arrays.

    ``doc_starts`` are positions where a new document begins (no span crosses
    them). Same rules as ``bio.decode``."""
    lab = np.array([-1] + [label_index[t[2:]] for t in vocab.tags[1:]], dtype=np.int64)
    begin = np.array([False] + [t.startswith("B-") for t in vocab.tags[1:]], dtype=bool)
    labels = lab[ids]
    n = len(ids)
    prev = np.empty(n, dtype=np.int64)
    if n:
        prev[0] = -1
        prev[1:] = labels[:-1]
    if doc_starts is not None and len(doc_starts):
        prev[doc_starts[doc_starts < n]] = -1
    inside = labels >= 0
    starts = inside & (begin[ids] | (labels != prev))
    first = np.flatnonzero(starts)
    # A span runs until the next token that does not continue it.
    breaks = np.flatnonzero(~(inside & ~starts))
    after = np.searchsorted(breaks, first, side="right")
    padded = np.append(breaks, n)
    stop = padded[after]
    return first, stop, labels[first]


@dataclass
class CandidateTable:
    """Pooled candidate spans of some documents (see the module docstring).

    Rows are sorted by (global first token, length, label). Token positions
    are global: document d's tokens are ``tok_base[d] .. tok_base[d+1]``.
    ``columns`` holds extra per-candidate arrays (e.g. features) that
    :meth:`subset` slices along.
    """

    member_names: tuple[str, ...]
    documents: list[Document]
    labels: list[str]  # label id -> "CATEGORY:TYPE"
    tok_base: np.ndarray  # (n_docs + 1,)
    doc: np.ndarray  # (n,) document index
    first: np.ndarray  # (n,) global first token
    stop: np.ndarray  # (n,) global end token (exclusive)
    label: np.ndarray  # (n,) label id
    votes: np.ndarray  # (n, m) bool
    gold: np.ndarray  # (n,) bool
    n_gold: np.ndarray  # (n_docs,) distinct strict gold keys
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.doc)

    def __repr__(self) -> str:
        return (f"CandidateTable(members={len(self.member_names)}, documents={len(self.documents)}, "
                f"candidates={len(self)}, contested={len(self.contested)})")

    @property
    def n_members(self) -> int:
        return len(self.member_names)

    @property
    def n_docs(self) -> int:
        return len(self.documents)

    @property
    def vote_count(self) -> np.ndarray:
        return self.votes.sum(axis=1)

    # --- overlap structure ---------------------------------------------------
    def _cached(self, key, make):
        value = self.__dict__.get(key)
        if value is None:
            value = self.__dict__[key] = make()
        return value

    @property
    def gold_category(self) -> np.ndarray:
        """(n,) bool: the candidate has a gold span's extent and category,
        whatever the subtype (``gold`` is the strict match)."""
        return self._cached("_gold_category", lambda: match_gold(
            self.documents, self.labels, self.tok_base, self.doc, self.first, self.stop, self.label, any_type=True))

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Directed overlap pairs (a, b) of rows, sorted by a."""
        return self._cached("_pairs", lambda: overlap_pairs(self.first, self.stop))

    @property
    def components(self) -> "Components":
        """Connected components of the overlap graph with two or more rows."""
        return self._cached("_components", lambda: Components.of(self.first, self.stop))

    @property
    def contested(self) -> np.ndarray:
        """Rows that overlap at least one other candidate, component by
        component (see :class:`Components`)."""
        return self.components.rows

    # --- slicing -------------------------------------------------------------
    def subset(self, doc_indices: Sequence[int] | np.ndarray) -> "CandidateTable":
        """The table of some documents (in the order given, which must be increasing)."""
        idx = np.asarray(doc_indices, dtype=np.int64)
        if len(idx) > 1 and np.any(np.diff(idx) <= 0):
            raise ValueError("document indices must be strictly increasing")
        keep_doc = np.zeros(self.n_docs, dtype=bool)
        keep_doc[idx] = True
        rows = np.flatnonzero(keep_doc[self.doc])
        new_doc = np.full(self.n_docs, -1, dtype=np.int64)
        new_doc[idx] = np.arange(len(idx))
        lengths = np.diff(self.tok_base)[idx]
        tok_base = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        shift = tok_base[:-1] - self.tok_base[idx]  # per new document
        d = new_doc[self.doc[rows]]
        return CandidateTable(
            self.member_names, [self.documents[i] for i in idx.tolist()], self.labels, tok_base,
            d, self.first[rows] + shift[d], self.stop[rows] + shift[d], self.label[rows],
            self.votes[rows], self.gold[rows], self.n_gold[idx], {k: v[rows] for k, v in self.columns.items()},
        )

    # --- counting and output ---------------------------------------------------
    def counts(self, selected: np.ndarray) -> tuple[int, int, int]:
        """Strict micro (tp, fp, fn) of a selection of non-overlapping candidates."""
        tp = int(np.count_nonzero(selected & self.gold))
        return tp, int(np.count_nonzero(selected)) - tp, int(self.n_gold.sum()) - tp

    def member_f1(self) -> np.ndarray:
        """Strict F1 of each member on its own."""
        tp, fp, fn = self.member_counts().T.astype(np.float64)
        denom = 2 * tp + fp + fn
        return np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)

    def member_rank(self) -> np.ndarray:
        """Members ranked by strict F1 (0 = best; equal F1: the member listed
        first ranks better): the voting tie-break order."""
        f1 = self.member_f1()
        order = sorted(range(self.n_members), key=lambda j: (-f1[j], j))
        rank = np.empty(self.n_members, dtype=np.int64)
        rank[order] = np.arange(self.n_members)
        return rank

    def member_counts(self) -> np.ndarray:
        """(m, 3) strict tp, fp, fn of each member on its own."""
        tp = (self.votes & self.gold[:, None]).sum(axis=0)
        n = self.votes.sum(axis=0)
        return np.stack([tp, n - tp, self.n_gold.sum() - tp], axis=1).astype(np.int64)

    def char_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """Character start and end (within its document) of every candidate."""
        if not self.documents:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        starts = np.concatenate([d.tokens.starts for d in self.documents])
        ends = np.concatenate([d.tokens.ends for d in self.documents])
        return starts[self.first].astype(np.int64), ends[self.stop - 1].astype(np.int64)

    def to_predictions(self, selected: np.ndarray, confidences: np.ndarray | None = None) -> list[DocumentPrediction]:
        """BIO predictions of each document from selected (non-overlapping) candidates.

        ``confidences`` (per candidate, in [0, 1]) become the span tokens'
        confidences; other tokens get 1 minus the highest confidence of an
        unselected candidate covering them (1 where none does)."""
        rows = np.flatnonzero(selected)
        total = int(self.tok_base[-1])
        tags = np.zeros(total, dtype=np.int64)  # 0 = O; 2*label+1 = B, 2*label+2 = I
        for r in rows.tolist():
            a, b, lab = int(self.first[r]), int(self.stop[r]), int(self.label[r])
            if np.any(tags[a:b]):
                raise ValueError("selected candidates overlap")
            tags[a] = 2 * lab + 1
            tags[a + 1:b] = 2 * lab + 2
        names = [OUTSIDE]
        for lab in self.labels:
            names += ["B-" + lab, "I-" + lab]
        names_arr = np.array(names, dtype=object)
        conf = None
        if confidences is not None:
            conf = np.ones(total, dtype=np.float32)
            unselected = np.flatnonzero(~selected)
            for r in unselected.tolist():
                a, b = int(self.first[r]), int(self.stop[r])
                conf[a:b] = np.minimum(conf[a:b], 1.0 - confidences[r])
            for r in rows.tolist():
                conf[int(self.first[r]):int(self.stop[r])] = confidences[r]
        out = []
        for d, doc in enumerate(self.documents):
            a, b = int(self.tok_base[d]), int(self.tok_base[d + 1])
            out.append(DocumentPrediction(doc.id, tuple(names_arr[tags[a:b]].tolist()),
                                          None if conf is None else conf[a:b].copy()))
        return out


def gold_keys(doc: Document) -> set[tuple[int, int, str, str]]:
    """Distinct strict keys of a document's gold spans (names compared upper-cased)."""
    return {(a.start, a.end, a.category.upper(), a.type.upper()) for a in doc.annotations}


def match_gold(documents: Sequence[Document], labels: Sequence[str], tok_base: np.ndarray, doc: np.ndarray,
               first: np.ndarray, stop: np.ndarray, label: np.ndarray, any_type: bool = False) -> np.ndarray:
    """(n,) bool: the candidate equals a gold span of its document (names
    compared upper-cased); ``any_type``: its extent and category do, whatever
    the subtype."""
    upper = [tuple(x.upper() for x in lab_.split(":", 1)) for lab_ in labels]
    out = np.zeros(len(doc), dtype=bool)
    doc_rows = np.searchsorted(doc, np.arange(len(documents) + 1))
    for d, document in enumerate(documents):
        keys = {k[:3] for k in gold_keys(document)} if any_type else gold_keys(document)
        a, b = int(doc_rows[d]), int(doc_rows[d + 1])
        if a == b or not keys:
            continue
        starts, ends = document.tokens.starts, document.tokens.ends
        base = int(tok_base[d])
        for r in range(a, b):
            key = (int(starts[first[r] - base]), int(ends[stop[r] - 1 - base])) + upper[label[r]]
            if (key[:3] if any_type else key) in keys:
                out[r] = True
    return out


def build_candidates(
    members: Sequence[Mapping[str, DocumentPrediction]], member_names: Sequence[str],
    documents: Sequence[Document],
) -> CandidateTable:
    """Pool the members' spans over ``documents`` (members already checked to
    cover every document with one tag per token)."""
    m = len(member_names)
    if m > 63:
        raise ValueError(f"{m} members: at most 63 are supported")
    documents = list(documents)
    lengths = np.fromiter((len(d.tokens) for d in documents), dtype=np.int64, count=len(documents))
    tok_base = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    total = int(tok_base[-1])
    vocab = TagVocab()
    member_ids = []
    for preds in members:
        tags = list(chain.from_iterable(preds[d.id].tags for d in documents))
        member_ids.append(vocab.encode(tags))
    labels = vocab.labels()
    label_index = {lab: i for i, lab in enumerate(labels)}
    n_labels = max(len(labels), 1)

    firsts, stops, labs, who = [], [], [], []
    for j, ids in enumerate(member_ids):
        f, s, lab = decode_ids(ids, vocab, label_index, tok_base[:-1])
        firsts.append(f)
        stops.append(s)
        labs.append(lab)
        who.append(np.full(len(f), j, dtype=np.int64))
    first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    stop = np.concatenate(stops) if stops else np.zeros(0, np.int64)
    lab = np.concatenate(labs) if labs else np.zeros(0, np.int64)
    member = np.concatenate(who) if who else np.zeros(0, np.int64)
    width = int((stop - first).max()) + 1 if len(first) else 1
    key = (first * width + (stop - first)) * n_labels + lab
    ukey, inverse = np.unique(key, return_inverse=True)
    n = len(ukey)
    votes = np.zeros((n, m), dtype=bool)
    votes[inverse, member] = True
    c_lab = ukey % n_labels
    c_len = (ukey // n_labels) % width
    c_first = ukey // (n_labels * width)
    c_stop = c_first + c_len
    c_doc = np.searchsorted(tok_base, c_first, side="right") - 1

    n_gold = np.fromiter((len(gold_keys(doc)) for doc in documents), dtype=np.int64, count=len(documents))
    gold = match_gold(documents, labels, tok_base, c_doc, c_first, c_stop, c_lab)
    return CandidateTable(
        tuple(member_names), documents, labels, tok_base, c_doc.astype(np.int64), c_first.astype(np.int64),
        c_stop.astype(np.int64), c_lab.astype(np.int64), votes, gold, n_gold,
    )


def overlap_pairs(first: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed pairs (i, j), i != j, of rows sharing a token, sorted by i.
    Rows must be sorted by ``first``."""
    n = len(first)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    hi = np.searchsorted(first, stop, side="left")  # rows j > i with first_j < stop_i overlap i
    count = hi - np.arange(n) - 1
    i = np.repeat(np.arange(n), count)
    offs = np.arange(len(i)) - np.repeat(np.cumsum(count) - count, count)
    j = i + 1 + offs
    a = np.concatenate([i, j])
    b = np.concatenate([j, i])
    order = np.lexsort((b, a))
    return a[order].astype(np.int64), b[order].astype(np.int64)


@dataclass(frozen=True)
class Components:
    """The overlap graph's components of two or more rows, grouped by size.

    Rows are sorted by first token, so a component is a run of consecutive
    rows (a row joins the run while it starts before the run's furthest end).
    ``rows`` lists the contested rows component by component, smallest
    components first, so that the rows of all components of one size form one
    contiguous block (reshaped to (n, size) without copying)."""

    rows: np.ndarray
    blocks: tuple[tuple[int, int, np.ndarray | None], ...]  # (size, count, adjacency (count, s, s) or None for s=2)

    @classmethod
    def of(cls, first: np.ndarray, stop: np.ndarray) -> "Components":
        n = len(first)
        if n == 0:
            return cls(np.zeros(0, np.int64), ())
        reach = np.maximum.accumulate(stop)
        new = np.ones(n, dtype=bool)
        new[1:] = first[1:] >= reach[:-1]
        starts = np.flatnonzero(new)
        sizes = np.diff(np.append(starts, n))
        rows, blocks = [], []
        for size in np.unique(sizes[sizes >= 2]).tolist():
            r = starts[sizes == size][:, None] + np.arange(size)[None, :]
            adj = None
            if size > 2:
                f, e = first[r], stop[r]
                adj = (f[:, :, None] < e[:, None, :]) & (f[:, None, :] < e[:, :, None])
                adj[:, np.arange(size), np.arange(size)] = False
            rows.append(r.ravel())
            blocks.append((size, len(r), adj))
        return cls(np.concatenate(rows) if rows else np.zeros(0, np.int64), tuple(blocks))


def resolve_overlaps(table: CandidateTable, keep: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Greedy overlap resolution, vectorised: among kept candidates, visit them
    in decreasing ``priority`` and accept each one that overlaps no accepted
    candidate (equal priorities: the earlier row, i.e. the earlier start,
    first). ``keep`` and ``priority`` are (n,) or (n, k) for k settings at once.
    """
    selected = keep.copy()
    c = table.contested
    if len(c):
        selected[c] = resolve_contested(table, keep[c], priority[c])
    return selected


def resolve_contested(table: CandidateTable, keep: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """:func:`resolve_overlaps` on the contested rows only (inputs and output
    indexed like ``table.contested``).

    Two-row components are decided in closed form; larger ones as iterated
    local maxima over their dense adjacency (a kept row that beats every
    still-undecided kept neighbour is accepted and its neighbours rejected),
    which gives exactly the sequential greedy result."""
    comp = table.components
    flat = keep.ndim == 1
    if flat:
        keep, priority = keep[:, None], priority[:, None]
    k = keep.shape[1]
    chosen = np.zeros_like(keep)
    at = 0
    for size, count, adj in comp.blocks:
        alive = keep[at:at + size * count].reshape(count, size, k)
        prio = priority[at:at + size * count].reshape(count, size, k)
        won = chosen[at:at + size * count].reshape(count, size, k)  # a view: filled in place
        at += size * count
        if size == 2:
            k0, k1, p0, p1 = alive[:, 0], alive[:, 1], prio[:, 0], prio[:, 1]
            np.logical_and(k0, ~(k1 & (p1 > p0)), out=won[:, 0])
            np.logical_and(k1, ~(k0 & (p0 >= p1)), out=won[:, 1])
        else:
            alive = alive.copy()
            # beats[:, q, r]: neighbour r outranks q (equal priority: the earlier row).
            beats = [[adj[:, q, r, None] & ((prio[:, r] > prio[:, q]) if r > q else (prio[:, r] >= prio[:, q]))
                      for r in range(size)] for q in range(size)]
            while alive.any():
                win = np.empty_like(alive)
                for q in range(size):
                    lost = np.zeros_like(alive[:, q])
                    for r in range(size):
                        if r != q:
                            lost |= beats[q][r] & alive[:, r]
                    win[:, q] = alive[:, q] & ~lost
                won |= win
                for q in range(size):
                    hit = win[:, q].copy()
                    for r in range(size):
                        if r != q:
                            hit |= adj[:, q, r, None] & win[:, r]
                    alive[:, q] &= ~hit
    return chosen[:, 0] if flat else chosen


def voting_priority(votes: np.ndarray, best_rank: np.ndarray, n_members: int) -> np.ndarray:
    """More votes first; on a tie, the candidate whose best voter has the
    better rank (rank 0 = best cross-validated F1)."""
    return votes.astype(np.int64) * (n_members + 1) + (n_members - best_rank)


def best_voter_rank(votes: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Per candidate, the best (lowest) rank among its voters (worse than
    every rank given if none)."""
    if not len(votes) or not votes.shape[1]:
        return np.zeros(len(votes), np.int64)
    return np.where(votes, rank[None, :], int(rank.max()) + 1).min(axis=1)
