"""De-identify a folder of notes: plain ``.txt``, BRAT (``.txt`` + ``.ann``) or
i2b2 XML, streamed in batches.

Per note, under the output folder (folders 0700, files 0600, each written
atomically):

- ``text/<id>.txt``: the de-identified text (``tag``, ``mask`` or ``surrogate``);
- ``spans/<id>.xml``: the predicted spans as i2b2 XML (with the original text,
  as the i2b2 scorer reads it) and/or ``spans/<id>.ann``: BRAT standoff whose
  offsets refer to the input note's text;
- with ``mark`` (surrogate mode), ``review/<id>.txt``: the de-identified text
  with every replaced span between ``[[`` and ``]]`` (a reader cannot tell a
  real name the tagger missed from a surrogate; here the unmarked one
  stands out), and ``review/<id>.json``: the replaced spans' offsets in
  ``text/<id>.txt`` with their labels.

Every input is read and checked before any note is tagged, so an unreadable
note stops the run with one error naming its file, before anything is
written; inputs go through the readers' source guard (regular files only: a
FIFO or a link to a device is refused, never read). A note whose outputs all
exist is skipped: an interrupted run resumes where it stopped, and nothing
already written is lost. Nothing here prints note text.

A resume must produce what one uninterrupted run would have, so the folder
keeps ``run.json``: the options that change the outputs (mode, span formats,
the bundle's checksum, patient grouping, and in surrogate mode the seed's
hash, date order and locale). A run whose options differ is refused, naming
the option. A seed drawn at random (no ``--seed``) is kept in ``run.json``
and reused by the resume, so a patient keeps the same surrogates; the folder
already holds PHI (``spans/*.xml`` carry the original text), so the seed
adds no exposure there: share ``text/``, never the whole folder.

One run at a time holds ``.lock``; under it, whatever an earlier, killed run
left (its half-written ``.*.tmp`` files, holding PHI, and its ``.scratch/``
temp folders, where ``tempfile`` points during the run) is removed and
counted before any work.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from ..corpus.document import Annotation, Document
from ..corpus.formats import group_ids, read_brat, read_i2b2_xml, to_i2b2_xml
from ..corpus.formats.source import MAX_NOTE_BYTES, read_source
from ..errors import ERROR, CorpusError, EnsembleDeidError, Problem, printable
from ..files import os_error, private_dir, read_json, temp_files, write_private, write_private_json
from .redact import MODES, marked, redact_spans

SPAN_FORMATS = ("xml", "brat")
RUN_RECORD = "run.json"
LOCK = ".lock"
SCRATCH = ".scratch"
# The command-line option behind each recorded setting (named in a mismatch).
OPTION_NAMES = {"mode": "--mode", "spans": "--spans", "model": "MODEL (the bundle)", "group_pattern": "--group-pattern",
                "seed": "--seed", "date_order": "--date-order", "locale": "--locale",
                "operating_point": "--operating-point"}


class RunMismatch(EnsembleDeidError):
    """The output folder holds a run made with other options."""


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
    when a ``.ann`` sits beside it). Duplicate ids are an error, and so is a
    symbolic link among them that leads out of the folder: its target would
    be read and written, de-identified, among the outputs meant for release
    (a link planted in an export folder could copy any file the user can
    read). Links within the folder are read."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{printable(folder)}: not a folder of notes")
    notes = [Note(p, p.stem, "xml") for p in sorted(folder.glob("*.xml"))]
    notes += [Note(p, p.stem, "brat" if p.with_suffix(".ann").exists() else "txt") for p in sorted(folder.glob("*.txt"))]
    if not notes:
        raise CorpusError(f"{printable(folder)}: no .txt or .xml notes found")
    seen: dict[str, Path] = {}
    problems = []
    root = os.path.realpath(folder)
    for n in notes:
        if n.doc_id in seen:
            problems.append(Problem(ERROR, str(n.path), f"duplicate note id {n.doc_id!r} (also {seen[n.doc_id]})", field="id"))
        seen[n.doc_id] = n.path
        for path in (n.path, n.path.with_suffix(".ann")) if n.fmt == "brat" else (n.path,):
            # realpath, not resolve(): a link loop stays a path (the reader then refuses it by name)
            if path.is_symlink() and os.path.commonpath([root, os.path.realpath(path)]) != root:
                problems.append(Problem(ERROR, str(path), "a symbolic link to a file outside the notes folder, not read: "
                                                          "copy the file into the folder"))
    if problems:
        raise CorpusError(problems)
    return sorted(notes, key=lambda n: n.doc_id)


def read_note(note: Note) -> tuple[Document | None, list[Problem]]:
    if note.fmt == "xml":
        return read_i2b2_xml(note.path)
    if note.fmt == "brat":
        return read_brat(note.path)
    # The readers' guard and note-size limit: a FIFO or device is refused, not read;
    # a note too long for memory is refused before any work.
    raw, problems = read_source(note.path, MAX_NOTE_BYTES, "note")
    if raw is None:
        return None, problems
    try:
        text = raw.decode("utf-8")
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
    leftovers_removed: int = 0  # temp files and folders of an interrupted run
    clinical_values: int = 0  # DATE-labelled spans left as written: they read as clinical values
    outputs: dict[str, list[Path]] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


@dataclass
class TaggedChunk:
    """What tagging some notes gave back (counts, and in surrogate mode with
    a mapping file, their mapping: PHI, kept in memory only until written)."""

    notes: int = 0
    tokens: int = 0
    mapping: dict[str, list] = field(default_factory=dict)
    clinical_values: int = 0

    def __repr__(self) -> str:  # never the mapping (PHI) in a log or traceback
        return f"TaggedChunk(notes={self.notes}, tokens={self.tokens}, clinical_values={self.clinical_values})"


class FolderDeidentifier:
    """De-identify every note of a folder with a fitted :class:`Deidentifier`.

    ``mapping``: in surrogate mode, a file that receives the original ->
    surrogate mapping (PHI; owner-only). It is checked before any work and
    rewritten after every batch, and a note counts as done only once its
    mapping is in it, so a failed or killed run loses none of it.
    ``mark``: in surrogate mode, also write ``review/`` (see the module docstring)."""

    def __init__(self, model, mode: str = "tag", span_formats: Sequence[str] = ("xml",), surrogates=None,
                 group_pattern: str | None = None, batch_size: int = 32, mapping: str | Path | None = None,
                 mark: bool = False):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        bad = sorted(set(span_formats) - set(SPAN_FORMATS))
        if bad:
            raise ValueError(f"unknown span format(s) {bad}; expected {', '.join(SPAN_FORMATS)}")
        if mode == "surrogate" and surrogates is None:
            from .surrogate import Surrogator

            surrogates = Surrogator()
        if mapping is not None and mode != "surrogate":
            raise ValueError("only surrogate mode has a mapping")
        if mapping is not None:
            surrogates.record = True
        if mark and mode != "surrogate":
            raise ValueError("only surrogate mode marks its surrogates")
        self.mark = bool(mark)
        self.model = model
        self.mode = mode
        self.span_formats = tuple(span_formats)
        self.surrogates = surrogates
        self.group_pattern = group_pattern
        self.batch_size = int(batch_size)
        self.mapping = Path(mapping) if mapping is not None else None

    def outputs(self, out: Path, doc_id: str) -> dict[str, Path]:
        paths = {"text": out / "text" / f"{doc_id}.txt"}
        if "xml" in self.span_formats:
            paths["xml"] = out / "spans" / f"{doc_id}.xml"
        if "brat" in self.span_formats:
            paths["brat"] = out / "spans" / f"{doc_id}.ann"
        if self.mark:
            paths["review"] = out / "review" / f"{doc_id}.txt"
            paths["review_spans"] = out / "review" / f"{doc_id}.json"
        return paths

    def is_complete(self, out: Path, doc_id: str, mapped: Sequence[str] | dict = ()) -> bool:
        if self.mapping is not None and doc_id not in mapped:
            return False
        return all(p.exists() for p in self.outputs(out, doc_id).values())

    def options(self) -> dict:
        """The settings that change the outputs (recorded in ``run.json``)."""
        manifest = getattr(self.model, "manifest", None) or {}
        opts = {"mode": self.mode, "spans": sorted(self.span_formats), "model": manifest.get("manifest_sha256"),
                "group_pattern": self.group_pattern}
        method = getattr(self.model, "method", None)
        if getattr(method, "scored", False):  # a re-pointed bundle (--operating-point) tags differently
            point = getattr(method, "operating_point_", getattr(method, "operating_point", None))
            opts["operating_point"] = dict(point) if point else None
        if self.mode == "surrogate":
            s = self.surrogates
            opts.update(seed=_seed_hash(s.seed), date_order=s.date_order, locale=s.locale)
        return opts

    def run(self, input_dir: str | Path, out: str | Path,
            progress: Callable[[int], None] | None = None, executor=None) -> FolderRun:
        """``executor``: spreads chunks of notes over processes or a cluster
        (:mod:`.distribute`); None: tagged here, batch after batch."""
        notes = scan_notes(input_dir)
        check_notes(notes, self.span_formats)  # before any output: one clear error, nothing half done
        groups = group_ids([n.doc_id for n in notes], self.group_pattern)  # a bad or runaway pattern: now
        out = Path(out)
        existed = out.is_dir()
        private_dir(out)  # a new folder owner-only; an existing one (a shared 1777 one) left as it is
        summary = FolderRun(notes=len(notes), has_gold=any(n.has_gold for n in notes))
        with _locked(out):
            self._check_record(out, existed)
            summary.leftovers_removed = _remove_leftovers(out, self.mapping)
            for sub in ("text", "spans", "review") if self.mark else ("text", "spans"):
                private_dir(out / sub)
            mapped = self._open_mapping()  # a mapping that cannot be written fails now, not after the work
            write_private_json(out / RUN_RECORD, self._record())
            todo = [n for n in notes if not self.is_complete(out, n.doc_id, mapped)]
            summary.skipped = len(notes) - len(todo)
            if progress:
                progress(summary.skipped)
            t0 = time.perf_counter()
            if executor is None:
                with _scratch(out), _frozen():
                    for batch in _batches(todo, self.batch_size):
                        done = self.tag_notes(out, batch, [groups[n.doc_id] for n in batch])
                        self._finish(summary, done, mapped, progress)
            else:  # chunks of whole batches, so each note is tagged in the same batch as here
                chunks = ((c, [groups[n.doc_id] for n in c]) for c in _largest_first(
                    _batches(todo, self.batch_size * executor.batches)))
                with _scratch(out), _frozen():  # local workers are forked inside: they inherit the freeze
                    for done in executor.map(self, out, chunks):
                        self._finish(summary, done, mapped, progress)
            summary.seconds = time.perf_counter() - t0
        return summary

    def tag_notes(self, out: Path, notes: Sequence[Note], groups: Sequence[str]) -> "TaggedChunk":
        """Tag and write a few notes (one batch); what a worker of a
        distributed run does for its chunk, batch after batch."""
        docs = [read_note(n)[0] for n in notes]
        for doc, group in zip(docs, groups):
            doc.metadata["group"] = group
        spans = self.model.spans(docs)
        done = TaggedChunk(notes=len(docs))
        kept_before = self.surrogates.clinical_values if self.surrogates is not None else 0
        for doc in docs:
            if self.mapping is not None:
                self.surrogates.mapping.pop(doc.id, None)
            self._write(out, doc, spans[doc.id])
            done.tokens += len(doc.tokens)
        if self.surrogates is not None:
            done.clinical_values = self.surrogates.clinical_values - kept_before
        if self.mapping is not None:
            done.mapping = {d.id: self.surrogates.mapping.get(d.id, []) for d in docs}
            self.surrogates.mapping.clear()
        return done

    def _finish(self, summary: FolderRun, done: "TaggedChunk", mapped: dict, progress) -> None:
        """Count a tagged chunk; its notes' mapping is saved before they count as done."""
        if self.mapping is not None:
            mapped.update(done.mapping)
            write_private(self.mapping, _mapping_json(mapped))
        summary.tokens += done.tokens
        summary.clinical_values += done.clinical_values
        summary.processed += done.notes
        if progress:
            progress(done.notes)

    # -- the run record ---------------------------------------------------------------
    def _record(self) -> dict:
        record = {"version": 1, "options": self.options()}
        if self.mode == "surrogate" and not self.surrogates.seed_given:
            record["drawn_seed"] = self.surrogates.seed  # reused by a resume without --seed
        return record

    def _check_record(self, out: Path, existed: bool) -> None:
        """Refuse a folder whose outputs were made with other options; adopt
        the recorded seed when this run drew its own."""
        path = out / RUN_RECORD
        if not path.exists():
            if existed and any((out / sub).is_dir() and any((out / sub).iterdir()) for sub in ("text", "spans")):
                raise RunMismatch(f"{printable(out)}: holds de-identified notes but no {RUN_RECORD} (the options "
                                  "they were made with are unknown): use a new --out folder")
            return
        record = read_json(path, RunMismatch, "run record")
        if not isinstance(record, dict) or record.get("version") != 1 or not isinstance(record.get("options"), dict):
            raise RunMismatch(f"{printable(path)}: not a run record of this version; use a new --out folder")
        drawn = record.get("drawn_seed")
        s = self.surrogates
        if self.mode == "surrogate" and not s.seed_given and isinstance(drawn, int) \
                and record["options"].get("seed") == _seed_hash(drawn):
            s.seed = drawn
        before, now = record["options"], self.options()
        changed = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
        if changed:
            if "mode" in changed:
                changed = ["mode"]  # the rest follows from it
            what = ", ".join(OPTION_NAMES.get(k, k) for k in changed)
            hint = " (that run used --seed; pass the same one)" if "seed" in changed and drawn is None else ""
            raise RunMismatch(f"{printable(out)}: holds a run made with another {what}{hint}; resuming would mix "
                              f"the two: use the same options, or a new --out folder")

    # -- the mapping ------------------------------------------------------------------
    def _open_mapping(self) -> dict:
        """The mapping kept so far, rewritten at once: a read-only, missing or
        full target fails here, before any note is tagged."""
        if self.mapping is None:
            return {}
        mapped = {}
        if self.mapping.exists():
            mapped = read_json(self.mapping, RunMismatch, "mapping")
            if not isinstance(mapped, dict):
                raise RunMismatch(f"{printable(self.mapping)}: not a mapping written by deidentify")
        private_dir(self.mapping.parent)
        write_private(self.mapping, _mapping_json(mapped))
        return mapped

    def _write(self, out: Path, doc: Document, spans: list[Annotation]) -> None:
        paths = self.outputs(out, doc.id)
        # Spans first, text last: a note counts as done only when all exist.
        if "xml" in paths:
            write_private(paths["xml"], to_i2b2_xml(doc.with_annotations(spans)).encode("utf-8"))
        if "brat" in paths:
            write_private(paths["brat"], to_brat(doc, spans).encode("utf-8"))
        text, placed = redact_spans(doc, spans, self.mode, self.surrogates)
        if "review" in paths:
            write_private_json(paths["review_spans"], [{"start": a.start, "end": a.end, "label": a.label}
                                                       for a in placed])
            write_private(paths["review"], marked(text, placed).encode("utf-8"))
        write_private(paths["text"], text.encode("utf-8"))


def _seed_hash(seed: int) -> str:
    return hashlib.sha256(f"ensemble-deid surrogate seed {seed}".encode()).hexdigest()


def _mapping_json(mapped: dict) -> bytes:
    import json

    return json.dumps(dict(sorted(mapped.items())), indent=1, ensure_ascii=False).encode("utf-8")


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` for the run: a second run into the same folder is
    refused, and anything temporary found there belongs to a dead run."""
    import fcntl

    path = out / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        os.fchmod(fd, 0o600)
    except OSError as exc:
        raise os_error(path, exc) from exc
    _HELD_LOCKS.add(fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RunMismatch(f"{printable(out)}: another deidentify run is writing there") from None
        yield
    finally:
        _HELD_LOCKS.discard(fd)
        os.close(fd)


# The lock descriptors this process holds. A forked worker (``--jobs``) closes
# its copies at once: a flock belongs to the open file, so a worker outliving a
# killed client would otherwise keep the folder locked and refuse the resume.
_HELD_LOCKS: set[int] = set()


def _close_inherited_locks() -> None:
    for fd in _HELD_LOCKS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


def _remove_leftovers(out: Path, mapping: Path | None) -> int:
    """Remove (under the lock) what a killed run left: half-written temp
    files (PHI) beside the outputs and the mapping, and its scratch folders."""
    leftovers = temp_files(out / "text") + temp_files(out / "spans") + temp_files(out / "review")
    if mapping is not None:
        leftovers += temp_files(mapping.parent, mapping.name)
    for path in leftovers:
        path.unlink(missing_ok=True)
    removed = len(leftovers)
    scratch = out / SCRATCH
    if scratch.is_dir():
        for entry in os.scandir(scratch):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    return removed


@contextlib.contextmanager
def _scratch(out: Path) -> Iterator[None]:
    """Point ``tempfile`` at ``out/.scratch/PID`` while notes are tagged:
    the temp folders members make (external systems' inputs, with note
    text) stay inside the owner-only output folder, and a killed run's are
    removed by the next one instead of staying in $TMPDIR."""
    own = private_dir(out / SCRATCH / str(os.getpid()))
    saved = tempfile.tempdir
    tempfile.tempdir = str(own)
    try:
        yield
    finally:
        tempfile.tempdir = saved
        shutil.rmtree(out / SCRATCH, ignore_errors=True)


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """Leave every object alive now (the loaded model above all) out of the
    garbage collector while notes are tagged: its full passes need not walk
    them again and again (a second of a run), and forked local workers never
    write to, so copy, the pages of the model they share with the client.
    The caller's objects are collectable again afterwards (unless the caller
    had frozen them itself)."""
    import gc

    froze = not gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if froze:
            gc.unfreeze()


def _batches(items: Sequence, size: int) -> Iterator[Sequence]:
    for i in range(0, len(items), max(size, 1)):
        yield items[i:i + size]


def _largest_first(chunks: Iterable[Sequence[Note]]) -> list[Sequence[Note]]:
    """The chunks, the largest (in bytes of notes) first: the last ones the
    workers pick up are the smallest, so they all finish at about the same
    time instead of one tagging a large last chunk while the others wait."""
    def size(chunk: Sequence[Note]) -> int:
        total = 0
        for note in chunk:
            with contextlib.suppress(OSError):  # gone since it was checked: its worker reports it
                total += note.path.stat().st_size
        return total

    return sorted(chunks, key=size, reverse=True)  # stable: chunks of equal size stay in note order


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
