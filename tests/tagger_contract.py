"""The contract every tagger adapter passes (after flair's shared test classes).

Use it for a built-in or a third-party adapter:

    from tests.tagger_contract import TaggerContract   # or copy this file

    class TestMyTaggerContract(TaggerContract):
        tagger_name = "my-tagger"            # its entry-point name
        tagger_params = {"epochs": 2}        # keep the tiny run fast
        learns = True                        # False for pattern/external taggers
"""
from __future__ import annotations

import pickle
from typing import Any, ClassVar

import numpy as np
import pytest

from ensemble_deid.corpus.bio import decode
from ensemble_deid.taggers.constraints import InvalidParameter, refused_examples
from ensemble_deid.taggers.registry import entry_points, make_tagger, tagger_class
from ensemble_deid.taggers.base import NotFittedError, Tagger

from .tiny_corpus import tiny_corpus


class TaggerContract:
    tagger_name: ClassVar[str] = ""
    tagger_params: ClassVar[dict[str, Any]] = {}
    learns: ClassVar[bool] = True

    # --- fixtures -----------------------------------------------------------
    # Class-scoped fixtures are classmethods: one fit serves the whole class.
    @pytest.fixture(scope="class")
    @classmethod
    def corpus(cls):
        docs = tiny_corpus(24)
        return docs[:18], docs[18:]

    @classmethod
    def make(cls) -> Tagger:
        # Availability of the configured instance: an external tool's
        # parameters may configure what its class alone cannot.
        tagger = tagger_class(cls.tagger_name)(**cls.tagger_params)
        ok, reason = tagger.availability()
        if not ok:
            pytest.skip(f"{cls.tagger_name} unavailable: {reason}")
        return tagger

    @pytest.fixture(scope="class")
    @classmethod
    def fitted(cls, corpus):
        tagger = cls.make()
        returned = tagger.fit(corpus[0])
        return tagger, returned

    @pytest.fixture(scope="class")
    @classmethod
    def predictions(cls, fitted, corpus):
        return fitted[0].predict(corpus[1])

    # --- the contract -------------------------------------------------------
    def test_registered_under_its_name(self):
        assert self.tagger_name in entry_points()
        assert tagger_class(self.tagger_name).name == self.tagger_name

    def test_fit_returns_self(self, fitted):
        tagger, returned = fitted
        assert returned is tagger

    def test_predictions_align_with_tokens(self, predictions, corpus):
        test = corpus[1]
        assert [p.doc_id for p in predictions] == [d.id for d in test]
        for pred, doc in zip(predictions, test):
            assert len(pred.tags) == len(doc.tokens)
            assert all(t == "O" or (t[:2] in ("B-", "I-") and ":" in t) for t in pred.tags)

    def test_spans_are_valid(self, predictions, corpus):
        for pred, doc in zip(predictions, corpus[1]):
            for span in decode(doc.tokens, pred.tags):
                assert 0 <= span.start < span.end <= len(doc.text)
                assert span.start in set(doc.tokens.starts.tolist())
                assert span.end in set(doc.tokens.ends.tolist())

    def test_confidences_are_probabilities(self, predictions):
        for pred in predictions:
            if pred.confidences is not None:
                c = np.asarray(pred.confidences)
                assert c.shape == (len(pred.tags),)
                assert np.all((c >= 0) & (c <= 1)), "confidences must lie in [0, 1]"

    def test_same_seed_same_output(self, predictions, corpus):
        again = self.make().fit(corpus[0]).predict(corpus[1])
        assert [p.tags for p in again] == [p.tags for p in predictions]

    def test_learns_the_training_data(self, fitted, corpus):
        if not self.learns:
            pytest.skip("not a learning tagger")
        tagger = fitted[0]
        train = corpus[0]
        preds = tagger.predict(train)
        gold = {(d.id,) + a.key for d in train for a in d.annotations}
        found = {(p.doc_id,) + s.key for p, d in zip(preds, train) for s in p.spans(d)}
        assert len(gold & found) / len(gold) > 0.5, "recall on its own training data should be well above 0.5"

    def test_params_round_trip(self):
        tagger = self.make()
        params = tagger.get_params()
        twin = type(tagger)(**params)
        assert twin.get_params() == params
        assert tagger.clone().get_params() == params
        assert tagger.param_hash() == twin.param_hash()
        with pytest.raises(ValueError, match="invalid parameter"):
            tagger.set_params(no_such_parameter=1)

    # Parameter constraints (after scikit-learn's check_estimator): every
    # parameter is declared, the defaults pass, and a value outside a
    # declaration is refused when the tagger is made, naming the parameter.
    def test_every_parameter_declared(self):
        cls = tagger_class(self.tagger_name)
        undeclared = sorted(set(cls()._param_names()) - set(cls.parameter_constraints()))
        assert not undeclared, f"declare _parameter_constraints for {undeclared}"

    def test_default_parameters_are_valid(self):
        tagger_class(self.tagger_name)().validate_params()
        self.make().validate_params()

    def test_bad_values_are_refused_by_name(self):
        self.make()  # skips an unavailable tagger
        cls = tagger_class(self.tagger_name)
        for name, constraints in cls.parameter_constraints().items():
            if name not in cls()._param_names():
                continue
            bad_values = refused_examples(constraints)
            assert bad_values, f"{name}: no value outside {constraints}"
            for bad in bad_values:
                with pytest.raises(InvalidParameter) as info:
                    make_tagger(self.tagger_name, **{**self.tagger_params, name: bad})
                assert f"{name}=" in str(info.value) and self.tagger_name in str(info.value), str(info.value)

    def test_unfitted_predict_raises(self, corpus):
        with pytest.raises(NotFittedError):
            self.make().predict(corpus[1])

    def test_fitted_tagger_pickles(self, fitted, predictions, corpus):
        restored = pickle.loads(pickle.dumps(fitted[0]))
        assert [p.tags for p in restored.predict(corpus[1])] == [p.tags for p in predictions]

    def test_provenance(self):
        tagger = self.make()
        assert isinstance(tagger.version, str) and tagger.version
        env = tagger.environment()
        assert isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
