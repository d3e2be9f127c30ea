"""The six linear and structured taggers (MEMM, SEARN, MIRA, SVM, OGD,
structural SVM) on MEDDOCAN train -> dev: strict micro F1, training time and
prediction throughput.

    python benchmarks/members/bench_linear.py                          # all six, defaults (tens of minutes on 2 cores)
    python benchmarks/members/bench_linear.py --taggers memm svm:o_weight=1.0
    python benchmarks/members/bench_linear.py --limit-train 60 --limit-dev 30 --taggers mira   # smoke run

A tagger is a registry name with optional overrides (``name:key=value,...``,
as ``ensemble-deid cv --taggers``). Prints one line per tagger and a Markdown
table; merges its results into benchmarks/results/linear.json (keyed by the
tagger spec), so taggers can be run one at a time. Wall-clock and CPU
seconds are both recorded: the machine is shared, and CPU time is the
steadier of the two (VW, CRFsuite and the numpy code all learn on one
thread). No note text is printed.

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

TAGGERS = ("memm", "searn", "mira", "svm", "ogd", "struct-svm")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, ROOT, Clock, score_predictions, write_json, write_markdown  # noqa: E402


def vw_only(tagger, dev) -> dict:
    """Vowpal Wabbit's own share of a VW tagger's prediction: the data file is
    written first, then only VW's batch prediction over it is timed (model
    load, parse, hash, n-grams, predict, write the predictions)."""
    from vowpalwabbit import Workspace

    from ensemble_deid.taggers.linear import scratch_dir, vw_lines

    feats = tagger._extract(dev)
    n = sum(len(f) for f in feats)
    extra = ["--probabilities"] if tagger.name == "ogd" else []
    with scratch_dir() as tmp:
        model, data, preds = (os.path.join(tmp, x) for x in ("model.vw", "test.vw", "pred.txt"))
        with open(model, "wb") as fh:
            fh.write(tagger.model_)
        with open(data, "w", encoding="utf-8") as fh:
            for f in feats:
                fh.write("\n".join(vw_lines(f, None, tagger.n_window_)) + "\n\n")
        with Clock() as clock:
            vw = Workspace(arg_list=["-i", model, "-t", "-d", data, "-p", preds, "--quiet"] + extra)
            vw.finish()
    return {**clock.as_dict(), "tokens": n, "tokens_per_s": round(n / clock.wall),
            "tokens_per_cpu_s": round(n / max(clock.cpu, 1e-9)), "args": extra}


def run_one(spec_text: str, train, dev) -> dict:
    from ensemble_deid.experiment.cv import TaggerSpec

    spec = TaggerSpec.parse(spec_text)
    tagger = spec.make()
    n_dev = sum(len(d.tokens) for d in dev)
    with Clock() as fit:
        tagger.fit(train)
    tagger.predict(dev[:1])  # warm-up: lazy imports, caches
    with Clock() as pred:
        predictions = tagger.predict(dev)
    scored = score_predictions(dev, predictions)
    has_conf = all(p.confidences is not None for p in predictions)
    vw = vw_only(tagger, dev) if tagger.name in ("searn", "ogd") else None
    return {
        "tagger": spec.name,
        "params": tagger.get_params(),
        "version": tagger.version,
        "environment": tagger.environment(),
        "fit": fit.as_dict(),
        "predict": {**pred.as_dict(), "tokens": n_dev,
                    "tokens_per_s": round(n_dev / pred.wall), "tokens_per_cpu_s": round(n_dev / max(pred.cpu, 1e-9))},
        "strict_micro_f1": scored["f1"],
        "strict_micro": scored["strict_micro"],
        "confidences": has_conf,
        "vw_predict_only": vw,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "load_average_at_end": list(os.getloadavg()),
    }


def table(results: dict, crf: dict | None = None) -> str:
    """The docs' table (benchmarks.md, linear-taggers.md): scores, fit wall and
    CPU seconds with the load they ran under, and prediction throughput;
    ``crf`` (crf.json, bench_crf.py) adds the CRF as the reference row."""
    rows = ["| tagger | strict P | strict R | strict F1 | fit wall s | fit CPU s | load (1 min) at end "
            "| predict tokens/s (wall) | predict tokens/CPU s | run |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]

    def row(label, s, fit, predict, load, when):
        load = f"{load[0]:.1f}" if load else "not recorded"
        return (f"| {label} | {s['precision']:.4f} | {s['recall']:.4f} | {s['f1']:.4f} | {fit['wall_s']:.0f} | "
                f"{fit['cpu_s']:.0f} | {load} | {predict['tokens_per_s']:,} | {predict['tokens_per_cpu_s']:,} | "
                f"{str(when)[:10]} |")

    for label, r in results.items():
        rows.append(row(label, r["strict_micro"], r["fit"], r["predict"], r.get("load_average_at_end"), r.get("when")))
    if crf:
        rows.append(row("crf (reference, `bench_crf.py`)", crf["scores"]["strict_micro_own"], crf["fit"],
                        crf["predict"], (crf.get("environment") or {}).get("load_average_at_end"), crf.get("when")))
    return "\n".join(rows)


def write_tables(store: dict, out: Path) -> Path:
    """linear.md beside linear.json, with the CRF's row when crf.json is there."""
    crf_json = out.with_name("crf.json")
    crf = json.loads(crf_json.read_text()) if crf_json.is_file() else None
    return write_markdown(out.with_suffix(".md"), table(store["results"], crf) + "\n\n"
                          "CPU seconds are the figures to compare: each tagger learns on one thread, and on a "
                          "shared machine the wall seconds grow with the load.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--taggers", nargs="+", default=list(TAGGERS), help="tagger specs (name[:key=value,...])")
    ap.add_argument("--train", type=Path, default=MEDDOCAN / "train" / "xml")
    ap.add_argument("--dev", type=Path, default=MEDDOCAN / "dev" / "xml")
    ap.add_argument("--limit-train", type=int, default=None)
    ap.add_argument("--limit-dev", type=int, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "linear.json")
    ap.add_argument("--tables", action="store_true", help="only rewrite linear.md from linear.json")
    args = ap.parse_args()
    if args.tables:
        print(write_tables(json.loads(args.out.read_text()), args.out).read_text())
        return

    from ensemble_deid.corpus.formats import load_directory

    train = load_directory(args.train)[: args.limit_train]
    dev = load_directory(args.dev)[: args.limit_dev]
    data = {
        "train_docs": len(train), "train_tokens": sum(len(d.tokens) for d in train),
        "dev_docs": len(dev), "dev_tokens": sum(len(d.tokens) for d in dev),
    }
    full = args.limit_train is None and args.limit_dev is None
    print(f"MEDDOCAN train {data['train_docs']} docs / {data['train_tokens']} tokens -> "
          f"dev {data['dev_docs']} docs / {data['dev_tokens']} tokens", flush=True)

    store = {}
    if full and args.out.exists():
        store = json.loads(args.out.read_text())
    results = store.setdefault("results", {})
    for spec in args.taggers:
        r = run_one(spec, train, dev)
        r["data"] = data
        s = r["strict_micro"]
        print(f"{spec}: P={s['precision']:.4f} R={s['recall']:.4f} F1={s['f1']:.4f} "
              f"fit {r['fit']['wall_s']:.0f} s wall / {r['fit']['cpu_s']:.0f} s CPU, "
              f"predict {r['predict']['tokens_per_s']:,} tokens/s"
              + (f" (VW alone {r['vw_predict_only']['tokens_per_s']:,} tokens/s, "
                 f"{r['vw_predict_only']['tokens_per_cpu_s']:,} per CPU s)" if r.get("vw_predict_only") else ""),
              flush=True)
        results[spec] = r
        if full:  # only full runs go into the results file
            store.update({
                "benchmark": "linear taggers on MEDDOCAN train -> dev",
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            })
            args.out.parent.mkdir(parents=True, exist_ok=True)
            write_json(args.out, store)
            write_tables(store, args.out)
    print()
    print(table({k: results[k] for k in args.taggers}))


if __name__ == "__main__":
    main()
