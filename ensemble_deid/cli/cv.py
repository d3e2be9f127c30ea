"""``ensemble-deid cv``: fill the prediction cache by cross-validation."""
from __future__ import annotations

import click

from .common import connect_timeout_option, fail_on_error, workspace_of


@click.command()
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus name (see 'corpus ls').")
@click.option("--taggers", required=True, help="Comma-separated taggers, each optionally with parameters: crf:c1=0.05,max_iterations=50,rules.")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Number of cross-validation folds (grouped by patient).")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment.")
@click.option("--jobs", type=int, default=1, help="Parallel jobs; -1 uses every core.")
@click.option("--backend", type=click.Choice(["loky", "threading", "dask", "ray"]), default="loky", help="joblib backend running the (tagger, fold) jobs.")
@click.option("--scheduler", default=None, help="dask.distributed scheduler address (tcp://HOST:PORT) for --backend dask.")
@click.option("--address", default=None, metavar="ADDR", help="--backend ray: the cluster's head (HOST:PORT; default: "
              "$RAY_ADDRESS, else a Ray instance started for the run).")
@click.option("--target", "targets", multiple=True, metavar="CORPUS", help="Also predict this registered corpus's "
              "test split with the models trained on all of --corpus's training set (repeatable); cached as 'study' "
              "caches them, scored in the summary and per category.")
@click.option("--keep-models/--no-keep-models", default=True, show_default=True,
              help="Keep each tagger's model trained on the whole training set (the one predicting the test split) "
                   "in the workspace cache, so that 'fit' reuses it instead of training again; it holds words of the "
                   "training notes ('cache rm-models' deletes kept models).")
@connect_timeout_option
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def cv(ctx, corpus_name, taggers, k, seed, jobs, backend, scheduler, address, targets, keep_models, connect_timeout,
       no_progress):
    """Out-of-fold predictions on the training set and test-set predictions,
    for each tagger, computed once and kept in the prediction cache.

    What is cached already is reused, so an interrupted run resumes; corrupt
    cache parts are reported and recomputed. With --target B, the models
    trained on this corpus also predict B's test split (cross-corpus).
    """
    from ..experiment.cv import cross_validate
    from ..studies.summary import cv_summary_table

    ws = workspace_of(ctx)
    with fail_on_error():
        cluster = address if backend == "ray" else scheduler
        done = cross_validate(ws, corpus_name, taggers, k, seed, jobs, backend, cluster, targets,
                              progress=not no_progress, warn=lambda msg: click.echo(f"warning: {msg}", err=True),
                              keep_models=keep_models, connect_timeout=connect_timeout)
    corpus, runs = done.corpus, done.runs
    click.echo(f"\ncorpus {corpus_name!r}: {k}-fold CV (folds {done.engine.folds.fingerprint}), cache {ws.cache_dir}")
    shown: set[str] = set()  # the aliases of long specs, said under the first table only
    click.echo(cv_summary_table(runs, corpus.train, corpus.test, done.others, shown=shown))
    for name, documents in done.others.items():
        click.echo(f"\n{name}: strict F1 by category of the models trained on {corpus_name!r}")
        click.echo(category_table(runs, name, documents, shown))


def category_table(runs, target: str, documents, shown: set[str] | None = None) -> str:
    """Rows: categories (gold spans in the target); columns: each tagger's strict F1."""
    from ..studies.crosscorpus import category_scores
    from ..studies.report import spec_table

    scores = {label: category_scores(documents, run.targets[target]) for label, run in runs.items()}
    gold = {cat: n for per in scores.values() for cat, (n, _) in per.items()}
    rows = [[cat, gold[cat], *(scores[label].get(cat, (0, 0.0))[1] for label in runs)] for cat in sorted(gold)]
    return spec_table(["category", "gold", *runs], rows, "l" + "r" * (len(runs) + 1), spec_headers_from=2,
                      shown=shown)
