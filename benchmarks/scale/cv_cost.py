"""What the published cross-validation cost: the recorded fit + predict
seconds of every part of a published prediction folder, per tagger, and the
wall time they come to on a 2-core machine (issue 18's target: the whole
10-fold CV of the MEDDOCAN study in at most 3 hours there).

    python benchmarks/scale/cv_cost.py                                    # cached_predictions/meddocan
    python benchmarks/scale/cv_cost.py --published cached_predictions/meddocan --cores 2

Reads only the folder's manifest (``published.json``, checked as the cache checks it): each part records the
seconds its fit and its prediction took when it was computed, and the
document count it was fitted on. Writes ``benchmarks/results/cv-cost-<corpus>.json``
and ``.md`` and the table in docs/benchmarks.md. The estimate is the sum of
the part times divided by the cores (parts are independent jobs: ``cv --jobs``
runs one per core); parts recorded on a faster or a loaded machine count as
they were recorded.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN_PUBLISHED, RESULTS, ROOT, replace_between_markers, shown, write_json, write_markdown  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- cv cost from cv_cost.py -->", "<!-- end of cv cost -->"
TARGET_HOURS = 3.0


def cost(manifest: dict, cores: int) -> dict:
    rows = []
    for entry in manifest.get("entries", []):
        parts = entry.get("parts", [])
        fit = sum(p.get("fit_seconds") or 0.0 for p in parts)
        predict = sum(p.get("predict_seconds") or 0.0 for p in parts)
        rows.append({"tagger": entry.get("tagger_label") or entry.get("tagger"), "version": entry.get("version"),
                     "parts": len(parts), "oof_parts": sum(p.get("kind") == "oof" for p in parts),
                     "fit_s": round(fit, 1), "predict_s": round(predict, 1), "total_s": round(fit + predict, 1)})
    total = sum(r["total_s"] for r in rows)
    return {"corpus": manifest.get("corpus"), "folds": manifest.get("folds"), "cores": cores, "taggers": rows,
            "total_s": round(total, 1), "wall_h_estimate": round(total / cores / 3600, 2),
            "target_h": TARGET_HOURS}


def markdown(result: dict) -> str:
    lines = ["| tagger | parts | fit s | predict s | fit + predict s |", "|---|---:|---:|---:|---:|"]
    for r in result["taggers"]:
        lines.append(f"| {r['tagger']} | {r['parts']} | {r['fit_s']:,.0f} | {r['predict_s']:,.0f} "
                     f"| {r['total_s']:,.0f} |")
    total, cores = result["total_s"], result["cores"]
    lines += ["", f"Total {total:,.0f} s = {total / 3600:.2f} h of one core; on {cores} cores about "
              f"**{result['wall_h_estimate']:.2f} h** of wall time (target: at most {result['target_h']:g} h)."]
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--published", type=Path, default=MEDDOCAN_PUBLISHED)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite the table in docs/benchmarks.md")
    args = ap.parse_args(argv)
    if args.cores < 1:
        ap.error("--cores must be at least 1")
    from ensemble_deid.experiment.cache import PUBLISHED_MANIFEST, PublishedFolder

    folder = PublishedFolder(args.published)  # the cache's own reader: shape and checksum checked
    if folder.manifest is None:
        raise SystemExit(f"cv_cost: {shown(args.published)}: {folder.problem}")
    result = cost(folder.manifest, args.cores)
    result["source"] = shown(args.published / PUBLISHED_MANIFEST)
    stem = RESULTS / f"cv-cost-{result['corpus']}"
    write_json(stem.with_suffix(".json"), result)
    text = markdown(result)
    write_markdown(stem.with_suffix(".md"), text)
    if not args.no_docs:
        replace_between_markers(DOC, BEGIN, END, text)
    print(text)
    return result


if __name__ == "__main__":
    main()
