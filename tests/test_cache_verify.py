"""Cache housekeeping from the outside tester's and the newcomer's reports
(issues 21, 22, 24): verify, ls, export and failed runs."""
from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.formats import write_i2b2_xml
from ensemble_deid.corpus.workspace import CorpusSpec, Workspace
from ensemble_deid.experiment.cache import SCRATCH, PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

from .tiny_corpus import tiny_corpus

CV = ["--taggers", "memorize", "--folds", "3", "--no-progress"]


def _run(*args, ok=True):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def _cache(workspace) -> PredictionCache:
    return PredictionCache(Workspace(workspace).cache_dir, published=())


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- left-overs of killed runs (issue 21 item 14) -------------------------------------

def test_half_written_tmp_files_are_reported_and_removed(tiny_registered, workspace):
    _run("cv", "--corpus", tiny_registered, *CV)
    folder = sorted(Path(workspace, "cached_predictions").rglob("fold-01.npz"))[0].parent
    dead = folder / f".fold-01.npz.{_dead_pid()}.140000.tmp"
    dead.write_bytes(b"half")
    os.utime(dead, (os.path.getmtime(dead) - 120,) * 2)  # a minute's grace for a writer on another machine
    live = folder / f".fold-02.npz.{os.getpid()}.140001.tmp"  # a run writing right now: left alone
    live.write_bytes(b"half")
    os.utime(live, (os.path.getmtime(live) - 120,) * 2)
    res = _run("cache", "verify")
    assert dead.name in res.output and "half-written" in res.output and live.name not in res.output
    res = _run("cache", "verify", "--remove")
    assert f"removed {dead}" in res.output
    assert not dead.exists() and live.exists()


def test_a_killed_worker_s_scratch_folder_is_reported_and_swept(tiny_registered, workspace):
    """A process killed (SIGKILL) while crfsuite-style temp folders exist leaves them in
    the cache's scratch folder, where verify finds them and the next run removes them."""
    root = Workspace(workspace).cache_dir
    code = (
        "import os, signal, tempfile\n"
        "from ensemble_deid.experiment.cache import PredictionCache\n"
        f"with PredictionCache({str(root)!r}).scratch():\n"
        "    tempfile.mkdtemp(prefix='ensemble-deid-crf-')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = list((root / SCRATCH).glob("*/ensemble-deid-crf-*"))
    assert len(left) == 1
    res = _run("cache", "verify")
    assert "scratch folder of an interrupted run" in res.output
    with PredictionCache(root).scratch() as own:  # the next run sweeps it
        assert tempfile.mkdtemp(prefix="ensemble-deid-crf-").startswith(str(own))
    assert not (root / SCRATCH).exists() or list((root / SCRATCH).iterdir()) == []


def test_cv_leaves_no_crf_temp_folders(tiny_registered, workspace, tmp_path, monkeypatch):
    pytest.importorskip("pycrfsuite")
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    _run("cv", "--corpus", tiny_registered, "--taggers", "crf:max_iterations=2", "--folds", "2", "--no-progress")
    assert list(tmp.glob("ensemble-deid-crf-*")) == []
    assert list(Path(workspace, "cached_predictions").rglob("ensemble-deid-crf-*")) == []


# --- failed runs (issue 22 item 3) ---------------------------------------------------------

def test_a_failed_run_leaves_no_entry_without_parts(tiny_registered, workspace, monkeypatch):
    from ensemble_deid.taggers.registry import tagger_class

    def fail(self, documents):
        raise RuntimeError("fit failed")

    monkeypatch.setattr(tagger_class("memorize"), "fit", fail)
    res = CliRunner().invoke(main, ["cv", "--corpus", tiny_registered, *CV])
    assert res.exit_code != 0
    assert list(_cache(workspace).entries()) == []


def test_verify_names_and_removes_an_empty_entry(tiny_registered, workspace):
    from ensemble_deid.experiment.cache import EntryKey

    pc = _cache(workspace)
    path = pc.ensure_entry(EntryKey("memorize", "1", "abc", "fp"), {"tagger_label": "memorize"})
    res = _run("cache", "verify")  # untidy, not corrupt: exit 0
    assert "empty entry" in res.output
    res = _run("cache", "verify", "--remove")
    assert f"removed empty entry {path}" in res.output and not path.exists()


def test_verify_remove_says_what_it_removed(tiny_registered, workspace):
    _run("cv", "--corpus", tiny_registered, *CV)
    npz = sorted(Path(workspace, "cached_predictions").rglob("fold-02.npz"))[0]
    data = bytearray(npz.read_bytes())
    data[50] ^= 0x10
    npz.write_bytes(bytes(data))
    res = _run("cache", "verify", "--remove")
    assert f"removed fold-02.json, fold-02.npz in {npz.parent}" in res.output
    assert "corrupt or incomplete" in res.output


# --- ensembles in verify, ls, errors and export (issues 21 items 16-17, 22 item 3) -------

MEMBERS = "memorize,memorize:max_len=2"


@pytest.fixture
def two_votings(tiny_registered):
    for threshold in (1, 2):
        _run("ensemble", "--corpus", tiny_registered, "--method", "voting", "--members", MEMBERS, "--folds", "3",
             "--param", f"threshold={threshold}")
    return tiny_registered


def test_verify_does_not_call_ensemble_entries_stale(two_votings):
    res = _run("cache", "verify")
    assert "stale" in res.output and "0 stale entries" in res.output and "not installed" not in res.output


def test_ls_names_corpora_and_shows_ensemble_members(two_votings):
    out = _run("cache", "ls", "--wide").output
    voting = [line for line in out.splitlines() if "ensemble.voting" in line]
    assert len(voting) == 2
    for line in voting:
        assert "| tiny " in line and "members memorize, memorize:max_len=2" in line and "made 20" in line
    assert {"threshold=1" in line for line in voting} == {True, False}


def test_ambiguous_ensemble_member_lists_what_differs(two_votings):
    res = _run("compare", "memorize", "ensemble.voting", "--corpus", two_votings, "--folds", "3", ok=False)
    assert "ambiguous" in res.output and "threshold=1" in res.output and "threshold=2" in res.output
    assert "members memorize, memorize:max_len=2" in res.output


def test_export_gives_each_entry_its_own_folder(two_votings, tmp_path):
    _run("cache", "export", tmp_path / "ex", "--corpus", two_votings)
    votings = sorted((tmp_path / "ex" / "ensemble.voting").iterdir())
    assert len(votings) == 2  # VERSION-PARAMHASH: two configurations, two folders
    tests = [list(v.glob("*/predict-*-all/*.xml")) for v in votings]
    assert [len(t) for t in tests] == [10, 10]


# --- cross-corpus export (issue 24) -----------------------------------------------------

def test_export_includes_predictions_of_a_model_trained_on_another_corpus(tiny_registered, workspace, tmp_path):
    docs = tiny_corpus(20, seed=7, prefix="b")
    dirs = {"train": tmp_path / "b-train", "test": tmp_path / "b-test"}
    for split, part in (("train", docs[:14]), ("test", docs[14:])):
        dirs[split].mkdir()
        for doc in part:
            write_i2b2_xml(doc, dirs[split] / f"{doc.id}.xml")
    ws = Workspace(workspace)
    ws.add_corpus(CorpusSpec("other", {k: str(v) for k, v in dirs.items()}))
    a, b = ws.load("tiny"), ws.load("other")
    # what a cross-corpus study caches: trained on tiny, predicting other's test split
    CrossValidation(a.train, {"test": a.test, "other.test": b.test}, _cache(workspace), k=3).run(
        [TaggerSpec.parse("memorize")], progress=False)
    res = _run("cache", "export", tmp_path / "ex", "--corpus", "other")
    assert "6 document(s) of the test split (trained on tiny)" in res.output
    assert len(list((tmp_path / "ex").rglob(f"predict-{b.fingerprint('test')}-all/*.xml"))) == 6
    assert "wrote 6 file(s)" in res.output  # out-of-fold parts on tiny's documents are not other's


# --- export faults (issue 21 items 13, 15, 18) ----------------------------------------

def test_export_into_a_missing_folder_is_a_clean_error(tiny_registered, tmp_path):
    _run("cv", "--corpus", tiny_registered, *CV)
    res = _run("cache", "export", tmp_path / "no" / "such" / "out", "--corpus", tiny_registered, ok=False)
    assert res.exit_code == 2 and "no such folder" in res.output and "Traceback" not in res.output


def test_export_disk_full_writes_nothing_and_no_traceback(tiny_registered, tmp_path, monkeypatch):
    from ensemble_deid.corpus import formats

    _run("cv", "--corpus", tiny_registered, *CV)
    real, calls = formats.write_i2b2_xml, []

    def full(doc, path, *args, **kwargs):
        calls.append(path)
        if len(calls) > 5:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(doc, path, *args, **kwargs)

    monkeypatch.setattr(formats, "write_i2b2_xml", full)
    res = CliRunner().invoke(main, ["cache", "export", str(tmp_path / "out"), "--corpus", tiny_registered])
    assert res.exit_code == 1 and "no space left" in res.output.lower() and "unchanged" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_export_is_owner_only_whatever_the_umask(tiny_registered, tmp_path):
    _run("cv", "--corpus", tiny_registered, *CV)
    old = os.umask(0)
    try:
        _run("cache", "export", tmp_path / "out", "--corpus", tiny_registered)
    finally:
        os.umask(old)
    paths = [tmp_path / "out", *(tmp_path / "out").rglob("*")]
    assert len(paths) > 40
    for p in paths:
        assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600), p


def test_a_cache_root_that_is_a_file_is_a_clean_error(workspace, tmp_path, monkeypatch):
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("ENSEMBLE_DEID_CACHE", str(tmp_path / "not-a-folder"))
    for command in (["cache", "ls"], ["cache", "verify"]):
        res = CliRunner().invoke(main, command)
        assert res.exit_code == 1 and "is a file, not a folder" in res.output and res.exception is not None
        assert isinstance(res.exception, SystemExit)


# --- a damaged entry manifest (issue 35 item 17) ---------------------------------------------

@pytest.mark.parametrize("damage", ["flip", "delete", "other entry"])
def test_a_damaged_entry_is_not_reused_and_verify_removes_it_whole(tiny_registered, workspace, damage):
    # verify kept reporting it, verify --remove deleted only entry.json, and cv kept reusing the parts.
    _run("cv", "--corpus", tiny_registered, *CV)
    pc = _cache(workspace)
    (entry_dir, _), = list(pc.entries())
    manifest = entry_dir / "entry.json"
    parts = pc.part_files(entry_dir)
    assert len(parts) >= 3
    if damage == "flip":
        manifest.write_bytes(manifest.read_bytes().replace(b'"memorize"', b'"memorizf"', 1))
    elif damage == "delete":
        manifest.unlink()
    else:  # a valid record, of another entry
        from ensemble_deid.experiment.cache import EntryKey, entry_record
        import json

        manifest.write_text(json.dumps(entry_record(EntryKey("memorize", "9", "abc", "fp"), {})))
    part = next(p for p in pc.part_files(entry_dir) if p.name == "fold-01")
    res = _run("cache", "verify", ok=False)
    assert res.exit_code == 1 and f"corrupt entry: {entry_dir}" in res.output
    # cv does not reuse the parts: it recomputes them and rewrites the manifest
    before = part.with_suffix(".json").stat().st_mtime_ns
    _run("cv", "--corpus", tiny_registered, *CV)
    assert part.with_suffix(".json").stat().st_mtime_ns != before
    assert _run("cache", "verify").exit_code == 0
    # verify --remove takes the whole entry, not just its manifest
    manifest.unlink()
    res = _run("cache", "verify", "--remove")
    assert f"removed damaged entry {entry_dir}" in res.output
    assert not entry_dir.exists()
    assert "0 corrupt" in _run("cache", "verify").output
