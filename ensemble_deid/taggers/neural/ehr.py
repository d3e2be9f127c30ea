"""Per-document "EHR" name lists [LEE16]: the names a hospital's records
already hold for a note (its patient's, its doctors'), read from a local JSON
metadata file and turned into per-token flags for ``lstm-crf-fea``.

File format (UTF-8 JSON): an object keyed by document id, or by patient group
(``doc.metadata["group"]``) for every note of that patient; each value an
object with the lists ``"patient"`` and/or ``"doctor"`` of names (full names
or single name parts; other keys are ignored):

    {"105-01": {"patient": ["Ana María Pérez Gil"], "doctor": ["Luis Vela"]},
     "106":    {"patient": ["John Smith"]}}

A token gets the ``ehr:patient`` (``ehr:doctor``) flag when it equals, case-
and accent-insensitively, a word of one of the note's patient (doctor) names.
Documents without an entry get no flags. The file is read at fit and predict
time, so it must cover the documents being tagged.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

from ...corpus.document import Document
from ..gazetteers import entry_tokens, normalize

EHR_KEYS = ("patient", "doctor")
EHR_FLAG_NAMES = tuple(f"ehr:{k}" for k in EHR_KEYS)


def load_ehr_names(path: str | Path) -> dict[str, dict[str, frozenset[str]]]:
    """Document/group id -> key -> set of normalised name words."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"EHR names file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected an object keyed by document or group id")
    out: dict[str, dict[str, frozenset[str]]] = {}
    for doc_key, entry in raw.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: entry {doc_key!r} is not an object of name lists")
        names = {}
        for key in EHR_KEYS:
            values = entry.get(key, [])
            if isinstance(values, str):
                values = [values]
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"{path}: entry {doc_key!r} field {key!r} must be a list of strings")
            words = {w for v in values for w in entry_tokens(v) if w.isalpha()}
            names[key] = frozenset(words)
        out[str(doc_key)] = names
    return out


def ehr_flags(doc: Document, names: Mapping[str, Mapping[str, frozenset[str]]]) -> np.ndarray:
    """(n_tokens, len(EHR_KEYS)) uint8 flags for one document."""
    words = doc.tokens.words
    flags = np.zeros((len(words), len(EHR_KEYS)), dtype=np.uint8)
    entry = names.get(doc.id)
    if entry is None:
        entry = names.get(str(doc.metadata.get("group", "")))
    if not entry:
        return flags
    for j, key in enumerate(EHR_KEYS):
        wanted = entry.get(key)
        if wanted:
            flags[:, j] = [normalize(w) in wanted for w in words]
    return flags
