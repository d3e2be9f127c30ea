"""A fitted ensemble bundle, loaded in a fresh process, de-identifying a
folder end to end: throughput, and whether its spans are exactly the
``ensemble`` command's cached predictions for the same documents.

    ENSEMBLE_DEID_HOME=WS ENSEMBLE_DEID_CACHE=WS/cached_predictions \\
      python benchmarks/bench_deidentify.py --corpus meddocan --method voting-pruned \\
        --members crf,memm,mira,searn --model WS/model

Steps: (1) ``ensemble-deid fit`` writes the bundle (skipped when ``--model``
exists: its manifest must name the same corpus, method and members); (2) the
reference: the ensemble's test-split predictions through the ``ensemble``
command's own code path (``ensemble.run.run_method``: read from the cache,
or computed and cached there); (3) ``ensemble-deid deidentify MODEL
<test split folder> --out TMP`` in a new process, timed from process start
to exit (interpreter start-up, bundle checks and loading, reading, tagging,
writing: "end to end"); the command's own tokens/s (tagging and writing only)
is recorded beside it; (4) the spans it wrote are compared with the
reference, document by document; (5) the same command with ``--jobs N``
(default 2: worker processes, each loading the bundle once) in the same run
on the same machine: its wall time against step 3's (the sequential path),
its tokens/s, and whether every file it wrote is byte-identical to step
3's. The load average is recorded beside (the machine may be shared).
Results: benchmarks/results/deidentify.json. No note text is printed.

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import os
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, machine_description, progress, write_json  # noqa: E402

CLI = str(Path(sys.executable).parent / "ensemble-deid")


def reference_predictions(corpus_name: str, method: str, members: str, folds: int, seed: int, metric: str):
    """The ``ensemble`` command's test-split predictions (its own code path)."""
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.ensemble.run import run_method

    ws = Workspace(os.environ.get("ENSEMBLE_DEID_HOME", "."))
    done = run_method(ws, corpus_name, method, members, folds=folds, seed=seed, objective=metric, oof=False,
                      progress=False, log=progress)
    return done.corpus, ws.spec(done.corpus.name).splits["test"], done.test


def _timed_run(args, test_dir: Path, out: Path, *extra: str) -> tuple[float, float, int, float]:
    """``deidentify`` in a fresh process: (wall s, CPU s of it and its children, tokens, tagging s)."""
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([CLI, "deidentify", args.model, str(test_dir), "--out", str(out), "--mode", args.mode,
                           "--no-progress", *extra], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    m = re.search(r"(\d+) tokens in ([\d.]+) s", proc.stdout)
    return wall, cpu, int(m.group(1)), float(m.group(2))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for sub in ("text", "spans") for p in (folder / sub).iterdir()}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="meddocan")
    ap.add_argument("--method", default="voting-pruned")
    ap.add_argument("--members", default="crf,memm,mira,searn")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--metric", default="f1")
    ap.add_argument("--model", required=True, help="bundle folder (fitted first when absent)")
    ap.add_argument("--mode", default="tag", choices=["tag", "mask", "surrogate"])
    ap.add_argument("--jobs", type=int, default=2, help="worker processes of the parallel run (step 5)")
    ap.add_argument("--out", type=Path, default=RESULTS / "deidentify.json")
    args = ap.parse_args(argv)

    fit_s = None
    if not Path(args.model).exists():
        progress(f"fitting the bundle ({args.method} over {args.members}) ...")
        t0 = time.perf_counter()
        subprocess.run([CLI, "fit", "--corpus", args.corpus, "--method", args.method, "--members", args.members,
                        "--folds", str(args.folds), "--seed", str(args.seed), "--metric", args.metric,
                        "--out", args.model, "--no-progress"], check=True)
        fit_s = time.perf_counter() - t0
    manifest = json.loads((Path(args.model) / "manifest.json").read_text())
    sel = manifest.get("selection", {})
    if (manifest["corpus"]["name"], sel.get("method"), sel.get("members_given")) != (
            args.corpus, args.method, [m.strip() for m in args.members.split(",")]):
        sys.exit(f"{args.model}: a bundle of another corpus, method or member list")
    corpus, test_dir, reference = reference_predictions(args.corpus, args.method, args.members, args.folds,
                                                        args.seed, args.metric)
    with tempfile.TemporaryDirectory(prefix="bench-deid-") as tmp:
        load_before = os.getloadavg()
        out = Path(tmp) / "out"
        wall, cpu, tokens, tagging_s = _timed_run(args, test_dir, out)
        par_out = Path(tmp) / "out-jobs"
        par_wall, par_cpu, _, par_tagging_s = _timed_run(args, test_dir, par_out, "--jobs", str(args.jobs))
        load_after = os.getloadavg()
        from ensemble_deid.corpus.formats import read_i2b2_xml

        differ = []
        for doc in corpus.test:
            written, _ = read_i2b2_xml(out / "spans" / f"{doc.id}.xml", doc_id=doc.id)
            if list(written.annotations) != reference[doc.id].spans(doc):
                differ.append(doc.id)
        files = _files(out)
        par_files = _files(par_out)
        par_differ = sorted(set(files) ^ set(par_files) | {k for k in files if par_files.get(k) != files[k]})
    result = {
        "benchmark": "deidentify", "corpus": args.corpus, "method": args.method, "members": args.members,
        "members_in_bundle": [m["label"] for m in manifest["members"]], "mode": args.mode,
        "documents": len(corpus.test), "tokens": tokens,
        "end_to_end_wall_s": round(wall, 3), "end_to_end_tokens_per_s": round(tokens / wall),
        "end_to_end_cpu_s": round(cpu, 3), "end_to_end_tokens_per_cpu_s": round(tokens / cpu) if cpu else None,
        "tagging_wall_s": tagging_s, "tagging_tokens_per_s": round(tokens / tagging_s) if tagging_s else None,
        "documents_identical_to_ensemble_command": len(corpus.test) - len(differ),
        "documents_differing": len(differ), "fit_wall_s": None if fit_s is None else round(fit_s, 1),
        "jobs": args.jobs, "jobs_end_to_end_wall_s": round(par_wall, 3),
        "jobs_end_to_end_tokens_per_s": round(tokens / par_wall), "jobs_end_to_end_cpu_s": round(par_cpu, 3),
        "jobs_tagging_wall_s": par_tagging_s, "jobs_speedup_end_to_end": round(wall / par_wall, 3),
        "jobs_files_compared": len(files), "jobs_files_differing": len(par_differ),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "bundle_test_scores": manifest.get("scores"), "machine": machine_description(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json(args.out, result)
    print(f"{args.method} bundle ({', '.join(result['members_in_bundle'])}) on {args.corpus} test split: "
          f"{tokens} tokens, {result['documents']} documents")
    print(f"end to end (fresh process): {wall:.1f} s wall = {result['end_to_end_tokens_per_s']:,} tokens/s "
          f"({cpu:.1f} CPU s = {result['end_to_end_tokens_per_cpu_s']:,} tokens/CPU s; load average "
          f"{os.getloadavg()[0]:.1f}); "
          f"tagging and writing only: {result['tagging_tokens_per_s']:,} tokens/s")
    print(f"--jobs {args.jobs}: {par_wall:.1f} s wall = {result['jobs_end_to_end_tokens_per_s']:,} tokens/s end to end, "
          f"x{result['jobs_speedup_end_to_end']} the sequential run's; {len(files) - len(par_differ)}/{len(files)} "
          f"output files byte-identical to it (load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)")
    print(f"spans identical to the 'ensemble' command's predictions: "
          f"{result['documents_identical_to_ensemble_command']}/{result['documents']} documents")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
