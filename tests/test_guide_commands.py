"""Every command of the command line is described in the user guide (issue 34
item 11: CoNLL/JSONL/DocBin export and CoNLL import existed as `corpus export`
and `corpus import-predictions`, but no page said so, so a new user did not
find them)."""
from __future__ import annotations

import click

from ensemble_deid.cli import main

from .conftest import REPO_ROOT


def _commands(group: click.Group, ctx: click.Context, prefix: tuple[str, ...] = ()) -> list[str]:
    names = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            names += _commands(command, ctx, prefix + (name,))
        else:
            names.append(" ".join(prefix + (name,)))
    return names


def test_every_command_is_named_in_the_guide():
    guide = (REPO_ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    commands = _commands(main, click.Context(main))
    assert "corpus import-predictions" in commands and "cache export" in commands  # the walk reaches subcommands
    missing = [c for c in commands if f"ensemble-deid {c}" not in guide and f"`{c}" not in guide]
    assert not missing, f"commands the guide never names: {missing}"
