"""Leak-first figures: the share of gold PHI tokens a system leaves
uncovered, overall and per category, with 95% document-bootstrap intervals,
and the members' oracle recall as the ceiling (issue 28).

The leak rate is ``evaluation.leak``'s token rate (a gold PHI token leaks
unless every character of it is covered by some predicted span). The
interval resamples documents with replacement (``reps`` times, seeded) and
takes the 2.5% and 97.5% quantiles of the pooled rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..corpus.document import Document
from ..taggers.prediction import DocumentPrediction

OVERALL = "all"


@dataclass(frozen=True)
class Leak:
    tokens: int
    leaked: int
    low: float  # 95% bootstrap interval of the rate
    high: float

    @property
    def rate(self) -> float:
        return self.leaked / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict:
        return {"rate": round(self.rate, 5), "tokens": self.tokens, "leaked": self.leaked,
                "ci95": [round(self.low, 5), round(self.high, 5)]}


def per_document_leaks(documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction]) -> list[dict]:
    """Per document, {"all" or CATEGORY: (PHI tokens, leaked tokens)}."""
    from ..evaluation import evaluate

    out = []
    for doc in documents:
        pred = predictions[doc.id]
        rep = evaluate([doc], {doc.id: pred.spans(doc)}, criteria=["strict"], breakdowns=False, leak=True).leak
        out.append({OVERALL: (rep.overall.tokens, rep.overall.leaked_tokens),
                    **{c: (r.tokens, r.leaked_tokens) for c, r in rep.by_category.items()}})
    return out


def leak_rates(documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction],
               reps: int = 1000, seed: int = 0) -> dict[str, Leak]:
    """Token leak rate with its interval, overall ("all") and per category
    (categories without gold PHI tokens left out)."""
    per_doc = per_document_leaks(documents, predictions)
    keys = [OVERALL] + sorted({k for d in per_doc for k in d if k != OVERALL})
    idx = np.random.default_rng(seed).integers(0, len(per_doc), size=(reps, len(per_doc))) if per_doc else None
    out = {}
    for key in keys:
        tokens = np.array([d.get(key, (0, 0))[0] for d in per_doc], dtype=float)
        leaked = np.array([d.get(key, (0, 0))[1] for d in per_doc], dtype=float)
        if not tokens.sum():
            continue
        rates = leaked[idx].sum(1) / np.maximum(tokens[idx].sum(1), 1)
        out[key] = Leak(int(tokens.sum()), int(leaked.sum()), float(np.quantile(rates, 0.025)),
                        float(np.quantile(rates, 0.975)))
    return out


def oracle_token_recall(documents: Sequence[Document], members: Mapping[str, Mapping[str, DocumentPrediction]]) -> float:
    """The ceiling of any ensemble of these members: the share of gold PHI
    tokens (binary token criterion) that at least one member's spans cover
    exactly as a token key."""
    from ..ensemble.objective import GoldKeys, token_keys

    gold = GoldKeys(documents)
    hit = 0
    for d, doc in enumerate(documents):
        found = set()
        for preds in members.values():
            for a in preds[doc.id].spans(doc):
                found.update(token_keys(doc.text, a.start, a.end))
        hit += len(found & set(gold.binary[d]))
    total = gold.totals()[0]["binary-token"]
    return hit / total if total else 0.0
