"""Synthetic de-identification corpora in the styles of i2b2 2014 and N-GRID 2016.

Public API:

- ``generate_corpus(style, n_docs, seed, split="train", first_id=None)`` ->
  list of Documents with exact gold spans;
- ``synthesize(style, n_docs, seed, out, split="train", ...)`` writes them as
  i2b2 XML plus a ``SYNTH.json`` manifest (same seed + version = same bytes);
- ``EMBEDDED_CORPORA`` and ``materialize(name, directory)``: the embedded
  ``synthetic-2014`` / ``synthetic-2016`` train/test sets, generated on first use;
- ``category_mix(docs)`` / ``REAL_TEST_COUNTS``: the category mix against the
  real corpora.

Faker is imported only when something is generated.
"""
from __future__ import annotations

from .embedded import EMBEDDED_CORPORA, EmbeddedSpec, is_complete, materialize
from .generate import (
    GENERATOR_VERSION, MANIFEST_NAME, SPLITS, STYLES, generate_corpus, synthesize, write_corpus,
)
from .mix import CATEGORIES, REAL_TEST_COUNTS, category_counts, category_mix, mix_deviation

__all__ = [
    "CATEGORIES", "EMBEDDED_CORPORA", "EmbeddedSpec", "GENERATOR_VERSION", "MANIFEST_NAME",
    "REAL_TEST_COUNTS", "SPLITS", "STYLES", "category_counts", "category_mix", "generate_corpus",
    "is_complete", "materialize", "mix_deviation", "synthesize", "write_corpus",
]
