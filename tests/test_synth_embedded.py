"""Embedded synthetic corpora: generated once, atomically, and regenerated
only when their stamp no longer matches."""
from __future__ import annotations

import json

import pytest

from ensemble_deid.corpus.formats import read_directory
from ensemble_deid.corpus.synth import EMBEDDED_CORPORA, is_complete, materialize
from ensemble_deid.corpus.synth.embedded import STAMP_NAME


def test_specs_name_both_styles_with_demo_sizes():
    assert EMBEDDED_CORPORA["synthetic-2014"].style == "i2b2-2014"
    assert EMBEDDED_CORPORA["synthetic-2016"].style == "ngrid-2016"
    for spec in EMBEDDED_CORPORA.values():
        assert 15 <= spec.train_docs <= 100 and 30 <= spec.test_docs <= 50


def test_materialize_generates_once_and_reuses(tmp_path):
    target = tmp_path / "ws" / "synthetic-2016"
    paths = materialize("synthetic-2016", target, train_docs=3, test_docs=2)
    assert paths == {"train": target / "train", "test": target / "test"}
    train, problems = read_directory(paths["train"])
    test, problems_test = read_directory(paths["test"])
    assert problems == problems_test == []
    assert len(train) == 3 and len(test) == 2
    assert {d.id for d in train}.isdisjoint(d.id for d in test)
    assert is_complete("synthetic-2016", target, None) is False  # other sizes than the spec
    stamp = json.loads((target / STAMP_NAME).read_text())
    assert stamp["train_docs"] == 3 and stamp["style"] == "ngrid-2016"
    before = {p.name: p.stat().st_mtime_ns for p in paths["train"].iterdir()}
    assert materialize("synthetic-2016", target, train_docs=3, test_docs=2) == paths
    assert {p.name: p.stat().st_mtime_ns for p in paths["train"].iterdir()} == before
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".") and p.suffix == ".tmp"]


def test_stale_stamp_regenerates_and_sizes_change(tmp_path):
    target = tmp_path / "synthetic-2014"
    materialize("synthetic-2014", target, train_docs=4, test_docs=2)
    stamp = json.loads((target / STAMP_NAME).read_text())
    stamp["generator_version"] = "0-old"
    (target / STAMP_NAME).write_text(json.dumps(stamp))
    (target / "train" / "stray.xml").write_text("<not a record/>")
    materialize("synthetic-2014", target, train_docs=4, test_docs=2)
    assert not (target / "train" / "stray.xml").exists()
    assert is_complete("synthetic-2014", target) is False
    materialize("synthetic-2014", target, train_docs=5, test_docs=2)
    docs, _ = read_directory(target / "train")
    assert len(docs) == 5


def test_materialize_is_deterministic(tmp_path):
    a = materialize("synthetic-2014", tmp_path / "a", train_docs=3, test_docs=2)
    b = materialize("synthetic-2014", tmp_path / "b", train_docs=3, test_docs=2)
    for split in ("train", "test"):
        names = sorted(p.name for p in a[split].iterdir())
        assert names == sorted(p.name for p in b[split].iterdir())
        for name in names:
            assert (a[split] / name).read_bytes() == (b[split] / name).read_bytes()


def test_foreign_folder_is_never_replaced(tmp_path):
    target = tmp_path / "synthetic-2016"
    target.mkdir()
    (target / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        materialize("synthetic-2016", target, train_docs=2, test_docs=1)
    assert (target / "mine.txt").read_text() == "keep"


def test_unknown_name():
    with pytest.raises(KeyError):
        materialize("synthetic-1999", "unused")
