"""The token-level view of the members' outputs, for the stacked sequence
learners (SEARN, BiLSTM-CRF): per document, an (n_tokens, m) matrix of the
members' tag ids and the gold tag ids, over one tag vocabulary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..corpus.bio import gold_tags
from ..corpus.document import Document
from ..evaluation import Scorer
from ..taggers.prediction import DocumentPrediction
from .base import MetaLearner
from .candidates import TagVocab
from .objective import GoldKeys, tally_spans


@dataclass
class TokenTable:
    member_names: tuple[str, ...]
    documents: list[Document]
    vocab: TagVocab
    member_ids: list[np.ndarray]  # per document, (n_tokens, m) int32
    gold_ids: list[np.ndarray]  # per document, (n_tokens,) int32

    def __repr__(self) -> str:
        return f"TokenTable(members={len(self.member_names)}, documents={len(self.documents)})"

    @property
    def n_members(self) -> int:
        return len(self.member_names)

    def subset(self, doc_indices) -> "TokenTable":
        idx = [int(i) for i in doc_indices]
        return TokenTable(self.member_names, [self.documents[i] for i in idx], self.vocab,
                          [self.member_ids[i] for i in idx], [self.gold_ids[i] for i in idx])

    def sequences(self, max_length: int | None = None):
        """(document index, first token, end token) of every sentence, long
        sentences cut into pieces of at most ``max_length`` tokens."""
        out = []
        for d, doc in enumerate(self.documents):
            for a, b in doc.tokens.sentences():
                step = max_length or (b - a)
                for s in range(a, b, max(step, 1)):
                    out.append((d, s, min(b, s + step)))
        return out

    def to_predictions(self, raw: Sequence[np.ndarray], tags: Sequence[str]) -> list[DocumentPrediction]:
        """Predictions from per-document arrays of ids into ``tags``."""
        names = np.array(list(tags), dtype=object)
        return [DocumentPrediction(doc.id, tuple(names[ids].tolist())) for doc, ids in zip(self.documents, raw)]


def build_token_table(members: Sequence[Mapping[str, DocumentPrediction]], names: Sequence[str],
                      documents: Sequence[Document]) -> TokenTable:
    vocab = TagVocab()
    member_ids, gold = [], []
    for doc in documents:
        cols = [vocab.encode(preds[doc.id].tags) for preds in members]
        member_ids.append(np.stack(cols, axis=1) if cols else np.zeros((len(doc.tokens), 0), np.int32))
        gold.append(vocab.encode(gold_tags(doc)))
    return TokenTable(tuple(names), list(documents), vocab, member_ids, gold)


class TokenMetaLearner(MetaLearner):
    """A method labelling tokens from the members' tags. ``raw`` is a list of
    per-document arrays of ids into ``self.tags_`` (the output tags seen in
    fit, ``O`` first)."""

    level = "token"

    def _prepare(self, members, names, documents):
        return build_token_table(members, names, documents)

    def _output_tags(self, table: TokenTable) -> None:
        """Output tag set: O plus every gold tag of the fitting documents."""
        seen = set()
        for g in table.gold_ids:
            seen.update(np.unique(g).tolist())
        tags = sorted(table.vocab.tags[i] for i in seen if i != 0)
        self.tags_ = ("O", *tags)

    def _input_index(self, table: TokenTable, known: Mapping[str, int], unknown: int) -> np.ndarray:
        """Map table vocabulary ids to this learner's input ids."""
        return np.array([known.get(t, unknown) for t in table.vocab.tags], dtype=np.int64)

    def _raw_to_predictions(self, table, raw):
        return table.to_predictions(raw, self.tags_)

    # --- a score to move along: the probability that a token is PHI -----------
    def _marginals(self, table: TokenTable) -> list[np.ndarray]:
        """Per document, (n_tokens, len(tags_)) posterior tag probabilities."""
        raise NotImplementedError

    def _scores(self, table: TokenTable):
        """Per document: (P(not O), the most likely tag other than O, the own
        rule's tags)."""
        out = []
        for probs, own in zip(self._marginals(table), self._predict_native(table)):
            phi = 1.0 - probs[:, 0] if len(probs) else np.zeros(0)
            best = probs[:, 1:].argmax(axis=1) + 1 if probs.shape[1] > 1 else np.zeros(len(probs), np.int64)
            out.append((phi, best, own))
        return out

    score_meaning = "the probability that a token is PHI"

    def score_range(self) -> tuple[float, float]:
        return 0.0, 1.0

    def _select(self, table, scores, points):
        """A token is tagged with its most likely PHI tag when P(not O) >= the
        threshold of that tag's category (or ``"*"``), else O; tokens of
        categories the point does not name keep the own rule's tag."""
        cats = np.array([""] + [t[2:].split(":", 1)[0].upper() for t in self.tags_[1:]], dtype=object)
        out = []
        for point in points:
            point = point or {}
            raw = []
            for phi, best, own in scores:
                tags = own.copy()
                cat = cats[best]
                for key, tau in point.items():
                    rows = np.ones(len(phi), bool) if key == "*" else cat == key
                    if key == "*":  # categories named explicitly win over "*"
                        rows &= ~np.isin(cat, [k for k in point if k != "*"])
                    tags[rows] = np.where(phi[rows] >= tau, best[rows], 0)
                raw.append(tags)
            out.append(raw)
        return out

    def threshold_candidates(self, pooled_scores):
        return [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
                0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99]

    def _score_values(self, scores) -> np.ndarray:
        return np.concatenate([phi for phi, _, _ in scores]) if scores else np.zeros(0)

    def _predict_native(self, table: TokenTable) -> list[np.ndarray]:
        raise NotImplementedError

    def _predict_raw(self, table: TokenTable) -> list[np.ndarray]:
        if getattr(self, "operating_point", None):
            return self._select(table, self._scores(table), [self.operating_point])[0]
        return self._predict_native(table)

    def _raw_counts(self, table, raw):
        preds = self._raw_to_predictions(table, raw)
        counts = Scorer(table.documents, "strict").counts({p.doc_id: p.spans(d) for p, d in zip(preds, table.documents)})
        return int(counts.tp.sum()), int(counts.fp.sum()), int(counts.fn.sum())

    def _tally(self, table, raw):
        preds = self._raw_to_predictions(table, raw)
        return tally_spans(gold_keys_of(table), [p.spans(d) for p, d in zip(preds, table.documents)])


def gold_keys_of(table: TokenTable) -> GoldKeys:
    """The gold keys of a token table (computed once per table)."""
    keys = table.__dict__.get("_gold_keys")
    if keys is None:
        keys = table.__dict__["_gold_keys"] = GoldKeys(table.documents)
    return keys
