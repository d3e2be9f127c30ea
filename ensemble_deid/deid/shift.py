"""Shifted copies of a labelled corpus: the same notes, gold kept, made unlike
the originals in the ways another site's notes differ.

A model is run on notes unlike its training notes, and nobody has annotated
them. To measure how far members and ensembles degrade (and to augment
training notes with identifiers they never saw), a shift rewrites a labelled
note and moves its gold offsets with the text:

- ``identifiers``: every gold span re-drawn by the surrogate generator (another
  Faker locale changes where names and places come from; dates move by a
  per-patient offset and keep their format);
- ``case``: the whole note in ``lower`` or ``upper`` case (some systems export
  notes in capitals);
- ``whitespace``: ``collapse`` (runs of spaces one space, blank lines gone) or
  ``expand`` (every line break doubled, two spaces after a sentence);
- ``headers``: section headers at the start of a line ("HISTORY OF PRESENT
  ILLNESS:", "Antecedentes:") written in the other case and ended by " -".

Every change is an edit of the text; an edit that cuts across a gold span's
boundary is dropped (it would leave the span half changed), one inside a span
moves its end, one that is exactly the span replaces it.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

from ..corpus.document import Annotation, Document
from ..errors import ParameterError, did_you_mean

CASES = ("none", "lower", "upper")
WHITESPACE = ("none", "collapse", "expand")

# A header: at most six words of letters at the start of a line, then a colon.
_HEADER = re.compile(r"(?m)^(?P<words>[^\W\d_][^\W\d_ /&'-]*(?:[ /&'-]+[^\W\d_]+){0,5})[ \t]*:")
_SPACE_RUN = re.compile(r"[ \t]{2,}")
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
_LINE_BREAK = re.compile(r"\n")
_SENTENCE_GAP = re.compile(r"(?<=[.!?]) (?=[^\W\d_])")


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` by ``new``."""

    start: int
    end: int
    new: str


@dataclass(frozen=True)
class ShiftOptions:
    """What a shift changes (see the module docstring)."""

    identifiers: bool = True
    locale: str = "en_US"
    date_order: str = "mdy"
    case: str = "none"
    whitespace: str = "none"
    headers: bool = False
    seed: int = 0

    def __post_init__(self):
        if self.case not in CASES:
            raise ParameterError(f"case must be one of {', '.join(CASES)}, not {self.case!r}"
                                 f"{did_you_mean(self.case, CASES)}", "--case")
        if self.whitespace not in WHITESPACE:
            raise ParameterError(f"whitespace must be one of {', '.join(WHITESPACE)}, not {self.whitespace!r}"
                                 f"{did_you_mean(self.whitespace, WHITESPACE)}", "--whitespace")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ParameterError(f"seed must be a non-negative integer, not {self.seed!r}", "--seed")
        if not any((self.identifiers, self.case != "none", self.whitespace != "none", self.headers)):
            raise ParameterError("a shift that changes nothing: choose identifiers, case, whitespace or headers",
                                 "--no-identifiers")

    def as_record(self) -> dict:
        return asdict(self)


@dataclass
class ShiftCounts:
    """What a shift changed over a corpus (counts only: no text)."""

    documents: int = 0
    spans: int = 0
    redrawn: int = 0
    headers: int = 0
    whitespace: int = 0
    dropped_edits: int = field(default=0)  # edits that would have cut a gold span

    def add(self, other: "ShiftCounts") -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def apply_edits(text: str, annotations: Sequence[Annotation], edits: Iterable[Edit]) -> tuple[str, list[Annotation], int]:
    """``text`` with ``edits`` applied and ``annotations`` moved with it; also
    the number of edits dropped for cutting across a span's boundary.

    Edits must not overlap each other. An edit inside a span (or equal to it)
    changes the span's end; an empty edit (an insertion) is never placed at a
    span's boundary by this module, and would go before a span that starts there."""
    kept: list[Edit] = []
    dropped = 0
    last_end = -1
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if not 0 <= edit.start <= edit.end <= len(text):
            raise ValueError(f"edit {edit.start}-{edit.end} outside a text of {len(text)} characters")
        if edit.start < last_end:
            raise ValueError(f"edits overlap at offset {edit.start}")
        if any(a.start < edit.end and edit.start < a.end and not (a.start <= edit.start and edit.end <= a.end)
               for a in annotations):
            dropped += 1
            continue
        kept.append(edit)
        last_end = edit.end
    pieces, pos = [], 0
    for edit in kept:
        pieces += [text[pos:edit.start], edit.new]
        pos = edit.end
    pieces.append(text[pos:])
    new_text = "".join(pieces)

    def moved(offset: int, at_end: bool) -> int:
        # An edit that ends at or before the offset moves it; at a span's end, an insertion right
        # there stays outside the span.
        delta = 0
        for edit in kept:
            if edit.end < offset or edit.end == offset and not (at_end and edit.start == edit.end):
                delta += len(edit.new) - (edit.end - edit.start)
        return offset + delta

    moved_spans = []
    for a in annotations:
        start, end = moved(a.start, False), moved(a.end, True)
        moved_spans.append(Annotation(start, end, a.category, a.type, new_text[start:end], a.id, a.comment))
    return new_text, moved_spans, dropped


def _case(text: str, case: str) -> str:
    if case == "none":
        return text
    change = str.lower if case == "lower" else str.upper
    # Character by character, and only where the length stays (German sharp s, dotted I): offsets stay valid.
    return "".join(c2 if len(c2 := change(c)) == 1 else c for c in text)


def _header_edits(text: str) -> list[Edit]:
    edits = []
    for m in _HEADER.finditer(text):
        words = m.group("words")
        letters = [c for c in words if c.isalpha()]
        shouting = sum(c.isupper() for c in letters) > len(letters) / 2
        new = words.capitalize() if shouting else words.upper()
        edits.append(Edit(m.start(), m.end(), new + " -"))
    return edits


def _whitespace_edits(text: str, how: str) -> list[Edit]:
    if how == "collapse":
        found = [(m, " ") for m in _SPACE_RUN.finditer(text)] + [(m, "\n") for m in _BLANK_LINES.finditer(text)]
    elif how == "expand":
        found = [(m, "\n\n") for m in _LINE_BREAK.finditer(text)] + [(m, "  ") for m in _SENTENCE_GAP.finditer(text)]
    else:
        return []
    edits, last = [], -1
    for m, new in sorted(found, key=lambda f: f[0].start()):
        if m.start() >= last:  # a blank line's own newlines are not also a space run
            edits.append(Edit(m.start(), m.end(), new))
            last = m.end()
    return edits


class Shifter:
    """Shift notes with one set of :class:`ShiftOptions` (identifiers consistent per patient)."""

    def __init__(self, options: ShiftOptions):
        self.options = options
        self.surrogates = None
        if options.identifiers:
            from .surrogate import Surrogator

            self.surrogates = Surrogator(seed=options.seed, date_order=options.date_order, locale=options.locale)

    def shift(self, document: Document) -> tuple[Document, ShiftCounts]:
        """The shifted copy of one note (same id and metadata) and what changed."""
        opts = self.options
        counts = ShiftCounts(documents=1, spans=len(document.annotations))
        text, spans = document.text, list(document.annotations)
        if self.surrogates is not None and spans:
            news = self.surrogates.replace_spans(document, spans)
            edits = [Edit(a.start, a.end, new) for a, new in zip(spans, news)]
            counts.redrawn = sum(new != text[a.start:a.end] for a, new in zip(spans, news))
            text, spans, dropped = apply_edits(text, spans, edits)
            counts.dropped_edits += dropped
        for make, name in ((lambda t: _header_edits(t) if opts.headers else [], "headers"),
                           (lambda t: _whitespace_edits(t, opts.whitespace), "whitespace")):
            edits = make(text)
            text, spans, dropped = apply_edits(text, spans, edits)
            setattr(counts, name, len(edits) - dropped)
            counts.dropped_edits += dropped
        text = _case(text, opts.case)
        spans = [Annotation(a.start, a.end, a.category, a.type, text[a.start:a.end], a.id, a.comment) for a in spans]
        return Document(document.id, text, spans, document.metadata), counts

    def shift_all(self, documents: Sequence[Document]) -> tuple[list[Document], ShiftCounts]:
        total = ShiftCounts()
        out = []
        for doc in documents:
            shifted, counts = self.shift(doc)
            out.append(shifted)
            total.add(counts)
        return out, total


def augmented_copies(documents: Sequence[Document], copies: int, options: ShiftOptions) -> list[list[Document]]:
    """``copies`` shifted copies of ``documents`` for training (augmentation):
    copy ``i`` is shifted with seed ``options.seed + i``, so the copies
    differ from each other; each keeps its note's patient group (a fold
    holds a note and its copies together), is named ``<id>~aug<i>`` and
    records ``copy_of`` in its metadata."""
    out = []
    for i in range(copies):
        shifter = Shifter(ShiftOptions(**{**options.as_record(), "seed": options.seed + i}))
        batch = []
        for doc in documents:
            shifted, _ = shifter.shift(doc)
            metadata = {**doc.metadata, "group": doc.group, "copy_of": doc.id}
            batch.append(Document(f"{doc.id}~aug{i + 1}", shifted.text, shifted.annotations, metadata))
        out.append(batch)
    return out


SHIFT_RECORD = "SHIFT.json"


def write_shifted(splits: dict[str, Sequence[Document]], out, record: dict) -> dict[str, "Path"]:
    """Write each split's shifted notes as i2b2 XML (``out/<split>/<id>.xml``,
    owner-only) and ``out/SHIFT.json`` (options, counts and fingerprints; no
    text) into ``out``, a new or empty folder; returns each split's folder.
    Written into a temporary folder beside it first: a failure leaves no half corpus."""
    import os
    import shutil
    from pathlib import Path

    from ..corpus.fingerprint import corpus_fingerprint
    from ..corpus.synth import write_corpus
    from ..files import private_dir, private_temp_dir, write_private_json

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ParameterError(f"{out}: exists and is not an empty folder", "--out")
    private_dir(out.parent)
    tmp = private_temp_dir(f".{out.name}.", ".tmp", out.parent)
    try:
        for split, documents in splits.items():
            write_corpus(documents, private_dir(tmp / split))
        fingerprints = {split: corpus_fingerprint(docs) for split, docs in splits.items()}
        write_private_json(tmp / SHIFT_RECORD, dict(record, fingerprints=fingerprints))
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {split: out / split for split in splits}
