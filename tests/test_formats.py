"""Readers and writers: broken files, the XML round trip, BRAT details,
directories and patient groups."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ensemble_deid.cli import main
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.errors import ERROR, WARNING, CorpusError, ParameterError
from ensemble_deid.corpus.formats import (
    assign_groups,
    detect_format,
    load_directory,
    read_brat,
    read_directory,
    read_i2b2_xml,
    to_i2b2_xml,
    write_i2b2_xml,
)
from ensemble_deid.corpus.formats.i2b2 import overlap_problems
from ensemble_deid.corpus.labelmap import LabelMap

from .conftest import REPO_ROOT

# The invented PHI of the broken files: no message may contain any of it.
PHI_STRINGS = ("Zacarias", "Zacarías", "Quintanill", "03/04/2019", "Toledo", "root:x:0")

# file -> (severity, tag, field, message fragment); exactly one problem each.
XML_EXPECTED = {
    "truncated.xml": (ERROR, None, None, "malformed XML at line"),
    "offset_past_end.xml": (ERROR, "P1", "start/end", "out of range"),
    "text_mismatch.xml": (ERROR, "P0", "text", "differs"),
    "missing_text.xml": (ERROR, None, "TEXT", "no TEXT element"),
    "missing_start.xml": (ERROR, "P0", "start", "missing attribute"),
    "non_integer_start.xml": (ERROR, "P0", "start", "not an integer"),
    "billion_laughs.xml": (ERROR, None, None, "entity-expansion"),
    "external_entity.xml": (ERROR, None, None, "external entity"),
    "not_utf8.xml": (ERROR, None, None, "not valid UTF-8"),
    "empty.xml": (ERROR, None, None, "file is empty"),
    "duplicate_ids.xml": (WARNING, "P0", "id", "duplicate tag id"),
    "overlap.xml": (WARNING, "P0/P1", None, "overlap"),
    # Issue 35 item 15: an element name may be a PHI word: counted, never printed.
    "unknown_element.xml": (WARNING, None, None, "1 element(s) of another name ignored"),
    # Issue 21 items 2, 4, 5, 7: each used to load (silently cut or without PHI) or crash.
    "markup_in_text.xml": (ERROR, None, "TEXT", "TEXT holds markup"),
    "xinclude.xml": (ERROR, None, "TEXT", "TEXT holds markup"),
    "no_tags.xml": (WARNING, None, "TAGS", "no TAGS element"),
    "unknown_encoding.xml": (ERROR, None, "encoding", "unknown or unsupported encoding 'TTF-8'"),
    "external_dtd.xml": (ERROR, None, "DOCTYPE", "external DTD"),
}
BRAT_EXPECTED = {
    "bad_offsets.ann": (ERROR, "T2", "offsets", "out of range"),
    "non_integer_offsets.ann": (ERROR, "T2", "offsets", "not integers"),
    "bad_fragment.ann": (ERROR, "T1", "offsets", "expected START END for each fragment"),
    # Issue 21 item 1: the line without tabs was quoted whole (PHI included) as its "tag id".
    "no_tab.ann": (ERROR, "line 1", None, "expected 'ID<TAB>TYPE START END<TAB>TEXT'"),
    "orphan.ann": (ERROR, None, None, "no .txt file"),
    "not_utf8.txt": (ERROR, None, None, "not valid UTF-8"),
    "empty.txt": (WARNING, None, None, "text is empty"),
}


def _assert_no_phi(text: str) -> None:
    for phi in PHI_STRINGS:
        assert phi not in text, "a message leaks PHI"


# --- broken files ---------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(XML_EXPECTED))
def test_each_broken_xml_file_gives_one_clear_problem(broken_dir, name):
    path = broken_dir / "xml" / name
    doc, problems = read_i2b2_xml(path)
    severity, tag, field, fragment = XML_EXPECTED[name]
    assert len(problems) == 1, [str(p) for p in problems]
    p = problems[0]
    assert (p.severity, p.tag, p.field) == (severity, tag, field)
    assert fragment in p.message
    assert p.file == str(path) and str(path) in str(p)
    if tag is not None:
        assert f"[tag {tag}]" in str(p)
    _assert_no_phi(str(p))
    # fatal problems leave no document; warnings keep it
    assert (doc is None) == (severity == ERROR)


@pytest.mark.parametrize("name", sorted(BRAT_EXPECTED))
def test_each_broken_brat_file_gives_one_clear_problem(broken_dir, name):
    docs, problems = read_directory(broken_dir / "brat")
    severity, tag, field, fragment = BRAT_EXPECTED[name]
    mine = [p for p in problems if Path(p.file).name == name]
    assert len(mine) == 1, [str(p) for p in mine]
    p = mine[0]
    assert (p.severity, p.tag, p.field) == (severity, tag, field)
    assert fragment in p.message
    assert str(broken_dir / "brat" / name) in str(p)
    _assert_no_phi(str(p))
    stem = Path(name).stem
    assert any(d.id == stem for d in docs) == (severity == WARNING)


def test_broken_folders_hold_exactly_the_expected_files(broken_dir):
    xml = {p.name for p in (broken_dir / "xml").iterdir()}
    assert xml == set(XML_EXPECTED) | {"valid.xml"}
    brat = {p.name for p in (broken_dir / "brat").iterdir()}
    expected = set(BRAT_EXPECTED) | {"valid.txt", "valid.ann"}
    expected |= {Path(n).with_suffix(s).name for n in BRAT_EXPECTED if n != "orphan.ann" for s in (".txt", ".ann")}
    assert brat == expected


@pytest.mark.parametrize("fmt, expected, loaded", [("xml", XML_EXPECTED, 5), ("brat", BRAT_EXPECTED, 2)])
def test_read_directory_reports_every_problem_without_crashing(broken_dir, fmt, expected, loaded):
    docs, problems = read_directory(broken_dir / fmt)
    assert {Path(p.file).name for p in problems} == set(expected)
    assert len(problems) == len(expected)
    assert len(docs) == loaded  # valid + files with warnings only
    assert all(not p.file.endswith(("valid.xml", "valid.txt", "valid.ann")) for p in problems)


@pytest.mark.parametrize("fmt, expected", [("xml", XML_EXPECTED), ("brat", BRAT_EXPECTED)])
def test_loading_stops_on_fatal_problems(broken_dir, fmt, expected):
    with pytest.raises(CorpusError) as info:
        load_directory(broken_dir / fmt)
    err = info.value
    fatal = {n for n, (sev, *_rest) in expected.items() if sev == ERROR}
    assert {Path(p.file).name for p in err.problems if p.severity == ERROR} == fatal
    for name in fatal:
        assert name in str(err)
    _assert_no_phi(str(err))


@pytest.mark.parametrize("fmt, expected", [("xml", XML_EXPECTED), ("brat", BRAT_EXPECTED)])
def test_corpus_check_reports_all_problems_at_once_and_exits_1(broken_dir, fmt, expected):
    result = CliRunner().invoke(main, ["corpus", "check", str(broken_dir / fmt)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for name in expected:
        assert name in result.output
    n_errors = sum(sev == ERROR for sev, *_ in expected.values())
    n_warnings = len(expected) - n_errors
    assert f"{n_errors} error(s), {n_warnings} warning(s) in {len(expected)} file(s)" in result.output
    _assert_no_phi(result.output)


def test_corpus_check_max_shown_still_counts_everything(broken_dir):
    result = CliRunner().invoke(main, ["corpus", "check", "--max-shown", "2", str(broken_dir / "xml")])
    assert result.exit_code == 1
    assert f"... {len(XML_EXPECTED) - 2} more problem(s) not shown" in result.output
    assert "14 error(s), 4 warning(s)" in result.output


def test_corpus_check_passes_a_clean_folder(tmp_path):
    d = Document("100-01", "Seen by Dr. Adams.", [Annotation(12, 17, "NAME", "DOCTOR")])
    write_i2b2_xml(d, tmp_path / "100-01.xml")
    result = CliRunner().invoke(main, ["corpus", "check", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "1 document(s) loaded, 1 PHI; 0 error(s), 0 warning(s)" in result.output


@pytest.mark.parametrize("doctype", ['SYSTEM "file:///etc/passwd"', 'PUBLIC "-//X//DTD Y//EN" "http://example.org/y.dtd"'])
def test_external_dtd_is_refused_not_fetched(tmp_path, doctype):
    # Issue 21 item 7: an external DTD used to load silently.
    path = tmp_path / "dtd.xml"
    path.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE deIdi2b2 {doctype}>\n'
                    "<deIdi2b2><TEXT>abc</TEXT><TAGS/></deIdi2b2>\n")
    doc, problems = read_i2b2_xml(path)
    assert doc is None
    assert [(p.severity, p.field) for p in problems] == [(ERROR, "DOCTYPE")]
    assert "external DTD" in problems[0].message


def test_internal_dtd_without_entities_still_loads(tmp_path):
    path = tmp_path / "dtd.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE deIdi2b2 [<!ELEMENT TEXT (#PCDATA)>]>\n'
                    "<deIdi2b2><TEXT>abc</TEXT><TAGS/></deIdi2b2>\n")
    doc, problems = read_i2b2_xml(path)
    assert doc is not None and doc.text == "abc" and problems == []


# --- XML ---------------------------------------------------------------------------

def test_valid_xml_reads(broken_dir):
    doc, problems = read_i2b2_xml(broken_dir / "xml" / "valid.xml")
    assert problems == []
    assert doc.id == "valid"
    assert [a.label for a in doc.annotations] == ["NAME:PATIENT", "DATE:DATE", "LOCATION:CITY"]
    assert all(doc.text[a.start:a.end] == a.text for a in doc.annotations)
    assert [a.id for a in doc.annotations] == ["P0", "P1", "P2"]
    assert doc.metadata["format"] == "i2b2-xml" and doc.metadata["root"] == "deIdi2b2"


def test_xml_declared_latin1_is_decoded(tmp_path):
    path = tmp_path / "latin.xml"
    path.write_bytes(
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n<deIdi2b2><TEXT><![CDATA[Jos\xe9 ni\xf1o]]></TEXT><TAGS>'
        '<NAME id="P0" start="0" end="4" text="Jos\xe9" TYPE="PATIENT"/></TAGS></deIdi2b2>'.encode("latin-1")
    )
    doc, problems = read_i2b2_xml(path)
    assert problems == [] and doc.text == "José niño" and doc.annotations[0].text == "José"


def test_xml_lower_case_names_are_upper_cased_and_unknown_category_warned(tmp_path):
    path = tmp_path / "x.xml"
    path.write_text(
        '<deIdi2b2><TEXT>abc def</TEXT><TAGS><PHI id="P0" start="0" end="3" TYPE="doctor"/></TAGS></deIdi2b2>'
    )
    doc, problems = read_i2b2_xml(path)
    assert doc.annotations == (Annotation(0, 3, "PHI", "DOCTOR"),)
    assert [(p.severity, p.tag) for p in problems] == [(WARNING, "P0")]
    assert "unknown category element <PHI>" in problems[0].message


def test_xml_tag_without_id_is_named_by_position(tmp_path):
    path = tmp_path / "x.xml"
    path.write_text('<deIdi2b2><TEXT>abc</TEXT><TAGS><NAME start="0" end="9" TYPE="DOCTOR"/></TAGS></deIdi2b2>')
    doc, problems = read_i2b2_xml(path)
    assert doc is None and problems[0].tag == "#0" and problems[0].field == "start/end"


def test_xml_several_problems_in_one_file_are_all_reported(tmp_path):
    path = tmp_path / "x.xml"
    path.write_text(
        '<deIdi2b2><TEXT>Zacarias</TEXT><TAGS>'
        '<NAME id="P0" start="x" end="y" TYPE="DOCTOR"/>'
        '<NAME id="P1" start="0" end="8"/>'
        '<NAME id="P2" start="0" end="8" text="Zacariaz" TYPE="DOCTOR"/>'
        '</TAGS></deIdi2b2>'
    )
    doc, problems = read_i2b2_xml(path)
    assert doc is None
    assert [(p.tag, p.field) for p in problems] == [("P0", "start"), ("P0", "end"), ("P1", "TYPE"), ("P2", "text")]
    for p in problems:
        _assert_no_phi(str(p))
        assert "Zacariaz" not in str(p)


def _clean(chars: str) -> str:
    return "".join(c for c in chars if not ("\x00" <= c < " " and c not in "\t\n\r") and c not in "\ufffe\uffff")


_TRICKY = st.sampled_from(["]]>", "]]", "]", ">", "\r", "\r\n", "\n", "\t", "&", "&amp;", "<", "<![CDATA[",
                           '"', "'", "ñ", "Á", "é", "中", "\U0001F600", " ", "  ", "\x85", "\u2028"])
_PLAIN = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8).map(_clean)
_XML_TEXT = st.lists(st.one_of(_TRICKY, _PLAIN), max_size=20).map("".join)
_LABEL = st.sampled_from([("NAME", "PATIENT"), ("DATE", "DATE"), ("LOCATION", "LOCATION-OTHER"), ("ID", "IDNUM")])


@st.composite
def _documents(draw):
    text = draw(_XML_TEXT)
    anns = []
    if text:
        for _ in range(draw(st.integers(0, 4))):
            start = draw(st.integers(0, len(text) - 1))
            end = draw(st.integers(start + 1, len(text)))
            category, type_ = draw(_LABEL)
            comment = draw(st.sampled_from(["", 'a "quoted" <comment> & more', "ñ\r\n\t"]))
            anns.append(Annotation(start, end, category, type_, text[start:end], f"P{len(anns)}", comment))
    return Document("100-01", text, anns)


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@settings(max_examples=150, deadline=None)
@given(_documents(), st.sampled_from(["deIdi2b2", "MEDDOCAN"]))
def test_xml_write_then_read_gives_the_same_document(scratch, doc, root):
    path = write_i2b2_xml(doc, scratch / "100-01.xml", root=root)
    back, problems = read_i2b2_xml(path)
    assert back is not None, [str(p) for p in problems]
    assert all(p.severity == WARNING for p in problems)
    assert back == doc
    assert back.metadata["root"] == root
    assert [(a.text, a.id, a.comment) for a in back.annotations] == [(a.text, a.id, a.comment) for a in doc.annotations]


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x0b", "\x0c", "\x1f", "\ufffe"])
def test_xml_writer_refuses_control_characters(tmp_path, char):
    doc = Document("100-01", f"Zacarias{char}Quintanilla", [])
    with pytest.raises(ValueError, match=r"U\+[0-9A-F]{4} at offset 8 cannot be written in XML") as info:
        write_i2b2_xml(doc, tmp_path / "x.xml")
    _assert_no_phi(str(info.value))
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_xml_writer_is_owner_only_and_leaves_no_temp_file(tmp_path):
    doc = Document("100-01", "abc", [Annotation(0, 3, "NAME", "PATIENT")])
    path = write_i2b2_xml(doc, tmp_path / "out.xml")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["out.xml"]
    write_i2b2_xml(doc.with_annotations([]), path)  # overwrite in place
    assert read_i2b2_xml(path)[0].annotations == ()
    assert 'id="P0"' in to_i2b2_xml(Document("d", "abc", [Annotation(0, 3, "NAME", "PATIENT")]))


# --- BRAT ----------------------------------------------------------------------------

def _brat(tmp_path, text, ann, name="doc"):
    (tmp_path / f"{name}.txt").write_bytes(text.encode("utf-8"))
    (tmp_path / f"{name}.ann").write_bytes(ann.encode("utf-8"))
    return tmp_path / f"{name}.txt"


def test_valid_brat_reads_with_meddocan_parents(broken_dir):
    doc, problems = read_brat(broken_dir / "brat" / "valid.txt")
    assert problems == []
    assert [a.label for a in doc.annotations] == ["NAME:NOMBRE_SUJETO_ASISTENCIA", "DATE:FECHAS", "LOCATION:TERRITORIO"]
    assert [a.id for a in doc.annotations] == ["T1", "T2", "T3"]
    assert doc.metadata["format"] == "brat"


def test_brat_text_with_tab_and_unicode_line_separators(tmp_path):
    # The covered text of a BRAT line is everything after the second tab, and
    # only "\n" ends a line: a tab, U+2028 or U+0085 inside a span is text.
    text = "Calle\tMayor 5; Ana\u2028Lopez y Eva\x85Ruiz.\r\n"
    spans = [(0, 13, "CALLE"), (15, 24, "NOMBRE_SUJETO_ASISTENCIA"), (27, 35, "NOMBRE_SUJETO_ASISTENCIA")]
    ann = "".join(f"T{i}\t{t} {s} {e}\t{text[s:e]}\r\n" for i, (s, e, t) in enumerate(spans, 1))
    ann += "#1\tAnnotatorNotes T1\tnote\r\nR1\tRel Arg1:T1 Arg2:T2\r\n"
    doc, problems = read_brat(_brat(tmp_path, text, ann))
    assert problems == [], [str(p) for p in problems]
    assert [(a.start, a.end, a.type) for a in doc.annotations] == spans
    assert doc.text == text  # CRs kept: offsets count every character


def test_brat_without_text_field_and_unknown_type(tmp_path):
    doc, problems = read_brat(_brat(tmp_path, "abc Zacarias", "T1\tMYSTERY 4 12\n"))
    assert doc.annotations == (Annotation(4, 12, "OTHER", "MYSTERY"),)
    assert [(p.severity, p.tag, p.field) for p in problems] == [(WARNING, "T1", "type")]
    _assert_no_phi(str(problems[0]))


def test_brat_label_map_supplies_parents(tmp_path):
    _brat(tmp_path, "abc Zacarias", "T1\tmystery 4 12\tZacarias\n")
    lm = LabelMap.from_dict({"types": {"MYSTERY": "NAME:PATIENT"}})
    docs, problems = read_directory(tmp_path, label_map=lm)
    assert problems == []
    assert docs[0].annotations == (Annotation(4, 12, "NAME", "PATIENT"),)


def test_brat_txt_without_ann_is_a_warning(tmp_path):
    (tmp_path / "a.txt").write_text("no annotations")
    doc, problems = read_brat(tmp_path / "a.txt")
    assert doc is not None and doc.annotations == ()
    assert [(p.severity, Path(p.file).name) for p in problems] == [(WARNING, "a.ann")]


def test_brat_malformed_lines(tmp_path):
    ann = "T1\n\tNAME 0 3\tabc\nT3\tNAME 0\tabc\nT4\tFECHAS 2 1\tx\nT5\tFECHAS 0 3\tabd\n"
    doc, problems = read_brat(_brat(tmp_path, "abcdef", ann))
    assert doc is None
    # line 2 is not a text-bound ("T") line and is ignored like relations and notes
    assert [p.tag for p in problems] == ["T1", "T3", "T4", "T5"]
    assert [p.message.split(":")[0] for p in problems] == ["line 1", "line 3", "line 4", "line 5"]
    assert all(p.severity == ERROR for p in problems)
    assert problems[-1].field == "text" and "abd" not in str(problems[-1])


def test_brat_duplicate_ids_warn(tmp_path):
    doc, problems = read_brat(_brat(tmp_path, "abc def", "T1\tFECHAS 0 3\tabc\nT1\tFECHAS 4 7\tdef\n"))
    assert len(doc.annotations) == 2
    assert [(p.severity, p.tag, p.field) for p in problems] == [(WARNING, "T1", "id")]


# --- overlaps ----------------------------------------------------------------------

def test_overlap_reported_for_every_span_overlapping_an_earlier_one():
    a = Annotation(0, 10, "NAME", "PATIENT", id="A")
    b = Annotation(2, 3, "NAME", "PATIENT", id="B")
    c = Annotation(5, 8, "NAME", "PATIENT", id="C")  # overlaps A, not B
    d = Annotation(10, 12, "NAME", "PATIENT", id="D")  # touches A: no overlap
    problems = overlap_problems([d, c, b, a], "f.xml")
    assert sorted(p.tag for p in problems) == ["A/B", "A/C"]
    assert all(p.severity == WARNING and p.file == "f.xml" for p in problems)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8)), max_size=10))
def test_overlap_warnings_match_brute_force(raw):
    anns = [Annotation(s, s + n, "DATE", "DATE", id=f"P{i}") for i, (s, n) in enumerate(raw)]
    ordered = sorted(anns)
    overlapping = sum(any(o.overlaps(b) for o in ordered[:i]) for i, b in enumerate(ordered))
    assert len(overlap_problems(anns, "f")) == overlapping


# --- directories and groups -----------------------------------------------------------

def test_detect_format_and_bad_directories(tmp_path, broken_dir):
    assert detect_format(broken_dir / "xml") == "xml"
    assert detect_format(broken_dir / "brat") == "brat"
    with pytest.raises(CorpusError, match="no .xml or .txt/.ann files"):
        detect_format(tmp_path)
    with pytest.raises(CorpusError, match="not a directory"):
        read_directory(tmp_path / "missing")
    with pytest.raises(CorpusError, match="unknown format 'json'"):
        read_directory(broken_dir / "xml", fmt="json")


def _write(tmp_path, ids):
    for i in ids:
        write_i2b2_xml(Document(i, "abc", [Annotation(0, 3, "NAME", "PATIENT")]), tmp_path / f"{i}.xml")


def test_groups_follow_i2b2_record_names(tmp_path):
    _write(tmp_path, ["100-01", "100-02", "101-01", "note-7"])
    docs = load_directory(tmp_path)
    assert {d.id: d.group for d in docs} == {"100-01": "100", "100-02": "100", "101-01": "101", "note-7": "note-7"}
    assert all(d.metadata["source"].endswith(f"{d.id}.xml") for d in docs)


def test_custom_group_pattern_and_none(tmp_path):
    _write(tmp_path, ["pat7_a", "pat7_b", "pat8_a"])
    docs = load_directory(tmp_path, group_pattern=r"^pat(\d+)_")
    assert [d.group for d in docs] == ["7", "7", "8"]
    docs = load_directory(tmp_path, group_pattern=None)
    assert [d.group for d in docs] == ["pat7_a", "pat7_b", "pat8_a"]
    with pytest.raises(ParameterError, match="no capture group"):  # issue 35 item 20: was ignored silently
        assign_groups(docs, r"^pat\d+")


@pytest.mark.parametrize("pattern", ["()", "^()", r"(x?)\d", "(-)", r"(?:a|b)(\d*)"])
def test_a_group_pattern_that_cannot_tell_patients_apart_is_refused(tmp_path, pattern):
    """Issue 52 item 13: ``--group-pattern '()'`` made every note one patient
    (cv's folds and deidentify's surrogates share group_ids)."""
    from ensemble_deid.corpus.formats import compile_group_pattern, group_ids

    _write(tmp_path, ["100-01", "101-01"])
    for refuse in (lambda: compile_group_pattern(pattern), lambda: group_ids(["100-01", "101-01"], pattern),
                   lambda: load_directory(tmp_path, group_pattern=pattern)):
        with pytest.raises(ParameterError, match="would make every note one patient") as caught:
            refuse()
        assert pattern in str(caught.value) and "100-01" not in str(caught.value)
    assert group_ids(["100-01", "101-01"], r"^(\d{3})?-") == {"100-01": "100", "101-01": "101"}


def test_label_map_applies_when_loading(tmp_path):
    _write(tmp_path, ["100-01"])
    lm = LabelMap.from_dict({"types": {"PATIENT": "NAME:DOCTOR"}})
    assert load_directory(tmp_path, label_map=lm)[0].annotations == (Annotation(0, 3, "NAME", "DOCTOR"),)
    lm = LabelMap.from_dict({"drop": ["PATIENT"]})
    assert load_directory(tmp_path, label_map=lm)[0].annotations == ()


def test_text_attribute_spanning_a_line_break_matches(tmp_path):
    """XML parsers turn a literal newline inside an attribute into a space, so a
    gold tag across a line break must still match its TEXT slice."""
    from ensemble_deid.corpus.formats.i2b2 import read_i2b2_xml

    path = tmp_path / "wrap.xml"
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<deIdi2b2><TEXT><![CDATA[Seen at Mercy\nHospital today]]>'
                    '</TEXT><TAGS><LOCATION id="P0" start="8" end="22" text="Mercy\nHospital" TYPE="HOSPITAL" '
                    'comment=""/></TAGS></deIdi2b2>', encoding="utf-8")
    doc, problems = read_i2b2_xml(path)
    assert problems == [] and doc.annotations[0].key == ("LOCATION", 8, 22, "HOSPITAL")


# --- issue 21: hostile input (each test failed before the fix) ---------------------

VALID_XML = (Path(__file__).parent / "data" / "broken" / "xml" / "valid.xml").read_text(encoding="utf-8")


@pytest.mark.parametrize("encoding, bom", [
    ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-8", b"\xef\xbb\xbf"),
    ("utf-32-le", b"\xff\xfe\x00\x00"), ("utf-16-le", b""), ("utf-16-be", b""),
])
def test_xml_with_or_without_byte_order_mark_loads(tmp_path, encoding, bom):
    # Item 7: UTF-16 with a BOM was refused while the same file without BOM loaded.
    source = VALID_XML.replace('encoding="UTF-8"', 'encoding="UTF-16"' if "16" in encoding else 'encoding="UTF-8"')
    path = tmp_path / "100-01.xml"
    path.write_bytes(bom + source.encode(encoding))
    doc, problems = read_i2b2_xml(path)
    assert problems == [], [str(p) for p in problems]
    assert [(a.start, a.end) for a in doc.annotations] == [(9, 29), (40, 50), (54, 60)]
    assert doc.text.startswith("Paciente Zacarias")


@pytest.mark.parametrize("declared, loads", [
    ("Shift_JIS", True), ("UTF-7", True), ("latin-1", True), ("TTF-8", False), ("rot13", False), ("UTF-16", False),
])
def test_any_declared_encoding_gives_a_document_or_one_clear_error(tmp_path, declared, loads):
    # Item 2: unknown or multi-byte declarations were a traceback (expat's ValueError).
    path = tmp_path / "d.xml"
    path.write_bytes(VALID_XML.replace('encoding="UTF-8"', f'encoding="{declared}"').encode("ascii"))
    doc, problems = read_i2b2_xml(path)
    if loads:
        assert problems == [] and doc.text.startswith("Paciente Zacarias")
    else:
        assert doc is None and [(p.severity, p.field) for p in problems] == [(ERROR, "encoding")]
        assert declared in problems[0].message


def test_shift_jis_text_is_decoded(tmp_path):
    text = "患者 Zacarias 東京"
    path = tmp_path / "d.xml"
    path.write_bytes(f'<?xml version="1.0" encoding="Shift_JIS"?><r><TEXT>{text}</TEXT><TAGS>'
                     f'<NAME id="P0" start="3" end="11" TYPE="PATIENT"/></TAGS></r>'.encode("shift_jis"))
    doc, problems = read_i2b2_xml(path)
    assert problems == [] and doc.text == text and doc.annotations[0].text is None


def test_brat_discontinuous_span_becomes_one_annotation_per_fragment(tmp_path):
    # Item 8: discontinuous spans were rejected.
    text = "Paciente Zacarias y Quintanilla, visto el 03/04/2019."
    ann = "T1\tNOMBRE_SUJETO_ASISTENCIA 9 17;20 31\tZacarias Quintanilla\nT2\tFECHAS 42 52\t03/04/2019\n"
    doc, problems = read_brat(_brat(tmp_path, text, ann))
    assert problems == [], [str(p) for p in problems]
    assert [(a.id, a.start, a.end, a.type) for a in doc.annotations] == [
        ("T1", 9, 17, "NOMBRE_SUJETO_ASISTENCIA"), ("T1.2", 20, 31, "NOMBRE_SUJETO_ASISTENCIA"),
        ("T2", 42, 52, "FECHAS")]
    # Without the text field, and with a wrong one (named, not quoted).
    doc, problems = read_brat(_brat(tmp_path, text, "T1\tNOMBRE_SUJETO_ASISTENCIA 9 17;20 31\n"))
    assert problems == [] and len(doc.annotations) == 2
    doc, problems = read_brat(_brat(tmp_path, text, "T1\tNOMBRE_SUJETO_ASISTENCIA 9 17;20 31\tZacarias y Quintanilla\n"))
    assert doc is None and [(p.tag, p.field) for p in problems] == [("T1", "text")]
    assert "Zacarias" not in str(problems[0])
    doc, problems = read_brat(_brat(tmp_path, text, "T1\tNOMBRE_SUJETO_ASISTENCIA 20 31;9 17\n"))
    assert doc is None and "out of order" in problems[0].message


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_brat_multi_line_span_text(tmp_path, newline):
    # Item 8: a span over a line break has its text field written over two
    # .ann lines (or with a space): both used to be rejected.
    text = f"Vive en Calle Mayor{newline}12, Toledo.{newline}Visto hoy."
    end = text.index(",")
    covered = text[8:end]
    for field in (covered, covered.replace(newline, " ")):
        ann = f"T1\tCALLE 8 {end}\t{field}{newline}T2\tTERRITORIO {end + 2} {end + 8}\tToledo{newline}"
        doc, problems = read_brat(_brat(tmp_path, text, ann))
        assert problems == [], [str(p) for p in problems]
        assert [(a.id, a.start, a.end) for a in doc.annotations] == [("T1", 8, end), ("T2", end + 2, end + 8)]
    # A continuation never swallows the next annotation line.
    ann = f"T1\tCALLE 8 {end}\tCalle Mayor{newline}T2\tTERRITORIO {end + 2} {end + 8}\tToledo{newline}"
    doc, problems = read_brat(_brat(tmp_path, text, ann))
    assert [(p.tag, p.field) for p in problems] == [("T1", "text")]


@pytest.mark.parametrize("line", [
    "T1 NOMBRE_SUJETO_ASISTENCIA 8 18 Zacarias Quintanilla",
    "Tomás Zacarias Quintanilla 8 18",
    "T1\tZacarias Quintanilla 8 18\tx",
])
def test_brat_malformed_line_is_never_quoted(tmp_path, line):
    # Item 1: a line without a tab was quoted whole as the "tag id".
    doc, problems = read_brat(_brat(tmp_path, "Paciente Zacarias Quintanilla.", line + "\n"))
    assert doc is None and len(problems) == 1
    assert "Zacarias" not in str(problems[0]) and "Tomás" not in str(problems[0])


@pytest.mark.parametrize("ident", ['id="Zacarias Quintanilla"', 'id="P0"'])
def test_xml_ids_are_shown_only_when_shaped_like_ids(tmp_path, ident):
    path = tmp_path / "d.xml"
    path.write_text(f'<r><TEXT>Paciente Zacarias</TEXT><TAGS><NAME {ident} start="9" end="99" TYPE="PATIENT"/>'
                    "</TAGS></r>", encoding="utf-8")
    doc, problems = read_i2b2_xml(path)
    assert [p.tag for p in problems] == (["#0"] if "Zacarias" in ident else ["P0"])
    assert "Zacarias" not in str(problems[0])


def test_fifo_named_xml_is_an_error_not_a_hang(tmp_path):
    # Item 6: a FIFO named *.xml blocked the loader forever.
    write_i2b2_xml(Document("100-01", "Seen by Dr. Adams.", [Annotation(12, 17, "NAME", "DOCTOR")]), tmp_path / "100-01.xml")
    os.mkfifo(tmp_path / "100-02.xml")
    (tmp_path / "100-03.xml").mkdir()
    docs, problems = read_directory(tmp_path)
    assert [d.id for d in docs] == ["100-01"]
    assert sorted((Path(p.file).name, p.message) for p in problems) == [
        ("100-02.xml", "not a regular file (a FIFO, socket or device)"),
        ("100-03.xml", "not a regular file (a folder)")]


def test_non_utf8_file_name_is_one_clear_error(tmp_path):
    # Item 3: such a name registered, then crashed in the fingerprint.
    write_i2b2_xml(Document("100-01", "abc", []), tmp_path / "100-01.xml")
    raw = os.fsencode(tmp_path) + b"/caf\xe9.xml"
    with open(raw, "wb") as fh:
        fh.write(to_i2b2_xml(Document("x", "abc", [])).encode())
    docs, problems = read_directory(tmp_path)
    assert [d.id for d in docs] == ["100-01"]
    assert [(p.severity, p.field) for p in problems] == [(ERROR, "file name")]
    assert "caf\\udce9.xml" in str(problems[0]) and str(problems[0]).isprintable()


def test_file_names_with_control_characters_are_printed_escaped(tmp_path):
    # Item 7: names with newlines or terminal escapes were printed raw.
    (tmp_path / "bad\n\x1b[2Jname.xml").write_text("<r><TEXT>abc</TEXT></r", encoding="utf-8")
    result = CliRunner().invoke(main, ["corpus", "check", str(tmp_path)])
    assert result.exit_code == 1
    assert "bad\\n\\x1b[2Jname.xml" in result.output and "\x1b" not in result.output


def test_forced_format_that_matches_no_file_is_refused(broken_dir):
    # Item 7: --format brat on an XML folder loaded 0 documents without complaint.
    with pytest.raises(CorpusError, match="no .txt files for format brat"):
        read_directory(broken_dir / "xml", fmt="brat")
    with pytest.raises(CorpusError, match="no .xml files for format xml"):
        read_directory(broken_dir / "brat", fmt="xml")


# --- issue 35: byte order marks, repeated elements, huge offsets, names that are data ---------

def test_brat_ann_with_a_byte_order_mark_keeps_its_first_annotation(tmp_path):
    # Item 8: the BOM glued onto "T1" and the first annotation was dropped silently.
    text = "Paciente Zacarias visto el 03/04/2019."
    (tmp_path / "d.txt").write_text(text, encoding="utf-8")
    (tmp_path / "d.ann").write_bytes(b"\xef\xbb\xbf" + "T1\tNOMBRE_SUJETO_ASISTENCIA 9 17\tZacarias\n"
                                     "T2\tFECHAS 27 37\t03/04/2019\n".encode("utf-8"))
    docs, problems = read_directory(tmp_path, "brat")
    assert problems == []
    assert [(a.start, a.type) for a in docs[0].annotations] == [(9, "NOMBRE_SUJETO_ASISTENCIA"), (27, "FECHAS")]
    result = CliRunner().invoke(main, ["corpus", "check", str(tmp_path)])
    assert "2 PHI; 0 error(s), 0 warning(s)" in result.output


@pytest.mark.parametrize("element", ["TEXT", "TAGS"])
def test_xml_with_a_second_text_or_tags_element_is_refused(tmp_path, element):
    # Item 8: the second <TEXT> (and its note) was ignored silently.
    second = "<TEXT>Zacarias Quintanilla</TEXT>" if element == "TEXT" else '<TAGS><NAME id="P1" start="0" end="3" TYPE="DOCTOR"/></TAGS>'
    path = tmp_path / "100-01.xml"
    path.write_text(f'<deIdi2b2><TEXT>abc def</TEXT><TAGS><NAME id="P0" start="4" end="7" TYPE="DOCTOR"/></TAGS>'
                    f"{second}</deIdi2b2>", encoding="utf-8")
    doc, problems = read_i2b2_xml(path)
    assert doc is None
    assert [(p.severity, p.field) for p in problems] == [(ERROR, element)]
    assert f"2 {element} elements" in problems[0].message and str(path) in str(problems[0])
    _assert_no_phi(str(problems[0]))
    if element == "TEXT":  # evaluate's reader refuses it too
        from ensemble_deid.corpus.formats.i2b2 import read_scoring_xml

        record, problems = read_scoring_xml(path)
        assert record is None and [(p.severity, p.field) for p in problems] == [(ERROR, "TEXT")]


@pytest.mark.parametrize("offsets", ["9 " + "1" * 5000, "1" * 5000 + " 17", "9 17;20 " + "9" * 4400])
def test_brat_offsets_with_thousands_of_digits_are_one_clear_error(tmp_path, offsets):
    # Item 14: int() refused them with "Exceeds the limit (4300 digits)" tracebacks.
    _brat(tmp_path, "Paciente Zacarias visto el 03/04/2019.", f"T1\tNOMBRE_SUJETO_ASISTENCIA {offsets}\tZacarias\n")
    docs, problems = read_directory(tmp_path, "brat")
    assert docs == [] and [(p.severity, p.tag, p.field) for p in problems] == [(ERROR, "T1", "offsets")]
    assert "out of range" in problems[0].message and len(str(problems[0])) < 300
    for command in (["corpus", "check", str(tmp_path)], ["evaluate", "--gold", str(tmp_path), "--system", str(tmp_path)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert "out of range" in result.output


def test_brat_unknown_types_are_counted_never_named(tmp_path):
    # Item 15: a PHI word in the type column was printed in warnings and tables.
    _brat(tmp_path, "Paciente Zacarias visto por Toledo.", "T1\tZacarias 9 17\tZacarias\nT2\tToledo 28 34\tToledo\n"
          "T3\tFECHAS 0 3\tPac\n")
    doc, problems = read_brat(tmp_path / "doc.txt")
    assert [(p.severity, p.tag, p.field) for p in problems] == [(WARNING, "T1", "type")]
    assert "2 annotation(s) of 2 type(s) with no known parent category" in problems[0].message
    _assert_no_phi(str(problems[0]))


@pytest.mark.parametrize("ident, shown", [("Zacarias", "#0"), ("A1234567", "#0"), ("P0", "P0"), ("T12", "T12"), ("T3.2", "T3.2")])
def test_ids_holding_a_word_or_a_number_are_never_printed(tmp_path, ident, shown):
    # Item 15: an id such as a name passed the old name shape and was printed.
    path = tmp_path / "d.xml"
    path.write_text(f'<r><TEXT>Paciente Zacarias</TEXT><TAGS><NAME id="{ident}" start="9" end="99" TYPE="PATIENT"/>'
                    "</TAGS></r>", encoding="utf-8")
    from ensemble_deid.corpus.formats.i2b2 import read_scoring_xml

    for reader in (read_i2b2_xml, read_scoring_xml):
        _, problems = reader(path)
        assert [p.tag for p in problems] == [shown]


def test_names_in_metadata_fields_never_reach_check_show_or_evaluate(tmp_path):
    # Item 15: element names, TYPE values and BRAT types are data: counted or shown as unknown-N.
    xml = tmp_path / "xml"
    xml.mkdir()
    (xml / "100-01.xml").write_text(
        '<deIdi2b2><TEXT>Paciente Zacarias visto. Quintanilla</TEXT><Berrocal/><TAGS>'
        '<NAME id="P0" start="9" end="17" text="Zacarias" TYPE="Toledo"/>'
        '<Quintanilla id="P1" start="25" end="36" TYPE="PATIENT"/></TAGS></deIdi2b2>', encoding="utf-8")
    brat = tmp_path / "brat"
    brat.mkdir()
    _brat(brat, "Paciente Zacarias visto.", "T1\tBerrocal 9 17\tZacarias\n", name="100-01")
    env = {"ENSEMBLE_DEID_HOME": str(tmp_path / "ws")}
    runner = CliRunner()
    for folder in (xml, brat):
        outputs = []
        for args in (["corpus", "check", str(folder)],
                     ["corpus", "add", "c", "--train", str(folder), "--test", str(folder), "--replace"],
                     ["corpus", "show", "c"]):
            outputs.append(runner.invoke(main, args, env=env).output)
        for fmt in ("table", "json", "csv"):
            outputs.append(runner.invoke(main, ["evaluate", "--gold", str(folder), "--system", str(folder),
                                                "--format", fmt, "--breakdown", "subtype"]).output)
        text = "\n".join(outputs)
        for word in ("Zacarias", "Quintanilla", "QUINTANILLA", "Berrocal", "BERROCAL", "Toledo", "TOLEDO"):
            assert word not in text, (folder.name, word)
        assert "unknown-1" in text


def test_label_map_names_are_shown_as_written(tmp_path):
    _brat(tmp_path, "Paciente Zacarias visto.", "T1\tPERSONA 9 17\tZacarias\n", name="100-01")
    lm = tmp_path / "map.toml"
    lm.write_text('[types]\nPERSONA = "NAME:PERSONA"\n')
    result = CliRunner().invoke(main, ["evaluate", "--gold", str(tmp_path), "--system", str(tmp_path),
                                       "--label-map", str(lm), "--breakdown", "subtype"])
    assert "NAME:PERSONA" in result.output and "unknown-" not in result.output


# --- issue 35 items 13 and 16: one guard for every reader (sizes, special files, DTDs, floods) --------

def test_notes_over_the_size_limit_are_refused_before_loading(tmp_path):
    # Item 13: a 20-90 MB note ended in a MemoryError traceback in cv, fit and deidentify.
    from ensemble_deid.corpus.formats.source import MAX_NOTE_BYTES

    brat, xml = tmp_path / "brat", tmp_path / "xml"
    brat.mkdir(), xml.mkdir()
    (brat / "100-01.txt").write_text("a" * (MAX_NOTE_BYTES + 1), encoding="utf-8")
    (brat / "100-02.txt").write_text("a" * MAX_NOTE_BYTES, encoding="utf-8")  # at the limit: loads
    (xml / "100-01.xml").write_text(f"<r><TEXT>{'a' * (MAX_NOTE_BYTES + 1)}</TEXT><TAGS/></r>", encoding="utf-8")
    for folder in (brat, xml):
        docs, problems = read_directory(folder)
        errors = [p for p in problems if p.severity == ERROR]
        assert [Path(p.file).name for p in errors] == ["100-01" + (".txt" if folder == brat else ".xml")]
        assert "over the limit of 2 MB per note" in errors[0].message and "split it" in errors[0].message
        assert [d.id for d in docs] == (["100-02"] if folder == brat else [])
        for command in (["corpus", "check", str(folder)], ["evaluate", "--gold", str(folder), "--system", str(folder)]):
            result = CliRunner().invoke(main, command)
            assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
            assert "100-01" in result.output and "over the limit" in result.output


def test_the_size_limit_message_states_the_memory_the_benchmark_measured(tmp_path):
    # It said "about 1.2 GB per MB", a figure no benchmark had measured; the
    # benchmark's results (feature extraction, notes of 0.25 to 1 MB) are the source.
    import json

    from ensemble_deid.corpus.formats.source import MAX_NOTE_BYTES

    results = json.loads((REPO_ROOT / "benchmarks" / "results" / "long-inputs.json").read_text())
    measured = max(row["mb_per_mb_of_text"] for row in results["memory"]["notes"]) / 1000
    (tmp_path / "100-01.txt").write_text("a" * (MAX_NOTE_BYTES + 1), encoding="utf-8")
    _, problems = read_directory(tmp_path)
    message = next(p.message for p in problems if p.severity == ERROR)
    assert f"about {measured:.2f} GB of memory per MB of note text" in message
    assert "feature extraction" in message


def _special_files(folder: Path) -> None:
    write_i2b2_xml(Document("100-01", "Seen by Dr. Adams.", [Annotation(12, 17, "NAME", "DOCTOR")]), folder / "100-01.xml")
    os.mkfifo(folder / "100-02.xml")
    os.symlink(folder / "100-03.xml", folder / "100-03.xml")  # a link to itself: a loop
    (folder / "100-04.xml").write_text('<!DOCTYPE deIdi2b2 SYSTEM "http://example.org/x.dtd"><deIdi2b2><TEXT>abc</TEXT>'
                                       "<TAGS/></deIdi2b2>", encoding="utf-8")


def test_evaluate_refuses_special_files_and_external_dtds_like_check(tmp_path):
    # Item 16: a symlink loop gave an OSError traceback, a FIFO was skipped
    # silently, an external DTD accepted silently (check refused each).
    _special_files(tmp_path)
    outputs = {}
    for command in (["corpus", "check", str(tmp_path)], ["evaluate", "--gold", str(tmp_path), "--system", str(tmp_path)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        outputs[command[0]] = result.output
    for output in outputs.values():
        assert "100-02.xml" in output and "not a regular file" in output
        assert "100-03.xml" in output and "cannot read file" in output
        assert "100-04.xml" in output and "external DTD" in output


def test_a_million_repeated_ann_lines_give_one_warning(tmp_path):
    # Item 16: every repeated line gave its own warning (and overlap warning) and evaluate never finished.
    # 50,000 repeats: a reader quadratic in them would still never finish; three reads of 200,000 took 7 s.
    _brat(tmp_path, "Paciente Zacarias visto el lunes.",
          "T1\tNOMBRE_SUJETO_ASISTENCIA 9 17\tZacarias\n" * 50_000 + "T2\tFECHAS 27 32\tlunes\n", name="100-01")
    docs, problems = read_directory(tmp_path)
    assert [(a.start, a.end) for a in docs[0].annotations] == [(9, 17), (27, 32)]
    assert [(p.severity, p.tag, p.message) for p in problems] == [
        (WARNING, "T1", "49999 annotation(s) repeating an earlier one (same span and type) dropped")]
    result = CliRunner().invoke(main, ["evaluate", "--gold", str(tmp_path), "--system", str(tmp_path)])
    assert result.exit_code == 0 and result.output.count("warning:") == 2  # one per folder read


def test_problems_of_one_file_are_listed_up_to_a_cap_and_counted(tmp_path):
    from ensemble_deid.corpus.formats.i2b2 import MAX_LISTED_PROBLEMS

    text = "x" * 400
    ann = "".join(f"T{i}\tFECHAS {i} {i + 20}\t{text[i:i + 20]}\n" for i in range(1, 300))  # 298 overlaps
    ann += "".join(f"T{i}\tFECHAS 5\tx\n" for i in range(300, 400))  # 100 malformed lines
    _brat(tmp_path, text, ann)
    _, problems = read_brat(tmp_path / "doc.txt")
    warnings_, errors = [p for p in problems if p.severity == WARNING], [p for p in problems if p.severity == ERROR]
    assert len(warnings_) == len(errors) == MAX_LISTED_PROBLEMS + 1
    assert errors[-1].message == f"... and {100 - MAX_LISTED_PROBLEMS} more error(s) in this file, not listed"
    assert warnings_[-1].message == f"... and {298 - MAX_LISTED_PROBLEMS} more warning(s) in this file, not listed"
