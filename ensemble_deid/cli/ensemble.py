"""``ensemble-deid ensemble``: fit an ensemble on cached member predictions,
predict the test split, score it, and cache its own predictions."""
from __future__ import annotations

import click

from .common import SuggestingChoice, fail_on_error, left_default, objective_option, workspace_of
from .front import check_plot_path, cost_options, find_point, front_report

METHOD_NAMES = ("voting", "voting-pruned", "decision-templates", "stacked-svm", "stacked-searn", "stacked-lstm")


def member_rows(runs, corpus):
    from ..experiment.cost import format_cost
    from ..studies.summary import strict_prf

    rows = []
    for label, run in runs.items():
        cv = strict_prf(corpus.train, run.oof)
        test = strict_prf(corpus.test, run.test)
        rows.append([label, *cv, *test, format_cost(run.cost)])
    return rows


def ensemble_cost(runs, record) -> float | None:
    """What the ensemble costs to apply: the summed inference cost of the
    members it runs (the kept ones of pruned voting, else all); None when one is unknown."""
    kept = record.get("subset") or list(runs)
    costs = [runs[n].cost for n in kept if n in runs]
    return None if len(costs) < len(kept) or None in costs else sum(costs)


SCORE_HEADERS = ["system", "CV P", "CV R", "CV F1", "test P", "test R", "test F1", "cost"]


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
@cost_options
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def ensemble(ctx, corpus_name, method, members, params, grid, k, seed, objective, nested, no_oof, refit, diagnostics,
             budget, show_front, front_plot, no_progress):
    """Fit an ensemble METHOD on the members' out-of-fold predictions over the
    training set (hyperparameters chosen by k-fold CV), predict the test
    split, score it (strict micro), and cache its predictions as
    ``ensemble.<method>``. Members missing from the cache are computed first.
    --budget (voting-pruned) keeps only member subsets whose summed inference
    cost fits it; the cost column is CPU seconds per million tokens.
    """
    from ..ensemble.run import parse_grid, parse_params, run_method

    check_plot_path(front_plot)
    if (show_front or front_plot) and method != "voting-pruned":
        raise click.BadParameter("the front is over the member subsets of pruned voting: use --method voting-pruned "
                                 "(or the prune command)", param_hint="--front")
    say = lambda s: click.echo(s, err=True)  # noqa: E731
    with fail_on_error():
        done = run_method(workspace_of(ctx), corpus_name, method, members, parse_params(params), parse_grid(grid),
                          folds=None if left_default(ctx, "k") else k, seed=seed, objective=objective, nested=nested,
                          oof=not no_oof, refit=refit, progress=not no_progress, log=say,
                          warn=lambda msg: say(f"warning: {msg}"), budget=budget)
    report(done.corpus, done.engine, done.runs, done.result, method, done.learner, diagnostics)
    if show_front or front_plot:
        click.echo("\n" + method_front(done, show_front, front_plot, say))


def method_front(done, show_front: bool, plot, say) -> str:
    """The Pareto front of pruned voting over the members' training
    out-of-fold predictions, the subset and threshold the ensemble chose marked."""
    from ..ensemble.candidates import build_candidates
    from ..ensemble.objective import parse_objective
    from ..ensemble.run import cost_points, resolve_costs

    record = done.result["record"]
    params = record.get("params") or {}
    names = tuple(done.runs)
    with fail_on_error():
        resolve_costs(done.engine, done.runs, say)
        table = build_candidates([done.runs[n].oof for n in names], names, done.corpus.train)
        metric = str(parse_objective(record.get("objective", done.learner.objective)).base)
        points = cost_points(table, table.member_rank(), {n: done.runs[n].cost for n in names}, metric,
                             params.get("overlap", "greedy"), params.get("budget"), option="--front")
    chosen = find_point(points, record.get("threshold"), record.get("subset") or ())
    text = front_report(points, chosen, metric, params.get("budget"), plot,
                        f"Pareto front of {metric} and inference cost ({done.corpus.name}, training out-of-fold)")
    return text if show_front else text.rsplit("\n", 1)[-1]


def report(corpus, engine, runs, result, method, learner, diagnostics):
    from ..experiment.cost import format_cost
    from ..studies.summary import strict_prf
    from ..studies.table import render_table

    record = result["record"]
    entry = result["entry"]
    label = f"ensemble.{method}"
    rows = member_rows(runs, corpus)
    cv = strict_prf(corpus.train, result["oof"]) if result["oof"] else (None, None, None)
    rows.append([label, *cv, *strict_prf(corpus.test, result["test"]), format_cost(ensemble_cost(runs, record))])
    click.echo(f"\ncorpus {corpus.name!r}: {engine.k}-fold CV (folds {engine.folds.fingerprint}); "
               f"{label} cached as {label}:hash={entry.param_hash[:8]} "
               f"({'computed ' + ' and '.join(result['computed']) if result['computed'] else 'reused'})")
    click.echo(render_table(SCORE_HEADERS, rows, align="lrrrrrrr"))
    click.echo("cost: inference cost, CPU seconds per million tokens (recorded prediction times; an ensemble: "
               "its members' sum)")
    best_member = max(rows[:-1], key=lambda r: r[3])
    click.echo(f"\nbest single member by CV F1: {best_member[0]} (test F1 {best_member[6]:.4f}); "
               f"ensemble test F1 {rows[-1][6]:.4f} ({rows[-1][6] - best_member[6]:+.4f})")
    objective = record.get("objective", record.get("metric", learner.objective))
    if record.get("best_params"):
        click.echo(f"chosen parameters: {record['best_params']} by {learner.folds}-fold CV on {objective}")
    else:
        click.echo("chosen parameters: (none to choose: no values searched)")
    if record.get("params") is not None:
        from ..ensemble.run import key_params

        fixed = set(record.get("fixed", ()))
        # The members' costs are in the table's cost column; None: the method's own rule.
        click.echo("parameters used: " + (", ".join(
            f"{k}={v!r}{' (fixed)' if k in fixed else ''}" for k, v in key_params(record["params"]).items()
            if k != "costs") or "(none)"))
    if record.get("threshold") is not None:
        click.echo(f"pruned voting: threshold {record['threshold']}, members {', '.join(record.get('subset', []))}"
                   + (f"; cost {record['cost']:,.1f} within the budget of {record['budget']:g}"
                      if record.get("budget") is not None else "")
                   + (f"; per-category thresholds {record['category_thresholds']}"
                      if record.get("category_thresholds") else "")
                   + ("" if record.get("reached", True) else
                      f"; the target of {objective} was NOT reached on the training out-of-fold data: "
                      "the closest result was kept"))
    if record.get("trusted"):
        from ..ensemble.trust import describe_pairs

        click.echo(f"trusted members at trust {record.get('trust')} (their spans of these labels kept where the "
                   "ensemble leaves O or tags only part of them): " + describe_pairs(record["trusted"]))
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
    """Leak-first view of the test split, in tables that fit 80 columns: F1
    beside the entity and token leak rates (95% document-bootstrap intervals)
    of the ensemble and every member, and the members' union as the ceiling;
    then the token leak per category of the ensemble and of the union."""
    import textwrap

    from ..studies.leaks import OVERALL, category_rows, leak_rows, leak_table, oracle_token_recall, union_spans
    from ..studies.summary import prediction_spans, strict_prf
    from ..studies.table import render_table

    docs = corpus.test
    systems = {label: ensemble_test, **{name: run.test for name, run in runs.items()}}
    spans = {name: prediction_spans(docs, preds) for name, preds in systems.items()}
    tables = {name: leak_table(docs, s) for name, s in spans.items()}
    union = leak_table(docs, union_spans(docs, {n: spans[n] for n in runs}))
    f1 = {name: strict_prf(docs, preds)[2] for name, preds in systems.items()}
    headers, rows = leak_rows(tables, f1, union)
    cat_headers, cat_rows = category_rows({label: tables[label], "union (ceiling)": union})
    ceiling = oracle_token_recall(docs, {name: run.test for name, run in runs.items()})
    text = [
        "", "leaks (test): share of gold PHI entities and tokens no predicted span covers (%, 95% document-bootstrap "
        "interval); union (ceiling): every member span together, below which no ensemble of them leaks:",
        render_table(headers, rows, align="lrrr"), "", "token leak per category (%):",
        render_table(cat_headers, cat_rows, align="lrr"),
        f"ceiling: the members together cover {ceiling:.4f} of the PHI tokens exactly as tokens (binary-token "
        f"recall of the union; its token leak {union['token'][OVERALL].rate:.4f} counts partial cover too)"
        if OVERALL in union["token"] else "",
    ]
    return "\n".join(textwrap.fill(t, 80) if not t.startswith("|") else t for t in text)


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
