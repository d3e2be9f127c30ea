"""Scores of the offline external systems (philter, scrubadub, presidio) on
MEDDOCAN dev and the embedded synthetic corpora: the table of
docs/external-systems.md.

    nice -n 10 .venv/bin/python benchmarks/members/bench_external.py [--systems philter,scrubadub,presidio]

Predictions are scored as they enter an ensemble: snapped to the common
tokens. On MEDDOCAN the i2b2 labels are mapped to MEDDOCAN subtypes with
``labelmaps/i2b2-to-meddocan.toml`` before strict scoring. The synthetic
corpora are the test splits of ``synthetic-2014`` and ``synthetic-2016``,
built in a temporary workspace.

Writes benchmarks/results/external.json (figures and machine) and
benchmarks/results/external.md (the table, rendered from the JSON alone),
and copies the table into docs/external-systems.md between its
external-table markers (only for the default results file).

Data: MEDDOCAN (Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638;
CC BY 4.0), read from ../shared/corpora/meddocan, never copied.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (
    MEDDOCAN, RESULTS, ROOT, machine_description, progress, replace_between_markers, write_json, write_markdown,
)

CRITERIA = ("strict", "binary_token")
DEFAULT_OUT = RESULTS / "external.json"
DOCS = ROOT / "docs" / "external-systems.md"
BEGIN, END = "<!-- external-table:begin (benchmarks/results/external.json) -->", "<!-- external-table:end -->"


def score(tagger_name: str, documents: Sequence, label_map=None, **params) -> dict:
    from ensemble_deid.evaluation import evaluate
    from ensemble_deid.taggers.registry import make_tagger

    tagger = make_tagger(tagger_name, **params).fit([])
    t0 = time.perf_counter()
    predictions = tagger.predict(documents)
    seconds = time.perf_counter() - t0
    system = {}
    for doc, pred in zip(documents, predictions):
        spans = pred.spans(doc)
        system[doc.id] = label_map.apply_all(spans) if label_map else spans
    report = evaluate(documents, system, criteria=CRITERIA, breakdowns=False, leak=False)
    out = {c: report[c].micro.to_dict() for c in CRITERIA}
    return {"seconds": round(seconds, 2), "snapped": tagger.snapped_spans_, "spans": tagger.foreign_spans_, **out}


def corpora(meddocan: Path | None) -> dict[str, tuple[list, object]]:
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.corpus.labelmap import LabelMap
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.taggers.external.base import LABELMAP_DIR

    sets: dict[str, tuple[list, object]] = {}
    if meddocan is not None and (meddocan / "dev" / "xml").is_dir():
        sets["MEDDOCAN dev"] = (load_directory(meddocan / "dev" / "xml"), LabelMap.load(LABELMAP_DIR / "i2b2-to-meddocan.toml"))
    else:
        progress(f"MEDDOCAN not found at {meddocan}: left out")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(tmp)
        for name in ("synthetic-2014", "synthetic-2016"):
            sets[f"{name} test"] = (ws.load(name).test, None)
    return sets


def markdown_table(results: dict) -> str:
    """The docs table, from the results file alone."""
    lines = [
        "| system | corpus | documents | strict P | strict R | strict F1 | binary-token P | binary-token R "
        "| binary-token F1 | spans snapped | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        if "unavailable" in row:
            lines.append(f"| {row['system']} | unavailable: {row['unavailable']} | | | | | | | | | |")
            continue
        s, b = row["strict"], row["binary_token"]
        lines.append(
            f"| {row['system']} | {row['corpus']} | {row['documents']} | {s['precision']:.3f} | {s['recall']:.3f} | "
            f"{s['f1']:.3f} | {b['precision']:.3f} | {b['recall']:.3f} | {b['f1']:.3f} | "
            f"{row['snapped']}/{row['spans']} | {row['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meddocan", type=Path, default=MEDDOCAN)
    ap.add_argument("--systems", default="philter,scrubadub,presidio")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="results file (the docs table is updated only for the default one)")
    args = ap.parse_args(argv)
    from ensemble_deid.taggers.registry import tagger_class

    machine = machine_description()
    sets = corpora(args.meddocan)
    rows = []
    for name in args.systems.split(","):
        ok, reason = tagger_class(name).availability()
        if not ok:
            rows.append({"system": name, "unavailable": reason})
            progress(f"{name}: unavailable ({reason})")
            continue
        for corpus, (docs, label_map) in sets.items():
            progress(f"{name} on {corpus} ({len(docs)} documents)")
            rows.append({"system": name, "corpus": corpus, "documents": len(docs), **score(name, docs, label_map)})
            s = rows[-1]["strict"]
            progress(f"  strict P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f}")
    results = {"benchmark": "external", "command": "benchmarks/members/bench_external.py --systems " + args.systems,
               "meddocan": str(args.meddocan), "rows": rows, "machine": machine,
               "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    print(markdown_table(results), end="")
    write_json(args.out, results)
    write_markdown(args.out.with_suffix(".md"), markdown_table(results))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    if args.out.resolve() == DEFAULT_OUT.resolve():
        print(f"updated {replace_between_markers(DOCS, BEGIN, END, markdown_table(results))}")


if __name__ == "__main__":
    main()
