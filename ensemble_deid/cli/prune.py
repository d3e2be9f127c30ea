"""``ensemble-deid prune``: greedy backward elimination of voting members."""
from __future__ import annotations

import shutil

import click

from .common import fail_on_error, fill, left_default, objective_option, short_names, workspace_of
from .front import check_plot_path, cost_options, find_point, front_report


def _threshold(value: str):
    if value == "auto":
        return None
    try:
        t = int(value)
    except ValueError:
        raise click.BadParameter(f"expected a positive integer or 'auto', got {value!r}", param_hint="--threshold")
    if t < 1:
        raise click.BadParameter("must be at least 1", param_hint="--threshold")
    return t


@click.command("prune")
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus name.")
@click.option("--members", required=True, help="Comma-separated member taggers (as for cv --taggers), or ensemble.<method>[:hash=<prefix>].")
@click.option("--threshold", default="auto", help="Voting threshold N, or 'auto' to search every threshold 1..m.")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the members' CV (grouped by patient).")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment.")
@objective_option("the elimination")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="A voting-pruned variant (repeatable): "
              "removal_ties=worse|earliest, overlap=greedy|chain (see docs/ensembles.md).")
@click.option("--all-paths", is_flag=True, help="Print the elimination path of every threshold, not only the chosen one.")
@cost_options
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def prune(ctx, corpus_name, members, threshold, k, seed, objective, params, all_paths, budget, show_front, front_plot,
          no_progress):
    """Voting pruned by greedy backward elimination [KIM20] on the members'
    out-of-fold predictions over the training set: for each threshold, drop
    the member whose removal most improves the training score until none
    does; print the path of eliminations and the chosen (threshold, subset),
    then score that choice on the test split. With --budget, every member
    subset whose summed inference cost fits the budget is scored instead and
    the best kept."""
    from ..ensemble.budget import check_budget
    from ..ensemble.run import (cost_points, load_members, parse_params, prune_members, pruning_objective,
                                pruning_variant, resolve_costs)
    from ..experiment.cost import format_cost
    from ..studies.report import alias_notes
    from ..studies.summary import strict_prf
    from ..studies.table import render_table, terminal_table

    t = _threshold(threshold)
    check_plot_path(front_plot)
    say = lambda s: click.echo(s, err=True)  # noqa: E731
    with fail_on_error():
        variant = pruning_variant(parse_params(params, "--param"))
        objective = pruning_objective(objective)
        budget = check_budget(budget)
        corpus, engine, runs = load_members(workspace_of(ctx), corpus_name, members,
                                            None if left_default(ctx, "k") else k, seed, not no_progress, say,
                                            lambda msg: say(f"warning: {msg}"))
        if budget is not None or show_front or front_plot:
            resolve_costs(engine, runs, say)
        done = prune_members(corpus, runs, t, objective, variant, budget)
    names, table, rank, search = done.names, done.table, done.rank, done.search
    f1 = table.member_f1()
    cost = {n: runs[n].cost for n in names}
    width = shutil.get_terminal_size((80, 24)).columns
    say = lambda text: click.echo(fill(text, width))  # noqa: E731
    # Member specs too long for the table's "members kept" column (what is left of
    # the width beside the other columns' 44) by their aliases, said once here: the
    # published MEDDOCAN specs folded mid-word there and made the tie-break line
    # 523 characters long (issue 53 item 9).
    shown: set[str] = set()
    legend = alias_notes(names, width, shown) if max(map(len, names)) > width - 44 else []
    name = short_names(list(names), shown)
    if variant:
        say("variant: " + ", ".join(f"{key}={value}" for key, value in variant.items()))
    click.echo()
    say(f"{len(names)} members, tie-break order by out-of-fold F1 (inference cost, CPU s per million "
        "tokens): " + ", ".join(f"{name[names[j]]} ({f1[j]:.4f}, {format_cost(cost[names[j]])})"
                                for j in sorted(range(len(names)), key=lambda j: rank[j])))
    if legend:
        click.echo("\n".join(legend))
    if budget is not None:
        say(f"budget: {budget:g} CPU s per million tokens: every member subset within it scored "
            f"({len(search.points):,} (threshold, subset) points)")
    metric = search.metric  # the objective's canonical name

    def subset_cost(subset) -> str:
        known = [cost[n] for n in subset]
        return format_cost(None if None in known else sum(known))

    rows = [[p.threshold, p.start_score, p.score, len(p.subset), subset_cost(p.subset),
             ", ".join(name[n] for n in p.subset)] for p in search.paths.values()]
    # Fitted to the terminal, the member lists folding: twelve published MEDDOCAN specs
    # made each row 523 columns wide (the fresh-clone walk, issue 34 item 8).
    click.echo(terminal_table(["t", f"all members {metric}", f"pruned {metric}", "kept", "cost", "members kept"],
                              [[r[0], f"{r[1]:.4f}", f"{r[2]:.4f}", *r[3:]] for r in rows], align="rrrrrl", wrap=(5,)))
    for p in search.paths.values():
        if (all_paths or p.threshold == search.threshold) and budget is None:
            click.echo(f"\nelimination path at t={p.threshold} (training {metric}, out-of-fold):")
            steps = [[0, "(all members)", p.start_score]] + [[i + 1, name[m], score] for i, (m, score) in enumerate(p.steps)]
            click.echo(render_table(["step", "removed", metric], steps))
    click.echo()
    say(f"chosen: t={search.threshold}, {len(search.subset)} member(s): {', '.join(name[n] for n in search.subset)} "
        f"(training {metric} {search.score:.4f}; cost {subset_cost(search.subset)})"
        + ("" if search.reached else "; the target was NOT reached on the training out-of-fold data: "
           "this is the closest result"))
    say(f"search: {search.evaluations} subset evaluations in {done.search_seconds:.2f} s "
        f"(candidate table of {len(table):,} spans built in {done.table_seconds:.2f} s)")

    p_, r_, f_ = strict_prf(corpus.test, done.test_predictions)
    best = names[int(rank.argmin())]
    say(f"test (strict): pruned voting P {p_:.4f} R {r_:.4f} F1 {f_:.4f}; best single member by CV "
        f"({name[best]}) F1 {strict_prf(corpus.test, runs[best].test)[2]:.4f}")
    if show_front or front_plot:
        with fail_on_error():
            points = search.points or cost_points(table, rank, cost, objective, variant.get("overlap", "greedy"),
                                                option="--front")
        chosen = find_point(points, search.threshold, search.subset)
        text = front_report(points, chosen, metric, budget, front_plot,
                            f"Pareto front of {metric} and inference cost ({corpus.name}, training out-of-fold)")
        click.echo("\n" + (text if show_front else text.rsplit("\n", 1)[-1]))
