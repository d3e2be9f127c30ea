"""The token-level view of the members' outputs, for the stacked sequence
learners (SEARN, BiLSTM-CRF): per document, an (n_tokens, m) matrix of the
members' tag ids and the gold tag ids, over one tag vocabulary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..corpus.bio import gold_tags
from ..corpus.document import Document
from ..taggers.prediction import DocumentPrediction
from .base import MetaLearner
from .candidates import TagVocab


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

    def _raw_counts(self, table, raw):
        from ..evaluation import Scorer

        preds = self._raw_to_predictions(table, raw)
        counts = Scorer(table.documents, "strict").counts({p.doc_id: p.spans(d) for p, d in zip(preds, table.documents)})
        return int(counts.tp.sum()), int(counts.fp.sum()), int(counts.fn.sum())
