"""The report page on MEDDOCAN dev (slow; MEDDOCAN, CC BY 4.0, Marimon et al.,
IberLEF@SEPLN 2019): the 12 published members and a voting ensemble, built
by the command from the published cache. The page is under 20 MB, holds no
PHI string or note text without --include-text, opens in headless Chromium
without console errors, and its numbers equal ``evaluate``'s and
``compare``'s on a sample of systems."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.studies.report import aliases

from .conftest import REPO_ROOT
from .test_html_report import VISIBLE_DOCS, _summary_rows, assert_no_note_text, find_chromium

pytestmark = pytest.mark.slow

MEMBERS = ("crf,memm,searn,mira,svm,ogd,struct-svm,rules:label_map=i2b2-to-meddocan,lstm-crf-l:epochs=12,validation_fraction=0,"
           "lstm-crf-n:epochs=12,validation_fraction=0,lstm-l:epochs=16,validation_fraction=0,"
           "lstm-crf-fea:epochs=12,validation_fraction=0")


def _run(*args):
    result = CliRunner().invoke(main, list(map(str, args)))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_meddocan_dev_page(meddocan_dir, workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("ENSEMBLE_DEID_PUBLISHED", str(REPO_ROOT / "cached_predictions" / "meddocan"))
    _run("corpus", "add", "meddocan", "--train", meddocan_dir / "train" / "xml", "--test", meddocan_dir / "dev" / "xml")
    _run("ensemble", "--corpus", "meddocan", "--method", "voting", "--members", MEMBERS, "--no-oof", "--no-progress",
         "--no-diagnostics")
    page_path = tmp_path / "report.html"
    _run("report", "--corpus", "meddocan", "--members", MEMBERS, "--ensembles", "voting", "-o", page_path)
    assert page_path.stat().st_size < 20e6 and page_path.stat().st_mode & 0o777 == 0o600
    page = page_path.read_text(encoding="utf-8")

    from ensemble_deid.corpus.workspace import Workspace

    dev = Workspace(workspace).load("meddocan").test
    assert_no_note_text(page, dev)

    rows = _summary_rows(page)
    assert len(rows) == 13
    for system in ("crf", "lstm-crf-fea:epochs=12,validation_fraction=0", "rules:label_map=i2b2-to-meddocan", "ensemble.voting"):
        ev = json.loads(_run("evaluate", "--corpus", "meddocan", "--system", system, "--criteria", "strict",
                             "--format", "json"))
        micro = ev["strict"]["micro"] if "strict" in ev else ev["criteria"]["strict"]["micro"]
        assert [float(x) for x in rows[system][2:5]] == [micro["precision"], micro["recall"], micro["f1"]]
        assert [int(x) for x in rows[system][5:8]] == [micro["tp"], micro["fp"], micro["fn"]]
    out = _run("compare", "--corpus", "meddocan", "--test", "t-test", "crf", "lstm-crf-fea:epochs=12,validation_fraction=0", "ensemble.voting")
    compared = ("crf", "lstm-crf-fea:epochs=12,validation_fraction=0", "ensemble.voting")
    for system, alias in zip(compared, aliases(compared)):  # 80 columns: long specs under their aliases
        line = next(x for x in out.splitlines() if x.startswith(f"| {alias} "))
        shown = tuple(float(c) for c in line.strip("|").split("|")[1:4])
        assert shown == tuple(round(float(x), 4) for x in rows[system][2:5])

    if find_chromium() is None:
        pytest.skip("no Chromium installed (apt-get install chromium): the browser half is not run")
    from chromium import Chromium

    with Chromium() as b:
        b.open(page_path)
        assert b.problems() == [] and len(b.requests()) == 1
        listed = b.evaluate(VISIBLE_DOCS)
        b.evaluate("var c = document.getElementById('category'); c.value = 'NAME'; c.dispatchEvent(new Event('change'))")
        assert 0 < b.evaluate(VISIBLE_DOCS) < listed
        b.evaluate("document.querySelector('#doc-table tbody tr').click()")
        assert b.evaluate("document.querySelectorAll('#region-table tbody tr').length") > 0
        assert b.problems() == []
