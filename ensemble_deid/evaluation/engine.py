"""The matching engine: one gold set, any number of systems, any criterion.

Gold tags are laid out once (texts, label ids, key spaces); each system is
turned into the same columnar form and every criterion then reduces to sorted
int64 key arrays (token, strict, binary), end-tolerant key windows (relaxed)
or one pass per document (SemEval).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..corpus.document import PARENT_CATEGORIES, Document
from .criteria import Criterion
from .hipaa import hipaa_mask
from .keys import KeySet, KeySpace, grouped_key_counts, key_counts, token_pieces
from .metrics import DocumentCounts, MacroScores, Scores
from .options import EvalOptions
from .relaxed import PAD, relaxed_counts, relaxed_keys
from .semeval import outcome_counts, scheme_outcomes, situations
from .spans import CorpusText, LabelVocab, SpanTable, build_table


_CACHE_SIZE = 4  # per-table results kept (gold and the latest systems)


def _remember(cache: dict, owner: object, value: tuple) -> tuple:
    """Store ``value`` under ``id(owner)``, keeping only the latest entries
    (the value holds ``owner``, so its id cannot be reused while cached)."""
    cache[id(owner)] = value
    while len(cache) > _CACHE_SIZE:
        del cache[next(iter(cache))]
    return value


@dataclass(frozen=True)
class Grouping:
    """Labels of one key space gathered into named groups (one more group,
    unnamed, takes the spare ids of the key space)."""

    names: tuple[str, ...]
    of_label: np.ndarray


class Engine:
    def __init__(self, gold_documents: Sequence[Document], options: EvalOptions, extents: Sequence[int] | None = None):
        """``extents``: per document, the furthest tag end of either side when
        tags may reach past the end of the text (files scored as the official
        program does); zero-length tags are then accepted too."""
        self.options = options
        self.lenient = extents is not None
        self.doc_ids = [d.id for d in gold_documents]
        self.corpus = CorpusText([d.text for d in gold_documents], self.doc_ids, extents)
        self.vocab = LabelVocab()
        self.gold = build_table([d.annotations for d in gold_documents], self.corpus, self.vocab, "gold", self.lenient)
        self._frozen = False
        self._upper_cache: tuple[int, np.ndarray] = (-1, np.zeros(0, dtype=np.int64))
        self._masks: dict[int, tuple[SpanTable, np.ndarray]] = {}
        self._situations: dict[int, tuple] = {}
        self._tokens: dict[int, tuple] = {}

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    def table(self, per_doc: Sequence[Sequence[Any]]) -> SpanTable:
        return build_table(per_doc, self.corpus, self.vocab, "system", self.lenient)

    def freeze(self) -> None:
        """Fix the key spaces for the labels seen so far (with room to grow)."""
        self._set_spaces(len(self.vocab) + 1, len(self.vocab.upper_pairs) + 1)

    def ensure_capacity(self) -> bool:
        """Widen the key spaces if new labels outgrew them (True when the
        gold side must then be prepared again)."""
        if len(self.vocab) < self.n_raw and len(self.vocab.upper_pairs) < self.n_upper:
            return False
        self._set_spaces(max(2 * self.n_raw, len(self.vocab) + 1), max(2 * self.n_upper, len(self.vocab.upper_pairs) + 1))
        return True

    def _set_spaces(self, n_raw: int, n_upper: int) -> None:
        self.n_raw, self.n_upper = n_raw, n_upper
        c = self.corpus
        self.spaces = {
            "raw": KeySpace.for_corpus(c, self.n_raw),
            "upper": KeySpace.for_corpus(c, self.n_upper),
            "binary": KeySpace.for_corpus(c, self.n_upper + 1),  # label 0, or a <PHI> tag's own
            "relaxed_upper": KeySpace.for_corpus(c, self.n_upper, pad=PAD),
            "relaxed_binary": KeySpace.for_corpus(c, self.n_upper + 1, pad=PAD),
        }
        self._frozen = True

    # -- labels -----------------------------------------------------------
    def _to_upper(self) -> np.ndarray:
        n, arr = self._upper_cache
        if n != len(self.vocab):
            arr = self.vocab.to_upper()
            self._upper_cache = (len(self.vocab), arr)
        return arr

    def _space_name(self, criterion: Criterion) -> str:
        if criterion.match == "relaxed":
            return "relaxed_binary" if criterion.binary else "relaxed_upper"
        if criterion.binary:
            return "binary"
        return "raw" if criterion.match == "token" else "upper"

    def _binary_labels(self) -> np.ndarray:
        """Raw label -> binary label: 0, except that a ``<PHI>`` tag keeps its
        (upper-cased) name and TYPE, as the official binary strict key does."""
        upper = self._to_upper()
        is_phi = np.fromiter((c == "PHI" for c, _ in self.vocab.upper_pairs), dtype=bool, count=len(self.vocab.upper_pairs))
        return np.where(is_phi[upper], upper + 1, 0) if len(upper) else upper

    def labels(self, table: SpanTable, criterion: Criterion) -> np.ndarray | int:
        """Key-space labels: raw (case-sensitive) for token criteria,
        upper-cased for strict and relaxed; for binary criteria none (tokens)
        or only a <PHI> tag's (strict, relaxed)."""
        assert len(self.vocab) <= self.n_raw and len(self.vocab.upper_pairs) <= self.n_upper, "ensure_capacity() first"
        if criterion.binary:
            return 0 if criterion.match == "token" else self._binary_labels()[table.label]
        if criterion.match == "token":
            return table.label
        return self._to_upper()[table.label]

    def hipaa(self, table: SpanTable) -> np.ndarray:
        cached = self._masks.get(id(table))
        if cached is None or cached[0] is not table:
            cached = _remember(self._masks, table, (table, hipaa_mask(table, self.vocab, self.corpus, self.options)))
        return cached[1]

    def tokens(self, table: SpanTable):
        """(token start, token end, tag index) of every tag of the table."""
        cached = self._tokens.get(id(table))
        if cached is None or cached[0] is not table:
            text_end = self.corpus.bases[table.doc] + self.corpus.lengths[table.doc]
            pieces = token_pieces(table.gstart, table.gend, self.corpus.runs(self.options.ascii_token_regex), text_end)
            cached = _remember(self._tokens, table, (table, pieces))
        return cached[1]

    def semeval_labels(self) -> np.ndarray:
        """Raw label -> rank of its upper-cased (NAME, TYPE) pair in sorted order,
        so that keys sort in document order (start, end, name, type)."""
        pairs = self.vocab.upper_pairs
        rank = np.empty(len(pairs), dtype=np.int64)
        rank[sorted(range(len(pairs)), key=pairs.__getitem__)] = np.arange(len(pairs))
        return rank[self._to_upper()]

    # -- preparation and matching ---------------------------------------------
    def prepare(self, table: SpanTable, criterion: Criterion):
        """One side's matching form for a criterion."""
        assert self._frozen, "freeze() first"
        if criterion.match == "token":
            space = self.spaces[self._space_name(criterion)]
            ts, te, parent = self.tokens(table)
            if criterion.hipaa:
                keep = self.hipaa(table)[parent]
                ts, te, parent = ts[keep], te[keep], parent[keep]
            lab = 0 if criterion.binary else self.labels(table, criterion)[parent]
            return KeySet.build(space.encode(ts, te - ts, lab), space, self.corpus)
        if criterion.hipaa:
            table = table.select(self.hipaa(table))
        if criterion.match == "semeval":
            space = self.spaces["upper"]
            labels = self.semeval_labels()[table.label]
            return KeySet.build(space.encode(table.gstart, table.end - table.start, labels), space, self.corpus)
        space = self.spaces[self._space_name(criterion)]
        labels = self.labels(table, criterion)
        if criterion.match == "relaxed":
            return relaxed_keys(table.gstart, table.end - table.start, labels, space)
        return KeySet.build(space.encode(table.gstart, table.end - table.start, labels), space, self.corpus)

    def _situations_for(self, gold: KeySet, system: KeySet) -> np.ndarray:
        cached = self._situations.get(id(system))
        if cached is None or cached[0] is not system or cached[1] is not gold:
            sit = situations(gold, system, self.spaces["upper"], self.n_docs)
            cached = _remember(self._situations, system, (system, gold, sit))
        return cached[2]

    def compare(self, criterion: Criterion, gold, system):
        """Per-document TP, FP, FN arrays."""
        if criterion.match == "semeval":
            outcomes = scheme_outcomes(self._situations_for(gold, system), criterion.scheme)
            return outcome_counts(outcomes, criterion.scheme)
        if criterion.match == "relaxed":
            space = self.spaces[self._space_name(criterion)]
            return relaxed_counts(gold, system, space, self.corpus.doc_of, self.n_docs,
                                  self.options.relaxed_many_to_one)
        tp, fp, fn, _ = key_counts(gold, system, self.n_docs)
        return tp, fp, fn

    def semeval_outcomes(self, criterion: Criterion, gold, system) -> np.ndarray:
        return scheme_outcomes(self._situations_for(gold, system), criterion.scheme)

    # -- breakdowns -------------------------------------------------------------
    def grouping(self, criterion: Criterion, by: str) -> Grouping:
        pairs = self.vocab.pairs if criterion.match == "token" else self.vocab.upper_pairs
        n = self.n_raw if criterion.match == "token" else self.n_upper
        if by == "category":
            found = {c for c, _ in pairs}
            names = [c for c in PARENT_CATEGORIES] + sorted(found - set(PARENT_CATEGORIES))
            index = {name: i for i, name in enumerate(names)}
            of_label = [index[c] for c, _ in pairs]
        else:
            names = [f"{c}:{t}" for c, t in pairs]
            of_label = list(range(len(names)))
        of_label += [len(names)] * (n - len(of_label))
        return Grouping(tuple(names), np.array(of_label, dtype=np.int64))

    def breakdown(self, criterion: Criterion, gold, system, by: str, macro: bool = True) -> tuple[dict[str, Scores], dict[str, MacroScores]]:
        """Micro and macro scores per parent category or per subtype, as if the
        tags were filtered to the group before matching (the official filters;
        a document with nothing of a group scores P = R = 0 in its macro)."""
        grouping = self.grouping(criterion, by)
        n_groups = len(grouping.names) + 1
        if criterion.match == "relaxed":
            space = self.spaces[self._space_name(criterion)]
            tp, fp, fn = relaxed_counts(gold, system, space, self.corpus.doc_of, self.n_docs,
                                        self.options.relaxed_many_to_one, grouping.of_label, n_groups)
        else:
            _, _, _, found = key_counts(gold, system, self.n_docs)
            tp, fp, fn = grouped_key_counts(gold, system, found, grouping.of_label, n_groups, self.n_docs)
        micro, macros = {}, {}
        t, f, n = tp.sum(axis=0), fp.sum(axis=0), fn.sum(axis=0)
        ids = tuple(self.doc_ids)
        for i, name in enumerate(grouping.names):
            if by == "subtype" and t[i] + f[i] + n[i] == 0:
                continue
            micro[name] = Scores.from_counts(t[i], f[i], n[i])
            if macro:
                macros[name] = DocumentCounts(ids, tp[:, i], fp[:, i], fn[:, i]).macro()
        return micro, macros
