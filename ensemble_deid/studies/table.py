"""Tables for the terminal and for Markdown files.

``render_table`` writes a Markdown pipe table (files, docs, plain logs);
``terminal_table`` draws the same rows with rich, fitted to the terminal's
width (long headers wrap instead of widening the table). ``PValue`` marks a
float as a p-value so that both print it as a reader expects (``<0.001``).
"""
from __future__ import annotations

from typing import Any, Sequence


class PValue(float):
    """A p-value: shown as ``<0.001`` or to three decimals, kept raw in CSV/JSON."""

    def __str__(self) -> str:
        return format_p(self)


def format_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _cell(value: Any) -> str:
    if isinstance(value, PValue):
        return format_p(value)
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)


def _default_align(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return "".join(
        "r" if rows and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) else "l"
        for i in range(len(headers))
    )


def fold_lines(text: str, width: int = 80) -> str:
    """Each line of ``text`` folded at spaces to ``width`` (a status line on
    a terminal, like the tables), its continuation indented four more; a
    spec, path or checksum longer than that is never cut."""
    import textwrap

    return "\n".join(textwrap.fill(line, width, subsequent_indent=" " * (len(line) - len(line.lstrip(" ")) + 4),
                                   break_on_hyphens=False, break_long_words=False) or line
                     for line in text.split("\n"))


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A Markdown pipe table, columns padded; numbers right-aligned by default."""
    cells = [[_cell(v) for v in row] for row in rows]
    if align is None:
        align = _default_align(headers, rows)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        out = []
        for v, w, a in zip(values, widths, align):
            out.append(v.rjust(w) if a == "r" else v.ljust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in cells])


def terminal_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None,
                   title: str = "", notes: Sequence[str] = (), width: int | None = None,
                   bold: set[tuple[int, int]] = frozenset(), styled: bool = False, wrap: Sequence[int] = ()) -> str:
    """The rows as a rich table no wider than ``width`` (default: the
    terminal's, 80 when not a terminal), the title above and the notes below.
    ``bold`` holds (row, column) positions to emphasise (best of a column);
    ``styled`` keeps the bold as terminal escapes; the values of the columns
    in ``wrap`` (long paths, lists; the row labels too when 0 is in it) may
    fold over several lines. No Markdown escapes."""
    import shutil

    from rich import box
    from rich.console import Console
    from rich.table import Table

    if align is None:
        align = _default_align(headers, rows)
    width = width or shutil.get_terminal_size((80, 24)).columns
    # Right padding only: two spaces between columns (padding and the blank rule).
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False, padding=(0, 1, 0, 0))
    text = [[_cell(v) for v in row] for row in rows]
    widest = [max((len(r[k]) for r in text), default=0) for k in range(len(headers))]
    # Too wide for ``width`` with a column that can fold: every column gets its
    # width here; left to rich, it squeezed every column, then grew the values'
    # columns back past the width (issue 34 item 8).
    narrowest = [max([_narrowest(r[k]) for r in text] + [len(w) for w in headers[k].split()]) if k in wrap
                 else widest[k] for k in range(len(headers))]
    gaps = 2 * (len(headers) - 1)
    squeezed = (any(narrowest[k] < widest[k] for k in wrap)
                and sum(max(w, len(h)) for w, h in zip(widest, headers)) + gaps > width)
    widths = _narrowed(headers, widest, narrowest, width - gaps) if squeezed else None
    for k, (h, a) in enumerate(zip(headers, align)):
        # Row labels and values stay on one line; long headers wrap instead.
        table.add_column(h, justify="right" if a == "r" else "left", overflow="fold", no_wrap=k == 0 and k not in wrap,
                         width=widths[k] if widths else None, min_width=narrowest[k])
    for i, row in enumerate(rows):
        table.add_row(*[(f"[bold]{_escape(_cell(v))}[/bold]" if (i, j) in bold else _escape(_cell(v)))
                        for j, v in enumerate(row)])
    console = Console(width=width, record=True, file=_Null(), force_terminal=styled, color_system="standard" if styled else None,
                      highlight=False, soft_wrap=False)
    # Narrower than the table can fold: overflow the terminal rather than let
    # rich squeeze columns away. Row labels and values never wrap, header words do.
    least = [max([_narrowest(r[k]) if k in wrap else len(r[k]) for r in text]
                 + [len(w) for w in headers[k].split()] + ([len(headers[k])] if k == 0 and k not in wrap else []))
             for k in range(len(headers))]
    console.width = max(width, (sum(widths) if widths else sum(least)) + gaps)
    if title:  # above the table, not inside it: a title inside wraps to the table's width
        console.print(_escape(title), style="bold" if styled else None)
    console.print(table, crop=False)  # a line rich would crop loses characters of a path: fold, never cut
    for note in notes:
        console.print(_escape(note), highlight=False)
    return "\n".join(line.rstrip() for line in console.export_text(styles=styled).splitlines())


# the narrowest a folding column gets: a path or list still reads in pieces this long
_FOLDED = 16


def _narrowed(headers: Sequence[str], widest: Sequence[int], narrowest: Sequence[int], room: int) -> list[int]:
    """Column widths that fit ``room`` where they can: each column as wide as
    its values and header, then the widest one narrowed a column at a time,
    down to its longest header word and its values' narrowest fold (where
    nothing fits ``room``, the headers stay whole and only values fold)."""
    widths = [max(w, len(h)) for w, h in zip(widest, headers)]
    least = [max([n] + [len(w) for w in h.split()]) for n, h in zip(narrowest, headers)]
    if sum(least) > room:
        least = [max(n, len(h)) for n, h in zip(narrowest, headers)]
    while sum(widths) > room:
        narrower = [k for k in range(len(widths)) if widths[k] > least[k]]
        if not narrower:
            break
        widths[max(narrower, key=lambda k: widths[k])] -= 1
    return widths


def _narrowest(cell: str) -> int:
    """The width a folding cell needs: its words (broken at spaces, as rich
    wraps them: "12.0 + cached 2960.9" in 6 columns), a word longer than
    ``_FOLDED`` folded into pieces that long."""
    return max((min(len(word), _FOLDED) for word in cell.split()), default=0)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


class _Null:
    """A file that drops what rich writes; the text is taken from its record."""

    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass
