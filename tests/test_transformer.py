"""The ``transformer`` tagger on a tiny local checkpoint built here (a
WordPiece tokenizer trained on the test notes, a 2-layer BERT of random
weights; nothing downloaded): the shared contract, offline errors, decoding,
pooling, the cache key, no-pickle save/load, early stopping, and the CLI
(``cv``, ``ensemble``, ``fit``, ``deidentify`` in a fresh process).
Skipped when the optional extra is not installed."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

for _module in ("transformers", "tokenizers", "safetensors"):
    pytest.importorskip(_module, reason="the 'transformer' extra is not installed (pip install -e '.[transformer]')")

import torch  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from ensemble_deid.cli import main  # noqa: E402
from ensemble_deid.taggers.registry import load_tagger  # noqa: E402
from ensemble_deid.taggers.constraints import InvalidParameter  # noqa: E402
from ensemble_deid.taggers.registry import make_tagger  # noqa: E402

from .tagger_contract import TaggerContract  # noqa: E402
from .tiny_corpus import tiny_corpus  # noqa: E402
from .tiny_transformer import tiny_checkpoint  # noqa: E402

# Small and quick on a CPU: windows of 64 pieces, a high rate for a model of random weights.
FAST = {"epochs": 8, "lr": 3e-3, "warmup": 0.0, "validation_fraction": 0.0, "max_length": 64, "stride": 32,
        "batch_size": 4, "num_threads": 1}


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory) -> Path:
    texts = [d.text for d in tiny_corpus(60, seed=9)]
    return tiny_checkpoint(tmp_path_factory.mktemp("tiny-bert") / "model", texts)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any connection attempt fails the test: the tagger must stay offline."""
    def refuse(*args, **kwargs):
        raise AssertionError("the transformer tagger tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


class TestTransformerContract(TaggerContract):
    tagger_name = "transformer"
    tagger_params = {}

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def params(cls, checkpoint):
        cls.tagger_params = {"model_path": str(checkpoint), **FAST}


# --- offline, clear errors -----------------------------------------------------------------
def test_missing_folder_is_refused_by_parameter_before_any_work(tmp_path):
    with pytest.raises(InvalidParameter, match=r"tagger 'transformer'.*model_path=.*not a folder"):
        make_tagger("transformer", model_path=str(tmp_path / "no-such-model"))
    with pytest.raises(ValueError, match="model_path is required"):
        make_tagger("transformer").fit(tiny_corpus(4))


def test_folder_without_weights_names_the_parameter_and_stays_offline(checkpoint, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(checkpoint, partial)
    (partial / "model.safetensors").unlink()
    with pytest.raises(ValueError, match=r"model_path=.*model\.safetensors"):
        make_tagger("transformer", model_path=str(partial), **FAST).fit(tiny_corpus(4))


def test_window_longer_than_the_model_is_refused(checkpoint):
    with pytest.raises(ValueError, match=r"max_length=256 exceeds the model's 128 positions"):
        make_tagger("transformer", model_path=str(checkpoint), **{**FAST, "max_length": 256}).fit(tiny_corpus(4))
    with pytest.raises(InvalidParameter, match="stride"):
        make_tagger("transformer", model_path=str(checkpoint), max_length=64, stride=64)


# --- decoding and pooling -----------------------------------------------------------------
def test_decoding_repairs_bio_and_reports_softmax_confidence():
    from ensemble_deid.taggers.neural.transformer import allowed_moves, decode_bio

    tags = ["O", "B-NAME:PATIENT", "I-NAME:PATIENT"]
    # Token by token the argmax is O, I, I: invalid. The best valid path
    # (log-probabilities summed) is O, B, I: log .6 + log .4 + log .7 beats
    # O, O, O (log .6 + log .3 + log .2) and B, I, I (log .1 + ...).
    probs = np.array([[0.6, 0.1, 0.3], [0.3, 0.4, 0.5], [0.2, 0.1, 0.7]], dtype=np.float32)
    (ids, conf), (empty, _) = decode_bio([probs, probs[:0]], allowed_moves(tags))
    assert len(empty) == 0
    assert [tags[i] for i in ids] == ["O", "B-NAME:PATIENT", "I-NAME:PATIENT"]
    assert conf.tolist() == pytest.approx([0.6, 0.4, 0.7])


class _Echo(torch.nn.Module):
    """Piece id i scores (i, -i) for the two labels: word scores are easy to compute by hand."""

    def forward(self, input_ids, attention_mask):
        x = input_ids.float()
        return type("Out", (), {"logits": torch.stack([x, -x], dim=-1)})()


def test_first_piece_and_mean_pooling():
    from ensemble_deid.taggers.neural.transformer import word_logits
    from ensemble_deid.taggers.neural.windows import Specials, document_windows

    specials = Specials((1,), (2,), 0, 3)
    (w,) = document_windows(0, [np.array([10, 20]), np.array([30])], specials, 24, 10)
    first, W = word_logits(_Echo(), [w], specials, "first", torch.device("cpu"), False)
    mean, _ = word_logits(_Echo(), [w], specials, "mean", torch.device("cpu"), False)
    assert W == 2
    assert first.tolist() == [[10.0, -10.0], [30.0, -30.0]]
    assert mean.tolist() == [[15.0, -15.0], [30.0, -30.0]]


# --- determinism, cache key, saving ----------------------------------------------------------
@pytest.fixture(scope="module")
def fitted(checkpoint):
    docs = tiny_corpus(24)
    return make_tagger("transformer", model_path=str(checkpoint), **FAST).fit(docs[:18]), docs[18:]


def test_cache_key_follows_the_checkpoint_content_not_its_path(checkpoint, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(checkpoint, moved)
    here = make_tagger("transformer", model_path=str(checkpoint), **FAST)
    there = make_tagger("transformer", model_path=str(moved), **FAST)
    assert here.param_hash() == there.param_hash()
    assert make_tagger("transformer", model_path=str(moved), **{**FAST, "verbose": True}).param_hash() == here.param_hash()
    (moved / "config.json").write_text((moved / "config.json").read_text().replace('"hidden_act"', '"hidden_act" '))
    assert make_tagger("transformer", model_path=str(moved), **FAST).param_hash() != here.param_hash()


def test_save_writes_safetensors_and_json_and_loads_without_the_checkpoint(fitted, checkpoint, tmp_path):
    tagger, test = fitted
    folder = tagger.save(tmp_path / "saved")
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["config.json", "model.safetensors", "state.json", "tokenizer.json"]
    assert (folder / "model.safetensors").read_bytes() == tagger.weights_
    from safetensors.torch import load_file

    assert "classifier.weight" in load_file(folder / "model.safetensors")
    # The original checkpoint is not needed to load: hide it.
    hidden = checkpoint.with_name("hidden")
    checkpoint.rename(hidden)
    try:
        loaded = load_tagger(folder)
        before, after = tagger.predict(test), loaded.predict(test)
    finally:
        hidden.rename(checkpoint)
    assert [p.tags for p in after] == [p.tags for p in before]
    assert all(np.array_equal(a.confidences, b.confidences) for a, b in zip(after, before))


def test_loading_refuses_a_config_that_is_not_json(fitted, tmp_path):
    from ensemble_deid.taggers.state import StateError

    folder = fitted[0].save(tmp_path / "saved")
    (folder / "config.json").write_bytes(b"\x80not json")
    with pytest.raises(StateError, match="config"):
        load_tagger(folder)


def test_marginals_are_distributions_and_match_the_confidences(fitted):
    tagger, test = fitted
    marginals = tagger.predict_marginals(test)
    for doc, m, pred in zip(test, marginals, tagger.predict(test)):
        assert m.shape == (len(doc.tokens), len(tagger.tags_))
        assert np.allclose(m.sum(1), 1, atol=1e-5)
        ids = [tagger.tags_.index(t) for t in pred.tags]
        assert np.allclose(m[np.arange(len(ids)), ids], pred.confidences)


def test_early_stopping_holds_out_training_patients(checkpoint):
    docs = tiny_corpus(20)
    tagger = make_tagger("transformer", model_path=str(checkpoint),
                         **{**FAST, "validation_fraction": 0.25, "epochs": 4, "patience": 1}).fit(docs)
    info = tagger.train_info_
    assert info["held_out_documents"] >= 1 and info["train_documents"] + info["held_out_documents"] == 20
    scores = [h["held_out_f1"] for h in tagger.history_]
    assert all(s is not None for s in scores)
    assert info["best_epoch"] == 1 + int(np.argmax(scores)) and info["best_held_out_f1"] == max(scores)
    if info["stopped_early"]:
        assert info["epochs_run"] == info["best_epoch"] + 1


# --- the command line -------------------------------------------------------------------------
def _run(*args):
    result = CliRunner().invoke(main, list(map(str, args)))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


@pytest.mark.slow  # 10 s: the contract tests above cover fit, save and load in the default run
def test_cv_ensemble_fit_and_deidentify_in_a_fresh_process(workspace, tiny_registered, checkpoint, tmp_path):
    _cli_round_trip(workspace, tiny_registered, checkpoint, tmp_path, epochs=6)


@pytest.mark.slow
def test_on_the_embedded_synthetic_corpus(workspace, checkpoint, tmp_path):
    _cli_round_trip(workspace, "synthetic-2014", checkpoint, tmp_path, epochs=4)


def _cli_round_trip(workspace, corpus, checkpoint, tmp_path, epochs):
    """cv (then again, all cached), ensemble and fit with a transformer member;
    the bundle's spans from a new interpreter, the checkpoint folder moved
    away, equal those of the bundle loaded here."""
    member = (f"transformer:model_path={checkpoint},epochs={epochs},lr=0.003,warmup=0,validation_fraction=0,"
              "max_length=64,stride=32,num_threads=1")
    out = _run("cv", "--corpus", corpus, "--taggers", member, "--folds", "2", "--no-progress")
    assert "transformer" in out
    again = _run("cv", "--corpus", corpus, "--taggers", member, "--folds", "2", "--no-progress")
    assert "0/3" in again  # 2 folds + test: every part came from the cache
    _run("ensemble", "--corpus", corpus, "--method", "voting", "--members", f"rules,{member}",
         "--folds", "2", "--no-progress")
    model = tmp_path / "model"
    _run("fit", "--corpus", corpus, "--method", "voting", "--members", f"rules,{member}", "--folds", "2",
         "--out", model, "--no-progress")
    assert (next(model.glob("members/*-transformer")) / "model.safetensors").is_file()

    from ensemble_deid.corpus.formats import read_i2b2_xml
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.deid import Deidentifier

    test_dir = Path(Workspace(workspace).spec(corpus).splits["test"])
    spans = {}
    deid = Deidentifier.load(model)
    for xml in sorted(test_dir.glob("*.xml")):
        doc, _ = read_i2b2_xml(xml)
        spans[xml.name] = deid.spans([doc])[doc.id]
    assert spans and any(spans.values())
    # A fresh interpreter, and the checkpoint folder gone: the bundle carries the model.
    shutil.move(checkpoint, tmp_path / "elsewhere")
    try:
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "ensemble-deid"), "deidentify", str(model), str(test_dir),
             "--out", str(tmp_path / "out"), "--no-progress"],
            capture_output=True, text=True, env={**os.environ}, timeout=900)
    finally:
        shutil.move(tmp_path / "elsewhere", checkpoint)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, expected in spans.items():
        written, _ = read_i2b2_xml(tmp_path / "out" / "spans" / name)
        assert list(written.annotations) == expected
