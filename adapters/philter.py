"""``philter``: Philter (philter-ucsf 1.0.3, UCSF's rule-based PHI filter) as
an external ensemble member, fully offline.

Philter keeps what its whitelists and "safe" patterns match and removes
everything else, so its output is high-recall and mostly untyped (``OTHER``;
its date patterns say ``DATE``). Five fixes make the released package run
here (see docs/external-systems.md):

* about 160 of its regular expressions carry ``(?i)`` mid-pattern, which
  Python 3.11 rejects: they are compiled with ``re.IGNORECASE`` instead;
* its configuration names pattern files relative to its package folder: the
  paths are made absolute;
* its part-of-speech step calls NLTK's perceptron tagger, whose model cannot
  be downloaded here: a stand-in tags digit runs ``CD``, capitalised words
  ``NNP`` and the rest ``NN`` (the only tags its default configuration reads);
* it reads files with universal newlines and guesses encodings: the notes are
  written as UTF-8 with carriage returns blanked (same length), so offsets
  stay ours;
* its complement of the kept text is quadratic in the note length: a linear
  version with the same result replaces it.

Philter reports PHI as runs of letters and digits; runs separated by blanks
on one line (or by one of ``- / . '``) merge into one span, and a run inside a
typed (DATE) match takes that type.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.errors import printable
from ensemble_deid.taggers.state import NamedBlob, StateError
from ensemble_deid.taggers.external.base import (
    ExternalTagger, ForeignSpan, MappingStats, hybridmethod, label_map_problem, load_category_map, local_files_digest,
    map_spans, requirements_available,
)

_LOCK = threading.Lock()  # Philter's module state (nltk hook, stdout) is process-wide
_MERGE_GAP = re.compile(r"[ \t]+|[ \t]*[-/.'][ \t]*")


def heuristic_pos_tag(tokens):
    """Stand-in for ``nltk.pos_tag`` with the tags Philter's default config uses."""
    out = []
    for w in tokens:
        if w.isdigit():
            tag = "CD"
        elif w[:1].isupper():
            tag = "NNP"
        else:
            tag = "NN"
        out.append((w, tag))
    return out


class _NltkShim:
    """``nltk`` as Philter sees it: everything real except ``pos_tag``."""


    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        if name == "pos_tag":
            return heuristic_pos_tag
        return getattr(self._real, name)


def _package_dir() -> Path:
    import philter_ucsf

    return Path(philter_ucsf.__file__).parent


class PhilterTagger(ExternalTagger):
    name = "philter"
    version = "1"
    requires = ("philter_ucsf", "nltk", "chardet")
    description = "Philter (philter-ucsf): rule/whitelist PHI filter, offline with fixes"

    _parameter_constraints = {"config": [None, str], "label_map": [None, str]}
    fit_only_params = ("config", "label_map")  # fit reads them into patterns_ and category_map_

    def __init__(self, config=None, label_map=None):
        self._store_params(locals())

    def _availability(self_or_cls):
        ok, reason = requirements_available(self_or_cls)
        if not ok or isinstance(self_or_cls, type):
            return ok, reason
        self = self_or_cls
        if self.config and not Path(self.config).is_file():
            return False, f"Philter config {self.config} not found"
        problem = label_map_problem(self.label_map)
        return not problem, problem

    availability = hybridmethod(_availability)

    def input_digest(self) -> str:
        return local_files_digest(self.config, self.label_map)

    def _prepare(self) -> None:
        config = Path(self.config) if self.config else _package_dir() / "configs" / "philter_delta.json"
        patterns = json.loads(config.read_text(encoding="utf-8"))
        base = _package_dir()
        for p in patterns:
            if "filepath" in p and p.get("type") in _SUFFIX:
                path = Path(p.pop("filepath"))
                if not path.is_absolute():
                    candidate = config.parent / path
                    path = candidate if candidate.exists() else base / path
                if p["type"] == "set" and path.suffix != ".json":  # Philter would unpickle a .pkl
                    raise ValueError(f"philter: pattern {p.get('title')!r}: word set {path} is not a .json file")
                # Read now: a fitted Philter carries its pattern files (saved in
                # its own folder) and reads none after fit.
                p["file"] = path.read_bytes()
            p.pop("filepath", None)  # other types only print it
        self.patterns_ = patterns
        self.category_map_ = load_category_map(self.label_map, "philter")

    def _fitted_state(self):
        state = super()._fitted_state()
        state["patterns_"] = [
            {**p, "file": NamedBlob(bytes(p["file"]), f"pattern-{i:03d}{_SUFFIX[p.get('type')]}")} if "file" in p else p
            for i, p in enumerate(self.patterns_)
        ]
        return state

    def _restore_state(self, state) -> None:
        # The patterns come from the saved folder, which a bundle checks
        # (inside it, no links, checksummed); one naming a path would make
        # Philter read, or unpickle, a file of the machine that loads it.
        patterns = state.get("patterns_")
        if not isinstance(patterns, list) or not all(isinstance(p, dict) for p in patterns):
            raise StateError("philter: malformed saved patterns (field 'patterns_')")
        for i, p in enumerate(patterns):
            if "filepath" in p:
                raise StateError(f"philter: saved pattern {i} names a file ({printable(str(p['filepath']))[:80]!r}); "
                                 "a saved Philter reads its pattern files from its own folder only: refit it")
            if (p.get("type") in _SUFFIX) != isinstance(p.get("file"), bytes):
                raise StateError(f"philter: saved pattern {i} of type {printable(str(p.get('type')))[:40]!r} "
                                 f"{'lacks' if p.get('type') in _SUFFIX else 'has'} a pattern file")
        super()._restore_state(state)

    def _engine(self, config_path: str, in_dir: str):
        from philter_ucsf.philter import Philter

        class _Philter(Philter):
            def precompile(self, filepath):
                regex = open(filepath, "r").read().strip()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)  # "possible nested set" in its patterns
                    try:
                        return re.compile(regex)
                    except re.error:
                        if "(?i)" in regex:
                            return re.compile(regex.replace("(?i)", ""), re.IGNORECASE)
                        raise

            def detect_encoding(self, fp):
                return {"encoding": "utf-8", "confidence": 1.0}

        engine = _Philter({"verbose": False, "run_eval": False, "filters": config_path, "outformat": "i2b2"})
        engine.finpath = in_dir
        engine.include_map = _fast_coordinate_map()  # still empty: same behaviour, linear complement
        return engine

    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        import philter_ucsf.philter as philter_module

        stats = MappingStats()
        out: list[list[Annotation]] = []
        with tempfile.TemporaryDirectory(prefix="edeid-philter-") as tmp, _LOCK:
            os.chmod(tmp, 0o700)
            notes = Path(tmp) / "notes"
            notes.mkdir()
            config_path = Path(tmp) / "config.json"
            config_path.write_text(json.dumps(_with_files(self.patterns_, Path(tmp) / "patterns")), encoding="utf-8")
            names = []
            for i, doc in enumerate(documents):
                path = notes / f"doc{i:06d}.txt"
                with open(path, "w", encoding="utf-8", newline="") as fh:
                    fh.write(doc.text.replace("\r", " "))
                names.append(str(path))
            real_nltk = philter_module.nltk
            philter_module.nltk = _NltkShim(real_nltk)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    engine = self._engine(str(config_path), str(notes) + os.sep)
                    engine.map_coordinates()
            finally:
                philter_module.nltk = real_nltk
            for doc, name in zip(documents, names):
                spans = _philter_spans(doc.text, engine, name)
                out.append(map_spans(spans, self.category_map_, stats, f"philter (document {doc.id!r})"))
        self._note_mapping(stats)
        return out


def _with_files(patterns: list[dict], folder: Path) -> list[dict]:
    """Philter's configuration: each pattern's saved file written to ``folder``
    and named by its ``filepath`` (the suffix Philter reads it by comes from
    the pattern's type, so a saved word set is always read as JSON)."""
    folder.mkdir()
    out = []
    for i, p in enumerate(patterns):
        p = dict(p)
        if "file" in p:
            path = folder / f"pattern-{i:03d}{_SUFFIX[p['type']]}"
            path.write_bytes(p.pop("file"))
            p["filepath"] = str(path)
        out.append(p)
    return out


# The pattern types Philter reads a file for, and the file suffix it expects.
_SUFFIX = {"regex": ".txt", "regex_context": ".txt", "set": ".json"}


def _fast_coordinate_map():
    """Philter's CoordinateMap with a linear ``get_complement`` (the released
    one removes items from a list one by one: quadratic, minutes per long
    note). Same result: the uncovered characters that are letters, digits or
    ``*``, grouped into runs."""
    from philter_ucsf.coordinate_map import CoordinateMap

    class FastCoordinateMap(CoordinateMap):
        def get_complement(self, filename, text):
            covered = bytearray(len(text))
            for start, stop in self.map[filename].items():
                covered[start:stop] = b"\x01" * (stop - start)
            out, run = {}, None
            for i, ch in enumerate(text):
                keep = not covered[i] and _KEEP.match(ch) is not None
                if keep and run is None:
                    run = i
                elif not keep and run is not None:
                    out[run] = i
                    run = None
            if run is not None:
                out[run] = len(text)
            return out

    return FastCoordinateMap()


_KEEP = re.compile(r"[a-zA-Z0-9*]")


def _philter_spans(text: str, engine, filename: str) -> list[ForeignSpan]:
    typed: list[tuple[int, int, str]] = []
    for phi_type, maps in engine.phi_type_dict.items():
        if phi_type == "OTHER":
            continue
        for start, stop in maps[0].filecoords(filename):
            typed.append((start, stop, phi_type))
    typed.sort()
    runs = sorted(engine.full_exclude_map.get(filename, {}).items())
    spans: list[list] = []
    for start, stop in runs:
        label = next((t for s, e, t in typed if s <= start and stop <= e), "OTHER")
        if spans and spans[-1][2] == label and _MERGE_GAP.fullmatch(text[spans[-1][1]:start]):
            spans[-1][1] = stop
        else:
            spans.append([start, stop, label])
    return [ForeignSpan(s, e, t) for s, e, t in spans]
