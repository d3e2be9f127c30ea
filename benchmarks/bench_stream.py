"""A long stream of small synthetic notes through ``deidentify``: is memory
flat? The folder holds ``--notes`` plain-text notes (a pool of synthetic
2014-style notes, ``corpus/synth``, written again under distinct ids); one
``FolderDeidentifier`` run tags them all, batch after batch, and the
process's resident memory is sampled after every batch. Reported: the peak
while the first ``--window`` notes are tagged against the peak while the
last ``--window`` are (flat: within 10%), and tokens/s.

    python benchmarks/bench_stream.py --model MODEL --notes 200000

Results: benchmarks/results/stream.json (and .md). No note text is printed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, machine_description, progress, write_json, write_markdown  # noqa: E402


def write_stream(folder: Path, notes: int, pool: int, seed: int) -> None:
    from ensemble_deid.corpus.synth.generate import generate_corpus

    texts = [d.text for d in generate_corpus("i2b2-2014", pool, seed, "test", None)]
    folder.mkdir(parents=True)
    for i in range(notes):
        (folder / f"note-{i:07d}.txt").write_text(texts[i % pool], encoding="utf-8")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a bundle written by 'fit'")
    ap.add_argument("--notes", type=int, default=200_000)
    ap.add_argument("--window", type=int, default=10_000, help="notes at the start and at the end compared")
    ap.add_argument("--pool", type=int, default=500, help="distinct synthetic notes the stream cycles through")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=None, help="where the notes and outputs go (default: a temp folder)")
    ap.add_argument("--out", type=Path, default=RESULTS / "stream.json")
    args = ap.parse_args(argv)
    if args.notes < 2 * args.window:
        sys.exit("bench_stream: --notes must be at least twice --window")
    import psutil

    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.batch import FolderDeidentifier

    work = Path(tempfile.mkdtemp(prefix="bench-stream-", dir=args.workdir))
    try:
        progress(f"writing {args.notes:,} notes ...")
        write_stream(work / "notes", args.notes, args.pool, args.seed)
        model = Deidentifier.load(args.model)
        me = psutil.Process()
        samples: list[tuple[int, int]] = []  # (notes done, resident bytes)
        done = 0

        def sample(n: int) -> None:
            nonlocal done
            done += n
            samples.append((done, me.memory_info().rss))
            if done % 10_000 < n:
                progress(f"{done:,} notes, {samples[-1][1] / 2**20:.0f} MB resident")

        t0 = time.perf_counter()
        run = FolderDeidentifier(model, "tag", ("xml",), batch_size=args.batch_size).run(work / "notes", work / "out",
                                                                                          progress=sample)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first = max(rss for n, rss in samples if 0 < n <= args.window)
    last = max(rss for n, rss in samples if n > args.notes - args.window)
    result = {
        "benchmark": "stream", "notes": args.notes, "window": args.window, "pool": args.pool,
        "batch_size": args.batch_size, "bundle": [m["label"] for m in model.manifest["members"]],
        "method": (model.manifest.get("method") or {}).get("name"), "tokens": run.tokens,
        "tagging_wall_s": round(run.seconds, 1), "tokens_per_s": round(run.tokens_per_second),
        "total_wall_s": round(wall, 1),
        "peak_rss_first_window_mb": round(first / 2**20, 1), "peak_rss_last_window_mb": round(last / 2**20, 1),
        "last_over_first": round(last / first, 4), "flat_within_10_percent": abs(last / first - 1) <= 0.10,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_description(), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json(args.out, result)
    table = ("| notes | tokens | tokens/s | peak RSS, first {w:,} notes | peak RSS, last {w:,} notes | last / first |\n"
             "|---:|---:|---:|---:|---:|---:|\n"
             "| {notes:,} | {tokens:,} | {tps:,} | {a} MB | {b} MB | {r:.3f} |\n").format(
        w=args.window, notes=args.notes, tokens=run.tokens, tps=result["tokens_per_s"],
        a=result["peak_rss_first_window_mb"], b=result["peak_rss_last_window_mb"], r=result["last_over_first"])
    write_markdown(args.out.with_suffix(".md"), table)
    print(f"{args.notes:,} notes ({run.tokens:,} tokens) through deidentify in {run.seconds:.0f} s = "
          f"{result['tokens_per_s']:,} tokens/s; peak resident memory {result['peak_rss_first_window_mb']} MB over "
          f"the first {args.window:,} notes, {result['peak_rss_last_window_mb']} MB over the last "
          f"(x{result['last_over_first']}); load average {os.getloadavg()[0]:.1f}")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
