"""Category mix of a corpus against the real corpus a style imitates.

The reference counts are the test-set instances per parent category of the
real corpora (methods.md section 1; [KIM20]).
"""
from __future__ import annotations

from typing import Sequence

from ..document import Document

CATEGORIES = ("NAME", "PROFESSION", "LOCATION", "AGE", "DATE", "CONTACT", "ID")

REAL_TEST_COUNTS: dict[str, dict[str, int]] = {
    "i2b2-2014": {"NAME": 2883, "PROFESSION": 179, "LOCATION": 1813, "AGE": 764,
                  "DATE": 4980, "CONTACT": 218, "ID": 625},
    "ngrid-2016": {"NAME": 2404, "PROFESSION": 1010, "LOCATION": 3771, "AGE": 2354,
                   "DATE": 3821, "CONTACT": 126, "ID": 33},
}


def proportions(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.get(c, 0) for c in CATEGORIES)
    return {c: (counts.get(c, 0) / total if total else 0.0) for c in CATEGORIES}


def category_counts(docs: Sequence[Document]) -> dict[str, int]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for doc in docs:
        for ann in doc.annotations:
            counts[ann.category] = counts.get(ann.category, 0) + 1
    return counts


def category_mix(docs: Sequence[Document]) -> dict[str, float]:
    """Share of PHI instances per parent category (the seven of the scheme)."""
    return proportions(category_counts(docs))


def mix_deviation(docs: Sequence[Document], style: str) -> dict[str, float]:
    """Measured minus real share, per category, in percentage points."""
    real = proportions(REAL_TEST_COUNTS[style])
    measured = category_mix(docs)
    return {c: 100 * (measured[c] - real[c]) for c in CATEGORIES}
