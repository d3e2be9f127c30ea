"""``Deidentifier``: a fitted tagger or ensemble that finds PHI in new notes.

    from ensemble_deid.deid import Deidentifier
    model = Deidentifier.load("model/")          # a bundle written by ``fit``
    model.deidentify("Seen by Dr. Smith on 3/4/2012.")   # -> "Seen by Dr. [NAME:DOCTOR] on [DATE]."
    predictions = model.predict(documents)      # [DocumentPrediction], as a tagger's

Members are fitted exactly as the cross-validation engine fits them for the
test split (every training document; nothing for external systems), so a
bundle reproduces the ``ensemble`` command's test predictions.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..corpus.document import Annotation, Document
from ..taggers.prediction import DocumentPrediction, check_predictions


def fit_member(spec, train: Sequence[Document]):
    """One member fitted as the CV engine fits it for the test split."""
    tagger = spec.make()
    tagger.fit([] if tagger.external else list(train))
    return tagger


def needed_members(method, names: Sequence[str]) -> list[str]:
    """The members whose predictions can change the method's output: a pruned
    voting ignores the members it eliminated."""
    subset = getattr(method, "subset_", None) if method is not None else None
    return [n for n in names if subset is None or n in subset]


class Deidentifier:
    """A fitted tagger (``method=None``, one member) or an ensemble."""

    def __init__(self, members: Mapping[str, Any], method: Any | None = None, manifest: Mapping | None = None):
        if method is None and len(members) != 1:
            raise ValueError("a Deidentifier without an ensemble method has exactly one member")
        self.members = dict(members)
        self.method = method
        self.manifest = dict(manifest or {})

    def __repr__(self) -> str:
        what = self.method.name if self.method is not None else next(iter(self.members))
        return f"Deidentifier({what}, members={list(self.members)})"

    @classmethod
    def load(cls, path: str | Path) -> "Deidentifier":
        """A bundle written by ``ensemble-deid fit`` (checked before loading)."""
        from .bundle import read_bundle

        manifest, members, method = read_bundle(path)
        return cls(members, method, manifest)

    def save(self, path: str | Path, info: Mapping[str, Any] | None = None) -> Path:
        from .bundle import write_bundle

        return write_bundle(path, self.members, self.method, {**self.manifest, **(info or {})})

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.manifest.get("labels", ()))

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        """BIO predictions on the common tokens, one per document."""
        documents = list(documents)
        outputs = {}
        for label, tagger in self.members.items():
            preds = tagger.predict(documents)
            check_predictions(documents, preds, f"member {label}")
            outputs[label] = {p.doc_id: p for p in preds}
        if self.method is None:
            return list(next(iter(outputs.values())).values())
        for name in self.method.member_names_:  # eliminated by pruning: never consulted
            if name not in outputs:
                outputs[name] = {d.id: DocumentPrediction.empty(d) for d in documents}
        return self.method.predict(outputs, documents)

    def spans(self, documents: Sequence[Document]) -> dict[str, list[Annotation]]:
        """Predicted PHI spans per document id."""
        documents = list(documents)
        return {d.id: p.spans(d) for d, p in zip(documents, self.predict(documents))}

    def deidentify(self, text: str, mode: str = "tag", surrogates=None, doc_id: str = "note") -> str:
        """One note's text with its predicted PHI replaced (see ``redact``)."""
        from .redact import redact

        doc = Document(doc_id, text)
        return redact(doc, self.spans([doc])[doc_id], mode, surrogates)
