"""Where a system's strict errors come from: each span's error kind, and the
category confusion matrix, from the overlaps between gold and system spans.

Strict matching (``criteria.strict``) says only that a span is right or
wrong; this module says how it is wrong, span by span:

- a gold span is ``correct`` when the system has a span with the same offsets
  and label (upper-cased, as the strict key); else a ``leak`` when some of
  its characters (white space excepted, as in ``leak.py``) are covered by no
  system span; else ``wrong type`` when a system span has its exact offsets;
  else ``boundary`` (covered, but by spans with other offsets);
- a system span is ``correct`` as above; else a ``false alarm`` when it
  overlaps no gold span; else ``wrong type`` when a gold span has its exact
  offsets; else ``boundary``.

Without duplicate spans, the gold spans that are not correct are the strict
false negatives and the system spans that are not correct its false
positives, document by document (tests check this against ``Scorer``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..corpus.document import Annotation, Document
from .spans import nonspace

CORRECT, LEAK, FALSE_ALARM, WRONG_TYPE, BOUNDARY = range(5)
KINDS = ("correct", "leak", "false alarm", "wrong type", "boundary")
NONE = "(none)"  # the confusion matrix's row / column for spans that overlap nothing


@dataclass(frozen=True)
class DocumentOverlap:
    """One document, one system: the error kind of every gold and system span
    (in the order given) and the overlapping (gold index, system index) pairs."""

    gold_kinds: tuple[int, ...]
    system_kinds: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...]


def document_overlap(gold: Sequence[Annotation], system: Sequence[Annotation], nonspace: np.ndarray) -> DocumentOverlap:
    """``nonspace``: per character of the text, whether it is not white space."""
    n, m = len(gold), len(system)
    gs = np.fromiter((g.start for g in gold), np.int64, n)
    ge = np.fromiter((g.end for g in gold), np.int64, n)
    ss = np.fromiter((s.start for s in system), np.int64, m)
    se = np.fromiter((s.end for s in system), np.int64, m)
    keys: dict[tuple[str, str], int] = {}  # upper-cased labels, as the strict key compares them
    gl = np.fromiter((keys.setdefault((g.category.upper(), g.type.upper()), len(keys)) for g in gold), np.int64, n)
    sl = np.fromiter((keys.setdefault((s.category.upper(), s.type.upper()), len(keys)) for s in system), np.int64, m)
    overlaps = (gs[:, None] < se[None, :]) & (ss[None, :] < ge[:, None])
    same_extent = (gs[:, None] == ss[None, :]) & (ge[:, None] == se[None, :])
    exact = same_extent & (gl[:, None] == sl[None, :])
    depth = np.zeros(len(nonspace) + 1, dtype=np.int64)  # how many system spans cover each character
    np.add.at(depth, ss, 1)
    np.add.at(depth, se, -1)
    uncovered = np.concatenate(([0], np.cumsum((np.cumsum(depth)[:-1] == 0) & nonspace)))
    gold_kinds = np.select([exact.any(axis=1), uncovered[ge] > uncovered[gs], same_extent.any(axis=1)],
                           [CORRECT, LEAK, WRONG_TYPE], BOUNDARY)
    system_kinds = np.select([exact.any(axis=0), ~overlaps.any(axis=0), same_extent.any(axis=0)],
                             [CORRECT, FALSE_ALARM, WRONG_TYPE], BOUNDARY)
    pairs = tuple(zip(*(a.tolist() for a in np.nonzero(overlaps))))
    return DocumentOverlap(tuple(gold_kinds.tolist()), tuple(system_kinds.tolist()), pairs)


def nonspace_mask(text: str) -> np.ndarray:
    """Per character of ``text``, whether it is not white space (as the leak rates count)."""
    return nonspace(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32))


@dataclass(frozen=True)
class Confusion:
    """counts[i, j]: overlapping (gold, system) span pairs with gold label
    ``labels[i]`` and system label ``labels[j]``; the last row and column
    (``NONE``) count system spans overlapping no gold span and gold spans
    overlapping no system span."""

    labels: tuple[str, ...]
    counts: np.ndarray


def confusion(documents: Sequence[Document], system: Mapping[str, Sequence[Annotation]],
              overlaps: Mapping[str, DocumentOverlap], labels: Sequence[str]) -> Confusion:
    """``labels``: ``CATEGORY:TYPE`` labels in the order wanted; labels found
    in the spans but not listed are added at the end."""
    index = {lab: i for i, lab in enumerate(labels)}
    names = list(labels)

    def at(label: str) -> int:
        if label not in index:
            index[label] = len(names)
            names.append(label)
        return index[label]

    cells: list[tuple[int, int]] = []
    for doc in documents:
        found, ov = system.get(doc.id, ()), overlaps[doc.id]
        gold_hit, system_hit = set(), set()
        for i, j in ov.pairs:
            cells.append((at(doc.annotations[i].label), at(found[j].label)))
            gold_hit.add(i)
            system_hit.add(j)
        cells += [(at(g.label), -1) for i, g in enumerate(doc.annotations) if i not in gold_hit]
        cells += [(-1, at(s.label)) for j, s in enumerate(found) if j not in system_hit]
    k = len(names)
    counts = np.zeros((k + 1, k + 1), dtype=np.int64)
    for i, j in cells:
        counts[i if i >= 0 else k, j if j >= 0 else k] += 1
    return Confusion(tuple(names) + (NONE,), counts)
