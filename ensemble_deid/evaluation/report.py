"""The result of an evaluation: per-criterion micro/macro scores, breakdowns
per parent category and per subtype, SemEval outcome counts, leak rates."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .leak import LeakReport
from .metrics import DocumentCounts, MacroScores, Scores
from .options import EvalOptions


@dataclass(frozen=True)
class CriterionResult:
    criterion: str
    micro: Scores
    macro: MacroScores
    documents: DocumentCounts
    by_category: dict[str, Scores] = field(default_factory=dict)
    by_subtype: dict[str, Scores] = field(default_factory=dict)
    outcomes: dict[str, float] | None = None  # SemEval: correct, incorrect, partial, missed, spurious
    category_macro: dict[str, MacroScores] = field(default_factory=dict)  # the official per-category macro figures

    def to_dict(self, documents: bool = False, shown: Mapping[str, str] | None = None) -> dict:
        """``shown`` renames groups (unknown type names, see ``EvaluationReport.shown_names``)."""
        name = (lambda k: shown.get(k, k)) if shown else (lambda k: k)
        out = {
            "micro": self.micro.to_dict(),
            "macro": self.macro.to_dict(),
            "by_category": {name(k): v.to_dict() for k, v in self.by_category.items()},
            "by_category_macro": {name(k): v.to_dict() for k, v in self.category_macro.items()},
            "by_subtype": {name(k): v.to_dict() for k, v in self.by_subtype.items()},
        }
        if self.outcomes is not None:
            out["outcomes"] = dict(self.outcomes)
        if documents:
            out["documents"] = {
                d: {"tp": _n(tp), "fp": _n(fp), "fn": _n(fn)}
                for d, tp, fp, fn in zip(self.documents.doc_ids, self.documents.tp.tolist(),
                                         self.documents.fp.tolist(), self.documents.fn.tolist())
            }
        return out


def _n(x):
    return int(x) if float(x).is_integer() else float(x)


@dataclass(frozen=True)
class EvaluationReport:
    results: dict[str, CriterionResult]
    leak: LeakReport | None
    doc_ids: tuple[str, ...]
    options: EvalOptions
    missing: tuple[str, ...] = ()  # gold documents without system output
    missing_policy: str = "error"
    extra: tuple[str, ...] = ()  # system documents without gold (ignored)
    known_names: frozenset[str] = frozenset()  # names a label map declared: printed as they are

    def __getitem__(self, criterion: str) -> CriterionResult:
        return self.results[criterion]

    def __contains__(self, criterion: str) -> bool:
        return criterion in self.results

    @property
    def criteria(self) -> tuple[str, ...]:
        return tuple(self.results)

    @property
    def n_documents(self) -> int:
        return len(self.doc_ids)

    def shown_names(self) -> dict[str, str]:
        """Each category and label of the breakdowns as reports print it: a
        name outside the known schemes and the label map is data (a PHI word
        in a type column) and shows as ``unknown-N``."""
        from ..corpus.formats.schemes import shown_labels

        groups = {k for r in self.results.values() for k in (*r.by_category, *r.by_subtype, *r.category_macro)}
        groups |= set(self.leak.by_category) if self.leak is not None else set()
        return shown_labels(sorted(groups), self.known_names)

    def to_dict(self, documents: bool = False) -> dict:
        shown = self.shown_names()
        leak = self.leak.to_dict() if self.leak is not None else None
        if leak is not None:
            leak["by_category"] = {shown.get(k, k): v for k, v in leak["by_category"].items()}
        return {
            "documents": self.n_documents,
            "missing_system_documents": {"policy": self.missing_policy, "ids": list(self.missing)},
            "extra_system_documents": list(self.extra),
            "options": self.options.to_dict(),
            "criteria": {k: v.to_dict(documents, shown) for k, v in self.results.items()},
            "leak": leak,
        }
