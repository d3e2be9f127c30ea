"""Benchmark: the full pruning search (22 members, every threshold) on a
synthetic prediction cache of 500,000 tokens.

Builds a synthetic corpus (documents of one-letter words with random PHI
spans) and 22 members that are noisy, partly correlated copies of the gold
(misses, boundary and type errors, spurious spans), writes their predictions
to a throwaway PredictionCache, reads them back, builds the candidate table
and runs greedy backward elimination at every threshold 1..22. Prints the
time of each stage and the peak memory, compares with a naive implementation
(spans decoded once, then per evaluation: voting with overlap resolution in
Python and re-scoring with the strict Scorer) timed on a few evaluations and
extrapolated to the search's evaluation count, and writes
benchmarks/results/pruning.json.

    .venv/bin/python benchmarks/scale/bench_pruning.py [--tokens 500000] [--members 22]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ensemble_deid.corpus.bio import decode
from ensemble_deid.experiment.cache import EntryKey, PartKey, PredictionCache
from ensemble_deid.experiment.cv import PeakMemory
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.ensemble import SubsetScorer, build_candidates, pruning_search
from ensemble_deid.evaluation import Scorer
from ensemble_deid.corpus.fingerprint import corpus_fingerprint
from ensemble_deid.taggers.prediction import DocumentPrediction

LABELS = ["NAME:PATIENT", "NAME:DOCTOR", "DATE:DATE", "LOCATION:CITY", "LOCATION:HOSPITAL", "AGE:AGE",
          "ID:MEDICALRECORD", "CONTACT:PHONE"]
RESULTS = Path(__file__).resolve().parents[1] / "results"
sys.path.insert(0, str(RESULTS.parent))
from common import load_range, write_json, write_markdown  # noqa: E402


def _ann(first: int, stop: int, label: str) -> Annotation:
    cat, typ = label.split(":")
    return Annotation(2 * first, 2 * stop - 1, cat, typ)


def synthetic_corpus(n_tokens: int, n_members: int, seed: int = 0, doc_tokens: int = 1000):
    """Documents and {member: {doc_id: DocumentPrediction}}."""
    rng = random.Random(seed)
    docs, members = [], {f"synth{j:02d}": {} for j in range(n_members)}
    quality = [0.78 + 0.17 * rng.random() for _ in range(n_members)]  # per member

    def fails(difficulty: float, q: float) -> bool:  # errors correlate through the difficulty
        return rng.random() < 1.0 / (1.0 + math.exp(-(difficulty - q) * 15))

    for i in range(max(1, n_tokens // doc_tokens)):
        gold, pos = [], 0
        while True:
            pos += rng.randint(5, 55)
            length = rng.choice((1, 1, 2, 2, 3, 4))
            if pos + length > doc_tokens:
                break
            gold.append((pos, pos + length, rng.choice(LABELS)))
            pos += length
        doc = Document(f"{i // 2:04d}-{i % 2 + 1:02d}", " ".join(["x"] * doc_tokens), [_ann(*g) for g in gold],
                       {"group": f"{i // 2:04d}"})
        docs.append(doc)
        # Shared difficulty: hard gold spans are missed or cut by many members,
        # and "confusable" non-PHI spans are predicted by many.
        hardness = [rng.random() for _ in gold]
        variant = [(a, b + 1 if b < doc_tokens else b - 1) if b - a == 1 or rng.random() < 0.5 else (a + 1, b)
                   for a, b, _ in gold]
        confusable = []
        for _ in range(rng.randint(3, 10)):
            a = rng.randrange(doc_tokens - 3)
            confusable.append((a, a + rng.randint(1, 3), rng.choice(LABELS), rng.random()))
        for j, name in enumerate(members):
            spans = []
            for (a, b, lab), h, (va, vb) in zip(gold, hardness, variant):
                if fails(h, quality[j]):
                    if rng.random() < 0.5:
                        continue  # missed
                    a, b = va, vb  # the usual boundary error on this span
                elif rng.random() < 0.02:
                    lab = rng.choice(LABELS)  # type error
                spans.append((a, b, lab))
            for a, b, lab, pull in confusable:
                if fails(pull, quality[j]):
                    spans.append((a, b, lab))
            for _ in range(rng.randint(0, int(10 * (1.0 - quality[j])))):
                a = rng.randrange(doc_tokens - 3)
                spans.append((a, a + rng.randint(1, 3), rng.choice(LABELS)))  # own spurious spans
            members[name][doc.id] = DocumentPrediction.from_spans(doc, [_ann(*s) for s in spans])
    return docs, members


def naive_evaluation(docs, spans_by_member, names, subset, threshold, rank, scorer):
    """One (subset, threshold) scored the straightforward way."""
    system = {}
    for d in docs:
        votes: dict[tuple, list[int]] = {}
        for j in subset:
            for a in spans_by_member[names[j]][d.id]:
                votes.setdefault((a.start, a.end, a.category, a.type), []).append(j)
        kept = [(len(v), -min(rank[j] for j in v), k) for k, v in votes.items() if len(v) >= threshold]
        kept.sort(reverse=True)
        chosen: list[tuple] = []
        for _, _, k in kept:
            if all(k[1] <= c[0] or c[1] <= k[0] for c in chosen):
                chosen.append(k)
        system[d.id] = [Annotation(s, e, c, t) for s, e, c, t in chosen]
    return scorer.prf(system)[2]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=500_000)
    ap.add_argument("--members", type=int, default=22)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--naive-evaluations", type=int, default=3)
    ap.add_argument("--output", type=Path, default=RESULTS / "pruning.json")
    ap.add_argument("--tables", action="store_true", help="only rewrite pruning.md from pruning.json")
    args = ap.parse_args(argv)
    if args.tables:
        result = json.loads(args.output.read_text(encoding="utf-8"))
        write_markdown(args.output.with_suffix(".md"), markdown(result))
        print(markdown(result))
        return result

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    docs, members = synthetic_corpus(args.tokens, args.members, args.seed)
    names = tuple(members)
    fp = corpus_fingerprint(docs)
    t_gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        cache = PredictionCache(tmp)
        parts = {}
        for name in names:
            entry = EntryKey(name, "1", "bench", fp)
            parts[name] = PartKey.predict(entry, fp)
            cache.ensure_entry(entry, {"tagger_label": name})  # the cache reads parts of a recorded entry only
            cache.write_part(parts[name], [members[name][d.id] for d in docs], docs, {"bench": True})
        del members
        with PeakMemory() as mem:
            t1, c1 = time.perf_counter(), time.process_time()
            loaded = {name: cache.read_part(parts[name])[0] for name in names}
            t2, c2 = time.perf_counter(), time.process_time()
            table = build_candidates([loaded[n] for n in names], names, docs)
            t3, c3 = time.perf_counter(), time.process_time()
            rank = table.member_rank()
            search = pruning_search(table, rank)
            t4, c4 = time.perf_counter(), time.process_time()
    n_tokens = sum(len(d.tokens) for d in docs)

    # Naive: spans decoded once; per evaluation, Python voting + Scorer.
    spans = {n: {d.id: decode(d.tokens, loaded[n][d.id].tags) for d in docs} for n in names}
    scorer = Scorer(docs, "strict")
    samples = []
    full = list(range(len(names)))
    fast_scorer = SubsetScorer(table, rank)
    for i in range(args.naive_evaluations):
        subset = full[: len(full) - i]
        s0 = time.perf_counter()
        f_naive = naive_evaluation(docs, spans, names, subset, 2 + i, rank, scorer)
        samples.append(time.perf_counter() - s0)
        # Same figure as the vectorised scorer (a correctness check as well).
        fast = float(fast_scorer.figures(fast_scorer.subset_bits(subset), 2 + i)[0])  # F1, the default target
        assert abs(fast - f_naive) < 1e-12, (fast, f_naive)
    per_eval = float(np.median(samples))
    naive_total = per_eval * search.evaluations
    search_s = t4 - t3
    result = {
        "tokens": n_tokens, "documents": len(docs), "members": len(names), "gold_spans": int(table.n_gold.sum()),
        "candidates": len(table), "contested_candidates": int(len(table.contested)),
        "thresholds": len(search.paths), "evaluations": search.evaluations,
        "seconds": {"generate": round(t_gen, 2), "read_cache": round(t2 - t1, 3),
                    "build_candidates": round(t3 - t2, 3), "search": round(search_s, 3),
                    "table_and_search": round(t4 - t2, 3)},
        "cpu_seconds": {"read_cache": round(c2 - c1, 3), "build_candidates": round(c3 - c2, 3),
                        "search": round(c4 - c3, 3)},
        "load_before": round(load_before, 2),
        "peak_rss_mb": {"during_read_build_search": round(mem.peak, 1),
                        "process_max": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)},
        "naive": {"seconds_per_evaluation": round(per_eval, 4), "sampled": len(samples),
                  "extrapolated_seconds": round(naive_total, 1),
                  "speedup_vs_search": round(naive_total / search_s, 1) if search_s else None},
        "chosen": {"threshold": search.threshold, "members": len(search.subset), "f1": round(search.score, 4)},
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count(),
                    "numpy": np.__version__},
    }
    print(f"synthetic cache: {n_tokens:,} tokens, {len(docs)} documents, {len(names)} members, "
          f"{result['gold_spans']:,} gold spans, {len(table):,} candidates ({result['contested_candidates']:,} contested)")
    print(f"read cache {t2 - t1:.2f} s; build candidate table {t3 - t2:.2f} s; "
          f"pruning search {search_s:.2f} s ({search.evaluations:,} evaluations, {len(search.paths)} thresholds)")
    print(f"peak memory: {mem.peak:.0f} MB RSS during read+build+search "
          f"(process max {result['peak_rss_mb']['process_max']:.0f} MB)")
    print(f"chosen: t={search.threshold}, {len(search.subset)} members, training F1 {search.score:.4f}")
    print(f"naive re-scoring: {per_eval:.3f} s per evaluation (median of {len(samples)}) -> "
          f"~{naive_total:,.0f} s for the search; ratio naive/vectorised = {result['naive']['speedup_vs_search']:,}x")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    result["load_after"] = round(os.getloadavg()[0], 2)
    write_json(args.output, result)
    write_markdown(args.output.with_suffix(".md"), markdown(result))
    print(f"wrote {args.output} and its .md")
    return result


def markdown(result: dict) -> str:
    """The docs' table (ensembles.md): each stage's wall seconds with its CPU
    seconds and the load of the run beside them (older files: not recorded)."""
    wall, cpu = result["seconds"], result.get("cpu_seconds") or {}
    load = load_range(result.get("load_before"), result.get("load_after"))
    naive = result["naive"]

    def c(key):
        return f"{cpu[key]:.2f}" if key in cpu else "not recorded"

    return "\n".join([
        "| stage | wall s | CPU s |", "|---|--:|--:|",
        f"| read {result['members']} cache parts | {wall['read_cache']:.2f} | {c('read_cache')} |",
        f"| build the candidate table ({result['candidates']:,} candidates, {result['contested_candidates']:,} "
        f"overlapping) | {wall['build_candidates']:.2f} | {c('build_candidates')} |",
        f"| full search: {result['thresholds']} thresholds, {result['evaluations']:,} subset evaluations "
        f"| {wall['search']:.2f} | {c('search')} |",
        f"| naive re-scoring, extrapolated to the same evaluations ({naive['seconds_per_evaluation']:.2f} s each, "
        f"median of {naive['sampled']}) | {naive['extrapolated_seconds']:,.0f} | |",
        f"| load (1 min) before-after, cores | {load}, {result['machine'].get('cpus', '?')} | |",
    ])


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
