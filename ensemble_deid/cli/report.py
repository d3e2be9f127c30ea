"""``ensemble-deid report``: one static HTML page of members, ensembles and
gold on a corpus split, from the prediction cache (nothing is computed)."""
from __future__ import annotations

import click

from .common import fail_on_error, workspace_of


@click.command("report")
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus name.")
@click.option("--members", required=True, help="Comma-separated member taggers (as for cv --taggers), cached by 'cv' "
              "or 'study'; the agreement and contribution figures are theirs.")
@click.option("--ensembles", default="", help="Comma-separated cached ensembles: ensemble.<method>[:hash=PREFIX] "
              "(or just the method name), made by 'ensemble' or 'study'.")
@click.option("--split", type=click.Choice(["test", "train"]), default="test",
              help="The test split (full-training models) or the training split (out-of-fold predictions).")
@click.option("--rank-by", default=None, help="System whose errors rank the documents (default: the best ensemble "
              "by strict F1, or the best member when there is no ensemble).")
@click.option("--include-text", is_flag=True, help="Put the note text in the page (it then holds PHI: it is written "
              "owner-only and says so in a banner). Without it the page holds offsets, labels and counts only.")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the cached cross-validation.")
@click.option("--seed", type=int, default=0, help="Seed of the cached fold assignment.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The HTML file to write (owner-only; missing folders are created owner-only).")
@click.pass_context
def report(ctx, corpus_name, members, ensembles, split, rank_by, include_text, k, seed, output):
    """Write one self-contained HTML page (no network, no external files) for
    a corpus split: strict scores and leak rates per system and per category,
    the category confusion matrix, the members' agreement and marginal
    contributions, and per-document views with every system's spans as
    lanes, ranked by the errors of one system and filtered by category and
    error kind (leak, false alarm, wrong type, boundary)."""
    import time

    from ..ensemble.caching import ENSEMBLE_PREFIX, is_ensemble_spec, load_ensemble_member
    from ..ensemble.diagnostics import member_diagnostics
    from ..errors import EnsembleDeidError
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation
    from ..studies.html_report import ReportData, build_page, write_page
    from ..studies.summary import prediction_spans
    from .cv import parse_tagger_specs

    started = time.perf_counter()
    specs = parse_tagger_specs(members, param_hint="--members")
    if len(specs) < 2:
        raise click.BadParameter("name at least two members", param_hint="--members")
    ensemble_names = [e.strip() if is_ensemble_spec(e) else ENSEMBLE_PREFIX + e.strip()
                      for e in ensembles.split(",") if e.strip()]
    labels = [s.label for s in specs] + ensemble_names
    if len(set(labels)) != len(labels):
        raise click.BadParameter("a system is named twice", param_hint="--members/--ensembles")
    if rank_by is not None and rank_by not in labels:
        raise click.BadParameter(f"{rank_by!r} is not one of the systems {labels}", param_hint="--rank-by")
    ws = workspace_of(ctx)
    with fail_on_error():
        corpus = ws.load(corpus_name)
        engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
        pending = engine.pending(specs)
        if pending:
            raise EnsembleDeidError(
                f"{len(pending)} cached part(s) of the members missing or corrupt (e.g. {pending[0].part}); run "
                f"'ensemble-deid cv --corpus {corpus_name} --taggers {members}' (--folds {k} --seed {seed}) first")
        runs = engine.collect(specs)
        documents = corpus.splits[split]
        oof = {label: run.oof for label, run in runs.items()}
        scored = oof if split == "train" else {label: run.targets["test"] for label, run in runs.items()}
        for name in ensemble_names:
            member = load_ensemble_member(engine, name, oof=split == "train")
            scored[name] = member.oof if split == "train" else member.test
        systems = {label: prediction_spans(documents, scored[label]) for label in labels}
        diagnostics = member_diagnostics(oof, corpus.train, {s.label: scored[s.label] for s in specs}, documents)
        loaded = time.perf_counter()
        try:
            data = ReportData(f"{corpus_name} {split}: {len(specs)} members, {len(ensemble_names)} ensembles",
                              documents, systems, frozenset(ensemble_names), diagnostics, rank_by)
        except ValueError as exc:  # e.g. a system without predictions for some documents
            raise click.ClickException(str(exc)) from None
        page = build_page(data, include_text=include_text)
        path = write_page(output, page)
    size = path.stat().st_size
    click.echo(f"wrote {path} ({size / 1e6:.1f} MB, {len(documents)} documents, {len(labels)} systems, "
               f"{'with note text: owner-only, do not share' if include_text else 'no note text'}) in "
               f"{time.perf_counter() - started:.1f} s (cache {loaded - started:.1f} s)")
