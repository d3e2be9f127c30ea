"""``ensemble-deid taggers``: the registered tagger adapters."""
from __future__ import annotations

import click


@click.command("taggers")
def taggers():
    """List registered taggers, their availability and why one is unavailable."""
    from ..taggers.registry import describe_taggers
    from ..studies.table import render_table

    rows = [
        [i.name, "yes" if i.available else "no", "external" if i.external else "trained", i.distribution, i.reason or i.description]
        for i in describe_taggers()
    ]
    click.echo(render_table(["tagger", "available", "kind", "package", "notes"], rows) if rows else "no taggers registered")
