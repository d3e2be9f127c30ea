"""Shared pieces of the adapters of external systems (systems trained or tuned
elsewhere, and outputs imported from any system).

* :class:`CategoryMap` - an editable TOML map from a foreign system's category
  names (``Known patient lastname``, ``PHONE_NUMBER``, ``HOSPITAL``...) to
  ``CATEGORY:TYPE`` labels of the i2b2 scheme. Packaged maps live in
  ``ensemble_deid/labelmaps/``; a user passes their own file instead.
* :func:`snap_spans` - puts foreign spans on the common tokenization: a span
  whose edges fall inside tokens grows to whole tokens, one that covers no
  token is dropped, and both are counted.
* :func:`check_text` / :func:`check_bounds` - an imported output must carry the
  gold TEXT exactly, and its spans must lie on it.
* :class:`ExternalTagger` - the base class: ``external = True``, ``fit`` only
  checks the configuration, ``predict`` turns per-document foreign spans into
  BIO tags and records how many spans snapping changed (``snapped_spans_``,
  ``dropped_spans_``, ``unmapped_spans_``; also in ``environment()``, so in
  the cache metadata of every part).

Errors name files, records, document ids and offsets, never note text.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ...corpus.document import Annotation, Document, split_label
from ...errors import EnsembleDeidError
from ...files import read_toml
from ...corpus.formats.schemes import KNOWN_PARENTS
from ..prediction import DocumentPrediction
from ..base import Tagger, TaggerUnavailable
from ..state import register_state_class

log = logging.getLogger(__name__)

LABELMAP_DIR = Path(__file__).resolve().parents[2] / "labelmaps"  # ensemble_deid/labelmaps


class ExternalOutputError(EnsembleDeidError, ValueError):
    """A foreign system's output cannot be used: missing documents, text that
    differs from the gold, spans off the text, a malformed file. Nothing from
    the failing call is cached (the cache writes a part only after predict
    returns)."""


class ExternalToolError(EnsembleDeidError, RuntimeError):
    """An external program failed (non-zero exit, timeout, no output)."""


# --- category maps -------------------------------------------------------------

def _norm(name: str) -> str:
    return " ".join(name.casefold().split())


def _loose(name: str) -> str:
    """``"First Name11 (Name Pattern1)"`` -> ``"first name"``: parenthesised
    qualifiers and digits removed (PhysioNet deid and MIMIC marker variants)."""
    name = re.sub(r"\([^)]*\)", " ", name.casefold())
    name = re.sub(r"\d+", " ", name)
    return " ".join(name.split())


def _parse_target(value: str, source: str, key: str) -> tuple[str, str]:
    value = value.strip().upper()
    if ":" in value:
        try:
            return split_label(value)
        except ValueError:
            raise EnsembleDeidError(f"{source}: {key!r} maps to {value!r}, which is not CATEGORY:TYPE") from None
    parent = KNOWN_PARENTS.get(value)
    if parent is None:
        raise EnsembleDeidError(
            f"{source}: {key!r} maps to {value!r}, a subtype with no known parent; write it as CATEGORY:TYPE"
        )
    return parent, value


@register_state_class
@dataclass(frozen=True)
class CategoryMap:
    """Foreign category name -> (category, type).

    TOML layout::

        default = "OTHER:PHI"          # label of names not listed (omit: they are errors)
        ignore = ["lex", "zone"]       # names that are not PHI: dropped silently
        [labels]
        "Known patient lastname" = "NAME:PATIENT"
        HOSPITAL = "LOCATION:HOSPITAL"
        AGE = "AGE"                    # a known subtype alone: its parent is implied

    Names match case- and space-insensitively; failing that, with digits and
    parenthesised qualifiers removed (``Hospital3`` -> ``hospital``,
    ``Telephone/Fax (2)`` -> ``telephone/fax``).
    """

    labels: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    ignore: frozenset[str] = frozenset()
    default: tuple[str, str] | None = None
    source: str = "<inline>"

    @classmethod
    def load(cls, path: str | Path) -> "CategoryMap":
        return cls.from_dict(read_toml(path, EnsembleDeidError, "category map"), str(path))

    @classmethod
    def packaged(cls, name: str) -> "CategoryMap":
        """A map shipped in ``ensemble_deid/labelmaps/`` (file name without .toml)."""
        return cls.load(LABELMAP_DIR / f"{name}.toml")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<inline>") -> "CategoryMap":
        unknown = set(data) - {"labels", "ignore", "default"}
        if unknown:
            raise EnsembleDeidError(f"{source}: unknown key(s) {sorted(unknown)}; expected 'labels', 'ignore', 'default'")
        labels = data.get("labels", {})
        if not isinstance(labels, Mapping) or not all(isinstance(v, str) and v.strip() for v in labels.values()):
            raise EnsembleDeidError(f"{source}: [labels] must map category names to non-empty strings")
        ignore = data.get("ignore", [])
        if not isinstance(ignore, list) or not all(isinstance(v, str) for v in ignore):
            raise EnsembleDeidError(f"{source}: 'ignore' must be a list of category names")
        default = data.get("default")
        if default is not None and not (isinstance(default, str) and default.strip()):
            raise EnsembleDeidError(f"{source}: 'default' must be a CATEGORY:TYPE string")
        table: dict[str, tuple[str, str]] = {}
        for key, value in labels.items():
            target = _parse_target(value, source, key)
            table.setdefault(_norm(key), target)
        loose: dict[str, tuple[str, str]] = {}
        # Plain names first, so "Last Name" (not "Last Name (STitle)") is what
        # "Last Name (NamePattern1)" falls back to.
        for key in sorted(labels, key=lambda k: _loose(k) != _norm(k)):
            loose.setdefault("~" + _loose(key), table[_norm(key)])
        for key, value in loose.items():
            table.setdefault(key, value)
        ign = frozenset(_norm(i) for i in ignore) | frozenset("~" + _loose(i) for i in ignore)
        return cls(table, ign, _parse_target(default, source, "default") if default else None, source)

    # Saved with a fitted tagger (taggers/state.py), so an external member can
    # sit in a model bundle; read back, every label is checked as a map file's is.
    def __getstate__(self) -> dict[str, Any]:
        return {"labels": {k: ":".join(v) for k, v in self.labels.items()}, "ignore": sorted(self.ignore),
                "default": ":".join(self.default) if self.default else None, "source": self.source}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        source = "saved category map"
        labels, ignore, default = state["labels"], state["ignore"], state["default"]
        if not (isinstance(labels, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
                and isinstance(ignore, list) and all(isinstance(v, str) for v in ignore)
                and (default is None or isinstance(default, str)) and isinstance(state["source"], str)):
            raise EnsembleDeidError(f"{source}: malformed (labels, ignore, default or source)")
        object.__setattr__(self, "labels", {k: _parse_target(v, source, k) for k, v in labels.items()})
        object.__setattr__(self, "ignore", frozenset(ignore))
        object.__setattr__(self, "default", _parse_target(default, source, "default") if default else None)
        object.__setattr__(self, "source", state["source"])

    def lookup(self, name: str) -> tuple[str, str] | None:
        """The label of a foreign category; None when it is ignored.
        Raises KeyError for an unknown name when the map has no default."""
        n = _norm(name)
        if n in self.ignore:
            return None
        if n in self.labels:
            return self.labels[n]
        loose = "~" + _loose(name)
        if loose in self.ignore:
            return None
        if loose in self.labels:
            return self.labels[loose]
        if self.default is not None:
            return self.default
        raise KeyError(name)

    def knows(self, name: str) -> bool:
        n, loose = _norm(name), "~" + _loose(name)
        return n in self.ignore or n in self.labels or loose in self.ignore or loose in self.labels


def load_category_map(path: str | None, packaged: str) -> CategoryMap:
    return CategoryMap.load(path) if path else CategoryMap.packaged(packaged)


@dataclass(frozen=True)
class ForeignSpan:
    """A span as a foreign system gave it: character offsets on our text and
    the system's own category name."""

    start: int
    end: int
    name: str


@dataclass
class MappingStats:
    spans: int = 0
    unmapped: int = 0  # names the map did not list (sent to its default)
    ignored: int = 0
    unmapped_names: set[str] = field(default_factory=set)


def map_spans(spans: Iterable[ForeignSpan], cmap: CategoryMap, stats: MappingStats, source: str) -> list[Annotation]:
    """Foreign spans -> Annotations with i2b2 labels (ignored names dropped)."""
    out = []
    for s in spans:
        stats.spans += 1
        if not cmap.knows(s.name):
            stats.unmapped += 1
            stats.unmapped_names.add(s.name)
        try:
            target = cmap.lookup(s.name)
        except KeyError:
            raise ExternalOutputError(
                f"{source}: category {s.name!r} is not in the category map {cmap.source} "
                "(add it under [labels], or give the map a 'default')"
            ) from None
        if target is None:
            stats.ignored += 1
            continue
        out.append(Annotation(s.start, s.end, target[0], target[1]))
    return out


# --- text and offsets ------------------------------------------------------------

def check_text(document: Document, found: str, source: str) -> None:
    """Raise unless the foreign output carries exactly the gold TEXT."""
    if found == document.text:
        return
    limit = min(len(found), len(document.text))
    first = next((i for i in range(limit) if found[i] != document.text[i]), limit)
    raise ExternalOutputError(
        f"{source}: its text differs from the gold text of document {document.id!r} "
        f"({len(found)} vs {len(document.text)} characters; first difference at offset {first})"
    )


def check_bounds(document: Document, start: int, end: int, source: str, where: str = "") -> None:
    if not (0 <= start <= end <= len(document.text)):
        raise ExternalOutputError(
            f"{source}{': ' + where if where else ''}: span [{start}, {end}) lies off the text of document "
            f"{document.id!r} ({len(document.text)} characters)"
        )


def byte_to_char_offsets(text: str, encoding: str = "utf-8") -> np.ndarray:
    """``table[b]`` = the character offset of byte offset ``b`` (for b up to
    the encoded length); a byte inside a multi-byte character maps to the
    character it belongs to."""
    widths = np.fromiter((len(ch.encode(encoding)) for ch in text), dtype=np.int64, count=len(text))
    return np.repeat(np.arange(len(text) + 1), np.append(widths, 1))


# --- snapping -----------------------------------------------------------------------

@dataclass
class SnapStats:
    spans: int = 0
    snapped: int = 0  # boundaries moved to token edges
    dropped: int = 0  # covered no token (whitespace or punctuation-free gap)

    def add(self, other: "SnapStats") -> None:
        self.spans += other.spans
        self.snapped += other.snapped
        self.dropped += other.dropped


def snap_spans(document: Document, spans: Sequence[Annotation]) -> tuple[list[Annotation], SnapStats]:
    """Spans grown to the edges of the common tokens they overlap.

    A span starting or ending inside a token takes the whole token (the
    same tokens BIO encoding would tag); one overlapping no token is dropped.
    Returns the snapped spans and how many were changed or dropped.
    """
    stats = SnapStats(spans=len(spans))
    toks = document.tokens
    starts, ends = toks.starts, toks.ends
    out = []
    for ann in spans:
        first = int(np.searchsorted(ends, ann.start, side="right"))
        last = int(np.searchsorted(starts, ann.end, side="left")) - 1
        if first > last or ann.end <= ann.start:
            stats.dropped += 1
            continue
        s, e = int(starts[first]), int(ends[last])
        if (s, e) != (ann.start, ann.end):
            stats.snapped += 1
            ann = Annotation(s, e, ann.category, ann.type, None, ann.id, ann.comment)
        out.append(ann)
    return out, stats


# --- fingerprints of inputs (part of the cache key) ------------------------------

def files_digest(paths: Iterable[str | Path]) -> str:
    """SHA-256 over the names and contents of files: a changed output changes
    the cache key, so stale imported predictions are never reused."""
    h = hashlib.sha256()
    for p in sorted(str(x) for x in paths):
        h.update(p.encode())
        h.update(b"\0")
        try:
            h.update(hashlib.sha256(Path(p).read_bytes()).digest())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()[:16]


def local_files_digest(*paths: str | None) -> str:
    """``files_digest`` of those of ``paths`` that are set and are files ("" when none is)."""
    files = [p for p in paths if p and Path(p).is_file()]
    return files_digest(files) if files else ""


def label_map_problem(label_map: str | None) -> str:
    """Why an adapter's ``label_map`` parameter cannot be used ("" when it is unset or a file)."""
    return f"label_map {label_map} is not a file" if label_map and not Path(label_map).is_file() else ""


# --- availability checked on the class (environment) or an instance (parameters) ---

class hybridmethod:
    """A method that receives the class when called on the class and the
    instance when called on an instance. ``availability()`` uses it: the
    registry and the CLI ask the class (environment variables, installed
    packages); ``fit`` asks the instance, whose parameters may configure it."""

    def __init__(self, func):
        self.func = func
        functools.update_wrapper(self, func)

    def __get__(self, obj, objtype=None):
        return functools.partial(self.func, obj if obj is not None else objtype)


def requirements_available(cls, extra: str = "external") -> tuple[bool, str]:
    """(ok, reason) for a tagger class's (or instance's) ``requires`` modules, with the install hint."""
    import importlib.util

    cls = cls if isinstance(cls, type) else type(cls)
    missing = [m for m in cls.requires if importlib.util.find_spec(m) is None]
    if missing:
        return False, f"missing optional dependency: {', '.join(missing)} (pip install 'ensemble-deid[{extra}]')"
    return True, ""


# --- the base class ---------------------------------------------------------------

class ExternalTagger(Tagger):
    """Base of external systems: not trained per fold; output snapped to tokens.

    Subclasses implement ``_prepare()`` (called by ``fit``; load an engine,
    index files) and ``_foreign_spans(documents)`` returning, per document,
    Annotations already carrying i2b2 labels (use :func:`map_spans`).
    Overlapping spans keep the earlier (then longer) one, as BIO encoding does.
    """

    external = True

    def fit(self, documents: Sequence[Document] = ()) -> "ExternalTagger":
        self.check_configured()
        self._prepare()
        self.snapped_spans_ = 0
        self.dropped_spans_ = 0
        self.foreign_spans_ = 0
        self.unmapped_spans_ = 0
        return self

    def _prepare(self) -> None:
        pass

    def check_configured(self) -> None:
        ok, reason = self.availability()
        if not ok:
            raise TaggerUnavailable(f"tagger {self.name!r} is unavailable: {reason}")

    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        raise NotImplementedError

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        self.check_fitted()
        documents = list(documents)
        per_doc = self._foreign_spans(documents)
        if len(per_doc) != len(documents):  # pragma: no cover - adapter bug
            raise RuntimeError(f"{self.name}: {len(per_doc)} span lists for {len(documents)} documents")
        total = SnapStats()
        out = []
        for doc, spans in zip(documents, per_doc):
            snapped, stats = snap_spans(doc, spans)
            total.add(stats)
            out.append(DocumentPrediction.from_spans(doc, snapped))
        self.foreign_spans_ += total.spans
        self.snapped_spans_ += total.snapped
        self.dropped_spans_ += total.dropped
        if total.snapped or total.dropped:
            log.info(
                "%s: %d of %d span(s) snapped to token boundaries, %d dropped (no token)",
                self.name, total.snapped, total.spans, total.dropped,
            )
        return out

    def _note_mapping(self, stats: MappingStats) -> None:
        self.unmapped_spans_ += stats.unmapped
        if stats.unmapped:
            log.warning(
                "%s: %d span(s) had categories missing from the category map (%s); they got its default label",
                self.name, stats.unmapped, ", ".join(sorted(stats.unmapped_names)[:10]),
            )

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["foreign_spans"] = str(getattr(self, "foreign_spans_", 0))
        env["snapped_spans"] = str(getattr(self, "snapped_spans_", 0))
        env["dropped_spans"] = str(getattr(self, "dropped_spans_", 0))
        env["unmapped_spans"] = str(getattr(self, "unmapped_spans_", 0))
        return env

    def param_hash(self) -> str:
        """Parameters plus a digest of the external inputs (output files, the
        program run), so changed inputs never reuse stale cached parts."""
        base = super().param_hash()
        digest = self.input_digest()
        if not digest:
            return base
        return hashlib.sha256(f"{base}:{digest}".encode()).hexdigest()[:16]

    def input_digest(self) -> str:
        """Override: a digest of the files this tagger reads ("" if none)."""
        return ""


def grouped_numbers(documents: Sequence[Document]) -> list[tuple[int, int]]:
    """(patient, note) numbers for record formats that need integers: patients
    numbered by patient group in order of appearance, notes within a group."""
    groups: dict[str, int] = {}
    notes: dict[str, int] = {}
    out = []
    for doc in documents:
        g = doc.group
        patient = groups.setdefault(g, len(groups) + 1)
        notes[g] = notes.get(g, 0) + 1
        out.append((patient, notes[g]))
    return out
