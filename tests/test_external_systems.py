"""The offline external systems run for real (Philter, scrubadub, Presidio's
pattern recognisers: ``pip install 'ensemble-deid[external]'``), and an
external system enters a voting ensemble."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
from ensemble_deid.taggers.registry import tagger_class

from . import PLUGINS  # noqa: F401  (registers the memorize test plugin)
from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus

DATA = Path(__file__).parent / "data" / "external"


def _available(name):
    ok, reason = tagger_class(name).availability()
    return pytest.mark.skipif(not ok, reason=f"{name} unavailable: {reason}")


@_available("philter")
class TestPhilterContract(TaggerContract):
    tagger_name = "philter"
    learns = False

    def test_high_recall_on_the_tiny_corpus(self, predictions, corpus):
        """Philter removes what it cannot prove safe: nearly every gold token is covered."""
        covered = total = 0
        for pred, doc in zip(predictions, corpus[1]):
            tagged = {i for i, t in enumerate(pred.tags) if t != "O"}
            for a in doc.annotations:
                idx = [i for i, (s, e) in enumerate(zip(doc.tokens.starts, doc.tokens.ends)) if s < a.end and a.start < e]
                total += len(idx)
                covered += len(tagged.intersection(idx))
        assert covered / total > 0.7


@_available("scrubadub")
class TestScrubadubContract(TaggerContract):
    tagger_name = "scrubadub"
    learns = False

    def test_finds_phone_numbers_exactly(self, predictions, corpus):
        """Its phone detector validates numbers (some random ones fail), but what it finds is exact."""
        found = 0
        for pred, doc in zip(predictions, corpus[1]):
            phones = {a.key for a in doc.annotations if a.type == "PHONE"}
            predicted = {s.key for s in pred.spans(doc) if s.type == "PHONE"}
            assert predicted <= phones
            found += len(predicted)
        assert found > 0


@_available("presidio")
class TestPresidioContract(TaggerContract):
    tagger_name = "presidio"
    learns = False

    def test_finds_dates_and_exact_phones(self, predictions, corpus):
        phones = 0
        for pred, doc in zip(predictions, corpus[1]):
            found = {s.key for s in pred.spans(doc)}
            assert {a.key for a in doc.annotations if a.type == "DATE"} <= found
            predicted = {s.key for s in pred.spans(doc) if s.type == "PHONE"}
            assert predicted <= {a.key for a in doc.annotations if a.type == "PHONE"}
            phones += len(predicted)
        assert phones > 0


def _stand_in_deid(tmp_path) -> str:
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    folder = tmp_path / "deid"
    folder.mkdir()
    shutil.copy(DATA / "fake_deid.pl", folder / "deid.pl")
    shutil.copy(DATA / "fake_deid.config", folder / "deid-output.config")
    return f"physionet-deid:deid_pl={folder / 'deid.pl'}"


@pytest.mark.parametrize("member", ["scrubadub", "physionet-deid"])
def test_external_member_of_a_voting_ensemble(member, tmp_path):
    """Cross-validated like any tagger, cached once, and voted on: with a vote
    threshold of 1 the ensemble keeps the phone numbers that only the external
    system found (the memorizing tagger cannot know unseen numbers); with 2,
    a subset."""
    from ensemble_deid.ensemble import Voting

    if member == "physionet-deid":
        spec_text = _stand_in_deid(tmp_path)
    else:
        ok, reason = tagger_class(member).availability()
        if not ok:
            pytest.skip(reason)
        spec_text = member
    docs = tiny_corpus(24)
    train, test = docs[:18], docs[18:]
    engine = CrossValidation(train, {"test": test}, PredictionCache(tmp_path / "cache"), k=3)
    specs = [TaggerSpec.parse("memorize"), TaggerSpec.parse(spec_text)]
    runs = engine.run(specs, progress=False)
    external = runs[specs[1].label]
    assert external.external and len(external.records) == 2

    oof = {label: run.oof for label, run in runs.items()}
    on_test = {label: run.targets["test"] for label, run in runs.items()}
    union = Voting(threshold=1).fit(oof, train).predict(on_test, test)
    both = Voting(threshold=2).fit(oof, train).predict(on_test, test)
    memorized, from_external = runs["memorize"].targets["test"], external.targets["test"]
    gained = 0
    for doc, u, b in zip(test, union, both):
        phones = {a.key for a in doc.annotations if a.type == "PHONE"}
        only_external = phones & {s.key for s in from_external[doc.id].spans(doc)}
        only_external -= {s.key for s in memorized[doc.id].spans(doc)}
        got = {s.key for s in u.spans(doc)}
        assert only_external <= got
        gained += len(only_external)
        assert {s.key for s in b.spans(doc)} <= got
    assert gained > 0


@_available("philter")
def test_philter_linear_complement_equals_the_released_one():
    import random

    from philter_ucsf.coordinate_map import CoordinateMap

    from ensemble_deid_adapters.philter import _fast_coordinate_map

    rng = random.Random(3)
    text = "".join(rng.choice("ab Z9*.,-\n é") for _ in range(400))
    coords = [(start, start + rng.randint(1, 20)) for start in range(0, 380, 37)]
    slow, fast = CoordinateMap(), _fast_coordinate_map()
    for m in (slow, fast):
        m.add_file("f")
        for start, stop in coords:
            m.add("f", start, stop, overlap=True)
    assert fast.get_complement("f", text) == slow.get_complement("f", text)
