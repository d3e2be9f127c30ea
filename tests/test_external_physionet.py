"""PhysioNet deid: its record and PHI-location formats (from the published
description: ``START_OF_RECORD=P||||N||||`` records; ``.phi`` files of
``Patient N<TAB>Note M`` headers and ``START START END`` lines; ``-phi.phrase``
lines with categories; ``[**marker**]`` in ``.res``), import mode, and run
mode through Perl with a stand-in for deid.pl (deid.pl itself is not here)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ensemble_deid.experiment.cache import PredictionCache
from ensemble_deid.experiment.cv import CrossValidation, TaggerSpec
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.taggers.external.base import ExternalOutputError, ExternalToolError, grouped_numbers
from ensemble_deid.taggers.external.physionet_format import format_records, parse_phi, parse_records, res_categories
from ensemble_deid.taggers.base import TaggerUnavailable
from ensemble_deid.taggers.registry import make_tagger

from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus

DATA = Path(__file__).parent / "data" / "external"
needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")


@pytest.fixture
def deid_dir(tmp_path):
    """A deid 'installation': the stand-in script and its config in one folder."""
    folder = tmp_path / "deid-1.1"
    folder.mkdir()
    shutil.copy(DATA / "fake_deid.pl", folder / "deid.pl")
    shutil.copy(DATA / "fake_deid.config", folder / "deid-output.config")
    return folder


# --- formats -----------------------------------------------------------------------

def test_published_sample_files_parse():
    records = parse_records((DATA / "sample.text").read_text(), "sample.text")
    assert list(records) == [(1, 1), (1, 2)]
    assert records[(1, 1)] == "Pt seen 01/02/2003. Call 555-123-4567.\n"
    phi = parse_phi((DATA / "sample.phi").read_text(), "sample.phi")
    assert not phi.categorised
    assert [(e.start, e.end) for e in phi.records[(1, 1)]] == [(8, 18), (25, 37)]
    assert phi.records[(1, 2)] == []
    text = records[(1, 1)]
    assert [text[e.start:e.end] for e in phi.records[(1, 1)]] == ["01/02/2003", "555-123-4567"]
    phrase = parse_phi((DATA / "sample-phi.phrase").read_text(), "sample-phi.phrase")
    assert phrase.categorised and [(e.start, e.end, e.category) for e in phrase.records[(1, 1)]] == [(8, 18, "Date"), (25, 37, "Phone")]
    res = parse_records((DATA / "sample.res").read_text(), "sample.res")
    names = res_categories(text, res[(1, 1)], [(8, 18), (25, 37)])
    assert names == {(8, 18): "Date range (1)", (25, 37): "Telephone/Fax (1)"}


def test_records_round_trip_and_numbering():
    docs = tiny_corpus(5)
    keys = grouped_numbers(docs)
    assert keys == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1)]  # patients by group, notes within
    text = format_records(docs, keys)
    assert text.startswith("START_OF_RECORD=1||||1||||\n") and text.rstrip().endswith("||||END_OF_RECORD")
    back = parse_records(text, "x")
    assert [back[k].rstrip("\n") for k in keys] == [d.text.rstrip("\n") for d in docs]


def test_a_note_holding_a_record_marker_cannot_be_written():
    doc = Document("x", "fine\n||||END_OF_RECORD\nmore")
    with pytest.raises(ExternalOutputError, match="record marker"):
        format_records([doc], [(1, 1)])


@pytest.mark.parametrize("content, message", [
    ("", "no records found"),
    ("52\t52\t63\n", "line 1: PHI position before any 'Patient N<TAB>Note M' header"),
    ("Patient 1\tNote 1\n52\t52\n", "line 2: malformed line"),
    ("Patient 1\tNote 1\n52 52 sixty\n", "line 2: malformed line"),
    ("Patient 1\tNote 1\n60\t60\t52\n", "line 2: end 52 before start 60"),
    ("Patient 1\tNote 1\nPatient 1\tNote 1\n", "line 2: record patient 1 note 1 appears twice"),
    ("1 1 8 18 Date x\nPatient 1\tNote 1\n", "line 2: malformed line"),
])
def test_malformed_phi_files_are_clear_errors(content, message):
    with pytest.raises(ExternalOutputError) as err:
        parse_phi(content, "out.phi")
    assert str(err.value).startswith("out.phi: ") and message in str(err.value)


@pytest.mark.parametrize("content, message", [
    ("START_OF_RECORD=1||||1||||\ntext\n", "record patient 1 note 1 has no END_OF_RECORD"),
    ("stray\nSTART_OF_RECORD=1||||1||||\n||||END_OF_RECORD\n", "line 1: text outside a record"),
    ("START_OF_RECORD=1|1\ntext\n||||END_OF_RECORD\n", "line 1: malformed START_OF_RECORD"),
    ("START_OF_RECORD=1||||1||||\nSTART_OF_RECORD=1||||2||||\n", "line 2: START_OF_RECORD before the END_OF_RECORD"),
    ("||||END_OF_RECORD\n", "line 1: END_OF_RECORD outside a record"),
])
def test_malformed_record_files_are_clear_errors(content, message):
    with pytest.raises(ExternalOutputError, match=message):
        parse_records(content, "in.text")


# --- import mode ---------------------------------------------------------------------

def _import_files(tmp_path, docs, phi_lines=None, keys=None):
    keys = keys or grouped_numbers(docs)
    (tmp_path / "notes.text").write_text(format_records(docs, keys), encoding="utf-8")
    if phi_lines is None:
        phi_lines = []
        for doc, (p, n) in zip(docs, keys):
            phi_lines.append(f"Patient {p}\tNote {n}")
            for a in doc.annotations:
                if a.type in ("DATE", "PHONE"):
                    s = len(doc.text[:a.start].encode("utf-8"))
                    e = len(doc.text[:a.end].encode("utf-8"))
                    phi_lines.append(f"{s}\t{s}\t{e}")
    (tmp_path / "notes.phi").write_text("\n".join(phi_lines) + "\n", encoding="utf-8")
    return dict(records=str(tmp_path / "notes.text"), phi=str(tmp_path / "notes.phi"))


def test_import_mode_with_byte_offsets_and_default_category(tmp_path):
    docs = tiny_corpus(4)
    docs[1] = Document(docs[1].id, "Señora Núñez: " + docs[1].text,
                       [Annotation(a.start + 14, a.end + 14, a.category, a.type) for a in docs[1].annotations],
                       docs[1].metadata)
    tagger = make_tagger("physionet-deid", **_import_files(tmp_path, docs)).fit([])
    preds = tagger.predict(docs[::-1])  # any order: records are matched by text
    for pred, doc in zip(preds, docs[::-1]):
        spans = pred.spans(doc)
        assert {(s.start, s.end) for s in spans} == {(a.start, a.end) for a in doc.annotations if a.type in ("DATE", "PHONE")}
        assert {s.label for s in spans} == {"OTHER:PHI"}  # a .phi file alone has no categories


def test_import_mode_categories_from_a_phrase_file(tmp_path):
    docs = tiny_corpus(2)
    keys = grouped_numbers(docs)
    lines = [f"{p} {n} {a.start} {a.end} {'Date' if a.type == 'DATE' else 'HCPName'} xx"
             for doc, (p, n) in zip(docs, keys) for a in doc.annotations if a.type in ("DATE", "DOCTOR")]
    files = _import_files(tmp_path, docs, lines)
    preds = make_tagger("physionet-deid", **files).fit([]).predict(docs)
    for pred, doc in zip(preds, docs):
        assert {s.key for s in pred.spans(doc)} == {a.key for a in doc.annotations if a.type in ("DATE", "DOCTOR")}


def test_import_mode_errors(tmp_path):
    docs = tiny_corpus(3)
    files = _import_files(tmp_path, docs[:2])
    tagger = make_tagger("physionet-deid", **files).fit([])
    with pytest.raises(ExternalOutputError, match=r"no record has the text of 1 document\(s\): '001-01'"):
        tagger.predict(docs)
    # a span past the end of its record
    files = _import_files(tmp_path, docs[:1], ["Patient 1\tNote 1", "10\t10\t99999"])
    with pytest.raises(ExternalOutputError, match=r"line 2: span \[10, 99999\) lies off the record"):
        make_tagger("physionet-deid", **files).fit([]).predict(docs[:1])
    # a record with no entry in the .phi file
    files = _import_files(tmp_path, docs[:2], ["Patient 1\tNote 1"])
    with pytest.raises(ExternalOutputError, match=r"no entry for record patient 1 note 2 \(document '000-02'\)"):
        make_tagger("physionet-deid", **files).fit([]).predict(docs[:2])
    # a malformed .phi file fails at fit, before anything is predicted
    (tmp_path / "notes.phi").write_text("garbage\n", encoding="utf-8")
    with pytest.raises(ExternalOutputError, match="notes.phi: line 1: malformed line"):
        make_tagger("physionet-deid", **files).fit([])


# --- run mode (Perl) ---------------------------------------------------------------

@needs_perl
class TestPhysioNetDeidRunContract(TaggerContract):
    tagger_name = "physionet-deid"
    learns = False

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _install(cls, tmp_path_factory):
        folder = tmp_path_factory.mktemp("deid-1.1")
        shutil.copy(DATA / "fake_deid.pl", folder / "deid.pl")
        shutil.copy(DATA / "fake_deid.config", folder / "deid-output.config")
        cls.tagger_params = {"deid_pl": str(folder / "deid.pl")}
        yield
        cls.tagger_params = {}

    def test_finds_and_types_what_deid_marks(self, predictions, corpus):
        wanted = {"DATE": "DATE:DATE", "PHONE": "CONTACT:PHONE", "MEDICALRECORD": "ID:MEDICALRECORD"}
        for pred, doc in zip(predictions, corpus[1]):
            gold = {(a.start, a.end, wanted[a.type]) for a in doc.annotations if a.type in wanted}
            # the stand-in marks the surname after "Dr. " (Last Name (STitle))
            gold |= {(a.start + 4, a.end, "NAME:DOCTOR") for a in doc.annotations if a.type == "DOCTOR"}
            assert {(s.start, s.end, s.label) for s in pred.spans(doc)} == gold


@needs_perl
def test_run_mode_non_ascii_text_and_environment(deid_dir):
    doc = Document("n1", "Paciente Muñoz, visto el 03/04/2019 en Cádiz; teléfono 555-321-9876.\n")
    tagger = make_tagger("physionet-deid", deid_pl=str(deid_dir / "deid.pl")).fit([])
    pred = tagger.predict([doc])[0]
    got = [(doc.text[s.start:s.end], s.label) for s in pred.spans(doc)]
    assert got == [("03/04/2019", "DATE:DATE"), ("555-321-9876", "CONTACT:PHONE")]
    env = tagger.environment()
    assert env["mode"] == "run" and env["perl"].startswith("v5")


@needs_perl
def test_run_mode_failure_and_env_configuration(deid_dir, monkeypatch):
    monkeypatch.setenv("ENSEMBLE_DEID_DEID_PL", str(deid_dir / "deid.pl"))
    tagger = make_tagger("physionet-deid").fit([])  # configured by the environment alone
    monkeypatch.setenv("FAKE_DEID_FAIL", "1")
    with pytest.raises(ExternalToolError, match="deid.pl exited with status 3"):
        tagger.predict(tiny_corpus(1))


# --- issue 21, item 19 ----------------------------------------------------------------

@needs_perl
def test_deids_own_known_patient_list_is_never_applied_to_our_notes(deid_dir):
    # deid ships sample known patients keyed by patient number; ours are numbered 1..N
    sample = "1||||Ana||||Ruiz\n2||||Luis||||Vega\n"
    for folder in (deid_dir, deid_dir / "lists"):
        folder.mkdir(exist_ok=True)
        (folder / "pid_patientname.txt").write_text(sample, encoding="utf-8")
    docs = [Document("a", "Ana Ruiz came on 01/02/2003.\n", metadata={"group": "p1"}),
            Document("b", "Luis Vega, phone 555-321-9876.\n", metadata={"group": "p2"})]
    preds = make_tagger("physionet-deid", deid_pl=str(deid_dir / "deid.pl")).fit([]).predict(docs)
    got = [[(d.text[s.start:s.end], s.label) for s in p.spans(d)] for p, d in zip(preds, docs)]
    assert got == [[("01/02/2003", "DATE:DATE")], [("555-321-9876", "CONTACT:PHONE")]]
    assert (deid_dir / "pid_patientname.txt").read_text(encoding="utf-8") == sample  # deid's own files untouched


@needs_perl
def test_categories_come_from_info_where_res_repeats_the_first_marker(deid_dir, monkeypatch):
    # deid gives "Garcia" one surrogate per record: the marker of its first
    # occurrence (a patient, after "Ms.") also covers the doctor after "Dr."
    doc = Document("n", "Ms. Garcia was seen. Dr. Garcia signed on 03/04/2019.\n")
    names = {"Garcia": (4, 10), "Dr": (25, 31)}
    tagger = make_tagger("physionet-deid", deid_pl=str(deid_dir / "deid.pl")).fit([])
    spans = {(s.start, s.end): s.label for s in tagger.predict([doc])[0].spans(doc)}
    assert spans == {names["Garcia"]: "NAME:PATIENT", names["Dr"]: "NAME:DOCTOR", (42, 52): "DATE:DATE"}
    # without .info the .res fallback still types every span (with deid's repeated marker)
    monkeypatch.setenv("FAKE_DEID_NO_INFO", "1")
    spans = {(s.start, s.end): s.label for s in tagger.predict([doc])[0].spans(doc)}
    assert spans == {names["Garcia"]: "NAME:PATIENT", names["Dr"]: "NAME:PATIENT", (42, 52): "DATE:DATE"}


def test_info_lines_are_read_by_position_and_never_taken_for_text():
    from ensemble_deid.taggers.external.physionet_format import parse_info

    info = parse_info("Patient 1\tNote 2\n52\t63\tKnown patient lastname\n5-9\tJohn\tFirst Name (STitle)\n"
                      "7 7 9\tDate\n10\t12\t2573\tDate\nnot a position\n")
    assert info == {(1, 2): {(52, 63): ["Known patient lastname"], (5, 9): ["John", "First Name (STitle)"],
                             (7, 9): ["Date"], (10, 12): ["2573", "Date"]}}


@needs_perl
def test_cache_key_covers_deids_lists_and_dictionaries(deid_dir):
    for sub in ("lists", "dict"):
        (deid_dir / sub).mkdir()
        (deid_dir / sub / "words.txt").write_text("alpha\n", encoding="utf-8")
    tagger = make_tagger("physionet-deid", deid_pl=str(deid_dir / "deid.pl"))
    before = tagger.param_hash()
    for sub in ("lists", "dict"):
        (deid_dir / sub / "words.txt").write_text("beta\n", encoding="utf-8")
        assert tagger.param_hash() != before, sub
        before = tagger.param_hash()
    (deid_dir / "deid-output.config").write_text("Gold standard comparison = 0\n# changed\n", encoding="utf-8")
    assert tagger.param_hash() != before
    # the known-patient list is never used, so it is not part of the key
    before = tagger.param_hash()
    (deid_dir / "lists" / "pid_patientname.txt").write_text("1||||A||||B\n", encoding="utf-8")
    assert tagger.param_hash() == before


@needs_perl
def test_gold_comparison_config_is_an_actionable_error_before_any_run(deid_dir):
    gold_config = deid_dir / "deid.config"
    gold_config.write_text("# deid's gold-standard comparison config\nGold standard comparison = 1\n", encoding="utf-8")
    tagger = make_tagger("physionet-deid", deid_pl=str(deid_dir / "deid.pl"), config=str(gold_config))
    ok, reason = tagger.availability()
    assert not ok
    assert str(gold_config.resolve()) in reason and "Gold standard comparison = 1" in reason
    assert "PREFIX.deid" in reason and "deid-output.config" in reason
    with pytest.raises(TaggerUnavailable, match="Gold standard comparison = 0"):
        tagger.fit([])


@needs_perl
def test_deid_failure_names_program_and_config_and_never_its_output(deid_dir, monkeypatch):
    secret = "Paciente Zacarias Onofre visto el 03/04/2019.\n"
    monkeypatch.setenv("FAKE_DEID_FAIL", "1")
    tagger = make_tagger("physionet-deid", deid_pl=str(deid_dir / "deid.pl")).fit([])
    with pytest.raises(ExternalToolError) as err:
        tagger.predict([Document("n", secret)])
    message = str(err.value)
    assert "exited with status 3" in message and "deid-output.config" in message and "lists/ and dict/" in message
    assert "Zacarias" not in message and "Onofre" not in message


@needs_perl
def test_run_mode_in_cross_validation(deid_dir, tmp_path):
    docs = tiny_corpus(10)
    engine = CrossValidation(docs[:8], {"test": docs[8:]}, PredictionCache(tmp_path / "cache"), k=2)
    spec = TaggerSpec.parse(f"physionet-deid:deid_pl={deid_dir / 'deid.pl'}")
    run = engine.run([spec], progress=False)[spec.label]
    assert run.external and run.computed == 2  # one pass over the training set, one over the test set
    assert set(run.oof) == {d.id for d in docs[:8]}
    assert all(r["environment"]["mode"] == "run" for r in run.records)
