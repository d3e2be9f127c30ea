"""``cache ls`` fits the terminal and names every training set (issue 31 item 6,
issue 34 item 8)."""
from __future__ import annotations

import json
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


# --- what ran, not the method's defaults; specs a user can copy (issue 53 item 5) -----------

def test_ls_and_the_ambiguous_message_show_the_objective_and_the_chosen_parameters(tiny_registered, workspace):
    import json

    for objective in ("f1", "binary-token:recall>=0.9"):
        _run("ensemble", "--corpus", tiny_registered, "--method", "voting", "--members", MEMBERS, "--folds", "3",
             "--grid", "threshold=1|2", "--objective", objective, "--no-diagnostics", "--no-progress")
    chosen = {}
    for record in Path(workspace, "cached_predictions").rglob("ensemble.voting/*/*/predict-*/all.json"):
        selection = json.loads(record.read_text())["selection"]
        chosen[selection["objective"]] = selection["best_params"]
    assert set(chosen) == {"f1", "binary-token:recall>=0.9"}
    out = _run("cache", "ls", "--wide")
    lines = [line for line in out.splitlines() if "ensemble.voting" in line]
    assert len(lines) == 2
    for objective, best in chosen.items():
        line = next(x for x in lines if f"objective {objective};" in x)
        said = ", ".join(f"{k}={v}" for k, v in sorted(best.items()) if k != "operating_point")
        assert f"chosen {said}" in line, line
    # the method's defaults (objective=f1 of a recall run, threshold=2) are no longer shown as its parameters
    assert not any("params " in x for x in lines)
    ambiguous = CliRunner().invoke(main, ["compare", "memorize", "ensemble.voting", "--corpus", tiny_registered,
                                          "--folds", "3"])
    assert ambiguous.exit_code != 0 and "ambiguous" in ambiguous.output
    flat = " ".join(ambiguous.output.split())
    assert "objective f1; chosen threshold=" in flat and "objective binary-token:recall>=0.9; chosen threshold=" in flat


def test_a_chosen_trust_is_said_once(tmp_path):
    # voting's grid chooses trust itself: "chosen threshold=1, trust=0.95, trust 0.95" said it twice
    from ensemble_deid.ensemble.caching import ensemble_summary
    from ensemble_deid.experiment.cache import _record_checksum

    def record(selection):  # a test part's record as the cache writes it (checksummed)
        out = {"selection": selection}
        return json.dumps(out | {"record_sha256": _record_checksum(out)})

    entry = tmp_path / "entry"
    (entry / "predict-0").mkdir(parents=True)
    selection = {"objective": "binary-token:recall>=0.99", "best_params": {"threshold": 1, "trust": 0.95},
                 "trust": 0.95, "trusted": [["crf", "DATE:DATE"]]}
    (entry / "predict-0" / "all.json").write_text(record(selection))
    summary = ensemble_summary({"members": ["crf", "svm"], "settings": {"metric": selection["objective"]}}, entry)
    assert "chosen threshold=1, trust=0.95; made " in summary and summary.count("trust") == 1, summary
    # pruned voting chooses no trust in its grid: the trust its members earned is said
    selection = {"best_params": {}, "threshold": 1, "subset": [0, 1], "members": ["crf", "svm"], "trust": 0.99,
                 "trusted": [["crf", "DATE:DATE"]]}
    (entry / "predict-0" / "all.json").write_text(record(selection))
    assert "chosen t=1, 2 of 2 members, trust 0.99; made " in ensemble_summary({}, entry)


def test_ls_names_published_parts_by_the_spec_that_reaches_them(tmp_path, monkeypatch):
    # The published MEDDOCAN neural parts were made at epochs=12/16, validation_fraction=0, the
    # defaults of their day: listed as 'lstm-crf-fea', a copied name trained a new model.
    published = Path(__file__).resolve().parent.parent / "cached_predictions" / "meddocan"
    monkeypatch.setenv("ENSEMBLE_DEID_PUBLISHED", str(published))
    out = _run("--workspace", str(tmp_path), "cache", "ls", "--wide")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()[2:] if line.startswith("|")]
    specs = {row[0]: row[2] for row in rows}  # spec -> parameter hash
    assert "lstm-crf-fea:epochs=12,validation_fraction=0" in specs and "lstm-l:epochs=16,validation_fraction=0" in specs
    assert "crf" in specs and "rules:label_map=i2b2-to-meddocan" in specs  # defaults: the plain name
    for spec, param_hash in specs.items():
        assert TaggerSpec.parse(spec).make().param_hash() == param_hash, spec
