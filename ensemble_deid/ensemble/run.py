"""The ensemble steps as library calls: what ``ensemble-deid ensemble`` and
``prune`` do, and what ``fit`` builds on, callable from Python.

- :func:`parse_members`, :func:`parse_params`, :func:`parse_grid`: the
  members and parameters as the command line writes them;
- :func:`make_search`: the one place a method's grid search is built and
  checked (the ``ensemble`` and ``fit`` commands and the API share it);
- :func:`load_members`: the members' cross-validation, run or reused;
- :func:`run_ensemble`: fit, predict and cache an ensemble (or reuse it);
- :func:`run_method`: all of the above for a workspace's corpus;
- :func:`prune_members`: greedy backward elimination of voting members, or
  the best subset within a cost budget;
- :func:`resolve_costs`: the members' inference costs (re-measured when missing);
- :func:`cost_points`: every (threshold, subset) of voting scored with its
  cost, for the Pareto front (``ensemble.budget``).

Bad values raise :class:`~ensemble_deid.errors.ParameterError` before any
member is computed; ``option`` names the command-line option they came as.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ParameterError
from ..experiment.cache import PredictionCache
from ..experiment.cost import measure_cost, stored_cost
from ..experiment.cv import CrossValidation, PeakMemory, TaggerSpec, label_warnings, parse_tagger_specs, split_specs
from ..experiment.cv import _parse_value
from ..progress import phase, progress_bar
from .budget import affordable_subsets, check_budget, cost_vector, score_subsets
from .caching import (MemberRun, ensemble_entry, ensemble_parts, is_ensemble_spec, jsonable, member_test_checksums,
                      part_metadata, resolve_members)
from .candidates import build_candidates
from .objective import ObjectiveError, check_objective, parse_objective
from .pruning import PrunedVoting, SubsetScorer, budgeted_search, pruning_search
from .registry import make_method
from .selection import GridSearch, fold_predictions
from .trust import TRUST_RULE
from .voting import check_threshold, vote_select

DEFAULT_FOLDS = 10
Say = Callable[[str], None]


def _quiet(_message: str) -> None:
    pass


# --- what to run -------------------------------------------------------------------

def parse_members(value: str, option: str = "--members") -> tuple[list[TaggerSpec], list[str], list[str]]:
    """(tagger specs, ensemble member names, all labels in order). Tagger specs
    are parsed as by ``cv --taggers``; ``ensemble.<method>[:hash=<prefix>]``
    names an ensemble already cached for this corpus."""
    chunks = split_specs(value)
    ensembles = [c for c in chunks if is_ensemble_spec(c)]
    regular_text = ",".join(c for c in chunks if not is_ensemble_spec(c))
    specs = parse_tagger_specs(regular_text, option) if regular_text else []
    order, by_chunk = [], iter(specs)
    for c in chunks:
        order.append(c if is_ensemble_spec(c) else next(by_chunk).label)
    if len(set(order)) != len(order):
        raise ParameterError("a member is named twice", option)
    if len(order) < 2:
        raise ParameterError("an ensemble needs at least two members", option)
    return specs, ensembles, order


def parse_params(items: Iterable[str], option: str = "--param") -> dict[str, Any]:
    """``["threshold=2", ...]`` -> ``{"threshold": 2}`` (values typed as in tagger specs)."""
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ParameterError(f"expected key=value, got {item!r}", option)
        out[key.strip()] = _parse_value(value.strip())
    return out


def parse_grid(items: Iterable[str], option: str = "--grid") -> dict[str, list] | None:
    """``["threshold=1|2"]`` -> ``{"threshold": [1, 2]}``; None when empty (the method's default grid)."""
    items = list(items)
    if not items:
        return None
    grid = {}
    for item in items:
        key, eq, values = item.partition("=")
        if not eq or not key.strip() or not values:
            raise ParameterError(f"expected key=v1|v2|..., got {item!r}", option)
        grid[key.strip()] = [_parse_value(v.strip()) for v in values.split("|")]
    return grid


def make_search(method: str, params: Mapping[str, Any] | None = None, grid: Mapping[str, Sequence] | None = None,
                folds: int = DEFAULT_FOLDS, seed: int = 0, objective: str = "f1", nested: bool = False,
                n_members: int | None = None) -> GridSearch:
    """The method's grid search, checked before any work: ``params`` are
    fixed (never searched), ``grid`` replaces the method's default grid.
    An unknown name, a bad value, a name both fixed and searched, or a
    voting threshold above the number of members is a ParameterError
    (option ``--param`` or ``--grid``); so is an objective that cannot be
    read (``--objective``)."""
    try:
        objective = check_objective(objective)
    except ObjectiveError as exc:
        raise ParameterError(str(exc), "--objective") from None

    params = dict(params or {})
    try:
        estimator = make_method(method, **params)
    except ValueError as exc:
        raise ParameterError(str(exc), "--param") from None
    learner = GridSearch(estimator, None if grid is None else {k: list(v) for k, v in grid.items()},
                         folds=folds, seed=seed, objective=objective, nested=nested, fixed=tuple(params))
    try:
        learner.validate_params()
    except ValueError as exc:
        raise ParameterError(str(exc), "--grid" if "search" in str(exc) else "--param") from None
    if n_members is not None:  # the method's own check against the members (as fit and a bundle's loader run it)
        try:
            estimator.check_members(n_members)
        except ValueError as exc:
            raise ParameterError(str(exc), "--param") from None
        for key, values in (grid or {}).items():
            for value in values:
                try:
                    estimator.clone().set_params(**{key: value}).check_members(n_members)
                except ValueError as exc:
                    raise ParameterError(str(exc), "--grid") from None
    return learner


def load_members(workspace, corpus_name: str, members: str, folds: int | None = None, seed: int = 0,
                 progress: bool = True, log: Say = _quiet, warn: Say = _quiet):
    """(corpus, engine, {label: MemberRun}) with the members' CV run or reused.
    ``folds=None`` means the default 10 folds, or the members' cached CV
    when they are cached for one other k only (said through ``log``); an
    explicit k that is not cached is computed (and said)."""
    k = DEFAULT_FOLDS if folds is None else folds
    specs, ensembles, order = parse_members(members)
    corpus = workspace.load(corpus_name)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(workspace.cache_dir), k=k, seed=seed)
    cached = engine.cached_fold_counts(specs) if specs else [k]
    if k not in cached and cached:
        if len(cached) == 1 and folds is None:
            log(f"note: reusing the members' cached {cached[0]}-fold CV (--folds {cached[0]}); "
                f"pass --folds {k} to compute a {k}-fold CV instead")
            engine = CrossValidation(corpus.train, {"test": corpus.test}, engine.cache, k=cached[0], seed=seed)
        else:
            log(f"note: the members are cached for {', '.join(map(str, cached))}-fold CV, not {k}-fold: "
                f"computing a {k}-fold CV (--folds {cached[0]} reuses the cache)")
    for msg in engine.split_warnings():
        warn(msg)
    if "dev" in corpus.splits:
        log(f"note: corpus {corpus.name!r} has a dev split; cross-validation and the ensembles use the "
            "train and test splits only")
    runs = resolve_members(engine, specs, ensembles, order, progress=progress, on_corrupt=warn)
    for msg in label_warnings({s.label: runs[s.label] for s in specs}, corpus.train, f"corpus {corpus.name!r}"):
        warn(msg)
    return corpus, engine, runs


# --- fitting ---------------------------------------------------------------------------

# Parameters added after entries were cached, left out of an ensemble's cache key (and of what is
# printed) at None, what every earlier version did: operating_point (the method's own rule), budget
# and costs (no budget). Entries cached before them keep their key.
LEFT_OUT_AT_NONE = ("operating_point", "budget", "costs")


def key_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A method's parameters as its cache key (and ``parameters used:``) hold them."""
    return {k: v for k, v in params.items() if not (k in LEFT_OUT_AT_NONE and v is None)}


def key_settings(learner: GridSearch) -> dict:
    """What of a grid search enters its ensemble's cache key (with the members)."""
    # The objective keeps the key "metric" it had: entries cached before it stay valid.
    params = key_params(learner.estimator.get_params())
    params.update((k, v) for k, v in type(learner.estimator).unkeyed_params.items() if k in params)
    settings = {"params": params, "grid": learner.param_grid, "folds": learner.folds,
                "seed": learner.seed, "metric": learner.objective, "nested": learner.nested}
    if learner.fixed:  # only then: entries cached without fixed parameters keep their key
        settings["fixed"] = sorted(learner.fixed)
    if may_trust(learner):
        settings["trust_rule"] = TRUST_RULE
    return settings


def may_trust(learner: GridSearch) -> bool:
    """Whether the search may fit its method with a trust level (fixed, searched
    or in the method's default grid), so that the trust rule shapes its output."""
    params = learner.estimator.get_params()
    if "trust" not in params:
        return False
    if params["trust"] is not None:
        return True
    if learner.param_grid is not None:
        return any(v is not None for v in learner.param_grid.get("trust", ()))
    return "trust" not in learner.fixed


def run_ensemble(engine: CrossValidation, learner: GridSearch, method: str, runs: Mapping[str, MemberRun],
                 refit: bool = False, oof: bool = True, echo: Say = print, progress: bool = False) -> dict:
    """Fit/predict/cache (or reuse) an ensemble; returns a dict with its
    test and OOF predictions, the entry, the test part's record
    (``test_record``: fit and predict seconds, peak memory) and the selection
    record (``record``). ``progress``: a bar (or plain lines) over the
    selection's fits, the test prediction and the out-of-fold fits."""
    train, test = engine.train, engine.targets["test"]
    settings = key_settings(learner)
    entry = ensemble_entry(method, settings, runs, engine.train_fingerprint)
    cache = engine.cache
    description = {"tagger_label": f"ensemble.{method}", "params": jsonable(settings["params"]),
                   "settings": jsonable(settings), "members": list(runs), "external": False}
    test_part, oof_parts = ensemble_parts(engine, entry)
    members_oof = {label: run.oof for label, run in runs.items()}
    members_test = {label: run.test for label, run in runs.items()}
    out = {"entry": entry, "oof": None, "computed": []}
    member_tests = member_test_checksums(runs, engine.target_fingerprints["test"])

    cached = cache.part_status(test_part) == "valid"
    if cached and cache.read_part(test_part)[1].get("member_test_sha256", member_tests) != member_tests:
        echo(f"the cached {method} test predictions were made from other member test predictions "
             f"(a member's test part was computed again): fitting it again")
        cached = False
    if refit or not cached:
        echo(f"fitting {method} on {len(train)} training documents ({len(runs)} members)")
        patients = len({d.group for d in train})
        settings_n = len(learner.grid(len(runs)))
        with PeakMemory() as mem, progress_bar(total=learner.planned_fits(len(runs), patients), desc=method,
                                               unit="fit", disable=not progress) as bar:
            learner.on_fit = bar.update
            phase(bar, f"choosing parameters: {settings_n} setting{'s' if settings_n != 1 else ''} x "
                       f"{min(learner.folds, patients)} folds, then the refit on every training document")
            t0 = time.perf_counter()
            try:
                learner.fit(members_oof, train)
            finally:
                learner.on_fit = None
            t1 = time.perf_counter()
            phase(bar, f"predicting {len(test)} test documents")
            preds = learner.predict(members_test, test)
            t2 = time.perf_counter()
        record = {
            "best_params": learner.best_params_, "best_score": learner.best_score_,
            "params": learner.chosen_params(), "fixed": sorted(learner.fixed),
            "cv_results": [r.to_dict() for r in learner.cv_results_], "fits": learner.fits_,
            "members": list(runs), "objective": learner.objective, "targets_reached": learner.reached_,
        }
        if learner.operating_search_ is not None:  # the held-out curve of the chosen setting
            op = learner.operating_search_
            record["operating_point"] = {"chosen": op.chosen, "reached": op.reached,
                                         "curve": op.curve(parse_objective(learner.objective).base.criterion)}
        if learner.nested:
            n = learner.nested_
            record["nested"] = {"tp": n.tp, "fp": n.fp, "fn": n.fn, "score": n.score, "chosen": n.chosen,
                                "fits": n.fits, "seconds": round(n.seconds, 2)}
        record.update(learned(learner.best_estimator_))
        # The entry is made only once there is something to put in it: a fit
        # that fails leaves no empty entry behind.
        cache.ensure_entry(entry, description)
        cache.write_part(test_part, preds, test, part_metadata(f"ensemble.{method}", learner.get_params(), t2 - t0, {
            "selection": jsonable(record), "fit_seconds": round(t1 - t0, 4), "predict_seconds": round(t2 - t1, 4),
            "peak_rss_mb": round(mem.peak, 1), "member_test_sha256": member_tests}))
        out["computed"].append("test")
    test_preds, test_record = cache.read_part(test_part)
    out["test"], out["test_record"], out["record"] = test_preds, test_record, test_record.get("selection", {})

    if oof:
        missing = [p for p in oof_parts if refit or cache.part_status(p) != "valid"]
        if missing:
            estimator = oof_estimator(learner, out["record"].get("best_params"))
            echo(f"{method}: out-of-fold predictions ({engine.k} folds"
                 f"{', selection inside each fold' if learner.nested else ''})")
            t0 = time.perf_counter()
            with progress_bar(total=engine.k, desc=f"{method} out-of-fold", unit="fold", disable=not progress) as bar:
                by_fold = fold_predictions(estimator, members_oof, train, engine.folds, bar.update)
            seconds = time.perf_counter() - t0
            docs_by_id = {d.id: d for d in train}
            cache.ensure_entry(entry, description)
            for f, part in enumerate(oof_parts):
                preds = by_fold.get(f, [])
                cache.write_part(part, preds, [docs_by_id[p.doc_id] for p in preds],
                                 part_metadata(f"ensemble.{method}", estimator.get_params(), seconds / engine.k,
                                               {"fold": f}))
            out["computed"].append("oof")
        oof_preds = {}
        for part in oof_parts:
            oof_preds.update(cache.read_part(part)[0])
        out["oof"] = oof_preds
    return out


def oof_estimator(learner: GridSearch, best_params: Mapping[str, Any] | None):
    """The estimator whose out-of-fold predictions (``selection.cross_val_predict``
    over the members' folds) are the ensemble's own: the choice ``best_params``
    made on all folds, refitted on each fold's other folds; with ``nested``,
    the whole search inside each fold (honest, k times the fits)."""
    if learner.nested:
        return learner.clone().set_params(nested=False)
    return learner.objective_estimator().clone().set_params(**dict(best_params or {}))


def learned(model) -> dict:
    """Small learned facts worth recording (pruned subset, threshold)."""
    out = {}
    for attr in ("threshold_", "subset_"):
        if hasattr(model, attr):
            out[attr.rstrip("_")] = getattr(model, attr)
    if hasattr(model, "search_"):
        out["elimination"] = {t: [list(s) for s in p.steps] for t, p in model.search_.paths.items()}
        out["reached"] = model.search_.reached
        if model.search_.cost is not None:
            out["cost"] = model.search_.cost
            out["budget"] = model.search_.budget
    if getattr(model, "operating_point_", None):
        out["category_thresholds"] = model.operating_point_
    if getattr(model, "trusted_", None):
        out["trusted"] = model.trusted_
        out["trust"] = getattr(model, "trust_", getattr(model, "trust", None))
    return out


def operating_point_record(learner: GridSearch) -> dict:
    """The objective's chosen operating point, whether its targets were met on
    the out-of-fold data, and the held-out curve of the other points (what a
    bundle can be re-pointed to without retraining)."""
    model = learner.best_estimator_
    point = getattr(model, "operating_point_", None) or model.get_params().get("operating_point")
    out = {"operating_point": point}
    op = getattr(learner, "operating_search_", None)
    if op is not None:
        out["targets_reached"] = op.reached
        out["curve"] = op.curve(parse_objective(learner.objective).base.criterion)
    elif learner.reached_:
        out["targets_reached"] = learner.reached_
    elif getattr(model, "search_", None) is not None:
        out["targets_reached"] = {"*": model.search_.reached, **getattr(model, "category_reached_", {})}
    return out


@dataclass
class MethodRun:
    """An ensemble run on a corpus: the members, the engine whose folds
    they share, the (fitted or reused) grid search and :func:`run_ensemble`'s
    result (``test``/``oof`` predictions, ``entry``, ``record``)."""

    method: str
    corpus: Any
    engine: CrossValidation
    runs: dict[str, MemberRun]
    learner: GridSearch
    result: dict

    @property
    def test(self):
        return self.result["test"]


def run_method(workspace, corpus_name: str, method: str, members: str, params: Mapping[str, Any] | None = None,
               grid: Mapping[str, Sequence] | None = None, folds: int | None = None, seed: int = 0,
               objective: str = "f1", nested: bool = False, oof: bool = True, refit: bool = False,
               progress: bool = True, log: Say = _quiet, warn: Say = _quiet, budget: float | None = None) -> MethodRun:
    """The ``ensemble`` step: the members' CV (run or reused), the method's
    parameters chosen by k-fold CV over their out-of-fold predictions on
    the training set, its test predictions, all cached as
    ``ensemble.<method>``. ``folds=None``: see :func:`load_members`.
    ``budget`` (voting-pruned only): CPU seconds per million tokens the
    kept members' summed inference cost may reach (``ensemble.budget``).
    Every parameter is checked before any member is computed."""
    n_members = len(parse_members(members)[2])
    budget = check_budget(budget)
    if budget is not None and method != "voting-pruned":
        raise ParameterError(f"a budget chooses member subsets: only --method voting-pruned takes it, not {method}",
                             "--budget")
    settings = dict(folds=DEFAULT_FOLDS if folds is None else folds, seed=seed, objective=objective, nested=nested,
                    n_members=n_members)
    learner = make_search(method, params, grid, **settings)
    corpus, engine, runs = load_members(workspace, corpus_name, members, folds, seed, progress, log, warn)
    if budget is not None:  # the costs are known now: the same search, with the budget fixed
        costs = budget_costs(resolve_costs(engine, runs, log))
        affordable_subsets(cost_vector(tuple(runs), costs), budget)  # nothing fits: said before any fit
        learner = make_search(method, {**(params or {}), "budget": budget, "costs": costs}, grid,
                              **settings)
    learner.set_params(folds=engine.k)  # the members' cached CV may have been reused
    result = run_ensemble(engine, learner, method, runs, refit=refit, oof=oof, echo=log, progress=progress)
    return MethodRun(method, corpus, engine, runs, learner, result)


# --- pruning ---------------------------------------------------------------------------

def pruning_variant(params: Mapping[str, Any]) -> dict[str, Any]:
    """The voting-pruned parameters ``prune`` may set (removal_ties, overlap),
    checked by the method's own constraints before any work."""
    other = sorted(set(params) - {"removal_ties", "overlap"})
    if other:
        raise ParameterError(f"unknown parameter {other[0]!r}: --param sets removal_ties or overlap "
                             "(the threshold and objective have their own options)", "--param")
    try:
        PrunedVoting(**params).validate_params()
    except ValueError as exc:
        raise ParameterError(str(exc), "--param") from None
    return dict(params)


def pruning_objective(objective: str) -> str:
    """The objective of ``prune``, checked before any work: per-category
    clauses are refused (said, not silently dropped), since they choose
    thresholds after the elimination (``ensemble --method voting-pruned``)."""
    try:
        parsed = parse_objective(objective)
    except ObjectiveError as exc:
        raise ParameterError(str(exc), "--objective") from None
    if parsed.categories:
        raise ParameterError("per-category clauses choose thresholds after the elimination: use "
                             "'ensemble --method voting-pruned --objective ...'", "--objective")
    return str(parsed)


@dataclass
class PruneResult:
    names: tuple[str, ...]
    table: Any  # the training set's candidate table
    rank: Any  # members' tie-break rank by out-of-fold F1
    search: Any  # PruningSearch: every threshold's path, the chosen threshold and subset
    test_predictions: dict
    table_seconds: float
    search_seconds: float


def prune_members(corpus, runs: Mapping[str, MemberRun], threshold: int | None = None, objective: str = "f1",
                  variant: Mapping[str, Any] | None = None, budget: float | None = None) -> PruneResult:
    """Voting pruned by greedy backward elimination [KIM20] on the members'
    out-of-fold predictions over the training set (``threshold=None``: every
    threshold 1..m), maximising the objective's base clause, and the chosen
    (threshold, subset) applied to the test split. With a ``budget`` (CPU
    seconds per million tokens; the members' ``cost`` must be known, see
    :func:`resolve_costs`): the best of every subset whose summed cost fits
    it instead (``ensemble.budget``). Per-category clauses are
    refused: they choose thresholds after the elimination (``ensemble
    --method voting-pruned``)."""
    objective = pruning_objective(objective)
    budget = check_budget(budget)

    variant = pruning_variant(variant or {})
    names = tuple(runs)
    try:
        check_threshold(threshold, len(names), "")
    except ValueError as exc:
        raise ParameterError(str(exc).strip(), "--threshold") from None
    if budget is not None:  # before the table: an unknown cost or a budget nothing fits is said at once
        affordable_subsets(cost_vector(names, budget_costs({n: runs[n].cost for n in names})), budget)
    t0 = time.perf_counter()
    table = build_candidates([runs[n].oof for n in names], names, corpus.train)
    t1 = time.perf_counter()
    rank = table.member_rank()
    thresholds = None if threshold is None else [threshold]
    if budget is None:
        search = pruning_search(table, rank, thresholds, objective, **variant)
    else:
        try:
            search = budgeted_search(table, rank, budget_costs({n: runs[n].cost for n in names}), budget, thresholds, objective,
                                     variant.get("overlap", "greedy"))
        except ValueError as exc:  # a threshold above every affordable subset's size
            raise ParameterError(str(exc), "--threshold") from None
    t2 = time.perf_counter()
    test_table = build_candidates([runs[n].test for n in names], names, corpus.test)
    cols = [names.index(n) for n in search.subset]
    selected = vote_select(test_table, search.threshold, rank, cols, variant.get("overlap", "greedy"))
    test_preds = {p.doc_id: p for p in test_table.to_predictions(selected)}
    return PruneResult(names, table, rank, search, test_preds, t1 - t0, t2 - t1)


# --- inference cost ------------------------------------------------------------------

def budget_costs(costs: Mapping[str, float | None]) -> dict[str, float]:
    """The known costs, rounded as tables show them (0.1 CPU s per million
    tokens): what a budget compares with, and what goes into a cache key."""
    return {label: round(float(c), 1) for label, c in costs.items() if c is not None}


def resolve_costs(engine: CrossValidation, runs: Mapping[str, MemberRun], log: Say = _quiet) -> dict[str, float | None]:
    """Each member's inference cost, CPU seconds per million tokens
    (``experiment.cost``), also set on the runs. A tagger whose cached parts
    recorded no prediction time is re-measured (fitted on the training folds of
    fold 0, timed predicting fold 0; kept in the cache, so once per entry). A
    cached ensemble named as a member has no cost (None)."""
    out: dict[str, float | None] = {}
    for label, run in runs.items():
        if run.cost is None and not is_ensemble_spec(label):
            run.cost = stored_cost(engine.cache, run.entry)
            if run.cost is None:
                log(f"{label}: its cache entry recorded no prediction time: measuring its inference cost "
                    "(fit on the training folds of fold 0, predict fold 0)")
                fit_docs, predict_docs = engine.folds.split(engine.train, 0)
                run.cost = measure_cost(engine.cache, run.entry, TaggerSpec.parse(label).make(), fit_docs,
                                        predict_docs)
        out[label] = run.cost
    return out


def cost_points(table, rank, costs: Mapping[str, float | None], objective: str = "f1", overlap: str = "greedy",
                budget: float | None = None, option: str = "--budget"):
    """Every (threshold, subset) of voting over the members of a candidate
    table, with its summed cost and its objective on the table's documents
    (``ensemble.budget.SubsetPoint``); ``ensemble.budget.pareto_front`` keeps
    the undominated ones. ``budget`` leaves out the subsets above it."""
    names = table.member_names
    vector = cost_vector(names, budget_costs(costs), option)
    scorer = SubsetScorer(table, rank, objective, overlap)
    return score_subsets(scorer, names, vector, affordable_subsets(vector, budget, option))


__all__ = [
    "DEFAULT_FOLDS", "LEFT_OUT_AT_NONE", "budget_costs", "key_params", "cost_points", "resolve_costs", "MethodRun", "PruneResult", "learned", "load_members", "make_search", "oof_estimator", "operating_point_record", "pruning_objective",
    "parse_grid", "parse_members", "parse_params", "prune_members", "pruning_variant", "run_ensemble", "run_method",
]
