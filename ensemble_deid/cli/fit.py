"""``ensemble-deid fit``: train a tagger or an ensemble on a whole training set
and save it as a model bundle for ``deidentify``."""
from __future__ import annotations

import click

from .common import fail_on_error, objective_option, workspace_of
from .ensemble import METHOD_NAMES, load_members, parse_grid, parse_params


@click.command("fit")
@click.option("--corpus", "corpus_name", required=True, help="Registered or embedded corpus to train on (its train split).")
@click.option("--method", type=click.Choice(METHOD_NAMES), help="Ensemble method (chosen as 'ensemble' chooses it).")
@click.option("--members", help="Comma-separated member taggers (as for cv --taggers).")
@click.option("--tagger", "tagger_spec", help="Save a single tagger instead of an ensemble (a spec as for cv --taggers).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Fix a method parameter (repeatable).")
@click.option("--grid", "grid", multiple=True, metavar="KEY=V1|V2", help="Values cross-validation chooses from (repeatable).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the members' CV and of the selection.")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment.")
@objective_option()
@click.option("--out", required=True, type=click.Path(file_okay=False), help="New folder for the model bundle.")
@click.option("--verify/--no-verify", default=True, help="Check that the bundle reproduces the cached test predictions "
              "of the 'ensemble' command (ensembles) and report its test scores.")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def fit(ctx, corpus_name, method, members, tagger_spec, params, grid, k, seed, objective, out, verify, no_progress):
    """Fit every member on the whole training split and the ensemble METHOD on
    the members' cached out-of-fold predictions (exactly the choices the
    'ensemble' command makes; members missing from the cache are
    cross-validated first), then write one versioned, checksummed bundle to
    OUT. With --tagger, fit and save that one tagger."""
    from pathlib import Path

    if Path(out).exists():
        raise click.BadParameter(f"{out} already exists (choose a new folder)", param_hint="--out")
    if tagger_spec and (method or members):
        raise click.UsageError("give either --tagger or --method with --members")
    if not tagger_spec and not (method and members):
        raise click.UsageError("give --method and --members (an ensemble) or --tagger (one tagger)")
    echo = lambda s: click.echo(s, err=True)  # noqa: E731
    with fail_on_error():
        if tagger_spec:
            summary = fit_single(ctx, corpus_name, tagger_spec, out, echo)
        else:
            summary = fit_ensemble(ctx, corpus_name, method, members, params, grid, k, seed, objective, out, verify,
                                   no_progress, echo)
    click.echo(summary)


def _info(corpus, train_fingerprint: str) -> dict:
    labels = sorted({a.label for d in corpus.train for a in d.annotations})
    return {"labels": labels, "corpus": {"name": corpus.name, "train_fingerprint": train_fingerprint,
                                         "train_documents": len(corpus.train),
                                         "label_map": corpus.spec.label_map if corpus.spec else None}}


def fit_single(ctx, corpus_name, spec_text, out, echo) -> str:
    import time

    from ..corpus.fingerprint import corpus_fingerprint
    from ..deid import Deidentifier
    from ..deid.model import fit_member
    from ..studies.summary import strict_prf
    from .cv import parse_tagger_specs

    (spec,) = parse_tagger_specs(spec_text, "--tagger")
    corpus = workspace_of(ctx).load(corpus_name)
    echo(f"fitting {spec.label} on {len(corpus.train)} training documents")
    t0 = time.perf_counter()
    tagger = fit_member(spec, corpus.train)
    model = Deidentifier({spec.label: tagger}, None)
    test = {p.doc_id: p for p in model.predict(corpus.test)}
    p, r, f1 = strict_prf(corpus.test, test)
    info = _info(corpus, corpus_fingerprint(corpus.train))
    info["scores"] = {"test_strict": {"precision": p, "recall": r, "f1": f1, "documents": len(corpus.test)}}
    model.save(out, info)
    return (f"saved {spec.label} to {out} (fitted in {time.perf_counter() - t0:.1f} s); "
            f"test strict P {p:.4f} R {r:.4f} F1 {f1:.4f}")


def operating_point_record(learner) -> dict:
    """The objective's chosen operating point, whether its targets were met on
    the out-of-fold data, and the held-out curve of the other points (what a
    bundle can be re-pointed to without retraining)."""
    from ..ensemble.objective import parse_objective

    model = learner.best_estimator_
    point = getattr(model, "operating_point_", None) or model.get_params().get("operating_point")
    out = {"operating_point": point}
    op = getattr(learner, "operating_search_", None)
    if op is not None:
        out["targets_reached"] = op.reached
        out["curve"] = op.curve(parse_objective(learner.objective).base.criterion)
    elif getattr(model, "search_", None) is not None:
        out["targets_reached"] = {"*": model.search_.reached, **getattr(model, "category_reached_", {})}
    return out


def fit_ensemble(ctx, corpus_name, method, members, params, grid, k, seed, objective, out, verify, no_progress, echo) -> str:
    import time
    from pathlib import Path

    from ..ensemble import GridSearch, make_method
    from ..ensemble.caching import jsonable
    from ..deid import Deidentifier
    from ..deid.model import fit_member, needed_members
    from ..studies.summary import strict_prf
    from .ensemble import parse_members, run_ensemble

    specs, ensembles, order = parse_members(members)
    if ensembles:
        raise click.BadParameter("a bundle's members must be taggers, not cached ensembles", param_hint="--members")
    try:
        learner = GridSearch(make_method(method, **parse_params(params, "--param")), parse_grid(grid),
                             folds=k, seed=seed, objective=objective)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--param")
    corpus, engine, runs = load_members(ctx, corpus_name, members, k, seed, no_progress)
    # The 'ensemble' command's own path: its cached test predictions are the reference.
    result = run_ensemble(engine, learner, method, runs, oof=False, echo=echo)
    if not learner.is_fitted():  # reused from the cache: the same deterministic fit
        learner.fit({label: run.oof for label, run in runs.items()}, corpus.train)
    chosen = learner.best_estimator_
    import tempfile

    with tempfile.TemporaryDirectory(prefix="edeid-fit-") as tmp:  # can it be saved? (before hours of training)
        chosen.save(Path(tmp) / "method")
    keep = needed_members(chosen, order)
    by_label = {s.label: s for s in specs}
    fitted = {}
    t0 = time.perf_counter()
    for label in keep:
        echo(f"fitting member {label} on {len(corpus.train)} training documents")
        fitted[label] = fit_member(by_label[label], corpus.train)
    fit_seconds = time.perf_counter() - t0
    model = Deidentifier(fitted, chosen)
    info = _info(corpus, engine.train_fingerprint)
    info["selection"] = jsonable({"method": method, "best_params": learner.best_params_,
                                  "cv_best_score": learner.best_score_, "objective": objective, "folds": k,
                                  "seed": seed, "members_given": order, "members_used": keep,
                                  **operating_point_record(learner)})
    lines = [f"{method} over {len(order)} members ({len(keep)} used: {', '.join(keep)}); "
             f"parameters {learner.best_params_ or '(none to choose)'}; members fitted in {fit_seconds:.1f} s"]
    if verify:
        preds = {p.doc_id: p for p in model.predict(corpus.test)}
        differ = [d.id for d in corpus.test if preds[d.id].spans(d) != result["test"][d.id].spans(d)]
        p, r, f1 = strict_prf(corpus.test, preds)
        info["scores"] = {"test_strict": {"precision": p, "recall": r, "f1": f1, "documents": len(corpus.test)}}
        info["verification"] = {"test_documents": len(corpus.test), "documents_differing_from_ensemble_cache": len(differ)}
        lines.append(f"test strict P {p:.4f} R {r:.4f} F1 {f1:.4f}; spans identical to the cached "
                     f"'ensemble' predictions on {len(corpus.test) - len(differ)}/{len(corpus.test)} test documents")
        if differ:
            lines.append(f"warning: {len(differ)} test document(s) differ, e.g. {differ[0]!r} "
                         "(a member's fit is not reproducible here?)")
    model.save(out, info)
    lines.append(f"saved bundle to {out}")
    return "\n".join(lines)
