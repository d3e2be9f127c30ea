"""``ensemble-deid evaluate``: score system output the way the official
i2b2 2014 / N-GRID 2016 program does (its quirks switchable), plus SemEval
schemes and leak rates. Imports stay light (numpy only) so start-up is fast."""
from __future__ import annotations

import os
from pathlib import Path

import click

from .common import fail_on_error

QUIRKS = ("hipaa_exclude_idnum", "hipaa_all_ages", "relaxed_many_to_one", "ascii_token_regex")


def _criteria(ctx, param, value):
    from ..evaluation.criteria import parse_criteria

    try:
        return parse_criteria(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param)


@click.command("evaluate")
@click.option("--gold", type=click.Path(exists=True, file_okay=False), default=None, help="Folder of gold documents (i2b2 XML or BRAT).")
@click.option("--system", "system_dir", required=True,
              help="Folder of system output, same file names and TEXT as gold; with --corpus, a cached system instead: "
                   "a tagger spec (crf, memm:c=0.5) or a cached ensemble (ensemble.voting[:hash=PREFIX]).")
@click.option("--corpus", "corpus_name", default=None,
              help="Score the cached predictions of --system on this registered corpus (no export needed; replaces --gold).")
@click.option("--trained-on", default=None, help="With --corpus: the corpus the system was trained on (default: the same), "
                                                 "for cross-corpus predictions made by 'cv --target' or 'study'.")
@click.option("--split", type=click.Choice(["test", "train"]), default="test", show_default=True,
              help="With --corpus: the test split (full-training model) or the training split (out-of-fold predictions).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, show_default=True, help="With --corpus: folds of the cached cross-validation.")
@click.option("--seed", type=int, default=0, show_default=True, help="With --corpus: seed of the cached fold assignment.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "i2b2", "ngrid"]), default="table", show_default=True,
              help="Output format: i2b2 and ngrid print the blocks of the official i2b2 2014 (evaluate.py phi) and "
                   "N-GRID 2016 (evaluate.py track1) programs, with the official criteria.")
@click.option("--criteria", default="all", show_default=True, callback=_criteria,
              help="Comma-separated criteria: token, strict, relaxed, binary_token, binary_strict, hipaa_token, hipaa_strict, "
                   "hipaa_relaxed, hipaa_binary_token, hipaa_binary_strict, semeval_strict/exact/partial/type; "
                   "or the groups all, official, semeval.")
@click.option("--input-format", type=click.Choice(["auto", "xml", "brat"]), default="auto", show_default=True, help="File format of both folders (auto: decided per folder).")
@click.option("--label-map", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TOML label map applied to the gold folder's labels (e.g. your own BRAT gold onto the i2b2 categories of exported predictions).")
@click.option("--missing-as-empty", is_flag=True, help="Score gold documents without system output as empty output (their PHI counts as false negatives). Warns.")
@click.option("--skip-missing", is_flag=True, help="Leave out gold documents without system output, as the official program does. Warns.")
@click.option("--hipaa-exclude-idnum/--hipaa-include-idnum", default=True, show_default=True, help="Official quirk: the HIPAA filter never keeps ID/IDNUM.")
@click.option("--hipaa-all-ages/--hipaa-ages-over-89", default=True, show_default=True, help="Official quirk: the HIPAA filter keeps every AGE (Safe Harbor: ages over 89 only).")
@click.option("--relaxed-many-to-one/--relaxed-one-to-one", default=True, show_default=True, help="Official quirk: relaxed matching lets one gold tag absorb several system tags.")
@click.option("--ascii-tokens/--unicode-tokens", "ascii_token_regex", default=True, show_default=True, help="Official quirk: token criteria cut tags with [a-zA-Z0-9]+ (non-ASCII letters split tokens).")
@click.option("--no-quirks", is_flag=True, help="Switch every official quirk off (explicit quirk options still win).")
@click.option("--breakdown", type=click.Choice(["category", "subtype", "none"]), default="category", show_default=True, help="Per-group tables in the table format.")
@click.option("--documents", is_flag=True, help="Include per-document counts in the JSON output.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write the report to this file (owner-only; missing folders are created) instead of standard output.")
@click.pass_context
def evaluate(ctx, gold, system_dir, corpus_name, trained_on, split, k, seed, fmt, criteria, input_format, label_map, missing_as_empty, skip_missing, hipaa_exclude_idnum,
             hipaa_all_ages, relaxed_many_to_one, ascii_token_regex, no_quirks, breakdown, documents, output):
    """Score the system folder against the gold folder (micro, macro, per category and subtype, leak rates).

    Files are read as the official program reads them: only the elements NAME, PROFESSION, LOCATION, AGE, DATE,
    CONTACT, ID, OTHER and PHI (exact spelling), names and TYPE as written; zero-length tags, tags past the end of
    TEXT, a text attribute that differs from TEXT and a missing TYPE are scored as officially, with a warning."""
    import warnings

    from ..evaluation.files import evaluate_folders
    from ..evaluation.options import EvalOptions
    from ..evaluation.render import render

    if (gold is None) == (corpus_name is None):
        raise click.UsageError("give either --gold (a folder) or --corpus (a registered corpus, scoring cached predictions)")
    if corpus_name is None and not os.path.isdir(system_dir):
        raise click.BadParameter(f"folder {system_dir!r} does not exist (a cached system needs --corpus)", param_hint="--system")
    if missing_as_empty and skip_missing:
        raise click.BadParameter("choose one of --missing-as-empty and --skip-missing", param_hint="--skip-missing")
    quirks = dict(hipaa_exclude_idnum=hipaa_exclude_idnum, hipaa_all_ages=hipaa_all_ages,
                  relaxed_many_to_one=relaxed_many_to_one, ascii_token_regex=ascii_token_regex)
    if no_quirks:
        for name in QUIRKS:
            if ctx.get_parameter_source(name) == click.core.ParameterSource.DEFAULT:
                quirks[name] = False
    missing = "empty" if missing_as_empty else "skip" if skip_missing else "error"
    options = EvalOptions(missing=missing, **quirks)
    if fmt in ("i2b2", "ngrid"):
        from ..evaluation.criteria import parse_criteria

        criteria = parse_criteria("official")
    with fail_on_error(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lmap = None
        if label_map:
            from ..corpus.labelmap import LabelMap

            lmap = LabelMap.load(label_map)
        if corpus_name is not None:
            from ..evaluation import evaluate as score

            gold_docs, system = cached_system(ctx, system_dir, corpus_name, trained_on or corpus_name, split, k, seed)
            if lmap is not None:
                gold_docs = [lmap.apply_document(d) for d in gold_docs]
            report = score(gold_docs, system, criteria=criteria, options=options)
            if lmap is not None:
                import dataclasses

                report = dataclasses.replace(report, known_names=lmap.names())
        else:
            report = evaluate_folders(gold, system_dir, fmt=input_format, label_map=lmap, criteria=criteria, options=options)
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    kwargs = {"documents": documents}
    if fmt == "table":
        kwargs["breakdown"] = breakdown
    text = render(report, fmt, **kwargs)
    if output:
        write_report(output, text)
    else:
        click.echo(text, nl=False)


def cached_system(ctx, spec: str, corpus_name: str, trained_on: str, split: str, k: int, seed: int):
    """Gold documents of ``corpus_name``'s split and the cached predictions of
    ``spec`` on them (trained on ``trained_on``'s training split). Nothing is
    computed: predictions missing from the cache are an error saying which
    command makes them."""
    from ..ensemble.caching import is_ensemble_spec, load_ensemble_member
    from ..errors import EnsembleDeidError
    from ..experiment.cache import PartKey, PredictionCache
    from ..experiment.cv import CrossValidation
    from ..studies.summary import prediction_spans
    from ..experiment.cv import parse_tagger_specs
    from .common import fail_on_error, workspace_of

    ws = workspace_of(ctx)
    corpus = ws.load(corpus_name)
    source = corpus if trained_on == corpus_name else ws.load(trained_on)
    if split == "train" and trained_on != corpus_name:
        raise click.BadParameter("out-of-fold predictions (--split train) exist only on the training corpus itself",
                                 param_hint="--split")
    gold = corpus.splits[split]
    engine = CrossValidation(source.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=k, seed=seed)
    how = (f"run 'ensemble-deid cv --corpus {trained_on} --taggers {spec}'"
           + (f" with --target {corpus_name}" if trained_on != corpus_name else "") + f" (--folds {k} --seed {seed})")
    if is_ensemble_spec(spec):
        if trained_on != corpus_name:
            raise click.BadParameter("cached ensembles are scored on their own corpus only", param_hint="--trained-on")
        member = load_ensemble_member(engine, spec.strip(), oof=split == "train")
        predictions = member.oof if split == "train" else member.test
    else:
        with fail_on_error():  # a bad spec: a usage error naming --system
            (tagger,) = parse_tagger_specs(spec, "--system")
        entry, external = engine.entry_key(tagger)
        if split == "test":
            parts = [PartKey.predict(entry, engine.target_fingerprints["test"])]
        elif external:
            parts = [PartKey.predict(entry, engine.train_fingerprint)]
        else:
            parts = [PartKey.fold(entry, engine.folds.fingerprint, f) for f in range(k)]
        bad = [p for p in parts if engine.cache.part_status(p) != "valid"]
        if bad:
            raise EnsembleDeidError(f"system {spec!r}: {len(bad)} of {len(parts)} cached part(s) of the {split} split of "
                                    f"{corpus_name!r} missing or corrupt (e.g. {bad[0]}); {how} first")
        predictions = {}
        for part in parts:
            predictions.update(engine.cache.read_part(part)[0])
    return gold, prediction_spans(gold, predictions)


def write_report(path: str, text: str) -> None:
    """Write atomically and owner-only (0600, whatever the umask), creating
    missing folders (0700). On any failure (disk full, no permission) nothing
    is left behind and the error is one line naming the file."""
    from ..files import private_dir, write_private

    target = Path(os.path.abspath(path))
    private_dir(target.parent)
    write_private(target, text, fsync=True)


if __name__ == "__main__":  # pragma: no cover
    evaluate()
