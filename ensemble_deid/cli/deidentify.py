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
              help="Surrogate mode: also write OUT/marked/<id>.txt, the text with every replaced span in [[ ]] (a "
              "missed real name reads like a surrogate: review this copy, never share it), and OUT/marked/<id>.json, "
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
@click.option("--review", "review", default="budget", metavar="BUDGET",
              help="Write OUT/review/queue.jsonl, the readable spans most likely PHI: 'budget' (default: the bundle's "
              "review budget, chosen by CV when it was fitted; no queue when it has none), 'none', 'recall>=R' "
              "(the risk threshold whose review reached recall R out of fold) or 'items<=N' (each note's N riskiest).")
@click.option("--review-recall", type=float, default=None, metavar="R", help="Shorthand for --review recall>=R.")
@click.option("--review-items", type=click.IntRange(min=0), default=None, metavar="N",
              help="Shorthand for --review items<=N.")
@click.option("--jobs", type=click.IntRange(min=1), default=1,
              help="Worker processes on this machine (--backend local), each loading the bundle once; 1: tag here.")
@click.option("--backend", type=click.Choice(["local", "dask", "ray"]), default="local",
              help="Where chunks of notes are tagged: local processes (--jobs), the workers of a Dask scheduler "
              "(--scheduler) or of a Ray cluster (--address). Workers must see MODEL, INPUT and --out at the same paths.")
@click.option("--scheduler", default=None, metavar="ADDR", help="--backend dask: the scheduler, e.g. tcp://HOST:8786.")
@click.option("--address", default=None, metavar="ADDR", help="--backend ray: the cluster's head, e.g. HOST:6379.")
@connect_timeout_option
@click.option("--rename", type=click.Choice(["hash", "index"]), default=None,
              help="Write the outputs under neutral names instead of the notes' file names (which often hold PHI): "
              "hash: note-<keyed hash of the name>, index: note-000001...; the mapping is OUT/names.json "
              "(owner-only, never in text/). Default: the notes' names, with a warning when they look like PHI.")
@click.option("--allow-empty", is_flag=True, help="Accept a run that tags no PHI in any of its notes (by default an "
              "error over 5 notes or more: their text/ would be the notes unchanged).")
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def deidentify(model, input_dir, out, mode, span_formats, seed, date_order, locale, save_mapping, mark_surrogates,
               group_pattern, batch_size, allow_external, trusted, operating_point, review, review_recall, review_items,
               jobs, backend, scheduler, address, connect_timeout, rename, allow_empty, no_progress):
    """De-identify every note in INPUT (a folder of .txt notes, BRAT .txt/.ann
    or i2b2 XML) with the bundle MODEL: per note, the predicted spans and the
    de-identified text go to --out. Notes already done are skipped (resume);
    a resume must use the same options (recorded in OUT/run.json; without
    --seed it reuses the first run's seed). When INPUT has gold annotations,
    prints the scores and the leak rate."""
    import contextlib
    import sys

    from ..corpus.formats import compile_group_pattern
    from ..deid import Deidentifier
    from ..deid.batch import FolderDeidentifier, check_locations, scan_folder, skipped_summary

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
    review = _review_option(review, review_recall, review_items)
    if scheduler and backend != "dask":
        raise click.BadParameter("only --backend dask has a scheduler", param_hint="--scheduler")
    if address and backend != "ray":
        raise click.BadParameter("only --backend ray has an --address", param_hint="--address")
    if backend == "dask" and not scheduler:
        raise click.BadParameter("--backend dask needs --scheduler tcp://HOST:PORT", param_hint="--scheduler")
    if backend == "ray" and not address:
        raise click.BadParameter("--backend ray needs --address HOST:PORT", param_hint="--address")
    with fail_on_error():  # options that need no model are checked before it is loaded
        check_locations(input_dir, out, save_mapping, model)
        if group_pattern is not None:
            compile_group_pattern(group_pattern)
        surrogates = None
        if mode == "surrogate":
            from ..deid.surrogate import Surrogator

            surrogates = Surrogator(seed=seed, date_order=date_order, locale=locale, record=bool(save_mapping))
        deid = Deidentifier.load(model, allow_external=programs, trusted=trusted or None)
        if operating_point is not None:
            try:
                deid.repoint(point)
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="--operating-point")
        click.echo(selection_line(deid, operating_point is not None), err=True)
        from ..deid.bundle import training_text_notice

        notice = training_text_notice(model, deid.manifest)  # whoever runs a bundle may not know what it holds
        if notice:
            click.echo(notice, err=True)
        if review == "budget":  # the bundle's own, when it has one
            review = deid.review.budget if deid.review is not None else None
        elif review is not None and deid.review is None:
            raise click.BadParameter("the bundle holds no review model (fit an ensemble with --review)",
                                     param_hint="--review")
        runner = FolderDeidentifier(deid, mode, span_formats, surrogates, group_pattern, batch_size, save_mapping,
                                    mark_surrogates, rename=rename, allow_empty=allow_empty, review=review)
        total = len(scan_folder(input_dir)[0])
        from ..progress import progress_bar

        executor = contextlib.nullcontext()
        if backend != "local" or jobs > 1:
            from pathlib import Path

            from ..deid.distribute import UNSET, BundleRef, Distributor

            ref = BundleRef(str(Path(model).resolve()), deid.manifest.get("manifest_sha256"), programs,
                            tuple(trusted) or None, UNSET if operating_point is None else point)
            executor = Distributor(ref, backend, jobs, scheduler or address, connect_timeout=connect_timeout,
                                   notice=lambda line: click.echo(line, err=True))
        finished = [0]  # notes done, skipped ones included: said if Ctrl-C stops the run

        def step(n):
            finished[0] += n
            bar.update(n)

        try:
            with executor as pool, progress_bar(total=total, desc="deidentify", unit="note", disable=no_progress,
                                                file=sys.stderr) as bar:
                run = runner.run(input_dir, out, progress=step, executor=pool)
        except KeyboardInterrupt:
            from .interrupt import notes_message, stop

            stop(notes_message(out, finished[0], total))
        page = write_review_page(out, input_dir, runner)
    if run.leftovers_removed:
        click.echo(f"removed {run.leftovers_removed} temp file(s)/folder(s) left by an interrupted run in {out}")
    if run.not_notes:
        click.echo(f"warning: {sum(run.not_notes.values())} file(s) in INPUT not read as notes "
                   f"({skipped_summary(run.not_notes)}); notes are *.txt (BRAT with a .ann) or *.xml, directly in "
                   "INPUT", err=True)
    for line in run.warnings:
        click.echo(line, err=True)
    click.echo(f"{run.processed} note(s) de-identified, {run.skipped} already done; {run.tokens} tokens in "
               f"{run.seconds:.1f} s ({run.tokens_per_second:,.0f} tokens/s); outputs in {out}")
    if page is not None:
        click.echo(f"review page (holds PHI, owner-only, not for sharing): {page}")
    if run.clinical_values:
        click.echo(f"warning: {run.clinical_values} span(s) tagged DATE or AGE read as clinical values (a blood\n"
                   "  pressure, a lab value, a dose): left as written where they cannot be dates,\n"
                   "  else changed as dates; check them " + ("in marked/" if mark_surrogates else "(--mark-surrogates)"),
                   err=True)
    if run.has_gold:
        with fail_on_error():
            click.echo(score_report(input_dir, out, deid.labels))


def _review_option(text, recall, items):
    """'budget' (the bundle's), None (no queue) or a review_risk.Budget, checked before the model is loaded."""
    given = [t for t, v in (("--review-recall", recall), ("--review-items", items)) if v is not None]
    if len(given) > 1 or (given and text != "budget"):
        raise click.BadParameter("give one of --review, --review-recall and --review-items", param_hint=given[-1])
    if recall is not None:
        text = f"recall>={recall!r}"
    elif items is not None:
        text = f"items<={items}"
    if text.strip().lower() == "budget":
        return "budget"
    # Imported only for a budget given here: the ensemble package costs a bundle without one a second.
    from ..ensemble.review_risk import parse_budget

    try:
        return parse_budget(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=given[-1] if given else "--review") from None


def _operating_point(text):
    import json

    if text is None:
        return None
    shown = text if len(text) <= 60 else text[:60] + "..."
    try:
        point = json.loads(text)
    except ValueError:
        raise click.BadParameter(f"{shown!r} is not JSON (e.g. '{{\"*\": -0.8}}')", param_hint="--operating-point")
    except RecursionError:
        raise click.BadParameter("nested too deeply: expected null or an object of thresholds such as "
                                 "'{\"*\": -0.8}'", param_hint="--operating-point") from None
    if not (point is None or isinstance(point, dict)):  # the thresholds themselves: checked against the model
        raise click.BadParameter(f"{shown!r}: expected null or an object of thresholds such as "
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

    import dataclasses

    gold, predicted = gold_and_predicted(input_dir, out, labels)
    report = evaluate(gold, predicted, criteria="strict,token")
    # A gold file's element or type name is data (a PHI word in the wrong place): known names and the
    # model's own are printed, any other as unknown-N.
    report = dataclasses.replace(report, known_names=frozenset(p for lab in labels for p in str(lab).split(":")))
    shown = report.shown_names()
    lines = [f"\nscores against the gold annotations of {len(gold)} note(s):"]
    rows = [[name, r.micro.precision, r.micro.recall, r.micro.f1] for name, r in report.results.items()]
    lines.append(render_table(["criterion", "P", "R", "F1"], rows))
    leak = report.leak
    rows = [[cat, rates.chars, rates.leaked_chars, rates.char_rate]
            for cat, rates in [("all", leak.overall), ("HIPAA", leak.hipaa),
                               *((shown.get(k, k), v) for k, v in leak.by_category.items())] if rates.chars]
    lines.append("leak rate: gold PHI characters left readable in the de-identified text (not inside a predicted span):")
    lines.append(render_table(["category", "PHI chars", "leaked", "leak rate"], rows))
    return "\n".join(lines)


def write_review_page(out, input_dir, runner):
    """The review page of the run's queue (OUT/review/review.html), when the
    run wrote one; None otherwise."""
    from ..deid.review import queue_path
    from ..deid.review_apply import write_page_for_run

    if not queue_path(out).exists():
        return None
    return write_page_for_run(out, input_dir, writer=runner)
