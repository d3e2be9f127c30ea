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
