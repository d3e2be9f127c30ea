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
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .document import Document
from ..errors import EnsembleDeidError, did_you_mean
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
    def _read_manifest(self) -> dict:
        if not self.manifest_path.exists():
            return {"version": MANIFEST_VERSION, "corpora": {}}
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise EnsembleDeidError(f"{self.manifest_path}: unreadable corpus registry ({exc})") from exc
        if data.get("version") != MANIFEST_VERSION:
            raise EnsembleDeidError(f"{self.manifest_path}: registry version {data.get('version')} is not {MANIFEST_VERSION}")
        return data

    def _write_manifest(self, data: dict) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.manifest_path.with_name(f".corpora.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
        os.replace(tmp, self.manifest_path)

    def corpus_specs(self) -> dict[str, CorpusSpec]:
        data = self._read_manifest()
        return {name: CorpusSpec(name=name, **entry) for name, entry in sorted(data["corpora"].items())}

    def add_corpus(self, spec: CorpusSpec, replace: bool = False) -> CorpusSpec:
        for split in ("train", "test"):
            if split not in spec.splits:
                raise EnsembleDeidError(f"corpus {spec.name!r}: a {split} split is required")
        spec.splits = {
            s: [str(Path(x).resolve()) for x in p] if isinstance(p, (list, tuple)) else str(Path(p).resolve())
            for s, p in spec.splits.items()
        }
        if spec.label_map:
            spec.label_map = str(Path(spec.label_map).resolve())
        data = self._read_manifest()
        if spec.name in data["corpora"] and not replace:
            raise EnsembleDeidError(f"corpus {spec.name!r} is already registered (use --replace)")
        data["corpora"][spec.name] = spec.to_dict()
        self._write_manifest(data)
        return spec

    def remove_corpus(self, name: str) -> None:
        data = self._read_manifest()
        if name not in data["corpora"]:
            raise UnknownCorpus(f"no corpus named {name!r}")
        del data["corpora"][name]
        self._write_manifest(data)

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
        spec = self.spec(name)
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

        paths = materialize(name, self.state_dir / "embedded" / name)
        spec = CorpusSpec(name, {s: str(p) for s, p in paths.items()}, "xml", embedded=True)
        return self.add_corpus(spec, replace=True)


def _check_unique_ids(docs: list[Document], corpus: str, split: str) -> None:
    seen: dict[str, str] = {}
    for doc in docs:
        source = str(doc.metadata.get("source", "?"))
        if doc.id in seen:
            raise EnsembleDeidError(
                f"corpus {corpus!r} {split}: document id {doc.id!r} appears in {seen[doc.id]} and {source}"
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
