"""Patient-grouped folds over the documents of a prepared table: the splits
that model selection (``selection``), the trust level's own choice
(``trust.choose_trust``) and the ensembles' out-of-fold predictions share."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..corpus.document import Document
from ..corpus.folds import FoldAssignment, assign_folds


def fold_indices(documents: Sequence[Document], folds: FoldAssignment) -> list[tuple[np.ndarray, np.ndarray]]:
    """(training, held-out) document indices of every fold."""
    which = np.array([folds.folds[d.id] for d in documents], dtype=np.int64)
    return [(np.flatnonzero(which != f), np.flatnonzero(which == f)) for f in range(folds.k)]


def make_folds(documents: Sequence[Document], k: int, seed: int) -> FoldAssignment:
    """Patient-grouped folds; k is lowered to the number of patients if needed."""
    groups = len({d.group for d in documents})
    if groups < 2:
        raise ValueError(f"cross-validation needs documents of at least 2 patients, got {groups}")
    return assign_folds(documents, min(int(k), groups), seed)
