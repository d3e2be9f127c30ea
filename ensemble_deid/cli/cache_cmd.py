"""``ensemble-deid cache``: list, verify, remove and export cached predictions."""
from __future__ import annotations

from pathlib import Path

import click

from .common import fail_on_error, workspace_of


@click.group("cache")
def cache() -> None:
    """Inspect and manage the prediction cache."""


def _cache(ctx):
    from ..experiment.cache import PredictionCache

    return PredictionCache(workspace_of(ctx).cache_dir)


@cache.command("ls")
@click.pass_context
def ls(ctx):
    """List cache entries: tagger, version, parameters, training corpus, parts."""
    from ..studies.table import render_table

    pc = _cache(ctx)
    rows = []
    for entry_dir, manifest in pc.entries():
        parts = pc.part_files(entry_dir)
        size = sum(f.stat().st_size for f in entry_dir.rglob("*") if f.is_file())
        m = manifest or {}
        rows.append([
            m.get("tagger_label", m.get("tagger", "?")), m.get("version", "?"), m.get("param_hash", "?"),
            m.get("train_fingerprint", "?"), len(parts), f"{size / 2**20:.1f}",
            str(entry_dir.relative_to(pc.root)),
        ])
    if not rows:
        click.echo(f"cache {pc.root} is empty")
        return
    click.echo(render_table(["tagger", "version", "params", "train corpus", "parts", "MB", "path"], rows))


@cache.command("verify")
@click.option("--remove", is_flag=True, help="Delete the corrupt parts found (they are recomputed by the next cv run).")
@click.pass_context
def verify(ctx, remove):
    """Check every part's checksums; name corrupt, incomplete and stale entries.

    Stale: made by another version of a tagger than the one installed now.
    Exits with status 1 when anything is corrupt.
    """
    from ..taggers.registry import UnknownTagger, tagger_class

    pc = _cache(ctx)
    problems = pc.verify()
    for path, why in problems:
        click.echo(f"corrupt: {why}" if str(path.with_suffix("")) in why else f"corrupt: {path}: {why}")
        if remove:
            for suffix in (".json", ".npz"):
                path.with_suffix(suffix).unlink(missing_ok=True)
    stale = 0
    for entry_dir, manifest in pc.entries():
        if not manifest:
            continue
        try:
            current = tagger_class(manifest["tagger"]).version
        except (UnknownTagger, Exception):
            click.echo(f"stale: {entry_dir}: tagger {manifest['tagger']!r} is not installed")
            stale += 1
            continue
        if current != manifest["version"]:
            click.echo(f"stale: {entry_dir}: made by version {manifest['version']}, installed version is {current}")
            stale += 1
    parts = sum(len(pc.part_files(d)) for d, _ in pc.entries())
    click.echo(f"{parts} part(s) checked: {len(problems)} corrupt or incomplete, {stale} stale entr{'y' if stale == 1 else 'ies'}")
    if problems and not remove:
        raise SystemExit(1)


@cache.command("rm")
@click.argument("paths", nargs=-1, required=True)
@click.pass_context
def rm(ctx, paths):
    """Remove entries, given as paths shown by 'cache ls' (relative to the cache root)."""
    pc = _cache(ctx)
    with fail_on_error():
        for p in paths:
            target = Path(p) if Path(p).is_absolute() else pc.root / p
            if not (target / "entry.json").exists():
                raise click.BadParameter(f"{p} is not a cache entry (see 'cache ls')", param_hint="PATHS")
            pc.remove_entry(target)
            click.echo(f"removed {p}")


@cache.command("export")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--corpus", "corpus_name", required=True, help="Corpus whose documents the predictions are on (texts come from it).")
@click.option("--format", "fmt", type=click.Choice(["i2b2"]), default="i2b2", help="Output format (i2b2 XML, readable by the official scorer).")
@click.pass_context
def export(ctx, out, corpus_name, fmt):
    """Write cached predictions as XML: OUT/TAGGER/PART/DOC.xml per tagger and fold."""
    from ..corpus.formats import write_i2b2_xml

    ws = workspace_of(ctx)
    pc = _cache(ctx)
    with fail_on_error():
        corpus = ws.load(corpus_name)
    # Each part holds predictions on one document set: out-of-fold parts on
    # the training split, predict parts on the split whose fingerprint is
    # their scope. Parts on other corpora's documents are not this corpus's.
    split_of_scope = {fp: split for split, fp in corpus.fingerprints.items()}
    train_fp = corpus.fingerprint("train")
    written = skipped = 0
    out = Path(out)
    for entry_dir, manifest in pc.entries():
        if not manifest or manifest.get("train_fingerprint") != train_fp:
            continue
        label = manifest.get("tagger_label", manifest["tagger"]).replace("/", "_").replace(":", "_")
        for base in pc.part_files(entry_dir):
            kind, _, scope = base.parent.name.partition("-")
            split = "train" if kind == "oof" else split_of_scope.get(scope)
            if split is None:
                skipped += 1
                continue
            with fail_on_error():
                preds, record = pc.read_part_files(base)
            by_id = {d.id: d for d in corpus.splits[split]}
            folder = out / label / f"{base.parent.name}-{base.name}"
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            for doc_id, pred in preds.items():
                doc = by_id.get(doc_id)
                if doc is None:
                    raise click.ClickException(f"{base}: document {doc_id!r} is not in the {split} split of {corpus_name!r}")
                write_i2b2_xml(doc.with_annotations(pred.spans(doc)), folder / f"{doc_id}.xml")
                written += 1
            click.echo(f"{label}/{folder.name}: {len(preds)} document(s) of the {split} split")
    note = f" ({skipped} part(s) on other corpora's documents skipped)" if skipped else ""
    click.echo(f"wrote {written} file(s) under {out}{note}")
