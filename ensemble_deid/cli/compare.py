"""``ensemble-deid compare``: paired significance tests between systems."""
from __future__ import annotations

import click

from .common import fail_on_error, workspace_of


@click.command()
@click.argument("systems", nargs=-1, required=True)
@click.option("--corpus", "corpus_name", required=True, help="Corpus whose test split the systems are compared on.")
@click.option("--criterion", default="strict", help="Evaluation criterion scored per document (see 'evaluate --help').")
@click.option("--test", "tests", multiple=True, type=click.Choice(["t-test", "randomization", "bootstrap"]),
              default=("t-test", "randomization", "bootstrap"), help="Paired test(s) to run; repeat the option for several.")
@click.option("--trials", type=click.IntRange(min=100), default=10_000, help="Randomization swaps / bootstrap resamples.")
@click.option("--reference", default="best", help="System the others are tested against: a system name, or 'best' (highest F1).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the cached cross-validation runs.")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment and of the resampling tests.")
@click.option("--jobs", type=int, default=1, help="Parallel jobs for predictions missing from the cache.")
@click.pass_context
def compare(ctx, systems, corpus_name, criterion, tests, trials, reference, k, seed, jobs):
    """Score SYSTEMS (tagger specs, e.g. crf memm:c=0.5, or cached ensembles,
    e.g. ensemble.voting-pruned[:hash=PREFIX]) on the test split and test
    each against the reference with paired tests over test documents.

    P-values are Holm-corrected across the comparisons. Predictions missing
    from the cache are computed first (as 'cv' would).
    """
    from ..experiment.cache import PredictionCache
    from ..studies.comparison import compare_systems, comparison_rows
    from ..experiment.cv import CrossValidation
    from ..ensemble.caching import is_ensemble_spec, load_ensemble_member
    from ..studies.table import render_table
    from .cv import parse_tagger_specs

    from ..evaluation.criteria import get_criterion

    try:
        get_criterion(criterion)  # before any prediction is computed
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--criterion")
    ensembles = [s.strip() for s in systems if is_ensemble_spec(s)]
    regular = [s for s in systems if not is_ensemble_spec(s)]
    specs = parse_tagger_specs(",".join(regular), param_hint="SYSTEMS") if regular else []
    labels = [s.label for s in specs] + ensembles
    if len(set(labels)) < 2:
        raise click.BadParameter("name at least two different systems", param_hint="SYSTEMS")
    if reference not in ("best", *labels):
        raise click.BadParameter(f"{reference!r} is not one of the systems {labels} (or 'best')", param_hint="--reference")
    ws = workspace_of(ctx)
    with fail_on_error():
        corpus = ws.load(corpus_name)
        engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
        runs = engine.run(specs, jobs=jobs, progress=True) if specs else {}
        predictions = {label: run.targets["test"] for label, run in runs.items()}
        for text in ensembles:
            predictions[text] = load_ensemble_member(engine, text, oof=False).test
        try:
            comp = compare_systems(corpus.test, {label: predictions[label] for label in labels},
                                   criterion=criterion, reference=reference, tests=tests, trials=trials, seed=seed)
        except ValueError as exc:
            raise click.BadParameter(str(exc))
    (score_headers, scores), (test_headers, test_rows) = comparison_rows(comp, tests)
    click.echo(f"\n{criterion} micro scores on {len(corpus.test)} test documents of {corpus_name!r}")
    click.echo(render_table(score_headers, scores))
    click.echo(f"\npaired tests over documents against {comp.reference!r}; Holm: corrected across them")
    click.echo(render_table(test_headers, test_rows, align="llrrl"))
