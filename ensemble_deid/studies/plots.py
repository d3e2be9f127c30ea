"""Figures of a study, drawn with matplotlib (Agg backend, no display needed).

- ``threshold_curve``: F1 against the voting threshold, all members vs pruned
  subsets ([KIM20] Figure 1).
- ``category_f1``: per-category F1 of several systems (grouped bars).
- ``agreement_heatmap``: pairwise agreement between ensemble members.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..files import atomic_private_file, private_dir


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


def short_labels(names: Sequence[str]) -> list[str]:
    """Member labels for axes and legends without their parameters
    ("crf:max_iterations=30@synthetic-2014" -> "crf@synthetic-2014") where
    that leaves them distinct; the tables keep the full labels."""
    def strip(name: str) -> str:
        head, at, corpus = name.partition("@")
        return head.split(":", 1)[0] + at + corpus

    short = [strip(n) for n in names]
    return short if len(set(short)) == len(short) else list(names)


def threshold_curve(
    curves: Mapping[str, Sequence[tuple[int, float]]], path: str | Path, title: str = "F1 by voting threshold",
    best_single: float | None = None,
) -> Path:
    """``curves``: label -> [(threshold, F1), ...], e.g. {"all members": ..., "pruned": ...}."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for (label, points), marker in zip(curves.items(), "os^vD"):
        if not points:
            continue
        t, f = zip(*sorted(points))
        ax.plot(t, 100 * np.asarray(f), marker=marker, label=label)
    if best_single is not None:
        ax.axhline(100 * best_single, color="grey", linestyle="--", linewidth=1, label="best single member")
    ax.set_xlabel("voting threshold (votes needed)")
    ax.set_ylabel("strict micro F1 (%)")
    ax.set_title(title)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def category_f1(
    scores: Mapping[str, Mapping[str, float]], path: str | Path, title: str = "F1 by PHI category",
) -> Path:
    """``scores``: system -> {category: F1}."""
    plt = _pyplot()
    systems = list(scores)
    labels = short_labels(systems)
    categories = sorted({c for s in scores.values() for c in s})
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(categories) + 2), 4.2))
    x = np.arange(len(categories))
    values = []
    for i, system in enumerate(systems):
        vals = [100 * scores[system].get(c, np.nan) for c in categories]
        values += [v for v in vals if not np.isnan(v)]
        ax.bar(x + (i - (len(systems) - 1) / 2) * width, vals, width, label=labels[i])
    ax.set_xticks(x, categories, rotation=30, ha="right")
    ax.set_ylabel("strict F1 (%)")
    # Zoom to the range in use: differences between systems are a few points.
    low = max(0.0, 10 * np.floor((min(values, default=0.0) - 5) / 10))
    ax.set_ylim(low, 101)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncol=min(3, len(systems)), loc="upper center", bbox_to_anchor=(0.5, -0.22))
    return _save(fig, path)


def agreement_heatmap(
    names: Sequence[str], agreement: np.ndarray, path: str | Path, title: str = "Pairwise member agreement",
) -> Path:
    """``agreement``: (n, n) matrix in [0, 1] (e.g. span-level Jaccard)."""
    plt = _pyplot()
    agreement = np.asarray(agreement, dtype=float)
    n = len(names)
    fig, ax = plt.subplots(figsize=(1.0 + 0.55 * n, 0.8 + 0.5 * n))
    im = ax.imshow(agreement, vmin=0, vmax=1, cmap="viridis")
    names = short_labels(names)
    ax.set_xticks(range(n), names, rotation=45, ha="right")
    ax.set_yticks(range(n), names)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, f"{agreement[i, j]:.2f}", ha="center", va="center",
                    color="white" if agreement[i, j] < 0.6 else "black", fontsize=7)
    fig.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title)
    return _save(fig, path)
