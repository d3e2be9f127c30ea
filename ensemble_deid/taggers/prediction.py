"""A tagger's output for one document, on the common tokenization."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..corpus.bio import OUTSIDE, decode
from ..corpus.document import Annotation, Document


@dataclass(frozen=True)
class DocumentPrediction:
    """BIO tags (one per common token) and, optionally, the tagger's
    confidence in each predicted tag (a probability or margin in [0, 1]).

    Tags are the single source of truth: spans are decoded from them.
    """

    doc_id: str
    tags: tuple[str, ...]
    confidences: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.confidences is not None and len(self.confidences) != len(self.tags):
            raise ValueError(
                f"document {self.doc_id!r}: {len(self.confidences)} confidences for {len(self.tags)} tags"
            )

    def spans(self, document: Document) -> list[Annotation]:
        if document.id != self.doc_id:
            raise ValueError(f"prediction for {self.doc_id!r} applied to document {document.id!r}")
        return decode(document.tokens, self.tags)

    @classmethod
    def from_spans(cls, document: Document, spans: Sequence[Annotation], confidences=None) -> "DocumentPrediction":
        from ..corpus.bio import encode

        return cls(document.id, tuple(encode(document.tokens, spans)), confidences)

    @classmethod
    def empty(cls, document: Document) -> "DocumentPrediction":
        return cls(document.id, (OUTSIDE,) * len(document.tokens))


def check_predictions(documents: Sequence[Document], predictions: Sequence[DocumentPrediction], who: str) -> None:
    """Raise a clear error unless predictions line up with documents and tokens."""
    if len(predictions) != len(documents):
        raise ValueError(f"{who}: {len(predictions)} predictions for {len(documents)} documents")
    for doc, pred in zip(documents, predictions):
        if pred.doc_id != doc.id:
            raise ValueError(f"{who}: prediction for {pred.doc_id!r} where {doc.id!r} was expected")
        if len(pred.tags) != len(doc.tokens):
            raise ValueError(
                f"{who}: document {doc.id!r} has {len(doc.tokens)} tokens but {len(pred.tags)} tags"
            )
