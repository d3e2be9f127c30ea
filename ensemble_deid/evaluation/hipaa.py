"""The HIPAA (Safe Harbor) filter of the official program.

Gold and system tags are filtered separately, before matching. A tag is kept
when its (element name, TYPE) pair matches one of the pairs below, each side
by a case-sensitive prefix match, as written in the files (``<NAME
TYPE="CITY">`` is not kept; ``<PHI>`` elements never are). A system tag with a
wrong type that is still a HIPAA pair passes the filter (and counts as a false
positive).
"""
from __future__ import annotations

import re

import numpy as np

from .options import EvalOptions
from .spans import CorpusText, LabelVocab, SpanTable

# (element name, TYPE) prefixes; "" matches every TYPE (the official ".*").
HIPAA_PAIRS = (
    ("NAME", "PATIENT"),
    ("LOCATION", "CITY"), ("LOCATION", "STREET"), ("LOCATION", "ZIP"), ("LOCATION", "ORGANIZATION"),
    ("DATE", ""),
    ("CONTACT", "PHONE"), ("CONTACT", "FAX"), ("CONTACT", "EMAIL"),
    ("ID", "SSN"), ("ID", "MEDICALRECORD"), ("ID", "HEALTHPLAN"), ("ID", "ACCOUNT"), ("ID", "LICENSE"),
    ("ID", "VEHICLE"), ("ID", "DEVICE"), ("ID", "BIOID"),
    ("AGE", ""),
)
# The official IDNUM pattern carries a trailing space, so no real TYPE matches it.
OFFICIAL_IDNUM_PATTERN = "IDNUM "
AGE_PAIR = ("AGE", "")
SAFE_HARBOR_MAX_AGE = 89
_DIGITS = re.compile(r"\d+")


def hipaa_pairs(options: EvalOptions) -> tuple[tuple[str, str], ...]:
    return HIPAA_PAIRS + (("ID", OFFICIAL_IDNUM_PATTERN if options.hipaa_exclude_idnum else "IDNUM"),)


def pair_passes(name: str, type_: str, options: EvalOptions) -> bool:
    """Whether an (element name, TYPE) pair passes the filter (before any age rule)."""
    name, type_ = str(name), str(type_)
    return any(name.startswith(n) and type_.startswith(t) for n, t in hipaa_pairs(options))


def age_only(name: str, type_: str, options: EvalOptions) -> bool:
    """Whether the pair passes only through the AGE pattern."""
    name, type_ = str(name), str(type_)
    return name.startswith(AGE_PAIR[0]) and not any(
        name.startswith(n) and type_.startswith(t) for n, t in hipaa_pairs(options) if (n, t) != AGE_PAIR
    )


def age_over_limit(covered: str) -> bool:
    """Safe Harbor age rule: an age over 89. Text without digits is kept
    (a spelled-out age cannot be ruled out)."""
    numbers = _DIGITS.findall(covered)
    return not numbers or any(int(n) > SAFE_HARBOR_MAX_AGE for n in numbers)


def hipaa_mask(table: SpanTable, vocab: LabelVocab, corpus: CorpusText, options: EvalOptions) -> np.ndarray:
    """Boolean mask of the tags of ``table`` that the HIPAA filter keeps."""
    passes = np.fromiter((pair_passes(c, t, options) for c, t in vocab.pairs), dtype=bool, count=len(vocab))
    mask = passes[table.label] if len(table) else np.zeros(0, dtype=bool)
    if not options.hipaa_all_ages and len(table):
        only_age = np.fromiter((age_only(c, t, options) for c, t in vocab.pairs), dtype=bool, count=len(vocab))
        rows = np.flatnonzero(only_age[table.label])
        for i in rows.tolist():
            text = corpus.texts[int(table.doc[i])][int(table.start[i]):int(table.end[i])]
            mask[i] = age_over_limit(text)
    return mask


# Categories that hold HIPAA types under the i2b2 2014 scheme besides the all-TYPE ones (DATE, AGE).
_TYPED_CATEGORIES = ("NAME", "LOCATION", "CONTACT", "ID")


def coverage_warning(table: SpanTable, vocab: LabelVocab, kept: np.ndarray) -> str | None:
    """A warning when the gold labels barely fit the HIPAA filter: it keeps
    under half of the gold spans and none of at least one category that holds
    HIPAA types in the i2b2 scheme (NAME, LOCATION, CONTACT, ID). That is
    another label scheme (MEDDOCAN's NOMBRE_SUJETO_ASISTENCIA is no PATIENT),
    and the hipaa_* figures then cover only the categories named."""
    total = len(table)
    if not total or 2 * int(kept.sum()) >= total:
        return None
    category = np.array([c for c, _ in vocab.pairs] or [""], dtype=object)[table.label]
    spans: dict[str, int] = {}
    passed: dict[str, int] = {}
    for cat, keep in zip(category.tolist(), kept.tolist()):
        spans[cat] = spans.get(cat, 0) + 1
        passed[cat] = passed.get(cat, 0) + keep
    missed = [c for c in _TYPED_CATEGORIES if spans.get(c) and not passed.get(c)]
    if not missed:
        return None
    covered = sorted(c for c, n in passed.items() if n)
    return (f"the HIPAA filter keeps {int(kept.sum()):,} of {total:,} gold spans ({100 * kept.sum() / total:.0f}%): "
            f"no {', '.join(missed)} span has a TYPE it knows (it knows the i2b2 2014 types, e.g. NAME/PATIENT, "
            f"CONTACT/EMAIL, ID/MEDICALRECORD), so the hipaa_* figures cover "
            f"{'only ' + ', '.join(covered) if covered else 'none of the gold spans'}; "
            f"map the labels (--label-map) to score HIPAA PHI")
