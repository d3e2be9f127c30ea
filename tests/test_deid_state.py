"""Saving fitted taggers and ensemble methods without pickle, and reading
them back with identical predictions (taggers/state.py, ensemble/base.py)."""
from __future__ import annotations

import importlib.util
import json
import os
import stat

import numpy as np
import pytest

from ensemble_deid.ensemble import MetaLearner, load_method, make_method
from ensemble_deid.taggers import Tagger, load_tagger, make_tagger
from ensemble_deid.taggers.registry import entry_points
from ensemble_deid.taggers.state import StateError, read_state, write_state

from .tiny_corpus import tiny_corpus

FAST = {
    "crf": {"max_iterations": 10}, "memm": {"max_iter": 10}, "svm": {}, "mira": {"epochs": 3},
    "ogd": {"passes": 2}, "searn": {"passes": 1}, "struct-svm": {"epochs": 2}, "rules": {},
}


@pytest.fixture(scope="module")
def corpus():
    docs = tiny_corpus(24, seed=3)
    return docs[:16], docs[16:]


def _owner_only(folder):
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
            assert mode & 0o077 == 0, (name, oct(mode))


@pytest.mark.parametrize("name", sorted(FAST))
def test_tagger_round_trip_predicts_the_same(name, corpus, tmp_path):
    if name not in entry_points():
        pytest.skip(f"{name} not registered")
    cls = type(make_tagger(name))
    if not cls.availability()[0]:
        pytest.skip(f"{name} unavailable")
    params = {k: v for k, v in FAST[name].items() if k in cls._param_names()}
    train, test = corpus
    tagger = make_tagger(name, **params).fit([] if cls.external else train)
    before = tagger.predict(test)
    tagger.save(tmp_path / "m")
    files = sorted(os.listdir(tmp_path / "m"))
    assert all(f == "state.json" or f == "arrays.npz" or f.endswith(".bin") for f in files), files
    _owner_only(tmp_path / "m")
    loaded = load_tagger(tmp_path / "m")
    assert type(loaded) is cls and loaded.get_params() == tagger.get_params()
    after = loaded.predict(test)
    assert [p.tags for p in after] == [p.tags for p in before]


def test_svm_saves_its_weights_sparse_and_reads_dense_ones_saved_before(corpus, tmp_path):
    """LIBLINEAR leaves most of an SVM's weights at zero: saved as a CSR
    matrix (a fifteenth of MEDDOCAN's dense table). The same decision values
    after loading, from the sparse file and from a dense one as saved before."""
    if "svm" not in entry_points():
        pytest.skip("svm not registered")
    train, test = corpus
    tagger = make_tagger("svm").fit(train)
    before, _ = tagger.decision_function(test)
    tagger.save(tmp_path / "m")
    body = json.loads((tmp_path / "m" / "state.json").read_text())
    assert "__csr__" in body["state"]["weights_"]
    dense = dict(tagger._fitted_state(), weights_=tagger.weights_)  # the layout of bundles saved before
    header = body["header"]
    write_state(tmp_path / "old", header, dense)
    for folder in ("m", "old"):
        after, _ = load_tagger(tmp_path / folder).decision_function(test)
        assert after.tobytes() == before.tobytes(), folder
    dense["weights_"] = tagger.weights_[:-1]
    write_state(tmp_path / "short", header, dense)
    with pytest.raises(ValueError, match="do not match"):
        load_tagger(tmp_path / "short")


def test_a_sparse_matrix_with_indices_out_of_range_is_refused(tmp_path):
    """scipy's C code trusts a CSR matrix's indices: a saved one pointing
    past its columns is refused when read, not indexed with."""
    import scipy.sparse as sp

    bad = sp.csr_matrix((np.ones(2), np.array([0, 7]), np.array([0, 1, 2])), shape=(2, 3))
    write_state(tmp_path / "m", {}, {"w_": bad})
    with pytest.raises(StateError, match="malformed state"):
        read_state(tmp_path / "m")
    write_state(tmp_path / "ok", {}, {"w_": sp.csr_matrix(np.eye(3))})
    assert (read_state(tmp_path / "ok")[1]["w_"].toarray() == np.eye(3)).all()


def test_another_version_is_refused(corpus, tmp_path):
    tagger = make_tagger("rules").fit()
    tagger.save(tmp_path / "m")
    body = json.loads((tmp_path / "m" / "state.json").read_text())
    body["header"]["version"] = "999"
    (tmp_path / "m" / "state.json").write_text(json.dumps(body))
    with pytest.raises(StateError, match="version 999"):
        load_tagger(tmp_path / "m")


def test_state_refuses_unknown_objects_and_kinds(tmp_path):
    class Opaque:
        pass

    with pytest.raises(StateError, match="cannot be saved"):
        write_state(tmp_path / "a", {}, {"model_": Opaque()})
    write_state(tmp_path / "b", {}, {"x_": (1, "a"), "w_": np.arange(3.0), "b_": b"\x00\x01", "d_": {2: [None]}})
    header, state = read_state(tmp_path / "b")
    assert state["x_"] == (1, "a") and state["b_"] == b"\x00\x01" and state["d_"] == {2: [None]}
    assert state["w_"].tolist() == [0.0, 1.0, 2.0]
    body = json.loads((tmp_path / "b" / "state.json").read_text())
    body["state"]["evil_"] = {"__object__": "os.system", "state": "echo"}
    (tmp_path / "b" / "state.json").write_text(json.dumps(body))
    with pytest.raises(StateError, match="unknown class"):
        read_state(tmp_path / "b")


@pytest.mark.parametrize("method", ["voting", "voting-pruned", "decision-templates", "stacked-svm",
                                    "stacked-searn", "stacked-lstm"])
def test_meta_learner_round_trip(method, corpus, tmp_path):
    from ensemble_deid.taggers import DocumentPrediction

    train, test = corpus
    rng = np.random.default_rng(0)

    def noisy(docs, drop):  # gold with some spans dropped: members that disagree
        out = {}
        for d in docs:
            keep = [a for a in d.annotations if rng.random() > drop]
            out[d.id] = DocumentPrediction.from_spans(d.with_annotations(keep), keep)
        return out

    members_train = {f"m{i}": noisy(train, p) for i, p in enumerate((0.1, 0.3, 0.5))}
    members_test = {f"m{i}": noisy(test, p) for i, p in enumerate((0.1, 0.3, 0.5))}
    if method == "stacked-lstm":
        pytest.importorskip("torchcrf")
    quick = {"stacked-searn": {"passes": 2}, "stacked-lstm": {"epochs": 2, "device": "cpu", "threads": 1}}.get(method, {})
    learner = make_method(method, **quick).fit(members_train, train)
    before = learner.predict(members_test, test)
    learner.save(tmp_path / "e")
    for loaded in (type(learner).load(tmp_path / "e"), load_method(tmp_path / "e")):
        assert type(loaded) is type(learner)
        assert [p.tags for p in loaded.predict(members_test, test)] == [p.tags for p in before]


def test_a_class_loads_only_its_own_files_and_the_registries_load_any(corpus, tmp_path):
    """``Voting.load`` reads a saved voting method and refuses another
    method's folder; the abstract classes cannot tell which class a folder
    holds and say where that is done (the registries, by the saved name)."""
    from ensemble_deid.ensemble import DecisionTemplates, Voting
    from ensemble_deid.taggers import DocumentPrediction

    train, _ = corpus
    members = {m: {d.id: DocumentPrediction.from_spans(d, d.annotations[i::2]) for d in train} for i, m in enumerate("ab")}
    Voting(threshold=1).fit(members, train).save(tmp_path / "voting")
    assert Voting.load(tmp_path / "voting").threshold == 1
    with pytest.raises(StateError, match="saved by ensemble method 'voting', not 'decision-templates'"):
        DecisionTemplates.load(tmp_path / "voting")
    with pytest.raises(TypeError, match="load_method"):
        MetaLearner.load(tmp_path / "voting")
    make_tagger("rules").fit().save(tmp_path / "rules")
    assert type(load_tagger(tmp_path / "rules")).name == "rules"
    with pytest.raises(TypeError, match="load_tagger"):
        Tagger.load(tmp_path / "rules")
    with pytest.raises(StateError, match="not a saved tagger"):
        load_tagger(tmp_path / "voting")
    with pytest.raises(StateError, match="not an ensemble method"):
        load_method(tmp_path / "rules")


def test_members_sharing_features_predict_as_alone(corpus):
    """Deidentifier computes each document's features once for the members
    with equal feature settings; each member's output is unchanged."""
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.deid.model import SharedFeatures

    names = [n for n in ("crf", "svm", "mira") if n in entry_points()]
    if len(names) < 2:
        pytest.skip("needs two linear adapters")
    train, test = corpus
    taggers = {n: make_tagger(n, **FAST[n]).fit(train) for n in names}
    alone = {n: [p.tags for p in t.predict(test)] for n, t in taggers.items()}
    learner = make_method("voting", threshold=1).fit({n: {p.doc_id: p for p in t.predict(train)}
                                                      for n, t in taggers.items()}, train)
    deid = Deidentifier(taggers, learner)
    assert len(deid._shared) == 1 and all(
        isinstance(getattr(t, "extractor_", None) or t.__dict__.get("_fx"), SharedFeatures) for t in taggers.values())
    calls = []
    real = deid._shared[0].extractor.document_features
    deid._shared[0].extractor.document_features = lambda d: calls.append(d.id) or real(d)
    preds = deid.predict(test)
    assert sorted(calls) == sorted(d.id for d in test)  # once per document, not once per member
    assert {n: [p.tags for p in t.predict(test)] for n, t in taggers.items()} == alone
    members = {n: {d.id: p for d, p in zip(test, t.predict(test))} for n, t in taggers.items()}
    assert [p.tags for p in preds] == [p.tags for p in learner.predict(members, test)]


def test_clear_shared_makes_the_next_member_compute_its_own_features(corpus, monkeypatch):
    """Members run one by one outside ``predict`` (as benchmarks/members/member_costs.py
    times them): the second is served the first's features until
    ``clear_shared`` empties the shared cache; then it computes them again."""
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.features import FeatureExtractor

    names = [n for n in ("crf", "svm") if n in entry_points()]
    if len(names) < 2:
        pytest.skip("needs the crf and svm adapters")
    train, test = corpus
    taggers = {n: make_tagger(n, **FAST[n]).fit(train) for n in names}
    learner = make_method("voting", threshold=1).fit({n: {p.doc_id: p for p in t.predict(train)}
                                                      for n, t in taggers.items()}, train)
    deid = Deidentifier(taggers, learner)
    calls = []
    real = FeatureExtractor.document_features
    monkeypatch.setattr(FeatureExtractor, "document_features", lambda self, d: calls.append(d.id) or real(self, d))
    first, second = (deid.members[n] for n in names)
    first.predict(test)
    assert len(calls) == len(test)
    alone = [p.tags for p in second.predict(test)]
    assert len(calls) == len(test)  # served from the shared cache
    deid.clear_shared()
    assert [p.tags for p in second.predict(test)] == alone
    assert sorted(calls[len(test):]) == sorted(d.id for d in test)  # computed again, once per note


def test_members_with_other_feature_settings_never_share(corpus):
    """A per-note feature cache is keyed on the whole feature configuration:
    members whose extractors differ (a window; gazetteer lists of the same
    sizes but other entries) each see their own features, and every member
    predicts inside the Deidentifier exactly as it does alone."""
    if "crf" not in entry_points():
        pytest.skip("crf not registered")
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.gazetteers import Gazetteers

    train, test = corpus
    cities = sorted({d.text[a.start:a.end] for d in train for a in d.annotations if a.type == "CITY"})[:4]
    words = ["Patient", "Call", "Signed", "Denies"]  # in every note, never PHI: the list's feature means O
    settings = {"cities": {"gazetteers": Gazetteers({"city": cities})},
                "words": {"gazetteers": Gazetteers({"city": words})},
                "window-1": {"window": 1}, "default": None, "bigrams": {"ngrams": 2}}
    taggers = {n: make_tagger("crf", max_iterations=10, features=f).fit(train) for n, f in settings.items()}
    # The linear family: hashed rows shared (svm, struct-svm, memm), n-grams left to VW (searn, ogd: order 1).
    taggers.update({n: make_tagger(n, **FAST[n]).fit(train) for n in ("svm", "struct-svm", "memm", "searn", "ogd",
                                                                       "mira") if n in entry_points()})
    taggers["svm-window-1"] = make_tagger("svm", features={"window": 1}).fit(train)
    def seen(preds):
        return [(p.tags, None if p.confidences is None else p.confidences.tolist()) for p in preds]

    alone = {n: seen(t.predict(test)) for n, t in taggers.items()}
    assert alone["cities"] != alone["words"]  # the two lists do change the predictions
    # A method that reads the members' confidences: they are compared too.
    learner = make_method("stacked-svm", confidences=True).fit({n: {p.doc_id: p for p in t.predict(train)}
                                                                for n, t in taggers.items()}, train)
    deid = Deidentifier(taggers, learner)
    inside = {}
    for name, tagger in taggers.items():  # what each member returns inside the Deidentifier
        own = tagger.predict
        tagger.predict = lambda docs, own=own, name=name: inside.setdefault(name, own(docs))
    preds = deid.predict(test)
    assert len(deid._shared) == 4  # each list; window 1 (crf and svm); the defaults at every n-gram order
    assert {n: seen(inside[n]) for n in taggers} == alone
    members = {n: {d.id: p for d, p in zip(test, inside[n])} for n in taggers}
    assert [p.tags for p in preds] == [p.tags for p in learner.predict(members, test)]


@pytest.mark.parametrize("window", [0, 1, 2, 3])
def test_fewer_ngrams_cut_from_longer_ones_are_what_extraction_gives(corpus, window):
    """The features of a lower n-gram order, cut out of a higher order's
    rows, equal the lower order's own extraction, row by row and in order."""
    from ensemble_deid.taggers.features import FeatureExtractor

    train, test = corpus
    top = FeatureExtractor(window=window, ngrams=5)
    for doc in list(test) + [train[0].with_annotations([])]:
        rows = top.document_features(doc)
        for n in range(1, 6):
            assert top.fewer_ngrams(rows, n) == FeatureExtractor(window=window, ngrams=n).document_features(doc)
    with pytest.raises(ValueError):
        FeatureExtractor(ngrams=2).fewer_ngrams([], 3)


def test_a_voting_bundle_spares_its_members_the_confidences(corpus):
    """Voting reads the members' spans alone: a bundle asks them for their
    tags without confidences (no CRF or neural marginals), and tags exactly
    as with them; a method that reads confidences still gets them."""
    from ensemble_deid.deid import Deidentifier

    train, test = corpus
    names = [n for n in ("crf", "mira", "svm", "rules") if n in entry_points()]
    taggers = {n: make_tagger(n, **FAST[n]).fit(train) for n in names}
    if "lstm-crf-l" in entry_points() and importlib.util.find_spec("torchcrf"):
        taggers["lstm-crf-l"] = make_tagger("lstm-crf-l", epochs=1, device="cpu").fit(train)
    for name, tagger in taggers.items():
        full, bare = tagger.predict(test), tagger.predict_tags(test)
        assert [p.tags for p in bare] == [p.tags for p in full], name
        if name in ("crf", "mira", "lstm-crf-l"):
            assert all(p.confidences is None for p in bare) and all(p.confidences is not None for p in full), name
    outputs = {n: {p.doc_id: p for p in t.predict(train)} for n, t in taggers.items()}
    for method, reads in (("voting", False), ("voting-pruned", False), ("decision-templates", False),
                          ("stacked-svm", True)):
        learner = make_method(method).fit(outputs, train)
        assert learner.reads_member_confidences is reads
        seen = []
        for name, tagger in taggers.items():
            for call in ("predict", "predict_tags"):
                own = getattr(tagger, call)
                setattr(tagger, call, lambda docs, own=own, call=call, name=name: seen.append((name, call)) or own(docs))
        deid = Deidentifier(taggers, learner)
        preds = deid.predict(test)
        for tagger in taggers.values():
            del tagger.predict, tagger.predict_tags
        if reads:
            assert {call for _, call in seen} == {"predict"}, method
        else:  # the others' predict_tags is their predict
            assert {n for n, call in seen if call == "predict_tags"} == set(taggers), method
            assert not {n for n, call in seen if call == "predict"} & {"crf", "mira", "lstm-crf-l"}, method
        members = {n: {p.doc_id: p for p in t.predict(test)} for n, t in taggers.items()}
        assert [p.tags for p in preds] == [p.tags for p in learner.predict(members, test)], method


def test_a_neural_tagger_travels_in_a_bundle(corpus, tmp_path):
    """The neural family's own weights-only checkpoint is the bundle member."""
    pytest.importorskip("torch")
    if "lstm-l" not in entry_points():
        pytest.skip("lstm-l not registered")
    from ensemble_deid.deid import Deidentifier

    train, test = corpus
    model = Deidentifier({"lstm-l": make_tagger("lstm-l", epochs=1, device="cpu").fit(train)})
    before = [p.tags for p in model.predict(test)]
    model.save(tmp_path / "m", {"labels": []})
    _owner_only(tmp_path / "m")
    assert [p.tags for p in Deidentifier.load(tmp_path / "m").predict(test)] == before
