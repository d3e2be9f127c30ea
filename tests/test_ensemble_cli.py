"""``ensemble`` and ``prune`` end to end on the tiny corpus, with the test
plugin tagger ``memorize`` (and ``rules``/``crf`` when registered)."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.cli import main
from ensemble_deid.taggers.registry import entry_points

from .conftest import register_corpus
from .tables import terminal_cells, terminal_row
from .tiny_corpus import tiny_corpus

MEMBERS = "memorize,memorize:max_len=1,memorize:max_len=2"


@pytest.fixture
def tiny(workspace, tmp_path):
    docs = tiny_corpus(30, seed=5)
    register_corpus(workspace, "tiny", {"train": (tmp_path / "tiny" / "train", docs[:22]),
                                        "test": (tmp_path / "tiny" / "test", docs[22:])})
    return workspace


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def _table_row(output, label):
    line = next(x for x in output.splitlines() if x.startswith(f"| {label} "))
    return [c.strip() for c in line.strip("|").split("|")]


def test_ensemble_fits_scores_caches_and_reuses(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
               "--no-progress").output
    assert "(computed test and oof)" in out
    row = terminal_row(out, "ensemble.voting")
    assert len(row) == 8 and all(re.fullmatch(r"\d\.\d{4}", c) for c in row[1:7])
    # The last column is the inference cost: voting runs every member, so it costs their sum.
    members = [float(terminal_row(out, m)[7].replace(",", "")) for m in MEMBERS.split(",")]
    assert float(row[7].replace(",", "")) == pytest.approx(sum(members), abs=0.2)
    assert "chosen parameters: {'threshold': " in out
    assert re.search(r"^threshold=3, trust=0.9 ", out, re.M)  # the CV table of every setting
    assert "oracle (test):" in out and "marginal contributions" in out and "pairwise agreement" in out
    cache = PredictionCache(tiny / "cached_predictions")
    entries = [m["tagger"] for _, m in cache.entries()]
    assert "ensemble.voting" in entries and cache.verify() == []
    again = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
                 "--no-progress", "--no-diagnostics").output
    assert "(reused)" in again and "oracle" not in again
    assert terminal_row(again, "ensemble.voting") == row


def test_an_ensemble_can_be_a_member(tiny):
    _run("ensemble", "--corpus", "tiny", "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
         "--no-progress", "--no-diagnostics")
    out = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members",
               "memorize:max_len=2,ensemble.voting-pruned,memorize:max_len=1", "--folds", "3",
               "--no-progress", "--no-diagnostics").output
    assert terminal_row(out, "ensemble.voting-pruned")[0] == "ensemble.voting-pruned"
    # Without its out-of-fold predictions an ensemble cannot be a member.
    _run("ensemble", "--corpus", "tiny", "--method", "decision-templates", "--members", MEMBERS, "--folds", "3",
         "--no-progress", "--no-diagnostics", "--no-oof")
    bad = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members",
               "memorize,ensemble.decision-templates", "--folds", "3", "--no-progress", ok=False)
    assert bad.exit_code != 0 and "without --no-oof" in bad.output
    unknown = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", "memorize,ensemble.stacked-svm",
                   "--folds", "3", "--no-progress", ok=False)
    assert "run 'ensemble' first" in unknown.output


def test_params_grid_metric_and_nested(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "stacked-svm", "--members", MEMBERS, "--folds", "3",
               "--grid", "C=0.1|1", "--param", "class_weight=balanced", "--metric", "f2", "--nested",
               "--no-progress", "--no-diagnostics").output
    assert re.search(r"^C=0\.1 ", out, re.M) and re.search(r"^C=1 ", out, re.M) and "on f2" in out
    # 3 outer folds, each choosing among 2 settings by 3 inner folds and refitting: 3 * (2 * 3 + 1).
    assert re.search(r"nested CV estimate \(f2\): \d\.\d{4} from 21 fits", out)
    bad = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--param", "nope=1",
               ok=False)
    assert bad.exit_code == 2 and "invalid parameter 'nope'" in bad.output
    one = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", "memorize", ok=False)
    assert one.exit_code == 2 and "at least two members" in one.output


def test_prune_prints_the_elimination_path(tiny):
    out = _run("prune", "--corpus", "tiny", "--members", MEMBERS, "--folds", "3", "--threshold", "auto",
               "--all-paths", "--no-progress").output
    assert "tie-break order by out-of-fold F1 (inference cost, CPU s per million tokens): memorize (" in \
        " ".join(out.split())  # prose folded to the terminal's width
    for t in (1, 2, 3):
        assert f"elimination path at t={t}" in out
    assert re.search(r"\| +0 \| \(all members\) +\|", out)
    assert re.search(r"chosen: t=\d, \d member\(s\): ", out)
    assert re.search(r"test \(strict\): pruned voting P \d\.\d{4} R \d\.\d{4} F1 \d\.\d{4}", out)
    fixed = _run("prune", "--corpus", "tiny", "--members", MEMBERS, "--folds", "3", "--threshold", "2",
                 "--no-progress").output
    assert "chosen: t=2," in fixed and "elimination path at t=1" not in fixed
    bad = _run("prune", "--corpus", "tiny", "--members", MEMBERS, "--threshold", "many", ok=False)
    assert bad.exit_code == 2


def test_prune_fits_80_columns_with_long_member_specs(tiny, monkeypatch):
    # The fresh-clone walk (issue 34 item 8): the guide's 'prune --corpus meddocan --members "$M"'
    # printed its thresholds table 523 columns wide, every member spec on one line.
    monkeypatch.setenv("COLUMNS", "80")
    long = ",".join(f"memorize:max_len={n}" for n in (1, 2, 3, 4, 5, 6))
    out = _run("prune", "--corpus", "tiny", "--members", long, "--folds", "3", "--no-progress").output
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "members kept" in line)
    table = lines[header:lines.index("", header)]
    assert len(table) > 3 and max(len(line) for line in table) <= 80, "\n".join(table)
    assert "memorize:max_len=6" in "".join(x.strip() for x in table)  # folded, not cut
    # Specs longer than the members column has room for: by their aliases, said once, and every
    # line within the width, prose too (issue 53 item 9: the published MEDDOCAN specs made the
    # tie-break line 523 characters long and folded mid-word in the table)
    monkeypatch.setenv("COLUMNS", "60")
    narrow = _run("prune", "--corpus", "tiny", "--members", long, "--folds", "3", "--no-progress").output
    assert max(map(len, narrow.splitlines())) <= 60, narrow
    assert narrow.count("aliases:") == 1 and "memorize#6 = memorize:max_len=6" in narrow
    assert re.search(r"chosen: t=\d, \d member\(s\): memorize#\d", narrow)


def test_ensemble_tables_fit_80_columns_keeping_every_figure(tiny, monkeypatch):
    # The fresh-clone walk (issue 34 item 8): with the published MEDDOCAN members `ensemble`
    # printed Markdown tables 112-161 columns wide (scores, leaks, contributions, agreement).
    monkeypatch.setenv("COLUMNS", "80")
    out = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
               "--no-progress").output
    # every line, prose too (issue 53 item 9: the trust line ran to 1,377 characters), and the
    # aliases said once, under the first table, not after every table
    assert max(map(len, out.splitlines())) <= 80, out
    assert out.count("aliases:") == 1
    for label in MEMBERS.split(","):
        assert len(terminal_row(out, label)) == 8 and terminal_row(out, label)[0] == label
    monkeypatch.setenv("COLUMNS", "64")  # every table by aliases: their legend under the first only
    aliased = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
                   "--no-progress").output
    assert aliased.count("aliases:") == 1 and aliased.index("aliases:") < aliased.index("best single member")
    assert terminal_row(aliased, "memorize#2", under="entity leak")[0] == "memorize#2"  # the same alias below
    # Narrower than the agreement grid: its columns come in blocks, every value kept.
    monkeypatch.setenv("COLUMNS", "32")
    narrow = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
                  "--no-progress", "--no-oof").output
    grid = narrow[narrow.index("pairwise agreement"):].splitlines()  # the aliases are said once, above
    assert sum(line.startswith("member ") for line in grid) == 2 and max(map(len, grid[1:])) <= 32
    values = [cell for line in grid if line.startswith("[") for cell in re.findall(r"\d\.\d{4}", line)]
    assert len(values) == 3 * 2  # every (member, other member) pair


@pytest.mark.skipif(not {"rules", "crf"} <= set(entry_points()), reason="rules and crf adapters not registered")
def test_ensemble_of_real_taggers(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "stacked-svm", "--members",
               "rules,crf:max_iterations=5,memorize", "--folds", "3", "--no-progress").output
    for label in ("rules", "crf:max_iterations=5", "memorize", "ensemble.stacked-svm"):
        assert terminal_row(out, label)[0] == label


def test_compare_takes_cached_ensembles_even_without_their_oof(tiny):
    _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
         "--no-progress", "--no-diagnostics", "--no-oof")
    out = _run("compare", "--corpus", "tiny", "--folds", "3", "--trials", "200", "--reference", "memorize",
               "ensemble.voting", "memorize").output
    voting = _table_row(out, "ensemble.voting")
    assert re.fullmatch(r"\d\.\d{4}", voting[3]) and voting[4] != ""  # F1 and a delta against the reference
    assert _table_row(out, "memorize (ref)")[4] == ""
    missing = _run("compare", "--corpus", "tiny", "--folds", "3", "ensemble.stacked-svm", "memorize", ok=False)
    assert missing.exit_code != 0 and "run 'ensemble' first" in missing.output
    one = _run("compare", "--corpus", "tiny", "--folds", "3", "memorize", ok=False)
    assert one.exit_code == 2 and "at least two" in one.output


def test_a_failed_ensemble_fit_leaves_no_entry(tiny, monkeypatch):
    # Members are computed and cached; the meta-learner then fails: the cache
    # holds the members' entries and no empty ensemble entry.
    from ensemble_deid.ensemble.voting import Voting

    def broken(self, *args, **kwargs):
        raise RuntimeError("injected fault in the meta-learner")

    original = Voting._fit_prepared
    monkeypatch.setattr(Voting, "_fit_prepared", broken)
    res = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
               "--no-progress", ok=False)
    assert res.exit_code != 0
    cache = PredictionCache(tiny / "cached_predictions")
    entries = [m["tagger"] for _, m in cache.entries()]
    assert "memorize" in entries and not any(e.startswith("ensemble.") for e in entries)
    assert cache.verify() == []
    monkeypatch.setattr(Voting, "_fit_prepared", original)
    assert "(computed test and oof)" in _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members",
                                             MEMBERS, "--folds", "3", "--no-progress").output


def test_the_objective_reaches_pruned_voting_and_is_printed(tiny):
    """Issue 31 item 5: '--method voting-pruned --metric recall' silently returned the F1 choice."""
    out = _run("ensemble", "--corpus", "tiny", "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--objective", "recall", "--no-progress", "--no-diagnostics", "--no-oof").output
    assert "objective='recall'" in out  # the learner's own parameter, not its f1 default
    old = _run("ensemble", "--corpus", "tiny", "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--metric", "f2", "--no-progress", "--no-diagnostics", "--no-oof").output
    assert "objective='f2'" in old  # the older option name still works
    assert "token leak" in out and "95% document-bootstrap" in out and "ceiling: the members together cover" in out
    # issue 28: F1 beside entity and token leaks, the union as the ceiling, in tables that fit 80 columns
    lines = out.splitlines()
    leaks = lines[next(i for i, x in enumerate(lines) if "entity leak %" in x):]
    assert leaks[0].startswith("system ") and any(x.startswith("union (ceiling) ") for x in leaks)
    assert any(x.startswith("category ") for x in leaks) and max(len(x) for x in leaks) <= 80


def test_a_leak_first_objective_prints_its_operating_point(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "stacked-svm", "--members", MEMBERS, "--folds", "3",
               "--objective", "binary-token:recall>=0.9", "--no-progress", "--no-diagnostics", "--no-oof").output
    assert re.search(r"operating point: .* by 3-fold CV on binary-token:recall>=0\.9", out)


@pytest.mark.parametrize("command", ["ensemble", "prune"])
def test_a_bad_objective_is_refused_naming_it(tiny, command):
    extra = ["--method", "voting"] if command == "ensemble" else []
    bad = _run(command, "--corpus", "tiny", *extra, "--members", MEMBERS, "--objective", "recall>=2", ok=False)
    assert bad.exit_code == 2 and "objective 'recall>=2'" in bad.output and "(0, 1]" in bad.output


def test_an_unreached_target_is_said(tiny):
    out = _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3",
               "--objective", "recall>=0.95", "--no-progress", "--no-diagnostics", "--no-oof").output
    # the memorize members find well under half of the tiny corpus's spans: 0.95 is out of reach
    said = " ".join(out.split())  # prose folded to 80 columns
    assert "target of recall>=0.95 NOT reached on the out-of-fold data: the closest setting was taken" in said
    assert "chosen parameters: {'threshold': 1, 'trust': None}" in out  # the closest: the most recall


def test_the_selection_table_shows_each_setting_at_one_operating_point(tiny):
    """Issue 53 item 7: with a recall objective the last column was headed with the
    objective but held binary-token precision, at the chosen point for one row and at the
    learner's own rule (as were every row's counts) for the others."""
    import json

    out = _run("ensemble", "--corpus", "tiny", "--method", "stacked-svm", "--members", MEMBERS, "--folds", "3",
               "--grid", "C=0.1|1.0", "--objective", "binary-token:recall>=0.9", "--no-progress", "--no-diagnostics",
               "--no-oof").output
    record = next(json.loads(p.read_text())["selection"]
                  for p in (tiny / "cached_predictions").rglob("ensemble.stacked-svm/*/*/predict-*/all.json"))
    chosen = record["best_params"]["C"]
    for res in record["cv_results"]:
        label = f"C={res['params']['C']}" + (" *" if res["params"]["C"] == chosen else "")
        cells = terminal_cells(out, label, under="setting ")
        assert list(cells) == ["setting", "point", "TP", "FP", "FN", "binary-token R", "binary-token P"]
        # what the objective constrains and what it maximises, of the same point as the counts
        assert cells["binary-token R"] == f"{res['recall']:.4f}" and cells["binary-token P"] == f"{res['precision']:.4f}"
        assert [int(cells[k].replace(",", "")) for k in ("TP", "FP", "FN")] == [res["tp"], res["fp"], res["fn"]]
        assert res["score"] == res["precision"]  # the figure a recall>= target trades (Target.figure)
        assert cells["point"] == ("own rule" if res["point"] is None else f"{res['point']['*']:.4g}")
    best = next(r for r in record["cv_results"] if r["params"]["C"] == chosen)
    assert best["point"] == record["best_params"].get("operating_point")  # the chosen row at the chosen point


def test_grid_search_rows_are_counted_at_their_own_best_point():
    """Each setting's strict counts and criterion figures are those of one
    point of the held-out sweep: the best one for the objective."""
    from ensemble_deid.ensemble.objective import parse_objective
    from ensemble_deid.ensemble.selection import GridSearch
    from ensemble_deid.ensemble.stacked_svm import StackedSVM

    from .test_ensemble_fixtures import random_case

    docs, members = random_case(7, n_docs=12, n_members=3)
    search = GridSearch(StackedSVM(), {"C": [0.1, 1.0]}, folds=3, objective="binary-token:recall>=0.8").fit(members, docs)
    op = search.operating_search_
    best = next(r for r in search.cv_results_ if r.params == {"C": search.best_params_["C"]})
    assert best.point == search.best_params_.get("operating_point")
    counts = op.counts[op.points.index(best.point)]
    tp, n_sys, _, n_gold = counts.overall["strict"]
    assert (best.tp, best.fp, best.fn) == (tp, n_sys - tp, n_gold - tp)
    tp_sys, n_sys, tp_gold, n_gold = counts.overall["binary-token"]
    assert (best.precision, best.recall) == (tp_sys / n_sys, tp_gold / n_gold)
    assert best.score == parse_objective("binary-token:recall>=0.8").base.figure(
        parse_objective("binary-token:recall>=0.8").score(counts))
