"""``ensemble-deid corpus synth``: write a synthetic corpus as i2b2 XML."""
from __future__ import annotations

import click

_STYLES = ("i2b2-2014", "ngrid-2016")


def _positive(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise click.BadParameter("must be at least 1", ctx=ctx, param=param)
    return value


def _non_negative(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 0:
        raise click.BadParameter("must be 0 or more", ctx=ctx, param=param)
    return value


@click.command("synth", context_settings={"show_default": True})
@click.option("--style", type=click.Choice(_STYLES), required=True,
              help="Corpus style: i2b2-2014 (longitudinal diabetic/cardiac records, files PPP-NN.xml) "
                   "or ngrid-2016 (psychiatric intake notes, files NNNN.xml).")
@click.option("--docs", "n_docs", type=int, default=100, callback=_positive,
              help="Number of documents (records) to write.")
@click.option("--seed", type=int, default=0, callback=_non_negative,
              help="Random seed: the same seed and generator version give byte-identical files.")
@click.option("--out", type=click.Path(file_okay=False, writable=True), required=True,
              help="Output folder (created; must not already hold a corpus unless --overwrite).")
@click.option("--split", type=click.Choice(("train", "test")), default="train",
              help="Split flavour: test sees rare date, age and name forms four times and rare sentence patterns ten times as often, and numbers "
                   "its patients from another range (2014: 600+, 2016: 5001+).")
@click.option("--first-id", type=int, default=None, callback=_non_negative,
              help="First patient (2014) or note (2016) number instead of the split's default.")
@click.option("--overwrite", is_flag=True, default=False,
              help="Replace the .xml files and SYNTH.json already in --out.")
def synth(style: str, n_docs: int, seed: int, out: str, split: str, first_id: int | None,
          overwrite: bool) -> None:
    """Generate a synthetic corpus with gold PHI annotations (i2b2 XML).

    Prints counts and the category mix against the real corpus the style
    imitates; never note text.
    """
    from ..corpus.synth import REAL_TEST_COUNTS, category_counts, category_mix, synthesize
    from ..corpus.synth.mix import CATEGORIES, proportions

    try:
        docs = synthesize(style, n_docs, seed, out, split=split, first_id=first_id, overwrite=overwrite)
    except FileExistsError as exc:
        raise click.BadParameter(f"{out}: already holds a corpus; pass --overwrite to replace it", param_hint="--out") from None
    except ValueError as exc:  # more patients or notes than the 3- or 4-digit ids allow
        raise click.BadParameter(str(exc), param_hint="--docs") from None
    counts = category_counts(docs)
    mix = category_mix(docs)
    real = proportions(REAL_TEST_COUNTS[style])
    n_phi = sum(counts.values())
    n_tokens = sum(len(d.tokens) for d in docs)
    groups = len({d.group for d in docs})
    click.echo(f"wrote {len(docs)} documents ({groups} patients, {n_tokens} tokens, {n_phi} PHI) to {out}")
    click.echo(f"{'category':<12}{'count':>7}{'share':>8}{'real':>8}")
    for c in CATEGORIES:
        click.echo(f"{c:<12}{counts[c]:>7}{100 * mix[c]:>7.1f}%{100 * real[c]:>7.1f}%")
