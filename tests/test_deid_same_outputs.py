"""``deidentify`` with a CRF-only bundle writes exactly the bytes it wrote
before the apply path was made faster (issue 51): every output file of a
fixed bundle on fixed synthetic notes, in each mode, sequential and with
``--jobs 2``, against the SHA-256 digests the code of commit 49b7215 wrote
(``tests/data/deid-outputs/crf-tiny.json``; digests only, no text).

The bundle is a CRF (10 L-BFGS iterations) fitted here on the tiny synthetic
corpus, the notes its held-out notes as plain text and as i2b2 XML; CRFsuite's
training is deterministic, so the same bundle comes out on every run.
Regenerate the fixture only from code known to write the right bytes:
``python tests/test_deid_same_outputs.py OUT.json``."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "data" / "deid-outputs" / "crf-tiny.json"
# Files whose bytes are drawn at random per output folder (run.json's seed salt) or
# hold the lock: compared by the rest. The release report lists the outputs' digests;
# the bundle's checksum in it (its manifest records when it was made) is replaced by the token BUNDLE first.
NOT_COMPARED = {".lock", "run.json"}
RUNS = {  # name -> the options of one deidentify run
    "tag": ["--spans", "xml", "--spans", "brat"],
    "tag-jobs2": ["--spans", "xml", "--spans", "brat", "--jobs", "2", "--batch-size", "2"],
    "tag-brat": ["--spans", "brat"],
    "mask": ["--mode", "mask"],
    "surrogate": ["--mode", "surrogate", "--seed", "7", "--locale", "es_ES", "--mark-surrogates"],
    "surrogate-jobs2": ["--mode", "surrogate", "--seed", "7", "--locale", "es_ES", "--jobs", "2", "--batch-size", "3"],
}


def make_inputs(root: Path) -> tuple[Path, Path]:
    """A CRF bundle and a folder of notes (5 plain text, 3 i2b2 XML with gold) under ``root``."""
    from ensemble_deid.corpus.formats import write_i2b2_xml
    from ensemble_deid.deid import Deidentifier
    from ensemble_deid.taggers.registry import make_tagger

    try:
        from .tiny_corpus import tiny_corpus
    except ImportError:  # run as a script
        from tiny_corpus import tiny_corpus

    docs = tiny_corpus(30, seed=5)
    train, held_out = docs[:22], docs[22:]
    labels = sorted({a.label for d in train for a in d.annotations})
    bundle = root / "bundle"
    Deidentifier({"crf": make_tagger("crf", max_iterations=10).fit(train)}).save(bundle, {"labels": labels})
    notes = root / "notes"
    notes.mkdir()
    for i, doc in enumerate(held_out):
        if i < 5:
            (notes / f"{doc.id}.txt").write_text(doc.text, encoding="utf-8")
        else:
            write_i2b2_xml(doc, notes / f"{doc.id}.xml")
    return bundle, notes


def output_digests(bundle: Path, notes: Path, out: Path) -> dict[str, dict[str, str]]:
    """{run name: {output file: SHA-256}} of each run of ``RUNS``."""
    checksum = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["manifest_sha256"].encode()
    found = {}
    for name, options in RUNS.items():
        folder = out / name
        _deidentify(bundle, notes, folder, *options)
        found[name] = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes().replace(checksum, b"BUNDLE")).hexdigest()
                       for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in NOT_COMPARED}
    return found


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("same-outputs"))


@pytest.fixture(scope="module")
def digests(inputs, tmp_path_factory):
    return output_digests(*inputs, tmp_path_factory.mktemp("outputs"))


@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_output_file_is_the_bytes_written_before(digests, run):
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))[run]
    got = digests[run]
    assert sorted(got) == sorted(expected), "other output files than before"
    differ = sorted(f for f in expected if got[f] != expected[f])
    assert not differ, f"{run}: {len(differ)} file(s) differ from before: {differ}"


@pytest.mark.parametrize("spans", ["xml", "brat"])
def test_a_resumed_run_writes_the_release_report_of_one_uninterrupted_run(inputs, tmp_path, spans):
    # The spans of the notes a run tags are counted as it writes them, those of an earlier run's notes read back.
    bundle, notes = inputs
    once, resumed = tmp_path / "once", tmp_path / "resumed"
    for out in (once, resumed):
        result = _deidentify(bundle, notes, out, "--spans", spans)
    for name in sorted(p.name for p in (resumed / "text").iterdir())[::2]:
        (resumed / "text" / name).unlink()  # these notes are done again
    result = _deidentify(bundle, notes, resumed, "--spans", spans)
    assert "4 note(s) de-identified, 4 already done" in result.output
    for report in ("release-report.json", "release-report.md"):
        assert (resumed / report).read_bytes() == (once / report).read_bytes()
    assert json.loads((once / "release-report.json").read_text())["spans_released"]  # there are spans to count


def _deidentify(bundle, notes, out, *options):
    from click.testing import CliRunner

    from ensemble_deid.cli import main

    result = CliRunner().invoke(main, ["deidentify", str(bundle), str(notes), "--out", str(out), "--no-progress",
                                       *options])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def test_the_fixture_covers_every_kind_of_output():
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    files = {f.split("/")[0] + "/" + f.rsplit(".", 1)[-1] for run in expected.values() for f in run}
    assert {"text/txt", "spans/xml", "spans/ann", "marked/txt", "marked/json"} <= files
    assert {"release-report.json", "release-report.md"} <= {f for run in expected.values() for f in run}


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory() as tmp:
        bundle, notes = make_inputs(Path(tmp))
        Path(sys.argv[1]).write_text(json.dumps(output_digests(bundle, notes, Path(tmp) / "out"), indent=1,
                                                sort_keys=True) + "\n", encoding="utf-8")
