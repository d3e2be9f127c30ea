"""``precomputed``: import another system's predictions from files.

Any system (a transformer tagger, a commercial tool, ``cache export`` of this
toolkit) enters an ensemble without Python: give its output as i2b2 XML
(``DOC.xml``) or BRAT (``DOC.txt`` + ``DOC.ann``) files named by document id.

    precomputed:test_dir=out/test,fold_dirs=out/oof-*,label_map=theirs.toml

* ``test_dir``: predictions on the test split (or any target set).
* ``train_dir``: predictions on the whole training set by a system trained
  elsewhere; or ``fold_dirs``: a glob pattern of directories, one per fold,
  each holding out-of-fold predictions (every training document in exactly
  one of them).
* ``format``: ``xml``, ``brat`` or ``auto`` (per directory).
* ``label_map``: a TOML label map (``ensemble_deid.corpus.labelmap``) renaming the
  system's types to ours.

It predicts any document it has a file for, keyed by document id; a document
with no file is an error naming the missing ids, so is a file whose TEXT
differs from the gold, or a span off the text. Span edges inside tokens are
snapped to token boundaries (counted in ``snapped_spans_``).
"""
from __future__ import annotations

import glob
from pathlib import Path
from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.errors import ERROR
from ensemble_deid.taggers.external.base import ExternalOutputError, ExternalTagger, check_text, files_digest, hybridmethod
from ensemble_deid.corpus.formats import detect_format, read_brat, read_i2b2_xml
from ensemble_deid.corpus.labelmap import LabelMap
from ensemble_deid.taggers.constraints import Options


class PrecomputedTagger(ExternalTagger):
    name = "precomputed"
    version = "1"
    description = "imports another system's predictions (i2b2 XML or BRAT files per document)"

    _parameter_constraints = {
        "test_dir": [None, str], "train_dir": [None, str], "fold_dirs": [None, str, list],
        "format": [Options("auto", "xml", "brat")], "label_map": [None, str],
    }
    local_params = ("test_dir", "train_dir", "fold_dirs", "label_map")

    def __init__(self, test_dir=None, train_dir=None, fold_dirs=None, format="auto", label_map=None):
        self._store_params(locals())

    # --- configuration -----------------------------------------------------------
    def _availability(self_or_cls):
        if isinstance(self_or_cls, type):
            return True, ""
        self = self_or_cls
        if not (self.test_dir or self.train_dir or self.fold_dirs):
            return False, "no prediction files configured: give test_dir=..., train_dir=... or fold_dirs=..."
        if self.format not in ("auto", "xml", "brat"):
            return False, f"format must be auto, xml or brat, not {self.format!r}"
        for what, d in (("test_dir", self.test_dir), ("train_dir", self.train_dir)):
            if d and not Path(d).is_dir():
                return False, f"{what} {d} is not a directory"
        if self.fold_dirs and not self._fold_directories():
            return False, f"fold_dirs pattern {self.fold_dirs} matches no directory"
        if self.label_map and not Path(self.label_map).is_file():
            return False, f"label_map {self.label_map} is not a file"
        return True, ""

    availability = hybridmethod(_availability)

    def _fold_directories(self) -> list[Path]:
        return sorted(Path(p) for p in glob.glob(str(self.fold_dirs)) if Path(p).is_dir())

    def _directories(self) -> list[tuple[str, Path]]:
        dirs = []
        if self.test_dir:
            dirs.append(("test_dir", Path(self.test_dir)))
        if self.train_dir:
            dirs.append(("train_dir", Path(self.train_dir)))
        if self.fold_dirs:
            dirs += [("fold_dirs", d) for d in self._fold_directories()]
        return dirs

    def _files_of(self, directory: Path) -> tuple[str, dict[str, Path]]:
        fmt = detect_format(directory) if self.format == "auto" else self.format
        if fmt == "xml":
            return fmt, {p.stem: p for p in sorted(directory.glob("*.xml"))}
        return fmt, {p.stem: p for p in sorted(directory.glob("*.txt"))}

    def input_digest(self) -> str:
        ok, _ = self.availability()
        if not ok:
            return ""
        paths = []
        for _, d in self._directories():
            for p in sorted(d.iterdir()):
                if p.suffix in (".xml", ".txt", ".ann"):
                    paths.append(p)
        if self.label_map:
            paths.append(Path(self.label_map))
        return files_digest(paths)

    # --- fit: index the files -----------------------------------------------------------
    def _prepare(self) -> None:
        index: dict[str, tuple[str, str]] = {}
        origin: dict[str, str] = {}
        for what, d in self._directories():
            try:
                fmt, files = self._files_of(d)
            except Exception as exc:
                raise ExternalOutputError(f"{what} {d}: {exc}") from None
            for doc_id, path in files.items():
                if doc_id in index:
                    raise ExternalOutputError(
                        f"document {doc_id!r} has predictions in two places ({origin[doc_id]} and {d}); "
                        "each document must appear once"
                    )
                index[doc_id] = (str(path), fmt)
                origin[doc_id] = str(d)
        self.index_ = index
        self.label_map_ = LabelMap.load(self.label_map) if self.label_map else None

    # --- predict --------------------------------------------------------------------------
    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        missing = [d.id for d in documents if d.id not in self.index_]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:20])
            more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise ExternalOutputError(
                f"precomputed: no prediction file for {len(missing)} of {len(documents)} document(s): {shown}{more} "
                f"(looked in: {', '.join(str(d) for _, d in self._directories())})"
            )
        out = []
        for doc in documents:
            path, fmt = self.index_[doc.id]
            if fmt == "xml":
                found, problems = read_i2b2_xml(path, doc.id)
            else:
                parents = self.label_map_.parents() if self.label_map_ else None
                found, problems = read_brat(path, parents)
            errors = [p for p in problems if p.severity == ERROR]
            if errors or found is None:
                detail = "; ".join(str(p) for p in errors[:5]) or "unreadable"
                raise ExternalOutputError(f"{path}: prediction file for document {doc.id!r} is unusable: {detail}")
            check_text(doc, found.text, path)
            if self.label_map_ is not None:
                found = self.label_map_.apply_document(found)
            out.append(list(found.annotations))
        return out
