"""Kept models: the model cross-validation trains on all of an entry's
training documents (the one that predicts the test split), saved beside the
entry's parts so that ``fit`` reuses it instead of training again. A bundle
then holds exactly the models whose predictions the cache holds, whatever
the hardware or library did to a second training run (torch on another
machine does not retrain the same network).

    ENTRY/model/kept.json   format, the entry's key, the tagger's label, the
                            SHA-256 of every file, and one over itself
    ENTRY/model/tagger      the fitted tagger as ``Tagger.save`` writes it: a
                            bundle member's own format (JSON and numeric
                            arrays, a library's model file, or a weights-only
                            torch checkpoint; nothing pickled)

Only the full-training model is kept, never the fold models. It is built in
``ENTRY/.model.PID.N.tmp`` and renamed into place, so ``model`` is whole or
absent (a killed run's temp folder is swept by ``cache verify --remove``).
Each predict part made with it records its checksum (``model_sha256``) in
its commit record: ``fit`` takes a kept model only when the cached test part
names it and every checksum holds; otherwise it says why and trains.

Kept models hold words of the training notes: owner-only, in the workspace
cache only (``cache publish`` copies parts, never a model). ``cv
--no-keep-models`` keeps none; ``cache rm-models`` deletes them.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from ..files import check_folder, folder_checksums, owner_only_tree, private_dir, write_private
from .keys import SCHEMA, CacheError, EntryKey, _record_checksum

MODEL = "model"
RECORD = "kept.json"
SAVED = "tagger"
FORMAT = "ensemble-deid kept model"
LOCK = "model.lock"


class KeptModelError(CacheError):
    """A kept model that is missing, damaged or not the one asked for (names the folder, never note text)."""


def model_dir(root: str | Path, entry: EntryKey) -> Path:
    return Path(root) / entry.relpath / MODEL


def model_lock(root: str | Path, entry: EntryKey):
    """An inter-process lock on an entry's kept model: the predict parts of
    several targets share one model, trained once."""
    from filelock import FileLock

    folder = Path(root) / entry.relpath
    private_dir(folder)
    return FileLock(str(folder / LOCK), mode=0o600)


def keep(root: str | Path, entry: EntryKey, tagger: Any, label: str) -> str:
    """Save the fitted ``tagger`` as ``entry``'s kept model (replacing a
    damaged one) and return its checksum, for the parts it predicts. The
    caller holds :func:`model_lock`."""
    final = model_dir(root, entry)
    tmp = final.parent / f".{MODEL}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        private_dir(tmp)
        tagger.save(tmp / SAVED)
        owner_only_tree(tmp)
        record = {"format": FORMAT, "schema": SCHEMA, "tagger": entry.tagger, "version": entry.version,
                  "param_hash": entry.param_hash, "train_fingerprint": entry.train_fingerprint, "tagger_label": label,
                  "files": folder_checksums(tmp, KeptModelError, skip=(RECORD,), what="a kept model"),
                  "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        record["record_sha256"] = _record_checksum(record)
        write_private(tmp / RECORD, json.dumps(record, indent=2, sort_keys=True).encode(), fsync=True)
        if final.exists():  # damaged (a valid one is reused, never replaced)
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return record["record_sha256"]


def check(folder: Path) -> dict:
    """The verified record of the kept model in ``folder``: its own checksum,
    the entry it belongs to, every file present and unchanged; a
    :class:`KeptModelError` saying what is wrong otherwise."""
    path = folder / RECORD
    if not folder.is_dir():
        raise KeptModelError(f"{folder}: no kept model")
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KeptModelError(f"{path}: unreadable record ({type(exc).__name__})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(record.get("files"), dict):
        raise KeptModelError(f"{path}: not a kept-model record")
    if record.get("record_sha256") != _record_checksum(record):
        raise KeptModelError(f"{path}: record checksum mismatch (edited or damaged)")
    tagger, version_hash, train = folder.parts[-4:-1]
    if (record.get("tagger"), f"{record.get('version')}-{record.get('param_hash')}", record.get("train_fingerprint")) \
            != (tagger, version_hash, train):
        raise KeptModelError(f"{path}: the record describes another entry's model")
    check_folder(folder, record["files"], KeptModelError, skip=(RECORD,), what="the kept model")
    return record


def load(root: str | Path, entry: EntryKey, expected: str | None = None) -> tuple[Any, str]:
    """(``entry``'s kept model, fitted, its checksum) after :func:`check`;
    with ``expected`` (a part's ``model_sha256``) only that very model. Nothing
    in the folder runs code: the tagger's own ``load`` reads JSON, arrays or
    a weights-only checkpoint."""
    from ..taggers.registry import tagger_class

    folder = model_dir(root, entry)
    record = check(folder)
    if expected is not None and record["record_sha256"] != expected:
        raise KeptModelError(f"{folder}: not the model that made the cached predictions (it was replaced)")
    try:
        tagger = tagger_class(entry.tagger).load(folder / SAVED)
    except Exception as exc:  # noqa: BLE001 - any failure to read it back is a damaged model
        raise KeptModelError(f"{folder}: cannot be loaded ({type(exc).__name__})") from None
    if str(tagger.version) != entry.version or tagger.param_hash() != entry.param_hash:
        raise KeptModelError(f"{folder}: holds another version or other parameters than its entry")
    return tagger, record["record_sha256"]


def reusable(cache_root: str | Path, entry: EntryKey, record: dict) -> tuple[Any | None, str]:
    """(the kept model that made the cached part of ``record``, "") or
    (None, why not), for ``fit``."""
    expected = record.get("model_sha256")
    if record.get("model_not_kept"):
        return None, f"cv could not save its model ({record['model_not_kept']})"
    if not expected:
        return None, ("its cached test predictions name no kept model (made before cv kept models, with "
                      "--no-keep-models, or read from a published folder)")
    try:
        return load(cache_root, entry, expected)[0], ""
    except KeptModelError as exc:
        return None, str(exc)


def kept_models(root: str | Path) -> list[Path]:
    """Every kept-model folder of the workspace cache at ``root``."""
    top = Path(root) / SCHEMA
    return sorted(top.glob(f"*/*/*/{MODEL}")) if top.is_dir() else []

