"""TOML label maps: rename, merge, drop, CATEGORY:TYPE targets, bad files."""
from __future__ import annotations

import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.errors import CorpusError
from ensemble_deid.corpus.labelmap import LabelMap

MEDDOCAN_TO_I2B2 = """
# MEDDOCAN subtypes onto the i2b2 scheme
drop = ["SEXO_SUJETO_ASISTENCIA", "other:familiares_sujeto_asistencia"]

[types]
NOMBRE_SUJETO_ASISTENCIA = "NAME:PATIENT"
NOMBRE_PERSONAL_SANITARIO = "NAME:DOCTOR"
TERRITORIO = "CITY"
CALLE = "STREET"
"LOCATION:PAIS" = "LOCATION:COUNTRY"
HOSPITAL = "LOCATION:HOSPITAL"
CENTRO_SALUD = "LOCATION:HOSPITAL"
institucion = "location:hospital"
"""


def _a(category, type_, start=0, end=3):
    return Annotation(start, end, category, type_, "abc", "T1", "c")


@pytest.fixture
def lm(tmp_path):
    path = tmp_path / "meddocan.toml"
    path.write_text(MEDDOCAN_TO_I2B2, encoding="utf-8")
    return LabelMap.load(path)


def test_rename_to_category_and_type(lm):
    out = lm.apply(_a("NAME", "NOMBRE_SUJETO_ASISTENCIA"))
    assert (out.category, out.type) == ("NAME", "PATIENT")
    assert (out.start, out.end, out.text, out.id, out.comment) == (0, 3, "abc", "T1", "c")


def test_subtype_only_target_keeps_the_parent(lm):
    assert lm.apply(_a("LOCATION", "TERRITORIO")).label == "LOCATION:CITY"
    assert lm.apply(_a("OTHER", "TERRITORIO")).label == "OTHER:CITY"


def test_several_sources_merge_into_one_target(lm):
    labels = {lm.apply(_a("LOCATION", t)).label for t in ("HOSPITAL", "CENTRO_SALUD", "INSTITUCION")}
    assert labels == {"LOCATION:HOSPITAL"}


def test_category_type_key_matches_only_that_parent(lm):
    assert lm.apply(_a("LOCATION", "PAIS")).label == "LOCATION:COUNTRY"
    assert lm.apply(_a("OTHER", "PAIS")).label == "OTHER:PAIS"


def test_drop_by_subtype_or_full_label(lm):
    assert lm.apply(_a("OTHER", "SEXO_SUJETO_ASISTENCIA")) is None
    assert lm.apply(_a("ANY", "SEXO_SUJETO_ASISTENCIA")) is None
    assert lm.apply(_a("OTHER", "FAMILIARES_SUJETO_ASISTENCIA")) is None
    assert lm.apply(_a("NAME", "FAMILIARES_SUJETO_ASISTENCIA")) is not None


def test_unmapped_types_pass_through_unchanged(lm):
    ann = _a("DATE", "FECHAS")
    assert lm.apply(ann) is ann


def test_keys_are_case_insensitive(lm):
    assert lm.types["INSTITUCION"] == "LOCATION:HOSPITAL"
    assert "OTHER:FAMILIARES_SUJETO_ASISTENCIA" in lm.drop
    assert lm.source.endswith("meddocan.toml")


def test_apply_document_and_apply_all(lm):
    doc = Document("d", "abc def ghi", [
        _a("NAME", "NOMBRE_PERSONAL_SANITARIO", 0, 3),
        _a("OTHER", "SEXO_SUJETO_ASISTENCIA", 4, 7),
        _a("DATE", "FECHAS", 8, 11),
    ], {"group": "g"})
    out = lm.apply_document(doc)
    assert [a.label for a in out.annotations] == ["NAME:DOCTOR", "DATE:FECHAS"]
    assert out.text == doc.text and out.group == "g"
    assert len(doc.annotations) == 3  # the original is untouched
    assert len(lm.apply_all(doc.annotations)) == 2


def test_parents_for_brat_reading(lm):
    parents = lm.parents()
    assert parents["NOMBRE_SUJETO_ASISTENCIA"] == "NAME"
    assert parents["HOSPITAL"] == "LOCATION"
    assert "TERRITORIO" not in parents  # target names no parent
    assert "LOCATION:PAIS" not in parents  # keys with a parent are not subtypes


def test_empty_map_is_the_identity():
    lm = LabelMap.from_dict({})
    ann = _a("NAME", "DOCTOR")
    assert lm.apply(ann) is ann and lm.parents() == {}


def test_bad_toml_names_the_file(tmp_path):
    path = tmp_path / "broken-map.toml"
    path.write_text("[types\nA = ", encoding="utf-8")
    with pytest.raises(CorpusError, match="broken-map.toml: not valid TOML"):
        LabelMap.load(path)


def test_missing_or_non_utf8_file_names_the_file(tmp_path):
    with pytest.raises(CorpusError, match="absent.toml: cannot read label map"):
        LabelMap.load(tmp_path / "absent.toml")
    path = tmp_path / "latin.toml"
    path.write_bytes(b'[types]\nA = "\xe9"\n')
    with pytest.raises(CorpusError, match="latin.toml: label map is not valid UTF-8"):
        LabelMap.load(path)


@pytest.mark.parametrize("body, message", [
    ('rename = {A = "B"}\n', r"unknown key\(s\) \['rename'\]"),
    ('types = "A"\n', r"\[types\] must map"),
    ('[types]\nA = 3\n', r"\[types\] must map"),
    ('[types]\nA = ""\n', r"\[types\] must map"),
    ('drop = "A"\n', "'drop' must be a list"),
    ('drop = [1]\n', "'drop' must be a list"),
    ('[types]\nA = "NAME:"\n', "NAME:"),
    ('[types]\nA = ":PATIENT"\n', ":PATIENT"),
])
def test_invalid_contents_name_the_file(tmp_path, body, message):
    path = tmp_path / "bad-map.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(CorpusError, match=message) as info:
        LabelMap.load(path)
    assert str(path) in str(info.value)
