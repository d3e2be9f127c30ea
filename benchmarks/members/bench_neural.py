"""Neural taggers on MEDDOCAN (train -> dev as test): strict micro F1, epochs,
wall/CPU time and tokens/s for training and inference, per variant.

    python benchmarks/members/bench_neural.py                                  # all four variants (long)
    python benchmarks/members/bench_neural.py --variants lstm-crf-l            # one
    python benchmarks/members/bench_neural.py --variants lstm-crf-l --limit-train 60 --limit-dev 30 --set epochs=3   # smoke
    python benchmarks/members/bench_neural.py --variants lstm-crf-l --baseline   # version-1 defaults too, same run
    python benchmarks/members/bench_neural.py --tables      # Markdown tables from the results files, into docs/neural-taggers.md
    python benchmarks/members/bench_neural.py --variants lstm-crf-l --throughput batch_size=4,16,32 --limit-train 100
        # training throughput only: 2 fixed epochs per value, no held-out part, no refit

Prints the figures and merges them, variant by variant, into
benchmarks/results/neural.json (a later run of one variant keeps the others).
With ``--baseline`` each variant is first fitted with the defaults its
adapter had at version 1 (``VERSION_1``: batches of 4, patience 8, refit from
scratch) and the result is kept under ``baseline`` beside the current
defaults' figures, with the speed-ups between the two. A run with
``--set random_state=N`` is kept under ``other_seeds`` (its version-1 fit,
with ``--baseline``, under ``baseline_other_seeds``): the seed's share of
an F1 difference, not in place of the default seed's; the side-by-side table
then compares the means over seeds.
Training tokens/s count the training epochs only (not the per-epoch held-out
evaluation), per wall second and per CPU second of this process; "fit tokens
per CPU s" divides the training notes' tokens by the whole fit's CPU seconds
(corpus vectors, every epoch, the held-out scoring and any refit): the cost
of one model, which is what a cross-validation pays ten times. Inference
tokens/s are those of ``predict`` on the dev set, marginals (confidences)
included. Wall-clock and CPU seconds are both kept: the machine is shared,
and CPU time is the steadier of the two. No note text is printed.

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
# The defaults each adapter had at version 1 where they differ from today's:
# ``--baseline`` fits these in the same run as the current defaults.
_VERSION_1_COMMON = {"batch_size": 4, "validation_fraction": 0.1, "patience": 8, "anneal_patience": 3, "refit": True}
VERSION_1 = {
    "lstm-crf-n": {**_VERSION_1_COMMON, "epochs": 80},
    "lstm-crf-l": {**_VERSION_1_COMMON, "epochs": 100},
    "lstm-crf-fea": {**_VERSION_1_COMMON, "epochs": 80},
    "lstm-l": {**_VERSION_1_COMMON, "epochs": 100, "batch_size": 16},
}
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, ROOT, Clock, replace_between_markers, score_predictions, write_json, write_markdown  # noqa: E402


def parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def run_variant(name: str, params: dict, train, dev, checkpoint_dir: Path | None, suffix: str = "") -> dict:
    from ensemble_deid.taggers.registry import tagger_class

    tagger = tagger_class(name)(**params)
    print(f"\n== {name}: {tagger!r}", flush=True)
    with Clock() as c_fit:
        tagger.fit(train)
    info = tagger.train_info_
    hist = tagger.history_
    train_seconds = sum(h["seconds"] for h in hist)
    train_cpu = sum(h.get("cpu_seconds", 0.0) for h in hist)
    train_tok_s = info["train_tokens"] * len(hist) / train_seconds if train_seconds else 0.0
    train_tok_cpu_s = info["train_tokens"] * len(hist) / train_cpu if train_cpu else None
    with Clock() as c_pred:
        preds = tagger.predict(dev)
    n_dev_tok = sum(len(d.tokens) for d in dev)
    scored = score_predictions(dev, preds)
    if checkpoint_dir is not None:
        tagger.save(checkpoint_dir / f"{name}{suffix}.pt")
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
        "train_tokens_per_cpu_s": None if train_tok_cpu_s is None else round(train_tok_cpu_s),
        "fit_tokens_per_cpu_s": round(sum(len(d.tokens) for d in train) / c_fit.cpu) if c_fit.cpu else None,
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
          f"fit {c_fit.wall:.0f}s wall / {c_fit.cpu:.0f}s CPU; training {train_tok_s:,.0f} tokens/s, "
          f"{train_tok_cpu_s or 0:,.0f} tokens per CPU s; fit {result['fit_tokens_per_cpu_s']:,} tokens per CPU s")
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
    ap.add_argument("--baseline", action="store_true",
                    help="also fit each variant at its version-1 defaults (VERSION_1), first, in the same run")
    ap.add_argument("--baseline-only", action="store_true", help="fit only the version-1 defaults")
    ap.add_argument("--throughput", metavar="PARAM=V1,V2,...", default=None,
                    help="training tokens per CPU s for each value of one parameter (2 fixed epochs on the "
                         "training notes, no held-out part, no refit; other parameters as --set or the defaults); "
                         "written to neural-throughput.json")
    ap.add_argument("--throughput-epochs", type=int, default=2)
    ap.add_argument("--tables", action="store_true",
                    help="only write the Markdown tables of the results file (next to it, .md) and print them")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "neural.json")
    args = ap.parse_args()
    if args.tables:
        text = tables(json.loads(args.out.read_text(encoding="utf-8")))
        sweep = args.out.with_name("neural-throughput.json")
        if sweep.exists():
            text += "\nTraining throughput by batch size:\n\n" + throughput_table(
                json.loads(sweep.read_text(encoding="utf-8")))
        gpu = args.out.with_name("neural-gpu.json")
        if gpu.exists():
            text += "\n" + gpu_table(json.loads(args.out.read_text(encoding="utf-8")),
                                     json.loads(gpu.read_text(encoding="utf-8")))
        write_markdown(args.out.with_suffix(".md"), text)
        replace_between_markers(DOC, BEGIN, END, text)
        print(text)
        return
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

    if args.throughput:
        throughput(args, params, train)
        return
    previous = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    results, baselines = previous.get("variants", {}), previous.get("baseline", {})
    # Kept as they were: version 1's figures from before this script ran it, and
    # runs of the current defaults at other seeds (added below with --set random_state=N).
    extra = {k: previous[k] for k in ("baseline_recorded", "other_seeds", "baseline_other_seeds") if k in previous}
    other_seed = "random_state" in overrides
    smoke = args.limit_train is not None or args.limit_dev is not None
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        baseline = None  # this run's, when asked for
        if args.baseline or args.baseline_only:
            # Version-1 defaults first, then the current ones, on the same machine in the same run.
            print(f"\n-- {name} at its version-1 defaults {VERSION_1[name]}", flush=True)
            # --set wins over version 1's values too (a smoke run's epochs=1, say).
            baseline = run_variant(
                name, {**params, **VERSION_1[name], **overrides}, train, dev, args.checkpoint_dir, "-baseline"
            )
            if not smoke:
                if other_seed:  # beside the default seed's, as for the current defaults
                    _add_seed(extra.setdefault("baseline_other_seeds", {}).setdefault(name, []), baseline)
                else:
                    baselines[name] = baseline
                save(args, train, dev, results, baselines, extra)  # kept even if the second fit is cut short
            if args.baseline_only:
                continue
        result = run_variant(name, params, train, dev, args.checkpoint_dir)
        reference = baseline if baseline is not None else baselines.get(name)
        if reference:
            print(f"  against version 1: {speedups(reference, result)}", flush=True)
        if smoke:
            continue  # smoke runs never overwrite the recorded figures
        if other_seed:
            _add_seed(extra.setdefault("other_seeds", {}).setdefault(name, []), result)
        else:
            results[name] = result
        save(args, train, dev, results, baselines, extra)


def _add_seed(runs: list, result: dict) -> None:
    """Keep ``result`` among the runs at other seeds, replacing one at its seed."""
    runs[:] = [r for r in runs if r["params"]["random_state"] != result["params"]["random_state"]] + [result]


def save(args, train, dev, results: dict, baselines: dict, extra: dict) -> None:
    """Write the results file (and its Markdown tables beside it)."""
    import torch

    n_train_tok = sum(len(d.tokens) for d in train)
    n_dev_tok = sum(len(d.tokens) for d in dev)
    out = {
        "benchmark": "neural taggers on MEDDOCAN train -> dev",
        "data": {"train_docs": len(train), "train_tokens": n_train_tok, "dev_docs": len(dev), "dev_tokens": n_dev_tok},
        "environment": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "pytorch-crf": metadata.version("pytorch-crf"),
            "cpus": os.cpu_count(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "threads": args.threads,
        },
        "variants": results,
        "baseline": baselines,
        **extra,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, out)
    write_markdown(args.out.with_suffix(".md"), tables(out))
    print(f"  -> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


def throughput(args, params: dict, train) -> None:
    """Training throughput (tokens per CPU second of the training epochs) for
    each value of one parameter, on fixed short runs: the figures behind the
    batch-size choice, cheap enough to rerun."""
    from ensemble_deid.taggers.registry import tagger_class

    key, _, values = args.throughput.partition("=")
    fixed = {**params, "epochs": args.throughput_epochs, "patience": 0, "refit": False, "validation_fraction": 0.0}
    path = args.out.with_name("neural-throughput.json")
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    rows = data.setdefault("runs", {})
    n_tok = sum(len(d.tokens) for d in train)
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        for value in [parse_value(v) for v in values.split(",")]:
            tagger = tagger_class(name)(**{**fixed, key: value})
            tagger.fit(train)
            hist = tagger.history_
            cpu = sum(h["cpu_seconds"] for h in hist)
            row = {"variant": name, "param": key, "value": value, "train_docs": len(train), "train_tokens": n_tok,
                   "epochs": len(hist), "cpu_s": round(cpu, 2), "wall_s": round(sum(h["seconds"] for h in hist), 2),
                   "train_tokens_per_cpu_s": round(n_tok * len(hist) / cpu) if cpu else None,
                   "loss": round(hist[-1]["loss"], 5), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                   "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
            rows[f"{name} {key}={value}"] = row
            print(f"{name} {key}={value}: {row['train_tokens_per_cpu_s']:,} training tokens per CPU s "
                  f"({row['cpu_s']} CPU s, loss {row['loss']})", flush=True)
        write_json(path, data)
    print(f"  -> {path}")


DOC = ROOT / "docs" / "neural-taggers.md"
BEGIN, END = "<!-- tables from bench_neural.py --tables -->", "<!-- end of tables -->"


def _sort_number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def throughput_table(data: dict) -> str:
    rows = sorted(data.get("runs", {}).values(), key=lambda r: (r["variant"], r["param"], _sort_number(r["value"]), str(r["value"])))
    lines = ["| tagger | parameter | training notes (tokens) | epochs | CPU s | training tokens per CPU s |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| `{r['variant']}` | {r['param']}={r['value']} | {r['train_docs']} ({r['train_tokens']:,}) "
                     f"| {r['epochs']} | {r['cpu_s']:.1f} | {_n(r['train_tokens_per_cpu_s'])} |")
    return "\n".join(lines) + "\n"


def _x(ratio) -> str:
    return "–" if ratio is None else f"{ratio:.1f}x"


def _n(x, digits: int = 0) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def _epochs(r: dict) -> str:
    if not r.get("held_out_documents"):
        return str(r["epochs_run"])  # no held-out part: every epoch, no best one
    held = f"{r['epochs_run']} ({r['best_epoch']})"
    return held + (f" + {r['refit']['epochs']} refit" if r.get("refit") else "")


def gpu_table(cpu: dict, gpu: dict) -> str:
    """The same variants and settings fitted on a GPU (``--device cuda --out
    neural-gpu.json``) beside the CPU figures of the main results file."""
    env = gpu.get("environment", {})
    lines = [f"On a GPU ({env.get('gpu') or 'GPU'}, torch {env.get('torch')}, {env.get('cpus')} CPU cores), "
             "the same settings (epochs, no held-out part) against the CPU figures above"
             + (f"; {gpu['note']}" if gpu.get("note") else "") + ":", "",
             "| tagger | device | strict F1 | fit wall s | training tokens/s | inference tokens/s |",
             "|---|---|---:|---:|---:|---:|"]
    for name in VARIANTS:
        g, c = gpu.get("variants", {}).get(name), cpu.get("variants", {}).get(name)
        if g is None:
            continue
        for label, r in (("CPU", c), ("GPU", g)):
            if r is not None:
                lines.append(f"| `{name}` | {label} | {r['f1']:.4f} | {r['fit']['wall_s']:.0f} | "
                             f"{_n(r['train_tokens_per_s'])} | {_n(r['predict']['tokens_per_s'])} |")
        if c is not None:
            lines.append(f"| `{name}` | GPU speed-up | | {_x(c['fit']['wall_s'] / g['fit']['wall_s'])} | "
                         f"{_x(g['train_tokens_per_s'] / c['train_tokens_per_s'])} | "
                         f"{_x(g['predict']['tokens_per_s'] / c['predict']['tokens_per_s'])} |")
    return "\n".join(lines) + "\n"


def _load(run: dict) -> str:
    """The 1-minute load average when the run ended (wall seconds mean little without it)."""
    load = run.get("load_average_at_end")
    return f"{load[0]:.1f}" if load else "not recorded"


def tables(data: dict) -> str:
    """The Markdown tables of docs/neural-taggers.md, from a results file:
    the current defaults, version 1's, and the two side by side (with any
    runs of the current defaults at other seeds, ``other_seeds``)."""
    variants, baselines = data.get("variants", {}), data.get("baseline", {})
    order = [v for v in VARIANTS if v in variants]
    lines = []
    titles = ("Current defaults", "Version-1 defaults (* an earlier run, by the version-1 code)")
    for title, group in zip(titles, (variants, baselines)):
        names = [v for v in VARIANTS if v in group]
        if not names:
            continue
        lines += [
            f"{title}:",
            "",
            "| tagger | strict P | strict R | strict F1 | epochs (best) [+ refit] | held-out F1 | fit wall s "
            "| fit CPU s | load (1 min) at end | train tokens per CPU s | fit tokens per CPU s "
            "| inference tokens per CPU s |",
            "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name in names:
            r = group[name]
            sm = r["scores"]["strict_micro"]
            mark = "*" if r.get("recorded_with") else ""
            lines.append(
                f"| `{name}`{mark} | {sm['precision']:.4f} | {sm['recall']:.4f} | {r['f1']:.4f} | {_epochs(r)} "
                f"| {_n(r['best_held_out_f1'], 4)} | {_n(r['fit']['wall_s'])} | {_n(r['fit']['cpu_s'])} "
                f"| {_load(r)} | {_n(r.get('train_tokens_per_cpu_s'))} | {_n(r.get('fit_tokens_per_cpu_s'))} "
                f"| {_n(r['predict'].get('tokens_per_cpu_s'))} |"
            )
        lines.append("")
    compared = [v for v in order if v in baselines]
    if compared:
        lines += [
            "Side by side (* an earlier run, by the version-1 code):",
            "",
            "| tagger | defaults | strict F1 | epochs (best) [+ refit] | fit CPU s | train tokens per CPU s "
            "| fit tokens per CPU s |",
            "|---|---|---:|---|---:|---:|---:|",
        ]
        recorded = data.get("baseline_recorded", {})
        for name in compared:
            rows = [("version 1, earlier run (version-1 code)", recorded[name])] if name in recorded else []
            seeds = data.get("other_seeds", {}).get(name, [])
            base_seeds = data.get("baseline_other_seeds", {}).get(name, [])
            rows += [("version 1", baselines[name])]
            rows += [(f"version 1, random_state={r['params']['random_state']}", r) for r in base_seeds]
            rows += [("current", variants[name])]
            rows += [(f"current, random_state={r['params']['random_state']}", r) for r in seeds]
            for label, r in rows:
                label += "*" if r.get("recorded_with") and "version-1 code" not in label else ""
                lines.append(
                    f"| `{name}` | {label} | {r['f1']:.4f} | {_epochs(r)} | {_n(r['fit']['cpu_s'])} "
                    f"| {_n(r.get('train_tokens_per_cpu_s'))} | {_n(r.get('fit_tokens_per_cpu_s'))} |"
                )
            sp = speedups(baselines[name], variants[name])
            change = f"{sp.get('f1_change_points', 0):+.3f} pt"
            if seeds or base_seeds:
                # Seeds move F1 by a few tenths of a point: the means are the fairer comparison.
                now, then = [variants[name], *seeds], [baselines[name], *base_seeds]
                diff = sum(map(_f1, now)) / len(now) - sum(map(_f1, then)) / len(then)
                change += f" (mean of {len(now)} seeds against mean of {len(then)}: {100 * diff:+.3f} pt)"
            lines.append(
                f"| `{name}` | **current / version 1** | {change} | | "
                f"**{_x(sp.get('fit_cpu_s'))}** | **{_x(sp.get('train_tokens_per_cpu_s'))}** "
                f"| **{_x(sp.get('fit_tokens_per_cpu_s'))}** |"
            )
    return "\n".join(lines) + "\n"


def _f1(r: dict) -> float:
    """Strict micro F1, unrounded when the scores are there."""
    return r.get("scores", {}).get("strict_micro", {}).get("f1", r["f1"])


def speedups(baseline: dict, result: dict) -> dict:
    """Current defaults against version 1: throughput ratios (> 1: faster) and the F1 change."""
    def ratio(key):
        a, b = result.get(key), baseline.get(key)
        return round(a / b, 2) if a and b else None

    return {
        "train_tokens_per_cpu_s": ratio("train_tokens_per_cpu_s"),
        "fit_tokens_per_cpu_s": ratio("fit_tokens_per_cpu_s"),
        "fit_cpu_s": round(baseline["fit"]["cpu_s"] / result["fit"]["cpu_s"], 2) if result["fit"]["cpu_s"] else None,
        "f1_change_points": round(100 * (_f1(result) - _f1(baseline)), 3),
    }


if __name__ == "__main__":
    main()
