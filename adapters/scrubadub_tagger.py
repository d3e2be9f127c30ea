"""``scrubadub``: scrubadub 2.0's detectors as an external ensemble member.

Runs offline with its regular-expression detectors (e-mail, phone, URL,
social security number, credit card, credentials, twitter handles by
default; ``detectors`` names others from scrubadub's catalogue, e.g.
``date_of_birth``). Its name detector needs NLTK data that cannot be
downloaded here and is refused. Filth types map to i2b2 types by
``labelmaps/scrubadub.toml`` (or ``label_map=FILE``).
"""
from __future__ import annotations

from typing import Sequence

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.taggers.external.base import (
    ExternalTagger, ForeignSpan, MappingStats, hybridmethod, label_map_problem, load_category_map, local_files_digest,
    map_spans, requirements_available,
)

DEFAULT_DETECTORS = "credential,credit_card,email,phone,social_security_number,twitter,url"
NEEDS_DATA = {"text_blob_name": "TextBlob's NLTK corpora"}


class ScrubadubTagger(ExternalTagger):
    name = "scrubadub"
    version = "1"
    requires = ("scrubadub",)
    description = "scrubadub regex detectors (phone, e-mail, URL, SSN, ...), offline"

    _parameter_constraints = {"detectors": [str], "locale": [str], "label_map": [None, str]}
    fit_only_params = ("label_map",)  # fit reads it into category_map_

    def __init__(self, detectors=DEFAULT_DETECTORS, locale="en_US", label_map=None):
        self._store_params(locals())

    def _names(self) -> list[str]:
        return [d.strip() for d in str(self.detectors).split(",") if d.strip()]

    def _availability(self_or_cls):
        ok, reason = requirements_available(self_or_cls)
        if not ok or isinstance(self_or_cls, type):
            return ok, reason
        self = self_or_cls
        blocked = [n for n in self._names() if n in NEEDS_DATA]
        if blocked:
            return False, f"detector(s) {', '.join(blocked)} need data that cannot be downloaded here ({NEEDS_DATA[blocked[0]]})"
        problem = label_map_problem(self.label_map)
        return not problem, problem

    availability = hybridmethod(_availability)

    def input_digest(self) -> str:
        return local_files_digest(self.label_map)

    def _prepare(self) -> None:
        import scrubadub

        catalogue = scrubadub.detectors.catalogue.detector_catalogue.get_all()
        unknown = [n for n in self._names() if n not in catalogue]
        if unknown:
            raise ValueError(f"scrubadub: unknown detector(s) {unknown}; known: {sorted(catalogue)}")
        self.scrubber_ = scrubadub.Scrubber(detector_list=self._names(), locale=self.locale)
        self.category_map_ = load_category_map(self.label_map, "scrubadub")

    def __getstate__(self):  # the scrubber holds compiled state: rebuild it after unpickling
        state = dict(self.__dict__)
        state.pop("scrubber_", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "category_map_" in state:
            import scrubadub

            self.scrubber_ = scrubadub.Scrubber(detector_list=self._names(), locale=self.locale)

    def _foreign_spans(self, documents: Sequence[Document]) -> list[list[Annotation]]:
        stats = MappingStats()
        out = []
        for doc in documents:
            spans = [ForeignSpan(f.beg, f.end, f.type) for f in self.scrubber_.iter_filth(doc.text, document_name=None)]
            out.append(map_spans(spans, self.category_map_, stats, f"scrubadub (document {doc.id!r})"))
        self._note_mapping(stats)
        return out
