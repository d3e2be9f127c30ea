"""``ensemble-deid review``: the review page of a deidentify run, and applying a reviewer's decisions."""
from __future__ import annotations

import click

from .common import fail_on_error

_OUT = click.argument("out", type=click.Path(exists=True, file_okay=False))
_NOTES = click.option("--notes", "notes_dir", required=True, type=click.Path(exists=True, file_okay=False),
                      help="The notes folder the run de-identified (INPUT of deidentify).")
_SEED = click.option("--seed", type=int, default=None,
                     help="Surrogate mode: the run's --seed, when it was given one (a drawn seed is in OUT/run.json).")


@click.group("review")
def review():
    """Review what the ensemble doubts: OUT/review/queue.jsonl (written by deidentify), a page to decide
    on each item by keyboard, and the decisions applied to the outputs."""


@review.command("page")
@_OUT
@_NOTES
@_SEED
def page(out, notes_dir, seed):
    """(Re)write OUT/review/review.html: each item of the queue in its note, beside the output as released
    now. The page holds note text (PHI): owner-only, outside text/; open it in a browser on this machine."""
    from ..deid.review_apply import write_page_for_run

    with fail_on_error():
        path = write_page_for_run(out, notes_dir, seed)
    click.echo(f"review page written to {path} (it holds PHI: do not share it)")


@review.command("apply")
@_OUT
@_NOTES
@click.option("--decisions", "decisions", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The decisions file the review page saved.")
@_SEED
def apply(out, notes_dir, decisions, seed):
    """Apply a decisions file to OUT: the notes with decisions get their spans/ and text/ rewritten with the
    run's options (OUT/run.json). Running it again with the same file changes nothing; an interrupted apply
    is finished by running it again; a new decisions file replaces the last one. Rewrites the release report."""
    from ..deid.release import write_release_report
    from ..deid.review_apply import apply_decisions

    with fail_on_error():
        done = apply_decisions(out, notes_dir, decisions, seed)
        write_release_report(out, "review apply", run={"notes_rewritten": done.notes_rewritten,
                                                       "notes_changed_by_review": done.notes_changed})
    decided = ", ".join(f"{n} {a}" for a, n in sorted(done.decided.items())) or "none"
    click.echo(f"decisions applied: {decided}; {done.undecided} undecided; {done.notes_rewritten} note(s) rewritten, "
               f"{done.notes_changed} changed by the review; release report in {out}/release-report.md")
