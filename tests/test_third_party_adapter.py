"""A third-party tagger adapter, registered the way a user's would be: the
separate package examples/edeid-example-adapter is installed with pip (offline,
into a temporary folder), then a fresh interpreter with that folder on
PYTHONPATH must list its tagger and pass the shared contract suite.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "edeid-example-adapter"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The example package installed by pip into its own folder. Built from a
    copy, so pip's in-tree build files never land in the repository."""
    root = tmp_path_factory.mktemp("third-party")
    source = root / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = root / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"
    assert list(target.glob("edeid_example_adapter-*.dist-info")), "pip wrote no dist-info"
    return target


def _env(installed: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(installed), env.get("PYTHONPATH")]))
    env.pop("PYTEST_ADDOPTS", None)
    env.update(extra)
    return env


def _cli(installed: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess:
    """``ensemble-deid ARGS`` in a fresh interpreter (the console script's code path)."""
    code = "import sys; from ensemble_deid.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env=_env(installed, ENSEMBLE_DEID_HOME=str(workspace)), cwd=str(workspace))


def _row(table: str, first_cell: str) -> list[str] | None:
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == first_cell:
            return cells
    return None


def test_taggers_lists_the_third_party_tagger(installed, tmp_path):
    proc = _cli(installed, tmp_path, "taggers")
    assert proc.returncode == 0, proc.stderr
    row = _row(proc.stdout, "example-lexicon")
    assert row is not None, f"example-lexicon not listed:\n{proc.stdout}"
    assert row[1:4] == ["yes", "trained", "edeid-example-adapter"]


def test_cv_runs_the_third_party_tagger(installed, tmp_path):
    """Cross-validation through the CLI fills the cache with its predictions."""
    from .conftest import register_corpus
    from .tables import terminal_row
    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(16)
    register_corpus(tmp_path, "tiny", {"train": (tmp_path / "notes-train", docs[:12]),
                                       "test": (tmp_path / "notes-test", docs[12:])})
    proc = _cli(installed, tmp_path, "cv", "--corpus", "tiny", "--taggers", "example-lexicon:min_count=2",
                "--folds", "2", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert terminal_row(proc.stdout, "example-lexicon:min_count=2")[0] == "example-lexicon:min_count=2", proc.stdout
    entries = list((tmp_path / "cached_predictions" / "v1" / "example-lexicon").glob("1-*/*/entry.json"))
    assert len(entries) == 1


def test_contract_suite_passes(installed):
    """tests/test_example_adapter_contract.py (the shared TaggerContract) and the
    example package's own tests/test_contract.py, in a fresh pytest."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_example_adapter_contract.py", str(EXAMPLE / "tests" / "test_contract.py")],
        capture_output=True, text=True, timeout=240, cwd=str(REPO_ROOT),
        env=_env(installed, EDEID_EXAMPLE_ADAPTER_DIR=str(installed)),
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed" not in summary and "skipped" not in summary and "error" not in summary, summary
    assert "passed" in summary, summary


def test_a_plugin_folder_put_on_the_path_registers_at_the_next_lookup(tmp_path, monkeypatch):
    """The registry keeps its scan of the installed distributions while the
    import path is unchanged; a folder holding a dist-info put on (or taken
    off) ``sys.path`` is seen at the next lookup, in the same process."""
    from ensemble_deid.taggers.registry import UnknownTagger, entry_points, tagger_class

    info = tmp_path / "edeid_path_probe-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edeid-path-probe\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ensemble_deid.taggers]\npath-probe = edeid_test_plugin:MemorizeTagger\n")
    assert "path-probe" not in entry_points()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "path-probe" in entry_points() and tagger_class("path-probe").__name__ == "MemorizeTagger"
    entry_points()["path-probe"] = None  # a caller's copy: the registry's own stays as it was
    assert tagger_class("path-probe").__name__ == "MemorizeTagger"
    sys.path.remove(str(tmp_path))
    with pytest.raises(UnknownTagger, match="path-probe"):
        tagger_class("path-probe")
    sys.path.insert(0, str(tmp_path))  # monkeypatch takes it off again
