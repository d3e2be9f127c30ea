"""Issue 52: what an outside probe of ``deidentify`` found leaving PHI in the
folder to share, each refused or said before a run reports success:
operating points that keep no span, runs that tag nothing, ``--jobs`` far
above the work, PHI in note file names, unknown element names in the leak
table, outputs where they do harm, notes skipped without a word, leftover
temp files, and a recoverable seed digest."""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.formats import to_i2b2_xml
from ensemble_deid.deid import Deidentifier
from ensemble_deid.deid.batch import FolderDeidentifier
from ensemble_deid.errors import ParameterError

NOTE = "Record date: 03/04/2012\nPatient seen on 04/05/2013 for follow-up.\n"
CLEAN = "The patient is well and has no complaints today.\n"


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _notes(folder: Path, texts: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def rules_bundle(tmp_path_factory) -> Path:
    """A single-tagger bundle (the rule tagger: dates, phones, emails...)."""
    from ensemble_deid.taggers.registry import make_tagger

    path = tmp_path_factory.mktemp("rules") / "bundle"
    Deidentifier({"rules": make_tagger("rules").fit([])}).save(path, {"labels": ["DATE:DATE", "CONTACT:PHONE"]})
    return path


# --- item 1: operating points ------------------------------------------------------------

@pytest.mark.parametrize("point, message", [
    ('{"*": NaN}', "not a finite number"),
    ('{"*": Infinity}', "not a finite number"),
    ('{"*": -Infinity}', "not a finite number"),
    ('{"*": 1e999}', "not a finite number"),
    ('{"*": 1e300}', "outside [1, 3]"),
    ('{"*": -1e300}', "outside [1, 3]"),
    ('{"*": 4}', "outside [1, 3]"),
    ('{"*": 0.5}', "outside [1, 3]"),
    ('{"DATE": "2"}', "must be a number"),
    ('{"DATE": [2]}', "must be a number"),
    ('{"DATE": {"*": 2}}', "must be a number"),
    ('{"*": true}', "must be a number"),
    ('{"name": 2}', "did you mean 'NAME'?"),
    ('{"DATES": 2}', "did you mean 'DATE'?"),
    ('{"Zorvathine": 2}', "not a category of this model"),
    ("[1, 2]", "expected null or an object"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_operating_points_that_decide_nothing_are_refused(fitted_tiny_bundle, tmp_path, point, message):
    """Issue 52 item 1: the voting bundle's scores are votes of 3 members:
    a threshold that is not a finite number in [1, 3] keeps no span (or
    every one), and was accepted, releasing every note untouched with exit 0;
    an unknown category was ignored; deep nesting was a traceback."""
    res = _run("deidentify", fitted_tiny_bundle / "model", fitted_tiny_bundle / "test", "--out", tmp_path / "out",
               "--no-progress", "--operating-point", point)
    assert res.exit_code == 2, res.output
    assert message in res.output and "--operating-point" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_the_python_api_refuses_the_same_operating_points(fitted_tiny_bundle):
    model = Deidentifier.load(fitted_tiny_bundle / "model")
    for point in ({"*": float("nan")}, {"*": float("inf")}, {"*": 10 ** 400}, {"*": 99}, {"NAMEE": 2},
                  {"DATE": None}):
        with pytest.raises(ParameterError):
            model.repoint(point)
    assert model.method.score_range() == (1.0, 3.0)  # 3 members: 1 to 3 votes
    model.repoint({"*": 3, "DATE": 1})  # inside the range, known categories: accepted
    assert model.method.get_params()["operating_point"] == {"*": 3, "DATE": 1}


@pytest.mark.parametrize("point, message", [({"*": 99}, "outside [1, 3]"), ({"*": float("nan")}, "operating_point"),
                                            ({"Zorvathine": 2}, "not a category")])
def test_a_bundle_edited_to_an_operating_point_that_decides_nothing_is_refused(fitted_tiny_bundle, tmp_path, point,
                                                                              message):
    """The same checks hold for the operating point a bundle stores (its
    checksums recomputed after the edit: they carry no key)."""
    import shutil

    from ensemble_deid.deid import BundleError

    from .fuzz_inputs import reseal

    copy = tmp_path / "model"
    shutil.copytree(fitted_tiny_bundle / "model", copy)
    state = json.loads((copy / "method" / "state.json").read_text())
    params = dict(state["header"]["params"]["__dict__"])
    params["operating_point"] = {"__dict__": [[k, v] for k, v in point.items()]}  # the state files' dict form
    state["header"]["params"]["__dict__"] = sorted(params.items())
    (copy / "method" / "state.json").write_text(json.dumps(state))
    reseal(copy)
    with pytest.raises(BundleError, match=re.escape(message)):
        Deidentifier.load(copy)


def test_every_scored_method_scores_inside_its_range(fitted_tiny_bundle):
    """The range a re-pointing is checked against holds every score each
    scored method gives: on the tiny corpus's test notes, from each method
    fitted on its training notes' member predictions."""
    import numpy as np

    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.ensemble.registry import make_method

    model = Deidentifier.load(fitted_tiny_bundle / "model")
    train = load_directory(fitted_tiny_bundle / "train")
    test = load_directory(fitted_tiny_bundle / "test")
    members_train = {label: {p.doc_id: p for p in t.predict(train)} for label, t in model.members.items()}
    members_test = {label: {p.doc_id: p for p in t.predict(test)} for label, t in model.members.items()}
    for name in ("voting", "voting-pruned", "stacked-svm", "decision-templates"):
        method = make_method(name)
        method.fit(members_train, train)
        low, high = method.score_range()
        from ensemble_deid.ensemble.base import ordered_members

        names = method.member_names_
        prepared = method._prepare(ordered_members(members_test, names, test, name), names, test)
        scores = method._score_values(method._scores(prepared))
        finite = scores[np.isfinite(scores)]  # decision templates: +-inf where a class has no template
        assert len(finite) or name == "decision-templates", name
        assert low <= finite.min(initial=low) and finite.max(initial=high) <= high, (name, low, high)


# --- item 1 and done-when: a run that tags nothing -----------------------------------------

def test_a_run_that_tags_nothing_fails_naming_the_cause(rules_bundle, tmp_path):
    """Six notes without a date or phone: the rule tagger finds nothing, so
    text/ would hold the notes as they came in; the run fails (exit 1),
    names the cause, and removes those text files; --allow-empty accepts it
    with a warning; a run over fewer notes warns."""
    notes = _notes(tmp_path / "notes", {f"n{i}.txt": CLEAN for i in range(6)})
    out = tmp_path / "out"
    res = _run("deidentify", rules_bundle, notes, "--out", out, "--no-progress")
    assert res.exit_code == 1, res.output
    assert "no PHI tagged in any of the 6 note(s)" in res.output and "tagger found nothing" in res.output
    assert "--allow-empty" in res.output and not list((out / "text").iterdir())
    ok = _run("deidentify", rules_bundle, notes, "--out", out, "--no-progress", "--allow-empty")
    assert ok.exit_code == 0 and "6 note(s) de-identified" in ok.output and "no PHI tagged" in ok.stderr
    few = _run("deidentify", rules_bundle, _notes(tmp_path / "few", {"a.txt": CLEAN}), "--out", tmp_path / "o2",
               "--no-progress")
    assert few.exit_code == 0 and "warning: no PHI tagged in any of the 1 note(s)" in few.stderr
    empty = _run("deidentify", rules_bundle, _notes(tmp_path / "blank", {f"e{i}.txt": "\n" for i in range(6)}),
                 "--out", tmp_path / "o3", "--no-progress")
    assert empty.exit_code == 0 and "no PHI tagged" not in empty.output  # nothing to find: no warning


@pytest.mark.parametrize("spans", ["xml", "brat"])
def test_a_resume_counts_the_notes_done_before(rules_bundle, tmp_path, spans):
    """A run over six clean notes allowed to tag nothing, then a resume of
    one note without --allow-empty (as after a kill): the folder holds six
    untouched notes, so the resume fails too, not 'success, 5 already done'."""
    notes = _notes(tmp_path / "notes", {f"n{i}.txt": CLEAN for i in range(6)})
    out = tmp_path / "out"
    args = ("deidentify", rules_bundle, notes, "--out", out, "--no-progress", "--spans", spans)
    assert _run(*args, "--allow-empty").exit_code == 0
    (out / "text" / "n3.txt").unlink()
    res = _run(*args)
    assert res.exit_code == 1 and "no PHI tagged in any of the 6 note(s)" in res.output
    assert not list((out / "text").iterdir())
    # A folder with spans resumes as ever.
    tagged = _notes(tmp_path / "tagged", {"a.txt": NOTE, **{f"n{i}.txt": CLEAN for i in range(6)}})
    assert _run("deidentify", rules_bundle, tagged, "--out", tmp_path / "o2", "--no-progress", "--spans",
                spans).exit_code == 0
    (tmp_path / "o2" / "text" / "n3.txt").unlink()
    again = _run("deidentify", rules_bundle, tagged, "--out", tmp_path / "o2", "--no-progress", "--spans", spans)
    assert again.exit_code == 0 and "1 note(s) de-identified, 6 already done" in again.output


def test_an_ensemble_that_keeps_none_of_its_members_spans_is_named(tmp_path):
    """Voting at 2 votes over the rule tagger and a CRF that never tags
    (trained on notes without annotations): the members find dates, the
    ensemble keeps none; the error says so (the API raises NothingTagged)."""
    from ensemble_deid.deid.batch import NothingTagged
    from ensemble_deid.ensemble.voting import Voting
    from ensemble_deid.taggers.registry import make_tagger

    train = [Document(f"t{i}", NOTE) for i in range(3)]
    members = {"rules": make_tagger("rules").fit([]), "crf": make_tagger("crf", max_iterations=2).fit(train)}
    method = Voting(threshold=2).fit({k: {p.doc_id: p for p in t.predict(train)} for k, t in members.items()}, train)
    model = Deidentifier(members, method, {"labels": ["DATE:DATE"]})
    notes = _notes(tmp_path / "notes", {f"n{i}.txt": NOTE for i in range(5)})
    with pytest.raises(NothingTagged, match=r"members found \d+ span\(s\) in 5 of these notes but its ensemble "
                                            r"\(voting\) kept none"):
        FolderDeidentifier(model, "tag").run(notes, tmp_path / "out")
    assert not list((tmp_path / "out" / "text").iterdir())
    run = FolderDeidentifier(model, "tag", allow_empty=True).run(notes, tmp_path / "out")
    assert run.processed == 5 and run.spans == 0 and "members found" in run.warnings[0]


# --- item 2: --jobs ----------------------------------------------------------------------

def test_jobs_far_above_the_notes_start_no_more_workers_than_cores_and_chunks(fitted_tiny_bundle, tmp_path):
    """Issue 52 item 2: --jobs 1000 on 6 notes started ~725 processes. The
    pool is capped at min(jobs, chunks to do, usable CPUs), and says so."""
    from ensemble_deid.deid.distribute import BundleRef, Distributor

    model = Deidentifier.load(fitted_tiny_bundle / "model")
    notes = tmp_path / "notes"
    notes.mkdir()
    for xml in sorted((fitted_tiny_bundle / "test").glob("*.xml"))[:3]:
        (notes / xml.name).write_bytes(xml.read_bytes())
    said = []
    runner = FolderDeidentifier(model, "tag", batch_size=1)
    distributor = Distributor(BundleRef(str(fitted_tiny_bundle / "model"), model.manifest["manifest_sha256"]),
                              "local", jobs=16)
    distributor.notice = said.append
    with distributor as pool:
        run = runner.run(notes, tmp_path / "out", executor=pool)
        started = len(pool._engine.pool._processes)
    assert run.processed == 3
    assert started <= min(3, len(os.sched_getaffinity(0))), started
    assert said and said[0].startswith("--jobs 16: starting ")


# --- item 6: note names ------------------------------------------------------------------

PHI_NAME = "Zorvathine_Quillbrook_MRN_8812345"


@pytest.mark.parametrize("name, reasons", [
    (PHI_NAME, {"capitalised words", "digits", "record marker"}),
    ("2012-03-04_visit", {"date"}),
    ("note_03.04.2012", {"date"}),
    ("call_555-0100", {"phone"}),
    ("Smith", {"capitalised words"}),
    ("dob_note", {"record marker"}),
    ("discharge_summary", set()),
    ("Discharge_Summary_Report", set()),
    ("note-0001", set()),
    ("doc1", set()),
    ("S0004-06142005000500011-1", {"digits"}),
])
def test_phi_like_names(name, reasons):
    from ensemble_deid.deid.names import phi_like_reasons

    assert set(phi_like_reasons(name)) == reasons


def test_phi_like_note_names_are_warned_about_without_showing_them(rules_bundle, tmp_path):
    notes = _notes(tmp_path / "notes", {f"{PHI_NAME}.txt": NOTE, "plain.txt": NOTE})
    res = _run("deidentify", rules_bundle, notes, "--out", tmp_path / "out", "--no-progress")
    assert res.exit_code == 0, res.output
    assert "1 of 2 note name(s) look as if they hold PHI" in res.stderr and "--rename" in res.stderr
    assert "Zorvathine" not in res.output + res.stderr and "8812345" not in res.output + res.stderr


@pytest.mark.parametrize("scheme", ["hash", "index"])
def test_rename_writes_neutral_names_and_keeps_them_on_resume(fitted_tiny_bundle, tmp_path, scheme):
    """--rename: text/ and spans/ hold neutral names only; the mapping is
    OUT/names.json (owner-only, not in text/); a resume keeps every note's
    name, a note added later gets a new one; the scores still find the
    spans; another scheme on resume is refused."""
    notes = tmp_path / "notes"
    notes.mkdir()
    xmls = sorted((fitted_tiny_bundle / "test").glob("*.xml"))
    for i, xml in enumerate(xmls[:3]):
        (notes / f"{PHI_NAME}_{i}.xml").write_bytes(xml.read_bytes())
    out = tmp_path / "out"
    args = ("deidentify", fitted_tiny_bundle / "model", notes, "--out", out, "--no-progress", "--rename", scheme)
    first = _run(*args)
    assert first.exit_code == 0, first.output
    assert "| strict " in first.output and "look as if they hold PHI" not in first.stderr
    written = sorted(p.name for p in (out / "text").iterdir())
    assert len(written) == 3 and not any("Zorvathine" in n or "8812345" in n for n in written)
    assert not any("Zorvathine" in p.name for p in out.rglob("*"))
    mapping = json.loads((out / "names.json").read_text())
    assert stat.S_IMODE((out / "names.json").stat().st_mode) == 0o600
    assert sorted(mapping["names"]) == [f"{PHI_NAME}_{i}" for i in range(3)]
    if scheme == "index":
        assert written == ["note-000001.txt", "note-000002.txt", "note-000003.txt"]
    else:  # keyed: not the plain hash of the name, and another folder's key gives other names
        assert len(mapping["key"]) == 64
        plain = hashlib.sha256(f"{PHI_NAME}_0".encode()).hexdigest()[:20]
        assert f"note-{plain}.txt" not in written
        other = _run("deidentify", fitted_tiny_bundle / "model", notes, "--out", tmp_path / "other", "--no-progress",
                     "--rename", "hash")
        assert other.exit_code == 0 and not set(written) & {p.name for p in (tmp_path / "other" / "text").iterdir()}
    (out / "text" / written[1]).unlink()
    (notes / f"{PHI_NAME}_9.xml").write_bytes(xmls[3].read_bytes())
    again = _run(*args)
    assert again.exit_code == 0 and "2 note(s) de-identified, 2 already done" in again.output
    after = json.loads((out / "names.json").read_text())["names"]
    assert {k: after[k] for k in mapping["names"]} == mapping["names"] and len(after) == 4
    assert sorted(p.name for p in (out / "text").iterdir()) == sorted({*written, after[f"{PHI_NAME}_9"] + ".txt"})
    if scheme == "index":
        assert after[f"{PHI_NAME}_9"] == "note-000004"
    mixed = _run("deidentify", fitted_tiny_bundle / "model", notes, "--out", out, "--no-progress")
    assert mixed.exit_code == 1 and "--rename" in mixed.output


def test_the_report_page_names_documents_by_position_unless_asked():
    from ensemble_deid.studies.html_report import ReportData, build_page, page_data

    docs = [Document(PHI_NAME, "Seen 03/04/2012.", (Annotation(5, 15, "DATE", "DATE"),))]
    data = ReportData("tiny", docs, {"sys": {PHI_NAME: [Annotation(5, 15, "DATE", "DATE")]}})
    assert page_data(data, include_text=False)["docs"][0]["id"] == "doc-1"
    assert "Zorvathine" not in build_page(data)
    assert page_data(data, include_text=False, include_ids=True)["docs"][0]["id"] == PHI_NAME
    assert PHI_NAME in build_page(data, include_text=True)


# --- item 7: the leak table ----------------------------------------------------------------

def test_the_leak_table_never_prints_an_element_name_it_does_not_know(rules_bundle, tmp_path):
    """An i2b2 note whose tag element is a PHI word: its category is shown
    as unknown-1 in deidentify's leak table, never by its name."""
    notes = tmp_path / "notes"
    notes.mkdir()
    doc = Document("n1", NOTE, (Annotation(13, 23, "DATE", "DATE"), Annotation(24, 31, "ZORVATHINE", "ZORVATHINE")))
    (notes / "n1.xml").write_text(to_i2b2_xml(doc))
    res = _run("deidentify", rules_bundle, notes, "--out", tmp_path / "out", "--no-progress")
    assert res.exit_code == 0, res.output
    assert "leak rate" in res.output and "unknown-1" in res.output and "| DATE " in res.output
    assert "ZORVATHINE" not in res.output.upper()


# --- item 8: outputs where they do harm ------------------------------------------------------

def test_outputs_where_they_do_harm_are_refused_before_any_work(rules_bundle, tmp_path):
    notes = _notes(tmp_path / "notes", {"a.txt": NOTE})
    out = tmp_path / "out"
    (tmp_path / "link").symlink_to(out / "text", target_is_directory=True)  # the share folder by another path
    before = sorted(p.name for p in rules_bundle.rglob("*"))
    cases = [
        (("--out", out, "--mode", "surrogate", "--save-mapping", out / "text" / "map.json"), "--save-mapping"),
        (("--out", out, "--mode", "surrogate", "--save-mapping", tmp_path / "link" / "map.json"), "--save-mapping"),
        (("--out", rules_bundle / "out"), "the bundle"),
        (("--out", rules_bundle), "the bundle"),
        (("--out", notes), "INPUT"),
        (("--out", notes / "deid"), "INPUT"),
    ]
    for extra, message in cases:
        res = _run("deidentify", rules_bundle, notes, "--no-progress", *extra)
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, (extra, res.output)
    assert not out.exists() and not (notes / "deid").exists() and not (notes / "text").exists()
    assert sorted(p.name for p in rules_bundle.rglob("*")) == before
    # The Python API refuses the same, from the folder the model was loaded from.
    with pytest.raises(ParameterError, match="the bundle"):
        FolderDeidentifier(Deidentifier.load(rules_bundle)).run(notes, rules_bundle / "out")
    # Inside OUT but outside text/: where the mapping belongs.
    ok = _run("deidentify", rules_bundle, notes, "--no-progress", "--out", out, "--mode", "surrogate",
              "--save-mapping", out / "mapping.json")
    assert ok.exit_code == 0, ok.output


# --- item 9: what is not read ------------------------------------------------------------------

def test_notes_in_any_case_are_read_and_the_rest_is_counted_without_names(rules_bundle, tmp_path):
    notes = _notes(tmp_path / "notes", {"a.TXT": NOTE, "b.Xml": to_i2b2_xml(Document("b", NOTE)), "c.txt": NOTE,
                                        f"{PHI_NAME}.text": NOTE, "Quillbrook.Smithson": NOTE})
    _notes(notes / "Zorvathine", {"d.txt": NOTE})
    res = _run("deidentify", rules_bundle, notes, "--out", tmp_path / "out", "--no-progress")
    assert res.exit_code == 0, res.output
    assert "3 note(s) de-identified" in res.output
    assert sorted(p.name for p in (tmp_path / "out" / "text").iterdir()) == ["a.txt", "b.txt", "c.txt"]
    assert ("3 file(s) in INPUT not read as notes (1 another extension, 1 extension .text, 1 subfolder (not "
            "searched))") in res.stderr
    assert not any(w in res.output + res.stderr for w in ("Zorvathine", "Quillbrook", "Smithson"))


# --- item 12: leftovers ---------------------------------------------------------------------------

def test_a_resume_removes_every_temp_file_a_killed_run_left_in_out(rules_bundle, tmp_path):
    """A kill while run.json (or names.json) was written left
    ``.run.json.PID.HEX.tmp`` in OUT, which the resume kept."""
    notes = _notes(tmp_path / "notes", {"a.txt": NOTE})
    out = tmp_path / "out"
    assert _run("deidentify", rules_bundle, notes, "--out", out, "--no-progress").exit_code == 0
    planted = [out / ".run.json.4242.0123abcd.tmp", out / ".names.json.17.deadbeef.tmp",
               out / "text" / ".a.txt.99.00ff00ff.tmp"]
    for path in planted:
        path.write_text(NOTE)
    res = _run("deidentify", rules_bundle, notes, "--out", out, "--no-progress")
    assert res.exit_code == 0 and "removed 3 temp file(s)" in res.output
    assert not any(p.exists() for p in planted)
    assert (out / "run.json").exists() and (out / "text" / "a.txt").exists()


# --- item 13: the seed's digest ----------------------------------------------------------------------

def test_run_json_does_not_give_a_small_seed_away(rules_bundle, tmp_path):
    """run.json held sha256("ensemble-deid surrogate seed N"): --seed 7 was
    found by hashing 0, 1, 2... Now a salted PBKDF2 digest (salt per
    folder); a resume still tells the same seed from another."""
    notes = _notes(tmp_path / "notes", {"a.txt": NOTE})
    digests = []
    for out in (tmp_path / "o1", tmp_path / "o2"):
        assert _run("deidentify", rules_bundle, notes, "--out", out, "--mode", "surrogate", "--seed", "7",
                    "--no-progress").exit_code == 0
        record = (out / "run.json").read_text()
        assert not any(hashlib.sha256(f"ensemble-deid surrogate seed {n}".encode()).hexdigest() in record
                       for n in range(100))
        digests.append(json.loads(record)["options"]["seed"])
    assert digests[0]["salt"] != digests[1]["salt"] and digests[0]["pbkdf2_sha256"] != digests[1]["pbkdf2_sha256"]
    (tmp_path / "o1" / "text" / "a.txt").unlink()
    other = _run("deidentify", rules_bundle, notes, "--out", tmp_path / "o1", "--mode", "surrogate", "--seed", "8",
                 "--no-progress")
    assert other.exit_code == 1 and "--seed" in other.output
    same = _run("deidentify", rules_bundle, notes, "--out", tmp_path / "o1", "--mode", "surrogate", "--seed", "7",
                "--no-progress")
    assert same.exit_code == 0 and "1 note(s) de-identified" in same.output


def test_a_run_json_of_the_unsalted_digest_still_resumes(rules_bundle, tmp_path):
    """A folder made before the salt (sha256 of the seed) resumes with the same seed, not another."""
    notes = _notes(tmp_path / "notes", {"a.txt": NOTE, "b.txt": NOTE})
    out = tmp_path / "out"
    assert _run("deidentify", rules_bundle, notes, "--out", out, "--mode", "surrogate", "--seed", "7",
                "--no-progress").exit_code == 0
    record = json.loads((out / "run.json").read_text())
    record["options"]["seed"] = hashlib.sha256(b"ensemble-deid surrogate seed 7").hexdigest()
    (out / "run.json").write_text(json.dumps(record))
    (out / "text" / "b.txt").unlink()
    assert _run("deidentify", rules_bundle, notes, "--out", out, "--mode", "surrogate", "--seed", "8",
                "--no-progress").exit_code == 1
    res = _run("deidentify", rules_bundle, notes, "--out", out, "--mode", "surrogate", "--seed", "7", "--no-progress")
    assert res.exit_code == 0 and "1 note(s) de-identified" in res.output
    assert isinstance(json.loads((out / "run.json").read_text())["options"]["seed"], dict)
