"""``ensemble-deid evaluate`` on XML folders written from the worked example."""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import COMMANDS, LazyGroup
from ensemble_deid.cli.evaluate import evaluate as evaluate_cmd
from ensemble_deid.corpus.document import Document
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
