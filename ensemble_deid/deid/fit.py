"""The ``fit`` step: train a tagger or an ensemble on a whole training set
and save it as a model bundle (``bundle``) for de-identifying new notes.

An ensemble is chosen exactly as the ``ensemble`` step chooses it
(:func:`ensemble_deid.ensemble.run.run_method`: the same grid search, the
same cache entry), so its cached test predictions are the bundle's
reference. Every option is checked before any training.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..errors import ParameterError
from .model import Deidentifier, fit_member, needed_members

Say = Callable[[str], None]


def _quiet(_message: str) -> None:
    pass


@dataclass
class FitResult:
    """The saved bundle, the model in memory, its manifest's ``info`` and a
    few lines saying what was done (what the ``fit`` command prints)."""

    path: Path
    model: Deidentifier
    info: dict
    lines: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        return "\n".join(self.lines)


def _new_folder(out: str | Path) -> Path:
    from .bundle import remove_stale_partials

    out = Path(out)
    if out.exists():
        raise ParameterError(f"{out} already exists (choose a new folder)", "--out")
    remove_stale_partials(out)  # a killed fit's half-written bundle holds training words: gone before we start
    return out


def _saved(out: Path) -> list[str]:
    """What to say about a bundle just written: its manifest checksum (for
    ``deidentify --trust``) and whether it holds words of the training notes."""
    from .bundle import read_manifest, training_text_notice

    notice = training_text_notice(out)
    return [f"manifest checksum {read_manifest(out)['manifest_sha256']} (whoever receives the bundle can accept "
            f"only it: deidentify --trust)"] + ([notice] if notice else [])


def _info(corpus, train_fingerprint: str) -> dict:
    from .bundle import scheme_labels

    label_map = corpus.spec.label_map if corpus.spec else None
    labels, unknown = scheme_labels({a.label for d in corpus.train for a in d.annotations}, label_map)
    return {"labels": labels, "unknown_label_types": unknown, "corpus": {"name": corpus.name, "train_fingerprint": train_fingerprint,
                                         "train_documents": len(corpus.train),
                                         "label_map": corpus.spec.label_map if corpus.spec else None}}


def _test_scores(corpus, predictions) -> dict:
    from ..studies.summary import strict_prf

    p, r, f1 = strict_prf(corpus.test, predictions)
    return {"precision": p, "recall": r, "f1": f1, "documents": len(corpus.test)}


def fit_tagger(workspace, corpus_name: str, tagger: str, out: str | Path, log: Say = _quiet,
               shareable: int | None = None) -> FitResult:
    """Fit one tagger (a spec as for ``cv --taggers``) on the corpus's
    training split, score it on the test split and save it to ``out``.
    ``shareable``: train without the words of fewer training documents
    (see ``shareable``)."""
    from ..corpus.fingerprint import corpus_fingerprint
    from ..experiment.cv import parse_tagger_specs

    out = _new_folder(out)
    specs = parse_tagger_specs(tagger, "--tagger")
    if len(specs) != 1:
        raise ParameterError(f"name one tagger, not {len(specs)} (an ensemble is --method with --members)",
                             "--tagger")
    (spec,) = specs
    corpus = workspace.load(corpus_name)
    log(f"fitting {spec.label} on {len(corpus.train)} training documents")
    t0 = time.perf_counter()
    train, manifest = corpus.train, {}
    if shareable:
        from .shareable import shareable_training

        train, manifest["shareable"] = shareable_training(corpus.train, shareable)
        member, origin = fit_member(spec, train), {"model": "trained by fit", "why": "trained for a shareable bundle"}
    else:
        from ..experiment.cache import PredictionCache

        member, origin = _member(spec, PredictionCache(workspace.cache_dir), corpus_fingerprint(corpus.train),
                                 corpus_fingerprint(corpus.test), train, log)
    model = Deidentifier({spec.label: member}, None, manifest)
    scores = _test_scores(corpus, {p.doc_id: p for p in model.predict(corpus.test)})
    info = _info(corpus, corpus_fingerprint(corpus.train))
    info["scores"] = {"test_strict": scores}
    info["member_models"] = {spec.label: origin}
    model.save(out, info)
    return FitResult(out, model, info, [
        f"saved {spec.label} to {out} (fitted in {time.perf_counter() - t0:.1f} s); "
        f"test strict P {scores['precision']:.4f} R {scores['recall']:.4f} F1 {scores['f1']:.4f}", *_saved(out)])


def _cost_record(method) -> dict:
    """A budgeted choice's budget and the kept members' summed cost (CPU s
    per million tokens); nothing for a choice made without a budget."""
    search = getattr(method, "search_", None)
    if getattr(search, "budget", None) is None:
        return {}
    return {"budget": search.budget, "cost": search.cost}


def _members_differing(outputs, test, runs) -> dict[str, int]:
    """Per fitted member, the test documents whose spans (in ``outputs``,
    the bundle's own member predictions) differ from the member's cached run
    (the CV full-training model): which member's fit did not reproduce, when
    the bundle's output differs from the ensemble's."""
    return {label: sum(preds[d.id].spans(d) != runs[label].test[d.id].spans(d) for d in test)
            for label, preds in outputs.items()}


def _cached_test_record(cache, spec, train_fingerprint: str, test_fingerprint: str) -> tuple[Any, dict]:
    """(the tagger's cache entry, the commit record of its cached test part, {} when none)."""
    from ..experiment.cache import PartKey
    from ..experiment.cv import entry_key

    entry, _ = entry_key(spec, train_fingerprint)
    part = PartKey.predict(entry, test_fingerprint)
    return entry, (cache.read_part(part)[1] if cache.part_status(part) == "valid" else {})


def _member(spec, cache, train_fingerprint: str, test_fingerprint: str, train, log: Say) -> tuple[Any, dict]:
    """(a member fitted on all of ``train``, where it came from): the model
    cv kept when it is the one that made the member's cached test
    predictions (``experiment.kept``), else a new fit, saying why."""
    from ..experiment.kept import reusable

    if spec.make().external:
        log(f"member {spec.label}: an external system (nothing to train)")
        return fit_member(spec, train), {"model": "external"}
    entry, record = _cached_test_record(cache, spec, train_fingerprint, test_fingerprint)
    tagger, why = reusable(cache.root, entry, record) if record else (None, "no cached test predictions")
    if tagger is not None:
        log(f"member {spec.label}: reused the model cv kept (the one that made its cached test predictions; "
            f"no training)")
        return tagger, {"model": "kept by cv", "model_sha256": record["model_sha256"]}
    log(f"member {spec.label}: training on {len(train)} documents ({why})")
    return fit_member(spec, train), {"model": "trained by fit", "why": why}


def oof_leak_record(train, oof) -> dict:
    """Per training document, the gold PHI tokens and entities of each
    category and how many of them the ensemble's out-of-fold predictions
    leak (counts only, in no particular order): what the release report
    bootstraps over documents for the expected leak of a release."""
    from ..studies.leaks import per_document_leaks
    from ..studies.summary import prediction_spans

    per_doc = per_document_leaks(train, prediction_spans(train, oof))
    return {"unit": "gold PHI (tokens, entities) and leaked, per category", "documents": [
        {key: {unit: [int(n), int(k)] for unit, (n, k) in units.items()} for key, units in doc.items()}
        for doc in per_doc]}


def _review_record(learner, runs, keep: Sequence[str], train, folds, budget, labels: Sequence[str],
                   log: Say) -> tuple[dict, str]:
    """The review model of the chosen ensemble (its own out-of-fold outputs,
    the kept members' items) as the manifest keeps it, and a line saying what
    the budget reaches out of fold."""
    from ..ensemble.review_risk import fit_review, out_of_fold_outputs
    from ..ensemble.run import oof_estimator

    log(f"review: the ensemble's own out-of-fold outputs ({folds.k} folds), then the risk model and the budget {budget}")
    oof = {label: run.oof for label, run in runs.items()}
    outputs, gaps = out_of_fold_outputs(oof_estimator(learner, learner.best_params_), oof, train, folds)
    model = fit_review(train, outputs, gaps, {n: oof[n] for n in keep}, folds, budget, labels=labels)[0]
    at = model.cv["chosen"]
    said = (f"review budget {budget}: out of fold, binary-token recall {model.cv['recall_before']:.4f} -> "
            f"{at['recall']:.4f} reviewing {at['items_per_note']:.1f} items per note ({at['tokens_share']:.2%} of "
            f"tokens)" + ("" if model.reached else "; target NOT reached on the out-of-fold data (all items)"))
    return model.to_dict(), said


def _origin_count(origins: Mapping[str, dict]) -> str:
    kept = sum(o["model"] == "kept by cv" for o in origins.values())
    trained = sum(o["model"] == "trained by fit" for o in origins.values())
    return f"{kept} kept by cv and reused, {trained} trained"


def fit_ensemble(workspace, corpus_name: str, method: str, members: str, out: str | Path,
                 params: Mapping[str, Any] | None = None, grid: Mapping[str, Sequence] | None = None,
                 folds: int | None = None, seed: int = 0, objective: str = "f1", verify: bool = True,
                 progress: bool = True, log: Say = _quiet, warn: Say = _quiet,
                 budget: float | str | None = None, review: str | None = None) -> FitResult:
    """Fit every member on the whole training split (reusing the model cv
    kept for it when that model made its cached test predictions) and the
    ensemble ``method`` on the members' out-of-fold predictions, chosen exactly as
    :func:`~ensemble_deid.ensemble.run.run_method` chooses it (members
    missing from the cache are cross-validated first), and save one
    bundle to ``out``. ``verify`` checks that the bundle reproduces the
    ``ensemble`` step's cached test predictions and records its scores.
    The manifest's ``selection`` records the objective, the chosen operating
    point, whether its targets were met out of fold and the held-out curve.
    ``budget`` (voting-pruned): the kept members' summed inference cost, in
    CPU seconds per million tokens, may reach it; chosen as ``ensemble
    --budget`` chooses, recorded with that cost in ``selection``. The
    manifest's ``oof_leaks`` are the chosen ensemble's out-of-fold leak
    counts per training document (its out-of-fold predictions: cached by
    the ``ensemble`` step, computed here when missing), from which every
    release report bootstraps the leak to expect.
    ``review`` (``recall>=R``, ``items<=N`` or None): the review model and
    budget (``ensemble.review_risk``), fitted on the ensemble's own
    out-of-fold outputs and kept in the manifest's ``review``."""
    import tempfile

    from ..ensemble.caching import jsonable
    from ..ensemble.review_risk import parse_budget

    try:
        review_budget = parse_budget(review)
    except ValueError as exc:
        raise ParameterError(str(exc), "--review") from None
    from ..ensemble.run import operating_point_record, parse_members, run_method

    out = _new_folder(out)
    specs, ensembles, order = parse_members(members)
    if ensembles:
        raise ParameterError("a bundle's members must be taggers, not cached ensembles", "--members")
    # The 'ensemble' step itself (every parameter checked before any member
    # is computed): its cached test predictions are the reference.
    done = run_method(workspace, corpus_name, method, members, params, grid, folds=folds, seed=seed,
                      objective=objective, oof=True, progress=progress, log=log, warn=warn, budget=budget)
    corpus, engine, learner = done.corpus, done.engine, done.learner
    if not learner.is_fitted():  # reused from the cache: the same deterministic fit
        learner.fit({label: run.oof for label, run in done.runs.items()}, corpus.train)
    chosen = learner.best_estimator_
    with tempfile.TemporaryDirectory(prefix="edeid-fit-") as tmp:  # can it be saved? (before hours of training)
        chosen.save(Path(tmp) / "method")
    keep = needed_members(chosen, order)
    by_label = {s.label: s for s in specs}
    fitted, origins = {}, {}
    t0 = time.perf_counter()
    for label in keep:
        fitted[label], origins[label] = _member(by_label[label], engine.cache, engine.train_fingerprint,
                                                engine.target_fingerprints["test"], corpus.train, log)
    fit_seconds = time.perf_counter() - t0
    model = Deidentifier(fitted, chosen)
    info = _info(corpus, engine.train_fingerprint)
    info["member_models"] = origins
    info["selection"] = jsonable({"method": method, "best_params": learner.best_params_,
                                  "params": learner.chosen_params(), "fixed": sorted(learner.fixed),
                                  "cv_best_score": learner.best_score_, "objective": learner.objective,
                                  "folds": engine.k, "seed": seed, "members_given": order, "members_used": keep,
                                  **_cost_record(chosen), **operating_point_record(learner)})
    info["oof_leaks"] = oof_leak_record(corpus.train, done.result["oof"])
    cost = info["selection"]
    lines = [f"{method} over {len(order)} members ({len(keep)} used: {', '.join(keep)}"
             + (f"; cost {cost['cost']:,.1f} within the budget of {cost['budget']:g} CPU s per million tokens"
                if cost.get("budget") is not None else "") + "); "
             f"parameters {learner.best_params_ or '(none to choose)'}"
             + (f", fixed {dict((k, learner.estimator.get_params()[k]) for k in learner.fixed)}" if learner.fixed else "")
             + f"; members fitted in {fit_seconds:.1f} s ({_origin_count(origins)})"]
    if verify:
        predicted, outputs = model.predict_with_members(corpus.test)
        preds = {p.doc_id: p for p in predicted}
        differ = [d.id for d in corpus.test if preds[d.id].spans(d) != done.test[d.id].spans(d)]
        scores = _test_scores(corpus, preds)
        info["scores"] = {"test_strict": scores}
        members = _members_differing(outputs, corpus.test, done.runs)
        info["verification"] = {"test_documents": len(corpus.test), "documents_differing_from_ensemble_cache": len(differ),
                                "member_documents_differing_from_their_cached_runs": members}
        lines.append(f"test strict P {scores['precision']:.4f} R {scores['recall']:.4f} F1 {scores['f1']:.4f}; "
                     f"spans identical to the cached 'ensemble' predictions on "
                     f"{len(corpus.test) - len(differ)}/{len(corpus.test)} test documents")
        if differ:
            apart = ", ".join(f"{label} on {n}" for label, n in members.items() if n) or "none"
            lines.append(f"warning: {len(differ)} test document(s) differ, e.g. {differ[0]!r}; members whose test "
                         f"spans differ from their cached runs: {apart} (a fit that does not reproduce here)")
    if review_budget is not None:
        info["review"], said = _review_record(learner, done.runs, keep, corpus.train, engine.folds, review_budget,
                                              info["labels"], log)
        lines.append(said)
    model.save(out, info)
    lines += [f"saved bundle to {out}", *_saved(out)]
    return FitResult(out, model, info, lines)
