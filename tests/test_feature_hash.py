"""Feature hashing of the linear members (ensemble_deid.taggers.feature_hash):
the ids fitted members store must never change, and hashing must not need
scikit-learn (its import cost seconds per process)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ensemble_deid.taggers.feature_hash import HASH_SPACE, hash_rows, hashed_ids
from ensemble_deid.taggers.features import FeatureExtractor
from ensemble_deid.taggers.linear import FeatureIndex, sparse_scores
from ensemble_deid.taggers.registry import tagger_class

from .tiny_corpus import tiny_corpus

# Recorded with the code before feature_hash existed: scikit-learn's
# FeatureHasher(n_features=2**31 - 1, input_type="string", alternate_sign=False).
# Lengths 0-5 (every tail length), accents, CJK, a character outside the BMP,
# a NUL inside a string, a long string.
RECORDED = {
    "bias": 1295679605, "": 0, "a": 1009084850, "ab": 1681926305, "abc": 1277324294, "abcd": 1139631978,
    "abcde": 392455434, "w[0]=garc\u00eda": 1577037757, "w[-1]|w[0]=dr|.": 551327531, "shape=Aaaaa": 1263599314,
    "gz=city:B": 74358875, "\u00f1": 949715350, "\u65e5\u672c\u8a9e": 1515949417, "\U0001F600": 1095487750,
    "x\x00y": 648116606, "p5=" + "z" * 37: 1896579796,
}


def test_hashed_ids_are_the_recorded_ones():
    strings = list(RECORDED)
    assert hashed_ids(strings).tolist() == list(RECORDED.values())
    # one at a time, and within rows (the NUL-joined fast path and the slow path alike)
    assert [int(hashed_ids([s])[0]) for s in strings] == list(RECORDED.values())
    X = FeatureIndex.hash([[s] for s in strings])
    assert X.indices.tolist() == list(RECORDED.values())


def test_hash_rows_is_scikit_learns_feature_hasher_on_real_feature_rows():
    sklearn_hash = pytest.importorskip("sklearn.feature_extraction")
    hasher = sklearn_hash.FeatureHasher(n_features=HASH_SPACE, input_type="string", alternate_sign=False,
                                        dtype=np.float64)
    docs = tiny_corpus(6)
    rows_of = [FeatureExtractor().document_features(d) for d in docs]
    rows_of.append([["bias", "bias", "a\x00b"], [], ["\U0001F600" * 50, "ñ"], ["bias"]])  # duplicates, an empty row
    for rows in rows_of:
        old, new = hasher.transform(rows).tocsr(), hash_rows(rows)
        assert new.shape == old.shape and new.dtype == old.dtype
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(new, part), getattr(old, part)), part
    assert hash_rows([]).shape == (0, HASH_SPACE)


def test_hashing_needs_no_scikit_learn():
    code = ("import sys; from ensemble_deid.taggers.linear import FeatureIndex; "
            "FeatureIndex.hash([['bias', 'w[0]=x']]); print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_sparse_scores_are_the_full_product():
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    W = rng.normal(size=(500, 7)).astype(np.float32)
    X = sp.random(40, 500, density=0.03, format="csr", random_state=1) * 3
    X.sort_indices()
    assert np.array_equal(sparse_scores(X, W), np.asarray(X @ W, dtype=np.float64))
    empty = sp.csr_matrix((3, 500))
    assert np.array_equal(sparse_scores(empty, W), np.zeros((3, 7)))


# Tags of three linear members fitted on the tiny corpus, recorded with the
# code before the speed work of issue 36 (and the sum of each note's confidences).
RECORDED_TAGS = "ac426cd879d51bdb"
RECORDED_CONFIDENCE_SUMS = {"struct-svm": [50.005128, 53.043358, 52.07588], "crf": [61.84416, 65.833414, 64.83684]}


@pytest.mark.parametrize("name,params", [("struct-svm", {"epochs": 2}), ("searn", {"passes": 2, "bits": 18}),
                                         ("crf", {"max_iterations": 20})])
def test_linear_members_predict_what_they_predicted_before(name, params):
    import hashlib

    docs = tiny_corpus(12)
    tagger = tagger_class(name)(**params).fit(docs[:9])
    preds = tagger.predict(docs[9:])
    digest = hashlib.sha256("\n".join(" ".join(p.tags) for p in preds).encode()).hexdigest()[:16]
    assert digest == RECORDED_TAGS
    if name in RECORDED_CONFIDENCE_SUMS:
        sums = [float(np.asarray(p.confidences, dtype=np.float64).sum()) for p in preds]
        assert sums == pytest.approx(RECORDED_CONFIDENCE_SUMS[name], abs=1e-5)
    # the tags alone (what a voting bundle asks for) are predict's tags
    assert [p.tags for p in tagger.predict_tags(docs[9:])] == [p.tags for p in preds]


def test_struct_svm_predict_tags_spares_the_confidences():
    docs = tiny_corpus(12)
    tagger = tagger_class("struct-svm")(epochs=2).fit(docs[:9])
    assert all(p.confidences is None for p in tagger.predict_tags(docs[9:]))
