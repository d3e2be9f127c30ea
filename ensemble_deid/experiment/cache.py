"""The prediction cache: every base tagger's output, computed once, kept safely.

Layout (schema version in ``SCHEMA``):

    ROOT/v1/TAGGER/VERSION-PARAMHASH/TRAINFP/
        entry.json                      tagger, version, params, training corpus
        oof-FOLDSFP/fold-03.npz|.json   out-of-fold predictions of fold 3
        predict-TARGETFP/all.npz|.json  a model trained on all of TRAINFP
                                        predicting a document set (e.g. the test split)

A *part* is an ``.npz`` (numpy arrays only, read with ``allow_pickle=False``)
and a ``.json`` commit record written after it, holding the npz's SHA-256,
the record's own checksum and the run's metadata (seconds, peak memory,
library versions, host). A part counts only when both files exist and both
checksums match: a flipped byte or a half-written file is detected and the
part recomputed, never used. Writes are atomic (temp file + ``os.replace``),
files are owner-only, and a per-part lock stops two runs computing (or
writing) the same part at once.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..corpus.bio import OUTSIDE, decode
from ..corpus.document import Document
from ..errors import EnsembleDeidError
from ..taggers.prediction import DocumentPrediction

SCHEMA = "v1"
DIR_MODE = 0o700
FILE_MODE = 0o600


class CacheError(EnsembleDeidError):
    pass


class CorruptPart(CacheError):
    pass


@dataclass(frozen=True)
class EntryKey:
    tagger: str
    version: str
    param_hash: str
    train_fingerprint: str

    @property
    def relpath(self) -> Path:
        return Path(SCHEMA, self.tagger, f"{self.version}-{self.param_hash}", self.train_fingerprint)


@dataclass(frozen=True)
class PartKey:
    """``kind`` is "oof" (name "fold-NN", scope = fold fingerprint) or
    "predict" (name "all", scope = fingerprint of the predicted documents)."""

    entry: EntryKey
    kind: str
    scope: str
    name: str

    @classmethod
    def fold(cls, entry: EntryKey, folds_fingerprint: str, fold: int) -> "PartKey":
        return cls(entry, "oof", folds_fingerprint, f"fold-{fold:02d}")

    @classmethod
    def predict(cls, entry: EntryKey, target_fingerprint: str) -> "PartKey":
        return cls(entry, "predict", target_fingerprint, "all")

    @property
    def relpath(self) -> Path:
        return self.entry.relpath / f"{self.kind}-{self.scope}" / self.name

    def __str__(self) -> str:
        e = self.entry
        return f"{e.tagger} {e.version}-{e.param_hash} train={e.train_fingerprint} {self.kind}-{self.scope}/{self.name}"


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


def _record_checksum(record: Mapping[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return _sha256(json.dumps(body, sort_keys=True).encode())


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{id(data)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class PredictionCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"PredictionCache({str(self.root)!r})"

    def _mkdir(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
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
        record = {
            "schema": SCHEMA, "tagger": key.tagger, "version": key.version,
            "param_hash": key.param_hash, "train_fingerprint": key.train_fingerprint, **description,
        }
        record["record_sha256"] = _record_checksum(record)
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
        """"missing", "valid" or "corrupt: why"."""
        base = self.root / part.relpath
        if not base.with_suffix(".json").exists():
            return "missing"
        try:
            self.read_part(part)
        except CorruptPart as exc:
            return f"corrupt: {exc}"
        return "valid"

    def read_part(self, part: PartKey) -> tuple[dict[str, DocumentPrediction], dict]:
        base = self.root / part.relpath
        return self.read_part_files(base)

    def read_part_files(self, base: Path) -> tuple[dict[str, DocumentPrediction], dict]:
        record = self._read_json(base.with_suffix(".json"))
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
        bases = {p.with_suffix("") for p in entry_dir.glob("*/*.json")} | {p.with_suffix("") for p in entry_dir.glob("*/*.npz")}
        return sorted(bases)

    def verify(self) -> list[tuple[Path, str]]:
        """(path, problem) for every corrupt or incomplete part or entry."""
        problems: list[tuple[Path, str]] = []
        top = self.root / SCHEMA
        if not top.is_dir():
            return problems
        for entry_dir in sorted(p for p in top.glob("*/*/*") if p.is_dir()):
            if self._read_json(entry_dir / "entry.json", strict=False) is None:
                problems.append((entry_dir / "entry.json", "missing or corrupt entry manifest"))
            for base in self.part_files(entry_dir):
                if not base.with_suffix(".json").exists():
                    problems.append((base.with_suffix(".npz"), "incomplete part (no commit record)"))
                    continue
                try:
                    self.read_part_files(base)
                except CorruptPart as exc:
                    problems.append((base.with_suffix(".npz"), str(exc)))
        return problems

    def remove_entry(self, entry_dir: Path) -> None:
        entry_dir = Path(entry_dir).resolve()
        if self.root.resolve() not in entry_dir.parents:
            raise CacheError(f"{entry_dir} is not inside the cache {self.root}")
        shutil.rmtree(entry_dir)
