"""Plain-text tables for terminal summaries (Markdown-compatible)."""
from __future__ import annotations

from typing import Any, Sequence


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A Markdown pipe table, columns padded; numbers right-aligned by default."""
    cells = [[_cell(v) for v in row] for row in rows]
    if align is None:
        align = "".join(
            "r" if rows and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) else "l"
            for i in range(len(headers))
        )
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        out = []
        for v, w, a in zip(values, widths, align):
            out.append(v.rjust(w) if a == "r" else v.ljust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in cells])
