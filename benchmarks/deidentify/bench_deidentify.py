"""A fitted ensemble bundle, loaded in a fresh process, de-identifying a
folder end to end: throughput, and whether its spans are exactly the
``ensemble`` command's cached predictions for the same documents.

    ENSEMBLE_DEID_HOME=WS ENSEMBLE_DEID_CACHE=WS/cached_predictions \\
      python benchmarks/deidentify/bench_deidentify.py --corpus meddocan --method voting-pruned \\
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
3's; (6) with ``--baseline DIR`` (a checkout of the code before a change,
e.g. ``git archive <commit> | tar -x -C DIR``), the same sequential command
run by that code on the same bundle (``--baseline-model``: the same fitted
members in the file formats that code reads, when they changed since) and
notes, alternating with this code's sequential and ``--jobs N`` runs
(``--pairs`` rounds, same run, same machine): the median ratios of the
wall times (sequential and --jobs N against the baseline's sequential), the
CPU seconds of each, and whether all wrote the same bytes. The load average
is recorded beside (the machine may be shared). Results:
benchmarks/results/deidentify.json and a table in deidentify.md (the guide
shows it). No note text is printed.

(7) With ``--versus MODEL2`` (a second bundle of the same corpus, e.g. one
``fit --budget`` chose), steps 3-6 are replaced by ``--rounds`` alternating
rounds timing both bundles on the same notes in the same run: each round
runs the two sequentially, then the two with ``--jobs N`` (the order swaps
from one round to the next), each a fresh process timed end to end, wall
and CPU seconds. Reported per bundle: the medians, tokens/s, its dev
scores from its own output against the gold (strict P/R/F1 and every
criterion's recall: the binary-token recall a leak-first objective
targets), whether its spans equal the ``ensemble`` command's predictions
for its own method, members, objective and budget (read from its
manifest), and whether all its runs wrote the same bytes; and the medians
of the per-round ratios first/second (wall and CPU), beside the ratio of the
members' recorded costs. Write it to its own results file:

    ENSEMBLE_DEID_HOME=WS ENSEMBLE_DEID_CACHE=WS/cached_predictions \\
      python benchmarks/deidentify/bench_deidentify.py --corpus meddocan --method voting-pruned \\
        --members "$M" --metric 'binary-token:recall>=0.99' --model WS/model-recall-best \\
        --versus WS/model-recall-budget --rounds 3 --out benchmarks/results/deidentify-cost.json

(8) With ``--notes meddocan:N`` (or a folder of notes), any bundle, a
single tagger too (``fit --tagger crf``), de-identifies those notes
(``meddocan:N``: the text of MEDDOCAN's train then dev notes as .txt
files, repeated from the first until there are N, in an owner-only temp
folder) in ``--rounds`` rounds, each timing fresh processes end to end at
``--jobs 1`` and ``--jobs N`` (and, with ``--baseline``, the same two runs
of that code first): wall and CPU seconds, tokens/s of each (tokens over
the median wall; tokens per CPU second beside: the figure a shared machine
disturbs least), the load before and after each run, and whether every run
wrote the same bytes as this code's first. Issue 51's throughput target
(``--target``, tokens/s at ``--jobs 2`` end to end) is shown beside:

    python benchmarks/deidentify/bench_deidentify.py --model WS/models/crf --notes meddocan:1000 \
        --baseline BASE --baseline-label 49b7215 --rounds 3 --target 45000 \
        --out benchmarks/results/deidentify-throughput.json

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. "Automatic De-identification of Medical
Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results." IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import os
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (RESULTS, code_env, criterion_scores, deidentify_throughput, machine_description, progress,  # noqa: E402
                    write_json, write_markdown)

CLI = str(Path(sys.executable).parent / "ensemble-deid")


def bundle_reference(manifest: dict):
    """The ``ensemble`` command's test-split predictions for the choice a
    bundle's manifest records (method, members, objective, budget, folds,
    seed), and the recorded inference cost of the members it kept (CPU s per
    million tokens, the figure ``--budget`` chose by)."""
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.ensemble.run import resolve_costs, run_method

    sel = manifest["selection"]
    ws = Workspace(os.environ.get("ENSEMBLE_DEID_HOME", "."))
    done = run_method(ws, manifest["corpus"]["name"], sel["method"], ",".join(sel["members_given"]),
                      folds=sel["folds"], seed=sel["seed"], objective=sel["objective"], oof=False, progress=False,
                      log=progress, budget=sel.get("budget"))
    costs = resolve_costs(done.engine, done.runs, progress)
    used = sel.get("members_used") or sel["members_given"]
    cost = None if any(costs.get(m) is None for m in used) else sum(costs[m] for m in used)
    return done.corpus, ws.spec(done.corpus.name).splits["test"], done.test, cost


def spans_differing(corpus, out: Path, reference) -> list[str]:
    """The test documents whose spans ``deidentify`` wrote under ``out`` differ from ``reference``'s."""
    from ensemble_deid.corpus.formats import read_i2b2_xml

    differ = []
    for doc in corpus.test:
        written, _ = read_i2b2_xml(out / "spans" / f"{doc.id}.xml", doc_id=doc.id)
        if list(written.annotations) != reference[doc.id].spans(doc):
            differ.append(doc.id)
    return differ


def written_scores(corpus, out: Path) -> dict:
    """Precision, recall and F1 of the spans ``deidentify`` wrote under
    ``out`` against the gold, per criterion (strict, token, binary-token)."""
    from ensemble_deid.corpus.formats import read_i2b2_xml

    return criterion_scores(corpus.test, [list(read_i2b2_xml(out / "spans" / f"{d.id}.xml", doc_id=d.id)[0].annotations)
                                          for d in corpus.test])


def _code_env(tree: Path | None) -> dict | None:
    """The environment that makes the CLI run ``tree``'s code alone (None: this process's)."""
    return None if tree is None else code_env(tree, extend=False)


def _timed_run(args, test_dir: Path, out: Path, *extra: str, tree: Path | None = None,
               model: str | Path | None = None) -> tuple[float, float, int, float]:
    """``deidentify`` of ``model`` (default ``--model``) in a fresh process:
    (wall s, CPU s of it and its children, tokens, tagging s)."""
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([CLI, "deidentify", str(model or args.model), str(test_dir), "--out", str(out), "--mode", args.mode,
                           "--no-progress", *extra], capture_output=True, text=True, check=True, env=_code_env(tree))
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return (wall, cpu, *deidentify_throughput(proc.stdout))


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
    ap.add_argument("--baseline", type=Path, help="a source tree of the code before a change: its sequential run "
                    "is timed against this code's (step 6)")
    ap.add_argument("--baseline-label", help="what --baseline is (e.g. the commit it was made from)")
    ap.add_argument("--baseline-model", type=Path, help="the bundle as --baseline's code reads it (default "
                    "--model): the same fitted members in the file formats of that code, e.g. saved by it")
    ap.add_argument("--pairs", type=int, default=2, help="alternating (baseline, this code) runs of step 6")
    ap.add_argument("--versus", type=Path, metavar="MODEL", help="a second bundle of the same corpus (e.g. a "
                    "cost-chosen one, fit --budget): timed against --model on the same notes in alternating rounds "
                    "instead of steps 3-6 (step 7)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of --versus or --notes")
    ap.add_argument("--notes", help="meddocan:N (N notes of MEDDOCAN's train and dev text) or a folder of notes: "
                    "the throughput of --model over them at --jobs 1 and --jobs N, any bundle (step 8)")
    ap.add_argument("--target", type=float, help="step 8: a throughput target (tokens/s at --jobs N), shown beside")
    ap.add_argument("--out", type=Path, default=RESULTS / "deidentify.json")
    args = ap.parse_args(argv)
    from ensemble_deid.ensemble.run import parse_members

    given = parse_members(args.members)[2]  # a published neural member's own parameters hold commas
    if args.notes is not None:
        return throughput(args)

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
    if (manifest["corpus"]["name"], sel.get("method"), sel.get("members_given")) != (args.corpus, args.method, given):
        sys.exit(f"{args.model}: a bundle of another corpus, method or member list")
    if args.versus is not None:
        return versus(args, manifest, fit_s)
    corpus, test_dir, reference, _ = bundle_reference(manifest)
    with tempfile.TemporaryDirectory(prefix="bench-deid-") as tmp:
        load_before = os.getloadavg()
        out = Path(tmp) / "out"
        wall, cpu, tokens, tagging_s = _timed_run(args, test_dir, out)
        par_out = Path(tmp) / "out-jobs"
        par_wall, par_cpu, _, par_tagging_s = _timed_run(args, test_dir, par_out, "--jobs", str(args.jobs))
        load_after = os.getloadavg()
        differ = spans_differing(corpus, out, reference)
        files = _files(out)
        par_files = _files(par_out)
        par_differ = sorted(set(files) ^ set(par_files) | {k for k in files if par_files.get(k) != files[k]})
        baseline = None
        if args.baseline is not None:
            baseline = _against_baseline(args, test_dir, Path(tmp), files, wall)
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
        "bundle_test_scores": manifest.get("scores"), "baseline": baseline, "machine": machine_description(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json(args.out, result)
    write_markdown(args.out.with_suffix(".md"), _table(result))
    print(f"{args.method} bundle ({', '.join(result['members_in_bundle'])}) on {args.corpus} test split: "
          f"{tokens} tokens, {result['documents']} documents")
    print(f"end to end (fresh process): {wall:.1f} s wall = {result['end_to_end_tokens_per_s']:,} tokens/s "
          f"({cpu:.1f} CPU s = {result['end_to_end_tokens_per_cpu_s']:,} tokens/CPU s; load average "
          f"{os.getloadavg()[0]:.1f}); "
          f"tagging and writing only: {result['tagging_tokens_per_s']:,} tokens/s")
    print(f"--jobs {args.jobs}: {par_wall:.1f} s wall = {result['jobs_end_to_end_tokens_per_s']:,} tokens/s end to end, "
          f"x{result['jobs_speedup_end_to_end']} the sequential run's; {len(files) - len(par_differ)}/{len(files)} "
          f"output files byte-identical to it (load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)")
    if baseline:
        print(f"against {baseline['label']} (sequential, {baseline['pairs']} alternating pairs): its median "
              f"{baseline['baseline_wall_s']:.1f} s, this code's {baseline['wall_s']:.1f} s = "
              f"x{baseline['speedup']} (load average {baseline['load_average_before'][0]:.1f} before, "
              f"{baseline['load_average_after'][0]:.1f} after); {baseline['files_identical']}/{len(files)} output "
              f"files byte-identical")
        print(f"this code --jobs {args.jobs} against {baseline['label']} sequential (same rounds): median "
              f"{baseline['jobs_wall_s']:.1f} s = x{baseline['jobs_speedup']}; CPU s {baseline['cpu_s']}")
    print(f"spans identical to the 'ensemble' command's predictions: "
          f"{result['documents_identical_to_ensemble_command']}/{result['documents']} documents")
    print(f"wrote {args.out}")
    return result


def _against_baseline(args, test_dir: Path, tmp: Path, files: dict[str, bytes], wall: float) -> dict:
    """Step 6: the baseline's sequential run and this code's, alternating."""
    import statistics

    load_before = os.getloadavg()
    ours, theirs, ratios, differ = [], [], [], set()
    jobs, jobs_ratios, cpu = [], [], {"baseline": [], "ours": [], "jobs": []}
    for i in range(max(1, args.pairs)):
        b_out, o_out, j_out = tmp / f"baseline-{i}", tmp / f"ours-{i}", tmp / f"jobs-{i}"
        run = _timed_run(args, test_dir, b_out, tree=args.baseline, model=args.baseline_model)
        theirs.append(run[0])
        cpu["baseline"].append(run[1])
        run = _timed_run(args, test_dir, o_out)
        ours.append(run[0])
        cpu["ours"].append(run[1])
        ratios.append(theirs[-1] / ours[-1])
        # This code's --jobs run too, right after: the baseline's sequential path against the fastest one.
        run = _timed_run(args, test_dir, j_out, "--jobs", str(args.jobs))
        jobs.append(run[0])
        cpu["jobs"].append(run[1])
        jobs_ratios.append(theirs[-1] / jobs[-1])
        for folder in (b_out, j_out):
            got = _files(folder)
            differ |= set(files) ^ set(got) | {k for k in files if got.get(k) != files[k]}
        progress(f"round {i + 1}: baseline {theirs[-1]:.1f} s, this code {ours[-1]:.1f} s, "
                 f"this code --jobs {args.jobs} {jobs[-1]:.1f} s")
    return {"label": args.baseline_label or str(args.baseline), "pairs": len(ratios),
            "baseline_model": None if args.baseline_model is None else str(args.baseline_model),
            "baseline_wall_s": round(statistics.median(theirs), 3), "wall_s": round(statistics.median(ours), 3),
            "baseline_runs_s": [round(x, 3) for x in theirs], "runs_s": [round(x, 3) for x in ours],
            "speedup": round(statistics.median(ratios), 3),
            "jobs": args.jobs, "jobs_wall_s": round(statistics.median(jobs), 3),
            "jobs_runs_s": [round(x, 3) for x in jobs], "jobs_speedup": round(statistics.median(jobs_ratios), 3),
            "cpu_s": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
            "files_identical": len(files) - len(differ),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}


def _table(r: dict) -> str:
    """The Markdown table the guide shows (sync_docs.py)."""
    rows = [("bundle", f"{r['method']} over {r['members']!s}".replace("|", "\\|")),
            ("members in the bundle", ", ".join(r["members_in_bundle"])),
            ("notes, tokens", f"{r['documents']}, {r['tokens']:,}"),
            ("sequential, end to end", f"{r['end_to_end_wall_s']:.1f} s = {r['end_to_end_tokens_per_s']:,} tokens/s "
                                       f"({r['end_to_end_cpu_s']:.1f} CPU s)"),
            (f"--jobs {r['jobs']}, end to end", f"{r['jobs_end_to_end_wall_s']:.1f} s = "
                                                f"{r['jobs_end_to_end_tokens_per_s']:,} tokens/s "
                                                f"(x{r['jobs_speedup_end_to_end']}); {r['jobs_files_compared'] - r['jobs_files_differing']}/"
                                                f"{r['jobs_files_compared']} files identical")]
    b = r.get("baseline")
    if b:
        rows.append((f"sequential, against {b['label']}", f"{b['baseline_wall_s']:.1f} s before, {b['wall_s']:.1f} s "
                                                         f"now (median of {b['pairs']} alternating pairs): x{b['speedup']}; "
                                                         f"{b['files_identical']}/{r['jobs_files_compared']} files identical"))
        if "jobs_speedup" in b:
            c = b["cpu_s"]
            rows.append((f"--jobs {b['jobs']} against {b['label']} sequential",
                         f"{b['jobs_wall_s']:.1f} s now (same rounds): x{b['jobs_speedup']}; CPU s before "
                         f"{c['baseline']:.1f}, now {c['ours']:.1f} sequential, {c['jobs']:.1f} with --jobs {b['jobs']}"))
    rows += [("spans identical to the 'ensemble' command", f"{r['documents_identical_to_ensemble_command']}/{r['documents']} notes"),
             ("load average (1 min) before, after", f"{r['load_average_before'][0]}, {r['load_average_after'][0]}"),
             ("machine", f"{r['machine'].get('cpus')} cores, {r['when']}")]
    lines = ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    cite = "\n\nMEDDOCAN (CC BY 4.0): Marimon et al., IberLEF@SEPLN 2019, pp. 618-638." if r["corpus"].startswith("meddocan") else ""
    return "\n".join(lines) + cite + "\n"


def meddocan_notes(count: int, into: Path) -> Path:
    """``count`` notes of MEDDOCAN's train then dev text as .txt files in
    ``into`` (owner-only), repeated from the first when there are fewer."""
    from common import MEDDOCAN

    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.files import private_dir, write_private

    docs = [*load_directory(MEDDOCAN / "train" / "xml"), *load_directory(MEDDOCAN / "dev" / "xml")]
    private_dir(into)
    for i in range(count):
        write_private(into / f"note-{i:05d}.txt", docs[i % len(docs)].text)
    return into


def throughput(args) -> dict:
    """Step 8: ``--model`` over ``--notes`` at --jobs 1 and --jobs N, fresh
    processes, ``--rounds`` rounds (the baseline's two runs first in each)."""
    import statistics

    manifest = json.loads((Path(args.model) / "manifest.json").read_text())
    kinds = {"jobs_1": (), f"jobs_{args.jobs}": ("--jobs", str(args.jobs))}
    codes = {"before": (args.baseline, args.baseline_model)} if args.baseline is not None else {}
    codes["now"] = (None, None)
    runs = {code: {kind: [] for kind in kinds} for code in codes}
    reference, differ = None, {code: set() for code in codes}
    with tempfile.TemporaryDirectory(prefix="bench-deid-") as tmp:
        tmp = Path(tmp)
        if args.notes.startswith("meddocan:"):
            notes, source = meddocan_notes(int(args.notes.split(":", 1)[1]), tmp / "notes"), args.notes
        else:
            notes, source = Path(args.notes), "a folder of notes"
        n_notes = sum(1 for p in notes.iterdir() if p.is_file())
        for i in range(max(1, args.rounds)):
            outs = {}
            for code, (tree, model) in codes.items():
                for kind, extra in kinds.items():
                    outs[code, kind] = out = tmp / f"out-{i}-{code.replace(' ', '-')}-{kind}"
                    before = os.getloadavg()[0]
                    wall, cpu, tokens, _ = _timed_run(args, notes, out, *extra, tree=tree, model=model)
                    runs[code][kind].append({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "tokens": tokens,
                                             "load_before": round(before, 2),
                                             "load_after": round(os.getloadavg()[0], 2)})
                    progress(f"round {i + 1}: {code} {kind}: {wall:.1f} s wall, {cpu:.1f} CPU s, load {before:.1f}")
            if reference is None:
                reference = _files(outs["now", "jobs_1"])
            for (code, _), out in outs.items():
                got = _files(out)
                differ[code] |= set(reference) ^ set(got) | {k for k in got if reference.get(k) != got[k]}
                shutil.rmtree(out)
    tokens = runs["now"]["jobs_1"][0]["tokens"]
    summary = {}
    for code, by_kind in runs.items():
        summary[code] = {}
        for kind, rs in by_kind.items():
            wall = statistics.median(r["wall_s"] for r in rs)
            cpu = statistics.median(r["cpu_s"] for r in rs)
            summary[code][kind] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                                   "tokens_per_s": round(tokens / wall), "tokens_per_cpu_s": round(tokens / cpu),
                                   "runs": rs}
        summary[code]["files_differing_from_now"] = len(differ[code])
    if args.baseline is not None:
        summary["speedup_before_over_now"] = {kind: round(statistics.median(
            b["wall_s"] / o["wall_s"] for b, o in zip(runs["before"][kind], runs["now"][kind])), 3)
            for kind in kinds}
        summary["cpu_ratio_before_over_now"] = {kind: round(statistics.median(
            b["cpu_s"] / o["cpu_s"] for b, o in zip(runs["before"][kind], runs["now"][kind])), 3)
            for kind in kinds}
    loads = [r[k] for by_kind in runs.values() for rs in by_kind.values() for r in rs for k in ("load_before", "load_after")]
    result = {"benchmark": "deidentify-throughput", "notes": source, "note_files": n_notes, "tokens": tokens,
              "model": Path(args.model).name, "members": [m["label"] for m in manifest["members"]],
              "method": (manifest.get("method") or {}).get("name"), "mode": args.mode, "jobs": args.jobs,
              "rounds": max(1, args.rounds),
              "baseline": args.baseline_label or (str(args.baseline) if args.baseline else None),
              "target_tokens_per_s": args.target, **summary,
              "load_average_range": [min(loads), max(loads)], "nice": os.nice(0), "machine": machine_description(),
              "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_json(args.out, result)
    table = _throughput_table(result)
    write_markdown(args.out.with_suffix(".md"), table)
    print(table)
    return result


def _throughput_table(r: dict) -> str:
    from common import load_range

    kinds = ["jobs_1", f"jobs_{r['jobs']}"]
    rows = []
    for code in ("before", "now"):
        if code not in r:
            continue
        label = f"before ({r['baseline']})" if code == "before" else "now"
        for kind in kinds:
            x = r[code][kind]
            ratio = (f" (x{r['speedup_before_over_now'][kind]} wall, x{r['cpu_ratio_before_over_now'][kind]} CPU)"
                     if code == "now" and "before" in r else "")
            loads = [run[k] for run in x["runs"] for k in ("load_before", "load_after")]
            rows.append(f"| {label} | {kind.replace('_', ' ')} | {x['wall_s']:.1f} | {x['cpu_s']:.1f} | "
                        f"{x['tokens_per_s']:,}{ratio} | {x['tokens_per_cpu_s']:,} | {load_range(min(loads), max(loads))} | "
                        f"{r[code]['files_differing_from_now']} |")
    target = (f" Target (issue 51): {r['target_tokens_per_s']:,.0f} tokens/s at --jobs {r['jobs']} end to end."
              if r.get("target_tokens_per_s") else "")
    return ("| code | run | wall s | CPU s | tokens/s (end to end) | tokens per CPU s | load (1 min) | files differing |\n"
            "|---|---|--:|--:|--:|--:|--:|--:|\n" + "\n".join(rows) + "\n\n"
            f"`deidentify` of the bundle `{r['model']}` ({', '.join(r['members'])}; {r['method'] or 'a single tagger'}), "
            f"mode {r['mode']}, over {r['note_files']:,} notes ({r['notes']}), {r['tokens']:,} tokens; each run a fresh "
            f"process timed end to end (start-up, bundle checks and loading, reading, tagging, writing, the release "
            f"report); medians of {r['rounds']} rounds, each round running before's then now's runs. Files differing: output files "
            f"(text/, spans/) not byte-identical to the first run of the code now. Load average (1 min) during the runs: "
            f"{load_range(*r['load_average_range'])} on {r['machine'].get('cpus')} cores, at nice {r['nice']} "
            f"({r['when']}).{target}\n\n"
            "MEDDOCAN (CC BY 4.0): Marimon et al., IberLEF@SEPLN 2019, pp. 618-638.\n")


F1_WITHIN_PT, RECALL_WITHIN_PT = 0.2, 0.3  # the "within" for an F1 objective and a recall one


def versus(args, manifest: dict, fit_s: float | None) -> dict:
    """Step 7: ``--model`` (the first bundle) against ``--versus`` (the
    second) on the same notes: ``--rounds`` alternating rounds (the order
    swaps each round), each running both sequentially, then both with
    ``--jobs N``, every run a fresh process timed end to end (wall and CPU
    seconds). Each bundle's first sequential output is compared with the
    ``ensemble`` command's predictions for its own choice and scored against
    the gold; every later output of it must be byte-identical to that one."""
    import shutil
    import statistics

    second = json.loads((args.versus / "manifest.json").read_text())
    if second["corpus"]["name"] != manifest["corpus"]["name"]:
        sys.exit(f"{args.versus}: a bundle of corpus {second['corpus']['name']!r}, not {manifest['corpus']['name']!r}")
    bundles = {"first": (Path(args.model), manifest), "second": (args.versus, second)}
    refs = {name: bundle_reference(m) for name, (_, m) in bundles.items()}
    corpus, test_dir = refs["first"][0], refs["first"][1]
    kinds = {"sequential": (), "jobs": ("--jobs", str(args.jobs))}
    timed = {name: {kind: [] for kind in kinds} for name in bundles}  # (wall, cpu, tokens, tagging s) per run
    files, kept, differ = {}, {}, {name: set() for name in bundles}
    with tempfile.TemporaryDirectory(prefix="bench-deid-") as tmp:
        load_before = os.getloadavg()
        for i in range(max(1, args.rounds)):
            order = list(bundles) if i % 2 == 0 else list(bundles)[::-1]
            for kind, extra in kinds.items():
                for name in order:
                    out = Path(tmp) / f"{name}-{kind}-{i}"
                    timed[name][kind].append(_timed_run(args, test_dir, out, *extra, model=bundles[name][0]))
                    got = _files(out)
                    if name not in files:
                        files[name], kept[name] = got, out
                    else:
                        differ[name] |= set(files[name]) ^ set(got) | {k for k in files[name] if got.get(k) != files[name][k]}
                        shutil.rmtree(out)
            progress(f"round {i + 1}: " + "; ".join(
                f"{name} {kind} {timed[name][kind][-1][0]:.1f} s" for kind in kinds for name in bundles))
        load_after = os.getloadavg()
        per = {}
        for name, (model, m) in bundles.items():
            _, _, reference, cost = refs[name]
            sel = m["selection"]
            tokens = timed[name]["sequential"][0][2]
            entry = {"model": str(model), "method": sel["method"], "objective": sel["objective"],
                     "budget": sel.get("budget"), "members_in_bundle": [x["label"] for x in m["members"]],
                     "recorded_cost": None if cost is None else round(cost, 1), "tokens": tokens}
            for kind in kinds:
                walls = [t[0] for t in timed[name][kind]]
                cpus = [t[1] for t in timed[name][kind]]
                wall, cpu = statistics.median(walls), statistics.median(cpus)
                entry[kind] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "runs_wall_s": [round(x, 3) for x in walls],
                               "runs_cpu_s": [round(x, 3) for x in cpus], "tokens_per_s": round(tokens / wall),
                               "tokens_per_cpu_s": round(tokens / cpu) if cpu else None}
            entry["dev"] = written_scores(corpus, kept[name])
            entry["documents_identical_to_ensemble_command"] = len(corpus.test) - len(spans_differing(corpus, kept[name], reference))
            entry["files_compared"], entry["files_differing_across_runs"] = len(files[name]), len(differ[name])
            per[name] = entry
    ratios = {f"{kind}_{what}": round(statistics.median(
        a[k] / b[k] for a, b in zip(timed["first"][kind], timed["second"][kind])), 3)
        for kind in kinds for what, k in (("wall", 0), ("cpu", 1))}
    from ensemble_deid.ensemble.objective import parse_objective

    target = parse_objective(second["selection"]["objective"]).base
    delta_f1 = 100 * (per["second"]["dev"]["strict"]["f1"] - per["first"]["dev"]["strict"]["f1"])
    delta_recall = 100 * (per["second"]["dev"][target.criterion]["recall"] - per["first"]["dev"][target.criterion]["recall"])
    within = delta_f1 >= -F1_WITHIN_PT if target.kind == "f" else delta_recall >= -RECALL_WITHIN_PT
    costs = [per[n]["recorded_cost"] for n in bundles]
    result = {
        "benchmark": "deidentify-versus", "corpus": args.corpus, "mode": args.mode, "documents": len(corpus.test),
        "rounds": max(1, args.rounds), "jobs": args.jobs, "bundles": per, "ratios_first_over_second": ratios,
        "recorded_cost_ratio": round(costs[0] / costs[1], 2) if None not in costs else None,
        "delta_strict_f1_pt": round(delta_f1, 2), "objective_criterion": target.criterion,
        "delta_recall_pt": round(delta_recall, 2), "within": within,
        "within_rule": f"strict F1 within {F1_WITHIN_PT} pt (an F1 objective) or the objective's criterion's recall "
                       f"within {RECALL_WITHIN_PT} pt (a recall objective)",
        "fit_wall_s": None if fit_s is None else round(fit_s, 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "machine": machine_description(), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json(args.out, result)
    write_markdown(args.out.with_suffix(".md"), _versus_table(result))
    for name in bundles:
        b = per[name]
        print(f"{name}: {b['method']} ({b['objective']}, budget {b['budget']}) over {', '.join(b['members_in_bundle'])}: "
              f"sequential {b['sequential']['wall_s']:.1f} s = {b['sequential']['tokens_per_s']:,} tokens/s "
              f"({b['sequential']['cpu_s']:.1f} CPU s), --jobs {args.jobs} {b['jobs']['wall_s']:.1f} s "
              f"({b['jobs']['cpu_s']:.1f} CPU s); dev strict F1 {b['dev']['strict']['f1']:.4f}, "
              f"{target.criterion} recall {b['dev'][target.criterion]['recall']:.4f}; "
              f"{b['documents_identical_to_ensemble_command']}/{result['documents']} documents identical to the "
              f"'ensemble' command; {b['files_compared'] - b['files_differing_across_runs']}/{b['files_compared']} "
              f"files identical across runs")
    print(f"first / second (median of {result['rounds']} alternating rounds): sequential wall x{ratios['sequential_wall']}, "
          f"CPU x{ratios['sequential_cpu']}; --jobs {args.jobs} wall x{ratios['jobs_wall']}, CPU x{ratios['jobs_cpu']}; "
          f"recorded cost x{result['recorded_cost_ratio']}; dF1 {delta_f1:+.2f} pt, d{target.criterion} recall "
          f"{delta_recall:+.2f} pt (load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)")
    print(f"wrote {args.out}")
    return result


def _versus_table(r: dict) -> str:
    """The Markdown table of step 7 (sync_docs.py copies it into the guide)."""
    a, b = r["bundles"]["first"], r["bundles"]["second"]
    crit, ratio = r["objective_criterion"], r["ratios_first_over_second"]

    def timing(x, kind):
        t = x[kind]
        return f"{t['wall_s']:.1f} s = {t['tokens_per_s']:,} tokens/s ({t['cpu_s']:.1f} CPU s)"

    def chosen(x):
        return f"{x['method']}, {x['objective']}, " + ("no budget" if x["budget"] is None else f"budget {x['budget']:g}")

    def members(x):
        return ", ".join(m.split(":")[0] for m in x["members_in_bundle"])

    rows = [
        ("bundle", chosen(a), chosen(b), ""),
        ("members", members(a), members(b), f"{len(a['members_in_bundle'])} / {len(b['members_in_bundle'])}"),
        ("recorded cost (CPU s / M tokens)", f"{a['recorded_cost']}", f"{b['recorded_cost']}",
         f"x{r['recorded_cost_ratio']}"),
        (f"sequential, end to end (median of {r['rounds']})", timing(a, "sequential"), timing(b, "sequential"),
         f"x{ratio['sequential_wall']} wall, x{ratio['sequential_cpu']} CPU"),
        (f"--jobs {r['jobs']}, end to end (median of {r['rounds']})", timing(a, "jobs"), timing(b, "jobs"),
         f"x{ratio['jobs_wall']} wall, x{ratio['jobs_cpu']} CPU"),
        ("dev strict P / R / F1", *(f"{x['dev']['strict']['precision']:.4f} / {x['dev']['strict']['recall']:.4f} / "
                                    f"{x['dev']['strict']['f1']:.4f}" for x in (a, b)),
         f"{r['delta_strict_f1_pt']:+.2f} pt F1"),
        (f"dev {crit} recall", f"{a['dev'][crit]['recall']:.4f}", f"{b['dev'][crit]['recall']:.4f}",
         f"{r['delta_recall_pt']:+.2f} pt ({'within' if r['within'] else 'not within'})"),
        ("spans identical to the 'ensemble' command", *(f"{x['documents_identical_to_ensemble_command']}/{r['documents']} notes"
                                                        for x in (a, b)), ""),
        ("files identical across its runs", *(f"{x['files_compared'] - x['files_differing_across_runs']}/{x['files_compared']}"
                                              for x in (a, b)), ""),
        ("load average (1 min) before, after", f"{r['load_average_before'][0]}, {r['load_average_after'][0]}", "", ""),
    ]
    lines = ["| | first | second | first / second |", "|---|---|---|---|"]
    lines += [f"| {' | '.join(cells)} |" for cells in rows]
    note = (f"\n\n{r['documents']} notes, {a['tokens']:,} tokens; {r['machine'].get('cpus')} cores, {r['when']}. Within: "
            f"{r['within_rule']}.")
    cite = "\n\nMEDDOCAN (CC BY 4.0): Marimon et al., IberLEF@SEPLN 2019, pp. 618-638." if r["corpus"].startswith("meddocan") else ""
    return "\n".join(lines) + note + cite + "\n"


if __name__ == "__main__":
    main()
