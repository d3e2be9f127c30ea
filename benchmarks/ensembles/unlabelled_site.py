"""A new site without annotations (issue 50): members trained on a source
corpus, ensembles on the target's notes, with and without the target's labels.

For each pair SOURCE:TARGET (both registered or embedded corpora of the
workspace, the members' parts computed by ``cv --corpus SOURCE --target TARGET``
and, for the reference trained on the target, ``cv --corpus TARGET``), on
TARGET's test split:

- each member trained on SOURCE, and majority vote over them;
- the source-trained ensembles (voting-pruned, decision-templates, stacked-svm),
  each chosen by CV on SOURCE's training set; the one with the best CV F1 is
  "the source-trained ensemble";
- ``dawid-skene``: fitted on SOURCE's out-of-fold predictions (prior_strength
  chosen by CV on SOURCE), re-estimated by EM on the members' predictions on
  TARGET's test notes, without their labels;
- the reference trained on the target's own labels: the same ensembles over
  members cross-validated on TARGET's training set, chosen by CV there.

TARGET's labels are used only to score. "Gap closed" is (adapted - source) /
(target-trained - source) in strict F1. Writes
benchmarks/results/unlabelled-site.{json,md}.

    python benchmarks/ensembles/unlabelled_site.py --workspace WS --pair synthetic-2014:synthetic-2016 \
        --pair synthetic-2016:synthetic-2014 --members crf,memm,searn,mira,svm,ogd,struct-svm,rules
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import RESULTS, best_by_cv, git_revision, machine_description, methods_by_cv, progress, write_json, write_markdown  # noqa: E402

SOURCE_METHODS = ("voting-pruned", "decision-templates", "stacked-svm")
ADAPTED = "dawid-skene"


def _runs(engine, specs, target: str):
    """{member: runs with .oof and .test (the predictions on ``target``)}; refuses to compute."""
    pending = engine.pending(specs)
    if pending:
        raise SystemExit(f"unlabelled_site: {len(pending)} member part(s) are not cached; run "
                         f"'ensemble-deid cv' with these members first (see the module docstring)")
    runs = engine.collect(specs)
    return {label: SimpleNamespace(oof=run.oof, test=run.targets[target]) for label, run in runs.items()}


def _scores(docs, preds) -> dict:
    from ensemble_deid.studies.leaks import leak_rates
    from ensemble_deid.studies.summary import strict_prf

    p, r, f = strict_prf(docs, preds)
    leak = leak_rates(docs, preds)["all"]
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "token_leak": round(leak.rate, 4)}


def _fitted(method, params, train, oof, test_preds, test, folds):
    from ensemble_deid.ensemble.run import make_search

    learner = make_search(method, params=params, folds=folds.k, seed=folds.seed, n_members=len(oof))
    learner.fit(oof, train)
    preds = {p.doc_id: p for p in learner.predict(test_preds, test)}
    return learner, preds


def run_pair(workspace, source: str, target: str, members: str, folds_k: int) -> dict:
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    specs = [TaggerSpec.parse(s) for s in _split(members)]
    src, tgt = workspace.load(source), workspace.load(target)
    cache = PredictionCache(workspace.cache_dir)
    engine = CrossValidation(src.train, {"test": src.test, "target": tgt.test}, cache, k=folds_k, seed=0)
    runs = _runs(engine, specs, "target")
    test = tgt.test
    out = {"source": source, "target": target, "members": list(runs), "folds": folds_k,
           "target_documents": len(test), "rows": []}

    def row(kind, name, preds, **extra):
        scored = _scores(test, preds)
        out["rows"].append({"kind": kind, "system": name, **scored, **extra})
        progress(f"  {source} -> {target}: {name}: strict F1 {scored['f1']}, token leak {scored['token_leak']}")

    for name, run in runs.items():
        row("member (source)", name, run.test)
    oof = {n: r.oof for n, r in runs.items()}
    on_target = {n: r.test for n, r in runs.items()}
    majority = math.ceil(len(runs) / 2)
    _, preds = _fitted("voting", {"threshold": majority}, src.train, oof, on_target, test, engine.folds)
    row("reference", f"majority vote (t = {majority})", preds)

    progress(f"{source} -> {target}: source-trained ensembles, chosen by CV on {source}")
    chosen = methods_by_cv(src.train, test, engine.folds, [("source", runs)], SOURCE_METHODS, keep_predictions=True)
    best = best_by_cv(chosen)
    for r in chosen:
        row("source-trained", r["method"], r.pop("dev_predictions"), cv_f1=r["cv_f1"], chosen=r is best,
            params=r["params"])

    progress(f"{source} -> {target}: {ADAPTED}, prior strength by CV on {source}, EM on {target} without labels")
    learner, preds = _fitted(ADAPTED, None, src.train, oof, on_target, test, engine.folds)
    row("adapted (no target labels)", ADAPTED, preds, params=dict(learner.best_params_))
    _, fixed = _fitted(ADAPTED, {"adapt": False}, src.train, oof, on_target, test, engine.folds)
    row("reference", f"{ADAPTED}, not adapted", fixed)

    own = CrossValidation(tgt.train, {"test": tgt.test}, cache, k=folds_k, seed=0)
    if own.pending(specs):
        out["target_trained"] = None
        progress(f"{target}: members not cross-validated on its own training set: no target-trained reference")
    else:
        own_runs = _runs(own, specs, "test")
        own_rows = methods_by_cv(tgt.train, test, own.folds, [("target", own_runs)], SOURCE_METHODS,
                                 keep_predictions=True)
        own_best = best_by_cv(own_rows)
        row("target-trained (reference)", own_best["method"], own_best["dev_predictions"], cv_f1=own_best["cv_f1"])
    rows = {r["kind"]: r for r in out["rows"] if r.get("chosen", True)}
    src_f1 = next(r["f1"] for r in out["rows"] if r.get("chosen"))
    ada_f1 = rows["adapted (no target labels)"]["f1"]
    ref = rows.get("target-trained (reference)")
    out["gap_closed"] = round((ada_f1 - src_f1) / (ref["f1"] - src_f1), 3) if ref and ref["f1"] != src_f1 else None
    return out


def _split(members: str) -> list[str]:
    from ensemble_deid.ensemble.run import parse_members

    specs, _, _ = parse_members(members)
    return [s.label for s in specs]


def markdown(result: dict) -> str:
    lines = [f"Commit {result['commit']}; command: `{result['command']}`.", ""]
    for pair in result["pairs"]:
        lines += [f"### {pair['source']} -> {pair['target']} ({pair['target_documents']} target notes)", "",
                  "| system | trained on | strict P | strict R | strict F1 | token leak | CV F1 (where chosen) |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in pair["rows"]:
            mark = " (chosen by CV)" if r.get("chosen") else ""
            cv = f"{r['cv_f1']:.4f}" if r.get("cv_f1") is not None else ""
            lines.append(f"| {r['system']}{mark} | {r['kind']} | {r['precision']:.4f} | {r['recall']:.4f} | "
                         f"{r['f1']:.4f} | {r['token_leak']:.4f} | {cv} |")
        gap = pair.get("gap_closed")
        lines += ["", f"Gap closed by {ADAPTED} without target labels: "
                  f"{'n/a (no target-trained reference)' if gap is None else f'{gap:.0%}'}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--pair", action="append", required=True, metavar="SOURCE:TARGET")
    parser.add_argument("--members", required=True)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--stem", default="unlabelled-site")
    args = parser.parse_args(argv)
    from ensemble_deid.corpus.workspace import Workspace

    ws = Workspace(args.workspace)
    pairs = []
    for pair in args.pair:
        source, sep, target = pair.partition(":")
        if not sep:
            parser.error(f"--pair {pair!r}: expected SOURCE:TARGET")
        pairs.append(run_pair(ws, source, target, args.members, args.folds))
    command = "python benchmarks/ensembles/unlabelled_site.py " + " ".join(sys.argv[1:] if argv is None else argv)
    result = {"commit": git_revision().get("commit"), "command": command, "machine": machine_description(),
              "pairs": pairs}
    write_json(RESULTS / f"{args.stem}.json", result)
    write_markdown(RESULTS / f"{args.stem}.md", markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
