"""Benchmark of the prediction cache: write and read throughput of cache parts,
entry size per million tokens and ``verify`` time, against the two formats a
user would otherwise write by hand.

    .venv/bin/python benchmarks/scale/bench_cache.py                         # 1M tokens from MEDDOCAN, 10 parts
    .venv/bin/python benchmarks/scale/bench_cache.py --tokens 20000 --repeat 1 --synthetic   # smoke run

The predictions: tags and confidences of ``--tokens`` tokens (default one
million), split into ``--parts`` cache parts (default 10, the out-of-fold
parts of one cross-validation entry). With MEDDOCAN beside the repository the
documents are its train and dev notes (their own tokenization and PHI
density; copied under new ids until the count is reached) and the tags are
their gold tags with 8% of the spans dropped and 0.5% relabelled, as a good
tagger's output; otherwise (or with ``--synthetic``) the synthetic corpus of
bench_pruning.py. Confidences are float32 draws from Beta(8, 0.3)
(mostly near 1, as a CRF's marginals; their mantissas do not compress,
like real ones).

Ours: ``PredictionCache.write_part`` / ``read_part``: tags as uint16 ids
into a label table, float32 confidences and the decoded spans in a
compressed ``.npz``, its SHA-256 and a checksummed JSON commit record, each
written atomically and fsync'd; reading checks both checksums and rebuilds
the ``DocumentPrediction`` objects. The alternatives, written the way a user
would (no checksums, no fsync) and read back into the same objects:

- JSON lines: one line per document, ``{"doc_id", "tags": [...],
  "confidences": [...]}`` (``json.dumps`` of ``tolist()``);
- the same JSON lines gzip-compressed (``gzip.open``, default level 9);
- pickle: the list of ``DocumentPrediction`` objects (highest protocol).

Throughput is given as file MB/s (MB = 10^6 bytes of what lands on disk:
formats differ in size, so compare the seconds, or tokens/s) and as million
tokens per second; the ratios are the alternative's seconds (or bytes) over
ours, so > 1 means ours is faster (or smaller). Times are the median of
``--repeat`` runs, with the CPU time (steadier on a shared machine).
Writes benchmarks/results/cache.json. No note text is printed.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import pickle
import random
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups

from common import (MEDDOCAN, RESULTS, Clock, machine_description, progress, ratio, repeat, shown,  # noqa: E402
                    load_range, write_json, write_markdown)

from ensemble_deid.experiment.cache import EntryKey, PartKey, PredictionCache, encode_predictions  # noqa: E402
from ensemble_deid.corpus.document import Annotation, Document  # noqa: E402
from ensemble_deid.taggers.prediction import DocumentPrediction  # noqa: E402

MB = 1e6


# --- the predictions ----------------------------------------------------------------

def meddocan_documents(n_tokens: int) -> list[Document]:
    from ensemble_deid.corpus.formats import load_directory

    source = load_directory(MEDDOCAN / "train" / "xml") + load_directory(MEDDOCAN / "dev" / "xml")
    docs, total, copy = [], 0, 0
    while total < n_tokens:
        for d in source:
            doc = Document(f"{d.id}~{copy}" if copy else d.id, d.text, d.annotations, {"group": f"{d.group}~{copy}"})
            doc.__dict__["tokens"] = d.tokens  # shared, computed once
            docs.append(doc)
            total += len(d.tokens)
            if total >= n_tokens:
                break
        copy += 1
    return docs


def tagger_like(docs: list[Document], seed: int = 0) -> list[DocumentPrediction]:
    """Gold spans, 8% dropped and 0.5% given another label, with confidences."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    labels = sorted({(a.category, a.type) for d in docs for a in d.annotations}) or [("NAME", "PATIENT")]
    out = []
    for d in docs:
        spans = []
        for a in d.annotations:
            r = rng.random()
            if r < 0.08:
                continue
            if r < 0.085:
                a = Annotation(a.start, a.end, *rng.choice(labels))
            spans.append(a)
        conf = (1.0 - nrng.beta(0.3, 8.0, size=len(d.tokens))).astype(np.float32)
        out.append(DocumentPrediction.from_spans(d, spans, conf))
    return out


def synthetic(n_tokens: int):
    from scale.bench_pruning import synthetic_corpus

    docs, members = synthetic_corpus(n_tokens, 1, seed=0)
    nrng = np.random.default_rng(0)
    preds = []
    for d in docs:
        p = next(iter(members.values()))[d.id]
        preds.append(DocumentPrediction(d.id, p.tags, (1.0 - nrng.beta(0.3, 8.0, size=len(p.tags))).astype(np.float32)))
    return docs, preds


def split(items: list, parts: int) -> list[list]:
    return [items[i::parts] for i in range(parts)]


# --- the alternatives ------------------------------------------------------------------

def jsonl_lines(preds) -> str:
    return "".join(json.dumps({"doc_id": p.doc_id, "tags": list(p.tags),
                               "confidences": p.confidences.tolist()}) + "\n" for p in preds)


def jsonl_parse(lines) -> dict[str, DocumentPrediction]:
    out = {}
    for line in lines:
        row = json.loads(line)
        out[row["doc_id"]] = DocumentPrediction(row["doc_id"], tuple(row["tags"]),
                                                np.asarray(row["confidences"], dtype=np.float32))
    return out


def jsonl_write(path: Path, preds) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(jsonl_lines(preds))


def jsonl_read(path: Path):
    with open(path, encoding="utf-8") as fh:
        return jsonl_parse(fh)


def jsonl_gz_write(path: Path, preds) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(jsonl_lines(preds))


def jsonl_gz_read(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return jsonl_parse(fh)


def pickle_write(path: Path, preds) -> None:
    with open(path, "wb") as fh:
        pickle.dump(list(preds), fh, protocol=pickle.HIGHEST_PROTOCOL)


def pickle_read(path: Path):
    with open(path, "rb") as fh:
        return {p.doc_id: p for p in pickle.load(fh)}


ALTERNATIVES = {
    "jsonl": ("JSON lines (doc_id, tags, confidences per line)", "jsonl", jsonl_write, jsonl_read),
    "jsonl_gz": ("JSON lines, gzip (level 9)", "jsonl.gz", jsonl_gz_write, jsonl_gz_read),
    "pickle": ("pickle of the DocumentPrediction list (highest protocol)", "pkl", pickle_write, pickle_read),
}


# --- measuring -----------------------------------------------------------------------------

@contextmanager
def no_fsync():
    """os.fsync as a no-op (to show what durability costs)."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


def same(a: dict[str, DocumentPrediction], preds) -> bool:
    for p in preds:
        q = a.get(p.doc_id)
        if q is None or q.tags != p.tags or not np.array_equal(q.confidences, p.confidences):
            return False
    return len(a) == len(preds)


def figures(stats: dict, n_bytes: int, n_tokens: int) -> dict:
    med = stats["median_s"]
    return {"median_s": round(med, 4), "best_s": round(stats["best_s"], 4), "cpu_median_s": round(stats["cpu_median_s"], 4),
            "runs": stats["runs"], "file_mb_per_s": round(n_bytes / MB / med, 2) if med else None,
            "mtokens_per_s": round(n_tokens / 1e6 / med, 3) if med else None}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--synthetic", action="store_true", help="the synthetic corpus of bench_pruning.py, not MEDDOCAN")
    ap.add_argument("--out", type=Path, default=RESULTS / "cache.json")
    ap.add_argument("--tables", action="store_true", help="only rewrite cache.md from cache.json")
    args = ap.parse_args(argv)
    if args.tables:
        result = json.loads(args.out.read_text(encoding="utf-8"))
        print(write_markdown(args.out.with_suffix(".md"), markdown(result)).read_text())
        return result

    use_meddocan = not args.synthetic and (MEDDOCAN / "train" / "xml").is_dir()
    progress(f"building {args.tokens:,} tokens of predictions ({'MEDDOCAN' if use_meddocan else 'synthetic'} documents)")
    if use_meddocan:
        docs = meddocan_documents(args.tokens)
        preds = tagger_like(docs)
    else:
        docs, preds = synthetic(args.tokens)
    n_tokens = sum(len(p.tags) for p in preds)
    n_phi = sum(t != "O" for p in preds for t in p.tags)
    parts = min(args.parts, len(docs))
    doc_parts, pred_parts = split(docs, parts), split(preds, parts)
    progress(f"{len(docs):,} documents, {n_tokens:,} tokens ({n_phi / n_tokens:.1%} tagged PHI), {parts} parts")

    result: dict = {
        "benchmark": "prediction cache parts: write/read/verify vs JSON lines, gzip JSON lines, pickle",
        "data": {"source": "MEDDOCAN train+dev (copied to reach the count), gold tags perturbed" if use_meddocan
                 else "synthetic (bench_pruning.synthetic_corpus)",
                 "documents": len(docs), "tokens": n_tokens, "phi_token_share": round(n_phi / n_tokens, 4),
                 "parts": parts, "confidences": "float32, 1 - Beta(0.3, 8)"},
        "machine": machine_description(),
    }
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        tmp = Path(tmp)
        cache = PredictionCache(tmp / "cache")
        entry = EntryKey("bench", "1", "0" * 16, "f" * 16)
        keys = [PartKey.fold(entry, "b" * 16, i) for i in range(parts)]
        cache.ensure_entry(entry, {"tagger_label": "bench"})
        meta = {"tagger_label": "bench", "fit_seconds": 0.0, "predict_seconds": 0.0}

        def write_ours():
            for key, p, d in zip(keys, pred_parts, doc_parts):
                cache.write_part(key, p, d, meta)

        def read_ours():
            out = {}
            for key in keys:
                out.update(cache.read_part(key)[0])
            return out

        progress("ours: write_part")
        w = repeat(write_ours, args.repeat)
        npz = sum((cache.root / k.relpath).with_suffix(".npz").stat().st_size for k in keys)
        records = sum((cache.root / k.relpath).with_suffix(".json").stat().st_size for k in keys)
        ours_bytes = npz + records
        progress("ours: read_part")
        r = repeat(read_ours, args.repeat)
        assert same(r["result"], preds), "cache round trip changed the predictions"
        progress("ours: verify")
        v = repeat(cache.verify, args.repeat)
        assert v["result"] == [], "verify found problems in a fresh cache"
        with no_fsync():
            w_nofsync = repeat(write_ours, args.repeat)
        # Where the writing time goes (one pass, in memory).
        with Clock() as c_enc:
            arrays = [encode_predictions(p, d) for p, d in zip(pred_parts, doc_parts)]
        with Clock() as c_zip:
            for a in arrays:
                np.savez_compressed(io.BytesIO(), **a)
        # Tags only (external systems give no confidences).
        tags_only = [[DocumentPrediction(p.doc_id, p.tags) for p in part] for part in pred_parts]
        cache_t = PredictionCache(tmp / "cache-tags")
        cache_t.ensure_entry(entry, {"tagger_label": "bench"})
        for key, p, d in zip(keys, tags_only, doc_parts):
            cache_t.write_part(key, p, d, meta)
        npz_tags = sum((cache_t.root / k.relpath).with_suffix(".npz").stat().st_size for k in keys)

        ours = {
            "write": figures(w, ours_bytes, n_tokens), "read": figures(r, ours_bytes, n_tokens),
            "verify": figures(v, ours_bytes, n_tokens),
            "write_without_fsync": figures(w_nofsync, ours_bytes, n_tokens),
            "write_breakdown_one_pass_s": {"encode_arrays": round(c_enc.wall, 4), "savez_compressed": round(c_zip.wall, 4)},
            "npz_bytes": npz, "record_bytes": records,
            "npz_bytes_per_million_tokens": round(npz / n_tokens * 1e6),
            "entry_bytes_per_million_tokens": round(ours_bytes / n_tokens * 1e6),
            "npz_bytes_per_million_tokens_tags_only": round(npz_tags / n_tokens * 1e6),
        }
        result["ours"] = ours
        print(f"{len(docs):,} documents, {n_tokens:,} tokens in {parts} parts")
        print(f"ours (PredictionCache npz + checksummed record, fsync'd): write {w['median_s']:.3f} s "
              f"({ours['write']['file_mb_per_s']} MB/s, {ours['write']['mtokens_per_s']} M tokens/s; "
              f"{w_nofsync['median_s']:.3f} s without fsync), read {r['median_s']:.3f} s "
              f"({ours['read']['file_mb_per_s']} MB/s, {ours['read']['mtokens_per_s']} M tokens/s), "
              f"verify {v['median_s']:.3f} s")
        print(f"  entry size: {ours['npz_bytes_per_million_tokens'] / MB:.2f} MB npz per million tokens with confidences "
              f"({ours['npz_bytes_per_million_tokens_tags_only'] / MB:.3f} MB tags only); "
              f"{records / parts / 1e3:.1f} kB record per part")

        alts = {}
        for name, (description, ext, write, read) in ALTERNATIVES.items():
            paths = [tmp / f"{name}-{i}.{ext}" for i in range(parts)]

            def write_alt():
                for path, p in zip(paths, pred_parts):
                    write(path, p)

            def read_alt():
                out = {}
                for path in paths:
                    out.update(read(path))
                return out

            progress(f"{name}: write / read")
            aw = repeat(write_alt, args.repeat)
            size = sum(p.stat().st_size for p in paths)
            ar = repeat(read_alt, args.repeat)
            assert same(ar["result"], preds), f"{name} round trip changed the predictions"
            alt = {
                "description": description, "bytes": size, "bytes_per_million_tokens": round(size / n_tokens * 1e6),
                "write": figures(aw, size, n_tokens), "read": figures(ar, size, n_tokens),
                "ratios": {  # alternative / ours: > 1 means ours is faster or smaller
                    "write_time": round(ratio(aw["median_s"], w["median_s"]), 3),
                    "write_cpu": round(ratio(aw["cpu_median_s"], w["cpu_median_s"]), 3),
                    "read_time": round(ratio(ar["median_s"], r["median_s"]), 3),
                    "read_cpu": round(ratio(ar["cpu_median_s"], r["cpu_median_s"]), 3),
                    "size": round(ratio(size, ours_bytes), 3),
                },
            }
            alts[name] = alt
            q = alt["ratios"]
            print(f"{description}: write {aw['median_s']:.3f} s, read {ar['median_s']:.3f} s, "
                  f"{size / n_tokens:.2f} bytes/token -> time ratio (it / ours) write {q['write_time']:.2f}x, "
                  f"read {q['read_time']:.2f}x; size {q['size']:.2f}x")
        result["alternatives"] = alts
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    write_json(args.out, result)
    write_markdown(args.out.with_suffix(".md"), markdown(result))
    print(f"wrote {shown(args.out)} and its .md")
    return result


def markdown(result: dict) -> str:
    """The docs' table (benchmarks.md): ours against JSON lines, each time as
    the median wall seconds with the median CPU seconds beside it, and the load."""
    ours, jl = result["ours"], result["alternatives"]["jsonl"]
    mtok = result["data"]["tokens"] / 1e6

    def t(f):
        return f"{f['median_s']:.2f} s wall, {f['cpu_median_s']:.2f} s CPU"

    load = load_range((result.get("machine") or {}).get("load_average", [None])[0],
                      (result.get("load_average_at_end") or [None])[0])
    return "\n".join([
        "| | ours (npz parts + checksummed JSON records) | JSON lines | ratio |",
        "|---|---:|---:|---:|",
        f"| size per million tokens | {ours['entry_bytes_per_million_tokens'] / MB:.2f} MB "
        f"({ours['npz_bytes_per_million_tokens_tags_only'] / MB:.2f} MB tags only) | "
        f"{jl['bytes_per_million_tokens'] / MB:.1f} MB | {jl['ratios']['size']:.1f}x smaller |",
        f"| write (fsync'd, atomic) | {t(ours['write'])} ({ours['write']['mtokens_per_s']:.2f} M tokens/s) | "
        f"{t(jl['write'])} | {jl['ratios']['write_time']:.2f}x |",
        f"| read (checksums verified) | {t(ours['read'])} ({ours['read']['mtokens_per_s']:.1f} M tokens/s) | "
        f"{t(jl['read'])} | {jl['ratios']['read_time']:.1f}x faster |",
        f"| verify | {t(ours['verify'])} | | |",
        f"| load (1 min) at start-end, cores | {load}, {(result.get('machine') or {}).get('cpus_usable', '?')} | | |",
        "",
        f"{mtok:.2f} M tokens in {result['data']['parts']} parts; medians of {ours['write']['runs']} runs. "
        "The other alternatives (gzip JSON lines, pickle) are in cache.json.",
    ])


if __name__ == "__main__":
    main()
