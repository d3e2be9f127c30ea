"""Where a bundle's ``deidentify`` time goes, and the ceiling its members'
compiled kernels put on throughput (issue 36).

``ensemble-deid deidentify MODEL NOTES`` runs in a fresh process under
cProfile (``--rounds`` times; the round whose kernels took least is kept, the
floor most favourable to a target) (sequential: one process, torch on one thread, as ``deidentify``
runs it). Its time is split into the bundle's loading (``Deidentifier.load``:
imports, checks, reading the members) and the tagging and writing
(``FolderDeidentifier.run``), and the profile's own time per function is
summed into the compiled kernels the members call (a function's calls
count when they last 0.1 ms or more on average, where the profiler's own
cost per call is under 1% of them; shorter C calls get a row of their own):

- torch's LSTM (``torch.lstm``) and torch's other C operations;
- CRFsuite's tagging: the crf adapter's loop (``crf._tag``) calls the Cython
  ``Tagger.tag``, which cProfile does not see, so that loop's own time is
  CRFsuite's (its Python lines are a loop over notes and chunks);
- Vowpal Wabbit's C++ (``pylibvw``: parsing an example line, predicting;
  as for CRFsuite, pyvw's ``predict``/``learn`` call into C++ that cProfile
  does not see, so their own time is that call's; pyvw's other Python, such
  as building its example objects, is not counted);
- LIBLINEAR / numpy / scipy: numpy and scipy's C functions.

The rest is Python (ensemble-deid's features, encoders, decoders, I/O) and
cProfile's own overhead on it, which the kernels do not carry (their time
is measured inside a call). The ceiling: with every line of Python free
and the cores perfectly split, the tagging cannot take less than
kernels / cores, so its tokens/s cannot exceed tokens * cores / kernels;
end to end, the bundle's loading comes on top (it holds torch's import).

    ENSEMBLE_DEID_HOME=WS python benchmarks/deidentify/deidentify_profile.py --model WS/model-best \\
        --notes ../shared/corpora/meddocan/dev/brat --cores 2 --target 20000
    # writes benchmarks/results/deidentify-profile{.json,.md}

No note text is printed or written (function names and seconds only).
MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A,
Rodríguez H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019,
pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import pstats
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import (MEDDOCAN_CITATION, RESULTS, deidentify_throughput, machine_description, progress,  # noqa: E402
                    timed_child, write_json, write_markdown)

# cProfile around the CLI in a fresh process (its default clock: wall time, so run it on a quiet machine;
# a CPU clock costs several times more per call and inflates the run); the stats go to argv[1].
PROFILED = ("import cProfile, sys\n"
            "from ensemble_deid.cli import main\n"
            "out = sys.argv.pop(1)\n"
            "sys.argv[0] = 'ensemble-deid'\n"
            "prof = cProfile.Profile()\n"
            "try:\n"
            "    prof.runcall(main)\n"
            "except SystemExit as exc:\n"
            "    code = exc.code\n"
            "else:\n"
            "    code = 0\n"
            "prof.dump_stats(out)\n"
            "sys.exit(code)\n")

# (bucket, test on a profile key (file, line, function)); the first that matches names the bucket.
KERNELS = [
    ("torch LSTM (torch.lstm)", lambda f, fn: fn == "<built-in method torch.lstm>"),
    ("torch, other C operations", lambda f, fn: f == "~" and "torch" in fn),
    ("CRFsuite tagging (in crf._tag)", lambda f, fn: f.endswith("adapters/crf.py") and fn == "_tag"),
    ("Vowpal Wabbit C++ (pylibvw)", lambda f, fn: (f == "~" and "pylibvw" in fn)
     or (f.endswith("vowpalwabbit/pyvw.py") and fn in ("predict", "learn"))),
    ("numpy / scipy / LIBLINEAR C", lambda f, fn: f == "~" and re.search(r"numpy|scipy|liblinear", fn) is not None),
]
PYTHON = "Python and profiler overhead (the rest)"
SHORT = "C calls under 0.1 ms each (not counted as kernels)"
# A compiled call counts as kernel time only when it lasts 0.1 ms or more on average: the profiler's own
# cost, about a microsecond per call, is then under 1% of it, so the kernels' sum is a lower bound.
LONG_CALL_S = 1e-4


def bucket_times(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of the profile's own time (tottime) per bucket."""
    out = {name: 0.0 for name, _ in KERNELS}
    out[SHORT] = out[PYTHON] = 0.0
    for (file, _line, fn), (_cc, ncalls, tottime, _ct, _callers) in stats.stats.items():
        name = next((b for b, test in KERNELS if test(file, fn)), PYTHON)
        if name != PYTHON and tottime < LONG_CALL_S * ncalls:
            name = SHORT
        out[name] += tottime
    return out


def cumulative(stats: pstats.Stats, file_suffix: str, fn: str) -> float:
    """A function's cumulative seconds (0 when it never ran)."""
    return sum(v[3] for (f, _l, name), v in stats.stats.items() if f.endswith(file_suffix) and name == fn)


def profile_run(model: Path, notes: Path, out: Path, prof: Path) -> tuple[dict, int]:
    """The timing (``common.timed_child``) and tokens of one profiled ``deidentify``."""
    with tempfile.TemporaryFile("w+") as printed:
        timing = timed_child([sys.executable, "-c", PROFILED, str(prof), "deidentify", str(model), str(notes),
                              "--out", str(out), "--no-progress"], cwd=None, env=None, stdout=printed,
                             stderr=subprocess.STDOUT)
        printed.seek(0)
        text = printed.read()
    if timing["exit_status"]:
        sys.exit(f"deidentify failed (exit {timing['exit_status']}): {text.strip().splitlines()[-1:]}")
    return timing, deidentify_throughput(text)[0]


def summarise(stats: pstats.Stats, tokens: int, cores: int, target: float | None) -> dict:
    buckets = bucket_times(stats)
    kernels = sum(v for k, v in buckets.items() if k not in (PYTHON, SHORT))
    load = cumulative(stats, "ensemble_deid/deid/model.py", "load")
    tagging = cumulative(stats, "ensemble_deid/deid/batch.py", "run")
    ceiling = tokens * cores / kernels if kernels else None
    return {"buckets_s": {k: round(v, 3) for k, v in buckets.items()}, "kernels_s": round(kernels, 3),
            "load_s": round(load, 3), "tagging_and_writing_s": round(tagging, 3),
            "profiled_total_s": round(sum(buckets.values()), 3),
            "floor_tagging_wall_s": round(kernels / cores, 3), "ceiling_tokens_per_s": round(ceiling) if ceiling else None,
            "target_tokens_per_s": target,
            "target_wall_s": round(tokens / target, 3) if target else None,
            # What the target leaves for everything but the kernels: its CPU seconds on these cores, less the kernels'.
            "target_left_s": round(tokens / target * cores - kernels, 3) if target else None}


def markdown(r: dict) -> str:
    total = r["profiled_total_s"]
    lines = ["| part of the run | profiled s | share |", "|---|---:|---:|"]
    for name, s in r["buckets_s"].items():
        lines.append(f"| {name} | {s:.2f} | {100 * s / total:.0f}% |")
    lines.append(f"| **compiled kernels, together** | **{r['kernels_s']:.2f}** | {100 * r['kernels_s'] / total:.0f}% |")
    lines.append(f"| the profiled run: wall, CPU s; load (1 min) before-after | {r['wall_s']:.1f}, {r['cpu_s']:.1f} CPU | "
                 f"load {r['load_before']}-{r['load_after']} |")
    lines += ["", "| figure | value |", "|---|---:|",
              f"| notes, tokens | {r['documents']}, {r['tokens']:,} |",
              f"| bundle loading (Deidentifier.load, torch's import included), profiled | {r['load_s']:.2f} s |",
              f"| tagging and writing (FolderDeidentifier.run), profiled | {r['tagging_and_writing_s']:.2f} s |",
              f"| wall of the profiled run (fresh process) | {r['wall_s']:.1f} s |",
              f"| floor of the tagging on {r['cores']} cores: kernels / {r['cores']} | {r['floor_tagging_wall_s']:.2f} s |",
              f"| ceiling: tokens/s with all Python free, {r['cores']} cores perfectly split | "
              f"{r['ceiling_tokens_per_s']:,} |"]
    if r.get("target_tokens_per_s"):
        lines.append(f"| the target, {r['target_tokens_per_s']:,.0f} tokens/s: the whole tagging in | {r['target_wall_s']:.2f} s |")
        lines.append(f"| what the target leaves on {r['cores']} cores for the rest (Python, I/O), after the kernels | "
                     f"{r['target_left_s']:.2f} CPU s |")
        lines.append(f"| the rest today (Python and profiler overhead, short C calls), profiled | "
                     f"{r['buckets_s'][PYTHON] + r['buckets_s'][SHORT]:.2f} s |")
    note = (f"\n\n`deidentify` of `{r['model']}` ({', '.join(r['members'])}) under cProfile, sequential, "
            f"the round with the least kernel time of {r['rounds']} ({', '.join(f'{k:.2f}' for k in r['kernels_s_per_round'])} s), "
            f"{r['machine'].get('cpus')} cores, load (1 min) {r['load_before']}-{r['load_after']}, {r['when']}. "
            "Kernel seconds are measured inside their calls (cProfile's overhead falls on the Python rows). "
            "Written by `benchmarks/deidentify/deidentify_profile.py`.")
    cite = f"\n\n{MEDDOCAN_CITATION}" if r.get("meddocan") else ""
    return "\n".join(lines) + note + cite + "\n"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a fitted bundle folder")
    ap.add_argument("--notes", type=Path, required=True, help="a folder of notes (.txt / .xml)")
    ap.add_argument("--cores", type=int, default=2, help="cores the ceiling assumes (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="profiled runs; the one whose kernels took least is kept")
    ap.add_argument("--target", type=float, help="a throughput target, tokens/s, shown beside the ceiling")
    ap.add_argument("--out", type=Path, default=RESULTS / "deidentify-profile.json")
    args = ap.parse_args(argv)
    manifest = json.loads((args.model / "manifest.json").read_text())
    rounds = []
    for i in range(max(1, args.rounds)):
        with tempfile.TemporaryDirectory(prefix="deid-profile-") as tmp:
            progress(f"round {i + 1}: deidentify {args.model} under cProfile ...")
            timing, tokens = profile_run(args.model, args.notes, Path(tmp) / "out", Path(tmp) / "run.prof")
            documents = sum(1 for _ in (Path(tmp) / "out" / "text").iterdir())
            rounds.append((summarise(pstats.Stats(str(Path(tmp) / "run.prof")), tokens, args.cores, args.target),
                           timing))
    before, after = rounds[0][1]["load_before"], rounds[-1][1]["load_after"]
    # The round whose kernels took least: the floor most favourable to the target.
    best, timing = min(rounds, key=lambda r: r[0]["kernels_s"])
    wall, cpu = timing["wall_s"], timing["cpu_s"]
    result = {"benchmark": "deidentify-profile", "model": args.model.name,
              "members": [m["label"] for m in manifest["members"]], "documents": documents, "tokens": tokens,
              "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cores": args.cores, "rounds": len(rounds),
              "kernels_s_per_round": [r[0]["kernels_s"] for r in rounds], **best,
              "meddocan": manifest["corpus"]["name"].startswith("meddocan"),
              "load_before": before, "load_after": after, "machine": machine_description(),
              "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_json(args.out, result)
    write_markdown(args.out.with_suffix(".md"), markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
