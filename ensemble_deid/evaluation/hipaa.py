"""The HIPAA (Safe Harbor) filter of the official program.

Gold and system tags are filtered separately, before matching, by a
case-sensitive prefix match of the tag's TYPE against the patterns below. A
system tag with a wrong type that is still a HIPAA type passes the filter (and
counts as a false positive).
"""
from __future__ import annotations

import re

import numpy as np

from .options import EvalOptions
from .spans import CorpusText, LabelVocab, SpanTable

# NAME/PATIENT; LOCATION/CITY, STREET, ZIP, ORGANIZATION; DATE; CONTACT/PHONE,
# FAX, EMAIL; ID/SSN ... BIOID; AGE. IDNUM is added per the options.
HIPAA_TYPES = (
    "PATIENT", "CITY", "STREET", "ZIP", "ORGANIZATION", "DATE", "PHONE", "FAX", "EMAIL",
    "SSN", "MEDICALRECORD", "HEALTHPLAN", "ACCOUNT", "LICENSE", "VEHICLE", "DEVICE", "BIOID",
    "AGE",
)
# The official IDNUM pattern carries a trailing space, so no real TYPE matches it.
OFFICIAL_IDNUM_PATTERN = "IDNUM "
SAFE_HARBOR_MAX_AGE = 89
_DIGITS = re.compile(r"\d+")


def hipaa_patterns(options: EvalOptions) -> tuple[str, ...]:
    return HIPAA_TYPES + ((OFFICIAL_IDNUM_PATTERN,) if options.hipaa_exclude_idnum else ("IDNUM",))


def type_passes(type_: str, options: EvalOptions) -> bool:
    """Whether a TYPE passes the filter by its name alone (before any age rule)."""
    return str(type_).startswith(hipaa_patterns(options))


def _age_only(type_: str, options: EvalOptions) -> bool:
    """Whether the type passes only through the AGE pattern."""
    others = tuple(p for p in hipaa_patterns(options) if p != "AGE")
    return str(type_).startswith("AGE") and not str(type_).startswith(others)


def age_over_limit(covered: str) -> bool:
    """Safe Harbor age rule: an age over 89. Text without digits is kept
    (a spelled-out age cannot be ruled out)."""
    numbers = _DIGITS.findall(covered)
    return not numbers or any(int(n) > SAFE_HARBOR_MAX_AGE for n in numbers)


def hipaa_mask(table: SpanTable, vocab: LabelVocab, corpus: CorpusText, options: EvalOptions) -> np.ndarray:
    """Boolean mask of the tags of ``table`` that the HIPAA filter keeps."""
    passes = np.fromiter((type_passes(t, options) for _, t in vocab.pairs), dtype=bool, count=len(vocab))
    mask = passes[table.label] if len(table) else np.zeros(0, dtype=bool)
    if not options.hipaa_all_ages and len(table):
        age_only = np.fromiter((_age_only(t, options) for _, t in vocab.pairs), dtype=bool, count=len(vocab))
        rows = np.flatnonzero(age_only[table.label])
        for i in rows.tolist():
            text = corpus.texts[int(table.doc[i])][int(table.start[i]):int(table.end[i])]
            mask[i] = age_over_limit(text)
    return mask
