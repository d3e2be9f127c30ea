"""A tiny deterministic corpus for contract tests: short English notes whose
PHI comes from small fixed lists (built with exact offsets, never searched)."""
from __future__ import annotations

import random

from ensemble_deid.corpus.document import Annotation, Document

_FIRST = ["John", "Maria", "Ahmed", "Li", "Karen", "Pedro", "Olga", "Sam"]
_LAST = ["Smith", "Brown", "Young", "Garcia", "Nguyen", "Hope", "Patel", "Kowalski"]
_DOCTORS = ["Dr. Adams", "Dr. Baker", "Dr. Chen", "Dr. Diaz"]
_HOSPITALS = ["Mercy Hospital", "Lakeside Clinic", "St. Anne Medical Center"]
_CITIES = ["Boston", "Dayton", "Fresno", "Tulsa"]
_FILLER = [
    "Blood pressure was 120/80 and she takes metformin 500 mg daily.",
    "Denies chest pain. Pain score 3/10 on room air.",
    "Labs showed A1c 7.2 and creatinine 1.1.",
    "Plan: continue lisinopril 10 mg and follow up.",
]


def _note(rng: random.Random, i: int, prefix: str = "") -> Document:
    parts: list[tuple[str, str | None]] = []  # (text, label or None)

    def add(text, label=None):
        parts.append((text, label))

    add("Record date: ")
    add(f"{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/20{rng.randint(10, 30)}", "DATE:DATE")
    add("\nPatient ")
    add(f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", "NAME:PATIENT")
    add(" is a ")
    add(str(rng.randint(30, 89)), "AGE:AGE")
    add(" year old seen at ")
    add(rng.choice(_HOSPITALS), "LOCATION:HOSPITAL")
    add(" in ")
    add(rng.choice(_CITIES), "LOCATION:CITY")
    add(". ")
    add(rng.choice(_FILLER))
    add("\nMRN: ")
    add(str(rng.randint(1000000, 9999999)), "ID:MEDICALRECORD")
    add(". Call ")
    add(f"{rng.randint(200, 999)}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}", "CONTACT:PHONE")
    add(" with questions.\n")
    add(rng.choice(_FILLER))
    add("\nSigned by ")
    add(rng.choice(_DOCTORS), "NAME:DOCTOR")
    add(".\n")

    text, annotations = "", []
    for chunk, label in parts:
        if label:
            category, type_ = label.split(":")
            annotations.append(Annotation(len(text), len(text) + len(chunk), category, type_, chunk))
        text += chunk
    patient = i // 2  # two records per patient, so folds must group them
    return Document(f"{prefix}{patient:03d}-{i % 2 + 1:02d}", text, annotations, {"group": f"{prefix}{patient:03d}"})


def tiny_corpus(n: int = 24, seed: int = 0, prefix: str = "") -> list[Document]:
    """``prefix`` makes ids distinct from another tiny corpus (e.g. for a union)."""
    rng = random.Random(seed)
    return [_note(rng, i, prefix) for i in range(n)]
