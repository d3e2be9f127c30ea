"""Where the prediction cache keeps things and how its records are sealed:
the schema folder, the keys of entries and parts (their paths under the
cache root), the checksum a JSON record carries over itself, and the cache's
base error. The cache (``cache``) and the models kept beside its entries
(``kept``) both stand on it."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import EnsembleDeidError

SCHEMA = "v1"


class CacheError(EnsembleDeidError):
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


def _record_checksum(record: Mapping[str, Any], field: str = "record_sha256") -> str:
    body = {k: v for k, v in record.items() if k != field}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
