"""SemEval-2013 task 9.1 schemes (as in nervaluate): strict, exact, partial, type.

Each system tag is classified against the gold tags of its document:
exact match (same boundaries and label); else the first gold tag in document
order that overlaps it decides: same boundaries with another label, overlap
with the same label, or overlap with another label; no overlap: spurious. Gold
tags no system tag was attributed to are missed. Labels are (name, TYPE),
upper-cased; duplicate tags collapse first.

| situation                    | strict    | exact     | partial | type      |
|------------------------------|-----------|-----------|---------|-----------|
| exact match                  | correct   | correct   | correct | correct   |
| same boundaries, other label | incorrect | correct   | correct | incorrect |
| overlap, same label          | incorrect | incorrect | partial | correct   |
| overlap, other label         | incorrect | incorrect | partial | incorrect |

possible = correct + incorrect + partial + missed; actual = correct +
incorrect + partial + spurious; precision = (correct + partial/2) / actual and
recall = (correct + partial/2) / possible (partial is 0 outside "partial").
"""
from __future__ import annotations

import numpy as np

from .keys import KeySet, KeySpace, sorted_isin

# Columns of the per-document situation counts.
EXACT, BOUNDARY_TYPE, OVERLAP_SAME, OVERLAP_OTHER, SPURIOUS, MISSED = range(6)
OUTCOMES = ("correct", "incorrect", "partial", "missed", "spurious")


def situations(gold: KeySet, system: KeySet, space: KeySpace, n_docs: int) -> np.ndarray:
    """Counts of the six situations per document, shape (n_docs, 6).

    ``gold`` and ``system`` hold keys whose labels are ranks of the sorted
    (NAME, TYPE) pairs, so sorted keys are in document order."""
    counts = np.zeros((n_docs, 6), dtype=np.int64)
    G, S = gold.keys, system.keys
    nl, w = space.n_labels, space.width
    g_start = G // (nl * w)
    g_end = g_start + (G // nl) % w
    s_start = S // (nl * w)
    s_end = s_start + (S // nl) % w
    exact = sorted_isin(S, G)
    counts[:, EXACT] = np.bincount(system.doc[exact], minlength=n_docs)
    rest = np.flatnonzero(~exact)
    # first gold tag in document order overlapping each other system tag:
    # the first whose running maximum end passes the system start, provided
    # it starts before the system end
    reach = np.maximum.accumulate(g_end) if len(G) else g_end
    lo = np.searchsorted(reach, s_start[rest], side="right")
    hi = np.searchsorted(g_start, s_end[rest], side="left")
    hit = lo < hi
    counts[:, SPURIOUS] = np.bincount(system.doc[rest[~hit]], minlength=n_docs)
    k, r = lo[hit], rest[hit]
    doc = system.doc[r]
    boundary = (g_start[k] == s_start[r]) & (g_end[k] == s_end[r])
    same = gold.label[k] == system.label[r]
    counts[:, BOUNDARY_TYPE] = np.bincount(doc[boundary], minlength=n_docs)
    counts[:, OVERLAP_SAME] = np.bincount(doc[~boundary & same], minlength=n_docs)
    counts[:, OVERLAP_OTHER] = np.bincount(doc[~boundary & ~same], minlength=n_docs)
    matched = np.zeros(len(G), dtype=bool)
    matched[np.searchsorted(G, S[exact])] = True
    matched[k] = True
    counts[:, MISSED] = np.bincount(gold.doc[~matched], minlength=n_docs)
    return counts


def scheme_outcomes(sit: np.ndarray, scheme: str) -> np.ndarray:
    """(…, 5) array of correct, incorrect, partial, missed, spurious."""
    em, bt, os_, oo = sit[..., EXACT], sit[..., BOUNDARY_TYPE], sit[..., OVERLAP_SAME], sit[..., OVERLAP_OTHER]
    zero = np.zeros_like(em)
    if scheme == "strict":
        cor, inc, par = em, bt + os_ + oo, zero
    elif scheme == "exact":
        cor, inc, par = em + bt, os_ + oo, zero
    elif scheme == "partial":
        cor, inc, par = em + bt, zero, os_ + oo
    elif scheme == "type":
        cor, inc, par = em + os_, bt + oo, zero
    else:
        raise ValueError(f"unknown SemEval scheme {scheme!r}")
    return np.stack([cor, inc, par, sit[..., MISSED], sit[..., SPURIOUS]], axis=-1)


def outcome_counts(outcomes: np.ndarray, scheme: str):
    """TP, FP, FN equivalents: TP = correct + partial/2, FP = actual − TP,
    FN = possible − TP (floats for the partial scheme, ints otherwise)."""
    cor, inc, par, mis, spu = (outcomes[..., i] for i in range(5))
    tp = cor + 0.5 * par if scheme == "partial" else cor
    return tp, cor + inc + par + spu - tp, cor + inc + par + mis - tp
