"""Neural taggers on MEDDOCAN (train -> dev as test): strict micro F1, epochs,
wall/CPU time and tokens/s for training and inference, per variant.

    python benchmarks/bench_neural.py                                  # all four variants (long)
    python benchmarks/bench_neural.py --variants lstm-crf-l            # one
    python benchmarks/bench_neural.py --variants lstm-crf-l --limit-train 60 --limit-dev 30 --set epochs=3   # smoke

Prints the figures and merges them, variant by variant, into
benchmarks/results/neural.json (a later run of one variant keeps the others).
Training tokens/s count the training epochs only (not the per-epoch held-out
evaluation); inference tokens/s are those of ``predict`` on the dev set,
marginals (confidences) included. Wall-clock and CPU seconds are both kept:
the machine is shared, and CPU time is the steadier of the two. No note text
is printed.

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

VARIANTS = ("lstm-crf-n", "lstm-crf-l", "lstm-l", "lstm-crf-fea")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MEDDOCAN, ROOT, Clock, score_predictions  # noqa: E402


def parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def run_variant(name: str, params: dict, train, dev, checkpoint_dir: Path | None) -> dict:
    from ensemble_deid.taggers.registry import tagger_class

    tagger = tagger_class(name)(**params)
    print(f"\n== {name}: {tagger!r}", flush=True)
    with Clock() as c_fit:
        tagger.fit(train)
    info = tagger.train_info_
    hist = tagger.history_
    train_seconds = sum(h["seconds"] for h in hist)
    train_tok_s = info["train_tokens"] * len(hist) / train_seconds if train_seconds else 0.0
    with Clock() as c_pred:
        preds = tagger.predict(dev)
    n_dev_tok = sum(len(d.tokens) for d in dev)
    scored = score_predictions(dev, preds)
    if checkpoint_dir is not None:
        tagger.save(checkpoint_dir / f"{name}.pt")
    result = {
        "params": tagger.get_params(),
        "f1": scored["f1"],
        "scores": scored,
        "epochs_run": info["epochs_run"],
        "best_epoch": info["best_epoch"],
        "max_epochs": tagger.epochs,
        "stopped_early": info["stopped_early"],
        "best_held_out_f1": None if info["best_held_out_f1"] is None else round(info["best_held_out_f1"], 4),
        "train_documents": info["train_documents"],
        "held_out_documents": info["held_out_documents"],
        "train_tokens": info["train_tokens"],
        # The final run on every training note (refit=True).
        "refit": {k: round(v, 5) if isinstance(v, float) else v for k, v in info["refit"].items()}
        if info.get("refit") else None,
        "fit": c_fit.as_dict(2),
        "train_tokens_per_s": round(train_tok_s),
        "predict": {**c_pred.as_dict(2), "tokens": n_dev_tok,
                    "tokens_per_s": round(n_dev_tok / c_pred.wall),
                    "tokens_per_cpu_s": round(n_dev_tok / c_pred.cpu) if c_pred.cpu else None},
        "device": info["device"],
        "history": [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in h.items()} for h in hist],
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    sm = scored.get("strict_micro", {})
    print(f"{name}: strict micro F1 {scored['f1']:.4f}"
          + (f" (P {sm.get('precision', float('nan')):.4f}, R {sm.get('recall', float('nan')):.4f})" if sm else ""))
    print(f"  epochs {info['epochs_run']} (best {info['best_epoch']}, ceiling {tagger.epochs}); "
          f"fit {c_fit.wall:.0f}s wall / {c_fit.cpu:.0f}s CPU; training {train_tok_s:,.0f} tokens/s")
    print(f"  predict dev: {c_pred.wall:.1f}s wall, {n_dev_tok / c_pred.wall:,.0f} tokens/s "
          f"({result['predict']['tokens_per_cpu_s']:,} tokens/CPU-s)", flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=Path, default=MEDDOCAN / "train" / "xml")
    ap.add_argument("--dev", type=Path, default=MEDDOCAN / "dev" / "xml")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--limit-train", type=int, default=None)
    ap.add_argument("--limit-dev", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the num_threads parameter)")
    ap.add_argument("--device", default="cpu", help="cpu (the figures in docs/), auto or cuda")
    ap.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                    help="override a tagger parameter (JSON value), e.g. --set epochs=3")
    ap.add_argument("--checkpoint-dir", type=Path, default=None, help="save each fitted model here")
    ap.add_argument("--verbose", action="store_true", help="a tqdm progress bar per variant")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "neural.json")
    args = ap.parse_args()
    # Per-epoch lines (loss, held-out F1, tokens/s) on stderr; --verbose adds the bar.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logging.getLogger("ensemble_deid.taggers.neural").setLevel(logging.INFO)

    from ensemble_deid.corpus.formats import load_directory

    with Clock() as c_load:
        train = load_directory(args.train)[: args.limit_train]
        dev = load_directory(args.dev)[: args.limit_dev]
        for d in train + dev:
            d.tokens  # the corpus's tokenization, not the tagger's work
    n_train_tok = sum(len(d.tokens) for d in train)
    n_dev_tok = sum(len(d.tokens) for d in dev)
    print(f"MEDDOCAN train {len(train)} docs / {n_train_tok} tokens; dev {len(dev)} docs / {n_dev_tok} tokens "
          f"(loaded in {c_load.wall:.1f}s)")

    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = parse_value(value)
    params = {"num_threads": args.threads, "device": args.device, "verbose": args.verbose, **overrides}
    if args.checkpoint_dir is not None:
        args.checkpoint_dir.mkdir(parents=True, exist_ok=True)

    results = {}
    if args.out.exists():
        results = json.loads(args.out.read_text(encoding="utf-8")).get("variants", {})
    smoke = args.limit_train is not None or args.limit_dev is not None
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        result = run_variant(name, params, train, dev, args.checkpoint_dir)
        if smoke:
            continue  # smoke runs never overwrite the recorded figures
        results[name] = result
        import torch

        out = {
            "benchmark": "neural taggers on MEDDOCAN train -> dev",
            "data": {"train_docs": len(train), "train_tokens": n_train_tok, "dev_docs": len(dev), "dev_tokens": n_dev_tok},
            "environment": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "pytorch-crf": metadata.version("pytorch-crf"),
                "cpus": os.cpu_count(),
                "threads": args.threads,
            },
            "variants": results,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"  -> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
