"""Patient-grouped k-fold assignment balanced by PHI count."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.folds import FoldAssignment, assign_folds

from .conftest import REPO_ROOT
from .tiny_corpus import tiny_corpus


def _corpus(structure):
    """Documents from [(patient, [phi count per record]), ...]."""
    docs = []
    for patient, records in structure:
        for r, n_phi in enumerate(records):
            anns = [Annotation(i, i + 1, "DATE", "DATE") for i in range(n_phi)]
            docs.append(Document(f"{patient}-{r:02d}", "x" * max(n_phi, 1), anns, {"group": patient}))
    return docs


def _fold_phi(docs, assignment):
    phi = Counter()
    for d in docs:
        phi[assignment.folds[d.id]] += len(d.annotations)
    return [phi[f] for f in range(assignment.k)]


_STRUCTURES = st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=5), min_size=2, max_size=40).map(
    lambda groups: [(f"p{i:03d}", records) for i, records in enumerate(groups)]
)


@settings(max_examples=150, deadline=None)
@given(_STRUCTURES, st.integers(2, 10), st.integers(0, 2**32 - 1))
def test_folds_keep_patients_together_and_balance_phi(structure, k, seed):
    k = min(k, len(structure))
    docs = _corpus(structure)
    fa = assign_folds(docs, k=k, seed=seed)
    assert set(fa.folds) == {d.id for d in docs}
    assert set(fa.folds.values()) == set(range(k))  # no empty fold
    by_patient: dict[str, set[int]] = {}
    for d in docs:
        by_patient.setdefault(d.group, set()).add(fa.folds[d.id])
    assert all(len(f) == 1 for f in by_patient.values()), "a patient is split across folds"
    # Balance: greedy placement keeps the PHI spread within the largest patient.
    phi = _fold_phi(docs, fa)
    largest = max(sum(records) for _, records in structure)
    assert max(phi) - min(phi) <= largest
    assert fa == assign_folds(list(reversed(docs)), k=k, seed=seed)  # input order does not matter


def test_same_seed_same_folds_other_seed_other_folds():
    docs = tiny_corpus(40, seed=1)
    a = assign_folds(docs, k=5, seed=7)
    assert a == assign_folds(docs, k=5, seed=7)
    assert a.fingerprint == assign_folds(docs, k=5, seed=7).fingerprint
    b = assign_folds(docs, k=5, seed=8)
    assert a.folds != b.folds
    assert a.fingerprint != b.fingerprint


def test_identical_across_runs(tmp_path):
    """A fresh interpreter (other hash seed) gives the very same assignment."""
    docs = tiny_corpus(40, seed=1)
    here = assign_folds(docs, k=5, seed=7)
    code = (
        "import json; from tests.tiny_corpus import tiny_corpus; from ensemble_deid.corpus.folds import assign_folds; "
        "print(json.dumps(assign_folds(tiny_corpus(40, seed=1), k=5, seed=7).to_dict()))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here.to_dict()


def test_fingerprint_follows_the_assignment():
    fa = FoldAssignment({"a": 0, "b": 1, "c": 0}, k=2, seed=0)
    same = FoldAssignment({"c": 0, "b": 1, "a": 0}, k=2, seed=0)
    assert fa.fingerprint == same.fingerprint
    moved = FoldAssignment({"a": 0, "b": 1, "c": 1}, k=2, seed=0)
    assert moved.fingerprint != fa.fingerprint
    assert FoldAssignment(fa.folds, k=3, seed=0).fingerprint != fa.fingerprint
    assert FoldAssignment(fa.folds, k=2, seed=1).fingerprint != fa.fingerprint
    assert fa.to_dict() == {"k": 2, "seed": 0, "folds": {"a": 0, "b": 1, "c": 0}, "fingerprint": fa.fingerprint}


def test_split_gives_train_and_held_out():
    docs = tiny_corpus(24, seed=0)
    fa = assign_folds(docs, k=4, seed=0)
    seen = []
    for fold in range(4):
        train, held = fa.split(docs, fold)
        assert len(train) + len(held) == len(docs)
        assert held and not ({d.group for d in train} & {d.group for d in held})
        seen += [d.id for d in held]
    assert sorted(seen) == sorted(d.id for d in docs)
    with pytest.raises(ValueError, match="have no fold"):
        fa.split(docs + [Document("999-01", "x")], 0)


def test_bad_k():
    docs = tiny_corpus(6)  # 3 patients
    with pytest.raises(ValueError, match="only 3 patient group"):
        assign_folds(docs, k=4)
    with pytest.raises(ValueError, match="at least 2 folds"):
        assign_folds(docs, k=1)


def test_balanced_on_meddocan(meddocan_dir):
    from ensemble_deid.corpus.formats import load_directory

    docs = load_directory(meddocan_dir / "train" / "xml")
    fa = assign_folds(docs, k=10, seed=0)
    phi = _fold_phi(docs, fa)
    assert sum(phi) == 11333
    largest = max(len(d.annotations) for d in docs)
    assert max(phi) - min(phi) <= largest
    assert max(phi) - min(phi) <= 0.01 * sum(phi) / 10  # within 1% of a fold's share
    sizes = Counter(fa.folds.values())
    assert max(sizes.values()) - min(sizes.values()) <= 10
