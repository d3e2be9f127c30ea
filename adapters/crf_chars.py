"""Linear-chain CRF on a feature view apart from the other linear members':
character n-grams and word shapes only (``ensemble_deid.taggers.char_features``),
no word identity, gazetteer, section or regular-expression feature.

    tagger = CrfCharsTagger(max_iterations=100).fit(train_docs)

Same trainer, sequences and confidences as ``crf`` (this class only swaps the
feature extractor); ``features`` holds ``CharFeatureExtractor``'s keyword
arguments.
"""
from __future__ import annotations

from ensemble_deid.taggers.char_features import CHAR_FEATURES_VERSION, CharFeatureExtractor

from .crf import CRFTagger


class CrfCharsTagger(CRFTagger):
    name = "crf-chars"
    version = "1-c" + CHAR_FEATURES_VERSION
    description = "linear-chain CRF (CRFsuite) on character n-grams and shapes only (no word features)"

    def _extractor(self) -> CharFeatureExtractor:
        fx = self.__dict__.get("_fx")
        if fx is None:
            fx = self.__dict__["_fx"] = CharFeatureExtractor(**dict(self.features or {}))
        return fx
