"""``lstm-crf-fea``: the feature-augmented BiLSTM-CRF [LIU17 BI-LSTM-FEA,
LEE16]. Each token's binary flags from the shared linear feature module
(``FeatureExtractor.binary_flags``: orthography, gazetteer hits, regular
expression hits, sentence facts, section facts), plus optional per-note "EHR"
name flags (``ehr_names_path``, see ``ensemble_deid.taggers.neural.ehr``), go through
a small feed-forward layer (``feature_dim`` units, ReLU) whose output is
concatenated to the word + character representation before the word BiLSTM.
Otherwise as ``lstm-crf-l``.

    tagger = LstmCrfFeaTagger(ehr_names_path="ehr_names.json").fit(train_docs)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.constraints import EXISTING_FILE, MAX_SIZE, Interval
from ensemble_deid.taggers.neural.base import NeuralTagger


class LstmCrfFeaTagger(NeuralTagger):
    name = "lstm-crf-fea"
    version = "2"
    description = "BiLSTM-CRF + binary features (gazetteers, regexes, section, sentence; EHR names) [LIU17, LEE16]"
    use_crf = True
    uses_features = True

    # lstm-crf-n's settings, plus the feature layer's parameters: feature_dim
    # (size of the dense projection of the binary features), features
    # (FeatureExtractor options) and ehr_names_path (a local EHR name list).
    defaults = {"lr": 0.01,
                "feature_dim": 32, "features": None, "ehr_names_path": None}

    _parameter_constraints = {"feature_dim": [Interval(int, 1, MAX_SIZE)], "ehr_names_path": [None, EXISTING_FILE]}

    # --- features -----------------------------------------------------------------
    def _extractor(self):
        fx = self.__dict__.get("_fx")
        if fx is None:
            from ensemble_deid.taggers.features import FeatureExtractor

            fx = self._fx = FeatureExtractor(**(self.features or {}))
        return fx

    def _ehr_names(self):
        if not self.ehr_names_path:
            return None
        cached = self.__dict__.get("_ehr")
        if cached is None or cached[0] != self.ehr_names_path:
            from ensemble_deid.taggers.neural.ehr import load_ehr_names

            cached = self._ehr = (self.ehr_names_path, load_ehr_names(self.ehr_names_path))
        return cached[1]

    def _flag_names(self) -> tuple[str, ...]:
        from ensemble_deid.taggers.neural.ehr import EHR_FLAG_NAMES

        names = tuple(self._extractor().flag_names)
        return names + (EHR_FLAG_NAMES if self.ehr_names_path else ())

    def _check_params(self) -> None:
        super()._check_params()
        if int(self.feature_dim) < 1:
            raise ValueError(f"{self.name}: feature_dim must be at least 1")

    def _fit_features(self, documents) -> None:
        self.__dict__.pop("_fx", None)
        self.__dict__.pop("_ehr", None)
        self.feature_names_ = self._flag_names()

    def _features(self, doc: Document) -> np.ndarray:
        flags = self._extractor().binary_flags(doc)
        names = self._ehr_names()
        if names is not None:
            from ensemble_deid.taggers.neural.ehr import ehr_flags

            flags = np.concatenate([flags, ehr_flags(doc, names)], axis=1)
        if flags.shape[1] != len(self.feature_names_):
            raise ValueError(
                f"{self.name}: {flags.shape[1]} feature flags where the model was trained on "
                f"{len(self.feature_names_)} (the feature extractor changed since fit)"
            )
        return flags.astype(np.float32)

    def _network_extra(self) -> dict[str, Any]:
        return {"n_features": len(self.feature_names_), "feature_dim": int(self.feature_dim)}

    def _extra_state(self) -> dict[str, Any]:
        return {"feature_names": list(self.feature_names_)}

    def _load_extra_state(self, extra: dict[str, Any]) -> None:
        self.feature_names_ = tuple(extra["feature_names"])

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_fx", None)
        state.pop("_ehr", None)
        return state
