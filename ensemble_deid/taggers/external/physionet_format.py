"""The file formats of PhysioNet's deid (the Perl de-identification package
of Neamatullah et al. 2008, ``deid.pl``).

Records (the ``.text`` input, also the layout of ``.res`` output)::

    START_OF_RECORD=PATIENT||||NOTE||||
    ...the note's text...
    ||||END_OF_RECORD

PATIENT and NOTE are integers. PHI locations (``.phi`` output, and the gold
standard ``.deid`` file, same layout)::

    Patient 1<TAB>Note 1
    52<TAB>52<TAB>63
    ...

one header per record, then one ``START START END`` line per PHI (the first
number repeats the start; ``stat.pm`` reads the second and third). Offsets
count from the first character after the START_OF_RECORD line; deid.pl is a
byte-oriented Perl program, so they count bytes of the file's encoding.
Category-bearing ``-phi.phrase`` lines (``PATIENT NOTE START END CATEGORY
PHRASE``) are read too. In ``.res`` output each PHI is replaced by a
``[**marker**]``; markers give categories (``Known patient lastname``,
``Hospital1``...), resolved against the ``.phi`` positions. deid gives a
phrase one surrogate for the whole record, so a repeated phrase carries the
marker of its first occurrence even where deid typed it differently; the
``.info`` file it writes beside them lists the types of each PHI::

    Patient 1<TAB>Note 1
    52<TAB>63<TAB>Known patient lastname
    ...

(positions as in ``.phi``, optionally ``START START END`` or ``START-END``;
the fields after them are types, or a phrase then types). Its categories win
over the ``.res`` markers when present.

Parsers return data or raise :class:`ExternalOutputError` naming the file,
line and record; they never echo note text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ...corpus.document import Document
from ...files import read_utf8
from .base import ExternalOutputError

START = "START_OF_RECORD="
END = "||||END_OF_RECORD"
_START_RE = re.compile(r"^START_OF_RECORD=(\d+)\|+(\d+)\|+\s*$")
_END_RE = re.compile(r"^\|\|\|\|END_OF_RECORD\s*$")
_HEADER_RE = re.compile(r"^\s*Patient\s+(\d+)\s+Note\s+(\d+)\s*$", re.IGNORECASE)
_POS_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$")
_PHRASE_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)(?:\s.*)?$")
_MARKER_RE = re.compile(r"\[\*\*(.*?)\*\*\]", re.DOTALL)

RecordKey = tuple[int, int]  # (patient, note)


@dataclass
class PhiEntry:
    start: int
    end: int
    category: str | None = None
    line: int = 0


@dataclass
class PhiFile:
    """PHI locations per record, in file order; ``categorised`` when the file
    carried categories (phrase layout)."""

    source: str
    records: dict[RecordKey, list[PhiEntry]] = field(default_factory=dict)
    categorised: bool = False


# --- records ------------------------------------------------------------------

def format_records(documents: Sequence[Document], keys: Sequence[RecordKey]) -> str:
    """The ``.text`` input of deid.pl for documents numbered by ``keys``."""
    parts = []
    for doc, (patient, note) in zip(documents, keys):
        for line in doc.text.split("\n"):
            if END in line or line.lstrip().upper().startswith("START_OF_RECORD"):
                raise ExternalOutputError(
                    f"document {doc.id!r}: a line of its text looks like a deid record marker; "
                    "it cannot be written in deid's record format"
                )
        text = doc.text if doc.text.endswith("\n") or not doc.text else doc.text + "\n"
        parts.append(f"{START}{patient}||||{note}||||\n{text}{END}\n")
    return "".join(parts)


def parse_records(text: str, source: str) -> dict[RecordKey, str]:
    """Record text by (patient, note): the characters between the line after
    START_OF_RECORD and the line holding END_OF_RECORD."""
    records: dict[RecordKey, str] = {}
    current: RecordKey | None = None
    body: list[str] = []
    lineno = 0
    for lineno, line in enumerate(text.splitlines(keepends=True), 1):
        bare = line.rstrip("\r\n")
        m = _START_RE.match(bare)
        if m:
            if current is not None:
                raise ExternalOutputError(f"{source}: line {lineno}: START_OF_RECORD before the END_OF_RECORD of record {current}")
            current = (int(m.group(1)), int(m.group(2)))
            if current in records:
                raise ExternalOutputError(f"{source}: line {lineno}: record patient {current[0]} note {current[1]} appears twice")
            body = []
            continue
        if bare.startswith(START):
            raise ExternalOutputError(f"{source}: line {lineno}: malformed START_OF_RECORD line (expected START_OF_RECORD=N||||M||||)")
        if _END_RE.match(bare):
            if current is None:
                raise ExternalOutputError(f"{source}: line {lineno}: END_OF_RECORD outside a record")
            records[current] = "".join(body)
            current = None
            continue
        if current is None:
            if bare.strip():
                raise ExternalOutputError(f"{source}: line {lineno}: text outside a record")
            continue
        body.append(line)
    if current is not None:
        raise ExternalOutputError(f"{source}: record patient {current[0]} note {current[1]} has no END_OF_RECORD line")
    return records


# --- PHI locations -------------------------------------------------------------------

def parse_phi(text: str, source: str) -> PhiFile:
    """Read a ``.phi`` / ``.deid`` file (or the ``-phi.phrase`` layout)."""
    out = PhiFile(source)
    current: RecordKey | None = None
    layout: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        header = _HEADER_RE.match(line)
        if header and layout != "phrase":
            layout = "phi"
            current = (int(header.group(1)), int(header.group(2)))
            if current in out.records:
                raise ExternalOutputError(f"{source}: line {lineno}: record patient {current[0]} note {current[1]} appears twice")
            out.records[current] = []
            continue
        pos = _POS_RE.match(line)
        if pos and layout != "phrase":
            if current is None:
                raise ExternalOutputError(f"{source}: line {lineno}: PHI position before any 'Patient N<TAB>Note M' header")
            start, end = int(pos.group(2)), int(pos.group(3))
            _check_order(start, end, source, lineno)
            out.records[current].append(PhiEntry(start, end, None, lineno))
            continue
        phrase = _PHRASE_RE.match(line)
        if phrase and layout != "phi":
            layout = "phrase"
            key = (int(phrase.group(1)), int(phrase.group(2)))
            start, end = int(phrase.group(3)), int(phrase.group(4))
            _check_order(start, end, source, lineno)
            out.records.setdefault(key, []).append(PhiEntry(start, end, phrase.group(5), lineno))
            continue
        expected = {
            "phi": "'Patient N<TAB>Note M' or 'START START END'",
            "phrase": "'PATIENT NOTE START END CATEGORY [PHRASE]'",
            None: "a 'Patient N<TAB>Note M' header, or a 'PATIENT NOTE START END CATEGORY' line",
        }[layout]
        raise ExternalOutputError(f"{source}: line {lineno}: malformed line (expected {expected})")
    if layout is None:
        raise ExternalOutputError(f"{source}: no records found (empty or not a deid .phi file)")
    out.categorised = layout == "phrase"
    return out


def _check_order(start: int, end: int, source: str, lineno: int) -> None:
    if end < start:
        raise ExternalOutputError(f"{source}: line {lineno}: end {end} before start {start}")


def read_text_file(path: str | Path, what: str) -> str:
    return read_utf8(path, ExternalOutputError, what)


# --- categories from .info ---------------------------------------------------------

_INFO_POS_RE = re.compile(r"^\s*(\d+)(?:\s+|-)(\d+)(?:\s+(\d+))?(?:\s*\t(.*))?\s*$")


def parse_info(text: str) -> dict[RecordKey, dict[tuple[int, int], list[str]]]:
    """The fields deid's ``.info`` file gives after each PHI position, by
    record and (start, end) in the ``.phi`` offsets. Supplementary output: a
    line that is not a header or a position is skipped, and the caller uses a
    field only when the category map knows it (a phrase field is then never
    taken for a category, nor shown)."""
    out: dict[RecordKey, dict[tuple[int, int], list[str]]] = {}
    current: dict[tuple[int, int], list[str]] | None = None
    for line in text.splitlines():
        header = _HEADER_RE.match(line)
        if header:
            current = out.setdefault((int(header.group(1)), int(header.group(2))), {})
            continue
        m = _INFO_POS_RE.match(line)
        if m is None or current is None:
            continue
        a, b, c = int(m.group(1)), int(m.group(2)), m.group(3)
        fields = [f.strip() for f in (m.group(4) or "").split("\t") if f.strip()]
        if c is not None and a == b:  # START START END, as in .phi
            start, end = b, int(c)
        else:
            start, end = a, b
            if c is not None:  # START END, then a phrase of digits
                fields.insert(0, c)
        current.setdefault((start, end), []).extend(fields)
    return out


# --- categories from .res markers ---------------------------------------------------

def res_categories(original: str, res: str, spans: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str] | None:
    """Marker names of the PHI spans (character offsets into ``original``)
    read from the de-identified record ``res``: the text between markers must
    equal the original's text between spans, and each marker must replace a
    span starting where the preceding literal text ends. Returns None when
    the record cannot be aligned (categories then fall back to the default)."""
    by_start: dict[int, int] = {}
    for s, e in sorted(spans):
        by_start[s] = max(e, by_start.get(s, e))
    out: dict[tuple[int, int], str] = {}
    pos = 0
    last = 0
    for m in _MARKER_RE.finditer(res):
        literal = res[last:m.start()]
        if original[pos:pos + len(literal)] != literal:
            return None
        pos += len(literal)
        end = by_start.get(pos)
        if end is None:
            return None
        out[(pos, end)] = _marker_name(m.group(1))
        pos = end
        last = m.end()
    if original[pos:] != res[last:] and original[pos:].rstrip("\n") != res[last:].rstrip("\n"):
        return None
    return out


def _marker_name(inner: str) -> str:
    inner = inner.strip()
    if re.fullmatch(r"[\d\s/\-.:]*", inner):  # a surrogate date or number: [**2573-5-30**]
        return "Date"
    return re.sub(r"\s+\d+$", "", inner)  # "Known patient lastname 241" -> "Known patient lastname"
