"""``ensemble-deid ensemble``: fit an ensemble on cached member predictions,
predict the test split, score it, and cache its own predictions."""
from __future__ import annotations

import click

from .common import SuggestingChoice, fail_on_error, fill, left_default, objective_option, short_names, workspace_of
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
    """Everything ``ensemble`` prints after the fit, every line within the
    terminal's width (80 when not a terminal): long member specs by their
    aliases, said once below the first table (issue 53 item 9)."""
    import shutil

    from ..experiment.cost import format_cost
    from ..studies.report import spec_table
    from ..studies.summary import strict_prf

    width = shutil.get_terminal_size((80, 24)).columns
    say = lambda text: click.echo(fill(text, width))  # noqa: E731
    record = result["record"]
    entry = result["entry"]
    label = f"ensemble.{method}"
    rows = member_rows(runs, corpus)
    cv = strict_prf(corpus.train, result["oof"]) if result["oof"] else (None, None, None)
    rows.append([label, *cv, *strict_prf(corpus.test, result["test"]), format_cost(ensemble_cost(runs, record))])
    click.echo()
    say(f"corpus {corpus.name!r}: {engine.k}-fold CV (folds {engine.folds.fingerprint}); "
        f"{label} cached as {label}:hash={entry.param_hash[:8]} "
        f"({'computed ' + ' and '.join(result['computed']) if result['computed'] else 'reused'})")
    # Fitted to the terminal, long member specs as aliases (the published MEDDOCAN
    # members made this table 112 columns wide: issue 34 item 8).
    shown: set[str] = set()
    click.echo(spec_table(SCORE_HEADERS, rows, "lrrrrrrr", shown=shown, notes=[
        "cost: inference cost, CPU seconds per million tokens (recorded prediction times; an ensemble: its "
        "members' sum)"]))
    name = short_names(list(runs), shown)
    best_member = max(rows[:-1], key=lambda r: r[3])
    click.echo()
    say(f"best single member by CV F1: {name[best_member[0]]} (test F1 {best_member[6]:.4f}); "
        f"ensemble test F1 {rows[-1][6]:.4f} ({rows[-1][6] - best_member[6]:+.4f})")
    objective = record.get("objective", record.get("metric", learner.objective))
    if record.get("best_params"):
        say(f"chosen parameters: {record['best_params']} by {learner.folds}-fold CV on {objective}")
    else:
        say("chosen parameters: (none to choose: no values searched)")
    if record.get("params") is not None:
        from ..ensemble.run import key_params

        fixed = set(record.get("fixed", ()))
        # The members' costs are in the table's cost column; None: the method's own rule.
        say("parameters used: " + (", ".join(
            f"{k}={v!r}{' (fixed)' if k in fixed else ''}"
            for k, v in key_params(record["params"]).items() if k != "costs") or "(none)"))
    if record.get("threshold") is not None:
        kept = record.get("subset", [])
        say(f"pruned voting: threshold {record['threshold']}, members {', '.join(name.get(m, m) for m in kept)}"
            + (f"; cost {record['cost']:,.1f} within the budget of {record['budget']:g}"
               if record.get("budget") is not None else "")
            + (f"; per-category thresholds {record['category_thresholds']}"
               if record.get("category_thresholds") else "")
            + ("" if record.get("reached", True) else
               f"; the target of {objective} was NOT reached on the training out-of-fold data: "
               "the closest result was kept"))
    if record.get("trusted"):
        from ..ensemble.trust import pairs_by_member

        say(f"trusted members at trust {record.get('trust')} (their spans of these labels kept where the "
            "ensemble leaves O or tags only part of them):")
        for member, labels in pairs_by_member(record["trusted"]):
            click.echo(fill(f"  {name.get(member, member)}: {', '.join(labels)}", width, indent="    "))
    if record.get("cv_results"):
        click.echo(selection_table(record["cv_results"], objective, record.get("best_params") or {}))
    point = record.get("operating_point")
    missed = [k for k, ok in (record.get("targets_reached") or {}).items() if not ok]
    if missed and not point:
        say(f"target of {objective} NOT reached on the out-of-fold data"
            + ("" if missed == ["*"] else f" for {', '.join(missed)}") + ": the closest setting was taken")
    if point:
        missed = [k if k != "*" else "the whole output" for k, ok in point["reached"].items() if not ok]
        say(f"operating point: {_point(point['chosen'])} by {learner.folds}-fold CV on {objective}"
            + (f"; target NOT reached on the out-of-fold data for {', '.join(missed)}: the closest point was taken"
               if missed else ""))
    if record.get("nested"):
        n = record["nested"]
        say(f"nested CV estimate ({objective}): {n['score']:.4f} from {n['fits']} fits in "
            f"{n['seconds']} s; choices per outer fold: {n['chosen']}")
    click.echo(leak_report(corpus, runs, result["test"], shown=shown))
    if diagnostics:
        click.echo(diagnostics_report(runs, corpus, shown=shown))


def selection_table(cv_results, objective: str, best_params) -> str:
    """The settings the selection compared, each at one operating point (the
    one where it scores best: the learner's own rule, or a decision threshold),
    with the precision and recall of the objective's criterion: for a recall
    objective, the recall it constrains beside the precision it maximises."""
    from ..ensemble.objective import parse_objective
    from ..studies.table import terminal_table

    base = parse_objective(objective).base
    crit = "" if base.criterion == "strict" else f"{base.criterion} "
    figures = [f"{crit}R", f"{crit}P"] + ([f"{crit}{str(base).rpartition(':')[2].upper()}"] if base.kind == "f" else [])
    chosen = {k: v for k, v in best_params.items() if k != "operating_point"}
    rows = []
    for r in cv_results:
        values = [r.get("recall"), r.get("precision")] + ([r.get("score")] if base.kind == "f" else [])
        rows.append([", ".join(f"{k}={v}" for k, v in r["params"].items()) + (" *" if r["params"] == chosen else ""),
                     _point(r["point"]) if "point" in r else "-", r["tp"], r["fp"], r["fn"],
                     *("-" if v is None else v for v in values)])
    what = (f"the highest {crit}P with {crit}R >= {base.bound:g} (or, where none reaches it, the highest {crit}R)"
            if base.kind == "recall>=" else
            f"the highest {crit}R with {crit}P >= {base.bound:g} (or, where none reaches it, the highest {crit}P)"
            if base.kind == "precision>=" else f"the highest {figures[-1] if base.kind == 'f' else figures[0]}")
    notes = [f"* chosen: {what}, on the pooled held-out folds; each setting at its best operating point ('own "
             "rule': the method's own decisions); TP, FP, FN: strict spans"]
    return terminal_table(["setting", "point", "TP", "FP", "FN", *figures], rows, "llrrr" + "r" * len(figures),
                          wrap=(0,), notes=notes)


def _point(point) -> str:
    """An operating point in a few characters ('own rule': the method's own decisions)."""
    if not point:
        return "own rule"
    if set(point) == {"*"}:
        return f"{point['*']:.4g}"
    return ", ".join(f"{k} {v:.4g}" for k, v in point.items())


def leak_report(corpus, runs, ensemble_test, label: str = "ensemble", shown: set[str] | None = None) -> str:
    """Leak-first view of the test split, in tables that fit 80 columns: F1
    beside the entity and token leak rates (95% document-bootstrap intervals)
    of the ensemble and every member, and the members' union as the ceiling;
    then the token leak per category of the ensemble and of the union."""
    import textwrap

    from ..studies.leaks import OVERALL, category_rows, leak_rows, leak_table, oracle_token_recall, union_spans
    from ..studies.report import spec_table
    from ..studies.summary import prediction_spans, strict_prf
    from ..studies.table import terminal_table

    docs = corpus.test
    systems = {label: ensemble_test, **{name: run.test for name, run in runs.items()}}
    spans = {name: prediction_spans(docs, preds) for name, preds in systems.items()}
    tables = {name: leak_table(docs, s) for name, s in spans.items()}
    union = leak_table(docs, union_spans(docs, {n: spans[n] for n in runs}))
    f1 = {name: strict_prf(docs, preds)[2] for name, preds in systems.items()}
    headers, rows = leak_rows(tables, f1, union)
    cat_headers, cat_rows = category_rows({label: tables[label], "union (ceiling)": union})
    ceiling = oracle_token_recall(docs, {name: run.test for name, run in runs.items()})
    prose = [
        "leaks (test): share of gold PHI entities and tokens no predicted span covers (%, 95% document-bootstrap "
        "interval); union (ceiling): every member span together, below which no ensemble of them leaks:",
        "token leak per category (%):",
        f"ceiling: the members together cover {ceiling:.4f} of the PHI tokens exactly as tokens (binary-token "
        f"recall of the union; its token leak {union['token'][OVERALL].rate:.4f} counts partial cover too)"
        if OVERALL in union["token"] else "",
    ]
    intro, per_category, note = (textwrap.fill(t, 80) for t in prose)
    return "\n".join(["", intro, spec_table(headers, rows, "lrrr", shown=shown), "", per_category,
                      terminal_table(cat_headers, cat_rows, "lrr"), note])


def diagnostics_report(runs, corpus, shown: set[str] | None = None) -> str:
    """Oracle, marginal contributions and pairwise agreement on the test split."""
    import shutil
    import textwrap

    from ..ensemble import member_diagnostics
    from ..studies.report import alias_notes, aliases, spec_table
    from ..studies.table import terminal_table

    width = shutil.get_terminal_size((80, 24)).columns
    names = tuple(runs)
    diag = member_diagnostics({n: runs[n].oof for n in names}, corpus.train, {n: runs[n].test for n in names}, corpus.test)
    o, t = diag.oracle, diag.threshold
    lines = ["", textwrap.fill(f"oracle (test): {o.found}/{o.n_gold} gold spans found by some member: recall "
                               f"{o.recall:.4f}, F1 {o.f1:.4f}", width)]
    rows = [[c.member, c.f1, c.unique_true, c.unique_false, c.delta] for c in diag.contributions]
    lines.append(textwrap.fill(f"marginal contributions (test; delta = F1 of voting at t={t} with all members minus "
                               "without it):", width))
    lines.append(spec_table(["member", "F1", "only it right", "only it wrong", "delta F1"], rows, "lrrrr",
                            shown=shown))
    jac, dfault = diag.jaccard, diag.double_fault
    lines.append("pairwise agreement (test; upper: span Jaccard, lower: double fault):")
    # Member i's row is "[i] name" (aliases where a spec is longer than 16 characters,
    # as folded cells are), its column "[i]"; twelve members are more columns than 80
    # fit: the columns in blocks, every value kept.
    aliased = aliases(names) if max(map(len, names)) > 16 else list(names)
    labels = [f"[{i}] {n}" for i, n in enumerate(aliased)]
    per_block = max(1, (width - max(map(len, labels)) - 2) // 8)
    for first in range(0, len(names), per_block):
        columns = range(first, min(first + per_block, len(names)))
        grid = [[label, *("" if i == j else (jac[i, j] if j > i else dfault[i, j]) for j in columns)]
                for i, label in enumerate(labels)]
        lines.append(terminal_table(["member", *(f"[{j}]" for j in columns)], grid, "l" + "r" * len(columns)))
    if aliased != list(names):
        lines += alias_notes(names, width, shown)
    return "\n".join(lines)
