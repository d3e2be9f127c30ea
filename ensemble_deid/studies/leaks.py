"""Leak-first figures: the share of gold PHI entities and tokens a system
leaves uncovered, overall and per category, with 95% document-bootstrap
intervals, and the members' oracle recall as the ceiling (issue 28).

The leak rates are ``evaluation.leak``'s (a gold PHI token leaks unless every
character of it is covered by some predicted span; an entity leaks when one
of its tokens does). The interval resamples documents with replacement
(``reps`` times, seeded; the same resamples for every unit and category) and
takes the 2.5% and 97.5% quantiles of the pooled rate. The ceiling of an
ensemble's leak is the leak of the union of its members' spans
(:func:`union_spans`): selecting among them covers no more.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..corpus.document import Annotation, Document
from ..taggers.prediction import DocumentPrediction

OVERALL = "all"
UNITS = ("entity", "token")
Spans = Mapping[str, Sequence[Annotation]]  # document id -> predicted spans


@dataclass(frozen=True)
class Leak:
    tokens: int  # gold PHI units (tokens or entities)
    leaked: int
    low: float  # 95% bootstrap interval of the rate
    high: float

    @property
    def rate(self) -> float:
        return self.leaked / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict:
        return {"rate": round(self.rate, 5), "tokens": self.tokens, "leaked": self.leaked,
                "ci95": [round(self.low, 5), round(self.high, 5)]}

    def percent(self) -> str:
        """``2.71 (2.00-3.50)``: the rate and its interval in percent (a narrow table cell)."""
        return f"{100 * self.rate:.2f} ({100 * self.low:.2f}-{100 * self.high:.2f})"


def per_document_leaks(documents: Sequence[Document], spans: Spans) -> list[dict]:
    """Per document, {"all" or CATEGORY: {unit: (gold units, leaked units)}}."""
    return _per_document(_evaluated(documents, spans))


def _evaluated(documents: Sequence[Document], spans: Spans):
    from ..evaluation import evaluate

    documents = list(documents)
    return evaluate(documents, {d.id: list(spans[d.id]) for d in documents}, criteria=["strict"], breakdowns=False,
                    leak=True, leak_documents=True).leak if documents else None


def _per_document(report) -> list[dict]:
    if report is None:
        return []
    return [{key: {"entity": (r.entities, r.leaked_entities), "token": (r.tokens, r.leaked_tokens)}
             for key, r in ((OVERALL, doc.overall), *doc.by_category.items())} for doc in report.by_document]


def leak_table(documents: Sequence[Document], spans: Spans, reps: int = 1000, seed: int = 0) -> dict[str, dict[str, Leak]]:
    """unit ("entity", "token") -> "all" or category -> the leak with its
    interval (categories without gold PHI left out)."""
    return bootstrap_leaks(_evaluated(documents, spans), reps, seed)


def bootstrap_leaks(report, reps: int = 1000, seed: int = 0) -> dict[str, dict[str, Leak]]:
    """:func:`leak_table` of an ``evaluate(..., leak_documents=True)`` leak
    report (None: no documents)."""
    return bootstrap_documents(_per_document(report), reps, seed)


def bootstrap_documents(per_doc: Sequence[Mapping[str, Mapping[str, Sequence[int]]]], reps: int = 1000,
                        seed: int = 0) -> dict[str, dict[str, Leak]]:
    """:func:`bootstrap_leaks` of per-document counts, as
    :func:`per_document_leaks` gives them ({"all" or CATEGORY: {unit:
    (gold units, leaked units)}} per document; a bundle keeps them)."""
    keys = [OVERALL] + sorted({k for d in per_doc for k in d if k != OVERALL})
    idx = np.random.default_rng(seed).integers(0, len(per_doc), size=(reps, len(per_doc))) if per_doc else None
    out: dict[str, dict[str, Leak]] = {u: {} for u in UNITS}
    for unit in UNITS:
        for key in keys:
            total = np.array([d.get(key, {}).get(unit, (0, 0))[0] for d in per_doc], dtype=float)
            leaked = np.array([d.get(key, {}).get(unit, (0, 0))[1] for d in per_doc], dtype=float)
            if not total.sum():
                continue
            rates = leaked[idx].sum(1) / np.maximum(total[idx].sum(1), 1)
            out[unit][key] = Leak(int(total.sum()), int(leaked.sum()), float(np.quantile(rates, 0.025)),
                                  float(np.quantile(rates, 0.975)))
    return out


def leak_rates(documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction],
               reps: int = 1000, seed: int = 0) -> dict[str, Leak]:
    """Token leak rate with its interval, overall ("all") and per category
    (categories without gold PHI tokens left out)."""
    from .summary import prediction_spans

    return leak_table(documents, prediction_spans(documents, predictions), reps, seed)["token"]


def leak_rows(leaks: Mapping[str, dict], f1: Mapping[str, float | None], ceiling: dict | None = None,
              ceiling_label: str = "union (ceiling)") -> tuple[list[str], list[list]]:
    """A narrow table (80 columns for names up to 29 characters): per system
    its F1, then its entity and token leak rates in percent with their 95%
    intervals (``leaks``: system -> :func:`leak_table`); the ceiling last."""
    def cells(table):
        return [table[u][OVERALL].percent() if OVERALL in table[u] else "" for u in ("entity", "token")]

    rows = [[name, f1.get(name), *cells(table)] for name, table in leaks.items()]
    if ceiling is not None:
        rows.append([ceiling_label, None, *cells(ceiling)])
    return ["system", "F1", "entity leak %", "token leak %"], rows


def category_rows(leaks: Mapping[str, dict], unit: str = "token") -> tuple[list[str], list[list]]:
    """Per category (rows), the ``unit`` leak in percent with its interval
    of a few systems (columns: keep them few to stay narrow)."""
    cats = sorted({c for table in leaks.values() for c in table[unit] if c != OVERALL})
    rows = [[c, *(table[unit][c].percent() if c in table[unit] else "" for table in leaks.values())] for c in cats]
    return ["category", *leaks], rows


def union_spans(documents: Sequence[Document], systems: Mapping[str, Spans]) -> dict[str, list[Annotation]]:
    """Every span of every system, per document: the members' union, whose
    leak no selection of their spans goes below."""
    return {d.id: [a for spans in systems.values() for a in spans[d.id]] for d in documents}


def oracle_token_recall(documents: Sequence[Document], members: Mapping[str, Mapping[str, DocumentPrediction]]) -> float:
    """The ceiling of any ensemble of these members: the share of gold PHI
    tokens (binary token criterion) that at least one member's spans cover
    exactly as a token key."""
    return oracle_recalls(documents, members)[OVERALL]


def oracle_recalls(documents: Sequence[Document], members: Mapping[str, Mapping[str, DocumentPrediction]],
                   criterion: str = "binary-token") -> dict[str, float]:
    """The members' union recall under the ``binary-token`` or ``token``
    criterion (type included), overall ("all") and per category of the gold
    token: no selection of these members' spans, per-category thresholds
    included, finds more."""
    from ..ensemble.objective import GoldKeys, token_keys

    if criterion not in ("binary-token", "token"):
        raise ValueError(f"oracle recall: criterion {criterion!r} is not 'binary-token' or 'token'")
    gold = GoldKeys(documents)
    hit: dict[str, int] = {}
    total: dict[str, int] = {}
    for d, doc in enumerate(documents):
        found = set()
        for preds in members.values():
            for a in preds[doc.id].spans(doc):
                found.update(token_keys(doc.text, a.start, a.end) if criterion == "binary-token" else
                             ((a.category, a.type, s, e) for s, e in token_keys(doc.text, a.start, a.end)))
        keys = gold.binary[d] if criterion == "binary-token" else {k: {c} for k, c in gold.token[d].items()}
        for key, cats in keys.items():
            for k in (OVERALL, *cats):
                total[k] = total.get(k, 0) + 1
                hit[k] = hit.get(k, 0) + (key in found)
    return {k: hit[k] / total[k] for k in sorted(total)} if total else {OVERALL: 0.0}
