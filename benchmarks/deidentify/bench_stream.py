"""A long stream of small synthetic notes through ``deidentify``: is memory
flat? The folder holds ``--notes`` plain-text notes (a pool of synthetic
2014-style notes, ``corpus/synth``, written again under distinct ids); one
``FolderDeidentifier`` run tags them all, batch after batch, and the
process's resident memory is sampled after every batch. Reported: the peak
while the first ``--window`` notes are tagged against the peak while the
last ``--window`` are (flat: within 10%), and tokens/s.

    python benchmarks/deidentify/bench_stream.py --model MODEL --notes 200000 --workdir /somewhere/kept

With ``--workdir`` the run is resumable: the notes, the outputs and one
sample line per batch (notes done, resident bytes, tokens, seconds) stay in
that folder, so a stopped run started again with the same arguments tags only
the notes it had not finished (``deidentify``'s own resume) and the figures
cover every segment. Memory is compared within one process only when the
first and the last window were tagged by the same one (``segments`` says how
many processes took part). The notes and outputs are removed once a run
completes. Without ``--workdir`` a temp folder is used and removed.

Results: benchmarks/results/stream.json (and .md). No note text is printed.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import RESULTS, machine_description, progress, write_json, write_markdown  # noqa: E402

NOTES_READY = "notes-ready.json"  # written once every note is: a resume does not write them again
SAMPLES = "samples.jsonl"  # one line per batch, appended (a torn last line is ignored)


def write_stream(folder: Path, notes: int, pool: int, seed: int) -> None:
    """The ``notes`` plain-text notes, once: a folder whose marker matches is
    kept; one with another stream's marker is refused, not overwritten."""
    from ensemble_deid.corpus.synth.generate import generate_corpus

    marker = folder.parent / NOTES_READY
    wanted = {"notes": notes, "pool": pool, "seed": seed}
    if marker.exists():
        if json.loads(marker.read_text(encoding="utf-8")) != wanted:
            sys.exit(f"bench_stream: {folder.parent} holds another stream ({marker.name}); use another --workdir")
        return
    texts = [d.text for d in generate_corpus("i2b2-2014", pool, seed, "test", None)]
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(notes):
        (folder / f"note-{i:07d}.txt").write_text(texts[i % pool], encoding="utf-8")
    marker.write_text(json.dumps(wanted), encoding="utf-8")


def read_samples(path: Path) -> list[dict]:
    samples = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                samples.append(json.loads(line))
            except ValueError:  # the torn last line of a killed run
                continue
    return samples


def summarise(samples: list[dict], window: int) -> dict:
    """Tokens/s and the two windows' peaks (the first ``window`` notes, the
    last ``window`` done so far) over every segment's samples."""
    segments = sorted({s["segment"] for s in samples})
    tokens = sum(s["tokens"] for s in samples)
    seconds, cpu = 0.0, 0.0
    for seg in segments:
        times = [s["s"] for s in samples if s["segment"] == seg]
        seconds += max(times) - min(times)
        cpus = [s.get("cpu") for s in samples if s["segment"] == seg]
        cpu = None if cpu is None or None in cpus else cpu + max(cpus) - min(cpus)  # older samples: none kept
    done = max((s["done"] for s in samples), default=0)
    if done < 2 * window:
        raise SystemExit(f"bench_stream: {done:,} notes done, fewer than two windows of {window:,}")
    first = [s for s in samples if 0 < s["done"] <= window and s["tokens"]]
    last = [s for s in samples if s["done"] > done - window and s["tokens"]]
    a, b = max(s["rss"] for s in first), max(s["rss"] for s in last)
    return {"segments": len(segments), "tokens": tokens, "seconds": seconds, "cpu": cpu, "first": a, "last": b,
            "windows_in_one_process": {s["segment"] for s in first} == {s["segment"] for s in last}
            and len({s["segment"] for s in first}) == 1,
            "done": done}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a bundle written by 'fit'")
    ap.add_argument("--notes", type=int, default=200_000)
    ap.add_argument("--window", type=int, default=10_000, help="notes at the start and at the end compared")
    ap.add_argument("--pool", type=int, default=500, help="distinct synthetic notes the stream cycles through")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=None,
                    help="a folder kept between runs: a stopped run started again resumes (default: a temp folder)")
    ap.add_argument("--report", action="store_true",
                    help="tag nothing: report what --workdir's samples hold so far (a run that cannot finish in time; "
                         "the last window is then the last notes done)")
    ap.add_argument("--out", type=Path, default=RESULTS / "stream.json")
    args = ap.parse_args(argv)
    if args.notes < 2 * args.window:
        sys.exit("bench_stream: --notes must be at least twice --window")
    if args.report:
        if args.workdir is None or not (args.workdir / SAMPLES).exists():
            sys.exit("bench_stream: --report needs the --workdir of a started run")
        return report(args, read_samples(args.workdir / SAMPLES), None, None)
    import psutil

    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.batch import FolderDeidentifier

    kept = args.workdir is not None
    if kept:
        args.workdir.mkdir(parents=True, exist_ok=True)
    work = args.workdir if kept else Path(tempfile.mkdtemp(prefix="bench-stream-"))
    try:
        progress(f"writing {args.notes:,} notes (unless already written) ...")
        write_stream(work / "notes", args.notes, args.pool, args.seed)
        model = Deidentifier.load(args.model)
        me = psutil.Process()
        segment = f"{os.getpid()}-{time.time_ns()}"  # one per run, even two runs in one process and second
        done = 0
        batch_tokens = 0
        spans = model.spans

        def counted(docs):  # tokens of each batch, so a killed segment's share still counts
            nonlocal batch_tokens
            out = spans(docs)
            batch_tokens += sum(len(d.tokens) for d in docs)
            return out

        model.spans = counted
        t0 = time.perf_counter()
        with open(work / SAMPLES, "a", encoding="utf-8") as log:
            def sample(n: int) -> None:
                nonlocal done, batch_tokens
                done += n
                rss = me.memory_info().rss
                log.write(json.dumps({"segment": segment, "done": done, "rss": rss, "tokens": batch_tokens,
                                      "s": round(time.perf_counter() - t0, 3), "cpu": round(time.process_time(), 3)})
                          + "\n")
                log.flush()
                batch_tokens = 0
                if done % 10_000 < n:
                    progress(f"{done:,} notes, {rss / 2**20:.0f} MB resident")

            FolderDeidentifier(model, "tag", ("xml",), batch_size=args.batch_size).run(work / "notes", work / "out",
                                                                                       progress=sample)
        wall = time.perf_counter() - t0
        samples = read_samples(work / SAMPLES)
    finally:
        if not kept:
            shutil.rmtree(work, ignore_errors=True)
    result = report(args, samples, model, wall)
    if kept:  # complete: the notes and outputs (a gigabyte at 200k notes) are not needed again; the samples are kept
        (work / SAMPLES).rename(work / f"samples-{time.strftime('%Y%m%dT%H%M%S')}.jsonl")
        (work / NOTES_READY).unlink()
        for sub in ("notes", "out"):
            shutil.rmtree(work / sub, ignore_errors=True)
    return result


def report(args, samples: list[dict], model, wall: float | None) -> dict:
    """The results file and table from the samples (complete or not)."""
    s = summarise(samples, args.window)
    manifest = model.manifest if model is not None else _manifest(args.model)
    complete = s["done"] >= args.notes
    result = {
        "benchmark": "stream", "notes": args.notes, "notes_done": s["done"], "complete": complete,
        "window": args.window, "pool": args.pool,
        "batch_size": args.batch_size, "bundle": [m["label"] for m in manifest["members"]],
        "method": (manifest.get("method") or {}).get("name"), "tokens": s["tokens"],
        "tagging_wall_s": round(s["seconds"], 1), "tagging_cpu_s": None if s["cpu"] is None else round(s["cpu"], 1),
        "tokens_per_s": round(s["tokens"] / s["seconds"]),
        "segments": s["segments"], "windows_in_one_process": s["windows_in_one_process"],
        "last_segment_wall_s": None if wall is None else round(wall, 1),
        "peak_rss_first_window_mb": round(s["first"] / 2**20, 1), "peak_rss_last_window_mb": round(s["last"] / 2**20, 1),
        "last_over_first": round(s["last"] / s["first"], 4), "flat_within_10_percent": abs(s["last"] / s["first"] - 1) <= 0.10,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_description(), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json(args.out, result)
    done = f"{s['done']:,}" + ("" if complete else f" of {args.notes:,} (not finished)")
    corpus = (manifest.get("corpus") or {}).get("name")
    bundle = (" + ".join(result["bundle"]) + (f" ({result['method']})" if result["method"] else "")
              + (f", fitted on {corpus}" if corpus else ""))
    table = ("| notes | bundle | tokens | tokens/s | CPU s | peak RSS, first {w:,} notes | peak RSS, last {w:,} notes |"
             " last / first | processes | load average (1 min) when written |\n"
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
             "| {done} | {bundle} | {tokens:,} | {tps:,} | {cpu} | {a} MB | {b} MB | {r:.3f} | {seg} | {load:.1f} |\n").format(
        w=args.window, done=done, bundle=bundle,
        cpu="not recorded" if s["cpu"] is None else f"{s['cpu']:,.0f}", tokens=s["tokens"], tps=result["tokens_per_s"],
        a=result["peak_rss_first_window_mb"], b=result["peak_rss_last_window_mb"], r=result["last_over_first"],
        seg=s["segments"], load=result["load_average_end"][0])
    write_markdown(args.out.with_suffix(".md"), table)
    print(f"{done} notes ({s['tokens']:,} tokens) through deidentify in {s['seconds']:.0f} s = "
          f"{result['tokens_per_s']:,} tokens/s over {s['segments']} process(es); peak resident memory "
          f"{result['peak_rss_first_window_mb']} MB over the first {args.window:,} notes, "
          f"{result['peak_rss_last_window_mb']} MB over the last (x{result['last_over_first']}); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"wrote {args.out}")
    return result


def _manifest(path) -> dict:
    from ensemble_deid.deid import read_manifest

    return read_manifest(Path(path))


if __name__ == "__main__":
    main()
