"""The corpus model: Document, Annotation, labels; reprs never show PHI."""
from __future__ import annotations

import pytest

from ensemble_deid.corpus.document import (
    I2B2_PARENT_OF,
    PARENT_CATEGORIES,
    Annotation,
    Document,
    label_counts,
    split_label,
)
from ensemble_deid.errors import ERROR, WARNING, CorpusError, Problem

PHI = "Zacarias Quintanilla"
TEXT = f"Paciente {PHI} visto el 03/04/2019."


def _doc(**meta):
    anns = [
        Annotation(39, 49, "DATE", "DATE", "03/04/2019", "P1", "a comment"),
        Annotation(9, 29, "NAME", "PATIENT", PHI, "P0", PHI),
    ]
    return Document("100-01", TEXT, anns, meta or None)


def test_annotation_label_key_and_overlap():
    a = Annotation(0, 5, "NAME", "DOCTOR")
    assert a.label == "NAME:DOCTOR"
    assert a.key == ("NAME", 0, 5, "DOCTOR")
    assert a.overlaps(Annotation(4, 9, "DATE", "DATE"))
    assert not a.overlaps(Annotation(5, 9, "DATE", "DATE"))  # end is exclusive
    assert a.overlaps(Annotation(1, 2, "DATE", "DATE"))


def test_annotation_equality_ignores_text_id_and_comment():
    a = Annotation(0, 5, "NAME", "DOCTOR", "Smith", "P0", "x")
    b = Annotation(0, 5, "NAME", "DOCTOR", None, "T9", "")
    assert a == b and hash(a) == hash(b)
    assert a != Annotation(0, 5, "NAME", "PATIENT")


def test_split_label():
    assert split_label("NAME:DOCTOR") == ("NAME", "DOCTOR")
    assert split_label("LOCATION:LOCATION-OTHER") == ("LOCATION", "LOCATION-OTHER")
    for bad in ("NAME", ":DOCTOR", "NAME:", ""):
        with pytest.raises(ValueError, match="CATEGORY:TYPE"):
            split_label(bad)


def test_document_sorts_annotations_and_compares_on_content():
    doc = _doc()
    assert [a.start for a in doc.annotations] == [9, 39]
    assert all(doc.text[a.start:a.end] == a.text for a in doc.annotations)
    other = Document("100-01", TEXT, reversed(doc.annotations), {"source": "elsewhere"})
    assert doc == other  # metadata does not take part in equality
    assert doc != Document("100-02", TEXT, doc.annotations)
    assert doc != Document("100-01", TEXT + " ", doc.annotations)
    assert doc != Document("100-01", TEXT, doc.annotations[:1])
    assert doc != "100-01"
    with pytest.raises(TypeError):
        hash(doc)


def test_group_defaults_to_the_document_id():
    assert _doc().group == "100-01"
    assert _doc(group="100").group == "100"


def test_with_annotations_keeps_text_metadata_and_tokens():
    doc = _doc(group="100")
    toks = doc.tokens
    assert doc.tokens is toks  # computed once
    copy = doc.with_annotations(doc.annotations[:1])
    assert copy.text == doc.text and copy.id == doc.id and copy.group == "100"
    assert copy.tokens is toks
    assert len(copy.annotations) == 1 and len(doc.annotations) == 2
    copy.metadata["group"] = "999"
    assert doc.group == "100"  # metadata is copied, not shared


def test_reprs_never_contain_text():
    doc = _doc(source="/x/100-01.xml")
    for shown in (repr(doc), str(doc), repr(doc.annotations), repr(list(doc.annotations)), repr(doc.tokens)):
        assert "Zacarias" not in shown and "Quintanilla" not in shown and "03/04/2019" not in shown
    assert repr(doc) == "Document(id='100-01', chars=50, annotations=2)"
    assert repr(doc.annotations[0]) == "Annotation(start=9, end=29, category='NAME', type='PATIENT')"


def test_problem_and_corpus_error_messages():
    p = Problem(ERROR, "a/b.xml", "not an integer", tag="P3", field="start")
    assert str(p) == "error: a/b.xml [tag P3] field 'start': not an integer"
    assert str(Problem(WARNING, "a/b.xml", "TEXT is empty")) == "warning: a/b.xml: TEXT is empty"
    err = CorpusError([p, Problem(WARNING, "c.xml", "w")] + [Problem(ERROR, f"f{i}.xml", "bad") for i in range(25)])
    assert len(err.problems) == 27
    assert str(err).startswith("26 fatal problem(s):")
    assert "a/b.xml [tag P3] field 'start'" in str(err)
    assert "... and 6 more" in str(err)  # at most 20 shown
    assert "c.xml" not in str(err)  # warnings are not listed as fatal
    assert CorpusError("plain message").problems == ()


def test_label_counts():
    docs = [_doc(), Document("x", "abc"), _doc()]
    assert label_counts(docs) == {"DATE:DATE": 2, "NAME:PATIENT": 2}


def test_scheme_tables():
    assert I2B2_PARENT_OF["DOCTOR"] == "NAME"
    assert I2B2_PARENT_OF["LOCATION-OTHER"] == "LOCATION"
    assert len(I2B2_PARENT_OF) == 30  # methods.md section 1
    assert PARENT_CATEGORIES[-1] == "OTHER" and "CONTACT" in PARENT_CATEGORIES
