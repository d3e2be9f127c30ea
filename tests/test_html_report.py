"""The HTML error-analysis page (``ensemble-deid report``): error kinds and the
confusion matrix on hand-computed fixtures, the page's numbers against
``evaluate``/``compare``, no note text or PHI without --include-text,
escaping, owner-only files, and (where Chromium is installed) the page in a
real headless browser: no console errors, filters that change what is shown,
lanes aligned to the text."""
from __future__ import annotations

import json
import os
import re
import sys
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.evaluation import Scorer, evaluate
from ensemble_deid.evaluation.overlap import (BOUNDARY, CORRECT, FALSE_ALARM, LEAK, NONE, WRONG_TYPE, confusion,
                                              document_overlap, nonspace_mask)
from ensemble_deid.studies.comparison import compare_systems
from ensemble_deid.studies.html_report import ReportData, Section, build_page, write_page

from .conftest import register_corpus
from .tiny_corpus import tiny_corpus

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from chromium import Chromium, find_chromium  # noqa: E402

needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (apt-get install chromium)")


def A(start, end, label):
    category, type_ = label.split(":")
    return Annotation(start, end, category, type_)


# -- error kinds and confusion (hand-computed) --------------------------------

TEXT = "Ana Lopez saw Dr Ruiz in Madrid on 3 May 2019."
#       0123456789012345678901234567890123456789012345
GOLD = [A(0, 9, "NAME:PATIENT"), A(14, 21, "NAME:DOCTOR"), A(25, 31, "LOCATION:CITY"), A(35, 45, "DATE:DATE")]


def test_error_kinds_of_every_span_hand_computed():
    system = [
        A(0, 9, "NAME:PATIENT"),      # exact: correct
        A(14, 21, "NAME:PATIENT"),    # exact offsets, other label: wrong type
        A(25, 29, "LOCATION:CITY"),   # "Madr": "id" left uncovered: gold leaks, the system span is a boundary error
        A(35, 36, "DATE:DATE"),       # "3" ...
        A(37, 45, "DATE:DATE"),       # ... and "May 2019": covered up to the space, so a boundary error, not a leak
        A(10, 13, "NAME:DOCTOR"),     # "saw": overlaps no gold span: false alarm
    ]
    ov = document_overlap(GOLD, system, nonspace_mask(TEXT))
    assert ov.gold_kinds == (CORRECT, WRONG_TYPE, LEAK, BOUNDARY)
    assert ov.system_kinds == (CORRECT, WRONG_TYPE, BOUNDARY, BOUNDARY, BOUNDARY, FALSE_ALARM)
    assert sorted(ov.pairs) == [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4)]


def test_labels_compare_upper_cased_as_the_strict_key():
    ov = document_overlap([A(0, 3, "NAME:Patient")], [A(0, 3, "name:PATIENT")], nonspace_mask("Ana"))
    assert ov.gold_kinds == (CORRECT,) and ov.system_kinds == (CORRECT,)


def test_a_span_missed_entirely_is_a_leak_and_nothing_overlapping_is_a_false_alarm():
    ov = document_overlap(GOLD[:1], [A(25, 31, "LOCATION:CITY")], nonspace_mask(TEXT))
    assert ov.gold_kinds == (LEAK,) and ov.system_kinds == (FALSE_ALARM,) and ov.pairs == ()
    empty = document_overlap([], [], nonspace_mask(""))
    assert empty == document_overlap([], [], nonspace_mask("")) and empty.gold_kinds == ()


def test_white_space_is_what_str_isspace_says():
    text = "".join(chr(c) for c in [*range(0x3100), 0x1F600, 0x10FFFF] if not 0xD800 <= c < 0xE000)
    assert nonspace_mask(text).tolist() == [not c.isspace() for c in text]


def test_confusion_matrix_hand_computed():
    doc = Document("d1", TEXT, GOLD)
    system = {"d1": [A(0, 9, "NAME:DOCTOR"), A(14, 21, "NAME:DOCTOR"), A(10, 13, "DATE:DATE")]}
    ov = {"d1": document_overlap(doc.annotations, system["d1"], nonspace_mask(TEXT))}
    labels = ["NAME:PATIENT", "NAME:DOCTOR", "LOCATION:CITY", "DATE:DATE"]
    conf = confusion([doc], system, ov, labels)
    assert conf.labels == (*labels, NONE)
    expected = [[0, 1, 0, 0, 0],   # PATIENT gold read as DOCTOR
                [0, 1, 0, 0, 0],   # DOCTOR right
                [0, 0, 0, 0, 1],   # CITY missed
                [0, 0, 0, 0, 1],   # DATE missed
                [0, 0, 0, 1, 0]]   # a DATE false alarm
    assert conf.counts.tolist() == expected


def _perturbed(docs, seed):
    """Predictions with every kind of error: shifted ends, other labels, spans dropped, spans added."""
    import random

    rng = random.Random(seed)
    out = {}
    for doc in docs:
        spans = []
        for a in doc.annotations:
            r = rng.random()
            if r < 0.15:
                continue
            if r < 0.25 and a.end - a.start > 2:
                spans.append(Annotation(a.start, a.end - 1, a.category, a.type))  # a character left out: a leak
            elif r < 0.35 and a.end < len(doc.text):
                spans.append(Annotation(a.start, a.end + 1, a.category, a.type))  # one too many: a boundary error
            elif r < 0.45:
                spans.append(Annotation(a.start, a.end, "ID", "MEDICALRECORD" if a.type != "MEDICALRECORD" else "SSN"))
            else:
                spans.append(a)
        spans.append(Annotation(0, 6, "NAME", "DOCTOR"))  # "Record": false alarm
        out[doc.id] = sorted(spans)
    return out


def test_error_kinds_count_the_strict_false_positives_and_negatives():
    docs = tiny_corpus(20, seed=3)
    system = _perturbed(docs, 1)
    counts = Scorer(docs, "strict").counts(system)
    for i, doc in enumerate(docs):
        ov = document_overlap(doc.annotations, system[doc.id], nonspace_mask(doc.text))
        assert sum(k != CORRECT for k in ov.gold_kinds) == counts.fn[i]
        assert sum(k != CORRECT for k in ov.system_kinds) == counts.fp[i]
    all_kinds = {k for doc in docs for k in document_overlap(doc.annotations, system[doc.id], nonspace_mask(doc.text)).gold_kinds}
    assert {LEAK, WRONG_TYPE, BOUNDARY} <= all_kinds


# -- the page -------------------------------------------------------------------

def _systems(docs):
    gold = {d.id: list(d.annotations) for d in docs}
    return {"good": _perturbed(docs, 1), "bad": _perturbed(docs, 2), "ensemble.voting": _perturbed(docs, 3), "gold-copy": gold}


def _page_json(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def _summary_rows(page: str) -> dict[str, list[str]]:
    table = re.search(r'<table class="sortable" id="systems">(.*?)</table>', page, re.S).group(1)
    rows = {}
    for row in re.findall(r"<tr data-sys=[^>]*>(.*?)</tr>", table, re.S):
        values = [unescape(v) for v in re.findall(r'data-v="([^"]*)"', row)]
        rows[values[0]] = values
    return rows


def test_page_numbers_equal_evaluate_and_compare():
    docs = tiny_corpus(16, seed=2)
    systems = _systems(docs)
    data = ReportData("tiny", docs, systems, frozenset({"ensemble.voting"}))
    page = build_page(data)
    rows = _summary_rows(page)
    for name, spans in systems.items():
        rep = evaluate(docs, spans, criteria="strict")
        micro, leak = rep["strict"].micro, rep.leak.overall
        p, r, f = Scorer(docs, "strict").prf(spans)  # what compare_systems scores with
        row = rows[name]
        assert [float(x) for x in row[2:5]] == pytest.approx([micro.precision, micro.recall, micro.f1], abs=0)
        assert (float(row[2]), float(row[3]), float(row[4])) == (p, r, f)
        assert [int(x) for x in row[5:8]] == [micro.tp, micro.fp, micro.fn]
        assert float(row[8]) == leak.token_rate and float(row[9]) == leak.char_rate
        # issue 28: the entity leak beside them, each with its document-bootstrap interval
        assert float(row[11]) == leak.entity_rate
        assert float(row[10]) <= leak.token_rate and float(row[12]) <= leak.entity_rate
        for cat, scores in rep["strict"].by_category.items():
            if scores.tp + scores.fp + scores.fn:
                cells = re.search(rf'<tr data-cat="{cat}" data-sys="{re.escape(name)}">(.*?)</tr>', page).group(1)
                values = re.findall(r'data-v="([^"]*)"', cells)
                assert float(values[5]) == scores.f1 and int(values[2]) == scores.tp + scores.fn
    payload = _page_json(page)
    for k, name in enumerate(systems):
        counts = Scorer(docs, "strict").counts(systems[name])
        assert [d["c"][k] for d in payload["docs"]] == [[int(a), int(b), int(c)] for a, b, c in
                                                        zip(counts.tp, counts.fp, counts.fn)]
    assert payload["systems"][payload["focus"]]["name"] == "ensemble.voting"  # the only ensemble
    assert rows["gold-copy"][4] == "1.0"
    # the ceiling: the members' union (the ensemble left out) leaks what evaluate says of every member span at once
    union = {d.id: [a for n, s in systems.items() if n != "ensemble.voting" for a in s[d.id]] for d in docs}
    ceiling = evaluate(docs, union, criteria="strict").leak.overall
    assert f"leaks {ceiling.entity_rate:.4f} of the gold entities" in page
    assert f"and {ceiling.token_rate:.4f} of the PHI tokens" in page


def _phi_strings(docs):
    """Every gold PHI string that can be told apart from the page's own
    words and numbers: 4+ characters with a letter, or 7+ characters (one to
    three letters, such as a sex "M", and short digit strings, such as an
    age, also occur in markup, counts and offsets)."""
    out = set()
    for d in docs:
        for a in d.annotations:
            s = d.text[a.start:a.end]
            if (len(s) >= 4 and re.search(r"[^\W\d_]", s)) or len(s) >= 7:
                out.add(s)
    return out


def assert_no_note_text(page: str, docs) -> None:
    """No gold PHI string and no line of note text (12+ characters) is in the page."""
    found = [s for s in _phi_strings(docs) if s in page]
    assert not found, f"{len(found)} PHI string(s) in the page"
    lines = {ln.strip() for d in docs for ln in d.text.splitlines() if len(ln.strip()) >= 12}
    assert not [ln for ln in lines if ln in page]


def test_without_include_text_no_phi_or_note_text_is_in_the_page(tmp_path):
    docs = tiny_corpus(16, seed=2)
    assert len(_phi_strings(docs)) > 50
    page = build_page(ReportData("tiny", docs, _systems(docs)))
    assert_no_note_text(page, docs)
    payload = _page_json(page)
    assert not payload["text"] and not any("text" in d for d in payload["docs"]) and "No note text" in page
    with_text = build_page(ReportData("tiny", docs, _systems(docs)), include_text=True)
    assert "This page contains note text" in with_text
    assert _page_json(with_text)["docs"][0]["text"] == docs[0].text
    assert any(s in with_text for s in _phi_strings(docs))  # the grep above can see PHI when it is there


def test_pages_are_written_owner_only_whatever_the_umask(tmp_path):
    docs = tiny_corpus(4)
    old = os.umask(0)
    try:
        path = write_page(tmp_path / "new" / "deeper" / "r.html", build_page(ReportData("t", docs, _systems(docs)), True))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700 and path.parent.stat().st_mode & 0o777 == 0o700


HOSTILE = ("Nota </script><script>window.__pwned = 1</script> & <img src=x onerror=\"window.__pwned=2\">\n"
           "Paciente: José\nMaría Núñez 😀 \u2028 vive en\nMálaga; médico Dr. Ruiz.")


def _hostile_doc():
    t = HOSTILE
    name = t.index("José")
    city = t.index("Málaga")
    doctor = t.index("Ruiz")
    gold = [
        A(name, t.index("Núñez") + len("Núñez"), "NAME:PATIENT"),   # across a line break, with non-ASCII letters
        A(name, name + 4, "NAME:PATIENT"),                          # overlapping the first
        A(city, city + 6, "LOCATION:CITY"),
        A(doctor, doctor + 4, "NAME:DOCTOR"),
        A(t.index("<img"), t.index("<img") + 4, "OTHER:OTHER"),    # markup inside a span
    ]
    return Document("doc<b>1</b>", t, gold), t


def test_note_text_and_names_are_escaped():
    doc, t = _hostile_doc()
    systems = {"a<script>": {doc.id: [A(t.index("Málaga"), t.index("Málaga") + 3, "LOCATION:CITY")]}}
    page = build_page(ReportData("<title>", [doc], systems), include_text=True)
    assert "<script>window.__pwned" not in page and "<img src=x" not in page and "a<script>" not in page
    assert "doc<b>" not in page and "<title><title>" not in page
    assert page.count("</script>") == 2  # the data's and the code's own
    payload = _page_json(page)
    assert payload["docs"][0]["text"] == t and payload["docs"][0]["id"] == doc.id


def test_extra_sections_plug_in_before_the_documents():
    docs = tiny_corpus(4)
    page = build_page(ReportData("t", docs, _systems(docs)), extra_sections=[Section("pr", "Precision-recall", "<p>x</p>")])
    assert page.index('<section id="pr">') < page.index('<section id="documents">')
    assert '<a href="#pr">Precision-recall</a>' in page
    with pytest.raises(ValueError, match="unique"):
        build_page(ReportData("t", docs, _systems(docs)), extra_sections=[Section("documents", "again", "")])


def test_bad_input_is_refused_before_any_work():
    docs = tiny_corpus(4)
    with pytest.raises(ValueError, match="no predictions for 1 document"):
        ReportData("t", docs, {"x": {d.id: [] for d in docs[1:]}})
    with pytest.raises(ValueError, match="focus"):
        ReportData("t", docs, {"x": {d.id: [] for d in docs}}, focus="y")


# -- the command ----------------------------------------------------------------

MEMBERS = "memorize,memorize:max_len=1,memorize:max_len=2"


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.fixture
def tiny_cached(workspace, tmp_path):
    docs = tiny_corpus(30, seed=5)
    register_corpus(workspace, "tiny", {"train": (tmp_path / "tiny" / "train", docs[:22]),
                                        "test": (tmp_path / "tiny" / "test", docs[22:])})
    _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS, "--folds", "3", "--no-progress",
         "--no-oof", "--no-diagnostics")
    return docs[22:]


def test_report_command_writes_the_page_owner_only_with_evaluate_s_numbers(tiny_cached, tmp_path):
    out = tmp_path / "out" / "r.html"
    old = os.umask(0)
    try:
        res = _run("report", "--corpus", "tiny", "--members", MEMBERS, "--ensembles", "voting", "--folds", "3", "-o", out)
    finally:
        os.umask(old)
    assert "no note text" in res.output and out.stat().st_mode & 0o777 == 0o600
    page = out.read_text(encoding="utf-8")
    assert_no_note_text(page, tiny_cached)
    rows = _summary_rows(page)
    assert set(rows) == {"memorize", "memorize:max_len=1", "memorize:max_len=2", "ensemble.voting"}
    for system in rows:
        ev = json.loads(_run("evaluate", "--corpus", "tiny", "--system", system, "--folds", "3", "--criteria", "strict",
                             "--format", "json").output)
        micro = ev["strict"]["micro"] if "strict" in ev else ev["criteria"]["strict"]["micro"]
        assert [float(x) for x in rows[system][2:5]] == [micro["precision"], micro["recall"], micro["f1"]]
    cmp = _run("compare", "--corpus", "tiny", "--folds", "3", "--test", "t-test", "memorize", "ensemble.voting").output
    for system in ("memorize", "ensemble.voting"):
        line = next(x for x in cmp.splitlines() if x.startswith(f"| {system} "))
        p, r, f = (float(c) for c in line.strip("|").split("|")[1:4])
        assert (p, r, f) == tuple(round(float(x), 4) for x in rows[system][2:5])
    res = _run("report", "--corpus", "tiny", "--members", MEMBERS, "--folds", "3", "--include-text", "-o", out)
    assert "with note text" in res.output and "This page contains note text" in out.read_text(encoding="utf-8")
    assert out.stat().st_mode & 0o777 == 0o600


def test_report_command_refuses_missing_predictions_before_writing(tiny_cached, tmp_path):
    out = tmp_path / "r.html"
    res = _run("report", "--corpus", "tiny", "--members", "memorize:max_len=3,memorize", "--folds", "3", "-o", out, ok=False)
    assert res.exit_code != 0 and "run 'ensemble-deid cv" in res.output and not out.exists()
    res = _run("report", "--corpus", "tiny", "--members", MEMBERS, "--ensembles", "stacked-svm", "--folds", "3", "-o", out,
               ok=False)
    assert res.exit_code != 0 and "stacked-svm" in res.output and not out.exists()
    res = _run("report", "--corpus", "tiny", "--members", MEMBERS, "--rank-by", "nope", "-o", out, ok=False)
    assert res.exit_code == 2 and "--rank-by" in res.output
    res = _run("report", "--corpus", "tiny", "--members", MEMBERS, "--ensembles", "voting", "--split", "train",
               "--folds", "3", "-o", out, ok=False)  # made with --no-oof: no out-of-fold predictions to show
    assert res.exit_code != 0 and "without --no-oof" in res.output and not out.exists()


def test_report_command_on_the_training_split_shows_out_of_fold_predictions(tiny_cached, tmp_path):
    out = tmp_path / "r.html"
    _run("report", "--corpus", "tiny", "--members", MEMBERS, "--split", "train", "--folds", "3", "-o", out)
    payload = _page_json(out.read_text(encoding="utf-8"))
    assert len(payload["docs"]) == 22 and payload["systems"][payload["focus"]]["kind"] == "member"



def test_report_picks_the_cached_ensemble_of_its_members_among_several(tiny_cached, tmp_path):
    """A second voting ensemble of other members in the cache (another
    'ensemble' or 'fit' run: the fresh-clone walk of issue 34) does not make
    '--ensembles voting' ambiguous: the report shows the one fitted on its
    --members, the numbers of that entry."""
    two = "memorize,memorize:max_len=1"
    _run("ensemble", "--corpus", "tiny", "--method", "voting", "--members", two, "--folds", "3", "--no-progress",
         "--no-oof", "--no-diagnostics")
    for members in (MEMBERS, two):
        out = tmp_path / f"{len(members)}.html"
        _run("report", "--corpus", "tiny", "--members", members, "--ensembles", "voting", "--folds", "3", "-o", out)
        ev = _run("evaluate", "--corpus", "tiny", "--system", "ensemble.voting", "--folds", "3", ok=False)
        assert ev.exit_code != 0 and "ambiguous" in ev.output  # without members, two entries fit the name
        hashes = re.findall(r"hash=([0-9a-f]+): members ([^;]+);", ev.output)
        chosen = next(h for h, listed in hashes if sorted(listed.split(", ")) == sorted(members.split(",")))
        micro = json.loads(_run("evaluate", "--corpus", "tiny", "--system", f"ensemble.voting:hash={chosen}",
                                "--folds", "3", "--criteria", "strict", "--format", "json").output)
        micro = micro["strict"]["micro"] if "strict" in micro else micro["criteria"]["strict"]["micro"]
        row = _summary_rows(out.read_text(encoding="utf-8"))["ensemble.voting"]
        assert [float(x) for x in row[2:5]] == [micro["precision"], micro["recall"], micro["f1"]]
    res = _run("report", "--corpus", "tiny", "--members", "memorize,memorize:max_len=2", "--ensembles", "voting",
               "--folds", "3", "-o", tmp_path / "x.html", ok=False)  # neither entry has these members
    assert res.exit_code != 0 and "ambiguous" in res.output

def test_report_names_every_missing_ensemble_at_once_before_reading_the_members(tiny_cached, tmp_path,
                                                                              monkeypatch):
    """Issue 53 item 6: the docs' recipe failed after 55 s of loading on the first
    ensemble not cached, called a "member"; the others were found one rerun at a time."""
    from ensemble_deid.experiment.cache import PredictionCache

    read = []
    real = PredictionCache.read_part
    monkeypatch.setattr(PredictionCache, "read_part", lambda self, *a, **k: read.append(1) or real(self, *a, **k))
    res = _run("report", "--corpus", "tiny", "--members", MEMBERS, "--ensembles",
               "voting,voting-pruned,stacked-svm,ensemble.decision-templates", "--folds", "3",
               "-o", tmp_path / "r.html", ok=False)
    said = " ".join(res.output.split())
    assert res.exit_code == 1 and read == []  # nothing read: the check comes first
    assert ("3 of the 4 ensembles named are not cached for this training set: ensemble.voting-pruned, "
            "ensemble.stacked-svm, ensemble.decision-templates") in said
    assert f"ensemble-deid ensemble --corpus tiny --method METHOD --members \"{MEMBERS}\"" in said
    assert "member" not in said.replace("--members", "").replace(MEMBERS, "")
    assert not (tmp_path / "r.html").exists()


def test_the_page_shows_each_ensembles_objective(tiny_cached, tmp_path):
    _run("ensemble", "--corpus", "tiny", "--method", "stacked-svm", "--members", MEMBERS, "--folds", "3",
         "--objective", "binary-token:recall>=0.9", "--no-progress", "--no-oof", "--no-diagnostics")
    out = tmp_path / "r.html"
    _run("report", "--corpus", "tiny", "--members", MEMBERS, "--ensembles", "voting,stacked-svm", "--folds", "3",
         "-o", out)
    page = out.read_text(encoding="utf-8")
    assert "ensemble.voting (objective f1)" in page
    assert "ensemble.stacked-svm (objective binary-token:recall&gt;=0.9)" in page
    assert set(_summary_rows(page)) >= {"ensemble.voting", "ensemble.stacked-svm"}  # the names themselves kept


# -- in a real browser ------------------------------------------------------------

VISIBLE_DOCS = "document.querySelectorAll('#doc-table tbody tr').length"


@needs_chromium
def test_page_in_headless_chromium_filters_and_lanes(tmp_path):
    docs = tiny_corpus(16, seed=2)
    hostile, t = _hostile_doc()
    docs = [hostile, *docs]
    systems = _systems(docs)
    systems["ensemble.voting"][hostile.id] = [A(t.index("José"), t.index("José") + 4, "NAME:PATIENT"),
                                             A(t.index("Málaga"), t.index("Málaga") + 3, "LOCATION:CITY"),
                                             A(0, 4, "NAME:DOCTOR")]
    path = write_page(tmp_path / "r.html", build_page(ReportData("t", docs, systems, frozenset({"ensemble.voting"})), True))
    with Chromium() as b:
        b.open(path)
        assert b.problems() == [] and b.requests() == [path.resolve().as_uri()]
        assert b.evaluate("window.__pwned === undefined")
        f1 = "Array.from(document.querySelectorAll('#systems tbody tr')).map(r => parseFloat(r.cells[4].dataset.v))"
        b.evaluate("document.querySelectorAll('#systems th')[4].click()")
        ascending = b.evaluate(f1)
        b.evaluate("document.querySelectorAll('#systems th')[4].click()")
        assert ascending == sorted(ascending) and b.evaluate(f1) == sorted(ascending, reverse=True)
        b.evaluate("var s = document.getElementById('conf-system'); s.value = '1'; s.dispatchEvent(new Event('change'))")
        shown = "Array.from(document.querySelectorAll('div.conf')).filter(d => !d.hidden).map(d => d.dataset.sys)"
        assert b.evaluate(shown) == [list(systems)[1]]
        everything = b.evaluate(VISIBLE_DOCS)
        assert everything > 0
        b.evaluate("document.querySelectorAll('input.kind').forEach(function(x){ x.checked = x.value === '2'; });"
                   "document.querySelector('input.kind').dispatchEvent(new Event('change'))")
        false_alarms = b.evaluate(VISIBLE_DOCS)
        b.evaluate("document.querySelectorAll('input.kind').forEach(function(x){ x.checked = x.value === '1'; });"
                   "document.querySelector('input.kind').dispatchEvent(new Event('change'))")
        leaks = b.evaluate(VISIBLE_DOCS)
        b.evaluate("var c = document.getElementById('category'); c.value = 'DATE'; c.dispatchEvent(new Event('change'))")
        date_leaks = b.evaluate(VISIBLE_DOCS)
        hidden_rows = b.evaluate("Array.from(document.querySelectorAll('#category-table tbody tr')).filter(r => r.hidden).length")
        expected = _expected_counts(docs, systems["ensemble.voting"])
        assert (false_alarms, leaks, date_leaks) == (expected["fa"], expected["leak"], expected["date_leak"])
        assert len({everything, false_alarms, leaks, date_leaks}) > 1 and hidden_rows > 0
        # the hostile document: every lane cell sits under its text, and each span's cells spell its text
        b.evaluate("var c = document.getElementById('category'); c.value = ''; c.dispatchEvent(new Event('change'));"
                   "document.querySelectorAll('input.kind').forEach(function(x){ x.checked = true; });"
                   "document.querySelector('input.kind').dispatchEvent(new Event('change'));"
                   f"document.querySelector('#doc-table tbody tr[data-doc=\"0\"]').click()")
        assert b.evaluate("document.querySelector('#doc-view h3').textContent") == hostile.id
        spelled = b.evaluate("""(function(){
            const out = {};
            document.querySelectorAll('#text-view .lane[data-spans]').forEach(function(lane){
              const t = lane.parentNode.querySelector('.t');
              const a = lane.getBoundingClientRect(), b = t.getBoundingClientRect();
              if (Math.abs(a.left - b.left) > 1.5 || Math.abs(a.right - b.right) > 1.5) out.misaligned = true;
              lane.dataset.spans.split(' ').forEach(function(k){ out[k] = (out[k] || '') + t.textContent; });
            });
            return out; })()""")
        assert "misaligned" not in spelled
        for i, a in enumerate(hostile.annotations):
            assert spelled[f"0:{i}"] == t[a.start:a.end].replace("\n", "")
        lanes = ["gold", *systems]
        voting = lanes.index("ensemble.voting")
        for i, a in enumerate(systems["ensemble.voting"][hostile.id]):
            assert spelled[f"{voting}:{i}"] == t[a.start:a.end]
        assert b.evaluate("document.querySelectorAll('#text-view .line').length") == t.count("\n") + 1
        assert b.evaluate("document.querySelectorAll('#text-view .seg.leak').length") > 0
        assert b.evaluate("window.__pwned === undefined") and b.problems() == []


def _expected_counts(docs, system):
    out = {"fa": 0, "leak": 0, "date_leak": 0}
    for d in docs:
        ov = document_overlap(d.annotations, system[d.id], nonspace_mask(d.text))
        out["fa"] += FALSE_ALARM in ov.system_kinds
        out["leak"] += LEAK in ov.gold_kinds
        out["date_leak"] += any(k == LEAK and a.category == "DATE" for k, a in zip(ov.gold_kinds, d.annotations))
    return out
