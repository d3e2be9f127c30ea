"""Reading the tables the commands print (``studies.table.terminal_table``:
columns two spaces apart under a rule of '─') back into cells, for the tests."""
from __future__ import annotations

import re


def terminal_row(output: str, label: str, under: str = "") -> list[str]:
    """The cells of the first row whose label is ``label``, in the order of
    the headers above it ('' for an empty cell). A right-aligned value ends
    where its header ends, a left-aligned one starts where its header starts."""
    return list(terminal_cells(output, label, under).values())


def terminal_cells(output: str, label: str, under: str = "") -> dict[str, str]:
    """That row as header -> cell (headers on one line); with ``under``, the
    row of the first table below the first line holding that text."""
    lines = output.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if under in line):]
    at = next(i for i, line in enumerate(lines) if line == label or line.startswith(label + "  "))
    rule = max(i for i in range(at) if lines[i] and set(lines[i]) == {"─"})
    header = lines[rule - 1]
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    cells = [""] * len(spans)
    for m in re.finditer(r"\S+(?: \S+)*", lines[at]):
        column = next((j for j, (start, end) in enumerate(spans) if m.end() == end or m.start() == start), None)
        if column is None:
            raise AssertionError(f"cell {m.group()!r} of row {label!r} under no header of {header!r}")
        cells[column] = m.group()
    return dict(zip((header[start:end] for start, end in spans), cells))
