"""``ensemble-deid compare``: paired significance tests between systems."""
from __future__ import annotations

import textwrap

import click

from .common import fail_on_error, workspace_of


@click.command()
@click.argument("systems", nargs=-1, required=True)
@click.option("--corpus", "corpus_name", required=True, help="Corpus whose test split the systems are compared on.")
@click.option("--criterion", default="strict", help="Evaluation criterion scored per document (see 'evaluate --help').")
@click.option("--test", "tests", multiple=True, type=click.Choice(["t-test", "randomization", "bootstrap"]),
              default=("t-test", "randomization", "bootstrap"), help="Paired test(s) to run; repeat the option for several.")
@click.option("--trials", type=click.IntRange(min=100), default=10_000, help="Randomization swaps / bootstrap resamples.")
@click.option("--reference", default="best", help="System the others are tested against: a system name, or 'best' (highest F1).")
@click.option("--folds", "k", type=click.IntRange(min=2), default=10, help="Folds of the cached cross-validation runs.")
@click.option("--seed", type=int, default=0, help="Seed of the fold assignment and of the resampling tests.")
@click.option("--jobs", type=int, default=1, help="Parallel jobs for predictions missing from the cache.")
@click.pass_context
def compare(ctx, systems, corpus_name, criterion, tests, trials, reference, k, seed, jobs):
    """Score SYSTEMS (tagger specs, e.g. crf memm:c=0.5, or cached ensembles,
    e.g. ensemble.voting-pruned[:hash=PREFIX]) on the test split and test
    each against the reference with paired tests over test documents.

    P-values are Holm-corrected across the comparisons. Predictions missing
    from the cache are computed first (as 'cv' would).
    """
    from ..studies.comparison import compare_cached, comparison_rows, leak_rows
    from ..studies.report import fitting_aliases
    from ..studies.table import render_table

    with fail_on_error():
        corpus, comp = compare_cached(workspace_of(ctx), corpus_name, systems, criterion=criterion, tests=tests,
                                      trials=trials, reference=reference, folds=k, seed=seed, jobs=jobs)
    (score_headers, scores), (test_headers, test_rows) = comparison_rows(comp, tests)
    leak_headers, leaks = leak_rows(comp)

    def render(short: dict[str, str]) -> list[str]:
        def shown(rows):
            return [[_alias(r[0], short), *r[1:]] for r in rows]
        return [render_table(score_headers, shown(scores)), render_table(test_headers, shown(test_rows), align="llrrl"),
                render_table(leak_headers, shown(leaks), align="lrrr")]

    # Long specs as aliases with their legend (the published MEDDOCAN members made 101 columns: issue 34 item 8).
    names = list(comp.scores)
    tables = render({})
    shown, legend = fitting_aliases(names, "\n".join(tables), 80)
    if legend:
        tables = render(dict(zip(names, shown)))
        legend = ["\n" + "\n".join(legend)]
    click.echo(f"\n{criterion} micro scores on {len(corpus.test)} test documents of {corpus_name!r}")
    click.echo(tables[0])
    click.echo("\n" + textwrap.fill(f"paired tests over documents against {comp.reference!r}; Holm: corrected "
                                     "across them", 80))
    click.echo(tables[1])
    click.echo("\n" + textwrap.fill("leaks: share of gold PHI entities and tokens no predicted span covers (%, 95% "
                                     "document-bootstrap interval)" + ("" if comp.ceiling is None else
                                     "; union (ceiling): every span of " + ", ".join(comp.ceiling_of)
                                     + " together, below which no ensemble of them leaks"), 80))
    click.echo(tables[2])
    for text in legend:
        click.echo(text)


def _alias(label: str, short: dict[str, str]) -> str:
    """A row label's alias; the reference keeps its " (ref)" mark, the union its name."""
    name, ref, _ = label.partition(" (ref)")
    return short.get(name, name) + ref
