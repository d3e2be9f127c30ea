"""What a command interrupted by Ctrl-C kept, said instead of click's bare
"Aborted!" (issue 53 item 11).

The long commands keep their work as they go: ``cv`` and everything built on
it (``ensemble``, ``prune``, ``study``, ``demo``, ``fit``, ``compare``...)
commit each finished prediction part to the cache, ``deidentify`` each
finished note to its output folder. A user who stops one needs to know that
this work is not lost and that the same command resumes from it.
"""
from __future__ import annotations

from pathlib import Path

import click

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
# The commands that compute prediction parts (the cache keeps each finished one).
CACHE_COMMANDS = ("cv", "ensemble", "prune", "study", "demo", "fit")
_BEFORE = "ensemble_deid.parts_before"  # ctx.meta key


def committed_parts(cache_root: Path) -> dict[Path, tuple[int, bool]]:
    """Every part committed to the workspace cache: its record (``.json``,
    written last) -> (modification time in ns, whether an ensemble's). Taken
    when a command starts and again when it is interrupted, the difference is
    what the run finished, whichever process (a worker) wrote it."""
    from ..experiment.cache import PredictionCache

    cache = PredictionCache(cache_root, published=[])
    out = {}
    for entry_dir, manifest in cache.entries():
        ensemble = str((manifest or {}).get("tagger", "")).startswith("ensemble.")
        for base in cache.part_files(entry_dir):
            record = base.with_suffix(".json")
            try:
                out[record] = (record.stat().st_mtime_ns, ensemble)
            except OSError:  # not committed
                continue
    return out


def finished_parts(cache_root: Path, before: dict[Path, tuple[int, bool]]) -> tuple[int, int]:
    """(tagger parts, ensemble parts) committed since ``before`` (``committed_parts``)."""
    new = [ensemble for record, (mtime, ensemble) in committed_parts(cache_root).items()
           if before.get(record, (None,))[0] != mtime]
    return len(new) - sum(new), sum(new)


def cache_message(command: str, cache_root: Path, before: dict[Path, tuple[int, bool]]) -> str:
    """The sentence for a command that works through the prediction cache."""
    members, ensembles = finished_parts(cache_root, before)
    kept = [f"{members} tagger part(s)"] if members or not ensembles else []
    kept += [f"{ensembles} ensemble part(s)"] if ensembles else []
    if members or ensembles:
        done = (f"{' and '.join(kept)} finished in this run {'is' if members + ensembles == 1 else 'are'} kept "
                f"in the cache {cache_root}.")
    else:
        done = f"No prediction part was finished in this run (the cache {cache_root} keeps what earlier runs made)."
    under_way = "a part that was under way starts" if command == "cv" else \
        "a part, or an ensemble's parameter search, that was under way starts"
    return (f"interrupted: '{command}' stopped by Ctrl-C. {done} Run the same command again to resume: finished "
            f"parts are reused and only the rest is computed ({under_way} again).")


def notes_message(out: Path, finished: int, total: int) -> str:
    """The sentence for ``deidentify``: notes are its units of work."""
    return (f"interrupted: 'deidentify' stopped by Ctrl-C. {finished} of {total} note(s) are done and kept in {out}. "
            "Run the same command again, with the same options, to resume: done notes are skipped (a note that "
            "was being written is redone).")


def stop(message: str) -> None:
    """Say ``message`` on stderr, fitted to 80 columns, and exit with 130."""
    from .common import fill

    click.echo(fill(message, 80, indent=""), err=True)
    raise click.exceptions.Exit(EXIT_INTERRUPTED)


def note_start(ctx: click.Context) -> None:
    """For the top-level group's callback: what the cache holds as a command
    that computes parts starts (``report_interrupt`` compares)."""
    if ctx.invoked_subcommand in CACHE_COMMANDS:
        ctx.meta[_BEFORE] = committed_parts(ctx.obj.cache_dir)


def report_interrupt(ctx: click.Context) -> None:
    """For the top-level group: what the interrupted subcommand kept."""
    command = ctx.invoked_subcommand or "ensemble-deid"
    before = ctx.meta.get(_BEFORE)
    if before is None:
        stop(f"interrupted: '{command}' stopped by Ctrl-C.")
    stop(cache_message(command, ctx.obj.cache_dir, before))
