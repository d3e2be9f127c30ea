"""Copy the tables of results files into the docs, where the docs say so.

    python benchmarks/sync_docs.py            # rewrite every marked block
    python benchmarks/sync_docs.py --check    # exit 1 if a block differs from its results file

A block in README.md or docs/*.md between

    <!-- table from benchmarks/results/NAME.md -->
    <!-- end of table -->

gets the first Markdown table of that results file (its ``|`` lines;
``NAME.md, table 2 -->`` the second, e.g. ``compare``'s table of paired
tests), so the figures a reader sees are the ones the benchmark wrote,
never typed by hand. A timing inside a sentence is an inline block,

    <!-- figure from benchmarks/results/NAME.json KEY -->...<!-- end of figure -->

filled with the wall time, CPU time, cores and load of that JSON file's
entry ``commands[KEY]`` (``.``: the file's top level; else a dotted path
such as ``runs.0``, with the file's ``machine``), as
``common.timing_phrase`` words them. A score quoted in prose is a cell of
a results file's first table,

    <!-- cell from benchmarks/results/NAME.md "ROW" "COLUMN" [points] -->...<!-- end of cell -->

the row whose first cell is ROW (or ROW followed by a note such as
``(ref)``, or whose first two cells are ROW's words) in the first table of
the file with a column headed COLUMN; ``points`` writes a difference as
percentage points (``-0.0050`` -> ``0.50``). ``"ROW" "COLUMN" or "ROW2"
"COLUMN2"`` names the same figure in another layout of the file (the first
found is used: ``compare`` moved its p-values into a second table of tests,
``"svm randomization" "p (Holm)"``). So one sync after a rerun
(``compare``, ``run_all.py``) makes every quoted figure agree with the
tables. ``tests/test_docs_tables.py`` runs the check, and fails on a
duration typed by hand outside such a block.

A figure or cell marker is a sentence long: inside prose it made lines of
200-300 characters (issue 53 item 9). Such a marker can instead be defined
once under a short name, in a comment of its own (its own lines, so
invisible, and it may fold over several lines),

    <!-- quick: figure from benchmarks/results/commands.json quick -->
    <!-- fea-gain: cell from benchmarks/results/meddocan-compare.md
         "lstm-crf-fea:epochs=12,validation_fraction=0" "ΔF1 vs ref" points -->

and the sentence holds ``<!-- quick -->...<!--end-->``, filled as the
long form is (the end marker without spaces: a 69-character timing then
still fits a line of 80). The white space around the old value (a line
break after the name, so that the figure starts a line of its own: a line
must not begin with the marker, or Markdown ends the paragraph there) is
kept.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, shown, timing_phrase, write_markdown  # noqa: E402

BLOCK = re.compile(r"(<!-- table from (benchmarks/results/[\w.\-]+\.md)(?:, table \d+)? -->\n)(.*?)(<!-- end of table -->)",
                   re.S)
NTH = re.compile(r", table (\d+) -->")
CELL = re.compile(r'(<!-- cell from (benchmarks/results/[\w.\-]+\.md) ("[^"]+" "[^"]+"(?: or "[^"]+" "[^"]+")*)'
                  r'( points)? -->)(.*?)(<!-- end of cell -->)', re.S)
FIGURE = re.compile(r"(<!-- figure from (benchmarks/results/[\w.\-]+\.json) ([\w.\-]+) -->)(.*?)(<!-- end of figure -->)", re.S)
# The short form: a name defined on lines of its own, then <!-- NAME -->...<!--end--> in the prose.
DEFINE = re.compile(r"^<!-- ([A-Za-z][\w\-]*): ((?:cell|figure) from .*?) -->[ \t]*$", re.S | re.M)
REFERENCE = re.compile(r"<!-- ([A-Za-z][\w\-]*) -->(\s*)(.*?)(\s*)<!--end-->", re.S)


def first_table(path: Path, nth: int = 1) -> str:
    """The ``nth`` Markdown table of ``path`` (its ``|`` lines), the first by default."""
    blocks, lines = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            blocks.append(lines)
            lines = []
    if len(blocks) < nth:
        raise SystemExit(f"sync_docs: {shown(path)} holds {len(blocks)} Markdown table(s), not {nth}")
    return "\n".join(blocks[nth - 1]) + "\n"


def tables(path: Path) -> list[list[list[str]]]:
    """Every Markdown table of ``path``: its rows (header first, rule left out) as cells."""
    found, rows = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("|"):
            if not re.match(r"\|\s*:?-", line):
                rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            found.append(rows)
            rows = []
    return found


def table_cell_of(path: Path, names: str, points: bool = False) -> str:
    """The first of the ``"ROW" "COLUMN" or "ROW2" "COLUMN2" ...`` cells that
    ``path`` has (see ``table_cell``)."""
    pairs = re.findall(r'"([^"]+)" "([^"]+)"', names)
    for row, column in pairs[:-1]:
        try:
            return table_cell(path, row, column, points)
        except SystemExit:
            continue
    return table_cell(path, *pairs[-1], points)


def table_cell(path: Path, row: str, column: str, points: bool = False) -> str:
    """The cell in column ``column`` of the row ``row`` of the first table of
    ``path`` that has both: the row whose first cell is ``row`` (or ``row``
    then a note such as ``(ref)``), or whose first two cells are ``row``'s
    words (``"svm randomization"``, a table of tests). With ``points``, a
    difference of F1-like fractions in percentage points (unsigned, two
    decimals)."""
    def matches(cells: list[str]) -> bool:
        return (cells[0] == row or cells[0].startswith(row + " (")
                or (len(cells) > 1 and f"{cells[0]} {cells[1]}" == row))

    for header, *rows in tables(path):
        found = [r for r in rows if matches(r)] if column in header else []
        if len(found) > 1:
            raise SystemExit(f"sync_docs: {shown(path)} has {len(found)} rows {row!r} (one expected)")
        if found:
            value = found[0][header.index(column)]
            break
    else:
        raise SystemExit(f"sync_docs: {shown(path)} has no table with a row {row!r} and a column {column!r}")
    if points:
        try:
            return f"{abs(float(value)) * 100:.2f}"
        except ValueError:
            raise SystemExit(f"sync_docs: {shown(path)} row {row!r} column {column!r} is not a number") from None
    return value


def timing_entry(data: dict, key: str):
    """``data`` itself for ``.``, ``commands[key]`` (bench_commands.py), else
    the dotted path ``key`` (``runs.0``), given the file's machine and load."""
    if key == ".":
        return data
    if key in (data.get("commands") or {}):
        return data["commands"][key]
    entry = data
    for step in key.split("."):
        if isinstance(entry, list) and step.isdigit() and int(step) < len(entry):
            entry = entry[int(step)]
        elif isinstance(entry, dict):
            entry = entry.get(step)
        else:
            return None
    return {"machine": data.get("machine"), **entry} if isinstance(entry, dict) else None


def synced(text: str) -> str:
    def fill(m: re.Match) -> str:
        source = ROOT / m.group(2)
        if not source.is_file():
            raise SystemExit(f"sync_docs: {m.group(2)} (named in a docs block) does not exist")
        nth = NTH.search(m.group(1))
        return m.group(1) + first_table(source, int(nth.group(1)) if nth else 1) + m.group(4)

    def figure(m: re.Match) -> str:
        source = ROOT / m.group(2)
        if not source.is_file():
            raise SystemExit(f"sync_docs: {m.group(2)} (named in a docs figure) does not exist")
        entry = timing_entry(json.loads(source.read_text(encoding="utf-8")), m.group(3))
        if not isinstance(entry, dict) or "wall_s" not in entry:
            raise SystemExit(f"sync_docs: {m.group(2)} has no timing {m.group(3)!r} (run benchmarks/scale/bench_commands.py)")
        return m.group(1) + timing_phrase(entry) + m.group(5)

    def cell(m: re.Match) -> str:
        source = ROOT / m.group(2)
        if not source.is_file():
            raise SystemExit(f"sync_docs: {m.group(2)} (named in a docs cell) does not exist")
        return m.group(1) + table_cell_of(source, m.group(3), bool(m.group(4))) + m.group(6)

    def long_form(text: str) -> str:
        return CELL.sub(cell, FIGURE.sub(figure, text))

    defined: dict[str, str] = {}
    for m in DEFINE.finditer(text):
        marker = " ".join(m.group(2).split())
        if defined.setdefault(m.group(1), marker) != marker:
            raise SystemExit(f"sync_docs: <!-- {m.group(1)}: ... --> is defined twice, differently")

    def reference(m: re.Match) -> str:
        marker = defined.get(m.group(1))
        if marker is None:
            raise SystemExit(f"sync_docs: <!-- {m.group(1)} --> has no definition <!-- {m.group(1)}: cell|figure "
                             "from ... --> on a line of its own")
        start, end = f"<!-- {marker} -->", f"<!-- end of {marker.split(' ', 1)[0]} -->"
        value = long_form(start + m.group(3) + end)[len(start):-len(end)]
        return f"<!-- {m.group(1)} -->{m.group(2)}{value}{m.group(4)}<!--end-->"

    return REFERENCE.sub(reference, long_form(BLOCK.sub(fill, text)))


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only report blocks that differ (exit 1 if any)")
    args = ap.parse_args(argv)
    stale = []
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        new = synced(text)
        if new != text:
            stale.append(shown(doc))
            if not args.check:
                write_markdown(doc, new)
    verb = "differ from their results files" if args.check else "rewritten"
    print(f"{len(stale)} document(s) {verb}" + (f": {', '.join(stale)}" if stale else ""))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
