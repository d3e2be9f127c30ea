"""De-identify a folder of notes: plain ``.txt``, BRAT (``.txt`` + ``.ann``) or
i2b2 XML, streamed in batches.

Per note, under the output folder (folders 0700, files 0600, each written
atomically):

- ``text/<id>.txt``: the de-identified text (``tag``, ``mask`` or ``surrogate``;
  ``<id>`` a neutral name with ``rename``, see :mod:`.names`);
- ``spans/<id>.xml``: the predicted spans as i2b2 XML (with the original text,
  as the i2b2 scorer reads it) and/or ``spans/<id>.ann``: BRAT standoff whose
  offsets refer to the input note's text;
- with ``mark`` (surrogate mode), ``marked/<id>.txt``: the de-identified text
  with every replaced span between ``[[`` and ``]]`` (a reader cannot tell a
  real name the tagger missed from a surrogate; here the unmarked one
  stands out), and ``marked/<id>.json``: the replaced spans' offsets in
  ``text/<id>.txt`` with their labels.

and for the run, ``release-report.json`` / ``.md`` (``release``: counts,
labels and checksums, no PHI) and, when the run has a review queue, its
page ``review/review.html`` (``review_page``).

Every input is read and checked before any note is tagged, so an unreadable
note stops the run with one error naming its file, before anything is
written; inputs go through the readers' source guard (regular files only: a
FIFO or a link to a device is refused, never read). A note whose outputs all
exist is skipped: an interrupted run resumes where it stopped, and nothing
already written is lost. Nothing here prints note text.

A resume must produce what one uninterrupted run would have, so the folder
keeps ``run.json``: the options that change the outputs (mode, span formats,
the bundle's checksum, patient grouping, renaming, and in surrogate mode a
salted digest of the seed, date order and locale). A run whose options differ is refused, naming
the option. A seed drawn at random (no ``--seed``) is kept in ``run.json``
and reused by the resume, so a patient keeps the same surrogates; the folder
already holds PHI (``spans/*.xml`` carry the original text), so the seed
adds no exposure there: share ``text/``, never the whole folder.

One run at a time holds ``.lock``; under it, whatever an earlier, killed run
left (its half-written ``.*.tmp`` files, holding PHI, and its ``.scratch/``
temp folders, where ``tempfile`` points during the run) is removed and
counted before any work.

A run never reports success over a folder of notes released as they came
in: one that tags no span in any of its notes (with those an earlier run
did) is an error naming the likely cause, unless ``allow_empty``.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections import Counter
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from ..corpus.document import I2B2_PARENT_OF, Annotation, Document
from ..corpus.formats import group_ids, read_brat, read_i2b2_xml, to_i2b2_xml
from ..corpus.formats.source import MAX_NOTE_BYTES, read_source
from ..errors import ERROR, CorpusError, EnsembleDeidError, Problem, printable
from ..files import os_error, private_dir, read_json, read_utf8, temp_files, write_private, write_private_json
from .redact import MODES, marked, redact_spans
from .release import RUN_RECORD, Counted, run_counts, write_release_report
from .review import REVIEW_DIR

SPAN_FORMATS = ("xml", "brat")
LOCK = ".lock"
SCRATCH = ".scratch"
# The command-line option behind each recorded setting (named in a mismatch).
OPTION_NAMES = {"mode": "--mode", "spans": "--spans", "model": "MODEL (the bundle)", "group_pattern": "--group-pattern",
                "seed": "--seed", "date_order": "--date-order", "locale": "--locale",
                "operating_point": "--operating-point", "rename": "--rename", "review": "--review"}
REVIEW_PARTS = ".parts"  # OUT/review/.parts/<name>.json: each note's queued items, gathered into the queue


class RunMismatch(EnsembleDeidError):
    """The output folder holds a run made with other options."""


@dataclass(frozen=True)
class Note:
    """One input file (not yet read)."""

    path: Path
    doc_id: str
    fmt: str  # "xml", "brat" (a .txt with its .ann) or "txt"
    out_name: str | None = None  # the name its outputs get (--rename); None: its id

    @property
    def output_id(self) -> str:
        return self.out_name if self.out_name is not None else self.doc_id

    @property
    def has_gold(self) -> bool:
        return self.fmt in ("xml", "brat")


def scan_notes(folder: str | Path) -> list[Note]:
    """The notes of ``folder`` in name order (see :func:`scan_folder`)."""
    return scan_folder(folder)[0]


# Extensions a skip report may name (any other is shown as "another extension": an extension is part of a
# file name, and a name can carry PHI).
_SHOWN_SUFFIXES = frozenset(".text .rtf .doc .docx .odt .pdf .csv .tsv .json .md .html .htm .log .dat .bak .tmp .zip "
                            ".gz .tar .bz2 .xz .7z .ann .xmi .conll .bio .jsonl .yaml .yml .ini .cfg .py .sh".split())


def scan_folder(folder: str | Path) -> tuple[list[Note], dict[str, int]]:
    """The notes of ``folder`` in name order, and what was not read as a
    note (a count per reason, never a name: a name can carry PHI). Notes are
    ``*.xml`` and ``*.txt``, the extension in any case (``.TXT``, ``.Xml``):
    BRAT when a ``.ann`` sits beside it. Subfolders are not searched.
    Duplicate ids are an error, and so is a symbolic link among them that
    leads out of the folder: its target would be read and written,
    de-identified, among the outputs meant for release (a link planted in an
    export folder could copy any file the user can read). Links within the
    folder are read."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{printable(folder)}: not a folder of notes")
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise CorpusError(f"{printable(folder)}: cannot list the notes ({exc.strerror})") from None
    names = {e.name for e in entries}
    # A BRAT note's annotations: its name with ".ann" (the reader's rule), beside a .txt of any case.
    companions = {Path(n).with_suffix(".ann").name for n in names if Path(n).suffix.lower() == ".txt"}
    notes, skipped = [], Counter()
    for entry in entries:
        path = Path(entry.path)
        suffix = path.suffix.lower()
        if suffix == ".xml":
            notes.append(Note(path, path.stem, "xml"))
        elif suffix == ".txt":
            notes.append(Note(path, path.stem, "brat" if path.with_suffix(".ann").name in names else "txt"))
        elif entry.name not in companions:
            skipped[_skip_reason(entry, suffix)] += 1
    if not notes:
        raise CorpusError(f"{printable(folder)}: no .txt or .xml notes found"
                          + (f" ({skipped_summary(skipped)})" if skipped else ""))
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
    return sorted(notes, key=lambda n: n.doc_id), dict(skipped)


def _skip_reason(entry: os.DirEntry, suffix: str) -> str:
    try:
        is_dir = entry.is_dir()
    except OSError:
        is_dir = False
    if is_dir:
        return "subfolder (not searched)"
    if entry.name.startswith("."):
        return "hidden file"
    if suffix == ".ann":
        return ".ann without a .txt of its name"
    if not suffix:
        return "no extension"
    return f"extension {suffix}" if suffix in _SHOWN_SUFFIXES else "another extension"


def skipped_summary(skipped: dict[str, int]) -> str:
    """``"2 extension .text, 1 subfolder (not searched)"``: what a scan did not read."""
    return ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))


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


def check_locations(input_dir: str | Path, out: str | Path, mapping: str | Path | None = None,
                    model: str | Path | None = None) -> None:
    """A ParameterError, before any work, for outputs that would land where
    they do harm (paths compared with links resolved): the surrogate mapping
    (PHI) inside ``OUT/text``, the folder to share; OUT inside the bundle
    (the notes would travel with it, and it would no longer load); OUT equal
    to or inside INPUT, or INPUT inside OUT's ``text/`` or ``spans/`` (notes
    and outputs mixed: a later run would read outputs as notes, or write
    over the notes)."""
    from ..errors import ParameterError

    def real(path) -> Path:
        return Path(os.path.realpath(path))

    def within(path: Path, folder: Path) -> bool:
        return path == folder or folder in path.parents

    out_r, input_r = real(out), real(input_dir)
    if mapping is not None and within(real(mapping), out_r / "text"):
        raise ParameterError(f"{printable(mapping)}: inside {printable(Path(out) / 'text')}, the folder of notes to "
                             "share: the mapping holds every original PHI string; write it elsewhere (e.g. "
                             f"{printable(Path(out) / 'mapping.json')})", "--save-mapping")
    if model is not None and within(out_r, real(model)):
        raise ParameterError(f"{printable(out)}: the output folder is the bundle {printable(model)} or inside it: the "
                             "de-identified notes would travel with the bundle (and it would no longer load); use "
                             "a folder outside it", "--out")
    if mapping is not None and model is not None and within(real(mapping), real(model)):
        raise ParameterError(f"{printable(mapping)}: inside the bundle {printable(model)}; write it elsewhere",
                             "--save-mapping")
    if within(out_r, input_r):
        raise ParameterError(f"{printable(out)}: the output folder is the notes' folder or inside it; outputs and "
                             "notes would mix: use a folder outside INPUT", "--out")
    if any(within(input_r, out_r / sub) for sub in ("text", "spans")):
        raise ParameterError(f"{printable(input_dir)}: the notes are inside the output folder's text/ or spans/, "
                             "where the outputs are written; use another --out folder", "--out")


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
    clinical_values: int = 0  # DATE- or AGE-labelled spans that read as clinical values (kept when no date)
    outputs: dict[str, list[Path]] = field(default_factory=dict)
    not_notes: dict[str, int] = field(default_factory=dict)  # files of INPUT not read, per reason (no names)
    spans: int = 0  # PHI spans tagged in the notes of this run
    texts: int = 0  # notes of this run with any text (letters or digits)
    warnings: list[str] = field(default_factory=list)
    categories: Counter = field(default_factory=Counter)  # TaggedChunk's, for the whole run
    uncounted: set[str] = field(default_factory=set)

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
    spans: int = 0
    texts: int = 0
    clinical_values: int = 0
    categories: Counter = field(default_factory=Counter)  # spans per category, as the release report reads them
    uncounted: list[str] = field(default_factory=list)  # spans files the release report must read back

    def add(self, other: "TaggedChunk") -> None:
        self.notes += other.notes
        self.tokens += other.tokens
        self.spans += other.spans
        self.texts += other.texts
        self.clinical_values += other.clinical_values
        self.mapping.update(other.mapping)
        self.categories.update(other.categories)
        self.uncounted += other.uncounted

    def __repr__(self) -> str:  # never the mapping (PHI) in a log or traceback
        return (f"TaggedChunk(notes={self.notes}, tokens={self.tokens}, spans={self.spans}, "
                f"clinical_values={self.clinical_values})")


# A run over at least this many notes with text that tags nothing at all is an error (its text/ would be the
# notes unchanged), unless asked for (allow_empty); over fewer, a warning.
EMPTY_RUN_NOTES = 5


class NothingTagged(EnsembleDeidError):
    """A run tagged no PHI in any of its notes (their text/ files are removed)."""


class FolderDeidentifier:
    """De-identify every note of a folder with a fitted :class:`Deidentifier`.

    ``mapping``: in surrogate mode, a file that receives the original ->
    surrogate mapping (PHI; owner-only). It is checked before any work and
    rewritten after every batch, and a note counts as done only once its
    mapping is in it, so a failed or killed run loses none of it.
    ``mark``: in surrogate mode, also write ``marked/`` (see the module docstring).
    ``rename``: ``"hash"`` or ``"index"``: outputs under neutral names
    (:mod:`.names`); None: under the notes' own names. ``allow_empty``: a
    run that tags nothing in any of its notes is not an error (see
    :data:`EMPTY_RUN_NOTES`)."""

    def __init__(self, model, mode: str = "tag", span_formats: Sequence[str] = ("xml",), surrogates=None,
                 group_pattern: str | None = None, batch_size: int = 32, mapping: str | Path | None = None,
                 mark: bool = False, rename: str | None = None, allow_empty: bool = False, review=None):
        from .names import SCHEMES

        if rename is not None and rename not in SCHEMES:
            raise ValueError(f"rename must be one of {', '.join(SCHEMES)} or None, not {rename!r}")
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
        self.rename = rename
        self.allow_empty = bool(allow_empty)
        self._seed_salt: str | None = None  # of the seed's hash in run.json (drawn once per output folder)
        # review: None (no queue), or an ensemble.review_risk.Budget (the bundle's own when it is the bundle's)
        if review is not None and getattr(model, "review", None) is None:
            raise ValueError("the bundle holds no review model: fit it with --review, or deidentify with --review none")
        self.review = review

    def outputs(self, out: Path, name: str) -> dict[str, Path]:
        """A note's output files; ``name``: its output name (``Note.output_id``)."""
        paths = {"text": out / "text" / f"{name}.txt"}
        if "xml" in self.span_formats:
            paths["xml"] = out / "spans" / f"{name}.xml"
        if "brat" in self.span_formats:
            paths["brat"] = out / "spans" / f"{name}.ann"
        if self.mark:
            paths["marked"] = out / "marked" / f"{name}.txt"  # not review/: that is the review queue's folder
            paths["marked_spans"] = out / "marked" / f"{name}.json"
        if self.review is not None:
            paths["review"] = _review_parts(out) / f"{name}.json"
        return paths

    def is_complete(self, out: Path, note: Note, mapped: Sequence[str] | dict = ()) -> bool:
        if self.mapping is not None and note.doc_id not in mapped:
            return False
        return all(p.exists() for p in self.outputs(out, note.output_id).values())

    def options(self) -> dict:
        """The settings that change the outputs (recorded in ``run.json``)."""
        manifest = getattr(self.model, "manifest", None) or {}
        opts = {"mode": self.mode, "spans": sorted(self.span_formats), "model": manifest.get("manifest_sha256"),
                "group_pattern": self.group_pattern}
        method = getattr(self.model, "method", None)
        if getattr(method, "scored", False):  # a re-pointed bundle (--operating-point) tags differently
            point = getattr(method, "operating_point_", getattr(method, "operating_point", None))
            opts["operating_point"] = dict(point) if point else None
        if self.rename is not None:
            opts["rename"] = self.rename
        if self.mode == "surrogate":
            s = self.surrogates
            if self._seed_salt is None:
                self._seed_salt = secrets.token_hex(16)
            opts.update(seed=seed_digest(s.seed, self._seed_salt), date_order=s.date_order, locale=s.locale)
        if self.review is not None:  # only then: runs recorded before review existed keep their record
            opts["review"] = str(self.review)
        return opts

    def run(self, input_dir: str | Path, out: str | Path,
            progress: Callable[[int], None] | None = None, executor=None) -> FolderRun:
        """``executor``: spreads chunks of notes over processes or a cluster
        (:mod:`.distribute`); None: tagged here, batch after batch."""
        check_locations(input_dir, out, self.mapping, getattr(self.model, "source", None))
        notes, not_notes = scan_folder(input_dir)
        check_notes(notes, self.span_formats)  # before any output: one clear error, nothing half done
        groups = group_ids([n.doc_id for n in notes], self.group_pattern)  # a bad or runaway pattern: now
        out = Path(out)
        existed = out.is_dir()
        private_dir(out)  # a new folder owner-only; an existing one (a shared 1777 one) left as it is
        summary = FolderRun(notes=len(notes), has_gold=any(n.has_gold for n in notes), not_notes=not_notes)
        with _locked(out):
            self._check_record(out, existed)
            summary.leftovers_removed = _remove_leftovers(out, self.mapping)
            notes = self._named(out, notes, summary)
            for sub in ("text", "spans", "marked") if self.mark else ("text", "spans"):
                private_dir(out / sub)
            if self.review is not None:
                private_dir(_review_parts(out))
            mapped = self._open_mapping()  # a mapping that cannot be written fails now, not after the work
            write_private_json(out / RUN_RECORD, self._record())
            todo = [n for n in notes if not self.is_complete(out, n, mapped)]
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
            if self.review is not None:
                self._write_queue(out, notes)
            summary.seconds = time.perf_counter() - t0
            self._check_tagged(out, notes, todo, summary)
            self._write_release(out, input_dir, summary, todo)
        return summary

    def _named(self, out: Path, notes: list[Note], summary: FolderRun) -> list[Note]:
        """The notes with the names their outputs get: neutral ones with
        ``rename`` (the folder's mapping kept and extended), else their own
        (a warning when they look as if they hold PHI)."""
        if self.rename is None:
            from .names import phi_like_warning

            warning = phi_like_warning([n.doc_id for n in notes])
            if warning:
                summary.warnings.append(warning)
            return notes
        from dataclasses import replace

        from .names import assign_names

        names = assign_names(out, self.rename, [n.doc_id for n in notes])
        return [replace(n, out_name=names[n.doc_id]) for n in notes]

    def _check_tagged(self, out: Path, notes: Sequence[Note], done: Sequence[Note], summary: FolderRun) -> None:
        """A folder whose notes got no PHI span at all holds them readable in
        ``text/`` as they came in: over :data:`EMPTY_RUN_NOTES` notes with
        text or more, their text files are removed and the run is an error
        naming the likely cause (unless ``allow_empty``); over fewer, a
        warning. The notes an earlier run did count too (read back from
        their spans files only when this run tagged nothing, until one span
        is found): a resume of a killed run, or of one that was allowed to
        tag nothing, cannot report success over a folder of untouched notes."""
        if summary.spans:
            return
        texts = summary.texts
        fresh = set(map(id, done))
        for note in notes:
            if id(note) not in fresh:
                found, has_text = self._tagged_before(out, note)
                if found:
                    return
                texts += has_text
        if not texts:
            return
        cause = self._empty_cause(notes)
        if self.allow_empty or texts < EMPTY_RUN_NOTES:
            summary.warnings.append(f"warning: no PHI tagged in any of the {texts} note(s) with text: text/ "
                                    f"holds them as they came in; {cause}")
            return
        for note in notes:
            self.outputs(out, note.output_id)["text"].unlink(missing_ok=True)
        raise NothingTagged(f"no PHI tagged in any of the {texts} note(s) with text: {cause}. Their text/ "
                            f"files were removed (they were the notes as they came in, PHI and all). If these notes "
                            f"truly hold no PHI, run again with --allow-empty")

    def _tagged_before(self, out: Path, note: Note) -> tuple[bool, bool]:
        """(whether a note done by an earlier run has a span, whether it has text)."""
        paths = self.outputs(out, note.output_id)
        if "brat" in paths:
            found = any(line.startswith("T") for line in read_utf8(paths["brat"], CorpusError).splitlines())
        else:
            pred, _ = read_i2b2_xml(paths["xml"])
            found = pred is None or bool(pred.annotations)  # unreadable: not this check's to judge
        doc, _ = read_note(note)
        return found, doc is not None and any(c.isalnum() for c in doc.text)

    def _empty_cause(self, done: Sequence[Note]) -> str:
        """Why nothing was tagged: the members of an ensemble are asked
        again, on one batch of the notes, whether they found anything."""
        method = getattr(self.model, "method", None)
        point = getattr(method, "operating_point_", None) or getattr(method, "operating_point", None)
        if method is None:
            return ("the bundle's tagger found nothing: an empty model, or notes unlike the ones it was trained on "
                    "(another language or note format)")
        found = 0
        if hasattr(self.model, "tag"):
            found = self.model.tag([read_note(n)[0] for n in done[:self.batch_size]])[1]
        if not found:
            return ("none of the bundle's members found anything either: an empty model, or notes unlike the ones "
                    "it was trained on (another language or note format)")
        rule = f"at the operating point {point}" if point else "by its own rule"
        return (f"the bundle's members found {found} span(s) in {min(len(done), self.batch_size)} of these notes "
                f"but its ensemble "
                f"({getattr(method, 'name', 'the method')}) kept none {rule}: a threshold (--operating-point) above "
                "the scores the members give, or members whose labels never agree")

    def _write_release(self, out: Path, input_dir: str | Path, summary: FolderRun, done: Sequence[Note]) -> None:
        """The release report (``release``): written by every run, a resume
        too; the spans of the notes this run tagged are counted from the
        run, not read back (the files of earlier runs are). (The review page
        of a run's queue is written by its caller,
        ``review_apply.write_page_for_run``, which builds on this module.)"""
        manifest = getattr(self.model, "manifest", None) or {}
        files = frozenset(self.outputs(out, n.output_id)[self._read_back].name for n in done) - summary.uncounted
        counted = Counted("xml" if self._read_back == "xml" else "brat", files, dict(summary.categories))
        write_release_report(out, "deidentify", manifest, run_counts(summary, input_dir), counted)

    @property
    def _read_back(self) -> str:
        """The spans file the release report counts a note's spans from (its XML when there is one)."""
        return "xml" if "xml" in self.span_formats else "brat"

    def _write_queue(self, out: Path, notes: Sequence[Note]) -> None:
        """Gather every note's queued items into ``OUT/review/queue.jsonl``
        (notes in name order, each note's riskiest first; ``item`` is
        ``<note index>-<n>``), with the bundle and the budget in the header."""
        from .review import ReviewItem, queue_path, write_queue

        items = []
        for i, note in enumerate(notes):
            queued = read_json(_review_parts(out) / f"{note.output_id}.json", CorpusError, "review items")
            for n, q in enumerate(queued, 1):
                items.append(ReviewItem(f"{i}-{n}", note.doc_id, q["start"], q["end"], q["label"], q["risk"], q["kind"],
                                        q["current"], tuple(q["members"])))
        review = self.model.review
        budget = {"rule": str(self.review), "bundle_rule": str(review.budget)}
        if self.review.kind == "recall":
            budget["risk_threshold"] = review.threshold if self.review == review.budget \
                else review.threshold_for(self.review.value)
            budget["reached_out_of_fold"] = review.reached if self.review == review.budget else None
        manifest = getattr(self.model, "manifest", None) or {}
        write_queue(queue_path(out), items, {"bundle": manifest.get("manifest_sha256"), "budget": budget})

    def tag_notes(self, out: Path, notes: Sequence[Note], groups: Sequence[str]) -> "TaggedChunk":
        """Tag and write a few notes (one batch); what a worker of a
        distributed run does for its chunk, batch after batch."""
        docs = [read_note(n)[0] for n in notes]
        for doc, group in zip(docs, groups):
            doc.metadata["group"] = group
        if self.review is not None:
            spans, queued = self.model.spans_for_review(docs, self.review)
            for note, doc in zip(notes, docs):  # before the note's other outputs: done only when all exist
                write_private_json(self.outputs(out, note.output_id)["review"], queued[doc.id])
        else:
            spans = self.model.spans(docs)
        done = TaggedChunk(notes=len(docs))
        clinical_before = self.surrogates.clinical_values if self.surrogates is not None else 0
        for note, doc in zip(notes, docs):
            if self.mapping is not None:
                self.surrogates.mapping.pop(doc.id, None)
            counted = self._write(out, note.output_id, doc, spans[doc.id])
            if counted is None:
                done.uncounted.append(self.outputs(out, note.output_id)[self._read_back].name)
            else:
                done.categories.update(counted)
            done.tokens += len(doc.tokens)
            done.spans += len(spans[doc.id])
            done.texts += any(c.isalnum() for c in doc.text)
        if self.surrogates is not None:
            done.clinical_values = self.surrogates.clinical_values - clinical_before
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
        summary.spans += done.spans
        summary.texts += done.texts
        summary.categories.update(done.categories)
        summary.uncounted.update(done.uncounted)
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
        stored = record["options"].get("seed")
        before = dict(record["options"])
        if isinstance(stored, dict) and isinstance(stored.get("salt"), str) \
                and re.fullmatch(r"[0-9a-f]{32}", stored["salt"]):
            self._seed_salt = stored["salt"]  # the same salt: the same digest for the same seed
        elif isinstance(stored, str) and self.mode == "surrogate":  # a record of the unsalted hash (before issue 52)
            legacy = _legacy_seed(stored, drawn, s)
            before["seed"] = seed_digest(legacy, self._salt()) if legacy is not None else stored
        if self.mode == "surrogate" and not s.seed_given and isinstance(drawn, int) \
                and before.get("seed") == seed_digest(drawn, self._salt()):
            s.seed = drawn
        now = self.options()
        changed = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
        if changed:
            if "mode" in changed:
                changed = ["mode"]  # the rest follows from it
            what = ", ".join(OPTION_NAMES.get(k, k) for k in changed)
            hint = " (that run used --seed; pass the same one)" if "seed" in changed and drawn is None else ""
            raise RunMismatch(f"{printable(out)}: holds a run made with another {what}{hint}; resuming would mix "
                              f"the two: use the same options, or a new --out folder")

    def _salt(self) -> str:
        if self._seed_salt is None:
            self._seed_salt = secrets.token_hex(16)
        return self._seed_salt

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

    def _write(self, out: Path, name: str, doc: Document, spans: list[Annotation]) -> dict[str, int] | None:
        """Write a note's outputs; return its spans per category as the
        release report would read them back from its spans file
        (``released_counts``)."""
        paths = self.outputs(out, name)
        # Spans first, text last: a note counts as done only when all exist.
        if "xml" in paths:
            write_private(paths["xml"], to_i2b2_xml(doc.with_annotations(spans)).encode("utf-8"))
        if "brat" in paths:
            write_private(paths["brat"], to_brat(doc, spans).encode("utf-8"))
        text, placed = redact_spans(doc, spans, self.mode, self.surrogates)
        if "marked" in paths:
            write_private_json(paths["marked_spans"], [{"start": a.start, "end": a.end, "label": a.label}
                                                       for a in placed])
            write_private(paths["marked"], marked(text, placed).encode("utf-8"))
        write_private(paths["text"], text.encode("utf-8"))
        return released_counts(doc, spans, self._read_back)


_PLAIN_CATEGORY = re.compile(r"[A-Z][A-Z0-9_]*")
_BRAT_TYPE = re.compile(r"\S+")


def released_counts(doc: Document, spans: Sequence[Annotation], fmt: str) -> dict[str, int] | None:
    """The spans per category ``release.span_counts`` reads back from the
    note's spans file this module writes (``fmt``: "xml" or "brat"): an
    XML element's name upper-cased, a BRAT type's parent category. None
    where reading it back could give another count (a category that is no
    plain upper-case XML name, a BRAT type with white space): that file is
    read back instead."""
    counts: dict[str, int] = {}
    for a in spans:
        if fmt == "xml":
            if not (_PLAIN_CATEGORY.fullmatch(a.category) and a.type and 0 <= a.start < a.end <= len(doc.text)):
                return None
            key = a.category
        else:
            if not _BRAT_TYPE.fullmatch(a.type):
                return None
            key = I2B2_PARENT_OF.get(a.type, a.type)
        counts[key] = counts.get(key, 0) + 1
    return counts


# The seed's digest in run.json: a resume with another --seed is refused, yet the file does not give the
# seed away. Salted (a salt per output folder: no table of digests serves two folders) and slow (PBKDF2: a
# guess costs what this many SHA-256 rounds cost), so a seed drawn at random (63 bits) is out of reach; a
# small hand-picked seed (--seed 42) is not, whatever the hash: brute force then needs only the salt.
SEED_ROUNDS = 200_000


def seed_digest(seed: int, salt: str) -> dict:
    return {"salt": salt, "pbkdf2_sha256": _pbkdf2(seed, salt), "rounds": SEED_ROUNDS}


@functools.lru_cache(maxsize=8)  # a run compares and records it: computed once
def _pbkdf2(seed: int, salt: str) -> str:
    return hashlib.pbkdf2_hmac("sha256", f"ensemble-deid surrogate seed {seed}".encode(), bytes.fromhex(salt),
                               SEED_ROUNDS).hex()


def seed_matches(stored, seed) -> bool:
    """Whether ``stored``, a run.json's seed record (a salted digest, or an
    older run's unsalted hash), stands for ``seed``."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        return False
    if isinstance(stored, dict) and isinstance(stored.get("salt"), str) and re.fullmatch(r"[0-9a-f]{32}", stored["salt"]):
        return stored == seed_digest(seed, stored["salt"])
    return isinstance(stored, str) and stored == _unsalted(seed)


def _review_parts(out: Path) -> Path:
    return out / REVIEW_DIR / REVIEW_PARTS


def _unsalted(seed: int) -> str:
    return hashlib.sha256(f"ensemble-deid surrogate seed {seed}".encode()).hexdigest()


def _legacy_seed(stored: str, drawn, surrogates) -> int | None:
    """The seed an unsalted digest of an older run.json stands for, when it
    is this run's (or the recorded drawn one); None: another seed."""
    for seed in (surrogates.seed if surrogates.seed_given else None, drawn):
        if isinstance(seed, int) and stored == _unsalted(seed):
            return seed
    return None



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
    """Remove (under the lock) what a killed run left: every atomic
    writer's half-written temp file (PHI) in OUT (``run.json``,
    ``names.json``), beside the outputs and beside the mapping, and its
    scratch folders."""
    # OUT itself too: run.json and names.json are written atomically there, beside the notes' folders.
    leftovers = (temp_files(out) + temp_files(out / "text") + temp_files(out / "spans") + temp_files(out / "marked")
                 + temp_files(_review_parts(out)))
    if mapping is not None and mapping.parent.resolve() != out.resolve():
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
    from .names import output_names

    out = Path(out)
    names = output_names(out)  # --rename: the outputs' neutral names
    gold, predicted = [], {}
    for note in scan_notes(input_dir):
        if not note.has_gold:
            continue
        doc, _ = read_note(note)
        name = names.get(note.doc_id, note.doc_id)
        xml, ann = out / "spans" / f"{name}.xml", out / "spans" / f"{name}.ann"
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
