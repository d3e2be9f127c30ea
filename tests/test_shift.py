"""Shifted copies of a labelled corpus (deid/shift.py): gold offsets follow the text."""
from __future__ import annotations

import random

import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.deid.shift import Edit, ShiftOptions, Shifter, apply_edits
from ensemble_deid.errors import ParameterError

from .tiny_corpus import tiny_corpus


def _ann(text, start, end, label="NAME:PATIENT"):
    cat, typ = label.split(":")
    return Annotation(start, end, cat, typ, text[start:end])


def test_apply_edits_by_hand():
    text = "Seen by  John Smith on 01/02/2010."
    name = _ann(text, 9, 19)  # "John Smith"
    date = _ann(text, 23, 33, "DATE:DATE")
    edits = [Edit(7, 9, " "),  # the double space before the name: 1 char shorter
             Edit(13, 14, "   "),  # inside the name: 2 chars longer
             Edit(23, 33, "2011-03-04")]  # exactly the date
    new, spans, dropped = apply_edits(text, [name, date], edits)
    assert new == "Seen by John   Smith on 2011-03-04."
    assert dropped == 0
    assert [(a.start, a.end, a.text) for a in spans] == [(8, 20, "John   Smith"), (24, 34, "2011-03-04")]


def test_apply_edits_drops_an_edit_across_a_boundary():
    text = "Mr Smith, aged 40"
    name = _ann(text, 3, 8)
    new, spans, dropped = apply_edits(text, [name], [Edit(0, 5, "Dr")])  # cuts "Smith" in two
    assert (new, dropped) == (text, 1)
    assert spans[0].text == "Smith"


def test_apply_edits_insertions_at_span_edges_stay_outside():
    text = "ab Smith cd"
    name = _ann(text, 3, 8)
    new, spans, _ = apply_edits(text, [name], [Edit(3, 3, "<"), Edit(8, 8, ">")])
    assert new == "ab <Smith> cd"
    assert spans[0].text == "Smith"


def test_apply_edits_refuses_overlapping_or_outside_edits():
    with pytest.raises(ValueError, match="overlap"):
        apply_edits("abcdef", [], [Edit(0, 3, "x"), Edit(2, 4, "y")])
    with pytest.raises(ValueError, match="outside"):
        apply_edits("abc", [], [Edit(2, 9, "x")])


def test_headers_whitespace_case_by_hand():
    text = "HISTORY OF PRESENT ILLNESS: seen  by\n\n\nJohn Smith.\nPlan: rest"
    doc = Document("d1", text, [_ann(text, 39, 49)])
    shifted, counts = Shifter(ShiftOptions(identifiers=False, headers=True, whitespace="collapse")).shift(doc)
    assert shifted.text == "History of present illness - seen by\nJohn Smith.\nPLAN - rest"
    assert [a.text for a in shifted.annotations] == ["John Smith"]
    assert (counts.headers, counts.whitespace, counts.dropped_edits) == (2, 2, 0)
    upper, _ = Shifter(ShiftOptions(identifiers=False, case="upper", whitespace="expand")).shift(doc)
    assert upper.text.startswith("HISTORY OF PRESENT ILLNESS: SEEN  BY\n\n\n\n\n\nJOHN SMITH.\n\nPLAN: REST")
    assert [a.text for a in upper.annotations] == ["JOHN SMITH"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_shift_keeps_gold_on_its_text(seed):
    rng = random.Random(seed)
    docs = tiny_corpus(12, seed=seed)
    opts = ShiftOptions(identifiers=True, locale=rng.choice(["en_US", "es_ES", "en_GB"]),
                        case=rng.choice(["none", "lower", "upper"]), whitespace=rng.choice(["none", "collapse", "expand"]),
                        headers=rng.random() < 0.5, seed=seed)
    shifted, counts = Shifter(opts).shift_all(docs)
    assert counts.documents == len(docs) and counts.spans == sum(len(d.annotations) for d in docs)
    assert counts.redrawn > 0.8 * counts.spans
    for old, new in zip(docs, shifted):
        assert new.id == old.id and new.group == old.group
        assert [a.label for a in new.annotations] == [a.label for a in old.annotations]
        for a in new.annotations:
            assert 0 <= a.start < a.end <= len(new.text)
            assert a.text == new.text[a.start:a.end] and a.text.strip() == a.text
        olds = {old.text[a.start:a.end].casefold() for a in old.annotations}
        assert not any(a.text.casefold() in olds for a in new.annotations if len(a.text) > 3)


def test_same_seed_same_copy_and_other_seed_other_copy():
    docs = tiny_corpus(6)
    a, _ = Shifter(ShiftOptions(seed=5)).shift_all(docs)
    b, _ = Shifter(ShiftOptions(seed=5)).shift_all(docs)
    c, _ = Shifter(ShiftOptions(seed=6)).shift_all(docs)
    assert [d.text for d in a] == [d.text for d in b]
    assert [d.text for d in a] != [d.text for d in c]


@pytest.mark.parametrize("kwargs, field", [
    ({"case": "title"}, "--case"), ({"whitespace": "tabs"}, "--whitespace"), ({"seed": -1}, "--seed"),
    ({"identifiers": False}, "--no-identifiers"), ({"locale": "xx_YY"}, "--locale")])
def test_bad_options_are_named(kwargs, field):
    with pytest.raises(ParameterError) as err:
        Shifter(ShiftOptions(**kwargs))
    assert field in str(err.value) or err.value.option == field


def test_corpus_shift_command_writes_and_registers_a_copy_without_printing_text(tmp_path, monkeypatch):
    import json
    import os
    import stat

    from click.testing import CliRunner

    from ensemble_deid.cli import main
    from ensemble_deid.corpus.formats import write_i2b2_xml
    from ensemble_deid.corpus.workspace import Workspace

    docs = tiny_corpus(8, seed=3)
    for split, part in (("train", docs[:6]), ("test", docs[6:])):
        (tmp_path / split).mkdir()
        for doc in part:
            write_i2b2_xml(doc, tmp_path / split / f"{doc.id}.xml")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["corpus", "add", "tiny", "--train", "train", "--test", "test"]).exit_code == 0
    out = tmp_path / "shifted"
    old_umask = os.umask(0)  # nothing the tool writes may rely on the umask
    try:
        result = runner.invoke(main, ["corpus", "shift", "tiny", "--out", str(out), "--case", "upper", "--headers",
                                      "--seed", "4", "--register", "tiny-upper"])
    finally:
        os.umask(old_umask)
    assert result.exit_code == 0, result.output
    phi = {d.text[a.start:a.end] for d in docs for a in d.annotations}
    assert not any(p in result.output for p in phi if len(p) > 3)
    assert "8 shifted document(s)" in result.output and "registered corpus 'tiny-upper'" in result.output
    record = json.loads((out / "SHIFT.json").read_text())
    assert record["options"]["case"] == "upper" and record["counts"]["spans"] == sum(len(d.annotations) for d in docs)
    assert set(record["fingerprints"]) == {"train", "test"}
    for path in (out, *out.rglob("*")):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path.name
    copy = Workspace(".").load("tiny-upper")
    assert [d.id for d in copy.test] == [d.id for d in docs[6:]]
    assert [d.group for d in copy.train] == [d.group for d in docs[:6]]  # folds still group by patient
    assert all(d.text == d.text.upper() for d in copy.train + copy.test)
    again = runner.invoke(main, ["corpus", "shift", "tiny", "--out", str(out)])
    assert again.exit_code == 2 and "not an empty folder" in again.output
    for args, option in ((["--locale", "xx_YY"], "--locale"), (["--register", "tiny"], "already registered"),
                         (["--split", "dev"], "--split"), (["--split", "test", "--register", "t2"], "--register")):
        bad = runner.invoke(main, ["corpus", "shift", "tiny", "--out", str(tmp_path / "x"), *args])
        assert bad.exit_code != 0 and option in bad.output, (args, bad.output)
        assert not (tmp_path / "x").exists()
