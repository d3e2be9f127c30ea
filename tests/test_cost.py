"""Cost in selection (issue 36): a cached run's inference cost, the budget
filter, the budgeted search, the Pareto front of (objective, cost), and
``prune``/``ensemble``/``cache ls`` with costs. Costs are set by hand in the
part records (resealed as the cache seals them) so that every figure can be
worked out on paper."""
from __future__ import annotations

import json
import re
import stat

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from ensemble_deid.cli import main
from ensemble_deid.ensemble import build_candidates
from ensemble_deid.ensemble.budget import (SubsetPoint, affordable_subsets, best_within, check_budget, pareto_front)
from ensemble_deid.ensemble.pruning import PrunedVoting, budgeted_search
from ensemble_deid.ensemble.run import cost_points, resolve_costs
from ensemble_deid.errors import ParameterError
from ensemble_deid.experiment.cache import PredictionCache, _record_checksum
from ensemble_deid.experiment.cost import inference_cost, stored_cost
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec

from .tables import terminal_row
from .test_ensemble_fixtures import random_case
from .test_ensemble_pruning import elimination_case  # noqa: F401 (fixture)
from .tiny_corpus import tiny_corpus

# --- the cost of a cached run ----------------------------------------------------------


def test_cost_is_recorded_seconds_over_tokens_per_million():
    records = [
        {"predict_seconds": 2.0, "tokens": 1000},                              # wall time only (older parts)
        {"predict_cpu_seconds": 1.0, "predict_seconds": 5.0, "tokens": 3000},  # CPU time preferred
        {"predict_seconds": 9.0, "tokens": 0},                                 # nothing predicted: ignored
        {"tokens": 500},                                                       # no time recorded: ignored
    ]
    assert inference_cost(records) == pytest.approx(1e6 * (2.0 + 1.0) / (1000 + 3000))  # 750
    assert inference_cost([{"tokens": 10}]) is None and inference_cost([]) is None


def _part_records(cache_root) -> list:
    """The commit records of the prediction parts (not a kept model's record)."""
    return sorted(p for p in cache_root.glob("v1/*/*/*/*/*.json") if p.parent.name.startswith(("oof-", "predict-")))


def _reseal_costs(cache_root, costs: dict[str, float]) -> None:
    """Set the predict CPU seconds of every part of the named taggers so that
    each costs exactly ``costs[label]`` CPU s per million tokens (resealed)."""
    for record_path in _part_records(cache_root):
        record = json.loads(record_path.read_text())
        if record.get("tagger_label") in costs:
            record["predict_cpu_seconds"] = costs[record["tagger_label"]] * record["tokens"] / 1e6
            record["record_sha256"] = _record_checksum(record)
            record_path.write_text(json.dumps(record))


def _strip_times(cache_root) -> None:
    """Make every part look like one made before prediction times were recorded."""
    for record_path in _part_records(cache_root):
        record = json.loads(record_path.read_text())
        record.pop("predict_seconds", None)
        record.pop("predict_cpu_seconds", None)
        record["record_sha256"] = _record_checksum(record)
        record_path.write_text(json.dumps(record))


@pytest.fixture
def tiny_cv(tmp_path):
    docs = tiny_corpus(24, seed=3)
    cache = PredictionCache(tmp_path / "cache")
    engine = CrossValidation(docs[:18], {"test": docs[18:]}, cache, k=3)
    return engine


def test_a_run_costs_what_its_parts_recorded_and_is_remeasured_when_they_did_not(tiny_cv, monkeypatch):
    from ensemble_deid.ensemble.caching import resolve_members

    spec = TaggerSpec.parse("memorize")
    run = tiny_cv.run([spec], progress=False)["memorize"]
    assert all(r.get("predict_cpu_seconds") is not None for r in run.records)  # recorded from now on
    _reseal_costs(tiny_cv.cache.root, {"memorize": 40.0})
    member = resolve_members(tiny_cv, [spec], [], ["memorize"], progress=False)["memorize"]
    assert member.cost == pytest.approx(40.0)  # the property of the cached run, as the library gives it
    # An entry whose parts recorded no time: re-measured once (fit on fold 0's training folds, predict
    # fold 0), kept, and read back the next time without another fit.
    _strip_times(tiny_cv.cache.root)
    member = resolve_members(tiny_cv, [spec], [], ["memorize"], progress=False)["memorize"]
    assert member.cost is None
    said = []
    costs = resolve_costs(tiny_cv, {"memorize": member}, said.append)
    assert costs["memorize"] is not None and costs["memorize"] >= 0 and member.cost == costs["memorize"]
    assert any("measuring its inference cost" in s for s in said)
    assert stored_cost(tiny_cv.cache, member.entry) == pytest.approx(costs["memorize"])
    kept = next((tiny_cv.cache.root / "costs").rglob("*.json"))
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    member.cost = None
    from ensemble_deid.experiment import cost as cost_module

    monkeypatch.setattr(cost_module, "measure_cost", lambda *a, **k: pytest.fail("measured again"))
    assert resolve_costs(tiny_cv, {"memorize": member})["memorize"] == pytest.approx(costs["memorize"])
    # A damaged measurement is not used: measured again.
    kept.write_text(kept.read_text().replace('"tokens": ', '"tokens": 1'))
    assert stored_cost(tiny_cv.cache, member.entry) is None


# --- the budget ------------------------------------------------------------------------

def test_budget_values():
    assert check_budget("20") == 20.0 and check_budget(7) == 7.0
    assert check_budget(None) is None and check_budget("none") is None
    for bad in ("0", "-3", "abc", "nan", "inf", True):
        with pytest.raises(ParameterError) as err:
            check_budget(bad)
        assert err.value.option == "--budget"


def test_the_budget_keeps_the_subsets_that_fit():
    costs = np.array([10.0, 20.0, 40.0])  # members a, b, c: bits 1, 2, 4
    assert affordable_subsets(costs, 30.0).tolist() == [1, 2, 3]  # a, b, a+b (30 = the budget: it fits)
    assert affordable_subsets(costs, 29.9).tolist() == [1, 2]
    assert affordable_subsets(costs, None).tolist() == list(range(1, 8))
    with pytest.raises(ParameterError) as err:
        affordable_subsets(costs, 9.5)
    assert err.value.option == "--budget"
    assert "budget of 9.5" in str(err.value) and "costing 10.0" in str(err.value)


COSTS = {"A": 10.0, "B": 20.0, "C": 5.0, "D": 1.0}


def test_budgeted_search_by_hand(elimination_case):  # noqa: F811
    d, members = elimination_case
    table = build_candidates(list(members.values()), tuple(members), [d])
    rank = table.member_rank()
    # Within 15: A (10), C (5), D (1), A+C (15), A+D (11), C+D (6). At t=1 A+C scores tp 5, fp 1, fn 1 ->
    # F1 10/12, the best of them (A alone 8/11, C alone 4/8, A+D 8/15, C+D 4/12, D 0).
    search = budgeted_search(table, rank, COSTS, 15.0)
    assert (search.threshold, search.subset, search.score, search.cost) == (1, ("A", "C"), pytest.approx(10 / 12), 15.0)
    # Just under it A+C no longer fits: A alone.
    search = budgeted_search(table, rank, COSTS, 14.9)
    assert (search.threshold, search.subset, search.score, search.cost) == (1, ("A",), pytest.approx(8 / 11), 10.0)
    # Only D fits: chosen although it finds nothing.
    assert budgeted_search(table, rank, COSTS, 4.0).subset == ("D",)
    with pytest.raises(ParameterError, match="costing 1.0"):
        budgeted_search(table, rank, COSTS, 0.5)
    # The learner: the budget's choice, and predictions from it.
    learner = PrunedVoting(budget=14.9, costs=COSTS).fit(members, [d])
    assert (learner.threshold_, learner.subset_) == (1, ("A",))
    with pytest.raises(ValueError, match="costs"):
        PrunedVoting(budget=10.0).fit(members, [d])
    with pytest.raises(ParameterError, match="no recorded inference cost"):
        PrunedVoting(budget=10.0, costs={"A": 1.0}).fit(members, [d])


# --- the Pareto front --------------------------------------------------------------------

def _point(t, subset, cost, score, order=0):
    return SubsetPoint(t, tuple(subset), cost, score, (score,), (0, 0, 0), order)


def test_the_front_drops_dominated_points_and_keeps_one_of_equal_points():
    points = [
        _point(1, "A", 10.0, 0.5),
        _point(1, "B", 10.0, 0.6),        # same cost, better: A is dominated
        _point(2, "AB", 20.0, 0.6),       # same score, dearer: dominated
        _point(2, "ABC", 30.0, 0.7),
        _point(1, "C", 5.0, 0.4),
        _point(2, "CD", 15.0, 0.65, order=12),
        _point(1, "CD", 15.0, 0.65, order=12),   # equal on both axes: one kept, the lower threshold
        _point(1, "EF", 15.0, 0.65, order=48),   # equal too, as many members, but worse-ranked ones
        _point(1, "G", 15.0, 0.6),       # fewer members but a lower score: dominated
        _point(3, "ABCD", 40.0, 0.7),     # no better than the cheaper ABC
    ]
    front = pareto_front(points)
    assert [(p.subset, p.threshold, p.cost, p.score) for p in front] == [
        (("C",), 1, 5.0, 0.4), (("B",), 1, 10.0, 0.6), (("C", "D"), 1, 15.0, 0.65), (("A", "B", "C"), 2, 30.0, 0.7)]
    assert best_within(front, 14.0).subset == ("B",) and best_within(front, 4.0) is None
    assert best_within(front, None).score == 0.7


def test_the_front_of_the_hand_case(elimination_case):  # noqa: F811
    d, members = elimination_case
    table = build_candidates(list(members.values()), tuple(members), [d])
    points = cost_points(table, table.member_rank(), COSTS)
    # 15 subsets, each scored at thresholds 1..size: 4*1 + 6*2 + 4*3 + 1*4 = 32 points.
    assert len(points) == 32
    front = [(p.subset, p.threshold, p.cost, round(p.score, 6)) for p in pareto_front(points)]
    assert front == [(("D",), 1, 1.0, 0.0), (("C",), 1, 5.0, 0.5), (("A",), 1, 10.0, round(8 / 11, 6)),
                     (("A", "C"), 1, 15.0, round(10 / 12, 6))]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), costs=st.lists(st.integers(5, 500).map(lambda c: c / 10), min_size=4, max_size=4),  # as tables round them
       budgets=st.lists(st.floats(0.5, 200.0), min_size=2, max_size=2))
def test_raising_the_budget_never_lowers_the_best_cv_objective(seed, costs, budgets):
    docs, members = random_case(seed, n_docs=4, n_members=4)
    names = tuple(members)
    cost = dict(zip(names, costs))
    table = build_candidates([members[n] for n in names], names, docs)
    rank = table.member_rank()
    low, high = sorted(budgets)
    if low < min(costs):
        low = min(costs)  # no subset fits below the cheapest member (a ParameterError, tested above)
        high = max(high, low)
    a = budgeted_search(table, rank, cost, low)
    b = budgeted_search(table, rank, cost, high)
    assert b.paths[b.threshold].key >= a.paths[a.threshold].key
    assert a.cost <= low + 1e-9 and b.cost <= high + 1e-9
    # The search's choice is the best point of the front within the budget.
    front = pareto_front(cost_points(table, rank, cost))
    assert best_within(front, high).key == b.paths[b.threshold].key


# --- the commands ------------------------------------------------------------------------

MEMBERS = "memorize,memorize:max_len=1,memorize:max_len=2"
HAND = {"memorize": 30.0, "memorize:max_len=1": 5.0, "memorize:max_len=2": 12.0}


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.fixture
def costed(tiny_registered, workspace):
    _run("cv", "--corpus", tiny_registered, "--taggers", MEMBERS, "--folds", "3", "--no-progress")
    _reseal_costs(workspace / "cached_predictions", HAND)
    return tiny_registered


def test_cache_ls_shows_each_entrys_cost(costed, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = _run("cache", "ls", "--wide").output
    for label, cost in HAND.items():
        line = next(x for x in out.splitlines() if x.startswith(f"| {label} "))
        assert re.search(rf"\| {cost:.1f} +\| workspace", line)
    narrow = _run("cache", "ls").output
    assert max(len(x) for x in narrow.splitlines()) <= 80 and "cost" in narrow


def test_prune_within_a_budget_prints_costs_and_the_front(costed, tmp_path):
    out = _run("prune", "--corpus", costed, "--members", MEMBERS, "--folds", "3", "--budget", "17",
               "--front", "--front-plot", tmp_path / "plots" / "front.png", "--no-progress").output
    chosen = re.search(r"chosen: t=(\d), \d member\(s\): (.*) \(training f1 [\d.]+; cost ([\d.]+)\)", out)
    kept = chosen.group(2).split(", ")
    assert float(chosen.group(3)) == pytest.approx(sum(HAND[m] for m in kept), abs=0.05)
    assert float(chosen.group(3)) <= 17 and "memorize" not in kept  # 30 alone is over the budget
    table = out[out.index("Pareto front of f1"):out.index("front plotted to")]
    assert max(len(x) for x in table.splitlines()) <= 80
    assert sum(bool(re.match(r"\*\s+\d", line)) for line in table.splitlines()) == 1
    assert "within the budget of 17" in " ".join(table.split())
    png = tmp_path / "plots" / "front.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and stat.S_IMODE(png.stat().st_mode) == 0o600
    # No budget: the greedy elimination's choice, and the front over every subset.
    full = _run("prune", "--corpus", costed, "--members", MEMBERS, "--folds", "3", "--front", "--no-progress").output
    # 3 members: 7 subsets, 3*1 + 3*2 + 1*3 = 12 (threshold, subset) points.
    assert "12 (threshold, subset) points scored, the undominated shown" in " ".join(full.split())


def test_a_budget_no_subset_fits_is_refused_naming_the_option_and_the_cheapest(costed):
    res = _run("prune", "--corpus", costed, "--members", MEMBERS, "--folds", "3", "--budget", "4",
               "--no-progress", ok=False)
    assert res.exit_code == 2 and "--budget" in res.output and "costing 5.0" in res.output
    assert "Traceback" not in res.output
    for bad in ("0", "lots"):
        res = _run("prune", "--corpus", costed, "--members", MEMBERS, "--budget", bad, ok=False)
        assert res.exit_code == 2 and "--budget" in res.output
    res = _run("prune", "--corpus", costed, "--members", MEMBERS, "--front-plot", "front.txt", ok=False)
    assert res.exit_code == 2 and "--front-plot" in res.output


def test_ensemble_takes_the_budget_and_shows_costs(costed):
    out = _run("ensemble", "--corpus", costed, "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--budget", "17", "--front", "--no-progress", "--no-diagnostics").output
    kept = re.search(r"pruned voting: threshold \d, members (.*); cost ([\d.]+) within the budget of 17",
                     " ".join(out.split()))  # prose folded to 80 columns
    assert kept and float(kept.group(2)) <= 17
    row = terminal_row(out, "ensemble.voting-pruned")
    assert float(row[7]) == pytest.approx(float(kept.group(2)), abs=0.05)
    for label, cost in HAND.items():
        assert terminal_row(out, label)[7] == f"{cost:.1f}"
    assert sum(bool(re.match(r"\*\s+\d", line)) for line in out[out.index("Pareto front"):].splitlines()) == 1
    res = _run("ensemble", "--corpus", costed, "--method", "voting", "--members", MEMBERS, "--folds", "3",
               "--budget", "17", "--no-progress", ok=False)
    assert res.exit_code == 2 and "--budget" in res.output and "voting-pruned" in res.output
    res = _run("ensemble", "--corpus", costed, "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--budget", "2", "--no-progress", ok=False)
    assert res.exit_code == 2 and "costing 5.0" in res.output


def test_a_budget_over_a_cached_ensemble_member_names_it(costed):
    _run("ensemble", "--corpus", costed, "--method", "voting", "--members", MEMBERS, "--folds", "3", "--no-progress",
         "--no-diagnostics")
    res = _run("prune", "--corpus", costed, "--members", "memorize,memorize:max_len=1,ensemble.voting", "--folds", "3",
               "--budget", "50", "--no-progress", ok=False)
    assert res.exit_code == 2 and "--budget" in res.output
    assert "ensemble.voting have no recorded inference cost" in res.output and "Traceback" not in res.output


def test_pruned_voting_without_a_budget_keeps_its_cache_key():
    """budget and costs were added after voting-pruned entries were cached: at None they stay out of
    the key, so those entries are still found (the key's parameters are the ones it had before)."""
    from ensemble_deid.ensemble.run import key_params

    # trust (issue 34 item 2) is in the key on purpose: "auto" cross-validates it, a new choice
    assert key_params(PrunedVoting().get_params()) == {"threshold": None, "objective": "f1",
                                                        "removal_ties": "worse", "overlap": "greedy",
                                                        "trust": "auto"}
    assert key_params(PrunedVoting(budget=5.0, costs={"A": 1.0}).get_params())["budget"] == 5.0


def test_fit_within_a_budget_saves_the_ensemble_commands_choice(costed, tmp_path):
    """``fit --budget`` chooses exactly as ``ensemble --budget`` (the same cache
    entry, so its spans match), saves only the kept members, and records the
    budget and their summed cost in the manifest."""
    out = _run("ensemble", "--corpus", costed, "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--budget", "17", "--no-progress", "--no-diagnostics").output
    kept = re.search(r"pruned voting: threshold \d, members (.*); cost ([\d.]+) within the budget of 17",
                     " ".join(out.split()))  # prose folded to 80 columns
    chosen = kept.group(1).split(", ")
    res = _run("fit", "--corpus", costed, "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--budget", "17", "--out", tmp_path / "model", "--no-progress")
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    sel = manifest["selection"]
    assert sel["members_used"] == chosen and [m["label"] for m in manifest["members"]] == chosen
    assert sel["budget"] == 17.0 and sel["cost"] == pytest.approx(sum(HAND[m] for m in chosen))
    assert sel["cost"] <= 17 and "memorize" not in chosen  # 30 alone is over the budget
    assert "within the budget of 17" in res.output and re.search(r"identical .* on (\d+)/\1 test", res.output)
    # Without a budget nothing about one is recorded.
    _run("fit", "--corpus", costed, "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
         "--out", tmp_path / "free", "--no-progress")
    free = json.loads((tmp_path / "free" / "manifest.json").read_text())["selection"]
    assert "budget" not in free and "cost" not in free
    bad = _run("fit", "--corpus", costed, "--tagger", "memorize", "--budget", "17", "--out", tmp_path / "x", ok=False)
    assert bad.exit_code == 2 and "--budget" in bad.output
    bad = _run("fit", "--corpus", costed, "--method", "voting-pruned", "--members", MEMBERS, "--folds", "3",
               "--budget", "2", "--out", tmp_path / "y", "--no-progress", ok=False)
    assert bad.exit_code == 2 and "costing 5.0" in bad.output and not (tmp_path / "y").exists()



REAL = {"rules": 5.0, "svm": 12.0, "crf:max_iterations=5": 30.0}  # taggers a fresh ``deidentify`` process can load


@pytest.mark.slow  # 4 fresh deidentify processes and 2 fits: about 30 CPU s
def test_bench_deidentify_times_a_budgeted_bundle_against_the_best(tiny_registered, workspace, tmp_path, monkeypatch):
    """benchmarks/deidentify/bench_deidentify.py --versus: both bundles de-identify the
    same notes in fresh processes, alternating; each one's scores come from
    its own output (the same strict F1 ``fit`` recorded for it), its spans
    equal the ``ensemble`` command's for its own choice (the budget read from
    its manifest), and every run of it writes the same bytes."""
    from pathlib import Path

    from ensemble_deid.taggers.registry import entry_points

    if not {"rules", "svm", "crf"} <= set(entry_points()):
        pytest.skip("rules, svm and crf adapters not registered")
    members = ",".join(REAL)
    _run("cv", "--corpus", tiny_registered, "--taggers", members, "--folds", "3", "--no-progress")
    _reseal_costs(workspace / "cached_predictions", REAL)
    for name, extra in (("best", ()), ("cheap", ("--budget", "17"))):
        _run("fit", "--corpus", tiny_registered, "--method", "voting-pruned", "--members", members, "--folds", "3",
             *extra, "--out", tmp_path / name, "--no-progress")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from deidentify import bench_deidentify

    out = tmp_path / "results" / "deidentify-cost.json"
    r = bench_deidentify.main(["--corpus", tiny_registered, "--method", "voting-pruned", "--members", members,
                               "--model", str(tmp_path / "best"), "--versus", str(tmp_path / "cheap"),
                               "--rounds", "1", "--jobs", "2", "--out", str(out)])
    best, cheap = r["bundles"]["first"], r["bundles"]["second"]
    manifests = {k: json.loads((tmp_path / k / "manifest.json").read_text()) for k in ("best", "cheap")}
    assert cheap["budget"] == 17.0 and best["budget"] is None
    assert "crf:max_iterations=5" not in cheap["members_in_bundle"]  # 30 alone is over the budget
    for b, name in ((best, "best"), (cheap, "cheap")):
        assert b["recorded_cost"] == pytest.approx(sum(REAL[m] for m in b["members_in_bundle"]), abs=0.05)
        assert b["dev"]["strict"]["f1"] == pytest.approx(manifests[name]["scores"]["test_strict"]["f1"])
        assert b["documents_identical_to_ensemble_command"] == r["documents"] == 10
        assert b["files_differing_across_runs"] == 0 and b["files_compared"] == 20
        assert len(b["sequential"]["runs_wall_s"]) == len(b["jobs"]["runs_cpu_s"]) == 1
    assert r["recorded_cost_ratio"] == pytest.approx(best["recorded_cost"] / cheap["recorded_cost"], abs=0.01)
    assert r["ratios_first_over_second"]["sequential_wall"] > 0
    assert r["delta_strict_f1_pt"] == pytest.approx(100 * (cheap["dev"]["strict"]["f1"] - best["dev"]["strict"]["f1"]),
                                                    abs=0.01)
    table = out.with_suffix(".md").read_text()
    assert "| dev strict P / R / F1 |" in table and "budget 17" in table
