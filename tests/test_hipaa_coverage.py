"""A warning when the gold labels barely fit the HIPAA filter (issue 34 item 9):
on MEDDOCAN the hipaa_* criteria counted only AGE and DATE (1,245 of 5,801
dev spans) without saying so."""
from __future__ import annotations

import warnings

import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.evaluation import EvaluationWarning, evaluate


def _warnings(gold, criteria):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate(gold, {d.id: d.annotations for d in gold}, criteria=criteria)
    return [str(w.message) for w in caught if issubclass(w.category, EvaluationWarning)]


def _doc(*labels):
    text = " ".join(f"w{k}" for k in range(len(labels)))
    anns = tuple(Annotation(3 * k, 3 * k + 2, cat, typ) for k, (cat, typ) in enumerate(labels))
    return Document("d1", text, anns)


def test_meddocan_dev_says_the_hipaa_criteria_cover_only_age_and_date(meddocan_dir):
    from ensemble_deid.corpus.formats import load_directory

    gold = load_directory(meddocan_dir / "dev" / "xml")
    said = _warnings(gold, "hipaa_strict")
    assert len(said) == 1
    assert "keeps 1,245 of 5,801 gold spans (21%)" in said[0]
    assert "no NAME, LOCATION, CONTACT, ID span" in said[0] and "cover only AGE, DATE" in said[0]
    assert _warnings(gold, "strict") == []  # no HIPAA criterion asked for: nothing to say


def test_i2b2_labels_and_a_minority_of_other_types_do_not_warn():
    # 2 of 4 spans kept (NAME/PATIENT, DATE): half, and NAME has a HIPAA type
    assert _warnings([_doc(("NAME", "PATIENT"), ("NAME", "DOCTOR"), ("DATE", "DATE"), ("LOCATION", "HOSPITAL"))],
                     "hipaa_strict") == []
    # 1 of 3 kept, but every category with HIPAA types has some: only DOCTOR/HOSPITAL miss, as in i2b2
    assert _warnings([_doc(("NAME", "PATIENT"), ("NAME", "DOCTOR"), ("NAME", "DOCTOR"))], "hipaa_strict") == []


@pytest.mark.parametrize("labels,missed", [
    ((("NAME", "NOMBRE"), ("CONTACT", "CORREO"), ("DATE", "FECHAS")), "NAME, CONTACT"),
    ((("ID", "DNI"), ("ID", "NHC")), "ID"),
])
def test_another_label_scheme_warns_naming_the_categories(labels, missed):
    said = _warnings([_doc(*labels)], "hipaa_token,strict")
    assert len(said) == 1 and f"no {missed} span" in said[0]
