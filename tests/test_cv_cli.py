"""The cv, cache, taggers and compare commands end to end on the tiny corpus."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ensemble_deid.cli import main

from .tables import terminal_cells, terminal_row


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_cv_then_cache_ls_verify_export(tiny_registered, workspace, tmp_path):
    out = _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress").output
    assert "memorize" in out and "CV F1" in out and "6/6" in out  # 5 folds + test computed
    again = _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress").output
    assert "0/6" in again  # all reused
    ls = _run("cache", "ls").output
    assert "memorize" in ls
    verify = _run("cache", "verify").output
    assert "6 part(s) checked: 0 corrupt" in verify
    _run("cache", "export", str(tmp_path / "export"), "--corpus", tiny_registered)
    files = list((tmp_path / "export").rglob("*.xml"))
    assert len(files) == 30 + 10


def test_cache_verify_names_a_corrupt_part_and_exits_1(tiny_registered, workspace):
    _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress")
    npz = sorted(Path(workspace, "cached_predictions").rglob("fold-02.npz"))[0]
    data = bytearray(npz.read_bytes())
    data[50] ^= 0x10
    npz.write_bytes(bytes(data))
    res = _run("cache", "verify", ok=False)
    assert res.exit_code == 1
    assert "fold-02.npz" in res.output and "corrupt" in res.output
    rerun = CliRunner().invoke(main, ["cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress"])
    assert rerun.exit_code == 0 and "1/6" in rerun.output
    assert "recomputing" in rerun.output


def test_unknown_tagger_and_bad_params_are_bad_parameters(tiny_registered):
    res = _run("cv", "--corpus", tiny_registered, "--taggers", "nope", ok=False)
    assert res.exit_code == 2 and "unknown tagger 'nope'" in res.output
    res = _run("cv", "--corpus", tiny_registered, "--taggers", "memorize:colour=red", ok=False)
    assert res.exit_code == 2 and "invalid parameter 'colour'" in res.output


def test_taggers_lists_plugins():
    out = _run("taggers").output
    assert "memorize" in out and "edeid-test-plugin" in out


def test_compare_two_systems(tiny_registered):
    out = _run("compare", "memorize", "memorize:max_len=1", "--corpus", tiny_registered, "--folds", "5",
               "--trials", "500", "--test", "randomization", "--test", "bootstrap").stdout
    assert "(ref)" in out and "p (Holm)" in out and "95% CI" in out
    tests = [[c.strip() for c in x.strip("|").split("|")] for x in out.splitlines() if x.startswith("| memorize")]
    assert {r[1] for r in tests} >= {"randomization", "bootstrap"}  # one row a (system, test)
    assert "entity leak %" in out and "| union (ceiling) " in out  # issue 28: leaks next to F1, the ceiling
    assert max(len(line) for line in out.splitlines()) <= 80, out  # issue 34 item 8: fits a terminal


def test_compare_fits_80_columns_with_a_long_reference_name(tiny_registered):
    # the fresh-clone walk: "... against 'ensemble.stacked-svm'; Holm: ..." was 87 characters
    out = _run("compare", "memorize", "memorize:max_len=1", "--corpus", tiny_registered, "--folds", "5",
               "--trials", "200", "--test", "bootstrap", "--reference", "memorize:max_len=1").stdout
    assert "against 'memorize:max_len=1'" in " ".join(out.split())
    assert max(len(line) for line in out.splitlines()) <= 80, out


def test_compare_names_long_specs_by_aliases_keeping_the_reference_mark():
    # The published MEDDOCAN members made compare's tables 101 columns wide (issue 34 item 8;
    # the whole run: tests/test_ensemble_meddocan.py::test_the_walks_tables_fit_80_columns, slow).
    from ensemble_deid.cli.compare import _alias
    from ensemble_deid.studies.report import fitting_aliases

    names = ["crf", "lstm-crf-fea:epochs=12,validation_fraction=0", "ensemble.stacked-svm"]
    assert fitting_aliases(names, "x" * 80, 80) == (names, [])  # fits: the specs whole
    shown, legend = fitting_aliases(names, "x" * 101, 80)
    assert shown == ["crf", "lstm-crf-fea", "ensemble.stacked-svm"]
    assert legend == ["aliases: lstm-crf-fea = lstm-crf-fea:epochs=12,validation_fraction=0"]
    short = dict(zip(names, shown))
    assert _alias(names[1] + " (ref)", short) == "lstm-crf-fea (ref)" and _alias("union (ceiling)", short) == \
        "union (ceiling)"


def test_export_writes_only_this_corpus_parts_on_the_right_split(tiny_registered, workspace, tmp_path):
    from ensemble_deid.corpus.workspace import Workspace

    _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress")
    out = _run("cache", "export", str(tmp_path / "ex"), "--corpus", tiny_registered).output
    test_fp = Workspace(workspace).load(tiny_registered).fingerprint("test")
    assert f"predict-{test_fp}-all: 10 document(s) of the test split" in out
    assert "fold-00: " in out and "of the train split" in out


def test_cv_tables_fit_80_columns(tiny_registered, monkeypatch):
    # The fresh-clone walk (issue 34 item 8): one table of nine columns, 109 wide on the embedded
    # corpora and 142 with the published MEDDOCAN members; now scores, then seconds and memory.
    monkeypatch.setenv("COLUMNS", "80")
    taggers = "memorize,memorize:max_len=1,memorize:max_len=2"
    for _ in range(2):  # computed, then every part cached ("cached N" seconds)
        out = _run("cv", "--corpus", tiny_registered, "--taggers", taggers, "--folds", "5", "--no-progress").output
        tables = out[out.index("tagger "):]  # below the line naming the cache folder
        assert max(len(line) for line in tables.splitlines()) <= 80, out
        for label in taggers.split(","):
            assert len(terminal_row(out, label)) == 5 and len(terminal_row(out, label, under="predict s")) == 5


def test_cv_tells_cached_seconds_from_seconds_spent(tiny_registered):
    # issue 34 item 8: a fully cached rerun showed the original fit seconds as if just spent
    def row(out):
        cells = terminal_cells(out, "memorize", under="predict s")
        return cells["fit s"], cells["predict s"]

    first = _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress").output
    assert all(not c.startswith("cached") for c in row(first)) and "spent when the cached parts were made" not in first
    again = _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress").output
    fit, predict = row(again)
    assert fit.startswith("cached ") and predict.startswith("cached ")
    assert float(fit.split()[1]) == float(row(first)[0])  # the seconds the parts took when made, said so
    assert "spent when the cached parts were made" in " ".join(again.split())


def test_cv_refuses_an_unreachable_dask_scheduler_within_the_connect_timeout(tiny_registered, workspace):
    """The same short connection wait as deidentify's (by default a few
    seconds, not Dask's 30), an error naming the address, nothing cached."""
    import time

    from .clusters import free_port

    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    result = _run("cv", "--corpus", "tiny", "--taggers", "memorize", "--folds", "2", "--backend", "dask",
                  "--scheduler", address, "--no-progress", ok=False)
    assert time.monotonic() - start < 20
    assert result.exit_code == 2 and f"cannot reach a Dask scheduler at {address} within 5 s" in result.output
    assert not [p for p in (workspace / "cached_predictions").rglob("*") if p.is_file()]


def test_cv_says_each_alias_once(tiny_registered, monkeypatch):
    # issue 53 item 9: the same "aliases:" block followed every table
    monkeypatch.setenv("COLUMNS", "40")  # too narrow for the specs: every table by aliases
    taggers = "memorize:max_len=1,memorize:max_len=2"
    out = _run("cv", "--corpus", tiny_registered, "--taggers", taggers, "--folds", "5", "--no-progress").output
    assert out.count("aliases:") == 1 and out.index("aliases:") < out.index("peak")
    assert terminal_row(out, "memorize#2", under="peak")[0] == "memorize#2"
