"""``fit`` and ``deidentify`` end to end: bundles (tampered, foreign version),
unreadable notes, resume, owner-only outputs, and surrogate mode on the
embedded synthetic corpus."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.deid import BundleError, Deidentifier, read_manifest

from .conftest import TINY_BUNDLE_MEMBERS as MEMBERS


def _run(*args, ok=True):
    result = CliRunner().invoke(main, list(map(str, args)))
    if ok:
        assert result.exit_code == 0, result.output + result.stderr + repr(result.exception)
    return result


@pytest.fixture(scope="module")
def tiny_bundle(fitted_tiny_bundle):
    """A voting bundle fitted on the tiny corpus (once per session), its test
    folder, and its workspace as ENSEMBLE_DEID_HOME for the module."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ENSEMBLE_DEID_HOME", str(fitted_tiny_bundle / "ws"))
    mp.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    yield fitted_tiny_bundle
    mp.undo()


def _owner_only(folder: Path):
    for path in [folder, *folder.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_bundle_layout_and_python_api(tiny_bundle):
    model = tiny_bundle / "model"
    manifest = read_manifest(model)
    assert [m["label"] for m in manifest["members"]] == ["rules", "crf:max_iterations=10", "svm"]
    assert manifest["method"]["name"] == "voting" and manifest["corpus"]["name"] == "tiny"
    assert "NAME:PATIENT" in manifest["labels"] and manifest["scores"]["test_strict"]["f1"] > 0.5
    assert any(p.suffix == ".bin" for p in model.rglob("*"))  # the CRFsuite model file as written
    _owner_only(model)
    deid = Deidentifier.load(model)
    text = "Record date: 03/04/2012\nPatient John Smith was seen."
    tagged = deid.deidentify(text)
    assert "[DATE]" in tagged and "03/04/2012" not in tagged


def test_tampered_and_foreign_bundles_are_refused(tiny_bundle, tmp_path):
    import shutil

    for case in ("file", "manifest", "version", "extra"):
        copy = tmp_path / case
        shutil.copytree(tiny_bundle / "model", copy)
        manifest_path = copy / "manifest.json"
        if case == "file":
            target = next(p for p in copy.rglob("*.bin"))
            data = bytearray(target.read_bytes())
            data[len(data) // 2] ^= 0xFF
            target.write_bytes(bytes(data))
            match = f"{target}: checksum mismatch"
        elif case == "manifest":
            m = json.loads(manifest_path.read_text())
            m["labels"].append("NAME:FAKE")
            manifest_path.write_text(json.dumps(m))
            match = "manifest was modified"
        elif case == "version":
            m = json.loads(manifest_path.read_text())
            m["format_version"] = 99
            manifest_path.write_text(json.dumps(m))
            match = "format version 99"
        else:
            (copy / "members" / "evil.bin").write_bytes(b"x")
            match = "not listed in the manifest"
        with pytest.raises(BundleError, match=match):
            Deidentifier.load(copy)
        out_dir = tmp_path / f"out-{case}"
        out_dir.mkdir()
        (out_dir / "keep.txt").write_text("earlier output")
        res = _run("deidentify", copy, tiny_bundle / "test", "--out", out_dir, "--no-progress", ok=False)
        assert res.exit_code == 1 and str(copy) in res.stderr and "Traceback" not in res.stderr
        assert (out_dir / "keep.txt").read_text() == "earlier output"


def test_deidentify_resumes_scores_and_refuses_an_unreadable_note(tiny_bundle, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for xml in sorted((tiny_bundle / "test").glob("*.xml"))[:4]:
        (notes / xml.name).write_bytes(xml.read_bytes())
    (notes / "plain.txt").write_text("Seen 03/04/2012 by Dr. Adams.\n")
    out = tmp_path / "out"
    first = _run("deidentify", tiny_bundle / "model", notes, "--out", out, "--spans", "xml", "--spans", "brat",
                 "--no-progress")
    assert "5 note(s) de-identified, 0 already done" in first.output
    assert "| strict " in first.output and "leak rate" in first.output and "| DATE " in first.output
    assert "Adams" not in first.output + first.stderr  # figures only, never text
    assert sorted(p.name for p in (out / "text").iterdir())[-1] == "plain.txt"
    assert (out / "spans" / "plain.ann").exists() and (out / "spans" / "plain.xml").exists()
    _owner_only(out)
    written = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # interrupted run: one note's text missing -> only that note is redone
    (out / "text" / "plain.txt").unlink()
    again = _run("deidentify", tiny_bundle / "model", notes, "--out", out, "--spans", "xml", "--spans", "brat",
                 "--no-progress")
    assert "1 note(s) de-identified, 4 already done" in again.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == written
    # an unreadable note: one error naming it, before anything is written
    bad = notes / "broken.txt"
    bad.write_bytes(b"Seen by \xff\xfe Dr. Adams")
    (out / "text" / "plain.txt").unlink()
    res = _run("deidentify", tiny_bundle / "model", notes, "--out", out, "--no-progress", ok=False)
    assert res.exit_code == 1 and str(bad) in res.stderr and "UTF-8" in res.stderr
    assert "Adams" not in res.stderr and "Traceback" not in res.stderr
    assert not (out / "text" / "plain.txt").exists() and not (out / "text" / "broken.txt").exists()
    assert all(p.read_bytes() == data for p, data in written.items() if p.exists())


def test_fresh_process_loads_the_bundle(tiny_bundle, tmp_path):
    """A new interpreter (no classes imported yet) reproduces the in-process spans."""
    out = tmp_path / "out"
    env = {**os.environ, "ENSEMBLE_DEID_HOME": str(tiny_bundle / "ws")}
    proc = subprocess.run([str(Path(sys.executable).parent / "ensemble-deid"), "deidentify", str(tiny_bundle / "model"),
                           str(tiny_bundle / "test"), "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    deid = Deidentifier.load(tiny_bundle / "model")
    from ensemble_deid.corpus.formats import read_i2b2_xml

    for xml in sorted((tiny_bundle / "test").glob("*.xml")):
        doc, _ = read_i2b2_xml(xml)
        written, _ = read_i2b2_xml(out / "spans" / xml.name)
        assert list(written.annotations) == deid.spans([doc])[doc.id]


def test_surrogate_mode_on_the_synthetic_corpus(workspace, tmp_path):
    """No gold PHI string survives where the model found the span; the same
    name gets the same surrogate within a patient; date intervals are kept.
    (A single tagger's bundle: surrogates come from the spans, whatever
    found them; an ensemble's surrogate runs are in test_deid_distribute.py.)"""
    import datetime as dt
    import re

    from ensemble_deid.corpus.workspace import Workspace

    model = tmp_path / "model"
    _run("fit", "--corpus", "synthetic-2014", "--tagger", "mira:epochs=5", "--out", model, "--no-progress")
    test_dir = Path(Workspace(workspace).spec("synthetic-2014").splits["test"])
    out = tmp_path / "out"
    res = _run("deidentify", model, test_dir, "--out", out, "--mode", "surrogate", "--seed", "4",
               "--group-pattern", r"^(\d{3})-\d{2}$", "--save-mapping", tmp_path / "map.json", "--no-progress")
    assert "leak rate" in res.output and "| NAME " in res.output
    assert stat.S_IMODE((tmp_path / "map.json").stat().st_mode) == 0o600
    mapping = json.loads((tmp_path / "map.json").read_text())
    corpus = Workspace(workspace).load("synthetic-2014")
    names, offsets = {}, {}
    found = 0

    def phi_words(doc_id):
        return {w.casefold() for e in mapping.get(doc_id, []) for w in re.findall(r"[^\W\d_]+", e["original"])}

    for doc in corpus.test:
        entries = {(e["start"], e["end"]): e for e in mapping.get(doc.id, [])}
        for gold in doc.annotations:
            e = entries.get((gold.start, gold.end))
            if e is None:
                continue
            found += 1
            survives = re.search(r"(?<!\w)" + re.escape(gold.text) + r"(?!\w)", e["surrogate"], re.IGNORECASE)
            assert not survives, gold.label
        for e in entries.values():
            if e["label"].startswith("NAME:") and re.fullmatch(r"[A-Z][a-z]+", e["original"]):
                key = (doc.group, e["original"])
                first, where = names.setdefault(key, (e["surrogate"], doc.id))
                # Consistent within a patient, except where that surrogate is another PHI word of one of the notes.
                assert first == e["surrogate"] or first.casefold() in phi_words(doc.id) \
                    or e["surrogate"].casefold() in phi_words(where), (first, e["surrogate"])
            if e["label"] == "DATE:DATE" and re.fullmatch(r"\d{4}-\d\d-\d\d", e["original"]):
                shift = (dt.date.fromisoformat(e["surrogate"]) - dt.date.fromisoformat(e["original"])).days
                assert offsets.setdefault(doc.group, shift) == shift
        text = (out / "text" / f"{doc.id}.txt").read_text()
        for e in entries.values():
            assert e["surrogate"] in text
    assert found > 100 and len(offsets) > 3 and len(names) > 10


def test_a_single_tagger_bundle(tiny_bundle, tmp_path):
    out = _run("fit", "--corpus", "tiny", "--tagger", "crf:max_iterations=10", "--out", tmp_path / "crf",
               "--no-progress").output
    assert "saved crf:max_iterations=10" in out and "test strict" in out
    manifest = read_manifest(tmp_path / "crf")
    assert manifest["method"] is None and [m["label"] for m in manifest["members"]] == ["crf:max_iterations=10"]
    res = _run("deidentify", tmp_path / "crf", tiny_bundle / "test", "--out", tmp_path / "out", "--mode", "mask",
               "--no-progress")
    assert "8 note(s) de-identified" in res.output
    both = _run("fit", "--corpus", "tiny", "--tagger", "crf", "--method", "voting", "--out", tmp_path / "x", ok=False)
    assert both.exit_code == 2 and not (tmp_path / "x").exists()


def test_fuzz_damaged_bundles_and_notes(tiny_bundle, tmp_path):
    """Seeded, bounded: any byte flipped anywhere in a bundle is refused with a
    BundleError naming a file; random bytes as notes are de-identified or
    refused with a CorpusError naming the note, never another exception."""
    import random
    import shutil
    import time

    from ensemble_deid.deid.batch import FolderDeidentifier
    from ensemble_deid.errors import CorpusError

    rng = random.Random(19)
    t0 = time.perf_counter()
    files = sorted(p.relative_to(tiny_bundle / "model") for p in (tiny_bundle / "model").rglob("*") if p.is_file())
    for trial in range(12):
        copy = tmp_path / f"b{trial}"
        shutil.copytree(tiny_bundle / "model", copy)
        target = copy / rng.choice(files)
        data = bytearray(target.read_bytes())
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(data))
        with pytest.raises(BundleError, match=str(copy)):
            Deidentifier.load(copy)
    model = Deidentifier.load(tiny_bundle / "model")
    runner = FolderDeidentifier(model, "tag")
    for trial in range(15):
        notes = tmp_path / f"n{trial}"
        notes.mkdir()
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        if trial % 2:
            raw = raw.decode("latin-1").encode("utf-8")  # valid UTF-8 of any characters
        (notes / "note.txt").write_bytes(raw)
        try:
            run = runner.run(notes, tmp_path / f"o{trial}")
            assert run.processed == 1
        except CorpusError as exc:
            assert str(notes / "note.txt") in str(exc)
    assert time.perf_counter() - t0 < 120


def test_deidentify_prints_the_objective_and_can_be_repointed(tiny_bundle, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for xml in sorted((tiny_bundle / "test").glob("*.xml"))[:2]:
        (notes / xml.name).write_bytes(xml.read_bytes())
    plain = _run("deidentify", tiny_bundle / "model", notes, "--out", tmp_path / "a", "--no-progress")
    assert "chosen for objective f1; operating point the method’s own rule" in plain.stderr
    # Re-pointed without retraining: unanimity of the 3 members keeps fewer spans than the fitted 2 votes.
    strict = _run("deidentify", tiny_bundle / "model", notes, "--out", tmp_path / "b", "--no-progress",
                  "--operating-point", '{"*": 3}')
    assert "operating point {'*': 3} (re-pointed; fitted for the method’s own rule)" in strict.stderr

    def tagged(folder):
        return sum(p.read_text().count("TYPE=") for p in (tmp_path / folder / "spans").glob("*.xml"))

    assert 0 < tagged("a") and tagged("b") < tagged("a")
    # 99 votes: no span can get them (3 members); the run would release every note as it is: refused.
    none = _run("deidentify", tiny_bundle / "model", notes, "--out", tmp_path / "n", "--no-progress",
                "--operating-point", '{"*": 99}', ok=False)
    assert none.exit_code == 2 and "outside [1, 3]" in none.output and not (tmp_path / "n").exists()
    bad = _run("deidentify", tiny_bundle / "model", notes, "--out", tmp_path / "c", "--operating-point", "{*: 1}",
               ok=False)
    assert bad.exit_code == 2 and "is not JSON" in bad.output
    # A resume into the plain run's folder at another operating point would mix two taggings.
    mixed = _run("deidentify", tiny_bundle / "model", notes, "--out", tmp_path / "a", "--no-progress",
                 "--operating-point", '{"*": 3}', ok=False)
    assert mixed.exit_code != 0 and "--operating-point" in mixed.output and "Traceback" not in mixed.output


def test_fit_stores_the_objective_and_operating_point(tiny_bundle, tmp_path):
    out = tmp_path / "svm"
    _run("fit", "--corpus", "tiny", "--method", "stacked-svm", "--members", MEMBERS, "--folds", "3",
         "--objective", "binary-token:recall>=0.9", "--out", out, "--no-progress", "--no-verify")
    selection = read_manifest(out)["selection"]
    assert selection["objective"] == "binary-token:recall>=0.9"
    assert set(selection["targets_reached"]) == {"*"} and selection["curve"][0]["point"] is None
    model = Deidentifier.load(out)
    assert model.method.get_params()["operating_point"] == selection["operating_point"]


def test_fit_names_the_member_whose_fit_does_not_reproduce_its_cached_run(tiny_bundle, crf_fit_unlike_cv):
    """The bundle is checked member by member against the members' cached
    test predictions: a member fitted differently from its CV run (here the
    CRF, given one L-BFGS iteration instead of its spec's ten) is named, with
    how many test documents it changed; the others reproduce theirs. (Fit
    trains only without a kept model: they are deleted first.)"""
    _run("cache", "rm-models")
    out = _run("fit", "--corpus", "tiny", "--method", "voting", "--members", "rules,crf:max_iterations=10",
               "--folds", "3", "--out", tiny_bundle / "model-unlike", "--no-progress").output
    members = read_manifest(tiny_bundle / "model-unlike")["verification"]["member_documents_differing_from_their_cached_runs"]
    assert members["rules"] == 0 and members["crf:max_iterations=10"] > 0
    assert f"crf:max_iterations=10 on {members['crf:max_iterations=10']}" in out


def test_a_reproducible_fit_reproduces_every_members_cached_test_predictions(tiny_bundle):
    verification = read_manifest(tiny_bundle / "model")["verification"]
    assert verification["member_documents_differing_from_their_cached_runs"] == {
        "rules": 0, "crf:max_iterations=10": 0, "svm": 0}


def test_mark_surrogates_writes_a_marked_review_copy_and_the_offsets(tiny_bundle, tmp_path):
    """Issue 53: a missed real name reads like a surrogate, so the run can
    keep (owner-only, outside text/) a copy with every replacement in [[ ]]
    and the replacements' offsets in text/; a resume adds them to notes done
    without; tag mode refuses the option."""
    import re

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Record date: 03/04/2012\nPatient John Smith was seen by Dr. Lee. BP 142/78.\n")
    (notes / "b.txt").write_text("Smith, John called on 04/15/2012 from Boston.\n")
    (notes / "c.txt").write_text("Record date: 22.5 mg\n")  # a dose where the tiny bundle expects a date
    out, model = tmp_path / "out", tiny_bundle / "model"
    common = ["--mode", "surrogate", "--seed", "3", "--spans", "brat", "--no-progress"]
    _run("deidentify", model, notes, "--out", out, *common)
    assert not (out / "marked").exists()
    first = {p.name: p.read_text() for p in (out / "text").iterdir()}
    res = _run("deidentify", model, notes, "--out", out, *common, "--mark-surrogates",
               "--save-mapping", tmp_path / "map.json")
    assert "3 note(s) de-identified" in res.output  # the review copies were missing: redone
    _owner_only(out)
    mapping = json.loads((tmp_path / "map.json").read_text())
    for doc_id in ("a", "b", "c"):
        text = (out / "text" / f"{doc_id}.txt").read_text()
        assert text == first[f"{doc_id}.txt"]  # the same surrogates
        placed = json.loads((out / "marked" / f"{doc_id}.json").read_text())
        review = (out / "marked" / f"{doc_id}.txt").read_text()
        entries = mapping[doc_id]
        assert len(placed) == len(entries) == len((out / "spans" / f"{doc_id}.ann").read_text().splitlines())
        assert [text[p["start"]:p["end"]] for p in placed] == [e["surrogate"] for e in entries]
        assert [p["label"] for p in placed] == [e["label"] for e in entries]
        assert re.findall(r"\[\[(.*?)\]\]", review) == [e["surrogate"] for e in entries]
        assert review.replace("[[", "").replace("]]", "") == text
    clinical = [e["clinical_value"] for entries in mapping.values() for e in entries if "clinical_value" in e]
    assert clinical and f"warning: {len(clinical)} span(s) tagged DATE or AGE" in res.stderr  # c's dose, whole or in part
    bad = _run("deidentify", model, notes, "--out", tmp_path / "tag", "--mark-surrogates", ok=False)
    assert bad.exit_code == 2 and "only surrogate mode" in bad.output
