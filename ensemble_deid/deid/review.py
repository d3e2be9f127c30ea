"""The review queue: the spans a person should look at before a release.

``deidentify`` writes ``OUT/review/queue.jsonl`` (``OUT/review/`` is
owner-only and outside ``text/``, the folder meant for sharing): one JSON
object per line, a header first::

    {"queue": 1, "bundle": "<manifest sha256>", "budget": {...}, "items": 2}
    {"item": "0-1", "doc": "note7", "start": 10, "end": 17, "label": "NAME:PATIENT",
     "risk": 0.42, "kind": "dropped-span", "current": "text", "members": ["crf", "memm"]}

``item`` is ``<doc_index>-<n>``, unique in the queue (an id that can be
named in a message: it holds no text); ``start``/``end`` are character
offsets in the input note (end exclusive); ``label`` the suggested
``CATEGORY:TYPE``; ``risk`` in [0, 1]; ``kind`` why the item is there (see
``KINDS``); ``current`` what the released output holds now: ``text`` (the
span is readable: accepting it masks it) or ``phi`` (masked: rejecting it
unmasks it); ``members``: the members that proposed the span. Readers
ignore fields they do not know.

The file is read as untrusted input (someone else's tool may have written
it): every field is typed and range-checked, and every error names the file,
the line and the field, never the text of a note nor a value read.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..errors import EnsembleDeidError, printable
from ..files import private_dir, read_utf8, write_private

QUEUE_VERSION = 1
REVIEW_DIR = "review"
QUEUE_FILE = "queue.jsonl"
KINDS = ("dropped-span", "near-threshold", "disagreement", "lexical")
CURRENT = ("text", "phi")  # readable now (accept masks it) / masked now (reject unmasks it)

_ITEM_ID = re.compile(r"[0-9]{1,9}-[0-9]{1,9}")
_LABEL = re.compile(r"[A-Za-z0-9_.\-]{1,64}:[A-Za-z0-9_.\-]{1,64}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
MAX_MEMBERS = 256
MAX_NAME = 200


class ReviewError(EnsembleDeidError):
    """A queue or decisions file that cannot be used; names the file, line/item and field."""


@dataclass(frozen=True)
class ReviewItem:
    """One span to review (offsets and labels only: no text)."""

    item: str
    doc: str
    start: int
    end: int
    label: str
    risk: float
    kind: str
    current: str
    members: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        return {**asdict(self), "members": list(self.members)}


@dataclass(frozen=True)
class Queue:
    """A queue file's header and items (in file order)."""

    header: dict
    items: tuple[ReviewItem, ...]

    @property
    def bundle(self) -> str | None:
        return self.header.get("bundle")

    @property
    def budget(self) -> dict:
        return self.header.get("budget") or {}


def queue_path(out: str | Path) -> Path:
    return Path(out) / REVIEW_DIR / QUEUE_FILE


def write_queue(path: str | Path, items: Iterable[ReviewItem], header: Mapping | None = None) -> Path:
    """Write the queue atomically, owner-only (its folder made owner-only
    too). ``header`` gives ``bundle`` and ``budget``; ``queue`` and
    ``items`` (the count) are set here. The items are checked as a reader
    would check them, so a queue this writes is one ``read_queue`` accepts."""
    path = Path(path)
    items = list(items)
    head = {"bundle": None, "budget": {}, **dict(header or {}), "queue": QUEUE_VERSION, "items": len(items)}
    _check_header(head, path, 1)
    lines = [json.dumps(head, sort_keys=True, ensure_ascii=False)]
    seen: set[str] = set()
    for n, item in enumerate(items, 2):
        record = item.to_json()
        _check_item(record, path, n, seen)
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    private_dir(path.parent)
    return write_private(path, "\n".join(lines) + "\n")


def read_queue(path: str | Path, texts: Mapping[str, str] | None = None,
               labels: Sequence[str] | None = None) -> Queue:
    """The queue at ``path``, every field checked. ``texts`` (doc id -> the
    input note's text): every item's document must be there and its offsets
    within the text; ``labels``: every item's label must be one of them."""
    path = Path(path)
    text = read_utf8(path, ReviewError, "review queue")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ReviewError(f"{printable(path)}: empty (a review queue starts with its header line)")
    header = _json_line(lines[0], path, 1)
    _check_header(header, path, 1)
    items, seen = [], set()
    for n, line in enumerate(lines[1:], 2):
        record = _json_line(line, path, n)
        items.append(_check_item(record, path, n, seen, texts, labels))
    if header["items"] != len(items):
        raise ReviewError(f"{printable(path)}: line 1: field 'items': the header counts {header['items']} item(s), "
                          f"the file holds {len(items)} (a truncated or edited queue)")
    return Queue(header, tuple(items))


def _json_line(line: str, path: Path, n: int) -> dict:
    try:
        value = json.loads(line)
    except ValueError:
        raise ReviewError(f"{printable(path)}: line {n}: not valid JSON") from None
    except RecursionError:
        raise ReviewError(f"{printable(path)}: line {n}: nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ReviewError(f"{printable(path)}: line {n}: not a JSON object")
    return value


def _where(path: Path, n: int, name: str) -> str:
    return f"{printable(path)}: line {n}: field {name!r}"


def _check_header(header: dict, path: Path, n: int) -> None:
    if header.get("queue") != QUEUE_VERSION or isinstance(header.get("queue"), bool):
        raise ReviewError(f"{_where(path, n, 'queue')}: not a review queue of version {QUEUE_VERSION}")
    bundle = header.get("bundle")
    if bundle is not None and not (isinstance(bundle, str) and _SHA256.fullmatch(bundle)):
        raise ReviewError(f"{_where(path, n, 'bundle')}: expected a SHA-256 (64 lower-case hex digits) or null")
    if not isinstance(header.get("budget", {}), dict):
        raise ReviewError(f"{_where(path, n, 'budget')}: expected an object")
    if not _is_int(header.get("items")) or header["items"] < 0:
        raise ReviewError(f"{_where(path, n, 'items')}: expected a count (an integer >= 0)")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_item(record: dict, path: Path, n: int, seen: set[str], texts: Mapping[str, str] | None = None,
                labels: Sequence[str] | None = None) -> ReviewItem:
    def bad(name: str, expected: str) -> ReviewError:
        return ReviewError(f"{_where(path, n, name)}: {expected}")

    item = record.get("item")
    if not (isinstance(item, str) and _ITEM_ID.fullmatch(item)):
        raise bad("item", "expected an id '<doc index>-<n>' (digits)")
    if item in seen:
        raise bad("item", f"duplicate item id {item}")
    seen.add(item)
    doc = record.get("doc")
    if not (isinstance(doc, str) and 0 < len(doc) <= 1000 and doc.isprintable()):
        raise bad("doc", "expected a document id (a printable string)")
    start, end = record.get("start"), record.get("end")
    if not _is_int(start) or start < 0:
        raise bad("start", "expected a character offset (an integer >= 0)")
    if not _is_int(end) or end <= start:
        raise bad("end", "expected a character offset after 'start'")
    if texts is not None:
        if doc not in texts:
            raise bad("doc", f"item {item}: no such note among the inputs")
        if end > len(texts[doc]):
            raise bad("end", f"item {item}: beyond the end of its note ({len(texts[doc])} characters)")
    label = record.get("label")
    if not (isinstance(label, str) and _LABEL.fullmatch(label)):
        raise bad("label", "expected a label CATEGORY:TYPE")
    if labels is not None and label not in labels:
        raise bad("label", f"item {item}: not one of the bundle's labels")
    risk = record.get("risk")
    if isinstance(risk, bool) or not isinstance(risk, (int, float)) or not (math.isfinite(risk) and 0 <= risk <= 1):
        raise bad("risk", "expected a number in [0, 1]")
    kind = record.get("kind")
    if kind not in KINDS or not isinstance(kind, str):
        raise bad("kind", f"expected one of {', '.join(KINDS)}")
    current = record.get("current")
    if current not in CURRENT or not isinstance(current, str):
        raise bad("current", f"expected one of {', '.join(CURRENT)}")
    members = record.get("members", [])
    if not (isinstance(members, list) and len(members) <= MAX_MEMBERS
            and all(isinstance(m, str) and 0 < len(m) <= MAX_NAME and m.isprintable() for m in members)):
        raise bad("members", f"expected a list of at most {MAX_MEMBERS} member names")
    return ReviewItem(item, doc, start, end, label, float(risk), kind, current, tuple(members))
