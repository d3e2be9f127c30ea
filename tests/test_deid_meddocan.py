"""MEDDOCAN: a pruned-voting bundle over the linear taggers, fitted from the
training split, loaded in a fresh process, de-identifies the dev split with
exactly the ``ensemble`` command's spans at >= 5,000 tokens/s end to end
(benchmarks/deidentify/bench_deidentify.py; slow: the members are trained on all 500
training notes). The members' 10-fold predictions come from the published
cache in cached_predictions/meddocan/ (read-only), or from a workspace cache
named by ENSEMBLE_DEID_MEDDOCAN_CACHE (copied, never written).

MEDDOCAN: Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez H, Lopez
Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638 (CC BY 4.0).
"""
from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest

from .test_deid_cli import _run

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
MEMBERS = "crf,memm,mira,searn"


@pytest.mark.slow
def test_meddocan_bundle_reproduces_the_ensemble_fast(meddocan_dir, workspace, tmp_path, monkeypatch):
    given = os.environ.get("ENSEMBLE_DEID_MEDDOCAN_CACHE")
    if given:
        shutil.copytree(given, tmp_path / "cache")
    else:
        published = Path(__file__).resolve().parent.parent / "cached_predictions" / "meddocan"
        if not (published / "published.json").is_file():
            pytest.skip(f"no published MEDDOCAN predictions at {published}")
        (tmp_path / "cache").mkdir()
        monkeypatch.setenv("ENSEMBLE_DEID_PUBLISHED", str(published))
    monkeypatch.setenv("ENSEMBLE_DEID_CACHE", str(tmp_path / "cache"))
    _run("corpus", "add", "meddocan", "--train", meddocan_dir / "train" / "xml", "--test", meddocan_dir / "dev" / "xml")
    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("deidentify.bench_deidentify")
    result = bench.main(["--corpus", "meddocan", "--method", "voting-pruned", "--members", MEMBERS,
                         "--model", str(tmp_path / "model"), "--out", str(tmp_path / "deidentify.json")])
    assert result["documents"] == 250
    assert result["documents_identical_to_ensemble_command"] == 250
    assert result["end_to_end_tokens_per_s"] >= 5000
