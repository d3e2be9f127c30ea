"""The workspace registry and the ``corpus`` commands (add/ls/show/rm), run
through click's CliRunner in a throwaway workspace."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.errors import CorpusError, EnsembleDeidError
from ensemble_deid.corpus.formats import write_i2b2_xml
from ensemble_deid.corpus.workspace import CorpusSpec, UnknownCorpus, Workspace

from .conftest import REPO_ROOT
from .tiny_corpus import tiny_corpus


@pytest.fixture
def tiny_dirs(tmp_path):
    """train (16 records, 8 patients), dev (4) and test (4) folders of i2b2 XML."""
    docs = tiny_corpus(24, seed=5)
    dirs = {}
    for split, part in (("train", docs[:16]), ("dev", docs[16:20]), ("test", docs[20:])):
        d = tmp_path / "tiny" / split
        d.mkdir(parents=True)
        for doc in part:
            write_i2b2_xml(doc, d / f"{doc.id}.xml")
        dirs[split] = d
    dirs["phi"] = {s: sum(len(x.annotations) for x in p) for s, p in (("train", docs[:16]), ("test", docs[20:]))}
    return dirs


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output
    return result


def _add(dirs, name="tiny", *extra, ok=True):
    return _run("corpus", "add", name, "--train", dirs["train"], "--test", dirs["test"], *extra, ok=ok)


def test_add_ls_show_rm(workspace, tiny_dirs):
    out = _add(tiny_dirs).output
    assert f"train: 16 documents, {tiny_dirs['phi']['train']:,} PHI" in out
    assert f"test: 4 documents, {tiny_dirs['phi']['test']:,} PHI" in out
    assert "registered corpus 'tiny' (fingerprint " in out
    assert (workspace / ".ensemble-deid" / "corpora.json").exists()  # the env var chose the workspace

    out = _run("corpus", "ls").output
    assert max(len(x) for x in out.splitlines()) <= 80, out  # issue 34 item 8: the folders fold
    lines = out.splitlines()
    splits, kind = lines[0].index("splits"), lines[0].index("kind")
    at = next(i for i, x in enumerate(lines) if x.startswith("tiny "))
    more = next((i for i, x in enumerate(lines[at + 1:], at + 1) if not x.startswith(" ")), len(lines))
    row = lines[at:more]  # the corpus's line and the lines its folded folders go on
    assert str(tiny_dirs["train"]) in "".join(x[splits:kind].strip() for x in row) and "registered" in lines[at]

    out = _run("corpus", "show", "tiny").output
    assert out.startswith("corpus 'tiny'  fingerprints train=") and ", test=" in out.splitlines()[0]
    row = next(x for x in out.splitlines() if x.startswith("| train "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["train", "16", "8"]  # documents, patients (PPP-NN names)
    assert cells[4] == f"{tiny_dirs['phi']['train']:,}" and cells[5] == "0.00%"
    assert "| category " in out and "| type " in out
    assert "| NAME:DOCTOR " in out and "| DATE " in out

    out = _run("corpus", "show", "tiny", "--by", "category").output
    assert "| DATE " in out and "NAME:DOCTOR" not in out

    assert "removed 'tiny'" in _run("corpus", "rm", "tiny").output
    assert "\ntiny " not in _run("corpus", "ls").output
    assert Workspace(workspace).corpus_specs() == {}


def test_workspace_option_overrides_env(workspace, tmp_path, tiny_dirs):
    other = tmp_path / "other-ws"
    _run("--workspace", other, "corpus", "add", "tiny", "--train", tiny_dirs["train"], "--test", tiny_dirs["test"])
    assert "tiny" in Workspace(other).corpus_specs()
    assert Workspace(workspace).corpus_specs() == {}


def test_duplicate_add_needs_replace(workspace, tiny_dirs):
    _add(tiny_dirs)
    result = _add(tiny_dirs, ok=False)
    assert result.exit_code == 1
    assert "already registered (use --replace)" in result.output
    assert "Traceback" not in result.output
    out = _add(tiny_dirs, "tiny", "--dev", tiny_dirs["dev"], "--replace").output
    assert "dev: 4 documents" in out
    spec = Workspace(workspace).spec("tiny")
    assert set(spec.splits) == {"train", "dev", "test"}


def test_bad_group_pattern_is_a_bad_parameter(workspace, tiny_dirs):
    result = _add(tiny_dirs, "tiny", "--group-pattern", "(unclosed", ok=False)
    assert result.exit_code == 2  # click usage error
    assert "--group-pattern" in result.output and "not a valid regular expression" in result.output
    assert Workspace(workspace).corpus_specs() == {}


def test_group_pattern_is_used(workspace, tiny_dirs):
    _add(tiny_dirs, "tiny", "--group-pattern", r"^(\d{2})")  # first two digits: coarser groups
    corpus = Workspace(workspace).load("tiny")
    assert {d.group for d in corpus.train} == {"00"}


def test_add_of_broken_folder_fails_cleanly_and_registers_nothing(workspace, broken_dir, tiny_dirs):
    result = _run("corpus", "add", "bad", "--train", broken_dir / "xml", "--test", tiny_dirs["test"], ok=False)
    assert result.exit_code == 1
    assert "fatal problem(s)" in result.output and "truncated.xml" in result.output
    assert "Zacarias" not in result.output and "Quintanilla" not in result.output
    assert "Traceback" not in result.output
    assert Workspace(workspace).corpus_specs() == {}


def test_failed_replace_keeps_the_previous_registration(workspace, broken_dir, tiny_dirs):
    _add(tiny_dirs)
    before = Workspace(workspace).spec("tiny").to_dict()
    result = _run("corpus", "add", "tiny", "--train", broken_dir / "xml", "--test", tiny_dirs["test"], "--replace", ok=False)
    assert result.exit_code == 1
    assert Workspace(workspace).spec("tiny").to_dict() == before
    _run("corpus", "show", "tiny")


def test_unknown_corpus(workspace):
    for args in (["corpus", "show", "nope"], ["corpus", "rm", "nope"]):
        result = _run(*args, ok=False)
        assert result.exit_code == 1
        assert "no corpus named 'nope'" in result.output


def test_relative_paths_are_stored_absolute(workspace, tiny_dirs, monkeypatch):
    monkeypatch.chdir(tiny_dirs["train"].parent)
    _run("corpus", "add", "rel", "--train", "train", "--test", "test")
    spec = Workspace(workspace).spec("rel")
    assert spec.splits == {"train": str(tiny_dirs["train"]), "test": str(tiny_dirs["test"])}


def test_registry_file_is_private(workspace, tiny_dirs):
    _add(tiny_dirs)
    ws = Workspace(workspace)
    assert stat.S_IMODE(os.stat(ws.manifest_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(ws.state_dir).st_mode) == 0o700
    data = json.loads(ws.manifest_path.read_text())
    assert data["version"] == 1 and set(data["corpora"]) == {"tiny"}
    # no temp file left; the registry's lock file is owner-only too
    assert sorted(p.name for p in ws.state_dir.iterdir()) == ["corpora.json", "corpora.json.lock"]
    assert stat.S_IMODE(os.stat(ws.state_dir / "corpora.json.lock").st_mode) == 0o600


def test_unreadable_registry_is_a_clean_error(workspace):
    ws = Workspace(workspace)
    ws.state_dir.mkdir()
    ws.manifest_path.write_text("{not json")
    with pytest.raises(EnsembleDeidError, match="unreadable corpus registry"):
        ws.corpus_specs()
    result = _run("corpus", "ls", ok=False)
    assert result.exit_code == 1 and "unreadable corpus registry" in result.output
    ws.manifest_path.write_text(json.dumps({"version": 99, "corpora": {}}))
    with pytest.raises(EnsembleDeidError, match="registry version 99"):
        ws.corpus_specs()


def test_workspace_api(workspace, tiny_dirs):
    ws = Workspace(workspace)
    assert ws.cache_dir == workspace / "cached_predictions"
    assert ws.results_dir == workspace / "results"
    with pytest.raises(EnsembleDeidError, match="a test split is required"):
        ws.add_corpus(CorpusSpec("x", {"train": str(tiny_dirs["train"])}))
    ws.add_corpus(CorpusSpec("x", {"test": str(tiny_dirs["test"]), "dev": str(tiny_dirs["dev"]),
                                   "train": str(tiny_dirs["train"])}))
    corpus = ws.load("x")
    assert list(corpus.splits) == ["train", "dev", "test"]
    assert len(corpus.train) == 16 and len(corpus.test) == 4
    assert corpus.fingerprint("train") != corpus.fingerprint("test")
    assert corpus.fingerprint() == corpus.fingerprints["train"]
    assert "Zacarias" not in repr(corpus)
    ws.remove_corpus("x")
    with pytest.raises(UnknownCorpus):
        ws.remove_corpus("x")
    with pytest.raises(UnknownCorpus, match="register one with 'corpus add'"):
        ws.spec("x")


def test_load_stops_on_fatal_problems(workspace, broken_dir, tiny_dirs):
    ws = Workspace(workspace)
    ws.add_corpus(CorpusSpec("bad", {"train": str(broken_dir / "brat"), "test": str(tiny_dirs["test"])}))
    with pytest.raises(CorpusError) as info:
        ws.load("bad")
    assert "orphan.ann" in str(info.value)


def test_env_var_cache_dir(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("ENSEMBLE_DEID_CACHE", str(tmp_path / "cache"))
    assert Workspace(workspace).cache_dir == tmp_path / "cache"


@pytest.mark.parametrize("args", [["--help"], ["corpus", "--help"], ["corpus", "show", "--help"]])
def test_help_does_not_import_heavy_libraries(args):
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from ensemble_deid.cli import main\n"
        f"result = CliRunner().invoke(main, {args!r})\n"
        "assert result.exit_code == 0, result.output\n"
        "heavy = sorted(m for m in ('torch', 'sklearn', 'scipy', 'torchcrf', 'vowpalwabbit', 'pycrfsuite', "
        "'matplotlib', 'dask', 'ray', 'faker') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"'ensemble-deid {' '.join(args)}' imports {out.stdout.strip()}"


def test_version_option():
    from ensemble_deid import __version__

    assert __version__ in _run("--version").output


def test_several_train_folders_are_read_together(workspace, tiny_dirs):
    """The 2014 i2b2 training set comes as two folders (Set1 and Set2)."""
    out = _run("corpus", "add", "two", "--train", tiny_dirs["train"], "--train", tiny_dirs["dev"],
               "--test", tiny_dirs["test"]).output
    assert "train: 20 documents" in out
    assert "+" in _run("corpus", "ls").output


def test_a_document_id_in_two_train_folders_is_an_error(workspace, tiny_dirs):
    res = _run("corpus", "add", "dup", "--train", tiny_dirs["train"], "--train", tiny_dirs["train"],
               "--test", tiny_dirs["test"], ok=False)
    assert res.exit_code != 0 and "appears in" in res.output
