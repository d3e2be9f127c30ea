"""De-identify a folder of notes: plain ``.txt``, BRAT (``.txt`` + ``.ann``) or
i2b2 XML, streamed in batches.

Per note, under the output folder (folders 0700, files 0600, each written
atomically):

- ``text/<id>.txt``: the de-identified text (``tag``, ``mask`` or ``surrogate``);
- ``spans/<id>.xml``: the predicted spans as i2b2 XML (with the original text,
  as the i2b2 scorer reads it) and/or ``spans/<id>.ann``: BRAT standoff whose
  offsets refer to the input note's text.

Every input is read and checked before any note is tagged, so an unreadable
note stops the run with one error naming its file, before anything is
written. A note whose outputs all exist is skipped: an interrupted run
resumes where it stopped, and nothing already written is lost. Nothing here
prints note text.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..corpus.document import Annotation, Document
from ..corpus.formats import assign_groups, read_brat, read_i2b2_xml, to_i2b2_xml
from ..errors import ERROR, CorpusError, Problem
from ..files import private_dir, write_private
from .redact import MODES, redact

SPAN_FORMATS = ("xml", "brat")


@dataclass(frozen=True)
class Note:
    """One input file (not yet read)."""

    path: Path
    doc_id: str
    fmt: str  # "xml", "brat" (a .txt with its .ann) or "txt"

    @property
    def has_gold(self) -> bool:
        return self.fmt in ("xml", "brat")


def scan_notes(folder: str | Path) -> list[Note]:
    """The notes of ``folder`` in name order: ``*.xml`` and ``*.txt`` (BRAT
    when a ``.ann`` sits beside it). Duplicate ids are an error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: not a folder of notes")
    notes = [Note(p, p.stem, "xml") for p in sorted(folder.glob("*.xml"))]
    notes += [Note(p, p.stem, "brat" if p.with_suffix(".ann").exists() else "txt") for p in sorted(folder.glob("*.txt"))]
    if not notes:
        raise CorpusError(f"{folder}: no .txt or .xml notes found")
    seen: dict[str, Path] = {}
    problems = []
    for n in notes:
        if n.doc_id in seen:
            problems.append(Problem(ERROR, str(n.path), f"duplicate note id {n.doc_id!r} (also {seen[n.doc_id]})", field="id"))
        seen[n.doc_id] = n.path
    if problems:
        raise CorpusError(problems)
    return sorted(notes, key=lambda n: n.doc_id)


def read_note(note: Note) -> tuple[Document | None, list[Problem]]:
    if note.fmt == "xml":
        return read_i2b2_xml(note.path)
    if note.fmt == "brat":
        return read_brat(note.path)
    try:
        text = note.path.read_bytes().decode("utf-8")
    except OSError as exc:
        return None, [Problem(ERROR, str(note.path), f"cannot read file ({exc.strerror})")]
    except UnicodeDecodeError as exc:
        return None, [Problem(ERROR, str(note.path), f"not valid UTF-8 (bad byte at offset {exc.start})")]
    return Document(note.doc_id, text, (), {"source": str(note.path), "format": "txt"}), []


def check_notes(notes: Sequence[Note], span_formats: Sequence[str] = ()) -> None:
    """Read every note once; all fatal problems in one error (files named, no
    text). With ``xml`` among the span formats, a note whose text XML cannot
    hold (control characters) is one of them."""
    problems = []
    for note in notes:
        doc, found = read_note(note)
        problems += [p for p in found if p.severity == ERROR]
        if doc is None and not found:
            problems.append(Problem(ERROR, str(note.path), "cannot be read"))
        if doc is not None and "xml" in span_formats:
            try:
                to_i2b2_xml(doc)
            except ValueError as exc:  # names the character and offset, not the text
                problems.append(Problem(ERROR, str(note.path), f"{exc} (use --spans brat)", field="text"))
    if problems:
        raise CorpusError(problems)


def to_brat(document: Document, spans: Sequence[Annotation]) -> str:
    lines = []
    for i, a in enumerate(spans, 1):
        covered = document.text[a.start:a.end]
        tail = "" if ("\n" in covered or "\r" in covered) else f"\t{covered}"
        lines.append(f"T{i}\t{a.type} {a.start} {a.end}{tail}")
    return "\n".join(lines) + ("\n" if lines else "")


@dataclass
class FolderRun:
    """What a run did (counts and timing; never text)."""

    notes: int = 0
    processed: int = 0
    skipped: int = 0
    tokens: int = 0
    seconds: float = 0.0
    has_gold: bool = False
    outputs: dict[str, list[Path]] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


class FolderDeidentifier:
    """De-identify every note of a folder with a fitted :class:`Deidentifier`."""

    def __init__(self, model, mode: str = "tag", span_formats: Sequence[str] = ("xml",), surrogates=None,
                 group_pattern: str | None = None, batch_size: int = 32):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        bad = sorted(set(span_formats) - set(SPAN_FORMATS))
        if bad:
            raise ValueError(f"unknown span format(s) {bad}; expected {', '.join(SPAN_FORMATS)}")
        if mode == "surrogate" and surrogates is None:
            from .surrogate import Surrogator

            surrogates = Surrogator()
        self.model = model
        self.mode = mode
        self.span_formats = tuple(span_formats)
        self.surrogates = surrogates
        self.group_pattern = group_pattern
        self.batch_size = int(batch_size)

    def outputs(self, out: Path, doc_id: str) -> dict[str, Path]:
        paths = {"text": out / "text" / f"{doc_id}.txt"}
        if "xml" in self.span_formats:
            paths["xml"] = out / "spans" / f"{doc_id}.xml"
        if "brat" in self.span_formats:
            paths["brat"] = out / "spans" / f"{doc_id}.ann"
        return paths

    def is_complete(self, out: Path, doc_id: str) -> bool:
        return all(p.exists() for p in self.outputs(out, doc_id).values())

    def run(self, input_dir: str | Path, out: str | Path,
            progress: Callable[[int], None] | None = None) -> FolderRun:
        notes = scan_notes(input_dir)
        check_notes(notes, self.span_formats)  # before any output: one clear error, nothing half done
        out = private_dir(out, root=out)  # the output folder itself owner-only, even if it existed
        for sub in ("text", "spans"):
            private_dir(out / sub, root=out)
        summary = FolderRun(notes=len(notes), has_gold=any(n.has_gold for n in notes))
        todo = [n for n in notes if not self.is_complete(out, n.doc_id)]
        summary.skipped = len(notes) - len(todo)
        if progress:
            progress(summary.skipped)
        t0 = time.perf_counter()
        for batch in _batches(todo, self.batch_size):
            docs = [read_note(n)[0] for n in batch]
            if self.group_pattern:
                assign_groups(docs, self.group_pattern)
            spans = self.model.spans(docs)
            for doc in docs:
                self._write(out, doc, spans[doc.id])
                summary.tokens += len(doc.tokens)
            summary.processed += len(docs)
            if progress:
                progress(len(docs))
        summary.seconds = time.perf_counter() - t0
        return summary

    def _write(self, out: Path, doc: Document, spans: list[Annotation]) -> None:
        paths = self.outputs(out, doc.id)
        # Spans first, text last: a note counts as done only when all exist.
        if "xml" in paths:
            write_private(paths["xml"], to_i2b2_xml(doc.with_annotations(spans)).encode("utf-8"))
        if "brat" in paths:
            write_private(paths["brat"], to_brat(doc, spans).encode("utf-8"))
        write_private(paths["text"], redact(doc, spans, self.mode, self.surrogates).encode("utf-8"))


def _batches(items: Sequence, size: int) -> Iterator[Sequence]:
    for i in range(0, len(items), max(size, 1)):
        yield items[i:i + size]


def gold_and_predicted(input_dir: str | Path, out: str | Path,
                       labels: Sequence[str] = ()) -> tuple[list[Document], dict[str, list[Annotation]]]:
    """Gold documents of the notes that have annotations, and the spans this
    tool predicted for them (read back from ``spans/<id>.xml`` or ``.ann``,
    so notes skipped on resume count too). ``labels`` (``CATEGORY:TYPE``, the
    model's label scheme) give BRAT types their category."""
    out = Path(out)
    gold, predicted = [], {}
    for note in scan_notes(input_dir):
        if not note.has_gold:
            continue
        doc, _ = read_note(note)
        xml, ann = out / "spans" / f"{note.doc_id}.xml", out / "spans" / f"{note.doc_id}.ann"
        if xml.exists():
            pred, problems = read_i2b2_xml(xml, doc_id=doc.id)
        else:
            tmp_doc, problems = _read_ann(doc, ann, labels)
            pred = tmp_doc
        if pred is None:
            raise CorpusError([p for p in problems if p.severity == ERROR] or f"{xml}: cannot read predictions")
        gold.append(doc)
        predicted[doc.id] = list(pred.annotations)
    return gold, predicted


def _read_ann(doc: Document, ann: Path, labels: Sequence[str]):
    """Spans of a BRAT ``.ann`` written by this tool, against the note's text."""
    spans, problems = [], []
    try:
        lines = ann.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        return None, [Problem(ERROR, str(ann), f"cannot read predictions ({exc.strerror})")]
    from ..corpus.document import I2B2_PARENT_OF

    parent_of = {**I2B2_PARENT_OF, **{lab.partition(":")[2]: lab.partition(":")[0] for lab in labels}}
    for line in filter(None, lines):
        m = re.match(r"^T\d+\t(\S+) (\d+) (\d+)", line)
        if m:
            type_ = m.group(1)
            spans.append(Annotation(int(m.group(2)), int(m.group(3)), parent_of.get(type_, "OTHER"), type_))
    return doc.with_annotations(spans), problems
