"""``ensemble-deid study`` and ``ensemble-deid demo``."""
from __future__ import annotations

import os
import sys
import time

import click

from .common import SuggestingChoice, fail_on_error, objective_option, workspace_of


def _available(specs, log):
    """studies.demo.available_taggers, imported only when run (keeps --help fast)."""
    from ..studies.demo import available_taggers

    return available_taggers(specs, log)


def _run_study(ctx, config, out, progress, skipped=None):
    from ..studies.study import Study
    from ..studies.summary import study_summary

    ws = workspace_of(ctx)
    with fail_on_error():
        # (loky's "worker stopped" warning is silenced where the CV runs, in the engine)
        result = Study(ws, config, log=lambda m: click.echo(m, err=True), progress=progress,
                       skipped=skipped).run(out)
    styled = sys.stdout.isatty()
    for table in (result.base_table, result.ensemble_table, result.leak_table):
        click.echo()
        click.echo(table.terminal(styled=styled))
    click.echo()
    click.echo(study_summary(result, skipped or {}))
    return result


@click.command()
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), help="Study TOML file (see docs/guide.md).")
@click.option("--corpus", "corpora", multiple=True, help="Corpus (repeat for a cross-corpus study of two); overrides the config.")
@click.option("--taggers", default=None, help="Comma-separated tagger specs; overrides the config.")
@click.option("--methods", default=None, help="Comma-separated ensemble methods; overrides the config (default: all "
              "six); --methods \"\" runs no ensemble.")
@click.option("--folds", type=int, default=None, help="Cross-validation folds, at least 2 (config default 10).")
@click.option("--jobs", type=int, default=None, help="Parallel jobs for the base taggers, or -1 for every core (config default 1).")
@click.option("--seed", type=int, default=None, help="Seed of folds and resampling tests (config default 0).")
@click.option("--test", type=SuggestingChoice(["t-test", "randomization", "bootstrap"]), default=None, help="Significance test behind the asterisks (config default randomization).")
@click.option("--trials", type=int, default=None, help="Randomization swaps / bootstrap resamples (config default 10000).")
@objective_option("every ensemble's selection", default=None)
@click.option("--no-union", is_flag=True, help="Do not train on the union of two corpora.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Results folder (default: WORKSPACE/results/NAME-TIMESTAMP).")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def study(ctx, config_path, corpora, taggers, methods, folds, jobs, seed, test, trials, objective, no_union, out,
          no_progress):
    """Base-tagger and ensemble tables (with significance marks), plots and a
    manifest, for one corpus or a cross-corpus pair (A, B and A∪B models)."""
    from ..errors import EnsembleDeidError
    from ..studies.study import StudyConfig
    from ..experiment.cv import parse_tagger_specs, split_specs

    if taggers:
        with fail_on_error():
            parse_tagger_specs(taggers)  # clear errors for unknown taggers or parameters
    overrides = {
        "corpora": list(corpora) or None,
        "taggers": split_specs(taggers) if taggers else None,
        "methods": _methods(methods),
        "folds": folds, "jobs": jobs, "seed": seed, "test": test, "trials": trials, "objective": objective,
        "union": False if no_union else None,
    }
    try:
        if config_path:
            config = StudyConfig.load(config_path, **overrides)
        else:
            if not overrides["corpora"] or not overrides["taggers"]:
                raise click.UsageError("give --config, or at least --corpus and --taggers")
            config = StudyConfig(**{k: v for k, v in overrides.items() if v is not None})
    except EnsembleDeidError as exc:  # StudyConfig.validate: the one check of config and options alike
        raise click.UsageError(str(exc))
    _run_study(ctx, config, out, not no_progress)


def _methods(value: str | None) -> list[str] | None:
    """--methods: None keeps the config's; an empty value means no ensembles."""
    if value is None:
        return None
    if not value.strip():
        return []
    methods = [m.strip() for m in value.split(",")]
    if not all(methods):
        raise click.BadParameter(f"an empty method name in {value!r}", param_hint="--methods")
    return methods


@click.command()
@click.option("--quick", is_flag=True, help="A small version (3 taggers, 3 folds, 4 methods): the first result to try (its measured time: "
                   "benchmarks/results/commands.md).")
@click.option("--jobs", type=int, default=2, help="Parallel jobs for the base taggers.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Results folder (default: WORKSPACE/results/demo-TIMESTAMP).")
@click.option("--no-progress", is_flag=True, help="Do not show progress bars.")
@click.pass_context
def demo(ctx, quick, jobs, out, no_progress):
    """The whole cross-corpus study on the embedded synthetic corpora: every
    available tagger trained on synthetic-2014, synthetic-2016 and their union,
    10-fold CV, all six ensembles, significance, tables and plots."""
    from ..studies.demo import demo_config
    from ..studies.study import cpu_seconds
    from ..studies.summary import time_spent

    t0, cpu0, load0 = time.perf_counter(), cpu_seconds(), os.getloadavg()[0]
    with fail_on_error():
        config, skipped = demo_config(quick, jobs, log=lambda m: click.echo(m, err=True))
    _run_study(ctx, config, out, not no_progress, skipped)
    spent = time_spent(time.perf_counter() - t0, cpu_seconds(ended_workers=True) - cpu0, [load0, os.getloadavg()[0]])
    click.echo(f"demo finished: {spent}")
