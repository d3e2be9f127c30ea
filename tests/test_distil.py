"""``ensemble-deid distil`` (issue 51): a fitted bundle taught to one tagger.

The teacher is the session's tiny voting bundle (rules, a 10-iteration CRF
and the SVM, 3 folds; ``conftest.fitted_tiny_bundle``); the students are
10-iteration CRFs, so each run takes a few seconds."""
from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.workspace import Workspace
from ensemble_deid.deid.bundle import read_manifest
from ensemble_deid.deid.distil import Mix, teacher_out_of_fold, training_set, union_spans
from ensemble_deid.deid.shift import ShiftOptions, augmented_copies

from .conftest import TINY_BUNDLE_MEMBERS
from .tiny_corpus import tiny_corpus

STUDENT = "crf:max_iterations=10"


@pytest.fixture
def teacher(fitted_tiny_bundle, monkeypatch):
    monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(fitted_tiny_bundle / "ws"))
    monkeypatch.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    return fitted_tiny_bundle


def _run(*args):
    return CliRunner().invoke(main, ["distil", *map(str, args)])


def _owner_only(folder: Path):
    for path in [folder, *folder.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def _unlabelled(folder: Path, n: int = 3) -> Path:
    folder.mkdir()
    for i, doc in enumerate(tiny_corpus(n, seed=77)):
        (folder / f"note{i}.txt").write_text(doc.text, encoding="utf-8")
    return folder


def test_the_teacher_labels_are_the_ensemble_steps_out_of_fold_predictions(teacher):
    """The labels distil takes on the training notes are the ``ensemble``
    step's cached out-of-fold predictions, and a mix of teacher labels trains on them."""
    from ensemble_deid.ensemble.run import run_method

    ws = Workspace(teacher / "ws")
    corpus, oof = teacher_out_of_fold(ws, read_manifest(teacher / "model"))
    cached = run_method(ws, "tiny", "voting", TINY_BUNDLE_MEMBERS, folds=3, progress=False).result["oof"]
    assert [oof[d.id].spans(d) for d in corpus.train] == [cached[d.id].spans(d) for d in corpus.train]
    taught = training_set(Mix("teacher"), corpus.train, oof, {}, [])
    assert [list(d.annotations) for d in taught] == [oof[d.id].spans(d) for d in corpus.train]


SYNTH_MEMBERS = "rules,crf:max_iterations=10,svm"


@pytest.fixture(scope="module")
def synthetic_teacher(tmp_path_factory):
    """A voting bundle fitted on the embedded synthetic-2014 corpus (3 folds):
    unlike the tiny corpus's, its out-of-fold labels differ from what it
    predicts on its own training notes."""
    root = tmp_path_factory.mktemp("synth-teacher")
    mp = pytest.MonkeyPatch()
    mp.setenv("ENSEMBLE_DEID_HOME", str(root / "ws"))
    mp.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    try:
        result = CliRunner().invoke(main, ["fit", "--corpus", "synthetic-2014", "--method", "voting", "--members",
                                           SYNTH_MEMBERS, "--folds", "3", "--out", str(root / "model"),
                                           "--review", "none", "--no-progress"])
        assert result.exit_code == 0, result.output
        yield root
    finally:
        mp.undo()


@pytest.mark.slow  # fits a 3-member ensemble on the 32 synthetic-2014 notes, then a student
def test_the_student_never_learns_the_teachers_in_sample_predictions(synthetic_teacher, tmp_path, monkeypatch):
    """On synthetic-2014 the teacher predicting its own training notes
    differs from its out-of-fold outputs on most notes: the labels distil
    uses are the out-of-fold ones (this fails if the in-sample ones were)."""
    from ensemble_deid.deid.model import Deidentifier
    from ensemble_deid.ensemble.run import run_method

    monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(synthetic_teacher / "ws"))
    ws = Workspace(synthetic_teacher / "ws")
    corpus, oof = teacher_out_of_fold(ws, read_manifest(synthetic_teacher / "model"))
    cached = run_method(ws, "synthetic-2014", "voting", SYNTH_MEMBERS, folds=3, progress=False).result["oof"]
    in_sample = {p.doc_id: p for p in Deidentifier.load(synthetic_teacher / "model").predict(corpus.train)}
    differ = [d.id for d in corpus.train if in_sample[d.id].spans(d) != cached[d.id].spans(d)]
    assert len(differ) > len(corpus.train) // 2
    assert all(oof[d.id].spans(d) == cached[d.id].spans(d) for d in corpus.train)
    out = tmp_path / "student"
    result = _run(synthetic_teacher / "model", "--out", out, "--tagger", STUDENT, "--mix", "labels=teacher",
                  "--no-progress")
    assert result.exit_code == 0, result.output
    d = read_manifest(out)["distillation"]
    assert d["trained_on"]["labels"] == "teacher" and d["teacher"]["labels_on_training_notes"] == "out-of-fold"


def test_a_teacher_whose_members_changed_is_refused(teacher, tmp_path):
    """Out-of-fold predictions that do not reproduce the bundle's recorded
    leak counts are not this teacher's: refused, naming the field."""
    from ensemble_deid.deid.bundle import BundleError

    manifest = read_manifest(teacher / "model")
    docs = manifest["oof_leaks"]["documents"]
    first = next(iter(docs[0].values()))
    first["token"] = [first["token"][0] + 1, first["token"][1]]
    with pytest.raises(BundleError, match="oof_leaks"):
        teacher_out_of_fold(Workspace(teacher / "ws"), manifest)


def test_augmented_copies_keep_the_gold_offsets():
    docs = tiny_corpus(6, seed=3)
    (first, second) = augmented_copies(docs, 2, ShiftOptions(identifiers=True, seed=4))
    for original, a, b in zip(docs, first, second):
        assert a.id == f"{original.id}~aug1" and b.id == f"{original.id}~aug2"
        assert a.group == b.group == original.group and a.metadata["copy_of"] == original.id
        for copy in (a, b):
            assert [(s.category, s.type) for s in copy.annotations] == [(s.category, s.type) for s in original.annotations]
            assert all(s.text == copy.text[s.start:s.end] and s.text.strip() for s in copy.annotations)
            # the text between the spans is the original's
            cuts = lambda d: [d.text[x.end:y.start] for x, y in zip(d.annotations, d.annotations[1:])]  # noqa: E731
            assert cuts(copy) == cuts(original)
    redrawn = [(s.text, t.text) for o, c in zip(docs, first) for s, t in zip(o.annotations, c.annotations)]
    assert sum(x != y for x, y in redrawn) > len(redrawn) // 2
    assert [d.text for d in first] != [d.text for d in second]


def test_union_keeps_gold_and_adds_only_disjoint_teacher_spans():
    from ensemble_deid.corpus.document import Annotation

    gold = [Annotation(0, 4, "NAME", "PATIENT", "John"), Annotation(10, 14, "DATE", "DATE", "2020")]
    taught = [Annotation(0, 9, "NAME", "PATIENT", "John Hope"), Annotation(20, 25, "LOCATION", "CITY", "Tulsa")]
    assert [(a.start, a.end) for a in union_spans(gold, taught)] == [(0, 4), (10, 14), (20, 25)]


def test_mix_parsing_and_errors():
    from ensemble_deid.errors import ParameterError

    assert Mix.parse("labels=union,augment=2") == Mix("union", 2, 0)
    for bad in ("labels=silver", "augment=x", "copies=2", "augment=11"):
        with pytest.raises(ParameterError):
            Mix.parse(bad)


def test_distil_writes_a_student_with_its_provenance(teacher, tmp_path):
    extra = _unlabelled(tmp_path / "unlabelled")
    out = tmp_path / "student"
    result = _run(teacher / "model", "--out", out, "--tagger", STUDENT, "--unlabelled", extra, "--seed", "11",
                  "--mix", "labels=gold", "--mix", "labels=teacher,augment=1,unlabelled=2", "--no-progress")
    assert result.exit_code == 0, result.output + repr(result.exception)
    teacher_manifest = read_manifest(teacher / "model")
    manifest = read_manifest(out)
    d = manifest["distillation"]
    assert d["teacher"]["manifest_sha256"] == teacher_manifest["manifest_sha256"]
    assert d["teacher"]["labels_on_training_notes"] == "out-of-fold"
    assert d["objective"] == teacher_manifest["selection"]["objective"] == "f1"
    assert len(d["cv"]) == 2 and sum(r["chosen"] for r in d["cv"]) == 1 and d["folds"] == 3
    assert manifest["corpus"]["train_fingerprint"] == teacher_manifest["corpus"]["train_fingerprint"]
    assert [m["name"] for m in manifest["members"]] == ["crf"] and manifest["method"] is None
    assert len(manifest["oof_leaks"]["documents"]) == d["trained_on"]["training_notes"] == 22
    chosen = Mix(**d["chosen"]["mix"])
    expected = 22 * (1 + chosen.augment) + 3 * chosen.unlabelled
    assert d["trained_on"]["documents"] == expected
    _owner_only(out)
    _owner_only(teacher / "ws" / "cache" / "distil") if (teacher / "ws" / "cache" / "distil").exists() else None
    # the student is a bundle deidentify loads
    from ensemble_deid.deid.model import Deidentifier

    model = Deidentifier.load(out)
    assert model.members and model.method is None


def test_unlabelled_notes_are_labelled_by_the_teacher_and_trained_on(teacher, tmp_path):
    """With only a mix that uses them, the student's training set holds every
    unlabelled note (twice), carrying the teacher bundle's spans."""
    from ensemble_deid.deid.distil import read_unlabelled
    from ensemble_deid.deid.model import Deidentifier

    extra = _unlabelled(tmp_path / "unlabelled")
    out = tmp_path / "student"
    result = _run(teacher / "model", "--out", out, "--tagger", STUDENT, "--unlabelled", extra, "--seed", "12",
                  "--mix", "labels=gold,unlabelled=2", "--no-progress")
    assert result.exit_code == 0, result.output + repr(result.exception)
    trained = read_manifest(out)["distillation"]["trained_on"]
    assert trained["unlabelled_notes"] == 3 and trained["documents"] == 22 + 6
    assert trained["unlabelled_fingerprint"]
    docs = read_unlabelled(extra)
    spans = Deidentifier.load(teacher / "model").spans(docs)
    labelled = [d.with_annotations(spans[d.id]) for d in docs]
    assert sum(len(s) for s in spans.values()) > 0
    mixed = training_set(Mix("gold", 0, 2), [], {}, {}, labelled)
    assert [d.id for d in mixed] == [d.id for d in docs] * 2


def test_interrupted_choice_resumes_from_its_fold_records(teacher, tmp_path):
    args = ["--tagger", STUDENT, "--seed", "13", "--mix", "labels=gold", "--no-progress"]
    first = _run(teacher / "model", "--out", tmp_path / "a", *args)
    assert first.exit_code == 0, first.output
    assert first.output.count(": fold ") == 3
    records = sorted((teacher / "ws").rglob("distil/*/*.json"))
    again = _run(teacher / "model", "--out", tmp_path / "b", *args)
    assert again.exit_code == 0 and again.output.count(": fold ") == 0
    newest = max(records, key=lambda p: p.stat().st_mtime)
    newest.write_text(newest.read_text().replace('"seconds"', '"secondz"'))  # damaged: computed again
    third = _run(teacher / "model", "--out", tmp_path / "c", *args)
    assert third.exit_code == 0 and third.output.count(": fold ") == 1
    for name in "abc":
        assert read_manifest(tmp_path / name)["distillation"]["cv"][0]["strict_f1"] == \
            read_manifest(tmp_path / "a")["distillation"]["cv"][0]["strict_f1"]


@pytest.mark.parametrize("case", ["not-a-bundle", "tampered", "empty-unlabelled", "unknown-tagger", "external",
                                  "unlabelled-without-folder", "a-training-note-as-unlabelled"])
def test_bad_input_is_refused_before_any_work(teacher, tmp_path, case):
    model, extra = teacher / "model", None
    tagger = STUDENT
    mixes = ["--mix", "labels=gold"]
    if case == "not-a-bundle":
        model = tmp_path / "plain"
        model.mkdir()
        (model / "notes.txt").write_text("Patient John Smith")
        expected = "manifest.json"
    elif case == "tampered":
        import shutil

        model = tmp_path / "copy"
        shutil.copytree(teacher / "model", model)
        manifest = json.loads((model / "manifest.json").read_text())
        manifest["selection"]["objective"] = "recall"
        (model / "manifest.json").write_text(json.dumps(manifest))
        expected = "checksum mismatch"
    elif case == "empty-unlabelled":
        extra = tmp_path / "empty"
        extra.mkdir()
        mixes = ["--mix", "labels=gold,unlabelled=1"]
        expected = "no .txt or .xml notes"
    elif case == "a-training-note-as-unlabelled":  # the teacher would label it in sample
        from ensemble_deid.corpus.formats import load_directory

        extra = _unlabelled(tmp_path / "site")
        (extra / "copied.txt").write_text(load_directory(teacher / "train")[3].text, encoding="utf-8")
        mixes = ["--mix", "labels=gold,unlabelled=1"]
        expected = "copied.txt: the text of one of the teacher's training notes"
    elif case == "unknown-tagger":
        tagger = "crff"
        expected = "--tagger"
    elif case == "external":
        tagger = "rules"
        expected = "--tagger"
    else:
        mixes = ["--mix", "labels=gold,unlabelled=1"]
        expected = "--unlabelled"
    out = tmp_path / "student"
    result = _run(model, "--out", out, "--tagger", tagger, *mixes, "--no-progress",
                  *(["--unlabelled", extra] if extra else []))
    assert result.exit_code != 0 and expected in result.output, result.output
    assert "Traceback" not in result.output and "John" not in result.output
    assert ": fold " not in result.output  # refused before any student was trained
    assert not out.exists()


def test_a_single_tagger_teacher_teaches_its_cross_validated_labels(teacher, tmp_path):
    """A bundle of one tagger: its labels on the training notes are its
    cached cross-validation's out-of-fold predictions."""
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    fitted = CliRunner().invoke(main, ["fit", "--corpus", "tiny", "--tagger", STUDENT, "--out", str(tmp_path / "one")])
    assert fitted.exit_code == 0, fitted.output
    ws = Workspace(teacher / "ws")
    corpus, oof = teacher_out_of_fold(ws, read_manifest(tmp_path / "one"), source=tmp_path / "one")
    spec = TaggerSpec.parse(STUDENT)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=3)
    cached = engine.collect([spec])[spec.label].oof
    assert [oof[d.id].spans(d) for d in corpus.train] == [cached[d.id].spans(d) for d in corpus.train]


def test_the_students_settings_are_chosen_by_cv_and_a_bad_one_refused(teacher, tmp_path):
    bad = _run(teacher / "model", "--out", tmp_path / "bad", "--tagger", STUDENT, "--grid", "c9=1|2", "--no-progress")
    assert bad.exit_code != 0 and "--grid" in bad.output and ": fold " not in bad.output
    out = tmp_path / "student"
    result = _run(teacher / "model", "--out", out, "--tagger", STUDENT, "--mix", "labels=gold", "--seed", "14",
                  "--grid", "c2=0.01|1.0", "--no-progress")
    assert result.exit_code == 0, result.output
    d = read_manifest(out)["distillation"]
    assert [r["params"] for r in d["cv"]] == [{"c2": 0.01}, {"c2": 1.0}]
    chosen = next(r for r in d["cv"] if r["chosen"])
    assert chosen["objective_score"] == max(r["objective_score"] for r in d["cv"])
    assert d["chosen"]["params"] == chosen["params"]
    assert read_manifest(out)["members"][0]["params"]["__dict__"] and \
        dict(read_manifest(out)["members"][0]["params"]["__dict__"])["c2"] == chosen["params"]["c2"]
