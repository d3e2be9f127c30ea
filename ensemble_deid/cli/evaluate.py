"""``ensemble-deid evaluate``: score system output the way the official
i2b2 2014 / N-GRID 2016 program does (its quirks switchable), plus SemEval
schemes and leak rates. Imports stay light (numpy only) so start-up is fast."""
from __future__ import annotations

import click

from .common import fail_on_error

QUIRKS = ("hipaa_exclude_idnum", "hipaa_all_ages", "relaxed_many_to_one", "ascii_token_regex")


def _criteria(ctx, param, value):
    from ..evaluation.criteria import parse_criteria

    try:
        return parse_criteria(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param)


@click.command("evaluate")
@click.option("--gold", required=True, type=click.Path(exists=True, file_okay=False), help="Folder of gold documents (i2b2 XML or BRAT).")
@click.option("--system", "system_dir", required=True, type=click.Path(exists=True, file_okay=False), help="Folder of system output, same file names and TEXT as gold.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True, help="Output format.")
@click.option("--criteria", default="all", show_default=True, callback=_criteria,
              help="Comma-separated criteria: token, strict, relaxed, binary_token, binary_strict, hipaa_token, hipaa_strict, "
                   "hipaa_relaxed, hipaa_binary_token, hipaa_binary_strict, semeval_strict/exact/partial/type; "
                   "or the groups all, official, semeval.")
@click.option("--input-format", type=click.Choice(["auto", "xml", "brat"]), default="auto", show_default=True, help="File format of both folders.")
@click.option("--missing-as-empty", is_flag=True, help="Score gold documents without system output as empty output (their PHI counts as false negatives). Warns.")
@click.option("--skip-missing", is_flag=True, help="Leave out gold documents without system output, as the official program does. Warns.")
@click.option("--hipaa-exclude-idnum/--hipaa-include-idnum", default=True, show_default=True, help="Official quirk: the HIPAA filter never keeps ID/IDNUM.")
@click.option("--hipaa-all-ages/--hipaa-ages-over-89", default=True, show_default=True, help="Official quirk: the HIPAA filter keeps every AGE (Safe Harbor: ages over 89 only).")
@click.option("--relaxed-many-to-one/--relaxed-one-to-one", default=True, show_default=True, help="Official quirk: relaxed matching lets one gold tag absorb several system tags.")
@click.option("--ascii-tokens/--unicode-tokens", "ascii_token_regex", default=True, show_default=True, help="Official quirk: token criteria cut tags with [a-zA-Z0-9]+ (non-ASCII letters split tokens).")
@click.option("--no-quirks", is_flag=True, help="Switch every official quirk off (explicit quirk options still win).")
@click.option("--breakdown", type=click.Choice(["category", "subtype", "none"]), default="category", show_default=True, help="Per-group tables in the table format.")
@click.option("--documents", is_flag=True, help="Include per-document counts in the JSON output.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report to this file instead of standard output.")
@click.pass_context
def evaluate(ctx, gold, system_dir, fmt, criteria, input_format, missing_as_empty, skip_missing, hipaa_exclude_idnum,
             hipaa_all_ages, relaxed_many_to_one, ascii_token_regex, no_quirks, breakdown, documents, output):
    """Score the system folder against the gold folder (micro, macro, per category and subtype, leak rates)."""
    import warnings

    from ..evaluation import EvalOptions
    from ..evaluation import evaluate as run_evaluation
    from ..corpus.formats import load_directory

    if missing_as_empty and skip_missing:
        raise click.BadParameter("choose one of --missing-as-empty and --skip-missing", param_hint="--skip-missing")
    quirks = dict(hipaa_exclude_idnum=hipaa_exclude_idnum, hipaa_all_ages=hipaa_all_ages,
                  relaxed_many_to_one=relaxed_many_to_one, ascii_token_regex=ascii_token_regex)
    if no_quirks:
        for name in QUIRKS:
            if ctx.get_parameter_source(name) == click.core.ParameterSource.DEFAULT:
                quirks[name] = False
    missing = "empty" if missing_as_empty else "skip" if skip_missing else "error"
    options = EvalOptions(missing=missing, **quirks)
    with fail_on_error(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gold_docs = load_directory(gold, input_format)
        system_docs = load_directory(system_dir, input_format)
        report = run_evaluation(gold_docs, system_docs, criteria=criteria, options=options)
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    kwargs = {"documents": documents}
    if fmt == "table":
        kwargs["breakdown"] = breakdown
    text = report.render(fmt, **kwargs)
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        click.echo(text, nl=False)


if __name__ == "__main__":  # pragma: no cover
    evaluate()
