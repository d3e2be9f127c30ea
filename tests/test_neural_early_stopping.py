"""Neural members choose their epoch inside each training run (issue 29):
early stopping on a held-out part of that run's own training notes, whole
patients, so the test split never chooses a setting; the choice is recorded in
the cached run's metadata and is the same for the same seed."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("torchcrf")

from ensemble_deid.cli import main  # noqa: E402
from ensemble_deid.taggers.neural.base import held_out_fingerprint, split_held_out  # noqa: E402
from ensemble_deid.taggers.registry import tagger_class  # noqa: E402

from .tiny_corpus import tiny_corpus  # noqa: E402

SMALL = dict(epochs=4, patience=2, batch_size=4, lr=0.02, char_dim=8, char_lstm_dim=8, word_dim=16,
             word_lstm_dim=16, corpus_vectors=False)
SPEC = "lstm-crf-l:" + ",".join(f"{k}={str(v).lower()}" for k, v in SMALL.items()) + ",validation_fraction=0.25"


def _group(doc) -> str:
    return str(doc.metadata.get("group", doc.id))


def test_the_default_holds_out_training_notes_and_refits():
    for name in ("lstm-crf-n", "lstm-crf-l", "lstm-l", "lstm-crf-fea"):
        tagger = tagger_class(name)()
        assert tagger.validation_fraction == 0.1 and tagger.refit and tagger.epochs == 30, name


def test_cv_records_the_epoch_chosen_on_its_own_training_notes(tiny_registered, workspace):
    result = CliRunner().invoke(main, ["cv", "--corpus", tiny_registered, "--taggers", SPEC, "--folds", "3",
                                       "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    from ensemble_deid.corpus.workspace import Workspace

    corpus = Workspace(workspace).load(tiny_registered)
    train, test = list(corpus.train), list(corpus.test)
    assert len({_group(d) for d in train}) < len(train)  # patients with several notes: grouping matters
    records = sorted(p for p in Path(workspace, "cached_predictions").rglob("lstm-crf-l/*/*/*/*.json")
                     if p.parent.name != "model")  # the parts, not the kept model's record
    assert len(records) == 4  # 3 folds + the test split
    for record_path in records:
        record = json.loads(record_path.read_text())
        predicted = set(np.load(record_path.with_suffix(".npz"))["doc_ids"].tolist())
        fit_docs = train if record["fold"] is None else [d for d in train if d.id not in predicted]
        assert record["fit_documents"] == len(fit_docs)
        held, kept = split_held_out(fit_docs, 0.25, 0)[::-1]
        choices = record["training_choices"]
        assert choices["held_out_fingerprint"] == held_out_fingerprint(held)
        assert choices["held_out_documents"] == len(held) > 0
        # Never a predicted (test) note, never a patient on both sides of the split.
        assert not {d.id for d in held} & (predicted | {d.id for d in test})
        assert not {_group(d) for d in held} & {_group(d) for d in kept}
        assert 1 <= choices["chosen_epoch"] <= choices["epochs_run"] <= SMALL["epochs"]
        assert choices["refit_epochs"] == choices["chosen_epoch"]


def test_the_choice_is_deterministic_for_a_seed():
    docs = tiny_corpus(24)[:16]
    params = {**SMALL, "validation_fraction": 0.25}
    first, again = (tagger_class("lstm-crf-n")(**params).fit(docs) for _ in range(2))
    assert first.training_choices() == again.training_choices()
    assert first.history_ and [h["dev_f1"] for h in first.history_] == [h["dev_f1"] for h in again.history_]
    assert [p.tags for p in first.predict(docs[:4])] == [p.tags for p in again.predict(docs[:4])]
    other = tagger_class("lstm-crf-n")(**params, random_state=3).fit(docs)
    assert other.training_choices()["held_out_fingerprint"] != first.training_choices()["held_out_fingerprint"]
