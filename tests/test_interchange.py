"""Export of gold and predictions to CoNLL, JSONL and spaCy DocBin, and import
of CoNLL/JSONL predictions as system output (issue 34 item 11): real round
trips on the embedded corpus and on MEDDOCAN dev."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.bio import alignment_loss, decode, encode
from ensemble_deid.corpus.formats import load_directory, write_i2b2_xml
from ensemble_deid.corpus.formats.interchange import conll_spans, jsonl_spans, to_conll, to_jsonl
from ensemble_deid.corpus.workspace import Workspace
from ensemble_deid.errors import CorpusError
from ensemble_deid.evaluation import evaluate
from ensemble_deid.evaluation.files import evaluate_folders


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _gold_folder(docs, folder: Path) -> Path:
    folder.mkdir()
    for d in docs:
        write_i2b2_xml(d, folder / f"{d.id}.xml")
    return folder


@pytest.mark.parametrize("fmt,suffix", [("conll", ".conll"), ("jsonl", ".jsonl")])
def test_embedded_gold_round_trips_through_the_cli(workspace, tmp_path, fmt, suffix):
    test = Workspace(workspace).load("synthetic-2014").test
    assert alignment_loss(test).loss == 0  # every gold span is token-aligned: CoNLL keeps them all
    out = tmp_path / f"gold{suffix}"
    _run("corpus", "export", "synthetic-2014", "--split", "test", "--format", fmt, "--out", out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    said = _run("corpus", "import-predictions", "synthetic-2014", out, "--split", "test", "--out", tmp_path / "system")
    assert f"wrote {len(test)} document(s)" in said.output
    report = evaluate_folders(_gold_folder(test, tmp_path / "gold"), tmp_path / "system", criteria="strict,token")
    assert report["strict"].micro.f1 == 1.0 and report["token"].micro.f1 == 1.0
    assert report["strict"].micro.tp == sum(len(d.annotations) for d in test) > 0


def test_meddocan_dev_round_trips(meddocan_dir, tmp_path):
    gold = load_directory(meddocan_dir / "dev" / "xml")
    # JSONL keeps character offsets: exact
    (tmp_path / "dev.jsonl").write_text(to_jsonl(gold), encoding="utf-8")
    back = jsonl_spans(tmp_path / "dev.jsonl", gold)
    assert evaluate(gold, back, criteria="strict", leak=False)["strict"].micro.f1 == 1.0
    # CoNLL is token level: exact for every token-aligned span; MEDDOCAN dev has 3 spans
    # with an edge inside a token, which move to the token's edge (FP 3, FN 3)
    (tmp_path / "dev.conll").write_text(to_conll(gold), encoding="utf-8")
    back = conll_spans(tmp_path / "dev.conll", gold)
    aligned = {d.id: decode(d.tokens, encode(d.tokens, d.annotations)) for d in gold}
    assert evaluate(gold, back, criteria="strict", leak=False)["strict"].micro.f1 < 1.0
    assert all(sorted(back[d.id]) == sorted(aligned[d.id]) for d in gold)
    micro = evaluate(gold, back, criteria="strict", leak=False)["strict"].micro
    loss = alignment_loss(gold)
    assert (micro.fp, micro.fn) == (loss.misaligned, loss.misaligned) == (3, 3) and micro.tp == 5801 - 3


def test_conll_from_another_tokenizer_imports(tmp_path):
    from ensemble_deid.corpus.document import Annotation, Document

    doc = Document("n1", "Seen by Dr. Ann Lee-Smith on 2014-05-06.", (Annotation(12, 25, "NAME", "DOCTOR"),))
    # whitespace tokens, category-only tags, extra middle columns: still found in the text in order
    conll = ("-DOCSTART- n1\nSeen X O\nby X O\nDr. X O\nAnn X B-NAME\nLee-Smith X I-NAME\non X O\n"
             "2014-05-06. X B-DATE\n")
    (tmp_path / "p.conll").write_text(conll, encoding="utf-8")
    spans = conll_spans(tmp_path / "p.conll", [doc])
    assert [(a.start, a.end, a.category) for a in spans["n1"]] == [(12, 25, "NAME"), (29, 40, "DATE")]


def test_conll_errors_name_the_file_document_and_token_never_the_text(tmp_path):
    from ensemble_deid.corpus.document import Document

    doc = Document("n1", "Ann Lee was seen.", ())
    bad = tmp_path / "bad.conll"
    bad.write_text("-DOCSTART- n1\nAnn\tB-NAME:PATIENT\nZed\tI-NAME:PATIENT\n", encoding="utf-8")
    with pytest.raises(CorpusError) as info:
        conll_spans(bad, [doc])
    message = str(info.value)
    assert "bad.conll" in message and "'n1'" in message and "token 2" in message
    assert "Zed" not in message and "Ann" not in message
    bad.write_text("-DOCSTART- n9\nAnn\tO\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="not in the corpus split"):
        conll_spans(bad, [doc])
    bad.write_text("-DOCSTART- n1\nAnn\tX-NAME\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="not O, B-"):
        conll_spans(bad, [doc])


def test_docbin_holds_the_gold_entities(workspace, tmp_path):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    test = Workspace(workspace).load("synthetic-2014").test
    out = tmp_path / "gold.spacy"
    _run("corpus", "export", "synthetic-2014", "--split", "test", "--format", "docbin", "--out", out)
    docs = list(DocBin().from_bytes(out.read_bytes()).get_docs(spacy.blank("xx").vocab))
    assert [d.user_data["id"] for d in docs] == [d.id for d in test]
    exact = total = 0
    for doc, gold in zip(docs, test):
        assert doc.text == gold.text
        ents = {(e.start_char, e.end_char, e.label_) for e in doc.ents}
        # on spaCy's tokens: an edge inside one of them moves out to its edge (a span that then
        # overlaps an earlier one is left out); every entity holds a gold span of its label
        for s, e, label in ents:
            assert any(s <= a.start and a.end <= e and label == a.label for a in gold.annotations)
        total += len(gold.annotations)
        exact += sum((a.start, a.end, a.label) in ents for a in gold.annotations)
    assert exact / total > 0.9


def test_cache_export_conll_matches_the_xml_export(tiny_registered, workspace, tmp_path):
    _run("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3", "--no-progress")
    _run("cache", "export", tmp_path / "xml", "--corpus", tiny_registered)
    said = _run("cache", "export", tmp_path / "conll", "--corpus", tiny_registered, "--format", "conll").output
    corpus = Workspace(workspace).load(tiny_registered)
    test_part = next((tmp_path / "conll").rglob(f"predict-{corpus.fingerprint('test')}-all.conll"))
    assert "predict-" in said and stat.S_IMODE(test_part.stat().st_mode) == 0o600
    from_conll = conll_spans(test_part, corpus.test)
    xml_dir = tmp_path / "xml" / test_part.relative_to(tmp_path / "conll").with_suffix("")
    from_xml = {d.id: sorted(d.annotations) for d in load_directory(xml_dir)}
    assert {k: sorted(v) for k, v in from_conll.items()} == from_xml and any(from_xml.values())
