"""Linear-chain CRF (CRFsuite through python-crfsuite, L-BFGS) with the shared
[LIU17] feature set (``ensemble_deid.taggers.features``).

    tagger = CRFTagger(c1=0.05, c2=0.01, max_iterations=100).fit(train_docs)
    predictions = tagger.predict(test_docs)   # confidences = marginal of each predicted tag

The model is kept as bytes (``model_``) and opened in memory, so a fitted
tagger pickles (joblib ships taggers across processes). Training sequences are
whole documents by default (``sequence="document"``): the CRF then also sees
label transitions across the splitter's sentence boundaries, and no gold span
is ever cut; ``"sentence"`` trains and decodes sentence by sentence instead.
"""
from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Sequence

import numpy as np

from ensemble_deid.corpus.bio import gold_tags
from ensemble_deid.corpus.document import Document
from ensemble_deid.files import FileWriteError, os_error
from ensemble_deid.taggers.features import FEATURES_VERSION, FeatureExtractor
from ensemble_deid.taggers.prediction import DocumentPrediction
from ensemble_deid.taggers.base import Tagger, TaggerUnavailable
from ensemble_deid.taggers.constraints import MAX_COUNT, MAX_PENALTY, MAX_TOLERANCE, Interval, Options
from ensemble_deid.taggers.crfsuite_file import check_crfsuite_model

_SEQUENCES = ("document", "sentence")


def _pycrfsuite():
    try:
        import pycrfsuite
    except ImportError as exc:
        raise TaggerUnavailable(
            "tagger 'crf' needs python-crfsuite: pip install python-crfsuite"
        ) from exc
    return pycrfsuite


def crfsuite_model_problem(model: bytes) -> str | None:
    """Why ``model`` is not a whole CRFsuite model file, else None: its header
    ("lCRF", total size, "FOMC") must match the bytes there are."""
    if len(model) < 12 or model[:4] != b"lCRF" or model[8:12] != b"FOMC":
        return f"no CRFsuite header in {len(model)} bytes"
    size = int.from_bytes(model[4:8], "little")
    if size != len(model):
        return f"{len(model)} of the {size} bytes its header announces"
    return None


class CRFTagger(Tagger):
    """Linear-chain CRF trained with L-BFGS (L1 + L2 regularisation).

    Parameters:
        c1, c2: L1 and L2 regularisation coefficients (CRFsuite's ``c1``, ``c2``).
        max_iterations: L-BFGS iterations (CRFsuite also stops earlier when the
            objective improves by less than ``epsilon`` over ``period`` iterations).
        epsilon: CRFsuite's convergence threshold.
        min_freq: features seen fewer times in training are dropped.
        possible_transitions: learn weights for every label pair, seen or not
            (lets the model penalise impossible BIO transitions).
        sequence: ``"document"`` or ``"sentence"`` sequences.
        features: keyword arguments of ``FeatureExtractor`` (None: its defaults).
        random_state: accepted for a uniform interface; L-BFGS is deterministic.
    """

    name = "crf"
    _fitted_caches = ("_tagger",)
    version = "1-f" + FEATURES_VERSION
    requires = ("pycrfsuite",)
    description = "linear-chain CRF (CRFsuite, L-BFGS) with the [LIU17] feature set"

    _parameter_constraints = {
        "c1": [Interval(float, 0, MAX_PENALTY)], "c2": [Interval(float, 0, MAX_PENALTY)],
        "max_iterations": [Interval(int, 1, MAX_COUNT)], "epsilon": [Interval(float, 0, MAX_TOLERANCE, closed="right")],
        "min_freq": [Interval(float, 0, MAX_COUNT)], "possible_transitions": [bool],
        "sequence": [Options(*_SEQUENCES)],
    }

    def __init__(
        self,
        c1: float = 0.05,
        c2: float = 0.01,
        max_iterations: int = 100,
        epsilon: float = 1e-5,
        min_freq: int = 0,
        possible_transitions: bool = True,
        sequence: str = "document",
        features: dict[str, Any] | None = None,
        random_state: int | None = 0,
    ):
        self._store_params(locals())

    # --- helpers ------------------------------------------------------------
    def _extractor(self) -> FeatureExtractor:
        fx = self.__dict__.get("_fx")
        if fx is None:
            fx = self.__dict__["_fx"] = FeatureExtractor(**dict(self.features or {}))
        return fx

    def _chunks(self, doc: Document) -> list[tuple[int, int]]:
        n = len(doc.tokens)
        if self.sequence == "document":
            return [(0, n)] if n else []
        return doc.tokens.sentences()

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_fx", None)
        state.pop("_tagger", None)
        return state

    def _restore_state(self, state) -> None:
        super()._restore_state(state)
        check_crfsuite_model(self.model_, f"{self.name} model")  # a damaged file is refused when loaded, not used

    # --- learning --------------------------------------------------------------
    def fit(self, documents: Sequence[Document]) -> "CRFTagger":
        self.validate_params()
        pycrfsuite = _pycrfsuite()
        documents = list(documents)
        if not any(len(d.tokens) for d in documents):
            raise ValueError(f"crf: no training tokens (got {len(documents)} documents)")
        self._clear_fitted()

        fx = self._extractor()
        t0 = time.perf_counter()
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        n_seq = n_tok = 0
        feature_s = 0.0
        for doc in documents:
            t = time.perf_counter()
            feats = fx.document_features(doc)
            feature_s += time.perf_counter() - t
            tags = gold_tags(doc)
            for a, b in self._chunks(doc):
                trainer.append(feats[a:b], tags[a:b])
                n_seq += 1
                n_tok += b - a
        trainer.set_params({
            "c1": float(self.c1),
            "c2": float(self.c2),
            "max_iterations": int(self.max_iterations),
            "epsilon": float(self.epsilon),
            "feature.minfreq": float(self.min_freq),
            "feature.possible_transitions": bool(self.possible_transitions),
        })
        t_train = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="ensemble-deid-crf-") as tmp:
                path = os.path.join(tmp, "model.crfsuite")
                trainer.train(path)
                with open(path, "rb") as fh:
                    model = fh.read()
                problem = crfsuite_model_problem(model)
                if problem is not None:
                    # CRFsuite ignores failed writes (a full disk): the file is cut short, never used.
                    raise FileWriteError(path, f"CRFsuite wrote an unusable model ({problem}); is the disk full? "
                                               "Free space there or point TMPDIR elsewhere, then rerun")
        except OSError as exc:  # the temporary folder itself could not be made or read
            raise os_error(exc.filename or tempfile.gettempdir(), exc) from exc
        t_end = time.perf_counter()
        log = trainer.logparser
        last = log.last_iteration or {}
        self.model_ = model
        self.fit_stats_ = {
            "sequences": n_seq,
            "tokens": n_tok,
            "iterations": len(log.iterations),
            "active_features": int(last.get("active_features", 0) or 0),
            "loss": float(last.get("loss", 0.0) or 0.0),
            "feature_seconds": feature_s,
            "append_seconds": t_train - t0 - feature_s,
            "crfsuite_seconds": t_end - t_train,
            "total_seconds": t_end - t0,
        }
        self.labels_ = tuple(sorted(self._get_tagger().labels()))
        return self

    def _get_tagger(self):
        tagger = self.__dict__.get("_tagger")
        if tagger is None:
            pycrfsuite = _pycrfsuite()
            check_crfsuite_model(self.model_, f"{self.name} model")
            tagger = pycrfsuite.Tagger()
            tagger.open_inmemory(self.model_)
            self.__dict__["_tagger"] = tagger
        return tagger

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        return self._tag(documents, confidences=True)

    def predict_tags(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        return self._tag(documents, confidences=False)  # no marginals: a Python call per token

    def _tag(self, documents: Sequence[Document], confidences: bool) -> list[DocumentPrediction]:
        self.check_fitted()
        self.validate_params()
        tagger = self._get_tagger()
        fx = self._extractor()
        out = []
        for doc in documents:
            n = len(doc.tokens)
            if not n:
                out.append(DocumentPrediction(doc.id, (), np.zeros(0, dtype=np.float32) if confidences else None))
                continue
            feats = fx.document_features(doc)
            tags: list[str] = []
            conf = np.empty(n, dtype=np.float32) if confidences else None
            for a, b in self._chunks(doc):
                chunk = tagger.tag(feats[a:b])
                if confidences:
                    marginal = tagger.marginal  # CRFsuite has no batch call for marginals
                    conf[a:b] = [marginal(y, i) for i, y in enumerate(chunk)]
                tags.extend(chunk)
            if confidences:
                np.clip(conf, 0.0, 1.0, out=conf)
            out.append(DocumentPrediction(doc.id, tuple(tags), conf))
        return out
