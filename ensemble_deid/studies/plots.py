"""Figures of a study, drawn with matplotlib (Agg backend, no display needed).

- ``threshold_curve``: F1 against the voting threshold, all members vs pruned
  subsets ([KIM20] Figure 1), on the thresholds that say something.
- ``category_f1``: per-category F1 of several systems (grouped bars, 0-100 %,
  gold count per category, categories without gold labelled as such).
- ``agreement_heatmap``: pairwise agreement between ensemble members, ordered
  so that similar members sit together.
- ``operating_points``: precision against recall of each method's candidate
  decision thresholds, on the out-of-fold data and on test, with the points
  chosen by cross-validation marked, and the members as single points.
- ``leak_vs_precision``: token leak rate against precision, one point per
  system (lower left is better), with 95% intervals of the leak.
- ``cost_front``: the objective of voting over member subsets against their
  summed inference cost, the Pareto front drawn as a staircase, the budget
  and the point chosen by cross-validation marked.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..files import atomic_private_file, private_dir
from .report import aliases


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    private_dir(path.parent)
    try:
        with atomic_private_file(path) as fh:
            fig.savefig(fh, format=path.suffix.lstrip(".") or "png", dpi=130, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    return path


def informative_thresholds(curves: Mapping[str, Sequence[tuple[int, float]]], share: float = 0.5,
                           within: float = 0.1) -> int:
    """The highest threshold worth plotting: beyond it every curve stays below
    ``share`` of the best F1 reached, or more than ``within`` (10 F1 points)
    under it (few spans get that many votes: F1 falls and says nothing more,
    and would squash the range where the curves differ). At least 3
    thresholds are kept."""
    points = [p for pts in curves.values() for p in pts]
    if not points:
        return 0
    top = max(f for _, f in points)
    keep = [t for t, f in points if f >= share * top and f >= top - within]
    return min(max(t for t, _ in points), max(keep + [3]))


def data_range(values, floor: float = 0.0, ceiling: float = 100.0, step: float = 5.0) -> tuple[float, float]:
    """Axis limits around ``values`` (percentages): from a multiple of ``step``
    below the lowest to one above the highest, within [floor, ceiling], so
    that differences of a point or two stay visible."""
    finite = [float(v) for v in values if v is not None and np.isfinite(v)]
    if not finite:
        return floor, ceiling
    lo = max(floor, step * np.floor((min(finite) - step / 2) / step))
    hi = min(ceiling, step * np.ceil((max(finite) + step / 2) / step))
    return float(lo), float(hi)


def threshold_curve(
    curves: Mapping[str, Sequence[tuple[int, float]]], path: str | Path, title: str = "F1 by voting threshold",
    best_single: float | None = None, best_name: str | None = None,
) -> Path:
    """``curves``: label -> [(threshold, F1), ...], e.g. {"all members": ..., "pruned": ...};
    ``best_single``/``best_name``: the best single member's test F1 and label."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    last = informative_thresholds(curves)
    total = max((t for pts in curves.values() for t, _ in pts), default=0)
    for (label, points), marker in zip(curves.items(), "os^vD"):
        shown = sorted(p for p in points if p[0] <= last)
        if not shown:
            continue
        t, f = zip(*shown)
        ax.plot(t, 100 * np.asarray(f), marker=marker, label=label)
    if best_single is not None:
        name = f": {aliases([best_name])[0]}" if best_name else ""
        ax.axhline(100 * best_single, color="grey", linestyle="--", linewidth=1,
                   label=f"best single member{name} ({100 * best_single:.1f})")
    # The axis from the points within 10 points of the best: one curve's collapse at a
    # threshold another curve still holds (all 12 MEDDOCAN members at t = 12: 57%,
    # pruned 94%) would squash the 95-98% range where the curves differ. Such a
    # point runs off the axis and is named under it.
    shown = [(label, t, 100 * f) for label, pts in curves.items() for t, f in pts if t <= last]
    top = max((f for _, _, f in shown), default=0.0)
    lo, hi = data_range([f for _, _, f in shown if f >= top - 10]
                        + ([100 * best_single] if best_single is not None else []))
    ax.set_ylim(lo, hi)
    below = [f"{label} at t = {t} ({f:.1f})" for label, t, f in sorted(shown, key=lambda x: x[1]) if f < lo]
    cut = "" if last >= total else (f"{last + 1}" if last + 1 == total else f"{last + 1}-{total}")
    # Say what was cut, so that a reader does not wonder where thresholds went.
    ax.set_xlabel("voting threshold (votes needed)"
                  + (f"\nnot shown: threshold{'s' if '-' in cut else ''} {cut} (F1 over 10 points below the best)"
                     if cut else "")
                  + (f"\nbelow the axis: {'; '.join(below[:3])}{'; ...' if len(below) > 3 else ''}" if below else ""))
    ax.set_ylabel("strict micro F1 (%)")
    ax.set_title(title)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _save(fig, path)


def category_f1(
    scores: Mapping[str, Mapping[str, float | None]], path: str | Path, title: str = "F1 by PHI category",
    gold_counts: Mapping[str, int] | None = None, categories: Sequence[str] | None = None,
) -> Path:
    """``scores``: system -> {category: F1}; ``gold_counts``: category -> gold
    spans in the test split; ``categories``: the categories to show (e.g. the
    same list for every corpus of a study). A category with no gold has no F1:
    it is shown, labelled "no gold", not left out."""
    plt = _pyplot()
    systems = list(scores)
    labels = aliases(systems)
    gold_counts = dict(gold_counts or {})
    if categories is None:
        categories = sorted({c for s in scores.values() for c in s} | set(gold_counts))
    categories = list(categories)
    # The axis from the non-zero F1s of the categories with enough gold spans to say something
    # (a 0-100 axis, or 4 PROFESSION spans at 0-30%, flattens the 95-98% range where systems
    # differ); a bar below the axis is written as its value at its foot, like "no gold".
    total = sum(gold_counts.values())
    enough = {c for c in categories if not gold_counts or gold_counts.get(c, 0) >= min(20, 0.01 * total)}
    lo, hi = data_range([100 * v for s in scores.values() for c, v in s.items() if v and c in enough])
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(categories) + 2), 4.4))
    x = np.arange(len(categories))
    for i, system in enumerate(systems):
        vals = [scores[system].get(c) for c in categories]
        vals = [np.nan if v is None else 100 * v for v in vals]
        at = x + (i - (len(systems) - 1) / 2) * width
        ax.bar(at, [max(v - lo, 0) if v == v else v for v in vals], width, bottom=lo, label=labels[i])
        for xi, v in zip(at, vals):
            if v == v and v < lo or v == 0:  # an invisible bar: say its value, not a missing one
                ax.text(xi, lo + 0.005 * (hi - lo), f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    for k, c in enumerate(categories):
        if gold_counts.get(c, 0) == 0:
            ax.text(k, lo + 0.03 * (hi - lo), "no gold", rotation=90, ha="center", va="bottom", fontsize=8,
                    color="dimgrey")
    ticks = [f"{c}\nn={gold_counts.get(c, 0)}" for c in categories] if gold_counts else categories
    ax.set_xticks(x, ticks, fontsize=8)
    ax.set_xlim(-0.5, len(categories) - 0.5)  # keep a category without bars at the edge in view
    ax.set_ylabel("strict F1 (%)" + ("" if lo == 0 else f", axis from {lo:g}"))
    ax.set_ylim(lo, hi)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncol=min(3, len(systems)), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    return _save(fig, path)


def cluster_order(agreement: np.ndarray) -> list[int]:
    """Leaf order of an average-linkage clustering on 1 - agreement: members
    that agree sit next to each other, so blocks show up in the heatmap."""
    n = len(agreement)
    if n < 3:
        return list(range(n))
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    distance = 1.0 - np.clip((agreement + agreement.T) / 2, 0.0, 1.0)
    np.fill_diagonal(distance, 0.0)
    return [int(i) for i in leaves_list(linkage(squareform(distance, checks=False), method="average"))]


def agreement_heatmap(
    names: Sequence[str], agreement: np.ndarray, path: str | Path, title: str = "Pairwise member agreement",
    measure: str = "span agreement (Jaccard)",
) -> Path:
    """``agreement``: (n, n) matrix in [0, 1] (e.g. span-level Jaccard).
    Members are ordered by clustering; values are written in the cells while
    they fit (up to 15 members), the colorbar says what is measured."""
    plt = _pyplot()
    agreement = np.asarray(agreement, dtype=float)
    order = cluster_order(agreement)
    agreement = agreement[np.ix_(order, order)]
    labels = [aliases(names)[i] for i in order]
    n = len(labels)
    cell = 0.55 if n <= 15 else 0.26
    font = 8 if n <= 15 else max(5, 9 - n // 10)
    fig, ax = plt.subplots(figsize=(2.0 + cell * n, 1.4 + cell * n))
    im = ax.imshow(agreement, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(n), labels, rotation=90, fontsize=font)
    ax.set_yticks(range(n), labels, fontsize=font)
    if n <= 15:
        for i in range(n):
            for j in range(n):
                ax.text(j, i, f"{agreement[i, j]:.2f}", ha="center", va="center",
                        color="white" if agreement[i, j] < 0.6 else "black", fontsize=7)
    bar = fig.colorbar(im, ax=ax, fraction=0.046)
    bar.set_label(measure)
    ax.set_title(title + ("\n(members ordered by clustering)" if n > 2 else ""))
    return _save(fig, path)


def operating_points(curves: Mapping[str, Mapping[str, Sequence[dict]]], chosen: Mapping[str, Mapping[str, dict]],
                     members: Mapping[str, tuple[float, float]], path: str | Path, target: float | None = None,
                     title: str = "", systems: Mapping[str, tuple[float, float]] | None = None) -> Path:
    """Two panels (out-of-fold, test) of precision against recall.
    ``curves[method][panel]``: [{"precision", "recall"}] along the thresholds;
    ``chosen[method][panel]``: the CV-chosen point ({"precision", "recall"});
    ``members`` and ``systems`` (other ensembles): name -> (precision,
    recall) on test. Axes follow the data: the region of the chosen points,
    the systems and the members."""
    plt = _pyplot()
    panels = ["out-of-fold (train)", "test"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    xs, ys = [], []
    for ax, panel in zip(axes, panels):
        for i, (method, by_panel) in enumerate(curves.items()):
            pts = sorted(by_panel.get(panel, []), key=lambda p: p["recall"])
            if not pts:
                continue
            c = colours[i % len(colours)]
            r = [p["recall"] for p in pts]
            pr = [p["precision"] for p in pts]
            xs += r
            ys += pr
            ax.plot(r, pr, "-", color=c, lw=1.2, alpha=0.8, label=method)
            mark = chosen.get(method, {}).get(panel)
            if mark:
                ax.plot(mark["recall"], mark["precision"], "o", color=c, ms=8, mec="black", zorder=5)
        if panel == "test":
            for name, (p, r) in members.items():
                ax.plot(r, p, "x", color="grey", ms=5)
                ax.annotate(name, (r, p), fontsize=6, color="grey", xytext=(2, 2), textcoords="offset points")
            for name, (p, r) in (systems or {}).items():
                ax.plot(r, p, "s", color="black", ms=5, mfc="none")
                ax.annotate(name, (r, p), fontsize=6, xytext=(3, -7), textcoords="offset points")
        if target is not None:
            ax.axvline(target, color="black", ls=":", lw=1)
        ax.set_title(panel)
        ax.set_xlabel("binary-token recall")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("binary-token precision")
    # Axes from the data: the region of the chosen points, the systems and the members (the
    # curves' low-recall tails, where no one operates, would flatten it).
    marks = [m for by_panel in chosen.values() for m in by_panel.values() if m]
    region = [(m["precision"], m["recall"]) for m in marks] + list(members.values()) + list((systems or {}).values())
    if region:
        lo_x = max(0.0, min(r for _, r in region) - 0.01)
        lo_y = max(0.0, min(p for p, _ in region) - 0.005)
        hi_x = min(1.0, max([r for _, r in region] + [target or 0]) + 0.003)
        hi_y = min(1.0, max(p for p, _ in region) + 0.003)
        for ax in axes:
            ax.set_xlim(lo_x, hi_x)
            ax.set_ylim(lo_y, hi_y)
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(title or "precision-recall along each method's decision threshold (o: chosen by CV on train)",
                 fontsize=10)
    return _save(fig, path)


def leak_vs_precision(points: Mapping[str, dict], path: str | Path, title: str = "") -> Path:
    """``points[name]``: {"precision", "leak", "low", "high", "kind"} (kind:
    "member", "F1-chosen" or "recall-first")."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.8))
    styles = {"member": ("x", "grey"), "F1-chosen": ("o", "tab:blue"), "recall-first": ("s", "tab:red")}
    for kind, (marker, colour) in styles.items():
        sel = {n: p for n, p in points.items() if p["kind"] == kind}
        if not sel:
            continue
        x = [p["precision"] for p in sel.values()]
        y = [100 * p["leak"] for p in sel.values()]
        err = [[100 * (p["leak"] - p["low"]) for p in sel.values()], [100 * (p["high"] - p["leak"]) for p in sel.values()]]
        ax.errorbar(x, y, yerr=err, fmt=marker, color=colour, label=kind, capsize=2, ms=6)
        # Systems of one kind can sit on top of each other: their labels are stacked.
        for i, (n, p) in enumerate(sorted(sel.items(), key=lambda kv: kv[1]["leak"])):
            shift = (8, 10 * i - 5) if kind == "recall-first" else (3, 3)
            ax.annotate(n, (p["precision"], 100 * p["leak"]), fontsize=6, xytext=shift, textcoords="offset points",
                        arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "grey"} if kind == "recall-first" else None)
    ax.set_xlabel("binary-token precision (test)")
    ax.set_ylabel("token leak (% of PHI tokens uncovered, test)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "leak against precision (bars: 95% document bootstrap)", fontsize=10)
    return _save(fig, path)


def cost_front(points: Sequence, front: Sequence, chosen, path: str | Path, metric: str = "F1",
               budget: float | None = None, title: str = "", unit: str = "CPU s per million tokens") -> Path:
    """``points``/``front``: ``ensemble.budget.SubsetPoint`` s (every
    (threshold, subset) scored, and the undominated ones); ``chosen``: the
    point cross-validation chose (marked, on the front or not). Points far
    below the front (more than 10 points under its best) are left out of
    the axes and counted in the label."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.6))
    top = 100 * max(p.score for p in front)
    low = min(100 * min(p.score for p in front), top - 10)
    shown = [p for p in points if 100 * p.score >= low]
    hidden = len(points) - len(shown)
    ax.scatter([p.cost for p in shown], [100 * p.score for p in shown], s=5, color="lightgrey",
               label=f"(threshold, subset): {len(points):,} scored" + (f", {hidden:,} far below not shown" if hidden else ""))
    xs = [p.cost for p in front]
    ys = [100 * p.score for p in front]
    ax.step(xs, ys, where="post", color="tab:blue", linewidth=1.2)
    ax.plot(xs, ys, "o", color="tab:blue", ms=4, label=f"Pareto front ({len(front)} points)")
    if chosen is not None:
        ax.plot([chosen.cost], [100 * chosen.score], "*", color="tab:red", ms=14,
                label=f"chosen by CV: t={chosen.threshold}, {len(chosen.subset)} member(s), cost {chosen.cost:,.1f}")
    if budget is not None:
        ax.axvline(budget, color="tab:red", linestyle="--", linewidth=1, label=f"budget {budget:g}")
    ax.set_ylim(*data_range([100 * p.score for p in shown], step=1.0))
    ax.set_xlabel(f"inference cost of the kept members ({unit})")
    ax.set_ylabel(f"{metric} on the training out-of-fold predictions (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or f"{metric} against inference cost, voting over member subsets", fontsize=10)
    return _save(fig, path)
