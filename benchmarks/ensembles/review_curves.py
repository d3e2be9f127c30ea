"""Review routing on MEDDOCAN (issue 49): the risk-ranked review queue
against two baselines, for each meta-learner, train -> dev.

Reads the 12 members' published out-of-fold and dev predictions
(cached_predictions/meddocan: nothing is trained but the meta-learners).
Per method: ``GridSearch`` chooses it on train (the objective given), its own
out-of-fold outputs over train (``review_risk.out_of_fold_outputs``, the
members' 10 folds) give the review items, the risk model and the review
budget (``recall>=R`` chosen on the held-out risks); fitted on all of train,
it tags dev, whose items are ranked by the train risk model and reviewed by
a simulated reviewer answering from gold. Dev is only scored, never used to
choose. Curves: binary-token recall and precision after review against the
share of dev tokens in the reviewed items and items per note, for the risk
ranking, random review (the same items in random order, 5 seeds averaged)
and members' disagreements only (items some member tagged, most votes first;
no lexical items).

    nice python benchmarks/ensembles/review_curves.py                       # every method
    nice python benchmarks/ensembles/review_curves.py --methods voting-pruned
    python benchmarks/ensembles/review_curves.py --tables                   # rewrite .md and plots from the JSON

Resumable: the JSON is rewritten after every method and methods already there
are skipped. The stacked BiLSTM-CRF takes ``--lstm-folds`` folds (one fit
takes 5 to 27 minutes on two shared cores).

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups

from common import (MEDDOCAN, MEDDOCAN_PUBLISHED, MEDDOCAN_PUBLISHED_MEMBERS, RESULTS, ROOT,  # noqa: E402
                    machine_description, progress, write_json, write_markdown)

STEM = RESULTS / "review-curves-meddocan"
IMG = ROOT / "docs" / "img"
METHODS = ["voting-pruned", "stacked-svm", "stacked-lstm"]
BUDGET = "recall>=0.998"
SEEDS = 5
TARGETS = (0.995, 0.996, 0.997, 0.998, 0.999)  # other budgets, each chosen on train the same way


def load():
    os.environ["ENSEMBLE_DEID_PUBLISHED"] = str(MEDDOCAN_PUBLISHED)
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    train = load_directory(MEDDOCAN / "train" / "xml")
    dev = load_directory(MEDDOCAN / "dev" / "xml")
    engine = CrossValidation(train, {"test": dev}, PredictionCache(Path(tempfile.mkdtemp(prefix="edeid-review-"))),
                             k=10, seed=0)
    specs = [TaggerSpec.parse(s) for s in MEDDOCAN_PUBLISHED_MEMBERS]
    if engine.pending(specs):
        raise SystemExit(f"review_curves: member parts missing from {MEDDOCAN_PUBLISHED}")
    runs = engine.collect(specs)
    return train, dev, engine.folds, {n: runs[n].oof for n in runs}, {n: runs[n].targets["test"] for n in runs}


def _points(curve, keep=200):
    from ensemble_deid.ensemble.review_risk import thin

    return [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in p.to_dict().items()} for p in thin(curve, keep)]


def at_share(curve, share):
    """Recall of a curve once ``share`` of the tokens is reviewed (the last point within it)."""
    inside = [p for p in curve if p.tokens_share <= share]
    return inside[-1].recall if inside else curve[0].recall


def run_method(method, objective, train, dev, folds, oof, devm, lstm_folds, budget_text):
    from ensemble_deid.ensemble import GridSearch, make_method
    from ensemble_deid.ensemble.review_risk import (GoldCoverage, document_views, fit_review, out_of_fold_outputs,
                                                    parse_budget, per_note_order, predict_for_review, review_curve)
    from ensemble_deid.ensemble.run import oof_estimator
    from ensemble_deid.ensemble.selection import make_folds
    from ensemble_deid.deid.model import needed_members

    k = lstm_folds if method == "stacked-lstm" else folds.k
    method_folds = folds if k == folds.k else make_folds(train, k, folds.seed)
    budget = parse_budget(budget_text)
    t0 = time.perf_counter()
    progress(f"{method}: chosen by {k}-fold CV on train ({objective})")
    params = {"threads": 1} if method == "stacked-lstm" else {}
    search = GridSearch(make_method(method, **params), folds=k, seed=0, objective=objective, fixed=tuple(params))
    search.fit(oof, train)
    model = search.best_estimator_
    names = tuple(oof)
    keep = needed_members(model, names)
    t1 = time.perf_counter()
    progress(f"  chosen {search.best_params_}; review members: {len(keep)} of {len(names)}; "
             f"out-of-fold outputs ({k} folds)")
    est = oof_estimator(search, search.best_params_)
    outputs, gaps = out_of_fold_outputs(est, oof, train, method_folds)
    t2 = time.perf_counter()
    review, items, held, gold = fit_review(train, outputs, gaps, {n: oof[n] for n in keep}, method_folds, budget)
    t3 = time.perf_counter()
    cv = review.cv
    progress(f"  train (held-out risks): {len(items)} items, {cv['useful_items']} useful; recall "
             f"{cv['recall_before']:.4f} -> {cv['chosen']['recall']:.4f} with {cv['chosen']['tokens_share']:.4f} "
             f"of tokens, {cv['chosen']['items_per_note']:.2f} items/note; threshold {review.threshold:.4f} "
             f"(reached: {review.reached})")
    # dev: the ensemble fitted on all of train, the items ranked by the train risk model
    preds, dev_gaps = predict_for_review(model, devm, names, dev)
    views = document_views(dev, preds, [devm[n] for n in keep], dev_gaps)
    dgold = GoldCoverage(dev, preds)
    ditems = review.items(views, dgold)
    risk = review.risk.risk(ditems)
    t4 = time.perf_counter()
    n = len(dev)
    order = np.argsort(-risk, kind="stable")
    curve = review_curve(ditems, dgold, order, risk[order], n)
    queued = review.select(ditems, risk)
    chosen = review_curve(ditems, dgold, order[:len(queued)], None, n)[-1] if len(queued) else curve[0]
    assert set(order[:len(queued)].tolist()) == set(queued.tolist())
    note_order, note_rank = per_note_order(ditems, risk)
    note_curve = review_curve(ditems, dgold, note_order, note_rank.astype(np.float64), n)
    # baselines
    randoms = []
    for seed in range(SEEDS):
        perm = np.random.default_rng(seed).permutation(len(ditems))
        randoms.append(review_curve(ditems, dgold, perm, None, n))
    proposed = np.flatnonzero(ditems.features[:, 0] > 0)
    share = ditems.features[proposed, 1]
    dis_order = proposed[np.argsort(-share, kind="stable")]
    disagreement = review_curve(ditems, dgold, dis_order, share[np.argsort(-share, kind="stable")], n)
    # the same choice for other recall targets: each threshold from the full held-out train curve
    from ensemble_deid.ensemble.review_risk import choose_threshold

    t_order = np.argsort(-held, kind="stable")
    train_curve = review_curve(items, gold, t_order, held[t_order], len(train))
    targets = []
    for target in TARGETS:
        threshold, reached = choose_threshold(train_curve, target)
        rows_ = np.flatnonzero(risk >= threshold)
        at = review_curve(ditems, dgold, order[:len(rows_)], None, n)[-1] if len(rows_) else curve[0]
        targets.append({"target": target, "threshold": threshold, "reached": reached,
                        "train": next((p.to_dict() for p in train_curve if p.recall >= target), None),
                        "dev": at.to_dict()})
    kinds = {kd: int(sum(1 for i in queued.tolist() if ditems.kind[i] == kd)) for kd in sorted(set(ditems.kind))}
    row = {
        "method": method, "objective": objective, "folds": k, "chosen": {kk: v for kk, v in search.best_params_.items()},
        "review_members": list(keep), "budget": str(budget), "targets": targets,
        "seconds": {"choose": round(t1 - t0, 1), "out_of_fold": round(t2 - t1, 1), "risk_and_budget": round(t3 - t2, 1),
                    "dev": round(t4 - t3, 1)},
        "train": {"items": len(items), "useful_items": cv["useful_items"], "threshold": review.threshold,
                  "reached": review.reached, "recall_before": cv["recall_before"], "chosen": cv["chosen"],
                  "curve": [p.to_dict() for p in review.curve]},
        "dev": {"notes": n, "tokens": dgold.n_tokens, "gold_keys": dgold.n_gold, "items": len(ditems),
                "useful_items": int(ditems.useful.sum()), "queued": int(len(queued)), "queued_kinds": kinds,
                "recall_before": curve[0].recall, "precision_before": curve[0].precision,
                "after_review": chosen.to_dict(),
                "ceiling_recall": curve[-1].recall, "ceiling_tokens_share": curve[-1].tokens_share,
                "risk_curve": _points(curve), "note_curve": _points(note_curve, 400),
                "random_curve": _points(_mean_curve(randoms)), "disagreement_curve": _points(disagreement),
                "recall_at_share": {f"{s:g}": {"risk": at_share(curve, s), "random": at_share(_mean_curve(randoms), s),
                                               "disagreement": at_share(disagreement, s)}
                                    for s in (0.01, 0.02, 0.05)}},
    }
    a = row["dev"]["after_review"]
    progress(f"  dev: recall {curve[0].recall:.4f} -> {a['recall']:.4f} (precision {curve[0].precision:.4f} -> "
             f"{a['precision']:.4f}) reviewing {len(queued)} items ({a['items_per_note']:.2f}/note, "
             f"{a['tokens_share']:.4f} of tokens); all {len(ditems)} items: recall {curve[-1].recall:.4f}")
    return row


def _mean_curve(curves):
    """Random review averaged over seeds, point by point (every curve has one point per item)."""
    from ensemble_deid.ensemble.review_risk import CurvePoint

    out = []
    for pts in zip(*curves):
        out.append(CurvePoint(float(pts[0].items), pts[0].items, pts[0].items_per_note, pts[0].tokens_share * 0 +
                              float(np.mean([p.tokens_share for p in pts])), float(np.mean([p.recall for p in pts])),
                              float(np.mean([p.precision for p in pts]))))
    return out


def markdown(result: dict) -> str:
    lines = [f"Budget `{result['budget']}` chosen by CV on MEDDOCAN train (risk model and threshold on the "
             "held-out items of the ensemble's own out-of-fold outputs); dev reviewed by a simulated reviewer "
             "(gold spans the item overlaps masked whole).", "",
             "| method | objective | binary-token R before | R after review (dev) | P before | P after | "
             "dev tokens in queue | items per note | items queued | target met on train (CV) | "
             "R at 2% of tokens: risk / random / disagreement |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in result["rows"]:
        d, a = r["dev"], r["dev"]["after_review"]
        s = d["recall_at_share"]["0.02"]
        lines.append(f"| {r['method']} | `{r['objective']}` | {d['recall_before']:.4f} | {a['recall']:.4f} | "
                     f"{d['precision_before']:.4f} | {a['precision']:.4f} | {a['tokens_share'] * 100:.2f}% | "
                     f"{a['items_per_note']:.1f} | {d['queued']} | "
                     f"{'yes' if r['train']['reached'] else 'no'} (train {r['train']['chosen']['recall']:.4f}) | "
                     f"{s['risk']:.4f} / {s['random']:.4f} / {s['disagreement']:.4f} |")
    lines += ["", "Ceiling (every item reviewed): " + "; ".join(
        f"{r['method']} {r['dev']['ceiling_recall']:.4f} with {r['dev']['ceiling_tokens_share'] * 100:.1f}% of tokens"
        for r in result["rows"])]
    lines += ["", "| method | budget chosen on train | train tokens reviewed (CV) | dev R after review | "
              "dev tokens in queue | dev items per note |", "|---|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        for t in r.get("targets", []):
            tr = t["train"]
            lines.append(f"| {r['method']} | `recall>={t['target']:g}` | "
                         f"{(tr['tokens_share'] * 100 if tr else float('nan')):.2f}% | {t['dev']['recall']:.4f} | "
                         f"{t['dev']['tokens_share'] * 100:.2f}% | {t['dev']['items_per_note']:.1f} |")
    missing = result.get("not_run")
    if missing:
        lines += ["", f"Not run: {missing}"]
    return "\n".join(lines)


def plots(result: dict) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    rows = result["rows"]
    fig, axes = plt.subplots(2, len(rows), figsize=(5 * len(rows), 8), squeeze=False)
    for c, r in enumerate(rows):
        d = r["dev"]
        for row_i, (x, xlabel) in enumerate((("tokens_share", "share of dev tokens reviewed"),
                                             ("items_per_note", "items reviewed per note"))):
            ax = axes[row_i][c]
            for key, name, style in (("risk_curve", "risk (this work)", "-"), ("random_curve", "random", ":"),
                                     ("disagreement_curve", "disagreements only", "--")):
                pts = d[key]
                ax.plot([p[x] for p in pts], [p["recall"] for p in pts], style, label=name)
            ax.axhline(0.997, color="grey", lw=0.5)
            a = d["after_review"]
            ax.plot([a[x]], [a["recall"]], "o", color="black", label="chosen budget")
            ax.set_ylim(max(0.95, d["recall_before"] - 0.01), 1.0005)
            ax.set_xlim(0, max(0.08 if x == "tokens_share" else 30, a[x] * 1.05))  # the chosen budget in view
            ax.set_xlabel(xlabel)
            ax.set_ylabel("binary-token recall after review")
            ax.set_title(f"{r['method']} ({r['objective']})", fontsize=9)
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("MEDDOCAN dev: recall after a simulated review (risk model and budget chosen on train)")
    fig.tight_layout()
    path = IMG / "review-curves-meddocan.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    out.append(path)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--objective", default="f1")
    ap.add_argument("--budget", default=BUDGET)
    ap.add_argument("--lstm-folds", type=int, default=2)
    ap.add_argument("--tables", action="store_true", help="rewrite the Markdown and the plots from the JSON")
    args = ap.parse_args(argv)
    path = STEM.with_suffix(".json")
    result = json.loads(path.read_text()) if path.exists() else {"rows": []}
    if not args.tables:
        train, dev, folds, oof, devm = load()
        for method in args.methods.split(","):
            if any(r["method"] == method and r["objective"] == args.objective for r in result["rows"]):
                progress(f"{method}: already in {path.name}, skipped")
                continue
            result["rows"].append(run_method(method, args.objective, train, dev, folds, oof, devm, args.lstm_folds,
                                             args.budget))
            result.update(budget=args.budget, machine=machine_description(),
                          command=" ".join(["python", "benchmarks/ensembles/review_curves.py", *(argv or sys.argv[1:])]))
            write_json(path, result)
    order = {m: i for i, m in enumerate(METHODS)}
    result["rows"].sort(key=lambda r: (order.get(r["method"], 99), r["objective"]))
    write_markdown(STEM.with_suffix(".md"), markdown(result))
    for p in plots(result):
        progress(f"wrote {p}")
    print(markdown(result))


if __name__ == "__main__":
    main()
