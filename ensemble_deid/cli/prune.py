"""``ensemble-deid prune``: greedy backward elimination of voting members."""
from __future__ import annotations

import click

from .common import fail_on_error, objective_option


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


def _variant(params: dict) -> dict:
    """The voting-pruned parameters --param may set, checked before any work."""
    from ..ensemble.pruning import PrunedVoting

    other = sorted(set(params) - {"removal_ties", "overlap"})
    if other:
        raise click.BadParameter(f"unknown parameter {other[0]!r}: --param sets removal_ties or overlap "
                                 "(the threshold and objective have their own options)", param_hint="--param")
    try:  # the method's own declared constraints
        PrunedVoting(**params).validate_params()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--param")
    return params


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
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def prune(ctx, corpus_name, members, threshold, k, seed, objective, params, all_paths, no_progress):
    """Voting pruned by greedy backward elimination [KIM20] on the members'
    out-of-fold predictions over the training set: for each threshold, drop
    the member whose removal most improves the training score until none
    does; print the path of eliminations and the chosen (threshold, subset),
    then score that choice on the test split."""
    import time

    from ..ensemble import build_candidates, pruning_search, vote_select
    from ..studies.summary import strict_prf
    from ..studies.table import render_table
    from .ensemble import load_members, parse_params

    t = _threshold(threshold)
    from ..ensemble.objective import parse_objective

    if parse_objective(objective).categories:  # said, not silently dropped
        raise click.BadParameter("per-category clauses choose thresholds after the elimination: use "
                                 "'ensemble --method voting-pruned --objective ...'", param_hint="--objective")
    variant = _variant(parse_params(params, "--param"))
    with fail_on_error():
        corpus, engine, runs = load_members(ctx, corpus_name, members, k, seed, no_progress)
    names = tuple(runs)
    if t is not None and t > len(names):
        raise click.BadParameter(f"{t} exceeds the number of members ({len(names)})", param_hint="--threshold")
    t0 = time.perf_counter()
    table = build_candidates([runs[n].oof for n in names], names, corpus.train)
    t1 = time.perf_counter()
    rank = table.member_rank()
    search = pruning_search(table, rank, None if t is None else [t], objective, **variant)
    t2 = time.perf_counter()

    f1 = table.member_f1()
    if variant:
        click.echo("variant: " + ", ".join(f"{key}={value}" for key, value in variant.items()))
    click.echo(f"\n{len(names)} members, tie-break order by out-of-fold F1: "
               + ", ".join(f"{names[j]} ({f1[j]:.4f})" for j in sorted(range(len(names)), key=lambda j: rank[j])))
    metric = search.metric  # the objective's canonical name
    rows = [[p.threshold, p.start_score, p.score, len(p.subset), ", ".join(p.subset)] for p in search.paths.values()]
    click.echo(render_table(["t", f"all members {metric}", f"pruned {metric}", "kept", "members kept"], rows))
    for p in search.paths.values():
        if all_paths or p.threshold == search.threshold:
            click.echo(f"\nelimination path at t={p.threshold} (training {metric}, out-of-fold):")
            steps = [[0, "(all members)", p.start_score]] + [[i + 1, name, score] for i, (name, score) in enumerate(p.steps)]
            click.echo(render_table(["step", "removed", metric], steps))
    click.echo(f"\nchosen: t={search.threshold}, {len(search.subset)} member(s): {', '.join(search.subset)} "
               f"(training {metric} {search.score:.4f})"
               + ("" if search.reached else "; the target was NOT reached on the training out-of-fold data: "
                  "this is the closest result"))
    click.echo(f"search: {search.evaluations} subset evaluations in {t2 - t1:.2f} s "
               f"(candidate table of {len(table):,} spans built in {t1 - t0:.2f} s)")

    test_table = build_candidates([runs[n].test for n in names], names, corpus.test)
    cols = [names.index(n) for n in search.subset]
    selected = vote_select(test_table, search.threshold, rank, cols, variant.get("overlap", "greedy"))
    test_preds = {p.doc_id: p for p in test_table.to_predictions(selected)}
    p_, r_, f_ = strict_prf(corpus.test, test_preds)
    best = names[int(rank.argmin())]
    click.echo(f"test (strict): pruned voting P {p_:.4f} R {r_:.4f} F1 {f_:.4f}; best single member by CV "
               f"({best}) F1 {strict_prf(corpus.test, runs[best].test)[2]:.4f}")
