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
              "(or just the method name), made by 'ensemble' or 'study'; of several, the one fitted on --members.")
@click.option("--split", type=click.Choice(["test", "train"]), default="test",
              help="The test split (full-training models) or the training split (out-of-fold predictions).")
@click.option("--rank-by", default=None, help="System whose errors rank the documents (default: the best ensemble "
              "by strict F1, or the best member when there is no ensemble).")
@click.option("--include-text", is_flag=True, help="Put the note text in the page (it then holds PHI: it is written "
              "owner-only and says so in a banner). Without it the page holds offsets, labels and counts only.")
@click.option("--document-ids", is_flag=True, help="Name the documents by their ids (file names, which often hold a "
              "patient's name or record number); by default they are doc-1, doc-2... in the page unless "
              "--include-text.")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the cached cross-validation.")
@click.option("--seed", type=int, default=0, help="Seed of the cached fold assignment.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The HTML file to write (owner-only; missing folders are created owner-only).")
@click.pass_context
def report(ctx, corpus_name, members, ensembles, split, rank_by, include_text, document_ids, k, seed, output):
    """Write one self-contained HTML page (no network, no external files) for
    a corpus split: strict scores and leak rates per system and per category,
    the category confusion matrix, the members' agreement and marginal
    contributions, and per-document views with every system's spans as
    lanes, ranked by the errors of one system and filtered by category and
    error kind (leak, false alarm, wrong type, boundary)."""
    import time

    from ..studies.html_report import build_page, cached_report, write_page

    started = time.perf_counter()
    with fail_on_error():
        data = cached_report(workspace_of(ctx), corpus_name, members, ensembles, split=split, rank_by=rank_by,
                             folds=k, seed=seed)
        loaded = time.perf_counter()
        page = build_page(data, include_text=include_text, include_ids=include_text or document_ids)
        path = write_page(output, page)
    size = path.stat().st_size
    click.echo(f"wrote {path} ({size / 1e6:.1f} MB, {len(data.documents)} documents, {len(data.systems)} systems, "
               f"{'with note text: owner-only, do not share' if include_text else 'no note text'}) in "
               f"{time.perf_counter() - started:.1f} s (cache and scoring {loaded - started:.1f} s)")
