"""A clone that is not beside shared/: MEDDOCAN_DIR names the corpus, and the
pytest summary says that the real-data tests were skipped (issue 53 item 12)."""
from __future__ import annotations

import os
import subprocess
import sys

from .conftest import REPO_ROOT


def _pytest(env_dir: str, *tests: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEDDOCAN_DIR": env_dir, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_meddocan_dir_is_read_and_the_skip_is_said_in_the_summary(tmp_path):
    missing = tmp_path / "no-corpus-here"
    run = _pytest(str(missing), "tests/test_folds.py::test_balanced_on_meddocan",
                  "tests/test_hipaa_coverage.py")
    assert run.returncode == 0, run.stdout + run.stderr
    summary = run.stdout.split("real-data tests skipped", 1)
    assert len(summary) == 2, run.stdout  # a section of its own, not only a SKIPPED line among others
    said = " ".join(summary[1].split("short test summary info")[0].split())
    assert f"2 MEDDOCAN test(s) skipped: no corpus at {missing}" in said
    assert "MEDDOCAN_DIR" in said

