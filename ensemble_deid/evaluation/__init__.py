"""Scoring de-identification output the way the official i2b2 2014 / N-GRID
2016 program does (its quirks included, each switchable), plus SemEval-2013
schemes and leak rates; fast enough for thousands of re-scorings.

    from ensemble_deid.evaluation import evaluate, Scorer, EvalOptions
    report = evaluate(gold_docs, {doc_id: annotations}, criteria="official")
    report["strict"].micro.f1
    Scorer(gold_docs, "strict").prf(system)
"""
from .align import EvaluationWarning
from .criteria import ALL, CRITERIA, OFFICIAL, PRIMARY, SEMEVAL, Criterion, get_criterion, parse_criteria
from .core import evaluate
from .leak import LeakRates, LeakReport
from .metrics import DocumentCounts, MacroScores, Scores, f_beta, micro_prf
from .options import EvalOptions, EvaluationError
from .report import CriterionResult, EvaluationReport
from .scorer import Scorer
from .spans import SpanTable

__all__ = [
    "ALL", "CRITERIA", "OFFICIAL", "PRIMARY", "SEMEVAL", "Criterion", "CriterionResult", "DocumentCounts",
    "EvalOptions", "EvaluationError", "EvaluationReport", "EvaluationWarning", "LeakRates", "LeakReport",
    "MacroScores", "Scorer", "Scores", "SpanTable", "evaluate", "f_beta", "get_criterion", "micro_prf", "parse_criteria",
]
