"""Helpers shared by the command modules."""
from __future__ import annotations

import contextlib
import errno

import click

from ..errors import EnsembleDeidError, ParameterError, printable
from ..files import reason

# OSErrors that are the user's environment, not a bug: a clean message naming
# the file instead of a traceback. (EPIPE is left to click: "| head" is fine.)
_ENVIRONMENT_ERRNOS = {
    errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT,
    errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.EMFILE, errno.ENAMETOOLONG,
}


def workspace_of(ctx: click.Context):
    """The Workspace set up by the top-level group (or one on the current folder)."""
    from ..corpus.workspace import Workspace

    obj = ctx.find_root().obj
    return obj if isinstance(obj, Workspace) else Workspace(".")


def left_default(ctx: click.Context, name: str) -> bool:
    """The option was left at its default (the library may then reuse what is cached)."""
    return ctx.get_parameter_source(name) == click.core.ParameterSource.DEFAULT


@contextlib.contextmanager
def fail_on_error():
    """Turn the toolkit's own errors (a bad option value: a usage error naming
    the option), and file-system errors such as a full
    disk, into a clean CLI error naming the file (no traceback). The
    top-level group wraps every command in it, so this holds for commands
    that write through modules not using ``ensemble_deid.files`` yet."""
    try:
        yield
    except ParameterError as exc:  # an option's value: click's usage error, pointing at the option
        raise click.BadParameter(str(exc), param_hint=exc.option) from exc
    except EnsembleDeidError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        where = f"{printable(exc.filename)}: " if exc.filename is not None else ""
        raise click.ClickException(where + reason(exc)) from exc


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
