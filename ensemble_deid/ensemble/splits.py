"""Patient-grouped folds over the documents of a prepared table: the splits
that model selection (``selection``), the trust level's own choice
(``trust.choose_trust``) and the ensembles' out-of-fold predictions share."""
from __future__ import annotations

from typing import Iterator, Sequence

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


def fitted_folds(estimator, prepared, names: tuple[str, ...], folds: FoldAssignment) -> Iterator[tuple[object, object]]:
    """Per fold that holds documents: ``(model, held_out)``, ``model`` a clone
    of the meta-learner ``estimator`` fitted on the other folds' rows of the
    prepared table ``prepared`` (members ``names``), ``held_out`` this fold's
    rows. What every out-of-fold prediction of an ensemble is made of."""
    for train_idx, test_idx in fold_indices(prepared.documents, folds):
        if not len(test_idx):
            continue
        model = estimator.clone()
        model._fit_prepared(prepared.subset(train_idx))
        model.member_names_ = names
        yield model, prepared.subset(test_idx)
