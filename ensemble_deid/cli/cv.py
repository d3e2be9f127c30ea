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
@click.option("--target", "targets", multiple=True, metavar="CORPUS", help="Also predict this registered corpus's "
              "test split with the models trained on all of --corpus's training set (repeatable); cached as 'study' "
              "caches them, scored in the summary and per category.")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def cv(ctx, corpus_name, taggers, k, seed, jobs, backend, scheduler, targets, no_progress):
    """Out-of-fold predictions on the training set and test-set predictions,
    for each tagger, computed once and kept in the prediction cache.

    What is cached already is reused, so an interrupted run resumes; corrupt
    cache parts are reported and recomputed. With --target B, the models
    trained on this corpus also predict B's test split (cross-corpus).
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
    _check_targets(corpus_name, targets)
    ws = workspace_of(ctx)
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation
    from ..studies.crosscorpus import cross_corpus_target
    from ..studies.summary import cv_summary_table

    from ..experiment.cv import label_warnings

    warn = lambda msg: click.echo(f"warning: {msg}", err=True)  # noqa: E731
    with fail_on_error():
        corpus = ws.load(corpus_name)
        # Every corpus loads (and is checked) before any tagger runs.
        other = {cross_corpus_target(name): ws.load(name).test for name in targets}
        engine = CrossValidation(corpus.train, {"test": corpus.test, **other}, PredictionCache(ws.cache_dir),
                                 k=k, seed=seed)
        for msg in engine.split_warnings():
            warn(msg)
        runs = engine.run(
            specs, jobs=jobs, backend=backend, scheduler=scheduler, progress=not no_progress, on_corrupt=warn,
        )
    for msg in label_warnings(runs, corpus.train, f"corpus {corpus_name!r}"):
        warn(msg)
    click.echo(f"\ncorpus {corpus_name!r}: {k}-fold CV (folds {engine.folds.fingerprint}), cache {ws.cache_dir}")
    click.echo(cv_summary_table(runs, corpus.train, corpus.test, other))
    for name, documents in other.items():
        click.echo(f"\n{name}: strict F1 by category of the models trained on {corpus_name!r}")
        click.echo(category_table(runs, name, documents))


def _check_targets(corpus_name: str, targets) -> None:
    if corpus_name in targets:
        raise click.BadParameter(f"{corpus_name!r} is the training corpus: its test split is predicted anyway",
                                 param_hint="--target")
    twice = sorted({t for t in targets if list(targets).count(t) > 1})
    if twice:
        raise click.BadParameter(f"{twice[0]!r} is named twice", param_hint="--target")


def category_table(runs, target: str, documents) -> str:
    """Rows: categories (gold spans in the target); columns: each tagger's strict F1."""
    from ..studies.crosscorpus import category_scores
    from ..studies.table import render_table

    scores = {label: category_scores(documents, run.targets[target]) for label, run in runs.items()}
    gold = {cat: n for per in scores.values() for cat, (n, _) in per.items()}
    rows = [[cat, gold[cat], *(scores[label].get(cat, (0, 0.0))[1] for label in runs)] for cat in sorted(gold)]
    return render_table(["category", "gold", *runs], rows)
