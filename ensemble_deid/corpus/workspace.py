"""The workspace: a folder holding the corpus registry, the embedded corpora,
the prediction cache and study results.

    WORKSPACE/
      .ensemble-deid/corpora.json     registered corpora (paths, options)
      .ensemble-deid/embedded/NAME/   embedded synthetic corpora, made on first use
      cached_predictions/             the prediction cache (see cache.py)
      results/                        study outputs
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator

from .document import Document
from ..errors import EnsembleDeidError, did_you_mean, printable
from ..files import FILE_MODE, private_dir, write_private_json
from .fingerprint import corpus_fingerprint
from .formats import I2B2_GROUP_PATTERN, load_directory
from .labelmap import LabelMap

SPLITS = ("train", "dev", "test")
MANIFEST_VERSION = 1


class UnknownCorpus(EnsembleDeidError):
    pass


@dataclass
class CorpusSpec:
    """How to load a registered corpus."""

    name: str
    splits: dict[str, str | list[str]]  # split -> absolute directory (or several, read in order)
    format: str = "auto"
    label_map: str | None = None
    group_pattern: str | None = I2B2_GROUP_PATTERN
    embedded: bool = False

    def to_dict(self) -> dict:
        return {
            "splits": self.splits, "format": self.format, "label_map": self.label_map,
            "group_pattern": self.group_pattern, "embedded": self.embedded,
        }

    def resolved(self) -> "CorpusSpec":
        """The same spec with absolute paths (what the registry records)."""
        for split in ("train", "test"):
            if split not in self.splits:
                raise EnsembleDeidError(f"corpus {self.name!r}: a {split} split is required")
        splits = {
            s: [str(Path(x).resolve()) for x in p] if isinstance(p, (list, tuple)) else str(Path(p).resolve())
            for s, p in self.splits.items()
        }
        label_map = str(Path(self.label_map).resolve()) if self.label_map else None
        return CorpusSpec(self.name, splits, self.format, label_map, self.group_pattern, self.embedded)


# The registry's shape: what each entry's fields may hold.
_ENTRY_FIELDS = {
    "splits": dict, "format": str, "label_map": (str, type(None)),
    "group_pattern": (str, type(None)), "embedded": bool,
}


def _check_registry(data: object, path: Path) -> dict:
    """The registry as read, or an error naming the file, corpus and field
    that do not have the expected shape (hand edits, another tool's file)."""
    where = printable(path)
    if not isinstance(data, dict) or not isinstance(data.get("corpora"), dict):
        raise EnsembleDeidError(f"{where}: not a corpus registry (expected an object with 'version' and 'corpora')")
    version = data.get("version")
    if type(version) is not int or version != MANIFEST_VERSION:
        raise EnsembleDeidError(f"{where}: registry version {version!r} is not the number {MANIFEST_VERSION} this version reads")
    for name, entry in data["corpora"].items():
        if not isinstance(entry, dict):
            raise EnsembleDeidError(f"{where}: corpus {name!r}: entry is not an object")
        for key, value in entry.items():
            if key not in _ENTRY_FIELDS:
                raise EnsembleDeidError(f"{where}: corpus {name!r}: unknown field {key!r}")
            if not isinstance(value, _ENTRY_FIELDS[key]):
                raise EnsembleDeidError(f"{where}: corpus {name!r}: field {key!r} has the wrong type")
        splits = entry.get("splits")
        if not splits or not all(
            isinstance(s, str) and (isinstance(p, str) or (isinstance(p, list) and p and all(isinstance(x, str) for x in p)))
            for s, p in (splits or {}).items()
        ):
            raise EnsembleDeidError(f"{where}: corpus {name!r}: field 'splits' must map split names to folders")
    return data


@dataclass
class Corpus:
    """A loaded corpus: documents per split (train and test at least)."""

    name: str
    splits: dict[str, list[Document]]
    spec: CorpusSpec | None = field(default=None, repr=False)

    @property
    def train(self) -> list[Document]:
        return self.splits["train"]

    @property
    def test(self) -> list[Document]:
        return self.splits["test"]

    @cached_property
    def fingerprints(self) -> dict[str, str]:
        return {split: corpus_fingerprint(docs) for split, docs in self.splits.items()}

    def fingerprint(self, split: str = "train") -> str:
        return self.fingerprints[split]


class Workspace:
    def __init__(self, root: str | Path = "."):
        self.root = Path(root).resolve()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @property
    def state_dir(self) -> Path:
        return self.root / ".ensemble-deid"

    @property
    def manifest_path(self) -> Path:
        return self.state_dir / "corpora.json"

    @property
    def cache_dir(self) -> Path:
        return Path(os.environ.get("ENSEMBLE_DEID_CACHE", self.root / "cached_predictions"))

    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    # --- manifest -----------------------------------------------------------
    def private_state_dir(self) -> Path:
        """``.ensemble-deid/``, created owner-only (and the workspace root, if missing)."""
        return private_dir(self.state_dir, root=self.state_dir)

    def _read_manifest(self) -> dict:
        if not self.manifest_path.exists():
            return {"version": MANIFEST_VERSION, "corpora": {}}
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not valid JSON"
            raise EnsembleDeidError(f"{printable(self.manifest_path)}: unreadable corpus registry ({reason})") from exc
        return _check_registry(data, self.manifest_path)

    @contextmanager
    def _registry_update(self) -> Iterator[dict]:
        """Read, change and write the registry under an inter-process lock, so
        concurrent ``corpus add`` runs never lose each other's registrations."""
        from filelock import FileLock

        self.private_state_dir()
        with FileLock(str(self.manifest_path) + ".lock", mode=FILE_MODE):
            data = self._read_manifest()
            yield data
            write_private_json(self.manifest_path, data, fsync=True)

    def corpus_specs(self) -> dict[str, CorpusSpec]:
        data = self._read_manifest()
        return {name: CorpusSpec(name=name, **entry) for name, entry in sorted(data["corpora"].items())}

    def check_new(self, name: str, replace: bool = False) -> None:
        if not name.strip():  # an empty name could never be given to --corpus
            raise EnsembleDeidError("a corpus name cannot be empty")
        if name in self._read_manifest()["corpora"] and not replace:
            raise EnsembleDeidError(f"corpus {name!r} is already registered (use --replace)")

    def add_corpus(self, spec: CorpusSpec, replace: bool = False) -> CorpusSpec:
        """Record ``spec`` (paths made absolute) in the registry, in one atomic write."""
        spec = spec.resolved()
        if not spec.name.strip():
            raise EnsembleDeidError("a corpus name cannot be empty")
        with self._registry_update() as data:
            if spec.name in data["corpora"] and not replace:
                raise EnsembleDeidError(f"corpus {spec.name!r} is already registered (use --replace)")
            data["corpora"][spec.name] = spec.to_dict()
        return spec

    def remove_corpus(self, name: str) -> None:
        with self._registry_update() as data:
            if name not in data["corpora"]:
                raise UnknownCorpus(f"no corpus named {name!r}")
            del data["corpora"][name]

    # --- loading --------------------------------------------------------------
    def spec(self, name: str) -> CorpusSpec:
        specs = self.corpus_specs()
        if name in specs:
            return specs[name]
        embedded = _embedded_corpora()
        if name in embedded:
            return self._materialize_embedded(name)
        known = sorted(set(specs) | set(embedded))
        raise UnknownCorpus(f"no corpus named {name!r} in workspace {self.root}{did_you_mean(name, known)}; known: "
                            f"{', '.join(known) or 'none'} (register one with 'corpus add', or set ENSEMBLE_DEID_HOME)")

    def load(self, name: str) -> Corpus:
        return self.load_spec(self.spec(name))

    def load_spec(self, spec: CorpusSpec) -> Corpus:
        """Load every split of ``spec``, registered or not (``corpus add``
        loads before it registers)."""
        name = spec.name
        label_map = LabelMap.load(spec.label_map) if spec.label_map else None
        splits = {}
        for split, paths in sorted(spec.splits.items(), key=lambda kv: _split_order(kv[0])):
            docs: list[Document] = []
            for path in paths if isinstance(paths, list) else [paths]:
                docs += load_directory(path, spec.format, label_map, spec.group_pattern)
            _check_unique_ids(docs, name, split)
            splits[split] = docs
        return Corpus(name, splits, spec)

    def _materialize_embedded(self, name: str) -> CorpusSpec:
        from .synth.embedded import materialize

        private_dir(self.state_dir / "embedded", root=self.state_dir)
        paths = materialize(name, self.state_dir / "embedded" / name)
        spec = CorpusSpec(name, {s: str(p) for s, p in paths.items()}, "xml", embedded=True)
        return self.add_corpus(spec, replace=True)


def _check_unique_ids(docs: list[Document], corpus: str, split: str) -> None:
    seen: dict[str, str] = {}
    for doc in docs:
        source = str(doc.metadata.get("source", "?"))
        if doc.id in seen:
            raise EnsembleDeidError(
                f"corpus {corpus!r} {split}: document id {doc.id!r} appears in {printable(seen[doc.id])} and {printable(source)}"
            )
        seen[doc.id] = source


def _split_order(split: str) -> tuple[int, str]:
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), split)


def _embedded_corpora() -> dict:
    try:
        from .synth.embedded import EMBEDDED_CORPORA
    except ImportError:  # the generator is optional for reading registered corpora
        return {}
    return EMBEDDED_CORPORA
