"""The transformer tagger's training and inference throughput, on a tiny
model built from scratch (no download): a WordPiece tokenizer trained on the
training notes and a BERT of random weights (``tests/tiny_transformer.py``),
fine-tuned for a fixed number of epochs (no held-out part, so every epoch
trains every note), then tagging the test notes.

    python benchmarks/members/bench_transformer.py                      # embedded synthetic-2014 train -> test
    python benchmarks/members/bench_transformer.py --meddocan --limit-train 100 --limit-dev 50   # MEDDOCAN train -> dev
    python benchmarks/members/bench_transformer.py --hidden 128 --layers 4   # a larger tiny model

Training tokens/s: the common tokens of the training notes times the epochs,
over the epochs' wall and CPU seconds (this process; one torch thread);
pieces/s the same for the windows' sub-word pieces (special tokens
included, overlaps counted twice). Inference: ``predict`` on the test notes
(windows, softmax, BIO decoding). The strict F1 of such a model says little
(random weights, a few epochs) and is kept only as a sanity check. Results
merge, per corpus and model size, into benchmarks/results/transformer.json;
the table (benchmarks/results/transformer.md) goes into
docs/neural-taggers.md through ``benchmarks/sync_docs.py``. No note text is
printed.

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, ROOT, Clock, machine_description, score_predictions, write_json, write_markdown  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "transformer.json"
TABLE = ROOT / "benchmarks" / "results" / "transformer.md"


def load_corpus(args):
    if args.meddocan:
        from ensemble_deid.corpus.formats import load_directory

        return ("MEDDOCAN train -> dev", load_directory(MEDDOCAN / "train" / "xml")[: args.limit_train],
                load_directory(MEDDOCAN / "dev" / "xml")[: args.limit_dev])
    from ensemble_deid.corpus.workspace import Workspace

    with tempfile.TemporaryDirectory() as ws:
        corpus = Workspace(ws).load("synthetic-2014")
        return ("synthetic-2014 train -> test", list(corpus.train)[: args.limit_train],
                list(corpus.test)[: args.limit_dev])


def run(args) -> dict:
    sys.path.insert(0, str(ROOT))
    from tests.tiny_transformer import tiny_checkpoint

    from ensemble_deid.taggers.registry import make_tagger

    corpus, train, test = load_corpus(args)
    with tempfile.TemporaryDirectory() as tmp:
        folder = tiny_checkpoint(Path(tmp) / "model", [d.text for d in train], vocab_size=args.vocab,
                                 hidden=args.hidden, layers=args.layers, heads=args.heads, positions=args.max_length)
        params = {"model_path": str(folder), "epochs": args.epochs, "validation_fraction": 0.0, "lr": args.lr,
                  "warmup": 0.0, "max_length": args.max_length, "stride": args.stride, "batch_size": args.batch_size,
                  "num_threads": 1, "device": args.device}
        tagger = make_tagger("transformer", **params)
        with Clock() as fit:
            tagger.fit(train)
        with Clock() as infer:
            predictions = tagger.predict(test)
    history = tagger.history_
    train_tokens = tagger.train_info_["train_tokens"] * len(history)
    epochs_wall = sum(h["seconds"] for h in history)
    epochs_cpu = sum(h["cpu_seconds"] for h in history)
    pieces = sum(h["pieces_per_s"] * h["seconds"] for h in history)
    test_tokens = sum(len(d.tokens) for d in test)
    model = f"{args.layers} layers, hidden {args.hidden}, vocab {args.vocab}"
    return {
        "key": f"{corpus} | {model}",
        "corpus": corpus, "model": model, "train_docs": len(train), "test_docs": len(test),
        "train_tokens": tagger.train_info_["train_tokens"], "test_tokens": test_tokens,
        "windows": tagger.train_info_["train_windows"], "device": tagger.train_info_["device"],
        "params": {k: v for k, v in params.items() if k != "model_path"},
        "fit": fit.as_dict(), "predict": infer.as_dict(),
        "train_tokens_per_s": round(train_tokens / epochs_wall, 1),
        "train_tokens_per_cpu_s": round(train_tokens / epochs_cpu, 1),
        "train_pieces_per_cpu_s": round(pieces / epochs_cpu, 1),
        "predict_tokens_per_s": round(test_tokens / infer.wall, 1),
        "predict_tokens_per_cpu_s": round(test_tokens / infer.cpu, 1),
        "loss_by_epoch": [round(h["loss"], 4) for h in history],
        "strict_f1": score_predictions(test, predictions)["f1"],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def table(results: dict) -> str:
    lines = [
        "| corpus | model | device | train docs (tokens) | epochs | training tokens/CPU s | training tokens/s (wall) "
        "| inference tokens/CPU s | inference tokens/s (wall) | test strict F1 |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["runs"].values():
        lines.append(
            f"| {r['corpus']} | {r['model']} | {r['device']} | {r['train_docs']} ({r['train_tokens']:,}) "
            f"| {r['params']['epochs']} | {r['train_tokens_per_cpu_s']:,.0f} | {r['train_tokens_per_s']:,.0f} "
            f"| {r['predict_tokens_per_cpu_s']:,.0f} | {r['predict_tokens_per_s']:,.0f} | {r['strict_f1']:.4f} |")
    lines.append("| GPU | – | not measured | – | – | – | – | – | – | – |")
    return "\n".join(lines) + (
        "\n\nCPU: one torch thread on a shared 2-core machine (CPU seconds of the process are the steadier figure; "
        "wall seconds depend on the load). GPU: no GPU machine was lent to the task that wrote this benchmark, so "
        "there are no GPU figures; the tagger uses a GPU when torch sees one (`device=auto`), in mixed precision.\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meddocan", action="store_true", help="MEDDOCAN train -> dev instead of synthetic-2014")
    ap.add_argument("--limit-train", type=int, default=None)
    ap.add_argument("--limit-dev", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--stride", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results file (the table goes beside it)")
    args = ap.parse_args(argv)
    result = run(args)
    print(json.dumps({k: v for k, v in result.items() if k not in ("params",)}, indent=1))
    results = json.loads(args.out.read_text()) if args.out.is_file() else {"runs": {}}
    results["benchmark"] = "transformer tagger, tiny model from scratch: training and inference throughput"
    results["machine"] = machine_description(("transformers", "tokenizers", "safetensors"))
    results["runs"][result["key"]] = result
    write_json(args.out, results)
    write_markdown(args.out.with_suffix(".md"), table(results))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
