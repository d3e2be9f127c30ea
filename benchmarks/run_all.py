"""Every available tagger and every ensemble method on one corpus, scored on
its test split: the benchmark behind ``make bench``.

    python benchmarks/run_all.py                                   # MEDDOCAN train -> dev, all taggers, all methods
    python benchmarks/run_all.py --taggers crf,rules --methods voting,stacked-svm --jobs 2
    python benchmarks/run_all.py --corpus synthetic-2014           # a corpus of the workspace (ENSEMBLE_DEID_HOME)
    python benchmarks/run_all.py --limit-train 100 --limit-test 50 --folds 3 \\
        --taggers crf:max_iterations=20,rules,svm                  # smoke run (results get a -smoke suffix)

Corpus: by default MEDDOCAN, train -> dev as the test split, read from
``../shared/corpora/meddocan`` beside the repository (``--meddocan DIR`` or
MEDDOCAN_DIR elsewhere); ``--corpus NAME`` loads a registered or embedded
corpus of the workspace instead (train -> test).

Taggers: every registered tagger by default (``--taggers`` to choose, with
parameters as for ``ensemble-deid cv``). Unavailable taggers (a missing
optional dependency) and external systems that are not configured (MIST,
PhysioNet deid, precomputed files) are skipped with the reason. On a corpus
with MEDDOCAN labels the rule tagger gets ``label_map=i2b2-to-meddocan``
unless a label map is given. Each tagger goes through ``CrossValidation``
(``--folds`` patient-grouped folds for the out-of-fold predictions, plus a
model trained on the whole training set predicting the test split) into a
persistent prediction cache (``--cache``; default the workspace's cache), so
a rerun reuses every part already computed, and their recorded timings.

Ensembles: every method (``--methods``) over all the taggers that ran, its
hyperparameters chosen by cross-validation on the members' out-of-fold
predictions (as ``ensemble-deid ensemble`` with its defaults; the same cache
entry), then its own out-of-fold predictions for a CV F1 (``--no-ensemble-oof``
skips them).

Per system: strict, token and binary-token micro F1 on the test split, the
token leak rate (share of gold PHI tokens no predicted span covers), the CV
strict F1, the full-training fit seconds, prediction seconds and tokens/s on
the test split, and peak resident memory (MB, of the process doing the fit
and prediction). Writes ``benchmarks/results/run_all-<corpus>.json`` and
``.md`` (``-smoke`` added when a limit is set and ``--out-dir`` is not
given), with the machine description; the JSON is rewritten after every
system. Progress goes to stderr; the summary table is printed at the end.
No note text is printed.

On a shared, loaded machine run it with ``OMP_WAIT_POLICY=PASSIVE``: the
torch models (neural taggers, stacked-lstm) otherwise spend their time in
OpenMP threads spinning at barriers while other processes hold the cores.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A,
Rodríguez H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019,
pp. 618-638.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    MEDDOCAN, RESULTS, Clock, load_range, machine_description, machine_lines, progress, shown, timing_phrase,
    write_json, write_markdown,
)

CRITERIA = ("strict", "token", "binary_token")
# A few MEDDOCAN subtypes: a corpus using them gets the rule tagger's i2b2 -> MEDDOCAN map.
MEDDOCAN_TYPES = {"NOMBRE_SUJETO_ASISTENCIA", "NOMBRE_PERSONAL_SANITARIO", "FECHAS", "TERRITORIO",
                  "EDAD_SUJETO_ASISTENCIA", "ID_SUJETO_ASISTENCIA", "CALLE", "PAIS"}
HEADERS = ["system", "kind", "strict F1", "token F1", "binary F1", "leak (token)", "CV F1",
           "train s", "predict s", "tokens/s", "peak MB", "this run: wall s", "CPU s", "load (1 min)"]


# --- the corpus ------------------------------------------------------------------

def load_corpus(args):
    """(name, train, test, description)."""
    if args.corpus == "meddocan":
        from ensemble_deid.corpus.formats import load_directory

        root = Path(args.meddocan)
        train_dir, test_dir = root / "train" / "xml", root / "dev" / "xml"
        for d in (train_dir, test_dir):
            if not d.is_dir():
                sys.exit(f"run_all: MEDDOCAN not found ({d} is not a folder); give --meddocan DIR or --corpus NAME")
        train, test = load_directory(train_dir), load_directory(test_dir)
        source = {"source": "MEDDOCAN train -> dev as test", "train_dir": str(train_dir), "test_dir": str(test_dir)}
    else:
        from ensemble_deid.corpus.workspace import Workspace

        corpus = Workspace(args.workspace).load(args.corpus)
        train, test = corpus.train, corpus.test
        source = {"source": f"workspace corpus {args.corpus!r} train -> test", "workspace": str(Path(args.workspace).resolve())}
    train, test = train[: args.limit_train], test[: args.limit_test]
    return train, test, source


def corpus_scheme(docs) -> str:
    from ensemble_deid.corpus.document import I2B2_PARENT_OF

    types = {a.type for d in docs for a in d.annotations}
    if types & MEDDOCAN_TYPES:
        return "meddocan"
    return "i2b2" if types <= set(I2B2_PARENT_OF) else "other"


# --- which taggers -------------------------------------------------------------------

def choose_taggers(args, scheme: str):
    """([TaggerSpec], [{"system", "reason"}]): what runs, and what is skipped and why."""
    from ensemble_deid.experiment.cv import split_specs
    from ensemble_deid.experiment.cv import TaggerSpec
    from ensemble_deid.taggers.registry import describe_taggers

    infos = {i.name: i for i in describe_taggers()}
    texts = split_specs(args.taggers) if args.taggers else sorted(infos)
    specs, skipped = [], []
    for text in texts:
        try:
            spec = TaggerSpec.parse(text)
        except ValueError as exc:
            sys.exit(f"run_all: --taggers: {exc}")
        info = infos.get(spec.name)
        if info is None:
            sys.exit(f"run_all: --taggers: unknown tagger {spec.name!r}; registered: {', '.join(sorted(infos))}")
        if not info.available:
            skipped.append({"system": spec.label, "reason": f"unavailable: {info.reason}"})
            continue
        if spec.name == "rules" and scheme == "meddocan" and "label_map" not in dict(spec.params):
            spec = TaggerSpec(spec.name, tuple(sorted(spec.params + (("label_map", "i2b2-to-meddocan"),))))
        try:
            tagger = spec.make()
        except Exception as exc:  # bad parameters, a dependency failing at import
            skipped.append({"system": spec.label, "reason": f"cannot be made: {type(exc).__name__}: {exc}"})
            continue
        ok, reason = tagger.availability()  # external systems check their configuration per instance
        if not ok:
            skipped.append({"system": spec.label, "reason": f"not configured: {reason}"})
            continue
        specs.append(spec)
    return specs, skipped


# --- scoring -------------------------------------------------------------------------------

def test_scores(test, predictions) -> dict:
    """Strict / token / binary-token micro scores and leak rates on the test split."""
    from ensemble_deid.evaluation import evaluate
    from ensemble_deid.studies.summary import prediction_spans

    report = evaluate(test, prediction_spans(test, predictions), criteria=list(CRITERIA), breakdowns=False, leak=True)
    out = {c: {k: round(v, 4) if isinstance(v, float) else v for k, v in report[c].micro.to_dict().items()}
           for c in CRITERIA}
    leak = report.leak.overall
    out["leak"] = {"token_rate": round(leak.token_rate, 4), "char_rate": round(leak.char_rate, 4),
                   "leaked_tokens": leak.leaked_tokens, "tokens": leak.tokens}
    return out


def cv_f1(train, oof) -> float | None:
    from ensemble_deid.studies.summary import strict_prf

    return round(strict_prf(train, oof)[2], 4) if oof else None


def row_of(system: dict) -> list:
    s = system.get("scores") or {}

    def f1(c):
        return (s.get(c) or {}).get("f1")

    tps = system.get("tokens_per_s")
    peak = system.get("peak_rss_mb")
    return [system["system"], system["kind"], f1("strict"), f1("token"), f1("binary_token"),
            (s.get("leak") or {}).get("token_rate"), system.get("cv_strict_f1"),
            _seconds(system.get("train_s")), _seconds(system.get("predict_s")),
            None if tps is None else int(round(tps)), None if peak is None else int(round(peak)),
            # what this run spent on the step (a cached step: reading it), with the load around it
            _seconds(system.get("this_run_wall_s")), _seconds(system.get("this_run_cpu_s")), _load(system)]


def _load(system: dict) -> str:
    return load_range(system.get("load_before"), system.get("load_after")) if "load_before" in system else ""


def _seconds(x) -> str:
    if x is None:
        return ""
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


ALIGN = "ll" + "r" * (len(HEADERS) - 2)


# --- running -----------------------------------------------------------------------------

def this_run(clock: Clock) -> dict:
    """What this run spent on a step (not the recorded timings of reused parts):
    wall, CPU of the process and its workers, and the 1-minute load around it."""
    return {"this_run_wall_s": round(clock.wall, 2), "this_run_cpu_s": round(clock.cpu, 2),
            "load_before": clock.load_before, "load_after": clock.load_after}


def run_tagger(engine, spec, args, n_test_tokens) -> tuple[dict, object]:
    clock = Clock(children=True)
    with clock:
        runs = engine.run([spec], jobs=args.jobs, progress=not args.no_progress,
                          on_corrupt=lambda msg: progress(f"warning: {msg}"))
    run = runs[spec.label]
    full = next(r for r in run.records if r.get("target") == "test")
    folds = [r for r in run.records if r.get("fold") is not None or r.get("target") == "__train__"]
    system = {
        "system": spec.label, "kind": "external" if run.external else "tagger",
        "entry": {"tagger": run.entry.tagger, "version": run.entry.version, "param_hash": run.entry.param_hash},
        "params": full.get("params"),
        "scores": test_scores(engine.targets["test"], run.targets["test"]),
        "cv_strict_f1": cv_f1(engine.train, run.oof),
        "train_s": full.get("fit_seconds"), "predict_s": full.get("predict_seconds"),
        "tokens_per_s": round(n_test_tokens / full["predict_seconds"], 1) if full.get("predict_seconds") else None,
        "peak_rss_mb": full.get("peak_rss_mb"),
        "peak_rss_mb_any_part": run.peak_mb,
        "cv_fit_s_sum": round(sum(r.get("fit_seconds", 0.0) for r in folds), 3),
        "cv_predict_s_sum": round(sum(r.get("predict_seconds", 0.0) for r in folds), 3),
        "parts_computed": run.computed, "parts_reused": run.reused,
        "environment": full.get("environment"),
        "computed": run.computed > 0, **this_run(clock),
    }
    return system, run


def run_method(engine, method, members, args, n_test_tokens) -> dict:
    """Fit (or reuse from the cache) one ensemble method over the members, as
    ``ensemble-deid ensemble`` with its defaults does (the same cache entry)."""
    from ensemble_deid.ensemble.run import make_search, run_ensemble

    learner = make_search(method, folds=args.folds, seed=args.seed)
    label = f"ensemble.{method}"
    train, test = engine.train, engine.targets["test"]
    clock = Clock(children=True)
    with clock:
        out = run_ensemble(engine, learner, method, members, oof=not args.no_ensemble_oof, echo=progress)
    entry, test_preds, record, selection, oof = out["entry"], out["test"], out["test_record"], out["record"], out["oof"]
    computed = "test" in out["computed"]
    # The whole pipeline at prediction time: every member's full-training model, then the meta-learner.
    member_predict = [next((r.get("predict_seconds") for r in m.records if r.get("target") == "test"), None)
                      for m in members.values()]
    pipeline = (sum(member_predict) + record["predict_seconds"]
                if record.get("predict_seconds") is not None and None not in member_predict else None)
    return {
        "system": label, "kind": "ensemble", "members": list(members),
        "entry": {"tagger": entry.tagger, "version": entry.version, "param_hash": entry.param_hash},
        "chosen_params": selection.get("best_params"), "selection_cv_score": selection.get("best_score"),
        # What the fit itself chose: pruned voting's threshold and kept members.
        "learned": {k: selection[k] for k in ("threshold", "subset") if k in selection},
        "selection_fits": selection.get("fits"),
        "scores": test_scores(test, test_preds),
        "cv_strict_f1": cv_f1(train, oof),
        "train_s": record.get("fit_seconds"), "predict_s": record.get("predict_seconds"),
        "tokens_per_s": round(n_test_tokens / record["predict_seconds"], 1) if record.get("predict_seconds") else None,
        "peak_rss_mb": record.get("peak_rss_mb"),
        "pipeline_predict_s": None if pipeline is None else round(pipeline, 4),
        "pipeline_tokens_per_s": round(n_test_tokens / pipeline, 1) if pipeline else None,
        "computed": computed, **this_run(clock),
    }


# --- output ------------------------------------------------------------------------------

def markdown(result: dict) -> str:
    from ensemble_deid.studies.table import render_table

    c = result["corpus"]
    s = result["settings"]
    lines = [
        f"# run_all: {c['name']}",
        "",
        f"{c['source']}: train {c['train_docs']:,} documents / {c['train_tokens']:,} tokens, "
        f"test {c['test_docs']:,} documents / {c['test_tokens']:,} tokens"
        + (f" (limited: --limit-train {s['limit_train']} --limit-test {s['limit_test']})" if s["limited"] else "") + ".",
        f"{s['folds']}-fold patient-grouped CV (seed {s['seed']}), --jobs {s['jobs']}; "
        f"run {result['started']} -> {result.get('finished', '(unfinished)')}"
        + (f": {timing_phrase(result)}." if "wall_s" in result else "."),
        "",
        render_table(HEADERS, [row_of(x) for x in result["systems"]], ALIGN),
        "",
        "F1: micro, test split (strict = exact span and type; token = per token, typed; binary = per token, PHI or "
        "not). Leak: share of gold PHI tokens that no predicted span covers. CV F1: strict micro F1 of the "
        "out-of-fold predictions on the training set (external systems: their output on it). Train s: the fit on "
        "the whole training set (ensembles: with the cross-validated choice of hyperparameters); predict s and "
        "tokens/s: predicting the test split (ensembles: the meta-learner alone, given its members' predictions; the JSON's pipeline_predict_s adds the members' own); peak MB: resident memory of the process doing it (it holds the "
        "corpus and, for ensembles, the members' predictions). Timings of parts reused from the cache are those "
        "recorded when they were computed; 'this run' is what this run spent on the step (wall, CPU of the process "
        "and its workers) and the 1-minute load before and after it.",
    ]
    if result["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- {x['system']}: {x['reason']}" for x in result["skipped"]]
    if result["failed"]:
        lines += ["", "Failed:", ""] + [f"- {x['system']}: {x['error']}" for x in result["failed"]]
    notes = result.get("notes") or []
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", "Machine:", ""] + machine_lines(result["machine"])
    return "\n".join(lines)


def _f1(system: dict) -> float:
    return system["scores"]["strict"]["f1"]


def _spec_name(label: str) -> str:
    return label.split(":")[0]


def _leak(system: dict) -> str:
    leak = (system.get("scores") or {}).get("leak") or {}
    return f"{leak['token_rate']:.4f}" if "token_rate" in leak else ""


def summary_table(result: dict, rows: int = 6, recall_first: dict | None = None) -> str:
    """The README's results (``-summary.md``): the best base taggers beside
    every ensemble, by strict F1 on the test split, with what each ensemble
    chose and its token leak rate; then, from ``recall_first`` (the results
    of benchmarks/ensembles/recall_first.py), each method chosen for binary-token
    recall >= 0.99 instead of F1."""
    taggers = sorted((s for s in result["systems"] if s["kind"] != "ensemble"), key=_f1, reverse=True)
    ensembles = sorted((s for s in result["systems"] if s["kind"] == "ensemble"), key=_f1, reverse=True)
    if not taggers or not ensembles:
        return ""
    by_cv = max((s for s in taggers if s.get("cv_strict_f1") is not None), key=lambda s: s["cv_strict_f1"],
                default=None)
    n_members = len(ensembles[0]["members"])

    def member(s):
        return _spec_name(s["system"]) + (" (best by CV F1)" if s is by_cv else "")

    def ensemble(s):
        chosen = {**(s.get("chosen_params") or {})}
        learned = s.get("learned") or {}
        notes = [f"{len(learned['subset'])} of {len(s['members'])}"] if "subset" in learned else []
        if "threshold" in learned:
            chosen["threshold"] = learned["threshold"]
        short = {"threshold": "t"}
        notes += [f"{short.get(k, k)} = {v:g}" if isinstance(v, float) else f"{short.get(k, k)} = {v}"
                  for k, v in chosen.items() if v is not None]
        return s["system"].removeprefix("ensemble.") + (f" ({', '.join(notes)})" if notes else "")

    lines = [f"| system | strict F1 | token leak | | ensemble ({n_members} members) | strict F1 | token leak |",
             "|---|---:|---:|---|---|---:|---:|"]
    best = ensembles[0]
    first = [r for r in (recall_first or {}).get("rows", []) if r["objective"] == "binary-token:recall>=0.99"]
    right_rows = []
    for e in ensembles:
        name, f1 = ensemble(e), f"{_f1(e):.4f}"
        if e is best:
            name, f1 = f"**{name}**", f"**{f1}**"
        right_rows.append(f"{name} | {f1} | {_leak(e)}")
    for r in first:
        d = r["dev"]
        kept = f", kept from {r['kept_from']['commit'][:7]}" if r.get("kept_from") else ""  # not regenerated
        right_rows.append(f"{r['method']}, recall-first (binary-token R {d['binary-token']['recall']:.4f}{kept}) | "
                          f"{d['strict']['f1']:.4f} | {d['leak_token']['all']['rate']:.4f}")
    n_left = min(rows, len(taggers))
    for i in range(max(n_left, len(right_rows))):
        left = f"{member(taggers[i])} | {_f1(taggers[i]):.4f} | {_leak(taggers[i])}" if i < n_left else " |  | "
        right = right_rows[i] if i < len(right_rows) else " |  | "
        lines.append(f"| {left} | | {right} |")
    gains = [f"+{100 * (_f1(best) - _f1(taggers[0])):.2f} points over the best single member on this split "
             f"({_spec_name(taggers[0]['system'])})"]
    if by_cv is not None and by_cv is not taggers[0]:
        gains.append(f"+{100 * (_f1(best) - _f1(by_cv)):.2f} over the member a user would pick, the best by CV F1 "
                     f"({_spec_name(by_cv['system'])})")
    lines += ["", f"The best ensemble, {best['system'].removeprefix('ensemble.')}, is " + " and ".join(gains) + "."]
    if first:
        lines.append("Token leak: share of gold PHI tokens no predicted span covers. Recall-first rows: the same "
                     "method with its parameters and decision threshold chosen by CV on train for binary-token "
                     "recall >= 0.99 (benchmarks/ensembles/recall_first.py).")
    if "wall_s" in result:  # the run's time, as the README's sentence quotes it (with its niceness)
        lines.append(f"The run: {timing_phrase(result)}.")
    return "\n".join(lines)


def save(result: dict, stem: Path) -> None:
    write_json(stem.with_suffix(".json"), result)
    write_tables(result, stem)


def write_tables(result: dict, stem: Path) -> None:
    """The Markdown files of a results file: the full table, and the summary
    the README copies (``benchmarks/sync_docs.py``)."""
    write_markdown(stem.with_suffix(".md"), markdown(result))
    first = stem.with_name(stem.name.replace("run_all-", "recall-first-", 1) + ".json")
    summary = summary_table(result, recall_first=json.loads(first.read_text(encoding="utf-8")) if first.is_file()
                            else None)
    if summary:
        write_markdown(stem.with_name(stem.name + "-summary.md"), summary)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="meddocan",
                    help="'meddocan' (default: the MEDDOCAN folder, train -> dev) or a workspace corpus name")
    ap.add_argument("--meddocan", default=str(MEDDOCAN), help="MEDDOCAN root (train/xml, dev/xml)")
    ap.add_argument("--workspace", default=os.environ.get("ENSEMBLE_DEID_HOME", "."),
                    help="workspace of --corpus NAME (default: ENSEMBLE_DEID_HOME or the current folder)")
    ap.add_argument("--taggers", default=None, help="comma-separated tagger specs (default: every registered one)")
    ap.add_argument("--methods", default=None,
                    help="comma-separated ensemble methods (default: all); 'none' for no ensembles")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="parallel CV parts (-1: every core)")
    ap.add_argument("--cache", default=None,
                    help="prediction cache folder, kept between runs (default: the workspace's, "
                         "ENSEMBLE_DEID_CACHE or ./cached_predictions)")
    ap.add_argument("--limit-train", type=int, default=None, help="first N training documents only (smoke runs)")
    ap.add_argument("--limit-test", type=int, default=None, help="first N test documents only (smoke runs)")
    ap.add_argument("--no-ensemble-oof", action="store_true", help="skip the ensembles' own out-of-fold predictions (no CV F1)")
    ap.add_argument("--out-dir", type=Path, default=None, help=f"where the results go (default {shown(RESULTS)})")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.add_argument("--tables", action="store_true",
                    help="only rewrite the Markdown files (table, -summary.md) from the results file (run nothing)")
    args = ap.parse_args(argv)
    if args.tables:
        stem = (args.out_dir or RESULTS) / ("run_all-" + re.sub(r"[^A-Za-z0-9_.\-]", "_", args.corpus))
        result = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
        write_tables(result, stem)
        print(summary_table(result))
        return result
    if args.jobs == 0:
        ap.error("--jobs must be positive, or -1 for every core")
    if args.folds < 2:
        ap.error("--folds must be at least 2")

    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation
    from ensemble_deid.ensemble import METHODS
    from ensemble_deid.ensemble.caching import MemberRun
    from ensemble_deid.corpus.workspace import Workspace

    if args.methods is None:
        methods = list(METHODS)
    elif args.methods.strip().lower() in ("", "none"):
        methods = []
    else:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            ap.error(f"--methods: unknown {', '.join(unknown)}; known: {', '.join(METHODS)}")

    limited = args.limit_train is not None or args.limit_test is not None
    safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", args.corpus)
    stem = (args.out_dir or RESULTS) / (f"run_all-{safe}" + ("-smoke" if limited and args.out_dir is None else ""))
    clock = Clock(children=True).start()  # the whole run: wall, CPU with workers, load

    progress(f"loading corpus {args.corpus!r}")
    train, test, source = load_corpus(args)
    n_train_tokens = sum(len(d.tokens) for d in train)
    n_test_tokens = sum(len(d.tokens) for d in test)
    scheme = corpus_scheme(train)
    progress(f"train {len(train)} documents / {n_train_tokens:,} tokens; test {len(test)} documents / "
             f"{n_test_tokens:,} tokens; labels: {scheme} scheme")
    specs, skipped = choose_taggers(args, scheme)
    for s in skipped:
        progress(f"skipping {s['system']}: {s['reason']}")
    cache_dir = Path(args.cache) if args.cache else Workspace(args.workspace).cache_dir
    engine = CrossValidation(train, {"test": test}, PredictionCache(cache_dir), k=args.folds, seed=args.seed)

    notes = []
    if scheme != "i2b2":
        externals = [s.label for s in specs if s.make().external and s.name != "rules"]
        if externals:
            notes.append(f"{', '.join(externals)} output i2b2 labels, which this corpus ({scheme} labels) does not "
                         "use: their strict and token F1 are not meaningful here; binary F1 and leak are.")
    result = {
        "benchmark": "run_all",
        "corpus": {"name": args.corpus, **source, "scheme": scheme, "train_docs": len(train),
                   "train_tokens": n_train_tokens, "test_docs": len(test), "test_tokens": n_test_tokens,
                   "train_fingerprint": engine.train_fingerprint,
                   "test_fingerprint": engine.target_fingerprints["test"]},
        "settings": {"folds": args.folds, "seed": args.seed, "jobs": args.jobs, "cache": str(cache_dir.resolve()),
                     "taggers": [s.label for s in specs], "methods": methods, "limited": limited,
                     "limit_train": args.limit_train, "limit_test": args.limit_test,
                     "ensemble_oof": not args.no_ensemble_oof},
        "machine": machine_description(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "complete": False,
        "systems": [], "skipped": skipped, "failed": [], "notes": notes,
    }
    save(result, stem)

    members = {}
    for i, spec in enumerate(specs, 1):
        progress(f"[{i}/{len(specs)}] tagger {spec.label}: {args.folds}-fold CV + full training -> test")
        try:
            system, run = run_tagger(engine, spec, args, n_test_tokens)
        except Exception as exc:  # one broken tagger must not end the benchmark
            progress(f"  {spec.label} failed: {type(exc).__name__}: {exc}")
            result["failed"].append({"system": spec.label, "error": f"{type(exc).__name__}: {exc}"})
            save(result, stem)
            continue
        members[spec.label] = MemberRun(spec.label, run.entry, run.oof, run.targets["test"], run.records)
        result["systems"].append(system)
        progress(f"  {spec.label}: strict F1 {system['scores']['strict']['f1']:.4f}, CV F1 {system['cv_strict_f1']}, "
                 f"parts computed {system['parts_computed']} / reused {system['parts_reused']} "
                 f"({system['this_run_wall_s']} s wall, {system['this_run_cpu_s']} s CPU)")
        save(result, stem)

    if methods and len(members) < 2:
        progress(f"no ensembles: they need at least two members, {len(members)} tagger(s) ran")
        result["skipped"] += [{"system": f"ensemble.{m}", "reason": "fewer than two members ran"} for m in methods]
    elif methods:
        for i, method in enumerate(methods, 1):
            progress(f"[{i}/{len(methods)}] ensemble {method} over {len(members)} members")
            try:
                system = run_method(engine, method, members, args, n_test_tokens)
            except Exception as exc:
                progress(f"  ensemble.{method} failed: {type(exc).__name__}: {exc}")
                result["failed"].append({"system": f"ensemble.{method}", "error": f"{type(exc).__name__}: {exc}"})
                save(result, stem)
                continue
            result["systems"].append(system)
            progress(f"  ensemble.{method}: strict F1 {system['scores']['strict']['f1']:.4f}, "
                     f"CV F1 {system['cv_strict_f1']} ({'computed' if system['computed'] else 'reused'}, "
                     f"{system['this_run_wall_s']} s wall, {system['this_run_cpu_s']} s CPU)")
            save(result, stem)

    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    clock.stop()
    result.update(wall_s=round(clock.wall, 1), cpu_s=round(clock.cpu, 1), load_before=clock.load_before,
                  load_after=clock.load_after, nice=os.nice(0),  # a niced run waits behind the others' work load_average_at_end=[round(x, 2) for x in os.getloadavg()],
                  # a rerun that reads everything from the cache says so: its time is not the study's
                  steps=len(result["systems"]), steps_computed=sum(bool(x.get("computed")) for x in result["systems"]))
    result["complete"] = True
    save(result, stem)
    from ensemble_deid.studies.table import render_table

    print(render_table(HEADERS, [row_of(x) for x in result["systems"]], ALIGN))
    for s in result["skipped"]:
        print(f"skipped {s['system']}: {s['reason']}")
    for s in result["failed"]:
        print(f"FAILED {s['system']}: {s['error']}")
    print(f"wrote {shown(stem.with_suffix('.json'))} and {shown(stem.with_suffix('.md'))}")
    return result


if __name__ == "__main__":
    main()
