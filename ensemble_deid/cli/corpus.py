"""``ensemble-deid corpus``: register, inspect and validate corpora."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from .common import fail_on_error, workspace_of


@click.group()
def corpus() -> None:
    """Register, inspect and validate corpora."""


@corpus.command("add")
@click.argument("name")
@click.option("--train", "train", required=True, multiple=True, type=click.Path(exists=True, file_okay=False), help="Folder of training documents (i2b2 XML or BRAT); repeat for several (e.g. the 2014 i2b2 Set1 and Set2).")
@click.option("--dev", "dev", type=click.Path(exists=True, file_okay=False), help="Optional folder of development documents.")
@click.option("--test", "test", required=True, type=click.Path(exists=True, file_okay=False), help="Folder of test documents.")
@click.option("--format", "fmt", type=click.Choice(["auto", "xml", "brat"]), default="auto", help="File format of the folders.")
@click.option("--label-map", type=click.Path(exists=True, dir_okay=False), help="TOML file renaming, merging or dropping types.")
@click.option("--group-pattern", default=None, help="Regex whose first group is the patient id in a document id (default: i2b2 2014 PPP-NN names; other documents are their own group).")
@click.option("--replace", is_flag=True, help="Replace a corpus already registered under NAME.")
@click.pass_context
def add(ctx, name, train, dev, test, fmt, label_map, group_pattern, replace):
    """Register corpus NAME and check that it loads."""
    from ..corpus.formats import I2B2_GROUP_PATTERN, compile_group_pattern
    from ..corpus.workspace import CorpusSpec, _embedded_corpora

    if name in _embedded_corpora():
        raise click.BadParameter(f"{name!r} is an embedded corpus: it needs no registration (use --corpus {name} "
                                 "as it is); register your own files under another name", param_hint="NAME")
    if not name.strip():
        raise click.BadParameter("a corpus name cannot be empty", param_hint="NAME")
    if group_pattern is not None:
        with fail_on_error():
            compile_group_pattern(group_pattern)
    ws = workspace_of(ctx)
    splits = {"train": list(train) if len(train) > 1 else train[0], "test": test, **({"dev": dev} if dev else {})}
    spec = CorpusSpec(name, splits, fmt, label_map, group_pattern or I2B2_GROUP_PATTERN)
    with fail_on_error():
        # Registration is the last, atomic step: an interrupted or failed load
        # leaves the registry as it was.
        ws.check_new(name, replace)
        loaded = ws.load_spec(spec.resolved())
        fingerprint = loaded.fingerprint("train")
        ws.add_corpus(spec, replace=replace)
    for split, docs in loaded.splits.items():
        click.echo(f"{split}: {len(docs)} documents, {sum(len(d.annotations) for d in docs):,} PHI")
    click.echo(f"registered corpus {name!r} (fingerprint {fingerprint})")


@corpus.command("ls")
@click.pass_context
def ls(ctx):
    """List registered corpora (and embedded ones not yet generated)."""
    from ..studies.table import terminal_table
    from ..corpus.workspace import _embedded_corpora

    ws = workspace_of(ctx)
    with fail_on_error():
        specs = ws.corpus_specs()
    rows = [[n, ", ".join(f"{s}={'+'.join(p) if isinstance(p, list) else p}" for s, p in spec.splits.items()), "embedded" if spec.embedded else "registered"] for n, spec in specs.items()]
    rows += [[n, "(generated on first use)", "embedded"] for n in _embedded_corpora() if n not in specs]
    # The split folders fold: two absolute paths a corpus made 156 columns (issue 34 item 8).
    click.echo(terminal_table(["name", "splits", "kind"], rows, "lll", wrap=(1,)) if rows else "no corpora registered")


@corpus.command("rm")
@click.argument("name")
@click.pass_context
def rm(ctx, name):
    """Unregister corpus NAME (its files are left alone)."""
    with fail_on_error():
        workspace_of(ctx).remove_corpus(name)
    click.echo(f"removed {name!r} from the registry")


@corpus.command("show")
@click.argument("name")
@click.option("--by", type=click.Choice(["category", "type", "both"]), default="both", help="Break PHI counts down by parent category, subtype, or both.")
@click.pass_context
def show(ctx, name, by):
    """Documents, tokens and PHI per category and subtype, per split."""
    from ..corpus.bio import alignment_loss
    from ..corpus.formats.schemes import shown_labels
    from ..corpus.labelmap import LabelMap
    from ..studies.table import render_table

    with fail_on_error():
        loaded = workspace_of(ctx).load(name)
    splits = list(loaded.splits)
    click.echo(f"corpus {name!r}  fingerprints " + ", ".join(f"{s}={fp}" for s, fp in loaded.fingerprints.items()))
    rows = []
    for split in splits:
        docs = loaded.splits[split]
        report = alignment_loss(docs)
        rows.append([
            split, len(docs), len({d.group for d in docs}), sum(len(d.tokens) for d in docs),
            sum(len(d.annotations) for d in docs), f"{100 * report.loss:.2f}%",
        ])
    click.echo(render_table(["split", "documents", "patients", "tokens", "PHI", "alignment loss"], rows))
    levels = {"category": ["category"], "type": ["type"], "both": ["category", "type"]}[by]
    # A type or category outside the known schemes and the label map may be a PHI word: shown as unknown-N.
    known = LabelMap.load(loaded.spec.label_map).names() if loaded.spec and loaded.spec.label_map else ()
    for level in levels:
        counts = {s: Counter((a.category if level == "category" else a.label) for d in loaded.splits[s] for a in d.annotations) for s in splits}
        keys = sorted(set().union(*counts.values()))
        shown = shown_labels(keys, known)
        totals = {s: sum(counts[s].values()) or 1 for s in splits}
        table = [[shown[k]] + [x for s in splits for x in (counts[s][k], f"{100 * counts[s][k] / totals[s]:.1f}%")] for k in keys]
        headers = [level] + [h for s in splits for h in (s, f"{s} %")]
        click.echo()
        click.echo(render_table(headers, table, align="l" + "r" * (len(headers) - 1)))


@corpus.command("check")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["auto", "xml", "brat"]), default="auto", help="File format of the folder.")
@click.option("--label-map", type=click.Path(exists=True, dir_okay=False), help="Label map used to find parents of BRAT types.")
@click.option("--max-shown", type=click.IntRange(min=1), default=200, help="Show at most this many problems (all are counted).")
def check(directory, fmt, label_map, max_shown):
    """Validate every file of DIRECTORY and report all problems at once.

    Messages name the file, the tag id and the field, never the PHI text.
    Exits with status 1 when any problem is fatal.
    """
    from ..errors import ERROR, printable
    from ..corpus.formats import read_directory
    from ..corpus.labelmap import LabelMap

    with fail_on_error():
        lm = LabelMap.load(label_map) if label_map else None
        docs, problems = read_directory(directory, fmt, lm)
    for p in problems[:max_shown]:
        click.echo(str(p), err=True)
    if len(problems) > max_shown:
        click.echo(f"... {len(problems) - max_shown} more problem(s) not shown", err=True)
    kinds = Counter(p.severity for p in problems)
    files = len({p.file for p in problems})
    click.echo(
        f"{printable(directory)}: {len(docs)} document(s) loaded, {sum(len(d.annotations) for d in docs):,} PHI; "
        f"{kinds[ERROR]} error(s), {kinds['warning']} warning(s) in {files} file(s)"
    )
    if kinds[ERROR]:
        raise SystemExit(1)

from .synth import synth  # noqa: E402

corpus.add_command(synth)


def _split_of(corpus, split: str, corpus_name: str):
    if split not in corpus.splits:
        raise click.BadParameter(f"corpus {corpus_name!r} has no {split!r} split (it has {', '.join(corpus.splits)})",
                                 param_hint="--split")
    return corpus.splits[split]


def _check_parent(path: Path, option: str) -> None:
    if not path.parent.is_dir():
        raise click.BadParameter(f"{path.parent}: no such folder (create it first)", param_hint=option)


@corpus.command("export")
@click.argument("name")
@click.option("--split", default="test", show_default=True, help="Split to write (train, test, or dev when registered).")
@click.option("--format", "fmt", type=click.Choice(["conll", "jsonl", "docbin"]), required=True,
              help="conll: TOKEN<TAB>BIO-tag lines, a -DOCSTART- ID line per document; jsonl: one document a line "
                   "with its text and span offsets; docbin: a spaCy DocBin (needs spaCy).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="File to write (owner-only).")
@click.pass_context
def export(ctx, name, split, fmt, out):
    """Write a corpus split's gold annotations for other tools (CoNLL, JSONL, spaCy DocBin).

    Predictions are written the same way by 'cache export --format'."""
    from ..corpus.formats.interchange import export_documents

    out_path = Path(out)
    _check_parent(out_path, "--out")
    with fail_on_error():
        corpus = workspace_of(ctx).load(name)
        docs = _split_of(corpus, split, name)
        export_documents(docs, fmt, out_path)
    click.echo(f"wrote {len(docs)} document(s) of {name!r} {split} to {out_path} ({fmt})")


@corpus.command("import-predictions")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--split", default="test", show_default=True, help="Split the predictions are on.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="New folder for the predictions as i2b2 XML, one file per document: what 'evaluate --system' "
                   "and the precomputed tagger read.")
@click.pass_context
def import_predictions(ctx, name, file, split, out):
    """Turn another tool's predictions (CoNLL: token and BIO tag per line, a
    -DOCSTART- ID line per document; or JSONL, .jsonl) on a corpus split into
    system output: i2b2 XML files with the corpus's texts.

    CoNLL tokens are found in the document text in order, so any tokenization
    imports; tags are O, B-LABEL, I-LABEL with LABEL a CATEGORY:TYPE (or a
    category alone)."""
    from ..corpus.formats import write_i2b2_xml
    from ..corpus.formats.interchange import import_spans
    from ..files import private_dir

    out_path = Path(out)
    if out_path.exists():
        raise click.BadParameter(f"{out_path} exists: give a new folder", param_hint="--out")
    _check_parent(out_path, "--out")
    with fail_on_error():
        corpus = workspace_of(ctx).load(name)
        docs = _split_of(corpus, split, name)
        spans = import_spans(file, docs)  # every problem before anything is written
        private_dir(out_path)
        for doc in docs:
            if doc.id in spans:
                write_i2b2_xml(doc.with_annotations(spans[doc.id]), out_path / f"{doc.id}.xml")
    missing = len(docs) - len(spans)
    click.echo(f"wrote {len(spans)} document(s) to {out_path}"
               + (f"; {missing} document(s) of the split have no predictions in {file}" if missing else ""))


@corpus.command("shift")
@click.argument("name")
@click.option("--split", "split_names", multiple=True,
              help="Split to copy (repeatable; default: every split of the corpus).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="New (or empty) folder for the shifted copy: one i2b2 XML folder per split with the gold moved, "
                   "and SHIFT.json (options, counts; no text).")
@click.option("--register", "register", default=None, metavar="NEW_NAME",
              help="Register the copy as corpus NEW_NAME (needs the train and test splits), e.g. for "
                   "'cv --corpus NAME --target NEW_NAME'.")
@click.option("--no-identifiers", "identifiers", is_flag=True, flag_value=False, default=True,
              help="Keep the identifiers (by default every gold span is re-drawn by the surrogate generator).")
@click.option("--locale", default="en_US", show_default=True,
              help="Faker locale the re-drawn names and places come from (another one shifts their distribution).")
@click.option("--date-order", type=click.Choice(["mdy", "dmy"]), default="mdy", show_default=True,
              help="How to read ambiguous numeric dates when they are moved.")
@click.option("--case", type=click.Choice(["none", "lower", "upper"]), default="none", show_default=True,
              help="Write every note in lower or upper case.")
@click.option("--whitespace", type=click.Choice(["none", "collapse", "expand"]), default="none", show_default=True,
              help="collapse: runs of spaces and blank lines made single; expand: line breaks doubled, two spaces "
                   "after a sentence.")
@click.option("--headers", is_flag=True, help="Rewrite section headers at the start of a line (other case, ' -' "
              "instead of ':').")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the re-drawn identifiers: the same seed gives the same copy.")
@click.pass_context
def shift(ctx, name, split_names, out, register, identifiers, locale, date_order, case, whitespace, headers, seed):
    """Write a shifted copy of corpus NAME with its gold kept: identifiers
    re-drawn from another distribution, case, whitespace and section headers
    changed, so that members and ensembles can be measured on notes unlike
    their training notes (see the guide, "Notes unlike the training notes").
    Prints counts only."""
    from ..corpus.workspace import CorpusSpec
    from ..deid.shift import ShiftCounts, ShiftOptions, Shifter, write_shifted

    ws = workspace_of(ctx)
    with fail_on_error():
        options = ShiftOptions(identifiers=identifiers, locale=locale, date_order=date_order, case=case,
                               whitespace=whitespace, headers=headers, seed=seed)
        shifter = Shifter(options)  # a bad locale: now, before the corpus is read
        if register is not None:  # an embedded or registered name, or an empty one: refused before any work
            from ..corpus.workspace import _embedded_corpora

            if register in _embedded_corpora():
                raise click.BadParameter(f"{register!r} is an embedded corpus", param_hint="--register")
            ws.check_new(register)
        source = ws.load(name)
        wanted = list(dict.fromkeys(split_names)) or list(source.splits)
        for split in wanted:
            _split_of(source, split, name)
        if register is not None and not {"train", "test"} <= set(wanted):
            raise click.BadParameter("a registered corpus needs the train and test splits", param_hint="--register")
        shifted, total = {}, ShiftCounts()
        for split in wanted:
            shifted[split], counts = shifter.shift_all(source.splits[split])
            total.add(counts)
        folders = write_shifted(shifted, out, {"shift": 1, "source": {"corpus": name, "splits": wanted},
                                               "options": options.as_record(), "counts": vars(total)})
        if register is not None:
            group_pattern = source.spec.group_pattern if source.spec is not None else None
            ws.add_corpus(CorpusSpec(register, {s: str(p) for s, p in folders.items()}, "xml", None, group_pattern))
    click.echo(f"wrote {total.documents} shifted document(s) of {name!r} ({', '.join(wanted)}) to {out}: "
               f"{total.redrawn} of {total.spans} identifiers re-drawn, {total.headers} headers and "
               f"{total.whitespace} whitespace runs changed, {total.dropped_edits} edits left out (they cut a gold span)")
    if register is not None:
        click.echo(f"registered corpus {register!r}")
