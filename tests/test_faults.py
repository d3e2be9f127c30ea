"""Faults and files (issue 21 items 6, 12, 13, 14, 15, 18): interrupted and
concurrent registration, a full disk, owner-only permissions whatever the
umask, registry files of the wrong shape. Each test failed before the fix."""
from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.formats import write_i2b2_xml
from ensemble_deid.corpus.workspace import CorpusSpec, Workspace

from .conftest import REPO_ROOT
from .tiny_corpus import tiny_corpus


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def tiny_dirs(tmp_path):
    docs = tiny_corpus(12, seed=3)
    dirs = {}
    for split, part in (("train", docs[:8]), ("test", docs[8:])):
        d = tmp_path / "tiny" / split
        d.mkdir(parents=True)
        for doc in part:
            write_i2b2_xml(doc, d / f"{doc.id}.xml")
        dirs[split] = d
    return dirs


@pytest.fixture
def disk_full(monkeypatch):
    """Make every write through os.fdopen under the given folder fail with
    ENOSPC, as a full disk does (the error carries no file name)."""
    real = os.fdopen

    class FullFile:
        def __init__(self, fh):
            self._fh = fh

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self._fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._fh.close()

    def install(folder: Path):
        def fdopen(fd, *args, **kwargs):
            fh = real(fd, *args, **kwargs)
            target = os.readlink(f"/proc/self/fd/{fd}")
            return FullFile(fh) if target.startswith(str(folder)) else fh
        monkeypatch.setattr(os, "fdopen", fdopen)

    return install


def _files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


# --- item 6: registration is the last, atomic step ---------------------------------

def test_interrupted_corpus_add_registers_nothing(workspace, tiny_dirs, monkeypatch):
    def interrupted(self, spec):
        raise KeyboardInterrupt

    monkeypatch.setattr(Workspace, "load_spec", interrupted)
    result = _run("corpus", "add", "tiny", "--train", tiny_dirs["train"], "--test", tiny_dirs["test"])
    assert isinstance(result.exception, KeyboardInterrupt) or result.exit_code != 0
    assert Workspace(workspace).corpus_specs() == {}


def test_fifo_in_a_corpus_folder_fails_corpus_add_without_hanging(workspace, tiny_dirs):
    os.mkfifo(tiny_dirs["train"] / "999-01.xml")
    result = _run("corpus", "add", "tiny", "--train", tiny_dirs["train"], "--test", tiny_dirs["test"])
    assert result.exit_code == 1 and "999-01.xml: not a regular file" in result.output
    assert Workspace(workspace).corpus_specs() == {}


def test_non_utf8_file_name_is_refused_before_registration(workspace, tiny_dirs):
    # Item 3: corpus add registered, then crashed in the fingerprint; show and cv crashed from then on.
    with open(os.fsencode(tiny_dirs["train"]) + b"/999-\xe9.xml", "wb") as fh:
        fh.write((tiny_dirs["train"] / sorted(os.listdir(tiny_dirs["train"]))[0]).read_bytes())
    result = _run("corpus", "add", "tiny", "--train", tiny_dirs["train"], "--test", tiny_dirs["test"])
    assert result.exit_code == 1 and "999-\\udce9.xml" in result.output and "not valid UTF-8" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert Workspace(workspace).corpus_specs() == {}


# --- item 12: concurrent registrations ---------------------------------------------

def test_sixteen_concurrent_corpus_adds_keep_every_registration(workspace, tiny_dirs):
    exe = Path(sys.executable).with_name("ensemble-deid")
    env = {**os.environ, "ENSEMBLE_DEID_HOME": str(workspace)}
    procs = [subprocess.Popen([str(exe), "corpus", "add", f"c{i}", "--train", str(tiny_dirs["train"]),
                               "--test", str(tiny_dirs["test"])], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for i in range(16)]
    errors = [p.communicate(timeout=240)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 16, errors
    assert sorted(Workspace(workspace).corpus_specs()) == sorted(f"c{i}" for i in range(16))


# --- item 13: disk full --------------------------------------------------------------

def test_disk_full_in_corpus_add_is_a_message_and_keeps_the_registry(workspace, tiny_dirs, disk_full):
    Workspace(workspace).add_corpus(CorpusSpec("old", {k: str(v) for k, v in tiny_dirs.items()}))
    before = (workspace / ".ensemble-deid" / "corpora.json").read_bytes()
    disk_full(workspace)
    result = _run("corpus", "add", "tiny", "--train", tiny_dirs["train"], "--test", tiny_dirs["test"])
    assert result.exit_code == 1 and result.exception is None or isinstance(result.exception, SystemExit)
    assert "corpora.json: no space left on the device" in result.output
    assert "Traceback" not in result.output
    assert (workspace / ".ensemble-deid" / "corpora.json").read_bytes() == before
    assert _files_under(workspace / ".ensemble-deid") == ["corpora.json", "corpora.json.lock"]


def test_disk_full_in_cv_is_a_message_not_a_traceback(tiny_registered, workspace, disk_full):
    disk_full(workspace / "cached_predictions")
    result = _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    assert result.exit_code == 1, result.output
    assert "no space left on the device" in result.output
    assert not isinstance(result.exception, OSError)
    assert not [f for f in _files_under(workspace) if f.endswith(".tmp")]


def test_disk_full_in_a_study_leaves_no_empty_report(tiny_registered, workspace, tmp_path, disk_full):
    out = tmp_path / "study-out"
    disk_full(out)
    result = _run("study", "--corpus", tiny_registered, "--taggers", "memorize", "--methods", "voting",
                  "--folds", "3", "--trials", "100", "--no-progress", "--out", out)
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, OSError)
    assert "no space left on the device" in result.output
    assert _files_under(out) == []  # no empty or half-written report, no temp file


def test_file_system_errors_anywhere_become_messages(workspace, tmp_path, tiny_registered):
    # Item 18: a cache root that is a file was a traceback.
    cache_file = tmp_path / "cache-is-a-file"
    cache_file.write_text("x")
    result = CliRunner(env={"ENSEMBLE_DEID_CACHE": str(cache_file)}).invoke(
        main, ["cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress"])
    assert result.exit_code == 1 and not isinstance(result.exception, OSError), result.output
    assert "cache-is-a-file" in result.output


# --- item 18: registry of the wrong shape ----------------------------------------------

@pytest.mark.parametrize("content, message", [
    ('{"version": "1", "corpora": {}}', "registry version '1' is not the number 1"),
    ('{"version": 2, "corpora": {}}', "registry version 2 is not the number 1"),
    ('[1, 2]', "not a corpus registry"),
    ('{"version": 1, "corpora": []}', "not a corpus registry"),
    ('{"version": 1, "corpora": {"x": 3}}', "corpus 'x': entry is not an object"),
    ('{"version": 1, "corpora": {"x": {"splits": {"train": "/a"}, "colour": 1}}}', "corpus 'x': unknown field 'colour'"),
    ('{"version": 1, "corpora": {"x": {"splits": {"train": 5}}}}', "corpus 'x': field 'splits' must map"),
    ('{"version": 1, "corpora": {"x": {"splits": {}, "embedded": "yes"}}}', "corpus 'x': field 'embedded' has the wrong type"),
    ('{"version": 1, "corpora": {"x": {"splits": {"train": "/a"}}}', "not valid JSON"),
])
def test_registry_of_the_wrong_shape_is_a_clear_error(workspace, content, message):
    state = workspace / ".ensemble-deid"
    state.mkdir()
    (state / "corpora.json").write_text(content)
    for args in (["corpus", "ls"], ["corpus", "show", "x"], ["cv", "--corpus", "x", "--taggers", "memorize"]):
        result = _run(*args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.output and "corpora.json" in result.output, (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)


# --- item 15: owner-only whatever the umask ------------------------------------------

def test_everything_written_is_owner_only_under_umask_000(tmp_path):
    # Run in a child with umask 000: corpus add, an embedded corpus, cv, a study and corpus synth.
    ws = tmp_path / "new-workspace"
    synth_out = tmp_path / "synth-parent" / "deeper" / "corpus"
    script = textwrap.dedent(f"""
        import os, sys
        os.umask(0)
        from click.testing import CliRunner
        from ensemble_deid.cli import main
        def run(*args):
            r = CliRunner().invoke(main, ["--workspace", {str(ws)!r}, *args], catch_exceptions=False)
            assert r.exit_code == 0, r.output
        run("corpus", "show", "synthetic-2016")
        run("cv", "--corpus", "synthetic-2016", "--taggers", "memorize", "--folds", "3", "--no-progress")
        run("study", "--corpus", "synthetic-2016", "--taggers", "memorize", "--methods", "voting",
            "--folds", "3", "--trials", "100", "--no-progress")
        run("corpus", "synth", "--style", "ngrid-2016", "--docs", "2", "--seed", "1", "--out", {str(synth_out)!r})
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests" / "plugins")}  # the memorize tagger
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO_ROOT, timeout=300, env=env)
    loose = []
    for root in (ws / ".ensemble-deid", ws / "results", tmp_path / "synth-parent"):
        assert root.exists(), root
        for p in [root, *root.rglob("*")]:
            want = 0o700 if p.is_dir() else 0o600
            if _mode(p) != want:
                loose.append(f"{p.relative_to(tmp_path)} {oct(_mode(p))}")
    assert _mode(ws) == 0o700
    assert (ws / ".ensemble-deid" / "embedded" / ".synthetic-2016.lock").exists()
    assert loose == []


# --- item 14: the shipped corpus never stays in $TMPDIR --------------------------------

def test_shipped_corpus_spill_is_gone_even_after_sigkill(tmp_path):
    script = textwrap.dedent(f"""
        import os, pickle, signal, subprocess, sys
        from ensemble_deid.corpus.document import Document
        from ensemble_deid.experiment.shipping import ShippedDocuments
        s = ShippedDocuments([Document("d1", "Paciente Zacarias Quintanilla", [])], "k")
        s.spill({str(tmp_path)!r})
        # A worker reads it through the handle, as joblib's workers do.
        child = subprocess.run([sys.executable, "-c",
            "import pickle,sys; s = pickle.loads(sys.stdin.buffer.read()); print(s.get()[0].id)"],
            input=pickle.dumps(s), capture_output=True, check=True)
        assert child.stdout.strip() == b"d1", child
        print(sorted(os.listdir({str(tmp_path)!r})), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout.strip() == "[]"  # unlinked as soon as written
    assert os.listdir(tmp_path) == []


def test_evaluate_into_a_missing_folder_is_a_message(tmp_path, broken_dir):
    # Item 18: "evaluate -o" into a missing folder was a traceback (the top-level handler names the file).
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "valid.xml").write_bytes((broken_dir / "xml" / "valid.xml").read_bytes())
    # evaluate creates the missing folder (owner-only); a file in the way is a message.
    result = _run("evaluate", "--gold", gold, "--system", gold, "-o", tmp_path / "missing" / "report.txt")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "missing").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "missing" / "report.txt").stat().st_mode & 0o777 == 0o600
    (tmp_path / "file").write_text("x")
    result = _run("evaluate", "--gold", gold, "--system", gold, "-o", tmp_path / "file" / "report.txt")
    assert result.exit_code == 1 and not isinstance(result.exception, OSError), result.output
    assert "file" in result.output and "Traceback" not in result.output


# --- issue 35: deidentify killed or out of disk -------------------------------------------

_DEID_NOTES = {f"{100 + i // 2}-{i % 2 + 1:02d}": f"Seen {i + 1:02d}/0{i % 9 + 1}/2012, call 617-555-{1000 + i}.\n"
               for i in range(8)}


@pytest.fixture
def deid_setup(tmp_path):
    """A rules-only bundle (no training) and eight notes of four patients."""
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.registry import make_tagger

    bundle = tmp_path / "bundle"
    Deidentifier({"rules": make_tagger("rules").fit([])}).save(bundle, {"labels": ["DATE:DATE"]})
    notes = tmp_path / "notes"
    notes.mkdir()
    for doc_id, text in _DEID_NOTES.items():
        (notes / f"{doc_id}.txt").write_text(text)
    return bundle, notes


def _deid_args(bundle, notes, out, *extra):
    return ["deidentify", str(bundle), str(notes), "--out", str(out), "--mode", "surrogate", "--spans", "xml",
            "--spans", "brat", "--group-pattern", r"^(\d{3})-\d{2}$", "--batch-size", "1", "--no-progress", *extra]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in (".lock", "run.json")}


def test_deidentify_killed_mid_run_resumes_to_the_uninterrupted_outputs(deid_setup, tmp_path):
    bundle, notes = deid_setup
    out, mapping, tmpdir = tmp_path / "out", tmp_path / "map.json", tmp_path / "tmpdir"
    tmpdir.mkdir()
    # The child is killed (SIGKILL) at the 7th rename: a spans file written to
    # its temp name (PHI) and not renamed; a member's temp folder made at
    # every batch (as external systems do) is left too. No --seed.
    script = textwrap.dedent(f"""
        import os, signal, tempfile
        from click.testing import CliRunner
        from ensemble_deid.cli import main
        from ensemble_deid.deid import Deidentifier
        spans = Deidentifier.spans
        def spans_with_a_temp_folder(self, docs):
            tempfile.mkdtemp(prefix="edeid-member-")
            return spans(self, docs)
        Deidentifier.spans = spans_with_a_temp_folder
        replace, calls = os.replace, []
        def killed_at_the_seventh(src, dst):
            calls.append(dst)
            if len(calls) == 7:
                os.kill(os.getpid(), signal.SIGKILL)
            return replace(src, dst)
        os.replace = killed_at_the_seventh
        CliRunner().invoke(main, {_deid_args(bundle, notes, out, "--save-mapping", str(mapping))!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(tmpdir)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert [p.name for p in (out / "spans").iterdir() if p.name.endswith(".tmp")]  # the half-done write
    assert list((out / ".scratch").rglob("edeid-member-*")) and os.listdir(tmpdir) == []  # not in $TMPDIR
    # Resume (again no --seed): the first run's seed is reused and the leftovers go.
    resumed = CliRunner(env={"TMPDIR": str(tmpdir)}).invoke(main, _deid_args(bundle, notes, out, "--save-mapping",
                                                                              str(mapping)))
    assert resumed.exit_code == 0, resumed.output
    assert "removed 2 temp file(s)/folder(s) left by an interrupted run" in resumed.output
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp") or ".scratch" in p.parts]
    assert os.listdir(tmpdir) == []
    # Byte for byte what one uninterrupted run with that seed writes.
    seed = json.loads((out / "run.json").read_text())["drawn_seed"]
    whole, whole_map = tmp_path / "whole", tmp_path / "whole-map.json"
    assert _run(*_deid_args(bundle, notes, whole, "--seed", seed, "--save-mapping", whole_map)).exit_code == 0
    assert _tree(out) == _tree(whole) and len(_tree(out)) == 3 * len(_DEID_NOTES) + 2  # + the release report
    assert json.loads(mapping.read_text()) == json.loads(whole_map.read_text())


def test_deidentify_on_a_full_disk_names_the_file_and_loses_nothing(deid_setup, tmp_path, disk_full):
    bundle, notes = deid_setup
    out = tmp_path / "out"
    args = _deid_args(bundle, notes, out, "--seed", "9")
    disk_full(out / "text")
    result = _run(*args)
    assert result.exit_code == 1 and not isinstance(result.exception, OSError), result.output
    assert f"{out / 'text'}/100-01.txt: no space left on the device" in result.output
    assert "Traceback" not in result.output and "617-555" not in result.output
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")] and not (out / "text" / "100-01.txt").exists()
    disk_full(tmp_path / "no-such-folder")  # space again
    assert _run(*args).exit_code == 0
    whole = tmp_path / "whole"
    assert _run(*_deid_args(bundle, notes, whole, "--seed", "9")).exit_code == 0
    assert _tree(out) == _tree(whole)
