"""The ``ensemble-deid`` command line.

Commands live one per module and are imported only when run (or when --help
lists them), so heavy libraries such as torch load only for the commands that
need them and ``ensemble-deid --help`` stays fast. Command modules must keep
heavy imports inside their functions.
"""
from __future__ import annotations

import importlib

import click

from .. import __version__

# name -> "module:attribute". Add a line here to add a command.
COMMANDS: dict[str, str] = {
    "corpus": "ensemble_deid.cli.corpus:corpus",
    "evaluate": "ensemble_deid.cli.evaluate:evaluate",
    "cache": "ensemble_deid.cli.cache_cmd:cache",
    "cv": "ensemble_deid.cli.cv:cv",
    "compare": "ensemble_deid.cli.compare:compare",
    "ensemble": "ensemble_deid.cli.ensemble:ensemble",
    "fit": "ensemble_deid.cli.fit:fit",
    "distil": "ensemble_deid.cli.distil:distil",
    "deidentify": "ensemble_deid.cli.deidentify:deidentify",
    "prune": "ensemble_deid.cli.prune:prune",
    "report": "ensemble_deid.cli.report:report",
    "review": "ensemble_deid.cli.review:review",
    "taggers": "ensemble_deid.cli.taggers:taggers",
    "study": "ensemble_deid.cli.study:study",
    "demo": "ensemble_deid.cli.study:demo",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context):
        from .common import fail_on_error
        from .interrupt import report_interrupt

        try:
            with fail_on_error():  # disk full, a cache root that is a file...: a message, not a traceback
                return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C: what was kept and how to resume, not click's bare "Aborted!"
            report_interrupt(ctx)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, prog_name="ensemble-deid")
@click.option(
    "--workspace", envvar="ENSEMBLE_DEID_HOME", type=click.Path(file_okay=False),
    default=".", show_envvar=True,
    help="Workspace folder: corpus registry, embedded corpora, prediction cache and results.",
)
@click.pass_context
def main(ctx: click.Context, workspace: str) -> None:
    """De-identify clinical notes with ensembles of taggers."""
    from ..corpus.workspace import Workspace
    from .interrupt import note_start

    ctx.obj = Workspace(workspace)
    note_start(ctx)
