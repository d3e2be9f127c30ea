"""Paper-style result tables written as Markdown, CSV and LaTeX.

A ``ResultTable`` holds rows of named cells; a cell may carry a significance
mark (``*`` = not significantly different from the best in its column, as in
[KIM20] Table 5).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..files import private_dir, write_private
from .table import render_table


@dataclass
class Cell:
    value: float | str | None
    mark: str = ""  # e.g. "*" (not significantly different from the best)
    best: bool = False

    def text(self, percent: bool = True, digits: int = 2) -> str:
        if self.value is None:
            return ".."
        if isinstance(self.value, float):
            v = f"{100 * self.value:.{digits}f}" if percent else f"{self.value:.4f}"
        else:
            v = str(self.value)
        return v + self.mark


@dataclass
class ResultTable:
    title: str
    columns: list[str]  # value columns (the first, row-label column is separate)
    row_header: str = "system"
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)
    note: str = ""

    def add(self, label: str, values: Sequence[Any]) -> None:
        if len(values) != len(self.columns):
            raise ValueError(f"row {label!r}: {len(values)} values for {len(self.columns)} columns")
        self.rows.append((label, [v if isinstance(v, Cell) else Cell(v) for v in values]))

    def column(self, j: int) -> list[Cell]:
        return [cells[j] for _, cells in self.rows]

    def mark_best(self) -> None:
        for j in range(len(self.columns)):
            numeric = [c for c in self.column(j) if isinstance(c.value, float)]
            if numeric:
                top = max(c.value for c in numeric)
                for c in numeric:
                    c.best = c.value == top

    # --- renderers ---------------------------------------------------------
    def markdown(self) -> str:
        body = render_table([self.row_header] + self.columns,
                            [[label] + [_md_cell(c) for c in cells] for label, cells in self.rows],
                            align="l" + "r" * len(self.columns))
        parts = [f"### {self.title}", "", body]
        if self.note:
            parts += ["", self.note]
        return "\n".join(parts) + "\n"

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([self.row_header] + self.columns + [f"{c} mark" for c in self.columns])
        for label, cells in self.rows:
            w.writerow([label] + ["" if c.value is None else c.value for c in cells] + [c.mark for c in cells])
        return buf.getvalue()

    def latex(self) -> str:
        def esc(s: str) -> str:
            for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("$", r"\$")):
                s = s.replace(a, b)
            return s

        lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * len(self.columns) + "}", r"\hline",
                 " & ".join([esc(self.row_header)] + [esc(c) for c in self.columns]) + r" \\", r"\hline"]
        for label, cells in self.rows:
            vals = []
            for c in cells:
                t = esc(c.text()).replace("*", "$^{*}$")
                vals.append(r"\textbf{" + t + "}" if c.best else t)
            lines.append(" & ".join([esc(label)] + vals) + r" \\")
        lines += [r"\hline", r"\end{tabular}", r"\caption{" + esc(self.title) + (" " + esc(self.note) if self.note else "") + "}",
                  r"\end{table}"]
        return "\n".join(lines) + "\n"

    def write(self, directory: str | Path, stem: str) -> list[Path]:
        directory = Path(directory)
        private_dir(directory)
        paths = []
        for suffix, text in ((".md", self.markdown()), (".csv", self.csv()), (".tex", self.latex())):
            paths.append(write_private(directory / f"{stem}{suffix}", text))
        return paths


def _md_cell(c: Cell) -> str:
    """Bold for the best of a column; the mark outside the bold, escaped, so
    a best cell that is also marked renders as **95.60**\\*."""
    mark = c.mark.replace("*", "\\*")
    if c.value is None:
        return c.text()
    plain = Cell(c.value).text()
    return (f"**{plain}**" if c.best else plain) + mark
