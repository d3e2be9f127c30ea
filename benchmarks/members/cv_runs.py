"""Long cross-validation runs (issue 29), with the CPU time and load they took.

Runs ``ensemble-deid cv`` for each tagger in turn, as a niced child process in
a persistent workspace, and records for every invocation its wall and CPU
seconds (``os.wait4``: the child and its workers), the 1-minute load before
and after, and its niceness. The cache makes it resumable: run the same
command again and finished parts are reused (an interrupted invocation
records nothing; its finished parts stay in the cache). ``status`` trains
nothing: it reads the parts in the cache and writes the table.

    # the new members' 10-fold CV on MEDDOCAN train (workspace: the repository root)
    nice -n 19 python benchmarks/members/cv_runs.py run --label members-train --corpus meddocan --taggers crf-chars,char-cnn
    # the shared-task protocol: train + dev (750 notes), the non-neural published members
    nice -n 19 python benchmarks/members/cv_runs.py run --label train-dev-750 --workspace /work/ws750 \\
        --corpus meddocan-train-dev --taggers rules:label_map=i2b2-to-meddocan,svm,mira,struct-svm,memm,ogd,searn,crf
    python benchmarks/members/cv_runs.py status --label train-dev-750 --workspace /work/ws750 --corpus meddocan-train-dev \\
        --taggers ...      # the table only

Results: ``benchmarks/results/cv-runs-LABEL.json`` (invocations appended) and
``cv-runs-LABEL.md``; ``python benchmarks/sync_docs.py`` copies
the tables into the docs. Per tagger: parts found in the cache (10 folds + the
test prediction), the strict F1 of the out-of-fold predictions of the folds
done (all ten: the CV F1), the fit + predict seconds the parts recorded, and
the measured CPU and wall seconds of this script's invocations. The test
split's scores are not shown: in the shared-task protocol it is a stand-in
until the official test split is used.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (MEDDOCAN_CITATION, RESULTS, ROOT, code_env, load1, machine_description, progress, read_member, where,  # noqa: E402
                    timed_child, write_json, write_markdown)


def _labels(taggers: str) -> list[str]:
    from ensemble_deid.experiment.cv import parse_tagger_specs

    return [spec.label for spec in parse_tagger_specs(taggers)]


def run_cv(workspace: Path, corpus: str, label: str, folds: int, jobs: int = 1) -> dict:
    """One ``cv`` invocation for one tagger (``jobs`` of its parts at a time):
    wall, CPU (child + workers), load, niceness."""
    # -P: the child runs in the workspace, and a workspace that is another checkout must not put
    # its own ensemble_deid ahead of this tree's (PYTHONPATH, code_env)
    argv = [sys.executable, "-P", "-c", "from ensemble_deid.cli import main; main()", "--workspace", str(workspace),
            "cv", "--corpus", corpus, "--taggers", label, "--folds", str(folds), "--jobs", str(jobs), "--no-progress"]
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    progress(f"{label}: cv --folds {folds} --jobs {jobs} on {corpus} (load {load1()}, nice {os.nice(0)})")
    entry = {"tagger": label, "started": started, "jobs": jobs,
             **timed_child(argv, workspace, code_env(drop=("ENSEMBLE_DEID_CACHE",)))}  # the workspace's own cache
    progress(f"{label}: exit {entry['exit_status']}, {entry['wall_s']} s wall, {entry['cpu_s']} s CPU, "
             f"load {entry['load_before']} -> {entry['load_after']}")
    return entry


def status(workspace: Path, corpus_name: str, labels: list[str], folds: int) -> dict[str, dict]:
    """Per tagger, what the cache holds (nothing is computed)."""
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
    from ensemble_deid.studies.summary import strict_prf

    ws = Workspace(workspace)
    corpus = ws.load(corpus_name)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=folds, seed=0)
    out = {}
    for label in labels:
        spec = TaggerSpec.parse(label)
        oof, _, _, records = read_member(engine, spec)
        seconds = sum((r.get("fit_seconds") or 0.0) + (r.get("predict_seconds") or 0.0) for r in records)
        row = {"parts_done": len(records), "parts": len(engine.parts(spec)), "recorded_seconds": round(seconds, 1),
               "where": where(records)}
        scored = [d for d in corpus.train if d.id in oof]
        if scored:
            row.update(oof_f1=round(strict_prf(scored, oof)[2], 4), oof_documents=len(scored))
        out[label] = row
    return out


def merged(path: Path, args, invocations: list[dict], found: dict[str, dict]) -> dict:
    run = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"invocations": []}
    # another invocation of the same label (other taggers, run in parallel or earlier) keeps its rows
    run.update(benchmark="cv-runs", label=args.label, workspace=str(args.workspace), corpus=args.corpus,
               folds=args.folds, taggers={**found, **{k: v for k, v in run.get("taggers", {}).items() if k not in found}}, invocations=run["invocations"] + invocations,
               machine=machine_description(), citation=MEDDOCAN_CITATION)
    return run


def markdown(run: dict) -> str:
    rows = ["| tagger | parts in cache | strict F1 out-of-fold (notes) | recorded fit + predict s | measured CPU s "
            "| measured wall s | load (1 min) | nice | parts computed on |", "|---|---:|---:|---:|---:|---:|---|---:|---|"]
    for tagger, row in run["taggers"].items():
        mine = [i for i in run["invocations"] if i["tagger"] == tagger]
        loads = [x for i in mine for x in (i["load_before"], i["load_after"])]
        f1 = f"{row['oof_f1']:.4f} ({row['oof_documents']})" if "oof_f1" in row else "-"
        rows.append(f"| {tagger} | {row['parts_done']}/{row['parts']} | {f1} | {row['recorded_seconds']:.0f} "
                    f"| {sum(i['cpu_s'] for i in mine) if mine else '-'} | {sum(i['wall_s'] for i in mine) if mine else '-'} "
                    f"| {f'{min(loads):.1f}-{max(loads):.1f}' if loads else '-'} "
                    f"| {max((i['nice'] for i in mine), default='-')} "
                    f"| {'; '.join(f'{k} ({n})' for k, n in row.get('where', {}).items()) or '-'} |")
    machine = run["machine"]
    return ("\n".join(rows) + f"\n\nCorpus `{run['corpus']}`, {run['folds']}-fold CV (patient-grouped, seed 0). "
            "The F1 is over the notes of the folds done; with every fold done it is the CV F1. Recorded "
            "seconds: what the parts' records hold (computed by any run, earlier sessions included); measured: "
            "this script's invocations (user + system CPU of cv and its workers, os.wait4); parts computed "
            "elsewhere (a GPU machine's `cv`, merged into this cache) count in the recorded seconds only. "
            f"Status written {machine['when']} on {machine['cpus_usable']} usable cores "
            f"(load then {machine['load_average'][0]}).\n\n{MEDDOCAN_CITATION}. Written by "
            "`benchmarks/members/cv_runs.py`.\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["run", "status"])
    ap.add_argument("--label", required=True, help="the run's name in the results (cv-runs-LABEL.md)")
    ap.add_argument("--workspace", type=Path, default=ROOT, help="workspace holding the corpus and the cache")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--taggers", required=True, help="as cv takes them; each runs as its own cv invocation, in order")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1, help="parts of one tagger's CV computed at a time (cv --jobs)")
    args = ap.parse_args(argv)
    args.workspace = args.workspace.resolve()
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.errors import EnsembleDeidError

    try:  # before any cv child runs: an unknown corpus is one message, not a traceback after the run
        Workspace(args.workspace).spec(args.corpus)
    except EnsembleDeidError as exc:
        print(f"cv_runs: {exc}", file=sys.stderr)
        return 2
    labels = _labels(args.taggers)
    path = RESULTS / f"cv-runs-{args.label}.json"
    for label in labels:
        invocations = [run_cv(args.workspace, args.corpus, label, args.folds, args.jobs)] if args.action == "run" else []
        # written after each tagger: a run stopped later loses nothing already measured
        run = merged(path, args, invocations, status(args.workspace, args.corpus, labels, args.folds))
        write_json(path, run)
        write_markdown(path.with_suffix(".md"), markdown(run))
        if args.action == "status":
            break
    print(markdown(run))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
