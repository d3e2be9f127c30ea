"""The cost options ``prune`` and ``ensemble`` share: ``--budget``, and the
Pareto front of (objective, cost) over member subsets and thresholds
(``--front`` prints it, ``--front-plot`` draws it)."""
from __future__ import annotations

from pathlib import Path

import click

BUDGET_HELP = ("Keep only member subsets whose summed inference cost is at most this many CPU seconds per "
               "million tokens (each member's cost comes from the prediction times its cache entry recorded; "
               "see 'cache ls'); 'none': no budget. The subset and threshold are then chosen among those by "
               "the objective on the training out-of-fold predictions.")


def cost_options(f):
    """``--budget``, ``--front`` and ``--front-plot``."""
    options = [
        click.option("--budget", default=None, metavar="CPU_S_PER_M_TOKENS", help=BUDGET_HELP),
        click.option("--front", "show_front", is_flag=True, help="Print the Pareto front of (objective, cost) over "
                     "member subsets and thresholds on the training out-of-fold predictions, the chosen point marked."),
        click.option("--front-plot", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="PNG",
                     help="Draw that front (every subset scored in grey) into this image file (PNG)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def check_plot_path(path: Path | None) -> None:
    """A front plot's file name, checked before any work."""
    if path is None:
        return
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise click.BadParameter(f"{path}: name a {', '.join(PLOT_SUFFIXES)} file", param_hint="--front-plot")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise click.BadParameter(f"{path}: {parent} is not a folder", param_hint="--front-plot")
    if path.is_dir():
        raise click.BadParameter(f"{path} is a folder", param_hint="--front-plot")


def find_point(points, threshold, subset):
    """The scored point of a (threshold, subset), or None."""
    subset = tuple(subset)
    return next((p for p in points if p.threshold == threshold and p.subset == subset), None)


def front_report(points, chosen, metric: str, budget: float | None = None, plot: Path | None = None,
                 title: str = "") -> str:
    """The front as a table fitted to 80 columns (the chosen point marked
    ``*``, or added below it when it is not on the front), and the plot."""
    from ..ensemble.budget import UNIT, pareto_front
    from ..studies.table import terminal_table

    front = pareto_front(points)
    on_front = chosen is not None and any(p.threshold == chosen.threshold and p.subset == chosen.subset
                                          for p in front)
    shown = list(front) if on_front or chosen is None else sorted([*front, chosen], key=lambda p: p.cost)
    rows = [["*" if p is chosen or (on_front and (p.threshold, p.subset) == (chosen.threshold, chosen.subset)) else "",
             p.threshold, f"{p.cost:,.1f}", p.score, len(p.subset), ", ".join(p.subset)] for p in shown]
    notes = [f"cost: the kept members' summed inference cost ({UNIT}); {metric} on the training out-of-fold "
             f"predictions; {len(points):,} (threshold, subset) points scored"
             + (f" within the budget of {budget:g}" if budget is not None else "") + ", the undominated shown."]
    if chosen is not None:
        notes.append("* chosen by cross-validation" + ("" if on_front else
                     " (not on the front: the greedy elimination does not score every subset)"))
    text = terminal_table(["", "t", "cost", metric, "kept", "members kept"], rows, align="lrrrrl", width=80,
                          wrap=(5,), title=title or f"Pareto front of {metric} and inference cost", notes=notes)
    if plot is not None:
        from ..studies.plots import cost_front

        cost_front(points, front, chosen, plot, metric, budget)
        text += f"\nfront plotted to {plot}"
    return text
