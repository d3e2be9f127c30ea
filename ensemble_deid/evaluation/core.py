"""``evaluate``: every criterion, micro and macro, breakdowns and leak rates."""
from __future__ import annotations

import warnings
from operator import attrgetter, itemgetter
from typing import Any, Iterable, Mapping, Sequence

from ..corpus.document import PARENT_CATEGORIES, Annotation, Document
from .align import EvaluationWarning, align, check_gold
from .criteria import ALL, Criterion, parse_criteria
from .engine import Engine
from .hipaa import coverage_warning
from .leak import leak_rates
from .metrics import DocumentCounts
from .options import EvalOptions
from .report import CriterionResult, EvaluationReport
from .semeval import OUTCOMES


def _furthest_end(tags) -> int:
    if not tags:
        return 0
    return max(map(itemgetter(1) if isinstance(tags[0], tuple) else attrgetter("end"), tags))


def evaluate(
    gold: Sequence[Document],
    system: Mapping[str, Sequence[Annotation]] | Sequence[Document] | Sequence[Sequence[Any]],
    *,
    criteria: str | Iterable[str | Criterion] = ALL,
    options: EvalOptions = EvalOptions(),
    breakdowns: bool = True,
    leak: bool = True,
    lenient: bool = False,
    leak_documents: bool = False,
) -> EvaluationReport:
    """Score system output against gold documents.

    ``system`` maps document ids to tags (or is a sequence of Documents, whose
    TEXT must equal the gold TEXT; or per-document tag lists in gold order).
    ``criteria`` are names from ``criteria.CRITERIA`` (or "all", "official",
    "semeval"). Per-category and per-subtype breakdowns are given for the
    labelled criteria (token, strict, relaxed and their HIPAA variants).
    ``lenient`` scores what the official program scores from files:
    zero-length tags and tags ending past the end of their text.
    ``leak_documents``: the leak report also holds each document's rates
    (``LeakReport.by_document``, in gold order).
    """
    chosen = parse_criteria(criteria)
    gold = list(gold)
    check_gold(gold)
    aligned = align(gold, system, options.missing)
    per_doc = aligned.per_doc
    if options.missing == "skip" and aligned.missing:
        keep = aligned.present.tolist()
        gold = [g for g, k in zip(gold, keep) if k]
        per_doc = [p for p, k in zip(per_doc, keep) if k]
    extents = None
    if lenient:  # room past each text for the furthest tag end of either side
        extents = [max(len(g.text), _furthest_end(g.annotations), _furthest_end(tags)) for g, tags in zip(gold, per_doc)]
    engine = Engine(gold, options, extents)
    sys_table = engine.table(per_doc)
    engine.freeze()  # after both sides: every label has its id
    ids = tuple(engine.doc_ids)

    if any(c.hipaa for c in chosen):
        message = coverage_warning(engine.gold, engine.vocab, engine.hipaa(engine.gold))
        if message:
            warnings.warn(message, EvaluationWarning, stacklevel=2)
    results: dict[str, CriterionResult] = {}
    prepared_gold: dict[tuple, Any] = {}
    for c in chosen:
        key = (c.match, c.hipaa, c.binary)
        if key not in prepared_gold:
            prepared_gold[key] = (engine.prepare(engine.gold, c), engine.prepare(sys_table, c))
        g, s = prepared_gold[key]
        tp, fp, fn = engine.compare(c, g, s)
        counts = DocumentCounts(ids, tp, fp, fn)
        by_category = by_subtype = category_macro = {}
        if breakdowns and c.labelled:
            by_category, category_macro = engine.breakdown(c, g, s, "category")
            by_subtype, _ = engine.breakdown(c, g, s, "subtype", macro=False)
        outcomes = None
        if c.match == "semeval":
            totals = engine.semeval_outcomes(c, g, s).sum(axis=0)
            outcomes = {k: int(v) for k, v in zip(OUTCOMES, totals.tolist())}
        results[c.name] = CriterionResult(c.name, counts.micro(), counts.macro(), counts, by_category, by_subtype, outcomes,
                                          category_macro)

    leak_report = None
    if leak:
        upper = engine.vocab.upper_pairs
        to_upper = engine._to_upper()
        category_of_label = [upper[u][0] for u in to_upper.tolist()]
        found = sorted(set(category_of_label) - set(PARENT_CATEGORIES))
        leak_report = leak_rates(
            engine.gold, sys_table, engine.corpus, options.ascii_token_regex, category_of_label,
            engine.hipaa(engine.gold), list(PARENT_CATEGORIES) + found, by_document=leak_documents,
        )
    return EvaluationReport(results, leak_report, ids, options, aligned.missing, options.missing, aligned.extra)
