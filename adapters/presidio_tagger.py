"""``presidio``: Microsoft Presidio's analyzer as an external ensemble member,
regex recognisers only, fully offline.

Presidio's default engine loads a spaCy model from the network; here it runs
with its no-op NLP engine (no model) and its pattern recognisers (phone,
e-mail, URL, IP, dates, US SSN / passport / licence / bank numbers, credit
cards, IBAN, ...). ``tldextract``, which the e-mail recogniser calls, gets
an empty suffix-list URL list so it never tries the network (it uses the
snapshot it ships). Results below ``score_threshold`` are dropped. Entity
types map to i2b2 types by ``labelmaps/presidio.toml`` (or ``label_map=FILE``).
"""
from __future__ import annotations

import threading
from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.taggers.external.base import (
    ExternalTagger, ForeignSpan, MappingStats, hybridmethod, label_map_problem, load_category_map, local_files_digest,
    map_spans, requirements_available,
)
from ensemble_deid.taggers.constraints import Interval

_ENGINES: dict[tuple, object] = {}  # building an engine costs seconds: one per settings, per process
_ENGINE_LOCK = threading.Lock()
NEEDS_MODEL = ("SpacyRecognizer", "StanzaRecognizer", "TransformersRecognizer", "GLiNERRecognizer")


def build_engine(language: str = "en", exclude: tuple[str, ...] = ()):
    """An AnalyzerEngine with the predefined pattern recognisers of ``language``
    and no NLP model."""
    key = (language, tuple(sorted(exclude)))
    with _ENGINE_LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
        import tldextract
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NoOpNlpEngine
        from presidio_analyzer.predefined_recognizers import EmailRecognizer

        offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

        class OfflineEmailRecognizer(EmailRecognizer):
            def validate_result(self, pattern_text: str):  # as upstream, with an offline extractor
                return offline(pattern_text).fqdn != ""

        registry = RecognizerRegistry(supported_languages=[language])
        registry.load_predefined_recognizers(languages=[language])
        for name in set(NEEDS_MODEL) | {"EmailRecognizer"} | set(exclude):
            try:
                registry.remove_recognizer(name)
            except Exception:  # not loaded for this language
                pass
        if "EmailRecognizer" not in exclude:
            registry.add_recognizer(OfflineEmailRecognizer(supported_language=language))
        engine = AnalyzerEngine(
            registry=registry, nlp_engine=NoOpNlpEngine(models=[{"lang_code": language, "model_name": "none"}]),
            supported_languages=[language],
        )
        _ENGINES[key] = engine
        return engine


class PresidioTagger(ExternalTagger):
    name = "presidio"
    version = "1"
    requires = ("presidio_analyzer", "tldextract")
    description = "Presidio analyzer, pattern recognisers only (no NLP model), offline"

    _parameter_constraints = {
        "language": [str], "score_threshold": [Interval(float, 0, 1)], "exclude": [str], "label_map": [None, str],
    }
    fit_only_params = ("label_map",)  # fit reads it into category_map_

    def __init__(self, language="en", score_threshold=0.0, exclude="", label_map=None):
        self._store_params(locals())

    def _excluded(self) -> tuple[str, ...]:
        return tuple(x.strip() for x in str(self.exclude or "").split(",") if x.strip())

    def _availability(self_or_cls):
        ok, reason = requirements_available(self_or_cls)
        if not ok or isinstance(self_or_cls, type):
            return ok, reason
        problem = label_map_problem(self_or_cls.label_map)
        return not problem, problem

    availability = hybridmethod(_availability)

    def input_digest(self) -> str:
        return local_files_digest(self.label_map)

    def _prepare(self) -> None:
        build_engine(self.language, self._excluded())
        self.category_map_ = load_category_map(self.label_map, "presidio")

    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        engine = build_engine(self.language, self._excluded())
        stats = MappingStats()
        out = []
        for doc in documents:
            results = engine.analyze(doc.text, language=self.language, score_threshold=self.score_threshold)
            spans = [ForeignSpan(r.start, r.end, r.entity_type) for r in sorted(results, key=lambda r: (r.start, -r.end))]
            out.append(map_spans(spans, self.category_map_, stats, f"presidio (document {doc.id!r})"))
        self._note_mapping(stats)
        return out
