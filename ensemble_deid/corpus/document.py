"""The corpus model: documents and their PHI annotations.

Reprs never show note text or PHI (it is sensitive even when surrogate): a
Document prints its id and counts, an Annotation its offsets and labels.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .tokenize import Tokens

# The i2b2 2014 / N-GRID 2016 scheme (methods.md section 1). Used to infer a
# parent when only a subtype is known (BRAT files, foreign outputs); the label
# set of a corpus itself always comes from its data.
I2B2_SCHEME: dict[str, tuple[str, ...]] = {
    "NAME": ("PATIENT", "DOCTOR", "USERNAME"),
    "PROFESSION": ("PROFESSION",),
    "LOCATION": (
        "ROOM", "DEPARTMENT", "HOSPITAL", "ORGANIZATION", "STREET", "CITY",
        "STATE", "COUNTRY", "ZIP", "LOCATION-OTHER",
    ),
    "AGE": ("AGE",),
    "DATE": ("DATE",),
    "CONTACT": ("PHONE", "FAX", "EMAIL", "URL", "IPADDR"),
    "ID": (
        "SSN", "MEDICALRECORD", "HEALTHPLAN", "ACCOUNT", "LICENSE", "VEHICLE",
        "DEVICE", "BIOID", "IDNUM",
    ),
}
I2B2_PARENT_OF: dict[str, str] = {
    sub: parent for parent, subs in I2B2_SCHEME.items() for sub in subs
}
PARENT_CATEGORIES = tuple(I2B2_SCHEME) + ("OTHER",)


@dataclass(frozen=True, order=True)
class Annotation:
    """One PHI span: character offsets into the document text (end exclusive).

    ``category`` is the parent element name (NAME, DATE, ...) and ``type`` the
    subtype (DOCTOR, DATE, ...). ``text`` is the covered text as the source file
    gave it; it is excluded from repr and from equality.
    """

    start: int
    end: int
    category: str
    type: str
    text: str | None = field(default=None, compare=False, repr=False)
    id: str | None = field(default=None, compare=False, repr=False)
    comment: str = field(default="", compare=False, repr=False)

    @property
    def label(self) -> str:
        """The subtype-level label used in BIO tags: ``CATEGORY:TYPE``."""
        return f"{self.category}:{self.type}"

    @property
    def key(self) -> tuple[str, int, int, str]:
        return (self.category, self.start, self.end, self.type)

    def overlaps(self, other: "Annotation") -> bool:
        return self.start < other.end and other.start < self.end


def split_label(label: str) -> tuple[str, str]:
    """``"NAME:DOCTOR"`` -> ``("NAME", "DOCTOR")``."""
    category, sep, type_ = label.partition(":")
    if not sep or not category or not type_:
        raise ValueError(f"label {label!r} is not of the form CATEGORY:TYPE")
    return category, type_


class Document:
    """A note: id, text, gold annotations (possibly none) and metadata.

    ``metadata`` holds provenance such as the source path, the patient group and
    the file format. Tokens are computed once on first use.
    """

    __slots__ = ("id", "text", "annotations", "metadata", "__dict__")

    def __init__(
        self,
        id: str,
        text: str,
        annotations: Iterable[Annotation] = (),
        metadata: dict[str, Any] | None = None,
    ):
        self.id = id
        self.text = text
        self.annotations: tuple[Annotation, ...] = tuple(sorted(annotations))
        self.metadata: dict[str, Any] = dict(metadata or {})

    def __repr__(self) -> str:
        return (
            f"Document(id={self.id!r}, chars={len(self.text)}, "
            f"annotations={len(self.annotations)})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return (
            self.id == other.id
            and self.text == other.text
            and self.annotations == other.annotations
        )

    __hash__ = None  # type: ignore[assignment]  # mutable metadata

    @cached_property
    def tokens(self) -> "Tokens":
        from .tokenize import tokenize

        return tokenize(self.text)

    @property
    def group(self) -> str:
        """The patient group used for folds (defaults to the document itself)."""
        return str(self.metadata.get("group", self.id))

    def with_annotations(self, annotations: Iterable[Annotation]) -> "Document":
        """A copy sharing text, metadata and tokens but with other annotations."""
        doc = Document(self.id, self.text, annotations, self.metadata)
        if "tokens" in self.__dict__:
            doc.__dict__["tokens"] = self.__dict__["tokens"]
        return doc


def label_counts(documents: Sequence[Document]) -> dict[str, int]:
    """Number of annotations per ``CATEGORY:TYPE`` label."""
    counts: dict[str, int] = {}
    for doc in documents:
        for ann in doc.annotations:
            counts[ann.label] = counts.get(ann.label, 0) + 1
    return dict(sorted(counts.items()))
