"""Applying a reviewer's decisions (``review apply``) and the release report:
the decided spans hand-computed, outputs rewritten with the run's options for
the decided notes only, idempotent and resumable, refusals that name the
file, item and field (never text), a fuzz of the decisions reader, and a
release report without PHI or note file names."""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import secrets
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.document import Annotation
from ensemble_deid.corpus.formats import read_i2b2_xml
from ensemble_deid.deid.review import (Decision, ReviewError, ReviewItem, decisions_json, queue_path, read_decisions,
                                       read_queue, write_queue)
from ensemble_deid.deid.review_apply import decided_spans, mark, unmark

from .fuzz_inputs import _mutate


def A(start, end, label):
    category, type_ = label.split(":")
    return Annotation(start, end, category, type_)


# -- the decided spans, hand-computed ----------------------------------------------

DRAWN_SEED = 5  # the seed a surrogate run "draws" in test_surrogate_runs_are_applied_with_the_runs_seed
TEXT = "Seen by Dr. Ann Lee at Mercy Hospital on Monday."
#       0         1         2         3         4
#       012345678901234567890123456789012345678901234567


def test_mark_merges_what_it_overlaps_into_one_span_of_its_label():
    spans = [A(8, 15, "NAME:DOCTOR"), A(23, 28, "LOCATION:HOSPITAL")]
    assert mark(spans, 12, 19, "NAME:DOCTOR") == [A(8, 19, "NAME:DOCTOR"), A(23, 28, "LOCATION:HOSPITAL")]
    assert mark(spans, 23, 37, "LOCATION:HOSPITAL") == [A(8, 15, "NAME:DOCTOR"), A(23, 37, "LOCATION:HOSPITAL")]
    assert mark(spans, 41, 47, "DATE:DATE") == [*spans, A(41, 47, "DATE:DATE")]


def test_unmark_cuts_spans_back_and_drops_white_space_at_the_cut():
    spans = [A(8, 19, "NAME:DOCTOR"), A(23, 37, "LOCATION:HOSPITAL")]
    assert unmark(spans, 8, 12, TEXT) == [A(12, 19, "NAME:DOCTOR"), A(23, 37, "LOCATION:HOSPITAL")]
    assert unmark(spans, 28, 37, TEXT) == [A(8, 19, "NAME:DOCTOR"), A(23, 28, "LOCATION:HOSPITAL")]
    assert unmark(spans, 12, 15, TEXT) == [A(8, 11, "NAME:DOCTOR"), A(16, 19, "NAME:DOCTOR"), spans[1]]
    assert unmark(spans, 0, 48, TEXT) == []


def test_decisions_in_queue_order():
    base = [A(8, 19, "NAME:DOCTOR"), A(23, 37, "LOCATION:HOSPITAL")]
    phi = ReviewItem("0-1", "d", 23, 37, "LOCATION:HOSPITAL", 0.4, "near-threshold", "phi")
    text = ReviewItem("0-2", "d", 41, 47, "DATE:DATE", 0.8, "lexical", "text")
    doctor = ReviewItem("0-3", "d", 8, 19, "NAME:DOCTOR", 0.3, "disagreement", "phi")
    assert decided_spans(base, [(phi, Decision("reject", 23, 37, "LOCATION:HOSPITAL")),
                                (text, Decision("accept", 41, 47, "DATE:DATE"))], TEXT) \
        == [A(8, 19, "NAME:DOCTOR"), A(41, 47, "DATE:DATE")]
    # an edit of a masked item: its old extent goes, the new one (another type) comes
    assert decided_spans(base, [(phi, Decision("edit", 23, 28, "LOCATION:ORGANIZATION"))], TEXT) \
        == [A(8, 19, "NAME:DOCTOR"), A(23, 28, "LOCATION:ORGANIZATION")]
    # rejecting a readable item changes nothing; accepting a masked one neither
    assert decided_spans(base, [(text, Decision("reject", 41, 47, "DATE:DATE")),
                                (doctor, Decision("accept", 8, 19, "NAME:DOCTOR"))], TEXT) == base


# -- a run to review ---------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_bundle(fitted_tiny_bundle):
    mp = pytest.MonkeyPatch()
    mp.setenv("ENSEMBLE_DEID_HOME", str(fitted_tiny_bundle / "ws"))
    mp.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    yield fitted_tiny_bundle
    mp.undo()


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def _spans(out: Path, doc_id: str) -> list[Annotation]:
    doc, _ = read_i2b2_xml(out / "spans" / f"{doc_id}.xml")
    return sorted(doc.annotations, key=lambda a: (a.start, a.end))


def _notes(bundle: Path) -> dict:
    docs = {}
    for path in sorted((bundle / "test").glob("*.xml")):
        doc, _ = read_i2b2_xml(path)
        docs[doc.id] = doc
    return docs


def make_queue(out: Path, notes: dict) -> list[ReviewItem]:
    """By hand, from the run's spans: in the first note the patient's name
    (masked now) and the word 'Patient' (readable now), in the second the
    hospital (masked now), in the third the city (masked now, left undecided)."""
    ids = sorted(notes)
    first, second, third = (notes[i] for i in ids[:3])
    name = next(a for a in _spans(out, first.id) if a.type == "PATIENT")
    word = first.text.index("Patient")
    hospital = next(a for a in _spans(out, second.id) if a.type == "HOSPITAL")
    city = next(a for a in _spans(out, third.id) if a.type == "CITY")
    items = [
        ReviewItem("0-1", first.id, name.start, name.end, "NAME:PATIENT", 0.35, "near-threshold", "phi", ("crf",)),
        ReviewItem("0-2", first.id, word, word + 7, "NAME:PATIENT", 0.6, "lexical", "text", ()),
        ReviewItem("1-1", second.id, hospital.start, hospital.end, "LOCATION:HOSPITAL", 0.5, "disagreement", "phi",
                   ("rules", "svm")),
        ReviewItem("2-1", third.id, city.start, city.end, "LOCATION:CITY", 0.2, "dropped-span", "phi", ("svm",)),
    ]
    record = json.loads((out / "run.json").read_text())
    write_queue(queue_path(out), items, {"bundle": record["options"]["model"], "budget": {"items_per_note": 2},
                                         "labels": ["NAME:PATIENT", "LOCATION:HOSPITAL", "LOCATION:ORGANIZATION",
                                                    "LOCATION:CITY"]})
    return items


def _deidentify(bundle: Path, out: Path, *options) -> dict:
    # the queue is made here by hand (make_queue), not by the bundle's review model
    _run("deidentify", bundle / "model", bundle / "test", "--out", out, "--no-progress", "--review", "none", *options)
    notes = _notes(bundle)
    make_queue(out, notes)
    return notes


def _decide(out: Path, path: Path, items: dict) -> Path:
    sha = hashlib.sha256(queue_path(out).read_bytes()).hexdigest()
    path.write_text(decisions_json(sha, {k: Decision(*v) for k, v in items.items()}))
    return path


def _decisions_for(notes: dict, out: Path) -> dict:
    queue = {i.item: i for i in read_queue(queue_path(out)).items}
    hospital = queue["1-1"]
    return {"0-1": ("reject", queue["0-1"].start, queue["0-1"].end, "NAME:PATIENT"),
            "0-2": ("accept", queue["0-2"].start, queue["0-2"].end, "NAME:PATIENT"),
            "1-1": ("edit", hospital.start, hospital.start + 5, "LOCATION:ORGANIZATION")}


def _tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for sub in ("text", "spans") for p in sorted((out / sub).iterdir())}


def test_apply_rewrites_the_decided_notes_only_and_twice_is_once(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    notes = _deidentify(tiny_bundle, out)
    ids = sorted(notes)
    before = _tree(out)
    base0, base1 = _spans(out, ids[0]), _spans(out, ids[1])
    decisions = _decide(out, tmp_path / "d.json", _decisions_for(notes, out))
    result = _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", decisions)
    assert "1 accept, 1 edit, 1 reject; 1 undecided; 2 note(s) rewritten, 2 changed" in result.output
    after = _tree(out)
    changed = sorted(k for k in before if before[k] != after[k])
    assert changed == [f"spans/{ids[0]}.xml", f"spans/{ids[1]}.xml", f"text/{ids[0]}.txt", f"text/{ids[1]}.txt"]
    first, second = notes[ids[0]], notes[ids[1]]
    name = next(a for a in base0 if a.type == "PATIENT")
    word = first.text.index("Patient")
    hospital = next(a for a in base1 if a.type == "HOSPITAL")
    assert _spans(out, ids[0]) == sorted([a for a in base0 if a != name] + [A(word, word + 7, "NAME:PATIENT")],
                                         key=lambda a: (a.start, a.end))
    assert _spans(out, ids[1]) == [a if a != hospital else A(a.start, a.start + 5, "LOCATION:ORGANIZATION")
                                   for a in base1]
    text0 = (out / "text" / f"{ids[0]}.txt").read_text()
    assert first.text[name.start:name.end] in text0 and "Patient" not in text0 and text0.count("[NAME:PATIENT]") == 1
    text1 = (out / "text" / f"{ids[1]}.txt").read_text()
    assert "[LOCATION:ORGANIZATION]" + second.text[hospital.start + 5:hospital.end] in text1
    # twice is once: the same bytes, and the record of what was applied says the same
    record = (out / "review" / "applied.json").read_bytes()
    _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", decisions)
    assert _tree(out) == after and (out / "review" / "applied.json").read_bytes() == record
    # a new decisions file replaces the last: a note it no longer decides goes back to the run's outputs
    only_first = _decide(out, tmp_path / "d2.json", {k: v for k, v in _decisions_for(notes, out).items()
                                                     if k.startswith("0-")})
    _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", only_first)
    again = _tree(out)
    assert again[f"text/{ids[1]}.txt"] == before[f"text/{ids[1]}.txt"]
    assert again[f"spans/{ids[1]}.xml"] == before[f"spans/{ids[1]}.xml"]
    assert again[f"text/{ids[0]}.txt"] == after[f"text/{ids[0]}.txt"]
    for path in (out / "review").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_interrupted_apply_is_finished_by_running_it_again(tiny_bundle, tmp_path, monkeypatch):
    from ensemble_deid.deid.batch import FolderDeidentifier

    whole, cut = tmp_path / "whole", tmp_path / "cut"
    notes = _deidentify(tiny_bundle, whole)
    shutil.copytree(whole, cut)
    decisions = _decide(whole, tmp_path / "d.json", _decisions_for(notes, whole))
    _run("review", "apply", whole, "--notes", tiny_bundle / "test", "--decisions", decisions)
    write = FolderDeidentifier._write
    calls = []

    def dies_on_the_second_note(self, out, name, doc, spans):
        calls.append(doc.id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        write(self, out, name, doc, spans)

    monkeypatch.setattr(FolderDeidentifier, "_write", dies_on_the_second_note)
    with pytest.raises(KeyboardInterrupt):
        from ensemble_deid.deid.review_apply import apply_decisions

        apply_decisions(cut, tiny_bundle / "test", decisions)
    assert _tree(cut) != _tree(whole)
    assert json.loads((cut / "review" / "applied.json").read_text())["result"]["complete"] is False
    monkeypatch.setattr(FolderDeidentifier, "_write", write)
    _run("review", "apply", cut, "--notes", tiny_bundle / "test", "--decisions", decisions)
    assert _tree(cut) == _tree(whole)


def test_surrogate_runs_are_applied_with_the_runs_seed(tiny_bundle, tmp_path, monkeypatch):
    # The first run draws its seed and records it in run.json; the draw is fixed here. A name's
    # surrogate depends on the note's other names (the roles read from them, and a draw equal to
    # another PHI word is redrawn), and the decisions below add a name: for some seeds (2 here; 11 of
    # 400 in a scan) a name on an undecided line then gets another surrogate too.
    monkeypatch.setattr(secrets, "randbits", lambda bits: DRAWN_SEED)
    drawn, given = tmp_path / "drawn", tmp_path / "given"
    notes = _deidentify(tiny_bundle, drawn, "--mode", "surrogate")
    _deidentify(tiny_bundle, given, "--mode", "surrogate", "--seed", "7")
    ids = sorted(notes)
    before = (drawn / "text" / f"{ids[0]}.txt").read_text().splitlines()
    d1 = _decide(drawn, tmp_path / "d1.json", _decisions_for(notes, drawn))
    _run("review", "apply", drawn, "--notes", tiny_bundle / "test", "--decisions", d1)
    after = (drawn / "text" / f"{ids[0]}.txt").read_text().splitlines()
    assert not any("Patient" in line for line in after) and "[" not in "".join(after)
    # lines without a decided item keep the surrogates the run gave them (same seed, same patient)
    assert [b == a for b, a in zip(before, after)] == [True, False, True, True, True]
    given_before = _tree(given)
    d2 = _decide(given, tmp_path / "d2.json", _decisions_for(notes, given))
    refused = _run("review", "apply", given, "--notes", tiny_bundle / "test", "--decisions", d2, ok=False)
    assert refused.exit_code != 0 and "pass the same one (--seed)" in refused.output
    wrong = _run("review", "apply", given, "--notes", tiny_bundle / "test", "--decisions", d2, "--seed", "8", ok=False)
    assert wrong.exit_code != 0 and "another seed" in wrong.output and _tree(given) == given_before
    _run("review", "apply", given, "--notes", tiny_bundle / "test", "--decisions", d2, "--seed", "7")
    after_given = _tree(given)
    assert sorted(k for k in given_before if given_before[k] != after_given[k]) == [
        f"spans/{ids[0]}.xml", f"spans/{ids[1]}.xml", f"text/{ids[0]}.txt", f"text/{ids[1]}.txt"]


def _phi_strings(notes: dict) -> list[str]:
    """Every gold PHI string that can be told apart from the report's own
    counts and checksums (as the report page's test does): 4+ characters
    with a letter, or 7+ characters (a two-digit age also occurs in counts)."""
    return sorted({s for d in notes.values() for a in d.annotations
                   if (len(s := d.text[a.start:a.end]) >= 4 and re.search(r"[^\W\d_]", s)) or len(s) >= 7})


def test_the_release_report_has_no_phi_and_no_note_file_name(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    notes = _deidentify(tiny_bundle, out)
    report = json.loads((out / "release-report.json").read_text())
    assert report["command"] == "deidentify" and report["review"] is None  # the queue came after the run
    assert report["run"] == {"notes": len(notes), "input_files_skipped": 0}
    decisions = _decide(out, tmp_path / "d.json", _decisions_for(notes, out))
    _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", decisions)
    report = json.loads((out / "release-report.json").read_text())
    assert report["command"] == "review apply"
    assert report["bundle"]["manifest_sha256"] == json.loads((out / "run.json").read_text())["options"]["model"]
    assert report["expected_leak"]["available"] and report["expected_leak"]["documents"] == 22
    assert report["review"]["items"] == 4 and report["review"]["items_by_kind"] == {
        "disagreement": 1, "dropped-span": 1, "lexical": 1, "near-threshold": 1}
    assert report["review"]["decisions"]["decided"] == {"accept": 1, "edit": 1, "reject": 1}
    assert report["review"]["decisions"]["undecided"] == 1 and report["review"]["decisions"]["complete"]
    assert report["run"] == {"notes": len(notes), "input_files_skipped": 0, "notes_rewritten": 2,
                             "notes_changed_by_review": 2}
    for sub in ("text", "spans"):
        digests = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / sub).iterdir())
        assert report["outputs"][sub] == {"files": len(notes), "sha256": digests}
    counts: dict[str, int] = {}
    for doc_id in notes:
        for a in _spans(out, doc_id):
            counts[a.category] = counts.get(a.category, 0) + 1
    assert report["spans_released"] == counts
    spans_xml = (out / "spans" / f"{sorted(notes)[0]}.xml").read_text()
    assert any(phi in spans_xml for phi in _phi_strings(notes))  # the grep sees PHI where it is
    for name in ("release-report.json", "release-report.md"):
        content = (out / name).read_text()
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600
        assert len(_phi_strings(notes)) > 30
        for phi in _phi_strings(notes):
            assert phi not in content, (name, "a PHI string")
        for doc_id in notes:
            assert doc_id not in content, (name, "a note file name")


def test_bad_decisions_are_refused_before_anything_is_written(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    notes = _deidentify(tiny_bundle, out)
    before = _tree(out)
    good = _decisions_for(notes, out)
    n = len(notes[sorted(notes)[1]].text)
    secret = notes[sorted(notes)[0]].annotations[1]
    secret_text = notes[sorted(notes)[0]].text[secret.start:secret.end]
    cases = [
        ({"1-1": ("edit", 5, n + 1, "LOCATION:HOSPITAL")}, "item 1-1: field 'end': beyond the end of its note"),
        ({"1-1": ("edit", 5, 5, "LOCATION:HOSPITAL")}, "item 1-1: field 'end'"),
        ({"1-1": ("edit", 1, 5, "LOCATION:SHIP")}, "item 1-1: field 'label': not one of the bundle's labels"),
        ({"0-1": ("accept", 0, 3, "NAME:PATIENT")}, "item 0-1: field 'start': differs from the item's"),
        ({"9-9": ("accept", 0, 3, "NAME:PATIENT")}, "item 9-9: not in the review queue"),
        ({"0-1": ("delete", 0, 3, "NAME:PATIENT")}, "item 0-1: field 'action'"),
    ]
    for items, message in cases:
        path = tmp_path / "bad.json"
        sha = hashlib.sha256(queue_path(out).read_bytes()).hexdigest()
        path.write_text(json.dumps({"decisions": 1, "queue": sha, "items": {
            k: dict(zip(("action", "start", "end", "label"), v)) for k, v in {**good, **items}.items()}}))
        result = _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", path, ok=False)
        assert result.exit_code != 0 and message in result.output and "bad.json" in result.output, result.output
        assert secret_text not in result.output
    other = _decide(out, tmp_path / "other.json", good)
    data = json.loads(other.read_text())
    data["queue"] = "0" * 64
    other.write_text(json.dumps(data))
    result = _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", other, ok=False)
    assert "field 'queue': made for another review queue" in result.output
    key = tmp_path / "key.json"
    data["queue"], data["items"] = hashlib.sha256(queue_path(out).read_bytes()).hexdigest(), {secret_text: {}}
    key.write_text(json.dumps(data))
    result = _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", key, ok=False)
    assert "a key that is not an item id" in result.output and secret_text not in result.output
    assert _tree(out) == before and not (out / "review" / "applied.json").exists()
    queue = read_queue(queue_path(out))
    write_queue(queue_path(out), queue.items, {**queue.header, "bundle": "0" * 64})
    result = _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions",
                  _decide(out, tmp_path / "d.json", good), ok=False)
    assert "queue.jsonl: field 'bundle': made with another bundle than the run's" in result.output
    assert _tree(out) == before and not (out / "review" / "applied.json").exists()


def test_fuzz_decisions_files_give_a_review_error_or_a_valid_decision(tmp_path):
    """Random edits of a decisions file: a ReviewError without the note's words,
    or decisions whose extents lie inside their notes; never another exception."""
    note = "Seen by Dr. Smith on 2012-03-04 at Mercy."
    items = [ReviewItem("0-1", "a", 12, 17, "NAME:DOCTOR", 0.9, "dropped-span", "text", ("crf",)),
             ReviewItem("0-2", "a", 35, 40, "LOCATION:HOSPITAL", 0.5, "lexical", "phi", ())]
    qpath = write_queue(tmp_path / "queue.jsonl", items, {"labels": ["NAME:DOCTOR", "LOCATION:HOSPITAL"]})
    sha = hashlib.sha256(qpath.read_bytes()).hexdigest()
    queue = read_queue(qpath)
    original = decisions_json(sha, {"0-1": Decision("accept", 12, 17, "NAME:DOCTOR"),
                                    "0-2": Decision("edit", 35, 38, "LOCATION:HOSPITAL")}).encode()
    rng = random.Random(7)
    values = ["Smith", -1, 0, 3, 41, 10 ** 15, 1.5, None, True, [], {}, "accept", "edit", "reject", "0-2",
              "NAME:DOCTOR", "Smith:Smith", sha, "x" * 3000]
    path = tmp_path / "d.json"
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        data = bytearray(original)
        if rng.random() < 0.4:  # the loaders' fuzz edits: flips, cuts, copies, hostile snippets, digit runs
            data = bytearray(_mutate(original, rng, [b"Smith", b"{", b"]", b'"', b"\xff", b"\\u0000"]))
        else:
            doc = json.loads(bytes(data))
            target = doc if rng.random() < 0.3 else doc["items"][rng.choice(sorted(doc["items"]))]
            key = rng.choice(sorted(target) + ["extra"])
            target[key] = rng.choice(values)
            if rng.random() < 0.2 and isinstance(doc["items"], dict):
                doc["items"][rng.choice(["Smith", "3-3", "0-1"])] = {"action": rng.choice(values)}
            data = bytearray(json.dumps(doc).encode())
        path.write_bytes(bytes(data))
        try:
            got = read_decisions(path, queue, sha, {"a": note})
        except ReviewError as exc:
            assert "Smith" not in str(exc) and "x" * 40 not in str(exc) and "Mercy" not in str(exc)
            outcomes["error"] += 1
        else:
            for d in got.values():
                assert 0 <= d.start < d.end <= len(note) and d.action in ("accept", "reject", "edit")
            outcomes["ok"] += 1
    assert outcomes["error"] > 90 and outcomes["ok"] > 12


def test_expected_leak_from_the_bundles_counts_hand_computed():
    from ensemble_deid.deid.release import expected_leak

    docs = [{"all": {"token": [10, 1], "entity": [4, 1]}, "NAME": {"token": [4, 1], "entity": [2, 1]}},
            {"all": {"token": [10, 0], "entity": [5, 0]}, "DATE": {"token": [6, 0], "entity": [3, 0]}}]
    leak = expected_leak({"oof_leaks": {"documents": docs}}, reps=200)
    assert leak["available"] and leak["documents"] == 2
    assert leak["token"]["all"]["rate"] == 0.05 and leak["token"]["all"]["tokens"] == 20
    assert leak["token"]["NAME"]["rate"] == 0.25 and leak["entity"]["all"]["rate"] == round(1 / 9, 5)
    low, high = leak["token"]["all"]["ci95"]  # resamples of two documents: 0/20, 1/20 or 2/20
    assert 0 <= low <= 0.05 <= high <= 0.1
    assert leak["token"]["DATE"]["ci95"] == [0.0, 0.0]
    assert not expected_leak({})["available"]
    for bad in ({"documents": [{"all": {"token": [1, 2]}}]}, {"documents": [{"all": {"token": [True, 0]}}]},
                {"documents": "x"}, {"documents": [{"all": {"words": [1, 0]}}]}, [1]):
        assert expected_leak({"oof_leaks": bad}) == {
            "available": False, "why": "the bundle's out-of-fold leak counts are malformed (not used)"}


def test_the_report_counts_the_input_files_not_read_as_notes(tiny_bundle, tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(tiny_bundle / "test", notes)
    (notes / "scan.pdf").write_bytes(b"%PDF")
    (notes / "old").mkdir()
    _run("deidentify", tiny_bundle / "model", notes, "--out", tmp_path / "out", "--no-progress")
    report = json.loads((tmp_path / "out" / "release-report.json").read_text())
    assert report["run"] == {"notes": 8, "input_files_skipped": 2}


def test_fuzz_any_valid_queue_and_decisions_give_spans_redact_accepts():
    """Random masked spans, items and decisions on one note: the final spans
    never overlap and stay in the note, an accepted or edited extent is
    masked (white space aside) unless a later item unmasks part of it, and a
    rejected masked item is readable unless a later item masks over it."""
    from ensemble_deid.corpus.document import Document
    from ensemble_deid.deid.redact import redact

    rng = random.Random(3)
    text = "Pt Ann Lee, 64, seen at Mercy on 3 May 2019 by Dr. Ruiz; MRN 1234567.\nCall 555-0101. " * 2
    labels = ["NAME:PATIENT", "DATE:DATE", "LOCATION:HOSPITAL"]
    for _ in range(200):
        cuts = sorted(rng.sample(range(len(text) + 1), 2 * rng.randint(0, 6)))
        base = [A(a, b, rng.choice(labels)) for a, b in zip(cuts[::2], cuts[1::2]) if a < b]
        decided = []
        for n in range(rng.randint(1, 6)):
            a = rng.randrange(len(text) - 1)
            b = rng.randint(a + 1, min(len(text), a + 20))
            item = ReviewItem(f"0-{n}", "d", a, b, rng.choice(labels), rng.random(), "lexical",
                              rng.choice(["text", "phi"]))
            action = rng.choice(["accept", "reject", "edit"])
            if action == "edit":
                c = rng.randrange(len(text) - 1)
                decision = Decision("edit", c, rng.randint(c + 1, min(len(text), c + 20)), rng.choice(labels))
            else:
                decision = Decision(action, a, b, item.label)
            decided.append((item, decision))
        final = decided_spans(base, decided, text)
        assert all(0 <= s.start < s.end <= len(text) for s in final)
        assert all(x.end <= y.start for x, y in zip(final, final[1:]))
        redact(Document("d", text, ()), final, "mask")
        covered = [any(s.start <= i < s.end for s in final) for i in range(len(text))]
        for k, (item, decision) in enumerate(decided):
            later = decided[k + 1:]
            if decision.action in ("accept", "edit"):
                cut = any(i.current == "phi" and d.action in ("reject", "edit") and i.start < decision.end
                          and decision.start < i.end for i, d in later)
                assert cut or all(covered[i] for i in range(decision.start, decision.end) if not text[i].isspace())
            if item.current == "phi" and decision.action == "reject":
                remasked = any(d.action in ("accept", "edit") and d.start < item.end and item.start < d.end
                               for i, d in later)
                inside = [i for i in range(item.start, item.end) if not text[i].isspace()]
                assert remasked or not any(covered[i] for i in inside)
