"""Comparing systems on the same test documents: scores and paired tests.

A comparison takes the predictions of several systems on one gold set,
scores each by one criterion (strict micro by default), and tests every
system against a reference (the first given, or the best) with the chosen
paired tests; p-values of one comparison are Holm-corrected together. Next
to F1, each system's entity and token leak rates with 95% document-bootstrap
intervals (``studies.leaks``), and the leak of the union of the compared
members as the ceiling: no ensemble of them leaks less.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..corpus.document import Document
from ..taggers.prediction import DocumentPrediction
from .significance import TESTS, PairedCounts, TestResult, holm
from .summary import prediction_spans
from .table import PValue


@dataclass
class SystemScore:
    name: str
    precision: float
    recall: float
    f1: float
    counts: object  # evaluation.DocumentCounts


@dataclass
class Comparison:
    criterion: str
    reference: str
    scores: dict[str, SystemScore]
    tests: dict[str, dict[str, TestResult]] = field(default_factory=dict)  # system -> test -> result
    adjusted: dict[str, dict[str, float]] = field(default_factory=dict)  # system -> test -> Holm p
    leaks: dict[str, dict] = field(default_factory=dict)  # system -> unit -> "all"/category -> studies.leaks.Leak
    ceiling: dict | None = None  # the leaks of the members' union
    ceiling_of: tuple[str, ...] = ()  # the members whose union it is

    def not_different_from_reference(self, system: str, test: str, alpha: float = 0.05) -> bool:
        return system == self.reference or self.adjusted[system][test] >= alpha


def compare_systems(
    gold: Sequence[Document], systems: Mapping[str, Mapping[str, DocumentPrediction]], *,
    criterion: str = "strict", reference: str | None = "best", tests: Sequence[str] = ("randomization",),
    trials: int = 10_000, seed: int = 0, members: Sequence[str] | None = None,
) -> Comparison:
    """``reference``: a system name, ``"best"`` (highest F1) or None (the
    first). ``members``: the systems whose union is the leak ceiling (default
    all)."""
    from ..evaluation import Scorer
    from .leaks import leak_table, union_spans

    unknown = [t for t in tests if t not in TESTS]
    if unknown:
        raise ValueError(f"unknown test(s) {unknown}; choose from {sorted(TESTS)}")
    if len(systems) < 1:
        raise ValueError("no systems to compare")
    scorer = Scorer(gold, criterion=criterion)
    scores = {}
    for name, preds in systems.items():
        counts = scorer.counts(prediction_spans(gold, preds))
        p, r, f = counts.prf()
        scores[name] = SystemScore(name, p, r, f, counts)
    if reference in (None, ""):
        reference = next(iter(systems))
    elif reference == "best":
        reference = max(scores, key=lambda n: scores[n].f1)
    elif reference not in scores:
        raise ValueError(f"reference {reference!r} is not among the systems {list(scores)}")
    comp = Comparison(criterion, reference, scores)
    spans = {name: prediction_spans(gold, preds) for name, preds in systems.items()}
    comp.leaks = {name: leak_table(gold, s, seed=seed) for name, s in spans.items()}
    comp.ceiling_of = tuple(members) if members else tuple(systems)
    if len(comp.ceiling_of) > 1:
        comp.ceiling = leak_table(gold, union_spans(gold, {n: spans[n] for n in comp.ceiling_of}), seed=seed)
    others = [n for n in scores if n != reference]
    for name in others:
        pc = PairedCounts.from_document_counts(scores[reference].counts, scores[name].counts)
        comp.tests[name] = {}
        for test in tests:
            kwargs = {"trials": trials, "seed": seed} if test == "randomization" else (
                {"samples": trials, "seed": seed} if test == "bootstrap" else {})
            comp.tests[name][test] = TESTS[test](pc, **kwargs)
    for test in tests:
        adj = holm([comp.tests[n][test].p_value for n in others]) if others else []
        for name, p in zip(others, adj):
            comp.adjusted.setdefault(name, {})[test] = p
    return comp


def comparison_rows(comp: Comparison, tests: Sequence[str]) -> tuple[tuple[list[str], list[list]], tuple[list[str], list[list]]]:
    """Two narrow tables (each fits 80 columns): the scores of every system
    and its F1 difference to the reference; then one row per (system, test):
    p-value, Holm-corrected p-value and, for the bootstrap, the 95% CI of the
    difference."""
    ref_f1 = comp.scores[comp.reference].f1
    scores = [[name + (" (ref)" if name == comp.reference else ""), s.precision, s.recall, s.f1,
               None if name == comp.reference else s.f1 - ref_f1] for name, s in comp.scores.items()]
    rows = []
    for name in comp.scores:
        if name == comp.reference:
            continue
        for t in tests:
            res = comp.tests[name][t]
            # tests give ref - system; show system - ref
            ci = f"[{-res.ci_high:+.4f}, {-res.ci_low:+.4f}]" if t == "bootstrap" else ""
            rows.append([name, t, PValue(res.p_value), PValue(comp.adjusted[name][t]), ci])
    return (["system", "P", "R", "F1", "ΔF1 vs ref"], scores), (["system", "test", "p", "p (Holm)", "95% CI of ΔF1"], rows)


def leak_rows(comp: Comparison) -> tuple[list[str], list[list]]:
    """A narrow table (``studies.leaks.leak_rows``): F1, then the entity and
    token leak rates in percent with their 95% document-bootstrap intervals;
    the last row is the members' union, the ceiling."""
    from . import leaks

    return leaks.leak_rows(comp.leaks, {name: s.f1 for name, s in comp.scores.items()}, comp.ceiling)


def compare_cached(workspace, corpus_name: str, systems: Sequence[str], *, criterion: str = "strict",
                   tests: Sequence[str] = ("t-test", "randomization", "bootstrap"), trials: int = 10_000,
                   reference: str = "best", folds: int = 10, seed: int = 0, jobs: int = 1,
                   progress: bool = True) -> tuple[object, Comparison]:
    """The ``compare`` step: (corpus, comparison) of ``systems`` (tagger
    specs, or ``ensemble.<method>[:hash=PREFIX]`` for cached ensembles) on
    the corpus's test split. Every name is checked before any prediction is
    computed; predictions missing from the cache are computed first (as
    ``cv`` would)."""
    from ..ensemble.caching import is_ensemble_spec, load_ensemble_member
    from ..errors import ParameterError
    from ..evaluation.criteria import get_criterion
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation, parse_tagger_specs

    try:
        get_criterion(criterion)
    except ValueError as exc:
        raise ParameterError(str(exc), "--criterion") from None
    ensembles = [s.strip() for s in systems if is_ensemble_spec(s)]
    regular = [s for s in systems if not is_ensemble_spec(s)]
    specs = parse_tagger_specs(",".join(regular), "SYSTEMS") if regular else []
    labels = [s.label for s in specs] + ensembles
    if len(set(labels)) < 2:
        raise ParameterError("name at least two different systems", "SYSTEMS")
    if reference not in ("best", *labels):
        raise ParameterError(f"{reference!r} is not one of the systems {labels} (or 'best')", "--reference")
    corpus = workspace.load(corpus_name)
    engine = CrossValidation(corpus.train, {"test": corpus.test}, PredictionCache(workspace.cache_dir),
                             k=folds, seed=seed)
    runs = engine.run(specs, jobs=jobs, progress=progress) if specs else {}
    predictions = {label: run.targets["test"] for label, run in runs.items()}
    for text in ensembles:
        predictions[text] = load_ensemble_member(engine, text, oof=False).test
    try:
        comp = compare_systems(corpus.test, {label: predictions[label] for label in labels},
                               criterion=criterion, reference=reference, tests=tests, trials=trials, seed=seed,
                               members=[s.label for s in specs] or None)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    return corpus, comp
