"""Scoring cached predictions and the end-of-run summary tables."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..corpus.document import Annotation, Document
from ..taggers.prediction import DocumentPrediction
from .table import render_table


def prediction_spans(
    documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction]
) -> dict[str, list[Annotation]]:
    """doc id -> predicted spans, for every document that has a prediction."""
    return {d.id: predictions[d.id].spans(d) for d in documents if d.id in predictions}


def strict_prf(documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction]) -> tuple[float, float, float]:
    from ..evaluation import Scorer

    return Scorer(documents, criterion="strict").prf(prediction_spans(documents, predictions))


def cv_summary_table(runs: Mapping, train: Sequence[Document], test: Sequence[Document],
                     targets: Mapping[str, Sequence[Document]] | None = None) -> str:
    """One row per tagger: CV and test scores, then strict P/R/F1 on every
    other target (name -> documents, e.g. another corpus's test split)."""
    targets = targets or {}
    rows = []
    for label, run in runs.items():
        cv_p, cv_r, cv_f = strict_prf(train, run.oof)
        test_f = strict_prf(test, run.targets["test"])[2] if "test" in run.targets else None
        scores = [x for name, docs in targets.items() for x in strict_prf(docs, run.targets[name])]
        rows.append([
            label, cv_p, cv_r, cv_f, test_f, *scores, f"{run.fit_seconds:.1f}", f"{run.predict_seconds:.1f}",
            round(run.peak_mb), f"{run.computed}/{run.computed + run.reused}",
        ])
    headers = ["tagger", "CV P", "CV R", "CV F1", "test F1", *(f"{name} {x}" for name in targets for x in ("P", "R", "F1")),
               "fit s", "predict s", "peak MB", "parts computed"]
    return render_table(headers, rows)
