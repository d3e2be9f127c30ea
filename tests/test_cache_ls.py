"""``cache ls`` fits the terminal and names every training set (issue 31 item 6,
issue 34 item 8)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
from ensemble_deid.studies.crosscorpus import union_corpus

from .test_cache_verify import MEMBERS, two_votings  # noqa: F401 (fixture)
from .test_study import two_corpora  # noqa: F401 (fixture)


def _run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_ls_fits_80_columns_and_keeps_the_ensemble_details(two_votings, monkeypatch):  # noqa: F811
    monkeypatch.setenv("COLUMNS", "80")
    out = _run("cache", "ls")
    assert max(len(line) for line in out.splitlines()) <= 80, out
    flat = " ".join(out.split())
    # both voting entries, their members and thresholds, below the table
    assert flat.count("ensemble.voting") >= 4 and "members memorize, memorize:max_len=2" in flat
    assert "threshold=1" in flat and "threshold=2" in flat and "tiny" in flat
    wide = _run("cache", "ls", "--wide")
    assert max(len(line) for line in wide.splitlines()) > 80  # one line an entry, every column
    assert sum("| tiny " in line and "members memorize" in line for line in wide.splitlines()) == 2


def test_ls_names_a_union_training_set_by_its_corpora(two_corpora):  # noqa: F811
    ws = two_corpora
    union = union_corpus(ws.load("tinyA"), ws.load("tinyB"))
    CrossValidation(union.train, {}, PredictionCache(ws.cache_dir), k=3).run([TaggerSpec.parse("memorize")], progress=False)
    out = _run("cache", "ls", "--wide")
    line = next(x for x in out.splitlines() if x.startswith("| memorize "))
    trained_on = [c.strip() for c in line.strip("|").split("|")][3]
    assert trained_on == "tinyA train + tinyB train"  # not the fingerprint the path holds


def test_ls_of_the_published_meddocan_cache_fits_80_columns(tmp_path, monkeypatch):
    # The fresh-clone walk (issue 34 item 8): with the repository's published MEDDOCAN
    # predictions, the label 'rules:label_map=i2b2-to-meddocan' held its column at 32
    # characters and every line of the table at 103.
    published = Path(__file__).resolve().parent.parent / "cached_predictions" / "meddocan"
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("ENSEMBLE_DEID_PUBLISHED", str(published))
    out = _run("--workspace", str(tmp_path), "cache", "ls")
    assert "rules:label_map=" in out and "published" in out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    # the folded label still reads whole once the lines are joined
    assert "rules:label_map=i2b2-to-meddocan" in "".join(line.split("  ")[0].strip() for line in out.splitlines())
