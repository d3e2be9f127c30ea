"""Base taggers: the ``Tagger`` interface, the registry of adapters, and the
machinery the built-in adapters share (features, linear, neural, external).

This module is the stable import surface for adapter authors (see
docs/adapters.md); ``tests/test_public_api.py`` keeps it working::

    from ensemble_deid.taggers import Tagger, DocumentPrediction, gold_tags, OUTSIDE

The adapters themselves live in the top-level ``adapters/`` folder (installed
as ``ensemble_deid_adapters``) and register through the ``ensemble_deid.taggers``
entry-point group, exactly as a third party's package does.
"""
from __future__ import annotations

from ..corpus.bio import OUTSIDE, decode, gold_tags
from ..corpus.document import Annotation, Document
from ..errors import EnsembleDeidError
from .base import NotFittedError, Tagger, TaggerUnavailable
from .constraints import (
    MAX_COST, MAX_COUNT, MAX_NORM, MAX_PENALTY, MAX_RATE, MAX_SECONDS, MAX_SIZE, MAX_TOLERANCE, THREADS, Check, Interval,
    InvalidParameter, Options,
)
from .prediction import DocumentPrediction
from .registry import UnknownTagger, load_tagger, make_tagger, tagger_class

__all__ = [
    "OUTSIDE", "Annotation", "Check", "Document", "DocumentPrediction", "EnsembleDeidError", "Interval",
    "InvalidParameter", "NotFittedError", "Options", "Tagger", "TaggerUnavailable", "UnknownTagger",
    "decode", "gold_tags", "load_tagger", "make_tagger", "tagger_class", "FeatureExtractor",
    # named ceilings for declaring bounded numbers, and the thread-count constraint
    "MAX_COST", "MAX_COUNT", "MAX_NORM", "MAX_PENALTY", "MAX_RATE", "MAX_SECONDS", "MAX_SIZE", "MAX_TOLERANCE", "THREADS",
]


def __getattr__(name: str):
    # The feature extractor loads gazetteers: imported only when asked for.
    if name == "FeatureExtractor":
        from .features import FeatureExtractor

        return FeatureExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
