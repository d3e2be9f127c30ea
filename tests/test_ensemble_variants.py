"""The [KIM20] authors' variants (decision templates, removal ties, chain
overlaps) selected from ``ensemble``, ``prune`` and a study config, and
recorded in the cache entry and the study manifest."""
from __future__ import annotations

import json
import re

from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.studies.study import Study, StudyConfig

from .test_ensemble_cli import MEMBERS, _run, tiny  # noqa: F401 (fixture)
from .test_study import two_corpora  # noqa: F401 (fixture)


def _manifests(workspace, tagger):
    cache = PredictionCache(workspace / "cached_predictions")
    return [m for _, m in cache.entries() if m.get("tagger") == tagger]


def test_ensemble_param_selects_the_authors_templates_and_is_recorded(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "decision-templates", "--members", MEMBERS,
               "--folds", "3", "--param", "variant=authors", "--param", "overlap=chain", "--no-progress",
               "--no-diagnostics").output
    # The similarity threshold is chosen by CV over the variant's default grid.
    assert re.search(r"chosen parameters: \{'min_similarity': 0\.\d+\}", out)
    assert re.search(r"^min_similarity=0\.55 ", out, re.M)  # the CV table of every setting
    _run("ensemble", "--corpus", "tiny", "--method", "decision-templates", "--members", MEMBERS, "--folds", "3",
         "--no-progress", "--no-diagnostics")
    manifests = _manifests(tiny, "ensemble.decision-templates")
    assert len(manifests) == 2  # the variant is another cache entry
    variants = sorted((m["params"]["variant"], m["params"]["overlap"]) for m in manifests)
    assert variants == [("authors", "chain"), ("paper", "greedy")]
    bad = _run("ensemble", "--corpus", "tiny", "--method", "decision-templates", "--members", MEMBERS,
               "--folds", "3", "--param", "variant=dtm", "--no-progress", ok=False)
    assert bad.exit_code == 2 and "variant='dtm'" in bad.output
    assert "fitting" not in bad.output  # refused before any work


def test_ensemble_voting_pruned_variants(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--param", "removal_ties=earliest", "--param", "overlap=chain", "--no-progress",
               "--no-diagnostics").output
    assert "pruned voting: threshold" in out
    (manifest,) = _manifests(tiny, "ensemble.voting-pruned")
    assert manifest["params"]["removal_ties"] == "earliest" and manifest["params"]["overlap"] == "chain"


def test_prune_param_selects_the_variants(tiny):
    out = _run("prune", "--corpus", "tiny", "--members", MEMBERS, "--folds", "3", "--param", "removal_ties=earliest",
               "--param", "overlap=chain", "--no-progress").output
    assert "variant: removal_ties=earliest, overlap=chain" in out
    assert re.search(r"chosen: t=\d, \d member\(s\): ", out)
    for param, message in (("overlap=sweep", "overlap='sweep'; expected one of 'greedy', 'chain'"),
                           ("threshold=2", "the threshold and objective have their own options"),
                           ("removal_ties", "expected key=value")):
        bad = _run("prune", "--corpus", "tiny", "--members", MEMBERS, "--param", param, ok=False)
        assert bad.exit_code == 2 and message in bad.output, bad.output


def test_study_config_selects_the_variants_and_the_manifest_records_them(two_corpora, tmp_path):  # noqa: F811
    cfg = StudyConfig(corpora=["tinyA"], taggers=["memorize", "memorize:max_len=2", "memorize:max_len=1"],
                      methods=["voting", "voting-pruned", "decision-templates"], folds=3, trials=200, name="v",
                      method_params={"voting": {"overlap": "chain"},
                                     "voting-pruned": {"removal_ties": "earliest", "overlap": "chain"},
                                     "decision-templates": {"variant": "authors"}})
    res = Study(two_corpora, cfg, log=lambda m: None, progress=False).run(tmp_path / "out")
    rows = dict(res.ensemble_table.rows)
    assert all(rows[m][0] is not None for m in cfg.methods)  # none skipped
    manifest = json.loads((res.directory / "manifest.json").read_text())
    assert manifest["config"]["method_params"]["decision-templates"] == {"variant": "authors"}
    assert manifest["config"]["method_params"]["voting-pruned"]["removal_ties"] == "earliest"


def test_study_refuses_bad_method_params_before_any_work(two_corpora, tmp_path):  # noqa: F811
    config = tmp_path / "s.toml"
    config.write_text('corpora = ["tinyA"]\ntaggers = ["memorize", "memorize:max_len=2"]\n'
                      'methods = ["decision-templates"]\nfolds = 3\n'
                      '[method_params.decision-templates]\nvariant = "dtm"\n')
    bad = _run("study", "--config", config, "--no-progress", ok=False)
    assert bad.exit_code == 2 and "decision-templates" in bad.output
    assert "variant='dtm'" in bad.output and "base taggers" not in bad.output


def test_variants_benchmark_script_smoke(tiny, tmp_path, monkeypatch):
    """benchmarks/ensembles/ensemble_variants.py on cached members of the tiny corpus:
    every configuration is scored, and an uncached member is refused."""
    import importlib
    from pathlib import Path

    import pytest

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "benchmarks"))
    script = importlib.import_module("ensembles.ensemble_variants")
    with pytest.raises(SystemExit, match="not cached"):
        script.main(["--corpus", "tiny", "--members", MEMBERS, "--folds", "3", "--out-dir", str(tmp_path)])
    _run("cv", "--corpus", "tiny", "--taggers", MEMBERS, "--folds", "3", "--no-progress")
    result = script.main(["--corpus", "tiny", "--members", MEMBERS, "--folds", "3", "--out-dir", str(tmp_path)])
    data = json.loads((tmp_path / "ensemble-variants.json").read_text())
    assert data["rows"] == json.loads(json.dumps(result["rows"]))
    variants = [r for r in data["rows"] if r["params"] is not None]
    assert [(r["method"], r["params"]) for r in variants] == [(m, p) for m, p in script.CONFIGS]
    assert all(0 <= r["test"][2] <= 1 and r["test_spans_changed"] >= 0 for r in variants)
    assert set(data["where_variants_differ"]["overlap_greedy_vs_chain"]) == {"train_oof", "test"}
    assert "| decision-templates variant=authors |" in (tmp_path / "ensemble-variants.md").read_text()
