"""Relaxed matching: same name, start and TYPE; ends within 2 characters.

The official program does this with Python sets whose equality ignores up to
2 characters of end difference. That is not an equivalence, and it has three
consequences reproduced here (``relaxed_many_to_one=True``):

1. Building a set drops a tag equal to one already in it: within one side,
   tags sharing (name, start, TYPE) are inserted in the order they were given
   (the file's order for files) and a tag whose end is within 2 of any tag
   already kept is dropped. So the result can depend on that order: ends
   12, 10, 14 keep only 12, while 10, 12, 14 keep 10 and 14.
2. FP = system tags with no gold tag within 2; FN = gold tags with no system
   tag within 2.
3. TP = ``len(gold & system)``, and Python's set intersection walks the smaller
   set (the system set when sizes are equal), so TP is the number of matched
   gold tags when the document's system set is larger than its gold set, and
   the number of matched system tags otherwise. Hence one gold tag can absorb
   several system tags (gold end E, system ends E-2 and E+2: TP 1, FP 0).

These are Python 2.7 semantics, the official program's (under Python 3 a set
difference with one set over 4 times the other discards instead of
filtering, which changes FP or FN in rare cases). The insertion order (1.) is
the row order of the tags: file order when scoring files (``evaluate`` on
folders), (start, end) order for ``Document.annotations``.

With ``relaxed_many_to_one=False`` tags are matched one to one (a maximum
matching within each (name, start, TYPE) group): TP = pairs, FP and FN = the
rest.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .keys import KeySpace

TOLERANCE = 2


PAD = 2 * TOLERANCE + 1  # KeySpace.for_corpus(..., pad=PAD): groups stay > 2*TOLERANCE apart


@dataclass(frozen=True)
class RelaxedKeys:
    """One side's relaxed keys, sorted and unique, with the input position of
    each key's first occurrence (the set-building order)."""

    keys: np.ndarray
    rank: np.ndarray


def relaxed_keys(gstart: np.ndarray, length: np.ndarray, label: np.ndarray, space: KeySpace) -> RelaxedKeys:
    """Keys ordered by (start, label, length): a group (same start and label)
    is contiguous and ordered by end. ``space`` must have been made with
    ``pad=PAD``."""
    keys = (gstart * space.n_labels + label) * space.width + length
    order = np.argsort(keys, kind="stable")  # equal keys: the earliest first
    keys = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return RelaxedKeys(keys[first], order[first])


def collapse(side: RelaxedKeys) -> np.ndarray:
    """Set building: insert the keys in input order, dropping each key within
    TOLERANCE of a key already kept. Only chains of keys linked by gaps of at
    most TOLERANCE can interact, so only those are walked in Python."""
    keys = side.keys
    close = np.diff(keys) <= TOLERANCE
    if not close.any():
        return keys
    keep = np.ones(len(keys), dtype=bool)
    vals, ranks = keys.tolist(), side.rank.tolist()
    links = np.flatnonzero(close).tolist()
    chains: list[list[int]] = []
    for i in links:
        if chains and chains[-1][-1] == i:
            chains[-1].append(i + 1)
        else:
            chains.append([i, i + 1])
    for chain in chains:
        kept: list[int] = []
        for m in sorted(chain, key=ranks.__getitem__):
            if any(abs(vals[m] - vals[k]) <= TOLERANCE for k in kept):
                keep[m] = False
            else:
                kept.append(m)
    return keys[keep]


def _window(keys: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Number of ``other`` keys within TOLERANCE of each key (same group,
    since groups are more than 2*TOLERANCE apart)."""
    lo = np.searchsorted(other, keys - TOLERANCE, side="left")
    hi = np.searchsorted(other, keys + TOLERANCE, side="right")
    return hi - lo


def _one_to_one_pairs(gold: np.ndarray, system: np.ndarray, cnt_g: np.ndarray, cnt_s: np.ndarray, w: int) -> np.ndarray:
    """System mask of paired keys under a maximum one-to-one matching."""
    paired = cnt_s > 0
    contested = np.union1d(gold[cnt_g > 1] // w, system[cnt_s > 1] // w)
    if not len(contested):
        return paired  # every matched tag has exactly one partner
    g_grp, s_grp = gold // w, system // w
    for grp in contested.tolist():
        g_lo, g_hi = np.searchsorted(g_grp, [grp, grp + 1])
        s_lo, s_hi = np.searchsorted(s_grp, [grp, grp + 1])
        a, b = gold[g_lo:g_hi].tolist(), system[s_lo:s_hi].tolist()
        paired[s_lo:s_hi] = False
        i = j = 0
        while i < len(a) and j < len(b):  # greedy on sorted ends is maximum
            if abs(a[i] - b[j]) <= TOLERANCE:
                paired[s_lo + j] = True
                i += 1
                j += 1
            elif a[i] < b[j]:
                i += 1
            else:
                j += 1
    return paired


def relaxed_counts(
    gold: np.ndarray,
    system: np.ndarray,
    space: KeySpace,
    doc_of,
    n_docs: int,
    many_to_one: bool = True,
    group_of_label: np.ndarray | None = None,
    n_groups: int = 1,
):
    """TP, FP, FN of shape (n_docs,) or, with groups, (n_docs, n_groups).

    ``gold`` and ``system`` come from relaxed_keys; ``doc_of`` maps global
    start offsets to document indices."""
    w = space.width
    if many_to_one:
        gold, system = collapse(gold), collapse(system)
    else:
        gold, system = gold.keys, system.keys

    def cells(keys):
        doc = doc_of(keys // w // space.n_labels)
        if group_of_label is None:
            return doc
        return doc * n_groups + group_of_label[(keys // w) % space.n_labels]

    size = n_docs * (n_groups if group_of_label is not None else 1)
    c_g, c_s = cells(gold), cells(system)
    n_g = np.bincount(c_g, minlength=size)
    n_s = np.bincount(c_s, minlength=size)
    cnt_s = _window(system, gold)
    cnt_g = _window(gold, system)
    if many_to_one:
        m_s = np.bincount(c_s[cnt_s > 0], minlength=size)
        m_g = np.bincount(c_g[cnt_g > 0], minlength=size)
        tp = np.where(n_s > n_g, m_g, m_s)
        fp, fn = n_s - m_s, n_g - m_g
    else:
        paired = _one_to_one_pairs(gold, system, cnt_g, cnt_s, w)
        tp = np.bincount(c_s[paired], minlength=size)
        fp, fn = n_s - tp, n_g - tp
    if group_of_label is not None:
        shape = (n_docs, n_groups)
        return tp.reshape(shape), fp.reshape(shape), fn.reshape(shape)
    return tp, fp, fn
