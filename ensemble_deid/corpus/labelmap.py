"""Declarative label maps (TOML) that rename, merge or drop annotation types.

    # meddocan-to-i2b2.toml
    drop = ["SEXO_SUJETO_ASISTENCIA"]          # subtypes (or CATEGORY:TYPE) to remove

    [types]                                    # source subtype -> target
    NOMBRE_SUJETO_ASISTENCIA = "NAME:PATIENT"  # new parent and subtype
    NOMBRE_PERSONAL_SANITARIO = "NAME:DOCTOR"
    TERRITORIO = "CITY"                         # subtype only: parent kept

Several sources mapped to one target merge. Keys match the subtype, or the
full ``CATEGORY:TYPE`` label when the same subtype sits under two parents.
Unmapped types pass through unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from .document import Annotation, Document
from ..errors import CorpusError
from ..files import read_toml


@dataclass(frozen=True)
class LabelMap:
    types: Mapping[str, str] = field(default_factory=dict)
    drop: frozenset[str] = frozenset()
    source: str = "<inline>"

    @classmethod
    def load(cls, path: str | Path) -> "LabelMap":
        return cls.from_dict(read_toml(path, CorpusError, "label map"), source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping, source: str = "<inline>") -> "LabelMap":
        unknown = set(data) - {"types", "drop"}
        if unknown:
            raise CorpusError(f"{source}: unknown key(s) {sorted(unknown)}; expected 'types' and 'drop'")
        types = data.get("types", {})
        drop = data.get("drop", [])
        if not isinstance(types, Mapping) or not all(isinstance(v, str) and v for v in types.values()):
            raise CorpusError(f"{source}: [types] must map type names to non-empty strings")
        if not isinstance(drop, list) or not all(isinstance(v, str) for v in drop):
            raise CorpusError(f"{source}: 'drop' must be a list of type names")
        for target in types.values():
            category, sep, type_ = target.partition(":")
            if sep and not (category and type_):
                raise CorpusError(f"{source}: [types] target {target!r} is neither TYPE nor CATEGORY:TYPE")
        norm = {k.upper(): v.upper() for k, v in types.items()}
        return cls(norm, frozenset(d.upper() for d in drop), source)

    def apply(self, ann: Annotation) -> Annotation | None:
        """The mapped annotation, or None when its type is dropped."""
        if ann.label in self.drop or ann.type in self.drop:
            return None
        target = self.types.get(ann.label) or self.types.get(ann.type)
        if target is None:
            return ann
        category, sep, type_ = target.partition(":")
        if not sep:
            category, type_ = ann.category, target
        return Annotation(ann.start, ann.end, category, type_, ann.text, ann.id, ann.comment)

    def apply_all(self, annotations: Iterable[Annotation]) -> list[Annotation]:
        return [m for m in map(self.apply, annotations) if m is not None]

    def apply_document(self, doc: Document) -> Document:
        return doc.with_annotations(self.apply_all(doc.annotations))

    def names(self) -> frozenset[str]:
        """Every category and type name the map's author wrote (reports may print them)."""
        return frozenset(part for name in (*self.types, *self.types.values(), *self.drop) for part in name.split(":"))

    def parents(self) -> dict[str, str]:
        """Subtype -> parent for targets that name one (used by BRAT reading)."""
        out = {}
        for src, target in self.types.items():
            category, sep, _ = target.partition(":")
            if sep and ":" not in src:
                out[src] = category
        return out
