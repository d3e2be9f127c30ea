"""Score the offline external systems on MEDDOCAN dev and the embedded
synthetic corpora (the figures in docs/external-systems.md).

    python -m ensemble_deid.taggers.external.benchmark [--meddocan DIR] [--systems philter,scrubadub,presidio]

Predictions are scored as they enter an ensemble: snapped to the common
tokens. On MEDDOCAN the i2b2 labels are mapped to MEDDOCAN subtypes with
``labelmaps/i2b2-to-meddocan.toml`` before strict scoring. The synthetic
corpora are the test splits of ``synthetic-2014`` and ``synthetic-2016``,
built in a temporary workspace.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Sequence

from ...corpus.document import Document
from .base import LABELMAP_DIR

CRITERIA = ("strict", "binary_token")


def score(tagger_name: str, documents: Sequence[Document], label_map=None, **params) -> dict:
    from ...evaluation import evaluate
    from ..registry import make_tagger

    tagger = make_tagger(tagger_name, **params).fit([])
    t0 = time.perf_counter()
    predictions = tagger.predict(documents)
    seconds = time.perf_counter() - t0
    system = {}
    for doc, pred in zip(documents, predictions):
        spans = pred.spans(doc)
        system[doc.id] = label_map.apply_all(spans) if label_map else spans
    report = evaluate(documents, system, criteria=CRITERIA, breakdowns=False, leak=False)
    out = {c: report[c].micro for c in CRITERIA}
    return {"seconds": seconds, "snapped": tagger.snapped_spans_, "spans": tagger.foreign_spans_, **out}


def corpora(meddocan: Path | None) -> dict[str, tuple[list[Document], object]]:
    from ...corpus.formats import load_directory
    from ...corpus.labelmap import LabelMap
    from ...corpus.workspace import Workspace

    sets: dict[str, tuple[list[Document], object]] = {}
    if meddocan is not None and (meddocan / "dev" / "xml").is_dir():
        sets["MEDDOCAN dev"] = (load_directory(meddocan / "dev" / "xml"), LabelMap.load(LABELMAP_DIR / "i2b2-to-meddocan.toml"))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(tmp)
        for name in ("synthetic-2014", "synthetic-2016"):
            try:
                sets[f"{name} test"] = (ws.load(name).test, None)
            except Exception as exc:  # the generator may be missing in a partial install
                print(f"skipping {name}: {type(exc).__name__}: {exc}")
    return sets


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meddocan", type=Path, default=Path(__file__).resolve().parents[4] / "shared" / "corpora" / "meddocan")
    ap.add_argument("--systems", default="philter,scrubadub,presidio")
    args = ap.parse_args(argv)
    from ..registry import tagger_class

    sets = corpora(args.meddocan)
    print("| system | corpus | documents | strict P | strict R | strict F1 | binary-token P | binary-token R | binary-token F1 | spans snapped | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.systems.split(","):
        ok, reason = tagger_class(name).availability()
        if not ok:
            print(f"| {name} | unavailable: {reason} |")
            continue
        for corpus, (docs, label_map) in sets.items():
            r = score(name, docs, label_map)
            s, b = r["strict"], r["binary_token"]
            print(
                f"| {name} | {corpus} | {len(docs)} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | "
                f"{b.precision:.3f} | {b.recall:.3f} | {b.f1:.3f} | {r['snapped']}/{r['spans']} | {r['seconds']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
