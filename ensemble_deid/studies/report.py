"""Study result tables: terminal, Markdown, CSV, JSON and LaTeX.

A ``ResultTable`` holds rows of named cells. A cell's value is the F1 shown in
the table; it also carries precision, recall, the p-value of its comparison
with the best of its column and the hyperparameters chosen for it, which the
CSV and JSON files keep. A mark ``*`` means not significantly different from
the best in its column, as in [KIM20] Table 5; its footnote is printed only
when some cell is marked.

Row labels that are long tagger specs (``lstm-crf-l:epochs=2,...``) are
shown under short aliases with a legend; CSV and JSON keep the full specs.
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..files import private_dir, write_private
from .table import render_table, terminal_table


@dataclass
class Cell:
    value: float | str | None  # F1 (a fraction), a text cell, or None for "not run"
    mark: str = ""  # e.g. "*" (not significantly different from the best)
    best: bool = False
    precision: float | None = None
    recall: float | None = None
    p_value: float | None = None  # vs the best of the column, Holm-adjusted
    params: dict[str, Any] | None = None  # hyperparameters chosen for this cell

    def text(self, percent: bool = True, digits: int = 2) -> str:
        if self.value is None:
            return ".."
        if isinstance(self.value, float):
            v = f"{100 * self.value:.{digits}f}" if percent else f"{self.value:.4f}"
        else:
            v = str(self.value)
        return v + self.mark


def aliases(labels: Sequence[str]) -> list[str]:
    """Short names for member labels: the tagger name without its parameters
    ("lstm-crf-l:epochs=2,...@synthetic-2014" -> "lstm-crf-l@synthetic-2014");
    where two labels would collide, numbered ("crf#1", "crf#2")."""
    def strip(label: str) -> str:
        head, at, corpus = label.partition("@")
        return head.split(":", 1)[0] + at + corpus

    short = [strip(s) for s in labels]
    seen: dict[str, int] = {}
    for s in short:
        seen[s] = seen.get(s, 0) + 1
    numbered, count = [], {}
    for s, full in zip(short, labels):
        if seen[s] > 1:
            count[s] = count.get(s, 0) + 1
            head, at, corpus = s.partition("@")
            numbered.append(f"{head}#{count[s]}{at}{corpus}")
        else:
            numbered.append(s)
    return numbered


def legend(labels: Sequence[str]) -> list[str]:
    """``alias = full spec`` lines for the labels whose alias differs (one per spec)."""
    lines, seen = [], set()
    for alias, full in zip(aliases(labels), labels):
        a, f = alias.partition("@")[0], full.partition("@")[0]
        if a != f and a not in seen:
            seen.add(a)
            lines.append(f"{a} = {f}")
    return lines


def alias_notes(labels: Sequence[str], width: int | None = None, shown: set[str] | None = None) -> list[str]:
    """The legend as footnote lines: "aliases: a = full spec", the others
    under it; with ``width``, a long spec broken between its parameters.
    ``shown``: the legend entries an earlier table of the same output
    printed, left out here (and those printed here added): one output says
    each alias once, not after every table (issue 53 item 9)."""
    names = legend(labels)
    if shown is not None:
        names = [n for n in names if n not in shown]
        shown.update(names)
    lines = ["aliases: " + names[0]] + [" " * 9 + n for n in names[1:]] if names else []
    return [_wrap_at_commas(line, width) for line in lines] if width else lines


def spec_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None, *,
               title: str = "", notes: Sequence[str] = (), width: int | None = None, wrap: Sequence[int] = (),
               spec_headers_from: int | None = None, shown: set[str] | None = None) -> str:
    """A terminal table (``terminal_table``) whose first column holds tagger
    specs (or, with ``spec_headers_from``, whose headers from that column on
    do): shown whole where the table fits ``width`` (default: the terminal's),
    else as aliases with their legend first among the notes, as a study's
    tables show them (the published MEDDOCAN specs made ``cv`` and
    ``ensemble`` tables 140-160 columns wide: issue 34 item 8); ``shown``:
    see ``alias_notes``."""
    import shutil

    width = width or shutil.get_terminal_size((80, 24)).columns
    k = spec_headers_from
    labels = [str(r[0]) for r in rows] if k is None else list(headers[k:])
    # Whole specs only where the table fits without folding its values: aliases read better than folded cells.
    whole = terminal_table(headers, rows, align, width=10**6, wrap=wrap)
    names, legend_lines = fitting_aliases(labels, whole, width, shown)
    if names == list(labels):
        return terminal_table(headers, rows, align, title=title, notes=notes, width=width, wrap=wrap)
    if k is None:
        rows, wrap = [[alias, *r[1:]] for alias, r in zip(names, rows)], (0, *wrap)
    else:
        headers = [*headers[:k], *names]
    return terminal_table(headers, rows, align, title=title, notes=[*legend_lines, *notes], width=width, wrap=wrap)


def fitting_aliases(labels: Sequence[str], rendered: str, width: int,
                    shown: set[str] | None = None) -> tuple[list[str], list[str]]:
    """(labels to show, legend lines): the labels themselves where the text
    ``rendered`` with them fits ``width``, else their aliases and legend
    (less what ``shown`` holds: see ``alias_notes``)."""
    if max(map(len, rendered.splitlines()), default=0) <= width or not legend(labels):
        return list(labels), []
    return aliases(labels), alias_notes(labels, width, shown)


@dataclass
class ResultTable:
    title: str
    columns: list[str]  # value columns (the first, row-label column is separate)
    row_header: str = "system"
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)
    note: str = ""
    mark_note: str = ""  # the footnote of "*", shown only when some cell is marked
    # Short column headers for the terminal, Markdown and LaTeX (e.g. "A test / B model"),
    # with the legend that expands them; CSV and JSON keep ``columns``.
    headers: list[str] | None = None
    headers_legend: str = ""

    def add(self, label: str, values: Sequence[Any]) -> None:
        if len(values) != len(self.columns):
            raise ValueError(f"row {label!r}: {len(values)} values for {len(self.columns)} columns")
        if self.headers and len(self.headers) != len(self.columns):
            raise ValueError(f"{len(self.headers)} headers for {len(self.columns)} columns")
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

    @property
    def marked(self) -> bool:
        return any(c.mark for _, cells in self.rows for c in cells)

    def notes(self) -> list[str]:
        """Footnotes: the legend of aliases, the table's note, the mark's footnote if used."""
        out = [self.headers_legend] if self.headers and self.headers_legend else []
        out += alias_notes([label for label, _ in self.rows])
        if self.note:
            out.append(self.note)
        if self.mark_note and self.marked:
            out.append(self.mark_note)
        return out

    @property
    def shown_columns(self) -> list[str]:
        return list(self.headers) if self.headers else list(self.columns)

    # --- renderers ---------------------------------------------------------
    def terminal(self, width: int | None = None, styled: bool = False) -> str:
        """F1 (%) fitted to the terminal width; best of a column in bold when styled."""
        import shutil

        width = width or shutil.get_terminal_size((80, 24)).columns
        labels = aliases([label for label, _ in self.rows])
        rows = [[alias] + [c.text() for c in cells] for alias, (_, cells) in zip(labels, self.rows)]
        bold = {(i, j + 1) for i, (_, cells) in enumerate(self.rows) for j, c in enumerate(cells) if c.best}
        notes = [_wrap_at_commas(note, width) for note in self.notes()]
        return terminal_table([self.row_header] + self.shown_columns, rows, align="l" + "r" * len(self.columns),
                              title=self.title, notes=notes, width=width, bold=bold, styled=styled)

    def markdown(self) -> str:
        labels = aliases([label for label, _ in self.rows])
        body = render_table([self.row_header] + self.shown_columns,
                            [[alias] + [_md_cell(c) for c in cells] for alias, (_, cells) in zip(labels, self.rows)],
                            align="l" + "r" * len(self.columns))
        parts = [f"### {self.title}", "", body]
        for note in self.notes():
            parts += ["", note]
        return "\n".join(parts) + "\n"

    def records(self) -> list[dict[str, Any]]:
        """One record per cell: full label, column, P, R, F1, marks, p-value, chosen parameters."""
        out = []
        for (label, cells), alias in zip(self.rows, aliases([label for label, _ in self.rows])):
            for column, c in zip(self.columns, cells):
                out.append({
                    self.row_header: label, "alias": alias, "column": column,
                    "precision": c.precision, "recall": c.recall,
                    "f1": c.value if isinstance(c.value, float) else None,
                    "text": c.value if isinstance(c.value, str) else None,
                    "best": c.best, "mark": c.mark, "p_value": c.p_value, "params": c.params,
                })
        return out

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        records = self.records()
        keys = [self.row_header, "alias", "column", "precision", "recall", "f1", "text", "best", "mark", "p_value", "params"]
        w.writerow(keys)
        for r in records:
            w.writerow(["" if r[k] is None else (json.dumps(r[k], sort_keys=True) if k == "params" else r[k])
                        for k in keys])
        return buf.getvalue()

    def json(self) -> str:
        return json.dumps({"title": self.title, "columns": self.columns, "notes": self.notes(),
                           "cells": self.records()}, indent=2, default=str) + "\n"

    def latex(self) -> str:
        def esc(s: str) -> str:
            for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("$", r"\$")):
                s = s.replace(a, b)
            return s

        lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * len(self.columns) + "}", r"\hline",
                 " & ".join([esc(self.row_header)] + [esc(c) for c in self.shown_columns]) + r" \\", r"\hline"]
        for label, cells in zip(aliases([label for label, _ in self.rows]), (cells for _, cells in self.rows)):
            vals = []
            for c in cells:
                t = esc(c.text()).replace("*", "$^{*}$")
                vals.append(r"\textbf{" + t + "}" if c.best else t)
            lines.append(" & ".join([esc(label)] + vals) + r" \\")
        caption = " ".join([self.title] + self.notes())
        lines += [r"\hline", r"\end{tabular}", r"\caption{" + esc(caption) + "}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def write(self, directory: str | Path, stem: str) -> list[Path]:
        directory = Path(directory)
        private_dir(directory)
        paths = []
        for suffix, text in ((".md", self.markdown()), (".csv", self.csv()), (".json", self.json()),
                             (".tex", self.latex())):
            paths.append(write_private(directory / f"{stem}{suffix}", text))
        return paths


def _wrap_at_commas(line: str, width: int) -> str:
    """A legend line too long for the terminal broken after commas (between a
    spec's parameters), not inside a parameter as plain folding would. Only
    the aliases' legend ("aliases: crf = crf:...", continued under it): prose
    notes with an " = " in them ("A = i2b2-2014") wrap as prose."""
    if len(line) <= width or not re.match(r"(?:aliases: | {9})\S+ = ", line):
        return line
    indent = " " * (line.index(" = ") + 3)
    out, current = [], ""
    for piece in line.replace(",", ",\0").split("\0"):
        if current and len(current) + len(piece) > width:
            out.append(current)
            current = indent + piece
        else:
            current += piece
    out.append(current)
    return "\n".join(out)


def _md_cell(c: Cell) -> str:
    """Bold for the best of a column; the mark outside the bold, escaped, so
    a best cell that is also marked renders as **95.60**\\*."""
    mark = c.mark.replace("*", "\\*")
    if c.value is None:
        return c.text()
    plain = Cell(c.value).text()
    return (f"**{plain}**" if c.best else plain) + mark
