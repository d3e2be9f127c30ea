"""The names de-identified notes are written under.

A note's file name is often made of what identifies a patient
(``Smith_John_MRN_8812345.txt``), and ``text/`` is the folder to share, so
``deidentify --rename`` writes each note under a neutral name instead:

- ``hash``: ``note-`` and 20 hex digits of an HMAC-SHA256 of the note's id,
  keyed with a random key drawn for the output folder: nobody can confirm a
  guessed name by hashing it, and the same note keeps its name however the
  folder grows;
- ``index``: ``note-000001``, ... in the order of the ids (notes added later
  get the next numbers; a note keeps its number).

The mapping (original id -> neutral name, and the key) is ``OUT/names.json``:
owner-only, beside ``spans/`` (private: they hold the original text), never
in ``text/``; a resume reads it back, so every note keeps its name.

Without ``--rename`` the names are kept; :func:`phi_like_names` counts the ids
that look as if they hold PHI (a warning, with the counts only: the names are
never printed).
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import EnsembleDeidError, printable
from ..files import read_json, write_private_json

SCHEMES = ("hash", "index")
NAMES_FILE = "names.json"
_PREFIX = "note-"


class NamesError(EnsembleDeidError):
    """The output folder's name mapping is unreadable or of another scheme."""


def load_names(out: str | Path) -> dict | None:
    """The mapping file of output folder ``out`` ({"scheme", "key", "names"}), or None."""
    path = Path(out) / NAMES_FILE
    if not path.exists():
        return None
    record = read_json(path, NamesError, "name mapping")
    names = record.get("names") if isinstance(record, dict) else None
    if not (isinstance(record, dict) and record.get("scheme") in SCHEMES and isinstance(names, dict)
            and all(isinstance(k, str) and isinstance(v, str) and _valid(v) for k, v in names.items())
            and (record["scheme"] != "hash" or _is_key(record.get("key")))):
        raise NamesError(f"{printable(path)}: not a name mapping written by deidentify; use a new --out folder")
    return record


def output_names(out: str | Path) -> dict[str, str]:
    """{original id: neutral name} of output folder ``out`` ({} when its notes keep their names)."""
    record = load_names(out)
    return dict(record["names"]) if record else {}


def assign_names(out: str | Path, scheme: str, ids: Sequence[str]) -> dict[str, str]:
    """Every id of ``ids`` with its neutral name under ``scheme``, the
    names given by an earlier run into ``out`` kept; the mapping file is
    written (atomically, owner-only) before any note is."""
    if scheme not in SCHEMES:
        raise ValueError(f"rename scheme must be one of {', '.join(SCHEMES)}, not {scheme!r}")
    out = Path(out)
    record = load_names(out) or {"version": 1, "scheme": scheme, "names": {}}
    if record["scheme"] != scheme:
        raise NamesError(f"{printable(out)}: its notes were renamed with --rename {record['scheme']}; use the same "
                         "scheme, or a new --out folder")
    if scheme == "hash" and "key" not in record:
        record["key"] = secrets.token_hex(32)
    names: dict[str, str] = record["names"]
    taken = set(names.values())
    new = [i for i in sorted(set(ids)) if i not in names]
    if scheme == "index":
        used = [int(v[len(_PREFIX):]) for v in taken if v[len(_PREFIX):].isdigit()]
        start = max(used, default=0) + 1
        width = max(6, len(str(start + len(new))))
        for k, doc_id in enumerate(new):
            names[doc_id] = f"{_PREFIX}{start + k:0{width}d}"
    else:
        key = bytes.fromhex(record["key"])
        for doc_id in new:
            digest = hmac.new(key, doc_id.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
            length = 20
            while f"{_PREFIX}{digest[:length]}" in taken:  # never two notes under one name
                length += 4
            names[doc_id] = f"{_PREFIX}{digest[:length]}"
            taken.add(names[doc_id])
    if new or not (out / NAMES_FILE).exists():
        write_private_json(out / NAMES_FILE, record)
    return {i: names[i] for i in ids}


def _valid(name: str) -> bool:
    return bool(re.fullmatch(r"note-[0-9a-f]{1,64}", name))


def _is_key(value) -> bool:
    return isinstance(value, str) and bool(re.fullmatch(r"[0-9a-f]{32,128}", value))


# --- names that look like PHI --------------------------------------------------------

# Words a note's file name often holds that are no name (compared lower-case).
_COMMON = frozenset("""
note notes report record records discharge summary admission progress visit clinic clinical consult letter
patient doc document text file sample test train dev copy final draft new old radiology pathology lab labs
history physical exam referral operative procedure nursing medicine emergency case cases
""".split())
_DATE = re.compile(r"(?<!\d)(\d{4}[-_.]\d{1,2}[-_.]\d{1,2}|\d{1,2}[-_.]\d{1,2}[-_.]\d{2,4})(?!\d)")
_DIGITS = re.compile(r"\d{5,}")
_PHONE = re.compile(r"(?<!\d)\d{3}[-_. ]\d{3,4}(?:[-_. ]\d{4})?(?!\d)")
_MARKERS = re.compile(r"(?<![A-Za-z])(MRN|SSN|DOB|NHS|NHI|DNI|NIF|NSS)(?![a-z])", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+")


def phi_like_reasons(name: str) -> list[str]:
    """Why a note id may hold PHI: ``"date"``, ``"digits"`` (a run of 5 or
    more: a record number, a phone number), ``"phone"``, ``"record marker"``
    (MRN, SSN, DOB...), ``"capitalised words"`` (a word such as a name:
    capitalised, 3 letters or more, not a common word of file names). A
    heuristic: it warns, it proves nothing."""
    reasons = []
    if _DATE.search(name):
        reasons.append("date")
    if _DIGITS.search(name):
        reasons.append("digits")
    if _PHONE.search(name):
        reasons.append("phone")
    if _MARKERS.search(name):
        reasons.append("record marker")
    words = [w for w in _WORD.findall(name) if len(w) >= 3 and w[0].isupper() and w[1:].islower()
             and w.lower() not in _COMMON]
    if words:
        reasons.append("capitalised words")
    return reasons


def phi_like_names(ids: Iterable[str]) -> tuple[int, Counter]:
    """(how many of ``ids`` look as if they hold PHI, the count per reason)."""
    flagged, reasons = 0, Counter()
    for doc_id in ids:
        found = phi_like_reasons(doc_id)
        flagged += bool(found)
        reasons.update(found)
    return flagged, reasons


def phi_like_warning(ids: Sequence[str]) -> str | None:
    """The warning for notes whose names are kept in ``text/``, or None."""
    flagged, reasons = phi_like_names(ids)
    if not flagged:
        return None
    why = ", ".join(f"{reason}: {n}" for reason, n in sorted(reasons.items()))
    return (f"warning: {flagged} of {len(ids)} note name(s) look as if they hold PHI ({why}); text/ keeps each "
            "note's file name: pass --rename hash (or index) to write them under neutral names")

