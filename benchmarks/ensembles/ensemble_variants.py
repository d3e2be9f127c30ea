"""MEDDOCAN figures of the [KIM20] authors' variants beside the project's
defaults (docs/ensembles.md, "The authors' code as variants").

Reads the members' cached 10-fold out-of-fold and test predictions (nothing
is trained: a member missing from the cache is an error), lists the members
best first by out-of-fold strict F1 (the order the authors' code weights and
breaks removal ties by), and for each method and variant: chooses the
hyperparameters by k-fold CV on the out-of-fold predictions (GridSearch),
scores the ensemble's own out-of-fold predictions (the choice refitted on
each fold's complement) and its test predictions (strict micro P/R/F1), and
times fit + predict (wall and CPU seconds, the load before and after); it also counts the test spans a variant adds or
removes against the method's default. Writes benchmarks/results/ensemble-variants.json and
.md (the table docs/ensembles.md shows).

    ENSEMBLE_DEID_HOME=<workspace with MEDDOCAN registered as meddocan> \\
    ENSEMBLE_DEID_CACHE=WS/cached_predictions \\
    .venv/bin/python benchmarks/ensembles/ensemble_variants.py [--corpus meddocan] [--members M] [--folds 10]

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. Automatic de-identification of medical
texts in Spanish: the MEDDOCAN track, corpus, guidelines, methods and
evaluation of results. IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import RESULTS, Clock, load_range, machine_description, progress, shown, write_json, write_markdown

DEFAULT_MEMBERS = "crf,rules:label_map=i2b2-to-meddocan,memm,searn,mira,svm,ogd,struct-svm"

# (method, fixed parameters): the defaults first, then each variant.
CONFIGS = [
    ("voting", {}),
    ("voting", {"overlap": "chain"}),
    ("voting-pruned", {}),
    ("voting-pruned", {"removal_ties": "earliest"}),
    ("voting-pruned", {"overlap": "chain"}),
    ("voting-pruned", {"removal_ties": "earliest", "overlap": "chain"}),
    ("decision-templates", {}),
    ("decision-templates", {"overlap": "chain"}),
    ("decision-templates", {"variant": "authors"}),
    ("decision-templates", {"variant": "authors", "overlap": "chain"}),
]


def load_members(corpus_name: str, members: str, k: int, seed: int):
    """The corpus and its members' cached runs (refusing to compute any)."""
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    ws = Workspace(os.environ.get("ENSEMBLE_DEID_HOME", "."))  # as the ensemble-deid command finds it
    corpus = ws.load(corpus_name)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
    specs = [TaggerSpec.parse(s) for s in members.split(",")]
    missing = engine.pending(specs)
    if missing:
        raise SystemExit(f"{len(missing)} member part(s) are not cached in {ws.cache_dir} "
                         f"(e.g. {missing[0].spec.label} {missing[0].part.name}); run 'ensemble-deid cv' first")
    return corpus, engine.collect(specs), str(ws.cache_dir)


def run(corpus, runs, k: int, seed: int) -> dict:
    from ensemble_deid.ensemble import GridSearch, build_candidates, make_method
    from ensemble_deid.ensemble.selection import cross_val_predict, make_folds
    from ensemble_deid.studies.summary import strict_prf

    names = tuple(runs)
    table = build_candidates([runs[n].oof for n in names], names, corpus.train)
    f1 = dict(zip(names, table.member_f1().tolist()))
    order = sorted(names, key=lambda n: -f1[n])  # best first, as the authors listed them
    oof = {n: runs[n].oof for n in order}
    test = {n: runs[n].targets["test"] for n in order}
    rows = []
    for n in order:
        rows.append({"system": n, "params": None, "cv": [round(x, 4) for x in strict_prf(corpus.train, oof[n])],
                     "test": [round(x, 4) for x in strict_prf(corpus.test, test[n])]})
    fold_assignment = make_folds(corpus.train, k, seed)  # the selection's folds, for the ensembles' own OOF
    default_spans: dict[str, set] = {}
    for method, params in CONFIGS:
        label = method + "".join(f" {key}={value}" for key, value in params.items())
        progress(f"{label}")
        search = GridSearch(make_method(method, **params), folds=k, seed=seed, objective="f1")
        with Clock(children=True) as clock:  # CPU: this process and any workers it waited for
            search.fit(oof, corpus.train)
            preds = {p.doc_id: p for p in search.predict(test, corpus.test)}
        fixed = make_method(method, **{**params, **search.best_params_})
        own_oof = cross_val_predict(fixed, oof, corpus.train, fold_assignment)
        model = search.best_estimator_
        chosen = dict(search.best_params_)
        if hasattr(model, "subset_"):
            chosen.update(threshold=model.threshold_, kept=list(model.subset_))
        if hasattr(model, "search_"):
            chosen["path"] = [name for name, _ in model.search_.paths[model.threshold_].steps]
        # How much the variant changes: test spans (with labels) not in the default's output, and back.
        spans = {(d.id, a.start, a.end, a.label) for d in corpus.test for a in preds[d.id].spans(d)}
        default_spans.setdefault(method, spans)
        rows.append({"system": label, "method": method, "params": params, "chosen": chosen,
                     "cv": [round(x, 4) for x in strict_prf(corpus.train, own_oof)],
                     "test": [round(x, 4) for x in strict_prf(corpus.test, preds)],
                     "test_spans_changed": len(spans ^ default_spans[method]),
                     "fit_predict_s": round(clock.wall, 1), "fit_predict_cpu_s": round(clock.cpu, 1),
                     "load_before": clock.load_before, "load_after": clock.load_after})
    return {"members_best_first": order, "member_oof_f1": {n: round(f1[n], 4) for n in order}, "rows": rows,
            "where_variants_differ": where_variants_differ(corpus, runs, order)}


def where_variants_differ(corpus, runs, order) -> dict:
    """Candidates on which greedy and chain voting differ at each threshold
    (training out-of-fold and test), and the thresholds whose elimination
    path differs between the two removal-tie rules (on the training OOF)."""
    from ensemble_deid.ensemble import build_candidates, pruning_search, vote_select

    train = build_candidates([runs[n].oof for n in order], tuple(order), corpus.train)
    test = build_candidates([runs[n].targets["test"] for n in order], tuple(order), corpus.test)
    rank = train.member_rank()
    overlap = {}
    for name, table in (("train_oof", train), ("test", test)):
        overlap[name] = {"candidates": len(table), "contested": len(table.contested), "differ_by_threshold": {
            t: int((vote_select(table, t, rank) != vote_select(table, t, rank, overlap="chain")).sum())
            for t in range(1, len(order) + 1)}}
    worse, earliest = (pruning_search(train, rank, removal_ties=r) for r in ("worse", "earliest"))
    paths_differ = [t for t in worse.paths if worse.paths[t].steps != earliest.paths[t].steps]
    return {"overlap_greedy_vs_chain": overlap, "removal_ties_paths_differ_at": paths_differ}


def markdown(result: dict) -> str:
    best = max((r for r in result["rows"] if r["params"] is None), key=lambda r: r["cv"][2])
    lines = ["| system | CV F1 (train) | test P | test R | test F1 | vs best member | test spans changed | chosen "
             "| fit + predict wall s | CPU s | load (1 min) |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in result["rows"]:
        if r["params"] is None and r is not best:
            continue
        p, rr, f = r["test"]
        if r["params"] is None:
            lines.append(f"| {r['system']} (best single member) | {r['cv'][2]:.4f} | {p:.4f} | {rr:.4f} | {f:.4f} "
                         "| | | | | | |")
            continue
        chosen = r["chosen"]
        text = ", ".join(f"{k} = {v}" for k, v in chosen.items() if k not in ("kept", "path"))
        if "kept" in chosen:
            text += f"; {len(chosen['kept'])} members" + (
                f" ({', '.join(n for n in result['members_best_first'] if n not in chosen['kept'])} eliminated)"
                if len(chosen["kept"]) < len(result["members_best_first"]) else "")
        changed = "(default)" if not r["params"] else r["test_spans_changed"]
        lines.append(f"| {r['system']} | {r['cv'][2]:.4f} | {p:.4f} | {rr:.4f} | {f:.4f} | {f - best['test'][2]:+.4f} "
                     f"| {changed} | {text} | {r['fit_predict_s']:.1f} | {r['fit_predict_cpu_s']:.1f} "
                     f"| {load_range(r['load_before'], r['load_after'])} |")
    diff = result["where_variants_differ"]
    for name, d in diff["overlap_greedy_vs_chain"].items():
        per_t = ", ".join(f"t = {t}: {n}" for t, n in d["differ_by_threshold"].items())
        lines.append(f"\nVoting, greedy vs chain on {name.replace('_', ' ')} ({d['candidates']:,} candidates, "
                     f"{d['contested']:,} overlapping another): candidates decided differently at {per_t}.")
    at = diff["removal_ties_paths_differ_at"]
    lines.append(f"\nPruning, worse vs earliest removal ties: elimination paths differ at "
                 f"{'thresholds ' + ', '.join(map(str, at)) if at else 'no threshold'}.")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="meddocan")
    ap.add_argument("--members", default=DEFAULT_MEMBERS)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", type=Path, default=RESULTS, help="Where the .json and .md go (default benchmarks/results).")
    args = ap.parse_args(argv)
    corpus, runs, cache = load_members(args.corpus, args.members, args.folds, args.seed)
    progress(f"{len(runs)} members from {cache}")
    result = {"corpus": args.corpus, "folds": args.folds, "seed": args.seed, "members": args.members,
              **run(corpus, runs, args.folds, args.seed), "machine": machine_description()}
    table = markdown(result)
    print(table)
    json_path = write_json(args.out_dir / "ensemble-variants.json", result)
    md_path = write_markdown(args.out_dir / "ensemble-variants.md", table)
    progress(f"wrote {shown(json_path)} and {shown(md_path)}")
    return result


if __name__ == "__main__":
    main()
