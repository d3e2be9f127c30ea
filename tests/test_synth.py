"""The synthetic corpora: determinism, exact offsets, round trips, category
mix, the hard cases, and the embedded-corpus cache. Corpora here are small."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from ensemble_deid.corpus.bio import alignment_loss
from ensemble_deid.corpus.document import I2B2_PARENT_OF
from ensemble_deid.errors import ERROR
from ensemble_deid.corpus.formats import read_directory, to_i2b2_xml
from ensemble_deid.corpus.synth import (
    GENERATOR_VERSION, MANIFEST_NAME, REAL_TEST_COUNTS, STYLES, category_mix, generate_corpus,
    mix_deviation, synthesize,
)
from ensemble_deid.corpus.synth.builder import Composer, Noise, TextBuilder
from ensemble_deid.corpus.synth.mix import CATEGORIES

import random


@pytest.fixture(scope="module")
def corpora():
    return {
        "i2b2-2014": generate_corpus("i2b2-2014", 60, 7),
        "ngrid-2016": generate_corpus("ngrid-2016", 30, 7),
    }


def _xml(docs):
    return [to_i2b2_xml(d) for d in docs]


@pytest.mark.parametrize("style", STYLES)
def test_same_seed_same_bytes_other_seed_other_corpus(style):
    a = _xml(generate_corpus(style, 6, 3))
    b = _xml(generate_corpus(style, 6, 3))
    c = _xml(generate_corpus(style, 6, 4))
    assert a == b
    assert a != c
    # Each document differs, not just one of them.
    assert all(x != y for x, y in zip(a, c))


def test_test_split_differs_from_train_split():
    train = generate_corpus("ngrid-2016", 3, 3, split="train")
    test = generate_corpus("ngrid-2016", 3, 3, split="test")
    assert {d.id for d in train}.isdisjoint(d.id for d in test)


_PROGRAM = (
    "import hashlib\n"
    "from ensemble_deid.corpus.formats import to_i2b2_xml\n"
    "from ensemble_deid.corpus.synth import generate_corpus\n"
    "h = hashlib.sha256()\n"
    "for style in ('i2b2-2014', 'ngrid-2016'):\n"
    "    for d in generate_corpus(style, 3, 11):\n"
    "        h.update(to_i2b2_xml(d).encode())\n"
    "print(h.hexdigest())\n"
)


def test_output_does_not_depend_on_hash_seed():
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    local = hashlib.sha256()
    for style in STYLES:
        for d in generate_corpus(style, 3, 11):
            local.update(to_i2b2_xml(d).encode())
    digests.add(local.hexdigest())
    assert len(digests) == 1


@pytest.mark.parametrize("style", STYLES)
def test_spans_are_exact_typed_and_token_aligned(corpora, style):
    docs = corpora[style]
    for doc in docs:
        for ann in doc.annotations:
            assert ann.text == doc.text[ann.start:ann.end]
            assert ann.text == ann.text.strip() and ann.text
            assert I2B2_PARENT_OF[ann.type] == ann.category
        spans = sorted((a.start, a.end) for a in doc.annotations)
        assert all(e1 <= s2 for (_, e1), (s2, _) in zip(spans, spans[1:])), "overlapping spans"
    report = alignment_loss(docs)
    assert report.spans > 500
    assert report.loss < 0.01
    # No template syntax leaks into the notes.
    assert not any(re.search(r"\[\[|\]\]|\{[A-Za-z_]+\}", d.text) for d in docs)


@pytest.mark.parametrize("style", STYLES)
def test_written_corpus_reads_back_without_problems(tmp_path, style):
    out = tmp_path / "corpus"
    docs = synthesize(style, 5, 2, out)
    files = sorted(p.name for p in out.glob("*.xml"))
    assert files == sorted(f"{d.id}.xml" for d in docs)
    back, problems = read_directory(out)
    assert problems == []
    assert [d.id for d in back] == [d.id for d in docs]
    for original, loaded in zip(docs, back):
        assert loaded == original
        assert all(a.text == loaded.text[a.start:a.end] for a in loaded.annotations)
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert manifest["generator_version"] == GENERATOR_VERSION
    assert manifest["style"] == style and manifest["seed"] == 2 and manifest["docs"] == 5
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert all((p.stat().st_mode & 0o077) == 0 for p in out.glob("*.xml"))


def test_synthesize_twice_gives_identical_files(tmp_path):
    synthesize("i2b2-2014", 4, 9, tmp_path / "a")
    synthesize("i2b2-2014", 4, 9, tmp_path / "b")
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_synthesize_refuses_to_mix_with_an_existing_corpus(tmp_path):
    out = tmp_path / "c"
    synthesize("ngrid-2016", 2, 1, out)
    with pytest.raises(FileExistsError):
        synthesize("ngrid-2016", 2, 5, out)
    (out / "notes.txt").write_text("kept")
    synthesize("ngrid-2016", 1, 5, out, overwrite=True)
    assert len(list(out.glob("*.xml"))) == 1
    assert (out / "notes.txt").read_text() == "kept"


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        generate_corpus("i2b2-2099", 3, 1)
    with pytest.raises(ValueError):
        generate_corpus("ngrid-2016", 0, 1)
    with pytest.raises(ValueError):
        generate_corpus("ngrid-2016", 2, 1, split="dev")
    with pytest.raises(ValueError):  # PPP ids have 3 digits
        generate_corpus("i2b2-2014", 50, 1, first_id=990)


@pytest.mark.parametrize("style", STYLES)
def test_category_mix_close_to_the_real_corpus(corpora, style):
    deviation = mix_deviation(corpora[style], style)
    assert max(abs(v) for v in deviation.values()) < 5.0, deviation
    assert set(category_mix(corpora[style])) == set(CATEGORIES) == set(REAL_TEST_COUNTS[style])


def test_2014_records_are_grouped_by_patient_and_consistent(corpora):
    docs = corpora["i2b2-2014"]
    assert all(re.fullmatch(r"\d{3}-\d{2}", d.id) for d in docs)
    by_patient = defaultdict(list)
    for d in docs:
        by_patient[d.id[:3]].append(d)
    assert len(by_patient) < len(docs) / 2  # several records per patient on average
    for records in by_patient.values():
        mrns = {re.sub(r"\W", "", a.text) for d in records for a in d.annotations if a.type == "MEDICALRECORD"}
        assert len(mrns) <= 1
        header_dates = []
        for d in records:
            m = re.match(r"Record date: (\d{4}-\d{2}-\d{2})", d.text, re.I)
            if m:
                header_dates.append(m.group(1))
        assert header_dates == sorted(header_dates)
        assert len(set(header_dates)) == len(header_dates)


def test_2016_notes_are_long_and_one_per_patient(corpora):
    d14, d16 = corpora["i2b2-2014"], corpora["ngrid-2016"]
    assert all(re.fullmatch(r"\d{4}", d.id) for d in d16)
    assert len({d.group for d in d16}) == len(d16)
    mean = lambda docs, f: sum(map(f, docs)) / len(docs)  # noqa: E731
    assert mean(d16, lambda d: len(d.tokens)) > 1.5 * mean(d14, lambda d: len(d.tokens))
    assert mean(d16, lambda d: d.tokens.n_sentences) > 1.5 * mean(d14, lambda d: d.tokens.n_sentences)
    # Sentences are short in the intake notes.
    assert mean(d16, lambda d: len(d.tokens) / d.tokens.n_sentences) < 10


def _date_shape(text: str) -> str:
    return re.sub(r"[A-Za-z]+", "A", re.sub(r"\d", "9", text))


def test_hard_cases_are_present(corpora):
    d14, d16 = corpora["i2b2-2014"], corpora["ngrid-2016"]
    both = d14 + d16
    dates = {_date_shape(a.text) for d in both for a in d.annotations if a.type == "DATE"}
    assert len(dates) >= 10
    ages = {_date_shape(a.text) for d in both for a in d.annotations if a.type == "AGE"}
    assert {"99", "99A"} <= ages  # "54" and "40s"
    assert any(not a.text[0].isdigit() for d in both for a in d.annotations if a.type == "AGE")  # words, "mid-40s"
    # PHI glued to PHI inside one white-space piece ("3041023MARY").
    glued = [
        (a, b) for d in d14 for a, b in zip(d.annotations, d.annotations[1:])
        if a.end == b.start and a.text[-1].isdigit() and b.text[0].isalpha()
    ]
    assert glued
    from ensemble_deid.corpus.synth import lists
    word_names = {w.lower() for w in lists.WORD_SURNAMES}
    names = [a.text.lower() for d in both for a in d.annotations if a.category == "NAME"]
    assert any(n in word_names for n in names)
    # ...and the same words untagged elsewhere.
    assert any(re.search(r"\b(hope|brown|young|stone|gross|sharp|short|long)\b", d.text) for d in both)
    # Non-PHI look-alikes: doses, scores, room air, lab values.
    text14 = "\n".join(d.text for d in d14)
    assert re.search(r"\b\d+ mg\b", text14) and re.search(r"\b\d{1,2}/10\b", text14)
    assert re.search(r"room air|\bRA\b", text14)
    types16 = {a.type for d in d16 for a in d.annotations}
    assert {"PROFESSION", "ORGANIZATION", "CITY", "COUNTRY", "AGE", "HOSPITAL"} <= types16
    types14 = {a.type for d in d14 for a in d.annotations}
    assert {"MEDICALRECORD", "PHONE", "STREET", "ZIP", "USERNAME", "HOSPITAL"} <= types14


def test_styles_differ_in_their_phi_mix(corpora):
    m14, m16 = category_mix(corpora["i2b2-2014"]), category_mix(corpora["ngrid-2016"])
    assert m16["PROFESSION"] > 3 * m14["PROFESSION"]
    assert m16["AGE"] > 2 * m14["AGE"]
    assert m14["ID"] > 5 * m16["ID"]
    assert m14["DATE"] > m16["DATE"] + 0.08
    # 2014 dates are shifted into 2060-2100, 2016 ones are not.
    years14 = [int(y) for d in corpora["i2b2-2014"] for a in d.annotations if a.type == "DATE"
               for y in re.findall(r"\b(\d{4})\b", a.text)]
    years16 = [int(y) for d in corpora["ngrid-2016"] for a in d.annotations if a.type == "DATE"
               for y in re.findall(r"\b(\d{4})\b", a.text)]
    assert years14 and min(years14) >= 2040
    assert years16 and max(years16) <= 2020


def test_builder_records_exact_spans_and_rejects_bad_pieces():
    b = TextBuilder()
    c = Composer(b, random.Random(1), {"X": lambda: [("Ann", "PATIENT")], "n": lambda: "7"},
                 Noise(random.Random(2), typo_rate=1.0, space_rate=1.0))
    c.say("Seen [[by|with]] {X} x{n}; called {X}.")
    doc = b.document("d")
    assert [doc.text[a.start:a.end] for a in doc.annotations] == ["Ann", "Ann"]
    with pytest.raises(ValueError):
        b.phi(" padded", "PATIENT")
    with pytest.raises(ValueError):
        b.phi("x", "NOT-A-TYPE")
    with pytest.raises(KeyError):
        c.say("{MISSING}")
    upper = b.document("d", upper=True)
    assert [upper.text[a.start:a.end] for a in upper.annotations] == ["ANN", "ANN"]


def test_careless_casing_and_typos_inside_phi_keep_spans_exact():
    b = TextBuilder()
    slots = {"X": lambda: [("Ann Lowell", "PATIENT")], "C": lambda: [("Framingham", "CITY")],
             "D": lambda: [("5/3/67", "DATE")]}
    c = Composer(b, random.Random(3), slots, Noise(random.Random(4), phi_case_rate=1.0, phi_typo_rate=1.0))
    c.say("Seen {X} from {C} on {D}.")
    doc = b.document("d")
    texts = [doc.text[a.start:a.end] for a in doc.annotations]
    assert [a.text for a in doc.annotations] == texts
    for text, original in zip(texts[:2], ("Ann Lowell", "Framingham")):
        assert text.islower() or text.isupper()  # re-cased ...
        assert text.lower() != original.lower()  # ... and misspelt
    assert texts[2] == "5/3/67"  # dates are never re-cased or misspelt


def test_test_splits_see_rare_frames_and_forms_more_often():
    from ensemble_deid.corpus.synth.generate import RARE_BOOST, RARE_FRAME_WEIGHT
    assert RARE_BOOST["test"] > RARE_BOOST["train"] == 1.0
    assert RARE_FRAME_WEIGHT["test"] > 5 * RARE_FRAME_WEIGHT["train"]
