"""Parent categories of the subtypes of known annotation schemes.

Formats that carry only a subtype (BRAT, foreign system outputs) look the
parent up here; a label map can add or override entries.
"""
from __future__ import annotations

import re
from typing import Collection, Iterable

from ..document import I2B2_PARENT_OF, PARENT_CATEGORIES

# MEDDOCAN guidelines (Marimon et al. 2019): the 29 subtypes and the i2b2
# parent element they are filed under in the corpus XML.
MEDDOCAN_PARENT_OF: dict[str, str] = {
    "NOMBRE_SUJETO_ASISTENCIA": "NAME",
    "NOMBRE_PERSONAL_SANITARIO": "NAME",
    "EDAD_SUJETO_ASISTENCIA": "AGE",
    "FECHAS": "DATE",
    "PROFESION": "PROFESSION",
    "HOSPITAL": "LOCATION",
    "CENTRO_SALUD": "LOCATION",
    "INSTITUCION": "LOCATION",
    "CALLE": "LOCATION",
    "TERRITORIO": "LOCATION",
    "PAIS": "LOCATION",
    "NUMERO_TELEFONO": "CONTACT",
    "NUMERO_FAX": "CONTACT",
    "CORREO_ELECTRONICO": "CONTACT",
    "URL_WEB": "CONTACT",
    "DIREC_PROT_INTERNET": "CONTACT",
    "ID_SUJETO_ASISTENCIA": "ID",
    "ID_CONTACTO_ASISTENCIAL": "ID",
    "ID_ASEGURAMIENTO": "ID",
    "ID_TITULACION_PERSONAL_SANITARIO": "ID",
    "ID_EMPLEO_PERSONAL_SANITARIO": "ID",
    "IDENTIF_VEHICULOS_NRSERIE_PLACAS": "ID",
    "IDENTIF_DISPOSITIVOS_NRSERIE": "ID",
    "IDENTIF_BIOMETRICOS": "ID",
    "OTRO_NUMERO_IDENTIF": "ID",
    "SEXO_SUJETO_ASISTENCIA": "OTHER",
    "FAMILIARES_SUJETO_ASISTENCIA": "OTHER",
    "OTROS_SUJETO_ASISTENCIA": "OTHER",
}

KNOWN_PARENTS: dict[str, str] = {**I2B2_PARENT_OF, **MEDDOCAN_PARENT_OF}

# The element names the i2b2 2014 / N-GRID 2016 scoring program reads.
PHI_ELEMENTS = ("NAME", "PROFESSION", "LOCATION", "AGE", "DATE", "CONTACT", "ID", "OTHER", "PHI")

# Names a message or a report may print as they are: the known schemes'
# categories, elements and subtypes. Any other type or element name in a file
# is data (a PHI word typed in the wrong column is still PHI): it is counted,
# never printed. Tag ids are printed only in the short shape annotation tools
# give them (P0, T12, T3.2): an id holding a word or a number is data too.
KNOWN_NAMES = frozenset(PARENT_CATEGORIES) | frozenset(PHI_ELEMENTS) | frozenset(KNOWN_PARENTS) | {"TEXT", "TAGS"}
_TAG_ID_SHAPE = re.compile(r"[A-Za-z]{1,2}\d{1,6}(?:\.\d{1,3})?")


def shown_id(value: str | None, fallback: str) -> str:
    """A tag id as a message may print it, or ``fallback`` (its position)."""
    return value if value is not None and _TAG_ID_SHAPE.fullmatch(value) else fallback


def is_known_name(name: str, extra: Collection[str] = ()) -> bool:
    """Whether a type, element or ``CATEGORY:TYPE`` label is made of known
    names (the schemes', or ``extra``: e.g. a label map's) and may be printed."""
    return all(part.upper() in KNOWN_NAMES or part in extra for part in name.split(":"))


def shown_labels(labels: Iterable[str], extra: Collection[str] = ()) -> dict[str, str]:
    """Each label as a report prints it: known names as they are, any other
    name as ``unknown-1``, ``unknown-2``... (numbered in sorted order), so
    ``OTHER:<a word>`` shows as ``OTHER:unknown-1``."""
    labels = list(labels)
    unknown = sorted({part for label in labels for part in label.split(":") if not is_known_name(part, extra)})
    number = {part: f"unknown-{k}" for k, part in enumerate(unknown, 1)}
    return {label: ":".join(number.get(part, part) for part in label.split(":")) for label in labels}
