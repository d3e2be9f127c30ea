"""Rendering a report: a text table, JSON, or tidy CSV (one number a row)."""
from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # report.py imports this module lazily; a type name only here
    from .report import EvaluationReport

FORMATS = ("table", "json", "csv", "i2b2", "ngrid")

# The official programs' blocks: (criterion, label); per category, labels with
# "{}" for the element name. The N-GRID 2016 program spells some labels
# differently ("HIPPA"), and names its per-category HIPAA strict block
# "Binary HIPAA Strict" although it is not binary.
_I2B2_2014_BLOCKS = (
    ("token", "Token"), ("strict", "Strict"), ("relaxed", "Relaxed"),
    ("hipaa_token", "HIPAA Token"), ("hipaa_strict", "HIPAA Strict"), ("hipaa_relaxed", "HIPAA Relaxed"),
    ("binary_token", "Binary Token"), ("binary_strict", "Binary Strict"),
    ("hipaa_binary_token", "Binary HIPAA Token"), ("hipaa_binary_strict", "Binary HIPAA Strict"),
)
_I2B2_2014_CATEGORY_BLOCKS = (
    ("token", "{} Token"), ("strict", "{} Strict"), ("hipaa_token", "{} HIPAA Token"), ("hipaa_strict", "{} HIPAA Strict"),
)
_NGRID_2016_LABELS = {"HIPAA Token": "HIPPA Token", "Binary HIPAA Token": "Binary HIPPA Token",
                      "{} HIPAA Token": "{} HIPPA Token", "{} HIPAA Strict": "{} Binary HIPAA Strict"}
# The elements of the per-category blocks (every PHI element but <PHI>).
OFFICIAL_CATEGORIES = ("NAME", "PROFESSION", "LOCATION", "AGE", "DATE", "CONTACT", "ID", "OTHER")


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


def render_table(report: EvaluationReport, breakdown: str = "category", breakdown_criteria=None, documents: bool = False) -> str:
    lines = [f"Documents scored: {report.n_documents}"]
    if report.missing:
        lines.append(f"Gold documents without system output: {len(report.missing)} ({report.missing_policy})")
    if report.extra:
        lines.append(f"System documents without gold (ignored): {len(report.extra)}")
    lines.append("")
    head = f"{'criterion':<22}{'TP':>8}{'FP':>8}{'FN':>8}  {'P':>7}{'R':>8}{'F1':>8}{'F2':>8}  | {'macro P (SD)':>16}{'macro R (SD)':>17}{'F1':>8}"
    lines += [head, "-" * len(head)]
    for name, res in report.results.items():
        m, M = res.micro, res.macro
        lines.append(
            f"{name:<22}{_count(m.tp):>8}{_count(m.fp):>8}{_count(m.fn):>8}  {_f(m.precision):>7}{_f(m.recall):>8}"
            f"{_f(m.f1):>8}{_f(m.f2):>8}  | {f'{_f(M.precision)} ({M.precision_sd:.2f})':>16}{f'{_f(M.recall)} ({M.recall_sd:.2f})':>17}{_f(M.f1):>8}"
        )
    semeval = {k: r for k, r in report.results.items() if r.outcomes is not None}
    if semeval:
        lines += ["", f"{'SemEval 2013':<22}{'COR':>9}{'INC':>9}{'PAR':>9}{'MIS':>9}{'SPU':>9}"]
        for name, res in semeval.items():
            o = res.outcomes
            lines.append(f"{name:<22}" + "".join(f"{_count(o[k]):>9}" for k in ("correct", "incorrect", "partial", "missed", "spurious")))
    shown = report.shown_names()
    if report.leak is not None:
        lines += ["", f"{'leak (gold PHI uncovered)':<28}{'tokens':>16}{'rate':>9}{'characters':>18}{'rate':>9}"]
        rows = [("all", report.leak.overall), ("HIPAA", report.leak.hipaa)] + [
            (shown.get(k, k), v) for k, v in report.leak.by_category.items() if v.tokens or v.chars
        ]
        for name, r in rows:
            lines.append(f"{name:<28}{f'{r.leaked_tokens}/{r.tokens}':>16}{_f(r.token_rate):>9}{f'{r.leaked_chars}/{r.chars}':>18}{_f(r.char_rate):>9}")
    if breakdown in ("category", "subtype"):
        wanted = breakdown_criteria or [c for c in ("strict", "token", "hipaa_strict", "hipaa_token") if c in report.results]
        for name in wanted:
            res = report.results.get(name)
            if res is None:
                continue
            groups = res.by_category if breakdown == "category" else res.by_subtype
            if not groups:
                continue
            macros = res.category_macro if breakdown == "category" else {}
            head = f"{breakdown:<26}{'TP':>8}{'FP':>8}{'FN':>8}  {'P':>7}{'R':>8}{'F1':>8}"
            if macros:
                head += f"  | {'macro P (SD)':>16}{'macro R (SD)':>17}{'F1':>8}"
            lines += ["", f"{name} by {breakdown}", head]
            for g, s in groups.items():
                if s.tp + s.fp + s.fn == 0:
                    continue
                row = f"{shown.get(g, g):<26}{_count(s.tp):>8}{_count(s.fp):>8}{_count(s.fn):>8}  {_f(s.precision):>7}{_f(s.recall):>8}{_f(s.f1):>8}"
                M = macros.get(g)
                if M is not None:
                    row += f"  | {f'{_f(M.precision)} ({M.precision_sd:.2f})':>16}{f'{_f(M.recall)} ({M.recall_sd:.2f})':>17}{_f(M.f1):>8}"
                lines.append(row)
    return "\n".join(lines) + "\n"


def _official_block(label: str, n_docs: int, micro, macro) -> list[str]:
    """One summary block, laid out and rounded as the official program prints
    it ("{:.4}" figures, "{:.2}" standard deviations, 25/15/15/20 columns)."""
    row = "{:<25}{:<15}{:<15}{:<20}"
    return [
        row.format(f"{label} ({n_docs})", "Measure", "Macro (SD)", "Micro (Primary)"),
        "{:-<25}{:-<15}{:-<15}{:-<20}".format("", "", "", ""),
        row.format("Total", "Precision", f"{macro.precision:.4} ({macro.precision_sd:.2})", f"{micro.precision:.4}"),
        row.format("", "Recall", f"{macro.recall:.4} ({macro.recall_sd:.2})", f"{micro.recall:.4}"),
        row.format("", "F1", f"{macro.f1:.4}", f"{micro.f1:.4}"),
        "",
        "",
    ]


def render_official(report: EvaluationReport, program: str = "i2b2") -> str:
    """The blocks the official program prints: ``"i2b2"`` (2014 ``evaluate.py
    phi``) or ``"ngrid"`` (2016 N-GRID ``evaluate.py track1``): the ten
    criteria, then token, strict, HIPAA token and HIPAA strict per element,
    each with macro (SD) and micro figures."""
    rename = _NGRID_2016_LABELS if program == "ngrid" else {}
    missing = [c for c, _ in _I2B2_2014_BLOCKS if c not in report.results]
    if missing:
        raise ValueError(f"the official layout needs every official criterion; missing: {', '.join(missing)}")
    n = report.n_documents
    lines: list[str] = []
    for criterion, label in _I2B2_2014_BLOCKS:
        res = report.results[criterion]
        lines += _official_block(rename.get(label, label), n, res.micro, res.macro)
    for category in OFFICIAL_CATEGORIES:
        for criterion, label in _I2B2_2014_CATEGORY_BLOCKS:
            res = report.results[criterion]
            micro, macro = res.by_category.get(category), res.category_macro.get(category)
            if micro is None or macro is None:
                raise ValueError(f"{criterion}: no per-category figures (evaluate with breakdowns=True)")
            lines += _official_block(rename.get(label, label).format(category), n, micro, macro)
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
