"""Benchmark of the evaluation module (issue 3).

Figures, printed and written to benchmarks/results/scorer.json:
- every criterion (official ten + SemEval four, with breakdowns and leak
  rates) on 500 documents already in memory: target < 0.3 s;
- the same with the straightforward per-criterion Python loop
  (evaluation/reference.py), and the speed ratio;
- ``ensemble-deid evaluate`` end to end (process start, imports, reading
  both folders of XML as the official program does, every criterion, JSON
  out) on 250 (MEDDOCAN dev) and 500 (MEDDOCAN train) documents against a
  perturbed system folder: target <= 0.35 s wall for 500 (issue 20);
- one strict micro-F1 re-scoring of a cached system with Scorer: target < 20 ms
  (and the naive loop for comparison).

The system output is gold perturbed at random with a fixed seed (dropped tags,
moved ends, changed types, spurious tags). Times are the median of several
runs (the best is printed too: the machine is shared).

    .venv/bin/python benchmarks/scoring/bench_scorer.py [--corpus DIR] [--dev DIR] [--repeat N]

Data: MEDDOCAN (Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H,
Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638;
CC BY 4.0), read from ../shared/corpora/meddocan, never copied.

Besides the JSON, it writes benchmarks/results/scorer.md, the table that
docs/evaluation.md shows (copied there between its scorer-table markers).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ensemble_deid.corpus.document import Annotation
from ensemble_deid.evaluation import ALL, CRITERIA, Scorer, evaluate
from ensemble_deid.evaluation import reference
from ensemble_deid.corpus.document import Document
from ensemble_deid.corpus.formats import load_directory, write_i2b2_xml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, ROOT, console_script, replace_between_markers, write_json, write_markdown  # noqa: E402


def perturb(docs, seed=0):
    rng = random.Random(seed)
    types = sorted({(a.category, a.type) for d in docs for a in d.annotations})
    out = {}
    for d in docs:
        tags = []
        for a in d.annotations:
            r = rng.random()
            if r < 0.75:
                tags.append(a)
            elif r < 0.85:
                tags.append(Annotation(a.start, max(a.start + 1, min(len(d.text), a.end + rng.choice([-3, -1, 1, 2]))), a.category, a.type))
            elif r < 0.92:
                tags.append(Annotation(a.start, a.end, *rng.choice(types)))
        for _ in range(rng.randint(0, 3)):
            s = rng.randrange(max(1, len(d.text) - 10))
            tags.append(Annotation(s, s + rng.randint(1, 8), *rng.choice(types)))
        out[d.id] = tags
    return out


CPU_TIMES: list[float] = []  # CPU seconds of the last timed() runs


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(fn, repeat):
    """Median and best wall time; CPU_TIMES gets the CPU time of each run
    (own process and children), which other load on the machine barely moves."""
    times = []
    CPU_TIMES.clear()
    result = None
    for _ in range(repeat):
        c = _cpu()
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
        CPU_TIMES.append(_cpu() - c)
    return statistics.median(times), min(times), result


def cpu_median() -> float:
    return statistics.median(CPU_TIMES)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(MEDDOCAN / "train" / "xml"), help="folder with >= 500 documents")
    ap.add_argument("--dev", default=str(MEDDOCAN / "dev" / "xml"), help="folder for the end-to-end run")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "scorer.json"),
                    help="results file (the docs table is updated only for the default one)")
    args = ap.parse_args()

    gold = load_directory(args.corpus)[:500]
    system = perturb(gold)
    n_tags = sum(len(d.annotations) for d in gold)
    print(f"{len(gold)} documents, {n_tags} gold tags, {sum(len(v) for v in system.values())} system tags, "
          f"{sum(len(d.text) for d in gold)} characters")
    figures: dict = {"documents": len(gold), "gold_tags": n_tags, "python": platform.python_version(),
                     "cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}

    evaluate(gold, system)  # warm-up
    med, best, report = timed(lambda: evaluate(gold, system, criteria=ALL), args.repeat)
    cpu = cpu_median()
    figures["all_criteria_500_docs_s"] = {"median": med, "best": best, "cpu_median": cpu, "target": 0.3}
    print(f"every criterion (14, with breakdowns and leak), 500 docs: median {med:.3f} s, best {best:.3f} s, "
          f"CPU {cpu:.3f} s (target < 0.3 s)")

    def naive():
        return {name: reference.corpus_counts(gold, system, CRITERIA[name]) for name in ALL}

    n_med, n_best, naive_counts = timed(naive, max(1, args.repeat // 3))
    for name in ALL:  # same numbers, or the comparison is meaningless
        got = report[name].documents
        assert list(zip(got.tp.tolist(), got.fp.tolist(), got.fn.tolist())) == naive_counts[name], name
    n_cpu = cpu_median()
    figures["naive_all_criteria_500_docs_s"] = {"median": n_med, "best": n_best, "cpu_median": n_cpu}
    figures["speedup_all_criteria"] = {"wall": n_med / med, "cpu": n_cpu / cpu}
    print(f"naive per-criterion Python loop (counts only, no breakdowns, no leak): median {n_med:.3f} s, "
          f"CPU {n_cpu:.3f} s -> {n_med / med:.1f}x slower (CPU {n_cpu / cpu:.1f}x)")

    scorer = Scorer(gold, "strict")
    scorer.prf(system)
    med, best, prf = timed(lambda: scorer.prf(system), args.repeat * 3)
    assert abs(prf[2] - report["strict"].micro.f1) < 1e-12
    cpu = cpu_median()
    figures["strict_rescoring_ms"] = {"median": med * 1e3, "best": best * 1e3, "cpu_median": cpu * 1e3, "target": 20}
    print(f"strict micro-F1 re-scoring with Scorer: median {med * 1e3:.2f} ms, best {best * 1e3:.2f} ms, "
          f"CPU {cpu * 1e3:.2f} ms (target < 20 ms)")
    as_list = [system[d.id] for d in gold]
    med_l, best_l, _ = timed(lambda: scorer.prf(as_list), args.repeat * 3)
    figures["strict_rescoring_list_input_ms"] = {"median": med_l * 1e3, "best": best_l * 1e3}
    print(f"  (per-document lists in gold order: median {med_l * 1e3:.2f} ms)")
    table = scorer.table(system)
    keep = np.arange(len(table)) % 10 != 0
    med_t, best_t, _ = timed(lambda: scorer.prf(table.select(keep)), args.repeat * 3)
    figures["strict_rescoring_table_subset_ms"] = {"median": med_t * 1e3, "best": best_t * 1e3, "cpu_median": cpu_median() * 1e3}
    print(f"  (a subset of a converted table, Scorer.table(...).select(mask): median {med_t * 1e3:.2f} ms)")
    n_med, n_best, _ = timed(lambda: reference.micro_macro(reference.corpus_counts(gold, system, "strict")), args.repeat)
    n_cpu = cpu_median()
    figures["naive_strict_rescoring_ms"] = {"median": n_med * 1e3, "best": n_best * 1e3, "cpu_median": n_cpu * 1e3}
    figures["speedup_strict_rescoring"] = {"wall": n_med / med, "cpu": n_cpu / cpu}
    print(f"naive strict re-scoring (Python sets): median {n_med * 1e3:.2f} ms, CPU {n_cpu * 1e3:.2f} ms "
          f"-> {n_med / med:.1f}x slower (CPU {n_cpu / cpu:.1f}x)")

    cmd = [console_script(), "evaluate"]
    figures["cli_end_to_end_s"] = {}
    for label, folder in (("250", args.dev), ("500", args.corpus)):
        docs = load_directory(folder)
        tmp = Path(tempfile.mkdtemp(prefix="bench-scorer-"))  # 0700; removed below
        try:
            perturbed = perturb(docs, seed=1)
            for d in docs:
                write_i2b2_xml(Document(d.id, d.text, perturbed[d.id]), tmp / f"{d.id}.xml")
            run = cmd + ["--gold", folder, "--system", str(tmp), "--format", "json"]
            subprocess.run(run, check=True, capture_output=True)  # warm the file cache

            med, best, _ = timed(lambda: subprocess.run(run, check=True, capture_output=True), max(5, args.repeat))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        cpu = cpu_median()
        figures["cli_end_to_end_s"][label] = {
            "documents": len(docs), "median": med, "best": best, "cpu_median": cpu,
            "target": 0.35 if label == "500" else None,
            "command": "ensemble-deid evaluate --gold " + folder + " --system PERTURBED --format json",
        }
        print(f"ensemble-deid evaluate end to end, {len(docs)} documents (all criteria, JSON): median {med:.3f} s, "
              f"best {best:.3f} s, CPU {cpu:.3f} s" + (" (target <= 0.35 s)" if label == "500" else ""))
    figures["load_average_after"] = os.getloadavg()[0]

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, figures)
    print(f"wrote {out}")
    table = out.with_suffix(".md")
    write_markdown(table, markdown_table(figures))
    print(f"wrote {table}")
    if out.resolve() == DEFAULT_OUT.resolve():
        print(f"updated {replace_between_markers(DOCS, BEGIN, END, markdown_table(figures))}")  # without its record


DEFAULT_OUT = ROOT / "benchmarks" / "results" / "scorer.json"
DOCS = ROOT / "docs" / "evaluation.md"
BEGIN, END = "<!-- scorer-table:begin (benchmarks/results/scorer.md) -->", "<!-- scorer-table:end -->"


def markdown_table(f: dict) -> str:
    """The docs table, from the figures alone."""
    def s(x):
        return f"{x:.3f} s"

    def ms(x):
        return f"{x:.1f} ms"

    e2e = f["cli_end_to_end_s"]
    rows = [
        ("all 14 criteria with breakdowns and leak rates, 500 documents in memory", "< 0.3 s",
         s(f["all_criteria_500_docs_s"]["median"]), s(f["all_criteria_500_docs_s"]["cpu_median"])),
        ("one strict micro re-scoring of a system (`Scorer`)", "< 20 ms",
         ms(f["strict_rescoring_ms"]["median"]), ms(f["strict_rescoring_ms"]["cpu_median"])),
        ("re-scoring a subset of a converted system (`Scorer.table(...).select`)", "",
         ms(f["strict_rescoring_table_subset_ms"]["median"]), ms(f["strict_rescoring_table_subset_ms"]["cpu_median"])),
    ] + [
        (f"`ensemble-deid evaluate` end to end, {v['documents']} documents", "<= 0.35 s" if k == "500" else "",
         f"{s(v['median'])} (best {s(v['best'])})", s(v["cpu_median"]))
        for k, v in e2e.items()
    ]
    lines = [
        f"{f['documents']} MEDDOCAN train documents ({f['gold_tags']:,} gold tags) for the in-memory rows; medians; "
        f"{f['cpus']} CPUs, load average {f['load_average']:.1f} before and {f.get('load_average_after', 0):.1f} after "
        "(wall times on a shared machine; CPU is this process and its children).",
        "",
        "| measurement | target | wall | CPU |",
        "|---|---|---:|---:|",
    ] + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows] + [
        # in the table too: the docs copy the table alone (sync_docs.py)
        f"| load average (1 min) before, after; cores | | {f['load_average']:.1f}, "
        f"{f.get('load_average_after', 0):.1f} | {f['cpus']} |"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
