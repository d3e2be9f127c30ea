"""Scoring real XML file pairs as the official i2b2 2014 / N-GRID 2016 program
does (issue 20): each folder of tests/data/eval/ holds a gold and a system
folder exercising one rule. Every expected figure is worked out by hand from
the rules (shared/reference/evaluation.md and its corrections) in the
comments; none was produced by running the code.
"""
from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.formats.i2b2 import read_scoring_xml
from ensemble_deid.errors import CorpusError
from ensemble_deid.evaluation import EvalOptions, EvaluationWarning
from ensemble_deid.evaluation.files import evaluate_folders

DATA = Path(__file__).parent / "data" / "eval"


def score(case: str, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate_folders(DATA / case / "gold", DATA / case / "system", criteria="official", **kwargs)
    return report, [str(w.message) for w in caught if issubclass(w.category, EvaluationWarning)]


def counts(report, criterion):
    m = report[criterion].micro
    return (m.tp, m.fp, m.fn)


def test_case_of_type_is_kept_as_written():
    # Text "Pt John Reed seen by Dr Ann Lee on 2014-05-06."
    # gold:   NAME/PATIENT "John Reed", NAME/DOCTOR "Ann Lee", DATE/DATE "2014-05-06"
    # system: NAME/Patient "John Reed", NAME/DOCTOR "Ann Lee", DATE/date "2014-05-06"
    report, _ = score("case")
    # strict, relaxed, binary compare upper-cased: all three match
    assert counts(report, "strict") == (3, 0, 0)
    assert counts(report, "binary_strict") == (3, 0, 0)
    # token key (name, TYPE as written, offsets): gold 7 tokens (John Reed Ann Lee 2014 05 06);
    # only the DOCTOR tokens Ann, Lee agree -> TP 2, FP 7-2 = 5, FN 7-2 = 5
    assert counts(report, "token") == (2, 5, 5)
    assert counts(report, "binary_token") == (7, 0, 0)
    # HIPAA keeps gold NAME/PATIENT and DATE/DATE; system "Patient" fails the
    # case-sensitive prefix PATIENT, DATE/date passes (any TYPE under DATE):
    # strict: date matches (upper-cased) -> TP 1, FN 1 (John Reed)
    assert counts(report, "hipaa_strict") == (1, 0, 1)
    assert counts(report, "hipaa_relaxed") == (1, 0, 1)
    # token: gold John Reed 2014 05 06 (5); system (DATE, "date") 2014 05 06 differ by case -> 0/3/5
    assert counts(report, "hipaa_token") == (0, 3, 5)
    # binary token: the 3 date tokens match -> 3/0/2; binary strict: 1/0/1
    assert counts(report, "hipaa_binary_token") == (3, 0, 2)
    assert counts(report, "hipaa_binary_strict") == (1, 0, 1)


def test_only_known_elements_with_exact_spelling_are_read():
    # gold: NAME/DOCTOR "Ann Lee", DATE "2014-05-06"
    # system: <name> "Ann Lee" and <FOO> on the date (both ignored), NAME/DOCTOR "Lee", DATE "2014-05-06"
    report, warned = score("elements")
    # strict: system {Lee, date}: date TP; Lee FP; Ann Lee FN -> 1/1/1
    assert counts(report, "strict") == (1, 1, 1)
    # token: gold Ann Lee 2014 05 06; system Lee 2014 05 06 -> 4/0/1
    assert counts(report, "token") == (4, 0, 1)
    # <name> is a known name misspelt: shown; FOO may be a PHI word (issue 35 item 15): counted only
    assert any("1 <name> element(s), 1 element(s) of another name ignored" in w for w in warned)
    assert not any("FOO" in w for w in warned)


def test_hipaa_filter_matches_element_and_type_pairs():
    # gold: NAME/PATIENT "John Reed", LOCATION/CITY "Boston"
    # system: NAME/CITY "Boston", LOCATION/CITY "Boston", LOCATION/PATIENT "John Reed"
    report, _ = score("hipaa_pairs")
    # strict: only LOCATION/CITY Boston matches -> 1/2/1
    assert counts(report, "strict") == (1, 2, 1)
    # HIPAA: gold keeps both; system keeps LOCATION/CITY only (NAME/CITY and
    # LOCATION/PATIENT are no HIPAA pairs) -> 1/0/1 (a TYPE-only filter would give 1/1/1)
    assert counts(report, "hipaa_strict") == (1, 0, 1)
    # binary strict: spans {Boston, John Reed} both sides (two tags on Boston collapse) -> 2/0/0
    assert counts(report, "binary_strict") == (2, 0, 0)
    assert counts(report, "hipaa_binary_strict") == (1, 0, 1)


def test_phi_elements_keep_name_and_type_in_binary_keys_and_never_pass_hipaa():
    # gold: NAME/PATIENT "John Reed", PHI/DATE "2014-05-06"
    # system: PHI/PATIENT "John Reed", PHI/DATE "2014-05-06"
    report, _ = score("phi_element")
    assert counts(report, "strict") == (1, 1, 1)  # only PHI/DATE agrees
    # binary strict: gold {(s,e) of John Reed, (PHI,s,e,DATE)}; system {(PHI,s,e,PATIENT), (PHI,s,e,DATE)}
    # -> the date matches, John Reed does not (a PHI key keeps name and TYPE): 1/1/1
    assert counts(report, "binary_strict") == (1, 1, 1)
    # binary token keys are (start, end) for every tag: John Reed 2014 05 06 -> 5/0/0
    assert counts(report, "binary_token") == (5, 0, 0)
    # HIPAA drops every PHI tag: gold keeps NAME/PATIENT only, system nothing
    assert counts(report, "hipaa_strict") == (0, 0, 1)
    assert counts(report, "hipaa_binary_token") == (0, 0, 2)


def test_tag_without_letters_or_digits_is_one_empty_token_at_its_end():
    # Text "Code ## and -- noted.": gold OTHER "##" [5, 7) and "--" [12, 14)
    # system OTHER "#" [6, 7) (same end as gold "##") and "-" [12, 13)
    report, _ = score("empty_token")
    # empty tokens at the tags' ends: gold {(7,7), (14,14)}, system {(7,7), (13,13)} -> 1/1/1
    assert counts(report, "token") == (1, 1, 1)
    assert counts(report, "binary_token") == (1, 1, 1)
    assert counts(report, "strict") == (0, 2, 2)


def test_relaxed_set_building_follows_the_system_file_order():
    # Both documents: gold DATE "2014-05-06" ending at E = 15.
    # order-01 system ends, in file order: E+2, E, E+4 -> set building keeps E+2 and
    #   drops E (within 2 of E+2) and E+4 (within 2 of E+2): system set {E+2};
    #   sizes 1 and 1: TP = matched system tags = 1; FP 0; FN 0
    # order-02 system ends E, E+2, E+4 -> keeps E, drops E+2, keeps E+4 (4 from E):
    #   system set {E, E+4}, larger than gold: TP = matched gold = 1; FP 1 (E+4); FN 0
    report, _ = score("relaxed_order", options=EvalOptions(missing="error"))
    docs = report["relaxed"].documents
    by_id = {d: (tp, fp, fn) for d, tp, fp, fn in zip(docs.doc_ids, docs.tp.tolist(), docs.fp.tolist(), docs.fn.tolist())}
    assert by_id == {"order-01": (1, 0, 0), "order-02": (1, 1, 0)}
    # strict: one exact match per document, two spurious ends -> 2/4/0
    assert counts(report, "strict") == (2, 4, 0)
    # one-to-one matching (quirk off) does not depend on the order: 1/2/0 each
    report, _ = score("relaxed_order", options=EvalOptions(relaxed_many_to_one=False))
    assert counts(report, "relaxed") == (2, 4, 0)


def test_oddities_are_scored_with_a_warning():
    # Text "Dr Ann Lee wrote on 2014-05-06; all ok." (39 characters)
    # gold: NAME/DOCTOR "Ann Lee" [3,10), DATE/DATE [20,30)
    # system: NAME/DOCTOR [3,10) with text="Zed Q" (attribute ignored), DATE [20,30) without TYPE
    #   (TYPE ""), OTHER/OTHER [11,11) zero-length, OTHER/OTHER [36,44) past the end of TEXT
    report, warned = score("oddities")
    # strict: Ann Lee matches; (DATE,"") is not (DATE,DATE); two OTHER -> 1/3/1
    assert counts(report, "strict") == (1, 3, 1)
    assert counts(report, "binary_strict") == (2, 2, 0)
    # token: gold Ann Lee 2014 05 06 (5); system Ann Lee (match), (DATE,"") x3, empty token
    # of the zero-length tag at 11, "ok" [36,38) of the past-end tag -> 2/5/3
    assert counts(report, "token") == (2, 5, 3)
    assert counts(report, "binary_token") == (5, 2, 0)
    # HIPAA: gold keeps the DATE; system keeps DATE/"" (any TYPE under DATE) -> strict 0/1/1
    assert counts(report, "hipaa_strict") == (0, 1, 1)
    assert counts(report, "hipaa_binary_strict") == (1, 0, 0)
    text = " ".join(warned)
    for what in ("zero-length", "past the end of TEXT", "text attribute differs", "without TYPE"):
        assert what in text
    assert "Zed" not in text and "Ann Lee" not in text  # no text of the file in warnings


def test_macro_figures_per_category():
    # macro-01: gold NAME/DOCTOR, DATE; system NAME/DOCTOR only
    # macro-02: gold DATE a, DATE b; system DATE a, DATE c (spurious)
    report, _ = score("category_macro")
    strict = report["strict"]
    # NAME: doc 1 P 1 R 1; doc 2 nothing: P 0 R 0 -> macro P .5 (SD .5), R .5 (SD .5), F1 .5; micro 1/0/0
    name = strict.category_macro["NAME"]
    assert (name.precision, name.precision_sd, name.recall, name.recall_sd) == (0.5, 0.5, 0.5, 0.5)
    assert strict.by_category["NAME"].f1 == 1.0
    # DATE: doc 1 TP0 FP0 FN1 -> P 0 R 0; doc 2 TP1 FP1 FN1 -> P .5 R .5
    # -> macro P .25 (SD .25), R .25 (SD .25), F1 .25; micro TP1 FP1 FN2 -> P .5 R 1/3 F1 .4
    date = strict.category_macro["DATE"]
    assert (date.precision, date.precision_sd, date.recall, date.recall_sd) == (0.25, 0.25, 0.25, 0.25)
    assert date.f1 == pytest.approx(0.25)
    assert strict.by_category["DATE"].f1 == pytest.approx(0.4)
    # overall: doc 1 P 1 R .5, doc 2 P .5 R .5 -> macro P .75 (SD .25), R .5 (SD 0), F1 .6
    assert strict.macro.precision == 0.75 and strict.macro.recall == 0.5
    assert strict.macro.f1 == pytest.approx(0.6)


def test_official_blocks_ngrid_and_i2b2_layout():
    out = CliRunner().invoke(main, ["evaluate", "--gold", str(DATA / "category_macro" / "gold"),
                                    "--system", str(DATA / "category_macro" / "system"), "--format", "i2b2"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    # the figures of the test above, as the 2014 program prints them ({:.4} and {:.2})
    i = next(k for k, line in enumerate(lines) if line.startswith("NAME Strict (2) "))
    assert lines[i].split() == ["NAME", "Strict", "(2)", "Measure", "Macro", "(SD)", "Micro", "(Primary)"]
    assert lines[i + 2].split() == ["Total", "Precision", "0.5", "(0.5)", "1.0"]
    assert lines[i + 4].split() == ["F1", "0.5", "1.0"]
    j = next(k for k, line in enumerate(lines) if line.startswith("Strict (2)"))
    # overall strict: micro TP2 FP1 FN2 -> P .6667 R .5 F1 .5714; macro P .75 (.25) R .5 (0.0) F1 .6
    assert lines[j + 2].split() == ["Total", "Precision", "0.75", "(0.25)", "0.6667"]
    assert lines[j + 3].split() == ["Recall", "0.5", "(0.0)", "0.5"]
    assert lines[j + 4].split() == ["F1", "0.6", "0.5714"]
    # NAME/DOCTOR is not HIPAA: nothing in scope, macro P = R = 0 (numpy floats) -> F1 0/0 = nan;
    # the micro F1 (Python floats) hits the program's ZeroDivisionError guard -> 0.0
    k = next(k for k, line in enumerate(lines) if line.startswith("NAME Binary HIPAA Strict (2)"))
    assert lines[k + 4].split() == ["F1", "nan", "0.0"]
    # the programs' own spellings
    assert any(line.startswith("HIPPA Token (2) ") for line in lines)
    assert any(line.startswith("Binary HIPPA Token (2) ") for line in lines)
    assert any(line.startswith("DATE HIPPA Token (2) ") for line in lines)
    # 2016: micro column only, 35-character label column
    ngrid = CliRunner().invoke(main, ["evaluate", "--gold", str(DATA / "category_macro" / "gold"),
                                      "--system", str(DATA / "category_macro" / "system"), "--format", "ngrid"])
    assert ngrid.exit_code == 0
    lines = ngrid.output.splitlines()
    j = lines.index("Strict (2)".ljust(35) + "Measure".ljust(15) + "Micro (Primary)".ljust(20))
    assert lines[j + 1] == "-" * 70
    assert lines[j + 2].split() == ["Total", "Precision", "0.6667"]
    assert "Macro" not in ngrid.output


# Outputs of the real programs (i2b2 2014 ``evaluate.py phi SYSTEM GOLD``, N-GRID 2016
# ``evaluate.py track1 GOLD SYSTEM``; kotfic/i2b2_evaluation_scripts and
# filannim/2016_CEGS_N-GRID_evaluation_scripts, Python 2.7.18, numpy 1.16.6), run on
# these folders; their "WARNING:" lines (printed to standard output) left out.
OFFICIAL_OUTPUTS = sorted((p.parent.name, p.name) for p in DATA.glob("*/official-*.txt"))


@pytest.mark.parametrize("case,name", OFFICIAL_OUTPUTS)
def test_official_format_prints_what_the_official_program_prints(case, name):
    fmt = {"official-2014.txt": "i2b2", "official-2016.txt": "ngrid"}[name]
    out = CliRunner().invoke(main, ["evaluate", "--gold", str(DATA / case / "gold"),
                                    "--system", str(DATA / case / "system"), "--format", fmt])
    assert out.exit_code == 0, out.output
    assert out.stdout == (DATA / case / name).read_text(encoding="utf-8")


def test_official_outputs_are_present():
    assert len(OFFICIAL_OUTPUTS) == 18


def test_label_map_scores_exported_predictions_against_brat_gold():
    # BRAT gold with the user's labels PERSONA "Juan Ruiz" and FECHA "12/12/2016";
    # exported predictions NAME/PATIENT and DATE/DATE on the same spans.
    gold, system = DATA / "label_map" / "gold", DATA / "label_map" / "system"
    runner = CliRunner()
    without = runner.invoke(main, ["evaluate", "--gold", str(gold), "--system", str(system), "--criteria", "strict",
                                   "--format", "csv"])
    assert without.exit_code == 0, without.output
    assert "micro,strict,all,tp,0" in without.output  # labels differ: nothing matches
    mapped = runner.invoke(main, ["evaluate", "--gold", str(gold), "--system", str(system), "--criteria", "strict",
                                  "--format", "csv", "--label-map", str(DATA / "label_map" / "user-to-i2b2.toml")])
    assert mapped.exit_code == 0, mapped.output
    assert "micro,strict,all,tp,2" in mapped.output and "micro,strict,all,fp,0" in mapped.output


def test_unscorable_tags_are_errors_naming_file_and_tag(tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "a.xml").write_text('<?xml version="1.0"?><deIdi2b2><TEXT><![CDATA[Ann Lee]]></TEXT><TAGS>'
                                '<NAME id="P0" start="x" end="3" TYPE="DOCTOR"/>'
                                '<NAME id="P1" start="5" end="2" TYPE="DOCTOR"/></TAGS></deIdi2b2>')
    record, problems = read_scoring_xml(gold / "a.xml")
    assert record is None
    shown = [str(p) for p in problems]
    assert any("P0" in s and "not an integer" in s for s in shown)
    assert any("P1" in s and "reversed" in s for s in shown)
    assert not any("Ann" in s for s in shown)
    with pytest.raises(CorpusError, match="a.xml"):
        evaluate_folders(gold, gold)


def test_entities_are_refused(tmp_path):
    bomb = tmp_path / "b.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
                    "<deIdi2b2><TEXT>&b;</TEXT><TAGS/></deIdi2b2>")
    record, problems = read_scoring_xml(bomb)
    assert record is None and "refused" in str(problems[0])


def test_report_file_is_owner_only_and_folders_are_created(tmp_path):
    old = os.umask(0o000)
    try:
        target = tmp_path / "new" / "deeper" / "report.json"
        out = CliRunner().invoke(main, ["evaluate", "--gold", str(DATA / "case" / "gold"), "--system",
                                        str(DATA / "case" / "system"), "--format", "json", "-o", str(target)])
    finally:
        os.umask(old)
    assert out.exit_code == 0, out.output
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(target.parent.parent.stat().st_mode) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]  # no temp file left


def test_disk_full_is_one_clean_line_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    from ensemble_deid import files
    from ensemble_deid.cli import evaluate as evaluate_cmd

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    target = tmp_path / "r.txt"
    with pytest.raises(files.FileWriteError, match="no space left on the device") as err:
        evaluate_cmd.write_report(str(target), "figures")
    assert "Traceback" not in str(err.value) and str(target) in str(err.value)
    assert list(tmp_path.iterdir()) == []  # neither the report nor its temp file


def test_fuzzed_files_give_a_record_or_problems_never_an_exception(tmp_path):
    """Seeded byte and attribute mutations of a real fixture, bounded in count:
    the scoring reader returns a record or named problems, and no problem
    message carries text from the file."""
    import random
    import time

    rng = random.Random(20)
    base = (DATA / "oddities" / "system" / "odd-01.xml").read_bytes()
    edits = [b'start="-4"', b'end="x"', b'TYPE="', b"<FOO/>", b"<!DOCTYPE a>", b"\x00", b"\xff\xfe", b"]]>", b"<TEXT>",
             b'start="999999"', b"&amp;", b"</TAGS>"]
    secret = "Ann Lee"
    deadline = time.monotonic() + 20
    for i in range(300):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data))
            if rng.random() < 0.5:
                data[pos:pos + rng.randint(0, 6)] = rng.choice(edits)
            else:
                data[pos] = rng.randrange(256)
        path = tmp_path / f"f{i}.xml"
        path.write_bytes(bytes(data))
        record, problems = read_scoring_xml(path)
        assert record is not None or problems
        for p in problems:
            assert secret not in str(p)
        if time.monotonic() > deadline:
            break


@pytest.mark.parametrize("case", sorted(p.name for p in DATA.iterdir() if (p / "gold").is_dir() and p.name != "label_map"))
def test_engine_agrees_with_the_reference_loop_on_every_fixture(case):
    """Every criterion (SemEval included), per document, against the
    one-loop-per-criterion reference fed the same tags in file order."""
    from types import SimpleNamespace

    from ensemble_deid.corpus.document import Annotation
    from ensemble_deid.evaluation import CRITERIA, evaluate, reference
    from ensemble_deid.evaluation.files import read_pair

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        gold, system = read_pair(DATA / case / "gold", DATA / case / "system")
    report = evaluate(gold, system, criteria="all", lenient=True)
    docs = [SimpleNamespace(id=g.id, text=g.text, annotations=[Annotation(*t) for t in g.annotations]) for g in gold]
    tags = {k: [Annotation(*t) for t in v] for k, v in system.items()}
    for name in report.criteria:
        want = [tuple(reference.document_counts(d, tags.get(d.id, ()), CRITERIA[name], report.options)) for d in docs]
        got = report[name].documents
        assert list(zip(got.tp.tolist(), got.fp.tolist(), got.fn.tolist())) == want, name


def test_entities_hidden_in_utf16_are_refused(tmp_path):
    bomb = tmp_path / "b.xml"
    text = ('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
            "<deIdi2b2><TEXT>&b;</TEXT><TAGS/></deIdi2b2>")
    bomb.write_bytes(text.encode("utf-16"))
    record, problems = read_scoring_xml(bomb)
    assert record is None and "refused" in str(problems[0])


def test_label_map_on_meddocan_brat_gold(meddocan_dir, tmp_path):
    """Real files: predictions exported in i2b2 labels (here MEDDOCAN's own dev
    annotations mapped by labelmaps/meddocan-to-i2b2.toml, as a corpus
    registered with that map exports them) against the user's MEDDOCAN BRAT
    gold (Marimon et al., IberLEF@SEPLN 2019, CC BY 4.0). With the map the
    labels agree and every span matches (strict P = R = 1); without it only
    spans whose label happens to coincide can match."""
    import shutil

    from ensemble_deid.corpus.formats import read_i2b2_xml, write_i2b2_xml
    from ensemble_deid.corpus.labelmap import LabelMap

    label_map = Path(__file__).resolve().parent.parent / "ensemble_deid" / "labelmaps" / "meddocan-to-i2b2.toml"
    ids = sorted(p.stem for p in (meddocan_dir / "dev" / "brat").glob("*.txt"))[:15]
    gold, system = tmp_path / "gold", tmp_path / "system"
    gold.mkdir()
    system.mkdir()
    for i in ids:
        for ext in (".txt", ".ann"):
            shutil.copy(meddocan_dir / "dev" / "brat" / f"{i}{ext}", gold / f"{i}{ext}")
    mapping = LabelMap.load(label_map)
    for i in ids:
        doc, _ = read_i2b2_xml(meddocan_dir / "dev" / "xml" / f"{i}.xml")
        write_i2b2_xml(mapping.apply_document(doc), system / f"{i}.xml")
    runner = CliRunner()
    args = ["evaluate", "--gold", str(gold), "--system", str(system), "--criteria", "strict", "--format", "csv"]
    mapped = runner.invoke(main, args + ["--label-map", str(label_map)])
    assert mapped.exit_code == 0, mapped.output
    rows = {tuple(line.split(",")[1:4]): line.split(",")[4] for line in mapped.output.splitlines()[1:]}
    assert float(rows[("strict", "all", "precision")]) == 1.0 and float(rows[("strict", "all", "recall")]) == 1.0
    plain = runner.invoke(main, args)
    assert plain.exit_code == 0, plain.output
    rows = {tuple(line.split(",")[1:4]): line.split(",")[4] for line in plain.output.splitlines()[1:]}
    assert float(rows[("strict", "all", "f1")]) < 0.5


def test_report_under_a_file_is_one_clean_line(tmp_path):
    (tmp_path / "afile").write_text("")
    out = CliRunner().invoke(main, ["evaluate", "--gold", str(DATA / "case" / "gold"), "--system",
                                    str(DATA / "case" / "system"), "-o", str(tmp_path / "afile" / "sub" / "r.txt")])
    assert out.exit_code != 0 and "not a folder" in out.output and "Traceback" not in out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
