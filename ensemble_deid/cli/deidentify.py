"""``ensemble-deid deidentify``: de-identify a folder of notes with a model bundle."""
from __future__ import annotations

import click

from .common import connect_timeout_option, fail_on_error


@click.command("deidentify")
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.argument("input_dir", metavar="INPUT", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder (text/ and spans/; created owner-only).")
@click.option("--mode", type=click.Choice(["tag", "mask", "surrogate"]), default="tag",
              help="tag: [DATE], [NAME:PATIENT]; mask: ****; surrogate: realistic, consistent replacements.")
@click.option("--spans", "span_formats", type=click.Choice(["xml", "brat"]), multiple=True, default=("xml",),
              help="Format(s) of the predicted spans per note (repeatable).")
@click.option("--seed", type=int, default=None, help="Surrogate seed (default: a random one, not shown). The same seed "
              "gives the same surrogates.")
@click.option("--date-order", type=click.Choice(["mdy", "dmy"]), default="mdy",
              help="Surrogate mode: how to read ambiguous numeric dates such as 03/04/2012.")
@click.option("--locale", default="en_US", help="Surrogate mode: Faker locale of surrogate names and places (es_ES for Spanish).")
@click.option("--save-mapping", type=click.Path(dir_okay=False),
              help="Surrogate mode: also write the original -> surrogate mapping (contains PHI; owner-only; "
              "checked before any work and kept up to date after every batch).")
@click.option("--mark-surrogates", is_flag=True,
              help="Surrogate mode: also write OUT/review/<id>.txt, the text with every replaced span in [[ ]] (a "
              "missed real name reads like a surrogate: review this copy, never share it), and OUT/review/<id>.json, "
              "the replaced spans' offsets in text/<id>.txt.")
@click.option("--group-pattern", default=None, help="Regular expression whose first group gives a note's patient "
              "from its id (surrogates are consistent per patient; default: each note is its own patient).")
@click.option("--batch-size", type=click.IntRange(min=1), default=32, help="Notes tagged together.")
@click.option("--allow-external", "allow_external", multiple=True, metavar="NAME=PATH",
              help="Let the bundle's external-system member NAME (physionet-deid, mist) run the program at PATH on "
              "this machine (repeatable). Without it such a member is refused: a bundle never chooses a program.")
@click.option("--trust", "trusted", multiple=True, metavar="SHA256",
              help="Accept only a bundle whose manifest checksum is one of these (repeatable; 'fit' prints it: get it "
              "from the bundle's author over a channel you trust). The checksums alone show integrity, not origin.")
@click.option("--operating-point", "operating_point", default=None, metavar="JSON",
              help='Re-point the bundle\'s ensemble to another decision threshold without retraining, e.g. '
                   '\'{"*": -0.8, "NAME": -1.2}\' (the held-out curve of the thresholds is in the bundle manifest; '
                   '\'null\': the method\'s own rule).')
@click.option("--jobs", type=click.IntRange(min=1), default=1,
              help="Worker processes on this machine (--backend local), each loading the bundle once; 1: tag here.")
@click.option("--backend", type=click.Choice(["local", "dask", "ray"]), default="local",
              help="Where chunks of notes are tagged: local processes (--jobs), the workers of a Dask scheduler "
              "(--scheduler) or of a Ray cluster (--address). Workers must see MODEL, INPUT and --out at the same paths.")
@click.option("--scheduler", default=None, metavar="ADDR", help="--backend dask: the scheduler, e.g. tcp://HOST:8786.")
@click.option("--address", default=None, metavar="ADDR", help="--backend ray: the cluster's head, e.g. HOST:6379.")
@connect_timeout_option
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def deidentify(model, input_dir, out, mode, span_formats, seed, date_order, locale, save_mapping, mark_surrogates,
               group_pattern,
               batch_size, allow_external, trusted, operating_point, jobs, backend, scheduler, address, connect_timeout,
               no_progress):
    """De-identify every note in INPUT (a folder of .txt notes, BRAT .txt/.ann
    or i2b2 XML) with the bundle MODEL: per note, the predicted spans and the
    de-identified text go to --out. Notes already done are skipped (resume);
    a resume must use the same options (recorded in OUT/run.json; without
    --seed it reuses the first run's seed). When INPUT has gold annotations,
    prints the scores and the leak rate."""
    import contextlib
    import sys

    from ..corpus.formats import compile_group_pattern
    from ..deid import Deidentifier, Surrogator
    from ..deid.batch import FolderDeidentifier, scan_notes

    if save_mapping and mode != "surrogate":
        raise click.BadParameter("only surrogate mode has a mapping", param_hint="--save-mapping")
    if mark_surrogates and mode != "surrogate":
        raise click.BadParameter("only surrogate mode marks its surrogates", param_hint="--mark-surrogates")
    programs = {}
    for item in allow_external:
        name, sep, path = item.partition("=")
        if not (sep and name.strip() and path.strip()):
            raise click.BadParameter(f"{item!r} is not NAME=PATH", param_hint="--allow-external")
        programs[name.strip()] = path.strip()
    point = _operating_point(operating_point)
    if scheduler and backend != "dask":
        raise click.BadParameter("only --backend dask has a scheduler", param_hint="--scheduler")
    if address and backend != "ray":
        raise click.BadParameter("only --backend ray has an --address", param_hint="--address")
    if backend == "dask" and not scheduler:
        raise click.BadParameter("--backend dask needs --scheduler tcp://HOST:PORT", param_hint="--scheduler")
    if backend == "ray" and not address:
        raise click.BadParameter("--backend ray needs --address HOST:PORT", param_hint="--address")
    with fail_on_error():  # options that need no model are checked before it is loaded
        if group_pattern is not None:
            compile_group_pattern(group_pattern)
        surrogates = None
        if mode == "surrogate":
            surrogates = Surrogator(seed=seed, date_order=date_order, locale=locale, record=bool(save_mapping))
        deid = Deidentifier.load(model, allow_external=programs, trusted=trusted or None)
        if operating_point is not None:
            try:
                deid.method.repoint(point)
            except (AttributeError, ValueError) as exc:
                raise click.BadParameter(str(exc) if deid.method is not None else "the bundle holds no ensemble",
                                         param_hint="--operating-point")
        click.echo(selection_line(deid, operating_point is not None), err=True)
        from ..deid.bundle import training_text_notice

        notice = training_text_notice(model, deid.manifest)  # whoever runs a bundle may not know what it holds
        if notice:
            click.echo(notice, err=True)
        runner = FolderDeidentifier(deid, mode, span_formats, surrogates, group_pattern, batch_size, save_mapping,
                                    mark_surrogates)
        total = len(scan_notes(input_dir))
        from ..progress import progress_bar

        executor = contextlib.nullcontext()
        if backend != "local" or jobs > 1:
            from pathlib import Path

            from ..deid.distribute import UNSET, BundleRef, Distributor

            ref = BundleRef(str(Path(model).resolve()), deid.manifest.get("manifest_sha256"), programs,
                            tuple(trusted) or None, UNSET if operating_point is None else point)
            executor = Distributor(ref, backend, jobs, scheduler or address, connect_timeout=connect_timeout)
        with executor as pool, progress_bar(total=total, desc="deidentify", unit="note", disable=no_progress,
                                            file=sys.stderr) as bar:
            run = runner.run(input_dir, out, progress=bar.update, executor=pool)
    if run.leftovers_removed:
        click.echo(f"removed {run.leftovers_removed} temp file(s)/folder(s) left by an interrupted run in {out}")
    click.echo(f"{run.processed} note(s) de-identified, {run.skipped} already done; {run.tokens} tokens in "
               f"{run.seconds:.1f} s ({run.tokens_per_second:,.0f} tokens/s); outputs in {out}")
    if run.clinical_values:
        click.echo(f"warning: {run.clinical_values} span(s) tagged DATE read as clinical values (a blood pressure, a lab "
                   "value, a dose) and were left as written; check them"
                   + (" in review/" if mark_surrogates else " (--mark-surrogates marks them)"), err=True)
    if run.has_gold:
        with fail_on_error():
            click.echo(score_report(input_dir, out, deid.labels))


def _operating_point(text):
    import json

    if text is None:
        return None
    try:
        point = json.loads(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not JSON (e.g. '{{\"*\": -0.8}}')", param_hint="--operating-point")
    from ..ensemble.base import check_operating_point

    if not check_operating_point(point):
        raise click.BadParameter(f"{text!r}: expected null or an object of thresholds such as "
                                 "'{\"*\": -0.8, \"NAME\": -1.2}'", param_hint="--operating-point")
    return point


def selection_line(deid, repointed: bool) -> str:
    """What the bundle's ensemble was chosen for, and where it operates."""
    sel = deid.manifest.get("selection") or {}
    if deid.method is None or not sel:
        return "bundle: a single tagger (no ensemble choice)"
    objective = sel.get("objective", sel.get("metric", "f1"))
    method = deid.method
    point = getattr(method, "operating_point_", None) or method.get_params().get("operating_point")
    reached = sel.get("targets_reached") or {}
    missed = [k for k, ok in reached.items() if not ok]
    line = (f"bundle: {sel.get('method', method.name)} chosen for objective {objective}; operating point "
            f"{point if point else 'the method’s own rule'}")
    if repointed:
        line += f" (re-pointed; fitted for {sel.get('operating_point') or 'the method’s own rule'})"
    elif missed:
        line += f"; target not reached on the out-of-fold data for {', '.join(missed)}"
    return line


def score_report(input_dir, out, labels) -> str:
    """Strict and token scores and the leak rate per category (figures only)."""
    from ..deid.batch import gold_and_predicted
    from ..evaluation import evaluate
    from ..studies.table import render_table

    gold, predicted = gold_and_predicted(input_dir, out, labels)
    report = evaluate(gold, predicted, criteria="strict,token")
    lines = [f"\nscores against the gold annotations of {len(gold)} note(s):"]
    rows = [[name, r.micro.precision, r.micro.recall, r.micro.f1] for name, r in report.results.items()]
    lines.append(render_table(["criterion", "P", "R", "F1"], rows))
    leak = report.leak
    rows = [[cat, rates.chars, rates.leaked_chars, rates.char_rate]
            for cat, rates in [("all", leak.overall), ("HIPAA", leak.hipaa), *leak.by_category.items()] if rates.chars]
    lines.append("leak rate: gold PHI characters left readable in the de-identified text (not inside a predicted span):")
    lines.append(render_table(["category", "PHI chars", "leaked", "leak rate"], rows))
    return "\n".join(lines)
