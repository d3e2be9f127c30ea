"""MEDDOCAN (train CV -> dev as test): with all twelve base taggers as members,
read from the published predictions in cached_predictions/meddocan/ (no model
is trained), pruned voting and the stacked SVM beat the best single member's
strict F1, and the stacked SVM's gain is significant (paired randomization,
Holm). ENSEMBLE_DEID_TEST_CACHE names a workspace cache to use instead.

MEDDOCAN (CC BY 4.0): Marimon M, Gonzalez-Agirre A, Intxaurrondo A, Rodríguez
H, Lopez Martin J, Villegas M, Krallinger M. IberLEF@SEPLN 2019, pp. 618-638."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.cli.ensemble import SCORE_HEADERS
from ensemble_deid.studies.report import aliases
from ensemble_deid.taggers.registry import entry_points

from .tables import terminal_row

PUBLISHED = Path(__file__).resolve().parent.parent / "cached_predictions" / "meddocan"
LABELS = ["crf", "rules:label_map=i2b2-to-meddocan", "memm", "searn", "mira", "svm", "ogd", "struct-svm",
          # the published members: version 2's fixed epochs (validation_fraction=0), chosen by dev F1
          "lstm-crf-l:epochs=12,validation_fraction=0", "lstm-crf-n:epochs=12,validation_fraction=0",
          "lstm-l:epochs=16,validation_fraction=0", "lstm-crf-fea:epochs=12,validation_fraction=0"]
MEMBERS = ",".join(LABELS)


@pytest.fixture(scope="module")
def meddocan_workspace(meddocan_dir, tmp_path_factory):
    if not {label.split(":")[0] for label in LABELS} <= set(entry_points()):
        pytest.skip("the rules, CRF and linear adapters are not all registered")
    if not os.environ.get("ENSEMBLE_DEID_TEST_CACHE") and not (PUBLISHED / "published.json").is_file():
        pytest.skip(f"no published MEDDOCAN predictions at {PUBLISHED}")
    root = tmp_path_factory.mktemp("meddocan-ws")
    env = {"ENSEMBLE_DEID_HOME": str(root),
           "ENSEMBLE_DEID_CACHE": os.environ.get("ENSEMBLE_DEID_TEST_CACHE", str(root / "cache")),
           "ENSEMBLE_DEID_PUBLISHED": str(PUBLISHED), "COLUMNS": "80"}
    result = CliRunner(env=env).invoke(main, ["corpus", "add", "meddocan", "--train", str(meddocan_dir / "train" / "xml"),
                                              "--test", str(meddocan_dir / "dev" / "xml")])
    assert result.exit_code == 0, result.output
    return env


@pytest.fixture(scope="module")
def ensemble_output(meddocan_workspace):
    """The ``ensemble`` command's output for a method, run once per module
    (each run reads the twelve members' published predictions again)."""
    outputs = {}

    def run(method: str) -> str:
        if method not in outputs:
            result = CliRunner(env=meddocan_workspace).invoke(
                main, ["ensemble", "--corpus", "meddocan", "--method", method, "--members", MEMBERS, "--no-progress",
                       "--no-oof", "--no-diagnostics"])
            assert result.exit_code == 0, result.output
            outputs[method] = result.output
        return outputs[method]
    return run


def _f1(output, label):
    return float(terminal_row(output, label)[SCORE_HEADERS.index("test F1")])


# pruned voting's case is slow (10 s on 2 cores): the default run keeps the stacked SVM, the headline
@pytest.mark.parametrize("method", [pytest.param("voting-pruned", marks=pytest.mark.slow), "stacked-svm"])
def test_ensemble_beats_the_best_member(ensemble_output, method):
    output = ensemble_output(method)
    best = max(_f1(output, alias) for alias in aliases(LABELS))  # 80 columns: the specs' aliases
    assert _f1(output, f"ensemble.{method}") > best
    assert re.search(r"ensemble test F1 \d\.\d{4}\s+\(\+0\.\d{4}\)", output)  # the line may wrap at 80 columns


def test_stacked_svm_gain_is_significant(meddocan_workspace, ensemble_output):
    ensemble_output("stacked-svm")  # its predictions cached in the workspace, where compare reads them
    runner = CliRunner(env=meddocan_workspace)
    result = runner.invoke(main, ["compare", "--corpus", "meddocan", "--test", "randomization", "--trials", "2000",
                                  "--reference", "ensemble.stacked-svm", "crf", "lstm-crf-fea:epochs=12,validation_fraction=0", "ensemble.stacked-svm"])
    assert result.exit_code == 0, result.output
    # The member chosen by CV F1 and the best member on dev.
    for label in ("crf", "lstm-crf-fea"):  # 80 columns: the long spec under its alias
        rows = [[c.strip() for c in x.strip("|").split("|")] for x in result.output.splitlines()
                if x.startswith(f"| {label} ")]
        delta = float(rows[0][4])  # the scores table, then the tests table
        p_holm = next(r for r in rows if r[1] == "randomization")[3]
        assert delta < 0, rows
        assert p_holm == "<0.001" or float(p_holm) < 0.05, rows


@pytest.mark.slow
def test_the_walks_tables_fit_80_columns(meddocan_workspace):
    """The fresh-clone walk (issue 34 item 8) on the published members: `cv` printed a
    142-column table, `evaluate` 124 (and subtype rows past their column), `ensemble`
    112-161, `compare` 101. Every table now fits 80 columns, every spec whole in a legend."""
    runner = CliRunner(env=meddocan_workspace)
    outputs = {}
    for args in (["cv", "--corpus", "meddocan", "--taggers", MEMBERS, "--no-progress"],
                 ["evaluate", "--corpus", "meddocan", "--system", "crf", "--breakdown", "subtype"],
                 ["ensemble", "--corpus", "meddocan", "--method", "voting", "--members", MEMBERS, "--no-progress",
                  "--no-oof"],
                 ["compare", "--corpus", "meddocan", "--test", "randomization", "--trials", "200", *LABELS[:2],
                  LABELS[-1]]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        outputs[args[0]] = result.stdout
    for command, out in outputs.items():
        # the lines of prose that name a cache folder or an entry are not tables
        tables = [line for line in out.splitlines() if not line.startswith(("corpus ", "best single member"))]
        assert max(map(len, tables)) <= 80, (command, out)
    for command, labels in (("cv", LABELS), ("ensemble", LABELS), ("compare", [*LABELS[:2], LABELS[-1]])):
        legend = "".join(outputs[command].split("aliases:", 1)[1].split())
        assert all(label in legend for label in labels if ":" in label), command
    assert "ID:ID_TITULACION_PERSONAL_SANITARIO " in outputs["evaluate"]
    grid = outputs["ensemble"][outputs["ensemble"].index("pairwise agreement"):]
    assert len(re.findall(r"\d\.\d{4}", grid.split("aliases:")[0])) == 12 * 11  # every pair, in column blocks
