"""``deidentify`` over a folder and its outputs (issue 35 items 3, 4, 6, 10,
11, 18, 19, 20; issue 34 items 3 and 10): surrogates that never keep the
original, special input files, existing output folders, resume with changed
options, leftovers of a killed run, long names, the mapping checked first,
group patterns, and the Python API on plain text. Each test failed before
its fix. The bundle is a rules-only one (no training: seconds to build)."""
from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ensemble_deid.cli import main
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.deid import Deidentifier, Surrogator, redact

NOTES = {  # ids PPP-NN: patient PPP (the i2b2 pattern); dates, phones, an SSN and an e-mail for the rules tagger
    "100-01": "Seen 03/04/2012. Call 617-555-1234. SSN 123-45-6789.\n",
    "100-02": "Follow-up 04/05/2012; phone 617-555-1234; mail jo.doe@example.org\n",
    "101-01": "Admitted 12/24/2019, discharged 12/30/2019. Pager 617-555-9876.\n",
    "102-01": "No PHI in this one.\n",
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    from ensemble_deid.taggers.registry import make_tagger

    path = tmp_path_factory.mktemp("bundle") / "rules"
    Deidentifier({"rules": make_tagger("rules").fit([])}).save(path, {"labels": ["DATE:DATE", "CONTACT:PHONE"]})
    return path


@pytest.fixture
def notes(tmp_path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for doc_id, text in NOTES.items():
        (folder / f"{doc_id}.txt").write_text(text)
    return folder


def _run(*args):
    return CliRunner().invoke(main, ["deidentify", *map(str, args), "--no-progress"])


def _outputs(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name not in (".lock", "run.json")}


def _doc(text, patient="p1", doc_id="n1"):
    return Document(doc_id, text, metadata={"group": patient})


class Hung(BaseException):
    """Not an Exception: no handler on the way (CLI, CliRunner) can swallow it."""


class _Alarm:
    """Fail (instead of hanging the suite) when the block runs over ``seconds``
    (a watchdog thread signals the main thread; the interval timer stays free)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        import threading

        def expired(*_):
            raise Hung(f"still running after {self.seconds} s")
        self.previous = signal.signal(signal.SIGUSR1, expired)
        self.timer = threading.Timer(self.seconds, os.kill, (os.getpid(), signal.SIGUSR1))
        self.timer.start()

    def __exit__(self, *exc):
        self.timer.cancel()
        signal.signal(signal.SIGUSR1, self.previous)


# --- item 3: surrogates -------------------------------------------------------------

COMMON = ["James", "Mary", "John", "Smith", "Johnson", "Garcia", "Maria", "Lee", "Brown", "Jose", "David", "Anna",
          "Ana", "Li", "Al", "Ng", "Martinez", "York", "Jordan", "Paris"]
TYPES = ["NAME:PATIENT", "NAME:DOCTOR", "LOCATION:CITY", "LOCATION:HOSPITAL", "LOCATION:STREET",
         "LOCATION:ORGANIZATION", "LOCATION:COUNTRY", "PROFESSION:PROFESSION", "ID:MEDICALRECORD"]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2 ** 63 - 1), name=st.sampled_from(COMMON), label=st.sampled_from(TYPES),
       style=st.sampled_from([str, str.upper, str.lower]))
@example(seed=1, name="Brown", label="NAME:PATIENT", style=str)  # "Browno" before the fix
@example(seed=7, name="Mary", label="NAME:PATIENT", style=str)
@example(seed=11, name="Lee", label="NAME:DOCTOR", style=str)
def test_a_surrogate_never_contains_the_original(seed, name, label, style):
    text = style(name)
    cat, typ = label.split(":")
    out = Surrogator(seed=seed).replace(_doc(text), Annotation(0, len(text), cat, typ))
    assert text.casefold() not in out.casefold()


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2 ** 63 - 1), first=st.sampled_from(COMMON), last=st.sampled_from(COMMON))
def test_each_word_of_a_name_gets_a_surrogate_word_without_it(seed, first, last):
    text = f"{first} {last}"
    out = Surrogator(seed=seed).replace(_doc(text), Annotation(0, len(text), "NAME", "PATIENT"))
    assert text.casefold() not in out.casefold()
    for word, new in zip(text.split(), out.split(), strict=True):
        assert word.casefold() not in new.casefold()


def test_one_string_predicted_with_two_types_gets_one_surrogate():
    doc = _doc("Jordan saw Jordan.")
    spans = [Annotation(0, 6, "NAME", "PATIENT"), Annotation(11, 17, "LOCATION", "CITY")]
    out = redact(doc, spans, "surrogate", Surrogator(seed=3))
    first, _, rest = out.partition(" saw ")
    assert first == rest[:-1] and "jordan" not in out.casefold()


@pytest.mark.parametrize("seed", range(12))
def test_a_surrogate_never_equals_other_phi_of_the_note(seed):
    s = Surrogator(seed=seed)
    alone = s.replace(_doc("Lee"), Annotation(0, 3, "NAME", "PATIENT"))  # what "Lee" gets in a note of its own
    doc = _doc(f"Lee met {alone}.")
    spans = [Annotation(0, 3, "NAME", "PATIENT"), Annotation(8, 8 + len(alone), "NAME", "DOCTOR")]
    out = redact(doc, spans, "surrogate", s)
    new_lee, new_other = out[:-1].split(" met ")
    assert new_lee.casefold() != alone.casefold() and new_other.casefold() != "lee"


def test_an_unknown_locale_is_a_clear_error_before_any_work(bundle, notes, tmp_path):
    res = _run(bundle, notes, "--out", tmp_path / "out", "--mode", "surrogate", "--locale", "xx_XX")
    assert res.exit_code == 2 and "unknown locale 'xx_XX'" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


# --- item 4: special files ------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "device", "loop"])
def test_special_txt_files_are_refused_not_read(bundle, notes, tmp_path, kind):
    special = notes / "x.txt"
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "device":
        special.symlink_to("/dev/urandom")
    else:
        special.symlink_to(notes / "y.txt")
        (notes / "y.txt").symlink_to(special)
    with _Alarm(20):  # before the fix: a FIFO blocked forever, the device filled the memory
        res = _run(bundle, notes, "--out", tmp_path / "out")
    assert res.exit_code == 1 and "x.txt" in res.output and "Traceback" not in res.output, res.output
    assert not list((tmp_path / "out").rglob("*.txt")) if (tmp_path / "out").exists() else True


@pytest.mark.parametrize("note", ["x.txt", "x.ann"])
def test_a_link_out_of_the_notes_folder_is_refused_before_any_work(bundle, notes, tmp_path, note):
    """Before: a link among the notes to any readable file (here a secret
    beside the folder) was read and its text written, de-identified, among
    the outputs for release. A brat .ann beside a note is checked too."""
    secret = tmp_path / "secret.txt"
    secret.write_text("api key 4f9c2e7d81 of the payroll server\n")
    if note == "x.ann":
        (notes / "x.txt").write_text("Seen 03/04/2012.\n")
    (notes / note).symlink_to(secret)
    res = _run(bundle, notes, "--out", tmp_path / "out")
    assert res.exit_code == 1 and note in res.output and "outside the notes folder" in res.output, res.output
    assert "secret" not in res.output and "4f9c2e7d81" not in res.output and "Traceback" not in res.output
    assert not list((tmp_path / "out").rglob("*.txt")) if (tmp_path / "out").exists() else True


def test_a_link_within_the_notes_folder_is_read_like_its_target(bundle, notes, tmp_path):
    (notes / "sub").mkdir()
    (notes / "sub" / "x.txt").write_text(NOTES["100-01"])
    (notes / "100-09.txt").symlink_to(notes / "sub" / "x.txt")
    linked = tmp_path / "linked"
    (tmp_path / "via").symlink_to(notes)  # the folder itself reached through a link
    assert _run(bundle, tmp_path / "via", "--out", linked).exit_code == 0
    out = _outputs(linked)
    assert out["text/100-09.txt"] == out["text/100-01.txt"]


def test_a_note_over_the_size_limit_is_refused_before_any_work(bundle, notes, tmp_path):
    from ensemble_deid.corpus.formats.source import MAX_NOTE_BYTES

    # Before the limit reached deidentify, a 20-90 MB note ended in a MemoryError traceback.
    (notes / "huge.txt").write_bytes(b"word " * (MAX_NOTE_BYTES // 5 + 1))
    res = _run(bundle, notes, "--out", tmp_path / "out")
    assert res.exit_code == 1 and "huge.txt" in res.output and "limit" in res.output, res.output
    assert "Traceback" not in res.output and "word word" not in res.output
    assert not list((tmp_path / "out").rglob("*.txt")) if (tmp_path / "out").exists() else True


# --- item 6: an existing output folder is left alone ------------------------------------

def test_an_existing_shared_folder_keeps_its_mode_and_new_folders_are_owner_only(bundle, notes, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert _run(bundle, notes, "--out", shared).exit_code == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777  # the sticky bit kept
    assert stat.S_IMODE((shared / "text").stat().st_mode) == 0o700
    new = tmp_path / "new" / "out"
    assert _run(bundle, notes, "--out", new).exit_code == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o700 and stat.S_IMODE(new.parent.stat().st_mode) == 0o700


# --- item 10 (and issue 34 item 3): resume with changed options ----------------------------

@pytest.mark.parametrize("first, second, named", [
    (["--mode", "tag"], ["--mode", "mask"], "--mode"),
    (["--mode", "surrogate", "--seed", "1"], ["--mode", "surrogate", "--seed", "2"], "--seed"),
    (["--mode", "surrogate", "--seed", "1"], ["--mode", "surrogate"], "--seed"),
    (["--mode", "surrogate", "--seed", "1"], ["--mode", "surrogate", "--seed", "1", "--locale", "es_ES"], "--locale"),
    (["--mode", "surrogate", "--seed", "1"], ["--mode", "surrogate", "--seed", "1", "--date-order", "dmy"],
     "--date-order"),
    (["--mode", "surrogate", "--seed", "1"],
     ["--mode", "surrogate", "--seed", "1", "--group-pattern", r"^(\d{3})-\d{2}$"], "--group-pattern"),
    (["--spans", "xml"], ["--spans", "brat"], "--spans"),
])
def test_a_resume_with_other_options_is_refused_naming_the_option(bundle, notes, tmp_path, first, second, named):
    out = tmp_path / "out"
    assert _run(bundle, notes, "--out", out, *first).exit_code == 0
    before = _outputs(out)
    (out / "text" / "100-01.txt").unlink()  # an interrupted run: one note to redo
    res = _run(bundle, notes, "--out", out, *second)
    assert res.exit_code == 1 and named in res.output and "already done" not in res.output, res.output
    assert _outputs(out) == {k: v for k, v in before.items() if k != "text/100-01.txt"}


def test_a_resume_with_another_bundle_is_refused(bundle, notes, tmp_path):
    from ensemble_deid.taggers.registry import make_tagger

    other = tmp_path / "other-bundle"
    Deidentifier({"rules": make_tagger("rules").fit([])}).save(other, {"labels": ["DATE:DATE"]})
    out = tmp_path / "out"
    assert _run(bundle, notes, "--out", out).exit_code == 0
    res = _run(other, notes, "--out", out)
    assert res.exit_code == 1 and "MODEL" in res.output, res.output


def test_an_unseeded_resume_reuses_the_first_runs_seed(bundle, notes, tmp_path):
    out = tmp_path / "out"
    args = ("--mode", "surrogate", "--group-pattern", r"^(\d{3})-\d{2}$")
    assert _run(bundle, notes, "--out", out, *args).exit_code == 0
    before = _outputs(out)
    for doc_id in ("100-02", "101-01"):
        (out / "text" / f"{doc_id}.txt").unlink()
    res = _run(bundle, notes, "--out", out, *args)
    assert res.exit_code == 0 and "2 note(s) de-identified, 2 already done" in res.output, res.output
    assert _outputs(out) == before  # a patient keeps its surrogates across the resume


def test_outputs_of_an_unrecorded_run_are_not_resumed(bundle, notes, tmp_path):
    out = tmp_path / "out"
    (out / "text").mkdir(parents=True)
    (out / "text" / "100-01.txt").write_text("made by an older version, options unknown")
    res = _run(bundle, notes, "--out", out, "--mode", "mask")
    assert res.exit_code == 1 and "run.json" in res.output


# --- item 11: what a killed run left ----------------------------------------------------------

def test_a_resume_removes_and_reports_a_killed_runs_temp_files(bundle, notes, tmp_path):
    out = tmp_path / "out"
    assert _run(bundle, notes, "--out", out).exit_code == 0
    (out / "text" / "100-01.txt").unlink()
    (out / "spans" / ".100-01.xml.4242.0badcafe.tmp").write_text("<half-written PHI")
    (out / ".scratch" / "4242" / "tmpabc").mkdir(parents=True)
    res = _run(bundle, notes, "--out", out)
    assert res.exit_code == 0 and "removed 2 temp file(s)/folder(s)" in res.output, res.output
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")] and not (out / ".scratch").exists()


# --- item 18: long file names --------------------------------------------------------------------

def test_a_note_name_near_the_file_name_limit_is_deidentified(bundle, notes, tmp_path):
    long_id = "1" * 240
    (notes / f"{long_id}.txt").write_text("Seen 03/04/2012.\n")
    out = tmp_path / "out"
    res = _run(bundle, notes, "--out", out, "--spans", "xml", "--spans", "brat")
    assert res.exit_code == 0, res.output
    assert (out / "text" / f"{long_id}.txt").read_text() == "Seen [DATE].\n"


# --- item 19: the mapping is checked first and never lost ---------------------------------------

def test_an_unwritable_mapping_fails_before_any_note(bundle, notes, tmp_path):
    (tmp_path / "a-file").write_text("x")
    out = tmp_path / "out"
    res = _run(bundle, notes, "--out", out, "--mode", "surrogate", "--seed", "4",
               "--save-mapping", tmp_path / "a-file" / "map.json")
    assert res.exit_code == 1 and "a-file: exists and is not a folder" in res.output, res.output
    assert not list(out.rglob("*.txt"))  # nothing done that a rerun would then skip


def test_a_lost_mapping_is_rebuilt_by_the_rerun(bundle, notes, tmp_path):
    out, mapping = tmp_path / "out", tmp_path / "map.json"
    args = ("--mode", "surrogate", "--seed", "4", "--save-mapping", mapping)
    assert _run(bundle, notes, "--out", out, *args).exit_code == 0
    before, full = _outputs(out), json.loads(mapping.read_text())
    assert sorted(full) == sorted(NOTES) and stat.S_IMODE(mapping.stat().st_mode) == 0o600
    mapping.unlink()  # e.g. the first write failed on a full disk
    res = _run(bundle, notes, "--out", out, *args)
    assert res.exit_code == 0 and "4 note(s) de-identified" in res.output, res.output
    assert json.loads(mapping.read_text()) == full and _outputs(out) == before


def test_a_full_disk_at_the_mapping_loses_nothing(bundle, notes, tmp_path, monkeypatch):
    from ensemble_deid.deid import batch

    out, mapping = tmp_path / "out", tmp_path / "map.json"
    args = ("--mode", "surrogate", "--seed", "4", "--save-mapping", mapping, "--batch-size", "2")
    real = batch.write_private
    calls = []

    def full_on_second_batch(path, data, *a, **k):
        if Path(path) == mapping:
            calls.append(1)
            if len(calls) == 3:  # the opening write, batch 1, then batch 2 fails
                from ensemble_deid.files import FileWriteError
                raise FileWriteError(path, "no space left on the device")
        return real(path, data, *a, **k)

    monkeypatch.setattr(batch, "write_private", full_on_second_batch)
    res = _run(bundle, notes, "--out", out, *args)
    assert res.exit_code == 1 and "map.json: no space left on the device" in res.output, res.output
    monkeypatch.setattr(batch, "write_private", real)
    res = _run(bundle, notes, "--out", out, *args)
    assert res.exit_code == 0 and "2 note(s) de-identified, 2 already done" in res.output, res.output
    assert sorted(json.loads(mapping.read_text())) == sorted(NOTES)


# --- item 20 and item 12: group patterns, empty names ---------------------------------------------

@pytest.mark.parametrize("pattern, message", [
    (r"^\d{3}-\d{2}$", "no capture group"),
    ("(", "not a valid regular expression"),
    # Issue 52 item 13: a group that captures nothing or one fixed text made every note one patient.
    ("()", "'()': its first group can match an empty text"), (r"(\d*)-", "can match an empty text"),
    ("(-)", "'(-)': its first group matches one fixed text"),
])
def test_a_bad_group_pattern_is_refused_up_front(bundle, notes, tmp_path, workspace, pattern, message):
    res = _run(bundle, notes, "--out", tmp_path / "out", "--group-pattern", pattern)
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, res.output
    assert not (tmp_path / "out").exists()
    res = CliRunner().invoke(main, ["corpus", "add", "c", "--train", str(notes), "--test", str(notes),
                                    "--format", "brat", "--group-pattern", pattern])
    assert res.exit_code == 2 and message in res.output, res.output


def test_a_catastrophic_group_pattern_is_stopped(bundle, tmp_path, monkeypatch):
    from ensemble_deid.corpus import formats

    monkeypatch.setattr(formats, "GROUP_PATTERN_SECONDS", 1.0)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / f"{'a' * 40}!.txt").write_text("Seen 03/04/2012.\n")
    with _Alarm(60):
        res = _run(bundle, folder, "--out", tmp_path / "out", "--group-pattern", "^((a+)+)$")
    assert res.exit_code == 2 and "backtracks catastrophically" in res.output, res.output
    assert not list((tmp_path / "out").rglob("*.txt"))


def test_an_empty_corpus_name_is_refused(notes, workspace):
    res = CliRunner().invoke(main, ["corpus", "add", "", "--train", str(notes), "--test", str(notes),
                                    "--format", "brat"])
    assert res.exit_code == 2 and "cannot be empty" in res.output, res.output
    assert not (workspace / ".ensemble-deid" / "corpora.json").exists() or "\"\"" not in (
        workspace / ".ensemble-deid" / "corpora.json").read_text()


# --- issue 34 item 10: the Python API on plain text ------------------------------------------------

@pytest.mark.parametrize("value", ["Seen 03/04/2012.", ["Seen 03/04/2012."]])
def test_spans_of_plain_text_shows_the_document_call(bundle, value):
    model = Deidentifier.load(bundle)
    with pytest.raises(TypeError, match=r"model\.spans\(\[Document\('note-1', text\)\]\)"):
        model.spans(value)
    assert model.deidentify("Seen 03/04/2012.") == "Seen [DATE]."
