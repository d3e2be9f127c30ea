"""Scoring cached predictions and the end-of-run summary tables."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..corpus.document import Annotation, Document
from ..taggers.prediction import DocumentPrediction


def prediction_spans(
    documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction]
) -> dict[str, list[Annotation]]:
    """doc id -> predicted spans, for every document that has a prediction."""
    return {d.id: predictions[d.id].spans(d) for d in documents if d.id in predictions}


def strict_prf(documents: Sequence[Document], predictions: Mapping[str, DocumentPrediction]) -> tuple[float, float, float]:
    from ..evaluation import Scorer

    return Scorer(documents, criterion="strict").prf(prediction_spans(documents, predictions))


def cv_summary_table(runs: Mapping, train: Sequence[Document], test: Sequence[Document],
                     targets: Mapping[str, Sequence[Document]] | None = None, width: int | None = None,
                     shown: set[str] | None = None) -> str:
    """Per tagger, its CV and test scores; then the seconds and memory of
    its parts; then, for every other target (name -> documents, e.g. another
    corpus's test split), the taggers' strict P/R/F1 on it. Three tables
    fitted to the terminal, long specs as aliases: in one, the published
    MEDDOCAN members made 142 columns (issue 34 item 8), their legend said
    once (``shown``: see ``report.alias_notes``)."""
    from .report import spec_table

    shown = set() if shown is None else shown

    scores, costs = [], []
    for label, run in runs.items():
        cv_p, cv_r, cv_f = strict_prf(train, run.oof)
        test_f = strict_prf(test, run.targets["test"])[2] if "test" in run.targets else None
        scores.append([label, cv_p, cv_r, cv_f, test_f])
        costs.append([label, _seconds(run, "fit_seconds"), _seconds(run, "predict_seconds"), round(run.peak_mb),
                      f"{run.computed}/{run.computed + run.reused}"])
    note = ("fit s, predict s: spent by this run; \"cached N\": N seconds spent when the cached parts were made, "
            "not now") if any(run.reused for run in runs.values()) else ""
    tables = [spec_table(["tagger", "CV P", "CV R", "CV F1", "test F1"], scores, "lrrrr", width=width, shown=shown), "",
              spec_table(["tagger", "fit s", "predict s", "peak MB", "parts computed"], costs, "lrrrr",
                         notes=[note] if note else (), width=width, wrap=(1, 2), shown=shown)]
    for name, docs in (targets or {}).items():
        scores = [[label, *strict_prf(docs, run.targets[name])] for label, run in runs.items()]
        tables.append(spec_table(["tagger", "P", "R", "F1"], scores, "lrrr", width=width, shown=shown,
                                 title=f"\n{name}: strict micro scores"))
    return "\n".join(tables)


def _seconds(run, key: str) -> str:
    """Seconds this run spent, apart from those its cached parts took when made."""
    now, cached = run.seconds(key, computed=True), run.seconds(key, computed=False)
    if not run.reused:
        return f"{now:.1f}"
    if not run.computed:
        return f"cached {cached:.1f}"
    return f"{now:.1f} + cached {cached:.1f}"


def time_spent(wall: float, cpu: float | None = None, loads: Sequence[float] | None = None) -> str:
    """"609 s wall, 69 s CPU (load 11.1-11.5)": on a shared machine wall time
    alone mostly measures the others' work, so CPU time and load go beside it."""
    text = f"{wall:.0f} s wall" + ("" if cpu is None else f", {cpu:.0f} s CPU")
    return text + (" (load " + "-".join(f"{x:.1f}" for x in sorted(loads)) + ")" if loads else "")


def study_summary(result, skipped: Mapping[str, str] = {}, width: int | None = None) -> str:
    """The end of a study's output: per ensemble column, the best single
    member (chosen by CV) against the best ensemble; then timings, skipped
    taggers with the reason, and where the files are."""
    from .report import aliases
    from .table import terminal_table

    table = result.ensemble_table
    rows = []
    for j, column in enumerate(table.shown_columns):
        cells = {label: cells[j] for label, cells in table.rows}
        single = cells.get("best single member")
        methods = {label: c for label, c in cells.items()
                   if label not in ("best single member", "oracle recall (any member)") and isinstance(c.value, float)}
        if single is None or not isinstance(single.value, float) or not methods:
            continue
        best = max(methods, key=lambda m: methods[m].value)
        member = (single.params or {}).get("member", "")
        rows.append([column, aliases([member])[0] if member else "", f"{100 * single.value:.2f}", best,
                     f"{100 * methods[best].value:.2f}", f"{100 * (methods[best].value - single.value):+.2f}"])
    secs = result.manifest["seconds"]
    notes = [table.headers_legend] if table.headers and table.headers_legend else []
    notes += [f"time: {time_spent(secs['total'], secs.get('cpu'), secs.get('load_average'))}; base taggers "
              f"{secs['base_taggers']:.0f} s, ensembles {secs['ensembles']:.0f} s wall"]
    notes += [f"skipped {name}: {reason}" for name, reason in skipped.items()]
    notes.append(f"results: {result.directory} (base_taggers and ensembles as .md/.csv/.json/.tex, "
                 f"plots .png, manifest.json)")
    return terminal_table(["test: member set", "best single member (CV)", "F1", "best ensemble", "F1", "Δ F1"], rows,
                          align="llrlrr", title="Summary", notes=notes, width=width)
