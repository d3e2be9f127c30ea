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


def _read_objective(ctx, param, value):
    from ..ensemble.objective import ObjectiveError, check_objective

    if value is None:
        return None
    try:
        return check_objective(value)
    except ObjectiveError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def objective_option(what: str = "selection", default: str | None = "f1"):
    """``--objective`` (``--metric``, its older name, still works): what the
    ensemble's choices maximise, checked before any work."""
    return click.option(
        "--objective", "--metric", "objective", default=default, show_default=default is not None,
        callback=_read_objective,
        metavar="OBJECTIVE",
        help=f"What {what} maximises on the out-of-fold predictions: f1, f2, f<beta>, recall, recall>=R or "
             "precision>=P, optionally on token: or binary-token: counts, with per-category clauses "
             "(\"f1,NAME+ID=token:recall>=0.99\"); quote it in a shell. See docs/ensembles.md.")


def connect_timeout_option(f):
    """``--connect-timeout``: how long a Dask scheduler or Ray head has to answer."""
    from ..experiment.clusters import CONNECT_TIMEOUT

    return click.option(
        "--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=CONNECT_TIMEOUT, show_default=True,
        metavar="SECONDS", help="--backend dask or ray: seconds the scheduler or head has to answer; past them the run "
        "stops, nothing done (raise it on a slow network).")(f)


def fill(text: str, width: int, indent: str = "  ") -> str:
    """``text`` folded to ``width`` at spaces (never inside a spec or a label), later lines indented."""
    import textwrap

    return textwrap.fill(text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)


def short_names(labels, shown: set[str]) -> dict[str, str]:
    """Member label -> the alias the tables use, where their legend (``shown``) says it, else the label."""
    from ..studies.report import aliases

    return {full: alias if f"{alias} = {full}" in shown else full for full, alias in zip(labels, aliases(labels))}
