"""10-fold cross-validation of a tagger on MEDDOCAN: --jobs 2 against --jobs 1.

    python benchmarks/scale/bench_cv.py                          # CRF, 100 L-BFGS iterations
    python benchmarks/scale/bench_cv.py --tagger crf:max_iterations=30 --limit-train 200

Each run fills a fresh temporary cache (out-of-fold predictions of the 10
folds and the test predictions of a model trained on all of train), so both
runs do the same 11 fits. Prints wall and CPU seconds, the speed-up, the
cross-validated and test strict F1, and checks the cache with ``verify``.
Writes benchmarks/results/cv.json and the docs' table cv.md (``--tables``
rewrites it from the JSON). The machine should be otherwise idle: the
speed-up of two jobs needs both cores.

MEDDOCAN (CC BY 4.0): Marimon et al., IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import load_range, write_json, write_markdown  # noqa: E402
MEDDOCAN = ROOT.parent / "shared" / "corpora" / "meddocan"


def run(train, test, spec, jobs, folds):
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation
    from ensemble_deid.studies.summary import strict_prf

    with tempfile.TemporaryDirectory(prefix="bench-cv-") as tmp:
        cache = PredictionCache(tmp)
        engine = CrossValidation(train, {"test": test}, cache, k=folds, seed=0)
        w0 = time.perf_counter()
        c0 = resource.getrusage(resource.RUSAGE_SELF)
        load_before = os.getloadavg()[0]
        runs = engine.run([spec], jobs=jobs, progress=False)
        wall = time.perf_counter() - w0
        c1 = resource.getrusage(resource.RUSAGE_SELF)
        # This process only: joblib's worker processes stay alive, so their CPU
        # is not reported to us; the per-part fit/predict sums cover it.
        cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
        problems = cache.verify()
        run_ = runs[spec.label]
        size = sum(f.stat().st_size for f in Path(tmp).rglob("*.npz"))
        return {
            "jobs": jobs, "load_before": round(load_before, 2), "wall_s": round(wall, 2), "driver_cpu_s": round(cpu, 2),
            "fit_s_sum": round(run_.fit_seconds, 2), "predict_s_sum": round(run_.predict_seconds, 2),
            "parts": run_.computed, "verify_problems": len(problems),
            "cv_f1": round(strict_prf(train, run_.oof)[2], 4),
            "test_f1": round(strict_prf(test, run_.targets["test"])[2], 4),
            "cache_npz_bytes": size,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tagger", default="crf", help="tagger spec, e.g. crf:max_iterations=50")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--limit-train", type=int, default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cv.json"))
    ap.add_argument("--tables", action="store_true", help="only rewrite cv.md from cv.json")
    args = ap.parse_args()
    if args.tables:
        table = markdown(json.loads(Path(args.out).read_text()))
        write_markdown(Path(args.out).with_suffix(".md"), table)
        print(table)
        return

    from ensemble_deid.experiment.cv import TaggerSpec
    from ensemble_deid.corpus.formats import load_directory

    train = load_directory(MEDDOCAN / "train" / "xml")[: args.limit_train]
    test = load_directory(MEDDOCAN / "dev" / "xml")
    spec = TaggerSpec.parse(args.tagger)
    print(f"{spec.label}: {args.folds}-fold CV on {len(train)} MEDDOCAN train documents "
          f"({sum(len(d.tokens) for d in train):,} tokens), test = {len(test)} dev documents")
    results = []
    for jobs in (1, 2):
        res = run(train, test, spec, jobs, args.folds)
        results.append(res)
        print(f"  --jobs {jobs}: {res['wall_s']:.1f} s wall, {res['fit_s_sum']:.1f} s fitting (sum over parts), "
              f"CV F1 {res['cv_f1']:.4f}, test F1 {res['test_f1']:.4f}, verify problems {res['verify_problems']}")
    speedup = results[0]["wall_s"] / results[1]["wall_s"]
    print(f"speed-up of --jobs 2 over --jobs 1: {speedup:.2f}x (target >= 1.7x)")
    out = {
        "benchmark": "cv --jobs 1 vs --jobs 2 on MEDDOCAN", "tagger": spec.label, "folds": args.folds,
        "train_docs": len(train), "test_docs": len(test), "runs": results, "speedup": round(speedup, 3),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_at_end": os.getloadavg()},
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_json(Path(args.out), out)
    write_markdown(Path(args.out).with_suffix(".md"), markdown(out))
    print(f"wrote {args.out} and its .md")


def markdown(out: dict) -> str:
    """The docs' table (benchmarks.md): wall seconds with the CPU seconds and
    the load beside them (the driver's CPU only: joblib's workers do not
    report theirs; the fit seconds summed over the parts cover them)."""
    end = (out.get("machine") or {}).get("load_average_at_end") or [None]
    lines = ["| jobs | wall s | driver CPU s | fit s (sum over parts) | load (1 min) | CV strict F1 | test strict F1 "
             "| `cache verify` problems |", "|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in out["runs"]:
        load = load_range(r.get("load_before"), end[0] if r is out["runs"][-1] else None)
        load += "" if "load_before" in r or load == "not recorded" else " (at the end)"
        lines.append(f"| {r['jobs']} | {r['wall_s']:.1f} | {r['driver_cpu_s']:.1f} | {r['fit_s_sum']:.1f} | {load} "
                     f"| {r['cv_f1']:.4f} | {r['test_f1']:.4f} | {r['verify_problems']} |")
    lines += ["", f"Speed-up of --jobs 2: {out['speedup']:.2f}x ({out['tagger']}, {out['folds']} folds, "
                  f"{out['train_docs']} training documents, {out.get('machine', {}).get('cpus', '?')} cores, "
                  f"{str(out.get('when', ''))[:10]})."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
