"""The six linear and structured taggers (MEMM, SEARN, MIRA, SVM, OGD,
structural SVM) and their shared machinery (ensemble_deid.taggers.linear)."""
from __future__ import annotations

import importlib.util
import itertools
import pickle

import numpy as np
import pytest

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.features import FeatureExtractor, vw_escape
from ensemble_deid.taggers.linear import (
    FeatureIndex,
    LabelIndex,
    decode_chains,
    loss_augmented_viterbi,
    margin_confidence,
    path_score,
    training_chunks,
    viterbi,
    vw_join,
    vw_token_line,
)
from ensemble_deid.taggers.registry import tagger_class
from ensemble_deid.taggers.base import TaggerUnavailable

from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus


# --- contract ------------------------------------------------------------------------

class TestMemmContract(TaggerContract):
    tagger_name = "memm"
    tagger_params = {"max_iter": 10}  # recall 1.0 on its training notes already (50: 2.5x the CPU)


class TestSearnContract(TaggerContract):
    tagger_name = "searn"
    tagger_params = {"passes": 4, "bits": 18}


class TestMiraContract(TaggerContract):
    tagger_name = "mira"
    tagger_params = {"epochs": 5}


class TestSvmContract(TaggerContract):
    tagger_name = "svm"
    tagger_params = {}


class TestOgdContract(TaggerContract):
    tagger_name = "ogd"
    tagger_params = {"passes": 4, "bits": 18}


class TestStructSvmContract(TaggerContract):
    tagger_name = "struct-svm"
    tagger_params = {"epochs": 4}


ALL = ("memm", "searn", "mira", "svm", "ogd", "struct-svm")


@pytest.mark.parametrize("name", ["memm", "mira", "svm", "ogd", "struct-svm"])
def test_confidences_are_given(name):
    docs = tiny_corpus(12)
    params = {"memm": {"max_iter": 10}, "ogd": {"passes": 2, "bits": 18}, "mira": {"epochs": 3},
              "struct-svm": {"epochs": 2}}.get(name, {})
    preds = tagger_class(name)(**params).fit(docs[:9]).predict(docs[9:])
    for p in preds:
        assert p.confidences is not None and len(p.confidences) == len(p.tags)
        assert np.all((p.confidences >= 0) & (p.confidences <= 1))


def test_other_seed_is_accepted_and_deterministic():
    docs = tiny_corpus(12)
    a = tagger_class("struct-svm")(epochs=2, random_state=7).fit(docs[:9]).predict(docs[9:])
    b = tagger_class("struct-svm")(epochs=2, random_state=7).fit(docs[:9]).predict(docs[9:])
    assert [p.tags for p in a] == [p.tags for p in b]


@pytest.mark.parametrize("name,module", [("ogd", "vowpalwabbit"), ("searn", "vowpalwabbit"),
                                         ("mira", "pycrfsuite"), ("svm", "sklearn")])
def test_missing_library_is_a_clear_error(name, module, monkeypatch):
    real = importlib.util.find_spec

    def find_spec(mod, *args, **kwargs):
        return None if mod == module else real(mod, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    cls = tagger_class(name)
    ok, reason = cls.availability()
    assert not ok and module in reason
    with pytest.raises(TaggerUnavailable, match="pip install"):
        cls().fit(tiny_corpus(4))


def test_no_training_tokens_is_an_error():
    for name in ALL:
        with pytest.raises(ValueError, match="no training tokens"):
            tagger_class(name)().fit([])


# --- Viterbi ---------------------------------------------------------------------------------

def _brute(unary, transitions, start, local):
    T, K = unary.shape
    paths = list(itertools.product(range(K), repeat=T))
    scores = np.array([path_score(unary, transitions, p, start, local) for p in paths])
    return paths, scores


@pytest.mark.parametrize("local", [False, True])
def test_viterbi_matches_brute_force(local):
    rng = np.random.default_rng(0)
    for _ in range(150):
        K, T = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        U, Tr, S = rng.normal(size=(T, K)) * 2, rng.normal(size=(K, K)) * 2, rng.normal(size=K)
        paths, scores = _brute(U, Tr, S, local)
        path, score = viterbi(U, Tr, S, local)
        assert tuple(path) == paths[int(scores.argmax())]
        assert score == pytest.approx(scores.max())


@pytest.mark.parametrize("local", [False, True])
def test_batched_decoding_matches_viterbi_and_brute_force_confidences(local):
    rng = np.random.default_rng(1)
    for _ in range(25):
        K = int(rng.integers(1, 4))
        Us = [rng.normal(size=(int(rng.integers(0, 6)), K)) * 2 for _ in range(int(rng.integers(1, 6)))]
        Tr, S = rng.normal(size=(K, K)) * 2, rng.normal(size=K)
        for U, (path, conf) in zip(Us, decode_chains(Us, Tr, S, local=local)):
            assert len(path) == len(conf) == len(U)
            if not len(U):
                continue
            assert tuple(path) == tuple(viterbi(U, Tr, S, local)[0])
            paths, scores = _brute(U, Tr, S, local)
            for t in range(len(U)):
                same = np.array([p[t] == path[t] for p in paths])
                if local:  # the marginal probability of the chosen tag
                    expected = np.exp(scores[same]).sum()
                elif (~same).any():  # sigmoid of the max-marginal margin
                    expected = 1 / (1 + np.exp(-(scores[same].max() - scores[~same].max())))
                else:
                    expected = 1.0
                assert conf[t] == pytest.approx(expected, abs=1e-9)


def test_decoding_survives_extreme_scores():
    U = np.array([[0.0, -2000.0], [3000.0, 0.0], [0.0, 0.0]])
    Tr = np.array([[0.0, -1500.0], [1500.0, 0.0]])
    for local in (False, True):
        (path, conf), = decode_chains([U], Tr, None, local=local)
        assert tuple(path) == tuple(viterbi(U, Tr, None, local)[0])
        assert np.all(np.isfinite(conf)) and np.all((conf >= 0) & (conf <= 1))


def test_memm_decoding_is_not_greedy():
    """Label bias: O is the likelier first tag, but after O the next tag is
    uncertain while after B- it is almost surely I-: Viterbi takes B- I-,
    greedy left-to-right decoding would take O O."""
    labels = LabelIndex(["O", "B-NAME:PATIENT", "I-NAME:PATIENT"])
    bias = np.log([0.6, 0.4, 1e-9])
    trans = np.zeros((3, 3))
    trans[1] = [-10.0, -10.0, 40.0]
    start = np.zeros(3)
    U = np.tile(bias, (2, 1))
    # greedy: argmax at each step given the previous greedy choice
    greedy, prev_row = [], start
    for t in range(2):
        k = int(np.argmax(U[t] + prev_row))
        greedy.append(k)
        prev_row = trans[k]
    (path, conf), = decode_chains([U], trans, start, local=True)
    assert greedy == [0, 0]
    assert path.tolist() == [1, 2]
    assert path_score(U, trans, path, start, True) > path_score(U, trans, greedy, start, True)

    # the same through the adapter, with a hand-set model
    memm = tagger_class("memm")()
    doc = Document("d1", "Ana Pérez", [])
    fx = FeatureExtractor()
    index = FeatureIndex()
    index.fit_transform(fx.document_features(doc))
    memm.extractor_ = fx
    memm.index_ = index
    memm.labels_ = labels
    memm.weights_ = np.zeros((index.n_features, 3), dtype=np.float32)
    memm.bias_ = bias
    memm.transitions_ = trans
    memm.start_ = start
    pred, = memm.predict([doc])
    assert pred.tags == ("B-NAME:PATIENT", "I-NAME:PATIENT")
    assert pred.confidences[0] == pytest.approx(0.4, abs=1e-6)


def test_loss_augmented_viterbi_matches_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(100):
        K, T = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        U, Tr, S = rng.normal(size=(T, K)), rng.normal(size=(K, K)), rng.normal(size=K)
        gold = rng.integers(0, K, size=T)
        cost = float(rng.choice([0.5, 1.0, 3.0]))
        paths, scores = _brute(U, Tr, S, False)
        aug = scores + cost * np.array([(np.array(p) != gold).sum() for p in paths])
        path, score = loss_augmented_viterbi(U, Tr, gold, S, cost)
        assert score == pytest.approx(aug.max())
        assert aug[paths.index(tuple(path))] == pytest.approx(aug.max())
    # a large cost pushes the decoding away from gold wherever it can
    path, _ = loss_augmented_viterbi(np.zeros((3, 2)), np.zeros((2, 2)), [0, 1, 0], None, 5.0)
    assert path.tolist() == [1, 0, 1]


def test_margin_confidence():
    c = margin_confidence(np.array([[2.0, 0.0, -1.0], [1.0, 1.0, 0.0]]))
    assert c[0] == pytest.approx(1 / (1 + np.exp(-2.0)))
    assert c[1] == pytest.approx(0.5)


# --- labels, features, chunks -----------------------------------------------------------

def test_label_index():
    labels = LabelIndex(["B-NAME:X", "O", "I-NAME:X", "O"])
    assert labels.labels[0] == "O" and len(labels) == 3
    ids = labels.encode(["O", "I-NAME:X", "B-NAME:X"])
    assert labels.decode(ids) == ("O", "I-NAME:X", "B-NAME:X")
    assert pickle.loads(pickle.dumps(labels)).encode(["I-NAME:X"]).tolist() == ids[1:2].tolist()
    with pytest.raises(ValueError, match="not among"):
        labels.encode(["B-DATE:DATE"])


def test_feature_index():
    index = FeatureIndex(min_count=2)
    X = index.fit_transform([["a", "b"], ["a", "c"], ["b", "a"]])
    assert index.n_features == 2 and X.shape == (3, 2)
    assert X.sum(1).A.ravel().tolist() == [2, 1, 2]  # "c" seen once: dropped
    Y = index.transform([["a", "zzz"], [], ["b"]])
    assert Y.shape == (3, 2) and Y.sum(1).A.ravel().tolist() == [1, 0, 1]
    assert (Y[0].toarray() == X[1].toarray()).all()


def test_feature_index_columns_are_ranks_among_kept_ids_even_where_ids_share_low_bits():
    """A hashed id's column is its rank among the kept ids (dropped if not
    kept), also for ids that fall on the same slot of the index's lookup
    table (many ids equal in their low bits) and in a large batch."""
    import scipy.sparse as sp

    from ensemble_deid.taggers.feature_hash import HASH_SPACE

    rng = np.random.default_rng(3)
    crowd = np.arange(1, 60, dtype=np.int64) << 20  # all share their 20 low bits
    kept = np.unique(np.concatenate([rng.integers(0, HASH_SPACE, 2000), crowd, crowd + 1, [0, HASH_SPACE - 1]]))
    index = FeatureIndex()
    index.columns = kept
    unseen = np.concatenate([rng.integers(0, HASH_SPACE, 2000), crowd + 2, (crowd + 1) << 1])
    rows = [np.unique(rng.choice(np.concatenate([kept, unseen]), size=rng.integers(0, 12))) for _ in range(3000)]
    hashed = sp.csr_matrix((np.ones(sum(map(len, rows))), np.concatenate(rows).astype(np.int32),
                            np.concatenate([[0], np.cumsum([len(r) for r in rows])])), shape=(len(rows), HASH_SPACE))
    rank = {int(v): i for i, v in enumerate(kept)}
    X = index.compact(hashed)
    assert X.shape == (len(rows), len(kept))
    for i, row in enumerate(rows):
        expected = sorted(rank[int(v)] for v in row if int(v) in rank)
        assert X.indices[X.indptr[i]:X.indptr[i + 1]].tolist() == expected
    index.columns = kept[::2].copy()  # a new set of columns: the lookup follows it
    assert index.compact(hashed).shape == (len(rows), len(kept[::2]))
    assert index.compact(hashed).nnz == sum(int(v) in set(kept[::2].tolist()) for r in rows for v in r)


@pytest.mark.parametrize("crowd_size", [8, 20000])
def test_feature_index_lookup_is_exact_and_bounded_however_crowded_the_saved_columns(crowd_size):
    """Columns come from bundles, which are untrusted: ids crowded on one
    slot of the lookup table (equal low bits) must neither change a column
    nor make the table's probing quadratic; a few such ids keep the table,
    a crowd of them falls back to the binary search."""
    import scipy.sparse as sp

    from ensemble_deid.taggers.feature_hash import HASH_SPACE
    from ensemble_deid.taggers.linear import _slot_table

    rng = np.random.default_rng(5)
    crowd = np.arange(1, crowd_size + 1, dtype=np.int64) << 10  # all share their 10 low bits
    kept = np.unique(np.concatenate([rng.integers(0, HASH_SPACE, 3000), crowd]))
    assert (_slot_table(kept) is None) == (crowd_size > 100)
    index = FeatureIndex()
    index.columns = kept
    ids = np.concatenate([kept, crowd + 1, rng.integers(0, HASH_SPACE, 3000)])
    hashed = sp.csr_matrix((np.ones(len(ids)), ids.astype(np.int32), np.arange(len(ids) + 1)),
                           shape=(len(ids), HASH_SPACE))
    X = index.compact(hashed)
    expected = np.searchsorted(kept, ids)
    present = (expected < len(kept)) & (kept[np.minimum(expected, len(kept) - 1)] == ids)
    assert X.getnnz(axis=1).tolist() == present.astype(int).tolist()
    assert X.indices.tolist() == expected[present].tolist()


@pytest.mark.parametrize("columns", [[5, 3, 9], [3, 3, 9], [-1, 4], [2, (1 << 31) - 1], [[1, 2]], [0.5, 2.0]])
def test_a_saved_feature_index_with_columns_no_fit_makes_is_refused(tmp_path, columns):
    """Columns are the increasing hashed ids np.unique gives at fit; a saved
    model (a bundle is untrusted) saying otherwise is refused when read, not
    used to tag with the wrong weights."""
    from ensemble_deid.taggers.state import StateError, read_state, write_state

    index = FeatureIndex()
    index.columns = np.array(columns)
    write_state(tmp_path / "m", {"kind": "test"}, {"index_": index})
    with pytest.raises(StateError, match="malformed state"):
        read_state(tmp_path / "m")
    index.columns = np.array([2, 7, 40], dtype=np.int64)
    write_state(tmp_path / "ok", {"kind": "test"}, {"index_": index})
    assert read_state(tmp_path / "ok")[1]["index_"].columns.tolist() == [2, 7, 40]


def test_training_chunks_never_cut_a_gold_span():
    docs = tiny_corpus(8)
    cut_somewhere = False
    for doc in docs:
        tags = gold_tags(doc)
        chunks = training_chunks(doc, tags)
        assert chunks[0][0] == 0 and chunks[-1][1] == len(doc.tokens)
        assert all(a < b for a, b in chunks) and all(b == c for (_, b), (c, _) in zip(chunks, chunks[1:]))
        assert not any(tags[a].startswith("I-") for a, _ in chunks)
        starts = {a for a, _ in doc.tokens.sentences()}
        cut_somewhere |= any(tags[a].startswith("I-") for a in starts)
    assert cut_somewhere  # "Dr. Adams": the sentence splitter cuts that span; the chunks do not


# --- Vowpal Wabbit text format ----------------------------------------------------------

def test_vw_join_equals_escaping_each_feature():
    rng = np.random.default_rng(3)
    alphabet = list("ab:|\\ \t\n\rx\x00ñ")
    for _ in range(500):
        feats = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 6)))) for _ in range(int(rng.integers(0, 5)))]
        assert vw_join(feats) == " ".join(vw_escape(f) for f in feats)


def test_vw_escaping_is_injective_and_safe():
    feats = ["a:b", "a|b", "a b", "a\\cb", "a\\pb", "a\\b", "w[0]=x:y|z"]
    escaped = [vw_escape(f) for f in feats]
    assert len(set(escaped)) == len(feats)
    for e in escaped:
        assert not any(c in e for c in ":| \t\n\r")


def test_vw_token_line_layout_and_parse():
    feats = ["bias", "w[-1]=a:b", "w[0]=x|y", "w[1]=c d", "p1=:", "fld=key:value"]
    line = vw_token_line(feats, 3, n_window=3)
    label, w_part, f_part = line.split("|")
    assert label.strip() == "3"
    assert w_part.split()[0] == "w" and len(w_part.split()) == 4
    assert f_part.split()[0] == "f" and len(f_part.split()) == 4
    # the positional fast path and the by-name split agree
    assert vw_token_line(feats, 3, n_window=None) == line
    assert vw_token_line(feats[::-1], None, n_window=3).count("|") == 2
    if importlib.util.find_spec("vowpalwabbit") is None:
        pytest.skip("vowpalwabbit not installed")
    from vowpalwabbit import Workspace

    vw = Workspace("--quiet")
    try:
        ex = vw.example(line)
        assert ex.num_features_in("w") == 3 and ex.num_features_in("f") == 3
        vw.finish_example(ex)
    finally:
        vw.finish()


def vw_p_output(model: bytes, args, lines_per_sequence, sequence_end: str) -> list[str]:
    """What VW's ``-p`` writes for a data file of these example lines, the
    model loaded from its file: the batch path through files that the VW
    taggers used before their model stayed loaded (``VowpalModel``)."""
    import os

    from vowpalwabbit import Workspace

    from ensemble_deid.taggers import linear

    with linear.scratch_dir() as tmp:
        model_path, data, preds = (os.path.join(tmp, n) for n in ("model.vw", "test.vw", "pred.txt"))
        with open(model_path, "wb") as fh:
            fh.write(model)
        with open(data, "w", encoding="utf-8") as fh:
            for lines in lines_per_sequence:
                if lines:
                    fh.write("\n".join(lines) + sequence_end)
        Workspace(arg_list=["-i", model_path, "-t", "-d", data, "-p", preds, "--quiet"] + list(args)).finish()
        with open(preds, encoding="utf-8") as fh:
            return fh.read().splitlines()


def test_searn_loads_its_model_once_and_predicts_what_vw_writes_from_a_data_file(monkeypatch):
    """SEARN keeps its model loaded in VW after the first batch (no model file
    written and read again per batch of notes), refit or pickled it loads the
    new one, and its tags are exactly what VW's ``-p`` output of a data file
    gives (the path it replaced)."""
    from ensemble_deid.taggers import linear

    docs = tiny_corpus(24, seed=3)
    train, first, second = docs[:16], docs[16:20], docs[20:]
    tagger = tagger_class("searn")(passes=4, bits=18).fit(train)
    got = tagger.predict(first)

    def from_data_file(t, batch):
        rows = [ln for ln in vw_p_output(t.model_, [], t._test_lines(batch, t._extract(batch)), "\n\n") if ln.strip()]
        return [tuple(t.labels_.labels[min(int(y) - 1, len(t.labels_) - 1)] for y in row.split()) for row in rows]

    expected = from_data_file(tagger, second)
    assert [p.tags for p in got] == from_data_file(tagger, first)

    def no_loading():
        raise AssertionError("the model was loaded again")

    with monkeypatch.context() as m:
        m.setattr(linear, "_vw", no_loading)
        assert [p.tags for p in tagger.predict(second)] == expected
    copy = pickle.loads(pickle.dumps(tagger))  # no live VW workspace in the pickle
    assert [p.tags for p in copy.predict(second)] == expected
    tagger.fit(docs[8:])  # a new model: loaded, not the kept one
    assert [p.tags for p in tagger.predict(second)] == from_data_file(tagger, second)


def test_ogd_loads_its_model_once_and_predicts_what_it_read_from_vw_output_files(monkeypatch):
    """OGD keeps its model loaded in VW after the first batch; its tags and
    confidences are exactly those it read from VW's ``-p`` output of a data
    file before (probabilities printed to 6 digits, the first of a printed
    tie winning), pickled or refit too, and an empty document gets none."""
    from ensemble_deid.taggers import linear

    docs = tiny_corpus(30, seed=5)
    train, first, second = docs[:18], docs[18:24], docs[24:]
    second = second + [Document("empty", "", [], {})]
    tagger = tagger_class("ogd")(passes=3, bits=18).fit(train)

    def from_data_file(t, batch):  # the code ogd ran before, on VW's output file
        K = len(t.labels_)
        rows = vw_p_output(t.model_, ["--probabilities"], t._test_lines(batch, t._extract(batch)), "\n")
        values = np.array(" ".join(rows).replace(":", " ").split(), dtype=np.float64).reshape(len(rows), -1, 2)
        probs = values[:, :K, 1]
        ids = probs.argmax(1)
        conf = np.clip(probs[np.arange(len(ids)), ids].astype(np.float32), 0, 1)
        out, a = [], 0
        for d in batch:
            b = a + len(d.tokens)
            out.append((t.labels_.decode(ids[a:b]), conf[a:b].tolist()))
            a = b
        return out

    def tagged(preds):
        return [(p.tags, p.confidences.tolist()) for p in preds]

    assert tagged(tagger.predict(first)) == from_data_file(tagger, first)
    expected = from_data_file(tagger, second)
    assert expected[-1] == ((), [])
    with monkeypatch.context() as m:
        m.setattr(linear, "_vw", lambda: pytest.fail("the model was loaded again"))
        assert tagged(tagger.predict(second)) == expected
    assert tagged(pickle.loads(pickle.dumps(tagger)).predict(second)) == expected
    tagger.fit(docs[6:24])
    assert tagged(tagger.predict(second)) == from_data_file(tagger, second)


def test_ogd_reads_probabilities_as_vw_prints_them():
    """VW prints 6 significant digits: the class and the confidence are
    those of the printed values (by hand)."""
    from ensemble_deid_adapters.ogd import as_printed_argmax

    probs = np.array([
        [0.1, 0.9, 0.0],
        [0.4999996, 0.5000004, 0.0],  # both print 0.5: the first wins
        [0.2, 0.30000049, 0.3000001],  # 0.3 twice: the first of the two
        [0.1234560, 0.1234566, 0.75],  # far below the maximum: no tie
        [0.1234560, 0.1234566, 0.1],  # 0.123456 and 0.123457: the second
        [1e-07, 1.0000004e-07, 0.0],  # 1e-07 twice
    ])
    ids, conf = as_printed_argmax(probs)
    assert ids.tolist() == [1, 0, 1, 2, 1, 0]
    assert conf.tolist() == [0.9, 0.5, 0.3, 0.75, 0.123457, 1e-07]
    ids, conf = as_printed_argmax(np.zeros((0, 3)))
    assert ids.shape == conf.shape == (0,)
