"""Per-label member trust (``trust``, ``ensemble.trust``): how many of the
rule tagger's correct spans the span-level ensembles keep, with trust fixed
off (the methods' own rule, the published figures) and with ``trust`` chosen
by k-fold CV on the training out-of-fold predictions, as the ``ensemble``
command chooses it (voting and decision templates: the default grid, None,
0.99, 0.95, 0.9, 0.8; pruned voting: ``trust="auto"``, the same values
cross-validated over its elimination). Scores are on the test split, which
played no part in the choice.

    # MEDDOCAN, the 12 published members (choose on train by CV, report dev):
    ENSEMBLE_DEID_HOME=<workspace with MEDDOCAN registered as meddocan> \\
    ENSEMBLE_DEID_PUBLISHED=cached_predictions \\
    python benchmarks/ensembles/member_trust.py --corpus meddocan
    # the embedded synthetic corpora, the guide's members (trained here):
    python benchmarks/ensembles/member_trust.py --corpus synthetic-2014 --members svm,mira,rules --folds 3
    python benchmarks/ensembles/member_trust.py --corpus synthetic-2016 --members svm,mira,rules --folds 3
    python benchmarks/ensembles/member_trust.py --corpus C --tables   # the .md again from the .json
    # before/after a change of the trust rule: an earlier run's .json, whose
    # CV-chosen rows the table shows as "before" (kept in the new .json)
    python benchmarks/ensembles/member_trust.py --corpus C ... --before OLD.json   # (or with --tables)

Per method, before/after: the chosen trust and trusted (member, label)
pairs, test strict P/R/F1, and "rule hits kept": of the rule member's test
spans that equal a gold span (strict), how many the ensemble outputs.
Writes benchmarks/results/member-trust-<corpus>.json and .md.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A,
Rodríguez H, Lopez Martin J, Villegas M, Krallinger M. Automatic
de-identification of medical texts in Spanish: the MEDDOCAN track, corpus,
guidelines, methods and evaluation of results. IberLEF@SEPLN 2019, pp. 618-638.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import MEDDOCAN_PUBLISHED_MEMBERS, RESULTS, machine_description, machine_lines, progress, shown, write_json, write_markdown

MEDDOCAN_MEMBERS = ",".join(MEDDOCAN_PUBLISHED_MEMBERS)
METHODS = ("voting", "voting-pruned", "decision-templates")


def members(corpus_name: str, spec_text: str, k: int, seed: int):
    """The corpus and its members' runs (reused from the cache, else computed)."""
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec, split_specs

    ws = Workspace(os.environ.get("ENSEMBLE_DEID_HOME", "."))
    corpus = ws.load(corpus_name)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
    specs = [TaggerSpec.parse(s) for s in split_specs(spec_text)]
    return corpus, engine.run(specs, progress=False)


def rule_hits(corpus, rules_test) -> set:
    """The rule member's test spans that equal a gold span (strict)."""
    out = set()
    for d in corpus.test:
        gold = {(a.start, a.end, a.label.upper()) for a in d.annotations}
        out |= {(d.id, a.start, a.end, a.label.upper()) for a in rules_test[d.id].spans(d)
                if (a.start, a.end, a.label.upper()) in gold}
    return out


def measure(corpus, runs, k: int, seed: int) -> list[dict]:
    from ensemble_deid.ensemble import build_candidates
    from ensemble_deid.ensemble.run import make_search  # the 'ensemble' command's selection
    from ensemble_deid.ensemble.trust import TRUST_GRID, trusted_pairs
    from ensemble_deid.studies.summary import strict_prf

    oof = {n: r.oof for n, r in runs.items()}
    test = {n: r.targets["test"] for n, r in runs.items()}
    rules = next(n for n in runs if n.split(":")[0] == "rules")
    hits = rule_hits(corpus, test[rules])
    rows = []
    for method in METHODS:
        for mode, params in (("off", {"trust": None}), ("chosen by CV", {})):
            progress(f"{method}, trust {mode}")
            t0 = time.perf_counter()
            search = make_search(method, params, folds=k, seed=seed)
            search.fit(oof, corpus.train)
            preds = {p.doc_id: p for p in search.predict(test, corpus.test)}
            out = {(d.id, a.start, a.end, a.label.upper()) for d in corpus.test for a in preds[d.id].spans(d)}
            model = search.best_estimator_
            p, r, f1 = strict_prf(corpus.test, preds)
            # What each trust level would trust on the whole training set, and (grid
            # searches) its held-out CV F1 at the chosen other parameters: why CV chose.
            table = build_candidates([oof[n] for n in oof], tuple(oof), corpus.train)
            levels = {str(t): trusted_pairs(table, t) for t in TRUST_GRID if t is not None}
            others = {k: v for k, v in search.best_params_.items() if k not in ("trust", "operating_point")}
            cv_by_trust = {str(r.params.get("trust")): round(r.score, 4) for r in search.cv_results_
                           if {k: v for k, v in r.params.items() if k != "trust"} == others}
            rows.append({"method": method, "trust": mode, "chosen_trust": getattr(model, "trust_", model.trust),
                         "trusted": [list(x) for x in getattr(model, "trusted_", [])],
                         "cv_f1": None if search.best_score_ is None else round(search.best_score_, 4),
                         "test": [round(p, 4), round(r, 4), round(f1, 4)],
                         "rule_hits": len(hits), "rule_hits_kept": len(hits & out),
                         "pairs_by_level": levels, "cv_f1_by_trust": cv_by_trust if mode != "off" else {},
                         "seconds": round(time.perf_counter() - t0, 1)})
    return rows


def markdown(result: dict) -> str:
    from ensemble_deid.experiment.cv import split_specs

    lines = [f"# Member trust on {result['corpus']} ({result['folds']}-fold CV on train, scores on test)\n",
             f"`{result['command']}`; members {result['members']}.\n",
             "| method | trust | chosen | trusted (member on label) | test P | test R | test F1 | rule hits kept |",
             "|---|---|--:|---|--:|--:|--:|--:|"]
    before = result.get("before")
    rows = list(result["rows"])
    if before:  # each method's CV-chosen row of the earlier run, after its own rows
        for r in before["rows"]:
            if r["trust"] != "off":
                at = max(i for i, x in enumerate(rows) if x["method"] == r["method"]) + 1
                rows.insert(at, {**r, "trust": "chosen by CV, before"})
    for r in rows:
        from ensemble_deid.ensemble.trust import describe_pairs

        trusted = describe_pairs([(m.split(":")[0], lab) for m, lab in r["trusted"]]) or "-"
        p, rec, f1 = r["test"]
        lines.append(f"| {r['method']} | {r['trust']} | {r['chosen_trust'] if r['chosen_trust'] is not None else 'None'}"
                     f" | {trusted} | {p:.4f} | {rec:.4f} | {f1:.4f} | {r['rule_hits_kept']} / {r['rule_hits']} |")
    notes = [""]
    for r in result["rows"]:
        if r["cv_f1_by_trust"]:
            notes.append(f"- {r['method']}: held-out CV F1 by trust level (other parameters as chosen): "
                         + ", ".join(f"{k} {v:.4f}" for k, v in r["cv_f1_by_trust"].items()) + ".")
    first = result["rows"][0]["pairs_by_level"]
    rules = [n for n in split_specs(result["members"]) if n.split(":")[0] == "rules"][0]
    notes.append("- (member, label) pairs each level would trust on the whole training set (of them the rule "
                 "tagger's labels): " + "; ".join(
                     f"{lvl}: {len(pairs)} ("
                     + (", ".join(lab for m, lab in pairs if m == rules) or "none") + ")"
                     for lvl, pairs in first.items()) + "; every pair in the .json file.")
    if before:
        notes.append(f"- \"before\": the same command at revision {before['revision']}, {before['rule']}.")
    return "\n".join(lines + notes + [""] + machine_lines(result["machine"]))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="meddocan")
    ap.add_argument("--members", default=None, help="default: the 12 published MEDDOCAN members")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    ap.add_argument("--tables", action="store_true", help="only rewrite the .md from the corpus's .json")
    ap.add_argument("--before", type=Path, default=None,
                    help="an earlier run's .json whose CV-chosen rows are shown as 'before'")
    ap.add_argument("--before-rule", default="trust per label only, no back-off to the category",
                    help="what the earlier run's trust rule was (shown with its rows)")
    args = ap.parse_args(argv)
    import json

    def with_before(result: dict) -> dict:
        if args.before:
            old = json.loads(args.before.read_text(encoding="utf-8"))
            result["before"] = {"revision": old["machine"]["git"].get("commit", "?")[:12], "rule": args.before_rule,
                                "rows": [{k: v for k, v in r.items() if k != "pairs_by_level"} for r in old["rows"]]}
        return result

    if args.tables:  # (with --before: the earlier run joins the .json too)
        json_path = args.out_dir / f"member-trust-{args.corpus}.json"
        result = with_before(json.loads(json_path.read_text(encoding="utf-8")))
        if args.before:
            write_json(json_path, result)
        progress(f"wrote {shown(write_markdown(args.out_dir / f'member-trust-{args.corpus}.md', markdown(result)))}")
        return result
    spec = args.members or MEDDOCAN_MEMBERS
    corpus, runs = members(args.corpus, spec, args.folds, args.seed)
    command = "python benchmarks/ensembles/member_trust.py --corpus " + args.corpus + (
        f" --members {args.members}" if args.members else "") + (f" --folds {args.folds}" if args.folds != 10 else "")
    result = {"corpus": args.corpus, "folds": args.folds, "seed": args.seed, "members": spec, "command": command,
              "rows": measure(corpus, runs, args.folds, args.seed), "machine": machine_description()}
    md = markdown(with_before(result))
    print(md)
    json_path = write_json(args.out_dir / f"member-trust-{args.corpus}.json", result)
    md_path = write_markdown(args.out_dir / f"member-trust-{args.corpus}.md", md)
    progress(f"wrote {shown(json_path)} and {shown(md_path)}")
    return result


if __name__ == "__main__":
    main()
