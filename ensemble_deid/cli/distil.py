"""``ensemble-deid distil``: teach a fitted bundle (the teacher) to one fast
tagger (the student) and save the student as a bundle."""
from __future__ import annotations

import click

from .common import fail_on_error, workspace_of


@click.command("distil")
@click.argument("bundle", type=click.Path(file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="New folder for the student bundle.")
@click.option("--tagger", "tagger", default="crf", show_default=True,
              help="The student: any registered trained tagger (a spec as for cv --taggers).")
@click.option("--mix", "mixes", multiple=True, metavar="labels=L,augment=N,unlabelled=N",
              help="A training mix to choose from (repeatable): labels gold, teacher (the teacher's out-of-fold "
                   "spans) or union (gold plus the teacher's spans that overlap none); augment: surrogate copies "
                   "of each training note; unlabelled: copies of each teacher-labelled --unlabelled note. Default: "
                   "gold; gold+1 copy; union+1 copy; and, with --unlabelled, union+1 copy+unlabelled.")
@click.option("--grid", "grid", multiple=True, metavar="KEY=V1|V2",
              help="Student parameter values cross-validation chooses from (repeatable).")
@click.option("--unlabelled", type=click.Path(exists=True, file_okay=False),
              help="Folder of notes without gold (.txt) the teacher labels for the student (never its own training "
                   "notes).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=3, show_default=True,
              help="Patient-grouped folds of the choice on the training notes.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the folds and of the surrogate copies.")
@click.option("--locale", default="en_US", show_default=True, help="Faker locale of the surrogate copies' identifiers.")
@click.option("--date-order", type=click.Choice(["mdy", "dmy"]), default="mdy", show_default=True,
              help="How the surrogate copies read ambiguous numeric dates.")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def distil(ctx, bundle, out, tagger, mixes, grid, unlabelled, k, seed, locale, date_order, no_progress):
    """Train one fast tagger on what the teacher BUNDLE knows: its training
    notes' gold, its out-of-fold labels on them, surrogate copies of them and
    its labels on unlabelled notes, the mix and the student's settings chosen
    by cross-validation on the training notes with the teacher's objective.
    The student bundle records the teacher's checksum and what it was trained
    on. Run in the workspace that fitted the teacher (its cache holds the
    members' out-of-fold predictions); the fold results are kept there, so an
    interrupted run resumes."""
    from ..deid.distil import Mix, distil as run
    from ..ensemble.run import parse_grid

    say = lambda s: click.echo(s, err=True)  # noqa: E731
    with fail_on_error():
        from ..deid.shift import ShiftOptions, Shifter

        Shifter(ShiftOptions(locale=locale, date_order=date_order, seed=seed))  # an unknown locale: now, before any work
        done = run(workspace_of(ctx), bundle, out, tagger, [Mix.parse(m) for m in mixes] or None,
                   parse_grid(grid), unlabelled, k, seed, locale, date_order, progress=not no_progress, log=say,
                   warn=lambda msg: say(f"warning: {msg}"))
    click.echo(done.summary)
