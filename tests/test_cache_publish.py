"""Published prediction folders: ``cache publish`` writes them, the cache reads
them as a second, read-only source, and a tampered or stale one is never used."""
from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.workspace import Workspace
from ensemble_deid.experiment import cache as cache_module
from ensemble_deid.experiment import cv as cv_module
from ensemble_deid.experiment.cache import PUBLISHED_MANIFEST, PredictionCache, PublishedFolder
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

REPO = Path(__file__).resolve().parent.parent
PUBLISH = ["--public", "--licence", "CC BY 4.0", "--citation", "tiny test corpus"]


def _cli(*args, ws=None, ok=True):
    prefix = ["--workspace", str(ws)] if ws else []
    result = CliRunner().invoke(main, prefix + list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture(autouse=True)
def _no_outside_published(no_outside_published):
    pass


@pytest.fixture
def published(tiny_registered, workspace, tmp_path):
    """cv of memorize (trained: 3 folds + test) in the workspace, published into
    a 'clone' whose cache root holds only the published folder."""
    _cli("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    clone = tmp_path / "clone"
    (clone / "cached_predictions").mkdir(parents=True)
    out = clone / "cached_predictions" / "tiny"
    res = _cli("cache", "publish", "--corpus", "tiny", "--out", str(out), "--folds", "3", *PUBLISH)
    assert "published 1 entry" in res.output
    Workspace(clone).add_corpus(Workspace(workspace).spec("tiny"))
    return clone, out


def _no_training(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a model was trained")

    monkeypatch.setattr(cv_module, "execute_task", boom)


def test_fresh_clone_reuses_published_parts_and_trains_nothing(published, monkeypatch):
    clone, out = published
    _no_training(monkeypatch)
    res = _cli("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "3", "--no-progress", ws=clone)
    assert "0/4" in res.output  # 3 folds + test, none computed
    assert not (clone / "cached_predictions" / "v1").exists()  # nothing written to the workspace cache
    res = _cli("compare", "memorize", "memorize:max_len=6", "--corpus", "tiny", "--folds", "3", "--trials", "100", ws=clone)
    assert "(ref)" in res.output
    # the predictions read back are the workspace's, tag for tag
    corpus = Workspace(clone).load("tiny")
    original = Workspace(os.environ["ENSEMBLE_DEID_HOME"])
    runs = [CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(ws.cache_dir), k=3)
            .collect([TaggerSpec.parse("memorize")])["memorize"] for ws in (original, Workspace(clone))]
    assert {d: p.tags for d, p in runs[0].oof.items()} == {d: p.tags for d, p in runs[1].oof.items()}
    assert {d: p.tags for d, p in runs[0].targets["test"].items()} == {d: p.tags for d, p in runs[1].targets["test"].items()}


def test_ensemble_runs_from_published_members(published, monkeypatch):
    clone, _ = published
    _no_training(monkeypatch)
    res = _cli("ensemble", "--corpus", "tiny", "--members", "memorize,memorize:max_len=6", "--method", "voting",
               "--folds", "3", ws=clone)
    assert "voting" in res.output


def test_manifest_lists_every_file_with_its_checksum_and_provenance(published):
    _, out = published
    manifest = json.loads((out / PUBLISHED_MANIFEST).read_text())
    assert manifest["corpus"] == "tiny" and manifest["licence"] == "CC BY 4.0" and manifest["public"] is True
    assert manifest["folds"]["k"] == 3 and set(manifest["corpus_fingerprints"]) == {"train", "test"}
    (entry,) = manifest["entries"]
    assert entry["tagger"] == "memorize" and entry["params"] == {"delay": 0.0, "max_len": 6}
    assert len(entry["parts"]) == 4
    for part in entry["parts"]:
        assert part["fit_seconds"] is not None and "python" in json.dumps(part["environment"]).lower()
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {PUBLISHED_MANIFEST}
    assert on_disk == set(manifest["files"])
    assert PublishedFolder(out).verify() == []
    docs = np.load(out / manifest["documents"]["train"]["path"], allow_pickle=False)
    assert len(docs["doc_ids"]) == 30 and docs["token_offsets"][-1] == len(docs["token_starts"])


def test_published_folder_holds_no_note_text(published, workspace):
    """Neither the words of the notes nor their PHI appear in any file: only ids, offsets, tags, numbers."""
    _, out = published
    corpus = Workspace(workspace).load("tiny")
    words = {w for d in corpus.train + corpus.test for w in d.tokens.words if len(w) >= 4 and w.isalpha()}
    words |= {d.text[a.start:a.end] for d in corpus.train + corpus.test for a in d.annotations
              if not d.text[a.start:a.end].replace("/", "").isdigit()}  # numbers (ages, dates) are everywhere
    assert len(words) > 50  # the check has something to find
    ids = {d.id for d in corpus.train + corpus.test}
    texts = []
    for f in out.rglob("*"):
        if f.suffix == ".npz":
            with np.load(f, allow_pickle=False) as npz:
                for key in npz.files:
                    arr = npz[key]
                    if arr.dtype.kind == "U":  # only ids and tag names are strings
                        assert key in ("doc_ids", "labels", "span_labels"), (f, key)
                        assert key != "doc_ids" or set(arr.tolist()) <= ids
                        texts.append(" ".join(arr.tolist()))
            with zipfile.ZipFile(f) as z:  # and no other member hides in the archive
                assert all(n.endswith(".npy") for n in z.namelist())
        elif f.is_file():
            texts.append(f.read_text(encoding="utf-8"))
    blob = "\n".join(texts)
    leaked = sorted(w for w in words if w in blob and w not in {"DATE", "NAME", "PATIENT", "HOSPITAL", "CITY", "Record"})
    assert leaked == [], leaked[:5]


def test_tampered_published_part_is_reported_once_and_recomputed(published, caplog):
    clone, out = published
    npz = sorted(out.rglob("fold-01.npz"))[0]
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0x01
    npz.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="ensemble_deid.experiment.cache"):
        res = _cli("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "3", "--no-progress", ws=clone)
        _cli("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "3", "--no-progress", ws=clone)
    assert "1/4" in res.output  # the tampered fold only
    warnings = [r.getMessage() for r in caplog.records if "fold-01" in r.getMessage()]
    assert len(warnings) == 1 and "checksum differs from the manifest" in warnings[0]
    verify = _cli("cache", "verify", ws=clone, ok=False)
    assert verify.exit_code == 1 and "fold-01.npz" in verify.output
    # --remove never edits a published folder
    _cli("cache", "verify", "--remove", ws=clone, ok=False)
    assert npz.exists()


def test_edited_manifest_makes_the_whole_folder_ignored(published, caplog):
    clone, out = published
    manifest = json.loads((out / PUBLISHED_MANIFEST).read_text())
    manifest["entries"][0]["parts"][0]["fit_seconds"] = 0.0  # a "harmless" edit
    (out / PUBLISHED_MANIFEST).write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="ensemble_deid.experiment.cache"):
        res = _cli("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "3", "--no-progress", ws=clone)
    assert "4/4" in res.output
    assert any("manifest checksum mismatch" in r.getMessage() for r in caplog.records)


def test_stale_published_entry_is_reported_and_not_used(published, monkeypatch, caplog):
    clone, _ = published
    from ensemble_deid.taggers.registry import tagger_class

    monkeypatch.setattr(tagger_class("memorize"), "version", "2")
    with caplog.at_level(logging.WARNING, logger="ensemble_deid.experiment.cache"):
        res = _cli("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "3", "--no-progress", ws=clone)
    assert "4/4" in res.output
    stale = [r.getMessage() for r in caplog.records if "stale" in r.getMessage()]
    assert len(stale) == 1 and "made by version 1, this run uses version 2" in stale[0]
    assert "stale:" in _cli("cache", "verify", ws=clone).output


def test_publish_adds_to_an_existing_folder_and_keeps_other_entries(published, tiny_registered):
    _, out = published
    _cli("cv", "--corpus", tiny_registered, "--taggers", "memorize:max_len=2", "--folds", "3", "--no-progress")
    res = _cli("cache", "publish", "--corpus", "tiny", "--out", str(out), "--folds", "3",
               "--taggers", "memorize:max_len=2", *PUBLISH)
    assert "published 1 entry (1 kept)" in res.output
    labels = {e["tagger_label"] for e in json.loads((out / PUBLISHED_MANIFEST).read_text())["entries"]}
    assert labels == {"memorize", "memorize:max_len=2"}
    assert PublishedFolder(out).verify() == []


def test_publish_refuses_without_a_public_statement_or_for_a_licensed_corpus(tiny_registered, workspace, tmp_path):
    out = tmp_path / "pub"
    _cli("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    res = _cli("cache", "publish", "--corpus", "tiny", "--out", str(out), "--licence", "CC BY 4.0", ok=False)
    assert res.exit_code == 2 and "--public" in res.output
    ws = Workspace(workspace)
    spec = ws.spec("tiny")
    spec.name = "i2b2-2014"
    ws.add_corpus(spec)
    res = _cli("cache", "publish", "--corpus", "i2b2-2014", "--out", str(out), *PUBLISH, ok=False)
    assert res.exit_code == 1 and "data use agreement" in res.output
    assert not out.exists()


def test_publish_skips_incomplete_entries_and_refuses_an_empty_publication(tiny_registered, tmp_path):
    _cli("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    res = _cli("cache", "publish", "--corpus", "tiny", "--out", str(tmp_path / "pub"), "--folds", "5", *PUBLISH, ok=False)
    assert res.exit_code == 1 and "nothing to publish" in res.output and "1 of 6 parts cached" in res.output
    assert not (tmp_path / "pub").exists()
    assert "Traceback" not in res.output


def test_publish_disk_full_leaves_the_previous_publication_unchanged(published, monkeypatch, tmp_path):
    _, out = published
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    from ensemble_deid.experiment import publish as publish_module

    real, calls = publish_module._atomic_write, []

    def full(path, data):
        calls.append(path)
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(cache_module, "_atomic_write", full)
    monkeypatch.setattr(publish_module, "_atomic_write", lambda p, d: cache_module._atomic_write(p, d))
    res = _cli("cache", "publish", "--corpus", "tiny", "--out", str(out), "--folds", "3", *PUBLISH, ok=False)
    assert res.exit_code == 1 and "no space left" in res.output.lower() and "unchanged" in res.output
    assert "Traceback" not in res.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


def test_publish_into_a_missing_folder_is_a_clean_error(tiny_registered, tmp_path):
    _cli("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    res = _cli("cache", "publish", "--corpus", "tiny", "--out", str(tmp_path / "no" / "such" / "pub"), *PUBLISH, ok=False)
    assert res.exit_code == 2 and "no such folder" in res.output and "Traceback" not in res.output


def test_published_files_are_owner_only_whatever_the_umask(tiny_registered, tmp_path):
    _cli("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    old = os.umask(0)
    try:
        out = tmp_path / "pub"
        _cli("cache", "publish", "--corpus", "tiny", "--out", str(out), "--folds", "3", *PUBLISH)
    finally:
        os.umask(old)
    for p in [out, *out.rglob("*")]:
        assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600), p


def test_cache_ls_lists_published_entries_with_the_corpus_name(published):
    clone, _ = published
    out = _cli("cache", "ls", "--wide", ws=clone).output
    assert "published tiny" in out and "| tiny " in out


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_gitignore_lets_published_folders_through_but_not_the_workspace_cache():
    def ignored(path):
        return subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=REPO).returncode == 0

    assert ignored("cached_predictions/v1/crf/1-abc/fp/entry.json")
    assert ignored("cached_predictions/.scratch/host-1/model")
    assert ignored("cached_predictions/.meddocan.123.tmp/published.json")  # a publication being staged
    assert ignored("cached_predictions/stray-file.txt")
    assert ignored("cached_predictions/meddocan/v1/crf/1-a/fp/oof-x/.fold-00.npz.1.2.tmp")
    assert not ignored("cached_predictions/README.md")
    assert not ignored("cached_predictions/meddocan/published.json")
    assert not ignored("cached_predictions/meddocan/v1/crf/1-a/fp/oof-x/fold-00.npz")
    assert not ignored("cached_predictions/meddocan/documents/abc.npz")


def test_verify_names_a_publication_made_on_other_documents(published, tmp_path):
    """Edited notes (or another corpus under the same name) change the fingerprints: the folder is stale."""
    clone, _ = published
    from ensemble_deid.corpus.formats import write_i2b2_xml
    from ensemble_deid.corpus.workspace import CorpusSpec

    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(12, seed=3)
    for split, part in (("train", docs[:8]), ("test", docs[8:])):
        (tmp_path / f"edited-{split}").mkdir()
        for doc in part:
            write_i2b2_xml(doc, tmp_path / f"edited-{split}" / f"{doc.id}.xml")
    Workspace(clone).add_corpus(CorpusSpec("tiny", {s: str(tmp_path / f"edited-{s}") for s in ("train", "test")}),
                                replace=True)
    out = _cli("cache", "verify", ws=clone).output
    assert "made on other train documents than the registered corpus 'tiny'" in out
    assert "2 stale entries" in out


def test_shared_task_protocol_train_plus_dev_published_and_reused_with_another_test_split(workspace, tmp_path,
                                                                                        monkeypatch):
    """The MEDDOCAN shared-task protocol on a small corpus: train and dev registered together as the
    training set (two --train folders), CV'd, published (verify clean); a user who registers the same
    two folders with their own test split reuses every out-of-fold part and trains only the full-data
    model, and verify tells them so instead of calling the folder stale."""
    from ensemble_deid.corpus.formats import write_i2b2_xml

    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(50)
    folders = {}
    for name, part in (("train", docs[:20]), ("dev", docs[20:30]), ("held-out", docs[30:40]),
                       ("official-test", docs[40:])):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        for doc in part:
            write_i2b2_xml(doc, folders[name] / f"{doc.id}.xml")
    add = ["corpus", "add", "tiny-train-dev", "--train", str(folders["train"]), "--train", str(folders["dev"])]
    res = _cli(*add, "--test", str(folders["held-out"]))
    assert "train: 30 documents" in res.output
    _cli("cv", "--corpus", "tiny-train-dev", "--taggers", "memorize", "--folds", "3", "--no-progress")
    clone = tmp_path / "clone"
    (clone / "cached_predictions").mkdir(parents=True)
    out = clone / "cached_predictions" / "tiny-train-dev"
    _cli("cache", "publish", "--corpus", "tiny-train-dev", "--out", str(out), "--folds", "3", *PUBLISH)
    manifest = json.loads((out / PUBLISHED_MANIFEST).read_text())
    assert manifest["documents"]["train"]["documents"] == 30
    verified = _cli("cache", "verify", ws=clone).output
    assert "0 corrupt or incomplete, 0 stale entries" in verified

    _cli(*add, "--test", str(folders["official-test"]), ws=clone)
    fits = []
    real = cv_module.execute_task
    monkeypatch.setattr(cv_module, "execute_task", lambda *a, **kw: fits.append(a) or real(*a, **kw))
    res = _cli("cv", "--corpus", "tiny-train-dev", "--taggers", "memorize", "--folds", "3", "--no-progress", ws=clone)
    assert len(fits) == 1 and "1/4" in res.output  # the 3 folds come from the published folder
    verified = _cli("cache", "verify", ws=clone).output
    assert "0 stale entries" in verified and "not used" not in verified
    assert "out-of-fold parts are used" in verified
