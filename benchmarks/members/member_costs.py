"""Each member of a fitted bundle timed alone (issue 36): the inference costs
``cost_selection.py --costs`` selects with.

The costs the cache records are the prediction times of the runs that made
the parts, by the code of their day (the published MEDDOCAN parts: wall
seconds, under cv's load). A selection for today's code needs today's costs:
this script loads a bundle with the safe loader (``Deidentifier.load``),
and times every member's ``predict_tags`` on the same notes, one member at a
time, each with the bundle's shared feature caches emptied first, so that a
member pays for its own features as it would alone (a bundle of several
linear members computes them once: its cost is below the sum). CPU seconds
of this process (torch held to one thread, as ``deidentify`` runs it), the
median of ``--rounds`` rounds, per million tokens.

    python benchmarks/members/member_costs.py --model models/meddocan-recall-best \\
        --out benchmarks/results/member-costs-meddocan.json
    python benchmarks/ensembles/cost_selection.py --costs benchmarks/results/member-costs-meddocan.json

Notes: MEDDOCAN dev (``--notes``, i2b2 XML; the tokens are the corpus
reader's). MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo
A, Rodríguez H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN
2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN, MEDDOCAN_CITATION, RESULTS, load1, machine_description, progress, repeat, write_json, write_markdown  # noqa: E402

PER_TOKENS = 1_000_000


def time_members(model, docs, rounds: int) -> dict[str, dict]:
    """{member label: {cpu_s, wall_s (medians), cost (CPU s per million tokens)}}."""
    tokens = sum(len(d.tokens) for d in docs)

    def alone(tagger):
        def run():
            model.clear_shared()  # alone: its features are not there yet
            getattr(tagger, "predict_tags", tagger.predict)(docs)
        return run

    out = {}
    for label, tagger in model.members.items():
        timed = repeat(alone(tagger), rounds)
        out[label] = {"cpu_s": round(timed["cpu_median_s"], 3), "wall_s": round(timed["median_s"], 3),
                      "cost": round(PER_TOKENS * timed["cpu_median_s"] / tokens, 1)}
        progress(f"{label}: {out[label]['cost']} CPU s per million tokens")
    model.clear_shared()
    return out


def markdown(result: dict) -> str:
    load = f"{result['load_before']}-{result['load_after']}"
    lines = ["| member | CPU s per million tokens | CPU s, wall s (medians) | load (1 min) over the run |",
             "|---|---:|---:|---:|"]
    for label, row in sorted(result["members"].items(), key=lambda kv: -kv[1]["cost"]):
        lines.append(f"| {label} | {row['cost']:,.1f} | {row['cpu_s']:.2f}, {row['wall_s']:.2f} | {load} |")
    total = sum(r["cost"] for r in result["members"].values())
    return ("\n".join(lines) + f"\n\nEach member of `{result['bundle']}` alone (shared features emptied before "
            f"each), {result['documents']} notes, {result['tokens']:,} tokens, median of {result['rounds']} "
            f"round(s); sum {total:,.1f}; {result['machine'].get('cpus')} cores, {result['when']}. Written by "
            f"`benchmarks/members/member_costs.py`.\n\n{result['citation']}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="a bundle written by 'fit'")
    ap.add_argument("--notes", type=Path, default=MEDDOCAN / "dev" / "xml", help="a folder of i2b2 XML notes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "member-costs-meddocan.json",
                    help="JSON written: {member label: cost}, what cost_selection.py --costs reads; "
                         "the details beside it (-detail.json) and a table (.md)")
    args = ap.parse_args(argv)
    import torch

    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.deid import Deidentifier

    torch.set_num_threads(1)
    docs = load_directory(args.notes)
    model = Deidentifier.load(args.model)
    before = load1()
    members = time_members(model, docs, args.rounds)
    result = {"bundle": args.model.name, "documents": len(docs), "tokens": sum(len(d.tokens) for d in docs),
              "rounds": args.rounds, "members": members, "load_before": before, "load_after": load1(),
              "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine_description(),
              "citation": MEDDOCAN_CITATION}
    write_json(args.out, {label: row["cost"] for label, row in members.items()})
    write_json(args.out.with_name(args.out.stem + "-detail.json"), result)
    write_markdown(args.out.with_suffix(".md"), markdown(result))
    print(json.dumps({label: row["cost"] for label, row in members.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
