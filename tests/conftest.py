"""Shared fixtures: the MEDDOCAN corpus beside the repository, the broken-file
folder, and a throwaway workspace."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# OpenMP threads that wait for work sleep instead of spinning: on a shared
# machine (the suite's target: 2 cores, other jobs running) torch's spinning
# threads burnt most of the CPU of its tiny fits (the stacked LSTM's thread
# test: 20 CPU s spinning, 6 s passive). Before torch is imported, as libgomp
# reads it once; child processes inherit it. A value set outside is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
# MEDDOCAN lives in the shared folder beside the repository (../shared/corpora/meddocan);
# MEDDOCAN_DIR points elsewhere (a clone that is not beside shared/), as for the benchmarks.
MEDDOCAN_DIR = Path(os.environ.get("MEDDOCAN_DIR") or REPO_ROOT.parent / "shared" / "corpora" / "meddocan")
MEDDOCAN_MISSING = "MEDDOCAN not found"  # the start of the skip reason, found again by the summary
BROKEN_DIR = TESTS_DIR / "data" / "broken"


def register_corpus(workspace: Path, name: str, splits: dict) -> str:
    """Write each split's documents, ``{split: (folder, documents)}``, as
    i2b2 XML into its folder (created) and register the folders in
    ``workspace`` as corpus ``name``."""
    from ensemble_deid.corpus.formats import write_i2b2_xml
    from ensemble_deid.corpus.workspace import CorpusSpec, Workspace

    for folder, docs in splits.values():
        folder.mkdir(parents=True)
        for doc in docs:
            write_i2b2_xml(doc, folder / f"{doc.id}.xml")
    Workspace(workspace).add_corpus(CorpusSpec(name, {split: str(folder) for split, (folder, _) in splits.items()}))
    return name


@pytest.fixture(scope="session")
def meddocan_dir() -> Path:
    """Root of MEDDOCAN (train/xml, dev/xml, dev/brat); skips when absent."""
    needed = [MEDDOCAN_DIR / "train" / "xml", MEDDOCAN_DIR / "dev" / "xml", MEDDOCAN_DIR / "dev" / "brat"]
    missing = [str(p) for p in needed if not p.is_dir()]
    if missing:
        pytest.skip(f"{MEDDOCAN_MISSING} at {MEDDOCAN_DIR} (missing {', '.join(missing)}); "
                    "set MEDDOCAN_DIR to the folder holding train/ and dev/")
    return MEDDOCAN_DIR


def pytest_terminal_summary(terminalreporter):
    """Say in the summary, not only among the skips, that the real-data
    tests did not run and how to run them: a clone that is not beside
    shared/ otherwise passes without its MEDDOCAN tests unnoticed."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if MEDDOCAN_MISSING in str(getattr(r, "longrepr", ""))]
    if skipped:
        import textwrap

        terminalreporter.write_sep("=", "real-data tests skipped", yellow=True)
        for line in textwrap.wrap(
                f"{len(skipped)} MEDDOCAN test(s) skipped: no corpus at {MEDDOCAN_DIR}. Clone the repository beside "
                "shared/ (../shared/corpora/meddocan) or set MEDDOCAN_DIR to the folder holding train/xml, dev/xml "
                "and dev/brat.", 80, break_on_hyphens=False, break_long_words=False):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def broken_dir() -> Path:
    return BROKEN_DIR


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """An empty workspace folder, also set as ENSEMBLE_DEID_HOME so that the
    CLI and Workspace() never touch the developer's own registry."""
    root = tmp_path / "workspace"
    root.mkdir()
    monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(root))
    monkeypatch.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    return root


@pytest.fixture
def tiny_registered(workspace, tmp_path) -> str:
    """The tiny corpus written as i2b2 XML (30 train, 10 test documents) and
    registered in the throwaway workspace as 'tiny'."""
    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(40)
    return register_corpus(workspace, "tiny", {"train": (tmp_path / "tiny-train", docs[:30]),
                                               "test": (tmp_path / "tiny-test", docs[30:])})


TINY_BUNDLE_MEMBERS = "rules,crf:max_iterations=10,svm"


@pytest.fixture(scope="session")
def fitted_tiny_bundle(tmp_path_factory) -> Path:
    """A voting bundle fitted once per session on the tiny corpus (``model``),
    its ``train`` and ``test`` folders and its workspace (``ws``: use it through
    ``test_deid_cli.tiny_bundle``, which points ENSEMBLE_DEID_HOME there)."""
    from click.testing import CliRunner

    from ensemble_deid.cli import main
    from ensemble_deid.corpus.formats import write_i2b2_xml

    from .tiny_corpus import tiny_corpus

    root = tmp_path_factory.mktemp("deid")
    docs = tiny_corpus(30, seed=5)
    for split, part in (("train", docs[:22]), ("test", docs[22:])):
        (root / split).mkdir()
        for doc in part:
            write_i2b2_xml(doc, root / split / f"{doc.id}.xml")
    mp = pytest.MonkeyPatch()
    mp.setenv("ENSEMBLE_DEID_HOME", str(root / "ws"))
    mp.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    try:
        for args in (["corpus", "add", "tiny", "--train", root / "train", "--test", root / "test"],
                     ["fit", "--corpus", "tiny", "--method", "voting", "--members", TINY_BUNDLE_MEMBERS, "--folds",
                      "3", "--out", root / "model", "--no-progress"]):
            result = CliRunner().invoke(main, list(map(str, args)))
            assert result.exit_code == 0, result.output + repr(result.exception)
        assert "spans identical to the cached 'ensemble' predictions on 8/8 test documents" in result.output
    finally:
        mp.undo()
    return root


@pytest.fixture
def no_outside_published(monkeypatch):
    """No published folder from the environment, and the cache's once-per-process
    notices about published folders reset: a test sees only the folders it sets up."""
    from ensemble_deid.experiment import cache as cache_module

    monkeypatch.delenv("ENSEMBLE_DEID_PUBLISHED", raising=False)
    monkeypatch.setattr(cache_module, "_REPORTED", set())


@pytest.fixture
def crf_fit_unlike_cv(monkeypatch):
    """``fit`` trains the CRF with one L-BFGS iteration instead of its spec's
    ten: a member fit trains differs from cv's (as a torch network retrained on
    another machine does), so only a reused kept model reproduces cv's predictions."""
    from ensemble_deid.deid import fit as fit_module
    from ensemble_deid.experiment.cv import parse_tagger_specs

    fitted = fit_module.fit_member

    def unlike_cv(spec, train):
        if spec.label.startswith("crf"):
            (spec,) = parse_tagger_specs("crf:max_iterations=1")
        return fitted(spec, train)

    monkeypatch.setattr(fit_module, "fit_member", unlike_cv)
