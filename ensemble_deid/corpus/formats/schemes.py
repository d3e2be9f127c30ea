"""Parent categories of the subtypes of known annotation schemes.

Formats that carry only a subtype (BRAT, foreign system outputs) look the
parent up here; a label map can add or override entries.
"""
from __future__ import annotations

from ..document import I2B2_PARENT_OF

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
