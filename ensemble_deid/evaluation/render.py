"""Rendering a report: a text table, JSON, tidy CSV (one number a row), or
the official programs' blocks. The report is the scores; how they are shown
is this module's alone (``render(report, "table")``)."""
from __future__ import annotations

import io
import json

from .report import EvaluationReport

FORMATS = ("table", "json", "csv", "i2b2", "ngrid")

# The official programs' blocks: (criterion, label); per category, labels with
# "{}" for the element name. Both programs (2014 i2b2 and 2016 N-GRID share
# this code) print these labels as written here, misspellings included:
# "HIPPA Token", "Binary HIPPA Token", "{} HIPPA Token", and "{} Binary HIPAA
# Strict" for the per-category HIPAA strict block, which is not binary.
_OFFICIAL_BLOCKS = (
    ("token", "Token"), ("strict", "Strict"), ("relaxed", "Relaxed"),
    ("hipaa_token", "HIPPA Token"), ("hipaa_strict", "HIPAA Strict"), ("hipaa_relaxed", "HIPAA Relaxed"),
    ("binary_token", "Binary Token"), ("binary_strict", "Binary Strict"),
    ("hipaa_binary_token", "Binary HIPPA Token"), ("hipaa_binary_strict", "Binary HIPAA Strict"),
)
_OFFICIAL_CATEGORY_BLOCKS = (
    ("token", "{} Token"), ("strict", "{} Strict"), ("hipaa_token", "{} HIPPA Token"),
    ("hipaa_strict", "{} Binary HIPAA Strict"),
)
# The elements of the per-category blocks (every PHI element but <PHI>), in
# the order both programs print them: that of their Python 2 dict of tag
# classes (fixed, as Python 2 does not randomise string hashes).
OFFICIAL_CATEGORIES = ("CONTACT", "NAME", "DATE", "AGE", "PROFESSION", "ID", "OTHER", "LOCATION")


def render(report: EvaluationReport, fmt: str = "table", **kwargs) -> str:
    if fmt == "table":
        return render_table(report, **kwargs)
    if fmt in ("i2b2", "ngrid"):
        return render_official(report, fmt)
    if fmt == "json":
        return json.dumps(report.to_dict(documents=kwargs.get("documents", False)), indent=2) + "\n"
    if fmt == "csv":
        return render_csv(report)
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def _f(x: float) -> str:
    return f"{x:.4f}"


def _count(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


# Every table of the text report fits 80 columns (issue 34 item 8: the micro and
# macro figures side by side made 124; MEDDOCAN's subtype names overran theirs).
WIDTH = 80


def _macro_cells(M) -> str:
    return f"{f'{_f(M.precision)} ({M.precision_sd:.2f})':>16}{f'{_f(M.recall)} ({M.recall_sd:.2f})':>17}{_f(M.f1):>10}"


MACRO_HEAD = f"{'macro P (SD)':>16}{'macro R (SD)':>17}{'macro F1':>10}"


def _labelled(rows: list[tuple[str, str]], header: str, label_width: int) -> list[str]:
    """Lines of ``label`` + figures: the label column as wide as its longest
    label (at least ``label_width``) while the lines fit ``WIDTH``; a label
    too long for that gets a line of its own, its figures on the next."""
    figures = max([len(header)] + [len(f) for _, f in rows])
    width = max([label_width] + [len(label) + 2 for label, _ in rows])
    width = max(min(width, WIDTH - figures), 1)
    lines = []
    for label, f in rows:
        if len(label) > width - 1:
            lines += [label, " " * width + f]
        else:
            lines.append(f"{label:<{width}}{f}")
    return lines


def render_table(report: EvaluationReport, breakdown: str = "category", breakdown_criteria=None, documents: bool = False) -> str:
    lines = [f"Documents scored: {report.n_documents}"]
    if report.missing:
        lines.append(f"Gold documents without system output: {len(report.missing)} ({report.missing_policy})")
    if report.extra:
        lines.append(f"System documents without gold (ignored): {len(report.extra)}")
    lines.append("")
    micro = f"{'TP':>8}{'FP':>8}{'FN':>8}  {'P':>7}{'R':>8}{'F1':>8}{'F2':>8}"
    body = _labelled([("criterion", micro)] + [
        (name, f"{_count(r.micro.tp):>8}{_count(r.micro.fp):>8}{_count(r.micro.fn):>8}  {_f(r.micro.precision):>7}"
               f"{_f(r.micro.recall):>8}{_f(r.micro.f1):>8}{_f(r.micro.f2):>8}") for name, r in report.results.items()],
        micro, 22)
    lines += [body[0], "-" * len(body[0])] + body[1:]
    lines += [""] + _labelled([("macro over documents", MACRO_HEAD)]
                              + [(name, _macro_cells(r.macro)) for name, r in report.results.items()], MACRO_HEAD, 22)
    semeval = {k: r for k, r in report.results.items() if r.outcomes is not None}
    if semeval:
        head = "".join(f"{k:>9}" for k in ("COR", "INC", "PAR", "MIS", "SPU"))
        lines += [""] + _labelled([("SemEval 2013", head)] + [
            (name, "".join(f"{_count(res.outcomes[k]):>9}" for k in ("correct", "incorrect", "partial", "missed", "spurious")))
            for name, res in semeval.items()], head, 22)
    shown = report.shown_names()
    if report.leak is not None:
        head = f"{'tokens':>16}{'rate':>9}{'characters':>18}{'rate':>9}"
        rows = [("all", report.leak.overall), ("HIPAA", report.leak.hipaa)] + [
            (shown.get(k, k), v) for k, v in report.leak.by_category.items() if v.tokens or v.chars
        ]
        lines += [""] + _labelled([("leak (gold PHI uncovered)", head)] + [
            (name, f"{f'{r.leaked_tokens}/{r.tokens}':>16}{_f(r.token_rate):>9}{f'{r.leaked_chars}/{r.chars}':>18}"
                   f"{_f(r.char_rate):>9}") for name, r in rows], head, 28)
    if breakdown in ("category", "subtype"):
        wanted = breakdown_criteria or [c for c in ("strict", "token", "hipaa_strict", "hipaa_token") if c in report.results]
        for name in wanted:
            res = report.results.get(name)
            if res is None:
                continue
            groups = res.by_category if breakdown == "category" else res.by_subtype
            if not groups:
                continue
            scored = {g: s for g, s in groups.items() if s.tp + s.fp + s.fn}
            # counts as wide as the largest needs (MEDDOCAN's 35-character subtype names fit beside them)
            n = max([2] + [len(_count(x)) for s in scored.values() for x in (s.tp, s.fp, s.fn)]) + 2
            head = f"{'TP':>{n}}{'FP':>{n}}{'FN':>{n}}  {'P':>7}{'R':>8}{'F1':>8}"
            lines += ["", f"{name} by {breakdown}"] + _labelled([(breakdown, head)] + [
                (shown.get(g, g), f"{_count(s.tp):>{n}}{_count(s.fp):>{n}}{_count(s.fn):>{n}}  {_f(s.precision):>7}"
                                  f"{_f(s.recall):>8}{_f(s.f1):>8}") for g, s in scored.items()], head, 26)
            macros = {g: M for g, M in (res.category_macro if breakdown == "category" else {}).items() if g in scored}
            if macros:
                lines += ["", f"{name} by {breakdown}, macro over documents"] + _labelled(
                    [(breakdown, MACRO_HEAD)] + [(shown.get(g, g), _macro_cells(M)) for g, M in macros.items()],
                    MACRO_HEAD, 26)
    return "\n".join(lines) + "\n"


def _official_f1(p: float, r: float) -> float:
    """The programs' F_beta(p, r) = 2 * ((p * r) / (p + r)). Their macro
    figures are numpy floats, so 0/0 gives nan instead of raising, and the
    program's ZeroDivisionError guard (0.0) only fires for the micro figures,
    which are Python floats."""
    if p + r == 0:
        return float("nan")
    return 2 * ((p * r) / (p + r))


def _micro_f1(p: float, r: float) -> float:
    return _official_f1(r, p) if p + r else 0.0


def _official_block(label: str, n_docs: int, micro, macro, with_macro: bool) -> list[str]:
    """One summary block, laid out and rounded as the official program prints
    it: "{:.4}" figures, "{:.2}" standard deviations. The 2014 program has
    25/15/15/20 columns (Measure, Macro (SD), Micro (Primary)); the 2016 one
    35/15/20 columns without the macro one."""
    mp, mr = micro.precision, micro.recall
    if not with_macro:
        row = "{:<35}{:<15}{:<20}"
        return [
            row.format(f"{label} ({n_docs})", "Measure", "Micro (Primary)"),
            "{:-<35}{:-<15}{:-<20}".format("", "", ""),
            row.format("Total", "Precision", f"{mp:.4}"),
            row.format("", "Recall", f"{mr:.4}"),
            row.format("", "F1", f"{_micro_f1(mp, mr):.4}"),
            "",
            "",
        ]
    # numpy's mean and std of no documents are nan
    nan = float("nan")
    Mp, Mp_sd, Mr, Mr_sd = ((macro.precision, macro.precision_sd, macro.recall, macro.recall_sd)
                            if n_docs else (nan, nan, nan, nan))
    row = "{:<25}{:<15}{:<15}{:<20}"
    return [
        row.format(f"{label} ({n_docs})", "Measure", "Macro (SD)", "Micro (Primary)"),
        "{:-<25}{:-<15}{:-<15}{:-<20}".format("", "", "", ""),
        row.format("Total", "Precision", f"{Mp:.4} ({Mp_sd:.2})", f"{mp:.4}"),
        row.format("", "Recall", f"{Mr:.4} ({Mr_sd:.2})", f"{mr:.4}"),
        row.format("", "F1", f"{_official_f1(Mp, Mr):.4}", f"{_micro_f1(mp, mr):.4}"),
        "",
        "",
    ]


def render_official(report: EvaluationReport, program: str = "i2b2") -> str:
    """The blocks the official program prints: ``"i2b2"`` (2014 ``evaluate.py
    phi``: macro (SD) and micro columns) or ``"ngrid"`` (2016 N-GRID
    ``evaluate.py track1``: micro only): the ten criteria, then token, strict,
    HIPAA token and HIPAA strict per element."""
    with_macro = program == "i2b2"
    missing = [c for c, _ in _OFFICIAL_BLOCKS if c not in report.results]
    if missing:
        raise ValueError(f"the official layout needs every official criterion; missing: {', '.join(missing)}")
    n = report.n_documents
    lines: list[str] = []
    for criterion, label in _OFFICIAL_BLOCKS:
        res = report.results[criterion]
        lines += _official_block(label, n, res.micro, res.macro, with_macro)
    for category in OFFICIAL_CATEGORIES:
        for criterion, label in _OFFICIAL_CATEGORY_BLOCKS:
            res = report.results[criterion]
            micro, macro = res.by_category.get(category), res.category_macro.get(category)
            if micro is None or macro is None:
                raise ValueError(f"{criterion}: no per-category figures (evaluate with breakdowns=True)")
            lines += _official_block(label.format(category), n, micro, macro, with_macro)
    return "\n".join(lines) + "\n"


def render_csv(report: EvaluationReport) -> str:
    """Tidy rows: section, criterion, group, measure, value."""
    import csv  # only this format needs it (start-up time of the other formats)

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["section", "criterion", "group", "measure", "value"])
    shown = report.shown_names()
    for name, res in report.results.items():
        for measure, value in res.micro.to_dict().items():
            w.writerow(["micro", name, "all", measure, value])
        for measure, value in res.macro.to_dict().items():
            w.writerow(["macro", name, "all", measure, value])
        for section, groups in (("category", res.by_category), ("category_macro", res.category_macro),
                                ("subtype", res.by_subtype)):
            for g, s in groups.items():
                for measure, value in s.to_dict().items():
                    w.writerow([section, name, shown.get(g, g), measure, value])
        if res.outcomes is not None:
            for measure, value in res.outcomes.items():
                w.writerow(["semeval", name, "all", measure, value])
    if report.leak is not None:
        rows = [("all", report.leak.overall), ("HIPAA", report.leak.hipaa), *report.leak.by_category.items()]
        for g, r in rows:
            for measure, value in r.to_dict().items():
                w.writerow(["leak", "", shown.get(g, g), measure, value])
    return buf.getvalue()
