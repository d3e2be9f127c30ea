"""``ensemble-deid evaluate`` on XML folders written from the worked example."""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import COMMANDS, LazyGroup
from ensemble_deid.cli.evaluate import evaluate as evaluate_cmd
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.formats import write_i2b2_xml

from .test_evaluation import GOLD_TAGS, SYSTEM_TAGS, TEXT


@pytest.fixture
def folders(tmp_path):
    gold, system = tmp_path / "gold", tmp_path / "system"
    gold.mkdir()
    system.mkdir()
    for i in range(2):  # the worked example twice: every count doubles, ratios stay
        write_i2b2_xml(Document(f"doc-{i}", TEXT, GOLD_TAGS), gold / f"doc-{i}.xml")
        write_i2b2_xml(Document(f"doc-{i}", TEXT, SYSTEM_TAGS), system / f"doc-{i}.xml")
    write_i2b2_xml(Document("doc-2", TEXT, GOLD_TAGS), gold / "doc-2.xml")  # no system output
    return gold, system


def run(*args):
    return CliRunner().invoke(evaluate_cmd, [str(a) for a in args], catch_exceptions=False)


def test_registered_in_the_lazy_group():
    assert COMMANDS["evaluate"] == "ensemble_deid.cli.evaluate:evaluate"
    import click

    assert LazyGroup().get_command(click.Context(LazyGroup()), "evaluate") is evaluate_cmd


def test_missing_system_document_is_an_error_naming_it(folders):
    gold, system = folders
    result = run("--gold", gold, "--system", system)
    assert result.exit_code != 0
    assert "doc-2" in result.output and "Springfield" not in result.output


def test_skip_missing_reproduces_the_worked_example(folders):
    gold, system = folders
    result = run("--gold", gold, "--system", system, "--skip-missing", "--format", "json", "--criteria", "official")
    assert result.exit_code == 0, result.output
    assert "warning:" in result.stderr and "doc-2" in result.stderr
    data = json.loads(result.stdout)
    strict = data["criteria"]["strict"]["micro"]
    assert (strict["tp"], strict["fp"], strict["fn"]) == (14, 12, 14)
    assert round(strict["precision"], 4) == 0.5385 and round(data["criteria"]["binary_token"]["micro"]["f1"], 4) == 0.8889
    assert set(data["criteria"]) == {"token", "strict", "relaxed", "binary_token", "binary_strict", "hipaa_token",
                                     "hipaa_strict", "hipaa_relaxed", "hipaa_binary_token", "hipaa_binary_strict"}
    assert data["documents"] == 2


def test_missing_as_empty_counts_false_negatives(folders):
    gold, system = folders
    result = run("--gold", gold, "--system", system, "--missing-as-empty", "--format", "csv", "--criteria", "strict")
    assert result.exit_code == 0, result.output
    rows = {(r["section"], r["criterion"], r["group"], r["measure"]): r["value"] for r in csv.DictReader(io.StringIO(result.stdout))}
    assert rows[("micro", "strict", "all", "fn")] == "28"  # 7 + 7 + 14 from the empty document
    assert rows[("micro", "strict", "all", "tp")] == "14"


def test_quirk_flags(folders):
    gold, system = folders
    base = ["--gold", gold, "--system", system, "--skip-missing", "--format", "json", "--criteria", "hipaa_strict"]

    def hipaa(*extra):
        m = json.loads(run(*base, *extra).stdout)["criteria"]["hipaa_strict"]["micro"]
        return m["tp"], m["fp"], m["fn"]

    assert hipaa() == (10, 10, 6)
    assert hipaa("--hipaa-include-idnum") == (12, 10, 6)
    assert hipaa("--hipaa-ages-over-89") == (8, 10, 6)
    assert hipaa("--no-quirks") == (10, 10, 6)  # IDNUM in (+2), age 45 out (-2)
    assert hipaa("--no-quirks", "--hipaa-exclude-idnum") == (8, 10, 6)  # explicit options win


def test_table_output_and_breakdowns(folders):
    gold, system = folders
    result = run("--gold", gold, "--system", system, "--skip-missing", "--criteria", "strict,token", "--breakdown", "subtype")
    assert result.exit_code == 0
    assert "strict by subtype" in result.stdout and "NAME:DOCTOR" in result.stdout
    assert "0.5385" in result.stdout and "leak" in result.stdout


def test_output_file(folders, tmp_path):
    gold, system = folders
    out = tmp_path / "report.json"
    result = run("--gold", gold, "--system", system, "--skip-missing", "--format", "json", "-o", out)
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(out.read_text())["criteria"]["relaxed"]["micro"]["tp"] == 16


def test_bad_values(folders, tmp_path):
    gold, system = folders
    result = run("--gold", gold, "--system", system, "--criteria", "strict,nonsense")
    assert result.exit_code == 2 and "unknown criterion" in result.output
    result = run("--gold", gold, "--system", system, "--missing-as-empty", "--skip-missing")
    assert result.exit_code == 2
    result = run("--gold", tmp_path / "absent", "--system", system)
    assert result.exit_code == 2 and "does not exist" in result.output


def test_text_mismatch_is_an_error(folders, tmp_path):
    gold, _ = folders
    other = tmp_path / "other"
    other.mkdir()
    for i in range(3):
        write_i2b2_xml(Document(f"doc-{i}", TEXT.replace("today", "Today"), []), other / f"doc-{i}.xml")
    result = run("--gold", gold, "--system", other)
    assert result.exit_code == 1 and "doc-0" in result.output and "TEXT" in result.output


# -- cached systems: --corpus C --system SPEC, no export ----------------------

@pytest.fixture(scope="module")
def cached_rules(tmp_path_factory):
    """The rule tagger cross-validated on synthetic-2014 (2 folds), with its
    full-training model also predicting synthetic-2016's test split."""
    from ensemble_deid.corpus.workspace import Workspace
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

    root = tmp_path_factory.mktemp("workspace")
    ws = Workspace(root)
    a, b = ws.load("synthetic-2014"), ws.load("synthetic-2016")
    engine = CrossValidation(a.train, {"test": a.test, "other": b.test}, PredictionCache(ws.cache_dir), k=2, seed=0)
    run = engine.run([TaggerSpec.parse("rules")], progress=False)["rules"]
    return root, run, a, b


def _export(tmp_path, docs, predictions, name):
    folder = tmp_path / name
    folder.mkdir()
    for d in docs:
        if d.id in predictions:
            write_i2b2_xml(d.with_annotations(predictions[d.id].spans(d)), folder / f"{d.id}.xml")
    gold = tmp_path / f"{name}-gold"
    gold.mkdir()
    for d in docs:
        write_i2b2_xml(d, gold / f"{d.id}.xml")
    return gold, folder


def _csv_micro(output: str) -> dict:
    rows = csv.DictReader(io.StringIO(output))
    return {(r["criterion"], r["measure"]): r["value"] for r in rows if r["section"] == "micro"}


@pytest.mark.parametrize("target", ["same", "cross"])
def test_cached_system_scores_as_its_export(cached_rules, tmp_path, target):
    from ensemble_deid.cli import main

    root, run, a, b = cached_rules
    if target == "same":
        docs, preds, args = a.test, run.targets["test"], ["--corpus", "synthetic-2014"]
    else:  # trained on synthetic-2014, scored on synthetic-2016 (issue 24)
        docs, preds, args = b.test, run.targets["other"], ["--corpus", "synthetic-2016", "--trained-on", "synthetic-2014"]
    runner = CliRunner()
    common = ["--criteria", "official", "--format", "csv"]
    cached = runner.invoke(main, ["--workspace", str(root), "evaluate", "--system", "rules", *args, *common])
    assert cached.exit_code == 0, cached.output
    gold, system = _export(tmp_path, docs, preds, "export")
    exported = runner.invoke(main, ["evaluate", "--gold", str(gold), "--system", str(system), *common])
    assert exported.exit_code == 0, exported.output
    got, want = _csv_micro(cached.output), _csv_micro(exported.output)
    assert got == want and float(got[("strict", "tp")]) > 0


def test_cached_out_of_fold_predictions(cached_rules):
    from ensemble_deid.cli import main
    from ensemble_deid.evaluation import Scorer

    root, run, a, _ = cached_rules
    out = CliRunner().invoke(main, ["--workspace", str(root), "evaluate", "--corpus", "synthetic-2014", "--system", "rules",
                                    "--split", "train", "--folds", "2", "--criteria", "strict", "--format", "json"])
    assert out.exit_code == 0, out.output
    micro = json.loads(out.output)["criteria"]["strict"]["micro"]
    p, r, f1 = Scorer(a.train, "strict").prf({d.id: run.oof[d.id].spans(d) for d in a.train})
    assert (micro["precision"], micro["recall"], micro["f1"]) == pytest.approx((p, r, f1))


def test_uncached_system_says_what_to_run(cached_rules):
    from ensemble_deid.cli import main

    root, *_ = cached_rules
    out = CliRunner().invoke(main, ["--workspace", str(root), "evaluate", "--corpus", "synthetic-2014",
                                    "--system", "crf", "--split", "train", "--folds", "3"])
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert "missing or corrupt" in out.output and "cv --corpus synthetic-2014" in out.output
    both = CliRunner().invoke(main, ["--workspace", str(root), "evaluate", "--corpus", "synthetic-2014",
                                     "--gold", str(root), "--system", "rules"])
    assert both.exit_code != 0 and "either --gold" in both.output


def test_the_table_fits_80_columns_with_every_figure(folders, tmp_path):
    # The fresh-clone walk (issue 34 item 8): micro and macro side by side made the
    # table 124 columns wide, and MEDDOCAN's 35-character subtype names overran
    # the subtype table's label column.
    gold, system = folders
    out = run("--gold", gold, "--system", system, "--skip-missing").stdout
    assert max(len(line) for line in out.splitlines()) <= 80, out
    lines = out.splitlines()
    strict = [line.split() for line in lines if line.startswith("strict ")]
    assert len(strict[0]) == 8 and len(strict[1]) == 6  # TP FP FN P R F1 F2, then macro P (SD), R (SD), F1
    assert "macro over documents" in out and "strict by category, macro over documents" in out
    long_type = "ID_TITULACION_PERSONAL_SANITARIO"  # MEDDOCAN's longest subtype
    text = "Colegiado 282812345 y colegiado 282854321."
    spans = [Annotation(10, 19, "ID", long_type), Annotation(32, 41, "ID", long_type)]
    for folder, doc_spans in ((tmp_path / "g", spans), (tmp_path / "s", spans[:1])):
        folder.mkdir()
        write_i2b2_xml(Document("d", text, doc_spans), folder / "d.xml")
    out = run("--gold", tmp_path / "g", "--system", tmp_path / "s", "--breakdown", "subtype").stdout
    assert max(len(line) for line in out.splitlines()) <= 80, out
    row = next(line for line in out.splitlines() if line.startswith(f"ID:{long_type} "))
    assert row.split()[1:] == ["1", "0", "1", "1.0000", "0.5000", "0.6667"]
