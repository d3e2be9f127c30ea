"""The neural members of a fitted bundle predicting a folder of notes, in
process after loading: CPU seconds per million tokens of ``predict_tags``
(what voting reads) and ``predict`` (with confidences), per member, for
this code and, with ``--baseline DIR``, a checkout of the code before a
change, alternating in the same run (``--pairs`` rounds), with whether the
outputs agree (tags identical; confidences' largest difference).

    python benchmarks/members/bench_neural_predict.py --model WS/model-best --notes MEDDOCAN/dev/brat \\
        --baseline /tmp/base --threads 1 --pairs 2

``--baseline``: e.g. ``git archive <commit> | tar -x -C DIR`` (its
``.devpath`` is made if missing). Each side runs in a fresh process
(``code_env``) that loads the bundle once and times every neural member
on every note. Results: benchmarks/results/neural-predict.json and a table
in neural-predict.md. No note text is printed.

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import RESULTS, ROOT, code_env, load1, machine_description, progress, write_json, write_markdown  # noqa: E402

NEURAL = ("lstm-crf-n", "lstm-crf-l", "lstm-l", "lstm-crf-fea")


def worker(model: str, notes: str, threads: int, out: str) -> None:
    """One side: time each neural member; its figures and outputs into ``out`` (a pickle)."""
    import torch

    torch.set_num_threads(threads)
    from ensemble_deid.corpus.document import Document
    from ensemble_deid.deid.model import Deidentifier

    m = Deidentifier.load(model)
    docs = [Document(p.stem, p.read_text(encoding="utf-8")) for p in sorted(Path(notes).glob("*.txt"))]
    n_tokens = sum(len(d.tokens) for d in docs)
    figures, outputs = {}, {}
    for label, tagger in m.members.items():
        if label.split(":")[0] not in NEURAL:
            continue
        c = time.process_time()
        tags = tagger.predict_tags(docs)
        c1 = time.process_time()
        full = tagger.predict(docs)
        c2 = time.process_time()
        figures[label] = {"predict_tags_cpu_s": c1 - c, "predict_cpu_s": c2 - c1}
        outputs[label] = ([p.tags for p in tags], [(p.tags, p.confidences) for p in full])
    with open(out, "wb") as fh:
        pickle.dump({"n_docs": len(docs), "n_tokens": n_tokens, "figures": figures, "outputs": outputs}, fh)


def _side(tree: Path, args, out: Path) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "--model", args.model, "--notes", args.notes,
            "--threads", str(args.threads), "--out", str(out)]
    subprocess.run(argv, env=code_env(tree, extend=False), cwd=tree, check=True)
    with open(out, "rb") as fh:
        return pickle.load(fh)


def _agreement(new: dict, old: dict) -> dict:
    import numpy as np

    found = {}
    for label, (tags, full) in new["outputs"].items():
        o_tags, o_full = old["outputs"][label]
        found[label] = {
            "predict_tags_identical": sum(a == b for a, b in zip(tags, o_tags)),
            "predict_tags_identical_in_predict": sum(a[0] == b[0] for a, b in zip(full, o_full)),
            "confidences_bit_equal": sum(np.array_equal(a[1], b[1]) for a, b in zip(full, o_full)),
            "confidences_max_abs_difference": max(
                (float(np.abs(a[1] - b[1]).max()) for a, b in zip(full, o_full) if len(a[1])), default=0.0),
            "documents": len(tags),
        }
    return found


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--notes", required=True, help="a folder of .txt notes")
    ap.add_argument("--threads", type=int, default=1, help="torch threads set before loading (a member's own "
                    "num_threads still applies while it predicts)")
    ap.add_argument("--baseline", type=Path, help="a checkout of the code before the change")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.model, args.notes, args.threads, args.out)
        return {}
    if args.baseline is not None and not (args.baseline / ".devpath").exists():
        (args.baseline / ".devpath").mkdir()
        (args.baseline / ".devpath" / "ensemble_deid_adapters").symlink_to("../adapters")
    runs = {"this": [], "baseline": []}
    agreement = None
    loads = [load1()]
    with tempfile.TemporaryDirectory(prefix="bench-neural-predict-") as tmp:
        for i in range(max(1, args.pairs)):
            progress(f"pair {i + 1}: this code")
            new = _side(ROOT, args, Path(tmp) / "this.pkl")
            runs["this"].append(new["figures"])
            if args.baseline is not None:
                progress(f"pair {i + 1}: baseline")
                old = _side(args.baseline, args, Path(tmp) / "base.pkl")
                runs["baseline"].append(old["figures"])
                agreement = _agreement(new, old)
            loads.append(load1())
    n_tokens = new["n_tokens"]
    members = {}
    for label in runs["this"][0]:
        row = {}
        for side in ("this", "baseline"):
            for what in ("predict_tags", "predict"):
                values = [r[label][f"{what}_cpu_s"] for r in runs[side]]
                if values:
                    row[f"{side}_{what}_cpu_s_per_m_tokens"] = round(statistics.median(values) / n_tokens * 1e6, 1)
        if runs["baseline"]:
            for what in ("predict_tags", "predict"):
                ratios = [o[label][f"{what}_cpu_s"] / n[label][f"{what}_cpu_s"]
                          for n, o in zip(runs["this"], runs["baseline"])]
                row[f"{what}_speedup"] = round(statistics.median(ratios), 2)
        members[label] = row
    result = {
        "benchmark": "neural-predict", "model": str(args.model), "notes": str(args.notes), "documents": new["n_docs"],
        "tokens": n_tokens, "threads": args.threads, "pairs": max(1, args.pairs),
        "baseline": str(args.baseline) if args.baseline else None, "members": members, "agreement": agreement,
        "load_range": [min(loads), max(loads)], "machine": machine_description(("torch",)),
    }
    write_json(RESULTS / "neural-predict.json", result)
    write_markdown(RESULTS / "neural-predict.md", _table(result))
    print(_table(result))
    return result


def _table(r: dict) -> str:
    lines = [f"Neural members predicting {r['documents']} notes ({r['tokens']:,} tokens), CPU seconds per million "
             f"tokens, torch threads {r['threads']}, median of {r['pairs']} alternating pair(s), load "
             f"{r['load_range'][0]}-{r['load_range'][1]}.", "",
             "| member | predict_tags (before) | predict_tags | speed-up | predict (before) | predict | speed-up "
             "| tags identical | confidences max abs difference |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, row in r["members"].items():
        agree = (r["agreement"] or {}).get(label, {})
        tags = (f"{agree['predict_tags_identical']}/{agree['documents']}" if agree else "-")
        conf = f"{agree['confidences_max_abs_difference']:.1e}" if agree else "-"
        lines.append(f"| {label.split(':')[0]} | {row.get('baseline_predict_tags_cpu_s_per_m_tokens', '-')} | "
                     f"{row['this_predict_tags_cpu_s_per_m_tokens']} | {row.get('predict_tags_speedup', '-')} | "
                     f"{row.get('baseline_predict_cpu_s_per_m_tokens', '-')} | {row['this_predict_cpu_s_per_m_tokens']} | "
                     f"{row.get('predict_speedup', '-')} | {tags} | {conf} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
