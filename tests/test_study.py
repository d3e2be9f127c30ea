"""A cross-corpus study end to end on two tiny corpora (fast members only)."""
from __future__ import annotations

import json
import re
import sys

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.formats import write_i2b2_xml
from ensemble_deid.studies.study import Study, StudyConfig
from ensemble_deid.corpus.workspace import CorpusSpec, Workspace

from .tiny_corpus import tiny_corpus


@pytest.fixture
def two_corpora(workspace, tmp_path):
    ws = Workspace(workspace)
    for name, seed, prefix in (("tinyA", 0, ""), ("tinyB", 7, "B")):
        docs = tiny_corpus(30, seed=seed, prefix=prefix)
        dirs = {"train": tmp_path / f"{name}-train", "test": tmp_path / f"{name}-test"}
        for split, part in (("train", docs[:20]), ("test", docs[20:])):
            dirs[split].mkdir()
            for d in part:
                write_i2b2_xml(d, dirs[split] / f"{d.id}.xml")
        ws.add_corpus(CorpusSpec(name, {k: str(v) for k, v in dirs.items()}, group_pattern=r"^B?(\d{3})-\d{2}$"))
    return ws


def test_cross_corpus_study_writes_tables_plots_and_manifest(two_corpora, tmp_path, monkeypatch):
    from ensemble_deid.studies import plots

    heatmaps = []
    draw = plots.agreement_heatmap
    monkeypatch.setattr(plots, "agreement_heatmap", lambda names, *a, **k: heatmaps.append(list(names)) or draw(names, *a, **k))
    cfg = StudyConfig(corpora=["tinyA", "tinyB"], taggers=["memorize", "memorize:max_len=2", "rules"],
                      methods=["voting", "voting-pruned", "stacked-svm"], folds=3, trials=200, name="t")
    said = []
    res = Study(two_corpora, cfg, log=said.append, progress=False,
                command=["ensemble-deid", "study", "--corpus", "tinyA"]).run(tmp_path / "out")
    # issue 53 (a fresh clone's walk): each step's line fits 80 columns, as the tables do
    lines = [line for message in said for line in message.splitlines()]
    assert any(x.startswith("  voting-pruned on tinyA test, all models") for x in lines), lines
    assert max(map(len, lines)) <= 80, [x for x in lines if len(x) > 80]
    # Table 4: trainable taggers have a value for every (test, training set); rules once per test split.
    base = {label: cells for label, cells in res.base_table.rows}
    assert len(res.base_table.columns) == 6
    assert all(c.value is not None for c in base["memorize"])
    assert sum(c.value is not None for c in base["rules"]) == 2
    # Table 5: columns per test corpus for its models, the other corpus's and all.
    assert res.ensemble_table.columns == [
        "tinyA test: tinyA models", "tinyA test: tinyB models", "tinyA test: all models",
        "tinyB test: tinyB models", "tinyB test: tinyA models", "tinyB test: all models",
    ]
    methods = {label for label, _ in res.ensemble_table.rows}
    assert {"voting", "voting-pruned", "stacked-svm", "best single member"} <= methods
    # issue 34 item 8: the oracle recall is a bound, not an F1: in the note, not a row of F1 columns
    assert not any("oracle" in label for label in methods)
    # issue 34 item 7: the agreement heatmaps show the members, not the union-trained models
    assert len(heatmaps) == 2 and all(names for names in heatmaps)
    assert not any("tinyA+tinyB" in n for names in heatmaps for n in names), heatmaps
    note = res.ensemble_table.note
    assert "Oracle recall (%)" in note and "not an F1" in note and note.count("A test / ") == 3
    # issue 28: F1 beside the entity and token leaks with intervals, the members' union as the ceiling
    leaks = dict(res.leak_table.rows)
    assert res.leak_table.columns == ["F1", "entity leak", "token leak"]
    assert {"voting, A/all", "best single member, B/A", "members' union (ceiling), B/all"} <= set(leaks)
    f1 = dict(res.ensemble_table.rows)
    assert leaks["voting, A/all"][0].value == f1["voting"][2].value
    for label, cells in leaks.items():
        token = cells[2].params["all"]
        shown = [float(x) for x in re.fullmatch(r"(\S+) \((\S+)-(\S+)\)", cells[2].value).groups()]
        assert shown == pytest.approx([100 * token["rate"], *(100 * x for x in token["ci95"])], abs=0.006)
        assert token["ci95"][0] <= token["rate"] <= token["ci95"][1]
        if "ceiling" not in label:  # the union of a column's members leaks no more than any of its systems
            ceiling = leaks["members' union (ceiling)" + label[label.index(","):]]
            assert ceiling[2].params["all"]["rate"] <= token["rate"]
            assert ceiling[1].params["all"]["rate"] <= cells[1].params["all"]["rate"]
    assert max(len(line) for line in res.leak_table.terminal(width=80).splitlines()) <= 80
    names = {p.name for p in res.directory.iterdir()}
    for stem in ("base_taggers", "ensembles", "leaks"):
        assert {f"{stem}.md", f"{stem}.csv", f"{stem}.json", f"{stem}.tex"} <= names
    assert {"voting_threshold_tinyA.png", "category_f1_tinyA.png", "agreement_tinyB.png", "manifest.json"} <= names
    manifest = json.loads((res.directory / "manifest.json").read_text())
    assert set(manifest["corpora"]) == {"tinyA", "tinyB"}
    assert "memorize@tinyA+tinyB" in manifest["members"]
    assert manifest["members"]["rules"]["trained_on"] == "external"
    # What produced the folder: the commit, the command line and every chosen value.
    assert re.fullmatch(r"[0-9a-f]{40}", manifest["git"]["commit"])
    assert manifest["command"] == ["ensemble-deid", "study", "--corpus", "tinyA"]
    assert manifest["members"]["memorize:max_len=2@tinyA"]["params"] == {"max_len": 2}
    chosen = manifest["chosen"]["tinyA test: all models"]
    assert set(chosen) == {"best single member", "voting", "voting-pruned", "stacked-svm"}
    assert "threshold" in chosen["voting"]["chosen_by_cv"] and "C" in chosen["stacked-svm"]["chosen_by_cv"]
    assert chosen["voting"]["params"]["threshold"] == chosen["voting"]["chosen_by_cv"]["threshold"]
    kept = chosen["voting-pruned"]["learned"]["members"]
    assert kept and set(kept) <= set(manifest["members"])
    assert 1 <= chosen["voting-pruned"]["learned"]["threshold"] <= len(kept)
    # The best single member is chosen on the training-set outputs and never a union model.
    members = [m for m in manifest["members"] if "+" not in m]
    assert chosen["best single member"] in members
    cells = json.loads((res.directory / "ensembles.json").read_text())["cells"]
    voting = next(c for c in cells if c["method"] == "voting" and c["column"] == "tinyA test: all models")
    p, r, f = voting["precision"], voting["recall"], voting["f1"]
    assert f == pytest.approx(2 * p * r / (p + r)) and voting["params"] == {**chosen["voting"]["chosen_by_cv"], **chosen["voting"]["learned"]}
    base_cells = json.loads((res.directory / "base_taggers.json").read_text())["cells"]
    short = next(c for c in base_cells if c["tagger"] == "memorize:max_len=2" and c["f1"] is not None)
    assert short["params"] == {"max_len": 2} and short["precision"] is not None

    # Run again: everything comes from the cache, same tables.
    again = Study(two_corpora, cfg, log=lambda m: None, progress=False).run(tmp_path / "out2")
    assert again.base_table.markdown() == res.base_table.markdown()
    assert again.ensemble_table.markdown() == res.ensemble_table.markdown()


def test_study_cli_with_flags(two_corpora):
    res = CliRunner().invoke(main, ["study", "--corpus", "tinyA", "--taggers", "memorize,rules", "--methods", "voting",
                                    "--folds", "3", "--trials", "200", "--no-progress"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "Base taggers" in res.output and "Ensembles" in res.output and "results:" in res.output
    assert "Summary" in res.output and "\\*" not in res.output


def test_study_config_errors_are_clear(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text('corpora = ["a"]\ntaggers = ["crf"]\nmethods = ["magic"]\n')
    with pytest.raises(Exception, match="unknown ensemble method"):
        StudyConfig.load(bad)
    bad.write_text('corpora = ["a"]\ntaggers = ["crf"]\ncolour = 1\n')
    with pytest.raises(Exception, match="unknown key"):
        StudyConfig.load(bad)


def test_demo_output_keeps_the_progress_bar_clean(two_corpora, monkeypatch):
    """loky's notice that it replaced a worker (benign: the work is not lost)
    must not break into the progress bar of any command running the CV engine;
    other warnings still show."""
    import warnings

    from ensemble_deid.experiment import cv as cv_module

    real_task = cv_module.execute_task

    def task_with_worker_notice(*args, **kwargs):
        warnings.warn("A worker stopped while some jobs were given to the executor. This can be caused by a "
                      "too short worker timeout or by a memory leak.", UserWarning)
        warnings.warn("something else", UserWarning)
        return real_task(*args, **kwargs)

    monkeypatch.setattr(cv_module, "execute_task", task_with_worker_notice)
    for command in (["study", "--corpus", "tinyA", "--taggers", "memorize,rules", "--methods", "voting", "--folds",
                     "3", "--trials", "200", "--no-progress"],
                    ["cv", "--corpus", "tinyB", "--taggers", "memorize", "--folds", "3", "--no-progress"]):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            res = CliRunner().invoke(main, command, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        messages = [str(w.message) for w in seen]
        assert "something else" in messages, command[0]
        assert not any(m.startswith("A worker stopped") for m in messages), command[0]


def test_demo_lists_unavailable_taggers_with_the_reason(monkeypatch):
    from ensemble_deid.cli.study import _available

    monkeypatch.delenv("ENSEMBLE_DEID_MIST_HOME", raising=False)
    said = []
    keep, skipped = _available(["crf:max_iterations=5", "mist", "no-such-tagger"], said.append)
    assert keep == ["crf:max_iterations=5"]
    assert skipped["mist"].startswith("not configured") and skipped["no-such-tagger"] == "not installed"
    assert said == [f"skipping {name}: {reason}" for name, reason in skipped.items()]


def test_summary_table_compares_best_member_and_best_ensemble_and_lists_skipped(tmp_path):
    from ensemble_deid.studies.report import Cell, ResultTable
    from ensemble_deid.studies.study import StudyResult
    from ensemble_deid.studies.summary import study_summary

    ens = ResultTable("Ensembles", ["A test: A models"], row_header="method")
    ens.add("best single member", [Cell(0.80, params={"member": "crf:max_iterations=30@A"})])
    ens.add("oracle recall (any member)", ["(90.00)"])
    ens.add("voting", [0.79])
    ens.add("stacked-svm", [0.8325])
    result = StudyResult(tmp_path, ResultTable("Base", ["x"]), ens,
                         {"seconds": {"total": 12.0, "base_taggers": 10.0, "ensembles": 2.0}})
    out = study_summary(result, {"mist": "not configured"}, width=100)
    row = next(line for line in out.splitlines() if line.startswith("A test: A models"))
    assert row.split() == ["A", "test:", "A", "models", "crf@A", "80.00", "stacked-svm", "83.25", "+3.25"]
    assert "skipped mist: not configured" in out and "time: 12 s wall" in out


def test_a_studys_time_has_its_cpu_time_and_load_beside_the_wall_time(tmp_path):
    # issue 34 item 4 on the walk: the MEDDOCAN study printed "time: 609 s" at load 11 for 69 CPU s
    from ensemble_deid.studies.report import Cell, ResultTable
    from ensemble_deid.studies.study import StudyResult
    from ensemble_deid.studies.summary import study_summary

    ens = ResultTable("Ensembles", ["A test: A models"], row_header="method")
    ens.add("best single member", [Cell(0.80, params={"member": "crf@A"})])
    ens.add("voting", [0.79])
    result = StudyResult(tmp_path, ResultTable("Base", ["x"]), ens, {"seconds": {
        "total": 609.0, "base_taggers": 14.0, "ensembles": 561.0, "cpu": 68.8, "load_average": [11.49, 11.06]}})
    out = " ".join(study_summary(result, width=100).split())
    assert "time: 609 s wall, 69 s CPU (load 11.1-11.5); base taggers 14 s, ensembles 561 s wall" in out


def test_cpu_seconds_count_the_processes_a_study_waited_for():
    import subprocess

    from ensemble_deid.studies.study import cpu_seconds

    before = cpu_seconds()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"],
                   check=True)
    assert cpu_seconds(ended_workers=True) - before >= 0.35


def test_study_ensembles_bar_shows_no_time_remaining_on_a_terminal(two_corpora, tmp_path, monkeypatch):
    """Issue 34 item 5: the fits differ by orders of magnitude (voting vs a
    stacked learner), so the ensembles' bar shows the count and the elapsed
    time but never tqdm's average-based "elapsed<remaining"."""
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    cfg = StudyConfig(corpora=["tinyA"], taggers=["memorize", "memorize:max_len=2"], methods=["voting", "stacked-svm"],
                      folds=3, trials=200, name="t")
    Study(two_corpora, cfg, log=lambda m: None, progress=True).run(tmp_path / "out")
    bars = [x for x in re.split(r"[\r\n]", term.getvalue()) if x.startswith("ensembles")]
    assert bars and any("2/2" in x for x in bars)
    assert not any(re.search(r"\d<(\d|\?)", x) for x in bars), bars
