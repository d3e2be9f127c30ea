"""``ensemble-deid ensemble``: fit an ensemble on cached member predictions,
predict the test split, score it, and cache its own predictions."""
from __future__ import annotations

import click

from .common import SuggestingChoice, fail_on_error, left_default, objective_option, workspace_of

METHOD_NAMES = ("voting", "voting-pruned", "decision-templates", "stacked-svm", "stacked-searn", "stacked-lstm")


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
    from ..ensemble.run import parse_grid, parse_params, run_method

    say = lambda s: click.echo(s, err=True)  # noqa: E731
    with fail_on_error():
        done = run_method(workspace_of(ctx), corpus_name, method, members, parse_params(params), parse_grid(grid),
                          folds=None if left_default(ctx, "k") else k, seed=seed, objective=objective, nested=nested,
                          oof=not no_oof, refit=refit, progress=not no_progress, log=say,
                          warn=lambda msg: say(f"warning: {msg}"))
    report(done.corpus, done.engine, done.runs, done.result, method, done.learner, diagnostics)


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
    if record.get("trusted"):
        click.echo(f"trusted members at trust {record.get('trust')} (their spans of these labels kept where the "
                   "ensemble leaves O): " + ", ".join(f"{m} on {lab}" for m, lab in record["trusted"]))
    if record.get("cv_results"):
        cv_rows = [[", ".join(f"{k}={v}" for k, v in r["params"].items()), r["tp"], r["fp"], r["fn"], r["score"]]
                   for r in record["cv_results"]]
        click.echo(render_table(["setting", "TP", "FP", "FN", objective], cv_rows))
    point = record.get("operating_point")
    missed = [k for k, ok in (record.get("targets_reached") or {}).items() if not ok]
    if missed and not point:
        click.echo(f"target of {objective} NOT reached on the out-of-fold data"
                   + ("" if missed == ["*"] else f" for {', '.join(missed)}") + ": the closest setting was taken")
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
    members' union as the ceiling."""
    from ..studies.leaks import OVERALL, leak_rates, oracle_token_recall
    from ..studies.table import render_table

    systems = {label: ensemble_test, **{name: run.test for name, run in runs.items()}}
    rates = {name: leak_rates(corpus.test, preds) for name, preds in systems.items()}
    cats = sorted({c for r in rates.values() for c in r if c != OVERALL})
    rows = []
    for name, r in rates.items():
        a = r.get(OVERALL)
        rows.append([name, "" if a is None else f"{a.rate:.4f}", "" if a is None else f"{a.low:.4f}-{a.high:.4f}",
                     *(f"{r[c].rate:.4f}" if c in r else "" for c in cats)])
    ceiling = oracle_token_recall(corpus.test, {name: run.test for name, run in runs.items()})
    return ("\nleaks (test): share of gold PHI tokens no predicted span covers, with 95% document-bootstrap "
            "intervals:\n" + render_table(["system", "token leak", "95% CI", *cats], rows)
            + f"\nceiling: the members together cover {ceiling:.4f} of the PHI tokens (binary-token recall of "
              f"any member; no ensemble of them leaks less than {1 - ceiling:.4f})")


def diagnostics_report(runs, corpus) -> str:
    """Oracle, marginal contributions and pairwise agreement on the test split."""
    from ..ensemble import member_diagnostics
    from ..studies.table import render_table

    names = tuple(runs)
    diag = member_diagnostics({n: runs[n].oof for n in names}, corpus.train, {n: runs[n].test for n in names}, corpus.test)
    o, t = diag.oracle, diag.threshold
    lines = [f"\noracle (test): {o.found}/{o.n_gold} gold spans found by some member: recall {o.recall:.4f}, "
             f"F1 {o.f1:.4f}"]
    rows = [[c.member, c.f1, c.unique_true, c.unique_false, c.delta] for c in diag.contributions]
    lines.append(f"marginal contributions (test; delta = F1 of voting at t={t} with all members minus without it):")
    lines.append(render_table(["member", "F1", "only it right", "only it wrong", "delta F1"], rows))
    jac, dfault = diag.jaccard, diag.double_fault
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
