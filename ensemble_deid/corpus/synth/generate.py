"""Generating a synthetic corpus and writing it as a folder of i2b2 XML.

The same style, size, seed, split and ``GENERATOR_VERSION`` give the same
bytes. Bump ``GENERATOR_VERSION`` whenever any output can change (templates,
lists, weights, the pinned Faker version): embedded corpora are regenerated
when their stamp's version differs.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Sequence

from ..document import Document
from ...files import private_dir, private_temp_dir, write_private_json
from ..formats import write_i2b2_xml

GENERATOR_VERSION = "3"
FAKER_VERSION = "40.54.0"  # pyproject pins it; output changes across versions
MANIFEST_NAME = "SYNTH.json"
STYLES = ("i2b2-2014", "ngrid-2016")
SPLITS = ("train", "test")
# Test splits see the rare formats (dates, ages) more often than train
# splits, as a held-out set of a real corpus holds forms training never saw.
RARE_BOOST = {"train": 1.0, "test": 4.0}
# Weight of each rare sentence frame (``RARE_FRAMES`` in the style modules)
# against 1.0 for a common one: training sees each rare phrasing a few times
# at most, test splits see them about half as often as a common one, as a
# held-out set written by other hands holds phrasings training never saw.
RARE_FRAME_WEIGHT = {"train": 0.06, "test": 0.6}
# Default first patient / note number per style and split, so train and
# test ids never collide: 2014 patients are PPP (100-599 train, 600-999
# test), 2016 notes NNNN (0001-4999 train, 5001-9999 test).
FIRST_ID = {("i2b2-2014", "train"): 100, ("i2b2-2014", "test"): 600,
            ("ngrid-2016", "train"): 1, ("ngrid-2016", "test"): 5001}


def _style_module(style: str):
    if style == "i2b2-2014":
        from . import style_2014 as module
    elif style == "ngrid-2016":
        from . import style_2016 as module
    else:
        raise ValueError(f"unknown style {style!r}; expected one of {', '.join(STYLES)}")
    return module


def check_faker_version() -> None:
    import faker

    if faker.VERSION != FAKER_VERSION:
        raise RuntimeError(
            f"Faker {faker.VERSION} is installed but the synthetic corpora are defined with "
            f"Faker {FAKER_VERSION}; install faker=={FAKER_VERSION} (output would differ)"
        )


def generate_corpus(
    style: str,
    n_docs: int,
    seed: int,
    split: str = "train",
    first_id: int | None = None,
) -> list[Document]:
    """``n_docs`` documents of ``style`` with gold PHI annotations."""
    module = _style_module(style)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    if n_docs < 1:
        raise ValueError("n_docs must be at least 1")
    check_faker_version()
    first = FIRST_ID[(style, split)] if first_id is None else first_id
    metadata = {"generator": "ensemble-deid synth", "generator_version": GENERATOR_VERSION,
                "style": style, "seed": seed, "split": split}
    return module.generate(n_docs, seed, first_id=first, rare_boost=RARE_BOOST[split],
                           rare_frames=RARE_FRAME_WEIGHT[split], metadata=metadata)


def manifest_for(docs: Sequence[Document], style: str, seed: int, split: str,
                 hashes: dict[str, str]) -> dict:
    return {
        "generator": "ensemble-deid synth",
        "generator_version": GENERATOR_VERSION,
        "faker_version": FAKER_VERSION,
        "style": style,
        "seed": seed,
        "split": split,
        "docs": len(docs),
        "phi": sum(len(d.annotations) for d in docs),
        "files": dict(sorted(hashes.items())),
    }


def write_corpus(docs: Sequence[Document], directory: str | Path, manifest: dict | None = None) -> list[Path]:
    """Write each document as ``<id>.xml`` (0600) into an existing folder,
    then the manifest (file hashes added) if one is given."""
    directory = Path(directory)
    paths, hashes = [], {}
    for doc in docs:
        path = write_i2b2_xml(doc, directory / f"{doc.id}.xml")
        hashes[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        paths.append(path)
    if manifest is not None:
        manifest = dict(manifest, files=dict(sorted(hashes.items())))
        write_private_json(directory / MANIFEST_NAME, manifest)
    return paths


def synthesize(
    style: str,
    n_docs: int,
    seed: int,
    out: str | Path,
    split: str = "train",
    first_id: int | None = None,
    overwrite: bool = False,
) -> list[Document]:
    """Generate a corpus and write it to ``out`` with its ``SYNTH.json``.

    ``out`` must not exist or hold no corpus files, unless ``overwrite``
    (which replaces the .xml files and the manifest, nothing else). Files are
    written into a temporary folder beside ``out`` first, so a failure leaves
    no half-written corpus.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a directory")
    existing = sorted(out.glob("*.xml")) + sorted(out.glob(MANIFEST_NAME)) if out.is_dir() else []
    if existing and not overwrite:
        raise FileExistsError(f"{out}: already holds {len(existing)} corpus file(s); use overwrite to replace them")
    docs = generate_corpus(style, n_docs, seed, split, first_id)
    private_dir(out.parent)
    tmp = private_temp_dir(f".{out.name}.", ".tmp", out.parent)
    try:
        write_corpus(docs, tmp, manifest_for(docs, style, seed, split, {}))
        if not out.exists():
            os.replace(tmp, out)
        else:
            for path in existing:
                path.unlink()
            for path in sorted(tmp.iterdir()):
                os.replace(path, out / path.name)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return docs
