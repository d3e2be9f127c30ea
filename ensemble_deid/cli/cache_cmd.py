"""``ensemble-deid cache``: list, verify, remove, export and publish cached predictions; remove kept models."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import click

from .common import fail_on_error, workspace_of


@click.group("cache")
def cache() -> None:
    """Inspect and manage the prediction cache."""


def _cache(ctx):
    from ..experiment.cache import PredictionCache

    root = workspace_of(ctx).cache_dir
    if root.exists() and not root.is_dir():
        raise click.ClickException(f"the cache root {root} is a file, not a folder (see ENSEMBLE_DEID_CACHE)")
    return PredictionCache(root)


def _corpus_names(ws, pc) -> dict[str, str]:
    """Fingerprint -> corpus name ("meddocan", "meddocan test") for the
    registered corpora and the published folders; unreadable corpora are left out."""
    names: dict[str, str] = {}
    for folder in pc.published:
        for split, fp in ((folder.manifest or {}).get("corpus_fingerprints") or {}).items():
            names.setdefault(fp, folder.manifest["corpus"] + ("" if split == "train" else f" {split}"))
    try:
        specs = ws.corpus_specs()
    except Exception:  # an unreadable registry must not stop a listing
        return names
    for name in specs:
        try:
            corpus = ws.load(name)
        except Exception:  # moved or damaged files: show the fingerprint
            continue
        for split, fp in corpus.fingerprints.items():
            names[fp] = name if split == "train" else f"{name} {split}"
    return names


def _union_names(ws, unnamed: set[str]) -> dict[str, str]:
    """Fingerprint -> "A train + B train" for the unions of two registered
    corpora's training splits that ``study`` trains on, among ``unnamed``."""
    from itertools import combinations

    from ..studies.crosscorpus import union_corpus

    names: dict[str, str] = {}
    try:
        corpora = [ws.load(name) for name in ws.corpus_specs()]
    except Exception:  # an unreadable registry or corpus must not stop a listing
        return names
    for a, b in combinations(corpora, 2):
        for first, second in ((a, b), (b, a)):  # the study's order is the user's
            try:
                fp = union_corpus(first, second).fingerprint("train")
            except Exception:  # shared document ids: no union of these two
                break
            if fp in unnamed:
                names[fp] = f"{a.name} train + {b.name} train"
    return names


def _installed_version(tagger: str) -> str:
    """The version a tagger (or an ensemble method) would make entries with now; raises if not installed."""
    if tagger.startswith("ensemble."):
        from ..ensemble.base import ENSEMBLE_VERSION

        return ENSEMBLE_VERSION
    from ..taggers.registry import tagger_class

    return tagger_class(tagger).version


@cache.command("ls")
@click.option("--wide", is_flag=True, help="One Markdown table, one line an entry, every column (for files and grep), "
                                            "instead of a table fitted to the terminal.")
@click.pass_context
def ls(ctx, wide):
    """List cache entries: tagger, version, parameters, training corpus, parts,
    inference cost (CPU seconds per million tokens, from the prediction times
    the parts recorded; '-' when none did), where. A tagger is named by the
    spec that reaches its entry (copy it into --taggers).

    Ensemble entries also show their members, the objective, the parameters
    fixed and those the selection chose, and the date (below the table, or in a last
    column with --wide). Entries served from published folders are listed with
    the folder as their source."""
    from ..ensemble.caching import ensemble_summary
    from ..experiment.cost import format_cost, inference_cost
    from ..experiment.cv import entry_spec
    from ..studies.table import render_table, terminal_table

    ws = workspace_of(ctx)
    pc = _cache(ctx)
    names = _corpus_names(ws, pc)
    rows, manifests = [], []

    def row(m, parts, size, source, path, entry_dir, records):
        ensemble = str(m.get("tagger", "")).startswith("ensemble.")
        # An ensemble's parts time the meta-learner alone, not its members: no cost of its own.
        cost = None if ensemble else inference_cost(r for r in records if isinstance(r, dict))
        rows.append([
            m.get("tagger_label", m.get("tagger", "?")) if ensemble else entry_spec(m), m.get("version", "?"),
            m.get("param_hash", "?"),
            m.get("train_fingerprint", "?"), parts, f"{size / 2**20:.1f}", format_cost(cost), source, path,
            ensemble_summary(m, entry_dir) if ensemble else "",
        ])

    for entry_dir, manifest in pc.entries():
        size = sum(f.stat().st_size for f in entry_dir.rglob("*") if f.is_file())
        row(manifest or {}, len(pc.part_files(entry_dir)), size, "workspace", str(entry_dir.relative_to(pc.root)),
            entry_dir, pc.part_records(entry_dir))
    for folder in pc.published:
        for e in folder.entries():
            size = sum(v.get("bytes", 0) for rel, v in folder.files.items() if rel.startswith(e.get("path", "?") + "/"))
            row(e, len(e.get("parts", [])), size, f"published {folder.path.name}", e.get("path", "?"), None,
                e.get("parts", []))
    if not rows:
        click.echo(f"cache {pc.root} is empty")
        return
    unnamed = {r[3] for r in rows} - names.keys()
    if unnamed:
        names.update(_union_names(ws, unnamed))
    for r in rows:
        r[3] = names.get(r[3], r[3])
    headers = ["tagger", "version", "params", "trained on", "parts", "MB", "cost", "source", "path",
               "members; objective; chosen; date"]
    if wide:
        if not any(r[-1] for r in rows):
            headers, rows = headers[:-1], [r[:-1] for r in rows]
        click.echo(render_table(headers, rows))
        return
    # Fitted to the terminal: no version and parameter hash (the path holds
    # them), source and path in one folding cell, a long tagger label folded
    # too (the published 'rules:label_map=i2b2-to-meddocan' made every line 103
    # columns wide), and the ensembles' details as lines below.
    fitted = [[r[0], r[3], r[4], r[5], r[6], f"{r[7]}: {r[8]}"] for r in rows]
    notes = [f"{r[0]} {r[1]}-{str(r[2])[:8]}: {r[-1]}" for r in rows if r[-1]]
    notes.append("cost: inference cost, CPU seconds per million tokens, from the prediction times the parts "
                 "recorded ('-': none recorded, or an ensemble)")
    click.echo(terminal_table(["tagger", "trained on", "parts", "MB", "cost", "where"], fitted,
                              align="llrrrl", wrap=(0, 1, 5), notes=notes))


@cache.command("verify")
@click.option("--remove", is_flag=True,
              help="Delete the corrupt and incomplete parts, damaged entries (whole), damaged kept models, empty entries and left-over temporary files found "
                   "(parts are recomputed by the next cv run). Published folders are never changed.")
@click.pass_context
def verify(ctx, remove):
    """Check every part's checksums, in the workspace cache and the published folders.

    Names corrupt and incomplete parts, entries without parts (a failed run),
    half-written temporary files, damaged published files, and stale entries
    (made by another version of a tagger or ensemble method than the one
    installed now: never used, only taking space). Exits with status 1 when
    anything is corrupt and was not removed.
    """
    pc = _cache(ctx)
    problems = pc.verify()
    for problem in problems:
        where = "" if str(problem.path.with_suffix("")) in problem.why else f"{problem.path}: "
        label = {"leftover": "left over", "empty": "empty", "incomplete": "incomplete", "published": "published",
                 "entry": "corrupt entry", "model": "corrupt kept model"}.get(
            problem.kind, "corrupt")
        click.echo(f"{label}: {where}{problem.why}")
        if remove:
            click.echo(f"  {pc.remove_problem(problem)}")
    stale = 0
    listed = [(d, m, str(d)) for d, m in pc.entries()]
    listed += [(None, e, f"{folder.path}/{e.get('path')}") for folder in pc.published for e in folder.entries()]
    for _, manifest, where in listed:
        if not manifest:
            continue
        try:
            current = _installed_version(str(manifest["tagger"]))
        except Exception:  # not installed here (any failure to load it counts)
            click.echo(f"stale: {where}: tagger {manifest.get('tagger')!r} is not installed")
            stale += 1
            continue
        if current != manifest.get("version"):
            click.echo(f"stale: {where}: made by version {manifest.get('version')}, installed version is {current}")
            stale += 1
    stale += _stale_published_corpora(workspace_of(ctx), pc)
    parts = sum(len(pc.part_files(d)) for d, _ in pc.entries())
    parts += sum(len(e.get("parts", [])) for folder in pc.published for e in folder.entries())
    corrupt = sum(p.kind in ("corrupt", "incomplete", "entry", "model", "published") for p in problems)
    other = len(problems) - corrupt
    summary = f"{parts} part(s) checked: {corrupt} corrupt or incomplete, {stale} stale entr{'y' if stale == 1 else 'ies'}"
    if other:
        summary += f", {other} empty entr{'y' if other == 1 else 'ies'} or left-over file(s)"
    if pc.published:
        summary += f" (published folders: {', '.join(str(f.path) for f in pc.published)})"
    click.echo(summary)
    # Empty entries and left-over files are untidy, not wrong: only bad data fails the check.
    if any(p.kind in ("corrupt", "incomplete", "entry", "model") and not remove or p.kind == "published" for p in problems):
        raise SystemExit(1)


def _stale_published_corpora(ws, pc) -> int:
    """Name published folders made on other documents than the registered
    corpus of the same name: their keys never match, so nothing in them is used.
    Another test split alone is the shared-task protocol (the out-of-fold parts
    of the same training notes, the user's own test split): not stale, but said."""
    stale = 0
    try:
        registered = ws.corpus_specs()
    except Exception:  # an unreadable registry is reported by the commands that need it
        return 0
    for folder in pc.published:
        name = (folder.manifest or {}).get("corpus")
        if name not in registered:
            continue
        try:
            fingerprints = ws.load(name).fingerprints
        except Exception:  # moved or damaged corpus files: nothing to compare with
            continue
        published = folder.manifest["corpus_fingerprints"]
        if fingerprints.get("train") == published.get("train") and fingerprints.get("test") != published.get("test"):
            click.echo(f"note: {folder.path}: made with another test split than the registered corpus {name!r}: its "
                       "out-of-fold parts are used; the test predictions are computed by training on all the training notes")
            continue
        for split, fp in published.items():
            if fingerprints.get(split) != fp:
                click.echo(f"stale: {folder.path}: made on other {split} documents than the registered corpus "
                           f"{name!r} (fingerprint {fp}, registered {fingerprints.get(split)}); its entries are not used")
                stale += 1
    return stale


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


@cache.command("rm-models")
@click.argument("paths", nargs=-1)
@click.pass_context
def rm_models(ctx, paths):
    """Delete the models cv kept for fit (every one, or those of the entries
    given as paths shown by 'cache ls'). Predictions stay; fit then trains
    those members again."""
    from ..experiment.kept import MODEL, kept_models

    pc = _cache(ctx)
    if paths:
        folders = []
        for p in paths:
            target = Path(p) if Path(p).is_absolute() else pc.root / p
            if not (target / "entry.json").exists():
                raise click.BadParameter(f"{p} is not a cache entry (see 'cache ls')", param_hint="PATHS")
            folders += [target / MODEL] if (target / MODEL).is_dir() else []
    else:
        folders = kept_models(pc.root)
    freed = 0
    with fail_on_error():
        for folder in folders:
            freed += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            pc.remove_entry(folder)
            click.echo(f"removed {folder.relative_to(pc.root) if pc.root in folder.parents else folder}")
    click.echo(f"removed {len(folders)} kept model(s), {freed / 2**20:.1f} MB")


EXTENSIONS = {"conll": ".conll", "jsonl": ".jsonl", "docbin": ".spacy"}


def _check_output_parent(out: Path, option: str) -> None:
    if out.exists() and not out.is_dir():
        raise click.BadParameter(f"{out} exists and is not a folder", param_hint=option)
    if not out.parent.is_dir():
        raise click.BadParameter(f"{out.parent}: no such folder (create it first)", param_hint=option)


@cache.command("export")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--corpus", "corpus_name", required=True, help="Corpus whose documents the predictions are on (texts come from it).")
@click.option("--format", "fmt", type=click.Choice(["i2b2", "conll", "jsonl", "docbin"]), default="i2b2",
              help="i2b2: XML files, one per document (readable by the official scorer and 'evaluate'); conll, jsonl, "
                   "docbin: one file per part (see 'corpus export --help').")
@click.pass_context
def export(ctx, out, corpus_name, fmt):
    """Write cached predictions on a corpus's documents as XML.

    OUT/LABEL/VERSION-PARAMHASH/TRAINFP/KIND-SCOPE-NAME/DOC.xml (other formats:
    OUT/LABEL/VERSION-PARAMHASH/TRAINFP/KIND-SCOPE-NAME.conll, .jsonl, .spacy): one folder per
    entry (two ensembles of one method, or two versions of a tool, never share
    one) and part. Included: out-of-fold parts of models trained on the
    corpus, and every model's predictions on one of its splits, including
    models trained on another corpus (cross-corpus). The export is written
    beside OUT first and moved in at the end: a failure leaves OUT as it was.
    """
    from ..corpus.formats import write_i2b2_xml
    from ..corpus.formats.interchange import export_documents
    from ..experiment.cache import SCHEMA, CacheError, EntryKey, PartKey
    from ..files import private_dir

    ws = workspace_of(ctx)
    pc = _cache(ctx)
    out = Path(out)
    _check_output_parent(out, "OUT")
    with fail_on_error():
        corpus = ws.load(corpus_name)
    names = _corpus_names(ws, pc)
    split_of_scope = {fp: split for split, fp in corpus.fingerprints.items()}
    train_fp = corpus.fingerprint("train")

    # Every part of every entry, from the workspace and the published folders (one copy each).
    parts: dict[PartKey, str] = {}
    sources = [(m, [b.relative_to(pc.root / SCHEMA).as_posix() for b in pc.part_files(d)]) for d, m in pc.entries()]
    sources += [(e, [p.get("path", "")[len(SCHEMA) + 1:] for p in e.get("parts", [])])
                for folder in pc.published for e in folder.entries()]
    for manifest, rels in sources:
        if not manifest:
            continue
        key = EntryKey(manifest["tagger"], manifest["version"], manifest["param_hash"], manifest["train_fingerprint"])
        for rel in rels:
            kind, _, scope = rel.split("/")[-2].partition("-")
            parts.setdefault(PartKey(key, kind, scope, rel.split("/")[-1]), manifest.get("tagger_label", key.tagger))

    staging = out.parent / f".{out.name}.{os.getpid()}.tmp"
    written = skipped = 0
    lines = []
    try:
        private_dir(staging)
        for part, label in sorted(parts.items(), key=lambda kv: (kv[1], str(kv[0]))):
            e = part.entry
            if part.kind == "oof":
                split = "train" if e.train_fingerprint == train_fp else None
            else:
                split = split_of_scope.get(part.scope)
            base = pc.locate(part) if split else None
            if base is None:  # on other corpora's documents, or corrupt (cache verify names it)
                skipped += 1
                continue
            with fail_on_error():
                preds, _ = pc.read_part_files(base)
            by_id = {d.id: d for d in corpus.splits[split]}
            rel = Path(label.replace("/", "_").replace(":", "_"), f"{e.version}-{e.param_hash}", e.train_fingerprint,
                       f"{part.kind}-{part.scope}-{part.name}")
            folder = staging / rel
            private_dir(folder if fmt == "i2b2" else folder.parent)
            predicted = []
            for doc_id, pred in preds.items():
                doc = by_id.get(doc_id)
                if doc is None:
                    raise click.ClickException(f"{base}: document {doc_id!r} is not in the {split} split of {corpus_name!r}")
                predicted.append(doc.with_annotations(pred.spans(doc)))
            if fmt == "i2b2":
                for doc in predicted:
                    write_i2b2_xml(doc, folder / f"{doc.id}.xml")
                    written += 1
            else:
                rel = rel.with_name(rel.name + EXTENSIONS[fmt])
                with fail_on_error():
                    export_documents(predicted, fmt, staging / rel)
                written += 1
            trained = names.get(e.train_fingerprint, e.train_fingerprint)
            lines.append(f"{rel.as_posix()}: {len(preds)} document(s) of the {split} split (trained on {trained})")
        _move_leaves(staging, out)
    except CacheError as exc:
        raise click.ClickException(f"{exc}; {out} is unchanged") from exc
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or out}: cannot write ({exc.strerror or type(exc).__name__}); "
                                   f"{out} is unchanged") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for line in lines:
        click.echo(line)
    note = f" ({skipped} part(s) on other corpora's documents skipped)" if skipped else ""
    click.echo(f"wrote {written} file(s) under {out}{note}")


def _move_leaves(staging: Path, out: Path) -> None:
    """Move each finished part (folder or file) into OUT, replacing an older export of the same part."""
    from ..experiment.cache import DIR_MODE
    from ..files import private_dir

    private_dir(out)
    os.chmod(out, DIR_MODE)
    for leaf in sorted(staging.glob("*/*/*/*")):  # a part's folder (i2b2) or file (other formats)
        dest = out / leaf.relative_to(staging)
        private_dir(dest.parent)
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        os.replace(leaf, dest)


@cache.command("publish")
@click.option("--corpus", "corpus_name", required=True, help="A public corpus (never one under a data use agreement).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="The published folder, e.g. cached_predictions/meddocan (added to if it exists).")
@click.option("--taggers", default=None,
              help="Taggers as given to cv (default: every tagger the workspace cache holds complete entries of).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, show_default=True, help="The CV's folds.")
@click.option("--seed", type=int, default=0, show_default=True, help="The CV's fold seed.")
@click.option("--public", is_flag=True, help="State that the corpus's licence allows redistributing predictions on it.")
@click.option("--licence", "--license", "licence", required=True, help="The corpus's licence, e.g. 'CC BY 4.0'.")
@click.option("--citation", default="", help="How to cite the corpus (recorded in the manifest).")
@click.pass_context
def publish(ctx, corpus_name, out, taggers, k, seed, public, licence, citation):
    """Write complete cache entries of a public corpus as a read-only, text-free,
    checksummed published folder with a manifest.

    The cache reads published folders beside the workspace cache (under the
    cache root, or named by $ENSEMBLE_DEID_PUBLISHED), so cv, ensemble,
    prune, compare and study reuse them instead of training. Entries with a
    missing part are skipped and named.
    """
    from ..experiment.cv import parse_tagger_specs
    from ..experiment.publish import publish as write_published

    if not public:
        raise click.UsageError("publishing needs --public: state that the corpus's licence allows redistribution "
                               "(corpora under a data use agreement, such as i2b2/n2c2 or N-GRID, never may)")
    out = Path(out)
    _check_output_parent(out, "--out")
    with fail_on_error():
        specs = parse_tagger_specs(taggers) if taggers else None
    ws = workspace_of(ctx)
    pc = _cache(ctx)
    t0 = time.perf_counter()
    with fail_on_error():
        corpus = ws.load(corpus_name)
        result = write_published(pc, corpus, out, licence=licence, citation=citation, specs=specs, k=k, seed=seed,
                                 echo=click.echo)
    for line in result.skipped:
        click.echo(f"skipped {line}")
    from ..studies.table import render_table

    rows = [[label, f"{size / 2**20:.2f}", "now" if label in result.published else "kept"]
            for label, size in sorted(result.bytes_by_label.items())]
    if rows:
        click.echo(render_table(["tagger", "MB", "published"], rows))
    click.echo(f"published {len(result.published)} entr{'y' if len(result.published) == 1 else 'ies'} "
               f"({len(result.kept)} kept) to {out}: {result.total_bytes / 2**20:.2f} MB in all, "
               f"{time.perf_counter() - t0:.1f} s")
