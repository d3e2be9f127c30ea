"""The rule tagger: regular expressions and lexicons for PHI with a telling shape."""
from __future__ import annotations

import pickle

import pytest

from ensemble_deid.corpus.document import Document
from ensemble_deid.corpus.labelmap import LabelMap
from ensemble_deid.taggers.base import NotFittedError
from ensemble_deid_adapters.rules import RuleTagger, find_spans

from .tagger_contract import TaggerContract


class TestRulesContract(TaggerContract):
    tagger_name = "rules"
    learns = False


def spans(text: str, **params) -> list[tuple[str, str]]:
    """(label, covered text) of the rule tagger's output, via token snapping."""
    doc = Document("t", text)
    pred = RuleTagger(**params).fit([]).predict([doc])[0]
    return [(s.label, text[s.start:s.end]) for s in pred.spans(doc)]


def test_phone_and_email_with_exact_offsets():
    text = "Call 617-555-1234 or write to j.doe@mail.example.org today."
    doc = Document("t", text)
    pred = RuleTagger().fit([]).predict([doc])[0]
    found = {(s.label, s.start, s.end) for s in pred.spans(doc)}
    assert found == {("CONTACT:PHONE", 5, 17), ("CONTACT:EMAIL", 30, 52)}
    assert pred.confidences is None
    assert len(pred.tags) == len(doc.tokens)


def test_doses_scores_and_vitals_are_not_phi():
    text = "Took 5 mg daily. Pain 7/10. BP 120/80, HR 72. Glucose 110 mg/dL, 2 tablets x 3 days."
    assert spans(text) == []


@pytest.mark.parametrize("text, expected", [
    ("Seen on 03/03/1946 in clinic.", "03/03/1946"),
    ("Admitted 2019-11-02.", "2019-11-02"),
    ("Follow up on 7/10 with Dr.", "7/10"),
    ("Surgery on March 3, 2001 went well.", "March 3, 2001"),
    ("Visit 3rd of June 2005.", "3rd of June 2005"),
    ("Fecha de ingreso: 15/04/2012.", "15/04/2012"),
    ("Intervenido el 3 de marzo de 2005 sin incidencias.", "3 de marzo de 2005"),
    ("Diagnosticado en 1998, en tratamiento.", "1998"),
    ("Diagnosticado en el año 2005.", "año 2005"),
    ("Returned on Monday for labs.", "Monday"),
])
def test_dates(text, expected):
    assert ("DATE:DATE", expected) in spans(text)


def test_invalid_numeric_dates_and_place_names_are_not_dates():
    assert spans("Ratio 45/67/2001 noted.") == []
    assert not any(label == "DATE:DATE" for label, _ in spans("Ingresa en el Hospital 12 de Octubre."))


@pytest.mark.parametrize("text, expected", [
    ("A 45 year old man.", "45"),
    ("A 45-year-old man.", "45"),
    ("Pt is 72 yo.", "72"),
    ("She is aged 63 and well.", "63"),
    ("Woman in her 60s.", "60s"),
    ("Varón de 45 años que consulta.", "45 años"),
    ("Mujer de raza blanca de 67 años, fumadora.", "67 años"),
    ("Edad: 52 años.", "52 años"),
])
def test_ages(text, expected):
    assert ("AGE:AGE", expected) in spans(text)


def test_durations_are_not_ages():
    assert spans("Dolor de 2 años de evolución.") == []
    assert spans("A los 2 años del diagnóstico recidivó.") == []


@pytest.mark.parametrize("text, label, expected", [
    ("SSN 123-45-6789 on file.", "ID:SSN", "123-45-6789"),
    ("NASS: 28 12345678 90.", "ID:SSN", "28 12345678 90"),
    ("MRN: 1234567.", "ID:MEDICALRECORD", "1234567"),
    ("NHC: 7654321.", "ID:MEDICALRECORD", "7654321"),
    ("NºCol: 28 28 12345.", "ID:LICENSE", "28 28 12345"),
    ("Episodio: 99887766.", "ID:ACCOUNT", "99887766"),
    ("Boston, MA 02114.", "LOCATION:ZIP", "02114"),
    ("CP: 28034.", "LOCATION:ZIP", "28034"),
    ("Tfno: 912 345 678.", "CONTACT:PHONE", "912 345 678"),
    ("Fax: 91 234 56 78.", "CONTACT:FAX", "91 234 56 78"),
    ("See http://www.example.com/a?b=1.", "CONTACT:URL", "http://www.example.com/a?b=1"),
    ("Host 192.168.10.1 down.", "CONTACT:IPADDR", "192.168.10.1"),
])
def test_contact_id_and_zip_shapes(text, label, expected):
    assert (label, expected) in spans(text)


# An opening bracket belongs to the span when the span closes it (area codes);
# a bracket around the whole number or ID is left out, as is a stray one.
@pytest.mark.parametrize("text, label, expected", [
    ("Call (617) 555-0140 today.", "CONTACT:PHONE", "(617) 555-0140"),
    ("Call 617-555-0140 today.", "CONTACT:PHONE", "617-555-0140"),
    ("Tel: (617) 555-0140.", "CONTACT:PHONE", "(617) 555-0140"),
    ("Tel: 617 555 0140.", "CONTACT:PHONE", "617 555 0140"),
    ("Tel (617)555-0140.", "CONTACT:PHONE", "(617)555-0140"),
    ("Call +1 (617) 555-0140.", "CONTACT:PHONE", "+1 (617) 555-0140"),
    ("Tel (91) 555 12 34.", "CONTACT:PHONE", "(91) 555 12 34"),
    ("Reached at (617-555-0140) today.", "CONTACT:PHONE", "617-555-0140"),
    ("(612 345 678)", "CONTACT:PHONE", "612 345 678"),
    ("phone (555-1234) only", "CONTACT:PHONE", "555-1234"),
    ("Tfno: (+34) 612 345 678.", "CONTACT:PHONE", "612 345 678"),
    ("Fax: (617) 555-0199.", "CONTACT:FAX", "(617) 555-0199"),
    ("Fax: 617-555-0199.", "CONTACT:FAX", "617-555-0199"),
    ("(fax: 617 555 0199)", "CONTACT:FAX", "617 555 0199"),
    ("(MRN: 12345678)", "ID:MEDICALRECORD", "12345678"),
    ("MRN: 12345678", "ID:MEDICALRECORD", "12345678"),
    ("(SSN 123-45-6789)", "ID:SSN", "123-45-6789"),
    ("SSN 123-45-6789", "ID:SSN", "123-45-6789"),
    ("(DNI: 12345678Z)", "ID:IDNUM", "12345678Z"),
    ("DNI 12345678Z", "ID:IDNUM", "12345678Z"),
])
def test_brackets_around_and_inside_phone_fax_and_id_shapes(text, label, expected):
    start = text.index(expected)
    assert [(a.label, a.start, a.end) for a in find_spans(text)] == [(label, start, start + len(expected))]
    assert spans(text) == [(label, expected)]  # the same after snapping to tokens


def test_types_filter():
    text = "Call 617-555-1234 on 03/03/2001."
    assert spans(text, types=["DATE"]) == [("DATE:DATE", "03/03/2001")]
    assert spans(text, types=["CONTACT:PHONE"]) == [("CONTACT:PHONE", "617-555-1234")]
    with pytest.raises(ValueError, match="unknown type"):
        RuleTagger(types=["NOPE"]).fit([])


def test_label_map_to_meddocan():
    text = "Fecha de ingreso: 03/03/2001. Email: ana@hospital.es. NHC: 1234567."
    found = set(spans(text, label_map="i2b2-to-meddocan"))
    assert found == {
        ("DATE:FECHAS", "03/03/2001"),
        ("CONTACT:CORREO_ELECTRONICO", "ana@hospital.es"),
        ("ID:ID_SUJETO_ASISTENCIA", "1234567"),
    }
    inline = {"types": {"DATE": "DATE:FECHA"}, "drop": ["EMAIL"]}
    assert set(spans(text, label_map=inline)) == {("DATE:FECHA", "03/03/2001"), ("ID:MEDICALRECORD", "1234567")}


def test_label_map_file_and_unknown_name(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[types]\n"CONTACT:EMAIL" = "CONTACT:MAIL"\n', encoding="utf-8")
    assert spans("x a@b.org", label_map=str(path)) == [("CONTACT:MAIL", "a@b.org")]
    with pytest.raises(ValueError, match="shipped"):
        RuleTagger(label_map="no-such-map").fit([])


def test_shipped_meddocan_map_targets_meddocan_types():
    from importlib import resources

    from ensemble_deid.corpus.formats.schemes import MEDDOCAN_PARENT_OF

    text = resources.files("ensemble_deid").joinpath("labelmaps", "i2b2-to-meddocan.toml").read_text(encoding="utf-8")
    lm = LabelMap.from_dict(__import__("tomllib").loads(text))
    for target in lm.types.values():
        category, type_ = target.split(":")
        assert MEDDOCAN_PARENT_OF[type_] == category, target
    for label in RuleTagger.LABELS:
        assert label in lm.types, f"rule label {label} has no MEDDOCAN target"


def test_overlaps_resolved_by_priority():
    # an e-mail address contains a domain that the URL pattern alone would take
    assert find_spans("mail ana@hospital.es now") == [a for a in find_spans("mail ana@hospital.es now")
                                                    if a.type == "EMAIL"]
    found = find_spans("MRN: 123-45-6789")  # SSN shape after an MRN cue: one span only
    assert len(found) == 1


def test_fit_is_a_no_op_that_marks_fitted():
    tagger = RuleTagger()
    with pytest.raises(NotFittedError):
        tagger.predict([Document("t", "x")])
    assert tagger.fit([]) is tagger
    assert tagger.is_fitted()
    again = pickle.loads(pickle.dumps(tagger))
    assert again.predict([Document("t", "Call 617-555-1234")])[0].tags == \
        tagger.predict([Document("t", "Call 617-555-1234")])[0].tags
