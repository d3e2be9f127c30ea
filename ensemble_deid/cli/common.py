"""Helpers shared by the command modules."""
from __future__ import annotations

import contextlib

import click

from ..errors import EnsembleDeidError


def workspace_of(ctx: click.Context):
    """The Workspace set up by the top-level group (or one on the current folder)."""
    from ..corpus.workspace import Workspace

    obj = ctx.find_root().obj
    return obj if isinstance(obj, Workspace) else Workspace(".")


@contextlib.contextmanager
def fail_on_error():
    """Turn the toolkit's own errors into a clean CLI error (no traceback)."""
    try:
        yield
    except EnsembleDeidError as exc:
        raise click.ClickException(str(exc)) from exc


class SuggestingChoice(click.Choice):
    """click.Choice that suggests the closest name for a typo ("did you mean")."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            from ..errors import did_you_mean

            hint = did_you_mean(value, self.choices)
            if not hint:
                raise
            self.fail(f"{exc.message.rstrip('.')}{hint}", param, ctx)
