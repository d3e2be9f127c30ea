"""``deidentify --backend dask`` with 2 local workers against 1, on the same
notes: a scheduler and N single-thread worker processes on 127.0.0.1 are
started for each run (the tests' ``tests/clusters.py``) and stopped after.
Each run is timed from process start to exit (``common.timed_child``: wall,
the CPU seconds of the deidentify process, the load before and after), the
CPU seconds the worker processes spent during it are read from them
(psutil, before and after); the outputs of both are compared byte for byte
with a sequential local run's. The load average beside says what else ran
(a 2-core machine shared with other jobs caps what a second worker can give).

    python benchmarks/deidentify/bench_dask.py --model MODEL --notes /work/shared/corpora/meddocan/dev/xml
    python benchmarks/deidentify/bench_dask.py --model MODEL --copies 2 \
        --notes ../shared/corpora/meddocan/train/xml --notes ../shared/corpora/meddocan/dev/xml

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
Results: benchmarks/results/deidentify-dask.json (and .md). No note text is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))  # common.py
sys.path.insert(0, str(BENCH.parent))  # the repository: tests/clusters.py
from common import (RESULTS, deidentify_throughput, load_range, machine_description, progress, timed_child,  # noqa: E402
                    write_json, write_markdown)

CLI = [sys.executable, "-c", "from ensemble_deid.cli import main; main()"]


def _deidentify(model: str, notes: str, out: Path, *extra: str) -> tuple[dict, int]:
    """The timing of one ``deidentify`` run (``common.timed_child``) and the tokens it read."""
    from tests.clusters import env

    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        timing = timed_child([*CLI, "deidentify", model, notes, "--out", str(out), "--no-progress", *extra],
                             cwd=None, env=env(), stdout=stdout, stderr=stderr)
        stdout.seek(0)
        stderr.seek(0)
        printed, errors = stdout.read(), stderr.read()
    if timing["exit_status"]:
        sys.exit(f"bench_dask: deidentify failed: {errors[-1000:]}")
    return timing, deidentify_throughput(printed)[0]


def _cpu_seconds(processes) -> float:
    """User + system CPU seconds the processes (the workers) have spent so far."""
    import psutil

    return sum(sum(psutil.Process(p.pid).cpu_times()[:4]) for p in processes)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for sub in ("text", "spans") for p in (folder / sub).iterdir()}


def _gather(folders: list[str], copies: int, into: Path) -> tuple[str, int]:
    """One folder holding every note of ``folders``, each ``copies`` times
    (hard links where possible), and the number of files; a single folder
    without copies is used as it is."""
    if len(folders) == 1 and copies == 1:
        return folders[0], sum(1 for p in Path(folders[0]).iterdir() if p.is_file())
    into.mkdir(mode=0o700)
    n = 0
    for i, folder in enumerate(folders):
        for note in sorted(p for p in Path(folder).iterdir() if p.is_file()):
            for c in range(copies):
                target = into / f"{i}-{c}-{note.name}"
                try:
                    os.link(note, target)
                except OSError:
                    shutil.copyfile(note, target)
                n += 1
    return str(into), n


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--notes", required=True, action="append",
                    help="folder of notes (repeatable: the folders' notes are run together)")
    ap.add_argument("--copies", type=int, default=1,
                    help="each note this many times (as distinct files): enough work that the cluster's start-up "
                         "and each worker's bundle loading do not dominate the ratio")
    ap.add_argument("--batch-size", type=int, default=8, help="notes per chunk sent to a worker")
    ap.add_argument("--out", type=Path, default=RESULTS / "deidentify-dask.json")
    args = ap.parse_args(argv)
    from tests.clusters import dask_cluster

    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        tmp = Path(tmp)
        notes, n_notes = _gather(args.notes, args.copies, tmp / "notes")
        progress(f"{n_notes} notes; sequential local run (the reference) ...")
        _deidentify(args.model, notes, tmp / "local", "--batch-size", str(args.batch_size))
        reference = _files(tmp / "local")
        for workers in (1, 2):
            progress(f"dask, {workers} worker(s) ...")
            with dask_cluster(tmp / "cluster.log", workers) as (address, processes):
                load = os.getloadavg()
                before = _cpu_seconds(processes)
                timing, tokens = _deidentify(args.model, notes, tmp / f"dask{workers}", "--batch-size",
                                             str(args.batch_size), "--backend", "dask", "--scheduler", address)
                workers_cpu = _cpu_seconds(processes) - before
            files = _files(tmp / f"dask{workers}")
            wall = timing["wall_s"]
            runs[workers] = {"wall_s": wall, "client_cpu_s": timing["cpu_s"], "workers_cpu_s": round(workers_cpu, 1),
                             "cpu_s": round(timing["cpu_s"] + workers_cpu, 1), "tokens": tokens,
                             "tokens_per_s": round(tokens / wall), "files": len(files),
                             "files_identical_to_local": sum(files.get(k) == v for k, v in reference.items()),
                             "load_average_before": [round(x, 2) for x in load], "load_after": timing["load_after"],
                             "nice": timing["nice"]}
            progress(f"  {wall:.1f} s wall, {runs[workers]['cpu_s']:.1f} s CPU, load {load[0]:.1f}-{timing['load_after']:.1f}")
    speedup = runs[1]["wall_s"] / runs[2]["wall_s"]
    manifest = json.loads((Path(args.model) / "manifest.json").read_text(encoding="utf-8"))
    result = {"benchmark": "deidentify-dask", "notes": args.notes, "copies": args.copies, "note_files": n_notes,
              "model": args.model, "bundle": {"method": manifest["method"]["name"], "members": [m.get("label") for m in manifest["members"]],
                                              "trained_on": manifest.get("corpus", {}).get("name")},
              "batch_size": args.batch_size, "workers_1": runs[1], "workers_2": runs[2],
              "speedup_2_over_1": round(speedup, 3), "load_average_end": [round(x, 2) for x in os.getloadavg()],
              "machine": machine_description(), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_json(args.out, result)
    rows = "".join(f"| {w} | {r['wall_s']} | {r['cpu_s']} ({r['client_cpu_s']} + {r['workers_cpu_s']}) | "
                   f"{r['tokens_per_s']:,} | {r['files_identical_to_local']}/{r['files']} | "
                   f"{load_range(r['load_average_before'][0], r['load_after'])} |\n" for w, r in runs.items())
    write_markdown(args.out.with_suffix(".md"),
                   "| dask workers | wall s (end to end) | CPU s (client + workers) | tokens/s | files identical to a "
                   "local run | load (1 min) before-after |\n|---:|---:|---:|---:|---:|---:|\n" + rows +
                   f"\n2 workers vs 1: x{speedup:.2f} ({result['machine']['cpus']} cores; {n_notes} note files"
                   + (f": each note {args.copies} times" if args.copies > 1 else "") + ").\n")
    for w, r in runs.items():
        print(f"{w} worker(s): {r['wall_s']} s = {r['tokens_per_s']:,} tokens/s, {r['cpu_s']} CPU s (client "
              f"{r['client_cpu_s']} + workers {r['workers_cpu_s']}); files identical to a local run: "
              f"{r['files_identical_to_local']}/{r['files']}; load average {r['load_average_before'][0]}")
    print(f"2 workers vs 1: x{speedup:.2f}; wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
