"""Speed of the token-level stacked learners (stacked-searn, stacked-lstm),
this tree against a baseline revision, on one fixed MEDDOCAN workload.

Historical (benchmarks/provenance.py, HISTORICAL): a one-off comparison with
revision 538a320, the stacked learners' speed fix; its results stay as that
study's record and are not regenerated.

Workload: the 12 members' published out-of-fold predictions
(cached_predictions/meddocan) on the first ``--train`` MEDDOCAN training
notes fit the learner; it predicts the first ``--dev`` dev notes (strict F1
on them printed as a check that both versions learn the same thing; it
chooses nothing). stacked-lstm runs ``--epochs`` epochs without early
stopping so both versions do the same updates.

Each measurement is a whole child process (``python bench_stacked.py
--child ...``: imports, corpus loading, fit and prediction), run ``--runs``
times in turn with the baseline: wall seconds, the child's user + system CPU
seconds (``os.wait4``), its peak RSS, and the load average before each run.
The baseline is ``git archive <--baseline>`` unpacked into a temporary
folder, run by the same interpreter.

    nice python benchmarks/ensembles/bench_stacked.py --baseline 538a320
    python benchmarks/ensembles/bench_stacked.py --tables   # rewrite the .md from the JSON

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups

from common import RESULTS, ROOT, machine_description, machine_lines, progress, write_json, write_markdown  # noqa: E402

STEM = RESULTS / "stacked-speed"
METHODS = ("stacked-searn", "stacked-lstm")


def child(method: str, n_train: int, n_dev: int, epochs: int) -> None:
    """One measured run: load, fit, predict, score; one JSON line on stdout."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ensembles import recall_first  # the published members' loader

    from ensemble_deid.ensemble import make_method
    from ensemble_deid.evaluation import Scorer

    t0 = time.perf_counter()
    train, test, oof, dev = recall_first.load()
    train, test = train[:n_train], test[:n_dev]
    params = {"epochs": epochs, "early_stopping": False, "device": "cpu"} if method == "stacked-lstm" else {}
    learner = make_method(method, **params)
    t1 = time.perf_counter()
    learner.fit(oof, train)
    t2 = time.perf_counter()
    preds = learner.predict(dev, test)
    t3 = time.perf_counter()
    f1 = Scorer(test, "strict").prf({p.doc_id: p.spans(d) for p, d in zip(preds, test)})[2]
    import torch  # the thread count the default (threads=None: torch's own) meant in this process

    print(json.dumps({"load_s": round(t1 - t0, 2), "fit_s": round(t2 - t1, 2), "predict_s": round(t3 - t2, 2),
                      "strict_f1": round(f1, 4), "threads": getattr(learner, "threads", None),
                      "torch_threads": torch.get_num_threads()}))


def measure(code: Path, method: str, args) -> dict:
    """One whole child process run from the tree ``code``."""
    env = dict(os.environ, PYTHONPATH=f"{code}{os.pathsep}{code / '.devpath'}")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", method, "--train", str(args.train),
           "--dev", str(args.dev), "--epochs", str(args.epochs)]
    load = [round(x, 2) for x in os.getloadavg()]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"bench_stacked: {method} from {code} failed (status {status})")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_mib": round(usage.ru_maxrss / 1024, 1), "load_before": load, **json.loads(out.strip().splitlines()[-1])}


def summary(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_mib", "fit_s")} | {
        "strict_f1": runs[-1]["strict_f1"], "threads": runs[-1].get("threads"),
        "torch_threads": runs[-1].get("torch_threads"), "load_range": [min(r["load_before"][0] for r in runs),
                                                          max(r["load_before"][0] for r in runs)]}


def markdown(result: dict) -> str:
    w = result["workload"]
    lines = [f"Workload: fit on the 12 members' published out-of-fold predictions for the first {w['train']} "
             f"MEDDOCAN training notes, predict the first {w['dev']} dev notes (stacked-lstm: {w['epochs']} epochs, "
             f"no early stopping); whole processes, median of {w['runs']} runs each, in turn with the baseline "
             f"(revision {result['baseline']}).", "",
             "| method | version | wall s | CPU s | fit (wall) s | peak MiB | load (1 min) at start | strict F1 (check) |",
             "|---|---|---:|---:|---:|---:|---|---:|"]
    for method, versions in result["methods"].items():
        for version in ("baseline", "this tree"):
            s = versions[version]
            lines.append(f"| {method} | {version} | {s['wall_s']:.1f} | {s['cpu_s']:.1f} | {s['fit_s']:.1f} | "
                         f"{s['peak_mib']:.0f} | {s['load_range'][0]:.1f}-{s['load_range'][1]:.1f} | "
                         f"{s['strict_f1']:.4f} |")
        b, n = versions["baseline"], versions["this tree"]
        lines.append(f"| {method} | speed-up | {b['wall_s'] / n['wall_s']:.1f}x | {b['cpu_s'] / n['cpu_s']:.1f}x | "
                     f"{b['fit_s'] / n['fit_s']:.1f}x | | | |")
    lstm = result["methods"].get("stacked-lstm", {}).get("this tree", {})
    if "torch_threads" in lstm:  # recorded since the default went back to torch's own
        whose = "torch's own: " if lstm["threads"] is None else ""
        lines += ["", f"stacked-lstm ran with threads={lstm['threads']} ({whose}{lstm['torch_threads']} thread(s) "
                      "in this process)."]
    lines += ["", "Machine:", *machine_lines(result["machine"])]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="538a320", help="git revision to compare with")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--train", type=int, default=60)
    ap.add_argument("--dev", type=int, default=30)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tables", action="store_true", help="rewrite the Markdown from the JSON")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.train, args.dev, args.epochs)
        return
    if args.tables:
        write_markdown(STEM.with_suffix(".md"), markdown(json.loads(STEM.with_suffix(".json").read_text())))
        return
    result = {"baseline": args.baseline, "machine": machine_description(("vowpalwabbit", "torch")),
              "workload": {"train": args.train, "dev": args.dev, "epochs": args.epochs, "runs": args.runs},
              "methods": {}}
    with tempfile.TemporaryDirectory(prefix="edeid-bench-stacked-") as tmp:
        base = Path(tmp)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        (base / ".devpath").mkdir()  # as in a checkout: the adapters package on the path
        (base / ".devpath" / "ensemble_deid_adapters").symlink_to("../adapters")
        for method in args.methods.split(","):
            runs = {"baseline": [], "this tree": []}
            for i in range(args.runs):
                for version, code in (("baseline", base), ("this tree", ROOT)):
                    runs[version].append(measure(code, method, args))
                    progress(f"{method} {version} run {i + 1}: {runs[version][-1]}")
            result["methods"][method] = {v: summary(r) | {"runs": r} for v, r in runs.items()}
            write_json(STEM.with_suffix(".json"), result)
    write_markdown(STEM.with_suffix(".md"), markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
