"""Publishing the cache entries of a public corpus (``ensemble-deid cache publish``).

A published folder is what a clone of the repository needs to rerun
ensembles, pruning, comparisons and studies without training a model: the
complete entries (every out-of-fold part and the test prediction) of chosen
taggers on one corpus, copied from the workspace cache, plus the document
ids and token offsets of each document set and a manifest:

    OUT/published.json           corpus, licence, citation, fingerprints, folds,
                                 entries (tagger, version, parameters, parts with
                                 their recorded times and library versions),
                                 SHA-256 of every file, and one over itself
    OUT/documents/FP.npz         doc_ids, token_starts, token_ends, token_offsets
    OUT/v1/TAGGER/...            the parts, byte for byte (confidences float32),
                                 commit records without the host name

It holds no note text: ids, offsets, tags, confidences and numbers only.
Only a corpus its owner states is public may be published; corpora known to
be under a data use agreement are refused whatever is stated. The folder is
built beside OUT and swapped in at the end, so a failure (disk full, an
interrupted run) leaves the previous publication as it was.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .. import __version__
from ..corpus.tokenize import TOKENIZER_VERSION
from ..corpus.workspace import Corpus
from ..files import private_dir
from .cache import (
    PUBLISHED_FORMAT, PUBLISHED_MANIFEST, SCHEMA, CacheError, CacheWriteError, PredictionCache, PublishedFolder,
    _atomic_write, _record_checksum, _sha256, entry_record,
)
from .cv import CrossValidation, TaggerSpec

# Corpora distributed under a data use agreement: never redistributed, whatever the user states.
LICENSED_CORPORA = re.compile(r"i2b2|n2c2|n-?grid|physionet|mimic", re.IGNORECASE)
_PUBLISHABLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


class PublishError(CacheError):
    pass


@dataclass
class PublishResult:
    out: Path
    published: list[str] = field(default_factory=list)  # labels written now
    kept: list[str] = field(default_factory=list)  # labels kept from the previous publication
    skipped: list[str] = field(default_factory=list)  # "label: why"
    bytes_by_label: dict[str, int] = field(default_factory=dict)
    total_bytes: int = 0


def check_publishable(corpus: Corpus, licence: str) -> None:
    """Refuse what must never be published, naming why."""
    if not licence.strip():
        raise PublishError(f"corpus {corpus.name!r}: state its licence (--licence, e.g. 'CC BY 4.0')")
    if not _PUBLISHABLE_NAME.fullmatch(corpus.name) or re.fullmatch(r"v\d+.*", corpus.name):
        raise PublishError(f"corpus name {corpus.name!r} cannot name a published folder "
                           "(letters, digits, '.', '_', '-'; not v<digit>..., which is the workspace cache's layout)")
    places = [corpus.name]
    if corpus.spec is not None:
        for paths in corpus.spec.splits.values():
            places += paths if isinstance(paths, list) else [paths]
    for place in places:
        if LICENSED_CORPORA.search(str(place)):
            raise PublishError(f"corpus {corpus.name!r} looks like a corpus under a data use agreement "
                               f"(its name or folder matches {LICENSED_CORPORA.pattern!r}): such corpora are never published")


def _document_arrays(docs) -> dict[str, np.ndarray]:
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    for i, doc in enumerate(docs):
        offsets[i + 1] = offsets[i] + len(doc.tokens)
    cat = (lambda arrays: np.concatenate(arrays).astype(np.int32) if arrays else np.zeros(0, np.int32))
    return {
        "doc_ids": np.array([d.id for d in docs], dtype=np.str_),
        "token_starts": cat([d.tokens.starts for d in docs]),
        "token_ends": cat([d.tokens.ends for d in docs]),
        "token_offsets": offsets,
    }


def _specs_of_corpus(cache: PredictionCache, train_fingerprint: str, result: PublishResult) -> list[TaggerSpec]:
    """The base taggers the workspace cache holds entries for on this training set."""
    specs, seen = [], set()
    for _, manifest in cache.entries():
        if not manifest or manifest.get("train_fingerprint") != train_fingerprint:
            continue
        label = str(manifest.get("tagger_label", manifest.get("tagger")))
        if manifest.get("tagger", "").startswith("ensemble.") or label in seen:
            continue
        seen.add(label)
        try:
            specs.append(TaggerSpec.parse(label))
        except ValueError as exc:
            result.skipped.append(f"{label}: {exc}")
    return specs


def publish(
    cache: PredictionCache, corpus: Corpus, out: str | Path, *, licence: str, citation: str = "",
    specs: Sequence[TaggerSpec] | None = None, k: int = 10, seed: int = 0,
    echo: Callable[[str], None] = lambda _: None,
) -> PublishResult:
    """Write (or add to) the published folder ``out`` for ``corpus``; see the module docstring."""
    check_publishable(corpus, licence)
    out = Path(out)
    if not out.parent.is_dir():
        raise PublishError(f"{out.parent}: no such folder (create it first)")
    if out.resolve() == cache.root.resolve() or (cache.root / SCHEMA).resolve() in [out.resolve(), *out.resolve().parents]:
        raise PublishError(f"{out}: a published folder must not be the workspace cache or lie inside it")
    engine = CrossValidation(corpus.train, {"test": corpus.test}, cache, k=k, seed=seed)
    fingerprints = {"train": engine.train_fingerprint, "test": engine.target_fingerprints["test"]}
    result = PublishResult(out)

    previous = PublishedFolder(out) if PublishedFolder.is_published(out) else None
    if previous is not None:
        if previous.problem:
            raise PublishError(f"{out}: the existing publication is damaged ({previous.problem}); "
                               "restore it from git or publish into a new folder")
        if previous.manifest.get("corpus_fingerprints") != fingerprints:
            raise PublishError(f"{out}: the existing publication was made on other documents (corpus fingerprints "
                               "differ); publish into a new folder")
        bad = previous.verify()
        if bad:
            raise PublishError(f"{bad[0][0]}: {bad[0][1]}; the existing publication is damaged: "
                               "restore it from git or publish into a new folder")
    elif out.exists() and any(out.iterdir()):
        raise PublishError(f"{out}: exists and is not a published folder; choose an empty or new folder")

    if specs is None:
        specs = _specs_of_corpus(cache, engine.train_fingerprint, result)
    staging = out.parent / f".{out.name}.{os.getpid()}.tmp"
    try:
        private_dir(staging)
        entries: dict[str, dict] = {}
        for spec in specs:
            try:
                entry, external = engine.entry_key(spec)
            except Exception as exc:  # tagger not installed here, or parameters it no longer takes
                result.skipped.append(f"{spec.label}: {type(exc).__name__}: {exc}")
                continue
            tasks = engine.parts(spec)
            found = {t.part: cache.locate(t.part) for t in tasks}
            missing = [p for p, base in found.items() if base is None]
            if missing:
                result.skipped.append(f"{spec.label}: {len(tasks) - len(missing)} of {len(tasks)} parts cached "
                                      f"(run 'cv --folds {k} --seed {seed}' first)")
                continue
            rel_entry = entry.relpath
            private_dir(staging / rel_entry)
            _atomic_write(staging / rel_entry / "entry.json",
                          json.dumps(entry_record(entry, engine._describe(spec)), indent=2, sort_keys=True).encode())
            parts = []
            for task in tasks:
                base = found[task.part]
                record = json.loads(base.with_suffix(".json").read_bytes())
                record.pop("host", None)  # the machine's name is not the reader's business
                record.pop("record_sha256", None)
                record["record_sha256"] = _record_checksum(record)
                dest = staging / task.part.relpath
                private_dir(dest.parent)
                _atomic_write(dest.with_suffix(".npz"), base.with_suffix(".npz").read_bytes())
                _atomic_write(dest.with_suffix(".json"), json.dumps(record, indent=2, sort_keys=True).encode())
                parts.append({
                    "path": task.part.relpath.as_posix(), "kind": task.part.kind, "scope": task.part.scope,
                    "name": task.part.name, "fold": task.fold, "target": task.target,
                    **{key: record.get(key) for key in ("documents", "tokens", "fit_documents", "fit_seconds",
                                                        "predict_seconds", "predict_cpu_seconds", "peak_rss_mb", "environment",
                                                        "created") if key in record or key != "predict_cpu_seconds"},
                })
            entries[rel_entry.as_posix()] = {
                "tagger": entry.tagger, "tagger_label": spec.label, "version": entry.version,
                "param_hash": entry.param_hash, "train_fingerprint": entry.train_fingerprint, "external": external,
                "params": engine._describe(spec)["params"], "path": rel_entry.as_posix(), "parts": parts,
            }
            result.published.append(spec.label)
            echo(f"{spec.label}: {len(parts)} part(s)")

        # entries of the previous publication that were not republished now
        for old in previous.entries() if previous else []:
            if old.get("path") in entries:
                continue
            for rel in previous.files:
                if rel.startswith(old["path"] + "/"):
                    private_dir((staging / rel).parent)
                    _atomic_write(staging / rel, (out / rel).read_bytes())
            entries[old["path"]] = old
            result.kept.append(str(old.get("tagger_label")))

        if not entries:
            why = "; ".join(result.skipped) or "the workspace cache holds no entry trained on it"
            raise PublishError(f"corpus {corpus.name!r}: nothing to publish ({why})")
        documents = {}
        for split, docs in (("train", corpus.train), ("test", corpus.test)):
            buf = io.BytesIO()
            np.savez_compressed(buf, **_document_arrays(docs))
            rel = f"documents/{fingerprints[split]}.npz"
            private_dir(staging / "documents")
            _atomic_write(staging / rel, buf.getvalue())
            documents[split] = {"fingerprint": fingerprints[split], "documents": len(docs), "path": rel}

        files = {}
        for f in sorted(p for p in staging.rglob("*") if p.is_file()):
            data = f.read_bytes()
            files[f.relative_to(staging).as_posix()] = {"sha256": _sha256(data), "bytes": len(data)}
        for path, entry in entries.items():
            size = sum(v["bytes"] for rel, v in files.items() if rel.startswith(path + "/"))
            result.bytes_by_label[str(entry.get("tagger_label"))] = size
        result.total_bytes = sum(v["bytes"] for v in files.values())
        manifest = {
            "format": PUBLISHED_FORMAT, "schema": SCHEMA, "corpus": corpus.name, "public": True,
            "licence": licence.strip(), "citation": citation.strip(),
            "corpus_fingerprints": fingerprints, "tokenizer_version": TOKENIZER_VERSION, "documents": documents,
            "folds": {"k": k, "seed": seed, "fingerprint": engine.folds.fingerprint},
            "confidences": "float32, as the taggers gave them",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "ensemble_deid_version": __version__,
            "entries": [entries[p] for p in sorted(entries)], "files": files,
        }
        manifest["manifest_sha256"] = _record_checksum(manifest, "manifest_sha256")
        # the manifest is written last: it is the commit point of the staged folder
        _atomic_write(staging / PUBLISHED_MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
        _swap_in(staging, out)
    except OSError as exc:
        raise CacheWriteError(f"{getattr(exc, 'filename', None) or out}: cannot write "
                              f"({exc.strerror or type(exc).__name__}); {out} is unchanged") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _swap_in(staging: Path, out: Path) -> None:
    """Replace ``out`` by the finished staging folder (the old one is kept until the new one is in place)."""
    old = out.parent / f".{out.name}.{os.getpid()}.old"
    if out.exists():
        os.replace(out, old)
    try:
        os.replace(staging, out)
    except OSError:
        if old.exists():
            os.replace(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
