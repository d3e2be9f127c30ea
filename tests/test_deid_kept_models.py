"""Models cv keeps for fit (``experiment.kept``): fit after cv reuses the
very models whose test predictions the cache holds (no training), a damaged
kept model is refused and the member trained, an interrupted save leaves
nothing fit would take, published folders never get a model, and every kept
file is owner-only whatever the umask. On the tiny synthetic corpus with
cheap taggers."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.workspace import Workspace
from ensemble_deid.deid import Deidentifier, read_manifest
from ensemble_deid.deid import fit as fit_module
from ensemble_deid.experiment import cache as cache_module
from ensemble_deid.experiment import kept
from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, parse_tagger_specs

from .tiny_corpus import tiny_corpus

MEMBERS = "rules,crf:max_iterations=10,svm"
TRAINED = ("crf:max_iterations=10", "svm")


def _cli(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.fixture(autouse=True)
def _no_outside_published(no_outside_published):
    pass


@pytest.fixture(scope="module")
def cv_template(tmp_path_factory):
    """A workspace where cv ran the members on the tiny corpus (3 folds),
    models kept: made once for the module, copied for each test."""
    from .conftest import register_corpus

    root = tmp_path_factory.mktemp("kept-cv")
    workspace = root / "workspace"
    workspace.mkdir()
    mp = pytest.MonkeyPatch()
    mp.setenv("ENSEMBLE_DEID_HOME", str(workspace))
    for name in ("ENSEMBLE_DEID_CACHE", "ENSEMBLE_DEID_PUBLISHED"):
        mp.delenv(name, raising=False)
    mp.setattr(cache_module, "_REPORTED", set())
    try:
        docs = tiny_corpus(40)
        register_corpus(workspace, "tiny", {"train": (root / "tiny-train", docs[:30]),
                                            "test": (root / "tiny-test", docs[30:])})
        _cli("cv", "--corpus", "tiny", "--taggers", MEMBERS, "--folds", "3", "--no-progress")
    finally:
        mp.undo()
    return workspace


@pytest.fixture
def tiny_cv(cv_template, workspace):
    """cv of the members on the tiny corpus (3 folds), models kept: this
    test's own copy (modes and times kept) of the module's cv run."""
    import shutil

    shutil.rmtree(workspace)
    shutil.copytree(cv_template, workspace, symlinks=True)
    return workspace


def _cache_root(workspace) -> Path:
    return Workspace(workspace).cache_dir


def _fit(out, *extra):
    return _cli("fit", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
                "--out", out, "--no-progress", *extra)


def _no_member_training(monkeypatch):
    """fit_member fails for any trained member: a fit that passes reused them all."""
    real = fit_module.fit_member

    def refuse(spec, train):
        if not spec.make().external:
            raise AssertionError(f"{spec.label} was trained")
        return real(spec, train)

    monkeypatch.setattr(fit_module, "fit_member", refuse)


def test_fit_after_cv_reuses_the_kept_models_and_reproduces_the_ensemble(tiny_cv, tmp_path, monkeypatch):
    _no_member_training(monkeypatch)
    res = _fit(tmp_path / "model")
    for label in TRAINED:
        assert f"member {label}: reused the model cv kept" in res.output
    assert "member rules: an external system" in res.output
    assert "2 kept by cv and reused, 0 trained" in res.output
    manifest = read_manifest(tmp_path / "model")
    assert {k: v["model"] for k, v in manifest["member_models"].items()} == {
        "rules": "external", "crf:max_iterations=10": "kept by cv", "svm": "kept by cv"}
    # the bundle's spans are the ensemble command's test predictions, document by document
    ensemble = _cli("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
                    "--no-progress")
    assert ensemble.exit_code == 0
    from ensemble_deid.ensemble.run import run_method

    done = run_method(Workspace(tiny_cv), "tiny", "voting", MEMBERS, folds=3, oof=False, progress=False)
    model = Deidentifier.load(tmp_path / "model")
    test = Workspace(tiny_cv).load("tiny").test
    spans = model.spans(test)
    assert len(test) == 10 and all(spans[d.id] == done.test[d.id].spans(d) for d in test)
    assert manifest["verification"]["documents_differing_from_ensemble_cache"] == 0


def test_a_fit_unlike_cv_is_not_used_when_a_kept_model_serves(tiny_cv, tmp_path, crf_fit_unlike_cv):
    """Before kept models, fit retrained every member: a member whose second
    training differs from cv's changed the bundle's output. Reused, it cannot."""
    _fit(tmp_path / "model")
    verification = read_manifest(tmp_path / "model")["verification"]
    assert verification["member_documents_differing_from_their_cached_runs"]["crf:max_iterations=10"] == 0
    assert verification["documents_differing_from_ensemble_cache"] == 0


def test_a_damaged_kept_model_is_refused_reported_and_retrained(tiny_cv, tmp_path):
    (crf_model,) = [p for p in kept.kept_models(_cache_root(tiny_cv)) if p.parts[-4] == "crf"]
    saved = crf_model / kept.SAVED / "state.json"
    data = bytearray(saved.read_bytes())
    data[len(data) // 2] ^= 1
    saved.write_bytes(bytes(data))
    res = _cli("cache", "verify", ok=False)
    assert res.exit_code == 1 and "corrupt kept model" in res.output and "checksum mismatch" in res.output
    out = _fit(tmp_path / "model").output
    assert "member crf:max_iterations=10: training on 30 documents" in out and "checksum mismatch" in out
    assert "member svm: reused the model cv kept" in out
    origins = read_manifest(tmp_path / "model")["member_models"]
    assert origins["crf:max_iterations=10"]["model"] == "trained by fit"
    assert "checksum mismatch" in origins["crf:max_iterations=10"]["why"]
    res = _cli("cache", "verify", "--remove")
    assert "removed damaged kept model" in res.output and not crf_model.exists()


def test_a_kept_model_edited_with_recomputed_checksums_is_refused(tiny_cv, tmp_path):
    """The part names the model it came from: a model swapped in (here the
    svm's, with a consistent record) is not the one, whatever its checksums."""
    models = {p.parts[-4]: p for p in kept.kept_models(_cache_root(tiny_cv))}
    record = json.loads((models["crf"] / kept.RECORD).read_bytes())
    record["created"] = "2000-01-01T00:00:00+0000"
    record["record_sha256"] = cache_module._record_checksum(record)
    (models["crf"] / kept.RECORD).write_text(json.dumps(record))
    out = _fit(tmp_path / "model").output
    assert "member crf:max_iterations=10: training" in out and "not the model that made the cached predictions" in out


def test_an_interrupted_save_leaves_no_model_and_the_next_cv_keeps_one(tiny_registered, workspace, monkeypatch):
    def interrupted(root):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(kept, "owner_only_tree", interrupted)
        res = CliRunner().invoke(main, ["cv", "--corpus", "tiny", "--taggers", "crf:max_iterations=10", "--folds", "3",
                                        "--no-progress"])
    assert res.exit_code != 0
    root = _cache_root(workspace)
    assert kept.kept_models(root) == []
    assert not list((root / "v1").rglob(".model.*"))  # no half-written folder either
    _cli("cv", "--corpus", "tiny", "--taggers", "crf:max_iterations=10", "--folds", "3", "--no-progress")
    (model,) = kept.kept_models(root)
    kept.check(model)


def test_no_keep_models_keeps_none_and_fit_says_why_it_trains(tiny_registered, workspace, tmp_path):
    _cli("cv", "--corpus", "tiny", "--taggers", MEMBERS, "--folds", "3", "--no-progress", "--no-keep-models")
    assert kept.kept_models(_cache_root(workspace)) == []
    out = _fit(tmp_path / "model").output
    assert "member svm: training on 30 documents (its cached test predictions name no kept model" in out
    assert "0 kept by cv and reused, 2 trained" in out


def test_rm_models_deletes_kept_models_only(tiny_cv, tmp_path):
    root = _cache_root(tiny_cv)
    assert len(kept.kept_models(root)) == 2
    res = _cli("cache", "rm-models")
    assert "removed 2 kept model(s)" in res.output and kept.kept_models(root) == []
    assert "0 corrupt or incomplete" in _cli("cache", "verify").output  # every prediction part is still there
    assert "0 kept by cv and reused, 2 trained" in _fit(tmp_path / "model").output


def test_published_folders_never_hold_models(tiny_cv, tmp_path):
    root = _cache_root(tiny_cv)
    assert len(kept.kept_models(root)) == 2
    out = tmp_path / "published"
    _cli("cache", "publish", "--corpus", "tiny", "--out", out, "--folds", "3", "--public", "--licence", "CC BY 4.0")
    files = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()]
    assert files and not [f for f in files if "/model/" in f or f.endswith((kept.RECORD, ".lock"))]
    assert all(f == "published.json" or f.startswith("documents/") or f.endswith(("/all.npz", "/all.json"))
               or "/oof-" in f or f.endswith("entry.json") for f in files)


def test_targets_share_one_kept_model(tmp_path):
    """Each full-training part (the test split, another target) is predicted
    by one model, trained once: fit's model made all of them."""
    docs = tiny_corpus(30, seed=5)
    cache = PredictionCache(tmp_path / "cache", published=())
    engine = CrossValidation(docs[:22], {"test": docs[22:], "other": docs[26:]}, cache, k=3)
    (run,) = engine.run(parse_tagger_specs("crf:max_iterations=10"), progress=False).values()
    records = [r for p, r in zip(run.parts, run.records) if p.kind == "predict"]
    assert len(records) == 2 and len({r["model_sha256"] for r in records}) == 1
    assert sum(bool(r.get("model_reused")) for r in records) == 1
    model, sha = kept.load(cache.root, run.entry, records[0]["model_sha256"])
    for name, target in engine.targets.items():
        predicted = {p.doc_id: p.tags for p in model.predict(target)}
        assert predicted == {d: p.tags for d, p in run.targets[name].items()}


def test_kept_models_are_owner_only_under_umask_000(tiny_registered, workspace):
    old = os.umask(0)
    try:
        _cli("cv", "--corpus", "tiny", "--taggers", "crf:max_iterations=10,lstm-l:epochs=1,device=cpu", "--folds", "3",
             "--no-progress")
    finally:
        os.umask(old)
    models = kept.kept_models(_cache_root(workspace))
    assert {p.parts[-4] for p in models} == {"crf", "lstm-l"}
    for model in models:
        for path in [model, *model.rglob("*"), model.parent / kept.LOCK]:
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_an_ensemble_cached_before_a_member_test_part_was_recomputed_is_fitted_again(tiny_cv):
    """The ensemble's cache key names its members' entries, not what their
    test parts hold: a member's test part made again (here: by another CRF,
    as a retrained network on other hardware would be) must not leave the
    ensemble's cached test predictions standing."""
    from ensemble_deid.ensemble.run import run_method

    ws = Workspace(tiny_cv)
    done = run_method(ws, "tiny", "voting", MEMBERS, folds=3, oof=False, progress=False)
    corpus, engine = done.corpus, done.engine
    crf = done.runs["crf:max_iterations=10"]
    (spec,) = parse_tagger_specs("crf:max_iterations=1")
    other = spec.make().fit(corpus.train)
    part = [p for p in engine.parts(parse_tagger_specs("crf:max_iterations=10")[0]) if p.target == "test"][0].part
    engine.cache.write_part(part, other.predict(corpus.test), corpus.test, {"tagger_label": "crf:max_iterations=10"})
    said = []
    again = run_method(ws, "tiny", "voting", MEMBERS, folds=3, oof=False, progress=False, log=said.append)
    assert any("made from other member test predictions" in s for s in said)
    members_test = {label: run.test for label, run in again.runs.items()}
    assert members_test["crf:max_iterations=10"] != crf.test
    expected = {p.doc_id: p.tags for p in again.learner.predict(members_test, corpus.test)}
    assert {d: p.tags for d, p in again.test.items()} == expected
    said.clear()
    run_method(ws, "tiny", "voting", MEMBERS, folds=3, oof=False, progress=False, log=said.append)
    assert not any("fitting" in s for s in said)  # fitted once, then reused


def test_a_model_that_cannot_be_saved_still_gives_its_predictions(tiny_registered, workspace, tmp_path, monkeypatch):
    """Keeping is a saving for fit: a tagger whose state cannot be saved
    (an adapter holding an object the safe format refuses) still gets its
    test part, and fit trains it, saying why."""
    from ensemble_deid.taggers.base import Tagger
    from ensemble_deid.taggers.state import StateError

    def unsavable(self, folder):
        raise StateError(f"{folder}: a value of a kind the safe format refuses")

    with monkeypatch.context() as patched:
        patched.setattr(Tagger, "save", unsavable)
        _cli("cv", "--corpus", "tiny", "--taggers", "crf:max_iterations=10", "--folds", "3", "--no-progress")
    root = _cache_root(workspace)
    assert kept.kept_models(root) == [] and not list((root / "v1").rglob(".model.*"))
    out = _cli("fit", "--corpus", "tiny", "--method", "voting", "--members", "rules,crf:max_iterations=10", "--folds",
               "3", "--out", tmp_path / "model", "--no-progress").output
    assert "member crf:max_iterations=10: training on 30 documents (cv could not save its model (StateError))" in out


def test_fit_of_one_tagger_reuses_its_kept_model(tiny_cv, tmp_path, monkeypatch):
    _no_member_training(monkeypatch)
    out = _cli("fit", "--corpus", "tiny", "--tagger", "svm", "--out", tmp_path / "svm").output
    assert "member svm: reused the model cv kept" in out
    assert read_manifest(tmp_path / "svm")["member_models"]["svm"]["model"] == "kept by cv"
    corpus = Workspace(tiny_cv).load("tiny")
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(_cache_root(tiny_cv)), k=3)
    cached = engine.collect(parse_tagger_specs("svm"))["svm"].targets["test"]
    predicted = Deidentifier.load(tmp_path / "svm").predict(corpus.test)
    assert {p.doc_id: p.tags for p in predicted} == {d: p.tags for d, p in cached.items()}


def test_a_killed_runs_half_written_model_is_never_taken_and_is_swept(tiny_cv, tmp_path):
    """What a killed cv leaves (its temp folder beside the model) is not a
    model fit would take; cache verify calls it left over and --remove deletes it."""
    models = {p.parts[-4]: p for p in kept.kept_models(_cache_root(tiny_cv))}
    crf = models["crf"]
    half = crf.parent / ".model.999999999.1.tmp"
    os.replace(crf, half)  # as if the rename into place never happened
    old = half.stat().st_mtime - 3600
    os.utime(half, (old, old))
    assert kept.kept_models(_cache_root(tiny_cv)) == [models["svm"]]
    res = _cli("cache", "verify")
    assert "left over" in res.output and ".model.999999999.1.tmp" in res.output
    assert "member crf:max_iterations=10: training on 30 documents" in _fit(tmp_path / "model").output
    _cli("cache", "verify", "--remove")
    assert not half.exists()
