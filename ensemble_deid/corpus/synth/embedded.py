"""The embedded corpora: synthetic train/test sets generated on first use.

``materialize(name, directory)`` writes ``train/`` and ``test/`` under
``directory`` once; later calls find the stamp and return at once. A stamp
that names another spec or generator version (or a folder without a stamp)
is regenerated; a non-empty folder without a stamp is left alone (error).
Generation happens in a temporary folder beside
``directory`` and is moved into place with one rename, under a file lock, so
concurrent callers and interrupted runs never see a half-written corpus.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from ...files import FILE_MODE, private_dir, private_temp_dir, write_private_json

STAMP_NAME = "EMBEDDED.json"


@dataclass(frozen=True)
class EmbeddedSpec:
    style: str
    train_docs: int
    test_docs: int
    seed: int
    description: str = ""


# Sizes keep the demo inside 15 minutes on two cores (12 trained taggers x
# 10-fold CV on both corpora and their union): ~11k training tokens for 2014
# (32 records of 11 patients: 10 patient-grouped folds need 10), ~13k for
# 2016 (15 long notes). Test splits keep 40 documents each, for the
# significance tests. `corpus synth` generates larger corpora.
EMBEDDED_CORPORA: dict[str, EmbeddedSpec] = {
    "synthetic-2014": EmbeddedSpec(
        "i2b2-2014", 32, 40, 2014,
        "synthetic longitudinal diabetic/cardiac records in the style of i2b2 2014",
    ),
    "synthetic-2016": EmbeddedSpec(
        "ngrid-2016", 15, 40, 2016,
        "synthetic psychiatric intake notes in the style of CEGS N-GRID 2016",
    ),
}


def spec_of(name: str) -> EmbeddedSpec:
    try:
        return EMBEDDED_CORPORA[name]
    except KeyError:
        raise KeyError(f"no embedded corpus {name!r}; known: {', '.join(sorted(EMBEDDED_CORPORA))}") from None


def stamp_for(name: str, spec: EmbeddedSpec) -> dict:
    from .generate import FAKER_VERSION, GENERATOR_VERSION

    return {"name": name, **asdict(spec), "generator_version": GENERATOR_VERSION,
            "faker_version": FAKER_VERSION}


def is_complete(name: str, directory: str | Path, spec: EmbeddedSpec | None = None) -> bool:
    """Whether ``directory`` holds this corpus for the current generator."""
    directory = Path(directory)
    spec = spec or spec_of(name)
    try:
        stamp = json.loads((directory / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp == stamp_for(name, spec) and all((directory / s).is_dir() for s in ("train", "test"))


def materialize(
    name: str,
    directory: str | Path,
    train_docs: int | None = None,
    test_docs: int | None = None,
) -> dict[str, Path]:
    """Generate the embedded corpus ``name`` under ``directory`` unless it is
    already there; returns ``{"train": path, "test": path}``.

    ``train_docs`` / ``test_docs`` override the spec's sizes (the stamp
    records them, so a different size regenerates). Raises FileExistsError
    when ``directory`` is a non-empty folder that this function did not write.
    """
    spec = spec_of(name)
    if train_docs is not None or test_docs is not None:
        spec = EmbeddedSpec(spec.style, train_docs or spec.train_docs, test_docs or spec.test_docs,
                            spec.seed, spec.description)
    directory = Path(directory)
    paths = {"train": directory / "train", "test": directory / "test"}
    if is_complete(name, directory, spec):
        return paths
    from filelock import FileLock

    private_dir(directory.parent)
    with FileLock(str(directory.parent / f".{directory.name}.lock"), mode=FILE_MODE):
        if is_complete(name, directory, spec):  # another process made it meanwhile
            return paths
        _build(name, spec, directory)
    return paths


def _build(name: str, spec: EmbeddedSpec, directory: Path) -> None:
    from .generate import generate_corpus, manifest_for, write_corpus

    if directory.exists() and any(directory.iterdir()) and not (directory / STAMP_NAME).exists():
        # Not ours (no stamp): never delete someone's folder.
        raise FileExistsError(f"{directory}: exists, is not empty and holds no {STAMP_NAME}; "
                              "move it away to let the embedded corpus be generated there")

    tmp = private_temp_dir(f".{directory.name}.", ".tmp", directory.parent)
    old: Path | None = None
    try:
        # Test data gets its own seed stream and id range.
        for split, n, seed in (("train", spec.train_docs, spec.seed), ("test", spec.test_docs, spec.seed + 1)):
            docs = generate_corpus(spec.style, n, seed, split)
            private_dir(tmp / split)
            write_corpus(docs, tmp / split, manifest_for(docs, spec.style, seed, split, {}))
        write_private_json(tmp / STAMP_NAME, stamp_for(name, spec))
        if directory.exists():  # stale or incomplete: move aside, then delete
            old = directory.with_name(f".{directory.name}.old.{os.getpid()}")
            os.replace(directory, old)
        os.replace(tmp, directory)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
