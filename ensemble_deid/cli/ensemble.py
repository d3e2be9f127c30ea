"""``ensemble-deid ensemble``: fit an ensemble on cached member predictions,
predict the test split, score it, and cache its own predictions."""
from __future__ import annotations

import click

from .common import SuggestingChoice, fail_on_error, objective_option, workspace_of

METHOD_NAMES = ("voting", "voting-pruned", "decision-templates", "stacked-svm", "stacked-searn", "stacked-lstm")


def parse_members(value: str, param_hint: str = "--members"):
    """(tagger specs, ensemble member names, all labels in order). Tagger specs
    are parsed as by ``cv --taggers``; ``ensemble.<method>[:hash=<prefix>]``
    names an ensemble already cached for this corpus."""
    from ..ensemble.caching import is_ensemble_spec
    from .cv import _split_specs, parse_tagger_specs

    chunks = _split_specs(value)
    ensembles = [c for c in chunks if is_ensemble_spec(c)]
    regular_text = ",".join(c for c in chunks if not is_ensemble_spec(c))
    specs = parse_tagger_specs(regular_text, param_hint) if regular_text else []
    order, by_chunk = [], iter(specs)
    for c in chunks:
        order.append(c if is_ensemble_spec(c) else next(by_chunk).label)
    if len(set(order)) != len(order):
        raise click.BadParameter("a member is named twice", param_hint=param_hint)
    if len(order) < 2:
        raise click.BadParameter("an ensemble needs at least two members", param_hint=param_hint)
    return specs, ensembles, order


def parse_params(items, param_hint: str) -> dict:
    from ..experiment.cv import _parse_value

    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint=param_hint)
        out[key.strip()] = _parse_value(value.strip())
    return out


def parse_grid(items, param_hint: str = "--grid") -> dict | None:
    from ..experiment.cv import _parse_value

    if not items:
        return None
    grid = {}
    for item in items:
        key, eq, values = item.partition("=")
        if not eq or not key.strip() or not values:
            raise click.BadParameter(f"expected key=v1|v2|..., got {item!r}", param_hint=param_hint)
        grid[key.strip()] = [_parse_value(v.strip()) for v in values.split("|")]
    return grid


def load_members(ctx, corpus_name, members, k, seed, no_progress):
    """(corpus, engine, {label: MemberRun}) with the members' CV run or reused.
    With --folds left at its default and the members cached for one other k
    only, that CV is reused (and said); otherwise a new k-fold CV is said."""
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation, label_warnings
    from ..ensemble.caching import resolve_members

    specs, ensembles, order = parse_members(members)
    ws = workspace_of(ctx)
    corpus = ws.load(corpus_name)
    warn = lambda msg: click.echo(f"warning: {msg}", err=True)  # noqa: E731
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
    cached = engine.cached_fold_counts(specs) if specs else [k]
    if k not in cached and cached:
        others = cached
        default_k = ctx.get_parameter_source("k") == click.core.ParameterSource.DEFAULT
        if len(others) == 1 and default_k:
            click.echo(f"note: reusing the members' cached {others[0]}-fold CV (--folds {others[0]}); "
                       f"pass --folds {k} to compute a {k}-fold CV instead", err=True)
            engine = CrossValidation(corpus.train, {"test": corpus.test}, engine.cache, k=others[0], seed=seed)
        elif others:
            click.echo(f"note: the members are cached for {', '.join(map(str, others))}-fold CV, not {k}-fold: "
                       f"computing a {k}-fold CV (--folds {others[0]} reuses the cache)", err=True)
    for msg in engine.split_warnings():
        warn(msg)
    if "dev" in corpus.splits:
        click.echo(f"note: corpus {corpus.name!r} has a dev split; cross-validation and the ensembles use the "
                   "train and test splits only", err=True)
    runs = resolve_members(engine, specs, ensembles, order, progress=not no_progress, on_corrupt=warn)
    for msg in label_warnings({s.label: runs[s.label] for s in specs}, corpus.train, f"corpus {corpus.name!r}"):
        warn(msg)
    return corpus, engine, runs


def member_rows(runs, corpus):
    from ..studies.summary import strict_prf

    rows = []
    for label, run in runs.items():
        cv = strict_prf(corpus.train, run.oof)
        test = strict_prf(corpus.test, run.test)
        rows.append([label, *cv, *test])
    return rows


SCORE_HEADERS = ["system", "CV P", "CV R", "CV F1", "test P", "test R", "test F1"]


@click.command("ensemble")
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus name.")
@click.option("--method", required=True, type=SuggestingChoice(METHOD_NAMES), help="Ensemble method.")
@click.option("--members", required=True, help="Comma-separated member taggers (as for cv --taggers), or "
              "ensemble.<method>[:hash=<prefix>] for an ensemble already cached.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Fix a method parameter (repeatable).")
@click.option("--grid", "grid", multiple=True, metavar="KEY=V1|V2", help="Values cross-validation chooses from "
              "(repeatable; replaces the method's default grid).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the members' CV and of the selection (grouped by patient).")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment.")
@objective_option()
@click.option("--nested", is_flag=True, help="Also estimate the whole selection by nested CV (k times the cost); the ensemble's own OOF predictions then choose inside each fold.")
@click.option("--no-oof", is_flag=True, help="Do not compute the ensemble's own out-of-fold predictions (it then cannot be a member).")
@click.option("--refit", is_flag=True, help="Recompute even when the ensemble's predictions are cached.")
@click.option("--diagnostics/--no-diagnostics", default=True, help="Print the oracle, pairwise agreement and marginal contributions (test split).")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def ensemble(ctx, corpus_name, method, members, params, grid, k, seed, objective, nested, no_oof, refit, diagnostics, no_progress):
    """Fit an ensemble METHOD on the members' out-of-fold predictions over the
    training set (hyperparameters chosen by k-fold CV), predict the test
    split, score it (strict micro), and cache its predictions as
    ``ensemble.<method>``. Members missing from the cache are computed first.
    """
    from ..ensemble import GridSearch, make_method

    fixed = parse_params(params, "--param")
    grid_ = parse_grid(grid)
    try:
        learner = GridSearch(make_method(method, **fixed), grid_, folds=k, seed=seed, objective=objective, nested=nested,
                             fixed=tuple(fixed))
        learner.validate_params()  # bad or conflicting values fail before any member is computed
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--grid" if "search" in str(exc) else "--param")
    n_members = len(parse_members(members)[2])
    thresholds = [fixed.get("threshold")] + list((grid_ or {}).get("threshold", []))
    too_high = [t for t in thresholds if isinstance(t, int) and t > n_members]
    if method.startswith("voting") and too_high:  # no span could get that many votes
        raise click.BadParameter(f"threshold {too_high[0]} exceeds the number of members ({n_members})",
                                 param_hint="--param" if fixed.get("threshold") in too_high else "--grid")
    with fail_on_error():
        corpus, engine, runs = load_members(ctx, corpus_name, members, k, seed, no_progress)
        learner.set_params(folds=engine.k)  # the members' cached CV may have been reused
        result = run_ensemble(engine, learner, method, runs, refit=refit, oof=not no_oof,
                              echo=lambda s: click.echo(s, err=True))
    report(corpus, engine, runs, result, method, learner, diagnostics)


def run_ensemble(engine, learner, method, runs, refit=False, oof=True, echo=print):
    """Fit/predict/cache (or reuse) an ensemble; returns a dict with its
    test and OOF predictions, the entry, the test part's record
    (``test_record``: fit and predict seconds, peak memory) and the selection
    record (``record``)."""
    import time

    from ..ensemble.caching import ensemble_entry, ensemble_parts, jsonable, part_metadata
    from ..ensemble.objective import parse_objective
    from ..ensemble.selection import fold_predictions
    from ..experiment.cv import PeakMemory

    train, test = engine.train, engine.targets["test"]
    # operating_point=None (the method's own rule, all earlier versions did) stays out of the key:
    # entries cached before it existed stay valid.
    params = {k: v for k, v in learner.estimator.get_params().items() if not (k == "operating_point" and v is None)}
    settings = {"params": params, "grid": learner.param_grid, "folds": learner.folds,
                "seed": learner.seed, "metric": learner.objective, "nested": learner.nested}  # key kept: same entries
    if learner.fixed:  # only then: entries cached without fixed parameters keep their key
        settings["fixed"] = sorted(learner.fixed)
    entry = ensemble_entry(method, settings, runs, engine.train_fingerprint)
    cache = engine.cache
    description = {"tagger_label": f"ensemble.{method}", "params": jsonable(settings["params"]),
                   "settings": jsonable(settings), "members": list(runs), "external": False}
    test_part, oof_parts = ensemble_parts(engine, entry)
    members_oof = {label: run.oof for label, run in runs.items()}
    members_test = {label: run.test for label, run in runs.items()}
    out = {"entry": entry, "oof": None, "computed": []}

    if refit or cache.part_status(test_part) != "valid":
        echo(f"fitting {method} on {len(train)} training documents ({len(runs)} members)")
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            learner.fit(members_oof, train)
            t1 = time.perf_counter()
            preds = learner.predict(members_test, test)
            t2 = time.perf_counter()
        record = {
            "best_params": learner.best_params_, "best_score": learner.best_score_,
            "params": learner.chosen_params(), "fixed": sorted(learner.fixed),
            "cv_results": [r.to_dict() for r in learner.cv_results_], "fits": learner.fits_,
            "members": list(runs), "objective": learner.objective,
        }
        if learner.operating_search_ is not None:  # the held-out curve of the chosen setting
            op = learner.operating_search_
            record["operating_point"] = {"chosen": op.chosen, "reached": op.reached,
                                         "curve": op.curve(parse_objective(learner.objective).base.criterion)}
        if learner.nested:
            n = learner.nested_
            record["nested"] = {"tp": n.tp, "fp": n.fp, "fn": n.fn, "score": n.score, "chosen": n.chosen,
                                "fits": n.fits, "seconds": round(n.seconds, 2)}
        record.update(_learned(learner.best_estimator_))
        # The entry is made only once there is something to put in it: a fit
        # that fails leaves no empty entry behind.
        cache.ensure_entry(entry, description)
        cache.write_part(test_part, preds, test, part_metadata(f"ensemble.{method}", learner.get_params(), t2 - t0, {
            "selection": jsonable(record), "fit_seconds": round(t1 - t0, 4), "predict_seconds": round(t2 - t1, 4),
            "peak_rss_mb": round(mem.peak, 1)}))
        out["computed"].append("test")
    test_preds, test_record = cache.read_part(test_part)
    out["test"], out["test_record"], out["record"] = test_preds, test_record, test_record.get("selection", {})

    if oof:
        missing = [p for p in oof_parts if refit or cache.part_status(p) != "valid"]
        if missing:
            best = dict(out["record"].get("best_params") or {})
            # Nested: choose inside each fold (honest); else refit the choice made on all folds.
            estimator = (learner.clone().set_params(nested=False) if learner.nested
                         else learner.estimator.clone().set_params(**best))
            echo(f"{method}: out-of-fold predictions ({engine.k} folds"
                 f"{', selection inside each fold' if learner.nested else ''})")
            t0 = time.perf_counter()
            by_fold = fold_predictions(estimator, members_oof, train, engine.folds)
            seconds = time.perf_counter() - t0
            docs_by_id = {d.id: d for d in train}
            cache.ensure_entry(entry, description)
            for f, part in enumerate(oof_parts):
                preds = by_fold.get(f, [])
                cache.write_part(part, preds, [docs_by_id[p.doc_id] for p in preds],
                                 part_metadata(f"ensemble.{method}", estimator.get_params(), seconds / engine.k,
                                               {"fold": f}))
            out["computed"].append("oof")
        oof_preds = {}
        for part in oof_parts:
            oof_preds.update(cache.read_part(part)[0])
        out["oof"] = oof_preds
    return out


def _learned(model) -> dict:
    """Small learned facts worth recording (pruned subset, threshold)."""
    out = {}
    for attr in ("threshold_", "subset_"):
        if hasattr(model, attr):
            out[attr.rstrip("_")] = getattr(model, attr)
    if hasattr(model, "search_"):
        out["elimination"] = {t: [list(s) for s in p.steps] for t, p in model.search_.paths.items()}
        out["reached"] = model.search_.reached
    if getattr(model, "operating_point_", None):
        out["category_thresholds"] = model.operating_point_
    return out


def report(corpus, engine, runs, result, method, learner, diagnostics):
    from ..studies.summary import strict_prf
    from ..studies.table import render_table

    record = result["record"]
    entry = result["entry"]
    label = f"ensemble.{method}"
    rows = member_rows(runs, corpus)
    cv = strict_prf(corpus.train, result["oof"]) if result["oof"] else (None, None, None)
    rows.append([label, *cv, *strict_prf(corpus.test, result["test"])])
    click.echo(f"\ncorpus {corpus.name!r}: {engine.k}-fold CV (folds {engine.folds.fingerprint}); "
               f"{label} cached as {label}:hash={entry.param_hash[:8]} "
               f"({'computed ' + ' and '.join(result['computed']) if result['computed'] else 'reused'})")
    click.echo(render_table(SCORE_HEADERS, rows))
    best_member = max(rows[:-1], key=lambda r: r[3])
    click.echo(f"\nbest single member by CV F1: {best_member[0]} (test F1 {best_member[6]:.4f}); "
               f"ensemble test F1 {rows[-1][6]:.4f} ({rows[-1][6] - best_member[6]:+.4f})")
    objective = record.get("objective", record.get("metric", learner.objective))
    if record.get("best_params"):
        click.echo(f"chosen parameters: {record['best_params']} by {learner.folds}-fold CV on {objective}")
    else:
        click.echo("chosen parameters: (none to choose: no values searched)")
    if record.get("params") is not None:
        fixed = set(record.get("fixed", ()))
        click.echo("parameters used: " + (", ".join(
            f"{k}={v!r}{' (fixed)' if k in fixed else ''}" for k, v in record["params"].items()
            if not (k == "operating_point" and v is None)) or "(none)"))  # None: the method's own rule
    if record.get("threshold") is not None:
        click.echo(f"pruned voting: threshold {record['threshold']}, members {', '.join(record.get('subset', []))}"
                   + (f"; per-category thresholds {record['category_thresholds']}"
                      if record.get("category_thresholds") else "")
                   + ("" if record.get("reached", True) else
                      f"; the target of {objective} was NOT reached on the training out-of-fold data: "
                      "the closest result was kept"))
    if record.get("cv_results"):
        cv_rows = [[", ".join(f"{k}={v}" for k, v in r["params"].items()), r["tp"], r["fp"], r["fn"], r["score"]]
                   for r in record["cv_results"]]
        click.echo(render_table(["setting", "TP", "FP", "FN", objective], cv_rows))
    point = record.get("operating_point")
    if point:
        missed = [k if k != "*" else "the whole output" for k, ok in point["reached"].items() if not ok]
        click.echo(f"operating point: {point['chosen'] or 'the method’s own rule'} by {learner.folds}-fold CV on "
                   f"{objective}" + (f"; target NOT reached on the out-of-fold data for {', '.join(missed)}: "
                                     "the closest point was taken" if missed else ""))
    if record.get("nested"):
        n = record["nested"]
        click.echo(f"nested CV estimate ({objective}): {n['score']:.4f} from {n['fits']} fits in "
                   f"{n['seconds']} s; choices per outer fold: {n['chosen']}")
    click.echo(leak_report(corpus, runs, result["test"]))
    if diagnostics:
        click.echo(diagnostics_report(runs, corpus))


def leak_report(corpus, runs, ensemble_test, label: str = "ensemble") -> str:
    """Leak-first view of the test split: token leak rates (95% document-bootstrap
    intervals) of the ensemble and every member, per category, and the
    members' oracle recall as the ceiling."""
    from ..studies.leaks import OVERALL, leak_rates, oracle_token_recall
    from ..studies.table import render_table

    systems = {label: ensemble_test, **{name: run.test for name, run in runs.items()}}
    rates = {name: leak_rates(corpus.test, preds) for name, preds in systems.items()}
    cats = sorted({c for r in rates.values() for c in r if c != OVERALL})
    rows = []
    for name, r in rates.items():
        a = r[OVERALL] if OVERALL in r else None
        rows.append([name, "" if a is None else f"{a.rate:.4f}",
                     "" if a is None else f"{a.low:.4f}-{a.high:.4f}",
                     *(f"{r[c].rate:.4f}" if c in r else "" for c in cats)])
    ceiling = oracle_token_recall(corpus.test, {name: run.test for name, run in runs.items()})
    return ("\nleaks (test): share of gold PHI tokens no predicted span covers, with 95% document-bootstrap "
            "intervals:\n" + render_table(["system", "token leak", "95% CI", *cats], rows)
            + f"\nceiling: the members together cover {ceiling:.4f} of the PHI tokens (binary-token recall of any member; "
              f"no ensemble of them leaks less than {1 - ceiling:.4f})")


def diagnostics_report(runs, corpus) -> str:
    """Oracle, marginal contributions and pairwise agreement on the test split."""
    from ..ensemble import best_threshold, build_candidates, marginal_contributions, oracle, pairwise_agreement
    from ..studies.table import render_table

    names = tuple(runs)
    train_table = build_candidates([runs[n].oof for n in names], names, corpus.train)
    table = build_candidates([runs[n].test for n in names], names, corpus.test)
    rank = train_table.member_rank()
    t = best_threshold(train_table, rank)
    o = oracle(table)
    lines = [f"\noracle (test): {o.found}/{o.n_gold} gold spans found by some member: recall {o.recall:.4f}, "
             f"F1 {o.f1:.4f}"]
    rows = [[c.member, c.f1, c.unique_true, c.unique_false, c.delta]
            for c in marginal_contributions(table, t, rank)]
    lines.append(f"marginal contributions (test; delta = F1 of voting at t={t} with all members minus without it):")
    lines.append(render_table(["member", "F1", "only it right", "only it wrong", "delta F1"], rows))
    jac, dfault = pairwise_agreement(table)
    short = [f"[{i}]" for i in range(len(names))]
    lines.append("pairwise agreement (test; upper: span Jaccard, lower: double fault):")
    grid = []
    for i, n in enumerate(names):
        row = [f"[{i}] {n}"]
        for j in range(len(names)):
            row.append("" if i == j else (jac[i, j] if j > i else dfault[i, j]))
        grid.append(row)
    lines.append(render_table(["member", *short], grid))
    return "\n".join(lines)
