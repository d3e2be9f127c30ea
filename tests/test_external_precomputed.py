"""``precomputed``: importing any system's output, and the round trip
``cv`` -> ``cache export`` -> ``precomputed`` -> identical cache contents."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.cli import main
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
from ensemble_deid.corpus.document import Annotation
from ensemble_deid.taggers.external.base import ExternalOutputError
from ensemble_deid.corpus.formats import write_i2b2_xml
from ensemble_deid.taggers.registry import make_tagger
from ensemble_deid.corpus.workspace import Workspace

from . import PLUGINS  # noqa: F401  (registers the memorize test plugin)
from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus


def _write(docs, folder: Path, annotate=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        out = doc if annotate is None else doc.with_annotations(annotate(doc))
        write_i2b2_xml(out, folder / f"{doc.id}.xml")
    return folder


def _brat(docs, folder: Path, lines) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (folder / f"{doc.id}.txt").write_text(doc.text, encoding="utf-8")
        (folder / f"{doc.id}.ann").write_text(lines(doc), encoding="utf-8")
    return folder


class TestPrecomputedContract(TaggerContract):
    tagger_name = "precomputed"
    learns = False

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _outputs(cls, tmp_path_factory, corpus):
        # A "foreign system" that found every date and phone number of the gold.
        keep = lambda d: [a for a in d.annotations if a.type in ("DATE", "PHONE")]  # noqa: E731
        folder = tmp_path_factory.mktemp("foreign")
        _write(corpus[0] + corpus[1], folder, keep)
        cls.tagger_params = {"test_dir": str(folder)}
        yield
        cls.tagger_params = {}

    def test_imports_exactly_what_the_files_say(self, predictions, corpus):
        for pred, doc in zip(predictions, corpus[1]):
            want = {a.key for a in doc.annotations if a.type in ("DATE", "PHONE")}
            assert {s.key for s in pred.spans(doc)} == want


def test_missing_documents_are_named(tmp_path):
    docs = tiny_corpus(6)
    folder = _write(docs[:4], tmp_path / "out")
    tagger = make_tagger("precomputed", test_dir=str(folder)).fit([])
    with pytest.raises(ExternalOutputError, match=r"no prediction file for 2 of 6 document\(s\): '002-01', '002-02'"):
        tagger.predict(docs)


def test_text_mismatch_is_an_error(tmp_path):
    docs = tiny_corpus(2)
    folder = _write(docs, tmp_path / "out")
    changed = docs[1].text.replace("Record date", "Record data")
    from ensemble_deid.corpus.document import Document

    write_i2b2_xml(Document(docs[1].id, changed, []), folder / f"{docs[1].id}.xml")
    tagger = make_tagger("precomputed", test_dir=str(folder)).fit([])
    with pytest.raises(ExternalOutputError, match=r"000-02.xml: its text differs from the gold text of document '000-02'"):
        tagger.predict(docs)


def test_span_off_the_text_is_an_error(tmp_path):
    docs = tiny_corpus(1)
    folder = _write(docs, tmp_path / "out")
    path = folder / f"{docs[0].id}.xml"
    n = len(docs[0].text)
    xml = path.read_text(encoding="utf-8").replace(
        "<TAGS>\n", f'<TAGS>\n<DATE id="X1" start="{n - 2}" end="{n + 5}" TYPE="DATE" comment="" />\n'
    )
    path.write_text(xml, encoding="utf-8")
    tagger = make_tagger("precomputed", test_dir=str(folder)).fit([])
    with pytest.raises(ExternalOutputError, match=r"out of range"):
        tagger.predict(docs)


def test_document_in_two_folders_is_an_error(tmp_path):
    docs = tiny_corpus(2)
    a = _write(docs, tmp_path / "a")
    b = _write(docs[:1], tmp_path / "b")
    with pytest.raises(ExternalOutputError, match="'000-01' has predictions in two places"):
        make_tagger("precomputed", test_dir=str(a), train_dir=str(b)).fit([])


def test_brat_with_foreign_types_label_map_and_snapping(tmp_path):
    docs = tiny_corpus(3)

    def lines(doc):
        out = []
        for i, a in enumerate(doc.annotations):
            if a.type == "PATIENT":  # the foreign system cut the first letter and the last one off
                s, e = a.start + 1, a.end - 1
                out.append(f"T{i}\tPERSONA {s} {e}\t{doc.text[s:e]}")
            elif a.type == "DATE":
                out.append(f"T{i}\tFECHA {a.start} {a.end}\t{doc.text[a.start:a.end]}")
        return "\n".join(out) + "\n"

    folder = _brat(docs, tmp_path / "brat", lines)
    lm = tmp_path / "theirs.toml"
    lm.write_text('[types]\nPERSONA = "NAME:PATIENT"\nFECHA = "DATE:DATE"\n', encoding="utf-8")
    tagger = make_tagger("precomputed", test_dir=str(folder), label_map=str(lm), format="brat").fit([])
    preds = tagger.predict(docs)
    for pred, doc in zip(preds, docs):
        want = {a.key for a in doc.annotations if a.type in ("PATIENT", "DATE")}
        assert {s.key for s in pred.spans(doc)} == want
    assert tagger.snapped_spans_ == 3 and tagger.dropped_spans_ == 0
    env = tagger.environment()
    assert env["snapped_spans"] == "3" and env["foreign_spans"] == "6"


def test_changed_files_change_the_cache_key(tmp_path):
    docs = tiny_corpus(2)
    folder = _write(docs, tmp_path / "out")
    before = make_tagger("precomputed", test_dir=str(folder)).param_hash()
    _write(docs, folder, lambda d: [])
    after = make_tagger("precomputed", test_dir=str(folder)).param_hash()
    assert before != after


def test_fold_dirs_and_a_malformed_file_caches_nothing(tmp_path):
    docs = tiny_corpus(12)
    train, test = docs[:8], docs[8:]
    _write(train[:4], tmp_path / "oof" / "fold-0")
    _write(train[4:], tmp_path / "oof" / "fold-1")
    _write(test, tmp_path / "test")
    cache = PredictionCache(tmp_path / "cache")
    engine = CrossValidation(train, {"test": test}, cache, k=2, seed=0)
    spec = TaggerSpec.parse(f"precomputed:test_dir={tmp_path / 'test'},fold_dirs={tmp_path / 'oof' / 'fold-*'}")
    runs = engine.run([spec], progress=False)
    run = runs[spec.label]
    assert set(run.oof) == {d.id for d in train} and set(run.targets["test"]) == {d.id for d in test}
    for doc in train:
        assert {s.key for s in run.oof[doc.id].spans(doc)} == {a.key for a in doc.annotations}

    (tmp_path / "test" / f"{test[0].id}.xml").write_text("<deIdi2b2><TEXT>", encoding="utf-8")
    broken = TaggerSpec.parse(f"precomputed:test_dir={tmp_path / 'test'},fold_dirs={tmp_path / 'oof' / 'fold-*'}")
    with pytest.raises(ExternalOutputError, match="malformed XML"):
        engine.run([broken], progress=False)
    entry, _ = engine.entry_key(broken)
    assert entry != run.entry  # the changed file changed the key ...
    test_part = next(t.part for t in engine.parts(broken) if t.target == "test")
    assert cache.part_status(test_part) == "missing"  # ... and the failing part was not cached


def test_round_trip_cache_export_then_import(tmp_path):
    """cv(memorize) -> cache export -> cv(precomputed on the export) gives the same cached tags."""
    docs = tiny_corpus(24)
    _write(docs[:18], tmp_path / "train")
    _write(docs[18:], tmp_path / "test")
    ws = tmp_path / "ws"
    runner = CliRunner()

    def cli(*args):
        result = runner.invoke(main, ["--workspace", str(ws), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    cli("corpus", "add", "tiny", "--train", str(tmp_path / "train"), "--test", str(tmp_path / "test"))
    cli("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "3", "--no-progress")
    out = tmp_path / "export"
    cli("cache", "export", str(out), "--corpus", "tiny")
    test_dirs = sorted((out / "memorize").glob("*/*/predict-*"))  # LABEL/VERSION-PARAMHASH/TRAINFP/PART
    fold_dirs = sorted((out / "memorize").glob("*/*/oof-*"))
    assert len(test_dirs) == 1 and len(fold_dirs) == 3
    imported = f"precomputed:test_dir={test_dirs[0]},fold_dirs={fold_dirs[0].parent / 'oof-*'}"
    cli("cv", "--corpus", "tiny", "--taggers", imported, "--folds", "3", "--no-progress")

    corpus = Workspace(ws).load("tiny")
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(Workspace(ws).cache_dir), k=3, seed=0)
    runs = engine.collect([TaggerSpec.parse("memorize"), TaggerSpec.parse(imported)])
    original, back = runs["memorize"], runs[TaggerSpec.parse(imported).label]
    assert back.external and not original.external
    assert {d: p.tags for d, p in back.oof.items()} == {d: p.tags for d, p in original.oof.items()}
    assert {d: p.tags for d, p in back.targets["test"].items()} == {d: p.tags for d, p in original.targets["test"].items()}
    assert any(t != "O" for p in back.targets["test"].values() for t in p.tags)
    assert all(r["environment"]["snapped_spans"] == "0" for r in back.records)
