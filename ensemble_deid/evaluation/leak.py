"""Leak rate: the share of gold PHI left uncovered by every predicted span.

The privacy figure. Any system span covers, whatever its type. A gold PHI
token (the token criterion's tokens, empty ones excepted) leaks unless every
one of its characters is covered; a gold PHI character (white space excepted)
leaks unless covered; a gold entity (tag) leaks when any of its tokens leaks
(part of it is disclosed; tags without a token are not counted). Overall,
HIPAA (gold tags the HIPAA filter keeps) and per parent category; a token or
character inside two gold tags counts once, and so do two tags on one span.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .keys import token_pieces
from .spans import CorpusText, SpanTable


@dataclass(frozen=True)
class LeakRates:
    tokens: int
    leaked_tokens: int
    chars: int
    leaked_chars: int
    entities: int = 0
    leaked_entities: int = 0

    @property
    def entity_rate(self) -> float:
        return self.leaked_entities / self.entities if self.entities else 0.0

    @property
    def token_rate(self) -> float:
        return self.leaked_tokens / self.tokens if self.tokens else 0.0

    @property
    def char_rate(self) -> float:
        return self.leaked_chars / self.chars if self.chars else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "token_rate": self.token_rate, "char_rate": self.char_rate,
                "entity_rate": self.entity_rate}


@dataclass(frozen=True)
class LeakReport:
    overall: LeakRates
    hipaa: LeakRates
    by_category: dict[str, LeakRates]
    # the same per document, in corpus order (``evaluate(..., leak_documents=True)``)
    by_document: tuple["LeakReport", ...] = ()

    def to_dict(self) -> dict:
        return {
            "overall": self.overall.to_dict(),
            "hipaa": self.hipaa.to_dict(),
            "by_category": {k: v.to_dict() for k, v in self.by_category.items()},
        }


class Coverage:
    """The union of the system spans as disjoint sorted intervals."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray):
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
        reach = np.maximum.accumulate(e) if len(e) else e
        new = np.ones(len(s), dtype=bool)
        new[1:] = s[1:] > reach[:-1]
        first = np.flatnonzero(new)
        self.starts = s[first]
        last = np.append(first[1:], len(s)) - 1
        self.ends = reach[last] if len(s) else e
        self.before = np.concatenate(([0], np.cumsum(self.ends - self.starts)))

    def covered_before(self, x: np.ndarray) -> np.ndarray:
        """Number of covered positions in [0, x)."""
        if not len(self.starts):
            return np.zeros(len(x), dtype=np.int64)
        i = np.searchsorted(self.starts, x, side="right") - 1
        j = np.maximum(i, 0)
        inside = np.where(i >= 0, np.minimum(x, self.ends[j]) - self.starts[j], 0)
        return self.before[j] + inside

    def covers(self, x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.starts, x, side="right") - 1
        return (i >= 0) & (x < self.ends[np.maximum(i, 0)]) if len(self.starts) else np.zeros(len(x), dtype=bool)


def _expand(starts: np.ndarray, ends: np.ndarray):
    """Every position of every span, and the index of its span."""
    lengths = ends - starts
    parent = np.repeat(np.arange(len(starts)), lengths)
    first = np.cumsum(lengths) - lengths
    return starts[parent] + (np.arange(int(lengths.sum())) - first[parent]), parent


def _unique_count(group: np.ndarray, item: np.ndarray, flag: np.ndarray, n_groups: int, doc: np.ndarray, n_docs: int):
    """Per document and group, (n_docs, n_groups): distinct items, and
    distinct items with the flag set. An item (a global offset) lies in one
    document, ``doc``."""
    key = item * n_groups + group
    order = np.argsort(key, kind="stable")
    key, flag, doc = key[order], flag[order], doc[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    g = doc[first] * n_groups + key[first] % n_groups
    size = n_docs * n_groups
    return (np.bincount(g, minlength=size).reshape(n_docs, n_groups),
            np.bincount(g[flag[first]], minlength=size).reshape(n_docs, n_groups))


def leak_rates(
    gold: SpanTable,
    system: SpanTable,
    corpus: CorpusText,
    ascii_tokens: bool,
    category_of_label: list[str],
    hipaa_gold: np.ndarray,
    categories: list[str],
    by_document: bool = False,
) -> LeakReport:
    """The corpus's leak rates; with ``by_document``, each document's too
    (the counts of one pass, for document-bootstrap intervals)."""
    cover = Coverage(system.gstart, system.gend)
    n_docs = len(corpus)
    index = {c: i for i, c in enumerate(categories)}
    cat = np.array([index[c] for c in category_of_label], dtype=np.int64)[gold.label] if len(gold) else np.zeros(0, dtype=np.int64)
    # groups: 0..k-1 categories, k = all, k+1 = HIPAA; a tag belongs to its
    # category, to "all", and to "HIPAA" when kept by the filter
    k = len(categories)
    n_groups = k + 2
    rows = np.concatenate([np.arange(len(gold)), np.arange(len(gold)), np.flatnonzero(hipaa_gold)])
    groups = np.concatenate([cat, np.full(len(gold), k), np.full(int(hipaa_gold.sum()), k + 1)])

    ts, te, parent = token_pieces(gold.gstart, gold.gend, corpus.runs(ascii_tokens))
    real = te > ts
    ts, te, parent = ts[real], te[real], parent[real]
    leaked = (cover.covered_before(te) - cover.covered_before(ts)) < (te - ts)
    # tokens of each (group, tag) membership
    by_tag = np.bincount(parent, minlength=len(gold))
    tok_index = np.argsort(parent, kind="stable")
    tag_first = np.cumsum(by_tag) - by_tag
    counts = by_tag[rows]
    member = np.repeat(np.arange(len(rows)), counts)
    offsets = np.arange(int(counts.sum())) - (np.cumsum(counts) - counts)[member]
    tok = tok_index[tag_first[rows][member] + offsets]
    width = corpus.max_length + 2
    doc = gold.doc[rows]
    tok_total, tok_leaked = _unique_count(groups[member], ts[tok] * width + (te[tok] - ts[tok]), leaked[tok], n_groups,
                                          doc[member], n_docs)
    # entities: tags with a token, leaked when one of their tokens is
    tag_leaked = np.bincount(parent[leaked], minlength=len(gold)) > 0
    has = by_tag[rows] > 0
    ent_total, ent_leaked = _unique_count(groups[has], (gold.gstart * width + (gold.gend - gold.gstart))[rows][has],
                                          tag_leaked[rows][has], n_groups, doc[has], n_docs)

    # characters past the end of a text (tags of lenient files) do not exist
    text_end = corpus.bases[gold.doc] + corpus.lengths[gold.doc]
    g_end = np.minimum(gold.gend, text_end)
    g_start = np.minimum(gold.gstart, g_end)
    pos, owner = _expand(g_start[rows], g_end[rows])
    keep = corpus.nonspace_at(pos)
    pos, owner = pos[keep], owner[keep]
    chr_total, chr_leaked = _unique_count(groups[owner], pos, ~cover.covers(pos), n_groups, doc[owner], n_docs)
    tables = (tok_total, tok_leaked, chr_total, chr_leaked, ent_total, ent_leaked)

    def report(values) -> LeakReport:
        def rates(i: int) -> LeakRates:
            return LeakRates(*(int(v[i]) for v in values))

        return LeakReport(rates(k), rates(k + 1), {c: rates(i) for i, c in enumerate(categories)})

    documents = tuple(report([t[d] for t in tables]) for d in range(n_docs)) if by_document else ()
    whole = report([t.sum(axis=0) for t in tables])
    return LeakReport(whole.overall, whole.hipaa, whole.by_category, documents)
