"""The prediction cache: every base tagger's output, computed once, kept safely.

Layout (schema version in ``SCHEMA``):

    ROOT/v1/TAGGER/VERSION-PARAMHASH/TRAINFP/
        entry.json                      tagger, version, params, training corpus
        oof-FOLDSFP/fold-03.npz|.json   out-of-fold predictions of fold 3
        predict-TARGETFP/all.npz|.json  a model trained on all of TRAINFP
                                        predicting a document set (e.g. the test split)
        model/                          that model, kept for ``fit`` (``experiment.kept``)

A *part* is an ``.npz`` (numpy arrays only, read with ``allow_pickle=False``)
and a ``.json`` commit record written after it, holding the npz's SHA-256,
the record's own checksum and the run's metadata (seconds, peak memory,
library versions, host). A part counts only when both files exist and both
checksums match: a flipped byte or a half-written file is detected and the
part recomputed, never used. Writes are atomic (temp file + ``os.replace``),
files are owner-only, and a per-part lock stops two runs computing (or
writing) the same part at once.

Beside this workspace cache, the cache reads **published folders**
(``cache publish``): read-only, text-free copies of complete entries of a
public corpus, with a checksummed manifest (``published.json``):

    PUBLISHED/published.json            corpus, licence, fingerprints, entries, sha256 of every file
    PUBLISHED/documents/FP.npz          document ids and token offsets of each document set
    PUBLISHED/v1/...                    the entries, laid out as above (no lock files)

A part missing from the workspace is served from a published folder when the
manifest lists it under the same key and every checksum matches; a tampered
or stale published entry is reported once and ignored, never used. Published
folders are found directly under the cache root (``ROOT/NAME/published.json``;
the workspace cache itself lives in ``ROOT/v1``) and in the folders named by
``$ENSEMBLE_DEID_PUBLISHED``.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from ..corpus.bio import OUTSIDE, decode
from ..corpus.document import Document
from ..files import private_dir, write_private
from ..taggers.prediction import DocumentPrediction
from .kept import KeptModelError, check, kept_models
from .keys import SCHEMA, CacheError, EntryKey, PartKey, _record_checksum

DIR_MODE = 0o700
FILE_MODE = 0o600
PUBLISHED_MANIFEST = "published.json"
PUBLISHED_FORMAT = "ensemble-deid published predictions"
PUBLISHED_ENV = "ENSEMBLE_DEID_PUBLISHED"
SCRATCH = ".scratch"
STALE_TMP_SECONDS = 3600  # no single write takes an hour: older temp files are left-overs

log = logging.getLogger(__name__)


class CorruptPart(CacheError):
    pass


# --- encoding predictions as arrays -------------------------------------------

def encode_predictions(predictions: Sequence[DocumentPrediction], documents: Sequence[Document]) -> dict[str, np.ndarray]:
    """Compact arrays: tag ids (uint16) into a label table, per-document
    offsets, optional float32 confidences, and the decoded spans."""
    labels = sorted({t for p in predictions for t in p.tags} | {OUTSIDE})
    index = {t: i for i, t in enumerate(labels)}
    span_labels: dict[str, int] = {}
    tag_offsets = np.zeros(len(predictions) + 1, dtype=np.int64)
    span_offsets = np.zeros(len(predictions) + 1, dtype=np.int64)
    tags, confs, spans = [], [], []
    has_conf = all(p.confidences is not None for p in predictions) and len(predictions) > 0
    for i, (pred, doc) in enumerate(zip(predictions, documents)):
        tags.append(np.fromiter((index[t] for t in pred.tags), dtype=np.uint16, count=len(pred.tags)))
        if has_conf:
            confs.append(np.asarray(pred.confidences, dtype=np.float32))
        doc_spans = decode(doc.tokens, pred.tags)
        for s in doc_spans:
            spans.append((s.start, s.end, span_labels.setdefault(s.label, len(span_labels))))
        tag_offsets[i + 1] = tag_offsets[i] + len(pred.tags)
        span_offsets[i + 1] = span_offsets[i] + len(doc_spans)
    arrays = {
        "doc_ids": np.array([p.doc_id for p in predictions], dtype=np.str_),
        "labels": np.array(labels, dtype=np.str_),
        "tags": np.concatenate(tags) if tags else np.zeros(0, np.uint16),
        "tag_offsets": tag_offsets,
        "span_labels": np.array(list(span_labels), dtype=np.str_) if span_labels else np.zeros(0, dtype="<U1"),
        "spans": np.array(spans, dtype=np.int32).reshape(-1, 3),
        "span_offsets": span_offsets,
    }
    if has_conf:
        arrays["confidences"] = np.concatenate(confs)
    return arrays


def decode_predictions(arrays: Mapping[str, np.ndarray]) -> dict[str, DocumentPrediction]:
    labels = arrays["labels"].tolist()
    offsets = arrays["tag_offsets"]
    tags = np.asarray(labels, dtype=object)[arrays["tags"]] if len(labels) else np.zeros(0, object)
    confs = arrays.get("confidences")
    out = {}
    for i, doc_id in enumerate(arrays["doc_ids"].tolist()):
        a, b = int(offsets[i]), int(offsets[i + 1])
        out[doc_id] = DocumentPrediction(doc_id, tuple(tags[a:b].tolist()), None if confs is None else confs[a:b])
    return out


# --- the cache ---------------------------------------------------------------

def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry_record(key: EntryKey, description: Mapping[str, Any]) -> dict:
    """The checksummed content of an entry's ``entry.json``."""
    record = {
        "schema": SCHEMA, "tagger": key.tagger, "version": key.version,
        "param_hash": key.param_hash, "train_fingerprint": key.train_fingerprint, **description,
    }
    record["record_sha256"] = _record_checksum(record)
    return record


class CacheWriteError(CacheError):
    """A file could not be written (disk full, no permission, missing folder)."""


def _atomic_write(path: Path, data: bytes) -> None:
    # fsync: a part's record must never name bytes that a crash could lose.
    write_private(path, data, fsync=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process, or not a pid we can ask about: assume alive
    return True


def _writer_pid(path: Path) -> int | None:
    """The writing process of a cache temp file (``.NAME.PID.ID.tmp``) or scratch folder (``HOST-PID``)."""
    if path.suffix == ".tmp":
        parts = path.name.split(".")
        if len(parts) >= 5 and parts[-3].isdigit() and parts[-2].isdigit():
            return int(parts[-3])
        return None
    host, _, pid = path.name.rpartition("-")
    return int(pid) if pid.isdigit() and host == socket.gethostname() else None


def is_leftover(path: Path) -> bool:
    """A temp file or scratch folder whose writer is gone: its process no
    longer runs on this machine, or nothing touched it for an hour (a temp
    file) or a day (another machine's scratch folder)."""
    try:
        age = time.time() - path.lstat().st_mtime
    except OSError:
        return False
    pid = _writer_pid(path)
    if path.suffix == ".tmp":
        # A write takes seconds, never an hour. The pid may be another machine's
        # (a dask worker on a shared cache): a minute's grace before believing it dead.
        return age > STALE_TMP_SECONDS or (pid is not None and age > 60 and not _pid_alive(pid))
    if pid is not None:  # a scratch folder of this machine
        return not _pid_alive(pid)
    return age > 24 * STALE_TMP_SECONDS  # another machine's: a part may compute for hours, not for a day


def _report_once(message: str) -> None:
    """Warn about a published entry once per process, however often it is looked up."""
    if message not in _REPORTED:
        _REPORTED.add(message)
        log.warning("warning: %s", message)


_REPORTED: set[str] = set()
_scratch_lock = threading.Lock()
_scratch_users = 0
_saved_tempdir: str | None = None


# --- published folders ------------------------------------------------------------

class PublishedFolder:
    """A read-only published copy of cache entries (see ``cache publish``).

    Every file is checked against the manifest's SHA-256 before use; the
    manifest carries a checksum over itself. Nothing here is ever written by
    the cache."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.manifest: dict | None = None
        self.problem: str | None = None
        try:
            self.manifest = self._load()
        except CacheError as exc:
            self.problem = str(exc)

    def __repr__(self) -> str:
        return f"PublishedFolder({str(self.path)!r})"

    @staticmethod
    def is_published(path: Path) -> bool:
        try:
            return stat.S_ISREG((Path(path) / PUBLISHED_MANIFEST).lstat().st_mode)
        except OSError:
            return False

    def _load(self) -> dict:
        manifest_path = self.path / PUBLISHED_MANIFEST
        try:
            if not stat.S_ISREG(manifest_path.lstat().st_mode):  # a link or a FIFO is never followed or read
                raise CacheError(f"{manifest_path}: not a plain file")
            manifest = json.loads(manifest_path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CacheError(f"{manifest_path}: unreadable manifest ({type(exc).__name__})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != PUBLISHED_FORMAT:
            raise CacheError(f"{manifest_path}: not a published-predictions manifest")
        if manifest.get("manifest_sha256") != _record_checksum(manifest, "manifest_sha256"):
            raise CacheError(f"{manifest_path}: manifest checksum mismatch (edited or corrupted)")
        if manifest.get("schema") != SCHEMA:
            raise CacheError(f"{manifest_path}: schema {manifest.get('schema')!r} is not {SCHEMA}")
        if not _well_formed(manifest):
            raise CacheError(f"{manifest_path}: malformed manifest (a field is missing or of the wrong type)")
        return manifest

    @property
    def usable(self) -> bool:
        return self.manifest is not None

    @property
    def files(self) -> dict[str, dict]:
        return self.manifest["files"] if self.manifest else {}

    def file_problem(self, rel: str) -> str | None:
        """None if the file is listed and its bytes match the manifest, else why not."""
        listed = self.files.get(rel)
        if not isinstance(listed, dict):
            return "not listed in the manifest"
        path = self.path / rel
        try:
            if not stat.S_ISREG(path.lstat().st_mode):  # a link or a FIFO is never followed or read
                return "not a plain file"
            data = path.read_bytes()
        except OSError:
            return "missing or unreadable"
        if _sha256(data) != listed.get("sha256"):
            return "checksum differs from the manifest (edited or corrupted)"
        return None

    def has_part(self, part: PartKey) -> bool:
        rel = part.relpath.as_posix()
        return f"{rel}.npz" in self.files and f"{rel}.json" in self.files

    def entries(self) -> list[dict]:
        return [e for e in (self.manifest or {}).get("entries", []) if isinstance(e, dict)]

    def verify(self) -> list[tuple[Path, str]]:
        """(path, problem) for the manifest, every listed file, and unlisted files."""
        if self.problem:
            return [(self.path / PUBLISHED_MANIFEST, self.problem)]
        problems = []
        bad = set()
        for rel in sorted(self.files):
            why = self.file_problem(rel)
            if why:
                problems.append((self.path / rel, why))
                bad.add(rel)
        for rel in sorted(self.files):
            npz = f"{rel[:-5]}.npz"
            if rel.endswith(".json") and npz in self.files and not {rel, npz} & bad:
                try:  # checksums fine: does the part decode too?
                    PredictionCache.read_part_files(self.path / rel[:-5])
                except CorruptPart as exc:
                    problems.append((self.path / npz, str(exc)))
        listed = set(self.files) | {PUBLISHED_MANIFEST}
        for f in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = f.relative_to(self.path).as_posix()
            if rel not in listed and rel != "README.md":
                problems.append((f, "not listed in the manifest (left over, or added by hand)"))
        return problems


def _well_formed(manifest: Mapping[str, Any]) -> bool:
    """The manifest fields the cache relies on exist with the right types."""
    files, entries = manifest.get("files"), manifest.get("entries")
    if not isinstance(files, dict) or not isinstance(entries, list) or not isinstance(manifest.get("corpus"), str):
        return False
    if not isinstance(manifest.get("corpus_fingerprints"), dict):
        return False
    if not all(isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("sha256"), str)
               and not k.startswith("/") and ".." not in k.split("/") for k, v in files.items()):
        return False  # and every listed file lies inside the folder
    keys = ("tagger", "version", "param_hash", "train_fingerprint", "path")
    for entry in entries:
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in keys):
            return False
        parts = entry.get("parts")
        if not isinstance(parts, list) or not all(isinstance(p, dict) and isinstance(p.get("path"), str) for p in parts):
            return False
    return True


def published_folders(root: Path) -> list[Path]:
    """Published folders under the cache root and in ``$ENSEMBLE_DEID_PUBLISHED``
    (each a published folder or a folder of them)."""
    candidates = [Path(root)] + [Path(p) for p in os.environ.get(PUBLISHED_ENV, "").split(os.pathsep) if p]
    found: list[Path] = []
    for base in candidates:
        try:
            inner = [base] if PublishedFolder.is_published(base) else sorted(
                p for p in base.iterdir()  # hidden: a publication being staged, never read
                if p.is_dir() and not p.name.startswith(".") and PublishedFolder.is_published(p))
        except OSError:
            continue
        for p in inner:
            if p.resolve() not in {f.resolve() for f in found}:
                found.append(p)
    return found


class Problem(NamedTuple):
    """Something ``verify`` found: ``kind`` is corrupt, incomplete, entry (a
    damaged entry manifest), model (a damaged kept model), empty, leftover or published."""

    path: Path
    why: str
    kind: str = "corrupt"


class PredictionCache:
    """The workspace cache at ``root`` (read and written) and the published
    folders (read only): ``published`` lists them, or None to find them
    under the root and in ``$ENSEMBLE_DEID_PUBLISHED``."""

    def __init__(self, root: str | Path, published: Sequence[str | Path] | None = None):
        self.root = Path(root)
        self._published_paths = None if published is None else [Path(p) for p in published]
        self._published: list[PublishedFolder] | None = None
        self._checked: dict[Path, str | None] = {}

    def __repr__(self) -> str:
        return f"PredictionCache({str(self.root)!r})"

    # --- the published sources --------------------------------------------------------
    @property
    def published(self) -> list[PublishedFolder]:
        if self._published is None:
            from ..corpus.tokenize import TOKENIZER_VERSION

            paths = self._published_paths if self._published_paths is not None else published_folders(self.root)
            self._published = [PublishedFolder(p) for p in paths]
            for folder in self._published:
                if folder.problem:
                    _report_once(f"published folder {folder.path} ignored: {folder.problem}")
                elif folder.manifest.get("tokenizer_version") != TOKENIZER_VERSION:
                    folder.problem = (f"stale: made with tokenizer {folder.manifest.get('tokenizer_version')!r}, "
                                      f"this installation's is {TOKENIZER_VERSION!r}")
                    folder.manifest = None
                    _report_once(f"published folder {folder.path} ignored: {folder.problem}")
        return self._published

    def _published_base(self, part: PartKey) -> Path | None:
        """The base path of a published copy of the part whose checksums all match."""
        rel = part.relpath.as_posix()
        for folder in self.published:
            if not folder.usable or not folder.has_part(part):
                continue
            base = folder.path / part.relpath
            if base not in self._checked:
                why = folder.file_problem(f"{rel}.json") or folder.file_problem(f"{rel}.npz")
                if why is None:
                    try:
                        self.read_part_files(base)
                    except CorruptPart as exc:
                        why = str(exc)
                self._checked[base] = why
                if why:
                    _report_once(f"published part {base} ignored: {why}")
            if self._checked[base] is None:
                return base
        self._report_stale(part)
        return None

    def _report_stale(self, part: PartKey) -> None:
        """Name published entries this run cannot use because another version of the tagger made them."""
        e = part.entry
        for folder in self.published:
            for entry in folder.entries():
                if (entry.get("tagger") == e.tagger and entry.get("train_fingerprint") == e.train_fingerprint
                        and entry.get("version") != e.version):
                    _report_once(f"published entry {e.tagger} {entry.get('version')}-{entry.get('param_hash')} in "
                                 f"{folder.path} is stale: made by version {entry.get('version')}, this run uses "
                                 f"version {e.version}; ignored")

    def locate(self, part: PartKey) -> Path | None:
        """Base path of a valid copy of the part: the workspace's, else a published one."""
        base = self.root / part.relpath
        if base.with_suffix(".json").exists():
            try:
                self._read_workspace_part(part)
                return base
            except CorruptPart:
                pass
        return self._published_base(part)

    @classmethod
    def entry_problem(cls, entry_dir: Path) -> str | None:
        """Why an entry's ``entry.json`` cannot vouch for its parts (missing,
        unreadable, checksum mismatch, or another entry's record), else None."""
        record = cls._read_json(entry_dir / "entry.json", strict=False)
        if record is None:
            return "missing or corrupt entry manifest (entry.json): its parts are not used"
        tagger, version_hash, train = entry_dir.parts[-3:]
        if (record.get("tagger"), f"{record.get('version')}-{record.get('param_hash')}", record.get("train_fingerprint")) \
                != (tagger, version_hash, train):
            return "entry manifest (entry.json) describes another entry: its parts are not used"
        return None

    def _read_workspace_part(self, part: PartKey) -> tuple[dict[str, DocumentPrediction], dict]:
        """The workspace copy of a part; CorruptPart when it or its entry's manifest is damaged."""
        why = self.entry_problem(self.root / part.entry.relpath)
        if why is not None:
            raise CorruptPart(f"{self.root / part.entry.relpath}: {why}")
        return self.read_part_files(self.root / part.relpath)

    # --- writing ---------------------------------------------------------------------
    def _mkdir(self, path: Path) -> None:
        private_dir(path)
        # mkdir's mode is masked by umask; make sure what we own is owner-only.
        p = path
        while p != self.root and p != p.parent:
            if p.stat().st_uid == os.getuid():
                os.chmod(p, DIR_MODE)
            p = p.parent

    def ensure_entry(self, key: EntryKey, description: Mapping[str, Any]) -> Path:
        """Create the entry folder and its ``entry.json`` (same content for the same key)."""
        path = self.root / key.relpath
        self._mkdir(path)
        manifest = path / "entry.json"
        record = entry_record(key, description)
        if not manifest.exists() or self._read_json(manifest, strict=False) != record:
            _atomic_write(manifest, json.dumps(record, indent=2, sort_keys=True).encode())
        return path

    def lock(self, part: PartKey, timeout: float = -1):
        """An inter-process lock for one part (released if the holder dies)."""
        from filelock import FileLock

        path = self.root / part.relpath
        self._mkdir(path.parent)
        return FileLock(str(path) + ".lock", timeout=timeout, mode=FILE_MODE)

    def write_part(
        self, part: PartKey, predictions: Sequence[DocumentPrediction], documents: Sequence[Document],
        metadata: Mapping[str, Any],
    ) -> None:
        base = self.root / part.relpath
        self._mkdir(base.parent)
        buf = io.BytesIO()
        np.savez_compressed(buf, **encode_predictions(predictions, documents))
        data = buf.getvalue()
        record = {
            "schema": SCHEMA, "part": part.name, "kind": part.kind, "scope": part.scope,
            "tagger": part.entry.tagger, "version": part.entry.version, "param_hash": part.entry.param_hash,
            "train_fingerprint": part.entry.train_fingerprint,
            "documents": len(predictions), "tokens": int(sum(len(p.tags) for p in predictions)),
            "npz_sha256": _sha256(data), "npz_bytes": len(data), "host": socket.gethostname(),
            **metadata,
        }
        record["record_sha256"] = _record_checksum(record)
        # npz first, record last: the record is the commit point.
        _atomic_write(base.with_suffix(".npz"), data)
        _atomic_write(base.with_suffix(".json"), json.dumps(record, indent=2, sort_keys=True).encode())

    @staticmethod
    def _read_json(path: Path, strict: bool = True) -> dict | None:
        try:
            record = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            if strict:
                raise CorruptPart(f"{path}: unreadable record ({type(exc).__name__})") from exc
            return None
        if not isinstance(record, dict) or record.get("record_sha256") != _record_checksum(record):
            if strict:
                raise CorruptPart(f"{path}: record checksum mismatch")
            return None
        return record

    def part_status(self, part: PartKey) -> str:
        """"valid" (in the workspace or a published folder), "missing" or
        "corrupt: why" (the workspace copy is bad and no published copy serves)."""
        base = self.root / part.relpath
        status = "missing"
        if base.with_suffix(".json").exists():
            try:
                self._read_workspace_part(part)
                return "valid"
            except CorruptPart as exc:
                status = f"corrupt: {exc}"
        return "valid" if self._published_base(part) is not None else status

    def read_part(self, part: PartKey) -> tuple[dict[str, DocumentPrediction], dict]:
        """The workspace copy, else a valid published one; CorruptPart when neither serves."""
        try:
            return self._read_workspace_part(part)
        except CorruptPart:
            published = self._published_base(part)
            if published is None:
                raise
            return self.read_part_files(published)

    @staticmethod
    def read_part_files(base: Path) -> tuple[dict[str, DocumentPrediction], dict]:
        record = PredictionCache._read_json(base.with_suffix(".json"))
        if record.get("schema") != SCHEMA:
            raise CorruptPart(f"{base}.json: schema {record.get('schema')!r} is not {SCHEMA}")
        try:
            data = base.with_suffix(".npz").read_bytes()
        except OSError as exc:
            raise CorruptPart(f"{base}.npz: missing or unreadable") from exc
        if _sha256(data) != record["npz_sha256"]:
            raise CorruptPart(f"{base}.npz: checksum mismatch (file corrupted)")
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
            predictions = decode_predictions(arrays)
        except Exception as exc:  # a well-checksummed but malformed file
            raise CorruptPart(f"{base}.npz: malformed ({type(exc).__name__})") from exc
        return predictions, record

    def discard_part(self, part: PartKey) -> None:
        base = self.root / part.relpath
        for suffix in (".json", ".npz"):
            base.with_suffix(suffix).unlink(missing_ok=True)

    # --- inventory -------------------------------------------------------------
    def entries(self) -> Iterator[tuple[Path, dict | None]]:
        """Every entry folder with its manifest (None if unreadable)."""
        top = self.root / SCHEMA
        if not top.is_dir():
            return
        for manifest in sorted(top.glob("*/*/*/entry.json")):
            yield manifest.parent, self._read_json(manifest, strict=False)

    def part_files(self, entry_dir: Path) -> list[Path]:
        """Base paths (no suffix) of every part of an entry, complete or not."""
        files = [p for pattern in ("oof-*/*.json", "oof-*/*.npz", "predict-*/*.json", "predict-*/*.npz")
                 for p in entry_dir.glob(pattern)]  # not the kept model (experiment.kept)
        return sorted({p.with_suffix("") for p in files})

    def part_records(self, entry_dir: Path) -> list[dict]:
        """The commit records of an entry's parts whose checksum holds (for
        inventories: seconds, tokens; the npz is not read)."""
        records = (self._read_json(base.with_suffix(".json"), strict=False) for base in self.part_files(entry_dir))
        return [r for r in records if r is not None]

    def verify(self) -> list[Problem]:
        """Every corrupt or incomplete part, entry without manifest or parts,
        left-over temp file or scratch folder, and problem of a published folder."""
        problems: list[Problem] = []
        top = self.root / SCHEMA
        for entry_dir in sorted(p for p in top.glob("*/*/*") if p.is_dir()) if top.is_dir() else []:
            bases = self.part_files(entry_dir)
            why = self.entry_problem(entry_dir)
            if why is not None and (bases or not self._busy(entry_dir)):
                # the whole entry goes: parts its manifest cannot vouch for are never used
                problems.append(Problem(entry_dir, why, "entry"))
                continue
            if not bases and not self._busy(entry_dir):
                problems.append(Problem(entry_dir, "empty entry (no part: a failed or interrupted run)", "empty"))
            for base in bases:
                if not base.with_suffix(".json").exists():
                    problems.append(Problem(base.with_suffix(".npz"), "incomplete part (no commit record)", "incomplete"))
                    continue
                try:
                    self.read_part_files(base)
                except CorruptPart as exc:
                    problems.append(Problem(base.with_suffix(".npz"), str(exc)))
        for folder in kept_models(self.root):
            try:
                check(folder)
            except KeptModelError as exc:
                problems.append(Problem(folder, f"{exc}; fit trains the member instead", "model"))
        for tmp in sorted(top.rglob(".*.tmp")) if top.is_dir() else []:
            if is_leftover(tmp):
                problems.append(Problem(tmp, "half-written temporary file (its writer was interrupted)", "leftover"))
        scratch = self.root / SCRATCH
        for folder in sorted(scratch.iterdir()) if scratch.is_dir() else []:
            if is_leftover(folder):
                problems.append(Problem(folder, "scratch folder of an interrupted run", "leftover"))
        for folder in self.published:
            problems += [Problem(path, why, "published") for path, why in folder.verify()]
        return problems

    def remove_problem(self, problem: Problem) -> str:
        """Delete what a workspace problem names; say what was removed.
        Published folders are read-only: their problems are left for the publisher."""
        path = problem.path
        if problem.kind == "published":
            return f"kept {path} (a published folder is never changed here: republish or restore it from git)"
        if problem.kind == "model":
            self._remove_inside(path)
            return f"removed damaged kept model {path} (fit trains the member instead)"
        if problem.kind == "entry":
            self._remove_inside(path)
            return f"removed damaged entry {path} with all its parts (recomputed by the next cv run)"
        if problem.kind in ("corrupt", "incomplete") and path.name != "entry.json":
            removed = [p for p in (path.with_suffix(".json"), path.with_suffix(".npz")) if p.exists()]
            for p in removed:
                p.unlink(missing_ok=True)
            return f"removed {', '.join(p.name for p in removed)} in {path.parent} (recomputed by the next cv run)"
        if path.is_dir():
            self._remove_inside(path)
            return f"removed {'empty entry' if problem.kind == 'empty' else 'folder'} {path}"
        self._inside(path).unlink(missing_ok=True)
        return f"removed {path}"

    def _inside(self, path: Path) -> Path:
        resolved = Path(path).resolve()
        if self.root.resolve() not in resolved.parents:
            raise CacheError(f"{path} is not inside the cache {self.root}")
        return resolved

    def _remove_inside(self, folder: Path) -> None:
        shutil.rmtree(self._inside(folder), ignore_errors=True)

    @staticmethod
    def _busy(entry_dir: Path) -> bool:
        """Whether a run holds a part lock of this entry right now (its first part is being computed)."""
        from filelock import FileLock, Timeout

        for lock_path in entry_dir.glob("*/*.lock"):
            lock = FileLock(str(lock_path), timeout=0)
            try:
                lock.acquire()
            except Timeout:
                return True
            except OSError:
                continue
            lock.release()
        return False

    def discard_if_empty(self, key: EntryKey) -> bool:
        """Remove an entry a failed run created but never wrote a part to."""
        entry_dir = self.root / key.relpath
        if entry_dir.is_dir() and not self.part_files(entry_dir) and not self._busy(entry_dir):
            self._remove_inside(entry_dir)
            return True
        return False

    def remove_entry(self, entry_dir: Path) -> None:
        shutil.rmtree(self._inside(entry_dir))

    # --- scratch space for taggers ---------------------------------------------------------
    @contextlib.contextmanager
    def scratch(self) -> Iterator[Path]:
        """Point ``tempfile`` at ``ROOT/.scratch/HOST-PID`` while a part is
        computed: what a tagger's tools write there (crfsuite's model file, ...)
        goes when the part is done, and what a killed worker leaves is swept by
        the next run or by ``cache verify --remove`` instead of staying in $TMPDIR."""
        global _scratch_users, _saved_tempdir
        own = self.root / SCRATCH / f"{socket.gethostname()}-{os.getpid()}"
        with _scratch_lock:
            if _scratch_users == 0:
                self._sweep_scratch()
                self._mkdir(own)
                _saved_tempdir = tempfile.tempdir
                tempfile.tempdir = str(own)
            _scratch_users += 1
        try:
            yield own
        finally:
            with _scratch_lock:
                _scratch_users -= 1
                if _scratch_users == 0:
                    tempfile.tempdir = _saved_tempdir
                    shutil.rmtree(own, ignore_errors=True)

    def _sweep_scratch(self) -> None:
        scratch = self.root / SCRATCH
        for folder in list(scratch.iterdir()) if scratch.is_dir() else []:
            if is_leftover(folder):
                shutil.rmtree(folder, ignore_errors=True)
