"""``ensemble-deid cv``: fill the prediction cache by cross-validation."""
from __future__ import annotations

import click

from .common import fail_on_error, workspace_of


def parse_tagger_specs(value: str, param_hint: str = "--taggers"):
    from ..experiment.cv import TaggerSpec
    from ..taggers.registry import UnknownTagger, tagger_class

    specs = []
    # Split on commas that start a new tagger (a name followed by ':' or end),
    # so "crf:c1=0.1,c2=0.2,rules" gives crf (two params) and rules.
    for chunk in _split_specs(value):
        try:
            spec = TaggerSpec.parse(chunk)
            cls = tagger_class(spec.name)
        except (ValueError, UnknownTagger) as exc:
            raise click.BadParameter(str(exc), param_hint=param_hint)
        ok, reason = cls.availability()
        if ok or cls.external:
            # External tools may be configured by their parameters: ask the instance.
            try:
                tagger = spec.make()
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint=param_hint)
            ok, reason = tagger.availability()
        if not ok:
            raise click.BadParameter(f"tagger {spec.name!r} is unavailable: {reason}", param_hint=param_hint)
        specs.append(spec)
    if not specs:
        raise click.BadParameter("name at least one tagger", param_hint=param_hint)
    return specs


def _split_specs(value: str) -> list[str]:
    chunks: list[str] = []
    for piece in (p.strip() for p in value.split(",")):
        if not piece:
            continue
        if chunks and "=" in piece and ":" not in piece.split("=", 1)[0]:
            chunks[-1] += "," + piece  # a key=value continuing the previous tagger
        else:
            chunks.append(piece)
    return chunks


@click.command()
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus name (see 'corpus ls').")
@click.option("--taggers", required=True, help="Comma-separated taggers, each optionally with parameters: crf:c1=0.05,max_iterations=50,rules.")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Number of cross-validation folds (grouped by patient).")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment.")
@click.option("--jobs", type=int, default=1, help="Parallel jobs; -1 uses every core.")
@click.option("--backend", type=click.Choice(["loky", "threading", "dask", "ray"]), default="loky", help="joblib backend running the (tagger, fold) jobs.")
@click.option("--scheduler", default=None, help="dask.distributed scheduler address (tcp://HOST:PORT) for --backend dask.")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def cv(ctx, corpus_name, taggers, k, seed, jobs, backend, scheduler, no_progress):
    """Out-of-fold predictions on the training set and test-set predictions,
    for each tagger, computed once and kept in the prediction cache.

    What is cached already is reused, so an interrupted run resumes; corrupt
    cache parts are reported and recomputed.
    """
    from ..errors import EnsembleDeidError
    from ..experiment.cv import check_jobs

    try:
        check_jobs(jobs)
    except EnsembleDeidError as exc:
        raise click.BadParameter(str(exc), param_hint="--jobs")
    if backend == "dask" and not scheduler:
        raise click.BadParameter("--backend dask needs --scheduler tcp://HOST:PORT", param_hint="--scheduler")
    specs = parse_tagger_specs(taggers)
    ws = workspace_of(ctx)
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation
    from ..studies.summary import cv_summary_table

    from ..experiment.cv import label_warnings

    warn = lambda msg: click.echo(f"warning: {msg}", err=True)  # noqa: E731
    with fail_on_error():
        corpus = ws.load(corpus_name)
        engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
        for msg in engine.split_warnings():
            warn(msg)
        runs = engine.run(
            specs, jobs=jobs, backend=backend, scheduler=scheduler, progress=not no_progress, on_corrupt=warn,
        )
    for msg in label_warnings(runs, corpus.train, f"corpus {corpus_name!r}"):
        warn(msg)
    click.echo(f"\ncorpus {corpus_name!r}: {k}-fold CV (folds {engine.folds.fingerprint}), cache {ws.cache_dir}")
    click.echo(cv_summary_table(runs, corpus.train, corpus.test))
