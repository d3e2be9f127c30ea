"""Cost in selection on MEDDOCAN (issue 36): pruned voting chosen within an
inference-cost budget, against the best pruned voting chosen without one.

Reads the 12 members' published out-of-fold and dev predictions and the
prediction times their parts recorded (cached_predictions/meddocan: nothing
is trained or timed here). A member's cost is its recorded prediction
seconds over its predicted tokens (``experiment.cost``: CPU seconds per
million tokens; the published parts recorded wall seconds, each cv job
limited to cores/jobs threads). For each objective:

- *best*: ``prune``'s choice without a budget (greedy elimination [KIM20],
  chosen by the objective on the training out-of-fold predictions);
- *budgeted*: ``prune --budget B``'s choice for B = the best's cost / 5 (the
  issue's ">= 5x cheaper") and a few larger budgets: every member subset
  whose summed cost fits B scored at every threshold on the training
  out-of-fold predictions, the best kept.

Every choice is made on train (CV out-of-fold predictions) and then scored
on dev, which never chooses anything. The Pareto front of (training F1,
cost) over all 4,095 subsets and their thresholds is written with each front
point's dev F1 beside it (reported, not used), and drawn.

    nice python benchmarks/ensembles/cost_selection.py
    python benchmarks/ensembles/cost_selection.py --tables     # rewrite the .md files from the JSON
    nice python benchmarks/ensembles/cost_selection.py --costs measured.json   # costs measured here instead

``--costs FILE`` (JSON, {member label: CPU seconds per million tokens}, e.g.
each member of the fitted bundles timed alone on the dev notes) replaces the
recorded costs of the members it names (the others keep theirs) and makes
the same selections with them, written to cost-meddocan-measured.json and
.md (no front, no plot): how the choice moves when the costs are this
machine's.

Writes benchmarks/results/cost-meddocan.json, cost-meddocan.md (the
selections), cost-meddocan-members.md, cost-meddocan-front.md and
docs/img/cost-front-meddocan.png; ``python benchmarks/sync_docs.py`` copies
the tables into docs/benchmarks.md. The costs are the recorded ones: the
wall-clock ratio of applying the bundles is not measured here.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. Automatic De-identification of
Medical Texts in Spanish: the MEDDOCAN Track, Corpus, Guidelines, Methods and
Evaluation of Results. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups

from common import MEDDOCAN, MEDDOCAN_CITATION, MEDDOCAN_PUBLISHED_MEMBERS, MEDDOCAN_PUBLISHED, RESULTS, ROOT, criterion_scores, machine_description, progress, write_json, write_markdown  # noqa: E402

PUBLISHED = MEDDOCAN_PUBLISHED
MEMBERS = list(MEDDOCAN_PUBLISHED_MEMBERS)
RECALL = "binary-token:recall>=0.99"
OBJECTIVES = {"f1": "strict", RECALL: "binary-token"}
RATIO = 5.0  # the budget is the best's cost over this
EXTRA_BUDGETS = (100.0, 150.0, 200.0)
F1_WITHIN_PT, RECALL_WITHIN_PT = 0.2, 0.3
STEM = RESULTS / "cost-meddocan"
PLOT = ROOT / "docs" / "img" / "cost-front-meddocan.png"


def load():
    """MEDDOCAN train and dev as a corpus, and the members' runs (with their costs)."""
    os.environ["ENSEMBLE_DEID_PUBLISHED"] = str(PUBLISHED)
    from types import SimpleNamespace

    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.ensemble.caching import resolve_members
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    train = load_directory(MEDDOCAN / "train" / "xml")
    dev = load_directory(MEDDOCAN / "dev" / "xml")
    engine = CrossValidation(train, {"test": dev}, PredictionCache(tempfile.mkdtemp(prefix="edeid-cost-")), k=10, seed=0)
    specs = [TaggerSpec.parse(s) for s in MEMBERS]
    if engine.pending(specs):
        raise SystemExit(f"cost_selection: member parts are missing from {PUBLISHED}")
    runs = resolve_members(engine, specs, [], [s.label for s in specs], progress=False)
    return SimpleNamespace(name="meddocan", train=train, test=dev), runs


def dev_scores(dev, preds) -> dict:
    return {criterion: {"precision": round(s["precision"], 4), "recall": round(s["recall"], 4),
                        "f1": round(s["f1"], 4), "recall_exact": s["recall"], "f1_exact": s["f1"]}
            for criterion, s in criterion_scores(dev, [preds[d.id].spans(d) for d in dev]).items()}


def selection(corpus, runs, objective: str, budget: float | None) -> dict:
    from ensemble_deid.ensemble.run import prune_members

    t0 = time.perf_counter()
    done = prune_members(corpus, runs, None, objective, None, budget)
    seconds = time.perf_counter() - t0
    s = done.search
    cost = sum(runs[n].cost for n in s.subset)
    return {"objective": objective, "budget": budget, "threshold": s.threshold, "subset": list(s.subset),
            "cost": round(cost, 1), "train_score": round(s.score, 4), "target_reached": s.reached,
            "dev": dev_scores(corpus.test, done.test_predictions), "seconds": round(seconds, 1),
            "evaluations": s.evaluations}


def front(corpus, runs) -> tuple[list[dict], object]:
    """The F1 Pareto front over every (threshold, subset) on train, each point scored on dev."""
    from ensemble_deid.ensemble import build_candidates, vote_select
    from ensemble_deid.ensemble.budget import pareto_front
    from ensemble_deid.ensemble.run import cost_points

    names = tuple(runs)
    table = build_candidates([runs[n].oof for n in names], names, corpus.train)
    rank = table.member_rank()
    t0 = time.perf_counter()
    points = cost_points(table, rank, {n: runs[n].cost for n in names})
    seconds = time.perf_counter() - t0
    dev_table = build_candidates([runs[n].test for n in names], names, corpus.test)
    rows = []
    for p in pareto_front(points):
        chosen = vote_select(dev_table, p.threshold, rank, [names.index(n) for n in p.subset])
        preds = {q.doc_id: q for q in dev_table.to_predictions(chosen)}
        rows.append({"threshold": p.threshold, "subset": list(p.subset), "cost": round(p.cost, 1),
                     "train_f1": round(p.score, 4), "dev": dev_scores(corpus.test, preds)})
    return rows, (points, seconds)


def run(args) -> dict:
    progress("cost_selection: loading MEDDOCAN and the 12 published members")
    corpus, runs = load()
    measured = {}
    if args.costs is not None:
        # {member: cost}; a results file's own "provenance" record is not a member
        measured = {k: v for k, v in json.loads(args.costs.read_text()).items() if k != "provenance"}
        unknown = sorted(set(measured) - set(runs))
        if unknown:
            raise SystemExit(f"cost_selection: {args.costs} names no member {', '.join(unknown)}")
        for name, cost in measured.items():
            runs[name].cost = float(cost)
    from ensemble_deid.ensemble.candidates import build_candidates

    names = tuple(runs)
    oof_f1 = build_candidates([runs[n].oof for n in names], names, corpus.train).member_f1()
    members = [{"member": n, "cost": round(runs[n].cost, 1), "cv_f1": round(float(oof_f1[i]), 4),
                "cost_measured_here": n in measured,
                "parts": len(runs[n].records), "tokens": sum(r.get("tokens", 0) for r in runs[n].records)}
               for i, n in enumerate(names)]
    rows = []
    for objective, criterion in OBJECTIVES.items():
        progress(f"cost_selection: {objective}: the best pruned voting (no budget)")
        best = selection(corpus, runs, objective, None)
        best["kind"] = "best"
        rows.append(best)
        budgets = [round(best["cost"] / RATIO, 1)] + ([b for b in EXTRA_BUDGETS if b < best["cost"]]
                                                     if objective == "f1" else [])
        for budget in budgets:
            progress(f"cost_selection: {objective}: budget {budget:g}")
            row = selection(corpus, runs, objective, budget)
            row["kind"] = "budget"
            rows.append(row)
    for row in rows:
        best = next(r for r in rows if r["objective"] == row["objective"] and r["kind"] == "best")
        criterion = OBJECTIVES[row["objective"]]
        row["cost_ratio"] = round(best["cost"] / row["cost"], 2)
        row["delta_f1_pt"] = round(100 * (row["dev"]["strict"]["f1_exact"] - best["dev"]["strict"]["f1_exact"]), 2)
        row["delta_recall_pt"] = round(100 * (row["dev"][criterion]["recall_exact"]
                                              - best["dev"][criterion]["recall_exact"]), 2)
        limit = F1_WITHIN_PT if row["objective"] == "f1" else RECALL_WITHIN_PT
        delta = row["delta_f1_pt"] if row["objective"] == "f1" else row["delta_recall_pt"]
        row["within"] = delta >= -limit
    budget_row = next(r for r in rows if r["objective"] == "f1" and r["kind"] == "budget")
    front_rows, points, front_seconds = [], [], None
    if not measured:  # the front and its plot are of the recorded costs only
        progress("cost_selection: the Pareto front of every (threshold, subset)")
        front_rows, (points, front_seconds) = front(corpus, runs)
        chosen = next(r for r in rows if r["objective"] == "f1" and r["kind"] == "best")
        plot(points, chosen, budget_row["budget"])
    affordable = [r for r in front_rows if r["cost"] <= budget_row["budget"]]
    targets = {
        f"f1_within_{F1_WITHIN_PT}pt_at_{RATIO:g}x": budget_row["within"] and budget_row["cost_ratio"] >= RATIO,
        f"recall_within_{RECALL_WITHIN_PT}pt_at_{RATIO:g}x": any(
            r["within"] and r["cost_ratio"] >= RATIO for r in rows if r["objective"] == RECALL and r["kind"] == "budget"),
        "best_dev_f1_of_any_front_point_within_the_budget": max((r["dev"]["strict"]["f1"] for r in affordable),
                                                                default=None),
    }
    source = ("published part records (cached_predictions/meddocan): wall seconds of each "
              "part's prediction, each cv job limited to cores/jobs threads (upper bounds where "
              "jobs shared cores)")
    if measured:
        source = (f"measured here ({args.costs.name}: {_members(measured)}); the others: {source}")
    return {"corpus": "meddocan (train: 10-fold CV out-of-fold; dev: scored only)", "citation": MEDDOCAN_CITATION,
            "cost_unit": "CPU seconds per million tokens (recorded prediction seconds / predicted tokens)",
            "cost_source": source,
            "members": members, "selections": rows, "front": front_rows, "front_points": len(points),
            "front_seconds": None if front_seconds is None else round(front_seconds, 1), "targets": targets,
            "plot": None if measured else str(PLOT.relative_to(ROOT)),
            "machine": machine_description()}


def plot(points, chosen_row, budget: float) -> None:
    from ensemble_deid.ensemble.budget import pareto_front
    from ensemble_deid.studies.plots import cost_front

    chosen = next(p for p in points if p.threshold == chosen_row["threshold"] and list(p.subset) == chosen_row["subset"])
    cost_front(points, pareto_front(points), chosen, PLOT, "strict F1", budget,
               title="MEDDOCAN: pruned voting, strict F1 (train out-of-fold) against inference cost")


def _members(subset) -> str:
    return ", ".join(m.split(":")[0] for m in subset)  # without parameters: one spec per tagger here


def tables(result: dict, stem: Path = STEM) -> None:
    sel = ["| objective | budget | t | members kept | cost | cost ratio | dev P | dev R | dev F1 | Δ F1 pt "
           "| dev bin-token R | Δ R pt | within |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["selections"]:
        s, b = r["dev"]["strict"], r["dev"]["binary-token"]
        sel.append(f"| {r['objective']} | {'none' if r['budget'] is None else format(r['budget'], 'g')} "
                   f"| {r['threshold']} | {_members(r['subset'])} | {r['cost']:.1f} | {r['cost_ratio']:.2f}x "
                   f"| {s['precision']:.4f} | {s['recall']:.4f} | {s['f1']:.4f} | {r['delta_f1_pt']:+.2f} "
                   f"| {b['recall']:.4f} | {r['delta_recall_pt']:+.2f} | {'yes' if r['within'] else 'no'} |")
    t = result["targets"]
    sel += ["", "Cost: CPU seconds per million tokens, summed over the kept members (recorded prediction times "
            f"of the published parts{'' if result['front'] else ', or measured here: see below'}). Every choice is made by the objective on the training out-of-fold "
            "predictions; dev only scores it. Δ: against the same objective's best (no budget); within: "
            f"Δ F1 >= -{F1_WITHIN_PT} pt (f1) or Δ recall >= -{RECALL_WITHIN_PT} pt (recall objective).",
            f"Targets (cost ratio >= {RATIO:g}x): F1 within {F1_WITHIN_PT} pt: "
            f"**{'met' if t[f'f1_within_{F1_WITHIN_PT}pt_at_{RATIO:g}x'] else 'not met'}**; recall within "
            f"{RECALL_WITHIN_PT} pt: **{'met' if t[f'recall_within_{RECALL_WITHIN_PT}pt_at_{RATIO:g}x'] else 'not met'}**. "
            + (f"The best dev F1 of any front point within the budget is {t['best_dev_f1_of_any_front_point_within_the_budget']} "
             "(read off dev, so not a selection: it shows whether any affordable subset could have done it)."
             if result["front"] else f"Costs: {result['cost_source']}."),
            "", MEDDOCAN_CITATION]
    write_markdown(stem.with_suffix(".md"), "\n".join(sel) + "\n")
    mem = ["| member | CV F1 (train out-of-fold) | cost (CPU s / M tokens) | parts | tokens timed |",
           "|---|---:|---:|---:|---:|"]
    for m in sorted(result["members"], key=lambda m: m["cost"]):
        mem.append(f"| {_members([m['member']])} | {m['cv_f1']:.4f} | {m['cost']:.1f} | {m['parts']} | {m['tokens']:,} |")
    mem += ["", f"Cost source: {result['cost_source']}.", "", MEDDOCAN_CITATION]
    write_markdown(stem.with_name(stem.name + "-members.md"), "\n".join(mem) + "\n")
    if not result["front"]:
        return
    fr = ["| cost | t | kept | members kept | train F1 | dev F1 |", "|---:|---:|---:|---|---:|---:|"]
    for r in result["front"]:
        fr.append(f"| {r['cost']:.1f} | {r['threshold']} | {len(r['subset'])} | {_members(r['subset'])} "
                  f"| {r['train_f1']:.4f} | {r['dev']['strict']['f1']:.4f} |")
    fr += ["", f"The Pareto front of (strict F1 on the training out-of-fold predictions, cost) over "
           f"{result['front_points']:,} (threshold, subset) points, computed in {result['front_seconds']} s; "
           "dev F1 reported beside each point, never used to choose. "
           f"Plot: {result['plot']}.", "", MEDDOCAN_CITATION]
    write_markdown(stem.with_name(stem.name + "-front.md"), "\n".join(fr) + "\n")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", action="store_true", help="rewrite the .md files from the JSON only")
    ap.add_argument("--costs", type=Path, metavar="FILE", help="JSON {member label: CPU s per million tokens} "
                    "measured here: replaces those members' recorded costs (results to cost-meddocan-measured.*)")
    args = ap.parse_args(argv)
    stem = STEM if args.costs is None else STEM.with_name(STEM.name + "-measured")
    if args.tables:
        result = json.loads(stem.with_suffix(".json").read_text())
    else:
        result = run(args)
        write_json(stem.with_suffix(".json"), result)
    tables(result, stem)
    print(stem.with_suffix(".md").read_text())
    return result


if __name__ == "__main__":
    main()
