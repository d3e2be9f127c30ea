"""K-fold assignment grouped by patient and balanced by PHI count.

A patient's records always share a fold (out-of-fold predictions would
otherwise see the same names and dates in training). Groups are placed
largest first, each into the fold with the least PHI so far (ties: fewest
documents, then a seeded random order), which balances folds closely while
staying deterministic for a seed.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Sequence

from .document import Document


@dataclass(frozen=True)
class FoldAssignment:
    """Fold index of every document (by id), with the settings that made it."""

    folds: dict[str, int]
    k: int
    seed: int

    def __post_init__(self):
        if self.k < 2:
            raise ValueError(f"k={self.k}: cross-validation needs at least 2 folds")

    @property
    def fingerprint(self) -> str:
        blob = json.dumps({"k": self.k, "seed": self.seed, "folds": sorted(self.folds.items())})
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def split(self, documents: Sequence[Document], fold: int) -> tuple[list[Document], list[Document]]:
        """(training documents, held-out documents) of one fold."""
        missing = [d.id for d in documents if d.id not in self.folds]
        if missing:
            raise ValueError(f"{len(missing)} document(s) have no fold, e.g. {missing[0]!r}")
        train = [d for d in documents if self.folds[d.id] != fold]
        held = [d for d in documents if self.folds[d.id] == fold]
        return train, held

    def to_dict(self) -> dict:
        return {"k": self.k, "seed": self.seed, "folds": dict(sorted(self.folds.items())), "fingerprint": self.fingerprint}


def assign_folds(documents: Sequence[Document], k: int = 10, seed: int = 0) -> FoldAssignment:
    groups: dict[str, list[Document]] = {}
    for doc in documents:
        groups.setdefault(doc.group, []).append(doc)
    if len(groups) < k:
        raise ValueError(f"k={k} folds but only {len(groups)} patient group(s); lower --folds")
    rng = random.Random(seed)
    names = sorted(groups)
    rng.shuffle(names)
    tiebreak = {name: i for i, name in enumerate(names)}
    weight = {g: sum(len(d.annotations) for d in docs) for g, docs in groups.items()}
    order = sorted(names, key=lambda g: (-weight[g], -len(groups[g]), tiebreak[g]))
    fold_phi = [0] * k
    fold_docs = [0] * k
    fold_order = list(range(k))
    rng.shuffle(fold_order)
    folds: dict[str, int] = {}
    for g in order:
        target = min(fold_order, key=lambda f: (fold_phi[f], fold_docs[f]))
        fold_phi[target] += weight[g]
        fold_docs[target] += len(groups[g])
        for doc in groups[g]:
            folds[doc.id] = target
    return FoldAssignment(folds, k, seed)
