"""The ensemble methods of [KIM20], trained only on cached predictions.

    from ensemble_deid.ensemble import GridSearch, make_method
    search = GridSearch(make_method("voting"), folds=10, objective="f1")
    search.fit(members_oof, train_documents)        # {name: {doc_id: DocumentPrediction}}
    predictions = search.predict(members_test, test_documents)

Methods: voting, voting-pruned, decision-templates, stacked-svm,
stacked-searn, stacked-lstm (see ``docs/ensembles.md`` for their exact rules).
"""
from .base import ENSEMBLE_VERSION, METRICS, MetaLearner, MissingMemberError, metric_value
from .candidates import CandidateTable, build_candidates, resolve_overlaps
from .diagnostics import (Contribution, MemberDiagnostics, Oracle, best_threshold, marginal_contributions, member_diagnostics,
                          oracle, pairwise_agreement)
from .pruning import PrunedVoting, PruningPath, PruningSearch, SubsetScorer, pruning_search
from .registry import METHODS, UnknownMethod, load_method, make_method, method_class
from .selection import GridSearch, cross_val_predict, expand_grid, fold_predictions
from .stacked_lstm import StackedLSTM
from .stacked_searn import StackedSEARN
from .stacked_svm import StackedSVM
from .templates import DecisionTemplates
from .tokens import TokenTable, build_token_table
from .voting import Voting, vote_select

__all__ = [
    "ENSEMBLE_VERSION", "METHODS", "METRICS", "CandidateTable", "Contribution", "DecisionTemplates", "GridSearch",
    "MemberDiagnostics", "MetaLearner", "MissingMemberError", "Oracle", "PrunedVoting", "PruningPath", "PruningSearch", "StackedLSTM",
    "StackedSEARN", "StackedSVM", "SubsetScorer", "TokenTable", "UnknownMethod", "Voting", "best_threshold",
    "build_candidates", "build_token_table", "cross_val_predict", "expand_grid", "fold_predictions",
    "load_method", "make_method", "marginal_contributions", "member_diagnostics", "metric_value", "method_class", "oracle", "pairwise_agreement",
    "pruning_search", "resolve_overlaps", "vote_select",
]
