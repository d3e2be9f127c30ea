"""``ensemble-deid fit``: train a tagger or an ensemble on a whole training set
and save it as a model bundle for ``deidentify``."""
from __future__ import annotations

import click

from .common import fail_on_error, left_default, objective_option, workspace_of
from .ensemble import METHOD_NAMES
from .front import BUDGET_HELP


DEFAULT_REVIEW = "recall>=0.998"  # fit's review budget unless told (none for stacked-lstm: k network fits)


@click.command("fit")
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus to train on (its train split).")
@click.option("--method", type=click.Choice(METHOD_NAMES), help="Ensemble method (chosen as 'ensemble' chooses it).")
@click.option("--members", help="Comma-separated member taggers (as for cv --taggers).")
@click.option("--tagger", "tagger_spec", help="Save a single tagger instead of an ensemble (a spec as for cv --taggers).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Fix a method parameter (repeatable).")
@click.option("--grid", "grid", multiple=True, metavar="KEY=V1|V2", help="Values cross-validation chooses from (repeatable).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the members' CV and of the selection.")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment.")
@objective_option()
@click.option("--budget", default=None, metavar="CPU_S_PER_M_TOKENS", help="With --method voting-pruned: "
              + BUDGET_HELP + " Only the chosen subset's members are fitted and saved.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="New folder for the model bundle.")
@click.option("--verify/--no-verify", default=True, help="Check that the bundle reproduces the cached test predictions "
              "of the 'ensemble' command (ensembles) and report its test scores.")
@click.option("--shareable", type=click.IntRange(min=2), metavar="K", help="With --tagger: train without the words "
              "found in fewer than K training documents of different patients (replaced by their shapes), so the bundle "
              "holds none of them.")
@click.option("--review", "review", default=None, metavar="BUDGET",
              help="With --method: the review budget, chosen by CV on the ensemble's own out-of-fold outputs and kept "
              "in the bundle (deidentify queues the readable spans most likely PHI): 'recall>=R' (review until "
              "binary-token recall R), 'items<=N' (each note's N riskiest) or 'none'. It costs k more ensemble fits; "
              f"default {DEFAULT_REVIEW}, none for stacked-lstm (k more network fits: ask for it).")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def fit(ctx, corpus_name, method, members, tagger_spec, params, grid, k, seed, objective, budget, out, verify,
        shareable, review, no_progress):
    """Fit every member on the whole training split and the ensemble METHOD on
    the members' cached out-of-fold predictions (exactly the choices the
    'ensemble' command makes; members missing from the cache are
    cross-validated first), then write one versioned, checksummed bundle to
    OUT. With --tagger, fit and save that one tagger."""
    from ..deid.fit import fit_ensemble, fit_tagger
    from ..ensemble.run import parse_grid, parse_params

    if tagger_spec and (method or members):
        raise click.UsageError("give either --tagger or --method with --members")
    if not tagger_spec and not (method and members):
        raise click.UsageError("give --method and --members (an ensemble) or --tagger (one tagger)")
    if budget is not None and tagger_spec:
        raise click.UsageError("--budget chooses an ensemble's members: give it with --method voting-pruned")
    if shareable and not tagger_spec:
        raise click.UsageError("--shareable applies to --tagger (an ensemble's members come from the cache)")
    if review is not None and tagger_spec:
        raise click.UsageError("--review needs an ensemble (--method): a single tagger has no members to weigh")
    if review is None:
        review = None if method == "stacked-lstm" else DEFAULT_REVIEW
    say = lambda s: click.echo(s, err=True)  # noqa: E731
    ws = workspace_of(ctx)
    with fail_on_error():
        if tagger_spec:
            done = fit_tagger(ws, corpus_name, tagger_spec, out, log=say, shareable=shareable)
        else:
            done = fit_ensemble(ws, corpus_name, method, members, out, parse_params(params), parse_grid(grid),
                                folds=None if left_default(ctx, "k") else k, seed=seed, objective=objective, verify=verify,
                                progress=not no_progress, log=say, warn=lambda msg: say(f"warning: {msg}"), budget=budget,
                                review=review)
    click.echo(done.summary)
