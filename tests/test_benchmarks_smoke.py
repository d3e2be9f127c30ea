"""Smoke tests of the benchmark scripts: benchmarks/run_all.py on a few
documents of the embedded synthetic corpus (rules + a 5-iteration CRF, 2
folds, voting) in a throwaway workspace, and benchmarks/scale/bench_cache.py on a
tiny synthetic cache. They check that the result files are written with the
expected keys, not the figures. The scripts' ``main(argv)`` run in this
process (no interpreter start-up), as ``python benchmarks/<script>.py``
would run them."""
from __future__ import annotations

import importlib
import json
import os
from types import SimpleNamespace
from pathlib import Path

import pytest

from ensemble_deid.taggers.registry import entry_points

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
SYSTEM_KEYS = {"system", "kind", "scores", "cv_strict_f1", "train_s", "predict_s", "tokens_per_s", "peak_rss_mb"}


@pytest.fixture
def scripts(monkeypatch, tmp_path):
    """Import a benchmark script as a module, by its group (``"ensembles.recall_first"``;
    benchmarks/ on sys.path, as when run)."""
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.chdir(tmp_path)
    for name in ("ENSEMBLE_DEID_CACHE", "ENSEMBLE_DEID_MIST_HOME"):  # the workspace's cache; mist unconfigured
        monkeypatch.delenv(name, raising=False)
    return importlib.import_module


def test_run_all_smoke(tmp_path, monkeypatch, scripts, capsys):
    if not {"rules", "crf"} <= set(entry_points()):
        pytest.skip("rules and crf adapters not registered")
    run_all = scripts("run_all")
    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(ws))
    args = ["--corpus", "synthetic-2014", "--taggers", "rules,crf:max_iterations=5,mist",
            "--methods", "voting", "--folds", "2", "--limit-train", "10", "--limit-test", "5",
            "--out-dir", str(out), "--no-progress"]
    run_all.main(args)
    assert "| ensemble.voting " in capsys.readouterr().out  # the summary table
    data = json.loads((out / "run_all-synthetic-2014.json").read_text())
    assert data["complete"] is True
    assert {"cpu_model", "cpus", "memory", "python", "libraries", "load_average"} <= set(data["machine"])
    assert data["corpus"]["train_docs"] == 10 and data["corpus"]["test_docs"] == 5
    systems = {s["system"]: s for s in data["systems"]}
    assert set(systems) == {"rules", "crf:max_iterations=5", "ensemble.voting"}, data["failed"]
    for s in systems.values():
        assert SYSTEM_KEYS <= set(s), s["system"]
        assert {"strict", "token", "binary_token", "leak"} <= set(s["scores"])
        assert 0.0 <= s["scores"]["strict"]["f1"] <= 1.0
        assert 0.0 <= s["scores"]["leak"]["token_rate"] <= 1.0
        assert s["cv_strict_f1"] is not None and s["predict_s"] is not None
    assert systems["crf:max_iterations=5"]["parts_computed"] == 3  # 2 folds + the full-training model
    assert [s["system"] for s in data["skipped"]] == ["mist"]  # an unconfigured external system
    assert data["failed"] == []
    md = (out / "run_all-synthetic-2014.md").read_text()
    assert "| ensemble.voting " in md and "Machine:" in md
    # What this run spent (issue 34 item 4): wall with CPU (process and workers) and load, per step and in all.
    for s in systems.values():
        assert s["this_run_cpu_s"] >= 0 and s["load_before"] >= 0 and s["load_after"] >= 0, s["system"]
    assert systems["crf:max_iterations=5"]["this_run_cpu_s"] > 0
    assert data["cpu_s"] > 0 and data["load_before"] >= 0 and (data["steps"], data["steps_computed"]) == (3, 3)
    assert " CPU (" in md and "read from the cache" not in md
    assert "this run: wall s" in md and "load (1 min)" in md  # per step, in the table the docs copy
    # ... and the niceness it ran at, shown beside them when not 0 (as bench_commands.py records it)
    assert data["nice"] == os.nice(0)
    summary = (out / "run_all-synthetic-2014-summary.md").read_text()
    assert "The run: " in summary and " CPU (" in summary
    assert (f", nice {data['nice']}" in md and f", nice {data['nice']}" in summary) if data["nice"] else "nice" not in md
    assert (ws / "cached_predictions").is_dir()  # the workspace's cache, kept for reruns

    # A rerun reuses every cached part.
    run_all.main(args)
    again = {s["system"]: s for s in json.loads((out / "run_all-synthetic-2014.json").read_text())["systems"]}
    assert again["crf:max_iterations=5"]["parts_computed"] == 0
    assert again["ensemble.voting"]["computed"] is False
    assert again["crf:max_iterations=5"]["scores"] == systems["crf:max_iterations=5"]["scores"]
    # ... and its time says so: a fully cached rerun does not pose as the work's time (issue 34 item 8).
    rerun = json.loads((out / "run_all-synthetic-2014.json").read_text())
    assert (rerun["steps"], rerun["steps_computed"]) == (3, 0)
    assert "0 of 3 steps computed, the rest read from the cache" in (out / "run_all-synthetic-2014.md").read_text()


def test_a_clock_with_children_counts_the_cpu_of_the_processes_it_waited_for(scripts):
    import subprocess
    import sys

    common = scripts("common")
    burn = [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"]
    with common.Clock(children=True) as both:
        subprocess.run(burn, check=True)
    with common.Clock() as own:
        subprocess.run(burn, check=True)
    assert both.cpu >= 0.45 and own.cpu < 0.2
    assert both.load_before >= 0 and both.load_after >= 0


def test_bench_cache_smoke(tmp_path, scripts):
    out = tmp_path / "cache.json"
    scripts("scale.bench_cache").main(["--tokens", "5000", "--parts", "3", "--repeat", "1", "--synthetic", "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["data"]["tokens"] >= 5000 and data["data"]["parts"] == 3
    ours = data["ours"]
    for key in ("write", "read", "verify"):
        assert {"median_s", "file_mb_per_s", "mtokens_per_s"} <= set(ours[key])
    assert ours["npz_bytes_per_million_tokens"] > ours["npz_bytes_per_million_tokens_tags_only"] > 0
    assert set(data["alternatives"]) == {"jsonl", "jsonl_gz", "pickle"}
    for alt in data["alternatives"].values():
        assert {"write_time", "read_time", "size"} <= set(alt["ratios"])
    assert "cpu_model" in data["machine"]
    # the docs' table beside it (benchmarks.md copies it): wall with CPU and load
    table = out.with_suffix(".md").read_text()
    assert "s wall," in table and "s CPU" in table and "load (1 min)" in table


def test_bench_pruning_smoke(tmp_path, scripts):
    # It had stopped working twice over as the cache and the scorer moved on (a part
    # written without its entry record is unreadable; the subset scorer returns counts):
    # found when the docs' pruning table was to be generated from it (issue 34 item 4).
    out = tmp_path / "pruning.json"
    data = scripts("scale.bench_pruning").main(["--tokens", "20000", "--members", "5", "--naive-evaluations", "1",
                                          "--output", str(out)])
    assert json.loads(out.read_text()) == data and data["evaluations"] > 0
    assert set(data["cpu_seconds"]) == {"read_cache", "build_candidates", "search"}
    assert data["load_before"] >= 0 and data["load_after"] >= 0
    table = out.with_suffix(".md").read_text()
    assert "| stage | wall s | CPU s |" in table and "load (1 min)" in table


def test_summary_table_from_a_results_file(scripts):
    # Hand-made results: the table sorts by strict F1, marks the best-by-CV
    # member and the best ensemble, and states the gains computed from them.
    run_all = scripts("run_all")

    def system(name, kind, f1, cv=None, **extra):
        return {"system": name, "kind": kind, "scores": {"strict": {"f1": f1}}, "cv_strict_f1": cv, **extra}

    members = ["a", "b:x=1", "c"]
    result = {"systems": [
        system("a", "tagger", 0.90, cv=0.95), system("b:x=1", "tagger", 0.92, cv=0.91), system("c", "tagger", 0.80),
        system("ensemble.voting", "ensemble", 0.93, members=members, chosen_params={"threshold": 2}),
        system("ensemble.voting-pruned", "ensemble", 0.935, members=members, chosen_params={},
               learned={"threshold": 1, "subset": ["a", "b:x=1"]}),
        system("ensemble.stacked-svm", "ensemble", 0.94, members=members, chosen_params={"C": 10.0}),
    ]}
    result["systems"][0]["scores"]["leak"] = {"token_rate": 0.02}
    first = {"rows": [{"method": "voting-pruned", "objective": "binary-token:recall>=0.99",
                       "dev": {"strict": {"f1": 0.91}, "binary-token": {"recall": 0.9911},
                               "leak_token": {"all": {"rate": 0.008}}}}]}
    lines = run_all.summary_table(result, rows=2, recall_first=first).splitlines()
    assert lines[0] == "| system | strict F1 | token leak | | ensemble (3 members) | strict F1 | token leak |"
    assert lines[2] == "| b | 0.9200 |  | | **stacked-svm (C = 10)** | **0.9400** |  |"
    assert lines[3] == "| a (best by CV F1) | 0.9000 | 0.0200 | | voting-pruned (2 of 3, t = 1) | 0.9350 |  |"
    assert lines[4] == "|  |  |  | | voting (t = 2) | 0.9300 |  |"
    assert lines[5] == ("|  |  |  | | voting-pruned, recall-first (binary-token R 0.9911) | 0.9100 | 0.0080 |")
    assert lines[-2] == ("The best ensemble, stacked-svm, is +2.00 points over the best single member on this split (b) "
                         "and +4.00 over the member a user would pick, the best by CV F1 (a).")


def test_bench_commands_times_a_whole_command_and_keeps_the_others(tmp_path, monkeypatch, scripts):
    bench = scripts("scale.bench_commands")
    monkeypatch.setattr(bench, "COMMANDS", {"taggers": ("ensemble-deid taggers", ["taggers"], "-")})
    monkeypatch.setattr(bench, "JSON_PATH", tmp_path / "commands.json")
    monkeypatch.setattr(bench, "MD_PATH", tmp_path / "commands.md")
    earlier = {"command": "ensemble-deid demo", "make": "make demo", "wall_s": 3000.0, "cpu_s": 2500.0,
               "load_before": 2.0, "load_after": 3.0, "cores": 2, "machine": {"when": "2026-11-25T00:00:00+0000"}}
    (tmp_path / "commands.json").write_text(json.dumps({"commands": {"demo": earlier}}), encoding="utf-8")
    assert bench.main(["taggers"]) == 0
    data = json.loads((tmp_path / "commands.json").read_text(encoding="utf-8"))
    assert data["commands"]["demo"]["wall_s"] == 3000.0  # re-measuring one command loses no other
    new = data["commands"]["taggers"]
    assert new["wall_s"] > 0 and new["cpu_s"] > 0 and new["cores"] >= 1
    assert {"load_before", "load_after", "nice", "machine", "figure"} <= set(new)
    assert "CPU" in new["figure"] and "load" in new["figure"]
    md = (tmp_path / "commands.md").read_text(encoding="utf-8")
    assert "`ensemble-deid demo`" in md and "`ensemble-deid taggers`" in md


def test_cv_runs_records_cpu_time_load_and_the_parts_in_the_cache(tiny_registered, workspace, tmp_path, scripts,
                                                                  monkeypatch):
    """benchmarks/members/cv_runs.py: each tagger one niced ``cv`` child, its CPU time and load appended per
    invocation; ``status`` trains nothing and reads the parts back (a rerun computes nothing new)."""
    if "rules" not in set(entry_points()):
        pytest.skip("rules adapter not registered")
    cv_runs = scripts("members.cv_runs")
    monkeypatch.setattr(cv_runs, "RESULTS", tmp_path)
    args = ["--label", "smoke", "--workspace", str(workspace), "--corpus", tiny_registered, "--taggers", "rules",
            "--folds", "3"]
    assert cv_runs.main(["run", *args]) == 0
    assert cv_runs.main(["run", *args, "--jobs", "2"]) == 0  # resumed: every part read from the cache
    run = json.loads((tmp_path / "cv-runs-smoke.json").read_text())
    first, second = run["invocations"]
    assert (first["jobs"], second["jobs"]) == (1, 2)
    assert first["exit_status"] == second["exit_status"] == 0 and first["cpu_s"] > 0
    assert {"wall_s", "load_before", "load_after", "nice", "started"} <= set(first)
    assert run["taggers"]["rules"]["parts_done"] == run["taggers"]["rules"]["parts"] == 2
    assert run["taggers"]["rules"]["oof_documents"] == 30
    assert cv_runs.main(["status", *args]) == 0
    assert len(json.loads((tmp_path / "cv-runs-smoke.json").read_text())["invocations"]) == 2
    assert "| rules | 2/2 |" in (tmp_path / "cv-runs-smoke.md").read_text()
    assert sum(run["taggers"]["rules"]["where"].values()) == 2  # both parts, by the machine that made them
    # an invocation for other taggers of the same label (e.g. run in parallel) keeps the rows it does not name
    assert cv_runs.main(["status", *args[:-3], "svm", "--folds", "3"]) == 0
    table = (tmp_path / "cv-runs-smoke.md").read_text()
    assert "| rules | 2/2 |" in table and "| svm | 0/4 |" in table
    # a corpus the workspace does not know: one message before any cv child runs, nothing written
    assert cv_runs.main(["run", "--label", "nope", "--workspace", str(workspace), "--corpus", "nope",
                         "--taggers", "rules"]) == 2
    assert not (tmp_path / "cv-runs-nope.json").exists()


def test_bench_stream_resumes_a_stopped_run_instead_of_starting_over(tmp_path, scripts, monkeypatch):
    """A stream stopped after a few batches and started again with the same
    --workdir tags only the notes it had not finished: the second process
    starts where the first stopped, and the tokens counted over both equal an
    uninterrupted run's."""
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.registry import make_tagger

    Deidentifier({"rules": make_tagger("rules").fit([])}).save(tmp_path / "model", {"labels": ["DATE:DATE"]})
    bench = scripts("deidentify.bench_stream")
    args = ["--model", str(tmp_path / "model"), "--notes", "40", "--window", "8", "--pool", "5", "--batch-size", "4"]
    whole = bench.main(args + ["--workdir", str(tmp_path / "whole"), "--out", str(tmp_path / "whole.json")])

    spans, calls = Deidentifier.spans, []

    def stopping(self, docs):
        calls.append(len(docs))
        if len(calls) > 3:
            raise KeyboardInterrupt  # the run is stopped during its fourth batch
        return spans(self, docs)

    work = tmp_path / "work"
    monkeypatch.setattr(Deidentifier, "spans", stopping)
    with pytest.raises(KeyboardInterrupt):
        bench.main(args + ["--workdir", str(work), "--out", str(tmp_path / "stopped.json")])
    finished = len(list((work / "out" / "text").iterdir()))
    assert 0 < finished < 40
    monkeypatch.setattr(Deidentifier, "spans", spans)
    resumed = bench.main(args + ["--workdir", str(work), "--out", str(tmp_path / "resumed.json")])

    samples = [json.loads(line) for line in next(work.glob("samples-*.jsonl")).read_text().splitlines()]
    second = [s for s in samples if s["segment"] != samples[0]["segment"]]
    assert second[0]["done"] == finished and second[0]["tokens"] == 0  # the resume skipped the finished notes
    assert resumed["segments"] == 2 and resumed["notes_done"] == 40 and resumed["complete"]
    assert resumed["tokens"] == whole["tokens"] > 0 and resumed["tagging_cpu_s"] is not None
    assert not (work / "notes").exists() and not (work / "out").exists()  # a complete run clears its notes
    assert json.loads((tmp_path / "resumed.json").read_text())["windows_in_one_process"] is False


def test_cv_runs_uses_this_tree_even_when_the_workspace_is_another_checkout(tiny_registered, workspace, tmp_path,
                                                                           scripts, monkeypatch):
    """The ``cv`` child runs in the workspace; a workspace that is another checkout (its own
    ``ensemble_deid/`` at its root) once shadowed this tree's code and ran the other checkout's."""
    if "rules" not in set(entry_points()):
        pytest.skip("rules adapter not registered")
    other = workspace / "ensemble_deid"
    other.mkdir()
    (other / "__init__.py").write_text("raise ImportError('the workspace checkout was imported')\n")
    cv_runs = scripts("members.cv_runs")
    monkeypatch.setattr(cv_runs, "RESULTS", tmp_path)
    assert cv_runs.main(["run", "--label", "other", "--workspace", str(workspace), "--corpus", tiny_registered,
                         "--taggers", "rules", "--folds", "3"]) == 0
    run = json.loads((tmp_path / "cv-runs-other.json").read_text())
    assert [i["exit_status"] for i in run["invocations"]] == [0]
    assert run["taggers"]["rules"]["parts_done"] == 2


def test_new_members_says_which_add_deciding_on_train_only(scripts):
    """benchmarks/members/new_members.py: a member adds (and is published) when its voting ΔF1 on the training
    out-of-fold predictions is positive and CV-chosen pruned voting keeps it; dev figures never decide."""
    new_members = scripts("members.new_members")

    def member(name, folds, delta_train, delta_dev):
        return {"member": name, "folds_done": folds, "dev_done": folds == 10, "cv_f1": 0.9,
                "train_oof": {"delta_f1": delta_train} if folds == 10 else {},
                "dev": {"delta_f1": delta_dev, "unique_true": 1, "double_fault_mean": 0.04,
                        "double_fault_max": 0.06} if folds == 10 else {}}

    result = {"members": {"a": member("a", 10, 0.0003, -0.001), "b": member("b", 10, 0.0001, 0.002),
                          "c": member("c", 10, -0.0002, 0.001), "d": member("d", 4, None, None)},
              "reference": {"crf_cv_f1": 0.96, "crf_dev_f1": 0.96, "published_pairs_double_fault_dev_min": 0.03,
                            "published_pairs_double_fault_dev_mean": 0.04},
              "pruned_voting": [{"members": "12 published", "threshold": 3, "kept": ["b", "crf"], "cv_f1": 0.96,
                                 "dev_f1": 0.96},
                                {"members": "12 + a, b, c", "threshold": 3, "kept": ["a", "c"], "cv_f1": 0.97,
                                 "dev_f1": 0.97}],
              "citation": "MEDDOCAN"}
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[-1].strip(" |")
            for line in new_members.tables(result)[0].splitlines() if line.startswith("| ") and "---" not in line}
    assert rows["a"] == "yes: publish"  # a dev loss does not count against it
    assert rows["b"] == "no (pruned voting by CV drops it): leave out"  # kept among the 12 only: not the choice
    assert rows["c"] == "no (ΔF1 train OOF <= 0): leave out"
    assert rows["d"] == "undecided: CV 4/10"
    # Kept, but the enlarged set scores no higher by CV than the 12 alone: CV chooses the 12.
    result["pruned_voting"][1]["cv_f1"] = 0.96
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[-1].strip(" |")
            for line in new_members.tables(result)[0].splitlines() if line.startswith("| ") and "---" not in line}
    assert rows["a"] == "no (the 12 alone score as high by CV): leave out"


def test_neural_cv_keeps_the_setting_with_the_higher_cv_f1_and_never_an_unfinished_one(scripts):
    """benchmarks/members/neural_cv.py (issue 29): a neural member keeps, among its settings whose 10 folds and dev
    part are complete, the one with the higher CV F1, even when its dev F1 is lower; a setting whose CV or dev
    part is unfinished is never kept; the (member set, method) with the best CV F1 is the choice, not the best
    dev F1."""
    neural_cv = scripts("members.neural_cv")

    def setting(label, folds, dev_done, cv, dev):
        return {"setting": label, "source": "test", "folds_done": folds, "dev_done": dev_done, "cv_f1": cv,
                "cv_documents": folds * 50, "dev_f1": dev, "fit_seconds": 1.0, "where": {"vm, torch 2": folds},
                "parts": [{"part": f"fold-{f:02d}", "chosen_epoch": 5, "epochs_run": 13, "stopped_early": True,
                           "fit_seconds": 0.1} for f in range(folds)]}

    members = {
        # early stopping: higher CV F1, lower dev F1 -> kept
        "x": neural_cv.decide([setting("x:fixed", 10, True, 0.950, 0.970), setting("x:es", 10, True, 0.961, 0.940)]),
        # the higher CV F1 of an unfinished CV (9/10) does not count
        "y": neural_cv.decide([setting("y:fixed", 10, True, 0.950, 0.960), setting("y:es", 9, True, 0.990, 0.990)]),
        # all folds but no dev part: not complete either
        "z": neural_cv.decide([setting("z:fixed", 10, True, 0.940, 0.950), setting("z:es", 10, False, 0.990, None)]),
        # nothing complete: nothing kept
        "w": neural_cv.decide([setting("w:es", 3, False, 0.990, None)]),
    }
    assert [m["kept"] for m in members.values()] == ["x:es", "y:fixed", "z:fixed", None]
    def ensemble(label, method, cv, dev, kept=None):
        return {"members": label, "method": method, "candidates": 12, "params": {} if kept else {"C": 0.1},
                "threshold": 3 if kept else None, "kept": kept, "trust": None, "cv_f1": cv, "dev_f1": dev}

    ensembles = [ensemble("(a)", "voting-pruned", 0.9670, 0.9730, ["x:fixed"]), ensemble("(a)", "stacked-svm", 0.9660, 0.9750),
                 ensemble("(b)", "voting-pruned", 0.9650, 0.9690, ["x:es"]), ensemble("(b)", "stacked-svm", 0.9680, 0.9600)]
    result = {"members": members, "crf_cv_f1": 0.955, "ensembles": ensembles, "cache": "WS", "citation": "MEDDOCAN"}
    settings_md, voting_md = neural_cv.tables(result)
    verdicts = {line.split(" | ")[1]: line.split(" | ")[-1].strip(" |")
                for line in settings_md.splitlines() if line.startswith("| ") and "---" not in line}
    assert verdicts["x:es"] == "kept" and verdicts["x:fixed"] == "not kept"
    assert verdicts["y:fixed"] == "kept" and verdicts["y:es"].startswith("not eligible: CV 9/10")
    assert verdicts["z:es"] == "not eligible: CV 10/10, dev not done"
    assert "x: x:es 0.9610 >= crf" in settings_md and "z: z:fixed 0.9400 < crf" in settings_md
    assert "w: no setting complete" in settings_md
    chosen = [line.split(" | ")[:2] for line in voting_md.splitlines() if line.endswith("| chosen |")]
    assert chosen == [["| (b) (12)", "stacked-svm"]]  # the best CV F1, though it scores lowest on dev
    assert "| (a) (12) | voting-pruned | t = 3, 1 of 12 kept | 0.9670 | 0.9730 |  |" in voting_md


def test_read_member_counts_a_corrupt_or_missing_part_as_not_done_and_writes_nothing(tmp_path, scripts):
    """benchmarks/common.read_member (neural_cv.py, new_members.py): parts read as the cache reads them; a
    part whose predictions are damaged or whose record is missing is left out and its fold not done, and
    the workspace the lead's run fills is only read (no entry written, no damaged part discarded)."""
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
    from ensemble_deid.taggers.prediction import DocumentPrediction

    from .tiny_corpus import tiny_corpus

    read_member = scripts("common").read_member
    docs = tiny_corpus(24)
    engine = CrossValidation(docs[:18], {"test": docs[18:]}, PredictionCache(tmp_path / "ws", published=[]), k=3)
    spec = TaggerSpec.parse("crf:max_iterations=5")
    assert read_member(engine, spec) == ({}, None, [], [])
    assert not (tmp_path / "ws").exists()  # reading a missing member created nothing
    engine.cache.ensure_entry(engine.entry_key(spec)[0], {"tagger_label": spec.label})
    by_fold = {f: [d for d in docs[:18] if engine.folds.folds[d.id] == f] for f in range(3)}
    for task in engine.parts(spec):
        part_docs = by_fold[task.fold] if task.fold is not None else docs[18:]
        preds = [DocumentPrediction.from_spans(d, d.annotations) for d in part_docs]
        engine.cache.write_part(task.part, preds, part_docs, {"fit_seconds": 2.0, "fold": task.fold})
    fold0, _, _, dev = engine.parts(spec)
    npz = tmp_path / "ws" / fold0.part.relpath.with_suffix(".npz")
    npz.write_bytes(npz.read_bytes()[:-20])  # damaged predictions
    (tmp_path / "ws" / dev.part.relpath.with_suffix(".json")).unlink()  # no record: not done
    before = sorted(p.name for p in (tmp_path / "ws").rglob("*"))
    oof, dev_preds, folds, records = read_member(engine, spec)
    assert folds == [1, 2] and dev_preds is None and len(records) == 2
    assert set(oof) == {d.id for d in by_fold[1] + by_fold[2]}
    assert sorted(p.name for p in (tmp_path / "ws").rglob("*")) == before


def test_neural_cv_votes_over_the_kept_settings_and_the_complete_early_stopping_ones(scripts):
    """benchmarks/members/neural_cv.py: (b) swaps a neural member for its CV-kept setting, (c) adds every complete
    early-stopping setting, (d) those and every complete extra member; an unfinished one is in none, and with
    nothing complete only (a) is voted."""
    neural_cv = scripts("members.neural_cv")

    def row(label, source, folds, cv):
        return {"setting": label, "source": source, "folds_done": folds, "dev_done": True, "cv_f1": cv}

    published = {"crf": "crf run", "x:fixed": "x fixed run", "y:fixed": "y fixed run", "z:fixed": "z fixed run"}
    members = {"x": neural_cv.decide([row("x:fixed", "published", 10, 0.95), row("x:es", "workspace", 10, 0.96)]),
               "y": neural_cv.decide([row("y:fixed", "published", 10, 0.95), row("y:es", "workspace", 10, 0.94)]),
               "z": neural_cv.decide([row("z:fixed", "published", 10, 0.95), row("z:es", "workspace", 4, 0.99)])}
    runs = {"x:fixed": "x fixed run", "x:es": "x es run", "y:fixed": "y fixed run", "y:es": "y es run",
            "z:fixed": "z fixed run"}
    (a, a_runs), (b, b_runs), (c, c_runs) = neural_cv.candidate_sets(published, members, runs)
    assert a_runs == published
    assert b_runs == {"crf": "crf run", "x:es": "x es run", "y:fixed": "y fixed run", "z:fixed": "z fixed run"}
    assert c == "(c) 12 + x:es, y:es" and c_runs == {**published, "x:es": "x es run", "y:es": "y es run"}
    *_, (d, d_runs) = neural_cv.candidate_sets(published, members, runs, {"char-cnn": "char-cnn run"})
    assert d == "(d) 12 + x:es, y:es, char-cnn"
    assert d_runs == {**c_runs, "char-cnn": "char-cnn run"}  # every complete extra member, the (c) ones too
    nothing = {n: neural_cv.decide([row(f"{n}:fixed", "published", 10, 0.95), row(f"{n}:es", "workspace", 3, 0.99)])
               for n in "xyz"}
    assert [label for label, _ in neural_cv.candidate_sets(published, nothing, {})] == ["(a) 12 published"]


def test_methods_by_cv_choose_the_member_set_and_method_by_cv_never_by_dev(scripts):
    """benchmarks/common.methods_by_cv and best_by_cv (neural_cv.py, issue 29), on a hand-made case: in set
    "A" two members find every gold span of the training notes (out-of-fold) and a third only spans no gold
    span covers, so each method's own out-of-fold F1 is 1 (keep what two members agree on); on dev A's
    two good members find nothing, so no candidate is gold and every A row's dev F1 is 0. In set "B" the two
    good members find only the DATE spans on train (recall 1/8 of the gold: CV F1 at most 2/9) and every
    gold span on dev. The choice is an A row, by its CV F1, although B scores higher on dev."""
    from ensemble_deid.corpus.document import Annotation
    from ensemble_deid.corpus.folds import assign_folds
    from ensemble_deid.taggers.prediction import DocumentPrediction

    from .tiny_corpus import tiny_corpus

    common = scripts("common")
    docs = tiny_corpus(30)
    train, dev = docs[:24], docs[24:]
    folds = assign_folds(train, 3, 0)

    def preds(documents, spans_of):
        return {d.id: DocumentPrediction.from_spans(d, spans_of(d)) for d in documents}

    gold = lambda d: d.annotations  # noqa: E731
    dates = lambda d: [a for a in d.annotations if a.category == "DATE"]  # noqa: E731
    nothing = lambda d: []  # noqa: E731
    wrong = lambda d: [Annotation(0, 6, "NAME", "PATIENT")]  # noqa: E731 - "Record": never gold
    assert all(len(d.annotations) == 8 and not any(a.start < 6 for a in d.annotations) for d in docs)

    def run(train_spans, dev_spans):
        return SimpleNamespace(oof=preds(train, train_spans), test=preds(dev, dev_spans))

    noise = run(wrong, wrong)
    sets = [("A", {"m1": run(gold, nothing), "m2": run(gold, nothing), "n": noise}),
            ("B", {"m1": run(dates, gold), "m2": run(dates, gold), "n": noise})]
    rows = common.methods_by_cv(train, dev, folds, sets)
    assert [(r["members"], r["method"]) for r in rows] == [(s, m) for s in "AB" for m in common.CV_METHODS]
    a_rows, b_rows = rows[:3], rows[3:]
    assert [r["cv_f1"] for r in a_rows] == [1.0, 1.0, 1.0]
    assert [r["dev_f1"] for r in a_rows] == [0.0, 0.0, 0.0]
    assert all(r["cv_f1"] <= round(2 / 9, 4) for r in b_rows)
    assert max(r["dev_f1"] for r in b_rows) == 1.0  # a choice by dev would take a B row
    chosen = common.best_by_cv(rows)
    assert chosen is a_rows[0]  # the first of the tied best CV F1, whatever dev says
    assert common.best_by_cv(list(reversed(rows))) is a_rows[-1]
    # A method given with its own parameters and grid (stacking_variants.py): shown by its name, the grid searched.
    tried = common.methods_by_cv(train, dev, folds, sets[:1], methods=[
        ("svm, confidences searched", "stacked-svm", {"C": 1.0}, {"confidences": [False, True]})])
    assert [r["method"] for r in tried] == ["svm, confidences searched"]
    assert set(tried[0]["params"]) == {"confidences"} and tried[0]["cv_f1"] == 1.0


def test_stacking_variants_experimental_stackers_fit_and_separate_a_hand_made_case(scripts, monkeypatch):
    """benchmarks/ensembles/stacking_variants.py's two experimental stackers, registered by the script: on the
    case above (two members agree on every gold span, a third finds only a span no gold covers) each
    keeps exactly the gold spans of notes it was not fitted on."""
    from ensemble_deid.corpus.document import Annotation
    from ensemble_deid.ensemble import registry
    from ensemble_deid.taggers.prediction import DocumentPrediction

    from .tiny_corpus import tiny_corpus

    for name, cls in scripts("ensembles.stacking_variants").learners().items():
        monkeypatch.setitem(registry.METHODS, name, cls)  # registered for this test only
    docs = tiny_corpus(30)
    train, test = docs[:24], docs[24:]
    wrong = [Annotation(0, 6, "NAME", "PATIENT")]

    def member(documents, good):
        return {d.id: DocumentPrediction.from_spans(d, list(d.annotations) if good else wrong) for d in documents}

    for name in ("stacked-svm-member-label", "stacked-trees"):
        learner = registry.make_method(name).fit({"m1": member(train, True), "m2": member(train, True),
                                         "n": member(train, False)}, train)
        got = {p.doc_id: p for p in learner.predict({"m1": member(test, True), "m2": member(test, True),
                                                     "n": member(test, False)}, test)}
        for d in test:
            assert sorted(got[d.id].spans(d)) == sorted(d.annotations), name


from .test_deid_cli import tiny_bundle  # noqa: E402,F401 - the fixture: one bundle-fitting recipe


def test_member_costs_times_each_member_alone(tiny_bundle, scripts, monkeypatch, tmp_path):
    """benchmarks/members/member_costs.py: a cost for every member of the bundle, and
    each linear member pays for its own features (the bundle's shared feature
    caches are emptied before each), where a bundle run computes them once."""
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.features import FeatureExtractor

    member_costs = scripts("members.member_costs")
    out = tmp_path / "costs.json"
    member_costs.main(["--model", str(tiny_bundle / "model"), "--notes", str(tiny_bundle / "test"),
                       "--rounds", "1", "--out", str(out)])
    costs = json.loads(out.read_text())
    assert set(costs) == {"rules", "crf:max_iterations=10", "svm"}
    assert all(isinstance(c, float) and c >= 0 for c in costs.values())
    docs = load_directory(tiny_bundle / "test")
    detail = json.loads(out.with_name("costs-detail.json").read_text())
    assert detail["documents"] == len(docs) and detail["tokens"] == sum(len(d.tokens) for d in docs)
    assert "| svm |" in out.with_suffix(".md").read_text()

    model = Deidentifier.load(tiny_bundle / "model")
    calls = []
    original = FeatureExtractor.document_features
    monkeypatch.setattr(FeatureExtractor, "document_features",
                        lambda self, doc, *a, **k: calls.append(doc.id) or original(self, doc, *a, **k))
    model.predict(docs)
    assert len(calls) == len(docs)  # a bundle run: once per note for its two linear members
    calls.clear()
    member_costs.time_members(model, docs, rounds=2)
    assert len(calls) == 2 * 2 * len(docs)  # alone: crf and svm each extract every note's, each round


def test_deidentify_profile_sums_the_kernels_and_leaves_short_calls_out(scripts):
    """benchmarks/deidentify/deidentify_profile.py's buckets on a hand-made profile: a
    function's own time goes to the first kernel it matches, a compiled call
    shorter than 0.1 ms on average to the short-calls row, the rest to Python;
    the floor is kernels / cores and the ceiling tokens * cores / kernels."""
    profile = scripts("deidentify.deidentify_profile")
    stats = SimpleNamespace(stats={
        ("~", 0, "<built-in method torch.lstm>"): (10, 10, 4.0, 4.0, {}),
        ("~", 0, "<built-in method torch._C._nn.linear>"): (100, 100, 0.5, 0.5, {}),
        ("~", 0, "<method 'add' of 'torch._C.TensorBase' objects>"): (100_000, 100_000, 2.0, 2.0, {}),  # 20 µs each
        ("/x/adapters/crf.py", 200, "_tag"): (2, 2, 1.5, 3.0, {}),
        ("/x/vowpalwabbit/pyvw.py", 730, "predict"): (100, 100, 1.0, 1.0, {}),
        ("/x/vowpalwabbit/pyvw.py", 1623, "__init__"): (100_000, 100_000, 0.7, 0.9, {}),  # pyvw's Python
        ("/x/ensemble_deid/taggers/features.py", 487, "_document_features"): (100, 100, 3.0, 5.0, {}),
    })
    buckets = profile.bucket_times(stats)
    assert buckets == {"torch LSTM (torch.lstm)": 4.0, "torch, other C operations": 0.5,
                       "CRFsuite tagging (in crf._tag)": 1.5, "Vowpal Wabbit C++ (pylibvw)": 1.0,
                       "numpy / scipy / LIBLINEAR C": 0.0, profile.SHORT: 2.0, profile.PYTHON: 3.7}
    r = profile.summarise(SimpleNamespace(stats={**stats.stats,
                                                 ("/x/ensemble_deid/deid/model.py", 175, "load"): (1, 1, 0.0, 2.5, {}),
                                                 ("/x/ensemble_deid/deid/batch.py", 235, "run"): (1, 1, 0.0, 9.0, {})}),
                          tokens=70_000, cores=2, target=20_000)
    assert r["kernels_s"] == 7.0 and r["floor_tagging_wall_s"] == 3.5 and r["ceiling_tokens_per_s"] == 20_000
    assert r["load_s"] == 2.5 and r["tagging_and_writing_s"] == 9.0 and r["target_wall_s"] == 3.5
    assert r["target_left_s"] == 0.0  # 3.5 s on 2 cores, all taken by the 7 kernel seconds


def test_deidentify_profile_of_a_bundle_counts_crfsuite_and_writes_no_text(tiny_bundle, scripts, tmp_path):
    """The script on a real bundle (rules, CRF, SVM): CRFsuite's tagging is a
    kernel, torch's rows are empty (no neural member), and neither results
    file holds a word of the notes' PHI."""
    from ensemble_deid.corpus.formats import load_directory

    out = tmp_path / "profile.json"
    scripts("deidentify.deidentify_profile").main(["--model", str(tiny_bundle / "model"), "--notes", str(tiny_bundle / "test"),
                                        "--rounds", "2", "--out", str(out)])
    r = json.loads(out.read_text())
    docs = load_directory(tiny_bundle / "test")
    assert r["documents"] == len(docs) and r["tokens"] == sum(len(d.tokens) for d in docs)
    assert r["rounds"] == 2 and r["kernels_s"] == min(r["kernels_s_per_round"])
    assert r["buckets_s"]["CRFsuite tagging (in crf._tag)"] > 0
    assert r["buckets_s"]["torch LSTM (torch.lstm)"] == 0
    assert 0 < r["load_s"] and 0 < r["tagging_and_writing_s"] <= r["profiled_total_s"]
    written = out.read_text() + out.with_suffix(".md").read_text()
    phi = {doc.text[a.start:a.end] for doc in docs for a in doc.annotations if a.end - a.start >= 4}
    assert phi and not [p for p in phi if p in written]


def test_local_test_parts_keeps_the_model_fit_then_reuses(tiny_registered, workspace, tmp_path, scripts):
    """benchmarks/members/local_test_parts.py: a member's test part made in the workspace
    with its model kept (an external system skipped), left alone by a rerun, and
    ``fit`` reuses the kept model instead of training the member again."""
    from click.testing import CliRunner

    from ensemble_deid.cli import main as cli

    local = scripts("members.local_test_parts")
    specs = "crf:max_iterations=5,rules"
    assert local.main(["--corpus", tiny_registered, "--taggers", specs, "--folds", "3"]) == [
        {"tagger": "crf:max_iterations=5", "status": "computed"}]
    assert local.main(["--corpus", tiny_registered, "--taggers", specs, "--folds", "3"]) == [
        {"tagger": "crf:max_iterations=5", "status": "in the workspace"}]
    result = CliRunner().invoke(cli, ["fit", "--corpus", tiny_registered, "--method", "voting", "--members", specs,
                                      "--folds", "3", "--out", str(tmp_path / "model"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "member crf:max_iterations=5: reused the model cv kept" in result.output
    assert "identical to the cached 'ensemble' predictions on 10/10" in result.output


def test_bundle_format1_makes_the_same_model_in_the_older_checkpoint_format(tmp_path, scripts):
    """benchmarks/deidentify/bundle_format1.py: the copy's BiLSTM checkpoint is format 1
    (vocabularies as lists, no parameter added later), its checksums verify,
    and it tags exactly as the original; a member whose later parameter is
    set is refused (the older code has no such model)."""
    torch = pytest.importorskip("torch")
    from ensemble_deid.corpus.document import Document
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.ensemble import make_method
    from ensemble_deid.taggers.registry import make_tagger

    from .tiny_corpus import tiny_corpus

    docs = tiny_corpus(10, seed=3)
    small = dict(epochs=1, batch_size=4, char_dim=6, char_lstm_dim=6, word_dim=8, word_lstm_dim=8,
                 validation_fraction=0.0, max_length=0)
    convert = scripts("deidentify.bundle_format1")
    for name, extra in (("model", {}), ("later", {"linear_buckets": 64})):
        members = {"lstm-l": make_tagger("lstm-l", **small, **extra).fit(docs),
                   "crf": make_tagger("crf", max_iterations=5).fit(docs)}
        preds = {label: {p.doc_id: p for p in t.predict(docs)} for label, t in members.items()}
        method = make_method("voting", threshold=1).fit(preds, docs)
        Deidentifier(members, method).save(tmp_path / name, {"labels": sorted({a.label for d in docs for a in d.annotations})})
    out = convert.main([str(tmp_path / "model"), str(tmp_path / "old")])
    member = next(p for p in (out / "members").iterdir() if p.is_file())
    ckpt = torch.load(member, weights_only=True)
    assert ckpt["format"] == "ensemble-deid/neural-checkpoint/1" and isinstance(ckpt["words"]["itos"], list)
    assert not {"linear_buckets", "linear_decay", "bio_decode"} & set(ckpt["params"])
    note = [Document("n", "Seen by Dr. Smith on 3/4/2012 at Springfield General.")]
    assert Deidentifier.load(out).spans(note) == Deidentifier.load(tmp_path / "model").spans(note)
    with pytest.raises(SystemExit, match="added later is set"):
        convert.main([str(tmp_path / "later"), str(tmp_path / "later-old")])
    assert not (tmp_path / "later-old").exists()


def test_shift_study_reports_each_drop_and_whether_an_ensemble_degrades_less(scripts, tmp_path):
    """unlabelled_site.shift_study (issue 50) on a hand-made case of 24 notes: member "fragile" finds every
    gold span of the original notes and none of the shifted copy (F1 1 -> 0, every PHI token leaks); the
    ensemble and member "steady" find every span on both (drop 0), so the ensemble degrades less than
    "fragile" on every document (significant) and exactly as much as "steady" (p = 1)."""
    from ensemble_deid.taggers.prediction import DocumentPrediction

    from .tiny_corpus import tiny_corpus

    site = scripts("ensembles.unlabelled_site")
    docs = tiny_corpus(24)
    gold = {d.id: DocumentPrediction.from_spans(d, d.annotations) for d in docs}
    empty = {d.id: DocumentPrediction.empty(d) for d in docs}
    systems = {"fragile": ("member", gold, empty), "steady": ("member", gold, gold), "vote": ("ensemble", gold, gold)}
    study = site.shift_study(docs, list(reversed(docs)), systems, ["fragile", "steady"], trials=500)
    rows = {r["system"]: r for r in study["rows"]}
    assert (rows["fragile"]["f1_original"], rows["fragile"]["f1_shifted"], rows["fragile"]["f1_drop"]) == (1.0, 0.0, 1.0)
    assert (rows["fragile"]["leak_original"], rows["fragile"]["leak_rise"]) == (0.0, 1.0)
    assert rows["vote"]["f1_drop"] == 0.0 and rows["steady"]["leak_rise"] == 0.0
    tests = {t["member"]: t for t in study["tests"]}
    assert set(t["ensemble"] for t in study["tests"]) == {"vote"}
    assert tests["fragile"]["drop_difference"] == -1.0 and tests["fragile"]["p_holm"] < 0.01
    assert tests["steady"]["drop_difference"] == 0.0 and tests["steady"]["p_value"] == 1.0
    table = "\n".join(site.shift_markdown({"source": "a", "target": "a-shifted", "shift": study}))
    assert "| vote | -1.0000* | +0.0000 | 1 / 0 of 2 |" in table
    png = site.degradation(study["rows"], tmp_path / "img" / "shift.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_token_spans_repair_bio_as_decode_does(scripts):
    """unlabelled_site._token_spans (skweak's input): an I- after O or after another label opens a span."""
    site = scripts("ensembles.unlabelled_site")
    tags = ["B-NAME", "I-NAME", "O", "I-DATE", "I-DATE", "B-DATE", "I-ID", "O", "B-AGE"]
    assert site._token_spans(tags) == [("NAME", 0, 2), ("DATE", 3, 5), ("DATE", 5, 6), ("ID", 6, 7), ("AGE", 8, 9)]
