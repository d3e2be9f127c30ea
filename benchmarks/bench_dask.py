"""``deidentify --backend dask`` with 2 local workers against 1, on the same
notes: a scheduler and N single-thread worker processes on 127.0.0.1 are
started for each run (the tests' ``tests/clusters.py``) and stopped after.
Each run is timed from process start to exit; the outputs of both are
compared byte for byte with a sequential local run's. The machine's load
average is recorded beside (a 2-core machine shared with other jobs caps
what a second worker can give).

    python benchmarks/bench_dask.py --model MODEL --notes /work/shared/corpora/meddocan/dev/xml

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
Results: benchmarks/results/deidentify-dask.json (and .md). No note text is printed.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from common import RESULTS, machine_description, progress, write_json, write_markdown  # noqa: E402

CLI = [sys.executable, "-c", "from ensemble_deid.cli import main; main()"]


def _deidentify(model: str, notes: str, out: Path, *extra: str) -> tuple[float, int]:
    from tests.clusters import env

    t0 = time.perf_counter()
    proc = subprocess.run([*CLI, "deidentify", model, notes, "--out", str(out), "--no-progress", *extra],
                          capture_output=True, text=True, env=env())
    if proc.returncode:
        sys.exit(f"bench_dask: deidentify failed: {proc.stderr[-1000:]}")
    wall = time.perf_counter() - t0
    return wall, int(re.search(r"(\d+) tokens in", proc.stdout).group(1))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for sub in ("text", "spans") for p in (folder / sub).iterdir()}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--notes", required=True, help="folder of notes")
    ap.add_argument("--batch-size", type=int, default=8, help="notes per chunk sent to a worker")
    ap.add_argument("--out", type=Path, default=RESULTS / "deidentify-dask.json")
    args = ap.parse_args(argv)
    from tests.clusters import dask_cluster

    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        tmp = Path(tmp)
        progress("sequential local run (the reference) ...")
        _deidentify(args.model, args.notes, tmp / "local", "--batch-size", str(args.batch_size))
        reference = _files(tmp / "local")
        for workers in (1, 2):
            progress(f"dask, {workers} worker(s) ...")
            with dask_cluster(tmp / "cluster.log", workers) as (address, _):
                load = os.getloadavg()
                wall, tokens = _deidentify(args.model, args.notes, tmp / f"dask{workers}", "--batch-size",
                                           str(args.batch_size), "--backend", "dask", "--scheduler", address)
            files = _files(tmp / f"dask{workers}")
            runs[workers] = {"wall_s": round(wall, 2), "tokens": tokens, "tokens_per_s": round(tokens / wall),
                             "files": len(files), "files_identical_to_local": sum(files.get(k) == v
                                                                                  for k, v in reference.items()),
                             "load_average_before": [round(x, 2) for x in load]}
            progress(f"  {wall:.1f} s, load average {load[0]:.1f}")
    speedup = runs[1]["wall_s"] / runs[2]["wall_s"]
    result = {"benchmark": "deidentify-dask", "notes": args.notes, "model": args.model,
              "batch_size": args.batch_size, "workers_1": runs[1], "workers_2": runs[2],
              "speedup_2_over_1": round(speedup, 3), "load_average_end": [round(x, 2) for x in os.getloadavg()],
              "machine": machine_description(), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_json(args.out, result)
    rows = "".join(f"| {w} | {r['wall_s']} | {r['tokens_per_s']:,} | {r['files_identical_to_local']}/{r['files']} | "
                   f"{r['load_average_before'][0]} |\n" for w, r in runs.items())
    write_markdown(args.out.with_suffix(".md"),
                   "| dask workers | wall s (end to end) | tokens/s | files identical to a local run | load average "
                   "(1 min) |\n|---:|---:|---:|---:|---:|\n" + rows +
                   f"\n2 workers vs 1: x{speedup:.2f} ({result['machine']['cpus']} cores).\n")
    for w, r in runs.items():
        print(f"{w} worker(s): {r['wall_s']} s = {r['tokens_per_s']:,} tokens/s; files identical to a local run: "
              f"{r['files_identical_to_local']}/{r['files']}; load average {r['load_average_before'][0]}")
    print(f"2 workers vs 1: x{speedup:.2f}; wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
