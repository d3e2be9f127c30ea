"""Cross-corpus work from the command line: ``cv --target`` (cached as a
study caches it), ``study --methods ""`` (a study without ensembles), and
``corpus add`` of an embedded corpus name."""
from __future__ import annotations

import re

from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.workspace import Workspace
from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
from ensemble_deid.studies.crosscorpus import category_scores, cross_corpus_target

from .tables import terminal_row
from .test_study import two_corpora  # noqa: F401 (fixture)


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))




def test_cv_target_scores_another_corpus_and_caches_it_as_a_study_does(two_corpora):  # noqa: F811
    ws = two_corpora
    res = _run("cv", "--corpus", "tinyA", "--taggers", "memorize,rules", "--folds", "3", "--target", "tinyB",
               "--no-progress")
    assert res.exit_code == 0, res.output
    assert all(re.fullmatch(r"\d\.\d{4}", c) for c in terminal_row(res.output, "memorize")[1:5])
    # the target's strict P, R and F1 in a table of their own (beside the rest: 12 columns)
    on_b = res.output.split("tinyB.test: strict micro scores", 1)[1]
    assert all(re.fullmatch(r"\d\.\d{4}", c) for c in terminal_row(on_b, "memorize")[1:4])
    tables = res.output[res.output.index("tagger "):]  # below the line naming the cache folder
    assert max(len(line) for line in tables.splitlines()) <= 80, res.output
    # The per-category table: the target's gold spans per category, and each tagger's F1.
    tiny_b = ws.load("tinyB")
    assert "tinyB.test: strict F1 by category of the models trained on 'tinyA'" in res.output
    gold_dates = sum(a.category == "DATE" for d in tiny_b.test for a in d.annotations)
    assert terminal_row(res.output, "DATE")[1] == f"{gold_dates:,}"

    # The same figures as scoring the cached parts directly ...
    cache = PredictionCache(ws.cache_dir)
    tiny_a = ws.load("tinyA")
    engine = CrossValidation(tiny_a.train, {"test": tiny_a.test, cross_corpus_target("tinyB"): tiny_b.test}, cache, k=3)
    runs = engine.collect([TaggerSpec.parse("memorize"), TaggerSpec.parse("rules")])
    scores = category_scores(tiny_b.test, runs["memorize"].targets[cross_corpus_target("tinyB")])
    assert terminal_row(res.output, "DATE")[2] == f"{scores['DATE'][1]:.4f}"
    # ... and a study's engine (which also predicts tinyB's training set) finds
    # them cached: only the parts on tinyB.train are left to compute.
    study_engine = CrossValidation(tiny_a.train, {cross_corpus_target("tinyA"): tiny_a.test, cross_corpus_target("tinyB"): tiny_b.test,
                                                  "tinyB.train": tiny_b.train}, cache, k=3)
    pending = study_engine.pending([TaggerSpec.parse("memorize"), TaggerSpec.parse("rules")])
    assert {t.target for t in pending} == {"tinyB.train"}


def test_cv_target_errors_come_before_any_work(two_corpora):  # noqa: F811
    for args, message in ((["--target", "tinyA"], "'tinyA' is the training corpus"),
                          (["--target", "tinyB", "--target", "tinyB"], "'tinyB' is named twice"),
                          (["--target", "nowhere"], "no corpus named 'nowhere'")):
        res = _run("cv", "--corpus", "tinyA", "--taggers", "memorize", "--folds", "3", "--no-progress", *args)
        assert res.exit_code != 0 and message in res.output, res.output
        assert "Traceback" not in res.output
    assert list(PredictionCache(two_corpora.cache_dir).entries()) == []


def test_study_with_empty_methods_runs_no_ensemble(two_corpora):  # noqa: F811
    res = _run("study", "--corpus", "tinyA", "--taggers", "memorize,rules", "--methods", "", "--folds", "3",
               "--trials", "200", "--no-progress")
    assert res.exit_code == 0, res.output
    ensemble_rows = {line.split("|")[1].strip() for line in res.output.split("Ensembles", 1)[1].splitlines()
                     if line.startswith("| ") and "---" not in line}
    assert not ensemble_rows & {"voting", "voting-pruned", "decision-templates", "stacked-svm", "stacked-searn",
                                "stacked-lstm"}
    assert "  voting on" not in res.output  # no method was fitted
    bad = _run("study", "--corpus", "tinyA", "--taggers", "memorize", "--methods", "voting,,stacked-svm")
    assert bad.exit_code == 2 and "an empty method name" in bad.output


def test_corpus_add_of_an_embedded_name_says_it_needs_no_registration(workspace, tmp_path):
    for split in ("train", "test"):
        (tmp_path / split).mkdir()
    for name in ("synthetic-2014", "synthetic-2016"):
        res = _run("corpus", "add", name, "--train", tmp_path / "train", "--test", tmp_path / "test")
        assert res.exit_code == 2
        assert f"{name!r} is an embedded corpus: it needs no registration" in res.output
    assert Workspace(workspace).corpus_specs() == {}
