"""The character-level member (issue 29): chunks of whole tokens, early
stopping on held-out training patients, save and load, the adapter contract;
the ``device`` parameter (issue 36)."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ensemble_deid.corpus.document import Document  # noqa: E402
from ensemble_deid.corpus.formats import load_directory  # noqa: E402
from ensemble_deid.corpus.synth.embedded import materialize  # noqa: E402
from ensemble_deid.taggers.neural.base import held_out_fingerprint, split_held_out  # noqa: E402
from ensemble_deid.taggers.neural.chars import chunk_documents  # noqa: E402
from ensemble_deid.studies.summary import strict_prf  # noqa: E402
from ensemble_deid.taggers.registry import load_tagger  # noqa: E402
from ensemble_deid.taggers.constraints import InvalidParameter  # noqa: E402
from ensemble_deid.taggers.registry import make_tagger  # noqa: E402

from .tagger_contract import TaggerContract  # noqa: E402
from .tiny_corpus import tiny_corpus  # noqa: E402

FAST = {"epochs": 30, "patience": 0, "validation_fraction": 0.0, "channels": 32, "token_dim": 24, "lr": 0.005,
        "batch_size": 2, "dropout": 0.0}


def test_chunks_hold_whole_tokens_and_point_at_their_characters():
    doc = Document("d", "Ana Pérez vio 12/03 ayer")
    index = {c: i + 2 for i, c in enumerate(sorted(set(doc.text)))}
    chunks = chunk_documents([doc], index, max_chars=12)
    assert [c.first for c in chunks] == [0, 2, 6]  # "Ana Pérez" | "vio 12/03" (4 tokens) | "ayer"
    assert sum(len(c.starts) for c in chunks) == len(doc.tokens)
    for c in chunks:
        text = "".join(sorted(index, key=index.get)[i - 2] for i in c.chars)
        assert text[c.starts[0]] == doc.tokens.words[c.first][0]
        assert text[c.ends[-1]] == doc.tokens.words[c.first + len(c.starts) - 1][-1]
        assert len(c.chars) <= 12 or len(c.starts) == 1


def test_the_epoch_is_chosen_on_held_out_training_patients():
    docs = tiny_corpus(24)[:16]
    params = {**FAST, "validation_fraction": 0.25, "epochs": 6, "patience": 2}
    tagger = make_tagger("char-cnn", **params).fit(docs)
    choices = tagger.training_choices()
    held = split_held_out(docs, 0.25, 0)[1]
    assert choices["held_out_fingerprint"] == held_out_fingerprint(held) and choices["held_out_documents"] == 4
    f1s = [h["held_out_f1"] for h in tagger.history_]
    assert choices["chosen_epoch"] == 1 + int(np.argmax(f1s)) and choices["epochs_run"] == len(f1s)
    again = make_tagger("char-cnn", **params).fit(docs)
    assert again.training_choices() == choices  # deterministic for a seed


@pytest.fixture(scope="module")
def synthetic_2014(tmp_path_factory):
    """The embedded synthetic-2014 corpus (train, test), generated once for the module."""
    paths = materialize("synthetic-2014", tmp_path_factory.mktemp("embedded") / "synthetic-2014")
    return load_directory(paths["train"]), load_directory(paths["test"])


@pytest.mark.slow  # 5 s: the early-stopping test below also trains until identifiers are found
def test_a_few_epochs_find_identifiers_on_the_synthetic_2014_corpus(synthetic_2014):
    """Version 1 stayed at the tag prior (every token O, strict F1 0) here: its
    convolutions got almost no gradient through the untrained token BiLSTM."""
    train, test = synthetic_2014
    params = {"epochs": 4, "validation_fraction": 0.0, "batch_size": 4, "max_chars": 300}  # ~30 steps an epoch
    tagger = make_tagger("char-cnn", **params).fit(train)
    predicted = tagger.predict(test)
    assert sum(t != "O" for p in predicted for t in p.tags) > 500
    assert strict_prf(test, {p.doc_id: p for p in predicted})[2] > 0.2


def test_early_stopping_waits_until_something_is_found(synthetic_2014):
    """On synthetic-2014 an epoch is a few steps and the first ones find nothing on the held-out
    patients (F1 0, a tie): patience once ended the run there and kept a model that tags all O."""
    train, test = synthetic_2014
    tagger = make_tagger("char-cnn", epochs=10, patience=1, batch_size=4).fit(train)
    f1s = [h["held_out_f1"] for h in tagger.history_]
    assert f1s[0] == 0.0 and tagger.training_choices()["best_held_out_f1"] == max(f1s) > 0.2
    predicted = tagger.predict(test)
    assert strict_prf(test, {p.doc_id: p for p in predicted})[2] > 0.15


def test_it_saves_and_loads(tmp_path):
    docs = tiny_corpus(12)
    tagger = make_tagger("char-cnn", **{**FAST, "epochs": 2}).fit(docs[:8])
    tagger.save(tmp_path / "m")
    again = type(tagger).load(tmp_path / "m")
    assert [p.tags for p in again.predict(docs[8:])] == [p.tags for p in tagger.predict(docs[8:])]


class TestCharCnnContract(TaggerContract):
    tagger_name = "char-cnn"
    tagger_params = {**FAST, "epochs": 15}  # recall 1.0 on its training notes from 10 epochs (30: 3.7x the CPU)


# --- issue 36: the device parameter ------------------------------------------------------------

PUBLISHED = Path(__file__).resolve().parent.parent / "cached_predictions" / "meddocan" / "published.json"


@pytest.mark.parametrize("device", [None, "auto", "cpu"])
def test_the_device_leaves_the_published_cache_key_alone(device):
    """The published char-cnn parts were made before ``device`` existed: any device names the same model."""
    entry = next(e for e in json.loads(PUBLISHED.read_text())["entries"] if e["tagger"] == "char-cnn")
    assert entry["param_hash"] == "5fb6e04114db8bb8"
    params = dict(entry["params"], **({} if device is None else {"device": device}))
    tagger = make_tagger("char-cnn", **params)
    assert tagger.param_hash() == entry["param_hash"] == make_tagger("char-cnn").param_hash()


def test_cpu_predictions_are_those_of_the_cpu_only_version():
    """Figures of the version before ``device`` (same fit, same notes): a run on the CPU
    still draws the same weights, batches and dropout, so chooses and predicts the same."""
    docs = tiny_corpus(12)
    params = {"epochs": 8, "patience": 0, "validation_fraction": 0.25, "channels": 16, "token_dim": 12,
              "char_dim": 8, "lr": 0.02, "batch_size": 2, "dropout": 0.2, "max_chars": 60, "device": "cpu"}
    tagger = make_tagger("char-cnn", **params).fit(docs[:8])
    predicted = tagger.predict(docs[8:])
    assert [h["held_out_f1"] for h in tagger.history_] == pytest.approx(
        [0.0, 0.0, 0.0, 3 / 13, 8 / 17, 13 / 16, 13 / 16, 26 / 33], abs=1e-12)
    assert tagger.training_choices()["chosen_epoch"] == 6
    assert [sum(t != "O" for t in p.tags) for p in predicted] == [21, 18, 20, 17]
    tags = "\n".join(t for p in predicted for t in p.tags)
    assert hashlib.sha256(tags.encode()).hexdigest()[:16] == "dac239527b648cfe"
    assert [float(p.confidences.sum()) for p in predicted] == pytest.approx(
        [61.564186096191406, 54.98634719848633, 58.890010833740234, 57.80292892456055], abs=1e-4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with a GPU: auto picks it")
def test_auto_trains_on_the_cpu_without_a_gpu():
    tagger = make_tagger("char-cnn", **{**FAST, "epochs": 1}).fit(tiny_corpus(6))
    assert tagger.device == "auto" and tagger.train_info_["device"] == "cpu"


def _unusable_devices():
    yield f"cuda:{torch.cuda.device_count()}"  # one past the last GPU: never there
    if not torch.cuda.is_available():
        yield "cuda"


@pytest.mark.parametrize("device", list(_unusable_devices()) + ["tpu"])
def test_a_device_this_machine_lacks_is_refused_before_any_work(device):
    with pytest.raises(InvalidParameter, match=re.escape(f"tagger 'char-cnn': invalid value device={device!r}")):
        make_tagger("char-cnn", device=device)
    tagger = make_tagger("char-cnn")
    tagger.device = device  # set after construction: fit checks again before reading a note
    with pytest.raises(InvalidParameter, match="device="):
        tagger.fit([])  # no documents: only a parameter check can fail first


def test_a_model_fitted_on_one_device_predicts_on_the_cpu(tmp_path):
    """With a GPU (``auto`` picks it) this is a GPU-trained model predicting on the CPU and
    saved for a CPU-only machine; without one, both sides are the CPU."""
    docs = tiny_corpus(12)
    tagger = make_tagger("char-cnn", **{**FAST, "epochs": 3}).fit(docs[:8])
    before = tagger.predict(docs[8:])
    tagger.set_params(device="cpu")
    on_cpu = tagger.predict(docs[8:])
    tagger.save(tmp_path / "m")
    loaded = load_tagger(tmp_path / "m")
    assert loaded.device == "auto"  # the loading machine's default: a saved device is not used (issue 52 item 3)
    for again in (on_cpu, loaded.predict(docs[8:])):
        assert [p.tags for p in again] == [p.tags for p in before]
        for a, b in zip(again, before):
            np.testing.assert_allclose(a.confidences, b.confidences, atol=1e-4)
