"""Surrogates (deid/surrogate.py) and the text modes (deid/redact.py):
hand-checked cases, consistency within a patient, and a seeded fuzz test."""
from __future__ import annotations

import datetime as dt
import random
import re
import string
import time

import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.deid import Surrogator, redact


def _doc(text, patient="p1", doc_id="n1"):
    return Document(doc_id, text, metadata={"group": patient})


def _replace(s, text, label, patient="p1"):
    cat, typ = label.split(":")
    return s.replace(_doc(text, patient), Annotation(0, len(text), cat, typ))


def test_tag_and_mask_modes():
    doc = _doc("Seen by Dr. Lee on 3/4/2012.\nCall 555-1234")
    spans = [Annotation(12, 15, "NAME", "DOCTOR"), Annotation(19, 27, "DATE", "DATE"),
             Annotation(34, 42, "CONTACT", "PHONE")]
    assert redact(doc, spans, "tag") == "Seen by Dr. [NAME:DOCTOR] on [DATE].\nCall [CONTACT:PHONE]"
    assert redact(doc, spans, "mask") == "Seen by Dr. *** on ********.\nCall ********"
    with pytest.raises(ValueError, match="mode"):
        redact(doc, spans, "blur")


def test_dates_move_by_one_offset_per_patient_and_keep_their_format():
    s = Surrogator(seed=7)
    days = s.date_offset("p1")
    shift = dt.timedelta(days=days)
    assert days % 7 and 365 < abs(days) < 4 * 365
    expect = dt.date(2012, 3, 4) + shift
    assert _replace(s, "03/04/2012", "DATE:DATE") == expect.strftime("%m/%d/%Y")
    assert _replace(s, "2012-03-04", "DATE:DATE") == expect.isoformat()
    assert _replace(s, "March 4, 2012", "DATE:DATE") == f"{expect.strftime('%B')} {expect.day}, {expect.year}"
    later = dt.date(2012, 5, 20) + shift
    assert _replace(s, "5/20/2012", "DATE:DATE") == f"{later.month}/{later.day}/{later.year}"
    # the interval between two dates of one patient is kept
    a = dt.datetime.strptime(_replace(s, "03/04/2012", "DATE:DATE"), "%m/%d/%Y")
    b = dt.datetime.strptime(_replace(s, "04/15/2012", "DATE:DATE"), "%m/%d/%Y")
    assert (b - a).days == (dt.date(2012, 4, 15) - dt.date(2012, 3, 4)).days
    # day-first when a part is over 12, or when asked
    assert _replace(s, "25/12/2012", "DATE:DATE") == (dt.date(2012, 12, 25) + shift).strftime("%d/%m/%Y")
    es = Surrogator(seed=7, date_order="dmy")
    assert _replace(es, "03/04/2012", "DATE:DATE") == (dt.date(2012, 4, 3) + shift).strftime("%d/%m/%Y")
    spanish = _replace(es, "4 de marzo de 2012", "DATE:DATE")
    assert re.fullmatch(r"\d{1,2} de [a-z]+ de \d{4}", spanish) and spanish != "4 de marzo de 2012"


def test_names_are_consistent_within_a_patient_and_keep_case():
    s = Surrogator(seed=1)
    full = _replace(s, "John Smith", "NAME:PATIENT")
    first, last = full.split()
    assert _replace(s, "Smith", "NAME:DOCTOR") == last
    assert _replace(s, "SMITH, JOHN", "NAME:PATIENT") == f"{last.upper()}, {first.upper()}"
    assert _replace(s, "J. Smith", "NAME:PATIENT").endswith(last)
    assert "Smith" not in full and "John" not in full
    other = [_replace(s, "John Smith", "NAME:PATIENT", patient=f"q{i}") for i in range(5)]
    assert len(set(other) | {full}) > 1  # independent draws for other patients
    assert Surrogator(seed=1).replace(_doc("John Smith"), Annotation(0, 10, "NAME", "PATIENT")) == full


def test_ages_ids_and_phones():
    s = Surrogator(seed=2)
    assert _replace(s, "93", "AGE:AGE") == "90+"
    assert _replace(s, "103-year-old", "AGE:AGE") == "90+-year-old"
    young = int(_replace(s, "45", "AGE:AGE"))
    assert young != 45 and abs(young - 45) <= 3 and int(_replace(s, "50", "AGE:AGE")) - 50 == young - 45
    for text, label in [("(617) 555-1234", "CONTACT:PHONE"), ("MRN 123-45-A", "ID:MEDICALRECORD"),
                        ("02114", "LOCATION:ZIP")]:
        out = _replace(s, text, label)
        assert out != text and len(out) == len(text)
        shape = lambda t: re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", t)))  # noqa: E731
        assert shape(out) == shape(text)


def test_fuzz_replacements_never_return_the_original():
    rng = random.Random(11)
    s = Surrogator(seed=5)
    labels = ["NAME:PATIENT", "NAME:DOCTOR", "DATE:DATE", "AGE:AGE", "ID:IDNUM", "CONTACT:PHONE",
              "LOCATION:CITY", "LOCATION:HOSPITAL", "PROFESSION:PROFESSION", "OTHER:X", "LOCATION:STREET"]
    alphabet = string.ascii_letters + string.digits + " /-.,'ñé"
    t0 = time.perf_counter()
    for i in range(600):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))).strip() or "x"
        label = rng.choice(labels)
        out = _replace(s, text, label, patient=f"p{i % 7}")
        assert isinstance(out, str) and out.casefold() != text.casefold(), (label, i)
    assert time.perf_counter() - t0 < 60


def test_mapping_is_recorded_only_when_asked():
    doc = _doc("Dr. Lee")
    span = [Annotation(4, 7, "NAME", "DOCTOR")]
    quiet = Surrogator(seed=1)
    redact(doc, span, "surrogate", quiet)
    assert quiet.mapping == {}
    loud = Surrogator(seed=1, record=True)
    out = redact(doc, span, "surrogate", loud)
    (entry,) = loud.mapping["n1"]
    assert entry["original"] == "Lee" and out == "Dr. " + entry["surrogate"]


def test_the_default_seed_is_random():
    assert Surrogator().seed != Surrogator().seed  # never a fixed, guessable key
