"""MIST / MAT: the MAT JSON document format (versions 1 and 2, from MAT's
published description: ``signal``, ``asets`` of ``type`` / ``hasSpan`` /
``hasID`` / ``attrs`` / ``annots``), inline XML, import mode, and run mode
through a stand-in MATEngine (MIST itself is not here)."""
from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.external.base import ExternalOutputError, ExternalToolError
from ensemble_deid.taggers.external.mat_format import MatSpan, parse_inline_xml, parse_mat_json
from ensemble_deid.taggers.registry import make_tagger

from .tagger_contract import TaggerContract
from .tiny_corpus import tiny_corpus

MIST_NAMES = {"PATIENT": "PATIENT", "DOCTOR": "DOCTOR", "DATE": "DATE", "HOSPITAL": "HOSPITAL",
              "CITY": "LOCATION", "PHONE": "PHONE", "MEDICALRECORD": "ID", "AGE": "AGE"}


def mat_json(doc: Document, version: int = 2) -> str:
    """A MAT JSON document with the gold as MIST-style tags, plus lex and zone sets."""
    by_type: dict[str, list] = {}
    for a in doc.annotations:
        by_type.setdefault(MIST_NAMES[a.type], []).append([a.start, a.end])
    toks = [[int(s), int(e)] for s, e in zip(doc.tokens.starts, doc.tokens.ends)]
    if version == 1:
        asets = [{"type": t, "attrs": [], "annots": v} for t, v in by_type.items()]
        asets.append({"type": "lex", "attrs": [], "annots": toks})
    else:
        asets = [{"type": t, "hasID": False, "hasSpan": True, "attrs": [], "annots": v} for t, v in by_type.items()]
        asets.append({"type": "lex", "hasID": False, "hasSpan": True, "attrs": [], "annots": toks})
        asets.append({"type": "zone", "hasID": True, "hasSpan": True,
                      "attrs": [{"name": "region_type", "type": "string"}], "annots": [[0, len(doc.text), "z1", "body"]]})
        asets.append({"type": "relation", "hasID": False, "hasSpan": False, "attrs": [], "annots": [["x"]]})
    return json.dumps({"signal": doc.text, "metadata": {}, "asets": asets, "version": version})


def inline_xml(doc: Document) -> str:
    out, pos = [], 0
    esc = lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # noqa: E731
    for a in doc.annotations:
        out.append(esc(doc.text[pos:a.start]))
        name = MIST_NAMES[a.type]
        out.append(f"<{name}>{esc(doc.text[a.start:a.end])}</{name}>")
        pos = a.end
    out.append(esc(doc.text[pos:]))
    return '<?xml version="1.0" encoding="utf-8"?>\n<doc>' + "".join(out) + "</doc>"


# --- MAT JSON -------------------------------------------------------------------------

@pytest.mark.parametrize("version", [1, 2])
def test_mat_json_round_trip(version):
    doc = tiny_corpus(1)[0]
    signal, spans = parse_mat_json(mat_json(doc, version), "d.json")
    assert signal == doc.text
    content = {(s.start, s.end) for s in spans if s.label not in ("lex", "zone")}
    assert content == {(a.start, a.end) for a in doc.annotations}
    assert all(s.label != "relation" for s in spans)  # spanless sets are skipped


@pytest.mark.parametrize("payload, message", [
    ("{not json", "not valid JSON at line 1"),
    ("[1, 2]", "an object with 'signal' and 'asets'"),
    ('{"asets": []}', "missing or non-string 'signal'"),
    ('{"signal": "abc", "asets": [], "version": 7}', "unsupported MAT JSON version 7"),
    ('{"signal": "abc", "asets": {}, "version": 2}', "'asets' must be a list"),
    ('{"signal": "abc", "asets": [{"annots": []}], "version": 2}', "annotation set #0 has no string 'type'"),
    ('{"signal": "abc", "asets": [{"type": "NAME", "annots": [[0, "2"]]}], "version": 2}', "annotation set 'NAME', annotation #0: expected"),
    ('{"signal": "abc", "asets": [{"type": "NAME", "annots": [[1, 9]]}], "version": 2}', r"span \[1, 9\) lies off the signal \(3 characters\)"),
    ('{"signal": "abc", "asets": [{"type": "NAME", "annots": [[2, 1]]}], "version": 1}', r"span \[2, 1\) lies off"),
])
def test_malformed_mat_json_is_a_clear_error(payload, message):
    with pytest.raises(ExternalOutputError, match=message) as err:
        parse_mat_json(payload, "out/d.json")
    assert str(err.value).startswith("out/d.json: ")


# --- inline XML ----------------------------------------------------------------------

def test_inline_xml_reads_entities_cdata_comments_and_nesting():
    text = ('<?xml version="1.0"?><!-- made by MAT --><doc>Dr. <DOCTOR id="1">Li &amp; Chen</DOCTOR> at '
            '<LOCATION><HOSPITAL>Mercy</HOSPITAL> &lt;East&gt;</LOCATION> on <![CDATA[<12/03>]]>&#33;<BR/></doc>')
    signal, spans = parse_inline_xml(text, "x.xml")
    assert signal == "Dr. Li & Chen at Mercy <East> on <12/03>!"
    got = {(signal[s.start:s.end], s.label) for s in spans}
    assert got == {("Li & Chen", "DOCTOR"), ("Mercy <East>", "LOCATION"), ("Mercy", "HOSPITAL"), (signal, "doc")}


@pytest.mark.parametrize("payload, message", [
    ("<doc><NAME>John</DATE></doc>", "line 1: end tag </DATE> does not match <NAME> opened at line 1"),
    ("<doc>\n<NAME>John\n</doc>", "line 3: end tag </doc> does not match <NAME> opened at line 2"),
    ("<doc><NAME>John</NAME>", "line 1: element <doc> is never closed"),
    ("John</NAME>", "line 1: end tag </NAME> with no open element"),
    ("Tom & Jerry", "line 1: bare '&'"),
    ("a\nb < c", "line 2: malformed markup"),
    ("x &nbsp; y", "line 1: unknown entity &nbsp;"),
])
def test_malformed_inline_xml_is_a_clear_error(payload, message):
    with pytest.raises(ExternalOutputError, match=message):
        parse_inline_xml(payload, "d.xml")


# --- import mode ------------------------------------------------------------------------

class TestMistImportContract(TaggerContract):
    tagger_name = "mist"
    learns = False

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _outputs(cls, tmp_path_factory, corpus):
        folder = tmp_path_factory.mktemp("mist-out")
        for i, doc in enumerate(corpus[0] + corpus[1]):
            if i % 2:
                (folder / f"{doc.id}.json").write_text(mat_json(doc), encoding="utf-8")
            else:
                (folder / f"{doc.id}.xml").write_text(inline_xml(doc), encoding="utf-8")
        cls.tagger_params = {"import_dir": str(folder)}
        yield
        cls.tagger_params = {}

    def test_maps_mist_names_to_i2b2(self, predictions, corpus):
        expected = {"PATIENT": "NAME:PATIENT", "DOCTOR": "NAME:DOCTOR", "DATE": "DATE:DATE",
                    "HOSPITAL": "LOCATION:HOSPITAL", "CITY": "LOCATION:CITY", "PHONE": "CONTACT:PHONE",
                    "MEDICALRECORD": "ID:IDNUM", "AGE": "AGE:AGE"}
        for pred, doc in zip(predictions, corpus[1]):
            assert {(s.start, s.end, s.label) for s in pred.spans(doc)} == {
                (a.start, a.end, expected[a.type]) for a in doc.annotations}


def test_import_errors_missing_and_text_mismatch(tmp_path):
    docs = tiny_corpus(3)
    (tmp_path / f"{docs[0].id}.txt.json").write_text(mat_json(docs[0]), encoding="utf-8")
    other = Document(docs[1].id, docs[1].text.upper(), docs[1].annotations)
    (tmp_path / f"{docs[1].id}.json").write_text(mat_json(other), encoding="utf-8")
    tagger = make_tagger("mist", import_dir=str(tmp_path)).fit([])
    with pytest.raises(ExternalOutputError, match=r"has no output for 1 of 3 document\(s\): '001-01'"):
        tagger.predict(docs)
    with pytest.raises(ExternalOutputError, match=r"000-02.json: its text differs from the gold text of document '000-02'"):
        tagger.predict(docs[:2])
    assert len(tagger.predict(docs[:1])[0].spans(docs[0])) == len(docs[0].annotations)


def test_unknown_tag_names_get_the_default_and_are_counted(tmp_path):
    doc = tiny_corpus(1)[0]
    a = doc.annotations[0]
    payload = {"signal": doc.text, "version": 2,
               "asets": [{"type": "WIDGET", "hasSpan": True, "hasID": False, "attrs": [], "annots": [[a.start, a.end]]}]}
    (tmp_path / f"{doc.id}.json").write_text(json.dumps(payload), encoding="utf-8")
    tagger = make_tagger("mist", import_dir=str(tmp_path)).fit([])
    spans = tagger.predict([doc])[0].spans(doc)
    assert [s.label for s in spans] == ["OTHER:PHI"] and tagger.unmapped_spans_ == 1


# --- run mode with a stand-in MATEngine -------------------------------------------------

STAND_IN = '''#!{python}
"""Stand-in MATEngine: tags 7-digit numbers as IDNUM and the word after "Sr. "
as PATIENT, reading raw files and writing MAT JSON, with MATEngine's
command-line options. Without --tagger_local it stops as MAT does when no MAT
web server answers. A "clean" step rewrites CRLF and lone CR to LF, a dash to
"--" and other non-ASCII characters to ASCII (accents dropped, else "?")."""
import argparse, json, os, re, sys, unicodedata
ap = argparse.ArgumentParser()
for opt in ("--task", "--workflow", "--steps", "--input_dir", "--input_file_type", "--input_encoding",
            "--output_dir", "--output_file_type", "--output_fsuff", "--tagger_model"):
    ap.add_argument(opt)
ap.add_argument("--tagger_local", action="store_true")
args = ap.parse_args()
assert args.input_file_type == "raw" and args.output_file_type == "mat-json", args
if os.environ.get("FAKE_MIST_FAIL"):
    sys.exit(2)
if not args.tagger_local:
    sys.exit(5)  # could not contact the MAT web server's tagger service

def clean(text):
    text = text.replace("\\r\\n", "\\n").replace("\\r", "\\n").replace("\\u2014", "--")
    return "".join(c if c.isascii() else unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode() or "?"
                   for c in text)

for name in sorted(os.listdir(args.input_dir)):
    text = open(os.path.join(args.input_dir, name), encoding="utf-8", newline="").read()
    if "clean" in args.steps.split(","):
        text = clean(text)
    annots = [[m.start(), m.end()] for m in re.finditer(r"\\b\\d{{7}}\\b", text)]
    names = [[m.start(1), m.end(1)] for m in re.finditer(r"Sr\\. (\\S+)", text)]
    doc = {{"signal": text, "metadata": {{}}, "version": 2,
           "asets": [{{"type": "IDNUM", "hasID": False, "hasSpan": True, "attrs": [], "annots": annots}},
                     {{"type": "PATIENT", "hasID": False, "hasSpan": True, "attrs": [], "annots": names}}]}}
    with open(os.path.join(args.output_dir, name + args.output_fsuff), "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
'''


@pytest.fixture
def mist_home(tmp_path):
    home = tmp_path / "MIST_2_0_4"
    (home / "bin").mkdir(parents=True)
    engine = home / "bin" / "MATEngine"
    engine.write_text(STAND_IN.format(python=sys.executable), encoding="utf-8")
    engine.chmod(engine.stat().st_mode | stat.S_IXUSR)
    return home


def test_run_mode_through_matengine(mist_home, monkeypatch):
    docs = tiny_corpus(3)
    tagger = make_tagger("mist", mist_home=str(mist_home)).fit([])
    preds = tagger.predict(docs)
    for pred, doc in zip(preds, docs):
        assert {(s.start, s.end, s.label) for s in pred.spans(doc)} == {
            (a.start, a.end, "ID:IDNUM") for a in doc.annotations if a.type == "MEDICALRECORD"}
    assert tagger.environment()["task"] == "HIPAA Deidentification"
    monkeypatch.setenv("FAKE_MIST_FAIL", "1")
    with pytest.raises(ExternalToolError, match="MATEngine exited with status 2"):
        tagger.predict(docs)
    monkeypatch.setenv("ENSEMBLE_DEID_MIST_HOME", str(mist_home / "nowhere"))
    from ensemble_deid.taggers.registry import tagger_class

    ok, reason = tagger_class("mist").availability()
    assert not ok and "holds no bin/MATEngine" in reason


# --- issue 21, item 20 ----------------------------------------------------------------

def test_run_mode_tags_locally_not_through_a_mat_server(mist_home, tmp_path):
    # the stand-in, like MAT, needs a MAT web server unless --tagger_local is given
    doc = Document("d", "MRN 1234567.\n")
    pred = make_tagger("mist", mist_home=str(mist_home)).fit([]).predict([doc])[0]
    assert [(s.start, s.end, s.label) for s in pred.spans(doc)] == [(4, 11, "ID:IDNUM")]


def test_clean_step_rewriting_crlf_and_non_ascii_is_mapped_back(mist_home):
    text = "Sr. Muñoz\r\nvisto en Cádiz — MRN 1234567\r\nSr. José 😀 fin\r\n"
    doc = Document("d", text)
    tagger = make_tagger("mist", mist_home=str(mist_home), steps="clean,zone,tag").fit([])
    pred = tagger.predict([doc])[0]
    got = [(text[s.start:s.end], s.label) for s in pred.spans(doc)]
    assert got == [("Muñoz", "NAME:PATIENT"), ("1234567", "ID:IDNUM"), ("José", "NAME:PATIENT")]
    assert tagger.realigned_documents_ == 1 and tagger.environment()["realigned_documents"] == "1"
    # unchanged signals need no realignment
    tagger.predict([Document("e", "MRN 1234567.\n")])
    assert tagger.realigned_documents_ == 0


def test_signal_differing_beyond_what_clean_rewrites_is_still_an_error(tmp_path):
    doc = Document("d", "Sr. Muñoz\r\nMRN 1234567\n")
    changed = doc.text.replace("\r\n", "\n").replace("ñ", "n").replace("MRN", "NRM")
    (tmp_path / "d.json").write_text(json.dumps({"signal": changed, "asets": [], "version": 2}), encoding="utf-8")
    with pytest.raises(ExternalOutputError) as err:
        make_tagger("mist", import_dir=str(tmp_path)).fit([]).predict([doc])
    message = str(err.value)
    assert "first difference at offset 11" in message and "the only ones MIST's clean step rewrites" in message
    assert "Muñoz" not in message and "NRM" not in message


def test_cleaned_text_map_fuzz():
    """Seeded random texts with CR, LF and non-ASCII runs, rewritten at random
    as the clean step may: every kept character maps back to itself (or, where
    the rewrite is ambiguous, into a rewritten run), and a changed character
    outside the rewritten stretch is never aligned."""
    import random
    import time

    from ensemble_deid.taggers.external.mat_format import CleanedTextMap, NotCleanedText

    rng = random.Random(21)
    alphabet = list("ab -.\n") + ["\r", "ñ", "é", "—", "😀", "\u00a0"]
    deadline = time.monotonic() + 5
    for _ in range(1500):
        original = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        pieces, kept_at = [], []  # kept_at: (signal offset, original offset) of kept characters
        pos = 0
        for ch in original:
            if ch == "\r" or not ch.isascii():
                pieces.append(rng.choice(["", "\n", "?", "--", "n", ch]))
            else:
                kept_at.append((sum(map(len, pieces)), pos))
                pieces.append(ch)
            pos += 1
        signal = "".join(pieces)
        cleaned = CleanedTextMap.align(original, signal)
        for s, o in kept_at:  # the same character, or (where a rewrite is ambiguous) a rewritten run
            a, b = cleaned.start(s), cleaned.end(s + 1)
            assert 0 <= a < b <= len(original)
            assert original[a:b] == signal[s] or all(c == "\r" or not c.isascii() for c in original[a:b])
        assert cleaned.end(0) == 0
        # a changed character before the first rewritable one or after the last is never explained
        # (between two, a replacement may be any short text, so a change there can be absorbed)
        rewritable = [i for i, c in enumerate(original) if c == "\r" or not c.isascii()]
        anchored = [(s, o) for s, o in kept_at if not rewritable or o < rewritable[0] or o > rewritable[-1]]
        if anchored:
            s, o = rng.choice(anchored)
            broken = signal[:s] + ("x" if signal[s] != "x" else "y") + signal[s + 1:]
            with pytest.raises(NotCleanedText):
                CleanedTextMap.align(original, broken)
        assert time.monotonic() < deadline


def test_clean_step_on_meddocan_maps_every_gold_span_back(mist_home, meddocan_dir):
    """Real Spanish case reports (MEDDOCAN dev; Marimon et al., IberLEF@SEPLN
    2019, pp. 618-638, CC BY 4.0) with CRLF line ends, through the stand-in's
    clean step: each gold span, located in the cleaned signal, maps back to
    exactly its gold offsets."""
    import unicodedata

    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.taggers.external.mat_format import CleanedTextMap

    def clean(text):  # the stand-in's rewrite
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2014", "--")
        return "".join(c if c.isascii() else unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode() or "?"
                       for c in text)

    docs = load_directory(meddocan_dir / "dev" / "xml")[:25]
    spans = 0
    for doc in docs:
        original = doc.text.replace("\n", "\r\n")
        cleaned = CleanedTextMap.align(original, clean(original))
        for a in doc.annotations:
            s, e = a.start + doc.text.count("\n", 0, a.start), a.end + doc.text.count("\n", 0, a.end)
            assert (cleaned.start(len(clean(original[:s]))), cleaned.end(len(clean(original[:e])))) == (s, e)
            spans += 1
    assert spans > 200
    # and end to end through the stand-in MATEngine: the adapter accepts the cleaned signals
    crlf = [Document(d.id, d.text.replace("\n", "\r\n")) for d in docs[:5]]
    tagger = make_tagger("mist", mist_home=str(mist_home), steps="clean,zone,tag").fit([])
    tagger.predict(crlf)
    assert tagger.realigned_documents_ == 5
