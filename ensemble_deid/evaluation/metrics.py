"""Counts and averages: precision, recall, F-beta; micro and macro.

micro: P, R, F from counts pooled over the documents (the ranked figure).
macro (official definition): the mean of per-document precision and of
per-document recall, with their population standard deviations; macro F is the
F of those two means. A document with nothing in scope scores P = R = 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def f_beta(p: float, r: float, beta: float = 1.0) -> float:
    """(1 + β²)·P·R / (β²·P + R); 0 when P and R are both 0."""
    b2 = beta * beta
    denominator = b2 * p + r
    return (1 + b2) * p * r / denominator if denominator else 0.0


def _ratio(a, b) -> float:
    return float(a) / float(b) if b else 0.0


def _num(x):
    x = x.item() if hasattr(x, "item") else x
    return int(x) if float(x).is_integer() else float(x)


class _FScores:
    """F1 and F2 from a class's precision and recall (micro or macro)."""

    precision: float
    recall: float

    @property
    def f1(self) -> float:
        return f_beta(self.precision, self.recall, 1.0)

    @property
    def f2(self) -> float:
        return f_beta(self.precision, self.recall, 2.0)


@dataclass(frozen=True)
class Scores(_FScores):
    """Pooled counts and their precision, recall, F1 and F2."""

    tp: float
    fp: float
    fn: float

    @classmethod
    def from_counts(cls, tp, fp, fn) -> "Scores":
        return cls(_num(tp), _num(fp), _num(fn))

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    def to_dict(self) -> dict:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": self.precision,
                "recall": self.recall, "f1": self.f1, "f2": self.f2}


@dataclass(frozen=True)
class MacroScores(_FScores):
    precision: float
    precision_sd: float
    recall: float
    recall_sd: float
    n_documents: int

    def to_dict(self) -> dict:
        return {"precision": self.precision, "precision_sd": self.precision_sd, "recall": self.recall,
                "recall_sd": self.recall_sd, "f1": self.f1, "f2": self.f2, "n_documents": self.n_documents}


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = np.zeros(np.broadcast(a, b).shape)
    np.divide(a, b, out=out, where=b != 0)
    return out


@dataclass(frozen=True)
class DocumentCounts:
    """Per-document TP, FP, FN (numpy arrays, in gold order) of one criterion.

    Significance tests and bootstraps pair systems on these rows."""

    doc_ids: tuple[str, ...]
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray

    def __len__(self) -> int:
        return len(self.doc_ids)

    def precision_recall(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-document precision and recall (0 where undefined)."""
        return _safe_div(self.tp, self.tp + self.fp), _safe_div(self.tp, self.tp + self.fn)

    def micro(self) -> Scores:
        return Scores.from_counts(self.tp.sum(), self.fp.sum(), self.fn.sum())

    def macro(self) -> MacroScores:
        p, r = self.precision_recall()
        if not len(p):
            return MacroScores(0.0, 0.0, 0.0, 0.0, 0)
        return MacroScores(float(p.mean()), float(p.std()), float(r.mean()), float(r.std()), len(p))

    def prf(self) -> tuple[float, float, float]:
        m = self.micro()
        return m.precision, m.recall, m.f1

    def take(self, indices: Sequence[int] | np.ndarray) -> "DocumentCounts":
        """The rows at ``indices`` (e.g. a bootstrap resample)."""
        idx = np.asarray(indices, dtype=np.int64)
        return DocumentCounts(tuple(self.doc_ids[i] for i in idx.tolist()), self.tp[idx], self.fp[idx], self.fn[idx])


def micro_prf(tp, fp, fn) -> tuple[float, float, float]:
    """Micro P, R, F1 from (arrays of) counts."""
    tp, fp, fn = float(np.sum(tp)), float(np.sum(fp)), float(np.sum(fn))
    p, r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    return p, r, f_beta(p, r)
