"""``ensemble-deid taggers [NAME]``: the registered tagger adapters, or one
tagger's parameters with their defaults and the values they accept."""
from __future__ import annotations

import click


@click.command("taggers")
@click.argument("name", required=False)
def taggers(name):
    """List registered taggers, their availability and why one is unavailable;
    with NAME, that tagger's parameters, defaults and accepted values."""
    from ..studies.table import render_table
    from ..taggers.registry import describe_taggers

    if name:
        click.echo(describe_parameters(name))
        return
    import shutil
    import textwrap

    infos = describe_taggers()
    if not infos:
        click.echo("no taggers registered")
        return
    rows = [[i.name, "yes" if i.available else "no", "external" if i.external else "trained", i.distribution] for i in infos]
    click.echo(render_table(["tagger", "available", "kind", "package"], rows))
    # the notes (what a tagger is, or why it is unavailable) below, wrapped to the terminal
    width = min(shutil.get_terminal_size((80, 24)).columns, 100)
    click.echo("")
    for i in infos:
        click.echo(textwrap.fill(i.reason or i.description or "-", width=width, initial_indent=f"{i.name}: ",
                                 subsequent_indent="    "))


def describe_parameters(name: str) -> str:
    """One tagger's description, availability and parameter table."""
    from ..errors import EnsembleDeidError
    from ..studies.table import terminal_table
    from ..taggers.constraints import describe
    from ..taggers.registry import tagger_class

    try:
        cls = tagger_class(name)
        defaults = cls().get_params()
    except EnsembleDeidError as exc:
        raise click.BadParameter(str(exc), param_hint="NAME")
    ok, reason = cls.availability()
    constraints = cls.parameter_constraints()
    rows = [[param, repr(value), describe(constraints[param]) if param in constraints else "(not declared)"]
            for param, value in defaults.items()]
    lines = [f"{name}: {cls.description or cls.__name__}",
             f"{'external system' if cls.external else 'trained tagger'}, version {cls.version}; "
             f"available: {'yes' if ok else 'no (' + reason + ')'}",
             terminal_table(["parameter", "default", "accepts"], rows, align="lll", wrap=(1, 2)) if rows else "no parameters",
             f"set them as {name}:{next(iter(defaults), 'key')}=VALUE,... in --taggers or a study's taggers list"]
    import shutil
    import textwrap

    width = shutil.get_terminal_size((80, 24)).columns
    return "\n".join(line if k == 2 else textwrap.fill(line, width=width, subsequent_indent="    ")
                     for k, line in enumerate(lines))
