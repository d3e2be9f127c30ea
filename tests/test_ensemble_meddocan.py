"""MEDDOCAN (train CV -> dev as test): with the CRF, the rules and the six
linear taggers as members, pruned voting and the stacked SVM beat the best
single member's strict F1 (issue 9). Slow: the members' 10-fold CV takes
about 30 minutes on two cores the first time; point ENSEMBLE_DEID_TEST_CACHE
at a prediction cache to reuse it across runs."""
from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.taggers.registry import entry_points

pytestmark = pytest.mark.slow

MEMBERS = "crf,rules:label_map=i2b2-to-meddocan,memm,searn,mira,svm,ogd,struct-svm"
LABELS = MEMBERS.split(",")


@pytest.fixture(scope="module")
def meddocan_workspace(meddocan_dir, tmp_path_factory):
    if not {label.split(":")[0] for label in LABELS} <= set(entry_points()):
        pytest.skip("the rules, CRF and linear adapters are not all registered")
    root = tmp_path_factory.mktemp("meddocan-ws")
    env = {"ENSEMBLE_DEID_HOME": str(root),
           "ENSEMBLE_DEID_CACHE": os.environ.get("ENSEMBLE_DEID_TEST_CACHE", str(root / "cache"))}
    result = CliRunner(env=env).invoke(main, ["corpus", "add", "meddocan", "--train", str(meddocan_dir / "train" / "xml"),
                                              "--test", str(meddocan_dir / "dev" / "xml")])
    assert result.exit_code == 0, result.output
    return env


def _f1(output, label):
    line = next(x for x in output.splitlines() if x.startswith(f"| {label} "))
    return float([c.strip() for c in line.strip("|").split("|")][6])


@pytest.mark.parametrize("method", ["voting-pruned", "stacked-svm"])
def test_ensemble_beats_the_best_member(meddocan_workspace, method):
    result = CliRunner(env=meddocan_workspace).invoke(
        main, ["ensemble", "--corpus", "meddocan", "--method", method, "--members", MEMBERS, "--no-progress"])
    assert result.exit_code == 0, result.output
    best = max(_f1(result.output, label) for label in LABELS)
    assert _f1(result.output, f"ensemble.{method}") > best
    assert re.search(r"ensemble test F1 \d\.\d{4} \(\+0\.\d{4}\)", result.output)
