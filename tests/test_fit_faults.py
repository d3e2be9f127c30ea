"""``fit`` under faults, as tests/test_faults.py does for the cache (issue 35:
fault injection on the apply path): killed mid-fit, then rerun; a full disk
while the bundle is written. Nothing cached is lost, the error names the
path, and the rerun succeeds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.deid import read_manifest
from ensemble_deid.experiment.cache import PredictionCache

from . import PLUGINS
from .conftest import REPO_ROOT
from .test_faults import disk_full  # noqa: F401 (the fixture)

# The first member sleeps in fit, so that a kill lands while members are fitted.
MEMBERS = "memorize:delay=1,memorize:max_len=1,memorize:max_len=2"


def _fit_args(corpus: str, out) -> list[str]:
    return ["fit", "--corpus", corpus, "--method", "voting", "--members", MEMBERS, "--folds", "3",
            "--out", str(out), "--no-progress"]


def _leftovers(folder) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith(".model"))


def test_fit_killed_while_fitting_members_then_rerun(tiny_registered, workspace, tmp_path):
    out = tmp_path / "model"
    # No kept models, so that fit trains its members (a kept model is only loaded).
    cv = CliRunner().invoke(main, ["cv", "--corpus", tiny_registered, "--taggers", MEMBERS, "--folds", "3",
                                   "--no-progress", "--no-keep-models"])
    assert cv.exit_code == 0, cv.output
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(REPO_ROOT)!r}, {PLUGINS!r}]
        from ensemble_deid.cli import main
        main({_fit_args(tiny_registered, out)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "ENSEMBLE_DEID_HOME": str(workspace)})
    deadline = time.time() + 300
    for line in proc.stderr:  # CV and the ensemble are done once members are fitted
        if (line.startswith("member ") and ": training on" in line) or time.time() > deadline:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    cache = PredictionCache(workspace / "cached_predictions")
    assert cache.verify() == []  # nothing half-written in the cache
    assert "ensemble.voting" in [m["tagger"] for _, m in cache.entries()]

    again = CliRunner().invoke(main, _fit_args(tiny_registered, out))
    assert again.exit_code == 0, again.output
    assert "fitting voting" not in again.output  # the members' CV and the ensemble were kept
    assert "spans identical to the cached 'ensemble' predictions on 10/10 test documents" in again.output
    assert [m["label"] for m in read_manifest(out)["members"]] == MEMBERS.split(",")
    assert cache.verify() == []


def test_fit_on_a_full_disk_names_the_path_and_a_rerun_succeeds(tiny_registered, workspace, tmp_path, disk_full):  # noqa: F811
    out = tmp_path / "model"
    runner = CliRunner()
    assert runner.invoke(main, ["cv", "--corpus", tiny_registered, "--taggers", MEMBERS, "--folds", "3",
                                "--no-progress"]).exit_code == 0
    disk_full(tmp_path / ".model")  # the bundle is written beside --out first
    full = runner.invoke(main, _fit_args(tiny_registered, out))
    assert full.exit_code == 1, full.output
    assert not isinstance(full.exception, OSError) and "Traceback" not in full.output
    assert "no space left on the device" in full.output and str(tmp_path / ".model.partial-") in full.output
    assert not out.exists() and _leftovers(tmp_path) == []  # no half-written bundle
    assert PredictionCache(workspace / "cached_predictions").verify() == []

    disk_full(tmp_path / "no-such-folder")  # space again
    again = runner.invoke(main, _fit_args(tiny_registered, out))
    assert again.exit_code == 0, again.output
    assert "10/10 test documents" in again.output and read_manifest(out)["method"]["name"] == "voting"
